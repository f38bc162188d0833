//! The model a user writes: the [`CostModel`] trait (the cost of a package, nothing
//! else required), the optional [`SolverHints`] a model may add for the solvers, and
//! the [`ProcessGroups`] those hints bound over.

use std::sync::Arc;

use copr_topology::Machine;

use crate::package::Package;

/// The communication cost `w(i, j, s)` of sending package `s` from rank `i`
/// to rank `j` (COSTA, section 3).
///
/// Contract: `w(i, j, ∅) = 0` — a package with `bytes == 0` costs 0 in
/// every model of this crate (including [`FnModel`](crate::FnModel), which enforces it).
/// Costs are finite and, for the models here, non-negative.
///
/// The trait is object-safe; `Box<dyn CostModel>`, `Arc<dyn CostModel>` and
/// `&dyn CostModel` are cost models too.
///
/// ```
/// use copr_cost_models::{CostModel, LocallyFreeVolume, Package};
/// let w: Box<dyn CostModel> = Box::new(LocallyFreeVolume);
/// assert_eq!(w.cost(0, 1, &Package::plain(64)), 64.0);
/// assert_eq!(w.cost(1, 1, &Package::plain(64)), 0.0);
/// ```
pub trait CostModel: Send + Sync {
    /// `w(from, to, pkg)`.
    ///
    /// # Panics
    /// Topology-based models panic if `from` or `to` is not a rank of their
    /// machine (see [`CostModel::ranks`]).
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64;

    /// A one-line description with the formula and parameters.
    fn describe(&self) -> String {
        "custom cost model".to_string()
    }

    /// The number of ranks the model is defined for, if bounded (models
    /// based on a [`Machine`]).
    fn ranks(&self) -> Option<usize> {
        None
    }

    /// `Some(c)` if this model is exactly `c ×` the locally-free volume (eq. 1), so that
    /// planners may use the sparse exact relabeling instead of a dense gain table.
    fn volume_scale(&self) -> Option<f64> {
        None
    }

    /// The optional hints a solver may use to find σ faster ([`SolverHints`]); `None`
    /// (the default): the solvers use [`CostModel::cost`] alone, exactly. A model that
    /// implements [`SolverHints`] returns `Some(self)`.
    fn hints(&self) -> Option<&dyn SolverHints> {
        None
    }
}

/// What a relabeling solver may use beyond [`CostModel::cost`], all optional: a row of
/// costs at once, candidate processes with a bound on the others, and bounds per group
/// of processes. Every method has a default that is correct for any model (the row
/// from [`CostModel::cost`], no candidates, no groups); a model implements this trait
/// and returns `Some(self)` from [`CostModel::hints`] when it can do better. Nothing
/// here changes which σ is optimal, only how fast it is found and proven.
///
/// Solvers reach these through [`CostModel`] trait objects
/// (`<dyn CostModel>::candidates` and the like), which use the defaults when a model
/// gives no hints.
pub trait SolverHints: CostModel {
    /// Adds `factor · w(from, j, pkg)` to `out[j]` for every rank `j < out.len()`: a
    /// whole row of costs at once (what the relabeling gain δ needs). Models override it
    /// when a row is much cheaper than `out.len()` separate [`CostModel::cost`] calls.
    fn add_costs_from(&self, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o += factor * self.cost(from, j, pkg);
        }
    }
    /// The processes worth evaluating as the new home of target label `x`, with what
    /// `x`'s packages would cost there, and a bound for every other process.
    ///
    /// `incoming = [(i, S[i][x])]` are the packages `x` receives. An implementation
    /// pushes pairs `(y, C(x, y))` onto `out`, each `y` at most once, with
    ///
    /// `C(x, y) = Σ_i w(i, y, S[i][x])`,
    ///
    /// and returns `Some(b)` with `b ≤ C(x, y)` for **every** process `y` it did not push
    /// (of any communicator the model prices; `b = +∞` when it pushed every process).
    /// `None` (the default) means the model cannot bound the others; planners then build
    /// the dense gain table.
    ///
    /// The relabeling gain is `δ(x, y) = C(x, x) − C(x, y)`, so `C(x, x) − b` bounds
    /// `δ(x, y)` from above off the candidates: the sparse relabeling of `copr::gain`
    /// solves on the candidates alone and certifies how far it can be from the optimum.
    /// The models here name the senders (a package costs least where it already is), for
    /// [`LatencyBandwidth`](crate::LatencyBandwidth) also the ranks sharing a node with a sender, and bound the
    /// rest by pricing every package as remote (as cheaply as the machine allows).
    ///
    /// # Complexity
    /// For the models here, O(|incoming| · candidates) cost evaluations at most.
    fn candidates(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        out: &mut Vec<(usize, f64)>,
    ) -> Option<f64> {
        let _ = (x, incoming, out);
        None
    }

    /// A partition of the processes (for a machine: its nodes) on which the model can
    /// bound `C(x, y)` group by group ([`SolverHints::add_group_bounds`]); `None` (the
    /// default) if it has none of its own.
    fn process_groups(&self) -> Option<Arc<ProcessGroups>> {
        None
    }

    /// Adds to `out[g]`, for every group `g` of `groups` (`out.len() == groups.len()`), a
    /// lower bound on `C(x, y) = Σ_i w(i, y, S[i][x])` valid for **every** process `y`
    /// of group `g`; `false` (and `out` unspecified) if the model cannot.
    ///
    /// A tighter companion of the single bound of [`SolverHints::candidates`]: the column
    /// generation of `copr::gain` prices and certifies with one bound per group (node)
    /// instead of one per row. The latency + bandwidth model gives, off an explicit rank
    /// table, the exact inter-node cost of each node (exact for the nodes that send
    /// nothing); the pair-free models (volume, locality, transform) the all-remote cost
    /// minus what one sender of the group saves at home; sums and scaled models combine
    /// their terms'.
    ///
    /// # Complexity
    /// For the models here, O(groups · (sender nodes + packages)).
    fn add_group_bounds(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        groups: &ProcessGroups,
        out: &mut [f64],
    ) -> bool {
        let _ = (x, incoming, groups, out);
        false
    }
}

/// Adds `factor · w(from, j, pkg)` to `out[j]` for every `j < out.len()`, with the
/// model's [`SolverHints::add_costs_from`] when it gives hints.
pub(crate) fn hinted_add_costs_from<M: CostModel + ?Sized>(
    model: &M,
    from: usize,
    pkg: &Package,
    factor: f64,
    out: &mut [f64],
) {
    match model.hints() {
        Some(h) => h.add_costs_from(from, pkg, factor, out),
        None => {
            for (j, o) in out.iter_mut().enumerate() {
                *o += factor * model.cost(from, j, pkg);
            }
        }
    }
}

/// The model's [`SolverHints::candidates`]; `None` without hints.
pub(crate) fn hinted_candidates<M: CostModel + ?Sized>(
    model: &M,
    x: usize,
    incoming: &[(usize, Package)],
    out: &mut Vec<(usize, f64)>,
) -> Option<f64> {
    model.hints()?.candidates(x, incoming, out)
}

/// The model's [`SolverHints::process_groups`]; `None` without hints.
pub(crate) fn hinted_process_groups<M: CostModel + ?Sized>(
    model: &M,
) -> Option<Arc<ProcessGroups>> {
    model.hints()?.process_groups()
}

/// The model's [`SolverHints::add_group_bounds`]; `false` without hints.
pub(crate) fn hinted_add_group_bounds<M: CostModel + ?Sized>(
    model: &M,
    x: usize,
    incoming: &[(usize, Package)],
    groups: &ProcessGroups,
    out: &mut [f64],
) -> bool {
    model
        .hints()
        .is_some_and(|h| h.add_group_bounds(x, incoming, groups, out))
}

/// The solver hints of any model, with the defaults of [`SolverHints`] when it gives
/// none: what the relabeling solvers call.
impl dyn CostModel + '_ {
    /// [`SolverHints::add_costs_from`], or the row from [`CostModel::cost`].
    pub fn add_costs_from(&self, from: usize, pkg: &Package, factor: f64, out: &mut [f64]) {
        hinted_add_costs_from(self, from, pkg, factor, out);
    }

    /// [`SolverHints::candidates`], or `None` (no candidates).
    pub fn candidates(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        out: &mut Vec<(usize, f64)>,
    ) -> Option<f64> {
        hinted_candidates(self, x, incoming, out)
    }

    /// [`SolverHints::process_groups`], or `None`.
    pub fn process_groups(&self) -> Option<Arc<ProcessGroups>> {
        hinted_process_groups(self)
    }

    /// [`SolverHints::add_group_bounds`], or `false`.
    pub fn add_group_bounds(
        &self,
        x: usize,
        incoming: &[(usize, Package)],
        groups: &ProcessGroups,
        out: &mut [f64],
    ) -> bool {
        hinted_add_group_bounds(self, x, incoming, groups, out)
    }
}

impl std::fmt::Debug for dyn CostModel + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CostModel({})", self.describe())
    }
}

/// `CostModel` for the pointer types `&M`, `Box<M>` and `Arc<M>`: every method forwards
/// to the model pointed to (the hints too).
macro_rules! forward_cost_model {
    ($($ptr:ty),*) => {$(
        impl<M: CostModel + ?Sized> CostModel for $ptr {
            fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
                (**self).cost(from, to, pkg)
            }
            fn describe(&self) -> String {
                (**self).describe()
            }
            fn ranks(&self) -> Option<usize> {
                (**self).ranks()
            }
            fn volume_scale(&self) -> Option<f64> {
                (**self).volume_scale()
            }
            fn hints(&self) -> Option<&dyn SolverHints> {
                (**self).hints()
            }
        }
    )*};
}

forward_cost_model!(&M, Box<M>, Arc<M>);

/// A partition of the processes into groups (for a machine: its nodes), for
/// [`SolverHints::add_group_bounds`]: lower bounds per group rather than one per row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessGroups {
    start: Vec<usize>,
    ranks: Vec<u32>,
    group: Vec<u32>,
}

impl ProcessGroups {
    /// The groups of `group_of[y]` (process `y` in group `group_of[y]`), `groups` of them.
    ///
    /// # Panics
    /// If a group index is `>= groups`.
    pub fn new(group_of: Vec<u32>, groups: usize) -> Self {
        let mut start = vec![0usize; groups + 1];
        for &g in &group_of {
            start[g as usize + 1] += 1;
        }
        for g in 0..groups {
            start[g + 1] += start[g];
        }
        let mut fill = start.clone();
        let mut ranks = vec![0u32; group_of.len()];
        for (y, &g) in group_of.iter().enumerate() {
            ranks[fill[g as usize]] = y as u32;
            fill[g as usize] += 1;
        }
        Self {
            start,
            ranks,
            group: group_of,
        }
    }

    /// The ranks of a machine by placement node: O(p) counting sort.
    pub(crate) fn of_machine(m: &Machine) -> Self {
        let group = (0..m.ranks()).map(|r| m.node_of(r) as u32).collect();
        Self::new(group, m.placement().num_nodes())
    }

    /// How many groups.
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// Whether there are no groups.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many processes.
    pub fn processes(&self) -> usize {
        self.group.len()
    }

    /// The processes of group `g`, increasing.
    pub fn of(&self, g: usize) -> &[u32] {
        &self.ranks[self.start[g]..self.start[g + 1]]
    }

    /// The group of process `y`.
    pub fn group_of(&self, y: usize) -> usize {
        self.group[y] as usize
    }
}
