//! Linear assignment: exact solvers for the process relabeling σ.
//!
//! # What σ means in copr
//! A relabeling renames *target* labels: target label `t` is taken by process `σ(t)`
//! ([`Perm::forward`]`()[t]`). With `V[s][t]` the volume source rank `s` sends target
//! rank `t`, and the locally-free volume cost (only remote bytes cost), the volume that
//! stays local after relabeling is
//!
//! `local(σ) = Σ_t V[σ(t)][t]`,  `remote(σ) = Σ_{s,t} V[s][t]·[s ≠ σ(t)] = ΣV − local(σ)`.
//!
//! Row `t` of `Vᵀ` holds what target `t` receives, so the optimal relabeling is
//! `sparse_max(&V.transpose())`. Equivalently, with the paper's relabeling gain
//! `δ(x, y) = V[y][x] − V[x][x]` (Remark 2 of the COSTA paper), `dense_max(n, δ)` maximises
//! `Σ_x δ(x, σ(x)) = remote(id) − remote(σ)` (Lemma 1) — the same σ. General cost models
//! produce a dense δ table and use [`dense_max`].
//!
//! # Solvers
//! * [`dense_max`] / [`dense_max_with`]: exact Jonker–Volgenant on an `n × n` table of
//!   `f64` gains (copr's own [`DenseSolver::Jv`], or the `lapjv` crate).
//! * [`sparse_max`]: exact on a sparse non-negative matrix, never forming `n × n`
//!   (shortest augmenting paths; an ε-scaling auction when they turn expensive).
//! * [`greedy_swaps`]: COSTA's greedy pairwise-swap heuristic, for comparison only.
//! * [`assignment_value`]: `Σ_i W[i][σ(i)]`.
//! * [`brute_force_max`]: every permutation, the reference for tests (n ≤ 10).

mod auction;
mod brute;
mod dense;
mod greedy;
mod joint;
mod perm;
mod sparse_jv;

pub use brute::{brute_force_max, BRUTE_FORCE_MAX_N};
pub use dense::{dense_max, dense_max_with, DenseSolver};

/// Largest assignment for which copr builds a dense p × p table (the dense solver, the
/// δ table of a general cost model): 8192 ranks, 0.5 GB of `f64`. Beyond it only the
/// sparse solver runs.
pub const DENSE_LIMIT: usize = 8192;
pub use greedy::greedy_swaps;
pub(crate) use greedy::greedy_swaps_transposed;
pub(crate) use joint::{joint_assign, FreeLabels};
pub use perm::Perm;
pub use sparse_jv::sparse_max;

use crate::csr::Csr;

/// The value `Σ_i W[i][σ(i)]` of an assignment.
///
/// # Complexity
/// O(n log d) for rows of at most `d` nonzeros.
///
/// # Panics
/// If `σ` and `w` have different sizes (`σ.len() != w.n_rows()` or an image is
/// `≥ w.n_cols()`), or the sum overflows `u64`.
///
/// # Example
/// ```
/// use copr::lap::{assignment_value, Perm};
/// use copr::csr::Csr;
/// let w = Csr::from_dense(2, 2, &[1, 5, 4, 2]);
/// assert_eq!(assignment_value(&w, &Perm::identity(2)), 3);
/// assert_eq!(assignment_value(&w, &Perm::from_forward(vec![1, 0]).unwrap()), 9);
/// ```
pub fn assignment_value(w: &Csr, sigma: &Perm) -> u64 {
    assert_eq!(
        sigma.len(),
        w.n_rows(),
        "assignment of length {} for a matrix with {} rows",
        sigma.len(),
        w.n_rows()
    );
    let mut total = 0u64;
    for (i, &j) in sigma.forward().iter().enumerate() {
        assert!(
            j < w.n_cols(),
            "σ({i}) = {j} is outside the {} columns",
            w.n_cols()
        );
        total = total
            .checked_add(w.get(i, j))
            .expect("assignment value overflows u64");
    }
    total
}
