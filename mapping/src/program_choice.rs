//! The last step of the optimiser for a grid algorithm's pattern (Cannon, Fox, Snyder,
//! SUMMA: [`Pattern::algorithm`]) on a network graph: structured mappings of the
//! process grid and the optimiser's own mapping, judged by the time of the algorithm's
//! program in the staged flow model ([`crate::program_time`], which follows SimGrid's
//! ranking of these programs where the summed traffic's measures do not).
//!
//! The structured candidates of an `r × c` grid on nodes of `n` slots, in the order
//! they are timed:
//! * **tiles** of `a × b` tasks per node (`a·b = n`, `a | r`, `b | c`, `a, b ≥ 2`, the
//!   widest first), the tiles in bit-reversed order when the tile grid's sides `R`
//!   and `C` are powers of two (tile `(x, y)` on node `rev(y) + C·rev(x)`, each index's
//!   bits reversed: the tiles that a binomial tree's first levels join, half and a
//!   quarter of a row or column apart, become neighbours in the node order, under one
//!   switch of a fat tree), then in row-major order;
//! * **skewed rows** (`n | c`): row `i` laid out row-major with its columns rotated by
//!   `s·i`, task `(i, j)` on slot `i·c + (j + s·i) mod c`, for `s = n/2, n/4, …, 1`. A
//!   node holds `n` consecutive columns of one row, and consecutive rows have their
//!   node boundaries at other columns, so the rows' binomial trees, rooted at a column
//!   that moves with the row, cross nodes at other levels.
//!
//! The optimiser's mapping is timed first; each candidate replaces the best so far
//! when its modelled time is lower (its timing stops as soon as the simulated clock
//! passes the best's), until the deadline (an evaluation the deadline interrupts is
//! dropped). So for the same optimiser's mapping a later deadline never gives a
//! mapping the model times higher, and the result is a function of the seed and of
//! how many candidates were timed.

use std::time::Instant;

use super::algorithms::{Algorithm, AlgorithmSpec, Collective};
use super::candidates::Scored;
use super::fluid::RoundModel;
use super::machine::{MapMachine, NetKind};
use super::pattern::Pattern;
use super::staged::{program_time_until, Program};
use copr::lap::Perm;

/// The end of the origin of a mapping this step chose over the optimiser's.
pub(crate) const CHOSEN_BY_MODEL: &str = "(staged model)";

/// Programs of more messages than this are not timed (one evaluation of Cannon at
/// p = 1024, 65 000 messages, takes seconds).
pub(crate) const MAX_PROGRAM_MESSAGES: usize = 200_000;

/// The algorithm whose pattern `p` is, when `p` is one on a network graph `m` that it
/// fills (the pattern's process grid, block size and trees tried in turn, the
/// messages compared): then the optimiser's mapping is chosen by the staged model.
pub(crate) fn applies(p: &Pattern, m: &MapMachine) -> Option<AlgorithmSpec> {
    if !matches!(m.kind(), NetKind::Graph(..)) || p.grid_spec().is_some() || p.tasks() != m.slots()
    {
        return None;
    }
    let g = p.shape()?;
    let (&[rows, cols], Some(&block_bytes)) = (g.dims.as_slice(), g.bytes.first()) else {
        return None;
    };
    for algorithm in Algorithm::ALL {
        for collective in [Collective::Binomial, Collective::Ring] {
            let s = AlgorithmSpec {
                algorithm,
                rows,
                cols,
                block_bytes,
                collective,
            };
            let messages = match algorithm {
                Algorithm::Summa => rows * cols * (rows + cols),
                _ => 3 * rows * cols * rows,
            };
            if messages > MAX_PROGRAM_MESSAGES {
                continue;
            }
            if Pattern::algorithm(&s).is_ok_and(|q| q.edges() == p.edges()) {
                return Some(s);
            }
        }
    }
    None
}

/// The structured candidates of an `rows × cols` grid on nodes of `n` slots (module
/// docs), in the order they are timed (the tiles, then the skewed rows): task
/// `t = i·cols + j` on slot `map[t]`.
pub(crate) fn structured(rows: usize, cols: usize, n: usize) -> Vec<(String, Vec<usize>)> {
    let mut out = Vec::new();
    for a in 2..n {
        let b = n / a;
        if a * b != n || b < 2 || rows % a != 0 || cols % b != 0 {
            continue;
        }
        let (tr, tc) = (rows / a, cols / b);
        let tiled = |node: &dyn Fn(usize, usize) -> usize| -> Vec<usize> {
            (0..rows * cols)
                .map(|t| {
                    let (i, j) = (t / cols, t % cols);
                    node(i / a, j / b) * n + (i % a) * b + j % b
                })
                .collect()
        };
        if tr.is_power_of_two() && tc.is_power_of_two() {
            let node = |x: usize, y: usize| reversed(y, tc) + tc * reversed(x, tr);
            out.push((format!("tiles {a}x{b}, bit-reversed"), tiled(&node)));
        }
        out.push((format!("tiles {a}x{b}"), tiled(&|x, y| x * tc + y)));
    }
    if n == 0 || cols % n != 0 {
        return out;
    }
    let mut s = n / 2;
    while s >= 1 {
        let map = (0..rows * cols)
            .map(|t| {
                let (i, j) = (t / cols, t % cols);
                i * cols + (j + s * i) % cols
            })
            .collect();
        out.push((format!("rows skewed by {s}"), map));
        s /= 2;
    }
    out
}

/// `x < len` (a power of two) with its `log2(len)` bits in reverse order.
fn reversed(x: usize, len: usize) -> usize {
    let bits = len.trailing_zeros();
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

/// `first` (the optimiser's mapping of `p`, the pattern of `spec`) or the structured
/// candidate the staged model times lowest (module docs), with the model's time of the
/// returned mapping when it was timed before `deadline`.
pub(crate) fn choose(
    p: &Pattern,
    m: &MapMachine,
    spec: &AlgorithmSpec,
    first: Scored,
    deadline: Instant,
) -> (Scored, Option<f64>) {
    let Ok(prog) = Program::algorithm(spec) else {
        return (first, None);
    };
    let model = RoundModel::simgrid_like();
    let time = |map: &Perm, cutoff: f64| {
        program_time_until(&prog, m, map, &model, (Some(deadline), cutoff))
    };
    let Some(mut best_t) = time(&first.map, f64::INFINITY) else {
        return (first, None);
    };
    let mut best = first;
    let mut seen = vec![best.map.forward().to_vec()];
    for (name, map) in structured(spec.rows, spec.cols, m.ranks_per_node()) {
        if Instant::now() >= deadline {
            break;
        }
        if seen.contains(&map) {
            continue;
        }
        let Ok(perm) = Perm::from_forward(map.clone()) else {
            continue;
        };
        seen.push(map);
        match time(&perm, best_t) {
            Some(t) if t < best_t => {
                best_t = t;
                best = Scored::new(p, m, perm, format!("{name} {CHOSEN_BY_MODEL}"));
            }
            Some(_) => {}
            None => break,
        }
    }
    (best, Some(best_t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundles::test_fat_tree;
    use crate::staged::program_time;
    use std::time::Duration;

    fn spec(algorithm: Algorithm, q: usize) -> AlgorithmSpec {
        AlgorithmSpec {
            algorithm,
            rows: q,
            cols: q,
            block_bytes: 1 << 18,
            collective: Collective::Binomial,
        }
    }

    /// The k = 4 fat tree (16 hosts) with 4 slots per host: an 8 × 8 grid fills it.
    fn machine() -> MapMachine {
        MapMachine::network(test_fat_tree(4), None, Default::default(), 4).unwrap()
    }

    #[test]
    fn skewed_rows_and_tiles_by_hand_on_a_4x4_grid() {
        // nodes of 4 slots: tiles 2x2, then skewed by 2, by 1
        let c = structured(4, 4, 4);
        let names: Vec<&str> = c.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "tiles 2x2, bit-reversed",
                "tiles 2x2",
                "rows skewed by 2",
                "rows skewed by 1"
            ]
        );
        // a 2 x 2 tile grid: reversing one bit changes nothing
        assert_eq!(c[0].1, c[1].1);
        // skewed by 2: row 1 rotated by 2, row 2 by 4 = 0, row 3 by 6 = 2
        assert_eq!(
            c[2].1,
            [0, 1, 2, 3, 6, 7, 4, 5, 8, 9, 10, 11, 14, 15, 12, 13]
        );
        // node 1 (slots 4..8) holds row 1's columns 2, 3, 0, 1
        let on_node_1: Vec<usize> = (0..16).filter(|&t| c[2].1[t] / 4 == 1).collect();
        assert_eq!(on_node_1, [4, 5, 6, 7]);
        // tiles 2x2: node 0 holds (0,0), (0,1), (1,0), (1,1); node 1 the next tile right
        let node = |t: usize| c[1].1[t] / 4;
        assert_eq!([node(0), node(1), node(4), node(5)], [0; 4]);
        assert_eq!([node(2), node(3), node(6), node(7)], [1; 4]);
        assert_eq!([node(8), node(9), node(12), node(13)], [2; 4]);
        // every candidate is a permutation
        for (_, map) in &c {
            assert!(Perm::from_forward(map.clone()).is_ok());
        }
        // bit-reversed on 8 x 8 with tiles 2x2 (a 4 x 4 tile grid): tile (x, y) on node
        // rev(y) + 4 rev(x), rev = 0, 2, 1, 3
        let r = &structured(8, 8, 4)[0];
        assert_eq!(r.0, "tiles 2x2, bit-reversed");
        let at = |i: usize, j: usize| r.1[i * 8 + j];
        assert_eq!(at(0, 0), 0);
        assert_eq!(at(0, 2), 8); // tile (0, 1): node 2
        assert_eq!(at(0, 4), 4); // tile (0, 2): node 1
        assert_eq!(at(2, 0), 32); // tile (1, 0): node 8
        assert_eq!(at(3, 3), 43); // tile (1, 1): node 10, its cell (1, 1)
        assert_eq!(at(7, 7), 63); // tile (3, 3): node 15
                                  // 8 slots per node on 8 x 8: tiles 2x4 before 4x2
        let s = structured(8, 8, 8);
        let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "tiles 2x4, bit-reversed",
                "tiles 2x4",
                "tiles 4x2, bit-reversed",
                "tiles 4x2",
                "rows skewed by 4",
                "rows skewed by 2",
                "rows skewed by 1"
            ]
        );
        // 6 x 6 on nodes of 4: a 3 x 3 grid of 2x2 tiles, row-major only; no skewed
        // rows (4 does not divide a row)
        let six: Vec<String> = structured(6, 6, 4).into_iter().map(|(n, _)| n).collect();
        assert_eq!(six, ["tiles 2x2"]);
        assert!(structured(5, 5, 4).is_empty());
    }

    #[test]
    fn recognises_the_algorithm_on_network_graphs_only() {
        let m = machine();
        for a in Algorithm::ALL {
            let s = spec(a, 8);
            let p = Pattern::algorithm(&s).unwrap();
            assert_eq!(applies(&p, &m), Some(s), "{}", a.name());
            let ring = AlgorithmSpec {
                collective: Collective::Ring,
                ..s
            };
            let p = Pattern::algorithm(&ring).unwrap();
            // Cannon has no tree: its ring pattern and program are the binomial ones
            let want = if a == Algorithm::Cannon { s } else { ring };
            assert_eq!(applies(&p, &m), Some(want), "{} ring", a.name());
        }
        let p = Pattern::algorithm(&spec(Algorithm::Fox, 8)).unwrap();
        let torus = crate::torus_machine(vec![4, 4], None, None, 4).unwrap();
        assert_eq!(applies(&p, &torus), None);
        // the same grid's neighbour exchange is no algorithm
        let g = crate::CartGrid::new(vec![8, 8], vec![true, true], vec![1 << 18; 2]).unwrap();
        assert_eq!(applies(&Pattern::grid(&g).unwrap(), &m), None);
        // nor are the algorithm's messages with one left out
        let mut e = p.edges().to_vec();
        e.pop();
        let q = Pattern::from_edges(64, e, "fox less one".into()).unwrap();
        assert_eq!(applies(&q, &m), None);
    }

    #[test]
    fn keeps_the_faster_of_the_first_mapping_and_the_candidates() {
        let m = machine();
        let far = Instant::now() + Duration::from_secs(3600);
        let model = RoundModel::simgrid_like();
        for a in [Algorithm::Snyder, Algorithm::Summa] {
            let s = spec(a, 8);
            let p = Pattern::algorithm(&s).unwrap();
            let prog = Program::algorithm(&s).unwrap();
            let t = |map: &Perm| program_time(&prog, &m, map, &model);
            // a scrambled first mapping: slower than the best structured candidate
            let mut fwd: Vec<usize> = (0..64).collect();
            copr::rng::SplitMix(7).shuffle(&mut fwd);
            let scrambled = Perm::from_forward(fwd).unwrap();
            let first = Scored::new(&p, &m, scrambled.clone(), "scrambled".into());
            let times: Vec<f64> = structured(8, 8, 4)
                .into_iter()
                .map(|(_, map)| t(&Perm::from_forward(map).unwrap()))
                .collect();
            let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
            assert!(fastest < t(&scrambled), "{}", a.name());
            let (best, bt) = choose(&p, &m, &s, first, far);
            assert_ne!(best.origin, "scrambled");
            assert_eq!(bt, Some(fastest));
            assert_eq!(t(&best.map), fastest);
            // the fastest as the first mapping: kept
            let again = Scored::new(&p, &m, best.map.clone(), "kept".into());
            let (kept, _) = choose(&p, &m, &s, again, far);
            assert_eq!(kept.origin, "kept");
            // a deadline already passed: the first mapping, untimed
            let first = Scored::new(&p, &m, scrambled.clone(), "scrambled".into());
            let (late, lt) = choose(&p, &m, &s, first, Instant::now());
            assert_eq!((late.origin.as_str(), lt), ("scrambled", None));
        }
    }
}
