//! δ for p = 4096 ranks under the latency + bandwidth model of a 3-D torus
//! (data/cost/torus-3d.toml: 4×4×4 routers, 128 nodes, 32 ranks per node), block-cyclic
//! 32 × 32 → 128 × 128 packages on a 64 × 64 grid; and the exact dense solve of it.

use std::path::Path;

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::lap::dense_max;
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Order};
use copr_cost_models::CostModel;
use criterion::{criterion_group, criterion_main, Criterion};

fn instance() -> (Layout, Layout) {
    let n = 16384;
    let src = BlockCyclic::new(BlockCyclicSpec::new(n, n, 32, 32, 64, 64)).unwrap();
    let mut t = BlockCyclicSpec::new(n, n, 128, 128, 64, 64);
    t.grid_order = Order::ColMajor;
    (src.into(), BlockCyclic::new(t).unwrap().into())
}

fn bench(c: &mut Criterion) {
    let cfg = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/cost/torus-3d.toml");
    let setup = copr_cost_models::load_setup(&cfg, Some(4096)).unwrap();
    let (src, dst) = instance();
    let input = PackageInput {
        source: &src,
        target: &dst,
        transform: TransformKind::default(),
        element_size: 8,
    };
    let pk = Packages::compute(&input).unwrap();
    let mut g = c.benchmark_group("gain_p4096_torus");
    g.sample_size(10);
    g.bench_function("packages", |b| {
        b.iter(|| Packages::compute(&input).unwrap())
    });
    g.bench_function("delta", |b| {
        b.iter(|| gain::gain_matrix(setup.model.as_ref(), &pk))
    });
    // The same model seen only through `cost` (one call per rank pair): what δ costs
    // without the row-at-a-time `add_costs_from`.
    let per_pair = copr_cost_models::FnModel::new(
        "per pair",
        |i: usize, j: usize, s: &copr_cost_models::Package| setup.model.cost(i, j, s),
    );
    g.bench_function("delta_per_pair_calls", |b| {
        b.iter(|| gain::gain_matrix(&per_pair, &pk))
    });
    let delta = gain::gain_matrix(setup.model.as_ref(), &pk);
    g.bench_function("dense_jv_solve", |b| {
        b.iter(|| dense_max(4096, &delta).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
