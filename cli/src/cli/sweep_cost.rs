//! `copr sweep --cost FILE`: every block size of the sweep priced under a cost model,
//! as `copr plan --cost` prices one plan.

use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use copr::layout::Op;
use copr::plan::{CostReport, Plan, Solver};
use copr::sweep::{SweepConfig, SweepRow};
use copr::Result;

/// Bytes per element the sweep prices (its matrices are f64, as in the paper).
const ELEMENT_SIZE: usize = 8;

/// One block size under the cost model.
#[derive(Debug, Serialize)]
pub(super) struct SweepCost {
    /// Source block size.
    pub(super) block: usize,
    /// The model's cost without relabeling, with the volume-optimal σ and with the
    /// cost-optimal σ, and the latter's reduction and remote volume.
    #[serde(flatten)]
    pub(super) report: CostReport,
}

/// One row of `copr sweep --json` with `--cost`: the volume row and its costs.
#[derive(Debug, Serialize)]
pub(super) struct Row<'a> {
    #[serde(flatten)]
    volume: &'a SweepRow,
    cost: &'a CostReport,
}

/// Prices every block size of `cfg` under the cost config `path` (block sizes in
/// parallel, in the order of `cfg.blocks`).
///
/// # Errors
/// The config's errors (naming the file), a machine with fewer ranks than the grid,
/// and the sweep's layout errors.
pub(super) fn price(cfg: &SweepConfig, path: &Path) -> Result<(String, Vec<SweepCost>)> {
    let ranks = cfg.nprow.saturating_mul(cfg.npcol);
    let setup = copr_cost_models::load_setup(path, Some(ranks))?;
    let model = setup.model.as_ref();
    let costs = cfg
        .blocks
        .par_iter()
        .map(|&b| {
            let (src, dst) = cfg.layouts(b)?;
            let plan = Plan::new(src, dst, Op::Identity, Solver::Sparse)?;
            let report = plan
                .cost_report(model, ELEMENT_SIZE, 1.0)
                .map_err(|e| e.in_file(path))?;
            Ok(SweepCost { block: b, report })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((model.describe(), costs))
}

/// The JSON rows: each volume row with its `cost` object.
pub(super) fn json_rows<'a>(rows: &'a [SweepRow], costs: &'a [SweepCost]) -> Vec<Row<'a>> {
    rows.iter()
        .zip(costs)
        .map(|(volume, c)| Row {
            volume,
            cost: &c.report,
        })
        .collect()
}

/// The cost table printed under the volume table.
pub(super) fn print(model: &str, unit: &str, costs: &[SweepCost]) {
    println!("{}", super::wrapped("cost model ", model));
    println!(
        "{:>7} {:>16} {:>16} {:>16} {:>9}",
        "block",
        format!("before {unit}").trim(),
        format!("volume sigma {unit}").trim(),
        format!("cost sigma {unit}").trim(),
        "cost %"
    );
    for c in costs {
        let r = &c.report;
        // the same cost summed in another order may differ in its last bits: no "-0.00"
        let pct = if r.reduction_percent.abs() < 0.005 {
            0.0
        } else {
            r.reduction_percent
        };
        println!(
            "{:>7} {:>16.6e} {:>16.6e} {:>16.6e} {:>9.2}",
            c.block, r.cost_before, r.cost_with_plan_sigma, r.cost_after, pct
        );
    }
}
