//! Link loads under equal-cost multi-path routing (ECMP) on network graphs.
//!
//! One path per message is how [`crate::evaluate`] loads links on most machines. Fat
//! trees and dragonflies spread traffic over all shortest paths
//! (hashed or adaptive routing); this model splits every message evenly among its
//! *equal-cost* paths: the paths of least latency (copr's routing metric, the one the
//! single path minimises first) and, among those, of fewest hops. A link `u → v` on
//! such an `s`–`t` path carries the message's bytes times `σ(s, u)·σ(v, t) / σ(s, t)`,
//! `σ` counting equal-cost paths. Paths pass through switches only (a host forwards
//! nothing). Two latencies within a relative `1e-9` of each other count as equal.
//!
//! On a fat tree every equal-cost path has the same number of hops, so this is the
//! hop-count ECMP of the literature. On a dragonfly the least-latency paths are the
//! minimal ones (local, global, local); paths over two global links are never shorter
//! in latency there when a global link costs more than two local ones.
//!
//! Where the split differs from the single path and is bundle-equivalent (a fat tree),
//! the machine measures its busiest link this way ([`MapMachine::link_model`]), on
//! bundles of equal-cost links; this module counts it link by link, from scratch.

use copr::lap::Perm;

use super::machine::MapMachine;
use super::paths::EqualCostPaths;
use super::pattern::Pattern;

/// Bytes on every link (indexed as [`MapMachine::link_info`]) when each message of `p`
/// under `map` is split evenly over the equal-cost paths between its nodes; `None` for
/// machines that are not network graphs (tori route in dimension order).
///
/// Equal-cost paths are the paths of least latency (copr's routing metric, the one the
/// single path of [`crate::evaluate`] minimises first) and, among those, of fewest
/// hops; two latencies within a relative `1e-9` count as equal; paths pass through
/// switches only. A link `u → v` on such an `s`–`t` path carries the message's bytes
/// times `σ(s, u)·σ(v, t) / σ(s, t)`, `σ` counting equal-cost paths. On a fat tree
/// every equal-cost path has the same number of hops (the hop-count ECMP of the
/// literature); on copr's dragonflies (a global link slower than two local ones) the
/// least-latency path is unique, local–global–local, so this equals the single path.
///
/// # Complexity
/// `O(m log m + S·(V + E) log V + P·(V + E))` for `m` messages, `S` sending nodes,
/// `P` node pairs with traffic, on a graph of `V` vertices and `E` links.
pub fn ecmp_link_loads(p: &Pattern, m: &MapMachine, map: &Perm) -> Option<Vec<f64>> {
    let (net, hosts) = m.network_parts()?;
    // bytes between nodes, grouped by the sending node
    let mut pairs: Vec<(usize, usize, u64)> = p
        .edges()
        .iter()
        .map(|e| {
            (
                m.node_of_slot(map.apply(e.src as usize)),
                m.node_of_slot(map.apply(e.dst as usize)),
                e.bytes,
            )
        })
        .filter(|&(a, b, _)| a != b)
        .collect();
    pairs.sort_unstable();
    let mut load = vec![0f64; net.graph().edge_count()];
    let mut paths = EqualCostPaths::new(net);
    let mut i = 0;
    while i < pairs.len() {
        let a = pairs[i].0;
        paths.from(net.host_vertex(hosts[a]).index());
        while i < pairs.len() && pairs[i].0 == a {
            let b = pairs[i].1;
            let mut bytes = 0f64;
            while i < pairs.len() && pairs[i].0 == a && pairs[i].1 == b {
                bytes += pairs[i].2 as f64;
                i += 1;
            }
            let t = net.host_vertex(hosts[b]).index();
            paths.split(t, bytes, |e, _, share| load[e] += share);
        }
    }
    Some(load)
}

/// The busiest link's time under ECMP: `max_l load_l · inv_bandwidth_l` (seconds per
/// round), or `None` for machines that are not network graphs.
pub fn ecmp_max_link_time(p: &Pattern, m: &MapMachine, map: &Perm) -> Option<f64> {
    let load = ecmp_link_loads(p, m, map)?;
    let inv = m.link_inv_bandwidths();
    Some(
        load.iter()
            .zip(&inv)
            .map(|(&x, &b)| x * b)
            .fold(0.0, f64::max),
    )
}
