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

use std::time::Instant;

use copr::engine::Job;
use copr::layout::Op;
use copr::transport::MpiTransport;
use copr::Result;
use copr_cost_models::CostModel;
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use serde::Serialize;

use super::cases::{self, Planned, Shape, Sigma, Wall, ELEM};
use super::measure::agreed;
use super::stats::{median, spearman};

/// Most timed rounds.
const MAX_ROUNDS: usize = 11;

/// One run: a case executed with one σ (which may be several of [`Sigma`] at once
/// when they agree).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Run {
    pub(crate) case: &'static str,
    /// Elements per rank (m · n / p).
    pub(crate) elements_per_rank: usize,
    /// The size class it belongs to: the nominal elements per rank
    /// ([`cases::SIZES`]) that `elements_per_rank` approximates.
    pub(crate) size_class: usize,
    /// Rows of the matrix.
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
    /// Seconds rank 0 spent planning each case (name, elements per rank, seconds).
    pub(crate) planning: Vec<(&'static str, usize, f64)>,
    pub(crate) runs: Vec<Run>,
    /// Spearman's rank correlation of predicted and measured over the runs.
    pub(crate) spearman: Option<f64>,
    /// The same with the fastest round of each run.
    pub(crate) spearman_fastest: Option<f64>,
    /// Spearman's ρ among the runs of one size class (its nominal elements per rank,
    /// ρ).
    pub(crate) spearman_by_size: Vec<(usize, Option<f64>)>,
    /// Median of |error| over the runs.
    pub(crate) median_abs_error: f64,
    /// Runs whose prediction is below the measured time.
    pub(crate) under_predicted: usize,
    pub(crate) duels: Vec<SigmaDuel>,
    /// What the budget left out (cases not built, rounds not run).
    pub(crate) skipped: Vec<String>,
}

/// A planned run and the slowest-rank time of each of its rounds.
struct Timed {
    run: Planned,
    times: Vec<f64>,
}

/// One execution of `run` (collective) from `b` into `a` (shared by all runs, as
/// long as the longest): the slowest rank's seconds.
fn execute(
    w: &SimpleCommunicator,
    t: &mut MpiTransport,
    run: &mut Planned,
    b: &[f64],
    a: &mut [f64],
) -> Result<f64> {
    let (lb, la) = run.plan.local_lens(0);
    w.barrier();
    let t0 = Instant::now();
    run.plan
        .execute(t, &mut [Job::copy(&b[..lb], &mut a[..la])])?;
    let mine = t0.elapsed().as_secs_f64();
    let mut slowest = 0.0;
    w.all_reduce_into(&mine, &mut slowest, SystemOperation::max());
    Ok(slowest)
}

/// Runs the validation set (collective; the result on every rank).
///
/// `model` is the calibrated model (built from the written config by the same loader
/// `copr plan --cost` uses); `copy_per_byte` the local copy rate of f64; `node` the
/// node of every rank. Cases are planned until half of what is left until `until`
/// (seconds after `start`; [`cases::plan_cases`]: a case starts only if its estimated
/// planning time fits), then every run is warmed up once while rank 0's clock is in
/// the first half of what is left (runs not warmed up are dropped), and rounds run
/// while the last round's time fits before `until` (at least one round of what was
/// warmed up, which takes about as long as the warm-up). A run moves at most 4 MiB
/// per rank, so neither a warm-up nor a round grows with the number of ranks beyond
/// the engine's gather of check words.
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
    let me = w.rank() as usize;
    // planning may use half of what is left; warm-up and rounds the rest
    let now = start.elapsed().as_secs_f64();
    let plan_until = now + 0.5 * (until - now).max(0.0);
    let plans = cases::plan_cases(t, model, node, &mut Wall(start), plan_until, &mut |go| {
        agreed(w, go)
    })?;
    let mut skipped = plans.skipped;
    // one source and one target buffer for all runs, as long as the longest (the
    // runs execute one after the other)
    let (lb, la) = plans.runs.iter().fold((0, 0), |m, r| {
        let (b, a) = r.plan.local_lens(0);
        (m.0.max(b), m.1.max(a))
    });
    let b: Vec<f64> = (0..lb).map(|k| (k + me) as f64).collect();
    let mut a = vec![0.0; la];
    // warm-up: every run once, untimed, while rank 0's clock is in the first half
    // of what is left (the first timed round takes about as long as the warm-up, and
    // must fit in the second half); the engine-round case always. A run moves at
    // most 4 MiB per rank, so the last one started ends soon after the half.
    let warm_start = start.elapsed().as_secs_f64();
    let warm_until = warm_start + 0.5 * (until - warm_start).max(0.0);
    let mut runs: Vec<Timed> = Vec::new();
    let mut round_seconds = 0.0;
    let mut dropped = 0;
    for (i, mut run) in plans.runs.into_iter().enumerate() {
        if i > 0 && !agreed(w, start.elapsed().as_secs_f64() < warm_until) {
            dropped += 1;
            continue;
        }
        let t0 = Instant::now();
        execute(w, t, &mut run, &b, &mut a)?;
        round_seconds += t0.elapsed().as_secs_f64();
        runs.push(Timed {
            run,
            times: Vec::new(),
        });
    }
    if dropped > 0 {
        skipped.push(format!(
            "{dropped} planned runs: no time left to warm them up"
        ));
    }
    // rounds: the next starts only if the last one's time fits before the deadline
    let mut rounds = 0;
    while rounds < MAX_ROUNDS
        && (rounds == 0 || agreed(w, start.elapsed().as_secs_f64() + round_seconds <= until))
    {
        let t0 = Instant::now();
        let k = runs.len();
        for i in 0..k {
            let r = &mut runs[(i + rounds) % k];
            let s = execute(w, t, &mut r.run, &b, &mut a)?;
            r.times.push(s);
        }
        round_seconds = t0.elapsed().as_secs_f64();
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
    for Timed { run: r, times } in runs.iter().skip(1) {
        let predicted =
            r.packages_seconds + round + r.largest_target as f64 * ELEM as f64 * copy_per_byte;
        let measured = median(times);
        out.push(Run {
            case: r.case,
            elements_per_rank: r.elements_per_rank,
            size_class: cases::SIZES[r.size],
            matrix: r.matrix,
            op: match r.shape.map_or(Op::Identity, Shape::op) {
                Op::Identity => "copy",
                Op::Transpose => "transpose",
                Op::ConjTranspose => "conj-transpose",
            },
            sigma: r.labels.clone(),
            predicted,
            measured,
            fastest: times.iter().copied().fold(f64::INFINITY, f64::min),
            error: (predicted - measured) / measured,
            local_fraction: r.local_fraction,
            cross_node_fraction: r.cross_node_fraction,
        });
    }
    let duels = duels(&out);
    let (pr, me): (Vec<f64>, Vec<f64>) = out.iter().map(|r| (r.predicted, r.measured)).unzip();
    let fast: Vec<f64> = out.iter().map(|r| r.fastest).collect();
    let errs: Vec<f64> = out.iter().map(|r| r.error.abs()).collect();
    let mut sizes: Vec<usize> = out.iter().map(|r| r.size_class).collect();
    sizes.dedup();
    let spearman_by_size = sizes
        .iter()
        .map(|&s| {
            let (a, b): (Vec<f64>, Vec<f64>) = out
                .iter()
                .filter(|r| r.size_class == s)
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
        planning: plans.spent,
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
    let slowest = v.planning.iter().map(|x| x.2).fold(0.0, f64::max);
    println!(
        "planned {} cases in {:.2} s (slowest {:.3} s) on rank 0",
        v.planning.len(),
        v.planning.iter().map(|x| x.2).sum::<f64>(),
        slowest
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
