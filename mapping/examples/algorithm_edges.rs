//! Prints the messages of a grid algorithm's pattern (`Pattern::algorithm`), one
//! `src dst bytes` line per pair of tasks, sorted: what `copr map --pattern` maps.
//! `scripts/mpi-tests.sh` compares them with the traffic `benches/simgrid/gridalg.c`
//! really sends, recorded under `mpirun`.
//!
//! ```text
//! cargo run -p copr-mapping --example algorithm_edges -- fox 4 4 1000 binomial
//! ```

use copr_mapping::{Algorithm, AlgorithmSpec, Collective, Pattern};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: algorithm_edges cannon|fox|snyder|summa ROWS COLS BLOCK_BYTES [binomial|ring]";
    let parsed = (|| {
        let algorithm = Algorithm::from_name(args.first()?)?;
        let rows = args.get(1)?.parse().ok()?;
        let cols = args.get(2)?.parse().ok()?;
        let block_bytes = args.get(3)?.parse().ok()?;
        let collective = match args.get(4) {
            Some(t) => Collective::from_name(t)?,
            None => Collective::Binomial,
        };
        (args.len() <= 5).then_some(AlgorithmSpec {
            algorithm,
            rows,
            cols,
            block_bytes,
            collective,
        })
    })();
    let Some(spec) = parsed else {
        eprintln!("algorithm_edges: bad arguments {args:?}\n{usage}");
        std::process::exit(2);
    };
    match Pattern::algorithm(&spec) {
        Ok(p) => {
            for e in p.edges() {
                println!("{} {} {}", e.src, e.dst, e.bytes);
            }
        }
        Err(e) => {
            eprintln!("algorithm_edges: {e}");
            std::process::exit(2);
        }
    }
}
