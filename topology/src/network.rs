//! Arbitrary networks as petgraph graphs: hosts (where ranks live) and
//! switches joined by links with latency and bandwidth; shortest-path costs
//! between hosts; fat-tree and dragonfly generators.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

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
/// `directed = true`. Each direction between two vertices is given once: a link
/// repeated (in either order, or a bidirectional link over a directed one) is refused,
/// naming both entries; two parallel cables are one link of their summed bandwidth.
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
    /// The links (none for a network of one host).
    #[serde(default)]
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
    /// Hosts of the file left out by [`Network::with_hosts`] (switches since).
    unselected: usize,
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

/// Dijkstra's algorithm over `n` vertices from `from`, paths ordered by [`better`]:
/// `links(v)` lists the links out of `v` as `(target, cost, id)`, in the order they
/// are relaxed (which decides between equally cheap paths). The cost of the cheapest
/// path to every vertex and the id of its last link (`None`: unreachable, or `from`).
fn cheapest<E: Copy, I: Iterator<Item = (usize, LinkCost, E)>>(
    n: usize,
    from: usize,
    model: BandwidthModel,
    links: impl Fn(usize) -> I,
) -> (Vec<Option<PathCost>>, Vec<Option<E>>) {
    let mut best: Vec<Option<(f64, f64, u32)>> = vec![None; n];
    let mut pred: Vec<Option<E>> = vec![None; n];
    let mut done = vec![false; n];
    let mut heap = BinaryHeap::new();
    best[from] = Some((0.0, 0.0, 0));
    heap.push(Key(0.0, 0.0, from));
    while let Some(Key(l, b, v)) = heap.pop() {
        if done[v] {
            continue;
        }
        done[v] = true;
        let h = best[v].map_or(0, |x| x.2);
        for (w, c, id) in links(v) {
            if done[w] {
                continue;
            }
            let cand = (l + c.latency, model.combine(b, c.inv_bandwidth), h + 1);
            if best[w].is_none_or(|cur| better(cand, cur)) {
                best[w] = Some(cand);
                pred[w] = Some(id);
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

impl Network {
    /// An empty network.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            graph: DiGraph::new(),
            hosts: Vec::new(),
            by_name: HashMap::new(),
            unselected: 0,
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
    /// hosts, a link without latency/bandwidth and no default, or a direction between
    /// two vertices given by two links;
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
        // the entry that gave each directed link, to refuse a repeated one
        let mut given: HashMap<(NodeIndex, NodeIndex), usize> = HashMap::new();
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
            let dirs = if link.directed { 1 } else { 2 };
            for (x, y) in [(ends[0], ends[1]), (ends[1], ends[0])]
                .into_iter()
                .take(dirs)
            {
                if let Some(prev) = given.insert((x, y), i) {
                    return Err(TopologyError::Inconsistent {
                        origin: doc.origin(&at),
                        field: at.to_string(),
                        message: format!(
                            "the link `{}` → `{}` is already given by links[{prev}]: give each link once (two parallel cables are one link of their summed bandwidth)",
                            net.graph[x].name, net.graph[y].name
                        ),
                    });
                }
                net.graph.add_edge(x, y, cost);
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

    /// The index of the host called `name`; `None` for a switch or an unknown name.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        let v = *self.by_name.get(name)?;
        self.hosts.iter().position(|&h| h == v)
    }

    /// The same network with only the hosts `names`, in that order: the other hosts
    /// stay in the graph as switches (routes may still pass through them), so only
    /// the hosts kept need to reach each other ([`Network::costs`]).
    ///
    /// ```
    /// use copr_topology::{BandwidthModel, LinkCost, Network};
    /// let mut n = Network::new("two and a stray");
    /// for h in ["a", "b", "c"] {
    ///     n.add_host(h).unwrap();
    /// }
    /// n.add_switch("s").unwrap();
    /// n.add_link("a", "s", LinkCost::new(1.0, 0.5).unwrap()).unwrap();
    /// n.add_link("b", "s", LinkCost::new(1.0, 0.5).unwrap()).unwrap();
    /// assert!(n.costs(BandwidthModel::Bottleneck).is_err()); // c is cut off
    /// let ab = n.with_hosts(&["b".to_string(), "a".to_string()]).unwrap();
    /// assert_eq!((ab.num_hosts(), ab.host_name(0)), (2, "b"));
    /// assert_eq!(ab.costs(BandwidthModel::Bottleneck).unwrap().hops(0, 1), 2);
    /// ```
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] (field `hosts`) for a name that is not a host,
    /// [`TopologyError::Duplicate`] for a host named twice.
    pub fn with_hosts(&self, names: &[String]) -> Result<Self> {
        let host_of: HashMap<NodeIndex, usize> = self
            .hosts
            .iter()
            .enumerate()
            .map(|(k, &v)| (v, k))
            .collect();
        let mut kept = Vec::with_capacity(names.len());
        let mut seen = std::collections::HashSet::new();
        for name in names {
            let found = self.by_name.get(name).and_then(|v| host_of.get(v));
            let Some(&k) = found else {
                return Err(crate::link::inconsistent(
                    "hosts",
                    format!("`{name}` is not a host of the network `{}`", self.name),
                ));
            };
            if !seen.insert(k) {
                return Err(TopologyError::Duplicate {
                    origin: crate::Origin::none(),
                    field: "hosts".into(),
                    id: name.clone(),
                    first: "earlier".into(),
                });
            }
            kept.push(self.hosts[k]);
        }
        let mut net = self.clone();
        for (k, &v) in self.hosts.iter().enumerate() {
            if !seen.contains(&k) {
                net.graph[v].kind = VertexKind::Switch;
                net.unselected += 1;
            }
        }
        net.hosts = kept;
        Ok(net)
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
        cheapest(self.graph.node_count(), from.index(), model, |v| {
            self.graph
                .edges(NodeIndex::new(v))
                .map(|e| (e.target().index(), *e.weight(), e.id()))
        })
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

/// Host-to-host path costs of a [`Network`] (see [`Network::shortest_paths`]),
/// computed on demand: one Dijkstra per *host class*, run the first time a
/// class is asked about and cached.
///
/// A host is a *leaf* when its only outgoing link and its only incoming link
/// join it to the same vertex `s` (a fat tree's or dragonfly's host hanging
/// off its edge switch or router). Leaves with the same `s` and the same two
/// link costs form one class; every other host is a class of its own. Two
/// hosts of one class see every other vertex identically (a search from
/// either first reaches `s` at the same cost and then proceeds alike), so one
/// search serves the whole class, and a leaf target is reached at the cost of
/// `s` plus its last link. The costs and hop counts are exactly those of a
/// search from each host.
///
/// # Complexity
/// Building: `O(V + E)` (classes and a reachability check); memory
/// `O(V + E)` plus `24·C²` bytes once all `C` class rows have been asked for
/// (a `k = 32` fat tree: 8192 hosts in 512 classes, 6 MiB instead of the
/// 1.3 GiB of a host × host table). Lookups `O(1)`; the first lookup from a
/// class runs one `O((V + E) log V)` search.
#[derive(Clone, Debug)]
pub struct NetworkCosts {
    net: Box<Network>,
    model: BandwidthModel,
    /// Host index of each vertex (`u32::MAX` for switches).
    host_of_vertex: Vec<u32>,
    /// Class of each host.
    host_class: Vec<u32>,
    classes: Vec<HostClass>,
    /// Out-links of each vertex (`adj[start[v]..start[v + 1]]`), leaving out
    /// links into leaf hosts: searches never need to pass through a leaf.
    start: Vec<u32>,
    adj: Vec<(u32, LinkCost)>,
    /// Per class, the cost to every class's hosts (class × class).
    rows: Vec<OnceLock<Box<[Cell]>>>,
    /// The host × host table, built only if [`NetworkCosts::table`] is called.
    table: Box<OnceLock<PairTable>>,
    description: String,
}

/// A host class: the host searches start from, and how its hosts are reached.
#[derive(Clone, Copy, Debug, PartialEq)]
struct HostClass {
    /// Vertex of the class's first host.
    first: NodeIndex,
    reach: Reach,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reach {
    /// A leaf: through vertex `via`, then `last`.
    Leaf { via: NodeIndex, last: LinkCost },
    /// Any other host: the vertex itself.
    Direct,
}

/// The cost from one host class to the hosts of another.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Cell {
    latency: f64,
    inv_bandwidth: f64,
    hops: u32,
}

impl PartialEq for NetworkCosts {
    /// Equal networks (vertices and links in order) under the same model.
    fn eq(&self, o: &Self) -> bool {
        let g = &self.net.graph;
        let h = &o.net.graph;
        self.model == o.model
            && self.net.name == o.net.name
            && self.net.hosts == o.net.hosts
            && g.node_count() == h.node_count()
            && g.edge_count() == h.edge_count()
            && g.node_weights().eq(h.node_weights())
            && g.edge_references().zip(h.edge_references()).all(|(x, y)| {
                (x.source(), x.target(), x.weight()) == (y.source(), y.target(), y.weight())
            })
    }
}

impl NetworkCosts {
    /// Prepares the host-pair costs of `net` under `model` (the paths
    /// themselves are searched on demand).
    ///
    /// # Errors
    /// [`TopologyError::Unreachable`] for the first host pair `(a, b)`, in
    /// order of `a` then `b`, without a path.
    pub fn compute(net: &Network, model: BandwidthModel) -> Result<Self> {
        let g = &net.graph;
        let h = net.num_hosts();
        let mut host_of_vertex = vec![u32::MAX; g.node_count()];
        for (k, v) in net.hosts.iter().enumerate() {
            host_of_vertex[v.index()] = k as u32;
        }
        check_reachable(net)?;
        // Leaves grouped by (via, out cost, in cost); everything else alone.
        let mut key_class: HashMap<(usize, [u64; 4]), u32> = HashMap::new();
        let mut classes = Vec::new();
        let mut host_class = Vec::with_capacity(h);
        for &v in &net.hosts {
            let mut out = g.edges_directed(v, petgraph::Direction::Outgoing);
            let mut inc = g.edges_directed(v, petgraph::Direction::Incoming);
            let leaf = match (out.next(), out.next(), inc.next(), inc.next()) {
                (Some(o), None, Some(i), None) if o.target() == i.source() => {
                    Some((o.target(), *o.weight(), *i.weight()))
                }
                _ => None,
            };
            let class = match leaf {
                Some((via, o, i)) => {
                    let bits = [
                        o.latency.to_bits(),
                        o.inv_bandwidth.to_bits(),
                        i.latency.to_bits(),
                        i.inv_bandwidth.to_bits(),
                    ];
                    *key_class.entry((via.index(), bits)).or_insert_with(|| {
                        classes.push(HostClass {
                            first: v,
                            reach: Reach::Leaf { via, last: i },
                        });
                        (classes.len() - 1) as u32
                    })
                }
                None => {
                    classes.push(HostClass {
                        first: v,
                        reach: Reach::Direct,
                    });
                    (classes.len() - 1) as u32
                }
            };
            host_class.push(class);
        }
        let mut leaf = vec![false; g.node_count()];
        for (k, &v) in net.hosts.iter().enumerate() {
            leaf[v.index()] = matches!(classes[host_class[k] as usize].reach, Reach::Leaf { .. });
        }
        let mut start = Vec::with_capacity(g.node_count() + 1);
        let mut adj = Vec::new();
        for v in g.node_indices() {
            start.push(adj.len() as u32);
            adj.extend(
                g.edges(v)
                    .filter(|e| !leaf[e.target().index()])
                    .map(|e| (e.target().index() as u32, *e.weight())),
            );
        }
        start.push(adj.len() as u32);
        let rows = (0..classes.len()).map(|_| OnceLock::new()).collect();
        // a selection's other hosts route as switches; it says so rather than count
        // them among the switches
        let hosts = match net.unselected {
            0 => crate::placement::count(h, "host"),
            u => format!("{h} of {} hosts (the other {u} only route)", h + u),
        };
        let description = format!(
            "network `{}`: {hosts}, {}, {}, {} bandwidth model",
            net.name(),
            crate::placement::count(g.node_count() - h - net.unselected, "switch"),
            crate::placement::count(g.edge_count(), "directed link"),
            model
        );
        Ok(Self {
            net: Box::new(net.clone()),
            model,
            host_of_vertex,
            host_class,
            classes,
            start,
            adj,
            rows,
            table: Box::default(),
            description,
        })
    }

    /// One search from class `c`'s first host, read at every class's hosts.
    fn row(&self, c: usize) -> &[Cell] {
        self.rows[c].get_or_init(|| {
            let best = self.search(self.classes[c].first);
            let at = |v: NodeIndex| best[v.index()].expect("hosts are mutually reachable");
            self.classes
                .iter()
                .map(|d| match d.reach {
                    Reach::Direct => {
                        let p = at(d.first);
                        Cell {
                            latency: p.latency,
                            inv_bandwidth: p.inv_bandwidth,
                            hops: p.hops,
                        }
                    }
                    Reach::Leaf { via, last } => {
                        let p = at(via);
                        Cell {
                            latency: p.latency + last.latency,
                            inv_bandwidth: self.model.combine(p.inv_bandwidth, last.inv_bandwidth),
                            hops: p.hops + 1,
                        }
                    }
                })
                .collect()
        })
    }

    /// [`Network::shortest_paths`] from `from` over the links of `adj`
    /// (leaf hosts other than `from` are never reached; every other vertex
    /// gets the same cost and hop count as there: a leaf, once settled,
    /// relaxes only its one neighbour, settled before it, so leaving leaves
    /// out changes neither the order nor the outcome of the other steps).
    fn search(&self, from: NodeIndex) -> Vec<Option<PathCost>> {
        // the source's own links, even into a leaf (a two-host network)
        let own: Vec<(u32, LinkCost)> = self
            .net
            .graph
            .edges(from)
            .map(|e| (e.target().index() as u32, *e.weight()))
            .collect();
        let links = |v: usize| {
            let out: &[(u32, LinkCost)] = if v == from.index() {
                &own
            } else {
                &self.adj[self.start[v] as usize..self.start[v + 1] as usize]
            };
            out.iter().map(|&(w, c)| (w as usize, c, ()))
        };
        cheapest(self.start.len() - 1, from.index(), self.model, links).0
    }

    #[inline]
    fn cell(&self, a: usize, b: usize) -> Cell {
        let (ca, cb) = (self.host_class[a] as usize, self.host_class[b] as usize);
        if a == b {
            return Cell::default();
        }
        self.row(ca)[cb]
    }

    /// The network these costs are of (for routing: [`Network::shortest_paths`]
    /// gives the same costs and paths).
    pub fn network(&self) -> &Network {
        &self.net
    }

    /// The number of host classes (hosts priced alike; see the type's docs).
    pub fn num_classes(&self) -> usize {
        self.classes.len()
    }

    /// The class of host `k`.
    ///
    /// # Panics
    /// If `k >= num_hosts()`.
    pub fn host_class(&self, k: usize) -> usize {
        self.host_class[k] as usize
    }

    /// Runs the searches of the classes of `hosts` not yet run, on up to
    /// `threads` threads (later lookups from these hosts then cost `O(1)`).
    pub fn prepare(&self, hosts: impl IntoIterator<Item = usize>, threads: usize) {
        let mut want = vec![false; self.classes.len()];
        for k in hosts {
            want[self.host_class[k] as usize] = true;
        }
        let todo: Vec<usize> = (0..want.len())
            .filter(|&c| want[c] && self.rows[c].get().is_none())
            .collect();
        let threads = threads.clamp(1, todo.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&c) = todo.get(k) else { break };
                    self.row(c);
                });
            }
        });
    }

    /// The host × host costs as a table (rows named by host), built on the
    /// first call.
    ///
    /// # Complexity
    /// `O(H²)` time and `16·H²` bytes for `H` hosts: prefer
    /// [`NetworkCosts::link_cost`].
    pub fn table(&self) -> &PairTable {
        self.table.get_or_init(|| {
            let h = self.num_hosts();
            let mut latency = vec![0.0; h * h];
            let mut inv_bandwidth = vec![0.0; h * h];
            for a in 0..h {
                for b in 0..h {
                    let c = self.cell(a, b);
                    latency[a * h + b] = c.latency;
                    inv_bandwidth[a * h + b] = c.inv_bandwidth;
                }
            }
            let names = (0..h).map(|k| self.host_name(k).to_string()).collect();
            PairTable::new(names, latency, inv_bandwidth).expect("path costs are valid")
        })
    }

    /// The number of hosts.
    pub fn num_hosts(&self) -> usize {
        self.host_class.len()
    }

    /// The name of host `k`.
    ///
    /// # Panics
    /// If `k >= num_hosts()`.
    pub fn host_name(&self, k: usize) -> &str {
        self.net.host_name(k)
    }

    /// The index of the host called `name`.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        let v = self.net.by_name.get(name)?;
        match self.host_of_vertex[v.index()] {
            u32::MAX => None,
            k => Some(k as usize),
        }
    }

    /// The cost from host `a` to host `b` (zero for `a == b`).
    ///
    /// # Panics
    /// If `a` or `b` is `>= num_hosts()`.
    ///
    /// # Complexity
    /// `O(1)`; the first lookup from `a`'s class searches the network.
    #[inline]
    pub fn link_cost(&self, a: usize, b: usize) -> LinkCost {
        let c = self.cell(a, b);
        LinkCost {
            latency: c.latency,
            inv_bandwidth: c.inv_bandwidth,
        }
    }

    /// Number of links on the path from host `a` to host `b`.
    ///
    /// # Panics
    /// If `a` or `b` is `>= num_hosts()`.
    #[inline]
    pub fn hops(&self, a: usize, b: usize) -> u32 {
        self.cell(a, b).hops
    }

    /// The bandwidth model the costs are computed with.
    pub fn model(&self) -> BandwidthModel {
        self.model
    }

    /// A one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }
}

/// `Ok` if every host reaches every host; else the first pair `(a, b)`, in
/// order of `a` then `b`, without a path.
fn check_reachable(net: &Network) -> Result<()> {
    let g = &net.graph;
    let Some(&h0) = net.hosts.first() else {
        return Ok(());
    };
    let reach = |from: NodeIndex, dir: petgraph::Direction| {
        let mut seen = vec![false; g.node_count()];
        let mut stack = vec![from];
        seen[from.index()] = true;
        while let Some(v) = stack.pop() {
            for w in g.neighbors_directed(v, dir) {
                if !seen[w.index()] {
                    seen[w.index()] = true;
                    stack.push(w);
                }
            }
        }
        seen
    };
    // All hosts reach h0 and h0 reaches all hosts: every pair is joined.
    let fwd = reach(h0, petgraph::Direction::Outgoing);
    let back = reach(h0, petgraph::Direction::Incoming);
    if net.hosts.iter().all(|v| fwd[v.index()] && back[v.index()]) {
        return Ok(());
    }
    // Some pair is disconnected: find the first.
    for (a, &va) in net.hosts.iter().enumerate() {
        let seen = reach(va, petgraph::Direction::Outgoing);
        if let Some(b) = net.hosts.iter().position(|v| !seen[v.index()]) {
            return Err(TopologyError::Unreachable {
                origin: crate::Origin::none(),
                from: net.host_name(a).to_string(),
                to: net.host_name(b).to_string(),
            });
        }
    }
    Ok(())
}
