//! The optimiser on patterns given as graphs: the optimum of small graphs by brute
//! force, and structure the multilevel mapper must find.

use copr::lap::Perm;
use copr_mapping::{
    compare, evaluate, hop_bytes_bound, optimise, optimise_rounds, table, CartGrid, Edge,
    MapMachine, Optimised, Options, Pattern, Scored, SplitMix, Strategy,
};

mod common;
use common::{all_perms, starts, torus};

/// A seeded random graph: each ordered pair a message with probability 1/3, bytes
/// 1..=64.
fn random_graph(n: usize, seed: u64) -> Pattern {
    let mut rng = SplitMix(seed);
    let mut edges = Vec::new();
    for a in 0..n as u32 {
        for b in 0..n as u32 {
            if a != b && rng.next_u64() % 3 == 0 {
                edges.push(Edge {
                    src: a,
                    dst: b,
                    bytes: 1 + rng.next_u64() % 64,
                });
            }
        }
    }
    Pattern::from_edges(n, edges, format!("random graph, seed {seed}")).unwrap()
}

/// Hop-bytes of the mapping `f` (task -> slot) summed from the machine's hop counts,
/// independently of [`evaluate`].
fn hop_bytes_by_hand(p: &Pattern, m: &MapMachine, f: &[usize]) -> u128 {
    let hops = |a: usize, b: usize| u128::from(m.hops(m.node_of_slot(a), m.node_of_slot(b)));
    p.edges()
        .iter()
        .map(|e| u128::from(e.bytes) * hops(f[e.src as usize], f[e.dst as usize]))
        .sum()
}

#[test]
fn optimiser_reaches_the_optimum_of_random_graphs_of_eight_tasks() {
    let machines = [
        ("ring of 4 x 2", torus(vec![4], 2)),
        ("2x2 torus x 2", torus(vec![2, 2], 2)),
        ("2x2x2 torus x 1", torus(vec![2, 2, 2], 1)),
        ("ring of 8 x 1", torus(vec![8], 1)),
    ];
    for seed in 1..=4 {
        let p = random_graph(8, seed);
        for (name, m) in &machines {
            // the optimiser's rule: the least hop-bytes among mappings whose busiest
            // link is no busier than the best start's
            let s = starts(&p, m);
            let lt0 = s
                .iter()
                .map(|x| x.metrics.max_link_time)
                .fold(f64::INFINITY, f64::min);
            let mut best = u128::MAX;
            all_perms(8, &mut |f| {
                let hb = hop_bytes_by_hand(&p, m, f);
                if hb < best {
                    let r = evaluate(&p, m, &Perm::from_forward(f.to_vec()).unwrap());
                    assert_eq!(r.hop_bytes, hb);
                    if r.max_link_time <= lt0 * (1.0 + 1e-12) {
                        best = hb;
                    }
                }
            });
            let o = optimise(&p, m, &s, &Options::default()).unwrap();
            assert_eq!(
                o.best.metrics.hop_bytes, best,
                "seed {seed} on {name}: optimiser {} ({}), optimum {best}",
                o.best.metrics.hop_bytes, o.best.origin
            );
        }
    }
}

#[test]
fn cliques_in_random_order_each_fill_one_node() {
    // 8 cliques of 16 tasks (heavy inside, one light message to the next clique), task
    // numbers scrambled, on a ring of 8 nodes x 16: the only mapping with every clique
    // inside a node keeps all but the 8 light messages inside nodes
    let (cliques, k) = (8usize, 16usize);
    let n = cliques * k;
    let mut label: Vec<u32> = (0..n as u32).collect();
    SplitMix(5).shuffle(&mut label);
    let mut edges = Vec::new();
    for c in 0..cliques {
        for a in 0..k {
            for b in 0..k {
                if a != b {
                    edges.push(Edge {
                        src: label[c * k + a],
                        dst: label[c * k + b],
                        bytes: 1000,
                    });
                }
            }
        }
        edges.push(Edge {
            src: label[c * k],
            dst: label[((c + 1) % cliques) * k + 1],
            bytes: 1,
        });
    }
    let p = Pattern::from_edges(n, edges, "cliques".into()).unwrap();
    let m = torus(vec![8], 16);
    let o = optimise(&p, &m, &starts(&p, &m), &Options::default()).unwrap();
    let inter = o.best.metrics.total_bytes - o.best.metrics.intra_node_bytes;
    assert_eq!(inter, 8, "{}", o.best.origin);
    // and the ring of cliques lies along the ring of nodes: every light message 1 hop
    assert_eq!(o.best.metrics.hop_bytes, 8, "{}", o.best.origin);
}

#[test]
fn a_stencil_given_as_a_graph_maps_as_well_as_the_grid() {
    // an 8x8x4 periodic stencil on a 2x2x4 torus x 16, given as the grid, as a graph in
    // grid order and as a graph with scrambled task numbers
    let g = CartGrid::new(vec![8, 8, 4], vec![true; 3], vec![1 << 20; 3]).unwrap();
    let grid = Pattern::grid(&g).unwrap();
    let m = torus(vec![2, 2, 4], 16);
    let opts = Options {
        seed: 3,
        budget: std::time::Duration::from_secs(4),
    };
    let want = optimise(&grid, &m, &starts(&grid, &m), &opts).unwrap().best;
    let n = grid.tasks();
    let mut label: Vec<u32> = (0..n as u32).collect();
    SplitMix(9).shuffle(&mut label);
    for scrambled in [false, true] {
        let edges = grid
            .edges()
            .iter()
            .map(|e| {
                let (s, d) = (e.src as usize, e.dst as usize);
                let (src, dst) = if scrambled {
                    (label[s], label[d])
                } else {
                    (s as u32, d as u32)
                };
                Edge {
                    src,
                    dst,
                    bytes: e.bytes,
                }
            })
            .collect();
        let p = Pattern::from_edges(n, edges, "stencil graph".into()).unwrap();
        let got = optimise(&p, &m, &starts(&p, &m), &opts).unwrap().best;
        assert!(
            got.metrics.hop_bytes as f64 <= want.metrics.hop_bytes as f64 * 1.05
                && got.metrics.max_link_time <= want.metrics.max_link_time * 1.05,
            "scrambled {scrambled}: graph {} / {} ({}), grid {} / {}",
            got.metrics.hop_bytes,
            got.metrics.max_link_time,
            got.origin,
            want.metrics.hop_bytes,
            want.metrics.max_link_time
        );
    }
}

#[test]
fn a_hidden_grid_has_the_grids_bound_and_other_graphs_say_no_bound() {
    let g = CartGrid::new(vec![8, 8, 4], vec![true; 3], vec![1000; 3]).unwrap();
    let grid = Pattern::grid(&g).unwrap();
    let m = torus(vec![2, 2, 4], 16);
    let n = grid.tasks();
    let mut label: Vec<u32> = (0..n as u32).collect();
    SplitMix(4).shuffle(&mut label);
    let edges = grid
        .edges()
        .iter()
        .map(|e| Edge {
            src: label[e.src as usize],
            dst: label[e.dst as usize],
            bytes: e.bytes,
        })
        .collect();
    let p = Pattern::from_edges(n, edges, "stencil graph".into()).unwrap();
    let want = hop_bytes_bound(&grid, &m);
    assert!(want > 0);
    assert_eq!(hop_bytes_bound(&p, &m), want);
    let c = compare(&p, &m, &[Strategy::Packed], &Options::default(), |_| {}).unwrap();
    assert_eq!(c.rows[0].metrics.hop_bytes_bound, want);
    // a ring of 64 tasks with messages of 1 byte on nodes of 16: every task's one
    // message may stay inside, so no bound above 0 is known
    let ring = (0..64u32)
        .map(|t| Edge {
            src: t,
            dst: (t * 7 + 1) % 64,
            bytes: 1,
        })
        .collect();
    let p = Pattern::from_edges(64, ring, "ring".into()).unwrap();
    let m = torus(vec![4], 16);
    let text = table(&compare(&p, &m, &[Strategy::Packed], &Options::default(), |_| {}).unwrap());
    assert!(
        text.contains("lower bounds: hop-bytes no bound, max link no bound"),
        "{text}"
    );
}

/// A seeded random geometric graph: `n` points in the unit square, a message each way
/// between points closer than `r`, bytes 1..=1000.
fn geometric_graph(n: usize, r: f64, seed: u64) -> Pattern {
    let mut rng = SplitMix(seed);
    let unit = |rng: &mut SplitMix| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let pts: Vec<(f64, f64)> = (0..n).map(|_| (unit(&mut rng), unit(&mut rng))).collect();
    let mut edges = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let (dx, dy) = (pts[a].0 - pts[b].0, pts[a].1 - pts[b].1);
            if dx * dx + dy * dy < r * r {
                let bytes = 1 + rng.next_u64() % 1000;
                for (src, dst) in [(a, b), (b, a)] {
                    edges.push(Edge {
                        src: src as u32,
                        dst: dst as u32,
                        bytes,
                    });
                }
            }
        }
    }
    Pattern::from_edges(n, edges, format!("geometric graph, seed {seed}")).unwrap()
}

/// The optimiser's results with each number of anytime `rounds` in turn, each
/// asserted to be no worse than the one before on hop-bytes and on the busiest link,
/// and how many were better.
fn rounds_in_turn(
    p: &Pattern,
    m: &MapMachine,
    s: &[Scored],
    opts: &Options,
    rounds: &[usize],
) -> (Vec<Optimised>, usize) {
    let mut out: Vec<Optimised> = Vec::new();
    let mut improved = 0;
    for &r in rounds {
        let o = optimise_rounds(p, m, s, opts, Some(r)).unwrap();
        let now = (o.best.metrics.hop_bytes, o.best.metrics.max_link_time);
        if let Some(last) = out.last() {
            let (hb, lt) = (last.best.metrics.hop_bytes, last.best.metrics.max_link_time);
            assert!(
                now.0 <= hb && now.1 <= lt,
                "seed {}, {r} rounds: {now:?} after {:?} ({})",
                opts.seed,
                (hb, lt),
                o.best.origin
            );
            improved += usize::from(now != (hb, lt));
        }
        out.push(o);
    }
    (out, improved)
}

#[test]
fn more_anytime_rounds_are_never_worse_for_the_same_seed() {
    let m = torus(vec![4, 4], 8);
    let mut improved = 0;
    for seed in [2, 3] {
        let p = geometric_graph(128, 0.15, seed);
        let s = starts(&p, &m);
        // a budget that is never reached: the rounds alone decide
        let opts = Options {
            seed,
            budget: std::time::Duration::from_secs(600),
        };
        improved += rounds_in_turn(&p, &m, &s, &opts, &[0, 1, 3, 6]).1;
        // the same rounds again give the same mapping
        let a = optimise_rounds(&p, &m, &s, &opts, Some(3)).unwrap();
        let b = optimise_rounds(&p, &m, &s, &opts, Some(3)).unwrap();
        assert_eq!(a.best.map, b.best.map);
    }
    assert!(improved > 0, "no round improved any mapping");
}

#[test]
fn more_anytime_rounds_are_never_worse_above_2048_tasks() {
    // above 2048 tasks the two-stage mapping (the graph partitioned into node groups,
    // their quotient placed) replaces the multilevel mapper's, and the anytime rounds
    // refine only around the kicked tasks: still never worse with more rounds
    let m = torus(vec![6, 6, 4], 16);
    let p = geometric_graph(2304, 0.034, 5);
    let s = starts(&p, &m);
    let opts = Options {
        seed: 5,
        budget: std::time::Duration::from_secs(600),
    };
    for o in rounds_in_turn(&p, &m, &s, &opts, &[0, 2, 6]).0 {
        assert!(o.dominates_starts, "{}", o.best.origin);
    }
    let a = optimise_rounds(&p, &m, &s, &opts, Some(2)).unwrap();
    let b = optimise_rounds(&p, &m, &s, &opts, Some(2)).unwrap();
    assert_eq!(a.best.map, b.best.map);
    assert!(
        a.best.origin.starts_with("two-stage: graph partitioned"),
        "{}",
        a.best.origin
    );
}

#[test]
fn a_grid_smaller_than_the_machine_leaves_one_slot_per_node_empty_at_dilation_one() {
    // 24 x 40 = 960 tasks on 4x4x4 nodes x 16 = 1024 slots: 3 x 5 tiles, one per node,
    // form an 8 x 8 tile grid that embeds in the 4x4x4 torus with dilation 1, so every
    // tile's 16 boundary messages cross exactly one link
    let g = CartGrid::new(vec![24, 40], vec![true; 2], vec![1 << 20; 2]).unwrap();
    let p = Pattern::grid(&g).unwrap().padded(1024).unwrap();
    assert_eq!(p.tasks(), 1024);
    assert!(Pattern::grid(&g).unwrap().padded(959).is_err());
    let m = torus(vec![4, 4, 4], 16);
    let opts = Options {
        seed: 1,
        budget: std::time::Duration::from_secs(4),
    };
    let o = optimise(&p, &m, &starts(&p, &m), &opts).unwrap();
    assert_eq!(
        o.best.metrics.hop_bytes,
        64 * 16 * (1 << 20),
        "{}",
        o.best.origin
    );
    // the bound: a node of c cells sends at least the boundary of the best c-cell set,
    // least per cell for 4 x 4 (16 messages for 16 cells): 960 cells x 1 MiB
    assert_eq!(hop_bytes_bound(&p, &m), 960 * (1 << 20));
    // the job's ranks each on a slot of their own, 15 per node
    let mut per_node = [0usize; 64];
    for t in 0..960 {
        per_node[m.node_of_slot(o.best.map.apply(t))] += 1;
    }
    assert!(per_node.iter().all(|&c| c == 15), "{per_node:?}");
}

#[test]
fn ecmp_splits_messages_over_the_fat_trees_shortest_paths() {
    use copr_mapping::{ecmp_link_loads, ecmp_max_link_time};
    use copr_topology::{BandwidthModel, Network};
    let net = Network::from_file(
        &std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/topology/fat-tree-k4.net.toml"),
    )
    .unwrap();
    let m = MapMachine::network(net, None, BandwidthModel::Bottleneck, 1).unwrap();
    let id = Perm::from_forward((0..16).collect()).unwrap();
    let b = 1u64 << 20;
    let counts = |src: u32, dst: u32| {
        let p = Pattern::from_edges(16, vec![Edge { src, dst, bytes: b }], "one".into()).unwrap();
        let load = ecmp_link_loads(&p, &m, &id).unwrap();
        let mut by_share = std::collections::BTreeMap::new();
        for &x in load.iter().filter(|&&x| x > 0.0) {
            *by_share
                .entry((x / b as f64 * 4.0).round() as u32)
                .or_insert(0) += 1;
        }
        let total: f64 = load.iter().sum();
        (
            by_share,
            total / b as f64,
            ecmp_max_link_time(&p, &m, &id).unwrap(),
        )
    };
    // h0 -> h4, another pod: host links whole, 2 edge-aggregation links a half each way
    // up and down, 4 aggregation-core links a quarter up and 4 down; 6 hops in all
    let (shares, hops, _) = counts(0, 4);
    assert_eq!(shares, [(1, 8), (2, 4), (4, 2)].into_iter().collect());
    assert!((hops - 6.0).abs() < 1e-9);
    // h0 -> h2, same pod, other edge switch: 4 hops, the middle two split in halves
    let (shares, hops, _) = counts(0, 2);
    assert_eq!(shares, [(2, 4), (4, 2)].into_iter().collect());
    assert!((hops - 4.0).abs() < 1e-9);
    // h0 -> h1, same edge switch: one path
    let (shares, _, t) = counts(0, 1);
    assert_eq!(shares, [(4, 2)].into_iter().collect());
    // the busiest link carries the whole message at 100 Gb/s
    assert!((t - b as f64 / 12.5e9).abs() < 1e-12, "{t}");
    // tori are not routed by ECMP here
    let tor = torus(vec![4], 1);
    let p = Pattern::from_edges(
        4,
        vec![Edge {
            src: 0,
            dst: 2,
            bytes: 1,
        }],
        "x".into(),
    )
    .unwrap();
    assert!(ecmp_link_loads(&p, &tor, &Perm::from_forward((0..4).collect()).unwrap()).is_none());
}

/// The pair relaxation of the graph bound: at most half of `Σ_t` (bytes of `t`'s
/// `k − 1` heaviest pairs) stays inside nodes. By hand, then against every mapping.
#[test]
fn graph_bound_by_pairs_is_below_the_optimum_and_counts_in_messages() {
    // a -> b and c -> b, 10 bytes each, d silent; 2 nodes x 2 slots, one hop apart.
    // Per sender (each drops its one largest message): 0. By pairs: a, b, c keep at
    // most 10 each, so at most 15 stays inside and at least 5 leaves (the optimum: 10).
    let e = |src, dst, bytes| Edge { src, dst, bytes };
    let p = Pattern::from_edges(4, vec![e(0, 1, 10), e(2, 1, 10)], "v".into()).unwrap();
    let m = MapMachine::flat(2, 2).unwrap();
    assert_eq!(hop_bytes_bound(&p, &m), 5);
    for seed in 11..=13 {
        let p = random_graph(8, seed);
        for m in [
            MapMachine::flat(4, 2).unwrap(),
            MapMachine::flat(2, 4).unwrap(),
            torus(vec![4], 2),
            torus(vec![2], 4),
        ] {
            let bound = hop_bytes_bound(&p, &m);
            let mut best = u128::MAX;
            all_perms(8, &mut |f| best = best.min(hop_bytes_by_hand(&p, &m, f)));
            assert!(bound <= best, "seed {seed}: bound {bound} > optimum {best}");
            assert!(bound > 0, "seed {seed}: a dense graph has a bound");
        }
    }
}

/// A triangular lattice on a 4x4 torus of tasks (task `4i + j` sends to `(i, j ± 1)`,
/// `(i ± 1, j)`, `(i + 1, j - 1)` and `(i - 1, j + 1)`, as a multipartition solver's
/// six faces), each direction's bytes its own, plus a few kB that vary by task.
fn triangular_lattice() -> Pattern {
    let dirs: [(usize, usize, u64); 6] = [
        (0, 1, 5),
        (0, 3, 5),
        (1, 0, 6),
        (3, 0, 4),
        (1, 3, 3),
        (3, 1, 4),
    ];
    let mut edges = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            let r = 4 * i + j;
            for (k, &(di, dj, w)) in dirs.iter().enumerate() {
                let s = 4 * ((i + di) % 4) + (j + dj) % 4;
                let jitter = ((3 * r + 5 * k) % 4) as u64 * 10_000;
                edges.push(Edge {
                    src: r as u32,
                    dst: s as u32,
                    bytes: w * 100_000 + jitter,
                });
            }
        }
    }
    Pattern::from_edges(16, edges, "triangular lattice".into()).unwrap()
}

#[test]
fn sixteen_tasks_on_a_two_by_two_by_two_torus_reach_the_lower_link_at_equal_hop_bytes() {
    // the anytime rounds found this mapping's busiest link only after 20 rounds
    // without improvement; at a 5 s budget they stopped after 10 (2 a second), with
    // the link 1.88 MB at the same hop-bytes. Rounds of 16 tasks take microseconds:
    // the patience counts the pattern's size too
    let p = triangular_lattice();
    let m = torus(vec![2, 2, 2], 2);
    // each row's pairs (0, 1) and (2, 3) on one node, the nodes in this order
    let nodes = [1, 5, 3, 7, 2, 6, 0, 4];
    let f: Vec<usize> = (0..16).map(|t| nodes[t / 2] * 2 + t % 2).collect();
    let witness = evaluate(&p, &m, &Perm::from_forward(f.clone()).unwrap());
    assert_eq!(witness.hop_bytes, hop_bytes_by_hand(&p, &m, &f));
    assert_eq!(witness.hop_bytes, 42_240_000);
    let s = starts(&p, &m);
    let opts = Options {
        seed: 1,
        budget: std::time::Duration::from_secs(5),
    };
    let o = optimise(&p, &m, &s, &opts).unwrap();
    let (hb, lt) = (o.best.metrics.hop_bytes, o.best.metrics.max_link_time);
    assert!(
        hb <= witness.hop_bytes && lt <= witness.max_link_time * (1.0 + 1e-12),
        "optimiser {hb} B, busiest link {lt} s ({}); a mapping with {} B, {} s exists",
        o.best.origin,
        witness.hop_bytes,
        witness.max_link_time
    );
}
