//! The few BLACS calls that turn a context into an MPI communicator and a grid
//! position (from Debian's `libscalapack-openmpi`, which contains BLACS).

use std::ffi::c_int;

use mpi::ffi::MPI_Comm;

/// `Cblacs_get`'s WHAT for "the system handle of the communicator behind this context".
const SGET_BLACSCONTXT: c_int = 10;

#[link(name = "scalapack-openmpi")]
extern "C" {
    fn Cblacs_get(context: c_int, what: c_int, val: *mut c_int);
    fn Cblacs2sys_handle(sys_handle: c_int) -> MPI_Comm;
    fn Cblacs_gridinfo(
        context: c_int,
        nprow: *mut c_int,
        npcol: *mut c_int,
        myrow: *mut c_int,
        mycol: *mut c_int,
    );
    fn Cblacs_pnum(context: c_int, prow: c_int, pcol: c_int) -> c_int;
}

/// A BLACS grid as this process sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GridInfo {
    /// Process rows and columns.
    pub(crate) p: i32,
    pub(crate) q: i32,
    /// This process's row and column; `None` if it is not in the grid.
    pub(crate) me: Option<(i32, i32)>,
}

/// The grid of `context`, or `None` if the handle is not a live BLACS context (BLACS
/// itself answers -1 for both: a handle out of range or released).
pub(crate) fn gridinfo(context: c_int) -> Option<GridInfo> {
    let (mut p, mut q, mut r, mut c) = (-1, -1, -1, -1);
    // SAFETY: Cblacs_gridinfo checks the handle itself and only writes the four ints.
    unsafe { Cblacs_gridinfo(context, &mut p, &mut q, &mut r, &mut c) };
    if p < 1 || q < 1 {
        return None;
    }
    let me = (r >= 0 && r < p && c >= 0 && c < q).then_some((r, c));
    Some(GridInfo { p, q, me })
}

/// The MPI communicator behind a live context: BLACS builds every grid on its own
/// communicator in which the process at (row, col) has rank `Cblacs_pnum(row, col)`
/// (row-major, whatever order or map the grid was made with). It belongs to BLACS:
/// copr duplicates it and never frees it.
///
/// # Safety
/// `context` must be a live context (checked with [`gridinfo`]) of which this process
/// is a member: BLACS does not check the handle here.
pub(crate) unsafe fn communicator(context: c_int) -> MPI_Comm {
    let mut handle: c_int = -1;
    // SAFETY: the caller guarantees a live context, which Cblacs_get then reads.
    unsafe {
        Cblacs_get(context, SGET_BLACSCONTXT, &mut handle);
        Cblacs2sys_handle(handle)
    }
}

/// Rank of grid position (row, col) in the communicator of [`communicator`].
///
/// # Safety
/// As [`communicator`].
pub(crate) unsafe fn pnum(context: c_int, row: i32, col: i32) -> i32 {
    // SAFETY: as the caller guarantees, a live context.
    unsafe { Cblacs_pnum(context, row, col) }
}
