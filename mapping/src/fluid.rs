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
/// latencies are left out. Messages follow the machine's link model
/// ([`MapMachine::link_model`]): on a network routed ECMP (a fat tree) each message
/// crosses one bundle of equal-cost links per hop, a bundle of `k` links sharing `k`
/// links' bandwidth, as the SimGrid platform of that network routes it
/// ([`crate::simgrid`]); elsewhere, the single path of [`MapMachine::for_route`]. The
/// busiest link's time ([`crate::Metrics::max_link_time`]) is a lower bound.
///
/// # Complexity
/// `O(E · (F·h + L) · log L)` for `F` messages between nodes of at most `h` links
/// each, `L` links and `E ≤ F` distinct arrival times: meant for patterns of a few
/// thousand messages.
pub fn round_time(p: &Pattern, m: &MapMachine, map: &Perm, model: &RoundModel) -> f64 {
    let inv = m.link_group_inv_bandwidths();
    let cap = capacities(&inv);
    let lat = m.link_group_latencies();
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
        m.for_group_route(a, b, |l| links.push(l as u32));
        off.push(links.len());
        rem.push(e.bytes as f64);
    }
    let flows = rem.len();
    let w: Vec<f64> = (0..flows)
        .map(|f| model.weight(&links[off[f]..off[f + 1]], &inv, &lat, false))
        .collect();
    // flows by link
    let nl = cap.len();
    let mut on: Vec<Vec<u32>> = vec![Vec::new(); nl];
    for f in 0..flows {
        for &l in &links[off[f]..off[f + 1]] {
            on[l as usize].push(f as u32);
        }
    }
    let all: Vec<u32> = (0..nl as u32).collect();
    let mut active: Vec<bool> = vec![true; flows];
    let mut left = flows;
    let mut rate = vec![0f64; flows];
    let mut fill = MaxMin::new(nl, flows);
    let mut t = 0f64;
    while left > 0 {
        let route = |f: usize| &links[off[f]..off[f + 1]];
        fill.rates(&cap, &on, &all, &route, &w, &mut rate);
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

/// Bytes per second of links of inverse bandwidths `inv` (infinite for 0).
pub(crate) fn capacities(inv: &[f64]) -> Vec<f64> {
    inv.iter()
        .map(|&x| if x > 0.0 { 1.0 / x } else { f64::INFINITY })
        .collect()
}

impl RoundModel {
    /// A message's share weight on the links `route` (indices into `inv`, the links'
    /// inverse bandwidths, and `lat`, their latencies): 1, or the inverse of
    /// `Σ_route (hop + penalty_bytes · inv_bandwidth)`, `hop` being `hop_penalty`, or
    /// with `latencies` the link's latency.
    pub(crate) fn weight(&self, route: &[u32], inv: &[f64], lat: &[f64], latencies: bool) -> f64 {
        if self.penalty_bytes == 0.0 && self.hop_penalty == 0.0 {
            return 1.0;
        }
        let pen: f64 = route
            .iter()
            .map(|&l| {
                let hop = if latencies {
                    lat[l as usize]
                } else {
                    self.hop_penalty
                };
                hop + self.penalty_bytes * inv[l as usize]
            })
            .sum();
        if pen > 0.0 && pen.is_finite() {
            1.0 / pen
        } else {
            1.0
        }
    }
}

/// Weighted max-min fair rates by progressive filling, with its scratch space kept
/// between calls.
pub(crate) struct MaxMin {
    cap_left: Vec<f64>,
    count: Vec<f64>,
    fixed: Vec<u32>,
    epoch: u32,
    heap: BinaryHeap<Share>,
    /// Links touched while fixing one bottleneck's flows (`seen[l] == epoch`).
    seen: Vec<u32>,
    touched: Vec<u32>,
}

impl MaxMin {
    /// Scratch for `links` links and `flows` flows.
    pub(crate) fn new(links: usize, flows: usize) -> Self {
        Self {
            cap_left: vec![0.0; links],
            count: vec![0.0; links],
            fixed: vec![0; flows],
            epoch: 0,
            heap: BinaryHeap::new(),
            seen: vec![0; links],
            touched: Vec::new(),
        }
    }

    /// Sets `rate[f]` of every flow `f` on the links `used` (`on[l]`: the flows on link
    /// `l`; `route(f)`: the links of `f`; `w[f]`: its weight): each link of capacity
    /// `cap[l]` is shared max-min fairly, a flow of weight `w` getting `w` shares.
    pub(crate) fn rates<'r>(
        &mut self,
        cap: &[f64],
        on: &[Vec<u32>],
        used: &[u32],
        route: &dyn Fn(usize) -> &'r [u32],
        w: &[f64],
        rate: &mut [f64],
    ) {
        if self.fixed.len() < w.len() {
            self.fixed.resize(w.len(), 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.fixed.iter_mut().for_each(|x| *x = 0);
            self.seen.iter_mut().for_each(|x| *x = 0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        self.heap.clear();
        for &l in used {
            let l = l as usize;
            if on[l].is_empty() {
                continue;
            }
            self.cap_left[l] = cap[l];
            self.count[l] = on[l].iter().map(|&f| w[f as usize]).sum();
            self.heap
                .push(Share(self.cap_left[l] / self.count[l], l as u32));
        }
        while let Some(Share(s, l)) = self.heap.pop() {
            let l = l as usize;
            if self.count[l] <= 0.0 || s != self.cap_left[l] / self.count[l] {
                continue; // stale
            }
            // fix the flows of the bottleneck `l`, then push each link they touched once
            self.touched.clear();
            for &f in &on[l] {
                let f = f as usize;
                if self.fixed[f] == epoch {
                    continue;
                }
                self.fixed[f] = epoch;
                rate[f] = s * w[f];
                for &l2 in route(f) {
                    let l2 = l2 as usize;
                    self.cap_left[l2] = (self.cap_left[l2] - s * w[f]).max(0.0);
                    self.count[l2] -= w[f];
                    if self.count[l2] <= 1e-12 * w[f] {
                        self.count[l2] = 0.0;
                    }
                    if self.seen[l2] != epoch {
                        self.seen[l2] = epoch;
                        self.touched.push(l2 as u32);
                    }
                }
            }
            for &l2 in &self.touched {
                let l2 = l2 as usize;
                self.seen[l2] = 0;
                if self.count[l2] > 0.0 {
                    self.heap
                        .push(Share(self.cap_left[l2] / self.count[l2], l2 as u32));
                }
            }
        }
    }
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
    fn fat_trees_share_their_ecmp_bundles() {
        // k = 4, one rank per host: the four hosts of pod 0 send 1 MB each to those of
        // pod 1. ECMP spreads them over both uplinks of each edge switch and all four
        // core links: each message alone on its host links, 1 MB / 12.5 GB/s; copr's
        // single path sends two of them through one uplink
        let l = |latency| copr_topology::LinkSpec {
            latency,
            bandwidth: 1.25e10,
        };
        let net = copr_topology::Network::fat_tree(&copr_topology::FatTreeSpec {
            k: 4,
            host_link: l(1e-7),
            edge_link: l(1.5e-7),
            core_link: l(2e-7),
        })
        .unwrap();
        let m = MapMachine::network(net, None, Default::default(), 1).unwrap();
        let p = pattern(
            16,
            &[
                (0, 4, 1_000_000),
                (1, 5, 1_000_000),
                (2, 6, 1_000_000),
                (3, 7, 1_000_000),
            ],
        );
        let id = Perm::identity(16);
        let want = 1e6 / 1.25e10;
        for model in [RoundModel::default(), RoundModel::simgrid_like()] {
            let t = round_time(&p, &m, &id, &model);
            assert!((t - want).abs() <= 1e-9 * want, "{t:e}");
            let single = round_time(&p, &m.clone().with_single_path_loads(), &id, &model);
            assert!(single > 1.5 * want, "{single:e}");
        }
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
