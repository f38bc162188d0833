//! The `copr` command-line tool (`copr plan`, `sweep`, `topo`, `map`, `calibrate`,
//! `completions`, `man`): see `copr --help`. The binary is [`main`]; the library
//! exposes it and the calibration's planning, which `benches/calibrate_plan.rs` times.

#![cfg_attr(docsrs, feature(doc_cfg))]

use clap::Parser as _;

pub mod calibrate;
mod cli;
mod generate;
mod plot;

/// Runs `copr` with the process's arguments; exits with status 2 on an error.
pub fn main() {
    quiet_broken_pipe();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        // --help, --version and the like
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprintln!("copr: error: {}", usage_error_line(&e.render().to_string()));
            std::process::exit(2);
        }
    };
    if let Err(e) = cli::run(cli) {
        eprintln!("copr: error: {}", error_line(&e.to_string()));
        std::process::exit(2);
    }
    // the last bytes may still wait in the buffer: an answer that could not be written
    // is no answer
    if let Err(e) = std::io::Write::flush(&mut std::io::stdout()) {
        stdout_failed(&e.to_string());
    }
}

/// Ends `copr` when its standard output cannot take the answer: quietly with 141 for a
/// reader that stopped early (a closed pipe), else with exit 2 and one line (a full
/// disk, a closed descriptor).
fn stdout_failed(reason: &str) -> ! {
    if reason.contains("Broken pipe") {
        std::process::exit(141);
    }
    eprintln!(
        "copr: error: {}",
        error_line(&format!("standard output: {reason}"))
    );
    std::process::exit(2);
}

/// Longest error message printed, in characters: a longer one (a parser quoting a
/// deeply nested input, say) is cut there with a note of how much was left out.
const MAX_ERROR_CHARS: usize = 1000;

/// An error message as the one line `copr` prints: control characters (a newline or an
/// escape sequence in a file name, a key or a string value quoted by a parser) written
/// as escapes, and the length capped at 1000 characters.
///
/// ```
/// let line = copr_cli::error_line("unknown field `a\nb\u{1b}[31m`");
/// assert_eq!(line, "unknown field `a\\nb\\u{1b}[31m`");
/// assert!(copr_cli::error_line(&"x".repeat(5000)).len() < 1100);
/// ```
pub fn error_line(message: &str) -> String {
    let mut out = String::new();
    let mut chars = message.trim_end().chars();
    let mut shown = 0;
    for c in chars.by_ref() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        shown += 1;
        if shown == MAX_ERROR_CHARS {
            break;
        }
    }
    let rest = chars.count();
    if rest > 0 {
        out.push_str(&format!(" … ({rest} more characters)"));
    }
    out
}

/// clap's report of a bad command line as one line: its text up to the usage, lines
/// joined, `error: ` dropped, and a pointer to `--help`.
fn usage_error_line(report: &str) -> String {
    let text: Vec<&str> = report
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let text = text.join(" ");
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    // clap's own pointer to --help, when it gives one, is said once at the end
    let text = text
        .trim_end_matches("For more information, try '--help'.")
        .trim_end();
    error_line(&format!("{text} (see --help)"))
}

/// A reader that stops early (`copr plan … | head`) closes the pipe; `println!` then
/// panics with "failed printing to stdout: Broken pipe". Exit quietly instead, with
/// the status a shell gives a process killed by SIGPIPE (128 + 13), like other
/// command-line tools. Any other failure to print (`copr … > /dev/full`) is one
/// `copr: error:` line and exit 2; every other panic keeps the default report.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(reason) = msg.strip_prefix("failed printing to stdout") {
            stdout_failed(reason.trim_start_matches(':').trim());
        }
        default(info);
    }));
}
