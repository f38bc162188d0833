//! `copr plan --source/--target/--op/--element-size` (layouts on the command line, the
//! plan file's kinds and fields) and `copr sweep --cost`.

mod common;

use common::copr;

use std::process::Output;

use serde_json::Value;

/// The JSON object copr printed, without the solver's times (which differ run to run).
fn json(out: &Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let mut v: Value = serde_json::from_slice(&out.stdout).expect("one JSON value");
    strip_times(&mut v);
    v
}

fn strip_times(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("solver_seconds");
            o.remove("seconds");
            o.values_mut().for_each(strip_times);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_times),
        _ => {}
    }
}

const PAPER_SOURCE: &str = "block-cyclic:m=100000,n=100000,mb=5000,nb=5000,nprow=10,npcol=10";
const PAPER_TARGET: &str =
    "block-cyclic:m=100000,n=100000,mb=10000,nb=10000,nprow=10,npcol=10,grid_order=col-major";

#[test]
fn layouts_from_flags_plan_as_the_file_does() {
    let file = json(&copr(&["plan", "data/plans/paper-b5000.toml", "--json"]));
    let flags = json(&copr(&[
        "plan",
        "--source",
        PAPER_SOURCE,
        "--target",
        PAPER_TARGET,
        "--json",
    ]));
    assert_eq!(flags, file);
    assert_eq!(file["remote_after"], 7_500_000_000u64);

    // op, element size, a grid with arrays, a submatrix as an inline table
    let file = json(&copr(&["plan", "data/plans/grid-to-subset.json", "--json"]));
    let flags = json(&copr(&[
        "plan",
        "--source",
        "grid:row_splits=[0,300,700,1000],col_splits=[0,500,1000],owners=[[0,1],[2,3],[4,5]],storage=[{order=\"row-major\"}]",
        "--target",
        "block-cyclic:m=1000,n=1000,mb=250,nb=250,nprow=2,npcol=2,grid_order=col-major,submatrix={ia=0,ja=0,m=1000,n=1000},ranks=6",
        "--element-size",
        "16",
        "--solver",
        "dense",
        "--json",
    ]));
    assert_eq!(flags, file);
    assert_eq!(flags["total_bytes"], 16_000_000u64);
}

#[test]
fn flags_replace_the_file_fields() {
    // the b = 5000 file with the b = 7500 source is the b = 7500 file
    let replaced = json(&copr(&[
        "plan",
        "data/plans/paper-b5000.toml",
        "--source",
        "block-cyclic:m=100000,n=100000,mb=7500,nb=7500,nprow=10,npcol=10",
        "--json",
    ]));
    let b7500 = json(&copr(&["plan", "data/plans/paper-b7500.toml", "--json"]));
    assert_eq!(replaced, b7500);
    assert_ne!(replaced["remote_after"], 7_500_000_000u64);

    // --op and --element-size over the file's, against the same file rewritten
    let dir = common::scratch("plan-flags");
    let text = std::fs::read_to_string(common::root().join("data/plans/scalapack-32-to-128.toml"))
        .unwrap()
        .replace("op = \"transpose\"", "op = \"identity\"")
        .replace("element_size = 8", "element_size = 4");
    let rewritten = common::write(&dir, "identity.toml", &text);
    let expected = json(&copr(&["plan", rewritten.to_str().unwrap(), "--json"]));
    let given = json(&copr(&[
        "plan",
        "data/plans/scalapack-32-to-128.toml",
        "--op",
        "identity",
        "--element-size",
        "4",
        "--json",
    ]));
    assert_eq!(given, expected);
    let transposed = json(&copr(&[
        "plan",
        "data/plans/scalapack-32-to-128.toml",
        "--json",
    ]));
    assert_ne!(given, transposed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_layout_flags_name_the_flag_and_the_field() {
    let t = PAPER_TARGET;
    let cases: &[(&[&str], &[&str])] = &[
        (
            &[
                "--source",
                "block-cyclic:m=100,n=100,mb=0,nb=5,nprow=2,npcol=2",
                "--target",
                t,
            ],
            &["--source: ", "mb", "positive"],
        ),
        (
            &[
                "--source",
                "block-cyclic:m=100,n=100,mb=5,nb=5,nprow=2,npcol=2,mbb=3",
                "--target",
                t,
            ],
            &["--source: ", "unknown field `mbb`"],
        ),
        (
            &["--source", PAPER_SOURCE, "--target", "bc:m=100"],
            &["--target: ", "unknown layout kind \"bc\""],
        ),
        (
            &["--source", "block-cyclic:m=100,n", "--target", t],
            &["--source block-cyclic:m=100,n: ", "`n` is not FIELD=VALUE"],
        ),
        (
            &["--source", "grid:row_splits=[0,5", "--target", t],
            &["--source grid:row_splits=[0,5: ", "unclosed"],
        ),
        (&["--source", PAPER_SOURCE], &["--target is missing"]),
        (&["--target", PAPER_TARGET], &["--source is missing"]),
        (&[], &["give a plan FILE"]),
        (
            &[
                "--source",
                "block-cyclic:m=100,n=100,mb=5,nb=5,nprow=2,npcol=2,mb=7",
                "--target",
                t,
            ],
            &["--source: ", "duplicate key `mb`"],
        ),
        (
            &["--source", PAPER_SOURCE, "--target", "grid:kind=grid"],
            &["--target: ", "duplicate key `kind`"],
        ),
        (
            &["data/plans/gemm-summa.toml", "--target", t],
            &["--target", "gemm-summa.toml", "batch"],
        ),
    ];
    for (args, needles) in cases {
        let mut all = vec!["plan"];
        all.extend_from_slice(args);
        common::refused(&copr(&all), needles);
    }
}

#[test]
fn sweep_prices_each_block_size_as_plan_does() {
    let cost = "data/cost/fat-tree.toml";
    let sweep_of = |last: &'static str| {
        copr(&[
            "sweep",
            "--m",
            "4000",
            "--n",
            "4000",
            "--nprow",
            "4",
            "--npcol",
            "4",
            "--target-block",
            "1000",
            "--blocks",
            "100,250,1000",
            "--cost",
            cost,
            last,
        ])
    };
    let sweep = json(&sweep_of("--json"));
    let rows = sweep.as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    for (row, b) in rows.iter().zip(["100", "250", "1000"]) {
        let source = format!("block-cyclic:m=4000,n=4000,mb={b},nb={b},nprow=4,npcol=4");
        let plan = json(&copr(&[
            "plan",
            "--source",
            &source,
            "--target",
            "block-cyclic:m=4000,n=4000,mb=1000,nb=1000,nprow=4,npcol=4,grid_order=col-major",
            "--cost",
            cost,
            "--json",
        ]));
        assert_eq!(row["block"].to_string(), b);
        assert_eq!(row["remote_after"], plan["remote_after"], "block {b}");
        assert_eq!(row["cost"]["sigma"], plan["cost"]["sigma"], "block {b}");
        // the same sums, perhaps added in another order
        for k in ["cost_before", "cost_after", "cost_with_plan_sigma"] {
            let (x, y) = (
                row["cost"][k].as_f64().unwrap(),
                plan["cost"][k].as_f64().unwrap(),
            );
            assert!(
                (x - y).abs() <= 1e-12 * y.abs(),
                "block {b}: {k} {x} against {y}"
            );
        }
        let (before, after) = (
            row["cost"]["cost_before"].as_f64().unwrap(),
            row["cost"]["cost_after"].as_f64().unwrap(),
        );
        assert!(after <= before && after <= row["cost"]["cost_with_plan_sigma"].as_f64().unwrap());
    }

    // the text table: one line per block size, in seconds
    let out = sweep_of("--no-svg");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("cost model ") && text.contains("cost sigma s"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");

    // a machine with fewer ranks than the grid is refused, naming the file
    let out = copr(&[
        "sweep",
        "--nprow",
        "20",
        "--npcol",
        "20",
        "--blocks",
        "5000",
        "--cost",
        "data/cost/torus-3d-spread.toml",
        "--no-svg",
    ]);
    common::refused(&out, &["torus-3d-spread.toml"]);
}

/// Absurd layout flags (numbers beyond 64 bits, overflowing sizes, control characters,
/// brackets nested 50 000 deep, empty text) end in one line and exit 2, naming the flag.
#[test]
fn absurd_layout_flags_are_refused_in_one_line() {
    let deep = format!(
        "grid:row_splits={}0{}",
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    let open = format!("grid:row_splits={}", "[".repeat(50_000));
    let absurd = [
        "block-cyclic:m=99999999999999999999999,n=4,mb=2,nb=2,nprow=1,npcol=2",
        "block-cyclic:m=1e400,n=4",
        "block-cyclic:m=4611686018427387904,n=4611686018427387904,mb=1,nb=1,nprow=1,npcol=2",
        "block-cyclic:m=4,n=4,mb=2,nb=2,nprow=100000000,npcol=100000000",
        "block-cyclic:m=-4,n=4,mb=2,nb=2,nprow=1,npcol=2",
        "bad\u{1b}[31m:m=1",
        "",
        ":",
        "=",
        ",",
        &deep,
        &open,
    ];
    for a in absurd {
        let out = copr(&[
            "plan",
            "--source",
            a,
            "--target",
            "block-cyclic:m=4,n=4,mb=2,nb=2,nprow=1,npcol=2",
        ]);
        let err = common::refused(&out, &["--source"]);
        assert!(err.len() < 1200 && !err.contains('\u{1b}'), "{err}");
    }
}

/// A plan file that gives a field twice is refused, naming the field, in TOML and in
/// JSON alike (serde alone keeps the last of two keys inside a JSON layout, so a file
/// with `"mb": 1, …, "mb": 2` was planned with one of them, silently).
#[test]
fn plan_files_with_a_field_given_twice_are_refused() {
    let dir = common::scratch("dup-fields");
    let layout = |extra: &str| {
        format!(
            "{{\"kind\": \"block-cyclic\", \"m\": 4, \"n\": 4, \"mb\": 1, \"nb\": 1, \"nprow\": 2, \"npcol\": 2{extra}}}"
        )
    };
    let cases = [
        (
            "source.json",
            format!(
                "{{\"source\": {},\n \"target\": {}}}",
                layout(", \"mb\": 2"),
                layout("")
            ),
            "source: duplicate field `mb`",
        ),
        (
            "batch.json",
            format!(
                "{{\"transform\": [{{\"source\": {}, \"target\": {}}}]}}",
                layout(""),
                layout(", \"npcol\": 2")
            ),
            "duplicate field `npcol`",
        ),
        (
            "plan.toml",
            "[source]\nkind = \"block-cyclic\"\nm = 4\nm = 5\n".to_string(),
            "line 4: duplicate key `m`",
        ),
    ];
    for (name, text, needle) in cases {
        let path = common::write(&dir, name, &text);
        common::refused(&copr(&["plan", path.to_str().unwrap()]), &[name, needle]);
    }
    // the same layouts without the second key are planned: 8 of 16 elements move
    let ok = format!("{{\"source\": {}, \"target\": {}}}", layout(""), layout(""));
    let path = common::write(&dir, "ok.json", &ok);
    let v = json(&copr(&["plan", path.to_str().unwrap(), "--json"]));
    assert_eq!(v["remote_before"], 0);
}

#[test]
fn map_plan_of_a_batch_says_it_takes_one_plan() {
    let dir = common::scratch("copr-map-plan-batch");
    let bc = "kind = \"block-cyclic\"\nm = 8\nn = 8\nmb = 2\nnb = 2\nnprow = 2\nnpcol = 2\n";
    let text = format!("[[transform]]\n[transform.source]\n{bc}[transform.target]\n{bc}");
    common::write(&dir, "batch.toml", &text);
    let e = common::refused(
        &common::copr_in(&dir, &["map", "--plan", "batch.toml", "--flat", "4"]),
        &[
            "--plan batch.toml",
            "batch of [[transform]] entries",
            "one plan",
        ],
    );
    assert!(!e.contains("unknown field"), "{e}");
    // the one plan of a batch entry, as its own file, maps
    common::write(&dir, "one.toml", &format!("[source]\n{bc}[target]\n{bc}"));
    common::ok(&common::copr_in(
        &dir,
        &[
            "map",
            "--plan",
            "one.toml",
            "--flat",
            "4",
            "--strategies",
            "packed",
        ],
    ));
}
