//! The interposed `MPI_Dist_graph_create_adjacent` (exported unmangled, for
//! `LD_PRELOAD`).
//!
//! Each process describes one vertex of the graph: its own rank's in- and out-edges.
//! With `reorder = 1` the MPI standard lets the library give vertex `k` (rank `k` of
//! the new communicator) to another process of `comm_old`, as `MPI_Cart_create` does
//! with grid positions. Here rank 0 gathers the out-edges (two integers per edge),
//! maps the graph onto the machine with copr's optimiser, and when that beats the
//! present order on hop-bytes every process takes its new rank with `MPI_Comm_split`
//! and receives the neighbour lists of the vertex it now holds from the process that
//! described it (one message per process); the graph is then created on the split
//! communicator with `reorder = 0`. The program reads its neighbours from the new
//! communicator (`MPI_Dist_graph_neighbors`), as reordering requires anyway.

use std::cell::Cell;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use copr_mapping::mpi::{gather_out_edges, plan_mapping_at_root};
use copr_mapping::{Options, Perm};
use mpi::collective::SystemOperation;
use mpi::ffi::{
    MPI_Comm, MPI_Info, PMPI_Comm_free, PMPI_Comm_split, PMPI_Dist_graph_create_adjacent,
};
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::abi::weights_empty;
use crate::cart::{machine_source, ACTIVE};
use crate::log::{conclude, warn_fallback, write_log};

/// Bytes per unit of edge weight in the pattern (an unweighted edge weighs one unit).
const WEIGHT_UNIT_BYTES: u64 = 1 << 20;

/// What a message weighs, as the log says it.
const UNIT: &str = "1 MiB per unit of edge weight";

/// The weights argument of one side.
#[derive(Debug, Clone, PartialEq)]
enum Weights {
    /// An array of `degree` weights.
    Given(Vec<i32>),
    /// `MPI_UNWEIGHTED`.
    Unweighted,
    /// `MPI_WEIGHTS_EMPTY`.
    Empty,
}

impl Weights {
    fn kind(&self) -> i32 {
        match self {
            Self::Given(_) => 0,
            Self::Unweighted => 1,
            Self::Empty => 2,
        }
    }

    /// The pointer to pass to MPI.
    fn as_ptr(&self) -> *const c_int {
        match self {
            Self::Given(w) => w.as_ptr(),
            // SAFETY: returns the library's constant.
            Self::Unweighted => unsafe { mpi::ffi::RSMPI_UNWEIGHTED() },
            // known: `Empty` is only ever read from a pointer equal to the constant
            Self::Empty => weights_empty().unwrap_or(0) as *const c_int,
        }
    }

    /// The weight of edge `i` (1 when unweighted).
    fn of(&self, i: usize) -> i32 {
        match self {
            Self::Given(w) => w[i],
            _ => 1,
        }
    }
}

/// One vertex's adjacency, as the program passed it.
#[derive(Debug, Clone, PartialEq)]
struct Adjacency {
    sources: Vec<i32>,
    source_weights: Weights,
    destinations: Vec<i32>,
    dest_weights: Weights,
}

impl Adjacency {
    /// Whether every rank is one of `p` and every weight is usable (>= 0, and an empty
    /// weights argument only for no edges).
    fn valid(&self, p: usize) -> bool {
        let ranks_ok = |v: &[i32]| v.iter().all(|&r| r >= 0 && (r as usize) < p);
        let weights_ok = |w: &Weights, n: usize| match w {
            Weights::Given(w) => w.iter().all(|&x| x >= 0),
            Weights::Unweighted => true,
            Weights::Empty => n == 0,
        };
        ranks_ok(&self.sources)
            && ranks_ok(&self.destinations)
            && weights_ok(&self.source_weights, self.sources.len())
            && weights_ok(&self.dest_weights, self.destinations.len())
    }

    /// The vertex as one message: degrees, kinds, then the arrays.
    fn encode(&self) -> Vec<i32> {
        let mut v = vec![
            self.sources.len() as i32,
            self.destinations.len() as i32,
            self.source_weights.kind(),
            self.dest_weights.kind(),
        ];
        v.extend(&self.sources);
        if let Weights::Given(w) = &self.source_weights {
            v.extend(w);
        }
        v.extend(&self.destinations);
        if let Weights::Given(w) = &self.dest_weights {
            v.extend(w);
        }
        v
    }

    /// The inverse of [`Adjacency::encode`]; `None` for a malformed message.
    fn decode(v: &[i32]) -> Option<Self> {
        let (head, mut rest) = (v.get(..4)?, v.get(4..)?);
        let indeg = usize::try_from(head[0]).ok()?;
        let outdeg = usize::try_from(head[1]).ok()?;
        let mut take = |n: usize| -> Option<Vec<i32>> {
            let (a, b) = (rest.get(..n)?, rest.get(n..)?);
            rest = b;
            Some(a.to_vec())
        };
        let weights =
            |kind: i32, n: usize, take: &mut dyn FnMut(usize) -> Option<Vec<i32>>| match kind {
                0 => take(n).map(Weights::Given),
                1 => Some(Weights::Unweighted),
                2 => Some(Weights::Empty),
                _ => None,
            };
        let sources = take(indeg)?;
        let source_weights = weights(head[2], indeg, &mut take)?;
        let destinations = take(outdeg)?;
        let dest_weights = weights(head[3], outdeg, &mut take)?;
        rest.is_empty().then_some(Self {
            sources,
            source_weights,
            destinations,
            dest_weights,
        })
    }
}

/// Reads one side's arguments; `None` when they are not something to work with (a
/// NULL array for a nonzero degree, a negative degree).
///
/// # Safety
/// `ranks` points to `degree` ints when non-NULL and `degree > 0`; `weights` is
/// `MPI_UNWEIGHTED`, `MPI_WEIGHTS_EMPTY`, or points to `degree` ints when non-NULL.
unsafe fn read_side(
    degree: c_int,
    ranks: *const c_int,
    weights: *const c_int,
) -> Option<(Vec<i32>, Weights)> {
    let n = usize::try_from(degree).ok()?;
    // SAFETY: the caller's guarantee.
    let read = |ptr: *const c_int| unsafe {
        if n == 0 {
            Some(Vec::new())
        } else if ptr.is_null() {
            None
        } else {
            Some(std::slice::from_raw_parts(ptr, n).to_vec())
        }
    };
    // SAFETY: returns the library's constant.
    let unweighted = unsafe { mpi::ffi::RSMPI_UNWEIGHTED() } as *const c_int;
    let w = if std::ptr::eq(weights, unweighted) {
        Weights::Unweighted
    } else if Some(weights as usize) == weights_empty() {
        Weights::Empty
    } else if weights.is_null() {
        return None;
    } else {
        Weights::Given(read(weights)?)
    };
    Some((read(ranks)?, w))
}

/// Collective: copr's mapping of the graph (task → rank of `comm`) when it beats the
/// present order, else `None` on every process.
fn decide(comm: &SimpleCommunicator, adj: &Adjacency) -> Option<Perm> {
    let p = comm.size() as usize;
    // [invalid anywhere, total edges]
    let mut bad = 0u64;
    comm.all_reduce_into(&u64::from(!adj.valid(p)), &mut bad, SystemOperation::max());
    let mut edges = 0u64;
    comm.all_reduce_into(
        &(adj.destinations.len() as u64),
        &mut edges,
        SystemOperation::sum(),
    );
    let head =
        format!("MPI_Dist_graph_create_adjacent(reorder = 1) on {p} ranks, {edges} out-edges");
    if bad != 0 {
        if comm.rank() == 0 {
            let why = "a process passed a rank outside the communicator, a negative weight or empty weights for edges";
            warn_fallback(&head, why);
            write_log(&[head, format!("  kept the MPI library's order: {why}")]);
        }
        return None;
    }
    let source = machine_source(comm, &head)?;
    if let Some(path) = crate::recorded::graph_path() {
        return crate::recorded::plan(comm, &head, &path, &source);
    }
    let out: Vec<(usize, u64)> = adj
        .destinations
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            (
                d as usize,
                adj.dest_weights.of(i) as u64 * WEIGHT_UNIT_BYTES,
            )
        })
        .collect();
    let description = format!("distributed graph of {p} ranks ({UNIT})");
    let planned = gather_out_edges(comm, &out, &description).and_then(|pattern| {
        plan_mapping_at_root(comm, pattern.as_ref(), &source, &Options::default())
    });
    conclude(comm, head, &source, planned, UNIT)
}

/// Collective over `split` (the reordered communicator, rank `k` = vertex `k`): this
/// process sends its own vertex (`old_rank`) to the process that now holds it, and
/// receives the vertex it holds from the process of `comm_old` rank `k`, whose rank in
/// `split` is `ranks.inverse()[k]`.
fn exchange(
    split: &SimpleCommunicator,
    ranks: &Perm,
    old_rank: usize,
    adj: &Adjacency,
) -> Vec<i32> {
    let k = split.rank() as usize;
    let mine = adj.encode();
    let mut got = Vec::new();
    mpi::request::scope(|scope| {
        let send = split
            .process_at_rank(old_rank as i32)
            .immediate_send(scope, &mine[..]);
        got = split
            .process_at_rank(ranks.inverse()[k] as i32)
            .receive_vec::<i32>()
            .0;
        send.wait();
    });
    got
}

/// `MPI_Dist_graph_create_adjacent`, interposed: see the module documentation.
///
/// # Safety
/// MPI's own contract for `MPI_Dist_graph_create_adjacent`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Dist_graph_create_adjacent(
    comm_old: MPI_Comm,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    info: MPI_Info,
    reorder: c_int,
    comm_dist_graph: *mut MPI_Comm,
) -> c_int {
    // SAFETY: the program's own arguments, passed on unchanged.
    let pass = || unsafe {
        PMPI_Dist_graph_create_adjacent(
            comm_old,
            indegree,
            sources,
            sourceweights,
            outdegree,
            destinations,
            destweights,
            info,
            reorder,
            comm_dist_graph,
        )
    };
    if reorder == 0 || comm_dist_graph.is_null() || ACTIVE.with(Cell::get) {
        return pass();
    }
    // SAFETY: the predefined null handle of the MPI library.
    if comm_old == unsafe { mpi::ffi::RSMPI_COMM_NULL } {
        return pass();
    }
    let mut inter: c_int = 1;
    // SAFETY: a communicator handle the program passed (not MPI_COMM_NULL); the call
    // only writes the int (and returns an error code for an invalid handle).
    if unsafe { mpi::ffi::PMPI_Comm_test_inter(comm_old, &mut inter) } != 0 || inter != 0 {
        return pass();
    }
    // Unreadable arguments on one process only would split the processes between the
    // two paths, so they count as invalid in the collective check instead.
    // SAFETY: MPI's contract for the arguments.
    let adj = unsafe {
        read_side(indegree, sources, sourceweights).zip(read_side(
            outdegree,
            destinations,
            destweights,
        ))
    }
    .map(|((s, sw), (d, dw))| Adjacency {
        sources: s,
        source_weights: sw,
        destinations: d,
        dest_weights: dw,
    })
    .unwrap_or(Adjacency {
        sources: vec![-1],
        source_weights: Weights::Unweighted,
        destinations: Vec::new(),
        dest_weights: Weights::Unweighted,
    });
    ACTIVE.with(|a| a.set(true));
    let decision = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a valid intra-communicator (checked above); not ours to free.
        let comm = unsafe { copr::transport::borrowed::borrow(comm_old) };
        decide(&comm, &adj).map(|ranks| (comm.rank() as usize, ranks))
    }));
    let result = match decision {
        Ok(Some((old_rank, ranks))) => {
            let key = ranks.inverse()[old_rank] as c_int;
            // SAFETY: the program's communicator; MPI writes the new handle.
            let mut split = unsafe { mpi::ffi::RSMPI_COMM_NULL };
            // SAFETY: as above; every process of comm_old takes this branch together.
            let rc = unsafe { PMPI_Comm_split(comm_old, 0, key, &mut split) };
            if rc != 0 {
                ACTIVE.with(|a| a.set(false));
                return pass();
            }
            let held = catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: the split just made; freed below, not by the wrapper.
                let comm = unsafe { copr::transport::borrowed::borrow(split) };
                Adjacency::decode(&exchange(&comm, &ranks, old_rank, &adj))
            }));
            let rc = match held {
                Ok(Some(v)) => {
                    // SAFETY: the vertex this process holds now, in the split's ranks
                    // (vertex k is rank k of the split), with the program's info.
                    unsafe {
                        PMPI_Dist_graph_create_adjacent(
                            split,
                            v.sources.len() as c_int,
                            v.sources.as_ptr(),
                            v.source_weights.as_ptr(),
                            v.destinations.len() as c_int,
                            v.destinations.as_ptr(),
                            v.dest_weights.as_ptr(),
                            info,
                            0,
                            comm_dist_graph,
                        )
                    }
                }
                // a message of our own making cannot be malformed; should it be, the
                // other processes are already past the point of return
                _ => {
                    write_log(&["internal error: a malformed vertex message".into()]);
                    mpi::ffi::MPI_ERR_INTERN as c_int
                }
            };
            // SAFETY: the split is ours; the graph keeps its own reference.
            unsafe { PMPI_Comm_free(&mut split) };
            rc
        }
        Ok(None) => pass(),
        Err(_) => {
            let why = "internal error (a panic was caught)";
            write_log(&[format!("{why}; kept the MPI library's order")]);
            warn_fallback("MPI_Dist_graph_create_adjacent", why);
            pass()
        }
    };
    ACTIVE.with(|a| a.set(false));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vertex_messages_round_trip() {
        let cases = [
            Adjacency {
                sources: vec![3, 1],
                source_weights: Weights::Given(vec![5, 0]),
                destinations: vec![2],
                dest_weights: Weights::Given(vec![7]),
            },
            Adjacency {
                sources: vec![],
                source_weights: Weights::Empty,
                destinations: vec![0, 4, 2],
                dest_weights: Weights::Unweighted,
            },
        ];
        for a in cases {
            assert_eq!(Adjacency::decode(&a.encode()).as_ref(), Some(&a));
            let mut long = a.encode();
            long.push(9);
            assert_eq!(Adjacency::decode(&long), None);
            assert_eq!(Adjacency::decode(&a.encode()[..3]), None);
        }
        assert_eq!(Adjacency::decode(&[1, 0, 7, 0, 2]), None);
    }

    #[test]
    fn validity() {
        let a = |d: Vec<i32>, w: Weights| Adjacency {
            sources: vec![],
            source_weights: Weights::Empty,
            destinations: d,
            dest_weights: w,
        };
        assert!(a(vec![0, 3], Weights::Given(vec![1, 0])).valid(4));
        assert!(!a(vec![0, 4], Weights::Unweighted).valid(4));
        assert!(!a(vec![-1], Weights::Unweighted).valid(4));
        assert!(!a(vec![1], Weights::Given(vec![-2])).valid(4));
        assert!(!a(vec![1], Weights::Empty).valid(4));
        assert!(a(vec![], Weights::Empty).valid(4));
    }
}
