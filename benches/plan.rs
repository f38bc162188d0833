//! Planning benchmarks: the paper's whole sweep (volumes + exact σ for 24 block sizes),
//! single volume computations, what one rank of a large job spends building its
//! reshuffle plan, and the planning the one-call entry points do inside every call.

use copr::engine::{Relabeling, ReshufflePlan, Transform};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op};
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

/// `A ← op(B)` for N × N matrices, block-cyclic 32 × 32 → 128 × 128 on a `pr × pc`
/// grid, relabeling off.
fn batch_32_to_128(n: usize, pr: usize, pc: usize, op: Op) -> Vec<Transform> {
    let layout = |b: usize| -> Layout {
        BlockCyclic::new(BlockCyclicSpec::new(n, n, b, b, pr, pc))
            .expect("valid layout")
            .into()
    };
    vec![Transform::new(layout(32), layout(128), op).with_relabeling(Relabeling::Off)]
}

/// Building the reshuffle plan of one rank of a p = q² job (block-cyclic 32 -> 128 on a
/// q × q grid, N = 96·q, relabeling off): what that rank pays for its own sends and
/// receives, measured without the other ranks.
fn one_rank(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan one rank");
    g.sample_size(10);
    for q in [32usize, 100, 320] {
        let (p, n) = (q * q, 96 * q);
        for op in [Op::Identity, Op::Transpose] {
            let batch = batch_32_to_128(n, q, q, op);
            let mut t = copr::transport::StandIn {
                rank: p / 2 + q / 2,
                size: p,
            };
            g.bench_function(format!("p={p} {op:?}"), |b| {
                b.iter(|| ReshufflePlan::new(&mut t, batch.clone()).expect("plan"))
            });
        }
    }
    g.finish();
}

/// Planning as the engine's one-call entry points do it inside every call: one rank of
/// the 4-rank benchmark job (2 × 2 grid, block-cyclic 32 -> 128, double, relabeling
/// off), N = 4000 and 10 000, on one core as each of 4 ranks has on this 2-core machine
/// (the stand-in's `threads()` is 1). The MPI driver's "planned in the call" cases
/// spend exactly this (`PlanStats::total`) before they execute; its recorded baseline
/// is in `benches/RESULTS.md`.
fn in_the_call(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan in the call");
    g.sample_size(20);
    for n in [4000usize, 10_000] {
        for op in [Op::Identity, Op::Transpose] {
            let batch = batch_32_to_128(n, 2, 2, op);
            let mut t = copr::transport::StandIn { rank: 0, size: 4 };
            g.bench_function(format!("N={n} {op:?} rank 0 of 2x2"), |b| {
                b.iter(|| ReshufflePlan::new(&mut t, batch.clone()).expect("plan"))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, sweep, one_rank, in_the_call);
criterion_main!(benches);
