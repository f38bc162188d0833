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
//!    reduced cost can be negative, `C(x, y) − u_x − v_y < 0`; since `C(x, y) ≥ L_x`,
//!    that needs `v_y > L_x − u_x`. Those columns (the largest `v_y` first, at most
//!    [`PRICED_PER_ROW`] per row and round) are evaluated exactly and added to `E`.
//! 3. Repeat until no row has such a column (the potentials are then feasible for the
//!    whole `p × p` problem, and the matching is its optimum) or the work limit is
//!    reached.
//!
//! **Certificate** (any round, any potentials `v`): with
//! `u_x = min( min_{y ∈ E_x} C(x, y) − v_y , L_x − max_{y ∉ E_x} v_y )`,
//! `u_x + v_y ≤ C(x, y)` holds for **every** pair, so by LP duality every permutation
//! costs at least `Σ_x u_x + Σ_y v_y`, and `W(G) − Σ u − Σ v` bounds every σ's saving.
//! When the loop stops because nothing prices out, this bound equals the matching's
//! saving: the matching is the dense optimum.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use copr_cost_models::{delivered_cost, CostModel, Package};

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

    /// Per row, the columns off `E_x` whose `v_y > L_x − u_x + tol` (largest first, at
    /// most [`PRICED_PER_ROW`]); `by_v` lists the columns by decreasing `v`.
    fn price(&self, by_v: &[u32], tol: f64) -> Vec<Vec<u32>> {
        (0..self.rows.len())
            .into_par_iter()
            .map(|x| {
                let limit = self.lower[x] - self.u[x] + tol;
                let mut out = Vec::new();
                for &y in by_v {
                    if self.v[y as usize] <= limit || out.len() == PRICED_PER_ROW {
                        break;
                    }
                    if self.rows[x].binary_search_by_key(&y, |e| e.0).is_err() {
                        out.push(y);
                    }
                }
                out
            })
            .collect()
    }

    /// `Σ_x u_x + Σ_y v_y` with the certificate's `u` for the current `v`.
    fn lower_bound(&self, by_v: &[u32]) -> f64 {
        let row_terms: f64 = (0..self.rows.len())
            .into_par_iter()
            .map(|x| {
                let on = self.rows[x]
                    .iter()
                    .map(|&(y, c)| c - self.v[y as usize])
                    .fold(f64::INFINITY, f64::min);
                // the largest v off E_x (none when every column is in E_x)
                let off = by_v
                    .iter()
                    .find(|&&y| self.rows[x].binary_search_by_key(&y, |e| e.0).is_err())
                    .map(|&y| self.lower[x] - self.v[y as usize]);
                match off {
                    Some(o) => on.min(o),
                    None => on,
                }
            })
            .sum();
        row_terms + self.v.iter().sum::<f64>()
    }

    fn by_v(&self) -> Vec<u32> {
        let mut by_v: Vec<u32> = (0..self.rows.len() as u32).collect();
        by_v.par_sort_unstable_by(|&a, &b| self.v[b as usize].total_cmp(&self.v[a as usize]));
        by_v
    }

    /// Rounds of solve and pricing until nothing prices out, [`MAX_ROUNDS`] rounds, or
    /// `budget` added pairs; `inc[x]` are label `x`'s packages for the exact prices.
    /// `None` if the shortest-path searches visit more than `max_work` pairs in all
    /// before the restricted problem is solved.
    pub(super) fn run(
        mut self,
        model: &dyn CostModel,
        inc: &[Vec<(usize, Package)>],
        budget: usize,
        max_work: u64,
        tol: f64,
    ) -> Option<Outcome> {
        self.max_work = max_work;
        let mut rounds = 0;
        let mut priced = 0usize;
        loop {
            if !self.solve(tol) {
                return None;
            }
            if rounds == MAX_ROUNDS || priced >= budget {
                break;
            }
            let by_v = self.by_v();
            let wanted = self.price(&by_v, tol);
            let n: usize = wanted.iter().map(Vec::len).sum();
            if n == 0 {
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
        let by_v = self.by_v();
        Some(Outcome {
            lower_bound: self.lower_bound(&by_v),
            sigma: self.col_of.iter().map(|&y| y as usize).collect(),
            rounds,
            priced,
        })
    }
}
