//! Fuzzing the surfaces added after the first hardening round: generated absurd
//! machine files, graph files, batch plans, `copr map` flags, `copr plan` layout flags
//! and `copr sweep` options (with absurd cost configs), and a seeded mutation
//! fuzz over every sample file in `data/`. Every run must end in an answer (exit 0, no
//! panic, no `inf` or `NaN` printed) or in exit 2 with one `copr: error:` line — never
//! a signal, a hang or an allocation past the cap: each run is under `ulimit -v`
//! ([`MEMORY_KB`], 4 GiB) and `timeout` ([`SECONDS`]).
//!
//! Seeded: the same cases every run. `COPR_FUZZ_MUTANTS=N` (default 200) and
//! `COPR_FUZZ_ABSURD=N` (default 120) set the number of cases; `scripts/fuzz-surfaces.sh`
//! runs the long version (3000 mutants), whose result is in `benches/RESULTS.md`.

use copr::rng::SplitMix;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

/// Address-space cap of every run: 4 GiB.
const MEMORY_KB: u64 = 4 << 20;
/// Wall-time cap of every run, seconds: a guard against runs that do not end, not a
/// speed target (a 16 777 216-column batch took over 60 s on a loaded 2-core machine
/// and about 5 s on a quiet one).
const SECONDS: u32 = 120;

/// The seeded generator, with a pick from a list of words.
struct Rng(SplitMix);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

fn cases(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run(args: &[String], dir: &Path) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::capped(&args, dir, MEMORY_KB, Some(SECONDS))
}

/// `Ok(exit code)` for an answer (0) or a one-line refusal (2), else what is wrong.
/// `echoed`: the input holds the words `inf` or `nan` itself (a description can say
/// them back), so they are not taken for computed numbers.
fn judge(out: &Output, echoed: bool) -> Result<i32, String> {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) if err.contains("panicked") => Err(format!("a panic: {err}")),
        Some(0) if echoed => Ok(0),
        Some(0) => {
            let bad = text
                .split(|c: char| !c.is_ascii_alphanumeric())
                .find(|w| matches!(*w, "inf" | "NaN" | "nan" | "Infinity"));
            match bad {
                Some(w) => Err(format!("printed {w:?}: {text}")),
                None => Ok(0),
            }
        }
        Some(2) if err.starts_with("copr: error: ") && err.trim_end().lines().count() == 1 => Ok(2),
        _ => Err(format!("status {:?}, stderr: {err}", out.status)),
    }
}

fn data() -> PathBuf {
    common::root().join("data")
}

/// Every sample file in `data/` and a command that reads it: `{F}` is the mutant, `{D}`
/// the data copy. `in_place`: the file is read through another file's reference, so
/// the mutant replaces it; else it is written beside it as `fuzz-<name>`.
const SAMPLES: &[(&str, bool, &[&str])] = &[
    (
        "plans/cannon-preskew.toml",
        false,
        &["plan", "{F}", "--json"],
    ),
    ("plans/gemm-summa.toml", false, &["plan", "{F}", "--json"]),
    (
        "plans/grid-to-subset.json",
        false,
        &["plan", "{F}", "--json"],
    ),
    ("plans/paper-b5000.toml", false, &["plan", "{F}", "--json"]),
    ("plans/paper-b7500.toml", false, &["plan", "{F}", "--json"]),
    (
        "plans/scalapack-32-to-128.toml",
        false,
        &["plan", "{F}", "--json"],
    ),
    (
        "plans/submatrix.toml",
        false,
        &["plan", "{F}", "--cost", "{D}/cost/two-islands.toml"],
    ),
    ("cost/calibrated.json", false, &["topo", "{F}", "--json"]),
    ("cost/dragonfly.toml", false, &["topo", "{F}"]),
    ("cost/fat-tree.toml", false, &["topo", "{F}"]),
    (
        "cost/single-node.toml",
        false,
        &["plan", "{D}/plans/submatrix.toml", "--cost", "{F}"],
    ),
    (
        "cost/torus-3d-spread.toml",
        false,
        &[
            "plan",
            "{D}/plans/submatrix.toml",
            "--cost",
            "{F}",
            "--json",
        ],
    ),
    (
        "cost/torus-3d.toml",
        false,
        &["plan", "{D}/plans/submatrix.toml", "--cost", "{F}"],
    ),
    ("cost/two-islands.toml", false, &["topo", "{F}"]),
    (
        "cost/volume.toml",
        false,
        &[
            "plan",
            "{D}/plans/submatrix.toml",
            "--cost",
            "{F}",
            "--json",
        ],
    ),
    (
        "graphs/halo-4x8.txt",
        false,
        &[
            "map",
            "--graph",
            "{F}",
            "--flat",
            "8",
            "--ranks-per-node",
            "4",
            "--budget",
            "0.2",
        ],
    ),
    (
        "graphs/recorded-halo-8.txt",
        false,
        &[
            "map",
            "--graph",
            "{F}",
            "--machine-from-recording",
            "--budget",
            "0.2",
        ],
    ),
    (
        "machines/dragonfly.toml",
        false,
        &[
            "map",
            "--grid",
            "20x32",
            "--machine",
            "{F}",
            "--budget",
            "0.2",
            "--json",
        ],
    ),
    (
        "machines/fat-tree-k4.toml",
        false,
        &[
            "map",
            "--grid",
            "16x16",
            "--machine",
            "{F}",
            "--budget",
            "0.2",
        ],
    ),
    (
        "machines/scattered-4x4x4.toml",
        false,
        &[
            "map",
            "--grid",
            "4x8",
            "--machine",
            "{F}",
            "--budget",
            "0.2",
            "--json",
        ],
    ),
    (
        "machines/scattered-4x4x4.coords",
        true,
        &[
            "map",
            "--grid",
            "4x8",
            "--machine",
            "{D}/machines/scattered-4x4x4.toml",
            "--budget",
            "0.2",
        ],
    ),
    (
        "machines/torus-4x4x4.toml",
        false,
        &[
            "map",
            "--grid",
            "32x32",
            "--machine",
            "{F}",
            "--budget",
            "0.2",
            "--json",
        ],
    ),
    (
        "machines/xe6-8x8x8.toml",
        false,
        &[
            "map",
            "--grid",
            "64x128",
            "--machine",
            "{F}",
            "--strategies",
            "packed,cp2k,optimised",
            "--budget",
            "0.2",
        ],
    ),
    (
        "topology/torus-xe6.toml",
        false,
        &["topo", "{F}", "--ranks", "64"],
    ),
    (
        "topology/torus-4x4x4.coords",
        true,
        &[
            "topo",
            "{D}/topology/torus-xe6.toml",
            "--ranks",
            "64",
            "--json",
        ],
    ),
    (
        "topology/two-islands.net.toml",
        true,
        &["topo", "{D}/cost/two-islands.toml", "--json"],
    ),
    (
        "topology/fat-tree-k4.net.toml",
        true,
        &[
            "map",
            "--grid",
            "16x16",
            "--machine",
            "{D}/machines/fat-tree-k4.toml",
            "--budget",
            "0.2",
        ],
    ),
    (
        "topology/dragonfly-g5a4p2.net.toml",
        true,
        &["topo", "{D}/cost/dragonfly.toml"],
    ),
    (
        "topology/calibration-4.json",
        true,
        &["topo", "{D}/cost/calibrated.json"],
    ),
    (
        "topology/calibrated-4.toml",
        true,
        &[
            "map",
            "--grid",
            "2x2",
            "--machine",
            "{D}/topology/calibrated-4.toml",
            "--budget",
            "0.2",
        ],
    ),
    (
        "topology/calibrated-4.placement",
        true,
        &["topo", "{D}/topology/calibrated-4.toml"],
    ),
    (
        "topology/placement-8.txt",
        true,
        &["topo", "{D}/topology/placed.toml"],
    ),
    (
        "sweep-paper.toml",
        false,
        &[
            "sweep", "--config", "{F}", "--blocks", "100,1000", "--json", "--no-svg",
        ],
    ),
];

/// Files of `data/` no command reads by itself: documentation, and the hwloc XML
/// (read only with the `hwloc` feature).
const NOT_INPUTS: &[&str] = &[
    "cost/README.md",
    "topology/README.md",
    "topology/interlagos-like.xml",
];

/// Numbers that have broken things, and ordinary ones.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "7",
    "64",
    "1000",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "16777216",
    "16777217",
    "1e308",
    "5e-324",
    "1e-300",
    "nan",
    "inf",
    "-0.0",
    "0.5",
    "1e400",
];

/// One seeded mutant of `text`: 1–3 of truncation, a number replaced, a byte
/// overwritten (control characters and quotes among them), a line deleted or doubled.
fn mutate(text: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut t = text.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(10) {
            0 => t.truncate(rng.below(t.len().max(1))),
            1..=5 => {
                let runs = common::digit_runs(&t);
                if !runs.is_empty() {
                    let (s, e) = runs[rng.below(runs.len())];
                    let n = rng.pick(NUMBERS);
                    t.splice(s..e, n.bytes());
                }
            }
            6 => {
                if !t.is_empty() {
                    let i = rng.below(t.len());
                    let b = [0x01, 0x1b, b'\n', b'"', b'[', b'{', b'\\', 0xff][rng.below(8)];
                    t[i] = b;
                }
            }
            7 | 8 => {
                let lines: Vec<&[u8]> = t.split(|&c| c == b'\n').collect();
                let k = rng.below(lines.len());
                let double = rng.below(2) == 0;
                let mut out: Vec<&[u8]> = Vec::new();
                for (i, l) in lines.iter().enumerate() {
                    if i != k || double {
                        out.push(l);
                    }
                    if i == k && double {
                        out.push(l);
                    }
                }
                t = out.join(&b'\n');
            }
            _ => {
                // a doubled file: every table and key twice
                let copy = t.clone();
                t.push(b'\n');
                t.extend(copy);
            }
        }
    }
    t
}

fn expand(args: &[&str], file: &Path, data: &Path) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.replace("{F}", file.to_str().unwrap())
                .replace("{D}", data.to_str().unwrap())
        })
        .collect()
}

/// Every sample file of `data/` is a seed (a new sample file must be added above).
#[test]
fn every_sample_file_is_a_seed() {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_str().unwrap().to_string());
            }
        }
    }
    let mut files = Vec::new();
    walk(&data(), &data(), &mut files);
    for f in files {
        assert!(
            SAMPLES.iter().any(|s| s.0 == f) || NOT_INPUTS.contains(&f.as_str()),
            "{f}: no fuzz command reads it"
        );
    }
}

#[test]
fn mutated_sample_files_end_in_an_answer_or_one_error_line() {
    let data = common::data_copy("copr-fuzz-surfaces");
    let total = cases("COPR_FUZZ_MUTANTS", 200);
    let mut rng = Rng(SplitMix(0x0063_6f70_7220_3330));
    let mut failures = Vec::new();
    let mut answers = 0;
    // the seeds themselves are answered (a seed that needs a cargo feature this build
    // lacks — hwloc — is refused in one line and left out)
    let mut usable = Vec::new();
    for &(seed, in_place, args) in SAMPLES {
        let path = data.join(seed);
        let out = run(&expand(args, &path, &data), &data);
        match judge(&out, false) {
            Ok(0) => usable.push((seed, in_place, args)),
            Ok(_) => println!(
                "seed {seed} left out: {}",
                String::from_utf8_lossy(&out.stderr).trim_end()
            ),
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    assert!(
        usable.len() + 2 >= SAMPLES.len(),
        "{} usable seeds",
        usable.len()
    );
    for case in 0..total {
        let (seed, in_place, args) = usable[case % usable.len()];
        let path = data.join(seed);
        let original = std::fs::read(&path).unwrap();
        let mutant = mutate(&original, &mut rng);
        let file = if in_place {
            path.clone()
        } else {
            path.with_file_name(format!(
                "fuzz-{}",
                path.file_name().unwrap().to_str().unwrap()
            ))
        };
        std::fs::write(&file, &mutant).unwrap();
        let out = run(&expand(args, &file, &data), &data);
        std::fs::write(&path, &original).unwrap();
        let lower = String::from_utf8_lossy(&mutant).to_ascii_lowercase();
        match judge(&out, lower.contains("inf") || lower.contains("nan")) {
            Ok(code) => answers += usize::from(code == 0),
            Err(e) => failures.push(format!(
                "case {case}, {seed}: {e}\n  mutant: {:?}",
                String::from_utf8_lossy(&mutant)
                    .chars()
                    .take(600)
                    .collect::<String>()
            )),
        }
    }
    println!(
        "{total} mutants: {answers} answered, the rest refused; {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // the mutants reach past the parsers: some still describe valid inputs
    assert!(answers * 10 > total, "{answers} answers of {total}");
}

/// One generated absurd input: the arguments, and the file (name, text) they read.
fn absurd(rng: &mut Rng, dir: &Path, k: usize) -> Vec<String> {
    let big = [
        "0",
        "1",
        "2",
        "3",
        "4096",
        "65536",
        "16777216",
        "16777217",
        "4294967296",
        "9223372036854775807",
        "18446744073709551615",
    ];
    let floats = [
        "5e-324", "1e308", "1e-300", "0", "-1", "nan", "inf", "1e9", "1e-9", "1e30", "1e31",
    ];
    let texts = [
        "a\\u0001",
        "b\\u001b[31m",
        "x\\ny",
        "nid[0-99999999999]",
        "nid[00001-00004]",
        "",
    ];
    let file = |name: String, text: String| -> String {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let s = |x: &str| x.to_string();
    // a cost config with absurd numbers, for `plan --cost` and `sweep --cost`
    // mostly a sane cost, else an absurd one
    let price = |rng: &mut Rng| {
        if rng.below(3) == 0 {
            rng.pick(&floats)
        } else {
            rng.pick(&["1e-6", "2.5e-10", "1e9", "1"])
        }
    };
    let cost = |rng: &mut Rng, k: usize| -> String {
        let mut t = format!(
            "[[terms]]\nmodel = \"{}\"\nweight = {}\n",
            rng.pick(&["latency-bandwidth", "volume", "transform", "locality"]),
            price(rng)
        );
        for level in ["intra", "inter"] {
            t.push_str(&format!(
                "[topology.{level}]\nkind = \"uniform\"\nlatency = {}\nbandwidth = {}\n",
                price(rng),
                price(rng)
            ));
        }
        t.push_str(&format!(
            "[topology.placement]\nrule = \"{}\"\nranks = {}\nranks_per_node = {}\n",
            rng.pick(&["packed", "packed", "round-robin", "spread"]),
            rng.pick(&big),
            rng.pick(&big)
        ));
        file(format!("cost-{k}.toml"), t)
    };
    // grid sides and block sizes: at most 64 x 64 ranks answer (a 4096 x 4096 grid
    // is refused or takes seconds; the batches above try those)
    let side = [
        "0",
        "1",
        "2",
        "3",
        "64",
        "4294967296",
        "18446744073709551615",
    ];
    let size = ["0", "1", "7", "64", "1000", "65536", "4294967296", "-1"];
    // mostly a sane value, so that most layouts are valid and the rest of the input
    // is reached; else an absurd one
    let side = |rng: &mut Rng| {
        if rng.below(4) == 0 {
            rng.pick(&side)
        } else {
            rng.pick(&["1", "2", "3", "4", "8"])
        }
    };
    let size = |rng: &mut Rng| {
        if rng.below(4) == 0 {
            rng.pick(&size)
        } else {
            rng.pick(&["1", "5", "32", "100", "1000", "100000"])
        }
    };
    match k % 6 {
        // a machine file
        0 => {
            let ndims = 1 + rng.below(9);
            let dims: Vec<&str> = (0..ndims)
                .map(|_| rng.pick(&["1", "2", "3", "4", "0", "4294967296", "65536"]))
                .collect();
            let mut t = format!(
                "description = \"{}\"\nranks_per_node = {}\n",
                rng.pick(&texts),
                rng.pick(&big)
            );
            if rng.below(2) == 0 {
                t.push_str(&format!("nodes = \"{}\"\n", rng.pick(&texts)));
            }
            match rng.below(3) {
                0 => t.push_str(&format!("[flat]\nnodes = {}\n", rng.pick(&big))),
                _ => {
                    t.push_str(&format!("[torus]\ndims = [{}]\n", dims.join(", ")));
                    if rng.below(2) == 0 {
                        let bw: Vec<&str> = (0..ndims).map(|_| rng.pick(&floats)).collect();
                        t.push_str(&format!("link_bandwidth = [{}]\n", bw.join(", ")));
                    }
                }
            }
            let m = file(format!("machine-{k}.toml"), t);
            let grid = rng.pick(&["4", "81x81", "16x16", "4096x4096", "3x3x3x3", "1"]);
            let xml = dir
                .join(format!("machine-{k}.xml"))
                .to_str()
                .unwrap()
                .to_string();
            vec![
                s("map"),
                s("--grid"),
                s(grid),
                s("--machine"),
                m,
                s("--budget"),
                s("0.3"),
                s("--smpi-platform"),
                xml,
            ]
        }
        // a graph file
        1 => {
            let mut t = String::new();
            if rng.below(2) == 0 {
                t.push_str(&format!("tasks {}\n", rng.pick(&big)));
            }
            for _ in 0..1 + rng.below(6) {
                t.push_str(&format!(
                    "{} {} {}\n",
                    rng.pick(&big),
                    rng.pick(&big),
                    rng.pick(&big)
                ));
            }
            let g = file(format!("graph-{k}.txt"), t);
            vec![
                s("map"),
                s("--graph"),
                g,
                s("--flat"),
                s(rng.pick(&big)),
                s("--ranks-per-node"),
                s(rng.pick(&["1", "4", "4096", "16777216"])),
                s("--budget"),
                s("0.3"),
            ]
        }
        // a batch plan
        2 => {
            let mut t = String::new();
            for _ in 0..1 + rng.below(5) {
                let n = rng.pick(&["1", "64", "4096", "16777216", "4294967296"]);
                let p = rng.pick(&["1", "2", "64", "4096", "16777216"]);
                t.push_str(&format!(
                    "[[transform]]\nname = \"{}\"\nelement_size = {}\n[transform.source]\nkind = \"block-cyclic\"\nm = 1\nn = {n}\nmb = 1\nnb = {}\nnprow = 1\nnpcol = {p}\n[transform.target]\nkind = \"block-cyclic\"\nm = 1\nn = {n}\nmb = 1\nnb = 1\nnprow = 1\nnpcol = {p}\ngrid_order = \"col-major\"\n",
                    rng.pick(&texts),
                    rng.pick(&["1", "8", "0", "18446744073709551615"]),
                    rng.pick(&["1", "64", n]),
                ));
            }
            let f = file(format!("batch-{k}.toml"), t);
            vec![s("plan"), f, s("--json")]
        }
        // `copr plan` with layouts given as flags
        3 => {
            let mut a = vec![s("plan")];
            let transpose = rng.below(3) == 0;
            let (m, n) = (size(rng), size(rng));
            // the target is op(source)'s shape, or now and then another
            let target = if transpose {
                (n, m)
            } else if rng.below(4) == 0 {
                (size(rng), size(rng))
            } else {
                (m, n)
            };
            for (flag, (m, n)) in [("--source", (m, n)), ("--target", target)] {
                let mut l = format!(
                    "block-cyclic:m={m},n={n},mb={},nb={},nprow={},npcol={}",
                    size(rng),
                    size(rng),
                    side(rng),
                    side(rng)
                );
                match rng.below(4) {
                    0 => l.push_str(&format!(",rsrc={}", side(rng))),
                    1 => l.push_str(&format!(",submatrix={{ia={},ja=0,m=1,n=1}}", size(rng))),
                    2 => l.push_str(&format!(",ranks={}", rng.pick(&big))),
                    _ => {}
                }
                a.extend([s(flag), l]);
            }
            if transpose {
                a.extend([s("--op"), s(rng.pick(&["transpose", "conj-transpose"]))]);
            }
            if rng.below(2) == 0 {
                a.extend([s("--element-size"), s(rng.pick(&big))]);
            }
            if rng.below(2) == 0 {
                a.extend([s("--cost"), cost(rng, k)]);
            }
            a.push(s("--json"));
            a
        }
        // `copr sweep`
        4 => {
            let blocks: Vec<&str> = (0..1 + rng.below(3)).map(|_| size(rng)).collect();
            let mut a = vec![
                s("sweep"),
                s("--m"),
                s(size(rng)),
                s("--n"),
                s(size(rng)),
                s("--nprow"),
                s(side(rng)),
                s("--npcol"),
                s(side(rng)),
                s("--target-block"),
                s(size(rng)),
                s("--blocks"),
                blocks.join(","),
                s("--json"),
                s("--no-svg"),
            ];
            if rng.below(2) == 0 {
                a.extend([s("--cost"), cost(rng, k)]);
            }
            a
        }
        // flags
        _ => {
            let mut a = vec![s("map")];
            match rng.below(3) {
                0 => a.extend([
                    s("--grid"),
                    s(rng.pick(&[
                        "4x4",
                        "0x4",
                        "4294967296",
                        "x",
                        "16x16",
                        "99999999999999999999",
                    ])),
                ]),
                1 => a.extend([s("--graph"), s("data/graphs/halo-4x8.txt")]),
                _ => a.extend([s("--plan"), s("data/plans/submatrix.toml")]),
            }
            match rng.below(3) {
                0 => a.extend([
                    s("--torus"),
                    s(rng.pick(&["4x4", "2x2x2x2", "0", "3x3x3x3x3x3x3x3", "65536x65536"])),
                ]),
                1 => a.extend([s("--flat"), s(rng.pick(&big))]),
                _ => a.extend([s("--network"), s("data/topology/two-islands.net.toml")]),
            }
            for _ in 0..rng.below(4) {
                match rng.below(7) {
                    0 => a.extend([s("--link-bandwidth"), s(rng.pick(&floats))]),
                    1 => a.extend([s("--bytes"), s(rng.pick(&big))]),
                    2 => a.push(s("--open")),
                    3 => a.extend([s("--ranks-per-node"), s(rng.pick(&big))]),
                    4 => a.extend([
                        s("--budget"),
                        s(rng.pick(&["0", "0.1", "-1", "nan", "1e300"])),
                    ]),
                    5 => a.extend([s("--nodes"), s(rng.pick(&texts))]),
                    _ => a.extend([
                        s("--node-shape"),
                        s(rng.pick(&["pack:2 core:8", "core:0", "pack:65536 core:65536"])),
                    ]),
                }
            }
            a
        }
    }
}

#[test]
fn absurd_machines_graphs_batches_and_flags() {
    let dir = std::env::temp_dir().join(format!("copr-absurd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).to_path_buf();
    let total = cases("COPR_FUZZ_ABSURD", 120);
    let mut rng = Rng(SplitMix(0x6162_7375_7264));
    let mut failures = Vec::new();
    let mut answers = 0;
    for k in 0..total {
        let args = absurd(&mut rng, &dir, k);
        let out = run(&args, &root);
        let said = args.join(" ").to_ascii_lowercase();
        let files: String = args
            .iter()
            .filter_map(|a| std::fs::read_to_string(a).ok())
            .collect::<String>()
            .to_ascii_lowercase();
        let echoed = [said, files]
            .iter()
            .any(|t| t.contains("inf") || t.contains("nan"));
        match judge(&out, echoed) {
            Ok(code) => answers += usize::from(code == 0),
            Err(e) => failures.push(format!("case {k}: copr {}: {e}", args.join(" "))),
        }
    }
    println!(
        "{total} absurd inputs: {answers} answered, the rest refused; {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
