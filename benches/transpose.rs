//! The engine's transposing kernels through the public API: one rank moves a matrix B
//! of about 64 MiB (32 × 32 blocks, column-major) into A (128 × 128 blocks), every
//! piece a local copy, single-threaded, for each element size: op = identity
//! (straight runs, the reference) and op = transpose (the register transposes).
//!
//! Group "per call": what a call costs besides moving the data, on a small matrix
//! (256 × 256 doubles) where the moving is cheap: a kept plan's `execute`, the same
//! through a `PlanCache` hit, and planning inside the call (`plan_and_execute`).

use copr::engine::{Element, Job, PlanCache, Relabeling, ReshufflePlan, Transform};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op};
use copr::transport::{Round, RoundHandler, Transport};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use num_complex::{Complex32, Complex64};

/// Bytes of B.
const BYTES: usize = 64 << 20;

/// A communicator of one rank on one thread: no packages, only the check and the
/// local work.
struct Solo;

impl Transport for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn max_message_bytes(&self) -> usize {
        usize::MAX
    }
    fn threads(&self) -> usize {
        1
    }
    fn all_gather(&mut self, mine: &[u64], all: &mut [u64]) -> copr::Result<()> {
        all.copy_from_slice(mine);
        Ok(())
    }
    fn exchange(&mut self, round: Round<'_>, h: &mut dyn RoundHandler) -> copr::Result<()> {
        assert!(round.sends.is_empty() && round.recvs.is_empty());
        round.checked.copy_from_slice(round.check);
        h.verdict(round.checked)?;
        h.overlap();
        Ok(())
    }
}

fn case<T: Element>(c: &mut Criterion, name: &str, x: T) {
    // About BYTES, rounded down to a multiple of 100 (no power-of-two strides).
    let n = ((BYTES / std::mem::size_of::<T>()) as f64).sqrt() as usize / 100 * 100;
    let layout = |b: usize| -> Layout {
        BlockCyclic::new(BlockCyclicSpec::new(n, n, b, b, 1, 1))
            .expect("valid layout")
            .into()
    };
    let mut group = c.benchmark_group("local reshuffle");
    group.throughput(Throughput::Bytes((n * n * std::mem::size_of::<T>()) as u64));
    group.sample_size(20);
    let mut t = Solo;
    let b = vec![x; n * n];
    let mut a = vec![x; n * n];
    for op in [Op::Identity, Op::Transpose] {
        let tr = Transform::new(layout(32), layout(128), op).with_relabeling(Relabeling::Off);
        let mut plan = ReshufflePlan::new(&mut t, vec![tr]).expect("plan");
        let id = BenchmarkId::new(format!("{op:?}"), format!("{name}, n = {n}"));
        group.bench_function(id, |bench| {
            bench.iter(|| {
                plan.execute(&mut t, &mut [Job::copy(&b, &mut a)])
                    .expect("execute")
            })
        });
    }
    group.finish();
}

fn per_call(c: &mut Criterion) {
    let n = 256;
    let layout = |b: usize| -> Layout {
        BlockCyclic::new(BlockCyclicSpec::new(n, n, b, b, 1, 1))
            .expect("valid layout")
            .into()
    };
    let mut group = c.benchmark_group("per call");
    let mut t = Solo;
    let b = vec![0.5f64; n * n];
    let mut a = vec![0.0f64; n * n];
    let tr =
        Transform::new(layout(32), layout(128), Op::Transpose).with_relabeling(Relabeling::Off);
    let batch = vec![tr];
    let mut plan = ReshufflePlan::new(&mut t, batch.clone()).expect("plan");
    group.bench_function("kept plan", |bench| {
        bench.iter(|| {
            plan.execute(&mut t, &mut [Job::copy(&b, &mut a)])
                .expect("execute")
        })
    });
    let mut cache = PlanCache::new(4, 1 << 30);
    group.bench_function("plan cache hit", |bench| {
        bench.iter(|| {
            cache
                .execute(&mut t, &batch, &mut [Job::copy(&b, &mut a)])
                .expect("execute");
        })
    });
    group.bench_function("planned in the call", |bench| {
        bench.iter(|| {
            ReshufflePlan::plan_and_execute(&mut t, batch.clone(), &mut [Job::copy(&b, &mut a)])
                .expect("plan and execute")
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    per_call(c);
    case(c, "f32", 0.5f32);
    case(c, "f64", 0.5f64);
    case(c, "Complex32", Complex32::new(0.5, 1.0));
    case(c, "Complex64", Complex64::new(0.5, 1.0));
}

criterion_group!(benches, bench);
criterion_main!(benches);
