//! Communication volumes: what every source rank must deliver to every target rank.

use serde::Serialize;

use crate::csr::Csr;
use crate::error::{Error, Result};
use crate::lap::Perm;
use crate::layout::axis::overlap_counts;
use crate::layout::{check_shapes, Layout, Op, OpView};

mod outer;

pub(crate) use outer::Columns;

/// Largest number of (row overlap, column overlap) pairs a volume computation visits:
/// 2^24 = 16 777 216. Each pair is a candidate package `(s, t)`; the COSTA paper's
/// 102 400-rank case has 1.6 million. Checked before allocating, by
/// [`Volumes::compute`] and [`crate::gain::Packages::compute`].
pub const MAX_OVERLAP_PAIRS: usize = 1 << 24;

/// Checks `rows × cols` overlap pairs against [`MAX_OVERLAP_PAIRS`].
pub(crate) fn check_overlap_pairs(rows: usize, cols: usize) -> Result<()> {
    let pairs = rows as u128 * cols as u128;
    if pairs > MAX_OVERLAP_PAIRS as u128 {
        return Err(Error::Limit(format!(
            "the layouts overlap in {rows} (row class pairs) x {cols} (column class pairs) = {pairs} pieces to price, more than the limit of {MAX_OVERLAP_PAIRS} (copr::volume::MAX_OVERLAP_PAIRS)"
        )));
    }
    Ok(())
}

/// The pieces V is made of: `op(source)`, the communicator size, and the row and column
/// overlap counts, checked against [`MAX_OVERLAP_PAIRS`].
type Overlaps<'a> = (
    OpView<'a>,
    usize,
    Vec<(u32, u32, u64)>,
    Vec<(u32, u32, u64)>,
);

fn overlaps<'a>(source: &'a Layout, target: &Layout, op: Op) -> Result<Overlaps<'a>> {
    check_shapes(source, target, op)?;
    let view = OpView::new(source, op);
    let ranks = source.ranks().max(target.ranks());
    let r = overlap_counts(&view.row_axis(), &target.row_axis());
    let c = overlap_counts(&view.col_axis(), &target.col_axis());
    check_overlap_pairs(r.len(), c.len())?;
    Ok((view, ranks, r, c))
}

/// The sparse volume matrix `V[s][t]`: number of elements source rank `s` must deliver
/// to target rank `t` for `A ← op(B)` with B in the source layout and A in the target.
///
/// Both layouts live in one communicator of `ranks() = max(source ranks, target
/// ranks)`; a rank outside a layout's grid simply holds nothing of it.
///
/// # Example
/// ```
/// use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
/// use copr::volume::Volumes;
/// let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(8, 8, 4, 4, 2, 2)).unwrap().into();
/// let mut t = BlockCyclicSpec::new(8, 8, 4, 4, 2, 2);
/// t.grid_order = Order::ColMajor;
/// let dst: Layout = BlockCyclic::new(t).unwrap().into();
/// let v = Volumes::compute(&src, &dst, Op::Identity).unwrap();
/// assert_eq!(v.total(), 64);
/// assert_eq!(v.get(1, 2), 16); // block (0, 1): rank 1 row-major, rank 2 column-major
/// assert_eq!(v.remote(), 32);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Volumes {
    v: Csr,
}

impl Volumes {
    /// Computes V for `A ← op(B)`, B in `source`, A in `target`.
    ///
    /// Works on the two layouts' axes: the row overlap counts
    /// `R[a][b] = #{rows i : source row class a, target row class b}` and the column
    /// counts `C[c][d]` give `V[owner_B(a, c)][owner_A(b, d)] += R[a][b]·C[c][d]`, where a
    /// class is a process row/column for block-cyclic layouts and a block row/column for
    /// grids. No per-block or per-element loop: the paper's 10^5 × 10^5 matrix in 1 × 1
    /// blocks takes milliseconds.
    ///
    /// The rows of V are written in order, each as the product of its class pairs' row
    /// and column overlaps; a row comes out sorted by target rank without a sort when
    /// its rank holds one class pair and the target's owner grows with one of its two
    /// classes (every block-cyclic source and target), otherwise the row is sorted.
    ///
    /// # Complexity
    /// O(m/mb + n/nb for both layouts (|R_A ∪ R_B| + |C_A ∪ C_B| for grids) + ranks +
    /// nnz(R)·nnz(C)), plus a sort of the rows that need one; nnz(R)·nnz(C) is at most
    /// the number of overlay cells.
    ///
    /// # Errors
    /// [`crate::Error::Mismatched`] if op(source) and target differ in shape;
    /// [`crate::Error::Limit`] beyond [`MAX_OVERLAP_PAIRS`].
    pub fn compute(source: &Layout, target: &Layout, op: Op) -> Result<Self> {
        let (view, ranks, r, c) = overlaps(source, target, op)?;
        Ok(Self {
            v: outer::outer_product(
                ranks,
                &r,
                &c,
                |a, cc| view.owner(a, cc),
                |b, d| target.owner_by_class(b, d),
            ),
        })
    }

    /// The columns of V for `A ← op(B)` as [`Volumes::compute`] would build them, to be
    /// visited one target rank at a time without holding V (same checks and errors).
    ///
    /// # Complexity
    /// O(m/mb + n/nb for both layouts + ranks + source class pairs + target class
    /// pairs); visiting a column costs its nonzeros.
    pub(crate) fn columns(source: &Layout, target: &Layout, op: Op) -> Result<Columns> {
        let (view, ranks, r, c) = overlaps(source, target, op)?;
        Ok(Columns::new(
            ranks,
            &r,
            &c,
            |a, cc| view.owner(a, cc),
            |b, d| target.owner_by_class(b, d),
        ))
    }

    /// Wraps an explicit volume matrix (square).
    ///
    /// # Panics
    /// If the matrix is not square.
    pub fn from_matrix(v: Csr) -> Self {
        assert_eq!(v.n_rows(), v.n_cols(), "a volume matrix is square");
        Self { v }
    }

    /// The matrix, rows = source rank, columns = target rank.
    pub fn matrix(&self) -> &Csr {
        &self.v
    }

    /// Communicator size.
    pub fn ranks(&self) -> usize {
        self.v.n_rows()
    }

    /// `V[s][t]`.
    pub fn get(&self, s: usize, t: usize) -> u64 {
        self.v.get(s, t)
    }

    /// All elements moved (the matrix size).
    pub fn total(&self) -> u64 {
        self.v.sum()
    }

    /// Elements that stay on their rank: `Σ_s V[s][s]`.
    pub fn local(&self) -> u64 {
        (0..self.ranks()).map(|s| self.v.get(s, s)).sum()
    }

    /// Elements that cross ranks.
    pub fn remote(&self) -> u64 {
        self.total() - self.local()
    }

    /// Local elements after relabeling target label `t` to process `σ(t)`:
    /// `Σ_t V[σ(t)][t]`.
    ///
    /// # Panics
    /// If σ has the wrong length.
    pub fn local_after(&self, sigma: &Perm) -> u64 {
        assert_eq!(sigma.len(), self.ranks(), "σ must permute all ranks");
        (0..self.ranks())
            .map(|t| self.v.get(sigma.apply(t), t))
            .sum()
    }

    /// Remote elements after relabeling with σ: `Σ_{s,t} V[s][t]·[s ≠ σ(t)]`.
    ///
    /// # Panics
    /// If σ has the wrong length.
    pub fn remote_after(&self, sigma: &Perm) -> u64 {
        self.total() - self.local_after(sigma)
    }

    /// The volume matrix after relabeling: column t moves to column σ(t).
    pub fn relabeled(&self, sigma: &Perm) -> Self {
        let trip = self
            .v
            .iter()
            .map(|(s, t, x)| (s, sigma.apply(t), x))
            .collect();
        Self {
            v: Csr::from_triplets(self.ranks(), self.ranks(), trip),
        }
    }
}

/// Percentage of `before` removed by going to `after` (0 when `before` is 0).
pub fn reduction_percent(before: u64, after: u64) -> f64 {
    if before == 0 {
        0.0
    } else {
        100.0 * (before as f64 - after as f64) / before as f64
    }
}
