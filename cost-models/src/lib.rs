//! copr-cost-models: the [`CostModel`] trait — the cost `w(i, j, s)` of
//! sending package `s` from rank `i` to rank `j` (COSTA, section 3) — and
//! the models:
//!
//! | model | `w(i, j, s)` | unit |
//! |---|---|---|
//! | [`LocallyFreeVolume`] | `V(s)` if `i ≠ j`, else 0 (COSTA eq. 1) | bytes |
//! | [`LatencyBandwidth`] | `L(i, j) + B(i, j)·V(s)` if `i ≠ j`, else 0 | s |
//! | [`TransformCost`] | `c_scale·S + c_transpose·T + c_conjugate·C` | s |
//! | [`LocalityPenalty`] | per block, strided row, strided/padding byte, misaligned block | s |
//! | [`Sum`], [`Scaled`] | `Σ_k w_k`, `α·w` | |
//! | [`FnModel`] | any closure | |
//!
//! Every model prices the empty package at 0: `w(i, j, ∅) = 0`.
//! [`CostConfig`] describes a weighted mix of models and its topology in
//! TOML or JSON; [`load`] builds it.
//!
//! ```
//! use copr_cost_models::{BlockFacts, CostModel, LocallyFreeVolume, Package, Scaled, Sum, TransformCost};
//! // volume at 1 GB/s plus the transpose cost
//! let w: Box<dyn CostModel> = Box::new(Sum::new(vec![
//!     Box::new(Scaled::new(1e-9, LocallyFreeVolume).unwrap()) as Box<dyn CostModel>,
//!     Box::new(TransformCost { scale: 0.0, transpose: 1e-10, conjugate: 0.0, remote_only: false }),
//! ]));
//! let s = Package::from_blocks(&[BlockFacts::strided(10, 100).transposed()]);
//! assert!((w.cost(0, 1, &s) - (1e-6 + 1e-7)).abs() < 1e-18);
//! assert!((w.cost(1, 1, &s) - 1e-7).abs() < 1e-18); // local: only the transform
//! assert_eq!(w.cost(0, 1, &Package::EMPTY), 0.0);
//! ```
//!
//! Nothing here knows about MPI; topologies come from [`copr_topology`].

mod candidates;
mod config;
mod error;
mod model;
mod models;
mod package;

pub use candidates::delivered_cost;
pub use config::{load, load_setup, CostConfig, CostSetup, Term};
pub use error::{CostError, Result};
pub use model::{CostModel, ProcessGroups, SolverHints};
pub use models::{
    FnModel, LatencyBandwidth, LocalityPenalty, LocallyFreeVolume, Scaled, Sum, TransformCost,
    DEFAULT_CONJUGATE_COST, DEFAULT_SCALE_COST, DEFAULT_TRANSPOSE_COST,
};
pub use package::{BlockFacts, Locality, Package, TransformBytes};
