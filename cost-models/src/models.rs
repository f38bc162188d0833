//! The models: volume, latency + bandwidth, transform, locality penalty, and their
//! composition.

use std::sync::Arc;

use copr_topology::files::{check_nonneg, FieldPath, Invalid};
use copr_topology::Machine;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::model::{
    hinted_add_costs_from, hinted_add_group_bounds, hinted_candidates, hinted_process_groups,
    CostModel, ProcessGroups, SolverHints,
};
use crate::package::Package;

/// The `candidates` method of a model whose cost depends on the pair `(i, j)` only
/// through `i == j` (see `pair_free_candidates`).
macro_rules! pair_free_candidates_method {
    () => {
        fn candidates(
            &self,
            x: usize,
            incoming: &[(usize, Package)],
            out: &mut Vec<(usize, f64)>,
        ) -> Option<f64> {
            crate::candidates::pair_free_candidates(self, x, incoming, out)
        }
        fn add_group_bounds(
            &self,
            _x: usize,
            incoming: &[(usize, Package)],
            groups: &ProcessGroups,
            out: &mut [f64],
        ) -> bool {
            crate::candidates::pair_free_group_bounds(self, incoming, groups, out)
        }
    };
}

/// Locally-free volume (COSTA eq. 1): `w(i, j, s) = V(s)` (bytes) if
/// `i ≠ j`, else 0.
///
/// ```
/// use copr_cost_models::{CostModel, LocallyFreeVolume, Package};
/// assert_eq!(LocallyFreeVolume.cost(3, 4, &Package::plain(10)), 10.0);
/// assert_eq!(LocallyFreeVolume.cost(4, 4, &Package::plain(10)), 0.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocallyFreeVolume;

impl CostModel for LocallyFreeVolume {
    #[inline]
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        if from == to {
            0.0
        } else {
            pkg.bytes as f64
        }
    }
    fn describe(&self) -> String {
        "locally-free volume: V(s) bytes if i != j, else 0".into()
    }
    fn volume_scale(&self) -> Option<f64> {
        Some(1.0)
    }
    fn hints(&self) -> Option<&dyn SolverHints> {
        Some(self)
    }
}

impl SolverHints for LocallyFreeVolume {
    pair_free_candidates_method!();
}

/// Latency + bandwidth from a topology: `w(i, j, s) = L(i, j) + B(i, j)·V(s)`
/// seconds for `i ≠ j` and `s ≠ ∅`; 0 for `i = j` or an empty package.
///
/// ```
/// use std::sync::Arc;
/// use copr_cost_models::{CostModel, LatencyBandwidth, Package};
/// use copr_topology::{InterNode, LinkCost, Machine, PlacementRule};
/// let m = Machine::builder()
///     .inter(InterNode::Uniform(LinkCost::new(1e-6, 1e-9).unwrap()))
///     .rule(PlacementRule::packed(2, Some(1)))
///     .build()
///     .unwrap();
/// let w = LatencyBandwidth::new(Arc::new(m));
/// assert_eq!(w.cost(0, 1, &Package::plain(1000)), 1e-6 + 1e-9 * 1000.0);
/// assert_eq!(w.cost(1, 1, &Package::plain(1000)), 0.0);
/// assert_eq!(w.cost(0, 1, &Package::EMPTY), 0.0);
/// ```
#[derive(Clone, Debug)]
pub struct LatencyBandwidth {
    machine: Arc<Machine>,
    helpers: crate::candidates::SharedHelpers,
}

impl LatencyBandwidth {
    /// The model for `machine`.
    pub fn new(machine: Arc<Machine>) -> Self {
        Self {
            machine,
            helpers: Default::default(),
        }
    }

    /// The machine.
    pub fn machine(&self) -> &Arc<Machine> {
        &self.machine
    }

    /// The machine's ranks by node, built once.
    fn nodes(&self) -> &Arc<ProcessGroups> {
        self.helpers
            .nodes
            .get_or_init(|| Arc::new(ProcessGroups::of_machine(&self.machine)))
    }
}

impl CostModel for LatencyBandwidth {
    #[inline]
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        if from == to || pkg.bytes == 0 {
            0.0
        } else {
            self.machine.cost(from, to, pkg.bytes)
        }
    }
    fn describe(&self) -> String {
        let (ranks, nodes) = (self.machine.ranks(), self.machine.placement().num_nodes());
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        format!(
            "latency + bandwidth: L(i,j) + B(i,j)·V(s) over {ranks} rank{} on {nodes} node{}",
            plural(ranks),
            plural(nodes)
        )
    }
    fn ranks(&self) -> Option<usize> {
        Some(self.machine.ranks())
    }
    fn hints(&self) -> Option<&dyn SolverHints> {
        Some(self)
    }
}

impl SolverHints for LatencyBandwidth {
    fn add_costs_from(&self, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
        if pkg.bytes == 0 {
            return;
        }
        thread_local! {
            static ROW: std::cell::RefCell<Vec<copr_topology::LinkCost>> =
                const { std::cell::RefCell::new(Vec::new()) };
        }
        ROW.with_borrow_mut(|row| {
            row.resize(self.machine.ranks(), copr_topology::LinkCost::ZERO);
            self.machine.links_from(from, row);
            let b = pkg.bytes as f64;
            for (o, l) in out.iter_mut().zip(row.iter()) {
                *o += factor * (l.latency + l.inv_bandwidth * b);
            }
            if let Some(o) = out.get_mut(from) {
                *o -= factor * (row[from].latency + row[from].inv_bandwidth * b);
            }
        });
    }
    fn candidates(
        &self,
        _x: usize,
        incoming: &[(usize, Package)],
        out: &mut Vec<(usize, f64)>,
    ) -> Option<f64> {
        use crate::candidates::{machine_candidates, min_inter_node_link, MAX_NEAR_SCAN_NODES};
        let m = &self.machine;
        let idx = self.nodes();
        let low = *self.helpers.low.get_or_init(|| min_inter_node_link(m));
        let cells = self.helpers.near.get_or_init(|| {
            let nodes = m.placement().num_nodes();
            // rings need hop counts: a torus or a network, not an explicit table
            let hops = matches!(
                m.inter(),
                Some(copr_topology::InterNode::Torus(_) | copr_topology::InterNode::Network(_))
            );
            if !hops || m.rank_matrix().is_some() || nodes > MAX_NEAR_SCAN_NODES {
                Vec::new()
            } else {
                (0..nodes).map(|_| std::sync::OnceLock::new()).collect()
            }
        });
        Some(machine_candidates(m, idx, low, cells, incoming, out))
    }
    fn process_groups(&self) -> Option<Arc<ProcessGroups>> {
        (self.machine.rank_matrix().is_none()).then(|| Arc::clone(self.nodes()))
    }
    fn add_group_bounds(
        &self,
        _x: usize,
        incoming: &[(usize, Package)],
        groups: &ProcessGroups,
        out: &mut [f64],
    ) -> bool {
        let own = self.nodes();
        let links = self.helpers.links.get_or_init(|| {
            let nodes = own.len();
            if self.machine.rank_matrix().is_some()
                || nodes > crate::candidates::MAX_LINK_TABLE_NODES
            {
                Vec::new()
            } else {
                (0..nodes).map(|_| std::sync::OnceLock::new()).collect()
            }
        });
        // its own nodes only (the same allocation: no O(p) comparison per row)
        std::ptr::eq(groups, &**own)
            && crate::candidates::machine_group_bounds(&self.machine, own, links, incoming, out)
    }
}

/// `add_costs_from` for models whose cost does not depend on the pair beyond
/// `from == to`: one value for the remote pairs, one for the local one.
fn add_uniform_costs(m: &dyn CostModel, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
    let other = usize::from(from == 0);
    let remote = factor * m.cost(from, other, pkg);
    for o in out.iter_mut() {
        *o += remote;
    }
    if let Some(o) = out.get_mut(from) {
        *o += factor * m.cost(from, from, pkg) - remote;
    }
}

/// `Σ_k c_k·x_k` over `(c_k, x_k)`; 0 for an empty package, and for a local
/// one (`from == to`) if `remote_only`.
#[inline]
fn linear(remote_only: bool, from: usize, to: usize, pkg: &Package, terms: &[(f64, u64)]) -> f64 {
    if pkg.bytes == 0 || (remote_only && from == to) {
        return 0.0;
    }
    terms.iter().map(|&(c, x)| c * x as f64).sum()
}

/// Checks named constants: finite and non-negative.
fn check_all(at: &FieldPath, named: &[(&str, f64)]) -> std::result::Result<(), Invalid> {
    named
        .iter()
        .try_for_each(|&(name, v)| check_nonneg(v, &at.key(name)))
}

/// Default seconds per byte to scale on receipt (one extra pass at ~25 GB/s).
pub const DEFAULT_SCALE_COST: f64 = 4.0e-11;
/// Default seconds per byte to transpose on receipt (cache-unfriendly, ~5 GB/s).
pub const DEFAULT_TRANSPOSE_COST: f64 = 2.0e-10;
/// Default seconds per byte to conjugate on receipt (~25 GB/s).
pub const DEFAULT_CONJUGATE_COST: f64 = 4.0e-11;

/// Transform cost (COSTA section 3, `c · Σ_b I_T(b)·|b|` per kind):
/// `w(i, j, s) = c_scale·S + c_transpose·T + c_conjugate·C` seconds, where
/// `S`, `T`, `C` are the package's bytes to scale, transpose and conjugate
/// ([`crate::TransformBytes`]). The transform runs on receipt, so it is
/// charged for local packages too unless `remote_only` is set.
///
/// ```
/// use copr_cost_models::{BlockFacts, CostModel, Package, TransformCost};
/// let t = TransformCost { scale: 1.0, transpose: 10.0, conjugate: 100.0, remote_only: false };
/// let p = Package::from_blocks(&[BlockFacts::contiguous(2).scaled(), BlockFacts::contiguous(3).transposed().conjugated()]);
/// assert_eq!(t.cost(0, 0, &p), 1.0 * 2.0 + 10.0 * 3.0 + 100.0 * 3.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformCost {
    /// Seconds per byte scaled.
    #[serde(default = "d_scale")]
    pub scale: f64,
    /// Seconds per byte transposed.
    #[serde(default = "d_transpose")]
    pub transpose: f64,
    /// Seconds per byte conjugated.
    #[serde(default = "d_conjugate")]
    pub conjugate: f64,
    /// Charge only packages with `i ≠ j`.
    #[serde(default)]
    pub remote_only: bool,
}

pub(crate) fn d_scale() -> f64 {
    DEFAULT_SCALE_COST
}
pub(crate) fn d_transpose() -> f64 {
    DEFAULT_TRANSPOSE_COST
}
pub(crate) fn d_conjugate() -> f64 {
    DEFAULT_CONJUGATE_COST
}

/// Checks that every named constant is finite and non-negative (no file context).
fn validate_coefficients(c: &[(&'static str, f64)]) -> Result<()> {
    check_all(&FieldPath::root(), c).map_err(|e| e.into_error(None, None).into())
}

impl Default for TransformCost {
    fn default() -> Self {
        Self {
            scale: DEFAULT_SCALE_COST,
            transpose: DEFAULT_TRANSPOSE_COST,
            conjugate: DEFAULT_CONJUGATE_COST,
            remote_only: false,
        }
    }
}

impl TransformCost {
    /// The constants by name.
    fn coefficients(&self) -> [(&'static str, f64); 3] {
        [
            ("scale", self.scale),
            ("transpose", self.transpose),
            ("conjugate", self.conjugate),
        ]
    }

    /// Checks that every constant is finite and non-negative.
    ///
    /// # Errors
    /// [`crate::CostError::Input`] naming the constant and its value.
    pub fn validate(&self) -> Result<()> {
        validate_coefficients(&self.coefficients())
    }

    pub(crate) fn check(&self, at: &FieldPath) -> std::result::Result<(), Invalid> {
        check_all(at, &self.coefficients())
    }
}

impl CostModel for TransformCost {
    #[inline]
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        let t = &pkg.transform;
        linear(
            self.remote_only,
            from,
            to,
            pkg,
            &[
                (self.scale, t.scale),
                (self.transpose, t.transpose),
                (self.conjugate, t.conjugate),
            ],
        )
    }
    fn describe(&self) -> String {
        format!(
            "transform: {:.3e}·scaled + {:.3e}·transposed + {:.3e}·conjugated bytes{}",
            self.scale,
            self.transpose,
            self.conjugate,
            if self.remote_only {
                " (remote only)"
            } else {
                ""
            }
        )
    }
    fn hints(&self) -> Option<&dyn SolverHints> {
        Some(self)
    }
}

impl SolverHints for TransformCost {
    fn add_costs_from(&self, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
        add_uniform_costs(self, from, pkg, factor, out);
    }
    pair_free_candidates_method!();
}

/// Stride/locality penalty: the extra packing and unpacking work of
/// scattered data,
///
/// `w(i, j, s) = per_block·blocks + per_segment·segments
///             + per_strided_byte·strided_bytes + per_padding_byte·padding_bytes
///             + per_misaligned_block·misaligned_blocks` seconds
///
/// (fields of [`crate::Locality`]). Small blocks and short rows cost more
/// per byte because every block and every strided row pays its fixed
/// overhead: `n` bytes in rows of `r` bytes pay `per_segment·n/r`. Charged
/// for local packages too (they are copied) unless `remote_only` is set.
///
/// Defaults (rough, for ~12 GB/s memcpy): 0.2 µs per block, 10 ns per
/// strided row, 0.02 ns extra per strided byte, 0.08 ns per padding byte
/// (a wasted memcpy byte), 50 ns per misaligned block.
///
/// ```
/// use copr_cost_models::{BlockFacts, CostModel, LocalityPenalty, Package};
/// let w = LocalityPenalty {
///     per_block: 1.0, per_segment: 10.0, per_strided_byte: 100.0,
///     per_padding_byte: 1000.0, per_misaligned_block: 10000.0, remote_only: false,
/// };
/// let p = Package::from_blocks(&[BlockFacts::contiguous(8), BlockFacts::strided(2, 3).padded(1).misaligned()]);
/// assert_eq!(w.cost(0, 1, &p), 2.0 + 10.0 * 2.0 + 100.0 * 6.0 + 1000.0 * 1.0 + 10000.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalityPenalty {
    /// Seconds per block.
    #[serde(default = "d_block")]
    pub per_block: f64,
    /// Seconds per strided row/segment.
    #[serde(default = "d_segment")]
    pub per_segment: f64,
    /// Extra seconds per strided byte.
    #[serde(default = "d_strided")]
    pub per_strided_byte: f64,
    /// Seconds per padding byte.
    #[serde(default = "d_padding")]
    pub per_padding_byte: f64,
    /// Seconds per misaligned block.
    #[serde(default = "d_misaligned")]
    pub per_misaligned_block: f64,
    /// Charge only packages with `i ≠ j`.
    #[serde(default)]
    pub remote_only: bool,
}

pub(crate) fn d_block() -> f64 {
    2.0e-7
}
pub(crate) fn d_segment() -> f64 {
    1.0e-8
}
pub(crate) fn d_strided() -> f64 {
    2.0e-11
}
pub(crate) fn d_padding() -> f64 {
    8.0e-11
}
pub(crate) fn d_misaligned() -> f64 {
    5.0e-8
}

impl Default for LocalityPenalty {
    fn default() -> Self {
        Self {
            per_block: d_block(),
            per_segment: d_segment(),
            per_strided_byte: d_strided(),
            per_padding_byte: d_padding(),
            per_misaligned_block: d_misaligned(),
            remote_only: false,
        }
    }
}

impl LocalityPenalty {
    /// The constants by name.
    fn coefficients(&self) -> [(&'static str, f64); 5] {
        [
            ("per_block", self.per_block),
            ("per_segment", self.per_segment),
            ("per_strided_byte", self.per_strided_byte),
            ("per_padding_byte", self.per_padding_byte),
            ("per_misaligned_block", self.per_misaligned_block),
        ]
    }

    /// Checks that every constant is finite and non-negative.
    ///
    /// # Errors
    /// [`crate::CostError::Input`] naming the constant and its value.
    pub fn validate(&self) -> Result<()> {
        validate_coefficients(&self.coefficients())
    }

    pub(crate) fn check(&self, at: &FieldPath) -> std::result::Result<(), Invalid> {
        check_all(at, &self.coefficients())
    }
}

impl CostModel for LocalityPenalty {
    #[inline]
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        let l = &pkg.locality;
        linear(
            self.remote_only,
            from,
            to,
            pkg,
            &[
                (self.per_block, pkg.blocks),
                (self.per_segment, l.segments),
                (self.per_strided_byte, l.strided_bytes),
                (self.per_padding_byte, l.padding_bytes),
                (self.per_misaligned_block, l.misaligned_blocks),
            ],
        )
    }
    fn describe(&self) -> String {
        format!(
            "locality: {:.3e}·blocks + {:.3e}·segments + {:.3e}·strided bytes + {:.3e}·padding bytes + {:.3e}·misaligned blocks{}",
            self.per_block,
            self.per_segment,
            self.per_strided_byte,
            self.per_padding_byte,
            self.per_misaligned_block,
            if self.remote_only { " (remote only)" } else { "" }
        )
    }
    fn hints(&self) -> Option<&dyn SolverHints> {
        Some(self)
    }
}

impl SolverHints for LocalityPenalty {
    fn add_costs_from(&self, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
        add_uniform_costs(self, from, pkg, factor, out);
    }
    pair_free_candidates_method!();
}

/// The sum of models: `w(i, j, s) = Σ_k w_k(i, j, s)` (0 without terms).
///
/// ```
/// use copr_cost_models::{CostModel, LocallyFreeVolume, Package, Scaled, Sum};
/// let w = Sum::new(vec![
///     Box::new(LocallyFreeVolume) as Box<dyn CostModel>,
///     Box::new(Scaled::new(0.5, LocallyFreeVolume).unwrap()),
/// ]);
/// assert_eq!(w.cost(0, 1, &Package::plain(10)), 15.0);
/// ```
#[derive(Clone)]
pub struct Sum<M = Box<dyn CostModel>> {
    terms: Vec<M>,
}

impl<M> Default for Sum<M> {
    fn default() -> Self {
        Self { terms: Vec::new() }
    }
}

impl<M: CostModel> std::fmt::Debug for Sum<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Sum").field(&self.describe()).finish()
    }
}

impl<M: CostModel> Sum<M> {
    /// The sum of `terms`.
    pub fn new(terms: Vec<M>) -> Self {
        Self { terms }
    }

    /// Adds a term.
    pub fn push(&mut self, term: M) {
        self.terms.push(term);
    }

    /// The terms.
    pub fn terms(&self) -> &[M] {
        &self.terms
    }
}

impl<M: CostModel> CostModel for Sum<M> {
    #[inline]
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        if pkg.bytes == 0 {
            return 0.0;
        }
        self.terms.iter().map(|t| t.cost(from, to, pkg)).sum()
    }
    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| format!("({})", t.describe()))
            .collect();
        if parts.is_empty() {
            "sum of nothing (0)".into()
        } else {
            parts.join(" + ")
        }
    }
    fn ranks(&self) -> Option<usize> {
        self.terms.iter().filter_map(CostModel::ranks).min()
    }
    fn volume_scale(&self) -> Option<f64> {
        self.terms.iter().map(CostModel::volume_scale).sum()
    }
    fn hints(&self) -> Option<&dyn SolverHints> {
        Some(self)
    }
}

impl<M: CostModel> SolverHints for Sum<M> {
    fn add_costs_from(&self, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
        if pkg.bytes == 0 {
            return;
        }
        for t in &self.terms {
            hinted_add_costs_from(t, from, pkg, factor, out);
        }
    }
    fn candidates(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        out: &mut Vec<(usize, f64)>,
    ) -> Option<f64> {
        // the union of the terms' candidates; a term prices the others' itself
        let mut lists = Vec::with_capacity(self.terms.len());
        let mut bound = 0.0;
        for t in &self.terms {
            let mut list = Vec::new();
            bound += hinted_candidates(t, x, incoming, &mut list)?;
            list.sort_unstable_by_key(|e: &(usize, f64)| e.0);
            lists.push(list);
        }
        let mut ys: Vec<usize> = lists.iter().flatten().map(|e| e.0).collect();
        ys.sort_unstable();
        ys.dedup();
        let mut at = vec![0usize; lists.len()];
        for y in ys {
            let mut c = 0.0;
            for ((t, list), k) in self.terms.iter().zip(&lists).zip(at.iter_mut()) {
                if list.get(*k).is_some_and(|e| e.0 == y) {
                    c += list[*k].1;
                    *k += 1;
                } else {
                    c += crate::candidates::delivered_cost(t, y, incoming);
                }
            }
            out.push((y, c));
        }
        Some(bound)
    }
    fn process_groups(&self) -> Option<Arc<ProcessGroups>> {
        self.terms.iter().find_map(|t| hinted_process_groups(t))
    }
    fn add_group_bounds(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        groups: &ProcessGroups,
        out: &mut [f64],
    ) -> bool {
        self.terms
            .iter()
            .all(|t| hinted_add_group_bounds(t, x, incoming, groups, out))
    }
}

/// A model times a constant weight: `w(i, j, s) = weight · inner(i, j, s)`.
///
/// ```
/// use copr_cost_models::{CostModel, LocallyFreeVolume, Package, Scaled};
/// let w = Scaled::new(1e-9, LocallyFreeVolume).unwrap(); // bytes -> seconds at 1 GB/s
/// assert!((w.cost(0, 1, &Package::plain(1000)) - 1e-6).abs() < 1e-18);
/// assert!(Scaled::new(-1.0, LocallyFreeVolume).is_err());
/// ```
#[derive(Clone)]
pub struct Scaled<M = Box<dyn CostModel>> {
    weight: f64,
    inner: M,
}

impl<M: CostModel> std::fmt::Debug for Scaled<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Scaled").field(&self.describe()).finish()
    }
}

impl<M: CostModel> Scaled<M> {
    /// `weight · inner`.
    ///
    /// # Errors
    /// [`crate::CostError::Input`] if `weight` is negative, NaN or infinite.
    pub fn new(weight: f64, inner: M) -> Result<Self> {
        check_nonneg(weight, &FieldPath::root().key("weight"))
            .map_err(|e| e.into_error(None, None))?;
        Ok(Self { weight, inner })
    }

    /// The weight.
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// The inner model.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: CostModel> CostModel for Scaled<M> {
    #[inline]
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        if pkg.bytes == 0 {
            return 0.0;
        }
        self.weight * self.inner.cost(from, to, pkg)
    }
    fn describe(&self) -> String {
        format!("{} × {}", self.weight, self.inner.describe())
    }
    fn ranks(&self) -> Option<usize> {
        self.inner.ranks()
    }
    fn volume_scale(&self) -> Option<f64> {
        self.inner.volume_scale().map(|c| c * self.weight)
    }
    fn hints(&self) -> Option<&dyn SolverHints> {
        Some(self)
    }
}

impl<M: CostModel> SolverHints for Scaled<M> {
    fn add_costs_from(&self, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
        if pkg.bytes == 0 {
            return;
        }
        hinted_add_costs_from(&self.inner, from, pkg, factor * self.weight, out)
    }
    fn candidates(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        out: &mut Vec<(usize, f64)>,
    ) -> Option<f64> {
        let first = out.len();
        let bound = hinted_candidates(&self.inner, x, incoming, out)?;
        for e in &mut out[first..] {
            e.1 *= self.weight;
        }
        Some(if self.weight == 0.0 {
            0.0
        } else {
            self.weight * bound
        })
    }
    fn process_groups(&self) -> Option<Arc<ProcessGroups>> {
        hinted_process_groups(&self.inner)
    }
    fn add_group_bounds(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        groups: &ProcessGroups,
        out: &mut [f64],
    ) -> bool {
        if self.weight == 0.0 {
            return true;
        }
        let mut own = vec![0.0; out.len()];
        if !hinted_add_group_bounds(&self.inner, x, incoming, groups, &mut own) {
            return false;
        }
        for (o, b) in out.iter_mut().zip(own) {
            *o += self.weight * b;
        }
        true
    }
}

/// A model from a closure `f(from, to, pkg) -> f64`. Empty packages cost 0
/// without calling `f`.
///
/// ```
/// use copr_cost_models::{CostModel, FnModel, Package};
/// // remote volume, but traffic to rank 0 is twice as expensive
/// let w = FnModel::new("hot rank 0", |i: usize, j: usize, p: &Package| {
///     if i == j { 0.0 } else if j == 0 { 2.0 * p.bytes as f64 } else { p.bytes as f64 }
/// });
/// assert_eq!(w.cost(1, 0, &Package::plain(5)), 10.0);
/// assert_eq!(w.cost(1, 0, &Package::EMPTY), 0.0);
/// let boxed: Box<dyn CostModel> = Box::new(w);
/// assert_eq!(boxed.describe(), "hot rank 0");
/// ```
pub struct FnModel<F> {
    description: String,
    f: F,
}

impl<F> FnModel<F>
where
    F: Fn(usize, usize, &Package) -> f64 + Send + Sync,
{
    /// The model `f`, described as `description`.
    pub fn new(description: impl Into<String>, f: F) -> Self {
        Self {
            description: description.into(),
            f,
        }
    }
}

impl<F> std::fmt::Debug for FnModel<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnModel")
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl<F> CostModel for FnModel<F>
where
    F: Fn(usize, usize, &Package) -> f64 + Send + Sync,
{
    #[inline]
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        if pkg.bytes == 0 {
            0.0
        } else {
            (self.f)(from, to, pkg)
        }
    }
    fn describe(&self) -> String {
        self.description.clone()
    }
}
