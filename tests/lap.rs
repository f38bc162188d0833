//! Optimality tests of the linear-assignment solvers against a brute force and an
//! independent solver (`pathfinding::kuhn_munkres`), plus the paper's Lemma 1.

use copr_testkit::lap as common;

use copr::lap::{
    assignment_value, brute_force_max, dense_max, dense_max_with, greedy_swaps, sparse_max,
    DenseSolver, Perm,
};
use copr::sparse::Csr;
use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SOLVERS: [DenseSolver; 2] = [DenseSolver::Jv, DenseSolver::LapjvCrate];

/// Σ_i g[i*n + σ(i)] in exact integer arithmetic (all test gains are integers).
fn dense_value(n: usize, g: &[f64], p: &Perm) -> i64 {
    (0..n).map(|i| g[i * n + p.apply(i)] as i64).sum()
}

fn to_f64(w: &Csr) -> Vec<f64> {
    w.to_dense().iter().map(|&x| x as f64).collect()
}

/// Optimal value by the independent Kuhn–Munkres solver.
fn km_value(n: usize, g: &[f64]) -> i64 {
    if n == 0 {
        return 0;
    }
    let m = Matrix::from_vec(n, n, g.iter().map(|&x| x as i64).collect()).unwrap();
    kuhn_munkres(&m).0
}

fn random_perm(n: usize, rng: &mut ChaCha8Rng) -> Perm {
    let mut f: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        f.swap(i, rng.random_range(0..=i));
    }
    Perm::from_forward(f).unwrap()
}

#[test]
fn dense_matches_brute_force_up_to_8() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for n in 0..=8 {
        let reps = if n == 8 { 4 } else { 25 };
        for _ in 0..reps {
            let range = [2i64, 10, 1000][rng.random_range(0..3usize)];
            let g: Vec<f64> = (0..n * n)
                .map(|_| rng.random_range(-range..range) as f64)
                .collect();
            let best = brute_force_max(n, &g).unwrap().1 as i64;
            for s in SOLVERS {
                let p = dense_max_with(n, &g, s).unwrap();
                assert_eq!(dense_value(n, &g, &p), best, "n={n} {s:?} {g:?}");
            }
        }
    }
}

#[test]
fn sparse_matches_brute_force_up_to_8() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for n in 0..=8 {
        let reps = if n == 8 { 4 } else { 25 };
        for rep in 0..reps {
            let density = [0.1, 0.3, 0.6, 1.0][rep % 4];
            let w = common::random_sparse(n, density, [3, 50][rep % 2], rng.random());
            let (_, best) = brute_force_max(n, &to_f64(&w)).unwrap();
            let p = sparse_max(&w).unwrap();
            assert_eq!(assignment_value(&w, &p) as f64, best, "{:?}", w.to_dense());
            let d = dense_max(n, &to_f64(&w)).unwrap();
            assert_eq!(assignment_value(&w, &d) as f64, best);
        }
    }
}

#[test]
fn dense_matches_kuhn_munkres_uniform() {
    let mut seed = 10;
    for n in [1usize, 2, 17, 64, 150, 300] {
        for (lo, hi) in [(0i64, 1000), (-5, 5), (-1_000_000, 1_000_000)] {
            seed += 1;
            let g = common::uniform_dense(n, lo, hi, seed);
            let want = km_value(n, &g);
            for s in SOLVERS {
                let p = dense_max_with(n, &g, s).unwrap();
                assert_eq!(dense_value(n, &g, &p), want, "n={n} [{lo},{hi}) {s:?}");
            }
        }
    }
}

#[test]
fn sparse_and_dense_match_kuhn_munkres_on_random_sparse() {
    let mut seed = 100;
    for n in [3usize, 40, 120, 300] {
        for density in [0.005, 0.02, 0.1, 0.5] {
            seed += 1;
            let w = common::random_sparse(n, density, 100, seed);
            let g = to_f64(&w);
            let want = km_value(n, &g);
            let ps = sparse_max(&w).unwrap();
            assert_eq!(
                assignment_value(&w, &ps) as i64,
                want,
                "n={n} density={density}"
            );
            let pd = dense_max(n, &g).unwrap();
            assert_eq!(assignment_value(&w, &pd) as i64, want);
            assert!(assignment_value(&w, &ps) >= assignment_value(&w, &Perm::identity(n)));
        }
    }
}

/// Few distinct weights (many ties): the sparse solver's phases-only path (largest
/// weight ≤ 64) and, just above that limit, the adaptive path, against Kuhn–Munkres and
/// the dense solver; larger instances against the dense solver alone.
#[test]
fn sparse_matches_references_with_few_distinct_weights() {
    let mut seed = 500;
    for n in [2usize, 9, 60, 250, 500] {
        for per_row in [1usize, 3, 16] {
            for hi in [2u64, 3, 4, 65, 66] {
                seed += 1;
                let w = common::random_sparse_rows(n, per_row.min(n), hi, seed);
                let g = to_f64(&w);
                let want = km_value(n, &g);
                let got = assignment_value(&w, &sparse_max(&w).unwrap()) as i64;
                assert_eq!(got, want, "n={n} {per_row}/row [1,{hi})");
                let pd = dense_max(n, &g).unwrap();
                assert_eq!(dense_value(n, &g, &pd), want);
            }
        }
    }
    for (n, per_row, hi) in [(2000usize, 16usize, 4u64), (3000, 16, 3), (3000, 4, 4)] {
        seed += 1;
        let w = common::random_sparse_rows(n, per_row, hi, seed);
        let g = to_f64(&w);
        let pd = dense_max(n, &g).unwrap();
        let got = assignment_value(&w, &sparse_max(&w).unwrap()) as i64;
        assert_eq!(got, dense_value(n, &g, &pd), "n={n} {per_row}/row [1,{hi})");
    }
}

#[test]
fn block_cyclic_instances_match_kuhn_munkres() {
    for p in [4usize, 16, 64, 144, 256] {
        let w = common::block_cyclic_instance(p);
        let g = to_f64(&w);
        let want = km_value(p, &g);
        let ps = sparse_max(&w).unwrap();
        assert_eq!(assignment_value(&w, &ps) as i64, want, "p={p}");
        for s in SOLVERS {
            let pd = dense_max_with(p, &g, s).unwrap();
            assert_eq!(assignment_value(&w, &pd) as i64, want, "p={p} {s:?}");
        }
        // Greedy swaps run on V (= Wᵀ) and are scored on W like the exact answer.
        let greedy = greedy_swaps(&w.transpose());
        let id = assignment_value(&w, &Perm::identity(p));
        assert!(assignment_value(&w, &greedy) <= want as u64);
        assert!(assignment_value(&w, &greedy) >= id);
    }
}

#[test]
fn block_cyclic_generator_counts_every_element_once() {
    for q in [1usize, 3, 5, 8] {
        let n_global = 96 * q + 7; // ragged edge on purpose
        let v = common::block_cyclic_volumes(q, n_global, 32, 48);
        assert_eq!(v.sum(), (n_global * n_global) as u64);
        assert_eq!(v.n_rows(), q * q);
    }
    // Identical layouts: everything is local.
    let v = common::block_cyclic_volumes(4, 300, 32, 32);
    let local: u64 = (0..16).map(|s| v.get(s, (s % 4) * 4 + s / 4)).sum();
    assert_eq!(local, 300 * 300);
}

#[test]
fn relabeling_is_never_worse_than_identity_and_greedy_never_beats_exact() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for rep in 0..40 {
        let n = rng.random_range(1..60usize);
        let v = common::random_sparse(n, [0.05, 0.2, 0.7][rep % 3], 1000, rng.random());
        let w = v.transpose();
        let exact = assignment_value(&w, &sparse_max(&w).unwrap());
        let greedy = assignment_value(&w, &greedy_swaps(&v));
        let identity = assignment_value(&w, &Perm::identity(n));
        assert!(identity <= greedy, "rep {rep}");
        assert!(greedy <= exact, "rep {rep}");
    }
}

#[test]
fn lemma_1_total_gain_is_the_remote_volume_saved() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for rep in 0..30 {
        let n = rng.random_range(1..25usize);
        let v = common::random_sparse(n, 0.3, 500, rng.random());
        let vd = v.to_dense();
        let sigma = random_perm(n, &mut rng);
        // remote(σ) = Σ_{s,t} V[s][t]·[s ≠ σ(t)]
        let remote = |p: &Perm| -> i64 {
            (0..n)
                .flat_map(|s| (0..n).map(move |t| (s, t)))
                .filter(|&(s, t)| s != p.apply(t))
                .map(|(s, t)| vd[s * n + t] as i64)
                .sum()
        };
        // δ(x, y) = V[y][x] − V[x][x]
        let delta = |x: usize, y: usize| vd[y * n + x] as i64 - vd[x * n + x] as i64;
        let total_gain: i64 = (0..n).map(|x| delta(x, sigma.apply(x))).sum();
        assert_eq!(
            total_gain,
            remote(&Perm::identity(n)) - remote(&sigma),
            "rep {rep}"
        );
        // And the optimum of δ is the optimum of Vᵀ: same σ quality either way.
        let table: Vec<f64> = (0..n * n).map(|k| delta(k / n, k % n) as f64).collect();
        let best_gain = dense_value(n, &table, &dense_max(n, &table).unwrap());
        let w = v.transpose();
        let best_local = assignment_value(&w, &sparse_max(&w).unwrap()) as i64;
        let id_local = assignment_value(&w, &Perm::identity(n)) as i64;
        assert_eq!(best_gain, best_local - id_local, "rep {rep}");
    }
}

#[test]
fn dense_rejects_bad_input() {
    assert!(dense_max(3, &[0.0; 8]).is_err());
    assert!(dense_max(2, &[0.0, f64::NEG_INFINITY, 0.0, 0.0]).is_err());
    assert!(sparse_max(&Csr::zeros(3, 2)).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_solvers_agree_with_brute_force(
        n in 0usize..7,
        raw in prop::collection::vec((0u64..4, 0u64..20), 49),
    ) {
        // Sparse non-negative instance: keep an entry when its first draw is 0.
        let t: Vec<(usize, usize, u64)> = (0..n * n)
            .filter(|&k| raw[k].0 == 0)
            .map(|k| (k / n, k % n, raw[k].1))
            .collect();
        let w = Csr::from_triplets(n, n, t);
        let (_, best) = brute_force_max(n, &to_f64(&w)).unwrap();
        prop_assert_eq!(assignment_value(&w, &sparse_max(&w).unwrap()) as f64, best);
        // Dense instance with negatives.
        let g: Vec<f64> = (0..n * n).map(|k| raw[k].1 as f64 - 10.0).collect();
        let (_, best) = brute_force_max(n, &g).unwrap();
        for s in SOLVERS {
            prop_assert_eq!(dense_value(n, &g, &dense_max_with(n, &g, s).unwrap()) as f64, best);
        }
    }
}

/// Quick timings: `cargo test --release --test lap -- --ignored --nocapture timing`;
/// `COPR_LAP_CASE=<substring>` runs only the matching cases.
#[test]
#[ignore]
fn timing() {
    use std::time::Instant;
    type Make = Box<dyn Fn() -> Csr>;
    let bc = |q: usize, n: usize, a: usize, b: usize| -> Make {
        Box::new(move || common::block_cyclic_volumes(q, n, a, b).transpose())
    };
    let sparse_cases: Vec<(&str, Make)> = vec![
        ("bc p=16384 32->48", bc(128, 96 * 128, 32, 48)),
        ("bc p=102400 32->48", bc(320, 96 * 320, 32, 48)),
        ("bc p=102400 32->100", bc(320, 96 * 320, 32, 100)),
        ("bc p=102400 64->96 N+17", bc(320, 96 * 320 + 17, 64, 96)),
        ("bc p=102400 48->32", bc(320, 96 * 320, 48, 32)),
        ("bc p=102400 7->13", bc(320, 96 * 320, 7, 13)),
        (
            "random n=102400 16/row [1,1000)",
            Box::new(|| common::random_sparse_rows(102400, 16, 1000, 3)),
        ),
        (
            "random n=102400 16/row [1,4)",
            Box::new(|| common::random_sparse_rows(102400, 16, 4, 3)),
        ),
        (
            "random n=102400 4/row [1,1000)",
            Box::new(|| common::random_sparse_rows(102400, 4, 1000, 3)),
        ),
    ];
    let filter = std::env::var("COPR_LAP_CASE").unwrap_or_default();
    for (name, make) in sparse_cases.iter().filter(|c| c.0.contains(&filter)) {
        let w = make();
        let t = Instant::now();
        let s = sparse_max(&w).unwrap();
        eprintln!(
            "sparse {name} nnz={} {:.3}s value={} identity={}",
            w.nnz(),
            t.elapsed().as_secs_f64(),
            assignment_value(&w, &s),
            assignment_value(&w, &Perm::identity(w.n_rows()))
        );
    }
    for n in [1024usize, 4096] {
        let g = common::uniform_dense(n, 0, 1000, 42);
        for s in SOLVERS {
            let name = format!("dense n={n} {s:?}");
            if !name.contains(&filter) {
                continue;
            }
            let t = Instant::now();
            let p = dense_max_with(n, &g, s).unwrap();
            eprintln!(
                "{name} uniform [0,1000) {:.3}s value={}",
                t.elapsed().as_secs_f64(),
                dense_value(n, &g, &p)
            );
        }
    }
}
