//! Planning benchmarks: the paper's whole sweep (volumes + exact σ for 24 block sizes),
//! and single volume computations.

use copr::layout::Op;
use copr::sweep::SweepConfig;
use copr::volume::Volumes;
use criterion::{criterion_group, criterion_main, Criterion};

fn sweep(c: &mut Criterion) {
    let cfg = SweepConfig::default();
    let mut g = c.benchmark_group("sweep");
    g.sample_size(20);
    g.bench_function("paper_default_exact", |b| {
        b.iter(|| cfg.run(&|| {}).unwrap())
    });
    for block in [1usize, 5, 10] {
        let (s, t) = cfg.layouts(block).unwrap();
        g.bench_function(format!("volumes_b{block}"), |b| {
            b.iter(|| Volumes::compute(&s, &t, Op::Identity).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, sweep);
criterion_main!(benches);
