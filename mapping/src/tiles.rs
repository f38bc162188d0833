//! Node-sized tiles of a grid and their placement: the grid of tiles, the task mapping
//! a placement of tiles gives, and product embeddings of a tile grid into a whole
//! torus (each tile-grid dimension a product of torus dimensions, or of the two halves
//! of a 4-ring in Gray order, walked in boustrophedon order: dilation 1 whenever the
//! factors allow it).

use std::time::Instant;

use super::machine::{MapMachine, NetKind};
use super::metrics::evaluate;
use super::pattern::{CartGrid, Pattern};
use super::strategy;
use copr::error::Result;
use copr::lap::Perm;

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
pub(crate) fn expand_tiles(g: &CartGrid, t: &[usize], place: &Perm, k: usize) -> Perm {
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
pub(crate) fn embeddings(
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
        if crate::clock::now() >= deadline {
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
    let scored: Vec<(f64, f64, String, Perm)> = found
        .into_iter()
        .map(|(whb, groups)| {
            let map = place(q, &groups, nt, tdims, t, &node_at);
            let lt = evaluate(qp, m1, &map).max_link_time;
            (whb, lt, describe(&groups), map)
        })
        .collect();
    keep_best(scored, keep)
}

/// Of the embeddings `(weighted hop-bytes, largest link time, description,
/// placement)`, the first `keep` as listed and the `keep / 2` best by link time (ties
/// by weighted hop-bytes), each placement once.
fn keep_best(mut scored: Vec<(f64, f64, String, Perm)>, keep: usize) -> Vec<(String, Perm)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::{Torus, TorusParams};
    use std::time::Duration;

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
        let best = embeddings(&q, &p, &m, 6, crate::clock::now() + Duration::from_secs(60))
            .into_iter()
            .map(|(_, e)| evaluate(&p, &m, &e))
            .min_by_key(|x| x.hop_bytes)
            .unwrap();
        assert_eq!(best.dilation_max, 1);
        assert_eq!(best.hop_bytes, p.total_bytes());
    }
}
