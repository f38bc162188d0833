//! `copr map --graph` on a Scotch source graph and a METIS graph file, end to end: the
//! report counts the tasks and bytes of the file (an edge of weight `w` is `w` bytes
//! each way), the same as the equivalent edge list; malformed files end in exit 2 with
//! one line naming the file's line.

mod common;

use common::{copr, ok, refused};

fn write(name: &str, text: &str) -> String {
    common::write(&common::scratch("copr-graph-formats"), name, text)
        .to_str()
        .unwrap()
        .to_string()
}

const MACHINE: [&str; 6] = ["--flat", "4", "--ranks-per-node", "2", "--budget", "0.2"];

/// `copr map --graph FILE` on the flat machine: (tasks, total bytes, packed
/// hop-bytes) of its JSON report.
fn summary(path: &str) -> (u64, u64, u64) {
    let mut args = vec!["map", "--graph", path];
    args.extend_from_slice(&MACHINE);
    args.push("--json");
    let (out, _) = ok(&copr(&args));
    let v: serde_json::Value = serde_json::from_str(&out).expect("a JSON report");
    let packed = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["strategy"] == "packed")
        .map(|r| &r["metrics"])
        .expect("a packed row");
    (
        v["tasks"].as_u64().unwrap(),
        packed["total_bytes"].as_u64().unwrap(),
        packed["hop_bytes"].as_u64().unwrap(),
    )
}

#[test]
fn scotch_and_metis_files_map_as_their_edge_list() {
    // a ring of 8 tasks, edge i-(i+1) weighing 10·(i+1), each way in the edge list
    let mut list = String::new();
    let mut grf = String::from("0\n8 16\n0 010\n");
    let mut metis = String::from("% ring of 8\n8 8 1\n");
    let w = |i: usize| 10 * (i as u64 % 8 + 1);
    for i in 0..8 {
        let (next, prev) = ((i + 1) % 8, (i + 7) % 8);
        list += &format!("{i} {next} {}\n{next} {i} {}\n", w(i), w(i));
        grf += &format!("2 {} {prev} {} {next}\n", w(prev), w(i));
        metis += &format!("{} {} {} {}\n", prev + 1, w(prev), next + 1, w(i));
    }
    let want = summary(&write("ring.txt", &list));
    assert_eq!(want.0, 8);
    assert_eq!(want.1, 2 * 360);
    assert_eq!(summary(&write("ring.grf", &grf)), want);
    assert_eq!(summary(&write("ring.graph", &metis)), want);
}

#[test]
fn malformed_scotch_and_metis_files_exit_2_with_the_line() {
    for (name, text, needle) in [
        (
            "asym.grf",
            "0\n2 2\n0 010\n1 3 1\n1 4 0\n",
            "line 4: the edge 0-1 weighs 3",
        ),
        (
            "short.grf",
            "0\n3 4\n0 000\n1 1\n",
            "line 2: the header declares 3 vertices",
        ),
        ("loop.graph", "2 1\n1\n2\n", "line 2: vertex 1 lists itself"),
        (
            "neg.graph",
            "2 1 1\n2 -1\n1 -1\n",
            "line 2: edge weight `-1`",
        ),
    ] {
        let path = write(name, text);
        let mut args = vec!["map", "--graph", path.as_str()];
        args.extend_from_slice(&MACHINE);
        refused(&copr(&args), &[name, needle]);
    }
}
