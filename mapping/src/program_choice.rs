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
//!   that moves with the row, cross nodes at other levels;
//! * **nested tiles** ([`interleaved`]): the same tiles with the tile row's and the tile
//!   column's bits interleaved into the node index in every order, so that blocks of
//!   tiles share a switch and larger blocks a pod.
//!
//! **The bar** ([`first_candidates`]). Of the distinct structured candidates (those
//! that put every message's two tasks as many hops apart as an earlier one are the
//! same to the network and dropped) only those of the **least hop-bytes**, and of these
//! the least busiest link (the machine's link model: ECMP on fat trees), are timed;
//! these two least values are the bar, and an optimiser's mapping above it on either
//! measure is not kept, however fast. So the mapping kept has the least hop-bytes copr
//! finds for the pattern and the machine, and among the mappings of the least hop-bytes
//! the least modelled time: hop-bytes first, then the busiest link, then the time. On
//! the k = 8 fat tree this keeps a mapping with fewer hop-bytes than Scotch's and
//! faster in SimGrid than Scotch's, packed and Hilbert for Cannon, Fox and SUMMA;
//! Snyder's least-hop-bytes mapping is slower than packed there (`benches/RESULTS.md`).
//!
//! **One sequence that the deadline cuts** ([`choose`]). The steps, in this order:
//! 1. each structured candidate within the bar, timed (when there is no structured
//!    candidate, the starts instead, the baselines the optimiser starts from, with the
//!    bar of their least hop-bytes and busiest link);
//! 2. the optimiser's run with the seed, its mapping timed when within the bar;
//! 3. runs with derived seeds (restarts `1 ..= `[`RESTARTS`]), each mapping timed when
//!    within the bar, until [`PATIENCE`] in a row are not kept.
//!
//! The mapping kept is the one timed lowest so far (ties: the earlier); a timing stops
//! as soon as its simulated clock passes the kept one's. Nothing in the steps depends on
//! the budget (the optimiser's runs get fixed budgets for their nested runs, and no
//! anytime rounds); the deadline only cuts the sequence: a step it interrupts (a
//! timing, or an optimiser's run) is dropped, and none follows. So the result is the
//! mapping kept after the steps completed, a function of the seed and of their number,
//! and a run with a later deadline, which completes at least as many steps, never keeps
//! a mapping the model times higher. When no step completed, the first candidate of
//! the sequence is returned untimed (the first structured candidate within the bar;
//! without one, the first start within it, or the optimiser's mapping when no start was
//! given and its run completed; the identity otherwise): deterministic, and the mapping a later deadline
//! times first. The structured candidates come first because they are built at once and
//! measured in milliseconds, and the bar is known before any timing; one timing at
//! p = 1024 takes 0.5–7 s, so a small budget times them alone.

use super::algorithms::{Algorithm, AlgorithmSpec, Collective};
use super::candidates::Scored;
use super::fluid::RoundModel;
use super::machine::{MapMachine, NetKind};
use super::metrics::Metrics;
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
    for (a, b) in tile_shapes(rows, cols, n) {
        let (tr, tc) = (rows / a, cols / b);
        let tiled = |node: &dyn Fn(usize, usize) -> usize| tiled(rows, cols, (a, b), node);
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

/// The node tile shapes `(a, b)` of an `rows × cols` grid on nodes of `n` slots:
/// `a·b = n`, `a | rows`, `b | cols`, `a, b ≥ 2`, the widest first.
fn tile_shapes(rows: usize, cols: usize, n: usize) -> Vec<(usize, usize)> {
    (2..n)
        .map(|a| (a, n / a))
        .filter(|&(a, b)| a * b == n && b >= 2 && rows % a == 0 && cols % b == 0)
        .collect()
}

/// The grid `rows × cols` in tiles `a × b`, tile `(x, y)` on node `node(x, y)`, each
/// tile row-major on its node's slots: task `t = i·cols + j` on slot `map[t]`.
fn tiled(
    rows: usize,
    cols: usize,
    (a, b): (usize, usize),
    node: &dyn Fn(usize, usize) -> usize,
) -> Vec<usize> {
    (0..rows * cols)
        .map(|t| {
            let (i, j) = (t / cols, t % cols);
            node(i / a, j / b) * a * b + (i % a) * b + j % b
        })
        .collect()
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

/// The tile orders that nest: for each node tile shape `a × b` of [`structured`] whose
/// tile grid `R × C` has sides that are powers of two, every interleaving of the tile
/// row's `log2 R` bits and the tile column's `log2 C` bits into the node index, each
/// index's bits kept in their order (`C(log2 R + log2 C, log2 C)` orders, row-major
/// among them): tile `(x, y)` on the node whose bit `k` is the next bit of `x` where
/// the order has `R` and of `y` where it has `C`. On a machine whose node numbers follow
/// its switches (consecutive nodes under one switch, consecutive switches in one pod),
/// the low node bits pick a node under a switch and the high ones a pod, so each order
/// nests blocks of tiles: one per switch, one per pod. Named by the order, lowest node
/// bit first (`tiles 2x4, nested CRCCRRR`).
pub(crate) fn interleaved(rows: usize, cols: usize, n: usize) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    for (a, b) in tile_shapes(rows, cols, n) {
        let (tr, tc) = (rows / a, cols / b);
        if !tr.is_power_of_two() || !tc.is_power_of_two() {
            continue;
        }
        let (rb, cb) = (tr.trailing_zeros() as usize, tc.trailing_zeros() as usize);
        let bits = rb + cb;
        // `mask` bit k set: node bit k is the tile column's next bit
        for mask in 0usize..1 << bits {
            if mask.count_ones() as usize != cb {
                continue;
            }
            let order: String = (0..bits)
                .map(|k| if mask >> k & 1 == 1 { 'C' } else { 'R' })
                .collect();
            let node = |x: usize, y: usize| -> usize {
                let (mut xi, mut yi, mut v) = (0, 0, 0);
                for k in 0..bits {
                    let bit = if mask >> k & 1 == 1 {
                        yi += 1;
                        y >> (yi - 1) & 1
                    } else {
                        xi += 1;
                        x >> (xi - 1) & 1
                    };
                    v |= bit << k;
                }
                v
            };
            let map = tiled(rows, cols, (a, b), &node);
            out.push((format!("tiles {a}x{b}, nested {order}"), map));
        }
    }
    out
}

/// The bar a mapping must meet to be kept by [`choose`]: its hop-bytes and its
/// busiest link (the machine's link model, [`Metrics::max_link_time`]) no more than
/// these.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bar {
    /// Hop-bytes at most.
    pub(crate) hop_bytes: u128,
    /// Busiest link at most, seconds (a relative `1e-9` more for the rounding of the
    /// loads' sums).
    pub(crate) max_link_time: f64,
}

impl Bar {
    /// A bar every mapping meets.
    #[cfg(test)]
    pub(crate) const NONE: Bar = Bar {
        hop_bytes: u128::MAX,
        max_link_time: f64::INFINITY,
    };

    /// Whether `x` meets the bar.
    pub(crate) fn admits(&self, x: &Metrics) -> bool {
        x.hop_bytes <= self.hop_bytes && x.max_link_time <= self.max_link_time * (1.0 + 1e-9)
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

/// The candidates timed first (step 1 of the module docs) and the bar of the
/// sequence: the distinct structured mappings of `spec`'s process grid on `m`
/// ([`structured`], then [`interleaved`]), or, when there is none, the distinct
/// `starts`; of these, those of the least hop-bytes, and of those, the ones of the
/// least busiest link, in that order. The bar is those two least values. Candidates
/// that put every communicating pair of `p` (each message) as many hops apart as an
/// earlier candidate does are dropped (on a fat tree: the same mapping up to the order
/// of the nodes under a switch, of the switches in a pod, or of the pods).
pub(crate) fn first_candidates(
    p: &Pattern,
    spec: &AlgorithmSpec,
    m: &MapMachine,
    starts: &[Scored],
) -> (Vec<(String, Perm)>, Bar) {
    let mut all: Vec<(String, Perm)> = Vec::new();
    let n = m.ranks_per_node();
    let built = structured(spec.rows, spec.cols, n)
        .into_iter()
        .chain(interleaved(spec.rows, spec.cols, n));
    for (name, map) in built {
        if let Ok(perm) = Perm::from_forward(map) {
            if !all.iter().any(|(_, q)| *q == perm) {
                all.push((name, perm));
            }
        }
    }
    if all.is_empty() {
        for s in starts {
            if !all.iter().any(|(_, q)| *q == s.map) {
                all.push((s.origin.clone(), s.map.clone()));
            }
        }
    }
    // each candidate's hops per message, and its hop-bytes
    let mut seen: Vec<Vec<u32>> = Vec::new();
    let mut least: Vec<(String, Perm)> = Vec::new();
    let mut least_hb = u128::MAX;
    for (name, map) in all {
        let hops: Vec<u32> = p
            .edges()
            .iter()
            .map(|e| {
                let node = |t: u32| m.node_of_slot(map.apply(t as usize));
                m.hops(node(e.src), node(e.dst))
            })
            .collect();
        if seen.contains(&hops) {
            continue;
        }
        let hb: u128 = p
            .edges()
            .iter()
            .zip(&hops)
            .map(|(e, &h)| u128::from(e.bytes) * u128::from(h))
            .sum();
        seen.push(hops);
        if hb < least_hb {
            least_hb = hb;
            least.clear();
        }
        if hb == least_hb {
            least.push((name, map));
        }
    }
    // of those, the least busiest link
    let links: Vec<f64> = least
        .iter()
        .map(|(_, q)| {
            Scored::new(p, m, q.clone(), String::new())
                .metrics
                .max_link_time
        })
        .collect();
    let least_link = links.iter().copied().fold(f64::INFINITY, f64::min);
    let bar = Bar {
        hop_bytes: least_hb,
        max_link_time: least_link,
    };
    let fixed = least
        .into_iter()
        .zip(links)
        .filter(|(_, l)| *l <= least_link * (1.0 + 1e-9))
        .map(|(c, _)| c)
        .collect();
    (fixed, bar)
}

/// The sequence of the module docs for `p`, the pattern of `spec`, on `m`: the
/// candidates `fixed` ([`first_candidates`]), then the optimiser's runs `run(0)`,
/// `run(1)`, …, each timed by the staged model when it meets `bar` (a run's mapping
/// above it counts as one not faster), within `cut`.
///
/// # Errors
/// Those of `run`.
pub(crate) fn choose(
    p: &Pattern,
    m: &MapMachine,
    spec: &AlgorithmSpec,
    (fixed, bar): (Vec<(String, Perm)>, Bar),
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
        if crate::clock::now() >= deadline {
            // the run may have been cut short: dropped, and nothing follows
            break;
        }
        tried += run_tried;
        let origin = match r {
            0 => s.origin.clone(),
            _ => format!("restart {r}: {}", s.origin),
        };
        let timed_before = fixed.iter().any(|(_, q)| *q == s.map) || seen.contains(&s.map);
        let t = if timed_before || !bar.admits(&s.metrics) {
            // timed already, or above the bar: not kept, not timed
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
    use std::time::Instant;

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

    /// The candidates' names, in order.
    fn names_of(c: &[(String, Vec<usize>)]) -> Vec<&str> {
        c.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn skewed_rows_and_tiles_by_hand_on_a_4x4_grid() {
        // nodes of 4 slots: tiles 2x2, then skewed by 2, by 1
        let c = structured(4, 4, 4);
        assert_eq!(
            names_of(&c),
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
                std::thread::sleep(deadline.saturating_duration_since(crate::clock::now()));
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok((Scored::new(&p, &m, runs[r].clone(), format!("run {r}")), 1))
        };
        let cut = Cut {
            deadline,
            max_steps,
            trace: Some(&mut trace),
        };
        let c = choose(&p, &m, s, (fixed.to_vec(), Bar::NONE), &mut run, cut).unwrap();
        (c.best, trace, asked)
    }

    #[test]
    fn the_sequence_keeps_the_least_time_and_a_cut_run_is_the_prefix_it_timed() {
        let m = machine();
        let far = crate::clock::now() + Duration::from_secs(3600);
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
            // the structured candidates of 8 x 8 on nodes of 4, distinct
            let mut q: Vec<Perm> = Vec::new();
            for (_, map) in structured(8, 8, 4) {
                let perm = Perm::from_forward(map).unwrap();
                if !q.contains(&perm) {
                    q.push(perm);
                }
            }
            assert_eq!(q.len(), 4, "{}", a.name());
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
            let (late, _, asked) = scripted(&s, &fixed, &runs, (crate::clock::now(), None, None));
            assert_eq!((&late.map, asked.len()), (&fixed[0].1, 0));
            // a run the deadline interrupts is dropped, and nothing follows: what the
            // fixed ones kept (when all were timed before the deadline)
            let soon = crate::clock::now() + Duration::from_secs(2);
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
    fn without_structured_candidates_the_starts_of_the_least_measures_come_first() {
        let m = machine();
        let s = spec(Algorithm::Fox, 8);
        let p = Pattern::algorithm(&s).unwrap();
        let starts: Vec<Scored> = [3, 4, 3]
            .iter()
            .map(|&k| Scored::new(&p, &m, scrambled(64, k), format!("start {k}")))
            .collect();
        // the 8 x 8 grid on nodes of 4 has structured candidates: the starts are not used
        let (f, _) = first_candidates(&p, &s, &m, &starts);
        assert!(!f.is_empty());
        assert!(f.iter().all(|(n, _)| n.starts_with("tiles 2x2")), "{f:?}");
        // one slot per node on the k = 4 fat tree (a 4 x 4 grid): none; the distinct
        // starts of the least hop-bytes, then of the least busiest link, instead
        let one = MapMachine::network(test_fat_tree(4), None, Default::default(), 1).unwrap();
        let s = spec(Algorithm::Fox, 4);
        let p = Pattern::algorithm(&s).unwrap();
        assert!(structured(4, 4, 1).is_empty() && interleaved(4, 4, 1).is_empty());
        let starts: Vec<Scored> = [3, 4, 3, 5, 6, 7]
            .iter()
            .map(|&k| Scored::new(&p, &one, scrambled(16, k), format!("start {k}")))
            .chain([Scored::new(&p, &one, Perm::identity(16), "packed".into())])
            .collect();
        let (f, bar) = first_candidates(&p, &s, &one, &starts);
        let hb = starts.iter().map(|x| x.metrics.hop_bytes).min().unwrap();
        let link = starts
            .iter()
            .filter(|x| x.metrics.hop_bytes == hb)
            .map(|x| x.metrics.max_link_time)
            .fold(f64::INFINITY, f64::min);
        assert_eq!(bar.hop_bytes, hb);
        assert!((bar.max_link_time - link).abs() <= 1e-12 * link);
        let want: Vec<&str> = starts
            .iter()
            .filter(|x| x.metrics.hop_bytes == hb && x.metrics.max_link_time <= link * (1.0 + 1e-9))
            .map(|x| x.origin.as_str())
            .collect();
        let names: Vec<&str> = f.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, want);
        // the scrambled mappings differ: at least one start is above the bar
        assert!(names.len() < 6, "{names:?}");
    }

    #[test]
    fn nested_tile_orders_by_hand_on_an_8x8_grid() {
        // nodes of 4: tiles 2x2 on a 4 x 4 tile grid, 2 row bits and 2 column bits:
        // C(4, 2) = 6 orders, lowest node bit first
        let c = interleaved(8, 8, 4);
        assert_eq!(
            names_of(&c),
            [
                "tiles 2x2, nested CCRR",
                "tiles 2x2, nested CRCR",
                "tiles 2x2, nested RCCR",
                "tiles 2x2, nested CRRC",
                "tiles 2x2, nested RCRC",
                "tiles 2x2, nested RRCC"
            ]
        );
        // CCRR: the node is y + 4x, row-major, as structured's "tiles 2x2"
        let row_major = structured(8, 8, 4)
            .into_iter()
            .find(|(n, _)| n == "tiles 2x2")
            .unwrap();
        assert_eq!(c[0].1, row_major.1);
        // CRCR: node bits y0 x0 y1 x1; tile (1, 2) (tasks (2..4, 4..6)): x = 01, y = 10,
        // node 0b0110 = 6, slots 24..28
        let at = |i: usize, j: usize| c[1].1[i * 8 + j];
        assert_eq!([at(2, 4), at(2, 5), at(3, 4), at(3, 5)], [24, 25, 26, 27]);
        // tile (3, 1): x = 11, y = 01: node 0b1011 = 11
        assert_eq!(at(6, 2), 44);
        // RRCC: the node is x + 4y, column-major tiles: tile (1, 2) on node 9
        assert_eq!(c[5].1[2 * 8 + 4], 36);
        for (_, map) in &c {
            assert!(Perm::from_forward(map.clone()).is_ok());
        }
        // no power-of-two tile grid: none (6 x 6 on nodes of 4: a 3 x 3 tile grid)
        assert!(interleaved(6, 6, 4).is_empty());
        // 8 slots per node on 32 x 32: 2x4 tiles (16 x 8, 4 + 3 bits) and 4x2 tiles
        // (8 x 16): 35 orders each
        assert_eq!(interleaved(32, 32, 8).len(), 70);
    }

    #[test]
    fn the_first_candidates_have_the_least_hop_bytes_of_all_structured_ones() {
        // each algorithm on 8 x 8, the k = 4 fat tree x 4: the candidates timed first have
        // the least hop-bytes of every structured mapping (evaluated afresh), and of
        // those the least busiest link
        let m = machine();
        for s in Algorithm::ALL.map(|a| spec(a, 8)) {
            let (a, p) = (s.algorithm, Pattern::algorithm(&s).unwrap());
            let (f, bar) = first_candidates(&p, &s, &m, &[]);
            assert!(!f.is_empty());
            let all: Vec<Metrics> = structured(8, 8, 4)
                .into_iter()
                .chain(interleaved(8, 8, 4))
                .map(|(_, q)| crate::evaluate(&p, &m, &Perm::from_forward(q).unwrap()))
                .collect();
            let hb = all.iter().map(|x| x.hop_bytes).min().unwrap();
            let link = all
                .iter()
                .filter(|x| x.hop_bytes == hb)
                .map(|x| x.max_link_time)
                .fold(f64::INFINITY, f64::min);
            assert_eq!(bar.hop_bytes, hb, "{}", a.name());
            for (name, q) in &f {
                let x = crate::evaluate(&p, &m, q);
                assert_eq!(x.hop_bytes, hb, "{} {name}", a.name());
                assert!(
                    x.max_link_time <= link * (1.0 + 1e-9),
                    "{} {name}",
                    a.name()
                );
            }
            // some structured mapping is above the bar: the bar does choose
            assert!(all.iter().any(|x| !bar.admits(x)), "{}", a.name());
        }
    }

    #[test]
    fn a_run_above_the_bar_is_not_kept_however_fast() {
        // the scripted sequence: a slow fixed mapping, then runs of a tile order the
        // model times lower; kept when its measures are within the bar (equal included),
        // not when it is above on hop-bytes or on the busiest link alone
        let (m, s) = (machine(), spec(Algorithm::Fox, 8));
        let (p, prog) = (
            Pattern::algorithm(&s).unwrap(),
            Program::algorithm(&s).unwrap(),
        );
        let t = |map: &Perm| program_time(&prog, &m, map, &RoundModel::simgrid_like());
        let slow = scrambled(64, 31);
        let fast = interleaved(8, 8, 4)
            .into_iter()
            .map(|(_, q)| Perm::from_forward(q).unwrap())
            .find(|q| t(q) < t(&slow))
            .expect("a tile order faster than a scrambled mapping");
        let x = Scored::new(&p, &m, fast.clone(), String::new()).metrics;
        let run = |bar: Bar| {
            let mut go = |r: usize| -> Result<(Scored, usize)> {
                let q = if r == 0 { &fast } else { &slow };
                Ok((Scored::new(&p, &m, q.clone(), format!("run {r}")), 1))
            };
            let cut = Cut {
                deadline: crate::clock::now() + Duration::from_secs(3600),
                max_steps: None,
                trace: None,
            };
            let fixed = vec![("slow".to_string(), slow.clone())];
            choose(&p, &m, &s, (fixed, bar), &mut go, cut)
                .unwrap()
                .best
                .map
        };
        assert_eq!(run(Bar::NONE), fast);
        let exact = Bar {
            hop_bytes: x.hop_bytes,
            max_link_time: x.max_link_time,
        };
        assert_eq!(run(exact), fast);
        let hb_below = Bar {
            hop_bytes: x.hop_bytes - 1,
            ..exact
        };
        assert_eq!(run(hb_below), slow);
        let link_below = Bar {
            max_link_time: x.max_link_time * (1.0 - 1e-6),
            ..exact
        };
        assert_eq!(run(link_below), slow);
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
                deadline: crate::clock::now() + Duration::from_secs(3600),
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
        let fixed = first_candidates(&p, &s, &m, &starts).0.len();
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
