//! copr from C, C++ and Fortran: ScaLAPACK's redistribution routines on copr's
//! reshuffle engine, under copr's own names and with ScaLAPACK's arguments.
//!
//! | ScaLAPACK | copr, C style | copr, Fortran style |
//! |---|---|---|
//! | `Cp?gemr2d`, `p?gemr2d_` (s, d, c, z) | `copr_p?gemr2d` | `copr_p?gemr2d_` |
//! | `pstran_`, `pdtran_` | | `copr_pstran_`, `copr_pdtran_` |
//! | `p?tranu_`, `p?tranc_` (c, z) | | `copr_p?tranu_`, `copr_p?tranc_` |
//!
//! Beyond ScaLAPACK: `copr_pdgemr2d_batch` (several copies in one communication round),
//! `copr_pdgemr2d_relabel` (the whole target on its grid relabeled, the map returned),
//! and `copr_capi_calls()` (how many calls copr served). The crate `copr-scalapack`
//! builds `libcopr_scalapack.so`, which exports ScaLAPACK's own names on these entry
//! points, for programs linked against it ahead of ScaLAPACK or run with it in
//! `LD_PRELOAD`.
//!
//! The header `include/copr.h` is generated from these declarations by cbindgen
//! (`tests/header.rs` regenerates it and fails when the checked-in one differs); the
//! Fortran module `include/copr.f90` binds the Fortran-style entry points.
//!
//! Semantics are ScaLAPACK's: IA/JA are 1-based, every process passes its own
//! descriptor (LLD is its own), the target is the layout its descriptor gives (no
//! relabeling), and for `p?gemr2d` the two matrices may live on different BLACS
//! contexts and process counts under a context ICTXT that holds them both; a process
//! outside a matrix's grid passes that descriptor's CTXT as -1. The contexts are turned
//! into MPI communicators through BLACS (`Cblacs_get`, `Cblacs2sys_handle`,
//! `Cblacs_gridinfo`, `Cblacs_pnum`), so row-major, column-major and mapped grids all
//! work. Plans are kept per communicator (copr's `PlanCache`): a repeated call costs a
//! lookup and one small gather of the arguments besides the data's own round.
//!
//! Errors: a bad argument is reported on standard error, naming the routine, the
//! parameter (ScaLAPACK's number and name) and the value, and the call returns on
//! every process of the call without changing any data; ScaLAPACK aborts the program
//! instead. Nothing panics across the C boundary. `copr_capi_errors()` counts calls
//! that reported an error. A context that is not live on one process only is the
//! same error everywhere: that process joins the others' first collective on DESCC's
//! context (`p?tran`) or on `MPI_COMM_WORLD` (ICTXT; it meets them when ICTXT spans
//! every process in rank order), where it reports the error.
//!
//! What copr creates (a duplicate communicator per process group, its shared-memory
//! window) is freed at the start of `MPI_Finalize`, from the delete callback of an
//! attribute on `MPI_COMM_SELF`, group by group in the order of their
//! `MPI_COMM_WORLD` ranks, the same on every process.
//!
//! Everything is behind the feature `mpi` (Open MPI, and BLACS from Debian's
//! `libscalapack-openmpi`); without it the library is empty.

/// ScaLAPACK's single-precision complex number (its `complex`): real, imaginary.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CoprScomplex {
    /// Real part.
    pub r: f32,
    /// Imaginary part.
    pub i: f32,
}

/// ScaLAPACK's double-precision complex number (its `dcomplex`): real, imaginary.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CoprDcomplex {
    /// Real part.
    pub r: f64,
    /// Imaginary part.
    pub i: f64,
}

#[cfg(feature = "mpi")]
mod blacs;
#[cfg(feature = "mpi")]
pub mod comm;
#[cfg(feature = "mpi")]
mod descriptor;
#[cfg(feature = "mpi")]
pub mod exports;
#[cfg(feature = "mpi")]
mod presence;
#[cfg(feature = "mpi")]
mod redist;
pub mod routines;
#[cfg(feature = "mpi")]
pub mod shared;
#[cfg(feature = "mpi")]
mod state;
