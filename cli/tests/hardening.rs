//! Absurd and adversarial inputs (issue 11, "must hold for every command"): each ends
//! with exit 2 and one line naming the file, the field and the value, or with correct
//! numbers — never a panic, an abort, or memory that follows a number in the file.
//!
//! Every command runs under `ulimit -v` (virtual memory capped at [`MEMORY_KB`]), so an
//! input that would allocate gigabytes aborts the child and fails the test instead of
//! slowing the machine down. `COPR_TEST_BIN=/path/to/copr` runs them against another
//! build (e.g. one from before the fixes, to see them fail).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{bin, refused};

/// Address-space cap for every `copr` run here: 3 GiB.
const MEMORY_KB: u64 = 3 << 20;

fn copr(args: &[&str]) -> Output {
    common::capped(args, common::root(), MEMORY_KB, None)
}

fn dir() -> PathBuf {
    common::scratch("copr-hardening")
}

fn write(name: &str, text: &str) -> PathBuf {
    common::write(&dir(), name, text)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok_json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn block_cyclic(fields: &str) -> String {
    format!("kind = \"block-cyclic\"\n{fields}\n")
}

fn plan_file(name: &str, head: &str, source: &str, target: &str) -> PathBuf {
    write(
        name,
        &format!("{head}\n[source]\n{source}\n[target]\n{target}"),
    )
}

const SMALL: &str =
    "kind = \"block-cyclic\"\nm = 100\nn = 100\nmb = 10\nnb = 10\nnprow = 2\nnpcol = 2\n";

#[test]
fn element_counts_beyond_64_bits_are_refused_by_every_solver_and_sweep() {
    // m = n = 10^10: 10^20 elements do not fit in 64 bits (they printed "total 0")
    let big = "m = 10000000000\nn = 10000000000\nnprow = 2\nnpcol = 2\n";
    let f = plan_file(
        "big.toml",
        "",
        &block_cyclic(&format!("{big}mb = 1000000000\nnb = 1000000000")),
        &block_cyclic(&format!(
            "{big}mb = 3000000000\nnb = 3000000000\ngrid_order = \"col-major\""
        )),
    );
    for solver in ["sparse", "dense", "greedy", "identity"] {
        refused(
            &copr(&["plan", s(&f), "--solver", solver]),
            &["big.toml", "m, n", "100000000000000000000", "MAX_ELEMENTS"],
        );
    }
    // grid splits ending at 2^40 and near u64::MAX
    for end in [1u64 << 40, u64::MAX - 1] {
        let grid = |owners: &str| {
            format!(
                "kind = \"grid\"\nrow_splits = [0, 1, {end}]\ncol_splits = [0, 1, {end}]\nowners = {owners}\n"
            )
        };
        let f = plan_file(
            "splits.toml",
            "",
            &grid("[[0, 1], [2, 3]]"),
            &grid("[[3, 2], [1, 0]]"),
        );
        for solver in ["sparse", "greedy", "identity"] {
            refused(
                &copr(&["plan", s(&f), "--solver", solver]),
                &["splits.toml", "row_splits", &end.to_string()],
            );
        }
    }
    refused(
        &copr(&[
            "sweep",
            "--m",
            "10000000000",
            "--n",
            "10000000000",
            "--nprow",
            "2",
            "--npcol",
            "2",
            "--target-block",
            "3000000000",
            "--blocks",
            "1000000000",
            "--no-svg",
        ]),
        &["m, n", "100000000000000000000"],
    );
}

#[test]
fn the_largest_representable_matrix_gets_exact_totals() {
    // 2^30 x 2^30 = 2^60 elements: the limit itself, counted exactly
    let n = 1u64 << 30;
    let f = plan_file(
        "limit.toml",
        "element_size = 8",
        &block_cyclic(&format!(
            "m = {n}\nn = {n}\nmb = {}\nnb = {}\nnprow = 2\nnpcol = 2",
            n / 4,
            n / 4
        )),
        &block_cyclic(&format!(
            "m = {n}\nn = {n}\nmb = {}\nnb = {}\nnprow = 2\nnpcol = 2\ngrid_order = \"col-major\"",
            n / 2,
            n / 2
        )),
    );
    for solver in ["sparse", "dense", "greedy", "identity"] {
        let j = ok_json(&copr(&["plan", s(&f), "--json", "--solver", solver]));
        assert_eq!(j["total_elements"], 1u64 << 60, "{solver}");
        assert_eq!(j["total_bytes"], 1u64 << 63, "{solver}");
        let (before, after) = (
            j["remote_before"].as_u64().unwrap(),
            j["remote_after"].as_u64().unwrap(),
        );
        assert!(after <= before && before <= 1 << 60, "{solver}: {j}");
        // every source rank sends 2^56 elements to every target rank; a quarter of
        // the data stays where it is, whatever the relabeling
        assert_eq!(before, 3 << 58, "{solver}");
        assert_eq!(after, 3 << 58, "{solver}");
    }
    // the same matrix at 32 bytes per element is 2^65 bytes: refused
    let text = std::fs::read_to_string(&f)
        .unwrap()
        .replace("element_size = 8", "element_size = 32");
    let f = write("limit32.toml", &text);
    refused(
        &copr(&["plan", s(&f)]),
        &["limit32.toml", "element_size", "32", "2^64"],
    );
}

#[test]
fn rank_ids_and_counts_beyond_the_limit_are_refused_without_panic() {
    let grid_owner = |o: &str| {
        format!("kind = \"grid\"\nrow_splits = [0, 10]\ncol_splits = [0, 10]\nowners = [[{o}]]\n")
    };
    for owner in [
        "4294967295",
        "1000000000000",
        "18446744073709551615",
        "50000000",
    ] {
        let f = plan_file("owner.toml", "", &grid_owner(owner), &grid_owner("0"));
        let err = refused(
            &copr(&["plan", s(&f)]),
            &["owner.toml", "owners", owner, "MAX_RANKS"],
        );
        assert!(!err.contains("must be positive"), "{err}");
    }
    for (fields, field, value) in [
        (
            "nprow = 2\nnpcol = 2\nranks = 10000000000",
            "ranks",
            "10000000000",
        ),
        (
            "nprow = 1000000\nnpcol = 1000000",
            "nprow, npcol",
            "1000000000000",
        ),
        (
            "nprow = 2\nnpcol = 2\nrank_map = [0, 1, 2, 18446744073709551615]",
            "rank_map",
            "18446744073709551615",
        ),
    ] {
        let src = block_cyclic(&format!("m = 100\nn = 100\nmb = 10\nnb = 10\n{fields}"));
        let f = plan_file("ranks.toml", "", &src, SMALL);
        refused(
            &copr(&["plan", s(&f)]),
            &["ranks.toml", field, value, "MAX_RANKS"],
        );
    }
}

#[test]
fn one_block_on_a_far_rank_is_solved_with_work_for_the_ranks_used() {
    // rank 2^24 - 1, the largest allowed, holds the only block: σ swaps it with rank 0
    // and leaves every other rank alone
    let far = (1usize << 24) - 1;
    let grid = |o: usize| {
        format!("kind = \"grid\"\nrow_splits = [0, 10]\ncol_splits = [0, 10]\nowners = [[{o}]]\n")
    };
    let f = plan_file("far.toml", "", &grid(far), &grid(0));
    let j = ok_json(&copr(&["plan", s(&f), "--json"]));
    assert_eq!(j["ranks"], far + 1);
    assert_eq!(j["total_elements"], 100);
    assert_eq!(j["remote_before"], 100);
    assert_eq!(j["remote_after"], 0);
    let sigma = j["sigma"].as_array().unwrap();
    assert_eq!(sigma[0], far);
    assert_eq!(sigma[far], 0);
    assert_eq!(sigma[12345], 12345);
}

#[test]
fn huge_axes_are_refused_before_allocating() {
    // 5·10^9 rows in blocks of 1 (ran past 7 GB)
    let src = block_cyclic("m = 5000000000\nn = 4\nmb = 1\nnb = 1\nnprow = 2\nnpcol = 2");
    let dst = block_cyclic("m = 5000000000\nn = 4\nmb = 7\nnb = 1\nnprow = 2\nnpcol = 2");
    let f = plan_file("axis.toml", "", &src, &dst);
    refused(
        &copr(&["plan", s(&f)]),
        &["axis.toml", "mb", "5000000000", "MAX_AXIS_BLOCKS"],
    );
    // the overlay of two large grids with incommensurate blocks: 4096 x 4096 ranks,
    // every row class pair and column class pair occurs
    let src = block_cyclic("m = 4000000\nn = 4000000\nmb = 1\nnb = 1\nnprow = 2048\nnpcol = 2048");
    let dst = block_cyclic("m = 4000000\nn = 4000000\nmb = 3\nnb = 3\nnprow = 2047\nnpcol = 2047");
    let f = plan_file("pairs.toml", "", &src, &dst);
    refused(
        &copr(&["plan", s(&f)]),
        &["pairs.toml", "MAX_OVERLAP_PAIRS"],
    );
}

#[test]
fn unbounded_files_are_refused() {
    for cmd in ["plan", "topo"] {
        refused(
            &copr(&[cmd, "/dev/zero"]),
            &["/dev/zero", "NUL byte at offset 0"],
        );
    }
    refused(
        &copr(&["plan", "data/plans/paper-b5000.toml", "--cost", "/dev/zero"]),
        &["/dev/zero", "NUL byte"],
    );
    // endless text: read up to the size limit, then refused
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_KB}; yes | exec \"$0\" plan /dev/stdin"
        ))
        .arg(bin())
        .output()
        .unwrap();
    refused(&out, &["/dev/stdin", "67108864", "MAX_FILE_BYTES"]);
}

#[test]
fn huge_tori_and_nodes_are_refused_before_building_them() {
    for dims in ["[256, 256, 256]", "[2048, 1024, 1024]"] {
        let f = write(
            "torus.toml",
            &format!(
                "[inter]\nkind = \"torus\"\ndims = {dims}\n[placement]\nrule = \"packed\"\nranks = 4\nranks_per_node = 1\n"
            ),
        );
        refused(
            &copr(&["topo", s(&f)]),
            &["torus.toml", "dims", "MAX_TORUS_COORDS"],
        );
    }
    // 262 144 PUs per node, as an hwloc synthetic description and as a tree shape
    // (a PU x PU table of 64 GB); 65 536 PUs (4 GB) is refused too
    for (kind, field, value) in [
        ("hwloc-synthetic", "description", "pack:64 core:64 pu:64"),
        ("tree", "shape", "pack:64 core:64 pu:64"),
        ("tree", "shape", "pack:256 core:256"),
    ] {
        let f = write(
            "node.toml",
            &format!(
                "[intra]\nkind = \"{kind}\"\n{field} = \"{value}\"\n[placement]\nrule = \"packed\"\nranks = 4\n"
            ),
        );
        refused(
            &copr(&["topo", s(&f)]),
            &["node.toml", field, value, "MAX_NODE_PUS"],
        );
    }
    // rank counts in topology configs and on the command line
    let f = write(
        "many.toml",
        "[placement]\nrule = \"packed\"\nranks = 100000000000\nranks_per_node = 8\n",
    );
    refused(
        &copr(&["topo", s(&f)]),
        &["many.toml", "ranks", "100000000000", "MAX_RANKS"],
    );
    refused(
        &copr(&[
            "topo",
            "data/topology/torus-xe6.toml",
            "--ranks",
            "10000000000",
        ]),
        &["torus-xe6.toml", "ranks", "10000000000", "MAX_RANKS"],
    );
    // a placement file naming one far rank (was a 2^28-entry table)
    let pl = write("far.placement", "0 a\n268435455 a\n");
    let f = write(
        "placed.toml",
        &format!("[placement]\nrule = \"file\"\nfile = \"{}\"\n", s(&pl)),
    );
    refused(
        &copr(&["topo", s(&f)]),
        &["far.placement", "rank", "268435455", "MAX_RANKS"],
    );
    let pl = write("gap.placement", "0 a\n16777215 a\n");
    let f = write(
        "gap.toml",
        &format!("[placement]\nrule = \"file\"\nfile = \"{}\"\n", s(&pl)),
    );
    refused(&copr(&["topo", s(&f)]), &["gap.placement", "rank 1"]);
}

#[test]
fn plan_cost_beyond_the_dense_limit_uses_the_candidate_rows() {
    // p = 102 400 under latency + bandwidth: no p × p table any more (the sparse
    // candidate relabeling); a layout onto itself, so that the answer is known
    let bc = block_cyclic(
        "m = 100000\nn = 100000\nmb = 100\nnb = 100\nnprow = 320\nnpcol = 320\ngrid_order = \"row-major\"",
    );
    let f = plan_file("p102k.toml", "", &bc, &bc);
    let cost = write(
        "lb.toml",
        "[[terms]]\nmodel = \"latency-bandwidth\"\n[topology.inter]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = 1e9\n[topology.placement]\nrule = \"packed\"\nranks_per_node = 32\n",
    );
    let out = copr(&["plan", s(&f), "--cost", s(&cost), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ranks"], 102400);
    assert_eq!(j["cost"]["cost_before"], 0.0);
    let sigma = j["cost"]["sigma"].as_array().unwrap();
    assert!(sigma
        .iter()
        .enumerate()
        .all(|(t, s)| s.as_u64() == Some(t as u64)));
}

#[test]
fn meaningless_plan_values_are_refused() {
    let base = std::fs::read_to_string(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data/plans/paper-b5000.toml"),
    )
    .unwrap();
    for es in ["0", "9223372036854775807", "1048577"] {
        let f = write(
            "es.toml",
            &base.replace("element_size = 8", &format!("element_size = {es}")),
        );
        refused(&copr(&["plan", s(&f)]), &["es.toml", "element_size", es]);
    }
    for alpha in ["nan", "inf", "-inf"] {
        let f = write("alpha.toml", &format!("alpha = {alpha}\n{base}"));
        let shown = match alpha {
            "nan" => "NaN",
            a => a,
        };
        refused(
            &copr(&["plan", s(&f), "--cost", "data/cost/torus-3d.toml"]),
            &["alpha.toml", "alpha", shown],
        );
        refused(&copr(&["plan", s(&f)]), &["alpha.toml", "alpha", shown]);
    }
}

#[test]
fn more_ranks_on_a_node_than_pus_is_said() {
    let f = write(
        "over.toml",
        "[intra]\nkind = \"tree\"\nshape = \"pack:2 core:2\"\n[placement]\nrule = \"packed\"\nranks = 8\nranks_per_node = 8\n",
    );
    let out = copr(&["topo", s(&f)]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("oversubscribed: up to 8 ranks on a node of 4 PUs"),
        "{text}"
    );
    let j = ok_json(&copr(&["topo", s(&f), "--json"]));
    assert_eq!(j["pus_per_node"], 4);
    assert_eq!(j["ranks_per_node_max"], 8);
    // a node that fits says nothing
    let out = copr(&["topo", "data/topology/torus-xe6.toml"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("oversubscribed"));
    // plan --cost warns on stderr and still answers
    let cost = write(
        "over-cost.toml",
        "[[terms]]\nmodel = \"latency-bandwidth\"\n[topology.intra]\nkind = \"tree\"\nshape = \"core:4\"\n[topology.inter]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = 1e9\n[topology.placement]\nrule = \"packed\"\nranks_per_node = 8\n",
    );
    let out = copr(&["plan", "data/plans/submatrix.toml", "--cost", s(&cost)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("over-cost.toml") && err.contains("6 ranks on a node of 4 PUs"),
        "{err}"
    );
    // an error after the warning's cause is the one line on stderr
    let svg = dir().join("no-such-directory").join("heatmap.svg");
    let out = copr(&[
        "plan",
        "data/plans/submatrix.toml",
        "--cost",
        s(&cost),
        "--svg",
        s(&svg),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("heatmap.svg"), "{err}");
}

#[test]
fn map_json_carries_byte_counts_beyond_u64() {
    // three messages of 2^64 - 1 bytes: totals beyond u64 (the JSON output panicked)
    let g = write(
        "huge.txt",
        "tasks 4\n0 1 18446744073709551615\n1 2 18446744073709551615\n2 3 18446744073709551615\n",
    );
    let out = copr(&[
        "map",
        "--graph",
        s(&g),
        "--flat",
        "2",
        "--ranks-per-node",
        "2",
        "--strategies",
        "packed",
        "--json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let total = 3 * u128::from(u64::MAX);
    assert!(text.contains(&format!("\"total_bytes\":{total}")), "{text}");
    assert!(text.contains("\"exported\":\"packed\""), "{text}");
}

#[test]
fn a_reader_that_stops_early_is_not_a_panic() {
    // `copr … | head -1`: the pipe is closed before copr writes. If copr happens to
    // finish first (a loaded machine), it exits 0; try again until the pipe was closed
    // in time, and never accept a panic.
    let bin = bin();
    for args in [
        &["plan", "data/plans/paper-b5000.toml"][..],
        &["sweep", "--json", "--no-svg", "--blocks", "100,1000"][..],
    ] {
        let mut closed_in_time = false;
        for _ in 0..50 {
            let mut child = Command::new(&bin)
                .args(args)
                .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            drop(child.stdout.take());
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            match out.status.code() {
                Some(141) => {
                    closed_in_time = true;
                    break;
                }
                Some(0) => {}
                other => panic!("{args:?}: status {other:?}, stderr {err}"),
            }
        }
        assert!(
            closed_in_time,
            "{args:?}: copr always finished before the pipe closed"
        );
    }
}

#[test]
fn leading_dimensions_that_overflow_a_local_buffer_are_refused() {
    use copr::layout::{Grid, GridSpec, RankStorage};
    let spec = |ld: usize| GridSpec {
        row_splits: vec![0, 10, 20],
        col_splits: vec![0, 10],
        owners: vec![vec![0], vec![0]],
        ranks: None,
        storage: vec![RankStorage {
            order: copr::layout::Order::ColMajor,
            ld: Some(ld),
        }],
    };
    // two blocks of 10 columns at ld 16: 2 · 16 · 10 elements
    assert_eq!(Grid::new(spec(16)).unwrap().local_len(0), 320);
    for ld in [usize::MAX, 1 << 60] {
        let e = Grid::new(spec(ld)).unwrap_err().to_string();
        assert!(
            e.contains("storage.ld") && e.contains(&ld.to_string()) && e.contains("MAX_ELEMENTS"),
            "{e}"
        );
    }
}

#[test]
fn sweep_block_errors_say_which_side() {
    let args = |blocks: &'static str, target: &'static str| {
        copr(&[
            "sweep",
            "--m",
            "100000",
            "--n",
            "100000",
            "--blocks",
            blocks,
            "--target-block",
            target,
            "--no-svg",
        ])
    };
    refused(&args("0", "100"), &["blocks", "got 0"]);
    refused(&args("100", "0"), &["target_block", "got 0"]);
    // 5·10^9 rows in blocks of 1: the source's block size is beyond the limit
    refused(
        &copr(&[
            "sweep",
            "--m",
            "5000000000",
            "--n",
            "4",
            "--blocks",
            "1",
            "--target-block",
            "1000000000",
            "--no-svg",
        ]),
        &["blocks", "5000000000", "MAX_AXIS_BLOCKS"],
    );
}
