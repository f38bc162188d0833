//! `copr plan` on batch files (`[[transform]]` entries): the volumes of the worked
//! examples against what can be worked out by hand, and bad entries named in a
//! one-line error with exit code 2.

mod common;

use common::copr;

use std::path::{Path, PathBuf};
use std::process::Output;

use copr::lap::Perm;
use copr::plan::{BatchSpec, PlanSpec};
use copr::volume::Volumes;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn json_of(args: &[&str]) -> serde_json::Value {
    let out = copr(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    common::tmp("copr-cli-batch", name)
}

/// Checks that a command failed with exit code 2 and one line on standard error,
/// never a panic; returns that line.
fn one_line_exit_2(out: &Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    err
}

/// One block of the Cannon example: 1024 x 1024 elements.
const BLOCK: u64 = 1024 * 1024;

#[test]
fn cannon_preskewing_volumes_are_the_ones_worked_out_by_hand() {
    let j = json_of(&["plan", "data/plans/cannon-preskew.toml", "--json"]);
    // A: block rows 1-3 shift (12 of 16 blocks move); B: block columns 1-3; C stays.
    let per: Vec<(&str, u64)> = vec![("A", 12 * BLOCK), ("B", 12 * BLOCK), ("C", 0)];
    for (k, (name, none)) in per.iter().enumerate() {
        let t = &j["transforms"][k];
        assert_eq!(t["name"], *name);
        assert_eq!(t["total_elements"], 16 * BLOCK);
        assert_eq!(t["remote_none"], *none, "{name}");
        // each matrix alone: its skew is a renaming of the processes
        assert_eq!(t["remote_independent"], 0, "{name}");
    }
    // One σ for all three: a label t = (i, j) gets one block from A's, B's and C's
    // source each; they agree on the process only in row 0 (A and C), column 0 (B and
    // C). So no σ keeps more than q² + 2q = 24 of the 48 blocks, and the identity does.
    assert_eq!(j["remote_none"], 24 * BLOCK);
    assert_eq!(j["remote_independent"], 0);
    assert_eq!(j["remote_joint"], 24 * BLOCK);
    assert_eq!(j["price_of_consistency"], 24 * BLOCK);
    let sigma: Vec<usize> = serde_json::from_value(j["joint_sigma"].clone()).unwrap();
    assert_eq!(sigma, (0..16).collect::<Vec<_>>());

    // A and B alone: a common σ keeps one block per label, two at label (0, 0) (where
    // the row shift of A keeps B's block too): 32 − 17 = 15 blocks move.
    let text =
        std::fs::read_to_string(Path::new(ROOT).join("data/plans/cannon-preskew.toml")).unwrap();
    let ab = &text[..text.find("[[transform]]\nname = \"C\"").unwrap()];
    let path = tmp("cannon-ab.toml");
    std::fs::write(&path, ab).unwrap();
    let j = json_of(&["plan", path.to_str().unwrap(), "--json"]);
    assert_eq!(j["remote_joint"], 15 * BLOCK);
}

#[test]
fn gemm_batch_numbers_follow_from_the_volumes() {
    let file = "data/plans/gemm-summa.toml";
    let j = json_of(&["plan", file, "--json"]);
    let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
    let spec: BatchSpec = toml::from_str(&text).unwrap();
    let sigma: Vec<usize> = serde_json::from_value(j["joint_sigma"].clone()).unwrap();
    let p = sigma.len();
    assert_eq!(p, 32);
    let sigma = Perm::from_forward(sigma).unwrap();
    let (mut none, mut independent, mut joint) = (0, 0, 0);
    for (k, t) in spec.transform.iter().enumerate() {
        let v = Volumes::compute(&t.source, &t.target, t.op).unwrap();
        let row = &j["transforms"][k];
        assert_eq!(row["remote_none"], v.remote());
        // the printed σ's reproduce the printed volumes
        let own: Vec<usize> = serde_json::from_value(row["sigma_independent"].clone()).unwrap();
        assert_eq!(
            row["remote_independent"],
            v.remote_after(&Perm::from_forward(own).unwrap())
        );
        let kept: u64 = (0..v.ranks())
            .filter(|&t| sigma.apply(t) < v.ranks())
            .map(|t| v.get(sigma.apply(t), t))
            .sum();
        assert_eq!(row["remote_joint"], v.total() - kept);
        none += v.remote();
        independent += row["remote_independent"].as_u64().unwrap();
        joint += v.total() - kept;
    }
    assert_eq!(j["remote_none"], none);
    assert_eq!(j["remote_joint"], joint);
    // C lives on ranks 0-15 only, A and B on all 32: one rank space of 32
    assert_eq!(spec.transform[2].source.ranks(), 32);
    assert!(
        independent <= joint && joint < none,
        "{independent} {joint} {none}"
    );
    assert_eq!(j["price_of_consistency"], joint - independent);
}

#[test]
fn a_batch_of_one_reports_the_single_plan() {
    let single = "data/plans/paper-b7500.toml";
    let text = std::fs::read_to_string(Path::new(ROOT).join(single)).unwrap();
    let spec: PlanSpec = toml::from_str(&text).unwrap();
    let batch = format!(
        "[[transform]]\nname = \"only\"\n{}",
        text.replace("[source]", "[transform.source]")
            .replace("[target]", "[transform.target]")
            .replace("solver = \"sparse\"\n", "")
    );
    let path = tmp("one.toml");
    std::fs::write(&path, batch).unwrap();
    let j = json_of(&["plan", path.to_str().unwrap(), "--json"]);
    let alone = json_of(&["plan", single, "--json"]);
    assert_eq!(j["remote_none"], alone["remote_before"]);
    assert_eq!(j["remote_independent"], alone["remote_after"]);
    assert_eq!(j["remote_joint"], alone["remote_after"]);
    assert_eq!(
        j["transforms"][0]["total_elements"],
        spec.target.rows() as u64 * spec.target.cols() as u64
    );
}

/// A batch of two 8 x 8 transforms; `a` and `b` are extra lines in the first and the
/// second entry, `b_target` extra lines in the second entry's target.
fn batch_text(a: &str, b: &str, b_target: &str) -> String {
    let layout = "kind = \"block-cyclic\"\nm = 8\nn = 8\nmb = 4\nnb = 4\nnprow = 2\nnpcol = 2\n";
    format!(
        "[[transform]]\nname = \"A\"\n{a}[transform.source]\n{layout}[transform.target]\n{layout}\
         grid_order = \"col-major\"\n\
         [[transform]]\n{b}[transform.source]\n{layout}[transform.target]\n{layout}{b_target}"
    )
}

#[test]
fn bad_batch_entries_are_one_line_errors_naming_the_entry() {
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "zero.toml",
            batch_text("", "", "mb = 0\n").replacen("mb = 4\nnb = 4\nnprow = 2\nnpcol = 2\nmb = 0", "mb = 0\nnb = 4\nnprow = 2\nnpcol = 2", 1),
            vec!["transform[1].target", "mb"],
        ),
        (
            "shape.toml",
            batch_text("", "name = \"C\"\nop = \"transpose\"\n", "").replace(
                "[[transform]]\nname = \"C\"\nop = \"transpose\"\n[transform.source]\nkind = \"block-cyclic\"\nm = 8\nn = 8",
                "[[transform]]\nname = \"C\"\nop = \"transpose\"\n[transform.source]\nkind = \"block-cyclic\"\nm = 8\nn = 6",
            ),
            vec!["transform[1] (C)", "mismatch"],
        ),
        (
            "size.toml",
            batch_text("element_size = 0\n", "", ""),
            vec!["transform[0] (A)", "element_size"],
        ),
        (
            "alpha.toml",
            batch_text("", "alpha = nan\n", ""),
            vec!["transform[1]", "alpha"],
        ),
        (
            "unknown.toml",
            batch_text("", "opp = \"transpose\"\n", ""),
            vec!["transform[1]", "opp"],
        ),
        (
            "empty.toml",
            "transform = []\n".to_string(),
            vec!["at least one"],
        ),
        (
            "missing.toml",
            "[[transform]]\nname = \"A\"\n[transform.source]\nkind = \"grid\"\nrow_splits = [0, 4]\ncol_splits = [0, 4]\nowners = [[0]]\n".to_string(),
            vec!["transform[0]", "target"],
        ),
        (
            "bad.json",
            r#"{"transform": [{"source": {"kind": "grid", "row_splits": [0, 4], "col_splits": [0, 4], "owners": [[0]]},
                "target": {"kind": "grid", "row_splits": [0, 4], "col_splits": [0, 4], "owners": [[0]]}},
               {"source": {"kind": "grid", "row_splits": [0, 4], "col_splits": [0, 4], "owners": [[1]]},
                "target": {"kind": "grid", "row_splits": [0, 4, 2], "col_splits": [0, 4], "owners": [[0], [0]]}}]}"#
                .to_string(),
            vec!["transform[1].target", "row_splits"],
        ),
    ];
    for (name, text, needles) in &cases {
        let path = tmp(name);
        std::fs::write(&path, text).unwrap();
        let out = copr(&["plan", path.to_str().unwrap()]);
        let err = one_line_exit_2(&out, name);
        assert!(
            err.contains(name),
            "{name}: the error names the file: {err}"
        );
        for needle in needles {
            assert!(err.contains(needle), "{name}: expected {needle:?} in {err}");
        }
    }
    // a batch has no single volume matrix to draw
    let out = copr(&[
        "plan",
        "data/plans/cannon-preskew.toml",
        "--svg",
        tmp("batch.svg").to_str().unwrap(),
    ]);
    one_line_exit_2(&out, "");
}

#[test]
fn batch_text_output_and_cost_models() {
    let out = copr(&["plan", "data/plans/gemm-summa.toml"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for word in ["independent", "price of consistency", "joint sigma"] {
        assert!(text.contains(word), "{word}: {text}");
    }
    // with a cost model: the joint cost-optimal σ costs no more than the joint
    // volume-optimal one under that model, and at least the independent optima
    let j = json_of(&[
        "plan",
        "data/plans/gemm-summa.toml",
        "--cost",
        "data/cost/fat-tree.toml",
        "--json",
    ]);
    let c = &j["cost"];
    let f = |k: &str| c[k].as_f64().unwrap();
    assert!(f("joint") <= f("joint_with_volume_sigma") * (1.0 + 1e-9));
    assert!(f("independent") <= f("joint") * (1.0 + 1e-9));
    assert!(f("joint") <= f("none") * (1.0 + 1e-9));
    // a machine too small for the batch's ranks: one line, exit 2
    let out = copr(&[
        "plan",
        "data/plans/gemm-summa.toml",
        "--cost",
        "data/cost/two-islands.toml",
    ]);
    one_line_exit_2(&out, "");
}

/// Mutated batch files (a number changed to 0, 1, a large or a negative value, a line
/// dropped or repeated) end in a report or an error, never a panic.
#[test]
fn mutated_batch_files_never_panic() {
    use copr::plan::{parse_config, BatchPlan, ConfigFormat};
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(15);
    let mut outcomes = [0usize; 2];
    for file in [
        "data/plans/gemm-summa.toml",
        "data/plans/cannon-preskew.toml",
    ] {
        let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for _ in 0..150 {
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            for _ in 0..rng.random_range(1..4) {
                let k = rng.random_range(0..out.len());
                match rng.random_range(0..3) {
                    0 => {
                        out.remove(k);
                    }
                    1 => out.insert(k, out[k].clone()),
                    _ => {
                        if let Some((key, _)) = out[k].split_once(" = ") {
                            let v = ["0", "1", "4611686018427387904", "-3", "\"x\"", "[]"]
                                [rng.random_range(0..6)];
                            out[k] = format!("{key} = {v}");
                        }
                    }
                }
            }
            let mutated = out.join("\n");
            let r = std::panic::catch_unwind(|| {
                let spec: BatchSpec =
                    parse_config(&mutated, ConfigFormat::Toml, Path::new("m.toml"))?;
                let plan = BatchPlan::from_spec(&spec)?;
                let r = plan.report(spec.solver);
                assert!(r.remote_joint <= r.remote_none, "{mutated}");
                assert!(r.remote_independent <= r.remote_joint, "{mutated}");
                Ok::<_, copr::Error>(())
            });
            match r {
                Ok(Ok(())) => outcomes[0] += 1,
                Ok(Err(e)) => {
                    assert_eq!(e.to_string().lines().count(), 1, "{e}");
                    outcomes[1] += 1;
                }
                Err(_) => panic!("panicked on:\n{mutated}"),
            }
        }
    }
    // both kinds of outcome came up
    assert!(outcomes.iter().all(|&n| n > 10), "{outcomes:?}");
}
