//! Inputs a demanding user gives that earlier rounds left open: absurd budgets, host
//! selections of network files, the files of a recorded run read back, and export and
//! rank-order paths. Each ends in a correct answer or one error line with exit 2.
//! `COPR_TEST_BIN=/path/to/copr` runs them against another build.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{ok, refused};

/// Address-space cap for every `copr` run here: 3 GiB.
const MEMORY_KB: u64 = 3 << 20;

fn copr(args: &[&str]) -> Output {
    common::capped(args, common::root(), MEMORY_KB, Some(120))
}

fn dir() -> PathBuf {
    common::scratch("copr-leftovers")
}

fn write(name: &str, text: &str) -> String {
    common::write(&dir(), name, text)
        .to_str()
        .unwrap()
        .to_string()
}

/// A ring of 16 tasks as an edge list.
fn ring16() -> String {
    let text: String = (0..16)
        .map(|i| format!("{i} {} 1000\n", (i + 1) % 16))
        .collect();
    write("ring16.txt", &text)
}

/// `--budget` beyond a day (1e300, inf), NaN, negative: refused by `copr map` and by
/// `copr calibrate` (whose every step is finite, so 1e300 only printed absurd
/// deadlines); 0 and one day are accepted by `map`.
#[test]
fn absurd_budgets_are_refused_by_every_command() {
    let g = ring16();
    for b in ["1e300", "86401", "inf", "NaN", "-1"] {
        let out = copr(&[
            "map",
            "--graph",
            &g,
            "--flat",
            "4",
            "--ranks-per-node",
            "4",
            "--budget",
            b,
        ]);
        refused(&out, &["--budget", "86400"]);
        let cal = dir().join("cal.toml");
        let out = copr(&["calibrate", "--budget", b, "--out", cal.to_str().unwrap()]);
        refused(&out, &["--budget", "86400"]);
        assert!(!cal.exists(), "calibrate --budget {b} wrote {cal:?}");
    }
    for b in ["0", "86400"] {
        let out = copr(&[
            "map",
            "--graph",
            &g,
            "--flat",
            "4",
            "--ranks-per-node",
            "4",
            "--budget",
            b,
        ]);
        let (o, _) = ok(&out);
        assert!(o.contains("exported:"), "--budget {b}: {o}");
    }
}
