//! The paper sweep: every line's remote volume equals the assignment optimum found by an
//! independent solver (pathfinding's Kuhn–Munkres), and b = 10^4 removes all traffic.

use copr::layout::Op;
use copr::sweep::SweepConfig;
use copr::volume::Volumes;
use pathfinding::kuhn_munkres::kuhn_munkres;
use pathfinding::matrix::Matrix;

/// Largest local volume Σ_t V[σ(t)][t] over all σ, by Kuhn–Munkres on a dense table.
fn optimum_local(v: &Volumes) -> u64 {
    let p = v.ranks();
    let d = v.matrix().transpose().to_dense();
    let w = Matrix::from_vec(p, p, d.iter().map(|&x| x as i64).collect()).unwrap();
    let (best, _) = kuhn_munkres(&w);
    best as u64
}

#[test]
fn default_sweep_is_the_paper_experiment_and_exact_at_every_block() {
    let cfg = SweepConfig::default();
    assert!(cfg.blocks.len() >= 20);
    assert_eq!(cfg.blocks.first(), Some(&1));
    assert_eq!(cfg.blocks.last(), Some(&10_000));
    let rows = cfg.run(&|| {}).unwrap();
    for r in &rows {
        let (s, t) = cfg.layouts(r.block).unwrap();
        let v = Volumes::compute(&s, &t, Op::Identity).unwrap();
        let best = v.total() - optimum_local(&v);
        assert_eq!(r.remote_after, best, "block {}", r.block);
        assert_eq!(r.remote_before, v.remote());
        assert!(
            r.greedy_remote_after >= best,
            "greedy beat the optimum at {}",
            r.block
        );
        assert_eq!(r.total_elements, 10_000_000_000);
    }
    let last = rows.iter().find(|r| r.block == 10_000).unwrap();
    assert_eq!(last.remote_after, 0);
    assert_eq!(last.reduction_percent, 100.0);
    // the exact optimum is strictly better than COSTA's greedy somewhere in the sweep
    assert!(rows.iter().any(|r| r.remote_after < r.greedy_remote_after));
}

#[test]
fn smaller_sweeps_agree_with_kuhn_munkres_too() {
    let cfg = SweepConfig {
        m: 997,
        n: 1200,
        nprow: 3,
        npcol: 4,
        target_block: 37,
        source_order: copr::layout::Order::ColMajor,
        target_order: copr::layout::Order::RowMajor,
        blocks: (1..60).collect(),
    };
    for r in cfg.run(&|| {}).unwrap() {
        let (s, t) = cfg.layouts(r.block).unwrap();
        let v = Volumes::compute(&s, &t, Op::Identity).unwrap();
        assert_eq!(
            r.remote_after,
            v.total() - optimum_local(&v),
            "block {}",
            r.block
        );
    }
}

/// COSTA's greedy swaps the straightforward way: every unordered pair with traffic,
/// its weight V[u][w] + V[w][u] − V[u][u] − V[w][w] (looked up entry by entry), all
/// sorted by weight (descending) then (u, w), taken while both ends are free.
fn greedy_reference(v: &copr::csr::Csr) -> Vec<usize> {
    let n = v.n_rows();
    let mut pairs: Vec<(i128, usize, usize)> = Vec::new();
    for u in 0..n {
        for w in u + 1..n {
            let (uw, wu) = (v.get(u, w), v.get(w, u));
            if uw == 0 && wu == 0 {
                continue;
            }
            let weight =
                i128::from(uw) + i128::from(wu) - i128::from(v.get(u, u)) - i128::from(v.get(w, w));
            if weight > 0 {
                pairs.push((weight, u, w));
            }
        }
    }
    pairs.sort_by(|x, y| y.0.cmp(&x.0).then((x.1, x.2).cmp(&(y.1, y.2))));
    let mut sigma: Vec<usize> = (0..n).collect();
    let mut used = vec![false; n];
    for (_, u, w) in pairs {
        if !used[u] && !used[w] {
            used[u] = true;
            used[w] = true;
            sigma.swap(u, w);
        }
    }
    sigma
}

#[test]
fn greedy_swaps_match_the_straightforward_greedy() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    for round in 0..400 {
        let n = rng.random_range(1..70usize);
        let density = rng.random_range(0.02..0.6);
        // small values make many ties; huge ones exceed 64 bits once summed
        let hi: u64 = match round % 3 {
            0 => 4,
            1 => 1000,
            _ => u64::MAX,
        };
        // every other round only a few ranks receive (most pairs are then pruned)
        let receivers: Vec<usize> = if round % 2 == 0 {
            (0..n).collect()
        } else {
            (0..rng.random_range(1..4usize))
                .map(|_| rng.random_range(0..n))
                .collect()
        };
        let density = if round % 2 == 0 { density } else { 0.9 };
        let mut t = Vec::new();
        for r in 0..n {
            for c in 0..n {
                if receivers.contains(&c) && rng.random_bool(density) {
                    let x = if hi == u64::MAX && rng.random_bool(0.5) {
                        u64::MAX - rng.random_range(0..3u64)
                    } else {
                        rng.random_range(1..=hi.min(1 << 40))
                    };
                    t.push((r, c, x));
                }
            }
        }
        let v = copr::csr::Csr::from_triplets(n, n, t);
        assert_eq!(
            copr::lap::greedy_swaps(&v).forward(),
            greedy_reference(&v).as_slice(),
            "round {round}, n {n}"
        );
    }
    // sweep instances: every rank receives (target block 100), or 6 do (1000)
    for (target_block, b) in [
        (100, 1),
        (100, 7),
        (100, 64),
        (1000, 1),
        (1000, 7),
        (1000, 250),
    ] {
        let cfg = SweepConfig {
            m: 3000,
            n: 2000,
            nprow: 12,
            npcol: 10,
            target_block,
            ..SweepConfig::default()
        };
        let (s, t) = cfg.layouts(b).unwrap();
        let v = Volumes::compute(&s, &t, Op::Identity).unwrap();
        assert_eq!(
            copr::lap::greedy_swaps(v.matrix()).forward(),
            greedy_reference(v.matrix()).as_slice(),
            "target block {target_block}, block {b}"
        );
    }
}

/// A sweep line the long way, from the whole volume matrix: V, the exact solver on Vᵀ,
/// COSTA's greedy swaps on V, and the remote volumes summed over every entry.
fn line_from_whole_matrix(cfg: &SweepConfig, b: usize) -> (u64, u64, u64, u64) {
    let (s, t) = cfg.layouts(b).unwrap();
    let v = Volumes::compute(&s, &t, Op::Identity).unwrap();
    let sigma = copr::lap::sparse_max(&v.matrix().transpose()).unwrap();
    let greedy = copr::lap::greedy_swaps(v.matrix());
    (
        v.total(),
        v.remote(),
        v.remote_after(&sigma),
        v.remote_after(&greedy),
    )
}

/// The sweep works on a cut of Vᵀ (the receiving ranks' rows, each with its 2k best
/// entries from non-receiving ranks): every printed number must equal the whole
/// matrix's, also where rows are cut (many senders, few receivers, ties everywhere),
/// and the rows come back in the order of `blocks` although they run in parallel.
#[test]
fn the_cut_matrix_gives_the_numbers_of_the_whole_matrix() {
    use copr::layout::Order;
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let orders = [Order::RowMajor, Order::ColMajor];
    let mut cut_somewhere = false;
    for round in 0..60 {
        let nprow = rng.random_range(1..13usize);
        let npcol = rng.random_range(1..13usize);
        let m = rng.random_range(1..600usize);
        let n = rng.random_range(1..600usize);
        // large target blocks: few receivers, so most rows are cut
        let target_block = rng.random_range(1..=m.max(n));
        let mut blocks: Vec<usize> = (0..6).map(|_| rng.random_range(1..80usize)).collect();
        blocks.push(1);
        let cfg = SweepConfig {
            m,
            n,
            nprow,
            npcol,
            target_block,
            source_order: orders[rng.random_range(0..2usize)],
            target_order: orders[rng.random_range(0..2usize)],
            blocks: blocks.clone(),
        };
        let rows = cfg.run(&|| {}).unwrap();
        assert_eq!(rows.len(), blocks.len());
        for (r, &b) in rows.iter().zip(&blocks) {
            assert_eq!(r.block, b, "round {round}: rows out of order");
            let want = line_from_whole_matrix(&cfg, b);
            let got = (
                r.total_elements,
                r.remote_before,
                r.remote_after,
                r.greedy_remote_after,
            );
            assert_eq!(got, want, "round {round}, {cfg:?}, block {b}");
            let (s, t) = cfg.layouts(b).unwrap();
            let v = Volumes::compute(&s, &t, Op::Identity).unwrap();
            let vt = v.matrix().transpose();
            let receivers = (0..v.ranks())
                .filter(|&t| vt.row(t).next().is_some())
                .count();
            let longest = (0..v.ranks()).map(|t| vt.row(t).count()).max().unwrap_or(0);
            cut_somewhere |= longest > 3 * receivers;
        }
    }
    assert!(cut_somewhere, "no instance had rows long enough to be cut");
}
