//! Sparse maximum-weight assignment on non-negative weights.
//!
//! Because every weight is `≥ 0`, the best permutation of a square matrix whose entries
//! outside the stored pattern are zero is a maximum-weight (not necessarily perfect)
//! matching on the stored entries, completed with zero-weight pairs among the rows and
//! columns it leaves out. [`sparse_max`] finds that matching exactly on the bipartite
//! graph of the nonzeros, where every row may also take a private zero-weight *dummy*
//! column:
//!
//! 1. warm start: prices `u_i = max(0, max_j w_ij)`, `v = 0`; each row greedily takes a
//!    free column of maximal weight (or its dummy if it has no positive weight);
//! 2. two passes of Jonker–Volgenant augmenting row reduction (an auction with zero
//!    increment: a free row takes its most profitable column and raises its price to the
//!    runner-up's level, displacing the owner);
//! 3. successive shortest augmenting paths (Dijkstra with potentials; a bucket queue
//!    when the distances are integers below `BUCKET_LIMIT`, else a binary heap) for the
//!    rows still free, either one search per row or, when many rows are tied (few
//!    distinct weights), *phases*: depth-first augmentation along vertex-disjoint tight
//!    paths from all free rows (preceded, when they hold none, by one multi-source
//!    Dijkstra that makes every shortest augmenting path tight). The first phases search
//!    the tight pairs freely with a lookahead for free columns (Pothen–Fan); once a phase
//!    matches fewer than half of its free rows, each phase first builds breadth-first
//!    layers of the tight pairs and its paths descend them (Hopcroft–Karp). The solver
//!    switches between per-row searches and phases by their measured edge visits per
//!    matched row; with weights of at most 64 it runs phases only, on the tight pairs
//!    collected once per price change, which then need at most 64 Dijkstra searches in
//!    all (see `SMALL_WEIGHT`), and is never handed over;
//! 4. when the shortest paths turn expensive (rows of at most 64 entries on average;
//!    after `4·(nnz + n)` edge visits, the free rows times the recent visits per matched
//!    row exceed `16·(nnz + n)`; or, at once, the per-row searches cost at least 16 times
//!    the average row length each and the free rows times that cost exceed
//!    `nnz + n`), the ε-scaling auction of `auction.rs` takes over from the
//!    current prices and matching and solves the square problem with implicit zeros
//!    exactly (integer weights scaled by `n + 1`, first `ε` at most 16 original units,
//!    final `ε = 1`). If it gives up (scaled
//!    weights beyond `2^42`, or `256·(nnz + n)` edge visits spent) the shortest paths
//!    continue where they stopped.
//!
//! Every step of 1–3 keeps the invariants below, so the result is exact whatever the
//! mix; the auction's exactness is argued in its own module.
//!
//! ## Duals
//! Row prices `u_i`, column prices `v_j`, reduced weights `r_ij = u_i + v_j − w_ij ≥ 0`,
//! dummy edges `r_i = u_i ≥ 0`, `v_j ≥ 0`, `v_j = 0` for free columns, matched pairs
//! tight. These are the complementary-slackness conditions of the LP
//! `max Σ w x` s.t. every row matched once (to a column or its dummy), every column at
//! most once; when every row is matched they certify optimality.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[cfg(test)]
use super::auction::auction_max_with;
use super::auction::{auction_max, Outcome, Start};
use crate::csr::Csr;
use crate::error::{Error, Result};
use crate::lap::Perm;

/// Largest weight [`sparse_max`] accepts: prices, distances and reduced weights all stay
/// within `[−2^60, 3·2^60]`, inside `i64`.
const MAX_WEIGHT: u64 = 1 << 60;

const FREE: u32 = u32::MAX;
const DUMMY: u32 = u32::MAX - 1;
const INF: i64 = i64::MAX;

/// The shortest-path stage hands the instance to the ε-scaling auction when the free
/// rows times the recent edge visits per matched row exceed this many visits per stored
/// entry (plus one per row): an auction costs a few dozen cheaper visits per entry.
const HANDOVER_PER_ENTRY: u64 = 16;

/// Average entries per row above which the auction is not tried: each bid scans its
/// row, and on long rows (block-cyclic 7 → 13, 361 per row) the shortest paths win.
const MAX_AUCTION_DEGREE: u64 = 64;

/// The shortest-path stage always spends this many edge visits per stored entry (plus
/// one per row) before a handover: its per-row cost is erratic early on, and most
/// instances that need it at all finish within this budget.
const MIN_SAP_WORK_PER_ENTRY: u64 = 4;

/// Largest weight for which the shortest-path stage runs phases only: a phase searches
/// (Dijkstra) only when no tight augmenting path is left, that search's distance `L` is
/// then an integer `≥ 1`, and it lowers every free row's price by `L`; a free row's
/// price starts at most at its largest weight and never drops below 0, so at most
/// `SMALL_WEIGHT` searches run in all, and the rest is augmentation along tight paths
/// (random rows with weights in `[1, 4)`: ties everywhere, which the
/// auction handles badly).
const SMALL_WEIGHT: u64 = 64;

/// Largest distance bound (the smallest free row price at the start of a search) for
/// which [`Solver::search`] uses a bucket queue: its scan costs at most one step per
/// distance value, and the prices are bounded by the largest weight.
const BUCKET_LIMIT: i64 = 4096;

/// The shortest-path stage hands over as soon as its per-row searches cost at least this
/// many times the average row length (plus one) each, and the free rows times that
/// cost exceed `ROW_HANDOVER_PER_ENTRY` visits per stored entry (plus one per row):
/// long searches from the start mark the random instances on which the auction (with
/// its cached candidates) wins, while on the block-cyclic and sparser random
/// instances a search visits a few rows only.
const ROW_SEARCH_PER_DEGREE: u64 = 16;

/// See `ROW_SEARCH_PER_DEGREE`.
const ROW_HANDOVER_PER_ENTRY: u64 = 1;

/// Edge visits per stored entry (plus one per row) the auction may spend before it
/// gives up and the shortest-path stage finishes the job.
const AUCTION_WORK_PER_ENTRY: u64 = 256;

/// Exact maximum of `Σ_i W[i][σ(i)]` over all permutations σ of a square sparse matrix
/// of non-negative weights (entries outside the pattern are 0).
///
/// Returns σ with `σ(i)` the column given to row `i`. The `n × n` matrix is never
/// formed: the solver works on the stored nonzeros plus one implicit zero-weight dummy
/// column per row, then pairs the rows left on their dummies with the unused columns.
///
/// In copr the planner calls `sparse_max(&volumes.transpose())`: row `t` of `Vᵀ` holds
/// what target `t` receives, and σ(t) is the process that takes target label `t`.
///
/// # Complexity
/// O(n + nnz) memory. When at most half of the indices have a nonzero row or column, the
/// solver runs on those alone (O(n) for σ itself, the rest follows the used indices).
/// Time: O(nnz) for the warm start, then one Dijkstra search (or a
/// share of a phase) per row left free, each touching only the alternating tree it grows
/// before reaching a free column or a dummy: O(n · nnz · log nnz) in the worst case.
/// Near-linear on the block-cyclic relabeling instances (p = 102 400 ranks, 1.6 M
/// nonzeros: a few milliseconds). On random sparse graphs with many near-optimal
/// alternatives, where the late searches grow long, an ε-scaling auction finishes the
/// job (numbers in `benches/RESULTS.md`).
///
/// # Errors
/// [`Error::Assignment`] if `w` is not square or a weight exceeds `2^60`.
///
/// # Example
/// ```
/// use copr::lap::{assignment_value, sparse_max};
/// use copr::csr::Csr;
/// // Row 0 likes column 0 (5) or 1 (4); row 1 only likes column 0 (3).
/// let w = Csr::from_triplets(3, 3, vec![(0, 0, 5), (0, 1, 4), (1, 0, 3)]);
/// let sigma = sparse_max(&w).unwrap();
/// assert_eq!(assignment_value(&w, &sigma), 7); // 4 + 3 beats 5 + 0
/// assert_eq!(sigma.apply(0), 1);
/// assert_eq!(sigma.apply(1), 0);
/// assert_eq!(sigma.apply(2), 2);
/// ```
pub fn sparse_max(w: &Csr) -> Result<Perm> {
    match compact(w) {
        Some((used, small)) => {
            check_weights(w)?;
            // rows and columns outside `used` are all zero: any permutation of `used`
            // extended by the identity is as good as any permutation of all n
            let sc = solve(&small, Strategy::Adaptive)?;
            let mut fwd: Vec<usize> = (0..w.n_rows()).collect();
            for (a, &i) in used.iter().enumerate() {
                fwd[i] = used[sc.apply(a)];
            }
            Perm::from_forward(fwd)
        }
        None => solve(w, Strategy::Adaptive),
    }
}

/// Refuses weights above [`MAX_WEIGHT`], naming the entry.
fn check_weights(w: &Csr) -> Result<()> {
    if let Some((k, &big)) = w.values().iter().enumerate().find(|(_, &x)| x > MAX_WEIGHT) {
        let row = w.row_ptr().partition_point(|&p| p <= k) - 1;
        return Err(Error::Assignment(format!(
            "weight W[{row}][{}] = {big} exceeds the supported maximum 2^60",
            w.col_indices()[k]
        )));
    }
    Ok(())
}

/// When at most half of the indices of a square `w` have a nonzero row or column: the
/// sorted used indices and `w` restricted to them, so that the solver's work and memory
/// follow the ranks that exchange data, not the communicator size.
fn compact(w: &Csr) -> Option<(Vec<usize>, Csr)> {
    let n = w.n_rows();
    if w.n_cols() != n || n < 64 {
        return None;
    }
    // new index + 1 of every used index, 0 for unused
    let mut index = vec![0u32; n];
    let rp = w.row_ptr();
    for (r, x) in index.iter_mut().enumerate() {
        *x = u32::from(rp[r + 1] > rp[r]);
    }
    for &c in w.col_indices() {
        index[c as usize] = 1;
    }
    let mut used = Vec::new();
    for (i, x) in index.iter_mut().enumerate() {
        if *x != 0 {
            used.push(i);
            *x = used.len() as u32;
        }
    }
    if used.len() > n / 2 {
        return None;
    }
    // the renumbering keeps the order, so rows stay sorted
    let mut row_ptr = Vec::with_capacity(used.len() + 1);
    row_ptr.push(0);
    for &i in &used {
        row_ptr.push(row_ptr[row_ptr.len() - 1] + rp[i + 1] - rp[i]);
    }
    let cols = w
        .col_indices()
        .iter()
        .map(|&c| index[c as usize] - 1)
        .collect();
    let small = Csr::from_parts(used.len(), used.len(), row_ptr, cols, w.values().to_vec());
    Some((used, small))
}

/// How the shortest-path stage picks its steps (all exact; tests force each one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Adaptive,
    #[cfg(test)]
    PerRow,
    /// Phases only (tight augmenting paths, a search when none is left), never handed
    /// over: what [`Strategy::Adaptive`] becomes for small weights.
    Phases,
    /// The ε-scaling auction alone (the shortest paths only if it gives up).
    #[cfg(test)]
    Auction,
    /// The auction alone, every bid scanning its row (no cached candidates).
    #[cfg(test)]
    AuctionNoCache,
    /// Adaptive, handing over to the auction by the per-row rule (`row_cost`,
    /// `row_remaining`) after the first per-row searches.
    #[cfg(test)]
    RowHandover,
    /// Adaptive, handing over to the auction after the first shortest-path step.
    #[cfg(test)]
    Handover,
    /// One search per row, always with the binary heap (never the bucket queue).
    #[cfg(test)]
    PerRowHeap,
    /// Phases as before the lookahead phases and the collected tight pairs: layered
    /// (Hopcroft–Karp) from the first phase on, every stored entry checked for
    /// tightness.
    #[cfg(test)]
    LayeredPhases,
}

/// When [`Solver::solve_free`] stops and returns the rows still free: once it has spent
/// `min_work` edge visits and the free rows times the edge visits per matched row of its
/// last step exceed `remaining`; or as soon as its last per-row searches spent at least
/// `row_cost` edge visits per row and the free rows times that exceed `row_remaining`.
#[derive(Debug, Clone, Copy)]
struct Handover {
    remaining: u64,
    min_work: u64,
    row_cost: u64,
    row_remaining: u64,
}

impl Handover {
    const NEVER: Self = Self {
        remaining: u64::MAX,
        min_work: u64::MAX,
        row_cost: u64::MAX,
        row_remaining: u64::MAX,
    };
}

fn solve(w: &Csr, strategy: Strategy) -> Result<Perm> {
    let n = w.n_rows();
    if w.n_cols() != n {
        return Err(Error::Assignment(format!(
            "sparse_max needs a square matrix, got {} x {}",
            n,
            w.n_cols()
        )));
    }
    if n >= DUMMY as usize {
        return Err(Error::Assignment(format!(
            "sparse_max supports n < {DUMMY}, got n = {n}"
        )));
    }
    check_weights(w)?;
    let nnz = w.nnz() as u64;
    #[cfg(test)]
    if matches!(strategy, Strategy::Auction | Strategy::AuctionNoCache) {
        let cached = strategy == Strategy::Auction;
        if let Outcome::Optimal(sigma) = auction_max_with(w, u64::MAX, None, cached) {
            return perm_of(sigma);
        }
    }
    let max_w = w.values().iter().copied().max().unwrap_or(0);
    let strategy = match strategy {
        Strategy::Adaptive if max_w <= SMALL_WEIGHT => Strategy::Phases,
        st => st,
    };
    let mut s = Solver::new(w);
    s.use_tight = strategy == Strategy::Phases;
    #[cfg(test)]
    {
        if strategy == Strategy::PerRowHeap {
            s.bucket_limit = -1;
        }
        s.unlayered = strategy != Strategy::LayeredPhases;
    }
    let mut free = s.warm_start();
    for _ in 0..2 {
        if free.is_empty() {
            break;
        }
        free = s.augmenting_row_reduction(free);
    }
    let size = nnz + n as u64;
    let handover = match strategy {
        Strategy::Adaptive if nnz <= MAX_AUCTION_DEGREE * n as u64 => Handover {
            remaining: HANDOVER_PER_ENTRY.saturating_mul(size),
            min_work: MIN_SAP_WORK_PER_ENTRY.saturating_mul(size),
            row_cost: ROW_SEARCH_PER_DEGREE.saturating_mul(size.div_ceil(n as u64)),
            row_remaining: ROW_HANDOVER_PER_ENTRY.saturating_mul(size),
        },
        #[cfg(test)]
        Strategy::Handover => Handover {
            remaining: 0,
            min_work: 0,
            row_cost: 0,
            row_remaining: 0,
        },
        #[cfg(test)]
        Strategy::RowHandover => Handover {
            row_cost: 0,
            row_remaining: 0,
            ..Handover::NEVER
        },
        _ => Handover::NEVER,
    };
    let free = s.solve_free(free, strategy, handover);
    if !free.is_empty() {
        if let Outcome::Optimal(sigma) = auction_max(
            w,
            AUCTION_WORK_PER_ENTRY.saturating_mul(size),
            Some(s.start()),
        ) {
            return perm_of(sigma);
        }
        s.solve_free(free, strategy, Handover::NEVER);
    }
    Ok(s.into_perm())
}

/// σ from the auction's row → column list.
fn perm_of(sigma: Vec<u32>) -> Result<Perm> {
    Perm::from_forward(sigma.into_iter().map(|j| j as usize).collect())
}

/// State of the successive-shortest-path solver.
struct Solver<'a> {
    n: usize,
    row_ptr: &'a [usize],
    cols: &'a [u32],
    vals: &'a [u64],
    /// Row → column, [`DUMMY`] or [`FREE`].
    match_row: Vec<u32>,
    /// Row prices.
    u: Vec<i64>,
    /// Everything per column, together so a relaxation touches one cache line.
    col: Vec<Col>,
    touched: Vec<u32>,
    settled: Vec<u32>,
    heap: BinaryHeap<Reverse<(i64, u32)>>,
    /// Edge visits so far (relaxations and depth-first checks), the cost measure of
    /// [`Solver::solve_free`].
    work: u64,
    /// Depth-first stack of `(row, next edge position)`.
    stack: Vec<(u32, usize)>,
    /// The current depth-first phase (column stamps).
    phase: u32,
    /// Per row: the layering (see [`Solver::layers`]) that last reached it, and its
    /// layer there.
    layer: Vec<(u32, u32)>,
    /// The current layering.
    layering: u32,
    /// Breadth-first frontiers of [`Solver::layers`].
    frontier: Vec<u32>,
    next: Vec<u32>,
    /// Whether phases run on `tight_ptr`/`tight_cols` (the pairs tight at the prices
    /// of epoch `tight_epoch`) instead of checking every stored entry for tightness:
    /// worth it when prices change rarely (phases only).
    use_tight: bool,
    tight_epoch: Option<u32>,
    tight_ptr: Vec<usize>,
    tight_cols: Vec<u32>,
    /// Whether phases still search without layers: true until a phase matches fewer
    /// than half of its free rows.
    unlayered: bool,
    /// Per row: the price epoch (see `epoch`) of its lookahead position and that
    /// position within the row; every entry before it was checked for a tight pair to
    /// a free column ([`Solver::tight_augment`]).
    look: Vec<(u32, u32)>,
    /// Incremented by every price change ([`Solver::search`]), which invalidates the
    /// lookahead positions.
    epoch: u32,
    /// Bucket queue of [`Solver::search`] when distances are small integers: bucket
    /// `d` holds the columns last reached at distance `d`.
    buckets: Vec<Vec<u32>>,
    /// Whether the current search uses `buckets` (else `heap`).
    use_buckets: bool,
    /// Bit `d` set when bucket `d` may be non-empty.
    occupied: Vec<u64>,
    /// [`BUCKET_LIMIT`] (tests lower it to force the heap).
    bucket_limit: i64,
}

/// Per-column state of [`Solver`].
#[derive(Clone, Copy)]
struct Col {
    /// Price `v_j`.
    v: i64,
    /// Tentative distance in the current search ([`INF`] if untouched).
    dist: i64,
    /// Matched row or [`FREE`].
    mate: u32,
    /// Row through which the column was reached.
    pred: u32,
    /// Phase in which the column was last visited by [`Solver::tight_augment`].
    stamp: u32,
}

/// Where a shortest augmenting path ends.
#[derive(Clone, Copy)]
enum Sink {
    /// A free real column.
    Column(u32),
    /// The (always free) dummy column of a row.
    Dummy(u32),
}

impl<'a> Solver<'a> {
    fn new(w: &'a Csr) -> Self {
        let n = w.n_rows();
        Self {
            n,
            row_ptr: w.row_ptr(),
            cols: w.col_indices(),
            vals: w.values(),
            match_row: vec![FREE; n],
            u: vec![0; n],
            col: vec![
                Col {
                    v: 0,
                    dist: INF,
                    mate: FREE,
                    pred: 0,
                    stamp: 0,
                };
                n
            ],
            touched: Vec::new(),
            settled: Vec::new(),
            heap: BinaryHeap::new(),
            work: 0,
            stack: Vec::new(),
            phase: 0,
            layer: vec![(0, 0); n],
            layering: 0,
            frontier: Vec::new(),
            next: Vec::new(),
            unlayered: true,
            use_tight: false,
            tight_epoch: None,
            tight_ptr: Vec::new(),
            tight_cols: Vec::new(),
            look: vec![(0, 0); n],
            epoch: 0,
            buckets: Vec::new(),
            use_buckets: false,
            occupied: vec![0; BUCKET_LIMIT as usize / 64 + 1],
            bucket_limit: BUCKET_LIMIT,
        }
    }

    #[inline]
    fn row(&self, i: usize) -> (&'a [u32], &'a [u64]) {
        let (a, b) = (self.row_ptr[i], self.row_ptr[i + 1]);
        (&self.cols[a..b], &self.vals[a..b])
    }

    /// Prices `u_i = max(0, max_j w_ij)`, `v = 0` (feasible), and a greedy matching on
    /// the tight pairs: each row takes a free column of maximal weight, or its dummy
    /// when it has no positive weight.
    fn warm_start(&mut self) -> Vec<u32> {
        let mut free = Vec::new();
        for i in 0..self.n {
            let (cols, vals) = self.row(i);
            let best = vals.iter().copied().max().unwrap_or(0);
            self.u[i] = best as i64;
            if best == 0 {
                self.match_row[i] = DUMMY;
                continue;
            }
            for (&j, &wij) in cols.iter().zip(vals) {
                if wij == best && self.col[j as usize].mate == FREE {
                    self.col[j as usize].mate = i as u32;
                    self.match_row[i] = j;
                    break;
                }
            }
            if self.match_row[i] == FREE {
                free.push(i as u32);
            }
        }
        free
    }

    /// Augmenting row reduction (JV), i.e. a Gauss–Seidel auction with zero increment:
    /// a free row takes its most profitable option (`w_ij − v_j`, or 0 for its dummy),
    /// raising that column's price to leave it indifferent to the runner-up, and the
    /// displaced owner continues the chain. Keeps every invariant of the shortest-path
    /// phase: matched rows sit on a most profitable option with `u_i` = that profit,
    /// prices only rise and only on matched columns. Ties and a work budget stop chains;
    /// returns the rows still free.
    fn augmenting_row_reduction(&mut self, mut free: Vec<u32>) -> Vec<u32> {
        let count = free.len();
        let budget = 8 * count + 1024;
        let mut steps = 0usize;
        let mut k = 0usize;
        let mut still_free = Vec::new();
        while k < count {
            let i = free[k] as usize;
            k += 1;
            steps += 1;
            // Best and runner-up profit; the dummy (profit 0) wins ties.
            let (mut p1, mut j1, mut p2, mut j2) = (0i64, DUMMY, i64::MIN, DUMMY);
            let (cols, vals) = self.row(i);
            for (&j, &wij) in cols.iter().zip(vals) {
                let p = wij as i64 - self.col[j as usize].v;
                if p > p1 {
                    (p2, j2, p1, j1) = (p1, j1, p, j);
                } else if p > p2 {
                    (p2, j2) = (p, j);
                }
            }
            if j1 == DUMMY {
                self.match_row[i] = DUMMY;
                self.u[i] = 0;
                continue;
            }
            // j1 is a real column with p1 > 0 >= ... and the dummy makes p2 >= 0.
            let owner = self.col[j1 as usize].mate;
            if p1 > p2 && steps < budget {
                self.col[j1 as usize].v += p1 - p2;
                self.u[i] = p2;
                self.match_row[i] = j1;
                self.col[j1 as usize].mate = i as u32;
                if owner != FREE {
                    self.match_row[owner as usize] = FREE;
                    k -= 1;
                    free[k] = owner;
                }
                continue;
            }
            // Tie (or out of budget): prefer an unowned runner-up, no price change.
            self.u[i] = p1;
            let (j, owner) =
                if owner != FREE && p1 == p2 && (j2 == DUMMY || self.col[j2 as usize].mate == FREE)
                {
                    (j2, FREE)
                } else {
                    (j1, owner)
                };
            if j == DUMMY {
                self.match_row[i] = DUMMY;
                self.u[i] = 0;
                continue;
            }
            self.match_row[i] = j;
            self.col[j as usize].mate = i as u32;
            if owner != FREE {
                self.match_row[owner as usize] = FREE;
                still_free.push(owner);
            }
        }
        still_free
    }

    /// Relaxes the edges of row `i`, reached at distance `di`; returns an improved sink.
    #[inline]
    fn relax_row(&mut self, i: usize, di: i64, best: &mut (i64, Sink)) {
        let (cols, vals) = self.row(i);
        self.work += cols.len() as u64 + 1;
        let base = di + self.u[i];
        let own = self.match_row[i];
        for (&j, &wij) in cols.iter().zip(vals) {
            if j == own {
                continue;
            }
            let ju = j as usize;
            let nd = base + self.col[ju].v - wij as i64;
            let dj = self.col[ju].dist;
            // a column at distance >= the best sink's is never settled: not recorded
            if nd < dj && nd < best.0 {
                if dj == INF {
                    self.touched.push(j);
                }
                self.col[ju].dist = nd;
                self.col[ju].pred = i as u32;
                if self.col[ju].mate == FREE {
                    *best = (nd, Sink::Column(j));
                } else if self.use_buckets {
                    // 0 <= nd < best.0 <= the bound the buckets were sized for
                    let d = nd as usize;
                    self.buckets[d].push(j);
                    self.occupied[d / 64] |= 1 << (d % 64);
                } else {
                    self.heap.push(Reverse((nd, j)));
                }
            }
        }
    }

    /// Matches the remaining free rows, choosing adaptively between one Dijkstra search
    /// per row ([`Solver::augment_from`]) and phases that serve all free rows at once
    /// ([`Solver::search`] from all of them + [`Solver::tight_augment`]), whichever recently
    /// spent fewer edge visits per matched row. Both are exact steps from the same
    /// invariants, so any interleaving is. Returns the rows still free when `handover`
    /// stops it early (empty otherwise).
    fn solve_free(
        &mut self,
        mut free: Vec<u32>,
        strategy: Strategy,
        handover: Handover,
    ) -> Vec<u32> {
        // Work (edge visits) per matched row of each mode; an untried mode counts as 0,
        // and the mode not in use is made to look cheaper over time so it is re-tried.
        let (mut est_phase, mut est_row) = (0.0f64, 0.0f64);
        // Edge visits per matched row of the last step.
        let mut recent = 0.0f64;
        // Edge visits per row of the last per-row searches (none yet).
        let mut row_recent = None;
        let min_work = self.work.saturating_add(handover.min_work);
        while !free.is_empty() {
            if self.work >= min_work && free.len() as f64 * recent > handover.remaining as f64 {
                return free;
            }
            if let Some(c) = row_recent {
                if c >= handover.row_cost as f64
                    && free.len() as f64 * c > handover.row_remaining as f64
                {
                    return free;
                }
            }
            let w0 = self.work;
            let use_phase = match strategy {
                Strategy::Adaptive => est_phase <= est_row,
                #[cfg(test)]
                Strategy::Handover | Strategy::RowHandover => est_phase <= est_row,
                #[cfg(test)]
                Strategy::PerRow | Strategy::PerRowHeap => false,
                #[cfg(test)]
                Strategy::LayeredPhases => true,
                Strategy::Phases => true,
                #[cfg(test)]
                Strategy::Auction | Strategy::AuctionNoCache => true,
            };
            if use_phase {
                let before = free.len();
                self.tight_phase(&mut free);
                if free.len() == before {
                    // no tight augmenting path: make the shortest ones tight
                    self.search(&free);
                    self.tight_phase(&mut free);
                }
                let done = before - free.len();
                self.unlayered &= 2 * done >= before;
                est_phase = (self.work - w0) as f64 / done.max(1) as f64;
                est_row *= 0.75;
                recent = est_phase;
            } else {
                let chunk = (free.len() / 16).clamp(32.min(free.len()), free.len());
                for _ in 0..chunk {
                    let r = free.pop().expect("chunk <= free.len()");
                    self.augment_from(r as usize);
                }
                est_row = (self.work - w0) as f64 / chunk as f64;
                row_recent = Some(est_row);
                est_phase *= 0.75;
                recent = est_row;
            }
        }
        free
    }

    /// Dijkstra from the free rows `sources` (all at distance 0) up to the nearest sink
    /// at distance `L`, then the price update that makes every shortest augmenting path
    /// tight: settled columns `v_j += L − d_j`, their rows `u_i −= L − d_j`, sources
    /// `u_s −= L`. Returns the nearest sink; `pred` still describes the paths.
    fn search(&mut self, sources: &[u32]) -> Sink {
        let mut best = (INF, Sink::Dummy(0));
        // Going to its own dummy costs u_s; anything better must beat that.
        for &s in sources {
            if self.u[s as usize] < best.0 {
                best = (self.u[s as usize], Sink::Dummy(s));
            }
        }
        // Every distance pushed is an integer in [0, best.0): small bounds use a bucket
        // queue (Dial), others the binary heap.
        let bound = best.0;
        self.use_buckets = bound <= self.bucket_limit;
        if self.use_buckets && self.buckets.len() < bound as usize {
            self.buckets.resize_with(bound as usize, Vec::new);
        }
        for &s in sources {
            self.relax_row(s as usize, 0, &mut best);
        }
        if self.use_buckets {
            while let Some(d) = self.lowest_bucket() {
                if d as i64 >= best.0 {
                    break;
                }
                let Some(j) = self.buckets[d].pop() else {
                    self.occupied[d / 64] &= !(1 << (d % 64));
                    continue;
                };
                if d as i64 > self.col[j as usize].dist {
                    continue; // stale entry
                }
                self.settle(j, d as i64, &mut best);
            }
            // empty what is left
            while let Some(d) = self.lowest_bucket() {
                self.buckets[d].clear();
                self.occupied[d / 64] &= !(1 << (d % 64));
            }
        } else {
            while let Some(Reverse((d, j))) = self.heap.pop() {
                if d >= best.0 {
                    break;
                }
                if d > self.col[j as usize].dist {
                    continue; // stale entry
                }
                self.settle(j, d, &mut best);
            }
            self.heap.clear();
        }
        self.work += sources.len() as u64;
        let l = best.0;
        for &j in &self.settled {
            let ju = j as usize;
            let delta = l - self.col[ju].dist;
            self.col[ju].v += delta;
            self.u[self.col[ju].mate as usize] -= delta;
        }
        for &s in sources {
            self.u[s as usize] -= l;
        }
        self.epoch = self.epoch.wrapping_add(1);
        self.settled.clear();
        for &j in &self.touched {
            self.col[j as usize].dist = INF;
        }
        self.touched.clear();
        best.1
    }

    /// Breadth-first layers of the tight alternating graph from the free rows
    /// `sources` (layer 0): a matched row is one layer below the row from which a
    /// tight pair reaches its column. Stops after the first layer that holds an end of
    /// an augmenting path (a free column, or a row with `u = 0`, whose dummy is tight);
    /// returns whether there is one. [`Solver::tight_augment`] then follows the layers,
    /// so one phase augments along many short vertex-disjoint paths (Hopcroft–Karp).
    fn layers(&mut self, sources: &[u32]) -> bool {
        self.layering += 1;
        let id = self.layering;
        let mut frontier = std::mem::take(&mut self.frontier);
        let mut next = std::mem::take(&mut self.next);
        frontier.clear();
        let mut found = false;
        for &s in sources {
            self.layer[s as usize] = (id, 0);
            found |= self.u[s as usize] == 0;
            frontier.push(s);
        }
        let mut depth = 0u32;
        while !found && !frontier.is_empty() {
            next.clear();
            for &i in &frontier {
                let iu = i as usize;
                let (start, stop) = self.adjacency(iu);
                self.work += (stop - start) as u64 + 1;
                let (ui, own) = (self.u[iu], self.match_row[iu]);
                for e in start..stop {
                    let j = self.adj_col(e);
                    let c = self.col[j as usize];
                    if j == own || !self.is_tight(ui, c.v, e) {
                        continue;
                    }
                    if c.mate == FREE {
                        found = true;
                    } else if self.layer[c.mate as usize].0 != id {
                        self.layer[c.mate as usize] = (id, depth + 1);
                        found |= self.u[c.mate as usize] == 0;
                        next.push(c.mate);
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
            depth += 1;
        }
        self.frontier = frontier;
        self.next = next;
        found
    }

    /// Collects the tight pairs of every row at the current prices (see `use_tight`).
    fn build_tight(&mut self) {
        self.tight_ptr.clear();
        self.tight_cols.clear();
        self.tight_ptr.push(0);
        for i in 0..self.n {
            let (cols, vals) = self.row(i);
            let ui = self.u[i];
            for (&j, &wij) in cols.iter().zip(vals) {
                if ui + self.col[j as usize].v == wij as i64 {
                    self.tight_cols.push(j);
                }
            }
            self.tight_ptr.push(self.tight_cols.len());
        }
        self.work += self.cols.len() as u64 + self.n as u64;
        self.tight_epoch = Some(self.epoch);
    }

    /// The positions of row `i`'s entries in the adjacency the phases walk: the tight
    /// pairs when they are collected for the current prices, else all stored entries.
    #[inline]
    fn adjacency(&self, i: usize) -> (usize, usize) {
        if self.tight_epoch == Some(self.epoch) {
            (self.tight_ptr[i], self.tight_ptr[i + 1])
        } else {
            (self.row_ptr[i], self.row_ptr[i + 1])
        }
    }

    /// The column at position `e` of the adjacency of [`Solver::adjacency`].
    #[inline]
    fn adj_col(&self, e: usize) -> u32 {
        if self.tight_epoch == Some(self.epoch) {
            self.tight_cols[e]
        } else {
            self.cols[e]
        }
    }

    /// Whether the pair at position `e` of that adjacency, from a row of price `ui` to a
    /// column of price `v`, is tight (always, in the collected tight pairs).
    #[inline]
    fn is_tight(&self, ui: i64, v: i64, e: usize) -> bool {
        self.tight_epoch == Some(self.epoch) || ui + v == self.vals[e] as i64
    }

    /// The lowest non-empty bucket of the bucket queue (the bitmap may flag a bucket
    /// that has just become empty; the caller clears its bit).
    #[inline]
    fn lowest_bucket(&self) -> Option<usize> {
        let k = self.occupied.iter().position(|&x| x != 0)?;
        Some(k * 64 + self.occupied[k].trailing_zeros() as usize)
    }

    /// Settles column `j` at distance `d` in [`Solver::search`]: its mate is reached at
    /// `d` (the matched pair is tight), and the mate's dummy is free.
    #[inline]
    fn settle(&mut self, j: u32, d: i64, best: &mut (i64, Sink)) {
        self.settled.push(j);
        let i = self.col[j as usize].mate as usize;
        let via_dummy = d + self.u[i];
        if via_dummy < best.0 {
            *best = (via_dummy, Sink::Dummy(i as u32));
        }
        self.relax_row(i, d, best);
    }

    /// One phase: a depth-first search for an augmenting path of tight pairs from every
    /// row of `free`, the columns visited by one search closed to the later ones of the
    /// phase (so the phase visits each stored entry at most once, plus the lookahead);
    /// removes the rows it matched from `free`. When it matches none, no tight
    /// augmenting path exists from any free row: unlayered, every closed column was
    /// closed by a failed search under the same matching; layered (once `unlayered` is
    /// off), the breadth-first layers found no end, or the search along them finds at
    /// least the path they found.
    fn tight_phase(&mut self, free: &mut Vec<u32>) {
        if self.use_tight && self.tight_epoch != Some(self.epoch) {
            self.build_tight();
        }
        let layered = !self.unlayered;
        if layered && !self.layers(free) {
            return;
        }
        self.phase += 1;
        let phase = self.phase;
        free.retain(|&r| !self.tight_augment(r as usize, phase, layered));
    }

    /// Depth-first search for an augmenting path of tight pairs from the free row `s`
    /// (columns are visited once per `phase`); flips it and returns true if found. When
    /// `layered`, each step descends one layer of the last [`Solver::layers`]; else a
    /// row first looks ahead for a tight pair to a free column (Pothen–Fan), resuming
    /// where its previous lookahead under the same prices stopped: columns never become
    /// free again, so what it skipped stays useless until the prices change.
    fn tight_augment(&mut self, s: usize, phase: u32, layered: bool) -> bool {
        if self.u[s] == 0 {
            self.match_row[s] = DUMMY;
            return true;
        }
        self.stack.clear();
        self.stack.push((s as u32, self.adjacency(s).0));
        // The column that ends the path, or DUMMY when the top row takes its dummy.
        let end = 'dfs: loop {
            let Some(&(i, mut pos)) = self.stack.last() else {
                return false;
            };
            let iu = i as usize;
            let (start, stop) = self.adjacency(iu);
            let ui = self.u[iu];
            let own = self.match_row[iu];
            let (epoch, off) = self.look[iu];
            let mut k = if layered {
                stop
            } else if epoch == self.epoch {
                start + off as usize
            } else {
                start
            };
            while k < stop {
                let j = self.adj_col(k);
                let c = &self.col[j as usize];
                k += 1;
                if c.mate == FREE && self.is_tight(ui, c.v, k - 1) {
                    self.look[iu] = (self.epoch, (k - start) as u32);
                    break 'dfs j;
                }
            }
            if !layered {
                self.work += (k - start - off as usize * usize::from(epoch == self.epoch)) as u64;
                self.look[iu] = (self.epoch, (stop - start) as u32);
            }
            let below = (self.layering, self.layer[iu].1 + 1);
            let mut next_row = None;
            while pos < stop {
                let e = pos;
                pos += 1;
                self.work += 1;
                let j = self.adj_col(e);
                let ju = j as usize;
                if j == own || self.col[ju].stamp == phase {
                    continue;
                }
                if !self.is_tight(ui, self.col[ju].v, e) {
                    continue;
                }
                let r = self.col[ju].mate;
                if layered && r != FREE && self.layer[r as usize] != below {
                    continue;
                }
                self.col[ju].stamp = phase;
                if r == FREE {
                    break 'dfs j;
                }
                next_row = Some(r);
                break;
            }
            if let Some(top) = self.stack.last_mut() {
                top.1 = pos;
            }
            match next_row {
                Some(r) => {
                    let ru = r as usize;
                    self.stack.push((r, self.adjacency(ru).0));
                    if self.u[ru] == 0 {
                        break 'dfs DUMMY;
                    }
                }
                None => {
                    self.stack.pop();
                }
            }
        };
        // Flip: each row on the stack takes the column the next one leaves.
        let mut col = end;
        while let Some((i, _)) = self.stack.pop() {
            let iu = i as usize;
            let prev = self.match_row[iu];
            self.match_row[iu] = col;
            if col != DUMMY {
                self.col[col as usize].mate = i;
            }
            col = prev;
        }
        true
    }

    /// One Dijkstra search from the free row `s`, then the price update and the flip of
    /// the path. Afterwards `s` is matched (to a column or its dummy).
    fn augment_from(&mut self, s: usize) {
        let sink = self.search(&[s as u32]);
        // Flip the alternating path ending at the sink.
        let mut j = match sink {
            Sink::Column(j) => j,
            Sink::Dummy(k) => {
                let k = k as usize;
                let prev = self.match_row[k];
                self.match_row[k] = DUMMY;
                if k == s {
                    FREE
                } else {
                    prev
                }
            }
        };
        while j != FREE {
            let ju = j as usize;
            let i = self.col[ju].pred as usize;
            let prev = self.match_row[i];
            self.match_row[i] = j;
            self.col[ju].mate = i as u32;
            j = if i == s { FREE } else { prev };
        }
    }

    /// The current prices and real matches as the auction's starting point.
    fn start(&self) -> Start {
        Start {
            price: self.col.iter().map(|c| c.v).collect(),
            assigned: self.match_row.clone(),
        }
    }

    /// Completes the matching with the rows on dummies and the unused columns.
    fn into_perm(self) -> Perm {
        let mut unused = (0..self.n).filter(|&j| self.col[j].mate == FREE);
        let fwd: Vec<usize> = self
            .match_row
            .iter()
            .map(|&j| {
                if j == DUMMY || j == FREE {
                    unused
                        .next()
                        .expect("as many unused columns as rows on dummies")
                } else {
                    j as usize
                }
            })
            .collect();
        Perm::from_forward(fwd).expect("a matching completed by unused columns is a bijection")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lap::assignment_value;
    use crate::lap::brute_force_max;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    fn random_sparse(n: usize, density_pct: u64, range: u64, seed: &mut u64) -> Csr {
        let mut t = Vec::new();
        for i in 0..n {
            for j in 0..n {
                if lcg(seed) % 100 < density_pct {
                    t.push((i, j, lcg(seed) % range));
                }
            }
        }
        Csr::from_triplets(n, n, t)
    }

    #[test]
    fn matches_brute_force_small() {
        let mut seed = 11u64;
        for n in 0..=7 {
            for density in [10u64, 30, 60, 100] {
                for range in [2u64, 5, 100] {
                    for _ in 0..10 {
                        let w = random_sparse(n, density, range, &mut seed);
                        let d: Vec<f64> = w.to_dense().iter().map(|&x| x as f64).collect();
                        let best = brute_force_max(n, &d).unwrap().1;
                        for strategy in STRATEGIES {
                            let p = solve(&w, strategy).unwrap();
                            assert_eq!(
                                assignment_value(&w, &p) as f64,
                                best,
                                "{strategy:?} {:?}",
                                w.to_dense()
                            );
                        }
                    }
                }
            }
        }
    }

    const STRATEGIES: [Strategy; 9] = [
        Strategy::Adaptive,
        Strategy::PerRow,
        Strategy::Phases,
        Strategy::Auction,
        Strategy::AuctionNoCache,
        Strategy::Handover,
        Strategy::RowHandover,
        Strategy::PerRowHeap,
        Strategy::LayeredPhases,
    ];

    /// `per_row` random columns per row (weights in `[0, range)`), every `empty`-th row
    /// left without entries.
    fn random_rows(n: usize, per_row: usize, range: u64, empty: usize, seed: &mut u64) -> Csr {
        let mut t = Vec::new();
        for i in (0..n).filter(|i| i % empty != 0) {
            for _ in 0..per_row {
                t.push((i, lcg(seed) as usize % n, lcg(seed) % range));
            }
        }
        Csr::from_triplets(n, n, t)
    }

    #[test]
    fn auction_matches_shortest_paths_on_random_rows() {
        let mut seed = 23u64;
        for n in [1usize, 2, 3, 100, 1000, 3000] {
            for (per_row, range, empty) in
                [(16, 1000, usize::MAX), (16, 4, 5), (2, 50, 3), (1, 2, 2)]
            {
                let w = random_rows(n, per_row, range, empty, &mut seed);
                let want = assignment_value(&w, &solve(&w, Strategy::PerRow).unwrap());
                let Outcome::Optimal(sigma) = auction_max(&w, u64::MAX, None) else {
                    panic!("auction gave up on n={n}");
                };
                let p = perm_of(sigma).unwrap();
                assert_eq!(
                    assignment_value(&w, &p),
                    want,
                    "n={n} {per_row}/row [0,{range})"
                );
                for st in [
                    Strategy::Handover,
                    Strategy::RowHandover,
                    Strategy::AuctionNoCache,
                    Strategy::Adaptive,
                ] {
                    let p = solve(&w, st).unwrap();
                    assert_eq!(assignment_value(&w, &p), want, "{st:?} n={n}");
                }
            }
        }
    }

    #[test]
    fn auction_gives_up_beyond_exact_scaling() {
        // 2^40 · (n + 1) > 2^42: the auction cannot scale exactly and says so
        let w = Csr::from_triplets(8, 8, vec![(0, 1, 1 << 40), (1, 1, 3)]);
        assert!(matches!(auction_max(&w, u64::MAX, None), Outcome::GaveUp));
        // a tiny budget stops it as well
        let mut seed = 3u64;
        let w = random_rows(500, 16, 1000, usize::MAX, &mut seed);
        assert!(matches!(auction_max(&w, 100, None), Outcome::GaveUp));
        // and the shortest paths finish exactly either way
        for st in STRATEGIES {
            assert_eq!(
                assignment_value(&w, &solve(&w, st).unwrap()),
                assignment_value(&w, &solve(&w, Strategy::PerRow).unwrap())
            );
        }
    }

    #[test]
    fn strategies_agree_on_larger_instances() {
        let mut seed = 5u64;
        for n in [50usize, 200, 400] {
            for (density, range) in [(2u64, 1000u64), (5, 3), (20, 50), (60, 2)] {
                let w = random_sparse(n, density, range, &mut seed);
                let values: Vec<u64> = STRATEGIES
                    .iter()
                    .map(|&st| assignment_value(&w, &solve(&w, st).unwrap()))
                    .collect();
                assert!(values.iter().all(|&x| x == values[0]), "n={n} {values:?}");
            }
        }
    }

    #[test]
    fn bucket_queue_and_heap_agree_around_the_limit() {
        // weights around BUCKET_LIMIT: searches whose bound (the smallest free row
        // price) is below it use the buckets, the others the heap, within one solve
        let mut seed = 29u64;
        let around = |seed: &mut u64, t: Vec<(usize, usize, u64)>| -> Vec<(usize, usize, u64)> {
            t.into_iter()
                .map(|(i, j, x)| (i, j, BUCKET_LIMIT as u64 - 200 + x % 400 + lcg(seed) % 2))
                .collect()
        };
        for n in 1..=7 {
            for _ in 0..30 {
                let w = random_sparse(n, 40, 400, &mut seed);
                let t = around(&mut seed, w.iter().collect());
                let w = Csr::from_triplets(n, n, t);
                let d: Vec<f64> = w.to_dense().iter().map(|&x| x as f64).collect();
                let best = brute_force_max(n, &d).unwrap().1;
                for st in STRATEGIES {
                    let p = solve(&w, st).unwrap();
                    assert_eq!(assignment_value(&w, &p) as f64, best, "{st:?}");
                }
            }
        }
        for n in [60usize, 300, 1500] {
            for per_row in [2usize, 16] {
                let w = random_rows(n, per_row, 400, 7, &mut seed);
                let t = around(&mut seed, w.iter().collect());
                let w = Csr::from_triplets(n, n, t);
                let want = assignment_value(&w, &solve(&w, Strategy::PerRowHeap).unwrap());
                for st in STRATEGIES {
                    let p = solve(&w, st).unwrap();
                    assert_eq!(assignment_value(&w, &p), want, "{st:?} n={n}");
                }
            }
        }
    }

    #[test]
    fn empty_and_zero_rows() {
        assert!(sparse_max(&Csr::zeros(0, 0)).unwrap().is_empty());
        assert!(sparse_max(&Csr::zeros(4, 4)).unwrap().is_identity());
        let w = Csr::from_triplets(3, 3, vec![(2, 0, 9)]);
        let p = sparse_max(&w).unwrap();
        assert_eq!(p.apply(2), 0);
    }

    #[test]
    fn few_used_indices_are_solved_alone_and_exactly() {
        let mut seed = 17u64;
        for n in [64usize, 100, 1000] {
            for _ in 0..20 {
                // entries among 12 random indices of 0..n
                let idx: Vec<usize> = (0..12).map(|_| lcg(&mut seed) as usize % n).collect();
                let t = (0..30)
                    .map(|_| {
                        let (a, b) = (lcg(&mut seed) as usize % 12, lcg(&mut seed) as usize % 12);
                        (idx[a], idx[b], lcg(&mut seed) % 50)
                    })
                    .collect();
                let w = Csr::from_triplets(n, n, t);
                assert!(compact(&w).is_some());
                let p = sparse_max(&w).unwrap();
                let full = solve(&w, Strategy::PerRow).unwrap();
                assert_eq!(assignment_value(&w, &p), assignment_value(&w, &full));
                for i in (0..n).filter(|i| !idx.contains(i)) {
                    assert_eq!(p.apply(i), i, "unused index {i} moved");
                }
            }
        }
        // the solver's work follows the used ranks: 2^24 ranks, two of them used
        let n = 1 << 24;
        let w = Csr::from_triplets(n, n, vec![(n - 1, 0, 7)]);
        let p = sparse_max(&w).unwrap();
        assert_eq!((p.apply(0), p.apply(n - 1), p.apply(5)), (n - 1, 0, 5));
        // errors name the original indices
        let w = Csr::from_triplets(n, n, vec![(n - 1, 3, MAX_WEIGHT + 1)]);
        let e = sparse_max(&w).unwrap_err().to_string();
        assert!(e.contains(&format!("W[{}][3]", n - 1)), "{e}");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(sparse_max(&Csr::zeros(2, 3)).is_err());
        let w = Csr::from_triplets(2, 2, vec![(1, 0, MAX_WEIGHT + 1)]);
        let e = sparse_max(&w).unwrap_err().to_string();
        assert!(e.contains("W[1][0]"), "{e}");
        let w = Csr::from_triplets(2, 2, vec![(1, 0, MAX_WEIGHT)]);
        assert_eq!(assignment_value(&w, &sparse_max(&w).unwrap()), MAX_WEIGHT);
    }

    /// Degenerate instances for the auction's cached candidates (a row with one entry,
    /// full rows without implicit zeros, all-equal weights, ties, empty rows) and for
    /// the hand-overs, against the brute force.
    #[test]
    fn degenerate_instances_match_brute_force() {
        let mut seed = 31u64;
        let mut cases: Vec<Csr> = Vec::new();
        for n in 1..=7usize {
            // every row a single entry (some columns shared), weight 5
            cases.push(Csr::from_triplets(
                n,
                n,
                (0..n).map(|i| (i, (i * 3) % n.div_ceil(2), 5)).collect(),
            ));
            // full rows, all weights equal: no implicit zeros, every assignment ties
            cases.push(Csr::from_dense(n, n, &vec![7; n * n]));
            // full rows, two weights
            let d: Vec<u64> = (0..n * n).map(|_| 1 + lcg(&mut seed) % 2).collect();
            cases.push(Csr::from_dense(n, n, &d));
            // one row holds everything, the others are empty
            cases.push(Csr::from_triplets(
                n,
                n,
                (0..n).map(|j| (n - 1, j, 3 + j as u64 % 2)).collect(),
            ));
            // two entries per row with equal weights (ties between rows and columns)
            cases.push(Csr::from_triplets(
                n,
                n,
                (0..n)
                    .flat_map(|i| [(i, i % 2, 4), (i, (i + 1) % n, 4)])
                    .collect(),
            ));
        }
        for w in &cases {
            let n = w.n_rows();
            let d: Vec<f64> = w.to_dense().iter().map(|&x| x as f64).collect();
            let best = brute_force_max(n, &d).unwrap().1;
            for st in STRATEGIES {
                let p = solve(w, st).unwrap();
                assert_eq!(
                    assignment_value(w, &p) as f64,
                    best,
                    "{st:?} {:?}",
                    w.to_dense()
                );
            }
        }
    }

    /// Random rows whose searches grow long (16 per row, wide weights): the per-row
    /// hand-over rule, forced and adaptive, against one search per row, with and without
    /// the auction's cached candidates; also with many equal weights and a row of one
    /// entry.
    #[test]
    fn row_handover_matches_shortest_paths() {
        let mut seed = 37u64;
        for n in [200usize, 2000, 6000] {
            for (per_row, range) in [(16usize, 1000u64), (16, 70), (8, 1_000_000)] {
                let mut w = random_rows(n, per_row, range, 11, &mut seed);
                if n == 200 {
                    // row 0: one entry
                    let mut t: Vec<_> = w.iter().filter(|e| e.0 != 0).collect();
                    t.push((0, 5, 999));
                    w = Csr::from_triplets(n, n, t);
                }
                let want = assignment_value(&w, &solve(&w, Strategy::PerRow).unwrap());
                for st in [
                    Strategy::Adaptive,
                    Strategy::RowHandover,
                    Strategy::Auction,
                    Strategy::AuctionNoCache,
                ] {
                    let p = solve(&w, st).unwrap();
                    assert_eq!(
                        assignment_value(&w, &p),
                        want,
                        "{st:?} n={n} {per_row}/row [0,{range})"
                    );
                }
            }
        }
    }
}
