//! Inside one node: the hierarchy of processing units (PUs) and the cost
//! between two PUs by the level of their deepest common ancestor.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Origin, Result, TopologyError};
use crate::files::{FieldPath, Invalid};
use crate::link::{invalid, LinkCost, LinkSpec};

/// The kind of the deepest object two PUs share, nearest first.
///
/// The order (`Pu < Core < … < Machine`) is the order of distance: when a
/// configuration gives no cost for a level, the next farther level that has
/// one is used.
///
/// ```
/// use copr_topology::Level;
/// assert_eq!(Level::parse("pack"), Some(Level::Package));
/// assert_eq!(Level::parse("L3Cache"), Some(Level::L3));
/// assert!(Level::Core < Level::Numa);
/// assert_eq!(Level::Numa.to_string(), "numa");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Both ranks on the same PU (oversubscription).
    Pu,
    /// Same core (hyperthreads).
    Core,
    /// Same L1 cache.
    L1,
    /// Same L2 cache.
    L2,
    /// Same L3 cache.
    L3,
    /// Same L4 cache.
    L4,
    /// Same L5 cache.
    L5,
    /// Same NUMA node, where the NUMA node is an object of its own (a
    /// `numa` level of a shape; with hwloc, a Group holding a NUMA node).
    Numa,
    /// Same die.
    Die,
    /// Same package (socket).
    Package,
    /// Same hwloc group.
    Group,
    /// Same machine (node) only.
    Machine,
}

impl Level {
    /// All levels, nearest first.
    pub const ALL: [Level; 12] = [
        Level::Pu,
        Level::Core,
        Level::L1,
        Level::L2,
        Level::L3,
        Level::L4,
        Level::L5,
        Level::Numa,
        Level::Die,
        Level::Package,
        Level::Group,
        Level::Machine,
    ];

    /// The level's lowercase name as used in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            Level::Pu => "pu",
            Level::Core => "core",
            Level::L1 => "l1",
            Level::L2 => "l2",
            Level::L3 => "l3",
            Level::L4 => "l4",
            Level::L5 => "l5",
            Level::Numa => "numa",
            Level::Die => "die",
            Level::Package => "package",
            Level::Group => "group",
            Level::Machine => "machine",
        }
    }

    /// Parses a level name, accepting hwloc's spellings (case-insensitive):
    /// `pu`, `core`, `l1`/`l1cache`/`l1d`/`l1i`, …, `numa`/`numanode`/`node`,
    /// `die`, `pack`/`package`/`socket`, `group`, `machine`.
    pub fn parse(s: &str) -> Option<Level> {
        let s = s.to_ascii_lowercase();
        Some(match s.as_str() {
            "pu" => Level::Pu,
            "core" => Level::Core,
            "l1" | "l1cache" | "l1d" | "l1dcache" | "l1i" | "l1icache" | "l1u" => Level::L1,
            "l2" | "l2cache" | "l2d" | "l2i" | "l2icache" | "l2u" => Level::L2,
            "l3" | "l3cache" | "l3d" | "l3i" | "l3icache" | "l3u" => Level::L3,
            "l4" | "l4cache" => Level::L4,
            "l5" | "l5cache" => Level::L5,
            "numa" | "numanode" | "node" => Level::Numa,
            "die" => Level::Die,
            "pack" | "package" | "socket" => Level::Package,
            "group" => Level::Group,
            "machine" => Level::Machine,
            _ => return None,
        })
    }

    fn idx(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Latency and bandwidth per [`Level`]; a level left out uses the next
/// farther level that is given.
///
/// In TOML: `[intra.levels]` with entries such as
/// `l3 = { latency = 3e-7, bandwidth = 1e10 }`. Unknown level names are
/// errors. [`LevelCosts::default`] holds rough x86 values (shared-memory MPI
/// latencies of 0.15–0.8 µs, 5–12 GB/s): `pu`, `core`, `l3`, `numa`,
/// `package`, `machine` given, the others falling back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelCosts {
    /// Same PU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pu: Option<LinkSpec>,
    /// Same core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<LinkSpec>,
    /// Same L1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1: Option<LinkSpec>,
    /// Same L2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<LinkSpec>,
    /// Same L3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l3: Option<LinkSpec>,
    /// Same L4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l4: Option<LinkSpec>,
    /// Same L5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l5: Option<LinkSpec>,
    /// Same NUMA node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<LinkSpec>,
    /// Same die.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub die: Option<LinkSpec>,
    /// Same package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<LinkSpec>,
    /// Same group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<LinkSpec>,
    /// Same machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<LinkSpec>,
}

impl Default for LevelCosts {
    fn default() -> Self {
        let s = |latency, bandwidth| Some(LinkSpec { latency, bandwidth });
        Self {
            pu: s(1.5e-7, 1.2e10),
            core: s(1.5e-7, 1.2e10),
            l1: None,
            l2: None,
            l3: s(3.0e-7, 1.0e10),
            l4: None,
            l5: None,
            numa: s(4.0e-7, 8.0e9),
            die: None,
            package: s(5.0e-7, 8.0e9),
            group: None,
            machine: s(8.0e-7, 5.0e9),
        }
    }
}

impl LevelCosts {
    /// No level given (every lookup fails until levels are set).
    pub fn empty() -> Self {
        Self {
            pu: None,
            core: None,
            l1: None,
            l2: None,
            l3: None,
            l4: None,
            l5: None,
            numa: None,
            die: None,
            package: None,
            group: None,
            machine: None,
        }
    }

    /// The same costs with `level` set to `spec`.
    #[must_use]
    pub fn with(mut self, level: Level, spec: LinkSpec) -> Self {
        *self.slot(level) = Some(spec);
        self
    }

    /// The spec given for exactly `level`, if any.
    pub fn get(&self, level: Level) -> Option<LinkSpec> {
        match level {
            Level::Pu => self.pu,
            Level::Core => self.core,
            Level::L1 => self.l1,
            Level::L2 => self.l2,
            Level::L3 => self.l3,
            Level::L4 => self.l4,
            Level::L5 => self.l5,
            Level::Numa => self.numa,
            Level::Die => self.die,
            Level::Package => self.package,
            Level::Group => self.group,
            Level::Machine => self.machine,
        }
    }

    fn slot(&mut self, level: Level) -> &mut Option<LinkSpec> {
        match level {
            Level::Pu => &mut self.pu,
            Level::Core => &mut self.core,
            Level::L1 => &mut self.l1,
            Level::L2 => &mut self.l2,
            Level::L3 => &mut self.l3,
            Level::L4 => &mut self.l4,
            Level::L5 => &mut self.l5,
            Level::Numa => &mut self.numa,
            Level::Die => &mut self.die,
            Level::Package => &mut self.package,
            Level::Group => &mut self.group,
            Level::Machine => &mut self.machine,
        }
    }

    /// Checks every given spec.
    ///
    /// # Errors
    /// [`Invalid`] naming `at.<level>.latency` or `.bandwidth`.
    pub fn validate(&self, at: &FieldPath) -> Result<(), Invalid> {
        for l in Level::ALL {
            if let Some(s) = self.get(l) {
                s.validate(&at.key(l.name()))?;
            }
        }
        Ok(())
    }

    /// The cost used for `level`: its own, or the next farther given one.
    ///
    /// ```
    /// use copr_topology::{Level, LevelCosts, LinkSpec};
    /// let c = LevelCosts::empty()
    ///     .with(Level::L3, LinkSpec { latency: 1.0, bandwidth: 1.0 })
    ///     .with(Level::Machine, LinkSpec { latency: 3.0, bandwidth: 1.0 });
    /// assert_eq!(c.effective(Level::Core).unwrap().latency, 1.0);
    /// assert_eq!(c.effective(Level::Numa).unwrap().latency, 3.0);
    /// ```
    pub fn effective(&self, level: Level) -> Option<LinkSpec> {
        Level::ALL[level.idx()..].iter().find_map(|&l| self.get(l))
    }
}

/// One PU's place in its node: the objects above it, root first, each with
/// an identifier unique within the node and its [`Level`]; the PU itself is
/// last.
///
/// A NUMA node appears as an object of level [`Level::Numa`] when it has an
/// object of its own in the hierarchy (a `numa` level in a shape; with hwloc,
/// a Group whose only purpose is to hold a NUMA node). A NUMA node attached
/// to a cache, package or the machine is represented by that object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PuAncestry {
    /// `(object id, level)` from the root down to the PU.
    pub chain: Vec<(u64, Level)>,
}

/// Largest node, in PUs: 8192 (the PU × PU table then takes 64 MiB). Checked before
/// a tree is built from a shape, an hwloc synthetic description or a discovered
/// machine.
pub const MAX_NODE_PUS: usize = 8192;

/// The cost between PUs of one node, from the level of their deepest common
/// ancestor (see [`Level`]); all nodes of a machine share one `NodeTree`.
///
/// PUs are numbered `0..num_pus()` in hwloc logical order (depth-first).
///
/// # Complexity
/// Building: `O(P²·d)` for `P` PUs and tree depth `d`; memory `P²` bytes.
/// Lookups: `O(1)`.
///
/// ```
/// use copr_topology::{Level, LevelCosts, NodeTree};
/// let t = NodeTree::from_shape("pack:2 l3:1 core:4 pu:2", &LevelCosts::default()).unwrap();
/// assert_eq!(t.num_pus(), 16);
/// assert_eq!(t.level(0, 1), Level::Core);
/// assert_eq!(t.level(0, 2), Level::L3);
/// assert_eq!(t.level(0, 8), Level::Machine);
/// assert!(t.link(0, 8).latency > t.link(0, 2).latency);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTree {
    npu: usize,
    pair: Vec<u8>,
    costs: [LinkCost; 12],
    present: Vec<Level>,
    description: String,
}

impl NodeTree {
    /// Builds the pair table from each PU's ancestry.
    ///
    /// Two distinct PUs are classified by the level of their deepest common
    /// ancestor; a PU with itself is [`Level::Pu`].
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] if there are no PUs or more than
    /// [`MAX_NODE_PUS`], or if a level occurs for which neither it nor a
    /// farther level has a cost; [`TopologyError::InvalidValue`] for a bad
    /// cost.
    pub fn from_ancestry(
        pus: &[PuAncestry],
        costs: &LevelCosts,
        description: impl Into<String>,
    ) -> Result<Self> {
        let npu = pus.len();
        if npu == 0 {
            return Err(crate::link::inconsistent(
                "pus",
                "a node needs at least one PU",
            ));
        }
        if npu > MAX_NODE_PUS {
            return Err(crate::link::inconsistent(
                "pus",
                format!(
                    "a node of {npu} PUs is larger than the limit of {MAX_NODE_PUS} (copr_topology::MAX_NODE_PUS)"
                ),
            ));
        }
        costs
            .validate(&FieldPath::root().key("levels"))
            .map_err(invalid)?;
        let mut pair = vec![0u8; npu * npu];
        let mut seen = [false; 12];
        for a in 0..npu {
            for b in 0..npu {
                let l = classify(&pus[a], &pus[b], a == b);
                seen[l.idx()] = true;
                pair[a * npu + b] = l.idx() as u8;
            }
        }
        let mut table = [LinkCost::ZERO; 12];
        let mut present = Vec::new();
        for l in Level::ALL {
            if !seen[l.idx()] {
                continue;
            }
            present.push(l);
            let spec = costs.effective(l).ok_or_else(|| TopologyError::Inconsistent {
                origin: Origin::none(),
                field: format!("levels.{}", l.name()),
                message: format!(
                    "PUs sharing only a `{l}` occur, but neither `{l}` nor a farther level has a cost"
                ),
            })?;
            table[l.idx()] = spec
                .to_cost(&FieldPath::root().key("levels").key(l.name()))
                .map_err(invalid)?;
        }
        Ok(Self {
            npu,
            pair,
            costs: table,
            present,
            description: description.into(),
        })
    }

    /// Builds a tree from a shape in hwloc's synthetic syntax, without hwloc:
    /// `"pack:2 numa:2 l3:1 core:8 pu:1"` — levels from the root down, each
    /// `type:count` children per parent (attributes in parentheses are
    /// ignored; a missing final `pu:1` is added).
    ///
    /// # Errors
    /// [`TopologyError::Parse`] (field `shape`) for unknown types or bad
    /// counts; errors of [`NodeTree::from_ancestry`].
    pub fn from_shape(shape: &str, costs: &LevelCosts) -> Result<Self> {
        let levels = parse_shape(shape)?;
        let mut pus = Vec::new();
        let mut next_id = 1u64;
        let mut chain = vec![(0u64, Level::Machine)];
        build_shape(&levels, 0, &mut chain, &mut next_id, &mut pus);
        Self::from_ancestry(&pus, costs, format!("tree `{shape}`"))
    }

    /// The number of PUs.
    pub fn num_pus(&self) -> usize {
        self.npu
    }

    /// The level shared by PUs `a` and `b`.
    ///
    /// # Panics
    /// If `a` or `b` is `>= num_pus()`.
    #[inline]
    pub fn level(&self, a: usize, b: usize) -> Level {
        assert!(
            a < self.npu && b < self.npu,
            "PU ({a}, {b}) out of range 0..{}",
            self.npu
        );
        Level::ALL[self.pair[a * self.npu + b] as usize]
    }

    /// The cost between PUs `a` and `b`.
    ///
    /// # Panics
    /// If `a` or `b` is `>= num_pus()`.
    #[inline]
    pub fn link(&self, a: usize, b: usize) -> LinkCost {
        assert!(
            a < self.npu && b < self.npu,
            "PU ({a}, {b}) out of range 0..{}",
            self.npu
        );
        self.costs[self.pair[a * self.npu + b] as usize]
    }

    /// The cost used for `level`.
    pub fn level_cost(&self, level: Level) -> LinkCost {
        self.costs[level.idx()]
    }

    /// The levels that occur between some pair of PUs, nearest first.
    pub fn levels_present(&self) -> &[Level] {
        &self.present
    }

    /// Where the tree came from (shape, hwloc description or file).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The tree of the PUs `pus` alone, in that order: PU `i` of the result is PU
    /// `pus[i]` of `self`, and two of them share the level they share in `self` (with
    /// the same costs). For a node on which ranks are bound to some of the PUs.
    ///
    /// # Complexity
    /// `O(k²)` for `k = pus.len()`.
    ///
    /// ```
    /// use copr_topology::{Level, LevelCosts, NodeTree};
    /// let t = NodeTree::from_shape("pack:2 core:4", &LevelCosts::default()).unwrap();
    /// // one core of the first package, two of the second
    /// let r = t.restricted(&[5, 0, 6], "three cores").unwrap();
    /// assert_eq!(r.num_pus(), 3);
    /// assert_eq!(r.level(0, 2), Level::Package);
    /// assert_eq!(r.level(0, 1), Level::Machine);
    /// assert_eq!(r.levels_present(), [Level::Pu, Level::Package, Level::Machine]);
    /// ```
    ///
    /// # Errors
    /// [`TopologyError::Inconsistent`] if `pus` is empty, names a PU `>= num_pus()`,
    /// or names one twice.
    pub fn restricted(&self, pus: &[usize], description: impl Into<String>) -> Result<Self> {
        if pus.is_empty() {
            return Err(crate::link::inconsistent(
                "pus",
                "a node needs at least one PU",
            ));
        }
        let mut seen = vec![false; self.npu];
        for &p in pus {
            if p >= self.npu {
                return Err(crate::link::inconsistent(
                    "pus",
                    format!("PU {p} is not one of the tree's {} PUs", self.npu),
                ));
            }
            if std::mem::replace(&mut seen[p], true) {
                return Err(crate::link::inconsistent(
                    "pus",
                    format!("PU {p} is listed twice"),
                ));
            }
        }
        let k = pus.len();
        let mut pair = vec![0u8; k * k];
        let mut occurs = [false; 12];
        for (i, &a) in pus.iter().enumerate() {
            for (j, &b) in pus.iter().enumerate() {
                let l = self.pair[a * self.npu + b];
                occurs[l as usize] = true;
                pair[i * k + j] = l;
            }
        }
        Ok(Self {
            npu: k,
            pair,
            costs: self.costs,
            present: Level::ALL.into_iter().filter(|l| occurs[l.idx()]).collect(),
            description: description.into(),
        })
    }
}

fn classify(a: &PuAncestry, b: &PuAncestry, same: bool) -> Level {
    if same {
        return Level::Pu;
    }
    let common = a
        .chain
        .iter()
        .zip(&b.chain)
        .take_while(|(x, y)| x.0 == y.0)
        .count();
    if common == 0 {
        Level::Machine
    } else {
        a.chain[common - 1].1
    }
}

/// The levels of a shape for [`NodeTree::from_shape`]: also refuses an empty shape
/// (write `pu:1` for a node of one PU) and a level type listed twice (each type is one
/// level of the tree, priced once).
fn parse_shape(shape: &str) -> Result<Vec<(Level, usize)>> {
    let err = |message: String| TopologyError::Parse {
        origin: Origin::none(),
        field: "shape".into(),
        message,
    };
    if shape.trim().is_empty() {
        return Err(err(
            "the shape is empty: give its levels, e.g. `pack:2 core:8` (`pu:1` for a node of one PU)"
                .into(),
        ));
    }
    let levels = parse_levels(shape)?;
    for (k, &(level, _)) in levels.iter().enumerate() {
        if levels[..k].iter().any(|&(l, _)| l == level) {
            return Err(err(format!(
                "level `{}` is listed twice in `{shape}`: each level type appears once (multiply the counts, e.g. `pack:2 pack:2` is `pack:4`)",
                level.name()
            )));
        }
    }
    check_shape_pus("shape", shape, &levels)?;
    Ok(levels)
}

/// The `type:count` levels of a shape, a final `pu:1` added if missing.
pub(crate) fn parse_levels(shape: &str) -> Result<Vec<(Level, usize)>> {
    let err = |message: String| TopologyError::Parse {
        origin: Origin::none(),
        field: "shape".into(),
        message,
    };
    // Remove attribute groups "(...)".
    let mut clean = String::new();
    let mut depth = 0usize;
    for c in shape.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => clean.push(c),
            _ => {}
        }
    }
    let mut levels = Vec::new();
    for tok in clean.split_whitespace() {
        let (ty, count) = tok
            .split_once(':')
            .ok_or_else(|| err(format!("expected `type:count`, found `{tok}` in `{shape}`")))?;
        let level = Level::parse(ty)
            .ok_or_else(|| err(format!("unknown level type `{ty}` in `{shape}`")))?;
        let count: usize = count.parse().ok().filter(|&c| c >= 1).ok_or_else(|| {
            err(format!(
                "count `{count}` of `{ty}` must be a positive integer"
            ))
        })?;
        if level == Level::Machine {
            return Err(err("`machine` is the implicit root; do not list it".into()));
        }
        if levels.last().is_some_and(|&(l, _)| l == Level::Pu) {
            return Err(err(format!("`pu` must be the last level in `{shape}`")));
        }
        levels.push((level, count));
    }
    if levels.last().is_none_or(|&(l, _)| l != Level::Pu) {
        levels.push((Level::Pu, 1));
    }
    Ok(levels)
}

/// Refuses a shape of more than [`MAX_NODE_PUS`] PUs, naming `field`.
pub(crate) fn check_shape_pus(field: &str, shape: &str, levels: &[(Level, usize)]) -> Result<()> {
    let total = levels
        .iter()
        .try_fold(1u128, |t, &(_, c)| t.checked_mul(c as u128));
    match total {
        Some(t) if t <= MAX_NODE_PUS as u128 => Ok(()),
        _ => Err(TopologyError::Parse {
            origin: Origin::none(),
            field: field.into(),
            message: format!(
                "`{shape}` has {} PUs; at most {MAX_NODE_PUS} are supported (copr_topology::MAX_NODE_PUS)",
                total.map_or_else(|| "more than 2^128".to_string(), |t| t.to_string())
            ),
        }),
    }
}

fn build_shape(
    levels: &[(Level, usize)],
    depth: usize,
    chain: &mut Vec<(u64, Level)>,
    next_id: &mut u64,
    out: &mut Vec<PuAncestry>,
) {
    if depth == levels.len() {
        out.push(PuAncestry {
            chain: chain.clone(),
        });
        return;
    }
    let (level, count) = levels[depth];
    for _ in 0..count {
        chain.push((*next_id, level));
        *next_id += 1;
        build_shape(levels, depth + 1, chain, next_id, out);
        chain.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_level_from_shape() {
        let t =
            NodeTree::from_shape("pack:2 numa:2 l3:1 core:8 pu:1", &LevelCosts::default()).unwrap();
        assert_eq!(t.num_pus(), 32);
        assert_eq!(t.level(3, 3), Level::Pu);
        assert_eq!(t.level(0, 7), Level::L3);
        assert_eq!(t.level(0, 8), Level::Package);
        assert_eq!(t.level(0, 16), Level::Machine);
        let t = NodeTree::from_shape("pack:2 numa:2 core:2", &LevelCosts::default()).unwrap();
        assert_eq!(t.level(0, 1), Level::Numa);
        assert_eq!(t.level(0, 2), Level::Package);
        assert_eq!(
            t.levels_present(),
            [Level::Pu, Level::Numa, Level::Package, Level::Machine]
        );
    }

    #[test]
    fn bad_shapes() {
        for (s, needle) in [
            ("pack:2 cores:3", "unknown level type `cores`"),
            ("pack:0", "count `0`"),
            ("pack", "expected `type:count`"),
            ("pu:2 core:2", "`pu` must be the last"),
            ("", "the shape is empty"),
            ("  ", "the shape is empty"),
            ("pack:2 pack:2", "level `package` is listed twice"),
            ("pack:2 core:2 l3:1 core:4", "level `core` is listed twice"),
            ("core:2 pu:1 pu:1", "`pu` must be the last"),
        ] {
            let e = NodeTree::from_shape(s, &LevelCosts::default()).unwrap_err();
            let m = e.to_string();
            assert!(m.contains("shape") && m.contains(needle), "{m}");
        }
    }

    #[test]
    fn missing_far_level_is_an_error() {
        let c = LevelCosts::empty().with(
            Level::L3,
            LinkSpec {
                latency: 1.0,
                bandwidth: 1.0,
            },
        );
        let e = NodeTree::from_shape("pack:2 core:2", &c)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("levels.package") || e.contains("levels.pu"),
            "{e}"
        );
    }

    #[test]
    fn restricted_to_some_pus() {
        let c = LevelCosts::default();
        let full = NodeTree::from_shape("pack:2 l3:2 core:2", &c).unwrap();
        // the first core of every L3 is the tree `pack:2 l3:2`
        let r = full.restricted(&[0, 2, 4, 6], "firsts").unwrap();
        let small = NodeTree::from_shape("pack:2 l3:2", &c).unwrap();
        for a in 0..4 {
            for b in 0..4 {
                assert_eq!(r.level(a, b), small.level(a, b), "({a}, {b})");
            }
        }
        assert_eq!(r.levels_present(), small.levels_present());
        assert_eq!(r.description(), "firsts");
        // in another order: PU i of the result is the i-th listed
        let r = full.restricted(&[7, 6, 0], "").unwrap();
        assert_eq!(
            (r.level(0, 1), r.level(0, 2), r.level(1, 2)),
            (Level::L3, Level::Machine, Level::Machine)
        );
        assert_eq!(r.link(0, 1), full.link(7, 6));
        for (pus, needle) in [
            (&[][..], "at least one PU"),
            (&[0, 8][..], "PU 8 is not one of the tree's 8 PUs"),
            (&[3, 1, 3][..], "PU 3 is listed twice"),
        ] {
            let e = full.restricted(pus, "").unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }
}
