//! Scotch source graphs and METIS graph files read by `Pattern::from_file`: graphs
//! written by hand give the pattern of the equivalent edge list, message by message;
//! the benchmark's own Scotch writer (`copr_testkit::scotch::write_grf`) round-trips on
//! random graphs; a byte-order mark and CRLF line ends read as plain text; the file's
//! line is named in a refusal.

use std::collections::BTreeMap;
use std::path::PathBuf;

use copr::lap::Perm;
use copr::rng::SplitMix;
use copr_mapping::{evaluate, torus_machine, Edge, Pattern};
use copr_testkit::scotch::{run_gmap, scotch_available, write_grf, ScotchTarget};

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("copr-graph-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The messages of a pattern, `(src, dst) -> bytes`.
fn messages(p: &Pattern) -> BTreeMap<(u32, u32), u64> {
    p.edges()
        .iter()
        .map(|e| ((e.src, e.dst), e.bytes))
        .collect()
}

/// Tasks 0-1 5 bytes, 0-2 1, 1-2 2, 2-3 7 (each way), task 4 without messages, as an
/// edge list.
const EDGE_LIST: &str = "tasks 5\n0 1 5\n1 0 5\n0 2 1\n2 0 1\n1 2 2\n2 1 2\n2 3 7\n3 2 7\n";

#[test]
fn hand_written_graphs_equal_their_edge_list() {
    let want = Pattern::from_file(&file("hand.txt", EDGE_LIST)).unwrap();
    assert_eq!(want.tasks(), 5);
    assert_eq!(want.edges().len(), 8);
    let graphs = [
        // Scotch, base 0, edge weights
        ("hand.grf", "0\n5 8\n0 010\n2 5 1 1 2\n2 5 0 2 2\n3 1 0 2 1 7 3\n1 7 2\n0\n"),
        // Scotch, base 1, labels 10..50 on lines out of order, loads, upper-case name
        (
            "hand-labels.SRC",
            "0\n5 8\n1 111\n40 1 1 7 30\n10 9 2 5 20 1 30\n50 1 0\n30 1 3 1 10 2 20 7 40\n\
             20 1 2 5 10 2 30\n",
        ),
        // METIS, comments, vertex and edge weights
        (
            "hand.graph",
            "% hand-made\n5 4 11\n1 2 5 3 1\n1 1 5 3 2\n1 1 1 2 2 4 7\n1 3 7\n1\n",
        ),
        // METIS with a byte-order mark and CRLF line ends
        (
            "hand.metis",
            "\u{feff}5 4 1\r\n2 5 3 1\r\n1 5 3 2\r\n1 1 2 2 4 7\r\n3 7\r\n\r\n",
        ),
        // Scotch with a byte-order mark and CRLF line ends
        (
            "hand-bom.grf",
            "\u{feff}0\r\n5 8\r\n0 010\r\n2 5 1 1 2\r\n2 5 0 2 2\r\n3 1 0 2 1 7 3\r\n1 7 2\r\n0\r\n",
        ),
    ];
    for (name, text) in graphs {
        let p = Pattern::from_file(&file(name, text)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(p.tasks(), want.tasks(), "{name}");
        assert_eq!(messages(&p), messages(&want), "{name}");
        assert_eq!(p.total_bytes(), 30, "{name}");
    }
}

#[test]
fn unweighted_edges_are_one_byte_each_way() {
    let p = Pattern::from_file(&file("plain.graph", "3 2\n2\n1 3\n2\n")).unwrap();
    let want: BTreeMap<(u32, u32), u64> =
        [((0, 1), 1), ((1, 0), 1), ((1, 2), 1), ((2, 1), 1)].into();
    assert_eq!(messages(&p), want);
}

#[test]
fn the_benchmarks_scotch_writer_round_trips() {
    let mut rng = SplitMix(28);
    for round in 0..40 {
        let n = 2 + rng.below(60);
        let m = rng.below(4 * n);
        let mut edges: Vec<(u32, u32, u64)> = (0..m)
            .map(|_| {
                let a = rng.below(n) as u32;
                let b = rng.below(n) as u32;
                (a, b, rng.next_u64() % 1000)
            })
            .collect();
        // a large message now and then (weights beyond 32 bits stay exact)
        if round % 5 == 0 && !edges.is_empty() {
            edges[0].2 = 1 << 40;
        }
        // the writer merges a -> b and b -> a into one edge of their summed bytes
        let mut pair: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for &(a, b, w) in &edges {
            if a != b && w > 0 {
                *pair.entry((a.min(b), a.max(b))).or_default() += w;
            }
        }
        let mut want: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for (&(a, b), &w) in &pair {
            want.insert((a, b), w);
            want.insert((b, a), w);
        }
        let p = Pattern::from_file(&file("random.grf", &write_grf(n, &edges))).unwrap();
        assert_eq!(p.tasks(), n, "round {round}");
        assert_eq!(messages(&p), want, "round {round}");
        // twice the undirected weight: copr's hop-bytes are twice Scotch's cost
        let total: u128 = pair.values().map(|&w| u128::from(w)).sum();
        assert_eq!(p.total_bytes(), 2 * total, "round {round}");
    }
}

#[test]
fn refusals_name_the_file_and_the_line() {
    for (name, text, part) in [
        (
            "one-way.grf",
            "0\n3 2\n0 000\n1 1\n1 2\n0\n",
            "line 4: vertex 0 lists 1",
        ),
        (
            "huge.graph",
            "1000000000000 1\n2\n1\n",
            "line 1: 1000000000000 vertices",
        ),
        ("scotch.graph", "0\n2 2\n0 000\n1 1\n1 0\n", "name it .grf"),
        ("metis.grf", "% c\n2 1\n2\n1\n", "name it .graph"),
        ("scotch.txt", "0\n2 2\n0 000\n1 1\n1 0\n", "name it .grf"),
    ] {
        let path = file(name, text);
        let e = Pattern::from_file(&path).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(part), "{name}: {e}");
        assert!(!e.contains('\n'), "{name}: {e}");
    }
}

#[test]
fn scotchs_mapping_of_a_grf_scores_twice_the_edge_lists_hop_bytes() {
    if !scotch_available() {
        println!("scotch_gmap not on PATH, skipped");
        return;
    }
    let mut rng = SplitMix(2028);
    let n = 64;
    let edges: Vec<(u32, u32, u64)> = (0..300)
        .map(|_| {
            let a = rng.below(n) as u32;
            (a, rng.below(n) as u32, 1 + rng.next_u64() % 4096)
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("copr-graph-formats-gmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let r = run_gmap(n, &edges, &ScotchTarget::torus_cores(&[4, 4], 4), &dir).unwrap();
    let m = torus_machine(vec![4, 4], None, None, 4).unwrap();
    let map = Perm::from_forward(r.slot_of_task.clone()).unwrap();
    let list = Pattern::from_edges(
        n,
        edges
            .iter()
            .map(|&(src, dst, bytes)| Edge { src, dst, bytes })
            .collect(),
        "edge list".into(),
    )
    .unwrap();
    let grf = Pattern::from_file(&file("gmap.grf", &write_grf(n, &edges))).unwrap();
    let (a, b) = (evaluate(&list, &m, &map), evaluate(&grf, &m, &map));
    assert!(a.hop_bytes > 0);
    assert_eq!(b.hop_bytes, 2 * a.hop_bytes);
}
