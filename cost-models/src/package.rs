//! [`Package`]: what a cost model knows about the data one rank sends another.

use serde::{Deserialize, Serialize};

/// Bytes of a package that must be transformed on receipt, per kind of
/// transform. A block that is conjugate-transposed counts in both
/// `transpose` and `conjugate`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformBytes {
    /// Bytes multiplied by a scalar (`α ≠ 1`).
    #[serde(default)]
    pub scale: u64,
    /// Bytes transposed.
    #[serde(default)]
    pub transpose: u64,
    /// Bytes conjugated.
    #[serde(default)]
    pub conjugate: u64,
}

/// Memory-locality facts of a package's blocks, aggregated.
///
/// A block is *contiguous* if its bytes are one run in memory (a single row,
/// or rows whose stride equals their length); otherwise its `rows` rows are
/// *strided segments* that must be gathered one by one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locality {
    /// Bytes in contiguous blocks.
    #[serde(default)]
    pub contiguous_bytes: u64,
    /// Bytes in strided blocks.
    #[serde(default)]
    pub strided_bytes: u64,
    /// Number of strided segments (rows of strided blocks).
    #[serde(default)]
    pub segments: u64,
    /// Shortest strided segment in bytes (0 when there are none).
    #[serde(default)]
    pub min_segment_bytes: u64,
    /// Padding bytes that travel with the data.
    #[serde(default)]
    pub padding_bytes: u64,
    /// Blocks whose start is not aligned (e.g. to 64 bytes).
    #[serde(default)]
    pub misaligned_blocks: u64,
}

impl Locality {
    /// Mean strided segment length in bytes: `strided_bytes / segments`
    /// (0 when there are no segments).
    ///
    /// ```
    /// use copr_cost_models::{BlockFacts, Package};
    /// let p = Package::from_blocks(&[BlockFacts::strided(4, 16), BlockFacts::strided(2, 40)]);
    /// assert_eq!(p.locality.mean_segment_bytes(), (64.0 + 80.0) / 6.0);
    /// assert_eq!(p.locality.min_segment_bytes, 16);
    /// ```
    pub fn mean_segment_bytes(&self) -> f64 {
        if self.segments == 0 {
            0.0
        } else {
            self.strided_bytes as f64 / self.segments as f64
        }
    }
}

/// The facts about one block that [`Package::add_block`] aggregates: a block
/// of `rows` rows of `row_bytes` bytes each.
///
/// ```
/// use copr_cost_models::BlockFacts;
/// let b = BlockFacts::strided(8, 256).transposed().misaligned();
/// assert_eq!(b.bytes(), 2048);
/// assert!(b.transpose && !b.aligned && !b.contiguous);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BlockFacts {
    /// Number of rows (segments).
    pub rows: u64,
    /// Bytes per row.
    pub row_bytes: u64,
    /// Whether the rows are adjacent in memory (stride = row length).
    pub contiguous: bool,
    /// Padding bytes sent along.
    pub padding_bytes: u64,
    /// Whether the block starts aligned.
    pub aligned: bool,
    /// Scaled on receipt.
    pub scale: bool,
    /// Transposed on receipt.
    pub transpose: bool,
    /// Conjugated on receipt.
    pub conjugate: bool,
}

impl BlockFacts {
    /// A contiguous, aligned, untransformed block of `bytes` bytes.
    pub fn contiguous(bytes: u64) -> Self {
        Self {
            rows: 1,
            row_bytes: bytes,
            contiguous: true,
            padding_bytes: 0,
            aligned: true,
            scale: false,
            transpose: false,
            conjugate: false,
        }
    }

    /// A strided (non-contiguous) block of `rows` rows of `row_bytes` bytes.
    /// A block of one row is contiguous.
    pub fn strided(rows: u64, row_bytes: u64) -> Self {
        Self {
            rows,
            row_bytes,
            contiguous: rows <= 1,
            ..Self::contiguous(0)
        }
    }

    /// The same block, scaled on receipt.
    #[must_use]
    pub fn scaled(mut self) -> Self {
        self.scale = true;
        self
    }

    /// The same block, transposed on receipt.
    #[must_use]
    pub fn transposed(mut self) -> Self {
        self.transpose = true;
        self
    }

    /// The same block, conjugated on receipt.
    #[must_use]
    pub fn conjugated(mut self) -> Self {
        self.conjugate = true;
        self
    }

    /// The same block, not aligned.
    #[must_use]
    pub fn misaligned(mut self) -> Self {
        self.aligned = false;
        self
    }

    /// The same block with `bytes` of padding.
    #[must_use]
    pub fn padded(mut self, bytes: u64) -> Self {
        self.padding_bytes = bytes;
        self
    }

    /// `rows · row_bytes`.
    pub fn bytes(&self) -> u64 {
        self.rows * self.row_bytes
    }
}

/// A summary of a package `s = {b_0, b_1, …}`: what rank `i` sends rank `j`.
/// Plain data, `Copy`, cheap to build; [`Package::plain`] for volume-only
/// uses, [`Package::add_block`]/[`Package::from_blocks`] to aggregate block
/// facts, [`Package::merge`] to combine summaries.
///
/// `bytes` is the package volume `V(s) = Σ_b V(b)`; a package with
/// `bytes == 0` is empty, and every cost model prices it at 0.
///
/// ```
/// use copr_cost_models::{BlockFacts, Package};
/// let mut p = Package::plain(100);
/// p.add_block(&BlockFacts::strided(4, 25).scaled());
/// assert_eq!((p.bytes, p.blocks), (200, 2));
/// assert_eq!(p.transform.scale, 100);
/// assert_eq!(p.locality.contiguous_bytes, 100);
/// assert_eq!(p.locality.strided_bytes, 100);
/// assert_eq!(p.locality.segments, 4);
/// assert!(Package::EMPTY.is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Package {
    /// Package volume in bytes (payload, without padding).
    pub bytes: u64,
    /// Number of blocks.
    #[serde(default)]
    pub blocks: u64,
    /// Bytes to transform on receipt, per kind.
    #[serde(default)]
    pub transform: TransformBytes,
    /// Locality facts.
    #[serde(default)]
    pub locality: Locality,
}

impl Package {
    /// The empty package `∅`.
    pub const EMPTY: Package = Package {
        bytes: 0,
        blocks: 0,
        transform: TransformBytes {
            scale: 0,
            transpose: 0,
            conjugate: 0,
        },
        locality: Locality {
            contiguous_bytes: 0,
            strided_bytes: 0,
            segments: 0,
            min_segment_bytes: 0,
            padding_bytes: 0,
            misaligned_blocks: 0,
        },
    };

    /// A volume-only package: one contiguous block of `bytes` bytes (no
    /// block at all if `bytes == 0`).
    pub fn plain(bytes: u64) -> Self {
        let mut p = Self::EMPTY;
        if bytes > 0 {
            p.add_block(&BlockFacts::contiguous(bytes));
        }
        p
    }

    /// The summary of `blocks`.
    pub fn from_blocks<'a>(blocks: impl IntoIterator<Item = &'a BlockFacts>) -> Self {
        let mut p = Self::EMPTY;
        for b in blocks {
            p.add_block(b);
        }
        p
    }

    /// Adds one block's facts.
    ///
    /// # Complexity
    /// `O(1)`.
    pub fn add_block(&mut self, b: &BlockFacts) {
        let bytes = b.bytes();
        self.bytes += bytes;
        self.blocks += 1;
        if b.scale {
            self.transform.scale += bytes;
        }
        if b.transpose {
            self.transform.transpose += bytes;
        }
        if b.conjugate {
            self.transform.conjugate += bytes;
        }
        let l = &mut self.locality;
        if b.contiguous || b.rows <= 1 {
            l.contiguous_bytes += bytes;
        } else {
            l.strided_bytes += bytes;
            l.min_segment_bytes = if l.segments == 0 {
                b.row_bytes
            } else {
                l.min_segment_bytes.min(b.row_bytes)
            };
            l.segments += b.rows;
        }
        l.padding_bytes += b.padding_bytes;
        if !b.aligned {
            l.misaligned_blocks += 1;
        }
    }

    /// Adds another summary (the package `self ∪ other`).
    ///
    /// ```
    /// use copr_cost_models::{BlockFacts, Package};
    /// let a = [BlockFacts::strided(2, 8), BlockFacts::contiguous(5)];
    /// let b = [BlockFacts::strided(3, 4).transposed()];
    /// let mut m = Package::from_blocks(&a);
    /// m.merge(&Package::from_blocks(&b));
    /// assert_eq!(m, Package::from_blocks(a.iter().chain(&b)));
    /// ```
    pub fn merge(&mut self, o: &Package) {
        self.bytes += o.bytes;
        self.blocks += o.blocks;
        self.transform.scale += o.transform.scale;
        self.transform.transpose += o.transform.transpose;
        self.transform.conjugate += o.transform.conjugate;
        let (l, r) = (&mut self.locality, &o.locality);
        l.contiguous_bytes += r.contiguous_bytes;
        l.strided_bytes += r.strided_bytes;
        l.min_segment_bytes = match (l.segments, r.segments) {
            (0, _) => r.min_segment_bytes,
            (_, 0) => l.min_segment_bytes,
            _ => l.min_segment_bytes.min(r.min_segment_bytes),
        };
        l.segments += r.segments;
        l.padding_bytes += r.padding_bytes;
        l.misaligned_blocks += r.misaligned_blocks;
    }

    /// `bytes == 0`.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}
