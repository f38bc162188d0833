//! The mapper's results do not depend on the number of threads: the multilevel
//! bisection's tries and growths, the anytime rounds run ahead and the routing of
//! large patterns in chunks use a second thread when there is one, with the results of
//! the serial order.

use copr_mapping::{evaluate, link_loads, optimise_rounds, Edge, Optimised, Options, Pattern};

mod common;
use common::{starts, torus};

/// `f` run in a pool of `threads` threads.
fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn pattern(n: usize, e: Vec<(u32, u32, u64)>, what: &str) -> Pattern {
    let edges = e
        .into_iter()
        .map(|(src, dst, bytes)| Edge { src, dst, bytes })
        .collect();
    Pattern::from_edges(n, edges, what.into()).unwrap()
}

#[test]
fn one_and_two_threads_give_the_same_mapping() {
    // a dense graph of 4096 tasks on 8x8x4 nodes x 16: the two-stage path (the graph
    // partitioned by bisections of two tries, nearly complete coarsest graphs with
    // concurrent growths; the quotient placed and annealed), more messages than are
    // routed in one piece, and local anytime rounds
    let n = 4096;
    let p = pattern(n, copr_testkit::graphs::spmv(n, 4003), "SpMV");
    assert!(p.edges().len() >= 1 << 16, "{} messages", p.edges().len());
    let m = torus(vec![8, 8, 4], 16);
    let s = starts(&p, &m);
    // a budget that is never reached: the seed and the rounds alone decide
    let opts = Options {
        seed: 2,
        budget: std::time::Duration::from_secs(600),
    };
    let run = || optimise_rounds(&p, &m, &s, &opts, Some(24)).unwrap();
    let one: Optimised = in_pool(1, run);
    // with the feature `scotch` libscotch maps graphs of this size instead
    assert!(
        cfg!(feature = "scotch") || one.best.origin.starts_with("two-stage: graph partitioned"),
        "not the two-stage path: {}",
        one.best.origin
    );
    eprintln!("{}", one.best.origin);
    let two: Optimised = in_pool(2, run);
    assert_eq!(one.best.origin, two.best.origin);
    assert_eq!(one.best.map, two.best.map);
    assert_eq!(one.best.metrics.hop_bytes, two.best.metrics.hop_bytes);
}

#[test]
fn loads_of_many_messages_are_the_sums_of_their_parts() {
    // more messages than are routed in one piece: the loads and hop-bytes of the whole
    // are those of pieces of it (each routed in one piece) added
    let n = 4096;
    let all = copr_testkit::graphs::spmv(n, 7);
    assert!(all.len() >= 1 << 17, "{} messages", all.len());
    let pieces: Vec<Pattern> = all
        .chunks(50_000)
        .map(|c| pattern(n, c.to_vec(), "a piece"))
        .collect();
    let whole = pattern(n, all, "all");
    let m = torus(vec![8, 8, 4], 16);
    // a scattered placement: task t on node 37·t mod 256
    let node: Vec<u32> = (0..n as u32).map(|t| (t * 37) % 256).collect();
    for threads in [1, 2] {
        let loads = in_pool(threads, || link_loads(&whole, &m, &node));
        let mut sum = vec![0u128; loads.len()];
        for q in &pieces {
            for (s, x) in sum.iter_mut().zip(link_loads(q, &m, &node)) {
                *s += x;
            }
        }
        assert!(loads.iter().any(|&x| x > 0));
        assert_eq!(loads, sum, "{threads} threads");
        let map = copr_mapping::Perm::from_forward(
            (0..n).map(|t| node[t] as usize * 16 + t / 256).collect(),
        )
        .unwrap();
        let w = in_pool(threads, || evaluate(&whole, &m, &map));
        let parts: Vec<_> = pieces.iter().map(|q| evaluate(q, &m, &map)).collect();
        assert_eq!(w.hop_bytes, parts.iter().map(|x| x.hop_bytes).sum::<u128>());
        assert_eq!(
            w.total_bytes,
            parts.iter().map(|x| x.total_bytes).sum::<u128>()
        );
        assert_eq!(w.max_link_bytes, *sum.iter().max().unwrap());
        assert_eq!(
            w.dilation_max,
            parts.iter().map(|x| x.dilation_max).max().unwrap()
        );
    }
}
