//! The `copr` command-line tool: see `copr --help`.

fn main() {
    copr_cli::main();
}
