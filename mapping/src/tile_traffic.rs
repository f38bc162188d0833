//! Node-sized tiles of an algorithm's process grid (Cannon, Fox, Snyder, SUMMA) placed
//! on the algorithm's own traffic.
//!
//! The grid path chooses tile shapes and ranks tile placements by the neighbour
//! exchange of the process grid; an algorithm also sends along whole rows and columns
//! (broadcast and reduction trees) and across the diagonal (Snyder's transpose). Here
//! every exact tiling is scored by the bytes that really leave its tiles, and the tile
//! placements (the torus embeddings of the tile grid, the grid strategies, packed,
//! bisection and the multilevel mapper on the tiles' quotient graph) are ranked,
//! refined by swaps and relieved of their busiest link on the quotient of the real
//! traffic. The quotient has one task per node, and its hop-bytes and link loads are
//! those of the expanded mapping (messages inside a node cross no link), so every
//! step is exact and cheap (a few hundred tiles at most).

use std::time::Instant;

use super::machine::MapMachine;
use super::metrics::evaluate;
use super::pattern::{CartGrid, Edge, Pattern};
use super::strategy::{self, baseline_until, Strategy};
use super::swaps::refine;
use super::tiles::{embeddings, expand_tiles, tile_grid};
use copr::error::Result;
use copr::lap::Perm;
use copr::rng::SplitMix;

/// Tile shapes kept (the fewest bytes leaving the tiles first).
const SHAPES: usize = 3;
/// Placements of each shape refined (the best by weighted hop-bytes, then by link).
const REFINED: usize = 3;

/// The tile of every task of `g` under tiles of shape `t` (tile-grid row-major order,
/// as [`expand_tiles`] numbers them).
fn tile_of(g: &CartGrid, t: &[usize]) -> Vec<u32> {
    let q: Vec<usize> = g.dims.iter().zip(t).map(|(d, t)| d / t).collect();
    (0..g.tasks())
        .map(|task| {
            g.coords(task)
                .iter()
                .zip(t)
                .zip(&q)
                .fold(0usize, |acc, ((&x, &s), &e)| acc * e + x / s) as u32
        })
        .collect()
}

/// Lowers the busiest link of `place` (one task of `qp` per node of `m1`) without
/// adding hop-bytes: first-improvement swaps of two tasks, one of them with a message
/// through a busiest link, accepted when they lower (the busiest link's time, the
/// number of links that busy) lexicographically with hop-bytes at most the start's,
/// or keep both and lower the hop-bytes. Loads are updated incrementally: a swap
/// reroutes only the two tasks' messages. Returns whether anything changed.
///
/// # Complexity
/// Per swap tried `O(deg·h + L)`; at most `n` first tasks × `n` partners per pass,
/// until no swap helps or `deadline`.
fn lower_link_same_hop_bytes(
    qp: &Pattern,
    m1: &MapMachine,
    place: &mut Perm,
    deadline: Instant,
) -> bool {
    let n = qp.tasks();
    let edges = qp.edges();
    let inv = m1.link_group_inv_bandwidths();
    let mut node: Vec<usize> = (0..n).map(|t| place.apply(t)).collect();
    let mut incident: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, e) in edges.iter().enumerate() {
        incident[e.src as usize].push(i);
        if e.dst != e.src {
            incident[e.dst as usize].push(i);
        }
    }
    let mut load = vec![0u128; inv.len()];
    let mut hb: u128 = 0;
    for e in edges {
        let (a, b) = (node[e.src as usize], node[e.dst as usize]);
        hb += u128::from(e.bytes) * u128::from(m1.hops(a, b));
        m1.for_group_route(a, b, |l| load[l] += u128::from(e.bytes));
    }
    let cap = hb;
    // (busiest time, links within a relative 1e-12 of it)
    let peak = |load: &[u128]| {
        let mut top = 0.0f64;
        let mut count = 0usize;
        for (l, &x) in load.iter().enumerate() {
            let t = x as f64 * inv[l];
            if t > top * (1.0 + 1e-12) {
                top = t;
                count = 1;
            } else if t >= top * (1.0 - 1e-12) && t > 0.0 {
                count += 1;
            }
        }
        (top, count)
    };
    let better = |new: (f64, usize, u128), old: (f64, usize, u128)| {
        if new.0 < old.0 * (1.0 - 1e-12) {
            return true;
        }
        if new.0 > old.0 * (1.0 + 1e-12) {
            return false;
        }
        new.1 < old.1 || (new.1 == old.1 && new.2 < old.2)
    };
    let (t0, c0) = peak(&load);
    let mut cur = (t0, c0, hb);
    let mut changed = false;
    let mut stamp = vec![usize::MAX; edges.len()];
    let mut round = 0usize;
    // moves the messages of the edges in `list` from the nodes before to after the
    // swap of tasks a and b (or back), returning the change in hop-bytes
    let reroute =
        |list: &[usize], node: &[usize], a: usize, b: usize, load: &mut [u128]| -> (u128, u128) {
            let at = |t: usize| {
                if t == a {
                    node[b]
                } else if t == b {
                    node[a]
                } else {
                    node[t]
                }
            };
            let (mut minus, mut plus) = (0u128, 0u128);
            for &i in list {
                let e = &edges[i];
                let (s, d) = (e.src as usize, e.dst as usize);
                let bytes = u128::from(e.bytes);
                let (oa, ob) = (node[s], node[d]);
                let (na, nb) = (at(s), at(d));
                minus += bytes * u128::from(m1.hops(oa, ob));
                plus += bytes * u128::from(m1.hops(na, nb));
                m1.for_group_route(oa, ob, |l| load[l] -= bytes);
                m1.for_group_route(na, nb, |l| load[l] += bytes);
            }
            (minus, plus)
        };
    loop {
        if crate::clock::now() >= deadline {
            break;
        }
        let hot = through_busiest(edges, m1, &node, (&load[..], &inv[..]), cur.0);
        let mut improved = false;
        'search: for a in (0..n).filter(|&a| hot[a]) {
            for b in 0..n {
                if b == a {
                    continue;
                }
                if crate::clock::now() >= deadline {
                    break 'search;
                }
                round += 1;
                let mut list: Vec<usize> = Vec::new();
                for &i in incident[a].iter().chain(&incident[b]) {
                    if stamp[i] != round {
                        stamp[i] = round;
                        list.push(i);
                    }
                }
                let (minus, plus) = reroute(&list, &node, a, b, &mut load);
                let new_hb = cur.2 - minus + plus;
                let (t, c) = peak(&load);
                if new_hb <= cap && better((t, c, new_hb), cur) {
                    node.swap(a, b);
                    cur = (t, c, new_hb);
                    changed = true;
                    improved = true;
                    break 'search;
                }
                // undo: the same edges from the swapped nodes back
                node.swap(a, b);
                reroute(&list, &node, a, b, &mut load);
                node.swap(a, b);
            }
        }
        if !improved {
            break;
        }
    }
    if changed {
        if let Ok(p) = Perm::from_forward(node) {
            *place = p;
        }
    }
    changed
}

/// The tasks with a message through a link whose time (`load · inv`) is within a
/// relative 1e-12 of `top`, when task `t` is on node `node[t]` of `m1`.
fn through_busiest(
    edges: &[Edge],
    m1: &MapMachine,
    node: &[usize],
    (load, inv): (&[u128], &[f64]),
    top: f64,
) -> Vec<bool> {
    let busy: Vec<bool> = load
        .iter()
        .enumerate()
        .map(|(l, &x)| x as f64 * inv[l] >= top * (1.0 - 1e-12) && x > 0)
        .collect();
    let mut hot = vec![false; node.len()];
    for e in edges {
        let mut through = false;
        m1.for_group_route(node[e.src as usize], node[e.dst as usize], |l| {
            through |= busy[l];
        });
        if through {
            hot[e.src as usize] = true;
            hot[e.dst as usize] = true;
        }
    }
    hot
}

/// Candidate mappings of the algorithm pattern `p` (process grid `g`, one task per
/// grid position, no empty slots) onto `m`: node-sized tiles of the shapes `shapes`
/// placed on `p`'s own traffic (module docs), as `(description, mapping)`.
///
/// # Errors
/// Only from checked constructors (none expected).
///
/// # Complexity
/// Per tile shape `O(e)` for the quotient, then per placement the quotient's
/// refinement (`n` tiles, at most `n²` quotient edges); stops at `deadline`.
pub(crate) fn algorithm_tile_candidates(
    p: &Pattern,
    m: &MapMachine,
    g: &CartGrid,
    shapes: &[Vec<usize>],
    rng: &mut SplitMix,
    deadline: Instant,
) -> Result<Vec<(String, Perm)>> {
    let k = m.ranks_per_node();
    if p.tasks() != m.slots() || m.nodes() < 2 || shapes.is_empty() {
        return Ok(Vec::new());
    }
    let m1 = m.clone().with_ranks_per_node(1)?;
    let mut by_cut: Vec<(u128, &Vec<usize>, Pattern)> = Vec::new();
    for t in shapes {
        let (qp, cut) = p.quotient(&tile_of(g, t), m.nodes(), "tiles".into())?;
        by_cut.push((cut, t, qp));
    }
    by_cut.sort_by_key(|(cut, t, _)| (*cut, (*t).clone()));
    by_cut.truncate(SHAPES);
    let mut out = Vec::new();
    for (_, t, qreal) in by_cut {
        if crate::clock::now() >= deadline {
            break;
        }
        let q = tile_grid(g, t)?;
        let qgrid = Pattern::grid_saturating(&q)?;
        let mut placements: Vec<(String, Perm)> = embeddings(&q, &qgrid, &m1, 256, deadline)
            .into_iter()
            .map(|(name, pl)| (format!("embedding {name}"), pl))
            .collect();
        for s in [Strategy::Hilbert, Strategy::Cp2k, Strategy::Bisection] {
            if let Some(pl) = baseline_until(s, &qgrid, &m1, Some(deadline))? {
                placements.push((s.name().into(), pl));
            }
        }
        for s in [Strategy::Packed, Strategy::Bisection] {
            if let Some(pl) = baseline_until(s, &qreal, &m1, Some(deadline))? {
                placements.push((format!("{} on the traffic", s.name()), pl));
            }
        }
        placements.extend(super::multilevel::candidates(
            &qreal, &m1, 2, rng, deadline,
        )?);
        // rank on the real traffic: the best by weighted hop-bytes, then by link time
        let scored: Vec<(f64, f64, String, Perm)> = placements
            .into_iter()
            .map(|(name, pl)| {
                let w = strategy::weighted_hop_bytes(&qreal, &m1, &pl);
                let lt = evaluate(&qreal, &m1, &pl).max_link_time;
                (w, lt, name, pl)
            })
            .collect();
        let mut order: Vec<usize> = (0..scored.len()).collect();
        order.sort_by(|&a, &b| {
            (scored[a].0, scored[a].1)
                .partial_cmp(&(scored[b].0, scored[b].1))
                .expect("finite")
        });
        let mut chosen: Vec<usize> = order.iter().copied().take(REFINED).collect();
        order.sort_by(|&a, &b| {
            (scored[a].1, scored[a].0)
                .partial_cmp(&(scored[b].1, scored[b].0))
                .expect("finite")
        });
        for &i in order.iter().take(2) {
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        for i in chosen {
            if crate::clock::now() >= deadline {
                break;
            }
            let (_, _, name, place) = &scored[i];
            let mut place = place.clone();
            let mut name = format!("tiles {t:?} on the traffic, {name}");
            if refine(&qreal, &m1, &mut place, rng, deadline, 20) {
                name.push_str(", refined");
            }
            let e = evaluate(&qreal, &m1, &place);
            out.push((
                e.hop_bytes,
                e.max_link_time,
                name.clone(),
                t.clone(),
                place.clone(),
            ));
            if lower_link_same_hop_bytes(&qreal, &m1, &mut place, deadline) {
                let e = evaluate(&qreal, &m1, &place);
                out.push((
                    e.hop_bytes,
                    e.max_link_time,
                    format!("{name}, busiest link lowered"),
                    t.clone(),
                    place,
                ));
            }
        }
    }
    Ok(traded(&out)
        .into_iter()
        .map(|i| {
            let (_, _, name, t, place) = &out[i];
            (name.clone(), expand_tiles(g, t, place, k))
        })
        .collect())
}

/// The candidates (hop-bytes, busiest link time, …) that no other trades away: `a`
/// gives way to `b` when `b`'s relative rise in hop-bytes over `a` is at most half its
/// relative drop in the busiest link's time (the trade the optimiser's busiest-link
/// pass accepts; these algorithms' bandwidth-bound phases wait for the busiest link).
/// Only `b` with more hop-bytes can trade `a` away, so the candidate with the most
/// hop-bytes stays, and so does any that nothing beats on the link.
fn traded<T>(c: &[(u128, f64, T, Vec<usize>, Perm)]) -> Vec<usize> {
    (0..c.len())
        .filter(|&a| {
            !c.iter().any(|b| {
                let (ha, ta) = (c[a].0 as f64, c[a].1);
                let (hb, tb) = (b.0 as f64, b.1);
                hb > ha && ta > 0.0 && hb / ha.max(1.0) - 1.0 <= (1.0 - tb / ta) / 2.0
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quotient_of_tiles_carries_the_bytes_between_them() {
        // a 2 x 4 grid in 2 x 2 tiles: tasks 0 1 4 5 | 2 3 6 7
        let g = CartGrid::new(vec![2, 4], vec![false, false], vec![1, 1]).unwrap();
        let group = tile_of(&g, &[2, 2]);
        assert_eq!(group, [0, 0, 1, 1, 0, 0, 1, 1]);
        let p = Pattern::from_edges(
            8,
            vec![
                Edge {
                    src: 0,
                    dst: 1,
                    bytes: 5,
                },
                Edge {
                    src: 1,
                    dst: 2,
                    bytes: 7,
                },
                Edge {
                    src: 6,
                    dst: 0,
                    bytes: 3,
                },
                Edge {
                    src: 5,
                    dst: 2,
                    bytes: 2,
                },
            ],
            String::new(),
        )
        .unwrap();
        let (q, cut) = p.quotient(&group, 2, String::new()).unwrap();
        assert_eq!(cut, 12);
        let mut e: Vec<(u32, u32, u64)> =
            q.edges().iter().map(|e| (e.src, e.dst, e.bytes)).collect();
        e.sort_unstable();
        assert_eq!(e, [(0, 1, 9), (1, 0, 3)]);
    }

    #[test]
    fn a_candidate_gives_way_to_one_with_a_much_less_busy_link() {
        let p = Perm::identity(1);
        let c = |h: u128, t: f64| (h, t, (), vec![1], p.clone());
        // 1 % more hop-bytes for a 10 % less busy link: the first gives way; 3 % more
        // for 4 % less: not (3 > 2); the third has the most hop-bytes and stays
        let list = [c(1000, 10.0), c(1010, 9.0), c(1040, 8.64)];
        assert_eq!(traded(&list), [1, 2]);
        // a less busy link with fewer hop-bytes is not a trade (plain domination is the
        // optimiser's choice later): both stay
        assert_eq!(traded(&[c(1000, 10.0), c(900, 9.0)]), [0, 1]);
    }

    #[test]
    fn lowering_the_busiest_link_keeps_the_hop_bytes() {
        use copr_topology::{Torus, TorusParams};
        // random traffic among 16 tasks on a 4 x 4 torus, from random placements: the
        // result never has more hop-bytes, never a busier link, and its metrics are
        // those of a fresh evaluation (the incremental loads are right)
        let m1 = MapMachine::torus(Torus::full(TorusParams::new(vec![4, 4])).unwrap(), 1).unwrap();
        let mut rng = SplitMix(11);
        let mut lowered = 0;
        for case in 0..20 {
            let mut edges = Vec::new();
            for _ in 0..40 {
                let (a, b) = (rng.below(16) as u32, rng.below(16) as u32);
                if a != b {
                    edges.push(Edge {
                        src: a,
                        dst: b,
                        bytes: 1 + rng.below(1000) as u64,
                    });
                }
            }
            let qp = Pattern::from_edges(16, edges, String::new()).unwrap();
            let mut fwd: Vec<usize> = (0..16).collect();
            rng.shuffle(&mut fwd);
            let mut place = Perm::from_forward(fwd).unwrap();
            let before = evaluate(&qp, &m1, &place);
            let far = crate::clock::now() + std::time::Duration::from_secs(5);
            let changed = lower_link_same_hop_bytes(&qp, &m1, &mut place, far);
            let after = evaluate(&qp, &m1, &place);
            assert!(after.hop_bytes <= before.hop_bytes, "case {case}");
            assert!(
                after.max_link_time <= before.max_link_time * (1.0 + 1e-12),
                "case {case}"
            );
            if !changed {
                assert_eq!(after.hop_bytes, before.hop_bytes, "case {case}");
                assert_eq!(after.max_link_time, before.max_link_time, "case {case}");
            }
            lowered += usize::from(after.max_link_time < before.max_link_time * (1.0 - 1e-9));
        }
        // random placements leave room: most cases get a less busy link
        assert!(lowered >= 10, "{lowered} of 20");
    }

    #[test]
    fn the_expanded_mapping_has_the_quotients_hop_bytes_and_links() {
        use crate::{Algorithm, AlgorithmSpec, Collective};
        use copr_topology::{Torus, TorusParams};
        // Fox on an 8 x 8 grid, tiles of 4 on a 2 x 2 x 2 torus x 8 (64 tasks)
        let spec = AlgorithmSpec {
            algorithm: Algorithm::Fox,
            rows: 8,
            cols: 8,
            block_bytes: 64,
            collective: Collective::Binomial,
        };
        let p = Pattern::algorithm(&spec).unwrap();
        let g = p.shape().unwrap().clone();
        let m =
            MapMachine::torus(Torus::full(TorusParams::new(vec![2, 2, 2])).unwrap(), 8).unwrap();
        let m1 = m.clone().with_ranks_per_node(1).unwrap();
        let mut rng = SplitMix(5);
        for t in [vec![2, 4], vec![4, 2], vec![1, 8]] {
            let (q, _) = p.quotient(&tile_of(&g, &t), 8, String::new()).unwrap();
            let mut fwd: Vec<usize> = (0..8).collect();
            rng.shuffle(&mut fwd);
            let place = Perm::from_forward(fwd).unwrap();
            let full = evaluate(&p, &m, &expand_tiles(&g, &t, &place, 8));
            let quot = evaluate(&q, &m1, &place);
            assert_eq!(full.hop_bytes, quot.hop_bytes, "{t:?}");
            assert!((full.max_link_time - quot.max_link_time).abs() <= 1e-9 * full.max_link_time);
        }
        // every candidate puts 8 tasks on each node
        let shapes = strategy::tile_shapes(&g, 8);
        let far = crate::clock::now() + std::time::Duration::from_secs(5);
        let cands = algorithm_tile_candidates(&p, &m, &g, &shapes, &mut rng, far).unwrap();
        assert!(!cands.is_empty());
        for (name, map) in &cands {
            let mut per_node = [0usize; 8];
            for t in 0..64 {
                per_node[m.node_of_slot(map.apply(t))] += 1;
            }
            assert_eq!(per_node, [8; 8], "{name}");
        }
    }
}
