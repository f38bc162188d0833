//! Link loads under equal-cost multi-path routing (ECMP) on network graphs.
//!
//! The machine's own metrics ([`crate::evaluate`]) route each message along one
//! shortest path. Fat trees and dragonflies spread traffic over all shortest paths
//! (hashed or adaptive routing); this model splits every message evenly among the
//! paths of least hop count: a link carries the message's bytes times the share of
//! shortest paths that use it, `σ(s, u)·σ(v, t) / σ(s, t)` for a link `u → v` on a
//! shortest `s`–`t` path, `σ` counting shortest paths. Paths pass through switches
//! only (a host forwards nothing).

use copr::lap::Perm;
use copr_topology::VertexKind;

use super::machine::MapMachine;
use super::pattern::Pattern;

/// Bytes on every link (indexed as [`MapMachine::link_info`]) when each message of `p`
/// under `map` is split evenly over the shortest paths between its nodes; `None` for
/// machines that are not network graphs (tori route in dimension order).
///
/// # Complexity
/// `O(m + S·(V + E) + P·(V + E))` for `m` messages, `S` sending nodes, `P` node pairs
/// with traffic, on a graph of `V` vertices and `E` links.
pub fn ecmp_link_loads(p: &Pattern, m: &MapMachine, map: &Perm) -> Option<Vec<f64>> {
    let (net, hosts) = m.network_parts()?;
    let g = net.graph();
    let nv = g.node_count();
    let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nv];
    let mut inc: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nv];
    for (e, edge) in g.raw_edges().iter().enumerate() {
        out[edge.source().index()].push((e, edge.target().index()));
        inc[edge.target().index()].push((e, edge.source().index()));
    }
    let forwards = |v: usize| g.raw_nodes()[v].weight.kind == VertexKind::Switch;
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
    let mut load = vec![0f64; g.edge_count()];
    let mut dist = vec![usize::MAX; nv];
    let mut sigma = vec![0f64; nv];
    let mut frac = vec![0f64; nv];
    let mut order: Vec<usize> = Vec::with_capacity(nv);
    let mut i = 0;
    while i < pairs.len() {
        let a = pairs[i].0;
        // shortest-path counts from a's host
        dist.iter_mut().for_each(|d| *d = usize::MAX);
        sigma.iter_mut().for_each(|s| *s = 0.0);
        order.clear();
        let s = net.host_vertex(hosts[a]).index();
        dist[s] = 0;
        sigma[s] = 1.0;
        order.push(s);
        let mut head = 0;
        while head < order.len() {
            let v = order[head];
            head += 1;
            if v != s && !forwards(v) {
                continue;
            }
            for &(_, w) in &out[v] {
                if dist[w] == usize::MAX {
                    dist[w] = dist[v] + 1;
                    order.push(w);
                }
                if dist[w] == dist[v] + 1 {
                    sigma[w] += sigma[v];
                }
            }
        }
        while i < pairs.len() && pairs[i].0 == a {
            let b = pairs[i].1;
            let mut bytes = 0f64;
            while i < pairs.len() && pairs[i].0 == a && pairs[i].1 == b {
                bytes += pairs[i].2 as f64;
                i += 1;
            }
            // split the bytes backwards from b's host along the shortest-path DAG
            let t = net.host_vertex(hosts[b]).index();
            if dist[t] == usize::MAX {
                continue;
            }
            frac[t] = bytes;
            for &v in order.iter().rev() {
                if frac[v] == 0.0 || v == s {
                    continue;
                }
                for &(e, u) in &inc[v] {
                    if dist[u] != usize::MAX && dist[u] + 1 == dist[v] && (u == s || forwards(u)) {
                        let share = frac[v] * sigma[u] / sigma[v];
                        load[e] += share;
                        frac[u] += share;
                    }
                }
                frac[v] = 0.0;
            }
            frac[s] = 0.0;
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
