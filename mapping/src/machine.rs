//! The machine a job runs on, as the mapping stage sees it: allocated nodes, ranks per
//! node, and the network between the nodes with its routing.
//!
//! Slots are numbered the way launchers number ranks by default ("packed"): slot
//! `s = node·ranks_per_node + core`, nodes in the machine's order. A mapping assigns each
//! task a slot.

use std::path::{Path, PathBuf};

use copr_topology::{
    BandwidthModel, IntraConfig, IntraNode, Network, NodeTree, TopologyConfig, Torus, TorusConfig,
};
use serde::Deserialize;

use copr::error::{Error, Result};

/// What connects the nodes.
#[derive(Debug, Clone, Copy)]
pub enum NetKind<'a> {
    /// A torus; machine node `k` is torus node `k` (coordinates `torus.coords(k)`).
    Torus(&'a Torus),
    /// A network graph; machine node `k` is network host `hosts[k]`.
    Graph(&'a Network, &'a [usize]),
    /// No network model: every pair of nodes is one hop apart over the sender's own
    /// injection link (at `copr_topology::DEFAULT_LINK_BANDWIDTH`, 5 GB/s).
    Flat,
}

#[derive(Debug, Clone)]
enum Net {
    Torus(Torus),
    Graph {
        net: Network,
        hosts: Vec<usize>,
        /// Route between machine nodes `a`, `b`: `routes[a·n + b]` (network edges).
        routes: Vec<Vec<u32>>,
        /// Inverse bandwidth of each network edge (s/byte).
        edge_inv_bw: Vec<f64>,
        /// Edge names `from->to` for reports.
        edge_names: Vec<String>,
    },
    Flat,
}

/// Tori of more dimensions are refused.
const MAX_TORUS_DIMS: usize = 8;

/// Networks described by graphs are routed through a table of all node pairs; larger
/// ones are refused.
pub const MAX_GRAPH_NODES: usize = 1024;

/// A job's machine for mapping: its nodes (names for launcher files), ranks per node,
/// and the network with routing (dimension-order on a torus, shortest paths on a
/// graph).
///
/// ```
/// use copr_mapping::MapMachine;
/// use copr_topology::{Torus, TorusParams};
/// let m = MapMachine::torus(Torus::full(TorusParams::new(vec![4, 4, 4])).unwrap(), 16).unwrap();
/// assert_eq!((m.nodes(), m.slots()), (64, 1024));
/// assert_eq!(m.node_of_slot(17), 1);
/// assert_eq!(m.hops(0, 21), 3); // (0,0,0) to (1,1,1)
/// ```
#[derive(Debug, Clone)]
pub struct MapMachine {
    rpn: usize,
    names: Vec<String>,
    net: Net,
    description: String,
    /// The inside of every node: core `c` of a node is PU `c` of this tree.
    tree: Option<NodeTree>,
}

/// A directed network link and its load-relevant properties.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkInfo {
    /// Human-readable name, e.g. `(1,2,0) x+` or `e0.0->a0.1`.
    pub name: String,
    /// Direction class: `x+`, `x-`, … on a torus, `net` on graphs, `inj` when flat.
    pub class: String,
    /// Inverse bandwidth, seconds per byte.
    pub inv_bandwidth: f64,
}

/// The machine file read by [`MapMachine::from_file`] (TOML or JSON).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MachineDoc {
    #[serde(default)]
    description: Option<String>,
    ranks_per_node: usize,
    /// Node names in machine order (a Slurm-style list `nid[00012-00019,00033]` or an
    /// array); for a full torus they name the coordinates in order.
    #[serde(default)]
    nodes: Option<NodeNames>,
    #[serde(default)]
    torus: Option<TorusConfig>,
    #[serde(default)]
    network: Option<NetworkDoc>,
    #[serde(default)]
    flat: Option<FlatDoc>,
    /// The inside of a node (as in topology configs: `kind = "tree"` with a shape,
    /// or an hwloc kind); its PUs are the node's cores.
    #[serde(default)]
    intra: Option<IntraConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum NodeNames {
    List(String),
    Array(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkDoc {
    file: PathBuf,
    #[serde(default)]
    hosts: Option<NodeNames>,
    #[serde(default)]
    bandwidth_model: BandwidthModel,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlatDoc {
    nodes: usize,
}

impl MapMachine {
    /// Every node of `torus`, `ranks_per_node` slots each.
    ///
    /// # Errors
    /// [`Error::Mismatch`] if `ranks_per_node` is 0, the slot count exceeds
    /// [`super::MAX_TASKS`], or the torus has more than 8 dimensions.
    pub fn torus(torus: Torus, ranks_per_node: usize) -> Result<Self> {
        if torus.ndims() > MAX_TORUS_DIMS {
            return Err(Error::Mismatch(format!(
                "torus: {} dimensions; mapping supports at most {MAX_TORUS_DIMS}",
                torus.ndims()
            )));
        }
        // a full torus without a coordinates file numbers its nodes 0, 1, …: the
        // exports call them node0, node1, … as for a flat machine
        let numbered = (0..torus.num_nodes()).all(|k| torus.node_name(k) == k.to_string());
        let names = (0..torus.num_nodes())
            .map(|k| match numbered {
                true => format!("node{k}"),
                false => torus.node_name(k).to_string(),
            })
            .collect();
        let description = format!(
            "{}, {} per node",
            torus.description(),
            count(ranks_per_node, "rank")
        );
        Self::checked(ranks_per_node, names, Net::Torus(torus), description)
    }

    /// The given hosts of `net` (all hosts when `None`), in that order, with
    /// `ranks_per_node` slots each. Routes are shortest paths under `model`.
    ///
    /// # Errors
    /// [`Error::Mismatch`] for an unknown or repeated host, more than
    /// [`MAX_GRAPH_NODES`] hosts, hosts that cannot reach each other, or
    /// `ranks_per_node == 0`.
    pub fn network(
        net: Network,
        hosts: Option<Vec<usize>>,
        model: BandwidthModel,
        ranks_per_node: usize,
    ) -> Result<Self> {
        let hosts = hosts.unwrap_or_else(|| (0..net.num_hosts()).collect());
        let n = hosts.len();
        if n > MAX_GRAPH_NODES {
            return Err(Error::Mismatch(format!(
                "network {}: {n} hosts; graph networks are routed for at most {MAX_GRAPH_NODES}",
                net.name()
            )));
        }
        let mut seen = vec![false; net.num_hosts()];
        for &h in &hosts {
            if h >= net.num_hosts() || std::mem::replace(&mut seen[h], true) {
                return Err(Error::Mismatch(format!(
                    "network {}: host index {h} is unknown or listed twice",
                    net.name()
                )));
            }
        }
        let g = net.graph();
        let edge_inv_bw: Vec<f64> = g.edge_weights().map(|c| c.inv_bandwidth).collect();
        let edge_names: Vec<String> = g
            .edge_indices()
            .map(|e| {
                let (a, b) = g.edge_endpoints(e).expect("edge of the graph");
                format!("{}->{}", g[a].name, g[b].name)
            })
            .collect();
        check_slots(n as u128, ranks_per_node)?;
        // one shortest-path tree per source host (the same paths as `Network::path`)
        let mut routes = vec![Vec::new(); n * n];
        for a in 0..n {
            let (costs, pred) = net.shortest_paths(net.host_vertex(hosts[a]), model);
            for b in 0..n {
                if a == b {
                    continue;
                }
                let target = net.host_vertex(hosts[b]);
                if costs[target.index()].is_none() {
                    return Err(Error::Mismatch(format!(
                        "network {}: no path from host {} to host {}",
                        net.name(),
                        net.host_name(hosts[a]),
                        net.host_name(hosts[b])
                    )));
                }
                let mut path: Vec<u32> = Vec::new();
                let mut v = target;
                while let Some(e) = pred[v.index()] {
                    path.push(e.index() as u32);
                    v = g.edge_endpoints(e).map_or(v, |(s, _)| s);
                }
                path.reverse();
                routes[a * n + b] = path;
            }
        }
        let names = hosts
            .iter()
            .map(|&h| net.host_name(h).to_string())
            .collect();
        let description = format!(
            "network {} ({}), {} per node",
            net.name(),
            count(n, "host"),
            count(ranks_per_node, "rank")
        );
        Self::checked(
            ranks_per_node,
            names,
            Net::Graph {
                net,
                hosts,
                routes,
                edge_inv_bw,
                edge_names,
            },
            description,
        )
    }

    /// `nodes` nodes without a network model (every node pair one hop apart).
    ///
    /// # Errors
    /// [`Error::Mismatch`] for zero nodes or ranks per node.
    pub fn flat(nodes: usize, ranks_per_node: usize) -> Result<Self> {
        if nodes == 0 {
            return Err(Error::Mismatch("flat machine: nodes must be >= 1".into()));
        }
        check_slots(nodes as u128, ranks_per_node)?;
        let names = (0..nodes).map(|k| format!("node{k}")).collect();
        Self::checked(
            ranks_per_node,
            names,
            Net::Flat,
            format!(
                "{}, flat network, {} per node",
                count(nodes, "node"),
                count(ranks_per_node, "rank")
            ),
        )
    }

    fn checked(rpn: usize, names: Vec<String>, net: Net, description: String) -> Result<Self> {
        check_slots(names.len() as u128, rpn)?;
        Ok(Self {
            rpn,
            names,
            net,
            description,
            tree: None,
        })
    }

    /// Reads a machine file (TOML, or JSON for `.json`):
    ///
    /// ```toml
    /// description = "8x8x8 torus, X and Z faster"   # optional
    /// ranks_per_node = 16
    /// nodes = "nid[00000-00511]"   # optional names, Slurm-style list or array
    /// [torus]                      # dims, link_bandwidth, coords (allocated nodes) …
    /// dims = [8, 8, 8]
    /// ```
    /// or `[network] file = "fat-tree.net.toml"` (hosts optional) or `[flat] nodes = N`.
    /// Relative paths resolve against the file's directory.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Parse`] (naming field and line), or an invalid machine;
    /// every message names the file (or the file it refers to, where the error is).
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::read_file(path).map_err(|e| {
            if e.to_string().contains(&path.display().to_string()) {
                e
            } else {
                Error::InFile {
                    path: path.to_owned(),
                    source: Box::new(e),
                }
            }
        })
    }

    fn read_file(path: &Path) -> Result<Self> {
        let text = copr::files::read_file(path)?;
        let text = copr_topology::files::skip_bom(&text);
        let parse = |detail: String| Error::Parse {
            path: path.to_owned(),
            detail,
        };
        let doc: MachineDoc = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(text).map_err(|e| parse(e.to_string()))?
        } else {
            toml::from_str(text).map_err(|e| parse(toml_detail(text, &e)))?
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let kinds = [
            doc.torus.is_some(),
            doc.network.is_some(),
            doc.flat.is_some(),
        ];
        if kinds.iter().filter(|&&k| k).count() != 1 {
            return Err(parse(
                "exactly one of [torus], [network] or [flat] must be given".into(),
            ));
        }
        let names = match &doc.nodes {
            None => None,
            Some(NodeNames::Array(a)) => Some(a.clone()),
            Some(NodeNames::List(s)) => {
                Some(expand_nodelist(s).map_err(|e| parse(format!("nodes: {e}")))?)
            }
        };
        let mut m = if let Some(tc) = &doc.torus {
            let params = tc.params();
            let torus = match &tc.coords {
                Some(c) => Torus::from_coords_file(params, &base.join(c))?,
                None => {
                    let n = params.dims.iter().fold(1u128, |a, &d| a * u128::from(d));
                    check_slots(n, doc.ranks_per_node).map_err(|e| e.in_file(path))?;
                    Torus::full(params)?
                }
            };
            Self::torus(torus, doc.ranks_per_node).map_err(|e| e.in_file(path))?
        } else if let Some(nd) = &doc.network {
            let net = Network::from_file(&base.join(&nd.file))?;
            let hosts = match &nd.hosts {
                None => None,
                Some(h) => {
                    let list = match h {
                        NodeNames::Array(a) => a.clone(),
                        NodeNames::List(s) => {
                            expand_nodelist(s).map_err(|e| parse(format!("network.hosts: {e}")))?
                        }
                    };
                    let mut idx = Vec::with_capacity(list.len());
                    for name in &list {
                        let k = (0..net.num_hosts())
                            .find(|&k| net.host_name(k) == name)
                            .ok_or_else(|| {
                                parse(format!(
                                    "network.hosts: `{name}` is not a host of the network"
                                ))
                            })?;
                        idx.push(k);
                    }
                    Some(idx)
                }
            };
            Self::network(net, hosts, nd.bandwidth_model, doc.ranks_per_node)
                .map_err(|e| e.in_file(path))?
        } else {
            let f = doc.flat.as_ref().expect("checked above");
            if f.nodes > super::MAX_TASKS {
                return Err(parse(format!("flat.nodes {}: too many nodes", f.nodes)));
            }
            Self::flat(f.nodes, doc.ranks_per_node).map_err(|e| e.in_file(path))?
        };
        if let Some(n) = names {
            m.set_node_names(n).map_err(|e| e.in_file(path))?;
        }
        if let Some(intra) = &doc.intra {
            let cfg = TopologyConfig {
                intra: Some(intra.clone()),
                ..Default::default()
            };
            match cfg.build_intra(base)? {
                Some(IntraNode::Tree(t)) => m = m.with_node_tree(t).map_err(|e| e.in_file(path))?,
                _ => {
                    return Err(parse(
                        "intra: mapping needs a tree (kind = \"tree\" or an hwloc kind)".into(),
                    ))
                }
            }
        }
        if let Some(d) = doc.description {
            m.description = format!(
                "{d}: {} x {}",
                count(m.nodes(), "node"),
                count(m.rpn, "rank")
            );
        }
        Ok(m)
    }

    /// The same nodes and network with `k` slots per node (and no node tree).
    ///
    /// # Errors
    /// [`Error::Mismatch`] for `k == 0` or too many slots.
    pub fn with_ranks_per_node(self, k: usize) -> Result<Self> {
        let description = self.description.clone();
        Self::checked(k, self.names, self.net, description)
    }

    /// The same machine with `tree` inside every node: core `c` of a node is PU `c` of
    /// the tree, and metrics report intra-node bytes by the level the two cores share.
    ///
    /// # Errors
    /// [`Error::Mismatch`] if the tree's PU count differs from the ranks per node.
    pub fn with_node_tree(mut self, tree: NodeTree) -> Result<Self> {
        if tree.num_pus() != self.rpn {
            return Err(Error::Mismatch(format!(
                "intra: the node tree has {} PUs but a node runs {} ranks",
                tree.num_pus(),
                self.rpn
            )));
        }
        self.description = format!("{}; nodes: {}", self.description, tree.description());
        self.tree = Some(tree);
        Ok(self)
    }

    /// The tree inside every node, if one was given.
    pub fn node_tree(&self) -> Option<&NodeTree> {
        self.tree.as_ref()
    }

    /// Renames the nodes (for launcher files), in machine order.
    ///
    /// # Errors
    /// [`Error::Mismatch`] if the count differs from [`MapMachine::nodes`] or a name is
    /// repeated or empty.
    pub fn set_node_names(&mut self, names: Vec<String>) -> Result<()> {
        if names.len() != self.names.len() {
            return Err(Error::Mismatch(format!(
                "nodes: {} names for {} nodes",
                names.len(),
                self.names.len()
            )));
        }
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::Mismatch(format!("nodes: `{}` is named twice", w[0])));
        }
        if names
            .iter()
            .any(|n| n.is_empty() || n.contains(char::is_whitespace))
        {
            return Err(Error::Mismatch(
                "nodes: names must be non-empty and without spaces".into(),
            ));
        }
        self.names = names;
        Ok(())
    }

    /// The slot of every rank of a job whose rank `r` runs on the node named
    /// `node_of_rank[r]` (names as in this machine: e.g. the host names a job finds at
    /// run time, matched against a torus machine file's `nodes`); the `i`-th rank on a
    /// node takes core `i`. A mapping (task → slot) becomes task → rank with
    /// `mapping::mpi::map_to_ranks(map, &slots)` (feature `mpi`).
    ///
    /// ```
    /// use copr_mapping::MapMachine;
    /// let mut m = MapMachine::flat(2, 2).unwrap();
    /// m.set_node_names(vec!["a".into(), "b".into()]).unwrap();
    /// // the launcher placed ranks round-robin
    /// let slots = m.slots_of(&["a", "b", "a", "b"]).unwrap();
    /// assert_eq!(slots.forward(), [0, 2, 1, 3]);
    /// assert!(m.slots_of(&["a", "a", "a", "b"]).is_err());
    /// ```
    ///
    /// # Errors
    /// [`Error::Mismatch`] for a name the machine does not have, or a node that runs
    /// other than `ranks_per_node` ranks.
    pub fn slots_of<S: AsRef<str>>(&self, node_of_rank: &[S]) -> Result<copr::lap::Perm> {
        let index: std::collections::HashMap<&str, usize> = self
            .names
            .iter()
            .enumerate()
            .map(|(k, n)| (n.as_str(), k))
            .collect();
        let mut next = vec![0usize; self.names.len()];
        let mut fwd = Vec::with_capacity(node_of_rank.len());
        for (r, name) in node_of_rank.iter().enumerate() {
            let name = name.as_ref();
            let k = *index.get(name).ok_or_else(|| {
                Error::Mismatch(format!(
                    "rank {r} runs on `{name}`, which is not a node of the machine"
                ))
            })?;
            if next[k] == self.rpn {
                return Err(Error::Mismatch(format!(
                    "node `{name}` runs more than {} ranks (rank {r} is one too many)",
                    self.rpn
                )));
            }
            fwd.push(k * self.rpn + next[k]);
            next[k] += 1;
        }
        if let Some(k) = next.iter().position(|&c| c != self.rpn) {
            return Err(Error::Mismatch(format!(
                "node `{}` runs {} ranks; the machine has {} per node",
                self.names[k], next[k], self.rpn
            )));
        }
        copr::lap::Perm::from_forward(fwd)
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.names.len()
    }

    /// Slots (ranks) per node.
    pub fn ranks_per_node(&self) -> usize {
        self.rpn
    }

    /// Number of slots `nodes·ranks_per_node`.
    pub fn slots(&self) -> usize {
        self.names.len() * self.rpn
    }

    /// The node of slot `s`: `s / ranks_per_node`.
    #[inline]
    pub fn node_of_slot(&self, s: usize) -> usize {
        s / self.rpn
    }

    /// The name of node `k`.
    ///
    /// # Panics
    /// If `k >= nodes()`.
    pub fn node_name(&self, k: usize) -> &str {
        &self.names[k]
    }

    /// The network.
    pub fn kind(&self) -> NetKind<'_> {
        match &self.net {
            Net::Torus(t) => NetKind::Torus(t),
            Net::Graph { net, hosts, .. } => NetKind::Graph(net, hosts),
            Net::Flat => NetKind::Flat,
        }
    }

    /// A one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Network hops between nodes `a` and `b` (0 for the same node or two nodes at one
    /// torus router).
    #[inline]
    pub fn hops(&self, a: usize, b: usize) -> u32 {
        if a == b {
            return 0;
        }
        match &self.net {
            Net::Torus(t) => t.hops(a, b),
            Net::Graph { routes, .. } => routes[a * self.names.len() + b].len() as u32,
            Net::Flat => 1,
        }
    }

    /// Number of directed links that loads are counted on.
    pub fn num_links(&self) -> usize {
        match &self.net {
            Net::Torus(t) => t.num_links(),
            Net::Graph { edge_inv_bw, .. } => edge_inv_bw.len(),
            Net::Flat => self.names.len(),
        }
    }

    /// Names, direction classes and bandwidths of link `l`.
    pub fn link_info(&self, l: usize) -> LinkInfo {
        match &self.net {
            Net::Torus(t) => {
                let n = t.ndims();
                let (from, dim, neg) = (l / (2 * n), (l % (2 * n)) / 2, l % 2 == 1);
                let c = t.coords_of_index(from);
                let cs: Vec<String> = c.iter().map(u32::to_string).collect();
                let class = format!("{}{}", dim_name(dim), if neg { '-' } else { '+' });
                LinkInfo {
                    name: format!("({}) {class}", cs.join(",")),
                    class,
                    inv_bandwidth: 1.0 / t.params().link_bandwidth[dim],
                }
            }
            Net::Graph {
                edge_inv_bw,
                edge_names,
                ..
            } => LinkInfo {
                name: edge_names[l].clone(),
                class: "net".into(),
                inv_bandwidth: edge_inv_bw[l],
            },
            Net::Flat => LinkInfo {
                name: format!("{} injection", self.names[l]),
                class: "inj".into(),
                inv_bandwidth: 1.0 / copr_topology::DEFAULT_LINK_BANDWIDTH,
            },
        }
    }

    /// Direction classes in display order (`x+ x- y+ …`, or `net` / `inj`).
    pub fn link_classes(&self) -> Vec<String> {
        match &self.net {
            Net::Torus(t) => (0..t.ndims())
                .flat_map(|d| [format!("{}+", dim_name(d)), format!("{}-", dim_name(d))])
                .collect(),
            Net::Graph { .. } => vec!["net".into()],
            Net::Flat => vec!["inj".into()],
        }
    }

    /// Class index of link `l` into [`MapMachine::link_classes`].
    #[inline]
    pub fn link_class(&self, l: usize) -> usize {
        match &self.net {
            Net::Torus(t) => l % (2 * t.ndims()),
            _ => 0,
        }
    }

    /// On a torus, the weight of one hop in each dimension: the fastest link
    /// bandwidth divided by that dimension's (1 for the fastest); empty otherwise.
    pub fn hop_weights(&self) -> Vec<f64> {
        match &self.net {
            Net::Torus(t) => {
                let bw = &t.params().link_bandwidth;
                let best = bw.iter().cloned().fold(0.0, f64::max);
                bw.iter().map(|b| best / b).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Inverse bandwidth of every link (seconds per byte).
    pub fn link_inv_bandwidths(&self) -> Vec<f64> {
        match &self.net {
            Net::Torus(t) => {
                let n = t.ndims();
                let per: Vec<f64> = t.params().link_bandwidth.iter().map(|b| 1.0 / b).collect();
                (0..t.num_links()).map(|l| per[(l % (2 * n)) / 2]).collect()
            }
            Net::Graph { edge_inv_bw, .. } => edge_inv_bw.clone(),
            Net::Flat => vec![1.0 / copr_topology::DEFAULT_LINK_BANDWIDTH; self.names.len()],
        }
    }

    /// The network graph and the host of every node, for a machine given as a network
    /// graph (its link ids are the graph's edge indices); `None` otherwise.
    pub(crate) fn network_parts(&self) -> Option<(&Network, &[usize])> {
        match &self.net {
            Net::Graph { net, hosts, .. } => Some((net, hosts)),
            _ => None,
        }
    }

    /// Calls `f(link)` for each link on the route from node `a` to node `b`
    /// (dimension-order on a torus: x first, the shorter way round, positive on a tie).
    pub fn for_route(&self, a: usize, b: usize, mut f: impl FnMut(usize)) {
        if a == b {
            return;
        }
        match &self.net {
            Net::Torus(t) => {
                let n = t.ndims();
                t.for_each_route_link(a, b, |l| f(l.id(n)));
            }
            Net::Graph { routes, .. } => {
                for &e in &routes[a * self.names.len() + b] {
                    f(e as usize);
                }
            }
            Net::Flat => f(a),
        }
    }
}

/// Refuses machines of more than [`super::MAX_TASKS`] slots (before anything of that
/// size is allocated).
pub(crate) fn check_slots(nodes: u128, rpn: usize) -> Result<()> {
    if rpn == 0 {
        return Err(Error::Mismatch("ranks_per_node must be >= 1, got 0".into()));
    }
    let slots = nodes.saturating_mul(rpn as u128);
    if slots > super::MAX_TASKS as u128 {
        return Err(Error::Mismatch(format!(
            "{nodes} nodes x {rpn} ranks per node = {slots} slots; at most {} are supported",
            super::MAX_TASKS
        )));
    }
    Ok(())
}

fn dim_name(d: usize) -> String {
    match d {
        0 => "x".into(),
        1 => "y".into(),
        2 => "z".into(),
        _ => format!("d{d}"),
    }
}

/// A TOML error as the other inputs report it: `line N: message`, on one line.
pub(crate) fn toml_detail(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    match e.span() {
        Some(span) => format!(
            "line {}: {message}",
            copr_topology::files::line_of_offset(text, span.start)
        ),
        None => message,
    }
}

/// Node lists are expanded to at most this many names.
const MAX_NODELIST: usize = 1 << 22;

/// Expands a Slurm-style compressed node list: `nid[00012-00019,00033],login1` →
/// `nid00012 … nid00019 nid00033 login1`. Leading zeros of a range's start set the
/// width.
///
/// ```
/// use copr_mapping::expand_nodelist;
/// assert_eq!(expand_nodelist("n[1-3,7],x").unwrap(), ["n1", "n2", "n3", "n7", "x"]);
/// assert_eq!(expand_nodelist("nid[0008-0010]").unwrap(), ["nid0008", "nid0009", "nid0010"]);
/// assert!(expand_nodelist("n[3-1]").is_err());
/// ```
///
/// # Errors
/// A message naming the offending part for unbalanced brackets, bad or reversed
/// ranges, or more than 2²² names.
pub fn expand_nodelist(s: &str) -> std::result::Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => {
                if depth == 1 {
                    return Err(format!("`{s}`: nested `[` at byte {i}"));
                }
                depth = 1;
            }
            ']' => {
                if depth == 0 {
                    return Err(format!("`{s}`: `]` without `[` at byte {i}"));
                }
                depth = 0;
            }
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("`{s}`: unclosed `[`"));
    }
    items.push(&s[start..]);
    let mut out = Vec::new();
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("`{s}`: empty name"));
        }
        let Some(open) = item.find('[') else {
            out.push(item.to_string());
            continue;
        };
        let close = item.find(']').expect("balanced");
        let (prefix, inner, suffix) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
        if suffix.contains('[') {
            return Err(format!("`{item}`: one bracket group per name is supported"));
        }
        for part in inner.split(',') {
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part.trim(), part.trim()),
            };
            let bad = || format!("`{item}`: `{part}` is not a number or range");
            if a.is_empty()
                || !a.bytes().all(|c| c.is_ascii_digit())
                || !b.bytes().all(|c| c.is_ascii_digit())
                || b.is_empty()
            {
                return Err(bad());
            }
            let lo: u64 = a.parse().map_err(|_| bad())?;
            let hi: u64 = b.parse().map_err(|_| bad())?;
            if hi < lo {
                return Err(format!("`{item}`: range `{part}` runs backwards"));
            }
            if hi - lo >= (MAX_NODELIST - out.len()) as u64 {
                return Err(format!("`{s}`: more than {MAX_NODELIST} names"));
            }
            let width = a.len();
            for v in lo..=hi {
                out.push(format!("{prefix}{v:0width$}{suffix}"));
            }
        }
    }
    Ok(out)
}

/// `n` and the noun, in the plural unless `n` is 1: `1 node`, `2 nodes`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::TorusParams;

    #[test]
    fn torus_route_matches_topology_route() {
        let t = Torus::full(TorusParams::new(vec![4, 3, 5])).unwrap();
        let m = MapMachine::torus(t.clone(), 1).unwrap();
        for a in 0..t.num_nodes() {
            for b in 0..t.num_nodes() {
                let mut mine = Vec::new();
                m.for_route(a, b, |l| mine.push(l));
                let theirs: Vec<usize> = t.route(a, b).iter().map(|l| l.id(3)).collect();
                assert_eq!(mine, theirs, "{a} -> {b}");
                assert_eq!(mine.len() as u32, m.hops(a, b));
            }
        }
    }

    #[test]
    fn nodelist_errors() {
        assert!(expand_nodelist("a[1-2").unwrap_err().contains("unclosed"));
        assert!(expand_nodelist("a[x]")
            .unwrap_err()
            .contains("not a number"));
        assert!(expand_nodelist("a[0-99999999999]")
            .unwrap_err()
            .contains("more than"));
        assert!(expand_nodelist("a,,b").unwrap_err().contains("empty"));
        assert_eq!(expand_nodelist("a[1-2]-ib").unwrap(), ["a1-ib", "a2-ib"]);
    }
}
