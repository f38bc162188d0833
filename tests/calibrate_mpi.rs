//! `copr calibrate` end to end (feature `mpi`; a test program without the libtest
//! harness).
//!
//! Run alone (`cargo test --features mpi --test calibrate_mpi`) it checks the bad
//! inputs: a budget of 0, negative or NaN, an unwritable output path, and a run on one
//! rank without mpirun each end in one line on stderr and exit status 2, leaving no
//! file behind. With `--mpirun` (as `scripts/mpi-tests.sh` runs it) it also runs
//! `mpirun -n 4 copr calibrate --emulate-nodes 2 --validate` and checks what it wrote:
//! exactly the two classes of two emulated nodes, with the measured rank pairs worked
//! out here from the grouping; a config that loads through `load_setup` (the loader of
//! `copr plan --cost`) and prices packages with the written latency and bandwidth of
//! each class; `copr plan --cost` accepting it; and a validation that ran every case
//! and ranked them (Spearman's ρ defined, every time positive, the all-local run of
//! the shifted case predicted cheaper than its all-remote run).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use copr_cost_models::Package;
use serde_json::Value;

const COPR: &str = env!("CARGO_BIN_EXE_copr");

fn check(ok: bool, what: &str, errs: &mut Vec<String>) {
    if !ok {
        errs.push(what.to_string());
    }
}

/// Runs copr alone; expects exit 2 and exactly one `copr: error:` line.
fn bad_input(args: &[&str], dir: &Path, errs: &mut Vec<String>) {
    let out = Command::new(COPR)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("copr runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    check(
        out.status.code() == Some(2),
        &format!("{args:?}: exit {:?}, expected 2", out.status.code()),
        errs,
    );
    check(
        lines.len() == 1 && lines[0].starts_with("copr: error: "),
        &format!("{args:?}: expected one error line, got {stderr:?}"),
        errs,
    );
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("copr-calibrate-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temporary directory");
    d
}

fn bad_inputs(errs: &mut Vec<String>) {
    let dir = temp_dir("bad");
    for b in ["0", "-1", "nan", "inf"] {
        bad_input(&["calibrate", "--budget", b], &dir, errs);
    }
    bad_input(
        &["calibrate", "--out", "/nonexistent-copr-dir/cal.toml"],
        &dir,
        errs,
    );
    bad_input(&["calibrate", "--emulate-nodes", "0"], &dir, errs);
    // one rank, started without mpirun
    bad_input(&["calibrate", "--out", "one.toml"], &dir, errs);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("readable")
        .map(|e| e.expect("entry").file_name())
        .collect();
    check(
        left.is_empty(),
        &format!("failed runs left files behind: {left:?}"),
        errs,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn full_run(errs: &mut Vec<String>) {
    let dir = temp_dir("run");
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-n",
            "4",
            COPR,
            "calibrate",
            "--emulate-nodes",
            "2",
            "--budget",
            "10",
            "--out",
            "cal.toml",
            "--validate",
        ])
        .current_dir(&dir)
        .output()
        .expect("mpirun runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    if !out.status.success() {
        errs.push(format!(
            "copr calibrate under mpirun failed: {:?}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
        return;
    }
    let raw: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("cal.raw.json")).expect("raw measurements written"),
    )
    .expect("raw measurements are JSON");

    // classes: emulated node g holds ranks 2g, 2g+1
    let group = |r: u64| r / 2;
    let classes: Vec<&str> = raw["classes"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["class"].as_str()).collect())
        .unwrap_or_default();
    check(
        classes == ["same-node", "other-node"],
        &format!("classes {classes:?}, expected same-node and other-node"),
        errs,
    );
    let mut same = BTreeSet::new();
    let mut other = BTreeSet::new();
    for pr in raw["pairs"].as_array().into_iter().flatten() {
        let (a, b) = (
            pr["ranks"][0].as_u64().unwrap_or(99),
            pr["ranks"][1].as_u64().unwrap_or(99),
        );
        let key = (a.min(b), a.max(b));
        match pr["class"].as_str() {
            Some("same-node") => {
                check(
                    group(a) == group(b),
                    &format!("{key:?} is not intra-node"),
                    errs,
                );
                same.insert(key);
            }
            Some("other-node") => {
                check(
                    group(a) != group(b),
                    &format!("{key:?} is not inter-node"),
                    errs,
                );
                other.insert(key);
            }
            c => errs.push(format!("pair {key:?} has class {c:?}")),
        }
        let lat = f(&pr["latency"]["median"]);
        check(
            lat > 0.0 && lat < 1.0,
            &format!("pair {key:?}: latency {lat}"),
            errs,
        );
    }
    // every intra pair (2 of them) and every cross pair (4) of this small machine
    let want_same: BTreeSet<_> = [(0, 1), (2, 3)].into_iter().collect();
    let want_other: BTreeSet<_> = [(0, 2), (0, 3), (1, 2), (1, 3)].into_iter().collect();
    check(same == want_same, &format!("intra pairs {same:?}"), errs);
    check(other == want_other, &format!("inter pairs {other:?}"), errs);

    // the config loads through copr plan --cost's loader and prices by class
    let cfg = dir.join("cal.toml");
    match copr_cost_models::load_setup(&cfg, Some(4)) {
        Err(e) => errs.push(format!("written config does not load: {e}")),
        Ok(setup) => {
            let m = setup.machine.expect("the config has a topology");
            check(
                m.placement().num_nodes() == 2 && m.same_node(0, 1) && !m.same_node(1, 2),
                "machine: two nodes of ranks {0,1} and {2,3}",
                errs,
            );
            let (il, ib) = (
                f(&raw["config"]["intra"][0][1]),
                f(&raw["config"]["intra"][0][2]),
            );
            let (xl, xb) = (f(&raw["config"]["inter"][0]), f(&raw["config"]["inter"][1]));
            for (from, to, l, b) in [
                (0, 1, il, ib),
                (3, 2, il, ib),
                (1, 2, xl, xb),
                (0, 3, xl, xb),
            ] {
                let got = setup.model.cost(from, to, &Package::plain(1 << 20));
                let want = l + (1u64 << 20) as f64 * (1.0 / b);
                check(
                    (got - want).abs() <= 1e-9 * want && want > 0.0,
                    &format!("cost({from}, {to}, 1 MiB) = {got}, written values give {want}"),
                    errs,
                );
            }
            check(
                setup.model.cost(2, 2, &Package::plain(1 << 20)) == 0.0,
                "a plain package to itself costs nothing",
                errs,
            );
        }
    }
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "op = \"transpose\"\nelement_size = 8\n\
         [source]\nkind = \"block-cyclic\"\nm = 400\nn = 400\nmb = 32\nnb = 32\nnprow = 2\nnpcol = 2\n\
         [target]\nkind = \"block-cyclic\"\nm = 400\nn = 400\nmb = 100\nnb = 100\nnprow = 2\nnpcol = 2\ngrid_order = \"col-major\"\n",
    )
    .expect("plan written");
    let p = Command::new(COPR)
        .args(["plan", "plan.toml", "--cost", "cal.toml", "--json"])
        .current_dir(&dir)
        .output()
        .expect("copr plan runs");
    let pj: Value = serde_json::from_slice(&p.stdout).unwrap_or(Value::Null);
    check(
        p.status.success() && f(&pj["cost"]["cost_before"]) > 0.0,
        &format!(
            "copr plan --cost cal.toml: {:?} {}",
            p.status.code(),
            String::from_utf8_lossy(&p.stderr)
        ),
        errs,
    );

    // the validation ran and ranked its cases
    let v = &raw["validation"];
    let runs = v["runs"].as_array().cloned().unwrap_or_default();
    check(
        runs.len() >= 8,
        &format!("{} validation runs", runs.len()),
        errs,
    );
    for r in &runs {
        let (pr, me) = (f(&r["predicted"]), f(&r["measured"]));
        check(
            pr > 0.0 && me > 0.0 && pr.is_finite() && me.is_finite(),
            &format!("run {r}: predicted {pr}, measured {me}"),
            errs,
        );
    }
    let rho = f(&v["spearman"]);
    check(
        (-1.0..=1.0).contains(&rho),
        &format!("Spearman {rho}"),
        errs,
    );
    check(
        stdout.contains("rank correlation (Spearman) over"),
        "the validation table is printed",
        errs,
    );
    let shifted: Vec<&Value> = runs
        .iter()
        .filter(|r| {
            r["case"]
                .as_str()
                .is_some_and(|c| c.ends_with("shifted by one"))
        })
        .collect();
    let by = |s: &str| shifted.iter().find(|r| r["sigma"] == s);
    match (by("none"), by("volume")) {
        (Some(none), Some(vol)) => {
            check(
                f(&none["local_fraction"]) == 0.0 && f(&vol["local_fraction"]) == 1.0,
                "shifted case: nothing local without relabeling, everything with it",
                errs,
            );
            check(
                f(&vol["predicted"]) < f(&none["predicted"]),
                "the all-local run is predicted cheaper than the all-remote one",
                errs,
            );
        }
        _ => errs.push("shifted case: runs without and with relabeling missing".into()),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let mut errs = Vec::new();
    bad_inputs(&mut errs);
    if std::env::args().any(|a| a == "--mpirun") {
        full_run(&mut errs);
    }
    if errs.is_empty() {
        println!("calibrate_mpi: all checks passed");
    } else {
        for e in &errs {
            eprintln!("calibrate_mpi: FAILED: {e}");
        }
        std::process::exit(1);
    }
}
