//! The one list of ScaLAPACK and PBLAS routines copr serves, for every crate that
//! exports them: the `copr_` entry points of `exports` (feature `mpi`) are checked against it
//! at compile time (they are written out there, because cbindgen makes the C header
//! from the declarations as they stand in the source, without expanding macros), and
//! `copr-scalapack` makes its unprefixed routines (`pdgemr2d_`, `Cpdgemr2d`, …) from
//! it.

/// Calls back, once per routine copr serves:
///
/// - `$gemr2d!(C name, Fortran name, copr's C name, copr's Fortran name, element type,
///   "description")` for `p?gemr2d` (s, d, c, z);
/// - `$tran!(Fortran name, copr's name, element type as passed, "description")` for
///   `p?tran*` (`pstran_`, `pdtran_`, and `p?tranu_`/`p?tranc_` for c and z, whose
///   complex numbers are passed as pairs of reals).
///
/// ```ignore
/// copr_capi::for_each_routine!(my_gemr2d_macro, my_tran_macro);
/// ```
#[macro_export]
macro_rules! for_each_routine {
    ($gemr2d:ident, $tran:ident) => {
        $gemr2d!(Cpsgemr2d, psgemr2d_, copr_psgemr2d, copr_psgemr2d_, f32, "real single precision");
        $gemr2d!(Cpdgemr2d, pdgemr2d_, copr_pdgemr2d, copr_pdgemr2d_, f64, "real double precision");
        $gemr2d!(
            Cpcgemr2d,
            pcgemr2d_,
            copr_pcgemr2d,
            copr_pcgemr2d_,
            $crate::CoprScomplex,
            "complex single precision"
        );
        $gemr2d!(
            Cpzgemr2d,
            pzgemr2d_,
            copr_pzgemr2d,
            copr_pzgemr2d_,
            $crate::CoprDcomplex,
            "complex double precision"
        );
        $tran!(pstran_, copr_pstran_, f32, "real single precision");
        $tran!(pdtran_, copr_pdtran_, f64, "real double precision");
        $tran!(pctranu_, copr_pctranu_, f32, "complex single precision as pairs of floats");
        $tran!(pctranc_, copr_pctranc_, f32, "complex single precision, conjugate transpose");
        $tran!(pztranu_, copr_pztranu_, f64, "complex double precision as pairs of doubles");
        $tran!(pztranc_, copr_pztranc_, f64, "complex double precision, conjugate transpose");
    };
}

/// Each listed `p?gemr2d` has its two entry points in [`crate::exports`] with
/// ScaLAPACK's argument lists (a compile error otherwise).
#[cfg(feature = "mpi")]
macro_rules! check_gemr2d {
    ($c:ident, $f:ident, $copr_c:ident, $copr_f:ident, $t:ty, $what:literal) => {
        const _: unsafe extern "C" fn(
            c_int,
            c_int,
            *const $t,
            c_int,
            c_int,
            *const c_int,
            *mut $t,
            c_int,
            c_int,
            *const c_int,
            c_int,
        ) = crate::exports::$copr_c;
        const _: unsafe extern "C" fn(
            *const c_int,
            *const c_int,
            *const $t,
            *const c_int,
            *const c_int,
            *const c_int,
            *mut $t,
            *const c_int,
            *const c_int,
            *const c_int,
            *const c_int,
        ) = crate::exports::$copr_f;
    };
}

/// Each listed `p?tran*` has its entry point in [`crate::exports`] with PBLAS's
/// argument list (a compile error otherwise).
#[cfg(feature = "mpi")]
macro_rules! check_tran {
    ($f:ident, $copr_f:ident, $t:ty, $what:literal) => {
        const _: unsafe extern "C" fn(
            *const c_int,
            *const c_int,
            *const $t,
            *const $t,
            *const c_int,
            *const c_int,
            *const c_int,
            *const $t,
            *mut $t,
            *const c_int,
            *const c_int,
            *const c_int,
        ) = crate::exports::$copr_f;
    };
}

#[cfg(feature = "mpi")]
use std::ffi::c_int;

#[cfg(feature = "mpi")]
for_each_routine!(check_gemr2d, check_tran);

/// copr's names of the listed routines, in the list's order.
pub fn copr_names() -> Vec<&'static str> {
    let mut names = Vec::new();
    macro_rules! gemr2d_names {
        ($c:ident, $f:ident, $copr_c:ident, $copr_f:ident, $t:ty, $what:literal) => {
            names.push(stringify!($copr_c));
            names.push(stringify!($copr_f));
        };
    }
    macro_rules! tran_names {
        ($f:ident, $copr_f:ident, $t:ty, $what:literal) => {
            names.push(stringify!($copr_f));
        };
    }
    for_each_routine!(gemr2d_names, tran_names);
    names
}

#[cfg(test)]
mod tests {
    /// Every ScaLAPACK-named entry point written out in `exports.rs` is on the list,
    /// and the list names each once: a routine cannot be added to one and not the other.
    #[test]
    fn the_list_and_the_written_entry_points_agree() {
        let source = include_str!("exports.rs");
        let mut written: Vec<&str> = source
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub unsafe extern \"C\" fn "))
            .filter_map(|l| l.split('(').next())
            .filter(|name| {
                name.ends_with("gemr2d") || name.ends_with("gemr2d_") || name.contains("tran")
            })
            .collect();
        written.sort_unstable();
        let mut listed = super::copr_names();
        let n = listed.len();
        listed.sort_unstable();
        listed.dedup();
        assert_eq!(listed.len(), n, "a routine listed twice");
        assert_eq!(listed.len(), 14, "4 p?gemr2d in two styles, 6 p?tran*");
        assert_eq!(listed, written);
    }
}
