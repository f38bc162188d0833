//! The exported routines: each forwards its arguments to copr-capi's entry point of
//! the same name with `copr_` in front. They are made by two macros (the argument
//! lists are ScaLAPACK's, the same for every element type) over copr-capi's list of
//! routines (`copr_capi::for_each_routine!`), the list its own entry points are
//! checked against.
//!
//! # Safety (every routine)
//! ScaLAPACK's contract for the routine of that name (see copr-capi's `exports`).

#![allow(non_snake_case)] // ScaLAPACK's C names (Cpdgemr2d)

use std::ffi::c_int;

use copr_capi::exports::*;

/// `Cp?gemr2d` and `p?gemr2d_` for one element type, served by copr's.
macro_rules! gemr2d {
    ($c:ident, $f:ident, $copr_c:ident, $copr_f:ident, $t:ty, $what:literal) => {
        #[doc = concat!("ScaLAPACK's `", stringify!($c), "` (", $what, "), served by [`", stringify!($copr_c), "`].")]
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $c(
            m: c_int,
            n: c_int,
            a: *const $t,
            ia: c_int,
            ja: c_int,
            desca: *const c_int,
            b: *mut $t,
            ib: c_int,
            jb: c_int,
            descb: *const c_int,
            ictxt: c_int,
        ) {
            // SAFETY: the caller's contract, which is copr's.
            unsafe { $copr_c(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt) }
        }

        #[doc = concat!("ScaLAPACK's `", stringify!($f), "` (", $what, "), served by [`", stringify!($copr_f), "`].")]
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $f(
            m: *const c_int,
            n: *const c_int,
            a: *const $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            b: *mut $t,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            ictxt: *const c_int,
        ) {
            // SAFETY: the caller's contract, which is copr's.
            unsafe { $copr_f(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt) }
        }
    };
}

/// PBLAS's `p?tran*_` for one element type and op, served by copr's.
macro_rules! tran {
    ($f:ident, $copr_f:ident, $t:ty, $what:literal) => {
        #[doc = concat!("PBLAS's `", stringify!($f), "` (", $what, "), served by [`", stringify!($copr_f), "`].")]
        ///
        /// # Safety
        /// PBLAS's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $f(
            m: *const c_int,
            n: *const c_int,
            alpha: *const $t,
            a: *const $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            beta: *const $t,
            c: *mut $t,
            ic: *const c_int,
            jc: *const c_int,
            descc: *const c_int,
        ) {
            // SAFETY: the caller's contract, which is copr's.
            unsafe { $copr_f(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc) }
        }
    };
}

copr_capi::for_each_routine!(gemr2d, tran);
