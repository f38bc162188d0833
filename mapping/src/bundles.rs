//! Equal-cost bundles: when a network's ECMP split ([`crate::ecmp_link_loads`]) can be
//! routed on one path per pair.
//!
//! Take a pair of machine nodes and the equal-cost paths between them. Every path
//! crosses each *hop* (the links at one position on the paths) exactly once, so the
//! links of one hop together carry the whole message. When, for every pair and every
//! hop, the message is split evenly over that hop's links, and two hops of any pairs
//! use either the same links or disjoint ones, those link sets (the *bundles*)
//! partition the used links, and each link of a bundle carries exactly
//! `bundle load / bundle size` under ECMP, whatever the traffic. A simulator link per
//! bundle with the summed bandwidth, and one route per pair through its bundles, then
//! loads each bundle exactly as ECMP loads its links.
//!
//! A k-ary fat tree (Al-Fares) is such a network: its bundles are a host's link, an
//! edge switch's links up to its pod's aggregation switches (and, mirrored, down
//! into it), and all aggregation–core links of a pod upwards (and downwards). A
//! network whose equal-cost paths are unique (copr's dragonflies) is one too, with a
//! bundle per link.

use copr_topology::Network;

use super::paths::EqualCostPaths;

/// The bundles of a network and the route of every pair of machine nodes through them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bundles {
    /// The links (copr link ids, ascending) of each bundle.
    pub(crate) links: Vec<Vec<usize>>,
    /// Per machine node: its end of the paths (index into `ends`), and, for a leaf
    /// host, the bundles of its link up and its link down.
    node: Vec<(usize, Option<(u32, u32)>)>,
    /// Number of distinct path ends.
    ends: usize,
    /// The bundles between two path ends, at `from·ends + to`.
    inner: Vec<Vec<u32>>,
}

impl Bundles {
    /// The bundles of the route from machine node `a` to machine node `b`, in order
    /// (none for `a == b`).
    pub(crate) fn route(&self, a: usize, b: usize) -> Vec<u32> {
        let mut r = Vec::new();
        self.for_route(a, b, |x| r.push(x as u32));
        r
    }

    /// Calls `f(bundle)` for the bundles of the route from machine node `a` to machine
    /// node `b`, in order (none for `a == b`), without allocating.
    #[inline]
    pub(crate) fn for_route(&self, a: usize, b: usize, mut f: impl FnMut(usize)) {
        if a == b {
            return;
        }
        let ((x, la), (y, lb)) = (self.node[a], self.node[b]);
        if let Some(l) = la {
            f(l.0 as usize);
        }
        for &u in &self.inner[x * self.ends + y] {
            f(u as usize);
        }
        if let Some(l) = lb {
            f(l.1 as usize);
        }
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// For every vertex of `net`: its one link out and its one link in, `None` where it
/// has another number of links.
fn single_links(net: &Network) -> Vec<(Option<usize>, Option<usize>)> {
    let g = net.graph();
    let mut out = vec![(0u32, 0usize, 0u32, 0usize); g.node_count()];
    for (e, x) in g.raw_edges().iter().enumerate() {
        let o = &mut out[x.source().index()];
        o.0 += 1;
        o.1 = e;
        let i = &mut out[x.target().index()];
        i.2 += 1;
        i.3 = e;
    }
    out.into_iter()
        .map(|(no, o, ni, i)| ((no == 1).then_some(o), (ni == 1).then_some(i)))
        .collect()
}

/// A host hanging off one switch (one link out, one link back, same switch): its
/// switch, the link up and the link down.
fn leaf(
    net: &Network,
    single: &[(Option<usize>, Option<usize>)],
    h: usize,
) -> Option<(usize, usize, usize)> {
    let g = net.graph();
    let v = net.host_vertex(h).index();
    let (up, down) = (single[v].0?, single[v].1?);
    let (x, y) = (&g.raw_edges()[up], &g.raw_edges()[down]);
    let s = x.target().index();
    (y.source().index() == s
        && s != v
        && g.raw_nodes()[s].weight.kind == copr_topology::VertexKind::Switch)
        .then_some((s, up, down))
}

/// Bundle assignment, checking that link sets are equal or disjoint.
struct Assign {
    bundle_of: Vec<Option<u32>>,
    links: Vec<Vec<usize>>,
}

impl Assign {
    /// The bundle of the links `set` (ascending), new if none of them has one;
    /// `None` if they overlap a different bundle.
    fn of(&mut self, set: &[usize]) -> Option<u32> {
        match self.bundle_of[set[0]] {
            Some(id) => (self.links[id as usize] == set).then_some(id),
            None if set.iter().all(|&e| self.bundle_of[e].is_none()) => {
                let id = self.links.len() as u32;
                for &e in set {
                    self.bundle_of[e] = Some(id);
                }
                self.links.push(set.to_vec());
                Some(id)
            }
            None => None,
        }
    }
}

/// The bundles of `net` for the machine nodes on `hosts` (network host indices), or
/// `None` when its ECMP split is not bundle-equivalent (see the [module docs](self)),
/// or a bundle's links differ in latency or bandwidth.
///
/// A leaf host (one link to a switch and one back) starts and ends its paths at its
/// switch, so the paths are searched between the distinct switches of leaves (and the
/// other hosts): the edge switches of a fat tree.
///
/// # Complexity
/// `O(c·(V + E) log V + c²·(V + E))` for `c` distinct path ends (at most the `n`
/// nodes) on a graph of `V` vertices and `E` links (a k = 16 fat tree: 128 edge
/// switches, well under a second).
pub(crate) fn ecmp_bundles(net: &Network, hosts: &[usize]) -> Option<Bundles> {
    ecmp_bundles_within(net, hosts, usize::MAX)
}

/// [`ecmp_bundles`], or `None` as well when the search would look at more than
/// `max_work` vertices and links in all (`c²·(V + E)` for `c` path ends): for the
/// machines the mapper builds, where the single path is the fallback.
pub(crate) fn ecmp_bundles_within(
    net: &Network,
    hosts: &[usize],
    max_work: usize,
) -> Option<Bundles> {
    let g = net.graph();
    let mut assign = Assign {
        bundle_of: vec![None; g.edge_count()],
        links: Vec::new(),
    };
    // each node's path end (a vertex) and leaf links
    let mut end_vertex: Vec<usize> = Vec::new();
    let mut node = Vec::with_capacity(hosts.len());
    let single = single_links(net);
    for &h in hosts {
        let (v, l) = match leaf(net, &single, h) {
            Some((s, up, down)) => (s, Some((assign.of(&[up])?, assign.of(&[down])?))),
            None => (net.host_vertex(h).index(), None),
        };
        let x = match end_vertex.iter().position(|&w| w == v) {
            Some(x) => x,
            None => {
                end_vertex.push(v);
                end_vertex.len() - 1
            }
        };
        node.push((x, l));
    }
    let ends = end_vertex.len();
    let work = (ends * ends).saturating_mul(g.node_count() + g.edge_count());
    if work > max_work {
        return None;
    }
    let mut inner: Vec<Vec<u32>> = Vec::with_capacity(ends * ends);
    let mut paths = EqualCostPaths::new(net);
    let mut used: Vec<(u32, usize, f64)> = Vec::new();
    let mut set: Vec<usize> = Vec::new();
    for &a in &end_vertex {
        paths.from(a);
        for &b in &end_vertex {
            used.clear();
            paths.split(b, 1.0, |e, hop, share| used.push((hop, e, share)));
            if used.is_empty() && a != b {
                // no path through switches only (copr's single path crosses a host)
                return None;
            }
            used.sort_unstable_by_key(|x| (x.0, x.1));
            let mut route = Vec::new();
            for hop in used.chunk_by(|x, y| x.0 == y.0) {
                let share = hop[0].2;
                if hop.iter().any(|x| !close(x.2, share)) {
                    return None;
                }
                set.clear();
                set.extend(hop.iter().map(|x| x.1));
                route.push(assign.of(&set)?);
            }
            inner.push(route);
        }
    }
    let edges = g.raw_edges();
    let same = |l: &Vec<usize>| {
        let c = edges[l[0]].weight;
        l.iter().all(|&e| {
            let d = edges[e].weight;
            close(d.latency, c.latency) && close(d.inv_bandwidth, c.inv_bandwidth)
        })
    };
    let links = assign.links;
    links.iter().all(same).then_some(Bundles {
        links,
        node,
        ends,
        inner,
    })
}

/// A k-ary fat tree of 100 Gb/s links (0.1 µs to a host, 0.15 µs edge to aggregation,
/// 0.2 µs to the core): the network of the mapper's unit tests.
#[cfg(test)]
pub(crate) fn test_fat_tree(k: usize) -> Network {
    let l = |latency| copr_topology::LinkSpec {
        latency,
        bandwidth: 1.25e10,
    };
    Network::fat_tree(&copr_topology::FatTreeSpec {
        k,
        host_link: l(1e-7),
        edge_link: l(1.5e-7),
        core_link: l(2e-7),
    })
    .expect("a valid fat tree")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fat_tree(k: usize) -> Network {
        test_fat_tree(k)
    }

    fn name(net: &Network, e: usize) -> String {
        let g = net.graph();
        let x = &g.raw_edges()[e];
        format!(
            "{}>{}",
            g.raw_nodes()[x.source().index()].weight.name,
            g.raw_nodes()[x.target().index()].weight.name
        )
    }

    #[test]
    fn fat_tree_bundles_are_the_parallel_links() {
        for k in [2, 4, 6] {
            let net = fat_tree(k);
            let h = k / 2;
            let hosts: Vec<usize> = (0..net.num_hosts()).collect();
            let b = ecmp_bundles(&net, &hosts).unwrap();
            // sizes: per host 2 links of 1; per edge switch up and down, h each; per
            // pod up and down, h² each
            let mut sizes: Vec<usize> = b.links.iter().map(Vec::len).collect();
            sizes.sort_unstable();
            let mut want = vec![1; 2 * k * k * k / 4];
            want.extend(vec![h; 2 * k * h]);
            want.extend(vec![h * h; 2 * k]);
            want.sort_unstable();
            assert_eq!(sizes, want, "k = {k}");
            // h0 to the first host of the last pod: six bundles
            let last = (k - 1) * h * h;
            let r = &b.route(0, last);
            let names: Vec<Vec<String>> = r
                .iter()
                .map(|&i| b.links[i as usize].iter().map(|&e| name(&net, e)).collect())
                .collect();
            assert_eq!(names.len(), 6);
            assert_eq!(names[0], ["h0>e0.0"]);
            let mut up: Vec<String> = (0..h).map(|m| format!("e0.0>a0.{m}")).collect();
            up.sort();
            let mut got = names[1].clone();
            got.sort();
            assert_eq!(got, up);
            assert_eq!(names[2].len(), h * h);
            assert!(names[2].iter().all(|s| s.starts_with("a0.")));
            assert!(names[3]
                .iter()
                .all(|s| s.contains(&format!(">a{}.", k - 1))));
            assert_eq!(names[5], [format!("e{}.0>h{last}", k - 1)]);
            // a pair under one edge switch: two host links
            if h > 1 {
                assert_eq!(b.route(0, 1).len(), 2);
            }
            assert!(b.route(0, 0).is_empty());
        }
    }

    #[test]
    fn paths_through_hosts_are_refused() {
        // a - b - c, hosts only: ECMP forwards through switches only
        let mut net = Network::new("hosts");
        for h in ["a", "b", "c"] {
            net.add_host(h).unwrap();
        }
        let c = copr_topology::LinkCost::from_bandwidth(1e-6, 1e9).unwrap();
        net.add_link("a", "b", c).unwrap();
        net.add_link("b", "c", c).unwrap();
        assert!(ecmp_bundles(&net, &[0, 1, 2]).is_none());
        let b = ecmp_bundles(&net, &[0, 1]).unwrap();
        assert_eq!(b.route(0, 1).len(), 1);
    }

    #[test]
    fn uneven_splits_are_refused() {
        // a -> {s1, s2} -> t and b -> s2: from a, the first hop is {a>s1, a>s2}
        // towards t but {a>s2} alone towards b, sets neither equal nor disjoint
        let mut net = Network::new("uneven");
        for h in ["a", "b", "t"] {
            net.add_host(h).unwrap();
        }
        for s in ["s1", "s2"] {
            net.add_switch(s).unwrap();
        }
        let c = copr_topology::LinkCost::from_bandwidth(1e-6, 1e9).unwrap();
        for (x, y) in [
            ("a", "s1"),
            ("a", "s2"),
            ("s1", "t"),
            ("s2", "t"),
            ("b", "s2"),
        ] {
            net.add_link(x, y, c).unwrap();
        }
        assert!(ecmp_bundles(&net, &[0, 1, 2]).is_none());
        // without b, the two paths a -> t form bundles of two
        let b = ecmp_bundles(&net, &[0, 2]).unwrap();
        assert_eq!(b.route(0, 1).len(), 2);
        assert!(b
            .route(0, 1)
            .iter()
            .all(|&i| b.links[i as usize].len() == 2));
    }
}
