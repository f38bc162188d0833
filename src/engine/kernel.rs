//! Copy/transform kernels: strided 2-D moves with `A ← α·op(x) + β·A` on each element,
//! a cache-blocked transpose, and packing into byte packages.

use super::element::Element;

/// One rectangular move of `rows × cols` target elements: target element (i, j) sits at
/// `dst + i·d_rs + j·d_cs` (relative to the slice it is applied to) and takes the
/// source element at `src + i·s_rs + j·s_cs` (relative to the source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Move {
    pub(crate) dst: usize,
    pub(crate) d_rs: usize,
    pub(crate) d_cs: usize,
    pub(crate) src: usize,
    pub(crate) s_rs: usize,
    pub(crate) s_cs: usize,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

/// One contiguous packing job: `outer` runs of `inner` source elements starting at
/// `src`, `ld` apart, written densely at element `dst` of the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackRun {
    pub(crate) src: usize,
    pub(crate) ld: usize,
    pub(crate) inner: usize,
    pub(crate) outer: usize,
    pub(crate) dst: usize,
}

/// Where moved elements come from: a received byte package or a local slice.
pub(crate) trait Src<T: Element>: Sync {
    /// `len` consecutive elements from `start`.
    fn run(&self, start: usize, len: usize) -> impl Iterator<Item = T> + '_;
    /// The element at `idx`.
    fn at(&self, idx: usize) -> T;
}

/// A package of elements in native byte order.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl<T: Element> Src<T> for Bytes<'_> {
    #[inline(always)]
    fn run(&self, start: usize, len: usize) -> impl Iterator<Item = T> + '_ {
        self.0[start * T::BYTES..(start + len) * T::BYTES]
            .chunks_exact(T::BYTES)
            .map(T::read)
    }
    #[inline(always)]
    fn at(&self, idx: usize) -> T {
        T::read(&self.0[idx * T::BYTES..(idx + 1) * T::BYTES])
    }
}

/// A typed slice (the local source buffer).
pub(crate) struct Slice<'a, T>(pub(crate) &'a [T]);

impl<T: Element> Src<T> for Slice<'_, T> {
    #[inline(always)]
    fn run(&self, start: usize, len: usize) -> impl Iterator<Item = T> + '_ {
        self.0[start..start + len].iter().copied()
    }
    #[inline(always)]
    fn at(&self, idx: usize) -> T {
        self.0[idx]
    }
}

/// How a source element `x` updates a target element `a`.
pub(crate) trait Combine<T: Element>: Copy + Send + Sync {
    /// Performs the update (never reads `a` when β = 0).
    fn put(self, x: T, a: &mut T);
    /// Two adjacent updates, `a[0]` from `x` and `a[1]` from `y`.
    #[inline(always)]
    fn put2(self, x: T, y: T, a: &mut [T; 2]) {
        self.put(x, &mut a[0]);
        self.put(y, &mut a[1]);
    }
}

/// `a ← x`.
#[derive(Clone, Copy)]
pub(crate) struct Assign;
/// `a ← conj(x)`.
#[derive(Clone, Copy)]
pub(crate) struct AssignConj;
/// `a ← α·x`.
#[derive(Clone, Copy)]
pub(crate) struct Scale<T>(pub(crate) T);
/// `a ← α·conj(x)`.
#[derive(Clone, Copy)]
pub(crate) struct ScaleConj<T>(pub(crate) T);
/// `a ← α·x + β·a`.
#[derive(Clone, Copy)]
pub(crate) struct Axpby<T>(pub(crate) T, pub(crate) T);
/// `a ← α·conj(x) + β·a`.
#[derive(Clone, Copy)]
pub(crate) struct AxpbyConj<T>(pub(crate) T, pub(crate) T);

impl<T: Element> Combine<T> for Assign {
    #[inline(always)]
    fn put(self, x: T, a: &mut T) {
        *a = x;
    }
    #[inline(always)]
    fn put2(self, x: T, y: T, a: &mut [T; 2]) {
        *a = [x, y];
    }
}
impl<T: Element> Combine<T> for AssignConj {
    #[inline(always)]
    fn put(self, x: T, a: &mut T) {
        *a = x.conj();
    }
}
impl<T: Element> Combine<T> for Scale<T> {
    #[inline(always)]
    fn put(self, x: T, a: &mut T) {
        *a = self.0.mul(x);
    }
}
impl<T: Element> Combine<T> for ScaleConj<T> {
    #[inline(always)]
    fn put(self, x: T, a: &mut T) {
        *a = self.0.mul(x.conj());
    }
}
impl<T: Element> Combine<T> for Axpby<T> {
    #[inline(always)]
    fn put(self, x: T, a: &mut T) {
        *a = self.0.mul(x).add(self.1.mul(*a));
    }
}
impl<T: Element> Combine<T> for AxpbyConj<T> {
    #[inline(always)]
    fn put(self, x: T, a: &mut T) {
        *a = self.0.mul(x.conj()).add(self.1.mul(*a));
    }
}

/// The scalars of one transform, classified once so the inner loops are specialised:
/// β = 0 never reads A, α = 1 and β = 0 without conjugation is a plain copy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Update<T> {
    pub(crate) alpha: T,
    pub(crate) beta: T,
    pub(crate) conj: bool,
}

impl<T: Element> Update<T> {
    /// β = 0.
    pub(crate) fn beta_is_zero(&self) -> bool {
        self.beta == T::zero()
    }
    /// α = 1.
    pub(crate) fn alpha_is_one(&self) -> bool {
        self.alpha == T::one()
    }
}

/// Calls `$body` with `$c` bound to the specialised [`Combine`] for `$u`.
macro_rules! with_combine {
    ($u:expr, $c:ident => $body:expr) => {{
        let u = $u;
        match (u.beta_is_zero(), u.alpha_is_one(), u.conj) {
            (true, true, false) => {
                let $c = $crate::engine::kernel::Assign;
                $body
            }
            (true, true, true) => {
                let $c = $crate::engine::kernel::AssignConj;
                $body
            }
            (true, false, false) => {
                let $c = $crate::engine::kernel::Scale(u.alpha);
                $body
            }
            (true, false, true) => {
                let $c = $crate::engine::kernel::ScaleConj(u.alpha);
                $body
            }
            (false, _, false) => {
                let $c = $crate::engine::kernel::Axpby(u.alpha, u.beta);
                $body
            }
            (false, _, true) => {
                let $c = $crate::engine::kernel::AxpbyConj(u.alpha, u.beta);
                $body
            }
        }
    }};
}
pub(crate) use with_combine;

/// Tile edge of the blocked transpose: 32 × 32 elements of up to 8 bytes (two 8 KiB
/// tiles), 16 × 16 for 16-byte elements.
const fn tile<T: Element>() -> usize {
    if T::BYTES > 8 {
        16
    } else {
        32
    }
}

/// Source strides up to which the transpose reads two source runs at a time (packed
/// pieces); larger strides (a whole local matrix) use wide tiles instead.
const PAIR_STRIDE: usize = 64;

/// Applies one move to `dst`.
///
/// The loop runs along the target's contiguous direction. If the source is contiguous
/// in the same direction each line is one streaming loop; otherwise (a transpose in
/// memory) the rectangle is walked in cache-sized tiles so that both the lines read
/// and the lines written stay in cache.
#[inline]
pub(crate) fn apply<T: Element, S: Src<T>, C: Combine<T>>(dst: &mut [T], m: &Move, src: &S, c: C) {
    // Normalise so that `inner` is the direction with unit target stride.
    debug_assert!(m.d_rs == 1 || m.d_cs == 1, "one target stride is 1: {m:?}");
    let (inner, outer, d_out, s_in, s_out) = if m.d_rs == 1 {
        (m.rows, m.cols, m.d_cs, m.s_rs, m.s_cs)
    } else {
        (m.cols, m.rows, m.d_rs, m.s_cs, m.s_rs)
    };
    if inner == 0 || outer == 0 {
        return;
    }
    if s_in == 1 || inner == 1 {
        for o in 0..outer {
            let d = &mut dst[m.dst + o * d_out..][..inner];
            for (a, x) in d.iter_mut().zip(src.run(m.src + o * s_out, inner)) {
                c.put(x, a);
            }
        }
        return;
    }
    if s_out != 1 {
        // Neither source direction is contiguous (not produced by the planner): the
        // plain element loop.
        for o in 0..outer {
            for i in 0..inner {
                c.put(
                    src.at(m.src + i * s_in + o * s_out),
                    &mut dst[m.dst + o * d_out + i],
                );
            }
        }
        return;
    }
    if s_in <= PAIR_STRIDE {
        // A small source stride (a packed piece): inside a tile take two target lines
        // (two contiguous source runs) at a time and write pairs of adjacent elements.
        let t = tile::<T>();
        let mut o0 = 0;
        while o0 < outer {
            let o1 = (o0 + t).min(outer);
            let len = o1 - o0;
            let mut i0 = 0;
            while i0 < inner {
                let i1 = (i0 + t).min(inner);
                let mut i = i0;
                while i + 2 <= i1 {
                    let r0 = src.run(m.src + i * s_in + o0, len);
                    let r1 = src.run(m.src + (i + 1) * s_in + o0, len);
                    for (k, (x, y)) in r0.zip(r1).enumerate() {
                        let d: &mut [T; 2] = (&mut dst[m.dst + (o0 + k) * d_out + i..][..2])
                            .try_into()
                            .expect("two elements");
                        c.put2(x, y, d);
                    }
                    i += 2;
                }
                if i < i1 {
                    let r0 = src.run(m.src + i * s_in + o0, len);
                    for (k, x) in r0.enumerate() {
                        c.put(x, &mut dst[m.dst + (o0 + k) * d_out + i]);
                    }
                }
                i0 = i1;
            }
            o0 = o1;
        }
        return;
    }
    // A large source stride (straight from a local matrix): contiguous writes, strided
    // reads, in tiles of about 1 KiB of target line by 256 lines.
    let (ti, to) = ((1024 / T::BYTES).max(1), 256);
    let mut o0 = 0;
    while o0 < outer {
        let o1 = (o0 + to).min(outer);
        let mut i0 = 0;
        while i0 < inner {
            let i1 = (i0 + ti).min(inner);
            for o in o0..o1 {
                let d = &mut dst[m.dst + o * d_out + i0..][..i1 - i0];
                let base = m.src + o + i0 * s_in;
                for (k, a) in d.iter_mut().enumerate() {
                    c.put(src.at(base + k * s_in), a);
                }
            }
            i0 = i1;
        }
        o0 = o1;
    }
}

/// Packs one run list entry from `src` into the package bytes `out` (relative to the
/// package start).
#[inline]
pub(crate) fn pack<T: Element>(out: &mut [u8], r: &PackRun, src: &[T]) {
    let s = T::BYTES;
    for o in 0..r.outer {
        let line = &src[r.src + o * r.ld..][..r.inner];
        let bytes = &mut out[(r.dst + o * r.inner) * s..][..r.inner * s];
        for (x, b) in line.iter().zip(bytes.chunks_exact_mut(s)) {
            x.write(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(dst: &mut [f64], m: &Move, src: &[f64], alpha: f64, beta: f64) {
        for i in 0..m.rows {
            for j in 0..m.cols {
                let a = &mut dst[m.dst + i * m.d_rs + j * m.d_cs];
                let x = alpha * src[m.src + i * m.s_rs + j * m.s_cs];
                *a = if beta == 0.0 { x } else { x + beta * *a };
            }
        }
    }

    #[test]
    fn wide_tiles_cover_large_transposes() {
        // 300 x 200 target from a row-major source with stride 203: several 128 x 256
        // tiles, both remainders.
        let src: Vec<f64> = (0..70_000).map(|x| x as f64).collect();
        let m = Move {
            dst: 3,
            d_rs: 1,
            d_cs: 301,
            src: 1,
            s_rs: 203,
            s_cs: 1,
            rows: 300,
            cols: 200,
        };
        let mut a = vec![-1.0; 301 * 200 + 3];
        let mut b = a.clone();
        let u = Update::<f64> {
            alpha: 1.0,
            beta: 0.0,
            conj: false,
        };
        with_combine!(u, c => apply(&mut a, &m, &Slice(&src), c));
        naive(&mut b, &m, &src, 1.0, 0.0);
        assert_eq!(a, b);
    }

    #[test]
    fn strided_and_transposed_moves_match_the_naive_loop() {
        let src: Vec<f64> = (0..10_000).map(|x| x as f64 * 0.5).collect();
        for &(rows, cols) in &[
            (1, 1),
            (3, 70),
            (70, 3),
            (33, 65),
            (64, 64),
            (1, 40),
            (40, 1),
        ] {
            let cases = [
                // (d_rs, d_cs, s_rs, s_cs)
                (1, rows + 2, 1, rows + 1),
                (1, rows, cols, 1),
                (cols + 3, 1, 1, rows),
                (cols, 1, cols, 1),
                (1, rows + 1, 2, 2 * rows + 3),
            ];
            for &(d_rs, d_cs, s_rs, s_cs) in &cases {
                let m = Move {
                    dst: 5,
                    d_rs,
                    d_cs,
                    src: 7,
                    s_rs,
                    s_cs,
                    rows,
                    cols,
                };
                let mut a: Vec<f64> = (0..9000).map(|x| x as f64).collect();
                let mut b = a.clone();
                let u = Update::<f64> {
                    alpha: 2.0,
                    beta: -1.0,
                    conj: false,
                };
                with_combine!(u, c => apply(&mut a, &m, &Slice(&src), c));
                naive(&mut b, &m, &src, 2.0, -1.0);
                assert_eq!(a, b, "{m:?}");
                let bytes: Vec<u8> = src.iter().flat_map(|x| x.to_ne_bytes()).collect();
                let mut a2: Vec<f64> = vec![f64::NAN; 9000];
                let mut b2 = vec![f64::NAN; 9000];
                let u = Update::<f64> {
                    alpha: 1.0,
                    beta: 0.0,
                    conj: false,
                };
                with_combine!(u, c => apply(&mut a2, &m, &Bytes(&bytes), c));
                naive(&mut b2, &m, &src, 1.0, 0.0);
                for (x, y) in a2.iter().zip(&b2) {
                    assert!(x == y || (x.is_nan() && y.is_nan()));
                }
            }
        }
    }
}
