//! Network graphs: shortest-path costs against an independent Floyd–Warshall,
//! file errors, and the sample fat-tree / dragonfly / two-islands files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use copr_topology::files::{self, Format};
use copr_topology::{
    BandwidthModel, DragonflySpec, FatTreeSpec, LinkCost, LinkDefaults, LinkSpec, Network,
    NetworkDescription, TopologyError,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/topology")
        .join(name)
}

/// Independent all-pairs reference: Floyd–Warshall over (latency, inverse
/// bandwidth) with the same lexicographic order, on a plain adjacency matrix.
fn floyd_warshall(
    n: usize,
    edges: &[(usize, usize, f64, f64)],
    model: BandwidthModel,
) -> Vec<Option<(f64, f64)>> {
    let mut d: Vec<Option<(f64, f64)>> = vec![None; n * n];
    let better = |a: (f64, f64), b: Option<(f64, f64)>| match b {
        None => true,
        Some(b) => a.0 < b.0 || (a.0 == b.0 && a.1 < b.1),
    };
    for i in 0..n {
        d[i * n + i] = Some((0.0, 0.0));
    }
    for &(a, b, l, inv) in edges {
        if better((l, inv), d[a * n + b]) {
            d[a * n + b] = Some((l, inv));
        }
    }
    for k in 0..n {
        for i in 0..n {
            let Some(ik) = d[i * n + k] else { continue };
            for j in 0..n {
                let Some(kj) = d[k * n + j] else { continue };
                let inv = match model {
                    BandwidthModel::Bottleneck => ik.1.max(kj.1),
                    BandwidthModel::Sum => ik.1 + kj.1,
                };
                let cand = (ik.0 + kj.0, inv);
                if better(cand, d[i * n + j]) {
                    d[i * n + j] = Some(cand);
                }
            }
        }
    }
    d
}

#[test]
fn dijkstra_matches_floyd_warshall_on_random_graphs() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for round in 0..60 {
        let n = rng.random_range(2..14usize);
        let mut net = Network::new("random");
        // All vertices are hosts so every pair is checked.
        for v in 0..n {
            net.add_host(&format!("v{v}")).unwrap();
        }
        let mut edges = Vec::new();
        // A random spanning tree keeps it connected (undirected), plus extras
        // (some directed). Dyadic values keep float sums exact.
        let m = n + rng.random_range(0..2 * n);
        for e in 0..m {
            let (a, b) = if e + 1 < n {
                (rng.random_range(0..=e), e + 1)
            } else {
                let a = rng.random_range(0..n);
                let b = (a + rng.random_range(1..n)) % n;
                (a, b)
            };
            let l = f64::from(rng.random_range(0..8u32)) * 0.25;
            let inv = f64::from(rng.random_range(1..8u32)) * 0.125;
            let c = LinkCost::new(l, inv).unwrap();
            if e + 1 >= n && rng.random_bool(0.3) {
                net.add_directed_link(&format!("v{a}"), &format!("v{b}"), c)
                    .unwrap();
                edges.push((a, b, l, inv));
            } else {
                net.add_link(&format!("v{a}"), &format!("v{b}"), c).unwrap();
                edges.push((a, b, l, inv));
                edges.push((b, a, l, inv));
            }
        }
        for model in [BandwidthModel::Bottleneck, BandwidthModel::Sum] {
            let fw = floyd_warshall(n, &edges, model);
            match net.costs(model) {
                Ok(costs) => {
                    for i in 0..n {
                        for j in 0..n {
                            let (l, inv) = fw[i * n + j].expect("Dijkstra found a path FW did not");
                            let c = costs.link_cost(i, j);
                            assert_eq!(
                                (c.latency, c.inv_bandwidth),
                                (l, inv),
                                "round {round} {model:?} {i}->{j}"
                            );
                            let path = net.path(i, j, model).unwrap();
                            assert_eq!(path.len() as u32, costs.hops(i, j));
                            // The path's own cost is the reported one.
                            let g = net.graph();
                            let pl: f64 = path.iter().map(|&e| g[e].latency).sum();
                            assert_eq!(pl, l);
                        }
                    }
                }
                Err(TopologyError::Unreachable { from, to, .. }) => {
                    // Directed extras can't disconnect the undirected spanning
                    // tree, so this must not happen.
                    panic!("unreachable {from} -> {to}");
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn unreachable_hosts_are_an_error() {
    let mut net = Network::new("split");
    for h in ["a", "b", "c"] {
        net.add_host(h).unwrap();
    }
    net.add_link("a", "b", LinkCost::new(1.0, 1.0).unwrap())
        .unwrap();
    let e = net
        .costs(BandwidthModel::Bottleneck)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no path from `a` to `c`"), "{e}");
}

fn fat_tree_spec() -> FatTreeSpec {
    FatTreeSpec {
        k: 4,
        host_link: LinkSpec {
            latency: 1.0e-7,
            bandwidth: 1.25e10,
        },
        edge_link: LinkSpec {
            latency: 1.5e-7,
            bandwidth: 1.25e10,
        },
        core_link: LinkSpec {
            latency: 2.0e-7,
            bandwidth: 1.25e10,
        },
    }
}

fn dragonfly_spec() -> DragonflySpec {
    DragonflySpec {
        groups: 5,
        routers: 4,
        hosts_per_router: 2,
        host_link: LinkSpec {
            latency: 1.0e-7,
            bandwidth: 1.25e10,
        },
        local_link: LinkSpec {
            latency: 1.5e-7,
            bandwidth: 1.25e10,
        },
        global_link: LinkSpec {
            latency: 1.0e-6,
            bandwidth: 6.25e9,
        },
    }
}

/// The description with the most common link parameters moved to `[defaults]`.
fn compact(mut d: NetworkDescription) -> NetworkDescription {
    let mut count: HashMap<(u64, u64), usize> = HashMap::new();
    for l in &d.links {
        *count
            .entry((l.latency.unwrap().to_bits(), l.bandwidth.unwrap().to_bits()))
            .or_default() += 1;
    }
    let (&(lat, bw), _) = count.iter().max_by_key(|(k, c)| (**c, **k)).unwrap();
    let (lat, bw) = (f64::from_bits(lat), f64::from_bits(bw));
    d.defaults = Some(LinkDefaults {
        latency: Some(lat),
        bandwidth: Some(bw),
    });
    for l in &mut d.links {
        if l.latency == Some(lat) {
            l.latency = None;
        }
        if l.bandwidth == Some(bw) {
            l.bandwidth = None;
        }
    }
    d
}

/// Writes the generated sample files: `COPR_REGEN=1 cargo test -p copr-topology
/// --test network -- --ignored regenerate`.
#[test]
#[ignore = "writes data/topology; run by hand to regenerate the samples"]
fn regenerate_samples() {
    if std::env::var("COPR_REGEN").is_err() {
        return;
    }
    for (file, net, header) in [
        (
            "fat-tree-k4.net.toml",
            Network::fat_tree(&fat_tree_spec()).unwrap(),
            "# A k = 4 three-level fat tree (16 hosts, 8 edge, 8 aggregation, 4 core switches),\n\
             # 100 Gb/s everywhere. Generated by Network::fat_tree (tests/network.rs).\n",
        ),
        (
            "dragonfly-g5a4p2.net.toml",
            Network::dragonfly(&dragonfly_spec()).unwrap(),
            "# A dragonfly: 5 groups of 4 routers, 2 hosts per router (40 hosts), all-to-all\n\
             # local links (100 Gb/s), one 50 Gb/s, 1 us global link per group pair.\n\
             # Generated by Network::dragonfly (tests/network.rs).\n",
        ),
    ] {
        let text = files::to_string(&compact(net.to_description()), Format::Toml).unwrap();
        std::fs::write(data(file), format!("{header}{text}")).unwrap();
    }
}

fn same_costs(a: &Network, b: &Network) {
    for model in [BandwidthModel::Bottleneck, BandwidthModel::Sum] {
        let (ca, cb) = (a.costs(model).unwrap(), b.costs(model).unwrap());
        assert_eq!(ca.num_hosts(), cb.num_hosts());
        for i in 0..ca.num_hosts() {
            assert_eq!(ca.host_name(i), cb.host_name(i));
            for j in 0..ca.num_hosts() {
                assert_eq!(ca.link_cost(i, j), cb.link_cost(i, j));
                assert_eq!(ca.hops(i, j), cb.hops(i, j));
            }
        }
    }
}

#[test]
fn sample_files_match_generators() {
    let ft = Network::from_file(&data("fat-tree-k4.net.toml")).unwrap();
    assert_eq!(ft.num_hosts(), 16);
    same_costs(&ft, &Network::fat_tree(&fat_tree_spec()).unwrap());
    let df = Network::from_file(&data("dragonfly-g5a4p2.net.toml")).unwrap();
    assert_eq!(df.num_hosts(), 40);
    same_costs(&df, &Network::dragonfly(&dragonfly_spec()).unwrap());
}

#[test]
fn fat_tree_hop_structure() {
    let ft = Network::fat_tree(&fat_tree_spec()).unwrap();
    let c = ft.costs(BandwidthModel::Bottleneck).unwrap();
    assert_eq!(ft.graph().node_count(), 16 + 20);
    assert_eq!(c.hops(0, 1), 2); // same edge switch
    assert_eq!(c.hops(0, 2), 4); // same pod
    assert_eq!(c.hops(0, 4), 6); // other pod, via core
    assert!((c.link_cost(0, 4).latency - (2.0 * 1e-7 + 2.0 * 1.5e-7 + 2.0 * 2e-7)).abs() < 1e-20);
}

#[test]
fn dragonfly_diameter() {
    let df = Network::dragonfly(&dragonfly_spec()).unwrap();
    let c = df.costs(BandwidthModel::Bottleneck).unwrap();
    let max = (0..40)
        .flat_map(|i| (0..40).map(move |j| (i, j)))
        .map(|(i, j)| c.hops(i, j))
        .max()
        .unwrap();
    // host, local, global, local, host
    assert_eq!(max, 5);
    // 5 groups, one global link per pair
    let globals = df
        .graph()
        .edge_weights()
        .filter(|w| w.latency == 1.0e-6)
        .count();
    assert_eq!(globals, 2 * 10);
}

#[test]
fn two_islands_slow_link() {
    let n = Network::from_file(&data("two-islands.net.toml")).unwrap();
    let c = n.costs(BandwidthModel::Bottleneck).unwrap();
    let a0 = c.host_index("a0").unwrap();
    let a1 = c.host_index("a1").unwrap();
    let b0 = c.host_index("b0").unwrap();
    assert_eq!(c.link_cost(a0, a1).inv_bandwidth, 1.0 / 1.25e10);
    assert_eq!(c.link_cost(a0, b0).inv_bandwidth, 1.0 / 1.25e9);
    assert!(c.link_cost(a0, b0).latency > 2.0e-5);
}

#[test]
fn description_round_trip() {
    let net = Network::fat_tree(&fat_tree_spec()).unwrap();
    let d = net.to_description();
    for fmt in [Format::Toml, Format::Json] {
        let text = files::to_string(&d, fmt).unwrap();
        let back: NetworkDescription = files::parse_str(&text, fmt, None).unwrap();
        assert_eq!(back, d);
        same_costs(&Network::from_description(&back).unwrap(), &net);
    }
}

fn write_tmp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("copr-topo-net-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_network_files_name_file_line_and_field() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "neg.toml",
            "hosts = [\"a\", \"b\"]\n[[links]]\na = \"a\"\nb = \"b\"\nlatency = -1.0\nbandwidth = 1e9\n",
            &["neg.toml:5", "links[0].latency", "-1", "negative"],
        ),
        (
            "zero-bw.toml",
            "hosts = [\"a\", \"b\"]\n[[links]]\na = \"a\"\nb = \"b\"\nlatency = 1.0\nbandwidth = 0.0\n",
            &["zero-bw.toml:6", "links[0].bandwidth", "positive"],
        ),
        (
            "nan.toml",
            "hosts = [\"a\", \"b\"]\n[defaults]\nlatency = nan\nbandwidth = 1e9\n[[links]]\na = \"a\"\nb = \"b\"\n",
            &["nan.toml:3", "defaults.latency", "NaN"],
        ),
        (
            "dup.toml",
            "hosts = [\"a\", \"b\"]\nswitches = [\n \"s\",\n \"a\"]\nlinks = []\n",
            &["dup.toml:4", "switches[1]", "duplicate", "`a`", "hosts[0]"],
        ),
        (
            "unknown.toml",
            "hosts = [\"a\", \"b\"]\n[defaults]\nlatency = 1.0\nbandwidth = 1.0\n[[links]]\na = \"a\"\nb = \"zz\"\n",
            &["unknown.toml:7", "links[0].b", "unknown vertex `zz`"],
        ),
        (
            "missing.toml",
            "hosts = [\"a\", \"b\"]\n[[links]]\na = \"a\"\nb = \"b\"\nlatency = 1.0\n",
            &["missing.toml", "links[0].bandwidth", "no bandwidth"],
        ),
        (
            "typo.toml",
            "hosts = [\"a\"]\nlinks = []\nswitchs = []\n",
            &["typo.toml:3", "switchs"],
        ),
        (
            "type.json",
            "{\"hosts\": [\"a\"],\n \"links\": [{\"a\": \"a\", \"b\": \"a\",\n \"latency\": \"slow\"}]}",
            &["type.json:3", "links[0].latency", "invalid type"],
        ),
        (
            "split.toml",
            "hosts = [\"a\", \"b\"]\nlinks = []\n",
            &["split.toml", "no path from `a` to `b`"],
        ),
    ];
    for (name, text, needles) in cases {
        let p = write_tmp(name, text);
        let r = Network::from_file(&p).and_then(|n| {
            n.costs(BandwidthModel::Bottleneck)
                .map_err(|e| e.in_file(&p))
        });
        let e = r.unwrap_err().to_string();
        for n in *needles {
            assert!(e.contains(n), "{name}: `{n}` not in: {e}");
        }
    }
    let e = Network::from_file(&data("nope.net.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nope.net.toml"), "{e}");
}
