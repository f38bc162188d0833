//! δ across real MPI ranks: rank `x` computes row `x` from the packages it receives, the
//! rows meet at rank 0, which solves the exact assignment, and σ is broadcast.

use mpi::topology::Communicator;
use mpi::traits::{Root, *};

use copr_cost_models::CostModel;

use super::{check_model_ranks, cost_here, gain_row, incoming, keep_if_gain, PackageInput};
use crate::error::{Error, Result};
use crate::lap::{dense_max, Perm};

/// The outcome on one rank: its own row of δ and the shared σ.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiRelabeling {
    /// Row `rank` of δ.
    pub row: Vec<f64>,
    /// σ, the same on every rank.
    pub sigma: Perm,
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
/// [`Error::Mismatch`] if the communicator size differs from the layouts' communicator
/// or the model's machine is too small; solver errors (on every rank).
pub fn relabel<C: Communicator>(
    comm: &C,
    model: &dyn CostModel,
    input: &PackageInput<'_>,
) -> Result<MpiRelabeling> {
    let p = input.ranks();
    let size = comm.size() as usize;
    if size != p {
        // every rank sees the same sizes, so every rank returns here
        return Err(Error::Mismatch(format!(
            "the layouts live on {p} ranks but the communicator has {size}"
        )));
    }
    check_model_ranks(model, p)?;
    let me = comm.rank() as usize;
    let mut row = vec![0.0; p];
    let mut here = 0.0;
    let local = incoming(input, me).map(|inc| {
        gain_row(model, me, &inc, &mut row);
        here = cost_here(model, me, &inc);
    });
    // agree on success before any collective that carries data
    let ok_here = i32::from(local.is_ok());
    let mut ok_all = 0i32;
    comm.all_reduce_into(
        &ok_here,
        &mut ok_all,
        mpi::collective::SystemOperation::min(),
    );
    local?;
    if ok_all == 0 {
        return Err(Error::Mismatch(
            "another rank failed to compute its row of δ".into(),
        ));
    }
    // W(G), the cost without relabeling: what counts as "saves nothing"
    let mut cost_before = 0.0f64;
    comm.all_reduce_into(
        &here,
        &mut cost_before,
        mpi::collective::SystemOperation::sum(),
    );
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
    Ok(MpiRelabeling { row, sigma })
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
