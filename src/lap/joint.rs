//! The joint assignment: one σ for a sum of sparse weight matrices, with some labels
//! kept in place — what a batch's joint relabeling ([`crate::relabel::Relabel::volumes`]) and
//! the cost models' joint relabeling ([`crate::relabel::Relabel::costs`]) solve on volumes.

use super::{assignment_value, sparse_max, Perm};
use crate::csr::Csr;
use crate::error::{Error, Mismatched, Result};

/// Largest sum of weights of a joint assignment: 2^60, the exact solver's bound.
const MAX_JOINT_WEIGHT: u64 = 1 << 60;

/// The exact joint assignment on `W = Σ_k weight_k · V_kᵀ` (rows: target labels,
/// columns: processes) with the labels in `fixed` kept in place; the identity when σ
/// keeps no more than it.
///
/// # Memory
/// `W` is summed one transform at a time on the free labels only, so the peak holds the
/// distinct (target, process) pairs of `W`, one transform's entries and O(`ranks`)
/// words for the labels and σ — not the entries of every transform at once.
pub(crate) fn joint_assign(parts: &[(&Csr, u64)], ranks: usize, fixed: &[usize]) -> Result<Perm> {
    let mut total = 0u64;
    for (k, (v, weight)) in parts.iter().enumerate() {
        if v.n_rows() > ranks || v.n_cols() > ranks {
            return Err(Mismatched::JointRanks {
                transform: k,
                what: "volumes",
                ranks: v.n_rows().max(v.n_cols()),
                joint: ranks,
            }
            .into());
        }
        let sum = v
            .sum()
            .checked_mul(*weight)
            .and_then(|s| s.checked_add(total))
            .filter(|&s| s <= MAX_JOINT_WEIGHT);
        total = sum.ok_or_else(|| {
            Error::Limit(format!(
                "the transforms of a joint relabeling weigh more than 2^60 together (transform {k})"
            ))
        })?;
    }
    let free = FreeLabels::new(ranks, fixed)?;
    // W on the free labels, one transform added at a time (entries touching a fixed
    // label cannot be used by a σ that keeps that label in place)
    let mut small = Csr::zeros(free.len(), free.len());
    for (v, weight) in parts {
        let mut trip: Vec<(usize, usize, u64)> = Vec::with_capacity(small.nnz() + v.nnz());
        trip.extend(small.iter());
        trip.extend(
            v.iter()
                .filter_map(|(s, t, x)| Some((free.index(t)?, free.index(s)?, x * weight))),
        );
        small = Csr::from_triplets(free.len(), free.len(), trip);
    }
    let on_free = sparse_max(&small)?;
    // labels outside the free ones keep their process under both σ and the identity, so
    // the comparison with the identity needs the free labels only
    if assignment_value(&small, &on_free) > assignment_value(&small, &Perm::identity(free.len())) {
        free.expand(&on_free)
    } else {
        Ok(Perm::identity(ranks))
    }
}

/// The labels of a joint relabeling that are not fixed: σ maps them onto themselves, so
/// the assignment runs on them alone.
pub(crate) struct FreeLabels {
    ranks: usize,
    /// The free labels, increasing.
    list: Vec<usize>,
    /// `index[t]`: position of label `t` in `list`, `usize::MAX` if fixed.
    index: Vec<usize>,
}

impl FreeLabels {
    /// All of `0..ranks` but `fixed`.
    ///
    /// # Errors
    /// [`Error::Mismatched`] if a fixed label is outside `0..ranks`.
    pub(crate) fn new(ranks: usize, fixed: &[usize]) -> Result<Self> {
        let mut index = vec![0; ranks];
        for &t in fixed {
            *index
                .get_mut(t)
                .ok_or(Mismatched::FixedLabel { label: t, ranks })? = usize::MAX;
        }
        let list: Vec<usize> = (0..ranks).filter(|&t| index[t] == 0).collect();
        for (a, &t) in list.iter().enumerate() {
            index[t] = a;
        }
        Ok(Self { ranks, list, index })
    }

    /// Number of free labels.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// The free labels, increasing.
    pub(crate) fn labels(&self) -> &[usize] {
        &self.list
    }

    /// Position of label `t` among the free ones (`None` if fixed).
    pub(crate) fn index(&self, t: usize) -> Option<usize> {
        Some(self.index[t]).filter(|&a| a != usize::MAX)
    }

    /// σ on all ranks from σ on the free labels (by position), the fixed ones in place.
    pub(crate) fn expand(&self, on_free: &Perm) -> Result<Perm> {
        let mut fwd: Vec<usize> = (0..self.ranks).collect();
        for (a, &t) in self.list.iter().enumerate() {
            fwd[t] = self.list[on_free.apply(a)];
        }
        Perm::from_forward(fwd)
    }
}
