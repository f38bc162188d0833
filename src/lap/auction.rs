//! ε-scaling auction for the sparse maximum-weight assignment (Bertsekas), exact on
//! integer weights.
//!
//! The problem is the square `n × n` matrix whose entries outside the stored pattern
//! are 0, so every row can take every column and a perfect assignment always exists;
//! no dummy columns are needed. Weights are multiplied by `n + 1`; an assignment in
//! which every row is within `ε = 1` (scaled) of its most profitable column
//! (ε-complementary slackness) is within `n` scaled units, i.e. `n / (n + 1) < 1`
//! original unit, of the optimum, hence optimal because original values are integers.
//!
//! Phases run with `ε = C/α, C/α², …, 1` (`C` the largest scaled weight; from a warm
//! start the first ε is at most `WARM_EPS` original units). Prices are
//! kept from phase to phase; an assigned row stays assigned as long as it still
//! satisfies ε-complementary slackness for the new ε. Within a phase, an unassigned row
//! bids for its most profitable column `j₁` (profit `b₁`), raising `p_{j₁}` by
//! `b₁ − b₂ + ε` (`b₂` the runner-up profit) and displacing the previous owner (a
//! Gauss–Seidel auction). The first phase may start from given prices and a partial
//! assignment (the shortest-path stage's); the rows of it that satisfy ε-complementary
//! slackness are kept, the others bid.
//!
//! The implicit zero entries of row `i` are the columns outside its pattern; the best of
//! them is the cheapest such column. A lazily updated min-heap of prices finds it; since
//! `−min_j p_j` bounds every implicit profit, the heap is only searched when that bound
//! beats the row's runner-up.
//!
//! Each scan of a row also keeps its two best columns and the third-best profit (or the
//! implicit-zero bound `−min_j p_j`, if higher). Prices only rise, so that profit stays an
//! upper bound on every other column of the row; the row's next bid reads only its two
//! cached columns' prices when the better one still reaches the bound, and bids with the
//! bound as runner-up when it is higher than the other cached column: the price then
//! rises less than with the true runner-up, and the row still ends within `ε` of its
//! best. The ε-complementary-slackness checks between phases use the same bound.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::csr::Csr;

const NONE: u32 = u32::MAX;

/// Largest scaled weight `max w · (n + 1)` the auction takes on; beyond it the caller's
/// shortest-path solver runs instead.
const MAX_SCALED: u128 = 1 << 42;

/// A safeguard: a price above this aborts the auction (the caller then finishes with
/// shortest paths), which keeps every price update far from `i64` overflow.
const PRICE_LIMIT: i64 = 1 << 61;

/// Ratio between the ε of consecutive phases.
const ALPHA: i64 = 16;

/// First ε, in original weight units, of an auction started from the shortest-path
/// stage's prices (if below `C/α`): those prices are exact duals of every row matched so
/// far, so only the rows still free need to move them, rarely by more than a few units.
/// Random rows with 16 entries in `[1, 1000)`: about 20 % fewer edge visits than
/// starting from `C/α` (numbers in `benches/RESULTS.md`).
const WARM_EPS: i64 = 16;

/// Result of [`auction_max`].
pub(super) enum Outcome {
    /// `σ(i)` for every row: an optimal assignment.
    Optimal(Vec<u32>),
    /// The weights are too large for exact scaling in `i64`, or the work budget ran out;
    /// nothing is known.
    GaveUp,
}

/// Exact maximum-weight assignment of the square matrix `w` (zeros outside the
/// pattern) by ε-scaling auction, giving up after `budget` edge visits.
pub(super) fn auction_max(w: &Csr, budget: u64, start: Option<Start>) -> Outcome {
    auction_max_with(w, budget, start, true)
}

/// [`auction_max`], with `use_cache` false: every bid scans its row (no cached
/// candidates), the reference the tests compare against.
pub(super) fn auction_max_with(
    w: &Csr,
    budget: u64,
    start: Option<Start>,
    use_cache: bool,
) -> Outcome {
    let n = w.n_rows();
    if w.n_cols() != n || n >= NONE as usize {
        return Outcome::GaveUp;
    }
    if n == 0 {
        return Outcome::Optimal(Vec::new());
    }
    let max_w = w.values().iter().copied().max().unwrap_or(0);
    let scale = n as u128 + 1;
    if max_w as u128 * scale > MAX_SCALED {
        return Outcome::GaveUp;
    }
    let mut a = Auction {
        n,
        row_ptr: w.row_ptr(),
        cols: w.col_indices(),
        vals: w.values(),
        // n + 1 < 2^32
        scale: scale as i64,
        col: vec![
            Col {
                price: 0,
                owner: NONE,
            };
            n
        ],
        assigned: vec![NONE; n],
        heap: BinaryHeap::new(),
        popped: Vec::new(),
        cache: vec![
            Cached {
                c1: NONE,
                c2: NONE,
                w1: 0,
                w2: 0,
                bound: i64::MIN,
            };
            n
        ],
        use_cache,
        work: 0,
        budget,
    };
    let c = (max_w as u128 * scale) as i64;
    let mut eps = (c / ALPHA).max(1);
    if start.is_some() {
        // scale = n + 1 < 2^32, so no overflow
        eps = eps.min(WARM_EPS * scale as i64);
    }
    let mut queue: Vec<u32> = Vec::new();
    match start {
        Some(st) if st.price.len() == n && st.assigned.len() == n => {
            for (j, &v) in st.price.iter().enumerate() {
                match v.checked_mul(scale as i64) {
                    Some(p) if (0..=PRICE_LIMIT).contains(&p) => a.col[j].price = p,
                    _ => return Outcome::GaveUp,
                }
            }
            for (i, &j) in st.assigned.iter().enumerate() {
                if (j as usize) < n && a.col[j as usize].owner == NONE {
                    a.assigned[i] = j;
                    a.col[j as usize].owner = i as u32;
                }
            }
            for i in (0..n).rev() {
                if !a.satisfies_cs(i, eps) {
                    if a.assigned[i] != NONE {
                        a.col[a.assigned[i] as usize].owner = NONE;
                        a.assigned[i] = NONE;
                    }
                    queue.push(i as u32);
                }
            }
        }
        _ => queue.extend((0..n as u32).rev()),
    }
    a.heap = (0..n as u32)
        .map(|j| Reverse((a.col[j as usize].price, j)))
        .collect();
    loop {
        while let Some(i) = queue.pop() {
            match a.bid(i as usize, eps) {
                Some(Some(prev)) => queue.push(prev),
                Some(None) => {}
                None => return Outcome::GaveUp,
            }
        }
        if eps == 1 {
            break;
        }
        eps = (eps / ALPHA).max(1);
        for i in 0..n {
            if !a.satisfies_cs(i, eps) {
                let j = a.assigned[i] as usize;
                a.assigned[i] = NONE;
                a.col[j].owner = NONE;
                queue.push(i as u32);
            }
        }
        queue.reverse();
    }
    Outcome::Optimal(a.assigned)
}

/// A starting point for [`auction_max`]: unscaled column prices, a row → column
/// assignment ([`NONE`]-free entries are kept where they satisfy ε-complementary
/// slackness for the first phase's ε).
pub(super) struct Start {
    pub price: Vec<i64>,
    pub assigned: Vec<u32>,
}

/// Per-column state of the auction.
#[derive(Clone, Copy)]
struct Col {
    price: i64,
    /// Row or [`NONE`].
    owner: u32,
}

struct Auction<'a> {
    n: usize,
    row_ptr: &'a [usize],
    cols: &'a [u32],
    /// Weights, parallel to `cols`; the auction works on them times `scale`.
    vals: &'a [u64],
    /// `n + 1`; every scaled weight `vals[k] · scale` is at most `2^42`.
    scale: i64,
    /// Per column: its price and owner, together because a bid reads the price and
    /// rewrites both.
    col: Vec<Col>,
    /// Row → column or [`NONE`].
    assigned: Vec<u32>,
    /// One entry per column, its price at some earlier time: prices only rise, so an
    /// entry is a lower bound, and the top is the true minimum once it is current.
    heap: BinaryHeap<Reverse<(i64, u32)>>,
    popped: Vec<Reverse<(i64, u32)>>,
    /// Per row: its candidates from its last scan (see [`Auction::cached_best_two`]).
    cache: Vec<Cached>,
    /// Whether bids try the cached candidates before scanning (tests turn it off).
    use_cache: bool,
    work: u64,
    budget: u64,
}

/// A row's two best columns at its last scan, their (scaled) weights, and an upper
/// bound on the profit of every other column then, hence ever after (prices only
/// rise). `c1 == NONE`: nothing cached.
#[derive(Clone, Copy)]
struct Cached {
    c1: u32,
    c2: u32,
    w1: i64,
    w2: i64,
    bound: i64,
}

impl Auction<'_> {
    #[inline]
    fn range(&self, i: usize) -> (usize, usize) {
        (self.row_ptr[i], self.row_ptr[i + 1])
    }

    /// The lowest current price (refreshes stale heap entries on the way).
    fn min_price(&mut self) -> i64 {
        while let Some(&Reverse((p, j))) = self.heap.peek() {
            let now = self.col[j as usize].price;
            if p == now {
                return p;
            }
            self.heap.pop();
            self.heap.push(Reverse((now, j)));
            self.work += 1;
        }
        // every column has a current entry
        unreachable_min()
    }

    /// The two cheapest columns outside row `i`'s pattern, as `(profit, column)` with
    /// profit `−price`; `None` where there are fewer.
    fn cheapest_outside(&mut self, i: usize) -> [Option<(i64, u32)>; 2] {
        let (s, e) = self.range(i);
        let pattern = &self.cols[s..e];
        let mut found = [None, None];
        let mut k = 0;
        while k < 2 {
            let Some(Reverse((p, j))) = self.heap.pop() else {
                break;
            };
            self.work += 1;
            let now = self.col[j as usize].price;
            if p != now {
                self.heap.push(Reverse((now, j))); // stale: refresh
                continue;
            }
            self.popped.push(Reverse((p, j)));
            if pattern.binary_search(&j).is_err() {
                found[k] = Some((-p, j));
                k += 1;
            }
        }
        self.heap.extend(self.popped.drain(..));
        found
    }

    /// Best profit, its column and a runner-up profit of row `i` over all `n` columns
    /// (`i64::MIN` for a missing runner-up). The runner-up may be an upper bound of the
    /// true one (from the row's cached candidates): a bid with it raises the price less
    /// but still leaves the row within `ε` of its best.
    fn best_two(&mut self, i: usize) -> (i64, u32, i64) {
        if self.use_cache {
            if let Some(hit) = self.cached_best_two(i) {
                return hit;
            }
        }
        self.scan_best(i)
    }

    /// The answer of [`Auction::best_two`] from row `i`'s cached candidates, if they
    /// still decide it: every other column's profit is at most the cached bound (prices
    /// only rise), so when the better candidate reaches the bound it is a best column,
    /// and the other candidate or the bound bounds the runner-up.
    #[inline]
    fn cached_best_two(&mut self, i: usize) -> Option<(i64, u32, i64)> {
        let c = self.cache[i];
        if c.c1 == NONE {
            return None;
        }
        let (p1, p2) = self.cached_profits(&c);
        let (b1, j1, b2) = if p1 >= p2 {
            (p1, c.c1, p2)
        } else {
            (p2, c.c2, p1)
        };
        (b1 >= c.bound).then_some((b1, j1, b2.max(c.bound)))
    }

    /// The current profits of a row's two cached columns (`i64::MIN` for a missing
    /// second).
    #[inline]
    fn cached_profits(&mut self, c: &Cached) -> (i64, i64) {
        self.work += 2;
        let p1 = c.w1 - self.col[c.c1 as usize].price;
        let p2 = if c.c2 == NONE {
            i64::MIN
        } else {
            c.w2 - self.col[c.c2 as usize].price
        };
        (p1, p2)
    }

    /// [`Auction::best_two`] by a scan of row `i` (and of the cheapest columns outside
    /// its pattern when they can matter); refreshes the row's cached candidates: the
    /// best two columns and a bound on every other column's profit.
    fn scan_best(&mut self, i: usize) -> (i64, u32, i64) {
        let (s, e) = self.range(i);
        self.work += (e - s) as u64 + 1;
        // the best three (profit, column, weight)
        let mut top = [(i64::MIN, NONE, 0i64); 3];
        let insert = |top: &mut [(i64, u32, i64); 3], x: (i64, u32, i64)| {
            if x.0 > top[0].0 {
                *top = [x, top[0], top[1]];
            } else if x.0 > top[1].0 {
                *top = [top[0], x, top[1]];
            } else if x.0 > top[2].0 {
                top[2] = x;
            }
        };
        for k in s..e {
            let j = self.cols[k];
            let wk = self.vals[k] as i64 * self.scale;
            let v = wk - self.col[j as usize].price;
            insert(&mut top, (v, j, wk));
        }
        // Implicit zeros: every profit there is at most −min price.
        let mut outside = i64::MIN;
        if e - s < self.n {
            outside = -self.min_price();
            if outside > top[1].0 {
                for (v, j) in self.cheapest_outside(i).into_iter().flatten() {
                    insert(&mut top, (v, j, 0));
                }
            }
        }
        self.cache[i] = Cached {
            c1: top[0].1,
            c2: top[1].1,
            w1: top[0].2,
            w2: top[1].2,
            bound: top[2].0.max(outside),
        };
        (top[0].0, top[0].1, top[1].0)
    }

    /// Row `i` (unassigned) bids with increment `ε`. Returns the displaced owner (if
    /// any), or `None` when the budget or the price limit stops the auction.
    fn bid(&mut self, i: usize, eps: i64) -> Option<Option<u32>> {
        let (b1, j1, b2) = self.best_two(i);
        if self.work > self.budget || j1 == NONE {
            return None;
        }
        let inc = if b2 == i64::MIN { eps } else { b1 - b2 + eps };
        let ju = j1 as usize;
        let p = self.col[ju].price.checked_add(inc)?;
        if p > PRICE_LIMIT {
            return None;
        }
        self.col[ju].price = p;
        let prev = self.col[ju].owner;
        self.col[ju].owner = i as u32;
        self.assigned[i] = j1;
        if prev != NONE {
            self.assigned[prev as usize] = NONE;
            return Some(Some(prev));
        }
        Some(None)
    }

    /// Whether row `i` is assigned and within `ε` of its best profit (conservative: the
    /// implicit zeros are bounded by `−min price`, so a row may be released needlessly,
    /// never kept wrongly).
    fn satisfies_cs(&mut self, i: usize, eps: i64) -> bool {
        let j = self.assigned[i];
        if j == NONE {
            return false;
        }
        if self.use_cache {
            // the cached candidates and bound bound every profit from above
            let c = self.cache[i];
            if c.c1 == j || (c.c2 == j && c.c2 != NONE) {
                let (p1, p2) = self.cached_profits(&c);
                let own = if c.c1 == j { p1 } else { p2 };
                if own >= p1.max(p2).max(c.bound).saturating_sub(eps) {
                    return true;
                }
            }
        }
        let (s, e) = self.range(i);
        self.work += (e - s) as u64 + 1;
        let mut best = i64::MIN;
        let mut own = None;
        for k in s..e {
            let c = self.cols[k];
            let v = self.vals[k] as i64 * self.scale - self.col[c as usize].price;
            best = best.max(v);
            if c == j {
                own = Some(v);
            }
        }
        let own = own.unwrap_or(-self.col[j as usize].price);
        if e - s < self.n {
            best = best.max(-self.min_price());
        }
        own >= best - eps
    }
}

/// `min_price` on an empty heap: impossible, since every column keeps a current entry;
/// answer a price no real one reaches so that callers stay total.
#[cold]
fn unreachable_min() -> i64 {
    i64::MAX
}
