//! The reshuffle engine over MPI with B in node-shared memory
//! ([`MpiTransport::alloc_shared`]): receivers on the sender's node read their packages
//! straight from the sender's B into A. Every op, α and β, every element type, batches,
//! relabeling on and off, plans executed several times with B rewritten in between;
//! on one node, on nodes of two ranks (reads within a pair, messages between pairs),
//! with B shared on the even ranks only, with small packages (every node-local package
//! read from B), and with the reads turned off. Every rank checks its part of A element
//! by element against the serial reference, and the paths taken are checked too.
//!
//! A test program without the libtest harness (feature `mpi`): `scripts/mpi-tests.sh`
//! runs it under `mpirun -n 3, 4` and with `COPR_EMULATE_NODE_SIZE=2` (consecutive
//! pairs of ranks count as one node). Exits non-zero on every rank if any rank found a
//! mismatch.

use copr_testkit::layouts as common;
mod engine_cases;

use copr::engine::{ExecStats, Job, Relabeling, ReshufflePlan, Streaming, Transform};
use copr::layout::{BlockCyclic, Layout, Op, Order};
use copr::transport::{MpiTransport, SharedBuffer, Transport};
use engine_cases::{
    large_case, local_source, local_target, mix, random_batch, rep_scalars, straight_case,
    verify_targets, PairCase, TestElem,
};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;
use mpi::Threading;
use num_complex::{Complex32, Complex64};

/// Plans `cases` once and executes it `reps` times, B of every transform in a
/// [`SharedBuffer`] when `shared` (else in a vector), rewritten with fresh values
/// before every execution; checks this rank's A after each. Returns the last
/// execution's statistics.
fn run_shared<T: TestElem + bytemuck::Pod>(
    t: &mut MpiTransport,
    cases: &[PairCase],
    reps: usize,
    tag: &str,
    shared: bool,
    streaming: Streaming,
) -> Result<ExecStats, String> {
    let me = t.rank();
    let batch: Vec<Transform> = cases.iter().map(|c| c.transform.clone()).collect();
    let mut plan = ReshufflePlan::new(t, batch).map_err(|e| format!("{tag}: plan: {e}"))?;
    plan.set_streaming(streaming);
    // Collective over the node: every rank allocates, an unshared one nothing.
    let mut bufs: Vec<SharedBuffer<T>> = Vec::with_capacity(cases.len());
    for k in 0..cases.len() {
        let len = if shared { plan.local_lens(k).0 } else { 0 };
        bufs.push(
            t.alloc_shared::<T>(len)
                .map_err(|e| format!("{tag}: alloc_shared: {e}"))?,
        );
    }
    let mut failure: Option<String> = None;
    for rep in 0..reps {
        let salt = |k: usize, w: u64| mix((rep as u64) << 40 ^ (k as u64) << 8 ^ w ^ 0x5ba2);
        let scal: Vec<(T, T)> = rep_scalars(cases, rep, salt);
        let mut plain: Vec<Vec<T>> = Vec::with_capacity(cases.len());
        for (k, buf) in bufs.iter_mut().enumerate() {
            let b = local_source::<T>(plan.source(k), me, salt(k, 3));
            if shared {
                buf.copy_from_slice(&b);
                plain.push(Vec::new());
            } else {
                plain.push(b);
            }
        }
        let mut as_: Vec<Vec<T>> = (0..cases.len())
            .map(|k| local_target::<T>(plan.target(k), me, salt(k, 4), scal[k].1 == T::zero()))
            .collect();
        let mut jobs: Vec<Job<'_, T>> = bufs
            .iter()
            .zip(&plain)
            .zip(as_.iter_mut())
            .zip(&scal)
            .map(|(((sb, pb), a), &(alpha, beta))| Job {
                alpha,
                beta,
                source: if shared { &sb[..] } else { &pb[..] },
                target: a,
            })
            .collect();
        plan.execute(t, &mut jobs)
            .map_err(|e| format!("{tag}: rep {rep}: execute: {e}"))?;
        drop(jobs);
        // The plan keeps the moves mapped onto each sender's B: only its first
        // execution maps them.
        let st = plan.last_stats();
        let mapped = if rep == 0 { st.read_from_source } else { 0 };
        if st.sources_mapped != mapped {
            failure.get_or_insert(format!(
                "{tag}: rep {rep}: {} packages mapped onto their sender's B, expected {mapped} ({} read from B)",
                st.sources_mapped, st.read_from_source
            ));
        }
        if let Err(e) = verify_targets(&plan, me, &as_, &scal, salt, &format!("{tag}: rep {rep}")) {
            failure.get_or_insert(e);
        }
    }
    drop(bufs);
    failure.map_or(Ok(plan.last_stats()), Err)
}

/// One job per transform: B from its node-shared buffer, A from `targets`.
fn shared_jobs<'a>(
    bufs: &'a [SharedBuffer<f64>],
    targets: &'a mut [Vec<f64>],
    scal: &[(f64, f64)],
) -> Vec<Job<'a, f64>> {
    bufs.iter()
        .zip(targets.iter_mut())
        .zip(scal)
        .map(|((b, a), &(alpha, beta))| Job {
            alpha,
            beta,
            source: &b[..],
            target: a,
        })
        .collect()
}

/// Plans `cases` in the call ([`ReshufflePlan::plan_and_execute`]) with B in a
/// [`SharedBuffer`] on every rank, then executes the plan it returned three more times
/// with the same B and the same A to start from: A must come out the same element by
/// element (bit for bit) every time and match the serial reference, and only the call
/// that planned maps moves onto the senders' B. Returns the packages read from B.
fn run_in_call(t: &mut MpiTransport, cases: &[PairCase], tag: &str) -> Result<usize, String> {
    let me = t.rank();
    let batch: Vec<Transform> = cases
        .iter()
        .map(|c| c.transform.clone().with_relabeling(Relabeling::Off))
        .collect();
    let salt = |k: usize, w: u64| mix((k as u64) << 8 ^ w ^ 0x1ca1);
    let scal: Vec<(f64, f64)> = rep_scalars(cases, 0, salt);
    let mut bufs: Vec<SharedBuffer<f64>> = Vec::with_capacity(cases.len());
    for (k, tr) in batch.iter().enumerate() {
        let b = local_source::<f64>(&tr.source, me, salt(k, 3));
        let mut buf = t
            .alloc_shared::<f64>(b.len())
            .map_err(|e| format!("{tag}: alloc_shared: {e}"))?;
        buf.copy_from_slice(&b);
        bufs.push(buf);
    }
    let fresh = |k: usize| local_target::<f64>(&batch[k].target, me, salt(k, 4), false);
    let mut first: Vec<Vec<f64>> = (0..cases.len()).map(fresh).collect();
    let mut jobs = shared_jobs(&bufs, &mut first, &scal);
    let mut plan = ReshufflePlan::plan_and_execute(t, batch.clone(), &mut jobs)
        .map_err(|e| format!("{tag}: plan_and_execute: {e}"))?;
    drop(jobs);
    let st = plan.last_stats();
    let mut failure = (st.sources_mapped != st.read_from_source).then(|| {
        format!(
            "{tag}: planned in the call: {} packages mapped onto B, {} read from B",
            st.sources_mapped, st.read_from_source
        )
    });
    let reads = st.read_from_source;
    if let Err(e) = verify_targets(
        &plan,
        me,
        &first,
        &scal,
        salt,
        &format!("{tag}: in the call"),
    ) {
        failure.get_or_insert(e);
    }
    for again in 1..4 {
        let mut next: Vec<Vec<f64>> = (0..cases.len()).map(fresh).collect();
        let mut jobs = shared_jobs(&bufs, &mut next, &scal);
        plan.execute(t, &mut jobs)
            .map_err(|e| format!("{tag}: execution {again}: {e}"))?;
        drop(jobs);
        let st = plan.last_stats();
        if st.sources_mapped != 0 || st.read_from_source != reads {
            failure.get_or_insert(format!(
                "{tag}: execution {again} of the kept plan: {} packages mapped onto B (expected 0), {} read from B (expected {reads})",
                st.sources_mapped, st.read_from_source
            ));
        }
        let same = first.iter().zip(&next).all(|(x, y)| {
            x.len() == y.len() && x.iter().zip(y).all(|(u, v)| u.to_bits() == v.to_bits())
        });
        if !same {
            failure.get_or_insert(format!(
                "{tag}: execution {again} of the kept plan differs from the call that planned it"
            ));
        }
    }
    drop(bufs);
    failure.map_or(Ok(reads), Err)
}

/// A random batch of element type `ty` (0..6).
fn run_random(
    t: &mut MpiTransport,
    ty: usize,
    seed: u64,
    n_pairs: usize,
    relabel: bool,
    shared: bool,
) -> Result<ExecStats, String> {
    let cases = random_batch(seed, t.size(), n_pairs, relabel);
    let tag = format!(
        "seed {seed} type {ty} pairs {n_pairs} relabel {relabel} on {} ranks",
        t.size()
    );
    let s = Streaming::Auto;
    match ty {
        0 => run_shared::<f32>(t, &cases, 2, &tag, shared, s),
        1 => run_shared::<f64>(t, &cases, 2, &tag, shared, s),
        2 => run_shared::<Complex32>(t, &cases, 2, &tag, shared, s),
        3 => run_shared::<Complex64>(t, &cases, 2, &tag, shared, s),
        4 => run_shared::<i32>(t, &cases, 2, &tag, shared, s),
        _ => run_shared::<i64>(t, &cases, 2, &tag, shared, s),
    }
}

/// One transport setting of the test.
struct Variant {
    name: &'static str,
    /// Ranks per node group (`None`: the physical node).
    group: Option<usize>,
    /// Node-local packages from this size on use the window (or shared B).
    window_min: Option<usize>,
    /// Whether this rank's B is shared.
    shared: fn(usize) -> bool,
    /// Whether receivers may read from shared B.
    reads: bool,
}

fn transport(world: &SimpleCommunicator, v: &Variant, emulated: Option<usize>) -> MpiTransport {
    let me = world.rank() as usize;
    let group = v.group.or(emulated);
    let mut t = match group {
        Some(g) => MpiTransport::with_groups(world.duplicate(), (me / g) as u32),
        None => MpiTransport::new(world.duplicate()),
    }
    .with_shared_sources(v.reads);
    if let Some(m) = v.window_min {
        t = t.with_window_min(m);
    }
    t
}

fn main() {
    let (universe, _) =
        mpi::initialize_with_threading(Threading::Funneled).expect("MPI initialises once");
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    // COPR_EMULATE_NODE_SIZE=k: consecutive groups of k ranks count as one node.
    let emulated: Option<usize> = std::env::var("COPR_EMULATE_NODE_SIZE")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .ok()
                .filter(|&k| k >= 1)
                .unwrap_or_else(|| panic!("COPR_EMULATE_NODE_SIZE={s}: expected a count >= 1"))
        });
    let mut failures: Vec<String> = Vec::new();
    let mut ran = 0usize;
    let mut record = |r: Result<(), String>| {
        ran += 1;
        if let Err(e) = r {
            failures.push(e);
        }
    };
    let variants = [
        Variant {
            name: "shared B",
            group: None,
            window_min: None,
            shared: |_| true,
            reads: true,
        },
        Variant {
            name: "shared B, small packages",
            group: None,
            window_min: Some(0),
            shared: |_| true,
            reads: true,
        },
        Variant {
            name: "shared B on even ranks",
            group: None,
            window_min: Some(0),
            shared: |r| r % 2 == 0,
            reads: true,
        },
        Variant {
            name: "shared B, nodes of 2 ranks",
            group: Some(2),
            window_min: Some(0),
            shared: |_| true,
            reads: true,
        },
        Variant {
            name: "shared B, reads off",
            group: None,
            window_min: None,
            shared: |_| true,
            reads: false,
        },
    ];
    let mut batch = large_case(p, 200, 120, Op::Identity, false);
    batch.extend(large_case(p, 120, 200, Op::Transpose, true));
    batch.extend(large_case(p, 150, 150, Op::ConjTranspose, false));
    let blocks = [[32, 32], [48, 40]];
    let plain = straight_case(
        p,
        Op::Identity,
        [601, 517],
        blocks,
        [Order::ColMajor; 2],
        None,
        1,
    );
    let transpose = straight_case(
        p,
        Op::Transpose,
        [601, 517],
        blocks,
        [Order::ColMajor, Order::RowMajor],
        None,
        1,
    );
    for v in &variants {
        let mut t = transport(&world, v, emulated);
        let shared = (v.shared)(me);
        let mut reads = 0usize;
        let mut note = |r: Result<ExecStats, String>, reads: &mut usize| {
            record(r.map(|st| *reads += st.read_from_source));
        };
        for seed in 0..18u64 {
            let ty = (seed % 6) as usize;
            let n_pairs = 1 + (seed / 6 % 3) as usize;
            let relabel = seed % 2 == 0;
            let r = run_random(
                &mut t,
                ty,
                0x5a4e_0000 + seed * 131 + p as u64,
                n_pairs,
                relabel,
                shared,
            );
            note(r.map_err(|e| format!("{}: {e}", v.name)), &mut reads);
        }
        for op in [Op::Identity, Op::Transpose, Op::ConjTranspose] {
            let c = large_case(p, 301, 257, op, true);
            let tag = format!("{}: large {op:?}", v.name);
            let s = Streaming::Auto;
            note(
                run_shared::<f64>(&mut t, &c, 2, &tag, shared, s),
                &mut reads,
            );
            note(
                run_shared::<Complex64>(&mut t, &c, 1, &tag, shared, s),
                &mut reads,
            );
        }
        let tag = format!("{}: large batch", v.name);
        let s = Streaming::Auto;
        note(
            run_shared::<Complex32>(&mut t, &batch, 2, &tag, shared, s),
            &mut reads,
        );
        for (c, what) in [(&plain, "plain copy"), (&transpose, "transpose")] {
            for s in [Streaming::Auto, Streaming::Always] {
                let tag = format!("{}: {what}, {s:?}", v.name);
                note(run_shared::<f64>(&mut t, c, 2, &tag, shared, s), &mut reads);
                note(run_shared::<i32>(&mut t, c, 1, &tag, shared, s), &mut reads);
            }
        }
        // B's leading dimension differs between ranks (each gives its own, as
        // ScaLAPACK's descriptors do): reads only between ranks that agree on it
        let mut own_lld = plain.clone();
        if let Layout::BlockCyclic(bc) = &own_lld[0].transform.source {
            let mut spec = bc.spec().clone();
            spec.lld = Some(601 + (me % 2) * 5);
            own_lld[0].transform.source = BlockCyclic::new(spec).expect("a valid lld").into();
        }
        let tag = format!("{}: plain copy, lld by rank", v.name);
        let s = Streaming::Auto;
        note(
            run_shared::<f64>(&mut t, &own_lld, 2, &tag, shared, s),
            &mut reads,
        );
        if v.reads && (0..p).all(|r| (v.shared)(r)) {
            // every rank's B shared: planned in the call, then the kept plan again
            for (c, what) in [(&plain, "plain copy"), (&transpose, "transpose")] {
                let tag = format!("{}: {what} planned in the call", v.name);
                note(
                    run_in_call(&mut t, c, &tag).map(|r| ExecStats {
                        read_from_source: r,
                        ..ExecStats::default()
                    }),
                    &mut reads,
                );
            }
        }
        // The paths: reads happen where they may, and only there.
        let group = v.group.or(emulated).unwrap_or(p);
        let node_peers = (me / group * group..((me / group + 1) * group).min(p))
            .filter(|&r| r != me)
            .collect::<Vec<_>>();
        let some_peer_shares = node_peers.iter().any(|&r| (v.shared)(r));
        let mut words = vec![0u64; 2 * p];
        world.all_gather_into(&[reads as u64, t.shared_source_bytes()][..], &mut words[..]);
        let read_by_peers = t.shared_source_bytes();
        let ok = if !v.reads || !shared || node_peers.is_empty() {
            // Nobody reads this rank's B (nothing shared, or reads off, or alone).
            read_by_peers == 0
        } else {
            read_by_peers > 0
        } && if !v.reads || !some_peer_shares {
            reads == 0
        } else {
            reads > 0
        };
        if !ok {
            record(Err(format!(
                "{}: rank {me} of {p}: read {reads} packages from peers' B, peers read {read_by_peers} bytes of its B (all ranks: {words:?})",
                v.name
            )));
        }
        drop(t);
    }

    let mut all = vec![0u64; p];
    world.all_gather_into(&(failures.len() as u64), &mut all[..]);
    for f in failures.iter().take(5) {
        eprintln!("engine_shared_mpi rank {me}/{p}: FAILED {f}");
    }
    let total: u64 = all.iter().sum();
    if me == 0 {
        println!("engine_shared_mpi: {p} ranks, {ran} cases per rank, {total} failures");
    }
    drop(universe);
    if total > 0 {
        std::process::exit(1);
    }
}
