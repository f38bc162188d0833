//! Machines at scale, checked against the straightforward computations on small
//! sizes: on-demand network costs against a search from every host, and the grouped
//! summary against a loop over every rank pair.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use copr_topology::files::Format;
use copr_topology::{
    BandwidthModel, DragonflySpec, FatTreeSpec, InterNode, IntraNode, LevelCosts, LinkCost,
    LinkSpec, Machine, Network, NodeTree, PairLevel, PairTable, Placement, PlacementRule,
    TopologyConfig, TopologySummary, Torus, TorusParams,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/topology")
        .join(name)
}

/// Every host pair's cost and hop count equal those of a search from that host.
fn check_against_searches(net: &Network, model: BandwidthModel, tag: &str) {
    let costs = net.costs(model).unwrap();
    for a in 0..net.num_hosts() {
        let (reference, _) = net.shortest_paths(net.host_vertex(a), model);
        for b in 0..net.num_hosts() {
            let r = reference[net.host_vertex(b).index()].expect("connected");
            let c = costs.link_cost(a, b);
            assert_eq!(
                (
                    c.latency.to_bits(),
                    c.inv_bandwidth.to_bits(),
                    costs.hops(a, b)
                ),
                (r.latency.to_bits(), r.inv_bandwidth.to_bits(), r.hops),
                "{tag} {model:?}: host {a} -> {b}"
            );
        }
    }
    // The table (built on demand) agrees too.
    let t = costs.table();
    for a in 0..net.num_hosts() {
        for b in 0..net.num_hosts() {
            assert_eq!(t.link_cost(a, b), costs.link_cost(a, b));
        }
    }
}

#[test]
fn on_demand_costs_equal_a_search_from_every_host() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for round in 0..80 {
        let switches = rng.random_range(1..7usize);
        let hosts = rng.random_range(2..16usize);
        let mut net = Network::new("random");
        for h in 0..hosts {
            net.add_host(&format!("h{h}")).unwrap();
        }
        for s in 0..switches {
            net.add_switch(&format!("s{s}")).unwrap();
        }
        // few distinct small costs (and zero latencies): many ties and many leaves
        // with equal links, the case host classes share
        let cost = |rng: &mut ChaCha8Rng| {
            LinkCost::new(
                f64::from(rng.random_range(0..3u32)) * 0.25,
                f64::from(rng.random_range(1..3u32)) * 0.125,
            )
            .unwrap()
        };
        for s in 1..switches {
            let t = rng.random_range(0..s);
            let c = cost(&mut rng);
            net.add_link(&format!("s{s}"), &format!("s{t}"), c).unwrap();
        }
        for h in 0..hosts {
            let s = rng.random_range(0..switches);
            let c = cost(&mut rng);
            net.add_link(&format!("h{h}"), &format!("s{s}"), c).unwrap();
        }
        for _ in 0..rng.random_range(0..4usize) {
            // extras: host–host, second uplinks, one-way links, switch shortcuts
            let pick = |rng: &mut ChaCha8Rng| {
                if rng.random_bool(0.5) {
                    format!("h{}", rng.random_range(0..hosts))
                } else {
                    format!("s{}", rng.random_range(0..switches))
                }
            };
            let (a, b) = (pick(&mut rng), pick(&mut rng));
            if a == b {
                continue;
            }
            let c = cost(&mut rng);
            if rng.random_bool(0.3) {
                net.add_directed_link(&a, &b, c).unwrap();
            } else {
                net.add_link(&a, &b, c).unwrap();
            }
        }
        for model in [BandwidthModel::Bottleneck, BandwidthModel::Sum] {
            check_against_searches(&net, model, &format!("round {round}"));
        }
    }
    // two hosts joined directly: each is the other's leaf
    let mut net = Network::new("pair");
    net.add_host("a").unwrap();
    net.add_host("b").unwrap();
    net.add_link("a", "b", LinkCost::new(1.0, 0.5).unwrap())
        .unwrap();
    check_against_searches(&net, BandwidthModel::Sum, "pair");
}

fn spec(latency: f64, bandwidth: f64) -> LinkSpec {
    LinkSpec { latency, bandwidth }
}

#[test]
fn fat_trees_and_dragonflies_need_one_search_per_switch() {
    let fat = Network::fat_tree(&FatTreeSpec {
        k: 6,
        host_link: spec(1e-7, 1.25e10),
        edge_link: spec(1.5e-7, 1.25e10),
        core_link: spec(2e-7, 1e10),
    })
    .unwrap();
    let fly = Network::dragonfly(&DragonflySpec {
        groups: 5,
        routers: 4,
        hosts_per_router: 3,
        host_link: spec(1e-7, 1.25e10),
        local_link: spec(1.5e-7, 1.25e10),
        global_link: spec(1e-6, 6.25e9),
    })
    .unwrap();
    for (net, classes) in [(&fat, 6 * 3), (&fly, 5 * 4)] {
        for model in [BandwidthModel::Bottleneck, BandwidthModel::Sum] {
            check_against_searches(net, model, net.name());
            assert_eq!(net.costs(model).unwrap().num_classes(), classes);
        }
    }
    for file in [
        "fat-tree-k4.net.toml",
        "dragonfly-g5a4p2.net.toml",
        "two-islands.net.toml",
    ] {
        let net = Network::from_file(&data(file)).unwrap();
        check_against_searches(&net, BandwidthModel::Bottleneck, file);
    }
}

/// The summary the straightforward way: every ordered rank pair `i ≠ j`.
struct Reference {
    classes: BTreeMap<PairLevel, (u64, [f64; 3], [f64; 3])>,
}

fn reference(m: &Machine) -> Reference {
    let mut classes: BTreeMap<PairLevel, (u64, [f64; 3], [f64; 3])> = BTreeMap::new();
    for i in 0..m.ranks() {
        for j in 0..m.ranks() {
            if i == j {
                continue;
            }
            let c = m.link(i, j);
            let e = classes.entry(m.pair_level(i, j)).or_insert((
                0,
                [f64::INFINITY, f64::NEG_INFINITY, 0.0],
                [f64::INFINITY, f64::NEG_INFINITY, 0.0],
            ));
            e.0 += 1;
            for (s, v) in [(&mut e.1, c.latency), (&mut e.2, c.inv_bandwidth)] {
                s[0] = s[0].min(v);
                s[1] = s[1].max(v);
                s[2] += v;
            }
        }
    }
    Reference { classes }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

fn check_summary(m: &Machine, tag: &str) {
    let s: TopologySummary = m.summary();
    let r = reference(m);
    let got: Vec<PairLevel> = s.levels.iter().map(|l| l.level).collect();
    let want: Vec<PairLevel> = r.classes.keys().copied().collect();
    assert_eq!(got, want, "{tag}: classes");
    let (mut n, mut lat, mut inv) = (
        0u64,
        [f64::INFINITY, f64::NEG_INFINITY, 0.0],
        [f64::INFINITY, f64::NEG_INFINITY, 0.0],
    );
    for l in &s.levels {
        let (count, rl, rb) = r.classes[&l.level];
        assert_eq!(l.pairs, count, "{tag}: pairs of {}", l.name);
        for (got, want) in [(l.latency, rl), (l.inv_bandwidth, rb)] {
            assert_eq!((got.min, got.max), (want[0], want[1]), "{tag}: {}", l.name);
            assert!(
                close(got.mean, want[2] / count as f64),
                "{tag}: mean of {}: {} vs {}",
                l.name,
                got.mean,
                want[2] / count as f64
            );
        }
        n += count;
        for (s, w) in [(&mut lat, rl), (&mut inv, rb)] {
            s[0] = s[0].min(w[0]);
            s[1] = s[1].max(w[1]);
            s[2] += w[2];
        }
    }
    assert_eq!(n, (m.ranks() * (m.ranks() - 1)) as u64, "{tag}");
    for (got, want) in [(s.latency, lat), (s.inv_bandwidth, inv)] {
        assert_eq!((got.min, got.max), (want[0], want[1]), "{tag}");
        assert!(close(got.mean, want[2] / n as f64), "{tag}");
    }
}

fn tree() -> IntraNode {
    IntraNode::Tree(NodeTree::from_shape("pack:2 core:2", &LevelCosts::default()).unwrap())
}

#[test]
fn grouped_summary_equals_the_pair_by_pair_summary() {
    // tori: full, both bandwidth models, packed and round-robin, uneven nodes
    for (dims, model) in [
        (vec![4u32, 3, 5], BandwidthModel::Bottleneck),
        (vec![6, 4], BandwidthModel::Sum),
        (vec![7], BandwidthModel::Sum),
    ] {
        let mut params = TorusParams::new(dims.clone());
        params.link_bandwidth = (0..dims.len()).map(|d| 4e9 + 1e9 * d as f64).collect();
        params.bandwidth_model = model;
        let t = Torus::full(params).unwrap();
        let nodes = t.num_nodes();
        for rule in [
            PlacementRule::packed(4 * nodes - 3, Some(4)),
            PlacementRule::round_robin(3 * nodes + 1, Some(4)),
            PlacementRule::packed(2 * nodes / 3 + 1, Some(1)),
        ] {
            let m = Machine::builder()
                .intra(tree())
                .inter(InterNode::Torus(t.clone()))
                .rule(rule)
                .build()
                .unwrap();
            check_summary(&m, &format!("torus {dims:?} {model:?} {rule:?}"));
        }
    }
    // two nodes per torus coordinate (the XE6 sample), 3 ranks each
    let m = copr_topology::load_machine(&data("torus-xe6.toml"), Some(3 * 128 - 2)).unwrap();
    check_summary(&m, "xe6");
    // networks: leaves in classes, a two-island graph, uneven placements
    for (file, model) in [
        ("fat-tree-k4.net.toml", "bottleneck"),
        ("dragonfly-g5a4p2.net.toml", "sum"),
        ("two-islands.net.toml", "bottleneck"),
    ] {
        for (rule, ranks, per_node) in [("packed", 22, 3), ("round-robin", 29, 4)] {
            let text = format!(
                "[intra]\nkind = \"tree\"\nshape = \"pack:2 core:2\"\n[inter]\nkind = \"network\"\nfile = \"{}\"\nbandwidth_model = \"{model}\"\n[placement]\nrule = \"{rule}\"\nranks = {ranks}\nranks_per_node = {per_node}\n",
                data(file).display()
            );
            let m = TopologyConfig::from_str(&text, Format::Toml)
                .unwrap()
                .build(Path::new("."), None)
                .unwrap();
            check_summary(&m, &format!("{file} {rule}"));
        }
    }
    // uniform between nodes, a node matrix, a rank matrix
    let m = Machine::builder()
        .inter(InterNode::Uniform(LinkCost::new(2e-6, 1e-9).unwrap()))
        .rule(PlacementRule::round_robin(23, Some(3)))
        .build()
        .unwrap();
    check_summary(&m, "uniform");
    let names: Vec<String> = (0..3).map(|k| format!("n{k}")).collect();
    let lat = vec![0.0, 1e-6, 2e-6, 1.5e-6, 0.0, 3e-6, 2e-6, 1e-6, 0.0];
    let inv = vec![0.0, 1e-9, 2e-9, 1e-9, 0.0, 4e-10, 3e-9, 2e-9, 0.0];
    let table = PairTable::new(names.clone(), lat, inv).unwrap();
    let m = Machine::builder()
        .intra(tree())
        .inter(InterNode::Matrix(table.clone()))
        .placement(Placement::round_robin(10, 4, &names).unwrap())
        .build()
        .unwrap();
    check_summary(&m, "node matrix");
    let m = Machine::from_rank_matrix(table, None).unwrap();
    check_summary(&m, "rank matrix");
}
