//! Packages and the relabeling gain δ for any cost model.
//!
//! The package `S[s][t]` is what source rank `s` sends target rank `t`; a
//! [`copr_cost_models::CostModel`] prices it as `w(s, t, S[s][t])`. Relabeling target
//! label `x` to process `y` gains (COSTA Definition 4)
//!
//! `δ(x, y) = Σ_i w(i, x, S[i][x]) − w(i, y, S[i][x])`,
//!
//! and by Lemma 1 `Σ_x δ(x, σ(x)) = W(G) − W(G_σ)`: the exact dense assignment on δ gives
//! the cost-optimal σ. Row `x` of δ only needs the packages `x` receives, which
//! [`incoming`] computes from the two layouts alone — so each rank can compute its own row
//! ([`crate::relabel::Relabel::from_layouts`]).
//!
//! Without the p × p table: a model that names candidate processes
//! ([`copr_cost_models::SolverHints::candidates`]) gets the candidate relabeling ([`candidates`]), the exact
//! solve of a relaxation on the candidates with a certified bound on how far σ is from
//! the optimum (exact for the volume and pair-free models; what is proven and measured is
//! in `docs/SCALING.md`). The solvers are asked for through [`crate::relabel::Relabel`].
//!
//! Package summaries are computed per class pair of the layouts' axes, like the volumes:
//! no loop over blocks. A piece of the overlay that lies in `r` source rows and `c` source
//! columns is `c` segments of `r` elements in column-major local storage (`r` segments of
//! `c` in row-major); it is contiguous when it is a single segment.

pub mod candidates;
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub mod mpi;

pub use candidates::{candidate_row, CandidateRow, Refine, MAX_CANDIDATE_ENTRIES};

use rayon::prelude::*;

use copr_cost_models::{CostModel, Package};

use crate::csr::Csr;
use crate::error::{Error, Mismatched, Result};
use crate::lap::{dense_max, Perm, DENSE_LIMIT};
use crate::layout::axis::{overlap_stats, PieceStats};
use crate::layout::{check_shapes, Layout, Op, OpView, Order};

/// Overlay statistics per (source class, target class) of one axis.
type ClassPairs = Vec<(u32, u32, PieceStats)>;

/// What the receiver does to every element of a package (op, and whether α scales),
/// for the packages' transform facts. Not to be confused with
/// [`crate::engine::Transform`], one whole layout-to-layout redistribution of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TransformKind {
    /// op in A ← α·op(B) + β·A.
    pub op: Op,
    /// α ≠ 1: every element is scaled.
    pub scale: bool,
}

/// The packages of a redistribution: a sparse pattern (source × target) and the summary
/// of each nonzero package.
#[derive(Debug, Clone)]
pub struct Packages {
    /// Element counts, the pattern; entry `k` of the CSR arrays is package `pkgs[k]`.
    volumes: Csr,
    pkgs: Vec<Package>,
}

/// Inputs that fix the packages.
#[derive(Debug, Clone, Copy)]
pub struct PackageInput<'a> {
    /// Layout of B.
    pub source: &'a Layout,
    /// Layout of A.
    pub target: &'a Layout,
    /// op, and whether α scales.
    pub transform: TransformKind,
    /// Bytes per element.
    pub element_size: usize,
}

impl PackageInput<'_> {
    fn ranks(&self) -> usize {
        self.source.ranks().max(self.target.ranks())
    }

    /// Axis overlaps of op(source) and target: rows, then columns.
    fn overlaps(&self) -> Result<(ClassPairs, ClassPairs)> {
        check_shapes(self.source, self.target, self.transform.op)?;
        let view = OpView::new(self.source, self.transform.op);
        Ok((
            overlap_stats(&view.row_axis(), &self.target.row_axis()),
            overlap_stats(&view.col_axis(), &self.target.col_axis()),
        ))
    }

    /// The package of all overlay pieces in view row-pair stats `rs` × column-pair `cs`,
    /// sent by `s`.
    fn piece(&self, s: usize, rs: &PieceStats, cs: &PieceStats) -> Package {
        let es = self.element_size as u64;
        let transposed = self.transform.op.transposes();
        // source rows/columns of the pieces
        let (sr, sc) = if transposed { (cs, rs) } else { (rs, cs) };
        // inner = along a segment, outer = across segments
        let (inner, outer) = match self.source.storage_order(s) {
            Order::ColMajor => (sr, sc),
            Order::RowMajor => (sc, sr),
        };
        let bytes = rs.len * cs.len * es;
        let mut p = Package::EMPTY;
        p.bytes = bytes;
        p.blocks = rs.pieces * cs.pieces;
        let contiguous = inner.len * outer.ones * es;
        p.locality.contiguous_bytes = contiguous;
        p.locality.strided_bytes = bytes - contiguous;
        p.locality.segments = inner.pieces * (outer.len - outer.ones);
        if p.locality.segments > 0 {
            p.locality.min_segment_bytes = inner.min_len * es;
        }
        if self.transform.scale {
            p.transform.scale = bytes;
        }
        if transposed {
            p.transform.transpose = bytes;
        }
        if self.transform.op == Op::ConjTranspose {
            p.transform.conjugate = bytes;
        }
        p
    }
}

fn merge_sorted(mut trip: Vec<(usize, usize, u64, Package)>) -> Vec<(usize, usize, u64, Package)> {
    trip.sort_unstable_by_key(|e| (e.0, e.1));
    let mut out: Vec<(usize, usize, u64, Package)> = Vec::with_capacity(trip.len());
    for e in trip {
        match out.last_mut() {
            Some(l) if l.0 == e.0 && l.1 == e.1 => {
                l.2 += e.2;
                l.3.merge(&e.3);
            }
            _ => out.push(e),
        }
    }
    out
}

impl Packages {
    /// All packages of the redistribution.
    ///
    /// # Complexity
    /// As [`crate::volume::Volumes::compute`], plus a sort of the nonzeros.
    ///
    /// # Errors
    /// [`Error::Mismatched`] if op(source) and target differ in shape;
    /// [`Error::Limit`] beyond [`crate::volume::MAX_OVERLAP_PAIRS`].
    pub fn compute(input: &PackageInput<'_>) -> Result<Self> {
        let (r, c) = input.overlaps()?;
        crate::volume::check_overlap_pairs(r.len(), c.len())?;
        let view = OpView::new(input.source, input.transform.op);
        let mut trip = Vec::with_capacity(r.len() * c.len());
        for (a, b, rs) in &r {
            for (cc, d, cs) in &c {
                let s = view.owner(*a as usize, *cc as usize);
                let t = input.target.owner_by_class(*b as usize, *d as usize);
                trip.push((s, t, rs.len * cs.len, input.piece(s, rs, cs)));
            }
        }
        let merged = merge_sorted(trip);
        let p = input.ranks();
        let pkgs = merged.iter().map(|e| e.3).collect();
        let volumes =
            Csr::from_triplets(p, p, merged.into_iter().map(|e| (e.0, e.1, e.2)).collect());
        Ok(Self { volumes, pkgs })
    }

    /// Packages given explicitly as `(s, t, elements, summary)` on `p` ranks (any data,
    /// not only matrices); repeated pairs are merged.
    ///
    /// # Errors
    /// [`Error::Mismatched`] if a rank is outside `0..p`.
    pub fn from_list(p: usize, list: Vec<(usize, usize, u64, Package)>) -> Result<Self> {
        if let Some(e) = list.iter().find(|e| e.0 >= p || e.1 >= p) {
            return Err(Mismatched::PackageRank {
                from: e.0,
                to: e.1,
                ranks: p,
            }
            .into());
        }
        let merged = merge_sorted(list.into_iter().filter(|e| e.3.bytes > 0).collect());
        let pkgs = merged.iter().map(|e| e.3).collect();
        let volumes =
            Csr::from_triplets(p, p, merged.into_iter().map(|e| (e.0, e.1, e.2)).collect());
        Ok(Self { volumes, pkgs })
    }

    /// Communicator size.
    pub fn ranks(&self) -> usize {
        self.volumes.n_rows()
    }

    /// Element counts `V[s][t]`.
    pub fn volumes(&self) -> &Csr {
        &self.volumes
    }

    /// The nonzero packages as `(s, t, package)`.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, &Package)> + '_ {
        self.volumes
            .iter()
            .zip(&self.pkgs)
            .map(|((s, t, _), p)| (s, t, p))
    }

    /// The same packages in a communicator of `ranks ≥ self.ranks()` ranks.
    pub(crate) fn widened(&self, ranks: usize) -> Self {
        Self {
            volumes: Csr::from_triplets(ranks, ranks, self.volumes.iter().collect()),
            pkgs: self.pkgs.clone(),
        }
    }

    /// Bytes per package, `(s, t) -> bytes`, in the volumes' pattern.
    pub(crate) fn bytes_matrix(&self) -> Csr {
        let q = self.ranks();
        Csr::from_triplets(q, q, self.iter().map(|(s, t, p)| (s, t, p.bytes)).collect())
    }

    /// Packages received by each target: `incoming[t] = [(s, S[s][t])]`.
    pub fn by_target(&self) -> Vec<Vec<(usize, Package)>> {
        let inc = self.incoming();
        (0..inc.len()).map(|t| inc[t].to_vec()).collect()
    }

    /// [`Packages::by_target`] in one array: 8 bytes a rank besides the packages, where
    /// a list per rank takes 24 (most ranks of a large plan receive nothing).
    pub(crate) fn incoming(&self) -> Incoming {
        let p = self.ranks();
        let mut start = vec![0usize; p + 1];
        for (_, t, _) in self.iter() {
            start[t + 1] += 1;
        }
        for t in 0..p {
            start[t + 1] += start[t];
        }
        let mut next = start.clone();
        let mut items = vec![(0, Package::default()); start[p]];
        for (s, t, pk) in self.iter() {
            items[next[t]] = (s, *pk);
            next[t] += 1;
        }
        Incoming { start, items }
    }

    /// Total cost `W(G_σ) = Σ_{s,t} w(s, σ(t), S[s][t])` (σ = identity for `W(G)`).
    ///
    /// # Panics
    /// If σ has the wrong length.
    pub fn total_cost(&self, model: &dyn CostModel, sigma: Option<&Perm>) -> f64 {
        let entries: Vec<(usize, usize, &Package)> = self.iter().collect();
        entries
            .par_iter()
            .map(|&(s, t, p)| model.cost(s, sigma.map_or(t, |g| g.apply(t)), p))
            .sum()
    }
}

/// The packages target rank `x` receives, `[(s, S[s][x])]` sorted by `s`, computed from
/// the layouts alone (no global volume matrix): what rank `x` needs for its row of δ.
///
/// # Complexity
/// O(axis pieces of both layouts + target row classes × column classes + the pieces of
/// the packages of `x`).
///
/// # Errors
/// [`Error::Mismatched`] if op(source) and target differ in shape.
pub fn incoming(input: &PackageInput<'_>, x: usize) -> Result<Vec<(usize, Package)>> {
    let (mut r, mut c) = input.overlaps()?;
    let view = OpView::new(input.source, input.transform.op);
    // group both axes' entries by target class, then visit the class pairs x owns
    r.sort_unstable_by_key(|e| e.1);
    c.sort_unstable_by_key(|e| e.1);
    let groups = |v: &ClassPairs| -> Vec<(u32, std::ops::Range<usize>)> {
        let mut out: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
        for (k, e) in v.iter().enumerate() {
            match out.last_mut() {
                Some((class, range)) if *class == e.1 => range.end = k + 1,
                _ => out.push((e.1, k..k + 1)),
            }
        }
        out
    };
    let (row_groups, col_groups) = (groups(&r), groups(&c));
    let mut trip = Vec::new();
    for (b, rows) in &row_groups {
        for (d, cols) in &col_groups {
            if input.target.owner_by_class(*b as usize, *d as usize) != x {
                continue;
            }
            for (a, _, rs) in &r[rows.clone()] {
                for (cc, _, cs) in &c[cols.clone()] {
                    let s = view.owner(*a as usize, *cc as usize);
                    trip.push((s, x, rs.len * cs.len, input.piece(s, rs, cs)));
                }
            }
        }
    }
    Ok(merge_sorted(trip).into_iter().map(|e| (e.0, e.3)).collect())
}

/// Row `x` of δ: `out[y] = Σ_i w(i, x, S[i][x]) − w(i, y, S[i][x])` over the packages
/// `incoming = [(i, S[i][x])]`.
///
/// # Complexity
/// O(p · |incoming|) cost evaluations.
///
/// # Panics
/// If `out` is shorter than the ranks referenced.
pub fn gain_row(model: &dyn CostModel, x: usize, incoming: &[(usize, Package)], out: &mut [f64]) {
    let here = cost_here(model, x, incoming);
    out.fill(here);
    for (i, p) in incoming {
        model.add_costs_from(*i, p, -1.0, out);
    }
}

/// `Σ_i w(i, x, S[i][x])`: what the packages `incoming` of target `x` cost where they
/// are addressed (summed over x, the cost without relabeling `W(G)`).
pub(crate) fn cost_here(model: &dyn CostModel, x: usize, incoming: &[(usize, Package)]) -> f64 {
    incoming.iter().map(|(i, p)| model.cost(*i, x, p)).sum()
}

/// The packages each target receives, `inc[t] = [(s, S[s][t])]` in order of `s`, as
/// one array with each target's start ([`Packages::incoming`]).
pub(crate) struct Incoming {
    start: Vec<usize>,
    items: Vec<(usize, Package)>,
}

impl Incoming {
    /// The number of targets.
    pub(crate) fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// `(t, inc[t])` for every target, in parallel.
    pub(crate) fn par_rows(
        &self,
    ) -> impl IndexedParallelIterator<Item = (usize, &[(usize, Package)])> + '_ {
        (0..self.len()).into_par_iter().map(move |t| (t, &self[t]))
    }
}

impl std::ops::Index<usize> for Incoming {
    type Output = [(usize, Package)];

    fn index(&self, t: usize) -> &Self::Output {
        &self.items[self.start[t]..self.start[t + 1]]
    }
}

/// The full δ table (row-major p × p), rows in parallel.
///
/// # Complexity
/// O(p · nnz) cost evaluations, p²·8 bytes.
pub fn gain_matrix(model: &dyn CostModel, packages: &Packages) -> Vec<f64> {
    let p = packages.ranks();
    let inc = packages.incoming();
    let mut gain = vec![0.0; p * p];
    gain.par_chunks_mut(p.max(1))
        .enumerate()
        .for_each(|(x, row)| gain_row(model, x, &inc[x], row));
    gain
}

/// Refuses the p × p gain table beyond [`DENSE_LIMIT`] ranks.
fn check_dense_limit(p: usize) -> Result<()> {
    if p > DENSE_LIMIT {
        return Err(Error::Limit(format!(
            "this cost model needs the dense p x p gain table, and p = {p} ranks exceeds the limit of {DENSE_LIMIT} (copr::lap::DENSE_LIMIT; the table would take {:.1} GB); models that name candidate processes (CostModel::candidates) avoid it",
            (p as f64).powi(2) * 8.0 / 1e9
        )));
    }
    Ok(())
}

/// Checks that `model` prices every rank of the communicator.
pub(crate) fn check_model_ranks(model: &dyn CostModel, p: usize) -> Result<()> {
    match model.ranks() {
        Some(r) if r < p => Err(Mismatched::ModelRanks {
            model: r,
            layouts: p,
        }
        .into()),
        _ => Ok(()),
    }
}

/// The certified gap, relative to σ's cost, at which [`crate::relabel::Method::Auto`]
/// stops refining the sparse relabeling of a cost model beyond [`DENSE_LIMIT`] ranks.
pub const PLANNER_TOLERANCE: f64 = 1e-3;

/// Pricing rounds [`crate::relabel::Method::Auto`] allows the column generation beyond
/// [`DENSE_LIMIT`] ranks
/// (each round one restricted re-solve and one pass of bounds per group over the rows).
pub const PLANNER_ROUNDS: usize = 4;

/// A sparse relabeling whose certified gap is at most this fraction of `W(G)` is taken
/// as the optimum (the dense table's own rounding is of this order).
pub const CERTIFIED: f64 = 1e-9;

/// The cost-optimal σ from the dense p × p table of δ (exact assignment), the identity
/// if it saves nothing ([`keep_if_gain`]): the reference the planners fall back on.
///
/// # Complexity
/// O(p · nnz) cost evaluations, p²·8 bytes, and [`dense_max`].
///
/// # Errors
/// [`Error::Mismatched`] if the model's machine has fewer ranks than the packages;
/// [`Error::Limit`] beyond [`DENSE_LIMIT`] ranks; solver errors.
pub(crate) fn relabel_dense(model: &dyn CostModel, packages: &Packages) -> Result<Perm> {
    let p = packages.ranks();
    check_model_ranks(model, p)?;
    check_dense_limit(p)?;
    let table = gain_matrix(model, packages);
    let sigma = dense_max(p, &table)?;
    Ok(keep_if_gain(
        p,
        &table,
        sigma,
        packages.total_cost(model, None),
    ))
}

/// `sigma` if it gains something on the row-major `p × p` table `gain` of δ, else the
/// identity. The saving of σ is `Σ_x δ(x, σ(x)) − δ(x, x)` (Lemma 1: `W(G) − W(G_σ)`;
/// `δ(x, x)` is zero up to rounding); it counts as nothing when it is at most
/// `10⁻¹⁰ · |W(G)|`, with `cost_before` = `W(G)` the cost without relabeling — δ's
/// entries are differences of sums of that size, so smaller savings are rounding.
///
/// # Complexity
/// O(p).
///
/// # Panics
/// If `gain.len() != p²` or `sigma.len() != p`.
///
pub(crate) fn keep_if_gain(p: usize, gain: &[f64], sigma: Perm, cost_before: f64) -> Perm {
    assert_eq!(
        gain.len(),
        p * p,
        "a gain table of {} entries for p = {p}",
        gain.len()
    );
    assert_eq!(sigma.len(), p, "σ of length {} for p = {p}", sigma.len());
    let saved: f64 = gain
        .chunks_exact(p.max(1))
        .enumerate()
        .map(|(x, row)| row[sigma.apply(x)] - row[x])
        .sum();
    if saved > 0.0 && saved > 1e-10 * cost_before.abs() {
        sigma
    } else {
        Perm::identity(p)
    }
}

/// The cost-optimal **joint** σ of a batch: one relabeling for the targets of every
/// transform, minimising the batch's total cost `Σ_k W_k(G_σ)` exactly, with `σ(t) = t`
/// for the labels in `fixed`.
///
/// The relabeling gains add: with `δ_k` each transform's table (COSTA Definition 4, in
/// the batch's rank space of `ranks` ranks; a transform on fewer ranks has zero rows
/// beyond them),
///
/// `δ(x, y) = Σ_k δ_k(x, y)`,  `Σ_x δ(x, σ(x)) = Σ_k W_k(G) − W_k(G_σ)` (Lemma 1 per
/// transform),
///
/// so the joint σ is one assignment on the summed table, restricted to the labels that
/// are not fixed (σ maps them onto themselves). A model that is a multiple of the
/// locally-free volume needs no table: the sparse exact solver runs on the summed bytes
/// (`Σ_k` of each transform's bytes matrix, transposed, divided by their common
/// divisor), as the joint volume relabeling does on elements. A σ that saves nothing is
/// the identity.
///
/// # Complexity
/// O(K · p · nnz) cost evaluations and p²·8 bytes for the table (K transforms); the
/// sparse path as [`crate::lap::sparse_max`].
///
/// # Errors
/// [`Error::Mismatched`] if a transform has more ranks than `ranks`, the model's machine
/// fewer, or a fixed label is outside `0..ranks`; [`Error::Limit`] for the dense table
/// beyond [`DENSE_LIMIT`] ranks or summed bytes beyond 2^60; solver errors.
///
/// Returns σ, whether it was found on the summed volumes, and the solver's entries
/// (their nonzeros, or `ranks²` for the table).
pub(crate) fn joint_relabel(
    model: &dyn CostModel,
    packages: &[&Packages],
    ranks: usize,
    fixed: &[usize],
) -> Result<(Perm, bool, usize)> {
    check_model_ranks(model, ranks)?;
    if let Some((k, pk)) = packages
        .iter()
        .enumerate()
        .find(|(_, pk)| pk.ranks() > ranks)
    {
        return Err(Mismatched::JointRanks {
            transform: k,
            what: "packages",
            ranks: pk.ranks(),
            joint: ranks,
        }
        .into());
    }
    // the same packages given several times (copies of one transform) count once,
    // weighted by how often they are given: memory follows the distinct transforms
    let distinct = distinct_weighted(packages);
    match model.volume_scale() {
        Some(c) if c > 0.0 => {
            let bytes: Vec<(Csr, u64)> = distinct
                .iter()
                .map(|&(pk, n)| (pk.bytes_matrix(), n))
                .collect();
            let g = bytes
                .iter()
                .flat_map(|(b, _)| b.values())
                .fold(0, |g, &x| gcd(g, x))
                .max(1);
            let scaled: Vec<(Csr, u64)> = bytes
                .into_iter()
                .map(|(b, n)| {
                    let scaled = Csr::from_triplets(
                        b.n_rows(),
                        b.n_cols(),
                        b.iter().map(|(s, t, x)| (s, t, x / g)).collect(),
                    );
                    (scaled, n)
                })
                .collect();
            let parts: Vec<(&Csr, u64)> = scaled.iter().map(|(b, n)| (b, *n)).collect();
            let entries = parts.iter().map(|(b, _)| b.nnz()).sum();
            let sigma = crate::lap::joint_assign(&parts, ranks, fixed)?;
            return Ok((sigma, true, entries));
        }
        Some(0.0) => return Ok((Perm::identity(ranks), true, 0)),
        _ => {}
    }
    check_dense_limit(ranks)?;
    let free = crate::lap::FreeLabels::new(ranks, fixed)?;
    let mut table = vec![0.0; ranks * ranks];
    for &(pk, n) in &distinct {
        let part = gain_matrix(model, &pk.widened(ranks));
        let n = n as f64;
        table.iter_mut().zip(part).for_each(|(a, b)| *a += n * b);
    }
    let labels = free.labels();
    let table_ref = &table;
    let sub: Vec<f64> = labels
        .iter()
        .flat_map(|&x| labels.iter().map(move |&y| table_ref[x * ranks + y]))
        .collect();
    let sigma = free.expand(&dense_max(free.len(), &sub)?)?;
    let sigma = keep_if_gain(ranks, &table, sigma, joint_cost(model, packages, None));
    Ok((sigma, false, ranks * ranks))
}

/// The distinct package sets of `packages` (the same reference given several times is
/// one), each with how often it is given, in order of first appearance.
fn distinct_weighted<'a>(packages: &[&'a Packages]) -> Vec<(&'a Packages, u64)> {
    let mut index = std::collections::HashMap::new();
    let mut distinct: Vec<(&Packages, u64)> = Vec::new();
    for &pk in packages {
        let d = *index.entry(std::ptr::from_ref(pk)).or_insert_with(|| {
            distinct.push((pk, 0));
            distinct.len() - 1
        });
        distinct[d].1 += 1;
    }
    distinct
}

/// The total cost of a batch, `Σ_k W_k(G_σ)`, with one σ for every transform (`None`:
/// without relabeling); σ may be longer than a transform's ranks.
///
/// # Panics
/// If σ is shorter than a transform's ranks.
pub fn joint_cost(model: &dyn CostModel, packages: &[&Packages], sigma: Option<&Perm>) -> f64 {
    packages.iter().map(|pk| pk.total_cost(model, sigma)).sum()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Distributed δ with `p` simulated ranks: every rank computes its row from
/// [`incoming`] only, the rows meet at the solver; σ (the identity if it saves nothing),
/// `W(G)`, and σ's saving `Σ_x δ(x, σ(x)) − δ(x, x)` (Lemma 1).
///
/// # Errors
/// As [`relabel_dense`].
pub(crate) fn distributed_relabel(
    model: &dyn CostModel,
    input: &PackageInput<'_>,
) -> Result<(Perm, f64, f64)> {
    let p = input.ranks();
    check_model_ranks(model, p)?;
    check_dense_limit(p)?;
    let rows: Vec<(Vec<f64>, f64)> = (0..p)
        .into_par_iter()
        .map(|x| {
            let inc = incoming(input, x)?;
            let mut row = vec![0.0; p];
            gain_row(model, x, &inc, &mut row);
            Ok((row, cost_here(model, x, &inc)))
        })
        .collect::<Result<_>>()?;
    let cost_before: f64 = rows.iter().map(|r| r.1).sum();
    let table: Vec<f64> = rows.into_iter().flat_map(|r| r.0).collect();
    let sigma = keep_if_gain(p, &table, dense_max(p, &table)?, cost_before);
    let saving = (0..p)
        .map(|x| table[x * p + sigma.apply(x)] - table[x * p + x])
        .sum();
    Ok((sigma, cost_before, saving))
}

/// The locally-free volume gain (COSTA eq. 1, Remark 2), dense and row-major:
/// `δ(x, y) = V[y][x] − V[x][x]`, the volume saved by letting process `y` take target
/// label `x`.
///
/// # Complexity
/// O(p² + nnz).
///
/// # Example
/// ```
/// use copr::gain::locally_free_gain;
/// use copr::csr::Csr;
/// use copr::volume::Volumes;
/// let v = Volumes::from_matrix(Csr::from_dense(2, 2, &[1, 5, 4, 2]));
/// assert_eq!(locally_free_gain(&v), vec![0.0, 3.0, 3.0, 0.0]);
/// ```
pub fn locally_free_gain(v: &crate::volume::Volumes) -> Vec<f64> {
    let p = v.ranks();
    let mut gain = vec![0.0; p * p];
    for x in 0..p {
        let own = v.get(x, x) as f64;
        for y in 0..p {
            gain[x * p + y] = -own;
        }
    }
    for (y, x, vol) in v.matrix().iter() {
        gain[x * p + y] += vol as f64;
    }
    gain
}

#[cfg(test)]
mod tests {
    use super::keep_if_gain;
    use crate::lap::Perm;

    #[test]
    fn keep_if_gain_keeps_only_a_saving_above_rounding() {
        let swap = Perm::from_forward(vec![1, 0]).unwrap();
        // swapping saves 3 + 3 of a cost of 10
        assert_eq!(
            keep_if_gain(2, &[0.0, 3.0, 3.0, 0.0], swap.clone(), 10.0),
            swap
        );
        // swapping saves nothing: every label stays where it is
        assert!(keep_if_gain(2, &[0.0, 0.0, 0.0, 0.0], swap.clone(), 10.0).is_identity());
        assert!(keep_if_gain(2, &[0.0, 1.0, -1.0, 0.0], swap.clone(), 10.0).is_identity());
        // a "saving" at the rounding level of the costs is no saving
        assert!(keep_if_gain(2, &[0.0, 1e-15, 1e-15, 0.0], swap, 10.0).is_identity());
    }
}
