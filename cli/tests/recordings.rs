//! `copr map` on the traffic recordings of small MPI programs (`COPR_RECORD`), as the
//! recorder wrote them and as a user may damage or edit them: truncated, extended,
//! cut by an abort, with hosts for ranks the graph does not name, with a host line far
//! beyond the others. Each ends in the mapping whose bytes are those the program sent
//! (worked out by hand below) or in exit 2 with one `copr: error:` line.
//!
//! The recordings themselves, from real runs under `mpirun`, are checked in
//! `scripts/mpi-tests.sh` (`interpose/tests/c/record_small.c`).

mod common;

use common::{capped, copr_in, ok, refused, scratch, write};

use std::path::Path;

/// The recorder's header, as it writes it for `p` ranks.
fn header(p: usize, messages: u64, bytes: u64) -> String {
    format!(
        "# copr traffic recording (libcopr_interpose, COPR_RECORD) of {p} ranks of MPI_COMM_WORLD\n\
         # a line `src dst bytes # messages` sums what world rank src sent world rank dst:\n\
         # point-to-point sends (Send, Isend, Ssend, Issend, Bsend, Ibsend, Rsend, Irsend,\n\
         # persistent sends when started, Sendrecv, Sendrecv_replace) and neighbourhood\n\
         # collectives; a rank's sends to itself are listed (copr map leaves them out).\n\
         # Collectives are not in the graph: they are listed at the end.\n\
         # total: {messages} messages, {bytes} bytes\n\
         tasks {p}\n"
    )
}

/// Persistent requests on 4 ranks: rank r starts a send of 8 (r + 1) bytes to r + 1
/// three times (the last rank sends nothing): 24, 48 and 72 bytes.
fn persistent() -> String {
    header(4, 9, 144)
        + "# host 0 a\n# host 1 a\n# host 2 b\n# host 3 b\n\
           0 1 24 # 3 messages\n1 2 48 # 3 messages\n2 3 72 # 3 messages\n"
}

/// `MPI_Sendrecv` on a ring of 7 ranks: 100 bytes to the right, once each.
fn ring7() -> String {
    let mut t = header(7, 7, 700);
    for r in 0..7 {
        t += &format!("# host {r} vm\n");
    }
    for r in 0..7 {
        t += &format!("{r} {} 100 # 1 messages\n", (r + 1) % 7);
    }
    t
}

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["map", "--budget", "1", "--json"];
    all.extend_from_slice(args);
    let (o, _) = ok(&copr_in(dir, &all));
    serde_json::from_str(&o).expect("one JSON object")
}

fn metric(v: &serde_json::Value, strategy: &str, field: &str) -> u64 {
    v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["strategy"] == strategy)
        .unwrap_or_else(|| panic!("no row {strategy}: {v}"))["metrics"][field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} of {strategy}: {v}"))
}

#[test]
fn a_recording_maps_to_the_bytes_the_program_sent() {
    let dir = scratch("copr-recordings-ok");
    write(&dir, "persist.txt", &persistent());
    // 2 nodes of 2: packed keeps 0-1 (24) and 2-3 (72) on a node, 48 crosses; no
    // split of the chain 0-1-2-3 into pairs cuts less
    let v = json(
        &dir,
        &[
            "--graph",
            "persist.txt",
            "--flat",
            "2",
            "--ranks-per-node",
            "2",
        ],
    );
    for s in ["packed", "optimised"] {
        assert_eq!(metric(&v, s, "total_bytes"), 144);
        assert_eq!(metric(&v, s, "intra_node_bytes"), 96);
        assert_eq!(metric(&v, s, "hop_bytes"), 48);
    }
    // the run's own hosts: a a b b is packed, the same 48 bytes between hosts
    let v = json(
        &dir,
        &["--graph", "persist.txt", "--machine-from-recording"],
    );
    assert_eq!(metric(&v, "optimised", "hop_bytes"), 48);
    // the ring of 7 on 4 nodes of 2 (one slot empty): three pairs keep 300 of 700
    write(&dir, "ring7.txt", &ring7());
    let v = json(
        &dir,
        &[
            "--graph",
            "ring7.txt",
            "--flat",
            "4",
            "--ranks-per-node",
            "2",
        ],
    );
    assert_eq!(metric(&v, "optimised", "total_bytes"), 700);
    assert_eq!(metric(&v, "optimised", "intra_node_bytes"), 300);
    // fewer slots than ranks: refused
    let out = copr_in(
        &dir,
        &[
            "map",
            "--graph",
            "ring7.txt",
            "--flat",
            "3",
            "--ranks-per-node",
            "2",
        ],
    );
    refused(&out, &["7 tasks", "6 slots"]);
}

#[test]
fn a_truncated_or_extended_recording_is_refused_not_mapped_short() {
    let dir = scratch("copr-recordings-cut");
    let full = ring7();
    // cut after the fifth message: 500 of the 700 bytes
    let keep = full.lines().take(8 + 7 + 5).collect::<Vec<_>>().join("\n") + "\n";
    write(&dir, "cut.txt", &keep);
    let out = copr_in(
        &dir,
        &[
            "map",
            "--graph",
            "cut.txt",
            "--flat",
            "4",
            "--ranks-per-node",
            "2",
        ],
    );
    refused(
        &out,
        &["cut.txt", "line 7", "700 bytes", "sum to 500", "truncated"],
    );
    // cut inside a number: "6 0 1" instead of "6 0 100"
    write(
        &dir,
        "digit.txt",
        &full[..full.len() - "00 # 1 messages\n".len()],
    );
    let out = copr_in(
        &dir,
        &[
            "map",
            "--graph",
            "digit.txt",
            "--flat",
            "4",
            "--ranks-per-node",
            "2",
        ],
    );
    refused(&out, &["digit.txt", "sum to 601"]);
    // a line appended by hand
    write(&dir, "more.txt", &(full.clone() + "0 1 100\n"));
    let out = copr_in(
        &dir,
        &[
            "map",
            "--graph",
            "more.txt",
            "--flat",
            "4",
            "--ranks-per-node",
            "2",
        ],
    );
    refused(&out, &["more.txt", "sum to 800"]);
    // without the total line the edit is the user's: mapped as written
    let edited: String = (full + "0 1 100\n")
        .lines()
        .filter(|l| !l.starts_with("# total:"))
        .map(|l| format!("{l}\n"))
        .collect();
    write(&dir, "edited.txt", &edited);
    let v = json(
        &dir,
        &[
            "--graph",
            "edited.txt",
            "--flat",
            "4",
            "--ranks-per-node",
            "2",
        ],
    );
    assert_eq!(metric(&v, "packed", "total_bytes"), 800);
    // a graph written by hand with a `# total:` comment is not a recording: not checked
    write(&dir, "hand.txt", "# total: 5 bytes\n0 1 100\n");
    let v = json(
        &dir,
        &[
            "--graph",
            "hand.txt",
            "--flat",
            "1",
            "--ranks-per-node",
            "2",
        ],
    );
    assert_eq!(metric(&v, "packed", "total_bytes"), 100);
}

#[test]
fn a_run_that_ended_before_mpi_finalize_is_said_so() {
    let dir = scratch("copr-recordings-abort");
    // what the recorder leaves at MPI_Init, until MPI_Finalize replaces it
    write(
        &dir,
        "aborted.txt",
        &format!(
            "{} (COPR_RECORD): the run has not reached MPI_Finalize, where the traffic is written\n",
            copr_mapping::INCOMPLETE_RECORDING
        ),
    );
    let out = copr_in(&dir, &["map", "--graph", "aborted.txt", "--flat", "2"]);
    refused(
        &out,
        &["aborted.txt", "incomplete recording", "MPI_Finalize"],
    );
    write(&dir, "empty.txt", "");
    let out = copr_in(&dir, &["map", "--graph", "empty.txt", "--flat", "2"]);
    refused(&out, &["empty.txt", "the file is empty"]);
}

#[test]
fn host_lines_are_read_as_a_user_may_write_them() {
    let dir = scratch("copr-recordings-hosts");
    // `#host` and a tab: the same host lines (before, they were comments and the
    // rank had no host)
    write(&dir, "tabs.txt", "tasks 2\n#host 0 a\n# host\t1 b\n0 1 5\n");
    let v = json(&dir, &["--graph", "tabs.txt", "--machine-from-recording"]);
    assert_eq!(metric(&v, "packed", "hop_bytes"), 5);
    // a comment that merely begins with the word is not a host line
    write(
        &dir,
        "words.txt",
        "tasks 2\n# hosts below\n# host 0 a\n# host 1 a\n0 1 5\n",
    );
    let v = json(&dir, &["--graph", "words.txt", "--machine-from-recording"]);
    assert_eq!(metric(&v, "packed", "hop_bytes"), 0);
    // hosts for ranks the graph does not name (rank 2 sent and received nothing),
    // all on one host, under `tasks 3` or no task count: the job is every rank the
    // run had (before: "the pattern has 2 tasks but the machine has 3 slots")
    for (name, tasks) in [("spare.txt", "tasks 3\n"), ("spare-untold.txt", "")] {
        let text = format!("{tasks}# host 0 a\n# host 1 a\n# host 2 a\n0 1 5\n");
        write(&dir, name, &text);
        let rf = dir.join("rankfile");
        let _ = std::fs::remove_file(&rf);
        let (o, _) = ok(&copr_in(
            &dir,
            &[
                "map",
                "--graph",
                name,
                "--machine-from-recording",
                "--budget",
                "1",
                "--rankfile",
                rf.to_str().expect("utf-8"),
            ],
        ));
        assert!(o.contains("recorded run"), "{name}: {o}");
        let ranks = std::fs::read_to_string(&rf).expect("rankfile written");
        assert_eq!(ranks.lines().count(), 3, "{name}: {ranks}");
    }
    // a host line far beyond the others: refused without memory for every rank up to
    // it (before: 4 194 304 empty entries, about 100 MB)
    // (no task count; under `tasks 2` the line itself is refused, as beyond it)
    write(&dir, "far.txt", "# host 0 a\n# host 4194303 b\n0 1 5\n");
    let out = capped(
        &["map", "--graph", "far.txt", "--machine-from-recording"],
        &dir,
        100_000,
        Some(60),
    );
    refused(&out, &["far.txt", "no `# host 1"]);
    write(
        &dir,
        "far-told.txt",
        "tasks 2\n# host 0 a\n# host 4194303 b\n0 1 5\n",
    );
    let out = capped(
        &["map", "--graph", "far-told.txt", "--machine-from-recording"],
        &dir,
        100_000,
        Some(60),
    );
    refused(&out, &["far-told.txt", "line 3", "rank 4194303", "tasks 2"]);
}

#[test]
fn a_recorded_host_name_the_exports_cannot_carry_names_the_recording() {
    let dir = scratch("copr-recordings-host-name");
    for name in ["a=b", "a#b", "a,b"] {
        write(
            &dir,
            "r.txt",
            &format!("tasks 2\n# host 0 {name}\n# host 1 c\n0 1 100\n"),
        );
        refused(
            &copr_in(
                &dir,
                &["map", "--graph", "r.txt", "--machine-from-recording"],
            ),
            &["r.txt", name],
        );
    }
}
