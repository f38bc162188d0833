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
//!
//! The one-tile-per-node placement is the optimiser's, passed in by the optimiser
//! ([`PlaceTiles`]): a padded pattern is optimised by the optimiser that calls this
//! phase, and the phase does not depend on it.

use std::time::Instant;

use super::machine::MapMachine;
use super::multilevel;
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

/// Places a grid of tiles with one tile per node, given as its pattern, on the machine
/// of one rank per node, before the deadline: a description of the placement, and the
/// placement (tile → node). The optimiser passes its own search of the tile grid.
pub(crate) type PlaceTiles<'a> =
    &'a dyn Fn(&Pattern, &MapMachine, Instant) -> Result<(String, Perm)>;

/// Candidate mappings of `p` onto `m` when `p`'s tasks with messages form a grid
/// (up to relabeling) and the others send nothing; none otherwise. A tile grid with
/// one tile per node is placed by `place_tiles`.
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
    place_tiles: PlaceTiles<'_>,
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
            let qg = Pattern::grid_saturating(&q)?;
            placements.push(place_tiles(&qg, &m1, deadline)?);
            qg
        } else {
            let qp = Pattern::grid_saturating(&q)?.padded(m.nodes())?;
            for s in [Strategy::Packed, Strategy::Bisection] {
                if let Some(place) = baseline(s, &qp, &m1)? {
                    placements.push((s.name().into(), place));
                }
            }
            placements.extend(multilevel::candidates(&qp, &m1, 2, rng, deadline)?);
            qp
        };
        for (name, mut place) in placements {
            if crate::clock::now() >= deadline {
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
