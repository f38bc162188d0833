//! The block-size sweep of the COSTA paper (section 7.2), and any sweep like it.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lap::{greedy_swaps_transposed, sparse_max};
use crate::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
use crate::volume::{reduction_percent, Volumes};

/// A sweep over source block sizes: an `m × n` matrix moves from a block-cyclic layout
/// with block `b × b` on an `nprow × npcol` grid numbered `source_order`, to block
/// `target_block` on the same grid shape numbered `target_order`, for every `b` in
/// `blocks`. The default is the paper's experiment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SweepConfig {
    /// Rows.
    pub m: usize,
    /// Columns.
    pub n: usize,
    /// Process grid rows (both layouts).
    pub nprow: usize,
    /// Process grid columns (both layouts).
    pub npcol: usize,
    /// Block size of the target layout.
    pub target_block: usize,
    /// Rank numbering of the source grid.
    pub source_order: Order,
    /// Rank numbering of the target grid.
    pub target_order: Order,
    /// Source block sizes.
    pub blocks: Vec<usize>,
}

/// The paper's source block sizes, plus a few that do not divide 10^5.
pub const PAPER_BLOCKS: [usize; 24] = [
    1, 2, 3, 5, 7, 10, 20, 32, 50, 64, 100, 128, 200, 256, 500, 512, 1000, 1024, 2000, 2500, 3000,
    5000, 7500, 10000,
];

impl Default for SweepConfig {
    fn default() -> Self {
        Self {
            m: 100_000,
            n: 100_000,
            nprow: 10,
            npcol: 10,
            target_block: 10_000,
            source_order: Order::RowMajor,
            target_order: Order::ColMajor,
            blocks: PAPER_BLOCKS.to_vec(),
        }
    }
}

/// One line of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Source block size.
    pub block: usize,
    /// Elements of the matrix.
    pub total_elements: u64,
    /// Remote elements without relabeling.
    pub remote_before: u64,
    /// Remote elements with the exact σ.
    pub remote_after: u64,
    /// Reduction by the exact σ, in percent.
    pub reduction_percent: f64,
    /// Remote elements with COSTA's greedy swaps.
    pub greedy_remote_after: u64,
    /// Reduction by the greedy swaps, in percent.
    pub greedy_reduction_percent: f64,
    /// Seconds for volumes + exact solve of this line.
    pub seconds: f64,
}

impl SweepConfig {
    /// Source and target layouts for block size `b`.
    ///
    /// # Errors
    /// [`crate::Error::Layout`] for zero sizes or sizes beyond the layout limits; a
    /// bad block size is reported as field `blocks` (source) or `target_block`.
    pub fn layouts(&self, b: usize) -> Result<(Layout, Layout)> {
        let mut s = BlockCyclicSpec::new(self.m, self.n, b, b, self.nprow, self.npcol);
        s.grid_order = self.source_order;
        let tb = self.target_block;
        let mut t = BlockCyclicSpec::new(self.m, self.n, tb, tb, self.nprow, self.npcol);
        t.grid_order = self.target_order;
        // block-size errors name the sweep's own field, which says the side
        let named = |field: &'static str| {
            move |e: Error| match e {
                Error::Layout {
                    field: "mb" | "nb",
                    detail,
                } => Error::Layout { field, detail },
                e => e,
            }
        };
        Ok((
            BlockCyclic::new(s).map_err(named("blocks"))?.into(),
            BlockCyclic::new(t).map_err(named("target_block"))?.into(),
        ))
    }

    /// Runs the sweep (block sizes in parallel); `progress` is called once per finished
    /// block size.
    ///
    /// # Errors
    /// Layout errors (zero sizes), solver errors.
    pub fn run(&self, progress: &(dyn Fn() + Sync)) -> Result<Vec<SweepRow>> {
        self.blocks
            .par_iter()
            .map(|&b| {
                let t0 = std::time::Instant::now();
                let (src, dst) = self.layouts(b)?;
                let v = Volumes::compute(&src, &dst, Op::Identity)?;
                let vt = v.matrix().transpose();
                let sigma = sparse_max(&vt)?;
                let seconds = t0.elapsed().as_secs_f64();
                let greedy = greedy_swaps_transposed(v.matrix(), &vt);
                drop(vt);
                let before = v.remote();
                let after = v.remote_after(&sigma);
                let g_after = v.remote_after(&greedy);
                progress();
                Ok(SweepRow {
                    block: b,
                    total_elements: v.total(),
                    remote_before: before,
                    remote_after: after,
                    reduction_percent: reduction_percent(before, after),
                    greedy_remote_after: g_after,
                    greedy_reduction_percent: reduction_percent(before, g_after),
                    seconds,
                })
            })
            .collect()
    }
}
