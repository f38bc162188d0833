//! copr-topology: where ranks live and what moving bytes between two ranks
//! costs — latency `L(i, j)` in seconds and inverse bandwidth `B(i, j)` in
//! seconds per byte, so that sending `n` bytes costs `L + B·n`.
//!
//! A [`Machine`] combines
//! * an **intra-node** source ([`IntraNode`]): a PU hierarchy ([`NodeTree`],
//!   from hwloc — the running machine, synthetic descriptions, XML files,
//!   with the `hwloc` feature — or from a pure-Rust shape), a uniform cost,
//!   or an explicit PU × PU matrix;
//! * an **inter-node** source ([`InterNode`]): an n-D [`Torus`] with
//!   per-direction link bandwidths, a [`Network`] graph (fat trees,
//!   dragonflies, islands …) priced by shortest paths, a uniform cost, or an
//!   explicit node × node matrix ([`PairTable`]);
//! * a [`Placement`] of ranks on nodes (and PUs): from a file, a rule
//!   (packed, round-robin) or run-time discovery ([`Placement::from_pairs`]);
//!
//! or prices every rank pair from an explicit matrix
//! ([`Machine::from_rank_matrix`]). [`TopologyConfig`] describes all of this
//! in TOML or JSON.
//!
//! ```
//! use copr_topology::{InterNode, IntraNode, LevelCosts, Machine, NodeTree, PlacementRule, Torus, TorusParams};
//! let mut params = TorusParams::new(vec![4, 4, 4]);
//! params.link_bandwidth = vec![6.5e9, 5.0e9, 6.5e9]; // X and Z faster than Y
//! let m = Machine::builder()
//!     .intra(IntraNode::Tree(NodeTree::from_shape("pack:2 core:4", &LevelCosts::default()).unwrap()))
//!     .inter(InterNode::Torus(Torus::full(params).unwrap()))
//!     .rule(PlacementRule::packed(64, None)) // 8 per node: the tree's PUs
//!     .build()
//!     .unwrap();
//! assert!(m.same_node(0, 7) && !m.same_node(0, 8));
//! assert!(m.latency(0, 1) < m.latency(0, 8)); // intra < inter
//! // node 1 is one X hop from node 0, node 4 one Y hop: X links are faster
//! assert!(m.inv_bandwidth(0, 8) < m.inv_bandwidth(0, 32));
//! println!("{}", m.summary());
//! ```
//!
//! Nothing here knows about MPI. Errors are [`TopologyError`]s naming file,
//! line and field.

mod autocorr;
mod config;
mod error;
pub mod files;
mod hostfile;
pub use hostfile::hostfile_machine;
mod hwloc;
pub use hwloc::current_binding_pu;
mod link;
mod machine;
mod machine_file;
mod matrix;
mod network;
mod nodelist;
mod placement;
mod torus;
mod transform;
mod tree;

pub use config::{
    FlatSection, InterConfig, IntraConfig, NetworkSection, NodeNames, PlacementConfig, RuleConfig,
    SlotCounts, TopologyConfig, TorusConfig, FLAT_LINK,
};
pub use error::{Origin, Result, TopologyError};
pub use link::{gb_per_s, BandwidthModel, LinkCost, LinkSpec};
pub use machine::{
    InterNode, IntraNode, LevelSummary, Machine, MachineBuilder, MinMaxMean, PairLevel,
    PlacementRule, RankOrder, TopologySummary, DEFAULT_INTRA,
};
pub use machine_file::{document_keys, load_machine, machine_config, MachineFile, MachineFileKind};
pub use matrix::{MatrixFile, PairTable};
pub use network::{
    DragonflySpec, FatTreeSpec, LinkDefaults, LinkEntry, Network, NetworkCosts, NetworkDescription,
    PathCost, Vertex, VertexKind,
};
pub use nodelist::{expand_nodelist, expand_tasks_per_node, NodeListError, MAX_NODELIST};
pub use placement::{count, Placement, MAX_RANKS};
pub use torus::{
    Torus, TorusLink, TorusNode, TorusParams, DEFAULT_BASE_LATENCY, DEFAULT_HOP_LATENCY,
    DEFAULT_LINK_BANDWIDTH, MAX_TORUS_COORDS,
};
pub use transform::TransformCosts;
pub use tree::{Level, LevelCosts, NodeTree, PuAncestry, MAX_NODE_PUS};

/// Whether this build has hwloc support (the `hwloc` cargo feature).
pub const HWLOC_ENABLED: bool = cfg!(feature = "hwloc");
