//! The last step of the optimiser for a grid algorithm's pattern (Cannon, Fox, Snyder,
//! SUMMA: [`Pattern::algorithm`]) on a network graph: structured mappings of the
//! process grid and the optimiser's own mappings, judged by the time of the algorithm's
//! program in the staged flow model ([`crate::program_time`], which follows SimGrid's
//! ranking of these programs where the summed traffic's measures do not).
//!
//! The structured candidates of an `r × c` grid on nodes of `n` slots, in the order
//! they are timed:
//! * **tiles** of `a × b` tasks per node (`a·b = n`, `a | r`, `b | c`, `a, b ≥ 2`, the
//!   widest first), the tiles in bit-reversed order when the tile grid's sides `R`
//!   and `C` are powers of two (tile `(x, y)` on node `rev(y) + C·rev(x)`, each index's
//!   bits reversed: the tiles that a binomial tree's first levels join, half and a
//!   quarter of a row or column apart, become neighbours in the node order, under one
//!   switch of a fat tree), then in row-major order;
//! * **skewed rows** (`n | c`): row `i` laid out row-major with its columns rotated by
//!   `s·i`, task `(i, j)` on slot `i·c + (j + s·i) mod c`, for `s = n/2, n/4, …, 1`. A
//!   node holds `n` consecutive columns of one row, and consecutive rows have their
//!   node boundaries at other columns, so the rows' binomial trees, rooted at a column
//!   that moves with the row, cross nodes at other levels.
//!
//! **One sequence that the deadline cuts** ([`choose`]). The steps, in this order:
//! 1. each distinct structured candidate, timed (when there is none, each start
//!    instead: the baselines the optimiser starts from);
//! 2. the optimiser's run with the seed, its mapping timed;
//! 3. runs with derived seeds (restarts `1 ..= `[`RESTARTS`]), each mapping timed,
//!    until [`PATIENCE`] in a row are not faster than the best so far.
//!
//! The mapping kept is the one timed lowest so far (ties: the earlier); a timing stops
//! as soon as its simulated clock passes the kept one's. Nothing in the steps depends on
//! the budget (the optimiser's runs get fixed budgets for their nested runs, and no
//! anytime rounds); the deadline only cuts the sequence: a step it interrupts (a
//! timing, or an optimiser's run) is dropped, and none follows. So the result is the
//! mapping kept after the steps completed, a function of the seed and of their number,
//! and a run with a later deadline, which completes at least as many steps, never keeps
//! a mapping the model times higher. When no step completed, the first candidate of
//! the sequence is returned untimed (the first structured candidate; without one, the
//! first start, or the optimiser's mapping when no start was given and its run
//! completed; the identity otherwise): deterministic, and the mapping a later deadline
//! times first. The structured candidates come first because they are built at once and
//! are the fastest in SimGrid on the k = 8 fat tree (`benches/RESULTS.md`); one timing
//! at p = 1024 takes 0.5–7 s, so a small budget times them alone.

use std::time::Instant;

use super::algorithms::{Algorithm, AlgorithmSpec, Collective};
use super::candidates::Scored;
use super::fluid::RoundModel;
use super::machine::{MapMachine, NetKind};
use super::pattern::Pattern;
use super::restarts::Steps;
use super::staged::{program_time_until, Program};
use copr::error::Result;
use copr::lap::Perm;

/// The end of the origin of the mapping this step keeps when it timed one.
pub(crate) const CHOSEN_BY_MODEL: &str = "(staged model)";

/// Programs of more messages than this are not timed (one evaluation of Cannon at
/// p = 1024, 65 000 messages, takes seconds).
pub(crate) const MAX_PROGRAM_MESSAGES: usize = 200_000;

/// The algorithm whose pattern `p` is, when `p` is one on a network graph `m` that it
/// fills (the pattern's process grid, block size and trees tried in turn, the
/// messages compared): then the optimiser's mapping is chosen by the staged model.
pub(crate) fn applies(p: &Pattern, m: &MapMachine) -> Option<AlgorithmSpec> {
    if !matches!(m.kind(), NetKind::Graph(..)) || p.grid_spec().is_some() || p.tasks() != m.slots()
    {
        return None;
    }
    let g = p.shape()?;
    let (&[rows, cols], Some(&block_bytes)) = (g.dims.as_slice(), g.bytes.first()) else {
        return None;
    };
    for algorithm in Algorithm::ALL {
        for collective in [Collective::Binomial, Collective::Ring] {
            let s = AlgorithmSpec {
                algorithm,
                rows,
                cols,
                block_bytes,
                collective,
            };
            let messages = match algorithm {
                Algorithm::Summa => rows * cols * (rows + cols),
                _ => 3 * rows * cols * rows,
            };
            if messages > MAX_PROGRAM_MESSAGES {
                continue;
            }
            if Pattern::algorithm(&s).is_ok_and(|q| q.edges() == p.edges()) {
                return Some(s);
            }
        }
    }
    None
}

/// The structured candidates of an `rows × cols` grid on nodes of `n` slots (module
/// docs), in the order they are timed (the tiles, then the skewed rows): task
/// `t = i·cols + j` on slot `map[t]`.
pub(crate) fn structured(rows: usize, cols: usize, n: usize) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    for a in 2..n {
        let b = n / a;
        if a * b != n || b < 2 || rows % a != 0 || cols % b != 0 {
            continue;
        }
        let (tr, tc) = (rows / a, cols / b);
        let tiled = |node: &dyn Fn(usize, usize) -> usize| -> Vec<usize> {
            (0..rows * cols)
                .map(|t| {
                    let (i, j) = (t / cols, t % cols);
                    node(i / a, j / b) * n + (i % a) * b + j % b
                })
                .collect()
        };
        if tr.is_power_of_two() && tc.is_power_of_two() {
            let node = |x: usize, y: usize| reversed(y, tc) + tc * reversed(x, tr);
            out.push((format!("tiles {a}x{b}, bit-reversed"), tiled(&node)));
        }
        out.push((format!("tiles {a}x{b}"), tiled(&|x, y| x * tc + y)));
    }
    if n == 0 || cols % n != 0 {
        return out;
    }
    let mut s = n / 2;
    while s >= 1 {
        let map = (0..rows * cols)
            .map(|t| {
                let (i, j) = (t / cols, t % cols);
                i * cols + (j + s * i) % cols
            })
            .collect();
        out.push((format!("rows skewed by {s}"), map));
        s /= 2;
    }
    out
}

/// `x < len` (a power of two) with its `log2(len)` bits in reverse order.
fn reversed(x: usize, len: usize) -> usize {
    let bits = len.trailing_zeros();
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

/// Restarts of the optimiser (runs with derived seeds) at most, after its first run.
pub(crate) const RESTARTS: usize = 4;

/// Restarts in a row not faster in the model than the mapping kept, after which they
/// stop.
pub(crate) const PATIENCE: usize = 2;

/// The end of the origin of a mapping returned untimed: the budget ended before the
/// first step of the sequence completed.
pub(crate) const NOT_TIMED: &str = "(not timed: the budget ended first)";

/// Where [`choose`] stops: the deadline, and (to emulate a deadline that falls after a
/// given step) a number of steps (each candidate timed, each optimiser's run with its
/// timing); with the mapping kept after each completed step recorded in `trace` when
/// given.
pub(crate) type Cut<'a> = Steps<'a, Kept>;

/// The mapping kept after a step: where it came from, the mapping and its modelled
/// time in seconds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Kept {
    /// Where it came from (without [`CHOSEN_BY_MODEL`]).
    pub(crate) origin: String,
    /// The mapping.
    pub(crate) map: Perm,
    /// Its time in the staged model.
    pub(crate) time: f64,
}

/// What [`choose`] returns.
pub(crate) struct Choice {
    /// The mapping kept, its origin ending in [`CHOSEN_BY_MODEL`] (or [`NOT_TIMED`]).
    pub(crate) best: Scored,
    /// Candidates tried (the optimiser's runs count theirs).
    pub(crate) tried: usize,
}

/// One optimiser's run of the sequence: `run(r)` is the run with the seed (`r = 0`) or
/// restart `r`: its chosen mapping and the candidates it tried.
pub(crate) type Runs<'a> = dyn FnMut(usize) -> Result<(Scored, usize)> + 'a;

/// The candidates timed first (step 1 of the module docs): the distinct structured
/// mappings of `spec`'s process grid on `m`, or, when there is none, the distinct
/// `starts`.
pub(crate) fn first_candidates(
    spec: &AlgorithmSpec,
    m: &MapMachine,
    starts: &[Scored],
) -> Vec<(String, Perm)> {
    let mut fixed: Vec<(String, Perm)> = Vec::new();
    for (name, map) in structured(spec.rows, spec.cols, m.ranks_per_node()) {
        if let Ok(perm) = Perm::from_forward(map) {
            if !fixed.iter().any(|(_, q)| *q == perm) {
                fixed.push((name, perm));
            }
        }
    }
    if fixed.is_empty() {
        for s in starts {
            if !fixed.iter().any(|(_, q)| *q == s.map) {
                fixed.push((s.origin.clone(), s.map.clone()));
            }
        }
    }
    fixed
}

/// The sequence of the module docs for `p`, the pattern of `spec`, on `m`: the
/// candidates `fixed` ([`first_candidates`]), then the optimiser's runs `run(0)`,
/// `run(1)`, …, each timed by the staged model, within `cut`.
///
/// # Errors
/// Those of `run`.
pub(crate) fn choose(
    p: &Pattern,
    m: &MapMachine,
    spec: &AlgorithmSpec,
    fixed: Vec<(String, Perm)>,
    run: &mut Runs<'_>,
    mut cut: Cut<'_>,
) -> Result<Choice> {
    let deadline = cut.deadline;
    let model = RoundModel::simgrid_like();
    let prog = Program::algorithm(spec).ok();
    // a timing: `None` when the deadline interrupts it (or nothing can be timed)
    let time = |map: &Perm, cutoff: f64| {
        let prog = prog.as_ref()?;
        program_time_until(prog, m, map, &model, (Some(deadline), cutoff))
    };
    let mut kept: Option<Kept> = None;
    // the first candidate of the sequence, returned untimed when no step completes
    let mut untimed: Option<Scored> = None;
    let mut done = 0;
    let mut tried = 0;
    let mut cut_short = false;
    for (name, map) in &fixed {
        if cut.over(done) {
            cut_short = true;
            break;
        }
        let Some(t) = time(map, kept.as_ref().map_or(f64::INFINITY, |k| k.time)) else {
            cut_short = true;
            break;
        };
        tried += 1;
        if kept.as_ref().is_none_or(|k| t < k.time) {
            kept = Some(Kept {
                origin: name.clone(),
                map: map.clone(),
                time: t,
            });
        }
        done += 1;
        if let Some(k) = &kept {
            cut.record(k);
        }
    }
    // the optimiser's mappings timed so far
    let mut seen: Vec<Perm> = Vec::new();
    let mut failures = 0;
    for r in 0..=RESTARTS {
        if cut_short || cut.over(done) || failures >= PATIENCE {
            break;
        }
        let (s, run_tried) = run(r)?;
        if Instant::now() >= deadline {
            // the run may have been cut short: dropped, and nothing follows
            break;
        }
        tried += run_tried;
        let origin = match r {
            0 => s.origin.clone(),
            _ => format!("restart {r}: {}", s.origin),
        };
        let timed_before = fixed.iter().any(|(_, q)| *q == s.map) || seen.contains(&s.map);
        let t = if timed_before {
            // timed already: nothing new
            f64::INFINITY
        } else {
            match time(&s.map, kept.as_ref().map_or(f64::INFINITY, |k| k.time)) {
                Some(t) => t,
                None => {
                    if kept.is_none() && fixed.is_empty() && untimed.is_none() {
                        untimed = Some(Scored { origin, ..s });
                    }
                    break;
                }
            }
        };
        if !timed_before {
            seen.push(s.map.clone());
        }
        if kept.as_ref().is_none_or(|k| t < k.time) && t.is_finite() {
            kept = Some(Kept {
                origin,
                map: s.map.clone(),
                time: t,
            });
            failures = 0;
        } else {
            failures += 1;
        }
        done += 1;
        if let Some(k) = &kept {
            cut.record(k);
        }
    }
    let best = match kept {
        Some(k) => {
            let origin = format!("{} {CHOSEN_BY_MODEL}", k.origin);
            Scored::new(p, m, k.map, origin)
        }
        None => {
            let s = match (fixed.into_iter().next(), untimed) {
                (Some((name, map)), _) => Scored::new(p, m, map, name),
                (None, Some(s)) => s,
                (None, None) => Scored::new(p, m, Perm::identity(p.tasks()), "packed".into()),
            };
            let origin = format!("{} {NOT_TIMED}", s.origin);
            Scored { origin, ..s }
        }
    };
    Ok(Choice { best, tried })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundles::test_fat_tree;
    use crate::staged::program_time;
    use std::time::Duration;

    fn spec(algorithm: Algorithm, q: usize) -> AlgorithmSpec {
        AlgorithmSpec {
            algorithm,
            rows: q,
            cols: q,
            block_bytes: 1 << 18,
            collective: Collective::Binomial,
        }
    }

    /// The k = 4 fat tree (16 hosts) with 4 slots per host: an 8 × 8 grid fills it.
    fn machine() -> MapMachine {
        MapMachine::network(test_fat_tree(4), None, Default::default(), 4).unwrap()
    }

    #[test]
    fn skewed_rows_and_tiles_by_hand_on_a_4x4_grid() {
        // nodes of 4 slots: tiles 2x2, then skewed by 2, by 1
        let c = structured(4, 4, 4);
        let names: Vec<&str> = c.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "tiles 2x2, bit-reversed",
                "tiles 2x2",
                "rows skewed by 2",
                "rows skewed by 1"
            ]
        );
        // a 2 x 2 tile grid: reversing one bit changes nothing
        assert_eq!(c[0].1, c[1].1);
        // skewed by 2: row 1 rotated by 2, row 2 by 4 = 0, row 3 by 6 = 2
        assert_eq!(
            c[2].1,
            [0, 1, 2, 3, 6, 7, 4, 5, 8, 9, 10, 11, 14, 15, 12, 13]
        );
        // node 1 (slots 4..8) holds row 1's columns 2, 3, 0, 1
        let on_node_1: Vec<usize> = (0..16).filter(|&t| c[2].1[t] / 4 == 1).collect();
        assert_eq!(on_node_1, [4, 5, 6, 7]);
        // tiles 2x2: node 0 holds (0,0), (0,1), (1,0), (1,1); node 1 the next tile right
        let node = |t: usize| c[1].1[t] / 4;
        assert_eq!([node(0), node(1), node(4), node(5)], [0; 4]);
        assert_eq!([node(2), node(3), node(6), node(7)], [1; 4]);
        assert_eq!([node(8), node(9), node(12), node(13)], [2; 4]);
        // every candidate is a permutation
        for (_, map) in &c {
            assert!(Perm::from_forward(map.clone()).is_ok());
        }
        // bit-reversed on 8 x 8 with tiles 2x2 (a 4 x 4 tile grid): tile (x, y) on node
        // rev(y) + 4 rev(x), rev = 0, 2, 1, 3
        let r = &structured(8, 8, 4)[0];
        assert_eq!(r.0, "tiles 2x2, bit-reversed");
        let at = |i: usize, j: usize| r.1[i * 8 + j];
        assert_eq!(at(0, 0), 0);
        assert_eq!(at(0, 2), 8); // tile (0, 1): node 2
        assert_eq!(at(0, 4), 4); // tile (0, 2): node 1
        assert_eq!(at(2, 0), 32); // tile (1, 0): node 8
        assert_eq!(at(3, 3), 43); // tile (1, 1): node 10, its cell (1, 1)
        assert_eq!(at(7, 7), 63); // tile (3, 3): node 15
                                  // 8 slots per node on 8 x 8: tiles 2x4 before 4x2
        let s = structured(8, 8, 8);
        let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "tiles 2x4, bit-reversed",
                "tiles 2x4",
                "tiles 4x2, bit-reversed",
                "tiles 4x2",
                "rows skewed by 4",
                "rows skewed by 2",
                "rows skewed by 1"
            ]
        );
        // 6 x 6 on nodes of 4: a 3 x 3 grid of 2x2 tiles, row-major only; no skewed
        // rows (4 does not divide a row)
        let six: Vec<String> = structured(6, 6, 4).into_iter().map(|(n, _)| n).collect();
        assert_eq!(six, ["tiles 2x2"]);
        assert!(structured(5, 5, 4).is_empty());
    }

    #[test]
    fn recognises_the_algorithm_on_network_graphs_only() {
        let m = machine();
        for a in Algorithm::ALL {
            let s = spec(a, 8);
            let p = Pattern::algorithm(&s).unwrap();
            assert_eq!(applies(&p, &m), Some(s), "{}", a.name());
            let ring = AlgorithmSpec {
                collective: Collective::Ring,
                ..s
            };
            let p = Pattern::algorithm(&ring).unwrap();
            // Cannon has no tree: its ring pattern and program are the binomial ones
            let want = if a == Algorithm::Cannon { s } else { ring };
            assert_eq!(applies(&p, &m), Some(want), "{} ring", a.name());
        }
        let p = Pattern::algorithm(&spec(Algorithm::Fox, 8)).unwrap();
        let torus = crate::torus_machine(vec![4, 4], None, None, 4).unwrap();
        assert_eq!(applies(&p, &torus), None);
        // the same grid's neighbour exchange is no algorithm
        let g = crate::CartGrid::new(vec![8, 8], vec![true, true], vec![1 << 18; 2]).unwrap();
        assert_eq!(applies(&Pattern::grid(&g).unwrap(), &m), None);
        // nor are the algorithm's messages with one left out
        let mut e = p.edges().to_vec();
        e.pop();
        let q = Pattern::from_edges(64, e, "fox less one".into()).unwrap();
        assert_eq!(applies(&q, &m), None);
    }

    fn scrambled(n: usize, seed: u64) -> Perm {
        let mut fwd: Vec<usize> = (0..n).collect();
        copr::rng::SplitMix(seed).shuffle(&mut fwd);
        Perm::from_forward(fwd).unwrap()
    }

    /// `choose` with `fixed` first and the scripted runs `runs` (run `r` gives
    /// `runs[r]`), within `deadline` and `max_steps`: the result, its trace and the runs
    /// asked for. `slow_run`: run `r` waits until the deadline has passed.
    fn scripted(
        s: &AlgorithmSpec,
        fixed: &[(String, Perm)],
        runs: &[Perm],
        (deadline, max_steps, slow_run): (Instant, Option<usize>, Option<usize>),
    ) -> (Scored, Vec<Kept>, Vec<usize>) {
        let (m, p) = (machine(), Pattern::algorithm(s).unwrap());
        let mut asked = Vec::new();
        let mut trace = Vec::new();
        let mut run = |r: usize| -> Result<(Scored, usize)> {
            asked.push(r);
            if slow_run == Some(r) {
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok((Scored::new(&p, &m, runs[r].clone(), format!("run {r}")), 1))
        };
        let cut = Cut {
            deadline,
            max_steps,
            trace: Some(&mut trace),
        };
        let c = choose(&p, &m, s, fixed.to_vec(), &mut run, cut).unwrap();
        (c.best, trace, asked)
    }

    #[test]
    fn the_sequence_keeps_the_least_time_and_a_cut_run_is_the_prefix_it_timed() {
        let m = machine();
        let far = Instant::now() + Duration::from_secs(3600);
        let model = RoundModel::simgrid_like();
        for a in [Algorithm::Snyder, Algorithm::Summa] {
            let s = spec(a, 8);
            let prog = Program::algorithm(&s).unwrap();
            let t = |map: &Perm| program_time(&prog, &m, map, &model);
            // scrambled mappings first, the structured ones as the runs' mappings, so
            // that a run replaces the mapping kept
            let fixed: Vec<(String, Perm)> = (0..3)
                .map(|i| (format!("scrambled {i}"), scrambled(64, 10 + i)))
                .collect();
            let structured = first_candidates(&s, &m, &[]);
            assert_eq!(structured.len(), 4, "{}", a.name());
            let q: Vec<Perm> = structured.iter().map(|(_, q)| q.clone()).collect();
            let runs = [
                scrambled(64, 20),
                q[0].clone(),
                fixed[1].1.clone(),
                q[1].clone(),
                q[2].clone(),
                q[3].clone(),
            ];
            // the expected choice, by hand: the least time among the fixed ones (the
            // earlier on ties), then each run's mapping replaces it when faster and not
            // timed before; the runs stop after PATIENCE in a row keep nothing
            let mut best: (usize, f64) = (0, t(&fixed[0].1));
            for (i, (_, q)) in fixed.iter().enumerate().skip(1) {
                if t(q) < best.1 {
                    best = (i, t(q));
                }
            }
            let mut best_map = fixed[best.0].1.clone();
            let (mut fails, mut calls) = (0, 0);
            for (r, q) in runs.iter().enumerate() {
                if fails >= PATIENCE || r > RESTARTS {
                    break;
                }
                calls += 1;
                let before = fixed.iter().any(|(_, f)| f == q) || runs[..r].contains(q);
                if !before && t(q) < best.1 {
                    best = (r, t(q));
                    best_map = q.clone();
                    fails = 0;
                } else {
                    fails += 1;
                }
            }
            assert!(
                !fixed.iter().any(|(_, f)| *f == best_map),
                "no run replaced the fixed ones: the test sees nothing ({})",
                a.name()
            );
            let (full, trace, asked) = scripted(&s, &fixed, &runs, (far, None, None));
            assert_eq!(full.map, best_map, "{}", a.name());
            assert!(full.origin.ends_with(CHOSEN_BY_MODEL));
            assert!(
                full.origin.contains(&format!("run {}", best.0)),
                "{}",
                full.origin
            );
            assert_eq!(asked, (0..calls).collect::<Vec<_>>());
            // one entry per step, each the least time so far, timed afresh
            assert_eq!(trace.len(), fixed.len() + calls);
            for (i, k) in trace.iter().enumerate() {
                assert_eq!(k.time, t(&k.map), "step {}", i + 1);
                if i > 0 {
                    assert!(k.time <= trace[i - 1].time, "step {} is slower", i + 1);
                }
            }
            // counted steps: a run cut after k steps keeps what the full run kept then
            for k in 0..=trace.len() {
                let (cut, cut_trace, asked) = scripted(&s, &fixed, &runs, (far, Some(k), None));
                assert_eq!(cut_trace[..], trace[..k], "after {k} steps");
                assert_eq!(
                    asked.len(),
                    k.saturating_sub(fixed.len()),
                    "after {k} steps"
                );
                if k == 0 {
                    // nothing timed: the first candidate, untimed
                    assert_eq!(cut.map, fixed[0].1);
                    assert!(cut.origin.ends_with(NOT_TIMED), "{}", cut.origin);
                } else {
                    assert_eq!(cut.map, trace[k - 1].map, "after {k} steps");
                }
            }
            // a deadline already passed: the first candidate, untimed, no run
            let (late, _, asked) = scripted(&s, &fixed, &runs, (Instant::now(), None, None));
            assert_eq!((&late.map, asked.len()), (&fixed[0].1, 0));
            // a run the deadline interrupts is dropped, and nothing follows: what the
            // fixed ones kept (when all were timed before the deadline)
            let soon = Instant::now() + Duration::from_secs(2);
            let (cut, cut_trace, asked) = scripted(&s, &fixed, &runs, (soon, None, Some(0)));
            let n = cut_trace.len();
            assert_eq!(cut_trace[..], trace[..n]);
            match n {
                0 => assert_eq!(cut.map, fixed[0].1),
                _ => assert_eq!(cut.map, trace[n - 1].map),
            }
            assert!(
                n <= fixed.len() && asked.len() <= 1,
                "{n} steps, runs {asked:?}"
            );
        }
    }

    #[test]
    fn without_structured_candidates_the_starts_come_first() {
        let m = machine();
        let s = spec(Algorithm::Fox, 8);
        let p = Pattern::algorithm(&s).unwrap();
        let starts: Vec<Scored> = [3, 4, 3]
            .iter()
            .map(|&k| Scored::new(&p, &m, scrambled(64, k), format!("start {k}")))
            .collect();
        // the 8 x 8 grid on nodes of 4 has structured candidates: the starts are not used
        let f = first_candidates(&s, &m, &starts);
        assert_eq!(f[0].0, "tiles 2x2, bit-reversed");
        // one slot per node: none; the distinct starts instead
        let flat = MapMachine::flat(64, 1).unwrap();
        assert!(structured(8, 8, 1).is_empty());
        let f = first_candidates(&s, &flat, &starts);
        let names: Vec<&str> = f.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["start 3", "start 4"]);
    }

    #[test]
    fn through_the_optimiser_a_later_cut_is_never_slower_in_the_model() {
        let m = machine();
        let model = RoundModel::simgrid_like();
        let s = spec(Algorithm::Cannon, 8);
        let p = Pattern::algorithm(&s).unwrap();
        let prog = Program::algorithm(&s).unwrap();
        let starts = crate::candidates::baseline_starts(&p, &m).unwrap();
        let opts = crate::Options {
            seed: 3,
            budget: Duration::from_secs(2),
        };
        let run = |max_steps: Option<usize>, trace: Option<&mut Vec<Kept>>| {
            let cut = Cut {
                deadline: Instant::now() + Duration::from_secs(3600),
                max_steps,
                trace,
            };
            // the nested runs not cut by their budgets (independent of the load)
            let counted = crate::optimise::Nested::Counted;
            crate::optimise::program_path(&p, &m, &starts, &opts, &s, cut, counted).unwrap()
        };
        let mut trace = Vec::new();
        let all = run(None, Some(&mut trace));
        let n = trace.len();
        let fixed = first_candidates(&s, &m, &starts).len();
        assert!(n > fixed, "the optimiser's run was not timed: {n} steps");
        assert_eq!(all.best.map, trace[n - 1].map);
        // the model's time of the mapping kept, timed afresh, never rises from a step to
        // the next
        let times: Vec<f64> = trace
            .iter()
            .map(|k| program_time(&prog, &m, &k.map, &model))
            .collect();
        for i in 1..n {
            assert!(
                times[i] <= times[i - 1],
                "step {} is slower: {times:?}",
                i + 1
            );
        }
        // a run stopped after k steps (a deadline after k steps) keeps what the full run
        // kept then; after the first candidates, and after the optimiser's first run
        for k in [1, fixed, fixed + 1, n] {
            assert_eq!(
                run(Some(k), None).best.map,
                trace[k - 1].map,
                "after {k} steps"
            );
        }
        // the choice is the model's, and says so
        assert!(
            all.best.origin.ends_with(CHOSEN_BY_MODEL),
            "{}",
            all.best.origin
        );
    }

    #[test]
    fn the_report_says_how_the_mapping_was_chosen() {
        let m = machine();
        let p = Pattern::algorithm(&spec(Algorithm::Fox, 8)).unwrap();
        let opts = crate::Options {
            seed: 1,
            budget: Duration::from_secs(3),
        };
        let strategies = [crate::Strategy::Packed, crate::Strategy::Optimised];
        let mut cmp = crate::compare(&p, &m, &strategies, &opts, |_| {}).unwrap();
        let origin = cmp.row("optimised").unwrap().origin.clone().unwrap();
        assert!(origin.ends_with(CHOSEN_BY_MODEL), "{origin}");
        let text = crate::table(&cmp);
        assert!(text.contains(&format!("kept {origin}")));
        assert!(text.contains("the least time of the algorithm's program in the staged model"));
        // the same row had the budget ended before the first timing
        let i = cmp
            .rows
            .iter()
            .position(|r| r.strategy == "optimised")
            .unwrap();
        cmp.rows[i].origin = Some(format!("tiles 2x2, bit-reversed {NOT_TIMED}"));
        let text = crate::table(&cmp);
        assert!(text.contains("kept tiles 2x2, bit-reversed (not timed: the budget ended first)"));
        assert!(text.contains("the first mapping the staged model times; none was timed in time"));
    }
}
