//! Element types the engine moves.

use num_complex::{Complex32, Complex64};

/// The element types of `A ← α·op(B) + β·A`: `f32`, `f64`, [`Complex32`],
/// [`Complex64`], `i32` and `i64`.
///
/// Conjugation is the identity for real types; integer arithmetic wraps (two's
/// complement) instead of panicking on overflow. The trait is sealed.
pub trait Element:
    Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static + private::Sealed
{
    /// Size of one element in bytes (in packages).
    const BYTES: usize;
    /// Which type this is (part of the collective argument check).
    const KIND: ElementKind;
    /// 0.
    fn zero() -> Self;
    /// 1.
    fn one() -> Self;
    /// Complex conjugate (identity for real types).
    fn conj(self) -> Self;
    /// `self · other`.
    fn mul(self, other: Self) -> Self;
    /// `self + other`.
    fn add(self, other: Self) -> Self;
    /// Writes the element into `out` (exactly [`Element::BYTES`] bytes, native order).
    fn write(self, out: &mut [u8]);
    /// Reads an element from `bytes` (exactly [`Element::BYTES`] bytes, native order).
    fn read(bytes: &[u8]) -> Self;
    /// The bit pattern, for fingerprints.
    fn bits(self) -> [u64; 2];
}

/// The supported element types, as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementKind {
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// [`Complex32`].
    Complex32,
    /// [`Complex64`].
    Complex64,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
}

mod private {
    /// Plain data: no padding, every bit pattern valid, so buffers of elements may be
    /// viewed as bytes and back (`bytemuck`).
    pub trait Sealed: bytemuck::Pod {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for num_complex::Complex32 {}
    impl Sealed for num_complex::Complex64 {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// A real type of `$n` bytes: `$mul`/`$add` are the arithmetic (wrapping for integers).
macro_rules! real {
    ($t:ty, $kind:ident, $n:expr, $mul:path, $add:path) => {
        impl Element for $t {
            const BYTES: usize = $n;
            const KIND: ElementKind = ElementKind::$kind;
            #[inline(always)]
            fn zero() -> Self {
                0 as $t
            }
            #[inline(always)]
            fn one() -> Self {
                1 as $t
            }
            #[inline(always)]
            fn conj(self) -> Self {
                self
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                $mul(self, o)
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                $add(self, o)
            }
            #[inline(always)]
            fn write(self, out: &mut [u8]) {
                out.copy_from_slice(bytemuck::bytes_of(&self));
            }
            #[inline(always)]
            fn read(b: &[u8]) -> Self {
                bytemuck::pod_read_unaligned(b)
            }
            fn bits(self) -> [u64; 2] {
                let mut w = [0u8; 8];
                w[..$n].copy_from_slice(&self.to_ne_bytes());
                [u64::from_ne_bytes(w), 0]
            }
        }
    };
}

macro_rules! complex {
    ($t:ty, $kind:ident, $n:expr) => {
        impl Element for $t {
            const BYTES: usize = 2 * $n;
            const KIND: ElementKind = ElementKind::$kind;
            #[inline(always)]
            fn zero() -> Self {
                <$t>::new(0.0, 0.0)
            }
            #[inline(always)]
            fn one() -> Self {
                <$t>::new(1.0, 0.0)
            }
            #[inline(always)]
            fn conj(self) -> Self {
                <$t>::conj(&self)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn write(self, out: &mut [u8]) {
                out.copy_from_slice(bytemuck::bytes_of(&self));
            }
            #[inline(always)]
            fn read(b: &[u8]) -> Self {
                bytemuck::pod_read_unaligned(b)
            }
            fn bits(self) -> [u64; 2] {
                [self.re.to_bits() as u64, self.im.to_bits() as u64]
            }
        }
    };
}

real!(f32, F32, 4, std::ops::Mul::mul, std::ops::Add::add);
real!(f64, F64, 8, std::ops::Mul::mul, std::ops::Add::add);
complex!(Complex32, Complex32, 4);
complex!(Complex64, Complex64, 8);
real!(i32, I32, 4, i32::wrapping_mul, i32::wrapping_add);
real!(i64, I64, 8, i64::wrapping_mul, i64::wrapping_add);

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<T: Element>(x: T) {
        let mut b = vec![0u8; T::BYTES];
        x.write(&mut b);
        assert_eq!(T::read(&b), x);
    }

    #[test]
    fn bytes_roundtrip_and_conjugate() {
        roundtrip(1.5f32);
        roundtrip(-2.25f64);
        roundtrip(Complex32::new(1.0, -3.0));
        roundtrip(Complex64::new(-1.0, 7.0));
        roundtrip(-5i32);
        roundtrip(i64::MIN);
        assert_eq!(Complex64::new(1.0, 2.0).conj(), Complex64::new(1.0, -2.0));
        assert_eq!(Element::conj(3i32), 3);
        assert_eq!(Element::mul(i32::MAX, 2), -2);
    }
}
