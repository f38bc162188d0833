//! The C snippets of the README's tour and of the guide's page (docs/c-fortran.md) are
//! lines of the C examples that scripts/mpi-tests.sh builds and runs, their build
//! commands name files that exist, and their `LD_PRELOAD` line is the one that script
//! runs with the unprefixed library.

use std::path::PathBuf;

#[test]
fn readme_c_snippet_is_in_the_tested_example() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let tour = readme
        .split("## Tour 3: from C and Fortran")
        .nth(1)
        .expect("the README has a section \"Tour 3: from C and Fortran\"");
    let tour = tour.split("\n## ").next().unwrap();
    let guide = std::fs::read_to_string(root.join("docs/c-fortran.md")).unwrap();
    for section in [tour, guide.as_str()] {
        check_section(&root, section);
    }
    // the guide's reordered grid: its example file is named and exists
    assert!(guide.contains("capi/examples/cart.c") && root.join("capi/examples/cart.c").exists());
}

fn check_section(root: &std::path::Path, section: &str) {
    // the examples scripts/mpi-tests.sh builds against the installed library and runs
    let examples = ["capi/examples/redistribute.c", "capi/examples/cart.c"]
        .map(|f| std::fs::read_to_string(root.join(f)).unwrap());
    let blocks: Vec<&str> = section
        .split("```c\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(!blocks.is_empty(), "the section shows a C call");
    for line in blocks.iter().flat_map(|b| b.lines()) {
        assert!(
            examples
                .iter()
                .flat_map(|e| e.lines())
                .any(|l| l.trim() == line.trim()),
            "line {line:?} of a C snippet is in neither capi/examples/redistribute.c nor cart.c"
        );
    }
    // the unprefixed library: the preload line is the one scripts/mpi-tests.sh runs,
    // and the library is the one the workspace builds and install.sh installs
    let tests = std::fs::read_to_string(root.join("scripts/mpi-tests.sh")).unwrap();
    let install = std::fs::read_to_string(root.join("capi/install.sh")).unwrap();
    assert!(section.contains("mpirun -x LD_PRELOAD=") && section.contains("/libcopr_scalapack.so"));
    assert!(tests.contains("-x LD_PRELOAD=\"$unprefixed_lib\""));
    assert!(install.contains("libcopr_scalapack.so"));
    for file in [
        "capi/examples/redistribute.c",
        "capi/include/copr.h",
        "capi/install.sh",
    ] {
        assert!(section.contains(file) && root.join(file).exists(), "{file}");
    }
}
