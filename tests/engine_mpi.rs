//! The reshuffle engine over MPI: the same cases as `tests/engine.rs` (random layouts of
//! both kinds, both block orders, subsets, submatrices, all element types and ops, α,
//! β = 0 with NaN-filled A, batches, relabeling on and off, plan reuse, the collective
//! error checks), every rank checking its part of A element by element.
//!
//! A test program without the libtest harness (feature `mpi`): `cargo test --features
//! mpi --test engine_mpi` runs it as a single rank; `scripts/mpi-tests.sh` runs the
//! binary under `mpirun -n 1, 2, 3, 4, 7`. Exits non-zero on every rank if any rank
//! found a mismatch.

use copr_testkit::layouts as common;
mod engine_cases;

use copr::engine::{Relabeling, Streaming, Transform};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Op, Order};
use copr::transport::{MpiTransport, SingleCopy, Transport};
use engine_cases::{
    cache_cases, error_cases, joint_cases, joint_keep_cases, large_case, large_grid,
    long_runs_case, one_call_error_cases, run_batch, run_batch_stats, run_batch_with, run_random,
    scalapack_cases, straight_case, PairCase,
};
use mpi::topology::Communicator;
use mpi::Threading;
use num_complex::{Complex32, Complex64};

/// The large cases (one per op, relabeled, two executions each) and the large batch on
/// a transport variant.
fn transport_variant<T: engine_cases::TestElem>(
    t: &mut MpiTransport,
    ops: &[Op],
    batch: &[engine_cases::PairCase],
    variant: &str,
) -> Vec<Result<(), String>> {
    let p = t.size();
    let mut out: Vec<Result<(), String>> = ops
        .iter()
        .map(|&op| {
            let c = large_case(p, 301, 257, op, true);
            run_batch::<T>(t, &c, 2, &format!("large {op:?}, {variant}"))
        })
        .collect();
    out.push(run_batch::<Complex64>(
        t,
        batch,
        2,
        &format!("large batch, {variant}"),
    ));
    out
}

/// Messages sent and received in place (MPI derived datatypes straight from B and into
/// A) where they can be, and packed where they cannot, with exact results either way:
/// a plain copy (α = 1, β = 0) goes in place both ways; with α ≠ 1 only the sends do
/// (the receiver scales); a transpose, packed already transposed, is received in
/// place; `always_pack` turns it all off. Where the counts depend on the pieces (a
/// transpose's sends, which one-element-wide pieces may send in place; a copy between
/// different local orders), only the results are checked.
fn in_place_cases(world: &mpi::topology::SimpleCommunicator) -> Result<(), String> {
    let p = world.size() as usize;
    let case = |op: Op, order: copr::layout::Order, alpha: u8| {
        let orders = [copr::layout::Order::ColMajor, order];
        straight_case(p, op, [301, 257], [[8, 8], [13, 11]], orders, None, alpha)
    };
    use copr::layout::Order::{ColMajor, RowMajor};
    // (case, tag, all packages sent in place?, all received in place?) on a
    // messages-only transport; `None`: not checked.
    let expect = [
        (
            case(Op::Identity, ColMajor, 1),
            "plain copy",
            Some(true),
            Some(true),
        ),
        (
            case(Op::Identity, ColMajor, 4),
            "scaled copy",
            Some(true),
            Some(false),
        ),
        (
            case(Op::Identity, RowMajor, 1),
            "copy into row-major",
            Some(true),
            None,
        ),
        (
            case(Op::Transpose, ColMajor, 1),
            "transpose",
            None,
            Some(true),
        ),
        (
            case(Op::Transpose, RowMajor, 1),
            "transpose into row-major",
            None,
            Some(true),
        ),
    ];
    let mut failure = None;
    for always_pack in [false, true] {
        let mut m = MpiTransport::new(world.duplicate()).messages_only();
        if always_pack {
            m = m.always_pack();
        }
        for (c, what, sends, recvs) in &expect {
            let tag = format!("in place: {what}, always_pack {always_pack}");
            let (sent, received, st) = run_batch_stats::<f64>(&mut m, c, 1, &tag)?;
            let want = |yes: Option<bool>, n: usize, got: usize| match yes {
                _ if always_pack => 0,
                Some(true) => n,
                Some(false) => 0,
                None => got,
            };
            let ws = want(*sends, sent, st.sent_in_place);
            let wr = want(*recvs, received, st.received_in_place);
            if st.sent_in_place != ws || st.received_in_place != wr {
                failure.get_or_insert(format!(
                    "{tag}: rank {}: {} of {sent} packages sent and {} of {received} received in place, expected {ws} and {wr}",
                    world.rank(),
                    st.sent_in_place,
                    st.received_in_place,
                ));
            }
        }
    }
    failure.map_or(Ok(()), Err)
}

/// Single-copy reads between ranks of a node (`SingleCopy::Always`): every op, α and
/// β (the repetitions of a plan vary α, so plain copies read straight into A and
/// scaled ones through the receive buffer), relabeling on and off, batches; on one
/// node, on emulated nodes of two ranks (single copy within a pair, messages between
/// pairs, in the same rounds), and with rank 0 refusing single-copy reads
/// (`SingleCopy::Never` there, as a rank whose probe failed: its packages come
/// through the window, the others' still by single copy). Results are checked element
/// by element; where the kernel allows the reads, the paths taken are checked too.
fn single_copy_cases(world: &mpi::topology::SimpleCommunicator) -> Vec<Result<(), String>> {
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let mut out = Vec::new();
    let mut batch = large_case(p, 200, 120, Op::Identity, false);
    batch.extend(large_case(p, 120, 200, Op::Transpose, true));
    batch.extend(large_case(p, 150, 150, Op::ConjTranspose, false));
    use copr::layout::Order::{ColMajor, RowMajor};
    let blocks = [[32, 32], [48, 40]];
    // A plain copy whose node-local packages all exceed the window's 16 KiB minimum on
    // up to 8 ranks, with α = 1 (read into A) and α ≠ 1 (read into the buffer).
    let plain = straight_case(p, Op::Identity, [601, 517], blocks, [ColMajor; 2], None, 1);
    let scaled = straight_case(p, Op::Identity, [601, 517], blocks, [ColMajor; 2], None, 4);
    let rows = straight_case(p, Op::Identity, [601, 517], blocks, [RowMajor; 2], None, 1);
    let variants = [
        "single copy",
        "single copy, nodes of 2 ranks",
        "single copy, rank 0 refuses",
    ];
    let make = |v: usize| match v {
        0 => MpiTransport::new(world.duplicate()).with_single_copy(SingleCopy::Always),
        1 => MpiTransport::with_groups(world.duplicate(), (me / 2) as u32)
            .with_single_copy(SingleCopy::Always),
        _ => {
            let when = if me == 0 {
                SingleCopy::Never
            } else {
                SingleCopy::Always
            };
            MpiTransport::new(world.duplicate()).with_single_copy(when)
        }
    };
    for (v, variant) in variants.into_iter().enumerate() {
        let mut t = make(v);
        for seed in 0..24u64 {
            let ty = (seed % 6) as usize;
            let relabel = seed % 4 < 2;
            let n_pairs = 1 + (seed / 6 % 3) as usize;
            out.push(
                run_random(
                    &mut t,
                    ty,
                    0x51c0_0000 + seed * 31 + p as u64,
                    n_pairs,
                    relabel,
                    2,
                )
                .map_err(|e| format!("{variant}: {e}")),
            );
        }
        out.extend(transport_variant::<f64>(
            &mut t,
            &[Op::Identity, Op::Transpose, Op::ConjTranspose],
            &batch,
            variant,
        ));
        out.extend(transport_variant::<Complex32>(
            &mut t,
            &[Op::Identity, Op::ConjTranspose],
            &batch,
            variant,
        ));
        for (c, what) in [(&plain, "plain"), (&scaled, "scaled"), (&rows, "row-major")] {
            let tag = format!("{variant}: {what} copy");
            out.push(run_batch::<f64>(&mut t, c, 3, &tag));
            out.push(run_batch::<Complex64>(&mut t, c, 1, &tag));
            let always = Streaming::Always;
            out.push(run_batch_with::<f64>(&mut t, c, 1, &tag, always).map(|_| ()));
        }
        // The paths: with the reads allowed, a plain copy lands in A by single copy
        // (rank 0, refusing, gets its packages through the window and sends its own
        // there); within one node every rank then sends some bytes by single copy.
        let before = t.single_copy_bytes();
        let r = run_batch_stats::<f64>(&mut t, &plain, 1, variant);
        // Collective on every rank, whatever this rank found.
        let available = t.single_copy_available();
        let mut flags = vec![0u64; p];
        t.all_gather(&[u64::from(available)], &mut flags)
            .expect("gathering the probe results");
        let Ok((_, received, st)) = r else {
            out.push(r.map(|_| ()));
            continue;
        };
        let everywhere = flags.iter().all(|&f| f == 1);
        let refuses = variant.contains("refuses") && me == 0;
        let grouped = variant.contains("nodes of 2");
        let peers_on_node = if grouped {
            usize::from(me ^ 1 < p)
        } else {
            p - 1
        };
        let sent = t.single_copy_bytes() - before;
        let read = st.received_in_place;
        let ok = if !everywhere || peers_on_node == 0 {
            true
        } else if refuses {
            sent == 0 && read == 0
        } else if variant.contains("refuses") && p == 2 {
            // The only peer refuses: everything goes through the window.
            sent == 0 && read == 0
        } else {
            sent > 0 && read > 0 && read <= received
        };
        if !ok {
            out.push(Err(format!(
                "{variant}: rank {me} of {p}: {sent} bytes read from it by single copy, {read} of {received} packages read into A (probe: {flags:?})"
            )));
        }
        if t.reads_single_copy() == refuses && available {
            out.push(Err(format!(
                "{variant}: rank {me}: reads_single_copy() is {} under its setting",
                t.reads_single_copy()
            )));
        }
    }
    // Auto and Never: whatever Auto chose on this machine, the same results; Never
    // sends nothing by single copy.
    for when in [SingleCopy::Auto, SingleCopy::Never] {
        let mut t = MpiTransport::new(world.duplicate()).with_single_copy(when);
        let tag = format!("{when:?}");
        out.push(run_batch::<f64>(&mut t, &plain, 2, &tag));
        out.push(run_batch::<f64>(&mut t, &batch, 1, &tag));
        if when == SingleCopy::Never && (t.single_copy_bytes() != 0 || t.reads_single_copy()) {
            out.push(Err(format!(
                "Never: rank {me}: {} bytes by single copy",
                t.single_copy_bytes()
            )));
        }
    }
    out
}

fn main() {
    let (universe, _) =
        mpi::initialize_with_threading(Threading::Funneled).expect("MPI initialises once");
    let world = universe.world();
    let mut t = MpiTransport::new(world.duplicate());
    let (me, p) = (t.rank(), t.size());
    let cases: u64 = std::env::var("COPR_MPI_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(240);
    let mut failures: Vec<String> = Vec::new();
    let mut ran = 0usize;
    let mut record = |r: Result<(), String>| {
        ran += 1;
        if let Err(e) = r {
            failures.push(e);
        }
    };

    // Random batches: every element type, 1–3 transforms, relabeling on and off,
    // each plan executed twice.
    for seed in 0..cases {
        let ty = (seed % 6) as usize;
        let n_pairs = 1 + (seed / 6 % 3) as usize;
        let relabel = seed / 18 % 2 == 0;
        record(run_random(
            &mut t,
            ty,
            0x5eed_0000 + seed * 7919 + p as u64,
            n_pairs,
            relabel,
            2,
        ));
    }
    // Larger block-cyclic cases through the parallel and tiled paths.
    for (op, relabel) in [
        (Op::Identity, false),
        (Op::Transpose, true),
        (Op::ConjTranspose, true),
    ] {
        let c = large_case(p, 301, 257, op, relabel);
        record(run_batch::<Complex64>(&mut t, &c, 2, "large c64"));
        record(run_batch::<Complex32>(&mut t, &c, 1, "large c32"));
        record(run_batch::<f64>(&mut t, &c, 2, "large f64"));
        record(run_batch::<i32>(&mut t, &c, 1, "large i32"));
    }
    // Plain copies with streaming stores forced on, through the window and as
    // messages: packing, local copies and unpacking with non-temporal stores.
    let mut m = MpiTransport::new(world.duplicate()).messages_only();
    for op in [Op::Identity, Op::Transpose] {
        let c = long_runs_case(p, op, Order::ColMajor);
        for tr in [&mut t, &mut m] {
            let tag = format!("streamed {op:?}");
            let always = Streaming::Always;
            record(run_batch_with::<f64>(&mut *tr, &c, 2, &tag, always).map(|_| ()));
            record(run_batch_with::<Complex64>(&mut *tr, &c, 1, &tag, always).map(|_| ()));
        }
    }
    drop(m);
    // A batch of the three large cases in one round.
    let mut batch = large_case(p, 200, 120, Op::Identity, false);
    batch.extend(large_case(p, 120, 200, Op::Transpose, true));
    batch.extend(large_case(p, 150, 150, Op::ConjTranspose, false));
    record(run_batch::<Complex64>(&mut t, &batch, 3, "large batch"));
    // The large packages above went through the node-shared window from their second
    // execution on (the first one sized it): check that it exists.
    if t.node_ranks() > 1 && t.window_bytes() == 0 {
        record(Err(format!(
            "rank {me}: {} ranks share the node but no shared window was set up",
            t.node_ranks()
        )));
    }
    // A released window comes back, as large as needed, with correct results (a case
    // whose packages stay above the window's 16 KiB minimum on 8 ranks too).
    t.release_window();
    let c = large_case(p, 601, 517, Op::Transpose, true);
    record(run_batch::<f64>(
        &mut t,
        &c,
        2,
        "large f64 after releasing the window",
    ));
    if t.node_ranks() > 1 && t.window_bytes() == 0 {
        record(Err(format!(
            "rank {me}: the window did not come back after release_window"
        )));
    }
    // A fresh transport puts node-local packages through the window from the first
    // round on: first only rank 0 sends (only its segment grows), then every rank
    // sends and rank 0's packages fit its segment, so it packs them before the others
    // grow the window and carries them over into the grown one.
    {
        let n = 1024;
        let (pr, pc) = large_grid(p);
        let from_rank_0 = PairCase {
            transform: Transform::new(
                BlockCyclic::new(BlockCyclicSpec::new(n, n, 32, 32, 1, 1))
                    .unwrap()
                    .into(),
                BlockCyclic::new(BlockCyclicSpec::new(n, n, 13, 11, pr, pc))
                    .unwrap()
                    .into(),
                Op::Identity,
            )
            .with_relabeling(Relabeling::Off),
            alpha: 1,
            beta: 0,
        };
        let rounds = [
            ("growth: rank 0 sends", vec![from_rank_0]),
            ("growth: all send", large_case(p, n, n, Op::Identity, false)),
        ];
        let mut fresh = MpiTransport::new(world.duplicate());
        let mut control = MpiTransport::new(world.duplicate()).messages_only();
        for (tag, c) in &rounds {
            record(run_batch::<f64>(&mut fresh, c, 1, tag));
            record(run_batch::<f64>(
                &mut control,
                c,
                1,
                &format!("{tag}, messages only"),
            ));
        }
        if fresh.node_ranks() > 1 && fresh.node_message_bytes() != 0 {
            record(Err(format!(
                "rank {me}: {} bytes of node-local packages went as messages, not through the window",
                fresh.node_message_bytes()
            )));
        }
        if control.node_ranks() > 1 && control.node_message_bytes() == 0 {
            record(Err(format!(
                "rank {me}: messages only, yet no node-local bytes were counted"
            )));
        }
    }
    // The same large cases with every package as an MPI message.
    let mut m = MpiTransport::new(world.duplicate()).messages_only();
    for r in transport_variant::<f64>(
        &mut m,
        &[Op::Identity, Op::Transpose],
        &batch,
        "messages only",
    ) {
        record(r);
    }
    drop(m);
    record(in_place_cases(&world));
    for r in single_copy_cases(&world) {
        record(r);
    }
    // Emulated nodes of two ranks each: within a pair packages go through the window,
    // between pairs as messages, in the same rounds.
    let mut g = MpiTransport::with_groups(world.duplicate(), (me / 2) as u32);
    for r in transport_variant::<f64>(
        &mut g,
        &[Op::Identity, Op::Transpose],
        &batch,
        "nodes of 2 ranks",
    ) {
        record(r);
    }
    // Some pair must have had packages large enough for its window.
    let mut windows = vec![0u64; p];
    g.all_gather(&[g.window_bytes() as u64], &mut windows)
        .expect("gathering the window sizes");
    if p > 1 && windows.iter().all(|&w| w == 0) {
        record(Err("no window within any emulated node of two ranks".into()));
    }
    drop(g);
    // Packages beyond the message limit travel in parts (4096 bytes here), with and
    // without the shared window (which carries node-local packages whole).
    for shared in [false, true] {
        let base = MpiTransport::new(world.duplicate()).with_message_limit(4096);
        let mut m = if shared { base } else { base.messages_only() };
        let ops = [Op::Identity, Op::ConjTranspose];
        for r in transport_variant::<Complex64>(&mut m, &ops, &batch, "4 KiB messages") {
            record(r);
        }
    }
    // Ranks that disagree on the message limit: the same error everywhere, nothing sent.
    if p > 1 {
        let limit = if me == p - 1 { 8192 } else { 4096 };
        let mut m = MpiTransport::new(world.duplicate())
            .messages_only()
            .with_message_limit(limit);
        let c = large_case(p, 64, 64, Op::Identity, false);
        let r = run_batch::<f64>(&mut m, &c, 1, "mismatched message limits");
        let want = format!("rank {} limits MPI messages to 8192 bytes", p - 1);
        if !r.as_ref().is_err_and(|e| e.contains(&want)) {
            record(Err(format!(
                "mismatched message limits: rank {me} got {r:?}"
            )));
        }
    }
    // The collective safety checks.
    record(error_cases(&mut t));
    record(scalapack_cases(&mut t));
    record(cache_cases(&mut t));
    record(one_call_error_cases(&mut t));
    record(joint_cases(&mut t, cases.min(60)));
    record(joint_keep_cases(&mut t));

    let mut all = vec![0u64; p];
    t.all_gather(&[failures.len() as u64], &mut all)
        .expect("gathering the failure counts");
    for f in failures.iter().take(5) {
        eprintln!("engine_mpi rank {me}/{p}: FAILED {f}");
    }
    let total: u64 = all.iter().sum();
    if me == 0 {
        println!("engine_mpi: {p} ranks, {ran} cases per rank, {total} failures");
    }
    drop(t);
    drop(universe);
    if total > 0 {
        std::process::exit(1);
    }
}
