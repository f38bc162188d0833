//! The sparse candidate relabeling against the dense exact optimum: equal for the volume
//! model, within the stated bound for the others, and the certificate bounds the dense
//! optimum (and a brute force on the smallest sizes).

mod common;

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
/// cut), except the sum with the transform cost on random grids, which is
/// only reported; the instances of `examples/gain_gap.rs` that exceed it are listed in
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
    let sparse = gain::sparse_relabel(model, pk).unwrap();
    let dense = gain::relabel_dense(model, pk).unwrap();
    let dense_saving = pk.total_cost(model, None) - pk.total_cost(model, Some(&dense));
    // the saving the sparse σ reports is its true saving
    let after = pk.total_cost(model, Some(&sparse.sigma));
    let tol = 1e-9 * sparse.cost_before.abs().max(1e-300);
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
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut worst = (0.0f64, String::new());
    let mut cases = 0;
    for p in [16, 36, 64, 100] {
        for (lname, src, dst, op) in layouts(p, &mut rng) {
            let input = PackageInput {
                source: &src,
                target: &dst,
                transform: TransformKind { op, scale: false },
                element_size: 8,
            };
            let pk = Packages::compute(&input).unwrap();
            let q = pk.ranks();
            for (mname, model) in cost_models(q) {
                let c = compare(model.as_ref(), &pk);
                let s = &c.sparse;
                let label = format!("p = {q}, {lname}, {mname}");
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
                if lname.starts_with("block-cyclic") || !mname.contains("transform") {
                    assert!(gap <= STATED_GAP, "{label}: gap {gap}");
                } else if gap > STATED_GAP {
                    // small random grids: the optimum may move a label to a process
                    // that is not a candidate (see docs/SCALING.md); only reported
                    eprintln!(
                        "measured gap {gap:.4} (certified {:.4}): {label}",
                        s.gap() / after_opt.max(tol)
                    );
                }
                if lname.starts_with("block-cyclic") && gap > worst.0 {
                    worst = (gap, label);
                }
                cases += 1;
            }
        }
    }
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

#[test]
fn neighbouring_rings_meet_the_stated_gap_at_p_1024() {
    // 32 → 128 on a 32 × 32 grid (column-major target): the fat tree was 8.5 % off
    // with the senders' nodes alone
    let src = block_cyclic(96 * 32, 32, 32, 32, Order::RowMajor);
    let dst = block_cyclic(96 * 32, 128, 32, 32, Order::ColMajor);
    let input = PackageInput {
        source: &src,
        target: &dst,
        transform: TransformKind::default(),
        element_size: 8,
    };
    let pk = Packages::compute(&input).unwrap();
    for (name, nodes) in [("torus-3d", 128), ("fat-tree", 16), ("two-islands", 8)] {
        let model = config_model(name, nodes, 1024);
        let c = compare(model.as_ref(), &pk);
        let s = &c.sparse;
        let tol = 1e-9 * s.cost_before;
        assert!(
            c.dense_saving <= s.bound + tol,
            "{name}: bound below the optimum"
        );
        let gap = (c.dense_saving - s.saving) / (s.cost_before - c.dense_saving);
        assert!(gap <= STATED_GAP, "{name}: gap {gap}");
    }
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
                let s = gain::sparse_relabel(model.as_ref(), &pk).unwrap();
                let w0 = pk.total_cost(model.as_ref(), None);
                let best = perms
                    .iter()
                    .map(|f| {
                        let sigma = copr::lap::Perm::from_forward(f.clone()).unwrap();
                        w0 - pk.total_cost(model.as_ref(), Some(&sigma))
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                let tol = 1e-9 * w0.abs().max(1e-300);
                assert!(
                    best <= s.bound + tol,
                    "p = {p}, {name}: best {best} > bound {}",
                    s.bound
                );
                assert!(s.saving <= best + tol, "p = {p}, {name}");
                assert!(s.saving >= 0.0, "p = {p}, {name}: worse than the identity");
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
