//! The mapper's modules form layers (ARCHITECTURE.md): each module uses only those of
//! its own layer and below, and no two modules use each other (no cycle, not even
//! inside a layer), read from `mapping/src` by `copr_testkit::modules`
//! (`crate::…` and `super::` paths, the root's re-exports; comments and
//! `#[cfg(test)]` modules aside). `cargo test -p copr-mapping --test architecture --
//! --nocapture` prints the graph.

use std::path::Path;

use copr_testkit::modules::module_graph;

/// The modules, lowest layer first.
const LAYERS: &[&[&str]] = &[
    &[
        "errors",
        "curve",
        "paths",
        "gain_heap",
        "graph_formats",
        "clock",
    ],
    &["pattern", "bundles", "route_table"],
    &["machine"],
    &["recognise", "algorithms"],
    &["metrics", "ecmp", "fluid", "staged"],
    &["strategy"],
    // the optimiser's tools: scored candidates, swaps, tile grids and their embeddings
    &["candidates", "swaps", "tiles"],
    &["multilevel"],
    // its phases (the padded-grid starts get the optimiser as an argument)
    &[
        "padded",
        "anytime",
        "tile_traffic",
        "scotch",
        "restarts",
        "program_choice",
        "groups",
    ],
    &["optimise"],
    &["report", "recording", "export", "simgrid"],
    &["slots"],
    &["mpi"],
];

#[test]
fn every_module_uses_only_its_layer_and_those_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src).unwrap();
    println!(
        "copr-mapping (mapping/src): {} modules",
        graph.modules.len()
    );
    for line in graph.lines() {
        println!("  {line}");
    }
    let (upward, unlisted) = graph.against_layers(LAYERS);
    assert!(
        unlisted.is_empty(),
        "modules without a layer in mapping/tests/architecture.rs: {unlisted:?}"
    );
    assert!(upward.is_empty(), "arrows up the layers: {upward:?}");
    let cycles = graph.cycles();
    println!("cycles: {cycles:?}");
    assert!(cycles.is_empty(), "modules that use each other: {cycles:?}");
    // the check sees something: the report stands on the metrics and the strategies
    let report = &graph.arrows["report"];
    for below in ["metrics", "strategy", "machine"] {
        assert!(report.contains(below), "report -> {below}: {report:?}");
    }
    // and the optimiser stands on its phases, which stand on its tools
    let optimise = &graph.arrows["optimise"];
    for below in [
        "padded",
        "anytime",
        "tile_traffic",
        "multilevel",
        "swaps",
        "tiles",
    ] {
        assert!(
            optimise.contains(below),
            "optimise -> {below}: {optimise:?}"
        );
    }
    assert!(graph.arrows["padded"].contains("swaps"));
}

/// Every reading of the time in the mapper is `clock::now` (or `clock::since`), so that
/// the tests on a simulated slow machine (`clock::slowed`) see every step's time: no
/// `Instant::now`, `.elapsed()` or `SystemTime` in `mapping/src` outside `clock.rs`
/// (comment lines aside).
#[test]
fn every_reading_of_the_time_is_the_clocks() {
    fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    assert!(all.len() > 20, "{} files", all.len());
    let mut found = Vec::new();
    for f in all.iter().filter(|f| !f.ends_with("clock.rs")) {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if ["Instant::now", ".elapsed()", "SystemTime"]
                .iter()
                .any(|w| code.contains(w))
            {
                found.push(format!("{}:{}: {}", f.display(), i + 1, code));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the time read past clock.rs (write `crate::clock::now()` for `Instant::now()`, \
         `crate::clock::since(t0)` for `t0.elapsed()`): {found:#?}"
    );
}
