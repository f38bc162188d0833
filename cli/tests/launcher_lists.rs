//! Machines as a new user's launcher describes them: an Open MPI hostfile
//! (`node slots=N`) or an MPICH machine file (`node:N`) given where a machine file
//! goes (`copr map --machine`, `copr topo`, `copr plan --cost`), and per-node slot
//! counts and node names a machine file gives in forms serde cannot name. Each ends in
//! the answer checked by hand here or in exit 2 with one `copr: error:` line.

mod common;

use common::{copr_in, ok, refused, scratch, write};

use std::collections::BTreeMap;
use std::path::Path;

/// Host → ranks the rankfile puts there, and every (host, slot) once.
fn rankfile_hosts(path: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(path).expect("rankfile written");
    let mut per = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for l in text.lines() {
        // rank R=HOST slot=S
        let rest = l.split_once('=').expect("rank R=HOST slot=S").1;
        let (host, slot) = rest.split_once(" slot=").expect("a slot");
        assert!(seen.insert((host.to_string(), slot.to_string())), "{l}");
        *per.entry(host.to_string()).or_insert(0) += 1;
    }
    per
}

#[test]
fn a_hostfile_is_a_machine_of_its_nodes_and_slots() {
    let dir = scratch("copr-launcher-hostfile");
    write(
        &dir,
        "hosts",
        "# our allocation\nbig slots=4 max_slots=8\nsmall slots=2\nsmall\nmpich:1\n",
    );
    // pairs (0,1) (2,3) heavy, a light ring through them all
    write(
        &dir,
        "g.txt",
        "tasks 6\n0 1 1000\n2 3 1000\n4 5 1000\n0 2 1\n2 4 1\n4 0 1\n",
    );
    let rf = dir.join("rankfile");
    let (o, _) = ok(&copr_in(
        &dir,
        &[
            "map",
            "--graph",
            "g.txt",
            "--machine",
            "hosts",
            "--budget",
            "1",
            "--rankfile",
            rf.to_str().expect("utf-8"),
        ],
    ));
    // big 4, small 2 + 1 (listed twice), mpich 1: 8 slots
    assert!(o.contains("slots per node 4,3,1"), "{o}");
    let per = rankfile_hosts(&rf);
    assert_eq!(per.values().sum::<usize>(), 6, "{per:?}");
    assert!(per.get("big").copied().unwrap_or(0) <= 4, "{per:?}");
    assert!(per.get("small").copied().unwrap_or(0) <= 3, "{per:?}");
    assert!(per.get("mpich").copied().unwrap_or(0) <= 1, "{per:?}");
    // the three heavy pairs fit whole on big (two) and small (one): only the light
    // ring crosses, at most 3 bytes
    let (j, _) = ok(&copr_in(
        &dir,
        &[
            "map",
            "--graph",
            "g.txt",
            "--machine",
            "hosts",
            "--budget",
            "1",
            "--json",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&j).expect("JSON");
    let opt = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["strategy"] == "optimised")
        .expect("optimised");
    assert_eq!(opt["metrics"]["intra_node_bytes"], 3000 + 1, "{opt}");
    // copr topo and copr plan --cost read it too
    let (t, _) = ok(&copr_in(&dir, &["topo", "hosts"]));
    assert!(t.contains("ranks: 8") && t.contains("nodes: 3"), "{t}");
    ok(&copr_in(
        &dir,
        &[
            "plan",
            "--source",
            "block-cyclic:m=16,n=16,mb=2,nb=2,nprow=2,npcol=4",
            "--target",
            "block-cyclic:m=16,n=16,mb=4,nb=4,nprow=2,npcol=4",
            "--cost",
            "hosts",
        ],
    ));
}

#[test]
fn a_bad_hostfile_line_is_named() {
    let dir = scratch("copr-launcher-bad");
    for (text, needle) in [
        (
            "a slots=4\nb slots=x\n",
            "hosts:2: field `hostfile`: `slots=x`: the slots must be a whole number, not `x`",
        ),
        (
            "a:4\nb:x\n",
            "hosts:2: field `hostfile`: `b:x`: the slots must be a whole number, not `x`",
        ),
        ("a slots=0\n", "no slots"),
        ("a:0\n", "no slots"),
        ("a cpus=4\n", "unknown key"),
        ("a slots=1 slots=2\n", "twice"),
    ] {
        write(&dir, "hosts", text);
        for cmd in [
            &["topo", "hosts"][..],
            &["map", "--grid", "2x2", "--machine", "hosts"][..],
        ] {
            refused(&copr_in(&dir, cmd), &[needle]);
        }
    }
    // too few slots for the job: the usual refusal
    write(&dir, "hosts", "a slots=2\nb slots=1\n");
    refused(
        &copr_in(&dir, &["map", "--grid", "2x2", "--machine", "hosts"]),
        &["4 tasks", "3 slots"],
    );
}

#[test]
fn slot_counts_and_node_names_of_a_wrong_type_say_what_is_expected() {
    let dir = scratch("copr-launcher-types");
    for (text, needle) in [
        (
            "ranks_per_node = -1\n[flat]\nnodes = 4\n",
            "expected slots per node",
        ),
        (
            "ranks_per_node = 2.5\n[flat]\nnodes = 4\n",
            "expected slots per node",
        ),
        ("nodes = 5\n[flat]\nnodes = 4\n", "expected node names"),
        (
            "nodes = [\"a\", 3]\n[flat]\nnodes = 2\n",
            "expected node names",
        ),
    ] {
        write(&dir, "m.toml", text);
        let e = refused(&copr_in(&dir, &["topo", "m.toml"]), &[needle, "m.toml:1"]);
        assert!(!e.contains("untagged"), "{e}");
    }
    // SLURM_TASKS_PER_NODE and a Slurm list with a number of another width
    write(
        &dir,
        "m.toml",
        "ranks_per_node = \"2(x3),1\"\nnodes = \"nid[001-003,7]\"\n[flat]\nnodes = 4\n",
    );
    let rf = dir.join("rankfile");
    ok(&copr_in(
        &dir,
        &[
            "map",
            "--grid",
            "7",
            "--machine",
            "m.toml",
            "--budget",
            "1",
            "--rankfile",
            rf.to_str().expect("utf-8"),
        ],
    ));
    let per = rankfile_hosts(&rf);
    let want: BTreeMap<String, usize> = [("nid001", 2), ("nid002", 2), ("nid003", 2), ("nid7", 1)]
        .into_iter()
        .map(|(h, k)| (h.to_string(), k))
        .collect();
    assert_eq!(per, want);
}

#[test]
fn topo_of_zero_ranks_is_refused_before_the_placement_speaks() {
    // (before: "for 0 ranks, use rule = packed …, or calibrate on 0 ranks")
    let out = common::copr(&["topo", "data/topology/calibrated-4.toml", "--ranks", "0"]);
    let e = refused(&out, &["--ranks 0", ">= 1"]);
    assert!(!e.contains("calibrate on 0"), "{e}");
}

#[test]
fn a_slurm_list_with_two_groups_in_a_name_names_every_combination() {
    // (before: "one bracket group per name is supported")
    let dir = scratch("copr-launcher-groups");
    let rf = dir.join("rankfile");
    ok(&copr_in(
        &dir,
        &[
            "map",
            "--grid",
            "4",
            "--flat",
            "4",
            "--nodes",
            "r[1-2]n[08-9]",
            "--strategies",
            "packed",
            "--export",
            "packed",
            "--rankfile",
            rf.to_str().expect("utf-8"),
        ],
    ));
    let text = std::fs::read_to_string(&rf).expect("rankfile written");
    let hosts: Vec<&str> = text
        .lines()
        .map(|l| l.split_once('=').expect("rank R=HOST").1)
        .map(|r| r.split_once(' ').expect("HOST slot=S").0)
        .collect();
    assert_eq!(hosts, ["r1n08", "r1n09", "r2n08", "r2n09"]);
}

#[test]
fn a_sweep_of_no_block_size_is_refused() {
    // (before: "0 block sizes", exit 0, and an empty chart)
    let dir = scratch("copr-sweep-empty");
    write(
        &dir,
        "sw.toml",
        "m = 100\nn = 100\nnprow = 2\nnpcol = 2\ntarget_block = 10\nblocks = []\n",
    );
    let out = copr_in(&dir, &["sweep", "--config", "sw.toml"]);
    refused(&out, &["sw.toml: field `blocks`", "empty"]);
    assert!(
        !dir.join("copr-sweep.svg").exists(),
        "a chart of nothing was written"
    );
}

#[test]
fn the_slurm_hostfile_copr_writes_reads_back_as_its_machine() {
    let dir = scratch("copr-launcher-roundtrip");
    ok(&copr_in(
        &dir,
        &[
            "map",
            "--grid",
            "4x4",
            "--flat",
            "4",
            "--ranks-per-node",
            "4",
            "--nodes",
            "n[1-4]",
            "--budget",
            "1",
            "--slurm-hostfile",
            "hosts.out",
        ],
    ));
    // one line per rank: each node named as often as it runs ranks
    let (o, _) = ok(&copr_in(
        &dir,
        &[
            "map",
            "--grid",
            "4x4",
            "--machine",
            "hosts.out",
            "--budget",
            "1",
        ],
    ));
    assert!(o.contains("4 nodes x 4 ranks"), "{o}");
}

#[test]
fn too_many_slots_on_nodes_of_different_sizes_names_the_largest_node() {
    // 4 194 307 slots in all, held as 4 nodes of the largest count: the message says
    // which count it multiplied (before, "4 nodes x 4194304 ranks per node" read as
    // the allocation's own size)
    let dir = scratch("copr-launcher-many");
    write(
        &dir,
        "m.toml",
        "ranks_per_node = \"4194304,1(x3)\"\n[flat]\nnodes = 4\n",
    );
    refused(
        &copr_in(&dir, &["map", "--grid", "2", "--machine", "m.toml"]),
        &["4 nodes x 4194304 ranks per node (the largest node's)"],
    );
}

#[test]
fn a_hostfile_with_spaces_around_the_equals_sign_is_read_as_open_mpi_reads_it() {
    let dir = scratch("copr-launcher-spaced");
    // Open MPI's mpirun takes `slots = 2` as `slots=2`
    write(&dir, "hosts", "a slots = 3\nb slots =1 max_slots= 4\n");
    let (o, _) = ok(&copr_in(&dir, &["topo", "hosts"]));
    assert!(o.contains("ranks: 4   nodes: 2"), "{o}");
    let (o, _) = ok(&copr_in(
        &dir,
        &[
            "map",
            "--grid",
            "2x2",
            "--machine",
            "hosts",
            "--strategies",
            "packed",
        ],
    ));
    assert!(o.contains("slots per node 3,1"), "{o}");
    write(&dir, "hosts", "a slots = x\n");
    refused(
        &copr_in(&dir, &["topo", "hosts"]),
        &["hosts:1: field `hostfile`: `slots=x`: the slots must be a whole number"],
    );
}

#[test]
fn a_file_of_only_comments_is_refused_in_one_plain_line() {
    let dir = scratch("copr-launcher-comments");
    write(&dir, "hosts", "# nothing here yet\n\n");
    for cmd in [
        &["topo", "hosts"][..],
        &["map", "--grid", "2x2", "--machine", "hosts"][..],
    ] {
        let e = refused(&copr_in(&dir, cmd), &["describes no machine", "[flat]"]);
        assert!(!e.contains("  "), "a run of spaces inside the message: {e}");
    }
}

/// `copr topo -` with `text` on standard input.
fn topo_stdin(text: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(common::bin())
        .args(["topo", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("copr runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("written");
    child.wait_with_output().expect("copr ends")
}

#[test]
fn standard_input_is_read_as_a_machine_file_is() {
    // a host list, as from a file
    let (o, _) = ok(&topo_stdin("a slots=3\nb:1\n"));
    assert!(o.contains("ranks: 4   nodes: 2"), "{o}");
    refused(
        &topo_stdin("a slots=x\n"),
        &["-:1: field `hostfile`: `slots=x`"],
    );
    // nothing, or only comments: no machine, not a placement without ranks
    for text in ["", "# later\n"] {
        refused(&topo_stdin(text), &["-", "describes no machine"]);
    }
    // the short form still reads
    let (o, _) = ok(&topo_stdin("ranks_per_node = 2\n[flat]\nnodes = 3\n"));
    assert!(o.contains("ranks: 6   nodes: 3"), "{o}");
}
