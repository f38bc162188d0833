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
//! each followed by swap refinement of the tiles (for an algorithm's traffic, such as
//! Fox or Snyder, the tiles are also chosen, placed, refined and relieved of their
//! busiest link on that traffic: `tile_traffic.rs`); for any other pattern the groups are
//! the nodes of the best start. Finally tasks are swapped between nodes. Every swap
//! must lower the bandwidth-weighted hop-bytes (a hop in direction `d` costs
//! `max bandwidth / bandwidth_d`).
//!
//! **What is returned.** Among all starts and results, the mapping with the least
//! hop-bytes among those that are no worse than the best start on hop-bytes *and* no
//! worse than the best start on the largest link time ([`Optimised::dominates_starts`]).
//! The best start on one measure need not be the best on the other, and a mapping
//! within both may not exist; when none was found, random balancing swaps search from
//! the best candidate for one, and failing that the candidate with the least
//! `HB/HB₀ + T/T₀` is returned: no start beats it on both measures (a minimiser of a
//! positive weighted sum is Pareto-optimal), and the report says so.
//!
//! **Anytime.** The chosen mapping is then improved while the budget lasts by rounds
//! of kicks and refinement; a round's mapping is kept only when it is no worse on both
//! hop-bytes and the busiest link and better on one, so for the same seed a larger
//! budget (more rounds completed) never gives a worse mapping on either measure (see
//! [`optimise_rounds`]).
//!
//! Deterministic for a given seed and number of anytime rounds; bounded by a time
//! budget.

use std::time::{Duration, Instant};

use super::machine::{MapMachine, NetKind};
use super::metrics::{evaluate, Metrics};
use super::pattern::{CartGrid, Pattern};
use super::strategy::{
    self, along, baseline_until, best_tile, tile_boundary, tile_shapes, Strategy,
};
use copr::error::Result;
use copr::lap::Perm;
pub use copr::rng::SplitMix;

/// Options of [`optimise`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Seed of the refinement order.
    pub seed: u64,
    /// Wall-time budget of the whole optimisation (starts excluded); in
    /// [`crate::compare`], of the whole comparison, baselines included.
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
/// [`crate::MapError`] if the pattern does not fill the machine.
pub fn optimise(
    p: &Pattern,
    m: &MapMachine,
    starts: &[Scored],
    opts: &Options,
) -> Result<Optimised> {
    optimise_rounds(p, m, starts, opts, None)
}

/// [`optimise`] with the anytime phase (module docs) stopped after at most
/// `max_rounds` rounds as well as at the budget: with a budget that is not reached, the
/// result is a function of the seed and `max_rounds` alone, and never worse (on
/// hop-bytes and on the busiest link) for a larger `max_rounds`.
///
/// # Errors
/// As [`optimise`].
pub fn optimise_rounds(
    p: &Pattern,
    m: &MapMachine,
    starts: &[Scored],
    opts: &Options,
    max_rounds: Option<usize>,
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
    // feature `scotch`: libscotch's mappings of a general graph join the starts (first,
    // so that refinement has the rest of the budget) and, refined, the candidates;
    // the choice below is no worse than them on both measures when it can be
    #[cfg(feature = "scotch")]
    let starts = &super::scotch::with_starts(p, m, starts, opts, deadline, &mut cands);
    if p.grid_spec().is_none() {
        // a grid hidden in a graph: map the grid, then rename its tasks
        if let Some(h) = super::recognise::recognise_grid(p) {
            let budget = opts.budget / 2;
            for (origin, map) in hidden_grid_candidates(&h, m, opts.seed, budget)? {
                cands.push(score(map, origin));
            }
        } else {
            for (origin, map) in
                super::padded::padded_grid_candidates(p, m, opts.seed, &mut rng, deadline)?
            {
                cands.push(score(map, origin));
            }
        }
    }
    // a grid, or the process grid of an algorithm's traffic: node-sized tiles placed on
    // the machine, chosen and ranked by the grid's neighbour traffic, scored on `p`
    if let Some(g) = p.shape() {
        let k = m.ranks_per_node();
        let shapes = tile_shapes(g, k);
        let least = shapes.iter().map(|t| tile_boundary(g, t)).min();
        let m1 = m.clone().with_ranks_per_node(1)?;
        let mut near: Vec<&Vec<usize>> = shapes
            .iter()
            .filter(|t| least.is_some_and(|l| tile_boundary(g, t) * 2 <= l * 3))
            .collect();
        near.sort_by_key(|t| tile_boundary(g, t));
        near.truncate(3);
        // every placement of every tile grid, ranked on the tile grid itself (its
        // inter-tile traffic is the inter-node traffic of the expanded mapping)
        let mut placed: Vec<(f64, f64, String, Vec<usize>, Perm)> = Vec::new();
        for t in near {
            let q = tile_grid(g, t)?;
            let qp = Pattern::grid(&q)?;
            let mut placements: Vec<(String, Perm)> = Vec::new();
            for (name, place) in embeddings(&q, &qp, &m1, 6, deadline) {
                placements.push((format!("tiles {t:?}, embedding {name}"), place));
            }
            for s in [Strategy::Hilbert, Strategy::Cp2k, Strategy::Bisection] {
                if let Some(place) = baseline_until(s, &qp, &m1, Some(deadline))? {
                    placements.push((format!("tiles {t:?}, {}", s.name()), place));
                }
            }
            let mut ranked: Vec<(f64, String, Perm)> = placements
                .into_iter()
                .map(|(n, pl)| (strategy::weighted_hop_bytes(&qp, &m1, &pl), n, pl))
                .collect();
            ranked.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("finite"));
            // refine the two best placements of this tile shape
            for (i, (w, name, place)) in ranked.into_iter().enumerate() {
                let mut place = place;
                let mut name = name;
                let mut w = w;
                if i < 2
                    && Instant::now() < deadline
                    && refine(&qp, &m1, &mut place, &mut rng, deadline, 20)
                {
                    name.push_str(", refined");
                    w = strategy::weighted_hop_bytes(&qp, &m1, &place);
                }
                let lt = evaluate(&qp, &m1, &place).max_link_time;
                placed.push((w, lt, name, t.clone(), place));
            }
        }
        // expand the best four by weighted hop-bytes and the best two by link time
        let mut keep: Vec<usize> = (0..placed.len()).collect();
        keep.sort_by(|&a, &b| placed[a].0.partial_cmp(&placed[b].0).expect("finite"));
        let mut chosen: Vec<usize> = keep.iter().copied().take(4).collect();
        keep.sort_by(|&a, &b| {
            (placed[a].1, placed[a].0)
                .partial_cmp(&(placed[b].1, placed[b].0))
                .expect("finite")
        });
        for &i in keep.iter().take(2) {
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        for i in chosen {
            let (_, _, name, t, place) = &placed[i];
            cands.push(score(expand_tiles(g, t, place, k), name.clone()));
        }
        if p.grid_spec().is_none() {
            // an algorithm's traffic: tiles chosen, placed and refined on it
            for (origin, map) in super::tile_traffic::algorithm_tile_candidates(
                p, m, g, &shapes, &mut rng, deadline,
            )? {
                cands.push(score(map, origin));
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
    if p.grid_spec().is_none() && m.ranks_per_node() > 1 && m.nodes() > 1 && p.tasks() <= 2048 {
        // any other graph: grow node-sized groups, then place the group graph (above
        // 2048 tasks the multilevel mapper alone, for time: its external-gain
        // bisection gives the better mapping there)
        let k = m.ranks_per_node();
        let groups = graph_groups(p, k);
        let mut group_of = vec![0u32; p.tasks()];
        for (g, members) in groups.iter().enumerate() {
            for &t in members {
                group_of[t] = g as u32;
            }
        }
        let qedges = p
            .edges()
            .iter()
            .map(|e| super::pattern::Edge {
                src: group_of[e.src as usize],
                dst: group_of[e.dst as usize],
                bytes: e.bytes,
            })
            .collect();
        let qp = Pattern::from_edges(groups.len(), qedges, "groups".into())?;
        let m1 = m.clone().with_ranks_per_node(1)?;
        for s in [Strategy::Packed, Strategy::Bisection] {
            if let Some(mut place) = baseline_until(s, &qp, &m1, Some(deadline))? {
                refine(&qp, &m1, &mut place, &mut rng, deadline, 20);
                let mut fwd = vec![0usize; p.tasks()];
                for (g, members) in groups.iter().enumerate() {
                    let node = place.apply(g);
                    for (c, &t) in members.iter().enumerate() {
                        fwd[t] = node * k + c;
                    }
                }
                cands.push(score(
                    strategy::perm(fwd),
                    format!("grown groups, {} of the groups, refined", s.name()),
                ));
            }
        }
    }
    if p.tasks() <= super::multilevel::EXHAUSTIVE_TASKS {
        let lt0 = starts
            .iter()
            .map(|s| s.metrics.max_link_time)
            .fold(f64::INFINITY, f64::min);
        if let Some(map) = super::multilevel::exhaustive(p, m, lt0) {
            cands.push(score(map, "every mapping enumerated".into()));
        }
    }
    if p.grid_spec().is_none() && m.nodes() > 1 {
        for (name, map) in super::multilevel::candidates(p, m, 3, &mut rng, deadline)? {
            cands.push(score(map, name));
        }
    }
    // refine the best candidates (and starts) at the task level, unless one already
    // meets the lower bound
    let mut pool: Vec<Scored> = starts.to_vec();
    pool.extend(cands);
    let mut by_hb: Vec<usize> = (0..pool.len()).collect();
    by_hb.sort_by_key(|&i| (pool[i].metrics.hop_bytes, i));
    let at_bound = pool
        .iter()
        .any(|s| s.metrics.hop_bytes <= s.metrics.hop_bytes_bound);
    let mut refined = Vec::new();
    // large patterns: one candidate, one pass (the mapping of 10⁵ tasks stays
    // well under a second)
    let (few, passes) = if p.tasks() > 16_384 {
        (1, 1)
    } else if p.tasks() > 2048 {
        (1, 20)
    } else {
        (3, 20)
    };
    for &i in by_hb.iter().take(if at_bound { 0 } else { few }) {
        if Instant::now() >= deadline {
            break;
        }
        let mut map = pool[i].map.clone();
        if refine(p, m, &mut map, &mut rng, deadline, passes) {
            refined.push(score(map, format!("{} + swaps", pool[i].origin)));
        }
    }
    pool.extend(refined);
    let tried = pool.len();
    let lowest_hb = pool
        .iter()
        .min_by_key(|s| s.metrics.hop_bytes)
        .cloned()
        .expect("at least one candidate");
    let (mut best, mut dominates_starts) = choose(starts, pool);
    let hb0 = starts
        .iter()
        .map(|s| s.metrics.hop_bytes)
        .min()
        .unwrap_or(0);
    let lt0 = starts
        .iter()
        .map(|s| s.metrics.max_link_time)
        .fold(f64::INFINITY, f64::min);
    if !dominates_starts && !starts.is_empty() {
        // search from the chosen mapping for one within both targets
        let mut map = best.map.clone();
        if balance(p, m, &mut map, hb0, lt0, &mut rng, deadline) {
            let s = score(map, format!("{} + balancing swaps", best.origin));
            if s.metrics.hop_bytes <= hb0 && s.metrics.max_link_time <= lt0 * (1.0 + 1e-12) {
                best = s;
                dominates_starts = true;
            }
        }
    } else if lowest_hb.metrics.hop_bytes < best.metrics.hop_bytes && lt0.is_finite() {
        // a candidate with fewer hop-bytes but a busier link: try to bring its busiest
        // link down to the best start's while keeping it below the chosen hop-bytes
        let mut map = lowest_hb.map.clone();
        let target = best.metrics.hop_bytes - 1;
        if balance(p, m, &mut map, target, lt0, &mut rng, deadline) {
            let s = score(map, format!("{} + balancing swaps", lowest_hb.origin));
            if s.metrics.hop_bytes < best.metrics.hop_bytes
                && s.metrics.max_link_time <= lt0 * (1.0 + 1e-12)
            {
                best = s;
            }
        }
    }
    let exact = best.origin.starts_with("every mapping enumerated");
    if p.grid_spec().is_none() && dominates_starts && !exact {
        best = super::multilevel::lower_busiest_link(p, m, best, (hb0, lt0), &mut rng, deadline);
    }
    if dominates_starts || starts.is_empty() {
        let patience = super::anytime::patience(opts.budget);
        best = super::anytime::improve(p, m, best, opts.seed, deadline, patience, max_rounds).0;
    }
    if m.node_tree().is_some() && Instant::now() < deadline {
        let mut map = best.map.clone();
        if arrange_in_nodes(p, m, &mut map, deadline) {
            best = score(map, format!("{}, cores arranged", best.origin));
        }
    }
    Ok(Optimised {
        best,
        dominates_starts,
        tried,
    })
}

/// Every baseline that applies, scored: the usual starts of [`optimise`].
///
/// # Errors
/// As [`strategy::baseline`].
pub(crate) fn baseline_starts(p: &Pattern, m: &MapMachine) -> Result<Vec<Scored>> {
    let mut starts = Vec::new();
    for s in Strategy::BASELINES {
        if let Some(map) = baseline_until(s, p, m, None)? {
            starts.push(Scored {
                origin: s.name().into(),
                metrics: evaluate(p, m, &map),
                map,
            });
        }
    }
    Ok(starts)
}

/// The optimiser's mappings of a recognised grid (its best and its starts), renamed
/// to the pattern's tasks: pattern task `h.task[i]` goes where grid task `i` goes.
fn hidden_grid_candidates(
    h: &super::recognise::HiddenGrid,
    m: &MapMachine,
    seed: u64,
    budget: Duration,
) -> Result<Vec<(String, Perm)>> {
    let gp = Pattern::grid(&h.spec)?;
    let starts = baseline_starts(&gp, m)?;
    let o = optimise(&gp, m, &starts, &Options { seed, budget })?;
    let dims: Vec<String> = h.spec.dims.iter().map(usize::to_string).collect();
    let rename = |map: &Perm| {
        let mut fwd = vec![0usize; h.task.len()];
        for (i, &t) in h.task.iter().enumerate() {
            fwd[t] = map.apply(i);
        }
        strategy::perm(fwd)
    };
    let mut out = vec![(
        format!("recognised {} grid: {}", dims.join("x"), o.best.origin),
        rename(&o.best.map),
    )];
    for s in &starts {
        out.push((
            format!("recognised {} grid: {}", dims.join("x"), s.origin),
            rename(&s.map),
        ));
    }
    Ok(out)
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

/// Splits the tasks into groups of `k` (their count must be a multiple of `k`) by
/// greedy growth: a group starts at the first unassigned task in breadth-first order
/// from a far task and repeatedly takes the unassigned task with the most bytes to and
/// from the group so far (ties: the earliest in that order).
///
/// # Complexity
/// `O((n + m) log m)` for `n` tasks and `m` messages.
fn graph_groups(p: &Pattern, k: usize) -> Vec<Vec<usize>> {
    use std::collections::{BinaryHeap, VecDeque};
    let n = p.tasks();
    let (off, adj) = p.undirected();
    // a breadth-first order from a far task (covering every component)
    let bfs = |start: usize, seen: &mut Vec<bool>, order: &mut Vec<usize>| {
        let mut q = VecDeque::from([start]);
        seen[start] = true;
        while let Some(u) = q.pop_front() {
            order.push(u);
            for &(v, _) in &adj[off[u]..off[u + 1]] {
                if !std::mem::replace(&mut seen[v as usize], true) {
                    q.push_back(v as usize);
                }
            }
        }
    };
    let mut seen = vec![false; n];
    let mut first = Vec::with_capacity(n);
    bfs(0, &mut seen, &mut first);
    let far = *first.last().expect("at least one task");
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    bfs(far, &mut seen, &mut order);
    for t in 0..n {
        if !seen[t] {
            bfs(t, &mut seen, &mut order);
        }
    }
    let mut rank = vec![0usize; n];
    for (i, &t) in order.iter().enumerate() {
        rank[t] = i;
    }
    let mut assigned = vec![false; n];
    let mut conn = vec![0u64; n];
    let mut touched: Vec<usize> = Vec::new();
    let mut groups = Vec::with_capacity(n / k);
    let mut cursor = 0;
    while groups.len() < n / k {
        let mut g = Vec::with_capacity(k);
        let mut heap: BinaryHeap<(u64, std::cmp::Reverse<usize>)> = BinaryHeap::new();
        for &t in &touched {
            conn[t] = 0;
        }
        touched.clear();
        while g.len() < k {
            let next = loop {
                match heap.pop() {
                    Some((c, std::cmp::Reverse(r))) => {
                        let t = order[r];
                        if !assigned[t] && c == conn[t] {
                            break t;
                        }
                    }
                    None => {
                        while assigned[order[cursor]] {
                            cursor += 1;
                        }
                        break order[cursor];
                    }
                }
            };
            assigned[next] = true;
            g.push(next);
            for &(v, w) in &adj[off[next]..off[next + 1]] {
                let v = v as usize;
                if !assigned[v] {
                    if conn[v] == 0 {
                        touched.push(v);
                    }
                    conn[v] = conn[v].saturating_add(w);
                    heap.push((conn[v], std::cmp::Reverse(rank[v])));
                }
            }
        }
        groups.push(g);
    }
    groups
}

/// The grid of tiles of shape `t`: extent `dims/t`, bytes between neighbouring tiles
/// `bytes_d · k/t_d`.
pub(crate) fn tile_grid(g: &CartGrid, t: &[usize]) -> Result<CartGrid> {
    let k: usize = t.iter().product();
    CartGrid::new(
        g.dims.iter().zip(t).map(|(d, t)| d / t).collect(),
        g.periodic.clone(),
        (0..t.len())
            .map(|d| g.bytes[d].saturating_mul((k / t[d]) as u64))
            .collect(),
    )
}

/// Task mapping from a placement of tiles (tile-grid task → node).
pub(super) fn expand_tiles(g: &CartGrid, t: &[usize], place: &Perm, k: usize) -> Perm {
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

/// One factor of a torus dimension in a product embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Factor {
    /// Torus dimension.
    dim: usize,
    /// Number of positions.
    size: usize,
    /// How the digit becomes a coordinate.
    kind: Part,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    /// The whole ring: coordinate = digit.
    Whole,
    /// The high digit of a block split: coordinate += digit · `0`.
    Hi(usize),
    /// The low digit of a block split: coordinate += digit.
    Lo,
    /// The two halves of a 4-ring in Gray order: (hi, lo) → 0, 1, 3, 2 … see below.
    GrayHi,
    /// See [`Part::GrayHi`].
    GrayLo,
}

/// An embedding (factor groups, one per grid dimension) and its weighted hop-bytes.
type ScoredEmbedding = (f64, Vec<Vec<Factor>>);

/// The ways to cut a torus dimension of extent `e` into factors.
fn dim_options(d: usize, e: usize) -> Vec<Vec<Factor>> {
    let mut v = vec![vec![Factor {
        dim: d,
        size: e,
        kind: Part::Whole,
    }]];
    if e == 4 {
        v.push(vec![
            Factor {
                dim: d,
                size: 2,
                kind: Part::GrayHi,
            },
            Factor {
                dim: d,
                size: 2,
                kind: Part::GrayLo,
            },
        ]);
    }
    for a in 2..e {
        if e % a == 0 {
            v.push(vec![
                Factor {
                    dim: d,
                    size: a,
                    kind: Part::Hi(e / a),
                },
                Factor {
                    dim: d,
                    size: e / a,
                    kind: Part::Lo,
                },
            ]);
        }
    }
    v
}

/// Product embeddings of a grid (one task per node) into a whole torus (module
/// docs): every way to cut the torus dimensions into factors (whole rings, block
/// splits `coordinate = hi·b + lo`, the Gray split of a 4-ring), to assign the
/// factors to grid dimensions whose extents they multiply to, and to order them
/// (boustrophedon, outer first). Returns the `keep` best by bandwidth-weighted
/// hop-bytes and the `keep / 2` best by largest link time, as `(description,
/// placement)`; empty when the machine is not a whole torus with one node per
/// coordinate.
pub(super) fn embeddings(
    q: &CartGrid,
    qp: &Pattern,
    m1: &MapMachine,
    keep: usize,
    deadline: Instant,
) -> Vec<(String, Perm)> {
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
    let options: Vec<Vec<Vec<Factor>>> = tdims
        .iter()
        .enumerate()
        .filter(|&(_, &e)| e > 1)
        .map(|(d, &e)| dim_options(d, e as usize))
        .collect();
    let w = m1.hop_weights();
    let cells = q.tasks();
    let mut found: Vec<(f64, Vec<Vec<Factor>>)> = Vec::new();
    let mut memo: std::collections::HashMap<(Vec<Factor>, usize), f64> = Default::default();
    // the best of each assignment of torus dimensions to grid dimensions, so that
    // link loads are compared across assignments, not only among near-ties in
    // weighted hop-bytes
    let mut by_sig: std::collections::BTreeMap<Vec<Vec<usize>>, ScoredEmbedding> =
        Default::default();
    let mut choice = vec![0usize; options.len()];
    let mut budget = 20_000usize;
    'outer: loop {
        if Instant::now() >= deadline {
            break;
        }
        let factors: Vec<Factor> = options
            .iter()
            .zip(&choice)
            .flat_map(|(o, &c)| o[c].iter().copied())
            .collect();
        let nf = factors.len();
        if nf <= 8 {
            let mut assign = vec![0usize; nf];
            loop {
                budget = budget.saturating_sub(1);
                if budget == 0 {
                    break 'outer;
                }
                let mut prod = vec![1usize; ng];
                for (f, &a) in factors.iter().zip(&assign) {
                    prod[a] *= f.size;
                }
                if prod == q.dims {
                    for orders in factor_orders(&assign, ng) {
                        let groups: Vec<Vec<Factor>> = orders
                            .iter()
                            .map(|o| o.iter().map(|&i| factors[i]).collect())
                            .collect();
                        // separable: each grid dimension's steps move only its own
                        // factors
                        let whb: f64 = groups
                            .iter()
                            .enumerate()
                            .map(|(i, g)| {
                                2.0 * q.bytes[i] as f64
                                    * (cells / q.dims[i]) as f64
                                    * *memo.entry((g.clone(), i)).or_insert_with(|| {
                                        line_cost(g, q.dims[i], q.periodic[i], tdims, &w)
                                    })
                            })
                            .sum();
                        // which torus dimensions serve which grid dimension
                        let sig: Vec<Vec<usize>> = groups
                            .iter()
                            .map(|g| {
                                let mut d: Vec<usize> = g.iter().map(|f| f.dim).collect();
                                d.sort_unstable();
                                d.dedup();
                                d
                            })
                            .collect();
                        if by_sig
                            .get(&sig)
                            .is_none_or(|b: &(f64, Vec<Vec<Factor>>)| whb < b.0)
                        {
                            by_sig.insert(sig, (whb, groups.clone()));
                        }
                        found.push((whb, groups));
                        if found.len() > 4096 {
                            found.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("finite"));
                            found.truncate(4 * keep);
                        }
                    }
                }
                if !odometer(&mut assign, ng) {
                    break;
                }
            }
        }
        let mut i = 0;
        loop {
            if i == choice.len() {
                break 'outer;
            }
            choice[i] += 1;
            if choice[i] < options[i].len() {
                break;
            }
            choice[i] = 0;
            i += 1;
        }
    }
    found.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("finite"));
    found.truncate(4 * keep);
    for (_, v) in by_sig {
        if !found.iter().any(|f| f.1 == v.1) {
            found.push(v);
        }
    }
    let mut scored: Vec<(f64, f64, String, Perm)> = found
        .into_iter()
        .map(|(whb, groups)| {
            let map = place(q, &groups, nt, tdims, t, &node_at);
            let lt = evaluate(qp, m1, &map).max_link_time;
            (whb, lt, describe(&groups), map)
        })
        .collect();
    let mut out: Vec<(String, Perm)> = Vec::new();
    for f in scored.iter().take(keep) {
        out.push((f.2.clone(), f.3.clone()));
    }
    scored.sort_by(|a, b| (a.1, a.0).partial_cmp(&(b.1, b.0)).expect("finite"));
    for f in scored.iter().take(keep / 2) {
        if !out.iter().any(|o| o.1 == f.3) {
            out.push((f.2.clone(), f.3.clone()));
        }
    }
    out
}

/// Weighted torus distance summed over the steps `x → x+1` of one grid line whose
/// dimension is walked through the factors `g` (and `G−1 → 0` when periodic).
fn line_cost(g: &[Factor], extent: usize, periodic: bool, tdims: &[u32], w: &[f64]) -> f64 {
    let sizes: Vec<usize> = g.iter().map(|f| f.size).collect();
    let coords = |x: usize| -> Vec<(usize, i64)> {
        // per factor: its torus dimension and its contribution (Gray halves as bits)
        let dg = snake(x, &sizes);
        g.iter()
            .zip(dg)
            .map(|(f, d)| {
                let d = d as i64;
                let v = match f.kind {
                    Part::Hi(b) => d * b as i64,
                    _ => d,
                };
                (f.dim, v)
            })
            .collect()
    };
    let step = |a: usize, b: usize| -> f64 {
        let (ca, cb) = (coords(a), coords(b));
        let mut dims: Vec<usize> = g.iter().map(|f| f.dim).collect();
        dims.sort_unstable();
        dims.dedup();
        let mut cost = 0.0;
        for &d in &dims {
            let e = i64::from(tdims[d]);
            let gray_hi = g.iter().any(|f| f.dim == d && f.kind == Part::GrayHi);
            let gray_lo = g.iter().any(|f| f.dim == d && f.kind == Part::GrayLo);
            let sum = |c: &[(usize, i64)]| -> i64 {
                c.iter()
                    .zip(g)
                    .filter(|((dd, _), _)| *dd == d)
                    .map(|((_, v), f)| if f.kind == Part::GrayHi { 2 * v } else { *v })
                    .sum()
            };
            let (va, vb) = (sum(&ca), sum(&cb));
            let dist = if gray_hi && gray_lo {
                let pos = |v: i64| if v / 2 == 0 { v % 2 } else { 3 - v % 2 };
                let x = (pos(va) - pos(vb)).rem_euclid(e);
                x.min(e - x)
            } else if gray_hi || gray_lo {
                // one Gray half here, the other elsewhere: any change is one hop
                i64::from(va != vb)
            } else {
                let x = (va - vb).rem_euclid(e);
                x.min(e - x)
            };
            cost += dist as f64 * w[d];
        }
        cost
    };
    let mut c: f64 = (0..extent.saturating_sub(1)).map(|x| step(x, x + 1)).sum();
    if periodic && extent > 1 {
        c += step(extent - 1, 0);
    }
    c
}

/// Advances an assignment of factors to grid dimensions; `false` after the last.
fn odometer(assign: &mut [usize], ng: usize) -> bool {
    for a in assign.iter_mut() {
        *a += 1;
        if *a < ng {
            return true;
        }
        *a = 0;
    }
    false
}

/// The placement given by factor groups (one group per grid dimension).
fn place(
    q: &CartGrid,
    groups: &[Vec<Factor>],
    nt: usize,
    tdims: &[u32],
    t: &copr_topology::Torus,
    node_at: &[usize],
) -> Perm {
    let mut fwd = vec![0usize; q.tasks()];
    let mut coord = vec![0u32; nt];
    let mut gray = vec![false; nt];
    let sizes: Vec<Vec<usize>> = groups
        .iter()
        .map(|g| g.iter().map(|f| f.size).collect())
        .collect();
    for (task, slot) in fwd.iter_mut().enumerate() {
        let c = q.coords(task);
        coord.iter_mut().for_each(|x| *x = 0);
        gray.iter_mut().for_each(|x| *x = false);
        for (i, grp) in groups.iter().enumerate() {
            for (f, dg) in grp.iter().zip(snake(c[i], &sizes[i])) {
                let dg = dg as u32;
                match f.kind {
                    Part::Whole | Part::Lo => coord[f.dim] += dg,
                    Part::Hi(b) => coord[f.dim] += dg * b as u32,
                    Part::GrayHi => {
                        coord[f.dim] += 2 * dg;
                        gray[f.dim] = true;
                    }
                    Part::GrayLo => {
                        coord[f.dim] += dg;
                        gray[f.dim] = true;
                    }
                }
            }
        }
        for d in 0..nt {
            // (hi, lo) on a 4-ring: (0,0) 0, (0,1) 1, (1,1) 2, (1,0) 3 — one bit
            // changes per hop, wraparound included
            if gray[d] && tdims[d] == 4 {
                let (hi, lo) = (coord[d] / 2, coord[d] % 2);
                coord[d] = if hi == 0 { lo } else { 3 - lo };
            }
        }
        *slot = node_at[t.coord_index(&coord)];
    }
    strategy::perm(fwd)
}

fn describe(groups: &[Vec<Factor>]) -> String {
    groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|f| match f.kind {
                    Part::Whole => format!("{}", dim(f.dim)),
                    Part::Hi(_) => format!("{}/{}", dim(f.dim), f.size),
                    Part::Lo => format!("{}%{}", dim(f.dim), f.size),
                    Part::GrayHi => format!("{}hi", dim(f.dim)),
                    Part::GrayLo => format!("{}lo", dim(f.dim)),
                })
                .collect::<Vec<_>>()
                .join("·")
        })
        .collect::<Vec<_>>()
        .join(" | ")
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
/// `n` torus dimensions; at most `max_passes` passes, stopping early when one gains
/// less than 0.01 % or at `deadline`.
pub fn refine(
    p: &Pattern,
    m: &MapMachine,
    map: &mut Perm,
    rng: &mut SplitMix,
    deadline: Instant,
    max_passes: usize,
) -> bool {
    let n = p.tasks();
    if m.nodes() < 2 || n < 2 {
        return false;
    }
    let (off, adj) = p.undirected();
    let mut sw = Swaps::new(m, (&off, &adj), map);
    let mut order: Vec<usize> = (0..n).collect();
    let mut current = sw.total;
    for _pass in 0..max_passes {
        rng.shuffle(&mut order);
        let mut gain = 0.0;
        for (i, &u) in order.iter().enumerate() {
            if i % 256 == 0 && Instant::now() >= deadline {
                break;
            }
            if let Some((delta, _)) = sw.improve(u, current) {
                gain -= delta;
            }
        }
        current -= gain;
        if gain <= 1e-4 * current.max(1.0) || Instant::now() >= deadline {
            break;
        }
    }
    sw.finish(map)
}

/// Swap refinement around `seeds` only: the tasks of a work list, starting with
/// `seeds`, each swapped as in [`refine`]; a swap adds both tasks and their
/// neighbours to the list; at most `limit` tasks are looked at. `(off, adj)` is the
/// pattern's [`Pattern::undirected`] graph, `scale` the size of the weighted
/// hop-bytes (for the tolerance of a gain). Returns whether anything changed.
///
/// # Complexity
/// `O(n)` to start, then `O(limit·deg·(deg + c)·n)` at most, as [`refine`] per task.
pub(crate) fn refine_around(
    m: &MapMachine,
    (off, adj): (&[usize], &[(u32, u64)]),
    map: &mut Perm,
    seeds: &[usize],
    (limit, scale): (usize, f64),
) -> bool {
    let n = off.len() - 1;
    if m.nodes() < 2 || n < 2 {
        return false;
    }
    let mut sw = Swaps::lazy(m, (off, adj), map);
    let mut queued = vec![false; n];
    let mut list: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for &u in seeds {
        if !std::mem::replace(&mut queued[u], true) {
            list.push_back(u);
        }
    }
    let current = scale;
    let mut seen = 0;
    while let Some(u) = list.pop_front() {
        queued[u] = false;
        seen += 1;
        if seen > limit {
            break;
        }
        if let Some((_, x)) = sw.improve(u, current) {
            for t in [u, x] {
                for v in std::iter::once(t).chain(
                    sw.adj[sw.off[t]..sw.off[t + 1]]
                        .iter()
                        .map(|e| e.0 as usize),
                ) {
                    if !std::mem::replace(&mut queued[v], true) {
                        list.push_back(v);
                    }
                }
            }
        }
    }
    sw.finish(map)
}

/// On one rank per node and at least [`BOUNDED_NODES`] nodes, a task with more than
/// [`BOUNDED_ABOVE`] target nodes tries only [`BOUNDED_TARGETS`] of them (its heaviest
/// partners' nodes): dense quotient graphs, such as a power-law graph's groups.
const BOUNDED_NODES: usize = 512;
const BOUNDED_ABOVE: usize = 32;
const BOUNDED_TARGETS: usize = 32;

/// The state of swap refinement: where every task is, and its cost there.
struct Swaps<'a> {
    m: &'a MapMachine,
    rpn: usize,
    off: &'a [usize],
    adj: &'a [(u32, u64)],
    dist: Dist<'a>,
    slot: Vec<usize>,
    task_at: Vec<usize>,
    /// Each task's cost on its own node, recomputed when it or a neighbour moves.
    here: Vec<f64>,
    stale: Vec<bool>,
    /// Bytes between the task being moved and each other task (dense, reset after use).
    wu: Vec<f64>,
    targets: Vec<usize>,
    /// Whether each node is in `targets` (all false between calls).
    listed: Vec<bool>,
    /// Whether only the nodes where the moved task costs less are tried.
    only_gaining: bool,
    /// The weighted hop-bytes at the start.
    total: f64,
    changed: bool,
}

impl<'a> Swaps<'a> {
    /// Every task's cost computed now, and their sum.
    fn new(m: &'a MapMachine, graph: (&'a [usize], &'a [(u32, u64)]), map: &Perm) -> Self {
        let mut sw = Self::lazy(m, graph, map);
        let n = sw.here.len();
        sw.here = (0..n).map(|u| sw.cost_at(u, sw.slot[u] / sw.rpn)).collect();
        sw.stale.fill(false);
        sw.total = sw.here.iter().sum::<f64>() / 2.0;
        sw
    }

    /// Every task's cost computed when first needed; `total` left at 0.
    fn lazy(m: &'a MapMachine, (off, adj): (&'a [usize], &'a [(u32, u64)]), map: &Perm) -> Self {
        let n = off.len() - 1;
        Swaps {
            m,
            rpn: m.ranks_per_node(),
            off,
            adj,
            dist: Dist::new(m),
            slot: map.forward().to_vec(),
            task_at: map.inverse().to_vec(),
            here: vec![0.0; n],
            stale: vec![true; n],
            wu: vec![0.0; n],
            targets: Vec::new(),
            listed: vec![false; m.nodes()],
            only_gaining: m.ranks_per_node() > 1 && n > 2048,
            total: 0.0,
            changed: false,
        }
    }

    /// Task `u`'s bytes times distance if it were on node `a`.
    fn cost_at(&self, u: usize, a: usize) -> f64 {
        self.adj[self.off[u]..self.off[u + 1]]
            .iter()
            .map(|&(v, w)| w as f64 * self.dist.get(a, self.slot[v as usize] / self.rpn))
            .sum()
    }

    fn fresh(&mut self, t: usize) {
        if std::mem::take(&mut self.stale[t]) {
            self.here[t] = self.cost_at(t, self.slot[t] / self.rpn);
        }
    }

    /// The best swap of `u` with a task on the node of one of its neighbours (on one
    /// rank per node, also the nodes next to those), applied when it lowers the
    /// weighted hop-bytes (`current` sets the tolerance): `(change, partner)`.
    fn improve(&mut self, u: usize, current: f64) -> Option<(f64, usize)> {
        let (m, rpn) = (self.m, self.rpn);
        let a = self.slot[u] / rpn;
        let mut targets = std::mem::take(&mut self.targets);
        targets.clear();
        for &(v, _) in &self.adj[self.off[u]..self.off[u + 1]] {
            let b = self.slot[v as usize] / rpn;
            if b != a && !std::mem::replace(&mut self.listed[b], true) {
                targets.push(b);
            }
        }
        let small_graph = !matches!(m.kind(), NetKind::Torus(_)) && m.nodes() <= 64;
        if rpn == 1 && small_graph {
            // few nodes off a torus: every node is a candidate
            for &b in &targets {
                self.listed[b] = false;
            }
            targets.clear();
            targets.extend((0..m.nodes()).filter(|&x| x != a));
        } else if rpn == 1 && m.nodes() >= BOUNDED_NODES && targets.len() > BOUNDED_ABOVE {
            // a dense quotient on many nodes: only the nodes u exchanges the most
            // bytes with (a bounded candidate list; the whole list costs O(deg²))
            for &b in &targets {
                self.listed[b] = false;
            }
            targets.clear();
            let mut heavy: Vec<(u64, usize)> = self.adj[self.off[u]..self.off[u + 1]]
                .iter()
                .map(|&(v, w)| (w, self.slot[v as usize] / rpn))
                .filter(|&(_, b)| b != a)
                .collect();
            heavy.select_nth_unstable_by(BOUNDED_TARGETS - 1, |x, y| y.cmp(x));
            targets.extend(heavy[..BOUNDED_TARGETS].iter().map(|&(_, b)| b));
        } else if rpn == 1 {
            let base = targets.len();
            for j in 0..base {
                let listed = &mut self.listed;
                self.dist.neighbours(targets[j], |x| {
                    if x != a && !std::mem::replace(&mut listed[x], true) {
                        targets.push(x);
                    }
                });
            }
        }
        self.fresh(u);
        for &b in &targets {
            for i in b * rpn..(b + 1) * rpn {
                self.fresh(self.task_at[i]);
            }
        }
        let cu_a = self.here[u];
        for &(v, w) in &self.adj[self.off[u]..self.off[u + 1]] {
            self.wu[v as usize] = w as f64;
        }
        let tol = 1e-9 * (1.0 + current.abs());
        let mut best = (0.0f64, usize::MAX);
        for &b in &targets {
            let cu_b = self.cost_at(u, b);
            // large patterns on several ranks per node: only nodes u itself would
            // rather be on (a swap that helps only the partner is mostly found from the
            // partner's side)
            if self.only_gaining && cu_b >= cu_a - tol {
                continue;
            }
            let dab = self.dist.get(a, b);
            for &x in &self.task_at[b * rpn..(b + 1) * rpn] {
                let delta =
                    cu_b - cu_a + self.cost_at(x, a) - self.here[x] + 2.0 * self.wu[x] * dab;
                if delta < best.0 - tol {
                    best = (delta, x);
                }
            }
        }
        for &(v, _) in &self.adj[self.off[u]..self.off[u + 1]] {
            self.wu[v as usize] = 0.0;
        }
        for &b in &targets {
            self.listed[b] = false;
        }
        self.targets = targets;
        if best.1 == usize::MAX {
            return None;
        }
        let x = best.1;
        swap_tasks(&mut self.slot, &mut self.task_at, u, x);
        self.changed = true;
        for t in [u, x] {
            self.stale[t] = true;
            for &(v, _) in &self.adj[self.off[t]..self.off[t + 1]] {
                self.stale[v as usize] = true;
            }
        }
        Some(best)
    }

    /// Writes the mapping back if anything moved; whether it did.
    fn finish(self, map: &mut Perm) -> bool {
        if self.changed {
            *map = Perm::from_forward(self.slot).expect("swaps keep a bijection");
        }
        self.changed
    }
}

/// Random swaps of two tasks on different nodes, accepted when they lower
/// `max(0, HB/hb0 − 1) + max(0, T/lt0 − 1)` (T the largest link time), or keep it and
/// lower the hop-bytes; stops when both targets are met, after `min(40·p, 60000)`
/// tries, or at `deadline`. Half the time the first task is one with a message through
/// the busiest link (refreshed every 256 tries) and the second sits on the node of one
/// of the first's neighbours. Returns whether the targets were met.
///
/// # Complexity
/// Per try `O(deg·h + L)` for links `L` (the largest load is rescanned); every 256
/// tries `O(m·h)`.
pub(super) fn balance(
    p: &Pattern,
    m: &MapMachine,
    map: &mut Perm,
    hb0: u128,
    lt0: f64,
    rng: &mut SplitMix,
    deadline: Instant,
) -> bool {
    let tries = (40 * p.tasks()).min(60_000);
    balance_tries(p, m, map, (hb0, lt0), rng, deadline, tries)
}

/// [`balance`] with at most `tries` tries.
pub(super) fn balance_tries(
    p: &Pattern,
    m: &MapMachine,
    map: &mut Perm,
    (hb0, lt0): (u128, f64),
    rng: &mut SplitMix,
    deadline: Instant,
    tries: usize,
) -> bool {
    let n = p.tasks();
    let rpn = m.ranks_per_node();
    if m.nodes() < 2 || !(2..=1 << 17).contains(&n) {
        return false;
    }
    let inv = m.link_inv_bandwidths();
    // directed messages per task, both ways, for load updates
    let mut inc: Vec<Vec<(u32, u32, u64)>> = vec![Vec::new(); n];
    for e in p.edges() {
        inc[e.src as usize].push((e.src, e.dst, e.bytes));
        inc[e.dst as usize].push((e.src, e.dst, e.bytes));
    }
    let mut slot: Vec<usize> = map.forward().to_vec();
    let mut at: Vec<usize> = map.inverse().to_vec();
    let mut load = vec![0f64; m.num_links()];
    let mut hb: u128 = 0;
    for e in p.edges() {
        let (a, b) = (slot[e.src as usize] / rpn, slot[e.dst as usize] / rpn);
        hb += u128::from(e.bytes) * u128::from(m.hops(a, b));
        m.for_route(a, b, |l| load[l] += e.bytes as f64);
    }
    let lt0 = lt0.max(f64::MIN_POSITIVE);
    let hbf = (hb0.max(1)) as f64;
    let penalty =
        |hb: u128, t: f64| -> f64 { (hb as f64 / hbf - 1.0).max(0.0) + (t / lt0 - 1.0).max(0.0) };
    // the largest link time and a link that has it
    let scan = |load: &[f64]| -> (f64, usize) {
        let mut best = (0.0, 0);
        for (l, (x, i)) in load.iter().zip(&inv).enumerate() {
            if x * i > best.0 {
                best = (x * i, l);
            }
        }
        best
    };
    // after loads on `touched` changed: again the largest (a rescan only when the
    // link that had it was touched)
    let rescore = |load: &[f64], touched: &[usize], (t, l): (f64, usize)| -> (f64, usize) {
        if touched.contains(&l) {
            return scan(load);
        }
        let mut best = (t, l);
        for &k in touched {
            if load[k] * inv[k] > best.0 {
                best = (load[k] * inv[k], k);
            }
        }
        best
    };
    let mut top = scan(&load);
    let mut pen = penalty(hb, top.0);
    let mut moved: Vec<(u32, u32, u64)> = Vec::new();
    let mut touched: Vec<usize> = Vec::new();
    // the tasks through the busiest link are listed again every `every` tries
    let every = if n <= 2048 { 256 } else { 2048 };
    // tasks with a message through the busiest link, refreshed now and then
    let mut hot: Vec<usize> = Vec::new();
    for tr in 0..tries {
        if pen <= 1e-12 {
            break;
        }
        if tr % 64 == 0 && Instant::now() >= deadline {
            break;
        }
        if tr % every == 0 {
            let lstar = (0..load.len())
                .max_by(|&a, &b| {
                    (load[a] * inv[a])
                        .partial_cmp(&(load[b] * inv[b]))
                        .expect("finite")
                })
                .unwrap_or(0);
            hot.clear();
            for e in p.edges() {
                let (a, b) = (slot[e.src as usize] / rpn, slot[e.dst as usize] / rpn);
                let mut through = false;
                m.for_route(a, b, |l| through |= l == lstar);
                if through {
                    hot.push(e.src as usize);
                    hot.push(e.dst as usize);
                }
            }
        }
        let r = rng.next_u64();
        let u = if !hot.is_empty() && r % 2 == 0 {
            hot[(r / 2 % hot.len() as u64) as usize]
        } else {
            (r / 2 % n as u64) as usize
        };
        // a partner on the node of one of u's neighbours, or anywhere
        let r = rng.next_u64();
        let x = if r % 2 == 0 && !inc[u].is_empty() {
            let e = inc[u][(r / 2 % inc[u].len() as u64) as usize];
            let v = if e.0 as usize == u { e.1 } else { e.0 } as usize;
            let node = slot[v] / rpn;
            let s = node * rpn + (rng.next_u64() % rpn as u64) as usize;
            at[s]
        } else {
            (r / 2 % n as u64) as usize
        };
        if slot[u] / rpn == slot[x] / rpn {
            continue;
        }
        moved.clear();
        moved.extend(inc[u].iter().copied());
        moved.extend(
            inc[x]
                .iter()
                .filter(|e| e.0 as usize != u && e.1 as usize != u),
        );
        let apply =
            |slot: &[usize], load: &mut [f64], touched: &mut Vec<usize>, sign: f64| -> i128 {
                let mut dh: i128 = 0;
                for &(a, b, w) in &moved {
                    let (na, nb) = (slot[a as usize] / rpn, slot[b as usize] / rpn);
                    dh += sign as i128 * i128::from(w) * i128::from(m.hops(na, nb));
                    m.for_route(na, nb, |l| {
                        load[l] += sign * w as f64;
                        touched.push(l);
                    });
                }
                dh
            };
        touched.clear();
        let d1 = apply(&slot, &mut load, &mut touched, -1.0);
        swap_tasks(&mut slot, &mut at, u, x);
        let d2 = apply(&slot, &mut load, &mut touched, 1.0);
        let new_hb = (hb as i128 + d1 + d2) as u128;
        let new_top = rescore(&load, &touched, top);
        let new_pen = penalty(new_hb, new_top.0);
        if new_pen < pen - 1e-12 || (new_pen <= pen + 1e-12 && new_hb < hb) {
            pen = new_pen;
            hb = new_hb;
            top = new_top;
        } else {
            apply(&slot, &mut load, &mut touched, -1.0);
            swap_tasks(&mut slot, &mut at, u, x);
            apply(&slot, &mut load, &mut touched, 1.0);
            top = rescore(&load, &touched, new_top);
        }
    }
    *map = Perm::from_forward(slot).expect("swaps keep a bijection");
    pen <= 1e-12
}

/// Inside every node, swaps the cores of two tasks while that lowers
/// `Σ bytes·inv_bandwidth(level the two cores share)` over the node's internal
/// messages (the node tree's level costs). Nodes keep their tasks, so no network
/// metric changes. Returns whether anything moved.
///
/// # Complexity
/// Per node and pass `O(k²·deg)` for `k` ranks per node; at most 8 passes.
fn arrange_in_nodes(p: &Pattern, m: &MapMachine, map: &mut Perm, deadline: Instant) -> bool {
    let Some(tree) = m.node_tree() else {
        return false;
    };
    let rpn = m.ranks_per_node();
    if rpn < 2 {
        return false;
    }
    let (off, adj) = p.undirected();
    let mut slot = map.forward().to_vec();
    let mut at = map.inverse().to_vec();
    // cost of task u on core c against its node-mates, leaving out task `skip`
    let contrib = |slot: &[usize], u: usize, c: usize, skip: usize| -> f64 {
        let node = slot[u] / rpn;
        adj[off[u]..off[u + 1]]
            .iter()
            .filter(|&&(v, _)| v as usize != skip && slot[v as usize] / rpn == node)
            .map(|&(v, w)| w as f64 * tree.link(c, slot[v as usize] % rpn).inv_bandwidth)
            .sum()
    };
    let mut moved = false;
    for node in 0..m.nodes() {
        if node % 64 == 0 && Instant::now() >= deadline {
            break;
        }
        for _pass in 0..8 {
            let mut improved = false;
            for i in 0..rpn {
                for j in i + 1..rpn {
                    let (u, x) = (at[node * rpn + i], at[node * rpn + j]);
                    let before = contrib(&slot, u, i, x) + contrib(&slot, x, j, u);
                    let after = contrib(&slot, u, j, x) + contrib(&slot, x, i, u);
                    if after < before * (1.0 - 1e-12) - 1e-300 {
                        swap_tasks(&mut slot, &mut at, u, x);
                        improved = true;
                        moved = true;
                    }
                }
            }
            if !improved {
                break;
            }
        }
    }
    if moved {
        *map = Perm::from_forward(slot).expect("swaps keep a bijection");
    }
    moved
}

/// Exchanges the slots of tasks `u` and `x` (`slot`: task → slot, `at`: slot → task).
fn swap_tasks(slot: &mut [usize], at: &mut [usize], u: usize, x: usize) {
    let (su, sx) = (slot[u], slot[x]);
    slot[u] = sx;
    slot[x] = su;
    at[sx] = u;
    at[su] = x;
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
        let w = m.hop_weights();
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
    fn separable_score_equals_placed_hop_bytes() {
        // 16 x 8 grid (open along 1) on a 4 x 4 x 8 torus with unequal bandwidths
        let mut params = TorusParams::new(vec![4, 4, 8]);
        params.link_bandwidth = vec![2.0, 1.0, 3.0];
        let m = MapMachine::torus(Torus::full(params).unwrap(), 1).unwrap();
        let q = CartGrid::new(vec![16, 8], vec![true, false], vec![3, 5]).unwrap();
        let qp = Pattern::grid(&q).unwrap();
        let NetKind::Torus(t) = m.kind() else {
            unreachable!()
        };
        let node_at: Vec<usize> = (0..t.num_coords()).collect();
        let w = m.hop_weights();
        let f = |dim, size, kind| Factor { dim, size, kind };
        let cases = vec![
            vec![
                vec![
                    f(0, 2, Part::GrayHi),
                    f(1, 4, Part::Whole),
                    f(0, 2, Part::GrayLo),
                ],
                vec![f(2, 8, Part::Whole)],
            ],
            vec![
                vec![
                    f(2, 2, Part::Hi(4)),
                    f(0, 4, Part::Whole),
                    f(1, 2, Part::Hi(2)),
                ],
                vec![f(2, 4, Part::Lo), f(1, 2, Part::Lo)],
            ],
            vec![
                vec![f(2, 4, Part::Hi(2)), f(0, 4, Part::Whole)],
                vec![f(1, 4, Part::Whole), f(2, 2, Part::Lo)],
            ],
        ];
        for groups in cases {
            let map = place(&q, &groups, 3, t.dims(), t, &node_at);
            let direct = strategy::weighted_hop_bytes(&qp, &m, &map);
            let sep: f64 = groups
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    2.0 * q.bytes[i] as f64
                        * (128 / q.dims[i]) as f64
                        * line_cost(g, q.dims[i], q.periodic[i], t.dims(), &w)
                })
                .sum();
            assert!(
                (direct - sep).abs() < 1e-9 * direct,
                "{} {direct} {sep}",
                describe(&groups)
            );
        }
    }

    #[test]
    fn cores_are_arranged_by_the_node_tree() {
        // one node, two packages of four cores; tasks 0-3 and 4-7 are two cliques,
        // placed interleaved over the packages: arranging puts each in one package
        let tree = copr_topology::NodeTree::from_shape(
            "pack:2 core:4",
            &copr_topology::LevelCosts::default(),
        )
        .unwrap();
        let m = MapMachine::flat(1, 8)
            .unwrap()
            .with_node_tree(tree)
            .unwrap();
        let mut edges = Vec::new();
        for g in [0u32, 4] {
            for a in g..g + 4 {
                for b in g..g + 4 {
                    if a != b {
                        edges.push(super::super::pattern::Edge {
                            src: a,
                            dst: b,
                            bytes: 10,
                        });
                    }
                }
            }
        }
        let p = Pattern::from_edges(8, edges, String::new()).unwrap();
        let mut map = Perm::from_forward(vec![0, 4, 1, 5, 2, 6, 3, 7]).unwrap();
        let far = |map: &Perm| evaluate(&p, &m, map).intra_levels.last().unwrap().bytes;
        // 4 of each clique's 6 pairs cross the packages, 10 bytes each way
        assert_eq!(far(&map), 2 * 4 * 2 * 10);
        let deadline = Instant::now() + Duration::from_secs(5);
        assert!(arrange_in_nodes(&p, &m, &mut map, deadline));
        assert_eq!(far(&map), 0);
        let pkg = |t: usize| map.apply(t) / 4;
        assert!((0..4).all(|t| pkg(t) == pkg(0)) && (4..8).all(|t| pkg(t) == pkg(4)));
    }

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
        let q = CartGrid::new(vec![8, 8], vec![true, true], vec![1, 1]).unwrap();
        let p = Pattern::grid(&q).unwrap();
        let best = embeddings(&q, &p, &m, 6, Instant::now() + Duration::from_secs(60))
            .into_iter()
            .map(|(_, e)| evaluate(&p, &m, &e))
            .min_by_key(|x| x.hop_bytes)
            .unwrap();
        assert_eq!(best.dilation_max, 1);
        assert_eq!(best.hop_bytes, p.total_bytes());
    }
}
