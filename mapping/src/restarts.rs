//! Restarts of the optimiser from other seeds, and the anytime rounds after them, as
//! one sequence of steps that the deadline only cuts short.
//!
//! The optimiser's result depends much on its seed on some graphs (the multilevel
//! mapper's bisections and the refinement order): on the 640-task geometric graph on
//! the dragonfly of `data/`, seeds 1–11 give busiest links from 3050 to 3679 µs. For
//! a graph pattern (no grid, no algorithm's process grid) of at most [`MAX_TASKS`]
//! tasks and [`MAX_ROUND_MESSAGES`] messages on a network graph (fat tree, dragonfly:
//! [`crate::NetKind::Graph`]) the optimiser takes these steps ([`path`]):
//! 1. the **first run**: the optimiser's steps without the anytime phase, with the seed;
//! 2. **restarts** `r = 1, 2, …`: the same with seeds derived from the seed and `r`,
//!    until [`PATIENCE`] restarts in a row keep nothing or [`MAX_RESTARTS`] ran;
//! 3. **anytime rounds** (`anytime.rs`) from the mapping kept, until their patience,
//!    which is nondecreasing in the budget.
//!
//! The mapping kept starts as the first run's and is replaced, after any step, only by
//! one **better by [`Objective::better`]**: under [`Objective::Round`], with `t` the
//! time of one round of every message under [`RoundModel::simgrid_like`]
//! ([`round_time`]: links shared in inverse proportion to each route's latency plus a
//! per-link penalty, messages delayed by their route's latency, which is how SimGrid
//! shares a network and which the busiest link alone does not see), a mapping is
//! better than the kept one when its hop-bytes are at most 5 % above the first run's,
//! its busiest link is no busier, its `t` no longer, and either its `t` is shorter or
//! its hop-bytes are no higher and one of hop-bytes and busiest link is lower. A
//! restart competes with its run's chosen mapping (only when that is no worse than
//! every start); an anytime round with its mapping (kicks and refinement from the
//! mapping kept, `anytime::improve_judged`), measured afresh. The order is transitive
//! (exact comparisons, no tolerance), so the kept mapping after any step is better
//! than or equal to the one after every earlier step.
//!
//! **What a larger budget guarantees.** Nothing in the steps depends on the budget but
//! the anytime rounds' patience, and a larger patience only adds rounds at the end
//! (the runs' nested optimiser runs, for a grid recognised or padded in the graph, get
//! a fixed budget that the deadline cuts short); every step is a function of the seed
//! and of the steps before it. The deadline only
//! cuts the sequence short: a restart or round that reaches it is dropped (its round
//! time included: [`round_time`](crate::round_time) stops at the deadline, so a
//! judge of a few thousand messages, up to seconds on a fat tree, does not run past
//! it), and the result is the mapping kept after the steps completed. So for the same seed, once
//! the first run completes within both budgets, the larger budget's mapping is equal to
//! or better by [`Objective::better`] than the smaller one's — except that wall-clock
//! noise may complete fewer steps in a larger budget than another run did in a smaller
//! one. ([`Objective::Pareto`], no worse on hop-bytes and the busiest link and better
//! on one, is the order [`Objective::of`] gives on other machines, where this path
//! does not apply.)

use std::time::Instant;

use super::anytime::Round;
use super::candidates::Scored;
use super::fluid::{round_time_until, RoundModel};
use super::machine::{MapMachine, NetKind};
use super::metrics::evaluate_known;
use super::pattern::Pattern;
use copr::error::Result;

/// Graph patterns above this many tasks do not restart (the multilevel mapper's time
/// at large sizes is spent once).
pub(crate) const MAX_TASKS: usize = 1024;

/// Patterns of more messages than this are not judged by [`round_time`] (one
/// evaluation costs about 0.1 s at 4500 messages).
pub(crate) const MAX_ROUND_MESSAGES: usize = 20_000;

/// Restarts in a row that keep nothing, after which the restarts stop.
pub(crate) const PATIENCE: usize = 3;

/// Restarts at most (with [`PATIENCE`], a stop rule that does not depend on the
/// budget).
pub(crate) const MAX_RESTARTS: usize = 12;

/// How a mapping is compared with the kept one (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Objective {
    /// The round time under [`RoundModel::simgrid_like`], then hop-bytes and the
    /// busiest link, with the hop-bytes at most `hop_bytes_cap`.
    Round {
        /// The largest hop-bytes accepted (5 % above the first run's).
        hop_bytes_cap: u128,
    },
    /// Pareto improvement on hop-bytes and the busiest link.
    Pareto,
}

/// A mapping with its round time under [`RoundModel::simgrid_like`] (0 when the
/// objective does not use it).
#[derive(Debug, Clone)]
pub(crate) struct Judged {
    /// The mapping.
    pub(crate) s: Scored,
    /// Its round time, seconds.
    pub(crate) time: f64,
}

impl Objective {
    /// The objective of `p` on `m`, the first run's mapping having `first_hop_bytes`.
    pub(crate) fn of(p: &Pattern, m: &MapMachine, first_hop_bytes: u128) -> Self {
        if matches!(m.kind(), NetKind::Graph(..)) && p.edges().len() <= MAX_ROUND_MESSAGES {
            Self::Round {
                hop_bytes_cap: first_hop_bytes + first_hop_bytes / 20,
            }
        } else {
            Self::Pareto
        }
    }

    /// `s` with the round time this objective compares; `None` when `deadline` passes
    /// before that time is known (a judge is part of its step: the deadline cuts it
    /// like the step).
    pub(crate) fn judge(
        &self,
        p: &Pattern,
        m: &MapMachine,
        s: Scored,
        deadline: Instant,
    ) -> Option<Judged> {
        let time = match self {
            Self::Round { .. } => {
                round_time_until(p, m, &s.map, &RoundModel::simgrid_like(), deadline)?
            }
            Self::Pareto => 0.0,
        };
        Some(Judged { s, time })
    }

    /// Whether `a` is better than `b` (module docs): a strict partial order (never
    /// `a` better than `a`; `a` better than `b` better than `c` gives `a` better than
    /// `c`).
    pub(crate) fn better(&self, a: &Judged, b: &Judged) -> bool {
        let (x, y) = (&a.s.metrics, &b.s.metrics);
        let pareto = x.max_link_time <= y.max_link_time
            && x.hop_bytes <= y.hop_bytes
            && (x.hop_bytes < y.hop_bytes || x.max_link_time < y.max_link_time);
        match *self {
            Self::Round { hop_bytes_cap } => {
                x.hop_bytes <= hop_bytes_cap
                    && x.max_link_time <= y.max_link_time
                    && a.time <= b.time
                    && (a.time < b.time || pareto)
            }
            Self::Pareto => pareto,
        }
    }
}

/// One run of the optimiser: its chosen mapping, whether that is no worse than every
/// start on both measures, and the candidates it tried.
pub(crate) struct Outcome {
    /// The chosen mapping.
    pub(crate) best: Scored,
    /// Whether it is no worse than every start on hop-bytes and the busiest link.
    pub(crate) dominates_starts: bool,
    /// Candidates tried.
    pub(crate) tried: usize,
}

/// Whether `p` on `m` restarts: a graph pattern (no grid, no algorithm's process
/// grid) of 2 to [`MAX_TASKS`] tasks on a network graph of several nodes, with at
/// most [`MAX_ROUND_MESSAGES`] messages.
pub(crate) fn applies(p: &Pattern, m: &MapMachine) -> bool {
    p.grid_spec().is_none()
        && p.shape().is_none()
        && (2..=MAX_TASKS).contains(&p.tasks())
        && m.nodes() > 1
        && !p.edges().is_empty()
        && matches!(Objective::of(p, m, 0), Objective::Round { .. })
}

/// The seed of restart `r` (≥ 1) of a run seeded `seed`.
pub(crate) fn restart_seed(seed: u64, r: usize) -> u64 {
    seed ^ (r as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)
}

/// Where [`path`] (or another sequence of steps that the deadline only cuts, such as
/// `program_choice.rs`'s) stops: the deadline, and (to emulate a deadline that falls
/// after a given step) a number of steps; with the mapping kept after each step
/// recorded in `trace` when given.
pub(crate) struct Steps<'a, T = Scored> {
    /// The deadline: a step that reaches it is dropped, and none follows.
    pub(crate) deadline: Instant,
    /// Steps at most (here the first run, each restart and each anytime round is one).
    pub(crate) max_steps: Option<usize>,
    /// The mapping kept after each completed step, in order.
    pub(crate) trace: Option<&'a mut Vec<T>>,
}

impl<T: Clone> Steps<'_, T> {
    /// Whether no step may follow `done` steps.
    pub(crate) fn over(&self, done: usize) -> bool {
        self.max_steps.is_some_and(|n| done >= n) || crate::clock::now() >= self.deadline
    }

    /// Records `kept` as the mapping after one more step.
    pub(crate) fn record(&mut self, kept: &T) {
        if let Some(t) = self.trace.as_deref_mut() {
            t.push(kept.clone());
        }
    }
}

/// The anytime phase as [`path`] calls it: from a mapping, at most the given number of
/// rounds (none: until its patience or the deadline), asking after each completed
/// round whether its mapping replaces the best so far.
pub(crate) type Improve<'a> =
    dyn FnOnce(Scored, Option<usize>, &mut dyn FnMut(Round<'_>) -> bool) + 'a;

/// The steps of the module docs: `run(seed)` is one run of the optimiser without the
/// anytime phase, `improve` the anytime phase. Without restarts (a first run that is
/// not no worse than every start, or exact) the anytime rounds follow the first run,
/// or nothing when it does not beat the starts.
///
/// # Errors
/// Those of `run`.
pub(crate) fn path(
    p: &Pattern,
    m: &MapMachine,
    seed: u64,
    mut steps: Steps<'_>,
    mut run: impl FnMut(u64) -> Result<Outcome>,
    improve: Box<Improve<'_>>,
) -> Result<Outcome> {
    let first = run(seed)?;
    steps.record(&first.best);
    let mut done = 1;
    if !first.dominates_starts || steps.over(done) {
        return Ok(first);
    }
    let exact = first.best.origin.starts_with("every mapping enumerated");
    let objective = Objective::of(p, m, first.best.metrics.hop_bytes);
    let bound = first.best.metrics.hop_bytes_bound;
    let mut tried = first.tried;
    let first_best = first.best.clone();
    let Some(mut kept) = objective.judge(p, m, first.best, steps.deadline) else {
        // cut by the deadline: nothing follows the first run
        return Ok(Outcome {
            best: first_best,
            dominates_starts: true,
            tried: first.tried,
        });
    };
    let mut failures = 0;
    for r in 1..=MAX_RESTARTS {
        if exact || failures >= PATIENCE || steps.over(done) {
            break;
        }
        let mut o = run(restart_seed(seed, r))?;
        if crate::clock::now() >= steps.deadline {
            // the restart may have been cut short: dropped, and nothing follows
            return Ok(Outcome {
                best: kept.s,
                dominates_starts: true,
                tried,
            });
        }
        let replaces = o.dominates_starts && {
            o.best.origin = format!("restart {r}: {}", o.best.origin);
            let Some(j) = objective.judge(p, m, o.best, steps.deadline) else {
                // its judge cut short: dropped as above
                return Ok(Outcome {
                    best: kept.s,
                    dominates_starts: true,
                    tried,
                });
            };
            let b = objective.better(&j, &kept);
            if b {
                kept = j;
            }
            b
        };
        done += 1;
        tried += o.tried;
        failures = if replaces { 0 } else { failures + 1 };
        steps.record(&kept.s);
    }
    if !steps.over(done) {
        let rounds = steps.max_steps.map(|n| n - done);
        let start = kept.s.clone();
        let mut keep = |r: Round<'_>| {
            // measured afresh only when the round's own measures let it be better
            let may = match objective {
                Objective::Round { hop_bytes_cap } => {
                    r.hop_bytes <= hop_bytes_cap
                        && r.max_link_time <= kept.s.metrics.max_link_time * (1.0 + 1e-9)
                }
                Objective::Pareto => r.pareto,
            };
            let kept_now = may && {
                let s = Scored {
                    metrics: evaluate_known(p, m, r.map, bound),
                    origin: r.origin.to_string(),
                    map: r.map.clone(),
                };
                // a judge cut by the deadline keeps nothing (the rounds stop there)
                let j = objective.judge(p, m, s, steps.deadline);
                let b = j.as_ref().is_some_and(|j| objective.better(j, &kept));
                if let Some(j) = j.filter(|_| b) {
                    kept = j;
                }
                b
            };
            steps.record(&kept.s);
            kept_now
        };
        improve(start, rounds, &mut keep);
    }
    Ok(Outcome {
        best: kept.s,
        dominates_starts: true,
        tried,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::round_time;
    use crate::{Edge, Options, Perm, SplitMix};
    use copr_topology::Network;
    use std::path::Path;
    use std::time::Duration;

    fn dragonfly(k: usize) -> MapMachine {
        let f = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/topology/dragonfly-g5a4p2.net.toml");
        MapMachine::network(Network::from_file(&f).unwrap(), None, Default::default(), k).unwrap()
    }

    fn random_pattern(n: usize, seed: u64) -> Pattern {
        let mut rng = SplitMix(seed);
        let edges = (0..3 * n)
            .map(|i| Edge {
                src: (i % n) as u32,
                dst: rng.below(n) as u32,
                bytes: 1000 + rng.below(100_000) as u64,
            })
            .filter(|e| e.src != e.dst)
            .collect();
        Pattern::from_edges(n, edges, "random".into()).unwrap()
    }

    fn scored(p: &Pattern, m: &MapMachine, seed: u64) -> Scored {
        let mut f: Vec<usize> = (0..p.tasks()).collect();
        SplitMix(seed).shuffle(&mut f);
        Scored::new(
            p,
            m,
            Perm::from_forward(f).unwrap(),
            format!("random {seed}"),
        )
    }

    fn judged(s: &Scored, time: f64) -> Judged {
        Judged { s: s.clone(), time }
    }

    #[test]
    fn the_round_order_needs_a_round_no_longer_a_link_no_busier_and_hop_bytes_under_the_cap() {
        let m = dragonfly(1);
        let p = random_pattern(40, 3);
        let a = scored(&p, &m, 1);
        let mut b = a.clone();
        let cap = a.metrics.hop_bytes + a.metrics.hop_bytes / 20;
        let obj = Objective::Round { hop_bytes_cap: cap };
        assert_eq!(Objective::of(&p, &m, a.metrics.hop_bytes), obj);
        let better = |b: &Scored, tb: f64, a: &Scored, ta: f64, o: Objective| {
            o.better(&judged(b, tb), &judged(a, ta))
        };
        // a shorter round, same link and hop-bytes: better; the same mapping: not
        assert!(better(&b, 0.9, &a, 1.0, obj));
        assert!(!better(&b, 1.0, &a, 1.0, obj));
        // a busier link, or hop-bytes above the cap: not better, however short the round
        b.metrics.max_link_time = a.metrics.max_link_time * 1.001;
        assert!(!better(&b, 0.5, &a, 1.0, obj));
        b.metrics.max_link_time = a.metrics.max_link_time;
        b.metrics.hop_bytes = cap + 1;
        assert!(!better(&b, 0.5, &a, 1.0, obj));
        b.metrics.hop_bytes = cap;
        assert!(better(&b, 0.5, &a, 1.0, obj));
        // the same round: better only by a Pareto gain on hop-bytes and link
        b.metrics.hop_bytes = a.metrics.hop_bytes - 1;
        assert!(better(&b, 1.0, &a, 1.0, obj));
        assert!(!better(&b, 1.0 + 1e-9, &a, 1.0, obj));
        b.metrics.hop_bytes = a.metrics.hop_bytes + 1;
        assert!(!better(&b, 1.0, &a, 1.0, obj));
        b.metrics.hop_bytes = a.metrics.hop_bytes;
        b.metrics.max_link_time = a.metrics.max_link_time * 0.999;
        assert!(better(&b, 1.0, &a, 1.0, obj));
        // Pareto: fewer hop-bytes at the same link is better; more is not
        b.metrics.max_link_time = a.metrics.max_link_time;
        b.metrics.hop_bytes = a.metrics.hop_bytes - 1;
        assert!(better(&b, 2.0, &a, 1.0, Objective::Pareto));
        b.metrics.hop_bytes = a.metrics.hop_bytes + 1;
        b.metrics.max_link_time = a.metrics.max_link_time * 0.5;
        assert!(!better(&b, 0.5, &a, 1.0, Objective::Pareto));
        // on a torus the objective is Pareto
        let t = crate::torus_machine(vec![4, 4], None, None, 1).unwrap();
        let q = random_pattern(16, 4);
        assert_eq!(Objective::of(&q, &t, 1), Objective::Pareto);
    }

    #[test]
    fn restarts_keep_the_better_stop_after_patience_and_drop_the_one_at_the_deadline() {
        let m = dragonfly(1);
        let p = random_pattern(40, 5);
        assert!(applies(&p, &m));
        let model = RoundModel::simgrid_like();
        let runs: Vec<Scored> = (10..30).map(|s| scored(&p, &m, s)).collect();
        let first = scored(&p, &m, 2);
        // the expected choice, by hand: a run replaces the kept one when its round is
        // shorter (ties do not occur here), its link no busier and its hop-bytes within
        // 5 % of the first's
        let cap = first.metrics.hop_bytes + first.metrics.hop_bytes / 20;
        let mut best = (first.clone(), round_time(&p, &m, &first.map, &model));
        let mut fails = 0;
        let mut calls = 0;
        for r in &runs {
            if fails == PATIENCE || calls == MAX_RESTARTS {
                break;
            }
            calls += 1;
            let t = round_time(&p, &m, &r.map, &model);
            if t < best.1
                && r.metrics.max_link_time <= best.0.metrics.max_link_time
                && r.metrics.hop_bytes <= cap
            {
                best = (r.clone(), t);
                fails = 0;
            } else {
                fails += 1;
            }
        }
        assert!(calls < runs.len(), "patience never ran out");
        assert_ne!(
            best.0.origin, "random 2",
            "no run was better: the test sees nothing"
        );
        let mut seeds = Vec::new();
        let mut next = std::iter::once(first.clone()).chain(runs.iter().cloned());
        let mut trace = Vec::new();
        let steps = Steps {
            deadline: crate::clock::now() + Duration::from_secs(600),
            max_steps: None,
            trace: Some(&mut trace),
        };
        let mut rounds_asked = None;
        let out = path(
            &p,
            &m,
            7,
            steps,
            |seed| {
                seeds.push(seed);
                Ok(Outcome {
                    best: next.next().unwrap(),
                    dominates_starts: true,
                    tried: 1,
                })
            },
            Box::new(|_, rounds, _| rounds_asked = Some(rounds)),
        )
        .unwrap();
        assert_eq!(out.best.map, best.0.map);
        assert_eq!(seeds.len(), 1 + calls);
        assert_eq!(seeds[0], 7, "the first run has the seed itself");
        assert_eq!(out.tried, 1 + calls);
        assert_eq!(trace.len(), 1 + calls, "one entry per step");
        assert_eq!(trace.last().unwrap().map, best.0.map);
        assert_eq!(
            rounds_asked,
            Some(None),
            "the anytime phase runs, unbounded"
        );
        // every run its own seed
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), seeds.len());
        // three steps: the first run and two restarts, and no room for rounds
        let mut next = std::iter::once(first.clone()).chain(runs.iter().cloned());
        let mut asked = false;
        let steps = Steps {
            deadline: crate::clock::now() + Duration::from_secs(600),
            max_steps: Some(3),
            trace: None,
        };
        let mut n = 0;
        path(
            &p,
            &m,
            7,
            steps,
            |_| {
                n += 1;
                Ok(Outcome {
                    best: next.next().unwrap(),
                    dominates_starts: true,
                    tried: 1,
                })
            },
            Box::new(|_, _, _| asked = true),
        )
        .unwrap();
        assert_eq!((n, asked), (3, false));
        // a restart past the deadline is dropped, and nothing follows it (a deadline
        // far enough for the first run's judging in a debug build on a loaded machine;
        // the second run ends after it, however long the first took)
        let mut calls = 0;
        let mut asked = false;
        let deadline = crate::clock::now() + Duration::from_secs(5);
        let steps = Steps {
            deadline,
            max_steps: None,
            trace: None,
        };
        let out = path(
            &p,
            &m,
            7,
            steps,
            |_| {
                calls += 1;
                if calls > 1 {
                    let left = deadline.saturating_duration_since(crate::clock::now());
                    std::thread::sleep(left + Duration::from_millis(50));
                }
                Ok(Outcome {
                    best: if calls == 1 {
                        first.clone()
                    } else {
                        best.0.clone()
                    },
                    dominates_starts: true,
                    tried: 1,
                })
            },
            Box::new(|_, _, _| asked = true),
        )
        .unwrap();
        assert_eq!(out.best.map, first.map);
        assert_eq!((calls, asked), (2, false));
    }

    /// The random geometric graph of `n` tasks in random order (mean degree 7) as a
    /// pattern.
    fn rgg(n: usize, dim: usize, seed: u64) -> Pattern {
        let edges = copr_testkit::graphs::rgg(n, dim, 7.0, seed, true)
            .into_iter()
            .map(|(src, dst, bytes)| Edge { src, dst, bytes })
            .collect();
        Pattern::from_edges(n, edges, "rgg".into()).unwrap()
    }

    /// Whether `a` is better than `b` on `p`, `m` by the round order, written out here
    /// from its definition with the measures computed afresh.
    fn better_by_hand(p: &Pattern, m: &MapMachine, a: &Perm, b: &Perm, cap: u128) -> bool {
        let model = RoundModel::simgrid_like();
        let (x, y) = (crate::evaluate(p, m, a), crate::evaluate(p, m, b));
        let (ta, tb) = (round_time(p, m, a, &model), round_time(p, m, b, &model));
        let pareto = x.hop_bytes <= y.hop_bytes
            && x.max_link_time <= y.max_link_time
            && (x.hop_bytes < y.hop_bytes || x.max_link_time < y.max_link_time);
        x.hop_bytes <= cap && x.max_link_time <= y.max_link_time && ta <= tb && (ta < tb || pareto)
    }

    #[test]
    fn on_the_restart_path_a_later_step_is_never_worse_and_a_cut_run_is_a_prefix() {
        let m = dragonfly(3);
        // graphs until one on which restarts and rounds both improve the mapping (most
        // graphs give one or the other); every graph tried is checked whole
        let mut seen = Vec::new();
        for graph_seed in 6..14 {
            let p = rgg(120, 3, graph_seed);
            assert!(applies(&p, &m));
            let improved = check_the_restart_path(&p, &m);
            seen.push((graph_seed, improved));
            if improved == (true, true) {
                return;
            }
        }
        panic!("no graph had both a restart and a round improve it: {seen:?}");
    }

    /// The checks of the test above on `p`; which kinds of step improved the mapping
    /// (a restart, an anytime round).
    fn check_the_restart_path(p: &Pattern, m: &MapMachine) -> (bool, bool) {
        let starts = crate::candidates::baseline_starts(p, m).unwrap();
        let opts = Options {
            seed: 1,
            // the anytime phase's patience: 6 rounds
            budget: Duration::from_secs(3),
        };
        let run = |max_steps: Option<usize>, trace: Option<&mut Vec<Scored>>| {
            let steps = Steps {
                deadline: crate::clock::now() + Duration::from_secs(3600),
                max_steps,
                trace,
            };
            {
                // the nested runs not cut by their budgets: the whole run and the
                // cut runs are the same up to the cut whatever the machine's load
                let counted = crate::optimise::Nested::Counted;
                crate::optimise::restart_path(p, m, &starts, &opts, steps, counted).unwrap()
            }
        };
        let mut trace = Vec::new();
        let all = run(None, Some(&mut trace));
        let n = trace.len();
        assert_eq!(all.best.map, trace[n - 1].map);
        // (a step that keeps the mapping keeps its origin too, so which steps were
        // rounds shows only where a round improved it: the test above asks for that)
        let cap = trace[0].metrics.hop_bytes + trace[0].metrics.hop_bytes / 20;
        // every step keeps the mapping or replaces it by a better one
        let mut improved = (false, false);
        for i in 1..n {
            let (a, b) = (&trace[i].map, &trace[i - 1].map);
            if a != b {
                assert!(better_by_hand(p, m, a, b, cap), "step {} is worse", i + 1);
                if trace[i].origin.contains("kicks") {
                    improved.1 = true;
                } else {
                    improved.0 = true;
                }
            }
        }
        let changes: Vec<usize> = (1..n)
            .filter(|&i| trace[i].map != trace[i - 1].map)
            .collect();
        if changes.is_empty() {
            return improved;
        }
        // the whole path is better than its first run
        assert!(better_by_hand(p, m, &trace[n - 1].map, &trace[0].map, cap));
        // a run stopped after k steps (a deadline after k steps) ends where the full
        // run was after k steps
        let mut ks = vec![1, n - 1, changes[0] + 1, changes[changes.len() - 1] + 1];
        ks.sort_unstable();
        ks.dedup();
        for k in ks {
            assert_eq!(
                run(Some(k), None).best.map,
                trace[k - 1].map,
                "after {k} steps"
            );
        }
        improved
    }
}
