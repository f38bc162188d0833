//! The time one round of a pattern's messages takes under a fluid network model:
//! every message starts at once, links share their bandwidth max-min fairly among
//! the messages crossing them (as SimGrid's network model does), and the round ends
//! when the last message arrives. Optionally ([`RoundModel`]) a link is shared in
//! inverse proportion to each route's length, as SimGrid's TCP-like models do.
//!
//! The busiest link's load ([`crate::Metrics::max_link_time`]) is a lower bound of
//! this time; the two differ when a link is left idle part of the round because the
//! messages still crossing it are slowed down elsewhere. Messages between ranks of
//! one node take `bytes / loopback_bandwidth` each, unshared (a `FATPIPE`, as
//! [`crate::simgrid`]'s platforms model the inside of a host). Latencies are not
//! counted (they are sub-microsecond on copr's machines, far below the rounds this
//! is used for).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use copr::lap::Perm;

use super::machine::MapMachine;
use super::pattern::Pattern;

/// A link's fair share waiting in the heap (smallest share first).
#[derive(PartialEq)]
struct Share(f64, u32);

impl Eq for Share {}

impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Share {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

/// How [`round_time`] shares links and prices messages inside a node.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundModel {
    /// Bytes per second of a message between two ranks of one node (unshared).
    pub loopback_bandwidth: f64,
    /// With `penalty_bytes`, makes sharing unfair to long routes: a message's share
    /// of a link is proportional to `1 / Σ_route (hop_penalty + penalty_bytes ·
    /// inv_bandwidth)`, as SimGrid's TCP-like models share bandwidth in inverse
    /// proportion to a route's latency plus `weight-S / bandwidth` per link. Both 0
    /// (the default): every message on a link gets the same share.
    pub hop_penalty: f64,
    /// See `hop_penalty` (bytes; SimGrid's SMPI model uses `network/weight-S` = 8775).
    pub penalty_bytes: f64,
}

impl Default for RoundModel {
    fn default() -> Self {
        Self {
            loopback_bandwidth: 1.0e11,
            hop_penalty: 0.0,
            penalty_bytes: 0.0,
        }
    }
}

impl RoundModel {
    /// The sharing of `smpirun` under [`crate::simgrid::SMPIRUN_FLAGS`] on copr's
    /// platforms, approximately: SMPI's `weight-S` of 8775 bytes per link, and a hop
    /// latency of 0.15 µs (the links' latencies are not in the machine's link table).
    pub fn simgrid_like() -> Self {
        Self {
            loopback_bandwidth: 1.0e11,
            hop_penalty: 1.5e-7,
            penalty_bytes: 8775.0,
        }
    }
}

/// Seconds until the last message of `p` under `map` arrives, every message sent at
/// once, with max-min fair sharing of every link ([`RoundModel`] says how fair);
/// messages inside a node take `bytes / loopback_bandwidth` each, unshared, and
/// latencies are left out. The busiest link's time ([`crate::Metrics::max_link_time`])
/// is a lower bound.
///
/// # Complexity
/// `O(E · (F·h + L) · log L)` for `F` messages between nodes of at most `h` links
/// each, `L` links and `E ≤ F` distinct arrival times: meant for patterns of a few
/// thousand messages.
pub fn round_time(p: &Pattern, m: &MapMachine, map: &Perm, model: &RoundModel) -> f64 {
    let inv = m.link_inv_bandwidths();
    let cap: Vec<f64> = inv
        .iter()
        .map(|&x| if x > 0.0 { 1.0 / x } else { f64::INFINITY })
        .collect();
    let mut inside = 0f64;
    let mut rem: Vec<f64> = Vec::new();
    let mut off: Vec<usize> = vec![0];
    let mut links: Vec<u32> = Vec::new();
    for e in p.edges() {
        let a = m.node_of_slot(map.apply(e.src as usize));
        let b = m.node_of_slot(map.apply(e.dst as usize));
        if e.bytes == 0 {
            continue;
        }
        if a == b {
            inside = inside.max(e.bytes as f64 / model.loopback_bandwidth);
            continue;
        }
        m.for_route(a, b, |l| links.push(l as u32));
        off.push(links.len());
        rem.push(e.bytes as f64);
    }
    let flows = rem.len();
    // share weights: 1, or the inverse of the route's penalty
    let w: Vec<f64> = (0..flows)
        .map(|f| {
            let pen: f64 = links[off[f]..off[f + 1]]
                .iter()
                .map(|&l| model.hop_penalty + model.penalty_bytes * inv[l as usize])
                .sum();
            if pen > 0.0 && pen.is_finite() {
                1.0 / pen
            } else {
                1.0
            }
        })
        .collect();
    // flows by link
    let nl = cap.len();
    let mut on: Vec<Vec<u32>> = vec![Vec::new(); nl];
    for f in 0..flows {
        for &l in &links[off[f]..off[f + 1]] {
            on[l as usize].push(f as u32);
        }
    }
    let mut active: Vec<bool> = vec![true; flows];
    let mut left = flows;
    let mut rate = vec![0f64; flows];
    let mut fixed = vec![false; flows];
    let mut cap_left = vec![0f64; nl];
    let mut count = vec![0f64; nl];
    let mut heap = BinaryHeap::new();
    let mut t = 0f64;
    while left > 0 {
        // max-min fair rates by progressive filling
        heap.clear();
        for l in 0..nl {
            cap_left[l] = cap[l];
            count[l] = on[l].iter().map(|&f| w[f as usize]).sum();
            if !on[l].is_empty() {
                heap.push(Share(cap_left[l] / count[l], l as u32));
            }
        }
        for f in 0..flows {
            fixed[f] = !active[f];
        }
        while let Some(Share(s, l)) = heap.pop() {
            let l = l as usize;
            if count[l] <= 0.0 || s != cap_left[l] / count[l] {
                continue; // stale
            }
            for &f in &on[l] {
                let f = f as usize;
                if fixed[f] {
                    continue;
                }
                fixed[f] = true;
                rate[f] = s * w[f];
                for &l2 in &links[off[f]..off[f + 1]] {
                    let l2 = l2 as usize;
                    cap_left[l2] = (cap_left[l2] - s * w[f]).max(0.0);
                    count[l2] -= w[f];
                    if count[l2] > 1e-12 * w[f] {
                        heap.push(Share(cap_left[l2] / count[l2], l2 as u32));
                    } else {
                        count[l2] = 0.0;
                    }
                }
            }
        }
        // to the next arrival
        let dt = (0..flows)
            .filter(|&f| active[f])
            .map(|f| rem[f] / rate[f])
            .fold(f64::INFINITY, f64::min);
        if !dt.is_finite() {
            break; // a message on links of no bandwidth never arrives
        }
        t += dt;
        for f in 0..flows {
            if !active[f] {
                continue;
            }
            rem[f] -= rate[f] * dt;
            if rem[f] <= 1e-6 {
                active[f] = false;
                left -= 1;
                for &l in &links[off[f]..off[f + 1]] {
                    let v = &mut on[l as usize];
                    if let Some(i) = v.iter().position(|&g| g as usize == f) {
                        v.swap_remove(i);
                    }
                }
            }
        }
    }
    t.max(inside)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{evaluate, Edge};

    fn ring(n: u32) -> MapMachine {
        crate::torus_machine(vec![n], None, None, 1).unwrap()
    }

    fn pattern(n: usize, e: &[(u32, u32, u64)]) -> Pattern {
        let edges = e
            .iter()
            .map(|&(src, dst, bytes)| Edge { src, dst, bytes })
            .collect();
        Pattern::from_edges(n, edges, "t".into()).unwrap()
    }

    #[test]
    fn one_link_drains_at_its_bandwidth() {
        // ring of 4, one rank per node: 0->1 and 0->2 (0 -> 1 -> 2, the tie goes
        // positive) share the link 0->1; 3000 bytes in all cross it
        let m = ring(4);
        let p = pattern(4, &[(0, 1, 1000), (0, 2, 2000)]);
        let id = Perm::identity(4);
        let inv = m.link_inv_bandwidths()[0];
        for model in [RoundModel::default(), RoundModel::simgrid_like()] {
            let t = round_time(&p, &m, &id, &model);
            assert!((t - 3000.0 * inv).abs() <= 1e-9 * t, "{t}");
        }
    }

    #[test]
    fn a_round_worked_out_by_hand() {
        // ring of 4, one rank per node, ties go positive. A: 0->1 (4000 bytes, link
        // 0->1); B: 0->2 (4000, links 0->1 and 1->2); C: 1->2 (1000, 1->2); D: 1->3
        // (3000, 1->2 and 2->3). Times in bytes at one link's bandwidth. Fair shares:
        // 1->2 holds three messages, so B, C, D run at 1/3 and A gets 2/3 of 0->1.
        // C ends at 3000 (A has 2000 left, B 3000, D 2000); then 1->2 holds B and D at
        // 1/2, and A gets the other 1/2 of 0->1: A and D end at 7000, B has 1000 left
        // and runs alone until 8000 — the load of 0->1 and of 1->2.
        let m = ring(4);
        let p = pattern(4, &[(0, 1, 4000), (0, 2, 4000), (1, 2, 1000), (1, 3, 3000)]);
        let id = Perm::identity(4);
        let inv = m.link_inv_bandwidths()[0];
        let t = round_time(&p, &m, &id, &RoundModel::default());
        assert!((t - 8000.0 * inv).abs() <= 1e-9 * t, "{}", t / inv);
        let lt = evaluate(&p, &m, &id).max_link_time;
        assert!((lt - 8000.0 * inv).abs() <= 1e-9 * lt);
    }

    #[test]
    fn never_below_the_busiest_link() {
        let m = crate::torus_machine(vec![3, 3], None, None, 2).unwrap();
        let mut rng = crate::SplitMix(5);
        for _ in 0..20 {
            let e: Vec<(u32, u32, u64)> = (0..30)
                .map(|_| {
                    let a = rng.below(18) as u32;
                    let b = rng.below(18) as u32;
                    (a, b, 1 + rng.below(5000) as u64)
                })
                .filter(|&(a, b, _)| a != b)
                .collect();
            let p = pattern(18, &e);
            let id = Perm::identity(18);
            let lt = evaluate(&p, &m, &id).max_link_time;
            for model in [RoundModel::default(), RoundModel::simgrid_like()] {
                let t = round_time(&p, &m, &id, &model);
                assert!(t >= lt * (1.0 - 1e-9), "{t} < {lt}");
            }
        }
    }
}
