//! Assignment-problem instances for the LAP tests and benches (seeded).

use copr::sparse::Csr;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n × n` row-major table of uniform random integers in `[lo, hi)`, as `f64`.
pub fn uniform_dense(n: usize, lo: i64, hi: i64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n * n)
        .map(|_| rng.random_range(lo..hi) as f64)
        .collect()
}

/// `n × n` sparse matrix: each entry present with probability `density`, value uniform
/// in `[1, hi)`.
pub fn random_sparse(n: usize, density: f64, hi: u64, seed: u64) -> Csr {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Vec::new();
    for i in 0..n {
        for j in 0..n {
            if rng.random_bool(density) {
                t.push((i, j, rng.random_range(1..hi)));
            }
        }
    }
    Csr::from_triplets(n, n, t)
}

/// Overlap counts of two 1-D block-cyclic distributions of `0..len` over `q` parts:
/// `out[a]` lists `(b, #indices with (i / blk_a) % q == a and (i / blk_b) % q == b)`.
fn overlaps(len: usize, q: usize, blk_a: usize, blk_b: usize) -> Vec<Vec<(usize, u64)>> {
    let mut out: Vec<Vec<(usize, u64)>> = vec![Vec::new(); q];
    let mut i = 0;
    while i < len {
        // Run of indices with the same (a, b): up to the next block edge of either.
        let end = len
            .min((i / blk_a + 1) * blk_a)
            .min((i / blk_b + 1) * blk_b);
        let (a, b) = ((i / blk_a) % q, (i / blk_b) % q);
        let row = &mut out[a];
        match row.iter_mut().find(|e| e.0 == b) {
            Some(e) => e.1 += (end - i) as u64,
            None => row.push((b, (end - i) as u64)),
        }
        i = end;
    }
    out
}

/// Volumes `V[s][t]` between two block-cyclic layouts of an `n_global × n_global`
/// matrix on `q × q` ranks.
///
/// Source: blocks `src_block × src_block`, row-major process grid (`s = prow·q + pcol`).
/// Target: blocks `tgt_block × tgt_block`, column-major grid (`t = pcol·q + prow`).
/// `V[s][t] = R[a][b] · C[c][d]` with `s = a·q + c`, `t = d·q + b`, where `R[a][b]` counts
/// rows with source process row `a` and target process row `b`, `C[c][d]` columns.
pub fn block_cyclic_volumes(q: usize, n_global: usize, src_block: usize, tgt_block: usize) -> Csr {
    let r = overlaps(n_global, q, src_block, tgt_block);
    let c = overlaps(n_global, q, src_block, tgt_block);
    let p = q * q;
    let mut t = Vec::new();
    for (a, ra) in r.iter().enumerate() {
        for (cc, rc) in c.iter().enumerate() {
            let s = a * q + cc;
            for &(b, x) in ra {
                for &(d, y) in rc {
                    t.push((s, d * q + b, x * y));
                }
            }
        }
    }
    Csr::from_triplets(p, p, t)
}

/// The relabeling instance for `p = q²` ranks: `N = 96·q`, source blocks 32 (row-major
/// grid), target blocks 48 (column-major grid); returns `W = Vᵀ` (row `t` = what
/// target `t` receives), the matrix the planner hands to `sparse_max`.
///
/// # Panics
/// If `p` is not a perfect square.
pub fn block_cyclic_instance(p: usize) -> Csr {
    let q = (p as f64).sqrt().round() as usize;
    assert_eq!(q * q, p, "p = {p} is not a perfect square");
    block_cyclic_volumes(q, 96 * q, 32, 48).transpose()
}

/// `n × n` sparse matrix with `per_row` random columns per row (repeats merge), values
/// uniform in `[1, hi)`: O(n · per_row) to build, for large sizes.
pub fn random_sparse_rows(n: usize, per_row: usize, hi: u64, seed: u64) -> Csr {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Vec::with_capacity(n * per_row);
    for i in 0..n {
        for _ in 0..per_row {
            t.push((i, rng.random_range(0..n), rng.random_range(1..hi)));
        }
    }
    Csr::from_triplets(n, n, t)
}
