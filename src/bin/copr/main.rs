//! The `copr` command-line tool: see `copr --help`.

use clap::Parser;

mod cli;
mod plot;

fn main() {
    let cli = cli::Cli::parse();
    if let Err(e) = cli::run(cli) {
        eprintln!("copr: error: {e}");
        std::process::exit(2);
    }
}
