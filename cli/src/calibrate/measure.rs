//! The measurements of `copr calibrate` (collective over the world communicator):
//! ping-pong latency and message-size ladders per class of rank pairs, a node's
//! injection bandwidth, the engine's shared-window path inside a node and its local
//! throughput per element type.

use std::collections::BTreeMap;
use std::time::Instant;

use copr::engine::{Element, Job, Relabeling, ReshufflePlan, Transform};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op};
use copr::transport::{run_in_process, MpiTransport, Transport};
use copr::Result;
use mpi::collective::SystemOperation;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::*;
use num_complex::{Complex32, Complex64};
use serde::Serialize;

use super::classes::{Class, RankMap};
use super::stats::{fit_latency_bandwidth, median, LinearFit, Summary};

/// Tag of the ping-pong and injection messages.
const TAG: i32 = 0x6361;
/// Ping-pong round trips timed for the latency (after 10 untimed).
const LATENCY_REPS: usize = 50;
/// The message-size ladder: 64 B, 256 B, …, 4 MiB.
pub(crate) const LADDER: [usize; 9] = [
    1 << 6,
    1 << 8,
    1 << 10,
    1 << 12,
    1 << 14,
    1 << 16,
    1 << 18,
    1 << 20,
    1 << 22,
];
/// Timed round trips per ladder size (after one untimed).
const LADDER_REPS: usize = 5;
/// Elements per rank of the engine measurements (4 MiB of f64).
const ENGINE_ELEMENTS: usize = 1 << 19;

/// Ping-pong between `a` and `b` with `bytes`-byte messages: the half round-trip
/// times of `reps` timed round trips after `warm` untimed ones, on rank `a` (empty
/// elsewhere).
fn pingpong(
    w: &SimpleCommunicator,
    a: usize,
    b: usize,
    buf: &mut [u8],
    reps: usize,
    warm: usize,
) -> Vec<f64> {
    let me = w.rank() as usize;
    let mut out = Vec::new();
    if me == a {
        let peer = w.process_at_rank(b as i32);
        for i in 0..warm + reps {
            let t0 = Instant::now();
            peer.send_with_tag(&buf[..], TAG);
            peer.receive_into_with_tag(&mut buf[..], TAG);
            if i >= warm {
                out.push(t0.elapsed().as_secs_f64() / 2.0);
            }
        }
    } else if me == b {
        let peer = w.process_at_rank(a as i32);
        for _ in 0..warm + reps {
            peer.receive_into_with_tag(&mut buf[..], TAG);
            peer.send_with_tag(&buf[..], TAG);
        }
    }
    out
}

/// A barrier whose waiting ranks sleep between polls instead of spinning, so that
/// the ranks idle while a pair measures leave the cores alone (what matters when ranks
/// outnumber cores).
fn quiet_barrier(w: &SimpleCommunicator) {
    let mut req = w.immediate_barrier();
    loop {
        match req.test() {
            Ok(_) => return,
            Err(r) => {
                req = r;
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }
}

/// Whether to start another step of a phase (collective): rank 0's clock is before
/// `until` seconds after `start`, or the step is one the phase must take (`must`).
pub(crate) fn proceed(w: &SimpleCommunicator, start: Instant, until: f64, must: bool) -> bool {
    agreed(w, must || start.elapsed().as_secs_f64() < until)
}

/// Rank 0's `go`, on every rank (collective): how the ranks agree on a decision
/// taken by rank 0's clock.
pub(crate) fn agreed(w: &SimpleCommunicator, go: bool) -> bool {
    let mut v = [u8::from(go)];
    w.process_at_rank(0).broadcast_into(&mut v[..]);
    v[0] != 0
}

/// One measured pair.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PairResult {
    pub(crate) class: Class,
    pub(crate) ranks: [usize; 2],
    pub(crate) nodes: [String; 2],
    /// 8-byte half round trip, seconds.
    pub(crate) latency: Summary,
    /// Median half round trip per ladder size, seconds.
    pub(crate) ladder: Vec<f64>,
}

/// Measures the pairs in order while rank 0 sees time left before `deadline` (the
/// first pair of every class is always measured); rank 0 gets the results.
pub(crate) fn measure_pairs(
    w: &SimpleCommunicator,
    l: &RankMap,
    pairs: &[(Class, usize, usize)],
    start: Instant,
    deadline: f64,
) -> Vec<PairResult> {
    let me = w.rank() as usize;
    let classes = {
        let mut c: Vec<Class> = pairs.iter().map(|x| x.0).collect();
        c.dedup();
        c.sort();
        c.dedup();
        c.len()
    };
    let mut buf = vec![1u8; *LADDER.last().expect("ladder")];
    let mut out = Vec::new();
    for (k, &(class, a, b)) in pairs.iter().enumerate() {
        quiet_barrier(w);
        if !proceed(w, start, deadline, k < classes) {
            break;
        }
        let lat = pingpong(w, a, b, &mut buf[..8], LATENCY_REPS, 10);
        let mut row: Vec<f64> = Vec::with_capacity(3 + LADDER.len());
        if me == a {
            let s = Summary::of(&lat);
            row.extend([s.median, s.p10, s.p90]);
        }
        for &s in &LADDER {
            let t = pingpong(w, a, b, &mut buf[..s], LADDER_REPS, 1);
            if me == a {
                row.push(median(&t));
            }
        }
        // the measuring rank reports to rank 0
        if a != 0 {
            if me == a {
                w.process_at_rank(0).send_with_tag(&row[..], TAG);
            } else if me == 0 {
                row = vec![0.0; 3 + LADDER.len()];
                w.process_at_rank(a as i32)
                    .receive_into_with_tag(&mut row[..], TAG);
            }
        }
        if me == 0 {
            out.push(PairResult {
                class,
                ranks: [a, b],
                nodes: [
                    l.node_names[l.node[a]].clone(),
                    l.node_names[l.node[b]].clone(),
                ],
                latency: Summary {
                    median: row[0],
                    p10: row[1],
                    p90: row[2],
                    n: LATENCY_REPS,
                },
                ladder: row[3..].to_vec(),
            });
        }
    }
    out
}

/// A class's result: the latency over its pairs and the fit of the ladder's medians.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ClassResult {
    pub(crate) class: Class,
    pub(crate) pairs: usize,
    /// Medians over pairs of the pairs' median 8-byte half round trips; spread over
    /// the pairs' medians.
    pub(crate) latency: Summary,
    /// Per ladder size: the median over pairs of the pairs' medians, seconds.
    pub(crate) ladder: Vec<f64>,
    /// `t(s) = L + s/B` fitted to `ladder`, `None` if the times do not grow with size.
    pub(crate) fit: Option<LinearFit>,
}

/// Latency over a group of pairs, the median ladder and its fit.
fn group(rs: &[&PairResult]) -> (Summary, Vec<f64>, Option<LinearFit>) {
    let lat: Vec<f64> = rs.iter().map(|r| r.latency.median).collect();
    let ladder: Vec<f64> = (0..LADDER.len())
        .map(|k| median(&rs.iter().map(|r| r.ladder[k]).collect::<Vec<_>>()))
        .collect();
    let pts: Vec<(f64, f64)> = LADDER
        .iter()
        .zip(&ladder)
        .map(|(&s, &t)| (s as f64, t))
        .collect();
    let fit = fit_latency_bandwidth(&pts);
    (Summary::of(&lat), ladder, fit)
}

pub(crate) fn summarise(results: &[PairResult]) -> Vec<ClassResult> {
    let mut by: BTreeMap<Class, Vec<&PairResult>> = BTreeMap::new();
    for r in results {
        by.entry(r.class).or_default().push(r);
    }
    by.into_iter()
        .map(|(class, rs)| {
            let (latency, ladder, fit) = group(&rs);
            ClassResult {
                class,
                pairs: rs.len(),
                latency,
                fit,
                ladder,
            }
        })
        .collect()
}

/// One node pair: its measured rank pairs' latency and ladder fit.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NodePairResult {
    /// Node indices, smaller first.
    pub(crate) nodes: [usize; 2],
    pub(crate) names: [String; 2],
    pub(crate) pairs: usize,
    /// Median over the rank pairs of their median 8-byte half round trips.
    pub(crate) latency: Summary,
    /// `t(s) = L + s/B` fitted to the median ladder of the rank pairs.
    pub(crate) fit: Option<LinearFit>,
}

/// The other-node pairs grouped by node pair.
pub(crate) fn by_node_pair(results: &[PairResult], l: &RankMap) -> Vec<NodePairResult> {
    let mut by: BTreeMap<(usize, usize), Vec<&PairResult>> = BTreeMap::new();
    for r in results.iter().filter(|r| r.class == Class::OtherNode) {
        let (x, y) = (l.node[r.ranks[0]], l.node[r.ranks[1]]);
        by.entry((x.min(y), x.max(y))).or_default().push(r);
    }
    by.into_iter()
        .map(|((x, y), rs)| {
            let (latency, _, fit) = group(&rs);
            NodePairResult {
                nodes: [x, y],
                names: [l.node_names[x].clone(), l.node_names[y].clone()],
                pairs: rs.len(),
                latency,
                fit,
            }
        })
        .collect()
}

/// A node's injection bandwidth: all ranks of one node send to ranks of another at
/// once.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Injection {
    pub(crate) nodes: [String; 2],
    pub(crate) senders: usize,
    pub(crate) message_bytes: usize,
    /// Bytes per second out of the sending node, per trial.
    pub(crate) bandwidth: Summary,
}

/// Injection bandwidth of up to two node pairs, one after the other (collective; the
/// result on rank 0). Every rank of node A sends `reps` messages of 1 MiB to a rank of
/// node B (round-robin over B's ranks); the slowest rank's time counts.
pub(crate) fn injection(
    w: &SimpleCommunicator,
    l: &RankMap,
    start: Instant,
    until: f64,
) -> Vec<Injection> {
    const BYTES: usize = 1 << 20;
    const REPS: usize = 4;
    const TRIALS: usize = 5;
    let me = w.rank() as usize;
    let k = l.nodes();
    let mut pairs = Vec::new();
    if k >= 2 {
        pairs.push((0, 1));
    }
    if k >= 4 {
        pairs.push((k - 1, k - 2));
    }
    let mut out = Vec::new();
    let sbuf = vec![3u8; BYTES];
    for (x, y) in pairs {
        let (sx, ry) = (l.ranks_of(x), l.ranks_of(y));
        let mut trials = Vec::new();
        for trial in 0..TRIALS {
            if !proceed(w, start, until, trial == 0 && out.is_empty()) {
                break;
            }
            w.barrier();
            let t0 = Instant::now();
            let sources: Vec<usize> = if l.node[me] == y {
                let j = ry.iter().position(|&r| r == me).expect("on node y");
                (0..sx.len())
                    .filter(|i| i % ry.len() == j)
                    .map(|i| sx[i])
                    .collect()
            } else {
                Vec::new()
            };
            let mut rbufs = vec![vec![0u8; BYTES]; sources.len() * REPS];
            mpi::request::scope(|sc| {
                let mut sends = Vec::new();
                if l.node[me] == x {
                    let i = sx.iter().position(|&r| r == me).expect("on node x");
                    let dst = w.process_at_rank(ry[i % ry.len()] as i32);
                    for _ in 0..REPS {
                        sends.push(dst.immediate_send_with_tag(sc, &sbuf[..], TAG));
                    }
                }
                let mut recvs = Vec::new();
                for (n, b) in rbufs.iter_mut().enumerate() {
                    let src = w.process_at_rank(sources[n / REPS] as i32);
                    recvs.push(src.immediate_receive_into_with_tag(sc, &mut b[..], TAG));
                }
                for s in sends {
                    s.wait();
                }
                for r in recvs {
                    r.wait();
                }
            });
            let t = t0.elapsed().as_secs_f64();
            let mine = if l.node[me] == x || l.node[me] == y {
                t
            } else {
                0.0
            };
            let mut slowest = 0.0;
            w.all_reduce_into(&mine, &mut slowest, SystemOperation::max());
            trials.push((sx.len() * REPS * BYTES) as f64 / slowest);
        }
        if trials.is_empty() {
            break;
        }
        out.push(Injection {
            nodes: [l.node_names[x].clone(), l.node_names[y].clone()],
            senders: sx.len(),
            message_bytes: BYTES,
            bandwidth: Summary::of(&trials),
        });
    }
    out
}

/// The engine's path between ranks of one node, per element type: every node's ranks
/// pass their column slabs on to the next rank of the node at once (each rank sends
/// and receives all it holds, one contiguous package, through the shared window).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WindowPath {
    pub(crate) element: &'static str,
    pub(crate) ranks_per_node: usize,
    /// Bytes each rank receives from the others per execution.
    pub(crate) bytes_per_rank: f64,
    /// Received bytes per second per rank (slowest rank of the node), over ranks.
    pub(crate) bandwidth: Summary,
    /// Seconds per byte packing into the window, over ranks.
    pub(crate) pack_per_byte: Summary,
    /// Seconds per byte unpacking from the window, over ranks.
    pub(crate) unpack_per_byte: Summary,
}

/// Column slabs (contiguous in column-major storage), each to the next rank: every
/// byte a rank holds crosses the path, as one contiguous package.
fn slabs(n: usize, q: usize) -> Result<(Layout, Layout)> {
    let w = n.div_ceil(q);
    let src = BlockCyclic::new(BlockCyclicSpec::new(n, n, n, w, 1, q))?;
    let mut shifted = BlockCyclicSpec::new(n, n, n, w, 1, q);
    shifted.csrc = 1;
    let dst = BlockCyclic::new(shifted)?;
    Ok((src.into(), dst.into()))
}

/// Executes `plan` once untimed and `reps` times timed: this rank's wall times and
/// execution statistics.
fn run_plan<T: Element>(
    t: &mut dyn Transport,
    plan: &mut ReshufflePlan,
    b: &[T],
    a: &mut [T],
    alpha: T,
    reps: usize,
) -> Result<Vec<(f64, copr::engine::ExecStats)>> {
    let mut out = Vec::new();
    for i in 0..=reps {
        let t0 = Instant::now();
        plan.execute(
            t,
            &mut [Job {
                alpha,
                beta: T::zero(),
                source: b,
                target: a,
            }],
        )?;
        if i > 0 {
            out.push((t0.elapsed().as_secs_f64(), plan.last_stats()));
        }
    }
    Ok(out)
}

fn window_one<T: Element>(
    w: &SimpleCommunicator,
    node: &mut MpiTransport,
    node_comm: &SimpleCommunicator,
    name: &'static str,
) -> Result<Option<WindowPath>> {
    let q = node.size();
    // every rank takes part in the gathers below, also on nodes of one rank
    let mut mine = [0.0f64; 3];
    let n = ((ENGINE_ELEMENTS * q) as f64).sqrt() as usize;
    if q >= 2 {
        let (src, dst) = slabs(n, q)?;
        let mut plan = ReshufflePlan::new(
            node,
            vec![Transform::new(src, dst, Op::Identity).with_relabeling(Relabeling::Off)],
        )?;
        let (lb, la) = plan.local_lens(0);
        let b = vec![T::one(); lb];
        let mut a = vec![T::zero(); la];
        let runs = run_plan(node, &mut plan, &b, &mut a, T::one(), 3)?;
        let recv_bytes = la as f64 * T::BYTES as f64;
        let mut times = Vec::new();
        let (mut pack, mut unpack) = (Vec::new(), Vec::new());
        for (t, s) in runs {
            let mut slowest = 0.0;
            node_comm.all_reduce_into(&t, &mut slowest, SystemOperation::max());
            times.push(slowest);
            pack.push(s.pack / recv_bytes);
            unpack.push(s.unpack / recv_bytes);
        }
        mine = [recv_bytes / median(&times), median(&pack), median(&unpack)];
    }
    let p = w.size() as usize;
    let mut all = vec![0.0f64; 3 * p];
    w.all_gather_into(&mine[..], &mut all[..]);
    let col =
        |k: usize| -> Vec<f64> { all.chunks(3).filter(|c| c[0] > 0.0).map(|c| c[k]).collect() };
    let bw = col(0);
    if bw.is_empty() {
        return Ok(None);
    }
    let mut q_max = 0u64;
    w.all_reduce_into(&(q as u64), &mut q_max, SystemOperation::max());
    let per_rank = ENGINE_ELEMENTS as f64 * T::BYTES as f64;
    Ok(Some(WindowPath {
        element: name,
        ranks_per_node: q_max as usize,
        bytes_per_rank: per_rank,
        bandwidth: Summary::of(&bw),
        pack_per_byte: Summary::of(&col(1)),
        unpack_per_byte: Summary::of(&col(2)),
    }))
}

/// The shared-window path for each element type (collective; every rank gets it).
pub(crate) fn window_paths(
    w: &SimpleCommunicator,
    l: &RankMap,
    start: Instant,
    until: f64,
) -> Result<Vec<WindowPath>> {
    let me = w.rank() as usize;
    let node_comm = w
        .split_by_color(Color::with_value(l.node[me] as i32))
        .expect("every rank has a colour");
    let mut t = MpiTransport::new(node_comm.duplicate());
    let mut out = Vec::new();
    // f64 always (the config's intra-node cap), the others while time is left
    out.extend(window_one::<f64>(w, &mut t, &node_comm, "f64")?);
    if proceed(w, start, until, false) {
        out.extend(window_one::<f32>(w, &mut t, &node_comm, "f32")?);
    }
    if proceed(w, start, until, false) {
        out.extend(window_one::<Complex32>(w, &mut t, &node_comm, "c32")?);
    }
    if proceed(w, start, until, false) {
        out.extend(window_one::<Complex64>(w, &mut t, &node_comm, "c64")?);
    }
    Ok(out)
}

/// Seconds per byte of the engine's local kernels for one element type (median over
/// ranks, all ranks measuring at once as in a reshuffle).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LocalThroughput {
    pub(crate) element: &'static str,
    pub(crate) bytes: usize,
    /// A ← B between different block sizes.
    pub(crate) copy: Summary,
    /// A ← 2·B.
    pub(crate) scale: Summary,
    /// A ← Bᵀ.
    pub(crate) transpose: Summary,
    /// A ← Bᴴ (complex types only).
    pub(crate) conj_transpose: Option<Summary>,
}

/// Seconds per byte of one local reshuffle on this rank alone (1 in-process rank):
/// the median of three executions' local-copy time.
fn local_one<T: Element>(op: Op, alpha: T) -> Result<f64> {
    let n = (ENGINE_ELEMENTS as f64).sqrt() as usize;
    let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(n, n, 128, 128, 1, 1))?.into();
    let dst: Layout = BlockCyclic::new(BlockCyclicSpec::new(n, n, 96, 96, 1, 1))?.into();
    let r = run_in_process(1, |t| -> Result<f64> {
        let mut plan = ReshufflePlan::new(
            t,
            vec![Transform::new(src.clone(), dst.clone(), op).with_relabeling(Relabeling::Off)],
        )?;
        let (lb, la) = plan.local_lens(0);
        let b = vec![T::one(); lb];
        let mut a = vec![T::zero(); la];
        let runs = run_plan(t, &mut plan, &b, &mut a, alpha, 3)?;
        let local: Vec<f64> = runs.iter().map(|(_, s)| s.local).collect();
        Ok(median(&local) / (n * n * T::BYTES) as f64)
    })?;
    r.into_iter().next().expect("one rank")
}

fn local_type<T: Element>(
    w: &SimpleCommunicator,
    name: &'static str,
    complex: bool,
) -> Result<LocalThroughput> {
    let two = T::one().add(T::one());
    let mine = [
        local_one::<T>(Op::Identity, T::one())?,
        local_one::<T>(Op::Identity, two)?,
        local_one::<T>(Op::Transpose, T::one())?,
        if complex {
            local_one::<T>(Op::ConjTranspose, T::one())?
        } else {
            0.0
        },
    ];
    let p = w.size() as usize;
    let mut all = vec![0.0f64; 4 * p];
    w.all_gather_into(&mine[..], &mut all[..]);
    let col = |k: usize| Summary::of(&all.chunks(4).map(|c| c[k]).collect::<Vec<_>>());
    let n = (ENGINE_ELEMENTS as f64).sqrt() as usize;
    Ok(LocalThroughput {
        element: name,
        bytes: n * n * T::BYTES,
        copy: col(0),
        scale: col(1),
        transpose: col(2),
        conj_transpose: complex.then(|| col(3)),
    })
}

/// The local throughput of every element type (collective; every rank gets it).
///
/// f64 always (the validation's copy floor and the transform coefficients), c64 (the
/// conjugation coefficient), f32 and c32 while rank 0 sees time before `until`.
pub(crate) fn local_throughput(
    w: &SimpleCommunicator,
    start: Instant,
    until: f64,
) -> Result<Vec<LocalThroughput>> {
    let mut out = vec![local_type::<f64>(w, "f64", false)?];
    if proceed(w, start, until, false) {
        out.push(local_type::<Complex64>(w, "c64", true)?);
    }
    if proceed(w, start, until, false) {
        out.push(local_type::<f32>(w, "f32", false)?);
    }
    if proceed(w, start, until, false) {
        out.push(local_type::<Complex32>(w, "c32", true)?);
    }
    Ok(out)
}
