//! The exported entry points (`extern "C"`, unmangled). Each has the argument list of
//! the ScaLAPACK routine it replaces, in two forms:
//!
//! - C style, like ScaLAPACK's `Cp?gemr2d`: integers by value (`copr_pdgemr2d`);
//! - Fortran style, like `p?gemr2d_` and PBLAS's `p?tran*_`: every argument by
//!   reference, a trailing underscore (`copr_pdgemr2d_`, `copr_pdtran_`), callable
//!   from Fortran through the module and from C.
//!
//! Arguments copr only reads are `const`; the types and their order are ScaLAPACK's,
//! so the calls link and behave the same. Every entry point is written out (no macro):
//! cbindgen makes the header from these declarations as they stand in the source. The
//! ScaLAPACK-named ones are checked at compile time against the one list of routines
//! in [`crate::routines`], from which `copr-scalapack` makes its unprefixed names.
//!
//! # Safety (every entry point)
//! ScaLAPACK's own contract: descriptors point to 9 ints; local buffers hold this
//! process's part of the matrix as its descriptor says (leading dimension LLD, at least
//! up to the submatrix's last local column); every process of the context makes the
//! same call (for `p?gemr2d`, every process of ICTXT, passing CTXT = -1 in the
//! descriptor of a matrix whose grid it is not in). Source and target must not share
//! memory (copr reports it as a bad argument). A bad argument is reported on standard
//! error with its parameter number and the call returns on every process without
//! changing anything (ScaLAPACK would abort the program); [`copr_capi_errors`] counts
//! such calls.

use std::ffi::c_int;

use num_complex::{Complex32, Complex64};

use crate::redist::{bad, by_reference, gemr2d, redistribute, tran, Call, CopyArgs};
use crate::{CoprDcomplex, CoprScomplex};

/// How many calls on this process reported an error (and changed nothing).
///
/// A bad argument, or an error of the engine or of MPI: the message went to standard
/// error.
#[no_mangle]
pub extern "C" fn copr_capi_errors() -> u64 {
    crate::state::lock().errors
}

/// How many calls of copr's entry points this process made, whatever their outcome.
///
/// The quick returns for M = 0 or N = 0 are counted too.
///
/// A program linked with the unprefixed library (`libcopr_scalapack`, whose
/// `pdgemr2d_`, `Cpdgemr2d`, `pdtran_`, … are copr's) sees it grow with every call of
/// those names: the proof that copr, not ScaLAPACK, ran them.
#[no_mangle]
pub extern "C" fn copr_capi_calls() -> u64 {
    crate::state::CALLS.load(std::sync::atomic::Ordering::Relaxed)
}

/// `sub(B) ← sub(A)` for real single precision, as ScaLAPACK's `Cpsgemr2d`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_psgemr2d(
    m: c_int,
    n: c_int,
    a: *const f32,
    ia: c_int,
    ja: c_int,
    desca: *const c_int,
    b: *mut f32,
    ib: c_int,
    jb: c_int,
    descb: *const c_int,
    ictxt: c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        gemr2d::<f32>(
            "copr_psgemr2d",
            m,
            n,
            a,
            ia,
            ja,
            desca,
            b,
            ib,
            jb,
            descb,
            ictxt,
        )
    }
}

/// `sub(B) ← sub(A)` for real double precision, as ScaLAPACK's `Cpdgemr2d`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pdgemr2d(
    m: c_int,
    n: c_int,
    a: *const f64,
    ia: c_int,
    ja: c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: c_int,
    jb: c_int,
    descb: *const c_int,
    ictxt: c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        gemr2d::<f64>(
            "copr_pdgemr2d",
            m,
            n,
            a,
            ia,
            ja,
            desca,
            b,
            ib,
            jb,
            descb,
            ictxt,
        )
    }
}

/// `sub(B) ← sub(A)` for complex single precision, as ScaLAPACK's `Cpcgemr2d`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pcgemr2d(
    m: c_int,
    n: c_int,
    a: *const CoprScomplex,
    ia: c_int,
    ja: c_int,
    desca: *const c_int,
    b: *mut CoprScomplex,
    ib: c_int,
    jb: c_int,
    descb: *const c_int,
    ictxt: c_int,
) {
    // SAFETY: the caller's contract; CoprScomplex and Complex32 have one layout.
    unsafe {
        gemr2d::<Complex32>(
            "copr_pcgemr2d",
            m,
            n,
            a.cast(),
            ia,
            ja,
            desca,
            b.cast(),
            ib,
            jb,
            descb,
            ictxt,
        )
    }
}

/// `sub(B) ← sub(A)` for complex double precision, as ScaLAPACK's `Cpzgemr2d`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pzgemr2d(
    m: c_int,
    n: c_int,
    a: *const CoprDcomplex,
    ia: c_int,
    ja: c_int,
    desca: *const c_int,
    b: *mut CoprDcomplex,
    ib: c_int,
    jb: c_int,
    descb: *const c_int,
    ictxt: c_int,
) {
    // SAFETY: the caller's contract; CoprDcomplex and Complex64 have one layout.
    unsafe {
        gemr2d::<Complex64>(
            "copr_pzgemr2d",
            m,
            n,
            a.cast(),
            ia,
            ja,
            desca,
            b.cast(),
            ib,
            jb,
            descb,
            ictxt,
        )
    }
}

/// `copr_psgemr2d` with every argument by reference, as ScaLAPACK's `psgemr2d_`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_psgemr2d_(
    m: *const c_int,
    n: *const c_int,
    a: *const f32,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f32,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    ictxt: *const c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        let name = "copr_psgemr2d_";
        if let Some([m, n, ia, ja, ib, jb, ictxt]) =
            by_reference(name, gemr2d_ints(m, n, ia, ja, ib, jb, ictxt))
        {
            gemr2d::<f32>(name, m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt)
        }
    }
}

/// `copr_pdgemr2d` with every argument by reference, as ScaLAPACK's `pdgemr2d_`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pdgemr2d_(
    m: *const c_int,
    n: *const c_int,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    ictxt: *const c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        let name = "copr_pdgemr2d_";
        if let Some([m, n, ia, ja, ib, jb, ictxt]) =
            by_reference(name, gemr2d_ints(m, n, ia, ja, ib, jb, ictxt))
        {
            gemr2d::<f64>(name, m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt)
        }
    }
}

/// `copr_pcgemr2d` with every argument by reference, as ScaLAPACK's `pcgemr2d_`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pcgemr2d_(
    m: *const c_int,
    n: *const c_int,
    a: *const CoprScomplex,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut CoprScomplex,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    ictxt: *const c_int,
) {
    // SAFETY: the caller's contract; CoprScomplex and Complex32 have one layout.
    unsafe {
        let name = "copr_pcgemr2d_";
        if let Some([m, n, ia, ja, ib, jb, ictxt]) =
            by_reference(name, gemr2d_ints(m, n, ia, ja, ib, jb, ictxt))
        {
            gemr2d::<Complex32>(
                name,
                m,
                n,
                a.cast(),
                ia,
                ja,
                desca,
                b.cast(),
                ib,
                jb,
                descb,
                ictxt,
            )
        }
    }
}

/// `copr_pzgemr2d` with every argument by reference, as ScaLAPACK's `pzgemr2d_`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pzgemr2d_(
    m: *const c_int,
    n: *const c_int,
    a: *const CoprDcomplex,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut CoprDcomplex,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    ictxt: *const c_int,
) {
    // SAFETY: the caller's contract; CoprDcomplex and Complex64 have one layout.
    unsafe {
        let name = "copr_pzgemr2d_";
        if let Some([m, n, ia, ja, ib, jb, ictxt]) =
            by_reference(name, gemr2d_ints(m, n, ia, ja, ib, jb, ictxt))
        {
            gemr2d::<Complex64>(
                name,
                m,
                n,
                a.cast(),
                ia,
                ja,
                desca,
                b.cast(),
                ib,
                jb,
                descb,
                ictxt,
            )
        }
    }
}

/// The by-reference integers of `p?gemr2d_`, with their parameter numbers.
fn gemr2d_ints(
    m: *const c_int,
    n: *const c_int,
    ia: *const c_int,
    ja: *const c_int,
    ib: *const c_int,
    jb: *const c_int,
    ictxt: *const c_int,
) -> [(*const c_int, u32, &'static str); 7] {
    [
        (m, 1, "M"),
        (n, 2, "N"),
        (ia, 4, "IA"),
        (ja, 5, "JA"),
        (ib, 8, "IB"),
        (jb, 9, "JB"),
        (ictxt, 11, "ICTXT"),
    ]
}

/// The by-reference integers of `p?tran*_`, with their parameter numbers.
fn tran_ints(
    m: *const c_int,
    n: *const c_int,
    ia: *const c_int,
    ja: *const c_int,
    ic: *const c_int,
    jc: *const c_int,
) -> [(*const c_int, u32, &'static str); 6] {
    [
        (m, 1, "M"),
        (n, 2, "N"),
        (ia, 5, "IA"),
        (ja, 6, "JA"),
        (ic, 10, "IC"),
        (jc, 11, "JC"),
    ]
}

/// A transpose with PBLAS's arguments: the integers and scalars read, then [`tran`].
///
/// # Safety
/// See the module documentation; `alpha` and `beta` point to one `T` each (or are null).
#[allow(clippy::too_many_arguments)]
unsafe fn tran_by_reference<T: copr::engine::Element>(
    name: &str,
    conj: bool,
    m: *const c_int,
    n: *const c_int,
    alpha: *const T,
    a: *const T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    beta: *const T,
    c: *mut T,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        let Some([alpha, beta]) = by_reference(name, [(alpha, 3, "ALPHA"), (beta, 8, "BETA")])
        else {
            return;
        };
        if let Some([m, n, ia, ja, ic, jc]) = by_reference(name, tran_ints(m, n, ia, ja, ic, jc)) {
            tran::<T>(
                name, conj, m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc,
            )
        }
    }
}

/// `sub(C) ← β·sub(C) + α·sub(A)ᵀ` for real single precision, as PBLAS's `pstran_`
/// (`sub(A) = A(IA : IA+N-1, JA : JA+M-1)`, `sub(C) = C(IC : IC+M-1, JC : JC+N-1)`).
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pstran_(
    m: *const c_int,
    n: *const c_int,
    alpha: *const f32,
    a: *const f32,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    beta: *const f32,
    c: *mut f32,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        tran_by_reference::<f32>(
            "copr_pstran_",
            false,
            m,
            n,
            alpha,
            a,
            ia,
            ja,
            desca,
            beta,
            c,
            ic,
            jc,
            descc,
        )
    }
}

/// `sub(C) ← β·sub(C) + α·sub(A)ᵀ` for real double precision, as PBLAS's `pdtran_`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pdtran_(
    m: *const c_int,
    n: *const c_int,
    alpha: *const f64,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    beta: *const f64,
    c: *mut f64,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        tran_by_reference::<f64>(
            "copr_pdtran_",
            false,
            m,
            n,
            alpha,
            a,
            ia,
            ja,
            desca,
            beta,
            c,
            ic,
            jc,
            descc,
        )
    }
}

/// `sub(C) ← β·sub(C) + α·sub(A)ᵀ` for complex single precision, as PBLAS's
/// `pctranu_` (complex numbers as pairs of floats: real, imaginary; so are α and β).
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pctranu_(
    m: *const c_int,
    n: *const c_int,
    alpha: *const f32,
    a: *const f32,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    beta: *const f32,
    c: *mut f32,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY: the caller's contract; a complex number is two floats.
    unsafe {
        tran_by_reference::<Complex32>(
            "copr_pctranu_",
            false,
            m,
            n,
            alpha.cast(),
            a.cast(),
            ia,
            ja,
            desca,
            beta.cast(),
            c.cast(),
            ic,
            jc,
            descc,
        )
    }
}

/// `sub(C) ← β·sub(C) + α·conj(sub(A))ᵀ` for complex single precision, as PBLAS's
/// `pctranc_`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pctranc_(
    m: *const c_int,
    n: *const c_int,
    alpha: *const f32,
    a: *const f32,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    beta: *const f32,
    c: *mut f32,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY: the caller's contract; a complex number is two floats.
    unsafe {
        tran_by_reference::<Complex32>(
            "copr_pctranc_",
            true,
            m,
            n,
            alpha.cast(),
            a.cast(),
            ia,
            ja,
            desca,
            beta.cast(),
            c.cast(),
            ic,
            jc,
            descc,
        )
    }
}

/// `sub(C) ← β·sub(C) + α·sub(A)ᵀ` for complex double precision, as PBLAS's
/// `pztranu_` (complex numbers as pairs of doubles: real, imaginary; so are α and β).
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pztranu_(
    m: *const c_int,
    n: *const c_int,
    alpha: *const f64,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    beta: *const f64,
    c: *mut f64,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY: the caller's contract; a complex number is two doubles.
    unsafe {
        tran_by_reference::<Complex64>(
            "copr_pztranu_",
            false,
            m,
            n,
            alpha.cast(),
            a.cast(),
            ia,
            ja,
            desca,
            beta.cast(),
            c.cast(),
            ic,
            jc,
            descc,
        )
    }
}

/// `sub(C) ← β·sub(C) + α·conj(sub(A))ᵀ` for complex double precision, as PBLAS's
/// `pztranc_`.
///
/// # Safety
/// See the module documentation.
#[no_mangle]
pub unsafe extern "C" fn copr_pztranc_(
    m: *const c_int,
    n: *const c_int,
    alpha: *const f64,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    beta: *const f64,
    c: *mut f64,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY: the caller's contract; a complex number is two doubles.
    unsafe {
        tran_by_reference::<Complex64>(
            "copr_pztranc_",
            true,
            m,
            n,
            alpha.cast(),
            a.cast(),
            ia,
            ja,
            desca,
            beta.cast(),
            c.cast(),
            ic,
            jc,
            descc,
        )
    }
}

/// Several copies `sub(B_k) ← sub(A_k)` in one communication round, real double precision.
///
/// k = 0 … COUNT−1, one message per pair of processes for all of them: copy k has `Cpdgemr2d`'s arguments `M[k]`, `N[k]`, `A[k]`, `IA[k]`, `JA[k]`, the 9
/// ints of its descriptor at `DESCA + 9k`, and likewise for B, all under the context
/// ICTXT.
///
/// Parameters are numbered from COUNT (1): M is 2, ICTXT 12; an error names the copy
/// (`IA[2]`). Copies with M or N 0 are skipped; the others may be on different grids
/// and contexts, as for `Cpdgemr2d`. No B may share memory with another buffer of the
/// call on a process.
///
/// Every process of ICTXT makes the call, also one with COUNT = 0 or nothing to copy:
/// the processes agree on the number of copies (those with M and N not 0) and on the
/// validity of COUNT and the arrays first, so a process that passes another count or
/// a null array makes the call fail on every process instead of leaving the others
/// waiting.
///
/// # Safety
/// See the module documentation; when COUNT > 0, the arrays hold COUNT entries (the
/// descriptor arrays 9·COUNT), and each copy meets `Cpdgemr2d`'s contract.
#[no_mangle]
pub unsafe extern "C" fn copr_pdgemr2d_batch(
    count: c_int,
    m: *const c_int,
    n: *const c_int,
    a: *const *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *const *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    ictxt: c_int,
) {
    // SAFETY: the caller's contract.
    unsafe {
        batch::<f64>(
            "copr_pdgemr2d_batch",
            count,
            m,
            n,
            a,
            ia,
            ja,
            desca,
            b,
            ib,
            jb,
            descb,
            ictxt,
        )
    }
}

/// The copies of a batch, read from the caller's arrays, then [`redistribute`].
///
/// # Safety
/// As [`copr_pdgemr2d_batch`].
#[allow(clippy::too_many_arguments)]
unsafe fn batch<T: copr::engine::Element>(
    name: &str,
    count: c_int,
    m: *const c_int,
    n: *const c_int,
    a: *const *const T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *const *mut T,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    ictxt: c_int,
) {
    let ints = [
        (m, 2, "M"),
        (n, 3, "N"),
        (ia, 5, "IA"),
        (ja, 6, "JA"),
        (desca, 7, "DESCA"),
        (ib, 9, "IB"),
        (jb, 10, "JB"),
        (descb, 11, "DESCB"),
    ];
    let null = ints
        .iter()
        .find(|(p, _, _)| p.is_null())
        .map(|&(_, arg, name)| (arg, name))
        .or(a.is_null().then_some((4, "A")))
        .or(b.is_null().then_some((8, "B")));
    // found before the copies can be read; reported on every process together
    let refused = match null {
        _ if count < 0 => Some(bad(1, "COUNT", format!("{count} is negative"))),
        Some((arg, what)) if count > 0 => Some(bad(arg, what, "null, but COUNT > 0")),
        _ => None,
    };
    let readable = if refused.is_some() { 0 } else { count as usize };
    let copies: Vec<CopyArgs<T>> = (0..readable)
        .map(|k| {
            // SAFETY: the caller's contract: COUNT entries each (9·COUNT for the
            // descriptors); Fortran may pass any address.
            unsafe {
                CopyArgs {
                    m: m.add(k).read_unaligned(),
                    n: n.add(k).read_unaligned(),
                    a: a.add(k).read_unaligned(),
                    ia: ia.add(k).read_unaligned(),
                    ja: ja.add(k).read_unaligned(),
                    desca: desca.add(9 * k),
                    b: b.add(k).read_unaligned(),
                    ib: ib.add(k).read_unaligned(),
                    jb: jb.add(k).read_unaligned(),
                    descb: descb.add(9 * k),
                }
            }
        })
        .collect();
    // SAFETY: the caller's contract.
    unsafe { redistribute(name, &copies, ictxt, Call::Batch, refused) }
}

/// `B ← sub(A)` for real double precision onto B's grid relabeled (MAP says which).
///
/// The whole of B (M × N, B's size; IB = JB = 1) is filled from
/// `sub(A) = A(IA : IA+M-1, JA : JA+N-1)`, but the blocks of B's grid position (r, c)
/// go to the process `MAP[r + c·P]` (a rank of ICTXT's grid, numbered as
/// `Cblacs_pnum(ICTXT, …)`; P × Q is B's grid), chosen to keep as much of the data
/// where it is as possible (copr's exact relabeling; the identity when it saves
/// nothing). A process's B afterwards holds the local matrix of the position it was
/// given, with leading dimension `max(1, LOCr)` of that position's row, whatever
/// DESCB's LLD says.
///
/// Every process of ICTXT passes a buffer B of LENB elements (any process may be given
/// a position): enough for the largest local matrix, that of B's source row and column
/// (`LOCr(RSRC) · LOCc(CSRC)` with `numroc`). MAP holds P·Q ints on every process and
/// is the same on all afterwards. A process that would receive more than LENB
/// elements makes the call fail on every process, changing nothing. To go on with
/// ScaLAPACK on the relabeled B, make a context with `Cblacs_gridmap` from MAP.
///
/// Parameters: M, N, A, IA, JA, DESCA, B, LENB, DESCB, ICTXT, MAP (1 to 11).
///
/// # Safety
/// See the module documentation; B is valid for LENB elements, MAP for P·Q ints.
#[no_mangle]
pub unsafe extern "C" fn copr_pdgemr2d_relabel(
    m: c_int,
    n: c_int,
    a: *const f64,
    ia: c_int,
    ja: c_int,
    desca: *const c_int,
    b: *mut f64,
    lenb: c_int,
    descb: *const c_int,
    ictxt: c_int,
    map: *mut c_int,
) {
    let copy = CopyArgs {
        m,
        n,
        a,
        ia,
        ja,
        desca,
        b,
        ib: 1,
        jb: 1,
        descb,
    };
    // SAFETY: the caller's contract.
    unsafe {
        redistribute(
            "copr_pdgemr2d_relabel",
            &[copy],
            ictxt,
            Call::Relabeled { lenb, map },
            None,
        )
    }
}
