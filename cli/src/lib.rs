//! The `copr` command-line tool (`copr plan`, `sweep`, `topo`, `map`, `calibrate`,
//! `completions`, `man`): see `copr --help`. The binary is [`main`]; the library
//! exposes it and the calibration's planning, which `benches/calibrate_plan.rs` times.

#![cfg_attr(docsrs, feature(doc_cfg))]

use clap::Parser;

pub mod calibrate;
mod cli;
mod generate;
mod plot;

/// Runs `copr` with the process's arguments; exits with status 2 on an error.
pub fn main() {
    quiet_broken_pipe();
    let cli = cli::Cli::parse();
    if let Err(e) = cli::run(cli) {
        eprintln!("copr: error: {e}");
        std::process::exit(2);
    }
}

/// A reader that stops early (`copr plan … | head`) closes the pipe; `println!` then
/// panics with "failed printing to stdout: Broken pipe". Exit quietly instead, with
/// the status a shell gives a process killed by SIGPIPE (128 + 13), like other
/// command-line tools; every other panic keeps the default report.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
