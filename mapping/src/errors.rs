//! The mapper's typed errors, one enum per domain: the machine ([`MachineError`]),
//! task and slot counts ([`MapError`]), the files the mapper writes and reads back
//! ([`ExportError`]) and reordered communicators (`MpiError`, with the feature `mpi`).
//!
//! Each is carried by [`copr::Error::Extension`] (`copr::Error::from(e)`, and `?`
//! converts), as [`crate::PatternError`] is; `downcast_ref` on the box recovers it:
//!
//! ```
//! use copr_mapping::{MachineError, MapMachine};
//! let e = MapMachine::flat(0, 4).unwrap_err();
//! let copr::Error::Extension(b) = &e else { panic!() };
//! assert_eq!(b.downcast_ref::<MachineError>(), Some(&MachineError::NoNodes));
//! ```

use std::fmt;
#[cfg(feature = "mpi")]
use std::path::PathBuf;

use copr::error::Error;

pub(crate) use copr_topology::count;

/// [`count`] of a count that may pass `usize`.
fn count128(n: u128, noun: &str) -> String {
    match usize::try_from(n) {
        Ok(n) => count(n, noun),
        Err(_) => format!("{n} {noun}s"),
    }
}

macro_rules! carried_by_extension {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::Extension(Box::new(e))
            }
        }
    )*};
}

carried_by_extension!(MachineError, MapError, ExportError);
#[cfg(feature = "mpi")]
carried_by_extension!(MpiError);

/// What is wrong with a machine as the mapper sees it ([`crate::MapMachine`]): its
/// nodes, slots, names, network or node tree, or the placement it is built from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MachineError {
    /// A torus of more dimensions than the mapper routes.
    #[error("torus: {dims} dimensions; mapping supports at most {max}")]
    TorusDimensions {
        /// The torus's dimensions.
        dims: usize,
        /// The most the mapper supports.
        max: usize,
    },
    /// A network graph with more hosts than the mapper routes.
    #[error("network {network}: {hosts} hosts; graph networks are routed for at most {max}")]
    NetworkHosts {
        /// The network's name.
        network: String,
        /// Hosts asked for.
        hosts: usize,
        /// The most the mapper routes ([`crate::MAX_GRAPH_NODES`]).
        max: usize,
    },
    /// A host index beyond the network's hosts, or listed twice.
    #[error("network {network}: host index {index} is unknown or listed twice")]
    HostIndex {
        /// The network's name.
        network: String,
        /// The index.
        index: usize,
    },
    /// Two hosts of a network graph that no path joins.
    #[error("network {network}: no path from host {from} to host {to}")]
    NoPath {
        /// The network's name.
        network: String,
        /// The first host's name.
        from: String,
        /// The second host's name.
        to: String,
    },
    /// A name that is not a host of the network.
    #[error("{field}: `{name}` is not a host of the network")]
    NotAHost {
        /// Where the name comes from, e.g. `network.hosts`.
        field: &'static str,
        /// The name.
        name: String,
    },
    /// A flat machine of zero nodes.
    #[error("flat machine: nodes must be >= 1")]
    NoNodes,
    /// More nodes than the mapper supports.
    #[error("{field} {nodes}: too many nodes (at most {max})")]
    TooManyNodes {
        /// The field, e.g. `flat.nodes`.
        field: &'static str,
        /// The nodes asked for.
        nodes: usize,
        /// The most supported.
        max: usize,
    },
    /// Zero ranks per node.
    #[error("ranks_per_node must be >= 1, got 0")]
    ZeroRanksPerNode,
    /// More slots than the mapper supports.
    #[error("{} x {} per node (the largest node's) = {slots} slots; at most {max} are supported", count128(*.nodes, "node"), count(*.ranks_per_node, "rank"))]
    TooManySlots {
        /// Nodes.
        nodes: u128,
        /// Ranks per node (the largest node's).
        ranks_per_node: usize,
        /// Their product.
        slots: u128,
        /// The most supported ([`crate::MAX_TASKS`]).
        max: usize,
    },
    /// A per-node slot count list of the wrong length.
    #[error("ranks_per_node: {counts} slot counts for {nodes} nodes")]
    SlotCounts {
        /// Counts given.
        counts: usize,
        /// The machine's nodes.
        nodes: usize,
    },
    /// The inside of a node is not a tree.
    #[error("intra: mapping needs a tree (kind = \"tree\" or an hwloc kind)")]
    IntraNotTree,
    /// A node tree whose PU count is not the ranks per node.
    #[error("intra: the node tree has {} but a node runs {}", count(*.pus, "PU"), count(*.ranks_per_node, "rank"))]
    NodeTree {
        /// PUs of the tree.
        pus: usize,
        /// Ranks per node of the machine.
        ranks_per_node: usize,
    },
    /// A list of node names of the wrong length.
    #[error("nodes: {} for {}", count(*.names, "name"), count(*.nodes, "node"))]
    NodeNames {
        /// Names given.
        names: usize,
        /// The machine's nodes.
        nodes: usize,
    },
    /// A node name given twice.
    #[error("nodes: `{name}` is named twice")]
    DuplicateNode {
        /// The name.
        name: String,
    },
    /// An empty node name, or one with white space, a control character or a
    /// character of [`crate::NODE_NAME_FORBIDDEN`].
    #[error(
        "nodes: names must be non-empty, without spaces, control characters or any of \
         `=#,:[]\"'` (the rankfile and SLURM_HOSTFILE cannot carry them), got `{name}`"
    )]
    NodeName {
        /// The name.
        name: String,
    },
    /// A node name the torus does not have.
    #[error("node `{node}` is not a node of the torus")]
    NotATorusNode {
        /// The name.
        node: String,
    },
    /// A rank on a node the machine does not have.
    #[error("rank {rank} runs on `{node}`, which is not a node of the machine")]
    UnknownNode {
        /// The rank.
        rank: usize,
        /// The node's name.
        node: String,
    },
    /// A node given more ranks than it has slots.
    #[error("node `{node}` runs more than {slots} ranks (rank {rank} is one too many)")]
    NodeFull {
        /// The node's name.
        node: String,
        /// Its slots.
        slots: usize,
        /// The first rank too many.
        rank: usize,
    },
    /// A node given fewer ranks than it has slots.
    #[error("node `{node}` runs {ranks} ranks; the machine has {slots} slots there")]
    NodeRanks {
        /// The node's name.
        node: String,
        /// Ranks it runs.
        ranks: usize,
        /// Its slots.
        slots: usize,
    },
    /// A placement with PUs whose nodes run different numbers of ranks (a node tree
    /// needs the same number of ranks on every node; without PUs nodes may differ).
    #[error("placement: node `{first}` runs {first_ranks} ranks but node `{node}` runs {ranks}; a tree inside the nodes needs the same number of ranks on every node")]
    UnevenNodes {
        /// The first node's name.
        first: String,
        /// Ranks on it.
        first_ranks: usize,
        /// A node that differs.
        node: String,
        /// Ranks on that node.
        ranks: usize,
    },
    /// A rank of a placement without a PU.
    #[error("placement: rank {rank} is not bound to a PU")]
    Unbound {
        /// The rank.
        rank: usize,
    },
    /// Two ranks of a node bound to the same PU.
    #[error("placement: ranks {low} and {high} of node `{node}` are bound to the same PU {pu}")]
    SharedPu {
        /// The lower rank.
        low: usize,
        /// The higher rank.
        high: usize,
        /// The node's name.
        node: String,
        /// The PU.
        pu: usize,
    },
    /// Nodes whose ranks sit on PUs arranged differently.
    #[error(
        "placement: the ranks of node `{node}` sit on PUs arranged unlike those of node `{first}`"
    )]
    PuArrangement {
        /// The node that differs.
        node: String,
        /// The first node.
        first: String,
    },
}

/// Task counts against slot counts, and strategies that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// A pattern that does not fill the machine exactly.
    #[error("the pattern has {} but the machine has {} ({} x {} per node)", count(*.tasks, "task"), count(*.slots, "slot"), count(*.nodes, "node"), count(*.ranks_per_node, "rank"))]
    TasksSlots {
        /// Tasks of the pattern.
        tasks: usize,
        /// Slots of the machine.
        slots: usize,
        /// Nodes of the machine.
        nodes: usize,
        /// Ranks per node.
        ranks_per_node: usize,
    },
    /// More tasks than the slots the machine's nodes have.
    #[error("the job has {} but the machine has {} ({machine})", count(*.tasks, "task"), count(*.slots, "slot"))]
    TooFewSlots {
        /// Tasks of the job.
        tasks: usize,
        /// Slots the nodes have.
        slots: usize,
        /// The machine's description.
        machine: String,
    },
    /// A mapping that is not over the machine's slots.
    #[error("fit_to_slots: a mapping of {tasks} tasks onto {slots} slots")]
    MappingSlots {
        /// The mapping's length.
        tasks: usize,
        /// The machine's slots.
        slots: usize,
    },
    /// A graph with more tasks than a recording's `# host` lines name.
    #[error("the graph has {tasks} tasks but the `# host` lines name {hosts}")]
    RecordedHosts {
        /// Tasks of the graph.
        tasks: usize,
        /// Ranks the host lines name.
        hosts: usize,
    },
    /// No strategy asked for applies to the pattern and machine.
    #[error("none of the strategies applies (skipped: {})", .skipped.join(", "))]
    NoStrategy {
        /// The strategies skipped, with why.
        skipped: Vec<String>,
    },
    /// A step that cannot fail did (a broken invariant, reported rather than a panic).
    #[error("internal: {what}")]
    Internal {
        /// What went wrong.
        what: &'static str,
    },
}

/// A file format the mapper writes or reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// An Open MPI rankfile.
    Rankfile,
    /// Cray MPICH's `MPICH_RANK_ORDER`.
    MpichRankOrder,
    /// A `SLURM_HOSTFILE`.
    Hostfile,
    /// The mapping as JSON.
    MappingJson,
    /// An SMPI hostfile for SimGrid.
    SmpiHostfile,
    /// The `# host RANK NAME` lines of a recorded run.
    Recording,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rankfile => "rankfile",
            Self::MpichRankOrder => "MPICH_RANK_ORDER",
            Self::Hostfile => "hostfile",
            Self::MappingJson => "mapping JSON",
            Self::SmpiHostfile => "SMPI hostfile",
            Self::Recording => "recording",
        })
    }
}

/// What is wrong with an export (a rankfile, `MPICH_RANK_ORDER`, a hostfile, the
/// mapping's JSON, a SimGrid platform) or with such a file read back, with the format
/// and, for a line, its number and text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A line that cannot be read.
    #[error("{format} line {line}: {what}: `{text}`")]
    Line {
        /// The format.
        format: Format,
        /// The line, from 1.
        line: usize,
        /// What is wrong, with what was expected.
        what: String,
        /// The line's text.
        text: String,
    },
    /// An item of a list that cannot be read.
    #[error("{format}: `{item}` is not a rank or range")]
    Item {
        /// The format.
        format: Format,
        /// The item.
        item: String,
    },
    /// A rank the file does not place.
    #[error("{format}: rank {rank} is missing")]
    MissingRank {
        /// The format.
        format: Format,
        /// The rank.
        rank: usize,
    },
    /// A rank a recording gives no host.
    #[error("recording: no `# host {rank} …` line for rank {rank}")]
    NoHostLine {
        /// The rank.
        rank: usize,
    },
    /// A recording whose host list is empty.
    #[error("the recording names no host: no machine to map onto")]
    NoHosts,
    /// A list with more or fewer entries than ranks.
    #[error("{format}: {entries} entries for {ranks} ranks")]
    Entries {
        /// The format.
        format: Format,
        /// Entries in the list.
        entries: usize,
        /// Ranks expected.
        ranks: usize,
    },
    /// A job that leaves slots empty, which `MPICH_RANK_ORDER` cannot say.
    #[error("MPICH_RANK_ORDER: {ranks} ranks on a machine of {slots} slots leave slots empty, which this form cannot say; use a rankfile or a SLURM_HOSTFILE")]
    EmptySlots {
        /// Ranks of the job.
        ranks: usize,
        /// Slots the machine's nodes have.
        slots: usize,
    },
    /// A rank whose slot and node disagree.
    #[error("{format}: rank {rank} has slot {slot} but node `{node}`")]
    SlotNode {
        /// The format.
        format: Format,
        /// The rank.
        rank: usize,
        /// Its slot.
        slot: usize,
        /// Its node (`?` if none is given).
        node: String,
    },
    /// Two ranks on one slot.
    #[error("{format}: ranks {first} and {second} are both on slot {slot}")]
    SharedSlot {
        /// The format.
        format: Format,
        /// The lower rank.
        first: usize,
        /// The other rank.
        second: usize,
        /// The slot.
        slot: usize,
    },
    /// A rank in a slot beyond the machine's.
    #[error("{format}: rank {rank} is in slot {slot}, the machine has {slots} slots")]
    SlotOutOfRange {
        /// The format.
        format: Format,
        /// The rank.
        rank: usize,
        /// Its slot.
        slot: usize,
        /// The machine's slots.
        slots: usize,
    },
    /// SimGrid options out of range.
    #[error("simgrid options: loopback bandwidth {loopback_bandwidth} and host speed {host_speed} must be > 0, loopback latency {loopback_latency} >= 0")]
    SimgridOptions {
        /// Loopback bandwidth, bytes/s.
        loopback_bandwidth: f64,
        /// Host speed, flop/s.
        host_speed: f64,
        /// Loopback latency, s.
        loopback_latency: f64,
    },
    /// A torus that SimGrid's `TORUS` cluster cannot describe.
    #[error("simgrid: a TORUS cluster has one link bandwidth and no injection limit; this torus has link bandwidths {link_bandwidth:?} and injection bandwidth {injection_bandwidth:?} (use the explicit form)")]
    TorusCluster {
        /// The torus's link bandwidths.
        link_bandwidth: Vec<f64>,
        /// Its injection bandwidth.
        injection_bandwidth: Option<f64>,
    },
    /// The ECMP platform form asked for on a network whose equal-cost split is not
    /// bundle-equivalent.
    #[error("simgrid: the ECMP form needs a network whose equal-cost paths split evenly over bundles of parallel links (a fat tree, or unique equal-cost paths); network {network:?} is not one (use the single-path form)")]
    EcmpPlatform {
        /// The network's name.
        network: String,
    },
    /// A flat machine, which has no network to simulate.
    #[error("simgrid: a flat machine has no network to simulate; describe it as a torus or a network graph")]
    FlatPlatform,
}

/// What went wrong building a reordered communicator or agreeing on its inputs; every
/// rank of a collective call returns an error (the ranks that did not fail name the
/// first one that did).
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MpiError {
    /// A rank passed a mapping of the wrong length.
    #[error(
        "rank {rank} passed a mapping of {tasks} tasks but the communicator has {ranks} ranks"
    )]
    MappingLength {
        /// The lowest such rank.
        rank: usize,
        /// Its mapping's tasks.
        tasks: u64,
        /// The communicator's size.
        ranks: usize,
    },
    /// MPI returned no communicator.
    #[error("{call} returned no communicator")]
    NoCommunicator {
        /// The MPI call.
        call: &'static str,
    },
    /// Cartesian `dims` and `periods` of different lengths, or empty.
    #[error("Cartesian grid: {dims} dims and {periods} periods; both need the same length >= 1")]
    GridLengths {
        /// Entries of `dims`.
        dims: usize,
        /// Entries of `periods`.
        periods: usize,
    },
    /// A Cartesian extent below 1.
    #[error("Cartesian grid: dims[{dim}] = {extent}; extents must be >= 1")]
    GridExtent {
        /// The dimension.
        dim: usize,
        /// Its extent.
        extent: i32,
    },
    /// A Cartesian grid with more or fewer positions than ranks.
    #[error("Cartesian grid {dims:?} has {} positions but the communicator has {ranks} ranks", .positions.map_or_else(|| "too many".to_string(), |n| n.to_string()))]
    GridSize {
        /// The extents.
        dims: Vec<i32>,
        /// Their product (`None`: it overflows).
        positions: Option<i64>,
        /// The communicator's size.
        ranks: usize,
    },
    /// A broadcast root outside the communicator.
    #[error("broadcast_map: root {root} is not a rank of a communicator of {ranks} ranks")]
    Root {
        /// The root.
        root: i32,
        /// The communicator's size.
        ranks: i32,
    },
    /// The root of a broadcast passed no mapping.
    #[error("broadcast_map: the root (rank {root}) passed no mapping")]
    NoRootMapping {
        /// The root.
        root: i32,
    },
    /// A placement of more or fewer ranks than the communicator has.
    #[error("{source_name}: {placed} ranks are placed but the communicator has {ranks}")]
    PlacedRanks {
        /// The placement's description.
        source_name: String,
        /// Ranks it places.
        placed: usize,
        /// The communicator's size.
        ranks: usize,
    },
    /// A mapping whose length is not the placement's ranks.
    #[error("a mapping of {tasks} tasks for {placed} placed ranks")]
    MappingForPlaced {
        /// The mapping's tasks.
        tasks: usize,
        /// Ranks placed.
        placed: usize,
    },
    /// `COPR_EMULATE_NODE_SIZE` that is neither a count >= 1 nor a list of them.
    #[error("{variable}={value}: expected a number of ranks per node >= 1, or a count per node (`3,2,1`, `4(x2),1`) each >= 1")]
    EmulatedNodeSize {
        /// The environment variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// Emulated node sizes that place fewer ranks than `MPI_COMM_WORLD` has.
    #[error("{variable}={value}: the emulated nodes hold {placed} ranks but MPI_COMM_WORLD rank {world_rank} is in the communicator")]
    EmulatedRanks {
        /// The environment variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// Ranks the nodes hold.
        placed: usize,
        /// The world rank beyond them.
        world_rank: usize,
    },
    /// A mapping that puts a task of the job on a slot no rank runs on.
    #[error(
        "the mapping puts task {task} of the job's {ranks} on slot {slot}, where no rank runs"
    )]
    TaskOnEmptySlot {
        /// The task.
        task: usize,
        /// The job's ranks.
        ranks: usize,
        /// The slot.
        slot: usize,
    },
    /// Another rank failed a step of a collective call.
    #[error("rank {rank} {what}")]
    OtherRank {
        /// The lowest failing rank.
        rank: usize,
        /// What it could not do.
        what: String,
    },
    /// Ranks that describe the machine differently.
    #[error("rank {rank} describes the machine otherwise than rank 0 (the environment differs)")]
    MachineDiffers {
        /// The first rank that differs.
        rank: usize,
    },
    /// A machine file with fewer slots than the communicator has ranks.
    #[error("{}: {slots} slots ({nodes} nodes of up to {ranks_per_node} ranks) but the communicator has {ranks} ranks", .file.display())]
    FileSlots {
        /// The machine file.
        file: PathBuf,
        /// Its slots.
        slots: usize,
        /// Its nodes.
        nodes: usize,
        /// Its ranks per node.
        ranks_per_node: usize,
        /// The communicator's size.
        ranks: usize,
    },
    /// A placement file that does not place a rank of the communicator.
    #[error("{}: places {placed} ranks but MPI_COMM_WORLD rank {world_rank} is in the communicator", .file.display())]
    FilePlaces {
        /// The placement file.
        file: PathBuf,
        /// Ranks it places.
        placed: usize,
        /// The world rank beyond them.
        world_rank: usize,
    },
    /// Rank 0 passed no pattern.
    #[error("rank 0 passed no pattern")]
    NoPattern,
    /// A pattern whose tasks are not the communicator's ranks.
    #[error("a pattern of {tasks} tasks for a communicator of {ranks} ranks")]
    PatternTasks {
        /// The pattern's tasks.
        tasks: usize,
        /// The communicator's size.
        ranks: usize,
    },
    /// Rank 0 failed; its message, on the other ranks.
    #[error("rank 0: {message}")]
    OnRoot {
        /// Rank 0's error message.
        message: String,
    },
    /// A graph communicator larger than a pattern can be.
    #[error("graph: {ranks} ranks; patterns have at most {max} tasks")]
    GraphRanks {
        /// The communicator's size.
        ranks: usize,
        /// The most tasks ([`crate::MAX_TASKS`]).
        max: usize,
    },
    /// A destination that is not a rank.
    #[error("graph: destination {destination} is not a rank of a communicator of {ranks} ranks")]
    GraphDestination {
        /// The destination.
        destination: usize,
        /// The communicator's size.
        ranks: usize,
    },
    /// More edges than are gathered.
    #[error("graph: {edges} edges; at most 2^30 are gathered")]
    GraphEdges {
        /// The edges of all ranks.
        edges: u64,
    },
}
