//! The time a program of point-to-point messages takes under a fluid network model,
//! step by step: each task runs its operations in order (post sends and receives,
//! wait for all it posted), a message starts when both its send and its receive are
//! posted (the rendezvous of large MPI messages), waits its route's latency, then
//! shares the links of its route max-min fairly with the messages crossing them at
//! that moment (weighted as [`RoundModel`] says), the shares recomputed whenever a
//! message starts or ends. The program ends when its last task ends.
//!
//! Where [`crate::round_time`] prices one round of every message at once, this prices
//! an algorithm's stages in their order, with tasks running ahead of each other
//! between stages as they do in a simulator or on a machine:
//! [`Program::algorithm`] writes the grid algorithms' programs message for message as
//! `benches/simgrid/gridalg.c` sends them (the preskew and shifts of Cannon; the
//! binomial or pipelined-ring broadcasts and reductions of Fox, Snyder and SUMMA, a
//! reduction receiving its children one after another).
//!
//! Messages follow the machine's link model ([`MapMachine::link_model`]): on a fat
//! tree routed ECMP, one bundle of equal-cost links per hop (a bundle of `k` links
//! has `k` links' bandwidth), as the machine's SimGrid platform routes them
//! ([`crate::simgrid`]); elsewhere the single path. Weights and latencies are those of
//! [`crate::round_time`] (with [`RoundModel::simgrid_like`], SimGrid's SMPI network
//! model: a message's weight on its links is `1 / Σ_route (latency + weight-S /
//! bandwidth)`, and it starts after its route's latency).
//! Messages inside a node take `bytes / loopback_bandwidth`, unshared and without
//! latency.

use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Instant;

use copr::error::Result;
use copr::lap::Perm;

use super::algorithms::{Algorithm, AlgorithmSpec, Collective};
use super::fluid::{capacities, Least, MaxMin, RoundModel};
use super::machine::MapMachine;
use super::pattern::Pattern;

/// One operation of a task's program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Post a send of `bytes` to task `to` on channel `chan`.
    Send { to: u32, chan: u32, bytes: u64 },
    /// Post a receive from task `from` on channel `chan`.
    Recv { from: u32, chan: u32 },
    /// Wait until everything this task posted has completed.
    Wait,
}

/// A program of point-to-point messages: per task, its operations in order. The
/// `k`-th send from `a` to `b` on a channel matches the `k`-th receive of `b` from `a`
/// on that channel (MPI's order of messages between two ranks of one communicator
/// and tag; a channel stands for both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    tasks: Vec<Vec<Op>>,
}

/// Channels of the grid algorithms' programs (tags and communicators of `gridalg.c`).
const CHAN_A: u32 = 0;
const CHAN_B: u32 = 1;
const CHAN_ROW: u32 = 2;
const CHAN_COL: u32 = 3;

/// Segments of the pipelined ring (bytes), as `gridalg.c`.
const SEGMENT: u64 = 65536;

impl Program {
    /// A program from its tasks' operations.
    #[cfg(test)]
    pub(crate) fn from_tasks(tasks: Vec<Vec<Op>>) -> Self {
        Self { tasks }
    }

    /// Number of tasks.
    pub fn tasks(&self) -> usize {
        self.tasks.len()
    }

    /// Number of messages (sends).
    pub fn messages(&self) -> usize {
        self.tasks
            .iter()
            .flatten()
            .filter(|o| matches!(o, Op::Send { .. }))
            .count()
    }

    /// The program of one multiplication by `s`'s algorithm, as `gridalg.c` runs it
    /// (module docs; task `t = i·cols + j` holds block `(i, j)`); its messages are those
    /// of [`Pattern::algorithm`], in their order.
    ///
    /// ```
    /// use copr_mapping::{Algorithm, AlgorithmSpec, Collective, Program};
    /// let s = AlgorithmSpec { algorithm: Algorithm::Cannon, rows: 4, cols: 4, block_bytes: 1 << 20, collective: Collective::Binomial };
    /// let p = Program::algorithm(&s).unwrap();
    /// // preskew: 12 blocks of A and 12 of B move; then 3 shifts of 16 + 16 blocks
    /// assert_eq!(p.messages(), 24 + 3 * 32);
    /// ```
    ///
    /// # Errors
    /// As [`Pattern::algorithm`] (a non-square grid where the algorithm needs one, too
    /// many messages).
    pub fn algorithm(s: &AlgorithmSpec) -> Result<Program> {
        // the same checks as the pattern's
        Pattern::algorithm(s)?;
        let (r, c) = (s.rows, s.cols);
        let at = |x: isize, y: isize| -> u32 {
            let (ri, ci) = (r as isize, c as isize);
            ((((x % ri) + ri) % ri) * ci + ((y % ci) + ci) % ci) as u32
        };
        let mut tasks = Vec::with_capacity(r * c);
        for rank in 0..r * c {
            let (i, j) = ((rank / c) as isize, (rank % c) as isize);
            let me = rank as u32;
            let mut ops = Vec::new();
            let b = s.block_bytes;
            let q = r as isize;
            match s.algorithm {
                Algorithm::Cannon => {
                    if i % q != 0 {
                        ops.push(Op::Recv {
                            from: at(i, j + i),
                            chan: CHAN_A,
                        });
                        ops.push(send(at(i, j - i), CHAN_A, b));
                    }
                    if j % q != 0 {
                        ops.push(Op::Recv {
                            from: at(i + j, j),
                            chan: CHAN_B,
                        });
                        ops.push(send(at(i - j, j), CHAN_B, b));
                    }
                    ops.push(Op::Wait);
                    for _ in 1..q {
                        ops.push(Op::Recv {
                            from: at(i, j + 1),
                            chan: CHAN_A,
                        });
                        ops.push(Op::Recv {
                            from: at(i + 1, j),
                            chan: CHAN_B,
                        });
                        ops.push(send(at(i, j - 1), CHAN_A, b));
                        ops.push(send(at(i - 1, j), CHAN_B, b));
                        ops.push(Op::Wait);
                    }
                }
                Algorithm::Fox | Algorithm::Snyder => {
                    let snyder = s.algorithm == Algorithm::Snyder;
                    if snyder {
                        exchange(&mut ops, me, at(j, i), at(j, i), CHAN_B, b);
                    }
                    let row = |x: usize| at(i, x as isize);
                    for k in 0..q {
                        let root = ((i + k) % q) as usize;
                        let at_j = (c, j as usize);
                        tree(
                            &mut ops,
                            s.collective,
                            at_j,
                            root,
                            snyder,
                            &row,
                            (b, CHAN_ROW),
                        );
                        if k + 1 < q {
                            exchange(&mut ops, me, at(i - 1, j), at(i + 1, j), CHAN_B, b);
                        }
                    }
                }
                Algorithm::Summa => {
                    let row = |x: usize| at(i, x as isize);
                    let col = |x: usize| at(x as isize, j);
                    for k in 0..r.max(c) {
                        if k < c {
                            let at_j = (c, j as usize);
                            tree(&mut ops, s.collective, at_j, k, false, &row, (b, CHAN_ROW));
                        }
                        if k < r {
                            let at_i = (r, i as usize);
                            tree(&mut ops, s.collective, at_i, k, false, &col, (b, CHAN_COL));
                        }
                    }
                }
            }
            tasks.push(ops);
        }
        Ok(Program { tasks })
    }
}

fn send(to: u32, chan: u32, bytes: u64) -> Op {
    Op::Send { to, chan, bytes }
}

/// `gridalg.c`'s `exchange`: receive from `from`, send to `to` (each skipped when it
/// is this task), wait.
fn exchange(ops: &mut Vec<Op>, me: u32, to: u32, from: u32, chan: u32, bytes: u64) {
    if from != me {
        ops.push(Op::Recv { from, chan });
    }
    if to != me {
        ops.push(send(to, chan, bytes));
    }
    ops.push(Op::Wait);
}

/// `gridalg.c`'s `tree` on a communicator of `q` tasks (`task(x)`: the task at
/// position `x`), this task at position `me`, rooted at `root`, of blocks of `bytes`
/// on channel `chan`.
fn tree(
    ops: &mut Vec<Op>,
    tree: Collective,
    (q, me): (usize, usize),
    root: usize,
    reduce: bool,
    task: &dyn Fn(usize) -> u32,
    (bytes, chan): (u64, u32),
) {
    if q == 1 {
        return;
    }
    let v = (me + q - root) % q;
    let abs = |x: usize| task((x + root) % q);
    match tree {
        Collective::Ring => {
            let (prev, next) = if reduce {
                (v.checked_add(1), v.checked_sub(1))
            } else {
                (v.checked_sub(1), v.checked_add(1))
            };
            let prev = prev.filter(|&x| x < q);
            let next = next.filter(|&x| x < q);
            let nseg = bytes.div_ceil(SEGMENT).max(1);
            for s in 0..nseg {
                let len = bytes.saturating_sub(s * SEGMENT).min(SEGMENT);
                if let Some(p) = prev {
                    ops.push(Op::Recv { from: abs(p), chan });
                    ops.push(Op::Wait);
                }
                if let Some(n) = next {
                    ops.push(send(abs(n), chan, len));
                }
            }
            ops.push(Op::Wait);
        }
        Collective::Binomial => {
            let mut low = 1;
            while low < q && v & low == 0 {
                low <<= 1;
            }
            if !reduce {
                if v > 0 {
                    ops.push(Op::Recv {
                        from: abs(v - low),
                        chan,
                    });
                    ops.push(Op::Wait);
                }
                let mut m = low >> 1;
                while m > 0 {
                    if v + m < q {
                        ops.push(send(abs(v + m), chan, bytes));
                    }
                    m >>= 1;
                }
                ops.push(Op::Wait);
            } else {
                let mut m = 1;
                while m < low && m < q {
                    if v + m < q {
                        ops.push(Op::Recv {
                            from: abs(v + m),
                            chan,
                        });
                        ops.push(Op::Wait);
                    }
                    m <<= 1;
                }
                if v > 0 {
                    ops.push(send(abs(v - low), chan, bytes));
                    ops.push(Op::Wait);
                }
            }
        }
    }
}

/// A message on its way.
struct Flow {
    src: u32,
    dst: u32,
    /// Bytes left.
    rem: f64,
    /// Its links: `links[from..to]`.
    from: usize,
    to: usize,
}

/// Messages waiting for their other side, per `(sender, receiver, channel)`.
#[derive(Default)]
struct Queue {
    /// Sends posted before their receives (their bytes).
    sends: VecDeque<u64>,
    /// Receives posted before their sends.
    recvs: u32,
}

/// The simulation's state.
struct Run<'a> {
    prog: &'a Program,
    m: &'a MapMachine,
    map: &'a Perm,
    model: &'a RoundModel,
    inv: Vec<f64>,
    lat: Vec<f64>,
    pc: Vec<usize>,
    pending: Vec<u32>,
    finish: Vec<f64>,
    queues: HashMap<(u32, u32, u32), Queue>,
    flows: Vec<Flow>,
    links: Vec<u32>,
    w: Vec<f64>,
    rate: Vec<f64>,
    /// Flows in their latency, by the time they start to share links.
    waiting: BinaryHeap<Least>,
    /// Flows sharing links (or on a loopback at a fixed rate).
    active: Vec<u32>,
    on: Vec<Vec<u32>>,
    changed: bool,
}

impl Run<'_> {
    /// Runs task `r` from time `t` until it waits or ends.
    fn advance(&mut self, r: usize, t: f64) {
        let ops = &self.prog.tasks[r];
        while self.pc[r] < ops.len() {
            match ops[self.pc[r]] {
                Op::Send { to, chan, bytes } => {
                    self.pending[r] += 1;
                    let q = self.queues.entry((r as u32, to, chan)).or_default();
                    if q.recvs > 0 {
                        q.recvs -= 1;
                        self.start(r as u32, to, bytes, t);
                    } else {
                        q.sends.push_back(bytes);
                    }
                }
                Op::Recv { from, chan } => {
                    self.pending[r] += 1;
                    let q = self.queues.entry((from, r as u32, chan)).or_default();
                    match q.sends.pop_front() {
                        Some(bytes) => self.start(from, r as u32, bytes, t),
                        None => q.recvs += 1,
                    }
                }
                Op::Wait => {
                    if self.pending[r] > 0 {
                        return;
                    }
                }
            }
            self.pc[r] += 1;
        }
        if self.finish[r].is_nan() {
            self.finish[r] = t;
        }
    }

    /// Starts a message of `bytes` from task `src` to task `dst` at time `t`.
    fn start(&mut self, src: u32, dst: u32, bytes: u64, t: f64) {
        let a = self.m.node_of_slot(self.map.apply(src as usize));
        let b = self.m.node_of_slot(self.map.apply(dst as usize));
        let from = self.links.len();
        if a != b {
            let links = &mut self.links;
            self.m.for_group_route(a, b, |l| links.push(l as u32));
        }
        let to = self.links.len();
        let route = &self.links[from..to];
        let f = self.flows.len() as u32;
        let latency = self.model.start(route, &self.lat);
        self.w.push(self.model.weight(route, &self.inv, &self.lat));
        self.rate.push(if a == b {
            self.model.loopback_bandwidth
        } else {
            0.0
        });
        self.flows.push(Flow {
            src,
            dst,
            rem: bytes as f64,
            from,
            to,
        });
        self.waiting.push(Least(t + latency, f));
    }

    /// Flow `f` starts to share its links.
    fn activate(&mut self, f: u32) {
        let x = &self.flows[f as usize];
        for &l in &self.links[x.from..x.to] {
            self.on[l as usize].push(f);
        }
        self.active.push(f);
        self.changed = true;
    }

    /// Flow `f` has arrived at time `t`.
    fn complete(&mut self, f: u32, t: f64) {
        let (src, dst, from, to) = {
            let x = &self.flows[f as usize];
            (x.src as usize, x.dst as usize, x.from, x.to)
        };
        for &l in &self.links[from..to] {
            let v = &mut self.on[l as usize];
            if let Some(i) = v.iter().position(|&g| g == f) {
                v.swap_remove(i);
            }
        }
        self.changed = true;
        for r in [src, dst] {
            self.pending[r] -= 1;
            if self.pending[r] == 0 {
                self.advance(r, t);
            }
        }
    }
}

/// Events this close in time are taken together: a thousandth of the time the
/// program's largest message takes alone on the fastest link.
fn merge_window(prog: &Program, inv: &[f64]) -> f64 {
    let most = prog
        .tasks
        .iter()
        .flatten()
        .filter_map(|o| match o {
            Op::Send { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let fastest = inv
        .iter()
        .copied()
        .filter(|&x| x > 0.0)
        .fold(f64::INFINITY, f64::min);
    if fastest.is_finite() {
        1e-3 * most as f64 * fastest
    } else {
        0.0
    }
}

/// Seconds until the last task of `prog` ends when task `t` runs on slot
/// `map.apply(t)` of `m` (module docs): `f64::INFINITY` if some task never ends (a
/// receive without its send, or a link of no bandwidth). Starts and arrivals within
/// a thousandth of the time the largest message takes alone on the fastest link are
/// taken together (a message ending that much early): fewer rate computations.
///
/// # Panics
/// If `prog`, `map` and `m` differ in their numbers of tasks and slots.
///
/// # Complexity
/// `O(E·(A·h + L·log L))` for `E` distinct start and arrival times, at most `A`
/// messages under way at once over `h` links each, `L` links.
pub fn program_time(prog: &Program, m: &MapMachine, map: &Perm, model: &RoundModel) -> f64 {
    program_time_until(prog, m, map, model, (None, f64::INFINITY)).unwrap_or(f64::INFINITY)
}

/// [`program_time`], given up (`None`) when the wall clock passes `deadline`, and
/// `f64::INFINITY` as soon as the simulated time passes `cutoff` (the program cannot
/// end before).
///
/// # Panics
/// As [`program_time`].
pub(crate) fn program_time_until(
    prog: &Program,
    m: &MapMachine,
    map: &Perm,
    model: &RoundModel,
    (deadline, cutoff): (Option<Instant>, f64),
) -> Option<f64> {
    assert_eq!(
        prog.tasks(),
        map.len(),
        "a program and a mapping of its tasks"
    );
    let n = prog.tasks();
    let inv = m.link_group_inv_bandwidths();
    let cap = capacities(m);
    let lat = m.link_group_latencies();
    let nl = cap.len();
    let mut run = Run {
        prog,
        m,
        map,
        model,
        inv,
        lat,
        pc: vec![0; n],
        pending: vec![0; n],
        finish: vec![f64::NAN; n],
        queues: HashMap::new(),
        flows: Vec::new(),
        links: Vec::new(),
        w: Vec::new(),
        rate: Vec::new(),
        waiting: BinaryHeap::new(),
        active: Vec::new(),
        on: vec![Vec::new(); nl],
        changed: true,
    };
    for r in 0..n {
        run.advance(r, 0.0);
    }
    let all: Vec<u32> = (0..nl as u32).collect();
    let mut fill = MaxMin::new(nl, 0);
    let tau = merge_window(prog, &run.inv);
    let mut t = 0f64;
    let mut done: Vec<u32> = Vec::new();
    let mut events = 0u32;
    loop {
        if events % 256 == 0 && deadline.is_some_and(|d| crate::clock::now() >= d) {
            return None;
        }
        events = events.wrapping_add(1);
        // flows whose latency is over start to share
        while let Some(&Least(s, f)) = run.waiting.peek() {
            if s > t + tau {
                break;
            }
            run.waiting.pop();
            run.activate(f);
        }
        if run.changed {
            let (links, flows) = (&run.links, &run.flows);
            let route = |f: usize| &links[flows[f].from..flows[f].to];
            fill.rates(&cap, &run.on, &all, &route, &run.w, &mut run.rate);
            run.changed = false;
        }
        // the next event: an arrival, or a latency's end
        let mut next = run.waiting.peek().map_or(f64::INFINITY, |x| x.0);
        for &f in &run.active {
            let x = &run.flows[f as usize];
            let r = run.rate[f as usize];
            if r > 0.0 {
                next = next.min(t + x.rem / r);
            }
        }
        if !next.is_finite() {
            break;
        }
        if next > cutoff {
            return Some(f64::INFINITY);
        }
        let dt = next - t;
        t = next;
        done.clear();
        let mut k = 0;
        while k < run.active.len() {
            let f = run.active[k];
            let r = run.rate[f as usize];
            let x = &mut run.flows[f as usize];
            x.rem -= r * dt;
            if x.rem <= 1e-6 + 1e-12 * r * t + r * tau {
                run.active.swap_remove(k);
                done.push(f);
            } else {
                k += 1;
            }
        }
        // in a fixed order: the flows' start order
        done.sort_unstable();
        for &f in &done {
            run.complete(f, t);
        }
    }
    Some(run.finish.iter().fold(
        0f64,
        |a, &x| if x.is_nan() { f64::INFINITY } else { a.max(x) },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of 4 nodes, one slot each, and a program of one message of 1000 bytes
    /// from task 0 to task 2.
    fn lone_message() -> (MapMachine, Program) {
        let m = crate::torus_machine(vec![4], None, None, 1).unwrap();
        let p = Program::from_tasks(vec![
            vec![send(2, 0, 1000), Op::Wait],
            vec![],
            vec![Op::Recv { from: 0, chan: 0 }, Op::Wait],
            vec![],
        ]);
        (m, p)
    }

    #[test]
    fn a_timing_stops_at_its_cutoff_and_its_deadline() {
        let (m, p) = lone_message();
        let model = RoundModel::simgrid_like();
        let id = Perm::identity(4);
        let t = program_time(&p, &m, &id, &model);
        let until = |d, cut| program_time_until(&p, &m, &id, &model, (d, cut));
        assert_eq!(until(None, 2.0 * t), Some(t));
        assert_eq!(until(None, 0.5 * t), Some(f64::INFINITY));
        assert_eq!(until(Some(crate::clock::now()), f64::INFINITY), None);
    }

    #[test]
    fn a_lone_message_takes_its_latency_and_its_bytes_over_the_bandwidth() {
        let (m, p) = lone_message();
        let inv = m.link_inv_bandwidths()[0];
        let lat = m.link_group_latencies()[0];
        let t = program_time(&p, &m, &Perm::identity(4), &RoundModel::simgrid_like());
        let want = 2.0 * lat + 1000.0 * inv;
        assert!((t - want).abs() <= 1e-9 * want, "{t} {want}");
    }

    fn fat_tree_k4() -> MapMachine {
        let net = crate::bundles::test_fat_tree(4);
        MapMachine::network(net, None, Default::default(), 1).unwrap()
    }

    #[test]
    fn two_stages_on_a_fat_tree_worked_out_by_hand() {
        // k = 4, one task per host: hosts 0, 1 under one edge switch, 2, 3 under the
        // other of pod 0. Stage 1: tasks 0 and 2 send X to task 1 (0's route: two host
        // links, 0.2 µs; 2's: its host link, the edge switch's bundle up, the bundle
        // down, 1's host link, 0.5 µs). Host 1's link is busy from 0.2 µs on with 2X
        // bytes (A alone until 0.5 µs, then both at half, then 2's rest alone), so task
        // 1 has both at 0.2 µs + 2X/B. Stage 2: task 1 sends X to task 3 (0.5 µs, alone):
        // 0.7 µs + 3X/B. Fair shares weighted or not, the host link is the bottleneck.
        let m = fat_tree_k4();
        assert_eq!(m.link_model(), crate::LinkLoadModel::Ecmp);
        let x = 4_000_000u64;
        let mut tasks = vec![Vec::new(); 16];
        tasks[0] = vec![send(1, 0, x), Op::Wait];
        tasks[2] = vec![send(1, 0, x), Op::Wait];
        tasks[1] = vec![
            Op::Recv { from: 0, chan: 0 },
            Op::Recv { from: 2, chan: 0 },
            Op::Wait,
            send(3, 0, x),
            Op::Wait,
        ];
        tasks[3] = vec![Op::Recv { from: 1, chan: 0 }, Op::Wait];
        let p = Program::from_tasks(tasks);
        let id = Perm::identity(16);
        for model in [RoundModel::default(), RoundModel::simgrid_like()] {
            let lat = if model.latency { 7e-7 } else { 0.0 };
            let want = lat + 3.0 * x as f64 / 1.25e10;
            let t = program_time(&p, &m, &id, &model);
            assert!((t - want).abs() <= 1e-4 * want, "{t:e} against {want:e}");
        }
        // one round of the same messages, all at once (no latency): host 1's link and
        // host 3's in parallel, 2X/B
        let mut once = vec![Vec::new(); 16];
        once[0] = vec![send(1, 0, x), Op::Wait];
        once[2] = vec![send(1, 0, x), Op::Wait];
        once[1] = vec![
            Op::Recv { from: 0, chan: 0 },
            Op::Recv { from: 2, chan: 0 },
            send(3, 0, x),
            Op::Wait,
        ];
        once[3] = vec![Op::Recv { from: 1, chan: 0 }, Op::Wait];
        let t = program_time(&Program::from_tasks(once), &m, &id, &RoundModel::default());
        let want = 2.0 * x as f64 / 1.25e10;
        assert!((t - want).abs() <= 1e-4 * want, "{t:e} against {want:e}");
    }

    #[test]
    fn a_send_waits_for_its_receive() {
        // ring of 3, one task per node: task 1 posts its receive from 0 only after a
        // message from 2 has arrived, so 0's message starts after 2's arrives
        let m = crate::torus_machine(vec![3], None, None, 1).unwrap();
        let x = 10_000;
        let p = Program::from_tasks(vec![
            vec![send(1, 0, x), Op::Wait],
            vec![
                Op::Recv { from: 2, chan: 0 },
                Op::Wait,
                Op::Recv { from: 0, chan: 0 },
                Op::Wait,
            ],
            vec![send(1, 0, x), Op::Wait],
        ]);
        let one = x as f64 * m.link_inv_bandwidths()[0] + m.link_group_latencies()[0];
        let t = program_time(
            &p,
            &m,
            &Perm::identity(3),
            &RoundModel {
                latency: true,
                ..RoundModel::default()
            },
        );
        assert!(
            (t - 2.0 * one).abs() <= 1e-4 * t,
            "{t:e} against {:e}",
            2.0 * one
        );
    }

    #[test]
    fn the_algorithms_send_their_patterns_messages() {
        for a in Algorithm::ALL {
            for collective in Collective::ALL {
                let s = AlgorithmSpec {
                    algorithm: a,
                    rows: 4,
                    cols: 4,
                    block_bytes: 1000,
                    collective,
                };
                let prog = Program::algorithm(&s).unwrap();
                let pat = Pattern::algorithm(&s).unwrap();
                // bytes per ordered pair, from the program and from the pattern
                let mut got = std::collections::BTreeMap::new();
                for (t, ops) in prog.tasks.iter().enumerate() {
                    for o in ops {
                        if let Op::Send { to, bytes, .. } = o {
                            *got.entry((t as u32, *to)).or_insert(0u64) += bytes;
                        }
                    }
                }
                let mut want = std::collections::BTreeMap::new();
                for e in pat.edges() {
                    *want.entry((e.src, e.dst)).or_insert(0u64) += e.bytes;
                }
                assert_eq!(got, want, "{} {}", a.name(), collective.name());
                // and it runs to its end
                let m = crate::torus_machine(vec![2, 2], None, None, 4).unwrap();
                let t = program_time(&prog, &m, &Perm::identity(16), &RoundModel::default());
                assert!(t.is_finite() && t > 0.0, "{} {t}", a.name());
            }
        }
    }

    #[test]
    fn a_receive_never_posted_never_ends() {
        let m = crate::torus_machine(vec![2], None, None, 1).unwrap();
        let p = Program::from_tasks(vec![vec![send(1, 0, 10), Op::Wait], vec![]]);
        let t = program_time(&p, &m, &Perm::identity(2), &RoundModel::default());
        assert!(t.is_infinite());
    }
}
