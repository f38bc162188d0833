//! Arbitrary grid layouts: row splits, column splits and an owner per block.

use serde::{Deserialize, Serialize};

use super::axis::Axis;
use super::{
    check_axis_blocks, check_elements, check_positive, check_ranks, LocalBlock, Order, MAX_RANKS,
};
use crate::error::{Error, Result};

/// How one rank stores its local blocks: blocks are packed one after another in
/// block-row-major order of the grid, each block in `order` with leading dimension `ld`
/// (default: the block's own row count for column-major, column count for row-major).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankStorage {
    /// Element order inside each block.
    #[serde(default = "col_major")]
    pub order: Order,
    /// Leading dimension shared by all of this rank's blocks (`None`: tight per block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ld: Option<usize>,
}

fn col_major() -> Order {
    Order::ColMajor
}

impl Default for RankStorage {
    fn default() -> Self {
        Self {
            order: Order::ColMajor,
            ld: None,
        }
    }
}

/// The fields of a grid layout as written in files; checked by [`Grid::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSpec {
    /// Row boundaries `0 = r0 < r1 < … < rk = m`.
    pub row_splits: Vec<usize>,
    /// Column boundaries `0 = c0 < … < cl = n`.
    pub col_splits: Vec<usize>,
    /// `owners[i][j]`: rank holding block (i, j).
    pub owners: Vec<Vec<usize>>,
    /// Communicator size (default: largest owner + 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<usize>,
    /// Local storage: empty (all defaults), one entry for every rank, or one per rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storage: Vec<RankStorage>,
}

/// A checked grid layout (COSTA's general layout): block (i, j) covers rows
/// `row_splits[i] .. row_splits[i+1]` and columns `col_splits[j] .. col_splits[j+1]` and
/// belongs to `owners[i][j]`.
///
/// # Example
/// ```
/// use copr::layout::{Grid, GridSpec};
/// let g = Grid::new(GridSpec {
///     row_splits: vec![0, 2, 5],
///     col_splits: vec![0, 3],
///     owners: vec![vec![1], vec![0]],
///     ranks: None,
///     storage: vec![],
/// })
/// .unwrap();
/// assert_eq!(g.ranks(), 2);
/// assert_eq!(g.owner(1, 0), 0);
/// let bad = GridSpec { row_splits: vec![0, 3, 2], ..g.spec() };
/// assert!(Grid::new(bad).unwrap_err().to_string().contains("row_splits"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "GridSpec", into = "GridSpec")]
pub struct Grid {
    row_splits: Vec<usize>,
    col_splits: Vec<usize>,
    owners: Vec<usize>,
    ranks: usize,
    storage: Vec<RankStorage>,
}

impl TryFrom<GridSpec> for Grid {
    type Error = Error;
    fn try_from(s: GridSpec) -> Result<Self> {
        Self::new(s)
    }
}

impl From<Grid> for GridSpec {
    fn from(g: Grid) -> Self {
        g.spec()
    }
}

fn check_splits(field: &'static str, s: &[usize]) -> Result<()> {
    check_axis_blocks(
        field,
        &format!("{} splits", s.len()),
        s.len().saturating_sub(1) as u128,
    )?;
    if s.len() < 2 {
        return Err(Error::Layout {
            field,
            detail: format!("needs at least two entries (0 and the size), got {s:?}"),
        });
    }
    if s[0] != 0 {
        return Err(Error::Layout {
            field,
            detail: format!("must start at 0, starts at {}", s[0]),
        });
    }
    for (k, w) in s.windows(2).enumerate() {
        if w[1] <= w[0] {
            return Err(Error::Layout {
                field,
                detail: format!(
                    "split {} <= {} at index {}: splits must increase",
                    w[1],
                    w[0],
                    k + 1
                ),
            });
        }
    }
    Ok(())
}

impl Grid {
    /// Checks `spec` and builds the layout.
    ///
    /// # Errors
    /// [`Error::Layout`] naming the field: splits not starting at 0 or not increasing,
    /// an owners matrix of the wrong shape, owners outside `0..ranks`, a storage list of
    /// the wrong length, or a leading dimension smaller than a block; sizes beyond the
    /// documented limits [`super::MAX_AXIS_BLOCKS`] (splits), [`super::MAX_ELEMENTS`]
    /// (rows × columns) and [`super::MAX_RANKS`] (owners, `ranks`).
    pub fn new(spec: GridSpec) -> Result<Self> {
        check_splits("row_splits", &spec.row_splits)?;
        check_splits("col_splits", &spec.col_splits)?;
        let (nbr, nbc) = (spec.row_splits.len() - 1, spec.col_splits.len() - 1);
        if spec.owners.len() != nbr {
            return Err(Error::Layout {
                field: "owners",
                detail: format!(
                    "has {} rows, the grid has {nbr} block rows",
                    spec.owners.len()
                ),
            });
        }
        let mut owners = Vec::with_capacity(nbr * nbc);
        for (i, row) in spec.owners.iter().enumerate() {
            if row.len() != nbc {
                return Err(Error::Layout {
                    field: "owners",
                    detail: format!(
                        "row {i} has {} entries, the grid has {nbc} block columns",
                        row.len()
                    ),
                });
            }
            owners.extend_from_slice(row);
        }
        Self::from_parts(
            spec.row_splits,
            spec.col_splits,
            owners,
            spec.ranks,
            spec.storage,
        )
    }

    /// Builds from a flat row-major owners array (`owners[i * blocks_cols + j]`).
    ///
    /// # Errors
    /// As [`Grid::new`].
    pub fn from_parts(
        row_splits: Vec<usize>,
        col_splits: Vec<usize>,
        owners: Vec<usize>,
        ranks: Option<usize>,
        storage: Vec<RankStorage>,
    ) -> Result<Self> {
        check_splits("row_splits", &row_splits)?;
        check_splits("col_splits", &col_splits)?;
        check_elements(
            "row_splits, col_splits",
            *row_splits.last().expect("checked"),
            *col_splits.last().expect("checked"),
        )?;
        let (nbr, nbc) = (row_splits.len() - 1, col_splits.len() - 1);
        if owners.len() != nbr * nbc {
            return Err(Error::Layout {
                field: "owners",
                detail: format!(
                    "has {} entries, the grid has {nbr}x{nbc} blocks",
                    owners.len()
                ),
            });
        }
        let max_owner = owners.iter().copied().max().unwrap_or(0);
        if max_owner >= MAX_RANKS {
            let k = owners
                .iter()
                .position(|&o| o == max_owner)
                .expect("the max");
            return Err(Error::Layout {
                field: "owners",
                detail: format!(
                    "owner {max_owner} of block ({}, {}) is beyond the limit of {MAX_RANKS} ranks (copr::layout::MAX_RANKS)",
                    k / nbc,
                    k % nbc
                ),
            });
        }
        let ranks = ranks.unwrap_or(max_owner + 1);
        check_positive("ranks", ranks)?;
        check_ranks("ranks", ranks)?;
        if let Some(k) = owners.iter().position(|&o| o >= ranks) {
            return Err(Error::Layout {
                field: "owners",
                detail: format!(
                    "owner {} of block ({}, {}) is outside 0..{ranks}",
                    owners[k],
                    k / nbc,
                    k % nbc
                ),
            });
        }
        if !(storage.is_empty() || storage.len() == 1 || storage.len() == ranks) {
            return Err(Error::Layout {
                field: "storage",
                detail: format!(
                    "has {} entries: give none, one for all ranks, or one per rank ({ranks})",
                    storage.len()
                ),
            });
        }
        let g = Self {
            row_splits,
            col_splits,
            owners,
            ranks,
            storage,
        };
        // local buffer lengths of ranks with an explicit leading dimension, which
        // must stay addressable (the tight default never exceeds the matrix)
        let mut footprint: std::collections::HashMap<usize, u128> = Default::default();
        for (k, &o) in g.owners.iter().enumerate() {
            let st = g.storage_of(o);
            if let Some(ld) = st.ld {
                let (i, j) = (k / nbc, k % nbc);
                let (rows, cols) = (
                    g.row_splits[i + 1] - g.row_splits[i],
                    g.col_splits[j + 1] - g.col_splits[j],
                );
                let (need, outer) = match st.order {
                    Order::ColMajor => (rows, cols),
                    Order::RowMajor => (cols, rows),
                };
                let len = footprint.entry(o).or_default();
                *len += ld as u128 * outer as u128;
                if *len > u128::from(super::MAX_ELEMENTS) {
                    return Err(Error::Layout {
                        field: "storage.ld",
                        detail: format!(
                            "leading dimension {ld} makes rank {o}'s local buffer longer than the limit of 2^60 elements (copr::layout::MAX_ELEMENTS)"
                        ),
                    });
                }
                if ld < need {
                    return Err(Error::Layout {
                        field: "storage.ld",
                        detail: format!(
                            "leading dimension {ld} of rank {o} is smaller than {need}, the extent of its block ({i}, {j})"
                        ),
                    });
                }
            }
        }
        Ok(g)
    }

    /// The fields, as they would be written to a file.
    pub fn spec(&self) -> GridSpec {
        GridSpec {
            row_splits: self.row_splits.clone(),
            col_splits: self.col_splits.clone(),
            owners: self
                .owners
                .chunks(self.block_cols())
                .map(|c| c.to_vec())
                .collect(),
            ranks: Some(self.ranks),
            storage: self.storage.clone(),
        }
    }

    /// Rows of the matrix.
    pub fn rows(&self) -> usize {
        *self.row_splits.last().expect("checked non-empty")
    }

    /// Columns of the matrix.
    pub fn cols(&self) -> usize {
        *self.col_splits.last().expect("checked non-empty")
    }

    /// Communicator size.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Number of block rows.
    pub fn block_rows(&self) -> usize {
        self.row_splits.len() - 1
    }

    /// Number of block columns.
    pub fn block_cols(&self) -> usize {
        self.col_splits.len() - 1
    }

    /// Row splits.
    pub fn row_splits(&self) -> &[usize] {
        &self.row_splits
    }

    /// Column splits.
    pub fn col_splits(&self) -> &[usize] {
        &self.col_splits
    }

    /// Owners, flat row-major over blocks.
    pub fn owners(&self) -> &[usize] {
        &self.owners
    }

    /// Owner of block (i, j).
    ///
    /// # Panics
    /// If (i, j) is outside the grid.
    pub fn owner(&self, i: usize, j: usize) -> usize {
        assert!(
            i < self.block_rows() && j < self.block_cols(),
            "block ({i}, {j}) outside the grid"
        );
        self.owners[i * self.block_cols() + j]
    }

    /// Storage of `rank`'s blocks.
    pub fn storage_of(&self, rank: usize) -> RankStorage {
        match self.storage.len() {
            0 => RankStorage::default(),
            1 => self.storage[0],
            // ranks outside the layout hold nothing; their storage is the default
            _ => self.storage.get(rank).copied().unwrap_or_default(),
        }
    }

    /// The same grid with owners replaced by `map[owner]` in a communicator of
    /// `ranks` ranks; storage follows its data (the rank that receives old rank `r`'s
    /// blocks stores them as `r` did).
    pub(crate) fn relabeled(&self, map: &[usize], ranks: usize) -> Self {
        let storage = if self.storage.len() > 1 {
            let mut s = vec![RankStorage::default(); ranks];
            for (old, st) in self.storage.iter().enumerate() {
                s[map[old]] = *st;
            }
            s
        } else {
            self.storage.clone()
        };
        Self {
            row_splits: self.row_splits.clone(),
            col_splits: self.col_splits.clone(),
            owners: self.owners.iter().map(|&o| map[o]).collect(),
            ranks,
            storage,
        }
    }

    pub(crate) fn row_axis(&self) -> Axis<'_> {
        Axis::Splits(&self.row_splits)
    }

    pub(crate) fn col_axis(&self) -> Axis<'_> {
        Axis::Splits(&self.col_splits)
    }

    /// The blocks `rank` holds, in block-row-major order, with their place in its
    /// local buffer.
    ///
    /// # Complexity
    /// O(number of blocks of the grid).
    pub fn local_blocks(&self, rank: usize) -> Vec<LocalBlock> {
        let st = self.storage_of(rank);
        let nbc = self.block_cols();
        let mut offset = 0;
        let mut out = Vec::new();
        for (k, _) in self.owners.iter().enumerate().filter(|(_, &o)| o == rank) {
            let (i, j) = (k / nbc, k % nbc);
            let rows = self.row_splits[i]..self.row_splits[i + 1];
            let cols = self.col_splits[j]..self.col_splits[j + 1];
            let (inner, outer) = match st.order {
                Order::ColMajor => (rows.len(), cols.len()),
                Order::RowMajor => (cols.len(), rows.len()),
            };
            let ld = st.ld.unwrap_or(inner);
            out.push(LocalBlock {
                rows,
                cols,
                offset,
                ld,
                order: st.order,
            });
            offset += ld * outer;
        }
        out
    }

    /// Number of elements `rank`'s local buffer must hold.
    pub fn local_len(&self, rank: usize) -> usize {
        self.local_blocks(rank).last().map_or(0, |b| {
            let outer = match b.order {
                Order::ColMajor => b.cols.len(),
                Order::RowMajor => b.rows.len(),
            };
            b.offset + b.ld * outer
        })
    }
}
