//! Deterministic benchmark graphs for the mapping benchmark: random geometric graphs
//! and relabelings. Self-contained: include with `#[path = "common/graphs.rs"] mod graphs;`.

#![allow(dead_code)]

/// SplitMix64 (the same generator as `copr_mapping::SplitMix`, kept local so the
/// graphs do not depend on the library's internals).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A random geometric graph: `n` points uniform in the unit square (`dim = 2`) or cube
/// (`dim = 3`), an edge between points closer than the radius that gives a mean degree
/// of `degree`; each edge carries `2^(16 + 6u)` bytes (64 KiB – 4 MiB, log-uniform)
/// both ways. Task numbers are a random permutation of the points (`shuffle`) or in
/// generation order.
pub(crate) fn rgg(
    n: usize,
    dim: usize,
    degree: f64,
    seed: u64,
    shuffle: bool,
) -> Vec<(u32, u32, u64)> {
    let mut rng = Rng(seed);
    let pts: Vec<[f64; 3]> = (0..n)
        .map(|_| {
            let mut p = [0.0; 3];
            for x in p.iter_mut().take(dim) {
                *x = rng.unit();
            }
            p
        })
        .collect();
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
        for i in (1..n).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            label.swap(i, j);
        }
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
pub(crate) fn scramble(n: usize, edges: &[(u32, u32, u64)], seed: u64) -> Vec<(u32, u32, u64)> {
    let mut rng = Rng(seed);
    let mut label: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        label.swap(i, j);
    }
    edges
        .iter()
        .map(|&(a, b, w)| (label[a as usize], label[b as usize], w))
        .collect()
}
