//! The checked-in C header is what cbindgen makes of the crate's declarations today,
//! and a C++ translation unit including it compiles with `-Wall -Werror`.
//!
//! After changing an entry point: `COPR_BLESS=1 cargo test -p copr-capi --test header`
//! rewrites `include/copr.h`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn generated() -> String {
    let config = cbindgen::Config::from_file(dir().join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(dir())
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8")
}

#[test]
fn checked_in_header_matches_the_declarations() {
    let path = dir().join("include/copr.h");
    let fresh = generated();
    if std::env::var_os("COPR_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/copr.h");
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != fresh {
        let first = checked_in
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(checked_in.lines().count().min(fresh.lines().count()));
        panic!(
            "{} differs from the Rust declarations from line {} on:\n  checked in: {:?}\n  generated:  {:?}\n\
             run `COPR_BLESS=1 cargo test -p copr-capi --test header` and commit the header",
            path.display(),
            first + 1,
            checked_in.lines().nth(first),
            fresh.lines().nth(first)
        );
    }
    for symbol in [
        "copr_pdgemr2d(",
        "copr_pzgemr2d_(",
        "copr_pdtran_(",
        "copr_pztranc_(",
        "copr_capi_errors(",
        "copr_capi_calls(",
        "copr_pdgemr2d_batch(",
        "copr_pdgemr2d_relabel(",
        "copr_cart_create(",
        "copr_comm_reorder_f(",
    ] {
        assert!(fresh.contains(symbol), "the header declares {symbol}");
    }
}

/// Compiles `tests/c/header_check.cpp` against the generated header, as C++ and as C,
/// with warnings as errors.
#[test]
fn header_compiles_as_cxx_and_c_with_warnings_as_errors() {
    let out = std::env::temp_dir().join(format!("copr-capi-header-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    // the header as generated now (the other test compares it with the checked-in one)
    let include = out.join("include");
    std::fs::create_dir_all(&include).unwrap();
    std::fs::write(include.join("copr.h"), generated()).unwrap();
    let source = dir().join("tests/c/header_check.cpp");
    // the header includes mpi.h: its directories as system ones (Open MPI's C++
    // bindings are not -Wextra clean)
    let mpi_dirs = Command::new("mpicc")
        .arg("--showme:incdirs")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for (compiler, lang, std) in [("c++", "c++", "-std=c++11"), ("cc", "c", "-std=c99")] {
        let object = out.join(format!("header_check_{lang}.o"));
        let status = Command::new(compiler)
            .args([
                "-x",
                lang,
                std,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-c",
            ])
            .args(mpi_dirs.split_whitespace().flat_map(|d| ["-isystem", d]))
            .arg("-I")
            .arg(&include)
            .arg(&source)
            .arg("-o")
            .arg(&object)
            .status()
            .unwrap_or_else(|e| panic!("{compiler} (needed to check the header) runs: {e}"));
        assert!(
            status.success(),
            "{compiler} -x {lang} {}",
            source.display()
        );
        assert!(Path::new(&object).exists());
    }
    std::fs::remove_dir_all(&out).ok();
}

/// Argument count of every function `header` (C) declares, by name.
fn c_functions(header: &str) -> Vec<(String, usize)> {
    let code: String = header
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !(l.starts_with("//") || l.starts_with("/*") || l.starts_with('*'))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find(" copr_") {
        rest = &rest[at + 1..];
        let Some(open) = rest.find('(') else { break };
        let name = &rest[..open];
        if name.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            continue; // a type's name, not a function's
        }
        let close = rest[open..].find(')').expect("a closing parenthesis") + open;
        let args = &rest[open + 1..close];
        let count = if args.trim() == "void" {
            0
        } else {
            args.split(',').count()
        };
        out.push((name.to_string(), count));
        rest = &rest[close..];
    }
    out
}

/// The Fortran module binds every by-reference entry point of the header, the counters,
/// the batched and relabeled copies, the `_f` communicator calls and the node-shared
/// allocation, with as many arguments.
#[test]
fn fortran_module_binds_every_fortran_style_entry_point() {
    let header = generated();
    let module = std::fs::read_to_string(dir().join("include/copr.f90")).unwrap();
    let module = module.replace("&\n", "");
    let wanted: Vec<(String, usize)> = c_functions(&header)
        .into_iter()
        .filter(|(name, _)| {
            name.ends_with('_')
                || name.ends_with("_f")
                || name.starts_with("copr_capi_")
                || name.starts_with("copr_pdgemr2d_")
                || name.ends_with("_shared")
        })
        .collect();
    assert_eq!(wanted.len(), 19, "{wanted:?}");
    for (name, count) in wanted {
        let bind = format!("bind(C, name=\"{name}\")");
        let line = module
            .lines()
            .find(|l| l.contains(&bind))
            .unwrap_or_else(|| panic!("copr.f90 binds {name}"));
        let args = line
            .split('(')
            .nth(1)
            .and_then(|a| a.split(')').next())
            .unwrap_or_default();
        let n = args.split(',').filter(|a| !a.trim().is_empty()).count();
        assert_eq!(n, count, "copr.f90's {name}: {line}");
    }
}
