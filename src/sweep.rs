//! The block-size sweep of the COSTA paper (section 7.2), and any sweep like it.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::csr::Csr;
use crate::error::{Error, Result};
use crate::lap::{assignment_value, greedy_swaps_transposed, sparse_max};
use crate::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
use crate::volume::{reduction_percent, Columns, Volumes};

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

    /// Runs the sweep (block sizes in parallel, rows in the order of `blocks`);
    /// `progress` is called once per finished block size.
    ///
    /// V itself is never built: its columns are formed one receiving rank at a time and
    /// cut to the receiving ranks' entries plus the `2k` largest others (`k` receiving
    /// ranks), which keeps both the optimum of the exact solver (σ from
    /// [`crate::lap::sparse_max`]) and COSTA's greedy σ of the whole matrix (the proof
    /// is at the private `receiving_rows`). Memory O(ranks + k²) per line.
    ///
    /// # Errors
    /// Layout errors (zero sizes), solver errors.
    pub fn run(&self, progress: &(dyn Fn() + Sync)) -> Result<Vec<SweepRow>> {
        self.blocks
            .par_iter()
            .map(|&b| {
                let row = self.line(b);
                progress();
                row
            })
            .collect()
    }

    /// One line of the sweep.
    fn line(&self, b: usize) -> Result<SweepRow> {
        let t0 = std::time::Instant::now();
        let (src, dst) = self.layouts(b)?;
        let columns = Volumes::columns(&src, &dst, Op::Identity)?;
        let w = receiving_rows(&columns);
        let sigma = sparse_max(&w)?;
        let seconds = t0.elapsed().as_secs_f64();
        let greedy = greedy_swaps_transposed(&w.transpose(), &w);
        let total = columns.total();
        let diag: u64 = (0..columns.len())
            .map(|k| columns.target(k))
            .map(|t| w.get(t, t))
            .sum();
        let before = total - diag;
        let after = total - assignment_value(&w, &sigma);
        let g_after = total - assignment_value(&w, &greedy);
        Ok(SweepRow {
            block: b,
            total_elements: total,
            remote_before: before,
            remote_after: after,
            reduction_percent: reduction_percent(before, after),
            greedy_remote_after: g_after,
            greedy_reduction_percent: reduction_percent(before, g_after),
            seconds,
        })
    }
}

/// The part of `W = Vᵀ` (row `t`: what target rank `t` receives) that the exact
/// relabeling and COSTA's greedy swaps can use, for `k` receiving ranks and
/// `K = 2k`: every row keeps its entries from receiving ranks and its `K` best entries
/// from the others, best = larger `V[s][t]`, then smaller `s`.
///
/// * Exact optimum: in a row cut this way, the `K ≥ k` kept entries from non-receiving
///   ranks are each at least any dropped one. If an optimal σ gives row `t` a dropped
///   column, at most `k − 1` other receiving rows use kept columns of `t`, so one kept
///   column `s'` belongs to a row that receives nothing; giving `s'` to `t` and `t`'s
///   column to that row loses nothing. Repeating makes every row use a kept entry: the
///   optimum of the cut matrix is the optimum of `W`, and the value of the σ found on it
///   is that optimum.
/// * Greedy: a pair `{s, t}` of a non-receiving `s` has the weight `V[s][t] − V[t][t]`,
///   so `t`'s pairs with non-receiving ranks come in the order above; a dropped one has
///   `K` pairs before it at `t` with distinct partners. The greedy uses at most
///   `2·min(senders, receivers) ≤ K` ranks, so as in [`crate::lap::greedy_swaps`] such a
///   pair is never taken. Pairs of two receiving ranks and the diagonal are kept whole,
///   so every kept pair has its full weight and the greedy σ is the same.
///
/// # Complexity
/// O(nnz(V) + n) time (one pass over each column, a selection every `K` kept entries),
/// O(n + k·(k + K)) memory.
fn receiving_rows(columns: &Columns) -> Csr {
    let n = columns.ranks();
    let k = columns.len();
    let keep = (2 * k).max(1);
    let mut receives = vec![false; n];
    for i in 0..k {
        receives[columns.target(i)] = true;
    }
    let mut row_ptr = Vec::with_capacity(n + 1);
    let mut cols: Vec<u32> = Vec::new();
    let mut vals: Vec<u64> = Vec::new();
    let mut scratch = Vec::new();
    // the best entries from non-receiving ranks: key (!V[s][t], s), smaller is better
    let mut best: Vec<u128> = Vec::with_capacity(2 * keep);
    let mut row: Vec<(u32, u64)> = Vec::new();
    row_ptr.push(0);
    for i in 0..k {
        let t = columns.target(i);
        while row_ptr.len() <= t {
            row_ptr.push(cols.len());
        }
        best.clear();
        row.clear();
        let mut cutoff = u128::MAX;
        columns.visit(i, &mut scratch, |s, x| {
            if receives[s as usize] {
                row.push((s, x));
                return;
            }
            let key = (u128::from(!x) << 32) | u128::from(s);
            if key < cutoff {
                best.push(key);
                if best.len() == 2 * keep {
                    best.select_nth_unstable(keep - 1);
                    best.truncate(keep);
                    cutoff = best[keep - 1];
                }
            }
        });
        if best.len() > keep {
            best.select_nth_unstable(keep - 1);
            best.truncate(keep);
        }
        row.extend(best.iter().map(|&key| (key as u32, !((key >> 32) as u64))));
        row.sort_unstable_by_key(|e| e.0);
        cols.extend(row.iter().map(|e| e.0));
        vals.extend(row.iter().map(|e| e.1));
    }
    while row_ptr.len() <= n {
        row_ptr.push(cols.len());
    }
    Csr::from_parts(n, n, row_ptr, cols, vals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lap::greedy_swaps;

    fn lcg(seed: &mut u64) -> usize {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*seed >> 33) as usize
    }

    /// The cut matrix against the whole one: the same greedy σ (not only its value) and
    /// the same optimum, on sweeps with many senders and few receivers, so that rows are
    /// cut, and block-cyclic volumes, so that ties are everywhere.
    #[test]
    fn cut_rows_keep_the_greedy_sigma_and_the_optimum() {
        let mut seed = 12u64;
        let mut cut = 0;
        for round in 0..150 {
            let cfg = SweepConfig {
                m: 1 + lcg(&mut seed) % 500,
                n: 1 + lcg(&mut seed) % 500,
                nprow: 1 + lcg(&mut seed) % 14,
                npcol: 1 + lcg(&mut seed) % 14,
                target_block: 1 + lcg(&mut seed) % 400,
                source_order: [Order::RowMajor, Order::ColMajor][lcg(&mut seed) % 2],
                target_order: [Order::RowMajor, Order::ColMajor][lcg(&mut seed) % 2],
                blocks: vec![],
            };
            let b = 1 + lcg(&mut seed) % 40;
            let (src, dst) = cfg.layouts(b).unwrap();
            let v = Volumes::compute(&src, &dst, Op::Identity).unwrap();
            let vt = v.matrix().transpose();
            let w = receiving_rows(&Volumes::columns(&src, &dst, Op::Identity).unwrap());
            let receivers = (0..vt.n_rows())
                .filter(|&t| vt.row_ptr()[t + 1] > vt.row_ptr()[t])
                .count();
            cut += usize::from(w.nnz() < vt.nnz());
            assert!(w.nnz() <= receivers * 3 * receivers, "round {round}");
            assert_eq!(
                greedy_swaps_transposed(&w.transpose(), &w).forward(),
                greedy_swaps(v.matrix()).forward(),
                "round {round}: {cfg:?}, block {b}"
            );
            assert_eq!(
                assignment_value(&w, &sparse_max(&w).unwrap()),
                assignment_value(&vt, &sparse_max(&vt).unwrap()),
                "round {round}: {cfg:?}, block {b}"
            );
        }
        assert!(cut > 50, "only {cut} instances were cut");
    }
}
