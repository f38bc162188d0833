//! The short form of a machine file: the network in one table (`[torus]`,
//! `[network]` or `[flat]`) and the slots at the top level (`ranks_per_node`,
//! `nodes`), its checks, and the construction of its nodes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::TopologyConfig;
use crate::error::{Result, TopologyError};
use crate::files::{self, FieldPath, Invalid};
use crate::link::{inconsistent, BandwidthModel, LinkCost};
use crate::machine::{InterNode, Machine};
use crate::network::Network;
use crate::nodelist::{expand_nodelist, expand_tasks_per_node, NodeListError};
use crate::placement::{Placement, MAX_RANKS};
use crate::torus::{
    Torus, TorusNode, DEFAULT_BASE_LATENCY, DEFAULT_HOP_LATENCY, DEFAULT_LINK_BANDWIDTH,
};

/// Node names: a Slurm-style list (`"nid[00012-00019,00033]"`) or an array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "expected node names: a Slurm list such as \"nid[001-004]\" or an array of names"
)]
pub enum NodeNames {
    /// A compressed list ([`expand_nodelist`]).
    List(String),
    /// One name per node.
    Array(Vec<String>),
}

impl NodeNames {
    /// The names, in order.
    ///
    /// # Errors
    /// [`NodeListError`] for a malformed compressed list.
    pub fn expand(&self) -> std::result::Result<Vec<String>, NodeListError> {
        match self {
            Self::List(s) => expand_nodelist(s),
            Self::Array(a) => Ok(a.clone()),
        }
    }
}

/// Slots (ranks) per node: the same number on every node, one number per node, or
/// `SLURM_TASKS_PER_NODE` syntax (`"16(x24),8(x16)"`, [`expand_tasks_per_node`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "expected slots per node: a whole number >= 1, one per node ([16, 16, 8]) \
                 or SLURM_TASKS_PER_NODE syntax (\"16(x2),8\")"
)]
pub enum SlotCounts {
    /// Every node alike.
    Each(usize),
    /// One count per node, in machine order.
    PerNode(Vec<usize>),
    /// `SLURM_TASKS_PER_NODE` syntax.
    Slurm(String),
}

impl SlotCounts {
    /// The count of every one of `nodes` nodes.
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] (field `ranks_per_node`) when a list's length
    /// differs from `nodes` or a count is 0; [`TopologyError::Parse`] for bad Slurm
    /// syntax.
    pub fn expand(&self, nodes: usize) -> Result<Vec<usize>> {
        let v = match self {
            Self::Each(k) => vec![*k; nodes],
            Self::PerNode(v) => v.clone(),
            Self::Slurm(s) => expand_tasks_per_node(s).map_err(|e| TopologyError::Parse {
                origin: crate::Origin::none(),
                field: "ranks_per_node".into(),
                message: e.to_string(),
            })?,
        };
        if v.len() != nodes {
            let plural = |n: usize, what: &str| match n {
                1 => format!("1 {what}"),
                _ => format!("{n} {what}s"),
            };
            let mut text = format!(
                "{} for {}",
                plural(v.len(), "slot count"),
                plural(nodes, "node")
            );
            if let Self::Slurm(s) = self {
                // a count in quotes is a list of one node's count
                let k = v.first().copied().unwrap_or(1);
                text = format!(
                    "\"{s}\" (SLURM_TASKS_PER_NODE syntax) gives {text}; {k} on every node \
                     is ranks_per_node = {k} (no quotes) or \"{k}(x{nodes})\""
                );
            }
            return Err(inconsistent("ranks_per_node", text));
        }
        if let Some(k) = v.iter().position(|&c| c == 0) {
            return Err(inconsistent(
                "ranks_per_node",
                format!("node {k} has 0 slots; every node needs at least 1"),
            ));
        }
        Ok(v)
    }

    /// Checks what can be checked without the node count.
    pub(crate) fn validate(&self, at: &FieldPath) -> std::result::Result<(), Invalid> {
        match self {
            Self::Each(0) => Err(Invalid::new(at.clone(), 0, "must be >= 1")),
            Self::Each(_) => Ok(()),
            Self::PerNode(v) => match v.iter().position(|&c| c == 0) {
                Some(k) => Err(Invalid::new(at.index(k), 0, "must be >= 1")),
                None if v.is_empty() => Err(Invalid::new(at.clone(), "[]", "no nodes")),
                None => Ok(()),
            },
            Self::Slurm(s) => match expand_tasks_per_node(s) {
                Err(e) => Err(Invalid::new(at.clone(), format!("\"{s}\""), e.to_string())),
                Ok(v) if v.contains(&0) => Err(Invalid::new(
                    at.clone(),
                    format!("\"{s}\""),
                    "a node with 0 slots",
                )),
                Ok(_) => Ok(()),
            },
        }
    }
}

/// `[network]` of the short form: a network description file ([`Network::from_file`])
/// and, optionally, which of its hosts are the job's nodes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// The network file (relative to the machine file).
    pub file: PathBuf,
    /// The job's hosts in machine order (default: every host of the network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<NodeNames>,
    /// How bandwidths combine along a path.
    #[serde(default)]
    pub bandwidth_model: BandwidthModel,
}

/// `[flat]` of the short form: nodes without a network model (every pair one hop over
/// the sender's injection link at [`DEFAULT_LINK_BANDWIDTH`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatSection {
    /// Number of nodes.
    pub nodes: usize,
}

/// The cost of one hop between two nodes of a `[flat]` machine.
pub const FLAT_LINK: LinkCost = LinkCost {
    latency: DEFAULT_BASE_LATENCY + DEFAULT_HOP_LATENCY,
    inv_bandwidth: 1.0 / DEFAULT_LINK_BANDWIDTH,
};

impl TopologyConfig {
    /// Whether the network is given in the short form (`[torus]`, `[network]` or
    /// `[flat]`).
    pub fn is_short_form(&self) -> bool {
        self.torus.is_some() || self.network.is_some() || self.flat.is_some()
    }

    /// The expanded top-level `nodes`, if given.
    ///
    /// # Errors
    /// [`TopologyError::Parse`] on field `nodes` for a malformed list.
    pub fn node_names(&self) -> Result<Option<Vec<String>>> {
        self.nodes
            .as_ref()
            .map(|n| n.expand().map_err(|e| nodelist_error("nodes", &e)))
            .transpose()
    }

    /// The slots of each of `nodes` nodes from `ranks_per_node` (default: `pus` if
    /// known, else 1).
    ///
    /// # Errors
    /// As [`SlotCounts::expand`].
    pub fn slot_counts(&self, nodes: usize, pus: Option<usize>) -> Result<Vec<usize>> {
        match &self.ranks_per_node {
            Some(s) => s.expand(nodes),
            None => Ok(vec![pus.unwrap_or(1); nodes]),
        }
    }

    /// The short form's checks (called by [`TopologyConfig::validate`]).
    pub(crate) fn validate_short(&self, at: &FieldPath) -> std::result::Result<(), Invalid> {
        let given: Vec<&str> = [
            ("torus", self.torus.is_some()),
            ("network", self.network.is_some()),
            ("flat", self.flat.is_some()),
        ]
        .into_iter()
        .filter(|g| g.1)
        .map(|g| g.0)
        .collect();
        if given.len() > 1 {
            return Err(Invalid::new(
                at.key(given[1]),
                format!("[{}]", given[1]),
                format!(
                    "a machine has one network: give one of [torus], [network] or [flat] (also [{}] here)",
                    given[0]
                ),
            ));
        }
        if let Some(&short) = given.first() {
            for (key, there) in [
                ("inter", self.inter.is_some()),
                ("placement", self.placement.is_some()),
                ("rank_matrix", self.rank_matrix.is_some()),
            ] {
                if there {
                    return Err(Invalid::new(
                        at.key(key),
                        format!("[{key}]"),
                        format!("[{short}] already gives the network and the slots: remove [{key}] (or write the machine with [inter] and [placement] only)"),
                    ));
                }
            }
        } else {
            for (key, there) in [
                ("ranks_per_node", self.ranks_per_node.is_some()),
                ("nodes", self.nodes.is_some()),
            ] {
                if there {
                    return Err(Invalid::new(
                        at.key(key),
                        key,
                        "top-level `ranks_per_node` and `nodes` go with [torus], [network] or [flat]; with [inter] use [placement] (`ranks_per_node`, `nodes`)",
                    ));
                }
            }
        }
        if let Some(t) = &self.torus {
            t.params().validate(&at.key("torus"))?;
        }
        if let Some(f) = &self.flat {
            if f.nodes == 0 {
                return Err(Invalid::new(at.key("flat").key("nodes"), 0, "must be >= 1"));
            }
            if f.nodes > MAX_RANKS {
                return Err(Invalid::new(
                    at.key("flat").key("nodes"),
                    f.nodes,
                    format!("at most {MAX_RANKS} nodes"),
                ));
            }
        }
        if let Some(s) = &self.ranks_per_node {
            s.validate(&at.key("ranks_per_node"))?;
        }
        if let Some(n) = &self.nodes {
            if let (Err(e), NodeNames::List(s)) = (n.expand(), n) {
                return Err(Invalid::new(
                    at.key("nodes"),
                    format!("\"{s}\""),
                    e.to_string(),
                ));
            }
        }
        match self.network.as_ref().and_then(|n| n.hosts.as_ref()) {
            Some(NodeNames::List(s)) => {
                if let Err(e) = expand_nodelist(s) {
                    return Err(Invalid::new(
                        at.key("network").key("hosts"),
                        format!("\"{s}\""),
                        e.to_string(),
                    ));
                }
            }
            Some(NodeNames::Array(a)) if a.is_empty() => {
                return Err(Invalid::new(
                    at.key("network").key("hosts"),
                    "[]",
                    "no hosts: name the job's hosts, or leave `hosts` out for every host of the network",
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The short form's nodes, in machine order: the network between them and their
    /// names (a torus carries its nodes' names; a network's hosts are the nodes). This
    /// is the one construction of a short-form machine: [`TopologyConfig::build`]
    /// places ranks on these nodes, and the mapper views them with their slots.
    /// Relative paths resolve against `base`.
    ///
    /// # Errors
    /// File and source errors; `nodes` of the wrong length; a host the network does
    /// not have; [`TopologyError::Inconsistent`] for a file in the long form.
    pub fn short_form_nodes(&self, base: &Path) -> Result<(InterNode, Vec<String>)> {
        if !self.is_short_form() {
            return Err(inconsistent(
                "torus",
                "the machine is in the long form ([inter] and [placement]): it has no short-form nodes",
            ));
        }
        if let Some(t) = &self.torus {
            let params = t.params();
            let torus = match &t.coords {
                Some(c) => Torus::from_coords_file(params, &files::resolve(base, c))?,
                None => Torus::full(params)?,
            };
            let torus = match self.node_names()? {
                None => torus,
                Some(names) => {
                    if names.len() != torus.num_nodes() {
                        return Err(inconsistent(
                            "nodes",
                            format!(
                                "{} for the {} of the torus",
                                crate::placement::count(names.len(), "name"),
                                crate::placement::count(torus.num_nodes(), "node")
                            ),
                        ));
                    }
                    let nodes = names
                        .into_iter()
                        .enumerate()
                        .map(|(k, name)| TorusNode {
                            name,
                            coords: torus.coords(k).to_vec(),
                        })
                        .collect();
                    Torus::new(torus.params().clone(), nodes)?
                }
            };
            let names = (0..torus.num_nodes())
                .map(|k| torus.node_name(k).to_string())
                .collect();
            Ok((InterNode::Torus(torus), names))
        } else if let Some(n) = &self.network {
            let path = files::resolve(base, &n.file);
            let net = Network::from_file(&path)?;
            // a selection keeps only its hosts (the others become switches), so only
            // they must reach each other
            let (net, hosts) = match &n.hosts {
                Some(h) => {
                    let hosts = h
                        .expand()
                        .map_err(|e| nodelist_error("network.hosts", &e))?;
                    if let Some(h) = hosts.iter().find(|h| net.host_index(h).is_none()) {
                        return Err(inconsistent(
                            "network.hosts",
                            format!("`{h}` is not a host of the network {}", path.display()),
                        ));
                    }
                    let net = net.with_hosts(&hosts).map_err(|e| match e {
                        TopologyError::Duplicate { id, .. } => {
                            inconsistent("network.hosts", format!("`{id}` is named twice"))
                        }
                        e => e,
                    })?;
                    (net, hosts)
                }
                None => {
                    let hosts = (0..net.num_hosts())
                        .map(|k| net.host_name(k).to_string())
                        .collect();
                    (net, hosts)
                }
            };
            // `nodes` renames the job's hosts for the exports: one name per host
            if let Some(names) = self.node_names()?.filter(|n| n.len() != hosts.len()) {
                return Err(names_for_nodes(names.len(), hosts.len()));
            }
            let costs = net.costs(n.bandwidth_model).map_err(|e| e.in_file(&path))?;
            Ok((InterNode::Network(costs), hosts))
        } else {
            let nodes = self.flat.as_ref().map_or(1, |f| f.nodes);
            let names = match self.node_names()? {
                Some(n) if n.len() != nodes => return Err(names_for_nodes(n.len(), nodes)),
                Some(n) => n,
                None => (0..nodes).map(|k| format!("node{k}")).collect(),
            };
            Ok((InterNode::Uniform(FLAT_LINK), names))
        }
    }

    /// The short form as a topology [`Machine`]: `ranks` (default: every slot) placed
    /// in slot order, node by node.
    pub(crate) fn build_short_form(&self, base: &Path, ranks: Option<usize>) -> Result<Machine> {
        let intra = self.build_intra(base)?;
        let (inter, names) = self.short_form_nodes(base)?;
        let pus = intra.as_ref().and_then(crate::IntraNode::num_pus);
        let counts = self.slot_counts(names.len(), pus)?;
        let slots = counts.iter().fold(0usize, |a, &c| a.saturating_add(c));
        let ranks = ranks.unwrap_or(slots);
        if ranks > slots || ranks > MAX_RANKS || ranks == 0 {
            return Err(inconsistent(
                "ranks_per_node",
                format!(
                    "{} on a machine of {} (at most {MAX_RANKS} ranks, at least 1)",
                    crate::placement::count(ranks, "rank"),
                    crate::placement::count(slots, "slot")
                ),
            ));
        }
        let pairs = names
            .iter()
            .zip(&counts)
            .flat_map(|(n, &c)| std::iter::repeat_n((n.as_str(), None), c))
            .take(ranks);
        let mut b = Machine::builder()
            .inter(inter)
            .placement(Placement::from_pairs(pairs));
        if let Some(i) = intra {
            b = b.intra(i);
        }
        b.build()
    }
}

/// `nodes` gives `names` names for a machine of `nodes` nodes.
fn names_for_nodes(names: usize, nodes: usize) -> TopologyError {
    inconsistent(
        "nodes",
        format!(
            "{} for {}",
            crate::placement::count(names, "name"),
            crate::placement::count(nodes, "node")
        ),
    )
}

fn nodelist_error(field: &str, e: &NodeListError) -> TopologyError {
    TopologyError::Parse {
        origin: crate::Origin::none(),
        field: field.into(),
        message: e.to_string(),
    }
}
