//! Answers that cannot be written: standard output on a full device (`copr … >
//! /dev/full`) ends every command with exit 2 and one `copr: error:` line naming
//! standard output, never a panic and never exit 0 with the answer lost.

mod common;

use common::{bin, refused, root};
use std::process::{Command, Stdio};

#[test]
fn a_full_standard_output_is_one_error_line_for_every_command() {
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        eprintln!("no /dev/full here: nothing to check");
        return;
    }
    // each command line as a user types it (file names without spaces)
    let cases = [
        "topo data/machines/torus-4x4x4.toml",
        "topo --json data/machines/torus-4x4x4.toml",
        "map --grid 2x2 --torus 2x2 --strategies packed",
        "map --json --grid 2x2 --torus 2x2 --strategies packed",
        "plan data/plans/submatrix.toml",
        "plan --json data/plans/submatrix.toml",
        "plan --json data/plans/gemm-summa.toml",
        "sweep --no-svg --blocks 100,1000",
        "sweep --json --blocks 100,1000",
        "completions bash",
        "man",
        "man map",
    ];
    for line in cases {
        let args: Vec<&str> = line.split_whitespace().collect();
        let out = Command::new(bin())
            .args(&args)
            .current_dir(root())
            .stdout(Stdio::from(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(full)
                    .expect("/dev/full opens for writing"),
            ))
            .output()
            .expect("copr runs");
        let err = refused(&out, &["standard output", "No space left on device"]);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn an_export_that_cannot_be_written_is_the_only_line() {
    // a machine without host names warns about the rankfile's names, but only once
    // the files are written: a failed write is the one line on standard error
    let dir = common::scratch("copr-unwritable-export");
    let map_to = |flag: &str, path: &str| {
        let args = [
            "map",
            "--grid",
            "2x2",
            "--torus",
            "2x2",
            "--strategies",
            "packed",
        ];
        let mut args: Vec<&str> = args.to_vec();
        args.extend([flag, path]);
        common::copr_in(&dir, &args)
    };
    for flag in ["--rankfile", "--slurm-hostfile"] {
        refused(
            &map_to(flag, "no/such/dir/f"),
            &["no/such/dir/f", "No such file or directory"],
        );
        let (_, err) = common::ok(&map_to(flag, "f"));
        assert!(
            err.contains("copr: warning: the machine names no hosts"),
            "{err}"
        );
    }
}
