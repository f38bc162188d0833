//! The joint relabeling of a batch: one σ for every transform, optimal against brute
//! force (volume and cost models, 2 and 3 transforms, layouts on subsets of the ranks,
//! fixed labels), and equal to the per-transform optimum for a batch of one.

use copr_testkit::layouts as common;

use common::{permutations, two_islands};
use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::lap::{brute_force_max, Perm};
use copr::layout::{Layout, Op};
use copr::plan::{joint_relabel, relabel, Solver};
use copr::volume::Volumes;
use copr_cost_models::{CostModel, FnModel, LatencyBandwidth, LocallyFreeVolume, Package, Scaled};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One random transform: source, target, op, element size.
struct Case {
    source: Layout,
    target: Layout,
    op: Op,
    element_size: usize,
}

fn random_case(rng: &mut ChaCha8Rng, max_ranks: usize) -> Case {
    let (m, n) = (rng.random_range(1..24), rng.random_range(1..24));
    let op = [Op::Identity, Op::Transpose, Op::ConjTranspose][rng.random_range(0..3)];
    let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
    // each transform on its own number of ranks: targets and sources on subsets
    let (ranks_b, ranks_a) = (
        rng.random_range(1..=max_ranks),
        rng.random_range(1..=max_ranks),
    );
    Case {
        source: common::random_layout(rng, sm, sn, ranks_b),
        target: common::random_layout(rng, m, n, ranks_a),
        op,
        element_size: [4, 8, 16][rng.random_range(0..3)],
    }
}

/// `count[s * p + t]`: elements whose source owner is `s` and target label `t`, counted
/// element by element from the layouts (independent of copr's volume computation).
fn counts(c: &Case, p: usize) -> Vec<u64> {
    let mut out = vec![0u64; p * p];
    for i in 0..c.target.rows() {
        for j in 0..c.target.cols() {
            let (si, sj) = if c.op.transposes() { (j, i) } else { (i, j) };
            out[c.source.owner_of(si, sj) * p + c.target.owner_of(i, j)] += 1;
        }
    }
    out
}

/// Elements kept local by σ over all cases: `Σ_k Σ_t count_k[σ(t)][t]`.
fn kept(counts: &[Vec<u64>], p: usize, sigma: &[usize]) -> u64 {
    counts
        .iter()
        .map(|c| (0..p).map(|t| c[sigma[t] * p + t]).sum::<u64>())
        .sum()
}

fn batch(rng: &mut ChaCha8Rng, k: usize, max_ranks: usize) -> (Vec<Case>, usize) {
    let cases: Vec<Case> = (0..k).map(|_| random_case(rng, max_ranks)).collect();
    let p = cases
        .iter()
        .map(|c| c.source.ranks().max(c.target.ranks()))
        .max()
        .unwrap();
    (cases, p)
}

/// A random set of labels to fix (often none).
fn random_fixed(rng: &mut ChaCha8Rng, p: usize) -> Vec<usize> {
    if rng.random_bool(0.5) {
        return Vec::new();
    }
    (0..p).filter(|_| rng.random_bool(0.3)).collect()
}

/// Every permutation of `0..p` that fixes `fixed`, as a gain table for brute force:
/// `-inf`-free large negative gains forbid moving a fixed label.
fn forbid_moves(p: usize, fixed: &[usize], gain: &mut [f64]) {
    for &t in fixed {
        for y in 0..p {
            if y != t {
                gain[t * p + y] -= 1e12;
                gain[y * p + t] -= 1e12;
            }
        }
    }
}

/// Calls `f(trial, cases, p, fixed, rng)` for `trials` random batches of 2 and 3
/// transforms on up to 7 ranks, with random fixed labels, and checks that batches of 6
/// or 7 ranks came up with both counts.
fn random_batches(
    seed: u64,
    trials: usize,
    mut f: impl FnMut(usize, &[Case], usize, &[usize], &mut ChaCha8Rng),
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen = std::collections::BTreeSet::new();
    for trial in 0..trials {
        let k = 2 + trial % 2;
        let (cases, p) = batch(&mut rng, k, 7);
        seen.insert((k, p));
        let fixed = random_fixed(&mut rng, p);
        f(trial, &cases, p, &fixed, &mut rng);
    }
    for k in [2, 3] {
        assert!(
            seen.iter().any(|&(kk, p)| kk == k && p >= 6),
            "no large case with {k} transforms: {seen:?}"
        );
    }
}

#[test]
fn joint_volume_sigma_is_optimal_by_brute_force() {
    random_batches(15, 120, |trial, cases, p, fixed, _| {
        let k = cases.len();
        let volumes: Vec<Volumes> = cases
            .iter()
            .map(|c| Volumes::compute(&c.source, &c.target, c.op).unwrap())
            .collect();
        let refs: Vec<&Volumes> = volumes.iter().collect();
        let sigma = joint_relabel(&refs, p, fixed).unwrap();
        assert_eq!(sigma.len(), p);
        for &t in fixed {
            assert_eq!(sigma.apply(t), t, "trial {trial}: fixed label {t} moved");
        }
        // brute force on the element-by-element counts
        let c: Vec<Vec<u64>> = cases.iter().map(|c| counts(c, p)).collect();
        let mut gain = vec![0.0; p * p];
        for t in 0..p {
            for s in 0..p {
                gain[t * p + s] = c.iter().map(|x| x[s * p + t]).sum::<u64>() as f64;
            }
        }
        forbid_moves(p, fixed, &mut gain);
        let (best, _) = brute_force_max(p, &gain).unwrap();
        assert_eq!(
            kept(&c, p, sigma.forward()),
            kept(&c, p, best.forward()),
            "trial {trial}: k = {k}, p = {p}, fixed {fixed:?}: σ {:?}, optimum {:?}",
            sigma.forward(),
            best.forward()
        );
        assert!(kept(&c, p, sigma.forward()) >= kept(&c, p, &(0..p).collect::<Vec<_>>()));
    });
}

fn models(p: usize) -> Vec<(&'static str, Box<dyn CostModel>)> {
    vec![
        ("volume", Box::new(LocallyFreeVolume)),
        (
            "scaled volume",
            Box::new(Scaled::new(2.5, LocallyFreeVolume).unwrap()),
        ),
        (
            "latency-bandwidth",
            Box::new(LatencyBandwidth::new(two_islands(p))),
        ),
        (
            "skewed",
            Box::new(FnModel::new("skewed", |i: usize, j: usize, s: &Package| {
                if i == j {
                    0.0
                } else {
                    ((3 * i + j) % 4 + 1) as f64 * s.bytes as f64
                }
            })),
        ),
    ]
}

fn packages(c: &Case, rng: &mut ChaCha8Rng) -> Packages {
    Packages::compute(&PackageInput {
        source: &c.source,
        target: &c.target,
        transform: TransformKind {
            op: c.op,
            scale: rng.random_bool(0.5),
        },
        element_size: c.element_size,
    })
    .unwrap()
}

/// Σ_k w(s, σ(t), S_k[s][t]) summed package by package.
fn batch_cost(model: &dyn CostModel, pks: &[Packages], sigma: &[usize]) -> f64 {
    pks.iter()
        .flat_map(|pk| {
            pk.iter()
                .map(|(s, t, x)| model.cost(s, sigma[t], x))
                .collect::<Vec<_>>()
        })
        .sum()
}

/// The cost of a batch without relabeling and its least cost over every σ that keeps
/// `fixed` in place, by brute force.
fn none_and_best(model: &dyn CostModel, pks: &[Packages], p: usize, fixed: &[usize]) -> (f64, f64) {
    let w0 = batch_cost(model, pks, &(0..p).collect::<Vec<_>>());
    let best = permutations(p)
        .into_iter()
        .filter(|v| fixed.iter().all(|&t| v[t] == t))
        .map(|v| batch_cost(model, pks, &v))
        .fold(f64::INFINITY, f64::min);
    (w0, best)
}

#[test]
fn joint_cost_sigma_is_optimal_by_brute_force() {
    random_batches(16, 60, |trial, cases, p, fixed, rng| {
        let k = cases.len();
        let pks: Vec<Packages> = cases.iter().map(|c| packages(c, rng)).collect();
        let refs: Vec<&Packages> = pks.iter().collect();
        for (name, model) in models(p) {
            let sigma = gain::joint_relabel(model.as_ref(), &refs, p, fixed).unwrap();
            for &t in fixed {
                assert_eq!(sigma.apply(t), t, "{name}: fixed label {t} moved");
            }
            let got = batch_cost(model.as_ref(), &pks, sigma.forward());
            let (w0, best) = none_and_best(model.as_ref(), &pks, p, fixed);
            assert!(
                got <= best + 1e-9 * w0.max(best),
                "trial {trial} {name}: k = {k}, p = {p}, fixed {fixed:?}: σ costs {got}, optimum {best}"
            );
            assert!(got <= w0 + 1e-9 * w0, "{name}: worse than no relabeling");
            let reported = gain::joint_cost(model.as_ref(), &refs, Some(&sigma));
            assert!((reported - got).abs() <= 1e-9 * w0.max(1e-300));
        }
    });
}

#[test]
fn copies_given_by_reference_are_priced_as_copies() {
    // the same packages given several times (copies of a transform) count once each
    // time they are given: optimal by brute force over the batch with the copies
    random_batches(8, 30, |trial, cases, p, fixed, rng| {
        let pks: Vec<Packages> = cases.iter().map(|c| packages(c, rng)).collect();
        let times = |i: usize| 1 + (i + trial) % 3;
        let refs: Vec<&Packages> = pks
            .iter()
            .enumerate()
            .flat_map(|(i, pk)| std::iter::repeat_n(pk, times(i)))
            .collect();
        let owned: Vec<Packages> = refs.iter().map(|&pk| pk.clone()).collect();
        for (name, model) in models(p) {
            let sigma = gain::joint_relabel(model.as_ref(), &refs, p, fixed).unwrap();
            let got = batch_cost(model.as_ref(), &owned, sigma.forward());
            let (w0, best) = none_and_best(model.as_ref(), &owned, p, fixed);
            assert!(
                got <= best + 1e-9 * w0.max(best),
                "trial {trial} {name}: p = {p}: σ costs {got}, optimum {best}"
            );
        }
    });
}

#[test]
fn a_batch_of_one_gets_the_per_transform_optimum() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for trial in 0..60 {
        let (cases, p) = batch(&mut rng, 1, 7);
        let c = &cases[0];
        let v = Volumes::compute(&c.source, &c.target, c.op).unwrap();
        let joint = joint_relabel(&[&v], p, &[]).unwrap();
        let alone = relabel(&v, Solver::Dense).unwrap();
        assert_eq!(
            v.remote_after(&joint),
            v.remote_after(&alone),
            "trial {trial}: joint σ {:?}, alone {:?}",
            joint.forward(),
            alone.forward()
        );
        let pk = packages(c, &mut rng);
        for (name, model) in models(p) {
            let joint = gain::joint_relabel(model.as_ref(), &[&pk], p, &[]).unwrap();
            let alone = gain::relabel(model.as_ref(), &pk).unwrap();
            let (a, b) = (
                pk.total_cost(model.as_ref(), Some(&joint)),
                pk.total_cost(model.as_ref(), Some(&alone)),
            );
            assert!(
                (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300),
                "trial {trial} {name}: joint {a}, alone {b}"
            );
        }
    }
}

#[test]
fn joint_relabeling_refuses_what_it_cannot_do() {
    let v = Volumes::from_matrix(copr::sparse::Csr::from_dense(
        3,
        3,
        &[0, 1, 0, 0, 0, 1, 1, 0, 0],
    ));
    // volumes of 3 ranks in a space of 2
    assert!(joint_relabel(&[&v], 2, &[]).is_err());
    // a fixed label outside the ranks
    assert!(joint_relabel(&[&v], 3, &[3]).is_err());
    // weights beyond 2^60 together
    let big = Volumes::from_matrix(copr::sparse::Csr::from_dense(1, 1, &[1 << 59]));
    assert!(matches!(
        joint_relabel(&[&big, &big, &big], 1, &[]),
        Err(copr::Error::Limit(_))
    ));
    // the identity is no worse: fixing every label gives it
    let sigma = joint_relabel(&[&v], 3, &[0, 1, 2]).unwrap();
    assert_eq!(sigma, Perm::identity(3));
}
