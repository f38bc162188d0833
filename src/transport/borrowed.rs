//! Communicators a C or Fortran caller hands over as raw `MPI_Comm` handles.
//!
//! rsmpi's `FromRaw::from_raw` refuses the predefined handles (`MPI_COMM_WORLD`,
//! `MPI_COMM_SELF`) with debug assertions, because it keeps its own values for them. The
//! C entry points and the interposer receive exactly such handles from programs (a grid
//! is most often built on `MPI_COMM_WORLD`), so they borrow them through [`borrow`].

use std::mem::ManuallyDrop;

use mpi::ffi::MPI_Comm;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;

/// The caller's intra-communicator `raw` as an rsmpi communicator that is never freed
/// here: `MPI_COMM_WORLD` and `MPI_COMM_SELF` become rsmpi's own world and self
/// communicators, any other handle is wrapped as it is.
///
/// # Safety
/// `raw` is a live intra-communicator (not `MPI_COMM_NULL`, not an inter-communicator)
/// that outlives the value returned.
pub unsafe fn borrow(raw: MPI_Comm) -> ManuallyDrop<SimpleCommunicator> {
    // SAFETY: reading the MPI library's predefined handles, set at link time.
    let (world, own) = unsafe { (mpi::ffi::RSMPI_COMM_WORLD, mpi::ffi::RSMPI_COMM_SELF) };
    ManuallyDrop::new(if raw == world {
        SimpleCommunicator::world()
    } else if raw == own {
        SimpleCommunicator::self_comm()
    } else {
        // SAFETY: the caller's guarantee; not a predefined handle.
        unsafe { SimpleCommunicator::from_raw(raw) }
    })
}
