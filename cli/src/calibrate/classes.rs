//! Classes of rank pairs for `copr calibrate`: what two ranks share, as a pure
//! function of where they run (node and the PUs they may run on), and the sample of
//! pairs calibration measures. Nothing here touches MPI.

use std::collections::BTreeMap;

use copr_topology::{Level, NodeTree};
use serde::Serialize;

use super::stats::SplitMix;

/// Most pairs measured per class.
pub const MAX_PAIRS_PER_CLASS: usize = 16;
/// Nodes whose intra-node pairs are sampled.
pub const MAX_SAMPLED_NODES: usize = 4;
/// Up to this many nodes every node pair is measured; beyond, a sample of
/// [`MAX_PAIRS_PER_CLASS`] node pairs.
pub const ALL_NODE_PAIRS_UP_TO: usize = 8;

/// What two ranks share, from closest to farthest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Same node, PUs under one cache (PU, core, L1–L5).
    SameCache,
    /// Same node, same socket (NUMA node, die, package) but no shared cache.
    SameSocket,
    /// Same node, different sockets.
    OtherSocket,
    /// Same node, sharing unknown (ranks not bound, or no hwloc).
    SameNode,
    /// Different nodes.
    OtherNode,
}

impl Class {
    /// The name in the report and the config.
    pub fn name(self) -> &'static str {
        match self {
            Class::SameCache => "same-cache",
            Class::SameSocket => "same-socket",
            Class::OtherSocket => "other-socket",
            Class::SameNode => "same-node",
            Class::OtherNode => "other-node",
        }
    }

    /// The hwloc levels a class stands for in the written `[topology.intra.levels]`.
    pub fn levels(self) -> &'static [Level] {
        use Level::*;
        match self {
            Class::SameCache => &[Pu, Core, L1, L2, L3, L4, L5],
            Class::SameSocket => &[Numa, Die, Package],
            Class::OtherSocket => &[Group, Machine],
            Class::SameNode | Class::OtherNode => &[],
        }
    }

    /// The class of a pair of PUs whose smallest common object is at `level`.
    fn of_level(level: Level) -> Class {
        use Level::*;
        match level {
            Pu | Core | L1 | L2 | L3 | L4 | L5 => Class::SameCache,
            Numa | Die | Package => Class::SameSocket,
            Group | Machine => Class::OtherSocket,
        }
    }
}

/// The class of two ranks from their nodes and the PUs each may run on (its
/// binding; empty when unbound or unknown), given the node's tree (`None`: no
/// hwloc). Different nodes are [`Class::OtherNode`]; on one node, the class is that
/// of the smallest object of the tree holding both ranks' PUs (two ranks bound to
/// the same socket but different cores of different caches share the socket);
/// without a tree, with an unbound rank or a PU the tree does not have, it is
/// [`Class::SameNode`].
///
/// # Complexity
/// `O(|a| + |b|)` lookups in the tree.
pub fn classify(a: (usize, &[usize]), b: (usize, &[usize]), tree: Option<&NodeTree>) -> Class {
    if a.0 != b.0 {
        return Class::OtherNode;
    }
    let Some(t) = tree else {
        return Class::SameNode;
    };
    let all: Vec<usize> = a.1.iter().chain(b.1).copied().collect();
    if a.1.is_empty() || b.1.is_empty() || all.iter().any(|&u| u >= t.num_pus()) {
        return Class::SameNode;
    }
    // in a tree, the smallest object holding a set is the highest of the
    // smallest objects holding its first member and each other member
    let first = all[0];
    let level = all
        .iter()
        .map(|&u| t.level(first, u))
        .max()
        .unwrap_or(Level::Pu);
    Class::of_level(level)
}

/// Where the ranks run: node index and PU (if bound) per rank.
#[derive(Debug, Clone)]
pub struct RankMap {
    /// The nodes' names, by node index.
    pub node_names: Vec<String>,
    /// The node index of each rank.
    pub node: Vec<usize>,
    /// The PU each rank is bound to, if bound.
    pub pu: Vec<Option<usize>>,
    /// Whether nodes are emulated groups of one machine.
    pub emulated: bool,
    /// The node tree used for intra-node classes (all ranks bound, hwloc).
    pub tree: Option<NodeTree>,
}

impl RankMap {
    /// From the discovered placement, or `emulate` groups of consecutive ranks.
    pub fn new(placement: &copr_topology::Placement, emulate: Option<usize>) -> Self {
        let p = placement.ranks();
        let (node_names, node, emulated) = match emulate {
            Some(k) => (
                (0..k).map(|g| format!("emulated-{g}")).collect(),
                (0..p).map(|r| r * k / p).collect(),
                true,
            ),
            None => (
                placement.node_names().map(str::to_string).collect(),
                (0..p).map(|r| placement.node_of(r)).collect(),
                false,
            ),
        };
        let pu: Vec<Option<usize>> = (0..p).map(|r| placement.pu_of(r)).collect();
        let tree = if pu.iter().all(Option::is_some) {
            NodeTree::from_this_machine(&copr_topology::LevelCosts::default())
                .ok()
                .filter(|t| pu.iter().all(|&u| u.is_some_and(|u| u < t.num_pus())))
        } else {
            None
        };
        Self {
            node_names,
            node,
            pu,
            emulated,
            tree,
        }
    }

    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.node_names.len()
    }

    /// The ranks on node `n`, in rank order.
    pub fn ranks_of(&self, n: usize) -> Vec<usize> {
        (0..self.node.len())
            .filter(|&r| self.node[r] == n)
            .collect()
    }

    /// The class of the pair of ranks `a`, `b` (same PU, same node at some level, other node).
    pub fn class(&self, a: usize, b: usize) -> Class {
        let cpus = |r: usize| self.pu[r].map_or(Vec::new(), |u| vec![u]);
        classify(
            (self.node[a], &cpus(a)),
            (self.node[b], &cpus(b)),
            self.tree.as_ref(),
        )
    }

    /// The placement written beside the config (PUs only if classes used them).
    pub fn placement(&self) -> copr_topology::Placement {
        let with_pu = self.tree.is_some();
        copr_topology::Placement::from_pairs((0..self.node.len()).map(|r| {
            (
                self.node_names[self.node[r]].clone(),
                if with_pu { self.pu[r] } else { None },
            )
        }))
    }
}

/// The rank pairs to measure, classes interleaved (every class gets its first pair
/// before any gets a second). Intra-node pairs come from at most
/// [`MAX_SAMPLED_NODES`] nodes (all pairs of small nodes, a random sample of large
/// ones); node pairs are all of them for up to [`ALL_NODE_PAIRS_UP_TO`] nodes, else
/// a random sample. At most [`MAX_PAIRS_PER_CLASS`] pairs per class, so the length
/// does not grow with the number of ranks.
pub fn sample_pairs(l: &RankMap, seed: u64) -> Vec<(Class, usize, usize)> {
    let mut rng = SplitMix(seed);
    let mut by_class: BTreeMap<Class, Vec<(usize, usize)>> = BTreeMap::new();
    let mut nodes: Vec<usize> = (0..l.nodes()).collect();
    rng.shuffle(&mut nodes);
    for &n in nodes.iter().take(MAX_SAMPLED_NODES) {
        let ranks = l.ranks_of(n);
        let q = ranks.len();
        if q < 2 {
            continue;
        }
        let mut cand = Vec::new();
        if q <= 64 {
            for i in 0..q {
                for j in i + 1..q {
                    cand.push((ranks[i], ranks[j]));
                }
            }
        } else {
            for _ in 0..4096 {
                let i = rng.below(q);
                let j = (i + 1 + rng.below(q - 1)) % q;
                cand.push((ranks[i], ranks[j]));
            }
        }
        rng.shuffle(&mut cand);
        for (a, b) in cand {
            let v = by_class.entry(l.class(a, b)).or_default();
            if v.len() < MAX_PAIRS_PER_CLASS {
                v.push((a, b));
            }
        }
    }
    let node_pairs = node_pairs(l.nodes(), &mut rng);
    if !node_pairs.is_empty() {
        // a few nodes: several rank pairs per node pair, up to the class's cap
        let per = (MAX_PAIRS_PER_CLASS / node_pairs.len()).max(1);
        let mut lists = Vec::new();
        for (x, y) in node_pairs {
            let (rx, ry) = (l.ranks_of(x), l.ranks_of(y));
            let mut cand: Vec<(usize, usize)> = if rx.len() * ry.len() <= 4 * per {
                rx.iter()
                    .flat_map(|&a| ry.iter().map(move |&b| (a, b)))
                    .collect()
            } else {
                (0..4 * per)
                    .map(|_| (rx[rng.below(rx.len())], ry[rng.below(ry.len())]))
                    .collect()
            };
            rng.shuffle(&mut cand);
            cand.sort_unstable();
            cand.dedup();
            rng.shuffle(&mut cand);
            cand.truncate(per);
            lists.push(cand);
        }
        // node pairs interleaved: every node pair's first rank pair comes first
        let v = by_class.entry(Class::OtherNode).or_default();
        for i in 0..per {
            v.extend(lists.iter().filter_map(|l| l.get(i)));
        }
    }
    let mut out = Vec::new();
    let longest = by_class.values().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for (&c, v) in &by_class {
            if let Some(&(a, b)) = v.get(i) {
                out.push((c, a, b));
            }
        }
    }
    out
}

/// The node pairs measured: all of them for up to [`ALL_NODE_PAIRS_UP_TO`] nodes,
/// else [`MAX_PAIRS_PER_CLASS`] distinct random ones.
fn node_pairs(k: usize, rng: &mut SplitMix) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if k < 2 {
        return out;
    }
    if k <= ALL_NODE_PAIRS_UP_TO {
        for x in 0..k {
            for y in x + 1..k {
                out.push((x, y));
            }
        }
        rng.shuffle(&mut out);
    } else {
        while out.len() < MAX_PAIRS_PER_CLASS {
            let x = rng.below(k);
            let y = (x + 1 + rng.below(k - 1)) % k;
            let key = (x.min(y), x.max(y));
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::LevelCosts;

    /// 2 sockets × 2 L3 groups × 2 cores, one PU each: PU = 4·socket + 2·l3 + core.
    const SHAPE: &str = "pack:2 l3:2 core:2";

    fn tree() -> NodeTree {
        NodeTree::from_shape(SHAPE, &LevelCosts::default()).expect("shape")
    }

    /// The class worked out by hand from the PU numbering.
    fn by_hand(a: usize, b: usize) -> Class {
        if a / 4 != b / 4 {
            Class::OtherSocket
        } else if a / 2 != b / 2 {
            Class::SameSocket
        } else {
            Class::SameCache
        }
    }

    #[test]
    fn single_pus_on_a_hand_built_node() {
        let t = tree();
        assert_eq!(t.num_pus(), 8);
        for a in 0..8 {
            for b in 0..8 {
                let got = classify((0, &[a]), (0, &[b]), Some(&t));
                assert_eq!(got, by_hand(a, b), "PUs {a}, {b}");
                // another node, whatever the PUs
                assert_eq!(classify((0, &[a]), (1, &[b]), Some(&t)), Class::OtherNode);
            }
        }
        assert_eq!(classify((0, &[0]), (0, &[1]), Some(&t)), Class::SameCache);
        assert_eq!(classify((0, &[0]), (0, &[2]), Some(&t)), Class::SameSocket);
        assert_eq!(classify((0, &[3]), (0, &[4]), Some(&t)), Class::OtherSocket);
    }

    #[test]
    fn cpusets_and_unknowns() {
        let t = tree();
        // bound to whole L3 groups of one socket: they share the socket only
        assert_eq!(
            classify((0, &[0, 1]), (0, &[2, 3]), Some(&t)),
            Class::SameSocket
        );
        // one rank bound to socket 0, the other to a core in it
        assert_eq!(
            classify((0, &[0, 1, 2, 3]), (0, &[1]), Some(&t)),
            Class::SameSocket
        );
        // a set spanning both sockets
        assert_eq!(
            classify((0, &[3, 4]), (0, &[0]), Some(&t)),
            Class::OtherSocket
        );
        // both in one L3 group, different cores
        assert_eq!(classify((0, &[4]), (0, &[5]), Some(&t)), Class::SameCache);
        // unbound, out of range, no tree: same node, sharing unknown
        assert_eq!(classify((0, &[]), (0, &[1]), Some(&t)), Class::SameNode);
        assert_eq!(classify((0, &[8]), (0, &[1]), Some(&t)), Class::SameNode);
        assert_eq!(classify((2, &[0]), (2, &[1]), None), Class::SameNode);
        assert_eq!(classify((2, &[]), (3, &[]), None), Class::OtherNode);
    }

    /// hwloc's own synthetic topology of the same shape gives the same classes.
    #[cfg(feature = "hwloc")]
    #[test]
    fn hwloc_synthetic_node() {
        let t = NodeTree::from_hwloc_synthetic("pack:2 l3:2 core:2 pu:1", &LevelCosts::default())
            .expect("hwloc synthetic topology");
        assert_eq!(t.num_pus(), 8);
        for a in 0..8 {
            for b in 0..8 {
                assert_eq!(
                    classify((0, &[a]), (0, &[b]), Some(&t)),
                    by_hand(a, b),
                    "PUs {a}, {b}"
                );
            }
        }
    }

    fn map(nodes: usize, per_node: usize, tree: Option<NodeTree>) -> RankMap {
        let p = nodes * per_node;
        RankMap {
            node_names: (0..nodes).map(|n| format!("n{n}")).collect(),
            node: (0..p).map(|r| r / per_node).collect(),
            pu: (0..p)
                .map(|r| tree.as_ref().map(|_| r % per_node))
                .collect(),
            emulated: false,
            tree,
        }
    }

    #[test]
    fn sampled_pairs_have_their_class_and_stay_capped() {
        // a small machine: every node pair and every intra pair of 2 nodes of 8
        let m = map(2, 8, Some(tree()));
        let pairs = sample_pairs(&m, 7);
        for &(c, a, b) in &pairs {
            assert_eq!(c, m.class(a, b));
            assert_ne!(a, b);
        }
        let count = |c: Class| pairs.iter().filter(|x| x.0 == c).count();
        // on 2 nodes of 8 PUs: same-cache pairs 4 per node, same-socket 8, other 16
        assert_eq!(count(Class::SameCache), 8);
        assert_eq!(count(Class::SameSocket), MAX_PAIRS_PER_CLASS);
        assert_eq!(count(Class::OtherSocket), MAX_PAIRS_PER_CLASS);
        assert_eq!(count(Class::OtherNode), MAX_PAIRS_PER_CLASS);
        // 1024 ranks on 128 nodes: the same caps
        let big = map(128, 8, Some(tree()));
        let pairs = sample_pairs(&big, 7);
        assert!(pairs.len() <= 4 * MAX_PAIRS_PER_CLASS, "{}", pairs.len());
        let mut node_pairs: Vec<(usize, usize)> = pairs
            .iter()
            .filter(|x| x.0 == Class::OtherNode)
            .map(|&(_, a, b)| (big.node[a].min(big.node[b]), big.node[a].max(big.node[b])))
            .collect();
        node_pairs.sort_unstable();
        node_pairs.dedup();
        assert_eq!(node_pairs.len(), MAX_PAIRS_PER_CLASS);
        // 4 nodes: all 6 node pairs
        let four = map(4, 2, None);
        let pairs = sample_pairs(&four, 1);
        let mut np: Vec<(usize, usize)> = pairs
            .iter()
            .filter(|x| x.0 == Class::OtherNode)
            .map(|&(_, a, b)| {
                (
                    four.node[a].min(four.node[b]),
                    four.node[a].max(four.node[b]),
                )
            })
            .collect();
        np.sort_unstable();
        np.dedup();
        assert_eq!(np.len(), 6);
        assert!(pairs
            .iter()
            .all(|x| (x.0 == Class::SameNode) == (four.node[x.1] == four.node[x.2])));
    }
}
