//! The volume matrix as an outer product of the two per-dimension overlaps, written
//! row by row straight into CSR order.
//!
//! With the row overlaps `R = {(a, b, r)}` and the column overlaps `C = {(c, d, q)}`,
//! source rank `s` holds the class pairs `(a, c)` with `owner_B(a, c) = s`, and its row
//! of V is `{owner_A(b, d): r·q}` over `(a, b, r) ∈ R`, `(c, d, q) ∈ C`. For a
//! block-cyclic source every rank holds at most one class pair, and for a block-cyclic
//! target the product comes out in column order when it is walked with `b` or with
//! `d` outermost, so most rows need neither a sort nor a merge.

use crate::csr::Csr;

/// `(class, start)` per group of consecutive entries with equal first class, plus a
/// final `start` = `v.len()`.
fn groups(v: &[(u32, u32, u64)]) -> (Vec<u32>, Vec<usize>) {
    let mut class = Vec::new();
    let mut start = Vec::new();
    for (k, e) in v.iter().enumerate() {
        if class.last() != Some(&e.0) {
            class.push(e.0);
            start.push(k);
        }
    }
    start.push(v.len());
    (class, start)
}

/// Writes one class pair's product, `b` outermost (or `d` outermost), onto the ends of
/// `cols` and `vals`.
fn push_product(
    rows: &[(u32, u32, u64)],
    cols_of: &[(u32, u32, u64)],
    d_outer: bool,
    owner: &impl Fn(u32, u32) -> u32,
    cols: &mut Vec<u32>,
    vals: &mut Vec<u64>,
) {
    if d_outer {
        for &(_, d, q) in cols_of {
            for &(_, b, r) in rows {
                cols.push(owner(b, d));
                vals.push(r * q);
            }
        }
    } else {
        for &(_, b, r) in rows {
            for &(_, d, q) in cols_of {
                cols.push(owner(b, d));
                vals.push(r * q);
            }
        }
    }
}

fn strictly_increasing(c: &[u32]) -> bool {
    c.windows(2).all(|w| w[0] < w[1])
}

/// V from the overlaps `r` (sorted by `(a, b)`) and `c` (sorted by `(c, d)`), with
/// `source_owner(a, c)` and `target_owner(b, d)` the ranks (both `< ranks`).
///
/// # Complexity
/// O(ranks + A·C' + |r|·|c|) for `A` distinct `a` and `C'` distinct `c`, plus a sort of
/// the rows whose product is not in column order (several class pairs on one rank, or
/// a target whose owner is monotone in neither class).
///
/// # Panics
/// If `ranks` exceeds `u32::MAX` or an owner is out of range.
pub(super) fn outer_product(
    ranks: usize,
    r: &[(u32, u32, u64)],
    c: &[(u32, u32, u64)],
    source_owner: impl Fn(usize, usize) -> usize,
    target_owner: impl Fn(usize, usize) -> usize,
) -> Csr {
    assert!(
        ranks <= u32::MAX as usize,
        "Csr supports at most 2^32 columns"
    );
    let (ga, sa) = groups(r);
    let (gc, sc) = groups(c);
    // Class pairs bucketed by their source rank (counting sort).
    let pairs = ga.len() * gc.len();
    let mut owner_of_pair = Vec::with_capacity(pairs);
    let mut first = vec![0usize; ranks + 1];
    for &a in &ga {
        for &cc in &gc {
            let s = source_owner(a as usize, cc as usize);
            assert!(s < ranks, "source owner {s} outside {ranks} ranks");
            owner_of_pair.push(s as u32);
            first[s + 1] += 1;
        }
    }
    for s in 0..ranks {
        first[s + 1] += first[s];
    }
    let mut next = first.clone();
    let mut by_rank = vec![0u32; pairs];
    for (p, &s) in owner_of_pair.iter().enumerate() {
        by_rank[next[s as usize]] = p as u32;
        next[s as usize] += 1;
    }
    drop(owner_of_pair);
    drop(next);
    // Target owners tabulated when the table is no larger than the output.
    let nb = r.iter().map(|e| e.1 as usize + 1).max().unwrap_or(0);
    let nd = c.iter().map(|e| e.1 as usize + 1).max().unwrap_or(0);
    let checked = |b: usize, d: usize| {
        let t = target_owner(b, d);
        assert!(t < ranks, "target owner {t} outside {ranks} ranks");
        t as u32
    };
    let table: Option<Vec<u32>> = (nb.saturating_mul(nd) <= r.len() * c.len()).then(|| {
        (0..nb)
            .flat_map(|b| (0..nd).map(move |d| (b, d)))
            .map(|(b, d)| checked(b, d))
            .collect()
    });
    let owner = |b: u32, d: u32| match &table {
        Some(t) => t[b as usize * nd + d as usize],
        None => checked(b as usize, d as usize),
    };
    let total = r.len() * c.len();
    let mut row_ptr = Vec::with_capacity(ranks + 1);
    let mut cols: Vec<u32> = Vec::with_capacity(total);
    let mut vals: Vec<u64> = Vec::with_capacity(total);
    let mut scratch: Vec<(u32, u64)> = Vec::new();
    let mut d_outer = false;
    row_ptr.push(0);
    for s in 0..ranks {
        let start = cols.len();
        let mine = &by_rank[first[s]..first[s + 1]];
        let product = |p: u32, d_outer: bool, cols: &mut Vec<u32>, vals: &mut Vec<u64>| {
            let (x, y) = (p as usize / gc.len(), p as usize % gc.len());
            push_product(
                &r[sa[x]..sa[x + 1]],
                &c[sc[y]..sc[y + 1]],
                d_outer,
                &owner,
                cols,
                vals,
            );
        };
        for &p in mine {
            product(p, d_outer, &mut cols, &mut vals);
        }
        let mut sorted = strictly_increasing(&cols[start..]);
        if !sorted && mine.len() == 1 {
            // the other walk may be the sorted one (e.g. a column-major target)
            cols.truncate(start);
            vals.truncate(start);
            product(mine[0], !d_outer, &mut cols, &mut vals);
            sorted = strictly_increasing(&cols[start..]);
            if sorted {
                d_outer = !d_outer;
            }
        }
        if !sorted {
            scratch.clear();
            scratch.extend(
                cols[start..]
                    .iter()
                    .copied()
                    .zip(vals[start..].iter().copied()),
            );
            scratch.sort_unstable_by_key(|e| e.0);
            cols.truncate(start);
            vals.truncate(start);
            for &(t, x) in &scratch {
                if cols.len() > start && cols[cols.len() - 1] == t {
                    *vals.last_mut().expect("pushed with cols") += x;
                } else {
                    cols.push(t);
                    vals.push(x);
                }
            }
        }
        row_ptr.push(cols.len());
    }
    Csr::from_parts(ranks, ranks, row_ptr, cols, vals)
}

/// V one column at a time, without building V: for each target rank `t` that receives
/// anything, the nonzeros `V[s][t]` over source ranks `s`.
///
/// Column `t` is the sum over the target class pairs `(b, d)` owned by `t` of the
/// product of R's column `b` and C's column `d`, placed at `source_owner(a, c)`. When
/// `t` owns one class pair and no source rank holds two (every block-cyclic pair of
/// layouts), the product is streamed as it is formed: no buffer, no sort.
pub(crate) struct Columns {
    ranks: usize,
    /// Number of distinct source column classes (the stride of `src`).
    nc: usize,
    /// `src[ia·nc + ic]`: the source owner of the `ia`-th distinct row class and the
    /// `ic`-th distinct column class.
    src: Vec<u32>,
    /// R regrouped by target row class `b`: `(ia, r)`, with `r_start[b]..r_start[b + 1]`.
    r_by_b: Vec<(u32, u64)>,
    r_start: Vec<usize>,
    /// C regrouped by target column class `d`: `(ic, q)`.
    c_by_d: Vec<(u32, u64)>,
    c_start: Vec<usize>,
    /// `(t, b, d)` for every target class pair that receives, sorted.
    pairs: Vec<(u32, u32, u32)>,
    /// Start of each distinct `t` in `pairs`, plus `pairs.len()`.
    t_start: Vec<usize>,
    /// No source rank holds two class pairs.
    injective: bool,
    total: u64,
}

/// Overlap entries regrouped by their second class: `(index of the first class's group,
/// count)` in buckets `start[x]..start[x + 1]`, ascending in the group index.
fn by_second(v: &[(u32, u32, u64)], group_start: &[usize]) -> (Vec<(u32, u64)>, Vec<usize>) {
    let n2 = v.iter().map(|e| e.1 as usize + 1).max().unwrap_or(0);
    let mut start = vec![0usize; n2 + 1];
    for e in v {
        start[e.1 as usize + 1] += 1;
    }
    for x in 0..n2 {
        start[x + 1] += start[x];
    }
    let mut next = start.clone();
    let mut out = vec![(0u32, 0u64); v.len()];
    for g in 0..group_start.len().saturating_sub(1) {
        for e in &v[group_start[g]..group_start[g + 1]] {
            out[next[e.1 as usize]] = (g as u32, e.2);
            next[e.1 as usize] += 1;
        }
    }
    (out, start)
}

impl Columns {
    /// The columns of V for the overlaps `r` (sorted by `(a, b)`) and `c` (sorted by
    /// `(c, d)`), with `source_owner(a, c)` and `target_owner(b, d)` (both `< ranks`).
    ///
    /// # Complexity
    /// O(|r| + |c| + A·C' + B'·D' log(B'·D')) for `A`, `C'` distinct source classes and
    /// `B'`, `D'` distinct target classes; memory the same.
    ///
    /// # Panics
    /// If `ranks` exceeds `u32::MAX` or an owner is out of range.
    pub(crate) fn new(
        ranks: usize,
        r: &[(u32, u32, u64)],
        c: &[(u32, u32, u64)],
        source_owner: impl Fn(usize, usize) -> usize,
        target_owner: impl Fn(usize, usize) -> usize,
    ) -> Self {
        assert!(
            ranks <= u32::MAX as usize,
            "Csr supports at most 2^32 columns"
        );
        let (ga, sa) = groups(r);
        let (gc, sc) = groups(c);
        let mut src = Vec::with_capacity(ga.len() * gc.len());
        let mut held = vec![false; ranks];
        let mut injective = true;
        for &a in &ga {
            for &cc in &gc {
                let s = source_owner(a as usize, cc as usize);
                assert!(s < ranks, "source owner {s} outside {ranks} ranks");
                injective &= !held[s];
                held[s] = true;
                src.push(s as u32);
            }
        }
        let (r_by_b, r_start) = by_second(r, &sa);
        let (c_by_d, c_start) = by_second(c, &sc);
        let mut pairs = Vec::new();
        for b in 0..r_start.len() - 1 {
            if r_start[b + 1] == r_start[b] {
                continue;
            }
            for d in 0..c_start.len() - 1 {
                if c_start[d + 1] == c_start[d] {
                    continue;
                }
                let t = target_owner(b, d);
                assert!(t < ranks, "target owner {t} outside {ranks} ranks");
                pairs.push((t as u32, b as u32, d as u32));
            }
        }
        pairs.sort_unstable();
        let mut t_start: Vec<usize> = (0..pairs.len())
            .filter(|&k| k == 0 || pairs[k - 1].0 != pairs[k].0)
            .collect();
        t_start.push(pairs.len());
        let sum = |v: &[(u32, u32, u64)]| v.iter().map(|e| e.2).sum::<u64>();
        Self {
            ranks,
            nc: gc.len(),
            src,
            r_by_b,
            r_start,
            c_by_d,
            c_start,
            pairs,
            t_start,
            injective,
            total: sum(r) * sum(c),
        }
    }

    /// Communicator size (V is `ranks × ranks`).
    pub(crate) fn ranks(&self) -> usize {
        self.ranks
    }

    /// Number of target ranks that receive anything (nonzero columns of V).
    pub(crate) fn len(&self) -> usize {
        self.t_start.len() - 1
    }

    /// The `k`-th receiving target rank; ascending in `k`.
    pub(crate) fn target(&self, k: usize) -> usize {
        self.pairs[self.t_start[k]].0 as usize
    }

    /// `Σ_{s,t} V[s][t]`.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// `f(source_owner(a, c), R[a][b]·C[c][d])` over R's column `b` and C's column `d`.
    fn product(&self, b: u32, d: u32, f: &mut impl FnMut(u32, u64)) {
        let rows = &self.r_by_b[self.r_start[b as usize]..self.r_start[b as usize + 1]];
        let cols = &self.c_by_d[self.c_start[d as usize]..self.c_start[d as usize + 1]];
        for &(ia, r) in rows {
            let owners = &self.src[ia as usize * self.nc..(ia as usize + 1) * self.nc];
            for &(ic, q) in cols {
                f(owners[ic as usize], r * q);
            }
        }
    }

    /// Calls `f(s, V[s][t])` for every nonzero of column `t = self.target(k)`, each `s`
    /// once, in no particular order. `scratch` is used when the column has to be merged.
    ///
    /// # Complexity
    /// O(nonzeros of the column), plus a sort of them when it has to be merged.
    pub(crate) fn visit(
        &self,
        k: usize,
        scratch: &mut Vec<(u32, u64)>,
        mut f: impl FnMut(u32, u64),
    ) {
        let mine = &self.pairs[self.t_start[k]..self.t_start[k + 1]];
        if self.injective && mine.len() == 1 {
            self.product(mine[0].1, mine[0].2, &mut f);
            return;
        }
        scratch.clear();
        for &(_, b, d) in mine {
            self.product(b, d, &mut |s, x| scratch.push((s, x)));
        }
        scratch.sort_unstable_by_key(|e| e.0);
        let mut i = 0;
        while i < scratch.len() {
            let s = scratch[i].0;
            let mut x = 0;
            while i < scratch.len() && scratch[i].0 == s {
                x += scratch[i].1;
                i += 1;
            }
            f(s, x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same matrix through triplets, the straightforward way.
    fn by_triplets(
        ranks: usize,
        r: &[(u32, u32, u64)],
        c: &[(u32, u32, u64)],
        so: &dyn Fn(usize, usize) -> usize,
        to: &dyn Fn(usize, usize) -> usize,
    ) -> Csr {
        let mut t = Vec::new();
        for &(a, b, x) in r {
            for &(cc, d, y) in c {
                t.push((
                    so(a as usize, cc as usize),
                    to(b as usize, d as usize),
                    x * y,
                ));
            }
        }
        Csr::from_triplets(ranks, ranks, t)
    }

    /// Vᵀ assembled from the column visitor, checking that every column is visited
    /// once, in ascending order, with each source rank at most once.
    fn transpose_of(cols: &Columns) -> Csr {
        let mut t = Vec::new();
        let mut scratch = Vec::new();
        for k in 0..cols.len() {
            assert!(k == 0 || cols.target(k - 1) < cols.target(k));
            let mut seen = vec![false; cols.ranks()];
            cols.visit(k, &mut scratch, |s, x| {
                assert!(!seen[s as usize], "source {s} twice in one column");
                seen[s as usize] = true;
                assert!(x > 0);
                t.push((cols.target(k), s as usize, x));
            });
        }
        Csr::from_triplets(cols.ranks(), cols.ranks(), t)
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    /// Random sorted overlap lists over `na × nb` classes.
    fn overlaps(na: u32, nb: u32, seed: &mut u64) -> Vec<(u32, u32, u64)> {
        let mut v = Vec::new();
        for a in 0..na {
            for b in 0..nb {
                if lcg(seed) % 3 != 0 {
                    v.push((a, b, 1 + lcg(seed) % 9));
                }
            }
        }
        v
    }

    #[test]
    fn matches_triplets_for_every_kind_of_owner() {
        let mut seed = 7u64;
        for _ in 0..200 {
            let (na, nb, nc, nd) = (
                1 + (lcg(&mut seed) % 5) as u32,
                1 + (lcg(&mut seed) % 5) as u32,
                1 + (lcg(&mut seed) % 5) as u32,
                1 + (lcg(&mut seed) % 5) as u32,
            );
            let r = overlaps(na, nb, &mut seed);
            let c = overlaps(nc, nd, &mut seed);
            let ranks = 30;
            // a random map of target classes onto ranks, shared ranks allowed
            let tmap: Vec<usize> = (0..nb * nd)
                .map(|_| lcg(&mut seed) as usize % ranks)
                .collect();
            let smap: Vec<usize> = (0..na * nc)
                .map(|_| lcg(&mut seed) as usize % ranks)
                .collect();
            let (ncu, ndu) = (nc as usize, nd as usize);
            let sources: [&dyn Fn(usize, usize) -> usize; 3] =
                [&|a, c| a * ncu + c, &|a, c| c * na as usize + a, &|a, c| {
                    smap[a * ncu + c]
                }];
            let targets: [&dyn Fn(usize, usize) -> usize; 4] = [
                &|b, d| b * ndu + d,
                &|b, d| d * nb as usize + b,
                &|b, d| tmap[b * ndu + d],
                &|b, d| ranks - 1 - (b * ndu + d),
            ];
            for so in sources {
                for to in targets {
                    let want = by_triplets(ranks, &r, &c, so, to);
                    let got = outer_product(ranks, &r, &c, so, to);
                    assert_eq!(got, want, "R={r:?} C={c:?}");
                    let cols = Columns::new(ranks, &r, &c, so, to);
                    assert_eq!(transpose_of(&cols), want.transpose(), "R={r:?} C={c:?}");
                    assert_eq!(cols.total(), want.sum());
                }
            }
        }
    }
}
