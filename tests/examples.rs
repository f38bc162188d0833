//! The examples a user runs by hand answer bad arguments with a usage line and exit
//! status 2, and label their output's columns.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/NAME`: cargo builds the examples next to the test
/// binaries' `deps` directory when it builds the tests.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    profile.join("examples").join(name)
}

#[test]
fn gain_gap_refuses_bad_arguments_and_labels_its_columns() {
    let bin = example("gain_gap");
    if !bin.exists() {
        // `cargo test` builds the examples; `cargo test --test NAME` does not
        eprintln!(
            "{} is not built: run `cargo test` without --test",
            bin.display()
        );
        return;
    }
    for args in [&[][..], &["x"][..], &["1000"][..], &["0"][..]] {
        let out = Command::new(&bin).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("usage: gain_gap P"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = Command::new(&bin)
        .arg("16")
        .env("GAP_CONFIGS", "two-islands")
        .env("GAP_LAYOUTS", "32")
        .env("GAP_MODELS", "config")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let columns = |l: &str| l.split(" | ").count();
    assert_eq!(columns(lines[0]), 13, "{}", lines[0]);
    assert_eq!(columns(lines[1]), 13, "{}", lines[1]);
    assert!(lines[0].starts_with("p | layout"), "{}", lines[0]);
    assert!(
        lines[1].starts_with("16 | bc 32->128 | two-islands"),
        "{}",
        lines[1]
    );
}
