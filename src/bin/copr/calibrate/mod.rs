//! `copr calibrate`: measures the machine under `mpirun`, writes a cost config in
//! copr's format (what `copr plan --cost` and `copr_cost_models::load_setup` read)
//! with the raw measurements beside it, and with `--validate` times real reshuffles
//! against the model's predictions.

use crate::cli::CalibrateArgs;

#[cfg(feature = "mpi")]
mod measure;
#[cfg(any(feature = "mpi", test))]
mod stats;
#[cfg(feature = "mpi")]
mod validate;

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
fn check_args(a: &CalibrateArgs) -> Result<(), String> {
    if !(a.budget.is_finite() && a.budget > 0.0) {
        return Err(format!(
            "--budget {}: give a positive number of seconds",
            a.budget
        ));
    }
    if a.emulate_nodes == Some(0) {
        return Err("--emulate-nodes 0: give at least 1 node".into());
    }
    if a.out == placement_path(&a.out) || a.out == raw_path(&a.out) {
        return Err(format!(
            "--out {}: the placement and the raw measurements are written beside the config with extensions .placement and .raw.json; give the config another extension (.toml or .json)",
            a.out.display()
        ));
    }
    for path in [a.out.clone(), placement_path(&a.out), raw_path(&a.out)] {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
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

#[cfg(not(feature = "mpi"))]
fn calibrate(_: &CalibrateArgs) -> Result<(), String> {
    Err("copr calibrate measures with MPI: build copr with `--features mpi` and run it under mpirun".into())
}

#[cfg(feature = "mpi")]
fn calibrate(a: &CalibrateArgs) -> Result<(), String> {
    with_mpi::calibrate(a)
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::path::Path;
    use std::time::Instant;

    use copr::transport::MpiTransport;
    use copr_cost_models::{CostConfig, Term};
    use copr_topology::files::Format;
    use copr_topology::{
        InterConfig, IntraConfig, LevelCosts, LinkSpec, PlacementConfig, TopologyConfig,
    };
    use mpi::collective::SystemOperation;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::*;
    use serde::Serialize;

    use super::measure::{
        self, Class, ClassResult, Injection, LocalThroughput, PairResult, RankMap, WindowPath,
        LADDER,
    };
    use super::validate::{self, Validation};
    use super::{placement_path, raw_path, CalibrateArgs};

    /// The values the written config takes, and why.
    #[derive(Debug, Clone, Serialize)]
    struct Chosen {
        rule: &'static str,
        intra: Vec<(String, f64, f64)>,
        inter: Option<(f64, f64)>,
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
        ladder_bytes: Vec<usize>,
        classes: Vec<ClassResult>,
        pairs: Vec<PairResult>,
        injection: Vec<Injection>,
        window: Vec<WindowPath>,
        local: Vec<LocalThroughput>,
        config: Chosen,
        validation: Option<Validation>,
    }

    pub(super) fn calibrate(a: &CalibrateArgs) -> Result<(), String> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or("MPI was initialised already")?;
        let world = universe.world();
        let r = calibrate_on(&world, a);
        drop(world);
        drop(universe);
        r
    }

    /// Agrees on failure: `Err` on every rank if any rank failed (the first failing
    /// rank's message on rank 0 is enough, since only rank 0 prints).
    fn agree<T>(w: &SimpleCommunicator, r: copr::Result<T>) -> Result<T, String> {
        let bad = u8::from(r.is_err());
        let mut any = 0u8;
        w.all_reduce_into(&bad, &mut any, SystemOperation::max());
        match r {
            Err(e) => Err(e.to_string()),
            Ok(_) if any != 0 => Err("calibration failed on another rank".into()),
            Ok(v) => Ok(v),
        }
    }

    fn calibrate_on(w: &SimpleCommunicator, a: &CalibrateArgs) -> Result<(), String> {
        let start = Instant::now();
        let (me, p) = (w.rank() as usize, w.size() as usize);
        if p < 2 {
            return Err(
                "copr calibrate measures between ranks: run it under mpirun with at least 2 ranks (mpirun -n 4 copr calibrate …)"
                    .into(),
            );
        }
        if let Some(k) = a.emulate_nodes.filter(|&k| k > p) {
            return Err(format!(
                "--emulate-nodes {k}: more nodes than the {p} ranks"
            ));
        }
        let placement = agree(w, copr::gain::mpi::discover_placement(w))?;
        let map = RankMap::new(&placement, a.emulate_nodes);
        let budget = a.budget;
        if me == 0 {
            println!(
                "copr calibrate: {p} ranks on {} node{}{}, budget {budget} s",
                map.nodes(),
                if map.nodes() == 1 { "" } else { "s" },
                if map.emulated {
                    " (emulated: groups of consecutive ranks, shared window inside, messages between)"
                } else {
                    ""
                }
            );
        }
        let pairs = measure::sample_pairs(&map, 0x636f7072);
        let results = measure::measure_pairs(w, &map, &pairs, start, 0.5 * budget);
        let pair_seconds = start.elapsed().as_secs_f64();
        let injection = measure::injection(w, &map);
        let window = agree(w, measure::window_paths(w, &map))?;
        let local = agree(w, measure::local_throughput(w))?;
        // every rank has the same (gathered) local rates
        let copy = local
            .iter()
            .find(|x| x.element == "f64")
            .map_or(0.0, |x| x.copy.median);
        // rank 0 chooses and writes; every rank then loads what was written
        let mut written = 0u8;
        let mut raw = None;
        if me == 0 {
            let classes = measure::summarise(&results);
            print_classes(
                &classes,
                results.len(),
                pair_seconds,
                &injection,
                &window,
                &local,
            );
            let chosen = choose(&classes, &injection, &window, &local);
            match write_config(a, &map, &chosen) {
                Ok(()) => written = 1,
                Err(e) => eprintln!("copr: error: {e}"),
            }
            raw = Some(Raw {
                copr_version: env!("CARGO_PKG_VERSION"),
                ranks: p,
                nodes: map.nodes(),
                emulated_nodes: map.emulated,
                budget_seconds: budget,
                seconds: 0.0,
                ladder_bytes: LADDER.to_vec(),
                classes,
                pairs: results,
                injection,
                window,
                local,
                config: chosen,
                validation: None,
            });
        }
        w.process_at_rank(0).broadcast_into(&mut written);
        if written == 0 {
            return Err(format!(
                "{}: could not write the cost config",
                a.out.display()
            ));
        }
        let setup = agree(
            w,
            copr_cost_models::load_setup(&a.out, Some(p)).map_err(copr::Error::from),
        )?;
        let mut validation = None;
        if a.validate {
            let mut t = match a.emulate_nodes {
                Some(k) => MpiTransport::with_groups(w.duplicate(), (me * k / p) as u32),
                None => MpiTransport::new(w.duplicate()),
            };
            let per_rank = if budget >= 20.0 { 1 << 19 } else { 1 << 17 };
            let v = agree(
                w,
                validate::validate(w, &mut t, setup.model.as_ref(), copy, per_rank),
            )?;
            if me == 0 {
                validate::print(&v);
            }
            validation = Some(v);
            drop(t);
        }
        if let Some(mut raw) = raw {
            raw.validation = validation;
            raw.seconds = start.elapsed().as_secs_f64();
            let text = serde_json::to_string_pretty(&raw).expect("measurements serialise");
            std::fs::write(raw_path(&a.out), text + "\n")
                .map_err(|e| format!("{}: {e}", raw_path(&a.out).display()))?;
            println!();
            println!(
                "wrote {} (cost config: copr plan FILE --cost {}), {}, {} in {:.1} s",
                a.out.display(),
                a.out.display(),
                placement_path(&a.out).display(),
                raw_path(&a.out).display(),
                raw.seconds
            );
        }
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

    const RULE: &str = "latency: the class's median 8-byte half round trip; bandwidth: the ladder fit's, capped by what a rank gets when all ranks move data at once (inside a node: the engine's shared-window path for f64; between nodes: the node's injection bandwidth divided by its sending ranks); transform: extra seconds per byte over a plain local copy (scale and transpose of f64, conjugation of c64)";

    fn choose(
        classes: &[ClassResult],
        injection: &[Injection],
        window: &[WindowPath],
        local: &[LocalThroughput],
    ) -> Chosen {
        let bandwidth = |c: &ClassResult| {
            c.fit
                .as_ref()
                .map(|f| f.bandwidth)
                // no usable fit: the largest message's rate
                .unwrap_or_else(|| {
                    *LADDER.last().expect("ladder") as f64 / c.ladder[LADDER.len() - 1]
                })
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
            let lat = c.latency.median.max(0.0);
            let (lat, bw) = if c.class == Class::OtherNode {
                (lat, cap(bandwidth(c), Some(inj)))
            } else {
                (lat, cap(bandwidth(c), win))
            };
            let (lat, bw) = (sig4(lat), sig4(bw));
            if c.class == Class::OtherNode {
                inter = Some((lat, bw));
            } else {
                intra.push((c.class.name().to_string(), lat, bw));
            }
        }
        let f64l = local.iter().find(|x| x.element == "f64");
        let c64l = local.iter().find(|x| x.element == "c64");
        let extra = |a: f64, b: f64| sig4((a - b).max(0.0));
        Chosen {
            rule: RULE,
            intra,
            inter,
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

    fn spec(latency: f64, bandwidth: f64) -> LinkSpec {
        LinkSpec { latency, bandwidth }
    }

    /// `x` to four significant digits (the measurements hold no more).
    fn sig4(x: f64) -> f64 {
        format!("{x:.3e}").parse().unwrap_or(x)
    }

    fn write_config(a: &CalibrateArgs, map: &RankMap, c: &Chosen) -> Result<(), String> {
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
        let inter = c
            .inter
            .map(|(latency, bandwidth)| InterConfig::Uniform { latency, bandwidth });
        let place = placement_path(&a.out);
        let place_name = place
            .file_name()
            .map(std::path::PathBuf::from)
            .ok_or_else(|| format!("{}: not a file name", a.out.display()))?;
        let cfg = CostConfig {
            description: format!(
                "calibrated by copr calibrate: {} ranks on {} node{}{}",
                map.node.len(),
                map.nodes(),
                if map.nodes() == 1 { "" } else { "s" },
                if map.emulated { " (emulated)" } else { "" }
            ),
            topology_file: None,
            terms: vec![
                Term::LatencyBandwidth { weight: 1.0 },
                Term::Transform {
                    weight: 1.0,
                    scale: c.transform_scale,
                    transpose: c.transform_transpose,
                    conjugate: c.transform_conjugate,
                    remote_only: false,
                },
            ],
            topology: Some(TopologyConfig {
                intra,
                inter,
                placement: Some(PlacementConfig::File { file: place_name }),
                rank_matrix: None,
            }),
        };
        let text = cfg
            .to_string(Format::from_path(&a.out))
            .map_err(|e| e.to_string())?;
        let header = format!(
            "# Written by `copr calibrate` (see {}).\n# {}\n",
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

    fn write(path: &Path, text: &str) -> Result<(), String> {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    }
}
