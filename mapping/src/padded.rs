//! Grids that do not fill the machine: a pattern padded with empty tasks
//! ([`Pattern::padded`]) whose tasks with messages form a grid.
//!
//! The grid's cells are grouped into tiles of at most a node (exact tilings, of any
//! size that fits on the nodes, the least bytes leaving the tiles in all first). A tile
//! grid with one tile per node is placed by the optimiser's grid strategies (so the
//! empty slots are spread, one per node or so); a smaller tile grid is padded to the
//! number of nodes and placed by the packed, bisection and multilevel placements, each
//! refined by swaps (so whole nodes stay empty). The empty tasks take the slots left
//! over: the mapper chooses which slots stay empty.

use std::time::Instant;

use super::candidates::{baseline_starts, Options};
use super::machine::MapMachine;
use super::multilevel;
use super::optimise::optimise;
use super::pattern::Pattern;
use super::recognise::active_grid;
use super::strategy::{self, baseline, tile_boundary, tile_shapes, Strategy};
use super::swaps::refine;
use super::tiles::tile_grid;
use copr::error::Result;
use copr::lap::Perm;
use copr::rng::SplitMix;

/// Tile shapes tried (the least boundaries first).
const SHAPES: usize = 3;

/// Candidate mappings of `p` onto `m` when `p`'s tasks with messages form a grid
/// (up to relabeling) and the others send nothing; none otherwise.
///
/// # Errors
/// Only from the strategies' checked constructors (none expected).
///
/// # Complexity
/// Recognition (`O(n·Δ²)`) plus, per tile shape, two placements of at most
/// `nodes` tiles and their refinement.
pub(crate) fn padded_grid_candidates(
    p: &Pattern,
    m: &MapMachine,
    seed: u64,
    rng: &mut SplitMix,
    deadline: Instant,
) -> Result<Vec<(String, Perm)>> {
    let n = p.tasks();
    let k = m.ranks_per_node();
    if n != m.slots() || m.nodes() < 2 {
        return Ok(Vec::new());
    }
    let Some((ids, h)) = active_grid(p) else {
        return Ok(Vec::new());
    };
    let g = &h.spec;
    // tiles of every size from the least that fits on the nodes up to a full node,
    // ranked by the bytes that leave their nodes in all
    let a = ids.len();
    let mut shapes: Vec<(u128, Vec<usize>)> = Vec::new();
    for size in a.div_ceil(m.nodes())..=k {
        if a % size != 0 {
            continue;
        }
        for t in tile_shapes(g, size) {
            shapes.push((tile_boundary(g, &t) * (a / size) as u128, t));
        }
    }
    shapes.sort();
    shapes.truncate(SHAPES);
    let m1 = m.clone().with_ranks_per_node(1)?;
    let mut out = Vec::new();
    for (_, t) in shapes {
        let q = tile_grid(g, &t)?;
        let dims: Vec<usize> = q.dims.clone();
        let mut placements: Vec<(String, Perm)> = Vec::new();
        let qp = if q.tasks() == m.nodes() {
            // one tile per node: the grid strategies place the tile grid
            let qg = Pattern::grid(&q)?;
            let starts = baseline_starts(&qg, &m1)?;
            let left = deadline.saturating_duration_since(Instant::now()) / 2;
            let o = optimise(&qg, &m1, &starts, &Options { seed, budget: left })?;
            placements.push((o.best.origin, o.best.map));
            qg
        } else {
            let qp = Pattern::grid(&q)?.padded(m.nodes())?;
            for s in [Strategy::Packed, Strategy::Bisection] {
                if let Some(place) = baseline(s, &qp, &m1)? {
                    placements.push((s.name().into(), place));
                }
            }
            placements.extend(multilevel::candidates(&qp, &m1, 2, rng, deadline)?);
            qp
        };
        for (name, mut place) in placements {
            if Instant::now() >= deadline {
                break;
            }
            refine(&qp, &m1, &mut place, rng, deadline, 20);
            // grid cell -> its tile's node, the next free core there
            let mut used = vec![0usize; m.nodes()];
            let mut fwd = vec![usize::MAX; n];
            for (cell, &sub) in h.task.iter().enumerate() {
                let c = g.coords(cell);
                let tile = c
                    .iter()
                    .zip(&t)
                    .zip(&dims)
                    .fold(0, |acc, ((&x, &w), &e)| acc * e + x / w);
                let node = place.apply(tile);
                fwd[ids[sub]] = node * k + used[node];
                used[node] += 1;
            }
            // the empty tasks fill the slots left over
            let mut taken = vec![false; n];
            for &s in fwd.iter().filter(|&&s| s != usize::MAX) {
                taken[s] = true;
            }
            let mut free = (0..n).filter(|&s| !taken[s]);
            for s in fwd.iter_mut().filter(|s| **s == usize::MAX) {
                *s = free.next().unwrap_or(usize::MAX);
            }
            out.push((
                format!(
                    "grid {:?} with empty slots: tiles {t:?}, {name} of the tiles, refined",
                    g.dims
                ),
                strategy::perm(fwd),
            ));
        }
    }
    Ok(out)
}
