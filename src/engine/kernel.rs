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

/// One packing job: `outer` lines of `inner` elements written densely at element `dst`
/// of the package; element `i` of line `o` is source element `src + o·ld + i·step`
/// (`step = 1`: contiguous runs; otherwise a transposition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackRun {
    pub(crate) src: usize,
    pub(crate) ld: usize,
    pub(crate) step: usize,
    pub(crate) inner: usize,
    pub(crate) outer: usize,
    pub(crate) dst: usize,
}

/// The bytes of a slice of elements.
#[inline(always)]
pub(crate) fn as_bytes<T: Element>(s: &[T]) -> &[u8] {
    bytemuck::cast_slice(s)
}

/// The bytes of a mutable slice of elements.
#[inline(always)]
pub(crate) fn as_bytes_mut<T: Element>(s: &mut [T]) -> &mut [u8] {
    bytemuck::cast_slice_mut(s)
}

/// Where moved elements come from: a received byte package or a local slice.
pub(crate) trait Src<T: Element>: Sync {
    /// The whole source as bytes (elements in native byte order, possibly unaligned).
    fn bytes(&self) -> &[u8];
    /// `len` consecutive elements from `start`.
    fn run(&self, start: usize, len: usize) -> impl Iterator<Item = T> + '_;
    /// The element at `idx`.
    fn at(&self, idx: usize) -> T;
}

/// A package of elements in native byte order.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl<T: Element> Src<T> for Bytes<'_> {
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        self.0
    }
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
    fn bytes(&self) -> &[u8] {
        as_bytes(self.0)
    }
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
    /// `a ← x` exactly (a plain copy of the bytes).
    const PLAIN: bool = false;
    /// Performs the update (never reads `a` when β = 0).
    fn put(self, x: T, a: &mut T);
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
    const PLAIN: bool = true;
    #[inline(always)]
    fn put(self, x: T, a: &mut T) {
        *a = x;
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

/// Applies one move to `dst`.
///
/// The loop runs along the target's contiguous direction. If the source is contiguous
/// in the same direction each line is one streaming loop; otherwise (a transpose in
/// memory) the rectangle is walked in cache-sized tiles so that both the lines read
/// and the lines written stay in cache.
///
/// With `stream`, plain copies write the target with non-temporal stores
/// ([`copy_run`]); the caller ends the pass with [`stream_fence`].
#[inline]
pub(crate) fn apply<T: Element, S: Src<T>, C: Combine<T>>(
    dst: &mut [T],
    m: &Move,
    src: &S,
    c: C,
    stream: bool,
) {
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
        if C::PLAIN && s_in == 1 {
            // A straight copy: one byte copy per target line.
            let b = T::BYTES;
            let sb = src.bytes();
            for o in 0..outer {
                let d = as_bytes_mut(&mut dst[m.dst + o * d_out..][..inner]);
                copy_run(d, &sb[(m.src + o * s_out) * b..][..inner * b], stream);
            }
            return;
        }
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
    transpose_tiles(
        dst,
        m.dst,
        d_out,
        src.bytes(),
        m.src,
        s_in,
        inner,
        outer,
        c,
        stream,
    );
}

/// Runs from this many bytes on are streamed by [`copy_run`] (shorter ones hold at
/// most one whole cache line).
const STREAM_MIN_RUN: usize = 128;

/// Copies the bytes `src` into `dst` (equal lengths). With `stream`, on x86-64, the
/// whole 64-byte lines of `dst` are written with non-temporal stores, which bypass the
/// cache: the target line is not read from memory before it is overwritten, so a
/// copy moves two bytes of memory traffic per byte instead of three. The partial lines
/// at either end take ordinary stores. After a pass of streamed copies the writer
/// calls [`stream_fence`] before anything else may read the target.
#[inline]
pub(crate) fn copy_run(dst: &mut [u8], src: &[u8], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && dst.len() >= STREAM_MIN_RUN {
        nt::copy(dst, src);
        return;
    }
    let _ = stream;
    dst.copy_from_slice(src);
}

/// Orders this thread's earlier non-temporal stores before its later stores (a store
/// fence; nothing on targets without streamed copies).
#[inline]
pub(crate) fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    nt::fence();
}

/// Non-temporal copies (SSE2, part of every x86-64 processor).
#[cfg(target_arch = "x86_64")]
mod nt {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};

    /// [`super::copy_run`] with streaming stores for the whole lines of `dst`.
    ///
    /// # Panics
    /// If the lengths differ.
    #[inline]
    pub(super) fn copy(dst: &mut [u8], src: &[u8]) {
        assert_eq!(dst.len(), src.len(), "copy of runs of different lengths");
        let head = dst.as_ptr().align_offset(64).min(dst.len());
        let body = (dst.len() - head) / 64 * 64;
        dst[..head].copy_from_slice(&src[..head]);
        let (d, s) = (
            dst[head..][..body].as_mut_ptr(),
            src[head..][..body].as_ptr(),
        );
        for k in (0..body).step_by(64) {
            // SAFETY: `k + 64 <= body`, so the 64 bytes read and written lie inside the
            // two sub-slices just taken; `d + k` is 64-byte aligned (`head` aligned the
            // start), as the streaming store needs 16; SSE2 is baseline on x86-64.
            unsafe {
                let (d, s) = (d.add(k).cast::<__m128i>(), s.add(k).cast::<__m128i>());
                let x = [
                    _mm_loadu_si128(s),
                    _mm_loadu_si128(s.add(1)),
                    _mm_loadu_si128(s.add(2)),
                    _mm_loadu_si128(s.add(3)),
                ];
                for (j, v) in x.into_iter().enumerate() {
                    _mm_stream_si128(d.add(j), v);
                }
            }
        }
        dst[head + body..].copy_from_slice(&src[head + body..]);
    }

    /// A store fence: earlier streaming stores are globally visible before later
    /// stores.
    #[inline]
    pub(super) fn fence() {
        // SAFETY: SSE is baseline on x86-64; the fence has no operands.
        unsafe { _mm_sfence() }
    }
}

/// A transpose in memory: target element (i, o) at `dst[d0 + o·d_out + i]` takes the
/// source element at element index `s0 + i·s_in + o` of the bytes `src`; `inner ×
/// outer` elements, walked in cache-sized tiles (both the source lines read and the
/// target lines written stay in L1), bounds checked once per call.
#[allow(clippy::too_many_arguments)]
#[inline]
fn transpose_tiles<T: Element, C: Combine<T>>(
    dst: &mut [T],
    d0: usize,
    d_out: usize,
    src: &[u8],
    s0: usize,
    s_in: usize,
    inner: usize,
    outer: usize,
    c: C,
    stream: bool,
) {
    let b = T::BYTES;
    // The largest indices touched, checked once so that the tile loops need no checks.
    let d_last = d0 + (outer - 1) * d_out + inner;
    let s_last = s0 + (inner - 1) * s_in + outer;
    assert!(
        d_last <= dst.len() && s_last * b <= src.len(),
        "move out of bounds"
    );
    let dp = dst.as_mut_ptr();
    let sp = src.as_ptr();
    #[cfg(target_arch = "x86_64")]
    if C::PLAIN && matches!(b, 4 | 8 | 16) && simd::available() {
        if stream {
            // Tiles transposed into a scratch tile in L1, whose lines are then
            // streamed into the target lines ([`copy_run`]).
            let mut scratch = Scratch([0; SCRATCH_BYTES]);
            let te = STREAM_TILE;
            for_tiles(inner, outer, te, te, |i0, i1, o0, o1| {
                let (ti, to) = (i1 - i0, o1 - o0);
                let tp = scratch.0.as_mut_ptr();
                // SAFETY: the source indices are inside the bounds asserted above; the
                // scratch tile holds `ti·to·b <= SCRATCH_BYTES` bytes; AVX is available.
                unsafe {
                    simd::transpose(b, tp, ti, sp.add((s0 + i0 * s_in + o0) * b), s_in, ti, to)
                };
                for o in o0..o1 {
                    // SAFETY: target line `o`, elements `i0..i1`, lies inside `dst`
                    // (bounds asserted above) and no other reference to it is alive.
                    let line = unsafe {
                        std::slice::from_raw_parts_mut(
                            dp.add(d0 + o * d_out + i0).cast::<u8>(),
                            ti * b,
                        )
                    };
                    copy_run(line, &scratch.0[(o - o0) * ti * b..][..ti * b], true);
                }
            });
            return;
        }
        // SAFETY: the bounds were asserted above; AVX is available; b is 4, 8 or 16.
        unsafe {
            simd::transpose(
                b,
                dp.cast::<u8>().add(d0 * b),
                d_out,
                sp.add(s0 * b),
                s_in,
                inner,
                outer,
            )
        };
        return;
    }
    // SAFETY (both loops): o < outer and i < inner, so every index is below the bounds
    // asserted above; unaligned reads because packages are bytes.
    let at = |i: usize, o: usize| unsafe {
        c.put(
            std::ptr::read_unaligned(sp.add((s0 + i * s_in + o) * b).cast::<T>()),
            &mut *dp.add(d0 + o * d_out + i),
        );
    };
    if s_in <= SMALL_STRIDE {
        // A packed piece (the source tile is a few KiB): read the source contiguously
        // and scatter into the target's lines; measured 1.8x faster than the other
        // order for 32 x 32 f64 pieces into a 5000-row target.
        let t = tile::<T>();
        for_tiles(inner, outer, t, t, |i0, i1, o0, o1| {
            for i in i0..i1 {
                for o in o0..o1 {
                    at(i, o);
                }
            }
        });
    } else {
        // A large source stride (straight from a local matrix, into A or into a dense
        // package piece): write the target contiguously, read the source in tiles of
        // 2 × tile lines; measured 1.3–2x faster than contiguous reads.
        let t = 2 * tile::<T>();
        for_tiles(inner, outer, t, t, |i0, i1, o0, o1| {
            for o in o0..o1 {
                for i in i0..i1 {
                    at(i, o);
                }
            }
        });
    }
}

/// Register transposes with SIMD instructions.
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::{
        _mm256_loadu_pd, _mm256_loadu_ps, _mm256_permute2f128_pd, _mm256_permute2f128_ps,
        _mm256_shuffle_ps, _mm256_storeu_pd, _mm256_storeu_ps, _mm256_unpackhi_pd,
        _mm256_unpackhi_ps, _mm256_unpacklo_pd, _mm256_unpacklo_ps,
    };

    /// Target strides up to which the transposes read along the source lines.
    const ALONG_LINES_MAX: usize = 64;

    /// Whether the register transposes may run (AVX, detected once at run time).
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx")
    }

    /// Transposes `inner × outer` elements of `bytes` = 4, 8 or 16 bytes: element
    /// (i, o) of the target, at element index `o·d_out + i` from `dst`, takes the
    /// source element at index `i·s_in + o` from `src` (both unaligned). Bits are
    /// moved unchanged (shuffles only, no arithmetic), so every element type of that
    /// size may go through the float registers.
    ///
    /// Walks 64 × 64 tiles, and in each k × k squares (k = 8, 4, 2 for 4-, 8- and
    /// 16-byte elements): k 32-byte loads along k source lines, shuffles, k 32-byte
    /// stores along k target lines — measured 1.5x faster than the element loop for
    /// f64 on 32 × 32 pieces of a 5000-row matrix, whichever order the pieces are
    /// visited in; the edges element by element.
    ///
    /// # Safety
    /// AVX must be available ([`available`]), `bytes` one of 4, 8, 16, and every
    /// index above must lie inside the allocations behind `dst` and `src`.
    #[target_feature(enable = "avx")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn transpose(
        bytes: usize,
        dst: *mut u8,
        d_out: usize,
        src: *const u8,
        s_in: usize,
        inner: usize,
        outer: usize,
    ) {
        let along = along_lines(d_out, s_in);
        // SAFETY (all closures): `walk` passes indices inside (inner, outer) — whole
        // squares to the square kernels — which lie inside the allocations by the
        // caller's contract.
        match bytes {
            4 => {
                let (d, s) = (dst.cast::<f32>(), src.cast::<f32>());
                let sq = |i, o| unsafe {
                    square4(d.add(o * d_out + i), d_out, s.add(i * s_in + o), s_in)
                };
                walk(inner, outer, 8, along, sq, |i, o| unsafe {
                    one(d, d_out, s, s_in, i, o)
                });
            }
            8 => {
                let (d, s) = (dst.cast::<f64>(), src.cast::<f64>());
                let sq = |i, o| unsafe {
                    square8(d.add(o * d_out + i), d_out, s.add(i * s_in + o), s_in)
                };
                walk(inner, outer, 4, along, sq, |i, o| unsafe {
                    one(d, d_out, s, s_in, i, o)
                });
            }
            16 => {
                // A 16-byte element is two f64 lanes.
                let (d, s) = (dst.cast::<[f64; 2]>(), src.cast::<[f64; 2]>());
                let sq = |i, o| unsafe {
                    square16(
                        d.add(o * d_out + i).cast(),
                        d_out,
                        s.add(i * s_in + o).cast(),
                        s_in,
                    )
                };
                walk(inner, outer, 2, along, sq, |i, o| unsafe {
                    one(d, d_out, s, s_in, i, o)
                });
            }
            _ => unreachable!("register transposes exist for 4, 8 and 16 bytes"),
        }
    }

    /// One element of the transpose (an edge).
    ///
    /// # Safety
    /// Both indices inside their allocations.
    #[inline(always)]
    unsafe fn one<E>(d: *mut E, d_out: usize, s: *const E, s_in: usize, i: usize, o: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            d.add(o * d_out + i)
                .write_unaligned(s.add(i * s_in + o).read_unaligned())
        }
    }

    /// Walks the tiles and `k × k` squares of an `inner × outer` transpose: `square(i,
    /// o)` for every whole square (i + k ≤ inner, o + k ≤ outer), `one(i, o)` for the
    /// elements of the edges.
    #[inline(always)]
    fn walk(
        inner: usize,
        outer: usize,
        k: usize,
        along_lines: bool,
        square: impl Fn(usize, usize),
        one: impl Fn(usize, usize),
    ) {
        const T: usize = 64;
        let (ik, ok) = (inner - inner % k, outer - outer % k);
        for o0 in (0..outer).step_by(T) {
            let o1 = (o0 + T).min(outer);
            for i0 in (0..inner).step_by(T) {
                let i1 = (i0 + T).min(inner);
                // Ends of the whole squares of the tile.
                let (ib, ob) = (i1.min(ik).max(i0), o1.min(ok).max(o0));
                if along_lines {
                    for i in (i0..ib).step_by(k) {
                        for o in (o0..ob).step_by(k) {
                            square(i, o);
                        }
                    }
                } else {
                    for o in (o0..ob).step_by(k) {
                        for i in (i0..ib).step_by(k) {
                            square(i, o);
                        }
                    }
                }
                // The edges: the last inner elements of every line, the last lines.
                for o in o0..o1 {
                    for i in ib..i1 {
                        one(i, o);
                    }
                }
                for o in ob..o1 {
                    for i in i0..ib {
                        one(i, o);
                    }
                }
            }
        }
    }

    /// Walk along the source lines (sequential reads) when the target is a small dense
    /// piece that stays in L1; otherwise along the target lines.
    fn along_lines(d_out: usize, s_in: usize) -> bool {
        d_out <= ALONG_LINES_MAX && s_in > ALONG_LINES_MAX
    }

    /// A 4 × 4 square of 8-byte elements from `s` (lines `s_in` apart) to `q` (lines
    /// `d_out` apart): four loads, two shuffle stages, four stores.
    ///
    /// # Safety
    /// AVX; the square inside both allocations.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn square8(q: *mut f64, d_out: usize, p: *const f64, s_in: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            let r0 = _mm256_loadu_pd(p);
            let r1 = _mm256_loadu_pd(p.add(s_in));
            let r2 = _mm256_loadu_pd(p.add(2 * s_in));
            let r3 = _mm256_loadu_pd(p.add(3 * s_in));
            let t0 = _mm256_unpacklo_pd(r0, r1);
            let t1 = _mm256_unpackhi_pd(r0, r1);
            let t2 = _mm256_unpacklo_pd(r2, r3);
            let t3 = _mm256_unpackhi_pd(r2, r3);
            _mm256_storeu_pd(q, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_storeu_pd(q.add(d_out), _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_storeu_pd(q.add(2 * d_out), _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_storeu_pd(q.add(3 * d_out), _mm256_permute2f128_pd(t1, t3, 0x31));
        }
    }

    /// A 2 × 2 square of 16-byte elements (two f64 lanes each; strides in elements).
    ///
    /// # Safety
    /// AVX; the square inside both allocations.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn square16(q: *mut f64, d_out: usize, p: *const f64, s_in: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            let r0 = _mm256_loadu_pd(p);
            let r1 = _mm256_loadu_pd(p.add(2 * s_in));
            _mm256_storeu_pd(q, _mm256_permute2f128_pd(r0, r1, 0x20));
            _mm256_storeu_pd(q.add(2 * d_out), _mm256_permute2f128_pd(r0, r1, 0x31));
        }
    }

    /// An 8 × 8 square of 4-byte elements: pairs of lines interleaved, then pairs of
    /// pairs, then the two 128-bit halves exchanged.
    ///
    /// # Safety
    /// AVX; the square inside both allocations.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn square4(q: *mut f32, d_out: usize, p: *const f32, s_in: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            let r: [_; 8] = std::array::from_fn(|j| _mm256_loadu_ps(p.add(j * s_in)));
            let t0 = _mm256_unpacklo_ps(r[0], r[1]);
            let t1 = _mm256_unpackhi_ps(r[0], r[1]);
            let t2 = _mm256_unpacklo_ps(r[2], r[3]);
            let t3 = _mm256_unpackhi_ps(r[2], r[3]);
            let t4 = _mm256_unpacklo_ps(r[4], r[5]);
            let t5 = _mm256_unpackhi_ps(r[4], r[5]);
            let t6 = _mm256_unpacklo_ps(r[6], r[7]);
            let t7 = _mm256_unpackhi_ps(r[6], r[7]);
            let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let u1 = _mm256_shuffle_ps::<0xee>(t0, t2);
            let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let u3 = _mm256_shuffle_ps::<0xee>(t1, t3);
            let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let u5 = _mm256_shuffle_ps::<0xee>(t4, t6);
            let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let u7 = _mm256_shuffle_ps::<0xee>(t5, t7);
            for (j, (a, b)) in [(u0, u4), (u1, u5), (u2, u6), (u3, u7)]
                .into_iter()
                .enumerate()
            {
                _mm256_storeu_ps(q.add(j * d_out), _mm256_permute2f128_ps::<0x20>(a, b));
                _mm256_storeu_ps(q.add((j + 4) * d_out), _mm256_permute2f128_ps::<0x31>(a, b));
            }
        }
    }
}

/// Tile edge, in elements, of streamed transposes (a 32 × 32 tile of 16-byte elements
/// is 16 KiB, half of L1).
const STREAM_TILE: usize = 32;
/// Bytes of the scratch tile of streamed transposes.
const SCRATCH_BYTES: usize = STREAM_TILE * STREAM_TILE * 16;

/// A scratch tile, aligned to a cache line.
#[repr(align(64))]
struct Scratch([u8; SCRATCH_BYTES]);

/// Source strides up to which [`transpose_tiles`] treats the source as a packed piece.
const SMALL_STRIDE: usize = 64;

/// Calls `f(i0, i1, o0, o1)` for the tiles of an `inner × outer` rectangle.
#[inline(always)]
fn for_tiles(
    inner: usize,
    outer: usize,
    ti: usize,
    to: usize,
    mut f: impl FnMut(usize, usize, usize, usize),
) {
    let mut o0 = 0;
    while o0 < outer {
        let o1 = (o0 + to).min(outer);
        let mut i0 = 0;
        while i0 < inner {
            let i1 = (i0 + ti).min(inner);
            f(i0, i1, o0, o1);
            i0 = i1;
        }
        o0 = o1;
    }
}

/// Packs one run list entry from `src` into the package bytes `out` (relative to the
/// package start); with `stream`, with non-temporal stores where the kernels have them
/// (the caller ends the pass with [`stream_fence`]).
#[inline]
pub(crate) fn pack<T: Element>(out: &mut [u8], r: &PackRun, src: &[T], stream: bool) {
    let s = T::BYTES;
    if r.step != 1 {
        pack_transposed(out, r, src, stream);
        return;
    }
    let sb = as_bytes(src);
    if r.ld == r.inner {
        let n = r.inner * r.outer * s;
        copy_run(&mut out[r.dst * s..][..n], &sb[r.src * s..][..n], stream);
        return;
    }
    for o in 0..r.outer {
        // Lines of B a few strides ahead: a strided read misses the cache on every
        // line and no hardware prefetcher follows strides across pages.
        if o + PREFETCH_LINES < r.outer {
            prefetch(&sb[(r.src + (o + PREFETCH_LINES) * r.ld) * s..][..r.inner * s]);
        }
        let line = &sb[(r.src + o * r.ld) * s..][..r.inner * s];
        copy_run(
            &mut out[(r.dst + o * r.inner) * s..][..r.inner * s],
            line,
            stream,
        );
    }
}

/// How many lines ahead strided packing prefetches.
const PREFETCH_LINES: usize = 4;

/// Asks the processor to bring the cache lines of `bytes` (up to 8 of them) into the
/// cache (a hint; nothing on targets without one).
#[inline(always)]
fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64).take(8) {
        // SAFETY: a prefetch only hints; the address is inside `bytes`; SSE is
        // baseline on x86-64.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast::<i8>(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// Packs a transposing run: gathers with stride `step` and writes dense lines.
fn pack_transposed<T: Element>(out: &mut [u8], r: &PackRun, src: &[T], stream: bool) {
    let n = r.inner * r.outer;
    let bytes = &mut out[r.dst * T::BYTES..][..n * T::BYTES];
    let Ok(dst) = bytemuck::try_cast_slice_mut::<u8, T>(bytes) else {
        // An unaligned package (never for the engine's 64-byte aligned packages in a
        // buffer of 8-byte words): element by element.
        for o in 0..r.outer {
            for i in 0..r.inner {
                let k = (o * r.inner + i) * T::BYTES;
                src[r.src + o * r.ld + i * r.step].write(&mut bytes[k..k + T::BYTES]);
            }
        }
        return;
    };
    if r.ld == 1 {
        // The source is contiguous along the lines' index `o`: a tiled transpose.
        transpose_tiles(
            dst,
            0,
            r.inner,
            as_bytes(src),
            r.src,
            r.step,
            r.inner,
            r.outer,
            Assign,
            stream,
        );
    } else {
        for o in 0..r.outer {
            for (i, a) in dst[o * r.inner..][..r.inner].iter_mut().enumerate() {
                *a = src[r.src + o * r.ld + i * r.step];
            }
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

    /// Plain transposes of `T` (4, 8 or 16 bytes: the register-transpose path) match
    /// the element loop bit for bit, for shapes around every square size and tile edge
    /// and for both walking orders.
    fn plain_transposes_move_every_bit<T: Element>(make: impl Fn(u64) -> T) {
        // Bit patterns that are NaNs (signalling and quiet, with payloads) when read
        // as floats: the kernels move them through float registers.
        let pattern = |k: usize| -> u64 {
            let x = (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            0x7ff0_0000_0000_0001 | (x & 0x800f_ffff_ffff_fffe)
        };
        let src: Vec<T> = (0..40_000).map(|k| make(pattern(k))).collect();
        let shapes = [
            (1, 1),
            (4, 4),
            (5, 7),
            (8, 8),
            (9, 17),
            (63, 65),
            (64, 64),
            (129, 3),
            (3, 131),
        ];
        for &(rows, cols) in &shapes {
            // Small source stride (a packed piece) and large ones, target strides both
            // small (a dense piece) and large.
            for &(s_rs, d_cs) in &[
                (cols, rows),
                (cols + 70, rows),
                (cols, rows + 90),
                (cols + 1, rows + 3),
            ] {
                let m = Move {
                    dst: 2,
                    d_rs: 1,
                    d_cs,
                    src: 3,
                    s_rs,
                    s_cs: 1,
                    rows,
                    cols,
                };
                let len = 2 + d_cs * cols + rows;
                let mut b = vec![make(7); len];
                for i in 0..rows {
                    for j in 0..cols {
                        b[2 + i + j * d_cs] = src[3 + i * s_rs + j];
                    }
                }
                // Through the cache and with streaming stores (scratch tiles).
                for stream in [false, true] {
                    let mut a = vec![make(7); len];
                    apply(&mut a, &m, &Slice(&src), Assign, stream);
                    stream_fence();
                    assert!(
                        as_bytes(&a) == as_bytes(&b),
                        "{} bytes, stream {stream}: {m:?}",
                        T::BYTES
                    );
                }
            }
        }
    }

    #[test]
    fn plain_transposes_of_4_8_16_byte_elements_move_every_bit() {
        use num_complex::{Complex32, Complex64};
        plain_transposes_move_every_bit(|x| x as i32);
        plain_transposes_move_every_bit(|x| f32::from_bits((x >> 32) as u32 | 0x7f80_0001));
        plain_transposes_move_every_bit(|x| x as i64);
        plain_transposes_move_every_bit(f64::from_bits);
        plain_transposes_move_every_bit(|x| {
            Complex32::new(f32::from_bits(x as u32), f32::from_bits((x >> 32) as u32))
        });
        plain_transposes_move_every_bit(|x| {
            Complex64::new(f64::from_bits(x), f64::from_bits(x.rotate_left(17)))
        });
    }

    #[test]
    fn streamed_runs_copy_every_byte_at_every_alignment() {
        let src: Vec<u8> = (0..4096u32).map(|x| (x * 131 % 251) as u8).collect();
        let mut buf = vec![0u8; 4096 + 128];
        for len in [0, 1, 63, 64, 127, 128, 129, 200, 256, 1000, 2048] {
            for dst_off in [0, 1, 8, 16, 48, 63, 64] {
                for src_off in [0, 3, 16] {
                    buf.iter_mut().for_each(|x| *x = 0xee);
                    let s = &src[src_off..][..len];
                    copy_run(&mut buf[dst_off..][..len], s, true);
                    stream_fence();
                    assert_eq!(&buf[dst_off..][..len], s, "{len} bytes at {dst_off}");
                    // Nothing outside the run is written.
                    assert!(buf[..dst_off].iter().all(|&x| x == 0xee));
                    assert!(buf[dst_off + len..].iter().all(|&x| x == 0xee));
                }
            }
        }
    }

    #[test]
    fn streamed_packing_matches_cached_packing() {
        let src: Vec<f64> = (0..20_000).map(|x| x as f64 * 0.25).collect();
        for r in [
            // straight runs, dense and strided
            PackRun {
                src: 5,
                ld: 40,
                step: 1,
                inner: 40,
                outer: 30,
                dst: 0,
            },
            PackRun {
                src: 3,
                ld: 101,
                step: 1,
                inner: 37,
                outer: 50,
                dst: 8,
            },
            // transposing runs: small and large source strides
            PackRun {
                src: 2,
                ld: 1,
                step: 64,
                inner: 33,
                outer: 64,
                dst: 16,
            },
            PackRun {
                src: 7,
                ld: 1,
                step: 300,
                inner: 40,
                outer: 65,
                dst: 1,
            },
        ] {
            let n = 8 * (r.dst + r.inner * r.outer);
            let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
            pack(&mut a, &r, &src, false);
            pack(&mut b, &r, &src, true);
            stream_fence();
            assert_eq!(a, b, "{r:?}");
            // And the cached packing is the reference's element order.
            for o in 0..r.outer {
                for i in 0..r.inner {
                    let k = 8 * (r.dst + o * r.inner + i);
                    let x = f64::from_ne_bytes(a[k..k + 8].try_into().unwrap());
                    assert_eq!(x, src[r.src + o * r.ld + i * r.step], "{r:?}");
                }
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
        with_combine!(u, c => apply(&mut a, &m, &Slice(&src), c, false));
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
                with_combine!(u, c => apply(&mut a, &m, &Slice(&src), c, false));
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
                with_combine!(u, c => apply(&mut a2, &m, &Bytes(&bytes), c, false));
                naive(&mut b2, &m, &src, 1.0, 0.0);
                for (x, y) in a2.iter().zip(&b2) {
                    assert!(x == y || (x.is_nan() && y.is_nan()));
                }
            }
        }
    }
}
