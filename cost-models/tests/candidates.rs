//! `LatencyBandwidth::candidates` on machines large enough that the rings of
//! neighbouring nodes are cut: every candidate's value is its delivered cost, and the
//! bound is below the delivered cost of every process that is not a candidate
//! (checked against all processes, brute force).

use std::path::Path;

use copr_cost_models::{delivered_cost, LatencyBandwidth, Package, SolverHints};
use copr_topology::{InterNode, Machine, PlacementRule, Torus, TorusParams};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// The data/cost machines with `ranks_per_node` set so that they hold `p` ranks.
fn config_machine(name: &str, nodes: usize, p: usize) -> Arc<Machine> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cost");
    let mut cfg =
        copr_cost_models::CostConfig::from_file(&dir.join(format!("{name}.toml"))).unwrap();
    let placement = cfg.topology.as_mut().and_then(|t| t.placement.as_mut());
    if let Some(
        copr_topology::PlacementConfig::Packed(r) | copr_topology::PlacementConfig::RoundRobin(r),
    ) = placement
    {
        r.ranks = None;
        r.ranks_per_node = Some(p.div_ceil(nodes));
    }
    cfg.build(&dir, Some(p)).unwrap().machine.unwrap()
}

fn machines() -> Vec<(String, Arc<Machine>)> {
    let torus = Machine::builder()
        .inter(InterNode::Torus(
            Torus::full(TorusParams::new(vec![8, 8, 8])).unwrap(),
        ))
        .rule(PlacementRule::packed(512, Some(1)))
        .build()
        .unwrap();
    let mut out = vec![("8x8x8 torus, 1 rank per node".to_string(), Arc::new(torus))];
    for (name, nodes, p) in [
        ("torus-3d", 128, 1024),
        ("torus-3d-spread", 100, 400),
        ("fat-tree", 16, 1024),
        ("dragonfly", 40, 1024),
        ("dragonfly", 40, 200),
        ("two-islands", 8, 1024),
    ] {
        out.push((format!("{name}, p = {p}"), config_machine(name, nodes, p)));
    }
    out
}

#[test]
fn bound_is_below_every_non_candidate_and_candidates_are_exact() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut finite_cut = 0;
    for (name, m) in machines() {
        let p = m.ranks();
        let model = LatencyBandwidth::new(m.clone());
        let mut rows_cut = 0;
        for _ in 0..60 {
            let x = rng.random_range(0..p);
            let senders = rng.random_range(1..=4);
            // senders near each other half of the time: the case the rings are for
            let base = rng.random_range(0..p);
            let incoming: Vec<(usize, Package)> = (0..senders)
                .map(|_| {
                    let i = if rng.random_bool(0.5) {
                        (base + rng.random_range(0..8)) % p
                    } else {
                        rng.random_range(0..p)
                    };
                    let bytes = if rng.random_bool(0.1) {
                        0
                    } else {
                        rng.random_range(1..1u64 << 20)
                    };
                    (i, Package::plain(bytes))
                })
                .collect();
            let mut list = Vec::new();
            let bound = model.candidates(x, &incoming, &mut list).unwrap();
            let mut is_candidate = vec![false; p];
            for &(y, c) in &list {
                let want = delivered_cost(&model, y, &incoming);
                assert!(
                    (c - want).abs() <= 1e-12 * want.abs().max(1e-300),
                    "{name}: candidate {y} priced {c}, delivered cost {want}"
                );
                is_candidate[y] = true;
            }
            // k: the senders' nodes' ranks plus at most max(256, 64·s) from the rings
            let mut sender_nodes: Vec<usize> = incoming.iter().map(|e| m.node_of(e.0)).collect();
            sender_nodes.sort_unstable();
            sender_nodes.dedup();
            let own: usize = sender_nodes
                .iter()
                .map(|&n| (0..p).filter(|&r| m.node_of(r) == n).count())
                .sum();
            let rings = 256.max(64 * sender_nodes.len());
            assert!(
                list.len() <= own + rings,
                "{name}: {} candidates",
                list.len()
            );
            let mut outside = 0;
            for y in (0..p).filter(|&y| !is_candidate[y]) {
                let c = delivered_cost(&model, y, &incoming);
                assert!(
                    bound <= c * (1.0 + 1e-12),
                    "{name}: row {x}, bound {bound} above C({y}) = {c}"
                );
                outside += 1;
            }
            if outside > 0 && bound.is_finite() && list.len() > own {
                rows_cut += 1;
            }
        }
        if rows_cut > 0 {
            finite_cut += 1;
        }
    }
    // the rings were cut with a finite bound on most machines (not a dense fallback)
    assert!(
        finite_cut >= 4,
        "only {finite_cut} machines exercised the rings"
    );
}
