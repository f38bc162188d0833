//! The mapping example runs and shows what it says: every strategy, the comparison
//! with the launcher's default, and a rankfile.

use std::process::Command;

#[test]
fn map_grid_example_compares_and_exports() {
    // cargo builds the examples next to the test binaries' `deps` directory
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/map_grid");
    if !bin.exists() {
        // `cargo test` builds the examples; `cargo test --test NAME` does not
        eprintln!(
            "{} is not built: run `cargo test` without --test",
            bin.display()
        );
        return;
    }
    let out = Command::new(&bin).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for strategy in ["packed", "hilbert", "optimised"] {
        assert!(
            text.lines().any(|l| l.starts_with(strategy)),
            "{strategy}:\n{text}"
        );
    }
    assert!(
        text.contains("against the default (packed -> optimised):"),
        "{text}"
    );
    assert!(text.contains("rank 0="), "{text}");
}
