//! Cost configuration files: the samples in data/cost, round trips, the
//! two-islands property, and every bad-input error.

use std::path::{Path, PathBuf};

use copr_cost_models::{load, load_setup, BlockFacts, CostConfig, CostError, Package};
use copr_topology::files::Format;
use copr_topology::{PairLevel, TopologyError};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/cost")
        .join(name)
}

const SAMPLES: [&str; 7] = [
    "volume.toml",
    "single-node.toml",
    "torus-3d.toml",
    "two-islands.toml",
    "fat-tree.toml",
    "dragonfly.toml",
    "calibrated.json",
];

#[test]
fn samples_parse_and_round_trip() {
    for name in SAMPLES {
        let cfg = CostConfig::from_file(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        for fmt in [Format::Toml, Format::Json] {
            let text = cfg.to_string(fmt).unwrap();
            let back = CostConfig::from_str(&text, fmt)
                .unwrap_or_else(|e| panic!("{name} {fmt:?}: {e}\n{text}"));
            assert_eq!(back, cfg, "{name} {fmt:?}");
        }
    }
}

#[test]
fn samples_without_hwloc_build() {
    for name in SAMPLES.iter().filter(|n| **n != "single-node.toml") {
        let s = load_setup(&data(name), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = s.model.cost(0, 1, &Package::plain(4096));
        assert!(c > 0.0 && c.is_finite(), "{name}: {c}");
        assert_eq!(s.model.cost(0, 1, &Package::EMPTY), 0.0);
    }
}

#[test]
fn torus_sample_x_and_z_faster_than_y() {
    let s = load_setup(&data("torus-3d.toml"), Some(4096)).unwrap();
    let m = s.machine.clone().unwrap();
    assert_eq!(m.ranks(), 4096);
    // 32 ranks per node, nodes nid00000.. in the coordinates file order:
    // node 2 is z+1, node 8 is y+1, node 32 is x+1.
    let (z, y, x) = (2 * 32, 8 * 32, 32 * 32);
    for r in [x, y, z] {
        assert_eq!(m.pair_level(0, r), PairLevel::Hops(1));
    }
    let p = Package::plain(1 << 20);
    let (cx, cy, cz) = (
        s.model.cost(0, x, &p),
        s.model.cost(0, y, &p),
        s.model.cost(0, z, &p),
    );
    assert!(cx < cy && cz < cy, "x {cx} y {cy} z {cz}");
    assert!((cx - cz).abs() < 1e-15);
}

#[test]
fn two_islands_slow_link_costs_more_than_a_larger_local_package() {
    let s = load_setup(&data("two-islands.toml"), None).unwrap();
    let m = s.machine.clone().unwrap();
    // 2 ranks per host, hosts a0..a3 then b0..b3: ranks 0..8 on island A.
    let (a, a_other, b) = (0, 2, 8);
    assert!(!m.same_node(a, a_other));
    let small = Package::plain(64 * 1024);
    let large = Package::plain(8 * 64 * 1024);
    let across = s.model.cost(a, b, &small);
    let within = s.model.cost(a, a_other, &large);
    assert!(across > within, "across {across} <= within {within}");
    // and the island link really is what makes the difference
    assert!(m.inv_bandwidth(a, b) > 5.0 * m.inv_bandwidth(a, a_other));
}

#[test]
fn weights_and_sums_from_config() {
    let text = r#"
[[terms]]
model = "volume"
weight = 2.0
[[terms]]
model = "transform"
scale = 1.0
transpose = 0.0
conjugate = 0.0
[[terms]]
model = "locality"
weight = 3.0
per_block = 1.0
per_segment = 0.0
per_strided_byte = 0.0
per_padding_byte = 0.0
per_misaligned_block = 0.0
"#;
    let w = CostConfig::from_str(text, Format::Toml)
        .unwrap()
        .build(Path::new("."), None)
        .unwrap()
        .model;
    let p = Package::from_blocks(&[
        BlockFacts::contiguous(10).scaled(),
        BlockFacts::contiguous(5),
    ]);
    assert_eq!(w.cost(0, 1, &p), 2.0 * 15.0 + 10.0 + 3.0 * 2.0);
    assert_eq!(w.cost(1, 1, &p), 10.0 + 3.0 * 2.0);
}

#[test]
fn inline_topology_paths_resolve_against_the_config_file() {
    // two-islands.toml names "../topology/two-islands.net.toml": works from
    // any working directory because it resolves against data/cost.
    let w = load(&data("two-islands.toml")).unwrap();
    assert!(w.cost(0, 15, &Package::plain(1)) > 0.0);
    assert_eq!(w.ranks(), Some(16));
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("copr-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_configs_name_file_line_and_field() {
    let net = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/topology/two-islands.net.toml");
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "neg-weight.toml",
            "[[terms]]\nmodel = \"volume\"\n\n[[terms]]\nmodel = \"volume\"\nweight = -2.0\n".into(),
            vec!["neg-weight.toml:6", "terms[1].weight", "-2", "negative"],
        ),
        (
            "nan.json",
            "{\"terms\": [\n {\"model\": \"transform\",\n  \"transpose\": -1e-9}]}".into(),
            vec!["nan.json:3", "terms[0].transpose", "negative"],
        ),
        (
            "nan.toml",
            "[[terms]]\nmodel = \"locality\"\nper_segment = nan\n".into(),
            vec!["nan.toml:3", "terms[0].per_segment", "NaN"],
        ),
        (
            "unknown-model.toml",
            "[[terms]]\nmodel = \"magic\"\n".into(),
            vec!["unknown-model.toml", "terms[0]", "magic"],
        ),
        (
            "unknown-field.toml",
            "[[terms]]\nmodel = \"transform\"\ntranspos = 1.0\n".into(),
            vec!["unknown-field.toml:3", "terms[0]", "transpos"],
        ),
        (
            "no-terms.toml",
            "description = \"x\"\nterms = []\n".into(),
            vec!["no-terms.toml:2", "field `terms`", "at least one term"],
        ),
        (
            "no-topology.toml",
            "[[terms]]\nmodel = \"volume\"\n[[terms]]\nmodel = \"latency-bandwidth\"\n".into(),
            vec!["no-topology.toml:4", "terms[1].model", "needs a topology"],
        ),
        (
            "both.toml",
            "topology_file = \"t.toml\"\n[[terms]]\nmodel = \"volume\"\n[topology.inter]\nkind = \"uniform\"\nlatency = 1.0\nbandwidth = 1.0\n".into(),
            vec!["both.toml:1", "topology_file", "not both"],
        ),
        (
            "bad-inline.toml",
            "[[terms]]\nmodel = \"latency-bandwidth\"\n[topology.inter]\nkind = \"torus\"\ndims = [2, 2]\nlink_bandwidth = [1e9, -1e9]\n".into(),
            vec!["bad-inline.toml:6", "topology.inter.link_bandwidth[1]", "positive"],
        ),
        (
            "missing-topology-file.toml",
            "topology_file = \"nowhere.toml\"\n[[terms]]\nmodel = \"latency-bandwidth\"\n".into(),
            vec!["cannot read", "nowhere.toml"],
        ),
        (
            "unplaced.toml",
            format!(
                "[[terms]]\nmodel = \"latency-bandwidth\"\n[topology.inter]\nkind = \"network\"\nfile = \"{}\"\n[topology.placement]\nrule = \"packed\"\nranks = 20\nranks_per_node = 2\n",
                net.display()
            ),
            vec!["unplaced.toml", "20 ranks at 2 per node need 10 nodes, only 8"],
        ),
        (
            "syntax.json",
            "{\"terms\": [\n {\"model\": \"volume\",}]}".into(),
            vec!["syntax.json:2"],
        ),
    ];
    for (name, text, needles) in cases {
        let p = write(name, &text);
        let e = load(&p).expect_err(name).to_string();
        for n in needles {
            assert!(e.contains(n), "{name}: `{n}` not in: {e}");
        }
    }
    let e = load(&data("absent.toml")).unwrap_err();
    assert!(
        matches!(e, CostError::Input(TopologyError::Io { .. })),
        "{e:?}"
    );
}

/// Runs when copr-topology lacks hwloc (whichever crate's feature enabled it).
#[test]
fn hwloc_config_without_feature_says_to_enable_it() {
    if copr_topology::HWLOC_ENABLED {
        return;
    }
    let e = load(&data("single-node.toml")).unwrap_err();
    assert!(
        matches!(e, CostError::Input(TopologyError::HwlocDisabled { .. })),
        "{e:?}"
    );
    let m = e.to_string();
    assert!(
        m.contains("single-node.toml:16") && m.contains("--features hwloc"),
        "{m}"
    );
}

#[test]
fn single_node_sample_with_hwloc() {
    if !copr_topology::HWLOC_ENABLED {
        return;
    }
    let s = load_setup(&data("single-node.toml"), None).unwrap();
    let m = s.machine.unwrap();
    assert!(m.ranks() >= 1);
    assert_eq!(m.placement().num_nodes(), 1);
    let s = load_setup(&data("single-node.toml"), Some(8)).unwrap();
    let p = Package::from_blocks(&[BlockFacts::contiguous(1000).transposed()]);
    assert!(s.model.cost(0, 1, &p) > s.model.cost(1, 1, &p));
    assert!(s.model.cost(1, 1, &p) > 0.0); // the transform is paid locally too
}

/// The fat-tree sample prices every pair of ranks on one host below every pair on two
/// hosts, for small and large packages: a node's memory is faster than the network.
#[test]
fn fat_tree_sample_keeps_a_node_cheaper_than_the_network() {
    let s = load_setup(&data("fat-tree.toml"), Some(64)).unwrap();
    let per_node = 4;
    for bytes in [8, 4096, 1 << 20] {
        let p = Package::plain(bytes);
        let mut worst_inside = 0.0f64;
        let mut best_outside = f64::INFINITY;
        for i in 0..64 {
            for j in 0..64 {
                if i == j {
                    continue;
                }
                let c = s.model.cost(i, j, &p);
                if i / per_node == j / per_node {
                    worst_inside = worst_inside.max(c);
                } else {
                    best_outside = best_outside.min(c);
                }
            }
        }
        assert!(
            worst_inside < best_outside,
            "{bytes} B: same host up to {worst_inside:e} s, other hosts from {best_outside:e} s"
        );
    }
}
