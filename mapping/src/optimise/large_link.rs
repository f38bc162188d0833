//! The busiest link of a graph of 2049–16 384 tasks traded for hop-bytes when one
//! task's messages load it ([`Run::hub_link_traded`]).
//!
//! On a power-law graph the busiest link is a first hop out of the node of a hub:
//! under dimension-order routing every message from that node to a node of another
//! x coordinate leaves along x, so the hub's messages to nearly half the machine
//! share one link (more than half of its bytes on the BA graphs of cases j at 4096
//! tasks are the hub's). Which link that
//! is, and how busy, is left to where the hub's partners happen to land: the
//! swaps for hop-bytes do not see it, and the other link steps of `Run::polish`
//! keep nothing there (their balancing spends its allowance of hop-bytes and the
//! trade is refused). Here balancing swaps aim below the link with room in
//! hop-bytes, then swaps holding the link take the hop-bytes back.

use std::collections::HashMap;

use super::{Run, Scored};
use crate::machine::{MapMachine, NetKind};
use crate::metrics::link_loads;
use crate::pattern::Pattern;
use crate::swaps::{refine_within, Tracked};
use copr::lap::Perm;
use copr::rng::SplitMix;

/// A task whose messages carry at least this share of the busiest link's bytes
/// makes the link a hub's ([`hub_share`]): 0.54–0.83 on the power-law graphs of
/// cases j, 0.04–0.08 on their SpMV graphs.
const HUB_SHARE: f64 = 0.25;

/// The chosen mapping's busiest link, relative to the least among the candidates,
/// below which the step does not run (already lowest by this margin).
const LEAD_MARGIN: f64 = 0.05;

/// The link each round aims at, relative to the busiest.
const HUB_STEP: f64 = 0.85;

/// How much more hop-bytes a round's balancing may spend.
const HUB_ROOM: f64 = 0.08;

/// The relative rise in hop-bytes given for a relative drop of the busiest link.
const HUB_WORTH: f64 = 0.25;

/// Balancing tries of each round: the first round's, then the second's.
const HUB_TRIES: [usize; 2] = [6000, 2000];

/// Passes of the swaps holding the link after each round's balancing.
const HUB_PASSES: usize = 1;

impl Run<'_> {
    /// A graph of 2049–16 384 tasks on a torus of nodes of several slots whose
    /// busiest link is not below the least among the candidates by [`LEAD_MARGIN`]
    /// and carries at least [`HUB_SHARE`] of its bytes for one task: at most two
    /// rounds ([`HUB_TRIES`]) of balancing swaps aiming at a link [`HUB_STEP`] times
    /// the busiest with up to [`HUB_ROOM`] more hop-bytes, then one pass of swaps
    /// holding the new link ([`refine_within`]). A round's mapping replaces `best`
    /// when its link is lower, its hop-bytes rose by at most [`HUB_WORTH`] of the
    /// link's relative drop and it stays within the best start's `(hb0, lt0)`; the
    /// second round runs only after the first was kept. Called after the anytime
    /// rounds (the last step before the cores are arranged).
    ///
    /// # Complexity
    /// [`hub_share`] once, then per round `O(n + m·h + L)` to score and start, the
    /// balancing's tries (each `O(deg·h)`) and one pass of [`refine_within`]: a
    /// count of work, never a share of the clock (only the deadline cuts it).
    pub(super) fn hub_link_traded(&self, mut best: Scored, (hb0, lt0): (u128, f64)) -> Scored {
        let (p, m, deadline) = (self.p, self.m, self.deadline);
        let leads = |l: f64| best.metrics.max_link_time < l * (1.0 - LEAD_MARGIN);
        let applies = matches!(m.kind(), NetKind::Torus(_))
            && m.ranks_per_node() > 1
            && (2049..=16_384).contains(&p.tasks())
            && Tracked::fits(p, m)
            && best.metrics.max_link_time > 0.0
            && self.front.is_some_and(|(_, l)| !leads(l));
        if !applies || hub_share(p, m, &best.map) < HUB_SHARE {
            return best;
        }
        let mut rng = SplitMix(self.opts.seed ^ 0x6875_6273);
        let mut tracked = Tracked::new(p, m, &best.map);
        for tries in HUB_TRIES {
            let (hb, lt) = (best.metrics.hop_bytes, best.metrics.max_link_time);
            if crate::clock::now() >= deadline {
                break;
            }
            let room = hb.saturating_add((hb as f64 * HUB_ROOM) as u128);
            tracked.balance((room, lt * HUB_STEP), &mut rng, deadline, tries);
            let held = tracked.max_link_time();
            let mut map = tracked.perm();
            if held < lt {
                refine_within(p, m, &mut map, held, &mut rng, deadline, HUB_PASSES);
            }
            let origin = best.origin.trim_end_matches(", hub's link traded");
            let s = self.score(map, format!("{origin}, hub's link traded"));
            if !super::trade_kept((hb, lt), &s, HUB_WORTH, (hb0, lt0)) {
                break;
            }
            best = s;
            tracked.move_to(&best.map);
        }
        best
    }
}

/// The largest share of the busiest link's bytes that the messages of one task
/// carry (a message counts for both its tasks); 0 when no message crosses a link.
///
/// # Complexity
/// `O(n + m·h + L)`, and one route per pair of nodes the messages join.
fn hub_share(p: &Pattern, m: &MapMachine, map: &Perm) -> f64 {
    let rpn = m.ranks_per_node();
    let node: Vec<u32> = (0..p.tasks())
        .map(|t| (map.apply(t) / rpn) as u32)
        .collect();
    let load = link_loads(p, m, &node);
    let inv = m.link_inv_bandwidths();
    let busiest = (0..load.len())
        .max_by(|&a, &b| (load[a] as f64 * inv[a]).total_cmp(&(load[b] as f64 * inv[b])));
    let Some(l) = busiest.filter(|&l| load[l] > 0) else {
        return 0.0;
    };
    let mut through: HashMap<(u32, u32), bool> = HashMap::new();
    let mut carried = vec![0u128; p.tasks()];
    for e in p.edges() {
        let (a, b) = (node[e.src as usize], node[e.dst as usize]);
        if a == b {
            continue;
        }
        let passes = *through.entry((a, b)).or_insert_with(|| {
            let mut on = false;
            m.for_route(a as usize, b as usize, |k| on |= k == l);
            on
        });
        if passes {
            carried[e.src as usize] += u128::from(e.bytes);
            carried[e.dst as usize] += u128::from(e.bytes);
        }
    }
    let most = carried.iter().copied().max().unwrap_or(0);
    most as f64 / load[l] as f64
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::*;
    use crate::candidates::Options;
    use crate::pattern::Edge;
    use crate::strategy;
    use std::time::Duration;

    fn pattern(n: usize, edges: &[(u32, u32, u64)]) -> Pattern {
        let edges = edges
            .iter()
            .flat_map(|&(a, b, bytes)| {
                [
                    Edge {
                        src: a,
                        dst: b,
                        bytes,
                    },
                    Edge {
                        src: b,
                        dst: a,
                        bytes,
                    },
                ]
            })
            .collect();
        Pattern::from_edges(n, edges, "test".into()).expect("valid edges")
    }

    #[test]
    fn hub_share_by_hand() {
        // a ring of 5 nodes (x only, no ties in the routes), one slot each, task t
        // on node t
        let m = crate::torus_machine(vec![5], None, None, 1).expect("torus");
        let id = strategy::perm((0..5).collect());
        // 0-1 (5 bytes) and 2-3 (3): the busiest links (5) carry one message of
        // tasks 0 and 1 alone
        let p = pattern(5, &[(0, 1, 5), (2, 3, 3)]);
        assert_eq!(hub_share(&p, &m, &id), 1.0);
        // 0-2 and 1-2 (4 each): 1 x+ carries 0 -> 2 and 1 -> 2 (8), 2 x- their
        // answers: all of it task 2's messages, half task 0's, half task 1's
        let p = pattern(5, &[(0, 2, 4), (1, 2, 4)]);
        assert_eq!(hub_share(&p, &m, &id), 1.0);
        // 0-2 and 1-3 (4 each): 1 x+ carries 0 -> 2 and 1 -> 3 (8), 2 x- their
        // answers: each task's messages are half of it
        let p = pattern(5, &[(0, 2, 4), (1, 3, 4)]);
        assert_eq!(hub_share(&p, &m, &id), 0.5);
        // no message leaves a node: no busiest link
        let two = crate::torus_machine(vec![2], None, None, 4).expect("torus");
        let p = pattern(8, &[(0, 1, 7)]);
        assert_eq!(hub_share(&p, &two, &strategy::perm((0..8).collect())), 0.0);
    }

    /// A preferential-attachment graph of `n` tasks, each new task joined to `k`
    /// earlier ones chosen in proportion to their degree (4 KiB to 256 KiB a pair).
    fn attached(n: usize, k: usize, seed: u64) -> Pattern {
        let mut rng = SplitMix(seed);
        let mut ends: Vec<u32> = Vec::new();
        let mut pairs: Vec<(u32, u32, u64)> = Vec::new();
        let bytes = |rng: &mut SplitMix| 4096 << (rng.next_u64() % 7);
        for a in 0..=k as u32 {
            for b in 0..a {
                pairs.push((b, a, bytes(&mut rng)));
                ends.extend([a, b]);
            }
        }
        for v in (k + 1) as u32..n as u32 {
            let mut chosen: Vec<u32> = Vec::new();
            while chosen.len() < k {
                let u = ends[(rng.next_u64() % ends.len() as u64) as usize];
                if !chosen.contains(&u) {
                    chosen.push(u);
                }
            }
            for u in chosen {
                pairs.push((u, v, bytes(&mut rng)));
                ends.extend([u, v]);
            }
        }
        // the tasks renamed at random (the hubs, the first tasks, on nodes of
        // their own)
        let mut name: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut name);
        let pairs: Vec<(u32, u32, u64)> = pairs
            .into_iter()
            .map(|(a, b, w)| (name[a as usize], name[b as usize], w))
            .collect();
        pattern(n, &pairs)
    }

    /// The packed mapping refined for hop-bytes alone.
    fn hop_bytes_only(p: &Pattern, m: &MapMachine) -> Perm {
        let mut map = strategy::perm((0..p.tasks()).collect());
        let far = crate::clock::now() + Duration::from_secs(60);
        crate::swaps::refine(p, m, &mut map, &mut SplitMix(5), far, 4);
        map
    }

    #[test]
    fn a_hubs_link_is_traded_for_at_most_a_quarter_of_its_drop() {
        // 3072 tasks of a preferential-attachment graph (2 partners a new task) on
        // an 8x4x4 torus of 24 slots, from the mapping refined for hop-bytes alone:
        // the link falls by a sixth (1.19 when written) for 0.8 % more hop-bytes
        let m = crate::torus_machine(vec![8, 4, 4], None, None, 24).expect("torus");
        let p = attached(3072, 2, 11);
        let opts = Options {
            seed: 2,
            ..Options::default()
        };
        let mut r = run(&p, &m, &opts);
        let start = r.score(hop_bytes_only(&p, &m), "start".into());
        let (hb, lt) = (start.metrics.hop_bytes, start.metrics.max_link_time);
        // (half of the busiest link's bytes are one task's messages)
        let share = hub_share(&p, &m, &start.map);
        assert!(share >= HUB_SHARE, "{share}");
        // the least link among the candidates is the start's
        r.front = Some((hb, lt));
        let t = r.hub_link_traded(start.clone(), (u128::MAX, f64::INFINITY));
        let fresh = crate::metrics::evaluate(&p, &m, &t.map);
        assert_eq!(fresh.hop_bytes, t.metrics.hop_bytes);
        assert_eq!(fresh.max_link_time, t.metrics.max_link_time);
        let fell = lt / t.metrics.max_link_time;
        let grew = t.metrics.hop_bytes as f64 / hb as f64;
        assert!(fell > 1.1, "the link fell by {fell} only");
        // per kept round 1 + a <= 1 + w·x <= (1 - x)^(-w)
        assert!(
            grew <= fell.powf(HUB_WORTH) * (1.0 + 1e-9),
            "hop-bytes x{grew} for the link / {fell}"
        );
        assert!(t.origin.ends_with(", hub's link traded"), "{}", t.origin);
        // the best start's measures bound what is kept: none below the start's
        // hop-bytes here
        let held = r.hub_link_traded(start.clone(), (hb, f64::INFINITY));
        assert!(held.metrics.hop_bytes <= hb);
        // a link already lowest by more than the margin: nothing runs
        r.front = Some((hb, lt / (1.0 - LEAD_MARGIN) * 1.01));
        let same = r.hub_link_traded(start.clone(), (u128::MAX, f64::INFINITY));
        assert_eq!(same.map, start.map);
    }

    #[test]
    fn no_hub_no_trade() {
        // a ring of 3072 tasks, each pair alike: no task owns a quarter of a link
        let m = crate::torus_machine(vec![8, 4, 4], None, None, 24).expect("torus");
        let ring: Vec<(u32, u32, u64)> = (0..3072u32)
            .flat_map(|t| [(t, (t + 1) % 3072, 1 << 16), (t, (t + 97) % 3072, 1 << 16)])
            .collect();
        let p = pattern(3072, &ring);
        let opts = Options::default();
        let mut r = run(&p, &m, &opts);
        let start = r.score(strategy::perm((0..3072).collect()), "packed".into());
        assert!(hub_share(&p, &m, &start.map) < HUB_SHARE);
        r.front = Some((start.metrics.hop_bytes, start.metrics.max_link_time));
        let same = r.hub_link_traded(start.clone(), (u128::MAX, f64::INFINITY));
        assert_eq!(same.map, start.map);
        // and none at 2048 tasks or fewer (`Run::link_traded` is there)
        let hubbed = attached(2048, 2, 11);
        let m2 = crate::torus_machine(vec![8, 4, 4], None, None, 16).expect("torus");
        let mut r2 = run(&hubbed, &m2, &opts);
        let s2 = r2.score(hop_bytes_only(&hubbed, &m2), "start".into());
        r2.front = Some((s2.metrics.hop_bytes, s2.metrics.max_link_time));
        let same = r2.hub_link_traded(s2.clone(), (u128::MAX, f64::INFINITY));
        assert_eq!(same.map, s2.map);
    }
}
