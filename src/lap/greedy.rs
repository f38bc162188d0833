//! COSTA's greedy pairwise-swap relabeling heuristic, kept as a baseline.

use crate::lap::Perm;
use crate::sparse::Csr;

/// The greedy swap heuristic shipped by the COSTA library (a baseline, not optimal).
///
/// `v` is the volume matrix, `V[s][t]` = what source rank `s` sends target rank `t`.
/// Every unordered pair `u ≠ w` with `V[u][w]` or `V[w][u]` nonzero gets the weight
/// `V[u][w] + V[w][u] − V[u][u] − V[w][w]` (the local volume won by swapping the labels
/// of `u` and `w`). Pairs are taken in order of decreasing weight (ties by `(u, w)`),
/// while the weight is positive and neither rank is used yet; each taken pair swaps
/// `σ(u) = w`, `σ(w) = u`. All other ranks keep their label.
///
/// Returns σ over target labels: `σ(t)` is the process that takes target label `t`,
/// so the relabeled local volume is `Σ_t V[σ(t)][t]` (as for [`crate::lap::sparse_max`]
/// on `Vᵀ`, which is never worse).
///
/// # Complexity
/// O(n + nnz log nnz).
///
/// # Panics
/// If `v` is not square.
///
/// # Example
/// ```
/// use copr::lap::{assignment_value, greedy_swaps, sparse_max};
/// use copr::sparse::Csr;
/// // A 3-cycle of traffic: swaps can fix only one pair, the optimum fixes all three.
/// let v = Csr::from_triplets(3, 3, vec![(0, 1, 10), (1, 2, 10), (2, 0, 10)]);
/// let g = greedy_swaps(&v);
/// let vt = v.transpose();
/// assert_eq!(assignment_value(&vt, &g), 10);
/// assert_eq!(assignment_value(&vt, &sparse_max(&vt).unwrap()), 30);
/// ```
pub fn greedy_swaps(v: &Csr) -> Perm {
    let n = v.n_rows();
    assert_eq!(v.n_cols(), n, "greedy_swaps needs a square volume matrix");
    let diag: Vec<u64> = (0..n).map(|i| v.get(i, i)).collect();
    let mut pairs: Vec<(i128, usize, usize)> = Vec::new();
    for (a, b, vab) in v.iter() {
        if a == b {
            continue;
        }
        let vba = v.get(b, a);
        // Visit each unordered pair once: from its smaller end, or from the only end.
        if a > b && vba != 0 {
            continue;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let weight = i128::from(vab) + i128::from(vba) - i128::from(diag[a]) - i128::from(diag[b]);
        if weight > 0 {
            pairs.push((weight, lo, hi));
        }
    }
    pairs.sort_unstable_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let mut fwd: Vec<usize> = (0..n).collect();
    let mut used = vec![false; n];
    for (_, a, b) in pairs {
        if !used[a] && !used[b] {
            used[a] = true;
            used[b] = true;
            fwd.swap(a, b);
        }
    }
    Perm::from_forward(fwd).expect("disjoint transpositions form a permutation")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_the_best_pair_first() {
        // Pair (0,1) gains 7+6-0-0 = 13, pair (1,2) gains 9+0-0-0 = 9: (0,1) wins and
        // blocks (1,2).
        let v = Csr::from_triplets(3, 3, vec![(0, 1, 7), (1, 0, 6), (1, 2, 9)]);
        assert_eq!(greedy_swaps(&v).forward(), &[1, 0, 2]);
        // A heavy diagonal makes every swap a loss.
        let v = Csr::from_triplets(2, 2, vec![(0, 0, 5), (1, 1, 5), (0, 1, 3)]);
        assert!(greedy_swaps(&v).is_identity());
    }
}
