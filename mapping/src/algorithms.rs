//! The classic matrix-multiplication algorithms on a 2-D process grid, as patterns:
//! the messages each algorithm really sends over a whole multiplication `C ← C + A·B`,
//! so that a mapping can be optimised for them.
//!
//! Every matrix is distributed in blocks over an `r × c` grid (task `t = i·c + j` holds
//! block `(i, j)` of `A`, `B` and `C`, the numbering of `MPI_Cart_create`), and every
//! message carries one block of `b` bytes:
//!
//! | algorithm | messages (square grid `q × q` unless said) |
//! |---|---|
//! | Cannon | preskew: row `i` of `A` moves `i` places left (`(i, j) → (i, j−i)`), column `j` of `B` moves `j` places up (`(i, j) → (i−j, j)`); then `q − 1` steps, each a shift of `A` one place left and of `B` one place up (periodic) |
//! | Fox | `q` steps: at step `k` the task `(i, (i+k) mod q)` broadcasts its block of `A` along row `i`; `q − 1` rolls of `B` one place up between the steps |
//! | Snyder | transpose of `B` (`(i, j) → (j, i)`); `q` steps: a reduction (sum) of the partial `C` blocks along row `i` onto `(i, (i+k) mod q)`; `q − 1` shifts of `B` one place up between the steps |
//! | SUMMA (any `r × c`) | every block of `A` broadcast along its row, every block of `B` along its column (each task is the root once in its row and once in its column) |
//!
//! The shifts that only return the data to its starting place (Cannon's postskew,
//! Fox's and Snyder's last shift, Snyder's transpose back) are not counted.
//!
//! Broadcasts and reductions are priced with a stated tree ([`Collective`]): each edge
//! of the tree carries one whole block, so a collective over `q` tasks sends `q − 1`
//! blocks whatever the tree; the tree decides between which tasks. The default,
//! [`Collective::Binomial`], is the binomial tree of MPICH, Open MPI's `binomial`
//! and SimGrid's `binomial_tree`: with ranks relative to the root `v = (j − root) mod q`,
//! the parent of `v > 0` is `v` with its lowest set bit cleared.
//!
//! # Complexity
//! `O(r·c·(r + c))` messages before merging (SUMMA: `r·c·(r + c − 2)` at most).

use serde::{Deserialize, Serialize};

use copr::error::{Error, Result};

use super::pattern::{CartGrid, Edge, Pattern, PatternError};

/// An algorithm's pattern is built from at most this many messages (before pairs are
/// merged): 2²⁶, 1 GiB of messages; a 4096-task square grid needs 3·4096·64 ≈ 786 000.
pub const MAX_MESSAGES: usize = 1 << 26;

/// A matrix-multiplication algorithm on a 2-D process grid (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Cannon: preskew, then `q − 1` shifts along rows (`A`) and columns (`B`).
    Cannon,
    /// Fox ("broadcast, multiply, roll"): `q` broadcasts of a diagonal of `A` along
    /// rows, `q − 1` rolls of `B` along columns.
    Fox,
    /// Snyder: transpose `B`, then `q` reductions along rows and `q − 1` shifts of `B`.
    Snyder,
    /// SUMMA: every block of `A` broadcast along its row, of `B` along its column.
    Summa,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Cannon,
        Algorithm::Fox,
        Algorithm::Snyder,
        Algorithm::Summa,
    ];

    /// The lower-case name (`cannon`, `fox`, `snyder`, `summa`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Cannon => "cannon",
            Self::Fox => "fox",
            Self::Snyder => "snyder",
            Self::Summa => "summa",
        }
    }

    /// The algorithm called `name` ([`Algorithm::name`]), if any.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether the algorithm needs a square grid (all but SUMMA).
    pub fn needs_square(self) -> bool {
        !matches!(self, Self::Summa)
    }
}

/// The tree a broadcast or reduction sends its blocks along (module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Collective {
    /// Binomial tree: relative rank `v > 0` exchanges the block with `v − lowbit(v)`.
    #[default]
    Binomial,
    /// Pipelined ring (a chain from the root): relative rank `v > 0` exchanges the
    /// block with `v − 1`.
    Ring,
}

impl Collective {
    /// Every tree.
    pub const ALL: [Collective; 2] = [Collective::Binomial, Collective::Ring];

    /// The lower-case name (`binomial`, `ring`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Binomial => "binomial",
            Self::Ring => "ring",
        }
    }

    /// The tree called `name` ([`Collective::name`]), if any.
    pub fn from_name(name: &str) -> Option<Collective> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The parent of relative rank `v > 0` in the tree.
    fn parent(self, v: usize) -> usize {
        match self {
            Self::Binomial => v & (v - 1),
            Self::Ring => v - 1,
        }
    }
}

/// One algorithm on one grid: what [`Pattern::algorithm`] builds.
///
/// ```
/// use copr_mapping::{Algorithm, AlgorithmSpec, Collective, Pattern};
/// let s = AlgorithmSpec { algorithm: Algorithm::Fox, rows: 4, cols: 4, block_bytes: 1 << 20, collective: Collective::Binomial };
/// let p = Pattern::algorithm(&s).unwrap();
/// // 4 broadcasts of 3 blocks in each of 4 rows, 3 rolls of 16 blocks
/// assert_eq!(p.total_bytes(), (4 * 4 * 3 + 3 * 16) * (1 << 20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlgorithmSpec {
    /// The algorithm.
    pub algorithm: Algorithm,
    /// Process-grid rows `r`.
    pub rows: usize,
    /// Process-grid columns `c`.
    pub cols: usize,
    /// Bytes of one block (every message carries one).
    pub block_bytes: u64,
    /// The tree of broadcasts and reductions.
    pub collective: Collective,
}

impl Pattern {
    /// The messages of one whole run of an algorithm (module docs), merged per pair of
    /// tasks; the pattern keeps the grid's shape for the strategies that follow a grid
    /// (tiles, Hilbert), not its neighbour traffic.
    ///
    /// # Errors
    /// [`PatternError::NotSquare`] for a non-square grid where the algorithm needs one,
    /// [`CartGrid::new`]'s errors; [`Error::Limit`] above
    /// [`MAX_MESSAGES`] messages; an overflow of the bytes of a pair.
    pub fn algorithm(s: &AlgorithmSpec) -> Result<Pattern> {
        let (r, c) = (s.rows, s.cols);
        if s.algorithm.needs_square() && r != c {
            return Err(PatternError::NotSquare {
                algorithm: s.algorithm.name(),
                rows: r,
                cols: c,
            }
            .into());
        }
        let shape = CartGrid::new(vec![r, c], vec![true, true], vec![s.block_bytes; 2])?;
        let n = (r * c) as u128;
        let messages = match s.algorithm {
            Algorithm::Summa => n * (r + c) as u128,
            _ => 3 * n * r as u128,
        };
        if messages > MAX_MESSAGES as u128 {
            return Err(Error::Limit(format!(
                "{} on a {r}x{c} grid sends {messages} messages; at most {MAX_MESSAGES} are \
                 built (16 bytes each)",
                s.algorithm.name()
            )));
        }
        let b = s.block_bytes;
        let t = |i: usize, j: usize| (i * c + j) as u32;
        let mut e: Vec<Edge> = Vec::new();
        let mut send = |src: u32, dst: u32| e.push(Edge { src, dst, bytes: b });
        // a broadcast (or, with `up`, a reduction) over `q` tasks `at(0..q)`, rooted at `root`
        let tree = |q: usize, root: usize, up: bool, at: &dyn Fn(usize) -> u32| {
            let mut out = Vec::with_capacity(q.saturating_sub(1));
            for v in 1..q {
                let (a, b) = (at((s.collective.parent(v) + root) % q), at((v + root) % q));
                out.push(if up { (b, a) } else { (a, b) });
            }
            out
        };
        let q = r;
        match s.algorithm {
            Algorithm::Cannon => {
                for i in 0..q {
                    for j in 0..q {
                        send(t(i, j), t(i, (j + q - i) % q));
                        send(t(i, j), t((i + q - j) % q, j));
                        for _ in 1..q {
                            send(t(i, j), t(i, (j + q - 1) % q));
                            send(t(i, j), t((i + q - 1) % q, j));
                        }
                    }
                }
            }
            Algorithm::Fox | Algorithm::Snyder => {
                let fox = s.algorithm == Algorithm::Fox;
                for i in 0..q {
                    for k in 0..q {
                        for (a, d) in tree(q, (i + k) % q, !fox, &|j| t(i, j)) {
                            send(a, d);
                        }
                    }
                    for j in 0..q {
                        if !fox {
                            send(t(i, j), t(j, i));
                        }
                        for _ in 1..q {
                            send(t(i, j), t((i + q - 1) % q, j));
                        }
                    }
                }
            }
            Algorithm::Summa => {
                for i in 0..r {
                    for k in 0..c {
                        for (a, d) in tree(c, k, false, &|j| t(i, j)) {
                            send(a, d);
                        }
                    }
                }
                for j in 0..c {
                    for k in 0..r {
                        for (a, d) in tree(r, k, false, &|i| t(i, j)) {
                            send(a, d);
                        }
                    }
                }
            }
        }
        let tree_note = match s.algorithm {
            Algorithm::Cannon => String::new(),
            _ => format!(", {} trees", s.collective.name()),
        };
        let mut p = Pattern::from_edges(
            r * c,
            e,
            format!(
                "{} on a {r}x{c} grid, {b} bytes per block{tree_note}",
                s.algorithm.name()
            ),
        )?;
        p.set_shape(shape);
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn spec(a: Algorithm, r: usize, c: usize, col: Collective) -> AlgorithmSpec {
        AlgorithmSpec {
            algorithm: a,
            rows: r,
            cols: c,
            block_bytes: 10,
            collective: col,
        }
    }

    fn directed(p: &Pattern) -> BTreeMap<(u32, u32), u64> {
        p.edges()
            .iter()
            .map(|e| ((e.src, e.dst), e.bytes))
            .collect()
    }

    fn expect(list: &[(u32, u32, u64)]) -> BTreeMap<(u32, u32), u64> {
        list.iter().map(|&(a, b, w)| ((a, b), w)).collect()
    }

    #[test]
    fn cannon_2x2_by_hand() {
        // tasks 0=(0,0) 1=(0,1) 2=(1,0) 3=(1,1); preskew: row 1 of A swaps (2<->3),
        // column 1 of B swaps (1<->3); one step: A left (0<->1, 2<->3), B up (0<->2, 1<->3)
        let p = Pattern::algorithm(&spec(Algorithm::Cannon, 2, 2, Collective::Binomial)).unwrap();
        let want = expect(&[
            (0, 1, 10),
            (1, 0, 10),
            (2, 3, 20),
            (3, 2, 20),
            (0, 2, 10),
            (2, 0, 10),
            (1, 3, 20),
            (3, 1, 20),
        ]);
        assert_eq!(directed(&p), want);
        assert!(p.grid_spec().is_none());
        assert_eq!(p.shape().map(|g| g.dims.clone()), Some(vec![2, 2]));
    }

    #[test]
    fn cannon_3x3_preskew_by_hand() {
        // (1,0)=3: preskew A to (1,2)=5, B stays (column 0); shifts: 2x to (1,2)=5 and
        // 2x up to (0,0)=0. (2,1)=7: A to (2,2)=8, B to (1,1)=4; shifts 2x to (2,0)=6
        // and 2x to (1,1)=4.
        let p = Pattern::algorithm(&spec(Algorithm::Cannon, 3, 3, Collective::Binomial)).unwrap();
        let d = directed(&p);
        let out = |s: u32| -> Vec<(u32, u64)> {
            d.iter()
                .filter(|(k, _)| k.0 == s)
                .map(|(k, &w)| (k.1, w))
                .collect()
        };
        assert_eq!(out(3), vec![(0, 20), (5, 30)]);
        assert_eq!(out(7), vec![(4, 30), (6, 20), (8, 10)]);
        // (0,0) never moves in the preskew: only 2 + 2 shifts
        assert_eq!(out(0), vec![(2, 20), (6, 20)]);
    }

    #[test]
    fn fox_3x3_binomial_and_ring_by_hand() {
        // binomial over 3: the root sends to both others; each row's 3 roots give
        // every ordered pair of the row once. Rolls: 2x one place up.
        let p = Pattern::algorithm(&spec(Algorithm::Fox, 3, 3, Collective::Binomial)).unwrap();
        let d = directed(&p);
        let out4: Vec<(u32, u64)> = d
            .iter()
            .filter(|(k, _)| k.0 == 4)
            .map(|(k, &w)| (k.1, w))
            .collect();
        assert_eq!(out4, vec![(1, 20), (3, 10), (5, 10)]);
        assert_eq!(p.total_bytes(), (3 * 3 * 2 + 2 * 9) * 10);
        // ring: root -> root+1 -> root+2; in a row only j -> j+1, twice
        let p = Pattern::algorithm(&spec(Algorithm::Fox, 3, 3, Collective::Ring)).unwrap();
        let d = directed(&p);
        let out4: Vec<(u32, u64)> = d
            .iter()
            .filter(|(k, _)| k.0 == 4)
            .map(|(k, &w)| (k.1, w))
            .collect();
        assert_eq!(out4, vec![(1, 20), (5, 20)]);
    }

    #[test]
    fn snyder_2x2_by_hand() {
        // transpose 1<->2; shift up 0<->2, 1<->3; reductions: row 0 1->0 then 0->1,
        // row 1 (roots (1,1) then (1,0)) 2->3 then 3->2
        let p = Pattern::algorithm(&spec(Algorithm::Snyder, 2, 2, Collective::Binomial)).unwrap();
        let want = expect(&[
            (1, 2, 10),
            (2, 1, 10),
            (0, 2, 10),
            (2, 0, 10),
            (1, 3, 10),
            (3, 1, 10),
            (1, 0, 10),
            (0, 1, 10),
            (2, 3, 10),
            (3, 2, 10),
        ]);
        assert_eq!(directed(&p), want);
    }

    #[test]
    fn snyder_4x4_binomial_reduction_edges() {
        // row 0 reduces onto column r = k at step k; task (0,3) = 3 has relative rank
        // v = (3 - r) mod 4 and parent v & (v - 1): r = 0: v = 3 -> 2 (column 2);
        // r = 1: v = 2 -> 0 (column 1); r = 2: v = 1 -> 0 (column 2); r = 3: root.
        let p = Pattern::algorithm(&spec(Algorithm::Snyder, 4, 4, Collective::Binomial)).unwrap();
        let d = directed(&p);
        assert_eq!(d.get(&(3, 2)), Some(&20));
        assert_eq!(d.get(&(3, 1)), Some(&10));
        assert_eq!(d.get(&(3, 0)), None);
        // transpose (0,3) -> (3,0) = 12
        assert_eq!(d.get(&(3, 12)), Some(&10));
    }

    #[test]
    fn summa_2x3_by_hand() {
        // rows of 3 (binomial: the root sends to both others) and columns of 2: every
        // task sends one block to each other task of its row and of its column
        let p = Pattern::algorithm(&spec(Algorithm::Summa, 2, 3, Collective::Binomial)).unwrap();
        let mut want = Vec::new();
        for a in 0..6u32 {
            for b in 0..6u32 {
                if a != b && (a / 3 == b / 3 || a % 3 == b % 3) {
                    want.push((a, b, 10));
                }
            }
        }
        assert_eq!(directed(&p), expect(&want));
    }

    #[test]
    fn non_square_refused_where_needed() {
        for a in [Algorithm::Cannon, Algorithm::Fox, Algorithm::Snyder] {
            let e = Pattern::algorithm(&spec(a, 2, 3, Collective::Binomial)).unwrap_err();
            assert!(
                e.to_string().contains("square") && e.to_string().contains("2x3"),
                "{e}"
            );
        }
        assert!(Pattern::algorithm(&spec(Algorithm::Summa, 0, 3, Collective::Ring)).is_err());
    }
}
