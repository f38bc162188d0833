//! The `copr` command-line tool.
fn main() {}
