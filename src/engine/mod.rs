//! The reshuffle engine: `A ← α·op(B) + β·A` between two distributed layouts.
//!
//! B and A each have their own [`Layout`](crate::layout::Layout) (block-cyclic or an
//! arbitrary grid, different grids and numbers of ranks, a target on a subset of the
//! ranks, submatrices) and their own local storage (row- or column-major blocks,
//! leading dimensions); `op ∈ {identity, transpose, conjugate transpose}` and the
//! element type is one of `f32`, `f64`, `Complex32`, `Complex64`, `i32`, `i64`.
//!
//! # How it runs (COSTA, Algorithm 3)
//! 1. [`ReshufflePlan::new`] checks collectively that every rank passed the same batch
//!    (a fingerprint gathered from all ranks), relabels each target with the exact
//!    communication-optimal σ (unless switched off, see [`Relabeling`]), and cuts the
//!    overlay of the two grids into pieces: what this rank sends to every peer, what it
//!    receives, and what stays local.
//! 2. [`ReshufflePlan::execute`] packs one package per peer for the whole batch
//!    (transposed pieces already in the receiver's element order, by a cache-blocked,
//!    on x86-64 SIMD, transpose; in parallel when the rank has cores to spare) while
//!    the ranks gather their check words: same plan, element type and scalars, every
//!    local buffer large enough. Only after all ranks have judged the words does any
//!    package leave: one message per peer; local pieces copied straight from B to A
//!    while messages travel; every package scaled and conjugated into A on receipt, in
//!    arrival order.
//!
//! The same engine runs over any [`Transport`](crate::transport::Transport): threads as
//! ranks ([`run_in_process`](crate::transport::run_in_process)) or MPI (feature `mpi`),
//! where packages between ranks of one node are read in place from a shared-memory
//! window.
//!
//! # Example
//! ```
//! use copr::engine::{reshuffle, Job, Relabeling, Transform};
//! use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op};
//! use copr::transport::{run_in_process, Transport};
//!
//! // 4x4 matrix, 2x2 blocks: row-major 2x2 grid -> column-major 2x2 grid, A ← 2·B.
//! let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(4, 4, 2, 2, 2, 2)).unwrap().into();
//! let mut spec = BlockCyclicSpec::new(4, 4, 2, 2, 2, 2);
//! spec.grid_order = copr::layout::Order::ColMajor;
//! let dst: Layout = BlockCyclic::new(spec).unwrap().into();
//! let out = run_in_process(4, |t| {
//!     let b = vec![t.rank() as f64; 4]; // each rank holds one 2x2 block
//!     let mut a = vec![0.0; 4];
//!     let job = Job { alpha: 2.0, beta: 0.0, source: &b, target: &mut a };
//!     let batch = vec![Transform::new(src.clone(), dst.clone(), Op::Identity)
//!         .with_relabeling(Relabeling::Off)];
//!     reshuffle(t, batch, &mut [job]).unwrap();
//!     a
//! })
//! .unwrap();
//! // Rank 1 holds block (1, 0) of A, which came from rank 2 (block (1, 0) of B).
//! assert_eq!(out[1], vec![4.0; 4]);
//! ```

mod cache;
mod element;
mod exec;
pub(crate) mod kernel;
mod schedule;
mod source_map;

pub use cache::PlanCache;
pub use element::{Element, ElementKind};
pub use exec::{
    pooled_bytes, release_buffers, reshuffle, ExecStats, Job, ReshufflePlan, Streaming,
    STREAM_MIN_BYTES,
};
pub use schedule::{PlanStats, Relabeling, TargetContents, Transform};
