//! δ for every cost model: Lemma 1, brute-force optimality, distributed rows, packages.

use copr_testkit::layouts as common;

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::lap::Perm;
use copr::layout::Op;
use copr::volume::Volumes;
use copr_cost_models::{
    CostModel, FnModel, LatencyBandwidth, LocalityPenalty, LocallyFreeVolume, Package, Scaled, Sum,
    TransformCost,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::{permutations, two_islands};

/// Every kind of model, on p ranks.
fn models(p: usize) -> Vec<(&'static str, Box<dyn CostModel>)> {
    let lb = || LatencyBandwidth::new(two_islands(p));
    let transform = TransformCost {
        scale: 1e-10,
        transpose: 3e-10,
        conjugate: 1e-10,
        remote_only: true,
    };
    let locality = LocalityPenalty {
        per_block: 2e-7,
        per_segment: 5e-8,
        per_strided_byte: 1e-11,
        ..LocalityPenalty::default()
    };
    vec![
        ("volume", Box::new(LocallyFreeVolume)),
        ("latency-bandwidth", Box::new(lb())),
        ("transform", Box::new(transform)),
        ("locality", Box::new(locality)),
        (
            "sum",
            Box::new(Sum::<Box<dyn CostModel>>::new(vec![
                Box::new(lb()),
                Box::new(transform),
                Box::new(Scaled::new(1e-9, LocallyFreeVolume).unwrap()),
            ])),
        ),
        ("scaled", Box::new(Scaled::new(3.0, lb()).unwrap())),
        (
            "closure",
            // asymmetric on purpose: w(i, j) ≠ w(j, i)
            Box::new(FnModel::new(
                "skewed volume",
                |i: usize, j: usize, s: &Package| {
                    if i == j {
                        0.0
                    } else {
                        ((2 * i + 3 * j) % 5 + 1) as f64 * s.bytes as f64
                    }
                },
            )),
        ),
    ]
}

fn random_packages(rng: &mut ChaCha8Rng, max_ranks: usize) -> (Packages, usize) {
    let (m, n) = (rng.random_range(1..30), rng.random_range(1..30));
    let op = [Op::Identity, Op::Transpose, Op::ConjTranspose][rng.random_range(0..3)];
    let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
    let src = common::random_layout(rng, sm, sn, max_ranks);
    let dst = common::random_layout(rng, m, n, max_ranks);
    let input = PackageInput {
        source: &src,
        target: &dst,
        transform: TransformKind {
            op,
            scale: rng.random_bool(0.5),
        },
        element_size: [4, 8, 16][rng.random_range(0..3)],
    };
    let pk = Packages::compute(&input).unwrap();
    let p = pk.ranks();
    (pk, p)
}

fn all_blocks(l: &copr::layout::Layout) -> Vec<(usize, copr::layout::LocalBlock)> {
    (0..l.ranks())
        .flat_map(|r| l.local_blocks(r).into_iter().map(move |b| (r, b)))
        .collect()
}

fn random_perm(rng: &mut ChaCha8Rng, p: usize) -> Perm {
    let mut v: Vec<usize> = (0..p).collect();
    for i in (1..p).rev() {
        v.swap(i, rng.random_range(0..=i));
    }
    Perm::from_forward(v).unwrap()
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * scale.abs().max(1e-300)
}

#[test]
fn lemma_1_holds_for_every_model() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for _ in 0..60 {
        let (pk, p) = random_packages(&mut rng, 8);
        for (name, model) in models(p) {
            let delta = gain::gain_matrix(model.as_ref(), &pk);
            let w0 = pk.total_cost(model.as_ref(), None);
            for _ in 0..5 {
                let sigma = random_perm(&mut rng, p);
                let gain: f64 = (0..p).map(|x| delta[x * p + sigma.apply(x)]).sum();
                let w1 = pk.total_cost(model.as_ref(), Some(&sigma));
                assert!(
                    close(gain, w0 - w1, w0),
                    "{name}: Σδ = {gain}, W(G) − W(G_σ) = {}",
                    w0 - w1
                );
            }
        }
    }
}

#[test]
fn relabeling_is_optimal_against_brute_force_for_every_model() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut sizes_seen = std::collections::BTreeSet::new();
    for _ in 0..25 {
        let (pk, p) = random_packages(&mut rng, 7);
        sizes_seen.insert(p);
        let all = permutations(p);
        for (name, model) in models(p) {
            let sigma = gain::relabel(model.as_ref(), &pk).unwrap();
            let got = pk.total_cost(model.as_ref(), Some(&sigma));
            let best = all
                .iter()
                .map(|v| {
                    pk.total_cost(
                        model.as_ref(),
                        Some(&Perm::from_forward(v.clone()).unwrap()),
                    )
                })
                .fold(f64::INFINITY, f64::min);
            let w0 = pk.total_cost(model.as_ref(), None);
            assert!(
                got <= best + 1e-9 * w0.max(best),
                "{name} p={p}: σ costs {got}, optimum {best}"
            );
            assert!(got <= w0 + 1e-9 * w0, "{name}: worse than identity");
        }
    }
    assert!(sizes_seen.iter().any(|&p| p >= 6), "{sizes_seen:?}");
}

#[test]
fn relabeling_prefers_a_cheap_link_over_less_volume_on_a_slow_one() {
    // Ranks 0, 1 form island A, ranks 2, 3 island B. Target label 0 receives 10 KB from
    // rank 0, 10 KB from rank 1 (island A) and 15 KB from rank 2 (island B).
    // Fewest remote bytes: label 0 on rank 2 (20 KB remote, all over the slow link).
    // Cheapest: label 0 on rank 0 (25 KB remote, but only 15 KB over the slow link).
    let kb = |k: u64| (k * 125, Package::plain(k * 1000));
    let list = vec![(0, 0, kb(10)), (1, 0, kb(10)), (2, 0, kb(15))]
        .into_iter()
        .map(|(s, t, (e, p))| (s, t, e, p))
        .collect();
    let pk = Packages::from_list(4, list).unwrap();
    let lb = LatencyBandwidth::new(two_islands(4));
    let by_cost = gain::relabel(&lb, &pk).unwrap();
    let by_volume = gain::relabel(&LocallyFreeVolume, &pk).unwrap();
    assert_eq!(by_volume.apply(0), 2);
    assert!([0, 1].contains(&by_cost.apply(0)), "{by_cost:?}");
    let v = Volumes::from_matrix(pk.volumes().clone());
    assert!(v.remote_after(&by_cost) > v.remote_after(&by_volume));
    assert!(pk.total_cost(&lb, Some(&by_cost)) < pk.total_cost(&lb, Some(&by_volume)));
}

#[test]
fn distributed_rows_equal_the_serial_table_and_sigma_is_shared() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..30 {
        let (m, n) = (rng.random_range(1..40), rng.random_range(1..40));
        let src = common::random_layout(&mut rng, m, n, 8);
        let dst = common::random_layout(&mut rng, m, n, 8);
        let input = PackageInput {
            source: &src,
            target: &dst,
            transform: TransformKind::default(),
            element_size: 8,
        };
        let pk = Packages::compute(&input).unwrap();
        let p = pk.ranks();
        let inc = pk.by_target();
        for (x, expect) in inc.iter().enumerate() {
            let got = gain::incoming(&input, x).unwrap();
            assert_eq!(&got, expect, "incoming packages of {x}");
        }
        for (name, model) in models(p) {
            let serial = gain::gain_matrix(model.as_ref(), &pk);
            let outcome = gain::distributed_relabel(model.as_ref(), &input).unwrap();
            assert_eq!(outcome.len(), p);
            for (x, o) in outcome.iter().enumerate() {
                assert_eq!(o.row, serial[x * p..(x + 1) * p], "{name}: row {x}");
                assert_eq!(o.sigma, outcome[0].sigma);
            }
            let best = pk.total_cost(
                model.as_ref(),
                Some(&gain::relabel(model.as_ref(), &pk).unwrap()),
            );
            let dist = pk.total_cost(model.as_ref(), Some(&outcome[0].sigma));
            assert!(close(best, dist, best.max(1.0)), "{name}: {best} vs {dist}");
        }
    }
}

#[test]
fn packages_agree_with_volumes_and_a_per_piece_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for _ in 0..200 {
        let (m, n) = (rng.random_range(1..25), rng.random_range(1..25));
        let op = [Op::Identity, Op::Transpose, Op::ConjTranspose][rng.random_range(0..3)];
        let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
        let src = common::random_layout(&mut rng, sm, sn, 6);
        let dst = common::random_layout(&mut rng, m, n, 6);
        let es = 8;
        let input = PackageInput {
            source: &src,
            target: &dst,
            transform: TransformKind { op, scale: true },
            element_size: es,
        };
        let pk = Packages::compute(&input).unwrap();
        assert_eq!(
            pk.volumes(),
            Volumes::compute(&src, &dst, op).unwrap().matrix()
        );
        // Reference: enumerate overlay pieces (maximal rectangles inside one source block
        // and one target block) element by element.
        let p = pk.ranks();
        let mut blocks = vec![0u64; p * p];
        let mut segments = vec![0u64; p * p];
        let (tb, sb) = (all_blocks(&dst), all_blocks(&src));
        for (t, tblk) in &tb {
            for (s, sblk) in &sb {
                // source block in target coordinates
                let (r, c) = if op.transposes() {
                    (sblk.cols.clone(), sblk.rows.clone())
                } else {
                    (sblk.rows.clone(), sblk.cols.clone())
                };
                let r0 = r.start.max(tblk.rows.start);
                let r1 = r.end.min(tblk.rows.end);
                let c0 = c.start.max(tblk.cols.start);
                let c1 = c.end.min(tblk.cols.end);
                if r0 < r1 && c0 < c1 {
                    blocks[s * p + t] += 1;
                    let (src_rows, src_cols) = if op.transposes() {
                        (c1 - c0, r1 - r0)
                    } else {
                        (r1 - r0, c1 - c0)
                    };
                    let outer = match src.storage_order(*s) {
                        copr::layout::Order::ColMajor => src_cols,
                        copr::layout::Order::RowMajor => src_rows,
                    };
                    if outer > 1 {
                        segments[s * p + t] += outer as u64;
                    }
                }
            }
        }
        for (s, t, pkg) in pk.iter() {
            assert_eq!(pkg.blocks, blocks[s * p + t], "blocks {s}->{t}");
            assert_eq!(
                pkg.locality.segments,
                segments[s * p + t],
                "segments {s}->{t}"
            );
            assert_eq!(pkg.bytes, pk.volumes().get(s, t) * es as u64);
            assert_eq!(
                pkg.transform.transpose,
                if op.transposes() { pkg.bytes } else { 0 }
            );
            assert_eq!(
                pkg.transform.conjugate,
                if op == Op::ConjTranspose {
                    pkg.bytes
                } else {
                    0
                }
            );
            assert_eq!(pkg.transform.scale, pkg.bytes);
            assert_eq!(
                pkg.locality.contiguous_bytes + pkg.locality.strided_bytes,
                pkg.bytes
            );
        }
    }
}

#[test]
fn boxed_models_and_rank_checks() {
    let pk = Packages::from_list(6, vec![(0, 5, 1, Package::plain(8))]).unwrap();
    let small: Box<dyn CostModel> = Box::new(LatencyBandwidth::new(two_islands(4)));
    let e = gain::relabel(small.as_ref(), &pk).unwrap_err().to_string();
    assert!(e.contains("4 ranks") && e.contains("6"), "{e}");
    assert!(Packages::from_list(2, vec![(0, 2, 1, Package::plain(8))]).is_err());
}

/// A σ that saves nothing is the identity, from every relabeling entry point: the
/// serial δ for every model (the distributed δ and the volume solvers below).
#[test]
fn relabeling_that_saves_nothing_is_the_identity() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    // Every package costs the same wherever it goes: no σ can save anything.
    let flat = FnModel::new("flat", |_: usize, _: usize, s: &Package| s.bytes as f64);
    let mut checked = 0;
    for _ in 0..200 {
        let (pk, p) = random_packages(&mut rng, 6);
        let sigma = gain::relabel(&flat, &pk).unwrap();
        assert!(sigma.is_identity(), "flat model, p = {p}: σ = {sigma:?}");
        for (name, model) in models(p) {
            let sigma = gain::relabel(model.as_ref(), &pk).unwrap();
            let before = pk.total_cost(model.as_ref(), None);
            let after = pk.total_cost(model.as_ref(), Some(&sigma));
            if !sigma.is_identity() {
                assert!(
                    after < before - 1e-12 * before.abs(),
                    "{name}: σ = {sigma:?} costs {after:e}, the identity {before:e}"
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked > 0,
        "no case gained anything: the test checks nothing"
    );
}

#[test]
fn volume_solvers_that_save_nothing_return_the_identity() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut ties = 0;
    for _ in 0..300 {
        let (pk, _) = random_packages(&mut rng, 6);
        let v = Volumes::from_matrix(pk.volumes().clone());
        for solver in [
            copr::plan::Solver::Sparse,
            copr::plan::Solver::Dense,
            copr::plan::Solver::Greedy,
        ] {
            let sigma = copr::plan::relabel(&v, solver).unwrap();
            if sigma.is_identity() {
                ties += usize::from(v.remote() > 0);
            } else {
                assert!(
                    v.remote_after(&sigma) < v.remote(),
                    "{solver:?}: σ = {sigma:?} leaves {} of {} remote",
                    v.remote_after(&sigma),
                    v.remote()
                );
            }
        }
    }
    assert!(
        ties > 0,
        "no case where relabeling gains nothing: the test checks nothing"
    );
}

#[test]
fn distributed_relabeling_that_saves_nothing_is_the_identity() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let flat = FnModel::new("flat", |_: usize, _: usize, s: &Package| s.bytes as f64);
    for _ in 0..50 {
        let (m, n) = (rng.random_range(1..20), rng.random_range(1..20));
        let src = common::random_layout(&mut rng, m, n, 5);
        let dst = common::random_layout(&mut rng, m, n, 5);
        let input = PackageInput {
            source: &src,
            target: &dst,
            transform: TransformKind::default(),
            element_size: 8,
        };
        for r in gain::distributed_relabel(&flat, &input).unwrap() {
            assert!(r.sigma.is_identity(), "σ = {:?}", r.sigma);
        }
    }
}
