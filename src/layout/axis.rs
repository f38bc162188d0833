//! One dimension of a layout: how `0..len` is cut into intervals, and which class
//! (process row/column for block-cyclic, block index for grids) each interval has.

/// A 1-D distribution of `0..len` into intervals labelled by a class.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Axis<'a> {
    /// Block-cyclic: index `r` of the (sub)range sits at global index `off + r`, in
    /// global block `(off + r) / block`, of class `(src + block index) % procs`.
    Cyclic {
        len: usize,
        off: usize,
        block: usize,
        procs: usize,
        src: usize,
    },
    /// Arbitrary splits `s[0] = 0 < s[1] < … < s[k] = len`; interval `i` has class `i`.
    Splits(&'a [usize]),
}

impl Axis<'_> {
    /// Length of the axis.
    pub(crate) fn len(&self) -> usize {
        match *self {
            Axis::Cyclic { len, .. } => len,
            Axis::Splits(s) => *s.last().unwrap_or(&0),
        }
    }

    /// Number of distinct classes.
    pub(crate) fn classes(&self) -> usize {
        match *self {
            Axis::Cyclic { procs, .. } => procs,
            Axis::Splits(s) => s.len().saturating_sub(1),
        }
    }

    /// Calls `f(start, end, class, interval index)` for every interval in order.
    /// For cyclic axes the interval index is the block index within the subrange.
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize, usize, usize, usize)) {
        match *self {
            Axis::Cyclic {
                len,
                off,
                block,
                procs,
                src,
            } => {
                let mut start = 0;
                let mut k = 0;
                while start < len {
                    let g = off + start;
                    let gb = g / block;
                    let end = ((gb + 1) * block - off).min(len);
                    f(start, end, (src + gb) % procs, k);
                    start = end;
                    k += 1;
                }
            }
            Axis::Splits(s) => {
                for (i, w) in s.windows(2).enumerate() {
                    f(w[0], w[1], i, i);
                }
            }
        }
    }

    /// The interval boundaries (0, …, len).
    pub(crate) fn boundaries(&self) -> Vec<usize> {
        let mut b = vec![0];
        self.for_each(|_, e, _, _| b.push(e));
        b
    }

    /// The class of index `r`.
    pub(crate) fn class_of(&self, r: usize) -> usize {
        match *self {
            Axis::Cyclic {
                off,
                block,
                procs,
                src,
                ..
            } => (src + (off + r) / block) % procs,
            Axis::Splits(s) => s.partition_point(|&x| x <= r) - 1,
        }
    }
}

/// Sweeps two axes of equal length together and calls `f(len, class_a, class_b)` for
/// every piece of their overlay.
///
/// # Complexity
/// O(intervals of a + intervals of b).
pub(crate) fn overlay(a: &Axis<'_>, b: &Axis<'_>, mut f: impl FnMut(usize, usize, usize)) {
    debug_assert_eq!(a.len(), b.len());
    let ia = intervals(a);
    let ib = intervals(b);
    let (mut i, mut j) = (0, 0);
    let mut pos = 0;
    while i < ia.len() && j < ib.len() {
        let (ea, ca) = ia[i];
        let (eb, cb) = ib[j];
        let end = ea.min(eb);
        if end > pos {
            f(end - pos, ca, cb);
        }
        pos = end;
        if ea == end {
            i += 1;
        }
        if eb == end {
            j += 1;
        }
    }
}

fn intervals(a: &Axis<'_>) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    a.for_each(|_, e, c, _| v.push((e, c)));
    v
}

/// The overlap counts `R[class_a][class_b]` of two axes, as sorted `(ca, cb, count)`.
pub(crate) fn overlap_counts(a: &Axis<'_>, b: &Axis<'_>) -> Vec<(u32, u32, u64)> {
    let (na, nb) = (a.classes(), b.classes());
    if na.saturating_mul(nb) <= 1 << 22 {
        let mut dense = vec![0u64; na * nb];
        overlay(a, b, |len, ca, cb| dense[ca * nb + cb] += len as u64);
        dense
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0)
            .map(|(k, &v)| ((k / nb) as u32, (k % nb) as u32, v))
            .collect()
    } else {
        let mut pieces = Vec::new();
        overlay(a, b, |len, ca, cb| {
            pieces.push((ca as u32, cb as u32, len as u64))
        });
        pieces.sort_unstable_by_key(|p| (p.0, p.1));
        let mut out: Vec<(u32, u32, u64)> = Vec::with_capacity(pieces.len());
        for (ca, cb, l) in pieces {
            match out.last_mut() {
                Some(last) if last.0 == ca && last.1 == cb => last.2 += l,
                _ => out.push((ca, cb, l)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclic_intervals_respect_offset_and_source() {
        let a = Axis::Cyclic {
            len: 10,
            off: 3,
            block: 4,
            procs: 3,
            src: 1,
        };
        assert_eq!(a.boundaries(), vec![0, 1, 5, 9, 10]);
        // global rows 3 | 4..8 | 8..12 | 12 -> blocks 0,1,2,3 -> classes 1,2,0,1
        let mut classes = vec![];
        a.for_each(|_, _, c, _| classes.push(c));
        assert_eq!(classes, vec![1, 2, 0, 1]);
        for r in 0..10 {
            let (off, size) = (3, 4); // global row off + r lies in block (off + r) / size
            let block = (off + r) / size;
            assert_eq!(a.class_of(r), (1 + block) % 3);
        }
    }

    #[test]
    fn overlap_counts_match_per_index_loop() {
        let s = [0, 2, 7, 10];
        let a = Axis::Splits(&s);
        let b = Axis::Cyclic {
            len: 10,
            off: 0,
            block: 3,
            procs: 2,
            src: 0,
        };
        let mut expect = std::collections::BTreeMap::new();
        for r in 0..10 {
            *expect
                .entry((a.class_of(r) as u32, b.class_of(r) as u32))
                .or_insert(0u64) += 1;
        }
        let got: Vec<_> = overlap_counts(&a, &b);
        let exp: Vec<_> = expect.into_iter().map(|((x, y), v)| (x, y, v)).collect();
        assert_eq!(got, exp);
    }
}

/// Statistics of the overlay pieces of one class pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PieceStats {
    /// Total length.
    pub(crate) len: u64,
    /// Number of pieces.
    pub(crate) pieces: u64,
    /// Number of pieces of length 1.
    pub(crate) ones: u64,
    /// Shortest piece.
    pub(crate) min_len: u64,
}

/// Like [`overlap_counts`], with piece statistics, as sorted `(ca, cb, stats)`.
pub(crate) fn overlap_stats(a: &Axis<'_>, b: &Axis<'_>) -> Vec<(u32, u32, PieceStats)> {
    let mut pieces = Vec::new();
    overlay(a, b, |len, ca, cb| {
        pieces.push((ca as u32, cb as u32, len as u64))
    });
    pieces.sort_unstable_by_key(|p| (p.0, p.1));
    let mut out: Vec<(u32, u32, PieceStats)> = Vec::new();
    for (ca, cb, l) in pieces {
        let one = u64::from(l == 1);
        match out.last_mut() {
            Some((x, y, s)) if *x == ca && *y == cb => {
                s.len += l;
                s.pieces += 1;
                s.ones += one;
                s.min_len = s.min_len.min(l);
            }
            _ => out.push((
                ca,
                cb,
                PieceStats {
                    len: l,
                    pieces: 1,
                    ones: one,
                    min_len: l,
                },
            )),
        }
    }
    out
}
