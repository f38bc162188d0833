//! The process-mapping benchmark: every strategy and Scotch on the cases of
//! `benches/RESULTS.md` ("Process mapping"), the optimiser's check against all of
//! them, the SimGrid-simulated Cannon exchange at p = 1024, and the speed at p = 102 400.
//!
//! ```text
//! cargo bench --bench mapping                    # everything (about 5 minutes)
//! cargo bench --bench mapping -- --quick         # no SimGrid, no p = 102 400 rounds
//! cargo bench --bench mapping -- --cases b,g     # some cases
//! cargo bench --bench mapping -- --cases i       # grid algorithms (Cannon, Fox, Snyder,
//!                                                # SUMMA) at p = 1024, SimGrid judge
//! cargo bench --bench mapping -- --quick --cases j  # graphs of 2048-16 384 tasks
//! cargo bench --bench mapping -- --quick --cases k  # a 102 400-task graph, timed
//! cargo bench --bench mapping -- --budget 4       # the optimiser's budget, seconds (default 10)
//! cargo bench --bench mapping -- --seed 3         # the optimiser's seed (default 1)
//! cargo bench --bench mapping -- --cases h --graph-seed 2  # other instances of the
//!     # generated graphs (RGG, mesh, SpMV, power-law, the scrambled stencil's ranks):
//!     # each generator's seed s becomes s + 1 000 000 · N (default 0: the graphs of
//!     # benches/RESULTS.md); Scotch's side is computed on the same graphs
//! cargo bench --bench mapping -- --cases h --keep-replays DIR  # keep each graph replay's
//!     # inputs in DIR/h<k>/ (graph, platform, one hostfile per mapping)
//! cargo bench --bench mapping -- --cases i --only 'fox 32x32 on 4x4x4'  # cases by name
//!     # (`--only A,B`: names containing A or B; `--only-name TEXT`: names containing
//!     # TEXT whole, commas included, e.g. --only-name 'mesh 3-D subdomains, 4096')
//! cargo bench --bench mapping -- --cases i,j --only 'fat tree' --load-models 2
//!     # the optimiser with its busiest link under ECMP and on one path, alternating
//! cargo bench --bench mapping -- --cases i --only 'on fat tree' --single-path
//!     # network graphs simulated on the single-path platform (default: `Auto`, which is
//!     # the ECMP platform on fat trees and dragonflies)
//! ```
//! Scotch (`scotch_gmap -Cd`) and SimGrid (`smpicc`, `smpirun`) are used when they are
//! installed; their rows are left out with a notice otherwise.

use copr_testkit::{graphs, scotch};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use copr::lap::Perm;
use copr_mapping::{
    self, compare, ecmp_max_link_time, evaluate, program_time, simgrid, Algorithm, AlgorithmSpec,
    CartGrid, Collective, MapMachine, Metrics, NetKind, Options, Pattern, Program, RoundModel,
    Strategy,
};
use copr_topology::{FatTreeSpec, LinkSpec, Network};

const MIB: u64 = 1 << 20;

/// `--graph-seed N` (0 when not given), set once in `main`.
static GRAPH_SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// A graph generator's seed under `--graph-seed N`: `s + 1 000 000 · N`, so N = 0
/// gives the recorded graphs and each N another instance of every graph.
fn g(s: u64) -> u64 {
    s + 1_000_000 * GRAPH_SEED.get().copied().unwrap_or(0)
}

struct Case {
    name: String,
    pattern: Pattern,
    machine: MapMachine,
    /// Scotch's view of the machine.
    target: scotch::ScotchTarget,
}

fn grid(rows: usize, cols: usize, aniso: bool) -> Pattern {
    // dimension 1 = along a row (left/right neighbours); "row messages 3x column"
    let bytes = if aniso {
        vec![MIB, 3 * MIB]
    } else {
        vec![MIB, MIB]
    };
    Pattern::grid(&CartGrid::new(vec![rows, cols], vec![true, true], bytes).unwrap()).unwrap()
}

fn torus(dims: &[u32], bw: Option<Vec<f64>>, rpn: usize) -> MapMachine {
    copr_mapping::torus_machine(dims.to_vec(), bw, None, rpn).unwrap()
}

/// A seeded random half of the nodes of a torus (the job's scattered allocation).
fn random_half(dims: &[u32], rpn: usize, seed: u64) -> (MapMachine, Vec<usize>) {
    let mut idx: Vec<usize> = (0..dims.iter().product::<u32>() as usize).collect();
    copr_mapping::SplitMix(seed).shuffle(&mut idx);
    idx.truncate(idx.len() / 2);
    idx.sort_unstable();
    let t = copr_testkit::layouts::torus_nodes(dims, &idx);
    (MapMachine::torus(t, rpn).unwrap(), idx)
}

fn network(file: &str, rpn: usize) -> (MapMachine, scotch::ScotchTarget) {
    let net =
        Network::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file)).unwrap();
    let m = MapMachine::network(net, None, Default::default(), rpn).unwrap();
    let n = m.nodes();
    let hops = (0..n * n).map(|k| m.hops(k / n, k % n)).collect();
    (
        m,
        scotch::ScotchTarget::Distance {
            nodes: n,
            hops,
            ranks_per_node: rpn,
        },
    )
}

fn cases(which: &[String]) -> Vec<Case> {
    let want = |c: &str| which.is_empty() || which.iter().any(|w| w == c);
    let mut out = Vec::new();
    let torus_target = |dims: &[u32], rpn| {
        scotch::ScotchTarget::torus_cores(
            &dims.iter().map(|&d| d as usize).collect::<Vec<_>>(),
            rpn,
        )
    };
    for aniso in [false, true] {
        let tag = if aniso { "aniso" } else { "iso" };
        if want("a") {
            out.push(Case {
                name: format!("(a) 16x32 on 8x8x8 x 1, {tag}"),
                pattern: grid(16, 32, aniso),
                machine: torus(&[8, 8, 8], None, 1),
                target: torus_target(&[8, 8, 8], 1),
            });
        }
        if want("b") {
            out.push(Case {
                name: format!("(b) 32x32 on 4x4x4 x 16, {tag}"),
                pattern: grid(32, 32, aniso),
                machine: torus(&[4, 4, 4], None, 16),
                target: torus_target(&[4, 4, 4], 16),
            });
        }
        if want("c") {
            out.push(Case {
                name: format!("(c) 128x128 on 16x8x8 x 16, {tag}"),
                pattern: grid(128, 128, aniso),
                machine: torus(&[16, 8, 8], None, 16),
                target: torus_target(&[16, 8, 8], 16),
            });
        }
        if want("d") {
            let (m, idx) = random_half(&[16, 16, 16], 16, 2026);
            out.push(Case {
                name: format!("(d) 128x256 on half of 16x16x16 x 16, {tag}"),
                pattern: grid(128, 256, aniso),
                machine: m,
                target: scotch::ScotchTarget::TorusSubset {
                    dims: vec![16, 16, 16],
                    nodes: idx,
                    ranks_per_node: 16,
                },
            });
        }
        if want("e") {
            let (m, t) = network("data/topology/fat-tree-k4.net.toml", 16);
            out.push(Case {
                name: format!("(e) 16x16 on fat tree k=4 (16 hosts) x 16, {tag}"),
                pattern: grid(16, 16, aniso),
                machine: m,
                target: t,
            });
            let (m, t) = network("data/topology/dragonfly-g5a4p2.net.toml", 16);
            out.push(Case {
                name: format!("(e) 20x32 on dragonfly g5a4p2 (40 hosts) x 16, {tag}"),
                pattern: grid(20, 32, aniso),
                machine: m,
                target: t,
            });
        }
        if want("f") {
            out.push(Case {
                name: format!("(f) 32x32 on 4x4x4 x 16, X/Z 30% faster, {tag}"),
                pattern: grid(32, 32, aniso),
                machine: torus(&[4, 4, 4], Some(vec![6.5e9, 5.0e9, 6.5e9]), 16),
                target: torus_target(&[4, 4, 4], 16),
            });
            out.push(Case {
                name: format!("(f) 64x128 on 8x8x8 x 16, X/Z 30% faster, {tag}"),
                pattern: grid(64, 128, aniso),
                machine: torus(&[8, 8, 8], Some(vec![6.5e9, 5.0e9, 6.5e9]), 16),
                target: torus_target(&[8, 8, 8], 16),
            });
        }
        if want("h") && !aniso {
            graph_cases(&mut out);
        }
        if want("g") {
            out.push(Case {
                name: format!("(g) 320x320 on 20x20x16 x 16 (p = 102400), {tag}"),
                pattern: grid(320, 320, aniso),
                machine: torus(&[20, 20, 16], None, 16),
                target: torus_target(&[20, 20, 16], 16),
            });
        }
    }
    out
}

/// A k-ary fat tree (100 Gb/s links, as `data/topology/fat-tree-k4.net.toml`) with
/// `rpn` slots per host, and Scotch's distance target of it.
fn fat_tree(k: usize, rpn: usize) -> (MapMachine, scotch::ScotchTarget) {
    let link = |latency| LinkSpec {
        latency,
        bandwidth: 1.25e10,
    };
    let net = Network::fat_tree(&FatTreeSpec {
        k,
        host_link: link(1.0e-7),
        edge_link: link(1.5e-7),
        core_link: link(2.0e-7),
    })
    .unwrap();
    let m = MapMachine::network(net, None, Default::default(), rpn).unwrap();
    let n = m.nodes();
    let hops = (0..n * n).map(|x| m.hops(x / n, x % n)).collect();
    (
        m,
        scotch::ScotchTarget::Distance {
            nodes: n,
            hops,
            ranks_per_node: rpn,
        },
    )
}

/// The grid-algorithm cases (i): each algorithm's own traffic on a 32 x 32 grid (1 MiB
/// blocks, binomial trees) at p = 1024 on the 4x4x4 torus x 16 and the k = 8 fat tree
/// (128 hosts) x 8.
fn algorithm_cases(out: &mut Vec<Case>, specs: &mut Vec<(String, AlgorithmSpec)>) {
    for a in Algorithm::ALL {
        let s = AlgorithmSpec {
            algorithm: a,
            rows: 32,
            cols: 32,
            block_bytes: MIB,
            collective: Collective::Binomial,
        };
        let p = Pattern::algorithm(&s).unwrap();
        let name = format!("(i) {} 32x32 on 4x4x4 x 16", a.name());
        specs.push((name.clone(), s));
        out.push(Case {
            name,
            pattern: p.clone(),
            machine: torus(&[4, 4, 4], None, 16),
            target: scotch::ScotchTarget::torus_cores(&[4, 4, 4], 16),
        });
        let (m, t) = fat_tree(8, 8);
        let name = format!("(i) {} 32x32 on fat tree k=8 (128 hosts) x 8", a.name());
        specs.push((name.clone(), s));
        out.push(Case {
            name,
            pattern: p,
            machine: m,
            target: t,
        });
    }
}

/// The large graph cases (j): unstructured-mesh subdomain graphs (2-D, 3-D), the SpMV
/// graph of a row-partitioned sparse matrix and a power-law graph at 4096 tasks (8x8x4
/// torus x 16) and 16 384 tasks (16x8x8 x 16), and a mesh and a power-law graph of
/// 2048 tasks on the k = 8 fat tree x 16.
fn large_graph_cases(out: &mut Vec<Case>, keep: &dyn Fn(&str) -> bool) {
    // each graph generated only when its case is kept (`--only`)
    type Gen = fn(usize) -> Vec<(u32, u32, u64)>;
    let graphs: [(&str, Gen); 4] = [
        ("mesh 2-D subdomains", |n| graphs::mesh(n, 2, g(4001))),
        ("mesh 3-D subdomains", |n| graphs::mesh(n, 3, g(4002))),
        ("SpMV, rows partitioned", |n| graphs::spmv(n, g(4003))),
        ("power-law (BA, m = 3)", |n| {
            graphs::power_law(n, 3, g(4004))
        }),
    ];
    for (n, dims) in [(4096, [8u32, 8, 4]), (16384, [16, 8, 8])] {
        for (what, gen) in graphs {
            let name = format!(
                "(j) {what}, {n} tasks, on {}x{}x{} x 16",
                dims[0], dims[1], dims[2]
            );
            if !keep(&name) {
                continue;
            }
            out.push(Case {
                name,
                pattern: from_edges(n, gen(n), what),
                machine: torus(&dims, None, 16),
                target: scotch::ScotchTarget::torus_cores(
                    &dims.iter().map(|&d| d as usize).collect::<Vec<_>>(),
                    16,
                ),
            });
        }
    }
    let fat: [(&str, Gen); 2] = [
        ("mesh 2-D subdomains", |n| graphs::mesh(n, 2, g(4005))),
        ("power-law (BA, m = 3)", |n| {
            graphs::power_law(n, 3, g(4006))
        }),
    ];
    for (what, gen) in fat {
        let name = format!("(j) {what}, 2048 tasks, on fat tree k=8 (128 hosts) x 16");
        if !keep(&name) {
            continue;
        }
        let (m, t) = fat_tree(8, 16);
        out.push(Case {
            name,
            pattern: from_edges(2048, gen(2048), what),
            machine: m,
            target: t,
        });
    }
}

/// A 102 400-task graph (the 2-D mesh of subdomains) on 20x20x16 x 16: copr's optimiser
/// at its default budget, wall time, `rounds` times (on one core with
/// `RAYON_NUM_THREADS=1`).
fn large_graph_speed(rounds: usize) {
    let n = 102_400;
    let p = from_edges(n, graphs::mesh(n, 2, g(4007)), "mesh 2-D subdomains");
    let m = torus(&[20, 20, 16], None, 16);
    println!("\n#### Speed: mesh 2-D subdomains, {n} tasks, on 20x20x16 x 16 (default budget)\n");
    println!("| round | copr optimiser s | hop-bytes MB | packed hop-bytes MB | max link µs | packed max link µs |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for r in 0..rounds {
        let t0 = Instant::now();
        let cmp = compare(
            &p,
            &m,
            &[Strategy::Packed, Strategy::Optimised],
            &Options::default(),
            |_| {},
        )
        .unwrap();
        let t = t0.elapsed().as_secs_f64();
        let (o, pk) = (cmp.row("optimised").unwrap(), cmp.row("packed").unwrap());
        println!(
            "| {r} | {t:.2} | {:.1} | {:.1} | {:.1} | {:.1} |",
            mb(o.metrics.hop_bytes),
            mb(pk.metrics.hop_bytes),
            o.metrics.max_link_time * 1e6,
            pk.metrics.max_link_time * 1e6
        );
    }
}

/// A lower bound in MB, or "no bound" where none above 0 is known.
fn bound_text(b: u128) -> String {
    if b == 0 {
        "no bound".into()
    } else {
        format!("{:.1} MB", mb(b))
    }
}

fn from_edges(n: usize, e: Vec<(u32, u32, u64)>, what: &str) -> Pattern {
    let edges = e
        .into_iter()
        .map(|(src, dst, bytes)| copr_mapping::Edge { src, dst, bytes })
        .collect();
    Pattern::from_edges(n, edges, what.into()).unwrap()
}

/// The graph cases (h): patterns given as graphs, not grids.
fn graph_cases(out: &mut Vec<Case>) {
    let t444 = || torus(&[4, 4, 4], None, 16);
    let target = || scotch::ScotchTarget::torus_cores(&[4, 4, 4], 16);
    let stencil =
        Pattern::grid(&CartGrid::new(vec![16, 16, 4], vec![true; 3], vec![MIB; 3]).unwrap())
            .unwrap();
    let st_edges = edges(&stencil);
    out.push(Case {
        name: "(h) 16x16x4 periodic stencil as a graph (grid order) on 4x4x4 x 16".into(),
        pattern: from_edges(1024, st_edges.clone(), "stencil graph"),
        machine: t444(),
        target: target(),
    });
    out.push(Case {
        name: "(h) 16x16x4 periodic stencil as a graph (scrambled ranks) on 4x4x4 x 16".into(),
        pattern: from_edges(
            1024,
            graphs::scramble(1024, &st_edges, g(11)),
            "stencil graph",
        ),
        machine: t444(),
        target: target(),
    });
    for dim in [2, 3] {
        out.push(Case {
            name: format!("(h) RGG {dim}-D, 1024 tasks in random order, on 4x4x4 x 16"),
            pattern: from_edges(1024, graphs::rgg(1024, dim, 7.0, g(2026), true), "rgg"),
            machine: t444(),
            target: target(),
        });
    }
    // the generators of cases (j) at p = 1024, for the SimGrid replay
    for (what, e) in [
        ("mesh 2-D subdomains", graphs::mesh(1024, 2, g(1001))),
        ("SpMV, rows partitioned", graphs::spmv(1024, g(1003))),
        ("power-law (BA, m = 3)", graphs::power_law(1024, 3, g(1004))),
    ] {
        out.push(Case {
            name: format!("(h) {what}, 1024 tasks, on 4x4x4 x 16"),
            pattern: from_edges(1024, e, what),
            machine: t444(),
            target: target(),
        });
    }
    // fewer tasks than slots: the 64 added tasks send nothing and mark the empty slots
    let partial =
        Pattern::grid(&CartGrid::new(vec![24, 40], vec![true; 2], vec![MIB; 2]).unwrap()).unwrap();
    out.push(Case {
        name: "(h) 24x40 periodic grid (960 tasks) on 4x4x4 x 16 (64 slots empty)".into(),
        pattern: partial.padded(1024).unwrap(),
        machine: t444(),
        target: target(),
    });
    let (m, t) = network("data/topology/fat-tree-k4.net.toml", 16);
    out.push(Case {
        name: "(h) RGG 2-D, 256 tasks in random order, on fat tree k=4 (16 hosts) x 16".into(),
        pattern: from_edges(256, graphs::rgg(256, 2, 7.0, g(2027), true), "rgg"),
        machine: m,
        target: t,
    });
    // a scattered allocation: a seeded random half of the nodes of an 8x8x4 torus
    let (m, idx) = random_half(&[8, 8, 4], 16, 2028);
    out.push(Case {
        name: "(h) mesh 2-D subdomains, 2048 tasks, on a scattered half of 8x8x4 x 16".into(),
        pattern: from_edges(2048, graphs::mesh(2048, 2, g(1005)), "mesh 2-D subdomains"),
        machine: m,
        target: scotch::ScotchTarget::TorusSubset {
            dims: vec![8, 8, 4],
            nodes: idx,
            ranks_per_node: 16,
        },
    });
    let (m, t) = network("data/topology/dragonfly-g5a4p2.net.toml", 16);
    out.push(Case {
        name: "(h) RGG 3-D, 640 tasks in random order, on dragonfly g5a4p2 (40 hosts) x 16".into(),
        pattern: from_edges(640, graphs::rgg(640, 3, 7.0, g(2029), true), "rgg"),
        machine: m,
        target: t,
    });
}

fn edges(p: &Pattern) -> Vec<(u32, u32, u64)> {
    p.edges().iter().map(|e| (e.src, e.dst, e.bytes)).collect()
}

fn run_scotch(c: &Case, dir: &Path) -> Option<(Perm, f64)> {
    if !scotch::scotch_available() {
        return None;
    }
    let r = scotch::run_gmap(c.pattern.tasks(), &edges(&c.pattern), &c.target, dir)
        .unwrap_or_else(|e| panic!("scotch on {}: {e}", c.name));
    Some((
        Perm::from_forward(r.slot_of_task).unwrap(),
        r.scotch_seconds,
    ))
}

/// Scotch's other configurations on graph cases: two-stage (tasks grouped into
/// node-sized parts on a complete graph, then the quotient graph mapped onto the
/// target) and, on the k = 4 fat tree, its `tleaf` tree target.
fn run_scotch_more(c: &Case, dir: &Path) -> Vec<(String, Perm, f64)> {
    let mut out = Vec::new();
    if !scotch::scotch_available() || c.pattern.grid_spec().is_some() {
        return out;
    }
    let n = c.pattern.tasks();
    let e = edges(&c.pattern);
    let rpn = c.target.ranks_per_node();
    let (fwd, secs) = scotch::run_two_stage(n, &e, &c.target, dir).unwrap();
    out.push((
        "scotch two-stage".to_string(),
        Perm::from_forward(fwd).unwrap(),
        secs,
    ));
    let tleaf = if c.name.contains("fat tree k=4") {
        Some(vec![4, 2, 2])
    } else if c.name.contains("fat tree k=8") {
        Some(vec![8, 4, 4])
    } else {
        None
    };
    if let Some(arity) = tleaf {
        let t = scotch::ScotchTarget::Tleaf {
            arity,
            ranks_per_node: rpn,
        };
        let r = scotch::run_gmap(n, &e, &t, dir).unwrap();
        out.push((
            "scotch tleaf".to_string(),
            Perm::from_forward(r.slot_of_task).unwrap(),
            r.scotch_seconds,
        ));
    }
    out
}

fn mb(x: u128) -> f64 {
    x as f64 / 1e6
}

fn row(name: &str, m: &Metrics, secs: f64) {
    println!(
        "| {name} | {:.1} | {:.3} | {:.1} | {:.3} | {} | {:.1} | {:.4} |",
        mb(m.hop_bytes),
        m.dilation_mean,
        mb(m.max_link_bytes),
        m.max_link_time * 1e6,
        m.dilation_max,
        100.0 * m.intra_node_bytes as f64 / m.total_bytes.max(1) as f64,
        secs
    );
}

/// CPU seconds (user + system) of this process (all its threads) and of its children
/// that were waited for, from `/proc/self/stat` (fields 14–17 of proc(5), in ticks of
/// 1/100 s, Linux's USER_HZ); `None` where that file is missing.
fn cpu_seconds() -> Option<(f64, f64)> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // the fields after the command name, which may hold spaces, start at field 3
    let rest = s.get(s.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i - 3)?.parse::<f64>().ok();
    Some(((t(14)? + t(15)?) / 100.0, (t(16)? + t(17)?) / 100.0))
}

/// Runs each case; returns the mappings of the 1024-rank cases and of the graph cases
/// (h) for the simulator.
fn mapping_tables(cs: &[Case], dir: &Path, opts: &Options) -> Vec<(String, Vec<(String, Perm)>)> {
    let mut sims = Vec::new();
    let mut all_ok = true;
    for c in cs {
        println!("\n#### {}\n", c.name);
        let t0 = Instant::now();
        let cpu0 = cpu_seconds();
        let cmp = compare(
            &c.pattern,
            &c.machine,
            &Strategy::BASELINES
                .iter()
                .copied()
                .chain([Strategy::Optimised])
                .collect::<Vec<_>>(),
            opts,
            |_| {},
        )
        .unwrap();
        let total = t0.elapsed().as_secs_f64();
        let cpu1 = cpu_seconds();
        println!("| strategy | hop-bytes MB | mean dilation | max link MB | max link µs | max dilation | intra-node % | time s |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|");
        for r in &cmp.rows {
            row(&r.strategy, &r.metrics, r.seconds);
        }
        let sc = run_scotch(c, dir);
        let cpu2 = cpu_seconds();
        if let Some((map, secs)) = &sc {
            row("scotch -Cd", &evaluate(&c.pattern, &c.machine, map), *secs);
        }
        let more = run_scotch_more(c, dir);
        for (name, map, secs) in &more {
            row(name, &evaluate(&c.pattern, &c.machine, map), *secs);
        }
        let opt = cmp.row("optimised").unwrap();
        let mut hb_ok = true;
        let mut lt_ok = true;
        let mut peers: Vec<(String, Metrics)> = cmp
            .rows
            .iter()
            .filter(|r| r.strategy != "optimised")
            .map(|r| (r.strategy.clone(), r.metrics.clone()))
            .collect();
        if let Some((map, _)) = &sc {
            peers.push(("scotch".into(), evaluate(&c.pattern, &c.machine, map)));
        }
        for (name, map, _) in &more {
            peers.push((name.clone(), evaluate(&c.pattern, &c.machine, map)));
        }
        for (name, m) in &peers {
            if opt.metrics.hop_bytes > m.hop_bytes {
                hb_ok = false;
                println!("\noptimised has more hop-bytes than {name}");
            }
            if opt.metrics.max_link_time > m.max_link_time * (1.0 + 1e-12) {
                lt_ok = false;
                println!("\noptimised has a busier link than {name}");
            }
        }
        all_ok &= hb_ok && lt_ok;
        // network graphs: the busiest link under ECMP (each message split evenly over
        // its shortest paths) and on one path; the table's is the machine's own model
        if let Some(t) = ecmp_max_link_time(&c.pattern, &c.machine, &opt.map) {
            let single = c.machine.clone().with_single_path_loads();
            let sp = |map: &Perm| evaluate(&c.pattern, &single, map).max_link_time * 1e6;
            let mut line = format!(
                "\ntable's max link: {}; ECMP busiest link µs: optimised {:.1}",
                c.machine.link_model(),
                t * 1e6
            );
            let mut sline = format!("single-path busiest link µs: optimised {:.1}", sp(&opt.map));
            let scotch_maps = sc.iter().map(|(m, _)| ("scotch -Cd".to_string(), m));
            for (name, map) in scotch_maps.chain(more.iter().map(|(n, m, _)| (n.clone(), m))) {
                if let Some(x) = ecmp_max_link_time(&c.pattern, &c.machine, map) {
                    line.push_str(&format!(", {name} {:.1}", x * 1e6));
                    sline.push_str(&format!(", {name} {:.1}", sp(map)));
                }
            }
            println!("{line}\n{sline}");
        }
        println!(
            "\nlower bounds: hop-bytes {}, max link {}; optimised kept `{}`; \
             optimised ≤ every baseline{} on hop-bytes: {}, on max link time: {}; all strategies {:.2} s",
            bound_text(opt.metrics.hop_bytes_bound),
            bound_text(opt.metrics.max_link_bound),
            opt.origin.as_deref().unwrap_or("?"),
            if sc.is_some() { " and Scotch" } else { "" },
            if hb_ok { "yes" } else { "NO" },
            if lt_ok { "yes" } else { "NO" },
            total
        );
        // CPU time (user + system, all threads): copr's comparison in this process,
        // `scotch_gmap -Cd` as the child it waited for
        if let (Some(a), Some(b), Some(c2)) = (cpu0, cpu1, cpu2) {
            println!(
                "CPU s: all strategies {:.2}, scotch -Cd {:.2}",
                b.0 - a.0,
                c2.1 - b.1
            );
        }
        if c.pattern.tasks() == 1024 || c.name.starts_with("(h)") {
            let mut maps: Vec<(String, Perm)> = cmp
                .rows
                .iter()
                .map(|r| (r.strategy.clone(), r.map.clone()))
                .collect();
            if let Some((map, _)) = sc {
                maps.push(("scotch".into(), map));
            }
            for (name, map, _) in more {
                maps.push((name, map));
            }
            sims.push((c.name.clone(), maps));
        }
    }
    println!(
        "\noptimiser no worse than every baseline and Scotch on both measures in every case: {}",
        if all_ok { "yes" } else { "NO" }
    );
    sims
}

/// The SimGrid platform of `m`: `simgrid::platform_xml_with` under the network-graph form
/// chosen on the command line (`--single-path`; default `Auto`).
fn platform(m: &MapMachine) -> String {
    let single = std::env::args().any(|a| a == "--single-path");
    let o = simgrid::SimgridOptions {
        graph_form: if single {
            simgrid::GraphForm::SinglePath
        } else {
            simgrid::GraphForm::Auto
        },
        ..Default::default()
    };
    simgrid::platform_xml_with(m, &o).unwrap()
}

/// A program of `benches/simgrid/` (at the workspace root; benches run in the crate's
/// folder).
fn simgrid_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../benches/simgrid")
        .join(name)
}

fn smpicc(dir: &Path) -> Option<PathBuf> {
    let exe = dir.join("cannon");
    let ok = Command::new("smpicc")
        .arg("-O2")
        .arg(simgrid_source("cannon.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(exe)
}

/// `exe ARGS` under `smpirun` in `work`, on the platform file `plat` of `case`'s machine
/// with `map`'s hostfile: the number after `key` on the program's output (simulated s).
fn smpirun_time(
    exe: &Path,
    work: &Path,
    plat: &Path,
    (case, map): (&Case, &Perm),
    args: &[String],
    key: &str,
    what: &str,
) -> f64 {
    let hosts = work.join("hosts");
    std::fs::write(
        &hosts,
        simgrid::hostfile(&case.machine, map.forward()).unwrap(),
    )
    .unwrap();
    let out = Command::new("smpirun")
        .arg("-np")
        .arg(case.pattern.tasks().to_string())
        .arg("-platform")
        .arg(plat)
        .arg("-hostfile")
        .arg(&hosts)
        .args(simgrid::SMPIRUN_FLAGS)
        .arg(exe)
        .args(args)
        .current_dir(work)
        .output()
        .expect("smpirun runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "smpirun {what}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no time in {text}"))
}

/// Simulated time per Cannon iteration (four neighbours, 3 iterations) in seconds.
fn cannon(exe: &Path, dir: &Path, case: &Case, map: &Perm, tag: &str) -> f64 {
    let g = case.pattern.grid_spec().unwrap();
    let work = dir.join(tag);
    std::fs::create_dir_all(&work).unwrap();
    let plat = work.join("platform.xml");
    std::fs::write(&plat, platform(&case.machine)).unwrap();
    let iters = 3;
    let args = [
        g.dims[0].to_string(),
        g.dims[1].to_string(),
        g.bytes[1].to_string(),
        g.bytes[0].to_string(),
        iters.to_string(),
        "four".into(),
    ];
    let t = smpirun_time(exe, &work, &plat, (case, map), &args, "cannon_time_s ", tag);
    t / f64::from(iters)
}

fn simulate(cs: &[Case], sims: &[(String, Vec<(String, Perm)>)], dir: &Path) {
    let Some(exe) = smpicc(dir) else {
        println!("\nsmpicc not found: SimGrid runs skipped (install libsimgrid-dev)");
        return;
    };
    for (name, maps) in sims {
        let case = cs.iter().find(|c| &c.name == name).unwrap();
        if matches!(case.machine.kind(), NetKind::Flat) || case.pattern.grid_spec().is_none() {
            continue;
        }
        println!("\n#### SimGrid: Cannon exchange (four neighbours, 3 iterations), {name}\n");
        println!("| mapping | simulated ms per iteration | packed / this | copr max link µs |");
        println!("|---|---:|---:|---:|");
        let mut packed = None;
        let mut times = Vec::new();
        for (k, (s, map)) in maps.iter().enumerate() {
            let t = cannon(&exe, dir, case, map, &format!("sim-{k}"));
            if s == "packed" {
                packed = Some(t);
            }
            times.push((
                s.clone(),
                t,
                evaluate(&case.pattern, &case.machine, map).max_link_time,
            ));
        }
        for (s, t, lt) in &times {
            println!(
                "| {s} | {:.3} | {:.2} | {:.1} |",
                t * 1e3,
                packed.map_or(f64::NAN, |p| p / t),
                lt * 1e6
            );
        }
        let opt = times.iter().find(|x| x.0 == "optimised").map(|x| x.1);
        if let Some(o) = opt {
            let beaten: Vec<&str> = times
                .iter()
                .filter(|x| ["hilbert", "cp2k", "scotch"].contains(&x.0.as_str()) && x.1 <= o)
                .map(|x| x.0.as_str())
                .collect();
            println!(
                "\noptimised: {:.2}x faster than packed; faster than hilbert, cp2k and scotch: {}",
                packed.map_or(f64::NAN, |p| p / o),
                if beaten.is_empty() {
                    "yes".to_string()
                } else {
                    format!("NO ({})", beaten.join(", "))
                }
            );
        }
    }
}

/// Simulated time of one whole multiplication's communication by `gridalg.c`.
fn gridalg(exe: &Path, dir: &Path, case: &Case, s: &AlgorithmSpec, map: &Perm, tag: &str) -> f64 {
    let work = dir.join(tag);
    std::fs::create_dir_all(&work).unwrap();
    let plat = work.join("platform.xml");
    std::fs::write(&plat, platform(&case.machine)).unwrap();
    let args = [
        s.algorithm.name().to_string(),
        s.rows.to_string(),
        s.cols.to_string(),
        s.block_bytes.to_string(),
        s.collective.name().to_string(),
    ];
    let t = smpirun_time(
        exe,
        &work,
        &plat,
        (case, map),
        &args,
        "gridalg_time_s ",
        tag,
    );
    let _ = std::fs::remove_dir_all(&work);
    t
}

/// The SimGrid judge of the grid algorithms (cases i): each algorithm's program under
/// packed, Hilbert, every Scotch mapping and copr's.
fn simulate_algorithms(
    cs: &[Case],
    sims: &[(String, Vec<(String, Perm)>)],
    specs: &[(String, AlgorithmSpec)],
    dir: &Path,
) {
    if specs.is_empty() {
        return;
    }
    let exe = dir.join("gridalg");
    let ok = Command::new("smpicc")
        .arg("-O2")
        .arg(simgrid_source("gridalg.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("\nsmpicc not found: SimGrid runs of the grid algorithms skipped");
        return;
    }
    let mut all = true;
    for (name, spec) in specs {
        let Some((_, maps)) = sims.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let case = cs.iter().find(|c| &c.name == name).unwrap();
        println!("\n#### SimGrid: {name}, one multiplication's communication\n");
        println!(
            "| mapping | simulated ms | staged model ms | packed / this | copr max link µs | ECMP max link µs |"
        );
        println!("|---|---:|---:|---:|---:|---:|");
        let prog = Program::algorithm(spec).unwrap();
        let mut times = Vec::new();
        let mut modelled = Vec::new();
        for (k, (s, map)) in maps.iter().enumerate() {
            if !["packed", "hilbert", "optimised"].contains(&s.as_str()) && !s.starts_with("scotch")
            {
                continue;
            }
            let t0 = Instant::now();
            let t = gridalg(&exe, dir, case, spec, map, &format!("alg-{k}"));
            eprintln!(
                "  simgrid {name} {s}: {:.1} s wall",
                t0.elapsed().as_secs_f64()
            );
            let lt = evaluate(&case.pattern, &case.machine, map).max_link_time;
            let ecmp = ecmp_max_link_time(&case.pattern, &case.machine, map);
            let t0 = Instant::now();
            let model = program_time(&prog, &case.machine, map, &RoundModel::simgrid_like());
            eprintln!(
                "  staged model {name} {s}: {:.1} s wall",
                t0.elapsed().as_secs_f64()
            );
            modelled.push(model);
            times.push((s.clone(), t, lt, ecmp));
        }
        let packed = times.iter().find(|x| x.0 == "packed").map(|x| x.1);
        for ((s, t, lt, ecmp), model) in times.iter().zip(&modelled) {
            println!(
                "| {s} | {:.3} | {:.3} | {:.2} | {:.1} | {} |",
                t * 1e3,
                model * 1e3,
                packed.map_or(f64::NAN, |p| p / t),
                lt * 1e6,
                ecmp.map_or("–".into(), |x| format!("{:.1}", x * 1e6))
            );
        }
        // the model's ranking against SimGrid's: pairs of mappings in the same order
        let (mut agree, mut pairs) = (0, 0);
        for a in 0..times.len() {
            for b in a + 1..times.len() {
                if times[a].1 != times[b].1 {
                    pairs += 1;
                    agree += usize::from((times[a].1 < times[b].1) == (modelled[a] < modelled[b]));
                }
            }
        }
        let first = |v: &[f64]| (0..v.len()).min_by(|&a, &b| v[a].total_cmp(&v[b]));
        let sim: Vec<f64> = times.iter().map(|x| x.1).collect();
        println!(
            "\nstaged model: pairs ranked as SimGrid ranks them {agree} of {pairs}; fastest: SimGrid {}, model {}",
            first(&sim).map_or("–", |k| times[k].0.as_str()),
            first(&modelled).map_or("–", |k| times[k].0.as_str())
        );
        if let Some(o) = times.iter().find(|x| x.0 == "optimised").map(|x| x.1) {
            let beaten: Vec<&str> = times
                .iter()
                .filter(|x| x.0 != "optimised" && x.1 <= o)
                .map(|x| x.0.as_str())
                .collect();
            all &= beaten.is_empty();
            println!(
                "\noptimised faster than packed, hilbert and every Scotch mapping: {}",
                if beaten.is_empty() {
                    "yes".to_string()
                } else {
                    format!("NO ({})", beaten.join(", "))
                }
            );
        }
    }
    println!(
        "\ngrid algorithms: optimised fastest in SimGrid in every case: {}",
        if all { "yes" } else { "NO" }
    );
}

/// The SimGrid replay of graph traffic (cases h at p = 1024): `benches/simgrid/replay.c`
/// sends every message of the pattern once (one round, every rank starting at the same
/// simulated instant) under copr's mapping and every Scotch mapping. With `keep`, each
/// case's inputs stay in `keep/h<k>/` (`case.txt`, `graph.txt`, `platform.xml`,
/// `hosts-<mapping>`) to replay them again by hand.
fn simulate_graphs(
    cs: &[Case],
    sims: &[(String, Vec<(String, Perm)>)],
    dir: &Path,
    keep: Option<&Path>,
) {
    let exe = dir.join("replay");
    let ok = Command::new("smpicc")
        .arg("-O2")
        .arg(simgrid_source("replay.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("\nsmpicc not found: SimGrid replays of the graphs skipped");
        return;
    }
    let mut all = true;
    for (k, (name, maps)) in sims.iter().enumerate() {
        let case = cs.iter().find(|c| &c.name == name).unwrap();
        if !name.starts_with("(h)") || matches!(case.machine.kind(), NetKind::Flat) {
            continue;
        }
        let work = keep.map_or_else(|| dir.join("replay-work"), |d| d.join(format!("h{k}")));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("case.txt"), format!("{name}\n")).unwrap();
        let graph = work.join("graph.txt");
        let text: String = case
            .pattern
            .edges()
            .iter()
            .map(|e| format!("{} {} {}\n", e.src, e.dst, e.bytes))
            .collect();
        std::fs::write(&graph, text).unwrap();
        let plat = work.join("platform.xml");
        std::fs::write(&plat, platform(&case.machine)).unwrap();
        println!("\n#### SimGrid replay: {name}, one round of every message from a common start\n");
        println!("| mapping | simulated µs | copr max link µs | copr fluid round µs (SimGrid-like sharing and latency) |");
        println!("|---|---:|---:|---:|");
        let mut times = Vec::new();
        for (s, map) in maps {
            if s != "optimised" && !s.starts_with("scotch") {
                continue;
            }
            let args = [graph.display().to_string(), "1".into()];
            let what = format!("replay {name} {s}");
            let t = smpirun_time(
                &exe,
                &work,
                &plat,
                (case, map),
                &args,
                "replay_time_s ",
                &what,
            );
            if keep.is_some() {
                let to = work.join(format!("hosts-{}", s.replace(' ', "-")));
                std::fs::rename(work.join("hosts"), to).unwrap();
            }
            let lt = evaluate(&case.pattern, &case.machine, map).max_link_time;
            let fl = copr_mapping::round_time(
                &case.pattern,
                &case.machine,
                map,
                &copr_mapping::RoundModel::simgrid_like(),
            );
            println!(
                "| {s} | {:.3} | {:.3} | {:.3} |",
                t * 1e6,
                lt * 1e6,
                fl * 1e6
            );
            times.push((s.clone(), t));
        }
        if let Some(o) = times.iter().find(|x| x.0 == "optimised").map(|x| x.1) {
            let beaten: Vec<&str> = times
                .iter()
                .filter(|x| x.0 != "optimised" && x.1 <= o)
                .map(|x| x.0.as_str())
                .collect();
            all &= beaten.is_empty();
            println!(
                "\noptimised faster than every Scotch mapping: {}",
                if beaten.is_empty() {
                    "yes".to_string()
                } else {
                    format!("NO ({})", beaten.join(", "))
                }
            );
        }
        if keep.is_none() {
            let _ = std::fs::remove_dir_all(&work);
        }
    }
    println!(
        "\ngraph replays: optimised fastest in every case: {}",
        if all { "yes" } else { "NO" }
    );
}

/// The optimiser on machines that route ECMP (fat trees) with its busiest link measured
/// under ECMP (the machine's own model) and on one path
/// ([`MapMachine::with_single_path_loads`]), alternating, `rounds` rounds: the whole
/// comparison's wall time, hop-bytes and both busiest links of the chosen mapping.
fn load_models(cs: &[Case], opts: &Options, rounds: usize) {
    println!("\n#### The optimiser's busiest link: ECMP against one path, alternating\n");
    println!("| case | round | objective | time s | hop-bytes MB | ECMP busiest link µs | single-path busiest link µs |");
    println!("|---|---:|---|---:|---:|---:|---:|");
    let all: Vec<Strategy> = Strategy::BASELINES
        .iter()
        .copied()
        .chain([Strategy::Optimised])
        .collect();
    for c in cs {
        if c.machine.link_model() != copr_mapping::LinkLoadModel::Ecmp {
            continue;
        }
        let single = c.machine.clone().with_single_path_loads();
        for r in 0..rounds {
            for (name, m) in [("single path", &single), ("ECMP", &c.machine)] {
                let t0 = Instant::now();
                let cmp = compare(&c.pattern, m, &all, opts, |_| {}).unwrap();
                let t = t0.elapsed().as_secs_f64();
                let o = cmp.row("optimised").unwrap();
                let e = ecmp_max_link_time(&c.pattern, &c.machine, &o.map).unwrap();
                let s = evaluate(&c.pattern, &single, &o.map).max_link_time;
                println!(
                    "| {} | {r} | {name} | {t:.2} | {:.1} | {:.1} | {:.1} |",
                    c.name,
                    mb(o.metrics.hop_bytes),
                    e * 1e6,
                    s * 1e6
                );
            }
        }
    }
}

/// Paired timing at p = 102 400: copr's whole optimiser (baselines included) against
/// Scotch, alternating, `rounds` rounds.
fn speed(rounds: usize, dir: &Path) {
    let cs = cases(&["g".to_string()]);
    let c = &cs[0];
    println!(
        "\n#### Speed at p = 102 400 ({}), {rounds} alternating rounds\n",
        c.name
    );
    println!("| round | copr optimiser s | scotch_gmap -Cd s | scotch / copr |");
    println!("|---:|---:|---:|---:|");
    let mut ratios = Vec::new();
    let mut coprs = Vec::new();
    for r in 0..rounds {
        let t0 = Instant::now();
        let cmp = compare(
            &c.pattern,
            &c.machine,
            &[Strategy::Optimised],
            &Options::default(),
            |_| {},
        )
        .unwrap();
        let ct = t0.elapsed().as_secs_f64();
        assert!(cmp.row("optimised").is_some());
        let st = run_scotch(c, dir).map(|x| x.1);
        coprs.push(ct);
        if let Some(s) = st {
            ratios.push(s / ct);
        }
        println!(
            "| {r} | {ct:.3} | {} | {} |",
            st.map_or("–".into(), |s| format!("{s:.2}")),
            st.map_or("–".into(), |s| format!("{:.1}", s / ct))
        );
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "\nmedian copr {:.3} s, median ratio scotch/copr {:.1}",
        med(&mut coprs),
        med(&mut ratios)
    );
}

/// The case filters of the command line: every `--only` value split at commas, and
/// every `--only-name` value whole (for a name that contains a comma); each option may
/// be given several times.
fn name_filters(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let Some(v) = args.get(i + 1) else { break };
        match a.as_str() {
            "--only" => out.extend(v.split(',').map(str::to_string)),
            "--only-name" => out.push(v.clone()),
            _ => {}
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let which: Vec<String> = args
        .iter()
        .position(|a| a == "--cases")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_default();
    let mut opts = Options::default();
    if let Some(b) = args
        .iter()
        .position(|a| a == "--budget")
        .and_then(|i| args.get(i + 1))
    {
        opts.budget = std::time::Duration::from_secs_f64(b.parse().expect("--budget SECONDS"));
    }
    if let Some(s) = args
        .iter()
        .position(|a| a == "--seed")
        .and_then(|i| args.get(i + 1))
    {
        opts.seed = s.parse().expect("--seed N");
    }
    let graph_seed = args
        .iter()
        .position(|a| a == "--graph-seed")
        .and_then(|i| args.get(i + 1))
        .map_or(0, |s| s.parse().expect("--graph-seed N"));
    GRAPH_SEED.set(graph_seed).expect("set once");
    // the mapping code uses a second thread where there is one (rayon: the multilevel
    // bisection's tries and growths, anytime rounds run ahead, the routing of large
    // patterns; RAYON_NUM_THREADS=1 for one); the tables give wall and CPU time
    // (`cpu_seconds`), `scotch_gmap` may use more than one thread
    let dir = std::env::temp_dir().join(format!("copr-mapping-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "copr mapping benchmark (graph seed {graph_seed}); scotch {}, simgrid {}",
        if scotch::scotch_available() {
            "found"
        } else {
            "missing"
        },
        if Command::new("smpicc").arg("--version").output().is_ok() {
            "found"
        } else {
            "missing"
        }
    );
    let mut cs = cases(&which);
    let mut specs = Vec::new();
    // the grid algorithms only when asked for (SimGrid needs minutes per case)
    if which.iter().any(|w| w == "i") {
        algorithm_cases(&mut cs, &mut specs);
    }
    // --only A,B: the cases whose name contains A or B (to rerun a few, e.g. SimGrid's);
    // --only-name TEXT: the cases whose name contains TEXT whole, commas included
    let filters = name_filters(&args);
    let keep = |n: &str| filters.is_empty() || filters.iter().any(|o| n.contains(o.as_str()));
    // the 2048-16 384-task graphs and the 102 400-task graph only when asked for (and
    // only the graphs of the cases kept)
    if which.iter().any(|w| w == "j") {
        large_graph_cases(&mut cs, &keep);
    }
    cs.retain(|c| keep(&c.name));
    specs.retain(|(n, _)| keep(n));
    // --load-models N: the ECMP and single-path objectives side by side, N rounds
    if let Some(n) = args
        .iter()
        .position(|a| a == "--load-models")
        .and_then(|i| args.get(i + 1))
    {
        load_models(&cs, &opts, n.parse().expect("--load-models ROUNDS"));
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let sims = mapping_tables(&cs, &dir, &opts);
    if !quick {
        simulate(&cs, &sims, &dir);
        simulate_algorithms(&cs, &sims, &specs, &dir);
        let keep = args
            .iter()
            .position(|a| a == "--keep-replays")
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from);
        simulate_graphs(&cs, &sims, &dir, keep.as_deref());
        if which.is_empty() || which.iter().any(|w| w == "g") {
            speed(3, &dir);
        }
    }
    if which.iter().any(|w| w == "k") {
        large_graph_speed(3);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
