//! The sparse exact solver on the instances that once were its weak spot — random rows
//! with a fixed number of entries, few distinct weights, empty rows — against the dense
//! solver and the independent Kuhn–Munkres of `pathfinding`.

use copr_testkit::lap as common;

use copr::lap::{assignment_value, dense_max, sparse_max, Perm};
use copr::sparse::Csr;
use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn to_f64(w: &Csr) -> Vec<f64> {
    w.to_dense().iter().map(|&x| x as f64).collect()
}

fn km_value(w: &Csr) -> u64 {
    let n = w.n_rows();
    if n == 0 {
        return 0;
    }
    let m = Matrix::from_vec(n, n, w.to_dense().iter().map(|&x| x as i64).collect()).unwrap();
    kuhn_munkres(&m).0 as u64
}

/// Rows of `per_row` random columns (weights in `[lo, hi)`), each row empty with
/// probability `empty`.
fn rows(n: usize, per_row: usize, lo: u64, hi: u64, empty: f64, rng: &mut ChaCha8Rng) -> Csr {
    let mut t = Vec::new();
    for i in 0..n {
        if rng.random_bool(empty) {
            continue;
        }
        for _ in 0..per_row {
            t.push((i, rng.random_range(0..n), rng.random_range(lo..hi)));
        }
    }
    Csr::from_triplets(n, n, t)
}

#[test]
fn sparse_matches_kuhn_munkres_and_dense_on_random_rows() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    // weights around 4096 switch the shortest paths between a bucket queue and a heap
    let ranges = [
        (1u64, 1000u64),
        (1, 4),
        (0, 2),
        (0, 1_000_000),
        (3900, 4300),
    ];
    for rep in 0..300 {
        let n = rng.random_range(1..=120usize);
        let per_row = [1usize, 2, 4, 16][rep % 4];
        let (lo, hi) = ranges[rep / 4 % ranges.len()];
        let empty = [0.0, 0.1, 0.5][rep / 20 % 3];
        let w = rows(n, per_row, lo, hi, empty, &mut rng);
        let want = km_value(&w);
        let p = sparse_max(&w).unwrap();
        assert_eq!(
            assignment_value(&w, &p),
            want,
            "n={n} {per_row}/row [{lo},{hi}) empty={empty}"
        );
        let d = dense_max(n, &to_f64(&w)).unwrap();
        assert_eq!(assignment_value(&w, &d), want);
    }
}

#[test]
fn sparse_matches_dense_on_random_rows_up_to_8000() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    for (n, per_row, lo, hi) in [
        (2000usize, 16usize, 1u64, 1000u64),
        (2000, 16, 1, 4),
        (4000, 16, 1, 1000),
        (4000, 16, 1, 4),
        (4000, 4, 1, 1000),
        (4000, 16, 3900, 4300),
        (8000, 16, 1, 1000),
    ] {
        let w = rows(n, per_row, lo, hi, 0.0, &mut rng);
        let p = sparse_max(&w).unwrap();
        let d = dense_max(n, &to_f64(&w)).unwrap();
        assert_eq!(
            assignment_value(&w, &p),
            assignment_value(&w, &d),
            "n={n} {per_row}/row [{lo},{hi})"
        );
        assert!(assignment_value(&w, &p) >= assignment_value(&w, &Perm::identity(n)));
    }
}

#[test]
fn benchmark_instances_keep_their_optimum() {
    // n = 102 400, 16 entries per row (the bench's instances): optimal values found by
    // the shortest-path solver alone before the auction existed
    for (hi, want) in [(1000u64, 92_292_850u64), (4, 306_561)] {
        let w = common::random_sparse_rows(102_400, 16, hi, 3);
        assert_eq!(
            assignment_value(&w, &sparse_max(&w).unwrap()),
            want,
            "[1,{hi})"
        );
    }
}
