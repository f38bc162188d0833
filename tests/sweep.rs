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
