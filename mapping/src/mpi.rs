//! Applying a mapping inside a running MPI job (feature `mpi`): a reordered
//! communicator, a Cartesian communicator whose grid positions follow the mapping, and
//! the machine built from where the ranks run.
//!
//! ```text
//! placement (discover_nodes | placement file)  -> machine_from_placement
//!   -> (MapMachine, slot_of_rank)               -> baseline / optimise -> map (task -> slot)
//!   -> map_to_ranks(map, slot_of_rank)          (task -> rank of comm)
//!   -> cart_create(comm, dims, periods, ·)      (or reorder for a plain communicator)
//! ```
//!
//! Open MPI never reorders ranks itself (`reorder = 1` returns the identity), so the
//! mapping is applied with `MPI_Comm_split` (one color, key = new rank) and the
//! Cartesian communicator is created from the split one with `reorder = 0`.
//!
//! Every function here is collective over its communicator unless it says otherwise.
//! Their argument checks are agreed on before anything else happens: when the
//! arguments are wrong on any rank, every rank returns the same error, and none waits
//! forever in a later call.

use std::path::{Path, PathBuf};

use copr_topology::{NodeTree, Placement};
use mpi::topology::{CartesianCommunicator, Color, Communicator, Group, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use super::{MapMachine, Perm};
use crate::errors::{MachineError, MapError, MpiError};
use copr::error::{Error, Result};
use copr::layout::fnv1a;

/// Longest processor name exchanged by [`discover_nodes`].
const NAME_BYTES: usize = 256;

/// A fingerprint of a mapping and the grid it is applied to.
fn fingerprint(map: &Perm, dims: &[i32], periods: &[bool]) -> u64 {
    let mut bytes = Vec::with_capacity(8 * (map.len() + dims.len() + 2) + periods.len());
    bytes.extend((map.len() as u64).to_le_bytes());
    for &s in map.forward() {
        bytes.extend((s as u64).to_le_bytes());
    }
    bytes.extend((dims.len() as u64).to_le_bytes());
    for &d in dims {
        bytes.extend(d.to_le_bytes());
    }
    bytes.extend(periods.iter().map(|&b| u8::from(b)));
    fnv1a(&bytes)
}

/// Collective check of the arguments: every rank contributes the length of its mapping
/// and the fingerprint of all its arguments, and every rank reaches the same verdict
/// from the same gathered table.
fn agree<C: Communicator>(comm: &C, len: usize, fp: u64) -> Result<()> {
    let p = comm.size() as usize;
    let mine = [len as u64, fp];
    let mut all = vec![0u64; 2 * p];
    comm.all_gather_into(&mine[..], &mut all[..]);
    if let Some((r, c)) = all.chunks(2).enumerate().find(|(_, c)| c[0] != p as u64) {
        return Err(MpiError::MappingLength {
            rank: r,
            tasks: c[0],
            ranks: p,
        }
        .into());
    }
    let expected = all[1];
    if let Some((rank, c)) = all.chunks(2).enumerate().find(|(_, c)| c[1] != expected) {
        return Err(Error::Inconsistent {
            what: "mapping or grid",
            rank,
            found: c[1],
            expected,
        });
    }
    Ok(())
}

/// The split of `comm` in which rank `s` gets rank `map.inverse()[s]` (arguments
/// already agreed on).
fn split<C: Communicator>(comm: &C, map: &Perm) -> Result<SimpleCommunicator> {
    let key = map.inverse()[comm.rank() as usize] as i32;
    comm.split_by_color_with_key(Color::with_value(0), key)
        .ok_or_else(|| {
            MpiError::NoCommunicator {
                call: "MPI_Comm_split",
            }
            .into()
        })
}

/// Collective: a communicator with the processes of `comm` renumbered by the mapping
/// `map` (task → rank of `comm`): the process with rank `s` in `comm` gets rank
/// `map.inverse()[s]`, i.e. task `t` runs on the process of rank `map.apply(t)`.
///
/// When the job was launched packed, ranks of `comm` are slots and a mapping from
/// [`super::baseline`] or [`super::optimise`] can be passed as is; otherwise convert it
/// with [`map_to_ranks`].
///
/// # Errors
/// [`MpiError`] if some rank's `map` does not have `comm.size()` tasks (naming the
/// lowest such rank), [`Error::Inconsistent`] if the ranks passed different mappings;
/// the same error on every rank.
pub fn reorder<C: Communicator>(comm: &C, map: &Perm) -> Result<SimpleCommunicator> {
    agree(comm, map.len(), fingerprint(map, &[], &[]))?;
    split(comm, map)
}

/// Checks a grid description against the communicator size.
fn check_grid(dims: &[i32], periods: &[bool], size: i32) -> Result<()> {
    if dims.is_empty() || dims.len() != periods.len() {
        return Err(MpiError::GridLengths {
            dims: dims.len(),
            periods: periods.len(),
        }
        .into());
    }
    if let Some((k, d)) = dims.iter().enumerate().find(|(_, &d)| d < 1) {
        return Err(MpiError::GridExtent { dim: k, extent: *d }.into());
    }
    let product = dims
        .iter()
        .try_fold(1i64, |acc, &d| acc.checked_mul(i64::from(d)));
    if product != Some(i64::from(size)) {
        return Err(MpiError::GridSize {
            dims: dims.to_vec(),
            positions: product,
            ranks: size as usize,
        }
        .into());
    }
    Ok(())
}

/// Collective: the Cartesian communicator an application creates instead of calling
/// `MPI_Cart_create`, with the grid positions placed by `map` (task → rank of `comm`;
/// task `t` is the grid position `MPI_Cart_create` gives rank `t`, row-major, last
/// dimension fastest, as in [`super::CartGrid::coords`]).
///
/// `comm` is first reordered with [`reorder`], then the grid is created with
/// `reorder = false`, so the process with rank `s` in `comm` holds rank
/// `map.inverse()[s]` of the grid and its coordinates. Neighbours are found with the
/// usual `MPI_Cart_shift` on the result.
///
/// # Errors
/// As [`reorder`] (the grid's `dims` and `periods` are part of what must be equal on
/// every rank), and [`MpiError`] if `dims` and `periods` differ in length or are
/// empty, an extent is below 1, or `Π dims != comm.size()`; the same error on every
/// rank.
pub fn cart_create<C: Communicator>(
    comm: &C,
    dims: &[i32],
    periods: &[bool],
    map: &Perm,
) -> Result<CartesianCommunicator> {
    agree(comm, map.len(), fingerprint(map, dims, periods))?;
    // the arguments are equal on every rank now, so every rank reaches the same verdict
    check_grid(dims, periods, comm.size())?;
    let reordered = split(comm, map)?;
    reordered
        .create_cartesian_communicator(dims, periods, false)
        .ok_or_else(|| {
            MpiError::NoCommunicator {
                call: "MPI_Cart_create",
            }
            .into()
        })
}

/// Collective: the mapping of the root rank, on every rank — for mappings computed on
/// one rank only (the optimiser stops on a time budget, so ranks computing it
/// independently may disagree). Pass `Some(map)` on `root`; the argument is ignored on
/// the other ranks.
///
/// # Errors
/// [`MpiError`] on every rank if `root` passes `None`, or `root` is not a rank of
/// `comm` (then nothing is sent).
pub fn broadcast_map<C: Communicator>(comm: &C, root: i32, map: Option<&Perm>) -> Result<Perm> {
    if !(0..comm.size()).contains(&root) {
        return Err(MpiError::Root {
            root,
            ranks: comm.size(),
        }
        .into());
    }
    let proc = comm.process_at_rank(root);
    let mut len = match map {
        Some(m) if comm.rank() == root => m.len() as u64,
        _ => u64::MAX,
    };
    proc.broadcast_into(&mut len);
    if len == u64::MAX {
        return Err(MpiError::NoRootMapping { root }.into());
    }
    let mut fwd: Vec<u64> = match map {
        Some(m) if comm.rank() == root => m.forward().iter().map(|&s| s as u64).collect(),
        _ => vec![0; len as usize],
    };
    proc.broadcast_into(&mut fwd[..]);
    Perm::from_forward(fwd.into_iter().map(|s| s as usize).collect())
}

/// Collective: the node every rank of `comm` runs on, by rank, from
/// `MPI_Get_processor_name` (names longer than 256 bytes are truncated). Turn it into a
/// placement with `Placement::from_pairs(nodes.iter().map(|n| (n.as_str(), None)))`.
///
/// Unlike [`copr::gain::mpi::discover_placement`] it does not read the CPU binding,
/// so it cannot fail on one rank only.
///
/// # Errors
/// None at present; the `Result` leaves room for checks.
pub fn discover_nodes<C: Communicator>(comm: &C) -> Result<Vec<String>> {
    let name = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
    let mut mine = [0u8; NAME_BYTES];
    let bytes = name.as_bytes();
    let len = bytes.len().min(NAME_BYTES);
    mine[..len].copy_from_slice(&bytes[..len]);
    let p = comm.size() as usize;
    let mut all = vec![0u8; p * NAME_BYTES];
    comm.all_gather_into(&mine[..], &mut all[..]);
    Ok(all
        .chunks(NAME_BYTES)
        .map(|c| {
            let end = c.iter().position(|&b| b == 0).unwrap_or(NAME_BYTES);
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect())
}

/// The machine a placement describes and where each rank sits on it (not collective).
///
/// Returns `(machine, slot_of_rank)`:
/// - `machine` is [`MapMachine::flat`]`(nodes, k)` with the placement's node names, nodes
///   numbered in order of first appearance in rank order (so node 0 holds rank 0), `k`
///   the most ranks any node runs, and each node with as many slots as it runs ranks
///   ([`MapMachine::with_slot_counts`]: nodes that run fewer than `k` miss their last
///   slots);
/// - `slot_of_rank.apply(r)` is the slot of rank `r`: `node·k + i` where `i` counts the
///   ranks of lower number on the same node (PUs in the placement are not used). Its
///   entries after the ranks are the missing slots, in slot order, as
///   [`MapMachine::slots_of`] gives them, so that it is a permutation of
///   `machine.slots()` (a pattern padded to that many tasks maps onto it; see
///   [`map_to_job_ranks`]). It is the identity exactly when the ranks were placed
///   packed (ranks `0..k` on the first node, and so on) on nodes of equal size.
///
/// ```
/// use copr_mapping::mpi::machine_from_placement;
/// use copr_topology::Placement;
/// // round-robin over two nodes
/// let pl = Placement::parse("0 a\n1 b\n2 a\n3 b\n", None).unwrap();
/// let (m, slot) = machine_from_placement(&pl).unwrap();
/// assert_eq!((m.nodes(), m.ranks_per_node(), m.node_name(1)), (2, 2, "b"));
/// assert_eq!(slot.forward(), [0, 2, 1, 3]);
/// // nodes of 2 and 1 ranks: slot 3 (core 1 of node b) is missing
/// let pl = Placement::parse("0 a\n1 b\n2 a\n", None).unwrap();
/// let (m, slot) = machine_from_placement(&pl).unwrap();
/// assert_eq!((m.slots(), m.used_slots(), m.slot_count(1)), (4, 3, 1));
/// assert_eq!(slot.forward(), [0, 2, 1, 3]);
/// ```
///
/// # Errors
/// [`MachineError`] if a node name is not usable in launcher files (whitespace), or
/// the placement places no rank.
pub fn machine_from_placement(placement: &Placement) -> Result<(MapMachine, Perm)> {
    let counts = placement.ranks_per_node();
    let most = counts.iter().copied().max().unwrap_or(0);
    let mut machine = MapMachine::flat(placement.num_nodes(), most)?;
    machine.set_node_names(placement.node_names().map(str::to_string).collect())?;
    let machine = machine.with_slot_counts(counts)?;
    let names: Vec<&str> = (0..placement.ranks())
        .map(|r| placement.node_name(placement.node_of(r)))
        .collect();
    let slot = machine.slots_of(&names)?;
    Ok((machine, slot))
}

/// The machine a placement with PUs describes, inside every node the tree `tree` of
/// the PUs the ranks sit on (not collective): as [`machine_from_placement`], but the
/// ranks of a node take its slots in the order of their PUs (`placement.pu_of`,
/// logical indices in `tree`), and the machine gets `tree` restricted to those PUs
/// ([`NodeTree::restricted`]) as its node tree, so that mappings and metrics see which
/// ranks share a package or a cache.
///
/// `tree` describes every node (the same hardware); the ranks of each node must sit on
/// distinct PUs, and every node's PUs must form the same restricted tree (as node
/// 0's, in PU order).
///
/// ```
/// use copr_mapping::mpi::machine_from_bound_placement;
/// use copr_topology::{Level, LevelCosts, NodeTree, Placement};
/// let tree = NodeTree::from_shape("pack:2 core:2", &LevelCosts::default()).unwrap();
/// // two nodes; on each, one rank per package (PUs 0 and 2), listed out of order
/// let pl = Placement::parse("0 a 2\n1 a 0\n2 b 0\n3 b 2\n", None).unwrap();
/// let (m, slot) = machine_from_bound_placement(&pl, &tree).unwrap();
/// assert_eq!((m.nodes(), m.ranks_per_node()), (2, 2));
/// assert_eq!(slot.forward(), [1, 0, 2, 3]);
/// assert_eq!(m.node_tree().unwrap().level(0, 1), Level::Machine);
/// ```
///
/// # Errors
/// As [`machine_from_placement`], and [`MachineError`] if the nodes run different
/// numbers of ranks, a rank has no PU, two ranks of a node share one, or a node's PUs
/// differ in shape from node 0's;
/// [`Error::Topology`] if a PU is not one of `tree`'s.
pub fn machine_from_bound_placement(
    placement: &Placement,
    tree: &NodeTree,
) -> Result<(MapMachine, Perm)> {
    let (machine, by_rank) = machine_from_placement(placement)?;
    let (n, k) = (machine.nodes(), machine.ranks_per_node());
    let c0 = machine.slot_count(0);
    if let Some(node) = (0..n).find(|&node| machine.slot_count(node) != c0) {
        return Err(MachineError::UnevenNodes {
            first: placement.node_name(0).to_string(),
            first_ranks: c0,
            node: placement.node_name(node).to_string(),
            ranks: machine.slot_count(node),
        }
        .into());
    }
    // the ranks of every node, by their slot in rank order
    let mut ranks_of = vec![0usize; n * k];
    for r in 0..placement.ranks() {
        ranks_of[by_rank.apply(r)] = r;
    }
    let description = format!(
        "{} restricted to the PUs the ranks are bound to",
        tree.description()
    );
    let mut fwd = vec![0usize; placement.ranks()];
    let mut first: Option<NodeTree> = None;
    for node in 0..n {
        let mut pus = Vec::with_capacity(k);
        for &r in &ranks_of[node * k..(node + 1) * k] {
            let pu = placement
                .pu_of(r)
                .ok_or_else(|| Error::from(MachineError::Unbound { rank: r }))?;
            pus.push((pu, r));
        }
        pus.sort_unstable();
        if let Some(w) = pus.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(MachineError::SharedPu {
                low: w[0].1.min(w[1].1),
                high: w[0].1.max(w[1].1),
                node: placement.node_name(node).to_string(),
                pu: w[0].0,
            }
            .into());
        }
        for (i, &(_, r)) in pus.iter().enumerate() {
            fwd[r] = node * k + i;
        }
        let list: Vec<usize> = pus.iter().map(|&(pu, _)| pu).collect();
        let here = tree.restricted(&list, description.clone())?;
        match &first {
            None => first = Some(here),
            Some(t) if *t == here => {}
            Some(_) => {
                return Err(MachineError::PuArrangement {
                    node: placement.node_name(node).to_string(),
                    first: placement.node_name(0).to_string(),
                }
                .into())
            }
        }
    }
    let machine = match first {
        Some(t) => machine.with_node_tree(t)?,
        None => machine,
    };
    Ok((machine, Perm::from_forward(fwd)?))
}

/// Collective: [`machine_from_placement`] of the placement file `file` (`rank node
/// [pu]` per line, to emulate nodes or describe a launcher's placement), or of the
/// nodes [`discover_nodes`] finds when `file` is `None`.
///
/// # Errors
/// The file's errors ([`Error::Topology`]), [`MpiError`] if it places a number
/// of ranks other than `comm.size()`, and the errors of [`machine_from_placement`].
/// If any rank fails, every rank fails (the others with an error naming the lowest
/// failing rank).
pub fn discover_machine<C: Communicator>(
    comm: &C,
    file: Option<&Path>,
) -> Result<(MapMachine, Perm)> {
    let local = match file {
        Some(f) => Placement::from_file(f).map_err(Error::from),
        None => discover_nodes(comm)
            .map(|nodes| Placement::from_pairs(nodes.iter().map(|n| (n.as_str(), None)))),
    }
    .and_then(|pl| {
        let p = comm.size() as usize;
        if pl.ranks() != p {
            return Err(MpiError::PlacedRanks {
                source_name: pl.description().to_string(),
                placed: pl.ranks(),
                ranks: p,
            }
            .into());
        }
        machine_from_placement(&pl)
    });
    agreed(
        comm,
        local,
        "could not build the machine from its placement",
    )
}

/// The mapping `map` (task → slot) as task → rank of the communicator, for ranks that
/// sit on the slots `slot_of_rank` (rank → slot, as [`machine_from_placement`] returns
/// it): task `t` goes to the rank on slot `map.apply(t)`. Pass the result to
/// [`reorder`] or [`cart_create`]. Not collective.
///
/// # Errors
/// [`MpiError`] if the lengths differ.
pub fn map_to_ranks(map: &Perm, slot_of_rank: &Perm) -> Result<Perm> {
    if map.len() != slot_of_rank.len() {
        return Err(MpiError::MappingForPlaced {
            tasks: map.len(),
            placed: slot_of_rank.len(),
        }
        .into());
    }
    Ok(slot_of_rank.inverted().compose(map))
}

/// The mapping `map` (task → slot, over all of a machine's slots, the job's tasks
/// first as in a pattern padded with empty tasks) as task → rank of a communicator of
/// `ranks` ranks that sit on the slots `slot_of_rank` (rank → slot, the entries after
/// the ranks being the slots no rank runs on, as [`machine_from_placement`] and
/// [`machine_of`] return it): task `t < ranks` goes to the rank on slot `map.apply(t)`.
/// The result has `ranks` entries; pass it to [`reorder`] or [`cart_create`]. When
/// `ranks == map.len()` it is [`map_to_ranks`]. Not collective.
///
/// ```
/// use copr_mapping::mpi::map_to_job_ranks;
/// use copr_mapping::Perm;
/// // 3 ranks on slots 0, 2, 1; slot 3 holds no rank
/// let slot = Perm::from_forward(vec![0, 2, 1, 3]).unwrap();
/// let map = Perm::from_forward(vec![2, 0, 1, 3]).unwrap();
/// assert_eq!(map_to_job_ranks(&map, &slot, 3).unwrap().forward(), [1, 0, 2]);
/// // task 2 on slot 3, where no rank runs
/// let bad = Perm::from_forward(vec![2, 0, 3, 1]).unwrap();
/// assert!(map_to_job_ranks(&bad, &slot, 3).is_err());
/// ```
///
/// # Errors
/// [`MpiError`] if the lengths differ, `ranks` exceeds them, or a task of the job is
/// on a slot no rank runs on.
pub fn map_to_job_ranks(map: &Perm, slot_of_rank: &Perm, ranks: usize) -> Result<Perm> {
    let all = map_to_ranks(map, slot_of_rank)?;
    if ranks > all.len() {
        return Err(MpiError::MappingForPlaced {
            tasks: all.len(),
            placed: ranks,
        }
        .into());
    }
    if let Some(t) = (0..ranks).find(|&t| all.apply(t) >= ranks) {
        return Err(MpiError::TaskOnEmptySlot {
            task: t,
            ranks,
            slot: map.apply(t),
        }
        .into());
    }
    Perm::from_forward(all.forward()[..ranks].to_vec())
}

/// Where [`machine_of`] finds the machine a communicator runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MachineSource {
    /// A machine file ([`MapMachine::from_file`]) with at least as many slots as the
    /// communicator has ranks (nodes may have different slot counts). When the file's
    /// node names include the host of every rank (`MPI_Get_processor_name`), each
    /// rank sits on the node it runs on (the ranks of a node on its first slots, in
    /// rank order; a host and a node name match also when they agree up to the first dot,
    /// as `n01` and `n01.cluster.example`); otherwise the ranks fill the slots in the
    /// launcher's packed order: rank `r` sits on the `r`-th slot the nodes have, in node
    /// order, and [`MappingReport::placement`] says so. With more slots
    /// than ranks, the mapper sees every node with the slots its ranks fill (the ranks
    /// of a running job cannot move to an empty slot).
    File(PathBuf),
    /// A placement file (`rank node [pu]` per line, as [`Placement::from_file`] reads)
    /// that places the ranks of `MPI_COMM_WORLD`; the communicator's ranks are looked
    /// up by their rank in `MPI_COMM_WORLD`.
    Placement(PathBuf),
    /// Emulated nodes: `k` consecutive ranks of `MPI_COMM_WORLD` per node (to test
    /// mappings on one host), each like this host inside (as for
    /// [`MachineSource::Discover`]).
    EmulatedNodes(usize),
    /// Emulated nodes of the given sizes: node `k` holds the next `counts[k]`
    /// consecutive ranks of `MPI_COMM_WORLD` (as `SLURM_TASKS_PER_NODE` says, e.g.
    /// 3, 2 and 1 ranks), each like this host inside; the counts may hold more ranks
    /// than the job has (the last nodes then run fewer, or none).
    EmulatedCounts(Vec<usize>),
    /// The nodes the ranks run on, found with `MPI_Comm_split_type` (shared memory).
    ///
    /// Inside the nodes, with the feature `hwloc`: when every rank is bound to a PU
    /// (hwloc's reading of its CPU binding), the ranks of a node are its slots in PU
    /// order and the machine's node tree is hwloc's tree of this host restricted to
    /// those PUs ([`machine_from_bound_placement`]), so that mappings keep neighbours
    /// in a package or cache. Otherwise (a rank unbound, two ranks of a node on one PU,
    /// nodes of different hardware, no hwloc) the nodes are flat, as without the
    /// feature; [`MappingReport::inside`] says which.
    Discover,
}

impl MachineSource {
    /// Environment variable naming a machine file ([`MachineSource::File`]).
    pub const ENV_MACHINE: &'static str = "COPR_MACHINE";
    /// Environment variable naming a placement file ([`MachineSource::Placement`]).
    pub const ENV_PLACEMENT: &'static str = "COPR_PLACEMENT";
    /// Environment variable giving the ranks per emulated node
    /// ([`MachineSource::EmulatedNodes`]), or the ranks of each emulated node in
    /// `SLURM_TASKS_PER_NODE` syntax (`3,2,1`, `4(x2),1`:
    /// [`MachineSource::EmulatedCounts`]).
    pub const ENV_EMULATE: &'static str = "COPR_EMULATE_NODE_SIZE";

    /// The source the environment names, the first set of `COPR_MACHINE`,
    /// `COPR_PLACEMENT`, `COPR_EMULATE_NODE_SIZE` (an empty value counts as unset);
    /// [`MachineSource::Discover`] when none is.
    ///
    /// # Errors
    /// [`MpiError`] if `COPR_EMULATE_NODE_SIZE` is neither an integer >= 1 nor a list
    /// of counts >= 1.
    pub fn from_env() -> Result<Self> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(f) = var(Self::ENV_MACHINE) {
            return Ok(Self::File(f.into()));
        }
        if let Some(f) = var(Self::ENV_PLACEMENT) {
            return Ok(Self::Placement(f.into()));
        }
        if let Some(k) = var(Self::ENV_EMULATE) {
            let text = k.to_string_lossy();
            let bad = || {
                Error::from(MpiError::EmulatedNodeSize {
                    variable: Self::ENV_EMULATE,
                    value: text.to_string(),
                })
            };
            let t = text.trim();
            if let Ok(k) = t.parse::<usize>() {
                return if k >= 1 {
                    Ok(Self::EmulatedNodes(k))
                } else {
                    Err(bad())
                };
            }
            return match copr_topology::expand_tasks_per_node(t) {
                Ok(c) if !c.is_empty() && c.iter().all(|&k| k >= 1) => Ok(Self::EmulatedCounts(c)),
                _ => Err(bad()),
            };
        }
        Ok(Self::Discover)
    }

    /// What the source is, for reports.
    pub fn describe(&self) -> String {
        match self {
            Self::File(f) => format!("machine file {}", f.display()),
            Self::Placement(f) => format!("placement file {}", f.display()),
            Self::EmulatedNodes(k) => format!("emulated nodes of {k} ranks"),
            Self::EmulatedCounts(c) => format!(
                "emulated nodes of {} ranks",
                c.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
            ),
            Self::Discover => "nodes found at run time".into(),
        }
    }
}

/// Collective: `local` if it is `Ok` on every rank; otherwise every rank fails, the
/// failing ones with their own error and the others with one naming the lowest
/// failing rank.
fn agreed<C: Communicator, T>(comm: &C, local: Result<T>, what: &str) -> Result<T> {
    let p = comm.size() as usize;
    let mut failed = vec![0u8; p];
    comm.all_gather_into(&u8::from(local.is_err()), &mut failed[..]);
    match local {
        Err(e) => Err(e),
        Ok(_) if failed.iter().any(|&f| f != 0) => {
            let r = failed.iter().position(|&f| f != 0).unwrap_or(0);
            Err(MpiError::OtherRank {
                rank: r,
                what: what.to_string(),
            }
            .into())
        }
        ok => ok,
    }
}

/// This process's rank in `MPI_COMM_WORLD`, for each rank of `comm` (one integer
/// gathered per rank).
fn world_ranks<C: Communicator>(comm: &C) -> Vec<usize> {
    let world = SimpleCommunicator::world();
    let mine = world.rank();
    let mut all = vec![0i32; comm.size() as usize];
    comm.all_gather_into(&mine, &mut all[..]);
    all.into_iter().map(|r| r as usize).collect()
}

/// The node key of every rank of `comm` (ranks with equal keys share a node), from
/// one integer per rank.
fn gather_keys<C: Communicator>(comm: &C, key: u64) -> Vec<u64> {
    let mut all = vec![0u64; comm.size() as usize];
    comm.all_gather_into(&key, &mut all[..]);
    all
}

/// Collective: the machine `comm` runs on, as `source` describes it, and the slot
/// of every rank of `comm` (rank → slot; see [`machine_from_placement`]).
///
/// Nothing of size `p²` is exchanged: a few integers per rank are gathered. The
/// ranks first agree that they read the same source (else every rank fails).
///
/// # Errors
/// The file's errors, [`MpiError`] if a machine file's slots or a placement's
/// ranks do not match, [`MachineError`] if nodes hold different numbers of ranks of
/// `comm`; if any rank fails, every rank fails.
pub fn machine_of<C: Communicator>(comm: &C, source: &MachineSource) -> Result<(MapMachine, Perm)> {
    machine_and_inside(comm, source).map(|(m, slot, _)| (m, slot))
}

/// A rank's binding as gathered: its PU, or one of these.
const UNBOUND: u64 = u64::MAX;
const UNREADABLE: u64 = u64::MAX - 1;

/// What the ranks' CPU bindings tell about the inside of their nodes.
enum Inside {
    /// Every rank's PU (logical index), and the hwloc tree of this process's node, the
    /// same on every node.
    Bound {
        pus: Vec<usize>,
        tree: Box<NodeTree>,
    },
    /// Why the nodes stay flat.
    Flat(String),
}

/// A fingerprint of a node tree's pair levels.
fn tree_fingerprint(tree: &NodeTree) -> u64 {
    let n = tree.num_pus();
    let mut bytes = Vec::with_capacity(8 + n * n);
    bytes.extend((n as u64).to_le_bytes());
    for a in 0..n {
        bytes.extend((0..n).map(|b| tree.level(a, b) as u8));
    }
    fnv1a(&bytes).min(UNREADABLE - 1)
}

/// Collective: every rank's PU and its node's tree, read with hwloc (feature `hwloc`),
/// or why not; the same verdict on every rank (two integers gathered per rank).
fn discover_inside<C: Communicator>(comm: &C) -> Inside {
    if !cfg!(feature = "hwloc") {
        return Inside::Flat("copr was built without hwloc".into());
    }
    let code = match copr_topology::current_binding_pu() {
        Ok(Some(pu)) => pu as u64,
        Ok(None) => UNBOUND,
        Err(_) => UNREADABLE,
    };
    let tree = (code < UNREADABLE)
        .then(|| NodeTree::from_this_machine(&copr_topology::LevelCosts::default()).ok())
        .flatten();
    let fp = tree.as_ref().map_or(UNREADABLE, tree_fingerprint);
    let mut all = vec![0u64; 2 * comm.size() as usize];
    comm.all_gather_into(&[code, fp][..], &mut all[..]);
    let codes: Vec<u64> = all.iter().step_by(2).copied().collect();
    let fps: Vec<u64> = all.iter().skip(1).step_by(2).copied().collect();
    if let Some(r) = codes.iter().position(|&c| c == UNREADABLE) {
        return Inside::Flat(format!("hwloc cannot read the CPU binding of rank {r}"));
    }
    if let Some(r) = codes.iter().position(|&c| c == UNBOUND) {
        return Inside::Flat(format!(
            "rank {r} is not bound to a PU (mpirun --bind-to core binds every rank)"
        ));
    }
    if let Some(r) = fps.iter().position(|&f| f == UNREADABLE) {
        return Inside::Flat(format!("hwloc cannot read the topology of rank {r}"));
    }
    if let Some(r) = fps.iter().position(|&f| f != fps[0]) {
        return Inside::Flat(format!(
            "hwloc finds other hardware under rank {r} than under rank 0"
        ));
    }
    match tree {
        Some(tree) => Inside::Bound {
            pus: codes.iter().map(|&c| c as usize).collect(),
            tree: Box::new(tree),
        },
        None => Inside::Flat("hwloc cannot read this node's topology".into()),
    }
}

/// The flat machine of the node keys `keys` (equal keys share a node), or with the
/// nodes' inside as `inside` tells; and a line saying which.
fn machine_of_keys(keys: &[u64], inside: Inside) -> Result<(MapMachine, Perm, String)> {
    let names: Vec<String> = keys.iter().map(|k| format!("node{k}")).collect();
    let flat = |why: String| {
        machine_from_placement(&Placement::from_pairs(
            names.iter().map(|n| (n.as_str(), None)),
        ))
        .map(|(m, slot)| (m, slot, format!("flat: {why}")))
    };
    match inside {
        Inside::Flat(why) => flat(why),
        Inside::Bound { pus, tree } => {
            let pl = Placement::from_pairs(
                names
                    .iter()
                    .zip(&pus)
                    .map(|(n, &pu)| (n.as_str(), Some(pu))),
            );
            match machine_from_bound_placement(&pl, &tree) {
                Ok((m, slot)) => {
                    let levels: Vec<String> = m
                        .node_tree()
                        .map(|t| {
                            t.levels_present()
                                .iter()
                                .filter(|&&l| l != copr_topology::Level::Pu)
                                .map(|l| l.to_string())
                                .collect()
                        })
                        .unwrap_or_default();
                    let line = format!(
                        "hwloc: ranks bound to PUs; two ranks of a node share a {}",
                        levels.join(" or a ")
                    );
                    Ok((m, slot, line))
                }
                Err(e) => flat(e.to_string()),
            }
        }
    }
}

/// What [`machine_and_inside`] says besides the machine.
#[derive(Debug, Clone, Default)]
struct Notes {
    /// For nodes found at run time or emulated: what is known inside them.
    inside: Option<String>,
    /// For a machine file that does not name the ranks' hosts: why they were placed
    /// in packed order.
    placement: Option<String>,
}

fn inside_note((m, s, l): (MapMachine, Perm, String)) -> (MapMachine, Perm, Notes) {
    let notes = Notes {
        inside: Some(l),
        placement: None,
    };
    (m, s, notes)
}

/// Collective: [`machine_of`], and for nodes found at run time or emulated, a line
/// saying what is known inside them (an hwloc tree from the ranks' bindings, or why
/// they are flat); for a machine file, a line when the ranks were placed packed.
fn machine_and_inside<C: Communicator>(
    comm: &C,
    source: &MachineSource,
) -> Result<(MapMachine, Perm, Notes)> {
    let p = comm.size() as usize;
    // the ranks must agree on the source before taking its collective steps
    let mut sources = vec![0u64; p];
    comm.all_gather_into(&fnv1a(source.describe().as_bytes()), &mut sources[..]);
    if let Some(r) = sources.iter().position(|&s| s != sources[0]) {
        return Err(MpiError::MachineDiffers { rank: r }.into());
    }
    let local = match source {
        MachineSource::File(f) => {
            // where the ranks run, when the file names those hosts
            let hosts = discover_nodes(comm).unwrap_or_default();
            MapMachine::from_file_for(f, Some(p)).and_then(|m| {
                if m.used_slots() < p {
                    return Err(MpiError::FileSlots {
                        file: f.clone(),
                        slots: m.used_slots(),
                        nodes: m.nodes(),
                        ranks_per_node: m.ranks_per_node(),
                        ranks: p,
                    }
                    .into());
                }
                match hosts_on_nodes(&m, &hosts) {
                    Ok((names, counts)) => {
                        let (m, slot) = fill_as_run(m, counts, &names)?;
                        Ok((m, slot, Notes::default()))
                    }
                    Err(r) => {
                        let (m, slot) = packed_fill(m, p)?;
                        let why = match hosts.get(r) {
                            Some(h) => format!(
                                "the file names no node `{h}` (rank {r}'s host), so the ranks fill its slots in packed order"
                            ),
                            None => "the ranks' hosts are unknown, so they fill the file's slots in packed order".to_string(),
                        };
                        let notes = Notes {
                            inside: None,
                            placement: Some(why),
                        };
                        Ok((m, slot, notes))
                    }
                }
            })
        }
        MachineSource::Placement(f) => {
            let world = world_ranks(comm);
            Placement::from_file(f).map_err(Error::from).and_then(|pl| {
                if let Some(&w) = world.iter().find(|&&w| w >= pl.ranks()) {
                    return Err(MpiError::FilePlaces {
                        file: f.clone(),
                        placed: pl.ranks(),
                        world_rank: w,
                    }
                    .into());
                }
                machine_from_placement(&Placement::from_pairs(
                    world.iter().map(|&w| (pl.node_name(pl.node_of(w)), None)),
                ))
                .map(|(m, slot)| (m, slot, Notes::default()))
            })
        }
        MachineSource::EmulatedNodes(k) => {
            let world = world_ranks(comm);
            let keys: Vec<u64> = world.iter().map(|&w| (w / k) as u64).collect();
            machine_of_keys(&keys, discover_inside(comm)).map(inside_note)
        }
        MachineSource::EmulatedCounts(counts) => {
            let world = world_ranks(comm);
            // the node of world rank w: the first whose cumulative count exceeds w
            let ends: Vec<usize> = counts
                .iter()
                .scan(0usize, |acc, &c| {
                    *acc = acc.saturating_add(c);
                    Some(*acc)
                })
                .collect();
            let placed = ends.last().copied().unwrap_or(0);
            let inside = discover_inside(comm);
            match world.iter().find(|&&w| w >= placed) {
                Some(&w) => Err(MpiError::EmulatedRanks {
                    variable: MachineSource::ENV_EMULATE,
                    value: counts
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    placed,
                    world_rank: w,
                }
                .into()),
                None => {
                    let keys: Vec<u64> = world
                        .iter()
                        .map(|&w| ends.partition_point(|&e| e <= w) as u64)
                        .collect();
                    machine_of_keys(&keys, inside).map(inside_note)
                }
            }
        }
        MachineSource::Discover => {
            // the lowest rank of comm on each node names the node
            let node = comm.split_shared(comm.rank());
            let lowest = node
                .group()
                .translate_rank(0, &comm.group())
                .unwrap_or(comm.rank());
            let keys = gather_keys(comm, lowest as u64);
            machine_of_keys(&keys, discover_inside(comm)).map(inside_note)
        }
    };
    agreed(comm, local, "could not build the machine")
}

/// The machine `m` with its first `ranks` slots filled in the launcher's packed order
/// (node by node, each up to its slot count), and the slot of every rank: each node
/// keeps the slots its ranks fill ([`MapMachine::with_slot_counts`]), and the
/// permutation lists the ranks' slots, then the slots no rank runs on (as
/// [`machine_from_placement`] returns it).
fn packed_fill(m: MapMachine, ranks: usize) -> Result<(MapMachine, Perm)> {
    let mut left = ranks;
    let counts: Vec<usize> = (0..m.nodes())
        .map(|k| {
            let c = m.slot_count(k).min(left);
            left -= c;
            c
        })
        .collect();
    let m = if (0..m.nodes()).all(|k| counts[k] == m.slot_count(k)) {
        m
    } else {
        m.with_slot_counts(counts)?
    };
    let slots = (0..m.slots()).filter(|&s| m.has_slot(s));
    let missing = (0..m.slots()).filter(|&s| !m.has_slot(s));
    let fwd: Vec<usize> = slots.chain(missing).collect();
    Ok((m, Perm::from_forward(fwd)?))
}

/// The node of `m` each rank's host (`hosts`, by rank) is, by name, and the ranks each
/// node runs. A host matches the node of the same name, else the one node whose name
/// agrees with it up to the first dot (`n01` and `n01.cluster.example` name one
/// machine: launchers and `MPI_Get_processor_name` give either form). `Err` holds the
/// first rank whose host names no node (or whose short name fits several).
fn hosts_on_nodes(
    m: &MapMachine,
    hosts: &[String],
) -> std::result::Result<(Vec<String>, Vec<usize>), usize> {
    let short = |n: &str| n.split('.').next().unwrap_or(n).to_string();
    let exact: std::collections::HashMap<&str, usize> =
        (0..m.nodes()).map(|k| (m.node_name(k), k)).collect();
    // short name -> node, None when two nodes share it
    let mut by_short: std::collections::HashMap<String, Option<usize>> =
        std::collections::HashMap::new();
    for k in 0..m.nodes() {
        by_short
            .entry(short(m.node_name(k)))
            .and_modify(|e| *e = None)
            .or_insert(Some(k));
    }
    if hosts.is_empty() {
        return Err(0);
    }
    let mut counts = vec![0usize; m.nodes()];
    let mut names = Vec::with_capacity(hosts.len());
    for (r, h) in hosts.iter().enumerate() {
        let k = match exact.get(h.as_str()) {
            Some(&k) => k,
            None => by_short.get(&short(h)).copied().flatten().ok_or(r)?,
        };
        counts[k] += 1;
        names.push(m.node_name(k).to_string());
    }
    Ok((names, counts))
}

/// The machine `m` with each node keeping the slots of the `counts[k]` ranks that run
/// there, and the slot of every rank (`hosts`, by rank, in `m`'s node names; the
/// ranks of a node take its slots in rank order), as [`machine_from_placement`]
/// returns it.
///
/// # Errors
/// [`MachineError`] if a node runs more ranks than it has slots.
fn fill_as_run(m: MapMachine, counts: Vec<usize>, hosts: &[String]) -> Result<(MapMachine, Perm)> {
    if let Some(k) = (0..m.nodes()).find(|&k| counts[k] > m.slot_count(k)) {
        return Err(MachineError::NodeFull {
            node: m.node_name(k).to_string(),
            slots: m.slot_count(k),
            rank: hosts
                .iter()
                .enumerate()
                .filter(|(_, h)| h.as_str() == m.node_name(k))
                .nth(m.slot_count(k))
                .map_or(0, |(r, _)| r),
        }
        .into());
    }
    let m = if (0..m.nodes()).all(|k| counts[k] == m.slot_count(k)) {
        m
    } else {
        m.with_slot_counts(counts)?
    };
    let slot = m.slots_of(hosts)?;
    Ok((m, slot))
}

/// What [`plan_mapping`] decided, as seen on rank 0 of the communicator.
#[derive(Debug, Clone)]
pub struct MappingReport {
    /// The machine's description.
    pub machine: String,
    /// Metrics of the order the ranks have now (task `t` on rank `t`).
    pub before: super::Metrics,
    /// Metrics of the best mapping found (the optimiser's).
    pub best: super::Metrics,
    /// Where the best mapping came from.
    pub origin: String,
    /// For nodes found at run time or emulated: what is known inside them (an hwloc
    /// tree from the ranks' CPU bindings, or why they are taken as flat).
    pub inside: Option<String>,
    /// For a machine file that names none of some rank's host: that the ranks were
    /// taken to fill its slots in packed order, and which host was not found.
    pub placement: Option<String>,
}

/// The result of [`plan_mapping`].
#[derive(Debug, Clone)]
pub struct Planned {
    /// Task → rank of the communicator: pass it to [`reorder`] or [`cart_create`]. The
    /// identity when nothing better than the present order was found.
    pub ranks: Perm,
    /// Whether `ranks` differs from the present order.
    pub reordered: bool,
    /// The decision's numbers, on rank 0 only (`None` elsewhere).
    pub report: Option<MappingReport>,
}

/// Collective: copr's mapping of `pattern` (identical on every rank) onto the machine
/// of `source`, for the ranks of `comm`.
///
/// The machine is built with [`machine_of`]; rank 0 runs every baseline and the
/// optimiser ([`super::compare`] with `opts` and every strategy, as `copr map` does)
/// and broadcasts the optimiser's mapping, converted to ranks ([`map_to_job_ranks`]).
/// On nodes that run different numbers of ranks (emulated, placed, found at run time,
/// or a machine file with more slots than ranks) the pattern is padded to the
/// machine's slots and the job's tasks are kept on slots ranks run on
/// ([`super::fit_comparison`]), as `copr map` does for the same machine; the result
/// is a permutation of exactly the communicator's ranks. It is kept only when
/// it beats the present order (task `t` on rank `t`) on hop-bytes, or ties on
/// hop-bytes and beats it on the busiest link's time, or ties on both and beats it
/// inside the nodes (`Σ bytes·inv_bandwidth` by the level of the node tree two ranks
/// share, when the machine has a tree); otherwise `ranks` is the identity.
///
/// # Errors
/// [`machine_of`]'s errors, [`MpiError`] if the pattern's task count is not
/// `comm.size()`, [`Error::Inconsistent`] if the ranks passed different patterns, and
/// the optimiser's errors; the same verdict on every rank (the message of an error on
/// rank 0 reaches every rank).
pub fn plan_mapping<C: Communicator>(
    comm: &C,
    pattern: &super::Pattern,
    source: &MachineSource,
    opts: &super::Options,
) -> Result<Planned> {
    let mut bytes = Vec::with_capacity(24 * pattern.edges().len() + 8);
    bytes.extend((pattern.tasks() as u64).to_le_bytes());
    for e in pattern.edges() {
        bytes.extend((e.src as u64).to_le_bytes());
        bytes.extend((e.dst as u64).to_le_bytes());
        bytes.extend(e.bytes.to_le_bytes());
    }
    agree(comm, pattern.tasks(), fnv1a(&bytes))?;
    plan_mapping_at_root(comm, (comm.rank() == 0).then_some(pattern), source, opts)
}

/// Collective: [`plan_mapping`] for a pattern held by rank 0 only (as
/// [`gather_out_edges`] returns it): `pattern` is read on rank 0 and ignored elsewhere.
///
/// # Errors
/// [`machine_of`]'s errors, [`MpiError`] if rank 0 passes no pattern or one
/// whose task count is not `comm.size()`, and the optimiser's errors; the same verdict
/// on every rank.
pub fn plan_mapping_at_root<C: Communicator>(
    comm: &C,
    pattern: Option<&super::Pattern>,
    source: &MachineSource,
    opts: &super::Options,
) -> Result<Planned> {
    let p = comm.size() as usize;
    let (machine, slot, notes) = machine_and_inside(comm, source)?;
    let proc = comm.process_at_rank(0);
    let mut outcome: Option<Result<(Perm, MappingReport)>> = None;
    if comm.rank() == 0 {
        outcome = Some(
            match pattern {
                None => Err(MpiError::NoPattern.into()),
                Some(pt) if pt.tasks() != p => Err(MpiError::PatternTasks {
                    tasks: pt.tasks(),
                    ranks: p,
                }
                .into()),
                Some(pt) => Ok(pt),
            }
            .and_then(|pattern| {
                // nodes with fewer ranks than others: the job's tasks first, then empty
                // ones on the slots no rank runs on, as `copr map` pads a job smaller
                // than its machine
                let pattern = if machine.slots() > p {
                    std::borrow::Cow::Owned(pattern.padded(machine.slots())?)
                } else {
                    std::borrow::Cow::Borrowed(pattern)
                };
                let mut c =
                    super::compare(&pattern, &machine, &super::Strategy::ALL, opts, |_| {})?;
                super::fit_comparison(&mut c, &pattern, &machine, p)?;
                Ok((pattern, c))
            })
            .and_then(|(pattern, c)| {
                let pattern = pattern.as_ref();
                let row = c
                    .row(super::Strategy::Optimised.name())
                    .ok_or(MapError::Internal {
                        what: "the optimiser did not run",
                    })?;
                let before = super::evaluate(pattern, &machine, &slot);
                let better = row.metrics.hop_bytes < before.hop_bytes
                    || (row.metrics.hop_bytes == before.hop_bytes
                        && (row.metrics.max_link_time < before.max_link_time
                            || (row.metrics.max_link_time == before.max_link_time
                                && intra_time(&machine, &row.metrics)
                                    < intra_time(&machine, &before))));
                let ranks = if better {
                    map_to_job_ranks(&row.map, &slot, p)?
                } else {
                    Perm::identity(p)
                };
                Ok((
                    ranks,
                    MappingReport {
                        machine: machine.description().to_string(),
                        before,
                        best: row.metrics.clone(),
                        origin: row.origin.clone().unwrap_or_default(),
                        inside: notes.inside.clone(),
                        placement: notes.placement.clone(),
                    },
                ))
            }),
        );
    }
    // rank 0's verdict: 0 = a mapping follows, else the length of its error message
    let mut status: u64 = match &outcome {
        Some(Err(e)) => e.to_string().len().max(1) as u64,
        _ => 0,
    };
    proc.broadcast_into(&mut status);
    if status != 0 {
        let mut msg = match &outcome {
            Some(Err(e)) => e.to_string().into_bytes(),
            _ => vec![0u8; status as usize],
        };
        msg.resize(status as usize, b' ');
        proc.broadcast_into(&mut msg[..]);
        return Err(match outcome {
            Some(Err(e)) => e,
            _ => {
                let text = String::from_utf8_lossy(&msg);
                MpiError::OnRoot {
                    message: text.trim_end().to_string(),
                }
                .into()
            }
        });
    }
    let (mine, report) = match outcome {
        Some(Ok((ranks, report))) => (Some(ranks), Some(report)),
        _ => (None, None),
    };
    let ranks = broadcast_map(comm, 0, mine.as_ref())?;
    Ok(Planned {
        reordered: !ranks.is_identity(),
        ranks,
        report,
    })
}

/// `Σ bytes·inv_bandwidth` of the intra-node messages by the level of the node tree
/// their two ranks share (0 without a tree): what arranging ranks inside nodes lowers.
fn intra_time(machine: &MapMachine, m: &super::Metrics) -> f64 {
    let Some(tree) = machine.node_tree() else {
        return 0.0;
    };
    m.intra_levels
        .iter()
        .filter_map(|lb| {
            copr_topology::Level::parse(&lb.level)
                .map(|l| lb.bytes as f64 * tree.level_cost(l).inv_bandwidth)
        })
        .sum()
}

/// The pattern of a Cartesian grid as [`plan_mapping`] takes it from
/// `MPI_Cart_create`'s arguments: every message `bytes` long (the grid's traffic is
/// unknown, so every direction weighs the same).
///
/// # Errors
/// [`MpiError`] for an extent below 1, `dims` and `periods` of different
/// lengths; [`crate::PatternError`] for a grid [`super::CartGrid`] does not support (0
/// or more than 3 dimensions, too many tasks).
pub fn grid_pattern(dims: &[i32], periods: &[bool], bytes: u64) -> Result<super::Pattern> {
    if dims.len() != periods.len() {
        return Err(MpiError::GridLengths {
            dims: dims.len(),
            periods: periods.len(),
        }
        .into());
    }
    let extents = dims
        .iter()
        .enumerate()
        .map(|(k, &d)| {
            usize::try_from(d)
                .ok()
                .filter(|&d| d >= 1)
                .ok_or_else(|| Error::from(MpiError::GridExtent { dim: k, extent: d }))
        })
        .collect::<Result<Vec<usize>>>()?;
    super::Pattern::grid(&super::CartGrid::new(
        extents,
        periods.to_vec(),
        vec![bytes; dims.len()],
    )?)
}

/// Collective: the pattern of a distributed graph whose ranks each know only their
/// own out-edges, assembled on rank 0 (as `MPI_Dist_graph_create_adjacent` describes a
/// graph): rank `r` passes `out`, pairs `(destination rank, bytes)`, and rank 0 gets
/// the pattern of all of them, message `r → destination` weighing `bytes`; the other
/// ranks get `None`. Pass the result to [`plan_mapping_at_root`].
///
/// # Complexity
/// Two integers per edge are gathered on rank 0, and one per rank; no rank receives
/// anything in proportion to `p²`.
///
/// # Errors
/// [`MpiError`] if a destination is not a rank of `comm`, `comm` has more than
/// [`super::MAX_TASKS`] ranks, or the graph has more edges than one gather can carry
/// (2³⁰); the same verdict on every rank.
pub fn gather_out_edges<C: Communicator>(
    comm: &C,
    out: &[(usize, u64)],
    description: &str,
) -> Result<Option<super::Pattern>> {
    let p = comm.size() as usize;
    if p > super::MAX_TASKS {
        return Err(MpiError::GraphRanks {
            ranks: p,
            max: super::MAX_TASKS,
        }
        .into());
    }
    let local = match out.iter().find(|&&(d, _)| d >= p) {
        Some(&(d, _)) => Err(MpiError::GraphDestination {
            destination: d,
            ranks: p,
        }
        .into()),
        None => Ok(()),
    };
    agreed(comm, local, "passed a destination outside the communicator")?;
    let mut total = 0u64;
    comm.all_reduce_into(
        &(out.len() as u64),
        &mut total,
        mpi::collective::SystemOperation::sum(),
    );
    if total > 1 << 30 {
        return Err(MpiError::GraphEdges { edges: total }.into());
    }
    let mine: Vec<u64> = out.iter().flat_map(|&(d, b)| [d as u64, b]).collect();
    let root = comm.process_at_rank(0);
    let count = mine.len() as mpi::Count;
    if comm.rank() != 0 {
        root.gather_into(&count);
        root.gather_varcount_into(&mine[..]);
        return Ok(None);
    }
    let mut counts: Vec<mpi::Count> = vec![0; p];
    root.gather_into_root(&count, &mut counts[..]);
    let displs: Vec<mpi::Count> = counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let mut all = vec![0u64; 2 * total as usize];
    {
        let mut part = mpi::datatype::PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
        root.gather_varcount_into_root(&mine[..], &mut part);
    }
    let mut edges = Vec::with_capacity(total as usize);
    for (src, (&c, &d)) in counts.iter().zip(&displs).enumerate() {
        for e in all[d as usize..(d + c) as usize].chunks(2) {
            edges.push(super::Edge {
                src: src as u32,
                dst: e[0] as u32,
                bytes: e[1],
            });
        }
    }
    super::Pattern::from_edges(p, edges, description.to_string()).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_to_machine() {
        let pl = Placement::parse("0 x\n1 x\n2 y\n3 y\n", None).unwrap();
        let (m, slot) = machine_from_placement(&pl).unwrap();
        assert_eq!((m.nodes(), m.ranks_per_node()), (2, 2));
        assert!(slot.is_identity());
        // nodes of 1, 3 and 2 ranks, out of order: slots x0 (x1 x2 missing) y0 y1 y2
        // z0 z1 (z2 missing); the missing slots follow the ranks
        let pl = Placement::parse("0 x\n1 y\n2 z\n3 y\n4 z\n5 y\n", None).unwrap();
        let (m, slot) = machine_from_placement(&pl).unwrap();
        assert_eq!((m.nodes(), m.ranks_per_node(), m.used_slots()), (3, 3, 6));
        assert_eq!(
            (0..3).map(|k| m.slot_count(k)).collect::<Vec<_>>(),
            [1, 3, 2]
        );
        assert_eq!(slot.forward(), [0, 3, 6, 4, 7, 5, 1, 2, 8]);
        assert!((0..6).all(|r| m.has_slot(slot.apply(r))));
        assert!((6..9).all(|r| !m.has_slot(slot.apply(r))));
    }

    #[test]
    fn a_packed_fill_of_a_larger_machine() {
        // nodes of 3, 1 and 3 slots; 5 ranks fill node 0, node 1 and one slot of node 2
        let m = MapMachine::flat(3, 3)
            .unwrap()
            .with_slot_counts(vec![3, 1, 3])
            .unwrap();
        let (f, slot) = packed_fill(m.clone(), 5).unwrap();
        assert_eq!(
            (0..3).map(|k| f.slot_count(k)).collect::<Vec<_>>(),
            [3, 1, 1]
        );
        assert_eq!(slot.forward(), [0, 1, 2, 3, 6, 4, 5, 7, 8]);
        // exactly full: the machine as it is
        let (f, slot) = packed_fill(m, 7).unwrap();
        assert_eq!(f.used_slots(), 7);
        assert_eq!(slot.forward(), [0, 1, 2, 3, 6, 7, 8, 4, 5]);
        // a machine of equal nodes, full: the identity
        let (_, slot) = packed_fill(MapMachine::flat(2, 2).unwrap(), 4).unwrap();
        assert!(slot.is_identity());
    }

    #[test]
    fn a_machine_file_naming_the_ranks_hosts() {
        let mut m = MapMachine::flat(3, 2).unwrap();
        m.set_node_names(vec!["a".into(), "b".into(), "c".into()])
            .unwrap();
        let hosts: Vec<String> = ["c", "a", "c"].iter().map(|h| h.to_string()).collect();
        let (names, counts) = hosts_on_nodes(&m, &hosts).unwrap();
        assert_eq!(counts, [1, 0, 2]);
        assert_eq!(names, hosts);
        let (f, slot) = fill_as_run(m.clone(), counts, &names).unwrap();
        assert_eq!(
            (0..3).map(|k| f.slot_count(k)).collect::<Vec<_>>(),
            [1, 0, 2]
        );
        // rank 0 on c0, rank 1 on a0, rank 2 on c1; then the missing slots a1 b0 b1
        assert_eq!(slot.forward(), [4, 0, 5, 1, 2, 3]);
        // a host the file does not name: no match (the ranks then fill packed)
        let other: Vec<String> = ["a", "x"].iter().map(|h| h.to_string()).collect();
        assert_eq!(hosts_on_nodes(&m, &other), Err(1));
        assert_eq!(hosts_on_nodes(&m, &[]), Err(0));
        // three ranks on a node of two slots
        let over: Vec<String> = ["b", "b", "b"].iter().map(|h| h.to_string()).collect();
        let (names, counts) = hosts_on_nodes(&m, &over).unwrap();
        let e = fill_as_run(m.clone(), counts, &names)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`b`") && e.contains("rank 2"), "{e}");
    }

    #[test]
    fn hosts_match_nodes_by_their_short_names() {
        let names = |v: &[&str]| v.iter().map(|h| h.to_string()).collect::<Vec<String>>();
        let mut m = MapMachine::flat(3, 2).unwrap();
        m.set_node_names(names(&["n1", "n2.site.org", "n3"]))
            .unwrap();
        // full names from MPI against short names in the file, and the other way round
        let hosts = names(&["n3.site.org", "n2", "n1.site.org", "n2.other"]);
        let (got, counts) = hosts_on_nodes(&m, &hosts).unwrap();
        assert_eq!(got, names(&["n3", "n2.site.org", "n1", "n2.site.org"]));
        assert_eq!(counts, [1, 2, 1]);
        // an exact name wins over a short one; two nodes sharing a short name match
        // neither by it
        let mut m = MapMachine::flat(2, 2).unwrap();
        m.set_node_names(names(&["n1.a", "n1.b"])).unwrap();
        assert_eq!(
            hosts_on_nodes(&m, &names(&["n1.b", "n1.a"])).unwrap().1,
            [1, 1]
        );
        assert_eq!(hosts_on_nodes(&m, &names(&["n1.a", "n1"])), Err(1));
    }

    #[test]
    fn job_ranks_of_a_padded_mapping() {
        let pl = Placement::parse("0 x\n1 y\n2 y\n", None).unwrap();
        let (m, slot) = machine_from_placement(&pl).unwrap();
        // slots x0 x1(missing) y0 y1; ranks 0 1 2 on slots 0 2 3
        assert_eq!(slot.forward(), [0, 2, 3, 1]);
        let map = Perm::from_forward(vec![3, 0, 2, 1]).unwrap();
        let ranks = map_to_job_ranks(&map, &slot, 3).unwrap();
        assert_eq!(ranks.forward(), [2, 0, 1]);
        for t in 0..3 {
            assert_eq!(slot.apply(ranks.apply(t)), map.apply(t));
            assert!(m.has_slot(map.apply(t)));
        }
        let e = map_to_job_ranks(&Perm::identity(4), &slot, 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("task 1 of the job's 3 on slot 1, where no rank runs"),
            "{e}"
        );
        assert!(map_to_job_ranks(&map, &slot, 5).is_err());
    }

    #[test]
    fn bound_placement_to_machine() {
        use copr_topology::{Level, LevelCosts};
        let tree = NodeTree::from_shape("pack:2 core:4", &LevelCosts::default()).unwrap();
        // two nodes of 4 ranks; node x's ranks on PUs 5, 0, 4, 1, node y's on 4, 5, 0, 1
        let pl = Placement::parse(
            "0 x 5\n1 x 0\n2 y 4\n3 y 5\n4 x 4\n5 x 1\n6 y 0\n7 y 1\n",
            None,
        )
        .unwrap();
        let (m, slot) = machine_from_bound_placement(&pl, &tree).unwrap();
        assert_eq!((m.nodes(), m.ranks_per_node()), (2, 4));
        // slots in PU order on each node: x = 0 1 4 5, y = 0 1 4 5
        assert_eq!(slot.forward(), [3, 0, 6, 7, 2, 1, 4, 5]);
        let t = m.node_tree().unwrap();
        assert_eq!(t.num_pus(), 4);
        assert_eq!(
            (t.level(0, 1), t.level(1, 2)),
            (Level::Package, Level::Machine)
        );
        for (text, needle) in [
            (
                "0 x 0\n1 x 0\n",
                "ranks 0 and 1 of node `x` are bound to the same PU 0",
            ),
            ("0 x 0\n1 x\n", "rank 1 is not bound to a PU"),
            (
                "0 x 0\n1 x 1\n2 y 0\n3 y 4\n",
                "node `y` sit on PUs arranged unlike",
            ),
            ("0 x 0\n1 x 9\n", "PU 9 is not one of the tree's 8 PUs"),
            (
                "0 x 0\n1 y 0\n2 y 1\n",
                "node `x` runs 1 ranks but node `y` runs 2",
            ),
        ] {
            let pl = Placement::parse(text, None).unwrap();
            let e = machine_from_bound_placement(&pl, &tree)
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn node_tree_splits_tiles_per_package() {
        use copr_topology::LevelCosts;
        // two nodes of two packages of two cores, the ranks of each node bound
        // round-robin over its packages (PUs 0 2 1 3); a periodic 2 x 4 grid, 1 byte
        // per message (a column pair exchanges 4 messages, a row pair 2). By hand: in
        // rank order the nodes hold the rows, 16 column messages leave them, and inside
        // each node every row pair crosses the packages (2 x 8). The best: 2 x 2 tiles
        // per node (8 row messages leave), inside each a column pair per package (4
        // row messages cross the packages, against 8 for row pairs).
        let tree = NodeTree::from_shape("pack:2 core:2", &LevelCosts::default()).unwrap();
        let text: String = [0, 2, 1, 3, 0, 2, 1, 3]
            .iter()
            .enumerate()
            .map(|(r, pu)| format!("{r} n{} {pu}\n", r / 4))
            .collect();
        let pl = Placement::parse(&text, None).unwrap();
        let (m, slot) = machine_from_bound_placement(&pl, &tree).unwrap();
        let pattern = grid_pattern(&[2, 4], &[true, true], 1).unwrap();
        // (off-node bytes, bytes between packages of one node)
        let cut = |map: &Perm| {
            let e = super::super::evaluate(&pattern, &m, map);
            let packages = e.intra_levels.iter().find(|l| l.level == "machine");
            (
                e.total_bytes - e.intra_node_bytes,
                packages.map_or(0, |l| l.bytes),
            )
        };
        assert_eq!(cut(&slot), (16, 16));
        let c = super::super::compare(
            &pattern,
            &m,
            &[super::super::Strategy::Optimised],
            &super::super::Options::default(),
            |_| {},
        )
        .unwrap();
        let best = &c.row("optimised").unwrap().map;
        assert_eq!(cut(best), (8, 8));
        // as ranks, placed on their slots again
        let ranks = map_to_ranks(best, &slot).unwrap();
        assert_eq!(cut(&slot.compose(&ranks)), (8, 8));
    }

    #[test]
    fn ranks_of_a_mapping() {
        // rank r on slot slot[r]; task t on slot map[t]
        let slot = Perm::from_forward(vec![0, 2, 1, 3]).unwrap();
        let map = Perm::from_forward(vec![3, 1, 0, 2]).unwrap();
        let ranks = map_to_ranks(&map, &slot).unwrap();
        for t in 0..4 {
            assert_eq!(slot.apply(ranks.apply(t)), map.apply(t));
        }
        assert!(map_to_ranks(&map, &Perm::identity(3)).is_err());
    }

    #[test]
    fn grid_patterns() {
        // a periodic ring of 4 and an open line of 3: 2 messages per task and
        // 2 per inner link
        let ring = grid_pattern(&[4], &[true], 5).unwrap();
        assert_eq!((ring.tasks(), ring.edges().len()), (4, 8));
        assert_eq!(ring.total_bytes(), 40);
        let line = grid_pattern(&[3], &[false], 1).unwrap();
        assert_eq!(line.edges().len(), 4);
        for (dims, periods) in [
            (&[2, 0][..], &[true, true][..]),
            (&[2, -1][..], &[true, true][..]),
            (&[2, 2][..], &[true][..]),
            (&[][..], &[][..]),
            (&[1, 1, 1, 2][..], &[true; 4][..]),
        ] {
            assert!(
                grid_pattern(dims, periods, 1).is_err(),
                "{dims:?} {periods:?}"
            );
        }
    }

    #[test]
    fn grid_checks() {
        assert!(check_grid(&[2, 3], &[true, false], 6).is_ok());
        assert!(check_grid(&[2, 3], &[true], 6).is_err());
        assert!(check_grid(&[], &[], 1).is_err());
        assert!(check_grid(&[2, 0], &[true, true], 0).is_err());
        assert!(check_grid(&[i32::MAX, i32::MAX, 4], &[true; 3], 8).is_err());
        let e = check_grid(&[2, 2], &[true, true], 8)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has 4 positions but the communicator has 8"),
            "{e}"
        );
    }
}
