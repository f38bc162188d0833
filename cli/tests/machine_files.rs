//! One machine format: every machine-describing file under `data/` (machine files,
//! topology configs, network descriptions, calibration matrices, cost configs) and the
//! files `copr calibrate` writes are accepted by every command that takes a machine
//! (`copr topo`, `copr plan --cost`, `copr map --machine`); the few that cannot
//! describe a machine for a command end in one line naming the file and what to do.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

/// `copr ARGS` in `dir`.
fn copr(args: &[&str], dir: &Path) -> Output {
    common::copr_in(dir, args)
}

/// `copr ARGS` in `dir`, which must succeed: its standard output.
fn answered(args: &[&str], dir: &Path) -> Vec<u8> {
    common::ok(&copr(args, dir)).0.into_bytes()
}

/// The ranks of an `MPICH_RANK_ORDER` list, in order (`a-b` ranges expanded).
fn mpich_entries(text: &str) -> Vec<usize> {
    text.split([',', '\n'])
        .filter(|it| !it.is_empty())
        .flat_map(|it| match it.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<usize>>(),
            None => vec![it.parse().unwrap()],
        })
        .collect()
}

fn repo() -> PathBuf {
    common::root().to_path_buf()
}

fn temp_dir(tag: &str) -> PathBuf {
    common::scratch(&format!("copr-machine-files-{tag}"))
}

/// A 4-rank plan: a 2x2 block-cyclic matrix to other blocks.
const PLAN4: &str = r#"
[source]
kind = "block-cyclic"
m = 64
n = 64
mb = 8
nb = 8
nprow = 2
npcol = 2

[target]
kind = "block-cyclic"
m = 64
n = 64
mb = 16
nb = 32
nprow = 2
npcol = 2
"#;

/// Every `.toml` / `.json` under `data/topology`, `data/cost` and `data/machines`.
fn machine_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in ["data/topology", "data/cost", "data/machines"] {
        for e in std::fs::read_dir(repo().join(d)).unwrap() {
            let p = e.unwrap().path();
            if matches!(
                p.extension().and_then(|x| x.to_str()),
                Some("toml" | "json")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 18, "{out:?}");
    out
}

/// Why a command may refuse a file: (file name, command, words of the message).
fn expected_refusal(name: &str, command: &str) -> Option<&'static str> {
    match (name, command) {
        // prices volume only: no machine to summarise or map onto
        ("volume.toml", "topo" | "map") => Some("no topology"),
        ("single-node.toml", "topo" | "plan") if !copr_topology::HWLOC_ENABLED => Some("hwloc"),
        _ => None,
    }
}

fn check_all(files: &[PathBuf], dir: &Path) {
    let plan = dir.join("plan4.toml");
    std::fs::write(&plan, PLAN4).unwrap();
    let plan = plan.to_str().unwrap().to_string();
    let mut failures = Vec::new();
    for f in files {
        let fs = f.to_str().unwrap();
        let name = f.file_name().unwrap().to_str().unwrap();
        let runs: [(&str, Vec<&str>); 3] = [
            ("topo", vec!["topo", fs, "--ranks", "4"]),
            ("plan", vec!["plan", &plan, "--cost", fs]),
            (
                "map",
                vec![
                    "map",
                    "--grid",
                    "2x2",
                    "--machine",
                    fs,
                    "--budget",
                    "0.2",
                    "--json",
                ],
            ),
        ];
        for (cmd, args) in runs {
            let out = copr(&args, dir);
            let err = String::from_utf8_lossy(&out.stderr);
            match expected_refusal(name, cmd) {
                None if out.status.success() => {}
                None => failures.push(format!("{name}: copr {cmd} failed: {err}")),
                Some(words) => {
                    if out.status.code() != Some(2)
                        || err.lines().count() != 1
                        || !err.contains(words)
                        || !err.contains(name)
                    {
                        failures.push(format!(
                            "{name}: copr {cmd} should refuse in one line with `{words}`: {:?} {err}",
                            out.status.code()
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_data_file_feeds_every_command() {
    check_all(&machine_files(), &temp_dir("data"));
}

#[test]
fn what_calibrate_writes_feeds_every_command() {
    // the files `copr calibrate --emulate-nodes` writes: a cost config with a node
    // matrix (up to 64 nodes) or one inter-node link, and a placement file
    let mut files = Vec::new();
    for nodes in [2, 80] {
        let dir = temp_dir(&format!("cal{nodes}"));
        copr_cli::calibrate::cases::offline::emulated_model(&dir, 160, nodes).unwrap();
        files.push(dir.join("machine.toml"));
    }
    // the map needs the machine's own rank count when the placement is a file
    let dir = temp_dir("cal-run");
    for (f, nodes) in files.iter().zip([2, 80]) {
        let fs = f.to_str().unwrap();
        answered(&["topo", fs], &dir);
        let stdout = answered(
            &[
                "map",
                "--grid",
                "16x10",
                "--machine",
                fs,
                "--budget",
                "0.2",
                "--json",
            ],
            &dir,
        );
        let v: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
        let machine = v["machine"].as_str().unwrap();
        let per = format!(
            "{nodes} nodes, flat network, {} ranks per node",
            160 / nodes
        );
        assert!(machine.starts_with(&per), "{machine}");
    }
}

#[test]
fn torus_xe6_topology_maps() {
    let f = repo().join("data/topology/torus-xe6.toml");
    let dir = temp_dir("xe6");
    let rf = dir.join("ranks.txt");
    let stdout = answered(
        &[
            "map",
            "--grid",
            "8x8",
            "--machine",
            f.to_str().unwrap(),
            "--strategies",
            "packed",
            "--rankfile",
            rf.to_str().unwrap(),
        ],
        &dir,
    );
    let stdout = String::from_utf8_lossy(&stdout);
    // 64 ranks at 32 per node: the placement rule's first two nodes, named by the
    // coordinates file
    let text = std::fs::read_to_string(&rf).unwrap();
    let hosts: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split('=').nth(1))
        .filter_map(|h| h.split_whitespace().next())
        .collect();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("rank")).count(),
        64,
        "{text}"
    );
    assert_eq!(hosts.len(), 2, "{text}\n{stdout}");
    assert!(hosts.iter().all(|h| h.starts_with("nid")), "{hosts:?}");
}

#[test]
fn a_bad_field_names_file_line_and_field() {
    let dir = temp_dir("bad");
    let cases = [
        (
            "ranks_per_node = 16\n\n[torus]\ndims = [4, 4]\nlink_bandwith = [1e9, 1e9]\n",
            ":5:",
            "torus.link_bandwith",
        ),
        (
            "ranks_per_node = 4\nnodes = \"n[1-3\"\n[torus]\ndims = [4, 4]\n",
            ":2:",
            "`nodes`",
        ),
        (
            "ranks_per_node = \"4(x2),2(x1\"\n[flat]\nnodes = 3\n",
            ":1:",
            "ranks_per_node",
        ),
        (
            "ranks_per_node = 4\n[flat]\nnodes = 3\n[inter]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = 1e9\n",
            ":4:",
            "`inter`",
        ),
        ("[flat]\nnodes = 0\n", ":2:", "flat.nodes"),
    ];
    for (k, (text, line, field)) in cases.iter().enumerate() {
        let name = format!("bad{k}.toml");
        std::fs::write(dir.join(&name), text).unwrap();
        for args in [
            vec!["map", "--grid", "2x2", "--machine", &name],
            vec!["topo", &name],
        ] {
            let out = copr(&args, &dir);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.contains(&format!("{name}{line}")) && err.contains(field),
                "{args:?}: {err}"
            );
        }
    }
}

/// (node, core) of every rank of a rankfile, checked to name each rank once.
fn parse_rankfile(text: &str, ranks: usize) -> Vec<(String, usize)> {
    let mut out = vec![None; ranks];
    for l in text.lines() {
        let rest = l.strip_prefix("rank ").unwrap();
        let (r, rest) = rest.split_once('=').unwrap();
        let (host, slot) = rest.split_once(" slot=").unwrap();
        let r: usize = r.parse().unwrap();
        assert!(out[r].is_none(), "rank {r} twice");
        out[r] = Some((host.to_string(), slot.parse().unwrap()));
    }
    out.into_iter().map(|x| x.expect("every rank")).collect()
}

#[test]
fn nodes_of_different_sizes_by_hand() {
    // node a has 2 slots, node b 1; tasks 0 and 1 exchange 100 bytes, task 2 one byte
    // with each: the optimum keeps 0 and 1 on a (2 bytes cross, 1 hop each)
    let dir = temp_dir("small");
    std::fs::write(
        dir.join("m.toml"),
        "ranks_per_node = [2, 1]\nnodes = [\"a\", \"b\"]\n[flat]\nnodes = 2\n",
    )
    .unwrap();
    std::fs::write(dir.join("g.txt"), "0 1 100\n1 0 100\n2 0 1\n1 2 1\n").unwrap();
    let stdout = answered(
        &[
            "map",
            "--graph",
            "g.txt",
            "--machine",
            "m.toml",
            "--json",
            "--rankfile",
            "rf.txt",
            "--slurm-hostfile",
            "sh.txt",
            "--mpich-rank-order",
            "mo.txt",
        ],
        &dir,
    );
    let v: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    for r in rows {
        // every strategy's mapping fits the nodes' slots
        assert!(r["metrics"]["hop_bytes"].as_u64().unwrap() >= 2, "{r}");
    }
    let opt = rows.iter().find(|r| r["strategy"] == "optimised").unwrap();
    assert_eq!(opt["metrics"]["hop_bytes"], 2);
    let rf = parse_rankfile(&std::fs::read_to_string(dir.join("rf.txt")).unwrap(), 3);
    assert_eq!(rf[0].0, "a");
    assert_eq!(rf[1].0, "a");
    assert_eq!(rf[2], ("b".to_string(), 0));
    let sh = std::fs::read_to_string(dir.join("sh.txt")).unwrap();
    assert_eq!(sh, "a\na\nb\n");
    // MPICH_RANK_ORDER: the rank of each slot the nodes have (a0, a1, b0)
    let mo = std::fs::read_to_string(dir.join("mo.txt")).unwrap();
    let order = mpich_entries(&mo);
    let slots = [("a", 0), ("a", 1), ("b", 0)];
    assert_eq!(order.len(), 3, "{mo}");
    for (i, &r) in order.iter().enumerate() {
        assert_eq!((rf[r].0.as_str(), rf[r].1), slots[i], "{mo}");
    }
}

#[test]
fn a_slurm_allocation_with_16_and_8_slots() {
    let dir = temp_dir("slurm");
    std::fs::write(
        dir.join("m.toml"),
        "nodes = \"nid[0001-0040]\"\nranks_per_node = \"16(x24),8(x16)\"\n[torus]\ndims = [4, 5, 2]\n",
    )
    .unwrap();
    let cap = |host: &str| {
        let n: usize = host.trim_start_matches("nid").parse().unwrap();
        assert!((1..=40).contains(&n), "{host}");
        if n <= 24 {
            16
        } else {
            8
        }
    };
    // 512 ranks fill every slot; 500 leave 12 empty
    for (grid, ranks) in [("16x32", 512), ("20x25", 500)] {
        let mut args = vec![
            "map",
            "--grid",
            grid,
            "--machine",
            "m.toml",
            "--budget",
            "1",
            "--rankfile",
            "rf.txt",
            "--slurm-hostfile",
            "sh.txt",
        ];
        if ranks == 512 {
            args.extend(["--mpich-rank-order", "mo.txt"]);
        }
        answered(&args, &dir);
        let rf = parse_rankfile(&std::fs::read_to_string(dir.join("rf.txt")).unwrap(), ranks);
        let mut per: std::collections::HashMap<&str, Vec<usize>> = Default::default();
        for (h, c) in &rf {
            assert!(*c < cap(h), "{h} core {c}");
            per.entry(h.as_str()).or_default().push(*c);
        }
        for (h, cores) in &per {
            let mut c = cores.clone();
            c.sort_unstable();
            c.dedup();
            assert_eq!(c.len(), cores.len(), "{h}: a core twice");
        }
        assert_eq!(per.values().map(Vec::len).sum::<usize>(), ranks);
        let sh = std::fs::read_to_string(dir.join("sh.txt")).unwrap();
        let hosts: Vec<&str> = sh.lines().collect();
        assert_eq!(hosts.len(), ranks);
        for (r, h) in hosts.iter().enumerate() {
            assert_eq!(*h, rf[r].0, "rank {r}");
        }
        if ranks == 512 {
            let mo = std::fs::read_to_string(dir.join("mo.txt")).unwrap();
            // the rank of every slot the nodes have, in node and core order: the
            // rankfile puts that rank there
            let order = mpich_entries(&mo);
            let present: Vec<(String, usize)> = (1..=40)
                .flat_map(|n| {
                    let name = format!("nid{n:04}");
                    (0..cap(&name)).map(move |c| (name.clone(), c))
                })
                .collect();
            assert_eq!(order.len(), present.len());
            for (i, &r) in order.iter().enumerate() {
                assert_eq!(rf[r], present[i], "slot {i}");
            }
        }
    }
    // MPICH_RANK_ORDER cannot leave slots empty
    let out = copr(
        &[
            "map",
            "--grid",
            "20x25",
            "--machine",
            "m.toml",
            "--budget",
            "0.2",
            "--mpich-rank-order",
            "mo.txt",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(2));
    // more ranks than slots
    let out = copr(&["map", "--grid", "16x33", "--machine", "m.toml"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("512 slots"),
        "{err}"
    );
}

#[test]
fn a_recording_is_the_machine_and_its_placement_is_priced() {
    // 4 ranks: 0, 2, 3 ran on host a, 1 on b; 0 sent 1 1000 bytes, 2 sent 3 10
    let dir = temp_dir("rec");
    std::fs::write(
        dir.join("traffic.txt"),
        "# copr traffic recording of 4 ranks\n0 1 1000 # 1\n2 3 10 # 1\n# host 0 a\n# host 1 b\n# host 2 a\n# host 3 a\n",
    )
    .unwrap();
    let stdout = answered(
        &[
            "map",
            "--graph",
            "traffic.txt",
            "--machine-from-recording",
            "--json",
            "--rankfile",
            "rf.txt",
        ],
        &dir,
    );
    let v: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    // the recorded run: 1000 bytes cross; the best keeps 0 and 1 together: 10
    assert_eq!(v["recorded"]["hop_bytes"], 1000);
    let opt = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == "optimised")
        .unwrap();
    assert_eq!(opt["metrics"]["hop_bytes"], 10);
    let rf = parse_rankfile(&std::fs::read_to_string(dir.join("rf.txt")).unwrap(), 4);
    assert_eq!(rf.iter().filter(|(h, _)| h == "b").count(), 1);
    assert_eq!(rf[0].0, rf[1].0);
    // the text report says both
    let out = copr(
        &["map", "--graph", "traffic.txt", "--machine-from-recording"],
        &dir,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("recorded run: hop-bytes 1.000 kB") && text.contains("10 B (100.00x less)"),
        "{text}"
    );
    // a graph without host lines
    std::fs::write(dir.join("plain.txt"), "0 1 8\n").unwrap();
    let out = copr(
        &["map", "--graph", "plain.txt", "--machine-from-recording"],
        &dir,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("# host"),
        "{err}"
    );
}

#[test]
fn a_json_syntax_error_is_named_before_any_field() {
    // a rank matrix with a latency beyond f64 and one with a missing comma: the
    // error is the number or the comma, not the first key a machine file lacks
    let dir = temp_dir("json-syntax");
    for (k, (text, needle)) in [
        (
            "{\"latency\": [[0, 1e999], [1e-6, 0]],\n \"inv_bandwidth\": [[0, 1e-9], [1e-9, 0]]}",
            "number out of range",
        ),
        (
            "{\"latency\": [[0, 1e-6], [1e-6, 0]]\n \"inv_bandwidth\": [[0, 1e-9], [1e-9, 0]]}",
            "expected `,` or `}`",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("m{k}.json");
        std::fs::write(dir.join(&name), text).unwrap();
        for args in [
            vec!["map", "--grid", "2x1", "--machine", &name],
            vec!["topo", &name],
            vec![
                "plan",
                "--source",
                "block-cyclic:m=8,n=8,mb=2,nb=2,nprow=2,npcol=1",
                "--target",
                "block-cyclic:m=8,n=8,mb=4,nb=4,nprow=2,npcol=1",
                "--cost",
                &name,
            ],
        ] {
            let err = common::refused(&copr(&args, &dir), &[&name, needle]);
            assert!(!err.contains("unknown field"), "{args:?}: {err}");
        }
    }
}

#[test]
fn a_network_machine_with_too_few_or_many_node_names_is_refused_by_every_command() {
    let dir = temp_dir("network-names");
    std::fs::copy(
        repo().join("data/topology/fat-tree-k4.net.toml"),
        dir.join("ft.net.toml"),
    )
    .unwrap();
    for (names, hosts, needle) in [
        (
            "[\"a\", \"b\", \"c\"]",
            "hosts = \"h[0-3]\"\n",
            "3 names for 4 nodes",
        ),
        (
            "[\"a\", \"b\", \"c\", \"d\", \"e\"]",
            "hosts = \"h[0-3]\"\n",
            "5 names for 4 nodes",
        ),
        ("\"n[0-2]\"", "", "3 names for 16 nodes"),
    ] {
        let text = format!(
            "ranks_per_node = 1\nnodes = {names}\n[network]\nfile = \"ft.net.toml\"\n{hosts}"
        );
        std::fs::write(dir.join("m.toml"), text).unwrap();
        for args in [
            vec!["topo", "m.toml"],
            vec![
                "map",
                "--grid",
                "2x2",
                "--machine",
                "m.toml",
                "--strategies",
                "packed",
            ],
        ] {
            common::refused(&copr(&args, &dir), &["m.toml", needle]);
        }
    }
    // one name per host reads
    std::fs::write(
        dir.join("m.toml"),
        "ranks_per_node = 1\nnodes = \"n[0-3]\"\n[network]\nfile = \"ft.net.toml\"\nhosts = \"h[0-3]\"\n",
    )
    .unwrap();
    common::ok(&copr(&["topo", "m.toml"], &dir));
}
