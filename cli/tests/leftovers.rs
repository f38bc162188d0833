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

/// `copr map` of the recording `rec` onto its own hosts, with `extra` arguments.
fn from_recording(rec: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "map",
        "--graph",
        rec,
        "--machine-from-recording",
        "--budget",
        "0.2",
    ];
    args.extend_from_slice(extra);
    copr(&args)
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

/// A machine file `TAG.toml`: `head`, then `[placement]` from the file `TAG.txt` of
/// `lines`.
fn placed_by_file(tag: &str, lines: &str, head: &str) -> String {
    write(&format!("{tag}.txt"), lines);
    write(
        &format!("{tag}.toml"),
        &format!("{head}[placement]\nrule = \"file\"\nfile = \"{tag}.txt\"\n"),
    )
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
    let net = "[inter]\nkind = \"network\"\nfile = \"stray.net.toml\"\n";
    let placed = placed_by_file("placed", "0 a0\n1 a0\n2 b1\n3 b1\n", net);
    let (p, _) = topo_tail(&placed);
    assert!(p.contains("2 of 9 hosts"), "{p}");
    // a used host without a path is still refused
    let cut = placed_by_file("cut", "0 a0\n1 stray\n", net);
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

/// `copr plan --cost` of one element moving between two of 2 000 000 ranks (one rank
/// a node, latency + bandwidth costs) within a 700 MiB address space: the node names,
/// the packages by target and the column generation's rows take a few words a rank
/// (about 400 bytes a rank before, which aborted here; at 16 000 000 ranks, within
/// the 2²⁴ limit, 6.3 GB). The relabeling is found and proved exact.
#[test]
fn plan_cost_at_millions_of_ranks_takes_a_few_words_a_rank() {
    let ranks = 2_000_000;
    let grid = |owner: usize| {
        format!("kind = \"grid\"\nrow_splits = [0, 1]\ncol_splits = [0, 1]\nowners = [[{owner}]]\nranks = {ranks}\n")
    };
    let plan = write(
        "big-plan.toml",
        &format!("[source]\n{}[target]\n{}", grid(0), grid(1)),
    );
    let cost = write(
        "big-cost.toml",
        &format!(
            "[[terms]]\nmodel = \"latency-bandwidth\"\n[topology.intra]\nkind = \"uniform\"\nlatency = 4.0e-7\nbandwidth = 1.0e10\n[topology.inter]\nkind = \"uniform\"\nlatency = 2.0e-6\nbandwidth = 1.0e10\n[topology.placement]\nrule = \"packed\"\nranks = {ranks}\nranks_per_node = 1\n"
        ),
    );
    let out = common::capped(
        &["plan", &plan, "--cost", &cost],
        common::root(),
        700 << 10,
        Some(300),
    );
    let (o, _) = ok(&out);
    // the element's move costs 2 µs + 8 B / 10 GB/s; relabeling removes it
    assert!(o.contains("cost before      2.000800e-6 s"), "{o}");
    assert!(o.contains("cost after       0.000000e0 s"), "{o}");
    assert!(o.contains("exact"), "{o}");
}

/// A placement file's PU beyond 32 bits is named as given (it wrapped onto PU 0).
#[test]
fn a_pu_beyond_32_bits_is_refused_as_given() {
    let tree = "[intra]\nkind = \"tree\"\nshape = \"core:4\"\n";
    let cfg = placed_by_file("pu", "0 n0 4294967296\n1 n0 1\n", tree);
    refused(&copr(&["topo", &cfg]), &["pu.txt:1", "4294967296"]);
}

/// `copr map` of a 4 x 2 grid writing a rankfile to `rankfile` and MPICH_RANK_ORDER to
/// `order`.
fn grid_exports(rankfile: &str, order: &str) -> Output {
    copr(&[
        "map",
        "--grid",
        "4x2",
        "--flat",
        "2",
        "--ranks-per-node",
        "4",
        "--budget",
        "0.2",
        "--rankfile",
        rankfile,
        "--mpich-rank-order",
        order,
    ])
}

/// An export onto the graph it maps, or two exports onto one file: refused before
/// anything is written (the rankfile replaced the recording it came from); several
/// exports to `/dev/null` stay allowed.
#[test]
fn exports_onto_an_input_or_onto_each_other_are_refused() {
    let rec = common::root().join("data/graphs/recorded-halo-8.txt");
    let text = std::fs::read_to_string(&rec).unwrap();
    let g = write("recording.txt", &text);
    let out = copr(&[
        "map",
        "--graph",
        &g,
        "--machine-from-recording",
        "--budget",
        "0.2",
        "--rankfile",
        &g,
    ]);
    refused(&out, &["--rankfile", "--graph"]);
    assert_eq!(
        std::fs::read_to_string(&g).unwrap(),
        text,
        "the recording changed"
    );
    let same = dir().join("same.txt");
    let _ = std::fs::remove_file(&same);
    let s = same.to_str().unwrap();
    // the same file by two spellings
    let dotted = format!("{}/./same.txt", dir().display());
    let out = grid_exports(s, &dotted);
    refused(&out, &["--mpich-rank-order", "--rankfile"]);
    assert!(!same.exists(), "a refused run wrote {s}");
    let out = grid_exports("/dev/null", "/dev/null");
    ok(&out);
}

/// Host names a launcher file cannot carry (`=` ends a rankfile's host, `#` starts a
/// comment in a rankfile and a host list): from a network file's hosts, a machine
/// file's `nodes` and a recording's `# host` lines, refused before anything is written
/// when a rankfile or `SLURM_HOSTFILE` is asked for; the same machine without those
/// exports still maps, and renaming the hosts with `nodes =` makes the exports right.
#[test]
fn host_names_the_launcher_files_cannot_carry_are_refused() {
    let g = write("pair.txt", "0 1 1000\n");
    let net = write(
        "odd-hosts.net.toml",
        "name = \"odd\"\nhosts = [\"h=0\", \"h#1\"]\nswitches = [\"s\"]\n\
         [defaults]\nlatency = 1e-6\nbandwidth = 1e9\n\
         [[links]]\na = \"h=0\"\nb = \"s\"\n[[links]]\na = \"h#1\"\nb = \"s\"\n",
    );
    let rf = dir().join("odd.rankfile");
    let _ = std::fs::remove_file(&rf);
    let rf_s = rf.to_str().unwrap();
    let run = |machine: &[&str], export: &[&str]| {
        let mut args = vec!["map", "--graph", &g, "--budget", "0.2"];
        args.extend_from_slice(machine);
        args.extend_from_slice(export);
        copr(&args)
    };
    // the network's own host names
    for export in [["--rankfile", rf_s], ["--slurm-hostfile", rf_s]] {
        let out = run(&["--network", &net], &export);
        refused(&out, &["`h=0`", "--nodes"]);
        assert!(!rf.exists(), "a refused run wrote {rf_s}");
    }
    ok(&run(&["--network", &net], &[]));
    // renamed by a machine file's `nodes`: the exports name the new names
    let renamed = write(
        "odd-renamed.toml",
        &format!(
            "nodes = [\"a\", \"b\"]\n[network]\nfile = \"{}\"\n",
            net.replace('\\', "/")
        ),
    );
    ok(&run(&["--machine", &renamed], &["--rankfile", rf_s]));
    let text = std::fs::read_to_string(&rf).unwrap();
    let mut hosts: Vec<&str> = text
        .lines()
        .map(|l| l.split(['=', ' ']).nth(2).unwrap())
        .collect();
    hosts.sort_unstable();
    assert_eq!(hosts, ["a", "b"], "{text}");
    // a machine file's names, and a recording's hosts
    let named = write(
        "odd-named.toml",
        "ranks_per_node = 1\nnodes = [\"a\", \"x#y\"]\n[flat]\nnodes = 2\n",
    );
    refused(&run(&["--machine", &named], &[]), &["`x#y`"]);
    let rec = write(
        "odd-recording.txt",
        "tasks 2\n# host 0 n1\n# host 1 n=2\n0 1 1000 # 1 messages\n",
    );
    let out = from_recording(&rec, &["--rankfile", rf_s]);
    refused(&out, &["`n=2`"]);
}

/// Nodes of different slot counts: the report counts the slots the nodes have, not
/// the places a node of fewer slots lacks (2 + 4 + 1 = 7 slots, not 3 x 4 = 12).
#[test]
fn a_partly_filled_machine_of_uneven_nodes_counts_its_real_slots() {
    let g = write("ring5.txt", "0 1 100\n1 2 100\n2 3 100\n3 4 100\n4 0 100\n");
    let hosts = write("uneven.hosts", "b slots=2\na slots=4\nc slots=1\n");
    let out = copr(&[
        "map",
        "--graph",
        &g,
        "--machine",
        &hosts,
        "--budget",
        "0.2",
        "--json",
    ]);
    let (stdout, _) = ok(&out);
    let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let pattern = j["pattern"].as_str().unwrap();
    assert!(pattern.ends_with("(5 tasks on 7 slots)"), "{pattern}");
    assert_eq!(j["tasks"], 5);
}

/// A recording whose header says `tasks 4` but which gives a fifth rank a host is
/// refused with the host line (the recorder writes one line per rank of the run); the
/// same file without that line maps onto its hosts.
#[test]
fn a_recording_with_a_host_beyond_its_tasks_is_refused_with_the_line() {
    let body = "tasks 4\n# host 0 n1\n# host 1 n1\n# host 2 n2\n# host 3 n2\n";
    let traffic = "0 1 100 # 1 messages\n2 3 100 # 1 messages\n1 2 50 # 1 messages\n";
    let map = |name: &str, text: &str| from_recording(&write(name, text), &[]);
    // also after a byte-order mark, which the graph reader skips
    for (k, bom) in ["", "\u{feff}"].iter().enumerate() {
        let text = format!("{bom}{body}# host 4 n3\n{traffic}");
        let out = map(&format!("extra-host-{k}.txt"), &text);
        refused(&out, &["line 6", "rank 4", "tasks 4"]);
    }
    ok(&map("four-hosts.txt", &format!("{body}{traffic}")));
}

/// Edge-list lines with an empty field (`0,,1,100`, a comma at the start or end) are
/// refused with their line number rather than read as if the field were not there.
#[test]
fn an_edge_list_field_left_empty_is_refused_with_the_line() {
    for (k, bad) in ["0,,1,100", ",0,1,100", "0,1,100,"].iter().enumerate() {
        let g = write(
            &format!("empty-field-{k}.txt"),
            &format!("1,2,100\n{bad}\n"),
        );
        let out = copr(&["map", "--graph", &g, "--flat", "4", "--budget", "0"]);
        refused(&out, &["line 2", "empty field"]);
    }
    let g = write("commas.txt", "1, 2, 100\n0 ,1 ,100\n");
    ok(&copr(&[
        "map", "--graph", &g, "--flat", "4", "--budget", "0",
    ]));
}
