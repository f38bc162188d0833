//! Machines from configuration files: sample files, round trips, relative
//! paths, placements, explicit matrices, summaries, lookup speed and every
//! bad-input error.

use std::path::{Path, PathBuf};

use copr_topology::files::Format;
use copr_topology::{
    load_machine, InterNode, IntraNode, Level, LinkCost, Machine, PairLevel, PairTable, Placement,
    PlacementRule, TopologyConfig, TopologyError,
};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/topology")
        .join(name)
}

fn tmp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("copr-topo-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn xe6_sample_resolves_relative_paths_and_places_ranks() {
    // The coordinates path in the file is relative to data/topology, not to
    // the test's working directory.
    let m = load_machine(&data("torus-xe6.toml"), None).unwrap();
    assert_eq!(m.ranks(), 512);
    assert_eq!(m.ranks_per_node(), vec![32; 16]);
    assert_eq!(m.pair_level(0, 1), PairLevel::Intra(Level::L3));
    assert_eq!(m.pair_level(0, 8), PairLevel::Intra(Level::Package));
    assert_eq!(m.pair_level(0, 16), PairLevel::Intra(Level::Machine));
    assert_eq!(m.pair_level(0, 32), PairLevel::Hops(0)); // nid00000 and nid00001 share a router
    assert_eq!(m.pair_level(0, 64), PairLevel::Hops(1));
    // the caller's rank count wins
    let m = load_machine(&data("torus-xe6.toml"), Some(4096)).unwrap();
    assert_eq!(m.placement().num_nodes(), 128);
    let s = m.summary();
    assert_eq!(s.ranks, 4096);
    assert_eq!(s.ranks_per_node_min, 32);
    assert!(s.latency.min > 0.0 && s.latency.max > s.latency.min);
    assert_eq!(s.levels.iter().map(|l| l.pairs).sum::<u64>(), 4096 * 4095);
    let text = s.to_string();
    assert!(
        text.contains("same node, same l3") && text.contains("other node, 6 hops"),
        "{text}"
    );
}

#[test]
fn every_pair_of_4096_ranks_on_a_torus_has_a_cost() {
    // (how fast these lookups are is the `gain` bench's `delta_per_pair_calls`, not a
    // test's business: a timed assertion fails on a loaded machine)
    let m = load_machine(&data("torus-xe6.toml"), Some(4096)).unwrap();
    let p = m.ranks();
    for i in 0..p {
        for j in (0..p).filter(|&j| j != i) {
            let c = m.cost(i, j, 4096);
            assert!(c.is_finite() && c > 0.0, "{i} -> {j}: {c}");
        }
    }
}

#[test]
fn sample_configs_round_trip_through_toml_and_json() {
    let cfg = TopologyConfig::from_file(&data("torus-xe6.toml")).unwrap();
    for fmt in [Format::Toml, Format::Json] {
        let text = cfg.to_string(fmt).unwrap();
        let back = TopologyConfig::from_str(&text, fmt).unwrap();
        assert_eq!(back, cfg, "{fmt:?}:\n{text}");
    }
}

#[test]
fn network_and_placement_file() {
    let dir = tmp_dir("islands");
    let cfg = format!(
        "[inter]\nkind = \"network\"\nfile = \"{}\"\n[placement]\nrule = \"file\"\nfile = \"{}\"\n",
        data("two-islands.net.toml").display(),
        data("placement-8.txt").display()
    );
    let p = dir.join("islands.toml");
    std::fs::write(&p, cfg).unwrap();
    let m = load_machine(&p, None).unwrap();
    assert_eq!(m.ranks(), 8);
    assert!(m.same_node(0, 1));
    assert_eq!(m.pu_of(1), 1);
    assert_eq!(m.pair_level(0, 2), PairLevel::Hops(2));
    assert_eq!(m.pair_level(0, 4), PairLevel::Hops(3));
    assert!(m.inv_bandwidth(0, 4) > m.inv_bandwidth(0, 2));
    // Requesting another rank count than the placement file has is an error.
    let e = load_machine(&p, Some(9)).unwrap_err().to_string();
    assert!(
        e.contains("9 ranks requested") && e.contains("places 8"),
        "{e}"
    );
}

#[test]
fn a_host_cut_off_from_the_network_stops_build_inter_but_not_build() {
    // hosts a and b behind one switch, host c on a switch of its own with no link to
    // them; the ranks are on a and b only
    let dir = tmp_dir("cut-off");
    std::fs::write(
        dir.join("cut.net.toml"),
        "name = \"cut\"\nhosts = [\"a\", \"b\", \"c\"]\nswitches = [\"s\", \"t\"]\n\
         [defaults]\nlatency = 1e-6\nbandwidth = 1e9\n\
         [[links]]\na = \"a\"\nb = \"s\"\n[[links]]\na = \"b\"\nb = \"s\"\n\
         [[links]]\na = \"c\"\nb = \"t\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("two.txt"), "0 a 0\n1 b 0\n").unwrap();
    let p = dir.join("cut.toml");
    std::fs::write(
        &p,
        "[inter]\nkind = \"network\"\nfile = \"cut.net.toml\"\n\
         [placement]\nrule = \"file\"\nfile = \"two.txt\"\n",
    )
    .unwrap();
    // the machine: a and b one switch apart (2 hops), 1 us per link
    let m = load_machine(&p, None).unwrap();
    assert_eq!(m.ranks(), 2);
    assert_eq!(m.pair_level(0, 1), PairLevel::Hops(2));
    // the network's costs alone must cover every host, c included (documented)
    let cfg = TopologyConfig::from_file(&p).unwrap();
    match cfg.build_inter(&dir) {
        Err(TopologyError::Unreachable { from, to, .. }) => {
            assert!(from == "c" || to == "c", "{from} -> {to}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn rank_matrix_round_trip() {
    let m = load_machine(&data("torus-xe6.toml"), Some(64)).unwrap();
    let table = m.cost_matrices().unwrap();
    let dir = tmp_dir("matrix");
    for file in ["m.json", "m.toml"] {
        table.write(&dir.join(file)).unwrap();
        std::fs::write(dir.join("cfg.toml"), format!("rank_matrix = \"{file}\"\n")).unwrap();
        let back = load_machine(&dir.join("cfg.toml"), None).unwrap();
        assert_eq!(back.ranks(), 64);
        for i in 0..64 {
            for j in 0..64 {
                assert_eq!(back.link(i, j), m.link(i, j), "{file} {i} {j}");
            }
        }
        assert_eq!(back.pair_level(0, 1), PairLevel::Explicit);
    }
}

#[test]
fn calibration_sample_as_rank_and_node_matrix() {
    let t = PairTable::from_file(&data("calibration-4.json")).unwrap();
    assert_eq!(
        t.link_cost(0, 2),
        LinkCost {
            latency: 1.8e-6,
            inv_bandwidth: 1.6e-10
        }
    );
    let m = Machine::from_rank_matrix(t.clone(), None).unwrap();
    assert_eq!(m.latency(3, 2), 4.1e-7);
    // the same file as a node × node source
    let m = Machine::builder()
        .inter(InterNode::Matrix(t))
        .rule(PlacementRule::round_robin(8, Some(2)))
        .build()
        .unwrap();
    assert_eq!(m.node_of(5), 1);
    assert_eq!(m.latency(0, 1), 4.0e-7);
}

#[test]
fn single_node_defaults_to_one_rank_per_pu() {
    let cfg = TopologyConfig::from_str(
        "[intra]\nkind = \"tree\"\nshape = \"pack:2 core:3\"\n",
        Format::Toml,
    )
    .unwrap();
    let m = cfg.build(Path::new("."), None).unwrap();
    assert_eq!(m.ranks(), 6);
    assert_eq!(m.ranks_per_node(), [6]);
    let m = cfg.build(Path::new("."), Some(9)).unwrap();
    assert_eq!(m.pu_of(7), 1); // oversubscribed: wraps around the PUs
    assert_eq!(m.pair_level(1, 7), PairLevel::Intra(Level::Pu));
}

#[test]
fn discovered_placement() {
    let pl = Placement::from_pairs([("n1", Some(1)), ("n0", Some(0)), ("n1", Some(0))]);
    let m = Machine::builder()
        .intra(IntraNode::Uniform(LinkCost::new(1.0, 0.0).unwrap()))
        .inter(InterNode::Uniform(LinkCost::new(5.0, 0.0).unwrap()))
        .placement(pl)
        .build()
        .unwrap();
    assert_eq!(m.latency(0, 2), 1.0);
    assert_eq!(m.latency(0, 1), 5.0);
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Every bad input gives an error naming file, line and field.
#[test]
fn bad_configs_name_file_line_and_field() {
    let dir = tmp_dir("bad");
    write(&dir, "ok.coords", "n0 0 0 0\nn1 1 0 0\n");
    write(&dir, "gap.place", "0 n0\n2 n1\n");
    write(&dir, "unknown.place", "0 n0\n1 nX\n");
    write(&dir, "dup.place", "0 n0\n1 n1\n0 n1\n");
    write(&dir, "pu.place", "0 n0 0\n1 n0 7\n");
    write(
        &dir,
        "nan.json",
        "{\"latency\": [[0.0, 1.0], [1.0, 0.0]],\n \"inv_bandwidth\": [[0.0, 1.0],\n [-2.0, 0.0]]}",
    );
    write(
        &dir,
        "ragged.toml",
        "latency = [[0.0, 1.0],\n [1.0]]\ninv_bandwidth = [[0.0, 1.0], [1.0, 0.0]]\n",
    );
    let torus = "[inter]\nkind = \"torus\"\ndims = [2, 1, 1]\ncoords = \"ok.coords\"\n";
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "neg-hop.toml",
            format!("{torus}hop_latency = -1e-7\n[placement]\nrule = \"packed\"\nranks = 2\n"),
            vec!["neg-hop.toml:5", "inter.hop_latency", "-0.0000001", "negative"],
        ),
        (
            "bw-len.toml",
            format!("{torus}link_bandwidth = [1e9, 1e9]\n"),
            vec!["bw-len.toml:5", "inter.link_bandwidth", "one bandwidth per dimension"],
        ),
        (
            "bw-zero.json",
            "{\"inter\": {\"kind\": \"torus\", \"dims\": [2],\n \"link_bandwidth\": [\n 0.0]}}".into(),
            vec!["bw-zero.json:3", "inter.link_bandwidth[0]", "positive"],
        ),
        (
            "kind.toml",
            "[placement]\nrule = \"packed\"\n[inter]\nkind = \"hypercube\"\n".into(),
            vec!["kind.toml", "inter", "hypercube"],
        ),
        (
            "typo.toml",
            "[placement]\nrule = \"packed\"\nrank = 4\n".into(),
            vec!["typo.toml:3", "placement", "unknown field `rank`"],
        ),
        (
            "zero-ranks.toml",
            "[placement]\nrule = \"packed\"\nranks = 0\n".into(),
            vec!["zero-ranks.toml:3", "placement.ranks", "must be >= 1"],
        ),
        (
            "levels.toml",
            "[intra]\nkind = \"tree\"\nshape = \"core:2\"\n[intra.levels]\nl3 = { latency = 1e-7, bandwidth = nan }\n".into(),
            vec!["levels.toml:5", "intra.levels.l3.bandwidth", "NaN"],
        ),
        (
            "levels-typo.toml",
            "[intra]\nkind = \"tree\"\nshape = \"core:2\"\n[intra.levels]\nl33 = { latency = 1e-7, bandwidth = 1e9 }\n".into(),
            vec!["levels-typo.toml:5", "l33"],
        ),
        (
            "syntax.toml",
            "[inter]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = = 2\n".into(),
            vec!["syntax.toml:4"],
        ),
        (
            "both.toml",
            "rank_matrix = \"m.json\"\n[inter]\nkind = \"uniform\"\nlatency = 1.0\nbandwidth = 1.0\n".into(),
            vec!["both.toml:1", "rank_matrix", "remove [intra] and [inter]"],
        ),
        (
            "gap.toml",
            format!("{torus}[placement]\nrule = \"file\"\nfile = \"gap.place\"\n"),
            vec!["gap.place", "rank 1 is not placed"],
        ),
        (
            "dup-place.toml",
            format!("{torus}[placement]\nrule = \"file\"\nfile = \"dup.place\"\n"),
            vec!["dup.place:3", "field `rank`: duplicate `0`", "at line 1"],
        ),
        (
            "unknown-node.toml",
            format!("{torus}[placement]\nrule = \"file\"\nfile = \"unknown.place\"\n"),
            vec!["rank 1", "node `nX`", "inter-node source"],
        ),
        (
            "pu.toml",
            format!("{torus}[intra]\nkind = \"tree\"\nshape = \"core:4\"\n[placement]\nrule = \"file\"\nfile = \"pu.place\"\n"),
            vec!["rank 1", "PU 7", "4 PUs"],
        ),
        (
            "too-many.toml",
            format!("{torus}[placement]\nrule = \"packed\"\nranks = 3\nranks_per_node = 1\n"),
            vec!["3 ranks at 1 per node need 3 nodes, only 2"],
        ),
        (
            "no-ranks.toml",
            torus.to_string(),
            vec!["number of ranks is unknown"],
        ),
        (
            "missing-coords.toml",
            "[inter]\nkind = \"torus\"\ndims = [2]\ncoords = \"nope.coords\"\n".into(),
            vec!["cannot read", "nope.coords"],
        ),
        (
            "matrix-neg.toml",
            "[inter]\nkind = \"matrix\"\nfile = \"nan.json\"\n".into(),
            vec!["nan.json:3", "inv_bandwidth[1][0]", "-2", "negative"],
        ),
        (
            "matrix-ragged.toml",
            "[inter]\nkind = \"matrix\"\nfile = \"ragged.toml\"\n".into(),
            vec!["ragged.toml:2", "latency[1]", "row has 1 entries, expected 2"],
        ),
    ];
    for (name, text, needles) in cases {
        let p = write(&dir, name, &text);
        let e = load_machine(&p, None).expect_err(name).to_string();
        for n in needles {
            assert!(e.contains(n), "{name}: `{n}` not in: {e}");
        }
    }
    let e = load_machine(&dir.join("absent.toml"), None).unwrap_err();
    assert!(matches!(e, TopologyError::Io { .. }));
}

#[cfg(not(feature = "hwloc"))]
#[test]
fn hwloc_config_without_feature_says_to_enable_it() {
    let dir = tmp_dir("nohwloc");
    let p = write(
        &dir,
        "h.toml",
        "[intra]\nkind = \"hwloc-synthetic\"\ndescription = \"pack:2 core:2\"\n",
    );
    let e = load_machine(&p, None).unwrap_err();
    assert!(matches!(e, TopologyError::HwlocDisabled { .. }), "{e:?}");
    let m = e.to_string();
    assert!(
        m.contains("h.toml") && m.contains("`hwloc` cargo feature"),
        "{m}"
    );
}

#[cfg(feature = "hwloc")]
#[test]
fn hwloc_configs_build() {
    let dir = tmp_dir("hwloc");
    let p = write(
        &dir,
        "h.toml",
        "[intra]\nkind = \"hwloc-synthetic\"\ndescription = \"pack:2 core:2 pu:1\"\n",
    );
    let m = load_machine(&p, None).unwrap();
    assert_eq!(m.ranks(), 4);
    assert_eq!(m.pair_level(0, 2), PairLevel::Intra(Level::Machine));
    let p = write(
        &dir,
        "x.toml",
        &format!(
            "[intra]\nkind = \"hwloc-xml\"\nfile = \"{}\"\n",
            data("interlagos-like.xml").display()
        ),
    );
    assert_eq!(load_machine(&p, None).unwrap().ranks(), 32);
    let p = write(&dir, "m.toml", "[intra]\nkind = \"hwloc-machine\"\n");
    assert!(load_machine(&p, None).unwrap().ranks() >= 1);
}

/// The per-class statistics of every ordered pair `i ≠ j`, one pair at a time.
fn pairwise_summary(m: &Machine) -> Vec<(PairLevel, u64, [f64; 6])> {
    let mut out: Vec<(PairLevel, u64, [f64; 6])> = Vec::new();
    let p = m.ranks();
    for i in 0..p {
        for j in (0..p).filter(|&j| j != i) {
            let (lv, c) = (m.pair_level(i, j), m.link(i, j));
            let k = match out.iter().position(|e| e.0 == lv) {
                Some(k) => k,
                None => {
                    let big = f64::INFINITY;
                    out.push((lv, 0, [big, -big, 0.0, big, -big, 0.0]));
                    out.len() - 1
                }
            };
            let e = &mut out[k];
            e.1 += 1;
            for (off, v) in [(0, c.latency), (3, c.inv_bandwidth)] {
                e.2[off] = e.2[off].min(v);
                e.2[off + 1] = e.2[off + 1].max(v);
                e.2[off + 2] += v;
            }
        }
    }
    out.sort_by_key(|e| e.0);
    out
}

#[test]
fn summaries_visit_node_pairs_but_equal_the_pairwise_statistics() {
    let mut machines = vec![
        load_machine(&data("torus-xe6.toml"), Some(200)).unwrap(), // a partial last node
        load_machine(&data("torus-xe6.toml"), Some(64)).unwrap(),
    ];
    for rule in ["packed", "round-robin"] {
        let text = std::fs::read_to_string(data("torus-xe6.toml")).unwrap();
        let text = text
            .replace("rule = \"packed\"", &format!("rule = \"{rule}\""))
            .replace("ranks_per_node = 32", "ranks_per_node = 3");
        let cfg = TopologyConfig::from_str(&text, Format::Toml).unwrap();
        machines.push(cfg.build(&data(""), Some(100)).unwrap());
    }
    let explicit =
        TopologyConfig::from_str("rank_matrix = \"calibration-4.json\"", Format::Toml).unwrap();
    machines.push(explicit.build(&data(""), None).unwrap());
    assert!(machines.last().unwrap().rank_matrix().is_some());
    for m in &machines {
        let want = pairwise_summary(m);
        let got = m.summary();
        assert_eq!(got.levels.len(), want.len());
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-300);
        for (l, (lv, n, s)) in got.levels.iter().zip(&want) {
            assert_eq!((l.level, l.pairs), (*lv, *n));
            assert_eq!((l.latency.min, l.latency.max), (s[0], s[1]), "{lv:?}");
            assert_eq!((l.inv_bandwidth.min, l.inv_bandwidth.max), (s[3], s[4]));
            assert!(close(l.latency.mean, s[2] / *n as f64), "{lv:?}");
            assert!(close(l.inv_bandwidth.mean, s[5] / *n as f64), "{lv:?}");
        }
        // the progress reports climb to their total, a few hundred times at most
        let mut calls: Vec<(u64, u64)> = Vec::new();
        let again = m.summary_with_progress(&mut |d, t| calls.push((d, t)));
        assert_eq!(again, got);
        assert!(
            !calls.is_empty() && calls.len() <= 300,
            "{} calls",
            calls.len()
        );
        assert!(calls
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 == w[1].1));
        let (done, total) = *calls.last().unwrap();
        assert_eq!(done, total);
        let pairs: u64 = want.iter().map(|e| e.1).sum();
        let total: f64 = want.iter().map(|e| e.2[2]).sum();
        assert!(close(got.latency.mean, total / pairs as f64));
    }
}
