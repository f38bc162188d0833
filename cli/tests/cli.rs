//! The `copr` binary: plan and sweep output, and bad input.

use std::path::Path;
use std::process::Command;

use copr::plan::{Plan, PlanSpec};

mod common;

use common::{copr, copr_in};

/// Asserts that a command succeeded, showing its standard error otherwise.
fn assert_ok(out: &std::process::Output) {
    common::ok(out);
}

fn tmp(name: &str) -> std::path::PathBuf {
    common::tmp("copr-cli", name)
}

#[test]
fn plan_json_reports_what_the_library_computes() {
    for file in [
        "data/plans/paper-b5000.toml",
        "data/plans/scalapack-32-to-128.toml",
        "data/plans/grid-to-subset.json",
        "data/plans/submatrix.toml",
    ] {
        let out = copr(&["plan", file, "--json"]);
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let spec =
            PlanSpec::from_file(&Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(file))
                .unwrap();
        let plan = Plan::from_spec(&spec).unwrap();
        let v = plan.volumes();
        assert_eq!(j["total_elements"], v.total());
        assert_eq!(j["remote_before"], v.remote());
        let sigma: Vec<usize> = serde_json::from_value(j["sigma"].clone()).unwrap();
        let sigma = copr::lap::Perm::from_forward(sigma).unwrap();
        // the printed σ reproduces the printed remote_after
        assert_eq!(j["remote_after"], v.remote_after(&sigma));
        let before = v.remote() as f64;
        let after = v.remote_after(&sigma) as f64;
        let pct = j["reduction_percent"].as_f64().unwrap();
        assert!((pct - 100.0 * (before - after) / before).abs() < 1e-9);
    }
}

#[test]
fn plan_draws_an_svg() {
    let svg = tmp("plan.svg");
    let out = copr(&[
        "plan",
        "data/plans/paper-b5000.toml",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("after relabeling"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("reduction        24.24 %"));
}

#[test]
fn a_picture_that_cannot_be_written_is_one_line_naming_the_file() {
    let svg = tmp("no-such-dir/plan.svg");
    let out = copr(&[
        "plan",
        "data/plans/paper-b5000.toml",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(svg.to_str().unwrap()) && err.contains("cannot draw"),
        "{err}"
    );
}

#[test]
fn sweep_json_has_the_documented_fields_and_writes_a_chart() {
    let svg = tmp("sweep.svg");
    let out = copr(&["sweep", "--json", "--svg", svg.to_str().unwrap()]);
    assert_ok(&out);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows.len() >= 20);
    for key in [
        "block",
        "total_elements",
        "remote_before",
        "remote_after",
        "reduction_percent",
    ] {
        assert!(rows.iter().all(|r| r.get(key).is_some()), "missing {key}");
    }
    let last = rows.iter().find(|r| r["block"] == 10_000).unwrap();
    assert_eq!(last["reduction_percent"], 100.0);
    assert_eq!(last["remote_after"], 0);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("exact (copr)") && text.contains("greedy swaps"));
}

#[test]
fn sweep_options_change_the_experiment() {
    let out = copr(&[
        "sweep",
        "--m",
        "1000",
        "--n",
        "500",
        "--nprow",
        "2",
        "--npcol",
        "3",
        "--target-block",
        "50",
        "--blocks",
        "10,50",
        "--source-order",
        "col-major",
        "--no-svg",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1000 x 500 matrix, 2 x 3 grids (col-major -> col-major), target block 50")
    );
    // equal blocks and equal grid numbering: nothing to gain, nothing to move
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["50", "500000", "0", "0", "0.00", "0.00"]),
        "{text}"
    );
}

#[test]
fn bad_input_is_one_line_exit_2_never_a_panic() {
    let cases: &[(&str, &str, &str)] = &[
        ("missing.toml", "", "No such file"),
        (
            "bad.toml",
            "[source]\nkind = \"grid\"\nrow_splits = [0, 80, 70]\ncol_splits = [0, 4]\nowners = [[0], [0]]\n",
            "70 <= 80 at index 2",
        ),
        (
            "owner.toml",
            "[source]\nkind = \"grid\"\nrow_splits = [0, 4]\ncol_splits = [0, 4]\nowners = [[7]]\nranks = 2\n[target]\nkind = \"grid\"\nrow_splits = [0, 4]\ncol_splits = [0, 4]\nowners = [[0]]\n",
            "owner 7",
        ),
        ("syntax.toml", "[source\n", "line 1"),
        ("bad.json", "{\"source\": 3}", "line 1"),
        (
            "shape.toml",
            "[source]\nkind = \"block-cyclic\"\nm = 10\nn = 20\nmb = 2\nnb = 2\nnprow = 1\nnpcol = 1\n[target]\nkind = \"block-cyclic\"\nm = 10\nn = 10\nmb = 2\nnb = 2\nnprow = 1\nnpcol = 1\n",
            "mismatch",
        ),
        (
            "zero.toml",
            "[source]\nkind = \"block-cyclic\"\nm = 10\nn = 10\nmb = 0\nnb = 2\nnprow = 1\nnpcol = 1\n[target]\nkind = \"block-cyclic\"\nm = 10\nn = 10\nmb = 2\nnb = 2\nnprow = 1\nnpcol = 1\n",
            "mb",
        ),
        (
            "neg.toml",
            "[source]\nkind = \"block-cyclic\"\nm = -10\nn = 10\nmb = 1\nnb = 2\nnprow = 1\nnpcol = 1\n",
            "field `m`: invalid value: integer `-10`",
        ),
    ];
    for (name, content, needle) in cases {
        let path = tmp(name);
        if !content.is_empty() {
            std::fs::write(&path, content).unwrap();
        }
        let out = copr(&["plan", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        assert!(err.contains(needle), "{name}: expected {needle:?} in {err}");
        assert!(
            err.contains(name),
            "{name}: error must name the file: {err}"
        );
        assert!(!err.contains("panicked"));
    }
}

#[test]
fn plan_with_a_cost_model_reports_cost_and_volume() {
    for cfg in [
        "data/cost/two-islands.toml",
        "data/cost/torus-3d.toml",
        "data/cost/fat-tree.toml",
    ] {
        let out = copr(&[
            "plan",
            "data/plans/scalapack-32-to-128.toml",
            "--cost",
            cfg,
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{cfg}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &j["cost"];
        let (before, after) = (
            c["cost_before"].as_f64().unwrap(),
            c["cost_after"].as_f64().unwrap(),
        );
        let with_volume_sigma = c["cost_with_plan_sigma"].as_f64().unwrap();
        assert!(after <= before * (1.0 + 1e-12), "{cfg}: {after} > {before}");
        assert!(
            after <= with_volume_sigma * (1.0 + 1e-12),
            "{cfg}: cost σ worse than volume σ"
        );
        assert!(c["remote_after"].as_u64().unwrap() >= j["remote_after"].as_u64().unwrap());
        assert_eq!(c["sigma"].as_array().unwrap().len(), 8);
    }
}

#[test]
fn topo_summarises_and_draws() {
    let svg = tmp("topo.svg");
    let out = copr(&[
        "topo",
        "data/cost/torus-3d.toml",
        "--ranks",
        "128",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ranks: 128") && text.contains("ranks per node: 32\n"),
        "{text}"
    );
    assert!(text.contains("hop"), "{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<rect"));
    let out = copr(&["topo", "data/topology/two-islands.net.toml", "--json"]);
    let _ = out; // a network file alone is not a topology config: checked below
    let out = copr(&["topo", "data/topology/torus-xe6.toml", "--json"]);
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ranks"], 512);
}

#[test]
fn bad_cost_configs_name_file_and_field() {
    let path = tmp("badcost.toml");
    std::fs::write(&path, "[[terms]]\nmodel = \"latency-bandwidth\"\n[topology.inter]\nkind = \"torus\"\ndims = [4, 4, 4]\nhop_latency = -1.0\n").unwrap();
    let out = copr(&[
        "plan",
        "data/plans/scalapack-32-to-128.toml",
        "--cost",
        path.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("badcost.toml") && err.contains("hop_latency"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let out = copr(&["topo", "data/nope.toml"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Links crossed per torus dimension between two nodes, from their coordinates in the
/// coordinates file (the shorter way round a ring of `dims[d]`): a reference that does
/// not use copr's routing.
fn torus_hops_per_dim(coords: &[[i64; 3]], dims: [i64; 3], a: usize, b: usize) -> [u64; 3] {
    let mut out = [0; 3];
    for d in 0..3 {
        let fwd = (coords[b][d] - coords[a][d]).rem_euclid(dims[d]);
        out[d] = fwd.min(dims[d] - fwd) as u64;
    }
    out
}

#[test]
fn readme_torus_example_prefers_cheap_links_over_volume() {
    let (plan_file, cfg) = (
        "data/plans/paper-b7500.toml",
        "data/cost/torus-3d-spread.toml",
    );
    // the guide's page on cost models shows this example
    let readme = std::fs::read_to_string(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("docs/cost-models.md"),
    )
    .unwrap();
    assert!(readme.contains(&format!("plan {plan_file} --cost {cfg}")));
    let out = copr(&["plan", plan_file, "--cost", cfg, "--json"]);
    assert_ok(&out);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &j["cost"];
    // the cost-optimal σ moves more, costs less, and takes bytes off the Y links
    let (vol_remote, cost_remote) = (
        j["remote_after"].as_u64().unwrap(),
        c["remote_after"].as_u64().unwrap(),
    );
    assert!(cost_remote > vol_remote, "{cost_remote} {vol_remote}");
    let f = |k: &str| c[k].as_f64().unwrap();
    assert!(
        f("cost_after") < f("cost_with_plan_sigma") && f("cost_with_plan_sigma") < f("cost_before")
    );
    // the link bytes, recomputed from the nodes' coordinates (one rank per node, packed:
    // rank r on the r-th node of the file) for each σ
    let coords_text = std::fs::read_to_string(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/topology/torus-4x4x4.coords"),
    )
    .unwrap();
    let coords: Vec<[i64; 3]> = coords_text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let v: Vec<i64> = l
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().unwrap())
                .collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    let spec =
        PlanSpec::from_file(&Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(plan_file))
            .unwrap();
    let plan = Plan::from_spec(&spec).unwrap();
    let link_bytes = |sigma: Option<&copr::lap::Perm>| {
        let mut out = [0u64; 3];
        for (s, t, x) in plan.volumes().matrix().iter() {
            let d = sigma.map_or(t, |g| g.apply(t));
            let h = torus_hops_per_dim(&coords, [4, 4, 4], s, d);
            for k in 0..3 {
                out[k] += h[k] * x * 8;
            }
        }
        out
    };
    let cost_sigma: Vec<usize> = serde_json::from_value(c["sigma"].clone()).unwrap();
    let cost_sigma = copr::lap::Perm::from_forward(cost_sigma).unwrap();
    let want = [
        ("before", link_bytes(None)),
        ("volume_sigma", link_bytes(Some(plan.sigma()))),
        ("cost_sigma", link_bytes(Some(&cost_sigma))),
    ];
    for (key, w) in &want {
        let got: Vec<u64> = serde_json::from_value(c["torus_link_bytes"][key].clone()).unwrap();
        assert_eq!(got, w.to_vec(), "{key}");
    }
    assert!(want[2].1[1] < want[1].1[1], "Y links: {:?}", want);
    // the page shows this command's output
    let text = String::from_utf8(copr(&["plan", plan_file, "--cost", cfg]).stdout).unwrap();
    let tail: Vec<&str> = text
        .lines()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(
        readme.contains(&tail.join("\n")),
        "README is missing\n{}",
        tail.join("\n")
    );
    let e = |x: f64| format!("{:.3}", x);
    for n in [
        e(f("cost_after")),
        e(f("cost_with_plan_sigma")),
        e(f("cost_before")),
    ] {
        assert!(readme.contains(&format!("{n} s")), "README lacks {n} s");
    }
    let sci = |x: u64| format!("{:.3}·10⁹", x as f64 / 1e9);
    assert!(readme.contains(&sci(cost_remote)) && readme.contains(&sci(vol_remote)));
}

#[test]
fn this_node_via_hwloc_or_a_clear_error_without_it() {
    let out = copr(&["topo", "data/cost/single-node.toml"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if cfg!(feature = "hwloc") {
        assert!(out.status.success(), "{stderr}");
        let pus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(
            stdout.contains(&format!("ranks: {pus} ")) || pus == 1,
            "{stdout}"
        );
        assert!(stdout.contains("hwloc"), "{stdout}");
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr.contains("hwloc"), "{stderr}");
    }
}

#[test]
fn map_compares_every_strategy_and_exports_the_chosen_mapping() {
    let (rf, mro, sh, hf, js, svg, pf) = (
        tmp("rankfile"),
        tmp("order"),
        tmp("slurm"),
        tmp("smpi"),
        tmp("map.json"),
        tmp("map.svg"),
        tmp("platform.xml"),
    );
    let s = |p: &std::path::PathBuf| p.to_str().unwrap().to_string();
    let out = copr(&[
        "map",
        "--grid",
        "32x32",
        "--machine",
        "data/machines/torus-4x4x4.toml",
        "--rankfile",
        &s(&rf),
        "--mpich-rank-order",
        &s(&mro),
        "--slurm-hostfile",
        &s(&sh),
        "--smpi-hostfile",
        &s(&hf),
        "--mapping-json",
        &s(&js),
        "--svg",
        &s(&svg),
        "--smpi-platform",
        &s(&pf),
    ]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for s in [
        "packed",
        "round-robin",
        "folded",
        "tiles",
        "hilbert",
        "cp2k",
        "bisection",
        "optimised",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(s)),
            "{s} missing:\n{text}"
        );
    }
    // the optimiser reaches the bound here: 64 tiles x 16 boundary messages of 1 MiB
    let j: copr_mapping::export::MappingJson =
        serde_json::from_str(&std::fs::read_to_string(&js).unwrap()).unwrap();
    let map = copr_mapping::export::from_json(&j).unwrap();
    let machine = copr_mapping::MapMachine::from_file(
        &Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/machines/torus-4x4x4.toml"),
    )
    .unwrap();
    let p = copr_mapping::Pattern::grid(
        &copr_mapping::CartGrid::new(vec![32, 32], vec![true, true], vec![1 << 20; 2]).unwrap(),
    )
    .unwrap();
    let m = copr_mapping::evaluate(&p, &machine, &map);
    assert_eq!(m.hop_bytes, 64 * 16 * (1 << 20));
    assert_eq!(j.node_of_rank[5], machine.node_name(map.apply(5) / 16));
    assert!(j.node_of_rank.iter().all(|n| n.starts_with("nid000")));
    // every file says the same mapping
    use copr_mapping::export;
    let read = |p: &std::path::PathBuf| std::fs::read_to_string(p).unwrap();
    assert_eq!(export::parse_rankfile(&read(&rf), &machine).unwrap(), map);
    assert_eq!(
        export::parse_mpich_rank_order(&read(&mro), 1024).unwrap(),
        map
    );
    let names = export::node_names(&machine);
    let nodes: Vec<usize> = (0..1024).map(|r| map.apply(r) / 16).collect();
    assert_eq!(export::parse_hostfile(&read(&sh), &names).unwrap(), nodes);
    let hosts = copr_mapping::simgrid::smpi_host_names(&machine);
    assert_eq!(export::parse_hostfile(&read(&hf), &hosts).unwrap(), nodes);
    assert!(read(&svg).contains("<svg") && read(&pf).contains("TORUS"));
    // --json: one object with every row
    let out = copr(&[
        "map",
        "--grid",
        "8x8",
        "--torus",
        "4x4",
        "--ranks-per-node",
        "4",
        "--json",
    ]);
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["rows"].as_array().unwrap().len(), 8);
    assert_eq!(j["tasks"], 64);
    // a reshuffle's traffic: the plan's 8 ranks on four nodes of two
    let out = copr(&[
        "map",
        "--plan",
        "data/plans/scalapack-32-to-128.toml",
        "--flat",
        "4",
        "--ranks-per-node",
        "2",
        "--json",
    ]);
    assert_ok(&out);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let spec = PlanSpec::from_file(
        &Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/plans/scalapack-32-to-128.toml"),
    )
    .unwrap();
    let plan = Plan::from_spec(&spec).unwrap();
    let v = plan.volumes().relabeled(plan.sigma());
    let remote = (v.total() - v.local()) as u128 * spec.element_size as u128;
    assert_eq!(
        j["rows"][0]["metrics"]["total_bytes"].as_u64().unwrap() as u128,
        remote
    );
}

#[test]
fn map_reports_bytes_inside_nodes_by_level() {
    let out = copr(&[
        "map",
        "--grid",
        "64x128",
        "--machine",
        "data/machines/xe6-8x8x8.toml",
        "--json",
    ]);
    assert_ok(&out);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for row in j["rows"].as_array().unwrap() {
        let levels = row["metrics"]["intra_levels"].as_array().unwrap();
        let names: Vec<&str> = levels
            .iter()
            .map(|l| l["level"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["numa", "package", "machine"], "{}", row["strategy"]);
        // every intra-node byte is at exactly one level
        let sum: u64 = levels.iter().map(|l| l["bytes"].as_u64().unwrap()).sum();
        assert_eq!(sum, row["metrics"]["intra_node_bytes"].as_u64().unwrap());
    }
}

#[test]
fn map_bad_input_is_one_line_exit_2() {
    let g = tmp("bad.txt");
    std::fs::write(&g, "0 1 5\n1 zero 3\n").unwrap();
    let m = tmp("bad-machine.toml");
    std::fs::write(&m, "ranks_per_node = 2\n[torus]\ndims = [4, 0]\n").unwrap();
    let m2 = tmp("bad-machine2.toml");
    std::fs::write(&m2, "ranks_per_node = 2\n[torus]\ndims = [4]\nbogus = 1\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["map", "--graph", g.to_str().unwrap(), "--flat", "2"],
            "line 2",
        ),
        (
            vec!["map", "--grid", "4x4", "--machine", m.to_str().unwrap()],
            "dims",
        ),
        (
            vec!["map", "--grid", "4x4", "--machine", m2.to_str().unwrap()],
            "bogus",
        ),
        (
            vec!["map", "--grid", "8x16", "--torus", "4x4x4"],
            "128 tasks",
        ),
        (vec!["map", "--grid", "0x4", "--flat", "1"], "extents"),
        (
            vec!["map", "--grid", "100000x100000", "--flat", "1"],
            "at most",
        ),
        (
            vec!["map", "--grid", "4x4", "--torus", "65536x65536x65536"],
            "at most",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "10000000000000",
                "--ranks-per-node",
                "1000",
            ],
            "at most",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--nodes",
                "a[1-3]",
            ],
            "3 names",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--nodes",
                "a[1-",
            ],
            "unclosed",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--export",
                "cp2k",
            ],
            "cp2k",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--smpi-platform",
                "/dev/null",
            ],
            "flat",
        ),
        (vec!["map", "--grid", "4xx4", "--flat", "4"], "32x32"),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--node-shape",
                "pack:2 core:4",
            ],
            "8 PUs",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--node-shape",
                "bogus:2",
            ],
            "bogus",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--budget",
                "NaN",
            ],
            "budget",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--flat",
                "4",
                "--ranks-per-node",
                "4",
                "--bytes",
                "1,2,3",
            ],
            "bytes",
        ),
        (
            vec![
                "map",
                "--grid",
                "4x4",
                "--torus",
                "4x4",
                "--link-bandwidth",
                "1e9,-1",
            ],
            "link_bandwidth",
        ),
        (
            vec!["map", "--grid", "4x4", "--machine", "/nonexistent/m.toml"],
            "/nonexistent/m.toml",
        ),
    ];
    for (args, needle) in cases {
        let out = copr(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// A fresh empty directory for one test.
fn empty_dir(name: &str) -> std::path::PathBuf {
    let d = tmp(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A sweep that takes milliseconds.
const SMALL_SWEEP: [&str; 13] = [
    "sweep",
    "--m",
    "100",
    "--n",
    "100",
    "--nprow",
    "2",
    "--npcol",
    "2",
    "--target-block",
    "10",
    "--blocks",
    "5,10",
];

/// Rust's names for copr's enums, which text output must not show.
const DEBUG_NAMES: [&str; 9] = [
    "Sparse",
    "Dense",
    "Greedy",
    "Identity",
    "RowMajor",
    "ColMajor",
    "Bottleneck",
    "..=",
    "Some(",
];

fn assert_no_debug_names(what: &str, text: &str) {
    for d in DEBUG_NAMES {
        assert!(!text.contains(d), "{what}: `{d}` in\n{text}");
    }
    for noun in ["nodes", "ranks", "hosts"] {
        assert!(
            !text.contains(&format!(" 1 {noun}")),
            "{what}: `1 {noun}` in\n{text}"
        );
    }
}

#[test]
fn text_output_uses_the_words_files_and_json_use() {
    for solver in ["sparse", "dense", "greedy", "identity"] {
        let args = ["plan", "data/plans/paper-b5000.toml", "--solver", solver];
        let text = String::from_utf8(copr(&args).stdout).unwrap();
        let json = copr(&[&args[..], &["--json"]].concat());
        let j: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let word = j["solver"].as_str().unwrap();
        assert_eq!(word, solver);
        let line = text.lines().find(|l| l.starts_with("solver")).unwrap();
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(&*format!("{word},")),
            "{line}"
        );
        assert_no_debug_names("plan", &text);
    }
    let args = [&SMALL_SWEEP[..], &["--source-order", "col-major"]].concat();
    let args = [&args[..], &["--target-order", "row-major", "--no-svg"]].concat();
    let out = copr(&args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("(col-major -> row-major)"), "{text}");
    assert_no_debug_names("sweep", &text);
    for cfg in [
        "data/cost/torus-3d.toml",
        "data/cost/single-node.toml",
        "data/cost/fat-tree.toml",
        "data/cost/dragonfly.toml",
        "data/cost/calibrated.json",
    ] {
        let out = copr(&["topo", cfg]);
        let text = String::from_utf8(out.stdout).unwrap();
        if cfg.contains("single-node") && !out.status.success() {
            continue; // needs hwloc
        }
        assert!(out.status.success(), "{cfg}");
        assert_no_debug_names(cfg, &text);
        let j: serde_json::Value =
            serde_json::from_slice(&copr(&["topo", cfg, "--json"]).stdout).unwrap();
        let (lo, hi) = (&j["ranks_per_node_min"], &j["ranks_per_node_max"]);
        let want = if lo == hi {
            format!("ranks per node: {lo}\n")
        } else {
            format!("ranks per node: {lo} to {hi}\n")
        };
        assert!(text.contains(&want), "{cfg}: no `{want}` in\n{text}");
    }
    let text = String::from_utf8(copr(&["topo", "data/cost/torus-3d.toml"]).stdout).unwrap();
    assert!(text.contains("bottleneck bandwidth model"), "{text}");
    for (flat, rpn) in [("1", "4"), ("4", "1")] {
        let out = copr(&[
            "map",
            "--grid",
            "2x2",
            "--flat",
            flat,
            "--ranks-per-node",
            rpn,
        ]);
        assert!(out.status.success());
        assert_no_debug_names("map", &String::from_utf8(out.stdout).unwrap());
    }
}

/// The `<text>` contents of an SVG that are plain numbers and centred or right-aligned,
/// as axis tick labels are (the colour scale's labels start at their point).
fn svg_numbers(svg: &str) -> Vec<f64> {
    svg.split("<text")
        .skip(1)
        .filter(|t| {
            !t.split('>')
                .next()
                .unwrap_or("")
                .contains("text-anchor=\"start\"")
        })
        .filter_map(|t| {
            let body = t.split('>').nth(1)?.split('<').next()?;
            body.trim().parse::<f64>().ok()
        })
        .collect()
}

/// A plan between two block-cyclic layouts on an `r x r` grid.
fn grid_plan(name: &str, r: usize) -> std::path::PathBuf {
    let path = tmp(name);
    let side = 10 * r;
    std::fs::write(
        &path,
        format!(
            "[source]\nkind = \"block-cyclic\"\nm = {side}\nn = {side}\nmb = 3\nnb = 3\nnprow = {r}\nnpcol = {r}\n\
             [target]\nkind = \"block-cyclic\"\nm = {side}\nn = {side}\nmb = 10\nnb = 10\nnprow = {r}\nnpcol = {r}\ngrid_order = \"col-major\"\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn heatmaps_say_when_they_are_binned_and_have_a_colour_scale() {
    for (r, binned) in [(16usize, true), (8, false)] {
        let p = r * r;
        let plan = grid_plan(&format!("heat-{r}.toml"), r);
        let svg = tmp(&format!("heat-{r}.svg"));
        let out = copr(&[
            "plan",
            plan.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ]);
        assert_ok(&out);
        let text = std::fs::read_to_string(&svg).unwrap();
        let j: serde_json::Value =
            serde_json::from_slice(&copr(&["plan", plan.to_str().unwrap(), "--json"]).stdout)
                .unwrap();
        assert_eq!(j["ranks"], p);
        // the axes count ranks up to p, not cells
        let top = svg_numbers(&text).into_iter().fold(0.0, f64::max);
        assert!(
            top > 0.8 * p as f64 && top <= p as f64,
            "{p} ranks, labels up to {top}"
        );
        assert_eq!(text.contains("binned"), binned, "{p} ranks");
        if binned {
            assert!(
                text.contains(&format!("cells of {} ranks each", p / 128)),
                "{p} ranks"
            );
        }
        assert!(text.contains(if binned {
            "elements per cell"
        } else {
            "elements"
        }));
        // each panel says how much is remote, as the JSON does
        let total = j["total_elements"].as_f64().unwrap();
        for key in ["remote_before", "remote_after"] {
            let pct = 100.0 * j[key].as_f64().unwrap() / total;
            assert!(
                text.contains(&format!("{pct:.2} % remote")),
                "{key} {pct:.2}"
            );
        }
    }
    let svg = tmp("topo-heat.svg");
    let out = copr(&[
        "topo",
        "data/cost/torus-3d.toml",
        "--ranks",
        "512",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("binned") && text.contains("cells of 4 ranks each"));
    assert!(text.contains("seconds"));
    let top = svg_numbers(&text).into_iter().fold(0.0, f64::max);
    assert!(top > 400.0 && top <= 512.0, "labels up to {top}");
}

#[test]
fn sweep_writes_files_only_when_asked_and_refuses_contradictions() {
    let small = SMALL_SWEEP;
    // --json prints JSON and writes nothing
    let dir = empty_dir("sweep-json");
    let out = copr_in(&dir, &[&small[..], &["--json"]].concat());
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "--json wrote a file"
    );
    // the table writes the chart it names
    let dir = empty_dir("sweep-text");
    let out = copr_in(&dir, &small);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let named = text
        .lines()
        .find_map(|l| l.strip_prefix("chart: "))
        .unwrap();
    assert!(dir.join(named).exists(), "{named}");
    // --no-svg writes nothing
    let dir = empty_dir("sweep-nosvg");
    assert!(copr_in(&dir, &[&small[..], &["--no-svg"]].concat())
        .status
        .success());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // contradictions and a non-SVG file name are refused, and nothing is written
    let dir = empty_dir("sweep-bad");
    for extra in [
        &["--no-svg", "--svg", "x.svg"][..],
        &["--svg", "out.png"],
        &["--json", "--svg", "chart"],
    ] {
        let out = copr_in(&dir, &[&small[..], extra].concat());
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    for cmd in [
        &["plan", "data/plans/paper-b5000.toml", "--svg"][..],
        &["topo", "data/cost/torus-3d.toml", "--svg"],
        &["map", "--grid", "2x2", "--flat", "4", "--svg"],
    ] {
        let png = tmp("v.png");
        let out = copr(&[cmd, &[png.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(".svg"));
        assert!(!png.exists());
    }
}

/// A plan file whose `side` layout has `field = value` (both sides valid otherwise).
fn plan_with(side: &str, field: &str, value: &str) -> String {
    let layout = |name: &str| {
        let mut l = format!("[{name}]\nkind = \"block-cyclic\"\nm = 10\nn = 10\n");
        for (f, v) in [("mb", "2"), ("nb", "2"), ("nprow", "1"), ("npcol", "2")] {
            let v = if name == side && f == field { value } else { v };
            l.push_str(&format!("{f} = {v}\n"));
        }
        l
    };
    format!(
        "op = \"identity\"\n{}\n{}",
        layout("source"),
        layout("target")
    )
}

/// The 1-based line of `side`'s `field` in a TOML plan written by [`plan_with`].
fn line_in(text: &str, side: &str, field: &str) -> usize {
    let header = text.lines().position(|l| l == format!("[{side}]")).unwrap();
    header
        + 1
        + text
            .lines()
            .skip(header)
            .position(|l| l.starts_with(&format!("{field} =")))
            .unwrap()
}

#[test]
fn layout_errors_name_the_side_and_the_field_line() {
    for side in ["source", "target"] {
        for (field, value, needle) in [
            ("mb", "0", "mb"),
            ("nb", "\"2\"", "nb"),
            ("npcol", "-1", "npcol"),
        ] {
            let text = plan_with(side, field, value);
            let path = tmp(&format!("side-{side}-{field}.toml"));
            std::fs::write(&path, &text).unwrap();
            let out = copr(&["plan", path.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            let line = line_in(&text, side, field);
            assert!(
                err.contains(&format!("line {line}: {side}:")),
                "{side}.{field}: {err}"
            );
            assert!(err.contains(needle), "{err}");
            // the same file as JSON names the side too
            let v: toml::Value = toml::from_str(&text).unwrap();
            let json = tmp(&format!("side-{side}-{field}.json"));
            std::fs::write(&json, serde_json::to_string_pretty(&v).unwrap()).unwrap();
            let out = copr(&["plan", json.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                err.contains(&format!(": {side}:")) && err.contains(needle),
                "{err}"
            );
            let json_text = std::fs::read_to_string(&json).unwrap();
            let lines: Vec<&str> = json_text.lines().collect();
            let open = lines
                .iter()
                .position(|l| l.contains(&format!("\"{side}\": {{")))
                .unwrap();
            let want = 1
                + open
                + lines[open..]
                    .iter()
                    .position(|l| l.contains(&format!("\"{field}\": ")))
                    .unwrap();
            assert!(err.contains(&format!("line {want}:")), "{err}");
        }
    }
}

#[test]
fn standard_input_format_flag_and_byte_order_marks() {
    let text = std::fs::read_to_string(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data/plans/paper-b5000.toml"),
    )
    .unwrap();
    let want = copr(&["plan", "data/plans/paper-b5000.toml", "--json"]).stdout;
    let with_stdin = |args: &[&str], input: &str| {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_copr"))
            .args(args)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let strip_time = |out: &[u8]| {
        let mut j: serde_json::Value = serde_json::from_slice(out).unwrap();
        j["solver_seconds"] = 0.into();
        j
    };
    // `-` reads TOML from standard input
    let out = with_stdin(&["plan", "-", "--json"], &text);
    assert_ok(&out);
    assert_eq!(strip_time(&out.stdout), strip_time(&want));
    // --format json: JSON from standard input and from a file of any name
    let v: toml::Value = toml::from_str(&text).unwrap();
    let json = serde_json::to_string(&v).unwrap();
    let out = with_stdin(&["plan", "-", "--format", "json", "--json"], &json);
    assert_ok(&out);
    assert_eq!(strip_time(&out.stdout), strip_time(&want));
    let odd = tmp("plan.txt");
    std::fs::write(&odd, &json).unwrap();
    let out = copr(&["plan", odd.to_str().unwrap(), "--format", "json", "--json"]);
    assert_eq!(strip_time(&out.stdout), strip_time(&want));
    // errors from standard input name it `-`
    let out = with_stdin(&["plan", "-"], "[source\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("copr: error: -: line 1"));
    // a UTF-8 byte order mark is skipped, in JSON and TOML plans, cost and topology
    // configs and machine files
    let bom = |name: &str, body: &str| {
        let p = tmp(name);
        std::fs::write(&p, format!("\u{feff}{body}")).unwrap();
        p
    };
    let p = bom("bom.json", &json);
    let out = copr(&["plan", p.to_str().unwrap(), "--json"]);
    assert_ok(&out);
    assert_eq!(strip_time(&out.stdout), strip_time(&want));
    let p = bom("bom.toml", &text);
    assert!(copr(&["plan", p.to_str().unwrap()]).status.success());
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let cfg = std::fs::read_to_string(dir.join("data/cost/calibrated.json")).unwrap();
    let cfg = cfg.replace("../topology/", &format!("{}/data/topology/", dir.display()));
    let p = bom("bom-cost.json", &cfg);
    let out = copr(&["topo", p.to_str().unwrap()]);
    assert_ok(&out);
    let m = std::fs::read_to_string(dir.join("data/machines/torus-4x4x4.toml")).unwrap();
    let p = bom("bom-machine.toml", &m);
    let out = copr(&["map", "--grid", "32x32", "--machine", p.to_str().unwrap()]);
    assert_ok(&out);
    let p = bom("bom-graph.json", "{\"edges\": [[0, 1, 8], [1, 0, 8]]}");
    let out = copr(&["map", "--graph", p.to_str().unwrap(), "--flat", "2"]);
    assert_ok(&out);
    // sweep --config - reads its config from standard input
    let sweep_cfg = std::fs::read_to_string(dir.join("data/sweep-paper.toml")).unwrap();
    let rows = |out: &[u8]| {
        let mut v: serde_json::Value = serde_json::from_slice(out).unwrap();
        for r in v.as_array_mut().unwrap() {
            r["seconds"] = 0.into();
        }
        v
    };
    let out = with_stdin(&["sweep", "--config", "-", "--json"], &sweep_cfg);
    assert_ok(&out);
    let file = copr(&["sweep", "--config", "data/sweep-paper.toml", "--json"]);
    assert_eq!(rows(&out.stdout), rows(&file.stdout));
    // topo reads standard input too
    let t = std::fs::read_to_string(dir.join("data/cost/two-islands.toml")).unwrap();
    let t = t.replace("../topology/", "data/topology/");
    let out = with_stdin(&["topo", "-"], &t);
    assert_ok(&out);
    let from_file = copr(&["topo", "data/cost/two-islands.toml"]).stdout;
    assert_eq!(out.stdout, from_file);
}

#[test]
fn plot_errors_say_it_once() {
    let bad = "/nonexistent-dir/x.svg";
    for cmd in [
        &["plan", "data/plans/paper-b5000.toml", "--svg", bad][..],
        &["topo", "data/cost/two-islands.toml", "--svg", bad],
        &["sweep", "--blocks", "10", "--svg", bad],
        &["map", "--grid", "2x2", "--flat", "4", "--svg", bad],
    ] {
        let out = copr(cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        assert!(err.contains(bad) && err.contains("No such file"), "{err}");
        // the OS's own "(os error 2)" aside
        let words: Vec<String> = err
            .split(" (os error")
            .next()
            .unwrap()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect();
        for w in &words {
            let n = words.iter().filter(|x| *x == w).count();
            let in_path = bad.contains(w.as_str());
            assert!(n == 1 || in_path, "`{w}` {n} times in {err}");
        }
    }
}

/// The number after `key ` in `line` (up to the next `,` or space).
fn number_after(line: &str, key: &str) -> f64 {
    let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
    let word = rest
        .split([',', ' '])
        .find(|w| !w.is_empty())
        .unwrap_or_else(|| panic!("a number after {key} in {line}"));
    word.parse()
        .unwrap_or_else(|e| panic!("{word} after {key}: {e}"))
}

#[test]
fn plan_cost_prints_its_certificate() {
    let plan_file = "data/plans/scalapack-32-to-128.toml";
    for cfg in ["data/cost/torus-3d.toml", "data/cost/two-islands.toml"] {
        let out = copr(&["plan", plan_file, "--cost", cfg]);
        assert_ok(&out);
        let text = String::from_utf8(out.stdout).unwrap();
        let line = |key: &str| {
            text.lines()
                .find(|l| l.starts_with(key))
                .unwrap_or_else(|| panic!("{cfg}: no {key} line in\n{text}"))
        };
        // the certificate and its continuation line
        let cert = text
            .lines()
            .skip_while(|l| !l.starts_with("certificate"))
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        let cert = cert.as_str();
        let (bound, saving, gap) = (
            number_after(cert, "bound on the saving"),
            number_after(cert, ", saving"),
            number_after(cert, ", gap"),
        );
        // the printed gap is bound − saving, and the saving is the report's own
        assert!(gap >= 0.0, "{cert}");
        assert!(
            (gap - (bound - saving).max(0.0)).abs() <= 1e-9 * bound.abs() + 1e-6 * gap,
            "{cert}"
        );
        let before = number_after(line("cost before"), "cost before");
        let after = number_after(line("cost after"), "cost after");
        assert!(
            (saving - (before - after)).abs() <= 1e-5 * before,
            "{cert}: saving vs {before} − {after}"
        );
        assert!(cert.contains(" candidate entries ("), "{cert}");
        // the JSON report carries the same certificate
        let out = copr(&["plan", plan_file, "--cost", cfg, "--json"]);
        assert_ok(&out);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let c = &j["cost"]["certificate"];
        assert_eq!(c["method"], "sparse", "{c}");
        let b = c["bound"].as_f64().unwrap();
        let g = c["gap"].as_f64().unwrap();
        assert!(g >= 0.0 && (b - bound).abs() <= 1e-9 * b.abs(), "{c}");
        if c["exact"].as_bool().unwrap() {
            assert!(cert.starts_with("certificate      exact:"), "{cert}");
        }
    }
    // the volume model is solved exactly on the received volumes
    let out = copr(&["plan", plan_file, "--cost", "data/cost/volume.toml"]);
    assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("certificate      exact (the sparse exact solve on")),
        "{text}"
    );
}

/// `copr map --pattern ALGORITHM`: the algorithm's own traffic (counted by hand), and
/// one-line errors for what does not apply.
#[test]
fn map_prices_a_grid_algorithms_own_traffic() {
    // Fox on 4x4, 1000-byte blocks: 4 broadcasts of 3 blocks in each of 4 rows, 3
    // rolls of 16 blocks; SUMMA on 2x4: each of 8 tasks roots one row broadcast (3
    // blocks) and one column broadcast (1 block)
    for (alg, grid, blocks) in [("fox", "4x4", 4 * 4 * 3 + 3 * 16), ("summa", "2x4", 8 * 4)] {
        let out = copr(&[
            "map",
            "--pattern",
            alg,
            "--grid",
            grid,
            "--bytes",
            "1000",
            "--flat",
            "4",
            "--ranks-per-node",
            "4",
            "--strategies",
            "packed",
            "--json",
        ]);
        assert_ok(&out);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let total = j["rows"][0]["metrics"]["total_bytes"].as_u64().unwrap();
        assert_eq!(total, blocks * 1000, "{alg}");
    }
    for (args, says) in [
        (&["--pattern", "cannon", "--grid", "2x4"][..], "square"),
        (&["--pattern", "fox", "--grid", "4x4x2"][..], "2-D"),
        (
            &["--pattern", "fox", "--grid", "4x4", "--bytes", "1,2"][..],
            "one value",
        ),
        (
            &["--pattern", "snyder", "--grid", "4x4", "--open"][..],
            "--open",
        ),
    ] {
        let mut a = vec!["map", "--flat", "4", "--ranks-per-node", "8"];
        a.extend_from_slice(args);
        let out = copr(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(says) && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

/// `--smpi-platform` on a fat tree: the ECMP platform (bundled equal-cost links) by
/// default and with `--smpi-routing ecmp`, one link per network edge with
/// `--smpi-routing single-path`; `ecmp` on a network without bundles is one line, exit 2.
/// The report's busiest link follows: ECMP, or one path with `single-path`.
#[test]
fn map_smpi_routing_chooses_the_fat_trees_platform() {
    let run = |routing: Option<&str>, machine: &str, tag: &str| {
        let pf = tmp(&format!("routing-{tag}.xml"));
        let pfs = pf.display().to_string();
        let mut args = vec![
            "map",
            "--grid",
            "16x16",
            "--machine",
            machine,
            "--strategies",
            "packed",
            "--smpi-platform",
            &pfs,
        ];
        if let Some(r) = routing {
            args.extend(["--smpi-routing", r]);
        }
        (copr(&args), pf)
    };
    let fat = "data/machines/fat-tree-k4.toml";
    let links = |x: &str| x.matches("<link id=\"").count();
    let model = |out: &std::process::Output| {
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let line = text.lines().find(|l| l.starts_with("maxlink  "));
        line.map(str::to_string).unwrap_or_else(|| panic!("{text}"))
    };
    let (out, pf) = run(None, fat, "auto");
    assert_ok(&out);
    assert!(model(&out).starts_with("maxlink  ECMP"), "{}", model(&out));
    let auto = std::fs::read_to_string(pf).unwrap();
    assert!(auto.contains("(ECMP bundles)") && auto.contains("copr_links"));
    // 16 host links each way, 8 edge switches' bundles each way, 4 pods' each way;
    // 16 loopbacks
    assert_eq!(links(&auto), 32 + 16 + 8 + 16, "{auto}");
    let (out, pf) = run(Some("ecmp"), fat, "ecmp");
    assert_ok(&out);
    assert_eq!(std::fs::read_to_string(pf).unwrap(), auto);
    let (out, pf) = run(Some("single-path"), fat, "single");
    assert_ok(&out);
    assert!(
        model(&out).starts_with("maxlink  single path"),
        "{}",
        model(&out)
    );
    let single = std::fs::read_to_string(pf).unwrap();
    assert!(!single.contains("ECMP"));
    // 16 host links, 16 edge-aggregation and 16 aggregation-core links, each way
    assert_eq!(links(&single), 2 * (16 + 16 + 16) + 16);
    let net = tmp("routing-uneven.net.toml");
    std::fs::write(
        &net,
        "hosts = [\"a\", \"b\", \"t\"]\nswitches = [\"s1\", \"s2\"]\n\
         [defaults]\nlatency = 1e-6\nbandwidth = 1e9\n\
         [[links]]\na = \"a\"\nb = \"s1\"\n[[links]]\na = \"a\"\nb = \"s2\"\n\
         [[links]]\na = \"s1\"\nb = \"t\"\n[[links]]\na = \"s2\"\nb = \"t\"\n\
         [[links]]\na = \"b\"\nb = \"s2\"\n",
    )
    .unwrap();
    let graph = tmp("routing-uneven.txt");
    std::fs::write(&graph, "0 2 1000\n1 2 1000\n").unwrap();
    let pf = tmp("routing-uneven.xml");
    let out = copr(&[
        "map",
        "--graph",
        &graph.display().to_string(),
        "--machine",
        &net.display().to_string(),
        "--strategies",
        "packed",
        "--smpi-platform",
        &pf.display().to_string(),
        "--smpi-routing",
        "ecmp",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ECMP form") && err.trim().lines().count() == 1,
        "{err}"
    );
}
