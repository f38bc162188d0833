//! Array descriptors read as the library that owns each routine reads them.
//!
//! ScaLAPACK's `p?gemr2d` reads a 9-entry descriptor and never looks at its type
//! (DTYPE): its own test driver leaves it unset on some processes. PBLAS (`p?tran*`)
//! reads the type first and accepts type 1, 9 entries (DTYPE, CTXT, M, N, MB, NB, RSRC,
//! CSRC, LLD), and type 2, 11 entries (DTYPE, CTXT, M, N, IMB, INB, MB, NB, RSRC, CSRC,
//! LLD), where IMB × INB is the size of the first block.

use std::ffi::c_int;

/// Which library's rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// ScaLAPACK's redistribution routines: 9 entries, DTYPE ignored.
    Redist,
    /// PBLAS: DTYPE 1 (9 entries) or 2 (11 entries).
    Pblas,
}

/// PBLAS's type of a dense block-cyclic descriptor with its own first block
/// (`BLOCK_CYCLIC_2D_INB`).
const BLOCK_CYCLIC_2D_INB: i32 = 2;

/// The descriptor at `desc` as a type-1 descriptor (9 entries, DTYPE = 1), or `None`
/// for a null pointer.
///
/// # Errors
/// For PBLAS, a type other than 1 and 2, and a type-2 descriptor whose first block
/// is not a whole block (IMB ≠ MB or INB ≠ NB: copr's layouts start with a whole
/// block), with the offending values.
///
/// # Safety
/// `desc` is null or points to the descriptor's entries: 9 ints, 11 for a PBLAS
/// descriptor of type 2.
pub(crate) unsafe fn read(desc: *const c_int, reader: Reader) -> Result<Option<[i32; 9]>, String> {
    if desc.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's guarantee; read_unaligned as Fortran may pass any address.
    let at = |k: usize| unsafe { desc.add(k).read_unaligned() };
    let dtype = at(0);
    if reader == Reader::Redist || dtype == 1 {
        return Ok(Some([
            1,
            at(1),
            at(2),
            at(3),
            at(4),
            at(5),
            at(6),
            at(7),
            at(8),
        ]));
    }
    if dtype != BLOCK_CYCLIC_2D_INB {
        return Err(format!(
            "DTYPE = {dtype} is neither 1 nor 2 (PBLAS's dense block-cyclic descriptors)"
        ));
    }
    let [ctxt, m, n, imb, inb, mb, nb, rsrc, csrc, lld] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(at);
    if (imb, inb) != (mb, nb) {
        return Err(format!(
            "DTYPE = 2 with a first block of IMB x INB = {imb} x {inb} and blocks of MB x NB = {mb} x {nb}: copr's layouts need IMB = MB and INB = NB"
        ));
    }
    Ok(Some([1, ctxt, m, n, mb, nb, rsrc, csrc, lld]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_vec(d: &[c_int], reader: Reader) -> Result<Option<[i32; 9]>, String> {
        // SAFETY: `d` holds the entries the descriptor's type needs.
        unsafe { read(d.as_ptr(), reader) }
    }

    #[test]
    fn redist_ignores_the_type() {
        for dtype in [0, 1, 2, -7, 12345] {
            let d = [dtype, 3, 100, 80, 4, 5, 1, 0, 30];
            assert_eq!(
                read_vec(&d, Reader::Redist),
                Ok(Some([1, 3, 100, 80, 4, 5, 1, 0, 30]))
            );
        }
    }

    #[test]
    fn pblas_reads_both_types() {
        let one = [1, 3, 100, 80, 4, 5, 1, 0, 30];
        assert_eq!(read_vec(&one, Reader::Pblas), Ok(Some(one)));
        // DTYPE, CTXT, M, N, IMB, INB, MB, NB, RSRC, CSRC, LLD
        let two = [2, 3, 100, 80, 4, 5, 4, 5, 1, 0, 30];
        assert_eq!(read_vec(&two, Reader::Pblas), Ok(Some(one)));
    }

    #[test]
    fn pblas_refuses_other_types_and_partial_first_blocks() {
        let three = [3, 3, 100, 80, 4, 5, 1, 0, 30];
        let e = read_vec(&three, Reader::Pblas).unwrap_err();
        assert!(e.contains("DTYPE = 3"), "{e}");
        let partial = [2, 3, 100, 80, 2, 5, 4, 5, 1, 0, 30];
        let e = read_vec(&partial, Reader::Pblas).unwrap_err();
        assert!(
            e.contains("IMB x INB = 2 x 5") && e.contains("4 x 5"),
            "{e}"
        );
    }

    #[test]
    fn null_is_none() {
        // SAFETY: null is allowed.
        assert_eq!(unsafe { read(std::ptr::null(), Reader::Pblas) }, Ok(None));
    }
}
