//! ScaLAPACK-style 2-D block-cyclic layouts.

use serde::{Deserialize, Serialize};

use super::axis::Axis;
use super::{check_positive, Grid, LocalBlock, Order, RankStorage};
use crate::error::{Error, Result};

/// A submatrix `A[ia .. ia + m, ja .. ja + n]` (0-based, unlike ScaLAPACK's IA/JA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submatrix {
    /// First global row (0-based).
    pub ia: usize,
    /// First global column (0-based).
    pub ja: usize,
    /// Number of rows.
    pub m: usize,
    /// Number of columns.
    pub n: usize,
}

/// The fields of a block-cyclic layout, as written in files; checked by
/// [`BlockCyclic::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockCyclicSpec {
    /// Global rows.
    pub m: usize,
    /// Global columns.
    pub n: usize,
    /// Row block size.
    pub mb: usize,
    /// Column block size.
    pub nb: usize,
    /// Process grid rows.
    pub nprow: usize,
    /// Process grid columns.
    pub npcol: usize,
    /// How grid positions are numbered: row-major `rank = prow·npcol + pcol`
    /// (BLACS' default), column-major `rank = pcol·nprow + prow`.
    #[serde(default)]
    pub grid_order: Order,
    /// Process row holding the first row block.
    #[serde(default)]
    pub rsrc: usize,
    /// Process column holding the first column block.
    #[serde(default)]
    pub csrc: usize,
    /// The part of the global matrix this layout describes (default: all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submatrix: Option<Submatrix>,
    /// Size of the communicator (default `nprow·npcol`); ranks beyond the grid hold
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<usize>,
    /// Local storage order of each rank's local matrix (ScaLAPACK: column-major).
    #[serde(default = "col_major")]
    pub local_order: Order,
    /// Local leading dimension used by every rank (default: each rank's own local
    /// row count, or column count for row-major local storage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lld: Option<usize>,
    /// Explicit rank of every grid position, indexed by the position's number in
    /// `grid_order` (like a BLACS grid map); default: the position's number itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_map: Option<Vec<usize>>,
}

fn col_major() -> Order {
    Order::ColMajor
}

impl BlockCyclicSpec {
    /// A square-grid-free starting point: an `m × n` matrix in `mb × nb` blocks on an
    /// `nprow × npcol` row-major grid, everything else at its default.
    pub fn new(m: usize, n: usize, mb: usize, nb: usize, nprow: usize, npcol: usize) -> Self {
        Self {
            m,
            n,
            mb,
            nb,
            nprow,
            npcol,
            grid_order: Order::RowMajor,
            rsrc: 0,
            csrc: 0,
            submatrix: None,
            ranks: None,
            local_order: Order::ColMajor,
            lld: None,
            rank_map: None,
        }
    }
}

/// A checked 2-D block-cyclic layout (ScaLAPACK's distribution).
///
/// Global row `g` lies in row block `g / mb`, held by process row
/// `(rsrc + g / mb) mod nprow`; columns likewise. Only the [`Submatrix`] (by default the
/// whole matrix) is described: its row `r` is global row `ia + r`.
///
/// # Example
/// ```
/// use copr::layout::{BlockCyclic, BlockCyclicSpec, Order};
/// let mut spec = BlockCyclicSpec::new(100, 80, 32, 32, 2, 2);
/// spec.grid_order = Order::ColMajor;
/// let l = BlockCyclic::new(spec).unwrap();
/// assert_eq!(l.owner_of(40, 0), 1); // row block 1 -> process row 1, column-major grid
/// assert!(BlockCyclic::new(BlockCyclicSpec::new(100, 80, 0, 32, 2, 2)).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "BlockCyclicSpec", into = "BlockCyclicSpec")]
pub struct BlockCyclic {
    spec: BlockCyclicSpec,
    sub: Submatrix,
    ranks: usize,
    /// Inverse of `spec.rank_map`: grid position number of each rank.
    pos_of_rank: Option<Vec<usize>>,
}

impl TryFrom<BlockCyclicSpec> for BlockCyclic {
    type Error = Error;
    fn try_from(spec: BlockCyclicSpec) -> Result<Self> {
        Self::new(spec)
    }
}

impl From<BlockCyclic> for BlockCyclicSpec {
    fn from(l: BlockCyclic) -> Self {
        l.spec
    }
}

impl BlockCyclic {
    /// Checks `spec` and builds the layout.
    ///
    /// # Errors
    /// [`Error::Layout`] naming the field: zero sizes, `rsrc`/`csrc` outside the grid,
    /// a submatrix outside the matrix, a grid larger than `ranks`, or `lld` smaller than
    /// some rank's local rows (columns for row-major local storage).
    pub fn new(spec: BlockCyclicSpec) -> Result<Self> {
        for (f, v) in [
            ("m", spec.m),
            ("n", spec.n),
            ("mb", spec.mb),
            ("nb", spec.nb),
            ("nprow", spec.nprow),
            ("npcol", spec.npcol),
        ] {
            check_positive(f, v)?;
        }
        for (field, src, procs, what) in [
            ("rsrc", spec.rsrc, spec.nprow, "rows"),
            ("csrc", spec.csrc, spec.npcol, "columns"),
        ] {
            if src >= procs {
                return Err(Error::Layout {
                    field,
                    detail: format!("{src} is outside the process {what} 0..{procs}"),
                });
            }
        }
        let grid = spec.nprow.checked_mul(spec.npcol).ok_or(Error::Layout {
            field: "nprow, npcol",
            detail: "grid size overflows".into(),
        })?;
        let ranks = spec.ranks.unwrap_or_else(|| match &spec.rank_map {
            Some(m) => m.iter().copied().max().map_or(grid, |x| (x + 1).max(grid)),
            None => grid,
        });
        if grid > ranks {
            return Err(Error::Layout {
                field: "ranks",
                detail: format!(
                    "the {}x{} process grid needs {grid} ranks but ranks = {ranks}",
                    spec.nprow, spec.npcol
                ),
            });
        }
        let sub = spec.submatrix.unwrap_or(Submatrix {
            ia: 0,
            ja: 0,
            m: spec.m,
            n: spec.n,
        });
        check_positive("submatrix.m", sub.m)?;
        check_positive("submatrix.n", sub.n)?;
        for (what, start, len, size) in [
            ("rows", sub.ia, sub.m, spec.m),
            ("columns", sub.ja, sub.n, spec.n),
        ] {
            if start.checked_add(len).is_none_or(|e| e > size) {
                return Err(Error::Layout {
                    field: "submatrix",
                    detail: format!(
                        "{what} {start}..{} exceed the matrix's {size} {what}",
                        start.saturating_add(len)
                    ),
                });
            }
        }
        let mut pos_of_rank = None;
        if let Some(map) = &spec.rank_map {
            if map.len() != grid {
                return Err(Error::Layout {
                    field: "rank_map",
                    detail: format!("has {} entries, the grid has {grid} positions", map.len()),
                });
            }
            let mut pos = vec![usize::MAX; ranks];
            for (k, &r) in map.iter().enumerate() {
                if r >= ranks {
                    return Err(Error::Layout {
                        field: "rank_map",
                        detail: format!("rank {r} at position {k} is outside 0..{ranks}"),
                    });
                }
                if pos[r] != usize::MAX {
                    return Err(Error::Layout {
                        field: "rank_map",
                        detail: format!("rank {r} appears at positions {} and {k}", pos[r]),
                    });
                }
                pos[r] = k;
            }
            pos_of_rank = Some(pos);
        }
        let l = Self {
            spec,
            sub,
            ranks,
            pos_of_rank,
        };
        if let Some(lld) = l.spec.lld {
            let need = (0..l.spec.nprow.max(l.spec.npcol))
                .map(|k| match l.spec.local_order {
                    Order::ColMajor if k < l.spec.nprow => l.local_rows(k),
                    Order::RowMajor if k < l.spec.npcol => l.local_cols(k),
                    _ => 0,
                })
                .max()
                .unwrap_or(0);
            if lld < need.max(1) {
                return Err(Error::Layout {
                    field: "lld",
                    detail: format!(
                        "leading dimension {lld} is smaller than {need}, the largest local extent"
                    ),
                });
            }
        }
        Ok(l)
    }

    /// Builds a layout from a ScaLAPACK array descriptor
    /// `DESC = [DTYPE, CTXT, M, N, MB, NB, RSRC, CSRC, LLD]` and the BLACS grid shape and
    /// order (the context itself is not interpreted).
    ///
    /// # Errors
    /// [`Error::Layout`] if DTYPE is not 1 (dense), a field is negative, or the checks
    /// of [`BlockCyclic::new`] fail.
    pub fn from_descriptor(
        desc: [i64; 9],
        nprow: usize,
        npcol: usize,
        grid_order: Order,
    ) -> Result<Self> {
        const NAMES: [&str; 9] = ["DTYPE", "CTXT", "M", "N", "MB", "NB", "RSRC", "CSRC", "LLD"];
        if desc[0] != 1 {
            return Err(Error::Layout {
                field: "DTYPE",
                detail: format!("{} is not 1 (dense block-cyclic)", desc[0]),
            });
        }
        let mut v = [0usize; 9];
        for k in 2..9 {
            v[k] = usize::try_from(desc[k]).map_err(|_| Error::Layout {
                field: NAMES[k],
                detail: format!("{} is negative", desc[k]),
            })?;
        }
        let mut spec = BlockCyclicSpec::new(v[2], v[3], v[4], v[5], nprow, npcol);
        spec.grid_order = grid_order;
        spec.rsrc = v[6];
        spec.csrc = v[7];
        spec.lld = Some(v[8]);
        Self::new(spec)
    }

    /// The same layout restricted to a submatrix (0-based `ia`, `ja`; ScaLAPACK's
    /// IA/JA minus one).
    ///
    /// # Errors
    /// As [`BlockCyclic::new`].
    pub fn with_submatrix(&self, sub: Submatrix) -> Result<Self> {
        let mut spec = self.spec.clone();
        spec.submatrix = Some(sub);
        Self::new(spec)
    }

    /// The same layout in a communicator of `ranks` ranks (the grid stays on the first
    /// `nprow·npcol`).
    ///
    /// # Errors
    /// As [`BlockCyclic::new`].
    pub fn with_ranks(&self, ranks: usize) -> Result<Self> {
        let mut spec = self.spec.clone();
        spec.ranks = Some(ranks);
        Self::new(spec)
    }

    /// The fields as given.
    pub fn spec(&self) -> &BlockCyclicSpec {
        &self.spec
    }

    /// The described submatrix.
    pub fn submatrix(&self) -> Submatrix {
        self.sub
    }

    /// Rows of the described (sub)matrix.
    pub fn rows(&self) -> usize {
        self.sub.m
    }

    /// Columns of the described (sub)matrix.
    pub fn cols(&self) -> usize {
        self.sub.n
    }

    /// Communicator size.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Rank at grid position (prow, pcol).
    pub fn rank_at(&self, prow: usize, pcol: usize) -> usize {
        let k = match self.spec.grid_order {
            Order::RowMajor => prow * self.spec.npcol + pcol,
            Order::ColMajor => pcol * self.spec.nprow + prow,
        };
        match &self.spec.rank_map {
            Some(m) => m[k],
            None => k,
        }
    }

    /// Grid position (prow, pcol) of `rank`, or `None` if the rank is outside the grid.
    pub fn grid_position(&self, rank: usize) -> Option<(usize, usize)> {
        let (p, q) = (self.spec.nprow, self.spec.npcol);
        let k = match &self.pos_of_rank {
            Some(pos) => *pos.get(rank).filter(|&&k| k != usize::MAX)?,
            None if rank < p * q => rank,
            None => return None,
        };
        Some(match self.spec.grid_order {
            Order::RowMajor => (k / q, k % q),
            Order::ColMajor => (k % p, k / p),
        })
    }

    /// The same layout with every rank `r` replaced by `map[r]`, in a communicator of
    /// `ranks` ranks (`map` must be injective on the grid's ranks).
    pub(crate) fn relabeled(&self, map: &[usize], ranks: usize) -> Result<Self> {
        let grid = self.spec.nprow * self.spec.npcol;
        let mut spec = self.spec.clone();
        spec.rank_map = Some(
            (0..grid)
                .map(|k| {
                    let r = self.spec.rank_map.as_ref().map_or(k, |m| m[k]);
                    map[r]
                })
                .collect(),
        );
        spec.ranks = Some(ranks);
        Self::new(spec)
    }

    /// The explicit grid: splits for every block boundary and the owner of every block.
    ///
    /// # Complexity
    /// O(number of blocks): use it only when the blocks themselves are needed; volumes
    /// and plans work on the block-cyclic form directly.
    ///
    /// # Errors
    /// Never for a checked layout; the `Result` comes from [`Grid::from_parts`].
    pub fn to_grid(&self) -> Result<Grid> {
        let (ra, ca) = (self.row_axis(), self.col_axis());
        let mut rc = Vec::new();
        ra.for_each(|_, _, c, _| rc.push(c));
        let mut cc = Vec::new();
        ca.for_each(|_, _, c, _| cc.push(c));
        let owners = rc
            .iter()
            .flat_map(|&r| cc.iter().map(move |&c| (r, c)))
            .map(|(r, c)| self.rank_at(r, c))
            .collect();
        let storage = vec![RankStorage {
            order: self.spec.local_order,
            ld: None,
        }];
        Grid::from_parts(
            ra.boundaries(),
            ca.boundaries(),
            owners,
            Some(self.ranks),
            storage,
        )
    }

    /// Owner of element (i, j) of the described submatrix.
    pub fn owner_of(&self, i: usize, j: usize) -> usize {
        self.rank_at(self.row_axis().class_of(i), self.col_axis().class_of(j))
    }

    pub(crate) fn row_axis(&self) -> Axis<'static> {
        Axis::Cyclic {
            len: self.sub.m,
            off: self.sub.ia,
            block: self.spec.mb,
            procs: self.spec.nprow,
            src: self.spec.rsrc,
        }
    }

    pub(crate) fn col_axis(&self) -> Axis<'static> {
        Axis::Cyclic {
            len: self.sub.n,
            off: self.sub.ja,
            block: self.spec.nb,
            procs: self.spec.npcol,
            src: self.spec.csrc,
        }
    }

    /// ScaLAPACK's NUMROC: how many of `len` indices in blocks of `b` a process at
    /// distance `(proc - src) mod procs` holds.
    fn numroc(len: usize, b: usize, proc: usize, src: usize, procs: usize) -> usize {
        let dist = (proc + procs - src) % procs;
        let nblocks = len / b;
        let mut n = (nblocks / procs) * b;
        let extra = nblocks % procs;
        if dist < extra {
            n += b;
        } else if dist == extra {
            n += len % b;
        }
        n
    }

    /// Local rows of the global matrix on process row `prow`.
    pub fn local_rows(&self, prow: usize) -> usize {
        Self::numroc(
            self.spec.m,
            self.spec.mb,
            prow,
            self.spec.rsrc,
            self.spec.nprow,
        )
    }

    /// Local columns of the global matrix on process column `pcol`.
    pub fn local_cols(&self, pcol: usize) -> usize {
        Self::numroc(
            self.spec.n,
            self.spec.nb,
            pcol,
            self.spec.csrc,
            self.spec.npcol,
        )
    }

    /// Leading dimension of `rank`'s local matrix.
    fn lld_of(&self, prow: usize, pcol: usize) -> usize {
        self.spec.lld.unwrap_or(match self.spec.local_order {
            Order::ColMajor => self.local_rows(prow).max(1),
            Order::RowMajor => self.local_cols(pcol).max(1),
        })
    }

    /// Number of elements `rank`'s local buffer must hold (its part of the whole
    /// global matrix, as in ScaLAPACK, not only of the submatrix).
    pub fn local_len(&self, rank: usize) -> usize {
        let Some((pr, pc)) = self.grid_position(rank) else {
            return 0;
        };
        let (lr, lc) = (self.local_rows(pr), self.local_cols(pc));
        if lr == 0 || lc == 0 {
            return 0;
        }
        let ld = self.lld_of(pr, pc);
        match self.spec.local_order {
            Order::ColMajor => ld * (lc - 1) + lr,
            Order::RowMajor => ld * (lr - 1) + lc,
        }
    }

    /// The blocks of the submatrix that `rank` holds, with their place in its local
    /// buffer.
    ///
    /// # Complexity
    /// O(local blocks + rows/mb + cols/nb).
    pub fn local_blocks(&self, rank: usize) -> Vec<LocalBlock> {
        let Some((pr, pc)) = self.grid_position(rank) else {
            return Vec::new();
        };
        let ld = self.lld_of(pr, pc);
        let local_index = |g: usize, b: usize, procs: usize| (g / (b * procs)) * b + g % b;
        let mut rows = Vec::new();
        self.row_axis().for_each(|s, e, c, _| {
            if c == pr {
                rows.push((
                    s,
                    e,
                    local_index(self.sub.ia + s, self.spec.mb, self.spec.nprow),
                ));
            }
        });
        let mut cols = Vec::new();
        self.col_axis().for_each(|s, e, c, _| {
            if c == pc {
                cols.push((
                    s,
                    e,
                    local_index(self.sub.ja + s, self.spec.nb, self.spec.npcol),
                ));
            }
        });
        let mut out = Vec::with_capacity(rows.len() * cols.len());
        for &(r0, r1, lr) in &rows {
            for &(c0, c1, lc) in &cols {
                let offset = match self.spec.local_order {
                    Order::ColMajor => lr + lc * ld,
                    Order::RowMajor => lr * ld + lc,
                };
                out.push(LocalBlock {
                    rows: r0..r1,
                    cols: c0..c1,
                    offset,
                    ld,
                    order: self.spec.local_order,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numroc_matches_counting() {
        for len in [1, 7, 32, 33, 100] {
            for b in [1, 3, 8] {
                for procs in [1, 2, 3, 5] {
                    for src in 0..procs {
                        let mut count = vec![0; procs];
                        for g in 0..len {
                            count[(src + g / b) % procs] += 1;
                        }
                        for (p, &c) in count.iter().enumerate() {
                            assert_eq!(BlockCyclic::numroc(len, b, p, src, procs), c);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn local_blocks_cover_the_submatrix_once() {
        let mut spec = BlockCyclicSpec::new(23, 17, 4, 3, 2, 3);
        spec.rsrc = 1;
        spec.csrc = 2;
        spec.submatrix = Some(Submatrix {
            ia: 3,
            ja: 2,
            m: 15,
            n: 11,
        });
        let l = BlockCyclic::new(spec).unwrap();
        let mut seen = [0u8; 15 * 11];
        for r in 0..l.ranks() {
            let len = l.local_len(r);
            let mut used = vec![false; len];
            for b in l.local_blocks(r) {
                for i in b.rows.clone() {
                    for j in b.cols.clone() {
                        assert_eq!(l.owner_of(i, j), r);
                        seen[i * 11 + j] += 1;
                        let k = b.index(i - b.rows.start, j - b.cols.start);
                        assert!(!used[k]);
                        used[k] = true;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s == 1));
    }

    #[test]
    fn descriptor_errors_name_the_field() {
        let e =
            BlockCyclic::from_descriptor([1, 0, 10, 10, 2, -2, 0, 0, 10], 1, 1, Order::RowMajor)
                .unwrap_err();
        assert!(e.to_string().contains("NB"), "{e}");
        let e = BlockCyclic::from_descriptor([1, 0, 10, 10, 2, 2, 0, 0, 3], 2, 1, Order::RowMajor)
            .unwrap_err();
        assert!(e.to_string().contains("lld"), "{e}");
    }
}
