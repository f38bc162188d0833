//! Candidate processes and bounds for the sparse relabeling ([`CostModel::candidates`]).

use std::sync::Arc;

use copr_topology::{InterNode, LinkCost, Machine};

use crate::models::CostModel;
use crate::package::Package;

/// `C(x, y) = Σ_i w(i, y, S[i][x])`: what the packages `incoming = [(i, S[i][x])]` of a
/// target label cost when process `y` takes the label.
///
/// ```
/// use copr_cost_models::{delivered_cost, CostModel, LocallyFreeVolume, Package};
/// let inc = [(0, Package::plain(10)), (2, Package::plain(5))];
/// assert_eq!(delivered_cost(&LocallyFreeVolume, 0, &inc), 5.0);
/// assert_eq!(delivered_cost(&LocallyFreeVolume, 1, &inc), 15.0);
/// ```
pub fn delivered_cost(model: &dyn CostModel, y: usize, incoming: &[(usize, Package)]) -> f64 {
    incoming.iter().map(|(i, p)| model.cost(*i, y, p)).sum()
}

/// [`CostModel::candidates`] for a model whose `w(i, j, s)` depends on the pair only
/// through `i == j`: the senders and `x` are the candidates; at any other process every
/// package is remote, which is exactly the bound.
pub(crate) fn pair_free_candidates(
    m: &dyn CostModel,
    x: usize,
    incoming: &[(usize, Package)],
    out: &mut Vec<(usize, f64)>,
) -> Option<f64> {
    let mut remote_total = 0.0;
    // (process, its local cost minus its remote cost) per package, and x
    let mut adjust: Vec<(usize, f64)> = incoming
        .iter()
        .map(|(i, p)| {
            let remote = m.cost(*i, usize::from(*i == 0), p);
            remote_total += remote;
            (*i, m.cost(*i, *i, p) - remote)
        })
        .collect();
    adjust.push((x, 0.0));
    adjust.sort_unstable_by_key(|e| e.0);
    let mut k = 0;
    while k < adjust.len() {
        let y = adjust[k].0;
        let mut c = remote_total;
        while k < adjust.len() && adjust[k].0 == y {
            c += adjust[k].1;
            k += 1;
        }
        out.push((y, c));
    }
    Some(remote_total)
}

/// The ranks of each node of a machine, by placement node index.
#[derive(Debug)]
pub(crate) struct NodeRanks {
    start: Vec<usize>,
    ranks: Vec<u32>,
}

impl NodeRanks {
    /// O(p) counting sort of the ranks by node.
    pub(crate) fn new(m: &Machine) -> Self {
        let nodes = m.placement().num_nodes();
        let mut start = vec![0usize; nodes + 1];
        for r in 0..m.ranks() {
            start[m.node_of(r) + 1] += 1;
        }
        for n in 0..nodes {
            start[n + 1] += start[n];
        }
        let mut fill = start.clone();
        let mut ranks = vec![0u32; m.ranks()];
        for r in 0..m.ranks() {
            let n = m.node_of(r);
            ranks[fill[n]] = r as u32;
            fill[n] += 1;
        }
        Self { start, ranks }
    }

    pub(crate) fn of(&self, node: usize) -> &[u32] {
        &self.ranks[self.start[node]..self.start[node + 1]]
    }
}

/// Node pairs scanned for the cheapest inter-node link before falling back to a
/// bound the network type gives directly.
const MAX_SCANNED_NODE_PAIRS: usize = 1 << 22;

/// A lower bound on `L(i, j)` and on `B(i, j)` (separately) over every rank pair on
/// different nodes: the minimum over all node pairs when there are at most 2²² of them
/// (or over the explicit rank table), otherwise what the network guarantees (a torus:
/// its zero-hop latency and injection bandwidth; a uniform network: its cost), else 0.
pub(crate) fn min_inter_node_link(m: &Machine) -> LinkCost {
    let nodes = m.placement().num_nodes();
    let mut low = LinkCost {
        latency: f64::INFINITY,
        inv_bandwidth: f64::INFINITY,
    };
    let mut take = |c: LinkCost| {
        low.latency = low.latency.min(c.latency);
        low.inv_bandwidth = low.inv_bandwidth.min(c.inv_bandwidth);
    };
    if nodes < 2 {
        return LinkCost::ZERO;
    }
    if m.rank_matrix().is_some() {
        let p = m.ranks();
        for i in 0..p {
            for j in 0..p {
                if !m.same_node(i, j) {
                    take(m.link(i, j));
                }
            }
        }
    } else if let Some(InterNode::Uniform(c)) = m.inter() {
        take(*c);
    } else if nodes.saturating_mul(nodes) <= MAX_SCANNED_NODE_PAIRS {
        let idx = NodeRanks::new(m);
        let reps: Vec<usize> = (0..nodes)
            .filter_map(|n| idx.of(n).first().map(|&r| r as usize))
            .collect();
        for &a in &reps {
            for &b in &reps {
                if a != b {
                    take(m.link(a, b));
                }
            }
        }
    } else if let Some(InterNode::Torus(t)) = m.inter() {
        take(t.link_cost(0, 0));
    } else {
        return LinkCost::ZERO;
    }
    if low.latency.is_finite() && low.inv_bandwidth.is_finite() {
        low
    } else {
        LinkCost::ZERO
    }
}

/// [`CostModel::candidates`] of the latency + bandwidth model on `m`: the senders'
/// nodes' ranks are the candidates, every other process receives every package from
/// another node, at least at the cheapest inter-node link `low` (`+∞` when the
/// senders cover every node: no other process is left).
///
/// Off an explicit rank table the inter-node part of `C(x, y)` is the same for every
/// rank `y` of a node, so it is summed once per node: O(nodes of senders · senders +
/// candidates · senders on their node) cost evaluations.
pub(crate) fn machine_candidates(
    m: &Machine,
    idx: &NodeRanks,
    low: LinkCost,
    incoming: &[(usize, Package)],
    out: &mut Vec<(usize, f64)>,
) -> f64 {
    let pk: Vec<(usize, usize, u64)> = incoming
        .iter()
        .filter(|(_, p)| p.bytes > 0)
        .map(|(i, p)| (*i, m.node_of(*i), p.bytes))
        .collect();
    let bound: f64 = pk.iter().map(|e| low.cost(e.2)).sum();
    let mut nodes: Vec<usize> = pk.iter().map(|e| e.1).collect();
    nodes.sort_unstable();
    nodes.dedup();
    // every node holds a sender: every process was pushed, nothing is left to bound
    let bound = if nodes.len() == m.placement().num_nodes() {
        f64::INFINITY
    } else {
        bound
    };
    let explicit = m.rank_matrix().is_some();
    let cost = |i: usize, y: usize, b: u64| if i == y { 0.0 } else { m.cost(i, y, b) };
    for n in nodes {
        let ranks = idx.of(n);
        if explicit {
            for &y in ranks {
                let y = y as usize;
                out.push((y, pk.iter().map(|e| cost(e.0, y, e.2)).sum()));
            }
            continue;
        }
        let rep = ranks[0] as usize;
        let base: f64 = pk
            .iter()
            .filter(|e| e.1 != n)
            .map(|e| cost(e.0, rep, e.2))
            .sum();
        let here: Vec<&(usize, usize, u64)> = pk.iter().filter(|e| e.1 == n).collect();
        for &y in ranks {
            let y = y as usize;
            out.push((
                y,
                base + here.iter().map(|e| cost(e.0, y, e.2)).sum::<f64>(),
            ));
        }
    }
    bound
}

/// Lazily built helpers of a [`crate::LatencyBandwidth`] model.
#[derive(Debug, Default)]
pub(crate) struct MachineHelpers {
    pub(crate) nodes: std::sync::OnceLock<NodeRanks>,
    pub(crate) low: std::sync::OnceLock<LinkCost>,
}

/// Shared, so that clones of a model share what was built.
pub(crate) type SharedHelpers = Arc<MachineHelpers>;
