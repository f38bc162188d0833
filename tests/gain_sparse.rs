//! The sparse candidate relabeling against the dense exact optimum: equal for the volume
//! model, within the stated bound for the others, and the certificate bounds the dense
//! optimum (and a brute force on the smallest sizes).

use copr_testkit::layouts as common;

use std::path::Path;

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
use copr_cost_models::{
    CostModel, LatencyBandwidth, LocalityPenalty, LocallyFreeVolume, Scaled, Sum, TransformCost,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use common::{permutations, two_islands};

/// The target gap for the models with a machine: 0.1 % of the cost after
/// relabeling. Asserted on every instance here with a machine's latency + bandwidth
/// (p ≤ 100 with the configs' own ranks per node, and p = 1024 block-cyclic 32 → 128 on
/// the torus, the fat tree and the two islands, where the neighbouring-node rings are
/// cut), by the first solve and by the column generation, the sum with the transform
/// cost on random grids included; the instances of `examples/gain_gap.rs` are listed in
/// benches/RESULTS.md.
const STATED_GAP: f64 = 1e-3;

fn cost_models(p: usize) -> Vec<(String, Box<dyn CostModel>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/cost");
    let mut out: Vec<(String, Box<dyn CostModel>)> = Vec::new();
    for name in [
        "torus-3d",
        "torus-3d-spread",
        "fat-tree",
        "dragonfly",
        "two-islands",
    ] {
        let setup = copr_cost_models::load_setup(&dir.join(format!("{name}.toml")), Some(p));
        let Ok(setup) = setup else { continue }; // too many ranks for the machine
        let machine = setup.machine.clone().expect("these configs have a machine");
        out.push((format!("{name} (config)"), setup.model));
        out.push((
            format!("{name} latency-bandwidth + volume"),
            Box::new(Sum::<Box<dyn CostModel>>::new(vec![
                Box::new(LatencyBandwidth::new(machine)),
                Box::new(Scaled::new(1e-10, LocallyFreeVolume).unwrap()),
            ])),
        ));
    }
    out.push(("volume".into(), Box::new(LocallyFreeVolume)));
    out.push((
        "locality (remote only)".into(),
        Box::new(LocalityPenalty {
            remote_only: true,
            ..LocalityPenalty::default()
        }),
    ));
    out.push((
        "two islands + transform + locality".into(),
        Box::new(Sum::<Box<dyn CostModel>>::new(vec![
            Box::new(LatencyBandwidth::new(two_islands(p))),
            Box::new(TransformCost::default()),
            Box::new(LocalityPenalty::default()),
        ])),
    ));
    out
}

fn block_cyclic(n: usize, b: usize, rows: usize, cols: usize, order: Order) -> Layout {
    let mut s = BlockCyclicSpec::new(n, n, b, b, rows, cols);
    s.grid_order = order;
    BlockCyclic::new(s).unwrap().into()
}

/// Block-cyclic pairs and random grid layouts on about `p` ranks.
fn layouts(p: usize, rng: &mut ChaCha8Rng) -> Vec<(String, Layout, Layout, Op)> {
    let side = (p as f64).sqrt() as usize;
    let (r, c) = (side, p / side);
    let n = 24 * side;
    let mut out = vec![
        (
            format!("block-cyclic 3 -> 8 on {r}x{c}"),
            block_cyclic(n, 3, r, c, Order::RowMajor),
            block_cyclic(n, 8, r, c, Order::ColMajor),
            Op::Identity,
        ),
        (
            format!("block-cyclic 4 -> 4 transposed on {r}x{c}"),
            block_cyclic(n, 4, r, c, Order::RowMajor),
            block_cyclic(n, 4, r, c, Order::RowMajor),
            Op::Transpose,
        ),
    ];
    for k in 0..2 {
        let (m, nn) = (5 + 7 * p % 40, 9 + 3 * p % 50);
        let src = common::random_layout(rng, m, nn, p).with_ranks(p).unwrap();
        let dst = common::random_layout(rng, m, nn, p).with_ranks(p).unwrap();
        out.push((format!("random grids #{k}"), src, dst, Op::Identity));
    }
    out
}

struct Compared {
    sparse: gain::SparseRelabeling,
    dense_saving: f64,
}

fn compare(model: &dyn CostModel, pk: &Packages) -> Compared {
    let sparse = gain::sparse_relabel_refined(model, pk).unwrap();
    let dense = gain::relabel_dense(model, pk).unwrap();
    let dense_saving = pk.total_cost(model, None) - pk.total_cost(model, Some(&dense));
    // the saving the sparse σ reports is its true saving
    let after = pk.total_cost(model, Some(&sparse.sigma));
    let tol = 1e-9 * sparse.cost_before.abs().max(1e-300);
    // the first solve alone (the planners' path): its certificate bounds the optimum too
    let first = gain::sparse_relabel(model, pk).unwrap();
    assert!(
        first.saving <= dense_saving + tol && dense_saving <= first.bound + tol,
        "{}: first solve saving {} / bound {} vs dense {dense_saving}",
        model.describe(),
        first.saving,
        first.bound
    );
    assert!(first.rounds == 0 && first.priced == 0);
    assert!(
        (sparse.cost_before - after - sparse.saving).abs() <= tol,
        "{}: reported saving {} vs {}",
        model.describe(),
        sparse.saving,
        sparse.cost_before - after
    );
    Compared {
        sparse,
        dense_saving,
    }
}

#[test]
fn sparse_matches_dense_optimum_within_the_stated_bound() {
    let mut worst = (0.0f64, String::new());
    let mut cases = 0;
    small_instances(&mut |inst, pk, model| {
        let (label, lname, mname) = (&inst.label, &inst.layout, &inst.model);
        let c = compare(model, pk);
        let s = &c.sparse;
        let tol = 1e-9 * s.cost_before.abs().max(1e-300);
        // the certificate bounds the true optimum, and σ is no better than it
        assert!(
            c.dense_saving <= s.bound + tol,
            "{label}: dense {} > bound {}",
            c.dense_saving,
            s.bound
        );
        assert!(
            s.saving <= c.dense_saving + tol,
            "{label}: sparse beats the optimum"
        );
        let after_opt = s.cost_before - c.dense_saving;
        let diff = c.dense_saving - s.saving;
        let gap = diff / after_opt.max(tol);
        if mname == "volume" || mname.starts_with("locality") {
            // pair-free models: the candidates are the whole problem
            assert!(diff <= tol, "{label}: {diff} less saved than the optimum");
            assert!(s.gap() <= 2.0 * tol, "{label}: certified gap {}", s.gap());
        }
        // small random grids too, where the optimum may move a label to a process that
        // is not a candidate (see docs/SCALING.md)
        assert!(gap <= STATED_GAP, "{label}: gap {gap}");
        if lname.starts_with("block-cyclic") && gap > worst.0 {
            worst = (gap, label.clone());
        }
        cases += 1;
    });
    assert!(cases > 100, "{cases} cases");
    eprintln!(
        "{cases} cases, worst measured block-cyclic gap {:.3e} ({})",
        worst.0, worst.1
    );
}

/// A data/cost machine with `ranks_per_node` set so that it holds `p` ranks.
fn config_model(name: &str, nodes: usize, p: usize) -> Box<dyn CostModel> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/cost");
    let mut cfg =
        copr_cost_models::CostConfig::from_file(&dir.join(format!("{name}.toml"))).unwrap();
    let placement = cfg.topology.as_mut().and_then(|t| t.placement.as_mut());
    if let Some(
        copr_topology::PlacementConfig::Packed(r) | copr_topology::PlacementConfig::RoundRobin(r),
    ) = placement
    {
        r.ranks = None;
        r.ranks_per_node = Some(p.div_ceil(nodes));
    }
    cfg.build(&dir, Some(p)).unwrap().model
}

/// Block-cyclic `b1` → `b2` of an `n × n` matrix on a 32 × 32 grid (row-major source,
/// column-major target).
fn packages_1024(n: usize, b1: usize, b2: usize) -> Packages {
    packages_on(32, n, b1, b2)
}

/// [`packages_1024`] on a `side × side` grid.
fn packages_on(side: usize, n: usize, b1: usize, b2: usize) -> Packages {
    let src = block_cyclic(n, b1, side, side, Order::RowMajor);
    let dst = block_cyclic(n, b2, side, side, Order::ColMajor);
    let input = PackageInput {
        source: &src,
        target: &dst,
        transform: TransformKind::default(),
        element_size: 8,
    };
    Packages::compute(&input).unwrap()
}

/// Compares the sparse and dense relabelings of `pk` on config `name` with `nodes`
/// nodes: the certificate bounds the optimum and the measured gap is within
/// [`STATED_GAP`]; returns the comparison and the measured gap.
fn check_stated_gap(name: &str, nodes: usize, pk: &Packages) -> (Compared, f64) {
    let model = config_model(name, nodes, pk.ranks());
    let c = compare(model.as_ref(), pk);
    let s = &c.sparse;
    let tol = 1e-9 * s.cost_before;
    assert!(
        c.dense_saving <= s.bound + tol,
        "{name}: bound below the optimum"
    );
    let gap = (c.dense_saving - s.saving) / (s.cost_before - c.dense_saving);
    assert!(gap <= STATED_GAP, "{name}: measured gap {gap}");
    (c, gap)
}

#[test]
fn neighbouring_rings_meet_the_stated_gap_at_p_1024() {
    // 32 → 128 on a 32 × 32 grid (column-major target): the fat tree was 8.5 % off
    // with the senders' nodes alone
    let pk = packages_1024(96 * 32, 32, 128);
    // (the fat tree, 576 ranks per node, is left to benches/RESULTS.md: slow and loose)
    for (name, nodes) in [("two-islands", 8), ("dragonfly", 40)] {
        check_stated_gap(name, nodes, &pk);
    }
}

#[test]
fn column_generation_meets_the_stated_gap_on_3_to_8_at_p_1024() {
    // the instances the candidates alone missed by 0.16–0.37 %
    let pk = packages_1024(24 * 32, 3, 8);
    for (name, nodes) in [
        ("torus-3d", 128),
        ("torus-3d-spread", 100),
        ("two-islands", 8),
    ] {
        let (c, gap) = check_stated_gap(name, nodes, &pk);
        let s = &c.sparse;
        let after = s.cost_before - c.dense_saving;
        // the bounds per node make the pricing exact: it proves σ optimal, which it
        // cannot without pricing (the first solve's certificate is not tight here); on
        // the two islands (128 ranks per node) the flow with one hub per node proves it
        // without pricing
        let hubbed = name == "two-islands";
        let first = gain::sparse_relabel(config_model(name, nodes, 1024).as_ref(), &pk).unwrap();
        assert!(
            !first.is_exact(),
            "{name}: the first solve is already proven"
        );
        assert!(
            s.is_exact() && (hubbed || s.rounds > 0 && s.priced > 0),
            "{name}: certified gap {}, {} rounds",
            s.gap() / after,
            s.rounds
        );
        eprintln!(
            "{name}: measured gap {gap:.2e}, certified {:.2e}, {} rounds, {} pairs priced",
            s.gap() / after,
            s.rounds,
            s.priced
        );
    }
}

/// To exactness from the candidate rows (no first solve), with or without the hubs.
fn refine_hubs(hubs: bool) -> gain::Refine {
    let mut r = gain::Refine::EXACT;
    r.hubs = Some(hubs);
    r.first_solve = false;
    r
}

#[test]
fn hubs_prove_the_dense_optimum_on_nodes_of_many_ranks() {
    // p = 1024 on 4 to 40 nodes (26 to 256 ranks per node), both layouts: the flow with
    // one hub per node is the dense optimum, and its potentials prove it
    let mut hubbed = 0;
    for pk in [
        packages_1024(24 * 32, 3, 8),
        packages_1024(96 * 32, 32, 128),
    ] {
        for (name, nodes) in [
            ("fat-tree", 4),
            ("fat-tree", 16),
            ("dragonfly", 40),
            ("two-islands", 8),
        ] {
            let model = config_model(name, nodes, pk.ranks());
            let model = model.as_ref();
            let w0 = pk.total_cost(model, None);
            let dense = gain::relabel_dense(model, &pk).unwrap();
            let best = w0 - pk.total_cost(model, Some(&dense));
            let s = gain::sparse_relabel_within(model, &pk, &refine_hubs(true)).unwrap();
            let tol = 1e-9 * w0;
            assert!(
                (s.saving - best).abs() <= tol && s.is_exact(),
                "{name}, {nodes} nodes: saving {} vs dense {best}, certified gap {}",
                s.saving,
                s.gap()
            );
            assert!(best <= s.bound + tol, "{name}: bound below the optimum");
            hubbed += usize::from(s.rounds == 0);
        }
    }
    assert!(hubbed > 0, "no instance proven by the first flow");
}

/// `p` processes on a ring; a package costs `bytes · d²` between processes `d` steps
/// apart. Its candidates are the senders and `x` only, with the valid but loose bound
/// `Σ bytes` (every other process is at least one step away).
struct SquaredRing {
    p: usize,
}

impl SquaredRing {
    fn steps(&self, i: usize, j: usize) -> usize {
        let d = i.abs_diff(j);
        d.min(self.p - d)
    }
}

impl CostModel for SquaredRing {
    fn cost(&self, from: usize, to: usize, pkg: &copr_cost_models::Package) -> f64 {
        let d = self.steps(from, to) as f64;
        pkg.bytes as f64 * d * d
    }
    fn candidates(
        &self,
        x: usize,
        incoming: &[(usize, copr_cost_models::Package)],
        out: &mut Vec<(usize, f64)>,
    ) -> Option<f64> {
        let mut ys: Vec<usize> = incoming.iter().map(|e| e.0).chain([x]).collect();
        ys.sort_unstable();
        ys.dedup();
        for y in ys {
            out.push((y, copr_cost_models::delivered_cost(self, y, incoming)));
        }
        Some(incoming.iter().map(|e| e.1.bytes as f64).sum())
    }
}

#[test]
fn pricing_finds_an_optimum_off_the_candidates() {
    // label x receives 8 bytes from x + 1 and from x + 5: at a sender it pays 16·8, at
    // x + 3 (no candidate) 2 · 4 · 8; the optimum moves every label to x + 3
    let p = 16;
    let list: Vec<(usize, usize, u64, copr_cost_models::Package)> = (0..p)
        .flat_map(|x| [1, 5].map(|k| ((x + k) % p, x, 1, copr_cost_models::Package::plain(8))))
        .collect();
    let pk = Packages::from_list(p, list).unwrap();
    let model = SquaredRing { p };
    let s = gain::sparse_relabel_refined(&model, &pk).unwrap();
    let dense = gain::relabel_dense(&model, &pk).unwrap();
    let w0 = pk.total_cost(&model, None);
    let best = w0 - pk.total_cost(&model, Some(&dense));
    // an independent check of the dense optimum: every label at x + 3 costs 64
    assert_eq!(pk.total_cost(&model, Some(&dense)), 64.0 * p as f64);
    assert!(
        s.rounds >= 1 && s.priced > 0,
        "the candidates alone cannot find it: {} rounds, {} priced",
        s.rounds,
        s.priced
    );
    assert!(
        (s.saving - best).abs() <= 1e-9 * w0,
        "{} vs {best}",
        s.saving
    );
    assert!(s.is_exact(), "gap {}", s.gap());
    // the planners' path (gain::relabel) does not refine: the first solve is not proven
    // optimal here, so the dense table decides
    let (sigma, cert) = gain::relabel_certified(&model, &pk).unwrap();
    assert_eq!(cert.method, gain::Method::Dense);
    assert!(cert.exact && cert.priced == 0);
    assert_eq!(pk.total_cost(&model, Some(&sigma)), 64.0 * p as f64);
}

#[test]
fn certificate_bounds_the_brute_force_optimum() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for p in [4, 5, 6] {
        let perms = permutations(p);
        for _ in 0..6 {
            let src = common::random_layout(&mut rng, 13, 11, p)
                .with_ranks(p)
                .unwrap();
            let dst = common::random_layout(&mut rng, 13, 11, p)
                .with_ranks(p)
                .unwrap();
            let input = PackageInput {
                source: &src,
                target: &dst,
                transform: TransformKind::default(),
                element_size: 8,
            };
            let pk = Packages::compute(&input).unwrap();
            for (name, model) in cost_models(p) {
                let s = gain::sparse_relabel_refined(model.as_ref(), &pk).unwrap();
                let first = gain::sparse_relabel(model.as_ref(), &pk).unwrap();
                let hubs =
                    gain::sparse_relabel_within(model.as_ref(), &pk, &refine_hubs(true)).unwrap();
                let no_hubs =
                    gain::sparse_relabel_within(model.as_ref(), &pk, &refine_hubs(false)).unwrap();
                let w0 = pk.total_cost(model.as_ref(), None);
                let best = perms
                    .iter()
                    .map(|f| {
                        let sigma = copr::lap::Perm::from_forward(f.clone()).unwrap();
                        w0 - pk.total_cost(model.as_ref(), Some(&sigma))
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                let tol = 1e-9 * w0.abs().max(1e-300);
                for r in [&s, &first] {
                    assert!(
                        best <= r.bound + tol && r.saving <= best + tol,
                        "p = {p}, {name}: best {best}, saving {} / bound {}",
                        r.saving,
                        r.bound
                    );
                }
                for (how, s) in [("refined", &s), ("hubs", &hubs), ("no hubs", &no_hubs)] {
                    assert!(s.saving <= best + tol, "p = {p}, {name}, {how}");
                    assert!(s.saving >= 0.0, "p = {p}, {name}: worse than the identity");
                    // on a few processes the column generation prices every pair that
                    // can matter: the certificate proves σ optimal, and σ is the brute
                    // force's
                    assert!(
                        s.is_exact(),
                        "p = {p}, {name}, {how}: gap {} after {} rounds",
                        s.gap(),
                        s.rounds
                    );
                    assert!(
                        (s.saving - best).abs() <= tol,
                        "p = {p}, {name}, {how}: {} vs the brute force {best}",
                        s.saving
                    );
                }
            }
        }
    }
}

#[test]
fn a_model_without_candidates_is_refused_beyond_the_dense_limit() {
    use copr_cost_models::{FnModel, Package};
    let p = copr::lap::DENSE_LIMIT + 1;
    let pk = Packages::from_list(p, vec![(1, 0, 1, Package::plain(8))]).unwrap();
    let opaque = FnModel::new(
        "opaque",
        |i: usize, j: usize, s: &Package| {
            if i == j {
                0.0
            } else {
                s.bytes as f64
            }
        },
    );
    let e = gain::relabel(&opaque, &pk).unwrap_err().to_string();
    assert!(
        e.contains("DENSE_LIMIT") && e.contains(&p.to_string()),
        "{e}"
    );
    // the same packages under a model that names candidates: solved, sparse
    let sigma = gain::relabel(
        &LocalityPenalty {
            remote_only: true,
            ..LocalityPenalty::default()
        },
        &pk,
    )
    .unwrap();
    assert_eq!(sigma.apply(0), 1);
}

/// Every instance of [`sparse_matches_dense_optimum_within_the_stated_bound`] (p ≤ 100,
/// every machine and model) with packages of `layouts`.
/// Names of one instance of [`small_instances`].
struct Instance {
    /// `p = …, layout, model`
    label: String,
    layout: String,
    model: String,
}

fn small_instances(f: &mut dyn FnMut(&Instance, &Packages, &dyn CostModel)) {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    for p in [16, 36, 64, 100] {
        for (lname, src, dst, op) in layouts(p, &mut rng) {
            let input = PackageInput {
                source: &src,
                target: &dst,
                transform: TransformKind { op, scale: false },
                element_size: 8,
            };
            let pk = Packages::compute(&input).unwrap();
            for (mname, model) in cost_models(pk.ranks()) {
                let inst = Instance {
                    label: format!("p = {}, {lname}, {mname}", pk.ranks()),
                    layout: lname.to_string(),
                    model: mname.to_string(),
                };
                f(&inst, &pk, model.as_ref());
            }
        }
    }
}

#[test]
fn group_bounds_hold_for_every_process_by_brute_force() {
    let mut with_groups = 0;
    let mut tight = 0;
    small_instances(&mut |inst, pk, model| {
        let label = inst.label.as_str();
        let Some(groups) = model.process_groups() else {
            return;
        };
        let p = pk.ranks();
        for (x, inc) in pk.by_target().iter().enumerate() {
            let mut b = vec![0.0; groups.len()];
            if !model.add_group_bounds(x, inc, &groups, &mut b) {
                return;
            }
            for y in 0..p {
                let c = copr_cost_models::delivered_cost(model, y, inc);
                let g = groups.group_of(y);
                assert!(
                    b[g] <= c * (1.0 + 1e-12) + 1e-300,
                    "{label}: label {x}, process {y} (group {g}): bound {} > cost {c}",
                    b[g]
                );
                tight += usize::from(b[g] >= c * (1.0 - 1e-12));
            }
        }
        with_groups += 1;
    });
    // on a machine the bound of a node that sends nothing is its exact cost
    assert!(
        with_groups > 50 && tight > 10_000,
        "{with_groups} instances with groups, {tight} tight bounds"
    );
}

#[test]
fn refined_sigma_is_within_the_tolerance_of_the_dense_optimum() {
    let mut cases = 0;
    let mut refined = 0;
    small_instances(&mut |inst, pk, model| {
        let label = inst.label.as_str();
        let s = gain::sparse_relabel_within(model, pk, &gain::Refine::within(STATED_GAP)).unwrap();
        let dense = gain::relabel_dense(model, pk).unwrap();
        let w0 = pk.total_cost(model, None);
        let best = w0 - pk.total_cost(model, Some(&dense));
        let tol = 1e-9 * w0.abs().max(1e-300);
        assert!(
            best <= s.bound + tol,
            "{label}: bound {} < optimum {best}",
            s.bound
        );
        assert!(s.saving <= best + tol, "{label}: beats the optimum");
        let measured = (best - s.saving) / (w0 - best).max(tol);
        // the pricing certifies the tolerance (of σ's cost, or of W(G) when σ's is 0) on
        // every instance, with bounds per group or (an explicit rank table, the two
        // islands with the transform cost on random grids) one per row, hence the
        // measured gap is within it too
        let certified = s.gap() <= STATED_GAP * (w0 - s.saving) + tol;
        assert!(
            certified,
            "{label}: certified gap {} ({} rounds, {} priced)",
            s.relative_gap(),
            s.rounds,
            s.priced
        );
        assert!(measured <= STATED_GAP, "{label}: measured gap {measured}");
        refined += usize::from(s.rounds > 0);
        cases += 1;
    });
    assert!(
        cases > 100 && refined > 0,
        "{cases} cases, {refined} refined"
    );
}

/// To exactness, re-solving every round from nothing.
fn cold_exact() -> gain::Refine {
    let mut cold = gain::Refine::EXACT;
    cold.cold_start = true;
    cold
}

#[test]
fn warm_start_gives_the_cold_start_value() {
    let mut compared = 0;
    small_instances(&mut |inst, pk, model| {
        let label = inst.label.as_str();
        let warm = gain::sparse_relabel_refined(model, pk).unwrap();
        let cold = gain::sparse_relabel_within(model, pk, &cold_exact()).unwrap();
        let tol = 1e-9 * warm.cost_before.abs().max(1e-300);
        if warm.is_exact() && cold.is_exact() {
            assert!(
                (warm.saving - cold.saving).abs() <= tol,
                "{label}: warm {} vs cold {}",
                warm.saving,
                cold.saving
            );
            compared += usize::from(warm.rounds > 0);
        }
    });
    // and on the instance the first solve misses (3 → 8 at p = 256 on the torus)
    let pk = packages_on(16, 24 * 16, 3, 8);
    for (name, nodes) in [("torus-3d", 128), ("two-islands", 8)] {
        let model = config_model(name, nodes, pk.ranks());
        let warm = gain::sparse_relabel_refined(model.as_ref(), &pk).unwrap();
        let cold = gain::sparse_relabel_within(model.as_ref(), &pk, &cold_exact()).unwrap();
        assert!(
            (warm.saving - cold.saving).abs() <= 1e-9 * warm.cost_before,
            "{name}: warm {} vs cold {}",
            warm.saving,
            cold.saving
        );
        compared += usize::from(warm.rounds > 0);
    }
    assert!(compared > 0, "no instance needed pricing");
}

/// Packages on `p` ranks where only some labels receive (from two or three random
/// senders, random sizes); the others receive nothing and cost 0 at every process.
fn some_labels_receive(p: usize, rng: &mut ChaCha8Rng) -> Packages {
    use rand::RngExt;
    let mut list = Vec::new();
    for x in 0..p {
        if rng.random_bool(0.5) {
            continue;
        }
        for _ in 0..rng.random_range(2..=3) {
            let bytes = 8 * rng.random_range(1..64u64);
            list.push((
                rng.random_range(0..p),
                x,
                1,
                copr_cost_models::Package::plain(bytes),
            ));
        }
    }
    Packages::from_list(p, list).unwrap()
}

#[test]
fn labels_that_receive_nothing_refine_to_the_brute_force_optimum() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut refined = 0;
    for p in [6, 7] {
        let perms = permutations(p);
        for _ in 0..6 {
            let pk = some_labels_receive(p, &mut rng);
            let mut models = cost_models(p);
            models.push(("squared ring".into(), Box::new(SquaredRing { p })));
            for (name, model) in models {
                let model = model.as_ref();
                let w0 = pk.total_cost(model, None);
                let best = perms
                    .iter()
                    .map(|f| {
                        let sigma = copr::lap::Perm::from_forward(f.clone()).unwrap();
                        w0 - pk.total_cost(model, Some(&sigma))
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                let tol = 1e-9 * w0.abs().max(1e-300);
                let warm = gain::sparse_relabel_refined(model, &pk).unwrap();
                let cold = gain::sparse_relabel_within(model, &pk, &cold_exact()).unwrap();
                let first = gain::sparse_relabel(model, &pk).unwrap();
                let hubs = gain::sparse_relabel_within(model, &pk, &refine_hubs(true)).unwrap();
                for r in [&warm, &cold, &first, &hubs] {
                    assert!(
                        best <= r.bound + tol && r.saving <= best + tol,
                        "p = {p}, {name}: best {best}, saving {} / bound {}",
                        r.saving,
                        r.bound
                    );
                    let after = pk.total_cost(model, Some(&r.sigma));
                    assert!((w0 - after - r.saving).abs() <= tol, "p = {p}, {name}");
                }
                for r in [&warm, &cold, &hubs] {
                    assert!(
                        r.is_exact() && (r.saving - best).abs() <= tol,
                        "p = {p}, {name}: {} vs the brute force {best}, gap {}",
                        r.saving,
                        r.gap()
                    );
                }
                refined += usize::from(warm.rounds > 0);
            }
        }
    }
    assert!(refined > 0, "no instance needed pricing");
}

#[test]
fn planners_refine_beyond_the_dense_limit() {
    // block-cyclic 32 → 128 on a 96 × 96 grid: a quarter of the target labels receive
    // nothing (the planners' instances at scale have that shape)
    let pk = packages_on(96, 96 * 96, 32, 128);
    let p = pk.ranks();
    assert!(p > copr::lap::DENSE_LIMIT);
    let mut refined = 0;
    for (name, nodes) in [("two-islands", 8), ("dragonfly", 40), ("fat-tree", 16)] {
        let model = config_model(name, nodes, p);
        let first = gain::sparse_relabel(model.as_ref(), &pk).unwrap();
        let (sigma, cert) = gain::relabel_certified(model.as_ref(), &pk).unwrap();
        assert_eq!(cert.method, gain::Method::Sparse);
        let w0 = pk.total_cost(model.as_ref(), None);
        let after = pk.total_cost(model.as_ref(), Some(&sigma));
        let tol = 1e-9 * w0;
        // σ's own saving, and a certificate no weaker than the first solve's
        assert!(
            (cert.bound - cert.gap - (w0 - after)).abs() <= tol,
            "{name}: {cert:?} vs {}",
            w0 - after
        );
        assert!(w0 - after >= first.saving - tol && cert.bound <= first.bound + tol);
        eprintln!(
            "p = {p}, {name}: first solve gap {:.3e}, planners' {:.3e} ({} rounds, {} priced)",
            first.relative_gap(),
            cert.gap / after,
            cert.rounds,
            cert.priced
        );
        refined += usize::from(cert.gap * 10.0 < first.gap());
        // hundreds of ranks per node: the flow with one hub per node is proven within the
        // planners' tolerance (it was 27 % for the fat tree and 0.12 % for the dragonfly
        // after 4 rounds of pricing columns one by one)
        assert!(
            cert.gap <= gain::PLANNER_TOLERANCE * after,
            "{name}: certified {}",
            cert.gap / after
        );
    }
    // the fat tree's and the dragonfly's: from 32 % and 43 % to exact (benches/RESULTS.md)
    assert!(refined > 0, "no certificate tightened tenfold");
}
