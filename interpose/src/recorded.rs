//! `COPR_GRAPH=traffic.txt`: the reorders of `MPI_Cart_create` and
//! `MPI_Dist_graph_create_adjacent` map the traffic a run recorded (`COPR_RECORD`)
//! instead of uniform grid messages or the graph's weights.
//!
//! Task `i` of the pattern is rank `i` of the communicator being created from: the
//! position the process of that rank takes when nothing is reordered, which is what it
//! held in the recorded run if that run kept the library's order (record without
//! `COPR_GRAPH`, or with `reorder = 0`). The file's ranks are ranks of
//! `MPI_COMM_WORLD`; messages between the communicator's processes are kept, the
//! others left out.

use std::collections::HashMap;
use std::ffi::c_int;
use std::path::Path;

use copr_mapping::mpi::{plan_mapping_at_root, MachineSource};
use copr_mapping::{Edge, Options, Pattern, Perm};
use mpi::ffi::{PMPI_Comm_rank, PMPI_Comm_size, RSMPI_COMM_WORLD};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use crate::log::{conclude, write_log};

/// The environment variable naming the recorded traffic.
pub(crate) const ENV_GRAPH: &str = "COPR_GRAPH";

/// What a message weighs, as the log says it.
pub(crate) const UNIT: &str = "recorded bytes";

/// The file named by `COPR_GRAPH`, when set and not empty.
pub(crate) fn graph_path() -> Option<String> {
    std::env::var(ENV_GRAPH).ok().filter(|p| !p.is_empty())
}

/// Collective on `comm`: on rank 0, the recorded traffic among `comm`'s processes as a
/// pattern (task `i` = rank `i` of `comm`), or the reason there is none; `Ok(None)`
/// elsewhere. Rank 0 receives one integer per process.
pub(crate) fn pattern_at_root(
    comm: &SimpleCommunicator,
    path: &str,
) -> Result<Option<Pattern>, String> {
    let mut world: c_int = -1;
    // SAFETY: writes one int; MPI_COMM_WORLD is valid between MPI_Init and MPI_Finalize.
    unsafe { PMPI_Comm_rank(RSMPI_COMM_WORLD, &mut world) };
    let root = comm.process_at_rank(0);
    if comm.rank() != 0 {
        root.gather_into(&world);
        return Ok(None);
    }
    let mut members = vec![0 as c_int; comm.size() as usize];
    root.gather_into_root(&world, &mut members[..]);
    let full = Pattern::from_file(Path::new(path)).map_err(|e| format!("{ENV_GRAPH}: {e}"))?;
    let mut size: c_int = 0;
    // SAFETY: writes one int; MPI_COMM_WORLD is valid between MPI_Init and MPI_Finalize.
    unsafe { PMPI_Comm_size(RSMPI_COMM_WORLD, &mut size) };
    of_this_run(&full, size, path)?;
    restrict(&full, &members, path).map(Some)
}

/// Collective on `comm`: copr's mapping of the recorded traffic among `comm`'s
/// processes (task → rank of `comm`) when it beats the present order, else `None` on
/// every process; logged under `head` as the grid's own mapping is.
pub(crate) fn plan(
    comm: &SimpleCommunicator,
    head: &str,
    path: &str,
    source: &MachineSource,
) -> Option<Perm> {
    let pattern = match pattern_at_root(comm, path) {
        Ok(p) => p,
        Err(e) => {
            // rank 0 only; the others learn it from plan_mapping_at_root's verdict
            write_log(&[format!("{head}: {e}")]);
            None
        }
    };
    let planned = plan_mapping_at_root(comm, pattern.as_ref(), source, &Options::default());
    conclude(
        comm,
        format!("{head}, traffic from {ENV_GRAPH}={path}"),
        source,
        planned,
        UNIT,
    )
}

/// Refuses a recording of more ranks than this run's `MPI_COMM_WORLD` has (a recording
/// of another run: its rank numbers are not this run's). Fewer is accepted: a graph
/// written by hand need not name the ranks that send nothing.
fn of_this_run(full: &Pattern, world_size: c_int, path: &str) -> Result<(), String> {
    let world = usize::try_from(world_size).unwrap_or(0);
    if full.tasks() > world {
        return Err(format!(
            "{ENV_GRAPH}={path}: a recording of {} ranks, but this run has {world} \
             (a recording of another run?)",
            full.tasks()
        ));
    }
    Ok(())
}

/// The messages of `full` (tasks = world ranks) between `members` (world rank of each
/// rank of the communicator), renumbered as ranks of the communicator.
fn restrict(full: &Pattern, members: &[c_int], path: &str) -> Result<Pattern, String> {
    let local: HashMap<u32, u32> = members
        .iter()
        .enumerate()
        .filter(|&(_, &w)| w >= 0)
        .map(|(i, &w)| (w as u32, i as u32))
        .collect();
    let edges: Vec<Edge> = full
        .edges()
        .iter()
        .filter_map(|e| {
            Some(Edge {
                src: *local.get(&e.src)?,
                dst: *local.get(&e.dst)?,
                bytes: e.bytes,
            })
        })
        .collect();
    if edges.is_empty() {
        return Err(format!(
            "{ENV_GRAPH}={path}: no recorded message between the {} ranks of this communicator",
            members.len()
        ));
    }
    Pattern::from_edges(
        members.len(),
        edges,
        format!("traffic recorded in {path} ({} ranks)", members.len()),
    )
    .map_err(|e| format!("{ENV_GRAPH}={path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_members_messages_renumbered() {
        let full = Pattern::from_edges(
            4,
            vec![
                Edge {
                    src: 0,
                    dst: 2,
                    bytes: 5,
                },
                Edge {
                    src: 2,
                    dst: 3,
                    bytes: 7,
                },
                Edge {
                    src: 3,
                    dst: 1,
                    bytes: 9,
                },
            ],
            "t".into(),
        )
        .expect("a valid pattern");
        // the communicator: world ranks 3 and 2, in that order
        let p = restrict(&full, &[3, 2], "t").expect("one message between them");
        assert_eq!(p.tasks(), 2);
        assert_eq!(
            p.edges(),
            &[Edge {
                src: 1,
                dst: 0,
                bytes: 7
            }]
        );
        assert!(restrict(&full, &[1, 2], "t").is_err());
    }

    #[test]
    fn a_recording_of_more_ranks_than_the_run_is_refused() {
        let edge = Edge {
            src: 0,
            dst: 15,
            bytes: 1,
        };
        let full = Pattern::from_edges(16, vec![edge], "t".into()).expect("a valid pattern");
        let e = of_this_run(&full, 8, "t.txt").expect_err("16 ranks in a run of 8");
        assert!(
            e.contains("16 ranks") && e.contains("this run has 8"),
            "{e}"
        );
        assert!(of_this_run(&full, 16, "t.txt").is_ok());
        assert!(of_this_run(&full, 32, "t.txt").is_ok());
    }
}
