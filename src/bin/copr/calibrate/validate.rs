//! `copr calibrate --validate`: real reshuffles with the engine, timed, against what
//! the calibrated cost model predicts for them.

use std::time::Instant;

use copr::engine::{Job, Relabeling, ReshufflePlan, Transform};
use copr::gain::{PackageInput, Packages, TransformKind};
use copr::lap::Perm;
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
use copr::transport::MpiTransport;
use copr::Result;
use copr_cost_models::CostModel;
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use serde::Serialize;

use super::stats::{median, spearman};

/// Timed executions per run (after one untimed).
const REPS: usize = 5;

/// One layout pair of the validation set.
struct Case {
    name: String,
    source: Layout,
    target: Layout,
    op: Op,
}

/// Which σ a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Sigma {
    /// No relabeling.
    None,
    /// The engine's volume-optimal σ.
    Volume,
    /// The σ minimising the calibrated cost model.
    Cost,
}

impl Sigma {
    fn name(self) -> &'static str {
        match self {
            Sigma::None => "none",
            Sigma::Volume => "volume",
            Sigma::Cost => "cost",
        }
    }
}

/// One run: a case executed with one σ.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Run {
    pub(crate) case: String,
    pub(crate) op: &'static str,
    pub(crate) sigma: Sigma,
    /// Seconds the model predicts: the busiest rank's packages (max over ranks of
    /// the larger of its outgoing and incoming cost) plus the copy floor.
    pub(crate) predicted: f64,
    /// Median over executions of the slowest rank's wall time, seconds.
    pub(crate) measured: f64,
    /// The fastest execution's slowest-rank time, seconds (least disturbed by other
    /// load on a shared machine).
    pub(crate) fastest: f64,
    /// (predicted − measured) / measured.
    pub(crate) error: f64,
    /// Elements that stay on their rank.
    pub(crate) local_fraction: f64,
}

/// Where the cost-optimal and the volume-optimal σ differ: which was faster.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SigmaDuel {
    pub(crate) case: String,
    pub(crate) cost_sigma_seconds: f64,
    pub(crate) volume_sigma_seconds: f64,
    pub(crate) faster: Sigma,
}

/// The validation's result.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Validation {
    pub(crate) ranks: usize,
    pub(crate) matrix: usize,
    pub(crate) element: &'static str,
    /// Seconds per byte of A every rank writes once whatever σ is (the local copy
    /// rate measured by calibration), added to every prediction.
    pub(crate) copy_per_byte: f64,
    /// Seconds of one engine round of a tiny matrix (check words, one message per
    /// peer), added to every prediction.
    pub(crate) round_seconds: f64,
    pub(crate) runs: Vec<Run>,
    /// Spearman's rank correlation of predicted and measured over the runs.
    pub(crate) spearman: Option<f64>,
    /// The same with the fastest execution of each run.
    pub(crate) spearman_fastest: Option<f64>,
    /// Median of |error| over the runs.
    pub(crate) median_abs_error: f64,
    pub(crate) duels: Vec<SigmaDuel>,
}

fn bc(n: usize, b: usize, pr: usize, pc: usize, order: Order, shift: usize) -> Result<Layout> {
    let mut s = BlockCyclicSpec::new(n, n, b, b, pr, pc);
    s.grid_order = order;
    s.rsrc = shift % pr;
    s.csrc = shift % pc;
    Ok(BlockCyclic::new(s)?.into())
}

fn cases(p: usize, n: usize) -> Result<Vec<Case>> {
    let pr = (1..=p)
        .rev()
        .find(|d| p % d == 0 && d * d <= p)
        .unwrap_or(1);
    let pc = p / pr;
    use Order::{ColMajor, RowMajor};
    let slab = n.div_ceil(p);
    let mut rows = BlockCyclicSpec::new(n, n, slab, n, p, 1);
    rows.grid_order = RowMajor;
    let mut cols = BlockCyclicSpec::new(n, n, n, slab, 1, p);
    cols.grid_order = RowMajor;
    Ok(vec![
        Case {
            name: format!("bc32 {pr}x{pc} row -> bc128 col"),
            source: bc(n, 32, pr, pc, RowMajor, 0)?,
            target: bc(n, 128, pr, pc, ColMajor, 0)?,
            op: Op::Identity,
        },
        Case {
            name: format!("bc64 {pr}x{pc} -> bc100 {pc}x{pr}"),
            source: bc(n, 64, pr, pc, RowMajor, 0)?,
            target: bc(n, 100, pc, pr, RowMajor, 0)?,
            op: Op::Identity,
        },
        Case {
            name: format!("bc64 {pr}x{pc} -> shifted by one"),
            source: bc(n, 64, pr, pc, RowMajor, 0)?,
            target: bc(n, 64, pr, pc, RowMajor, 1)?,
            op: Op::Identity,
        },
        Case {
            name: "row slabs -> column slabs".into(),
            source: BlockCyclic::new(rows)?.into(),
            target: BlockCyclic::new(cols)?.into(),
            op: Op::Identity,
        },
        Case {
            name: format!("bc32 {pr}x{pc} -> bc64 {pr}x{pc}, transposed"),
            source: bc(n, 32, pr, pc, RowMajor, 0)?,
            target: bc(n, 64, pr, pc, ColMajor, 0)?,
            op: Op::Transpose,
        },
        Case {
            name: format!("bc128 {pr}x{pc} -> shifted, transposed"),
            source: bc(n, 128, pr, pc, RowMajor, 0)?,
            target: bc(n, 128, pr, pc, RowMajor, 1)?,
            op: Op::Transpose,
        },
    ])
}

/// The busiest rank's cost: max over ranks of the larger of the summed costs of the
/// packages it sends and of those it receives (σ applied to the targets).
fn bottleneck(model: &dyn CostModel, packages: &Packages, sigma: &Perm) -> f64 {
    let p = packages.ranks();
    let (mut out, mut inc) = (vec![0.0; p], vec![0.0; p]);
    for (s, t, pkg) in packages.iter() {
        let to = sigma.apply(t);
        let c = model.cost(s, to, pkg);
        out[s] += c;
        inc[to] += c;
    }
    out.iter()
        .zip(&inc)
        .map(|(a, b)| a.max(*b))
        .fold(0.0, f64::max)
}

/// Times `tr` on `t` (collective): the median and the minimum over [`REPS`]
/// executions of the slowest rank's wall time, and the σ the plan used.
fn time_run(
    w: &SimpleCommunicator,
    t: &mut MpiTransport,
    tr: Transform,
) -> Result<((f64, f64), Perm)> {
    let me = w.rank() as usize;
    let mut plan = ReshufflePlan::new(t, vec![tr])?;
    let (lb, la) = plan.local_lens(0);
    let b: Vec<f64> = (0..lb).map(|k| (k + me) as f64).collect();
    let mut a = vec![0.0f64; la];
    let mut times = Vec::new();
    for i in 0..=REPS {
        w.barrier();
        let t0 = Instant::now();
        plan.execute(t, &mut [Job::copy(&b, &mut a)])?;
        let mine = t0.elapsed().as_secs_f64();
        let mut slowest = 0.0;
        w.all_reduce_into(&mine, &mut slowest, SystemOperation::max());
        if i > 0 {
            times.push(slowest);
        }
    }
    let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(((median(&times), fastest), plan.sigma(0).clone()))
}

/// Runs the validation set (collective; the result on every rank).
///
/// `model` is the calibrated model (built from the written config by the same loader
/// `copr plan --cost` uses); `copy_per_byte` the local copy rate of f64.
pub(crate) fn validate(
    w: &SimpleCommunicator,
    t: &mut MpiTransport,
    model: &dyn CostModel,
    copy_per_byte: f64,
    elements_per_rank: usize,
) -> Result<Validation> {
    let p = w.size() as usize;
    let n = (((elements_per_rank * p) as f64).sqrt() as usize).max(p);
    let elem = std::mem::size_of::<f64>();
    // the round's fixed cost: a reshuffle of a tiny matrix (the collective check words,
    // one message per peer)
    let tiny = bc(2 * p, 1, p, 1, Order::RowMajor, 0)?;
    let tiny_t = bc(2 * p, 1, p, 1, Order::RowMajor, 1)?;
    let ((round, _), _) = time_run(
        w,
        t,
        Transform::new(tiny, tiny_t, Op::Identity).with_relabeling(Relabeling::Off),
    )?;
    let mut runs = Vec::new();
    let mut duels = Vec::new();
    for c in cases(p, n)? {
        let input = PackageInput {
            source: &c.source,
            target: &c.target,
            transform: TransformKind {
                op: c.op,
                scale: false,
            },
            element_size: elem,
        };
        let packages = Packages::compute(&input)?;
        let cost_sigma = copr::gain::relabel(model, &packages)?;
        let total = (n * n) as f64;
        let mut seen: Vec<(Perm, f64)> = Vec::new();
        let mut vol_time = None;
        for which in [Sigma::None, Sigma::Volume, Sigma::Cost] {
            let relabeling = match which {
                Sigma::None => Relabeling::Off,
                Sigma::Volume => Relabeling::Optimal,
                Sigma::Cost => Relabeling::Given(cost_sigma.clone()),
            };
            if which == Sigma::Cost && seen.iter().any(|(s, _)| *s == cost_sigma) {
                continue;
            }
            let tr = Transform::new(c.source.clone(), c.target.clone(), c.op)
                .with_relabeling(relabeling);
            let ((measured, fastest), sigma) = time_run(w, t, tr)?;
            if which == Sigma::Volume {
                vol_time = Some(measured);
                if seen.iter().any(|(s, _)| *s == sigma) {
                    continue;
                }
            }
            // the floor: the largest local share of A, written once at the copy rate
            let largest = (0..p)
                .map(|r| c.target.local_len(sigma.apply_inv(r)))
                .max()
                .unwrap_or(0);
            let predicted = bottleneck(model, &packages, &sigma)
                + round
                + largest as f64 * elem as f64 * copy_per_byte;
            let local: u64 = packages
                .iter()
                .filter(|&(s, tt, _)| sigma.apply(tt) == s)
                .map(|(s, tt, _)| packages.volumes().get(s, tt))
                .sum();
            if which == Sigma::Cost {
                if let Some(v) = vol_time {
                    duels.push(SigmaDuel {
                        case: c.name.clone(),
                        cost_sigma_seconds: measured,
                        volume_sigma_seconds: v,
                        faster: if measured < v {
                            Sigma::Cost
                        } else {
                            Sigma::Volume
                        },
                    });
                }
            }
            seen.push((sigma, measured));
            runs.push(Run {
                case: c.name.clone(),
                op: match c.op {
                    Op::Identity => "copy",
                    Op::Transpose => "transpose",
                    Op::ConjTranspose => "conj-transpose",
                },
                sigma: which,
                predicted,
                measured,
                fastest,
                error: (predicted - measured) / measured,
                local_fraction: local as f64 / total,
            });
        }
    }
    let (pr, me): (Vec<f64>, Vec<f64>) = runs.iter().map(|r| (r.predicted, r.measured)).unzip();
    let fast: Vec<f64> = runs.iter().map(|r| r.fastest).collect();
    let errs: Vec<f64> = runs.iter().map(|r| r.error.abs()).collect();
    Ok(Validation {
        ranks: p,
        matrix: n,
        element: "f64",
        copy_per_byte,
        round_seconds: round,
        spearman: spearman(&pr, &me),
        spearman_fastest: spearman(&pr, &fast),
        median_abs_error: median(&errs),
        runs,
        duels,
    })
}

/// Prints the validation table.
pub(crate) fn print(v: &Validation) {
    println!();
    println!(
        "validation: {} real reshuffles of a {n}x{n} {} matrix on {} ranks (median of {REPS} runs, slowest rank)",
        v.runs.len(),
        v.element,
        v.ranks,
        n = v.matrix
    );
    println!(
        "predicted = busiest rank's packages under the model + copy floor ({:.2} GB/s) + round ({:.3} ms)",
        1e-9 / v.copy_per_byte.max(f64::MIN_POSITIVE),
        1e3 * v.round_seconds
    );
    println!(
        "{:<36} {:<9} {:<6} {:>6} {:>11} {:>11} {:>8}",
        "case", "op", "sigma", "local", "predicted", "measured", "error"
    );
    for r in &v.runs {
        println!(
            "{:<36} {:<9} {:<6} {:>5.0}% {:>8.3} ms {:>8.3} ms {:>+7.0}%",
            r.case,
            r.op,
            r.sigma.name(),
            100.0 * r.local_fraction,
            1e3 * r.predicted,
            1e3 * r.measured,
            100.0 * r.error
        );
    }
    match v.spearman {
        Some(s) => println!(
            "rank correlation (Spearman) over {} runs: {s:.3}",
            v.runs.len()
        ),
        None => println!("rank correlation (Spearman): undefined (constant predictions or times)"),
    }
    if let Some(s) = v.spearman_fastest {
        println!("  with each run's fastest execution instead of its median: {s:.3}");
    }
    println!("median |error|: {:.0} %", 100.0 * v.median_abs_error);
    if v.duels.is_empty() {
        println!("cost-optimal and volume-optimal sigma agree on every case");
    }
    for d in &v.duels {
        println!(
            "cost sigma vs volume sigma on {}: {:.3} ms vs {:.3} ms, {} sigma faster",
            d.case,
            1e3 * d.cost_sigma_seconds,
            1e3 * d.volume_sigma_seconds,
            d.faster.name()
        );
    }
}
