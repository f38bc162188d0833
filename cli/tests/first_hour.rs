//! What a new user meets first: host names in the exports, the comparison with the
//! launcher's default, line widths, units, byte sizes with units.

mod common;

use common::{copr, ok};

use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    common::tmp("copr-first-hour", name)
}

#[test]
fn a_torus_without_names_exports_node_names_and_says_so() {
    let (rf, sh) = (tmp("rankfile"), tmp("hosts"));
    let (rfs, shs) = (rf.to_str().unwrap(), sh.to_str().unwrap());
    let run = |extra: &[&str]| {
        let mut args = vec![
            "map",
            "--grid",
            "2x4",
            "--torus",
            "2x2x2",
            "--rankfile",
            rfs,
            "--slurm-hostfile",
            shs,
        ];
        args.extend_from_slice(extra);
        ok(&copr(&args))
    };
    let (_, err) = run(&[]);
    assert!(
        err.contains("warning") && err.contains("--nodes"),
        "no warning: {err}"
    );
    let hosts = std::fs::read_to_string(&sh).unwrap();
    let rankfile = std::fs::read_to_string(&rf).unwrap();
    for h in hosts.lines() {
        assert!(h.starts_with("node"), "host `{h}` in\n{hosts}");
    }
    for l in rankfile.lines().filter(|l| l.starts_with("rank")) {
        let host = l.split('=').nth(1).unwrap().split(' ').next().unwrap();
        assert!(host.starts_with("node"), "{l}");
    }
    // named hosts: no warning, and the names are used
    let (_, err) = run(&["--nodes", "nid[00010-00017]"]);
    assert!(!err.contains("warning"), "{err}");
    assert!(std::fs::read_to_string(&sh).unwrap().contains("nid0001"));
    let _ = std::fs::remove_file(&rf);
    let _ = std::fs::remove_file(&sh);
}

#[test]
fn map_says_how_much_better_than_the_default_in_lines_of_at_most_100() {
    let args = [
        "map",
        "--grid",
        "32x32",
        "--machine",
        "data/machines/torus-4x4x4.toml",
    ];
    let (text, _) = ok(&copr(&args));
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "{} chars: {l}", l.chars().count());
    }
    // the factors, from the JSON rows
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let (j, _) = ok(&copr(&json_args));
    let j: serde_json::Value = serde_json::from_str(&j).unwrap();
    let row = |name: &str| {
        j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["strategy"] == name)
            .unwrap_or_else(|| panic!("no row {name}"))
            .clone()
    };
    let (packed, chosen) = (row("packed"), row("optimised"));
    let num = |r: &serde_json::Value, k: &str| r["metrics"][k].as_f64().unwrap();
    let hb = num(&packed, "hop_bytes") / num(&chosen, "hop_bytes");
    let link = num(&packed, "max_link_bytes") / num(&chosen, "max_link_bytes");
    let at = text
        .find("against the default (packed -> optimised):")
        .unwrap_or_else(|| panic!("no comparison with the default:\n{text}"));
    let tail = &text[at..];
    assert!(tail.contains(&format!("({hb:.2}x less)")), "{hb}\n{tail}");
    assert!(
        tail.contains(&format!("({link:.2}x less)")),
        "{link}\n{tail}"
    );
}

#[test]
fn plan_lines_stay_within_100_characters() {
    // 100 ranks: sigma alone is over 300 characters
    let (text, _) = ok(&copr(&[
        "plan",
        "data/plans/paper-b7500.toml",
        "--cost",
        "data/cost/torus-3d-spread.toml",
    ]));
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "{} chars: {l}", l.chars().count());
    }
    let sigma = text.lines().find(|l| l.starts_with("sigma")).unwrap();
    assert!(sigma.contains("more; --json prints all]"), "{sigma}");
}

#[test]
fn modelled_costs_carry_their_unit() {
    let (text, _) = ok(&copr(&[
        "plan",
        "data/plans/paper-b7500.toml",
        "--cost",
        "data/cost/torus-3d-spread.toml",
    ]));
    let line = |k: &str| text.lines().find(|l| l.starts_with(k)).unwrap().to_string();
    let before = line("cost before");
    let after = line("cost after");
    let unit = |l: &str| l.split_whitespace().nth(3).map(str::to_string);
    assert_eq!(unit(&before).as_deref(), Some("s"), "{before}");
    assert_eq!(unit(&after).as_deref(), Some("s"), "{after}");
    // a volume model prices bytes
    let (text, _) = ok(&copr(&[
        "plan",
        "data/plans/paper-b5000.toml",
        "--cost",
        "data/cost/volume.toml",
    ]));
    let before = text.lines().find(|l| l.starts_with("cost before")).unwrap();
    assert_eq!(before.split_whitespace().nth(3), Some("B"), "{before}");
}

#[test]
fn byte_sizes_take_units() {
    let run = |bytes: &str| {
        ok(&copr(&[
            "map",
            "--grid",
            "4x4",
            "--flat",
            "4",
            "--ranks-per-node",
            "4",
            "--bytes",
            bytes,
            "--json",
        ]))
        .0
    };
    let plain: serde_json::Value = serde_json::from_str(&run("1048576")).unwrap();
    let unit: serde_json::Value = serde_json::from_str(&run("1MiB")).unwrap();
    assert_eq!(plain["rows"][0]["metrics"], unit["rows"][0]["metrics"]);
    let out = copr(&["map", "--grid", "4x4", "--flat", "4", "--bytes", "1.5MiB"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1.5MiB") && err.contains("MiB"), "{err}");
}

/// One error style: `copr: error: ` and the message, no category word, one line,
/// exit status 2; a TOML error names the file and the line.
#[test]
fn errors_share_one_style() {
    let fails = |args: &[&str]| {
        let out = copr(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            !err.contains("mismatch:") && !err.contains("Usage:"),
            "{err}"
        );
        err
    };
    let err = fails(&["completions", "tcsh"]);
    assert!(
        err.starts_with("copr: error: completions: unknown shell `tcsh`"),
        "{err}"
    );
    let err = fails(&["map", "--grid", "2x2", "--flat", "1", "--budget", "-1"]);
    assert!(err.starts_with("copr: error: --budget -1"), "{err}");
    let bad = tmp("machine.toml");
    std::fs::write(&bad, "ranks_per_node = 4\n[flat\nnodes = 2\n").unwrap();
    let err = fails(&["map", "--grid", "2x2", "--machine", bad.to_str().unwrap()]);
    // machine files report as every topology file does: `FILE:LINE: field …`
    assert!(
        err.contains("machine.toml:2: ") && !err.contains(" | "),
        "{err}"
    );
    let _ = std::fs::remove_file(&bad);
}

/// A calibrated config places the ranks it ran on; pricing a plan of more ranks says
/// what to do instead.
#[test]
fn a_small_calibration_on_a_large_plan_says_what_to_do() {
    let dir = tmp("calibrated");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("machine.placement"), "0 a\n1 a\n2 b\n3 b\n").unwrap();
    std::fs::write(
        dir.join("machine.toml"),
        "[[terms]]\nmodel = \"latency-bandwidth\"\n\
         [topology.intra]\nkind = \"uniform\"\nlatency = 4.0e-7\nbandwidth = 1.0e10\n\
         [topology.inter]\nkind = \"uniform\"\nlatency = 2.0e-6\nbandwidth = 5.0e9\n\
         [topology.placement]\nrule = \"file\"\nfile = \"machine.placement\"\n",
    )
    .unwrap();
    let cfg = dir.join("machine.toml");
    let out = copr(&[
        "plan",
        "data/plans/paper-b5000.toml",
        "--cost",
        cfg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("places 4")
            && err.contains("rule = \"packed\"")
            && err.contains("calibrate on 100 ranks"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
