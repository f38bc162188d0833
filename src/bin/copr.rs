//! The `copr` command-line tool: see `copr --help`.

use clap::Parser;

fn main() {
    let cli = copr::cli::Cli::parse();
    if let Err(e) = copr::cli::run(cli) {
        eprintln!("copr: error: {e}");
        std::process::exit(2);
    }
}
