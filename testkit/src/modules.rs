//! The module graph of a crate's sources, for the architecture tests: which top-level
//! module names which, its cycles, and the arrows that point up a layer order.
//!
//! An arrow `a -> b` is a path in the code of module `a` (comments skipped) that
//! reaches module `b`: `crate::b::…`, a group `crate::{b::…, c}`, `super::` chains
//! that climb to the crate root and go down into `b`, and items the crate root
//! re-exports from `b` (`pub use b::Item` in `lib.rs`, then `crate::Item`).
//!
//! ```
//! use copr_testkit::modules::uses;
//! let text = "use crate::{lap::Perm, plan::{Plan, X}};\n// crate::sweep\nlet x = super::super::gain::f();";
//! // a file `src/engine/exec.rs` (module path engine::exec)
//! let found = uses(text, &["engine", "exec"]);
//! assert_eq!(found, ["gain", "lap", "plan"].map(String::from).into_iter().collect());
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules and the arrows between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleGraph {
    /// Every top-level module with a file (`lib.rs` aside).
    pub modules: BTreeSet<String>,
    /// `from -> {to, …}`, self-arrows left out.
    pub arrows: BTreeMap<String, BTreeSet<String>>,
}

/// Appends every `.rs` file under `dir` (recursively) to `out`, in directory order.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The module path of a file of `src` (`gain/mod.rs` and `gain.rs` are `gain`,
/// `gain/mpi.rs` is `gain::mpi`, `lib.rs` is the root).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .components()
        .filter_map(|c| c.as_os_str().to_str().map(str::to_owned))
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
        if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
            parts.push(stem);
        }
    }
    parts
}

/// `text` without comments (`//` to the end of the line, `/* … */`) and without the
/// contents of string and character literals.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == '_'))
        {
            // r"…", r#"…"#: ends at a quote followed by as many hashes
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < b.len() && !(b[j] == '"' && (1..=hashes).all(|h| b.get(j + h) == Some(&'#')))
            {
                j += 1;
            }
            out.push_str("\"\"");
            i = j + 1 + hashes;
        } else if c == '"' {
            // raw strings r#"…"# are rare in module code; a plain string ends at an
            // unescaped quote
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
            i += 3; // 'x'
        } else if c == '\'' && next == Some('\\') {
            // '\n', '\u{…}'
            i += 2;
            while i < b.len() && b[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_at(s: &[char], mut i: usize) -> (String, usize) {
    let mut name = String::new();
    while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == '_') {
        name.push(s[i]);
        i += 1;
    }
    (name, i)
}

fn skip_ws(s: &[char], mut i: usize) -> usize {
    while i < s.len() && s[i].is_whitespace() {
        i += 1;
    }
    i
}

/// The first segment of each path of a `{…}` group starting at `s[i] == '{'`.
fn group_heads(s: &[char], i: usize, out: &mut BTreeSet<String>) {
    let mut depth = 0usize;
    let mut j = i;
    let mut expect_head = false;
    while j < s.len() {
        match s[j] {
            '{' => {
                depth += 1;
                expect_head = depth == 1;
                j += 1;
            }
            '}' => {
                depth -= 1;
                j += 1;
                if depth == 0 {
                    return;
                }
            }
            ',' => {
                expect_head = depth == 1;
                j += 1;
            }
            c if c.is_whitespace() => j += 1,
            _ => {
                if expect_head {
                    let (name, k) = ident_at(s, j);
                    if !name.is_empty() {
                        out.insert(name);
                    }
                    expect_head = false;
                    j = k.max(j + 1);
                } else {
                    j += 1;
                }
            }
        }
    }
}

/// `code` without its `#[cfg(test)] mod NAME { … }` blocks: what a module's own
/// tests use is not an arrow of the module.
fn without_test_modules(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(k) = rest.find(MARK) {
        out.push_str(&rest[..k]);
        let after = rest[k + MARK.len()..].trim_start();
        let is_mod = after
            .strip_prefix("mod ")
            .and_then(|m| m.split_once(['{', ';']))
            .is_some_and(|(name, _)| {
                let name = name.trim();
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
            && after
                .find('{')
                .is_some_and(|b| after.find(';').is_none_or(|s| b < s));
        if !is_mod {
            out.push_str(MARK);
            rest = &rest[k + MARK.len()..];
            continue;
        }
        // skip to the brace that closes the module
        let open = after.find('{').unwrap_or(0);
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The root-level names the code of a file at module path `at` reaches: the first
/// segment after `crate::` (or after `super::` chains that climb to the root), each
/// path of a group. Comments, string literals and `#[cfg(test)]` modules are skipped.
pub fn uses(text: &str, at: &[&str]) -> BTreeSet<String> {
    let code: Vec<char> = without_test_modules(&code_only(text)).chars().collect();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < code.len() {
        let boundary = i == 0 || !(code[i - 1].is_ascii_alphanumeric() || code[i - 1] == '_');
        let (word, end) = ident_at(&code, i);
        if word.is_empty() {
            i += 1;
            continue;
        }
        if !boundary {
            i = end;
            continue;
        }
        // climb: crate:: goes to the root, each super:: one level up
        let mut depth = match word.as_str() {
            "crate" => Some(0usize),
            "super" => at.len().checked_sub(1),
            _ => None,
        };
        let mut j = end;
        let Some(mut d) = depth.take() else {
            i = end;
            continue;
        };
        loop {
            let k = skip_ws(&code, j);
            if !(code.get(k) == Some(&':') && code.get(k + 1) == Some(&':')) {
                break;
            }
            let k = skip_ws(&code, k + 2);
            if code.get(k) == Some(&'{') {
                if d == 0 {
                    group_heads(&code, k, &mut found);
                }
                break;
            }
            let (seg, after) = ident_at(&code, k);
            if seg == "super" {
                d = d.saturating_sub(1);
                j = after;
                continue;
            }
            if d == 0 && !seg.is_empty() {
                found.insert(seg);
            }
            break;
        }
        i = end;
    }
    found
}

/// The names `lib.rs` re-exports at the root, each with the top-level module it
/// comes from (`pub use error::{Error, Result};` gives `Error -> error`).
fn root_reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let code = code_only(lib);
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let s = stmt.trim();
        let Some(rest) = s.strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest
            .trim_start_matches("self::")
            .trim_start_matches("crate::");
        let module: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !modules.contains(&module) {
            continue;
        }
        // every last segment of the statement's paths: the names it exports
        let body = &rest[module.len()..];
        for piece in body.split([',', '{', '}']) {
            let piece = piece.trim();
            let name = match piece.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => piece.rsplit("::").next().unwrap_or("").trim(),
            };
            if !name.is_empty() && name != "self" && name != "*" {
                out.insert(name.to_owned(), module.clone());
            }
        }
    }
    out
}

/// The module graph of the crate whose sources are in `src`.
///
/// # Errors
/// A directory or file that cannot be read.
pub fn module_graph(src: &Path) -> std::io::Result<ModuleGraph> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    files.sort();
    let mut g = ModuleGraph::default();
    for f in &files {
        if let Some(top) = module_path(src, f).first() {
            g.modules.insert(top.clone());
        }
    }
    let lib = ["lib.rs", "main.rs"]
        .iter()
        .map(|n| src.join(n))
        .find(|p| p.exists());
    let reexports = match lib {
        Some(p) => root_reexports(&std::fs::read_to_string(p)?, &g.modules),
        None => BTreeMap::new(),
    };
    for f in &files {
        let path = module_path(src, f);
        let Some(top) = path.first() else {
            continue;
        };
        let at: Vec<&str> = path.iter().map(String::as_str).collect();
        for name in uses(&std::fs::read_to_string(f)?, &at) {
            let target = if g.modules.contains(&name) {
                Some(name)
            } else {
                reexports.get(&name).cloned()
            };
            if let Some(t) = target.filter(|t| t != top) {
                g.arrows.entry(top.clone()).or_default().insert(t);
            }
        }
    }
    Ok(g)
}

impl ModuleGraph {
    /// The arrows, `from -> to`, one per line.
    pub fn lines(&self) -> Vec<String> {
        self.arrows
            .iter()
            .flat_map(|(a, bs)| bs.iter().map(move |b| format!("{a} -> {b}")))
            .collect()
    }

    /// The cycles: every strongly connected set of more than one module (Tarjan).
    pub fn cycles(&self) -> Vec<Vec<String>> {
        struct State<'a> {
            g: &'a ModuleGraph,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on: BTreeSet<&'a str>,
            out: Vec<Vec<String>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a str) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on.insert(v);
            let g = s.g;
            for w in g.arrows.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
            if s.low[v] == s.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on.remove(w);
                    comp.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    s.out.push(comp);
                }
            }
        }
        let mut s = State {
            g: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on: BTreeSet::new(),
            out: Vec::new(),
        };
        let nodes: BTreeSet<&str> = self
            .modules
            .iter()
            .map(String::as_str)
            .chain(self.arrows.values().flatten().map(String::as_str))
            .collect();
        for v in nodes {
            if !s.index.contains_key(v) {
                visit(&mut s, v);
            }
        }
        s.out
    }

    /// The arrows that point up `layers` (lowest first: a module may use those of
    /// its own layer and of the layers before it), and the modules `layers` does not
    /// list.
    pub fn against_layers(&self, layers: &[&[&str]]) -> (Vec<String>, Vec<String>) {
        let level = |m: &str| layers.iter().position(|l| l.contains(&m));
        let unlisted = self
            .modules
            .iter()
            .filter(|m| level(m).is_none())
            .cloned()
            .collect();
        let upward = self
            .arrows
            .iter()
            .flat_map(|(a, bs)| {
                bs.iter()
                    .filter(move |b| matches!((level(a), level(b)), (Some(x), Some(y)) if y > x))
                    .map(move |b| format!("{a} -> {b}"))
            })
            .collect();
        (upward, unlisted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(xs: &[&str]) -> BTreeSet<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn paths_groups_and_super_chains() {
        let text = "use crate::lap::Perm;\n/// [`crate::engine::Plan`]\n// crate::plan\n\
                    let x = crate::gain::f(); // crate::sweep\n\
                    let s = \"crate::volume\";\n/* crate::rng */\n\
                    use crate::{\n    layout::{A, B},\n    csr,\n};\nuse super::metrics::X;\n\
                    use super::super::files;\nuse self::inner::Y;\n\
                    let r = r#\"crate::sweep \" crate::rng\"#; let c = '\"'; crate::csr::x();";
        // in a top-level module file, super:: is the root
        assert_eq!(
            uses(text, &["export"]),
            set(&["csr", "files", "gain", "lap", "layout", "metrics"])
        );
        // one level down, super:: is the module itself and super::super:: the root
        assert_eq!(
            uses(text, &["engine", "exec"]),
            set(&["csr", "files", "gain", "lap", "layout"])
        );
        // a prefix is not a path
        assert!(uses("let supercrate::x = 1; my_crate::y", &["a"]).is_empty());
        // a module's tests are not the module
        let tested = "use crate::a::X;\n#[cfg(test)]\nmod tests {\n    use crate::b::Y;\n    fn f() { if x { crate::c::z() } }\n}\n#[cfg(test)]\nfn g() { crate::d::w() }\ncrate::e::v();";
        assert_eq!(uses(tested, &["m"]), set(&["a", "d", "e"]));
    }

    #[test]
    fn reexports_map_names_to_modules() {
        let lib = "pub use error::{Error, Result};\npub use copr::lap::Perm;\npub use pattern::{pair_bytes as pb, MAX_TASKS};\npub mod x;";
        let mods = set(&["error", "pattern", "x"]);
        let r = root_reexports(lib, &mods);
        assert_eq!(r["Error"], "error");
        assert_eq!(r["MAX_TASKS"], "pattern");
        assert_eq!(r["pb"], "pattern");
        assert!(!r.contains_key("Perm"));
    }

    #[test]
    fn cycles_and_upward_arrows_are_found() {
        let mut g = ModuleGraph::default();
        for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a"), ("b", "d")] {
            g.modules.insert(a.into());
            g.modules.insert(b.into());
            g.arrows.entry(a.into()).or_default().insert(b.into());
        }
        assert_eq!(
            g.cycles(),
            vec![set(&["a", "b", "c", "d"]).into_iter().collect::<Vec<_>>()]
        );
        g.arrows.get_mut("c").unwrap().remove("a");
        g.arrows.get_mut("b").unwrap().remove("d");
        assert!(g.cycles().is_empty());
        let (up, unlisted) = g.against_layers(&[&["c"], &["b"], &["a"]]);
        assert_eq!(up, Vec::<String>::new());
        assert_eq!(unlisted, vec!["d".to_string()]);
        let (up, _) = g.against_layers(&[&["a"], &["b"], &["c"], &["d"]]);
        assert_eq!(up, vec!["a -> b", "b -> c"]);
        let (up, _) = g.against_layers(&[&["a", "b"], &["c"], &["d"]]);
        assert_eq!(up, vec!["b -> c"]);
    }
}
