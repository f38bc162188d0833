//! Deterministic benchmark graphs for the mapping benchmark: random geometric graphs
//! and relabelings (std only).

/// The graphs' seeded generator: a [`copr::rng::SplitMix`], with a uniform real.
pub struct Rng(pub copr::rng::SplitMix);

impl Rng {
    /// The generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(copr::rng::SplitMix(seed))
    }

    /// The next 64 pseudo-random bits ([`copr::rng::SplitMix::next_u64`]).
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` points in the unit square (`dim = 2`) or cube (`dim = 3`; unused coordinates 0),
/// each coordinate `warp` of a uniform draw.
fn points(rng: &mut Rng, n: usize, dim: usize, warp: impl Fn(f64) -> f64) -> Vec<[f64; 3]> {
    (0..n)
        .map(|_| {
            let mut p = [0.0; 3];
            for x in p.iter_mut().take(dim) {
                *x = warp(rng.unit());
            }
            p
        })
        .collect()
}

/// A random geometric graph: `n` points uniform in the unit square (`dim = 2`) or cube
/// (`dim = 3`), an edge between points closer than the radius that gives a mean degree
/// of `degree`; each edge carries `2^(16 + 6u)` bytes (64 KiB – 4 MiB, log-uniform)
/// both ways. Task numbers are a random permutation of the points (`shuffle`) or in
/// generation order.
pub fn rgg(n: usize, dim: usize, degree: f64, seed: u64, shuffle: bool) -> Vec<(u32, u32, u64)> {
    let mut rng = Rng::new(seed);
    let pts = points(&mut rng, n, dim, |u| u);
    let r = if dim == 2 {
        (degree / (std::f64::consts::PI * n as f64)).sqrt()
    } else {
        (degree / (4.0 / 3.0 * std::f64::consts::PI * n as f64)).cbrt()
    };
    // cells of side >= r
    let cells = ((1.0 / r).floor() as usize).max(1);
    let cell_of = |p: &[f64; 3]| -> [usize; 3] {
        let mut c = [0; 3];
        for d in 0..dim {
            c[d] = ((p[d] * cells as f64) as usize).min(cells - 1);
        }
        c
    };
    let idx = |c: [usize; 3]| (c[0] * cells + c[1]) * cells + c[2];
    let mut bins: Vec<Vec<usize>> = vec![Vec::new(); cells.pow(3)];
    for (i, p) in pts.iter().enumerate() {
        bins[idx(cell_of(p))].push(i);
    }
    let mut label: Vec<u32> = (0..n as u32).collect();
    if shuffle {
        rng.0.shuffle(&mut label);
    }
    let mut edges = Vec::new();
    for (i, p) in pts.iter().enumerate() {
        let c = cell_of(p);
        let range = |d: usize| {
            if d < dim {
                c[d].saturating_sub(1)..=(c[d] + 1).min(cells - 1)
            } else {
                0..=0
            }
        };
        for x in range(0) {
            for y in range(1) {
                for z in range(2) {
                    for &j in &bins[idx([x, y, z])] {
                        if j <= i {
                            continue;
                        }
                        let q = &pts[j];
                        let d2: f64 = (0..dim).map(|d| (p[d] - q[d]).powi(2)).sum();
                        if d2 < r * r {
                            let bytes = (2f64).powf(16.0 + 6.0 * rng.unit()).round() as u64;
                            let (a, b) = (label[i], label[j]);
                            edges.push((a, b, bytes));
                            edges.push((b, a, bytes));
                        }
                    }
                }
            }
        }
    }
    edges
}

/// The messages of `edges` with task `t` renamed to a seeded random `π(t)`.
pub fn scramble(n: usize, edges: &[(u32, u32, u64)], seed: u64) -> Vec<(u32, u32, u64)> {
    let label = labels(n, &mut Rng::new(seed));
    edges
        .iter()
        .map(|&(a, b, w)| (label[a as usize], label[b as usize], w))
        .collect()
}

/// A seeded random permutation of `0..n`.
fn labels(n: usize, rng: &mut Rng) -> Vec<u32> {
    let mut label: Vec<u32> = (0..n as u32).collect();
    rng.0.shuffle(&mut label);
    label
}

/// Pair counts `(a, b) → c` as messages both ways of `c·unit` bytes, tasks renamed.
fn pairs_to_edges(
    pairs: std::collections::HashMap<(u32, u32), u64>,
    unit: u64,
    label: &[u32],
) -> Vec<(u32, u32, u64)> {
    let mut v: Vec<((u32, u32), u64)> = pairs.into_iter().collect();
    v.sort_unstable();
    let mut edges = Vec::with_capacity(2 * v.len());
    for ((a, b), c) in v {
        let (a, b) = (label[a as usize], label[b as usize]);
        edges.push((a, b, c * unit));
        edges.push((b, a, c * unit));
    }
    edges
}

/// The communication graph of an unstructured mesh cut into `n` subdomains: `n`
/// centres in the unit square (`dim = 2`) or cube (`dim = 3`), denser towards the
/// origin (coordinate `u^1.5`, as a refined region); the domain sampled on a regular
/// lattice of about `32·n` points, each point belonging to its nearest centre (a
/// Voronoi cut, like a geometric partitioner's); two subdomains exchange 4 KiB per
/// pair of lattice neighbours across their interface (halo cells), both ways. Ranks in
/// random order.
pub fn mesh(n: usize, dim: usize, seed: u64) -> Vec<(u32, u32, u64)> {
    let mut rng = Rng::new(seed);
    let pts = points(&mut rng, n, dim, |u| u.powf(1.5));
    // buckets of about one centre each
    let b = ((n as f64).powf(1.0 / dim as f64).ceil() as usize).max(1);
    let bz = if dim == 3 { b } else { 1 };
    let bucket = |p: &[f64; 3], d: usize| ((p[d] * b as f64) as usize).min(b - 1);
    let mut bins: Vec<Vec<u32>> = vec![Vec::new(); b * b * bz];
    for (i, p) in pts.iter().enumerate() {
        let z = if dim == 3 { bucket(p, 2) } else { 0 };
        bins[(bucket(p, 0) * b + bucket(p, 1)) * bz + z].push(i as u32);
    }
    let nearest = |q: &[f64; 3]| -> u32 {
        let c = [
            bucket(q, 0) as i64,
            bucket(q, 1) as i64,
            if dim == 3 { bucket(q, 2) as i64 } else { 0 },
        ];
        let (mut best, mut bd) = (u32::MAX, f64::INFINITY);
        for r in 0i64.. {
            // every bucket at ring distance r (Chebyshev)
            let zr = if dim == 3 { r } else { 0 };
            for x in c[0] - r..=c[0] + r {
                for y in c[1] - r..=c[1] + r {
                    for z in c[2] - zr..=c[2] + zr {
                        let ring = (x - c[0]).abs().max((y - c[1]).abs()).max((z - c[2]).abs());
                        if ring != r || x < 0 || y < 0 || z < 0 {
                            continue;
                        }
                        let (x, y, z) = (x as usize, y as usize, z as usize);
                        if x >= b || y >= b || z >= bz {
                            continue;
                        }
                        for &i in &bins[(x * b + y) * bz + z] {
                            let p = &pts[i as usize];
                            let d: f64 = (0..dim).map(|d| (p[d] - q[d]).powi(2)).sum();
                            if d < bd || (d == bd && i < best) {
                                best = i;
                                bd = d;
                            }
                        }
                    }
                }
            }
            // buckets farther out are at least r / b away
            if best != u32::MAX && (r as f64 / b as f64).powi(2) >= bd {
                break;
            }
            if r as usize > b {
                break;
            }
        }
        best
    };
    let s = ((32.0 * n as f64).powf(1.0 / dim as f64).ceil() as usize).max(2);
    let sz = if dim == 3 { s } else { 1 };
    let mut owner = vec![0u32; s * s * sz];
    for x in 0..s {
        for y in 0..s {
            for z in 0..sz {
                let q = [
                    (x as f64 + 0.5) / s as f64,
                    (y as f64 + 0.5) / s as f64,
                    (z as f64 + 0.5) / sz as f64,
                ];
                owner[(x * s + y) * sz + z] = nearest(&q);
            }
        }
    }
    let mut pairs = std::collections::HashMap::new();
    for x in 0..s {
        for y in 0..s {
            for z in 0..sz {
                let a = owner[(x * s + y) * sz + z];
                let mut near = vec![];
                if x + 1 < s {
                    near.push(((x + 1) * s + y) * sz + z);
                }
                if y + 1 < s {
                    near.push((x * s + y + 1) * sz + z);
                }
                if z + 1 < sz {
                    near.push((x * s + y) * sz + z + 1);
                }
                for k in near {
                    let o = owner[k];
                    if o != a {
                        *pairs.entry((a.min(o), a.max(o))).or_insert(0u64) += 1;
                    }
                }
            }
        }
    }
    let label = labels(n, &mut rng);
    pairs_to_edges(pairs, 4096, &label)
}

/// The SpMV graph of a sparse matrix partitioned by rows: `64·n` rows, each with the
/// 5-point stencil of a `w × 64n/w` grid (`w` about `√(64n)`, rows in grid order) and
/// two more entries at seeded random columns within `±8w`; task `t` owns rows
/// `64t .. 64t+63` and the matching entries of `x`, and receives from each other task
/// the 8-byte entries of `x` its rows use (each distinct column once). Ranks in the
/// row order (the partitioner's).
pub fn spmv(n: usize, seed: u64) -> Vec<(u32, u32, u64)> {
    let mut rng = Rng::new(seed);
    let rows_per = 64usize;
    let nr = rows_per * n;
    let w = ((nr as f64).sqrt() as usize).max(1);
    let mut pairs: std::collections::HashMap<(u32, u32), u64> = std::collections::HashMap::new();
    let mut cols: Vec<usize> = Vec::new();
    for t in 0..n {
        cols.clear();
        for i in t * rows_per..(t + 1) * rows_per {
            for d in [1, w] {
                if i >= d {
                    cols.push(i - d);
                }
                if i + d < nr {
                    cols.push(i + d);
                }
            }
            for _ in 0..2 {
                let span = (16 * w) as u64;
                let off = (rng.next_u64() % (span + 1)) as i64 - 8 * w as i64;
                let c = i as i64 + off;
                if c >= 0 && (c as usize) < nr {
                    cols.push(c as usize);
                }
            }
        }
        cols.sort_unstable();
        cols.dedup();
        for &c in &cols {
            let o = c / rows_per;
            if o != t {
                // directed: owner o sends x[c] to t
                *pairs.entry((o as u32, t as u32)).or_insert(0) += 8;
            }
        }
    }
    let mut v: Vec<((u32, u32), u64)> = pairs.into_iter().collect();
    v.sort_unstable();
    v.into_iter().map(|((a, b), w)| (a, b, w)).collect()
}

/// A power-law graph (Barabási–Albert preferential attachment): each new task links to
/// `m` distinct earlier ones chosen in proportion to their degree; each link carries
/// `2^(12 + 6u)` bytes (4 KiB – 256 KiB, log-uniform) both ways. Ranks in random order.
pub fn power_law(n: usize, m: usize, seed: u64) -> Vec<(u32, u32, u64)> {
    let mut rng = Rng::new(seed);
    let mut ends: Vec<u32> = Vec::new();
    let mut pairs = std::collections::HashMap::new();
    let m0 = m + 1;
    for a in 0..m0.min(n) as u32 {
        for b in 0..a {
            pairs.insert((b, a), 1u64);
            ends.extend([a, b]);
        }
    }
    for v in m0 as u32..n as u32 {
        let mut chosen: Vec<u32> = Vec::with_capacity(m);
        while chosen.len() < m {
            let u = ends[(rng.next_u64() % ends.len() as u64) as usize];
            if !chosen.contains(&u) {
                chosen.push(u);
            }
        }
        for u in chosen {
            pairs.insert((u, v), 1);
            ends.extend([u, v]);
        }
    }
    let label = labels(n, &mut rng);
    let mut v: Vec<(u32, u32)> = pairs.into_keys().collect();
    v.sort_unstable();
    let mut edges = Vec::with_capacity(2 * v.len());
    for (a, b) in v {
        let bytes = (2f64).powf(12.0 + 6.0 * rng.unit()).round() as u64;
        let (a, b) = (label[a as usize], label[b as usize]);
        edges.push((a, b, bytes));
        edges.push((b, a, bytes));
    }
    edges
}
