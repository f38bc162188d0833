//! Engine test cases shared by the in-process tests (`tests/engine.rs`) and the MPI test
//! program (`tests/engine_mpi.rs`): random batches, a serial per-element reference, and
//! the collective error scenarios. Every rank checks its own part of A element by
//! element.
#![allow(dead_code)]

use copr::engine::{
    reshuffle, Element, ExecStats, Job, PlanCache, Relabeling, ReshufflePlan, Streaming,
    TargetContents, Transform,
};
use copr::lap::Perm;
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
use copr::transport::Transport;
use num_complex::{Complex32, Complex64};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common::random_layout;

/// SplitMix64: a deterministic value for every (salt, i, j).
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn h(salt: u64, i: usize, j: usize) -> u64 {
    mix(salt ^ mix((i as u64) << 32 ^ j as u64))
}

/// Element types with test values.
pub(crate) trait TestElem: Element {
    /// A finite value from a hash.
    fn from_hash(h: u64) -> Self;
    /// What β = 0 targets are filled with (NaN for floating types).
    fn garbage() -> Self;
    /// Marks buffer entries outside every block; they must never change.
    fn sentinel() -> Self;
    /// Equality that treats two NaNs as equal.
    fn same(a: Self, b: Self) -> bool;
}

fn small(h: u64) -> f64 {
    (h % 2001) as f64 / 8.0 - 125.0
}

macro_rules! float_elem {
    ($t:ty) => {
        impl TestElem for $t {
            fn from_hash(h: u64) -> Self {
                small(h) as $t
            }
            fn garbage() -> Self {
                <$t>::NAN
            }
            fn sentinel() -> Self {
                -7777.0
            }
            fn same(a: Self, b: Self) -> bool {
                a == b || (a.is_nan() && b.is_nan())
            }
        }
    };
}
float_elem!(f32);
float_elem!(f64);

impl TestElem for Complex32 {
    fn from_hash(h: u64) -> Self {
        Complex32::new(small(h) as f32, small(mix(h)) as f32)
    }
    fn garbage() -> Self {
        Complex32::new(f32::NAN, f32::NAN)
    }
    fn sentinel() -> Self {
        Complex32::new(-7777.0, 1.0)
    }
    fn same(a: Self, b: Self) -> bool {
        f32::same(a.re, b.re) && f32::same(a.im, b.im)
    }
}
impl TestElem for Complex64 {
    fn from_hash(h: u64) -> Self {
        Complex64::new(small(h), small(mix(h)))
    }
    fn garbage() -> Self {
        Complex64::new(f64::NAN, f64::NAN)
    }
    fn sentinel() -> Self {
        Complex64::new(-7777.0, 1.0)
    }
    fn same(a: Self, b: Self) -> bool {
        f64::same(a.re, b.re) && f64::same(a.im, b.im)
    }
}
impl TestElem for i32 {
    fn from_hash(h: u64) -> Self {
        (h % 2001) as i32 - 1000
    }
    fn garbage() -> Self {
        0x5a5a_5a5a
    }
    fn sentinel() -> Self {
        -7777
    }
    fn same(a: Self, b: Self) -> bool {
        a == b
    }
}
impl TestElem for i64 {
    fn from_hash(h: u64) -> Self {
        (h % 2001) as i64 - 1000
    }
    fn garbage() -> Self {
        0x5a5a_5a5a_5a5a_5a5a
    }
    fn sentinel() -> Self {
        -7777
    }
    fn same(a: Self, b: Self) -> bool {
        a == b
    }
}

/// α or β by choice: 0 → 0, 1 → 1, otherwise a hashed value.
fn scalar<T: TestElem>(choice: u8, salt: u64) -> T {
    match choice {
        0 => T::zero(),
        1 => T::one(),
        _ => T::from_hash(mix(salt)),
    }
}

/// One transform of a random case, with its scalar choices.
#[derive(Debug, Clone)]
pub(crate) struct PairCase {
    pub(crate) transform: Transform,
    pub(crate) alpha: u8,
    pub(crate) beta: u8,
}

/// A random batch on at most `max_ranks` ranks.
pub(crate) fn random_batch(
    seed: u64,
    max_ranks: usize,
    n_pairs: usize,
    relabel: bool,
) -> Vec<PairCase> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n_pairs)
        .map(|_| {
            let (m, n) = (rng.random_range(1..28), rng.random_range(1..28));
            let op = [Op::Identity, Op::Transpose, Op::ConjTranspose][rng.random_range(0..3)];
            let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
            let source = random_layout(&mut rng, sm, sn, max_ranks);
            let target = random_layout(&mut rng, m, n, max_ranks);
            let relabeling = if relabel {
                Relabeling::Optimal
            } else {
                Relabeling::Off
            };
            // A is filled in the plan's (relabeled) target layout: declared so.
            PairCase {
                transform: Transform::new(source, target, op)
                    .with_relabeling(relabeling)
                    .with_contents(TargetContents::Relabeled),
                alpha: rng.random_range(0..5),
                beta: rng.random_range(0..5),
            }
        })
        .collect()
}

/// `rank`'s blocks (none outside the layout's communicator).
fn blocks(l: &Layout, rank: usize) -> Vec<copr::layout::LocalBlock> {
    if rank < l.ranks() {
        l.local_blocks(rank)
    } else {
        Vec::new()
    }
}

/// B's local buffer: B(i, j) = value(salt, i, j) inside the blocks, sentinel outside.
pub(crate) fn local_source<T: TestElem>(l: &Layout, rank: usize, salt: u64) -> Vec<T> {
    let n = if rank < l.ranks() {
        l.local_len(rank)
    } else {
        0
    };
    let mut b = vec![T::sentinel(); n];
    for blk in blocks(l, rank) {
        for i in blk.rows.clone() {
            for j in blk.cols.clone() {
                b[blk.index(i - blk.rows.start, j - blk.cols.start)] = T::from_hash(h(salt, i, j));
            }
        }
    }
    b
}

/// A's local buffer before the transform: A0 (or garbage when β = 0) inside the blocks.
pub(crate) fn local_target<T: TestElem>(
    l: &Layout,
    rank: usize,
    salt: u64,
    garbage: bool,
) -> Vec<T> {
    let n = if rank < l.ranks() {
        l.local_len(rank)
    } else {
        0
    };
    let mut a = vec![T::sentinel(); n];
    for blk in blocks(l, rank) {
        for i in blk.rows.clone() {
            for j in blk.cols.clone() {
                a[blk.index(i - blk.rows.start, j - blk.cols.start)] = if garbage {
                    T::garbage()
                } else {
                    T::from_hash(h(salt, i, j))
                };
            }
        }
    }
    a
}

/// The serial reference for A(i, j): α·op(B)(i, j) + β·A0(i, j), written the way the
/// engine specialises it (β = 0 never reads A0).
pub(crate) fn expected<T: TestElem>(
    op: Op,
    alpha: T,
    beta: T,
    bsalt: u64,
    asalt: u64,
    i: usize,
    j: usize,
) -> T {
    let x: T = match op {
        Op::Identity => T::from_hash(h(bsalt, i, j)),
        Op::Transpose => T::from_hash(h(bsalt, j, i)),
        Op::ConjTranspose => T::from_hash(h(bsalt, j, i)).conj(),
    };
    if beta == T::zero() {
        if alpha == T::one() {
            x
        } else {
            alpha.mul(x)
        }
    } else {
        alpha.mul(x).add(beta.mul(T::from_hash(h(asalt, i, j))))
    }
}

/// What A should hold: α·op(B) + β·A0 with B and A0 from their salts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expect<T> {
    pub(crate) op: Op,
    pub(crate) alpha: T,
    pub(crate) beta: T,
    pub(crate) bsalt: u64,
    pub(crate) asalt: u64,
}

/// Checks this rank's A against the reference; sentinels must be untouched.
fn verify<T: TestElem>(
    what: &str,
    l: &Layout,
    rank: usize,
    a: &[T],
    x: Expect<T>,
) -> Result<(), String> {
    let Expect {
        op,
        alpha,
        beta,
        bsalt,
        asalt,
    } = x;
    let mut covered = vec![false; a.len()];
    for blk in blocks(l, rank) {
        for i in blk.rows.clone() {
            for j in blk.cols.clone() {
                let k = blk.index(i - blk.rows.start, j - blk.cols.start);
                covered[k] = true;
                let e = expected(op, alpha, beta, bsalt, asalt, i, j);
                if !T::same(a[k], e) {
                    return Err(format!(
                        "{what}: rank {rank}: A({i}, {j}) = {:?}, expected {e:?} (α = {alpha:?}, β = {beta:?}, {op:?})",
                        a[k]
                    ));
                }
            }
        }
    }
    if let Some(k) = (0..a.len()).find(|&k| !covered[k] && !T::same(a[k], T::sentinel())) {
        return Err(format!(
            "{what}: rank {rank}: entry {k} outside every block was overwritten with {:?}",
            a[k]
        ));
    }
    Ok(())
}

/// Plans `cases` once and executes it `reps` times with fresh data and scalars,
/// verifying this rank's part of every A after each execution.
pub(crate) fn run_batch<T: TestElem>(
    t: &mut dyn Transport,
    cases: &[PairCase],
    reps: usize,
    tag: &str,
) -> Result<(), String> {
    run_batch_stats::<T>(t, cases, reps, tag).map(|_| ())
}

/// [`run_batch`], returning the plan's messages sent and received per execution and
/// the last execution's statistics.
pub(crate) fn run_batch_stats<T: TestElem>(
    t: &mut dyn Transport,
    cases: &[PairCase],
    reps: usize,
    tag: &str,
) -> Result<(usize, usize, ExecStats), String> {
    run_batch_with::<T>(t, cases, reps, tag, Streaming::Auto)
}

/// [`run_batch_stats`] with the plan's stores chosen by `streaming`.
pub(crate) fn run_batch_with<T: TestElem>(
    t: &mut dyn Transport,
    cases: &[PairCase],
    reps: usize,
    tag: &str,
    streaming: Streaming,
) -> Result<(usize, usize, ExecStats), String> {
    let me = t.rank();
    let batch: Vec<Transform> = cases.iter().map(|c| c.transform.clone()).collect();
    // Collective errors are the same on every rank, so returning on them is safe; a
    // local verification failure is recorded and the remaining collective calls still
    // run, so that no other rank waits forever.
    let mut plan = ReshufflePlan::new(t, batch).map_err(|e| format!("{tag}: plan: {e}"))?;
    plan.set_streaming(streaming);
    let mut failure: Option<String> = None;
    if plan.messages_sent() >= t.size().max(1) {
        failure = Some(format!(
            "{tag}: rank {me} sends {} messages to {} peers",
            plan.messages_sent(),
            t.size() - 1
        ));
    }
    let mut bytes_after_first = None;
    for rep in 0..reps {
        let salt = |k: usize, w: u64| mix((rep as u64) << 40 ^ (k as u64) << 8 ^ w);
        let scal: Vec<(T, T)> = rep_scalars(cases, rep, salt);
        let bs: Vec<Vec<T>> = (0..cases.len())
            .map(|k| local_source::<T>(plan.source(k), me, salt(k, 3)))
            .collect();
        let mut as_: Vec<Vec<T>> = (0..cases.len())
            .map(|k| local_target::<T>(plan.target(k), me, salt(k, 4), scal[k].1 == T::zero()))
            .collect();
        let mut jobs: Vec<Job<'_, T>> = bs
            .iter()
            .zip(as_.iter_mut())
            .zip(&scal)
            .map(|((b, a), &(alpha, beta))| Job {
                alpha,
                beta,
                source: b,
                target: a,
            })
            .collect();
        plan.execute(t, &mut jobs)
            .map_err(|e| format!("{tag}: rep {rep}: execute: {e}"))?;
        drop(jobs);
        if let Err(e) = verify_targets(&plan, me, &as_, &scal, salt, &format!("{tag}: rep {rep}")) {
            failure.get_or_insert(e);
        }
        match bytes_after_first {
            None => bytes_after_first = Some(plan.buffer_bytes()),
            Some(b) if b != plan.buffer_bytes() => {
                failure.get_or_insert(format!(
                    "{tag}: buffers reallocated: {b} -> {}",
                    plan.buffer_bytes()
                ));
            }
            Some(_) => {}
        }
    }
    let counts = (plan.messages_sent(), plan.messages_received());
    failure.map_or(Ok((counts.0, counts.1, plan.last_stats())), Err)
}

/// The scalars of every transform in repetition `rep`: the case's choices, α varied
/// between repetitions (plan reuse with new α, β), values from `salt(k, 1)` and
/// `salt(k, 2)`.
pub(crate) fn rep_scalars<T: TestElem>(
    cases: &[PairCase],
    rep: usize,
    salt: impl Fn(usize, u64) -> u64,
) -> Vec<(T, T)> {
    cases
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let a = if rep == 0 {
                c.alpha
            } else {
                (c.alpha + rep as u8) % 5
            };
            (scalar::<T>(a, salt(k, 1)), scalar::<T>(c.beta, salt(k, 2)))
        })
        .collect()
}

/// Checks this rank's A of every transform of `plan` against the reference (B from
/// `salt(k, 3)`, A0 from `salt(k, 4)`, the scalars `scal`); the first mismatch.
pub(crate) fn verify_targets<T: TestElem>(
    plan: &ReshufflePlan,
    me: usize,
    as_: &[Vec<T>],
    scal: &[(T, T)],
    salt: impl Fn(usize, u64) -> u64,
    tag: &str,
) -> Result<(), String> {
    for k in 0..as_.len() {
        let x = Expect {
            op: plan.op(k),
            alpha: scal[k].0,
            beta: scal[k].1,
            bsalt: salt(k, 3),
            asalt: salt(k, 4),
        };
        verify(
            &format!("{tag}: transform {k}"),
            plan.target(k),
            me,
            &as_[k],
            x,
        )?;
    }
    Ok(())
}

/// Runs a random batch of element type `ty` (0..6).
pub(crate) fn run_random(
    t: &mut dyn Transport,
    ty: usize,
    seed: u64,
    n_pairs: usize,
    relabel: bool,
    reps: usize,
) -> Result<(), String> {
    let cases = random_batch(seed, t.size(), n_pairs, relabel);
    let tag = format!(
        "seed {seed} type {ty} pairs {n_pairs} relabel {relabel} on {} ranks",
        t.size()
    );
    match ty {
        0 => run_batch::<f32>(t, &cases, reps, &tag),
        1 => run_batch::<f64>(t, &cases, reps, &tag),
        2 => run_batch::<Complex32>(t, &cases, reps, &tag),
        3 => run_batch::<Complex64>(t, &cases, reps, &tag),
        4 => run_batch::<i32>(t, &cases, reps, &tag),
        _ => run_batch::<i64>(t, &cases, reps, &tag),
    }
}

/// The squarest `pr × pc` grid of `size` ranks (`pr ≤ pc`).
pub(crate) fn large_grid(size: usize) -> (usize, usize) {
    let p = size.max(1);
    let pr = (1..=p)
        .rev()
        .find(|d| p % d == 0 && d * d <= p)
        .unwrap_or(1);
    (pr, p / pr)
}

/// A larger block-cyclic case (exercises the parallel packing and region splitting and
/// the tiled transpose): `m × n`, 8×8 → 13×11 blocks, different grids.
pub(crate) fn large_case(size: usize, m: usize, n: usize, op: Op, relabel: bool) -> Vec<PairCase> {
    let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
    let (pr, pc) = large_grid(size);
    let mut s = BlockCyclicSpec::new(sm, sn, 8, 8, pr, pc);
    s.local_order = Order::RowMajor;
    let mut d = BlockCyclicSpec::new(m, n, 13, 11, pc, pr);
    d.grid_order = Order::ColMajor;
    let relabeling = if relabel {
        Relabeling::Optimal
    } else {
        Relabeling::Off
    };
    vec![PairCase {
        transform: Transform::new(
            BlockCyclic::new(s).unwrap().into(),
            BlockCyclic::new(d).unwrap().into(),
            op,
        )
        .with_relabeling(relabeling)
        .with_contents(TargetContents::Relabeled),
        alpha: 4,
        beta: 3,
    }]
}

/// `A ← α·op(B)` (β = 0, relabeling off) for an `m × n` A: B in `blocks[0]` blocks stored
/// in `orders[0]` on the squarest grid of `size` ranks, A in `blocks[1]` blocks stored in
/// `orders[1]` with leading dimension `lld` on the transposed grid.
pub(crate) fn straight_case(
    size: usize,
    op: Op,
    [m, n]: [usize; 2],
    blocks: [[usize; 2]; 2],
    orders: [Order; 2],
    lld: Option<usize>,
    alpha: u8,
) -> Vec<PairCase> {
    let (pr, pc) = large_grid(size);
    let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
    let mut s = BlockCyclicSpec::new(sm, sn, blocks[0][0], blocks[0][1], pr, pc);
    s.local_order = orders[0];
    let mut d = BlockCyclicSpec::new(m, n, blocks[1][0], blocks[1][1], pc, pr);
    d.local_order = orders[1];
    d.lld = lld;
    vec![PairCase {
        transform: Transform::new(
            BlockCyclic::new(s).unwrap().into(),
            BlockCyclic::new(d).unwrap().into(),
            op,
        )
        .with_relabeling(Relabeling::Off),
        alpha,
        beta: 0,
    }]
}

/// A plain copy (α = 1, β = 0) whose packages, local copies and unpacking run over
/// lines of 40–72 elements (whole cache lines for streaming stores): 333 × 290, 40 × 40
/// blocks stored in `src_order` → 72 × 56 column-major blocks with a padded leading
/// dimension, different grids, relabeling off.
pub(crate) fn long_runs_case(size: usize, op: Op, src_order: Order) -> Vec<PairCase> {
    let blocks = [[40, 40], [72, 56]];
    let orders = [src_order, Order::ColMajor];
    straight_case(size, op, [333, 290], blocks, orders, Some(336), 1)
}

/// FNV-1a of a string (to compare error messages across ranks).
pub(crate) fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Checks that every rank got an error, the same message everywhere, containing
/// `needle`; records a failure in `fails` (always takes part in the collective).
fn same_error_everywhere(
    t: &mut dyn Transport,
    r: copr::Result<()>,
    needle: &str,
    what: &str,
    fails: &mut Vec<String>,
) {
    let msg = match r {
        Ok(()) => {
            fails.push(format!("{what}: rank {} got no error", t.rank()));
            String::new()
        }
        Err(e) => e.to_string(),
    };
    if !msg.is_empty() && !msg.contains(needle) {
        fails.push(format!(
            "{what}: rank {}: {msg:?} lacks {needle:?}",
            t.rank()
        ));
    }
    let mut all = vec![0u64; t.size()];
    match t.all_gather(&[fnv(&msg)], &mut all) {
        Err(e) => fails.push(format!("{what}: {e}")),
        Ok(()) if all.iter().any(|&x| x != all[0]) => fails.push(format!(
            "{what}: ranks got different messages; rank {}: {msg}",
            t.rank()
        )),
        Ok(()) => {}
    }
}

/// The collective safety checks: wrong layouts, buffers, element types or job counts on
/// one rank give every rank the same error, and no A is written.
pub(crate) fn error_cases(t: &mut dyn Transport) -> Result<(), String> {
    let (me, p) = (t.rank(), t.size());
    let culprit = p - 1;
    let mut fails = Vec::new();
    let l = |mb: usize| -> Layout {
        BlockCyclic::new(BlockCyclicSpec::new(9, 7, mb, 2, 1, p))
            .unwrap()
            .into()
    };
    let dst = |nb: usize| -> Layout {
        BlockCyclic::new(BlockCyclicSpec::new(9, 7, 3, nb, p, 1))
            .unwrap()
            .into()
    };

    // 1. One rank passes a different source layout.
    let src = if me == culprit { l(3) } else { l(2) };
    let r = ReshufflePlan::new(t, vec![Transform::new(src, dst(2), Op::Identity)]).map(|_| ());
    if p > 1 {
        let needle = format!("rank {culprit} passed a different batch");
        same_error_everywhere(t, r, &needle, "layouts", &mut fails);
    } else if let Err(e) = r {
        fails.push(format!("layouts on one rank: {e}"));
    }

    // 2. Rank 0 (which always holds part of A) passes an A buffer one element short:
    //    every rank reports it and nobody writes anything.
    let mut plan = ReshufflePlan::new(
        t,
        vec![Transform::new(l(2), dst(2), Op::Identity).with_relabeling(Relabeling::Off)],
    )
    .map_err(|e| e.to_string())?;
    let b = local_source::<f64>(plan.source(0), me, 1);
    let need = plan.local_lens(0).1;
    let short = if me == 0 { need - 1 } else { need };
    let mut a = vec![f64::sentinel(); short];
    let before = a.clone();
    let r = plan.execute(t, &mut [Job::copy(&b, &mut a)]);
    same_error_everywhere(
        t,
        r,
        "rank 0: the target (A) buffer of transform 0 holds",
        "short buffer",
        &mut fails,
    );
    if a != before {
        fails.push(format!(
            "short buffer: rank {me} wrote into A after the error"
        ));
    }

    // 3. One rank executes with another element type.
    let mut a = vec![0.0f64; need];
    let mut ai = vec![0i64; need];
    let bi = vec![0i64; b.len()];
    let r = if me == culprit {
        plan.execute(t, &mut [Job::copy(&bi, &mut ai)])
    } else {
        plan.execute(t, &mut [Job::copy(&b, &mut a)])
    };
    if p > 1 {
        same_error_everywhere(t, r, "different element type", "element type", &mut fails);
    } else if let Err(e) = r {
        fails.push(format!("element type on one rank: {e}"));
    }

    // 4. One rank passes no job at all.
    let r = if me == culprit {
        plan.execute::<f64>(t, &mut [])
    } else {
        plan.execute(t, &mut [Job::copy(&b, &mut a)])
    };
    let needle = format!("rank {culprit} passed 0 jobs");
    same_error_everywhere(t, r, &needle, "job count", &mut fails);

    // 5. Shapes that do not match: the same error on every rank, from planning.
    let r = ReshufflePlan::new(t, vec![Transform::new(l(2), dst(2), Op::Transpose)]).map(|_| ());
    same_error_everywhere(t, r, "op(source) is 7x9", "shapes", &mut fails);

    // 6. The plan still works afterwards.
    match plan.execute(t, &mut [Job::copy(&b, &mut a)]) {
        Err(e) => fails.push(format!("after the errors: {e}")),
        Ok(()) => {
            let x = Expect {
                op: Op::Identity,
                alpha: 1.0,
                beta: 0.0,
                bsalt: 1,
                asalt: 0,
            };
            if let Err(e) = verify("after the errors", plan.target(0), me, &a, x) {
                fails.push(e);
            }
        }
    }

    // 7. Packages large enough for a transport's shared-memory path: after a good
    //    execution, one rank passes a B buffer one element short; the others have
    //    already packed, but nothing is sent and nobody writes A; then the plan runs
    //    correctly again.
    let big = |mb: usize, pr: usize, pc: usize| -> Layout {
        BlockCyclic::new(BlockCyclicSpec::new(400, 400, mb, mb, pr, pc))
            .unwrap()
            .into()
    };
    let mut plan = ReshufflePlan::new(
        t,
        vec![Transform::new(big(16, 1, p), big(25, p, 1), Op::Transpose)
            .with_relabeling(Relabeling::Off)],
    )
    .map_err(|e| e.to_string())?;
    let b = local_source::<f64>(plan.source(0), me, 2);
    let need = plan.local_lens(0).1;
    let x = Expect {
        op: Op::Transpose,
        alpha: 1.0,
        beta: 0.0,
        bsalt: 2,
        asalt: 0,
    };
    for round in 0..3 {
        let mut a = vec![f64::sentinel(); need];
        let before = a.clone();
        let short = round == 1 && me == culprit;
        let bb = if short { &b[..b.len() - 1] } else { &b[..] };
        let r = plan.execute(t, &mut [Job::copy(bb, &mut a)]);
        if round == 1 {
            let needle = format!("rank {culprit}: the source (B) buffer of transform 0 holds");
            same_error_everywhere(t, r, &needle, "short B, large packages", &mut fails);
            if a != before {
                fails.push(format!(
                    "short B, large packages: rank {me} wrote into A after the error"
                ));
            }
        } else if let Err(e) = r {
            fails.push(format!("large packages, execution {round}: {e}"));
        } else if let Err(e) = verify("large packages", plan.target(0), me, &a, x) {
            fails.push(e);
        }
    }
    if fails.is_empty() {
        Ok(())
    } else {
        Err(fails.join("\n"))
    }
}

/// A block-cyclic layout from this rank's own ScaLAPACK descriptor
/// `[1, 0, m, n, mb, nb, 0, 0, lld]` (C `int`s) on a column-major BLACS grid.
fn from_descriptor(m: i32, n: i32, mb: i32, nb: i32, grid: (usize, usize), lld: i32) -> Layout {
    BlockCyclic::from_descriptor(
        [1, 0, m, n, mb, nb, 0, 0, lld],
        grid.0,
        grid.1,
        Order::ColMajor,
    )
    .expect("valid descriptor")
    .into()
}

/// ScaLAPACK's `NUMROC(n, nb, iproc, 0, nprocs)`, written out independently.
fn numroc(n: usize, nb: usize, iproc: usize, nprocs: usize) -> usize {
    (0..n).filter(|g| (g / nb) % nprocs == iproc).count()
}

/// Plans and executes one transform with α = 2 and `beta` on data filled in the plan's
/// layouts, and checks A element by element (padding and cells outside the target
/// submatrix must keep their sentinel).
fn run_one(
    t: &mut dyn Transport,
    transform: Transform,
    beta: f64,
    what: &str,
    fails: &mut Vec<String>,
) {
    let me = t.rank();
    let op = transform.op;
    let mut plan = match ReshufflePlan::new(t, vec![transform]) {
        Ok(p) => p,
        Err(e) => return fails.push(format!("{what}: plan: {e}")),
    };
    let b = local_source::<f64>(plan.source(0), me, 11);
    let mut a = local_target::<f64>(plan.target(0), me, 12, beta == 0.0);
    if let Err(e) = plan.execute(
        t,
        &mut [Job {
            alpha: 2.0,
            beta,
            source: &b,
            target: &mut a,
        }],
    ) {
        return fails.push(format!("{what}: execute: {e}"));
    }
    let x = Expect {
        op,
        alpha: 2.0,
        beta,
        bsalt: 11,
        asalt: 12,
    };
    if let Err(e) = verify(what, plan.target(0), me, &a, x) {
        fails.push(e);
    }
}

/// ScaLAPACK semantics: layouts from per-rank descriptors with each rank's own LLD
/// (tight and padded), the same error everywhere when one rank's LLD is too small, and
/// relabeling that never misplaces data already in A (β ≠ 0, target submatrices).
pub(crate) fn scalapack_cases(t: &mut dyn Transport) -> Result<(), String> {
    let (me, p) = (t.rank(), t.size());
    let mut fails = Vec::new();
    // 1. B: 37 x 23 in 3 x 2 blocks on a p x 1 grid with the tight LLD of this rank;
    //    A: the same matrix (or its transpose) in 5 x 4 blocks on 1 x p, and a 23 x 37
    //    one on p x 1 with LLD padded by a different amount on every rank.
    let tight = numroc(37, 3, me, p).max(1) as i32;
    let src = from_descriptor(37, 23, 3, 2, (p, 1), tight);
    let padded = numroc(23, 5, me, p).max(1) as i32 + 1 + me as i32;
    let dst_t = from_descriptor(23, 37, 5, 4, (p, 1), padded);
    let dst_n = from_descriptor(37, 23, 5, 4, (1, p), 37 + 2 * me as i32);
    for (op, dst, name) in [
        (Op::Identity, &dst_n, "copy"),
        (Op::Transpose, &dst_t, "transpose"),
    ] {
        for (relabeling, beta) in [
            (Relabeling::Off, 0.5),
            (Relabeling::Off, 0.0),
            (Relabeling::Optimal, 0.0),
        ] {
            let tr =
                Transform::new(src.clone(), dst.clone(), op).with_relabeling(relabeling.clone());
            run_one(
                t,
                tr,
                beta,
                &format!("per-rank LLD {name} {relabeling:?} β = {beta}"),
                &mut fails,
            );
        }
    }

    // 2. The last rank's LLD is one short of its local rows: the same error everywhere.
    let culprit = p - 1;
    let short = if me == culprit {
        numroc(23, 5, me, p) as i32 - 1
    } else {
        padded
    };
    let bad = from_descriptor(23, 37, 5, 4, (p, 1), short.max(1));
    let r =
        ReshufflePlan::new(t, vec![Transform::new(src.clone(), bad, Op::Transpose)]).map(|_| ());
    if numroc(23, 5, culprit, p) > 1 {
        let needle = format!("rank {culprit}, transform 0, target (A): leading dimension");
        same_error_everywhere(t, r, &needle, "one rank's LLD too small", &mut fails);
    } else if let Err(e) = r {
        fails.push(format!("LLD 1 is enough for one local row: {e}"));
    }

    // 3. β ≠ 0 with a relabeled target whose contents are as given: the documented
    //    error everywhere, A untouched. Target: B's grid with every rank moved by one,
    //    so the optimal σ is not the identity on more than one rank.
    let grid = BlockCyclicSpec::new(30, 20, 4, 5, p, 1);
    let b_layout: Layout = BlockCyclic::new(grid.clone()).unwrap().into();
    let mut moved = grid;
    moved.rank_map = Some((0..p).map(|r| (r + 1) % p).collect());
    let a_layout: Layout = BlockCyclic::new(moved).unwrap().into();
    let tr = Transform::new(b_layout.clone(), a_layout.clone(), Op::Identity);
    match ReshufflePlan::new(t, vec![tr.clone()]) {
        Err(e) => fails.push(format!("β ≠ 0, relabeled: plan: {e}")),
        Ok(mut plan) => {
            if plan.sigma(0).is_identity() != (p == 1) {
                fails.push(format!("β ≠ 0, relabeled: σ = {:?}", plan.sigma(0)));
            }
            let b = local_source::<f64>(&b_layout, me, 13);
            let mut a = local_target::<f64>(plan.target(0), me, 14, false);
            let before = a.clone();
            let r = plan.execute(
                t,
                &mut [Job {
                    alpha: 1.0,
                    beta: 1.0,
                    source: &b,
                    target: &mut a,
                }],
            );
            if p > 1 {
                same_error_everywhere(
                    t,
                    r,
                    "β ≠ 0 reads A's existing values",
                    "β ≠ 0, relabeled",
                    &mut fails,
                );
                if a != before {
                    fails.push(format!(
                        "β ≠ 0, relabeled: rank {me} wrote into A after the error"
                    ));
                }
            } else if let Err(e) = r {
                fails.push(format!("β ≠ 0 on one rank: {e}"));
            }
        }
    }
    //    The one-call `reshuffle` sees β and plans without relabeling: ScaLAPACK's result
    //    in the layout as given.
    let b = local_source::<f64>(&b_layout, me, 15);
    let mut a = local_target::<f64>(&a_layout, me, 16, false);
    let job = Job {
        alpha: 2.0,
        beta: -1.0,
        source: &b,
        target: &mut a,
    };
    match reshuffle(t, vec![tr.clone()], &mut [job]) {
        Err(e) => fails.push(format!("reshuffle with β ≠ 0: {e}")),
        Ok(targets) => {
            if targets[0] != a_layout {
                fails.push("reshuffle with β ≠ 0 relabeled the target".into());
            }
            let x = Expect {
                op: Op::Identity,
                alpha: 2.0,
                beta: -1.0,
                bsalt: 15,
                asalt: 16,
            };
            if let Err(e) = verify("reshuffle with β ≠ 0", &a_layout, me, &a, x) {
                fails.push(e);
            }
        }
    }
    //    Declared stored in the relabeled layout: relabeled, and β ≠ 0 is honoured.
    let declared = tr.clone().with_contents(TargetContents::Relabeled);
    run_one(
        t,
        declared,
        0.75,
        "β ≠ 0, contents declared relabeled",
        &mut fails,
    );

    // 4. A target submatrix (rows 3.., columns 2..) of an existing A: the default plans
    //    σ = identity (the cells outside keep their owners and values); a given σ ≠ id
    //    is refused everywhere; declared relabeled contents are relabeled.
    let sub = |l: &Layout| -> Layout {
        let Layout::BlockCyclic(bc) = l else {
            unreachable!()
        };
        let s = copr::layout::Submatrix {
            ia: 3,
            ja: 2,
            m: 27,
            n: 18,
        };
        bc.with_submatrix(s).unwrap().into()
    };
    let b_sub = sub(&b_layout);
    let a_sub = sub(&a_layout);
    let tr = Transform::new(b_sub.clone(), a_sub.clone(), Op::Identity);
    match ReshufflePlan::new(t, vec![tr.clone()]) {
        Ok(plan) if !plan.sigma(0).is_identity() => {
            fails.push(format!("submatrix target: σ = {:?}", plan.sigma(0)));
        }
        Ok(_) => {}
        Err(e) => fails.push(format!("submatrix target: {e}")),
    }
    for beta in [0.0, 1.5] {
        run_one(
            t,
            tr.clone(),
            beta,
            &format!("submatrix target, β = {beta}"),
            &mut fails,
        );
    }
    if p > 1 {
        let shift = Perm::from_forward((0..p).map(|r| (r + p - 1) % p).collect()).unwrap();
        let given = tr.clone().with_relabeling(Relabeling::Given(shift.clone()));
        let r = ReshufflePlan::new(t, vec![given]).map(|_| ());
        same_error_everywhere(
            t,
            r,
            "the target is a submatrix of A",
            "given σ, submatrix",
            &mut fails,
        );
        let declared = tr
            .with_relabeling(Relabeling::Given(shift))
            .with_contents(TargetContents::Relabeled);
        run_one(
            t,
            declared,
            1.5,
            "submatrix, contents declared relabeled",
            &mut fails,
        );
    }
    if fails.is_empty() {
        Ok(())
    } else {
        Err(fails.join("\n"))
    }
}

/// Executes `batch` (one transform) through `cache` with α = 1, β = 0 and element type
/// `T`, and checks A element by element.
fn cached_once<T: TestElem>(
    t: &mut dyn Transport,
    cache: &mut PlanCache,
    tr: &Transform,
    salt: u64,
    what: &str,
    fails: &mut Vec<String>,
) {
    let me = t.rank();
    let b = local_source::<T>(&tr.source, me, salt);
    let mut a = local_target::<T>(&tr.target, me, 0, true);
    let job = Job {
        alpha: T::one(),
        beta: T::zero(),
        source: &b,
        target: &mut a,
    };
    if let Err(e) = cache.execute(t, std::slice::from_ref(tr), &mut [job]) {
        return fails.push(format!("{what}: {e}"));
    }
    let x = Expect {
        op: tr.op,
        alpha: T::one(),
        beta: T::zero(),
        bsalt: salt,
        asalt: 0,
    };
    if let Err(e) = verify(what, &tr.target, me, &a, x) {
        fails.push(e);
    }
}

/// The plan cache: repeated calls reuse the plan; a different layout, local storage,
/// op or element type plans anew; the cache stays within its limits; a rank that
/// cleared its cache plans alone while the others reuse theirs (no rank waits for
/// another); `plan` agrees collectively.
pub(crate) fn cache_cases(t: &mut dyn Transport) -> Result<(), String> {
    let (me, p) = (t.rank(), t.size());
    let mut fails = Vec::new();
    let layout = |mb: usize, pr: usize, pc: usize, lld: Option<usize>| -> Layout {
        let mut s = BlockCyclicSpec::new(33, 21, mb, 4, pr, pc);
        s.lld = lld;
        BlockCyclic::new(s).unwrap().into()
    };
    let base = Transform::new(layout(3, p, 1, None), layout(5, 1, p, None), Op::Identity)
        .with_relabeling(Relabeling::Off);
    let mut cache = PlanCache::new(8, 1 << 30);
    let mut expect = (0u64, 0u64);
    let mut step = |cache: &PlanCache, hit: bool, what: &str, fails: &mut Vec<String>| {
        if hit {
            expect.0 += 1;
        } else {
            expect.1 += 1;
        }
        if (cache.hits(), cache.misses()) != expect {
            fails.push(format!(
                "{what}: rank {me}: hits/misses {:?}, expected {expect:?}",
                (cache.hits(), cache.misses())
            ));
        }
    };
    for rep in 0..3 {
        cached_once::<f64>(t, &mut cache, &base, rep, "repeated", &mut fails);
        step(&cache, rep > 0, "repeated", &mut fails);
    }
    let variants: Vec<(&str, Transform)> = vec![
        (
            "source blocks",
            Transform {
                source: layout(2, p, 1, None),
                ..base.clone()
            },
        ),
        (
            "target storage (lld)",
            Transform {
                target: layout(5, 1, p, Some(40)),
                ..base.clone()
            },
        ),
        (
            "op",
            Transform::new(
                BlockCyclic::new(BlockCyclicSpec::new(21, 33, 3, 4, p, 1))
                    .unwrap()
                    .into(),
                layout(5, 1, p, None),
                Op::Transpose,
            )
            .with_relabeling(Relabeling::Off),
        ),
    ];
    for (what, v) in &variants {
        cached_once::<f64>(t, &mut cache, v, 7, what, &mut fails);
        step(&cache, false, what, &mut fails);
    }
    cached_once::<f32>(t, &mut cache, &base, 8, "element type", &mut fails);
    step(&cache, false, "element type", &mut fails);
    cached_once::<f64>(t, &mut cache, &base, 9, "original again", &mut fails);
    step(&cache, true, "original again", &mut fails);
    if cache.len() != 5 {
        fails.push(format!("rank {me}: {} plans kept, expected 5", cache.len()));
    }
    // A rank that cleared its cache plans again; the others use theirs; all agree.
    if me == p - 1 {
        cache.clear();
    }
    cached_once::<f64>(
        t,
        &mut cache,
        &base,
        10,
        "after one rank cleared",
        &mut fails,
    );
    step(&cache, me != p - 1, "after one rank cleared", &mut fails);
    cached_once::<f64>(t, &mut cache, &base, 11, "kept again", &mut fails);
    step(&cache, true, "kept again", &mut fails);
    // `plan` (no execution): a rank without the plan makes every rank plan.
    if me == 0 {
        cache.clear();
    }
    match cache.plan(
        t,
        std::slice::from_ref(&base),
        copr::engine::ElementKind::F64,
    ) {
        Err(e) => fails.push(format!("plan after rank 0 cleared: {e}")),
        Ok(plan) if plan.source(0) != &base.source => fails.push("plan: wrong batch".into()),
        Ok(_) => {}
    }
    step(&cache, false, "plan after rank 0 cleared", &mut fails);

    // Limits: two plans at most; by bytes, only the plan being executed.
    let mut small = PlanCache::new(2, 1 << 30);
    for (k, (_, v)) in variants.iter().enumerate() {
        cached_once::<f64>(t, &mut small, v, k as u64, "two plans", &mut fails);
    }
    cached_once::<f64>(
        t,
        &mut small,
        &variants[0].1,
        3,
        "two plans, evicted",
        &mut fails,
    );
    if (small.len(), small.hits(), small.misses()) != (2, 0, 4) {
        fails.push(format!(
            "two plans: rank {me}: kept {}, hits {}, misses {}",
            small.len(),
            small.hits(),
            small.misses()
        ));
    }
    let mut tiny = PlanCache::new(8, 1);
    for (k, (_, v)) in variants.iter().enumerate() {
        cached_once::<f64>(t, &mut tiny, v, k as u64, "one byte", &mut fails);
    }
    if tiny.len() != 1 || tiny.bytes() == 0 {
        fails.push(format!(
            "one byte: rank {me}: kept {} plans, {} bytes",
            tiny.len(),
            tiny.bytes()
        ));
    }
    if fails.is_empty() {
        Ok(())
    } else {
        Err(fails.join("\n"))
    }
}

/// The one-call path ([`reshuffle`], a cache miss), which plans without a collective
/// step of its own: what [`ReshufflePlan::new`] checks collectively still reaches every
/// rank as the same error before any data moves, and A stays untouched.
pub(crate) fn one_call_error_cases(t: &mut dyn Transport) -> Result<(), String> {
    let (me, p) = (t.rank(), t.size());
    let culprit = p - 1;
    let mut fails = Vec::new();
    let bc = |mb: usize, pr: usize, pc: usize, lld: Option<usize>| -> Layout {
        let mut s = BlockCyclicSpec::new(30, 20, mb, 4, pr, pc);
        s.lld = lld;
        BlockCyclic::new(s).unwrap().into()
    };
    let src = bc(3, p, 1, None);
    let b = local_source::<f64>(&src, me, 5);
    let mut run = |t: &mut dyn Transport, tr: Transform, needle: &str, what: &str| {
        let target = tr.target.clone();
        let mut a = local_target::<f64>(&target, me, 0, true);
        let before = a.clone();
        let r = reshuffle(t, vec![tr], &mut [Job::copy(&b, &mut a)]).map(|_| ());
        same_error_everywhere(t, r, needle, what, &mut fails);
        if a.iter()
            .zip(&before)
            .any(|(x, y)| x.to_bits() != y.to_bits())
        {
            fails.push(format!("{what}: rank {me} wrote into A"));
        }
    };
    // 1. One rank passes another target layout.
    if p > 1 {
        let dst = if me == culprit {
            bc(4, 1, p, None)
        } else {
            bc(5, 1, p, None)
        };
        let tr = Transform::new(src.clone(), dst, Op::Identity).with_relabeling(Relabeling::Off);
        run(t, tr, "passed a different plan", "one call, layouts");
    }
    // 2. One rank's LLD is too small for its local rows (rank 0 holds the first block
    //    row, so it has rows whatever the number of ranks).
    let lld = if me == 0 { Some(1) } else { None };
    let tr = Transform::new(src.clone(), bc(5, p, 1, lld), Op::Identity)
        .with_relabeling(Relabeling::Off);
    let needle = "rank 0, transform 0, target (A): leading dimension 1";
    run(t, tr, needle, "one call, lld");
    // 3. A plan every rank refuses alike: a given σ of the wrong length.
    let tr = Transform::new(src.clone(), bc(5, 1, p, None), Op::Identity)
        .with_relabeling(Relabeling::Given(Perm::identity(p + 1)));
    run(t, tr, "relabeling of", "one call, σ length");
    if fails.is_empty() {
        Ok(())
    } else {
        Err(fails.join("\n"))
    }
}

/// Joint relabeling: random batches of 2 or 3 transforms marked [`Relabeling::Joint`]
/// (layouts on subsets of the ranks, submatrices; every third batch declares the
/// contents of transform 0 as given, so that a target submatrix must keep its owners).
/// Every rank checks, element by element for every matrix, that the process holding
/// target label `t` is `σ(t)` for one σ shared by all targets and all ranks, that a kept
/// target keeps its owners, and then that the batch moves the right values.
pub(crate) fn joint_cases(t: &mut dyn Transport, seeds: u64) -> Result<(), String> {
    let (me, p) = (t.rank(), t.size());
    let mut failure: Option<String> = None;
    for seed in 0..seeds {
        let n = 2 + (seed % 2) as usize;
        let mut cases = random_batch(0x7015_0000 + seed * 31 + p as u64, p, n, true);
        for (k, c) in cases.iter_mut().enumerate() {
            c.transform.relabeling = Relabeling::Joint;
            if k == 0 && seed % 3 == 2 && !c.transform.target.is_whole() {
                c.transform.contents = TargetContents::AsGiven;
            }
        }
        let tag = format!("joint seed {seed}, {n} transforms on {p} ranks");
        let batch: Vec<Transform> = cases.iter().map(|c| c.transform.clone()).collect();
        let plan = ReshufflePlan::new(t, batch.clone()).map_err(|e| format!("{tag}: plan: {e}"))?;
        let mut fail = |m: String| {
            failure.get_or_insert(format!("{tag}: rank {me}: {m}"));
        };
        let identity = Perm::identity(p);
        let sigma = plan.joint_sigma().cloned().unwrap_or_else(|| {
            fail("no joint σ".into());
            identity.clone()
        });
        if sigma.len() != p {
            fail(format!("σ of length {} on {p} ranks", sigma.len()));
        }
        let mut holder: Vec<Option<usize>> = vec![None; p];
        let (mut before, mut after) = (0, 0);
        for (k, tr) in batch.iter().enumerate() {
            if plan.sigma(k) != &sigma {
                fail(format!(
                    "transform {k} has its own σ {:?}",
                    plan.sigma(k).forward()
                ));
            }
            let kept = tr.contents == TargetContents::AsGiven && !tr.target.is_whole();
            let now = plan.target(k);
            'elements: for i in 0..tr.target.rows() {
                for j in 0..tr.target.cols() {
                    let (label, process) = (tr.target.owner_of(i, j), now.owner_of(i, j));
                    let seen = *holder[label].get_or_insert(process);
                    if seen != process || sigma.len() == p && sigma.apply(label) != process {
                        fail(format!(
                            "transform {k}: A({i}, {j}) of label {label} is on process {process}, \
                             label {label} of an earlier element on {seen}, σ({label}) = {}",
                            sigma.forward().get(label).copied().unwrap_or(usize::MAX)
                        ));
                        break 'elements;
                    }
                    if kept && process != label {
                        fail(format!(
                            "kept transform {k}: A({i}, {j}) moved {label} -> {process}"
                        ));
                        break 'elements;
                    }
                }
            }
            before += plan.remote_before(k).expect("remote volume");
            after += plan.remote_after(k).expect("remote volume");
        }
        if after > before {
            fail(format!("the joint σ moves {after} elements, none {before}"));
        }
        // the same σ on every rank
        let word = fnv(&format!("{:?}", sigma.forward()));
        let mut all = vec![0u64; p];
        t.all_gather(&[word], &mut all)
            .map_err(|e| format!("{tag}: {e}"))?;
        if all.iter().any(|&w| w != all[0]) {
            failure.get_or_insert(format!("{tag}: ranks disagree on the joint σ"));
        }
        drop(plan);
        if let Err(e) = run_batch::<f64>(t, &cases, 2, &tag) {
            failure.get_or_insert(e);
        }
    }
    failure.map_or(Ok(()), Err)
}

/// A joint batch in which one target keeps its owners. A: a 6 × 3p matrix in 3 × 3
/// blocks on a 1 × p grid into the same grid with the ranks reversed (alone, σ reverses
/// the labels and nothing moves). B: into a matrix on a 1 × 1 grid at rank 0, with β ≠ 0
/// and A's contents as given.
/// * B's target a submatrix: label 0 is fixed, the joint σ reverses the others, so A
///   moves its blocks of labels 0 and p − 1 only (2 · 18 elements for p ≥ 2), B's
///   target is as given, and the values are right.
/// * B's target the whole matrix: if the joint σ moves label 0, executing is an error
///   naming transform 1 on every rank; otherwise the values are right.
pub(crate) fn joint_keep_cases(t: &mut dyn Transport) -> Result<(), String> {
    let p = t.size();
    let a_src: Layout = BlockCyclic::new(BlockCyclicSpec::new(6, 3 * p, 3, 3, 1, p))
        .unwrap()
        .into();
    let mut d = BlockCyclicSpec::new(6, 3 * p, 3, 3, 1, p);
    d.rank_map = Some((0..p).rev().collect());
    let a = PairCase {
        transform: Transform::new(a_src, BlockCyclic::new(d).unwrap().into(), Op::Identity)
            .with_relabeling(Relabeling::Joint)
            .with_contents(TargetContents::Relabeled),
        alpha: 1,
        beta: 0,
    };
    let b_src: Layout = BlockCyclic::new(BlockCyclicSpec::new(5, 5, 2, 2, 1, p))
        .unwrap()
        .into();
    let mut failure: Option<String> = None;
    for submatrix in [true, false] {
        let mut s = BlockCyclicSpec::new(5, 5, 4, 4, 1, 1);
        if submatrix {
            s = BlockCyclicSpec::new(7, 8, 4, 4, 1, 1);
            s.submatrix = Some(copr::layout::Submatrix {
                ia: 1,
                ja: 2,
                m: 5,
                n: 5,
            });
        }
        let b_dst: Layout = BlockCyclic::new(s).unwrap().into();
        let b = PairCase {
            transform: Transform::new(b_src.clone(), b_dst.clone(), Op::Identity)
                .with_relabeling(Relabeling::Joint),
            alpha: 2,
            beta: 2,
        };
        let tag = format!("joint keep, submatrix {submatrix}, {p} ranks");
        let cases = vec![a.clone(), b];
        let batch: Vec<Transform> = cases.iter().map(|c| c.transform.clone()).collect();
        let plan = ReshufflePlan::new(t, batch).map_err(|e| format!("{tag}: plan: {e}"))?;
        let sigma = plan
            .joint_sigma()
            .cloned()
            .ok_or(format!("{tag}: no joint σ"))?;
        let moved = sigma.apply(0) != 0;
        if submatrix {
            let a_remote = if p >= 2 { 2 * 18 } else { 0 };
            if moved || plan.remote_after(0).ok() != Some(a_remote) || plan.target(1) != &b_dst {
                failure.get_or_insert(format!(
                    "{tag}: σ = {:?}, A moves {} (expected {a_remote}), B's target {:?}",
                    sigma.forward(),
                    plan.remote_after(0).unwrap_or(u64::MAX),
                    plan.target(1)
                ));
            }
        }
        drop(plan);
        let r = run_batch::<f64>(t, &cases, 1, &tag);
        let ok = match (&r, moved) {
            (Err(e), true) => e.contains("transform 1: β ≠ 0"),
            (r, false) => r.is_ok(),
            (Ok(()), true) => false,
        };
        if !ok {
            failure.get_or_insert(format!("{tag}: label 0 moved: {moved}, run: {r:?}"));
        }
    }
    failure.map_or(Ok(()), Err)
}
