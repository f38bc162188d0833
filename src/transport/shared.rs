//! Node-shared buffers: memory every rank of a node (or of a transport's group on the
//! node) can read, so that a receiver copies a package straight from its sender's B
//! into its own A, in one pass.

use std::cell::RefCell;
use std::ffi::CString;
use std::marker::PhantomData;
use std::rc::Rc;

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use crate::error::{Error, Result};

/// One live node-shared allocation as its transport sees it.
pub(super) struct Segment {
    /// The same on every rank of the group (agreed when it was allocated).
    pub(super) id: u64,
    /// This rank's part: address and bytes.
    pub(super) base: usize,
    pub(super) bytes: usize,
    /// The window, for `MPI_Win_sync` before reading a peer's part.
    pub(super) win: ffi::MPI_Win,
    /// Every group rank's part, mapped into this process (address, bytes), by rank in
    /// the group.
    pub(super) parts: Parts,
}

/// The live node-shared allocations of one transport.
pub(super) type Registry = Rc<RefCell<Vec<Segment>>>;

impl Segment {
    /// Orders this process's view of the window's memory (a memory barrier).
    pub(super) fn sync(&self) {
        // SAFETY: the window is valid (its segment is registered only while the
        // buffer lives) and in a passive epoch (lock_all).
        unsafe { ffi::MPI_Win_sync(self.win) };
    }
}

/// Where `bytes` bytes at `addr` of this process lie in a registered allocation:
/// its id and the offset in this rank's part.
pub(super) fn locate(reg: &[Segment], addr: usize, bytes: usize) -> Option<(u64, usize)> {
    reg.iter().find_map(|s| {
        let end = addr.checked_add(bytes)?;
        (addr >= s.base && end <= s.base + s.bytes).then(|| (s.id, addr - s.base))
    })
}

/// A buffer of `len` elements of `T` in memory that every rank of the transport's
/// node (or of its group, [`MpiTransport::with_groups`](super::MpiTransport::with_groups))
/// can read: made by [`MpiTransport::alloc_shared`](super::MpiTransport::alloc_shared),
/// it derefs to a slice and is used like any other buffer.
///
/// When the source B of a transform lies in such a buffer, a rank of the same node
/// that receives a package of B reads it straight from the sender's buffer into its
/// own A (applying α, β and op as it goes) instead of the sender packing it into the
/// transport's shared window and the receiver copying it out: one pass over the
/// bytes instead of two. The sender returns from the round only when its readers are
/// done, so B may be changed as soon as the execution returns.
///
/// The memory is one MPI-3 shared window (`MPI_Win_allocate_shared` over the node's
/// ranks), zero-filled by its owner (so its pages are local to it). Allocating and
/// dropping are **collective over the ranks of the node (or group)**: they call
/// [`MpiTransport::alloc_shared`](super::MpiTransport::alloc_shared) the same number
/// of times, in the same order, and drop the buffers in the same order, all before
/// MPI is finalised.
pub struct SharedBuffer<T> {
    ptr: *mut T,
    len: usize,
    win: ffi::MPI_Win,
    registry: Registry,
    id: u64,
    _elems: PhantomData<T>,
}

impl<T> std::fmt::Debug for SharedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBuffer")
            .field("len", &self.len)
            .field("id", &self.id)
            .finish()
    }
}

/// Turns an MPI return code into an error.
fn check(code: i32, what: &str) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Transport(format!(
            "{what} failed with MPI error {code}"
        )))
    }
}

/// Every node rank's part of a window, as mapped into this process (address, bytes).
pub(super) type Parts = Vec<(usize, usize)>;

/// Allocates `bytes` for this rank in a node-shared window over `node` (collective;
/// displacement unit `unit`), zero-filled by this rank (so that its pages are local to
/// it, and the first use pays no page faults), in a passive epoch on all parts so that
/// `MPI_Win_sync` can order the accesses; returns the window, this rank's part and
/// every node rank's part as mapped here (address, bytes).
pub(super) fn allocate_window(
    node: &SimpleCommunicator,
    bytes: usize,
    unit: usize,
) -> Result<(ffi::MPI_Win, *mut u8, Parts)> {
    let mut base: *mut u8 = std::ptr::null_mut();
    // SAFETY: plain MPI calls on valid handles; `base` receives the segment address.
    let win = unsafe {
        let mut win: ffi::MPI_Win = ffi::RSMPI_WIN_NULL;
        let mut info: ffi::MPI_Info = ffi::RSMPI_INFO_NULL;
        check(ffi::MPI_Info_create(&mut info), "MPI_Info_create")?;
        let key = CString::new("alloc_shared_noncontig").expect("no NUL");
        let val = CString::new("true").expect("no NUL");
        check(
            ffi::MPI_Info_set(info, key.as_ptr(), val.as_ptr()),
            "MPI_Info_set",
        )?;
        let r = ffi::MPI_Win_allocate_shared(
            bytes as ffi::MPI_Aint,
            unit as i32,
            info,
            node.as_raw(),
            (&mut base as *mut *mut u8).cast(),
            &mut win,
        );
        ffi::MPI_Info_free(&mut info);
        check(r, "MPI_Win_allocate_shared")?;
        if bytes > 0 {
            std::ptr::write_bytes(base, 0, bytes);
        }
        check(
            ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as i32, win),
            "MPI_Win_lock_all",
        )?;
        win
    };
    let mut parts = Vec::with_capacity(node.size() as usize);
    for r in 0..node.size() {
        let (mut size, mut disp): (ffi::MPI_Aint, i32) = (0, 0);
        let mut ptr: *mut u8 = std::ptr::null_mut();
        // SAFETY: `win` is a valid shared window of `node`, `r` one of its ranks.
        check(
            unsafe {
                ffi::MPI_Win_shared_query(
                    win,
                    r,
                    &mut size,
                    &mut disp,
                    (&mut ptr as *mut *mut u8).cast(),
                )
            },
            "MPI_Win_shared_query",
        )?;
        parts.push((ptr as usize, size as usize));
    }
    Ok((win, base, parts))
}

impl<T: bytemuck::Pod> SharedBuffer<T> {
    /// Allocates `len` zeroed elements on this rank, collectively over `node`, and
    /// registers the allocation in `registry` under an id all ranks agree on.
    pub(super) fn allocate(
        node: &SimpleCommunicator,
        registry: &Registry,
        next_id: &mut u64,
        len: usize,
    ) -> Result<Self> {
        let elem = std::mem::size_of::<T>().max(1);
        let bytes = len.checked_mul(elem).ok_or_else(|| {
            Error::Transport(format!(
                "a shared buffer of {len} elements of {elem} bytes exceeds the address space"
            ))
        })?;
        // Every rank learns whether all can allocate, so that none enters the
        // collective allocation alone.
        let ok = u64::from(ffi::MPI_Aint::try_from(bytes).is_ok());
        let mut oks = vec![0u64; node.size() as usize];
        node.all_gather_into(&ok, &mut oks[..]);
        if let Some(r) = oks.iter().position(|&o| o == 0) {
            return Err(Error::Transport(format!(
                "rank {r} of the node asked for a shared buffer larger than MPI can allocate; nothing was allocated"
            )));
        }
        // The id: one more than the largest any rank has used.
        let mut ids = vec![0u64; node.size() as usize];
        node.all_gather_into(&*next_id, &mut ids[..]);
        let id = ids.iter().copied().max().unwrap_or(0) + 1;
        *next_id = id;
        let (win, base, parts) = allocate_window(node, bytes, elem)?;
        let mut base = base.cast::<T>();
        if base.is_null() || len == 0 {
            // An empty part: a dangling, aligned pointer for the empty slice.
            base = std::ptr::NonNull::<T>::dangling().as_ptr();
        }
        registry.borrow_mut().push(Segment {
            id,
            base: base as usize,
            bytes,
            win,
            parts,
        });
        Ok(Self {
            ptr: base,
            len,
            win,
            registry: Rc::clone(registry),
            id,
            _elems: PhantomData,
        })
    }
}

impl<T> std::ops::Deref for SharedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` elements of this rank's part, zero-filled (valid for a `Pod`
        // type) when allocated; peers only read it.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> std::ops::DerefMut for SharedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`; `&mut self` makes this the only reference here, and
        // peers read it only during an execution, which borrows the buffer.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for SharedBuffer<T> {
    /// Frees the window (collective over the node's ranks, see [`SharedBuffer`]).
    fn drop(&mut self) {
        self.registry.borrow_mut().retain(|s| s.id != self.id);
        // SAFETY: the window is valid and in the passive epoch opened at allocation;
        // every rank of the node frees it at the same point.
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
        }
    }
}
