//! What the bad-input tests share: running `copr` under caps, judging its answer, and
//! copying and mutating the sample files.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test: this build's, or `COPR_TEST_BIN`.
pub(crate) fn bin() -> std::ffi::OsString {
    std::env::var_os("COPR_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_copr").into())
}

/// `copr args` in `dir`, its address space capped at `memory_kb` (`ulimit -v`) and,
/// with `seconds`, killed after that long (`timeout -s KILL`).
pub(crate) fn capped(args: &[&str], dir: &Path, memory_kb: u64, seconds: Option<u32>) -> Output {
    let timeout = seconds.map_or(String::new(), |s| format!("timeout -s KILL {s} "));
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {memory_kb}; exec {timeout}\"$0\" \"$@\""
        ))
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("copr runs")
}

/// `copr args` in the repository's root (where `data/` is), as a user there types it.
pub(crate) fn copr(args: &[&str]) -> Output {
    copr_in(root(), args)
}

/// `copr args` in `dir`.
pub(crate) fn copr_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("copr runs")
}

/// Asserts that a command succeeded (showing its standard error otherwise); its
/// standard output and standard error.
pub(crate) fn ok(out: &Output) -> (String, String) {
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "{e}");
    (o, e)
}

/// A file name `name` in this test process's scratch directory `<tmp>/<tag>-<pid>`.
pub(crate) fn tmp(tag: &str, name: &str) -> PathBuf {
    scratch(tag).join(name)
}

/// The repository's root (where `data/` is).
pub(crate) fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Asserts exit 2 and a single `copr: error:` line containing every one of `needles`.
pub(crate) fn refused(out: &Output, needles: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit 2, got {:?}; stderr: {err}",
        out.status
    );
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("copr: error: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from: {err}");
    }
    err
}

/// Copies the tree `from` to `to`.
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The runs of digits (with their decimal points) in `t`, as byte ranges.
pub(crate) fn digit_runs(t: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < t.len() {
        if t[i].is_ascii_digit() {
            let s = i;
            while i < t.len() && (t[i].is_ascii_digit() || t[i] == b'.') {
                i += 1;
            }
            runs.push((s, i));
        } else {
            i += 1;
        }
    }
    runs
}

/// A scratch directory of this test process: `<tmp>/<tag>-<pid>`.
pub(crate) fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `text` to `dir/name` and returns the path.
pub(crate) fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A private copy of `data/` in `<tmp>/<tag>-<pid>` (relative references between
/// files keep working), with `topology/placed.toml`: the two-islands network with the
/// ranks of `placement-8.txt`, a seed for the placement file.
pub(crate) fn data_copy(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    copy_dir(&root().join("data"), &d);
    std::fs::write(
        d.join("topology/placed.toml"),
        "[inter]\nkind = \"network\"\nfile = \"two-islands.net.toml\"\n[placement]\nrule = \"file\"\nfile = \"placement-8.txt\"\n",
    )
    .unwrap();
    d
}
