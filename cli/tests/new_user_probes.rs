//! Inputs a new user gives that no earlier test wrote: byte counts near 2⁶⁴ in a
//! recording, a zero budget with only the optimiser asked for. Each ends in a correct
//! answer (checked against numbers worked out here) or one error line with exit 2.
//! `COPR_TEST_BIN=/path/to/copr` runs them against another build.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::ok;

/// Address-space cap for every `copr` run here: 3 GiB.
const MEMORY_KB: u64 = 3 << 20;

fn copr(args: &[&str]) -> Output {
    common::capped(args, common::root(), MEMORY_KB, Some(120))
}

fn dir() -> PathBuf {
    common::scratch("copr-new-user-probes")
}

fn write(name: &str, text: &str) -> String {
    common::write(&dir(), name, text)
        .to_str()
        .unwrap()
        .to_string()
}

/// A recording of two ranks on two hosts, rank 0 sending rank 1 2⁶⁴ − 1 bytes: every
/// byte count printed is exact (2⁶⁴ − 1 B = 18446744073709.551615 MB, printed
/// .552; the busiest link's bound ⌈(2⁶⁴ − 1) / 2⌉ = 2⁶³ B = 9223372036854.775808 MB,
/// printed .776), where going through f64 printed .551 and .775.
#[test]
fn byte_counts_near_2_64_print_exactly() {
    let max = u64::MAX;
    let rec = write(
        "huge.txt",
        &format!(
            "# copr traffic recording (libcopr_interpose, COPR_RECORD) of 2 ranks of MPI_COMM_WORLD\n\
             # total: 1 messages, {max} bytes\ntasks 2\n# host 0 a\n# host 1 b\n\
             0 1 {max} # 1 messages\n"
        ),
    );
    let out = copr(&["map", "--graph", &rec, "--machine-from-recording"]);
    let (text, _) = ok(&out);
    let packed = text
        .lines()
        .find(|l| l.starts_with("packed "))
        .expect("a packed row");
    let cols: Vec<&str> = packed.split_whitespace().collect();
    // hop-bytes (one hop) and the busiest link, MB
    assert_eq!(cols[1], "18446744073709.552", "{packed}");
    assert_eq!(cols[5], "18446744073709.552", "{packed}");
    assert!(
        text.contains(
            "lower bounds: hop-bytes 18446744073709.552 MB, max link 9223372036854.776 MB"
        ),
        "{text}"
    );
    assert!(
        text.contains("recorded run: hop-bytes 18446744073709.552 MB"),
        "{text}"
    );
    assert!(!text.contains(".551 "), "{text}");
}

/// Byte counts in kB and MB print the exact count's digits, the last one rounded half
/// up: one message from task 0 to task 1 on two nodes (one hop), so the hop-bytes are
/// the message's bytes.
#[test]
fn byte_counts_round_their_last_digit_on_the_exact_count() {
    for (bytes, want) in [
        (999u64, "999"),
        (1_000, "1.000"),
        (4_001_499, "4.001"),
        (4_001_500, "4.002"),
        // through f64: 1000000000000.000 and .566
        (999_999_999_999_999_499, "999999999999.999"),
        (12_345_678_901_234_567_891, "12345678901234.568"),
    ] {
        let g = write(&format!("one-{bytes}.txt"), &format!("0 1 {bytes}\n"));
        let out = copr(&[
            "map",
            "--graph",
            &g,
            "--flat",
            "2",
            "--strategies",
            "packed",
        ]);
        let (text, _) = ok(&out);
        let row = text.lines().find(|l| l.starts_with("packed ")).unwrap();
        let got = row.split_whitespace().nth(1).unwrap();
        assert_eq!(got, want, "{bytes} B: {row}");
    }
}

/// `--budget 0` with only the optimiser asked for: a mapping (the best start), not
/// "none of the strategies applies (skipped: )".
#[test]
fn a_zero_budget_with_only_the_optimiser_still_maps() {
    let rf = dir().join("zero-budget.rankfile");
    let out = copr(&[
        "map",
        "--grid",
        "4x2",
        "--flat",
        "4",
        "--ranks-per-node",
        "2",
        "--budget",
        "0",
        "--strategies",
        "optimised",
        "--rankfile",
        rf.to_str().unwrap(),
    ]);
    let (text, _) = ok(&out);
    assert!(text.lines().any(|l| l.starts_with("optimised ")), "{text}");
    let ranks: Vec<String> = std::fs::read_to_string(&rf)
        .unwrap()
        .lines()
        .map(|l| l.split('=').next().unwrap().to_string())
        .collect();
    let want: Vec<String> = (0..8).map(|r| format!("rank {r}")).collect();
    assert_eq!(ranks, want);
}

/// `ranks_per_node = "4"` in a machine file (a count in quotes: Slurm's list syntax, one
/// node's count) on a machine of 4 nodes: one error line that says how to write 4 on
/// every node, and either way of writing it maps 16 ranks.
#[test]
fn a_quoted_slot_count_says_how_to_write_it() {
    let quoted = write(
        "quoted.toml",
        "ranks_per_node = \"4\"\n[torus]\ndims = [2, 2]\n",
    );
    let out = copr(&["map", "--grid", "4x4", "--machine", &quoted]);
    common::refused(
        &out,
        &[
            "\"4\"",
            "1 slot count for 4 nodes",
            "ranks_per_node = 4",
            "\"4(x4)\"",
        ],
    );
    for text in [
        "ranks_per_node = 4\n[torus]\ndims = [2, 2]\n",
        "ranks_per_node = \"4(x4)\"\n[torus]\ndims = [2, 2]\n",
    ] {
        let m = write("fixed.toml", text);
        let out = copr(&[
            "map",
            "--grid",
            "4x4",
            "--machine",
            &m,
            "--strategies",
            "packed",
        ]);
        let (o, _) = ok(&out);
        assert!(o.contains("4 ranks per node"), "{o}");
    }
}
