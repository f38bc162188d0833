//! The Fortran entry points the recorder wraps: those of `mpif.h` and `use mpi`
//! (`mpi_send_`, gfortran's names) and of `use mpi_f08` (`mpi_send_f08_`), each
//! passing its arguments unchanged to the MPI library's profiling entry point
//! (`pmpi_send_`, `pmpi_send_f08_`; where the library has none, its own entry point of
//! the same name), found with `dlsym(RTLD_NEXT, …)` on first use so that programs
//! without the Fortran libraries load this library too.
//!
//! Open MPI's Fortran bindings call `PMPI_*` directly, so the C wrappers never see a
//! Fortran program's calls; MPICH's (`mpif.h`, `use mpi` and its own `use mpi_f08`
//! names, `mpi_send_f08ts_`) call the C entry points `MPI_*`, which are this
//! library's. Each call is counted once: by the C wrapper when the binding reaches it
//! (MPICH), else here after the call (Open MPI). Both binding styles pass every
//! integer and handle by reference (`use mpi_f08`'s handles are one-integer derived
//! types); handles are converted with `MPI_*_f2c` to count the call.
//!
//! # Limitation
//! Under Open MPI, Fortran's `MPI_IN_PLACE` is not recognised in the collectives:
//! their bytes are then those of the send arguments as given (under MPICH the C
//! wrapper counts them, after the binding has turned it into C's `MPI_IN_PLACE`).

#![allow(clippy::too_many_arguments)]

use std::ffi::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

use mpi::ffi::{
    MPI_Aint, MPI_Comm, MPI_Datatype, MPI_Request, RSMPI_Comm_f2c, RSMPI_Request_f2c,
    RSMPI_Type_f2c,
};

use super::c_api::{
    bytes_of, on_alltoall, on_finalize, on_init, on_neighbours, on_send, on_send_init, on_start,
    recorder_at_work, through_fortran,
};
use super::collectives::{self, Op};
use super::{comms, on, requests};

/// A Fortran integer.
type Fint = c_int;

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// glibc's `RTLD_NEXT`.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

/// The MPI library's entry point a wrapper calls, cached in `slot`: the next definition
/// of `name` (NUL-terminated, the profiling name `pmpi_…`) after this library's, or
/// where the library has none, the next definition of the wrapper's own name `own`
/// (MPICH names some `use mpi_f08` routines as Open MPI does, `mpi_init_f08_`, but
/// their profiling versions otherwise). Aborts with a message if there is neither (the
/// program called a Fortran entry point of an MPI library that is not loaded).
fn resolve(slot: &AtomicPtr<c_void>, name: &str, own: &str) -> *mut c_void {
    let p = slot.load(Relaxed);
    if !p.is_null() {
        return p;
    }
    let next = |symbol: &str| {
        // SAFETY: a NUL-terminated name; dlsym only reads it.
        unsafe { dlsym(RTLD_NEXT, symbol.as_ptr().cast::<c_char>()) }
    };
    let mut p = next(name);
    if p.is_null() {
        p = next(own);
    }
    if p.is_null() {
        eprintln!(
            "copr-interpose: {} is not in the MPI library loaded",
            name.trim_end_matches('\0')
        );
        std::process::abort();
    }
    slot.store(p, Relaxed);
    p
}

/// # Safety
/// `f` points to an int.
unsafe fn int(f: *const Fint) -> c_int {
    // SAFETY: the caller's guarantee.
    unsafe { *f }
}

/// # Safety
/// `f` points to a Fortran communicator handle.
unsafe fn comm(f: *const Fint) -> MPI_Comm {
    // SAFETY: the caller's guarantee; f2c maps any integer to a handle or null.
    unsafe { RSMPI_Comm_f2c(*f) }
}

/// # Safety
/// `f` points to a Fortran datatype handle.
unsafe fn datatype(f: *const Fint) -> MPI_Datatype {
    // SAFETY: the caller's guarantee.
    unsafe { RSMPI_Type_f2c(*f) }
}

/// # Safety
/// `f` points to a Fortran request handle.
unsafe fn request(f: *const Fint) -> MPI_Request {
    // SAFETY: the caller's guarantee.
    unsafe { RSMPI_Request_f2c(*f) }
}

/// Whether the call succeeded (an omitted `ierror` of `use mpi_f08` counts as yes:
/// errors then abort by default).
///
/// # Safety
/// `ierr` is null or points to an int.
unsafe fn succeeded(ierr: *const Fint) -> bool {
    // SAFETY: the caller's guarantee.
    ierr.is_null() || unsafe { *ierr } == 0
}

/// Defines, for each entry, the `mpif.h` wrapper and the `mpi_f08` one: `pre` runs
/// before the call (when recording), `post` after it when it succeeded. Entries of the
/// same arguments and counting share one bracketed list of names.
macro_rules! fortran {
    ($(
        [$($name:ident, $f08:ident => $target:literal, $target08:literal);+ $(;)?]
        $args:tt
        pre $pre:block post $post:block
    )*) => {$($(
        fortran!(@one $name, $target, $args, $pre, $post);
        fortran!(@one $f08, $target08, $args, $pre, $post);
    )+)*};
    (@one $name:ident, $target:literal, ($($arg:ident : $ty:ty),* ; $ierr:ident), $pre:block, $post:block) => {
        #[doc = concat!("`", stringify!($name), "`, counted; calls `", $target, "`.")]
        ///
        /// # Safety
        /// MPI's own contract.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* $ierr: *mut Fint) {
            type Target = unsafe extern "C" fn($($ty,)* *mut Fint);
            static TARGET: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
            let target = resolve(
                &TARGET,
                concat!($target, "\0"),
                concat!(stringify!($name), "\0"),
            );
            // SAFETY: the MPI library's entry point of this very signature.
            let target = unsafe { std::mem::transmute::<*mut c_void, Target>(target) };
            let rec = recorder_at_work();
            if rec {
                // SAFETY: the program's arguments, as MPI requires them.
                #[allow(unused_unsafe)]
                unsafe { $pre }
            }
            // SAFETY: the program's arguments, passed on unchanged.
            let counted = through_fortran(|| unsafe { target($($arg,)* $ierr) });
            // SAFETY: as above.
            if rec && !counted && unsafe { succeeded($ierr) } {
                // SAFETY: as above.
                #[allow(unused_unsafe)]
                unsafe { $post }
            }
        }
    };
}

type I = *const Fint;
type Buf = *mut c_void;

fortran! {
    [
        mpi_send_, mpi_send_f08_ => "pmpi_send_", "pmpi_send_f08_";
        mpi_ssend_, mpi_ssend_f08_ => "pmpi_ssend_", "pmpi_ssend_f08_";
        mpi_bsend_, mpi_bsend_f08_ => "pmpi_bsend_", "pmpi_bsend_f08_";
        mpi_rsend_, mpi_rsend_f08_ => "pmpi_rsend_", "pmpi_rsend_f08_";
    ]
    (buf: Buf, count: I, dt: I, dest: I, tag: I, cm: I; ierr)
    pre {} post { on_send(int(count), datatype(dt), int(dest), comm(cm)) }
    [
        mpi_isend_, mpi_isend_f08_ => "pmpi_isend_", "pmpi_isend_f08_";
        mpi_issend_, mpi_issend_f08_ => "pmpi_issend_", "pmpi_issend_f08_";
        mpi_ibsend_, mpi_ibsend_f08_ => "pmpi_ibsend_", "pmpi_ibsend_f08_";
        mpi_irsend_, mpi_irsend_f08_ => "pmpi_irsend_", "pmpi_irsend_f08_";
    ]
    (buf: Buf, count: I, dt: I, dest: I, tag: I, cm: I, req: *mut Fint; ierr)
    pre {} post { on_send(int(count), datatype(dt), int(dest), comm(cm)) }
    [
        mpi_send_init_, mpi_send_init_f08_ => "pmpi_send_init_", "pmpi_send_init_f08_";
        mpi_ssend_init_, mpi_ssend_init_f08_ => "pmpi_ssend_init_", "pmpi_ssend_init_f08_";
        mpi_bsend_init_, mpi_bsend_init_f08_ => "pmpi_bsend_init_", "pmpi_bsend_init_f08_";
        mpi_rsend_init_, mpi_rsend_init_f08_ => "pmpi_rsend_init_", "pmpi_rsend_init_f08_";
    ]
    (buf: Buf, count: I, dt: I, dest: I, tag: I, cm: I, req: *mut Fint; ierr)
    pre {} post { on_send_init(int(count), datatype(dt), int(dest), comm(cm), request(req)) }
    [mpi_start_, mpi_start_f08_ => "pmpi_start_", "pmpi_start_f08_"]
    (req: *mut Fint; ierr)
    pre {} post { on_start(request(req)) }
    [mpi_startall_, mpi_startall_f08_ => "pmpi_startall_", "pmpi_startall_f08_"]
    (count: I, reqs: *mut Fint; ierr)
    pre {} post {
        for i in 0..int(count).max(0) as usize {
            on_start(request(reqs.add(i)));
        }
    }
    [mpi_sendrecv_, mpi_sendrecv_f08_ => "pmpi_sendrecv_", "pmpi_sendrecv_f08_"]
    (sbuf: Buf, scount: I, stype: I, dest: I, stag: I, rbuf: Buf, rcount: I, rtype: I,
     source: I, rtag: I, cm: I, status: *mut Fint; ierr)
    pre {} post { on_send(int(scount), datatype(stype), int(dest), comm(cm)) }
    [mpi_sendrecv_replace_, mpi_sendrecv_replace_f08_ => "pmpi_sendrecv_replace_", "pmpi_sendrecv_replace_f08_"]
    (buf: Buf, count: I, dt: I, dest: I, stag: I, source: I, rtag: I, cm: I,
     status: *mut Fint; ierr)
    pre {} post { on_send(int(count), datatype(dt), int(dest), comm(cm)) }
    [
        mpi_neighbor_allgather_, mpi_neighbor_allgather_f08_ => "pmpi_neighbor_allgather_", "pmpi_neighbor_allgather_f08_";
        mpi_neighbor_alltoall_, mpi_neighbor_alltoall_f08_ => "pmpi_neighbor_alltoall_", "pmpi_neighbor_alltoall_f08_";
    ]
    (sbuf: Buf, scount: I, stype: I, rbuf: Buf, rcount: I, rtype: I, cm: I; ierr)
    pre {} post { let b = bytes_of(int(scount), datatype(stype)); on_neighbours(comm(cm), |_| b) }
    [
        mpi_ineighbor_allgather_, mpi_ineighbor_allgather_f08_ => "pmpi_ineighbor_allgather_", "pmpi_ineighbor_allgather_f08_";
        mpi_ineighbor_alltoall_, mpi_ineighbor_alltoall_f08_ => "pmpi_ineighbor_alltoall_", "pmpi_ineighbor_alltoall_f08_";
    ]
    (sbuf: Buf, scount: I, stype: I, rbuf: Buf, rcount: I, rtype: I, cm: I,
     req: *mut Fint; ierr)
    pre {} post { let b = bytes_of(int(scount), datatype(stype)); on_neighbours(comm(cm), |_| b) }
    [mpi_neighbor_allgatherv_, mpi_neighbor_allgatherv_f08_ => "pmpi_neighbor_allgatherv_", "pmpi_neighbor_allgatherv_f08_"]
    (sbuf: Buf, scount: I, stype: I, rbuf: Buf, rcounts: I, displs: I, rtype: I, cm: I; ierr)
    pre {} post { let b = bytes_of(int(scount), datatype(stype)); on_neighbours(comm(cm), |_| b) }
    [mpi_ineighbor_allgatherv_, mpi_ineighbor_allgatherv_f08_ => "pmpi_ineighbor_allgatherv_", "pmpi_ineighbor_allgatherv_f08_"]
    (sbuf: Buf, scount: I, stype: I, rbuf: Buf, rcounts: I, displs: I, rtype: I, cm: I,
     req: *mut Fint; ierr)
    pre {} post { let b = bytes_of(int(scount), datatype(stype)); on_neighbours(comm(cm), |_| b) }
    [mpi_neighbor_alltoallv_, mpi_neighbor_alltoallv_f08_ => "pmpi_neighbor_alltoallv_", "pmpi_neighbor_alltoallv_f08_"]
    (sbuf: Buf, scounts: I, sdispls: I, stype: I, rbuf: Buf, rcounts: I, rdispls: I,
     rtype: I, cm: I; ierr)
    pre {} post {
        let t = datatype(stype);
        on_neighbours(comm(cm), |i| bytes_of(*scounts.add(i), t))
    }
    [mpi_ineighbor_alltoallv_, mpi_ineighbor_alltoallv_f08_ => "pmpi_ineighbor_alltoallv_", "pmpi_ineighbor_alltoallv_f08_"]
    (sbuf: Buf, scounts: I, sdispls: I, stype: I, rbuf: Buf, rcounts: I, rdispls: I,
     rtype: I, cm: I, req: *mut Fint; ierr)
    pre {} post {
        let t = datatype(stype);
        on_neighbours(comm(cm), |i| bytes_of(*scounts.add(i), t))
    }
    [mpi_neighbor_alltoallw_, mpi_neighbor_alltoallw_f08_ => "pmpi_neighbor_alltoallw_", "pmpi_neighbor_alltoallw_f08_"]
    (sbuf: Buf, scounts: I, sdispls: *const MPI_Aint, stypes: I, rbuf: Buf, rcounts: I,
     rdispls: *const MPI_Aint, rtypes: I, cm: I; ierr)
    pre {} post {
        on_neighbours(comm(cm), |i| bytes_of(*scounts.add(i), datatype(stypes.add(i))))
    }
    [mpi_ineighbor_alltoallw_, mpi_ineighbor_alltoallw_f08_ => "pmpi_ineighbor_alltoallw_", "pmpi_ineighbor_alltoallw_f08_"]
    (sbuf: Buf, scounts: I, sdispls: *const MPI_Aint, stypes: I, rbuf: Buf, rcounts: I,
     rdispls: *const MPI_Aint, rtypes: I, cm: I, req: *mut Fint; ierr)
    pre {} post {
        on_neighbours(comm(cm), |i| bytes_of(*scounts.add(i), datatype(stypes.add(i))))
    }
    [mpi_request_free_, mpi_request_free_f08_ => "pmpi_request_free_", "pmpi_request_free_f08_"]
    (req: *mut Fint; ierr)
    pre { requests::forget(request(req)) } post {}
    [mpi_comm_free_, mpi_comm_free_f08_ => "pmpi_comm_free_", "pmpi_comm_free_f08_"]
    (cm: *mut Fint; ierr)
    pre { comms::forget(comm(cm)) } post {}
    [mpi_barrier_, mpi_barrier_f08_ => "pmpi_barrier_", "pmpi_barrier_f08_"]
    (cm: I; ierr)
    pre {} post { collectives::add(Op::Barrier, comm(cm), 0) }
    [mpi_bcast_, mpi_bcast_f08_ => "pmpi_bcast_", "pmpi_bcast_f08_"]
    (buf: Buf, count: I, dt: I, root: I, cm: I; ierr)
    pre {} post {
        let c = comm(cm);
        let mut r: c_int = -1;
        mpi::ffi::PMPI_Comm_rank(c, &mut r);
        let b = if r == int(root) { bytes_of(int(count), datatype(dt)) } else { 0 };
        collectives::add(Op::Bcast, c, b)
    }
    [mpi_reduce_, mpi_reduce_f08_ => "pmpi_reduce_", "pmpi_reduce_f08_"]
    (sbuf: Buf, rbuf: Buf, count: I, dt: I, op: I, root: I, cm: I; ierr)
    pre {} post { collectives::add(Op::Reduce, comm(cm), bytes_of(int(count), datatype(dt))) }
    [mpi_allreduce_, mpi_allreduce_f08_ => "pmpi_allreduce_", "pmpi_allreduce_f08_"]
    (sbuf: Buf, rbuf: Buf, count: I, dt: I, op: I, cm: I; ierr)
    pre {} post { collectives::add(Op::Allreduce, comm(cm), bytes_of(int(count), datatype(dt))) }
    [mpi_gather_, mpi_gather_f08_ => "pmpi_gather_", "pmpi_gather_f08_"]
    (sbuf: Buf, scount: I, stype: I, rbuf: Buf, rcount: I, rtype: I, root: I, cm: I; ierr)
    pre {} post { collectives::add(Op::Gather, comm(cm), bytes_of(int(scount), datatype(stype))) }
    [mpi_allgather_, mpi_allgather_f08_ => "pmpi_allgather_", "pmpi_allgather_f08_"]
    (sbuf: Buf, scount: I, stype: I, rbuf: Buf, rcount: I, rtype: I, cm: I; ierr)
    pre {} post {
        collectives::add(Op::Allgather, comm(cm), bytes_of(int(scount), datatype(stype)))
    }
    [mpi_alltoall_, mpi_alltoall_f08_ => "pmpi_alltoall_", "pmpi_alltoall_f08_"]
    (sbuf: Buf, scount: I, stype: I, rbuf: Buf, rcount: I, rtype: I, cm: I; ierr)
    pre {} post {
        let c = comm(cm);
        let each = bytes_of(int(scount), datatype(stype));
        collectives::add(Op::Alltoall, c, each * comms::peers(c) as u64);
        on_alltoall(c, |_| each)
    }
    [mpi_alltoallv_, mpi_alltoallv_f08_ => "pmpi_alltoallv_", "pmpi_alltoallv_f08_"]
    (sbuf: Buf, scounts: I, sdispls: I, stype: I, rbuf: Buf, rcounts: I, rdispls: I,
     rtype: I, cm: I; ierr)
    pre {} post {
        let c = comm(cm);
        let t = datatype(stype);
        let b = (0..comms::peers(c)).map(|i| bytes_of(*scounts.add(i), t)).sum();
        collectives::add(Op::Alltoallv, c, b);
        on_alltoall(c, |i| bytes_of(*scounts.add(i), t))
    }
}

/// The Fortran `MPI_Init` and `MPI_Init_thread` (both bindings) and `MPI_Finalize`.
macro_rules! fortran_init {
    ($($name:ident => $target:literal ($($arg:ident : $ty:ty),*) $finalize:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`, wrapped; calls `", $target, "`.")]
        ///
        /// # Safety
        /// MPI's own contract.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* ierr: *mut Fint) {
            type Target = unsafe extern "C" fn($($ty,)* *mut Fint);
            static TARGET: AtomicPtr<c_void> = AtomicPtr::new(null_mut());
            let target = resolve(
                &TARGET,
                concat!($target, "\0"),
                concat!(stringify!($name), "\0"),
            );
            // SAFETY: the MPI library's entry point of this very signature.
            let target = unsafe { std::mem::transmute::<*mut c_void, Target>(target) };
            if $finalize {
                on_finalize();
            }
            // SAFETY: the program's arguments, passed on unchanged.
            let counted = through_fortran(|| unsafe { target($($arg,)* ierr) });
            // SAFETY: as above.
            if !$finalize && !counted && unsafe { succeeded(ierr) } && on() {
                on_init();
            }
        }
    )*};
}

fortran_init! {
    mpi_init_ => "pmpi_init_" () false;
    mpi_init_f08_ => "pmpi_init_f08_" () false;
    mpi_init_thread_ => "pmpi_init_thread_" (required: I, provided: *mut Fint) false;
    mpi_init_thread_f08_ => "pmpi_init_thread_f08_" (required: I, provided: *mut Fint) false;
    mpi_finalize_ => "pmpi_finalize_" () true;
    mpi_finalize_f08_ => "pmpi_finalize_f08_" () true;
}
