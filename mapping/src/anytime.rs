//! The anytime phase of the optimiser: kicks and refinement while the budget lasts.
//!
//! From the optimiser's chosen mapping, round `r = 0, 1, 2, …` (its own generator,
//! seeded from the seed and `r`):
//! 1. **kick**: a few tasks, each moved onto the node of one of its neighbours in the
//!    pattern (swapped with a task of that node), the number of moves cycling 2…9;
//! 2. swap refinement on the bandwidth-weighted hop-bytes ([`super::refine`]) — above
//!    2048 tasks only around the kicked tasks (a work list of at most 4096 tasks, see
//!    `refine_around`), so that a round's work does not grow with the pattern;
//! 3. balancing swaps towards the current best's hop-bytes and busiest link (at most
//!    1024 tries above 2048 tasks).
//!
//! **The objective order**: a round's mapping replaces the best only when it is no
//! worse on both hop-bytes and the busiest link time and better on one (Pareto
//! improvement; on the optimiser's restart path the caller's order instead, see
//! [`improve_judged`] and `restarts.rs`). A round that reaches the deadline before it
//! ends is dropped. The phase does not run at the hop-bytes bound, nor above 16 384
//! tasks.
//!
//! So the result is a function of the seed and of the number of rounds completed: each
//! round's outcome depends only on `(seed, r, best so far)`, and the best only improves.
//! A larger budget runs the same rounds and more, so for the same seed it is never
//! worse on either measure (given the rounds before it complete, which wall-clock noise
//! can only delay). The phase also ends after [`patience`] rounds in a row without
//! improvement, a number that grows with the budget (so a larger budget again runs a
//! superset of the rounds).

use std::time::{Duration, Instant};

use super::candidates::Scored;
use super::machine::MapMachine;
use super::metrics::evaluate_known;
use super::pattern::Pattern;
use super::strategy;
use super::swaps::{refine, refine_around, Tracked};
use copr::lap::Perm;
use copr::rng::SplitMix;

/// Patterns above this many tasks skip the phase (as the optimiser refines them once,
/// so that 10⁵ tasks stay well under a second).
const LARGEST: usize = 16_384;

/// Above this many tasks a round refines only around the kicked tasks.
const LOCAL_ABOVE: usize = 2048;

/// Tasks looked at by a local round's refinement, at most.
const LOCAL_LIMIT: usize = 4096;

/// Balancing tries of a local round, at most.
const LOCAL_TRIES: usize = 1024;

/// Rounds in a row without improvement after which the phase stops: 2 per second of
/// budget, at least 2 and at most 200 (nondecreasing in the budget). Above
/// [`LOCAL_ABOVE`] tasks a round that gains less than 0.1 % on both measures counts as
/// one without improvement (its mapping is kept all the same). A round's work is
/// bounded above [`LOCAL_ABOVE`] tasks (it refines around the kicked tasks only), so
/// that the phase ends soon after it stops finding improvements.
pub(crate) fn patience(budget: Duration) -> usize {
    ((budget.as_secs_f64() * 2.0) as usize).clamp(2, 200)
}

/// Runs rounds from `best` until `deadline`, `patience` failures in a row, the
/// hop-bytes bound, or `max_rounds` rounds; returns the best mapping and the rounds
/// completed.
///
/// # Complexity
/// `O(n + m·h + L)` to start (the best mapping's link loads); per round one kick
/// `O(moves)`, refinement and balancing (see their docs), and the loads moved with
/// the tasks the round moved, `O(n + L)` plus `O(deg·h)` per moved task (twice when
/// the round is not kept); one full evaluation `O(m·h + L)` of the result.
pub(crate) fn improve(
    p: &Pattern,
    m: &MapMachine,
    best: Scored,
    seed: u64,
    deadline: Instant,
    patience: usize,
    max_rounds: Option<usize>,
) -> (Scored, usize) {
    let limits = Limits {
        deadline,
        patience,
        max_rounds,
    };
    improve_judged(p, m, best, seed, limits, &mut |r| r.pareto)
}

/// Where [`improve_judged`] stops: the deadline, `patience` rounds in a row without
/// improvement, or `max_rounds` rounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// A round that reaches it is dropped, and the phase ends.
    pub(crate) deadline: Instant,
    /// Rounds in a row without improvement that end the phase.
    pub(crate) patience: usize,
    /// Rounds at most.
    pub(crate) max_rounds: Option<usize>,
}

/// A completed round's mapping, as [`improve_judged`] shows it to its judge.
pub(crate) struct Round<'a> {
    /// The round's mapping.
    pub(crate) map: &'a Perm,
    /// Its origin, should it be kept.
    pub(crate) origin: &'a str,
    /// Its hop-bytes.
    pub(crate) hop_bytes: u128,
    /// Its busiest link time, seconds.
    pub(crate) max_link_time: f64,
    /// Whether it is a Pareto improvement on the best so far (the rule of
    /// [`improve`]).
    pub(crate) pareto: bool,
}

/// [`improve`] with another rule: after each completed round, `keep(round)` says
/// whether the round's mapping replaces the best so far (it is called once per
/// completed round, in order; [`improve`]'s rule is `round.pareto`). A kept round
/// counts as an improvement for the patience.
///
/// # Complexity
/// As [`improve`], plus the judge's.
pub(crate) fn improve_judged(
    p: &Pattern,
    m: &MapMachine,
    mut best: Scored,
    seed: u64,
    limits: Limits,
    keep: &mut dyn FnMut(Round<'_>) -> bool,
) -> (Scored, usize) {
    let Limits {
        deadline,
        patience,
        max_rounds,
    } = limits;
    let n = p.tasks();
    let k = m.ranks_per_node();
    if m.nodes() < 2 || !(4..=LARGEST).contains(&n) || p.edges().is_empty() {
        return (best, 0);
    }
    let (off, adj) = p.undirected_ref();
    let bound = best.metrics.hop_bytes_bound;
    // the best mapping's loads, moved to each round's mapping and back: a round's
    // score costs the messages of the tasks it moved, not a full evaluation (the
    // same numbers as one)
    let mut tracked = Tracked::new(p, m, &best.map);
    let (mut best_hb, mut best_lt) = (best.metrics.hop_bytes, best.metrics.max_link_time);
    let mut improved = false;
    let mut failures = 0;
    let mut rounds = 0;
    while Instant::now() < deadline
        && failures < patience
        && max_rounds.is_none_or(|r| rounds < r)
        // at the hop-bytes bound only the busiest link could improve, which the
        // passes before this phase already aimed at
        && best_hb > bound
    {
        let mut rng = SplitMix(
            seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(rounds as u64 + 1),
        );
        let mut fwd = best.map.forward().to_vec();
        let mut task_at = vec![usize::MAX; m.slots()];
        for (t, &s) in fwd.iter().enumerate() {
            task_at[s] = t;
        }
        let mut kicked: Vec<usize> = Vec::new();
        for _ in 0..2 + rounds % 8 {
            let x = (rng.next_u64() % n as u64) as usize;
            let nbs = &adj[off[x]..off[x + 1]];
            if nbs.is_empty() {
                continue;
            }
            let y = nbs[(rng.next_u64() % nbs.len() as u64) as usize].0 as usize;
            let node = m.node_of_slot(fwd[y]);
            if node == m.node_of_slot(fwd[x]) {
                continue;
            }
            let slot = node * k + (rng.next_u64() % k as u64) as usize;
            let (sx, z) = (fwd[x], task_at[slot]);
            fwd[x] = slot;
            task_at[slot] = x;
            task_at[sx] = z;
            if z != usize::MAX {
                fwd[z] = sx;
                kicked.push(z);
            }
            kicked.push(x);
        }
        let mut map = strategy::perm(fwd);
        let local = n > LOCAL_ABOVE;
        if local {
            // the kicked tasks and their neighbours first
            let mut seeds = kicked.clone();
            for &t in &kicked {
                seeds.extend(adj[off[t]..off[t + 1]].iter().map(|e| e.0 as usize));
            }
            let scale = best_hb as f64;
            refine_around(m, (off, adj), &mut map, &seeds, (LOCAL_LIMIT, scale));
        } else {
            refine(p, m, &mut map, &mut rng, deadline, 20);
        }
        tracked.move_to(&map);
        if tracked.max_link_time() > best_lt {
            let tries = if local {
                LOCAL_TRIES
            } else {
                (40 * n).min(60_000)
            };
            tracked.balance((best_hb, best_lt), &mut rng, deadline, tries);
            map = tracked.perm();
        }
        if Instant::now() >= deadline {
            break;
        }
        rounds += 1;
        let (hb, lt) = (tracked.hop_bytes(), tracked.max_link_time());
        let (hb0, lt0) = (best_hb, best_lt);
        let origin = match best.origin.find(" + kicks (") {
            Some(i) => &best.origin[..i],
            None => &best.origin,
        };
        let origin = format!("{origin} + kicks ({rounds} rounds)");
        let round = Round {
            map: &map,
            origin: &origin,
            hop_bytes: hb,
            max_link_time: lt,
            pareto: hb <= hb0 && lt <= lt0 && (hb < hb0 || lt < lt0),
        };
        if keep(round) {
            best.origin = origin;
            best.map = map;
            (best_hb, best_lt) = (hb, lt);
            improved = true;
            // above LOCAL_ABOVE tasks a gain below 0.1 % on both measures counts
            // as no improvement for the patience (the mapping is still kept)
            let small = n > LOCAL_ABOVE
                && hb as f64 >= hb0 as f64 * (1.0 - 1e-3)
                && lt >= lt0 * (1.0 - 1e-3);
            failures = if small { failures + 1 } else { 0 };
        } else {
            tracked.move_to(&best.map);
            failures += 1;
        }
    }
    if improved {
        best.metrics = evaluate_known(p, m, &best.map, bound);
    }
    (best, rounds)
}
