//! The core library's modules form layers: each module uses only modules below it
//! (ARCHITECTURE.md). The module graph comes from `copr_testkit::modules`, which reads
//! `src/` and finds every module a module's code names (`crate::…` paths, groups
//! `crate::{a, b}`, `super::` chains, the root's re-exports; comments and
//! `#[cfg(test)]` modules aside), so a new upward or cyclic arrow fails here rather
//! than in review. The crates are checked the same way, from `cargo metadata`.
//! `cargo test -p copr --test architecture -- --nocapture` prints both graphs.

use std::collections::BTreeMap;
use std::path::Path;

use copr_testkit::modules::{module_graph, uses};

/// The top-level modules, lowest first. A module may use those before it.
const LAYERS: [&str; 13] = [
    "error",
    "rng",
    "files",
    "csr",
    "lap",
    "layout",
    "volume",
    "gain",
    "relabel",
    "plan",
    "transport",
    "engine",
    "sweep",
];

/// The workspace's crates, lowest first: a crate's normal and build dependencies are
/// crates before it (dev-dependencies, for tests and benches, may point anywhere).
const CRATE_LAYERS: [&[&str]; 6] = [
    &["copr-topology"],
    &["copr-cost-models"],
    &["copr"],
    &["copr-mapping", "copr-testkit"],
    &["copr-capi", "copr-interpose", "copr-cli"],
    &["copr-scalapack"],
];

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src).unwrap();
    println!("copr (src/): {} modules", graph.modules.len());
    for line in graph.lines() {
        println!("  {line}");
    }
    let layers: Vec<&[&str]> = LAYERS.iter().map(std::slice::from_ref).collect();
    let (upward, unlisted) = graph.against_layers(&layers);
    assert!(
        unlisted.is_empty(),
        "modules without a layer in tests/architecture.rs: {unlisted:?}"
    );
    assert!(upward.is_empty(), "arrows up the layers: {upward:?}");
    assert!(graph.cycles().is_empty(), "cycles: {:?}", graph.cycles());
    let arrows = &graph.arrows;
    // the check above sees something: the engine uses the layers it builds on
    let engine = &arrows["engine"];
    for below in ["layout", "plan", "transport"] {
        assert!(
            engine.contains(below),
            "engine -> {below} not found: {engine:?}"
        );
    }
}

#[test]
fn the_scanner_sees_code_and_skips_comments() {
    let text = "use crate::lap::Perm;\n/// [`crate::engine::Plan`]\n// crate::plan\nlet x = crate::gain::f(); // crate::sweep\n";
    let found: Vec<String> = uses(text, &["volume"]).into_iter().collect();
    assert_eq!(found, ["gain", "lap"]);
}

/// The workspace's crates from `cargo metadata`: name -> its normal and build
/// dependencies among the workspace's crates.
fn crate_graph() -> BTreeMap<String, Vec<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(d))
                .map(str::to_owned)
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_the_crates_below_it() {
    let crates = crate_graph();
    let level = |c: &str| CRATE_LAYERS.iter().position(|l| l.contains(&c));
    let mut upward = Vec::new();
    println!("crates (normal and build dependencies):");
    for (name, deps) in &crates {
        println!("  {name} -> {}", deps.join(", "));
        let Some(here) = level(name) else {
            panic!("crate {name} has no layer in tests/architecture.rs");
        };
        for d in deps {
            if level(d).is_none_or(|l| l >= here) {
                upward.push(format!("{name} -> {d}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "crate arrows not pointing down: {upward:?}"
    );
    // the check sees something: the command line stands on the mapper and the core
    assert!(crates["copr-cli"].iter().any(|d| d == "copr-mapping"));
    assert!(crates["copr-mapping"].iter().any(|d| d == "copr"));
}

/// The modules of the other crates form no cycle (the mapper's layers are checked in
/// `mapping/tests/architecture.rs`).
#[test]
fn the_other_crates_modules_form_no_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in [
        "topology/src",
        "cost-models/src",
        "cli/src",
        "capi/src",
        "interpose/src",
        "scalapack/src",
        "testkit/src",
    ] {
        let graph = module_graph(&root.join(dir)).unwrap();
        println!("{dir}: {} modules", graph.modules.len());
        for line in graph.lines() {
            println!("  {line}");
        }
        assert!(
            graph.cycles().is_empty(),
            "{dir}: cycles {:?}",
            graph.cycles()
        );
        assert!(!graph.modules.is_empty(), "{dir}: no module found");
    }
}
