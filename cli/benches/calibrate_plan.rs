//! What `copr calibrate` does on every rank that grows with the number of ranks p,
//! timed at p = 64 … 4096 without launching the ranks: the rank map and the pair
//! sample, loading the written config, and planning the validation set of the
//! default budget (every case, as one rank of the machine plans it, on a machine of
//! emulated nodes).
//!
//! ```text
//! cargo bench --bench calibrate_plan            # p = 64, 256, 1024, 4096
//! cargo bench --bench calibrate_plan -- 1024    # chosen p
//! ```
//!
//! The MPI part of a run (the measurements, the executions) does not grow with p;
//! this is the part that does. It prints, per p, each step's seconds and the
//! validation planning per case, and what the default budget's planning share
//! (a quarter of the budget: half of the validation phase's 45 %) would let it plan.

use std::time::Instant;

use copr_cli::calibrate::{cases, classes};

/// Ranks per emulated node at each p.
fn nodes_for(p: usize) -> usize {
    (p / 32).clamp(2, 128)
}

fn main() {
    let ps: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ps = if ps.is_empty() {
        vec![64, 256, 1024, 4096]
    } else {
        ps
    };
    let default_budget = 40.0;
    // planning may use half of the validation phase (45 %), started at 50 %
    let planning_share = 0.5 * 0.45 * default_budget;
    for p in ps {
        let nodes = nodes_for(p);
        let dir =
            std::env::temp_dir().join(format!("copr-calibrate-plan-{p}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");

        let t0 = Instant::now();
        let text: String = (0..p)
            .map(|r| format!("{r} host-{}\n", r * nodes / p))
            .collect();
        let placement = copr_topology::Placement::parse(&text, None).expect("placement");
        let map = classes::RankMap::new(&placement, Some(nodes));
        let pairs = classes::sample_pairs(&map, 0x636f7072);
        let sample = t0.elapsed().as_secs_f64();

        let t0 = Instant::now();
        let setup = cases::offline::emulated_model(&dir, p, nodes).expect("model");
        let load = t0.elapsed().as_secs_f64();

        let node = cases::offline::emulated_nodes(p, nodes);
        let mut t = cases::offline::StandIn {
            rank: p / 2 + 1,
            size: p,
        };
        let t0 = Instant::now();
        let plans = cases::plan_cases(
            &mut t,
            setup.model.as_ref(),
            &node,
            &mut cases::Wall(Instant::now()),
            f64::INFINITY,
            &mut |go| go,
        )
        .expect("plans");
        let total = t0.elapsed().as_secs_f64();
        let first = plans.spent.first().map_or(0.0, |x| x.2);
        let slowest = plans.spent.iter().map(|x| x.2).fold(0.0, f64::max);
        // what the deadline rule would have planned in the default budget's share
        let mut done = Vec::new();
        let mut clock = 0.0;
        let mut fit = 0;
        for (i, &(_, _, s)) in plans.spent.iter().enumerate() {
            let k = i / cases::Shape::ALL.len();
            let shape = Some(cases::Shape::ALL[i % cases::Shape::ALL.len()]);
            if clock < planning_share && clock + cases::estimate(&done, shape, k) <= planning_share
            {
                clock += s;
                fit += 1;
                done.push(cases::Spent {
                    shape,
                    size: k,
                    seconds: s,
                });
            }
        }
        println!(
            "p = {p} ({nodes} emulated nodes): rank map + {} sampled pairs {sample:.4} s, loading the config {load:.4} s, planning {} cases ({} runs) {total:.3} s: first case {first:.3} s, slowest {slowest:.3} s; in the default budget's {planning_share:.1} s: {fit} of {} cases",
            pairs.len(),
            plans.spent.len(),
            plans.runs.len() - 1,
            plans.spent.len()
        );
        for (name, elems, s) in &plans.spent {
            println!("  {name:<28} {:>6} KiB/rank {s:>8.4} s", elems * 8 / 1024);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
