//! Sparse maximum-weight assignment on non-negative weights.
//!
//! Because every weight is `≥ 0`, the best permutation of a square matrix whose entries
//! outside the stored pattern are zero is a maximum-weight (not necessarily perfect)
//! matching on the stored entries, completed with zero-weight pairs among the rows and
//! columns it leaves out. [`sparse_max`] finds that matching exactly with successive
//! shortest augmenting paths (Dijkstra with potentials) on the bipartite graph of the
//! nonzeros, where every row may also take a private zero-weight *dummy* column.
//!
//! ## Duals
//! Row prices `u_i`, column prices `v_j`, reduced weights `r_ij = u_i + v_j − w_ij ≥ 0`,
//! dummy edges `r_i = u_i ≥ 0`, `v_j ≥ 0`, `v_j = 0` for free columns, matched pairs
//! tight. These are the complementary-slackness conditions of the LP
//! `max Σ w x` s.t. every row matched once (to a column or its dummy), every column at
//! most once; when every row is matched they certify optimality.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::{Error, Result};
use crate::lap::Perm;
use crate::sparse::Csr;

/// Largest weight [`sparse_max`] accepts: prices, distances and reduced weights all stay
/// within `[−2^60, 3·2^60]`, inside `i64`.
const MAX_WEIGHT: u64 = 1 << 60;

const FREE: u32 = u32::MAX;
const DUMMY: u32 = u32::MAX - 1;
const INF: i64 = i64::MAX;

/// Exact maximum of `Σ_i W[i][σ(i)]` over all permutations σ of a square sparse matrix
/// of non-negative weights (entries outside the pattern are 0).
///
/// Returns σ with `σ(i)` the column given to row `i`. The `n × n` matrix is never
/// formed: the solver works on the stored nonzeros plus one implicit zero-weight dummy
/// column per row, then pairs the rows left on their dummies with the unused columns.
///
/// In copr the planner calls `sparse_max(&volumes.transpose())`: row `t` of `Vᵀ` holds
/// what target `t` receives, and σ(t) is the process that takes target label `t`.
///
/// # Complexity
/// O(n + nnz) memory. Time: a greedy start on the row maxima, then one Dijkstra search
/// per row left free, each touching only the alternating tree it grows before reaching a
/// free column or a dummy: O(n · nnz · log nnz) in the worst case, near-linear on the
/// block-cyclic relabeling instances (p = 102 400 ranks, 1.6 M nonzeros: see
/// `benches/RESULTS.md`).
///
/// # Errors
/// [`Error::Assignment`] if `w` is not square or a weight exceeds `2^60`.
///
/// # Example
/// ```
/// use copr::lap::{assignment_value, sparse_max};
/// use copr::sparse::Csr;
/// // Row 0 likes column 0 (5) or 1 (4); row 1 only likes column 0 (3).
/// let w = Csr::from_triplets(3, 3, vec![(0, 0, 5), (0, 1, 4), (1, 0, 3)]);
/// let sigma = sparse_max(&w).unwrap();
/// assert_eq!(assignment_value(&w, &sigma), 7); // 4 + 3 beats 5 + 0
/// assert_eq!(sigma.apply(0), 1);
/// assert_eq!(sigma.apply(1), 0);
/// assert_eq!(sigma.apply(2), 2);
/// ```
pub fn sparse_max(w: &Csr) -> Result<Perm> {
    let n = w.n_rows();
    if w.n_cols() != n {
        return Err(Error::Assignment(format!(
            "sparse_max needs a square matrix, got {} x {}",
            n,
            w.n_cols()
        )));
    }
    if n >= DUMMY as usize {
        return Err(Error::Assignment(format!(
            "sparse_max supports n < {DUMMY}, got n = {n}"
        )));
    }
    if let Some((k, &big)) = w.values().iter().enumerate().find(|(_, &x)| x > MAX_WEIGHT) {
        let row = w.row_ptr().partition_point(|&p| p <= k) - 1;
        return Err(Error::Assignment(format!(
            "weight W[{row}][{}] = {big} exceeds the supported maximum 2^60",
            w.col_indices()[k]
        )));
    }
    let mut s = Solver::new(w);
    s.warm_start();
    for r in 0..n {
        if s.match_row[r] == FREE {
            s.augment_from(r);
        }
    }
    Ok(s.into_perm())
}

/// State of the successive-shortest-path solver.
struct Solver<'a> {
    n: usize,
    row_ptr: &'a [usize],
    cols: &'a [u32],
    vals: &'a [u64],
    /// Row → column, [`DUMMY`] or [`FREE`].
    match_row: Vec<u32>,
    /// Column → row or [`FREE`].
    match_col: Vec<u32>,
    u: Vec<i64>,
    v: Vec<i64>,
    /// Tentative distance of each column in the current search ([`INF`] if untouched).
    dist: Vec<i64>,
    /// Row through which each column was reached.
    pred: Vec<u32>,
    touched: Vec<u32>,
    settled: Vec<u32>,
    heap: BinaryHeap<Reverse<(i64, u32)>>,
}

/// Where a shortest augmenting path ends.
#[derive(Clone, Copy)]
enum Sink {
    /// A free real column.
    Column(u32),
    /// The (always free) dummy column of a row.
    Dummy(u32),
}

impl<'a> Solver<'a> {
    fn new(w: &'a Csr) -> Self {
        let n = w.n_rows();
        Self {
            n,
            row_ptr: w.row_ptr(),
            cols: w.col_indices(),
            vals: w.values(),
            match_row: vec![FREE; n],
            match_col: vec![FREE; n],
            u: vec![0; n],
            v: vec![0; n],
            dist: vec![INF; n],
            pred: vec![0; n],
            touched: Vec::new(),
            settled: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }

    #[inline]
    fn row(&self, i: usize) -> (&'a [u32], &'a [u64]) {
        let (a, b) = (self.row_ptr[i], self.row_ptr[i + 1]);
        (&self.cols[a..b], &self.vals[a..b])
    }

    /// Prices `u_i = max(0, max_j w_ij)`, `v = 0` (feasible), and a greedy matching on
    /// the tight pairs: each row takes a free column of maximal weight, or its dummy
    /// when it has no positive weight.
    fn warm_start(&mut self) {
        for i in 0..self.n {
            let (cols, vals) = self.row(i);
            let best = vals.iter().copied().max().unwrap_or(0);
            self.u[i] = best as i64;
            if best == 0 {
                self.match_row[i] = DUMMY;
                continue;
            }
            for (&j, &wij) in cols.iter().zip(vals) {
                if wij == best && self.match_col[j as usize] == FREE {
                    self.match_col[j as usize] = i as u32;
                    self.match_row[i] = j;
                    break;
                }
            }
        }
    }

    /// Relaxes the edges of row `i`, reached at distance `di`; returns an improved sink.
    #[inline]
    fn relax_row(&mut self, i: usize, di: i64, best: &mut (i64, Sink)) {
        let (cols, vals) = self.row(i);
        let base = di + self.u[i];
        let own = self.match_row[i];
        for (&j, &wij) in cols.iter().zip(vals) {
            if j == own {
                continue;
            }
            let ju = j as usize;
            let nd = base + self.v[ju] - wij as i64;
            let dj = self.dist[ju];
            if nd < dj {
                if dj == INF {
                    self.touched.push(j);
                }
                self.dist[ju] = nd;
                self.pred[ju] = i as u32;
                if self.match_col[ju] == FREE {
                    if nd < best.0 {
                        *best = (nd, Sink::Column(j));
                    }
                } else {
                    self.heap.push(Reverse((nd, j)));
                }
            }
        }
    }

    /// One Dijkstra search from the free row `s`, then the price update and the flip of
    /// the path. Afterwards `s` is matched (to a column or its dummy).
    fn augment_from(&mut self, s: usize) {
        // Going to its own dummy costs u_s; anything better must beat that.
        let mut best = (self.u[s], Sink::Dummy(s as u32));
        self.relax_row(s, 0, &mut best);
        while let Some(Reverse((d, j))) = self.heap.pop() {
            let ju = j as usize;
            if d > self.dist[ju] {
                continue; // stale entry
            }
            if d >= best.0 {
                break;
            }
            self.settled.push(j);
            let i = self.match_col[ju] as usize;
            // Row i reached at distance d (its matched pair is tight); its dummy is free.
            let via_dummy = d + self.u[i];
            if via_dummy < best.0 {
                best = (via_dummy, Sink::Dummy(i as u32));
            }
            self.relax_row(i, d, &mut best);
        }
        self.heap.clear();

        // Prices: settled columns and their rows move by L − distance; s by L.
        let l = best.0;
        for &j in &self.settled {
            let ju = j as usize;
            let delta = l - self.dist[ju];
            self.v[ju] += delta;
            self.u[self.match_col[ju] as usize] -= delta;
        }
        self.u[s] -= l;
        self.settled.clear();

        // Flip the alternating path ending at the sink.
        let mut j = match best.1 {
            Sink::Column(j) => j,
            Sink::Dummy(k) => {
                let k = k as usize;
                let prev = self.match_row[k];
                self.match_row[k] = DUMMY;
                if k == s {
                    FREE
                } else {
                    prev
                }
            }
        };
        while j != FREE {
            let ju = j as usize;
            let i = self.pred[ju] as usize;
            let prev = self.match_row[i];
            self.match_row[i] = j;
            self.match_col[ju] = i as u32;
            j = if i == s { FREE } else { prev };
        }

        for &j in &self.touched {
            self.dist[j as usize] = INF;
        }
        self.touched.clear();
    }

    /// Completes the matching with the rows on dummies and the unused columns.
    fn into_perm(self) -> Perm {
        let mut unused = (0..self.n).filter(|&j| self.match_col[j] == FREE);
        let fwd: Vec<usize> = self
            .match_row
            .iter()
            .map(|&j| {
                if j == DUMMY || j == FREE {
                    unused
                        .next()
                        .expect("as many unused columns as rows on dummies")
                } else {
                    j as usize
                }
            })
            .collect();
        Perm::from_forward(fwd).expect("a matching completed by unused columns is a bijection")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lap::assignment_value;
    use crate::lap::brute_force_max;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    fn random_sparse(n: usize, density_pct: u64, range: u64, seed: &mut u64) -> Csr {
        let mut t = Vec::new();
        for i in 0..n {
            for j in 0..n {
                if lcg(seed) % 100 < density_pct {
                    t.push((i, j, lcg(seed) % range));
                }
            }
        }
        Csr::from_triplets(n, n, t)
    }

    #[test]
    fn matches_brute_force_small() {
        let mut seed = 11u64;
        for n in 0..=7 {
            for density in [10u64, 30, 60, 100] {
                for range in [2u64, 5, 100] {
                    for _ in 0..10 {
                        let w = random_sparse(n, density, range, &mut seed);
                        let p = sparse_max(&w).unwrap();
                        let d: Vec<f64> = w.to_dense().iter().map(|&x| x as f64).collect();
                        assert_eq!(
                            assignment_value(&w, &p) as f64,
                            brute_force_max(n, &d).unwrap().1,
                            "{:?}",
                            w.to_dense()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn empty_and_zero_rows() {
        assert!(sparse_max(&Csr::zeros(0, 0)).unwrap().is_empty());
        assert!(sparse_max(&Csr::zeros(4, 4)).unwrap().is_identity());
        let w = Csr::from_triplets(3, 3, vec![(2, 0, 9)]);
        let p = sparse_max(&w).unwrap();
        assert_eq!(p.apply(2), 0);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(sparse_max(&Csr::zeros(2, 3)).is_err());
        let w = Csr::from_triplets(2, 2, vec![(1, 0, MAX_WEIGHT + 1)]);
        let e = sparse_max(&w).unwrap_err().to_string();
        assert!(e.contains("W[1][0]"), "{e}");
        let w = Csr::from_triplets(2, 2, vec![(1, 0, MAX_WEIGHT)]);
        assert_eq!(assignment_value(&w, &sparse_max(&w).unwrap()), MAX_WEIGHT);
    }
}
