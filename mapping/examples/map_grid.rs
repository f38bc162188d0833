//! Maps a periodic 16 × 16 process grid (1 MiB per neighbour message) onto a
//! 2 × 2 × 4 torus with 16 ranks per node, prints every strategy against the
//! launcher's packed order, and the chosen mapping's first lines as an Open MPI
//! rankfile:
//!
//! `cargo run --release -p copr-mapping --example map_grid`

use copr_mapping::{self as mapping, export, CartGrid, Options, Pattern, Strategy};

fn main() -> Result<(), copr::Error> {
    let grid = CartGrid::new(vec![16, 16], vec![true, true], vec![1 << 20, 1 << 20])?;
    let pattern = Pattern::grid(&grid)?;
    let machine = mapping::torus_machine(vec![2, 2, 4], None, None, 16)?;
    let cmp = mapping::compare(
        &pattern,
        &machine,
        &Strategy::ALL,
        &Options::default(),
        |_| {},
    )?;
    print!("{}", mapping::table(&cmp));
    let best = cmp.row("optimised").expect("the optimiser ran");
    if let Some(line) = mapping::against_default(&cmp, &best.strategy) {
        println!("{line}");
    }
    let rankfile = export::rankfile(&machine, &best.map);
    for line in rankfile.lines().take(4) {
        println!("{line}");
    }
    Ok(())
}
