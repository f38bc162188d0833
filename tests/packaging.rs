//! The installed command's extras: `copr --version`, `copr completions SHELL` and
//! `copr man`, run as a user runs them.

use std::process::{Command, Output};

fn copr(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_copr"))
        .args(args)
        .output()
        .expect("copr runs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = copr(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
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
fn version_is_the_crate_version() {
    let v = stdout_of(&["--version"]);
    assert_eq!(v.trim_end(), format!("copr {}", env!("CARGO_PKG_VERSION")));
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
