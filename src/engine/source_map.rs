//! Where an incoming package lies in its sender's B, for a receiver that reads the
//! sender's node-shared B directly: every move of the package, planned from package
//! offsets, mapped onto the sender's local storage.
//!
//! The receiver derives it from its own pieces of the package (their package offsets
//! and their place in the global matrix, kept by the plan) and the sender's storage
//! of the source layout, which it knows: a block-cyclic layout by index arithmetic,
//! any other by the sender's blocks.

use std::collections::HashMap;

use super::schedule::{coarse, remap_move, storage_order, strides, PairPlan, PeerWork, Schedule};
use crate::layout::{Layout, LocalBlock, Order};

/// A non-empty piece of an incoming package: it starts at package element `start`
/// and covers target rows `r0 .. r0 + rows` and columns `c0 .. c0 + cols` of
/// transform `pair` (coordinates of op(B), which are A's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecvPiece {
    pub(crate) start: usize,
    pub(crate) pair: u32,
    pub(crate) r0: usize,
    pub(crate) c0: usize,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

impl RecvPiece {
    fn end(&self) -> usize {
        self.start + self.rows * self.cols
    }
}

/// A packed piece in the sender's B, `(src, ld, step, inner, outer)`: element `i` of
/// line `o` is B element `src + o·ld + i·step`.
type Shape = (usize, usize, usize, usize, usize);

/// Where the elements of a layout lie in one rank's local buffer.
enum Locator {
    /// A block-cyclic layout: the local row of global row `g` is
    /// `⌊g / (mb·nprow)⌋·mb + g mod mb` (columns alike), offset from the submatrix's
    /// first row `ia` (column `ja`).
    Cyclic {
        ia: usize,
        ja: usize,
        mb: usize,
        nb: usize,
        nprow: usize,
        npcol: usize,
        ld: usize,
        order: Order,
    },
    /// Any layout: the rank's blocks by first element, and the layout's interval
    /// boundaries that give a block's first element.
    Blocks {
        rows: Vec<usize>,
        cols: Vec<usize>,
        at: HashMap<(usize, usize), usize>,
        blocks: Vec<LocalBlock>,
    },
}

impl Locator {
    /// The locator of `rank`'s local buffer of `layout`.
    ///
    /// # Complexity
    /// O(1) for a block-cyclic layout; O(the rank's blocks + intervals) otherwise.
    fn new(layout: &Layout, rank: usize) -> Self {
        if let Layout::BlockCyclic(bc) = layout {
            if let Some(ld) = bc.local_ld(rank) {
                let (s, sub) = (bc.spec(), bc.submatrix());
                return Locator::Cyclic {
                    ia: sub.ia,
                    ja: sub.ja,
                    mb: s.mb,
                    nb: s.nb,
                    nprow: s.nprow,
                    npcol: s.npcol,
                    ld,
                    order: s.local_order,
                };
            }
        }
        // Cut as the planner cuts: blocks of the coarsened layout.
        let layout = coarse(layout);
        let blocks = super::schedule::blocks_of(&layout, rank);
        let at = blocks
            .iter()
            .enumerate()
            .map(|(b, blk)| ((blk.rows.start, blk.cols.start), b))
            .collect();
        Locator::Blocks {
            rows: layout.row_axis().boundaries(),
            cols: layout.col_axis().boundaries(),
            at,
            blocks,
        }
    }

    /// Where element `(i, j)` of the layout lies in the rank's buffer, and the
    /// leading dimension and order of its block; `None` if the rank does not hold it
    /// (only checked for layouts other than block-cyclic).
    fn locate(&self, i: usize, j: usize) -> Option<(usize, usize, Order)> {
        match *self {
            Locator::Cyclic {
                ia,
                ja,
                mb,
                nb,
                nprow,
                npcol,
                ld,
                order,
            } => {
                let local = |g: usize, b: usize, procs: usize| (g / (b * procs)) * b + g % b;
                let (lr, lc) = (local(ia + i, mb, nprow), local(ja + j, nb, npcol));
                let at = match order {
                    Order::ColMajor => lr + lc * ld,
                    Order::RowMajor => lr * ld + lc,
                };
                Some((at, ld, order))
            }
            Locator::Blocks {
                ref rows,
                ref cols,
                ref at,
                ref blocks,
            } => {
                let start = |b: &[usize], x: usize| {
                    b.partition_point(|&s| s <= x).checked_sub(1).map(|k| b[k])
                };
                let (r0, c0) = (start(rows, i)?, start(cols, j)?);
                let blk = &blocks[*at.get(&(r0, c0))?];
                Some((blk.index(i - r0, j - c0), blk.ld, blk.order))
            }
        }
    }
}

/// The shape `(src, ld, step, inner, outer)` in which `sender` packs piece `pc` of
/// pair `p` for `receiver` (element `i` of line `o` of the packed piece is B element
/// `src + o·ld + i·step`): the sender's own choice, see the planner's sending side.
fn sender_shape(p: &PairPlan, loc: &Locator, pc: &RecvPiece, receiver: usize) -> Option<Shape> {
    let tr = p.op.transposes();
    // The piece in B coordinates.
    let (bi, bj, b_rows, b_cols) = if tr {
        (pc.c0, pc.r0, pc.cols, pc.rows)
    } else {
        (pc.r0, pc.c0, pc.rows, pc.cols)
    };
    let (src, ld, order) = loc.locate(bi, bj)?;
    let (b_rs, b_cs) = strides(order, ld);
    Some(if !tr {
        match order {
            Order::ColMajor => (src, ld, 1, b_rows, b_cols),
            Order::RowMajor => (src, ld, 1, b_cols, b_rows),
        }
    } else {
        // Target element (i, j) of the piece is B(j, i), packed in A's order.
        match storage_order(&p.target, receiver) {
            Order::ColMajor => (src, b_rs, b_cs, pc.rows, pc.cols),
            Order::RowMajor => (src, b_cs, b_rs, pc.cols, pc.rows),
        }
    })
}

impl Schedule {
    /// [`PeerWork`] of incoming package `k` of `rank`: every move of the package
    /// mapped from package offsets to the sender's B. A move's piece is found from
    /// the package's pieces (the next piece, or a binary search when moves jump),
    /// and the piece's place in the sender's B from the source layout. `None` if a
    /// move does not map (never for a package planned by this schedule).
    ///
    /// # Complexity
    /// O(moves) for block-cyclic sources, moves in package order within a group;
    /// O(moves · log pieces) at worst, plus the sender's blocks for other layouts.
    pub(crate) fn peer_work(&self, k: usize, rank: usize) -> Option<PeerWork> {
        let r = self.recvs.get(k)?;
        let pieces = &r.pieces;
        let mut locators: Vec<Option<Locator>> = self.pairs.iter().map(|_| None).collect();
        let mut need = vec![0usize; self.pairs.len()];
        let mut moves = Vec::with_capacity(r.work.moves.len());
        // The piece of the last move, and its shape in the sender's B.
        let mut at: Option<(usize, Shape)> = None;
        for g in &r.work.groups {
            for m in &r.work.moves[g.2.clone()] {
                if m.rows * m.cols == 0 {
                    moves.push(*m);
                    continue;
                }
                let i = match at {
                    Some((i, _)) if pieces[i].start <= m.src && m.src < pieces[i].end() => i,
                    Some((i, _))
                        if pieces
                            .get(i + 1)
                            .is_some_and(|p| p.start <= m.src && m.src < p.end()) =>
                    {
                        i + 1
                    }
                    _ => pieces
                        .partition_point(|p| p.start <= m.src)
                        .checked_sub(1)?,
                };
                let shape = match at {
                    Some((j, shape)) if j == i => shape,
                    _ => {
                        let pc = &pieces[i];
                        let pair = pc.pair as usize;
                        let p = self.pairs.get(pair)?;
                        let loc =
                            locators[pair].get_or_insert_with(|| Locator::new(&p.source, r.peer));
                        let shape = sender_shape(p, loc, pc, rank)?;
                        at = Some((i, shape));
                        shape
                    }
                };
                let pc = &pieces[i];
                if pc.pair != g.0 {
                    return None;
                }
                moves.push(remap_move(
                    m,
                    shape,
                    m.src - pc.start,
                    &mut need[g.0 as usize],
                )?);
            }
        }
        Some(PeerWork::remapped(r, moves, need))
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::engine::{Relabeling, Transform};
    use crate::layout::{BlockCyclic, BlockCyclicSpec, Grid, GridSpec, Op, RankStorage, Submatrix};

    fn order(rng: &mut ChaCha8Rng) -> Order {
        if rng.random_range(0..2) == 0 {
            Order::ColMajor
        } else {
            Order::RowMajor
        }
    }

    /// A random block-cyclic layout on at most `size` ranks describing `rows × cols`
    /// (a submatrix of a larger matrix in some cases), with random sources, grid
    /// order, local order and leading dimension.
    fn block_cyclic(rng: &mut ChaCha8Rng, rows: usize, cols: usize, size: usize) -> Layout {
        let nprow = rng.random_range(1..=size);
        let npcol = rng.random_range(1..=size / nprow);
        let (er, ec) = if rng.random_range(0..3) == 0 {
            (rng.random_range(0..9usize), rng.random_range(0..9usize))
        } else {
            (0, 0)
        };
        let (m, n) = (rows + er, cols + ec);
        let mut s = BlockCyclicSpec::new(
            m,
            n,
            rng.random_range(1..=m.min(13)),
            rng.random_range(1..=n.min(13)),
            nprow,
            npcol,
        );
        s.grid_order = order(rng);
        s.rsrc = rng.random_range(0..nprow);
        s.csrc = rng.random_range(0..npcol);
        s.local_order = order(rng);
        if er + ec > 0 {
            s.submatrix = Some(Submatrix {
                ia: rng.random_range(0..=er),
                ja: rng.random_range(0..=ec),
                m: rows,
                n: cols,
            });
        }
        if rng.random_range(0..3) == 0 {
            s.lld = Some(m.max(n) + rng.random_range(0..5));
        }
        if rng.random_range(0..4) == 0 {
            s.ranks = Some(size);
        }
        BlockCyclic::new(s).expect("a valid layout").into()
    }

    /// Increasing random splits of `0..len`.
    fn splits(rng: &mut ChaCha8Rng, len: usize) -> Vec<usize> {
        let mut s: Vec<usize> = (1..len).filter(|_| rng.random_range(0..4) == 0).collect();
        s.insert(0, 0);
        s.push(len);
        s
    }

    /// A random grid layout of `rows × cols` on `size` ranks, with random storage.
    fn grid(rng: &mut ChaCha8Rng, rows: usize, cols: usize, size: usize) -> Layout {
        let (row_splits, col_splits) = (splits(rng, rows), splits(rng, cols));
        let owners = (1..row_splits.len())
            .map(|_| {
                (1..col_splits.len())
                    .map(|_| rng.random_range(0..size))
                    .collect()
            })
            .collect();
        let storage = (0..size)
            .map(|_| RankStorage {
                order: order(rng),
                ld: None,
            })
            .collect();
        Grid::new(GridSpec {
            row_splits,
            col_splits,
            owners,
            ranks: Some(size),
            storage,
        })
        .expect("a valid grid")
        .into()
    }

    fn layout(rng: &mut ChaCha8Rng, rows: usize, cols: usize, size: usize) -> Layout {
        if rng.random_range(0..4) == 0 {
            grid(rng, rows, cols, size)
        } else {
            block_cyclic(rng, rows, cols, size)
        }
    }

    /// The mapping onto the sender's B derived from the receiver's pieces equals the
    /// one found by enumerating the sender's blocks, move by move, for every package
    /// of every rank of random batches (block-cyclic and grid layouts, submatrices,
    /// both local orders, leading dimensions, transposes, relabeling on and off).
    #[test]
    fn peer_work_matches_the_senders_enumeration() {
        let mut rng = ChaCha8Rng::seed_from_u64(32);
        let mut packages = 0;
        for case in 0..400 {
            let size = rng.random_range(2..=6);
            let transforms = rng.random_range(1..=2);
            let batch: Vec<Transform> = (0..transforms)
                .map(|_| {
                    let (rows, cols) = (rng.random_range(1..40), rng.random_range(1..40));
                    let op =
                        [Op::Identity, Op::Transpose, Op::ConjTranspose][rng.random_range(0..3)];
                    let (tr, tc) = if op.transposes() {
                        (cols, rows)
                    } else {
                        (rows, cols)
                    };
                    let source = layout(&mut rng, rows, cols, size);
                    let target = layout(&mut rng, tr, tc, size);
                    let relabeling = if rng.random_range(0..2) == 0 {
                        Relabeling::Off
                    } else {
                        Relabeling::Optimal
                    };
                    Transform::new(source, target, op).with_relabeling(relabeling)
                })
                .collect();
            for rank in 0..size {
                let parallel = rng.random_range(0..2) == 0;
                let s = Schedule::build(batch.clone(), rank, size, 0, parallel)
                    .unwrap_or_else(|e| panic!("case {case}: {e}"));
                for k in 0..s.recvs.len() {
                    let new = s.peer_work(k, rank);
                    let old = s.peer_work_by_enumeration(k, rank);
                    let (Some(new), Some(old)) = (new, old) else {
                        panic!("case {case}, rank {rank}, package {k}: no mapping");
                    };
                    assert_eq!(
                        new.work.moves, old.work.moves,
                        "case {case}, rank {rank}, package {k}"
                    );
                    assert_eq!(new.need, old.need, "case {case}, rank {rank}, package {k}");
                    assert_eq!(new.work.groups, old.work.groups);
                    packages += 1;
                }
            }
        }
        assert!(packages > 1000, "only {packages} packages compared");
    }
}
