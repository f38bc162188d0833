//! Node-shared matrices for C and Fortran: memory that every process of a node in a
//! BLACS context can read, so that a redistribution whose source lies there moves each
//! node-local package in one pass (its receiver reads it straight from the sender's
//! matrix into its own target) instead of two.
//!
//! - [`copr_alloc_shared`]: collective over the processes of a context, `bytes` for
//!   this process (each its own size, 0 allowed), in a node-shared window of the
//!   context's communicator (copr's `MpiTransport::alloc_shared`);
//! - [`copr_free_shared`]: collective over the same processes, frees one allocation;
//!   what is not freed is freed at `MPI_Finalize`;
//! - [`copr_capi_shared_reads`]: packages this process read in one pass from its
//!   senders' node-shared matrices, so a program can see which path was taken.
//!
//! The source matrix of `copr_p?gemr2d` (with the same context as ICTXT) or of
//! `copr_p?tran*` (with the grid's context) placed in such memory is read in one pass
//! by the receivers of its node; with any other context, any other memory or any other
//! process, the call runs as before.
//!
//! Errors: a nonzero return on every process of the context, a one-line message on
//! standard error (from the process that found a bad argument, or from the first
//! process when they disagree), `copr_capi_errors()` grows by one, and nothing is
//! allocated or freed. The processes agree before anything is allocated or freed, so a
//! wrong argument on one process never leaves the others waiting in MPI.

use std::ffi::{c_int, c_void};

use copr::transport::{SharedBuffer, Transport};

use crate::redist::{bad, gather_verdicts, joined_comm, run, Bad, Failed};
use crate::state::Comm;

/// Return code of a call that reported an error.
const FAILED: c_int = 1;

/// Alignment every allocation has at least (for any element type, and whole cache
/// lines).
const ALIGN: usize = 64;

/// Bytes of the machine's memory (`MemTotal` of `/proc/meminfo`), if known.
fn memory_bytes() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The address an allocation returns: the first one in `buffer` aligned to [`ALIGN`].
fn start(buffer: &SharedBuffer<u8>) -> *mut c_void {
    let base = buffer.as_ptr();
    base.wrapping_add(base.align_offset(ALIGN))
        .cast_mut()
        .cast()
}

/// Why `bytes` cannot be allocated on this process, if it cannot.
fn refuse_size(bytes: usize) -> Option<Bad> {
    if bytes > isize::MAX as usize - ALIGN {
        return Some(bad(
            2,
            "BYTES",
            format!(
                "{bytes} exceeds the largest size copr can allocate ({})",
                isize::MAX as usize - ALIGN
            ),
        ));
    }
    let memory = memory_bytes()?;
    (bytes > memory).then(|| {
        bad(
            2,
            "BYTES",
            format!("{bytes} exceeds this node's {memory} bytes of memory"),
        )
    })
}

/// The two routines, as the processes tell each other which one they are in.
const ALLOC: u64 = 1;
const FREE: u64 = 2;

/// The processes' one step before an allocation or a release (the same words in both,
/// so that processes in different ones meet and fail together): every process's
/// verdict (`own`: a bad argument it found), routine and allocation `number`;
/// returns every process's number, or the error every process returns.
fn agree(
    comm: &mut Comm,
    routine: u64,
    own: Option<Bad>,
    number: u64,
) -> Result<Vec<u64>, (i32, Failed)> {
    let rank = comm.transport.rank() as i32;
    let mine = [u64::from(own.is_some()), routine, number];
    let all = gather_verdicts(&mut comm.transport, &mine, own)?;
    let rows: Vec<&[u64]> = all.chunks_exact(mine.len()).collect();
    if let Some(r) = rows.iter().position(|w| w[1] != routine) {
        let name = |w: &[u64]| {
            if w[1] == ALLOC {
                "copr_alloc_shared"
            } else {
                "copr_free_shared"
            }
        };
        return Err((
            rank,
            Failed::Everywhere(format!(
                "the processes of the context are in different calls: process 0 in {}, process {r} in {}",
                name(rows[0]),
                name(rows[r])
            )),
        ));
    }
    Ok(rows.iter().map(|w| w[2]).collect())
}

/// Collective over the processes of the BLACS context `ictxt`: allocates `bytes`
/// bytes for this process in memory that every process of its node in `ictxt` can
/// read, and returns 0 with the address in `*ptr` (aligned to 64 bytes, zero-filled,
/// not NULL and different from any other allocation's, also for 0 bytes); or nonzero
/// with `*ptr = NULL` on every process of `ictxt` and a one-line message on standard
/// error.
///
/// Each process passes its own size (its local part of a matrix, say). A matrix
/// placed there and passed as the source (`A`) of `copr_p?gemr2d` with ICTXT =
/// `ictxt`, or of `copr_p?tran*` on a grid of context `ictxt`, is read by the
/// receivers on its node straight from this memory into their target: one pass over
/// those bytes instead of two. Free it with [`copr_free_shared`] on the same context
/// (or leave it to `MPI_Finalize`).
///
/// # Safety
/// `ictxt` is a BLACS context every process of which makes the same call (the calls
/// on one context in the same order); `ptr` is NULL (an error) or points to a
/// writable `void *`.
#[no_mangle]
pub unsafe extern "C" fn copr_alloc_shared(
    ictxt: c_int,
    bytes: usize,
    ptr: *mut *mut c_void,
) -> c_int {
    let routine = "copr_alloc_shared";
    if !ptr.is_null() {
        // SAFETY: the caller's contract: writable when not NULL.
        unsafe { ptr.write(std::ptr::null_mut()) };
    }
    let done = run(routine, |state| {
        let (_, comm, _) = joined_comm(state, ictxt, (1, "ICTXT"), "", None)?;
        let rank = comm.transport.rank() as i32;
        let own = if ptr.is_null() {
            Some(bad(
                3,
                "PTR",
                "null: there is nowhere to return the address",
            ))
        } else {
            refuse_size(bytes)
        };
        agree(comm, ALLOC, own, 0)?;
        // ALIGN bytes more than asked: the address returned is the first aligned one
        // (MPI aligns less), and every allocation has an address of its own
        let buffer = comm
            .transport
            .alloc_shared::<u8>(bytes + ALIGN)
            .map_err(|e| (rank, Failed::Engine(e.to_string())))?;
        let at = start(&buffer);
        comm.shared_made += 1;
        comm.shared.push((comm.shared_made, buffer));
        // SAFETY: checked not NULL above; the caller's contract.
        unsafe { ptr.write(at) };
        Ok(())
    });
    if done {
        0
    } else {
        FAILED
    }
}

/// Collective over the processes of the BLACS context `ictxt`: frees the memory at
/// `ptr` that [`copr_alloc_shared`] returned on the same context. Returns 0, or
/// nonzero on every process of `ictxt` with a one-line message on standard error
/// and nothing freed, when a process passes a pointer that is not such an
/// allocation (never allocated by copr, on another context, or freed already) or
/// the processes name different allocations.
///
/// # Safety
/// `ictxt` is a BLACS context every process of which makes the same call; no
/// redistribution uses the memory at the time; the memory is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn copr_free_shared(ictxt: c_int, ptr: *mut c_void) -> c_int {
    let routine = "copr_free_shared";
    let done = run(routine, |state| {
        let (_, comm, _) = joined_comm(state, ictxt, (1, "ICTXT"), "", None)?;
        let rank = comm.transport.rank() as i32;
        let found = comm.shared.iter().position(|(_, b)| start(b) == ptr);
        let own = found.is_none().then(|| {
            bad(
                2,
                "PTR",
                format!(
                    "{ptr:p} is not memory that copr_alloc_shared returned on ICTXT = {ictxt} and that is not freed yet"
                ),
            )
        });
        let number = found.map_or(0, |k| comm.shared[k].0);
        let numbers = agree(comm, FREE, own, number)?;
        if let Some(r) = numbers.iter().position(|&n| n != number) {
            return Err((
                rank,
                Failed::Everywhere(format!(
                    "processes of ICTXT = {ictxt} name different allocations: process 0 its allocation number {} on this context, process {r} its number {}",
                    numbers[0], numbers[r]
                )),
            ));
        }
        if let Some(k) = found {
            // collective over the node's processes of the context, all at this point
            drop(comm.shared.remove(k));
        }
        Ok(())
    });
    if done {
        0
    } else {
        FAILED
    }
}

/// Packages this process received by reading them straight from their senders'
/// node-shared matrices ([`copr_alloc_shared`]) in one pass, over all contexts, since
/// the program started: it grows when a redistribution took the one-pass path.
#[no_mangle]
pub extern "C" fn copr_capi_shared_reads() -> u64 {
    crate::state::lock()
        .comms()
        .iter()
        .map(|c| c.shared_reads)
        .sum()
}
