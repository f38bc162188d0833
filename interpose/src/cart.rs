//! The interposed `MPI_Cart_create` (exported unmangled, for `LD_PRELOAD`).

use std::cell::Cell;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use copr_mapping::mpi::{grid_pattern, plan_mapping, MachineSource};
use copr_mapping::Options;
use mpi::ffi::{MPI_Comm, PMPI_Cart_create, PMPI_Comm_free, PMPI_Comm_split};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::log::{conclude, warn_fallback, write_log};

/// Bytes of every grid message in the pattern (the program's traffic is unknown).
const GRID_MESSAGE_BYTES: u64 = 1 << 20;

thread_local! {
    /// Set while this thread is inside the interposer: nested calls go to PMPI.
    pub(crate) static ACTIVE: Cell<bool> = const { Cell::new(false) };
}

/// What the interposer decided on this process.
enum Decision {
    /// Create the grid on `comm_old` split with this key (the new rank).
    Split(c_int),
    /// Leave the call to PMPI.
    Pass,
}

/// The grid as the log names it: `2x4, periods 1,1`.
fn grid_text(dims: &[i32], periods: &[bool]) -> String {
    let d: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    let p: Vec<String> = periods.iter().map(|&p| u8::from(p).to_string()).collect();
    format!("{}, periods {}", d.join("x"), p.join(","))
}

/// Collective: the machine source of the environment, when it is usable on every
/// process of `comm`; otherwise `None` everywhere, logged under `head`.
pub(crate) fn machine_source(comm: &SimpleCommunicator, head: &str) -> Option<MachineSource> {
    let p = comm.size() as usize;
    let root = comm.rank() == 0;
    let source = MachineSource::from_env();
    // an unreadable environment on one process must not leave the others waiting
    let mut failed = vec![0u8; p];
    comm.all_gather_into(&u8::from(source.is_err()), &mut failed[..]);
    match source {
        Ok(s) if failed.iter().all(|&f| f == 0) => Some(s),
        Ok(_) => {
            if root {
                let why = "the environment of another rank is not usable";
                write_log(&[
                    head.to_string(),
                    format!("  kept the MPI library's order: {why}"),
                ]);
                warn_fallback(head, why);
            }
            None
        }
        Err(e) => {
            write_log(&[
                head.to_string(),
                format!("  kept the MPI library's order: {e}"),
            ]);
            if root {
                warn_fallback(head, &e.to_string());
            }
            None
        }
    }
}

/// The collective part: every process of `comm` reaches the same decision (a correct
/// program passes the same grid everywhere; copr's calls agree on every error).
fn decide(comm: &SimpleCommunicator, dims: &[i32], periods: &[bool]) -> Decision {
    let p = comm.size() as usize;
    let head = format!(
        "MPI_Cart_create({}, reorder = 1) on {p} ranks",
        grid_text(dims, periods)
    );
    let Some(source) = machine_source(comm, &head) else {
        return Decision::Pass;
    };
    if let Some(path) = crate::recorded::graph_path() {
        return match crate::recorded::plan(comm, &head, &path, &source) {
            Some(ranks) => Decision::Split(ranks.inverse()[comm.rank() as usize] as c_int),
            None => Decision::Pass,
        };
    }
    let planned = grid_pattern(dims, periods, GRID_MESSAGE_BYTES)
        .and_then(|pattern| plan_mapping(comm, &pattern, &source, &Options::default()));
    match conclude(comm, head, &source, planned, "1 MiB per grid message") {
        Some(ranks) => Decision::Split(ranks.inverse()[comm.rank() as usize] as c_int),
        None => Decision::Pass,
    }
}

/// Whether the arguments are a grid this library handles (checked on each process
/// from its own arguments, which MPI requires to be equal on every process).
///
/// # Safety
/// `dims` and `periods` point to `ndims` ints when non-NULL and `ndims > 0`.
unsafe fn grid_args(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
) -> Option<(Vec<i32>, Vec<bool>)> {
    if !(1..=3).contains(&ndims) || dims.is_null() || periods.is_null() {
        return None;
    }
    // SAFETY: the predefined null handle of the MPI library.
    if comm == unsafe { mpi::ffi::RSMPI_COMM_NULL } {
        return None;
    }
    let n = ndims as usize;
    // SAFETY: the caller's guarantee.
    let (dims, periods) = unsafe {
        (
            std::slice::from_raw_parts(dims, n).to_vec(),
            std::slice::from_raw_parts(periods, n)
                .iter()
                .map(|&p| p != 0)
                .collect::<Vec<bool>>(),
        )
    };
    let mut inter: c_int = 1;
    let mut size: c_int = 0;
    // SAFETY: a communicator handle the program passed (not MPI_COMM_NULL); both
    // calls only write the ints (and return an error code for an invalid handle).
    let ok = unsafe {
        mpi::ffi::PMPI_Comm_test_inter(comm, &mut inter) == 0
            && mpi::ffi::PMPI_Comm_size(comm, &mut size) == 0
    };
    if !ok || inter != 0 {
        return None;
    }
    let positions = dims
        .iter()
        .try_fold(1i64, |acc, &d| (d >= 1).then(|| acc * i64::from(d)));
    (positions == Some(i64::from(size))).then_some((dims, periods))
}

/// `MPI_Cart_create`, interposed: see the crate documentation.
///
/// # Safety
/// MPI's own contract for `MPI_Cart_create`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Cart_create(
    comm_old: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    reorder: c_int,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    // SAFETY: the program's own arguments, passed on unchanged.
    let pass = || unsafe { PMPI_Cart_create(comm_old, ndims, dims, periods, reorder, comm_cart) };
    if reorder == 0 || comm_cart.is_null() || ACTIVE.with(Cell::get) {
        return pass();
    }
    // SAFETY: the program's arguments, as MPI requires them.
    let Some((d, p)) = (unsafe { grid_args(comm_old, ndims, dims, periods) }) else {
        return pass();
    };
    ACTIVE.with(|a| a.set(true));
    let decision = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a valid intra-communicator (checked by grid_args); not ours to free.
        let comm = unsafe { copr::transport::borrowed::borrow(comm_old) };
        decide(&comm, &d, &p)
    }));
    ACTIVE.with(|a| a.set(false));
    match decision {
        Ok(Decision::Split(key)) => {
            // SAFETY: the program's communicator; MPI writes the new handle.
            let mut split = unsafe { mpi::ffi::RSMPI_COMM_NULL };
            // SAFETY: as above; every process of comm_old takes this branch together.
            let rc = unsafe { PMPI_Comm_split(comm_old, 0, key, &mut split) };
            if rc != 0 {
                return pass();
            }
            // SAFETY: the program's grid on the split communicator, in the split's order.
            let rc = unsafe { PMPI_Cart_create(split, ndims, dims, periods, 0, comm_cart) };
            // SAFETY: the split is ours; the grid keeps its own reference.
            unsafe { PMPI_Comm_free(&mut split) };
            rc
        }
        Ok(Decision::Pass) => pass(),
        Err(_) => {
            let why = "internal error (a panic was caught)";
            write_log(&[format!("{why}; kept the MPI library's order")]);
            warn_fallback("MPI_Cart_create", why);
            pass()
        }
    }
}
