//! Dense linear assignment: Jonker–Volgenant on a full `n × n` gain table.
//!
//! Both solvers work on the same integer problem. Gains are first *quantised*
//! ([`Quantized`]): if they are integers of magnitude at most `2^B` they are used as they
//! are (the result is then exactly optimal); otherwise they are multiplied by `2^k`,
//! chosen so that the largest magnitude lands in `(2^(B-1), 2^B]`, and rounded to the
//! nearest integer. `B = min(40, 51 − ⌈log₂ n⌉)`, which keeps every sum of `2n`
//! quantised entries below `2^53`, so the `f64` arithmetic of the `lapjv` crate (absolute
//! epsilon `f64::EPSILON`) is exact, and the `i64` arithmetic of [`DenseSolver::Jv`] has
//! a wide margin.

use crate::error::{Error, Result};
use crate::lap::Perm;

/// Which exact dense solver [`dense_max_with`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DenseSolver {
    /// copr's own Jonker–Volgenant (column reduction, augmenting row reduction,
    /// shortest augmenting paths) on row-major `i64` (or `i32` when the quantised
    /// values fit) costs. The default: the faster of the two on this machine.
    #[default]
    Jv,
    /// The `lapjv` crate (a Rust port of the C LAPJV) on an `f64` matrix holding the same
    /// integer-valued quantised costs.
    LapjvCrate,
}

/// Gains turned into integers for the solvers: `q[i*n + j] = round(gain[i*n + j] · 2^shift)`.
#[derive(Debug, Clone)]
struct Quantized {
    /// The integer gains, row-major.
    q: Vec<i64>,
    /// Largest |q|.
    max_abs: i64,
}

/// Magnitude bound `2^B` of the quantised gains for size `n`.
fn magnitude_bits(n: usize) -> i32 {
    let log_n = n.max(1).next_power_of_two().trailing_zeros() as i32;
    40.min(51 - log_n)
}

/// Checks the input and quantises it (see the module docs).
fn quantize(n: usize, gain: &[f64]) -> Result<Quantized> {
    let expected = n
        .checked_mul(n)
        .ok_or_else(|| Error::Assignment(format!("n = {n} is too large: n·n overflows usize")))?;
    if gain.len() != expected {
        return Err(Error::Assignment(format!(
            "gain table has length {} but n = {n} needs n·n = {expected}",
            gain.len()
        )));
    }
    let mut max_abs = 0.0f64;
    let mut all_int = true;
    for (k, &g) in gain.iter().enumerate() {
        if !g.is_finite() {
            return Err(Error::Assignment(format!(
                "gain[{}][{}] = {g} is not finite",
                k / n,
                k % n
            )));
        }
        max_abs = max_abs.max(g.abs());
        all_int &= g.fract() == 0.0;
    }
    let bits = magnitude_bits(n);
    let limit = (2.0f64).powi(bits);
    let scale = if max_abs == 0.0 || (all_int && max_abs <= limit) {
        1.0
    } else {
        // 2^shift · max_abs ∈ (limit/2, limit].
        let e = max_abs.log2().ceil() as i32;
        let mut s = (2.0f64).powi(bits - e);
        while max_abs * s > limit {
            s *= 0.5;
        }
        s
    };
    let q: Vec<i64> = gain.iter().map(|&g| (g * scale).round() as i64).collect();
    let max_abs = q.iter().map(|x| x.abs()).max().unwrap_or(0);
    Ok(Quantized { q, max_abs })
}

/// Exact maximum-weight perfect assignment of a dense `n × n` gain table.
///
/// Returns σ maximising `Σ_i gain[i*n + σ(i)]`; `σ(i)` is the column given to row `i`.
/// Equivalent to [`dense_max_with`] with [`DenseSolver::Jv`].
///
/// Gains may be negative. Integer gains with `|g| ≤ 2^B`, `B = min(40, 51 − ⌈log₂ n⌉)`
/// (for example all gains of copr's volume-based δ) are solved exactly. Other gains are
/// scaled by a power of two `2^k` so that the largest magnitude is just below `2^B`,
/// and rounded: the returned σ is then optimal for the rounded table, so its value is
/// within `n · 2^-k ≤ n · 2 · max|g| · 2^-B` of the true optimum.
///
/// # Complexity
/// O(n²) memory for the quantised copy; O(n³) time in the worst case, typically far less
/// (uniform random integer gains, n = 4096: see `benches/RESULTS.md`).
///
/// # Errors
/// [`Error::Assignment`] if `gain.len() != n * n` or a gain is NaN or infinite.
///
/// # Example
/// ```
/// use copr::lap::dense_max;
/// // Row 0 prefers column 1, row 1 prefers column 0.
/// let gain = [1.0, 5.0, 4.0, 2.0];
/// let sigma = dense_max(2, &gain).unwrap();
/// assert_eq!(sigma.forward(), &[1, 0]);
/// assert!(dense_max(2, &gain[..3]).is_err());
/// ```
pub fn dense_max(n: usize, gain: &[f64]) -> Result<Perm> {
    dense_max_with(n, gain, DenseSolver::default())
}

/// [`dense_max`] with a chosen solver.
///
/// Both solvers return an optimal σ of the same quantised problem (the permutations may
/// differ when there are ties).
///
/// # Complexity
/// As [`dense_max`]; [`DenseSolver::LapjvCrate`] additionally builds an `n × n` `f64`
/// copy.
///
/// # Errors
/// [`Error::Assignment`] if `gain.len() != n * n`, a gain is NaN or infinite, or (never
/// expected) the `lapjv` crate reports a failure.
///
/// # Example
/// ```
/// use copr::lap::{dense_max_with, DenseSolver};
/// let gain = [3.0, 1.0, 0.0, 0.0, 2.0, 7.0, 5.0, 0.0, 1.0];
/// let a = dense_max_with(3, &gain, DenseSolver::Jv).unwrap();
/// let b = dense_max_with(3, &gain, DenseSolver::LapjvCrate).unwrap();
/// let value = |s: &copr::lap::Perm| (0..3).map(|i| gain[i * 3 + s.apply(i)]).sum::<f64>();
/// assert_eq!(a.forward(), &[1, 2, 0]); // 1 + 7 + 5
/// assert_eq!(value(&a), 13.0);
/// assert_eq!(value(&b), 13.0);
/// ```
pub fn dense_max_with(n: usize, gain: &[f64], solver: DenseSolver) -> Result<Perm> {
    let qz = quantize(n, gain)?;
    if n == 0 {
        return Ok(Perm::identity(0));
    }
    let row_to_col = match solver {
        DenseSolver::Jv => {
            // Minimise the negated gains; store as i32 when they fit (half the memory
            // traffic), the arithmetic is i64 either way.
            if qz.max_abs <= i64::from(i32::MAX) / 4 {
                let c: Vec<i32> = qz.q.iter().map(|&x| -(x as i32)).collect();
                jv_min(n, &c)
            } else {
                let c: Vec<i64> = qz.q.iter().map(|&x| -x).collect();
                jv_min(n, &c)
            }
        }
        DenseSolver::LapjvCrate => {
            let c: Vec<f64> = qz.q.iter().map(|&x| -(x as f64)).collect();
            let m = lapjv::Matrix::from_shape_vec((n, n), c)
                .map_err(|e| Error::Assignment(format!("lapjv matrix: {e}")))?;
            let (row_to_col, _) =
                lapjv::lapjv(&m).map_err(|e| Error::Assignment(format!("lapjv: {e}")))?;
            row_to_col
        }
    };
    Perm::from_forward(row_to_col)
}

/// A stored cost entry; the solver computes in `i64`.
trait Cost: Copy + Send + Sync {
    fn get(self) -> i64;
}

impl Cost for i32 {
    #[inline(always)]
    fn get(self) -> i64 {
        i64::from(self)
    }
}

impl Cost for i64 {
    #[inline(always)]
    fn get(self) -> i64 {
        self
    }
}

const FREE: usize = usize::MAX;

/// Jonker–Volgenant minimum-cost perfect assignment; returns row → column.
///
/// Invariant from the end of the column reduction on: every assigned row `i` has
/// `c[i][x[i]] − v[x[i]] = min_j c[i][j] − v[j]` (its column is a cheapest one under the
/// column prices `v`), which is what makes the shortest-path phase exact.
fn jv_min<T: Cost>(n: usize, c: &[T]) -> Vec<usize> {
    let mut x = vec![FREE; n]; // row -> col
    let mut y = vec![FREE; n]; // col -> row
    let mut v = vec![0i64; n];

    // 1. Column reduction, sweeping rows so the matrix is read in storage order.
    let mut col_min = vec![i64::MAX; n];
    let mut arg_min = vec![0usize; n];
    for i in 0..n {
        let row = &c[i * n..(i + 1) * n];
        for ((cm, am), &cij) in col_min.iter_mut().zip(arg_min.iter_mut()).zip(row) {
            let cij = cij.get();
            if cij < *cm {
                *cm = cij;
                *am = i;
            }
        }
    }
    let mut times_chosen = vec![0u32; n];
    for j in (0..n).rev() {
        v[j] = col_min[j];
        let i = arg_min[j];
        times_chosen[i] += 1;
        if x[i] == FREE {
            x[i] = j;
            y[j] = i;
        }
    }
    // Reduction transfer: a row that was the minimum of exactly one column can give up
    // its slack (the gap to its second-best column) to that column's price.
    let mut free_rows = Vec::new();
    for i in 0..n {
        if x[i] == FREE {
            free_rows.push(i);
        } else if times_chosen[i] == 1 {
            let j1 = x[i];
            let row = &c[i * n..(i + 1) * n];
            let mut mu = i64::MAX;
            for (j, (&cij, &vj)) in row.iter().zip(&v).enumerate() {
                let r = cij.get() - vj;
                if r < mu && j != j1 {
                    mu = r;
                }
            }
            if mu != i64::MAX {
                // Reduced cost of (i, j1) is 0 here; lower v[j1] by the gap.
                v[j1] -= mu;
            }
        }
    }

    // 2. Augmenting row reduction, twice.
    for _ in 0..2 {
        if free_rows.is_empty() {
            break;
        }
        free_rows = augmenting_row_reduction(n, c, &mut x, &mut y, &mut v, free_rows);
    }

    // 3. Shortest augmenting paths for the rest.
    if !free_rows.is_empty() {
        let mut sp = ShortestPath::new(n);
        for &s in &free_rows {
            sp.augment(n, c, &mut x, &mut y, &mut v, s);
        }
    }
    x
}

/// Smallest and second smallest `c[i][j] − v[j]` of a row, with their columns.
#[inline]
fn two_smallest<T: Cost>(row: &[T], v: &[i64]) -> (i64, usize, i64, usize) {
    let (mut u1, mut j1, mut u2, mut j2) = (i64::MAX, 0usize, i64::MAX, usize::MAX);
    for (j, (&cij, &vj)) in row.iter().zip(v).enumerate() {
        let h = cij.get() - vj;
        if h < u2 {
            if h < u1 {
                u2 = u1;
                j2 = j1;
                u1 = h;
                j1 = j;
            } else {
                u2 = h;
                j2 = j;
            }
        }
    }
    (u1, j1, u2, j2)
}

/// One pass of augmenting row reduction over `free`; returns the rows still free.
fn augmenting_row_reduction<T: Cost>(
    n: usize,
    c: &[T],
    x: &mut [usize],
    y: &mut [usize],
    v: &mut [i64],
    mut free: Vec<usize>,
) -> Vec<usize> {
    let count = free.len();
    let mut k = 0; // next position of `free` to process
    let mut still_free = Vec::new();
    let mut steps = 0usize;
    while k < count {
        let i = free[k];
        k += 1;
        steps += 1;
        let row = &c[i * n..(i + 1) * n];
        let (u1, mut j1, u2, j2) = two_smallest(row, v);
        let mut i0 = y[j1];
        let lowers = u1 < u2 && j2 != usize::MAX;
        // Guard against long chains (the JV bound): after ~n steps per processed row,
        // stop chaining and leave displaced rows for the shortest-path phase.
        let may_chain = steps < k * n;
        if may_chain {
            if lowers {
                // Make j1 as expensive as the runner-up for everybody.
                v[j1] -= u2 - u1;
            } else if i0 != FREE && j2 != usize::MAX {
                // Tie: take the runner-up, which may be free.
                j1 = j2;
                i0 = y[j1];
            }
        }
        if i0 != FREE {
            x[i0] = FREE;
            if may_chain && lowers {
                // Continue the chain with the displaced row right away.
                k -= 1;
                free[k] = i0;
            } else {
                still_free.push(i0);
            }
        }
        x[i] = j1;
        y[j1] = i;
    }
    still_free
}

/// Work arrays for the Dijkstra-like shortest augmenting path search.
struct ShortestPath {
    /// Column order: `[0, lo)` done, `[lo, hi)` at the current minimum, `[hi, n)` to do.
    cols: Vec<usize>,
    /// Tentative distance of each column (indexed by column).
    d: Vec<i64>,
    /// Row from which each column was reached.
    pred: Vec<usize>,
}

impl ShortestPath {
    fn new(n: usize) -> Self {
        Self {
            cols: (0..n).collect(),
            d: vec![0; n],
            pred: vec![0; n],
        }
    }

    /// Augments along a shortest alternating path from the free row `s` and updates the
    /// prices of the columns that were settled before the path's end.
    fn augment<T: Cost>(
        &mut self,
        n: usize,
        c: &[T],
        x: &mut [usize],
        y: &mut [usize],
        v: &mut [i64],
        s: usize,
    ) {
        let Self { cols, d, pred } = self;
        let row = &c[s * n..(s + 1) * n];
        for j in 0..n {
            cols[j] = j;
            d[j] = row[j].get() - v[j];
            pred[j] = s;
        }
        let (mut lo, mut hi) = (0usize, 0usize);
        let mut ready = 0usize;
        let mut mind = 0i64;
        let sink = 'search: loop {
            if lo == hi {
                // Collect all to-do columns at the new minimum distance into [lo, hi).
                ready = lo;
                mind = i64::MAX;
                for k in lo..n {
                    let j = cols[k];
                    let dj = d[j];
                    if dj <= mind {
                        if dj < mind {
                            hi = lo;
                            mind = dj;
                        }
                        cols.swap(k, hi);
                        hi += 1;
                    }
                }
                for &j in &cols[lo..hi] {
                    if y[j] == FREE {
                        break 'search j;
                    }
                }
            }
            // Scan one column at the minimum: relax through its row.
            let j = cols[lo];
            lo += 1;
            let i = y[j];
            let ci = &c[i * n..(i + 1) * n];
            let h = ci[j].get() - v[j] - mind;
            let mut k = hi;
            while k < n {
                let j2 = cols[k];
                let r = ci[j2].get() - v[j2] - h;
                if r < d[j2] {
                    d[j2] = r;
                    pred[j2] = i;
                    if r == mind {
                        if y[j2] == FREE {
                            break 'search j2;
                        }
                        cols.swap(k, hi);
                        hi += 1;
                    }
                }
                k += 1;
            }
        };
        // Price update for the settled columns.
        for &j in &cols[..ready] {
            v[j] += d[j] - mind;
        }
        // Flip the path.
        let mut j = sink;
        loop {
            let i = pred[j];
            y[j] = i;
            let prev = x[i];
            x[i] = j;
            if i == s {
                break;
            }
            j = prev;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lap::brute_force_max;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    fn value(n: usize, g: &[f64], p: &Perm) -> f64 {
        (0..n).map(|i| g[i * n + p.apply(i)]).sum()
    }

    #[test]
    fn matches_brute_force_small() {
        let mut seed = 7u64;
        for n in 0..=7 {
            for range in [3u64, 10, 1000] {
                for _ in 0..20 {
                    let g: Vec<f64> = (0..n * n)
                        .map(|_| lcg(&mut seed) % range)
                        .map(|x| x as f64 - (range / 2) as f64)
                        .collect();
                    let best = brute_force_max(n, &g).unwrap().1;
                    for solver in [DenseSolver::Jv, DenseSolver::LapjvCrate] {
                        let p = dense_max_with(n, &g, solver).unwrap();
                        assert_eq!(value(n, &g, &p), best, "n={n} {solver:?} {g:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn both_solvers_agree_beyond_brute_force_sizes() {
        let mut seed = 3u64;
        for n in [30usize, 100, 250] {
            for range in [2u64, 50, 1 << 20] {
                let g: Vec<f64> = (0..n * n)
                    .map(|_| (lcg(&mut seed) % range) as f64 - (range / 3) as f64)
                    .collect();
                let a = dense_max_with(n, &g, DenseSolver::Jv).unwrap();
                let b = dense_max_with(n, &g, DenseSolver::LapjvCrate).unwrap();
                assert_eq!(value(n, &g, &a), value(n, &g, &b), "n={n} range={range}");
            }
        }
    }

    #[test]
    fn fractional_and_large_gains_are_quantised() {
        // Fractions: exact optimum is found as long as gaps exceed the resolution.
        let g = [0.25, 0.5, 0.75, 0.125];
        let p = dense_max(2, &g).unwrap();
        assert_eq!(p.forward(), &[1, 0]);
        let q = quantize(2, &g).unwrap();
        assert!(q.max_abs > 1 << 39 && q.max_abs <= 1 << 40, "{}", q.max_abs);
        assert_eq!(q.q[3], 1 << 37); // 0.125 · 2^40, exactly
                                     // Huge integers are scaled down but keep their order.
        let g = [1e18, 0.0, 0.0, 3e17];
        assert_eq!(dense_max(2, &g).unwrap().forward(), &[0, 1]);
        assert!(quantize(2, &g).unwrap().max_abs <= 1 << 40);
        // Small integers are kept as they are.
        let q = quantize(2, &[1.0, -2.0, 3.0, 4.0]).unwrap();
        assert_eq!(q.q, vec![1, -2, 3, 4]);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(dense_max(2, &[1.0, 2.0, 3.0]).is_err());
        assert!(dense_max(2, &[1.0, f64::NAN, 3.0, 4.0]).is_err());
        assert!(dense_max(2, &[1.0, f64::INFINITY, 3.0, 4.0]).is_err());
        assert!(dense_max(0, &[]).unwrap().is_empty());
    }

    #[test]
    fn magnitude_bits_keep_sums_exact() {
        for n in [1usize, 2, 3, 1000, 4096, 1 << 20] {
            let b = magnitude_bits(n);
            assert!(b <= 40);
            // 2n entries of magnitude 2^b stay below 2^53.
            assert!((2.0 * n as f64) * (2.0f64).powi(b) < (2.0f64).powi(53));
        }
    }
}
