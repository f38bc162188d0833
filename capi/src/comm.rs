//! copr's process mapping as MPI communicators, for C and Fortran: the grid positions
//! of a Cartesian grid placed by copr's mapper on the machine the job runs on.
//!
//! - [`copr_cart_create`]: what `MPI_Cart_create(comm, ndims, dims, periods, 1,
//!   comm_cart)` would return if the MPI library reordered ranks: a Cartesian
//!   communicator in which the process holding grid position `t` (row-major, last
//!   dimension fastest) is the one copr's mapping puts there;
//! - [`copr_comm_reorder`]: the same order as a plain communicator (rank `t` of the new
//!   communicator takes grid position `t`), for codes that build their grid themselves
//!   (a BLACS grid, say);
//! - `copr_cart_create_f`, `copr_comm_reorder_f`: the same with Fortran handles
//!   (`MPI_Fint`, every argument by reference), bound by the Fortran module.
//!
//! The machine: a machine file (`machine`, as `copr map --machine` reads, with at least
//! as many slots as `comm` has ranks, the ranks on them in order), or, when `machine` is NULL
//! or empty, what the environment names (`COPR_MACHINE`, `COPR_PLACEMENT`,
//! `COPR_EMULATE_NODE_SIZE`), or else the nodes found at run time. Every message of
//! the grid weighs the same. copr computes the mapping on rank 0 (every baseline and
//! the optimiser, as `copr map`) and keeps it only if it beats the order the ranks have;
//! otherwise the result is in `comm`'s order.
//!
//! Errors: a nonzero return (on every process of `comm`), a one-line message on
//! standard error from rank 0 of `comm` (and from each process whose own arguments are
//! wrong when others' are right), and `MPI_COMM_NULL` in the output; nothing panics
//! across the C boundary.

use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use copr_mapping::mpi::{cart_create, grid_pattern, plan_mapping, reorder, MachineSource};
use copr_mapping::Options;
use mpi::ffi::MPI_Comm;
use mpi::raw::AsRaw;
use mpi::topology::Communicator;
use mpi::traits::CommunicatorCollectives;

/// A Fortran MPI handle (`MPI_Fint` of `mpi.h`: an `int` in Open MPI and MPICH).
#[allow(non_camel_case_types)]
pub type MPI_Fint = c_int;

/// Bytes of every grid message in the mapping's pattern (only ratios matter).
const GRID_MESSAGE_BYTES: u64 = 1 << 20;

/// Return code of a call that reported an error.
const FAILED: c_int = 1;

/// What to return: a plain or a Cartesian communicator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reorder,
    Cart,
}

/// One of the entry points: the name its messages carry, and what it returns.
#[derive(Clone, Copy)]
struct Entry {
    name: &'static str,
    kind: Kind,
}

impl Entry {
    const fn new(name: &'static str, kind: Kind) -> Self {
        Self { name, kind }
    }
}

const CART_CREATE: Entry = Entry::new("copr_cart_create", Kind::Cart);
const COMM_REORDER: Entry = Entry::new("copr_comm_reorder", Kind::Reorder);
const CART_CREATE_F: Entry = Entry::new("copr_cart_create_f", Kind::Cart);
const COMM_REORDER_F: Entry = Entry::new("copr_comm_reorder_f", Kind::Reorder);

/// An error and whether this process prints it (rank 0 of the communicator prints
/// the common verdict; a process whose own arguments are wrong prints its own).
struct Failure {
    message: String,
    print: bool,
}

/// The work of both entry points, on Rust values. `Ok(raw)` is the new communicator.
///
/// # Safety
/// `comm` is a valid intra-communicator of which this process is a member; `dims` and
/// `periods` point to `ndims` ints when `ndims > 0`; `machine` is NULL or a
/// NUL-terminated string.
unsafe fn make(
    kind: Kind,
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    machine: *const c_char,
) -> Result<MPI_Comm, Failure> {
    // SAFETY: the caller's guarantee; ManuallyDrop, as the handle is not ours to free.
    let comm = unsafe { copr::transport::borrowed::borrow(comm) };
    let n = usize::try_from(ndims).unwrap_or(0);
    let (dims, periods): (Vec<i32>, Vec<bool>) = if n == 0 || dims.is_null() || periods.is_null() {
        (Vec::new(), Vec::new())
    } else {
        // SAFETY: the caller's guarantee: ndims ints each.
        unsafe {
            (
                std::slice::from_raw_parts(dims, n).to_vec(),
                std::slice::from_raw_parts(periods, n)
                    .iter()
                    .map(|&p| p != 0)
                    .collect(),
            )
        }
    };
    let source = if machine.is_null() {
        None
    } else {
        // SAFETY: the caller's guarantee: a NUL-terminated string.
        let s = unsafe { CStr::from_ptr(machine) };
        (!s.to_bytes().is_empty()).then(|| PathBuf::from(s.to_string_lossy().into_owned()))
    };
    let source = match source {
        Some(f) => Ok(MachineSource::File(f)),
        None => MachineSource::from_env(),
    };
    // argument errors of one process must reach every process: the grid's checks run
    // on each, and plan_mapping agrees on everything before it communicates further
    let local = if ndims < 1 {
        Err(format!(
            "ndims = {ndims}; a grid needs at least one dimension"
        ))
    } else if dims.is_empty() {
        Err("dims or periods is NULL".to_string())
    } else {
        source.map_err(|e| e.to_string()).and_then(|s| {
            grid_pattern(&dims, &periods, GRID_MESSAGE_BYTES)
                .map(|p| (s, p))
                .map_err(|e| e.to_string())
        })
    };
    let p = comm.size() as usize;
    let mut failed = vec![0u8; p];
    comm.all_gather_into(&u8::from(local.is_err()), &mut failed[..]);
    let root = comm.rank() == 0;
    let common = |e: copr::Error| Failure {
        message: e.to_string(),
        print: root,
    };
    let everywhere = failed.iter().all(|&f| f != 0);
    let (source, pattern) = match local {
        // the same mistake everywhere is reported once
        Err(message) => {
            return Err(Failure {
                message,
                print: root || !everywhere,
            })
        }
        Ok(_) if failed.iter().any(|&f| f != 0) => {
            let r = failed.iter().position(|&f| f != 0).unwrap_or(0);
            return Err(Failure {
                message: format!("rank {r} passed bad arguments"),
                print: root,
            });
        }
        Ok(v) => v,
    };
    let planned = plan_mapping(&*comm, &pattern, &source, &Options::default()).map_err(common)?;
    let out = match kind {
        Kind::Reorder => reorder(&*comm, &planned.ranks).map(|c| {
            let raw = c.as_raw();
            std::mem::forget(c);
            raw
        }),
        Kind::Cart => cart_create(&*comm, &dims, &periods, &planned.ranks).map(|c| {
            let raw = c.as_raw();
            std::mem::forget(c);
            raw
        }),
    };
    out.map_err(common)
}

/// Runs [`make`] behind the C boundary: a panic becomes an error, an error a message on
/// standard error, a nonzero return and `MPI_COMM_NULL`.
///
/// # Safety
/// As [`make`]; `out` is NULL or points to a writable `MPI_Comm`.
unsafe fn entry(
    Entry { name, kind }: Entry,
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    machine: *const c_char,
    out: *mut MPI_Comm,
) -> c_int {
    if out.is_null() {
        eprintln!("{name}: the output communicator pointer is NULL");
        return FAILED;
    }
    // SAFETY: RSMPI_COMM_NULL is a constant of the MPI library.
    let null = unsafe { mpi::ffi::RSMPI_COMM_NULL };
    // SAFETY: checked above: a writable MPI_Comm.
    unsafe { *out = null };
    if comm == null {
        eprintln!("{name}: comm is MPI_COMM_NULL");
        return FAILED;
    }
    // SAFETY: the caller's guarantee.
    let run = catch_unwind(AssertUnwindSafe(|| unsafe {
        make(kind, comm, ndims, dims, periods, machine)
    }));
    match run {
        Ok(Ok(c)) => {
            // SAFETY: checked above.
            unsafe { *out = c };
            0
        }
        Ok(Err(e)) => {
            if e.print {
                eprintln!("{name}: {}", e.message);
            }
            FAILED
        }
        Err(_) => {
            eprintln!("{name}: internal error (a panic was caught); no communicator made");
            FAILED
        }
    }
}

/// Collective over `comm`: a Cartesian communicator for the grid `dims` (`periods`: 1
/// where the dimension wraps around) whose grid positions are placed by copr's mapping
/// on the machine `machine` (a machine file; NULL or "" for the environment's or the
/// one found at run time). Returns 0 and the communicator in `*comm_cart`, or nonzero
/// with `*comm_cart = MPI_COMM_NULL` and a one-line message on standard error.
///
/// `Π dims` must equal the size of `comm` (grids of 1 to 3 dimensions).
///
/// # Safety
/// `comm` is a valid intra-communicator of which this process is a member, or
/// `MPI_COMM_NULL`; `dims` and `periods` point to `ndims` ints (or are NULL);
/// `machine` is NULL or NUL-terminated; `comm_cart` points to a writable `MPI_Comm`.
/// Every process of `comm` makes the call with the same grid.
#[no_mangle]
pub unsafe extern "C" fn copr_cart_create(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    machine: *const c_char,
    comm_cart: *mut MPI_Comm,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { entry(CART_CREATE, comm, ndims, dims, periods, machine, comm_cart) }
}

/// Collective over `comm`: `comm` renumbered so that rank `t` of `*newcomm` takes
/// position `t` of the grid `dims` (row-major) as copr's mapping places it, without a
/// Cartesian topology. Arguments, return and errors as [`copr_cart_create`].
///
/// # Safety
/// As [`copr_cart_create`].
#[no_mangle]
pub unsafe extern "C" fn copr_comm_reorder(
    comm: MPI_Comm,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    machine: *const c_char,
    newcomm: *mut MPI_Comm,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { entry(COMM_REORDER, comm, ndims, dims, periods, machine, newcomm) }
}

/// The Fortran handles' form of both entry points: the handle converted, then
/// [`entry`].
///
/// # Safety
/// Every pointer is valid as its C counterpart's contract says.
unsafe fn fortran(
    e: Entry,
    comm: *const MPI_Fint,
    ndims: *const c_int,
    dims: *const c_int,
    periods: *const c_int,
    machine: *const c_char,
    out: *mut MPI_Fint,
) -> c_int {
    if comm.is_null() || ndims.is_null() || out.is_null() {
        eprintln!("{}: comm, ndims or the output handle is not given", e.name);
        return FAILED;
    }
    // SAFETY: checked non-NULL; the caller's contract. MPI_Comm_f2c/c2f convert handles.
    unsafe {
        let c = mpi::ffi::MPI_Comm_f2c(*comm);
        let mut made = mpi::ffi::RSMPI_COMM_NULL;
        let rc = entry(e, c, *ndims, dims, periods, machine, &mut made);
        *out = mpi::ffi::MPI_Comm_c2f(made);
        rc
    }
}

/// [`copr_cart_create`] with Fortran handles (`use mpi` / `mpif.h` integers), every
/// argument by reference; `machine` is a NUL-terminated string (`c_null_char` alone
/// for none). Bound by the Fortran module as `copr_cart_create_f`.
///
/// # Safety
/// As [`copr_cart_create`], with `comm` and `ndims` pointing to one int each and
/// `comm_cart` to a writable one.
#[no_mangle]
pub unsafe extern "C" fn copr_cart_create_f(
    comm: *const MPI_Fint,
    ndims: *const c_int,
    dims: *const c_int,
    periods: *const c_int,
    machine: *const c_char,
    comm_cart: *mut MPI_Fint,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        fortran(
            CART_CREATE_F,
            comm,
            ndims,
            dims,
            periods,
            machine,
            comm_cart,
        )
    }
}

/// [`copr_comm_reorder`] with Fortran handles, as [`copr_cart_create_f`].
///
/// # Safety
/// As [`copr_cart_create_f`].
#[no_mangle]
pub unsafe extern "C" fn copr_comm_reorder_f(
    comm: *const MPI_Fint,
    ndims: *const c_int,
    dims: *const c_int,
    periods: *const c_int,
    machine: *const c_char,
    newcomm: *mut MPI_Fint,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { fortran(COMM_REORDER_F, comm, ndims, dims, periods, machine, newcomm) }
}
