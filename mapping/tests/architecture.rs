//! The mapper's modules form layers (ARCHITECTURE.md): each module uses only those of
//! its own layer and below, read from `mapping/src` by `copr_testkit::modules`
//! (`crate::…` and `super::` paths, the root's re-exports; comments and
//! `#[cfg(test)]` modules aside). `cargo test -p copr-mapping --test architecture --
//! --nocapture` prints the graph.

use std::path::Path;

use copr_testkit::modules::module_graph;

/// The optimiser and its phases: one layer, the only one whose modules still use each
/// other both ways (`optimise` calls the anytime phase, the multilevel V-cycle, the
/// padded-grid starts, the algorithm tiles and libscotch's starts, which call back its
/// refinement, balancing and tile embeddings).
const OPTIMISER: &[&str] = &[
    "candidates",
    "swaps",
    "tiles",
    "padded",
    "multilevel",
    "anytime",
    "tile_traffic",
    "scotch",
    "optimise",
];

/// The modules, lowest layer first.
const LAYERS: &[&[&str]] = &[
    &["errors", "curve"],
    &["pattern"],
    &["machine"],
    &["recognise", "algorithms"],
    &["metrics", "ecmp"],
    &["strategy"],
    OPTIMISER,
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
    for c in &cycles {
        assert!(
            c.iter().all(|m| OPTIMISER.contains(&m.as_str())),
            "a cycle outside the optimiser's layer: {c:?}"
        );
    }
    // the check sees something: the report stands on the metrics and the strategies
    let report = &graph.arrows["report"];
    for below in ["metrics", "strategy", "machine"] {
        assert!(report.contains(below), "report -> {below}: {report:?}");
    }
}
