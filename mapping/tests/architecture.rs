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
    &["errors", "curve", "paths", "gain_heap", "graph_formats"],
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
