//! Linear-assignment benches: dense JV (copr's own and the `lapjv` crate) on uniform
//! random integers, the sparse solver on block-cyclic relabeling instances and on random
//! sparse rows, and COSTA's greedy baseline. Inputs are built outside the timed loop.
//!
//! Run: `cargo bench --bench lap`.

use copr_testkit::lap as common;

use std::hint::black_box;
use std::time::Duration;

use copr::lap::{dense_max_with, greedy_swaps, sparse_max, DenseSolver};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn dense(c: &mut Criterion) {
    let mut g = c.benchmark_group("lap_dense_uniform_0_1000");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for n in [1024usize, 4096] {
        let gain = common::uniform_dense(n, 0, 1000, 42);
        for solver in [DenseSolver::Jv, DenseSolver::LapjvCrate] {
            g.bench_with_input(
                BenchmarkId::new(format!("{solver:?}"), n),
                &gain,
                |b, gain| b.iter(|| dense_max_with(n, black_box(gain), solver).unwrap()),
            );
        }
    }
    g.finish();
}

fn sparse(c: &mut Criterion) {
    let mut g = c.benchmark_group("lap_sparse");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    let mut cases = Vec::new();
    for p in [16384usize, 102400] {
        cases.push((
            format!("block_cyclic_32_48/{p}"),
            common::block_cyclic_instance(p),
        ));
    }
    cases.push((
        "block_cyclic_32_100/102400".to_string(),
        common::block_cyclic_volumes(320, 96 * 320, 32, 100).transpose(),
    ));
    cases.push((
        "random_4_per_row_1_1000/102400".to_string(),
        common::random_sparse_rows(102400, 4, 1000, 3),
    ));
    // the hard case: long late shortest-path searches, handed to the auction
    for hi in [1000u64, 4] {
        cases.push((
            format!("random_16_per_row_1_{hi}/102400"),
            common::random_sparse_rows(102400, 16, hi, 3),
        ));
    }
    for (name, w) in &cases {
        g.bench_function(name.as_str(), |b| {
            b.iter(|| sparse_max(black_box(w)).unwrap())
        });
    }
    // The greedy baseline works on V itself.
    let v = common::block_cyclic_instance(102400).transpose();
    g.bench_function("greedy_swaps_block_cyclic_32_48/102400", |b| {
        b.iter(|| greedy_swaps(black_box(&v)))
    });
    g.finish();
}

criterion_group!(benches, dense, sparse);
criterion_main!(benches);
