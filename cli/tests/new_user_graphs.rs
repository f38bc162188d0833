//! `copr map` on the graphs and machines a new user brings: tiny and odd graphs, huge
//! message sizes, files written by hand, jobs smaller than their allocation, nodes of
//! different sizes. Each run ends in a mapping whose numbers match an independent
//! computation here (dimension-order routing on a torus written out below, the
//! sender's injection link on a flat machine, small cases by hand), or in exit 2 with
//! one `copr: error:` line.

mod common;

use common::{copr, ok, refused};

use copr::rng::SplitMix;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// A flat machine of 4 nodes of 2 slots, and a short budget.
const FOUR_NODES_OF_TWO: [&str; 6] = ["--flat", "4", "--ranks-per-node", "2", "--budget", "0.2"];

fn dir() -> PathBuf {
    common::scratch("copr-new-user-graphs")
}

fn write(name: &str, text: &str) -> String {
    common::write(&dir(), name, text)
        .to_str()
        .unwrap()
        .to_string()
}

/// `copr map ... --json`: the report as text (byte counts above `u64::MAX` do not
/// survive `serde_json::Value`) and parsed.
fn map_json(args: &[&str]) -> (String, serde_json::Value) {
    let mut a = vec!["map"];
    a.extend_from_slice(args);
    a.push("--json");
    let (out, _) = ok(&copr(&a));
    let v = serde_json::from_str(&out).expect("a JSON report");
    (out, v)
}

/// The metrics of the row `name` of a JSON report.
fn row<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == name)
        .map(|r| &r["metrics"])
        .unwrap_or_else(|| panic!("no row {name}: {report}"))
}

/// The integer `field` of the row of `strategy` in a JSON report, as written (it may
/// exceed `u64::MAX`).
fn field_of_row(text: &str, strategy: &str, field: &str) -> String {
    let at = text
        .find(&format!("\"strategy\":\"{strategy}\""))
        .unwrap_or_else(|| panic!("no row {strategy}: {text}"));
    let key = format!("\"{field}\":");
    let from = at + text[at..].find(&key).expect("the field") + key.len();
    text[from..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect()
}

fn int(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A graph file: `(src, dst) -> bytes` summed, self-messages and empty ones left out
/// (what the documented format means), as the tests here read it.
type Graph = BTreeMap<(usize, usize), u64>;

/// How a machine routes, as the tests here compute it, independently of copr.
#[derive(Clone, Debug)]
enum Net {
    /// Dimension order, `x` first, each dimension the shorter way round (the positive
    /// one on a tie); a link is (node, dimension, positive?).
    Torus(Vec<usize>),
    /// Every message between two nodes leaves over its sender's one link.
    Flat(usize),
}

impl Net {
    fn nodes(&self) -> usize {
        match self {
            Net::Torus(d) => d.iter().product(),
            Net::Flat(n) => *n,
        }
    }

    fn args(&self) -> Vec<String> {
        match self {
            Net::Torus(d) => vec![
                "--torus".into(),
                d.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("x"),
            ],
            Net::Flat(n) => vec!["--flat".into(), n.to_string()],
        }
    }

    /// (hop-bytes, busiest link bytes) of `slot_of` (task -> slot, `rpn` per node).
    fn score(&self, g: &Graph, rpn: usize, slot_of: &[usize]) -> (u128, u128) {
        let mut load: HashMap<(usize, usize, bool), u128> = HashMap::new();
        let mut hb = 0u128;
        for (&(s, d), &w) in g {
            let (a, b) = (slot_of[s] / rpn, slot_of[d] / rpn);
            if a == b {
                continue;
            }
            let w = u128::from(w);
            match self {
                Net::Flat(_) => {
                    hb += w;
                    *load.entry((a, 0, true)).or_default() += w;
                }
                Net::Torus(dims) => {
                    let coords = |mut k: usize| {
                        dims.iter()
                            .map(|&e| {
                                let c = k % e;
                                k /= e;
                                c
                            })
                            .collect::<Vec<_>>()
                    };
                    let (mut cur, to) = (coords(a), coords(b));
                    for (dim, &e) in dims.iter().enumerate() {
                        let fwd = (to[dim] + e - cur[dim]) % e;
                        if fwd == 0 {
                            continue;
                        }
                        let positive = 2 * fwd <= e;
                        let steps = if positive { fwd } else { e - fwd };
                        for _ in 0..steps {
                            let node = cur
                                .iter()
                                .zip(dims)
                                .rev()
                                .fold(0, |acc, (&c, &e)| acc * e + c);
                            *load.entry((node, dim, positive)).or_default() += w;
                            hb += w;
                            cur[dim] = if positive {
                                (cur[dim] + 1) % e
                            } else {
                                (cur[dim] + e - 1) % e
                            };
                        }
                    }
                }
            }
        }
        (hb, load.values().copied().max().unwrap_or(0))
    }
}

/// A seeded graph of `n` tasks, each sending to 4 random others `bytes(rng)` bytes.
fn four_out(n: usize, seed: u64, mut bytes: impl FnMut(&mut SplitMix) -> u64) -> Graph {
    let mut rng = SplitMix(seed);
    let mut g = Graph::new();
    for s in 0..n {
        for _ in 0..4 {
            let d = rng.below(n);
            if d != s {
                let w = bytes(&mut rng);
                g.insert((s, d), w);
            }
        }
    }
    g
}

fn graph_text(tasks: usize, g: &Graph) -> String {
    let mut t = format!("tasks {tasks}\n");
    for (&(s, d), &w) in g {
        t.push_str(&format!("{s} {d} {w}\n"));
    }
    t
}

/// `copr map PATTERN` on `net` with `rpn` slots per node: the exported mapping's
/// hop-bytes and busiest link (as written, they may pass `u64::MAX`) are what
/// [`Net::score`] gives for `g`, the pattern's messages.
fn exported_scores_as_routed(pattern: &[&str], net: &Net, rpn: usize, g: &Graph) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mj = dir().join(format!("scored-{k}.json"));
    let mut a: Vec<String> = pattern.iter().map(|x| x.to_string()).collect();
    a.extend(net.args());
    a.extend(
        [
            "--ranks-per-node",
            &rpn.to_string(),
            "--budget",
            "0.5",
            "--mapping-json",
            mj.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (text, r) = map_json(&a);
    let (hb, ml) = net.score(g, rpn, &slots_of(&mj));
    let exported = r["exported"].as_str().unwrap();
    for (field, want) in [("hop_bytes", hb), ("max_link_bytes", ml)] {
        assert_eq!(
            field_of_row(&text, exported, field),
            want.to_string(),
            "{net:?} x {rpn}: {field}"
        );
    }
}

/// The exported mapping of `--mapping-json`: task -> slot.
fn slots_of(path: &Path) -> Vec<usize> {
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    j["slot_of_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| int(v) as usize)
        .collect()
}

#[test]
fn small_graphs_score_as_computed_by_hand() {
    // 0 -> 1: 100 bytes, 1 -> 2: 10, 2 -> 0: 1; the launcher's order (packed)
    let g = write("tri.txt", "0 1 100\n1 2 10\n2 0 1\n");
    let packed = |machine: &[&str]| {
        let mut a = vec![
            "--graph",
            &g,
            "--strategies",
            "packed",
            "--export",
            "packed",
        ];
        a.extend_from_slice(machine);
        let (_, r) = map_json(&a);
        let m = row(&r, "packed").clone();
        (int(&m["hop_bytes"]), int(&m["max_link_bytes"]))
    };
    // a ring of 3 nodes: every message one hop the positive way
    assert_eq!(packed(&["--torus", "3"]), (111, 100));
    // a 2x2 torus, task t on node t = (t mod 2, t div 2): 1 -> 2 goes x then y, two hops
    // (x+ of node 1, y+ of node 0); 0 -> 1 alone on x+ of node 0
    assert_eq!(packed(&["--torus", "2x2"]), (100 + 2 * 10 + 1, 100));
    // two nodes of two slots: 0 and 1 share node 0; 1 -> 2 leaves node 0, 2 -> 0 node 1
    assert_eq!(packed(&["--flat", "2", "--ranks-per-node", "2"]), (11, 10));
    // a 1x1x1 torus of 4 slots: nothing crosses a link
    assert_eq!(
        packed(&["--torus", "1x1x1", "--ranks-per-node", "4"]),
        (0, 0)
    );
    // the other columns: hops per message (1, 2, 1 on the 2x2 torus; 0, 1, 1 on the
    // two nodes), bytes kept inside a node, and the mean over the links (16 directed
    // links of the 2x2 torus carry 121 bytes; 2 node links 11)
    let columns = |machine: &[&str]| {
        let mut a = vec!["--graph", g.as_str(), "--strategies", "packed"];
        a.extend_from_slice(machine);
        let (_, r) = map_json(&a);
        let m = row(&r, "packed").clone();
        let f = |k: &str| m[k].as_f64().unwrap();
        let (mean, most, inside) = (
            f("dilation_mean"),
            m["dilation_max"].clone(),
            f("intra_node_bytes"),
        );
        (mean, int(&most), inside, f("mean_link_bytes"))
    };
    assert_eq!(
        columns(&["--torus", "2x2"]),
        (4.0 / 3.0, 2, 0.0, 121.0 / 16.0)
    );
    assert_eq!(
        columns(&["--flat", "2", "--ranks-per-node", "2"]),
        (2.0 / 3.0, 1, 100.0, 11.0 / 2.0)
    );
}

#[test]
fn messages_of_64_bits_each_way_get_exact_totals_and_a_bound_below_them() {
    let g = write(
        "huge-pair.txt",
        &format!("0 1 {m}\n1 0 {m}\n", m = u64::MAX),
    );
    // both tasks fit one node: nothing leaves it, and the bound may not claim otherwise
    // (it once said 2^64 - 1 bytes, the pair's saturated sum, for every mapping)
    let (text, r) = map_json(&["--graph", &g, "--flat", "4", "--ranks-per-node", "2"]);
    for row in r["rows"].as_array().unwrap() {
        let m = &row["metrics"];
        assert_eq!(int(&m["hop_bytes_bound"]), 0, "{text}");
        assert_eq!(int(&m["max_link_bound"]), 0, "{text}");
    }
    assert_eq!(int(&row(&r, "optimised")["hop_bytes"]), 0);
    // one slot per node: both messages cross one link each, 2·(2^64 − 1) in all
    let (text, _) = map_json(&["--graph", &g, "--flat", "2"]);
    let all = (2 * u128::from(u64::MAX)).to_string();
    assert!(text.contains(&format!("\"hop_bytes\":{all}")), "{text}");
    assert!(text.contains(&format!("\"total_bytes\":{all}")), "{text}");
}

#[test]
fn graphs_whose_group_sums_pass_64_bits_are_mapped() {
    // every message fits 64 bits, but the bytes between two node-sized groups do not:
    // the optimiser's group graphs once failed with "bytes from 0 to 1 overflow 64
    // bits", naming tasks of no file
    let n = 96;
    let g = four_out(n, 7, |rng| [u64::MAX, 1 << 63, 1 << 62, 1][rng.below(4)]);
    let f = write("huge-groups.txt", &graph_text(n, &g));
    for (net, rpn) in [(Net::Flat(8), 16), (Net::Torus(vec![2, 2, 2]), 16)] {
        exported_scores_as_routed(&["--graph", &f], &net, rpn, &g);
    }
}

/// Cases of [`exported_mappings_score_as_an_independent_router_says`]:
/// `COPR_FUZZ_GRAPHS` (default 24; `scripts/fuzz-surfaces.sh` runs more).
fn graph_cases() -> u64 {
    std::env::var("COPR_FUZZ_GRAPHS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

#[test]
fn exported_mappings_score_as_an_independent_router_says() {
    // seeded graphs of 1 .. slots tasks (isolated tasks, repeated pairs, both ways) on
    // tori of sides 1, 2, 3 and 5 and on flat machines, every node of the same size or
    // (a machine file) of its own: the exported mapping puts every task on its own slot
    // of a node that has it, the rankfile launches exactly the job's ranks there, and
    // the hop-bytes and busiest link are what dimension-order routing (or the sender's
    // link) gives
    let mut rng = SplitMix(28);
    let (mj, rf) = (dir().join("random.json"), dir().join("random-rankfile"));
    for case in 0..graph_cases() {
        let net = if case % 3 == 2 {
            Net::Flat([1, 2, 3, 5][rng.below(4)])
        } else {
            Net::Torus(
                (0..1 + rng.below(3))
                    .map(|_| [1, 2, 3, 5][rng.below(4)])
                    .collect(),
            )
        };
        let uneven = case % 4 == 3;
        let counts: Vec<usize> = (0..net.nodes())
            .map(|_| 1 + rng.below(4))
            .collect::<Vec<_>>();
        let counts = if uneven {
            counts
        } else {
            vec![counts[0]; net.nodes()]
        };
        let rpn = *counts.iter().max().unwrap();
        let slots: usize = counts.iter().sum();
        let n = 1 + rng.below(slots);
        let mut g = Graph::new();
        for _ in 0..rng.below(3 * n + 1) {
            let (s, d) = (rng.below(n), rng.below(n));
            let w = [1, 7, 1000, 1 << 20, 1 << 40][rng.below(5)];
            if s != d {
                *g.entry((s, d)).or_default() += w;
            }
        }
        let f = write(&format!("random-{case}.txt"), &graph_text(n, &g));
        let mut a: Vec<String> = vec!["--graph".into(), f];
        if uneven {
            let list: Vec<String> = counts.iter().map(usize::to_string).collect();
            let table = match &net {
                Net::Torus(d) => format!(
                    "[torus]\ndims = [{}]\n",
                    d.iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Net::Flat(k) => format!("[flat]\nnodes = {k}\n"),
            };
            let m = write(
                &format!("random-{case}.toml"),
                &format!("ranks_per_node = [{}]\n{table}", list.join(", ")),
            );
            a.extend(["--machine".into(), m]);
        } else {
            a.extend(net.args());
            a.extend(["--ranks-per-node".into(), rpn.to_string()]);
        }
        a.extend(
            [
                "--budget",
                "0.2",
                "--seed",
                &case.to_string(),
                "--mapping-json",
                mj.to_str().unwrap(),
                "--rankfile",
                rf.to_str().unwrap(),
                "--nodes",
                &format!("n[0-{}]", net.nodes() - 1),
            ]
            .map(String::from),
        );
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (_, r) = map_json(&a);
        let slot_of = slots_of(&mj);
        let what = format!("case {case}: {net:?}, slots {counts:?}, {n} tasks");
        assert_eq!(slot_of.len(), n, "{what}: one slot per task");
        assert_eq!(int(&r["tasks"]), n as u64, "{what}: the job's tasks");
        assert!(
            slot_of.iter().all(|&s| s % rpn < counts[s / rpn]),
            "{what}: a slot its node does not have: {slot_of:?}"
        );
        assert_eq!(slot_of.iter().collect::<HashSet<_>>().len(), n, "{what}");
        let text = std::fs::read_to_string(&rf).unwrap();
        let launched: Vec<String> = text.lines().map(String::from).collect();
        let expected: Vec<String> = slot_of
            .iter()
            .enumerate()
            .map(|(t, &s)| format!("rank {t}=n{} slot={}", s / rpn, s % rpn))
            .collect();
        assert_eq!(launched, expected, "{what}: the rankfile");
        let (hb, ml) = net.score(&g, rpn, &slot_of);
        let m = row(&r, r["exported"].as_str().unwrap());
        assert_eq!(
            (
                u128::from(int(&m["hop_bytes"])),
                u128::from(int(&m["max_link_bytes"]))
            ),
            (hb, ml),
            "{what}: {m}"
        );
        assert_eq!(int(&m["total_bytes"]), g.values().sum::<u64>(), "{what}");
        for row in r["rows"].as_array().unwrap() {
            let m = &row["metrics"];
            assert!(int(&m["hop_bytes"]) >= int(&m["hop_bytes_bound"]), "{row}");
        }
    }
    println!(
        "{} graphs: every exported mapping, rankfile and score as the router here says",
        graph_cases()
    );
}

#[test]
fn what_a_hand_written_graph_file_means() {
    let total = |name: &str, text: &str| {
        let g = write(name, text);
        let mut a = vec!["--graph", g.as_str()];
        a.extend(FOUR_NODES_OF_TWO);
        let (_, r) = map_json(&a);
        (int(&r["tasks"]), int(&row(&r, "packed")["total_bytes"]))
    };
    // one task, and tasks without messages
    assert_eq!(total("one.txt", "tasks 1\n"), (1, 0));
    assert_eq!(total("none.txt", "tasks 8\n"), (8, 0));
    assert_eq!(total("isolated.txt", "tasks 7\n0 1 3\n5 6 4\n"), (7, 7));
    // repeated pairs add up, each direction its own message; a task's messages to
    // itself and empty messages cross no link and are left out
    assert_eq!(
        total("repeated.txt", "0 1 100\n0 1 100\n1 0 50\n"),
        (2, 250)
    );
    assert_eq!(total("self.txt", "0 0 100\n0 1 5\n2 2 9\n"), (3, 5));
    assert_eq!(total("zero.txt", "0 1 0\n1 2 7\n"), (3, 7));
    // CRLF line ends, comments, blank lines, commas, tabs, a byte-order mark
    assert_eq!(
        total(
            "dos.txt",
            "\u{feff}# a halo\r\ntasks 4\r\n\r\n0 1 10 # east\r\n1,2,10\r\n2\t3\t10\r\n"
        ),
        (4, 30)
    );
    // TOML and JSON
    assert_eq!(
        total("g.toml", "tasks = 3\nedges = [[0, 1, 10], [1, 2, 3]]\n"),
        (3, 13)
    );
    assert_eq!(
        total("g.json", r#"{"edges": [[0, 1, 10], [2, 1, 3]]}"#),
        (3, 13)
    );
    // the extension in capitals, as machine files allow
    assert_eq!(
        total("G.JSON", r#"{"edges": [[0, 1, 10], [2, 1, 3]]}"#),
        (3, 13)
    );
    assert_eq!(total("G.Toml", "edges = [[0, 1, 10]]\n"), (2, 10));
}

#[test]
fn malformed_graph_files_are_refused_in_one_line() {
    let refuse = |name: &str, text: Option<&str>, needles: &[&str]| {
        let g = match text {
            Some(t) => write(name, t),
            None => dir().join(name).to_str().unwrap().to_string(),
        };
        refused(
            &copr(&["map", "--graph", &g, "--flat", "4", "--ranks-per-node", "2"]),
            needles,
        );
    };
    // a fourth value in a TOML edge was once dropped unread
    refuse(
        "four.toml",
        Some("edges = [[0, 1, 10, 4], [1, 2, 3]]\n"),
        &["four.toml", "[src, dst, bytes]"],
    );
    refuse(
        "four.json",
        Some(r#"{"edges": [[0, 1, 10, 4]]}"#),
        &["four.json", "[src, dst, bytes]"],
    );
    refuse(
        "two.toml",
        Some("edges = [[0, 1]]\n"),
        &["two.toml", "[src, dst, bytes]"],
    );
    refuse("float.txt", Some("0 1 1.5\n"), &["line 1", "bytes", "1.5"]);
    refuse("negative.txt", Some("0 1 -5\n"), &["line 1", "-5"]);
    refuse("unit.txt", Some("0 1 10kB\n"), &["line 1", "10kB"]);
    refuse("garbage.txt", Some("0 1 10 x\n"), &["line 1", "4 fields"]);
    refuse(
        "beyond.txt",
        Some("tasks 2\n0 5 10\n"),
        &["line 2", "0 -> 5", "tasks = 2"],
    );
    refuse(
        "late.txt",
        Some("0 1 5\ntasks 4\n"),
        &["line 2", "first line"],
    );
    refuse(
        "overflow.txt",
        Some(&format!("0 1 {}\n0 1 1\n", u64::MAX)),
        &["overflow.txt", "overflow 64 bits"],
    );
    refuse("empty.txt", Some(""), &["empty.txt", "nothing to map"]);
    // 17 MiB of TOML edges: refused at once (it took 1.4 GB and 3 s to read; 54 MB
    // took 4.3 GB), with the forms that hold more
    let big = format!("edges = [\n{}]\n", "[0,1,1],\n".repeat((17 << 20) / 9));
    refuse("big.toml", Some(&big), &["big.toml", "TOML", "edge list"]);
    refuse("missing.txt", None, &["missing.txt"]);
    std::fs::create_dir_all(dir().join("a-directory.txt")).unwrap();
    refuse("a-directory.txt", None, &["a-directory.txt"]);
    // a header of a million tasks with two messages: refused for want of slots, at once
    refuse(
        "million.txt",
        Some("tasks 1000000\n0 1 10\n"),
        &["1000000 tasks", "8 slots"],
    );
}

#[test]
fn nothing_to_lower_is_not_reported_as_lowered() {
    let g = write("silent.txt", "tasks 8\n");
    let mut a = vec!["map", "--graph", g.as_str()];
    a.extend(FOUR_NODES_OF_TWO);
    let (out, _) = ok(&copr(&a));
    let kept = out
        .lines()
        .find(|l| l.starts_with("optimised: kept"))
        .unwrap_or_else(|| panic!("no kept line: {out}"));
    assert!(!kept.contains("lowered"), "{kept}");
    // two tasks on two nodes of one slot: every mapping sends the one message over one
    // link, and the comparison with the launcher's order says so (it said "1.00x less")
    let g = write("pair.txt", "0 1 100\n");
    let (out, _) = ok(&copr(&[
        "map", "--graph", &g, "--flat", "2", "--budget", "0.2",
    ]));
    for what in ["hop-bytes ", "busiest link "] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(what))
            .unwrap_or_else(|| panic!("no {what}line: {out}"));
        assert!(line.ends_with("(the same)"), "{line}");
    }
}

#[test]
fn a_graph_on_nodes_of_different_sizes_exports_exactly_its_ranks() {
    // 40 nodes, 24 of 16 slots and 16 of 8 (a Slurm allocation), 500 tasks of 640 slots
    let m = write(
        "slurm.toml",
        "ranks_per_node = \"16(x24),8(x16)\"\nnodes = \"nid[0001-0040]\"\n[flat]\nnodes = 40\n",
    );
    let n = 500;
    let g = four_out(n, 500, |rng| 1 + rng.below(1 << 20) as u64);
    let f = write("slurm-graph.txt", &graph_text(n, &g));
    let p = |x: &str| dir().join(x).to_str().unwrap().to_string();
    let (rf, sh, smpi, mj) = (p("rankfile"), p("hosts"), p("smpi-hosts"), p("map.json"));
    let (_, r) = map_json(&[
        "--graph",
        &f,
        "--machine",
        &m,
        "--budget",
        "1",
        "--rankfile",
        &rf,
        "--slurm-hostfile",
        &sh,
        "--smpi-hostfile",
        &smpi,
        "--mapping-json",
        &mj,
    ]);
    assert_eq!(int(&r["tasks"]), n as u64);
    let slots = |k: usize| if k <= 24 { 16 } else { 8 };
    let host = |k: usize| format!("nid{k:04}");
    // the rankfile: ranks 0 .. n-1 once each, on a slot its node has, no slot twice
    let mut seen = HashSet::new();
    let mut host_of = vec![String::new(); n];
    let text = std::fs::read_to_string(&rf).unwrap();
    for line in text.lines() {
        let (rank, rest) = line
            .strip_prefix("rank ")
            .and_then(|l| l.split_once('='))
            .unwrap();
        let (h, slot) = rest.split_once(" slot=").unwrap();
        let (rank, slot): (usize, usize) = (rank.parse().unwrap(), slot.parse().unwrap());
        let k: usize = h.strip_prefix("nid").unwrap().parse().unwrap();
        assert!(slot < slots(k), "{line}: {h} has {} slots", slots(k));
        assert!(seen.insert((k, slot)), "{line}: slot taken twice");
        assert!(host_of[rank].is_empty(), "{line}: rank twice");
        host_of[rank] = host(k);
    }
    assert_eq!(seen.len(), n);
    // the hostfiles: line i is rank i's host, no host over its slots
    let hosts = std::fs::read_to_string(&sh).unwrap();
    let hosts: Vec<&str> = hosts.lines().collect();
    assert_eq!(
        hosts,
        host_of.iter().map(String::as_str).collect::<Vec<_>>()
    );
    let mut per: HashMap<&str, usize> = HashMap::new();
    for h in &hosts {
        *per.entry(h).or_default() += 1;
    }
    for (h, c) in per {
        let k: usize = h.strip_prefix("nid").unwrap().parse().unwrap();
        assert!(c <= slots(k), "{h}: {c} ranks");
    }
    assert_eq!(std::fs::read_to_string(&smpi).unwrap().lines().count(), n);
    // the JSON names the same nodes
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&mj).unwrap()).unwrap();
    let nodes: Vec<&str> = j["node_of_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(nodes, hosts);
    // and the report's numbers are the mapping's: the flat machine's injection links
    let (hb, ml) = Net::Flat(40).score(&g, 16, &slots_of(Path::new(&mj)));
    let m = row(&r, "optimised");
    assert_eq!(u128::from(int(&m["hop_bytes"])), hb);
    assert_eq!(u128::from(int(&m["max_link_bytes"])), ml);
}

#[test]
fn a_network_machine_file_names_its_hosts_with_nodes() {
    // `nodes =` beside `[network]` was once read and ignored: the rankfile said the
    // network file's host names, and a list of the wrong length passed
    let net = common::root().join("data/topology/fat-tree-k4.net.toml");
    let machine = |name: &str, nodes: &str| {
        write(
            name,
            &format!(
                "ranks_per_node = [4, 2, 3]\nnodes = {nodes}\n[network]\nfile = \"{}\"\nhosts = \"h[0-2]\"\n",
                net.display()
            ),
        )
    };
    let g = write(
        "chain6.txt",
        "0 1 100\n1 2 100\n2 3 100\n3 4 100\n4 5 100\n",
    );
    let rf = dir().join("network-rankfile");
    let m = machine("named.toml", "[\"x\", \"y\", \"z\"]");
    ok(&copr(&[
        "map",
        "--graph",
        &g,
        "--machine",
        &m,
        "--budget",
        "0.2",
        "--rankfile",
        rf.to_str().unwrap(),
    ]));
    let text = std::fs::read_to_string(&rf).unwrap();
    assert_eq!(text.lines().count(), 6, "{text}");
    let counts = HashMap::from([("x", 4), ("y", 2), ("z", 3)]);
    for line in text.lines() {
        let host = line.split('=').nth(1).unwrap().split(' ').next().unwrap();
        assert!(counts.contains_key(host), "{line}");
    }
    let m = machine("two-names.toml", "\"x,y\"");
    refused(
        &copr(&["map", "--graph", &g, "--machine", &m]),
        &["two-names.toml", "2 names for 3 nodes"],
    );
}

#[test]
fn grids_of_64_bit_messages_are_mapped_or_refused_in_terms_of_the_flags() {
    // a 4x4 periodic grid, every message 2^64 - 1 bytes: the tile grids the optimiser
    // derives (2x2 tiles of 2x2, extent 2) once merged past 64 bits and failed the run
    let m = u64::MAX;
    let mut g = Graph::new();
    for r in 0..4 {
        for c in 0..4 {
            let t = 4 * r + c;
            for (dr, dc) in [(1, 0), (3, 0), (0, 1), (0, 3)] {
                g.insert((t, 4 * ((r + dr) % 4) + (c + dc) % 4), m);
            }
        }
    }
    for (net, rpn) in [
        (Net::Torus(vec![2, 2]), 4),
        (Net::Flat(4), 4),
        (Net::Flat(3), 8),
    ] {
        exported_scores_as_routed(&["--grid", "4x4", "--bytes", &m.to_string()], &net, rpn, &g);
    }
    // the user's own grid whose two messages to one neighbour pass 64 bits: refused,
    // naming the flags
    refused(
        &copr(&[
            "map",
            "--grid",
            "2x8",
            "--bytes",
            &m.to_string(),
            "--flat",
            "8",
            "--ranks-per-node",
            "2",
        ]),
        &["--grid 2x8 --bytes", "2^64 - 1"],
    );
}

#[test]
fn ranks_per_node_beside_a_machine_file_is_refused_not_ignored() {
    // the machine file says 16 per node; `--ranks-per-node 4` was silently dropped
    let g = write("ring4.txt", "0 1 5\n1 2 5\n2 3 5\n3 0 5\n");
    refused(
        &copr(&[
            "map",
            "--graph",
            &g,
            "--machine",
            "data/machines/torus-4x4x4.toml",
            "--ranks-per-node",
            "4",
        ]),
        &["--ranks-per-node", "machine file"],
    );
    refused(
        &copr(&[
            "map",
            "--graph",
            "data/graphs/recorded-halo-8.txt",
            "--machine-from-recording",
            "--ranks-per-node",
            "4",
        ]),
        &["--ranks-per-node", "recording"],
    );
    // with the machine flags it is what it says, and 1 without it
    for (flag, per_node) in [(Some("4"), "4 ranks per node"), (None, "1 rank per node")] {
        let mut a = vec!["map", "--graph", &g, "--flat", "4", "--budget", "0.1"];
        if let Some(k) = flag {
            a.extend(["--ranks-per-node", k]);
        }
        let (out, _) = ok(&copr(&a));
        assert!(out.contains(per_node), "{out}");
    }
}

#[test]
fn a_machine_file_of_too_much_toml_is_refused_before_it_is_read() {
    // 17 MiB of `ranks_per_node` list: the TOML reader took about 80 bytes per byte
    // (4.5 GB for 60 MB) before any check; now one line at once, within 1 GiB
    let list = "1,".repeat((17 << 20) / 2);
    let m = write(
        "huge-list.toml",
        &format!("ranks_per_node = [{list}1]\n[flat]\nnodes = 4\n"),
    );
    let g = write("pair-for-huge.txt", "0 1 5\n");
    for args in [
        vec!["map", "--graph", g.as_str(), "--machine", m.as_str()],
        vec!["topo", m.as_str()],
    ] {
        let out = common::capped(&args, common::root(), 1 << 20, Some(60));
        refused(&out, &["huge-list.toml", "bytes of TOML", "JSON"]);
    }
}

#[test]
fn smpi_routing_on_a_machine_without_a_network_graph_is_refused() {
    // a torus routes in dimension order and a flat machine has no network: the option
    // was accepted there and changed nothing
    for machine in [
        vec!["--torus", "2x2", "--ranks-per-node", "4"],
        vec!["--flat", "4", "--ranks-per-node", "4"],
    ] {
        for routing in ["ecmp", "single-path"] {
            let mut a = vec!["map", "--grid", "4x4", "--smpi-routing", routing];
            a.extend(&machine);
            refused(&copr(&a), &["--smpi-routing", routing, "network graph"]);
        }
    }
}

#[test]
fn a_calibrated_machine_prices_its_links_at_the_measured_bandwidth() {
    // data/topology/calibrated-4.toml measured 1.08e9 B/s between its two nodes; the
    // busiest link's time once used the flat machine's default 5 GB/s instead
    let g = write("ring4.txt", "tasks 4\n0 1 100\n1 2 100\n2 3 100\n3 0 100\n");
    let (_, r) = map_json(&[
        "--graph",
        &g,
        "--machine",
        "data/topology/calibrated-4.toml",
        "--strategies",
        "packed",
    ]);
    // packed: tasks 0, 1 on one node, 2, 3 on the other; 1 -> 2 and 3 -> 0 cross
    let m = row(&r, "packed");
    assert_eq!(
        (int(&m["hop_bytes"]), int(&m["max_link_bytes"])),
        (200, 100)
    );
    let t = m["max_link_time"].as_f64().unwrap();
    assert!((t - 100.0 / 1.08e9).abs() <= 1e-12 * t, "{t}");
    assert!(r["machine"]
        .as_str()
        .unwrap()
        .contains("node links 1.08 GB/s"));
}

#[test]
fn a_node_matrix_prices_each_nodes_link_at_its_measured_bandwidth() {
    // an `[inter]` node x node matrix (what `copr calibrate` writes for 2-64 nodes):
    // n0 and n2 send at 1 GB/s, n1 at 0.5 GB/s; the flat view once priced every node
    // link at the default 5 GB/s
    write(
        "inter3.toml",
        "names = [\"n0\", \"n1\", \"n2\"]\n\
         latency = [[0.0, 1e-6, 1e-6], [1e-6, 0.0, 1e-6], [1e-6, 1e-6, 0.0]]\n\
         inv_bandwidth = [[0.0, 1e-9, 1e-9], [2e-9, 0.0, 2e-9], [1e-9, 1e-9, 0.0]]\n",
    );
    let machine = write(
        "matrix3.toml",
        "[intra]\nkind = \"uniform\"\nlatency = 1e-7\nbandwidth = 1e10\n\
         [inter]\nkind = \"matrix\"\nfile = \"inter3.toml\"\n\
         [placement]\nrule = \"packed\"\nranks = 3\nranks_per_node = 1\n",
    );
    // a ring 0 -> 1 -> 2 -> 0 of 100 bytes, one task per node: each node's link carries
    // 100 bytes, n1's at 2e-9 s/B
    let g = write("ring3.txt", "tasks 3\n0 1 100\n1 2 100\n2 0 100\n");
    let (_, r) = map_json(&[
        "--graph",
        &g,
        "--machine",
        &machine,
        "--strategies",
        "packed",
    ]);
    let m = row(&r, "packed");
    assert_eq!(
        (int(&m["hop_bytes"]), int(&m["max_link_bytes"])),
        (300, 100)
    );
    let t = m["max_link_time"].as_f64().unwrap();
    assert!((t - 200e-9).abs() <= 1e-12 * t, "{t}");
    assert!(r["machine"]
        .as_str()
        .unwrap()
        .contains("node links 0.5-1 GB/s"));
}

#[test]
fn a_measured_node_bandwidth_is_described_in_four_digits() {
    // a calibration's matrix: 1 / 0.614e9 s/B between the nodes, whose bandwidth
    // 1e-9 / inv printed as it is reads 0.6140000000000001
    write(
        "inter614.toml",
        "names = [\"n0\", \"n1\"]\n\
         latency = [[0.0, 1e-6], [1e-6, 0.0]]\n\
         inv_bandwidth = [[0.0, 1.6286644951140065e-9], [1.6286644951140065e-9, 0.0]]\n",
    );
    let machine = write(
        "matrix614.toml",
        "[intra]\nkind = \"uniform\"\nlatency = 1e-7\nbandwidth = 1e10\n\
         [inter]\nkind = \"matrix\"\nfile = \"inter614.toml\"\n\
         [placement]\nrule = \"packed\"\nranks = 4\nranks_per_node = 2\n",
    );
    let (_, r) = map_json(&[
        "--grid",
        "2x2",
        "--machine",
        &machine,
        "--strategies",
        "packed",
    ]);
    let line = r["machine"].as_str().unwrap();
    assert!(line.ends_with("node links 0.614 GB/s"), "{line}");
}

#[test]
fn only_the_selected_hosts_of_a_network_must_reach_each_other() {
    // hosts a and b hang off switch s; host c has no link at all
    write(
        "stray.net.toml",
        "name = \"stray\"\nhosts = [\"a\", \"b\", \"c\"]\nswitches = [\"s\"]\n\
         [defaults]\nlatency = 1e-6\nbandwidth = 1e9\n\
         [[links]]\na = \"a\"\nb = \"s\"\n[[links]]\na = \"b\"\nb = \"s\"\n",
    );
    let machine = |name: &str, hosts: &str| {
        write(
            name,
            &format!(
                "ranks_per_node = 1\n[network]\nfile = \"stray.net.toml\"\nhosts = \"{hosts}\"\n"
            ),
        )
    };
    let ab = machine("stray-ab.toml", "b,a");
    ok(&copr(&["topo", &ab]));
    // a ring of two tasks, 100 bytes each way, two hops (b -> s -> a)
    let g = write("pair.txt", "tasks 2\n0 1 100\n1 0 100\n");
    let (_, r) = map_json(&["--graph", &g, "--machine", &ab, "--strategies", "packed"]);
    let m = row(&r, "packed");
    assert_eq!(
        (int(&m["hop_bytes"]), int(&m["max_link_bytes"])),
        (400, 100)
    );
    let t = m["max_link_time"].as_f64().unwrap();
    assert!((t - 100e-9).abs() <= 1e-12 * t, "{t}");
    // a selected host that cannot be reached is still refused, and so is a repeat
    let ac = machine("stray-ac.toml", "a,c");
    refused(&copr(&["topo", &ac]), &["stray.net.toml", "no path", "`c`"]);
    let aa = machine("stray-aa.toml", "a,a");
    refused(&copr(&["topo", &aa]), &["network.hosts", "`a`", "twice"]);
}

#[test]
fn a_unit_in_a_cost_field_names_the_field() {
    // `[inter]` is read by its `kind`: the error once named only `inter`
    let m = write(
        "unit.toml",
        "[intra]\nkind = \"uniform\"\nlatency = 1e-7\nbandwidth = 1e10\n\
         [inter]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = \"1 GB/s\"\n\
         [placement]\nrule = \"packed\"\nranks = 4\nranks_per_node = 2\n",
    );
    for args in [
        vec!["topo", m.as_str()],
        vec!["map", "--grid", "2x2", "--machine", &m],
    ] {
        refused(
            &copr(&args),
            &[
                "unit.toml:8",
                "`inter.bandwidth`",
                "\"1 GB/s\"",
                "without a unit",
            ],
        );
    }
}

#[test]
fn counts_of_one_are_singular_and_small_traffic_shows_its_bytes() {
    // one node of one slot
    let hosts = write("one-host", "n1 slots=1\n");
    let err = refused(
        &copr(&["map", "--grid", "2x1", "--machine", &hosts]),
        &["2 tasks", "1 slot ", "hostfile of 1 node:"],
    );
    assert!(
        !err.contains("1 slots") && !err.contains("1 nodes"),
        "{err}"
    );
    // 5 + 700 bytes once printed as 0.001 MB and 0.001 MB
    let g = write("small.txt", "tasks 3\n0 1 5\n1 2 700\n");
    let (out, _) = ok(&copr(&[
        "map",
        "--graph",
        &g,
        "--flat",
        "3",
        "--strategies",
        "packed",
    ]));
    let header = out.lines().find(|l| l.starts_with("strategy")).unwrap();
    assert!(
        header.contains("hop-bytes B") && header.contains("maxlink B"),
        "{out}"
    );
    let packed: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("packed"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!((packed[1], packed[5]), ("705", "700"), "{out}");
    assert!(
        out.contains("hop-bytes     705 -> 705 B (the same)"),
        "{out}"
    );
    // a network of one switch: `1 switch`
    let net = write(
        "one-switch.net.toml",
        "name = \"star\"\nhosts = [\"a\", \"b\"]\nswitches = [\"s\"]\n\
         [defaults]\nlatency = 1e-6\nbandwidth = 1e9\n\
         [[links]]\na = \"a\"\nb = \"s\"\n[[links]]\na = \"b\"\nb = \"s\"\n",
    );
    let (out, _) = ok(&copr(&["topo", &net]));
    assert!(out.contains("2 hosts, 1 switch, 4 directed links"), "{out}");
    // a plan of 10 x 10 doubles: 800 bytes, once printed as 0.000 GB
    let (out, _) = ok(&copr(&[
        "plan",
        "--source",
        "block-cyclic:m=10,n=10,mb=1,nb=1,nprow=2,npcol=1",
        "--target",
        "block-cyclic:m=10,n=10,mb=5,nb=5,nprow=2,npcol=1",
    ]));
    assert!(
        out.contains("total            100 elements (800 B at 8 B/element)"),
        "{out}"
    );
    // rows 0-4 go to rank 0: rank 1 sends it rows 1 and 3, rank 0 sends rank 1 rows
    // 6 and 8: 40 elements, 320 bytes
    assert!(
        out.contains("remote before    40 elements (320 B)"),
        "{out}"
    );
}

#[test]
fn an_empty_machine_file_is_refused() {
    // it once mapped onto one node of as many slots as tasks
    for (name, text) in [
        ("empty.toml", ""),
        ("comments.toml", "# a machine, some day\n"),
        ("empty.json", "{}"),
    ] {
        let m = write(name, text);
        for args in [
            vec!["topo", m.as_str()],
            vec!["map", "--grid", "2x2", "--machine", &m],
        ] {
            refused(&copr(&args), &[name, "describes no machine"]);
        }
    }
}

#[test]
fn networks_given_with_network_name_their_file() {
    // a one-way link: b cannot reach a; the error once named only the network
    let net = write(
        "one-way.net.toml",
        "name = \"x\"\nhosts = [\"a\", \"b\"]\n\
         [[links]]\na = \"a\"\nb = \"b\"\nlatency = 0\nbandwidth = 1e9\ndirected = true\n",
    );
    refused(
        &copr(&["map", "--grid", "2", "--network", &net]),
        &["one-way.net.toml", "no path"],
    );
    // one host needs no links
    let one = write("one.net.toml", "name = \"one\"\nhosts = [\"a\"]\n");
    let (_, r) = map_json(&["--grid", "2", "--network", &one, "--ranks-per-node", "2"]);
    assert_eq!(int(&row(&r, "packed")["hop_bytes"]), 0);
}
