//! Equal-cost shortest paths of a network graph: the least-latency paths (then fewest
//! hops) between two vertices, through switches only, and the even split of a message
//! over them. The one path search behind the ECMP link loads ([`crate::ecmp_link_loads`])
//! and the equal-cost bundles of a network (`bundles.rs`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use copr_topology::{Network, VertexKind};

/// Relative tolerance under which two path latencies are equal.
const TIE: f64 = 1e-9;

fn tie(a: f64, b: f64) -> bool {
    (a - b).abs() <= TIE * a.abs().max(b.abs())
}

/// `(latency, hops)` of a candidate path is better than the current one.
fn better(c: (f64, u32), cur: (f64, u32)) -> bool {
    if tie(c.0, cur.0) {
        c.1 < cur.1
    } else {
        c.0 < cur.0
    }
}

#[derive(PartialEq)]
struct Key(f64, u32, usize);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    // reversed: BinaryHeap pops the largest, we want the cheapest
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0)
            .then(o.1.cmp(&self.1))
            .then(o.2.cmp(&self.2))
    }
}

/// The equal-cost shortest paths of a network graph from one source vertex, and the
/// even split of a message over them.
pub(crate) struct EqualCostPaths<'a> {
    net: &'a Network,
    /// links into each vertex: `(link, tail)`
    inc: Vec<Vec<(usize, usize)>>,
    /// links out of each vertex: `(link, head)`
    out: Vec<Vec<(usize, usize)>>,
    source: usize,
    dist: Vec<f64>,
    hops: Vec<u32>,
    sigma: Vec<f64>,
    /// reached vertices by increasing hop count
    order: Vec<usize>,
    frac: Vec<f64>,
}

impl<'a> EqualCostPaths<'a> {
    /// Prepared for `net`, no source yet.
    pub(crate) fn new(net: &'a Network) -> Self {
        let g = net.graph();
        let nv = g.node_count();
        let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nv];
        let mut inc: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nv];
        for (e, edge) in g.raw_edges().iter().enumerate() {
            out[edge.source().index()].push((e, edge.target().index()));
            inc[edge.target().index()].push((e, edge.source().index()));
        }
        Self {
            net,
            inc,
            out,
            source: usize::MAX,
            dist: vec![f64::INFINITY; nv],
            hops: vec![u32::MAX; nv],
            sigma: vec![0.0; nv],
            order: Vec::with_capacity(nv),
            frac: vec![0.0; nv],
        }
    }

    fn forwards(&self, v: usize) -> bool {
        self.net.graph().raw_nodes()[v].weight.kind == VertexKind::Switch
    }

    fn latency(&self, e: usize) -> f64 {
        self.net.graph().raw_edges()[e].weight.latency
    }

    /// Whether link `e` from `u` to `v` lies on an equal-cost path from the source.
    fn on_path(&self, e: usize, u: usize, v: usize) -> bool {
        self.hops[u] != u32::MAX
            && (u == self.source || self.forwards(u))
            && self.hops[u] + 1 == self.hops[v]
            && tie(self.dist[u] + self.latency(e), self.dist[v])
    }

    /// Searches the equal-cost paths from vertex `s`.
    pub(crate) fn from(&mut self, s: usize) {
        self.source = s;
        self.dist.iter_mut().for_each(|d| *d = f64::INFINITY);
        self.hops.iter_mut().for_each(|h| *h = u32::MAX);
        self.sigma.iter_mut().for_each(|x| *x = 0.0);
        self.order.clear();
        let mut done = vec![false; self.dist.len()];
        let mut heap = BinaryHeap::new();
        self.dist[s] = 0.0;
        self.hops[s] = 0;
        heap.push(Key(0.0, 0, s));
        while let Some(Key(_, _, v)) = heap.pop() {
            if done[v] {
                continue;
            }
            done[v] = true;
            self.order.push(v);
            if v != s && !self.forwards(v) {
                continue;
            }
            for &(e, w) in &self.out[v] {
                if done[w] {
                    continue;
                }
                let c = (self.dist[v] + self.latency(e), self.hops[v] + 1);
                if self.hops[w] == u32::MAX || better(c, (self.dist[w], self.hops[w])) {
                    self.dist[w] = c.0;
                    self.hops[w] = c.1;
                    heap.push(Key(c.0, c.1, w));
                }
            }
        }
        // path counts, predecessors first (they have one hop fewer)
        let mut order = std::mem::take(&mut self.order);
        order.sort_by_key(|&v| self.hops[v]);
        self.sigma[s] = 1.0;
        for &v in &order[1..] {
            let mut sum = 0.0;
            for &(e, u) in &self.inc[v] {
                if self.on_path(e, u, v) {
                    sum += self.sigma[u];
                }
            }
            self.sigma[v] = sum;
        }
        self.order = order;
    }

    /// The number of equal-cost paths from the source to vertex `t` (0: unreachable).
    #[cfg(test)]
    pub(crate) fn count(&self, t: usize) -> f64 {
        self.sigma[t]
    }

    /// Splits `bytes` from the source to vertex `t` evenly over the equal-cost paths:
    /// `f(link, hop, share)` for every link on one, `hop` its position on the paths
    /// (0 = the first link). Nothing for an unreachable `t` or `t` = the source.
    pub(crate) fn split(&mut self, t: usize, bytes: f64, mut f: impl FnMut(usize, u32, f64)) {
        if self.sigma[t] == 0.0 || t == self.source {
            return;
        }
        self.frac[t] = bytes;
        for i in (0..self.order.len()).rev() {
            let v = self.order[i];
            if self.frac[v] == 0.0 || v == self.source {
                continue;
            }
            for k in 0..self.inc[v].len() {
                let (e, u) = self.inc[v][k];
                if self.on_path(e, u, v) {
                    let share = self.frac[v] * self.sigma[u] / self.sigma[v];
                    f(e, self.hops[u], share);
                    self.frac[u] += share;
                }
            }
            self.frac[v] = 0.0;
        }
        self.frac[self.source] = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::{DragonflySpec, LinkSpec};

    fn dragonfly(groups: usize, routers: usize, local: f64, global: f64) -> Network {
        let l = |latency, bandwidth| LinkSpec { latency, bandwidth };
        Network::dragonfly(&DragonflySpec {
            groups,
            routers,
            hosts_per_router: 2,
            host_link: l(1e-7, 1.25e10),
            local_link: l(local, 1.25e10),
            global_link: l(global, 6.25e9),
        })
        .unwrap()
    }

    /// The largest number of equal-cost paths between two vertices (switches and hosts).
    fn most_paths(net: &Network) -> f64 {
        let mut p = EqualCostPaths::new(net);
        let nv = net.graph().node_count();
        let mut most: f64 = 0.0;
        for s in 0..nv {
            p.from(s);
            for t in 0..nv {
                if t != s {
                    assert!(p.count(t) >= 1.0, "{s} -> {t} unreachable");
                    most = most.max(p.count(t));
                }
            }
        }
        most
    }

    /// copr's dragonflies (a global link costs more than two local ones): one
    /// equal-cost path between every two routers (and hosts), local-global-local, so
    /// the single path is the ECMP split. With equal latencies two-global paths tie.
    #[test]
    fn dragonfly_equal_cost_paths_are_unique() {
        let file = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/topology/dragonfly-g5a4p2.net.toml");
        assert_eq!(most_paths(&Network::from_file(&file).unwrap()), 1.0);
        for (g, a) in [(5, 4), (9, 4), (3, 5), (7, 3), (2, 1), (1, 3)] {
            assert_eq!(
                most_paths(&dragonfly(g, a, 1.5e-7, 1e-6)),
                1.0,
                "g={g} a={a}"
            );
        }
        assert!(most_paths(&dragonfly(5, 4, 1e-7, 1e-7)) > 1.0);
    }

    /// Equal-cost paths on a fat tree: 4 between pods of a k = 4 tree, 2 inside a pod.
    #[test]
    fn fat_tree_path_counts() {
        let file = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/topology/fat-tree-k4.net.toml");
        let net = Network::from_file(&file).unwrap();
        let mut p = EqualCostPaths::new(&net);
        p.from(net.host_vertex(0).index());
        let count = |p: &EqualCostPaths<'_>, h: usize| p.count(net.host_vertex(h).index());
        assert_eq!(count(&p, 1), 1.0);
        assert_eq!(count(&p, 2), 2.0);
        assert_eq!(count(&p, 4), 4.0);
        assert_eq!(count(&p, 15), 4.0);
    }
}
