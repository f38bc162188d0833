//! Planning: which pieces of which blocks go where, in which order, into which buffer.

use std::collections::HashMap;
use std::ops::Range;

use super::kernel::{Move, PackRun};
use super::source_map::RecvPiece;
use crate::error::{Error, Mismatched, Result};
use crate::lap::{sparse_max, Perm};
use crate::layout::axis::Axis;
use crate::layout::{check_shapes, fnv1a, Layout, LocalBlock, Op, OpView, Order};
use crate::volume::Volumes;

/// How the target of a transform is relabeled before the data moves.
///
/// # Relabeling and the data already in A
/// Relabeling renames the owners of the **whole** target grid: process `σ(t)` stores
/// what label `t` stored, in the relabeled layout ([`super::ReshufflePlan::target`]).
/// That is sound only where A's existing contents do not matter, or are already stored
/// in the relabeled layout. What the engine does, by [`TargetContents`]:
///
/// | | β = 0, whole-matrix target | β ≠ 0 | target submatrix |
/// |---|---|---|---|
/// | [`TargetContents::AsGiven`] (default) | relabeled | error at execute if σ ≠ id (`Joint`: if σ moves an owner of the target) | `Optimal`: σ = identity; `Given(σ ≠ id)`: error at planning; `Joint`: the joint σ fixes the labels of its grid |
/// | [`TargetContents::Relabeled`] | relabeled | relabeled | relabeled |
///
/// With β ≠ 0, A's old values live where the original target layout put them, but a
/// relabeled plan would read them where the relabeled layout puts them; with a target
/// submatrix, the elements of A outside it (which ScaLAPACK leaves in place) would
/// belong to other processes. So ScaLAPACK-style calls (β ≠ 0, or a submatrix of an
/// existing A) get ScaLAPACK's results with the default or a clear
/// [`Error::Relabeling`](crate::Error::Relabeling), never misplaced data.
/// [`reshuffle`](super::reshuffle), which sees β before planning, plans transforms with
/// β ≠ 0 and [`TargetContents::AsGiven`] without relabeling.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Relabeling {
    /// Keep the target layout as given.
    Off,
    /// The relabeling σ that minimises the remote volume exactly
    /// (`sparse_max(Vᵀ)`, see [`crate::lap`]); the identity when σ saves nothing, and
    /// for a target submatrix whose contents are [`TargetContents::AsGiven`].
    #[default]
    Optimal,
    /// A relabeling computed elsewhere (e.g. by a planner with a cost model): target
    /// label `t` is taken by process `σ(t)`.
    Given(Perm),
    /// One σ shared by every transform of the batch marked `Joint`: the exact
    /// maximiser of the elements they keep local together,
    /// `Σ_k Σ_t V_k[σ(t)][t]` over the `Joint` transforms `k`, in the communicator's
    /// rank space ([`crate::relabel::Relabel::volumes`]; one assignment problem, since the
    /// gains add). Afterwards the process holding target label `t` is the same for all
    /// of them — what matrices that feed one computation need;
    /// [`super::ReshufflePlan::joint_sigma`] returns it. Transforms marked otherwise
    /// keep their own choice.
    ///
    /// A `Joint` transform whose target must keep its owners — contents
    /// [`TargetContents::AsGiven`] and a target submatrix — constrains the joint σ to
    /// fix every label of its process grid (σ(t) = t for them; the others are
    /// relabeled among themselves, still exactly), so its target stays as given. With
    /// β ≠ 0 and contents [`TargetContents::AsGiven`], executing is an error naming the
    /// transform if the joint σ moved its target (as for [`Relabeling::Optimal`]); the
    /// one-call [`reshuffle`](super::reshuffle) does not change a `Joint` transform
    /// into an unrelabeled one, as that would break the common σ: declare the
    /// contents [`TargetContents::Relabeled`], or plan it with [`Relabeling::Off`]
    /// outside the joint group.
    Joint,
}

/// Where A's existing contents are, for a relabeled target (see [`Relabeling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetContents {
    /// A's contents, where they matter (β ≠ 0, or the part of A outside a target
    /// submatrix), are stored in the target layout as given: the engine relabels only
    /// where that cannot misplace them.
    #[default]
    AsGiven,
    /// A is already stored in the relabeled layout ([`super::ReshufflePlan::target`]),
    /// e.g. filled after planning: any β and any submatrix may be relabeled.
    ///
    /// The relabeled layout describes new local matrices, so a block-cyclic target's
    /// `lld` is not kept: its leading dimension is the default one (the local row
    /// count, column count for row-major local storage, of the grid position the
    /// process holds after relabeling), also when the given target is a submatrix
    /// whose `lld` was padded. A buffer stored in the relabeled layout uses
    /// that leading dimension; read it from the plan's `target(k)`, never from the
    /// layout given.
    Relabeled,
}

/// One transform of a batch: `A ← α·op(B) + β·A` with B distributed as `source` and A
/// as `target` (the scalars come with the buffers, in [`super::Job`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transform {
    /// Layout of B.
    pub source: Layout,
    /// Layout of A before relabeling.
    pub target: Layout,
    /// op ∈ {identity, transpose, conjugate transpose}.
    pub op: Op,
    /// Whether and how the target's owners are relabeled.
    pub relabeling: Relabeling,
    /// Where A's existing contents are stored, if they matter.
    pub contents: TargetContents,
}

impl Transform {
    /// `A ← α·op(B) + β·A` from `source` to `target` with the optimal relabeling.
    pub fn new(source: Layout, target: Layout, op: Op) -> Self {
        Self {
            source,
            target,
            op,
            relabeling: Relabeling::Optimal,
            contents: TargetContents::AsGiven,
        }
    }

    /// The same transform with another relabeling choice.
    pub fn with_relabeling(mut self, relabeling: Relabeling) -> Self {
        self.relabeling = relabeling;
        self
    }

    /// The same transform with A's existing contents declared stored as `contents`.
    pub fn with_contents(mut self, contents: TargetContents) -> Self {
        self.contents = contents;
        self
    }
}

/// The planner's result as a transform: its layouts, op and σ
/// ([`Relabeling::Given`]), so the engine applies the planner's relabeling.
///
/// # Example
/// ```
/// use copr::engine::{Relabeling, Transform};
/// use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
/// use copr::plan::{Plan, Solver};
/// let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(8, 8, 4, 4, 2, 2)).unwrap().into();
/// let mut d = BlockCyclicSpec::new(8, 8, 4, 4, 2, 2);
/// d.grid_order = Order::ColMajor;
/// let plan = Plan::new(src, BlockCyclic::new(d).unwrap().into(), Op::Identity, Solver::Sparse).unwrap();
/// let t = Transform::from(&plan);
/// assert_eq!(t.relabeling, Relabeling::Given(plan.sigma().clone()));
/// ```
impl From<&crate::plan::Plan> for Transform {
    fn from(p: &crate::plan::Plan) -> Self {
        Self {
            source: p.source().clone(),
            target: p.target().clone(),
            op: p.op(),
            relabeling: Relabeling::Given(p.sigma().clone()),
            contents: TargetContents::AsGiven,
        }
    }
}

/// What one transform looks like from this rank.
#[derive(Debug, Clone)]
pub(crate) struct PairPlan {
    pub(crate) source: Layout,
    pub(crate) target: Layout,
    pub(crate) op: Op,
    pub(crate) sigma: Perm,
    /// A's existing contents are in the layout as given while σ ≠ identity: β must be
    /// 0 at execute.
    pub(crate) needs_zero_beta: bool,
    /// The target as given, if σ moved its owners (`target` is then relabeled).
    pub(crate) given_target: Option<Layout>,
    /// Elements crossing ranks without and with σ: known while planning when choosing
    /// σ needed the volumes, otherwise counted on the first request (planning itself
    /// needs only this rank's pieces).
    pub(crate) remote: std::sync::OnceLock<(u64, u64)>,
    /// Elements this rank's B and A buffers must hold.
    pub(crate) source_len: usize,
    pub(crate) target_len: usize,
    /// Disjoint, increasing ranges of A's local buffer; moves write inside one region.
    pub(crate) regions: Vec<Range<usize>>,
}

/// Moves grouped by (transform, region): the unit of parallel work.
#[derive(Debug, Clone, Default)]
pub(crate) struct Work {
    pub(crate) moves: Vec<Move>,
    /// `(pair, region, moves range)`, sorted by (pair, region).
    pub(crate) groups: Vec<(u32, u32, Range<usize>)>,
    /// For every pair, its range in `groups`.
    pub(crate) pair_groups: Vec<Range<usize>>,
    /// Elements moved.
    pub(crate) elems: usize,
}

/// Part of a package that lies in place in one of this rank's buffers: `count` lines
/// of `inner` consecutive elements, line `i` at element `off + i·stride` of transform
/// `pair`'s B (outgoing packages) or A (incoming ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    pub(crate) pair: u32,
    pub(crate) off: usize,
    pub(crate) inner: usize,
    pub(crate) count: usize,
    pub(crate) stride: usize,
}

/// An outgoing package.
#[derive(Debug, Clone)]
pub(crate) struct SendPlan {
    pub(crate) peer: usize,
    pub(crate) elems: usize,
    /// `(pair, run)`, sorted by `run.dst`.
    pub(crate) runs: Vec<(u32, PackRun)>,
    /// The package where it lies in B, in package order, if it is made of whole
    /// runs of B (no transposition while packing): it can be sent from there.
    pub(crate) extents: Option<Vec<Extent>>,
}

/// An incoming package.
#[derive(Debug, Clone)]
pub(crate) struct RecvPlan {
    pub(crate) peer: usize,
    pub(crate) elems: usize,
    pub(crate) work: Work,
    /// Where the package lands in A, in package order, if every move copies whole
    /// runs of the package into runs of A: a plain copy (α = 1, β = 0, no
    /// conjugation) can then receive it there.
    pub(crate) extents: Option<Vec<Extent>>,
    /// The package's non-empty pieces in package order (where a receiver that reads
    /// the sender's B finds each move's elements).
    pub(crate) pieces: Vec<RecvPiece>,
}

/// Appends an extent to `out`, merged into the last one when its lines continue the
/// last one's equally spaced lines.
fn push_extent(out: &mut Vec<Extent>, e: Extent) {
    if e.count == 0 || e.inner == 0 {
        return;
    }
    if let Some(last) = out.last_mut() {
        if last.pair == e.pair && last.inner == e.inner && e.off > last.off {
            // A single line has no spacing yet: the next line sets it.
            let stride = if last.count == 1 {
                e.off - last.off
            } else {
                last.stride
            };
            if last.off + last.count * stride == e.off && (e.count == 1 || e.stride == stride) {
                last.stride = stride;
                last.count += e.count;
                return;
            }
        }
    }
    out.push(e);
}

/// An outgoing package's extents in B: its runs when none transposes.
fn send_extents(runs: &[(u32, PackRun)]) -> Option<Vec<Extent>> {
    let mut out = Vec::new();
    for &(pair, r) in runs {
        if r.step != 1 && r.inner > 1 {
            return None;
        }
        push_extent(
            &mut out,
            Extent {
                pair,
                off: r.src,
                inner: r.inner,
                count: r.outer,
                stride: r.ld,
            },
        );
    }
    Some(out)
}

/// An incoming package's extents in A, from its moves in package order (`None`
/// unless they read the package densely and in order, each line of the package
/// landing on a run of A: straight pieces between equal storage orders, and
/// transposed ones, which the sender packs in A's order).
fn recv_extents(moves: &[(u32, u32, Move)], regs: &[Regions]) -> Option<Vec<Extent>> {
    let mut out = Vec::new();
    let mut next = 0;
    for &(pair, reg, m) in moves {
        let n = m.rows * m.cols;
        if n == 0 {
            continue;
        }
        if m.src != next {
            return None;
        }
        next += n;
        let (inner, count, stride) =
            if m.d_rs == 1 && m.s_rs == 1 && (m.cols == 1 || m.s_cs == m.rows) {
                (m.rows, m.cols, m.d_cs)
            } else if m.d_cs == 1 && m.s_cs == 1 && (m.rows == 1 || m.s_rs == m.cols) {
                (m.cols, m.rows, m.d_rs)
            } else {
                return None;
            };
        let start = regs[pair as usize].ranges[reg as usize].start;
        push_extent(
            &mut out,
            Extent {
                pair,
                off: start + m.dst,
                inner,
                count,
                stride,
            },
        );
    }
    Some(out)
}

/// Where the time of building a [`super::ReshufflePlan`] went on this rank (seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PlanStats {
    /// The collective check before planning (fingerprint, storage check, gather); 0
    /// for [`super::ReshufflePlan::plan_and_execute`], whose checks travel with the
    /// execution.
    pub check: f64,
    /// Volumes, the relabeling σ (exact assignment) and the relabeled layouts.
    pub relabel: f64,
    /// Cutting this rank's blocks into the pieces it sends, receives and keeps.
    pub enumerate: f64,
    /// Cutting A's local buffer into regions for parallel writes.
    pub regions: f64,
    /// Ordering the pieces into packages and grouping the moves.
    pub packages: f64,
    /// The whole construction.
    pub total: f64,
}

/// Everything an execution needs, independent of the element type.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub(crate) size: usize,
    pub(crate) fingerprint: u64,
    pub(crate) pairs: Vec<PairPlan>,
    pub(crate) sends: Vec<SendPlan>,
    pub(crate) recvs: Vec<RecvPlan>,
    pub(crate) local: Work,
    pub(crate) stats: PlanStats,
    /// The σ of the batch's [`Relabeling::Joint`] transforms, if it has any.
    pub(crate) joint: Option<Perm>,
}

/// Largest number of elements one packing or moving task handles serially.
const CHUNK: usize = 1 << 15;

/// Fingerprint of a batch as passed by one rank (before any checks).
pub(crate) fn batch_fingerprint(batch: &[Transform], size: usize) -> u64 {
    let mut words: Vec<u64> = vec![size as u64, batch.len() as u64];
    for t in batch {
        words.push(t.source.fingerprint());
        words.push(t.target.fingerprint());
        words.push(match t.op {
            Op::Identity => 0,
            Op::Transpose => 1,
            Op::ConjTranspose => 2,
        });
        match &t.relabeling {
            Relabeling::Off => words.push(10),
            Relabeling::Optimal => words.push(11),
            Relabeling::Given(p) => {
                words.push(12);
                words.push(p.len() as u64);
                words.extend(p.forward().iter().map(|&x| x as u64));
            }
            Relabeling::Joint => words.push(13),
        }
        words.push(match t.contents {
            TargetContents::AsGiven => 20,
            TargetContents::Relabeled => 21,
        });
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    fnv1a(&bytes)
}

/// The intervals `(start, end, class)` of an axis.
fn intervals(a: &Axis<'_>) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::new();
    a.for_each(|s, e, c, _| v.push((s, e, c)));
    v
}

/// The intervals overlapping `r`.
fn overlapping<'a>(
    iv: &'a [(usize, usize, usize)],
    r: &Range<usize>,
) -> &'a [(usize, usize, usize)] {
    let first = iv.partition_point(|x| x.1 <= r.start);
    let last = iv.partition_point(|x| x.0 < r.end);
    &iv[first..last.max(first)]
}

/// Unit strides (row, column) of a block stored in `order` with leading dimension `ld`.
pub(super) fn strides(order: Order, ld: usize) -> (usize, usize) {
    match order {
        Order::ColMajor => (1, ld),
        Order::RowMajor => (ld, 1),
    }
}

/// `rank`'s blocks of `layout` (none for a rank outside the layout's communicator).
pub(crate) fn blocks_of(layout: &Layout, rank: usize) -> Vec<LocalBlock> {
    if rank < layout.ranks() {
        layout.local_blocks(rank)
    } else {
        Vec::new()
    }
}

/// Elements `rank`'s buffer of `layout` needs (0 outside the layout's communicator).
pub(crate) fn len_of(layout: &Layout, rank: usize) -> usize {
    if rank < layout.ranks() {
        layout.local_len(rank)
    } else {
        0
    }
}

/// Storage order of `rank`'s blocks in `layout`.
pub(super) fn storage_order(layout: &Layout, rank: usize) -> Order {
    match layout {
        Layout::BlockCyclic(l) => l.spec().local_order,
        Layout::Grid(g) => g.storage_of(rank).order,
    }
}

/// A piece that lands in this rank's A: target rectangle (absolute target
/// coordinates), the target block it is in, and where its source elements are.
#[derive(Clone, Copy)]
struct DstPiece {
    pair: u32,
    block: usize,
    r0: usize,
    c0: usize,
    rows: usize,
    cols: usize,
    src: usize,
    s_rs: usize,
    s_cs: usize,
}

/// A piece leaving this rank: packed densely as `outer` lines of `inner` elements,
/// element `i` of line `o` taken from B at `src + o·ld + i·step`.
#[derive(Clone, Copy)]
struct SrcPiece {
    key: PieceKey,
    peer: usize,
    src: usize,
    ld: usize,
    step: usize,
    inner: usize,
    outer: usize,
}

/// The pieces of a batch as found on this rank: sent (with their peer), received
/// (with their peer and package order) and copied locally.
#[derive(Default)]
struct Pieces {
    sends: Vec<SrcPiece>,
    recvs: Vec<(usize, PieceKey, DstPiece)>,
    local: Vec<DstPiece>,
}

/// The temporary storage of planning (pieces, their sorted copies, the moves of one
/// package), kept per thread between plans: only its capacity matters. Planning is
/// otherwise dominated by first touches of fresh memory (a page fault, the kernel
/// zeroing the page, and unmapping it again when the memory is freed): at N = 10 000
/// on 4 ranks, 60–65 % of a plan's time with temporaries allocated anew for every
/// plan. A thread plans one batch at a time, so one set suffices.
#[derive(Default)]
struct Scratch {
    pieces: Pieces,
    sends: Vec<SrcPiece>,
    recvs: Vec<(usize, PieceKey, DstPiece)>,
    /// Moves of one incoming package, or of the local copies, with (pair, region).
    moves: Vec<(u32, u32, Move)>,
    /// Spare room for sorting `moves`.
    spare: Vec<(u32, u32, Move)>,
}

impl Scratch {
    /// Empties every vector, keeping its capacity.
    fn clear(&mut self) {
        self.pieces.sends.clear();
        self.pieces.recvs.clear();
        self.pieces.local.clear();
        self.sends.clear();
        self.recvs.clear();
        self.moves.clear();
        self.spare.clear();
    }

    /// Bytes of storage held.
    fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.pieces.sends.capacity() * size_of::<SrcPiece>()
            + self.pieces.recvs.capacity() * size_of::<(usize, PieceKey, DstPiece)>()
            + self.pieces.local.capacity() * size_of::<DstPiece>()
            + self.sends.capacity() * size_of::<SrcPiece>()
            + self.recvs.capacity() * size_of::<(usize, PieceKey, DstPiece)>()
            + (self.moves.capacity() + self.spare.capacity()) * size_of::<(u32, u32, Move)>()
    }
}

thread_local! {
    /// This thread's planning scratch ([`Scratch`]); [`release_scratch`] frees it.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// Frees this thread's planning scratch; returns the bytes released.
pub(crate) fn release_scratch() -> usize {
    SCRATCH.with(|s| {
        let freed = s.borrow().bytes();
        *s.borrow_mut() = Scratch::default();
        freed
    })
}

/// Bytes of planning scratch this thread holds.
pub(crate) fn scratch_bytes() -> usize {
    SCRATCH.with(|s| s.borrow().bytes())
}

/// Regions of A's local buffer and, for every local block, the region of each of its
/// lines (columns for column-major blocks, rows for row-major) as runs: `(first line,
/// region)`, increasing, the first starting at line 0.
struct Regions {
    ranges: Vec<Range<usize>>,
    line_runs: Vec<Vec<(usize, u32)>>,
}

impl Regions {
    /// The region of line `l` of block `b`.
    #[cfg(test)]
    fn region_of(&self, b: usize, l: usize) -> u32 {
        let runs = &self.line_runs[b];
        runs[runs.partition_point(|r| r.0 <= l) - 1].1
    }
}

/// Runs of equal regions in a block's per-line region list.
fn runs_of(lines: &[u32]) -> Vec<(usize, u32)> {
    let mut runs = vec![(0, lines.first().copied().unwrap_or(0))];
    for (l, &r) in lines.iter().enumerate().skip(1) {
        if r != lines[l - 1] {
            runs.push((l, r));
        }
    }
    runs
}

/// Cuts A's local buffer into disjoint ranges, each made of whole lines of blocks, so
/// that moves into different regions can run in parallel on disjoint slices.
///
/// Lines whose memory overlaps (e.g. the columns of the blocks of one block column of
/// a column-major block-cyclic matrix) fall into the same region; consecutive groups
/// are joined until a region holds at least `min_len` elements.
fn regions(blocks: &[LocalBlock], min_len: usize) -> Regions {
    regions_by_window(blocks, min_len).unwrap_or_else(|| regions_by_sorting(blocks, min_len))
}

/// [`regions`] for any blocks: all lines sorted by start.
///
/// # Complexity
/// O(lines · log lines).
fn regions_by_sorting(blocks: &[LocalBlock], min_len: usize) -> Regions {
    let mut lines: Vec<(usize, usize, u32, u32)> = Vec::new();
    for (b, blk) in blocks.iter().enumerate() {
        let (inner, outer) = match blk.order {
            Order::ColMajor => (blk.rows.len(), blk.cols.len()),
            Order::RowMajor => (blk.cols.len(), blk.rows.len()),
        };
        for l in 0..outer {
            let s = blk.offset + l * blk.ld;
            lines.push((s, s + inner, b as u32, l as u32));
        }
    }
    lines.sort_unstable();
    let mut ranges: Vec<Range<usize>> = Vec::new();
    let mut line_region: Vec<Vec<u32>> = blocks
        .iter()
        .map(|blk| {
            vec![
                0;
                match blk.order {
                    Order::ColMajor => blk.cols.len(),
                    Order::RowMajor => blk.rows.len(),
                }
            ]
        })
        .collect();
    let mut k = 0;
    while k < lines.len() {
        // One region: merge overlapping lines, keep going until it is large enough.
        let start = lines[k].0;
        let mut end = lines[k].1;
        let id = ranges.len() as u32;
        while k < lines.len() && (lines[k].0 < end || end - start < min_len) {
            end = end.max(lines[k].1);
            line_region[lines[k].2 as usize][lines[k].3 as usize] = id;
            k += 1;
        }
        ranges.push(start..end);
    }
    Regions {
        ranges,
        line_runs: line_region.iter().map(|v| runs_of(v)).collect(),
    }
}

/// The lines (columns for column-major blocks, rows for row-major) and line length of
/// a block.
fn lines_of(blk: &LocalBlock) -> (usize, usize) {
    match blk.order {
        Order::ColMajor => (blk.cols.len(), blk.rows.len()),
        Order::RowMajor => (blk.rows.len(), blk.cols.len()),
    }
}

/// [`regions`] without sorting lines, for the common case of one local matrix: every
/// block has the same storage order and leading dimension `ld`, and each of its lines
/// lies inside one window `[base + w·ld, base + (w + 1)·ld)` (block-cyclic local
/// matrices, padded or not). A region is then a run of whole windows, at least
/// `min_len` elements long, shrunk to the lines it holds. `None` if the blocks are not
/// of that form.
///
/// # Complexity
/// O(blocks + lines), no sorting.
fn regions_by_window(blocks: &[LocalBlock], min_len: usize) -> Option<Regions> {
    let first = blocks.first()?;
    let (order, ld) = (first.order, first.ld);
    let base = blocks.iter().map(|b| b.offset).min()?;
    if ld == 0 {
        return None;
    }
    let mut windows = 0;
    for b in blocks {
        let (outer, inner) = lines_of(b);
        let rel = b.offset - base;
        if b.order != order || b.ld != ld || rel % ld + inner > ld {
            return None;
        }
        if outer > 0 && inner > 0 {
            windows = windows.max(rel / ld + outer);
        }
    }
    let per = min_len.div_ceil(ld).max(1);
    let n = windows.div_ceil(per);
    let (mut lo, mut hi) = (vec![usize::MAX; n], vec![0usize; n]);
    for b in blocks {
        let (outer, inner) = lines_of(b);
        if outer == 0 || inner == 0 {
            continue;
        }
        let rel = b.offset - base;
        let (w0, w1) = (rel / ld, rel / ld + outer - 1);
        for r in w0 / per..=w1 / per {
            let (a, z) = (w0.max(r * per), w1.min(r * per + per - 1));
            lo[r] = lo[r].min(base + a * ld + rel % ld);
            hi[r] = hi[r].max(base + z * ld + rel % ld + inner);
        }
    }
    let mut id = vec![0u32; n];
    let mut ranges = Vec::new();
    for r in 0..n {
        if lo[r] < hi[r] {
            id[r] = ranges.len() as u32;
            ranges.push(lo[r]..hi[r]);
        }
    }
    let line_runs = blocks
        .iter()
        .map(|b| {
            let (outer, inner) = lines_of(b);
            if outer == 0 || inner == 0 {
                return vec![(0, 0)];
            }
            let (w0, w1) = ((b.offset - base) / ld, (b.offset - base) / ld + outer - 1);
            (w0 / per..=w1 / per)
                .map(|r| (w0.max(r * per) - w0, id[r]))
                .collect()
        })
        .collect();
    Some(Regions { ranges, line_runs })
}

impl Schedule {
    /// A schedule with nothing to move (a rank that could not plan takes part in the
    /// collective check with it).
    pub(crate) fn empty(size: usize, fingerprint: u64) -> Self {
        Self {
            size,
            fingerprint,
            pairs: Vec::new(),
            sends: Vec::new(),
            recvs: Vec::new(),
            local: Work::default(),
            stats: PlanStats::default(),
            joint: None,
        }
    }

    /// Plans `batch` for `rank` of `size` ranks (a pure function of its arguments).
    /// With `parallel` off (a rank with one core), A's buffer is one region: the moves
    /// need no grouping for parallel writes.
    pub(crate) fn build(
        batch: Vec<Transform>,
        rank: usize,
        size: usize,
        fingerprint: u64,
        parallel: bool,
    ) -> Result<Self> {
        let mut stats = PlanStats::default();
        let mut clock = std::time::Instant::now();
        let mut lap = |slot: &mut f64| {
            let now = std::time::Instant::now();
            *slot += (now - clock).as_secs_f64();
            clock = now;
        };
        for (k, t) in batch.iter().enumerate() {
            check_transform(k, t, size)?;
        }
        let joint = joint_sigma(&batch, size)?;
        let mut pairs = Vec::with_capacity(batch.len());
        for (k, t) in batch.into_iter().enumerate() {
            pairs.push(plan_pair(k, t, size, joint.as_ref())?);
        }
        lap(&mut stats.relabel);
        // This thread's scratch, returned (emptied) when the plan is built; a nested
        // plan on the same thread (none today) would start from empty vectors.
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let built = Self::build_with(
            &mut scratch,
            pairs,
            rank,
            size,
            fingerprint,
            parallel,
            joint,
            stats,
            clock,
        );
        scratch.clear();
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
        built
    }

    /// [`Schedule::build`] after the relabeling, with temporaries in `scratch`.
    #[allow(clippy::too_many_arguments)]
    fn build_with(
        scratch: &mut Scratch,
        mut pairs: Vec<PairPlan>,
        rank: usize,
        size: usize,
        fingerprint: u64,
        parallel: bool,
        joint: Option<Perm>,
        mut stats: PlanStats,
        mut clock: std::time::Instant,
    ) -> Result<Self> {
        let mut lap = |slot: &mut f64| {
            let now = std::time::Instant::now();
            *slot += (now - clock).as_secs_f64();
            clock = now;
        };
        scratch.clear();
        let Scratch {
            pieces,
            sends: sorted_sends,
            recvs: sorted_recvs,
            moves: bucket,
            spare,
        } = scratch;
        let mut tblocks: Vec<Vec<LocalBlock>> = Vec::with_capacity(pairs.len());
        for p in pairs.iter_mut() {
            p.source_len = len_of(&p.source, rank);
            p.target_len = len_of(&p.target, rank);
        }
        for (k, p) in pairs.iter().enumerate() {
            let (source, target) = (coarse(&p.source), coarse(&p.target));
            let blocks = blocks_of(&target, rank);
            enumerate_pair(k as u32, p, (&source, &target), rank, &blocks, pieces);
            tblocks.push(blocks);
        }
        lap(&mut stats.enumerate);
        let mut regs = Vec::with_capacity(pairs.len());
        for (p, blocks) in pairs.iter_mut().zip(&tblocks) {
            // Transposes walk their regions in squares (see `piece_key`); wider regions
            // let a square span more target columns.
            let parts = if p.op.transposes() { 8 } else { 64 };
            let min_len = if parallel {
                CHUNK.max(p.target_len / parts)
            } else {
                usize::MAX
            };
            let r = regions(blocks, min_len);
            p.regions = r.ranges.clone();
            regs.push(r);
        }
        lap(&mut stats.regions);

        // Outgoing packages: pieces in canonical order, packed densely.
        let Pieces {
            sends: src_pieces,
            recvs: recv_pieces,
            local: local_pieces,
        } = pieces;
        sort_by_peer_in(src_pieces, sorted_sends, size, |p| p.peer, |p| p.key);
        let sends = send_plans(src_pieces);

        // Incoming packages: the same canonical order on the receiving side.
        sort_by_peer_in(recv_pieces, sorted_recvs, size, |p| p.0, |p| p.1);
        let mut recvs: Vec<RecvPlan> = Vec::new();
        // The moves of one package at a time (pieces come sorted by peer).
        let n_pairs = pairs.len();
        let finish = |r: &mut RecvPlan, b: &mut Vec<(u32, u32, Move)>, sp: &mut Vec<_>| {
            r.extents = recv_extents(b, &regs);
            r.work = group(b, sp, n_pairs);
            b.clear();
        };
        for (i, &(peer, _, mut piece)) in recv_pieces.iter().enumerate() {
            if recvs.last().is_none_or(|r| r.peer != peer) {
                if let Some(r) = recvs.last_mut() {
                    finish(r, bucket, spare);
                }
                recvs.push(RecvPlan {
                    peer,
                    elems: 0,
                    work: Work::default(),
                    extents: None,
                    pieces: Vec::with_capacity(recv_pieces[i..].partition_point(|q| q.0 == peer)),
                });
            }
            let r = recvs.last_mut().expect("just pushed");
            piece.src += r.elems;
            r.elems += piece.rows * piece.cols;
            if piece.rows * piece.cols > 0 {
                r.pieces.push(RecvPiece {
                    start: piece.src,
                    pair: piece.pair,
                    r0: piece.r0,
                    c0: piece.c0,
                    rows: piece.rows,
                    cols: piece.cols,
                });
            }
            split_piece(
                &piece,
                &tblocks[piece.pair as usize],
                &regs[piece.pair as usize],
                bucket,
            );
        }
        if let Some(r) = recvs.last_mut() {
            finish(r, bucket, spare);
        }
        // Local pieces of transposes in the packages' square order (both B and A are
        // then walked a few hundred pages at a time); the grouping by region below
        // keeps this order inside every region.
        local_pieces.sort_by_cached_key(|d| {
            let blk = &tblocks[d.pair as usize][d.block];
            let tr = pairs[d.pair as usize].op.transposes();
            piece_key(d.pair, tr, d.r0, d.c0, blk.rows.start, blk.cols.start)
        });
        for piece in local_pieces.iter() {
            split_piece(
                piece,
                &tblocks[piece.pair as usize],
                &regs[piece.pair as usize],
                bucket,
            );
        }
        let local = group(bucket, spare, pairs.len());
        lap(&mut stats.packages);
        Ok(Self {
            size,
            fingerprint,
            pairs,
            sends,
            recvs,
            local,
            stats,
            joint,
        })
    }
}

/// The outgoing packages of sorted pieces (by peer, then canonical key): each peer's
/// pieces packed densely, one run per piece unless a piece exceeds a chunk.
fn send_plans(src_pieces: &[SrcPiece]) -> Vec<SendPlan> {
    let mut sends: Vec<SendPlan> = Vec::new();
    for (i, p) in src_pieces.iter().enumerate() {
        if sends.last().is_none_or(|s| s.peer != p.peer) {
            // One run per piece unless a piece exceeds a chunk.
            let n = src_pieces[i..].partition_point(|q| q.peer == p.peer);
            sends.push(SendPlan {
                peer: p.peer,
                elems: 0,
                runs: Vec::with_capacity(n),
                extents: None,
            });
        }
        let s = sends.last_mut().expect("just pushed");
        let (inner, outer) = (p.inner, p.outer);
        let step = (CHUNK / inner.max(1)).max(1);
        let mut o = 0;
        while o < outer {
            let n = step.min(outer - o);
            s.runs.push((
                p.key.0,
                PackRun {
                    src: p.src + o * p.ld,
                    ld: p.ld,
                    step: p.step,
                    inner,
                    outer: n,
                    dst: s.elems + o * inner,
                },
            ));
            o += n;
        }
        s.elems += inner * outer;
    }
    for s in &mut sends {
        s.extents = send_extents(&s.runs);
    }
    sends
}

/// The moves of an incoming package that read it straight from its sender's B (in
/// the sender's local storage, per transform) instead of from the package, and the
/// elements of each transform's B they reach (its length must be at least that).
#[derive(Debug, Clone)]
pub(crate) struct PeerWork {
    pub(crate) work: Work,
    pub(crate) need: Vec<usize>,
}

impl PeerWork {
    /// The work of incoming package `r` with its moves remapped (`moves`, in `r`'s
    /// order) and the elements each pair's B must hold (`need`).
    pub(super) fn remapped(r: &RecvPlan, moves: Vec<Move>, need: Vec<usize>) -> Self {
        PeerWork {
            work: Work {
                moves,
                groups: r.work.groups.clone(),
                pair_groups: r.work.pair_groups.clone(),
                elems: r.work.elems,
            },
            need,
        }
    }
}

/// Move `m`, which reads its package from element `off` of a piece of `shape` (see
/// [`move_in_source`]), reading the sender's B instead; `need` rises to the element
/// after the last one it reads.
pub(super) fn remap_move(
    m: &Move,
    shape: (usize, usize, usize, usize, usize),
    off: usize,
    need: &mut usize,
) -> Option<Move> {
    let (src, s_rs, s_cs) = move_in_source(shape, off, m.rows, m.cols, m.s_rs, m.s_cs)?;
    let last = src + (m.rows - 1) * s_rs + (m.cols - 1) * s_cs;
    *need = (*need).max(last + 1);
    Some(Move {
        src,
        s_rs,
        s_cs,
        ..*m
    })
}

/// Where a move of `rows × cols` elements that reads a package densely (`s_rs`, `s_cs`
/// in package elements, from package element `off` of a piece packed as lines of
/// `inner` elements) reads the sender's B, for a piece whose element `i` of line `o`
/// is B element `src + o·ld + i·step`: `(start, s_rs, s_cs)` in B, or `None` if the
/// move does not stay inside one piece of `inner × outer` elements.
#[allow(clippy::too_many_arguments)]
pub(super) fn move_in_source(
    (src, ld, step, inner, outer): (usize, usize, usize, usize, usize),
    off: usize,
    rows: usize,
    cols: usize,
    s_rs: usize,
    s_cs: usize,
) -> Option<(usize, usize, usize)> {
    let (o0, i0) = (off / inner, off % inner);
    let (mut ext_i, mut ext_o) = (0, 0);
    // A direction of one element: its stride does not matter.
    let mut map = |stride: usize, count: usize| -> Option<usize> {
        if count <= 1 {
            Some(1)
        } else if stride == 1 && inner > 1 && ext_i == 0 {
            ext_i = count - 1;
            Some(step)
        } else if stride == inner && ext_o == 0 {
            ext_o = count - 1;
            Some(ld)
        } else {
            None
        }
    };
    let (b_rs, b_cs) = (map(s_rs, rows)?, map(s_cs, cols)?);
    (i0 + ext_i < inner && o0 + ext_o < outer).then_some((src + o0 * ld + i0 * step, b_rs, b_cs))
}

#[cfg(test)]
impl Schedule {
    /// [`PeerWork`] of incoming package `k` of `rank` found the slow way, as a check
    /// of [`Schedule::peer_work`]: the sender's pieces for `rank` are found as the
    /// sender finds them (the same enumeration of its blocks, in the same package
    /// order), and every move of the package is mapped from package offsets to the
    /// sender's B. `None` if a move does not map.
    ///
    /// # Complexity
    /// The sender's share of planning: O(its source blocks + pieces) per transform.
    pub(super) fn peer_work_by_enumeration(&self, k: usize, rank: usize) -> Option<PeerWork> {
        let r = self.recvs.get(k)?;
        let mut pieces = Vec::new();
        for (pk, p) in self.pairs.iter().enumerate() {
            let (source, target) = (coarse(&p.source), coarse(&p.target));
            let t_rows = intervals(&target.row_axis());
            let t_cols = intervals(&target.col_axis());
            let axes = (&t_rows[..], &t_cols[..]);
            let pair = (&*source, &*target);
            enumerate_sends(
                pk as u32,
                p,
                pair,
                r.peer,
                axes,
                None,
                Some(rank),
                &mut pieces,
            );
        }
        pieces.retain(|p| p.inner * p.outer > 0);
        pieces.sort_by_key(|p| p.key);
        let mut starts = Vec::with_capacity(pieces.len());
        let mut at = 0;
        for p in &pieces {
            starts.push(at);
            at += p.inner * p.outer;
        }
        if at != r.elems {
            return None;
        }
        let mut need = vec![0usize; self.pairs.len()];
        let mut moves = Vec::with_capacity(r.work.moves.len());
        for g in &r.work.groups {
            for m in &r.work.moves[g.2.clone()] {
                if m.rows * m.cols == 0 {
                    moves.push(*m);
                    continue;
                }
                let i = starts.partition_point(|&s| s <= m.src).checked_sub(1)?;
                let p = &pieces[i];
                if p.key.0 != g.0 {
                    return None;
                }
                let shape = (p.src, p.ld, p.step, p.inner, p.outer);
                moves.push(remap_move(
                    m,
                    shape,
                    m.src - starts[i],
                    &mut need[g.0 as usize],
                )?);
            }
        }
        Some(PeerWork::remapped(r, moves, need))
    }
}

/// Checks that a transform fits the communicator and its shapes agree.
fn check_transform(k: usize, t: &Transform, size: usize) -> Result<()> {
    for (what, l) in [("source", &t.source), ("target", &t.target)] {
        if l.ranks() > size {
            return Err(Mismatched::LayoutRanks {
                transform: k,
                operand: what,
                needs: l.ranks(),
                communicator: size,
            }
            .into());
        }
    }
    check_shapes(&t.source, &t.target, t.op).map_err(|e| match e {
        Error::Mismatched(Mismatched::Shape {
            op_source,
            source_shape,
            op,
            target,
            ..
        }) => Mismatched::Shape {
            transform: Some(k),
            op_source,
            source_shape,
            op,
            target,
        }
        .into(),
        e => e,
    })
}

/// Whether the target of `t` keeps its owners whatever the relabeling: A's contents
/// outside a target submatrix stay where the given layout puts them.
fn keeps_outside(t: &Transform) -> bool {
    t.contents == TargetContents::AsGiven && !t.target.is_whole()
}

/// The labels that own a part of the matrix `l` describes (for a submatrix, of the
/// whole matrix: every rank of its process grid), sorted.
fn labels_of(l: &Layout) -> Vec<usize> {
    let mut out: Vec<usize> = match l {
        Layout::BlockCyclic(b) => {
            let s = b.spec();
            (0..s.nprow)
                .flat_map(|r| (0..s.npcol).map(move |c| (r, c)))
                .map(|(r, c)| b.rank_at(r, c))
                .collect()
        }
        Layout::Grid(g) => g.owners().to_vec(),
    };
    out.sort_unstable();
    out.dedup();
    out
}

/// The σ of the batch's [`Relabeling::Joint`] transforms (`None` if it has none): the
/// exact joint optimum in the communicator's rank space, fixing the labels of targets
/// that keep their owners ([`keeps_outside`]).
fn joint_sigma(batch: &[Transform], size: usize) -> Result<Option<Perm>> {
    let members: Vec<&Transform> = batch
        .iter()
        .filter(|t| t.relabeling == Relabeling::Joint)
        .collect();
    if members.is_empty() {
        return Ok(None);
    }
    let mut volumes = Vec::with_capacity(members.len());
    let mut fixed = Vec::new();
    for t in &members {
        volumes.push(Volumes::compute(&t.source, &t.target, t.op)?);
        if keeps_outside(t) {
            fixed.extend(labels_of(&t.target));
        }
    }
    fixed.sort_unstable();
    fixed.dedup();
    let refs: Vec<&Volumes> = volumes.iter().collect();
    let joint = crate::relabel::Relabel::volumes(&refs)
        .ranks(size)
        .fixed(&fixed)
        .solve()?;
    Ok(Some(joint.sigma))
}

/// Computes the relabeling of one checked transform ([`check_transform`]); `joint` is
/// the batch's joint σ.
fn plan_pair(k: usize, t: Transform, size: usize, joint: Option<&Perm>) -> Result<PairPlan> {
    // The communicator's ranks as the volumes count them.
    let q = t.source.ranks().max(t.target.ranks());
    // A's contents outside a target submatrix stay where the given layout puts them.
    let keep_outside = keeps_outside(&t);
    let is_joint = t.relabeling == Relabeling::Joint;
    let remote = std::sync::OnceLock::new();
    let sigma = match t.relabeling {
        Relabeling::Joint => joint.expect("the batch has a Joint transform").clone(),
        Relabeling::Off => Perm::identity(q),
        Relabeling::Optimal if keep_outside => Perm::identity(q),
        Relabeling::Optimal => {
            let v = Volumes::compute(&t.source, &t.target, t.op)?;
            let s = sparse_max(&v.matrix().transpose())?;
            let after = v.remote_after(&s);
            let _ = remote.set((v.remote(), after.min(v.remote())));
            if v.remote_after(&s) < v.remote() {
                s
            } else {
                Perm::identity(q)
            }
        }
        Relabeling::Given(s) => {
            if s.len() < t.target.ranks() || s.len() > size {
                return Err(Mismatched::GivenRelabeling {
                    transform: k,
                    sigma: s.len(),
                    target: t.target.ranks(),
                    communicator: size,
                }
                .into());
            }
            if keep_outside && !s.is_identity() {
                return Err(Error::Relabeling(format!(
                    "transform {k}: the target is a submatrix of A, and relabeling would give \
                     the elements of A outside it other owners; plan with Relabeling::Off, or \
                     declare TargetContents::Relabeled if A is stored in the relabeled layout"
                )));
            }
            s
        }
    };
    // σ moves no owner of the target (the identity, or a joint σ that fixes its
    // labels): the layout as given, its storage included
    let unchanged = sigma.is_identity()
        || (is_joint && labels_of(&t.target).iter().all(|&r| sigma.apply(r) == r));
    let (target, given_target) = if unchanged {
        (t.target, None)
    } else {
        (t.target.relabeled(&sigma)?, Some(t.target))
    };
    Ok(PairPlan {
        source_len: 0,
        target_len: 0,
        regions: Vec::new(),
        source: t.source,
        target,
        op: t.op,
        needs_zero_beta: t.contents == TargetContents::AsGiven && !unchanged,
        sigma,
        given_target,
        remote,
    })
}

impl PairPlan {
    /// Elements crossing ranks without and with σ (see [`PairPlan::remote`]).
    pub(crate) fn remote_volumes(&self) -> Result<(u64, u64)> {
        if let Some(&r) = self.remote.get() {
            return Ok(r);
        }
        let after = Volumes::compute(&self.source, &self.target, self.op)?.remote();
        let before = match &self.given_target {
            Some(g) => Volumes::compute(&self.source, g, self.op)?.remote(),
            None => after,
        };
        Ok(*self.remote.get_or_init(|| (before, after)))
    }
}

/// Sort key of a piece inside a package: `(transform, position)`.
type PieceKey = (u32, [usize; 6]);

/// Edge, in elements, of the squares of the matrix a transposing package walks one
/// after the other (see [`piece_key`]).
const SUPER: usize = 1024;

/// The canonical order of pieces inside a package, the same on both sides: by
/// transform, then
/// * op = identity: in the source's column order (target columns), so that packing
///   streams through column-major B and unpacking through column-major A;
/// * transposes: by squares of [`SUPER`] × [`SUPER`] target elements, inside them by
///   target block (column-major) and inside a block column-major. Walking whole
///   target rows instead (B's column order) touches a new page of A for every column
///   of every piece — thousands of pages per strip, far beyond the TLB — and made
///   unpacking 2x slower than the straight copy; inside a square both the target
///   columns written and the source columns read fit the TLB.
///
/// `(i0, j0)` is the piece's first target element and `(r0, c0)` the first element of
/// the target block it lies in.
fn piece_key(k: u32, transposed: bool, i0: usize, j0: usize, r0: usize, c0: usize) -> PieceKey {
    if transposed {
        (k, [c0 / SUPER, r0 / SUPER, c0, r0, j0, i0])
    } else {
        (k, [j0, i0, 0, 0, 0, 0])
    }
}

/// A layout equivalent to `l` for cutting pieces (the same owner and local position
/// of every element): a block-cyclic dimension on one process is a single block, since
/// its blocks all lie on that process, one after the other in local storage. Matrices
/// with thin blocks on a 1 × Q or P × 1 grid (ScaLAPACK's 1 × 15 blocks on 1 × 3)
/// are then cut into few large pieces instead of one per block.
pub(super) fn coarse(l: &Layout) -> std::borrow::Cow<'_, Layout> {
    use std::borrow::Cow;
    if let Layout::BlockCyclic(b) = l {
        let s = b.spec();
        if (s.nprow == 1 && s.mb < s.m) || (s.npcol == 1 && s.nb < s.n) {
            let mut c = s.clone();
            if s.nprow == 1 {
                c.mb = s.m;
            }
            if s.npcol == 1 {
                c.nb = s.n;
            }
            if let Ok(c) = crate::layout::BlockCyclic::new(c) {
                return Cow::Owned(c.into());
            }
        }
    }
    Cow::Borrowed(l)
}

/// Finds the pieces of pair `k` this rank sends, receives and copies locally, cutting
/// the (coarsened) `source` and `target` layouts of `p`.
fn enumerate_pair(
    k: u32,
    p: &PairPlan,
    (source, target): (&Layout, &Layout),
    rank: usize,
    tblocks: &[LocalBlock],
    pieces: &mut Pieces,
) {
    let Pieces {
        sends,
        recvs,
        local,
    } = pieces;
    let tr = p.op.transposes();
    let view = OpView::new(source, p.op);
    let t_rows = intervals(&target.row_axis());
    let t_cols = intervals(&target.col_axis());
    let mut tblock_at: HashMap<(usize, usize), usize> = HashMap::with_capacity(tblocks.len());
    for (b, blk) in tblocks.iter().enumerate() {
        tblock_at.insert((blk.rows.start, blk.cols.start), b);
    }
    let axes = (&t_rows[..], &t_cols[..]);
    enumerate_sends(
        k,
        p,
        (source, target),
        rank,
        axes,
        Some((&tblock_at, local)),
        None,
        sends,
    );
    // Receiving side: my target blocks cut by op(source)'s intervals, visited in the
    // packages' canonical order: straight ones column interval by column interval
    // across a block column, transposed ones block by block in `piece_key`'s order.
    let v_rows = intervals(&view.row_axis());
    let v_cols = intervals(&view.col_axis());
    let mut visit = |b: usize,
                     &(r0, r1, rc): &(usize, usize, usize),
                     &(c0, c1, ccl): &(usize, usize, usize)| {
        let blk = &tblocks[b];
        let (i0, i1) = (r0.max(blk.rows.start), r1.min(blk.rows.end));
        let owner = view.owner(rc, ccl);
        if owner == rank {
            return;
        }
        let (j0, j1) = (c0.max(blk.cols.start), c1.min(blk.cols.end));
        let (rows, cols) = (i1 - i0, j1 - j0);
        // The package holds the piece densely: straight pieces in the
        // sender's storage order, transposed ones in this rank's A order.
        let (s_rs, s_cs) = if tr {
            match storage_order(target, rank) {
                Order::ColMajor => (1, rows),
                Order::RowMajor => (cols, 1),
            }
        } else {
            match storage_order(source, owner) {
                Order::ColMajor => (1, rows),
                Order::RowMajor => (cols, 1),
            }
        };
        recvs.push((
            owner,
            piece_key(k, tr, i0, j0, blk.rows.start, blk.cols.start),
            DstPiece {
                pair: k,
                block: b,
                r0: i0,
                c0: j0,
                rows,
                cols,
                src: 0,
                s_rs,
                s_cs,
            },
        ));
    };
    if tr {
        let mut order: Vec<usize> = (0..tblocks.len()).collect();
        order.sort_unstable_by_key(|&b| {
            let (r0, c0) = (tblocks[b].rows.start, tblocks[b].cols.start);
            piece_key(k, true, r0, c0, r0, c0)
        });
        for b in order {
            let blk = &tblocks[b];
            for c in overlapping(&v_cols, &blk.cols) {
                for r in overlapping(&v_rows, &blk.rows) {
                    visit(b, r, c);
                }
            }
        }
    } else {
        let dims = |b: &LocalBlock| (b.rows.clone(), b.cols.clone());
        visit_by_columns(tblocks, dims, &v_rows, &v_cols, visit);
    }
}

/// An interval of an axis: start, end, class.
type Interval = (usize, usize, usize);

/// Where [`enumerate_sends`] puts the pieces a rank keeps: its target blocks by first
/// element, and the list.
type LocalPieces<'a> = (&'a HashMap<(usize, usize), usize>, &'a mut Vec<DstPiece>);

/// The pieces `rank` sends for pair `k` (to `only`, or to every other rank), in the
/// order of its (coarsened) source blocks cut by the target's intervals `t_axes`, and,
/// with `local` (this rank's target blocks by first element, and where to put them),
/// the pieces it keeps. A receiver calls it for a peer to learn where the peer's
/// package lies in the peer's B.
#[allow(clippy::too_many_arguments)]
fn enumerate_sends(
    k: u32,
    p: &PairPlan,
    (source, target): (&Layout, &Layout),
    rank: usize,
    (t_rows, t_cols): (&[Interval], &[Interval]),
    mut local: Option<LocalPieces<'_>>,
    only: Option<usize>,
    sends: &mut Vec<SrcPiece>,
) {
    let tr = p.op.transposes();
    // Sending side: my source blocks cut by the target's intervals (in op(B)
    // coordinates), visited so that straight packages come out in their canonical order.
    let sblocks = blocks_of(source, rank);
    let view_of = |b: &LocalBlock| {
        if tr {
            (b.cols.clone(), b.rows.clone())
        } else {
            (b.rows.clone(), b.cols.clone())
        }
    };
    let mut emit = |bi: usize,
                    &(r0, r1, rc): &(usize, usize, usize),
                    &(c0, c1, ccl): &(usize, usize, usize)| {
        let blk = &sblocks[bi];
        let (rr, cc) = view_of(blk);
        let (b_rs, b_cs) = strides(blk.order, blk.ld);
        let (i0, i1) = (r0.max(rr.start), r1.min(rr.end));
        let (j0, j1) = (c0.max(cc.start), c1.min(cc.end));
        let owner = target.owner_by_class(rc, ccl);
        // The piece in B coordinates.
        let (bi, bj, b_rows, b_cols) = if tr {
            (j0, i0, j1 - j0, i1 - i0)
        } else {
            (i0, j0, i1 - i0, j1 - j0)
        };
        let src = blk.index(bi - blk.rows.start, bj - blk.cols.start);
        if owner == rank {
            let Some((tblock_at, local)) = local.as_mut() else {
                return;
            };
            let block = tblock_at[&(r0, c0)];
            let (s_rs, s_cs) = if tr { (b_cs, b_rs) } else { (b_rs, b_cs) };
            local.push(DstPiece {
                pair: k,
                block,
                r0: i0,
                c0: j0,
                rows: i1 - i0,
                cols: j1 - j0,
                src,
                s_rs,
                s_cs,
            });
        } else if only.is_none_or(|m| m == owner) {
            // Straight pieces travel in B's storage order (packing copies whole
            // runs); transposed ones already in the receiver's A order, so that
            // the receiver copies whole runs and the transposition happens
            // while packing, into the small dense package piece.
            let (ld, step, inner, outer) = if !tr {
                match blk.order {
                    Order::ColMajor => (blk.ld, 1, b_rows, b_cols),
                    Order::RowMajor => (blk.ld, 1, b_cols, b_rows),
                }
            } else {
                // Target element (i, j) of the piece is B(j, i).
                let (rows, cols) = (i1 - i0, j1 - j0);
                match storage_order(target, owner) {
                    Order::ColMajor => (b_rs, b_cs, rows, cols),
                    Order::RowMajor => (b_cs, b_rs, cols, rows),
                }
            };
            sends.push(SrcPiece {
                key: piece_key(k, tr, i0, j0, r0, c0),
                peer: owner,
                src,
                ld,
                step,
                inner,
                outer,
            });
        }
    };
    match product_axes(&sblocks, &view_of) {
        Some(axes) if tr => visit_by_target_squares(&axes, t_rows, t_cols, &mut emit),
        _ => visit_by_columns(&sblocks, view_of, t_rows, t_cols, &mut emit),
    }
}

/// Visits the pieces of `blocks` cut by the intervals `rows` × `cols` (`dims` gives a
/// block's row and column ranges in those coordinates) as `f(block, row interval,
/// column interval)`: block column by block column, inside one column interval by
/// column interval, inside blocks by first row and rows by row interval. The pieces
/// of any one peer then come in the order of their (first column, first row), the
/// canonical order of straight packages ([`piece_key`]).
///
/// # Complexity
/// O(blocks + pieces) for blocks given as a product of row and column ranges, rows
/// outer (a block-cyclic local matrix); O(blocks · log blocks + pieces) otherwise.
fn visit_by_columns<B>(
    blocks: &[B],
    dims: impl Fn(&B) -> (Range<usize>, Range<usize>),
    rows: &[(usize, usize, usize)],
    cols: &[(usize, usize, usize)],
    mut f: impl FnMut(usize, &(usize, usize, usize), &(usize, usize, usize)),
) {
    // (block, start of its column group) in visiting order.
    let order: Vec<(usize, usize)> = product_by_columns(blocks, &dims).unwrap_or_else(|| {
        let mut o: Vec<(usize, usize, usize, usize)> = blocks
            .iter()
            .enumerate()
            .map(|(b, x)| {
                let (r, c) = dims(x);
                (c.start, c.end, r.start, b)
            })
            .collect();
        o.sort_unstable();
        let mut g = 0;
        o.iter()
            .enumerate()
            .map(|(k, x)| {
                if (x.0, x.1) != (o[g].0, o[g].1) {
                    g = k;
                }
                (x.3, g)
            })
            .collect()
    });
    let mut g = 0;
    while g < order.len() {
        let e = g + order[g..].partition_point(|x| x.1 == g);
        for c in overlapping(cols, &dims(&blocks[order[g].0]).1) {
            for &(b, _) in &order[g..e] {
                for r in overlapping(rows, &dims(&blocks[b]).0) {
                    f(b, r, c);
                }
            }
        }
        g = e;
    }
}

/// Blocks that form a product of row ranges × column ranges (in some coordinates):
/// the ranges, increasing, and the block at each (row, column) position.
struct ProductAxes {
    rows: Vec<Range<usize>>,
    cols: Vec<Range<usize>>,
    /// `block[a · cols.len() + c]`: the block at row range `a`, column range `c`.
    block: Vec<usize>,
}

/// The blocks as a product of increasing row ranges and increasing column ranges
/// (`dims` gives a block's ranges), given in either nesting (rows or columns outer);
/// `None` for any other arrangement.
///
/// # Complexity
/// O(blocks).
fn product_axes<B>(
    blocks: &[B],
    dims: &impl Fn(&B) -> (Range<usize>, Range<usize>),
) -> Option<ProductAxes> {
    if let Some(order) = product_by_columns(blocks, dims) {
        // rows outer: `order` lists blocks column by column
        let nr = order.iter().take_while(|x| x.1 == 0).count();
        let nc = blocks.len() / nr;
        let rows = (0..nr).map(|a| dims(&blocks[a * nc]).0).collect();
        let cols = (0..nc).map(|c| dims(&blocks[c]).1).collect();
        return Some(ProductAxes {
            rows,
            cols,
            block: (0..blocks.len()).collect(),
        });
    }
    let swapped = |b: &B| {
        let (r, c) = dims(b);
        (c, r)
    };
    let order = product_by_columns(blocks, &swapped)?;
    // columns outer: block at (row a, column c) is c·nr + a
    let nc = order.iter().take_while(|x| x.1 == 0).count();
    let nr = blocks.len() / nc;
    let rows: Vec<Range<usize>> = (0..nr).map(|a| dims(&blocks[a]).0).collect();
    let cols = (0..nc).map(|c| dims(&blocks[c * nr]).1).collect();
    let block = (0..nr)
        .flat_map(|a| (0..nc).map(move |c| c * nr + a))
        .collect();
    Some(ProductAxes { rows, cols, block })
}

/// Visits the pieces of product-arranged blocks cut by the target intervals `rows` ×
/// `cols` in the canonical order of transposed packages ([`piece_key`]): by squares
/// of [`SUPER`] target elements, target block by target block column-major, inside a
/// block by (first column, first row). Only target intervals that meet the blocks are
/// visited.
///
/// # Complexity
/// O(pieces + blocks' ranges · log intervals).
fn visit_by_target_squares(
    axes: &ProductAxes,
    rows: &[(usize, usize, usize)],
    cols: &[(usize, usize, usize)],
    f: &mut impl FnMut(usize, &(usize, usize, usize), &(usize, usize, usize)),
) {
    // The target intervals that meet the ranges, with the ranges each one meets.
    let meet = |iv: &[(usize, usize, usize)], ranges: &[Range<usize>]| {
        let mut out: Vec<(usize, Range<usize>)> = Vec::new();
        for (a, r) in ranges.iter().enumerate() {
            let first = iv.partition_point(|x| x.1 <= r.start);
            for (t, x) in iv.iter().enumerate().skip(first) {
                if x.0 >= r.end {
                    break;
                }
                match out.last_mut() {
                    Some((lt, span)) if *lt == t => span.end = a + 1,
                    _ => out.push((t, a..a + 1)),
                }
            }
        }
        // ranges are increasing, so each interval's meeting ranges are consecutive,
        // but intervals arrive in the order of the ranges: sort by interval
        out.sort_unstable_by_key(|x| x.0);
        out.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1.start = a.1.start.min(b.1.start);
                a.1.end = a.1.end.max(b.1.end);
                true
            } else {
                false
            }
        });
        out
    };
    let tr = meet(rows, &axes.rows);
    let tc = meet(cols, &axes.cols);
    let nc = axes.cols.len();
    let square = |iv: &[(usize, usize, usize)], x: &(usize, Range<usize>)| iv[x.0].0 / SUPER;
    let mut c = 0;
    while c < tc.len() {
        let ce = c + tc[c..].partition_point(|x| square(cols, x) == square(cols, &tc[c]));
        let mut r = 0;
        while r < tr.len() {
            let re = r + tr[r..].partition_point(|x| square(rows, x) == square(rows, &tr[r]));
            for (ct, cspan) in &tc[c..ce] {
                for (rt, rspan) in &tr[r..re] {
                    for cc in cspan.clone() {
                        for ra in rspan.clone() {
                            f(axes.block[ra * nc + cc], &rows[*rt], &cols[*ct]);
                        }
                    }
                }
            }
            r = re;
        }
        c = ce;
    }
}

/// The column-major visiting order of blocks that form a product of increasing row
/// ranges (outer) and increasing column ranges (inner), as `(block, start of its
/// column group)`; `None` for any other arrangement.
fn product_by_columns<B>(
    blocks: &[B],
    dims: &impl Fn(&B) -> (Range<usize>, Range<usize>),
) -> Option<Vec<(usize, usize)>> {
    let first = dims(blocks.first()?).0;
    let nc = blocks.iter().take_while(|b| dims(b).0 == first).count();
    let nr = blocks.len() / nc;
    if nr * nc != blocks.len() {
        return None;
    }
    for (b, x) in blocks.iter().enumerate() {
        let (r, c) = dims(x);
        let (row_head, col_head) = (dims(&blocks[b - b % nc]).0, dims(&blocks[b % nc]).1);
        let increasing = (b % nc == 0 || dims(&blocks[b - 1]).1.end <= c.start)
            && (b < nc || dims(&blocks[b - nc]).0.end <= r.start);
        if r != row_head || c != col_head || !increasing {
            return None;
        }
    }
    Some(
        (0..nc)
            .flat_map(|c| (0..nr).map(move |r| (r * nc + c, c * nr)))
            .collect(),
    )
}

/// Splits a piece into moves that each stay inside one region of A (and are at most
/// about [`CHUNK`] elements), with target offsets relative to the region's start.
fn split_piece(
    p: &DstPiece,
    blocks: &[LocalBlock],
    regs: &Regions,
    out: &mut Vec<(u32, u32, Move)>,
) {
    let blk = &blocks[p.block];
    let (d_rs, d_cs) = strides(blk.order, blk.ld);
    let (bi, bj) = (p.r0 - blk.rows.start, p.c0 - blk.cols.start);
    // Lines of the block the piece covers, and the extent of each line.
    let (l0, nl, inner) = match blk.order {
        Order::ColMajor => (bj, p.cols, p.rows),
        Order::RowMajor => (bi, p.rows, p.cols),
    };
    let runs = &regs.line_runs[p.block];
    let mut j = runs.partition_point(|r| r.0 <= l0) - 1;
    let step = (CHUNK / inner.max(1)).max(1);
    let mut a = 0;
    while a < nl {
        while j + 1 < runs.len() && runs[j + 1].0 <= l0 + a {
            j += 1;
        }
        let reg = runs[j].1;
        let run_end = runs.get(j + 1).map_or(usize::MAX, |r| r.0);
        let b = nl.min(a + step).min(run_end - l0);
        let (di, dj, rows, cols) = match blk.order {
            Order::ColMajor => (0, a, p.rows, b - a),
            Order::RowMajor => (a, 0, b - a, p.cols),
        };
        let start = regs.ranges[reg as usize].start;
        out.push((
            p.pair,
            reg,
            Move {
                dst: blk.index(bi + di, bj + dj) - start,
                d_rs,
                d_cs,
                src: p.src + di * p.s_rs + dj * p.s_cs,
                s_rs: p.s_rs,
                s_cs: p.s_cs,
                rows,
                cols,
            },
        ));
        a = b;
    }
}

/// [`sort_by_peer_in`] of an owned vector.
#[cfg(test)]
fn sort_by_peer<T: Copy, K: Ord>(
    mut items: Vec<T>,
    peers: usize,
    peer: impl Fn(&T) -> usize,
    key: impl Fn(&T) -> K,
) -> Vec<T> {
    sort_by_peer_in(&mut items, &mut Vec::new(), peers, peer, key);
    items
}

/// Orders `items` by peer, then by `key` (a stable counting sort by peer, then a
/// stable sort per peer, which is linear on the long sorted runs the enumeration
/// produces), with `spare` (whose contents are lost) as the room the counting sort
/// writes into: no allocation when `spare` is large enough.
///
/// # Complexity
/// O(n + peers) plus the per-peer sorts, O(n · log runs); O(n log n) when there are
/// more than 8 peers per item.
fn sort_by_peer_in<T: Copy, K: Ord>(
    items: &mut Vec<T>,
    spare: &mut Vec<T>,
    peers: usize,
    peer: impl Fn(&T) -> usize,
    key: impl Fn(&T) -> K,
) {
    let Some(&first) = items.first() else {
        return;
    };
    if items.len().saturating_mul(8) < peers {
        // Few items among many peers (one rank of a large job): a comparison sort,
        // so that the cost follows this rank's pieces, not the communicator's size.
        items.sort_by(|a, b| peer(a).cmp(&peer(b)).then_with(|| key(a).cmp(&key(b))));
        return;
    }
    let mut start = vec![0usize; peers + 1];
    for x in items.iter() {
        start[peer(x) + 1] += 1;
    }
    for k in 0..peers {
        start[k + 1] += start[k];
    }
    spare.clear();
    spare.resize(items.len(), first);
    let out = spare;
    let mut next = start.clone();
    for x in items.iter() {
        let k = peer(x);
        out[next[k]] = *x;
        next[k] += 1;
    }
    for k in 0..peers {
        let part = &mut out[start[k]..start[k + 1]];
        if !part.is_sorted_by_key(&key) {
            part.sort_by_key(&key);
        }
    }
    std::mem::swap(items, out);
}

/// Groups moves by (pair, region), keeping the order within a group (a stable
/// counting sort: O(moves + regions)).
/// `tagged` is left sorted; `spare` is room for the sort.
fn group(
    tagged: &mut Vec<(u32, u32, Move)>,
    spare: &mut Vec<(u32, u32, Move)>,
    n_pairs: usize,
) -> Work {
    let mut base = vec![0usize; n_pairs + 1];
    for t in tagged.iter() {
        base[t.0 as usize + 1] = base[t.0 as usize + 1].max(t.1 as usize + 1);
    }
    for k in 0..n_pairs {
        base[k + 1] += base[k];
    }
    if !tagged.is_sorted_by_key(|t| (t.0, t.1)) {
        sort_by_peer_in(
            tagged,
            spare,
            base[n_pairs],
            |t| base[t.0 as usize] + t.1 as usize,
            |_| (),
        );
    }
    let mut w = Work {
        moves: Vec::with_capacity(tagged.len()),
        groups: Vec::new(),
        pair_groups: vec![0..0; n_pairs],
        elems: 0,
    };
    for &(pair, reg, m) in tagged.iter() {
        let k = w.moves.len();
        match w.groups.last_mut() {
            Some(g) if g.0 == pair && g.1 == reg => g.2.end = k + 1,
            _ => w.groups.push((pair, reg, k..k + 1)),
        }
        w.elems += m.rows * m.cols;
        w.moves.push(m);
    }
    for (gi, g) in w.groups.iter().enumerate() {
        let r = &mut w.pair_groups[g.0 as usize];
        if r.start == r.end {
            *r = gi..gi + 1;
        } else {
            r.end = gi + 1;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{BlockCyclic, BlockCyclicSpec};

    /// Regions are disjoint, increasing, made of whole lines (every line of every block
    /// inside the region it is assigned to), and not many more than the span over
    /// `min_len`.
    fn check(blocks: &[LocalBlock], r: &Regions, min_len: usize) {
        for w in r.ranges.windows(2) {
            assert!(w[0].end <= w[1].start, "{:?}", r.ranges);
        }
        assert!(r.ranges.iter().all(|g| g.start < g.end));
        // Runs of lines join until a region reaches `min_len`: at most one region per
        // `min_len` elements of the span, plus one.
        if let (Some(f), Some(l)) = (r.ranges.first(), r.ranges.last()) {
            assert!(
                r.ranges.len() <= (l.end - f.start) / min_len + 2,
                "{:?}",
                r.ranges
            );
        }
        for (b, blk) in blocks.iter().enumerate() {
            let (outer, inner) = lines_of(blk);
            assert_eq!(r.line_runs[b][0].0, 0);
            for l in 0..outer {
                if inner == 0 {
                    continue;
                }
                let s = blk.offset + l * blk.ld;
                let g = &r.ranges[r.region_of(b, l) as usize];
                assert!(
                    g.start <= s && s + inner <= g.end,
                    "line {s}+{inner} outside {g:?}"
                );
            }
        }
    }

    #[test]
    fn both_region_builders_give_valid_regions() {
        let mut fast = 0;
        for (m, n, mb, nb, pr, pc) in [
            (37, 23, 3, 2, 2, 3),
            (100, 80, 32, 7, 3, 2),
            (9, 9, 9, 9, 1, 1),
        ] {
            for order in [Order::ColMajor, Order::RowMajor] {
                for lld in [None, Some(120)] {
                    let mut spec = BlockCyclicSpec::new(m, n, mb, nb, pr, pc);
                    spec.local_order = order;
                    spec.lld = lld;
                    let l = BlockCyclic::new(spec).unwrap();
                    for rank in 0..pr * pc {
                        let blocks = l.local_blocks(rank);
                        for min_len in [1, 50, 1000, 1 << 20] {
                            check(&blocks, &regions_by_sorting(&blocks, min_len), min_len);
                            let r = regions_by_window(&blocks, min_len).expect("one local matrix");
                            check(&blocks, &r, min_len);
                            fast += 1;
                        }
                    }
                }
            }
        }
        assert!(fast > 0);
        // Blocks with different leading dimensions take the sorting path.
        let blocks = vec![
            LocalBlock {
                rows: 0..4,
                cols: 0..3,
                offset: 0,
                ld: 4,
                order: Order::ColMajor,
            },
            LocalBlock {
                rows: 4..6,
                cols: 0..3,
                offset: 12,
                ld: 2,
                order: Order::ColMajor,
            },
        ];
        assert!(regions_by_window(&blocks, 1).is_none());
        check(&blocks, &regions(&blocks, 1), 1);
    }

    /// The positions an extent list walks, in order: (transform, element).
    fn walk(extents: &[Extent]) -> Vec<(u32, usize)> {
        extents
            .iter()
            .flat_map(|e| {
                (0..e.count).flat_map(move |l| {
                    (0..e.inner).map(move |i| (e.pair, e.off + l * e.stride + i))
                })
            })
            .collect()
    }

    #[test]
    fn extents_walk_the_packages_in_order() {
        let (mut sends_in_place, mut recvs_in_place) = (0, 0);
        for (m, n, (smb, snb), (dmb, dnb), (spr, spc), (dpr, dpc)) in [
            (37, 23, (3, 2), (5, 4), (2, 2), (1, 3)),
            (64, 64, (8, 8), (32, 32), (2, 2), (2, 2)),
            (50, 70, (7, 9), (4, 11), (3, 1), (2, 2)),
        ] {
            for (src_order, dst_order) in [
                (Order::ColMajor, Order::ColMajor),
                (Order::RowMajor, Order::RowMajor),
                (Order::RowMajor, Order::ColMajor),
            ] {
                for op in [Op::Identity, Op::Transpose] {
                    let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
                    let mut a = BlockCyclicSpec::new(sm, sn, smb, snb, spr, spc);
                    a.local_order = src_order;
                    let mut b = BlockCyclicSpec::new(m, n, dmb, dnb, dpr, dpc);
                    b.local_order = dst_order;
                    b.lld = Some(200);
                    let t = Transform::new(
                        BlockCyclic::new(a).unwrap().into(),
                        BlockCyclic::new(b).unwrap().into(),
                        op,
                    )
                    .with_relabeling(Relabeling::Off);
                    let size = (spr * spc).max(dpr * dpc);
                    for rank in 0..size {
                        for parallel in [false, true] {
                            let batch = vec![t.clone(), t.clone()];
                            let s = Schedule::build(batch, rank, size, 0, parallel).unwrap();
                            for sp in &s.sends {
                                let from_runs: Vec<(u32, usize)> = sp
                                    .runs
                                    .iter()
                                    .flat_map(|&(pair, r)| {
                                        (0..r.outer).flat_map(move |o| {
                                            (0..r.inner)
                                                .map(move |i| (pair, r.src + o * r.ld + i * r.step))
                                        })
                                    })
                                    .collect();
                                assert_eq!(from_runs.len(), sp.elems);
                                match &sp.extents {
                                    Some(e) => {
                                        assert_eq!(walk(e), from_runs);
                                        sends_in_place += 1;
                                    }
                                    None => {
                                        assert!(op.transposes(), "{op:?} package without extents")
                                    }
                                }
                            }
                            for rp in &s.recvs {
                                // Package element -> (transform, element of A), from the moves.
                                let mut at = vec![None; rp.elems];
                                let w = &rp.work;
                                for &(pair, reg, ref range) in &w.groups {
                                    let start = s.pairs[pair as usize].regions[reg as usize].start;
                                    for mv in &w.moves[range.clone()] {
                                        for i in 0..mv.rows {
                                            for j in 0..mv.cols {
                                                let e = mv.src + i * mv.s_rs + j * mv.s_cs;
                                                assert!(
                                                    at[e].is_none(),
                                                    "package element {e} read twice"
                                                );
                                                at[e] = Some((
                                                    pair,
                                                    start + mv.dst + i * mv.d_rs + j * mv.d_cs,
                                                ));
                                            }
                                        }
                                    }
                                }
                                let from_moves: Vec<(u32, usize)> = at
                                    .into_iter()
                                    .map(|x| x.expect("every element read"))
                                    .collect();
                                match &rp.extents {
                                    Some(e) => {
                                        assert_eq!(walk(e), from_moves);
                                        recvs_in_place += 1;
                                    }
                                    None => assert!(
                                        !op.transposes() && src_order != dst_order,
                                        "{op:?} {src_order:?} -> {dst_order:?} package without extents"
                                    ),
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(sends_in_place > 0 && recvs_in_place > 0);
    }

    #[test]
    fn sort_by_peer_is_a_stable_sort_by_peer_then_key() {
        // Both regimes: many items over few peers (counting sort) and few items over
        // many peers (comparison sort); items carry their input position so that
        // stability shows.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (n, peers) in [(500usize, 7usize), (5, 1000), (40, 400), (1, 9), (0, 3)] {
            let items: Vec<(usize, u64, usize)> = (0..n)
                .map(|i| ((next() % peers as u64) as usize, next() % 4, i))
                .collect();
            let mut want = items.clone();
            want.sort_by_key(|t| (t.0, t.1));
            let got = sort_by_peer(items, peers, |t| t.0, |t| t.1);
            assert_eq!(got, want, "{n} items, {peers} peers");
        }
    }
}
