//! Collectives counted apart from the graph: per operation and communicator, the calls
//! and the bytes of each process's send arguments.
//!
//! A communicator is named across processes by its size and the world rank of its
//! rank 0 (two communicators alike in both are counted together). Each thread keeps its
//! own map behind its own lock, which only `MPI_Finalize` takes from another thread.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mpi::ffi::MPI_Comm;

use super::comms;

/// The collectives counted, in the order of their codes.
pub(crate) const NAMES: [&str; 8] = [
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Gather",
    "MPI_Allgather",
    "MPI_Alltoall",
    "MPI_Alltoallv",
];

/// A collective's code: its index in [`NAMES`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Barrier = 0,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Allgather,
    Alltoall,
    Alltoallv,
}

/// (operation, communicator size, world rank of its rank 0) → (calls, bytes).
pub(crate) type Counts = BTreeMap<(u8, u32, u32), (u64, u64)>;

static ALL: Mutex<Vec<Arc<Mutex<Counts>>>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: OnceCell<Arc<Mutex<Counts>>> = const { OnceCell::new() };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Counts one call of `op` on `comm` whose send arguments hold `bytes` bytes.
pub(crate) fn add(op: Op, comm: MPI_Comm, bytes: u64) {
    let size = comms::size(comm) as u32;
    let leader = comms::world_rank(comm, 0).unwrap_or(u32::MAX);
    let _ = MINE.try_with(|m| {
        let mine = m.get_or_init(|| {
            let c = Arc::new(Mutex::new(Counts::new()));
            lock(&ALL).push(Arc::clone(&c));
            c
        });
        let mut g = lock(mine);
        let e = g.entry((op as u8, size, leader)).or_insert((0, 0));
        e.0 += 1;
        e.1 += bytes;
    });
}

/// Every thread's counts summed.
pub(crate) fn totals() -> Counts {
    let all: Vec<Arc<Mutex<Counts>>> = lock(&ALL).clone();
    let mut out = Counts::new();
    for c in all {
        for (&k, &(calls, bytes)) in lock(&c).iter() {
            let e = out.entry(k).or_insert((0, 0));
            e.0 += calls;
            e.1 += bytes;
        }
    }
    out
}
