//! The MPI constants rsmpi does not export, for both ABIs the library builds against.
//!
//! Open MPI's handles are pointers and its special buffers small integers
//! (`MPI_IN_PLACE` is `(void *) 1`, `MPI_WEIGHTS_EMPTY` `(int *) 3`); MPICH and the
//! libraries that keep its ABI (Intel MPI, Cray MPICH, MVAPICH) have `int` handles,
//! `MPI_IN_PLACE` is `(void *) -1`, and `MPI_WEIGHTS_EMPTY` is a variable of the
//! library. rsmpi's bindings are generated from the `mpi.h` the build found, so the
//! size of a handle tells which of the two the library was built for.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use mpi::ffi::MPI_Comm;

/// Whether the library is built against MPICH's ABI (`int` handles).
pub(crate) const MPICH_ABI: bool = std::mem::size_of::<MPI_Comm>() == std::mem::size_of::<c_int>();

/// `MPI_IN_PLACE` as an address.
pub(crate) const IN_PLACE: usize = if MPICH_ABI { usize::MAX } else { 1 };

/// Open MPI's `MPI_WEIGHTS_EMPTY` (`((int *) 3)` in its `mpi.h`).
const OPEN_MPI_WEIGHTS_EMPTY: usize = 3;

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// `MPI_WEIGHTS_EMPTY` as an address; `None` when the MPICH library loaded does not
/// define the variable (then no pointer a program passes is taken for it).
pub(crate) fn weights_empty() -> Option<usize> {
    if !MPICH_ABI {
        return Some(OPEN_MPI_WEIGHTS_EMPTY);
    }
    static VALUE: OnceLock<Option<usize>> = OnceLock::new();
    *VALUE.get_or_init(|| {
        // SAFETY: a NUL-terminated name; glibc's RTLD_DEFAULT (a null handle) searches
        // the program and the libraries it loaded, MPICH's `libmpich` among them.
        let p = unsafe { dlsym(std::ptr::null_mut(), c"MPI_WEIGHTS_EMPTY".as_ptr()) };
        // SAFETY: MPICH's `mpi.h` declares it `int * const MPI_WEIGHTS_EMPTY`: the
        // symbol is the address of that pointer.
        (!p.is_null()).then(|| unsafe { *p.cast::<*const c_int>() } as usize)
    })
}
