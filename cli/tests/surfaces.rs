//! The surfaces added after the first hardening round — batch plans, `copr map`,
//! machine files, large placements — held to the same promise: a correct answer or one
//! `copr: error:` line with exit 2; never a hang, an abort, a non-finite number printed,
//! or memory that follows a number in a file.
//!
//! Every run is under `ulimit -v` ([`MEMORY_KB`], 4 GiB) and `timeout` ([`SECONDS`]), so
//! an input that allocates gigabytes or runs on fails its test instead of slowing the
//! machine. `COPR_TEST_BIN=/path/to/copr` runs them against another build.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::refused;

/// Address-space cap of every run: 4 GiB.
const MEMORY_KB: u64 = 4 << 20;
/// Wall-time cap of every run, seconds: a guard against runs that do not end, not a
/// speed target (a loaded 2-core machine took 40 s for the largest input here).
const SECONDS: u32 = 120;

fn copr(args: &[&str]) -> Output {
    common::capped(args, common::root(), MEMORY_KB, Some(SECONDS))
}

fn dir() -> PathBuf {
    common::scratch("copr-surfaces")
}

fn write(name: &str, text: &str) -> PathBuf {
    common::write(&dir(), name, text)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn answered(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Every number in a JSON value, and whether a null stands where a number was.
fn numbers(v: &serde_json::Value, out: &mut Vec<f64>, nulls: &mut usize) {
    match v {
        serde_json::Value::Number(n) => out.push(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::Null => *nulls += 1,
        serde_json::Value::Array(a) => a.iter().for_each(|x| numbers(x, out, nulls)),
        serde_json::Value::Object(o) => o.values().for_each(|x| numbers(x, out, nulls)),
        _ => {}
    }
}

fn bc(m: usize, n: usize, mb: usize, nb: usize, p: usize, q: usize, order: &str) -> String {
    format!(
        "kind = \"block-cyclic\"\nm = {m}\nn = {n}\nmb = {mb}\nnb = {nb}\nnprow = {p}\nnpcol = {q}\ngrid_order = \"{order}\"\n"
    )
}

fn batch(copies: usize, source: &str, target: &str) -> String {
    let mut t = String::new();
    for _ in 0..copies {
        t.push_str(&format!(
            "[[transform]]\n[transform.source]\n{source}[transform.target]\n{target}"
        ));
    }
    t
}

// 1. Batch plans: memory follows the distinct transforms and pairs, not the copies.
#[test]
fn batch_of_copies_holds_one_transform() {
    let source = bc(4096, 4096, 1, 1, 64, 64, "row-major");
    let target = bc(4096, 4096, 64, 64, 64, 64, "col-major");
    let one = copr(&[
        "plan",
        s(&write("one.toml", &batch(1, &source, &target))),
        "--json",
    ]);
    let one: serde_json::Value = serde_json::from_str(&answered(&one)).unwrap();
    let p = write("copies.toml", &batch(20, &source, &target));
    let out = copr(&["plan", s(&p), "--json"]);
    let j: serde_json::Value = serde_json::from_str(&answered(&out)).unwrap();
    // twenty copies of one transform: twenty times its volumes, one joint σ equal to
    // its own (the copies agree)
    assert_eq!(j["transforms"].as_array().unwrap().len(), 20);
    for key in [
        "total_elements",
        "remote_none",
        "remote_independent",
        "remote_joint",
    ] {
        assert_eq!(
            j[key].as_u64().unwrap(),
            20 * one[key].as_u64().unwrap(),
            "{key}"
        );
    }
    assert_eq!(j["price_of_consistency"], 0);
}

#[test]
fn batch_of_copies_under_a_cost_model_holds_one_transform() {
    // every one of 1024 ranks sends every other: 16 copies priced under a model take
    // what one takes (one copy's packages, counted 16 times), well inside 1 GiB
    let source = bc(2048, 2048, 1, 1, 32, 32, "row-major");
    let target = bc(2048, 2048, 64, 64, 32, 32, "col-major");
    let cost = ["--cost", "data/cost/volume.toml", "--json"];
    let run = |name: &str, copies: usize| -> serde_json::Value {
        let p = write(name, &batch(copies, &source, &target));
        let mut args = vec!["plan", s(&p)];
        args.extend(cost);
        let out = common::capped(&args, common::root(), 1 << 20, Some(SECONDS));
        serde_json::from_str(&answered(&out)).unwrap()
    };
    let one = run("cost-one.toml", 1);
    let copies = run("cost-copies.toml", 16);
    for key in ["none", "independent", "joint", "joint_with_volume_sigma"] {
        let (a, b) = (
            one["cost"][key].as_f64().unwrap(),
            copies["cost"][key].as_f64().unwrap(),
        );
        assert!(
            (b - 16.0 * a).abs() <= 1e-9 * b.abs(),
            "{key}: {b} against 16 x {a}"
        );
    }
    assert_eq!(one["cost"]["joint_sigma"], copies["cost"]["joint_sigma"]);
}

#[test]
fn batch_to_a_far_rank_stays_small() {
    // one element from rank 0 to rank 2^20 - 1, four times: memory follows the one
    // (source, target) pair and the ranks' σ, not four copies of everything
    let source = "kind = \"grid\"\nrow_splits = [0, 1]\ncol_splits = [0, 1]\nowners = [[0]]\n";
    let target =
        "kind = \"grid\"\nrow_splits = [0, 1]\ncol_splits = [0, 1]\nowners = [[1048575]]\n";
    let p = write("far.toml", &batch(4, source, target));
    let out = copr(&["plan", s(&p), "--json"]);
    let j: serde_json::Value = serde_json::from_str(&answered(&out)).unwrap();
    assert_eq!(j["ranks"], 1 << 20);
    assert_eq!(j["remote_none"], 4);
    assert_eq!(j["remote_joint"], 0);
    assert_eq!(j["joint_sigma"][1_048_575], 0);
}

// 3. --budget bounds every strategy.
#[test]
fn budget_bounds_every_strategy() {
    let m = write(
        "torus-3-8.toml",
        "ranks_per_node = 1\n[torus]\ndims = [3, 3, 3, 3, 3, 3, 3, 3]\n",
    );
    // at most 15 s of CPU (`ulimit -t`: killed past it), not of wall clock: a loaded
    // machine stretches the wall time, never the CPU time a 1 s budget spends (two
    // threads, about 2 s); unbounded strategies take minutes
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_KB}; ulimit -t 15; exec \"$0\" \"$@\""
        ))
        .arg(common::bin())
        .args([
            "map",
            "--grid",
            "81x81",
            "--machine",
            s(&m),
            "--budget",
            "1",
            "--json",
        ])
        .current_dir(common::root())
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_str(&answered(&out)).unwrap();
    assert!(!j["rows"].as_array().unwrap().is_empty());
}

// 4. `copr topo` on large placements.
#[test]
fn topo_sums_large_placements_by_node_occupancy() {
    let f = write(
        "big-placement.toml",
        "[intra]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = 1e10\n[inter]\nkind = \"uniform\"\nlatency = 2e-6\nbandwidth = 1e9\n[placement]\nrule = \"packed\"\nranks = 16777216\nranks_per_node = 4096\n",
    );
    let out = copr(&["topo", s(&f), "--json"]);
    let j: serde_json::Value = serde_json::from_str(&answered(&out)).unwrap();
    assert_eq!(j["ranks"], 16_777_216);
    // pairs: 2^24 (2^24 - 1) ordered pairs of distinct ranks
    let pairs: u64 = j["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["pairs"].as_u64().unwrap())
        .sum();
    assert_eq!(pairs, (1u64 << 24) * ((1u64 << 24) - 1));
}

// 5. Every number printed is finite, or the input is refused.
#[test]
fn tiny_bandwidths_and_huge_latencies_are_refused() {
    refused(
        &copr(&[
            "map",
            "--grid",
            "4x4",
            "--torus",
            "4x4",
            "--link-bandwidth",
            "5e-324,5e-324",
        ]),
        &["5e-324", "bandwidth"],
    );
    let f = write(
        "huge-latency.toml",
        "[intra]\nkind = \"uniform\"\nlatency = 1e308\nbandwidth = 1e10\n[placement]\nrule = \"packed\"\nranks = 4\nranks_per_node = 4\n",
    );
    refused(&copr(&["topo", s(&f)]), &["1e308", "latency"]);
}

#[test]
fn printed_numbers_are_finite() {
    let out = copr(&[
        "map",
        "--grid",
        "4x4",
        "--torus",
        "4x4",
        "--link-bandwidth",
        "1e-9,1e30",
        "--json",
    ]);
    let j: serde_json::Value = serde_json::from_str(&answered(&out)).unwrap();
    let (mut all, mut nulls) = (Vec::new(), 0);
    numbers(&j, &mut all, &mut nulls);
    assert_eq!(nulls, 0, "{j}");
    assert!(all.iter().all(|x| x.is_finite()), "{j}");
}

// 6. SimGrid XML carries no control characters.
#[test]
fn control_characters_in_machine_text_stay_out_of_the_xml() {
    let m = write(
        "ctl.toml",
        "description = \"b\\u001b[31m\\u0001\"\nranks_per_node = 1\nnodes = [\"a\\u0001\", \"b\\u001b[31m\", \"c\", \"d\"]\n[torus]\ndims = [4]\n",
    );
    let xml = dir().join("ctl.xml");
    let out = copr(&[
        "map",
        "--grid",
        "4",
        "--machine",
        s(&m),
        "--smpi-platform",
        s(&xml),
    ]);
    if out.status.success() {
        let text = std::fs::read_to_string(&xml).unwrap();
        let bad: Vec<char> = text
            .chars()
            .filter(|&c| c.is_control() && c != '\n')
            .collect();
        assert!(bad.is_empty(), "{bad:?} in {text}");
    } else {
        refused(&out, &[]);
    }
}

// 7. One line whatever the user's text holds; 9. capped length.
#[test]
fn newlines_in_user_text_stay_on_one_line() {
    let plan = write("newline-key.json", "{\"a\\nb\": 1}");
    let err = refused(&copr(&["plan", s(&plan)]), &[]);
    assert!(err.contains("a\\nb"), "{err}");
    let cost = write("newline-model.toml", "[[terms]]\nmodel = \"a\\nb\"\n");
    let plan = Path::new("data/plans/submatrix.toml");
    refused(&copr(&["plan", s(plan), "--cost", s(&cost)]), &[]);
}

#[test]
fn deeply_nested_input_gives_a_short_line() {
    let deep = format!("a = {}1{}\n", "[".repeat(20_000), "]".repeat(20_000));
    let f = write("deep.toml", &deep);
    let err = refused(&copr(&["plan", s(&f)]), &[]);
    assert!(err.len() < 1200, "{} characters", err.len());
    // a machine file's parser quotes the whole value it did not expect
    let f = write(
        "deep-machine.toml",
        &format!(
            "ranks_per_node = 1\n[torus]\ndims = {}1{}\n",
            "[".repeat(20_000),
            "]".repeat(20_000)
        ),
    );
    let err = refused(&copr(&["map", "--grid", "4", "--machine", s(&f)]), &[]);
    assert!(err.len() < 1200, "{} characters", err.len());
    let f = write(
        "deep.json",
        &format!("{}1{}", "[".repeat(20_000), "]".repeat(20_000)),
    );
    let err = refused(&copr(&["topo", s(&f)]), &[]);
    assert!(err.len() < 1200, "{} characters", err.len());
}

// 8. Options that need --grid or --torus are refused without them, in one line.
#[test]
fn grid_and_torus_options_need_their_flag() {
    let coords = Path::new("data/topology/torus-4x4x4.coords");
    let grid: &[&str] = &["--grid", "4x4", "--flat", "16"];
    let graph: &[&str] = &["--graph", "data/graphs/halo-4x8.txt", "--flat", "32"];
    let cases: [(&[&str], &[&str], &str); 4] = [
        (grid, &["--alloc", s(coords)], "--torus"),
        (grid, &["--link-bandwidth", "1e9"], "--torus"),
        (graph, &["--open"], "--grid"),
        (graph, &["--bytes", "8"], "--grid"),
    ];
    for (pattern, extra, needed) in cases {
        let args: Vec<&str> = ["map"]
            .iter()
            .chain(pattern)
            .chain(extra)
            .copied()
            .collect();
        refused(&copr(&args), &[extra[0], needed]);
    }
}

// 9. Machine-file value errors name the file; an overflowing integer in a batch is
// named as such.
#[test]
fn machine_value_errors_name_the_file() {
    let m = write(
        "zero-dim.toml",
        "ranks_per_node = 1\n[torus]\ndims = [0, 4]\n",
    );
    refused(
        &copr(&["map", "--grid", "4", "--machine", s(&m)]),
        &["zero-dim.toml", "dims"],
    );
}

#[test]
fn batch_with_an_overflowing_integer_says_so() {
    let source = bc(8, 8, 4, 4, 2, 2, "row-major");
    let target = bc(8, 8, 4, 4, 2, 2, "col-major").replace("m = 8\n", "m = 99999999999999999999\n");
    let f = write("overflow.toml", &batch(2, &source, &target));
    let err = refused(&copr(&["plan", s(&f)]), &["overflow.toml"]);
    assert!(!err.contains("unknown field"), "{err}");
}

// 2. The task limit holds in 4 GiB, and the refusal says why.
#[test]
fn task_limit_is_refused_with_the_reason() {
    let g = write("far-task.txt", "0 16777215 1\n");
    refused(
        &copr(&["map", "--graph", s(&g), "--flat", "16777216"]),
        &["4194304", "bytes per task"],
    );
    refused(
        &copr(&[
            "map",
            "--grid",
            "4096x4096",
            "--flat",
            "4096",
            "--ranks-per-node",
            "4096",
        ]),
        &["4194304"],
    );
    // at the limit: an answer within the caps
    let g = write("last-task.txt", "0 4194303 1\n");
    let out = copr(&[
        "map",
        "--graph",
        s(&g),
        "--flat",
        "4096",
        "--ranks-per-node",
        "1024",
        "--strategies",
        "packed,round-robin",
        "--budget",
        "1",
    ]);
    answered(&out);
}
