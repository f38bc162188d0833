//! Candidate processes and bounds for the sparse relabeling ([`SolverHints::candidates`]).

use std::sync::Arc;

use copr_topology::{InterNode, LinkCost, Machine};

#[cfg(doc)]
use crate::model::SolverHints;
use crate::model::{CostModel, ProcessGroups};
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

/// [`SolverHints::candidates`] for a model whose `w(i, j, s)` depends on the pair only
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
pub(crate) type NodeRanks = ProcessGroups;

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
        let idx = NodeRanks::of_machine(m);
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

/// Most nodes for which the neighbourhoods of [`NearNodes`] are computed (by a scan
/// of every node per sender node); larger machines keep the senders' nodes alone.
pub(crate) const MAX_NEAR_SCAN_NODES: usize = 8192;

/// Most ranks the neighbouring nodes of one sender's node may hold; a row with `s`
/// sender nodes adds at most `max(MAX_NEAR_RANKS, 64·s)` ranks from them (fewer rings,
/// or none and the looser bound, otherwise).
pub(crate) const MAX_NEAR_RANKS: usize = 256;

/// The nodes around one node, ring by ring (fewest hops first), and what every node
/// beyond each ring costs at least.
#[derive(Debug, Clone, Default)]
pub(crate) struct NearNodes {
    /// `rings[r]`: the other nodes at the `r`-th smallest distance level, kept while
    /// rings `0..=r` together hold at most [`MAX_NEAR_RANKS`] ranks.
    pub(crate) rings: Vec<Vec<u32>>,
    /// `beyond[r]`: lower bounds on `L` and on `B` (separately) from the node to every
    /// node outside itself and rings `0..=r`; `None` when no such node exists.
    pub(crate) beyond: Vec<Option<LinkCost>>,
}

/// [`NearNodes`] of node `a`: O(nodes) link evaluations between representatives.
///
/// The distance level of a pair is its hop count ([`Machine::pair_level`]) on a torus
/// or network (the only sources rings are built for). Each
/// `beyond[r]` is the minimum over the actual links of the nodes farther than ring `r`,
/// hence a valid lower bound whatever the level means.
pub(crate) fn near_nodes(m: &Machine, idx: &NodeRanks, a: usize) -> NearNodes {
    let nodes = m.placement().num_nodes();
    let ra = idx.of(a)[0] as usize;
    // (level, node, link) of every other node that holds ranks
    let mut all: Vec<(u32, u32, LinkCost)> = (0..nodes)
        .filter(|&n| n != a && !idx.of(n).is_empty())
        .map(|n| {
            let rn = idx.of(n)[0] as usize;
            let level = match m.pair_level(ra, rn) {
                copr_topology::PairLevel::Hops(h) => h,
                _ => 0,
            };
            (level, n as u32, m.link(ra, rn))
        })
        .collect();
    all.sort_unstable_by_key(|e| (e.0, e.1));
    let mut out = NearNodes::default();
    let mut ranks = 0usize;
    let mut k = 0;
    while k < all.len() {
        let level = all[k].0;
        let end = k + all[k..].iter().take_while(|e| e.0 == level).count();
        ranks += all[k..end]
            .iter()
            .map(|e| idx.of(e.1 as usize).len())
            .sum::<usize>();
        if ranks > MAX_NEAR_RANKS {
            break;
        }
        out.rings.push(all[k..end].iter().map(|e| e.1).collect());
        let mut low: Option<LinkCost> = None;
        for e in &all[end..] {
            let l = low.get_or_insert(e.2);
            l.latency = l.latency.min(e.2.latency);
            l.inv_bandwidth = l.inv_bandwidth.min(e.2.inv_bandwidth);
        }
        out.beyond.push(low);
        k = end;
    }
    out
}

/// [`SolverHints::candidates`] of the latency + bandwidth model on `m`.
///
/// The candidates are the ranks of the senders' nodes and, when `near` is not empty (one
/// lazily built [`NearNodes`] per node), the ranks of the nodes in the first `d` rings
/// around each sender's node, for the largest `d` that adds at most
/// `max(`[`MAX_NEAR_RANKS`]`, 64·s)` ranks for `s` sender nodes (`d = 0`: none). A process on any other node is beyond ring `d` of every sender
/// node, so each package from node `a` costs at least `beyond[d−1](a)` there: the bound
/// is `Σ_e beyond[d−1](node_e).cost(bytes_e)` (`+∞` when no node is left outside), and
/// never below the `d = 0` bound, which prices every package at the cheapest
/// inter-node link `low`.
///
/// Off an explicit rank table the inter-node part of `C(x, y)` is the same for every
/// rank `y` of a node, so it is summed once per node: O(candidate nodes · senders +
/// candidates · senders on their node) cost evaluations.
pub(crate) fn machine_candidates(
    m: &Machine,
    idx: &NodeRanks,
    low: LinkCost,
    near: &[std::sync::OnceLock<NearNodes>],
    incoming: &[(usize, Package)],
    out: &mut Vec<(usize, f64)>,
) -> f64 {
    let pk: Vec<(usize, usize, u64)> = incoming
        .iter()
        .filter(|(_, p)| p.bytes > 0)
        .map(|(i, p)| (*i, m.node_of(*i), p.bytes))
        .collect();
    let mut bound: f64 = pk.iter().map(|e| low.cost(e.2)).sum();
    let mut nodes: Vec<usize> = pk.iter().map(|e| e.1).collect();
    nodes.sort_unstable();
    nodes.dedup();
    if !near.is_empty() && !pk.is_empty() {
        let near = |a: usize| near[a].get_or_init(|| near_nodes(m, idx, a));
        let deepest = nodes
            .iter()
            .map(|&a| near(a).rings.len())
            .min()
            .unwrap_or(0);
        // the widest common depth whose rings add at most max(MAX_NEAR_RANKS, 64·s) ranks
        for depth in (1..=deepest).rev() {
            let mut wider = nodes.clone();
            for &a in &nodes {
                for ring in &near(a).rings[..depth] {
                    wider.extend(ring.iter().map(|&n| n as usize));
                }
            }
            wider.sort_unstable();
            wider.dedup();
            let added: usize = wider
                .iter()
                .filter(|n| nodes.binary_search(n).is_err())
                .map(|&n| idx.of(n).len())
                .sum();
            if added > MAX_NEAR_RANKS.max(64 * nodes.len()) {
                continue;
            }
            let b: f64 = pk
                .iter()
                .map(|e| match near(e.1).beyond[depth - 1] {
                    Some(c) => c.cost(e.2),
                    None => f64::INFINITY,
                })
                .sum();
            // both bounds hold; keep the larger
            bound = bound.max(b);
            nodes = wider;
            break;
        }
    }
    // every node holds a candidate: every process was pushed, nothing is left to bound
    if nodes.len() == m.placement().num_nodes() {
        bound = f64::INFINITY;
    }
    let explicit = m.rank_matrix().is_some();
    let cost = |i: usize, y: usize, b: u64| if i == y { 0.0 } else { m.cost(i, y, b) };
    for n in nodes {
        let ranks = idx.of(n);
        if ranks.is_empty() {
            continue;
        }
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

/// [`SolverHints::add_group_bounds`] of the latency + bandwidth model on `m` for its
/// nodes `idx`: off an explicit rank table a package from node `a` costs
/// `L(a, n) + B(a, n)·bytes` at every rank of another node `n` (and at least 0 at the
/// ranks of `a`), so the sum over the packages is exact for the ranks of a node that
/// sends `x` nothing. `false` for an explicit rank table (links differ within a node).
///
/// # Complexity
/// O(nodes · (sender nodes + packages)).
pub(crate) fn machine_group_bounds(
    m: &Machine,
    idx: &NodeRanks,
    links: &[std::sync::OnceLock<LinkRow>],
    incoming: &[(usize, Package)],
    out: &mut [f64],
) -> bool {
    if m.rank_matrix().is_some() || out.len() != idx.len() {
        return false;
    }
    // (sender node, its representative, bytes) of the non-empty packages, by node
    let mut pk: Vec<(usize, usize, u64)> = incoming
        .iter()
        .filter(|(_, p)| p.bytes > 0)
        .map(|(i, p)| (m.node_of(*i), *i, p.bytes))
        .collect();
    pk.sort_unstable();
    let mut k = 0;
    while k < pk.len() {
        let (a, i) = (pk[k].0, pk[k].1);
        let end = k + pk[k..].iter().take_while(|e| e.0 == a).count();
        if let Some(cell) = links.get(a) {
            // the links from node a, once per node (between nodes a link depends on
            // the nodes alone)
            let row = cell.get_or_init(|| LinkRow::new(m, idx, a, i));
            let (count, bytes) = pk[k..end]
                .iter()
                .fold((0.0, 0.0), |(c, b), e| (c + 1.0, b + e.2 as f64));
            let n = out.len();
            let (lat, inv) = (&row.latency[..n], &row.inv_bandwidth[..n]);
            for j in 0..n {
                out[j] += count * lat[j] + bytes * inv[j];
            }
            k = end;
            continue;
        }
        for (n, o) in out.iter_mut().enumerate() {
            let Some(&rep) = idx.of(n).first() else {
                continue;
            };
            if n == a {
                continue;
            }
            let l = m.link(i, rep as usize);
            *o += pk[k..end].iter().map(|e| l.cost(e.2)).sum::<f64>();
        }
        k = end;
    }
    true
}

/// [`SolverHints::add_group_bounds`] of a model whose `w(i, j, s)` depends on the pair only
/// through `i == j`: at a process of group `g` every package is remote except those
/// whose sender is that very process, so the remote total plus the most negative
/// (local − remote) adjustment of one sender in `g` (or 0) bounds every process of `g`.
pub(crate) fn pair_free_group_bounds(
    m: &dyn CostModel,
    incoming: &[(usize, Package)],
    groups: &ProcessGroups,
    out: &mut [f64],
) -> bool {
    // (sender, local − remote) summed per sender
    let mut adjust: Vec<(usize, f64)> = Vec::with_capacity(incoming.len());
    let mut remote_total = 0.0;
    for (i, p) in incoming {
        if *i >= groups.processes() {
            return false;
        }
        let remote = m.cost(*i, usize::from(*i == 0), p);
        remote_total += remote;
        adjust.push((*i, m.cost(*i, *i, p) - remote));
    }
    adjust.sort_unstable_by_key(|e| e.0);
    for o in out.iter_mut() {
        *o += remote_total;
    }
    // (group, the sender's summed adjustment) of the senders that are cheaper at home
    let mut low: Vec<(usize, f64)> = Vec::new();
    let mut k = 0;
    while k < adjust.len() {
        let y = adjust[k].0;
        let mut a = 0.0;
        while k < adjust.len() && adjust[k].0 == y {
            a += adjust[k].1;
            k += 1;
        }
        if a < 0.0 {
            low.push((groups.group_of(y), a));
        }
    }
    low.sort_unstable_by(|p, q| p.0.cmp(&q.0).then(p.1.total_cmp(&q.1)));
    low.dedup_by_key(|e| e.0);
    for (g, a) in low {
        out[g] += a;
    }
    true
}

/// Lazily built helpers of a [`crate::LatencyBandwidth`] model.
#[derive(Debug, Default)]
pub(crate) struct MachineHelpers {
    pub(crate) nodes: std::sync::OnceLock<Arc<NodeRanks>>,
    pub(crate) low: std::sync::OnceLock<LinkCost>,
    /// One [`NearNodes`] per node, built when the node first holds a sender; empty (no
    /// rings) unless the nodes are a torus or a network of at most
    /// [`MAX_NEAR_SCAN_NODES`] nodes without an explicit rank table.
    pub(crate) near: std::sync::OnceLock<Vec<std::sync::OnceLock<NearNodes>>>,
    /// Per node, its links to every node, built when the node first holds a sender of a
    /// row whose group bounds are asked for; empty (links computed each time) beyond
    /// [`MAX_LINK_TABLE_NODES`] nodes or with an explicit rank table.
    pub(crate) links: std::sync::OnceLock<Vec<std::sync::OnceLock<LinkRow>>>,
}

/// The links from one node to every node, split for vectorised sums: 0 to itself (its
/// packages are free in the bound), `+∞` latency to nodes without ranks (no process to
/// bound).
#[derive(Debug)]
pub(crate) struct LinkRow {
    latency: Box<[f64]>,
    inv_bandwidth: Box<[f64]>,
}

impl LinkRow {
    /// The links from node `a`, whose rank `i` sends.
    fn new(m: &Machine, idx: &NodeRanks, a: usize, i: usize) -> Self {
        let links: Vec<LinkCost> = (0..idx.len())
            .map(|n| match idx.of(n).first() {
                Some(&rep) if n != a => m.link(i, rep as usize),
                Some(_) => LinkCost::ZERO,
                None => LinkCost {
                    latency: f64::INFINITY,
                    inv_bandwidth: 0.0,
                },
            })
            .collect();
        Self {
            latency: links.iter().map(|l| l.latency).collect(),
            inv_bandwidth: links.iter().map(|l| l.inv_bandwidth).collect(),
        }
    }
}

/// Most nodes for which [`machine_group_bounds`] keeps each sender node's links to every
/// node (at most `nodes²` links of 16 bytes: 268 MB at 4096 nodes).
pub(crate) const MAX_LINK_TABLE_NODES: usize = 4096;

/// Shared, so that clones of a model share what was built.
pub(crate) type SharedHelpers = Arc<MachineHelpers>;
