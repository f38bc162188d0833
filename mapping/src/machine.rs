//! The machine a job runs on, as the mapping stage sees it: allocated nodes, ranks per
//! node, and the network between the nodes with its routing.
//!
//! Slots are numbered the way launchers number ranks by default ("packed"): slot
//! `s = node·ranks_per_node + core`, nodes in the machine's order. A mapping assigns each
//! task a slot.

use std::path::Path;

use copr_topology::{
    files, BandwidthModel, InterNode, IntraNode, Network, NodeTree, PlacementConfig, SlotCounts,
    TopologyConfig, TopologyError, Torus,
};

use copr::error::{Error, Result};

use crate::bundles::{ecmp_bundles_within, Bundles};
use crate::errors::{count, MachineError};
use crate::route_table::RouteTable;

/// What connects the nodes.
#[derive(Debug, Clone, Copy)]
pub enum NetKind<'a> {
    /// A torus; machine node `k` is torus node `k` (coordinates `torus.coords(k)`).
    Torus(&'a Torus),
    /// A network graph; machine node `k` is network host `hosts[k]`.
    Graph(&'a Network, &'a [usize]),
    /// No network model: every pair of nodes is one hop apart over the sender's own
    /// injection link (at the bandwidth of a uniform network between the nodes, such
    /// as a calibration measures, or the slowest of the node's row of a node × node
    /// matrix; else `copr_topology::DEFAULT_LINK_BANDWIDTH`, 5 GB/s).
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
        /// Where ECMP loads links differently from the single path and its split is
        /// bundle-equivalent: the bundles the loads are counted on.
        ecmp: Option<Box<EcmpGroups>>,
    },
    /// Every node's one link, node `k`'s `inv_bw[k]` seconds per byte.
    Flat {
        inv_bw: Vec<f64>,
    },
}

/// The bundles of equal-cost links of a network (see `bundles.rs`): the links of one
/// bundle always carry the same load under ECMP, the bundle's load divided by its size.
#[derive(Debug, Clone)]
struct EcmpGroups {
    bundles: Bundles,
    /// Seconds per byte of a bundle's load on each of its links: inverse bandwidth
    /// over the bundle's size.
    inv: Vec<f64>,
}

/// How the busiest link of a mapping is measured ([`MapMachine::link_model`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkLoadModel {
    /// Every message follows one route ([`MapMachine::for_route`]): dimension order on
    /// a torus, one least-cost path on a network graph.
    SinglePath,
    /// Every message is split evenly over its equal-cost paths
    /// ([`crate::ecmp_link_loads`]): network graphs that route this way and where it
    /// loads links differently from the single path (fat trees).
    Ecmp,
}

impl std::fmt::Display for LinkLoadModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::SinglePath => "single path",
            Self::Ecmp => "ECMP",
        })
    }
}

/// The ECMP bundles of a network graph are searched when that looks at no more than
/// this many vertices and links (`c²·(V + E)` for `c` distinct path ends, a k = 16 fat
/// tree: 1.3·10⁸); above, the loads are the single path's.
const MAX_ECMP_WORK: usize = 1 << 28;

/// The ECMP bundles of the machine nodes on `hosts` when ECMP's loads differ from the
/// single path's `routes` (a bundle of several links, or a route that is not the
/// single path), the network's split is bundle-equivalent, and the search is small
/// enough ([`MAX_ECMP_WORK`]).
fn ecmp_groups(
    net: &Network,
    hosts: &[usize],
    routes: &[Vec<u32>],
    edge_inv_bw: &[f64],
) -> Option<Box<EcmpGroups>> {
    let bundles = ecmp_bundles_within(net, hosts, MAX_ECMP_WORK)?;
    let n = hosts.len();
    let same = bundles.links.iter().all(|l| l.len() == 1)
        && (0..n * n).all(|x| {
            let mut r = Vec::new();
            bundles.for_route(x / n, x % n, |u| r.push(bundles.links[u][0] as u32));
            r == routes[x]
        });
    if same {
        return None;
    }
    let inv = bundles
        .links
        .iter()
        .map(|l| edge_inv_bw[l[0]] / l.len() as f64)
        .collect();
    Some(Box::new(EcmpGroups { bundles, inv }))
}

/// The inverse bandwidth of each node's link on a flat view of `inter`, for nodes
/// `names` in machine order: a uniform network's for every node; for a node × node
/// matrix, the largest inverse bandwidth of the node's row towards the other nodes
/// named (its slowest pair); `None` (the default bandwidth) for anything else, an
/// unknown name or a zero (unmeasured) bandwidth.
/// The characters a node name cannot have besides white space and control
/// characters: what the launcher files give a meaning (`=` in a rankfile's
/// `rank N=host`, `#` a comment, `,` `:` `[` `]` in host lists and MPICH's `host:n`,
/// quotes).
pub const NODE_NAME_FORBIDDEN: &str = "=#,:[]\"'";

/// Checks that `name` can name a node in the launcher files: non-empty, without white
/// space, control characters or any of [`NODE_NAME_FORBIDDEN`].
///
/// ```
/// use copr_mapping::check_node_name;
/// assert!(check_node_name("nid00012").is_ok());
/// assert!(check_node_name("a=b").is_err());
/// ```
///
/// # Errors
/// [`MachineError::NodeName`] naming it.
pub fn check_node_name(name: &str) -> Result<()> {
    let bad = |c: char| c.is_whitespace() || c.is_control() || NODE_NAME_FORBIDDEN.contains(c);
    if name.is_empty() || name.contains(bad) {
        return Err(MachineError::NodeName {
            name: name.escape_debug().to_string(),
        }
        .into());
    }
    Ok(())
}

fn flat_inv_bandwidths(inter: Option<&InterNode>, names: &[String]) -> Option<Vec<f64>> {
    let inv = match inter? {
        InterNode::Uniform(c) => vec![c.inv_bandwidth; names.len()],
        InterNode::Matrix(t) => {
            let idx = names
                .iter()
                .map(|n| t.index_of(n))
                .collect::<Option<Vec<_>>>()?;
            idx.iter()
                .map(|&a| {
                    idx.iter()
                        .filter(|&&b| b != a)
                        .map(|&b| t.link_cost(a, b).inv_bandwidth)
                        .fold(0.0, f64::max)
                })
                .collect()
        }
        _ => return None,
    };
    let default = 1.0 / copr_topology::DEFAULT_LINK_BANDWIDTH;
    (inv.iter().all(|&x| x > 0.0 && x.is_finite()) && inv.iter().any(|&x| x != default))
        .then_some(inv)
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
    /// Slots of each node when they differ (node `k` has cores `0..capacity[k]` of
    /// `0..rpn`); `None` when every node has `rpn`.
    capacity: Option<Vec<usize>>,
    /// [`MapMachine::distance_table`], built on first use (shared by clones).
    distances: std::sync::OnceLock<std::sync::Arc<[f64]>>,
    /// A torus' [`RouteTable`], built on first route (shared by clones); `None` inside
    /// when the torus is too large for one.
    route_table: std::sync::OnceLock<Option<std::sync::Arc<RouteTable>>>,
    /// [`MapMachine::part_near`], built on first use (shared by clones).
    part_near: std::sync::OnceLock<std::sync::Arc<PartNear>>,
}

/// Machines of at most this many nodes keep a table of their weighted node distances
/// (8 MiB at most).
pub(crate) const DISTANCE_TABLE_NODES: usize = 1024;

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

impl MapMachine {
    /// Every node of `torus`, `ranks_per_node` slots each.
    ///
    /// # Errors
    /// [`MachineError`] if `ranks_per_node` is 0, the slot count exceeds
    /// [`super::MAX_TASKS`], or the torus has more than 8 dimensions.
    pub fn torus(torus: Torus, ranks_per_node: usize) -> Result<Self> {
        if torus.ndims() > MAX_TORUS_DIMS {
            return Err(MachineError::TorusDimensions {
                dims: torus.ndims(),
                max: MAX_TORUS_DIMS,
            }
            .into());
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
    /// [`MachineError`] for an unknown or repeated host, more than
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
            return Err(MachineError::NetworkHosts {
                network: net.name().to_string(),
                hosts: n,
                max: MAX_GRAPH_NODES,
            }
            .into());
        }
        let mut seen = vec![false; net.num_hosts()];
        for &h in &hosts {
            if h >= net.num_hosts() || std::mem::replace(&mut seen[h], true) {
                return Err(MachineError::HostIndex {
                    network: net.name().to_string(),
                    index: h,
                }
                .into());
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
                    return Err(MachineError::NoPath {
                        network: net.name().to_string(),
                        from: net.host_name(hosts[a]).to_string(),
                        to: net.host_name(hosts[b]).to_string(),
                    }
                    .into());
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
                ecmp: ecmp_groups(&net, &hosts, &routes, &edge_inv_bw),
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
    /// [`MachineError`] for zero nodes or ranks per node.
    pub fn flat(nodes: usize, ranks_per_node: usize) -> Result<Self> {
        if nodes == 0 {
            return Err(MachineError::NoNodes.into());
        }
        check_slots(nodes as u128, ranks_per_node)?;
        let names = (0..nodes).map(|k| format!("node{k}")).collect();
        Self::checked(
            ranks_per_node,
            names,
            Net::Flat {
                inv_bw: vec![1.0 / copr_topology::DEFAULT_LINK_BANDWIDTH; nodes],
            },
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
            capacity: None,
            distances: std::sync::OnceLock::new(),
            route_table: std::sync::OnceLock::new(),
            part_near: std::sync::OnceLock::new(),
        })
    }

    /// The weighted distance between every two nodes, `table[a·nodes + b]`: the hops
    /// of the route, each hop in torus direction `d` counted as
    /// [`MapMachine::hop_weights`]`[d]` (plain hops on other networks), as swap
    /// refinement prices them; `None` above [`DISTANCE_TABLE_NODES`] nodes. Built
    /// on first use and kept.
    ///
    /// # Complexity
    /// `O(nodes²·dims)` the first time.
    pub(crate) fn distance_table(&self) -> Option<&[f64]> {
        let n = self.nodes();
        if n > DISTANCE_TABLE_NODES {
            return None;
        }
        let table = self.distances.get_or_init(|| {
            let w = self.hop_weights();
            (0..n * n)
                .map(|k| self.weighted_distance(&w, k / n, k % n))
                .collect()
        });
        Some(table)
    }

    /// The weighted distance from node `a` to node `b` (see
    /// [`MapMachine::distance_table`]), `w` being [`MapMachine::hop_weights`].
    pub(crate) fn weighted_distance(&self, w: &[f64], a: usize, b: usize) -> f64 {
        if a == b {
            return 0.0;
        }
        match &self.net {
            Net::Torus(t) => {
                let (ca, cb) = (t.coords(a), t.coords(b));
                let dims = t.dims();
                let mut s = 0.0;
                for d in 0..ca.len() {
                    let x = ca[d].abs_diff(cb[d]);
                    s += f64::from(x.min(dims[d] - x)) * w[d];
                }
                s
            }
            _ => f64::from(self.hops(a, b)),
        }
    }

    /// Reads a machine file ([`copr_topology::MachineFile`], TOML or JSON): the short
    /// form
    ///
    /// ```toml
    /// description = "8x8x8 torus, X and Z faster"   # optional
    /// ranks_per_node = 16          # or one count per node, or "16(x24),8(x16)"
    /// nodes = "nid[00000-00511]"   # optional names, Slurm-style list or array
    /// [torus]                      # dims, link_bandwidth, coords (allocated nodes) …
    /// dims = [8, 8, 8]
    /// ```
    /// or `[network] file = "fat-tree.net.toml"` (hosts optional) or `[flat] nodes = N`;
    /// or the long form (`[intra]`, `[inter]`, `[placement]`) that `copr topo` and cost
    /// configs use; or a cost config, a network description, a calibration's matrix.
    /// Relative paths resolve against the file's directory. The long form's nodes are
    /// those its placement uses for the file's rank count (see
    /// [`MapMachine::from_file_for`]).
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::Topology`] (naming file, line and field), or an invalid
    /// machine; every message names the file (or the file it refers to, where the
    /// error is).
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_file_for(path, None)
    }

    /// [`MapMachine::from_file`] for a job of `tasks` ranks: a long-form machine file
    /// (`[inter]` + a placement rule) gives the nodes its rule fills with `tasks`
    /// ranks, each with the rule's ranks per node; a placement file gives its own
    /// nodes and counts; the short form ignores `tasks`.
    ///
    /// # Errors
    /// As [`MapMachine::from_file`].
    pub fn from_file_for(path: &Path, tasks: Option<usize>) -> Result<Self> {
        let in_file = |e: Error| {
            if e.to_string().contains(&path.display().to_string()) {
                e
            } else {
                Error::InFile {
                    path: path.to_owned(),
                    source: Box::new(e),
                }
            }
        };
        let mf = copr_topology::MachineFile::read(path)?;
        Self::from_description(&mf.config, &mf.base, tasks).map_err(in_file)
    }

    /// The mapper's view of a machine description (relative paths resolve against
    /// `base`); `tasks` as in [`MapMachine::from_file_for`].
    ///
    /// # Errors
    /// Source errors, or a machine the mapper cannot hold (too many slots, more than
    /// [`MAX_GRAPH_NODES`] network hosts).
    pub fn from_description(
        cfg: &TopologyConfig,
        base: &Path,
        tasks: Option<usize>,
    ) -> Result<Self> {
        cfg.validate(&copr_topology::files::FieldPath::root())
            .map_err(TopologyError::from)?;
        let mut m = if cfg.is_short_form() {
            Self::short_form(cfg, base)?
        } else {
            Self::long_form(cfg, base, tasks)?
        };
        if let Some(d) = &cfg.description {
            m.description = match &m.capacity {
                None => format!(
                    "{d}: {} x {}",
                    count(m.nodes(), "node"),
                    count(m.rpn, "rank")
                ),
                Some(c) => format!(
                    "{d}: {}, slots per node {}",
                    count(m.nodes(), "node"),
                    tasks_per_node(c)
                ),
            };
        }
        Ok(m)
    }

    /// The short form: every node of the machine with its slots, built as every
    /// command builds them ([`TopologyConfig::short_form_nodes`]) and viewed as
    /// [`MapMachine::view`] views a long-form machine's nodes.
    fn short_form(cfg: &TopologyConfig, base: &Path) -> Result<Self> {
        let intra = cfg.build_intra(base)?;
        let pus = intra.as_ref().and_then(IntraNode::num_pus);
        // refuse a machine too large to hold before building its nodes
        if let Some(tc) = cfg.torus.as_ref().filter(|t| t.coords.is_none()) {
            let n = tc.dims.iter().fold(1u128, |a, &d| a * u128::from(d));
            let first = match &cfg.ranks_per_node {
                Some(SlotCounts::Each(k)) => *k,
                _ => pus.unwrap_or(1),
            };
            check_slots(n, first)?;
        }
        if let Some(f) = cfg.flat.as_ref().filter(|f| f.nodes > super::MAX_TASKS) {
            return Err(MachineError::TooManyNodes {
                field: "flat.nodes",
                nodes: f.nodes,
                max: super::MAX_TASKS,
            }
            .into());
        }
        let (inter, names) = cfg.short_form_nodes(base)?;
        let counts = cfg.slot_counts(names.len(), pus)?;
        let mut m = Self::over(Some(&inter), names, counts).map_err(|e| {
            match &cfg.network {
                // a network's own errors (no path between two hosts) name its file
                Some(n) => e.in_file(&files::resolve(base, &n.file)),
                None => e,
            }
        })?;
        // a network's hosts keep their names in the network file; the machine file's
        // `nodes` are the names the exports give them (as `copr map --nodes` does)
        if let (Some(_), Some(names)) = (&cfg.network, cfg.node_names()?) {
            m.set_node_names(names)?;
        }
        if let Some(intra) = intra {
            match intra {
                IntraNode::Tree(t) => m = m.with_node_tree(t)?,
                _ => return Err(MachineError::IntraNotTree.into()),
            }
        }
        Ok(m)
    }

    /// The long form: the nodes the placement uses for `tasks` ranks.
    fn long_form(cfg: &TopologyConfig, base: &Path, tasks: Option<usize>) -> Result<Self> {
        // the inside of a node is optional for mapping: an hwloc source on a build
        // without hwloc leaves the nodes without a tree
        let mut no_intra = cfg.clone();
        no_intra.intra = None;
        let machine = no_intra.build(base, tasks)?;
        let tree = match cfg.build_intra(base) {
            Ok(Some(IntraNode::Tree(t))) => Some(t),
            Ok(_) | Err(TopologyError::HwlocDisabled { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let counts = machine.placement().ranks_per_node();
        let by_rule = !matches!(cfg.placement, Some(PlacementConfig::File { .. }))
            && cfg.rank_matrix.is_none();
        let counts = match (by_rule, counts.iter().max()) {
            (true, Some(&most)) => vec![most; counts.len()],
            _ => counts,
        };
        let mut m = Self::view(&machine, counts)?;
        if let Some(t) = tree.filter(|t| t.num_pus() == m.rpn) {
            m = m.with_node_tree(t)?;
        }
        Ok(m)
    }

    /// The mapper's view of a topology [`copr_topology::Machine`]: its placement's
    /// nodes in order, each with as many slots as ranks it places there; a torus keeps
    /// its dimension-order routes (the placement's nodes at their coordinates), a
    /// network graph its cheapest paths; a uniform or matrix network is flat (every
    /// node pair one hop). Rank `r` of the machine is task `r` on its node.
    ///
    /// # Errors
    /// [`MachineError`] for too many slots, a node unknown to the torus, or a
    /// network of more than [`MAX_GRAPH_NODES`] of the placement's hosts.
    pub fn from_machine(m: &copr_topology::Machine) -> Result<Self> {
        Self::view(m, m.placement().ranks_per_node())
    }

    /// The placement's nodes of `m` with `counts[k]` slots on node `k`, routed as its
    /// network: a torus by dimension order, a network graph by its cheapest paths,
    /// anything else flat.
    fn view(m: &copr_topology::Machine, counts: Vec<usize>) -> Result<Self> {
        let names = m
            .placement()
            .node_names()
            .map(str::to_string)
            .collect::<Vec<_>>();
        let sub;
        let inter = match m.inter() {
            Some(InterNode::Torus(t)) => {
                sub = InterNode::Torus(sub_torus(t, &names)?);
                Some(&sub)
            }
            other => other,
        };
        Self::over(inter, names, counts)
    }

    /// Nodes `names` (in machine order) with `counts[k]` slots on node `k`, joined by
    /// `inter`: a torus whose node `k` is node `k` here, routed by dimension order; a
    /// network graph, routed by its cheapest paths between the hosts named; anything
    /// else flat.
    fn over(inter: Option<&InterNode>, names: Vec<String>, counts: Vec<usize>) -> Result<Self> {
        let most = counts.iter().copied().max().unwrap_or(1).max(1);
        check_slots(names.len() as u128, most)?;
        let mm = match inter {
            Some(InterNode::Torus(t)) => Self::torus(t.clone(), most)?,
            Some(InterNode::Network(nc)) => {
                let hosts = names
                    .iter()
                    .map(|n| {
                        nc.host_index(n).ok_or_else(|| {
                            Error::from(MachineError::NotAHost {
                                field: "nodes",
                                name: n.clone(),
                            })
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                Self::network(nc.network().clone(), Some(hosts), nc.model(), most)?
            }
            other => {
                let mut f = Self::flat(names.len(), most)?;
                f.set_node_names(names)?;
                // a uniform network (a calibration's measured one) gives the links
                // its bandwidth; a node × node matrix gives each node's link the
                // slowest bandwidth of the node's row among the machine's nodes (exact
                // when a row is uniform, else an upper bound of the pair-by-pair
                // time); a `[flat]` machine's is the default
                if let Some(inv) = flat_inv_bandwidths(other, &f.names) {
                    let (lo, hi) = inv.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
                        (lo.min(x), hi.max(x))
                    });
                    let gbs = |inv: f64| copr_topology::gb_per_s(1.0 / inv);
                    let range = if lo == hi {
                        gbs(lo)
                    } else {
                        format!("{}-{}", gbs(hi), gbs(lo))
                    };
                    f.description = format!("{}, node links {range} GB/s", f.description);
                    f.net = Net::Flat { inv_bw: inv };
                }
                f
            }
        };
        mm.with_slot_counts(counts)
    }

    /// The same machine with `counts[k]` slots on node `k`.
    ///
    /// # Errors
    /// [`MachineError`] for a count list of the wrong length, or counts that differ
    /// between nodes.
    pub fn with_slot_counts(self, counts: Vec<usize>) -> Result<Self> {
        if counts.len() != self.names.len() {
            return Err(MachineError::SlotCounts {
                counts: counts.len(),
                nodes: self.names.len(),
            }
            .into());
        }
        match counts.iter().max() {
            None => Ok(self),
            Some(&most) if counts.iter().all(|&c| c == most) => {
                if most == self.rpn {
                    Ok(self)
                } else {
                    self.with_ranks_per_node(most)
                }
            }
            Some(&most) => {
                let mut m = if most == self.rpn {
                    self
                } else {
                    self.with_ranks_per_node(most)?
                };
                m.description = format!(
                    "{}; slots per node {}",
                    m.description,
                    tasks_per_node(&counts)
                );
                m.capacity = Some(counts);
                Ok(m)
            }
        }
    }

    /// Slots of node `k` (at most [`MapMachine::ranks_per_node`]).
    ///
    /// # Panics
    /// If `k >= nodes()`.
    #[inline]
    pub fn slot_count(&self, k: usize) -> usize {
        match &self.capacity {
            Some(c) => c[k],
            None => {
                assert!(k < self.names.len(), "node {k} of {}", self.names.len());
                self.rpn
            }
        }
    }

    /// Whether slot `s` (node `s / ranks_per_node`, core `s % ranks_per_node`) is one
    /// the node has.
    #[inline]
    pub fn has_slot(&self, s: usize) -> bool {
        s < self.slots() && s % self.rpn < self.slot_count(s / self.rpn)
    }

    /// The slots the nodes have: [`MapMachine::slots`] less the missing ones of nodes
    /// with fewer than [`MapMachine::ranks_per_node`].
    pub fn used_slots(&self) -> usize {
        match &self.capacity {
            Some(c) => c.iter().sum(),
            None => self.slots(),
        }
    }

    /// The same nodes and network with `k` slots per node (and no node tree).
    ///
    /// # Errors
    /// [`MachineError`] for `k == 0` or too many slots.
    pub fn with_ranks_per_node(self, k: usize) -> Result<Self> {
        let description = self.description.clone();
        let part_near = self.part_near;
        let mut m = Self::checked(k, self.names, self.net, description)?;
        // the nodes' nearest nodes do not depend on their slots
        m.part_near = part_near;
        Ok(m)
    }

    /// The same machine with `tree` inside every node: core `c` of a node is PU `c` of
    /// the tree, and metrics report intra-node bytes by the level the two cores share.
    ///
    /// # Errors
    /// [`MachineError`] if the tree's PU count differs from the ranks per node.
    pub fn with_node_tree(mut self, tree: NodeTree) -> Result<Self> {
        if tree.num_pus() != self.rpn {
            return Err(MachineError::NodeTree {
                pus: tree.num_pus(),
                ranks_per_node: self.rpn,
            }
            .into());
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
    /// [`MachineError`] if the count differs from [`MapMachine::nodes`] or a name is
    /// repeated or empty.
    pub fn set_node_names(&mut self, names: Vec<String>) -> Result<()> {
        if names.len() != self.names.len() {
            return Err(MachineError::NodeNames {
                names: names.len(),
                nodes: self.names.len(),
            }
            .into());
        }
        let mut sorted: Vec<&String> = names.iter().collect();
        sorted.sort();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(MachineError::DuplicateNode { name: w[0].clone() }.into());
        }
        for n in &names {
            check_node_name(n)?;
        }
        self.names = names;
        Ok(())
    }

    /// Whether every node's name can stand in the launcher files that name hosts
    /// (rankfile, `SLURM_HOSTFILE`; see [`check_node_name`]): a network's host names
    /// come from its file, which the machine file's `nodes` (or `--nodes`) can replace.
    ///
    /// # Errors
    /// [`MachineError::NodeName`] for the first node whose name cannot.
    pub fn check_host_names(&self) -> Result<()> {
        self.names.iter().try_for_each(|n| check_node_name(n))
    }

    /// The slot of every rank of a job whose rank `r` runs on the node named
    /// `node_of_rank[r]` (names as in this machine: e.g. the host names a job finds at
    /// run time, matched against a torus machine file's `nodes`); the `i`-th rank on a
    /// node takes core `i`. A mapping (task → slot) becomes task → rank with
    /// `mapping::mpi::map_to_ranks(map, &slots)` (feature `mpi`). On a machine whose
    /// nodes have different slot counts the permutation also covers the missing slots
    /// (after the ranks, in slot order), as a pattern padded to
    /// [`MapMachine::slots`] tasks needs.
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
    /// [`MachineError`] for a name the machine does not have, or a node that runs
    /// other than its slot count of ranks.
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
                Error::from(MachineError::UnknownNode {
                    rank: r,
                    node: name.to_string(),
                })
            })?;
            if next[k] == self.slot_count(k) {
                return Err(MachineError::NodeFull {
                    node: name.to_string(),
                    slots: self.slot_count(k),
                    rank: r,
                }
                .into());
            }
            fwd.push(k * self.rpn + next[k]);
            next[k] += 1;
        }
        if let Some(k) = (0..next.len()).find(|&k| next[k] != self.slot_count(k)) {
            return Err(MachineError::NodeRanks {
                node: self.names[k].clone(),
                ranks: next[k],
                slots: self.slot_count(k),
            }
            .into());
        }
        // the missing slots of nodes with fewer slots: held by empty tasks
        fwd.extend((0..self.slots()).filter(|&s| !self.has_slot(s)));
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
            Net::Flat { .. } => NetKind::Flat,
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
            Net::Flat { .. } => 1,
        }
    }

    /// Number of directed links that loads are counted on.
    pub fn num_links(&self) -> usize {
        match &self.net {
            Net::Torus(t) => t.num_links(),
            Net::Graph { edge_inv_bw, .. } => edge_inv_bw.len(),
            Net::Flat { .. } => self.names.len(),
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
            Net::Flat { inv_bw } => LinkInfo {
                name: format!("{} injection", self.names[l]),
                class: "inj".into(),
                inv_bandwidth: inv_bw[l],
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
            Net::Flat { .. } => vec!["inj".into()],
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
            Net::Flat { inv_bw } => inv_bw.clone(),
        }
    }

    /// Latency of every link in seconds, indexed as [`Self::link_inv_bandwidths`]: a
    /// torus' `hop_latency` on each link (its `base_latency` belongs to no link), a
    /// network edge's own latency, 0 on a flat machine.
    pub fn link_latencies(&self) -> Vec<f64> {
        match &self.net {
            Net::Torus(t) => vec![t.params().hop_latency; t.num_links()],
            Net::Graph { net, .. } => net.graph().edge_weights().map(|c| c.latency).collect(),
            Net::Flat { .. } => vec![0.0; self.names.len()],
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

    /// How the busiest link is measured on this machine: [`LinkLoadModel::Ecmp`] on a
    /// network graph whose equal-cost split loads links differently from the single
    /// path and is bundle-equivalent (a fat tree: its SimGrid platform routes the same
    /// way), else [`LinkLoadModel::SinglePath`]. The metrics' busiest link
    /// ([`crate::Metrics::max_link_time`]) and the optimiser use this model.
    ///
    /// ```
    /// use copr_mapping::{LinkLoadModel, MapMachine};
    /// use copr_topology::{FatTreeSpec, LinkSpec, Network};
    /// let l = LinkSpec { latency: 1e-7, bandwidth: 1.25e10 };
    /// let spec = FatTreeSpec { k: 4, host_link: l, edge_link: l, core_link: l };
    /// let net = Network::fat_tree(&spec).unwrap();
    /// let m = MapMachine::network(net, None, Default::default(), 16).unwrap();
    /// assert_eq!(m.link_model(), LinkLoadModel::Ecmp);
    /// let single = m.with_single_path_loads();
    /// assert_eq!(single.link_model(), LinkLoadModel::SinglePath);
    /// ```
    pub fn link_model(&self) -> LinkLoadModel {
        match &self.net {
            Net::Graph { ecmp: Some(_), .. } => LinkLoadModel::Ecmp,
            _ => LinkLoadModel::SinglePath,
        }
    }

    /// This machine with its busiest link measured on the single path
    /// ([`LinkLoadModel::SinglePath`]) even where it routes ECMP.
    pub fn with_single_path_loads(mut self) -> Self {
        if let Net::Graph { ecmp, .. } = &mut self.net {
            *ecmp = None;
        }
        self
    }

    /// Number of link groups loads are counted on under [`MapMachine::link_model`]:
    /// under ECMP the bundles of equal-cost links (each link of a bundle carries the
    /// bundle's load over its size), else the links themselves.
    pub(crate) fn link_groups(&self) -> usize {
        match &self.net {
            Net::Graph { ecmp: Some(e), .. } => e.inv.len(),
            _ => self.num_links(),
        }
    }

    /// Seconds per byte of each link group's load on each of its links (the inverse
    /// bandwidth over the group's size): `max_g load_g·inv_g` is the busiest link's time.
    pub(crate) fn link_group_inv_bandwidths(&self) -> Vec<f64> {
        match &self.net {
            Net::Graph { ecmp: Some(e), .. } => e.inv.clone(),
            _ => self.link_inv_bandwidths(),
        }
    }

    /// Latency of each link group (seconds; a bundle's links share theirs), as
    /// [`MapMachine::link_latencies`] of its links.
    pub(crate) fn link_group_latencies(&self) -> Vec<f64> {
        let lat = self.link_latencies();
        match &self.net {
            Net::Graph { ecmp: Some(e), .. } => e.bundles.links.iter().map(|l| lat[l[0]]).collect(),
            _ => lat,
        }
    }

    /// The number of links of link group `g`.
    #[inline]
    pub(crate) fn link_group_size(&self, g: usize) -> usize {
        match &self.net {
            Net::Graph { ecmp: Some(e), .. } => e.bundles.links[g].len(),
            _ => 1,
        }
    }

    /// The links of link group `g`.
    #[cfg(test)]
    pub(crate) fn link_group_links(&self, g: usize) -> Vec<usize> {
        match &self.net {
            Net::Graph { ecmp: Some(e), .. } => e.bundles.links[g].clone(),
            _ => vec![g],
        }
    }

    /// The nodes one hop from each node, as the swaps of tasks and of node groups
    /// look for partners ([`Neighbours`]).
    ///
    /// # Complexity
    /// `O(nodes·dims + coordinates)` on a torus, nothing on other networks.
    pub(crate) fn neighbours(&self) -> Neighbours<'_> {
        let node_at = match &self.net {
            Net::Torus(t) => {
                let mut v = vec![usize::MAX; t.num_coords()];
                for k in 0..t.num_nodes() {
                    v[t.coord_index(t.coords(k))] = k;
                }
                v
            }
            _ => Vec::new(),
        };
        Neighbours { m: self, node_at }
    }

    /// Calls `f(group)` for each link group on the way from node `a` to node `b` under
    /// [`MapMachine::link_model`] (the links of [`MapMachine::for_route`] on the single
    /// path); each carries the whole message.
    #[inline]
    pub(crate) fn for_group_route(&self, a: usize, b: usize, f: impl FnMut(usize)) {
        match &self.net {
            Net::Graph { ecmp: Some(e), .. } => e.bundles.for_route(a, b, f),
            _ => self.for_route(a, b, f),
        }
    }

    /// On an allocated part of a torus (fewer nodes than coordinates), each node's
    /// nearest allocated nodes ([`part_near`]: at least two per dimension when there
    /// are), where the nodes one hop away are often not allocated; `None` on a whole
    /// torus and on other networks. Built on first use and kept (shared by the clones
    /// made after).
    pub(crate) fn part_near(&self) -> Option<&PartNear> {
        match &self.net {
            Net::Torus(t) if t.num_nodes() < t.num_coords() => Some(
                self.part_near
                    .get_or_init(|| std::sync::Arc::new(part_near(t))),
            ),
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
                let table = self
                    .route_table
                    .get_or_init(|| RouteTable::build(t).map(std::sync::Arc::new));
                match table {
                    Some(table) => table.route(a, b).iter().for_each(|&l| f(usize::from(l))),
                    None => {
                        let n = t.ndims();
                        t.for_each_route_link(a, b, |l| f(l.id(n)));
                    }
                }
            }
            Net::Graph { routes, .. } => {
                for &e in &routes[a * self.names.len() + b] {
                    f(e as usize);
                }
            }
            Net::Flat { .. } => f(a),
        }
    }
}

/// On an allocated part of a torus, each node lists at least this many allocated nodes
/// per torus dimension (those of the nearest hop counts, ties included) ...
const PART_NEAR_PER_DIM: usize = 2;
/// ... found among at most this many torus coordinates around it.
const PART_NEAR_VISIT: usize = 4096;

/// Each allocated node's nearest allocated nodes on a torus: the other nodes at its
/// coordinate, then a breadth-first search over the torus coordinates around it, by
/// hop count, until a whole hop count has brought [`PART_NEAR_PER_DIM`] nodes per
/// dimension or [`PART_NEAR_VISIT`] coordinates are seen.
///
/// # Complexity
/// `O(coordinates + nodes·(v·dims + l))` for `v ≤` [`PART_NEAR_VISIT`] coordinates
/// seen and `l` nodes listed per node (`v` about `2·dims / density` on an allocation
/// of that density).
fn part_near(t: &Torus) -> PartNear {
    let dims: Vec<usize> = t.dims().iter().map(|&d| d as usize).collect();
    let want = PART_NEAR_PER_DIM * dims.len();
    // the nodes at each coordinate, as linked lists (several nodes may share one)
    let mut first_at = vec![u32::MAX; t.num_coords()];
    let mut next_there = vec![u32::MAX; t.num_nodes()];
    for k in (0..t.num_nodes()).rev() {
        let c = t.coord_index(t.coords(k));
        next_there[k] = first_at[c];
        first_at[c] = k as u32;
    }
    let mut seen = vec![u32::MAX; t.num_coords()];
    let (mut off, mut nodes) = (vec![0usize], Vec::new());
    let (mut layer, mut next) = (Vec::new(), Vec::new());
    for a in 0..t.num_nodes() {
        let start = t.coord_index(t.coords(a));
        let mut found = 0;
        let mut b = first_at[start];
        while b != u32::MAX {
            if b as usize != a {
                nodes.push(b);
                found += 1;
            }
            b = next_there[b as usize];
        }
        seen[start] = a as u32;
        layer.clear();
        layer.push(start);
        let mut visited = 1;
        while !layer.is_empty() && found < want && visited < PART_NEAR_VISIT {
            next.clear();
            for &k in &layer {
                let mut stride = 1;
                for &d in &dims {
                    let x = k / stride % d;
                    let here = k - x * stride;
                    for y in [(x + 1) % d, (x + d - 1) % d] {
                        let c = here + y * stride;
                        if seen[c] != a as u32 {
                            seen[c] = a as u32;
                            next.push(c);
                        }
                    }
                    stride *= d;
                }
            }
            visited += next.len();
            for &c in &next {
                let mut b = first_at[c];
                while b != u32::MAX {
                    nodes.push(b);
                    found += 1;
                    b = next_there[b as usize];
                }
            }
            std::mem::swap(&mut layer, &mut next);
        }
        off.push(nodes.len());
    }
    PartNear { off, nodes }
}

/// Each allocated node's nearest allocated nodes on an allocated part of a torus
/// ([`MapMachine::part_near`]): node `a`'s are `nodes[off[a]..off[a + 1]]`.
#[derive(Debug)]
pub(crate) struct PartNear {
    off: Vec<usize>,
    nodes: Vec<u32>,
}

impl PartNear {
    /// Node `a`'s nearest allocated nodes, nearest first.
    pub(crate) fn of(&self, a: usize) -> &[u32] {
        &self.nodes[self.off[a]..self.off[a + 1]]
    }
}

/// The nodes one hop from each node ([`MapMachine::neighbours`]): on a torus the
/// allocated nodes at coordinates ±1 in one dimension (each once: a dimension of size 2
/// gives one, the node itself is left out), in the order x+, x−, y+, y−, …; on other
/// networks the nodes at [`MapMachine::hops`] 1, in their order.
pub(crate) struct Neighbours<'a> {
    m: &'a MapMachine,
    /// A torus' node at each coordinate index (the last one there), `usize::MAX` where
    /// none is allocated; empty on other networks.
    node_at: Vec<usize>,
}

impl Neighbours<'_> {
    /// Calls `f` for each node one hop from node `a` (struct docs).
    ///
    /// # Complexity
    /// `O(dims)` on a torus, `O(nodes)` on other networks.
    #[inline]
    pub(crate) fn each(&self, a: usize, mut f: impl FnMut(usize)) {
        let Net::Torus(t) = &self.m.net else {
            (0..self.m.nodes())
                .filter(|&b| self.m.hops(a, b) == 1)
                .for_each(f);
            return;
        };
        let c = t.coords(a);
        let base = t.coord_index(c);
        let mut stride = 1usize;
        for (&x, &d) in c.iter().zip(t.dims()) {
            let (x, d) = (x as usize, d as usize);
            let here = base - x * stride;
            // +1, then −1 unless it is the same coordinate
            let up = here + (x + 1) % d * stride;
            let down = here + (x + d - 1) % d * stride;
            for (i, k) in [up, down].into_iter().enumerate() {
                if i == 1 && down == up {
                    break;
                }
                let b = self.node_at[k];
                if b != usize::MAX && b != a {
                    f(b);
                }
            }
            stride *= d;
        }
    }
}

/// Refuses machines of more than [`super::MAX_TASKS`] slots (before anything of that
/// size is allocated).
pub(crate) fn check_slots(nodes: u128, rpn: usize) -> Result<()> {
    if rpn == 0 {
        return Err(MachineError::ZeroRanksPerNode.into());
    }
    let slots = nodes.saturating_mul(rpn as u128);
    if slots > super::MAX_TASKS as u128 {
        return Err(MachineError::TooManySlots {
            nodes,
            ranks_per_node: rpn,
            slots,
            max: super::MAX_TASKS,
        }
        .into());
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

/// The nodes of `t` called `names`, in that order, at their coordinates.
fn sub_torus(t: &Torus, names: &[String]) -> Result<Torus> {
    let nodes = names
        .iter()
        .map(|n| {
            let k = t
                .node_index(n)
                .ok_or_else(|| MachineError::NotATorusNode { node: n.clone() })?;
            Ok(copr_topology::TorusNode {
                name: n.clone(),
                coords: t.coords(k).to_vec(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Torus::new(t.params().clone(), nodes)?)
}

/// Slot counts in `SLURM_TASKS_PER_NODE` syntax: `16(x24),8(x16)`.
fn tasks_per_node(counts: &[usize]) -> String {
    let mut items = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let j = (i..counts.len())
            .find(|&j| counts[j] != counts[i])
            .unwrap_or(counts.len());
        items.push(match j - i {
            1 => counts[i].to_string(),
            n => format!("{}(x{n})", counts[i]),
        });
        i = j;
    }
    items.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::TorusParams;

    fn neighbours_of(m: &MapMachine, a: usize) -> Vec<usize> {
        let mut out = Vec::new();
        m.neighbours().each(a, |b| out.push(b));
        out
    }

    #[test]
    fn neighbours_one_hop_away() {
        // 3 x 2 x 1 torus, x fastest: node (x, y) = x + 3y; from (0, 0): x+ (1, 0),
        // x- (2, 0), y (0, 1) once (a ring of 2), nothing along the ring of 1
        let m =
            MapMachine::torus(Torus::full(TorusParams::new(vec![3, 2, 1])).unwrap(), 4).unwrap();
        assert_eq!(neighbours_of(&m, 0), vec![1, 2, 3]);
        assert_eq!(neighbours_of(&m, 4), vec![5, 3, 1]);
        // every node: exactly the nodes at one hop, each once
        let t = Torus::full(TorusParams::new(vec![4, 2, 3])).unwrap();
        let m = MapMachine::torus(t, 1).unwrap();
        for a in 0..m.nodes() {
            let mut got = neighbours_of(&m, a);
            got.sort_unstable();
            let want: Vec<usize> = (0..m.nodes()).filter(|&b| m.hops(a, b) == 1).collect();
            assert_eq!(got, want, "node {a}");
        }
        // an allocated part of a 4-ring: nodes 0, 1, 3 of the torus are machine nodes
        // 0, 1, 2; torus node 2 is not allocated
        let part = copr_testkit::layouts::torus_nodes(&[4], &[0, 1, 3]);
        let m = MapMachine::torus(part, 1).unwrap();
        assert_eq!(neighbours_of(&m, 0), vec![1, 2]);
        assert_eq!(neighbours_of(&m, 1), vec![0]);
        assert_eq!(neighbours_of(&m, 2), vec![0]);
        // no torus: the nodes at one hop (every other node when flat)
        let m = MapMachine::flat(3, 2).unwrap();
        assert_eq!(neighbours_of(&m, 1), vec![0, 2]);
    }

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
}
