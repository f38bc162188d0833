//! `copr calibrate` started alone, in every build: bad budgets, and a run without
//! mpirun (or without the `mpi` feature), each end in one error line and exit 2.

use std::process::Command;

fn one_error_line(args: &[&str], mentions: &str) {
    // a directory per call: the tests run in parallel and each checks that nothing was written
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("copr-calibrate-cli-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copr"))
        .args(args)
        .current_dir(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("copr: error: "), "{args:?}: {err}");
    assert!(err.contains(mentions), "{args:?}: {err}");
    // nothing written by a run that failed
    assert!(!dir.join("cal.toml").exists() && !dir.join("cal.raw.json").exists());
}

#[test]
fn bad_budgets() {
    for b in ["0", "-5", "NaN"] {
        one_error_line(
            &["calibrate", "--budget", b, "--out", "cal.toml"],
            "--budget",
        );
    }
}

#[test]
fn config_path_clashing_with_its_companions() {
    one_error_line(&["calibrate", "--out", "cal.placement"], ".placement");
}

#[test]
fn alone_it_says_how_to_run_it() {
    let mentions = if cfg!(feature = "mpi") {
        "at least 2 ranks"
    } else {
        "--features mpi"
    };
    one_error_line(&["calibrate", "--out", "cal.toml"], mentions);
}
