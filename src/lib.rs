//! copr finds and applies a **communication-optimal process relabeling** (COPR) for MPI
//! programs and moves distributed matrices between layouts with it.
//!
//! # Overview
//! Two layouts of the same matrix — say ScaLAPACK block-cyclic with 32 × 32 blocks and
//! with 128 × 128 blocks — fix what every rank must send every other rank. copr computes
//! these volumes from the layouts' row and column splits alone (no loop over blocks),
//! prices them with a cost model, and finds by an exact linear assignment the renaming
//! of target ranks that moves the least (COSTA, Kabić et al.). Its reshuffle engine then
//! executes `A ← α·op(B) + β·A` with one message per peer, in process (threads as ranks)
//! or over MPI. The same volumes, or a Cartesian grid or a graph, can be mapped onto a
//! machine (torus, network graph) by several strategies compared on hop-bytes and link
//! loads. The `copr` command-line tool (`copr plan`, `sweep`, `topo`, `map`) drives all of
//! it from TOML or JSON files; it is a binary only, not part of this library's API.
//!
//! # Concepts, in the order the data flows
//! * **Layouts** ([`layout`]): what lives where. A [`layout::Layout`] is a ScaLAPACK
//!   [`layout::BlockCyclic`] distribution or an arbitrary [`layout::Grid`] of blocks;
//!   each comes with its file form ([`layout::BlockCyclicSpec`], [`layout::GridSpec`]).
//!   `op` ([`layout::Op`]) is identity, transpose or conjugate transpose.
//! * **Volumes** ([`volume`]): the sparse matrix `V[s][t]` of elements source rank `s`
//!   sends target rank `t` for `A ← op(B)`.
//! * **σ, the relabeling** ([`lap::Perm`]): σ renames *target* labels. Target label `t`
//!   (the rank that owns a block in the target layout as written) is taken by process
//!   `σ(t)` — `sigma.apply(t)`, `sigma.forward()[t]` — and `sigma.apply_inv(q)` is the
//!   label process `q` takes. The volume that stays local is `Σ_t V[σ(t)][t]`; the
//!   exact solvers in [`lap`] maximise it.
//! * **Gain** ([`gain`]): for any [`copr_cost_models::CostModel`], the relabeling gain
//!   `δ(x, y)` and the cost-optimal σ. A σ that saves nothing is always the identity.
//! * **Plan** ([`plan`]): two layouts, their volumes and σ, with a report; what
//!   `copr plan` prints. [`sweep`] runs plans over a range of block sizes.
//! * **Engine** ([`engine`]): executes `A ← α·op(B) + β·A` for a batch of
//!   [`engine::Transform`]s, relabeling each target by default; plan once
//!   ([`engine::ReshufflePlan`]), execute many times.
//! * **Transports** ([`transport`]): how the engine's bytes move — threads as ranks
//!   ([`transport::run_in_process`]) or MPI (`MpiTransport`, feature `mpi`).
//!
//! Machines and cost models live in two companion crates: `copr_topology` (hwloc trees,
//! tori, network graphs, placements) and `copr_cost_models` (the `CostModel` trait, its
//! models and config files).
//!
//! # Features
//! * `mpi`: the MPI transport and the distributed gain `gain::mpi` — needs an MPI library (Open MPI) and libclang.
//! * `hwloc`: discovers the machine's topology with hwloc (needs libhwloc and libudev).
//! * `scalapack`: the ScaLAPACK comparison in the MPI benchmark driver (implies `mpi`).
//!
//! Without features, everything else — layouts, volumes, solvers, cost models, plans,
//! the in-process engine — builds with cargo alone.
//!
//! # Quick start
//! ```
//! use copr::layout::{BlockCyclic, BlockCyclicSpec, Op, Order};
//! use copr::plan::{Plan, Solver};
//!
//! // A 4000 x 4000 matrix on 2 x 2 ranks: 32 x 32 blocks on a row-major grid to
//! // 128 x 128 blocks on a column-major grid.
//! let source = BlockCyclic::new(BlockCyclicSpec::new(4000, 4000, 32, 32, 2, 2))?;
//! let mut t = BlockCyclicSpec::new(4000, 4000, 128, 128, 2, 2);
//! t.grid_order = Order::ColMajor;
//! let target = BlockCyclic::new(t)?;
//!
//! let plan = Plan::new(source.into(), target.into(), Op::Identity, Solver::Sparse)?;
//! let v = plan.volumes();
//! assert_eq!(v.total(), 4000 * 4000);
//! // σ never makes things worse, and a σ that gains nothing is the identity.
//! assert!(plan.remote_after() <= v.remote());
//! assert!(plan.remote_after() < v.remote() || plan.sigma().is_identity());
//! // Target label t is now held by process σ(t).
//! let relabeled = plan.relabeled_target()?;
//! assert_eq!(relabeled.owner_of(0, 0), plan.sigma().apply(plan.target().owner_of(0, 0)));
//! # Ok::<(), copr::Error>(())
//! ```
//! The engine's example ([`engine`]) moves data with such a plan; the README shows the
//! command-line tool.

// docs.rs (nightly, `--cfg docsrs`) marks the items behind a feature with that feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod csr;
pub mod engine;
pub mod error;
pub mod files;
pub mod gain;
pub mod lap;

pub use error::{Error, Mismatched, Result};
pub mod layout;
pub mod plan;
pub mod relabel;
pub mod rng;
pub mod sweep;
pub mod transport;
pub mod volume;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The user guide's Rust blocks are doctests too, one item per page.
#[cfg(doctest)]
mod guide_doctests {
    #[doc = include_str!("../docs/install.md")]
    struct Install;
    #[doc = include_str!("../docs/planning.md")]
    struct Planning;
    #[doc = include_str!("../docs/cost-models.md")]
    struct CostModels;
    #[doc = include_str!("../docs/machines.md")]
    struct Machines;
    #[doc = include_str!("../docs/calibration.md")]
    struct Calibration;
    #[doc = include_str!("../docs/engine.md")]
    struct Engine;
    #[doc = include_str!("../docs/c-fortran.md")]
    struct CFortran;
    #[doc = include_str!("../docs/mapping.md")]
    struct Mapping;
    #[doc = include_str!("../docs/measure-map-rerun.md")]
    struct MeasureMapRerun;
    #[doc = include_str!("../docs/SCALING.md")]
    struct Scaling;
}

/// The command line's internals are not library API: these do not compile.
///
/// ```compile_fail
/// let _ = copr::cli::run;
/// ```
///
/// ```compile_fail
/// let _ = copr::plot::sweep_chart;
/// ```
#[cfg(doctest)]
struct CliIsNotApi;
