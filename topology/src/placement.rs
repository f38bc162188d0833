//! Where each rank runs: rank → node (and optionally the PU within the node).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::error::{Origin, Result, TopologyError};
use crate::files;
use crate::link::inconsistent;

/// Rank → node (by name) and optional PU (logical index within the node).
///
/// Ranks without a PU are given one by [`crate::Machine`]: the `k`-th rank
/// (in rank order) on a node gets PU `k mod P` for `P` PUs per node.
///
/// ```
/// use copr_topology::Placement;
/// let nodes: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
/// let p = Placement::packed(5, 2, &nodes).unwrap();
/// assert_eq!((0..5).map(|r| p.node_of(r)).collect::<Vec<_>>(), [0, 0, 1, 1, 2]);
/// let r = Placement::round_robin(5, 2, &nodes).unwrap();
/// assert_eq!((0..5).map(|k| r.node_of(k)).collect::<Vec<_>>(), [0, 1, 2, 0, 1]);
/// assert_eq!(r.ranks_per_node(), [2, 2, 1]);
/// // run-time discovery: (node name, PU) per rank
/// let d = Placement::from_pairs([("n1", Some(0)), ("n2", Some(0)), ("n1", Some(1))]);
/// assert_eq!(d.num_nodes(), 2);
/// assert_eq!(d.node_name(d.node_of(2)), "n1");
/// assert_eq!(d.pu_of(2), Some(1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    node_names: Names,
    rank_node: Vec<u32>,
    /// The PU of each rank, [`NO_PU`] for none (4 bytes a rank, not 8).
    rank_pu: Vec<u32>,
    description: String,
}

impl Placement {
    /// From one `(node name, PU)` per rank, in rank order — what run-time
    /// discovery (e.g. `MPI_Get_processor_name` + the bound PU) produces.
    /// Nodes are numbered in order of first appearance.
    pub fn from_pairs<S: Into<String>>(
        pairs: impl IntoIterator<Item = (S, Option<usize>)>,
    ) -> Self {
        let mut node_names = Names::default();
        let mut index: HashMap<String, u32> = HashMap::new();
        let mut rank_node = Vec::new();
        let mut rank_pu = Vec::new();
        for (name, pu) in pairs {
            let name = name.into();
            let k = *index.entry(name).or_insert_with_key(|name| {
                node_names.push(name);
                (node_names.len() - 1) as u32
            });
            rank_node.push(k);
            // a PU beyond u32 saturates (no node has that many; the machine refuses
            // it) rather than wrapping onto a small PU
            rank_pu.push(pu.map_or(NO_PU, |p| u32::try_from(p).unwrap_or(NO_PU - 1)));
        }
        let description = format!(
            "{} on {} (given)",
            count(rank_node.len(), "rank"),
            count(node_names.len(), "node")
        );
        Self {
            node_names,
            rank_node,
            rank_pu,
            description,
        }
    }
}

/// `rank_pu` of a rank without a PU.
const NO_PU: u32 = u32::MAX;

/// Node names in one string, each ending where `ends` says: about 8 bytes a node
/// besides the characters, where a `String` each takes 24 and an allocation (a
/// placement of 16 million one-rank nodes: 0.3 GB instead of 0.9 GB).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Names {
    text: String,
    ends: Vec<usize>,
}

impl Names {
    fn from_list(names: &[String]) -> Self {
        let mut out = Self {
            text: String::with_capacity(names.iter().map(String::len).sum()),
            ends: Vec::with_capacity(names.len()),
        };
        for n in names {
            out.push(n);
        }
        out
    }

    fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Name `n`.
    ///
    /// # Panics
    /// If `n >= len()`.
    fn get(&self, n: usize) -> &str {
        let start = if n == 0 { 0 } else { self.ends[n - 1] };
        &self.text[start..self.ends[n]]
    }
}

/// Largest number of ranks a placement (and so a machine) may hold:
/// 2^24 = 16 777 216, the same limit as copr's layouts. Checked before the
/// placement is allocated.
pub const MAX_RANKS: usize = 1 << 24;

impl Placement {
    /// All `ranks` on one node called `name`.
    pub fn single_node(ranks: usize, name: &str) -> Self {
        let mut p = Self::from_pairs((0..ranks).map(|_| (name, None)));
        p.description = format!("{ranks} ranks on node `{name}`");
        p
    }

    /// Refuses more than [`MAX_RANKS`] ranks (field `ranks`).
    pub(crate) fn check_ranks(ranks: usize) -> Result<()> {
        if ranks > MAX_RANKS {
            return Err(inconsistent(
                "ranks",
                format!("{ranks} ranks exceed the limit of {MAX_RANKS} (copr_topology::MAX_RANKS)"),
            ));
        }
        Ok(())
    }

    fn check_rule(ranks: usize, ranks_per_node: usize, nodes: &[String]) -> Result<usize> {
        if ranks == 0 {
            return Err(inconsistent("ranks", "the number of ranks must be >= 1"));
        }
        Self::check_ranks(ranks)?;
        if ranks_per_node == 0 {
            return Err(inconsistent(
                "ranks_per_node",
                "ranks_per_node must be >= 1",
            ));
        }
        let nn = ranks.div_ceil(ranks_per_node);
        if nn > nodes.len() {
            return Err(inconsistent(
                "nodes",
                format!(
                    "{ranks} ranks at {ranks_per_node} per node need {nn} nodes, only {} available",
                    nodes.len()
                ),
            ));
        }
        Ok(nn)
    }

    /// Packed (block) placement: rank `r` on node `⌊r / ranks_per_node⌋` of
    /// `nodes`; uses the first `⌈ranks / ranks_per_node⌉` nodes.
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] for zero ranks or ranks per node, more
    /// than [`MAX_RANKS`] ranks, or too few nodes.
    pub fn packed(ranks: usize, ranks_per_node: usize, nodes: &[String]) -> Result<Self> {
        let nn = Self::check_rule(ranks, ranks_per_node, nodes)?;
        Ok(Self {
            node_names: Names::from_list(&nodes[..nn]),
            rank_node: (0..ranks).map(|r| (r / ranks_per_node) as u32).collect(),
            rank_pu: vec![NO_PU; ranks],
            description: format!(
                "packed, {}, {ranks_per_node} per node, {}",
                count(ranks, "rank"),
                count(nn, "node")
            ),
        })
    }

    /// Round-robin (cyclic) placement over `n = ⌈ranks / ranks_per_node⌉`
    /// nodes: rank `r` on node `r mod n`.
    ///
    /// # Errors
    /// As [`Placement::packed`].
    pub fn round_robin(ranks: usize, ranks_per_node: usize, nodes: &[String]) -> Result<Self> {
        let nn = Self::check_rule(ranks, ranks_per_node, nodes)?;
        Ok(Self {
            node_names: Names::from_list(&nodes[..nn]),
            rank_node: (0..ranks).map(|r| (r % nn) as u32).collect(),
            rank_pu: vec![NO_PU; ranks],
            description: format!(
                "round-robin, {} over {}",
                count(ranks, "rank"),
                count(nn, "node")
            ),
        })
    }

    /// Reads a placement file: one line per rank, `rank node [pu]`, `#`
    /// comments, whitespace or comma separated. Every rank `0..p` must occur
    /// exactly once (in any order).
    ///
    /// # Errors
    /// [`TopologyError::Io`], and the errors of [`Placement::parse`] with the
    /// file name.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = files::read_text(path)?;
        let mut p = Self::parse(&text, Some(path))?;
        p.description = format!("{} ({})", path.display(), p.description);
        Ok(p)
    }

    /// Parses the text of a placement file (see [`Placement::from_file`]).
    ///
    /// ```
    /// use copr_topology::Placement;
    /// let p = Placement::parse("# rank node pu\n1 b 0\n0 a\n", None).unwrap();
    /// assert_eq!(p.node_name(p.node_of(0)), "a");
    /// let e = Placement::parse("0 a\n2 a\n", None).unwrap_err().to_string();
    /// assert!(e.contains("rank 1 is not placed"), "{e}");
    /// ```
    ///
    /// # Errors
    /// With file and line: [`TopologyError::Parse`] for a wrong field count
    /// or a non-integer `rank`/`pu`, [`TopologyError::Duplicate`] for a rank
    /// listed twice; [`TopologyError::UnplacedRank`] for the first missing
    /// rank; [`TopologyError::Inconsistent`] for an empty file.
    pub fn parse(text: &str, file: Option<&Path>) -> Result<Self> {
        // (rank, node, pu), in file order: memory follows the file, not the
        // largest rank named in it
        let mut entries: Vec<(usize, String, Option<usize>)> = Vec::new();
        let mut first_line: HashMap<usize, usize> = HashMap::new();
        for dl in files::data_lines(text) {
            let origin = Origin::maybe_file(file).at_line(dl.line);
            if !(2..=3).contains(&dl.fields.len()) {
                return Err(TopologyError::Parse {
                    origin,
                    field: "line".into(),
                    message: format!(
                        "expected `rank node [pu]`, found {} fields: `{}`",
                        dl.fields.len(),
                        dl.fields.join(" ")
                    ),
                });
            }
            let rank: usize =
                files::parse_field(dl.fields[0], "rank", "a non-negative integer", &origin)?;
            if rank >= MAX_RANKS {
                return Err(TopologyError::InvalidValue {
                    origin,
                    field: "rank".into(),
                    value: rank.to_string(),
                    reason: format!(
                        "ranks beyond {MAX_RANKS} are not supported (copr_topology::MAX_RANKS)"
                    ),
                });
            }
            let pu = dl
                .fields
                .get(2)
                .map(|f| files::parse_field::<usize>(f, "pu", "a non-negative integer", &origin))
                .transpose()?;
            if let Some(pu) = pu.filter(|&p| p >= NO_PU as usize) {
                return Err(TopologyError::InvalidValue {
                    origin,
                    field: "pu".into(),
                    value: pu.to_string(),
                    reason: format!("PUs beyond {} are not supported", NO_PU - 1),
                });
            }
            if let Some(&prev) = first_line.get(&rank) {
                return Err(TopologyError::Duplicate {
                    origin,
                    field: "rank".into(),
                    id: rank.to_string(),
                    first: format!("at line {prev}"),
                });
            }
            first_line.insert(rank, dl.line);
            entries.push((rank, dl.fields[1].to_string(), pu));
        }
        if entries.is_empty() {
            return Err(TopologyError::Inconsistent {
                origin: Origin::maybe_file(file),
                field: "rank".into(),
                message: "the placement lists no ranks".into(),
            });
        }
        entries.sort_unstable_by_key(|e| e.0);
        let max = entries.last().map_or(0, |e| e.0);
        let mut pairs = Vec::with_capacity(entries.len());
        for (rank, (r, node, pu)) in entries.into_iter().enumerate() {
            if r != rank {
                return Err(TopologyError::UnplacedRank {
                    origin: Origin::maybe_file(file),
                    rank,
                    detail: format!("the placement lists ranks up to {max} but not {rank}"),
                });
            }
            pairs.push((node, pu));
        }
        let mut p = Self::from_pairs(pairs);
        p.description = format!(
            "{} on {}",
            count(p.ranks(), "rank"),
            count(p.num_nodes(), "node")
        );
        Ok(p)
    }

    /// The placement in the file format of [`Placement::parse`].
    pub fn to_text(&self) -> String {
        let mut s = String::from("# rank node [pu]\n");
        for r in 0..self.ranks() {
            let _ = write!(s, "{r} {}", self.node_name(self.node_of(r)));
            if let Some(pu) = self.pu_of(r) {
                let _ = write!(s, " {pu}");
            }
            s.push('\n');
        }
        s
    }

    /// The number of ranks `p`.
    pub fn ranks(&self) -> usize {
        self.rank_node.len()
    }

    /// The number of nodes used.
    pub fn num_nodes(&self) -> usize {
        self.node_names.len()
    }

    /// The node names, by node index.
    pub fn node_names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.node_names.len()).map(|n| self.node_names.get(n))
    }

    /// The name of node `n`.
    ///
    /// # Panics
    /// If `n >= num_nodes()`.
    pub fn node_name(&self, n: usize) -> &str {
        self.node_names.get(n)
    }

    /// The node index of `rank`.
    ///
    /// # Panics
    /// If `rank >= ranks()`.
    #[inline]
    pub fn node_of(&self, rank: usize) -> usize {
        self.rank_node[rank] as usize
    }

    /// The PU of `rank`, if the placement fixes one.
    ///
    /// # Panics
    /// If `rank >= ranks()`.
    pub fn pu_of(&self, rank: usize) -> Option<usize> {
        let pu = self.rank_pu[rank];
        (pu != NO_PU).then_some(pu as usize)
    }

    /// The number of ranks on each node, by node index.
    pub fn ranks_per_node(&self) -> Vec<usize> {
        let mut c = vec![0; self.num_nodes()];
        for &n in &self.rank_node {
            c[n as usize] += 1;
        }
        c
    }

    /// A one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }
}

/// `n` and the noun, in the plural unless `n` is 1: `1 node`, `2 nodes`, `2 switches`
/// (the wording of every crate's messages).
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if noun.ends_with("ch") || noun.ends_with('s') || noun.ends_with('x') {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}
