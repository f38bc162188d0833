//! copr's optimiser: group tasks into nodes, place the groups on the machine, refine
//! by swaps, and keep the result only if it is no worse than every start.
//!
//! For a Cartesian grid the groups are node-sized tiles (every exact tiling whose
//! boundary is within 50 % of the least), and the tiles form a grid of their own (the
//! quotient: bytes between neighbouring tiles = boundary cells × bytes per message).
//! That tile grid is placed on the nodes by
//! * a **product embedding** when the job owns a whole torus: each tile-grid dimension
//!   is a product of torus dimensions (or of the two halves of a 4-ring, in Gray
//!   order), walked in boustrophedon order, which gives dilation 1 whenever the
//!   factors allow it;
//! * the Hilbert, CP2K and bisection strategies applied to the tile grid;
//!
//! each followed by swap refinement of the tiles; for any other pattern the groups are
//! the nodes of the best start. Finally tasks are swapped between nodes. Every swap
//! must lower the bandwidth-weighted hop-bytes (a hop in direction `d` costs
//! `max bandwidth / bandwidth_d`). Among all starts and results the mapping returned has
//! the least hop-bytes among those whose largest link time is no more than the best
//! start's (so it is never worse than the best start on both counts when such a
//! mapping was found), else the start with the least combined score.
//!
//! Deterministic for a given seed; bounded by a time budget.

use std::time::{Duration, Instant};

use super::machine::{MapMachine, NetKind};
use super::metrics::{evaluate, Metrics};
use super::pattern::{GridSpec, Pattern};
use super::strategy::{self, along, baseline, best_tile, tile_boundary, tile_shapes, Strategy};
use crate::error::Result;
use crate::lap::Perm;

/// Options of [`optimise`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Seed of the refinement order.
    pub seed: u64,
    /// Wall-time budget of the whole optimisation (starts excluded).
    pub budget: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            seed: 1,
            budget: Duration::from_secs(10),
        }
    }
}

/// A candidate with its metrics.
#[derive(Debug, Clone)]
pub struct Scored {
    /// Where it came from.
    pub origin: String,
    /// The mapping.
    pub map: Perm,
    /// Its metrics.
    pub metrics: Metrics,
}

/// The result of [`optimise`].
#[derive(Debug, Clone)]
pub struct Optimised {
    /// The chosen mapping.
    pub best: Scored,
    /// Whether it is at least as good as every start on hop-bytes and on the largest
    /// link time.
    pub dominates_starts: bool,
    /// Candidates tried (for reports).
    pub tried: usize,
}

/// Runs the optimiser from `starts` (typically every baseline's mapping).
///
/// # Errors
/// [`crate::Error::Mismatch`] if the pattern does not fill the machine.
pub fn optimise(
    p: &Pattern,
    m: &MapMachine,
    starts: &[Scored],
    opts: &Options,
) -> Result<Optimised> {
    strategy::check_sizes(p, m)?;
    let t0 = Instant::now();
    let deadline = t0 + opts.budget;
    let mut rng = SplitMix(opts.seed);
    let mut cands: Vec<Scored> = Vec::new();
    let score = |map: Perm, origin: String| Scored {
        metrics: evaluate(p, m, &map),
        origin,
        map,
    };
    if let Some(g) = p.grid_spec() {
        let k = m.ranks_per_node();
        let shapes = tile_shapes(g, k);
        let least = shapes.iter().map(|t| tile_boundary(g, t)).min();
        let m1 = m.clone().with_ranks_per_node(1)?;
        for t in shapes
            .iter()
            .filter(|t| least.is_some_and(|l| tile_boundary(g, t) * 2 <= l * 3))
        {
            let q = tile_grid(g, t)?;
            let qp = Pattern::grid(&q)?;
            let mut placements: Vec<(String, Perm)> = Vec::new();
            for (name, place) in embeddings(&q, &m1) {
                placements.push((format!("tiles {t:?}, embedding {name}"), place));
            }
            for s in [Strategy::Hilbert, Strategy::Cp2k, Strategy::Bisection] {
                if let Some(place) = baseline(s, &qp, &m1)? {
                    placements.push((format!("tiles {t:?}, {}", s.name()), place));
                }
            }
            for (name, mut place) in placements {
                if Instant::now() < deadline {
                    refine(&qp, &m1, &mut place, &mut rng, deadline);
                }
                cands.push(score(
                    expand_tiles(g, t, &place, k),
                    format!("{name}, refined"),
                ));
            }
        }
        if shapes.is_empty() {
            let t = best_tile(g, k);
            let order = strategy::tile_order(g, &t);
            cands.push(score(
                along(&order, &strategy::node_hilbert(m), k),
                format!("partial tiles {t:?}, hilbert"),
            ));
        }
    }
    // refine the best few candidates (and starts) at the task level
    let mut pool: Vec<Scored> = starts.to_vec();
    pool.extend(cands);
    let mut by_hb: Vec<usize> = (0..pool.len()).collect();
    by_hb.sort_by_key(|&i| (pool[i].metrics.hop_bytes, i));
    let mut refined = Vec::new();
    for &i in by_hb.iter().take(3) {
        if Instant::now() >= deadline {
            break;
        }
        let mut map = pool[i].map.clone();
        if refine(p, m, &mut map, &mut rng, deadline) {
            refined.push(score(map, format!("{} + swaps", pool[i].origin)));
        }
    }
    pool.extend(refined);
    let tried = pool.len();
    let (best, dominates_starts) = choose(starts, pool);
    Ok(Optimised {
        best,
        dominates_starts,
        tried,
    })
}

/// The selection rule (module docs).
fn choose(starts: &[Scored], pool: Vec<Scored>) -> (Scored, bool) {
    let hb0 = starts.iter().map(|s| s.metrics.hop_bytes).min();
    let lt0 = starts
        .iter()
        .map(|s| s.metrics.max_link_time)
        .fold(f64::INFINITY, f64::min);
    let ok = |s: &Scored| s.metrics.max_link_time <= lt0 * (1.0 + 1e-12);
    let dominating = pool
        .iter()
        .filter(|s| ok(s) && hb0.is_none_or(|h| s.metrics.hop_bytes <= h))
        .min_by(|a, b| {
            (a.metrics.hop_bytes, a.metrics.max_link_time)
                .partial_cmp(&(b.metrics.hop_bytes, b.metrics.max_link_time))
                .expect("finite")
        });
    if let Some(d) = dominating {
        return (d.clone(), true);
    }
    // no candidate beats the best start on both: least combined relative score
    let hbn = hb0.unwrap_or(1).max(1) as f64;
    let ltn = if lt0.is_finite() && lt0 > 0.0 {
        lt0
    } else {
        1.0
    };
    let best = pool
        .into_iter()
        .min_by(|a, b| {
            let sa = a.metrics.hop_bytes as f64 / hbn + a.metrics.max_link_time / ltn;
            let sb = b.metrics.hop_bytes as f64 / hbn + b.metrics.max_link_time / ltn;
            sa.partial_cmp(&sb).expect("finite")
        })
        .expect("at least one candidate");
    (best, false)
}

/// The grid of tiles of shape `t`: extent `dims/t`, bytes between neighbouring tiles
/// `bytes_d · k/t_d`.
fn tile_grid(g: &GridSpec, t: &[usize]) -> Result<GridSpec> {
    let k: usize = t.iter().product();
    GridSpec::new(
        g.dims.iter().zip(t).map(|(d, t)| d / t).collect(),
        g.periodic.clone(),
        (0..t.len())
            .map(|d| g.bytes[d].saturating_mul((k / t[d]) as u64))
            .collect(),
    )
}

/// Task mapping from a placement of tiles (tile-grid task → node).
fn expand_tiles(g: &GridSpec, t: &[usize], place: &Perm, k: usize) -> Perm {
    let q: Vec<usize> = g.dims.iter().zip(t).map(|(d, t)| d / t).collect();
    let mut used = vec![0usize; place.len()];
    let mut fwd = vec![0; g.tasks()];
    for (task, slot) in fwd.iter_mut().enumerate() {
        let c = g.coords(task);
        let tile = c
            .iter()
            .zip(t)
            .zip(&q)
            .fold(0, |acc, ((&x, &s), &e)| acc * e + x / s);
        let node = place.apply(tile);
        *slot = node * k + used[tile];
        used[tile] += 1;
    }
    strategy::perm(fwd)
}

/// Product embeddings of a grid (one task per node) into a whole torus: see the
/// module docs. Returns `(description, placement)` pairs; empty when the machine is
/// not a whole torus with one node per coordinate or sizes do not factor.
fn embeddings(q: &GridSpec, m1: &MapMachine) -> Vec<(String, Perm)> {
    let NetKind::Torus(t) = m1.kind() else {
        return Vec::new();
    };
    if t.num_nodes() != t.num_coords() || q.tasks() != t.num_nodes() {
        return Vec::new();
    }
    let mut node_at = vec![usize::MAX; t.num_coords()];
    for k in 0..t.num_nodes() {
        node_at[t.coord_index(t.coords(k))] = k;
    }
    if node_at.contains(&usize::MAX) {
        return Vec::new();
    }
    let tdims = t.dims();
    let nt = tdims.len();
    let ng = q.dims.len();
    // factor: (torus dim, size, part) part: 0 whole, 1 high bit, 2 low bit of a 4-ring
    let mut out = Vec::new();
    let splittable: Vec<usize> = (0..nt).filter(|&d| tdims[d] == 4).collect();
    for mask in 0..(1usize << splittable.len()) {
        let mut factors: Vec<(usize, usize, u8)> = Vec::new();
        for (d, &e) in tdims.iter().enumerate() {
            let split = splittable
                .iter()
                .position(|&s| s == d)
                .is_some_and(|i| mask >> i & 1 == 1);
            if split {
                factors.push((d, 2, 1));
                factors.push((d, 2, 2));
            } else if e > 1 {
                factors.push((d, e as usize, 0));
            }
        }
        let nf = factors.len();
        if nf > 8 {
            continue;
        }
        // assign each factor to a grid dimension
        let mut assign = vec![0usize; nf];
        loop {
            let mut prod = vec![1usize; ng];
            for (f, &a) in factors.iter().zip(&assign) {
                prod[a] *= f.1;
            }
            if prod == q.dims {
                for orders in factor_orders(&assign, ng) {
                    let groups: Vec<Vec<(usize, usize, u8)>> = orders
                        .iter()
                        .map(|o| o.iter().map(|&i| factors[i]).collect())
                        .collect();
                    let mut fwd = vec![0usize; q.tasks()];
                    let mut coord = vec![0u32; nt];
                    for (task, slot) in fwd.iter_mut().enumerate() {
                        let c = q.coords(task);
                        coord.iter_mut().for_each(|x| *x = 0);
                        for (i, grp) in groups.iter().enumerate() {
                            let sizes: Vec<usize> = grp.iter().map(|f| f.1).collect();
                            let digits = snake(c[i], &sizes);
                            for (f, dg) in grp.iter().zip(digits) {
                                match f.2 {
                                    0 => coord[f.0] = dg as u32,
                                    1 => coord[f.0] += 2 * dg as u32,
                                    _ => coord[f.0] += dg as u32,
                                }
                            }
                        }
                        // (hi, lo) of a split 4-ring to its Gray position
                        for (d, x) in coord.iter_mut().enumerate() {
                            if mask != 0 && tdims[d] == 4 && is_split(&groups, d) {
                                let (hi, lo) = (*x / 2, *x % 2);
                                *x = if hi == 0 { lo } else { 3 - lo };
                            }
                        }
                        *slot = node_at[t.coord_index(&coord)];
                    }
                    if let Ok(p) = Perm::from_forward(fwd) {
                        let desc: Vec<String> = groups
                            .iter()
                            .map(|g| {
                                g.iter()
                                    .map(|f| match f.2 {
                                        0 => format!("{}", dim(f.0)),
                                        1 => format!("{}hi", dim(f.0)),
                                        _ => format!("{}lo", dim(f.0)),
                                    })
                                    .collect::<Vec<_>>()
                                    .join("·")
                            })
                            .collect();
                        out.push((desc.join(" | "), p));
                    }
                    if out.len() >= 64 {
                        return out;
                    }
                }
            }
            // next assignment (odometer)
            let mut i = 0;
            loop {
                if i == nf {
                    break;
                }
                assign[i] += 1;
                if assign[i] < ng {
                    break;
                }
                assign[i] = 0;
                i += 1;
            }
            if i == nf {
                break;
            }
        }
    }
    out
}

fn is_split(groups: &[Vec<(usize, usize, u8)>], d: usize) -> bool {
    groups.iter().flatten().any(|f| f.0 == d && f.2 != 0)
}

fn dim(d: usize) -> char {
    ['x', 'y', 'z', 'w', 'v', 'u', 't', 's'][d.min(7)]
}

/// For each grid dimension, the orders of the factors assigned to it (outer first);
/// the cartesian product over dimensions, at most 24 combinations.
fn factor_orders(assign: &[usize], ng: usize) -> Vec<Vec<Vec<usize>>> {
    let per: Vec<Vec<Vec<usize>>> = (0..ng)
        .map(|g| {
            let items: Vec<usize> = (0..assign.len()).filter(|&i| assign[i] == g).collect();
            strategy::dim_orders(items.len())
                .into_iter()
                .map(|o| o.into_iter().map(|j| items[j]).collect())
                .collect()
        })
        .collect();
    let mut out: Vec<Vec<Vec<usize>>> = vec![Vec::new()];
    for choices in per {
        let mut next = Vec::new();
        for prefix in &out {
            for c in &choices {
                let mut v = prefix.clone();
                v.push(c.clone());
                next.push(v);
            }
        }
        out = next;
        out.truncate(24);
    }
    out
}

/// Boustrophedon digits of position `x` in the product of `sizes` (outer first):
/// consecutive positions differ by one in exactly one digit.
fn snake(x: usize, sizes: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(sizes.len());
    let mut x = x;
    for j in 0..sizes.len() {
        let inner: usize = sizes[j + 1..].iter().product();
        let (d, r) = (x / inner, x % inner);
        out.push(d);
        x = if d % 2 == 1 { inner - 1 - r } else { r };
    }
    out
}

/// Swap refinement: repeatedly swaps two tasks on different nodes when that lowers
/// the bandwidth-weighted hop-bytes. Returns whether anything changed.
///
/// # Complexity
/// Per pass `O(p·deg·(deg + c)·n)` for `c` candidate partners per neighbour node and
/// `n` torus dimensions; passes stop when one gains less than 0.01 % or at `deadline`.
pub fn refine(
    p: &Pattern,
    m: &MapMachine,
    map: &mut Perm,
    rng: &mut SplitMix,
    deadline: Instant,
) -> bool {
    let n = p.tasks();
    let rpn = m.ranks_per_node();
    if m.nodes() < 2 || n < 2 {
        return false;
    }
    let (off, adj) = p.undirected();
    let dist = Dist::new(m);
    let mut slot: Vec<usize> = map.forward().to_vec();
    let mut task_at: Vec<usize> = map.inverse().to_vec();
    let node = |slot: &[usize], t: usize| slot[t] / rpn;
    let cost_at = |slot: &[usize], u: usize, a: usize| -> f64 {
        adj[off[u]..off[u + 1]]
            .iter()
            .map(|&(v, w)| w as f64 * dist.get(a, slot[v as usize] / rpn))
            .sum()
    };
    let total: f64 = (0..n)
        .map(|u| cost_at(&slot, u, node(&slot, u)))
        .sum::<f64>()
        / 2.0;
    let mut order: Vec<usize> = (0..n).collect();
    let mut changed = false;
    let mut targets: Vec<usize> = Vec::new();
    let mut current = total;
    for _pass in 0..50 {
        rng.shuffle(&mut order);
        let mut gain = 0.0;
        for (i, &u) in order.iter().enumerate() {
            if i % 256 == 0 && Instant::now() >= deadline {
                break;
            }
            let a = node(&slot, u);
            targets.clear();
            for &(v, _) in &adj[off[u]..off[u + 1]] {
                let b = node(&slot, v as usize);
                if b != a && !targets.contains(&b) {
                    targets.push(b);
                }
            }
            if rpn == 1 {
                let base = targets.len();
                for j in 0..base {
                    dist.neighbours(targets[j], |x| {
                        if x != a && !targets.contains(&x) {
                            targets.push(x);
                        }
                    });
                }
            }
            let cu_a = cost_at(&slot, u, a);
            let mut best = (0.0f64, usize::MAX);
            for &b in &targets {
                let cu_b = cost_at(&slot, u, b);
                for &x in &task_at[b * rpn..(b + 1) * rpn] {
                    let cx_b = cost_at(&slot, x, b);
                    let cx_a = cost_at(&slot, x, a);
                    let wux: f64 = adj[off[u]..off[u + 1]]
                        .iter()
                        .find(|&&(v, _)| v as usize == x)
                        .map_or(0.0, |&(_, w)| w as f64);
                    let delta = cu_b - cu_a + cx_a - cx_b + 2.0 * wux * dist.get(a, b);
                    if delta < best.0 - 1e-9 * (1.0 + current.abs()) {
                        best = (delta, x);
                    }
                }
            }
            if best.1 != usize::MAX {
                let x = best.1;
                let (su, sx) = (slot[u], slot[x]);
                slot[u] = sx;
                slot[x] = su;
                task_at[sx] = u;
                task_at[su] = x;
                gain -= best.0;
                changed = true;
            }
        }
        current -= gain;
        if gain <= 1e-4 * current.max(1.0) || Instant::now() >= deadline {
            break;
        }
    }
    if changed {
        *map = Perm::from_forward(slot).expect("swaps keep a bijection");
    }
    changed
}

/// SplitMix64: a small deterministic generator for the refinement order.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// Bandwidth-weighted hop distance between nodes.
struct Dist<'a> {
    m: &'a MapMachine,
    w: Vec<f64>,
    /// Node at each torus coordinate index, for whole tori.
    node_at: Vec<usize>,
}

impl<'a> Dist<'a> {
    fn new(m: &'a MapMachine) -> Self {
        let w = match m.kind() {
            NetKind::Torus(t) => {
                let bw = &t.params().link_bandwidth;
                let best = bw.iter().cloned().fold(0.0, f64::max);
                bw.iter().map(|b| best / b).collect()
            }
            _ => Vec::new(),
        };
        let node_at = match m.kind() {
            NetKind::Torus(t) if t.num_nodes() == t.num_coords() => {
                let mut v = vec![usize::MAX; t.num_coords()];
                for k in 0..t.num_nodes() {
                    v[t.coord_index(t.coords(k))] = k;
                }
                v
            }
            _ => Vec::new(),
        };
        Self { m, w, node_at }
    }

    #[inline]
    fn get(&self, a: usize, b: usize) -> f64 {
        if a == b {
            return 0.0;
        }
        match self.m.kind() {
            NetKind::Torus(t) => {
                let (ca, cb) = (t.coords(a), t.coords(b));
                let dims = t.dims();
                let mut s = 0.0;
                for d in 0..ca.len() {
                    let x = ca[d].abs_diff(cb[d]);
                    s += f64::from(x.min(dims[d] - x)) * self.w[d];
                }
                s
            }
            _ => f64::from(self.m.hops(a, b)),
        }
    }

    /// Calls `f` for the nodes one torus hop from node `a` (none for other networks).
    fn neighbours(&self, a: usize, mut f: impl FnMut(usize)) {
        let NetKind::Torus(t) = self.m.kind() else {
            return;
        };
        if self.node_at.is_empty() {
            return;
        }
        let mut x = t.coords(a).to_vec();
        let dims = t.dims();
        for d in 0..x.len() {
            let c = x[d];
            for step in [1, dims[d] - 1] {
                x[d] = (c + step) % dims[d];
                let k = self.node_at[t.coord_index(&x)];
                if k != usize::MAX && k != a {
                    f(k);
                }
            }
            x[d] = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::{Torus, TorusParams};

    #[test]
    fn snake_steps_by_one() {
        let sizes = [3, 4, 2];
        let mut prev = snake(0, &sizes);
        for x in 1..24 {
            let cur = snake(x, &sizes);
            let diff: usize = prev.iter().zip(&cur).map(|(a, b)| a.abs_diff(*b)).sum();
            assert_eq!(diff, 1, "{x}: {prev:?} -> {cur:?}");
            prev = cur;
        }
    }

    #[test]
    fn dilation_one_embedding_of_8x8_tiles_in_4x4x4() {
        let m =
            MapMachine::torus(Torus::full(TorusParams::new(vec![4, 4, 4])).unwrap(), 1).unwrap();
        let q = GridSpec::new(vec![8, 8], vec![true, true], vec![1, 1]).unwrap();
        let p = Pattern::grid(&q).unwrap();
        let best = embeddings(&q, &m)
            .into_iter()
            .map(|(_, e)| evaluate(&p, &m, &e))
            .min_by_key(|x| x.hop_bytes)
            .unwrap();
        assert_eq!(best.dilation_max, 1);
        assert_eq!(best.hop_bytes, p.total_bytes());
    }
}
