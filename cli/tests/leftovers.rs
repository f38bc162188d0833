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
    let map = |b: &str| {
        copr(&[
            "map",
            "--graph",
            &g,
            "--flat",
            "4",
            "--ranks-per-node",
            "4",
            "--budget",
            b,
        ])
    };
    for b in ["1e300", "86401", "inf", "NaN", "-1"] {
        let out = map(b);
        refused(&out, &["--budget", "86400"]);
        let cal = dir().join("cal.toml");
        let out = copr(&["calibrate", "--budget", b, "--out", cal.to_str().unwrap()]);
        refused(&out, &["--budget", "86400"]);
        assert!(!cal.exists(), "calibrate --budget {b} wrote {cal:?}");
    }
    for b in ["0", "86400"] {
        let out = map(b);
        let (o, _) = ok(&out);
        assert!(o.contains("exported:"), "--budget {b}: {o}");
    }
}

/// The two-islands network of `data/` with one more host, `stray`, linked to nothing.
fn stray_network() -> String {
    let text = std::fs::read_to_string(common::root().join("data/topology/two-islands.net.toml"))
        .unwrap()
        .replace("\"b3\"]", "\"b3\", \"stray\"]");
    assert!(text.contains("stray"));
    write("stray.net.toml", &text)
}

/// `copr topo FILE`'s standard output from its fourth line on (the inter-node line
/// and the pair classes), and its third.
fn topo_tail(file: &str) -> (String, String) {
    let (o, _) = ok(&copr(&["topo", file]));
    let lines: Vec<&str> = o.lines().collect();
    (lines[3..].join("\n"), lines[3].to_string())
}

/// Only the hosts used must reach each other, in the long form (`[inter] kind =
/// "network"`, nodes from `[placement]`) as in the short form (`[network] hosts`):
/// a host linked to nothing that no rank uses is no error, the costs are the short
/// form's for the same hosts, and a used host cut off still is an error.
#[test]
fn a_network_needs_only_the_hosts_used_to_reach_each_other() {
    stray_network();
    let long = write(
        "long.toml",
        "[inter]\nkind = \"network\"\nfile = \"stray.net.toml\"\n[placement]\nrule = \"packed\"\nranks = 8\nranks_per_node = 2\nnodes = [\"b0\", \"a1\", \"a0\", \"b2\"]\n",
    );
    let short = write(
        "short.toml",
        "ranks_per_node = 2\n[network]\nfile = \"stray.net.toml\"\nhosts = \"b0,a1,a0,b2\"\n",
    );
    let (l, _) = topo_tail(&long);
    let (s, _) = topo_tail(&short);
    assert_eq!(l, s, "long form:\n{l}\nshort form:\n{s}");
    // 3 hops between the islands, 2 inside one: both kinds of pair are there
    assert!(
        l.contains("other node, 3 hops") && l.contains("other node, 2 hops"),
        "{l}"
    );
    // the rule without names packs onto the first hosts: a0 .. a3
    let first = write(
        "first.toml",
        "[inter]\nkind = \"network\"\nfile = \"stray.net.toml\"\n[placement]\nrule = \"packed\"\nranks = 8\nranks_per_node = 2\n",
    );
    let (f, _) = topo_tail(&first);
    assert!(
        f.contains("other node, 2 hops") && !f.contains("3 hops"),
        "{f}"
    );
    // a placement file on a0 and b1 only
    write("pl.txt", "0 a0\n1 a0\n2 b1\n3 b1\n");
    let placed = write(
        "placed.toml",
        "[inter]\nkind = \"network\"\nfile = \"stray.net.toml\"\n[placement]\nrule = \"file\"\nfile = \"pl.txt\"\n",
    );
    let (p, _) = topo_tail(&placed);
    assert!(p.contains("2 of 9 hosts"), "{p}");
    // a used host without a path is still refused
    write("cut.txt", "0 a0\n1 stray\n");
    let cut = write(
        "cut.toml",
        "[inter]\nkind = \"network\"\nfile = \"stray.net.toml\"\n[placement]\nrule = \"file\"\nfile = \"cut.txt\"\n",
    );
    refused(&copr(&["topo", &cut]), &["no path", "stray"]);
}

/// `copr topo` on a host selection counts the hosts selected, and the hosts left out
/// apart from the switches: 4 of the 9 hosts, and the file's 2 switches.
#[test]
fn topo_on_a_host_selection_says_what_was_selected() {
    stray_network();
    let short = write(
        "selected.toml",
        "ranks_per_node = 2\n[network]\nfile = \"stray.net.toml\"\nhosts = \"a[0-1],b[0-1]\"\n",
    );
    let (_, inter) = topo_tail(&short);
    assert!(
        inter.contains("4 of 9 hosts") && inter.contains(", 2 switches,"),
        "{inter}"
    );
    // the whole network: no selection, the old words
    let whole = common::root().join("data/topology/two-islands.net.toml");
    let whole_cfg = write(
        "whole.toml",
        &format!(
            "ranks_per_node = 2\n[network]\nfile = \"{}\"\n",
            whole.display()
        ),
    );
    let (_, inter) = topo_tail(&whole_cfg);
    assert!(inter.contains(": 8 hosts, 2 switches,"), "{inter}");
}
