//! Fuzzing the parsers and loaders (issue 11): random, truncated and number-mutated
//! versions of the plan, cost, topology, machine, graph, coordinate and placement files
//! in `data/` go through every command that reads them. Every run must end with exit 0,
//! or exit 2 and a one-line `copr: error:`; never a panic, a signal, or an allocation
//! beyond the address-space cap (each run is under `ulimit -v`, so a runaway
//! allocation aborts the child and fails the case). In-process, many more mutations
//! and bytes of noise go through the plan, placement, coordinate, topology and
//! cost-model parsers and on into the plans, machines and cost setups they describe.
//!
//! Seeded: the same cases every run (`FUZZ_SEED` below); proptest shrinks a failure to
//! a small mutation list.

use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Address-space cap of every run: 3 GiB.
const MEMORY_KB: u64 = 3 << 20;
/// Mutated files per target.
const CASES: u32 = 64;
const FUZZ_SEED: [u8; 32] = *b"copr issue 11: inputs, fuzzed.\0\0";

/// Numbers that have broken things (0, 2^32 ± 1, 2^63, 2^64 − 1, 10^12, the limits),
/// and ordinary ones that keep a file valid but change its meaning.
const NUMBERS: [&str; 23] = [
    "2",
    "3",
    "7",
    "64",
    "100",
    "1000",
    "100000",
    "0",
    "1",
    "-1",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1000000000000",
    "16777216",
    "16777217",
    "4194305",
    "1e308",
    "nan",
    "inf",
    "0.0",
];

/// One change to a file's bytes.
#[derive(Debug, Clone)]
enum Mutation {
    /// Keep the first `frac` of the file.
    Truncate(f64),
    /// Replace the k-th run of digits (mod their count) by `NUMBERS[v]`.
    Number(usize, usize),
    /// Overwrite the byte at `frac` of the file.
    Byte(f64, u8),
    /// Delete the k-th line (mod the line count).
    DeleteLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => (0.0..1.0f64).prop_map(Mutation::Truncate),
        5 => (any::<usize>(), 0..NUMBERS.len()).prop_map(|(k, v)| Mutation::Number(k, v)),
        1 => (0.0..1.0f64, any::<u8>()).prop_map(|(f, b)| Mutation::Byte(f, b)),
        1 => any::<usize>().prop_map(Mutation::DeleteLine),
    ]
}

fn apply(text: &[u8], ms: &[Mutation]) -> Vec<u8> {
    let mut t = text.to_vec();
    for m in ms {
        match *m {
            Mutation::Truncate(f) => t.truncate((t.len() as f64 * f) as usize),
            Mutation::Number(k, v) => {
                let mut runs = Vec::new();
                let mut i = 0;
                while i < t.len() {
                    if t[i].is_ascii_digit() {
                        let s = i;
                        while i < t.len() && (t[i].is_ascii_digit() || t[i] == b'.') {
                            i += 1;
                        }
                        runs.push((s, i));
                    } else {
                        i += 1;
                    }
                }
                if !runs.is_empty() {
                    let (s, e) = runs[k % runs.len()];
                    t.splice(s..e, NUMBERS[v].bytes());
                }
            }
            Mutation::Byte(f, b) => {
                if !t.is_empty() {
                    let i = ((t.len() as f64 * f) as usize).min(t.len() - 1);
                    t[i] = b;
                }
            }
            Mutation::DeleteLine(k) => {
                let lines: Vec<&[u8]> = t.split(|&c| c == b'\n').collect();
                let k = k % lines.len();
                let kept: Vec<&[u8]> = lines
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != k)
                    .map(|(_, l)| *l)
                    .collect();
                t = kept.join(&b'\n');
            }
        }
    }
    t
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// A private copy of `data/` (relative references between files keep working).
fn data_copy(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("copr-fuzz-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    copy_dir(
        &Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data"),
        &d,
    );
    // a placement-file topology and a small sweep, as seeds
    std::fs::write(
        d.join("topology/placed.toml"),
        "[inter]\nkind = \"network\"\nfile = \"two-islands.net.toml\"\n[placement]\nrule = \"file\"\nfile = \"placement-8.txt\"\n",
    )
    .unwrap();
    std::fs::write(
        d.join("sweep-small.toml"),
        "m = 1000\nn = 1000\nnprow = 2\nnpcol = 3\ntarget_block = 100\nblocks = [1, 7, 100]\n",
    )
    .unwrap();
    d
}

/// A file to mutate and the command that reads it: `{F}` is the mutated file,
/// `{D}` the data copy. `in_place`: the mutation replaces the file itself (it is read
/// through another file's reference), else it is written beside it as `fuzz.<ext>`.
struct Target {
    seed: &'static str,
    args: &'static [&'static str],
    in_place: bool,
}

const TARGETS: &[Target] = &[
    Target {
        seed: "plans/paper-b5000.toml",
        args: &["plan", "{F}", "--json"],
        in_place: false,
    },
    Target {
        seed: "plans/grid-to-subset.json",
        args: &["plan", "{F}", "--json"],
        in_place: false,
    },
    Target {
        seed: "plans/submatrix.toml",
        args: &["plan", "{F}", "--cost", "{D}/cost/two-islands.toml"],
        in_place: false,
    },
    Target {
        seed: "cost/torus-3d.toml",
        args: &["plan", "{D}/plans/submatrix.toml", "--cost", "{F}"],
        in_place: false,
    },
    Target {
        seed: "cost/two-islands.toml",
        args: &["topo", "{F}"],
        in_place: false,
    },
    Target {
        seed: "cost/calibrated.json",
        args: &["topo", "{F}"],
        in_place: false,
    },
    Target {
        seed: "topology/torus-xe6.toml",
        args: &["topo", "{F}", "--ranks", "64"],
        in_place: false,
    },
    Target {
        seed: "topology/torus-4x4x4.coords",
        args: &["topo", "{D}/topology/torus-xe6.toml", "--ranks", "64"],
        in_place: true,
    },
    Target {
        seed: "topology/two-islands.net.toml",
        args: &["topo", "{D}/cost/two-islands.toml"],
        in_place: true,
    },
    Target {
        seed: "topology/calibration-4.json",
        args: &["topo", "{D}/cost/calibrated.json"],
        in_place: true,
    },
    Target {
        seed: "topology/placement-8.txt",
        args: &["topo", "{D}/topology/placed.toml"],
        in_place: true,
    },
    Target {
        seed: "machines/torus-4x4x4.toml",
        args: &[
            "map",
            "--grid",
            "32x32",
            "--machine",
            "{F}",
            "--strategies",
            "packed,hilbert",
            "--json",
        ],
        in_place: false,
    },
    Target {
        seed: "graphs/halo-4x8.txt",
        args: &[
            "map",
            "--graph",
            "{F}",
            "--flat",
            "8",
            "--ranks-per-node",
            "4",
            "--strategies",
            "packed,round-robin",
            "--json",
        ],
        in_place: false,
    },
    Target {
        seed: "sweep-small.toml",
        args: &["sweep", "--config", "{F}", "--json", "--no-svg"],
        in_place: false,
    },
];

fn run(args: &[String]) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {MEMORY_KB}; exec \"$0\" \"$@\""))
        .arg(std::env::var_os("COPR_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_copr").into()))
        .args(args)
        .output()
        .expect("copr runs")
}

/// Exit 0, or exit 2 with one `copr: error:` line (Ok(exit code)); Err describes
/// anything else.
fn judge(out: &std::process::Output) -> Result<i32, String> {
    let err = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) if !err.contains("panicked") => Ok(0),
        Some(2) if err.starts_with("copr: error: ") && err.trim_end().lines().count() == 1 => Ok(2),
        _ => Err(format!("status {:?}, stderr: {err}", out.status)),
    }
}

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &FUZZ_SEED))
}

#[test]
fn mutated_input_files_end_in_an_answer_or_one_error_line() {
    let data = data_copy("cli");
    let mut answers = 0;
    for t in TARGETS {
        let seed_path = data.join(t.seed);
        let original = std::fs::read(&seed_path).unwrap();
        let file = if t.in_place {
            seed_path.clone()
        } else {
            let ext = seed_path.extension().unwrap().to_str().unwrap();
            seed_path.with_file_name(format!("fuzz.{ext}"))
        };
        let args = |f: &Path| -> Vec<String> {
            t.args
                .iter()
                .map(|a| {
                    a.replace("{F}", f.to_str().unwrap())
                        .replace("{D}", data.to_str().unwrap())
                })
                .collect()
        };
        // the unmutated seed works
        std::fs::write(&file, &original).unwrap();
        let out = run(&args(&file));
        assert!(
            out.status.success(),
            "seed {}: {}",
            t.seed,
            String::from_utf8_lossy(&out.stderr)
        );
        let answered = std::cell::Cell::new(0);
        let result = runner(CASES).run(&proptest::collection::vec(mutation(), 1..4), |ms| {
            std::fs::write(&file, apply(&original, &ms)).unwrap();
            let code = judge(&run(&args(&file))).map_err(TestCaseError::fail)?;
            answered.set(answered.get() + usize::from(code == 0));
            Ok(())
        });
        std::fs::write(&file, &original).unwrap();
        if let Err(e) = result {
            panic!("{}: {e}", t.seed);
        }
        println!(
            "{}: {} of {CASES} mutations answered",
            t.seed,
            answered.get()
        );
        answers += answered.get();
    }
    // the mutations reach past the parsers: some still describe valid inputs
    assert!(
        answers > TARGETS.len() * CASES as usize / 10,
        "{answers} answers"
    );
}

#[test]
fn parsers_never_panic_on_mutated_text() {
    use copr::plan::{Plan, PlanSpec};
    use copr_cost_models::CostConfig;
    use copr_topology::files::{parse_str, Format};
    use copr_topology::{Placement, TopologyConfig, Torus, TorusParams};
    let data = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data");
    let read = |f: &str| std::fs::read(data.join(f)).unwrap();
    let plans = [read("plans/paper-b5000.toml"), read("plans/submatrix.toml")];
    let placement = read("topology/placement-8.txt");
    let coords = read("topology/torus-4x4x4.coords");
    let topology = read("topology/torus-xe6.toml");
    let cost = read("cost/two-islands.toml");
    // mutations of the seeds, or (which = 6) bytes of noise fed to every parser
    let strategy = (
        0..7usize,
        proptest::collection::vec(mutation(), 1..5),
        proptest::collection::vec(any::<u8>(), 0..512),
    );
    runner(1500)
        .run(&strategy, |(which, ms, noise)| {
            let text = |seed: &[u8]| String::from_utf8_lossy(&apply(seed, &ms)).to_string();
            match which {
                6 => {
                    let noise = String::from_utf8_lossy(&noise).to_string();
                    let _ = toml::from_str::<PlanSpec>(&noise);
                    let _ = serde_json::from_str::<PlanSpec>(&noise);
                    let _ = Placement::parse(&noise, None);
                    let _ = Torus::parse_coords(TorusParams::new(vec![4, 4, 4]), &noise, None);
                    let _ = parse_str::<TopologyConfig>(&noise, Format::Toml, None);
                    let _ = parse_str::<CostConfig>(&noise, Format::Toml, None);
                }
                4 => {
                    if let Ok(c) = parse_str::<TopologyConfig>(&text(&topology), Format::Toml, None)
                    {
                        if let Ok(m) = c.build(&data.join("topology"), Some(64)) {
                            prop_assert_eq!(m.ranks(), 64);
                            let _ = m.summary();
                        }
                    }
                }
                5 => {
                    if let Ok(c) = parse_str::<CostConfig>(&text(&cost), Format::Toml, None) {
                        if let Ok(setup) = c.build(&data.join("cost"), Some(16)) {
                            let _ = setup.model.describe();
                        }
                    }
                }
                0 | 1 => {
                    if let Ok(spec) = toml::from_str::<PlanSpec>(&text(&plans[which])) {
                        if let Ok(plan) = Plan::from_spec(&spec) {
                            let r = plan.report(spec.element_size);
                            prop_assert!(r.remote_after <= r.remote_before);
                            prop_assert!(r.remote_before <= r.total_elements);
                        }
                    }
                }
                2 => {
                    let _ = Placement::parse(&text(&placement), None);
                }
                _ => {
                    let _ =
                        Torus::parse_coords(TorusParams::new(vec![4, 4, 4]), &text(&coords), None);
                }
            }
            Ok(())
        })
        .unwrap();
}
