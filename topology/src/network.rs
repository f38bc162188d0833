//! Arbitrary networks as petgraph graphs: hosts (where ranks live) and
//! switches joined by links with latency and bandwidth; shortest-path costs
//! between hosts; fat-tree and dragonfly generators.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};

use crate::error::{Result, TopologyError};
use crate::files::{self, check_bandwidth, check_nonneg, Doc, FieldPath, Format, Invalid};
use crate::link::{BandwidthModel, LinkCost, LinkSpec};
use crate::matrix::PairTable;

/// A network file: hosts, switches and links. TOML example:
///
/// ```toml
/// name = "two switches"
/// hosts = ["a", "b"]
/// switches = ["s1", "s2"]
/// [defaults]                # used by links that omit latency/bandwidth
/// latency = 1e-7
/// bandwidth = 1.25e10
/// [[links]]
/// a = "a"
/// b = "s1"
/// [[links]]
/// a = "s1"
/// b = "s2"
/// latency = 1e-6            # overrides the default
/// bandwidth = 2.5e9
/// [[links]]
/// a = "s2"
/// b = "b"
/// ```
///
/// Links are bidirectional (both directions with the same cost) unless
/// `directed = true`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkDescription {
    /// A name for summaries.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Hosts (compute nodes), in placement order.
    pub hosts: Vec<String>,
    /// Switches/routers (no ranks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub switches: Vec<String>,
    /// Defaults for links that omit latency or bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<LinkDefaults>,
    /// The links.
    pub links: Vec<LinkEntry>,
}

/// Default link parameters of a [`NetworkDescription`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkDefaults {
    /// Latency, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// Bandwidth, bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<f64>,
}

/// One link of a [`NetworkDescription`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEntry {
    /// One end (host or switch name).
    pub a: String,
    /// The other end.
    pub b: String,
    /// Latency in seconds (else `defaults.latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// Bandwidth in bytes per second (else `defaults.bandwidth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<f64>,
    /// Only `a → b` (default: both directions).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directed: bool,
}

/// Whether a vertex is a host or a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VertexKind {
    /// A compute node: ranks can live here.
    Host,
    /// A switch or router.
    Switch,
}

/// A vertex of a [`Network`] graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vertex {
    /// The name.
    pub name: String,
    /// Host or switch.
    pub kind: VertexKind,
}

/// A network graph: vertices are hosts and switches, each directed edge a
/// link with its [`LinkCost`]. Bidirectional links are two edges.
///
/// ```
/// use copr_topology::{BandwidthModel, LinkCost, Network};
/// let mut n = Network::new("line");
/// n.add_host("a").unwrap();
/// n.add_switch("s").unwrap();
/// n.add_host("b").unwrap();
/// n.add_link("a", "s", LinkCost::new(1.0, 0.5).unwrap()).unwrap();
/// n.add_link("s", "b", LinkCost::new(2.0, 0.25).unwrap()).unwrap();
/// let c = n.costs(BandwidthModel::Bottleneck).unwrap();
/// assert_eq!(c.link_cost(0, 1), LinkCost::new(3.0, 0.5).unwrap());
/// assert_eq!(c.hops(0, 1), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Network {
    name: String,
    graph: DiGraph<Vertex, LinkCost>,
    hosts: Vec<NodeIndex>,
    by_name: HashMap<String, NodeIndex>,
}

/// Cost of a path found by [`Network::shortest_paths`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathCost {
    /// Sum of link latencies, seconds.
    pub latency: f64,
    /// Combined inverse bandwidth ([`BandwidthModel`]), seconds per byte.
    pub inv_bandwidth: f64,
    /// Number of links.
    pub hops: u32,
}

#[derive(Clone, Copy, PartialEq)]
struct Key(f64, f64, usize);

impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    // Reversed: BinaryHeap is a max-heap, we pop the smallest.
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0)
            .then(o.1.total_cmp(&self.1))
            .then(o.2.cmp(&self.2))
    }
}

/// Lexicographic order of path costs: latency, then inverse bandwidth.
fn better(a: (f64, f64, u32), b: (f64, f64, u32)) -> bool {
    a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)) == Ordering::Less
}

impl Network {
    /// An empty network.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            graph: DiGraph::new(),
            hosts: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    fn add_vertex(&mut self, name: &str, kind: VertexKind) -> Result<NodeIndex> {
        if self.by_name.contains_key(name) {
            return Err(TopologyError::Duplicate {
                origin: crate::Origin::none(),
                field: match kind {
                    VertexKind::Host => "hosts".into(),
                    VertexKind::Switch => "switches".into(),
                },
                id: name.to_string(),
                first: "earlier".into(),
            });
        }
        let v = self.graph.add_node(Vertex {
            name: name.to_string(),
            kind,
        });
        self.by_name.insert(name.to_string(), v);
        if kind == VertexKind::Host {
            self.hosts.push(v);
        }
        Ok(v)
    }

    /// Adds a host (hosts are numbered in the order they are added).
    ///
    /// # Errors
    /// [`TopologyError::Duplicate`] if the name is taken.
    pub fn add_host(&mut self, name: &str) -> Result<NodeIndex> {
        self.add_vertex(name, VertexKind::Host)
    }

    /// Adds a switch.
    ///
    /// # Errors
    /// [`TopologyError::Duplicate`] if the name is taken.
    pub fn add_switch(&mut self, name: &str) -> Result<NodeIndex> {
        self.add_vertex(name, VertexKind::Switch)
    }

    fn vertex(&self, name: &str, field: &str) -> Result<NodeIndex> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| crate::link::inconsistent(field, format!("unknown vertex `{name}`")))
    }

    /// Adds a bidirectional link (two edges with the same cost).
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] for an unknown vertex or `a == b`;
    /// [`TopologyError::InvalidValue`] for a bad cost.
    pub fn add_link(&mut self, a: &str, b: &str, cost: LinkCost) -> Result<()> {
        self.add_directed_link(a, b, cost)?;
        self.add_directed_link(b, a, cost)
    }

    /// Adds the directed link `from → to`.
    ///
    /// # Errors
    /// As [`Network::add_link`].
    pub fn add_directed_link(&mut self, from: &str, to: &str, cost: LinkCost) -> Result<()> {
        cost.validate(&FieldPath::root())
            .map_err(crate::link::invalid)?;
        let (x, y) = (self.vertex(from, "a")?, self.vertex(to, "b")?);
        if x == y {
            return Err(crate::link::inconsistent(
                "b",
                format!("link from `{from}` to itself"),
            ));
        }
        self.graph.add_edge(x, y, cost);
        Ok(())
    }

    /// Builds the network a [`NetworkDescription`] describes.
    ///
    /// # Errors
    /// [`TopologyError::Duplicate`] for a repeated name,
    /// [`TopologyError::Inconsistent`] for unknown link ends, self-links, no
    /// hosts, or a link without latency/bandwidth and no default;
    /// [`TopologyError::InvalidValue`] for negative/NaN latencies and
    /// non-positive bandwidths. Fields are named like `links[3].bandwidth`.
    pub fn from_description(desc: &NetworkDescription) -> Result<Self> {
        Self::from_doc(desc, Doc::none())
    }

    /// Reads a network file (TOML, or JSON by extension).
    ///
    /// # Errors
    /// [`TopologyError::Io`], [`TopologyError::Parse`], and the errors of
    /// [`Network::from_description`] with file and line.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = files::read_text(path)?;
        let format = Format::from_path(path);
        let desc: NetworkDescription = files::parse_str(&text, format, Some(path))?;
        Self::from_doc(&desc, Doc::new(Some(path), &text, format))
    }

    fn from_doc(desc: &NetworkDescription, doc: Doc<'_>) -> Result<Self> {
        let root = FieldPath::root();
        let mut net = Self::new(if desc.name.is_empty() {
            doc.file
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "network".into())
        } else {
            desc.name.clone()
        });
        if desc.hosts.is_empty() {
            return Err(TopologyError::Inconsistent {
                origin: doc.origin(&root.key("hosts")),
                field: "hosts".into(),
                message: "a network needs at least one host".into(),
            });
        }
        let defaults = desc.defaults.unwrap_or_default();
        if let Some(l) = defaults.latency {
            check_nonneg(l, &root.key("defaults").key("latency")).map_err(|e| doc.invalid(e))?;
        }
        if let Some(b) = defaults.bandwidth {
            check_bandwidth(b, &root.key("defaults").key("bandwidth"))
                .map_err(|e| doc.invalid(e))?;
        }
        let mut first: HashMap<&str, FieldPath> = HashMap::new();
        for (list, field, kind) in [
            (&desc.hosts, "hosts", VertexKind::Host),
            (&desc.switches, "switches", VertexKind::Switch),
        ] {
            for (i, name) in list.iter().enumerate() {
                let at = root.key(field).index(i);
                if let Some(prev) = first.get(name.as_str()) {
                    return Err(TopologyError::Duplicate {
                        origin: doc.origin(&at),
                        field: at.to_string(),
                        id: name.clone(),
                        first: format!("as {prev}"),
                    });
                }
                first.insert(name, at);
                net.add_vertex(name, kind)?;
            }
        }
        for (i, link) in desc.links.iter().enumerate() {
            let at = root.key("links").index(i);
            let lat = link.latency.or(defaults.latency);
            let bw = link.bandwidth.or(defaults.bandwidth);
            let (Some(lat), Some(bw)) = (lat, bw) else {
                let missing = if lat.is_none() {
                    "latency"
                } else {
                    "bandwidth"
                };
                return Err(TopologyError::Inconsistent {
                    origin: doc.origin(&at),
                    field: at.key(missing).to_string(),
                    message: format!(
                        "link `{}`–`{}` has no {missing} and [defaults] gives none",
                        link.a, link.b
                    ),
                });
            };
            let cost = LinkSpec {
                latency: lat,
                bandwidth: bw,
            }
            .to_cost(&at)
            .map_err(|e| doc.invalid(e))?;
            let mut ends = [NodeIndex::end(); 2];
            for (k, (end, name)) in [("a", &link.a), ("b", &link.b)].into_iter().enumerate() {
                ends[k] =
                    *net.by_name
                        .get(name.as_str())
                        .ok_or_else(|| TopologyError::Inconsistent {
                            origin: doc.origin(&at.key(end)),
                            field: at.key(end).to_string(),
                            message: format!("unknown vertex `{name}` (not in hosts or switches)"),
                        })?;
            }
            if ends[0] == ends[1] {
                return Err(TopologyError::Inconsistent {
                    origin: doc.origin(&at),
                    field: at.key("b").to_string(),
                    message: format!("link from `{}` to itself", link.a),
                });
            }
            net.graph.add_edge(ends[0], ends[1], cost);
            if !link.directed {
                net.graph.add_edge(ends[1], ends[0], cost);
            }
        }
        Ok(net)
    }

    /// The description of this network (every link written with explicit
    /// latency and bandwidth; a pair of opposite edges with equal costs
    /// becomes one bidirectional link).
    pub fn to_description(&self) -> NetworkDescription {
        let mut links = Vec::new();
        let mut used = vec![false; self.graph.edge_count()];
        for e in self.graph.edge_references() {
            if used[e.id().index()] {
                continue;
            }
            used[e.id().index()] = true;
            let back = self
                .graph
                .edges_connecting(e.target(), e.source())
                .find(|r| !used[r.id().index()] && r.weight() == e.weight());
            if let Some(r) = back {
                used[r.id().index()] = true;
            }
            let c = e.weight();
            links.push(LinkEntry {
                a: self.graph[e.source()].name.clone(),
                b: self.graph[e.target()].name.clone(),
                latency: Some(c.latency),
                bandwidth: Some(1.0 / c.inv_bandwidth),
                directed: back.is_none(),
            });
        }
        NetworkDescription {
            name: self.name.clone(),
            hosts: self
                .hosts
                .iter()
                .map(|&h| self.graph[h].name.clone())
                .collect(),
            switches: self
                .graph
                .node_indices()
                .filter(|&v| self.graph[v].kind == VertexKind::Switch)
                .map(|v| self.graph[v].name.clone())
                .collect(),
            defaults: None,
            links,
        }
    }

    /// The network's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The underlying petgraph graph.
    pub fn graph(&self) -> &DiGraph<Vertex, LinkCost> {
        &self.graph
    }

    /// The number of hosts.
    pub fn num_hosts(&self) -> usize {
        self.hosts.len()
    }

    /// The graph vertex of host `h`.
    ///
    /// # Panics
    /// If `h >= num_hosts()`.
    pub fn host_vertex(&self, h: usize) -> NodeIndex {
        self.hosts[h]
    }

    /// The name of host `h`.
    ///
    /// # Panics
    /// If `h >= num_hosts()`.
    pub fn host_name(&self, h: usize) -> &str {
        &self.graph[self.hosts[h]].name
    }

    /// Cheapest paths from vertex `from` to every vertex (`None`:
    /// unreachable), with predecessor edges.
    ///
    /// Paths are ordered lexicographically by (summed latency, combined
    /// inverse bandwidth): the minimum-latency path, ties broken by
    /// bandwidth. Appending a link never makes a path cheaper and preserves
    /// this order (for both [`BandwidthModel`]s), so Dijkstra's algorithm
    /// finds the optimum. `hops` is the link count of the path found (among
    /// equally cheap paths, the first one settled).
    ///
    /// # Complexity
    /// `O((V + E) log V)`.
    pub fn shortest_paths(
        &self,
        from: NodeIndex,
        model: BandwidthModel,
    ) -> (Vec<Option<PathCost>>, Vec<Option<EdgeIndex>>) {
        let n = self.graph.node_count();
        let mut best: Vec<Option<(f64, f64, u32)>> = vec![None; n];
        let mut pred: Vec<Option<EdgeIndex>> = vec![None; n];
        let mut done = vec![false; n];
        let mut heap = BinaryHeap::new();
        best[from.index()] = Some((0.0, 0.0, 0));
        heap.push(Key(0.0, 0.0, from.index()));
        while let Some(Key(l, b, v)) = heap.pop() {
            if done[v] {
                continue;
            }
            done[v] = true;
            let h = best[v].map_or(0, |x| x.2);
            for e in self.graph.edges(NodeIndex::new(v)) {
                let w = e.target().index();
                if done[w] {
                    continue;
                }
                let c = e.weight();
                let cand = (l + c.latency, model.combine(b, c.inv_bandwidth), h + 1);
                if best[w].is_none_or(|cur| better(cand, cur)) {
                    best[w] = Some(cand);
                    pred[w] = Some(e.id());
                    heap.push(Key(cand.0, cand.1, w));
                }
            }
        }
        let costs = best
            .into_iter()
            .map(|o| {
                o.map(|(latency, inv_bandwidth, hops)| PathCost {
                    latency,
                    inv_bandwidth,
                    hops,
                })
            })
            .collect();
        (costs, pred)
    }

    /// The edges of the cheapest path from host `a` to host `b` (see
    /// [`Network::shortest_paths`]), `None` if unreachable.
    ///
    /// # Panics
    /// If `a` or `b` is `>= num_hosts()`.
    pub fn path(&self, a: usize, b: usize, model: BandwidthModel) -> Option<Vec<EdgeIndex>> {
        let (costs, pred) = self.shortest_paths(self.hosts[a], model);
        costs[self.hosts[b].index()]?;
        let mut out = Vec::new();
        let mut v = self.hosts[b];
        while let Some(e) = pred[v.index()] {
            out.push(e);
            v = self.graph.edge_endpoints(e).map(|(s, _)| s).unwrap_or(v);
        }
        out.reverse();
        Some(out)
    }

    /// All host-to-host path costs (see [`NetworkCosts`]).
    ///
    /// # Errors
    /// [`TopologyError::Unreachable`] naming the first host pair without a
    /// path.
    pub fn costs(&self, model: BandwidthModel) -> Result<NetworkCosts> {
        NetworkCosts::compute(self, model)
    }

    /// A three-level k-ary fat tree (Al-Fares et al.): `k` pods of `k/2` edge
    /// and `k/2` aggregation switches, `(k/2)²` core switches and `k³/4`
    /// hosts `h0, h1, …` (`k/2` per edge switch). Switches are named
    /// `e<pod>.<i>`, `a<pod>.<i>`, `c<i>.<j>`.
    ///
    /// # Errors
    /// [`TopologyError::InvalidValue`] if `k` is odd or < 2, or a link spec
    /// is invalid.
    pub fn fat_tree(spec: &FatTreeSpec) -> Result<Self> {
        let k = spec.k;
        if k < 2 || k % 2 != 0 {
            return Err(crate::link::invalid(Invalid::new(
                FieldPath::root().key("k"),
                k,
                "a k-ary fat tree needs an even k >= 2",
            )));
        }
        let host = spec_cost(&spec.host_link, "host_link")?;
        let edge = spec_cost(&spec.edge_link, "edge_link")?;
        let core = spec_cost(&spec.core_link, "core_link")?;
        let h = k / 2;
        let mut n = Self::new(format!("fat tree k={k}"));
        for p in 0..k {
            for i in 0..h {
                for j in 0..h {
                    n.add_host(&format!("h{}", (p * h + i) * h + j))?;
                }
            }
        }
        for p in 0..k {
            for i in 0..h {
                n.add_switch(&format!("e{p}.{i}"))?;
                n.add_switch(&format!("a{p}.{i}"))?;
            }
        }
        for m in 0..h {
            for j in 0..h {
                n.add_switch(&format!("c{m}.{j}"))?;
            }
        }
        for p in 0..k {
            for i in 0..h {
                for j in 0..h {
                    n.add_link(
                        &format!("h{}", (p * h + i) * h + j),
                        &format!("e{p}.{i}"),
                        host,
                    )?;
                }
                for m in 0..h {
                    n.add_link(&format!("e{p}.{i}"), &format!("a{p}.{m}"), edge)?;
                }
            }
            for m in 0..h {
                for j in 0..h {
                    n.add_link(&format!("a{p}.{m}"), &format!("c{m}.{j}"), core)?;
                }
            }
        }
        Ok(n)
    }

    /// A dragonfly: `groups` groups of `routers` routers, all-to-all local
    /// links inside a group, one global link between every pair of groups,
    /// `hosts_per_router` hosts per router. The global link from group `g`
    /// to group `g'` leaves router `o mod routers`, where `o` is the index of
    /// `g'` among the groups other than `g`. Hosts are `h0, h1, …` (router by
    /// router), routers `r<group>.<i>`.
    ///
    /// # Errors
    /// [`TopologyError::InvalidValue`] for zero counts or invalid link specs.
    pub fn dragonfly(spec: &DragonflySpec) -> Result<Self> {
        let root = FieldPath::root();
        for (v, f) in [
            (spec.groups, "groups"),
            (spec.routers, "routers"),
            (spec.hosts_per_router, "hosts_per_router"),
        ] {
            if v == 0 {
                return Err(crate::link::invalid(Invalid::new(
                    root.key(f),
                    v,
                    "must be >= 1",
                )));
            }
        }
        let host = spec_cost(&spec.host_link, "host_link")?;
        let local = spec_cost(&spec.local_link, "local_link")?;
        let global = spec_cost(&spec.global_link, "global_link")?;
        let (g, a, p) = (spec.groups, spec.routers, spec.hosts_per_router);
        let mut n = Self::new(format!("dragonfly g={g} a={a} p={p}"));
        for x in 0..g * a * p {
            n.add_host(&format!("h{x}"))?;
        }
        for grp in 0..g {
            for r in 0..a {
                n.add_switch(&format!("r{grp}.{r}"))?;
            }
        }
        for grp in 0..g {
            for r in 0..a {
                for x in 0..p {
                    n.add_link(
                        &format!("h{}", (grp * a + r) * p + x),
                        &format!("r{grp}.{r}"),
                        host,
                    )?;
                }
                for r2 in r + 1..a {
                    n.add_link(&format!("r{grp}.{r}"), &format!("r{grp}.{r2}"), local)?;
                }
            }
        }
        let other = |from: usize, to: usize| if to < from { to } else { to - 1 };
        for g1 in 0..g {
            for g2 in g1 + 1..g {
                let r1 = other(g1, g2) % a;
                let r2 = other(g2, g1) % a;
                n.add_link(&format!("r{g1}.{r1}"), &format!("r{g2}.{r2}"), global)?;
            }
        }
        Ok(n)
    }
}

fn spec_cost(spec: &LinkSpec, field: &str) -> Result<LinkCost> {
    spec.to_cost(&FieldPath::root().key(field))
        .map_err(crate::link::invalid)
}

/// Parameters of [`Network::fat_tree`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FatTreeSpec {
    /// Switch radix (even).
    pub k: usize,
    /// Host–edge links.
    pub host_link: LinkSpec,
    /// Edge–aggregation links.
    pub edge_link: LinkSpec,
    /// Aggregation–core links.
    pub core_link: LinkSpec,
}

/// Parameters of [`Network::dragonfly`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DragonflySpec {
    /// Number of groups.
    pub groups: usize,
    /// Routers per group.
    pub routers: usize,
    /// Hosts per router.
    pub hosts_per_router: usize,
    /// Host–router links.
    pub host_link: LinkSpec,
    /// Router–router links inside a group.
    pub local_link: LinkSpec,
    /// Links between groups.
    pub global_link: LinkSpec,
}

/// All host-to-host path costs of a [`Network`], precomputed (one Dijkstra
/// per host): a [`PairTable`] of host pairs plus hop counts.
///
/// # Complexity
/// Building: `O(H·(V + E) log V)` for `H` hosts; memory `20·H²` bytes.
/// Lookups `O(1)`.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkCosts {
    table: PairTable,
    hops: Vec<u32>,
    model: BandwidthModel,
    description: String,
}

impl NetworkCosts {
    /// Computes all host-pair costs of `net` under `model`.
    ///
    /// # Errors
    /// [`TopologyError::Unreachable`] for the first host pair without a path.
    pub fn compute(net: &Network, model: BandwidthModel) -> Result<Self> {
        let h = net.num_hosts();
        let mut latency = vec![0.0; h * h];
        let mut inv_bandwidth = vec![0.0; h * h];
        let mut hops = vec![0u32; h * h];
        for a in 0..h {
            let (costs, _) = net.shortest_paths(net.hosts[a], model);
            for b in 0..h {
                let Some(c) = costs[net.hosts[b].index()] else {
                    return Err(TopologyError::Unreachable {
                        origin: crate::Origin::none(),
                        from: net.host_name(a).to_string(),
                        to: net.host_name(b).to_string(),
                    });
                };
                latency[a * h + b] = c.latency;
                inv_bandwidth[a * h + b] = c.inv_bandwidth;
                hops[a * h + b] = c.hops;
            }
        }
        let names: Vec<String> = (0..h).map(|k| net.host_name(k).to_string()).collect();
        Ok(Self {
            table: PairTable::new(names, latency, inv_bandwidth)?,
            hops,
            model,
            description: format!(
                "network `{}`: {} hosts, {} switches, {} directed links, {} bandwidth model",
                net.name(),
                h,
                net.graph.node_count() - h,
                net.graph.edge_count(),
                model
            ),
        })
    }

    /// The host-pair costs (rows named by host).
    pub fn table(&self) -> &PairTable {
        &self.table
    }

    /// The number of hosts.
    pub fn num_hosts(&self) -> usize {
        self.table.len()
    }

    /// The name of host `k`.
    ///
    /// # Panics
    /// If `k >= num_hosts()`.
    pub fn host_name(&self, k: usize) -> &str {
        self.table.name(k)
    }

    /// The index of the host called `name`.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.table.index_of(name)
    }

    /// The cost from host `a` to host `b` (zero for `a == b`).
    ///
    /// # Panics
    /// If `a` or `b` is `>= num_hosts()`.
    #[inline]
    pub fn link_cost(&self, a: usize, b: usize) -> LinkCost {
        self.table.link_cost(a, b)
    }

    /// Number of links on the path from host `a` to host `b`.
    ///
    /// # Panics
    /// If `a` or `b` is `>= num_hosts()`.
    #[inline]
    pub fn hops(&self, a: usize, b: usize) -> u32 {
        self.hops[a * self.table.len() + b]
    }

    /// The bandwidth model the costs were computed with.
    pub fn model(&self) -> BandwidthModel {
        self.model
    }

    /// A one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }
}
