//! Column generation for the candidate problem: the restricted assignment on the pairs
//! priced exactly, its duals, and pricing by the model's bound.
//!
//! Costs, not gains: `C(x, y)` is known exactly on the pairs `E_x` of each row (the
//! candidates that can gain, `x` itself, and whatever the pricing added); every other
//! pair costs at least the row's bound, `C(x, y) ≥ L_x` for `y ∉ E_x`.
//!
//! 1. **Restricted problem.** The cheapest perfect matching on the pairs `E` (the
//!    diagonal is in `E`, so one exists), by successive shortest augmenting paths
//!    (Dijkstra on reduced costs) with potentials `u_x`, `v_y`: `u_x + v_y ≤ C(x, y)` on
//!    `E`, equality on the matched pairs. Later rounds start from the previous matching
//!    and potentials; a row whose new pair breaks `u_x + v_y ≤ C` lowers `u_x` and, if
//!    its matched pair stops being tight, is matched again.
//!
//!    *Labels that receive nothing* (`C(x, ·) ≡ 0`, a quarter of the labels of
//!    block-cyclic 32 → 128 with `N = 96·√p`) can take any process at no cost: they are
//!    left out of the matching, which is then rectangular (the other rows into all
//!    columns), and take the columns it leaves free at the end. The solve starts from
//!    `v = 0` and `u_x` the row minimum, so the free columns keep `v_y = 0 ≥` every
//!    other `v` — the condition under which the rectangular matching is the square
//!    problem's optimum (each such label's potential is `−max v = 0`). A round whose
//!    repairs leave a column free with `v_y < 0` re-solves from nothing.
//! 2. **Pricing by the bound.** A pair `(x, y) ∉ E` can only improve the matching if its
//!    reduced cost can be negative, `C(x, y) − u_x − v_y < 0`. The model bounds
//!    `C(x, y) ≥ B_x(g)` for every process `y` of group `g` (a node;
//!    [`copr_cost_models::SolverHints::add_group_bounds`], never below the row's `L_x`; one group with
//!    `L_x` when the model has no groups), so that needs `v_y > B_x(g) − u_x`. Those
//!    columns (the most promising first, at most [`PRICED_PER_ROW`] per row and round)
//!    are evaluated exactly and added to `E`, in parallel over the rows. Rows with
//!    `max_y v_y ≤ L_x − u_x` need no group bounds; for the others one vectorised pass
//!    compares each group's bound with its largest `v`, and only the groups that can
//!    price out, or that hold priced columns of the row, are scanned column by column.
//! 3. Repeat until no row has such a column (the potentials are then feasible for the
//!    whole `p × p` problem, and the matching is its optimum), the certificate below
//!    proves the matching within the caller's tolerance, or a limit is reached.
//!
//! **Hubs.** When the groups are large ([`wants_hubs`]), each round first solves the
//! restricted problem with one hub per group ([`super::hubs`]): a row reaches every
//! process of a group at its bound `max(B_x(g), L_x)` through the hub, where no priced
//! pair of the row in the group costs more. Where the bounds are the costs (latency +
//! bandwidth at the nodes that send the row nothing) one such flow is the dense
//! optimum and the certificate below proves it; otherwise pricing adds pairs and the
//! rounds without hubs follow if the tolerance is not met.
//!
//! **Certificate** (any round, any potentials `v`): with
//! `u_x = min( min_{y ∈ E_x} C(x, y) − v_y , min_g B_x(g) − max_{y ∈ g, y ∉ E_x} v_y )`,
//! `u_x + v_y ≤ C(x, y)` holds for **every** pair, so by LP duality every permutation
//! costs at least `Σ_x u_x + Σ_y v_y`, and `W(G) − Σ u − Σ v` bounds every σ's saving.
//! When the loop stops because nothing prices out, this bound equals the matching's
//! saving: the matching is the dense optimum.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use std::sync::Arc;

use copr_cost_models::{delivered_cost, CostModel, Package, ProcessGroups};

use super::hubs::{self, HubProblem};
use crate::gain::Incoming;

/// Columns evaluated per row and pricing round at most.
pub(super) const PRICED_PER_ROW: usize = 32;

/// Relative rounding allowed between a flow's cost and its certificate for it to count
/// as proven optimal.
const ROUNDING: f64 = 1e-12;

/// Pricing rounds at most by default.
pub(super) const MAX_ROUNDS: usize = 64;

const NONE: u32 = u32::MAX;

/// The restricted problem, its matching and potentials.
pub(super) struct Restricted {
    /// `E_x`: `(y, C(x, y))` sorted by `y`.
    rows: Vec<Row>,
    /// `L_x`: `C(x, y) ≥ L_x` off `E_x`.
    lower: Vec<f64>,
    /// Rows without packages (`C(x, ·) ≡ 0`): left out of the matching, they take the
    /// columns it leaves free at the end.
    wild: Vec<bool>,
    /// Whether some row is wild: the matching is then rectangular, started from a row
    /// reduction with every `v_y = 0`, and `v_y ≤ 0` stays (free columns at 0).
    any_wild: bool,
    u: Vec<f64>,
    v: Vec<f64>,
    col_of: Vec<u32>,
    row_of: Vec<u32>,
    /// Pair visits of the shortest-path searches so far, and the most allowed.
    work: u64,
    max_work: u64,
}

/// A row of `E`: `(y, C(x, y))` sorted by `y`. One pair stays inline (most rows of a
/// large plan hold their diagonal alone: 32 bytes a row instead of a list's 24 and
/// its allocation), more are a list.
#[derive(Clone, Debug)]
pub(super) enum Row {
    /// A single pair.
    One([(u32, f64); 1]),
    /// Any number of pairs.
    Many(Vec<(u32, f64)>),
}

impl Row {
    /// The row of the sorted pairs `pairs`.
    pub(super) fn new(pairs: Vec<(u32, f64)>) -> Self {
        match pairs[..] {
            [one] => Self::One([one]),
            _ => Self::Many(pairs),
        }
    }

    /// Inserts `pair` at position `k`.
    fn insert(&mut self, k: usize, pair: (u32, f64)) {
        match self {
            Self::Many(v) => v.insert(k, pair),
            Self::One([first]) => {
                let mut v = Vec::with_capacity(2);
                v.push(*first);
                v.insert(k, pair);
                *self = Self::Many(v);
            }
        }
    }
}

impl std::ops::Deref for Row {
    type Target = [(u32, f64)];

    fn deref(&self) -> &Self::Target {
        match self {
            Self::One(a) => a,
            Self::Many(v) => v,
        }
    }
}

impl<'a> IntoIterator for &'a Row {
    type Item = &'a (u32, f64);
    type IntoIter = std::slice::Iter<'a, (u32, f64)>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A chunk of priced rows: the `(row, column)` pairs found, and each row's least
/// reduced cost in order.
type PricedChunk = (Vec<(u32, u32)>, Vec<f64>);

/// Rows priced per task of the pricing.
const PRICE_CHUNK: usize = 1024;

/// The pairs a pricing round found, by row: `of(x)` the columns of row `x`, in the
/// order found.
struct Wanted {
    start: Vec<usize>,
    cols: Vec<u32>,
}

impl Wanted {
    /// From `(row, column)` pairs of `p` rows (a row's pairs in order).
    fn from_pairs<'a>(p: usize, pairs: impl Iterator<Item = &'a (u32, u32)> + Clone) -> Self {
        let mut start = vec![0usize; p + 1];
        for &(x, _) in pairs.clone() {
            start[x as usize + 1] += 1;
        }
        for x in 0..p {
            start[x + 1] += start[x];
        }
        let mut next = start.clone();
        let mut cols = vec![0u32; start[p]];
        for &(x, y) in pairs {
            cols[next[x as usize]] = y;
            next[x as usize] += 1;
        }
        Self { start, cols }
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    fn of(&self, x: usize) -> &[u32] {
        &self.cols[self.start[x]..self.start[x + 1]]
    }

    /// The number of pairs.
    fn total(&self) -> usize {
        self.cols.len()
    }
}

/// What the column generation hands back.
pub(super) struct Outcome {
    /// The matching: `sigma[x]` the process of label `x`.
    pub(super) sigma: Vec<usize>,
    /// `Σ u + Σ v` with the certificate's `u` (see the [module docs](self)): every
    /// permutation costs at least this much.
    pub(super) lower_bound: f64,
    /// Pricing rounds run.
    pub(super) rounds: usize,
    /// Pairs the pricing added.
    pub(super) priced: usize,
}

/// How the rounds run and when they stop.
pub(super) struct Limits {
    /// Stop once the certificate proves the matching within this fraction of its cost.
    pub(super) rel_gap: f64,
    /// Pairs the pricing may add in all.
    pub(super) budget: usize,
    /// Pair visits of the shortest-path searches in all.
    pub(super) max_work: u64,
    /// Re-solve every round from nothing (u = v = 0, no matching) instead of from the
    /// previous round's matching and potentials: the reference the tests compare with.
    pub(super) cold: bool,
    /// Tolerance of the reduced costs.
    pub(super) tol: f64,
    /// Pricing rounds at most.
    pub(super) max_rounds: usize,
    /// Whether the restricted problem has one hub per group ([`super::hubs`]): `None`
    /// when the groups hold [`MIN_HUB_GROUP`] processes or more on average and the hub
    /// arcs number at most [`MAX_HUB_ARCS`]; `Some(true)` whenever the model has groups.
    pub(super) hubs: Option<bool>,
}

impl Limits {
    /// Whether the rounds stop after one that priced `n` pairs, with the matching's
    /// `cost`, the best certificate `lb`, `rounds` run and `priced` pairs before it.
    fn stop(&self, n: usize, cost: f64, lb: f64, rounds: usize, priced: usize) -> bool {
        n == 0
            || cost - lb <= self.rel_gap * cost.abs()
            || rounds >= self.max_rounds
            || priced >= self.budget
    }
}

/// Most hub arcs (rows that receive something × groups) for which the hubs are used.
pub(super) const MAX_HUB_ARCS: usize = 1 << 23;

/// Fewest processes per group on average for which the hubs are used by default (with
/// small groups, pricing columns one by one converges quickly).
pub(super) const MIN_HUB_GROUP: usize = 64;

/// Whether the restricted problem has hubs, for the model's `groups`, the rows that
/// receive nothing (`wild`) and the caller's choice (see [`Limits::hubs`]).
pub(super) fn wants_hubs(
    groups: Option<&ProcessGroups>,
    wild: &[bool],
    choice: Option<bool>,
) -> bool {
    let Some(groups) = groups else {
        return false;
    };
    choice.unwrap_or_else(|| {
        let rows = wild.iter().filter(|&&w| !w).count();
        rows.saturating_mul(groups.len()) <= MAX_HUB_ARCS
            && wild.len() >= MIN_HUB_GROUP * groups.len()
    })
}

/// Most `rows × groups` for which the pricing uses the model's bounds per group (rows:
/// those whose bound `L_x` alone does not exclude every column); beyond, one bound per
/// row (the rows' `L_x`).
pub(super) const MAX_GROUP_WORK: usize = 1 << 28;

/// The processes of each group (`< p` only), and all of them, by decreasing `v` once
/// sorted.
struct Columns {
    groups: Option<Arc<ProcessGroups>>,
    start: Vec<usize>,
    order: Vec<u32>,
    all: Vec<u32>,
}

impl Columns {
    fn new(groups: Option<Arc<ProcessGroups>>, p: usize) -> Self {
        let (start, order) = match &groups {
            Some(g) => {
                let mut start = vec![0];
                let mut order = Vec::with_capacity(p);
                for k in 0..g.len() {
                    order.extend(g.of(k).iter().filter(|&&y| (y as usize) < p));
                    start.push(order.len());
                }
                (start, order)
            }
            None => (vec![0, p], (0..p as u32).collect()),
        };
        Self {
            groups,
            start,
            order,
            all: (0..p as u32).collect(),
        }
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// Sorts each group by decreasing `v`, and the list of every column too if `all`.
    fn sort_by_v(&mut self, v: &[f64], all: bool) {
        let mut parts: Vec<&mut [u32]> = Vec::with_capacity(self.len());
        let mut rest = &mut self.order[..];
        for k in 0..self.start.len() - 1 {
            let (a, b) = rest.split_at_mut(self.start[k + 1] - self.start[k]);
            parts.push(a);
            rest = b;
        }
        if all {
            parts.push(&mut self.all[..]);
        }
        parts.into_par_iter().for_each(|part| {
            part.sort_unstable_by(|&a, &b| v[b as usize].total_cmp(&v[a as usize]))
        });
    }

    /// The columns of group `g` by decreasing `v`: of the model's group, or every column
    /// (`g = 0`) when the groups are not used.
    fn group(&self, g: usize, grouped: bool) -> &[u32] {
        if grouped {
            &self.order[self.start[g]..self.start[g + 1]]
        } else {
            &self.all
        }
    }

    /// `B_x(g)` for every group into `out`: the model's group bounds (to be raised to
    /// `lower` where used); `false` (and `out = [lower]`, one group of every column) if
    /// the groups are not to be used or the model has no bounds for them.
    fn bounds(
        &self,
        model: &dyn CostModel,
        x: usize,
        inc: &[(usize, Package)],
        lower: f64,
        use_groups: bool,
        out: &mut Vec<f64>,
    ) -> bool {
        out.clear();
        if use_groups {
            out.resize(self.len(), 0.0);
            let ok = self
                .groups
                .as_deref()
                .is_some_and(|g| model.add_group_bounds(x, inc, g, out));
            if ok {
                // `max(B_x(g), lower)` is taken where the bounds are used
                return true;
            }
            out.clear();
        }
        out.push(lower);
        false
    }
}

/// Per-thread scratch space of the pricing.
#[derive(Default)]
struct Scratch {
    bounds: Vec<f64>,
    touched: Vec<u32>,
    saved: Vec<f64>,
}

/// `min_g (max(b_g, lower) − t_g)` (the vectorised fast path of the pricing).
fn least_difference(b: &[f64], lower: f64, t: &[f64]) -> f64 {
    const LANES: usize = 8;
    let n = b.len().min(t.len());
    let (b, t) = (&b[..n], &t[..n]);
    let mut m = [f64::INFINITY; LANES];
    let whole = n - n % LANES;
    for k in (0..whole).step_by(LANES) {
        for j in 0..LANES {
            let bj = if b[k + j] > lower { b[k + j] } else { lower };
            let d = bj - t[k + j];
            m[j] = if d < m[j] { d } else { m[j] };
        }
    }
    let rest = (whole..n)
        .map(|k| b[k].max(lower) - t[k])
        .fold(f64::INFINITY, f64::min);
    m.iter().copied().fold(rest, f64::min)
}

/// Completes a matching `sigma` whose processes `taken` are used: each `unmatched` row
/// takes its own process if free, the others the remaining free processes in order.
pub(super) fn fill_unmatched(
    sigma: &mut [usize],
    taken: &mut [bool],
    unmatched: impl Iterator<Item = usize>,
) {
    let mut rest = Vec::new();
    for x in unmatched {
        if taken[x] {
            rest.push(x);
        } else {
            sigma[x] = x;
            taken[x] = true;
        }
    }
    let mut free = (0..taken.len()).filter(|&y| !taken[y]);
    for x in rest {
        sigma[x] = free
            .next()
            .expect("as many free processes as unmatched rows");
    }
}

/// A heap entry: smallest distance first.
pub(super) struct Item(pub(super) f64, pub(super) u32);

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        self.0.total_cmp(&o.0) == Ordering::Equal
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0)
    }
}

/// Scratch space of the shortest-path searches, reused across rows: per node its
/// distance, predecessor and the search that saw and finished it last.
pub(super) struct Search {
    pub(super) dist: Vec<f64>,
    pub(super) pred: Vec<u32>,
    pub(super) seen: Vec<u32>,
    pub(super) done: Vec<u32>,
    pub(super) stamp: u32,
    pub(super) finished: Vec<u32>,
    pub(super) heap: BinaryHeap<Item>,
}

impl Search {
    /// For `n` nodes.
    pub(super) fn new(n: usize) -> Self {
        Self {
            dist: vec![0.0; n],
            pred: vec![NONE; n],
            seen: vec![0; n],
            done: vec![0; n],
            stamp: 0,
            finished: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }
}

impl Restricted {
    /// The restricted problem on `rows` (each sorted by column, each holding its own
    /// diagonal) with bounds `lower`; `wild[x]`: row `x` costs 0 at every process.
    pub(super) fn new(rows: Vec<Row>, lower: Vec<f64>, wild: Vec<bool>) -> Self {
        let p = rows.len();
        let any_wild = wild.iter().any(|&w| w);
        Self {
            rows,
            lower,
            wild,
            any_wild,
            u: vec![0.0; p],
            v: vec![0.0; p],
            col_of: vec![NONE; p],
            row_of: vec![NONE; p],
            work: 0,
            max_work: u64::MAX,
        }
    }

    fn reduced(&self, x: usize, y: u32, c: f64) -> f64 {
        (c - self.u[x] - self.v[y as usize]).max(0.0)
    }

    /// Makes row `x` feasible (`u_x = min_{E_x} C − v`) and drops its match if that is
    /// no longer tight; `true` if the row is (now) free.
    fn repair_row(&mut self, x: usize, tol: f64) -> bool {
        let m = self.rows[x]
            .iter()
            .map(|&(y, c)| c - self.v[y as usize])
            .fold(f64::INFINITY, f64::min);
        if m < self.u[x] || self.col_of[x] == NONE {
            self.u[x] = m;
        }
        let y = self.col_of[x];
        if y != NONE {
            let c = self.rows[x]
                .binary_search_by_key(&y, |e| e.0)
                .map(|k| self.rows[x][k].1)
                .unwrap_or(f64::INFINITY);
            if c - self.u[x] - self.v[y as usize] > tol {
                self.col_of[x] = NONE;
                self.row_of[y as usize] = NONE;
            }
        }
        self.col_of[x] == NONE
    }

    /// Matches every free row by shortest augmenting paths (the restricted optimum);
    /// `false` if the work limit stopped it first.
    fn solve(&mut self, tol: f64) -> bool {
        let p = self.rows.len();
        // with wild rows the start is the row reduction of `repair_row` (v = 0)
        if !self.any_wild
            && self.col_of.iter().all(|&c| c == NONE)
            && self.v.iter().all(|&v| v == 0.0)
        {
            self.column_reduction();
        }
        let free: Vec<usize> = (0..p)
            .filter(|&x| !self.wild[x] && self.repair_row(x, tol))
            .collect();
        // greedy: a free row takes a free column on a tight pair
        let mut left = Vec::new();
        for x in free {
            let pick = self.rows[x].iter().find(|&&(y, c)| {
                self.row_of[y as usize] == NONE && c - self.u[x] - self.v[y as usize] <= tol
            });
            match pick {
                Some(&(y, _)) => {
                    self.col_of[x] = y;
                    self.row_of[y as usize] = x as u32;
                }
                None => left.push(x),
            }
        }
        let mut s = Search::new(p);
        for x in left {
            if self.work > self.max_work {
                return false;
            }
            self.augment(x, &mut s);
        }
        true
    }

    /// The start of a solve from nothing: `v_y` the cheapest pair of column `y`, and
    /// `u_x = 0` (feasible: `C(x, y) ≥ v_y`), so that the greedy match of the tight
    /// pairs that follows leaves fewer rows to the shortest-path searches.
    fn column_reduction(&mut self) {
        let mut low = vec![f64::INFINITY; self.v.len()];
        for row in &self.rows {
            for &(y, c) in row {
                let l = &mut low[y as usize];
                *l = l.min(c);
            }
        }
        for (v, l) in self.v.iter_mut().zip(low) {
            // a column no row prices keeps 0
            if l.is_finite() {
                *v = l;
            }
        }
    }

    fn relax(&mut self, s: &mut Search, x: usize, base: f64) {
        self.work += self.rows[x].len() as u64;
        for &(y, c) in &self.rows[x] {
            let yi = y as usize;
            if s.done[yi] == s.stamp {
                continue;
            }
            let d = base + self.reduced(x, y, c);
            if s.seen[yi] != s.stamp || d < s.dist[yi] {
                s.seen[yi] = s.stamp;
                s.dist[yi] = d;
                s.pred[yi] = x as u32;
                s.heap.push(Item(d, y));
            }
        }
    }

    /// One Dijkstra from free row `src` to the nearest free column, then the potential
    /// update (feasibility kept, the path tight) and the augmentation.
    fn augment(&mut self, src: usize, s: &mut Search) {
        s.stamp += 1;
        s.heap.clear();
        s.finished.clear();
        self.relax(s, src, 0.0);
        let (sink, total) = loop {
            let Some(Item(d, y)) = s.heap.pop() else {
                // unreachable: the diagonal makes a perfect matching, so a free column
                // is always reachable from a free row
                unreachable!("no augmenting path from row {src}");
            };
            let yi = y as usize;
            if s.done[yi] == s.stamp || d > s.dist[yi] {
                continue;
            }
            s.done[yi] = s.stamp;
            let owner = self.row_of[yi];
            if owner == NONE {
                break (yi, d);
            }
            s.finished.push(y);
            self.relax(s, owner as usize, d);
        };
        for &y in &s.finished {
            let yi = y as usize;
            let delta = total - s.dist[yi];
            self.v[yi] -= delta;
            self.u[self.row_of[yi] as usize] += delta;
        }
        self.u[src] += total;
        let mut y = sink;
        loop {
            let x = s.pred[y] as usize;
            let prev = self.col_of[x];
            self.col_of[x] = y as u32;
            self.row_of[y] = x as u32;
            if x == src {
                break;
            }
            y = prev as usize;
        }
    }

    /// The matching as a permutation: each wild row takes its own column if the matching
    /// left it free, the others the remaining free columns in order.
    fn completed(&self) -> Vec<usize> {
        let p = self.rows.len();
        let mut sigma: Vec<usize> = self.col_of.iter().map(|&y| y as usize).collect();
        let mut taken: Vec<bool> = self.row_of.iter().map(|&x| x != NONE).collect();
        let unmatched = (0..p).filter(|&x| self.col_of[x] == NONE);
        fill_unmatched(&mut sigma, &mut taken, unmatched);
        sigma
    }

    fn reset(&mut self) {
        self.u.iter_mut().for_each(|u| *u = 0.0);
        self.v.iter_mut().for_each(|v| *v = 0.0);
        self.col_of.iter_mut().for_each(|c| *c = NONE);
        self.row_of.iter_mut().for_each(|r| *r = NONE);
    }

    /// One pass over the rows: per row, the columns off `E_x` with
    /// `v_y > B_x(g) − u_x + tol` (the largest excess first, at most [`PRICED_PER_ROW`]),
    /// and the certificate's `Σ_x u_x + Σ_y v_y` (module docs) for the current `v`.
    ///
    /// A row whose bound `L_x` alone excludes every column (`max_y v_y ≤ L_x − u_x + tol`)
    /// prices nothing and needs no group bounds; the others use the model's groups when
    /// there are any and `rows · groups ≤` [`MAX_GROUP_WORK`], else `L_x` alone. A wild
    /// row's certificate term is `−max_y v_y` (it costs 0 everywhere).
    fn price(
        &self,
        model: &dyn CostModel,
        inc: &Incoming,
        order: &[u32],
        cols: &Columns,
        use_groups: bool,
        tol: f64,
    ) -> (Wanted, f64) {
        let p = self.rows.len();
        let vmax = self.vmax();
        let needs = |x: usize| !self.wild[x] && vmax > self.lower[x] - self.u[x] + tol;
        // the largest v of each group (its first column once sorted)
        let tops: Vec<f64> = (0..cols.len())
            .map(|g| {
                cols.group(g, true)
                    .first()
                    .map_or(f64::NEG_INFINITY, |&y| self.v[y as usize])
            })
            .collect();
        // rows in `order` (by first sender), so that neighbouring rows share the model's
        // per-sender data in cache
        let price_row = |sc: &mut Scratch, x: u32| -> (Vec<u32>, f64) {
            let x = x as usize;
            if self.wild[x] {
                return (Vec::new(), -vmax);
            }
            let row = &self.rows[x];
            let on = row
                .iter()
                .map(|&(y, c)| c - self.v[y as usize])
                .fold(f64::INFINITY, f64::min);
            if !needs(x) {
                return (Vec::new(), on.min(self.lower[x] - vmax));
            }
            let lower = self.lower[x];
            let threshold = self.u[x] - tol;
            let bounds = &mut sc.bounds;
            let grouped = cols.bounds(model, x, &inc[x], lower, use_groups, bounds);
            let mut off = f64::INFINITY;
            // the groups to scan column by column: all of them, or (when the
            // others cannot price out) those holding priced columns of the row,
            // whose first column may be priced
            let all_groups = if grouped {
                let groups = cols.groups.as_deref().expect("grouped");
                sc.touched.clear();
                sc.touched
                    .extend(row.iter().map(|&(y, _)| groups.group_of(y as usize) as u32));
                sc.touched.sort_unstable();
                sc.touched.dedup();
                // the least over the other groups: the touched ones masked by +∞
                sc.saved.clear();
                for &g in &sc.touched {
                    let b = &mut bounds[g as usize];
                    sc.saved.push(*b);
                    *b = f64::INFINITY;
                }
                let least = least_difference(bounds, lower, &tops);
                for (&g, &b) in sc.touched.iter().zip(&sc.saved) {
                    bounds[g as usize] = b;
                }
                if least > threshold {
                    off = least;
                    false
                } else {
                    true
                }
            } else {
                true
            };
            let priced = |y: u32| row.binary_search_by_key(&y, |e| e.0).is_ok();
            let mut found: Vec<(f64, u32)> = Vec::new();
            let mut scan = |g: usize, off: &mut f64| {
                let b = bounds[g].max(lower);
                let limit = b - self.u[x] + tol;
                let top = if grouped { tops[g] } else { vmax };
                if top <= limit {
                    // nothing in g prices out; its largest v bounds the unpriced ones'
                    *off = off.min(b - top);
                    return;
                }
                let mut first = true;
                let mut taken = 0;
                for &y in cols.group(g, grouped) {
                    if priced(y) {
                        continue;
                    }
                    let vy = self.v[y as usize];
                    if first {
                        *off = off.min(b - vy);
                        first = false;
                    }
                    if vy <= limit || taken == PRICED_PER_ROW {
                        break;
                    }
                    found.push((vy - b, y));
                    taken += 1;
                }
            };
            if all_groups {
                for g in 0..bounds.len() {
                    scan(g, &mut off);
                }
            } else {
                for &g in &sc.touched {
                    scan(g as usize, &mut off);
                }
            }
            if found.len() > PRICED_PER_ROW {
                found.select_nth_unstable_by(PRICED_PER_ROW, |a, b| b.0.total_cmp(&a.0));
                found.truncate(PRICED_PER_ROW);
            }
            (found.into_iter().map(|e| e.1).collect(), on.min(off))
        };
        // per chunk of rows: the pairs found and each row's least reduced cost, so
        // that no list per row outlives its chunk (millions of rows, most find none)
        let chunks: Vec<PricedChunk> = order
            .par_chunks(PRICE_CHUNK)
            .map_init(Scratch::default, |sc, xs| {
                let mut pairs = Vec::new();
                let mut least = Vec::with_capacity(xs.len());
                for &x in xs {
                    let (found, on) = price_row(sc, x);
                    pairs.extend(found.into_iter().map(|y| (x, y)));
                    least.push(on);
                }
                (pairs, least)
            })
            .collect();
        let lb = chunks.iter().flat_map(|c| &c.1).sum::<f64>() + self.v.iter().sum::<f64>();
        (Wanted::from_pairs(p, chunks.iter().flat_map(|c| &c.0)), lb)
    }

    fn vmax(&self) -> f64 {
        self.v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    /// Whether the pricing uses the groups' bounds: the model has groups and the rows
    /// whose own bound does not exclude every column, times the groups, are at most
    /// [`MAX_GROUP_WORK`].
    fn use_groups(&self, cols: &Columns, tol: f64) -> bool {
        let vmax = self.vmax();
        let needing = (0..self.rows.len())
            .into_par_iter()
            .filter(|&x| !self.wild[x] && vmax > self.lower[x] - self.u[x] + tol)
            .count();
        cols.groups.is_some() && needing.saturating_mul(cols.len()) <= MAX_GROUP_WORK
    }

    /// `Σ_x C(x, col(x))` of the matching (wild rows cost 0).
    fn matching_cost(&self) -> f64 {
        (0..self.rows.len())
            .into_par_iter()
            .filter(|&x| !self.wild[x])
            .map(|x| {
                let y = self.col_of[x];
                let r = &self.rows[x];
                r.binary_search_by_key(&y, |e| e.0)
                    .map_or(f64::INFINITY, |k| r[k].1)
            })
            .sum()
    }

    /// The hub arcs of every row that receives something: `(g, max(B_x(g), L_x))` for
    /// the groups where no pair of `E_x` costs more than that (so the hub prices no pair
    /// below its cost); none for a row whose model gives no group bounds.
    fn hub_rows(
        &self,
        model: &dyn CostModel,
        inc: &Incoming,
        cols: &Columns,
        tol: f64,
    ) -> Vec<Vec<(u32, f64)>> {
        let groups = cols.groups.as_deref().expect("hubs need groups");
        (0..self.rows.len())
            .into_par_iter()
            .map_init(Vec::new, |bounds, x| {
                if self.wild[x] {
                    return Vec::new();
                }
                let lower = self.lower[x];
                if !cols.bounds(model, x, &inc[x], lower, true, bounds) {
                    return Vec::new();
                }
                for b in bounds.iter_mut() {
                    *b = b.max(lower);
                }
                for &(y, c) in &self.rows[x] {
                    let g = groups.group_of(y as usize);
                    if c > bounds[g] + tol {
                        bounds[g] = f64::NAN;
                    }
                }
                bounds
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.is_finite())
                    .map(|(g, &b)| (g as u32, b))
                    .collect()
            })
            .collect()
    }

    /// Rounds of the hub flow ([`super::hubs`]) and pricing, as in [`Self::run`]; the
    /// pairs each round's σ uses are added to `E` (for the rounds without hubs that may
    /// follow). `None` if the first flow passes the work limit.
    fn run_hubs(
        &mut self,
        model: &dyn CostModel,
        inc: &Incoming,
        cols: &mut Columns,
        order: &[u32],
        limits: &Limits,
    ) -> Option<(Outcome, bool)> {
        let tol = limits.tol;
        let p = self.rows.len();
        let groups = cols.groups.clone().expect("hubs need groups");
        let members: Vec<Vec<u32>> = (0..groups.len())
            .map(|g| {
                groups
                    .of(g)
                    .iter()
                    .copied()
                    .filter(|&y| (y as usize) < p)
                    .collect()
            })
            .collect();
        let members: Vec<&[u32]> = members.iter().map(Vec::as_slice).collect();
        let (mut rounds, mut priced) = (0, 0usize);
        let mut best: Option<(f64, Vec<usize>)> = None;
        let mut best_lb = f64::NEG_INFINITY;
        let mut proven = false;
        loop {
            let hub_rows = self.hub_rows(model, inc, cols, tol);
            let pb = HubProblem {
                rows: &self.rows,
                hubs: &hub_rows,
                wild: &self.wild,
                members: &members,
                max_work: limits.max_work.saturating_sub(self.work),
            };
            let Some(sol) = hubs::solve(&pb) else {
                break;
            };
            drop(hub_rows);
            self.work += sol.work;
            self.u = sol.u;
            self.v = sol.v;
            let cost = self.cost_of(model, inc, &sol.sigma);
            // the pairs σ uses, priced exactly
            self.add_pairs(model, inc, |x| vec![sol.sigma[x] as u32]);
            if best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, sol.sigma));
            }
            cols.sort_by_v(&self.v, false);
            let (wanted, lb) = self.price(model, inc, order, cols, true, tol);
            best_lb = best_lb.max(lb);
            let cost = best.as_ref().expect("set").0;
            let n = wanted.total();
            // nothing prices out: this round's flow is the optimum of the whole problem
            // when every hub prices its pairs at their cost (as for the latency +
            // bandwidth model), and the certificate says how far it is otherwise
            proven = n == 0 && cost - best_lb <= ROUNDING * cost.abs();
            if limits.stop(n, cost, best_lb, rounds, priced) {
                break;
            }
            rounds += 1;
            priced += n;
            self.add_pairs(model, inc, |x| wanted.of(x).to_vec());
        }
        // the potentials and matching of the rounds without hubs start afresh
        self.reset();
        let (_, sigma) = best?;
        let out = Outcome {
            sigma,
            lower_bound: best_lb,
            rounds,
            priced,
        };
        Some((out, proven))
    }

    /// Adds the pairs `new(x)` missing from each row's `E_x`, priced exactly.
    fn add_pairs<F>(&mut self, model: &dyn CostModel, inc: &Incoming, new: F)
    where
        F: Fn(usize) -> Vec<u32> + Sync,
    {
        self.rows.par_iter_mut().enumerate().for_each(|(x, row)| {
            for y in new(x) {
                if let Err(k) = row.binary_search_by_key(&y, |e| e.0) {
                    row.insert(k, (y, delivered_cost(model, y as usize, &inc[x])));
                }
            }
        });
    }

    /// Rounds of solve and pricing until nothing prices out, the certificate proves the
    /// matching within `limits.rel_gap`, `limits.max_rounds` rounds, or `limits.budget` added
    /// pairs; `inc[x]` are label `x`'s packages for the exact prices, `groups` the
    /// model's ([`copr_cost_models::SolverHints::process_groups`]) when the pricing may use them. `None` if
    /// the shortest-path searches pass `limits.max_work` pair visits before the first
    /// restricted problem is solved; later, the last solved round's matching is kept.
    pub(super) fn run(
        mut self,
        model: &dyn CostModel,
        inc: &Incoming,
        groups: Option<Arc<ProcessGroups>>,
        limits: &Limits,
    ) -> Option<Outcome> {
        let tol = limits.tol;
        self.max_work = limits.max_work;
        let mut cols = Columns::new(groups, self.rows.len());
        let mut order: Vec<u32> = (0..self.rows.len() as u32).collect();
        let first_sender: Vec<usize> = inc
            .par_rows()
            .map(|(_, i)| i.iter().map(|e| e.0).min().unwrap_or(usize::MAX))
            .collect();
        order.par_sort_unstable_by_key(|&x| (first_sender[x as usize], x));
        // with hubs: done if they prove the tolerance, else their σ and bound stand
        // beside the rounds without hubs that follow
        let hubbed = if wants_hubs(cols.groups.as_deref(), &self.wild, limits.hubs) {
            self.run_hubs(model, inc, &mut cols, &order, limits)
        } else {
            None
        };
        if let Some((h, proven)) = &hubbed {
            let cost = self.cost_of(model, inc, &h.sigma);
            if *proven || cost - h.lower_bound <= limits.rel_gap * cost.abs() {
                return hubbed.map(|h| h.0);
            }
        }
        let hubbed = hubbed.map(|h| h.0);
        let mut rounds = 0;
        let mut priced = 0usize;
        let mut best_lb = f64::NEG_INFINITY;
        let mut kept: Option<Vec<usize>> = None;
        loop {
            if limits.cold {
                self.reset();
            }
            if !self.solve(tol) {
                // the first round unsolved: nothing to keep but the hubs' σ
                if kept.is_none() {
                    return hubbed;
                }
                break;
            }
            kept = Some(self.completed());
            let use_groups = self.use_groups(&cols, tol);
            cols.sort_by_v(&self.v, !use_groups);
            let (wanted, lb) = self.price(model, inc, &order, &cols, use_groups, tol);
            best_lb = best_lb.max(lb);
            let cost = self.matching_cost();
            let n = wanted.total();
            if limits.stop(n, cost, best_lb, rounds, priced) {
                break;
            }
            rounds += 1;
            priced += n;
            self.add_pairs(model, inc, |x| wanted.of(x).to_vec());
            let mut stranded = false;
            for (x, w) in (0..wanted.len()).map(|x| (x, wanted.of(x))) {
                if !w.is_empty() && !self.wild[x] {
                    let y = self.col_of[x];
                    if self.repair_row(x, tol) && y != NONE {
                        stranded |= self.v[y as usize] < -tol;
                    }
                }
            }
            if stranded && self.any_wild {
                // a column left free with v < 0 breaks the rectangular optimality
                // (free columns at v = 0, where the wild rows take them): start over
                self.reset();
            }
        }
        let out = kept.map(|sigma| Outcome {
            lower_bound: best_lb,
            sigma,
            rounds,
            priced,
        });
        match (out, hubbed) {
            (Some(o), Some(h)) => {
                // the better σ, the better bound, the rounds of both
                let lower_bound = o.lower_bound.max(h.lower_bound);
                let (rounds, priced) = (o.rounds + h.rounds, o.priced + h.priced);
                let sigma =
                    if self.cost_of(model, inc, &h.sigma) < self.cost_of(model, inc, &o.sigma) {
                        h.sigma
                    } else {
                        o.sigma
                    };
                Some(Outcome {
                    sigma,
                    lower_bound,
                    rounds,
                    priced,
                })
            }
            (o, h) => o.or(h),
        }
    }

    /// `Σ_x C(x, σ(x))`, exactly.
    fn cost_of(&self, model: &dyn CostModel, inc: &Incoming, sigma: &[usize]) -> f64 {
        (0..sigma.len())
            .into_par_iter()
            .map(|x| delivered_cost(model, sigma[x], &inc[x]))
            .sum()
    }
}
