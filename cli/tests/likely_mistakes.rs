//! Inputs that read but most likely are a user's mistake end in one line naming the file
//! and the field (exit 2), and the valid input next to each still reads: an empty or
//! repeated-level node shape, a network link given twice, a zero inverse bandwidth
//! between two different rows of a cost matrix, two batch entries of one name, an empty
//! `[network] hosts`; `copr topo --bytes` takes the units `copr map --bytes` takes.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

fn dir(tag: &str) -> PathBuf {
    common::scratch(&format!("copr-likely-mistakes-{tag}"))
}

fn copr(args: &[&str], dir: &Path) -> Output {
    common::copr_in(dir, args)
}

/// `copr topo m.toml` and `copr map --machine m.toml` in `dir` with `m.toml` = `text`.
fn both_commands(dir: &Path, text: &str) -> [Output; 2] {
    common::write(dir, "m.toml", text);
    [
        copr(&["topo", "m.toml"], dir),
        copr(
            &Vec::from_iter("map --grid 2x2 --machine m.toml --strategies packed".split(' ')),
            dir,
        ),
    ]
}

#[test]
fn an_empty_or_repeated_level_shape_is_refused() {
    let d = dir("shape");
    for (shape, needle) in [
        ("", "the shape is empty"),
        ("pack:2 pack:2", "level `package` is listed twice"),
        ("pack:2 core:2 pu:1 core:2", "`pu` must be the last"),
        ("pack:1 l3:2 core:2 l3:1", "level `l3` is listed twice"),
    ] {
        let text = format!("[flat]\nnodes = 2\n[intra]\nkind = \"tree\"\nshape = \"{shape}\"\n");
        for out in both_commands(&d, &text) {
            common::refused(&out, &["m.toml", "shape", needle]);
        }
    }
    // the shapes they most likely meant read: 2 PUs per node, one PU per node
    for (shape, ranks) in [("pack:2", "ranks: 4 "), ("pu:1", "ranks: 2 ")] {
        let text = format!("[flat]\nnodes = 2\n[intra]\nkind = \"tree\"\nshape = \"{shape}\"\n");
        let [topo, map] = both_commands(&d, &text);
        let (o, _) = common::ok(&topo);
        assert!(o.contains(ranks), "{shape}: {o}");
        if shape == "pack:2" {
            common::ok(&map);
        }
    }
}

const TWO_HOSTS: &str =
    "hosts = [\"a\", \"b\"]\nswitches = [\"s\"]\n[defaults]\nlatency = 1e-6\nbandwidth = 1e9\n";

#[test]
fn a_network_link_given_twice_is_refused() {
    let d = dir("links");
    let link =
        |a: &str, b: &str, extra: &str| format!("[[links]]\na = \"{a}\"\nb = \"{b}\"\n{extra}");
    for (links, field, first) in [
        // the same link twice, in either order: one cable at 1e9 or two at 2e9?
        (
            [link("a", "s", ""), link("b", "s", ""), link("a", "s", "")].concat(),
            "links[2]",
            "links[0]",
        ),
        (
            [
                link("a", "s", ""),
                link("s", "b", ""),
                link("b", "s", "bandwidth = 5e8\n"),
            ]
            .concat(),
            "links[2]",
            "links[1]",
        ),
        // a bidirectional link over a directed one
        (
            [
                link("a", "s", "directed = true\n"),
                link("s", "a", "directed = true\n"),
                link("b", "s", ""),
                link("s", "a", ""),
            ]
            .concat(),
            "links[3]",
            "links[1]",
        ),
    ] {
        let net = common::write(&d, "n.net.toml", &format!("{TWO_HOSTS}{links}"));
        common::refused(
            &copr(&["topo", net.to_str().unwrap()], &d),
            &["n.net.toml", field, first, "already given"],
        );
        // also through a machine file's [network]
        let [topo, map] =
            both_commands(&d, "ranks_per_node = 2\n[network]\nfile = \"n.net.toml\"\n");
        common::refused(&topo, &["n.net.toml", field, first]);
        common::refused(&map, &["n.net.toml", field, first]);
    }
    // one directed link each way, with different bandwidths, is not a repetition
    let links = [
        link("a", "s", "directed = true\n"),
        link("s", "a", "directed = true\nbandwidth = 2e9\n"),
        link("b", "s", ""),
    ]
    .concat();
    common::write(&d, "n.net.toml", &format!("{TWO_HOSTS}{links}"));
    let (o, _) = common::ok(&copr(&["topo", "n.net.toml"], &d));
    assert!(o.contains("2 hosts, 1 switch, 4 directed links"), "{o}");
}

#[test]
fn a_zero_inverse_bandwidth_between_two_rows_is_refused() {
    let d = dir("matrix");
    let matrix = |inv01: &str| {
        format!(
            "names = [\"n0\", \"n1\"]\nlatency = [[0.0, 1e-6], [1e-6, 0.0]]\ninv_bandwidth = [[0.0, {inv01}], [1e-9, 0.0]]\n"
        )
    };
    let machines = [
        "rank_matrix = \"mat.toml\"\n",
        "[inter]\nkind = \"matrix\"\nfile = \"mat.toml\"\n[placement]\nrule = \"packed\"\nranks = 4\nranks_per_node = 2\n",
        "[intra]\nkind = \"matrix\"\nfile = \"mat.toml\"\n",
    ];
    for inv in ["0.0", "1e-31"] {
        common::write(&d, "mat.toml", &matrix(inv));
        for m in machines {
            let [topo, _] = both_commands(&d, m);
            common::refused(
                &topo,
                &["mat.toml", "inv_bandwidth[0][1]", "infinite bandwidth"],
            );
        }
        // the matrix file alone
        common::refused(
            &copr(&["topo", "mat.toml"], &d),
            &["mat.toml", "inv_bandwidth[0][1]"],
        );
    }
    // 0 on the diagonal (a row to itself) and 1e-30 (1e30 B/s) between rows read
    common::write(&d, "mat.toml", &matrix("1e-30"));
    for m in machines {
        let [topo, _] = both_commands(&d, m);
        common::ok(&topo);
    }
}

const BLOCKS: &str = "[transform.source]\nkind = \"block-cyclic\"\nm = 64\nn = 64\nmb = 8\nnb = 8\nnprow = 2\nnpcol = 2\n[transform.target]\nkind = \"block-cyclic\"\nm = 64\nn = 64\nmb = 16\nnb = 32\nnprow = 2\nnpcol = 2\n";

#[test]
fn two_batch_entries_of_one_name_are_refused() {
    let d = dir("batch");
    let entry = |name: Option<&str>| {
        let name = name.map_or(String::new(), |n| format!("name = \"{n}\"\n"));
        format!("[[transform]]\n{name}{BLOCKS}")
    };
    for (entries, needles) in [
        (
            [entry(Some("A")), entry(Some("B")), entry(Some("A"))],
            ["transform[2] (A)", "`A` already names transform[0]"],
        ),
        // a given name equal to another entry's default one
        (
            [entry(Some("transform[1]")), entry(None), entry(Some("C"))],
            ["transform[1]", "`transform[1]` already names transform[0]"],
        ),
    ] {
        common::write(&d, "batch.toml", &entries.concat());
        let mut all = vec!["batch.toml", "name"];
        all.extend(needles);
        common::refused(&copr(&["plan", "batch.toml"], &d), &all);
    }
    common::write(
        &d,
        "batch.toml",
        &[entry(Some("A")), entry(None), entry(Some("C"))].concat(),
    );
    let (o, _) = common::ok(&copr(&["plan", "batch.toml"], &d));
    assert!(o.contains("transform[1]") && o.contains("C"), "{o}");
}

#[test]
fn an_empty_network_host_list_is_refused_naming_it() {
    let d = dir("hosts");
    std::fs::copy(
        common::root().join("data/topology/fat-tree-k4.net.toml"),
        d.join("ft.net.toml"),
    )
    .unwrap();
    let text = "ranks_per_node = 1\n[network]\nfile = \"ft.net.toml\"\nhosts = []\n";
    for out in both_commands(&d, text) {
        common::refused(&out, &["m.toml", "network.hosts", "no hosts"]);
    }
    let text = "ranks_per_node = 1\n[network]\nfile = \"ft.net.toml\"\nhosts = [\"h0\", \"h1\", \"h2\", \"h3\"]\n";
    for out in both_commands(&d, text) {
        common::ok(&out);
    }
}

#[test]
fn topo_bytes_takes_units_as_map_bytes_does() {
    let d = dir("bytes");
    let machine = common::root().join("data/machines/torus-4x4x4.toml");
    let draw = |bytes: &str| {
        let svg = d.join(format!("heat-{bytes}.svg"));
        let out = copr(
            &[
                "topo",
                machine.to_str().unwrap(),
                "--svg",
                svg.to_str().unwrap(),
                "--bytes",
                bytes,
            ],
            &d,
        );
        common::ok(&out);
        std::fs::read_to_string(svg).unwrap()
    };
    let plain = draw("1048576");
    assert_eq!(draw("1MiB"), plain);
    assert_eq!(draw("4kB"), draw("4000"));
    assert_ne!(draw("1"), plain);
    let out = copr(
        &[
            "topo",
            machine.to_str().unwrap(),
            "--svg",
            d.join("x.svg").to_str().unwrap(),
            "--bytes",
            "1.5MiB",
        ],
        &d,
    );
    common::refused(&out, &["1.5MiB", "not a byte count"]);
}
