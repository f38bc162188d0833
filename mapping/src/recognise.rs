//! Recognising a Cartesian grid hidden in a graph pattern.
//!
//! A stencil written as a graph file (in grid order or with its ranks renumbered) is a
//! grid up to relabeling. [`recognise_grid`] finds the grid and the relabeling, so the
//! grid strategies (tiles, embeddings) can map it; the answer is checked edge by edge,
//! so a recognised grid is always exactly the pattern.
//!
//! The method, for a connected graph whose every task has at most 2·d neighbours:
//! 1. the origin is a task of least degree (a corner of every non-periodic axis);
//! 2. the origin's neighbours are grouped into axes: two neighbours lie on one axis
//!    when they are adjacent (a ring of 3) or share no neighbour but the origin (a
//!    ring of 5 or more); otherwise they start different axes;
//! 3. each axis is walked from the origin: the next task along a line is the one
//!    neighbour of the current task that shares no neighbour with the previous task
//!    except the current one (in a product of paths and rings, a step sideways always
//!    closes a square);
//! 4. every other task is the unique common neighbour of its predecessors along two
//!    axes, `c − e_i` and `c − e_j`, other than `c − e_i − e_j` (grid order, so both are
//!    known);
//! 5. the grid's messages, relabeled, must equal the pattern's messages exactly.
//!
//! A periodic axis of 4 is a ring of 4, which is also the product of two axes of 2; the
//! walk finds the latter, and pairs of non-periodic axes of 2 with equal bytes are then
//! merged back into rings of 4 (checked again).
//!
//! # Complexity
//! `O(n·Δ²)` for `n` tasks of degree at most `Δ`, plus sorting the messages.

use super::pattern::{CartGrid, Edge, Pattern};

/// Most axes looked for.
const MAX_AXES: usize = 6;

/// Axes of a grid while it is being recognised (possibly more than a [`CartGrid`]
/// holds, before rings of 4 are merged).
#[derive(Debug, Clone)]
struct Shape {
    dims: Vec<usize>,
    periodic: Vec<bool>,
    bytes: Vec<u64>,
}

impl Shape {
    fn tasks(&self) -> usize {
        self.dims.iter().product()
    }

    /// Row-major coordinates of grid task `i` (the last axis fastest, as [`CartGrid`]).
    fn coords(&self, mut i: usize) -> Vec<usize> {
        let mut c = vec![0; self.dims.len()];
        for k in (0..self.dims.len()).rev() {
            c[k] = i % self.dims[k];
            i /= self.dims[k];
        }
        c
    }

    fn task(&self, c: &[usize]) -> usize {
        c.iter()
            .zip(&self.dims)
            .fold(0, |acc, (&x, &d)| acc * d + x)
    }

    /// The grid's messages, as [`Pattern::grid`] sends them.
    fn edges(&self) -> Vec<Edge> {
        let mut out = Vec::new();
        for t in 0..self.tasks() {
            let c = self.coords(t);
            for k in 0..self.dims.len() {
                let d = self.dims[k];
                // one step up, one step down (d − 1 up, modulo d)
                for (step, wraps) in [(1, c[k] + 1 == d), (d - 1, c[k] == 0)] {
                    if d == 1 || (wraps && !self.periodic[k]) {
                        continue;
                    }
                    let mut nc = c.clone();
                    nc[k] = (c[k] + step) % d;
                    out.push(Edge {
                        src: t as u32,
                        dst: self.task(&nc) as u32,
                        bytes: self.bytes[k],
                    });
                }
            }
        }
        out
    }
}

/// A grid being recognised and its relabeling.
struct Found {
    shape: Shape,
    task: Vec<usize>,
}

/// A grid equal to the pattern up to relabeling.
#[derive(Debug, Clone, PartialEq)]
pub struct HiddenGrid {
    /// The grid.
    pub spec: CartGrid,
    /// `task[i]`: the pattern's task at the grid's task `i` (row-major grid order).
    pub task: Vec<usize>,
}

/// Finds a Cartesian grid (dimensions, periodicity, bytes per direction) whose pattern
/// equals `p` after relabeling, or `None`.
///
/// # Complexity
/// See the module docs.
///
/// # Examples
/// ```
/// use copr_mapping::{recognise_grid, Edge, CartGrid, Pattern};
/// let g = CartGrid::new(vec![6, 5], vec![true, false], vec![8, 3]).unwrap();
/// let grid = Pattern::grid(&g).unwrap();
/// // the same messages with task t renamed (7·t) mod 30
/// let edges = grid
///     .edges()
///     .iter()
///     .map(|e| Edge { src: e.src * 7 % 30, dst: e.dst * 7 % 30, bytes: e.bytes })
///     .collect();
/// let p = Pattern::from_edges(30, edges, "renamed".into()).unwrap();
/// let h = recognise_grid(&p).unwrap();
/// let mut dims = h.spec.dims.clone();
/// dims.sort();
/// assert_eq!(dims, vec![5, 6]);
/// ```
pub fn recognise_grid(p: &Pattern) -> Option<HiddenGrid> {
    let n = p.tasks();
    if n < 2 {
        return None;
    }
    let (off, adj) = p.undirected_ref();
    let nb = |v: usize| adj[off[v]..off[v + 1]].iter().map(|&(u, _)| u as usize);
    let deg = |v: usize| off[v + 1] - off[v];
    let adjacent = |a: usize, b: usize| {
        adj[off[a]..off[a + 1]]
            .binary_search_by_key(&(b as u32), |&(u, _)| u)
            .is_ok()
    };
    let common = |a: usize, b: usize| -> Vec<usize> { nb(a).filter(|&x| adjacent(b, x)).collect() };
    if (0..n).any(|v| deg(v) == 0 || deg(v) > 2 * MAX_AXES) {
        return None;
    }
    let origin = (0..n).min_by_key(|&v| (deg(v), v))?;
    // 2. group the origin's neighbours into axes
    let first: Vec<usize> = nb(origin).collect();
    let mut used = vec![false; first.len()];
    let mut groups: Vec<(usize, Option<usize>)> = Vec::new();
    for i in 0..first.len() {
        if used[i] {
            continue;
        }
        used[i] = true;
        let a = first[i];
        let mut partner = None;
        for j in i + 1..first.len() {
            let b = first[j];
            if !used[j] && (adjacent(a, b) || common(a, b).len() == 1) {
                used[j] = true;
                partner = Some(b);
                break;
            }
        }
        groups.push((a, partner));
    }
    if groups.len() > MAX_AXES {
        return None;
    }
    // 3. walk every axis
    let mut lines: Vec<Vec<usize>> = Vec::with_capacity(groups.len());
    let mut periodic = Vec::with_capacity(groups.len());
    for &(a, partner) in &groups {
        let mut line = vec![origin, a];
        loop {
            let (prev, cur) = (line[line.len() - 2], line[line.len() - 1]);
            if Some(cur) == partner || line.len() > n {
                break;
            }
            let next: Vec<usize> = nb(cur)
                .filter(|&x| x != prev && common(x, prev).len() == 1)
                .collect();
            match next[..] {
                [x] if x != origin => line.push(x),
                _ => break,
            }
        }
        match partner {
            Some(b) if line.last() != Some(&b) => return None,
            _ => {}
        }
        periodic.push(partner.is_some());
        lines.push(line);
    }
    let dims: Vec<usize> = lines.iter().map(Vec::len).collect();
    if dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)) != Some(n) {
        return None;
    }
    // bytes per direction: the message from the origin to its first step
    let bytes_of = |a: usize, b: usize| {
        p.edges()
            .binary_search_by_key(&(a as u32, b as u32), |e| (e.src, e.dst))
            .map(|k| p.edges()[k].bytes)
            .unwrap_or(0)
    };
    let bytes: Vec<u64> = lines.iter().map(|l| bytes_of(l[0], l[1])).collect();
    let spec = Shape {
        dims,
        periodic,
        bytes,
    };
    // 4. fill the grid in row-major order
    let mut task = vec![usize::MAX; n];
    let mut taken = vec![false; n];
    for i in 0..n {
        let c = spec.coords(i);
        let nz: Vec<usize> = (0..c.len()).filter(|&k| c[k] > 0).collect();
        let v = match nz[..] {
            [] => origin,
            [k] => lines[k][c[k]],
            _ => {
                let (a, b) = (nz[0], nz[1]);
                let mut ca = c.clone();
                ca[a] -= 1;
                let mut cb = c.clone();
                cb[b] -= 1;
                let mut cab = ca.clone();
                cab[b] -= 1;
                let (u, w, z) = (
                    task[spec.task(&ca)],
                    task[spec.task(&cb)],
                    task[spec.task(&cab)],
                );
                let cands: Vec<usize> = common(u, w).into_iter().filter(|&x| x != z).collect();
                match cands[..] {
                    [x] => x,
                    _ => return None,
                }
            }
        };
        if taken[v] {
            return None;
        }
        taken[v] = true;
        task[i] = v;
    }
    let found = Found { shape: spec, task };
    if !matches(p, &found) {
        return None;
    }
    let Found { shape, task } = merge_rings_of_four(p, found);
    let spec = CartGrid::new(shape.dims, shape.periodic, shape.bytes).ok()?;
    Some(HiddenGrid { spec, task })
}

/// Whether the grid's messages, relabeled, are exactly the pattern's.
fn matches(p: &Pattern, h: &Found) -> bool {
    let relabeled: Vec<Edge> = h
        .shape
        .edges()
        .iter()
        .map(|e| Edge {
            src: h.task[e.src as usize] as u32,
            dst: h.task[e.dst as usize] as u32,
            bytes: e.bytes,
        })
        .collect();
    Pattern::from_edges(p.tasks(), relabeled, String::new()).is_ok_and(|g| g.edges() == p.edges())
}

/// Merges pairs of non-periodic axes of 2 with equal bytes into periodic axes of 4
/// (`(0,0) (1,0) (1,1) (0,1)` around the ring), keeping each merge that checks.
fn merge_rings_of_four(p: &Pattern, mut h: Found) -> Found {
    'merged: loop {
        let s = &h.shape;
        let twos: Vec<usize> = (0..s.dims.len())
            .filter(|&k| s.dims[k] == 2 && !s.periodic[k])
            .collect();
        for (x, &a) in twos.iter().enumerate() {
            for &b in twos[x + 1..].iter().filter(|&&b| s.bytes[b] == s.bytes[a]) {
                if let Some(merged) = merge_pair(&h, a, b).filter(|m| matches(p, m)) {
                    h = merged;
                    continue 'merged;
                }
            }
        }
        return h;
    }
}

/// The grid with axes `a` and `b` (both non-periodic of 2) made one ring of 4 in the
/// place of `a`.
fn merge_pair(h: &Found, a: usize, b: usize) -> Option<Found> {
    let s = &h.shape;
    let keep: Vec<usize> = (0..s.dims.len()).filter(|&k| k != b).collect();
    let pos = keep.iter().position(|&k| k == a)?;
    let dims = keep
        .iter()
        .map(|&k| if k == a { 4 } else { s.dims[k] })
        .collect();
    let periodic = keep.iter().map(|&k| k == a || s.periodic[k]).collect();
    let bytes = keep.iter().map(|&k| s.bytes[k]).collect();
    let spec = Shape {
        dims,
        periodic,
        bytes,
    };
    let task = (0..spec.tasks())
        .map(|i| {
            let c = spec.coords(i);
            let mut old = vec![0usize; s.dims.len()];
            for (x, &k) in keep.iter().enumerate() {
                old[k] = c[x];
            }
            (old[a], old[b]) = [(0, 0), (1, 0), (1, 1), (0, 1)][c[pos]];
            h.task[s.task(&old)]
        })
        .collect();
    Some(Found { shape: spec, task })
}

/// The tasks of `p` that send or receive (in order) and the grid they form up to
/// relabeling, when some tasks send and receive nothing and the others form a grid.
pub(crate) fn active_grid(p: &Pattern) -> Option<(Vec<usize>, HiddenGrid)> {
    let n = p.tasks();
    let mut active = vec![false; n];
    for e in p.edges() {
        active[e.src as usize] = true;
        active[e.dst as usize] = true;
    }
    let ids: Vec<usize> = (0..n).filter(|&t| active[t]).collect();
    if ids.len() == n || ids.len() < 2 {
        return None;
    }
    let mut index = vec![u32::MAX; n];
    for (i, &t) in ids.iter().enumerate() {
        index[t] = i as u32;
    }
    let edges = p
        .edges()
        .iter()
        .map(|e| Edge {
            src: index[e.src as usize],
            dst: index[e.dst as usize],
            bytes: e.bytes,
        })
        .collect();
    let h = recognise_grid(&Pattern::from_edges(ids.len(), edges, String::new()).ok()?)?;
    Some((ids, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renamed(g: &CartGrid, mul: u32) -> Pattern {
        let grid = Pattern::grid(g).unwrap();
        let n = grid.tasks() as u32;
        let edges = grid
            .edges()
            .iter()
            .map(|e| Edge {
                src: e.src * mul % n,
                dst: e.dst * mul % n,
                bytes: e.bytes,
            })
            .collect();
        Pattern::from_edges(n as usize, edges, "renamed".into()).unwrap()
    }

    #[test]
    fn grids_of_every_kind_are_found_up_to_relabeling() {
        let cases = [
            (vec![16, 16, 4], vec![true; 3], vec![5, 5, 5]),
            (vec![7, 5], vec![false, false], vec![1, 2]),
            (vec![3, 4, 5], vec![true, false, true], vec![9, 9, 9]),
            (vec![2, 3, 8], vec![false, true, true], vec![1, 1, 1]),
            (vec![11], vec![true], vec![4]),
            (vec![4, 4], vec![true, true], vec![2, 2]),
        ];
        for (dims, per, bytes) in cases {
            let g = CartGrid::new(dims.clone(), per, bytes).unwrap();
            let n = g.tasks() as u32;
            // multipliers coprime with n rename the tasks
            let mul = (2..n + 2).rev().find(|m| gcd(*m, n) == 1).unwrap();
            let p = renamed(&g, mul);
            let h = recognise_grid(&p).unwrap_or_else(|| panic!("{dims:?} not found"));
            let found = Found {
                shape: Shape {
                    dims: h.spec.dims.clone(),
                    periodic: h.spec.periodic.clone(),
                    bytes: h.spec.bytes.clone(),
                },
                task: h.task.clone(),
            };
            assert!(matches(&p, &found), "{dims:?}");
            assert_eq!(h.spec.dims.iter().product::<usize>(), n as usize);
            let mut sorted_dims = h.spec.dims.clone();
            sorted_dims.sort_unstable();
            let mut want = dims.clone();
            want.sort_unstable();
            if !dims.contains(&4) {
                assert_eq!(sorted_dims, want, "{dims:?}");
            }
        }
    }

    #[test]
    fn a_periodic_axis_of_four_comes_back_as_a_ring() {
        let g = CartGrid::new(vec![16, 16, 4], vec![true; 3], vec![7; 3]).unwrap();
        let h = recognise_grid(&renamed(&g, 601)).unwrap();
        let mut dims = h.spec.dims.clone();
        dims.sort_unstable();
        assert_eq!(dims, vec![4, 16, 16]);
        assert!(h.spec.periodic.iter().all(|&x| x));
    }

    #[test]
    fn graphs_that_are_not_grids_are_refused() {
        // a grid with one message changed
        let g = CartGrid::new(vec![6, 6], vec![true, true], vec![3, 3]).unwrap();
        let mut edges = Pattern::grid(&g).unwrap().edges().to_vec();
        edges[5].bytes += 1;
        assert!(
            recognise_grid(&Pattern::from_edges(36, edges.clone(), "x".into()).unwrap()).is_none()
        );
        // a grid plus one diagonal
        edges[5].bytes -= 1;
        edges.push(Edge {
            src: 0,
            dst: 7,
            bytes: 3,
        });
        assert!(recognise_grid(&Pattern::from_edges(36, edges, "x".into()).unwrap()).is_none());
        // a complete graph and a star
        let k5 = (0..5u32)
            .flat_map(|a| {
                (0..5u32).filter(move |&b| b != a).map(move |b| Edge {
                    src: a,
                    dst: b,
                    bytes: 1,
                })
            })
            .collect();
        assert!(recognise_grid(&Pattern::from_edges(5, k5, "k5".into()).unwrap()).is_none());
        let star = (1..6u32)
            .map(|b| Edge {
                src: 0,
                dst: b,
                bytes: 1,
            })
            .collect();
        assert!(recognise_grid(&Pattern::from_edges(6, star, "star".into()).unwrap()).is_none());
        // two disjoint rings
        let rings = (0..10u32)
            .map(|t| Edge {
                src: t,
                dst: t / 5 * 5 + (t % 5 + 1) % 5,
                bytes: 1,
            })
            .collect();
        assert!(recognise_grid(&Pattern::from_edges(10, rings, "rings".into()).unwrap()).is_none());
    }

    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
}
