//! The relabeling gain on candidate processes only: no p × p table for any cost model
//! that names its candidates ([`copr_cost_models::SolverHints::candidates`]).
//!
//! # The relaxation and its certificate
//! With `C(x, y) = Σ_i w(i, y, S[i][x])` the cost of target label `x`'s packages at
//! process `y`, the gain is `δ(x, y) = C(x, x) − C(x, y)`. The model names candidates
//! `K_x` and a bound `b_x ≤ C(x, y)` for every `y ∉ K_x`. Subtracting the row constant
//! `u_x = C(x, x) − b_x` from row `x` changes every assignment's value by the same
//! `Σ_x u_x`, so the optimal σ is unchanged, and the shifted gain
//!
//! `g(x, y) = δ(x, y) − u_x = b_x − C(x, y)`
//!
//! is `≤ 0` off the candidates. Keeping only the candidate entries with `g > 0` and
//! counting every other pair as 0 over-estimates every assignment, so the best
//! assignment of that sparse problem is an upper bound `R` on the best shifted value,
//! and `bound = Σ_x u_x + R` bounds the largest saving `W(G) − W(G_σ)` of any σ. The
//! exact sparse solver ([`crate::lap::sparse_max`]) takes integer weights: `g` is
//! quantised as `q = ⌊g / res⌋` with `res = max g / 2^40`, and since each row adds at most
//! `res · (q + 1)` of its positive entries, `R ≤ res · (Q* + m)` with `Q*` the integer
//! optimum and `m` the rows with a positive entry. The σ returned is evaluated exactly
//! (`saving = W(G) − W(G_σ)`, summed from the model's own costs); `bound − saving` is
//! the certified gap: σ is within it of the optimum whatever the instance. The labels
//! the relaxation leaves on zero-weight pairs are then re-paired among themselves on
//! their real gains `δ > 0` (candidates only), or keep their own process: this changes
//! neither the relaxation's value nor the certificate, only σ's real saving.
//!
//! The refined relabeling ([`crate::relabel::Relabel::refine`], [`Refine`]) goes on
//! where that certificate does not prove σ within the caller's tolerance, with a column
//! generation: the cheapest assignment on the exactly priced pairs, its duals, and
//! exact prices for the pairs the duals and the model's bounds per group of processes
//! ([`copr_cost_models::SolverHints::add_group_bounds`]: per node for a machine) cannot exclude, round after
//! round; its dual certificate holds for every σ, it stops once that certificate proves
//! the tolerance, and when nothing is left to price σ is the dense optimum
//! (`docs/SCALING.md`, "Column generation"). [`crate::relabel::Relabeled::rounds`] and
//! [`crate::relabel::Relabeled::priced`] say what it did. The planners
//! ([`crate::relabel::Method::Auto`]) use it
//! beyond [`crate::lap::DENSE_LIMIT`] ranks, to [`super::PLANNER_TOLERANCE`] and at most
//! [`super::PLANNER_ROUNDS`] rounds; below, the dense table decides when the first
//! certificate is not tight.
//!
//! For the locally-free volume the bound is exact (a non-candidate receives every
//! package remotely, `C(x, y) = b_x`), so the candidate problem *is* the problem; the
//! planners solve it on the received volumes directly. For latency + bandwidth the
//! bound prices every package at the machine's cheapest inter-node link; the gap is
//! measured in `benches/RESULTS.md` and stated in `docs/SCALING.md`.

//!
//! ```
//! use copr::gain::Packages;
//! use copr::relabel::{Method, Relabel};
//! use copr_cost_models::{LocalityPenalty, LocallyFreeVolume, Package, Sum, CostModel};
//! let pkg = |bytes| Package { bytes, blocks: 1, ..Package::EMPTY };
//! // label 0 receives 8 bytes from process 1, label 1 receives 8 bytes from process 0
//! let pk = Packages::from_list(2, vec![(1, 0, 1, pkg(8)), (0, 1, 1, pkg(8))]).unwrap();
//! let remote_only = LocalityPenalty { remote_only: true, ..LocalityPenalty::default() };
//! let model = Sum::new(vec![
//!     Box::new(LocallyFreeVolume) as Box<dyn CostModel>,
//!     Box::new(remote_only),
//! ]);
//! let r = Relabel::cost(&model, &pk).method(Method::Sparse).solve().unwrap();
//! assert_eq!(r.sigma.forward(), [1, 0]); // swap: nothing crosses ranks
//! assert!((r.saving - r.cost_before).abs() < 1e-12);
//! assert!(r.gap() <= 1e-9 * r.cost_before);
//! // refined by column generation to 0.1 % of σ's cost
//! let pk = Packages::from_list(2, vec![(1, 0, 1, Package::plain(8))]).unwrap();
//! let r = Relabel::cost(&LocallyFreeVolume, &pk).method(Method::Sparse).tolerance(1e-3);
//! let r = r.solve().unwrap();
//! assert_eq!(r.sigma.forward(), [1, 0]);
//! assert!(r.saving == r.cost_before && r.is_exact()); // nothing left to move
//! ```

mod colgen;
mod hubs;

use rayon::prelude::*;

use copr_cost_models::{delivered_cost, CostModel, Package};

use crate::csr::Csr;
use crate::error::{Error, Result};
use crate::lap::{assignment_value, sparse_max, Perm};

use super::{cost_here, Incoming, Packages};

/// Quantisation of the shifted gains: the largest becomes `2^40`.
const LEVELS: f64 = (1u64 << 40) as f64;

/// Relative slack on the certificate for the rounding of the `f64` sums behind it.
const ROUNDING: f64 = 1e-12;

/// The column generation's shortest-path searches may visit this many pairs per
/// candidate entry (plus one per row) in all; beyond, the last solved round's σ (or the
/// first solve's) is kept.
pub const COLGEN_WORK_PER_ENTRY: u64 = 1024;

/// Most candidate entries a sparse relabeling keeps in all (2^27, about 2 GB of rows):
/// a machine whose nodes hold very many ranks makes every rank a candidate of every
/// label, which would grow as p²; beyond this the relabeling is refused with
/// [`Error::Limit`] instead of exhausting memory.
pub const MAX_CANDIDATE_ENTRIES: usize = 1 << 27;

/// One target label's row of the candidate problem.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateRow {
    /// `C(x, x)`: what the label's packages cost where they are addressed.
    pub here: f64,
    /// The shift `L_x`: the model's bound `b_x` off the candidates, or `max_y C(x, y)`
    /// when every process is a candidate; `L_x − C(x, y) ≤ 0` for every non-candidate.
    pub lower: f64,
    /// `(y, C(x, y))` for the candidates that can gain, `C(x, y) < max(L_x, C(x, x))`,
    /// sorted by `y`.
    pub entries: Vec<(u32, f64)>,
    /// How many candidates the model named (inside the communicator).
    pub candidates: usize,
}

/// Row `x` of the candidate problem on `p` processes from the packages `x` receives;
/// `None` if the model names no candidates.
///
/// # Complexity
/// What [`copr_cost_models::SolverHints::candidates`] costs, O(candidates) memory.
pub fn candidate_row(
    model: &dyn CostModel,
    x: usize,
    incoming: &[(usize, Package)],
    p: usize,
) -> Option<CandidateRow> {
    let mut list = Vec::new();
    let bound = model.candidates(x, incoming, &mut list)?;
    let here = cost_here(model, x, incoming);
    list.retain(|e| e.0 < p);
    if !list.iter().any(|e| e.0 == x) {
        list.push((x, here));
    }
    // the largest valid shift: the bound itself, or (every process a candidate) the
    // dearest candidate
    let lower = if bound.is_finite() {
        bound
    } else {
        list.iter().map(|e| e.1).fold(f64::NEG_INFINITY, f64::max)
    };
    let keep = lower.max(here);
    let mut entries: Vec<(u32, f64)> = list
        .iter()
        .filter(|e| e.1 < keep)
        .map(|e| (e.0 as u32, e.1))
        .collect();
    entries.sort_unstable_by_key(|e| e.0);
    Some(CandidateRow {
        here,
        lower,
        entries,
        candidates: list.len(),
    })
}

/// The sparse relabeling and its certificate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SparseRelabeling {
    /// σ: target label `t` is taken by process `σ(t)`; the identity if σ saves nothing
    /// (at most `10⁻¹⁰ · W(G)`).
    pub(crate) sigma: Perm,
    /// `W(G)`: the cost without relabeling.
    pub(crate) cost_before: f64,
    /// `W(G) − W(G_σ)`, evaluated exactly for the σ returned.
    pub(crate) saving: f64,
    /// An upper bound on the saving of **every** σ (the certificate).
    pub(crate) bound: f64,
    /// Positive candidate entries of all rows together (the solver's input size).
    pub(crate) entries: usize,
    /// The longest row of candidate entries.
    pub(crate) max_row: usize,
    /// Pricing rounds of the column generation ; 0 when the first
    /// solve was already certified optimal or the column generation did not run.
    pub(crate) rounds: usize,
    /// Entries the pricing added: non-candidate pairs evaluated exactly because the
    /// duals said they could improve σ.
    pub(crate) priced: usize,
}

impl SparseRelabeling {
    /// `bound − saving ≥ 0`: σ saves at most this much less than the optimum.
    pub(crate) fn gap(&self) -> f64 {
        (self.bound - self.saving).max(0.0)
    }

    /// Whether the certificate proves σ optimal: `gap() ≤` [`super::CERTIFIED`]` · W(G)`
    /// (the rounding of the sums behind it).
    pub(crate) fn is_exact(&self) -> bool {
        self.gap() <= super::CERTIFIED * self.cost_before.abs()
    }

    /// The gap relative to the cost after relabeling, `gap / W(G_σ)` (0 when both are 0).
    pub(crate) fn relative_gap(&self) -> f64 {
        relative_gap(self.gap(), self.cost_before - self.saving)
    }
}

/// `gap / after`, the certified gap relative to the cost after relabeling: 0 when both
/// are 0, infinite for a gap over a cost of 0.
pub(crate) fn relative_gap(gap: f64, after: f64) -> f64 {
    if after > 0.0 {
        gap / after
    } else if gap > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// What the solver hands back before σ is evaluated.
pub(crate) struct Relaxed {
    pub(crate) sigma: Perm,
    /// `R`: the bound on the best shifted value `Σ_x g(x, σ(x))`.
    pub(crate) relaxation: f64,
}

/// Quantises the positive values of `value(x, y, C)` of the rows and solves them
/// exactly: σ and `res · (Q* + m)`, the bound on the best real-valued sum (see the
/// [module docs](self)). Columns not in `cols` (when given) are left out.
fn solve_quantised(
    p: usize,
    ptr: &[usize],
    entries: &[(u32, f64)],
    value: impl Fn(usize, f64) -> f64,
    cols: Option<&[bool]>,
) -> Result<(Csr, Perm, f64)> {
    let mut gmax = 0.0f64;
    for x in 0..p {
        for &(y, c) in &entries[ptr[x]..ptr[x + 1]] {
            if cols.is_none_or(|k| k[y as usize]) {
                let g = value(x, c);
                if !g.is_finite() && !g.is_nan() {
                    return Err(Error::Assignment(format!(
                        "a candidate gain is not finite ({g}) in row {x}"
                    )));
                }
                gmax = gmax.max(g);
            }
        }
    }
    if gmax <= 0.0 {
        return Ok((Csr::from_triplets(p, p, Vec::new()), Perm::identity(p), 0.0));
    }
    let res = gmax / LEVELS;
    let mut trip = Vec::new();
    let mut rows_with = 0usize;
    for x in 0..p {
        let mut any = false;
        for &(y, c) in &entries[ptr[x]..ptr[x + 1]] {
            if cols.is_some_and(|k| !k[y as usize]) {
                continue;
            }
            let g = value(x, c);
            if g > 0.0 {
                any = true;
                let q = (g / res).floor().min(LEVELS) as u64;
                if q > 0 {
                    trip.push((x, y as usize, q));
                }
            }
        }
        rows_with += usize::from(any);
    }
    let w = Csr::from_triplets(p, p, trip);
    let sigma = sparse_max(&w)?;
    let q_star = assignment_value(&w, &sigma);
    Ok((
        w,
        sigma,
        res * (q_star as f64 + rows_with as f64) * (1.0 + ROUNDING),
    ))
}

/// Solves the candidate problem given as CSR-like rows (`ptr`, `(y, C(x, y))`) with
/// `heads[x] = (C(x, x), L_x)` on `p` labels.
///
/// 1. the certified relaxation on `g = L_x − C(x, y) > 0` gives σ and the bound;
/// 2. the labels it leaves on zero-weight pairs (any pairing of them keeps its value)
///    are re-solved among their processes on the real gain `δ = C(x, x) − C(x, y) > 0`;
/// 3. the labels still without a gaining pair take their own process where it is among
///    theirs, the rest pair up in order.
pub(crate) fn solve_rows(
    p: usize,
    ptr: &[usize],
    entries: &[(u32, f64)],
    heads: &[(f64, f64)],
) -> Result<Relaxed> {
    let (w, sigma, relaxation) = solve_quantised(p, ptr, entries, |x, c| heads[x].1 - c, None)?;
    let mut fwd = sigma.forward().to_vec();
    let zero: Vec<usize> = (0..p).filter(|&x| w.get(x, fwd[x]) == 0).collect();
    let mut spare = vec![false; p];
    for &x in &zero {
        spare[fwd[x]] = true;
    }
    // stage 2 on the zero rows and their processes
    let mut in_zero = vec![false; p];
    for &x in &zero {
        in_zero[x] = true;
    }
    let mut zptr = vec![0usize; p + 1];
    let mut zent = Vec::new();
    for x in 0..p {
        if in_zero[x] {
            zent.extend_from_slice(&entries[ptr[x]..ptr[x + 1]]);
        }
        zptr[x + 1] = zent.len();
    }
    let (w2, sigma2, _) = solve_quantised(p, &zptr, &zent, |x, c| heads[x].0 - c, Some(&spare))?;
    let mut rest = Vec::new();
    for &x in &zero {
        let y = sigma2.apply(x);
        if w2.get(x, y) > 0 {
            fwd[x] = y;
            spare[y] = false;
        } else {
            rest.push(x);
        }
    }
    let mut left = Vec::new();
    for x in rest {
        if spare[x] {
            fwd[x] = x;
            spare[x] = false;
        } else {
            left.push(x);
        }
    }
    let mut free = (0..p).filter(|&y| spare[y]);
    for x in left {
        fwd[x] = free.next().expect("as many spare processes as labels");
    }
    Ok(Relaxed {
        sigma: Perm::from_forward(fwd)?,
        relaxation,
    })
}

/// The certificate and the choice between σ and the identity from the global sums.
pub(crate) fn finish(
    sigma: Perm,
    cost_before: f64,
    cost_after: f64,
    shift: f64,
    relaxation: f64,
    entries: usize,
    max_row: usize,
) -> SparseRelabeling {
    let saving = cost_before - cost_after;
    let bound = shift + relaxation + ROUNDING * cost_before.abs();
    let (sigma, saving) = if saving > 0.0 && saving > 1e-10 * cost_before.abs() {
        (sigma, saving)
    } else {
        (Perm::identity(sigma.len()), 0.0)
    };
    SparseRelabeling {
        sigma,
        cost_before,
        saving,
        bound,
        entries,
        max_row,
        rounds: 0,
        priced: 0,
    }
}

/// The sparse relabeling of `packages` under `model`: every target label's candidate
/// row (in parallel), one exact sparse solve, σ evaluated exactly, and the certificate
/// (see the [module docs](self)).
///
/// # Complexity
/// O(p + Σ_x candidates(x)) memory — no p × p table; time: the model's candidate
/// pricing plus [`crate::lap::sparse_max`] on the positive entries.
///
/// # Errors
/// [`Error::Limit`] if the model names no candidates ([`copr_cost_models::SolverHints::candidates`] is
/// `None`) or more than [`MAX_CANDIDATE_ENTRIES`] in all; [`Error::Mismatched`] if its machine has fewer ranks than the packages;
/// solver errors.
///
pub(crate) fn sparse_relabel(
    model: &dyn CostModel,
    packages: &Packages,
) -> Result<SparseRelabeling> {
    relabel_on_candidates(model, packages, None, false)
}

/// How far the sparse candidate relabeling refines its first solve by column generation
/// ([`crate::relabel::Relabel::refine`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Refine {
    /// Stop once the certificate proves σ within this fraction of its own cost
    /// ([`crate::relabel::Relabeled::relative_gap`]); 0 goes on until nothing is left to
    /// price.
    pub tolerance: f64,
    /// Re-solve the restricted problem from nothing every round instead of from the
    /// previous round's matching and potentials (slower; the same optimum — for tests).
    pub cold_start: bool,
    /// Pricing rounds at most (64 by default; the planners use
    /// [`super::PLANNER_ROUNDS`]).
    pub max_rounds: usize,
    /// Whether the restricted problem has one hub per group of the model's processes (a
    /// node of hundreds of ranks priced as one): `None` decides by the groups' size
    /// (64 processes or more on average) and the arcs' number (rows × groups ≤ 2²³);
    /// `Some(true)` whenever the model has groups; `Some(false)` never.
    pub hubs: Option<bool>,
    /// Whether the first sparse solve runs before the column generation (and ends it
    /// when its certificate suffices); `false` starts from the candidate rows directly,
    /// as the planners do beyond 8192 ranks.
    pub first_solve: bool,
}

impl Refine {
    /// Until nothing is left to price (or a limit): σ proven optimal where it ends there.
    pub const EXACT: Self = Self {
        tolerance: 0.0,
        cold_start: false,
        max_rounds: colgen::MAX_ROUNDS,
        hubs: None,
        first_solve: true,
    };

    /// Until the certificate proves σ within `tolerance` of the optimum (relative to σ's
    /// cost), warm-started.
    pub fn within(tolerance: f64) -> Self {
        Self {
            tolerance,
            ..Self::EXACT
        }
    }
}

/// [`sparse_relabel`], followed, when its certificate does not prove σ within
/// `refine.tolerance`, by the column generation (module docs): σ and the certificate
/// are the better of the two.
///
/// # Complexity
/// Per round O(rows · groups) group bounds (rows: those whose own bound `L_x` does not
/// already exclude every column; groups: the model's [`copr_cost_models::SolverHints::process_groups`]
/// while `rows · groups ≤ 2^28`, else one per row), the pairs priced (at most 32 per
/// row), and the shortest paths of the re-solve; at most `refine.max_rounds` rounds,
/// `2 · max(entries, 16·p)` pairs priced and
/// [`COLGEN_WORK_PER_ENTRY`]` · (entries + p)` pair visits in all (then the last
/// solved round's σ, or the first solve's, is kept). With hubs ([`Refine::hubs`]) the
/// rows hold every candidate the model names, and each round adds `rows · groups` hub
/// arcs (at most 2²³ by default) and the flow's shortest paths, which visit a group's
/// processes at once.
///
/// # Errors
/// As [`sparse_relabel`].
///
pub(crate) fn sparse_relabel_within(
    model: &dyn CostModel,
    packages: &Packages,
    refine: &Refine,
) -> Result<SparseRelabeling> {
    relabel_on_candidates(model, packages, Some(refine), !refine.first_solve)
}

/// Every label's candidate row, priced in parallel and laid out as CSR rows.
struct Priced {
    ptr: Vec<usize>,
    entries: Vec<(u32, f64)>,
    /// `(C(x, x), L_x)` of every label `x`.
    heads: Vec<(f64, f64)>,
    /// `Σ C(x, x)`: the cost before relabeling.
    before: f64,
    /// `Σ (C(x, x) − L_x)`.
    shift: f64,
    /// The longest row.
    max_row: usize,
}

/// The candidate rows of every label ([`candidate_row`]); rows stop being priced once
/// their entries pass [`MAX_CANDIDATE_ENTRIES`] (an error then).
fn priced_rows(model: &dyn CostModel, inc: &Incoming, p: usize) -> Result<Priced> {
    let total = std::sync::atomic::AtomicUsize::new(0);
    let rows: Vec<Option<CandidateRow>> = inc
        .par_rows()
        .map(|(x, inc)| {
            if total.load(std::sync::atomic::Ordering::Relaxed) > MAX_CANDIDATE_ENTRIES {
                return None;
            }
            let row = candidate_row(model, x, inc, p)?;
            total.fetch_add(row.entries.len(), std::sync::atomic::Ordering::Relaxed);
            Some(row)
        })
        .collect();
    check_candidate_entries(total.into_inner(), p)?;
    let rows: Vec<CandidateRow> = rows
        .into_iter()
        .collect::<Option<_>>()
        .ok_or_else(|| no_candidates(model, p))?;
    let mut out = Priced {
        ptr: Vec::with_capacity(p + 1),
        entries: Vec::new(),
        heads: Vec::with_capacity(p),
        before: 0.0,
        shift: 0.0,
        max_row: 0,
    };
    out.ptr.push(0);
    for r in &rows {
        out.entries.extend_from_slice(&r.entries);
        out.ptr.push(out.entries.len());
        out.heads.push((r.here, r.lower));
        out.before += r.here;
        out.shift += r.here - r.lower;
        out.max_row = out.max_row.max(r.entries.len());
    }
    Ok(out)
}

fn relabel_on_candidates(
    model: &dyn CostModel,
    packages: &Packages,
    refine: Option<&Refine>,
    direct: bool,
) -> Result<SparseRelabeling> {
    let p = packages.ranks();
    super::check_model_ranks(model, p)?;
    let inc = packages.incoming();
    let Priced {
        ptr,
        entries,
        heads,
        before,
        shift,
        max_row,
    } = priced_rows(model, &inc, p)?;
    let first_solve = |entries: &[(u32, f64)]| -> Result<SparseRelabeling> {
        let relaxed = solve_rows(p, &ptr, entries, &heads)?;
        let after = cost_at(model, &inc, &relaxed.sigma);
        Ok(finish(
            relaxed.sigma,
            before,
            after,
            shift,
            relaxed.relaxation,
            entries.len(),
            max_row,
        ))
    };
    let first = if direct {
        None
    } else {
        Some(first_solve(&entries)?)
    };
    let Some(refine) = refine else {
        return first.ok_or_else(|| Error::Assignment("no first solve".into()));
    };
    if let Some(f) = first.as_ref() {
        if f.is_exact() || f.relative_gap() <= refine.tolerance {
            return Ok(first.expect("checked"));
        }
    }
    // column generation from the exactly priced pairs and the rows' bounds
    let wild: Vec<bool> = (0..p).map(|x| inc[x].is_empty()).collect();
    let groups = model.process_groups();
    let hubs = colgen::wants_hubs(groups.as_deref(), &wild, refine.hubs);
    // with hubs, every candidate (not only those that gain): a sender's node is then
    // priced whole, and the hubs cover the other nodes
    let full = if hubs {
        full_candidate_rows(model, &inc, p, &heads)
    } else {
        None
    };
    let rows: Vec<colgen::Row> = match full {
        Some(rows) => rows.into_iter().map(colgen::Row::new).collect(),
        None => (0..p)
            .into_par_iter()
            .map(|x| {
                let given = &entries[ptr[x]..ptr[x + 1]];
                let diagonal = (x as u32, heads[x].0);
                if given.is_empty() {
                    // the common case at millions of ranks: no list at all
                    return colgen::Row::One([diagonal]);
                }
                let mut row = Vec::with_capacity(given.len() + 1);
                row.extend_from_slice(given);
                if let Err(k) = row.binary_search_by_key(&(x as u32), |e| e.0) {
                    row.insert(k, diagonal);
                }
                colgen::Row::new(row)
            })
            .collect(),
    };
    let lower: Vec<f64> = heads.iter().map(|h| h.1).collect();
    // the first solve's rows stay for a fallback when it has not run
    let entries = if first.is_some() {
        drop(entries);
        Vec::new()
    } else {
        entries
    };
    let budget =
        (MAX_CANDIDATE_ENTRIES - ptr[p].min(MAX_CANDIDATE_ENTRIES)).min(2 * ptr[p].max(16 * p));
    let tol = 1e-12 * before.abs() / p as f64;
    let max_work = COLGEN_WORK_PER_ENTRY * (ptr[p] + p) as u64;
    let limits = colgen::Limits {
        rel_gap: refine.tolerance,
        budget,
        max_work,
        cold: refine.cold_start,
        max_rounds: refine.max_rounds,
        tol,
        hubs: Some(hubs),
    };
    let out = colgen::Restricted::new(rows, lower, wild).run(model, &inc, groups, &limits);
    let first = match first {
        Some(f) => f,
        None if out.is_none() => first_solve(&entries)?,
        // the column generation's matching stands in for the first solve
        None => finish(
            Perm::identity(p),
            before,
            before,
            0.0,
            f64::INFINITY,
            ptr[p],
            max_row,
        ),
    };
    let Some(out) = out else {
        return Ok(first);
    };
    let sigma = Perm::from_forward(out.sigma)?;
    let saving = before - cost_at(model, &inc, &sigma);
    let bound = (before - out.lower_bound + ROUNDING * before.abs()).min(first.bound);
    let mut best = if saving > first.saving && saving > 1e-10 * before.abs() {
        SparseRelabeling {
            sigma,
            saving,
            ..first
        }
    } else {
        first
    };
    best.bound = bound;
    best.rounds = out.rounds;
    best.priced = out.priced;
    Ok(best)
}

/// Every candidate of each row (`(y, C(x, y))` sorted, the diagonal `C(x, x) = here`
/// included), not only those that gain; `None` (the caller keeps the rows that gain) if
/// they number more than [`MAX_CANDIDATE_ENTRIES`].
fn full_candidate_rows(
    model: &dyn CostModel,
    inc: &Incoming,
    p: usize,
    heads: &[(f64, f64)],
) -> Option<Vec<Vec<(u32, f64)>>> {
    let total = std::sync::atomic::AtomicUsize::new(0);
    let rows: Option<Vec<Vec<(u32, f64)>>> = inc
        .par_rows()
        .map(|(x, inc)| {
            if total.load(std::sync::atomic::Ordering::Relaxed) > MAX_CANDIDATE_ENTRIES {
                return None;
            }
            let mut list = Vec::new();
            model.candidates(x, inc, &mut list)?;
            let mut row: Vec<(u32, f64)> = list
                .into_iter()
                .filter(|e| e.0 < p)
                .map(|e| (e.0 as u32, e.1))
                .collect();
            row.sort_unstable_by_key(|e| e.0);
            row.dedup_by_key(|e| e.0);
            if let Err(k) = row.binary_search_by_key(&(x as u32), |e| e.0) {
                row.insert(k, (x as u32, heads[x].0));
            }
            total.fetch_add(row.len(), std::sync::atomic::Ordering::Relaxed);
            Some(row)
        })
        .collect();
    rows.filter(|_| total.into_inner() <= MAX_CANDIDATE_ENTRIES)
}

/// `W(G_σ) = Σ_x C(x, σ(x))`, in parallel.
fn cost_at(model: &dyn CostModel, inc: &Incoming, sigma: &Perm) -> f64 {
    inc.par_rows()
        .map(|(x, inc)| delivered_cost(model, sigma.apply(x), inc))
        .sum()
}

/// Refuses more than [`MAX_CANDIDATE_ENTRIES`] candidate entries in all.
pub(crate) fn check_candidate_entries(total: usize, p: usize) -> Result<()> {
    if total > MAX_CANDIDATE_ENTRIES {
        return Err(Error::Limit(format!(
            "the sparse relabeling of {p} ranks needs more than {total} candidate entries, beyond the limit of {MAX_CANDIDATE_ENTRIES} (copr::gain::MAX_CANDIDATE_ENTRIES): the machine puts too many ranks on the nodes that send each label its data"
        )));
    }
    Ok(())
}

/// The error for a model without candidates on a communicator too large for the table.
pub(crate) fn no_candidates(model: &dyn CostModel, p: usize) -> Error {
    Error::Limit(format!(
        "the cost model ({}) names no candidate processes, so it needs the dense p x p gain table, and p = {p} ranks exceeds the limit of {} (copr::lap::DENSE_LIMIT; the table would take {:.1} GB)",
        model.describe(),
        crate::lap::DENSE_LIMIT,
        (p as f64).powi(2) * 8.0 / 1e9
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_entries_beyond_the_limit_are_refused_in_one_line() {
        assert!(check_candidate_entries(MAX_CANDIDATE_ENTRIES, 9000).is_ok());
        let err = check_candidate_entries(MAX_CANDIDATE_ENTRIES + 1, 9000).unwrap_err();
        assert!(matches!(err, Error::Limit(_)), "{err:?}");
        let msg = err.to_string();
        assert!(!msg.contains('\n') && msg.contains("9000 ranks"), "{msg}");
    }
}
