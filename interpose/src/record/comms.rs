//! Ranks of communicators translated to `MPI_COMM_WORLD`, cached per communicator and
//! thread in a short thread-local list until `MPI_Comm_free`.
//!
//! A communicator whose group is `MPI_COMM_WORLD`'s in the same order (a duplicate, a
//! grid made without reordering) is known as such from one `MPI_Comm_compare` and keeps
//! nothing per rank. On any other, each rank is translated (`MPI_Group_translate_ranks`)
//! the first time a message goes to it and kept in a small hash map: memory grows with
//! the destinations the program uses, not with the communicator's size.
//!
//! Freeing a communicator on any thread advances a global epoch; a thread whose list
//! is of an older epoch empties it before its next look-up, so a handle the MPI
//! library reuses for a new communicator is never taken for the freed one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use mpi::ffi::{
    MPI_Comm, MPI_Group, PMPI_Cart_shift, PMPI_Cartdim_get, PMPI_Comm_compare, PMPI_Comm_group,
    PMPI_Comm_rank, PMPI_Comm_remote_group, PMPI_Comm_remote_size, PMPI_Comm_size,
    PMPI_Comm_test_inter, PMPI_Dist_graph_neighbors, PMPI_Dist_graph_neighbors_count,
    PMPI_Graph_neighbors, PMPI_Graph_neighbors_count, PMPI_Group_free, PMPI_Group_translate_ranks,
    PMPI_Topo_test, RSMPI_CART, RSMPI_COMM_WORLD, RSMPI_CONGRUENT, RSMPI_DIST_GRAPH, RSMPI_GRAPH,
    RSMPI_GROUP_NULL, RSMPI_IDENT, RSMPI_PROC_NULL,
};

/// No world rank (a process outside `MPI_COMM_WORLD`, or a failed translation).
const NOWHERE: u32 = u32::MAX;

/// What is known of one communicator.
struct Entry {
    comm: MPI_Comm,
    /// `None` when rank r is world rank r; else the ranks translated so far (of the
    /// remote group of an inter-communicator).
    known: Option<HashMap<c_int, u32, BuildHasherDefault<RankHasher>>>,
    /// Out-neighbours (ranks of `comm`, `MPI_PROC_NULL` kept) in the order of the
    /// neighbourhood collectives, once asked for.
    neighbours: Option<Box<[c_int]>>,
}

/// A hasher for ranks: one multiplication.
#[derive(Default)]
struct RankHasher(u64);

impl Hasher for RankHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_i32(&mut self, i: i32) {
        self.0 = u64::from(i as u32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl Entry {
    /// The world rank of `rank` (non-negative), translated on first use.
    fn world_rank(&mut self, rank: c_int) -> Option<u32> {
        let Some(known) = &mut self.known else {
            return Some(rank as u32);
        };
        let w = match known.get(&rank) {
            Some(&w) => w,
            None => {
                // SAFETY: the handle the program passed with this rank.
                let w = unsafe { translate(self.comm, rank) };
                known.insert(rank, w);
                w
            }
        };
        (w != NOWHERE).then_some(w)
    }
}

struct Cache {
    epoch: u64,
    entries: Vec<Entry>,
}

static EPOCH: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache { epoch: 0, entries: Vec::new() })
    };
}

/// `MPI_COMM_WORLD`.
#[inline]
pub(crate) fn world() -> MPI_Comm {
    // SAFETY: a constant of the MPI library, set before any call.
    unsafe { RSMPI_COMM_WORLD }
}

/// Forgets `comm` (about to be freed) on every thread.
pub(crate) fn forget(comm: MPI_Comm) {
    EPOCH.fetch_add(1, Relaxed);
    let _ = CACHE.try_with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            c.entries.retain(|e| e.comm != comm);
        }
    });
}

/// Runs `f` on the entry of `comm`, made on first use; `None` if the thread's cache is
/// gone (thread exit) or busy.
fn with_entry<R>(comm: MPI_Comm, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
    CACHE
        .try_with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            let epoch = EPOCH.load(Relaxed);
            if c.epoch != epoch {
                c.entries.clear();
                c.epoch = epoch;
            }
            let i = match c.entries.iter().position(|e| e.comm == comm) {
                Some(i) => i,
                None => {
                    // SAFETY: a handle the program passed to a call that takes it.
                    let identity = unsafe { is_world(comm) };
                    c.entries.push(Entry {
                        comm,
                        known: (!identity).then(HashMap::default),
                        neighbours: None,
                    });
                    c.entries.len() - 1
                }
            };
            Some(f(&mut c.entries[i]))
        })
        .ok()
        .flatten()
}

/// The world rank of `rank` of `comm` (the remote group's for an
/// inter-communicator); `None` for `MPI_PROC_NULL` or a rank that has none.
#[inline]
pub(crate) fn world_rank(comm: MPI_Comm, rank: c_int) -> Option<u32> {
    if comm == world() {
        return (rank >= 0).then_some(rank as u32);
    }
    if rank < 0 {
        return None;
    }
    with_entry(comm, |e| e.world_rank(rank)).flatten()
}

/// Calls `f(i, world rank)` for each out-neighbour `i` of `comm` that is a process.
pub(crate) fn each_neighbour(comm: MPI_Comm, mut f: impl FnMut(usize, u32)) {
    with_entry(comm, |e| {
        if e.neighbours.is_none() {
            // SAFETY: as in `with_entry`.
            e.neighbours = Some(unsafe { neighbours(comm) });
        }
        let n = e.neighbours.take().unwrap_or_default();
        for (i, &r) in n.iter().enumerate() {
            if let Some(w) = (r >= 0).then(|| e.world_rank(r)).flatten() {
                f(i, w);
            }
        }
        e.neighbours = Some(n);
    });
}

/// The number of processes a send on `comm` can name: its remote group's for an
/// inter-communicator, else its own.
pub(crate) fn peers(comm: MPI_Comm) -> usize {
    let (mut inter, mut n) = (0, 0);
    // SAFETY: each call writes one int; an invalid handle returns an error code.
    let ok = unsafe {
        PMPI_Comm_test_inter(comm, &mut inter) == 0
            && if inter != 0 {
                PMPI_Comm_remote_size(comm, &mut n) == 0
            } else {
                PMPI_Comm_size(comm, &mut n) == 0
            }
    };
    if ok {
        n.max(0) as usize
    } else {
        0
    }
}

/// The number of processes of `comm` (its local group).
pub(crate) fn size(comm: MPI_Comm) -> usize {
    let mut n: c_int = 0;
    // SAFETY: writes one int; an invalid handle returns an error code.
    if unsafe { PMPI_Comm_size(comm, &mut n) } != 0 {
        return 0;
    }
    n.max(0) as usize
}

/// Whether rank r of `comm` is world rank r for every r (an intra-communicator
/// identical or congruent to `MPI_COMM_WORLD`).
///
/// # Safety
/// `comm` is a communicator handle of the MPI library.
unsafe fn is_world(comm: MPI_Comm) -> bool {
    let (mut inter, mut result) = (1, -1);
    // SAFETY: each call writes one int.
    unsafe {
        PMPI_Comm_test_inter(comm, &mut inter) == 0
            && inter == 0
            && PMPI_Comm_compare(comm, world(), &mut result) == 0
            && (result == RSMPI_IDENT || result == RSMPI_CONGRUENT)
    }
}

/// The world rank of `rank` of `comm` (of its remote group for an
/// inter-communicator), or [`NOWHERE`].
///
/// # Safety
/// `comm` is a communicator handle of the MPI library.
unsafe fn translate(comm: MPI_Comm, rank: c_int) -> u32 {
    let mut inter: c_int = 0;
    // SAFETY: a constant of the MPI library.
    let null: MPI_Group = unsafe { RSMPI_GROUP_NULL };
    let (mut group, mut world_group) = (null, null);
    let mut out: c_int = -1;
    // SAFETY: each call writes its out-arguments only; one rank in, one out.
    unsafe {
        let ok = PMPI_Comm_test_inter(comm, &mut inter) == 0
            && if inter != 0 {
                PMPI_Comm_remote_group(comm, &mut group) == 0
            } else {
                PMPI_Comm_group(comm, &mut group) == 0
            }
            && PMPI_Comm_group(world(), &mut world_group) == 0
            && PMPI_Group_translate_ranks(group, 1, &rank, world_group, &mut out) == 0;
        if !ok {
            out = -1;
        }
        if group != null {
            PMPI_Group_free(&mut group);
        }
        if world_group != null {
            PMPI_Group_free(&mut world_group);
        }
    }
    if out < 0 {
        NOWHERE
    } else {
        out as u32
    }
}

/// The out-neighbours of `comm` in the order of the neighbourhood collectives.
///
/// # Safety
/// `comm` is a communicator handle of the MPI library.
unsafe fn neighbours(comm: MPI_Comm) -> Box<[c_int]> {
    let mut kind: c_int = 0;
    // SAFETY: each call below writes its out-arguments only, arrays sized as asked.
    unsafe {
        if PMPI_Topo_test(comm, &mut kind) != 0 {
            return Box::new([]);
        }
        let mut out = Vec::new();
        if kind == RSMPI_CART {
            let mut ndims: c_int = 0;
            if PMPI_Cartdim_get(comm, &mut ndims) == 0 {
                for d in 0..ndims {
                    let (mut lo, mut hi) = (RSMPI_PROC_NULL, RSMPI_PROC_NULL);
                    if PMPI_Cart_shift(comm, d, 1, &mut lo, &mut hi) == 0 {
                        out.extend([lo, hi]);
                    }
                }
            }
        } else if kind == RSMPI_GRAPH {
            let (mut rank, mut n) = (0, 0);
            if PMPI_Comm_rank(comm, &mut rank) == 0
                && PMPI_Graph_neighbors_count(comm, rank, &mut n) == 0
            {
                out = vec![0; n.max(0) as usize];
                if PMPI_Graph_neighbors(comm, rank, n, out.as_mut_ptr()) != 0 {
                    out.clear();
                }
            }
        } else if kind == RSMPI_DIST_GRAPH {
            let (mut indeg, mut outdeg, mut weighted) = (0, 0, 0);
            if PMPI_Dist_graph_neighbors_count(comm, &mut indeg, &mut outdeg, &mut weighted) == 0 {
                let mut sources = vec![0; indeg.max(1) as usize];
                let mut source_weights = vec![0; indeg.max(1) as usize];
                out = vec![0; outdeg.max(1) as usize];
                let mut dest_weights = vec![0; outdeg.max(1) as usize];
                let rc = PMPI_Dist_graph_neighbors(
                    comm,
                    indeg,
                    sources.as_mut_ptr(),
                    source_weights.as_mut_ptr(),
                    outdeg,
                    out.as_mut_ptr(),
                    dest_weights.as_mut_ptr(),
                );
                out.truncate(if rc == 0 { outdeg.max(0) as usize } else { 0 });
            }
        }
        out.into_boxed_slice()
    }
}
