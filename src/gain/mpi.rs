//! δ across real MPI ranks: rank `x` computes row `x` from the packages it receives, the
//! rows meet at rank 0, which solves the exact assignment, and σ is broadcast.
//!
//! The sparse relabeling sends only each rank's candidate entries (O(k) per rank,
//! O(nnz) at rank 0); the dense one sends dense rows (p² doubles at rank 0), for
//! checking. Both are asked for through [`crate::relabel::Relabel::solve_on`];
//! [`discover_placement`] finds where the ranks run.

use mpi::topology::Communicator;
use mpi::traits::{Root, *};

use copr_cost_models::CostModel;

use super::candidates::SparseRelabeling;
use super::candidates::{finish, no_candidates, solve_rows};
use super::{
    candidate_row, check_model_ranks, cost_here, gain_row, incoming, keep_if_gain, PackageInput,
};
use crate::error::{Error, Mismatched, Result};
use crate::lap::{dense_max, Perm};

/// The outcome on one rank: its own row of δ and the shared σ.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MpiRelabeling {
    /// Row `rank` of δ.
    pub(crate) row: Vec<f64>,
    /// σ, the same on every rank.
    pub(crate) sigma: Perm,
    /// `W(G)`, summed over the ranks.
    pub(crate) cost_before: f64,
    /// `Σ_x δ(x, σ(x)) − δ(x, x) = W(G) − W(G_σ)` (Lemma 1), summed over the ranks.
    pub(crate) saving: f64,
}

/// Collective: every rank of `comm` calls it with the same layouts and model.
///
/// Rank `x` computes `δ(x, ·)` from [`incoming`]`(input, x)` — no global volume matrix —
/// the p rows are gathered at rank 0 (p² doubles there), solved exactly with
/// [`dense_max`] (the identity if σ saves nothing, see [`keep_if_gain`]), and σ is
/// broadcast. Errors are agreed on collectively: if any rank
/// fails, every rank returns an error and none waits forever.
///
/// # Errors
/// [`Error::Mismatched`] if the communicator size differs from the layouts' communicator
/// or the model's machine is too small; solver errors (on every rank).
pub(crate) fn relabel<C: Communicator>(
    comm: &C,
    model: &dyn CostModel,
    input: &PackageInput<'_>,
) -> Result<MpiRelabeling> {
    let p = input.ranks();
    let (me, row, [cost_before, _]) = agreed_rows(comm, model, input, "row of δ", |me| {
        let inc = incoming(input, me)?;
        let mut row = vec![0.0; p];
        gain_row(model, me, &inc, &mut row);
        let here = cost_here(model, me, &inc);
        Ok((row, [here, 0.0]))
    })?;
    let root = comm.process_at_rank(0);
    // status (1 = ok) followed by σ
    let mut msg = vec![0u64; p + 1];
    let mut root_err = None;
    if me == 0 {
        let mut table = vec![0.0; p * p];
        root.gather_into_root(&row[..], &mut table[..]);
        match dense_max(p, &table).map(|s| keep_if_gain(p, &table, s, cost_before)) {
            Ok(sigma) => {
                msg[0] = 1;
                for (m, &s) in msg[1..].iter_mut().zip(sigma.forward()) {
                    *m = s as u64;
                }
            }
            Err(e) => root_err = Some(e),
        }
    } else {
        root.gather_into(&row[..]);
    }
    root.broadcast_into(&mut msg[..]);
    if let Some(e) = root_err {
        return Err(e);
    }
    if msg[0] != 1 {
        return Err(Error::Assignment("the solver failed on rank 0".into()));
    }
    let sigma = Perm::from_forward(msg[1..].iter().map(|&s| s as usize).collect())?;
    let saved_here = row[sigma.apply(me)] - row[me];
    let mut saving = 0.0f64;
    comm.all_reduce_into(
        &saved_here,
        &mut saving,
        mpi::collective::SystemOperation::sum(),
    );
    // rank 0's sum decides for all
    let mut saving_bits = saving.to_bits();
    root.broadcast_into(&mut saving_bits);
    Ok(MpiRelabeling {
        row,
        sigma,
        cost_before,
        saving: f64::from_bits(saving_bits),
    })
}

/// The opening both relabelings share: the communicator must match the layouts and the
/// model's machine; `compute` makes this rank's row; every rank learns whether all
/// succeeded before any collective that carries data (so none waits forever); and the
/// two sums `compute` returns are added over the ranks.
fn agreed_rows<C: Communicator, T>(
    comm: &C,
    model: &dyn CostModel,
    input: &PackageInput<'_>,
    what: &'static str,
    compute: impl FnOnce(usize) -> Result<(T, [f64; 2])>,
) -> Result<(usize, T, [f64; 2])> {
    use mpi::collective::SystemOperation;
    let p = input.ranks();
    let size = comm.size() as usize;
    if size != p {
        // every rank sees the same sizes, so every rank returns here
        return Err(Mismatched::CommunicatorSize {
            layouts: p,
            communicator: size,
        }
        .into());
    }
    check_model_ranks(model, p)?;
    let me = comm.rank() as usize;
    let local = compute(me);
    let ok_here = i32::from(local.is_ok());
    let mut ok_all = 0i32;
    comm.all_reduce_into(&ok_here, &mut ok_all, SystemOperation::min());
    let (value, sums_here) = local?;
    if ok_all == 0 {
        return Err(Mismatched::OtherRankFailed { what }.into());
    }
    let mut sums = [0.0f64; 2];
    comm.all_reduce_into(&sums_here[..], &mut sums[..], SystemOperation::sum());
    Ok((me, value, sums))
}

/// The outcome of [`relabel_sparse`] on one rank, with the sizes of its buffers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MpiSparseRelabeling {
    /// σ and its certificate, the same on every rank.
    pub(crate) result: SparseRelabeling,
    /// Candidates this rank's model named (`k`).
    pub(crate) candidates: usize,
    /// `(index, value)` pairs this rank sent: its positive candidate entries, `≤ k`.
    pub(crate) row_len: usize,
    /// Pairs rank 0 received from all ranks (the solver's input); 0 on the others.
    pub(crate) gathered_len: usize,
}

/// Collective: the sparse candidate relabeling across real
/// ranks. Rank `x` computes its candidate row from [`incoming`]`(input, x)` — `k`
/// candidates, only the positive shifted gains kept — the rows travel to rank 0 as
/// sparse `(index, value)` lists (`MPI_Gatherv`), rank 0 solves the sparse problem and
/// broadcasts σ, and every rank adds what its packages cost at `σ(x)` to the exact
/// saving and the certificate. No rank holds a p-long row of gains: the buffers are
/// `O(k)` on every rank and `O(nnz + p)` at rank 0 (σ itself is p long).
///
/// The result equals the serial candidate relabeling on the same layouts: the same
/// rows, the same solver; the sums may differ in their last bits.
///
/// # Errors
/// As [`relabel`]; [`Error::Limit`] if the model names no candidates (on every rank).
pub(crate) fn relabel_sparse<C: Communicator>(
    comm: &C,
    model: &dyn CostModel,
    input: &PackageInput<'_>,
) -> Result<MpiSparseRelabeling> {
    use mpi::collective::SystemOperation;
    use mpi::datatype::PartitionMut;
    let p = input.ranks();
    let (me, (inc, row), sums) = agreed_rows(comm, model, input, "candidate row", |me| {
        let inc = incoming(input, me)?;
        let row = candidate_row(model, me, &inc, p).ok_or_else(|| no_candidates(model, p))?;
        // W(G) and Σ_x u_x
        let sums = [row.here, row.here - row.lower];
        Ok(((inc, row), sums))
    })?;
    let sums_here = [row.here, row.here - row.lower];
    let ys: Vec<u32> = row.entries.iter().map(|e| e.0).collect();
    let gs: Vec<f64> = row.entries.iter().map(|e| e.1).collect();
    // every rank learns the total first, so that all refuse an oversized gather
    let mut total = 0u64;
    comm.all_reduce_into(&(ys.len() as u64), &mut total, SystemOperation::sum());
    super::candidates::check_candidate_entries(usize::try_from(total).unwrap_or(usize::MAX), p)?;
    // ≤ MAX_CANDIDATE_ENTRIES < 2^31, checked on every rank just above
    let count = ys.len() as i32;
    let root = comm.process_at_rank(0);
    // status (1 = ok), the relaxation bound's bits, the entries' count and longest row, σ
    let mut msg = vec![0u64; p + 4];
    let mut root_err = None;
    let mut gathered_len = 0;
    if me == 0 {
        let mut counts = vec![0i32; p];
        root.gather_into_root(&count, &mut counts[..]);
        let mut head_vals = vec![0f64; 2 * p];
        root.gather_into_root(&sums_here[..], &mut head_vals[..]);
        let heads: Vec<(f64, f64)> = head_vals
            .chunks_exact(2)
            .map(|h| (h[0], h[0] - h[1]))
            .collect();
        let mut ptr = vec![0usize; p + 1];
        for (x, &c) in counts.iter().enumerate() {
            ptr[x + 1] = ptr[x] + c as usize;
        }
        gathered_len = ptr[p];
        // ≤ MAX_CANDIDATE_ENTRIES < 2^31 in total, checked above
        let displs: Vec<i32> = ptr[..p].iter().map(|&d| d as i32).collect();
        let mut all_y = vec![0u32; gathered_len];
        let mut all_g = vec![0f64; gathered_len];
        root.gather_varcount_into_root(
            &ys[..],
            &mut PartitionMut::new(&mut all_y[..], &counts[..], &displs[..]),
        );
        root.gather_varcount_into_root(
            &gs[..],
            &mut PartitionMut::new(&mut all_g[..], &counts[..], &displs[..]),
        );
        let entries: Vec<(u32, f64)> = all_y.into_iter().zip(all_g).collect();
        match solve_rows(p, &ptr, &entries, &heads) {
            Ok(r) => {
                msg[0] = 1;
                msg[1] = r.relaxation.to_bits();
                msg[2] = gathered_len as u64;
                msg[3] = counts.iter().copied().max().unwrap_or(0) as u64;
                for (m, &s) in msg[4..].iter_mut().zip(r.sigma.forward()) {
                    *m = s as u64;
                }
            }
            Err(e) => root_err = Some(e),
        }
    } else {
        root.gather_into(&count);
        root.gather_into(&sums_here[..]);
        root.gather_varcount_into(&ys[..]);
        root.gather_varcount_into(&gs[..]);
    }
    root.broadcast_into(&mut msg[..]);
    if let Some(e) = root_err {
        return Err(e);
    }
    if msg[0] != 1 {
        return Err(Error::Assignment(
            "the sparse solve failed on rank 0".into(),
        ));
    }
    let sigma = Perm::from_forward(msg[4..].iter().map(|&s| s as usize).collect())?;
    // W(G_σ): each rank prices its own packages at σ(x); rank 0's sum decides for all
    let here_after = copr_cost_models::delivered_cost(model, sigma.apply(me), &inc);
    let mut after = here_after;
    comm.all_reduce_into(&here_after, &mut after, SystemOperation::sum());
    let mut after_bits = after.to_bits();
    root.broadcast_into(&mut after_bits);
    let result = finish(
        sigma,
        sums[0],
        f64::from_bits(after_bits),
        sums[1],
        f64::from_bits(msg[1]),
        msg[2] as usize,
        msg[3] as usize,
    );
    Ok(MpiSparseRelabeling {
        result,
        candidates: row.candidates,
        row_len: ys.len(),
        gathered_len,
    })
}

/// Longest processor name exchanged by [`discover_placement`].
const NAME_BYTES: usize = 256;

/// Collective: where every rank of `comm` runs, discovered at run time — the node from
/// `MPI_Get_processor_name`, the PU from the CPU binding hwloc reports (with the `hwloc`
/// feature; without it, or for unbound ranks, the PU is left to the machine's packing).
///
/// # Errors
/// [`Error::Topology`] if hwloc cannot read the binding (on every rank that fails; a
/// name longer than 256 bytes is truncated, not an error).
pub fn discover_placement<C: Communicator>(comm: &C) -> Result<copr_topology::Placement> {
    let name = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
    let pu: Option<usize> = if cfg!(feature = "hwloc") {
        copr_topology::current_binding_pu()?
    } else {
        None
    };
    let mut mine = [0u8; NAME_BYTES + 8];
    let bytes = name.as_bytes();
    let len = bytes.len().min(NAME_BYTES);
    mine[..len].copy_from_slice(&bytes[..len]);
    let code = pu.map_or(u64::MAX, |p| p as u64);
    mine[NAME_BYTES..].copy_from_slice(&code.to_le_bytes());
    let p = comm.size() as usize;
    let mut all = vec![0u8; p * mine.len()];
    comm.all_gather_into(&mine[..], &mut all[..]);
    let pairs = all.chunks(mine.len()).map(|c| {
        let end = c[..NAME_BYTES]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(NAME_BYTES);
        let name = String::from_utf8_lossy(&c[..end]).into_owned();
        let code = u64::from_le_bytes(c[NAME_BYTES..].try_into().expect("8 bytes"));
        (name, (code != u64::MAX).then_some(code as usize))
    });
    Ok(copr_topology::Placement::from_pairs(pairs))
}
