//! ScaLAPACK's redistribution routines under **their own names**, on copr's engine:
//! `libcopr_scalapack.so` exports
//!
//! | C style (integers by value) | Fortran style (every argument by reference) |
//! |---|---|
//! | `Cpsgemr2d`, `Cpdgemr2d`, `Cpcgemr2d`, `Cpzgemr2d` | `psgemr2d_`, `pdgemr2d_`, `pcgemr2d_`, `pzgemr2d_` |
//! | | `pstran_`, `pdtran_`, `pctranu_`, `pctranc_`, `pztranu_`, `pztranc_` |
//!
//! with ScaLAPACK's argument lists (as Debian's `libscalapack-openmpi` exports them),
//! each calling the `copr_`-prefixed entry point of the crate `copr-capi`, which this
//! library contains whole (its `copr_*` functions are exported here too). An
//! unmodified program gets copr's engine for these calls by linking this library
//! ahead of ScaLAPACK,
//!
//! ```text
//! mpicc prog.c -L<dir> -lcopr_scalapack -lscalapack-openmpi -Wl,-rpath,<dir>
//! ```
//!
//! or, without relinking, by preloading it:
//! `mpirun -x LD_PRELOAD=<dir>/libcopr_scalapack.so -n 4 prog`. ScaLAPACK's own
//! routines that call these names (its `pdgemr2d_` calls `Cpdgemr2d`) then reach
//! copr's as well. Results are ScaLAPACK's, element by element; a bad argument is
//! reported on standard error under the `copr_` name of the routine that ran, and the
//! call returns without changing anything (where ScaLAPACK aborts).
//! `copr_capi_calls()` (from this library) counts the calls copr served.
//!
//! Everything is behind the feature `mpi`; without it the library is empty.

#[cfg(feature = "mpi")]
pub mod routines;
