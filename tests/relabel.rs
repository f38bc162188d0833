//! The one relabeling entry point, `copr::relabel::Relabel`: every objective × method
//! combination it accepts finds the brute-force optimum on small sizes (or, for the
//! heuristic and the unrefined candidate solve, stays within what it claims), and every
//! combination it refuses says so with `Error::Unsupported`.

use copr_testkit::layouts as common;

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::lap::Perm;
use copr::layout::{Layout, Op};
use copr::relabel::{Method, Relabel, Relabeled, SolvedBy};
use copr::volume::Volumes;
use copr_cost_models::{CostModel, FnModel, LatencyBandwidth, LocallyFreeVolume, Package};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use common::{permutations, two_islands};

const METHODS: [Method; 4] = [Method::Auto, Method::Sparse, Method::Dense, Method::Greedy];

/// A model of each kind the entry point tells apart: a multiple of the volume, one that
/// names candidates, one that names none.
fn models(p: usize) -> Vec<(&'static str, Box<dyn CostModel>)> {
    vec![
        ("volume", Box::new(LocallyFreeVolume)),
        (
            "latency-bandwidth",
            Box::new(LatencyBandwidth::new(two_islands(p))),
        ),
        (
            "closure",
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

/// Random layouts on at most `max_ranks` ranks (both on the same ranks, so that rows
/// from layouts cover every label) and an op.
fn random_pair(rng: &mut ChaCha8Rng, max_ranks: usize) -> (Layout, Layout, Op) {
    let (m, n) = (rng.random_range(1..24), rng.random_range(1..24));
    let op = [Op::Identity, Op::Transpose][rng.random_range(0..2)];
    let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
    let s = common::random_layout(rng, sm, sn, max_ranks);
    let d = common::random_layout(rng, m, n, max_ranks);
    let p = s.ranks().max(d.ranks());
    (s.with_ranks(p).unwrap(), d.with_ranks(p).unwrap(), op)
}

fn input<'a>(pair: &'a (Layout, Layout, Op)) -> PackageInput<'a> {
    PackageInput {
        source: &pair.0,
        target: &pair.1,
        transform: TransformKind {
            op: pair.2,
            scale: false,
        },
        element_size: 8,
    }
}

/// The brute-force minimum of `cost(σ)` over every σ of `p` ranks with `σ(t) = t` for
/// the labels in `fixed`.
fn brute_min(p: usize, fixed: &[usize], cost: impl Fn(&Perm) -> f64) -> f64 {
    permutations(p)
        .into_iter()
        .filter(|f| fixed.iter().all(|&t| f[t] == t))
        .map(|f| cost(&Perm::from_forward(f).unwrap()))
        .fold(f64::INFINITY, f64::min)
}

fn remote(volumes: &[&Volumes], sigma: &Perm) -> f64 {
    volumes
        .iter()
        .flat_map(|v| v.matrix().iter())
        .filter(|&(s, t, _)| s != sigma.apply(t))
        .map(|(_, _, x)| x as f64)
        .sum()
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * scale.abs().max(1e-300)
}

/// The answer is consistent with itself: `cost_before`, the saving of its σ under
/// `cost`, the bound and the certificate.
fn check_claims(what: &str, r: &Relabeled, cost: &dyn Fn(&Perm) -> f64, best: f64) {
    let p = r.sigma.len();
    let before = cost(&Perm::identity(p));
    let after = cost(&r.sigma);
    let scale = before.max(1.0);
    assert!(close(r.cost_before, before, scale), "{what}: {r:?}");
    assert!(close(r.saving, before - after, scale), "{what}: {r:?}");
    // nothing saves more than the bound, the optimum included
    assert!(before - best <= r.bound + 1e-9 * scale, "{what}: {r:?}");
    // σ is within its gap of the optimum
    assert!(after - best <= r.gap() + 1e-9 * scale, "{what}: {r:?}");
    assert!(
        after >= best - 1e-9 * scale,
        "{what}: better than brute force? {r:?}"
    );
    if r.is_exact() {
        assert!(
            close(after, best, scale),
            "{what}: claims exact, {after} vs {best}"
        );
    }
    let c = r.certificate();
    assert_eq!((c.method, c.exact), (r.method, r.is_exact()), "{what}");
    // a σ that saves nothing is the identity
    if r.saving <= 1e-10 * before.abs() {
        assert!(r.sigma.is_identity(), "{what}: {r:?}");
    }
}

fn is_unsupported(r: copr::Result<Relabeled>) -> bool {
    matches!(r, Err(copr::Error::Unsupported { .. }))
}

#[test]
fn volume_methods_agree_with_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(26);
    for case in 0..60 {
        let pair = random_pair(&mut rng, 6);
        let input = input(&pair);
        let v = Volumes::compute(input.source, input.target, input.transform.op).unwrap();
        let p = v.ranks();
        let cost = |sigma: &Perm| remote(&[&v], sigma);
        let best = brute_min(p, &[], cost);
        for method in METHODS {
            let what = format!("case {case}, volume, {method:?}");
            let r = Relabel::volume(&v).method(method).solve().unwrap();
            check_claims(&what, &r, &cost, best);
            if method == Method::Greedy {
                assert_eq!(r.method, SolvedBy::Greedy, "{what}");
                assert!(!r.is_exact() && r.bound.is_infinite(), "{what}: {r:?}");
            } else {
                assert!(r.is_exact(), "{what}: {r:?}");
                assert!(close(cost(&r.sigma), best, 1.0), "{what}");
            }
        }
    }
}

#[test]
fn joint_volume_methods_agree_with_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(27);
    for case in 0..40 {
        let mut owned = Vec::new();
        for _ in 0..rng.random_range(1..4) {
            let pair = random_pair(&mut rng, 5);
            let input = input(&pair);
            owned.push(Volumes::compute(input.source, input.target, input.transform.op).unwrap());
        }
        let refs: Vec<&Volumes> = owned.iter().collect();
        let p = refs.iter().map(|v| v.ranks()).max().unwrap() + rng.random_range(0..2);
        let fixed: Vec<usize> = (0..p).filter(|_| rng.random_bool(0.25)).collect();
        // a transform on fewer ranks than the batch: σ acts on its labels only
        let cost = |sigma: &Perm| remote(&refs, sigma);
        let best = brute_min(p, &fixed, cost);
        for method in METHODS {
            let what = format!("case {case}, joint volume, {method:?}");
            let ask = Relabel::volumes(&refs)
                .ranks(p)
                .fixed(&fixed)
                .method(method);
            if matches!(method, Method::Dense | Method::Greedy) {
                assert!(is_unsupported(ask.solve()), "{what}");
                continue;
            }
            let r = ask.solve().unwrap();
            assert!(fixed.iter().all(|&t| r.sigma.apply(t) == t), "{what}");
            check_claims(&what, &r, &cost, best);
            assert!(r.is_exact() && close(cost(&r.sigma), best, 1.0), "{what}");
        }
    }
}

/// Runs `check(what, input, packages, model, cost, optimum)` on `cases` random layout
/// pairs (seeded) for every model of [`models`], with the brute-force optimum.
fn for_each_model_case(
    seed: u64,
    cases: usize,
    check: impl Fn(&str, &PackageInput<'_>, &Packages, &dyn CostModel, &dyn Fn(&Perm) -> f64, f64),
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for case in 0..cases {
        let pair = random_pair(&mut rng, 6);
        let input = input(&pair);
        let pk = Packages::compute(&input).unwrap();
        let p = pk.ranks();
        for (name, model) in models(p) {
            let model = model.as_ref();
            let cost = |sigma: &Perm| pk.total_cost(model, Some(sigma));
            let best = brute_min(p, &[], cost);
            check(
                &format!("case {case}, {name}"),
                &input,
                &pk,
                model,
                &cost,
                best,
            );
        }
    }
}

#[test]
fn cost_methods_agree_with_brute_force() {
    for_each_model_case(28, 40, |case, _, pk, model, cost, best| {
        for method in METHODS {
            let what = format!("{case}, {method:?}");
            let ask = Relabel::cost(model, pk).method(method);
            match method {
                Method::Sparse if model.candidates(0, &[], &mut Vec::new()).is_none() => {
                    // no candidates: refused as too large for the sparse path
                    assert!(matches!(ask.solve(), Err(copr::Error::Limit(_))), "{what}");
                }
                Method::Sparse => {
                    let first = ask.solve().unwrap();
                    assert_eq!(first.method, SolvedBy::Sparse, "{what}");
                    check_claims(&what, &first, cost, best);
                    // refined until nothing is left to price: the optimum
                    let exact = ask.tolerance(0.0).solve().unwrap();
                    check_claims(&format!("{what}, refined"), &exact, cost, best);
                    assert!(close(cost(&exact.sigma), best, best.max(1.0)), "{what}");
                }
                Method::Auto | Method::Dense => {
                    let r = ask.solve().unwrap();
                    check_claims(&what, &r, cost, best);
                    assert!(r.is_exact(), "{what}: {r:?}");
                    assert!(close(cost(&r.sigma), best, best.max(1.0)), "{what}");
                }
                // greedy swaps are for the volume only
                _ => assert!(is_unsupported(ask.solve()), "{what}"),
            }
        }
    });
}

#[test]
fn joint_cost_methods_agree_with_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    for case in 0..25 {
        let mut owned = Vec::new();
        for _ in 0..rng.random_range(1..4) {
            let pair = random_pair(&mut rng, 5);
            let input = input(&pair);
            owned.push(Packages::compute(&input).unwrap());
        }
        let mut refs: Vec<&Packages> = owned.iter().collect();
        // the same transform twice counts twice
        refs.push(&owned[0]);
        let p = refs.iter().map(|pk| pk.ranks()).max().unwrap();
        let fixed: Vec<usize> = (0..p).filter(|_| rng.random_bool(0.2)).collect();
        for (name, model) in models(p) {
            let model = model.as_ref();
            let cost = |sigma: &Perm| gain::joint_cost(model, &refs, Some(sigma));
            let best = brute_min(p, &fixed, cost);
            for method in METHODS {
                let what = format!("case {case}, joint {name}, {method:?}");
                let ask = Relabel::costs(model, &refs)
                    .ranks(p)
                    .fixed(&fixed)
                    .method(method);
                if matches!(method, Method::Sparse | Method::Greedy) {
                    assert!(is_unsupported(ask.solve()), "{what}");
                    continue;
                }
                let r = ask.solve().unwrap();
                assert!(fixed.iter().all(|&t| r.sigma.apply(t) == t), "{what}");
                check_claims(&what, &r, &cost, best);
                assert!(r.is_exact() && close(cost(&r.sigma), best, best.max(1.0)));
            }
        }
    }
}

#[test]
fn rows_from_layouts_agree_with_brute_force() {
    for_each_model_case(30, 30, |case, input, _, model, cost, best| {
        for method in METHODS {
            let what = format!("{case} from layouts, {method:?}");
            let ask = Relabel::from_layouts(model, input).method(method);
            if matches!(method, Method::Sparse | Method::Greedy) {
                assert!(is_unsupported(ask.solve()), "{what}");
                continue;
            }
            let r = ask.solve().unwrap();
            check_claims(&what, &r, cost, best);
            assert!(r.is_exact() && close(cost(&r.sigma), best, best.max(1.0)));
        }
    });
}

#[test]
fn refusals_name_the_method_and_what_was_relabeled() {
    let v = Volumes::from_matrix(copr::csr::Csr::from_dense(2, 2, &[0, 1, 1, 0]));
    let e = Relabel::volumes(&[&v])
        .method(Method::Greedy)
        .solve()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the greedy relabeling method does not apply to the volume of a batch"
    );
    match e {
        copr::Error::Unsupported { method, objective } => {
            assert_eq!((method, objective), ("greedy", "the volume of a batch"));
        }
        e => panic!("{e}"),
    }
}

/// A model written from scratch with only the required method, `cost`: no solver
/// hints, no description. Traffic costs the ring distance between ranks times the
/// bytes, and arriving at rank 0 costs double.
struct RingModel {
    p: usize,
}

impl CostModel for RingModel {
    fn cost(&self, from: usize, to: usize, pkg: &Package) -> f64 {
        let d = from.abs_diff(to).min(self.p - from.abs_diff(to)) as f64;
        let hot = if to == 0 && from != 0 { 2.0 } else { 1.0 };
        hot * d * pkg.bytes as f64
    }
}

#[test]
fn a_model_with_only_its_cost_is_relabeled_exactly() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut moved = 0;
    for case in 0..40 {
        let pair = random_pair(&mut rng, 6);
        let pk = Packages::compute(&input(&pair)).unwrap();
        let p = pk.ranks();
        let model = RingModel { p };
        let cost = |sigma: &Perm| pk.total_cost(&model, Some(sigma));
        let best = brute_min(p, &[], cost);
        // the defaults: no hints, so no candidates and the dense table decides
        assert!(model.hints().is_none());
        let r = Relabel::cost(&model, &pk).solve().unwrap();
        assert_eq!(r.method, SolvedBy::Dense, "case {case}");
        check_claims(&format!("case {case}"), &r, &cost, best);
        assert!(r.is_exact() && close(cost(&r.sigma), best, best.max(1.0)));
        moved += usize::from(!r.sigma.is_identity());
        // the sparse path needs hints and says so
        let e = Relabel::cost(&model, &pk).method(Method::Sparse).solve();
        assert!(
            matches!(e, Err(copr::Error::Limit(_))),
            "case {case}: {e:?}"
        );
    }
    assert!(
        moved > 5,
        "only {moved} cases relabeled: the test would not see a wrong σ"
    );
}
