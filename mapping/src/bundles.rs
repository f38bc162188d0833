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

use super::ecmp::EqualCostPaths;

/// The bundles of a network and the route of every pair of machine nodes through them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bundles {
    /// The links (copr link ids, ascending) of each bundle.
    pub(crate) links: Vec<Vec<usize>>,
    /// For the pair `(a, b)` of machine nodes, at `a·n + b`: its bundles in order.
    pub(crate) routes: Vec<Vec<u32>>,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// The bundles of `net` for the machine nodes on `hosts` (network host indices), or
/// `None` when its ECMP split is not bundle-equivalent (see the [module docs](self)),
/// or a bundle's links differ in latency or bandwidth.
///
/// # Complexity
/// `O(n·(V + E) log V + n²·(V + E))` for `n` nodes on a graph of `V` vertices and `E`
/// links (a k = 8 fat tree: milliseconds).
pub(crate) fn ecmp_bundles(net: &Network, hosts: &[usize]) -> Option<Bundles> {
    let n = hosts.len();
    let g = net.graph();
    let mut bundle_of: Vec<Option<u32>> = vec![None; g.edge_count()];
    let mut links: Vec<Vec<usize>> = Vec::new();
    let mut routes: Vec<Vec<u32>> = Vec::with_capacity(n * n);
    let mut paths = EqualCostPaths::new(net);
    let mut used: Vec<(u32, usize, f64)> = Vec::new();
    for &a in hosts {
        paths.from(net.host_vertex(a).index());
        for &b in hosts {
            used.clear();
            paths.split(net.host_vertex(b).index(), 1.0, |e, hop, share| {
                used.push((hop, e, share))
            });
            used.sort_unstable_by_key(|x| (x.0, x.1));
            let mut route = Vec::new();
            for hop in used.chunk_by(|x, y| x.0 == y.0) {
                let share = hop[0].2;
                if hop.iter().any(|x| !close(x.2, share)) {
                    return None;
                }
                let set: Vec<usize> = hop.iter().map(|x| x.1).collect();
                let id = match bundle_of[set[0]] {
                    Some(id) if links[id as usize] == set => id,
                    Some(_) => return None,
                    None if set.iter().all(|&e| bundle_of[e].is_none()) => {
                        let id = links.len() as u32;
                        for &e in &set {
                            bundle_of[e] = Some(id);
                        }
                        links.push(set);
                        id
                    }
                    None => return None,
                };
                route.push(id);
            }
            routes.push(route);
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
    links.iter().all(same).then_some(Bundles { links, routes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::{FatTreeSpec, LinkSpec};

    fn fat_tree(k: usize) -> Network {
        let l = |latency| LinkSpec {
            latency,
            bandwidth: 1.25e10,
        };
        Network::fat_tree(&FatTreeSpec {
            k,
            host_link: l(1e-7),
            edge_link: l(1.5e-7),
            core_link: l(2e-7),
        })
        .unwrap()
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
            let r = &b.routes[last];
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
                assert_eq!(b.routes[1].len(), 2);
            }
            assert!(b.routes[0].is_empty());
        }
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
        assert_eq!(b.routes[1].len(), 2);
        assert!(b.routes[1].iter().all(|&i| b.links[i as usize].len() == 2));
    }
}
