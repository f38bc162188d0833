//! COSTA's greedy pairwise-swap relabeling heuristic, kept as a baseline.

use crate::csr::Csr;
use crate::lap::Perm;

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
/// O(n + nnz) to weigh the pairs, plus sorting the pairs that can still be taken: a
/// swap uses two ranks, a pair holds a rank that sends and one that receives, so at
/// most `U = 2·min(ranks that send, ranks that receive)` ranks are ever used; a pair
/// ranked `U` or later among either end's pairs would need `U` used partners before
/// it and is never taken. Relabeling onto a few receiving ranks (the paper's sweep on
/// 320 × 320 ranks: 100 receivers, 10⁷ pairs) sorts at most `U` pairs per rank.
///
/// # Panics
/// If `v` is not square.
///
/// # Example
/// ```
/// use copr::lap::{assignment_value, greedy_swaps, sparse_max};
/// use copr::csr::Csr;
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

/// A pair's place in the greedy order: weight descending, then (lo, hi).
type Key = (std::cmp::Reverse<u128>, u32, u32);

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
    let (rp, rc, rv) = (v.row_ptr(), v.col_indices(), v.values());
    let (tp, tc, tv) = (vt.row_ptr(), vt.col_indices(), vt.values());
    // Every pair {a, b} (b ≠ a) with positive weight, from row a of V (V[a][b]) merged
    // with row a of Vᵀ (V[b][a]); rows are sorted by column.
    // With `above`, only the partners b > a.
    let pairs_of = |a: usize, above: bool, out: &mut dyn FnMut(usize, Key)| {
        let (mut i, ie) = (rp[a], rp[a + 1]);
        let (mut j, je) = (tp[a], tp[a + 1]);
        if above {
            i += rc[i..ie].partition_point(|&c| c as usize <= a);
            j += tc[j..je].partition_point(|&c| c as usize <= a);
        }
        while i < ie || j < je {
            let ci = if i < ie { rc[i] } else { u32::MAX };
            let cj = if j < je { tc[j] } else { u32::MAX };
            let b = ci.min(cj);
            let vab = if ci == b { rv[i] } else { 0 };
            let vba = if cj == b { tv[j] } else { 0 };
            i += usize::from(ci == b);
            j += usize::from(cj == b);
            let b = b as usize;
            if b == a {
                continue;
            }
            let gain = u128::from(vab) + u128::from(vba);
            let loss = u128::from(diag[a]) + u128::from(diag[b]);
            if gain > loss {
                let (lo, hi) = (a.min(b) as u32, a.max(b) as u32);
                out(b, (std::cmp::Reverse(gain - loss), lo, hi));
            }
        }
    };
    // At most `used` ranks are ever used: keep each rank's `used` best pairs.
    let senders = (0..n).filter(|&a| rp[a + 1] > rp[a]).count();
    let receivers = (0..n).filter(|&a| tp[a + 1] > tp[a]).count();
    let used_max = 2 * senders.min(receivers);
    let mut cut: Vec<Option<Key>> = vec![None; n];
    let mut list: Vec<Key> = Vec::new();
    for (a, c) in cut.iter_mut().enumerate() {
        if used_max == 0 || (rp[a + 1] - rp[a]) + (tp[a + 1] - tp[a]) <= used_max {
            continue; // fewer partners than used_max: nothing to cut
        }
        list.clear();
        pairs_of(a, false, &mut |_, k| list.push(k));
        if used_max > 0 && list.len() > used_max {
            // the used_max-th best key: pairs after it are never taken
            *c = Some(*list.select_nth_unstable(used_max - 1).1);
        }
    }
    let keep = |a: usize, k: &Key| cut[a].is_none_or(|c| *k <= c);
    let mut keys: Vec<Key> = Vec::new();
    for a in 0..n {
        pairs_of(a, true, &mut |b, k| {
            if keep(a, &k) && keep(b, &k) {
                keys.push(k);
            }
        });
    }
    keys.sort_unstable();
    let mut fwd: Vec<usize> = (0..n).collect();
    let mut used = vec![false; n];
    for (_, a, b) in keys {
        let (a, b) = (a as usize, b as usize);
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
