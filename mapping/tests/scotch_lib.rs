//! libscotch through copr's FFI layer (feature `scotch`): the mapping of a graph is a
//! permutation onto the machine's slots, equals what `scotch_gmap -Cd` (the bench's
//! peer, driven by `copr_testkit::scotch`) gives for the same graph and strategy, and
//! the optimiser's choice is no worse than libscotch's mappings on both measures.
//!
//! `cargo test -p copr-mapping --features scotch --release --test scotch_lib`
#![cfg(feature = "scotch")]

use std::path::PathBuf;
use std::time::Duration;

use copr::lap::Perm;
use copr_mapping::scotch::{map_with_scotch, ScotchError, ScotchStrategy};
use copr_mapping::{compare, evaluate, CartGrid, Edge, MapMachine, Options, Pattern, Strategy};
use copr_testkit::{graphs, scotch};

fn pattern(n: usize, e: &[(u32, u32, u64)]) -> Pattern {
    let edges = e
        .iter()
        .map(|&(src, dst, bytes)| Edge { src, dst, bytes })
        .collect();
    Pattern::from_edges(n, edges, "test graph".into()).unwrap()
}

fn workdir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("copr-scotchlib-{}-{name}", std::process::id()))
}

fn is_permutation_onto_slots(map: &Perm, m: &MapMachine) {
    let mut seen = vec![false; m.slots()];
    for t in 0..map.len() {
        let s = map.apply(t);
        assert!(
            m.has_slot(s),
            "task {t} on slot {s}, not a slot of the machine"
        );
        assert!(
            !std::mem::replace(&mut seen[s], true),
            "slot {s} used twice"
        );
    }
}

/// Every node of a `dims` torus, `rpn` slots each, and Scotch's view of it.
fn torus(dims: &[u32], rpn: usize) -> (MapMachine, scotch::ScotchTarget) {
    let m = copr_mapping::torus_machine(dims.to_vec(), None, None, rpn).unwrap();
    let d: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    (m, scotch::ScotchTarget::torus_cores(&d, rpn))
}

/// The nodes `idx` (linear, x fastest) of a `dims` torus.
fn torus_subset(dims: &[u32], idx: &[usize], rpn: usize) -> (MapMachine, scotch::ScotchTarget) {
    let m = MapMachine::torus(copr_testkit::layouts::torus_nodes(dims, idx), rpn).unwrap();
    let t = scotch::ScotchTarget::TorusSubset {
        dims: dims.iter().map(|&d| d as usize).collect(),
        nodes: idx.to_vec(),
        ranks_per_node: rpn,
    };
    (m, t)
}

/// Node of each task of a mapping.
fn nodes_of(map: &Perm, rpn: usize) -> Vec<usize> {
    (0..map.len()).map(|t| map.apply(t) / rpn).collect()
}

#[test]
fn direct_mapping_equals_scotch_gmap_on_a_torus_and_a_subset() {
    if !scotch::scotch_available() {
        println!("scotch_gmap not on PATH: the comparison is skipped");
        return;
    }
    let dir = workdir("direct");
    // a mesh graph and a power-law graph, 256 tasks, on 4x4x4 x 4 and on 32 of the
    // nodes of a 4x4x4 torus x 8
    let mut half: Vec<usize> = (0..64).collect();
    copr_mapping::SplitMix(5).shuffle(&mut half);
    half.truncate(32);
    half.sort_unstable();
    for (name, e) in [
        ("mesh", graphs::mesh(256, 2, 7)),
        ("power law", graphs::power_law(256, 3, 8)),
    ] {
        for (m, t) in [torus(&[4, 4, 4], 4), torus_subset(&[4, 4, 4], &half, 8)] {
            let p = pattern(256, &e);
            let ours = map_with_scotch(&p, &m, ScotchStrategy::Direct).unwrap();
            is_permutation_onto_slots(&ours.map, &m);
            let theirs = scotch::run_gmap(256, &e, &t, &dir).unwrap();
            assert_eq!(ours.weight_divisor, theirs.weight_divisor, "{name}");
            assert_eq!(
                ours.scotch_node, theirs.scotch_node,
                "{name}: Scotch's nodes"
            );
            let hb = |map: &[usize]| scotch::hop_bytes(&e, &t, map);
            assert_eq!(hb(ours.map.forward()), hb(&theirs.slot_of_task), "{name}");
            // and copr's own metric agrees with the independent count
            assert_eq!(
                evaluate(&p, &m, &ours.map).hop_bytes,
                u128::from(hb(ours.map.forward())),
                "{name}"
            );
        }
    }
}

#[test]
fn two_stage_mapping_equals_the_bench_two_stage() {
    if !scotch::scotch_available() {
        println!("scotch_gmap not on PATH: the comparison is skipped");
        return;
    }
    let dir = workdir("two-stage");
    let e = graphs::rgg(512, 3, 7.0, 11, true);
    let p = pattern(512, &e);
    let (m, t) = torus(&[4, 4, 2], 16);
    let ours = map_with_scotch(&p, &m, ScotchStrategy::TwoStage).unwrap();
    is_permutation_onto_slots(&ours.map, &m);
    let (theirs, _) = scotch::run_two_stage(512, &e, &t, &dir).unwrap();
    assert_eq!(
        nodes_of(&ours.map, 16),
        nodes_of(&Perm::from_forward(theirs).unwrap(), 16)
    );
}

#[test]
fn network_mapping_is_scored_independently() {
    // a k = 4 fat tree (16 hosts) x 4: no scotch_gmap peer (the bench hands Scotch a
    // `deco 0` distance matrix, libscotch here builds the architecture from the
    // network graph), so the hop-bytes are recounted from the hop distances
    let net = copr_topology::Network::from_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/topology/fat-tree-k4.net.toml"),
    )
    .unwrap();
    let m = MapMachine::network(net, None, Default::default(), 4).unwrap();
    let e = graphs::rgg(64, 2, 6.0, 3, true);
    let p = pattern(64, &e);
    for s in ScotchStrategy::ALL {
        let r = map_with_scotch(&p, &m, s).unwrap();
        is_permutation_onto_slots(&r.map, &m);
        let hb: u128 = e
            .iter()
            .map(|&(a, b, w)| {
                let (x, y) = (r.map.apply(a as usize) / 4, r.map.apply(b as usize) / 4);
                u128::from(w) * u128::from(m.hops(x, y))
            })
            .sum();
        assert_eq!(evaluate(&p, &m, &r.map).hop_bytes, hb, "{s:?}");
        // Scotch keeps tasks together: fewer hop-bytes than tasks in random order
        let packed = evaluate(&p, &m, &Perm::identity(64)).hop_bytes;
        assert!(hb < packed, "{s:?}: {hb} >= packed {packed}");
    }
}

#[test]
fn the_optimiser_is_no_worse_than_libscotch() {
    let (m, _) = torus(&[4, 4, 2], 16);
    let e = graphs::rgg(512, 2, 7.0, 2026, true);
    let p = pattern(512, &e);
    let opts = Options {
        budget: Duration::from_secs(3),
        ..Options::default()
    };
    let cmp = compare(
        &p,
        &m,
        &[Strategy::Packed, Strategy::Optimised],
        &opts,
        |_| {},
    )
    .unwrap();
    let opt = &cmp.row("optimised").unwrap().metrics;
    for s in ScotchStrategy::ALL {
        let r = map_with_scotch(&p, &m, s).unwrap();
        let sm = evaluate(&p, &m, &r.map);
        assert!(
            opt.hop_bytes <= sm.hop_bytes,
            "{s:?}: {} > {}",
            opt.hop_bytes,
            sm.hop_bytes
        );
        assert!(
            opt.max_link_time <= sm.max_link_time * (1.0 + 1e-12),
            "{s:?}: busiest link {} > {}",
            opt.max_link_time,
            sm.max_link_time
        );
    }
}

#[test]
fn bad_inputs_are_errors_or_trivial_mappings() {
    let (m, _) = torus(&[2, 2], 2);
    // more tasks than slots, and fewer
    for n in [9, 7] {
        let p = pattern(n, &[(0, 1, 5)]);
        let err = map_with_scotch(&p, &m, ScotchStrategy::Direct).unwrap_err();
        assert_eq!(err, ScotchError::Sizes { tasks: n, slots: 8 });
    }
    // a graph without messages, and one task on one slot
    let p = pattern(8, &[]);
    for s in ScotchStrategy::ALL {
        is_permutation_onto_slots(&map_with_scotch(&p, &m, s).unwrap().map, &m);
    }
    let one = MapMachine::flat(1, 1).unwrap();
    let p = pattern(1, &[]);
    let r = map_with_scotch(&p, &one, ScotchStrategy::TwoStage).unwrap();
    assert_eq!(r.map.forward(), &[0]);
    // nodes with different slot counts are not handed to libscotch
    let uneven = MapMachine::flat(2, 4)
        .unwrap()
        .with_slot_counts(vec![4, 2])
        .unwrap();
    let p = pattern(8, &[(0, 1, 1)]);
    assert!(matches!(
        map_with_scotch(&p, &uneven, ScotchStrategy::Direct),
        Err(ScotchError::Unsupported { .. })
    ));
    // a grid pattern is an error-free input too (the optimiser does not ask for it)
    let g = Pattern::grid(&CartGrid::new(vec![2, 4], vec![true; 2], vec![1; 2]).unwrap()).unwrap();
    is_permutation_onto_slots(
        &map_with_scotch(&g, &m, ScotchStrategy::Direct).unwrap().map,
        &m,
    );
    // the errors print as one line naming the values
    assert_eq!(
        ScotchError::Sizes { tasks: 9, slots: 8 }.to_string(),
        "the pattern has 9 tasks but the machine has 8 slots"
    );
}
