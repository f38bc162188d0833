//! Mapping strategies: each returns the slot of every task as a [`Perm`]
//! (`apply(task) = slot`, slot = node·ranks_per_node + core).

use std::collections::VecDeque;
use std::time::Instant;

use serde::Serialize;

use super::curve::hilbert_order;
use super::machine::{MapMachine, NetKind};
use super::pattern::{CartGrid, Pattern};
use crate::errors::MapError;
use copr::error::Result;
use copr::lap::Perm;

/// The strategies copr compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Task `t` on slot `t` (the launcher's default, Cray method 1).
    Packed,
    /// Tasks dealt to nodes in turn (Cray `MPICH_RANK_REORDER_METHOD=0`).
    RoundRobin,
    /// Round-robin, every other pass backwards (Cray method 2).
    Folded,
    /// Grid cells in node-sized tiles, tiles in row-major order (Cray `grid_order -c`).
    Tiles,
    /// Grid cells along a Hilbert curve onto nodes along a Hilbert curve of the torus.
    Hilbert,
    /// The CP2K paper's heuristic: Hilbert cells onto nodes ordered along the torus
    /// direction with the least (bandwidth-weighted) hop-bytes, only if it beats packed.
    Cp2k,
    /// Recursive bisection of the pattern and the machine together.
    Bisection,
    /// copr's optimiser: grouping into nodes, placement of the groups, refinement.
    Optimised,
}

impl Strategy {
    /// The baselines, in report order.
    pub const BASELINES: [Strategy; 7] = [
        Strategy::Packed,
        Strategy::RoundRobin,
        Strategy::Folded,
        Strategy::Tiles,
        Strategy::Hilbert,
        Strategy::Cp2k,
        Strategy::Bisection,
    ];

    /// Every strategy, in report order (the baselines, then the optimiser).
    pub const ALL: [Strategy; 8] = [
        Strategy::Packed,
        Strategy::RoundRobin,
        Strategy::Folded,
        Strategy::Tiles,
        Strategy::Hilbert,
        Strategy::Cp2k,
        Strategy::Bisection,
        Strategy::Optimised,
    ];

    /// The strategy called `name` ([`Strategy::name`]), if any.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// One line on what it does, for help texts.
    pub fn summary(self) -> &'static str {
        match self {
            Self::Packed => "task t on slot t (the launcher's default, Cray method 1)",
            Self::RoundRobin => "tasks dealt to nodes in turn (Cray method 0)",
            Self::Folded => "round-robin, every other pass backwards (Cray method 2)",
            Self::Tiles => "grid cells in node-sized tiles, tiles in row-major order",
            Self::Hilbert => "grid cells along a Hilbert curve onto nodes along a Hilbert curve of the torus",
            Self::Cp2k => "the CP2K paper's heuristic: Hilbert cells onto nodes along the best torus direction",
            Self::Bisection => "recursive bisection of the pattern and the machine together",
            Self::Optimised => "copr's optimiser: grouping into nodes, placement of the groups, refinement",
        }
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Packed => "packed",
            Self::RoundRobin => "round-robin",
            Self::Folded => "folded",
            Self::Tiles => "tiles",
            Self::Hilbert => "hilbert",
            Self::Cp2k => "cp2k",
            Self::Bisection => "bisection",
            Self::Optimised => "optimised",
        }
    }
}

/// Checks that the pattern fills the machine exactly.
///
/// # Errors
/// [`MapError`] naming both counts.
pub fn check_sizes(p: &Pattern, m: &MapMachine) -> Result<()> {
    if p.tasks() != m.slots() {
        return Err(MapError::TasksSlots {
            tasks: p.tasks(),
            slots: m.slots(),
            nodes: m.nodes(),
            ranks_per_node: m.ranks_per_node(),
        }
        .into());
    }
    Ok(())
}

/// Runs a baseline strategy. `Ok(None)` when it does not apply (tiles, Hilbert and
/// bisection of geometry need a grid pattern; the CP2K heuristic needs a torus).
/// [`Strategy::Optimised`] is [`super::optimise()`].
///
/// # Errors
/// [`MapError`] if the pattern does not fill the machine.
pub fn baseline(s: Strategy, p: &Pattern, m: &MapMachine) -> Result<Option<Perm>> {
    baseline_until(s, p, m, None)
}

/// [`baseline`] that keeps a deadline: a strategy that searches (the CP2K heuristic
/// tries every order of the torus directions, `ndims!` of them) stops at `deadline`
/// with the best it has found (after at least one try); the others take
/// O(tasks log tasks + edges) anyway.
pub(crate) fn baseline_until(
    s: Strategy,
    p: &Pattern,
    m: &MapMachine,
    deadline: Option<Instant>,
) -> Result<Option<Perm>> {
    check_sizes(p, m)?;
    let n = p.tasks();
    let nodes = m.nodes();
    let rpn = m.ranks_per_node();
    Ok(match s {
        Strategy::Packed => Some(Perm::identity(n)),
        Strategy::RoundRobin | Strategy::Folded => {
            let fwd = (0..n)
                .map(|t| {
                    let (pass, i) = (t / nodes, t % nodes);
                    let node = if s == Strategy::Folded && pass % 2 == 1 {
                        nodes - 1 - i
                    } else {
                        i
                    };
                    node * rpn + pass
                })
                .collect();
            Some(perm(fwd))
        }
        Strategy::Tiles => p
            .shape()
            .map(|g| along(&tile_order(g, &best_tile(g, rpn)), &identity(nodes), rpn)),
        Strategy::Hilbert => p
            .shape()
            .map(|g| along(&grid_hilbert(g), &node_hilbert(m), rpn)),
        Strategy::Cp2k => match (p.grid_spec(), m.kind()) {
            (Some(g), NetKind::Torus(_)) => Some(cp2k(p, g, m, deadline)),
            _ => None,
        },
        Strategy::Bisection => Some(bisection(p, m)),
        Strategy::Optimised => None,
    })
}

pub(crate) fn perm(fwd: Vec<usize>) -> Perm {
    Perm::from_forward(fwd).expect("strategies build bijections")
}

pub(crate) fn identity(n: usize) -> Vec<usize> {
    (0..n).collect()
}

/// Task `order[i]` goes to node `node_order[i / rpn]`, core `i % rpn`.
pub(crate) fn along(order: &[usize], node_order: &[usize], rpn: usize) -> Perm {
    let mut fwd = vec![0; order.len()];
    for (i, &t) in order.iter().enumerate() {
        fwd[t] = node_order[i / rpn] * rpn + i % rpn;
    }
    perm(fwd)
}

/// Grid cells along the Hilbert curve of the grid's box.
pub(crate) fn grid_hilbert(g: &CartGrid) -> Vec<usize> {
    let pts: Vec<Vec<u32>> = (0..g.tasks())
        .map(|t| g.coords(t).iter().map(|&c| c as u32).collect())
        .collect();
    hilbert_order(&pts, &g.dims)
}

/// Nodes along the Hilbert curve of the torus (machine order for other networks).
pub(crate) fn node_hilbert(m: &MapMachine) -> Vec<usize> {
    match m.kind() {
        NetKind::Torus(t) => {
            let pts: Vec<Vec<u32>> = (0..m.nodes()).map(|k| t.coords(k).to_vec()).collect();
            let dims: Vec<usize> = t.dims().iter().map(|&d| d as usize).collect();
            hilbert_order(&pts, &dims)
        }
        _ => identity(m.nodes()),
    }
}

/// Bytes leaving one tile of shape `t` (boundary messages along each dimension).
pub(crate) fn tile_boundary(g: &CartGrid, t: &[usize]) -> u128 {
    let k: usize = t.iter().product();
    (0..g.dims.len())
        .map(|d| {
            if t[d] == g.dims[d] && g.periodic[d] || g.dims[d] == 1 {
                0
            } else {
                let c = if g.periodic[d] { 2 } else { 1 };
                c * u128::from(g.bytes[d]) * (k / t[d]) as u128
            }
        })
        .sum()
}

/// All tile shapes with `Π t = k` and `t_d` dividing `dims_d` (exact tilings).
pub(crate) fn tile_shapes(g: &CartGrid, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    fn rec(g: &CartGrid, k: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        let d = cur.len();
        if d == g.dims.len() {
            if k == 1 {
                out.push(cur.clone());
            }
            return;
        }
        for t in 1..=g.dims[d].min(k) {
            if k % t == 0 && g.dims[d] % t == 0 {
                cur.push(t);
                rec(g, k / t, cur, out);
                cur.pop();
            }
        }
    }
    rec(g, k, &mut cur, &mut out);
    out
}

/// The exact tiling with the least boundary bytes; if none exists, the most
/// square-ish shape whose product is at least `k` (partial tiles at the border).
pub(crate) fn best_tile(g: &CartGrid, k: usize) -> Vec<usize> {
    let shapes = tile_shapes(g, k);
    if let Some(best) = shapes.iter().min_by_key(|t| tile_boundary(g, t)) {
        return best.clone();
    }
    // near-cubic fallback: grow the dimension whose tile is shortest relative to
    // the grid until the tile holds k cells
    let mut t = vec![1usize; g.dims.len()];
    while t.iter().product::<usize>() < k {
        let d = (0..t.len())
            .filter(|&d| t[d] < g.dims[d])
            .min_by_key(|&d| t[d])
            .expect("the grid holds at least k cells");
        t[d] += 1;
    }
    t
}

/// Cells tile by tile (tiles in row-major order), row-major inside a tile.
pub(crate) fn tile_order(g: &CartGrid, t: &[usize]) -> Vec<usize> {
    let mut keyed: Vec<(Vec<usize>, usize)> = (0..g.tasks())
        .map(|task| {
            let c = g.coords(task);
            let mut key: Vec<usize> = c.iter().zip(t).map(|(&x, &s)| x / s).collect();
            key.extend(c.iter().zip(t).map(|(&x, &s)| x % s));
            (key, task)
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, task)| task).collect()
}

/// Hop-bytes with each hop weighted by its direction's inverse bandwidth relative to
/// the fastest direction (plain hop-bytes when all directions are equal).
pub(crate) fn weighted_hop_bytes(p: &Pattern, m: &MapMachine, map: &Perm) -> f64 {
    let NetKind::Torus(t) = m.kind() else {
        return super::metrics::evaluate(p, m, map).hop_bytes as f64;
    };
    let w = m.hop_weights();
    let dims = t.dims();
    let rpn = m.ranks_per_node();
    let fwd = map.forward();
    p.edges()
        .iter()
        .map(|e| {
            let a = t.coords(fwd[e.src as usize] / rpn);
            let b = t.coords(fwd[e.dst as usize] / rpn);
            let mut h = 0.0;
            for d in 0..a.len() {
                let x = a[d].abs_diff(b[d]);
                h += f64::from(x.min(dims[d] - x)) * w[d];
            }
            e.bytes as f64 * h
        })
        .sum()
}

/// The CP2K heuristic (Figure 3 of the paper).
fn cp2k(p: &Pattern, g: &CartGrid, m: &MapMachine, deadline: Option<Instant>) -> Perm {
    let NetKind::Torus(t) = m.kind() else {
        unreachable!("checked by the caller")
    };
    let cells = grid_hilbert(g);
    let initial = Perm::identity(p.tasks());
    let initial_cost = weighted_hop_bytes(p, m, &initial);
    let mut best: Option<(f64, Perm)> = None;
    for order in dim_orders(t.ndims()) {
        if best.is_some() && deadline.is_some_and(|d| crate::clock::now() >= d) {
            break;
        }
        let mut nodes = identity(m.nodes());
        // the chosen direction varies fastest, then the next
        nodes.sort_by_key(|&k| {
            let c = t.coords(k);
            let key: Vec<u32> = order.iter().rev().map(|&d| c[d]).collect();
            (key, k)
        });
        let cand = along(&cells, &nodes, m.ranks_per_node());
        let cost = weighted_hop_bytes(p, m, &cand);
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            best = Some((cost, cand));
        }
    }
    match best {
        Some((c, map)) if c < initial_cost => map,
        _ => initial,
    }
}

/// All orders of `n` dimensions (first = fastest).
pub(crate) fn dim_orders(n: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut v: Vec<usize> = (0..n).collect();
    fn rec(v: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
        if k == v.len() {
            out.push(v.clone());
            return;
        }
        for i in k..v.len() {
            v.swap(k, i);
            rec(v, k + 1, out);
            v.swap(k, i);
        }
    }
    rec(&mut v, 0, &mut out);
    out
}

/// Recursive bisection: split the machine's nodes in two (across the widest torus
/// dimension of their bounding box, or in machine order) and the tasks in two of
/// matching sizes (across the widest grid dimension, or by breadth-first growth in
/// the communication graph), and recurse.
fn bisection(p: &Pattern, m: &MapMachine) -> Perm {
    let rpn = m.ranks_per_node();
    let (off, adj) = p.undirected_ref();
    let mut fwd = vec![0usize; p.tasks()];
    let mut stack: Vec<(Vec<usize>, Vec<usize>)> = vec![(identity(p.tasks()), identity(m.nodes()))];
    let mut mark = vec![0u32; p.tasks()];
    let mut stamp = 0u32;
    while let Some((tasks, nodes)) = stack.pop() {
        if nodes.len() == 1 {
            for (i, &t) in tasks.iter().enumerate() {
                fwd[t] = nodes[0] * rpn + i;
            }
            continue;
        }
        let nodes = split_nodes(m, nodes);
        let half = nodes.len() / 2;
        let want = half * rpn;
        let tasks = match p.grid_spec() {
            Some(g) => split_grid(g, tasks),
            None => {
                stamp += 1;
                split_graph(off, adj, tasks, want, &mut mark, stamp)
            }
        };
        let (ta, tb) = tasks.split_at(want);
        let (na, nb) = nodes.split_at(half);
        stack.push((tb.to_vec(), nb.to_vec()));
        stack.push((ta.to_vec(), na.to_vec()));
    }
    perm(fwd)
}

/// Nodes sorted so that the first half and the second half are two compact pieces.
pub(crate) fn split_nodes(m: &MapMachine, mut nodes: Vec<usize>) -> Vec<usize> {
    if let NetKind::Torus(t) = m.kind() {
        let n = t.ndims();
        // the dimension with the most distinct coordinates among these nodes
        let mut best = (0usize, 0usize);
        for d in 0..n {
            let mut seen: Vec<u32> = nodes.iter().map(|&k| t.coords(k)[d]).collect();
            seen.sort_unstable();
            seen.dedup();
            if seen.len() > best.1 {
                best = (d, seen.len());
            }
        }
        let d = best.0;
        let e = t.dims()[d];
        // start after the largest gap around the ring, so a wrapped piece stays whole
        let mut seen: Vec<u32> = nodes.iter().map(|&k| t.coords(k)[d]).collect();
        seen.sort_unstable();
        seen.dedup();
        let (start, _) = largest_gap(&seen, e);
        nodes.sort_unstable_by_key(|&k| {
            let c = t.coords(k);
            // coordinate along d from the gap, then the others (x fastest)
            let rest = (0..n)
                .rev()
                .filter(|&x| x != d)
                .fold(0usize, |acc, x| acc * t.dims()[x] as usize + c[x] as usize);
            ((c[d] + e - start) % e, rest, k)
        });
    }
    nodes
}

/// The largest gap between the coordinates `seen` (sorted, distinct, not empty) around
/// a ring of `e`: the coordinate after it and its length (`e` for one coordinate).
pub(crate) fn largest_gap(seen: &[u32], e: u32) -> (u32, u32) {
    let (mut start, mut gap) = (seen[0], 0);
    for (i, &c) in seen.iter().enumerate() {
        let next = seen[(i + 1) % seen.len()];
        let g = (next + e - c) % e;
        let g = if g == 0 { e } else { g };
        if g > gap {
            gap = g;
            start = next;
        }
    }
    (start, gap)
}

/// Grid cells sorted along the widest dimension of their bounding box.
fn split_grid(g: &CartGrid, mut tasks: Vec<usize>) -> Vec<usize> {
    let n = g.dims.len();
    let mut lo = vec![usize::MAX; n];
    let mut hi = vec![0usize; n];
    let strides: Vec<usize> = (0..n).map(|d| g.dims[d + 1..].iter().product()).collect();
    for &t in &tasks {
        for d in 0..n {
            let c = (t / strides[d]) % g.dims[d];
            lo[d] = lo[d].min(c);
            hi[d] = hi[d].max(c);
        }
    }
    let d = (0..n).max_by_key(|&d| (hi[d] - lo[d], n - d)).unwrap_or(0);
    // coordinate along d, then the task index (row-major order of the others)
    let stride = strides[d];
    tasks.sort_unstable_by_key(|&t| ((t / stride) % g.dims[d], t));
    tasks
}

/// Tasks reordered so that the first `want` form a connected, breadth-first-grown
/// piece starting from a task far from the others.
fn split_graph(
    off: &[usize],
    adj: &[(u32, u64)],
    tasks: Vec<usize>,
    want: usize,
    mark: &mut [u32],
    stamp: u32,
) -> Vec<usize> {
    for &t in &tasks {
        mark[t] = stamp;
    }
    // a pseudo-peripheral start: the last task reached by a BFS from the first
    let bfs = |start: usize, mark: &mut [u32], visit: u32| -> Vec<usize> {
        let mut order = Vec::with_capacity(tasks.len());
        let mut q = VecDeque::new();
        q.push_back(start);
        mark[start] = visit;
        while let Some(u) = q.pop_front() {
            order.push(u);
            for &(v, _) in &adj[off[u]..off[u + 1]] {
                let v = v as usize;
                if mark[v] == visit - 1 {
                    mark[v] = visit;
                    q.push_back(v);
                }
            }
        }
        order
    };
    let _ = want;
    let first = bfs(tasks[0], mark, stamp + 1);
    let far = *first.last().expect("non-empty");
    for &t in &tasks {
        mark[t] = stamp;
    }
    let mut order = bfs(far, mark, stamp + 1);
    // tasks unreachable from `far` (another component) follow in their order
    for &t in &tasks {
        if mark[t] != stamp + 1 {
            order.push(t);
        }
        mark[t] = 0;
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_only_those() {
        for s in Strategy::ALL {
            assert_eq!(Strategy::from_name(s.name()), Some(s));
        }
        let baselines: Vec<_> = Strategy::ALL
            .iter()
            .filter(|s| Strategy::BASELINES.contains(s))
            .collect();
        assert_eq!(baselines.len(), Strategy::BASELINES.len());
        assert_eq!(Strategy::from_name("Packed"), None);
        assert_eq!(Strategy::from_name(""), None);
    }
    use copr_topology::{Torus, TorusParams};

    fn machine(dims: Vec<u32>, rpn: usize) -> MapMachine {
        MapMachine::torus(Torus::full(TorusParams::new(dims)).unwrap(), rpn).unwrap()
    }

    #[test]
    fn every_baseline_is_a_permutation_of_the_slots() {
        let g = CartGrid::new(vec![6, 8], vec![true, false], vec![3, 1]).unwrap();
        let p = Pattern::grid(&g).unwrap();
        for m in [
            machine(vec![3, 2, 2], 4),
            machine(vec![4, 3], 4),
            machine(vec![48], 1),
        ] {
            for s in Strategy::BASELINES {
                let map = baseline(s, &p, &m).unwrap().unwrap();
                assert_eq!(map.len(), 48, "{s:?}");
            }
        }
    }

    #[test]
    fn round_robin_and_folded_by_hand() {
        let p = Pattern::from_edges(6, vec![], String::new()).unwrap();
        let m = MapMachine::flat(3, 2).unwrap();
        let rr = baseline(Strategy::RoundRobin, &p, &m).unwrap().unwrap();
        // tasks 0,1,2 on nodes 0,1,2 core 0; tasks 3,4,5 on nodes 0,1,2 core 1
        assert_eq!(rr.forward(), &[0, 2, 4, 1, 3, 5]);
        let f = baseline(Strategy::Folded, &p, &m).unwrap().unwrap();
        // second pass backwards: tasks 3,4,5 on nodes 2,1,0
        assert_eq!(f.forward(), &[0, 2, 4, 5, 3, 1]);
    }

    #[test]
    fn tiles_choose_square_tiles_and_respect_anisotropy() {
        let g = CartGrid::new(vec![32, 32], vec![true, true], vec![1, 1]).unwrap();
        assert_eq!(best_tile(&g, 16), vec![4, 4]);
        // dimension 1 messages 3x heavier: keep more of them inside (longer along 1)
        let g = CartGrid::new(vec![32, 32], vec![true, true], vec![1, 3]).unwrap();
        assert_eq!(best_tile(&g, 16), vec![2, 8]);
        let order = tile_order(
            &CartGrid::new(vec![4, 4], vec![true; 2], vec![1; 2]).unwrap(),
            &[2, 2],
        );
        assert_eq!(&order[..8], &[0, 1, 4, 5, 2, 3, 6, 7]);
    }

    #[test]
    fn sizes_must_match() {
        let p =
            Pattern::grid(&CartGrid::new(vec![4, 4], vec![true; 2], vec![1; 2]).unwrap()).unwrap();
        let e = baseline(Strategy::Packed, &p, &machine(vec![4], 2))
            .unwrap_err()
            .to_string();
        assert!(e.contains("16 tasks") && e.contains("8 slots"), "{e}");
    }
}
