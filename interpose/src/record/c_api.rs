//! The C entry points the recorder wraps (exported unmangled, for `LD_PRELOAD`), and
//! the events they and the Fortran ones report.
//!
//! Each wrapper calls its `PMPI_` routine with the program's own arguments and, when
//! the call succeeded and the recorder is on, counts it. Calls made by the interposer
//! itself (while it maps a grid) are not counted.

#![allow(clippy::too_many_arguments)]

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};

use mpi::ffi::{
    MPI_Aint, MPI_Comm, MPI_Count, MPI_Datatype, MPI_Op, MPI_Request, MPI_Status, PMPI_Allgather,
    PMPI_Allreduce, PMPI_Alltoall, PMPI_Alltoallv, PMPI_Barrier, PMPI_Bcast, PMPI_Bsend,
    PMPI_Bsend_init, PMPI_Comm_free, PMPI_Comm_rank, PMPI_Finalize, PMPI_Gather, PMPI_Ibsend,
    PMPI_Ineighbor_allgather, PMPI_Ineighbor_allgatherv, PMPI_Ineighbor_alltoall,
    PMPI_Ineighbor_alltoallv, PMPI_Ineighbor_alltoallw, PMPI_Init, PMPI_Init_thread, PMPI_Irsend,
    PMPI_Isend, PMPI_Issend, PMPI_Neighbor_allgather, PMPI_Neighbor_allgatherv,
    PMPI_Neighbor_alltoall, PMPI_Neighbor_alltoallv, PMPI_Neighbor_alltoallw, PMPI_Reduce,
    PMPI_Request_free, PMPI_Rsend, PMPI_Rsend_init, PMPI_Send, PMPI_Send_init, PMPI_Sendrecv,
    PMPI_Sendrecv_replace, PMPI_Ssend, PMPI_Ssend_init, PMPI_Start, PMPI_Startall,
    PMPI_Type_size_x,
};

use super::collectives::{self, Op};
use super::{comms, finalize, on, requests, table};
use crate::abi::IN_PLACE;
use crate::cart::ACTIVE;

/// No Fortran wrapper of this library is running on this thread.
const NO_FORTRAN: u8 = 0;
/// A Fortran wrapper is running on this thread, and no C wrapper counted its call yet.
const IN_FORTRAN: u8 = 1;
/// A Fortran wrapper is running on this thread, and a C wrapper counted its call.
const COUNTED_IN_C: u8 = 2;

thread_local! {
    /// Where the Fortran wrapper running on this thread is: MPICH's Fortran bindings
    /// call the C entry points (`MPI_Send`, which are this library's), Open MPI's call
    /// `PMPI_*`; a call is counted by the C wrapper when it is reached, else by the
    /// Fortran one, never twice.
    static FORTRAN: Cell<u8> = const { Cell::new(NO_FORTRAN) };
}

/// Whether the recorder is on and the interposer is not at work.
#[inline]
pub(super) fn recorder_at_work() -> bool {
    on() && !ACTIVE.with(Cell::get)
}

/// Whether to count a call now (the recorder at work); a Fortran wrapper running
/// below on this thread then leaves the call to this count.
#[inline]
pub(super) fn recording() -> bool {
    if !recorder_at_work() {
        return false;
    }
    counted_in_c();
    true
}

/// Marks the call of the Fortran wrapper running on this thread, if any, as counted.
#[inline]
fn counted_in_c() {
    let _ = FORTRAN.try_with(|f| {
        if f.get() == IN_FORTRAN {
            f.set(COUNTED_IN_C);
        }
    });
}

/// Runs `call` (a Fortran binding's entry point) and tells whether a C wrapper of this
/// library counted it meanwhile (MPICH's bindings call the C entry points).
pub(super) fn through_fortran(call: impl FnOnce()) -> bool {
    let before = FORTRAN
        .try_with(|f| f.replace(IN_FORTRAN))
        .unwrap_or(NO_FORTRAN);
    call();
    FORTRAN
        .try_with(|f| f.replace(before))
        .unwrap_or(NO_FORTRAN)
        == COUNTED_IN_C
}

/// `count × size(datatype)` in bytes (0 for an invalid type or a negative count).
#[inline]
pub(super) fn bytes_of(count: c_int, datatype: MPI_Datatype) -> u64 {
    let mut size: MPI_Count = 0;
    // SAFETY: writes one integer; an invalid handle returns an error code.
    if count <= 0 || unsafe { PMPI_Type_size_x(datatype, &mut size) } != 0 || size < 0 {
        return 0;
    }
    count as u64 * size as u64
}

/// A send of `count` elements of `datatype` to `dest` of `comm`.
#[inline]
pub(super) fn on_send(count: c_int, datatype: MPI_Datatype, dest: c_int, comm: MPI_Comm) {
    if let Some(w) = comms::world_rank(comm, dest) {
        table::add(w, 1, bytes_of(count, datatype));
    }
}

/// A persistent send request made.
pub(super) fn on_send_init(
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    comm: MPI_Comm,
    request: MPI_Request,
) {
    let send = comms::world_rank(comm, dest).map(|w| (w, bytes_of(count, datatype)));
    requests::register(request, send);
}

/// A request started (counted if it is a persistent send).
#[inline]
pub(super) fn on_start(request: MPI_Request) {
    if let Some((w, bytes)) = requests::started(request) {
        table::add(w, 1, bytes);
    }
}

/// A neighbourhood collective on `comm` sending `bytes(i)` to out-neighbour `i`.
pub(super) fn on_neighbours(comm: MPI_Comm, bytes: impl Fn(usize) -> u64) {
    comms::each_neighbour(comm, |i, w| table::add(w, 1, bytes(i)));
}

/// An all-to-all on `comm` sending `bytes(i)` to rank `i`: in the graph only with
/// `COPR_RECORD_ALLTOALL=1` (an empty block is no message).
pub(super) fn on_alltoall(comm: MPI_Comm, bytes: impl Fn(usize) -> u64) {
    if !super::alltoall_in_graph() {
        return;
    }
    for i in 0..comms::peers(comm) {
        let b = bytes(i);
        if let (true, Some(w)) = (b > 0, comms::world_rank(comm, i as c_int)) {
            table::add(w, 1, b);
        }
    }
}

/// After `MPI_Init`: checks the file (collective on `MPI_COMM_WORLD`).
pub(super) fn on_init() {
    if on() {
        counted_in_c();
        finalize::check_path();
    }
}

/// Before `MPI_Finalize`: writes the file (collective on `MPI_COMM_WORLD`).
pub(super) fn on_finalize() {
    if on() {
        finalize::write();
    }
}

/// The number of processes a block of an all-to-all on `comm` goes to.
fn comm_size(comm: MPI_Comm) -> u64 {
    comms::peers(comm) as u64
}

fn is_root(comm: MPI_Comm, root: c_int) -> bool {
    let mut r: c_int = -1;
    // SAFETY: writes one int.
    unsafe { PMPI_Comm_rank(comm, &mut r) == 0 && r == root }
}

/// The bytes of one process's block in a gather or all-to-all: its send arguments, or
/// its receive arguments with `MPI_IN_PLACE`.
fn block_bytes(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvcount: c_int,
    recvtype: MPI_Datatype,
) -> u64 {
    if sendbuf as usize == IN_PLACE {
        bytes_of(recvcount, recvtype)
    } else {
        bytes_of(sendcount, sendtype)
    }
}

/// The bytes of an all-to-all-v's send arguments.
///
/// # Safety
/// `counts` points to `n` ints when not null.
unsafe fn sum_counts(counts: *const c_int, n: usize, datatype: MPI_Datatype) -> u64 {
    if counts.is_null() {
        return 0;
    }
    // SAFETY: the caller's guarantee.
    let c = unsafe { std::slice::from_raw_parts(counts, n) };
    c.iter().map(|&k| bytes_of(k, datatype)).sum()
}

/// `counts[i] × size(datatype)`, 0 for a null array.
///
/// # Safety
/// `counts` points to more than `i` ints when not null.
unsafe fn nth_bytes(counts: *const c_int, i: usize, datatype: MPI_Datatype) -> u64 {
    if counts.is_null() {
        return 0;
    }
    // SAFETY: the caller's guarantee.
    bytes_of(unsafe { *counts.add(i) }, datatype)
}

/// `MPI_Init`, wrapped: checks `COPR_RECORD`'s file.
///
/// # Safety
/// MPI's own contract.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    // SAFETY: the program's arguments.
    let rc = unsafe { PMPI_Init(argc, argv) };
    if rc == 0 {
        on_init();
    }
    rc
}

/// `MPI_Init_thread`, wrapped: checks `COPR_RECORD`'s file.
///
/// # Safety
/// MPI's own contract.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    // SAFETY: the program's arguments.
    let rc = unsafe { PMPI_Init_thread(argc, argv, required, provided) };
    if rc == 0 {
        on_init();
    }
    rc
}

/// `MPI_Finalize`, wrapped: writes the recording first.
///
/// # Safety
/// MPI's own contract.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    on_finalize();
    // SAFETY: no arguments.
    unsafe { PMPI_Finalize() }
}

/// The sends: `$count(count, datatype, dest, comm, request)` counts a successful call
/// (`request` null for the blocking ones).
macro_rules! send {
    ($($name:ident => $pmpi:ident $(, $req:ident)?: $count:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`, counted.")]
        ///
        /// # Safety
        /// MPI's own contract.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            $($req: *mut MPI_Request,)?
        ) -> c_int {
            // SAFETY: the program's arguments.
            let rc = unsafe { $pmpi(buf, count, datatype, dest, tag, comm $(, $req)?) };
            if rc == 0 && recording() {
                #[allow(unused_variables)]
                let request: *mut MPI_Request = std::ptr::null_mut();
                $(let request = $req;)?
                ($count)(count, datatype, dest, comm, request);
            }
            rc
        }
    )*};
}

/// Counts a message now.
fn sent(count: c_int, datatype: MPI_Datatype, dest: c_int, comm: MPI_Comm, _: *mut MPI_Request) {
    on_send(count, datatype, dest, comm);
}

/// Registers a persistent send, counted when started.
fn made(count: c_int, datatype: MPI_Datatype, dest: c_int, comm: MPI_Comm, r: *mut MPI_Request) {
    // SAFETY: MPI wrote the new request where the program asked.
    on_send_init(count, datatype, dest, comm, unsafe { *r });
}

send! {
    MPI_Send => PMPI_Send: sent;
    MPI_Ssend => PMPI_Ssend: sent;
    MPI_Bsend => PMPI_Bsend: sent;
    MPI_Rsend => PMPI_Rsend: sent;
    MPI_Isend => PMPI_Isend, request: sent;
    MPI_Issend => PMPI_Issend, request: sent;
    MPI_Ibsend => PMPI_Ibsend, request: sent;
    MPI_Irsend => PMPI_Irsend, request: sent;
    MPI_Send_init => PMPI_Send_init, request: made;
    MPI_Ssend_init => PMPI_Ssend_init, request: made;
    MPI_Bsend_init => PMPI_Bsend_init, request: made;
    MPI_Rsend_init => PMPI_Rsend_init, request: made;
}

/// `MPI_Start`, counted when the request is a persistent send.
///
/// # Safety
/// MPI's own contract.
#[no_mangle]
pub unsafe extern "C" fn MPI_Start(request: *mut MPI_Request) -> c_int {
    // SAFETY: the program's request (read before MPI may change it).
    let r = if request.is_null() {
        None
    } else {
        Some(unsafe { *request })
    };
    // SAFETY: the program's arguments.
    let rc = unsafe { PMPI_Start(request) };
    if let (0, Some(r)) = (rc, r) {
        if recording() {
            on_start(r);
        }
    }
    rc
}

/// `MPI_Startall`, counted for its persistent sends.
///
/// # Safety
/// MPI's own contract.
#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, requests: *mut MPI_Request) -> c_int {
    // SAFETY: the program's arguments.
    let rc = unsafe { PMPI_Startall(count, requests) };
    if rc == 0 && count > 0 && !requests.is_null() && recording() {
        // SAFETY: `count` requests, as MPI requires.
        for &r in unsafe { std::slice::from_raw_parts(requests, count as usize) } {
            on_start(r);
        }
    }
    rc
}

/// `MPI_Request_free`, forgetting a persistent send.
///
/// # Safety
/// MPI's own contract.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(request: *mut MPI_Request) -> c_int {
    if on() && !request.is_null() {
        // SAFETY: the program's request.
        requests::forget(unsafe { *request });
    }
    // SAFETY: the program's arguments.
    unsafe { PMPI_Request_free(request) }
}

/// `MPI_Comm_free`, dropping the communicator's cached ranks.
///
/// # Safety
/// MPI's own contract.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    if on() && !comm.is_null() {
        // SAFETY: the program's communicator.
        comms::forget(unsafe { *comm });
    }
    // SAFETY: the program's arguments.
    unsafe { PMPI_Comm_free(comm) }
}

/// Wrappers that call their `PMPI_` routine with the program's arguments and run
/// `$count` (with those arguments in scope) when it succeeded and the recorder is on;
/// `$what` completes the doc line "counted …".
macro_rules! counted {
    ($($name:ident => $pmpi:ident $args:tt $what:literal $count:block)*) => {$(
        counted!(@one $name => $pmpi $args () $what $count);
    )*};
    (@one $name:ident => $pmpi:ident ($($arg:ident: $ty:ty),*) ($($req:ident)?)
        $what:literal $count:block) => {
        #[doc = concat!("`", stringify!($name), "`, counted ", $what, ".")]
        ///
        /// # Safety
        /// MPI's own contract.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty,)* $($req: *mut MPI_Request)?) -> c_int {
            // SAFETY: the program's arguments.
            let rc = unsafe { $pmpi($($arg,)* $($req)?) };
            if rc == 0 && recording() {
                $count
            }
            rc
        }
    };
}

counted! {
    MPI_Sendrecv => PMPI_Sendrecv
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, dest: c_int,
     sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype,
     source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status)
    "(its send)" { on_send(sendcount, sendtype, dest, comm) }

    MPI_Sendrecv_replace => PMPI_Sendrecv_replace
    (buf: *mut c_void, count: c_int, datatype: MPI_Datatype, dest: c_int, sendtag: c_int,
     source: c_int, recvtag: c_int, comm: MPI_Comm, status: *mut MPI_Status)
    "(its send)" { on_send(count, datatype, dest, comm) }

    MPI_Barrier => PMPI_Barrier (comm: MPI_Comm)
    "apart (0 bytes)" { collectives::add(Op::Barrier, comm, 0) }

    MPI_Bcast => PMPI_Bcast
    (buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm)
    "apart (the root's bytes)" {
        let b = if is_root(comm, root) { bytes_of(count, datatype) } else { 0 };
        collectives::add(Op::Bcast, comm, b);
    }

    MPI_Reduce => PMPI_Reduce
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
     op: MPI_Op, root: c_int, comm: MPI_Comm)
    "apart" { collectives::add(Op::Reduce, comm, bytes_of(count, datatype)) }

    MPI_Allreduce => PMPI_Allreduce
    (sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype,
     op: MPI_Op, comm: MPI_Comm)
    "apart" { collectives::add(Op::Allreduce, comm, bytes_of(count, datatype)) }

    MPI_Gather => PMPI_Gather
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm)
    "apart" {
        let b = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);
        collectives::add(Op::Gather, comm, b);
    }

    MPI_Allgather => PMPI_Allgather
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
    "apart" {
        let b = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);
        collectives::add(Op::Allgather, comm, b);
    }

    MPI_Alltoall => PMPI_Alltoall
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
    "apart (in the graph with COPR_RECORD_ALLTOALL=1)" {
        let block = block_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype);
        collectives::add(Op::Alltoall, comm, block * comm_size(comm));
        on_alltoall(comm, |_| block);
    }

    MPI_Alltoallv => PMPI_Alltoallv
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
     sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm)
    "apart (in the graph with COPR_RECORD_ALLTOALL=1)" {
        let n = comms::peers(comm);
        let (counts, datatype) = if sendbuf as usize == IN_PLACE {
            (recvcounts, recvtype)
        } else {
            (sendcounts, sendtype)
        };
        // SAFETY: one count per process of comm, as MPI requires.
        let b = unsafe { sum_counts(counts, n, datatype) };
        collectives::add(Op::Alltoallv, comm, b);
        // SAFETY: as above.
        on_alltoall(comm, |i| unsafe { nth_bytes(counts, i, datatype) });
    }
}

/// The neighbourhood collectives, each with its non-blocking form (one more argument,
/// the request): `$count` counts a successful call, given the call's arguments.
macro_rules! neighbor {
    ($(
        [$($name:ident, $iname:ident => $pmpi:ident, $ipmpi:ident);+ $(;)?]
        $args:tt $count:block
    )*) => {$($(
        counted!(@one $name => $pmpi $args () "per out-neighbour" $count);
        counted!(@one $iname => $ipmpi $args (request) "per out-neighbour" $count);
    )+)*};
}

neighbor! {
    [
        MPI_Neighbor_allgather, MPI_Ineighbor_allgather
            => PMPI_Neighbor_allgather, PMPI_Ineighbor_allgather;
        MPI_Neighbor_alltoall, MPI_Ineighbor_alltoall
            => PMPI_Neighbor_alltoall, PMPI_Ineighbor_alltoall;
    ]
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void,
     recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) {
        let b = bytes_of(sendcount, sendtype);
        on_neighbours(comm, |_| b);
    }
    [MPI_Neighbor_allgatherv, MPI_Ineighbor_allgatherv => PMPI_Neighbor_allgatherv, PMPI_Ineighbor_allgatherv]
    (sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void,
     recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) {
        let b = bytes_of(sendcount, sendtype);
        on_neighbours(comm, |_| b);
    }
    [MPI_Neighbor_alltoallv, MPI_Ineighbor_alltoallv => PMPI_Neighbor_alltoallv, PMPI_Ineighbor_alltoallv]
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int,
     sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) {
        // SAFETY: one count per out-neighbour, as MPI requires.
        on_neighbours(comm, |i| unsafe { nth_bytes(sendcounts, i, sendtype) });
    }
    [MPI_Neighbor_alltoallw, MPI_Ineighbor_alltoallw => PMPI_Neighbor_alltoallw, PMPI_Ineighbor_alltoallw]
    (sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const MPI_Aint,
     sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int,
     rdispls: *const MPI_Aint, recvtypes: *const MPI_Datatype, comm: MPI_Comm) {
        if !sendtypes.is_null() {
            // SAFETY: one count and one type per out-neighbour, as MPI requires.
            on_neighbours(comm, |i| unsafe { nth_bytes(sendcounts, i, *sendtypes.add(i)) });
        }
    }
}
