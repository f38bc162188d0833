//! Process mapping: metrics against hand-computed cases, the optimiser against brute
//! force, properties of every strategy, and exports parsed back.

use std::path::Path;

use copr::lap::Perm;
use copr_mapping::{
    evaluate, export, optimise, CartGrid, Edge, MapMachine, NetKind, Options, Pattern,
};
use copr_topology::{BandwidthModel, Network};
use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest, ProptestConfig};

mod common;
use common::{all_perms, starts, torus};

fn fat_tree(rpn: usize) -> MapMachine {
    let net = Network::from_file(
        &Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/topology/fat-tree-k4.net.toml"),
    )
    .unwrap();
    MapMachine::network(net, None, BandwidthModel::Bottleneck, rpn).unwrap()
}

#[test]
fn fat_tree_hops_and_loads_by_hand() {
    // k = 4 fat tree: h0, h1 under edge switch e0.0; h2, h3 under e0.1 (same pod);
    // h4 in the next pod
    let m = fat_tree(1);
    assert_eq!(m.hops(0, 1), 2); // h0 -> e0.0 -> h1
    assert_eq!(m.hops(0, 2), 4); // up to an aggregation switch and down
    assert_eq!(m.hops(0, 4), 6); // through a core switch
                                 // one 100-byte message h0 -> h4 and one 7-byte message h1 -> h0
    let p = Pattern::from_edges(
        16,
        vec![
            Edge {
                src: 0,
                dst: 4,
                bytes: 100,
            },
            Edge {
                src: 1,
                dst: 0,
                bytes: 7,
            },
        ],
        String::new(),
    )
    .unwrap();
    let r = evaluate(&p, &m, &Perm::identity(16));
    assert_eq!(r.hop_bytes, 600 + 14);
    assert_eq!(r.max_link_bytes, 100);
    assert_eq!(r.dilation_max, 6);
    assert_eq!(r.dilation_mean, 4.0);
    assert_eq!(r.intra_node_bytes, 0);
    // the routes are those of the topology crate's shortest paths
    let NetKind::Graph(net, hosts) = m.kind() else {
        unreachable!()
    };
    for a in 0..16 {
        for b in 0..16 {
            let mut mine = Vec::new();
            m.for_route(a, b, |l| mine.push(l));
            let theirs: Vec<usize> = if a == b {
                Vec::new()
            } else {
                net.path(hosts[a], hosts[b], BandwidthModel::Bottleneck)
                    .unwrap()
                    .iter()
                    .map(|e| e.index())
                    .collect()
            };
            assert_eq!(mine, theirs);
        }
    }
}

#[test]
fn torus_link_loads_by_hand() {
    // 2 x 2 grid of tasks, messages only along dimension 1 (8 bytes), on a ring of 4
    // nodes: packed puts the row neighbours 0-1 and 2-3 one hop apart
    let g = CartGrid::new(vec![2, 2], vec![false, false], vec![0, 8]).unwrap();
    let p = Pattern::grid(&g).unwrap();
    let m = torus(vec![4], 1);
    let r = evaluate(&p, &m, &Perm::identity(4));
    // messages 0->1, 1->0, 2->3, 3->2, each one hop on its own directed link
    assert_eq!(r.hop_bytes, 32);
    assert_eq!(r.max_link_bytes, 8);
    assert_eq!(r.classes[0].max_bytes, 8); // x+
    assert_eq!(r.classes[1].max_bytes, 8); // x-
    assert_eq!(r.mean_link_bytes, 32.0 / 8.0);
    // tasks 0 and 1 on nodes 0 and 2: two hops each way, the tie goes the + way
    let far = Perm::from_forward(vec![0, 2, 1, 3]).unwrap();
    let r = evaluate(&p, &m, &far);
    assert_eq!(r.hop_bytes, 4 * 8 * 2);
    // 0->2 via links (0,+),(1,+); 2->0 via (2,+),(3,+); 1->3 via (1,+),(2,+);
    // 3->1 via (3,+),(0,+): every + link carries two messages
    assert_eq!(r.classes[0].max_bytes, 16);
    assert_eq!(r.classes[1].max_bytes, 0);
}

/// The optimiser against every mapping, for patterns of 8 tasks.
#[test]
fn optimiser_against_brute_force_on_eight_tasks() {
    let cases: Vec<(Pattern, MapMachine)> = vec![
        (
            Pattern::grid(&CartGrid::new(vec![2, 4], vec![true, true], vec![5, 1]).unwrap())
                .unwrap(),
            torus(vec![4], 2),
        ),
        (
            Pattern::grid(&CartGrid::new(vec![2, 4], vec![false, true], vec![1, 1]).unwrap())
                .unwrap(),
            torus(vec![2, 2], 2),
        ),
        (
            Pattern::grid(&CartGrid::new(vec![8], vec![true], vec![3]).unwrap()).unwrap(),
            torus(vec![2, 2, 2], 1),
        ),
        (
            Pattern::from_edges(
                8,
                vec![
                    Edge {
                        src: 0,
                        dst: 5,
                        bytes: 9,
                    },
                    Edge {
                        src: 5,
                        dst: 0,
                        bytes: 9,
                    },
                    Edge {
                        src: 1,
                        dst: 6,
                        bytes: 4,
                    },
                    Edge {
                        src: 2,
                        dst: 7,
                        bytes: 6,
                    },
                    Edge {
                        src: 3,
                        dst: 4,
                        bytes: 1,
                    },
                    Edge {
                        src: 7,
                        dst: 3,
                        bytes: 2,
                    },
                    Edge {
                        src: 6,
                        dst: 2,
                        bytes: 3,
                    },
                ],
                "graph".into(),
            )
            .unwrap(),
            torus(vec![4], 2),
        ),
    ];
    for (p, m) in cases {
        let mut best = u128::MAX;
        let mut best_lt = f64::INFINITY;
        all_perms(8, &mut |f| {
            let r = evaluate(&p, &m, &Perm::from_forward(f.to_vec()).unwrap());
            assert!(r.hop_bytes >= r.hop_bytes_bound, "bound above a mapping");
            best = best.min(r.hop_bytes);
            best_lt = best_lt.min(r.max_link_time);
        });
        let s = starts(&p, &m);
        let o = optimise(&p, &m, &s, &Options::default()).unwrap();
        let hb = o.best.metrics.hop_bytes;
        assert!(hb >= best);
        // on these small cases the optimiser finds the optimum hop-bytes
        assert_eq!(
            hb,
            best,
            "{}: optimiser {hb}, optimum {best}",
            p.description()
        );
        assert!(
            o.best.metrics.max_link_time
                <= s.iter()
                    .map(|x| x.metrics.max_link_time)
                    .fold(f64::INFINITY, f64::min)
        );
    }
}

#[test]
fn lower_bound_is_reached_by_the_dilation_one_embedding() {
    // case (b) of the benchmark: 4 x 4 tiles of a 32 x 32 grid on a 4x4x4 torus
    let p =
        Pattern::grid(&CartGrid::new(vec![32, 32], vec![true, true], vec![1 << 20; 2]).unwrap())
            .unwrap();
    let m = torus(vec![4, 4, 4], 16);
    let o = optimise(&p, &m, &starts(&p, &m), &Options::default()).unwrap();
    assert!(o.dominates_starts);
    assert_eq!(o.best.metrics.dilation_max, 1);
    assert_eq!(o.best.metrics.hop_bytes, o.best.metrics.hop_bytes_bound);
    // hand count: 64 tiles, 16 boundary messages of 1 MiB leaving each
    assert_eq!(o.best.metrics.hop_bytes, 64 * 16 * (1 << 20));
}

#[test]
fn optimiser_is_deterministic() {
    let p = Pattern::grid(&CartGrid::new(vec![12, 16], vec![true, false], vec![3, 7]).unwrap())
        .unwrap();
    let m = torus(vec![4, 3, 2], 8);
    let s = starts(&p, &m);
    let a = optimise(&p, &m, &s, &Options::default()).unwrap();
    let b = optimise(&p, &m, &s, &Options::default()).unwrap();
    assert_eq!(a.best.map, b.best.map);
}

/// Torus dims, ranks per node, and a grid of exactly as many cells: its dimensions
/// split `nodes · rpn` into factors chosen by `pick`.
fn small_case(
) -> impl proptest::strategy::Strategy<Value = (Vec<u32>, usize, usize, u64, Vec<bool>, Vec<u64>)> {
    (
        proptest::collection::vec(1u32..=4, 1..=3),
        1usize..=4,
        1usize..=3,
        any::<u64>(),
        proptest::collection::vec(any::<bool>(), 3),
        proptest::collection::vec(1u64..=5, 3),
    )
}

fn grid_dims(total: usize, nd: usize, mut pick: u64) -> Vec<usize> {
    let mut rest = total;
    let mut dims = Vec::new();
    for _ in 1..nd {
        let divs: Vec<usize> = (1..=rest).filter(|d| rest % d == 0).collect();
        let d = divs[(pick % divs.len() as u64) as usize];
        pick /= divs.len() as u64;
        dims.push(d);
        rest /= d;
    }
    dims.push(rest);
    dims
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every strategy gives a permutation of the slots and the bound holds; the
    /// optimiser's result is no worse than the best start on both measures when it
    /// says so, and otherwise no start beats it on both (it is Pareto-optimal among
    /// them).
    #[test]
    fn strategies_are_permutations((tdims, rpn, nd, pick, per, bytes) in small_case()) {
        let nodes: usize = tdims.iter().map(|&d| d as usize).product();
        let tasks = nodes * rpn;
        let dims = grid_dims(tasks, nd, pick);
        let p = Pattern::grid(
            &CartGrid::new(dims, per[..nd].to_vec(), bytes[..nd].to_vec()).unwrap(),
        )
        .unwrap();
        let m = torus(tdims, rpn);
        let s = starts(&p, &m);
        for x in &s {
            prop_assert_eq!(x.map.len(), tasks);
            prop_assert!(x.metrics.hop_bytes >= x.metrics.hop_bytes_bound);
        }
        let o = optimise(&p, &m, &s, &Options::default()).unwrap();
        let hb0 = s.iter().map(|x| x.metrics.hop_bytes).min().unwrap();
        let lt0 = s.iter().map(|x| x.metrics.max_link_time).fold(f64::INFINITY, f64::min);
        let (hb, lt) = (o.best.metrics.hop_bytes, o.best.metrics.max_link_time);
        if o.dominates_starts {
            prop_assert!(hb <= hb0);
            prop_assert!(lt <= lt0 * (1.0 + 1e-12));
        } else {
            for x in &s {
                let (h, t) = (x.metrics.hop_bytes, x.metrics.max_link_time);
                prop_assert!(!(h <= hb && t <= lt * (1.0 + 1e-12) && (h < hb || t < lt * (1.0 - 1e-12))),
                    "{} beats the optimiser on both: {} {} vs {} {}", x.origin, h, t, hb, lt);
            }
        }
    }

    /// Every export parsed back gives the mapping.
    #[test]
    fn exports_round_trip(seed in any::<u64>(), nodes in 1usize..=6, rpn in 1usize..=4) {
        let n = nodes * rpn;
        let mut fwd: Vec<usize> = (0..n).collect();
        copr_mapping::SplitMix(seed).shuffle(&mut fwd);
        let map = Perm::from_forward(fwd).unwrap();
        let mut m = MapMachine::flat(nodes, rpn).unwrap();
        m.set_node_names((0..nodes).map(|k| format!("nid{:05}", 3 * k + 1)).collect()).unwrap();
        prop_assert_eq!(&export::parse_rankfile(&export::rankfile(&m, &map), &m).unwrap(), &map);
        prop_assert_eq!(&export::parse_mpich_rank_order(&export::mpich_rank_order(&map), n).unwrap(), &map);
        let names = export::node_names(&m);
        let back = export::parse_hostfile(&export::hostfile(&names, &m, &map), &names).unwrap();
        let want: Vec<usize> = (0..n).map(|r| map.apply(r) / rpn).collect();
        prop_assert_eq!(back, want);
        let j = export::to_json("x", &m, &map);
        let text = serde_json::to_string(&j).unwrap();
        let j2: export::MappingJson = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&export::from_json(&j2).unwrap(), &map);
    }
}

#[test]
fn smpi_hostfile_names_simgrid_hosts() {
    let m = torus(vec![4, 4, 4], 2);
    let map = Perm::from_forward((0..128).rev().collect()).unwrap();
    let names = copr_mapping::simgrid::smpi_host_names(&m);
    let text = export::hostfile(&names, &m, &map);
    let back = export::parse_hostfile(&text, &names).unwrap();
    // rank 0 sits on slot 127: node 63, SimGrid host n63
    assert_eq!(text.lines().next(), Some("n63"));
    assert_eq!(back[0], 63);
}

#[test]
fn graph_files_parse_and_errors_name_the_line() {
    let dir = std::env::temp_dir().join(format!("copr-map-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("g.txt");
    std::fs::write(
        &f,
        "# three tasks\ntasks 4\n0 1 10\n1 0 10\n2 3 5 # trailing\n",
    )
    .unwrap();
    let p = Pattern::from_file(&f).unwrap();
    assert_eq!(p.tasks(), 4);
    assert_eq!(p.total_bytes(), 25);
    std::fs::write(&f, "0 1 10\n1 2 -5\n").unwrap();
    let e = Pattern::from_file(&f).unwrap_err().to_string();
    assert!(
        e.contains("g.txt") && e.contains("line 2") && e.contains("bytes"),
        "{e}"
    );
    std::fs::write(&f, "0 99999999999 1\n").unwrap();
    let e = Pattern::from_file(&f).unwrap_err().to_string();
    assert!(e.contains("line 1") && e.contains("dst"), "{e}");
    let t = dir.join("g.toml");
    std::fs::write(&t, "tasks = 3\nedges = [[0, 1, 5], [2, 0, 1]]\n").unwrap();
    assert_eq!(Pattern::from_file(&t).unwrap().edges().len(), 2);
    std::fs::write(&t, "tasks = 2\nedges = [[0, 1, 5], [2, 0, 1]]\n").unwrap();
    let e = Pattern::from_file(&t).unwrap_err().to_string();
    assert!(e.contains("edges[1]"), "{e}");
    let j = dir.join("g.json");
    std::fs::write(&j, r#"{"edges": [[0, 1, 5]], "extra": 1}"#).unwrap();
    let e = Pattern::from_file(&j).unwrap_err().to_string();
    assert!(e.contains("extra"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn graph_patterns_are_grouped_by_their_edges_not_their_numbering() {
    // an 8x8x8 periodic halo whose task numbers are shuffled: packed order scatters
    // neighbours, the optimiser's grown groups find the blocks again
    let n = 512;
    let mut label: Vec<usize> = (0..n).collect();
    copr_mapping::SplitMix(7).shuffle(&mut label);
    let idx = |x: usize, y: usize, z: usize| label[(x % 8 * 8 + y % 8) * 8 + z % 8];
    let mut edges = Vec::new();
    for x in 0..8 {
        for y in 0..8 {
            for z in 0..8 {
                for (a, b, c) in [
                    (x + 1, y, z),
                    (x + 7, y, z),
                    (x, y + 1, z),
                    (x, y + 7, z),
                    (x, y, z + 1),
                    (x, y, z + 7),
                ] {
                    edges.push(Edge {
                        src: idx(x, y, z) as u32,
                        dst: idx(a, b, c) as u32,
                        bytes: 1000,
                    });
                }
            }
        }
    }
    let p = Pattern::from_edges(n, edges, "shuffled halo".into()).unwrap();
    let m = torus(vec![4, 4, 2], 16);
    let s = starts(&p, &m);
    let o = optimise(&p, &m, &s, &Options::default()).unwrap();
    let packed = &s[0].metrics;
    assert!(o.dominates_starts);
    assert!(
        o.best.metrics.hop_bytes * 2 < packed.hop_bytes,
        "{} vs packed {}",
        o.best.metrics.hop_bytes,
        packed.hop_bytes
    );
    // nodes keep most of their bytes: at least 40 % (4x2x2 blocks keep 58 %)
    assert!(o.best.metrics.intra_node_bytes * 10 >= o.best.metrics.total_bytes * 4);
}
