//! Ranks of communicators translated to `MPI_COMM_WORLD`, once per communicator and
//! thread, cached in a short thread-local list until `MPI_Comm_free`.
//!
//! Freeing a communicator on any thread advances a global epoch; a thread whose list
//! is of an older epoch empties it before its next look-up, so a handle the MPI
//! library reuses for a new communicator is never taken for the freed one.

use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use mpi::ffi::{
    MPI_Comm, MPI_Group, PMPI_Cart_shift, PMPI_Cartdim_get, PMPI_Comm_group, PMPI_Comm_rank,
    PMPI_Comm_remote_group, PMPI_Comm_size, PMPI_Comm_test_inter, PMPI_Dist_graph_neighbors,
    PMPI_Dist_graph_neighbors_count, PMPI_Graph_neighbors, PMPI_Graph_neighbors_count,
    PMPI_Group_free, PMPI_Group_size, PMPI_Group_translate_ranks, PMPI_Topo_test, RSMPI_CART,
    RSMPI_COMM_WORLD, RSMPI_DIST_GRAPH, RSMPI_GRAPH, RSMPI_PROC_NULL,
};

/// No world rank (a process outside `MPI_COMM_WORLD`, or a failed translation).
const NOWHERE: u32 = u32::MAX;

/// What is known of one communicator.
struct Entry {
    comm: MPI_Comm,
    /// World rank of each rank (of the remote group of an inter-communicator); `None`
    /// when rank r is world rank r.
    world: Option<Box<[u32]>>,
    /// Out-neighbours (ranks of `comm`, `MPI_PROC_NULL` kept) in the order of the
    /// neighbourhood collectives, once asked for.
    neighbours: Option<Box<[c_int]>>,
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
                    let world = unsafe { translation(comm) };
                    c.entries.push(Entry {
                        comm,
                        world,
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

fn to_world(world: &Option<Box<[u32]>>, rank: c_int) -> Option<u32> {
    if rank < 0 {
        return None;
    }
    let w = match world {
        None => rank as u32,
        Some(t) => *t.get(rank as usize)?,
    };
    (w != NOWHERE).then_some(w)
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
    with_entry(comm, |e| to_world(&e.world, rank)).flatten()
}

/// Calls `f(i, world rank)` for each out-neighbour `i` of `comm` that is a process.
pub(crate) fn each_neighbour(comm: MPI_Comm, mut f: impl FnMut(usize, u32)) {
    with_entry(comm, |e| {
        if e.neighbours.is_none() {
            // SAFETY: as in `with_entry`.
            e.neighbours = Some(unsafe { neighbours(comm) });
        }
        if let Some(n) = &e.neighbours {
            for (i, &r) in n.iter().enumerate() {
                if let Some(w) = to_world(&e.world, r) {
                    f(i, w);
                }
            }
        }
    });
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

/// The translation of `comm`'s ranks (see [`Entry::world`]).
///
/// # Safety
/// `comm` is a communicator handle of the MPI library.
unsafe fn translation(comm: MPI_Comm) -> Option<Box<[u32]>> {
    let mut inter: c_int = 0;
    let mut group = MPI_Group(std::ptr::null_mut());
    let mut world_group = MPI_Group(std::ptr::null_mut());
    let mut n: c_int = 0;
    // SAFETY: each call writes its out-arguments only.
    let ok = unsafe {
        PMPI_Comm_test_inter(comm, &mut inter) == 0
            && if inter != 0 {
                PMPI_Comm_remote_group(comm, &mut group) == 0
            } else {
                PMPI_Comm_group(comm, &mut group) == 0
            }
            && PMPI_Group_size(group, &mut n) == 0
            && PMPI_Comm_group(world(), &mut world_group) == 0
    };
    let mut out = vec![NOWHERE as c_int; n.max(0) as usize];
    if ok {
        let ranks: Vec<c_int> = (0..n).collect();
        // SAFETY: n ranks in, n out.
        let rc = unsafe {
            PMPI_Group_translate_ranks(group, n, ranks.as_ptr(), world_group, out.as_mut_ptr())
        };
        if rc != 0 {
            out.fill(-1);
        }
    }
    // SAFETY: the groups made above (a null handle is left alone).
    unsafe {
        if !group.0.is_null() {
            PMPI_Group_free(&mut group);
        }
        if !world_group.0.is_null() {
            PMPI_Group_free(&mut world_group);
        }
    }
    let identity = inter == 0
        && n as usize == size(world())
        && out.iter().enumerate().all(|(i, &w)| w == i as c_int);
    if identity {
        return None;
    }
    Some(
        out.iter()
            .map(|&w| if w < 0 { NOWHERE } else { w as u32 })
            .collect(),
    )
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
