//! The traffic recorder: with `COPR_RECORD=FILE`, every process counts the messages
//! and bytes it sends to each process of `MPI_COMM_WORLD`, and `MPI_Finalize` writes
//! them to `FILE` as a graph `copr map --graph FILE` reads.
//!
//! # What is counted
//! - Point-to-point sends: `MPI_Send`, `MPI_Isend`, `MPI_Ssend`, `MPI_Issend`,
//!   `MPI_Bsend`, `MPI_Ibsend`, `MPI_Rsend`, `MPI_Irsend`, the send half of
//!   `MPI_Sendrecv` and `MPI_Sendrecv_replace`, and persistent sends (`MPI_Send_init`,
//!   `MPI_Ssend_init`, `MPI_Bsend_init`, `MPI_Rsend_init`) each time `MPI_Start` or
//!   `MPI_Startall` starts them: one message of `count × size(datatype)` bytes to the
//!   world rank of `dest` (none to `MPI_PROC_NULL`).
//! - Neighbourhood collectives (`MPI_Neighbor_allgather(v)`, `MPI_Neighbor_alltoall(v,
//!   w)` and their non-blocking forms) on Cartesian, graph and distributed-graph
//!   communicators: one message per out-neighbour, of the bytes the call's send
//!   arguments give that neighbour (the Cartesian neighbours of each dimension are its
//!   `MPI_Cart_shift(d, 1)` pair; `MPI_PROC_NULL` ones carry nothing).
//! - Collectives (`MPI_Barrier`, `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce`,
//!   `MPI_Gather`, `MPI_Allgather`, `MPI_Alltoall`, `MPI_Alltoallv`) are counted apart,
//!   per communicator (calls and the bytes of each process's send arguments), and are
//!   written as comment lines: by default they are NOT in the graph, whose edges are
//!   then what the program itself sent to each process. How a collective moves data
//!   depends on the MPI library's algorithm, except for the all-to-alls, whose pairwise
//!   volumes the arguments give exactly: with `COPR_RECORD_ALLTOALL=1`, each
//!   `MPI_Alltoall` and `MPI_Alltoallv` also adds to the graph one message per
//!   destination with its block's bytes (none for an empty `MPI_Alltoallv` block), and
//!   the file's header says so. Other collectives are never in the graph.
//!
//! The C entry points and the Fortran ones (`mpi_send_` and friends of `mpif.h` and
//! `use mpi`, `mpi_send_f08_` and friends of Open MPI's `use mpi_f08`; Open MPI's
//! Fortran bindings call `PMPI_*` directly, so wrapping the C names alone would see
//! nothing of a Fortran program) are wrapped. MPICH's Fortran bindings call the C
//! entry points instead: there the C wrapper counts the call and the Fortran one
//! leaves it (module `fortran`), so that each call is counted once. Ranks of a communicator other than
//! `MPI_COMM_WORLD` are translated to world ranks once per communicator, rank and
//! thread, and cached until `MPI_Comm_free` (module `comms`; a communicator congruent
//! to `MPI_COMM_WORLD` needs no translation).
//!
//! # Cost
//! Off (no `COPR_RECORD`): one check of a static per call. On: per send, a
//! thread-local table update (module `table`), the datatype's size and, on other
//! communicators than `MPI_COMM_WORLD`, a look-up in a short thread-local list and a
//! hash map of the ranks translated; no lock, and no allocation once a destination is
//! known. Memory: O(distinct destinations) per thread, plus one entry per
//! (communicator, destination rank) the program sends on — nothing of size p.
//!
//! # The file
//! Written by rank 0 at `MPI_Finalize`, after gathering each process's edges
//! (O(p + edges) integers in all) and host name:
//!
//! ```text
//! # copr traffic recording: ...
//! tasks 4
//! # host 0 node17
//! # ...
//! 0 1 4096 # 3 messages
//! # collective MPI_Allreduce on MPI_COMM_WORLD (4 ranks): 20 calls, 1280 bytes
//! ```
//!
//! A path that cannot be created is reported once, by rank 0, at `MPI_Init`, and the
//! recorder is then off everywhere; the program runs on. `MPI_Init` and `MPI_Finalize`
//! each add a collective on `MPI_COMM_WORLD` when recording, so `COPR_RECORD` must be
//! set for every process or for none (as `mpirun -x` and batch systems pass it).

pub(crate) mod table;

#[cfg(feature = "mpi")]
pub mod c_api;
#[cfg(feature = "mpi")]
mod collectives;
#[cfg(feature = "mpi")]
mod comms;
#[cfg(feature = "mpi")]
mod finalize;
#[cfg(feature = "mpi")]
pub mod fortran;
#[cfg(feature = "mpi")]
mod requests;

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// The environment variable naming the file.
pub(crate) const ENV_RECORD: &str = "COPR_RECORD";

/// 0: not looked at yet, 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Whether the recorder is on (one load of a static once known).
#[inline]
pub(crate) fn on() -> bool {
    match STATE.load(Relaxed) {
        2 => true,
        1 => false,
        _ => look(),
    }
}

#[cold]
fn look() -> bool {
    let on = path().is_some();
    STATE.store(if on { 2 } else { 1 }, Relaxed);
    on
}

/// Turns the recorder off on this process.
pub(crate) fn turn_off() {
    STATE.store(1, Relaxed);
}

/// The environment variable that puts the all-to-alls in the graph.
pub(crate) const ENV_ALLTOALL: &str = "COPR_RECORD_ALLTOALL";

/// Whether `MPI_Alltoall(v)` add their pairwise volumes to the graph
/// (`COPR_RECORD_ALLTOALL=1`).
pub(crate) fn alltoall_in_graph() -> bool {
    static IN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *IN.get_or_init(|| std::env::var(ENV_ALLTOALL).is_ok_and(|v| v == "1"))
}

/// The file named by `COPR_RECORD`, when set and not empty.
pub(crate) fn path() -> Option<String> {
    std::env::var(ENV_RECORD).ok().filter(|p| !p.is_empty())
}
