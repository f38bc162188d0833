//! The topology configuration file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Result, TopologyError};
use crate::files::{self, check_bandwidth, check_nonneg, Doc, FieldPath, Format, Invalid};
use crate::link::{inconsistent, BandwidthModel};
use crate::machine::{InterNode, IntraNode, Machine, PlacementRule, RankOrder};
use crate::matrix::PairTable;
use crate::network::Network;
use crate::placement::Placement;
use crate::torus::{
    Torus, TorusParams, DEFAULT_BASE_LATENCY, DEFAULT_HOP_LATENCY, DEFAULT_LINK_BANDWIDTH,
};
use crate::transform::TransformCosts;
use crate::tree::{LevelCosts, NodeTree};

mod short_form;
pub use short_form::{FlatSection, NetworkSection, NodeNames, SlotCounts, FLAT_LINK};

/// The topology configuration file: which sources describe the machine and
/// how ranks are placed. TOML or JSON; relative paths resolve against the
/// configuration file's directory.
///
/// ```toml
/// [intra]                       # inside a node (optional; default uniform)
/// kind = "tree"                 # or hwloc-machine | hwloc-synthetic | hwloc-xml | uniform | matrix
/// shape = "pack:2 numa:2 l3:1 core:8 pu:1"
/// [intra.levels]                # optional; default LevelCosts::default()
/// l3 = { latency = 3e-7, bandwidth = 1.0e10 }
/// machine = { latency = 8e-7, bandwidth = 5.0e9 }
///
/// [inter]                       # between nodes (optional for one node)
/// kind = "torus"                # or uniform | network | matrix
/// dims = [4, 4, 4]
/// coords = "torus-4x4x4.coords" # optional: default one node per coordinate
/// link_bandwidth = [6.5e9, 5.0e9, 6.5e9]
///
/// [placement]                   # optional: default packed, one rank per PU
/// rule = "packed"               # or round-robin | file
/// ranks = 256
/// ranks_per_node = 32
///
/// [transform]                   # optional: s/byte of local transforms (calibrated)
/// transpose = 3.5e-10
/// ```
///
/// ```
/// use copr_topology::TopologyConfig;
/// use copr_topology::files::Format;
/// let text = r#"
/// [inter]
/// kind = "torus"
/// dims = [2, 2, 2]
/// [placement]
/// rule = "packed"
/// ranks = 8
/// ranks_per_node = 1
/// "#;
/// let cfg = TopologyConfig::from_str(text, Format::Toml).unwrap();
/// let m = cfg.build(".".as_ref(), None).unwrap();
/// assert_eq!(m.ranks(), 8);
/// // round trip
/// let again = TopologyConfig::from_str(&cfg.to_string(Format::Json).unwrap(), Format::Json).unwrap();
/// assert_eq!(again, cfg);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    /// Free text for summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Short form: slots per node (a number, one per node, or
    /// `SLURM_TASKS_PER_NODE` syntax such as `"16(x24),8(x16)"`); default the
    /// node tree's PUs, else 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks_per_node: Option<SlotCounts>,
    /// Short form: node names in machine order (a Slurm list or an array); for a
    /// torus they name its nodes in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<NodeNames>,
    /// Short form: a torus (`dims`, `coords` for an allocation, `link_bandwidth`
    /// per dimension, …); excludes `inter`, `placement`, `rank_matrix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torus: Option<TorusConfig>,
    /// Short form: a network description file and the job's hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSection>,
    /// Short form: nodes without a network model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flat: Option<FlatSection>,
    /// Cost between ranks on one node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra: Option<IntraConfig>,
    /// Cost between ranks on different nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter: Option<InterConfig>,
    /// Where ranks run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementConfig>,
    /// An explicit rank × rank matrix file ([`crate::MatrixFile`]) pricing
    /// every pair; excludes `intra` and `inter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_matrix: Option<PathBuf>,
    /// What a core spends on local transforms (measured by `copr calibrate`); a
    /// machine file with it is priced by latency + bandwidth + transform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform: Option<TransformCosts>,
}

/// `[intra]`: the intra-node source, selected by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum IntraConfig {
    /// `kind = "uniform"`: one cost for every PU pair.
    Uniform {
        /// Seconds.
        latency: f64,
        /// Bytes per second.
        bandwidth: f64,
    },
    /// `kind = "tree"`: a pure-Rust tree from a shape such as
    /// `"pack:2 numa:2 l3:1 core:8 pu:1"` ([`NodeTree::from_shape`]).
    Tree {
        /// The shape.
        shape: String,
        /// Per-level costs (default [`LevelCosts::default`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        levels: Option<LevelCosts>,
    },
    /// `kind = "hwloc-machine"`: hwloc discovery of the running machine.
    HwlocMachine {
        /// Per-level costs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        levels: Option<LevelCosts>,
    },
    /// `kind = "hwloc-synthetic"`: an hwloc synthetic description.
    HwlocSynthetic {
        /// E.g. `"pack:2 numa:2 l3:1 core:8 pu:1"`.
        description: String,
        /// Per-level costs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        levels: Option<LevelCosts>,
    },
    /// `kind = "hwloc-xml"`: an hwloc XML file.
    HwlocXml {
        /// The file.
        file: PathBuf,
        /// Per-level costs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        levels: Option<LevelCosts>,
    },
    /// `kind = "matrix"`: a PU × PU matrix file.
    Matrix {
        /// The file.
        file: PathBuf,
    },
}

/// `[inter]`: the inter-node source, selected by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum InterConfig {
    /// `kind = "uniform"`: one cost for every node pair.
    Uniform {
        /// Seconds.
        latency: f64,
        /// Bytes per second.
        bandwidth: f64,
    },
    /// `kind = "torus"`.
    Torus(TorusConfig),
    /// `kind = "network"`: a network file ([`crate::NetworkDescription`]).
    Network {
        /// The file.
        file: PathBuf,
        /// How bandwidths combine along a path.
        #[serde(default)]
        bandwidth_model: BandwidthModel,
    },
    /// `kind = "matrix"`: a node × node matrix file.
    Matrix {
        /// The file.
        file: PathBuf,
    },
}

/// `[inter] kind = "torus"`: [`TorusParams`] plus an optional coordinates
/// file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorusConfig {
    /// Extent per dimension.
    pub dims: Vec<u32>,
    /// Coordinates file (default: one node per coordinate, named by index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coords: Option<PathBuf>,
    /// Seconds (default [`DEFAULT_BASE_LATENCY`]).
    #[serde(default = "default_base")]
    pub base_latency: f64,
    /// Seconds per hop (default [`DEFAULT_HOP_LATENCY`]).
    #[serde(default = "default_hop")]
    pub hop_latency: f64,
    /// Bytes per second per dimension (default [`DEFAULT_LINK_BANDWIDTH`] each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bandwidth: Option<Vec<f64>>,
    /// Bytes per second (default: the largest link bandwidth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection_bandwidth: Option<f64>,
    /// How bandwidths combine along a route.
    #[serde(default)]
    pub bandwidth_model: BandwidthModel,
}

fn default_base() -> f64 {
    DEFAULT_BASE_LATENCY
}
fn default_hop() -> f64 {
    DEFAULT_HOP_LATENCY
}

impl TorusConfig {
    /// The torus parameters this configuration describes.
    pub fn params(&self) -> TorusParams {
        TorusParams {
            dims: self.dims.clone(),
            base_latency: self.base_latency,
            hop_latency: self.hop_latency,
            link_bandwidth: self
                .link_bandwidth
                .clone()
                .unwrap_or_else(|| vec![DEFAULT_LINK_BANDWIDTH; self.dims.len()]),
            injection_bandwidth: self.injection_bandwidth,
            bandwidth_model: self.bandwidth_model,
        }
    }
}

/// `[placement]`: where ranks run, selected by `rule`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PlacementConfig {
    /// `rule = "packed"`: [`Placement::packed`].
    Packed(RuleConfig),
    /// `rule = "round-robin"`: [`Placement::round_robin`].
    RoundRobin(RuleConfig),
    /// `rule = "file"`: a placement file ([`Placement::from_file`]).
    File {
        /// The file.
        file: PathBuf,
    },
}

/// The parameters of a `packed` or `round-robin` `[placement]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Number of ranks (a caller-supplied count takes precedence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<usize>,
    /// Default: PUs per node of the intra source, else 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks_per_node: Option<usize>,
    /// Node names (default: the inter-node source's nodes in order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
}

impl PlacementConfig {
    /// The rule's order and parameters, if it is a rule (not a file).
    pub fn rule(&self) -> Option<(RankOrder, &RuleConfig)> {
        match self {
            Self::Packed(r) => Some((RankOrder::Packed, r)),
            Self::RoundRobin(r) => Some((RankOrder::RoundRobin, r)),
            Self::File { .. } => None,
        }
    }
}

fn check_link(latency: f64, bandwidth: f64, at: &FieldPath) -> Result<(), Invalid> {
    check_nonneg(latency, &at.key("latency"))?;
    check_bandwidth(bandwidth, &at.key("bandwidth"))
}

impl TopologyConfig {
    /// Parses a configuration and validates its values.
    ///
    /// # Errors
    /// [`TopologyError::Parse`] or [`TopologyError::InvalidValue`] with line
    /// and field.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str, format: Format) -> Result<Self> {
        files::parse_checked(text, format, None, Self::check_doc)
    }

    /// Reads a configuration file (TOML, or JSON by extension) and
    /// validates its values.
    ///
    /// # Errors
    /// [`TopologyError::Io`], [`TopologyError::Parse`] or
    /// [`TopologyError::InvalidValue`] with file, line and field.
    pub fn from_file(path: &Path) -> Result<Self> {
        files::read_checked(path, Self::check_doc)
    }

    fn check_doc(&self, doc: Doc<'_>) -> Result<()> {
        self.validate(&FieldPath::root())
            .map_err(|e| doc.invalid(e))
    }

    /// Serialises the configuration.
    ///
    /// # Errors
    /// As [`files::to_string`].
    pub fn to_string(&self, format: Format) -> Result<String> {
        files::to_string(self, format)
    }

    /// Checks every number and the combination of sections; `at` is the
    /// configuration's place in its document (root for a file of its own).
    ///
    /// # Errors
    /// [`Invalid`] naming the field, e.g. `inter.link_bandwidth[1]`.
    pub fn validate(&self, at: &FieldPath) -> Result<(), Invalid> {
        self.validate_short(at)?;
        if let Some(t) = &self.transform {
            t.validate(&at.key("transform"))?;
        }
        if let Some(intra) = &self.intra {
            let a = at.key("intra");
            match intra {
                IntraConfig::Uniform { latency, bandwidth } => {
                    check_link(*latency, *bandwidth, &a)?
                }
                IntraConfig::Tree { levels, .. }
                | IntraConfig::HwlocMachine { levels }
                | IntraConfig::HwlocSynthetic { levels, .. }
                | IntraConfig::HwlocXml { levels, .. } => {
                    if let Some(l) = levels {
                        l.validate(&a.key("levels"))?;
                    }
                }
                IntraConfig::Matrix { .. } => {}
            }
        }
        if let Some(inter) = &self.inter {
            let a = at.key("inter");
            match inter {
                InterConfig::Uniform { latency, bandwidth } => {
                    check_link(*latency, *bandwidth, &a)?
                }
                InterConfig::Torus(t) => t.params().validate(&a)?,
                InterConfig::Network { .. } | InterConfig::Matrix { .. } => {}
            }
        }
        if let Some((_, r)) = self.placement.as_ref().and_then(PlacementConfig::rule) {
            let a = at.key("placement");
            if r.ranks == Some(0) {
                return Err(Invalid::new(a.key("ranks"), 0, "must be >= 1"));
            }
            if r.ranks_per_node == Some(0) {
                return Err(Invalid::new(a.key("ranks_per_node"), 0, "must be >= 1"));
            }
        }
        if let Some(rm) = &self.rank_matrix {
            if self.intra.is_some() || self.inter.is_some() {
                return Err(Invalid::new(
                    at.key("rank_matrix"),
                    rm.display(),
                    "an explicit rank matrix prices every pair; remove [intra] and [inter]",
                ));
            }
            if self
                .placement
                .as_ref()
                .and_then(PlacementConfig::rule)
                .is_some()
            {
                return Err(Invalid::new(
                    at.key("placement").key("rule"),
                    "packed/round-robin",
                    "with a rank matrix only `rule = \"file\"` placements are allowed",
                ));
            }
        }
        Ok(())
    }

    /// The intra-node source (file paths resolved against `base`).
    ///
    /// # Errors
    /// Errors of the source constructors (file errors name their files);
    /// [`TopologyError::HwlocDisabled`] for hwloc kinds without the feature.
    pub fn build_intra(&self, base: &Path) -> Result<Option<IntraNode>> {
        let costs = |l: &Option<LevelCosts>| l.clone().unwrap_or_default();
        Ok(Some(match &self.intra {
            None => return Ok(None),
            Some(IntraConfig::Uniform { latency, bandwidth }) => {
                IntraNode::Uniform(crate::LinkCost::from_bandwidth(*latency, *bandwidth)?)
            }
            Some(IntraConfig::Tree { shape, levels }) => {
                IntraNode::Tree(NodeTree::from_shape(shape, &costs(levels))?)
            }
            Some(IntraConfig::HwlocMachine { levels }) => {
                IntraNode::Tree(NodeTree::from_this_machine(&costs(levels))?)
            }
            Some(IntraConfig::HwlocSynthetic {
                description,
                levels,
            }) => IntraNode::Tree(NodeTree::from_hwloc_synthetic(description, &costs(levels))?),
            Some(IntraConfig::HwlocXml { file, levels }) => IntraNode::Tree(
                NodeTree::from_hwloc_xml(&files::resolve(base, file), &costs(levels))?,
            ),
            Some(IntraConfig::Matrix { file }) => {
                IntraNode::Matrix(PairTable::from_file(&files::resolve(base, file))?)
            }
        }))
    }

    /// The inter-node source (file paths resolved against `base`).
    ///
    /// For `kind = "network"` these are the costs between **all** the network's
    /// hosts: without a placement this cannot know which hosts the ranks will use,
    /// so every host must reach every other. [`TopologyConfig::build`] waits for the
    /// placement and prices only the hosts it uses (the others stay as switches), so
    /// a network with hosts cut off from the rest builds a machine on the connected
    /// hosts there, while this returns [`TopologyError::Unreachable`].
    ///
    /// # Errors
    /// Errors of the source constructors (file errors name their files);
    /// [`TopologyError::Unreachable`] for a network with a host pair without a path.
    pub fn build_inter(&self, base: &Path) -> Result<Option<InterNode>> {
        Ok(Some(match &self.inter {
            None => return Ok(None),
            Some(InterConfig::Uniform { latency, bandwidth }) => {
                InterNode::Uniform(crate::LinkCost::from_bandwidth(*latency, *bandwidth)?)
            }
            Some(InterConfig::Torus(t)) => InterNode::Torus(match &t.coords {
                Some(c) => Torus::from_coords_file(t.params(), &files::resolve(base, c))?,
                None => Torus::full(t.params())?,
            }),
            Some(InterConfig::Network { .. }) => {
                let Some((net, model, path)) = self.inter_network(base)? else {
                    return Ok(None);
                };
                InterNode::Network(net.costs(model).map_err(|e| e.in_file(&path))?)
            }
            Some(InterConfig::Matrix { file }) => {
                InterNode::Matrix(PairTable::from_file(&files::resolve(base, file))?)
            }
        }))
    }

    /// Builds the [`Machine`]. `ranks`, if given, overrides the placement's
    /// `ranks`; without either, a single node gets one rank per PU and
    /// anything else is an error.
    ///
    /// # Errors
    /// Source errors (see [`TopologyConfig::build_intra`]/`build_inter`),
    /// placement errors, [`TopologyError::Inconsistent`] when the number of
    /// ranks is unknown or contradicts a placement file, and the errors of
    /// [`crate::MachineBuilder::build`].
    pub fn build(&self, base: &Path, ranks: Option<usize>) -> Result<Machine> {
        self.validate(&FieldPath::root())
            .map_err(crate::link::invalid)?;
        if self.is_short_form() {
            return self.build_short_form(base, ranks);
        }
        let file_placement = match &self.placement {
            Some(PlacementConfig::File { file }) => {
                let p = Placement::from_file(&files::resolve(base, file))?;
                if let Some(r) = ranks.filter(|&r| r != p.ranks()) {
                    return Err(inconsistent(
                        "placement.file",
                        format!(
                            "{r} ranks requested, but the placement file places {}; a placement file fixes the ranks (a calibration writes one for the ranks it ran on): for {r} ranks, use `rule = \"packed\"` with `ranks_per_node` in [placement] instead, or calibrate on {r} ranks",
                            p.ranks()
                        ),
                    ));
                }
                Some(p)
            }
            _ => None,
        };
        if let Some(rm) = &self.rank_matrix {
            let table = PairTable::from_file(&files::resolve(base, rm))?;
            if let Some(r) = ranks.filter(|&r| r != table.len()) {
                return Err(inconsistent(
                    "rank_matrix",
                    format!(
                        "{r} ranks requested, but the rank matrix is {0}×{0}",
                        table.len()
                    ),
                ));
            }
            return Machine::from_rank_matrix(table, file_placement);
        }
        let intra = self.build_intra(base)?;
        // a network's costs wait for the placement: only the hosts used must reach
        // each other (the others stay as switches), as with the short form's `hosts`
        let network = self.inter_network(base)?;
        let inter = match network {
            Some(_) => None,
            None => self.build_inter(base)?,
        };
        let has_inter = inter.is_some() || network.is_some();
        let mut b = Machine::builder();
        if let Some(i) = intra.clone() {
            b = b.intra(i);
        }
        if let Some(i) = inter {
            b = b.inter(i);
        }
        if let Some((net, ..)) = &network {
            // a rule's default nodes: the network's hosts in order
            b = b.nodes(
                (0..net.num_hosts())
                    .map(|k| net.host_name(k).to_string())
                    .collect(),
            );
        }
        let b = match file_placement {
            Some(p) => b.placement(p),
            None => self.placement_rule(b, intra.as_ref(), has_inter, ranks)?,
        };
        match network {
            Some((net, model, path)) => b.build_with_inter(|placement| {
                // the hosts the ranks are on, in the network's order (a name that is
                // not a host is left for the machine to report)
                let used: std::collections::HashSet<&str> = placement.node_names().collect();
                let hosts: Vec<String> = (0..net.num_hosts())
                    .map(|k| net.host_name(k))
                    .filter(|h| used.contains(h))
                    .map(str::to_string)
                    .collect();
                let costs = net
                    .with_hosts(&hosts)?
                    .costs(model)
                    .map_err(|e| e.in_file(&path))?;
                Ok(InterNode::Network(costs))
            }),
            None => b.build(),
        }
    }

    /// `[inter] kind = "network"`: the network read from its file, the bandwidth model
    /// and the file's path (`None` for another `[inter]`).
    fn inter_network(&self, base: &Path) -> Result<Option<(Network, BandwidthModel, PathBuf)>> {
        let Some(InterConfig::Network {
            file,
            bandwidth_model,
        }) = &self.inter
        else {
            return Ok(None);
        };
        let path = files::resolve(base, file);
        let net = Network::from_file(&path)?;
        Ok(Some((net, *bandwidth_model, path)))
    }

    /// The long form's placement rule (`[placement]`'s rule, default packed) on
    /// builder `b`: the number of ranks from `ranks`, the rule, or a single node's PUs.
    fn placement_rule(
        &self,
        mut b: crate::MachineBuilder,
        intra: Option<&IntraNode>,
        has_inter: bool,
        ranks: Option<usize>,
    ) -> Result<crate::MachineBuilder> {
        let default_rule = (RankOrder::Packed, &RuleConfig::default());
        let (order, rule) = self
            .placement
            .as_ref()
            .and_then(PlacementConfig::rule)
            .unwrap_or(default_rule);
        let single_node_pus = if has_inter {
            None
        } else {
            intra.and_then(IntraNode::num_pus)
        };
        let Some(ranks) = ranks.or(rule.ranks).or(single_node_pus) else {
            return Err(inconsistent(
                "placement.ranks",
                "the number of ranks is unknown: give `ranks` in [placement] or pass it to the loader",
            ));
        };
        if let Some(n) = &rule.nodes {
            b = b.nodes(n.clone());
        }
        let ranks_per_node = rule
            .ranks_per_node
            .or(if has_inter { None } else { Some(ranks) });
        Ok(b.rule(PlacementRule {
            order,
            ranks,
            ranks_per_node,
        }))
    }
}

impl From<Invalid> for TopologyError {
    fn from(e: Invalid) -> Self {
        crate::link::invalid(e)
    }
}
