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
/// O(n + nnz) to weigh the pairs, then they are taken in rounds: the `K` heaviest
/// still usable pairs are selected and sorted, and pairs with a used end dropped, `K`
/// doubling from 1024 — O(nnz log nnz) at worst, a few linear passes when (as in
/// relabeling) few pairs can be taken.
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
    greedy_swaps_transposed(v, &v.transpose())
}

/// [`greedy_swaps`] given `vt = vᵀ` as well (callers that have it save a transpose).
///
/// # Panics
/// If `v` is not square or `vt` is not its transpose's shape.
pub(crate) fn greedy_swaps_transposed(v: &Csr, vt: &Csr) -> Perm {
    let n = v.n_rows();
    assert_eq!(v.n_cols(), n, "greedy_swaps needs a square volume matrix");
    assert_eq!(
        (vt.n_rows(), vt.n_cols()),
        (n, n),
        "vt must be v's transpose"
    );
    let diag: Vec<u64> = (0..n).map(|i| v.get(i, i)).collect();
    // Each unordered pair {a < b} with V[a][b] or V[b][a] nonzero, from row a of V
    // (V[a][b]) merged with row a of Vᵀ (V[b][a]); both rows are sorted by column.
    // A pair is a key sorting like (weight descending, a, b): the weight's complement
    // in the high 64 bits, a and b below; weights beyond 64 bits take the slow path.
    let mut keys: Vec<u128> = Vec::new();
    let mut wide: Vec<(u128, usize, usize)> = Vec::new();
    let (rp, rc, rv) = (v.row_ptr(), v.col_indices(), v.values());
    let (tp, tc, tv) = (vt.row_ptr(), vt.col_indices(), vt.values());
    for a in 0..n {
        let (mut i, ie) = (rp[a], rp[a + 1]);
        let (mut j, je) = (tp[a], tp[a + 1]);
        // skip columns <= a
        i += rc[i..ie].partition_point(|&c| c as usize <= a);
        j += tc[j..je].partition_point(|&c| c as usize <= a);
        while i < ie || j < je {
            let ci = if i < ie { rc[i] } else { u32::MAX };
            let cj = if j < je { tc[j] } else { u32::MAX };
            let b = ci.min(cj);
            let vab = if ci == b { rv[i] } else { 0 };
            let vba = if cj == b { tv[j] } else { 0 };
            i += usize::from(ci == b);
            j += usize::from(cj == b);
            let b = b as usize;
            let gain = u128::from(vab) + u128::from(vba);
            let loss = u128::from(diag[a]) + u128::from(diag[b]);
            if gain > loss {
                let w = gain - loss;
                match u64::try_from(w) {
                    Ok(w) => keys.push((u128::from(!w) << 64) | ((a as u128) << 32) | b as u128),
                    Err(_) => wide.push((w, a, b)),
                }
            }
        }
    }
    let mut fwd: Vec<usize> = (0..n).collect();
    let mut used = vec![false; n];
    let mut take = |a: usize, b: usize, used: &mut Vec<bool>| {
        if !used[a] && !used[b] {
            used[a] = true;
            used[b] = true;
            fwd.swap(a, b);
        }
    };
    // Weights beyond 64 bits are heavier than all others: first, in order.
    wide.sort_unstable_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    for &(_, a, b) in &wide {
        take(a, b, &mut used);
    }
    let ends = |k: u128| (((k >> 32) as u32) as usize, (k as u32) as usize);
    keys.retain(|&k| {
        let (a, b) = ends(k);
        !used[a] && !used[b]
    });
    // Rounds: the K smallest keys in order, then drop every key with a used end
    // (it could never be taken); the next round continues in the same order.
    let mut batch = 1024usize;
    while !keys.is_empty() {
        let k = batch.min(keys.len());
        if k < keys.len() {
            keys.select_nth_unstable(k - 1);
        }
        keys[..k].sort_unstable();
        for &key in &keys[..k] {
            let (a, b) = ends(key);
            take(a, b, &mut used);
        }
        keys.drain(..k);
        keys.retain(|&key| {
            let (a, b) = ends(key);
            !used[a] && !used[b]
        });
        batch = batch.saturating_mul(2);
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
