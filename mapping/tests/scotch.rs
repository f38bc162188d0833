//! Tests of the Scotch adapter `copr_testkit::scotch`: file writers (always), and
//! mappings by `scotch_gmap` scored independently and by `gmtst` (skipped with a notice
//! when `scotch_gmap` is not on PATH).
//!
//! `cargo test --release --test scotch`; the timing runs:
//! `cargo test --release --test scotch -- --ignored --nocapture`.

use copr_testkit::scotch::*;
use std::path::PathBuf;

fn workdir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("copr-scotch-test-{}-{name}", std::process::id()))
}

fn have_scotch(test: &str) -> bool {
    let ok = scotch_available();
    if !ok {
        println!("{test}: scotch_gmap not on PATH, skipped");
    }
    ok
}

/// Periodic `a × b` grid, task `x + a·y`, each task sends `w` bytes to its 4 neighbours.
fn periodic_grid(a: usize, b: usize, w: u64) -> Vec<(u32, u32, u64)> {
    let mut e = Vec::new();
    for y in 0..b {
        for x in 0..a {
            let t = (x + a * y) as u32;
            for (nx, ny) in [
                ((x + 1) % a, y),
                ((x + a - 1) % a, y),
                (x, (y + 1) % b),
                (x, (y + b - 1) % b),
            ] {
                e.push((t, (nx + a * ny) as u32, w));
            }
        }
    }
    e
}

/// Independent torus distance: coordinates x fastest, wraparound in every dimension.
fn coords(dims: &[usize], k: usize) -> Vec<usize> {
    let mut c = Vec::new();
    let mut r = k;
    for &d in dims {
        c.push(r % d);
        r /= d;
    }
    c
}

fn ring(d: usize, a: usize, b: usize) -> u64 {
    let diff = a.abs_diff(b);
    diff.min(d - diff) as u64
}

fn torus_dist(dims: &[usize], a: usize, b: usize) -> u64 {
    let (ca, cb) = (coords(dims, a), coords(dims, b));
    (0..dims.len()).map(|i| ring(dims[i], ca[i], cb[i])).sum()
}

/// Hop-bytes computed here, from torus node indices `node_of_slot(slot)`.
fn test_hop_bytes(
    edges: &[(u32, u32, u64)],
    dims: &[usize],
    slot: &[usize],
    node_of_slot: impl Fn(usize) -> usize,
) -> u64 {
    edges
        .iter()
        .map(|&(a, b, w)| {
            w * torus_dist(
                dims,
                node_of_slot(slot[a as usize]),
                node_of_slot(slot[b as usize]),
            )
        })
        .sum()
}

fn assert_permutation(slot: &[usize], slots: usize) {
    let mut seen = vec![false; slots];
    for &s in slot {
        assert!(s < slots, "slot {s} >= {slots}");
        assert!(!seen[s], "slot {s} used twice");
        seen[s] = true;
    }
}

#[test]
fn grf_hand_made() {
    // 0→1 5 B and 1→0 3 B merge into 8; 0↔2 1+1; 1→2 2; 2→3 7; self-loop and 0-byte dropped.
    let edges = [
        (0, 1, 5),
        (1, 0, 3),
        (1, 2, 2),
        (2, 3, 7),
        (3, 3, 9),
        (0, 2, 1),
        (2, 0, 1),
        (3, 2, 0),
    ];
    assert_eq!(
        write_grf(4, &edges),
        "0\n4 8\n0 010\n2 8 1 2 2\n2 8 0 2 2\n3 2 0 2 1 7 3\n1 7 2\n"
    );
    // Repeated messages add up; an isolated task has degree 0.
    assert_eq!(
        write_grf(3, &[(1, 0, 2), (1, 0, 4)]),
        "0\n3 2\n0 010\n1 6 1\n1 6 0\n0\n"
    );
}

#[test]
fn target_texts() {
    assert_eq!(write_target(&ScotchTarget::torus(&[4, 4])), "torus2D 4 4\n");
    assert_eq!(
        write_target(&ScotchTarget::torus_cores(&[4, 2, 2], 16)),
        "torus3D 4 2 2\n"
    );
    assert_eq!(
        write_target(&ScotchTarget::torus(&[2, 2, 2, 2])),
        "torusXD 4 2 2 2 2\n"
    );
    assert_eq!(write_target(&ScotchTarget::torus(&[8])), "torusXD 1 8\n");
    // More than Scotch's 5 dimensions: size-1 dimensions dropped.
    assert_eq!(
        write_target(&ScotchTarget::torus(&[2, 1, 3, 1, 2, 2, 2])),
        "torusXD 5 2 3 2 2 2\n"
    );
    let sub = ScotchTarget::TorusSubset {
        dims: vec![4, 4, 4],
        nodes: vec![0, 5, 17, 63],
        ranks_per_node: 16,
    };
    assert_eq!(write_target(&sub), "sub 4 0 5 17 63\ntorus3D 4 4 4\n");
    // Nodes {0, 2} and {1, 3} are 2 hops apart, the rest 4: the bipartition must pair them.
    #[rustfmt::skip]
    let hops = vec![
        0, 4, 2, 4,
        4, 0, 4, 2,
        2, 4, 0, 4,
        4, 2, 4, 0,
    ];
    let deco = ScotchTarget::Distance {
        nodes: 4,
        hops,
        ranks_per_node: 16,
    };
    assert_eq!(
        write_target(&deco),
        "deco 0\n4 7\n0 16 4\n1 16 6\n2 16 5\n3 16 7\n4\n2 4\n4 2 4\n"
    );
}

/// Two-level fat tree: 16 nodes, 4 per leaf switch (2 hops), 2 leaves per pod (4 hops),
/// else 6 hops; nodes numbered so that leaf-mates are *not* consecutive.
fn fat_tree_hops() -> (usize, Vec<u32>) {
    let k = 16;
    let leaf = |v: usize| v % 4; // nodes v, v+4, v+8, v+12 share a leaf
    let pod = |v: usize| leaf(v) / 2;
    let mut h = vec![0u32; k * k];
    for a in 0..k {
        for b in 0..k {
            h[a * k + b] = if a == b {
                0
            } else if leaf(a) == leaf(b) {
                2
            } else if pod(a) == pod(b) {
                4
            } else {
                6
            };
        }
    }
    (k, h)
}

#[test]
fn deco_bipartition_follows_the_tree() {
    let (k, h) = fat_tree_hops();
    let term = deco_terminals(k, &h);
    // 16 nodes: every terminal at depth 4 (numbers 16..32), all distinct.
    let mut sorted = term.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (16..32).collect::<Vec<u64>>());
    // Domains of size 4 (terminal >> 2) are exactly the leaf switches, size 8 the pods.
    for a in 0..k {
        for b in 0..k {
            assert_eq!(
                term[a] >> 2 == term[b] >> 2,
                a % 4 == b % 4,
                "nodes {a} {b}"
            );
            assert_eq!(
                term[a] >> 3 == term[b] >> 3,
                a % 4 / 2 == b % 4 / 2,
                "nodes {a} {b}"
            );
        }
    }
}

#[test]
fn repair_moves_to_nearest_free_node() {
    // Ring of 4 nodes, 2 cores each; Scotch-like answer with 4 tasks on node 0.
    let t = ScotchTarget::torus_cores(&[4], 2);
    let part = [0, 0, 0, 0, 1, 1, 2, 3];
    let (slots, moved) = repair_to_slots(8, &[], &t, &part);
    assert_eq!(moved, 2);
    // Tasks 3 then 2 leave node 0: 3 to node 3 (1 hop, node 1 full), 2 to node 2.
    assert_eq!(slots, vec![0, 1, 4, 6, 2, 3, 5, 7]);
    // Least traffic to node-mates leaves first: tasks 2 and 3 have 1 B each, 0 and 1
    // have 9 B, so 0 and 1 stay on node 0.
    let e = [(0, 1, 9), (2, 3, 1)];
    let part = [0, 0, 0, 0, 1, 1, 2, 3];
    let (slots, moved) = repair_to_slots(8, &e, &t, &part);
    assert_eq!(moved, 2);
    assert_eq!(slots[0] / 2, 0);
    assert_eq!(slots[1] / 2, 0);
    assert_permutation(&slots, 8);
    // Balanced input: nothing moves, cores in task order.
    let (slots, moved) = repair_to_slots(4, &[], &t, &[3, 1, 3, 1]);
    assert_eq!((slots, moved), (vec![6, 2, 7, 3], 0));
}

#[test]
fn grid_4x4_on_16_node_tori() {
    if !have_scotch("grid_4x4_on_16_node_tori") {
        return;
    }
    let edges = periodic_grid(4, 4, 1);
    for dims in [vec![4, 4], vec![4, 2, 2]] {
        let t = ScotchTarget::torus(&dims);
        let dir = workdir(&format!("g44-{}", dims.len()));
        let r = run_gmap(16, &edges, &t, &dir).unwrap();
        assert_permutation(&r.slot_of_task, 16);
        assert_eq!(
            r.weight_divisor, 2,
            "merged weights are all 2: divided by their gcd"
        );
        let mine = test_hop_bytes(&edges, &dims, &r.slot_of_task, |s| s);
        let gmtst = run_gmtst(16, &edges, &t, &r.slot_of_task, &dir).unwrap();
        println!(
            "4x4 grid onto torus {dims:?}: hop-bytes {mine}, gmtst {gmtst}, moved {}",
            r.moved
        );
        assert_eq!(mine, gmtst, "numbering mismatch with gmtst");
        assert_eq!(mine, hop_bytes(&edges, &t, &r.slot_of_task));
        // One task per node: every one of the 64 messages travels at least 1 hop. Both
        // tori contain C4 × C4 with dilation 1; allow some slack for the heuristic.
        assert!((64..=96).contains(&mine), "hop-bytes {mine}");
        // Deterministic (-Cd).
        let again = run_gmap(16, &edges, &t, &dir).unwrap();
        assert_eq!(again.scotch_node, r.scotch_node);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn gmtst_agrees_with_x_fastest_on_arbitrary_mappings() {
    if !have_scotch("gmtst_agrees_with_x_fastest_on_arbitrary_mappings") {
        return;
    }
    // Arbitrary (not Scotch-made) assignments of a 6 × 4 grid onto torus3D 4 3 2: with
    // z fastest the sums differ, so equality pins Scotch's numbering.
    let dims = [4, 3, 2];
    let t = ScotchTarget::torus(&dims);
    let edges = periodic_grid(6, 4, 3);
    let dir = workdir("xfast");
    for mult in [5usize, 7, 11, 13] {
        let slot: Vec<usize> = (0..24).map(|i| (i * mult + 3) % 24).collect();
        let mine = test_hop_bytes(&edges, &dims, &slot, |s| s);
        assert_eq!(
            mine,
            run_gmtst(24, &edges, &t, &slot, &dir).unwrap(),
            "mult {mult}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn grid_32x32_on_4x4x4_times_16() {
    if !have_scotch("grid_32x32_on_4x4x4_times_16") {
        return;
    }
    let dims = [4, 4, 4];
    let edges = periodic_grid(32, 32, 1 << 20);
    let t = ScotchTarget::torus_cores(&dims, 16);
    let dir = workdir("g32");
    let r = run_gmap(1024, &edges, &t, &dir).unwrap();
    assert_permutation(&r.slot_of_task, 1024);
    let mine = test_hop_bytes(&edges, &dims, &r.slot_of_task, |s| s / 16);
    assert_eq!(mine, hop_bytes(&edges, &t, &r.slot_of_task));
    // Packed order (task i on slot i: half a grid row per node) for comparison.
    let packed: Vec<usize> = (0..1024).collect();
    let packed_hb = test_hop_bytes(&edges, &dims, &packed, |s| s / 16);
    println!(
        "32x32 onto 4x4x4 x 16: hop-bytes {} MiB (packed {} MiB), moved {}, divisor {}, scotch {:.3} s",
        mine >> 20,
        packed_hb >> 20,
        r.moved,
        r.weight_divisor,
        r.scotch_seconds
    );
    assert!(
        mine < packed_hb,
        "Scotch {mine} not better than packed {packed_hb}"
    );
    // 1 MiB messages: weights scaled for Scotch; gmtst check with 1-byte weights.
    assert!(r.weight_divisor > 1);
    let unit = periodic_grid(32, 32, 1);
    assert_eq!(
        mine >> 20,
        run_gmtst(1024, &unit, &t, &r.slot_of_task, &dir).unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn subset_of_torus_nodes() {
    if !have_scotch("subset_of_torus_nodes") {
        return;
    }
    let dims = [4, 4, 4];
    let nodes = vec![63, 1, 5, 17, 22, 40, 42, 58];
    let t = ScotchTarget::TorusSubset {
        dims: dims.to_vec(),
        nodes: nodes.clone(),
        ranks_per_node: 8,
    };
    let edges = periodic_grid(8, 8, 1);
    let dir = workdir("sub");
    let r = run_gmap(64, &edges, &t, &dir).unwrap();
    assert_permutation(&r.slot_of_task, 64);
    let mine = test_hop_bytes(&edges, &dims, &r.slot_of_task, |s| nodes[s / 8]);
    let gmtst = run_gmtst(64, &edges, &t, &r.slot_of_task, &dir).unwrap();
    println!(
        "8x8 grid onto 8 scattered nodes x 8: hop-bytes {mine}, gmtst {gmtst}, moved {}",
        r.moved
    );
    assert_eq!(mine, gmtst);
    // Fewer tasks than slots also works.
    let small = periodic_grid(7, 7, 1);
    let r = run_gmap(49, &small, &t, &dir).unwrap();
    assert_permutation(&r.slot_of_task, 64);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn distance_matrix_target() {
    if !have_scotch("distance_matrix_target") {
        return;
    }
    let (k, hops) = fat_tree_hops();
    let t = ScotchTarget::Distance {
        nodes: k,
        hops: hops.clone(),
        ranks_per_node: 4,
    };
    let edges = periodic_grid(8, 8, 1);
    let dir = workdir("deco");
    let r = run_gmap(64, &edges, &t, &dir).unwrap();
    assert_permutation(&r.slot_of_task, 64);
    let hb = |slot: &[usize]| -> u64 {
        edges
            .iter()
            .map(|&(a, b, w)| {
                w * u64::from(hops[(slot[a as usize] / 4) * k + slot[b as usize] / 4])
            })
            .sum()
    };
    let mine = hb(&r.slot_of_task);
    assert_eq!(mine, hop_bytes(&edges, &t, &r.slot_of_task));
    // Packed order puts half rows on nodes 0,1,… which are not leaf-mates here.
    let packed: Vec<usize> = (0..64).collect();
    println!(
        "8x8 grid onto 16-node fat tree x 4: hop-bytes {mine} (packed {}), moved {}",
        hb(&packed),
        r.moved
    );
    assert!(mine < hb(&packed));
    assert!(run_gmtst(64, &edges, &t, &r.slot_of_task, &dir).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn huge_weights_are_scaled() {
    if !have_scotch("huge_weights_are_scaled") {
        return;
    }
    let edges: Vec<(u32, u32, u64)> = periodic_grid(4, 4, 3_000_000_000);
    let t = ScotchTarget::torus(&[4, 4]);
    let dir = workdir("huge");
    let r = run_gmap(16, &edges, &t, &dir).unwrap();
    assert!(r.weight_divisor > 1);
    assert_permutation(&r.slot_of_task, 16);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_targets_are_rejected() {
    let dir = workdir("bad");
    let e = periodic_grid(4, 4, 1);
    assert!(
        run_gmap(16, &e, &ScotchTarget::torus(&[3, 5]), &dir).is_err(),
        "too few slots"
    );
    let dup = ScotchTarget::TorusSubset {
        dims: vec![4, 4],
        nodes: vec![1, 1],
        ranks_per_node: 8,
    };
    assert!(run_gmap(16, &e, &dup, &dir).is_err());
    let zero = ScotchTarget::Distance {
        nodes: 2,
        hops: vec![0, 0, 0, 0],
        ranks_per_node: 8,
    };
    assert!(run_gmap(16, &e, &zero, &dir).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Timings reported in the notes; `-- --ignored --nocapture`.
#[test]
#[ignore]
fn timing_large_grids() {
    if !have_scotch("timing_large_grids") {
        return;
    }
    for (side, dims) in [(128usize, [16usize, 8, 8]), (320, [20, 20, 16])] {
        let n = side * side;
        let edges = periodic_grid(side, side, 1 << 20);
        let t = ScotchTarget::torus_cores(&dims, 16);
        for extra in [&[][..], &["-cb"][..]] {
            let dir = workdir(&format!("time-{side}"));
            let r = run_gmap_with(n, &edges, &t, &dir, extra).unwrap();
            assert_permutation(&r.slot_of_task, n);
            let hb = hop_bytes(&edges, &t, &r.slot_of_task);
            let packed: Vec<usize> = (0..n).collect();
            println!(
                "{side}x{side} onto {dims:?} x 16 {extra:?}: scotch_gmap {:.2} s, total {:.2} s, moved {}, \
                 hop-bytes {} MiB (packed {} MiB)",
                r.scotch_seconds,
                r.total_seconds,
                r.moved,
                hb >> 20,
                hop_bytes(&edges, &t, &packed) >> 20
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
