//! Process mapping: place the tasks of a communication pattern on the slots of a
//! machine so that they communicate less, and hand the result to the launcher or the
//! application.
//!
//! ```text
//! pattern  (Cartesian grid | weighted graph file | a reshuffle's volumes)
//!   + machine  (torus with allocated nodes | network graph | flat; ranks per node)
//!   -> strategy  (packed, round-robin, folded, tiles, Hilbert, CP2K, bisection, optimised)
//!   -> metrics   (hop-bytes, dilation, link loads under the machine's routing, bounds)
//!   -> export    (rankfile, MPICH_RANK_ORDER, SLURM_HOSTFILE, SMPI hostfile, JSON,
//!                 an MPI communicator with the `mpi` feature)
//! ```
//!
//! A mapping is a [`Perm`]: `map.apply(task) = slot`, where task `i` is the process
//! that takes rank `i` of the reordered communicator (for a grid, the grid position of
//! `MPI_Cart_create`'s rank `i`), and slot `s = node·ranks_per_node + core` is the
//! `s`-th process the launcher starts in its default ("packed") order.
//!
//! ```
//! use copr_mapping::{baseline, evaluate, optimise, CartGrid, MapMachine, Options, Pattern, Scored, Strategy};
//! use copr_topology::{Torus, TorusParams};
//! // a 16 x 16 periodic grid on a 4x4x4 torus with 4 ranks per node
//! let p = Pattern::grid(&CartGrid::new(vec![16, 16], vec![true, true], vec![1 << 20; 2])?)?;
//! let m = MapMachine::torus(Torus::full(TorusParams::new(vec![4, 4, 4]))?, 4)?;
//! let mut starts = Vec::new();
//! for s in Strategy::BASELINES {
//!     if let Some(map) = baseline(s, &p, &m)? {
//!         starts.push(Scored { origin: s.name().into(), metrics: evaluate(&p, &m, &map), map });
//!     }
//! }
//! let best = optimise(&p, &m, &starts, &Options::default())?;
//! assert!(best.dominates_starts);
//! assert_eq!(best.best.metrics.hop_bytes, best.best.metrics.hop_bytes_bound); // optimal
//! # Ok::<(), copr::Error>(())
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

use std::path::Path;

use copr::error::Result;
pub use copr::lap::Perm;

mod algorithms;
mod anytime;
mod bundles;
mod candidates;
mod clock;
mod curve;
mod ecmp;
mod errors;
pub mod export;
mod fluid;
mod gain_heap;
mod graph_formats;
mod groups;
mod machine;
mod metrics;
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub mod mpi;
mod multilevel;
mod optimise;
mod padded;
mod paths;
mod pattern;
mod program_choice;
mod recognise;
mod recording;
mod report;
mod restarts;
mod route_table;
#[cfg(feature = "scotch")]
#[cfg_attr(docsrs, doc(cfg(feature = "scotch")))]
pub mod scotch;
pub mod simgrid;
mod slots;
mod staged;
mod strategy;
mod swaps;
mod tile_traffic;
mod tiles;

pub use algorithms::{Algorithm, AlgorithmSpec, Collective, MAX_MESSAGES};
pub use candidates::{Options, Scored};
pub use copr::rng::SplitMix;
pub use copr_topology::{expand_nodelist, NodeListError};
pub use curve::{bits_for, hilbert_index, hilbert_order};
pub use ecmp::{ecmp_link_loads, ecmp_max_link_time};
#[cfg(feature = "mpi")]
pub use errors::MpiError;
pub use errors::{ExportError, Format, MachineError, MapError};
pub use fluid::{round_time, RoundModel, Sharing};
pub use machine::{
    check_node_name, LinkInfo, LinkLoadModel, MapMachine, NetKind, MAX_GRAPH_NODES,
    NODE_NAME_FORBIDDEN,
};
pub use metrics::{
    evaluate, evaluate_nodes, hop_bytes_bound, link_loads, ClassLoad, LevelBytes, Metrics,
};
pub use optimise::{optimise, optimise_rounds, Optimised};
pub use pattern::{
    pair_bytes, CartGrid, Edge, Pattern, PatternError, INCOMPLETE_RECORDING, MAX_TASKS,
};
pub use recognise::{recognise_grid, HiddenGrid};
pub use recording::{machine_from_recording, recorded_hosts, recorded_hosts_file};
pub use report::{against_default, bytes_text, compare, table, Comparison, Row};
pub use slots::{fit_comparison, fit_to_slots};
pub use staged::{program_time, Program};
pub use strategy::{baseline, check_sizes, Strategy};
pub use swaps::refine;

/// A torus machine from command-line style options: `dims`, optional per-dimension
/// link bandwidths, optional allocated-nodes file (`name x y z` lines; without it the
/// whole torus), `ranks_per_node`.
///
/// # Errors
/// Invalid torus parameters or coordinates file, `ranks_per_node == 0`.
pub fn torus_machine(
    dims: Vec<u32>,
    link_bandwidth: Option<Vec<f64>>,
    alloc: Option<&Path>,
    ranks_per_node: usize,
) -> Result<MapMachine> {
    let mut params = copr_topology::TorusParams::new(dims);
    if let Some(b) = link_bandwidth {
        params.link_bandwidth = b;
    }
    let torus = match alloc {
        Some(f) => copr_topology::Torus::from_coords_file(params, f)?,
        None => {
            let n = params.dims.iter().fold(1u128, |a, &d| a * u128::from(d));
            machine::check_slots(n, ranks_per_node)?;
            copr_topology::Torus::full(params)?
        }
    };
    MapMachine::torus(torus, ranks_per_node)
}

/// Input files are read up to this size (one limit for every file copr reads).
pub use copr::files::MAX_FILE_BYTES;
