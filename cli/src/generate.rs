//! `copr completions SHELL` and `copr man [COMMAND]`: shell completion scripts and
//! manual pages generated from the clap definitions in `cli`, so that they list every
//! command and option the parser knows.

use clap::{Args, ValueEnum};
use clap_complete::Shell;

use copr::{Error, Result};

/// Arguments of `copr completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "SHELL")]
    shell: Option<String>,
}

/// Arguments of `copr man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// A command (`copr man plan` is the page copr-plan(1)); without one, the page
    /// copr(1), which lists the commands.
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
}

/// The shells `copr completions` knows, in clap_complete's order.
fn shell_names() -> Vec<String> {
    Shell::value_variants()
        .iter()
        .map(Shell::to_string)
        .collect()
}

/// `copr completions SHELL`: the completion script for SHELL on standard output.
///
/// # Errors
/// [`Error::Argument`] when SHELL is missing or not a shell clap_complete supports.
pub(crate) fn completions(a: CompletionsArgs, cli: clap::Command) -> Result<()> {
    let script = completion_script(a.shell.as_deref(), cli)?;
    print!("{script}");
    Ok(())
}

fn completion_script(shell: Option<&str>, mut cli: clap::Command) -> Result<String> {
    let known = shell_names().join(", ");
    let name = shell
        .ok_or_else(|| Error::Argument(format!("completions: name a shell, one of {known}")))?;
    let shell: Shell = name.parse().map_err(|_| {
        Error::Argument(format!(
            "completions: unknown shell `{name}`: expected one of {known}"
        ))
    })?;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cli, "copr", &mut out);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `copr man [COMMAND]`: a manual page in roff on standard output.
///
/// # Errors
/// [`Error::Argument`] when COMMAND is not one of copr's commands.
pub(crate) fn man(a: ManArgs, cli: clap::Command) -> Result<()> {
    let page = man_page(a.command.as_deref(), cli)?;
    print!("{page}");
    Ok(())
}

fn man_page(command: Option<&str>, cli: clap::Command) -> Result<String> {
    let mut cmd = cli.disable_help_subcommand(true);
    // Building sets the subcommands' page names (copr-plan) and usage lines (copr plan).
    cmd.build();
    let page_of = match command {
        None => cmd,
        Some(name) => visible_commands(&cmd)
            .find(|s| s.get_name() == name)
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = visible_commands(&cmd)
                    .map(clap::Command::get_name)
                    .collect();
                Error::Argument(format!(
                    "man: unknown command `{name}`: expected one of {}",
                    names.join(", ")
                ))
            })?,
    };
    let mut out = Vec::new();
    let file = format!(
        "{}.1",
        page_of.get_display_name().unwrap_or(page_of.get_name())
    );
    clap_mangen::Man::new(page_of)
        .source(concat!("copr ", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .map_err(|e| Error::Io {
            path: file.into(),
            source: e,
        })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The commands `copr --help` lists.
fn visible_commands(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands().filter(|s| !s.is_hide_set())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::CommandFactory;

    /// Every visible command with the long options it takes (`--help` aside).
    fn commands_and_options() -> Vec<(String, Vec<String>)> {
        let mut cmd = Cli::command();
        cmd.build();
        let list: Vec<(String, Vec<String>)> = visible_commands(&cmd)
            .filter(|s| s.get_name() != "help")
            .map(|s| {
                let longs = s
                    .get_arguments()
                    .filter(|a| !a.is_hide_set())
                    .filter_map(|a| a.get_long())
                    .filter(|l| *l != "help")
                    .map(|l| format!("--{l}"))
                    .collect();
                (s.get_name().to_string(), longs)
            })
            .collect();
        assert!(
            list.len() >= 2
                && list
                    .iter()
                    .any(|(_, longs)| longs.contains(&"--json".into())),
            "{list:?}"
        );
        list
    }

    #[test]
    fn completion_scripts_name_every_option() {
        let list = commands_and_options();
        for shell in shell_names() {
            let script = completion_script(Some(&shell), Cli::command()).unwrap();
            // the commands themselves: tests/packaging.rs, per shell
            for (name, longs) in &list {
                for l in longs {
                    // fish writes `-l json` for `--json`
                    let fish = format!("-l {}", &l[2..]);
                    assert!(
                        script.contains(l.as_str()) || script.contains(&fish),
                        "{shell}: no `{l}` of `{name}`"
                    );
                }
            }
        }
    }

    #[test]
    fn man_pages_name_every_command_and_option() {
        let list = commands_and_options();
        let top = man_page(None, Cli::command()).unwrap();
        assert!(top.starts_with(".ie"), "{}", &top[..top.len().min(200)]);
        for (name, longs) in &list {
            assert!(
                top.contains(&format!("copr\\-{name}(1)")),
                "copr(1): no {name}"
            );
            let page = man_page(Some(name), Cli::command()).unwrap();
            assert!(page.contains(&format!("copr\\-{name}")), "{name}");
            for l in longs {
                // roff escapes the hyphens: \-\-json
                let roff = l.replace('-', "\\-");
                assert!(page.contains(&roff), "copr-{name}(1): no `{l}`");
            }
        }
    }

    #[test]
    fn unknown_names_are_one_line_errors() {
        for (e, choice) in [
            (
                completion_script(Some("tcsh"), Cli::command()).unwrap_err(),
                "zsh",
            ),
            (completion_script(None, Cli::command()).unwrap_err(), "fish"),
            (man_page(Some("plot"), Cli::command()).unwrap_err(), "plan"),
        ] {
            let text = e.to_string();
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(text.contains("one of") && text.contains(choice), "{text}");
        }
    }
}
