//! Communication patterns: who sends how many bytes to whom.
//!
//! A [`Pattern`] is a list of directed messages between `n` tasks (task `i` is the
//! process that takes rank `i` of the reordered communicator). It comes from a
//! Cartesian grid ([`CartGrid`]), a weighted graph file ([`Pattern::from_file`]), or the
//! volume matrix of a copr reshuffle ([`Pattern::from_volumes`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use copr::error::{Error, Result};
use copr::volume::Volumes;
use copr_topology::files::MAX_TOML_BYTES;

use crate::graph_formats::GraphFormat;

/// Patterns larger than this many tasks are refused (a task id in a file must not
/// make copr allocate memory in proportion to it): 2²² = 4 194 304.
///
/// # Memory
/// A comparison of every strategy ([`crate::compare`]) holds each strategy's mapping
/// (16 bytes per task each), the optimiser's candidates and the pattern's edges: about
/// 300–450 bytes per task with every strategy, so at most about 2 GB at this limit.
pub const MAX_TASKS: usize = 1 << 22;

/// Why [`MAX_TASKS`] is what it is, for error messages.
pub(crate) const MAX_TASKS_WHY: &str =
    "copr map keeps every strategy's mapping, about 400 bytes per task";

/// What is wrong with a pattern's description; carried by [`Error::Extension`]
/// (`copr::Error::from(e)`, and `?` converts).
///
/// ```
/// use copr_mapping::{CartGrid, PatternError};
/// let e = CartGrid::new(vec![4, 0], vec![true; 2], vec![1; 2]).unwrap_err();
/// let copr::Error::Extension(b) = &e else { panic!() };
/// assert_eq!(b.downcast_ref::<PatternError>(), Some(&PatternError::ZeroExtent { dim: 1 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    /// A grid of 0 or more than 3 dimensions.
    #[error("grid dims: 1 to 3 dimensions are supported, got {got} ({dims:?})")]
    Dimensions {
        /// How many dimensions were given.
        got: usize,
        /// The extents given.
        dims: Vec<usize>,
    },
    /// The lists of a grid have different lengths.
    #[error("grid: dims has {dims} entries but periodic has {periodic} and bytes {bytes}")]
    Lengths {
        /// Entries of `dims`.
        dims: usize,
        /// Entries of `periodic`.
        periodic: usize,
        /// Entries of `bytes`.
        bytes: usize,
    },
    /// A grid extent of 0.
    #[error("grid dims[{dim}]: extents must be >= 1, got 0")]
    ZeroExtent {
        /// The dimension.
        dim: usize,
    },
    /// More tasks than [`MAX_TASKS`] (or none).
    #[error("pattern: {tasks} tasks: at least 1 and at most {MAX_TASKS} are supported ({MAX_TASKS_WHY})")]
    TaskCount {
        /// The number of tasks asked for (saturated at `u128::MAX`).
        tasks: u128,
    },
    /// A message names a task beyond the pattern's.
    #[error("pattern: message {index} ({src} -> {dst}) names a task >= {tasks}")]
    TaskOutOfRange {
        /// Index of the message in the list given.
        index: usize,
        /// Its sender.
        src: u32,
        /// Its receiver.
        dst: u32,
        /// The pattern's number of tasks.
        tasks: usize,
    },
    /// A pattern padded to fewer slots than it has tasks.
    #[error("the pattern has {} but the machine has only {}", crate::errors::count(*.tasks, "task"), crate::errors::count(*.slots, "slot"))]
    TooFewSlots {
        /// Tasks of the pattern.
        tasks: usize,
        /// Slots asked for.
        slots: usize,
    },
    /// The bytes between two tasks (or of a volume entry) overflow 64 bits.
    #[error("pattern: bytes from {src} to {dst} overflow 64 bits")]
    BytesOverflow {
        /// Sender.
        src: u64,
        /// Receiver.
        dst: u64,
    },
    /// An algorithm that needs a square process grid was given another.
    #[error("--pattern {algorithm}: needs a square grid, got {rows}x{cols}")]
    NotSquare {
        /// The algorithm's name.
        algorithm: &'static str,
        /// Grid rows.
        rows: usize,
        /// Grid columns.
        cols: usize,
    },
}

impl From<PatternError> for Error {
    fn from(e: PatternError) -> Self {
        Error::Extension(Box::new(e))
    }
}

/// One directed message: `src` sends `bytes` to `dst` (once per communication round).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    /// Sending task.
    pub src: u32,
    /// Receiving task.
    pub dst: u32,
    /// Bytes per round.
    pub bytes: u64,
}

/// A Cartesian process grid whose tasks talk to their grid neighbours.
///
/// Task numbering follows `MPI_Cart_create`: row-major, the last dimension varies
/// fastest, `task = (c₀·d₁ + c₁)·d₂ + c₂`. Every task sends `bytes[k]` to each of its two
/// neighbours along dimension `k` (`c_k ± 1`, wrapping when `periodic[k]`; without
/// wraparound the tasks on the border have one neighbour in that dimension).
///
/// ```
/// use copr_mapping::{CartGrid, Pattern};
/// // a 4 x 4 torus grid, row messages (along dimension 1) 3x column messages
/// let g = CartGrid::new(vec![4, 4], vec![true, true], vec![100, 300]).unwrap();
/// let p = Pattern::grid(&g).unwrap();
/// assert_eq!(p.tasks(), 16);
/// assert_eq!(p.edges().len(), 16 * 4);
/// assert_eq!(p.total_bytes(), 16 * (2 * 100 + 2 * 300));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CartGrid {
    /// Extent of each dimension (1 to 3 dimensions).
    pub dims: Vec<usize>,
    /// Whether each dimension wraps around.
    pub periodic: Vec<bool>,
    /// Bytes per message along each dimension.
    pub bytes: Vec<u64>,
}

impl CartGrid {
    /// A checked grid description.
    ///
    /// # Errors
    /// [`PatternError::Dimensions`] for 0 or more than 3 dimensions,
    /// [`PatternError::ZeroExtent`], [`PatternError::Lengths`] for lists of different
    /// lengths, [`PatternError::TaskCount`] for more than [`MAX_TASKS`] tasks.
    pub fn new(dims: Vec<usize>, periodic: Vec<bool>, bytes: Vec<u64>) -> Result<Self> {
        let g = Self {
            dims,
            periodic,
            bytes,
        };
        g.validate()?;
        Ok(g)
    }

    /// Checks the description (see [`CartGrid::new`]).
    ///
    /// # Errors
    /// As [`CartGrid::new`].
    pub fn validate(&self) -> Result<()> {
        let n = self.dims.len();
        if n == 0 || n > 3 {
            return Err(PatternError::Dimensions {
                got: n,
                dims: self.dims.clone(),
            }
            .into());
        }
        if self.periodic.len() != n || self.bytes.len() != n {
            return Err(PatternError::Lengths {
                dims: n,
                periodic: self.periodic.len(),
                bytes: self.bytes.len(),
            }
            .into());
        }
        let mut total: u128 = 1;
        for (k, &d) in self.dims.iter().enumerate() {
            if d == 0 {
                return Err(PatternError::ZeroExtent { dim: k }.into());
            }
            total = total.saturating_mul(d as u128);
        }
        if total > MAX_TASKS as u128 {
            return Err(PatternError::TaskCount { tasks: total }.into());
        }
        Ok(())
    }

    /// Number of tasks `Π dims`.
    pub fn tasks(&self) -> usize {
        self.dims.iter().product()
    }

    /// Grid coordinates of `task` (row-major, last dimension fastest).
    pub fn coords(&self, task: usize) -> Vec<usize> {
        let mut c = vec![0; self.dims.len()];
        let mut t = task;
        for k in (0..self.dims.len()).rev() {
            c[k] = t % self.dims[k];
            t /= self.dims[k];
        }
        c
    }

    /// The task at grid coordinates `c`.
    pub fn task(&self, c: &[usize]) -> usize {
        c.iter()
            .zip(&self.dims)
            .fold(0, |acc, (&x, &d)| acc * d + x)
    }
}

/// A communication pattern: `n` tasks and the directed messages between them.
///
/// # Complexity
/// Memory `O(n + m)` for `m` messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    tasks: usize,
    edges: Vec<Edge>,
    grid: Option<CartGrid>,
    /// The process grid the tasks form when their traffic is not the grid's neighbour
    /// exchange (an [`crate::Algorithm`]'s pattern).
    shape: Option<CartGrid>,
    description: String,
    /// [`Pattern::undirected`], built on first use (the messages never change after
    /// construction).
    undirected: UndirectedCache,
}

/// A CSR adjacency: offsets and `(neighbour, bytes)`.
type Csr = (Vec<usize>, Vec<(u32, u64)>);

/// The undirected adjacency of a pattern, computed once; no part of its equality.
#[derive(Debug, Clone, Default)]
struct UndirectedCache(std::sync::OnceLock<Csr>);

impl PartialEq for UndirectedCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The text form of a graph file in TOML or JSON.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphDoc {
    #[serde(default)]
    tasks: Option<u64>,
    edges: Vec<Triple>,
}

/// One `[src, dst, bytes]` entry of a TOML or JSON graph: exactly three integers (a
/// plain tuple would let TOML drop a fourth value unread).
#[derive(Debug, Clone, Copy)]
struct Triple(u64, u64, u64);

impl<'de> Deserialize<'de> for Triple {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Triple;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an edge [src, dst, bytes] of three integers")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Triple, A::Error> {
                use serde::de::{Error as _, IgnoredAny};
                let mut v = [0u64; 3];
                for (k, x) in v.iter_mut().enumerate() {
                    *x = seq
                        .next_element()?
                        .ok_or_else(|| A::Error::invalid_length(k, &self))?;
                }
                let mut found = 3;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    found += 1;
                }
                if found > 3 {
                    return Err(A::Error::invalid_length(found, &self));
                }
                Ok(Triple(v[0], v[1], v[2]))
            }
        }
        d.deserialize_seq(V)
    }
}

impl Pattern {
    /// A pattern from explicit messages; `tasks` must exceed every task id. Messages
    /// with zero bytes and self-messages are dropped; repeated pairs are merged.
    ///
    /// # Errors
    /// [`PatternError::TaskOutOfRange`] for a task id `>= tasks`,
    /// [`PatternError::TaskCount`] for `tasks == 0` or `tasks > MAX_TASKS`,
    /// [`PatternError::BytesOverflow`] if merged messages overflow 64 bits.
    pub fn from_edges(tasks: usize, edges: Vec<Edge>, description: String) -> Result<Self> {
        Self::from_edges_with(tasks, edges, description, false)
    }

    /// [`Pattern::from_edges`] for a graph the optimiser derives (the bytes between
    /// groups of tasks): merged messages beyond 64 bits saturate at `u64::MAX` instead
    /// of failing, since a pattern whose messages each fit (the user's) may have groups
    /// whose sums do not, and these graphs only steer the search (every mapping is
    /// scored on the pattern itself).
    ///
    /// # Errors
    /// As [`Pattern::from_edges`], but never [`PatternError::BytesOverflow`].
    pub(crate) fn from_edges_saturating(
        tasks: usize,
        edges: Vec<Edge>,
        description: String,
    ) -> Result<Self> {
        Self::from_edges_with(tasks, edges, description, true)
    }

    fn from_edges_with(
        tasks: usize,
        edges: Vec<Edge>,
        description: String,
        saturate: bool,
    ) -> Result<Self> {
        if tasks == 0 || tasks > MAX_TASKS {
            return Err(PatternError::TaskCount {
                tasks: tasks as u128,
            }
            .into());
        }
        for (k, e) in edges.iter().enumerate() {
            if e.src as usize >= tasks || e.dst as usize >= tasks {
                return Err(PatternError::TaskOutOfRange {
                    index: k,
                    src: e.src,
                    dst: e.dst,
                    tasks,
                }
                .into());
            }
        }
        Ok(Self {
            tasks,
            edges: merge(edges, saturate)?,
            grid: None,
            shape: None,
            description,
            undirected: UndirectedCache::default(),
        })
    }

    /// The pattern of a Cartesian grid (see [`CartGrid`]).
    ///
    /// # Errors
    /// An invalid grid ([`CartGrid::validate`]).
    pub fn grid(g: &CartGrid) -> Result<Self> {
        Self::grid_with(g, false)
    }

    /// [`Pattern::grid`] for a grid the optimiser derives (the grid of node-sized
    /// tiles, whose bytes per message are already saturated sums): the two messages
    /// between the neighbours of an extent-2 dimension saturate at `u64::MAX` when
    /// merged, as [`Pattern::from_edges_saturating`] does.
    ///
    /// # Errors
    /// An invalid grid ([`CartGrid::validate`]).
    pub(crate) fn grid_saturating(g: &CartGrid) -> Result<Self> {
        Self::grid_with(g, true)
    }

    fn grid_with(g: &CartGrid, saturate: bool) -> Result<Self> {
        g.validate()?;
        let n = g.tasks();
        let mut edges = Vec::with_capacity(n * 2 * g.dims.len());
        for t in 0..n {
            let c = g.coords(t);
            for k in 0..g.dims.len() {
                let d = g.dims[k];
                if d == 1 || g.bytes[k] == 0 {
                    continue;
                }
                for up in [false, true] {
                    let mut nc = c.clone();
                    if up {
                        if c[k] + 1 == d {
                            if !g.periodic[k] {
                                continue;
                            }
                            nc[k] = 0;
                        } else {
                            nc[k] += 1;
                        }
                    } else if c[k] == 0 {
                        if !g.periodic[k] {
                            continue;
                        }
                        nc[k] = d - 1;
                    } else {
                        nc[k] -= 1;
                    }
                    edges.push(Edge {
                        src: t as u32,
                        dst: g.task(&nc) as u32,
                        bytes: g.bytes[k],
                    });
                }
            }
        }
        let dims: Vec<String> = g.dims.iter().map(usize::to_string).collect();
        let bytes: Vec<String> = g.bytes.iter().map(u64::to_string).collect();
        let description = format!(
            "{} grid{}, bytes per message {}",
            dims.join("x"),
            if g.periodic.iter().all(|&p| p) {
                " (periodic)"
            } else if g.periodic.iter().any(|&p| p) {
                " (partly periodic)"
            } else {
                ""
            },
            bytes.join("/")
        );
        let mut p = Self::from_edges_with(n, edges, description, saturate)?;
        p.grid = Some(g.clone());
        Ok(p)
    }

    /// This pattern with tasks `tasks()..slots` added, sending and receiving nothing:
    /// mapped onto a machine of `slots` slots, the added tasks mark the slots that stay
    /// empty (the mapper chooses them, packing or spreading as the objective prefers),
    /// and the job's ranks are the first `tasks()`.
    ///
    /// # Errors
    /// [`PatternError::TooFewSlots`] if `slots < tasks()`, [`PatternError::TaskCount`]
    /// if `slots > MAX_TASKS`.
    pub fn padded(&self, slots: usize) -> Result<Self> {
        if slots < self.tasks {
            return Err(PatternError::TooFewSlots {
                tasks: self.tasks,
                slots,
            }
            .into());
        }
        let mut p = Self::from_edges(
            slots,
            self.edges.clone(),
            format!(
                "{} ({} on {})",
                self.description,
                crate::errors::count(self.tasks, "task"),
                crate::errors::count(slots, "slot")
            ),
        )?;
        if slots == self.tasks {
            p.grid.clone_from(&self.grid);
            p.shape.clone_from(&self.shape);
            p.description.clone_from(&self.description);
        }
        Ok(p)
    }

    /// The traffic of a copr reshuffle: `V[s][t]·element_size` bytes from `s` to `t`.
    ///
    /// # Errors
    /// [`PatternError::BytesOverflow`] if the byte count of an entry overflows 64
    /// bits, [`PatternError::TaskCount`] if the volume matrix has more than
    /// [`MAX_TASKS`] ranks.
    pub fn from_volumes(v: &Volumes, element_size: u64) -> Result<Self> {
        let mut edges = Vec::new();
        for (s, t, n) in v.matrix().iter() {
            let bytes = n
                .checked_mul(element_size)
                .ok_or(PatternError::BytesOverflow {
                    src: s as u64,
                    dst: t as u64,
                })?;
            edges.push(Edge {
                src: s as u32,
                dst: t as u32,
                bytes,
            });
        }
        Self::from_edges(
            v.ranks(),
            edges,
            format!("reshuffle volumes of {} ranks", v.ranks()),
        )
    }

    /// Reads a graph file: TOML or JSON (`tasks = N` optional, `edges = [[src, dst,
    /// bytes], …]`; `.toml`/`.json` by extension, in any case), a Scotch source graph
    /// (`.grf`, `.src`) or a METIS graph file (`.graph`, `.metis`), whose undirected
    /// edge of weight `w` becomes a message of `w` bytes each way (1 byte without edge
    /// weights; Scotch's cost of a mapping is then half its hop-bytes; vertex weights
    /// are ignored), or, for any other name, an edge list: one message `src dst bytes` per line (whitespace or commas), `#`
    /// comments, and an optional first line `tasks N`. Without `tasks`, the number of
    /// tasks is one more than the largest id.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read (or exceeds
    /// [`copr::files::MAX_FILE_BYTES`], 64 MiB), [`Error::Parse`] with the line number
    /// for a malformed line or field, or for TOML of more than 16 MiB (its reader needs
    /// about 80 bytes of memory per byte; the edge list and JSON take 64 MiB).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = copr::files::read_file(path)?;
        let text = copr_topology::files::skip_bom(&text);
        // `.JSON` as `.json`, as machine files are read
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let ext = ext.as_str();
        let parse_err = |detail: String| Error::Parse {
            path: path.to_owned(),
            detail,
        };
        if let Some(format) = GraphFormat::of_extension(ext) {
            let (tasks, messages) = format
                .read(text, MAX_TASKS, MAX_TASKS_WHY)
                .map_err(parse_err)?;
            let edges = messages
                .into_iter()
                .map(|(src, dst, bytes)| Edge { src, dst, bytes })
                .collect();
            let name = path.display().to_string();
            return Self::from_edges(tasks, edges, format!("graph {name}"))
                .map_err(|e| e.in_file(path));
        }
        let (declared, raw): (Option<u64>, Vec<RawEdge>) = match ext {
            "toml" | "json" => {
                let doc: GraphDoc = if ext == "json" {
                    serde_json::from_str(text).map_err(|e| parse_err(e.to_string()))?
                } else if text.len() > MAX_TOML_BYTES {
                    // the limit of every TOML file (1.3 GB of the reader's memory)
                    return Err(parse_err(format!(
                        "{} bytes of TOML: a TOML graph holds at most {MAX_TOML_BYTES} \
                         (its reader needs about 80 bytes of memory per byte); write a larger \
                         graph as an edge list (`src dst bytes` per line) or as JSON",
                        text.len()
                    )));
                } else {
                    toml::from_str(text).map_err(|e| parse_err(toml_detail(text, &e)))?
                };
                let raw = doc
                    .edges
                    .iter()
                    .enumerate()
                    .map(|(k, &Triple(s, d, b))| (k, s, d, b))
                    .collect();
                (doc.tasks, raw)
            }
            _ => {
                let (declared, raw) = parse_edge_list(text)
                    .map_err(|d| parse_err(crate::graph_formats::hint_for_edge_list(text, d)))?;
                let total = raw.iter().map(|&(_, _, _, b)| u128::from(b)).sum();
                check_recording(text, total).map_err(parse_err)?;
                (declared, raw)
            }
        };
        let is_list = !matches!(ext, "toml" | "json");
        let at = |k: usize| {
            if is_list {
                format!("line {k}")
            } else {
                format!("edges[{k}]")
            }
        };
        let mut max_id = 0u64;
        for &(k, s, d, _) in &raw {
            for (field, v) in [("src", s), ("dst", d)] {
                if v >= MAX_TASKS as u64 {
                    return Err(parse_err(format!(
                        "{}: {field} {v}: task ids must be below {MAX_TASKS} ({MAX_TASKS_WHY})",
                        at(k)
                    )));
                }
            }
            max_id = max_id.max(s).max(d);
        }
        let tasks = match declared {
            Some(t) => {
                if t == 0 || t > MAX_TASKS as u64 {
                    return Err(parse_err(format!(
                        "tasks {t}: must be in 1..={MAX_TASKS} ({MAX_TASKS_WHY})"
                    )));
                }
                if let Some(&(k, s, d, _)) = raw.iter().find(|&&(_, s, d, _)| s >= t || d >= t) {
                    return Err(parse_err(format!(
                        "{}: message {s} -> {d} names a task >= tasks = {t}",
                        at(k)
                    )));
                }
                t as usize
            }
            None if raw.is_empty() => {
                return Err(parse_err(if text.trim().is_empty() {
                    "the file is empty: nothing to map".into()
                } else {
                    "no messages and no task count: nothing to map".into()
                }))
            }
            None => max_id as usize + 1,
        };
        let edges = raw
            .iter()
            .map(|&(_, s, d, b)| Edge {
                src: s as u32,
                dst: d as u32,
                bytes: b,
            })
            .collect();
        let name = path.display().to_string();
        Self::from_edges(tasks, edges, format!("graph {name}")).map_err(|e| e.in_file(path))
    }

    /// Number of tasks.
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// The messages, sorted by `(src, dst)`, without duplicates, self-messages or zero
    /// sizes.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The grid, when the pattern is a Cartesian grid.
    pub fn grid_spec(&self) -> Option<&CartGrid> {
        self.grid.as_ref()
    }

    /// The process grid the tasks form: the grid of a grid pattern, or the grid an
    /// algorithm's pattern ([`Pattern::algorithm`]) runs on (whose messages are not the
    /// neighbour exchange); what the strategies that follow a grid's geometry (tiles,
    /// Hilbert) use.
    pub fn shape(&self) -> Option<&CartGrid> {
        self.grid.as_ref().or(self.shape.as_ref())
    }

    /// Sets the grid the tasks form without claiming the grid's neighbour traffic.
    pub(crate) fn set_shape(&mut self, g: CartGrid) {
        self.shape = Some(g);
    }

    /// A one-line description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Σ bytes over all messages.
    pub fn total_bytes(&self) -> u128 {
        self.edges.iter().map(|e| u128::from(e.bytes)).sum()
    }

    /// The quotient of the pattern under the grouping `group` (task → group, `groups`
    /// groups), one task per group: `bytes(a→b) = Σ bytes(s→t)` over the messages with
    /// `group[s] = a ≠ b = group[t]` (a pair's sum saturates at `u64::MAX`; messages
    /// inside a group are dropped), and the bytes between groups (exact).
    ///
    /// # Complexity
    /// `O(m log m)` for `m` messages.
    ///
    /// # Errors
    /// As [`Pattern::from_edges`] (no groups, too many, a group number `>= groups`).
    ///
    /// # Panics
    /// If `group` is shorter than the pattern's tasks (a broken caller contract).
    pub(crate) fn quotient(
        &self,
        group: &[u32],
        groups: usize,
        description: String,
    ) -> Result<(Self, u128)> {
        let mut cut = 0u128;
        let mut between: Vec<Edge> = Vec::with_capacity(self.edges.len());
        for e in &self.edges {
            let (src, dst) = (group[e.src as usize], group[e.dst as usize]);
            if src != dst {
                cut += u128::from(e.bytes);
                between.push(Edge {
                    src,
                    dst,
                    bytes: e.bytes,
                });
            }
        }
        between.sort_unstable_by_key(|e| (e.src, e.dst));
        let mut edges: Vec<Edge> = Vec::with_capacity(between.len());
        for e in between {
            match edges.last_mut() {
                Some(l) if (l.src, l.dst) == (e.src, e.dst) => {
                    l.bytes = l.bytes.saturating_add(e.bytes);
                }
                _ => edges.push(e),
            }
        }
        Ok((Self::from_edges(groups, edges, description)?, cut))
    }

    /// Undirected adjacency: for each task, its neighbours and the bytes exchanged
    /// both ways (`bytes(u→v) + bytes(v→u)`), as CSR `(offsets, (neighbour, bytes))`.
    ///
    /// # Complexity
    /// `O(m log m)` the first time, then a copy (see [`Pattern::undirected_ref`]).
    pub fn undirected(&self) -> (Vec<usize>, Vec<(u32, u64)>) {
        let (off, adj) = self.undirected_ref();
        (off.to_vec(), adj.to_vec())
    }

    /// [`Pattern::undirected`] without the copy: built on first use and kept.
    pub fn undirected_ref(&self) -> (&[usize], &[(u32, u64)]) {
        let (off, adj) = self.undirected.0.get_or_init(|| self.build_undirected());
        (off, adj)
    }

    /// The messages are sorted by `(src, dst)` without repeats: each task's messages
    /// out (by receiver) and in (by sender, bucketed in that order) are two sorted
    /// lists, merged per task. `O(n + m)`.
    fn build_undirected(&self) -> (Vec<usize>, Vec<(u32, u64)>) {
        let n = self.tasks;
        let mut out_off = vec![0usize; n + 1];
        let mut in_off = vec![0usize; n + 1];
        for e in &self.edges {
            out_off[e.src as usize + 1] += 1;
            in_off[e.dst as usize + 1] += 1;
        }
        for t in 0..n {
            out_off[t + 1] += out_off[t];
            in_off[t + 1] += in_off[t];
        }
        let mut fill = in_off.clone();
        let mut ins: Vec<(u32, u64)> = vec![(0, 0); self.edges.len()];
        for e in &self.edges {
            ins[fill[e.dst as usize]] = (e.src, e.bytes);
            fill[e.dst as usize] += 1;
        }
        let mut off = vec![0usize; n + 1];
        let mut adj: Vec<(u32, u64)> = Vec::with_capacity(2 * self.edges.len());
        for t in 0..n {
            let out = self.edges[out_off[t]..out_off[t + 1]]
                .iter()
                .map(|e| (e.dst, e.bytes));
            let mut out = out.peekable();
            let mut into = ins[in_off[t]..in_off[t + 1]].iter().copied().peekable();
            loop {
                let x = match (out.peek().copied(), into.peek().copied()) {
                    (Some((a, w)), Some((b, v))) if a == b => {
                        out.next();
                        into.next();
                        (a, w.saturating_add(v))
                    }
                    (Some(x), Some((b, _))) if x.0 < b => {
                        out.next();
                        x
                    }
                    (_, Some(y)) => {
                        into.next();
                        y
                    }
                    (Some(x), None) => {
                        out.next();
                        x
                    }
                    (None, None) => break,
                };
                adj.push(x);
            }
            off[t + 1] = adj.len();
        }
        (off, adj)
    }
}

/// `msgs` messages between random tasks of `n` (self-messages dropped), each of 1 to
/// `max_bytes` bytes: the unit tests' random patterns.
#[cfg(test)]
pub(crate) fn random_pattern(
    n: usize,
    msgs: usize,
    max_bytes: u64,
    rng: &mut copr::rng::SplitMix,
) -> Pattern {
    let edges = (0..msgs)
        .map(|_| Edge {
            src: (rng.next_u64() % n as u64) as u32,
            dst: (rng.next_u64() % n as u64) as u32,
            bytes: 1 + rng.next_u64() % max_bytes,
        })
        .filter(|e| e.src != e.dst)
        .collect();
    Pattern::from_edges(n, edges, String::new()).expect("a valid random pattern")
}

/// Sorts messages, drops self-messages and empty ones, merges repeated pairs (their
/// sum saturating at `u64::MAX` if `saturate`, else an overflow is an error).
fn merge(mut edges: Vec<Edge>, saturate: bool) -> Result<Vec<Edge>> {
    edges.retain(|e| e.src != e.dst && e.bytes > 0);
    edges.sort_unstable_by_key(|e| (e.src, e.dst));
    let mut out: Vec<Edge> = Vec::with_capacity(edges.len());
    for e in edges {
        match out.last_mut() {
            Some(l) if l.src == e.src && l.dst == e.dst => {
                l.bytes = match l.bytes.checked_add(e.bytes) {
                    Some(b) => b,
                    None if saturate => u64::MAX,
                    None => {
                        return Err(PatternError::BytesOverflow {
                            src: u64::from(e.src),
                            dst: u64::from(e.dst),
                        }
                        .into())
                    }
                };
            }
            _ => out.push(e),
        }
    }
    Ok(out)
}

/// A message as read: (line or entry number, src, dst, bytes).
type RawEdge = (usize, u64, u64, u64);

/// Parses an edge list: `(line number, src, dst, bytes)` per message and the optional
/// `tasks N` header.
fn parse_edge_list(text: &str) -> std::result::Result<(Option<u64>, Vec<RawEdge>), String> {
    let mut tasks = None;
    let mut out = Vec::new();
    let mut seen_data = false;
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let body = line.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let fields = edge_list_fields(body).ok_or_else(|| {
            format!(
                "line {ln}: an empty field (two commas in a row, or a comma at the start or \
                 end) in `{body}`"
            )
        })?;
        if fields[0] == "tasks" {
            if seen_data || tasks.is_some() {
                return Err(format!(
                    "line {ln}: `tasks N` must be the first line with data"
                ));
            }
            if fields.len() != 2 {
                return Err(format!("line {ln}: expected `tasks N`, found `{body}`"));
            }
            tasks = Some(
                fields[1]
                    .parse::<u64>()
                    .map_err(|_| format!("line {ln}: tasks: `{}` is not a count", fields[1]))?,
            );
            continue;
        }
        seen_data = true;
        if fields.len() != 3 {
            return Err(format!(
                "line {ln}: expected `src dst bytes`, found {} fields in `{body}`",
                fields.len()
            ));
        }
        let mut v = [0u64; 3];
        for (k, name) in ["src", "dst", "bytes"].iter().enumerate() {
            v[k] = fields[k].parse::<u64>().map_err(|_| {
                format!(
                    "line {ln}: {name}: `{}` is not a non-negative integer",
                    fields[k]
                )
            })?;
        }
        out.push((ln, v[0], v[1], v[2]));
    }
    Ok((tasks, out))
}

/// The fields of an edge-list line (not empty, comment removed): separated by
/// whitespace or by one comma with optional whitespace around it; `None` for an empty
/// field (`0,,1,100`, `,0,1,100`, `0,1,100,`).
fn edge_list_fields(body: &str) -> Option<Vec<&str>> {
    let mut fields = Vec::new();
    for part in body.split(',') {
        let before = fields.len();
        fields.extend(part.split_whitespace());
        if fields.len() == before {
            return None;
        }
    }
    Some(fields)
}

/// Messages grouped by task pair, for tests and summaries: `(min, max) → bytes both
/// ways`.
pub fn pair_bytes(p: &Pattern) -> BTreeMap<(u32, u32), u64> {
    let mut m = BTreeMap::new();
    for e in p.edges() {
        let k = (e.src.min(e.dst), e.src.max(e.dst));
        *m.entry(k).or_insert(0u64) += e.bytes;
    }
    m
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

/// How every file the recorder (`COPR_RECORD`) writes begins.
const HEADER: &str = "# copr traffic recording";

/// What the recorder writes at `MPI_Init`, replaced at `MPI_Finalize`: a file that still
/// says it is from a run that ended before `MPI_Finalize`.
pub const INCOMPLETE_RECORDING: &str = "# copr traffic recording: incomplete";

/// Checks a graph file's text against what the recorder says of it: a recording still
/// marked [`INCOMPLETE_RECORDING`] is refused, and a recording's `# total: M messages, B bytes`
/// line must equal `total`, the sum of its messages' bytes (a truncated or edited recording
/// is refused rather than mapped with traffic missing). Files that do not begin with
/// the recorder's header line are not checked.
///
/// # Errors
/// The reason, with the line of the `# total:` and both sums.
pub(crate) fn check_recording(text: &str, total: u128) -> std::result::Result<(), String> {
    if text.lines().any(|l| l.starts_with(INCOMPLETE_RECORDING)) {
        return Err(
            "an incomplete recording: the recorder writes the file at MPI_Finalize, which \
             this run did not reach (it aborted or was killed); record a run that ends"
                .into(),
        );
    }
    if !text.starts_with(HEADER) {
        return Ok(());
    }
    let Some((ln, line)) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("# total: "))
    else {
        return Ok(());
    };
    // `# total: M messages, B bytes`
    let stated = line
        .split_whitespace()
        .rev()
        .nth(1)
        .and_then(|b| b.parse::<u128>().ok())
        .filter(|_| line.ends_with(" bytes"))
        .ok_or_else(|| {
            format!(
                "line {}: expected `# total: M messages, B bytes`, found `{}`",
                ln + 1,
                line.trim()
            )
        })?;
    if total != stated {
        return Err(format!(
            "line {}: the recording's total is {stated} bytes but its messages sum to {total}: \
             the file is truncated or edited (delete the `# total:` line to map it as it is)",
            ln + 1
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_neighbours_periodic_and_not() {
        let g = CartGrid::new(vec![3, 4], vec![false, true], vec![5, 7]).unwrap();
        let p = Pattern::grid(&g).unwrap();
        // task 0 = (0,0): down (1,0) = 4 bytes 5; no up; left (0,3) = 3, right (0,1) = 1
        let out0: Vec<(u32, u64)> = p
            .edges()
            .iter()
            .filter(|e| e.src == 0)
            .map(|e| (e.dst, e.bytes))
            .collect();
        assert_eq!(out0, vec![(1, 7), (3, 7), (4, 5)]);
        // 12 tasks x 2 row messages + (3-1)*4*2 column messages
        assert_eq!(p.edges().len(), 24 + 16);
    }

    #[test]
    fn extent_two_merges_both_directions() {
        let g = CartGrid::new(vec![2], vec![true], vec![10]).unwrap();
        let p = Pattern::grid(&g).unwrap();
        assert_eq!(
            p.edges(),
            &[
                Edge {
                    src: 0,
                    dst: 1,
                    bytes: 20
                },
                Edge {
                    src: 1,
                    dst: 0,
                    bytes: 20
                }
            ]
        );
    }

    #[test]
    fn edge_list_errors_name_the_line() {
        let e = parse_edge_list("# c\n0 1 5\n1 x 3\n").unwrap_err();
        assert!(e.contains("line 3") && e.contains("dst"), "{e}");
        let e = parse_edge_list("0 1\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("2 fields"), "{e}");
        let (t, v) = parse_edge_list("tasks 4\n0,1,5\n").unwrap();
        assert_eq!(t, Some(4));
        assert_eq!(v, vec![(2, 0, 1, 5)]);
        let e = parse_edge_list("0 1 5\ntasks 4\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        // an empty field between, before or after commas: not skipped
        for bad in ["0,,1,100", ",0,1,100", "0,1,100,", "0, ,1", "0 1,,100", ","] {
            let e = parse_edge_list(&format!("0 1 5\n{bad}\n")).unwrap_err();
            assert!(
                e.contains("line 2") && e.contains("empty field"),
                "{bad}: {e}"
            );
        }
        let (_, v) = parse_edge_list("0 , 1 ,5\n2\t3, 7 # c,,\n").unwrap();
        assert_eq!(v, vec![(1, 0, 1, 5), (2, 2, 3, 7)]);
    }

    #[test]
    fn undirected_is_kept_and_equality_ignores_it() {
        let e = |src, dst, bytes| Edge { src, dst, bytes };
        let p = Pattern::from_edges(3, vec![e(0, 2, 5), e(2, 0, 1)], String::new()).unwrap();
        let q = p.clone();
        let (off, adj) = p.undirected_ref();
        assert_eq!(off, &[0, 1, 1, 2]);
        assert_eq!(adj, &[(2, 6), (0, 6)]);
        // p has its adjacency built, q not: still equal, and q builds the same
        assert_eq!(p, q);
        assert_eq!(q.undirected(), (off.to_vec(), adj.to_vec()));
        let r = Pattern::from_edges(3, vec![e(0, 2, 5)], String::new()).unwrap();
        assert_ne!(p, r);
    }

    #[test]
    fn the_quotient_merges_messages_between_groups_and_drops_those_inside() {
        let e = |src, dst, bytes| Edge { src, dst, bytes };
        let big = u64::MAX - 1;
        let p = Pattern::from_edges(
            5,
            vec![
                e(0, 1, 5),   // inside group 0
                e(0, 2, 7),   // 0 → 1
                e(1, 3, 2),   // 0 → 1 again: merged
                e(4, 0, 3),   // 2 → 0
                e(2, 4, big), // 1 → 2, then saturates
                e(3, 4, 9),
            ],
            String::new(),
        )
        .unwrap();
        let (q, cut) = p.quotient(&[0, 0, 1, 1, 2], 3, "q".into()).unwrap();
        let got: Vec<(u32, u32, u64)> = q.edges().iter().map(|e| (e.src, e.dst, e.bytes)).collect();
        assert_eq!(got, [(0, 1, 9), (1, 2, u64::MAX), (2, 0, 3)]);
        assert_eq!(cut, 9 + 3 + u128::from(big) + 9);
        assert_eq!(q.tasks(), 3);
        assert_eq!(q.description(), "q");
        // a group number out of range is the pattern's error, not a panic
        assert!(p.quotient(&[0, 0, 1, 1, 3], 3, String::new()).is_err());
    }

    #[test]
    fn undirected_sums_both_ways() {
        let p = Pattern::from_edges(
            3,
            vec![
                Edge {
                    src: 0,
                    dst: 1,
                    bytes: 3,
                },
                Edge {
                    src: 1,
                    dst: 0,
                    bytes: 4,
                },
                Edge {
                    src: 2,
                    dst: 1,
                    bytes: 1,
                },
            ],
            String::new(),
        )
        .unwrap();
        let (off, adj) = p.undirected();
        assert_eq!(off, vec![0, 1, 3, 4]);
        assert_eq!(adj, vec![(1, 7), (0, 7), (2, 1), (1, 1)]);
    }

    #[test]
    fn toml_and_json_edges_take_exactly_three_values() {
        let doc: GraphDoc = toml::from_str("edges = [[0, 1, 10], [1, 2, 3]]").unwrap();
        let got: Vec<(u64, u64, u64)> = doc.edges.iter().map(|t| (t.0, t.1, t.2)).collect();
        assert_eq!(got, vec![(0, 1, 10), (1, 2, 3)]);
        // a fourth value was once dropped unread by TOML (the edge counted as 0 -> 1
        // of 10 bytes); a missing third one is refused too
        for text in [
            "edges = [[0, 1, 10, 4]]",
            "edges = [[0, 1]]",
            "edges = [[0, 1, 2, [3]]]",
        ] {
            let e = toml::from_str::<GraphDoc>(text).unwrap_err().to_string();
            assert!(e.contains("[src, dst, bytes]"), "{text}: {e}");
        }
        for text in [r#"{"edges": [[0, 1, 10, 4]]}"#, r#"{"edges": [[0]]}"#] {
            let e = serde_json::from_str::<GraphDoc>(text)
                .unwrap_err()
                .to_string();
            assert!(e.contains("[src, dst, bytes]"), "{text}: {e}");
        }
        let doc: GraphDoc = serde_json::from_str(r#"{"tasks": 3, "edges": [[2, 0, 7]]}"#).unwrap();
        assert_eq!((doc.tasks, doc.edges[0].0, doc.edges[0].2), (Some(3), 2, 7));
    }

    #[test]
    fn undirected_adjacency_is_the_sorted_sum_of_both_directions() {
        // random patterns (pairs one way and both ways, a pair both ways of u64::MAX
        // bytes that saturates): each task's neighbours in order, bytes summed both ways
        let mut rng = copr::rng::SplitMix(41);
        for (n, msgs) in [(2, 1), (30, 40), (200, 3000)] {
            let mut p = random_pattern(n, msgs, 500, &mut rng);
            if n == 30 {
                let mut edges = p.edges().to_vec();
                edges.retain(|e| (e.src, e.dst) != (3, 4) && (e.src, e.dst) != (4, 3));
                for (src, dst) in [(3, 4), (4, 3)] {
                    edges.push(Edge {
                        src,
                        dst,
                        bytes: u64::MAX,
                    });
                }
                p = Pattern::from_edges(n, edges, String::new()).unwrap();
            }
            let mut pairs: Vec<(u32, u32, u64)> = Vec::new();
            for e in p.edges() {
                pairs.push((e.src, e.dst, e.bytes));
                pairs.push((e.dst, e.src, e.bytes));
            }
            pairs.sort_unstable();
            let mut want: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
            for (a, b, w) in pairs {
                match want[a as usize].last_mut() {
                    Some(l) if l.0 == b => l.1 = l.1.saturating_add(w),
                    _ => want[a as usize].push((b, w)),
                }
            }
            let (off, adj) = p.undirected_ref();
            for t in 0..n {
                assert_eq!(
                    &adj[off[t]..off[t + 1]],
                    &want[t][..],
                    "{n} tasks, task {t}"
                );
            }
            assert_eq!(off[n], adj.len());
        }
    }
}
