//! `copr calibrate` end to end (feature `mpi`; a test program without the libtest
//! harness).
//!
//! Run alone (`cargo test --features mpi --test calibrate_mpi`) it checks the bad
//! inputs: a budget of 0, negative or NaN, an unwritable output path, and a run on one
//! rank without mpirun each end in one line on stderr and exit status 2, leaving no
//! file behind. With `--mpirun` (as `scripts/mpi-tests.sh` runs it) it also runs
//!
//! - `mpirun -n 4 copr calibrate --emulate-nodes 2 --validate` and checks what it
//!   wrote: exactly the two classes of two emulated nodes, with the measured rank
//!   pairs worked out here from the grouping; a config that loads through
//!   `load_setup` (the loader of `copr plan --cost`) and prices packages with the
//!   written latency and bandwidth of each class; `copr plan --cost` accepting it; and
//!   a validation whose Spearman ρ, recomputed here from its predicted and measured
//!   times, reaches [`MIN_RHO`], with the swap cases all remote without relabeling,
//!   all local with it and predicted cheaper so;
//! - `mpirun -n 8 copr calibrate --emulate-nodes 4 --budget 6 --validate`: done within
//!   the budget plus a fixed slack by the tool's own clock, every one of the 6 node
//!   pairs measured, and the config's node × node matrix pricing each node pair's
//!   ranks with that pair's written link;
//! - `taskset -c 0 mpirun -n 4 copr calibrate --emulate-nodes 2 --budget 6`: four
//!   ranks on one core, measurements that are mostly noise.
//!
//! In every run the implausible-measurement warnings on stderr are exactly those the
//! written measurements call for, each printed once (not once per rank).

mod common;

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
    common::scratch(&format!("copr-calibrate-{tag}"))
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

/// Runs `mpirun -n RANKS copr calibrate ARGS` in a fresh directory; returns the
/// directory, the output and the raw measurements (`None` after a failure, recorded).
fn calibrate(
    ranks: usize,
    args: &[&str],
    tag: &str,
    errs: &mut Vec<String>,
) -> Option<(PathBuf, String, Value)> {
    calibrate_with(&["mpirun"], ranks, args, tag, errs)
}

/// [`calibrate`] started by `launcher` (`mpirun`, or `taskset -c 0 mpirun`); also
/// checks that the warnings on stderr are the ones [`expected_warnings`] finds in the
/// raw measurements, each printed once.
fn calibrate_with(
    launcher: &[&str],
    ranks: usize,
    args: &[&str],
    tag: &str,
    errs: &mut Vec<String>,
) -> Option<(PathBuf, String, Value)> {
    let dir = temp_dir(tag);
    let n = ranks.to_string();
    let out = Command::new(launcher[0])
        .args(&launcher[1..])
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "-n",
            &n,
            COPR,
            "calibrate",
            "--out",
            "cal.toml",
        ])
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("mpirun runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{stdout}");
    if !out.status.success() {
        errs.push(format!(
            "copr calibrate {args:?} on {ranks} ranks failed: {:?}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
        return None;
    }
    let raw: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("cal.raw.json")).expect("raw measurements written"),
    )
    .expect("raw measurements are JSON");
    let stderr = String::from_utf8_lossy(&out.stderr);
    warned_once(&raw, &stderr, tag, errs);
    Some((dir, stdout, raw))
}

/// The implausible-measurement warnings `copr calibrate` must print for the classes it
/// wrote (worked out here from the documented rule: a class inside a node more than
/// twice the other-node latency, a fit residual above 50 %), as line beginnings.
fn expected_warnings(raw: &Value) -> Vec<String> {
    let classes = raw["classes"].as_array().cloned().unwrap_or_default();
    let name = |c: &Value| c["class"].as_str().unwrap_or("?").to_string();
    let latency = |c: &Value| f(&c["latency"]["median"]);
    let mut out = Vec::new();
    if let Some(o) = classes.iter().find(|c| c["class"] == "other-node") {
        for c in classes.iter().filter(|c| c["class"] != "other-node") {
            if latency(c) > 2.0 * latency(o) {
                out.push(format!("copr: warning: {} latency ", name(c)));
            }
        }
    }
    for c in &classes {
        let worst = c["fit"]["residuals"]
            .as_array()
            .map(|r| r.iter().map(|x| f(x).abs()).fold(0.0, f64::max));
        if worst.is_some_and(|w| w > 0.5) {
            out.push(format!(
                "copr: warning: {}: the bandwidth fit misses ",
                name(c)
            ));
        }
    }
    out
}

/// Every expected warning once on stderr (rank 0 prints, the other ranks do not), and
/// no other warning.
fn warned_once(raw: &Value, stderr: &str, tag: &str, errs: &mut Vec<String>) {
    let expected = expected_warnings(raw);
    let printed: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("copr: warning: "))
        .collect();
    for w in &expected {
        let n = printed.iter().filter(|l| l.starts_with(w.as_str())).count();
        check(
            n == 1,
            &format!("{tag}: `{w}…` printed {n} times, expected once; stderr:\n{stderr}"),
            errs,
        );
    }
    check(
        printed.len() == expected.len(),
        &format!("{tag}: warnings {printed:?}, expected {expected:?}"),
        errs,
    );
    println!(
        "calibrate_mpi: {tag}: {} implausible-measurement warning(s), each printed once",
        expected.len()
    );
}

/// Four ranks squeezed onto one core (`taskset -c 0`): the ranks deschedule each other
/// and the measurements are noise, which is what the warnings are for; whichever
/// warnings the written measurements call for are printed, once each.
fn one_core_run(errs: &mut Vec<String>) {
    if let Some((dir, _, _)) = calibrate_with(
        &["taskset", "-c", "0", "mpirun"],
        4,
        &["--emulate-nodes", "2", "--budget", "6"],
        "one-core",
        errs,
    ) {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The least Spearman ρ the validation must reach on 4 ranks as 2 emulated nodes
/// (see benches/RESULTS.md, "copr calibrate --validate, second round").
const MIN_RHO: f64 = 0.8;

fn full_run(errs: &mut Vec<String>) {
    let Some((dir, stdout, raw)) = calibrate(
        4,
        &["--emulate-nodes", "2", "--budget", "20", "--validate"],
        "run",
        errs,
    ) else {
        return;
    };

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
    // what calibrate wrote is a machine every command takes: `copr map` maps onto its
    // two nodes of two slots, `copr topo` summarises it
    for args in [
        &["map", "--grid", "2x2", "--machine", "cal.toml", "--json"][..],
        &["topo", "cal.toml"][..],
    ] {
        let out = Command::new(COPR)
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("copr runs");
        let text = String::from_utf8_lossy(&out.stdout);
        check(
            out.status.success()
                && (args[0] == "topo" || text.contains("2 nodes, flat network, 2 ranks per node")),
            &format!(
                "copr {args:?} on what calibrate wrote: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            errs,
        );
    }
    // every intra pair (2 of them) and every cross pair (4) of this small machine
    let want_same: BTreeSet<_> = [(0, 1), (2, 3)].into_iter().collect();
    let want_other: BTreeSet<_> = [(0, 2), (0, 3), (1, 2), (1, 3)].into_iter().collect();
    check(same == want_same, &format!("intra pairs {same:?}"), errs);
    check(other == want_other, &format!("inter pairs {other:?}"), errs);

    // the config loads through copr plan --cost's loader and prices by class (the
    // one node pair's link is the other-node class's: both come from the same pairs)
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
            let link = &raw["config"]["node_links"][0];
            let (xl, xb) = (f(&link["latency"]), f(&link["bandwidth"]));
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
    validation(&raw["validation"], &stdout, errs);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The validation ran its cases and ranked them in the order they measured.
fn validation(v: &Value, stdout: &str, errs: &mut Vec<String>) {
    let runs = v["runs"].as_array().cloned().unwrap_or_default();
    check(
        runs.len() >= 20,
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
    // Spearman's ρ recomputed here from the printed pairs (average ranks for ties)
    let pred: Vec<f64> = runs.iter().map(|r| f(&r["predicted"])).collect();
    let meas: Vec<f64> = runs.iter().map(|r| f(&r["measured"])).collect();
    let rho = pearson(&ranks(&pred), &ranks(&meas));
    check(
        (rho - f(&v["spearman"])).abs() < 1e-9,
        &format!("Spearman: reported {}, recomputed {rho}", v["spearman"]),
        errs,
    );
    check(
        rho >= MIN_RHO,
        &format!("Spearman's rho {rho:.3} < {MIN_RHO}: the model does not rank the cases as they measure"),
        errs,
    );
    check(
        stdout.contains("rank correlation (Spearman) over"),
        "the validation table is printed",
        errs,
    );
    // the swap cases: all remote without relabeling, all local with the volume σ,
    // predicted cheaper; the swap across nodes crosses them, the one inside does not
    for (case, cross) in [
        ("slabs, swap inside nodes", 0.0),
        ("slabs, swap across nodes", 1.0),
    ] {
        let of = |s: &str| -> Vec<&Value> {
            runs.iter()
                .filter(|r| {
                    r["case"] == case
                        && r["sigma"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|x| x == s))
                })
                .collect()
        };
        let (none, vol) = (of("none"), of("volume"));
        check(
            none.len() == 3 && vol.len() == 3,
            &format!(
                "{case}: {} runs without and {} with relabeling, expected 3 sizes each",
                none.len(),
                vol.len()
            ),
            errs,
        );
        for (n, r) in none.iter().zip(&vol) {
            check(
                f(&n["local_fraction"]) == 0.0
                    && f(&n["cross_node_fraction"]) == cross
                    && f(&r["local_fraction"]) == 1.0,
                &format!("{case}: local and cross-node fractions {n} {r}"),
                errs,
            );
            check(
                f(&r["predicted"]) < f(&n["predicted"]),
                &format!("{case}: the all-local run is predicted cheaper than the all-remote one"),
                errs,
            );
        }
    }
}

/// Ranks 1..n of `xs`, ties sharing their average rank.
fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut r = vec![0.0; xs.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && xs[idx[j + 1]] == xs[idx[i]] {
            j += 1;
        }
        for &k in &idx[i..=j] {
            r[k] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    r
}

fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// 8 ranks as 4 emulated nodes under a small budget: every node pair measured and
/// written into the node × node matrix the config loads, and the run (validation
/// included) done within the budget plus a fixed slack, in CPU seconds: every rank runs
/// under `ulimit -t` ([`CPU_CAP`]) and is killed past it (the run then fails). The
/// tool's own wall clock is not held to it: a loaded machine stretches the wall time of
/// its fixed work without bound, not the CPU time a rank spends (the other processes
/// take the cores from it while it waits). 8 ranks share the 2 cores, so a run whose
/// phases went on past their deadlines for about 4 × the cap of wall time on an idle
/// machine is killed.
fn small_budget_run(errs: &mut Vec<String>) {
    const BUDGET: f64 = 6.0;
    /// CPU seconds each process of the run may spend: the budget plus 3 s.
    const CPU_CAP: u32 = 9;
    let b = BUDGET.to_string();
    let capped = format!("ulimit -t {CPU_CAP}; exec mpirun \"$@\"");
    let Some((dir, _, raw)) = calibrate_with(
        &["sh", "-c", &capped, "sh"],
        8,
        &["--emulate-nodes", "4", "--budget", &b, "--validate"],
        "nodes",
        errs,
    ) else {
        errs.push(format!(
            "calibrate --budget {BUDGET} under `ulimit -t {CPU_CAP}` did not end well (a rank \
             killed for CPU time is reported above)"
        ));
        return;
    };
    // the wall time, for the log only (see above)
    println!(
        "calibrate --budget {BUDGET}: {:.1} s by the tool's clock",
        f(&raw["seconds"])
    );
    let text = std::fs::read_to_string(dir.join("cal.toml")).unwrap_or_default();
    check(
        text.contains("kind = \"matrix\"") && text.contains("cal.nodes.toml"),
        "the config prices node pairs with the node matrix",
        errs,
    );
    let links = raw["config"]["node_links"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut measured: BTreeSet<(String, String)> = BTreeSet::new();
    match copr_cost_models::load_setup(&dir.join("cal.toml"), Some(8)) {
        Err(e) => errs.push(format!("the 8-rank config does not load: {e}")),
        Ok(setup) => {
            // emulated node g holds ranks 2g and 2g+1
            let node = |name: &str| -> usize {
                name.trim_start_matches("emulated-").parse().unwrap_or(99)
            };
            for l in &links {
                let (x, y) = (
                    node(l["nodes"][0].as_str().unwrap_or("")),
                    node(l["nodes"][1].as_str().unwrap_or("")),
                );
                measured.insert((x.min(y).to_string(), x.max(y).to_string()));
                let want = f(&l["latency"]) + (1u64 << 20) as f64 / f(&l["bandwidth"]);
                for (from, to) in [(2 * x, 2 * y + 1), (2 * y, 2 * x)] {
                    let got = setup.model.cost(from, to, &Package::plain(1 << 20));
                    check(
                        (got - want).abs() <= 1e-9 * want && want > 0.0,
                        &format!("cost({from}, {to}, 1 MiB) = {got}, node link {l} gives {want}"),
                        errs,
                    );
                }
            }
        }
    }
    check(
        measured.len() == 6,
        &format!("node pairs with their own link: {measured:?}, expected all 6"),
        errs,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let mut errs = Vec::new();
    bad_inputs(&mut errs);
    if std::env::args().any(|a| a == "--mpirun") {
        full_run(&mut errs);
        small_budget_run(&mut errs);
        one_core_run(&mut errs);
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
