//! A compressed-sparse-row matrix of non-negative integer weights.

use serde::{Deserialize, Serialize};

/// A sparse `n_rows × n_cols` matrix of `u64` values in CSR form.
///
/// Column indices within a row are strictly increasing; stored values may be zero only
/// if a caller put them there explicitly (constructors drop zeros).
///
/// # Example
/// ```
/// use copr::csr::Csr;
/// let m = Csr::from_triplets(2, 3, vec![(1, 2, 5), (0, 1, 1), (1, 2, 2)]);
/// assert_eq!(m.get(1, 2), 7);
/// assert_eq!(m.get(0, 0), 0);
/// assert_eq!(m.nnz(), 2);
/// assert_eq!(m.transpose().get(2, 1), 7);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Csr {
    n_rows: usize,
    n_cols: usize,
    row_ptr: Vec<usize>,
    cols: Vec<u32>,
    vals: Vec<u64>,
}

impl Csr {
    /// An all-zero matrix.
    pub fn zeros(n_rows: usize, n_cols: usize) -> Self {
        Self {
            n_rows,
            n_cols,
            row_ptr: vec![0; n_rows + 1],
            cols: Vec::new(),
            vals: Vec::new(),
        }
    }

    /// Builds from `(row, col, value)` triplets; duplicates are summed, zeros dropped.
    ///
    /// # Complexity
    /// O(n_rows + k log k) for k triplets (counting sort by row, then a sort within each
    /// row that is not already in column order).
    ///
    /// # Panics
    /// If a row or column index is out of range, or `n_cols` exceeds `u32::MAX`.
    pub fn from_triplets(n_rows: usize, n_cols: usize, triplets: Vec<(usize, usize, u64)>) -> Self {
        assert!(
            n_cols <= u32::MAX as usize,
            "Csr supports at most 2^32 columns"
        );
        let mut counts = vec![0usize; n_rows + 1];
        for &(r, c, _) in &triplets {
            assert!(
                r < n_rows && c < n_cols,
                "triplet ({r}, {c}) outside {n_rows} x {n_cols}"
            );
            counts[r + 1] += 1;
        }
        for i in 0..n_rows {
            counts[i + 1] += counts[i];
        }
        let mut next = counts.clone();
        let mut entries = vec![(0u32, 0u64); triplets.len()];
        for (r, c, v) in triplets {
            entries[next[r]] = (c as u32, v);
            next[r] += 1;
        }
        let mut row_ptr = Vec::with_capacity(n_rows + 1);
        let mut cols = Vec::with_capacity(entries.len());
        let mut vals = Vec::with_capacity(entries.len());
        row_ptr.push(0);
        for r in 0..n_rows {
            let row = &mut entries[counts[r]..counts[r + 1]];
            if !row.windows(2).all(|w| w[0].0 <= w[1].0) {
                row.sort_unstable_by_key(|e| e.0);
            }
            let mut k = 0;
            while k < row.len() {
                let c = row[k].0;
                let mut v = 0u64;
                while k < row.len() && row[k].0 == c {
                    v += row[k].1;
                    k += 1;
                }
                if v != 0 {
                    cols.push(c);
                    vals.push(v);
                }
            }
            row_ptr.push(cols.len());
        }
        Self::from_parts(n_rows, n_cols, row_ptr, cols, vals)
    }

    /// Wraps arrays that already are in CSR form (crate-internal builders that produce
    /// rows in order). The invariants are checked in debug builds only.
    pub(crate) fn from_parts(
        n_rows: usize,
        n_cols: usize,
        row_ptr: Vec<usize>,
        cols: Vec<u32>,
        vals: Vec<u64>,
    ) -> Self {
        debug_assert_eq!(row_ptr.len(), n_rows + 1);
        debug_assert_eq!(row_ptr.last().copied(), Some(cols.len()));
        debug_assert_eq!(cols.len(), vals.len());
        debug_assert!((0..n_rows).all(|r| {
            let row = &cols[row_ptr[r]..row_ptr[r + 1]];
            row.windows(2).all(|w| w[0] < w[1]) && row.iter().all(|&c| (c as usize) < n_cols)
        }));
        Self {
            n_rows,
            n_cols,
            row_ptr,
            cols,
            vals,
        }
    }

    /// Builds from a dense row-major table, dropping zeros.
    ///
    /// # Panics
    /// If `dense.len() != n_rows * n_cols`.
    pub fn from_dense(n_rows: usize, n_cols: usize, dense: &[u64]) -> Self {
        assert_eq!(
            dense.len(),
            n_rows * n_cols,
            "dense table has the wrong length"
        );
        let trip = dense
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0)
            .map(|(k, &v)| (k / n_cols, k % n_cols, v))
            .collect();
        Self::from_triplets(n_rows, n_cols, trip)
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Number of stored nonzeros.
    pub fn nnz(&self) -> usize {
        self.vals.len()
    }

    /// Row pointer array (length `n_rows + 1`).
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }

    /// Column indices, row after row.
    pub fn col_indices(&self) -> &[u32] {
        &self.cols
    }

    /// Values, aligned with [`Csr::col_indices`].
    pub fn values(&self) -> &[u64] {
        &self.vals
    }

    /// The nonzeros of row `r` as `(col, value)`.
    ///
    /// # Panics
    /// If `r >= n_rows`.
    pub fn row(&self, r: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (a, b) = (self.row_ptr[r], self.row_ptr[r + 1]);
        self.cols[a..b]
            .iter()
            .zip(&self.vals[a..b])
            .map(|(&c, &v)| (c as usize, v))
    }

    /// Entry (r, c), zero when not stored. O(log row length).
    ///
    /// # Panics
    /// If `r >= n_rows`.
    pub fn get(&self, r: usize, c: usize) -> u64 {
        let (a, b) = (self.row_ptr[r], self.row_ptr[r + 1]);
        match self.cols[a..b].binary_search(&(c as u32)) {
            Ok(k) => self.vals[a + k],
            Err(_) => 0,
        }
    }

    /// All nonzeros as `(row, col, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize, u64)> + '_ {
        (0..self.n_rows).flat_map(move |r| self.row(r).map(move |(c, v)| (r, c, v)))
    }

    /// Sum of all entries.
    pub fn sum(&self) -> u64 {
        self.vals.iter().sum()
    }

    /// The transpose, in O(n_rows + n_cols + nnz).
    pub fn transpose(&self) -> Self {
        let mut counts = vec![0usize; self.n_cols + 1];
        for &c in &self.cols {
            counts[c as usize + 1] += 1;
        }
        for i in 0..self.n_cols {
            counts[i + 1] += counts[i];
        }
        let mut next = counts.clone();
        let mut cols = vec![0u32; self.nnz()];
        let mut vals = vec![0u64; self.nnz()];
        for r in 0..self.n_rows {
            for k in self.row_ptr[r]..self.row_ptr[r + 1] {
                let c = self.cols[k] as usize;
                cols[next[c]] = r as u32;
                vals[next[c]] = self.vals[k];
                next[c] += 1;
            }
        }
        Self {
            n_rows: self.n_cols,
            n_cols: self.n_rows,
            row_ptr: counts,
            cols,
            vals,
        }
    }

    /// Dense row-major copy (for small matrices, plotting and tests).
    pub fn to_dense(&self) -> Vec<u64> {
        let mut d = vec![0u64; self.n_rows * self.n_cols];
        for (r, c, v) in self.iter() {
            d[r * self.n_cols + c] = v;
        }
        d
    }
}
