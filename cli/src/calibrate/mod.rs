//! `copr calibrate`: measures the machine under `mpirun`, writes a machine file with
//! the measured costs inside (what `copr plan --cost`, `copr map --machine`, `copr topo`
//! and `copr_cost_models::load_setup` read)
//! with the raw measurements beside it, and with `--validate` times real reshuffles
//! against the model's predictions.

use std::path::PathBuf;

use clap::Args;

pub use error::CalibrateError;
use error::Result;

// pure planning and classification: built in every build (the planning benchmark
// times them without MPI)
pub mod budget;
pub mod cases;
pub mod classes;
pub mod error;
#[cfg(feature = "mpi")]
mod measure;
pub mod stats;
#[cfg(feature = "mpi")]
mod validate;

/// Arguments of `copr calibrate`.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// The machine file to write, with the measured costs inside (TOML, or JSON by
    /// extension); the placement goes to FILE with extension `.placement`, the raw
    /// measurements to `.raw.json`.
    #[arg(long, value_name = "FILE", default_value = "copr-calibration.toml")]
    pub(crate) out: PathBuf,
    /// Time budget in seconds for everything, validation included: ping-pong 30 %,
    /// node paths 10 %, local kernels 10 %, validation 45 %, writing 5 % (unused time
    /// passes on). Each phase measures a fixed minimum (one pair per class, f64)
    /// whatever the budget, and prints what it skipped. At most 86400 (one day):
    /// every step is finite, so a larger budget would only end the same run.
    #[arg(long, default_value_t = 40.0, allow_negative_numbers = true)]
    pub(crate) budget: f64,
    /// Treat groups of consecutive ranks as this many nodes (shared window inside a
    /// group, messages between groups), to calibrate emulated nodes on one machine.
    #[arg(long, value_name = "NODES")]
    pub(crate) emulate_nodes: Option<usize>,
    /// Also run real reshuffles and compare their times with the written model's
    /// predictions (error per case, rank correlation).
    #[arg(long)]
    pub(crate) validate: bool,
}

/// Runs `copr calibrate`. Errors end the process here with a one-line message (from
/// rank 0 only under mpirun) and exit status 2, after MPI is finalised.
pub(crate) fn run(a: CalibrateArgs) -> copr::Result<()> {
    if let Err(msg) = check_args(&a).and_then(|()| calibrate(&a)) {
        if first_rank() {
            eprintln!("copr: error: {msg}");
        }
        std::process::exit(2);
    }
    Ok(())
}

/// Whether this process prints errors: rank 0 under mpirun, or a process started
/// alone. MPI may not be initialised yet (or at all), so the launcher's environment
/// says.
fn first_rank() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .is_none_or(|r| r.trim() == "0")
}

/// Checks what can be checked before MPI starts: the budget, the node emulation,
/// and that the output files can be written.
fn check_args(a: &CalibrateArgs) -> Result<()> {
    if !(a.budget > 0.0 && a.budget <= budget::MAX_BUDGET) {
        return Err(CalibrateError::Budget(a.budget));
    }
    if a.emulate_nodes == Some(0) {
        return Err(CalibrateError::NoNodes);
    }
    if a.out == placement_path(&a.out)
        || a.out == raw_path(&a.out)
        || a.out == node_matrix_path(&a.out)
    {
        return Err(CalibrateError::OutClashes(a.out.clone()));
    }
    for path in [
        a.out.clone(),
        placement_path(&a.out),
        raw_path(&a.out),
        node_matrix_path(&a.out),
    ] {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| CalibrateError::Write {
                path: path.clone(),
                source,
            })?;
        if !existed {
            // leave no empty file behind if calibration stops before writing
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(())
}

fn placement_path(out: &std::path::Path) -> std::path::PathBuf {
    out.with_extension("placement")
}

fn raw_path(out: &std::path::Path) -> std::path::PathBuf {
    out.with_extension("raw.json")
}

fn node_matrix_path(out: &std::path::Path) -> std::path::PathBuf {
    out.with_extension("nodes.toml")
}

#[cfg(not(feature = "mpi"))]
fn calibrate(_: &CalibrateArgs) -> Result<()> {
    Err(CalibrateError::NoMpi)
}

#[cfg(feature = "mpi")]
fn calibrate(a: &CalibrateArgs) -> Result<()> {
    with_mpi::calibrate(a)
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::path::Path;
    use std::time::Instant;

    use copr::transport::MpiTransport;
    use copr_topology::files::Format;
    use copr_topology::{
        InterConfig, IntraConfig, LevelCosts, LinkSpec, PlacementConfig, TopologyConfig,
        TransformCosts,
    };
    use mpi::collective::SystemOperation;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::*;
    use serde::Serialize;

    use super::budget::{self, PhasePlan};
    use super::classes::{self, Class, RankMap};
    use super::error::{CalibrateError, Result};
    use super::measure::{
        self, ClassResult, Injection, LocalThroughput, NodePairResult, PairResult, WindowPath,
        LADDER,
    };
    use super::validate::{self, Validation};
    use super::{node_matrix_path, placement_path, raw_path, CalibrateArgs};

    /// Up to this many nodes the config prices node pairs with a node × node matrix
    /// (measured pairs as measured, the others with the inter-node class's values);
    /// beyond, one inter-node cost for all.
    const NODE_MATRIX_UP_TO: usize = 64;

    /// One measured node pair's link as written.
    #[derive(Debug, Clone, Serialize)]
    struct NodeLink {
        nodes: [String; 2],
        latency: f64,
        bandwidth: f64,
    }

    /// The values the written config takes, and why.
    #[derive(Debug, Clone, Serialize)]
    struct Chosen {
        rule: &'static str,
        intra: Vec<(String, f64, f64)>,
        inter: Option<(f64, f64)>,
        /// The node-pair matrix file, if written.
        node_matrix: Option<String>,
        /// The measured node pairs' links in it (the other pairs take `inter`).
        node_links: Vec<NodeLink>,
        transform_scale: f64,
        transform_transpose: f64,
        transform_conjugate: f64,
    }

    /// Everything measured, written as JSON beside the config.
    #[derive(Debug, Serialize)]
    struct Raw {
        copr_version: &'static str,
        ranks: usize,
        nodes: usize,
        emulated_nodes: bool,
        budget_seconds: f64,
        seconds: f64,
        plan: PhasePlan,
        /// What the budget left out.
        skipped: Vec<String>,
        ladder_bytes: Vec<usize>,
        classes: Vec<ClassResult>,
        pairs: Vec<PairResult>,
        node_pairs: Vec<NodePairResult>,
        injection: Vec<Injection>,
        window: Vec<WindowPath>,
        local: Vec<LocalThroughput>,
        config: Chosen,
        validation: Option<Validation>,
    }

    pub(super) fn calibrate(a: &CalibrateArgs) -> Result<()> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or(CalibrateError::MpiStarted)?;
        let world = universe.world();
        let r = calibrate_on(&world, a);
        drop(world);
        drop(universe);
        r
    }

    /// Agrees on failure: `Err` on every rank if any rank failed (the first failing
    /// rank's message on rank 0 is enough, since only rank 0 prints).
    fn agree<T>(w: &SimpleCommunicator, r: copr::Result<T>) -> Result<T> {
        let bad = u8::from(r.is_err());
        let mut any = 0u8;
        w.all_reduce_into(&bad, &mut any, SystemOperation::max());
        match r {
            Err(e) => Err(e.into()),
            Ok(_) if any != 0 => Err(CalibrateError::OtherRank),
            Ok(v) => Ok(v),
        }
    }

    /// Everything the ranks measured, before rank 0 chooses the config.
    struct Measured {
        results: Vec<PairResult>,
        pair_seconds: f64,
        injection: Vec<Injection>,
        window: Vec<WindowPath>,
        local: Vec<LocalThroughput>,
    }

    /// The calibration, step by step: check the run, plan the budget, measure, write
    /// the config on rank 0, load it on every rank, validate it, write the raw
    /// measurements.
    fn calibrate_on(w: &SimpleCommunicator, a: &CalibrateArgs) -> Result<()> {
        let start = Instant::now();
        let p = w.size() as usize;
        if p < 2 {
            return Err(CalibrateError::TooFewRanks);
        }
        if let Some(k) = a.emulate_nodes.filter(|&k| k > p) {
            return Err(CalibrateError::TooManyNodes { nodes: k, ranks: p });
        }
        let placement = agree(w, copr::gain::mpi::discover_placement(w))?;
        let map = RankMap::new(&placement, a.emulate_nodes);
        let pairs = classes::sample_pairs(&map, 0x636f7072);
        let plan = PhasePlan::new(a.budget, pairs.len(), a.validate);
        if w.rank() == 0 {
            announce(&map, a.budget, &plan);
        }
        let measured = measure_all(w, &map, &pairs, &plan, start)?;
        let mut skipped = Vec::new();
        if w.rank() == 0 {
            skipped = skipped_measurements(&measured, pairs.len(), &map);
        }
        // every rank has the same (gathered) local rates
        let copy = measured
            .local
            .iter()
            .find(|x| x.element == "f64")
            .map_or(0.0, |x| x.copy.median);
        // rank 0 chooses and writes; every rank then loads what was written
        let raw = (w.rank() == 0).then(|| choose_and_write(a, &map, &plan, measured));
        let mut written = u8::from(raw.as_ref().is_some_and(|(ok, _)| *ok));
        w.process_at_rank(0).broadcast_into(&mut written);
        if written == 0 {
            return Err(CalibrateError::ConfigNotWritten(a.out.clone()));
        }
        let validation = validate_config(w, a, &map, &plan, copy, start, &mut skipped)?;
        if let Some((_, mut raw)) = raw {
            raw.validation = validation;
            raw.seconds = start.elapsed().as_secs_f64();
            raw.skipped = skipped;
            finish(a, &raw)?;
        }
        Ok(())
    }

    /// The first lines: the ranks, the nodes, the budget and its phases.
    fn announce(map: &RankMap, budget: f64, plan: &PhasePlan) {
        println!(
            "copr calibrate: {} ranks on {} node{}{}, budget {budget} s",
            map.node.len(),
            map.nodes(),
            if map.nodes() == 1 { "" } else { "s" },
            if map.emulated {
                " (emulated: groups of consecutive ranks, shared window inside, messages between)"
            } else {
                ""
            }
        );
        println!("{}", plan.describe());
    }

    /// The measuring phases, each within its share of the budget: ping-pong pairs,
    /// injection and the shared window, local kernels.
    fn measure_all(
        w: &SimpleCommunicator,
        map: &RankMap,
        pairs: &[(Class, usize, usize)],
        plan: &PhasePlan,
        start: Instant,
    ) -> Result<Measured> {
        let results = measure::measure_pairs(w, map, pairs, start, plan.until(budget::PAIRS));
        let pair_seconds = start.elapsed().as_secs_f64();
        let node_paths = plan.until(budget::NODE_PATHS);
        let injection = measure::injection(w, map, start, node_paths);
        let window = agree(w, measure::window_paths(w, map, start, node_paths))?;
        let local = agree(
            w,
            measure::local_throughput(w, start, plan.until(budget::LOCAL)),
        )?;
        Ok(Measured {
            results,
            pair_seconds,
            injection,
            window,
            local,
        })
    }

    /// What the budget left out of the measurements, one line each.
    fn skipped_measurements(m: &Measured, sampled: usize, map: &RankMap) -> Vec<String> {
        let mut skipped = Vec::new();
        if m.results.len() < sampled {
            skipped.push(format!(
                "{} of {} sampled rank pairs: out of the ping-pong phase's budget",
                sampled - m.results.len(),
                sampled
            ));
        }
        if map.nodes() > 1 && m.injection.len() < 2.min(map.nodes() / 2) {
            skipped.push("the second injection node pair: out of budget".into());
        }
        if m.window.len() < 4 && map.nodes() < map.node.len() {
            skipped.push(format!(
                "shared window of {} of 4 element types: out of budget",
                4 - m.window.len()
            ));
        }
        if m.local.len() < 4 {
            skipped.push(format!(
                "local kernels of {} of 4 element types: out of budget",
                4 - m.local.len()
            ));
        }
        skipped
    }

    /// Rank 0: prints the measurements, chooses the config's values and writes the
    /// config; returns whether it was written and the raw record (validation, time and
    /// skipped steps still to come).
    fn choose_and_write(
        a: &CalibrateArgs,
        map: &RankMap,
        plan: &PhasePlan,
        m: Measured,
    ) -> (bool, Raw) {
        let classes = measure::summarise(&m.results);
        let node_pairs = measure::by_node_pair(&m.results, map);
        print_classes(
            &classes,
            m.results.len(),
            m.pair_seconds,
            &m.injection,
            &m.window,
            &m.local,
        );
        let chosen = choose(
            a,
            map,
            &classes,
            &node_pairs,
            &m.injection,
            &m.window,
            &m.local,
        );
        print_node_links(&chosen, map.nodes());
        let written = match write_config(a, map, &chosen) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("copr: error: {e}");
                false
            }
        };
        let raw = Raw {
            copr_version: env!("CARGO_PKG_VERSION"),
            ranks: map.node.len(),
            nodes: map.nodes(),
            emulated_nodes: map.emulated,
            budget_seconds: a.budget,
            seconds: 0.0,
            plan: plan.clone(),
            skipped: Vec::new(),
            ladder_bytes: LADDER.to_vec(),
            classes,
            pairs: m.results,
            node_pairs,
            injection: m.injection,
            window: m.window,
            local: m.local,
            config: chosen,
            validation: None,
        };
        (written, raw)
    }

    /// Every rank loads the written config; with `--validate`, real reshuffles are
    /// timed against its predictions (rank 0 prints them) if the budget leaves time.
    fn validate_config(
        w: &SimpleCommunicator,
        a: &CalibrateArgs,
        map: &RankMap,
        plan: &PhasePlan,
        copy: f64,
        start: Instant,
        skipped: &mut Vec<String>,
    ) -> Result<Option<Validation>> {
        let (me, p) = (w.rank() as usize, w.size() as usize);
        let setup = agree(
            w,
            copr_cost_models::load_setup(&a.out, Some(p)).map_err(copr::Error::from),
        )?;
        if !a.validate {
            return Ok(None);
        }
        let until = plan.until(budget::VALIDATION);
        if !measure::proceed(w, start, until, false) {
            if me == 0 {
                skipped.push("the validation: out of budget".into());
            }
            return Ok(None);
        }
        let mut t = match a.emulate_nodes {
            Some(k) => MpiTransport::with_groups(w.duplicate(), (me * k / p) as u32),
            None => MpiTransport::new(w.duplicate()),
        };
        let v = agree(
            w,
            validate::validate(
                w,
                &mut t,
                setup.model.as_ref(),
                copy,
                &map.node,
                start,
                until,
            ),
        )?;
        if me == 0 {
            validate::print(&v);
        }
        Ok(Some(v))
    }

    /// Rank 0: writes the raw measurements and prints what was skipped and written.
    fn finish(a: &CalibrateArgs, raw: &Raw) -> Result<()> {
        let text = serde_json::to_string_pretty(raw).expect("measurements serialise");
        write(&raw_path(&a.out), &(text + "\n"))?;
        println!();
        for s in &raw.skipped {
            println!("skipped: {s}");
        }
        println!(
            "wrote {} (machine file: copr plan FILE --cost {}), {}, {}{} in {:.1} s (budget {} s)",
            a.out.display(),
            a.out.display(),
            placement_path(&a.out).display(),
            raw.config
                .node_matrix
                .as_ref()
                .map_or(String::new(), |_| format!(
                    "{}, ",
                    node_matrix_path(&a.out).display()
                )),
            raw_path(&a.out).display(),
            raw.seconds,
            a.budget
        );
        Ok(())
    }

    fn gbs(b: f64) -> String {
        format!("{:.2} GB/s", b / 1e9)
    }

    fn us(t: f64) -> String {
        format!("{:.2} us", t * 1e6)
    }

    fn print_classes(
        classes: &[ClassResult],
        pairs: usize,
        seconds: f64,
        injection: &[Injection],
        window: &[WindowPath],
        local: &[LocalThroughput],
    ) {
        println!(
            "ping-pong: {pairs} rank pairs in {seconds:.1} s; latency = 8-byte half round trip, median over pairs (p10-p90); fit t = L + s/B over 64 B .. 4 MiB"
        );
        println!(
            "{:<13} {:>5} {:>10} {:>21} {:>10} {:>12} {:>9}",
            "class", "pairs", "latency", "(p10-p90)", "fit L", "fit B", "max|res|"
        );
        for c in classes {
            let (fl, fb, res) = match &c.fit {
                Some(f) => (
                    us(f.latency),
                    gbs(f.bandwidth),
                    format!(
                        "{:.0} %",
                        100.0 * f.residuals.iter().fold(0.0f64, |m, r| m.max(r.abs()))
                    ),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            println!(
                "{:<13} {:>5} {:>10} {:>21} {:>10} {:>12} {:>9}",
                c.class.name(),
                c.pairs,
                us(c.latency.median),
                format!("({}-{})", us(c.latency.p10), us(c.latency.p90)),
                fl,
                fb,
                res
            );
        }
        let checks: Vec<super::stats::ClassCheck<'_>> = classes
            .iter()
            .map(|c| super::stats::ClassCheck {
                name: c.class.name(),
                latency: c.latency.median,
                max_residual: c
                    .fit
                    .as_ref()
                    .map(|f| f.residuals.iter().fold(0.0f64, |m, r| m.max(r.abs()))),
            })
            .collect();
        for w in super::stats::implausible(&checks) {
            eprintln!("copr: warning: {w}");
        }
        for i in injection {
            println!(
                "injection {} -> {}: {} ranks sending {} KiB messages at once: {} (p10-p90 {}-{})",
                i.nodes[0],
                i.nodes[1],
                i.senders,
                i.message_bytes / 1024,
                gbs(i.bandwidth.median),
                gbs(i.bandwidth.p10),
                gbs(i.bandwidth.p90)
            );
        }
        if !window.is_empty() {
            let parts: Vec<String> = window
                .iter()
                .map(|x| format!("{} {}", x.element, gbs(x.bandwidth.median)))
                .collect();
            println!(
                "shared window (engine, {} ranks of a node at once), received per rank: {}",
                window[0].ranks_per_node,
                parts.join(", ")
            );
        }
        println!("local engine kernels, GB/s (median over ranks, all ranks at once):");
        println!(
            "  {:<5} {:>8} {:>8} {:>10} {:>15} {:>8} {:>8}",
            "type", "copy", "scale", "transpose", "conj-transpose", "pack", "unpack"
        );
        let rate = |s: f64| {
            if s > 0.0 {
                format!("{:.2}", 1e-9 / s)
            } else {
                "-".into()
            }
        };
        for l in local {
            let win = window.iter().find(|x| x.element == l.element);
            println!(
                "  {:<5} {:>8} {:>8} {:>10} {:>15} {:>8} {:>8}",
                l.element,
                rate(l.copy.median),
                rate(l.scale.median),
                rate(l.transpose.median),
                l.conj_transpose.map_or("-".into(), |c| rate(c.median)),
                win.map_or("-".into(), |x| rate(x.pack_per_byte.median)),
                win.map_or("-".into(), |x| rate(x.unpack_per_byte.median)),
            );
        }
    }

    const RULE: &str = "latency: the class's median 8-byte half round trip; bandwidth: the ladder fit's, capped by what a rank gets when all ranks move data at once (inside a node: the engine's shared-window path for f64; between nodes: the node's injection bandwidth divided by its sending ranks); node pairs (up to 64 nodes): a node x node matrix with each measured node pair's own latency and capped fit, the other-node class's values for pairs not measured; transform: extra seconds per byte over a plain local copy (scale and transpose of f64, conjugation of c64)";

    fn choose(
        a: &CalibrateArgs,
        map: &RankMap,
        classes: &[ClassResult],
        node_pairs: &[NodePairResult],
        injection: &[Injection],
        window: &[WindowPath],
        local: &[LocalThroughput],
    ) -> Chosen {
        let bandwidth = |fit: Option<&super::stats::LinearFit>, ladder: Option<&[f64]>| {
            fit.map(|f| f.bandwidth)
                // no usable fit: the largest message's rate
                .or_else(|| {
                    ladder.map(|l| *LADDER.last().expect("ladder") as f64 / l[LADDER.len() - 1])
                })
                .unwrap_or(f64::NAN)
        };
        let win = window
            .iter()
            .find(|x| x.element == "f64")
            .map(|x| x.bandwidth.median);
        let inj = crate::calibrate::stats::median(
            &injection
                .iter()
                .map(|i| i.bandwidth.median / i.senders as f64)
                .collect::<Vec<_>>(),
        );
        let cap = |b: f64, c: Option<f64>| match c {
            Some(c) if c.is_finite() && c > 0.0 => b.min(c),
            _ => b,
        };
        let mut intra = Vec::new();
        let mut inter = None;
        for c in classes {
            let lat = sig4(c.latency.median.max(0.0));
            let cap_by = if c.class == Class::OtherNode {
                Some(inj)
            } else {
                win
            };
            let bw = sig4(cap(bandwidth(c.fit.as_ref(), Some(&c.ladder)), cap_by));
            if c.class == Class::OtherNode {
                inter = Some((lat, bw));
            } else {
                intra.push((c.class.name().to_string(), lat, bw));
            }
        }
        let mut node_links = Vec::new();
        let mut node_matrix = None;
        if inter.is_some() && map.nodes() <= NODE_MATRIX_UP_TO {
            for np in node_pairs {
                let bw = cap(bandwidth(np.fit.as_ref(), None), Some(inj));
                if !(bw.is_finite() && bw > 0.0) {
                    continue;
                }
                node_links.push(NodeLink {
                    nodes: np.names.clone(),
                    latency: sig4(np.latency.median.max(0.0)),
                    bandwidth: sig4(bw),
                });
            }
            node_matrix = node_matrix_path(&a.out)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned());
        }
        let f64l = local.iter().find(|x| x.element == "f64");
        let c64l = local.iter().find(|x| x.element == "c64");
        let extra = |a: f64, b: f64| sig4((a - b).max(0.0));
        Chosen {
            rule: RULE,
            intra,
            inter,
            node_matrix,
            node_links,
            transform_scale: f64l.map_or(0.0, |l| extra(l.scale.median, l.copy.median)),
            transform_transpose: f64l.map_or(0.0, |l| extra(l.transpose.median, l.copy.median)),
            transform_conjugate: c64l
                .and_then(|l| {
                    l.conj_transpose
                        .map(|c| extra(c.median, l.transpose.median))
                })
                .unwrap_or(0.0),
        }
    }

    fn print_node_links(c: &Chosen, nodes: usize) {
        let Some(file) = &c.node_matrix else {
            return;
        };
        let pairs = nodes * (nodes - 1) / 2;
        let measured = c.node_links.len();
        println!(
            "node pairs ({file}): {measured} of {pairs} measured{}",
            if measured < pairs {
                ", the others priced as the other-node class"
            } else {
                ""
            }
        );
        for l in c.node_links.iter().take(8) {
            println!(
                "  {} <-> {}: latency {}, bandwidth {}",
                l.nodes[0],
                l.nodes[1],
                us(l.latency),
                gbs(l.bandwidth)
            );
        }
        if c.node_links.len() > 8 {
            println!("  … (all in the raw measurements)");
        }
    }

    /// The node × node matrix: measured pairs as measured, the others (and both
    /// directions) the inter-node class's link; zero on the diagonal.
    fn node_matrix(map: &RankMap, c: &Chosen, inter: (f64, f64)) -> copr_topology::MatrixFile {
        let k = map.nodes();
        let mut lat = vec![vec![inter.0; k]; k];
        let mut inv = vec![vec![1.0 / inter.1; k]; k];
        for x in 0..k {
            lat[x][x] = 0.0;
            inv[x][x] = 0.0;
        }
        let index = |name: &str| map.node_names.iter().position(|n| n == name);
        for l in &c.node_links {
            if let (Some(x), Some(y)) = (index(&l.nodes[0]), index(&l.nodes[1])) {
                for (i, j) in [(x, y), (y, x)] {
                    lat[i][j] = l.latency;
                    inv[i][j] = 1.0 / l.bandwidth;
                }
            }
        }
        copr_topology::MatrixFile {
            names: map.node_names.clone(),
            latency: lat,
            inv_bandwidth: inv,
        }
    }

    fn spec(latency: f64, bandwidth: f64) -> LinkSpec {
        LinkSpec { latency, bandwidth }
    }

    /// `x` to four significant digits (the measurements hold no more).
    fn sig4(x: f64) -> f64 {
        format!("{x:.3e}").parse().unwrap_or(x)
    }

    fn write_config(a: &CalibrateArgs, map: &RankMap, c: &Chosen) -> Result<()> {
        let intra = if map.tree.is_some() {
            let mut levels = LevelCosts::empty();
            for (name, lat, bw) in &c.intra {
                let class = [Class::SameCache, Class::SameSocket, Class::OtherSocket]
                    .into_iter()
                    .find(|k| k.name() == name);
                for &l in class.map_or(&[][..], |k| k.levels()) {
                    levels = levels.with(l, spec(*lat, *bw));
                }
            }
            Some(IntraConfig::HwlocMachine {
                levels: Some(levels),
            })
        } else {
            c.intra.first().map(|(_, lat, bw)| IntraConfig::Uniform {
                latency: *lat,
                bandwidth: *bw,
            })
        };
        let inter = match (c.inter, &c.node_matrix) {
            (Some(link), Some(file)) => {
                let m = node_matrix(map, c, link);
                let text = copr_topology::files::to_string(&m, Format::Toml)?;
                write(&node_matrix_path(&a.out), &text)?;
                Some(InterConfig::Matrix { file: file.into() })
            }
            (Some((latency, bandwidth)), None) => Some(InterConfig::Uniform { latency, bandwidth }),
            (None, _) => None,
        };
        let place = placement_path(&a.out);
        let place_name = place
            .file_name()
            .map(std::path::PathBuf::from)
            .ok_or_else(|| CalibrateError::NotAFile(a.out.clone()))?;
        // one machine file: the machine with its measured costs inside (priced by
        // latency + bandwidth + transform, `copr_cost_models::Term::of_machine`); what
        // was calibrated is said in the header, so that `copr map` names the machine
        // by its nodes
        let what = format!(
            "calibrated by copr calibrate: {} ranks on {} node{}{}",
            map.node.len(),
            map.nodes(),
            if map.nodes() == 1 { "" } else { "s" },
            if map.emulated { " (emulated)" } else { "" }
        );
        let cfg = TopologyConfig {
            intra,
            inter,
            placement: Some(PlacementConfig::File { file: place_name }),
            transform: Some(TransformCosts {
                scale: c.transform_scale,
                transpose: c.transform_transpose,
                conjugate: c.transform_conjugate,
            }),
            ..Default::default()
        };
        let text = cfg.to_string(Format::from_path(&a.out))?;
        let header = format!(
            "# {what}; a machine file (docs/machines.md): `copr plan --cost`, `copr map\n# --machine`, `copr topo` read it.\n# Written by `copr calibrate` (see {}).\n# {}\n",
            raw_path(&a.out)
                .file_name()
                .map_or(String::new(), |f| f.to_string_lossy().into_owned()),
            RULE
        );
        let body = if Format::from_path(&a.out) == Format::Toml {
            header + &text
        } else {
            text
        };
        write(&place, &map.placement().to_text())?;
        write(&a.out, &body)
    }

    fn write(path: &Path, text: &str) -> Result<()> {
        std::fs::write(path, text).map_err(|source| CalibrateError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}
