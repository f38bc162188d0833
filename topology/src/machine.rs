//! [`Machine`]: ranks placed on nodes, with intra-node and inter-node cost
//! sources combined into `L(i, j)` and `B(i, j)` per rank pair.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Origin, Result, TopologyError};
use crate::link::{inconsistent, LinkCost};
use crate::matrix::PairTable;
use crate::network::NetworkCosts;
use crate::placement::Placement;
use crate::torus::Torus;
use crate::tree::{Level, NodeTree};

/// Default cost between two ranks on one node when no intra-node source is
/// given: 0.5 µs latency, 12 GB/s (one core's memcpy rate).
pub const DEFAULT_INTRA: LinkCost = LinkCost {
    latency: 5.0e-7,
    inv_bandwidth: 1.0 / 1.2e10,
};

/// Where the cost between two ranks on the same node comes from.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum IntraNode {
    /// The same cost for every pair of PUs.
    Uniform(LinkCost),
    /// By the level of the PUs' deepest common ancestor (hwloc or a shape).
    Tree(NodeTree),
    /// An explicit PU × PU table.
    Matrix(PairTable),
}

impl IntraNode {
    /// The number of PUs per node, if the source knows it.
    pub fn num_pus(&self) -> Option<usize> {
        match self {
            Self::Uniform(_) => None,
            Self::Tree(t) => Some(t.num_pus()),
            Self::Matrix(m) => Some(m.len()),
        }
    }

    /// The cost between PUs `a` and `b` of one node.
    ///
    /// # Panics
    /// If a PU index is out of range for the source.
    #[inline]
    pub fn link(&self, a: usize, b: usize) -> LinkCost {
        match self {
            Self::Uniform(c) => *c,
            Self::Tree(t) => t.link(a, b),
            Self::Matrix(m) => m.link_cost(a, b),
        }
    }

    /// A one-line description.
    pub fn description(&self) -> String {
        match self {
            Self::Uniform(c) => format!(
                "uniform (L = {:.3e} s, {:.3e} B/s)",
                c.latency,
                1.0 / c.inv_bandwidth
            ),
            Self::Tree(t) => format!("{} PUs, {}", t.num_pus(), t.description()),
            Self::Matrix(m) => format!("PU matrix: {}", m.description()),
        }
    }
}

/// Where the cost between two ranks on different nodes comes from.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InterNode {
    /// The same cost for every pair of nodes; any node name is accepted.
    Uniform(LinkCost),
    /// A torus (nodes by name from its coordinates).
    Torus(Torus),
    /// Shortest paths in a network graph (nodes are its hosts).
    Network(NetworkCosts),
    /// An explicit node × node table (nodes are its names).
    Matrix(PairTable),
}

impl InterNode {
    /// The source's index of the node called `name`; `None` if unknown.
    /// [`InterNode::Uniform`] knows no names and returns `None`.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        match self {
            Self::Uniform(_) => None,
            Self::Torus(t) => t.node_index(name),
            Self::Network(n) => n.host_index(name),
            Self::Matrix(m) => m.index_of(name),
        }
    }

    /// The source's node names in order (`None` for [`InterNode::Uniform`]);
    /// placement rules use the first ones.
    pub fn node_names(&self) -> Option<Vec<String>> {
        let (n, f): (usize, &dyn Fn(usize) -> String) = match self {
            Self::Uniform(_) => return None,
            Self::Torus(t) => (t.num_nodes(), &|k| t.node_name(k).to_string()),
            Self::Network(n) => (n.num_hosts(), &|k| n.host_name(k).to_string()),
            Self::Matrix(m) => (m.len(), &|k| m.name(k).to_string()),
        };
        Some((0..n).map(f).collect())
    }

    /// The cost between source nodes `a` and `b` (`a != b`).
    ///
    /// # Panics
    /// If a node index is out of range for the source.
    #[inline]
    pub fn link(&self, a: usize, b: usize) -> LinkCost {
        match self {
            Self::Uniform(c) => *c,
            Self::Torus(t) => t.link_cost(a, b),
            Self::Network(n) => n.link_cost(a, b),
            Self::Matrix(m) => m.link_cost(a, b),
        }
    }

    /// [`InterNode::link`] and [`InterNode::pair_level`] of `(a, b)` at once.
    #[inline]
    fn link_level(&self, a: usize, b: usize) -> (LinkCost, PairLevel) {
        match self {
            Self::Torus(t) => {
                let (c, h) = t.link_and_hops(a, b);
                (c, PairLevel::Hops(h))
            }
            _ => (self.link(a, b), self.pair_level(a, b)),
        }
    }

    /// The class of the node pair `(a, b)` for summaries.
    pub fn pair_level(&self, a: usize, b: usize) -> PairLevel {
        match self {
            Self::Uniform(_) => PairLevel::InterNode,
            Self::Torus(t) => PairLevel::Hops(t.hops(a, b)),
            Self::Network(n) => PairLevel::Hops(n.hops(a, b)),
            Self::Matrix(_) => PairLevel::InterNode,
        }
    }

    /// A key such that source nodes with equal keys cost the same to and
    /// from every other node (and pairs of distinct nodes with one key all
    /// cost alike): torus coordinates, a network's host class, one key for
    /// a uniform source, the node itself for a matrix.
    fn pricing_key(&self, node: usize) -> usize {
        match self {
            Self::Uniform(_) => 0,
            Self::Torus(t) => t.coord_index(t.coords(node)),
            Self::Network(n) => n.host_class(node),
            Self::Matrix(_) => node,
        }
    }

    /// A one-line description.
    pub fn description(&self) -> String {
        match self {
            Self::Uniform(c) => format!(
                "uniform (L = {:.3e} s, {:.3e} B/s)",
                c.latency,
                1.0 / c.inv_bandwidth
            ),
            Self::Torus(t) => t.description().to_string(),
            Self::Network(n) => n.description().to_string(),
            Self::Matrix(m) => format!("node matrix: {}", m.description()),
        }
    }
}

/// What kind of pair two ranks form, for summaries: the shared level inside
/// a node, or the distance between nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairLevel {
    /// Same node, sharing this level (tree source).
    Intra(Level),
    /// Same node (uniform or matrix source).
    SameNode,
    /// Different nodes this many links apart (torus or network).
    Hops(u32),
    /// Different nodes (uniform or matrix source).
    InterNode,
    /// Given by an explicit rank × rank matrix.
    Explicit,
}

impl fmt::Display for PairLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Intra(l) => write!(f, "same node, same {l}"),
            Self::SameNode => f.write_str("same node"),
            Self::Hops(1) => f.write_str("other node, 1 hop"),
            Self::Hops(h) => write!(f, "other node, {h} hops"),
            Self::InterNode => f.write_str("other node"),
            Self::Explicit => f.write_str("explicit"),
        }
    }
}

/// The order in which a [`PlacementRule`] fills nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RankOrder {
    /// Block: [`Placement::packed`].
    #[default]
    Packed,
    /// Cyclic: [`Placement::round_robin`].
    RoundRobin,
}

/// How to place ranks when no explicit [`Placement`] is given.
///
/// ```
/// use copr_topology::{PlacementRule, RankOrder};
/// let r = PlacementRule::packed(64, Some(8));
/// assert_eq!((r.order, r.ranks, r.ranks_per_node), (RankOrder::Packed, 64, Some(8)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacementRule {
    /// Packed or round-robin.
    pub order: RankOrder,
    /// Number of ranks.
    pub ranks: usize,
    /// Ranks per node (`None`: PUs per node of the intra source, else 1).
    pub ranks_per_node: Option<usize>,
}

impl PlacementRule {
    /// [`RankOrder::Packed`] placement of `ranks` ranks.
    pub fn packed(ranks: usize, ranks_per_node: Option<usize>) -> Self {
        Self {
            order: RankOrder::Packed,
            ranks,
            ranks_per_node,
        }
    }

    /// [`RankOrder::RoundRobin`] placement of `ranks` ranks.
    pub fn round_robin(ranks: usize, ranks_per_node: Option<usize>) -> Self {
        Self {
            order: RankOrder::RoundRobin,
            ranks,
            ranks_per_node,
        }
    }
}

/// Builds a [`Machine`]; see [`Machine::builder`].
#[derive(Clone, Debug, Default)]
pub struct MachineBuilder {
    intra: Option<IntraNode>,
    inter: Option<InterNode>,
    placement: Option<Placement>,
    rule: Option<PlacementRule>,
    nodes: Option<Vec<String>>,
}

impl MachineBuilder {
    /// The intra-node source (default: [`IntraNode::Uniform`]`(`[`DEFAULT_INTRA`]`)`).
    #[must_use]
    pub fn intra(mut self, intra: IntraNode) -> Self {
        self.intra = Some(intra);
        self
    }

    /// The inter-node source (required when ranks span several nodes).
    #[must_use]
    pub fn inter(mut self, inter: InterNode) -> Self {
        self.inter = Some(inter);
        self
    }

    /// An explicit placement (overrides [`MachineBuilder::rule`]).
    #[must_use]
    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = Some(placement);
        self
    }

    /// A placement rule; nodes come from [`MachineBuilder::nodes`], else the
    /// inter-node source's node list, else generated names `node0, node1, …`.
    #[must_use]
    pub fn rule(mut self, rule: PlacementRule) -> Self {
        self.rule = Some(rule);
        self
    }

    /// The node names a placement rule uses.
    #[must_use]
    pub fn nodes(mut self, nodes: Vec<String>) -> Self {
        self.nodes = Some(nodes);
        self
    }

    /// Builds the machine.
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] without placement or rule, for ranks
    /// on several nodes without an inter-node source, or too few nodes for a
    /// rule; [`TopologyError::UnknownPlace`] for a rank on a node the
    /// inter-node source does not know or on a PU beyond the node's PUs.
    pub fn build(mut self) -> Result<Machine> {
        let intra = self
            .intra
            .take()
            .unwrap_or(IntraNode::Uniform(DEFAULT_INTRA));
        let placement = self.placement_on(&intra)?;
        Machine::assemble(intra, self.inter, placement)
    }

    /// [`MachineBuilder::build`] with the inter-node source made from the placement
    /// (`inter` gets it): a network keeps only the hosts the ranks are on, so only
    /// they must reach each other. The placement rule's node list, if not given with
    /// [`MachineBuilder::nodes`], must be.
    pub(crate) fn build_with_inter(
        mut self,
        inter: impl FnOnce(&Placement) -> Result<InterNode>,
    ) -> Result<Machine> {
        let intra = self
            .intra
            .take()
            .unwrap_or(IntraNode::Uniform(DEFAULT_INTRA));
        let placement = self.placement_on(&intra)?;
        let inter = inter(&placement)?;
        Machine::assemble(intra, Some(inter), placement)
    }

    /// The placement given, or the rule's on the node list (see
    /// [`MachineBuilder::rule`]).
    fn placement_on(&mut self, intra: &IntraNode) -> Result<Placement> {
        Ok(match (self.placement.take(), self.rule.as_ref()) {
            (Some(p), _) => p,
            (None, Some(rule)) => {
                let ranks = rule.ranks;
                Placement::check_ranks(ranks)?;
                let rpn = rule.ranks_per_node.or_else(|| intra.num_pus()).unwrap_or(1);
                let nodes = self
                    .nodes
                    .take()
                    .or_else(|| self.inter.as_ref().and_then(InterNode::node_names))
                    .unwrap_or_else(|| {
                        (0..ranks.div_ceil(rpn.max(1)))
                            .map(|k| format!("node{k}"))
                            .collect()
                    });
                match rule.order {
                    RankOrder::Packed => Placement::packed(ranks, rpn, &nodes)?,
                    RankOrder::RoundRobin => Placement::round_robin(ranks, rpn, &nodes)?,
                }
            }
            (None, None) => {
                return Err(inconsistent(
                    "placement",
                    "a machine needs a placement or a placement rule",
                ))
            }
        })
    }
}

/// Ranks placed on a machine: answers `L(i, j)`, `B(i, j)` and
/// `cost(i, j, n) = L(i, j) + B(i, j)·n` for ranks `i`, `j`.
///
/// Two ranks on the same node are priced by the intra-node source at their
/// PUs; ranks on different nodes by the inter-node source at their nodes.
/// Alternatively an explicit rank × rank matrix prices every pair
/// ([`Machine::from_rank_matrix`]). `i == j` is answered like any pair
/// (same PU); treating it as free is the cost model's business.
///
/// # Complexity
/// Lookups are `O(1)` (`O(n)` for an n-D torus). Nothing is stored per
/// rank pair: inter-node costs come from the source on demand — the torus
/// formula, a network's per-class shortest-path rows (computed on first use,
/// see [`NetworkCosts`]), or a node matrix the user gave. For at most 2048
/// placement nodes (`N² ≤ 2²²`) with at most 65536 distinct costs they are
/// also tabulated per node pair at build time (`2·N²` bytes, `O(N²)` source
/// lookups); beyond that no `N²` table is built.
///
/// ```
/// use copr_topology::{InterNode, IntraNode, LinkCost, Machine, PlacementRule};
/// let m = Machine::builder()
///     .intra(IntraNode::Uniform(LinkCost::new(1e-7, 1e-10).unwrap()))
///     .inter(InterNode::Uniform(LinkCost::new(2e-6, 1e-9).unwrap()))
///     .rule(PlacementRule::packed(8, Some(4)))
///     .build()
///     .unwrap();
/// assert_eq!(m.ranks(), 8);
/// assert_eq!(m.latency(0, 3), 1e-7);
/// assert_eq!(m.latency(0, 4), 2e-6);
/// assert_eq!(m.cost(0, 4, 1000), 2e-6 + 1e-9 * 1000.0);
/// assert_eq!(m.ranks_per_node(), [4, 4]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    placement: Placement,
    rank_node: Vec<u32>,
    rank_pu: Vec<u32>,
    rank_src: Vec<u32>,
    intra: IntraNode,
    inter: InterNode,
    has_inter: bool,
    explicit: Option<PairTable>,
    node_table: Option<NodeTable>,
}

/// Inter-node costs between the placement's nodes, as a class index per node
/// pair into a list of distinct costs (compact and cache-friendly).
#[derive(Clone, Debug, PartialEq)]
struct NodeTable {
    n: usize,
    class: Vec<u16>,
    costs: Vec<LinkCost>,
}

/// Node tables are built for at most this many node pairs (4 Mi: 2048
/// nodes, 8 MiB); beyond, costs come from the source's formulas (torus) or
/// its on-demand rows (network).
const NODE_TABLE_MAX_PAIRS: usize = 1 << 22;

/// Threads for building summaries and network rows.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl NodeTable {
    fn build(inter: &InterNode, node_src: &[u32]) -> Option<Self> {
        let n = node_src.len();
        if n < 2 || n.checked_mul(n)? > NODE_TABLE_MAX_PAIRS {
            return None;
        }
        if let InterNode::Network(net) = inter {
            net.prepare(node_src.iter().map(|&k| k as usize), threads());
        }
        let mut ids: std::collections::HashMap<(u64, u64), u16> = std::collections::HashMap::new();
        let mut costs = Vec::new();
        let mut class = vec![0u16; n * n];
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                let c = inter.link(node_src[a] as usize, node_src[b] as usize);
                let key = (c.latency.to_bits(), c.inv_bandwidth.to_bits());
                let id = match ids.get(&key) {
                    Some(&id) => id,
                    None => {
                        let id = u16::try_from(costs.len()).ok()?;
                        ids.insert(key, id);
                        costs.push(c);
                        id
                    }
                };
                class[a * n + b] = id;
            }
        }
        if costs.is_empty() {
            costs.push(LinkCost::ZERO);
        }
        Some(Self { n, class, costs })
    }
}

impl Machine {
    /// A builder: `Machine::builder().intra(..).inter(..).placement(..).build()`.
    pub fn builder() -> MachineBuilder {
        MachineBuilder::default()
    }

    /// Every rank pair priced by an explicit `p × p` table (e.g. from a
    /// calibration run). `placement` (same number of ranks) only informs
    /// [`Machine::same_node`] and summaries; without it each rank is its own
    /// node named like its table row.
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] if the placement has a different
    /// number of ranks.
    pub fn from_rank_matrix(table: PairTable, placement: Option<Placement>) -> Result<Self> {
        let p = table.len();
        let placement = match placement {
            Some(pl) if pl.ranks() != p => {
                return Err(inconsistent(
                    "placement",
                    format!(
                        "the rank matrix is {p}×{p} but the placement has {} ranks",
                        pl.ranks()
                    ),
                ))
            }
            Some(pl) => pl,
            None => Placement::from_pairs((0..p).map(|k| (table.name(k).to_string(), None))),
        };
        let mut m = Self::assemble(
            IntraNode::Uniform(LinkCost::ZERO),
            Some(InterNode::Uniform(LinkCost::ZERO)),
            placement,
        )?;
        m.explicit = Some(table);
        Ok(m)
    }

    fn assemble(intra: IntraNode, inter: Option<InterNode>, placement: Placement) -> Result<Self> {
        let p = placement.ranks();
        if p == 0 {
            return Err(inconsistent(
                "placement",
                "a machine needs at least one rank",
            ));
        }
        // Map placement nodes to source nodes.
        let nn = placement.num_nodes();
        let mut node_src = vec![0u32; nn];
        match &inter {
            None if nn > 1 => {
                return Err(inconsistent(
                    "inter",
                    format!(
                        "the ranks are placed on {nn} nodes, but no inter-node source is given"
                    ),
                ))
            }
            None => {}
            Some(InterNode::Uniform(_)) => {
                for (k, s) in node_src.iter_mut().enumerate() {
                    *s = k as u32;
                }
            }
            Some(src) => {
                for (k, s) in node_src.iter_mut().enumerate() {
                    let name = placement.node_name(k);
                    let idx = src.node_index(name).ok_or_else(|| {
                        let rank = (0..p).find(|&r| placement.node_of(r) == k).unwrap_or(0);
                        TopologyError::UnknownPlace {
                            origin: Origin::none(),
                            rank,
                            place: format!("node `{name}`"),
                            source_name: format!("the inter-node source ({})", src.description()),
                        }
                    })?;
                    *s = idx as u32;
                }
            }
        }
        // PUs.
        let npu = intra.num_pus();
        let mut next_slot = vec![0usize; nn];
        let mut rank_pu = Vec::with_capacity(p);
        for r in 0..p {
            let n = placement.node_of(r);
            let slot = next_slot[n];
            next_slot[n] += 1;
            let pu = match (placement.pu_of(r), npu) {
                (Some(pu), Some(np)) if pu >= np => {
                    return Err(TopologyError::UnknownPlace {
                        origin: Origin::none(),
                        rank: r,
                        place: format!("PU {pu} of node `{}`", placement.node_name(n)),
                        source_name: format!("the intra-node source ({np} PUs per node)"),
                    })
                }
                (Some(pu), _) => pu,
                (None, Some(np)) => slot % np,
                (None, None) => slot,
            };
            rank_pu.push(pu as u32);
        }
        let rank_node: Vec<u32> = (0..p).map(|r| placement.node_of(r) as u32).collect();
        let rank_src = rank_node.iter().map(|&n| node_src[n as usize]).collect();
        let has_inter = inter.is_some();
        let node_table = match &inter {
            Some(src) => NodeTable::build(src, &node_src),
            None => None,
        };
        Ok(Self {
            placement,
            rank_node,
            rank_pu,
            rank_src,
            intra,
            // Without an inter-node source all ranks share one node and this
            // is never consulted.
            inter: inter.unwrap_or(InterNode::Uniform(LinkCost::ZERO)),
            has_inter,
            explicit: None,
            node_table,
        })
    }

    /// The number of ranks `p`.
    pub fn ranks(&self) -> usize {
        self.rank_node.len()
    }

    /// The placement.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The intra-node source.
    pub fn intra(&self) -> &IntraNode {
        &self.intra
    }

    /// The inter-node source, if any.
    pub fn inter(&self) -> Option<&InterNode> {
        self.has_inter.then_some(&self.inter)
    }

    /// The explicit rank × rank table, if this machine uses one.
    pub fn rank_matrix(&self) -> Option<&PairTable> {
        self.explicit.as_ref()
    }

    /// The node (placement index) of `rank`.
    ///
    /// # Panics
    /// If `rank >= ranks()`.
    #[inline]
    pub fn node_of(&self, rank: usize) -> usize {
        self.rank_node[rank] as usize
    }

    /// The PU (within its node) of `rank`.
    ///
    /// # Panics
    /// If `rank >= ranks()`.
    #[inline]
    pub fn pu_of(&self, rank: usize) -> usize {
        self.rank_pu[rank] as usize
    }

    /// Whether ranks `i` and `j` share a node.
    ///
    /// # Panics
    /// If `i` or `j` is `>= ranks()`.
    #[inline]
    pub fn same_node(&self, i: usize, j: usize) -> bool {
        self.rank_node[i] == self.rank_node[j]
    }

    /// Ranks on each node, by placement node index.
    pub fn ranks_per_node(&self) -> Vec<usize> {
        self.placement.ranks_per_node()
    }

    /// PUs per node, if the intra-node source knows them (never for a rank
    /// matrix).
    pub fn pus_per_node(&self) -> Option<usize> {
        match self.explicit {
            Some(_) => None,
            None => self.intra.num_pus(),
        }
    }

    /// `Some((ranks, pus))` when some node holds more ranks than it has PUs:
    /// the most ranks on a node and the PUs per node. Ranks placed by a rule
    /// then share PUs (rank `k` of a node on PU `k mod pus`) and are priced as
    /// the same PU; a caller should say so.
    ///
    /// ```
    /// use copr_topology::{IntraNode, LevelCosts, Machine, NodeTree, PlacementRule};
    /// let tree = NodeTree::from_shape("core:4", &LevelCosts::default()).unwrap();
    /// let m = Machine::builder()
    ///     .intra(IntraNode::Tree(tree))
    ///     .rule(PlacementRule::packed(6, Some(6)))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(m.oversubscription(), Some((6, 4)));
    /// assert!(m.summary().to_string().contains("oversubscribed: up to 6 ranks on a node of 4 PUs"));
    /// ```
    pub fn oversubscription(&self) -> Option<(usize, usize)> {
        let pus = self.pus_per_node()?;
        let most = self.ranks_per_node().into_iter().max().unwrap_or(0);
        (most > pus).then_some((most, pus))
    }

    /// The summary's pairs inside nodes: every ordered pair of distinct ranks on one
    /// node. Their cost and class depend on the two ranks' PUs only, so the pairs are
    /// counted per pair of PUs and nodes with the same PU occupancy are priced once,
    /// weighted by how many there are; with a uniform inside of the node, one class
    /// holds them all.
    ///
    /// # Complexity
    /// O(ranks) plus, per distinct occupancy, O(u²) for its u used PUs (a placement of
    /// 2²⁴ ranks, 4096 per node, on nodes alike prices 4096² pairs, not 2³⁶).
    fn inside_pairs(&self, members: &[Vec<usize>]) -> Acc {
        let mut acc = Acc::default();
        if let IntraNode::Uniform(c) = &self.intra {
            let pairs: u64 = members
                .iter()
                .map(|m| m.len() as u64 * (m.len() as u64).saturating_sub(1))
                .sum();
            if pairs > 0 {
                let i = members.iter().find(|m| m.len() > 1).map_or(0, |m| m[0]);
                let j = members.iter().find(|m| m.len() > 1).map_or(0, |m| m[1]);
                acc.add(self.pair_level(i, j), *c, pairs);
            }
            return acc;
        }
        // occupancy of a node: (PU, ranks on it, up to two of those ranks), by PU
        type Occupancy = Vec<(u32, u64, [usize; 2])>;
        // ordered, so that the sums are the same in every run
        let mut alike: std::collections::BTreeMap<Vec<(u32, u64)>, (u64, Occupancy)> =
            std::collections::BTreeMap::new();
        for m in members {
            let mut by_pu: std::collections::BTreeMap<u32, (u64, [usize; 2])> =
                std::collections::BTreeMap::new();
            for &i in m {
                let e = by_pu.entry(self.rank_pu[i]).or_insert((0, [i, i]));
                if e.0 == 1 {
                    e.1[1] = i;
                }
                e.0 += 1;
            }
            let occ: Occupancy = by_pu.into_iter().map(|(pu, (n, r))| (pu, n, r)).collect();
            let key: Vec<(u32, u64)> = occ.iter().map(|&(pu, n, _)| (pu, n)).collect();
            alike.entry(key).or_insert((0, occ)).0 += 1;
        }
        for (nodes, occ) in alike.into_values() {
            for &(a, na, ra) in &occ {
                for &(b, nb, rb) in &occ {
                    let (weight, j) = if a == b {
                        (na * (na - 1), ra[1])
                    } else {
                        (na * nb, rb[0])
                    };
                    if weight > 0 {
                        let i = ra[0];
                        acc.add(self.pair_level(i, j), self.link(i, j), weight * nodes);
                    }
                }
            }
        }
        acc
    }

    /// `(L(i, j), B(i, j))` for ranks `i` → `j`.
    ///
    /// # Panics
    /// If `i` or `j` is `>= ranks()`.
    ///
    /// # Complexity
    /// `O(1)`, `O(n)` for an n-D torus.
    #[inline]
    pub fn link(&self, i: usize, j: usize) -> LinkCost {
        if let Some(t) = &self.explicit {
            return t.link_cost(i, j);
        }
        let (ni, nj) = (self.rank_node[i] as usize, self.rank_node[j] as usize);
        if ni == nj {
            self.intra
                .link(self.rank_pu[i] as usize, self.rank_pu[j] as usize)
        } else if let Some(t) = &self.node_table {
            t.costs[t.class[ni * t.n + nj] as usize]
        } else {
            self.inter
                .link(self.rank_src[i] as usize, self.rank_src[j] as usize)
        }
    }

    /// All links from rank `i`: `out[j] = link(i, j)` for every rank `j`.
    ///
    /// Inter-node costs are looked up once per node, not once per rank, so a whole row
    /// costs about one table read per node plus one copy per rank.
    ///
    /// # Complexity
    /// O(p + nodes).
    ///
    /// # Panics
    /// If `i >= ranks()` or `out.len() != ranks()`.
    pub fn links_from(&self, i: usize, out: &mut [LinkCost]) {
        assert_eq!(
            out.len(),
            self.ranks(),
            "links_from needs one slot per rank"
        );
        if self.explicit.is_some() {
            for (j, o) in out.iter_mut().enumerate() {
                *o = self.link(i, j);
            }
            return;
        }
        let ni = self.rank_node[i];
        let mut per_node: Vec<Option<LinkCost>> = vec![None; self.placement.num_nodes()];
        for (j, o) in out.iter_mut().enumerate() {
            let nj = self.rank_node[j];
            *o = if nj == ni {
                self.intra
                    .link(self.rank_pu[i] as usize, self.rank_pu[j] as usize)
            } else {
                *per_node[nj as usize].get_or_insert_with(|| self.link(i, j))
            };
        }
    }

    /// Latency `L(i, j)` in seconds.
    ///
    /// # Panics
    /// If `i` or `j` is `>= ranks()`.
    #[inline]
    pub fn latency(&self, i: usize, j: usize) -> f64 {
        self.link(i, j).latency
    }

    /// Inverse bandwidth `B(i, j)` in seconds per byte.
    ///
    /// # Panics
    /// If `i` or `j` is `>= ranks()`.
    #[inline]
    pub fn inv_bandwidth(&self, i: usize, j: usize) -> f64 {
        self.link(i, j).inv_bandwidth
    }

    /// `L(i, j) + B(i, j)·bytes`, seconds.
    ///
    /// # Panics
    /// If `i` or `j` is `>= ranks()`.
    #[inline]
    pub fn cost(&self, i: usize, j: usize, bytes: u64) -> f64 {
        self.link(i, j).cost(bytes)
    }

    /// The class of the rank pair `(i, j)` (shared level or hop distance).
    ///
    /// # Panics
    /// If `i` or `j` is `>= ranks()`.
    pub fn pair_level(&self, i: usize, j: usize) -> PairLevel {
        if self.explicit.is_some() {
            return PairLevel::Explicit;
        }
        if self.same_node(i, j) {
            match &self.intra {
                IntraNode::Tree(t) => PairLevel::Intra(t.level(self.pu_of(i), self.pu_of(j))),
                _ => PairLevel::SameNode,
            }
        } else {
            self.inter
                .pair_level(self.rank_src[i] as usize, self.rank_src[j] as usize)
        }
    }

    /// The `p × p` latency matrix, row-major.
    ///
    /// # Complexity
    /// `O(p²)` time and memory.
    pub fn latency_matrix(&self) -> Vec<f64> {
        let p = self.ranks();
        (0..p * p).map(|k| self.latency(k / p, k % p)).collect()
    }

    /// The `p × p` inverse-bandwidth matrix, row-major.
    ///
    /// # Complexity
    /// `O(p²)` time and memory.
    pub fn inv_bandwidth_matrix(&self) -> Vec<f64> {
        let p = self.ranks();
        (0..p * p)
            .map(|k| self.inv_bandwidth(k / p, k % p))
            .collect()
    }

    /// Both matrices as a [`PairTable`] named by rank (`"0"`, `"1"`, …),
    /// writable with [`PairTable::write`] and loadable again as a rank
    /// matrix.
    ///
    /// # Errors
    /// None in practice (all costs were validated); the `Result` is that of
    /// [`PairTable::new`].
    ///
    /// # Complexity
    /// `O(p²)` time, `16·p²` bytes.
    pub fn cost_matrices(&self) -> Result<PairTable> {
        PairTable::new(
            Vec::new(),
            self.latency_matrix(),
            self.inv_bandwidth_matrix(),
        )
    }

    /// Counts, statistics and per-class costs over all ordered pairs `i ≠ j`
    /// (for a `copr topo` command); `Display` prints it as a table.
    ///
    /// ```
    /// use copr_topology::{InterNode, IntraNode, LevelCosts, Machine, NodeTree, PairLevel, PlacementRule, Torus, TorusParams};
    /// let m = Machine::builder()
    ///     .intra(IntraNode::Tree(NodeTree::from_shape("core:2", &LevelCosts::default()).unwrap()))
    ///     .inter(InterNode::Torus(Torus::full(TorusParams::new(vec![3])).unwrap()))
    ///     .rule(PlacementRule::packed(6, None))
    ///     .build()
    ///     .unwrap();
    /// let s = m.summary();
    /// assert_eq!((s.ranks, s.nodes, s.ranks_per_node_max), (6, 3, 2));
    /// let classes: Vec<(PairLevel, u64)> = s.levels.iter().map(|l| (l.level, l.pairs)).collect();
    /// // 3 nodes × 2 ordered pairs inside; every other pair is 1 hop on a 3-ring
    /// assert_eq!(classes, [(PairLevel::Intra(copr_topology::Level::Machine), 6), (PairLevel::Hops(1), 24)]);
    /// assert!(s.latency.max > s.latency.min);
    /// assert!(s.to_string().contains("other node, 1 hop"));
    /// ```
    ///
    /// # Complexity
    /// `O(Σ_node r_node² + K²)` lookups for `r_node` ranks on a node and `K`
    /// *pricing groups* of nodes: nodes whose costs to every other node are
    /// the same (one torus coordinate, one network host class — the hosts on
    /// one edge switch of a fat tree —, all nodes of a uniform source) count
    /// as one, weighted by their ranks, so neither rank pairs nor node pairs
    /// are visited (102 400 ranks on a `k = 32` fat tree's 6 400 hosts: 400
    /// groups). The group pairs are split over the machine's cores. `O(p²)`
    /// for an explicit rank × rank matrix. Means are sums in a different
    /// order than pair by pair, equal to within rounding.
    pub fn summary(&self) -> TopologySummary {
        self.summary_with_progress(&mut |_, _| {})
    }

    /// [`Machine::summary`], calling `progress(done, total)` as it goes (`total` is the
    /// number of link lookups, `done` those made so far; a few hundred calls at most),
    /// for a progress bar on large machines.
    pub fn summary_with_progress(&self, progress: &mut dyn FnMut(u64, u64)) -> TopologySummary {
        let p = self.ranks();
        let mut acc = Acc::default();
        // report after about total/256 lookups
        let mut last = 0u64;
        let mut report = |done: u64, total: u64| {
            if done == total || done >= last + total.div_ceil(256) {
                last = done;
                progress(done, total);
            }
        };
        if self.explicit.is_some() {
            // every pair has its own entry
            let total = (p * p) as u64;
            for i in 0..p {
                for j in (0..p).filter(|&j| j != i) {
                    acc.add(self.pair_level(i, j), self.link(i, j), 1);
                }
                report(((i + 1) * p) as u64, total);
            }
        } else {
            let mut members: Vec<Vec<usize>> = vec![Vec::new(); self.placement.num_nodes()];
            for (i, &n) in self.rank_node.iter().enumerate() {
                members[n as usize].push(i);
            }
            members.retain(|m| !m.is_empty());
            // Inside a node, every ordered pair of its distinct ranks.
            let inside: u64 = members.iter().map(|m| (m.len() * m.len()) as u64).sum();
            acc.merge(self.inside_pairs(&members));
            // Between nodes: each ordered pair of pricing groups once, weighted by
            // its rank pairs; inside a group, the pairs of its distinct nodes.
            let groups = self.pricing_groups(&members);
            let total = inside + (groups.len() * groups.len()) as u64;
            report(inside, total);
            match &self.inter {
                InterNode::Torus(t) => {
                    acc.merge(self.torus_pairs(t, &groups));
                    report(total, total);
                }
                inter => {
                    if let InterNode::Network(n) = inter {
                        n.prepare(
                            groups.iter().map(|g| self.rank_src[g.first] as usize),
                            threads(),
                        );
                    }
                    acc.merge(self.group_pairs(&groups, &mut |done| report(inside + done, total)));
                }
            }
        }
        let classes = acc.into_classes();
        let mut lat = Stats::new();
        let mut inv = Stats::new();
        for (_, l, b) in &classes {
            lat.merge(l);
            inv.merge(b);
        }
        let rpn = self.ranks_per_node();
        TopologySummary {
            ranks: p,
            nodes: self.placement.num_nodes(),
            ranks_per_node_min: rpn.iter().copied().min().unwrap_or(0),
            ranks_per_node_max: rpn.iter().copied().max().unwrap_or(0),
            pus_per_node: self.pus_per_node(),
            intra: match &self.explicit {
                Some(_) => "-".into(),
                None => self.intra.description(),
            },
            inter: match (&self.explicit, self.inter()) {
                (Some(t), _) => format!("rank matrix: {}", t.description()),
                (None, Some(s)) => s.description(),
                (None, None) => "none (single node)".into(),
            },
            placement: self.placement.description().to_string(),
            levels: classes
                .into_iter()
                .map(|(level, l, b)| LevelSummary {
                    name: level.to_string(),
                    level,
                    pairs: l.count,
                    latency: l.finish(),
                    inv_bandwidth: b.finish(),
                })
                .collect(),
            latency: lat.finish(),
            inv_bandwidth: inv.finish(),
        }
    }

    /// Nodes (given by their ranks) grouped by the inter-node source's pricing
    /// key, in order of first appearance.
    fn pricing_groups(&self, members: &[Vec<usize>]) -> Vec<Group> {
        let mut index: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        for m in members {
            let key = self.inter.pricing_key(self.rank_src[m[0]] as usize);
            let r = m.len() as u64;
            let g = *index.entry(key).or_insert_with(|| {
                groups.push(Group {
                    first: m[0],
                    second: None,
                    ranks: 0,
                    squares: 0,
                });
                groups.len() - 1
            });
            let g = &mut groups[g];
            if g.ranks > 0 && g.second.is_none() {
                g.second = Some(m[0]);
            }
            g.ranks += r;
            g.squares += r * r;
        }
        groups
    }

    /// Statistics over all ordered pairs of distinct nodes, by groups, on all
    /// cores; `progress(done)` counts group pairs. Rows of groups go in fixed
    /// chunks merged in order, so the result does not depend on the threads.
    fn group_pairs(&self, groups: &[Group], progress: &mut dyn FnMut(u64)) -> Acc {
        const CHUNK: usize = 16;
        let k = groups.len();
        let chunks = k.div_ceil(CHUNK);
        let row = |a: usize, acc: &mut Acc| {
            let ga = &groups[a];
            for (b, gb) in groups.iter().enumerate() {
                let (j, w) = if a != b {
                    (gb.first, ga.ranks * gb.ranks)
                } else {
                    match ga.second {
                        Some(j) => (j, ga.ranks * ga.ranks - ga.squares),
                        None => continue,
                    }
                };
                let (sa, sb) = (self.rank_src[ga.first] as usize, self.rank_src[j] as usize);
                let (c, lv) = self.inter.link_level(sa, sb);
                acc.add(lv, c, w);
            }
        };
        let results: Vec<std::sync::Mutex<Option<Acc>>> =
            (0..chunks).map(|_| std::sync::Mutex::new(None)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let work = |report: &mut dyn FnMut(u64)| loop {
            let c = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if c >= chunks {
                break;
            }
            let mut acc = Acc::default();
            let rows = c * CHUNK..((c + 1) * CHUNK).min(k);
            let n = rows.len();
            for a in rows {
                row(a, &mut acc);
            }
            *results[c].lock().unwrap_or_else(|e| e.into_inner()) = Some(acc);
            let d = done.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n;
            report((d * k) as u64);
        };
        std::thread::scope(|s| {
            for _ in 1..threads().min(chunks) {
                s.spawn(|| work(&mut |_| {}));
            }
            work(progress);
        });
        let mut acc = Acc::default();
        for r in results {
            if let Some(a) = r.into_inner().unwrap_or_else(|e| e.into_inner()) {
                acc.merge(a);
            }
        }
        acc
    }
}

impl Machine {
    /// [`Machine::group_pairs`] on a torus, where a pair's cost depends only on
    /// its hops per dimension: the rank pairs are counted per hop vector (exact
    /// integer counts), then each vector is priced once. The counts come from visiting
    /// the group pairs (`O(k²)` for `k` occupied coordinates, split over the cores) or,
    /// when that is dearer, from the autocorrelation of the ranks per coordinate
    /// (`O(N · Σ dims)` for the torus's `N` coordinates; 102 400 nodes of one rank
    /// each: 10¹⁰ pairs against 1.5·10⁷ terms).
    fn torus_pairs(&self, t: &Torus, groups: &[Group]) -> Acc {
        let (n, dims) = (t.ndims(), t.dims());
        let coords: Vec<u32> = groups
            .iter()
            .flat_map(|g| t.coords(self.rank_src[g.first] as usize).iter().copied())
            .collect();
        let k = groups.len();
        // two transforms of about two multiply-adds per term and dimension
        let cells: usize = dims.iter().map(|&d| d as usize).product();
        let sum_dims: usize = dims.iter().map(|&d| d as usize).sum();
        let transform =
            k > 1 && k.saturating_mul(k).saturating_mul(n) > 4 * cells.saturating_mul(sum_dims);
        let mut hist = match transform.then(|| torus_hist_by_transform(t, &coords, groups)) {
            Some(Some(h)) => h,
            _ => torus_hist_by_pairs(t, &coords, groups),
        };
        // distinct nodes at one coordinate: zero hops
        for g in groups.iter().filter(|g| g.second.is_some()) {
            hist[0] += g.ranks * g.ranks - g.squares;
        }
        let (stride, _) = hop_strides(dims);
        let mut acc = Acc::default();
        for (idx, &w) in hist.iter().enumerate().filter(|(_, &w)| w > 0) {
            let (c, h) =
                t.cost_of_hops(|d| ((idx / stride[d]) % (dims[d] as usize / 2 + 1)) as u32);
            acc.add(PairLevel::Hops(h), c, w);
        }
        acc
    }
}

/// Hop vectors as mixed-radix indices (hops in dimension `d` below `dims[d]/2 + 1`,
/// the first dimension fastest): the strides and the number of indices.
fn hop_strides(dims: &[u32]) -> (Vec<usize>, usize) {
    let mut stride = Vec::with_capacity(dims.len());
    let mut size = 1usize;
    for &e in dims {
        stride.push(size);
        size *= e as usize / 2 + 1;
    }
    (stride, size)
}

/// Rank pairs of distinct groups per hop vector, group pair by group pair (`coords`:
/// each group's coordinates, one per dimension), split over the cores.
fn torus_hist_by_pairs(t: &Torus, coords: &[u32], groups: &[Group]) -> Vec<u64> {
    let (n, dims) = (t.ndims(), t.dims());
    let (stride, size) = hop_strides(dims);
    let k = groups.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    const CHUNK: usize = 64;
    let count = || {
        let mut hist = vec![0u64; size];
        loop {
            let c = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if c * CHUNK >= k {
                break hist;
            }
            for a in c * CHUNK..((c + 1) * CHUNK).min(k) {
                let ca = &coords[a * n..(a + 1) * n];
                let ra = groups[a].ranks;
                for (b, gb) in groups.iter().enumerate() {
                    if b == a {
                        continue;
                    }
                    let cb = &coords[b * n..(b + 1) * n];
                    let mut idx = 0;
                    for d in 0..n {
                        let dd = ca[d].abs_diff(cb[d]);
                        idx += dd.min(dims[d] - dd) as usize * stride[d];
                    }
                    hist[idx] += ra * gb.ranks;
                }
            }
        }
    };
    let hists: Vec<Vec<u64>> = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads().min(k.div_ceil(CHUNK)))
            .map(|_| s.spawn(count))
            .collect();
        let mut all = vec![count()];
        all.extend(others.into_iter().map(|h| h.join().expect("no panic")));
        all
    });
    let mut hist = vec![0u64; size];
    for h in hists {
        for (x, y) in hist.iter_mut().zip(h) {
            *x += y;
        }
    }
    hist
}

/// [`torus_hist_by_pairs`] from the cyclic autocorrelation of the ranks per
/// coordinate (each group is one coordinate): the pairs at displacement `δ` are
/// counted at hop vector `min(δ_d, D_d − δ_d)`; displacement 0 (pairs inside one
/// group) is left out. `None` when the transform cannot vouch for exact counts.
fn torus_hist_by_transform(t: &Torus, coords: &[u32], groups: &[Group]) -> Option<Vec<u64>> {
    let (n, dims) = (t.ndims(), t.dims());
    let sizes: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let cells: usize = sizes.iter().product();
    let mut w = vec![0u64; cells];
    for (g, c) in groups.iter().zip(coords.chunks_exact(n)) {
        let idx = c
            .iter()
            .zip(&sizes)
            .rev()
            .fold(0usize, |acc, (&c, &d)| acc * d + c as usize);
        w[idx] += g.ranks;
    }
    let corr = crate::autocorr::cyclic_autocorrelation(&sizes, &w)?;
    let (stride, size) = hop_strides(dims);
    let mut hist = vec![0u64; size];
    for (delta, &x) in corr.iter().enumerate().skip(1).filter(|(_, &x)| x > 0) {
        let (mut rest, mut idx) = (delta, 0);
        for (d, &e) in sizes.iter().enumerate() {
            let dd = rest % e;
            rest /= e;
            idx += dd.min(e - dd) * stride[d];
        }
        hist[idx] += x;
    }
    Some(hist)
}

/// Nodes priced alike between nodes (see [`InterNode::pricing_key`]).
struct Group {
    /// A rank on the group's first node.
    first: usize,
    /// A rank on its second node, if any.
    second: Option<usize>,
    /// Ranks on the group's nodes.
    ranks: u64,
    /// `Σ r²` over its nodes.
    squares: u64,
}

/// Statistics per pair class: hop classes by hop count, the few others in a list.
#[derive(Default)]
struct Acc {
    hops: Vec<(Stats, Stats)>,
    other: Vec<(PairLevel, Stats, Stats)>,
}

impl Acc {
    #[inline]
    fn add(&mut self, level: PairLevel, c: LinkCost, weight: u64) {
        let (l, b) = match level {
            PairLevel::Hops(h) => {
                let h = h as usize;
                if self.hops.len() <= h {
                    self.hops
                        .resize_with(h + 1, || (Stats::new(), Stats::new()));
                }
                let e = &mut self.hops[h];
                (&mut e.0, &mut e.1)
            }
            lv => {
                let k = match self.other.iter().position(|e| e.0 == lv) {
                    Some(k) => k,
                    None => {
                        self.other.push((lv, Stats::new(), Stats::new()));
                        self.other.len() - 1
                    }
                };
                let e = &mut self.other[k];
                (&mut e.1, &mut e.2)
            }
        };
        l.add(c.latency, weight);
        b.add(c.inv_bandwidth, weight);
    }

    fn merge(&mut self, o: Acc) {
        if self.hops.len() < o.hops.len() {
            self.hops
                .resize_with(o.hops.len(), || (Stats::new(), Stats::new()));
        }
        for (k, (l, b)) in o.hops.into_iter().enumerate() {
            self.hops[k].0.merge(&l);
            self.hops[k].1.merge(&b);
        }
        for (lv, l, b) in o.other {
            match self.other.iter_mut().find(|e| e.0 == lv) {
                Some(e) => {
                    e.1.merge(&l);
                    e.2.merge(&b);
                }
                None => self.other.push((lv, l, b)),
            }
        }
    }

    /// The non-empty classes, nearest first.
    fn into_classes(self) -> Vec<(PairLevel, Stats, Stats)> {
        let mut out: Vec<(PairLevel, Stats, Stats)> = self
            .hops
            .into_iter()
            .enumerate()
            .filter(|(_, (l, _))| l.count > 0)
            .map(|(h, (l, b))| (PairLevel::Hops(h as u32), l, b))
            .chain(self.other)
            .collect();
        out.sort_by_key(|c| c.0);
        out
    }
}

struct Stats {
    count: u64,
    min: f64,
    max: f64,
    sum: f64,
}

impl Stats {
    fn new() -> Self {
        Self {
            count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            sum: 0.0,
        }
    }
    /// `weight` values `v`.
    fn add(&mut self, v: f64, weight: u64) {
        self.count += weight;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v * weight as f64;
    }
    fn merge(&mut self, o: &Stats) {
        self.count += o.count;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
    }
    fn finish(&self) -> MinMaxMean {
        if self.count == 0 {
            return MinMaxMean::default();
        }
        MinMaxMean {
            min: self.min,
            max: self.max,
            mean: self.sum / self.count as f64,
        }
    }
}

/// Minimum, maximum and mean of a set of values (all zero for an empty set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MinMaxMean {
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// Statistics of one [`PairLevel`] in a [`TopologySummary`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    /// Human-readable class name.
    pub name: String,
    /// The class.
    pub level: PairLevel,
    /// Number of ordered rank pairs in the class.
    pub pairs: u64,
    /// Latency statistics, seconds.
    pub latency: MinMaxMean,
    /// Inverse-bandwidth statistics, seconds per byte.
    pub inv_bandwidth: MinMaxMean,
}

/// What [`Machine::summary`] reports; `Display` prints a small table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopologySummary {
    /// Number of ranks.
    pub ranks: usize,
    /// Number of nodes used.
    pub nodes: usize,
    /// Fewest ranks on a node.
    pub ranks_per_node_min: usize,
    /// Most ranks on a node.
    pub ranks_per_node_max: usize,
    /// PUs per node, if the intra-node source knows them; fewer than
    /// `ranks_per_node_max` means ranks share PUs (see
    /// [`Machine::oversubscription`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pus_per_node: Option<usize>,
    /// Intra-node source description.
    pub intra: String,
    /// Inter-node source description.
    pub inter: String,
    /// Placement description.
    pub placement: String,
    /// Per-class statistics, nearest class first.
    pub levels: Vec<LevelSummary>,
    /// Latency over all pairs `i ≠ j`, seconds.
    pub latency: MinMaxMean,
    /// Inverse bandwidth over all pairs `i ≠ j`, seconds per byte.
    pub inv_bandwidth: MinMaxMean,
}

impl fmt::Display for TopologySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per_node = if self.ranks_per_node_min == self.ranks_per_node_max {
            self.ranks_per_node_min.to_string()
        } else {
            format!("{} to {}", self.ranks_per_node_min, self.ranks_per_node_max)
        };
        writeln!(
            f,
            "ranks: {}   nodes: {}   ranks per node: {per_node}",
            self.ranks, self.nodes
        )?;
        if let Some(pus) = self.pus_per_node.filter(|&n| self.ranks_per_node_max > n) {
            writeln!(
                f,
                "oversubscribed: up to {} ranks on a node of {pus} PUs; ranks beyond the PUs share them (priced as the same PU)",
                self.ranks_per_node_max
            )?;
        }
        writeln!(f, "placement: {}", self.placement)?;
        writeln!(f, "intra-node: {}", self.intra)?;
        writeln!(f, "inter-node: {}", self.inter)?;
        writeln!(
            f,
            "{:<28} {:>12} {:>12} {:>12}",
            "pair class", "pairs", "mean L [s]", "mean BW [B/s]"
        )?;
        for l in &self.levels {
            let bw = if l.inv_bandwidth.mean > 0.0 {
                1.0 / l.inv_bandwidth.mean
            } else {
                f64::INFINITY
            };
            writeln!(
                f,
                "{:<28} {:>12} {:>12.3e} {:>12.3e}",
                l.name, l.pairs, l.latency.mean, bw
            )?;
        }
        writeln!(
            f,
            "latency       [s]:   min {:.3e}  max {:.3e}  mean {:.3e}",
            self.latency.min, self.latency.max, self.latency.mean
        )?;
        write!(
            f,
            "inv. bandwidth [s/B]: min {:.3e}  max {:.3e}  mean {:.3e}",
            self.inv_bandwidth.min, self.inv_bandwidth.max, self.inv_bandwidth.mean
        )
    }
}
