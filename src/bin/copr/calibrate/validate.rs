//! `copr calibrate --validate`: real reshuffles with the engine, timed, against what
//! the calibrated cost model predicts for them.
//!
//! The set is built so that its cases differ by margins a model can be judged on:
//! three sizes a factor of 4 apart, all-remote against all-local (the same layout
//! pair without and with relabeling), moves inside a node against moves across
//! nodes, copy against transpose, and one layout pair where the volume-optimal and
//! the cost-optimal σ differ by construction. Every case is executed once per round,
//! the rounds alternate the cases (each round starts one case later), and a case's
//! time is the median over rounds of the slowest rank.

use std::sync::Arc;
use std::time::Instant;

use copr::engine::{Job, Relabeling, ReshufflePlan, Transform};
use copr::gain::{PackageInput, Packages, TransformKind};
use copr::lap::Perm;
use copr::layout::{BlockCyclic, BlockCyclicSpec, Grid, Layout, Op, Order};
use copr::transport::MpiTransport;
use copr::Result;
use copr_cost_models::CostModel;
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use serde::Serialize;

use super::measure::proceed;
use super::stats::{median, spearman};

/// Elements per rank of the three sizes: 256 KiB, 1 MiB and 4 MiB of f64.
const SIZES: [usize; 3] = [1 << 15, 1 << 17, 1 << 19];
/// Most timed rounds.
const MAX_ROUNDS: usize = 11;
const ELEM: usize = std::mem::size_of::<f64>();

/// The layout pairs of the set, each built at every size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Row slabs, each to the next rank of its node.
    SwapInside,
    /// Row slabs, each to the same-position rank of the next node.
    SwapAcross,
    /// Block-cyclic 32×32 row-major grid → 128×128 column-major grid.
    BlockCyclic,
    /// Block-cyclic 64×64 → the grid shifted by one process, transposed.
    ShiftedTransposed,
    /// Row slabs split 40 / 30 / 30 %: 40 % stays, 30 % goes to the next node's rank
    /// and 30 % to that rank's node neighbour. The volume-optimal σ keeps the 40 %
    /// (and sends 60 % across nodes); the σ that moves each target to the next node
    /// keeps 30 % and sends 40 % across nodes.
    Split,
}

impl Shape {
    const ALL: [Shape; 5] = [
        Shape::SwapInside,
        Shape::SwapAcross,
        Shape::BlockCyclic,
        Shape::ShiftedTransposed,
        Shape::Split,
    ];

    fn name(self) -> &'static str {
        match self {
            Shape::SwapInside => "slabs, swap inside nodes",
            Shape::SwapAcross => "slabs, swap across nodes",
            Shape::BlockCyclic => "bc32 row -> bc128 col",
            Shape::ShiftedTransposed => "bc64 -> shifted, transposed",
            Shape::Split => "slabs split 40/30/30",
        }
    }

    fn op(self) -> Op {
        match self {
            Shape::ShiftedTransposed => Op::Transpose,
            _ => Op::Identity,
        }
    }
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

/// One run: a case executed with one σ (which may be several of [`Sigma`] at once
/// when they agree).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Run {
    pub(crate) case: &'static str,
    /// Elements per rank (n² / p).
    pub(crate) elements_per_rank: usize,
    pub(crate) matrix: usize,
    pub(crate) op: &'static str,
    pub(crate) sigma: Vec<Sigma>,
    /// Seconds the model predicts: the busiest rank's packages (max over ranks of
    /// the larger of its outgoing and incoming cost) plus the copy floor and one
    /// engine round.
    pub(crate) predicted: f64,
    /// Median over rounds of the slowest rank's wall time, seconds.
    pub(crate) measured: f64,
    /// The fastest round's slowest-rank time, seconds.
    pub(crate) fastest: f64,
    /// (predicted − measured) / measured.
    pub(crate) error: f64,
    /// Elements that stay on their rank.
    pub(crate) local_fraction: f64,
    /// Elements crossing nodes.
    pub(crate) cross_node_fraction: f64,
}

/// Where the cost-optimal and the volume-optimal σ differ: which was faster.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SigmaDuel {
    pub(crate) case: &'static str,
    pub(crate) elements_per_rank: usize,
    pub(crate) cost_sigma_predicted: f64,
    pub(crate) volume_sigma_predicted: f64,
    pub(crate) cost_sigma_seconds: f64,
    pub(crate) volume_sigma_seconds: f64,
    pub(crate) faster: Sigma,
}

/// The validation's result.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Validation {
    pub(crate) ranks: usize,
    pub(crate) element: &'static str,
    /// Timed rounds (every run once per round).
    pub(crate) rounds: usize,
    /// Seconds per byte of A every rank writes once whatever σ is (the local copy
    /// rate measured by calibration), added to every prediction.
    pub(crate) copy_per_byte: f64,
    /// Median over rounds of the slowest rank's time of an engine call on a tiny
    /// matrix (the check words, one message per peer): what the engine pays per call
    /// beyond the packages, added to every prediction.
    pub(crate) round_seconds: f64,
    pub(crate) runs: Vec<Run>,
    /// Spearman's rank correlation of predicted and measured over the runs.
    pub(crate) spearman: Option<f64>,
    /// The same with the fastest round of each run.
    pub(crate) spearman_fastest: Option<f64>,
    /// Spearman's ρ among the runs of one size (elements per rank, ρ).
    pub(crate) spearman_by_size: Vec<(usize, Option<f64>)>,
    /// Median of |error| over the runs.
    pub(crate) median_abs_error: f64,
    /// Runs whose prediction is below the measured time.
    pub(crate) under_predicted: usize,
    pub(crate) duels: Vec<SigmaDuel>,
    /// What the budget left out (cases not built, rounds not run).
    pub(crate) skipped: Vec<String>,
}

/// Where ranks are: the node of every rank.
struct Nodes<'a>(&'a [usize]);

impl Nodes<'_> {
    fn members(&self) -> Vec<Vec<usize>> {
        let k = self.0.iter().max().map_or(0, |m| m + 1);
        let mut out = vec![Vec::new(); k];
        for (r, &n) in self.0.iter().enumerate() {
            out[n].push(r);
        }
        out
    }

    /// Each rank → the next rank of its node (`None` if every node has one rank).
    fn inside(&self) -> Option<Perm> {
        let mut fwd: Vec<usize> = (0..self.0.len()).collect();
        for m in self.members() {
            for (i, &r) in m.iter().enumerate() {
                fwd[r] = m[(i + 1) % m.len()];
            }
        }
        let moved = fwd.iter().enumerate().any(|(r, &s)| r != s);
        moved.then(|| Perm::from_forward(fwd).ok()).flatten()
    }

    /// The i-th rank of node x → the i-th rank of node x + 1 (`None` with one node or
    /// nodes of different sizes).
    fn across(&self) -> Option<Perm> {
        let m = self.members();
        if m.len() < 2 || m.iter().any(|v| v.len() != m[0].len()) {
            return None;
        }
        let mut fwd = vec![0; self.0.len()];
        for (x, v) in m.iter().enumerate() {
            for (i, &r) in v.iter().enumerate() {
                fwd[r] = m[(x + 1) % m.len()][i];
            }
        }
        Perm::from_forward(fwd).ok()
    }
}

fn bc(n: usize, b: usize, pr: usize, pc: usize, order: Order, shift: usize) -> Result<Layout> {
    let mut s = BlockCyclicSpec::new(n, n, b, b, pr, pc);
    s.grid_order = order;
    s.rsrc = shift % pr;
    s.csrc = shift % pc;
    Ok(BlockCyclic::new(s)?.into())
}

/// Row slabs of `n / p` rows cut into pieces at `cuts` (fractions of a slab), piece
/// `k` of slab `s` owned by `owner(k, s)`.
fn pieces(
    n: usize,
    p: usize,
    cuts: &[f64],
    owner: impl Fn(usize, usize) -> usize,
) -> Result<Layout> {
    let h = n / p;
    let mut splits = vec![0];
    let mut owners = Vec::new();
    for s in 0..p {
        for (k, &c) in cuts.iter().enumerate() {
            splits.push(s * h + (c * h as f64).round() as usize);
            owners.push(owner(k, s));
        }
    }
    Ok(Grid::from_parts(splits, vec![0, n], owners, Some(p), Vec::new())?.into())
}

/// The layouts of `shape` for an n × n matrix (`n` a multiple of 10·p), or `None`
/// if the machine has no such case (one node, nodes of one rank, unequal nodes).
fn layouts(shape: Shape, n: usize, nodes: &Nodes<'_>) -> Result<Option<(Layout, Layout)>> {
    let p = nodes.0.len();
    let pr = (1..=p)
        .rev()
        .find(|d| p % d == 0 && d * d <= p)
        .unwrap_or(1);
    let pc = p / pr;
    let slabs = || pieces(n, p, &[1.0], |_, s| s);
    Ok(match shape {
        Shape::SwapInside => match nodes.inside() {
            Some(x) => Some((slabs()?, slabs()?.relabeled(&x)?)),
            None => None,
        },
        Shape::SwapAcross => match nodes.across() {
            Some(x) => Some((slabs()?, slabs()?.relabeled(&x)?)),
            None => None,
        },
        Shape::BlockCyclic => Some((
            bc(n, 32, pr, pc, Order::RowMajor, 0)?,
            bc(n, 128, pr, pc, Order::ColMajor, 0)?,
        )),
        Shape::ShiftedTransposed => Some((
            bc(n, 64, pr, pc, Order::RowMajor, 0)?,
            bc(n, 64, pr, pc, Order::RowMajor, 1)?,
        )),
        Shape::Split => match (nodes.across(), nodes.inside()) {
            (Some(x), Some(i)) => {
                let cuts = [0.4, 0.7, 1.0];
                let source = pieces(n, p, &cuts, |_, s| s)?;
                // piece 0 stays; piece 1 to the slot whose next-node rank is s;
                // piece 2 to the slot whose next-node rank's neighbour is s
                let target = pieces(n, p, &cuts, |k, s| match k {
                    0 => s,
                    1 => x.apply_inv(s),
                    _ => x.apply_inv(i.apply_inv(s)),
                })?;
                Some((source, target))
            }
            _ => None,
        },
    })
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

/// A run ready to execute: its plan and buffers, and the slowest-rank time of each
/// round.
struct Prepared {
    case: &'static str,
    shape: Option<Shape>,
    elements_per_rank: usize,
    matrix: usize,
    sigma: Perm,
    labels: Vec<Sigma>,
    packages: Option<Arc<Packages>>,
    largest_target: usize,
    plan: ReshufflePlan,
    b: Vec<f64>,
    a: Vec<f64>,
    times: Vec<f64>,
}

impl Prepared {
    /// Builds the plan of `tr` (collective; `target` is its target layout) and this
    /// rank's buffers; `shape` `None` is the engine-round case.
    fn new(
        w: &SimpleCommunicator,
        t: &mut MpiTransport,
        tr: Transform,
        target: &Layout,
        shape: Option<Shape>,
        packages: Option<Arc<Packages>>,
        label: Sigma,
    ) -> Result<Self> {
        let me = w.rank() as usize;
        let p = w.size() as usize;
        let plan = ReshufflePlan::new(t, vec![tr])?;
        let (lb, la) = plan.local_lens(0);
        let sigma = plan.sigma(0).clone();
        let largest_target = (0..sigma.len())
            .map(|r| target.local_len(sigma.apply_inv(r)))
            .max()
            .unwrap_or(0);
        Ok(Self {
            case: shape.map_or("engine round (tiny matrix)", Shape::name),
            shape,
            elements_per_rank: target.rows() * target.cols() / p,
            matrix: target.rows(),
            sigma,
            labels: vec![label],
            packages,
            largest_target,
            plan,
            b: (0..lb).map(|k| (k + me) as f64).collect(),
            a: vec![0.0; la],
            times: Vec::new(),
        })
    }

    /// One execution (collective): the slowest rank's seconds.
    fn execute(&mut self, w: &SimpleCommunicator, t: &mut MpiTransport) -> Result<f64> {
        w.barrier();
        let t0 = Instant::now();
        self.plan
            .execute(t, &mut [Job::copy(&self.b, &mut self.a)])?;
        let mine = t0.elapsed().as_secs_f64();
        let mut slowest = 0.0;
        w.all_reduce_into(&mine, &mut slowest, SystemOperation::max());
        Ok(slowest)
    }
}

/// Builds the runs of every shape and size while rank 0 sees time before `until`
/// (collective; the same on every rank).
fn prepare(
    w: &SimpleCommunicator,
    t: &mut MpiTransport,
    model: &dyn CostModel,
    node: &[usize],
    start: Instant,
    until: f64,
    skipped: &mut Vec<String>,
) -> Result<Vec<Prepared>> {
    let p = w.size() as usize;
    let nodes = Nodes(node);
    let mut out = Vec::new();
    // the engine's cost per call: a tiny matrix, one element to the next rank
    let tiny = bc(2 * p, 1, p, 1, Order::RowMajor, 0)?;
    let tiny_t = bc(2 * p, 1, p, 1, Order::RowMajor, 1)?;
    let tr = Transform::new(tiny, tiny_t.clone(), Op::Identity).with_relabeling(Relabeling::Off);
    out.push(Prepared::new(w, t, tr, &tiny_t, None, None, Sigma::None)?);
    for &size in &SIZES {
        let unit = 10 * p;
        let n = ((((size * p) as f64).sqrt() as usize) / unit).max(1) * unit;
        for shape in Shape::ALL {
            if !proceed(w, start, until, false) {
                skipped.push(format!(
                    "{} at {} elements per rank: out of budget",
                    shape.name(),
                    n * n / p
                ));
                continue;
            }
            let Some((source, target)) = layouts(shape, n, &nodes)? else {
                continue;
            };
            let input = PackageInput {
                source: &source,
                target: &target,
                transform: TransformKind {
                    op: shape.op(),
                    scale: false,
                },
                element_size: ELEM,
            };
            let packages = Arc::new(Packages::compute(&input)?);
            let cost_sigma = copr::gain::relabel(model, &packages)?;
            let mut mine: Vec<Prepared> = Vec::new();
            for which in [Sigma::None, Sigma::Volume, Sigma::Cost] {
                let relabeling = match which {
                    Sigma::None => Relabeling::Off,
                    Sigma::Volume => Relabeling::Optimal,
                    Sigma::Cost => Relabeling::Given(cost_sigma.clone()),
                };
                if which == Sigma::Cost {
                    if let Some(r) = mine.iter_mut().find(|r| r.sigma == cost_sigma) {
                        r.labels.push(which);
                        continue;
                    }
                }
                let tr = Transform::new(source.clone(), target.clone(), shape.op())
                    .with_relabeling(relabeling);
                let run = Prepared::new(
                    w,
                    t,
                    tr,
                    &target,
                    Some(shape),
                    Some(packages.clone()),
                    which,
                )?;
                if let Some(r) = mine.iter_mut().find(|r| r.sigma == run.sigma) {
                    r.labels.push(which);
                    continue;
                }
                mine.push(run);
            }
            out.extend(mine);
        }
    }
    Ok(out)
}

/// Runs the validation set (collective; the result on every rank).
///
/// `model` is the calibrated model (built from the written config by the same loader
/// `copr plan --cost` uses); `copy_per_byte` the local copy rate of f64; `node` the
/// node of every rank. Cases are built while rank 0 sees time before half of what is
/// left until `until` (seconds after `start`), rounds run until `until` (at least
/// one round of what was built).
pub(crate) fn validate(
    w: &SimpleCommunicator,
    t: &mut MpiTransport,
    model: &dyn CostModel,
    copy_per_byte: f64,
    node: &[usize],
    start: Instant,
    until: f64,
) -> Result<Validation> {
    let p = w.size() as usize;
    let mut skipped = Vec::new();
    // building the cases may use half of what is left; warm-up and rounds the rest
    let now = start.elapsed().as_secs_f64();
    let build_until = now + 0.5 * (until - now).max(0.0);
    let mut runs = prepare(w, t, model, node, start, build_until, &mut skipped)?;
    // warm-up: every run once, untimed
    for r in runs.iter_mut() {
        r.execute(w, t)?;
    }
    let mut rounds = 0;
    while rounds < MAX_ROUNDS && proceed(w, start, until, rounds == 0) {
        let k = runs.len();
        for i in 0..k {
            let r = &mut runs[(i + rounds) % k];
            let s = r.execute(w, t)?;
            r.times.push(s);
        }
        rounds += 1;
    }
    if rounds < MAX_ROUNDS {
        skipped.push(format!(
            "rounds {}..{MAX_ROUNDS}: out of budget",
            rounds + 1
        ));
    }
    let round = median(&runs[0].times);
    let mut out = Vec::new();
    for r in runs.iter().skip(1) {
        let packages = r.packages.as_ref().expect("a case's runs have packages");
        let predicted = bottleneck(model, packages, &r.sigma)
            + round
            + r.largest_target as f64 * ELEM as f64 * copy_per_byte;
        let (mut local, mut cross) = (0u64, 0u64);
        for (s, tt, _) in packages.iter() {
            let v = packages.volumes().get(s, tt);
            let to = r.sigma.apply(tt);
            if to == s {
                local += v;
            } else if node[to] != node[s] {
                cross += v;
            }
        }
        let total = (r.matrix * r.matrix) as f64;
        let measured = median(&r.times);
        out.push(Run {
            case: r.case,
            elements_per_rank: r.elements_per_rank,
            matrix: r.matrix,
            op: match r.shape.map_or(Op::Identity, Shape::op) {
                Op::Identity => "copy",
                Op::Transpose => "transpose",
                Op::ConjTranspose => "conj-transpose",
            },
            sigma: r.labels.clone(),
            predicted,
            measured,
            fastest: r.times.iter().copied().fold(f64::INFINITY, f64::min),
            error: (predicted - measured) / measured,
            local_fraction: local as f64 / total,
            cross_node_fraction: cross as f64 / total,
        });
    }
    let duels = duels(&out);
    let (pr, me): (Vec<f64>, Vec<f64>) = out.iter().map(|r| (r.predicted, r.measured)).unzip();
    let fast: Vec<f64> = out.iter().map(|r| r.fastest).collect();
    let errs: Vec<f64> = out.iter().map(|r| r.error.abs()).collect();
    let mut sizes: Vec<usize> = out.iter().map(|r| r.elements_per_rank).collect();
    sizes.dedup();
    let spearman_by_size = sizes
        .iter()
        .map(|&s| {
            let (a, b): (Vec<f64>, Vec<f64>) = out
                .iter()
                .filter(|r| r.elements_per_rank == s)
                .map(|r| (r.predicted, r.measured))
                .unzip();
            (s, spearman(&a, &b))
        })
        .collect();
    Ok(Validation {
        ranks: p,
        element: "f64",
        rounds,
        copy_per_byte,
        round_seconds: round,
        spearman: spearman(&pr, &me),
        spearman_fastest: spearman(&pr, &fast),
        spearman_by_size,
        median_abs_error: median(&errs),
        under_predicted: out.iter().filter(|r| r.error < 0.0).count(),
        runs: out,
        duels,
        skipped,
    })
}

/// The cases whose cost-optimal σ is not their volume-optimal σ: both runs.
fn duels(runs: &[Run]) -> Vec<SigmaDuel> {
    let mut out = Vec::new();
    for c in runs.iter().filter(|r| r.sigma.contains(&Sigma::Cost)) {
        let same = |r: &&Run| r.case == c.case && r.elements_per_rank == c.elements_per_rank;
        let Some(v) = runs
            .iter()
            .filter(same)
            .find(|r| r.sigma.contains(&Sigma::Volume))
        else {
            continue;
        };
        if v.sigma.contains(&Sigma::Cost) {
            continue;
        }
        out.push(SigmaDuel {
            case: c.case,
            elements_per_rank: c.elements_per_rank,
            cost_sigma_predicted: c.predicted,
            volume_sigma_predicted: v.predicted,
            cost_sigma_seconds: c.measured,
            volume_sigma_seconds: v.measured,
            faster: if c.measured < v.measured {
                Sigma::Cost
            } else {
                Sigma::Volume
            },
        });
    }
    out
}

fn ms(s: f64) -> String {
    format!("{:.3} ms", 1e3 * s)
}

/// Prints the validation table.
pub(crate) fn print(v: &Validation) {
    println!();
    println!(
        "validation: {} real reshuffles of {} on {} ranks, {} rounds (each round runs every case once, starting one case later); time = median over rounds of the slowest rank",
        v.runs.len(),
        v.element,
        v.ranks,
        v.rounds,
    );
    println!(
        "predicted = busiest rank's packages under the model + copy floor ({:.2} GB/s) + engine round ({}, measured in the same rounds on a tiny matrix)",
        1e-9 / v.copy_per_byte.max(f64::MIN_POSITIVE),
        ms(v.round_seconds)
    );
    println!(
        "{:<28} {:>8} {:<9} {:<16} {:>5} {:>5} {:>11} {:>11} {:>7}",
        "case", "KiB/rank", "op", "sigma", "local", "cross", "predicted", "measured", "error"
    );
    for r in &v.runs {
        let sigma: Vec<&str> = r.sigma.iter().map(|s| s.name()).collect();
        println!(
            "{:<28} {:>8} {:<9} {:<16} {:>4.0}% {:>4.0}% {:>11} {:>11} {:>+6.0}%",
            r.case,
            r.elements_per_rank * ELEM / 1024,
            r.op,
            sigma.join("="),
            100.0 * r.local_fraction,
            100.0 * r.cross_node_fraction,
            ms(r.predicted),
            ms(r.measured),
            100.0 * r.error
        );
    }
    let rho = |x: Option<f64>| x.map_or("undefined".to_string(), |s| format!("{s:.3}"));
    println!(
        "rank correlation (Spearman) over {} runs: {}; with each run's fastest round: {}",
        v.runs.len(),
        rho(v.spearman),
        rho(v.spearman_fastest)
    );
    let by: Vec<String> = v
        .spearman_by_size
        .iter()
        .map(|(s, r)| format!("{} KiB {}", s * ELEM / 1024, rho(*r)))
        .collect();
    println!("  among runs of one size: {}", by.join(", "));
    println!(
        "median |error|: {:.0} %; under-predicted: {} of {}",
        100.0 * v.median_abs_error,
        v.under_predicted,
        v.runs.len()
    );
    if v.duels.is_empty() {
        println!("cost-optimal and volume-optimal sigma agree on every case");
    }
    for d in &v.duels {
        println!(
            "cost sigma vs volume sigma on {} ({} KiB/rank): predicted {} vs {}, measured {} vs {}: {} sigma faster",
            d.case,
            d.elements_per_rank * ELEM / 1024,
            ms(d.cost_sigma_predicted),
            ms(d.volume_sigma_predicted),
            ms(d.cost_sigma_seconds),
            ms(d.volume_sigma_seconds),
            d.faster.name()
        );
    }
    for s in &v.skipped {
        println!("skipped: {s}");
    }
}
