//! ScaLAPACK-style 2-D block-cyclic layouts.

use serde::{Deserialize, Serialize};

use super::axis::Axis;
use super::{
    check_axis_blocks, check_elements, check_positive, check_ranks, Grid, LocalBlock, Order,
    RankStorage,
};
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
    /// Local leading dimension (ScaLAPACK's LLD), default: each rank's own local row
    /// count (column count for row-major local storage).
    ///
    /// As in ScaLAPACK, it is a property of the rank that stores its local matrix with
    /// it: every rank may build the layout from its own descriptor with its own LLD
    /// (the global layout is the same; only local storage differs, and the engine's
    /// collective checks compare the former). It must be at least the local extent of
    /// the rank using it ([`BlockCyclic::check_storage`]; the engine checks it on every
    /// rank before planning). For another rank whose local extent is larger, the layout
    /// describes that rank's storage with its own extent as leading dimension.
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
    /// a submatrix outside the matrix, a grid larger than `ranks`, `lld = 0` (whether
    /// `lld` fits a rank's local matrix is that rank's check:
    /// [`BlockCyclic::check_storage`]); sizes beyond the documented limits
    /// [`super::MAX_ELEMENTS`] (for `m × n`), [`super::MAX_RANKS`] (for the grid, `ranks`
    /// and `rank_map`) and [`super::MAX_AXIS_BLOCKS`] (row and column blocks of the
    /// described submatrix), checked before anything is allocated.
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
        check_elements("m, n", spec.m, spec.n)?;
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
        // the communicator size, checked before rank_map's inverse table is allocated
        let (field, ranks) = match (spec.ranks, &spec.rank_map) {
            (Some(r), _) => ("ranks", r),
            (None, Some(m)) => (
                "rank_map",
                m.iter()
                    .map(|&x| x.saturating_add(1))
                    .fold(grid, usize::max),
            ),
            (None, None) => ("nprow, npcol", grid),
        };
        check_ranks(field, ranks)?;
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
        for (field, start, len, b, what) in [
            ("mb", sub.ia, sub.m, spec.mb, "rows"),
            ("nb", sub.ja, sub.n, spec.nb, "columns"),
        ] {
            // blocks touched by start..start + len (start + len <= m checked above)
            let blocks = ((start + len - 1) / b - start / b + 1) as u128;
            check_axis_blocks(
                field,
                &format!("{len} {what} in blocks of {field} = {b}"),
                blocks,
            )?;
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
            if lld == 0 {
                return Err(Error::Layout {
                    field: "lld",
                    detail: "must be positive, got 0".into(),
                });
            }
            // A local matrix of `lld` × (its outer extent) must be addressable: the
            // largest outer extent on any process is that of the process holding the
            // first block.
            let outer = match l.spec.local_order {
                Order::ColMajor => l.local_cols(l.spec.csrc),
                Order::RowMajor => l.local_rows(l.spec.rsrc),
            };
            check_elements("lld", lld, outer).map_err(|_| Error::Layout {
                field: "lld",
                detail: format!(
                    "leading dimension {lld} times {outer} local {} exceeds the limit of 2^60 \
                     elements (copr::layout::MAX_ELEMENTS)",
                    match l.spec.local_order {
                        Order::ColMajor => "columns",
                        Order::RowMajor => "rows",
                    }
                ),
            })?;
        }
        Ok(l)
    }

    /// Builds a layout from a ScaLAPACK array descriptor
    /// `DESC = [DTYPE, CTXT, M, N, MB, NB, RSRC, CSRC, LLD]` (C `int[9]` as `[i32; 9]`,
    /// or `[i64; 9]`) and the BLACS grid shape and order (the context itself is not
    /// interpreted).
    ///
    /// LLD is the calling rank's own (see [`BlockCyclicSpec::lld`]): ranks may pass
    /// their own descriptors with different LLDs, and each is checked against that
    /// rank's local rows when it plans.
    ///
    /// # Errors
    /// [`Error::Layout`] if DTYPE is not 1 (dense), a field is negative, or the checks
    /// of [`BlockCyclic::new`] fail.
    ///
    /// # Example
    /// ```
    /// use copr::layout::{BlockCyclic, Order};
    /// // 10 x 29 blocks of 1 x 1 on a 3 x 1 grid: LLD = NUMROC(10, 1, prow, 0, 3).
    /// let lld = [4, 3, 3];
    /// for (rank, &l) in lld.iter().enumerate() {
    ///     let desc: [i32; 9] = [1, 0, 10, 29, 1, 1, 0, 0, l];
    ///     let layout = BlockCyclic::from_descriptor(desc, 3, 1, Order::ColMajor).unwrap();
    ///     layout.check_storage(rank).unwrap();
    ///     assert_eq!(layout.local_len(rank), l as usize * 29);
    /// }
    /// ```
    pub fn from_descriptor<I: Copy + Into<i64>>(
        desc: [I; 9],
        nprow: usize,
        npcol: usize,
        grid_order: Order,
    ) -> Result<Self> {
        const NAMES: [&str; 9] = ["DTYPE", "CTXT", "M", "N", "MB", "NB", "RSRC", "CSRC", "LLD"];
        let desc: [i64; 9] = desc.map(Into::into);
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
    /// `ranks` ranks (`map` must be injective on the grid's ranks). A relabeled layout
    /// describes new local matrices: their leading dimensions are the default ones.
    pub(crate) fn relabeled(&self, map: &[usize], ranks: usize) -> Result<Self> {
        let grid = self.spec.nprow * self.spec.npcol;
        let mut spec = self.spec.clone();
        spec.lld = None;
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

    /// The local extent along the leading dimension at grid position (prow, pcol):
    /// local rows for column-major storage, local columns for row-major.
    fn local_extent(&self, prow: usize, pcol: usize) -> usize {
        match self.spec.local_order {
            Order::ColMajor => self.local_rows(prow),
            Order::RowMajor => self.local_cols(pcol),
        }
    }

    /// Leading dimension of the local matrix at grid position (prow, pcol): `lld`
    /// where it fits (see [`BlockCyclicSpec::lld`]), else the local extent.
    fn lld_of(&self, prow: usize, pcol: usize) -> usize {
        let own = self.local_extent(prow, pcol).max(1);
        self.spec.lld.map_or(own, |l| l.max(own))
    }

    /// Leading dimension of `rank`'s local matrix, as [`BlockCyclic::local_blocks`]
    /// gives it (`None` for a rank outside the grid).
    pub(crate) fn local_ld(&self, rank: usize) -> Option<usize> {
        let (pr, pc) = self.grid_position(rank)?;
        Some(self.lld_of(pr, pc))
    }

    /// Checks that `lld` fits `rank`'s local matrix (ScaLAPACK's
    /// `LLD ≥ max(1, LOCr(M))` on the process that owns the descriptor).
    ///
    /// # Errors
    /// [`Error::Layout`] naming `lld`, the rank and its local extent.
    pub fn check_storage(&self, rank: usize) -> Result<()> {
        let (Some(lld), Some((pr, pc))) = (self.spec.lld, self.grid_position(rank)) else {
            return Ok(());
        };
        let need = self.local_extent(pr, pc);
        if lld < need {
            let what = match self.spec.local_order {
                Order::ColMajor => "rows",
                Order::RowMajor => "columns",
            };
            return Err(Error::Layout {
                field: "lld",
                detail: format!(
                    "leading dimension {lld} on rank {rank} is smaller than its {need} local {what}"
                ),
            });
        }
        Ok(())
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
        // LLD 3 is too small for process row 0's 6 rows, and is enough for nobody else:
        // the layout is valid, rank 0's storage is not.
        let l = BlockCyclic::from_descriptor([1, 0, 10, 10, 2, 2, 0, 0, 3], 2, 1, Order::RowMajor)
            .unwrap();
        let e = l.check_storage(0).unwrap_err().to_string();
        assert!(
            e.contains("lld") && e.contains("rank 0") && e.contains(" 6 "),
            "{e}"
        );
        let e = BlockCyclic::from_descriptor([1, 0, 10, 10, 2, 2, 0, 0, 0], 2, 1, Order::RowMajor)
            .unwrap_err();
        assert!(e.to_string().contains("lld"), "{e}");
    }

    #[test]
    fn per_rank_lld_is_used_where_it_fits() {
        // 10 rows in blocks of 2 on 2 process rows: 6 and 4 local rows, 5 columns.
        let desc = |lld: i32| [1, 0, 10, 5, 2, 5, 0, 0, lld];
        let tight1 = BlockCyclic::from_descriptor(desc(4), 2, 1, Order::RowMajor).unwrap();
        tight1.check_storage(1).unwrap();
        assert!(tight1.check_storage(0).is_err());
        assert_eq!(tight1.local_len(1), 4 * 4 + 4);
        assert_eq!(tight1.local_blocks(1)[0].ld, 4);
        // rank 0's storage, seen from rank 1's descriptor: its own extent
        assert_eq!(tight1.local_blocks(0)[0].ld, 6);
        let padded = BlockCyclic::from_descriptor(desc(9), 2, 1, Order::RowMajor).unwrap();
        assert_eq!(padded.local_len(1), 9 * 4 + 4);
        assert_eq!(padded.local_blocks(0)[0].ld, 9);
        let relabeled = padded.relabeled(&[1, 0], 2).unwrap();
        assert_eq!(relabeled.spec().lld, None);
        // A leading dimension no local buffer could have is refused, not wrapped.
        let e = BlockCyclic::from_descriptor(
            [1, 0, 10, 5, 2, 5, 0, 0, i64::MAX],
            2,
            1,
            Order::RowMajor,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("lld") && e.contains("2^60"), "{e}");
    }
}

#[cfg(test)]
mod fingerprint_tests {
    use super::*;
    use crate::layout::Layout;

    #[test]
    fn the_fingerprint_is_the_global_layout_without_local_storage() {
        let with = |lld: Option<usize>, mb: usize| -> Layout {
            let mut s = BlockCyclicSpec::new(30, 20, mb, 4, 2, 1);
            s.lld = lld;
            BlockCyclic::new(s).unwrap().into()
        };
        let none = with(None, 3).fingerprint();
        assert_eq!(none, with(Some(40), 3).fingerprint());
        assert_eq!(none, with(Some(15), 3).fingerprint());
        assert_ne!(none, with(None, 5).fingerprint());
    }
}
