//! The installed command's extras: `copr --version`, `copr completions SHELL` and
//! `copr man`, run as a user runs them.

use std::process::{Command, Output};

fn copr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_copr"))
        .args(args)
        .output()
        .expect("copr runs")
}

/// Runs `cmd`, asserts that it succeeded (showing its standard error otherwise) and
/// returns its standard output.
fn succeed(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(succeed(Command::new(env!("CARGO_BIN_EXE_copr")).args(args)))
        .expect("UTF-8 output")
}

/// The commands as `copr --help` lists them (clap renders the list from the parser's
/// definitions), without clap's own `help`.
fn commands() -> Vec<String> {
    let help = stdout_of(&["--help"]);
    let list: Vec<String> = help
        .lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    assert!(
        list.iter().any(|c| c == "completions") && list.iter().any(|c| c == "man"),
        "commands from --help: {list:?}\n{help}"
    );
    list
}

#[test]
fn version_is_the_crate_version_and_names_the_features() {
    let short = stdout_of(&["-V"]);
    assert_eq!(
        short.trim_end(),
        format!("copr {}", env!("CARGO_PKG_VERSION"))
    );
    // --version adds the compiled features, from cargo's view of this build
    let long = stdout_of(&["--version"]);
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines[0], short.trim_end(), "{long}");
    let features = lines
        .get(1)
        .and_then(|l| l.strip_prefix("features: "))
        .unwrap_or_else(|| panic!("no features line: {long}"));
    let listed: Vec<&str> = features
        .split(" (")
        .next()
        .unwrap()
        .split(", ")
        .filter(|f| *f != "none")
        .collect();
    let want: Vec<&str> = [
        ("mpi", cfg!(feature = "mpi")),
        ("hwloc", cfg!(feature = "hwloc")),
        ("scotch", cfg!(feature = "scotch")),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(f, _)| *f)
    .collect();
    assert_eq!(listed, want, "{long}");
}

/// Whether `script` offers `command` after `copr ` (in the form clap_complete writes for
/// each shell; a plain substring test would find `man` in `command`).
fn offers(shell: &str, script: &str, command: &str) -> bool {
    match shell {
        // the first word list (after `opts=""`) is the one after `copr`
        "bash" => script
            .lines()
            .filter_map(|l| l.trim().strip_prefix("opts=\""))
            .find(|words| *words != "\"")
            .is_some_and(|words| words.trim_end_matches('"').split(' ').any(|w| w == command)),
        "zsh" => script.contains(&format!("\n'{command}:")),
        "fish" => script.contains(&format!(
            "complete -c copr -n \"__fish_copr_needs_command\" -f -a \"{command}\" "
        )),
        _ => unreachable!("{shell}"),
    }
}

#[test]
fn completion_scripts_name_every_command() {
    let commands = commands();
    for (shell, first_line) in [
        ("bash", "_copr() {"),
        ("zsh", "#compdef copr"),
        ("fish", "# Print an optspec"),
    ] {
        let script = stdout_of(&["completions", shell]);
        assert!(script.starts_with(first_line), "{shell}: {script}");
        for c in &commands {
            assert!(offers(shell, &script, c), "{shell}: `{c}` not offered");
        }
        assert!(!offers(shell, &script, "mapping"), "{shell}");
    }
}

/// The bash script, loaded into bash, completes `copr <TAB>` to every command and
/// `copr plan --js<TAB>` to `--json`.
#[test]
fn bash_completes_commands_and_options() {
    let script = stdout_of(&["completions", "bash"]);
    let complete = |words: &str| {
        let program = format!(
            "{script}\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _copr copr \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        let out = succeed(Command::new("bash").arg("-c").arg(program));
        String::from_utf8(out).unwrap()
    };
    let offered = complete("copr ''");
    let offered: Vec<&str> = offered.lines().collect();
    for c in commands() {
        assert!(offered.contains(&c.as_str()), "`copr <TAB>`: {offered:?}");
    }
    assert_eq!(complete("copr plan --js").trim(), "--json");
}

#[test]
fn man_pages_name_every_command() {
    let commands = commands();
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH copr 1"), "{page}");
    for c in &commands {
        assert!(
            page.contains(&format!("copr\\-{c}(1)")),
            "copr(1): no `{c}`"
        );
        let sub = stdout_of(&["man", c]);
        let title = format!(".TH copr-{c} 1  \"copr {}\"", env!("CARGO_PKG_VERSION"));
        assert!(sub.starts_with(".ie") && sub.contains(&title), "{c}: {sub}");
        assert!(sub.contains(&format!("\\fBcopr {c}\\fR")), "{c}: {sub}");
    }
}

#[test]
fn bad_names_are_one_line_errors_with_exit_2() {
    for args in [
        &["completions", "tcsh"][..],
        &["completions", ""],
        &["completions"],
        &["man", "plot"],
        &["man", "help"],
    ] {
        let out = copr(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("one of"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `1.85` or `1.85.0` as (major, minor, patch).
fn rust_version(v: &str) -> (u64, u64, u64) {
    let mut parts = v
        .split('.')
        .map(|p| p.parse::<u64>().expect("a rust-version"));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

/// The declared `rust-version` holds for the locked dependencies: every crate that
/// building copr, copr-topology and copr-cost-models compiles (all features, build
/// scripts' dependencies included; dev-dependencies are for this repository's tests
/// only) declares a `rust-version` no newer than copr's, or none. scripts/test-all also
/// builds with that toolchain when rustup can install it.
#[test]
fn locked_dependencies_accept_our_rust_version() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let run = |args: &[&str]| {
        succeed(
            Command::new(&cargo)
                .args(args)
                .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/..")),
        )
    };
    let version = String::from_utf8(run(&["-vV"])).unwrap();
    let host = version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("cargo -vV names the host");
    let meta: serde_json::Value = serde_json::from_slice(&run(&[
        "metadata",
        "--format-version=1",
        "--locked",
        "--all-features",
        "--filter-platform",
        host,
    ]))
    .unwrap();
    let ours = rust_version(env!("CARGO_PKG_RUST_VERSION"));
    let packages: std::collections::HashMap<&str, &serde_json::Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let nodes: std::collections::HashMap<&str, &serde_json::Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let mut todo: Vec<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let mut seen: std::collections::HashSet<&str> = todo.iter().copied().collect();
    let mut too_new = Vec::new();
    let mut declared = 0;
    while let Some(id) = todo.pop() {
        let p = packages[id];
        if let Some(v) = p["rust_version"].as_str() {
            declared += 1;
            if rust_version(v) > ours {
                let (name, version) = (&p["name"], &p["version"]);
                too_new.push(format!(
                    "{} {} needs {v}",
                    name.as_str().unwrap(),
                    version.as_str().unwrap()
                ));
            }
        }
        for d in nodes[id]["deps"].as_array().unwrap() {
            let not_dev_only = d["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].as_str() != Some("dev"));
            let dep = d["pkg"].as_str().unwrap();
            if not_dev_only && seen.insert(dep) {
                todo.push(dep);
            }
        }
    }
    // the walk reached the dependencies (clap, serde, rsmpi, hwlocality, …)
    assert!(seen.len() > 50 && declared > 20, "{} crates", seen.len());
    assert!(
        too_new.is_empty(),
        "rust-version {}: {too_new:?}",
        env!("CARGO_PKG_RUST_VERSION")
    );
}
