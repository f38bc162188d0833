//! The core library's modules form layers: each module uses only modules below it
//! (ARCHITECTURE.md). This test reads `src/` and finds every `crate::MODULE` a
//! module's code names (comments and doc comments aside), so a new upward or cyclic
//! arrow fails here rather than in review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules, lowest first. A module may use those before it.
const LAYERS: [&str; 12] = [
    "error",
    "rng",
    "files",
    "sparse",
    "lap",
    "layout",
    "volume",
    "gain",
    "plan",
    "transport",
    "engine",
    "sweep",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for `lib.rs`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (name != "lib").then_some(name)
}

/// Every `crate::NAME` in the code of `text` (comment lines skipped).
fn uses(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" //").next().unwrap_or(code);
        let mut rest = code;
        while let Some(k) = rest.find("crate::") {
            let after = &rest[k + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(name);
            }
            rest = after;
        }
    }
    found
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let level = |m: &str| LAYERS.iter().position(|&l| l == m);
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        assert!(
            level(&module).is_some(),
            "{}: module {module} has no layer in tests/architecture.rs",
            file.display()
        );
        let text = std::fs::read_to_string(file).unwrap();
        for used in uses(&text) {
            // re-exports at the crate root (Error, Result) are the error module's
            let used = match used.as_str() {
                "Error" | "Result" => "error".to_owned(),
                _ => used,
            };
            if used != module && level(&used).is_some() {
                arrows.entry(module.clone()).or_default().insert(used);
            }
        }
    }
    let upward: Vec<String> = arrows
        .iter()
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|t| level(t) > level(from))
                .map(move |t| format!("{from} -> {t}"))
        })
        .collect();
    assert!(upward.is_empty(), "arrows up the layers: {upward:?}");
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
    let found: Vec<String> = uses(text).into_iter().collect();
    assert_eq!(found, ["gain", "lap"]);
}
