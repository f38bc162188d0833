//! [`Relabel::solve_on`]: the relabeling over an MPI communicator, each rank computing
//! its own row of the problem from the layouts.

use mpi::topology::Communicator;

use super::{Method, Problem, Relabel, Relabeled, SolvedBy};
use crate::error::Result;
use crate::gain;

/// The answer of [`Relabel::solve_on`] on one rank: σ and its certificate (the same on
/// every rank) and what this rank computed and sent.
#[derive(Debug, Clone, PartialEq)]
pub struct OnRank {
    /// σ and what is known about it, the same on every rank.
    pub relabeled: Relabeled,
    /// This rank's row of δ ([`Method::Dense`]; empty for [`Method::Sparse`]).
    pub row: Vec<f64>,
    /// Candidates this rank's model named ([`Method::Sparse`]; 0 for dense rows).
    pub candidates: usize,
    /// Values this rank sent: its positive candidate entries, or p for a dense row.
    pub row_len: usize,
    /// Values rank 0 received from all ranks (the solver's input); 0 on the others.
    pub gathered_len: usize,
}

impl Relabel<'_> {
    /// Collective: σ over the ranks of `comm`, for a relabeling asked for with
    /// [`Relabel::from_layouts`]; every rank calls it with the same layouts, model and
    /// method. Rank `x` computes its row from [`crate::gain::incoming`]`(input, x)` — no
    /// global volume matrix — the rows meet at rank 0, which solves and broadcasts σ.
    /// Errors are agreed on collectively: if any rank fails, every rank returns an
    /// error and none waits forever.
    ///
    /// * [`Method::Sparse`]: each rank sends its candidate entries as a sparse list
    ///   (`MPI_Gatherv`; O(k) per rank, O(nnz + p) at rank 0), and every rank adds what
    ///   its packages cost at `σ(x)` to the exact saving and the certificate; the result
    ///   equals the serial [`Method::Sparse`] on the same packages (the sums may differ
    ///   in their last bits).
    /// * [`Method::Auto`], [`Method::Dense`]: each rank sends its dense row of δ (p²
    ///   doubles at rank 0), solved exactly ([`crate::lap::dense_max`]), the identity if
    ///   σ saves nothing; for checking.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] for [`Method::Greedy`] or a relabeling not asked
    /// for with [`Relabel::from_layouts`]; [`crate::Error::Mismatched`] if the
    /// communicator size differs from the layouts' communicator or the model's machine
    /// is too small; [`crate::Error::Limit`] if [`Method::Sparse`] is asked of a model
    /// that names no candidates; solver errors (on every rank).
    pub fn solve_on<C: Communicator>(&self, comm: &C) -> Result<OnRank> {
        let Problem::Layouts(model, input) = self.problem else {
            return Err(self.unsupported("anything but rows from layouts over a communicator"));
        };
        match self.method {
            Method::Auto | Method::Dense => {
                let r = gain::mpi::relabel(comm, model, &input)?;
                let p = r.sigma.len();
                let (is_root, row_len) = (comm.rank() == 0, r.row.len());
                Ok(OnRank {
                    relabeled: Relabeled::exact(
                        r.sigma,
                        SolvedBy::Dense,
                        p * p,
                        r.cost_before,
                        r.cost_before - r.saving,
                    ),
                    row: r.row,
                    candidates: 0,
                    row_len,
                    gathered_len: if is_root { p * p } else { 0 },
                })
            }
            Method::Sparse => {
                let r = gain::mpi::relabel_sparse(comm, model, &input)?;
                Ok(OnRank {
                    relabeled: Relabeled::from_sparse(r.result),
                    row: Vec::new(),
                    candidates: r.candidates,
                    row_len: r.row_len,
                    gathered_len: r.gathered_len,
                })
            }
            Method::Greedy => Err(self.unsupported("a cost model over a communicator")),
        }
    }
}
