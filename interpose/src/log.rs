//! What the interposer says: its log (`COPR_INTERPOSE_LOG`), the one-line warning
//! when it keeps the MPI library's order, and the conclusion of a planned mapping.

use std::fmt::Write as _;
use std::io::Write as _;

use copr_mapping::mpi::{MachineSource, MappingReport, Planned};
use copr_mapping::Perm;
use mpi::topology::{Communicator, SimpleCommunicator};

/// Largest grid whose new order the log prints in full.
const LOG_ORDER_UP_TO: usize = 64;

/// The environment variable that turns the log on.
const ENV_LOG: &str = "COPR_INTERPOSE_LOG";

/// Where the log goes, if anywhere.
enum Log {
    Off,
    Stderr,
    File(String),
}

fn log_target() -> Log {
    match std::env::var(ENV_LOG) {
        Err(_) => Log::Off,
        Ok(v) if v.is_empty() || v == "0" => Log::Off,
        Ok(v) if v == "1" || v == "stderr" => Log::Stderr,
        Ok(v) => Log::File(v),
    }
}

/// Writes `lines` (each prefixed) where [`log_target`] says; a file that cannot be
/// written is reported once on standard error, never an error of the call.
pub(crate) fn write_log(lines: &[String]) {
    let mut text = String::new();
    for l in lines {
        let _ = writeln!(text, "copr-interpose: {l}");
    }
    match log_target() {
        Log::Off => {}
        Log::Stderr => eprint!("{text}"),
        Log::File(path) => {
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(text.as_bytes()));
            if let Err(e) = written {
                eprintln!("copr-interpose: cannot write the log {path}: {e}");
            }
        }
    }
}

/// Says on standard error, in one line, that reordering fell back to the MPI
/// library's order because of `why` (an unusable environment, a failed plan),
/// whatever `COPR_INTERPOSE_LOG` says: a user who asked for a reordering learns that
/// it did not happen. Call it on the first process of the communicator only. When the
/// log goes to standard error, its lines already say so.
pub(crate) fn warn_fallback(head: &str, why: &str) {
    if !matches!(log_target(), Log::Stderr) {
        eprintln!(
            "copr-interpose: {head}: kept the MPI library's order: {why} ({ENV_LOG}=1 says more)"
        );
    }
}

fn mb(bytes: u128) -> String {
    format!("{:.3} MB", bytes as f64 / 1e6)
}

fn off_node_percent(m: &copr_mapping::Metrics) -> f64 {
    if m.total_bytes == 0 {
        0.0
    } else {
        100.0 * (m.total_bytes - m.intra_node_bytes) as f64 / m.total_bytes as f64
    }
}

/// The lines describing a report.
pub(crate) fn report_lines(r: &MappingReport, unit: &str) -> Vec<String> {
    let mut lines = vec![format!("  machine: {}", r.machine)];
    lines.extend(r.inside.iter().map(|i| format!("  inside nodes: {i}")));
    lines.extend(r.placement.iter().map(|p| format!("  placement: {p}")));
    lines.extend([
        format!(
            "  predicted hop-bytes {} -> {}, off-node traffic {:.1} % -> {:.1} % ({unit})",
            mb(r.before.hop_bytes),
            mb(r.best.hop_bytes),
            off_node_percent(&r.before),
            off_node_percent(&r.best)
        ),
        format!("  best mapping: {}", r.origin),
    ]);
    lines
}

/// Logs (on rank 0) what [`plan_mapping`](copr_mapping::mpi::plan_mapping) decided under `head`, and returns the
/// mapping (task → rank of `comm`) when it reorders; `unit` says what a message weighs.
pub(crate) fn conclude(
    comm: &SimpleCommunicator,
    head: String,
    source: &MachineSource,
    planned: copr::Result<Planned>,
    unit: &str,
) -> Option<Perm> {
    let root = comm.rank() == 0;
    match planned {
        Err(e) => {
            if root {
                warn_fallback(&head, &e.to_string());
                write_log(&[
                    head,
                    format!("  machine: {}", source.describe()),
                    format!("  kept the MPI library's order: {e}"),
                ]);
            }
            None
        }
        Ok(planned) => {
            if root {
                let mut lines = vec![head];
                if let Some(r) = &planned.report {
                    lines.extend(report_lines(r, unit));
                    lines[1].push_str(&format!(" ({})", source.describe()));
                }
                lines.push(if planned.reordered {
                    order_line(&planned.ranks)
                } else {
                    "  kept the MPI library's order: copr's mapping is no better".into()
                });
                write_log(&lines);
            }
            planned.reordered.then_some(planned.ranks)
        }
    }
}

/// `reordered: new rank of ranks 0..p: …` (up to [`LOG_ORDER_UP_TO`] ranks).
pub(crate) fn order_line(ranks: &Perm) -> String {
    let inv = ranks.inverse();
    if inv.len() <= LOG_ORDER_UP_TO {
        let v: Vec<String> = inv.iter().map(|r| r.to_string()).collect();
        format!(
            "  reordered: new rank of ranks 0..{}: {}",
            inv.len(),
            v.join(" ")
        )
    } else {
        let moved = inv.iter().enumerate().filter(|(i, &r)| *i != r).count();
        format!("  reordered: {moved} of {} ranks moved", inv.len())
    }
}
