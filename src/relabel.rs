//! One way to ask for the relabeling σ: [`Relabel`].
//!
//! A relabeling renames target labels (label `t` is taken by process `σ(t)`) so that a
//! redistribution costs least. What is asked for is four choices:
//!
//! | choice | builder | values |
//! |---|---|---|
//! | objective | the constructor | the remote volume ([`Relabel::volume`], [`Relabel::volumes`]) or a cost model over packages ([`Relabel::cost`], [`Relabel::costs`], [`Relabel::from_layouts`]) |
//! | method | [`Relabel::method`] | [`Method::Auto`] (default), [`Method::Dense`], [`Method::Sparse`], [`Method::Greedy`] |
//! | tolerance | [`Relabel::tolerance`], [`Relabel::refine`] | how far the sparse candidate relabeling refines its first solve |
//! | batch | [`Relabel::volumes`], [`Relabel::costs`], [`Relabel::ranks`], [`Relabel::fixed`] | one joint σ for several transforms, labels that keep their process |
//!
//! [`Relabel::solve`] runs in this process; with the `mpi` feature,
//! `Relabel::solve_on` runs over a communicator, each rank computing its own row.
//! Every answer is a [`Relabeled`]: σ, the cost before, the saving, and what is proven
//! about it (the bound and the gap, [`Relabeled::certificate`]).
//!
//! What each combination does:
//!
//! | objective | `Auto` | `Sparse` | `Dense` | `Greedy` |
//! |---|---|---|---|---|
//! | volume | exact, sparse | exact, sparse ([`crate::lap::sparse_max`]) | exact, the p × p table of `δ(x, y) = V[y][x] − V[x][x]` | COSTA's pairwise swaps (no bound) |
//! | volume, batch | exact, sparse on the summed matrix | the same | refused | refused |
//! | cost model | the sparse candidates when the model names them and their certificate proves σ optimal, else the dense table; beyond [`crate::lap::DENSE_LIMIT`] ranks the column generation to [`crate::gain::PLANNER_TOLERANCE`] | the candidate relabeling with its certificate (refined by column generation with [`Relabel::tolerance`] or [`Relabel::refine`]) | exact, the dense table of δ | refused |
//! | cost model, batch | exact: the summed volumes for a multiple of the volume, else the summed dense tables | refused | as `Auto` | refused |
//! | cost model, from layouts | each rank's δ row from its own packages, the dense assignment | refused in process; over MPI the candidate rows | as `Auto` | refused |
//!
//! A σ that saves nothing (within rounding) is the identity, whatever the method.
//!
//! ```
//! use copr::gain::Packages;
//! use copr::relabel::{Method, Relabel};
//! use copr_cost_models::{LocallyFreeVolume, Package};
//! // label 0 receives 8 bytes from process 1, label 1 receives 8 bytes from process 0
//! let pk = Packages::from_list(2, vec![
//!     (1, 0, 1, Package::plain(8)),
//!     (0, 1, 1, Package::plain(8)),
//! ]).unwrap();
//! let r = Relabel::cost(&LocallyFreeVolume, &pk).solve().unwrap();
//! assert_eq!(r.sigma.forward(), [1, 0]); // swap: nothing crosses ranks
//! assert_eq!((r.cost_before, r.saving), (16.0, 16.0));
//! assert!(r.is_exact() && r.gap() == 0.0);
//! let dense = Relabel::cost(&LocallyFreeVolume, &pk).method(Method::Dense).solve().unwrap();
//! assert_eq!(dense.sigma, r.sigma);
//! ```

use copr_cost_models::CostModel;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::gain::candidates::{Refine, SparseRelabeling};
use crate::gain::{self, PackageInput, Packages};
use crate::lap::{Perm, DENSE_LIMIT};
use crate::volume::Volumes;

/// How σ is searched for (what the caller asks; [`SolvedBy`] says what ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Method {
    /// The exact or certified method that suits the objective and the size (module
    /// table).
    #[default]
    Auto,
    /// Exact assignment on the dense p × p table of δ (p ≤ [`DENSE_LIMIT`]).
    Dense,
    /// Never the p × p table: the sparse exact solver on the volumes, or the candidate
    /// relabeling of a cost model with its certificate.
    Sparse,
    /// COSTA's greedy pairwise-swap heuristic on the volumes (for comparison; nothing
    /// is proven about it).
    Greedy,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Auto => "auto",
            Method::Dense => "dense",
            Method::Sparse => "sparse",
            Method::Greedy => "greedy",
        }
    }
}

/// Which solver found σ (in a [`Certificate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SolvedBy {
    /// The exact sparse solver on the (received or summed) volumes.
    Volume,
    /// The certified sparse candidate relabeling.
    Sparse,
    /// The exact assignment on the dense table of δ.
    Dense,
    /// COSTA's greedy pairwise swaps (no bound).
    Greedy,
}

/// What is proven about σ: the serialisable summary of a [`Relabeled`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certificate {
    /// Which solver found σ.
    pub method: SolvedBy,
    /// Entries the solver worked on: the candidate entries ([`SolvedBy::Sparse`], those
    /// the pricing added included), the stored volumes ([`SolvedBy::Volume`]), or p²
    /// ([`SolvedBy::Dense`]).
    pub entries: usize,
    /// Pairs the column generation priced exactly.
    pub priced: usize,
    /// Its pricing rounds.
    pub rounds: usize,
    /// An upper bound on the saving `W(G) − W(G_σ')` of every σ': the certificate; for
    /// the exact solvers, σ's own saving; `+∞` for the greedy heuristic.
    pub bound: f64,
    /// `bound − saving ≥ 0`, with `saving` σ's own: σ is within this of the optimum.
    pub gap: f64,
    /// Whether σ is proven optimal: an exact solver, or `gap ≤`
    /// [`crate::gain::CERTIFIED`]` · W(G)`.
    pub exact: bool,
}

/// σ and what is known about it: the answer of [`Relabel::solve`].
///
/// Costs are in the objective's unit: elements for the volume, the model's unit for a
/// cost model, summed over the transforms of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Relabeled {
    /// σ: target label `t` is taken by process `σ(t)`; the identity if σ saves nothing.
    pub sigma: Perm,
    /// Which solver found σ.
    pub method: SolvedBy,
    /// `W(G)`: the cost without relabeling.
    pub cost_before: f64,
    /// `W(G) − W(G_σ)`, evaluated exactly for the σ returned.
    pub saving: f64,
    /// An upper bound on the saving of **every** σ (the certificate); σ's own saving
    /// for the exact solvers, `+∞` for the greedy heuristic.
    pub bound: f64,
    /// The solver's input size: positive candidate entries ([`SolvedBy::Sparse`]), the
    /// stored volumes ([`SolvedBy::Volume`]), p² ([`SolvedBy::Dense`]).
    pub entries: usize,
    /// The longest row of candidate entries ([`SolvedBy::Sparse`]; 0 otherwise).
    pub max_row: usize,
    /// Pricing rounds of the column generation; 0 when it did not run.
    pub rounds: usize,
    /// Entries the pricing added: non-candidate pairs evaluated exactly because the
    /// duals said they could improve σ.
    pub priced: usize,
}

impl Relabeled {
    /// `bound − saving ≥ 0`: σ saves at most this much less than the optimum.
    pub fn gap(&self) -> f64 {
        (self.bound - self.saving).max(0.0)
    }

    /// Whether σ is proven optimal: an exact solver, or a certified sparse relabeling
    /// with `gap() ≤` [`crate::gain::CERTIFIED`]` · W(G)` (the rounding of the sums
    /// behind it).
    pub fn is_exact(&self) -> bool {
        match self.method {
            SolvedBy::Volume | SolvedBy::Dense => true,
            SolvedBy::Greedy => false,
            SolvedBy::Sparse => self.gap() <= gain::CERTIFIED * self.cost_before.abs(),
        }
    }

    /// The gap relative to the cost after relabeling, `gap / W(G_σ)` (0 when both are 0).
    pub fn relative_gap(&self) -> f64 {
        gain::candidates::relative_gap(self.gap(), self.cost_after())
    }

    /// The cost with σ, `W(G_σ) = W(G) − saving`.
    pub fn cost_after(&self) -> f64 {
        self.cost_before - self.saving
    }

    /// What is proven, in the form plan reports print and serialise.
    pub fn certificate(&self) -> Certificate {
        let entries = match self.method {
            SolvedBy::Sparse => self.entries + self.priced,
            _ => self.entries,
        };
        Certificate {
            method: self.method,
            entries,
            priced: self.priced,
            rounds: self.rounds,
            bound: self.bound,
            gap: self.gap(),
            exact: self.is_exact(),
        }
    }

    /// An exact solver's answer: its bound is its own saving.
    fn exact(sigma: Perm, method: SolvedBy, entries: usize, before: f64, after: f64) -> Self {
        let saving = before - after;
        Self {
            sigma,
            method,
            cost_before: before,
            saving,
            bound: saving,
            entries,
            max_row: 0,
            rounds: 0,
            priced: 0,
        }
    }

    fn from_sparse(r: SparseRelabeling) -> Self {
        Self {
            sigma: r.sigma,
            method: SolvedBy::Sparse,
            cost_before: r.cost_before,
            saving: r.saving,
            bound: r.bound,
            entries: r.entries,
            max_row: r.max_row,
            rounds: r.rounds,
            priced: r.priced,
        }
    }
}

/// One item or a batch of them.
enum Items<'a, T> {
    One(&'a T),
    Batch(&'a [&'a T]),
}

impl<T> Clone for Items<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Items<'_, T> {}

impl<'a, T> Items<'a, T> {
    fn as_slice<'s>(&'s self) -> &'s [&'a T] {
        match self {
            Items::One(t) => std::slice::from_ref(t),
            Items::Batch(b) => b,
        }
    }
}

/// What is relabeled.
#[derive(Clone, Copy)]
enum Problem<'a> {
    Volume(Items<'a, Volumes>),
    Cost(&'a dyn CostModel, Items<'a, Packages>),
    Layouts(&'a dyn CostModel, PackageInput<'a>),
}

/// A request for σ: the objective (constructor), the method, the tolerance, the batch;
/// [`Relabel::solve`] answers it (module docs: what each combination does).
///
/// ```
/// use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
/// use copr::relabel::Relabel;
/// use copr::volume::Volumes;
/// let bc = |order: Order| -> Layout {
///     let mut s = BlockCyclicSpec::new(8, 8, 4, 4, 2, 2);
///     s.grid_order = order;
///     BlockCyclic::new(s).unwrap().into()
/// };
/// // A moves row-major -> column-major grid; B stays where it is.
/// let a = Volumes::compute(&bc(Order::RowMajor), &bc(Order::ColMajor), Op::Identity).unwrap();
/// let b = Volumes::compute(&bc(Order::RowMajor), &bc(Order::RowMajor), Op::Identity).unwrap();
/// // Alone, A would swap labels 1 and 2 (no traffic at all) ...
/// let alone = Relabel::volume(&a).solve().unwrap();
/// assert_eq!(a.remote_after(&alone.sigma), 0);
/// // ... but B would then move 32 elements: one σ for both costs 32 whatever it is
/// let joint = Relabel::volumes(&[&a, &b]).ranks(4).solve().unwrap();
/// assert_eq!(a.remote_after(&joint.sigma) + b.remote_after(&joint.sigma), 32);
/// assert_eq!(joint.cost_after(), 32.0);
/// ```
#[derive(Clone, Copy)]
#[must_use = "a Relabel does nothing until solved"]
pub struct Relabel<'a> {
    problem: Problem<'a>,
    method: Method,
    refine: Option<Refine>,
    ranks: Option<usize>,
    fixed: &'a [usize],
}

impl std::fmt::Debug for Relabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let objective = match self.problem {
            Problem::Volume(_) => "volume".to_string(),
            Problem::Cost(m, _) | Problem::Layouts(m, _) => m.describe(),
        };
        f.debug_struct("Relabel")
            .field("objective", &objective)
            .field("method", &self.method)
            .field("refine", &self.refine)
            .field("ranks", &self.ranks)
            .field("fixed", &self.fixed)
            .finish()
    }
}

impl<'a> Relabel<'a> {
    fn new(problem: Problem<'a>) -> Self {
        Self {
            problem,
            method: Method::Auto,
            refine: None,
            ranks: None,
            fixed: &[],
        }
    }

    /// Minimise the remote volume of one redistribution, `Σ_t Σ_{s ≠ σ(t)} V[s][t]`
    /// (the locally-free volume, COSTA eq. 1).
    pub fn volume(volumes: &'a Volumes) -> Self {
        Self::new(Problem::Volume(Items::One(volumes)))
    }

    /// One σ for every transform of a batch, minimising their summed remote volume
    /// `Σ_k Σ_t Σ_{s ≠ σ(t)} V_k[s][t]` exactly: the gains add, so it is one assignment
    /// on `W = Σ_k V_kᵀ` (with [`Relabel::ranks`] the batch's rank space, by default
    /// the largest transform's, and [`Relabel::fixed`] the labels that keep their
    /// process). The joint σ never keeps less than the identity, and never more than
    /// the transforms' own optima together.
    pub fn volumes(volumes: &'a [&'a Volumes]) -> Self {
        Self::new(Problem::Volume(Items::Batch(volumes)))
    }

    /// Minimise `W(G_σ) = Σ_{s,t} w(s, σ(t), S[s][t])` under `model` (COSTA Theorem 1:
    /// one assignment on the gains δ).
    pub fn cost(model: &'a dyn CostModel, packages: &'a Packages) -> Self {
        Self::new(Problem::Cost(model, Items::One(packages)))
    }

    /// One σ for every transform of a batch under `model`, minimising `Σ_k W_k(G_σ)`
    /// exactly: `δ(x, y) = Σ_k δ_k(x, y)`. The same packages given several times count
    /// once, weighted by how often they are given.
    pub fn costs(model: &'a dyn CostModel, packages: &'a [&'a Packages]) -> Self {
        Self::new(Problem::Cost(model, Items::Batch(packages)))
    }

    /// σ under `model` with each target label's row of δ computed from the layouts
    /// alone ([`crate::gain::incoming`]), no global package table: in process with
    /// [`Relabel::solve`] (the rows in parallel), over a communicator with
    /// `Relabel::solve_on` (feature `mpi`, one row per rank).
    pub fn from_layouts(model: &'a dyn CostModel, input: &PackageInput<'a>) -> Self {
        Self::new(Problem::Layouts(model, *input))
    }

    /// How σ is searched for ([`Method::Auto`] by default).
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// For the sparse candidate relabeling: refine by column generation until the
    /// certificate proves σ within `tolerance` of its own cost (0: until nothing is
    /// left to price), warm-started; the same as `refine(Refine::within(tolerance))`.
    pub fn tolerance(self, tolerance: f64) -> Self {
        self.refine(Refine::within(tolerance))
    }

    /// For the sparse candidate relabeling: the column generation's settings
    /// ([`Refine`]: tolerance, rounds, hubs, warm or cold start, first solve).
    /// Without it, [`Method::Sparse`] keeps the first solve and its certificate.
    pub fn refine(mut self, refine: Refine) -> Self {
        self.refine = Some(refine);
        self
    }

    /// For a batch: the rank space of the joint σ (at least every transform's ranks;
    /// by default the largest transform's).
    pub fn ranks(mut self, ranks: usize) -> Self {
        self.ranks = Some(ranks);
        self
    }

    /// For a batch: labels with `σ(t) = t` (a target whose contents must stay where
    /// they are); σ permutes the other labels among themselves, still exactly.
    pub fn fixed(mut self, fixed: &'a [usize]) -> Self {
        self.fixed = fixed;
        self
    }

    fn unsupported(&self, objective: &'static str) -> Error {
        Error::Unsupported {
            method: self.method.name(),
            objective,
        }
    }

    fn batch_ranks<T>(&self, items: &[&T], ranks_of: impl Fn(&T) -> usize) -> usize {
        self.ranks
            .unwrap_or_else(|| items.iter().map(|t| ranks_of(t)).max().unwrap_or(0))
    }

    /// σ and its certificate, computed in this process.
    ///
    /// # Complexity
    /// As the method chosen (module table): the sparse exact solver as
    /// [`crate::lap::sparse_max`]; the dense table O(p · nnz) cost evaluations and
    /// p²·8 bytes; the candidate relabeling as `docs/SCALING.md` describes.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a combination the module table refuses;
    /// [`Error::Mismatched`] if the model's machine has fewer ranks than the packages, a
    /// transform of a batch more than [`Relabel::ranks`], or a fixed label is outside
    /// the ranks; [`Error::Limit`] for the dense table beyond [`DENSE_LIMIT`] ranks, a
    /// model that names no candidates asked for [`Method::Sparse`], or summed volumes
    /// beyond 2^60; solver errors.
    pub fn solve(&self) -> Result<Relabeled> {
        match self.problem {
            Problem::Volume(Items::One(v)) if self.ranks.is_none() && self.fixed.is_empty() => {
                self.volume_one(v)
            }
            Problem::Volume(items) => self.volume_batch(items.as_slice()),
            Problem::Cost(model, Items::One(pk))
                if self.ranks.is_none() && self.fixed.is_empty() =>
            {
                self.cost_one(model, pk)
            }
            Problem::Cost(model, items) => self.cost_batch(model, items.as_slice()),
            Problem::Layouts(model, input) => match self.method {
                Method::Auto | Method::Dense => {
                    let (sigma, before, saving) = gain::distributed_relabel(model, &input)?;
                    let after = before - saving;
                    let p = sigma.len();
                    Ok(Relabeled::exact(
                        sigma,
                        SolvedBy::Dense,
                        p * p,
                        before,
                        after,
                    ))
                }
                _ => Err(self.unsupported("rows from layouts in one process")),
            },
        }
    }

    fn volume_one(&self, v: &Volumes) -> Result<Relabeled> {
        let (sigma, by) = match self.method {
            Method::Auto | Method::Sparse => (volume_sigma(v, Method::Sparse)?, SolvedBy::Volume),
            Method::Dense => (volume_sigma(v, Method::Dense)?, SolvedBy::Dense),
            Method::Greedy => (volume_sigma(v, Method::Greedy)?, SolvedBy::Greedy),
        };
        let entries = match by {
            SolvedBy::Dense => v.ranks() * v.ranks(),
            _ => v.matrix().nnz(),
        };
        let before = v.remote() as f64;
        let after = v.remote_after(&sigma) as f64;
        let mut r = Relabeled::exact(sigma, by, entries, before, after);
        if by == SolvedBy::Greedy {
            r.bound = f64::INFINITY;
        }
        Ok(r)
    }

    fn volume_batch(&self, volumes: &[&Volumes]) -> Result<Relabeled> {
        if !matches!(self.method, Method::Auto | Method::Sparse) {
            return Err(self.unsupported("the volume of a batch"));
        }
        let ranks = self.batch_ranks(volumes, Volumes::ranks);
        let parts: Vec<(&crate::csr::Csr, u64)> = volumes.iter().map(|v| (v.matrix(), 1)).collect();
        let sigma = crate::lap::joint_assign(&parts, ranks, self.fixed)?;
        let remote = |sigma: Option<&Perm>| -> f64 {
            volumes
                .iter()
                .flat_map(|v| v.matrix().iter())
                .filter(|&(s, t, _)| s != sigma.map_or(t, |g| g.apply(t)))
                .map(|(_, _, x)| x as f64)
                .sum()
        };
        let (before, after) = (remote(None), remote(Some(&sigma)));
        let entries = parts.iter().map(|(m, _)| m.nnz()).sum();
        Ok(Relabeled::exact(
            sigma,
            SolvedBy::Volume,
            entries,
            before,
            after,
        ))
    }

    fn cost_one(&self, model: &dyn CostModel, pk: &Packages) -> Result<Relabeled> {
        match self.method {
            Method::Auto => auto_cost(model, pk),
            Method::Dense => {
                let sigma = gain::relabel_dense(model, pk)?;
                Ok(exact_on(
                    model,
                    pk,
                    SolvedBy::Dense,
                    pk.ranks().pow(2),
                    sigma,
                ))
            }
            Method::Sparse => {
                let r = match &self.refine {
                    None => gain::candidates::sparse_relabel(model, pk)?,
                    Some(refine) => gain::candidates::sparse_relabel_within(model, pk, refine)?,
                };
                Ok(Relabeled::from_sparse(r))
            }
            Method::Greedy => Err(self.unsupported("a cost model")),
        }
    }

    fn cost_batch(&self, model: &dyn CostModel, packages: &[&Packages]) -> Result<Relabeled> {
        if !matches!(self.method, Method::Auto | Method::Dense) {
            return Err(self.unsupported("a cost model over a batch"));
        }
        let ranks = self.batch_ranks(packages, Packages::ranks);
        let (sigma, on_volumes, entries) = gain::joint_relabel(model, packages, ranks, self.fixed)?;
        let by = if on_volumes {
            SolvedBy::Volume
        } else {
            SolvedBy::Dense
        };
        let before = gain::joint_cost(model, packages, None);
        let after = gain::joint_cost(model, packages, Some(&sigma));
        Ok(Relabeled::exact(sigma, by, entries, before, after))
    }
}

/// σ for the remote volume of one redistribution with the solver `method` (not
/// `Auto`), the identity when it leaves as much remote as the identity does.
fn volume_sigma(v: &Volumes, method: Method) -> Result<Perm> {
    let sigma = match method {
        Method::Dense => {
            if v.ranks() > DENSE_LIMIT {
                return Err(Error::Assignment(format!(
                    "the dense solver builds a p x p table; p = {} exceeds {DENSE_LIMIT}: use the sparse solver",
                    v.ranks()
                )));
            }
            crate::lap::dense_max(v.ranks(), &gain::locally_free_gain(v))?
        }
        Method::Greedy => crate::lap::greedy_swaps(v.matrix()),
        Method::Auto | Method::Sparse => crate::lap::sparse_max(&v.matrix().transpose())?,
    };
    Ok(if v.remote_after(&sigma) < v.remote() {
        sigma
    } else {
        Perm::identity(v.ranks())
    })
}

/// An exact solver's σ for `packages` under `model`, with its saving evaluated.
fn exact_on(
    model: &dyn CostModel,
    packages: &Packages,
    method: SolvedBy,
    entries: usize,
    sigma: Perm,
) -> Relabeled {
    let before = packages.total_cost(model, None);
    let after = packages.total_cost(model, Some(&sigma));
    Relabeled::exact(sigma, method, entries, before, after)
}

/// [`Method::Auto`] for one redistribution under a cost model:
/// * a multiple of the locally-free volume: the sparse exact solver on the received
///   volumes (exact);
/// * a model that names candidates ([`copr_cost_models::SolverHints::candidates`]): up to [`DENSE_LIMIT`]
///   ranks the first sparse solve is kept only when its certificate proves it optimal
///   within [`gain::CERTIFIED`]` · W(G)`, otherwise the dense table decides; beyond,
///   column generation from the candidate rows (with one hub per node when nodes hold
///   64 ranks or more) runs until its certificate proves σ within
///   [`gain::PLANNER_TOLERANCE`] of the optimum or [`gain::PLANNER_ROUNDS`] pricing
///   rounds have run, and σ is kept with the certificate reached;
/// * any other model: the exact dense assignment on δ.
fn auto_cost(model: &dyn CostModel, packages: &Packages) -> Result<Relabeled> {
    let p = packages.ranks();
    gain::check_model_ranks(model, p)?;
    let exact = |method, entries, sigma| exact_on(model, packages, method, entries, sigma);
    if let Some(c) = model.volume_scale() {
        if c > 0.0 {
            let received = packages.volumes().transpose();
            let sigma = crate::lap::sparse_max(&received)?;
            let identity = Perm::identity(p);
            let value = crate::lap::assignment_value;
            let sigma = if value(&received, &sigma) > value(&received, &identity) {
                sigma
            } else {
                identity
            };
            return Ok(exact(SolvedBy::Volume, received.nnz(), sigma));
        }
        if c == 0.0 {
            return Ok(exact(SolvedBy::Volume, 0, Perm::identity(p)));
        }
    }
    let first = if p > DENSE_LIMIT {
        let mut refine = Refine::within(gain::PLANNER_TOLERANCE);
        refine.max_rounds = gain::PLANNER_ROUNDS;
        refine.first_solve = false;
        gain::candidates::sparse_relabel_within(model, packages, &refine)
    } else {
        gain::candidates::sparse_relabel(model, packages)
    };
    match first {
        Ok(r) if p > DENSE_LIMIT || r.is_exact() => return Ok(Relabeled::from_sparse(r)),
        Ok(_) => {}
        Err(Error::Limit(e)) if p > DENSE_LIMIT => return Err(Error::Limit(e)),
        Err(Error::Limit(_)) => {}
        Err(e) => return Err(e),
    }
    let sigma = gain::relabel_dense(model, packages)?;
    Ok(exact(SolvedBy::Dense, p * p, sigma))
}

#[cfg(feature = "mpi")]
mod on_comm;
#[cfg(feature = "mpi")]
pub use on_comm::OnRank;
