//! MPI bench driver for the reshuffle engine: copr against ScaLAPACK's `pdgemr2d`
//! (redistribution) and `pdtran` (transpose) on the same data, plus a local memcpy of
//! the same bytes as the physical reference and a batch of 3 matrices against 3
//! single calls. The cases take turns (one repetition of each, then the next round), so
//! a change in machine load hits all of them alike.
//!
//! Double precision, N × N, 32 × 32 blocks → 128 × 128 blocks (`--blocks 32x32,128x128`) on the same grid
//! (2 × 2 on 4 ranks, 1 × 2 on 2 ranks, the squarest grid otherwise), BLACS row-major
//! grid numbering, column-major local storage. Every case runs once untimed (the
//! warm-up: first-touch page faults, copr's buffers and shared window) and is checked
//! there and on the last repetition element by element against the serial reference
//! (B(i, j) = i·N + j); it is timed `--reps` times (default 5) after the warm-up. A repetition's time is the slowest rank's, from
//! a barrier to the end of the call; min and median are printed as a Markdown table by
//! rank 0 with the median CPU busy share (CPU time of all ranks, all threads, over the
//! cores they share times the repetition's time; waiting ranks that poll count as
//! busy, and so do idle threads still spinning, which puts short cases above 100 %)
//! and the median minor page faults of all ranks together (first touches of memory),
//! then the warm-up's times and the peak resident memory, paired speed-ups (the
//! ratio of two cases within each repetition) and copr's time per phase.
//!
//! ```text
//! cargo bench --features mpi,scalapack --bench mpi_driver --no-run   # prints the path
//! mpirun --allow-run-as-root --oversubscribe --bind-to none -n 4 \
//!     target/release/deps/mpi_driver-<hash> --sizes 4000,10000 --reps 5
//! ```
//! Without feature `scalapack` only copr and memcpy are timed.

use std::time::Instant;

use copr::engine::{
    ExecStats, Job, PlanCache, PlanStats, Relabeling, ReshufflePlan, Streaming, Transform,
};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op};
use copr::transport::{MpiTransport, SingleCopy};
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Equivalence};
#[cfg(feature = "scalapack")]
use scalapack::Routine;

/// Command line: `--sizes 4000,10000 --reps 5 [--cases copy,transpose,...]
/// [--blocks 32x32,128x128]`.
struct Args {
    sizes: Vec<usize>,
    reps: usize,
    /// Source and target block sizes (rows, columns).
    blocks: [(usize, usize); 2],
    /// Keys of the cases to run (all when empty), see [`Case::key`].
    cases: Vec<String>,
}

fn args() -> Args {
    let mut a = Args {
        sizes: vec![4000, 10000],
        reps: 5,
        blocks: [(32, 32), (128, 128)],
        cases: Vec::new(),
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut k = 0;
    while k < v.len() {
        match v[k].as_str() {
            "--sizes" => {
                a.sizes = v[k + 1]
                    .split(',')
                    .map(|s| s.parse().expect("--sizes takes numbers"))
                    .collect();
                k += 2;
            }
            "--reps" => {
                a.reps = v[k + 1].parse().expect("--reps takes a number");
                k += 2;
            }
            "--cases" => {
                a.cases = v[k + 1].split(',').map(str::to_string).collect();
                k += 2;
            }
            "--blocks" => {
                let b: Vec<(usize, usize)> = v[k + 1]
                    .split(',')
                    .map(|s| {
                        let (r, c) = s.split_once('x').expect("--blocks takes MBxNB,MBxNB");
                        (
                            r.parse().expect("--blocks takes numbers"),
                            c.parse().expect("--blocks takes numbers"),
                        )
                    })
                    .collect();
                assert_eq!(b.len(), 2, "--blocks takes source and target: MBxNB,MBxNB");
                a.blocks = [b[0], b[1]];
                k += 2;
            }
            other => panic!(
                "unknown argument {other}; use --sizes N,N --reps R [--blocks MBxNB,MBxNB] \
                 [--cases memcpy,copy,transpose,transpose-relabel,copy-msg,transpose-msg,\
                 copy-msg-packed,transpose-msg-packed,copy-nostream,transpose-nostream,\
                 copy-msg-nostream,transpose-msg-nostream,copy-single,transpose-single,\
                 copy-window,transpose-window,copy-shared,transpose-shared,batch,single,\
                 copy-replan,transpose-replan,copy-shared-replan,transpose-shared-replan,\
                 copy-cached,transpose-cached,copy-replan-msg,transpose-replan-msg,gemr2d,tran]"
            ),
        }
    }
    assert!(a.reps >= 1, "--reps must be at least 1");
    a
}

/// B(i, j): exact in f64 for N ≤ 10^7.
fn value(n: usize, i: usize, j: usize) -> f64 {
    (i * n + j) as f64
}

/// The slowest rank's value.
fn max_over_ranks(world: &SimpleCommunicator, x: f64) -> f64 {
    let mut m = 0.0;
    world.all_reduce_into(&x, &mut m, SystemOperation::max());
    m
}

/// CPU time this process has used so far, all threads, in seconds.
fn cpu_seconds() -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    /// Linux's `CLOCK_PROCESS_CPUTIME_ID`.
    const PROCESS_CPUTIME: i32 = 2;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let r = unsafe { clock_gettime(PROCESS_CPUTIME, &mut t) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    t.sec as f64 + t.nsec as f64 * 1e-9
}

/// Minor page faults of this process so far (`getrusage`'s `ru_minflt`): first
/// touches of memory.
fn minor_faults() -> u64 {
    #[repr(C)]
    struct Rusage {
        /// `ru_utime`, `ru_stime` (two `timeval`s).
        times: [i64; 4],
        /// `ru_maxrss` … `ru_nivcsw`; `ru_minflt` is the fifth.
        counts: [i64; 14],
    }
    extern "C" {
        fn getrusage(who: i32, usage: *mut Rusage) -> i32;
    }
    let mut u = Rusage {
        times: [0; 4],
        counts: [0; 14],
    };
    // SAFETY: `u` has the layout of Linux's `struct rusage` on 64-bit targets;
    // RUSAGE_SELF = 0.
    let r = unsafe { getrusage(0, &mut u) };
    assert_eq!(r, 0, "getrusage failed");
    u.counts[4] as u64
}

/// This process's peak resident memory (`VmHWM`), in MiB (0 where unknown).
fn peak_resident_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Sum over ranks.
fn sum_over_ranks<T: Equivalence + Default>(world: &SimpleCommunicator, x: T) -> T {
    let mut s = T::default();
    world.all_reduce_into(&x, &mut s, SystemOperation::sum());
    s
}

/// Fills this rank's local buffer of `l` with B(i, j).
fn fill(l: &Layout, rank: usize, n: usize, buf: &mut [f64]) {
    for blk in l.local_blocks(rank) {
        for i in blk.rows.clone() {
            for j in blk.cols.clone() {
                buf[blk.index(i - blk.rows.start, j - blk.cols.start)] = value(n, i, j);
            }
        }
    }
}

/// Wrong elements of A in layout `l` against B (or Bᵀ).
fn wrong(l: &Layout, rank: usize, n: usize, a: &[f64], transposed: bool) -> u64 {
    let mut w = 0;
    for blk in l.local_blocks(rank) {
        for i in blk.rows.clone() {
            for j in blk.cols.clone() {
                let e = if transposed {
                    value(n, j, i)
                } else {
                    value(n, i, j)
                };
                w += u64::from(a[blk.index(i - blk.rows.start, j - blk.cols.start)] != e);
            }
        }
    }
    w
}

/// A table row: median over the repetitions of the slowest rank's planning phases.
fn plan_breakdown(
    world: &SimpleCommunicator,
    n: usize,
    case: Case,
    stats: &[PlanStats],
) -> Option<String> {
    if stats.is_empty() {
        return None;
    }
    let phase = |f: fn(&PlanStats) -> f64| {
        let v: Vec<f64> = stats.iter().map(|s| max_over_ranks(world, f(s))).collect();
        min_median(v).1 * 1e3
    };
    Some(format!(
        "| {n} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
        case.name(),
        phase(|s| s.check),
        phase(|s| s.relabel),
        phase(|s| s.enumerate),
        phase(|s| s.regions),
        phase(|s| s.packages),
        phase(|s| s.total),
    ))
}

/// The slowest rank's phase times of a plan's last execution.
fn breakdown(world: &SimpleCommunicator, case: String, s: ExecStats) -> (String, [f64; 6]) {
    let v = [s.check, s.pack, s.local, s.unpack, s.wait, s.total].map(|x| max_over_ranks(world, x));
    (case, v)
}

/// The cases, timed in turns (one repetition of every case, then the next round) so
/// that all of them see the same machine load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// `copy_from_slice` of this rank's B: the physical reference.
    Memcpy,
    /// copr, A ← B (pdgemr2d's job).
    Copy,
    /// copr, A ← Bᵀ (pdtran's job).
    Transpose,
    /// copr transpose with the planner's relabeling σ applied (A's blocks land where
    /// σ puts them; ScaLAPACK cannot do this).
    TransposeRelabel,
    /// copr copy with every package as an MPI message (no shared window).
    CopyMsg,
    /// copr transpose with every package as an MPI message.
    TransposeMsg,
    /// copr copy, messages only, every package packed and unpacked through buffers
    /// (`MpiTransport::always_pack`: no derived datatypes).
    CopyMsgPacked,
    /// copr transpose, messages only, packed.
    TransposeMsgPacked,
    /// copr copy writing through the cache (`Streaming::Never`), for the paired
    /// comparison with the default (streaming stores at this size).
    CopyNoStream,
    /// copr transpose writing through the cache.
    TransposeNoStream,
    /// copr copy, messages only, writing through the cache.
    CopyMsgNoStream,
    /// copr transpose, messages only, writing through the cache.
    TransposeMsgNoStream,
    /// copr copy with every node-local package that qualifies read by single copy
    /// (`SingleCopy::Always`: `process_vm_readv` from the sender's B).
    CopySingle,
    /// copr transpose, single copy wherever a package qualifies.
    TransposeSingle,
    /// copr copy with every node-local package through the shared window
    /// (`SingleCopy::Never`).
    CopyWindow,
    /// copr transpose through the shared window.
    TransposeWindow,
    /// copr copy with B in node-shared memory (`MpiTransport::alloc_shared`): receivers
    /// read their packages straight from the sender's B into A.
    CopyShared,
    /// copr transpose with B in node-shared memory.
    TransposeShared,
    /// copr, three copies in one batch (one round, one message per peer).
    Batch3,
    /// copr, the same three copies as three calls.
    Single3,
    /// copr copy planned inside the timed call (`ReshufflePlan::plan_and_execute`, a
    /// new plan every call, as ScaLAPACK and COSTA plan inside every call).
    CopyReplan,
    /// copr transpose planned inside the timed call.
    TransposeReplan,
    /// copr copy planned inside the timed call with B node-shared (a new plan every
    /// call maps its receivers' moves onto the senders' B again).
    CopySharedReplan,
    /// copr transpose planned inside the timed call with B node-shared.
    TransposeSharedReplan,
    /// copr copy through a `PlanCache` (the plan found by the cache every call).
    CopyCached,
    /// copr transpose through a `PlanCache`.
    TransposeCached,
    /// copr copy planned inside the call, every package as an MPI message.
    CopyReplanMsg,
    /// copr transpose planned inside the call, every package as an MPI message.
    TransposeReplanMsg,
    /// ScaLAPACK PDGEMR2D.
    #[cfg(feature = "scalapack")]
    Gemr2d,
    /// ScaLAPACK PDTRAN.
    #[cfg(feature = "scalapack")]
    Tran,
}

impl Case {
    /// The name `--cases` selects the case by.
    fn key(self) -> &'static str {
        match self {
            Case::Memcpy => "memcpy",
            Case::Copy => "copy",
            Case::Transpose => "transpose",
            Case::TransposeRelabel => "transpose-relabel",
            Case::CopyMsg => "copy-msg",
            Case::TransposeMsg => "transpose-msg",
            Case::CopyMsgPacked => "copy-msg-packed",
            Case::TransposeMsgPacked => "transpose-msg-packed",
            Case::CopyNoStream => "copy-nostream",
            Case::TransposeNoStream => "transpose-nostream",
            Case::CopyMsgNoStream => "copy-msg-nostream",
            Case::TransposeMsgNoStream => "transpose-msg-nostream",
            Case::CopySingle => "copy-single",
            Case::TransposeSingle => "transpose-single",
            Case::CopyWindow => "copy-window",
            Case::TransposeWindow => "transpose-window",
            Case::CopyShared => "copy-shared",
            Case::TransposeShared => "transpose-shared",
            Case::Batch3 => "batch",
            Case::Single3 => "single",
            Case::CopyReplan => "copy-replan",
            Case::CopySharedReplan => "copy-shared-replan",
            Case::TransposeSharedReplan => "transpose-shared-replan",
            Case::TransposeReplan => "transpose-replan",
            Case::CopyCached => "copy-cached",
            Case::TransposeCached => "transpose-cached",
            Case::CopyReplanMsg => "copy-replan-msg",
            Case::TransposeReplanMsg => "transpose-replan-msg",
            #[cfg(feature = "scalapack")]
            Case::Gemr2d => "gemr2d",
            #[cfg(feature = "scalapack")]
            Case::Tran => "tran",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Case::Memcpy => "local memcpy of the same bytes (reference)",
            Case::Copy => "copr copy (pdgemr2d's job)",
            Case::Transpose => "copr transpose (pdtran's job)",
            Case::TransposeRelabel => "copr transpose with relabeling (σ applied)",
            Case::CopyMsg => "copr copy, messages only (no shared window)",
            Case::TransposeMsg => "copr transpose, messages only (no shared window)",
            Case::CopyMsgPacked => "copr copy, messages only, always packed",
            Case::TransposeMsgPacked => "copr transpose, messages only, always packed",
            Case::CopyNoStream => "copr copy, stores through the cache",
            Case::TransposeNoStream => "copr transpose, stores through the cache",
            Case::CopyMsgNoStream => "copr copy, messages only, stores through the cache",
            Case::TransposeMsgNoStream => "copr transpose, messages only, stores through the cache",
            Case::CopySingle => "copr copy, single copy (process_vm_readv)",
            Case::TransposeSingle => "copr transpose, single copy (process_vm_readv)",
            Case::CopyWindow => "copr copy, shared window only",
            Case::TransposeWindow => "copr transpose, shared window only",
            Case::CopyShared => "copr copy, B node-shared (read from B)",
            Case::TransposeShared => "copr transpose, B node-shared (read from B)",
            Case::Batch3 => "copr copy, 3 matrices in one batch",
            Case::Single3 => "copr copy, 3 single calls",
            Case::CopyReplan => "copr copy, planned in the call",
            Case::CopySharedReplan => "copr copy, planned in the call, B node-shared",
            Case::TransposeSharedReplan => "copr transpose, planned in the call, B node-shared",
            Case::TransposeReplan => "copr transpose, planned in the call",
            Case::CopyCached => "copr copy, plan cache",
            Case::TransposeCached => "copr transpose, plan cache",
            Case::CopyReplanMsg => "copr copy, planned in the call, messages only",
            Case::TransposeReplanMsg => "copr transpose, planned in the call, messages only",
            #[cfg(feature = "scalapack")]
            Case::Gemr2d => "ScaLAPACK pdgemr2d",
            #[cfg(feature = "scalapack")]
            Case::Tran => "ScaLAPACK pdtran",
        }
    }
}

/// Compared pairs: (slower case, faster case, description of "faster / slower").
const PAIRS: &[(Case, Case, &str)] = &[
    // Time over memcpy's time (the median of these per-round quotients is the distance
    // to the memory-bandwidth limit; "faster in" counts nothing useful here).
    (Case::Copy, Case::Memcpy, "copy time / memcpy time"),
    (
        Case::CopyShared,
        Case::Memcpy,
        "copy, B node-shared, time / memcpy time",
    ),
    (
        Case::TransposeShared,
        Case::Memcpy,
        "transpose, B node-shared, time / memcpy time",
    ),
    (
        Case::Copy,
        Case::CopyShared,
        "copy: B node-shared vs ordinary B",
    ),
    (
        Case::Transpose,
        Case::TransposeShared,
        "transpose: B node-shared vs ordinary B",
    ),
    (
        Case::Transpose,
        Case::Memcpy,
        "transpose time / memcpy time",
    ),
    (
        Case::CopyMsg,
        Case::Memcpy,
        "copy messages only time / memcpy time",
    ),
    (
        Case::TransposeMsg,
        Case::Memcpy,
        "transpose messages only time / memcpy time",
    ),
    (
        Case::CopySingle,
        Case::Memcpy,
        "copy single copy time / memcpy time",
    ),
    (
        Case::CopyWindow,
        Case::CopySingle,
        "copy: single copy vs shared window",
    ),
    (
        Case::TransposeWindow,
        Case::TransposeSingle,
        "transpose: single copy vs shared window",
    ),
    (
        Case::CopyNoStream,
        Case::Copy,
        "copy: streaming stores vs through the cache",
    ),
    (
        Case::TransposeNoStream,
        Case::Transpose,
        "transpose: streaming stores vs through the cache",
    ),
    (
        Case::CopyMsgNoStream,
        Case::CopyMsg,
        "copy, messages only: streaming stores vs through the cache",
    ),
    (
        Case::TransposeMsgNoStream,
        Case::TransposeMsg,
        "transpose, messages only: streaming stores vs through the cache",
    ),
    #[cfg(feature = "scalapack")]
    (Case::Gemr2d, Case::Copy, "copr copy vs pdgemr2d"),
    #[cfg(feature = "scalapack")]
    (Case::Tran, Case::Transpose, "copr transpose vs pdtran"),
    #[cfg(feature = "scalapack")]
    (
        Case::Tran,
        Case::TransposeRelabel,
        "copr transpose with relabeling vs pdtran",
    ),
    #[cfg(feature = "scalapack")]
    (
        Case::Gemr2d,
        Case::CopyReplan,
        "copr copy planned in the call vs pdgemr2d",
    ),
    #[cfg(feature = "scalapack")]
    (
        Case::Tran,
        Case::TransposeReplan,
        "copr transpose planned in the call vs pdtran",
    ),
    (Case::Single3, Case::Batch3, "batch of 3 vs 3 single calls"),
    (
        Case::CopyCached,
        Case::Copy,
        "copy: plan kept vs plan cache (cache overhead)",
    ),
    (
        Case::TransposeCached,
        Case::Transpose,
        "transpose: plan kept vs plan cache (cache overhead)",
    ),
    (
        Case::CopyReplan,
        Case::Copy,
        "copy: plan kept vs planned in the call",
    ),
    (
        Case::CopySharedReplan,
        Case::CopyShared,
        "copy, B node-shared: plan kept vs planned in the call",
    ),
    (
        Case::TransposeSharedReplan,
        Case::TransposeShared,
        "transpose, B node-shared: plan kept vs planned in the call",
    ),
    (
        Case::TransposeReplan,
        Case::Transpose,
        "transpose: plan kept vs planned in the call",
    ),
    (
        Case::CopyMsg,
        Case::Copy,
        "copy: shared window vs messages only",
    ),
    (
        Case::TransposeMsg,
        Case::Transpose,
        "transpose: shared window vs messages only",
    ),
    (
        Case::CopyMsgPacked,
        Case::CopyMsg,
        "copy, messages only: in place vs always packed",
    ),
    (
        Case::TransposeMsgPacked,
        Case::TransposeMsg,
        "transpose, messages only: in place vs always packed",
    ),
];

/// min and median of a list of times.
fn min_median(mut t: Vec<f64>) -> (f64, f64) {
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2])
}

fn main() {
    let a = args();
    let (universe, _) =
        mpi::initialize_with_threading(mpi::Threading::Funneled).expect("MPI initialises once");
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let pr = (1..=p)
        .rev()
        .find(|d| p % d == 0 && d * d <= p)
        .unwrap_or(1);
    let pc = p / pr;
    let mut t = MpiTransport::new(world.duplicate());
    let mut tm = MpiTransport::new(world.duplicate()).messages_only();
    let mut tp = MpiTransport::new(world.duplicate())
        .messages_only()
        .always_pack();
    let mut ts = MpiTransport::new(world.duplicate()).with_single_copy(SingleCopy::Always);
    let mut tw = MpiTransport::new(world.duplicate()).with_single_copy(SingleCopy::Never);
    #[cfg(feature = "scalapack")]
    let grid = scalapack::Grid::new(pr, pc);
    let threads = rayon::current_num_threads();
    // The cores the ranks share: each rank's share of its node's cores, summed.
    let cores = sum_over_ranks(
        &world,
        std::thread::available_parallelism().map_or(1.0, |c| c.get() as f64)
            / t.node_ranks() as f64,
    );
    let cases = [
        Case::Memcpy,
        Case::Copy,
        Case::Transpose,
        Case::TransposeRelabel,
        Case::CopyMsg,
        Case::TransposeMsg,
        Case::CopyMsgPacked,
        Case::TransposeMsgPacked,
        Case::CopyNoStream,
        Case::TransposeNoStream,
        Case::CopyMsgNoStream,
        Case::TransposeMsgNoStream,
        Case::CopySingle,
        Case::TransposeSingle,
        Case::CopyWindow,
        Case::TransposeWindow,
        Case::CopyShared,
        Case::TransposeShared,
        Case::Batch3,
        Case::Single3,
        Case::CopyReplan,
        Case::TransposeReplan,
        Case::CopySharedReplan,
        Case::TransposeSharedReplan,
        Case::CopyCached,
        Case::TransposeCached,
        Case::CopyReplanMsg,
        Case::TransposeReplanMsg,
        #[cfg(feature = "scalapack")]
        Case::Gemr2d,
        #[cfg(feature = "scalapack")]
        Case::Tran,
    ];
    let cases: Vec<Case> = cases
        .into_iter()
        .filter(|c| a.cases.is_empty() || a.cases.iter().any(|k| k == c.key()))
        .collect();
    if me == 0 {
        println!(
            "\n{p} ranks ({pr} x {pc} grid), {threads} rayon thread(s) per rank, {} repetitions, \
             {} x {} -> {} x {} blocks, relabeling off unless stated\n",
            a.reps, a.blocks[0].0, a.blocks[0].1, a.blocks[1].0, a.blocks[1].1
        );
        println!("| N | case | min [ms] | median [ms] | CPU busy | page faults |");
        println!("|---:|---|---:|---:|---:|---:|");
    }
    let mut phases: Vec<(String, [f64; 6])> = Vec::new();
    let mut plan_rows: Vec<String> = Vec::new();
    let mut paired: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let reads = sum_over_ranks(&world, f64::from(u8::from(t.reads_single_copy())));
    notes.push(format!(
        "single-copy reads (process_vm_readv): available on {} of {p} ranks; chosen by \
         SingleCopy::Auto on {reads} of {p} (the kernel's copy measured against memcpy)",
        sum_over_ranks(&world, f64::from(u8::from(ts.single_copy_available())))
    ));

    for &n in &a.sizes {
        let [(smb, snb), (dmb, dnb)] = a.blocks;
        let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(n, n, smb, snb, pr, pc))
            .expect("valid layout")
            .into();
        let dst: Layout = BlockCyclic::new(BlockCyclicSpec::new(n, n, dmb, dnb, pr, pc))
            .expect("valid layout")
            .into();
        let mut b = vec![0.0f64; src.local_len(me)];
        fill(&src, me, n, &mut b);
        let b = b;
        // The same B in node-shared memory (collective over the node).
        let mut b_shared = t.alloc_shared::<f64>(b.len()).expect("shared B");
        b_shared.copy_from_slice(&b);
        // Three distinct matrices (equal values) for the batch and the single calls.
        let (b2, b3) = (b.clone(), b.clone());
        let mut outs = [
            vec![0.0f64; dst.local_len(me)],
            vec![0.0f64; dst.local_len(me)],
            vec![0.0f64; dst.local_len(me)],
        ];
        let mut scratch = vec![0.0f64; b.len()];
        let single =
            |op: Op| Transform::new(src.clone(), dst.clone(), op).with_relabeling(Relabeling::Off);
        world.barrier();
        let t0 = Instant::now();
        let mut copy = ReshufflePlan::new(&mut t, vec![single(Op::Identity)]).expect("plan");
        let plan_copy = max_over_ranks(&world, t0.elapsed().as_secs_f64());
        world.barrier();
        let t0 = Instant::now();
        let mut tran = ReshufflePlan::new(&mut t, vec![single(Op::Transpose)]).expect("plan");
        let plan_tran = max_over_ranks(&world, t0.elapsed().as_secs_f64());
        let mut batch = ReshufflePlan::new(&mut t, vec![single(Op::Identity); 3]).expect("plan");
        let mut one = ReshufflePlan::new(&mut t, vec![single(Op::Identity)]).expect("plan");
        let mut tran_relabel = ReshufflePlan::new(
            &mut t,
            vec![Transform::new(src.clone(), dst.clone(), Op::Transpose)],
        )
        .expect("plan");
        let relabeled = tran_relabel.target(0).clone();
        outs[0].resize(outs[0].len().max(relabeled.local_len(me)), 0.0);
        notes.push(format!(
            "N = {n}: the transpose moves {} elements across ranks without relabeling, {} \
             with the planner's σ = {:?}",
            tran_relabel.remote_before(0).expect("remote volume"),
            tran_relabel.remote_after(0).expect("remote volume"),
            tran_relabel.sigma(0).forward()
        ));
        let mut copy_msg = ReshufflePlan::new(&mut tm, vec![single(Op::Identity)]).expect("plan");
        let mut tran_msg = ReshufflePlan::new(&mut tm, vec![single(Op::Transpose)]).expect("plan");
        let mut copy_packed =
            ReshufflePlan::new(&mut tp, vec![single(Op::Identity)]).expect("plan");
        let mut tran_packed =
            ReshufflePlan::new(&mut tp, vec![single(Op::Transpose)]).expect("plan");
        // Plans that write through the cache (no streaming stores).
        let cached_stores = |tr: &mut MpiTransport, op: Op| {
            let mut plan = ReshufflePlan::new(tr, vec![single(op)]).expect("plan");
            plan.set_streaming(Streaming::Never);
            plan
        };
        let mut copy_single =
            ReshufflePlan::new(&mut ts, vec![single(Op::Identity)]).expect("plan");
        let mut tran_single =
            ReshufflePlan::new(&mut ts, vec![single(Op::Transpose)]).expect("plan");
        let mut copy_window =
            ReshufflePlan::new(&mut tw, vec![single(Op::Identity)]).expect("plan");
        let mut tran_window =
            ReshufflePlan::new(&mut tw, vec![single(Op::Transpose)]).expect("plan");
        let mut copy_shared = ReshufflePlan::new(&mut t, vec![single(Op::Identity)]).expect("plan");
        let mut tran_shared =
            ReshufflePlan::new(&mut t, vec![single(Op::Transpose)]).expect("plan");
        let mut copy_cached_stores = cached_stores(&mut t, Op::Identity);
        let mut tran_cached_stores = cached_stores(&mut t, Op::Transpose);
        let mut copy_msg_cached_stores = cached_stores(&mut tm, Op::Identity);
        let mut tran_msg_cached_stores = cached_stores(&mut tm, Op::Transpose);
        #[cfg(feature = "scalapack")]
        let (da, dc) = (
            grid.descriptor(n, n, smb, snb),
            grid.descriptor(n, n, dmb, dnb),
        );
        #[cfg(feature = "scalapack")]
        assert!(b.len() >= grid.local_len(&da) && outs[0].len() >= grid.local_len(&dc));

        let mut times: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
        // The untimed warm-up's times: the first call pays the first-touch page faults
        // and sizes copr's buffers and shared window.
        let mut first: Vec<String> = Vec::new();
        // Per repetition: the CPU time of all ranks over the cores they share.
        let mut busy: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
        // Per repetition: minor page faults of all ranks together.
        let mut faults: Vec<Vec<u64>> = vec![Vec::new(); cases.len()];
        // Per repetition of the cases that plan inside the call: where planning went.
        let mut plan_stats: Vec<Vec<PlanStats>> = vec![Vec::new(); cases.len()];
        // Per repetition of those with B node-shared: mapping moves onto the senders' B.
        let mut mapping: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
        let mut cache = PlanCache::new(4, 1 << 30);
        for rep in 0..=a.reps {
            for (ci, &case) in cases.iter().enumerate() {
                for o in outs.iter_mut() {
                    o.iter_mut().for_each(|x| *x = f64::NAN);
                }
                world.barrier();
                let t0 = Instant::now();
                let c0 = cpu_seconds();
                let f0 = minor_faults();
                match case {
                    Case::Memcpy => scratch.copy_from_slice(&b),
                    Case::Copy
                    | Case::Transpose
                    | Case::TransposeRelabel
                    | Case::CopyMsg
                    | Case::TransposeMsg
                    | Case::CopyMsgPacked
                    | Case::TransposeMsgPacked
                    | Case::CopyNoStream
                    | Case::TransposeNoStream
                    | Case::CopyMsgNoStream
                    | Case::TransposeMsgNoStream
                    | Case::CopySingle
                    | Case::TransposeSingle
                    | Case::CopyWindow
                    | Case::TransposeWindow => {
                        let (plan, tr) = match case {
                            Case::CopySingle => (&mut copy_single, &mut ts),
                            Case::TransposeSingle => (&mut tran_single, &mut ts),
                            Case::CopyWindow => (&mut copy_window, &mut tw),
                            Case::TransposeWindow => (&mut tran_window, &mut tw),
                            Case::CopyNoStream => (&mut copy_cached_stores, &mut t),
                            Case::CopyMsgNoStream => (&mut copy_msg_cached_stores, &mut tm),
                            Case::TransposeMsgNoStream => (&mut tran_msg_cached_stores, &mut tm),
                            Case::TransposeNoStream => (&mut tran_cached_stores, &mut t),
                            Case::Copy => (&mut copy, &mut t),
                            Case::Transpose => (&mut tran, &mut t),
                            Case::TransposeRelabel => (&mut tran_relabel, &mut t),
                            Case::CopyMsg => (&mut copy_msg, &mut tm),
                            Case::CopyMsgPacked => (&mut copy_packed, &mut tp),
                            Case::TransposeMsgPacked => (&mut tran_packed, &mut tp),
                            _ => (&mut tran_msg, &mut tm),
                        };
                        plan.execute(tr, &mut [Job::copy(&b, &mut outs[0])])
                            .expect("execute")
                    }
                    Case::CopyShared | Case::TransposeShared => {
                        let plan = if case == Case::CopyShared {
                            &mut copy_shared
                        } else {
                            &mut tran_shared
                        };
                        plan.execute(&mut t, &mut [Job::copy(&b_shared, &mut outs[0])])
                            .expect("execute")
                    }
                    Case::Batch3 => {
                        let [o1, o2, o3] = &mut outs;
                        batch
                            .execute(
                                &mut t,
                                &mut [Job::copy(&b, o1), Job::copy(&b2, o2), Job::copy(&b3, o3)],
                            )
                            .expect("execute")
                    }
                    Case::Single3 => {
                        for (bk, o) in [&b, &b2, &b3].into_iter().zip(outs.iter_mut()) {
                            one.execute(&mut t, &mut [Job::copy(bk, o)])
                                .expect("execute");
                        }
                    }
                    Case::CopyReplan
                    | Case::TransposeReplan
                    | Case::CopyReplanMsg
                    | Case::TransposeReplanMsg => {
                        let op = match case {
                            Case::CopyReplan | Case::CopyReplanMsg => Op::Identity,
                            _ => Op::Transpose,
                        };
                        let tr = match case {
                            Case::CopyReplan | Case::TransposeReplan => &mut t,
                            _ => &mut tm,
                        };
                        let plan = ReshufflePlan::plan_and_execute(
                            tr,
                            vec![single(op)],
                            &mut [Job::copy(&b, &mut outs[0])],
                        )
                        .expect("plan and execute");
                        if rep > 0 {
                            plan_stats[ci].push(plan.plan_stats());
                        }
                    }
                    Case::CopySharedReplan | Case::TransposeSharedReplan => {
                        let op = if case == Case::CopySharedReplan {
                            Op::Identity
                        } else {
                            Op::Transpose
                        };
                        let plan = ReshufflePlan::plan_and_execute(
                            &mut t,
                            vec![single(op)],
                            &mut [Job::copy(&b_shared, &mut outs[0])],
                        )
                        .expect("plan and execute");
                        if rep > 0 {
                            plan_stats[ci].push(plan.plan_stats());
                            mapping[ci].push(plan.last_stats().source_mapping);
                        }
                    }
                    Case::CopyCached | Case::TransposeCached => {
                        let op = if case == Case::CopyCached {
                            Op::Identity
                        } else {
                            Op::Transpose
                        };
                        cache
                            .execute(&mut t, &[single(op)], &mut [Job::copy(&b, &mut outs[0])])
                            .expect("execute");
                    }
                    #[cfg(feature = "scalapack")]
                    Case::Gemr2d => grid.run(Routine::Gemr2d, n, &b, &da, &mut outs[0], &dc),
                    #[cfg(feature = "scalapack")]
                    Case::Tran => grid.run(Routine::Tran, n, &b, &da, &mut outs[0], &dc),
                }
                let mine = t0.elapsed().as_secs_f64();
                let cpu = sum_over_ranks(&world, cpu_seconds() - c0);
                let flt = sum_over_ranks(&world, minor_faults() - f0);
                let took = max_over_ranks(&world, mine);
                if rep > 0 {
                    times[ci].push(took);
                    busy[ci].push(cpu / (took * cores));
                    faults[ci].push(flt);
                } else {
                    first.push(format!("{} {:.1} ms", case.key(), took * 1e3));
                }
                if rep == 0 || rep == a.reps {
                    // The serial reference, element by element, on the warm-up and the
                    // last repetition (by then every path, shared window included, ran).
                    let w = match case {
                        Case::Memcpy => u64::from(scratch != b),
                        Case::Batch3 | Case::Single3 => {
                            outs.iter().map(|o| wrong(&dst, me, n, o, false)).sum()
                        }
                        #[cfg(feature = "scalapack")]
                        Case::Tran => wrong(&dst, me, n, &outs[0], true),
                        Case::Transpose
                        | Case::TransposeMsg
                        | Case::TransposeMsgPacked
                        | Case::TransposeNoStream
                        | Case::TransposeMsgNoStream
                        | Case::TransposeSingle
                        | Case::TransposeWindow
                        | Case::TransposeShared
                        | Case::TransposeReplan
                        | Case::TransposeSharedReplan
                        | Case::TransposeReplanMsg
                        | Case::TransposeCached => wrong(&dst, me, n, &outs[0], true),
                        Case::TransposeRelabel => wrong(&relabeled, me, n, &outs[0], true),
                        _ => wrong(&dst, me, n, &outs[0], false),
                    };
                    let w = sum_over_ranks(&world, w);
                    assert_eq!(w, 0, "{}: {w} wrong elements at N = {n}", case.name());
                }
            }
        }
        notes.push(format!(
            "N = {n}: first (warm-up) repetition: {}; peak resident memory of the \
             largest rank so far: {:.0} MiB",
            first.join(", "),
            max_over_ranks(&world, peak_resident_mib())
        ));
        // Paired speed-ups: both cases of a pair ran in the same round of every
        // repetition, so a change in machine load hits both alike.
        for (slow, fast, what) in PAIRS {
            let (Some(a), Some(b)) = (
                cases.iter().position(|c| c == slow),
                cases.iter().position(|c| c == fast),
            ) else {
                continue;
            };
            let mut r: Vec<f64> = times[a].iter().zip(&times[b]).map(|(x, y)| x / y).collect();
            let wins = r.iter().filter(|&&x| x > 1.0).count();
            r.sort_by(f64::total_cmp);
            paired.push(format!(
                "| {n} | {what} | {:.2}× | {:.2}–{:.2}× | {wins} of {} |",
                r[r.len() / 2],
                r[0],
                r[r.len() - 1],
                r.len()
            ));
        }
        for (ci, &case) in cases.iter().enumerate() {
            let (mn, md) = min_median(std::mem::take(&mut times[ci]));
            let (_, cpu) = min_median(std::mem::take(&mut busy[ci]));
            let mut f = std::mem::take(&mut faults[ci]);
            f.sort_unstable();
            if me == 0 {
                println!(
                    "| {n} | {} | {:.3} | {:.3} | {:.0} % | {} |",
                    case.name(),
                    mn * 1e3,
                    md * 1e3,
                    cpu * 100.0,
                    f[f.len() / 2]
                );
            }
        }
        if me == 0 {
            println!(
                "| {n} | copr planning, copy (once per plan) | {:.3} | | | |",
                plan_copy * 1e3
            );
            println!(
                "| {n} | copr planning, transpose (once per plan) | {:.3} | | | |",
                plan_tran * 1e3
            );
        }
        for (ci, &case) in cases.iter().enumerate() {
            if let Some(row) = plan_breakdown(&world, n, case, &plan_stats[ci]) {
                plan_rows.push(row);
            }
            if !mapping[ci].is_empty() {
                let v: Vec<f64> = mapping[ci]
                    .iter()
                    .map(|&x| max_over_ranks(&world, x))
                    .collect();
                let (lo, med) = min_median(v);
                notes.push(format!(
                    "N = {n}, {}: mapping the receivers' moves onto the senders' B (slowest \
                     rank, in the execution, not in the planning columns) {:.3} ms median, \
                     {:.3} ms min per call; a kept plan maps once",
                    case.name(),
                    med * 1e3,
                    lo * 1e3
                ));
            }
        }
        phases.push(breakdown(
            &world,
            format!("copy, N = {n}"),
            copy.last_stats(),
        ));
        phases.push(breakdown(
            &world,
            format!("transpose, N = {n}"),
            tran.last_stats(),
        ));
        phases.push(breakdown(
            &world,
            format!("copy, single copy, N = {n}"),
            copy_single.last_stats(),
        ));
        phases.push(breakdown(
            &world,
            format!("transpose, single copy, N = {n}"),
            tran_single.last_stats(),
        ));
        notes.push(format!(
            "N = {n}: B node-shared: packages read from the sender's B, all ranks, last \
             execution: copy {}, transpose {}",
            sum_over_ranks(&world, copy_shared.last_stats().read_from_source as f64),
            sum_over_ranks(&world, tran_shared.last_stats().read_from_source as f64)
        ));
        phases.push(breakdown(
            &world,
            format!("copy, B node-shared, N = {n}"),
            copy_shared.last_stats(),
        ));
        phases.push(breakdown(
            &world,
            format!("transpose, B node-shared, N = {n}"),
            tran_shared.last_stats(),
        ));
        phases.push(breakdown(
            &world,
            format!("batch of 3, N = {n}"),
            batch.last_stats(),
        ));
        phases.push(breakdown(
            &world,
            format!("copy, messages only, N = {n}"),
            copy_msg.last_stats(),
        ));
        phases.push(breakdown(
            &world,
            format!("transpose, messages only, N = {n}"),
            tran_msg.last_stats(),
        ));
    }

    if me == 0 {
        println!();
        for line in &notes {
            println!("{line}");
        }
    }
    if me == 0 && !paired.is_empty() {
        println!("\nPaired speed-ups (per repetition, both cases in the same round):\n");
        println!("| N | comparison | median | range | faster in |");
        println!("|---:|---|---:|---:|---:|");
        for line in &paired {
            println!("{line}");
        }
    }
    if me == 0 && !plan_rows.is_empty() {
        println!(
            "\ncopr planning inside the call, median over the repetitions of the slowest \
             rank per phase (ms):\n"
        );
        println!("| N | case | check | relabel | enumerate | regions | packages | total |");
        println!("|---:|---|---:|---:|---:|---:|---:|---:|");
        for line in &plan_rows {
            println!("{line}");
        }
    }
    if me == 0 {
        println!("\ncopr phases of the last repetition (slowest rank per phase, ms):\n");
        println!("| case | check | pack | local copy | unpack | messages | total |");
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for (c, v) in &phases {
            println!(
                "| {c} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                v[0] * 1e3,
                v[1] * 1e3,
                v[2] * 1e3,
                v[3] * 1e3,
                v[4] * 1e3,
                v[5] * 1e3
            );
        }
    }
}

/// The few ScaLAPACK/BLACS entry points the comparison needs (Debian's
/// `libscalapack-openmpi`, which contains BLACS).
#[cfg(feature = "scalapack")]
mod scalapack {
    use std::os::raw::{c_char, c_int};

    #[link(name = "scalapack-openmpi")]
    extern "C" {
        fn Cblacs_get(icontxt: c_int, what: c_int, val: *mut c_int);
        fn Cblacs_gridinit(icontxt: *mut c_int, order: *const c_char, nprow: c_int, npcol: c_int);
        fn Cblacs_gridinfo(
            icontxt: c_int,
            nprow: *mut c_int,
            npcol: *mut c_int,
            myrow: *mut c_int,
            mycol: *mut c_int,
        );
        fn Cblacs_gridexit(icontxt: c_int);
        fn numroc_(
            n: *const c_int,
            nb: *const c_int,
            iproc: *const c_int,
            isrcproc: *const c_int,
            nprocs: *const c_int,
        ) -> c_int;
        fn descinit_(
            desc: *mut c_int,
            m: *const c_int,
            n: *const c_int,
            mb: *const c_int,
            nb: *const c_int,
            irsrc: *const c_int,
            icsrc: *const c_int,
            ictxt: *const c_int,
            lld: *const c_int,
            info: *mut c_int,
        );
        fn pdgemr2d_(
            m: *const c_int,
            n: *const c_int,
            a: *const f64,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            b: *mut f64,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            ictxt: *const c_int,
        );
        fn pdtran_(
            m: *const c_int,
            n: *const c_int,
            alpha: *const f64,
            a: *const f64,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            beta: *const f64,
            c: *mut f64,
            ic: *const c_int,
            jc: *const c_int,
            descc: *const c_int,
        );
    }

    /// A BLACS process grid on MPI_COMM_WORLD, row-major numbering.
    pub(crate) struct Grid {
        ctxt: c_int,
        nprow: c_int,
        npcol: c_int,
        myrow: c_int,
        mycol: c_int,
    }

    fn int(x: usize) -> c_int {
        c_int::try_from(x).expect("fits a Fortran INTEGER")
    }

    impl Grid {
        /// `nprow × npcol` grid over the first ranks of MPI_COMM_WORLD (MPI must be
        /// initialised).
        pub(crate) fn new(nprow: usize, npcol: usize) -> Self {
            let (mut ctxt, mut pr, mut pc, mut r, mut c) = (0, 0, 0, 0, 0);
            // SAFETY: plain out-parameters; "Row\0" is a NUL-terminated string; MPI is
            // initialised by the caller, so BLACS attaches to MPI_COMM_WORLD.
            unsafe {
                Cblacs_get(-1, 0, &mut ctxt);
                Cblacs_gridinit(&mut ctxt, c"Row".as_ptr(), int(nprow), int(npcol));
                Cblacs_gridinfo(ctxt, &mut pr, &mut pc, &mut r, &mut c);
            }
            assert!(r >= 0 && c >= 0, "every rank must be in the BLACS grid");
            Self {
                ctxt,
                nprow: pr,
                npcol: pc,
                myrow: r,
                mycol: c,
            }
        }

        /// This rank's local rows and columns of an `m × n` matrix in `mb × nb` blocks.
        fn local(&self, m: usize, n: usize, mb: usize, nb: usize) -> (c_int, c_int) {
            let (m, n, mb, nb, zero) = (int(m), int(n), int(mb), int(nb), 0);
            // SAFETY: numroc_ only reads its five INTEGER arguments.
            unsafe {
                (
                    numroc_(&m, &mb, &self.myrow, &zero, &self.nprow),
                    numroc_(&n, &nb, &self.mycol, &zero, &self.npcol),
                )
            }
        }

        /// The descriptor of an `m × n` matrix in `mb × nb` blocks starting on process
        /// (0, 0), with the tight local leading dimension.
        pub(crate) fn descriptor(&self, m: usize, n: usize, mb: usize, nb: usize) -> [c_int; 9] {
            let (lr, _) = self.local(m, n, mb, nb);
            let mut d = [0; 9];
            let (mi, ni, mbi, nbi, zero, lld) = (int(m), int(n), int(mb), int(nb), 0, lr.max(1));
            let mut info = 0;
            // SAFETY: `d` has the 9 entries DESCINIT writes; the rest are read-only
            // INTEGERs.
            unsafe {
                descinit_(
                    d.as_mut_ptr(),
                    &mi,
                    &ni,
                    &mbi,
                    &nbi,
                    &zero,
                    &zero,
                    &self.ctxt,
                    &lld,
                    &mut info,
                )
            };
            assert_eq!(info, 0, "descinit_ failed with info {info}");
            d
        }

        /// Elements this rank's local array of `desc` occupies (LLD · local columns).
        pub(crate) fn local_len(&self, desc: &[c_int; 9]) -> usize {
            let (_, lc) = self.local(
                desc[2] as usize,
                desc[3] as usize,
                desc[4] as usize,
                desc[5] as usize,
            );
            desc[8] as usize * lc.max(0) as usize
        }

        /// `c ← a` (PDGEMR2D) or `c ← aᵀ` (PDTRAN with α = 1, β = 0) for `n × n`
        /// matrices.
        pub(crate) fn run(
            &self,
            routine: Routine,
            n: usize,
            a: &[f64],
            da: &[c_int; 9],
            c: &mut [f64],
            dc: &[c_int; 9],
        ) {
            assert!(a.len() >= self.local_len(da) && c.len() >= self.local_len(dc));
            let (n, one, alpha, beta) = (int(n), 1, 1.0f64, 0.0f64);
            let (pa, pc) = (a.as_ptr(), c.as_mut_ptr());
            let (da, dc) = (da.as_ptr(), dc.as_ptr());
            // SAFETY: both local arrays hold at least LLD · local columns elements of
            // their descriptors (asserted above); all other arguments are INTEGERs or
            // DOUBLEs passed by reference, alive for the whole call.
            unsafe {
                match routine {
                    Routine::Gemr2d => {
                        pdgemr2d_(&n, &n, pa, &one, &one, da, pc, &one, &one, dc, &self.ctxt)
                    }
                    Routine::Tran => pdtran_(
                        &n, &n, &alpha, pa, &one, &one, da, &beta, pc, &one, &one, dc,
                    ),
                }
            };
        }
    }

    /// The two ScaLAPACK routines compared.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Routine {
        /// PDGEMR2D: redistribution.
        Gemr2d,
        /// PDTRAN: transpose.
        Tran,
    }

    impl Drop for Grid {
        fn drop(&mut self) {
            // SAFETY: the context came from Cblacs_gridinit and is released once.
            unsafe { Cblacs_gridexit(self.ctxt) };
        }
    }
}
