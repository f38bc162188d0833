//! Planning: which pieces of which blocks go where, in which order, into which buffer.

use std::collections::HashMap;
use std::ops::Range;

use super::kernel::{Move, PackRun};
use crate::error::{Error, Result};
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
/// | [`TargetContents::AsGiven`] (default) | relabeled | error at execute if σ ≠ id | `Optimal`: σ = identity; `Given(σ ≠ id)`: error at planning |
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
    pub(crate) remote_before: u64,
    pub(crate) remote_after: u64,
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

/// An outgoing package.
#[derive(Debug, Clone)]
pub(crate) struct SendPlan {
    pub(crate) peer: usize,
    pub(crate) elems: usize,
    /// `(pair, run)`, sorted by `run.dst`.
    pub(crate) runs: Vec<(u32, PackRun)>,
}

/// An incoming package.
#[derive(Debug, Clone)]
pub(crate) struct RecvPlan {
    pub(crate) peer: usize,
    pub(crate) elems: usize,
    pub(crate) work: Work,
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
fn strides(order: Order, ld: usize) -> (usize, usize) {
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
fn storage_order(layout: &Layout, rank: usize) -> Order {
    match layout {
        Layout::BlockCyclic(l) => l.spec().local_order,
        Layout::Grid(g) => g.storage_of(rank).order,
    }
}

/// A piece that lands in this rank's A: target rectangle (absolute target
/// coordinates), the target block it is in, and where its source elements are.
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
struct SrcPiece {
    key: PieceKey,
    peer: usize,
    src: usize,
    ld: usize,
    step: usize,
    inner: usize,
    outer: usize,
}

/// Regions of A's local buffer and, for every local block, the region of each of its
/// lines (columns for column-major blocks, rows for row-major).
struct Regions {
    ranges: Vec<Range<usize>>,
    line_region: Vec<Vec<u32>>,
}

/// Cuts A's local buffer into disjoint ranges, each made of whole lines of blocks, so
/// that moves into different regions can run in parallel on disjoint slices.
///
/// Lines whose memory overlaps (e.g. the columns of the blocks of one block column of
/// a column-major block-cyclic matrix) fall into the same region; consecutive groups
/// are joined until a region holds at least `min_len` elements.
fn regions(blocks: &[LocalBlock], min_len: usize) -> Regions {
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
        line_region,
    }
}

impl Schedule {
    /// Plans `batch` for `rank` of `size` ranks (a pure function of its arguments).
    pub(crate) fn build(
        batch: Vec<Transform>,
        rank: usize,
        size: usize,
        fingerprint: u64,
    ) -> Result<Self> {
        let mut pairs = Vec::with_capacity(batch.len());
        for (k, t) in batch.into_iter().enumerate() {
            pairs.push(plan_pair(k, t, size)?);
        }
        let mut src_pieces: Vec<SrcPiece> = Vec::new();
        let mut recv_pieces: Vec<(usize, PieceKey, DstPiece)> = Vec::new();
        let mut local_pieces: Vec<DstPiece> = Vec::new();
        let mut tblocks: Vec<Vec<LocalBlock>> = Vec::with_capacity(pairs.len());
        for p in pairs.iter_mut() {
            p.source_len = len_of(&p.source, rank);
            p.target_len = len_of(&p.target, rank);
        }
        for (k, p) in pairs.iter().enumerate() {
            let blocks = blocks_of(&p.target, rank);
            enumerate_pair(
                k as u32,
                p,
                rank,
                &blocks,
                &mut src_pieces,
                &mut recv_pieces,
                &mut local_pieces,
            );
            tblocks.push(blocks);
        }
        let mut regs = Vec::with_capacity(pairs.len());
        for (p, blocks) in pairs.iter_mut().zip(&tblocks) {
            // Transposes walk their regions in squares (see `piece_key`); wider regions
            // let a square span more target columns.
            let parts = if p.op.transposes() { 8 } else { 64 };
            let r = regions(blocks, CHUNK.max(p.target_len / parts));
            p.regions = r.ranges.clone();
            regs.push(r);
        }

        // Outgoing packages: pieces in canonical order, packed densely.
        src_pieces.sort_unstable_by_key(|p| (p.peer, p.key));
        let mut sends: Vec<SendPlan> = Vec::new();
        for p in &src_pieces {
            if sends.last().is_none_or(|s| s.peer != p.peer) {
                sends.push(SendPlan {
                    peer: p.peer,
                    elems: 0,
                    runs: Vec::new(),
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

        // Incoming packages: the same canonical order on the receiving side.
        recv_pieces.sort_unstable_by_key(|p| (p.0, p.1));
        let mut recvs: Vec<RecvPlan> = Vec::new();
        let mut buckets: Vec<Vec<(u32, u32, Move)>> = Vec::new();
        for (peer, _, mut piece) in recv_pieces {
            if recvs.last().is_none_or(|r| r.peer != peer) {
                recvs.push(RecvPlan {
                    peer,
                    elems: 0,
                    work: Work::default(),
                });
                buckets.push(Vec::new());
            }
            let r = recvs.last_mut().expect("just pushed");
            piece.src += r.elems;
            r.elems += piece.rows * piece.cols;
            split_piece(
                &piece,
                &tblocks[piece.pair as usize],
                &regs[piece.pair as usize],
                buckets.last_mut().expect("just pushed"),
            );
        }
        for (r, b) in recvs.iter_mut().zip(buckets) {
            r.work = group(b, pairs.len());
        }
        // Local pieces of transposes in the packages' square order (both B and A are
        // then walked a few hundred pages at a time); the grouping by region below
        // keeps this order inside every region.
        local_pieces.sort_by_cached_key(|d| {
            let blk = &tblocks[d.pair as usize][d.block];
            let tr = pairs[d.pair as usize].op.transposes();
            piece_key(d.pair, tr, d.r0, d.c0, blk.rows.start, blk.cols.start)
        });
        let mut local = Vec::new();
        for piece in &local_pieces {
            split_piece(
                piece,
                &tblocks[piece.pair as usize],
                &regs[piece.pair as usize],
                &mut local,
            );
        }
        let local = group(local, pairs.len());
        Ok(Self {
            size,
            fingerprint,
            pairs,
            sends,
            recvs,
            local,
        })
    }
}

/// Validates one transform and computes its relabeling.
fn plan_pair(k: usize, t: Transform, size: usize) -> Result<PairPlan> {
    for (what, l) in [("source", &t.source), ("target", &t.target)] {
        if l.ranks() > size {
            return Err(Error::Mismatch(format!(
                "transform {k}: the {what} layout needs {} ranks but the communicator has {size}",
                l.ranks()
            )));
        }
    }
    check_shapes(&t.source, &t.target, t.op)
        .map_err(|e| Error::Mismatch(format!("transform {k}: {e}")))?;
    let v = Volumes::compute(&t.source, &t.target, t.op)?;
    let q = v.ranks();
    // A's contents outside a target submatrix stay where the given layout puts them.
    let keep_outside = t.contents == TargetContents::AsGiven && !t.target.is_whole();
    let sigma = match t.relabeling {
        Relabeling::Off => Perm::identity(q),
        Relabeling::Optimal if keep_outside => Perm::identity(q),
        Relabeling::Optimal => {
            let s = sparse_max(&v.matrix().transpose())?;
            if v.remote_after(&s) < v.remote() {
                s
            } else {
                Perm::identity(q)
            }
        }
        Relabeling::Given(s) => {
            if s.len() < t.target.ranks() || s.len() > size {
                return Err(Error::Mismatch(format!(
                    "transform {k}: relabeling of {} ranks for a target on {} ranks in a communicator of {size}",
                    s.len(),
                    t.target.ranks()
                )));
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
    let target = if sigma.is_identity() {
        t.target
    } else {
        t.target.relabeled(&sigma)?
    };
    let remote_after = Volumes::compute(&t.source, &target, t.op)?.remote();
    Ok(PairPlan {
        source_len: 0,
        target_len: 0,
        regions: Vec::new(),
        source: t.source,
        target,
        op: t.op,
        needs_zero_beta: t.contents == TargetContents::AsGiven && !sigma.is_identity(),
        sigma,
        remote_before: v.remote(),
        remote_after,
    })
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

/// Finds the pieces of pair `k` this rank sends, receives and copies locally.
fn enumerate_pair(
    k: u32,
    p: &PairPlan,
    rank: usize,
    tblocks: &[LocalBlock],
    sends: &mut Vec<SrcPiece>,
    recvs: &mut Vec<(usize, PieceKey, DstPiece)>,
    local: &mut Vec<DstPiece>,
) {
    let tr = p.op.transposes();
    let view = OpView::new(&p.source, p.op);
    let t_rows = intervals(&p.target.row_axis());
    let t_cols = intervals(&p.target.col_axis());
    let mut tblock_at: HashMap<(usize, usize), usize> = HashMap::with_capacity(tblocks.len());
    for (b, blk) in tblocks.iter().enumerate() {
        tblock_at.insert((blk.rows.start, blk.cols.start), b);
    }
    // Sending side: my source blocks cut by the target's intervals.
    for blk in blocks_of(&p.source, rank) {
        let (rr, cc) = if tr {
            (blk.cols.clone(), blk.rows.clone())
        } else {
            (blk.rows.clone(), blk.cols.clone())
        };
        let (b_rs, b_cs) = strides(blk.order, blk.ld);
        for &(r0, r1, rc) in overlapping(&t_rows, &rr) {
            let (i0, i1) = (r0.max(rr.start), r1.min(rr.end));
            for &(c0, c1, ccl) in overlapping(&t_cols, &cc) {
                let (j0, j1) = (c0.max(cc.start), c1.min(cc.end));
                let owner = p.target.owner_by_class(rc, ccl);
                // The piece in B coordinates.
                let (bi, bj, b_rows, b_cols) = if tr {
                    (j0, i0, j1 - j0, i1 - i0)
                } else {
                    (i0, j0, i1 - i0, j1 - j0)
                };
                let src = blk.index(bi - blk.rows.start, bj - blk.cols.start);
                if owner == rank {
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
                } else {
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
                        match storage_order(&p.target, owner) {
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
            }
        }
    }
    // Receiving side: my target blocks cut by op(source)'s intervals.
    let v_rows = intervals(&view.row_axis());
    let v_cols = intervals(&view.col_axis());
    for (b, blk) in tblocks.iter().enumerate() {
        for &(r0, r1, rc) in overlapping(&v_rows, &blk.rows) {
            let (i0, i1) = (r0.max(blk.rows.start), r1.min(blk.rows.end));
            for &(c0, c1, ccl) in overlapping(&v_cols, &blk.cols) {
                let owner = view.owner(rc, ccl);
                if owner == rank {
                    continue;
                }
                let (j0, j1) = (c0.max(blk.cols.start), c1.min(blk.cols.end));
                let (rows, cols) = (i1 - i0, j1 - j0);
                // The package holds the piece densely: straight pieces in the
                // sender's storage order, transposed ones in this rank's A order.
                let (s_rs, s_cs) = if tr {
                    match storage_order(&p.target, rank) {
                        Order::ColMajor => (1, rows),
                        Order::RowMajor => (cols, 1),
                    }
                } else {
                    match storage_order(&p.source, owner) {
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
            }
        }
    }
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
    let lr = &regs.line_region[p.block];
    let step = (CHUNK / inner.max(1)).max(1);
    let mut a = 0;
    while a < nl {
        let reg = lr[l0 + a];
        let mut b = a + 1;
        while b < nl && b - a < step && lr[l0 + b] == reg {
            b += 1;
        }
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

/// Groups moves by (pair, region), keeping the order within a group.
fn group(mut tagged: Vec<(u32, u32, Move)>, n_pairs: usize) -> Work {
    tagged.sort_by_key(|t| (t.0, t.1));
    let mut w = Work {
        moves: Vec::with_capacity(tagged.len()),
        groups: Vec::new(),
        pair_groups: vec![0..0; n_pairs],
        elems: 0,
    };
    for (pair, reg, m) in tagged {
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
