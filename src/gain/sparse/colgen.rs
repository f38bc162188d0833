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
//! 2. **Pricing by the bound.** A pair `(x, y) ∉ E` can only improve the matching if its
//!    reduced cost can be negative, `C(x, y) − u_x − v_y < 0`. The model bounds
//!    `C(x, y) ≥ B_x(g)` for every process `y` of group `g` (a node;
//!    [`CostModel::add_group_bounds`], never below the row's `L_x`; one group with
//!    `L_x` when the model has no groups), so that needs `v_y > B_x(g) − u_x`. Those
//!    columns (the most promising first, at most [`PRICED_PER_ROW`] per row and round)
//!    are evaluated exactly and added to `E`, in parallel over the rows.
//! 3. Repeat until no row has such a column (the potentials are then feasible for the
//!    whole `p × p` problem, and the matching is its optimum), the certificate below
//!    proves the matching within the caller's tolerance, or a limit is reached.
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

/// Columns evaluated per row and pricing round at most.
pub(super) const PRICED_PER_ROW: usize = 32;

/// Pricing rounds at most.
pub(super) const MAX_ROUNDS: usize = 64;

const NONE: u32 = u32::MAX;

/// The restricted problem, its matching and potentials.
pub(super) struct Restricted {
    /// `E_x`: `(y, C(x, y))` sorted by `y`.
    rows: Vec<Vec<(u32, f64)>>,
    /// `L_x`: `C(x, y) ≥ L_x` off `E_x`.
    lower: Vec<f64>,
    u: Vec<f64>,
    v: Vec<f64>,
    col_of: Vec<u32>,
    row_of: Vec<u32>,
    /// Pair visits of the shortest-path searches so far, and the most allowed.
    work: u64,
    max_work: u64,
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
}

/// Most `p × groups` for which the pricing uses the model's bounds per group; beyond,
/// one bound per row (the rows' `L_x`).
pub(super) const MAX_GROUP_WORK: usize = 1 << 26;

/// The processes of each group (`< p` only), by decreasing `v` once sorted.
struct Columns {
    groups: Option<Arc<ProcessGroups>>,
    start: Vec<usize>,
    order: Vec<u32>,
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
        }
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    fn sort_by_v(&mut self, v: &[f64]) {
        let mut parts: Vec<&mut [u32]> = Vec::with_capacity(self.len());
        let mut rest = &mut self.order[..];
        for k in 0..self.start.len() - 1 {
            let (a, b) = rest.split_at_mut(self.start[k + 1] - self.start[k]);
            parts.push(a);
            rest = b;
        }
        parts.into_par_iter().for_each(|part| {
            part.sort_unstable_by(|&a, &b| v[b as usize].total_cmp(&v[a as usize]))
        });
    }

    /// `B_x(g)` for every group into `out`: the model's group bounds, never below `lower`.
    fn bounds(
        &self,
        model: &dyn CostModel,
        x: usize,
        inc: &[(usize, Package)],
        lower: f64,
        out: &mut Vec<f64>,
    ) {
        out.clear();
        out.resize(self.len(), 0.0);
        let ok = self
            .groups
            .as_deref()
            .is_some_and(|g| model.add_group_bounds(x, inc, g, out));
        for b in out.iter_mut() {
            *b = if ok { b.max(lower) } else { lower };
        }
    }
}

/// A heap entry: smallest distance first.
struct Item(f64, u32);

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

/// Scratch space of the shortest-path searches, reused across rows.
struct Search {
    dist: Vec<f64>,
    pred: Vec<u32>,
    seen: Vec<u32>,
    done: Vec<u32>,
    stamp: u32,
    finished: Vec<u32>,
    heap: BinaryHeap<Item>,
}

impl Restricted {
    /// The restricted problem on `rows` (each sorted by column, each holding its own
    /// diagonal) with bounds `lower`.
    pub(super) fn new(rows: Vec<Vec<(u32, f64)>>, lower: Vec<f64>) -> Self {
        let p = rows.len();
        Self {
            rows,
            lower,
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
        if self.col_of.iter().all(|&c| c == NONE) && self.v.iter().all(|&v| v == 0.0) {
            self.column_reduction();
        }
        let free: Vec<usize> = (0..p).filter(|&x| self.repair_row(x, tol)).collect();
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
        let mut s = Search {
            dist: vec![0.0; p],
            pred: vec![NONE; p],
            seen: vec![0; p],
            done: vec![0; p],
            stamp: 0,
            finished: Vec::new(),
            heap: BinaryHeap::new(),
        };
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

    fn reset(&mut self) {
        self.u.iter_mut().for_each(|u| *u = 0.0);
        self.v.iter_mut().for_each(|v| *v = 0.0);
        self.col_of.iter_mut().for_each(|c| *c = NONE);
        self.row_of.iter_mut().for_each(|r| *r = NONE);
    }

    /// One pass over the rows: per row, the columns off `E_x` with
    /// `v_y > B_x(g) − u_x + tol` (the largest excess first, at most [`PRICED_PER_ROW`]),
    /// and the certificate's `Σ_x u_x + Σ_y v_y` (module docs) for the current `v`.
    fn price(
        &self,
        model: &dyn CostModel,
        inc: &[Vec<(usize, Package)>],
        cols: &Columns,
        tol: f64,
    ) -> (Vec<Vec<u32>>, f64) {
        let (wanted, rows): (Vec<Vec<u32>>, Vec<f64>) = (0..self.rows.len())
            .into_par_iter()
            .map_init(Vec::new, |bounds, x| {
                cols.bounds(model, x, &inc[x], self.lower[x], bounds);
                let row = &self.rows[x];
                let priced = |y: u32| row.binary_search_by_key(&y, |e| e.0).is_ok();
                let mut found: Vec<(f64, u32)> = Vec::new();
                let mut off = f64::INFINITY;
                for (g, &b) in bounds.iter().enumerate() {
                    let limit = b - self.u[x] + tol;
                    let mut first = true;
                    let mut taken = 0;
                    for &y in &cols.order[cols.start[g]..cols.start[g + 1]] {
                        if priced(y) {
                            continue;
                        }
                        let vy = self.v[y as usize];
                        if first {
                            off = off.min(b - vy);
                            first = false;
                        }
                        if vy <= limit || taken == PRICED_PER_ROW {
                            break;
                        }
                        found.push((vy - b, y));
                        taken += 1;
                    }
                }
                if found.len() > PRICED_PER_ROW {
                    found.select_nth_unstable_by(PRICED_PER_ROW, |a, b| b.0.total_cmp(&a.0));
                    found.truncate(PRICED_PER_ROW);
                }
                let on = row
                    .iter()
                    .map(|&(y, c)| c - self.v[y as usize])
                    .fold(f64::INFINITY, f64::min);
                (found.into_iter().map(|e| e.1).collect(), on.min(off))
            })
            .unzip();
        let lb = rows.iter().sum::<f64>() + self.v.iter().sum::<f64>();
        (wanted, lb)
    }

    /// `Σ_x C(x, col(x))` of the (perfect) matching.
    fn matching_cost(&self) -> f64 {
        (0..self.rows.len())
            .into_par_iter()
            .map(|x| {
                let y = self.col_of[x];
                let r = &self.rows[x];
                r.binary_search_by_key(&y, |e| e.0)
                    .map_or(f64::INFINITY, |k| r[k].1)
            })
            .sum()
    }

    /// Rounds of solve and pricing until nothing prices out, the certificate proves the
    /// matching within `limits.rel_gap`, [`MAX_ROUNDS`] rounds, or `limits.budget` added
    /// pairs; `inc[x]` are label `x`'s packages for the exact prices, `groups` the
    /// model's ([`CostModel::process_groups`]) when the pricing may use them. `None` if
    /// the shortest-path searches pass `limits.max_work` pair visits before the first
    /// restricted problem is solved; later, the last solved round's matching is kept.
    pub(super) fn run(
        mut self,
        model: &dyn CostModel,
        inc: &[Vec<(usize, Package)>],
        groups: Option<Arc<ProcessGroups>>,
        limits: &Limits,
    ) -> Option<Outcome> {
        let tol = limits.tol;
        self.max_work = limits.max_work;
        let mut cols = Columns::new(groups, self.rows.len());
        let mut rounds = 0;
        let mut priced = 0usize;
        let mut best_lb = f64::NEG_INFINITY;
        let mut kept: Option<Vec<u32>> = None;
        loop {
            if limits.cold {
                self.reset();
            }
            if !self.solve(tol) {
                // the first round unsolved: nothing to keep
                kept.as_ref()?;
                break;
            }
            kept = Some(self.col_of.clone());
            cols.sort_by_v(&self.v);
            let (wanted, lb) = self.price(model, inc, &cols, tol);
            best_lb = best_lb.max(lb);
            let cost = self.matching_cost();
            let n: usize = wanted.iter().map(Vec::len).sum();
            if n == 0
                || cost - best_lb <= limits.rel_gap * cost.abs()
                || rounds == MAX_ROUNDS
                || priced >= limits.budget
            {
                break;
            }
            rounds += 1;
            priced += n;
            let rows = &mut self.rows;
            rows.par_iter_mut()
                .zip(wanted.par_iter())
                .enumerate()
                .filter(|(_, (_, w))| !w.is_empty())
                .for_each(|(x, (row, w))| {
                    row.extend(
                        w.iter()
                            .map(|&y| (y, delivered_cost(model, y as usize, &inc[x]))),
                    );
                    row.sort_unstable_by_key(|e| e.0);
                });
            for (x, w) in wanted.iter().enumerate() {
                if !w.is_empty() {
                    self.repair_row(x, tol);
                }
            }
        }
        Some(Outcome {
            lower_bound: best_lb,
            sigma: kept?.iter().map(|&y| y as usize).collect(),
            rounds,
            priced,
        })
    }
}
