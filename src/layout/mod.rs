//! Layouts: what lives where, before and after a redistribution.
//!
//! A [`Layout`] is either a ScaLAPACK-style [`BlockCyclic`] distribution or an arbitrary
//! [`Grid`] of blocks. Each kind comes as a pair: the fields as written in files
//! ([`BlockCyclicSpec`], [`GridSpec`]) and the checked layout built from them
//! ([`BlockCyclic::new`], [`Grid::new`]). Both are read from TOML or JSON, where
//! `kind = "block-cyclic"` or `kind = "grid"` picks the variant
//! ([`Layout::BlockCyclic`], [`Layout::Grid`]):
//!
//! ```
//! use copr::layout::Layout;
//! let l: Layout = toml::from_str(
//!     r#"
//!     kind = "block-cyclic"
//!     m = 1000
//!     n = 1000
//!     mb = 32
//!     nb = 32
//!     nprow = 2
//!     npcol = 2
//!     "#,
//! )
//! .unwrap();
//! assert_eq!((l.rows(), l.cols(), l.ranks()), (1000, 1000, 4));
//! ```

pub(crate) mod axis;
mod block_cyclic;
mod grid;

use std::ops::Range;

use serde::{Deserialize, Serialize};

pub use block_cyclic::{BlockCyclic, BlockCyclicSpec, Submatrix};
pub use grid::{Grid, GridSpec, RankStorage};

use crate::error::{Error, Mismatched, Result};
use crate::lap::Perm;
use axis::Axis;

/// Element order: row-major (rows contiguous) or column-major (columns contiguous).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Consecutive elements of a row are adjacent.
    #[default]
    #[serde(alias = "row", alias = "R")]
    RowMajor,
    /// Consecutive elements of a column are adjacent.
    #[serde(alias = "col", alias = "C", alias = "column-major")]
    ColMajor,
}

/// The operation applied to the source: `A ← α·op(B) + β·A`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// op(B) = B.
    #[default]
    #[serde(alias = "N", alias = "none")]
    Identity,
    /// op(B) = Bᵀ.
    #[serde(alias = "T")]
    Transpose,
    /// op(B) = Bᴴ (conjugate transpose; the same as Bᵀ for real elements).
    #[serde(alias = "C", alias = "conj-transpose")]
    ConjTranspose,
}

impl Op {
    /// True for the two transposing operations.
    pub fn transposes(self) -> bool {
        !matches!(self, Op::Identity)
    }
}

/// One block of a rank's local data: global (layout) rows and columns, and where the
/// block starts in the rank's local buffer, with its leading dimension and order.
/// Element (i, j) of the block (0-based within the block) sits at
/// `offset + i + j·ld` (column-major) or `offset + i·ld + j` (row-major).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalBlock {
    /// Rows of the layout's matrix covered by the block.
    pub rows: Range<usize>,
    /// Columns covered.
    pub cols: Range<usize>,
    /// Index of the block's first element in the local buffer.
    pub offset: usize,
    /// Leading dimension.
    pub ld: usize,
    /// Element order.
    pub order: Order,
}

impl LocalBlock {
    /// Index in the local buffer of element (i, j) of the block.
    pub fn index(&self, i: usize, j: usize) -> usize {
        match self.order {
            Order::ColMajor => self.offset + i + j * self.ld,
            Order::RowMajor => self.offset + i * self.ld + j,
        }
    }

    /// Number of buffer elements from the first to one past the last element.
    pub fn extent(&self) -> usize {
        let (inner, outer) = match self.order {
            Order::ColMajor => (self.rows.len(), self.cols.len()),
            Order::RowMajor => (self.cols.len(), self.rows.len()),
        };
        if inner == 0 || outer == 0 {
            0
        } else {
            self.ld * (outer - 1) + inner
        }
    }
}

/// Largest communicator a layout may live in: 2^24 = 16 777 216 ranks (more than any
/// machine runs MPI ranks today). Rank counts, owners and `rank_map` entries are
/// checked against it before anything is allocated, so that memory and time stay
/// proportional to a real job, not to a number in a file.
pub const MAX_RANKS: usize = copr_topology::MAX_RANKS;

/// Largest number of elements a layout's (global) matrix may have: 2^60. Every volume,
/// total and sum of volumes then fits in `u64` (and in the exact solvers' range).
pub const MAX_ELEMENTS: u64 = 1 << 60;

/// Largest number of blocks along one axis of a layout (row blocks of the described
/// rows, column blocks of its columns; for grids, `row_splits.len() − 1` and
/// `col_splits.len() − 1`): 2^22 = 4 194 304. Volumes work per block along each axis,
/// so `m = 5·10^9` rows in blocks of `mb = 1` is refused instead of allocating
/// gigabytes.
pub const MAX_AXIS_BLOCKS: usize = 1 << 22;

/// Checks a communicator size against [`MAX_RANKS`].
pub(crate) fn check_ranks(field: &'static str, ranks: usize) -> Result<()> {
    if ranks > MAX_RANKS {
        return Err(Error::Layout {
            field,
            detail: format!(
                "{ranks} ranks exceed the limit of {MAX_RANKS} (copr::layout::MAX_RANKS)"
            ),
        });
    }
    Ok(())
}

/// Checks `rows × cols` against [`MAX_ELEMENTS`] (in 128-bit arithmetic).
pub(crate) fn check_elements(field: &'static str, rows: usize, cols: usize) -> Result<()> {
    let e = rows as u128 * cols as u128;
    if e > u128::from(MAX_ELEMENTS) {
        return Err(Error::Layout {
            field,
            detail: format!(
                "a {rows} x {cols} matrix has {e} elements, more than the limit of 2^60 = {MAX_ELEMENTS} (copr::layout::MAX_ELEMENTS)"
            ),
        });
    }
    Ok(())
}

/// Checks a number of blocks along one axis against [`MAX_AXIS_BLOCKS`].
pub(crate) fn check_axis_blocks(field: &'static str, what: &str, blocks: u128) -> Result<()> {
    if blocks > MAX_AXIS_BLOCKS as u128 {
        return Err(Error::Layout {
            field,
            detail: format!(
                "{what} make {blocks} blocks along one axis, more than the limit of {MAX_AXIS_BLOCKS} (copr::layout::MAX_AXIS_BLOCKS)"
            ),
        });
    }
    Ok(())
}

pub(crate) fn check_positive(field: &'static str, v: usize) -> Result<()> {
    if v == 0 {
        return Err(Error::Layout {
            field,
            detail: "must be positive, got 0".into(),
        });
    }
    Ok(())
}

/// A matrix layout: block-cyclic or an arbitrary grid.
///
/// In files the variant is chosen by `kind = "block-cyclic"` or `kind = "grid"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Layout {
    /// ScaLAPACK 2-D block-cyclic.
    BlockCyclic(BlockCyclic),
    /// Arbitrary row/column splits with an owner per block.
    Grid(Grid),
}

impl<'de> Deserialize<'de> for Layout {
    /// Reads `kind` first, then the fields of that kind, so that errors name the
    /// offending field (`field `mb`: invalid value …`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut v = serde_json::Value::deserialize(d)?;
        let kind = match v.as_object_mut().map(|o| o.remove("kind")) {
            Some(Some(serde_json::Value::String(k))) => k,
            Some(Some(other)) => {
                return Err(D::Error::custom(format!(
                    "field `kind`: {other} is not a string"
                )))
            }
            Some(None) => {
                return Err(D::Error::custom(
                    "missing field `kind` (\"block-cyclic\" or \"grid\")",
                ))
            }
            None => return Err(D::Error::custom(format!("a layout is a table, got {v}"))),
        };
        fn fields<T: serde::de::DeserializeOwned, E: serde::de::Error>(
            v: serde_json::Value,
        ) -> std::result::Result<T, E> {
            serde_path_to_error::deserialize(v).map_err(|e| {
                let path = e.path().to_string();
                // "unknown field `x`" names the field already
                if path == "." || e.inner().to_string().starts_with("unknown field") {
                    E::custom(e.into_inner())
                } else {
                    E::custom(format!("field `{path}`: {}", e.into_inner()))
                }
            })
        }
        match kind.as_str() {
            "block-cyclic" => fields(v).map(Layout::BlockCyclic),
            "grid" => fields(v).map(Layout::Grid),
            k => Err(D::Error::custom(format!(
                "field `kind`: unknown layout kind {k:?}, expected \"block-cyclic\" or \"grid\""
            ))),
        }
    }
}

impl From<BlockCyclic> for Layout {
    fn from(l: BlockCyclic) -> Self {
        Layout::BlockCyclic(l)
    }
}

impl From<Grid> for Layout {
    fn from(l: Grid) -> Self {
        Layout::Grid(l)
    }
}

impl Layout {
    /// Rows of the described matrix.
    pub fn rows(&self) -> usize {
        match self {
            Layout::BlockCyclic(l) => l.rows(),
            Layout::Grid(l) => l.rows(),
        }
    }

    /// Columns of the described matrix.
    pub fn cols(&self) -> usize {
        match self {
            Layout::BlockCyclic(l) => l.cols(),
            Layout::Grid(l) => l.cols(),
        }
    }

    /// Communicator size the layout lives in.
    pub fn ranks(&self) -> usize {
        match self {
            Layout::BlockCyclic(l) => l.ranks(),
            Layout::Grid(l) => l.ranks(),
        }
    }

    /// Owner of element (i, j).
    ///
    /// # Panics
    /// If (i, j) is outside the matrix.
    pub fn owner_of(&self, i: usize, j: usize) -> usize {
        assert!(
            i < self.rows() && j < self.cols(),
            "element ({i}, {j}) outside the matrix"
        );
        self.owner_by_class(self.row_axis().class_of(i), self.col_axis().class_of(j))
    }

    /// The blocks `rank` holds with their place in its local buffer.
    pub fn local_blocks(&self, rank: usize) -> Vec<LocalBlock> {
        match self {
            Layout::BlockCyclic(l) => l.local_blocks(rank),
            Layout::Grid(l) => l.local_blocks(rank),
        }
    }

    /// Element order of `rank`'s local blocks.
    pub fn storage_order(&self, rank: usize) -> Order {
        match self {
            Layout::BlockCyclic(l) => l.spec().local_order,
            Layout::Grid(l) => l.storage_of(rank).order,
        }
    }

    /// Elements `rank`'s local buffer must hold.
    pub fn local_len(&self, rank: usize) -> usize {
        match self {
            Layout::BlockCyclic(l) => l.local_len(rank),
            Layout::Grid(l) => l.local_len(rank),
        }
    }

    /// The layout after relabeling with σ: whatever target label `t` owned now belongs
    /// to process `σ(t)`. σ may be longer than `ranks()` (a communicator larger than
    /// the layout's); the result lives in a communicator of `σ.len()` ranks. It
    /// describes new local matrices: a block-cyclic `lld` is reset to its default.
    ///
    /// # Errors
    /// [`Error::Mismatched`] if σ is shorter than the layout's communicator.
    pub fn relabeled(&self, sigma: &Perm) -> Result<Layout> {
        if sigma.len() < self.ranks() {
            return Err(Mismatched::RelabelingRanks {
                sigma: sigma.len(),
                layout: self.ranks(),
            }
            .into());
        }
        Ok(match self {
            Layout::BlockCyclic(l) => {
                Layout::BlockCyclic(l.relabeled(sigma.forward(), sigma.len())?)
            }
            Layout::Grid(l) => Layout::Grid(l.relabeled(sigma.forward(), sigma.len())),
        })
    }

    /// The same layout in a communicator of `ranks ≥ self.ranks()` ranks.
    ///
    /// # Errors
    /// [`Error::Layout`] if `ranks` is smaller than the layout needs.
    pub fn with_ranks(&self, ranks: usize) -> Result<Layout> {
        Ok(match self {
            Layout::BlockCyclic(l) => Layout::BlockCyclic(l.with_ranks(ranks)?),
            Layout::Grid(l) => {
                let mut s = l.spec();
                s.ranks = Some(ranks);
                if s.storage.len() > 1 {
                    // per-rank storage: the new ranks hold nothing, give them the default
                    s.storage
                        .resize(ranks.max(s.storage.len()), RankStorage::default());
                }
                Layout::Grid(Grid::new(s)?)
            }
        })
    }

    pub(crate) fn row_axis(&self) -> Axis<'_> {
        match self {
            Layout::BlockCyclic(l) => l.row_axis(),
            Layout::Grid(l) => l.row_axis(),
        }
    }

    pub(crate) fn col_axis(&self) -> Axis<'_> {
        match self {
            Layout::BlockCyclic(l) => l.col_axis(),
            Layout::Grid(l) => l.col_axis(),
        }
    }

    /// Owner of the block in row class `cr` and column class `cc`.
    pub(crate) fn owner_by_class(&self, cr: usize, cc: usize) -> usize {
        match self {
            Layout::BlockCyclic(l) => l.rank_at(cr, cc),
            Layout::Grid(l) => l.owner(cr, cc),
        }
    }

    /// A stable 64-bit fingerprint of the global layout (FNV-1a over its JSON form),
    /// equal on every rank that holds an equal layout. A block-cyclic layout's `lld`
    /// is the calling rank's own local storage, not part of the global layout, and is
    /// left out: ranks passing their own descriptors get the same fingerprint.
    pub fn fingerprint(&self) -> u64 {
        let json = match self {
            Layout::BlockCyclic(l) => {
                let mut spec = l.spec().clone();
                spec.lld = None;
                serde_json::to_vec(&spec)
            }
            _ => serde_json::to_vec(self),
        };
        fnv1a(&json.expect("layouts always serialise"))
    }

    /// Checks that this rank's local storage as described fits its local matrix (a
    /// block-cyclic `lld` at least its local extent; see
    /// [`BlockCyclic::check_storage`]).
    ///
    /// # Errors
    /// [`Error::Layout`] naming the field, the rank and the sizes.
    pub fn check_storage(&self, rank: usize) -> Result<()> {
        match self {
            Layout::BlockCyclic(l) => l.check_storage(rank),
            Layout::Grid(_) => Ok(()),
        }
    }

    /// Whether the layout describes the whole global matrix (not a submatrix of it):
    /// then its local buffers hold nothing the layout does not describe.
    pub fn is_whole(&self) -> bool {
        match self {
            Layout::BlockCyclic(l) => l.rows() == l.spec().m && l.cols() == l.spec().n,
            Layout::Grid(_) => true,
        }
    }
}

/// The 64-bit FNV-1a hash of `bytes`: the fingerprints ranks compare to agree on
/// arguments before a collective step.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The source as seen from the target: op(B)'s axes and owners, so that row `i` of the
/// view is row `i` of the target.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpView<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) transposed: bool,
}

impl<'a> OpView<'a> {
    pub(crate) fn new(layout: &'a Layout, op: Op) -> Self {
        Self {
            layout,
            transposed: op.transposes(),
        }
    }

    pub(crate) fn rows(&self) -> usize {
        if self.transposed {
            self.layout.cols()
        } else {
            self.layout.rows()
        }
    }

    pub(crate) fn cols(&self) -> usize {
        if self.transposed {
            self.layout.rows()
        } else {
            self.layout.cols()
        }
    }

    pub(crate) fn row_axis(&self) -> Axis<'a> {
        if self.transposed {
            self.layout.col_axis()
        } else {
            self.layout.row_axis()
        }
    }

    pub(crate) fn col_axis(&self) -> Axis<'a> {
        if self.transposed {
            self.layout.row_axis()
        } else {
            self.layout.col_axis()
        }
    }

    pub(crate) fn owner(&self, cr: usize, cc: usize) -> usize {
        if self.transposed {
            self.layout.owner_by_class(cc, cr)
        } else {
            self.layout.owner_by_class(cr, cc)
        }
    }
}

/// Checks that `op(source)` and `target` have the same shape.
///
/// # Errors
/// [`Error::Mismatched`] with both shapes.
pub fn check_shapes(source: &Layout, target: &Layout, op: Op) -> Result<()> {
    let v = OpView::new(source, op);
    if (v.rows(), v.cols()) != (target.rows(), target.cols()) {
        return Err(Mismatched::Shape {
            transform: None,
            op_source: (v.rows(), v.cols()),
            source_shape: (source.rows(), source.cols()),
            op: format!("{op:?}"),
            target: (target.rows(), target.cols()),
        }
        .into());
    }
    Ok(())
}
