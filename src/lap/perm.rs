//! Permutations that keep both directions.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A permutation σ of `0..n` that stores both σ and σ⁻¹.
///
/// In copr, σ relabels target ranks: `forward()[t]` is the process that takes target
/// label `t`, and `inverse()[p]` is the label process `p` takes.
///
/// # Example
/// ```
/// use copr::lap::Perm;
/// let p = Perm::from_forward(vec![2, 0, 1]).unwrap();
/// assert_eq!(p.apply(0), 2);
/// assert_eq!(p.apply_inv(2), 0);
/// assert_eq!(p.compose(&p.inverted()), Perm::identity(3));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<usize>", into = "Vec<usize>")]
pub struct Perm {
    fwd: Vec<usize>,
    inv: Vec<usize>,
}

impl Perm {
    /// The identity on `0..n`.
    pub fn identity(n: usize) -> Self {
        let fwd: Vec<usize> = (0..n).collect();
        Self {
            inv: fwd.clone(),
            fwd,
        }
    }

    /// Builds σ from its forward table, checking that it is a bijection of `0..n`.
    ///
    /// # Errors
    /// [`Error::Assignment`] if an entry is out of range or repeated.
    pub fn from_forward(fwd: Vec<usize>) -> Result<Self> {
        let n = fwd.len();
        let mut inv = vec![usize::MAX; n];
        for (i, &f) in fwd.iter().enumerate() {
            if f >= n {
                return Err(Error::Assignment(format!(
                    "permutation entry {f} at index {i} is outside 0..{n}"
                )));
            }
            if inv[f] != usize::MAX {
                return Err(Error::Assignment(format!(
                    "permutation value {f} appears at index {} and at index {i}",
                    inv[f]
                )));
            }
            inv[f] = i;
        }
        Ok(Self { fwd, inv })
    }

    /// Number of elements permuted.
    pub fn len(&self) -> usize {
        self.fwd.len()
    }

    /// True for the permutation of the empty set.
    pub fn is_empty(&self) -> bool {
        self.fwd.is_empty()
    }

    /// σ(i).
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn apply(&self, i: usize) -> usize {
        self.fwd[i]
    }

    /// σ⁻¹(j).
    ///
    /// # Panics
    /// If `j >= self.len()`.
    pub fn apply_inv(&self, j: usize) -> usize {
        self.inv[j]
    }

    /// The forward table σ.
    pub fn forward(&self) -> &[usize] {
        &self.fwd
    }

    /// The inverse table σ⁻¹.
    pub fn inverse(&self) -> &[usize] {
        &self.inv
    }

    /// σ⁻¹ as a permutation.
    pub fn inverted(&self) -> Self {
        Self {
            fwd: self.inv.clone(),
            inv: self.fwd.clone(),
        }
    }

    /// `self ∘ other`: i ↦ self(other(i)).
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn compose(&self, other: &Perm) -> Self {
        assert_eq!(
            self.len(),
            other.len(),
            "composing permutations of different lengths"
        );
        let fwd: Vec<usize> = other.fwd.iter().map(|&j| self.fwd[j]).collect();
        let mut inv = vec![0; fwd.len()];
        for (i, &f) in fwd.iter().enumerate() {
            inv[f] = i;
        }
        Self { fwd, inv }
    }

    /// True if σ(i) = i for all i.
    pub fn is_identity(&self) -> bool {
        self.fwd.iter().enumerate().all(|(i, &f)| i == f)
    }
}

impl TryFrom<Vec<usize>> for Perm {
    type Error = Error;
    fn try_from(v: Vec<usize>) -> Result<Self> {
        Self::from_forward(v)
    }
}

impl From<Perm> for Vec<usize> {
    fn from(p: Perm) -> Vec<usize> {
        p.fwd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_bijections() {
        assert!(Perm::from_forward(vec![0, 0]).is_err());
        assert!(Perm::from_forward(vec![0, 2]).is_err());
        let p = Perm::from_forward(vec![1, 2, 0]).unwrap();
        for i in 0..3 {
            assert_eq!(p.apply_inv(p.apply(i)), i);
        }
    }
}
