//! The core library's modules form layers: each module uses only modules below it
//! (ARCHITECTURE.md). The module graph comes from `copr_testkit::modules`, which reads
//! `src/` and finds every module a module's code names (`crate::…` paths, groups
//! `crate::{a, b}`, `super::` chains, the root's re-exports; comments and
//! `#[cfg(test)]` modules aside), so a new upward or cyclic arrow fails here rather
//! than in review. The crates are checked the same way, from `cargo metadata`.
//! `cargo test -p copr --test architecture -- --nocapture` prints both graphs.

use std::collections::BTreeMap;
use std::path::Path;

use copr_testkit::modules::{module_graph, rust_files, uses};

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

/// The lines of `text` (one source file) where a feature changes code other than by
/// adding or removing a whole item: a `#[cfg(...feature...)]` on a statement or an
/// expression, `cfg!(feature ...)`, or `not(feature ...)`. Attributes that only mark
/// docs (`cfg_attr(docsrs, ...)`) do not count.
fn feature_cfgs_off_items(text: &str) -> Vec<String> {
    let item = |l: &str| {
        let l = l.trim_start();
        let l = l
            .strip_prefix("pub(crate) ")
            .or_else(|| l.strip_prefix("pub(super) "))
            .or_else(|| l.strip_prefix("pub "))
            .unwrap_or(l);
        let l = l.strip_prefix("unsafe ").unwrap_or(l);
        [
            "mod ", "use ", "fn ", "impl", "struct ", "enum ", "const ", "static ", "type ",
            "trait ",
        ]
        .iter()
        .any(|k| l.starts_with(k))
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut odd = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if t.starts_with("//") || !t.contains("feature") {
            continue;
        }
        if t.contains("cfg!(") || t.contains("not(feature") {
            odd.push(format!("{}: {t}", i + 1));
        } else if t.starts_with("#[cfg(") {
            let next = lines[i + 1..]
                .iter()
                .map(|l| l.trim_start())
                .find(|l| !(l.is_empty() || l.starts_with("#[") || l.starts_with("//")));
            if !next.is_some_and(item) {
                odd.push(format!(
                    "{}: {t} {}",
                    i + 1,
                    next.unwrap_or("(end of file)")
                ));
            }
        }
    }
    odd
}

/// The files of modules that exist only with a feature (`#[cfg(feature = ...)] mod x;`
/// in `file`): `x.rs` or `x/mod.rs` beside or below it, and everything under `x/`.
fn gated_module_paths(file: &Path, text: &str) -> Vec<std::path::PathBuf> {
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs") => file.parent().map(Path::to_path_buf),
        _ => Some(file.with_extension("")),
    };
    let Some(dir) = dir else { return Vec::new() };
    let lines: Vec<&str> = text.lines().map(str::trim_start).collect();
    let mut gated = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !(l.starts_with("#[cfg(") && l.contains("feature")) {
            continue;
        }
        let next = lines[i + 1..]
            .iter()
            .find(|l| !(l.starts_with("#[") || l.starts_with("//")));
        let name = next.and_then(|n| {
            let n = n.strip_prefix("pub ").unwrap_or(n);
            n.strip_prefix("mod ")?.strip_suffix(';')
        });
        if let Some(name) = name {
            gated.push(dir.join(format!("{name}.rs")));
            gated.push(dir.join(name));
        }
    }
    gated
}

/// The root crate's features only add whole modules and items, so its code (and its
/// tests, which `scripts/test-all` runs once, with all features) is the same with and
/// without them. Code that a feature changes inside a function would need the root
/// crate's tests in the default-feature step too.
#[test]
fn features_only_add_whole_items_to_the_root_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files).unwrap();
    files.sort();
    let texts: Vec<(std::path::PathBuf, String)> = files
        .into_iter()
        .map(|f| {
            let t = std::fs::read_to_string(&f).unwrap();
            (f, t)
        })
        .collect();
    let gated: Vec<std::path::PathBuf> = texts
        .iter()
        .flat_map(|(f, t)| gated_module_paths(f, t))
        .collect();
    assert!(
        gated.iter().any(|g| g.ends_with("transport/mpi.rs")),
        "the MPI transport is a module that exists only with the mpi feature: {gated:?}"
    );
    let mut odd = Vec::new();
    for (f, t) in &texts {
        if gated.iter().any(|g| f.starts_with(g)) {
            continue;
        }
        odd.extend(
            feature_cfgs_off_items(t)
                .into_iter()
                .map(|l| format!("{}:{l}", f.display())),
        );
    }
    assert!(
        odd.is_empty(),
        "code that features change inside items: {odd:#?}"
    );
}

#[test]
fn the_feature_scan_sees_statements_and_skips_items() {
    let items = "#[cfg(feature = \"mpi\")]\n/// docs\n#[cfg_attr(docsrs, doc(cfg(feature = \"mpi\")))]\npub mod mpi;\n#[cfg(feature = \"mpi\")]\npub(crate) fn f() {}\n";
    assert!(feature_cfgs_off_items(items).is_empty());
    let statement = "fn f() {\n    #[cfg(feature = \"hwloc\")]\n    let x = 1;\n}\n";
    assert_eq!(feature_cfgs_off_items(statement).len(), 1);
    assert_eq!(
        feature_cfgs_off_items("let on = cfg!(feature = \"mpi\");\n").len(),
        1
    );
    assert_eq!(
        feature_cfgs_off_items("#[cfg(not(feature = \"mpi\"))]\nmod x;\n").len(),
        1
    );
    let gated = gated_module_paths(Path::new("src/gain/mod.rs"), items);
    assert_eq!(
        gated,
        [Path::new("src/gain/mpi.rs"), Path::new("src/gain/mpi")]
    );
}

/// ARCHITECTURE.md, the newcomer's map, names every module of every crate in its
/// layer lists (the list of a folder runs from "`folder`:" to the next folder's), and
/// every mapper module in its one-line-per-module map; and every `.rs` file it names
/// is a file of the workspace.
#[test]
fn architecture_md_names_every_module_and_only_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let layers = {
        let start = text.find("- crates:").expect("the layer lists");
        let end = start + text[start..].find("\n\n").unwrap_or(text.len() - start);
        &text[start..end]
    };
    let folders = [
        ("src", "`src/` (copr):"),
        ("mapping/src", "`mapping/src`:"),
        ("topology/src", "`topology/src`:"),
        ("cost-models/src", "`cost-models/src`:"),
        ("cli/src", "`cli/src`:"),
        ("interpose/src", "`interpose/src`:"),
        ("capi/src", "`capi/src`:"),
        ("scalapack/src", "`scalapack/src`:"),
        ("testkit/src", "`testkit/src`:"),
    ];
    let starts: Vec<usize> = folders
        .iter()
        .map(|(dir, mark)| {
            layers
                .find(mark)
                .unwrap_or_else(|| panic!("ARCHITECTURE.md lists no layers of {dir}"))
        })
        .collect();
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map(str::to_owned)
            .collect()
    };
    let mut missing = Vec::new();
    for (k, (dir, mark)) in folders.iter().enumerate() {
        let start = starts[k] + mark.len();
        let end = starts
            .iter()
            .filter(|&&s| s > starts[k])
            .min()
            .copied()
            .unwrap_or(layers.len());
        let listed = words(&layers[start..end]);
        for m in module_graph(&root.join(dir)).unwrap().modules {
            if !listed.contains(&m) {
                missing.push(format!("{dir}: {m}"));
            }
        }
    }
    // the mapper's map: one line per module, `name.rs` or `name/`
    let map = text
        .split("## The mapper's way through")
        .nth(1)
        .and_then(|t| t.split("```").nth(1))
        .expect("ARCHITECTURE.md's map of mapping/src");
    for m in module_graph(&root.join("mapping/src")).unwrap().modules {
        let named = map
            .lines()
            .any(|l| l.starts_with(&format!("{m}.rs")) || l.starts_with(&format!("{m}/")));
        if !named {
            missing.push(format!("the map of mapping/src: {m}"));
        }
    }
    assert!(
        missing.is_empty(),
        "modules ARCHITECTURE.md does not name: {missing:?}"
    );
    // every `.rs` file it names exists (a name alone, `cma.rs`, may be in any folder)
    let mut files = Vec::new();
    for dir in [
        "src",
        "mapping",
        "topology",
        "cost-models",
        "cli",
        "capi",
        "interpose",
        "scalapack",
        "testkit",
        "tests",
        "benches",
        "examples",
    ] {
        rust_files(&root.join(dir), &mut files).unwrap();
    }
    let files: Vec<String> = files
        .iter()
        .filter_map(|f| f.strip_prefix(root).ok()?.to_str().map(str::to_owned))
        .collect();
    let mut named = 0;
    for token in text.split(|c: char| c.is_whitespace() || "`()[],;:+".contains(c)) {
        if let Some(stem) = token.strip_suffix(".rs") {
            named += 1;
            let exists = files
                .iter()
                .any(|f| f == token || f.ends_with(&format!("/{stem}.rs")));
            assert!(exists, "ARCHITECTURE.md names {token}, which is no file");
        }
    }
    assert!(named > 40, "only {named} files named");
}
