//! Brute force over all permutations: the reference for tiny instances.

use crate::error::{Error, Result};
use crate::lap::Perm;

/// Largest `n` [`brute_force_max`] accepts (10! ≈ 3.6 M permutations).
pub const BRUTE_FORCE_MAX_N: usize = 10;

/// Calls `f` with every permutation of `0..n` (Heap's algorithm).
fn for_each_perm(n: usize, mut f: impl FnMut(&[usize])) {
    let mut p: Vec<usize> = (0..n).collect();
    let mut c = vec![0usize; n];
    f(&p);
    let mut i = 0;
    while i < n {
        if c[i] < i {
            if i % 2 == 0 {
                p.swap(0, i);
            } else {
                p.swap(c[i], i);
            }
            f(&p);
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
}

/// Maximum-weight perfect assignment by trying every permutation: the σ maximising
/// `Σ_i gain[i*n + σ(i)]` (the first one found among ties) and its value.
///
/// A reference for tests of the exact solvers; sums are evaluated in `f64` as given (no
/// quantisation).
///
/// # Complexity
/// O(n! · n).
///
/// # Errors
/// [`Error::Assignment`] if `n > BRUTE_FORCE_MAX_N`, `gain.len() != n * n`, or a gain is
/// not finite.
///
/// # Example
/// ```
/// use copr::lap::{brute_force_max, dense_max};
/// let gain = [1.0, 5.0, 4.0, 2.0];
/// let (sigma, best) = brute_force_max(2, &gain).unwrap();
/// assert_eq!(best, 9.0);
/// assert_eq!(sigma, dense_max(2, &gain).unwrap());
/// ```
pub fn brute_force_max(n: usize, gain: &[f64]) -> Result<(Perm, f64)> {
    if n > BRUTE_FORCE_MAX_N {
        return Err(Error::Assignment(format!(
            "brute force is limited to n <= {BRUTE_FORCE_MAX_N}, got n = {n}"
        )));
    }
    if gain.len() != n * n || gain.iter().any(|g| !g.is_finite()) {
        return Err(Error::Assignment(format!(
            "brute force needs {} finite gains for n = {n}, got {} values",
            n * n,
            gain.len()
        )));
    }
    let mut best = f64::NEG_INFINITY;
    let mut arg = Vec::new();
    for_each_perm(n, |p| {
        let v: f64 = p.iter().enumerate().map(|(i, &j)| gain[i * n + j]).sum();
        if v > best {
            best = v;
            arg = p.to_vec();
        }
    });
    Ok((Perm::from_forward(arg)?, best))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_every_permutation_once() {
        for n in 0..=6 {
            let mut seen = std::collections::HashSet::new();
            for_each_perm(n, |p| assert!(seen.insert(p.to_vec())));
            assert_eq!(seen.len(), (1..=n).product::<usize>());
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert!(brute_force_max(11, &vec![0.0; 121]).is_err());
        assert!(brute_force_max(2, &[0.0; 3]).is_err());
        assert!(brute_force_max(1, &[f64::NAN]).is_err());
        assert_eq!(brute_force_max(0, &[]).unwrap().1, 0.0);
    }
}
