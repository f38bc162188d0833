//! A machine file with its measured costs inside (what `copr calibrate` writes) prices
//! every package exactly as the cost config it replaces (`latency-bandwidth` +
//! `transform` terms around an inline topology), and its `[transform]` is checked as
//! every other number of a file.

use std::path::{Path, PathBuf};

use copr_cost_models::{load_setup, Package};

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("copr-machine-costs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const MACHINE: &str = "[intra]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = 8e9\n\n\
     [inter]\nkind = \"uniform\"\nlatency = 2e-6\nbandwidth = 1.5e9\n\n\
     [placement]\nrule = \"packed\"\nranks = 6\nranks_per_node = 2\n";

const TRANSFORM: &str = "[transform]\nscale = 1.25e-11\ntranspose = 3.5e-10\nconjugate = 4e-11\n";

/// Packages of every kind of transform, and none.
fn packages() -> Vec<Package> {
    let mut out = vec![Package::EMPTY, Package::plain(1), Package::plain(1 << 20)];
    for (s, t, c) in [(100, 0, 0), (0, 4096, 0), (0, 0, 777), (3, 5000, 64)] {
        let mut p = Package::plain(8192);
        p.transform.scale = s;
        p.transform.transpose = t;
        p.transform.conjugate = c;
        out.push(p);
    }
    out
}

/// The largest |a − b| over every rank pair and package, and whether any cost is 0
/// where the other is not.
fn same_costs(a: &Path, b: &Path) {
    let (a, b) = (load_setup(a, None).unwrap(), load_setup(b, None).unwrap());
    let ranks = a.machine.as_ref().unwrap().ranks();
    assert_eq!(ranks, b.machine.as_ref().unwrap().ranks());
    for i in 0..ranks {
        for j in 0..ranks {
            for p in packages() {
                let (x, y) = (a.model.cost(i, j, &p), b.model.cost(i, j, &p));
                assert_eq!(
                    x.to_bits(),
                    y.to_bits(),
                    "({i}, {j}) {p:?}: {x} against {y}"
                );
            }
        }
    }
}

#[test]
fn a_calibrated_machine_prices_as_the_cost_config_it_replaces() {
    let machine = write("cal-machine.toml", &format!("{MACHINE}\n{TRANSFORM}"));
    let topology = MACHINE
        .replace("[intra]", "[topology.intra]")
        .replace("[inter]", "[topology.inter]")
        .replace("[placement]", "[topology.placement]");
    let old = write(
        "cal-cost.toml",
        &format!(
            "[[terms]]\nmodel = \"latency-bandwidth\"\n\n[[terms]]\nmodel = \"transform\"\n{}\nremote_only = false\n\n{topology}",
            TRANSFORM.trim_start_matches("[transform]\n")
        ),
    );
    same_costs(&machine, &old);
    // the transform is priced: a transposed package costs more than a plain one
    let setup = load_setup(&machine, None).unwrap();
    let mut t = Package::plain(8192);
    t.transform.transpose = 8192;
    assert!(setup.model.cost(0, 2, &t) > setup.model.cost(0, 2, &Package::plain(8192)));
    // without [transform]: latency + bandwidth alone
    let bare = write("bare-machine.toml", MACHINE);
    let lb = write(
        "lb-cost.toml",
        &format!("[[terms]]\nmodel = \"latency-bandwidth\"\n\n{topology}"),
    );
    same_costs(&bare, &lb);
}

#[test]
fn bad_transform_costs_name_file_line_and_field() {
    let cases = [
        (
            "neg-transform.toml",
            format!("{MACHINE}\n[transform]\ntranspose = -1e-9\n"),
            vec!["neg-transform.toml:17", "transform.transpose", "negative"],
        ),
        (
            "typo-transform.toml",
            format!("{MACHINE}\n[transform]\ntranpose = 1e-9\n"),
            vec!["typo-transform.toml", "tranpose"],
        ),
        (
            // a cost config prices by its terms: a transform in its topology would be
            // silently unused
            "cost-with-transform.toml",
                "[[terms]]\nmodel = \"latency-bandwidth\"\n[topology.inter]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = 1e9\n[topology.placement]\nrule = \"packed\"\nranks = 2\n[topology.transform]\ntranspose = 1e-10\n".to_string(),
            vec!["cost-with-transform.toml", "topology.transform", "model = \"transform\""],
        ),
    ];
    for (name, text, words) in cases {
        let p = write(name, &text);
        let msg = load_setup(&p, None).unwrap_err().to_string();
        for w in words {
            assert!(msg.contains(w), "{name}: `{w}` not in: {msg}");
        }
    }
}
