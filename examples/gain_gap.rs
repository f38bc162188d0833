//! The sparse candidate relabeling against the dense exact optimum on larger instances
//! (benches/RESULTS.md, "sparse candidate gains"): block-cyclic 32 → 128 (column-major
//! target grid) and 3 → 8 layouts on a √p × √p grid, under the cost configs of
//! `data/cost/` with as many ranks per node as `p` needs, and under sums with the
//! volume and the locality penalty. Prints a header row, then one line per instance:
//!
//! `p layout config model W(G) dense-saving sparse-saving measured-gap certified-gap
//! rounds priced t_dense t_sparse`
//!
//! (gaps relative to the optimal cost after relabeling; `rounds` and `priced`: the
//! column generation's pricing rounds and the pairs it added). Usage:
//! `cargo run --release --example gain_gap -- 1024 4096`; the environment variables
//! `GAP_LAYOUTS` (`32`, `3`), `GAP_CONFIGS` (config names) and `GAP_MODELS` (`config`,
//! `sum`), comma-separated, choose a subset; `GAP_NODES` overrides the configs' node
//! counts; `GAP_SKIP_DENSE` skips the dense solve (the measured gap prints NaN, the
//! certified one is relative to σ's cost); `GAP_TOL` (a fraction, e.g. `1e-3`) stops
//! the column generation once the certificate proves that gap
//! (`Relabel::tolerance`; unset: to exactness, `Relabel::refine(Refine::EXACT)`).

use std::path::Path;
use std::time::Instant;

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Order};
use copr::relabel::{Method, Relabel};
use copr_cost_models::{CostConfig, CostModel, LocalityPenalty, LocallyFreeVolume, Scaled, Sum};
use copr_topology::files::Format;

/// Config name, and how many nodes its machine has for `ranks_per_node` placement.
const CONFIGS: [(&str, usize); 5] = [
    ("torus-3d", 128),
    ("torus-3d-spread", 100),
    ("fat-tree", 16),
    ("dragonfly", 40),
    ("two-islands", 8),
];

fn layout(n: usize, b: usize, side: usize, order: Order) -> Layout {
    let mut s = BlockCyclicSpec::new(n, n, b, b, side, side);
    s.grid_order = order;
    BlockCyclic::new(s).unwrap().into()
}

/// Whether `name` is in the comma-separated list of environment variable `var` (or the
/// variable is unset).
fn chosen(var: &str, name: &str) -> bool {
    std::env::var(var).map_or(true, |v| v.split(',').any(|w| w == name))
}

const USAGE: &str = "usage: gain_gap P [P ...]: rank counts, each a square (e.g. 1024 4096)";

/// The column names of the printed table.
const HEADER: &str = "p | layout | config (ranks/node) | model | W(G) no relabeling | dense saving | sparse saving | measured gap | certified gap | rounds | priced | t_dense s | t_sparse s";

/// The rank counts from the arguments: each a positive square.
fn sizes(args: impl Iterator<Item = String>) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for a in args {
        let p: usize = a
            .parse()
            .map_err(|_| format!("`{a}` is not a rank count; {USAGE}"))?;
        let side = (p as f64).sqrt().round() as usize;
        if p == 0 || side * side != p {
            return Err(format!(
                "p = {p} is not a positive square (the layouts use a √p × √p grid); {USAGE}"
            ));
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err(USAGE.to_string());
    }
    Ok(out)
}

/// An environment variable parsed as `T`, or exit 2 naming it.
fn env_or<T: std::str::FromStr>(var: &str, default: T) -> T {
    match std::env::var(var) {
        Err(_) => default,
        Ok(v) => v.parse().unwrap_or_else(|_| {
            eprintln!("gain_gap: {var}={v} is not a number");
            std::process::exit(2)
        }),
    }
}

fn main() {
    let sizes = sizes(std::env::args().skip(1)).unwrap_or_else(|e| {
        eprintln!("gain_gap: {e}");
        std::process::exit(2)
    });
    let gap_tol: Option<f64> = std::env::var("GAP_TOL")
        .ok()
        .map(|_| env_or("GAP_TOL", 0.0));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/cost");
    println!("{HEADER}");
    for p in sizes {
        let side = (p as f64).sqrt().round() as usize;
        let pairs = [
            ("bc 32->128", 96 * side, 32, 128),
            ("bc 3->8", 24 * side, 3, 8),
        ];
        for (lname, n, b1, b2) in pairs {
            if !chosen("GAP_LAYOUTS", &b1.to_string()) {
                continue;
            }
            let src = layout(n, b1, side, Order::RowMajor);
            let dst = layout(n, b2, side, Order::ColMajor);
            let input = PackageInput {
                source: &src,
                target: &dst,
                transform: TransformKind::default(),
                element_size: 8,
            };
            let pk = Packages::compute(&input).unwrap();
            for (cname, nodes) in CONFIGS {
                if !chosen("GAP_CONFIGS", cname) {
                    continue;
                }
                let text = std::fs::read_to_string(dir.join(format!("{cname}.toml"))).unwrap();
                let nodes = env_or("GAP_NODES", nodes);
                let rpn = p.div_ceil(nodes).max(1);
                let text: String = text
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("ranks"))
                    .map(|l| {
                        if l.trim_start().starts_with("rule") {
                            format!("{l}\nranks_per_node = {rpn}")
                        } else {
                            l.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let cfg = CostConfig::from_str(&text, Format::Toml).unwrap();
                let setup = match cfg.build(&dir, Some(p)) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("{cname}: {e}");
                        continue;
                    }
                };
                let config_model = setup.model;
                let models: Vec<(&str, Box<dyn CostModel>)> = vec![
                    ("config", config_model),
                    (
                        "config+volume+locality",
                        Box::new(Sum::<Box<dyn CostModel>>::new(vec![
                            cfg.build(&dir, Some(p)).unwrap().model,
                            Box::new(Scaled::new(1e-10, LocallyFreeVolume).unwrap()),
                            Box::new(LocalityPenalty::default()),
                        ])),
                    ),
                ];
                for (mname, model) in models {
                    let short = if mname == "config" { "config" } else { "sum" };
                    if !chosen("GAP_MODELS", short) {
                        continue;
                    }
                    let w0 = pk.total_cost(model.as_ref(), None);
                    let t = Instant::now();
                    // GAP_SKIP_DENSE: the sparse side alone (the gap columns print NaN)
                    let dense = if std::env::var_os("GAP_SKIP_DENSE").is_some() {
                        None
                    } else {
                        Some(
                            Relabel::cost(model.as_ref(), &pk)
                                .method(Method::Dense)
                                .solve()
                                .unwrap()
                                .sigma,
                        )
                    };
                    let t_dense = t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    let s = match gap_tol {
                        Some(t) => Relabel::cost(model.as_ref(), &pk)
                            .method(Method::Sparse)
                            .refine(gain::Refine::within(t))
                            .solve(),
                        None => Relabel::cost(model.as_ref(), &pk)
                            .method(Method::Sparse)
                            .refine(gain::Refine::EXACT)
                            .solve(),
                    }
                    .unwrap();
                    let t_sparse = t.elapsed().as_secs_f64();
                    let dsave =
                        dense.map_or(f64::NAN, |d| w0 - pk.total_cost(model.as_ref(), Some(&d)));
                    // without the dense optimum, the certificate relative to σ's own cost
                    let after = if dsave.is_nan() {
                        (w0 - s.saving).max(1e-300)
                    } else {
                        (w0 - dsave).max(1e-300)
                    };
                    println!(
                        "{p} | {lname} | {cname} ({rpn}/node) | {mname} | {w0:.4e} | {dsave:.4e} | {:.4e} | {:.2e} | {:.2e} | {} | {} | {t_dense:.2} | {t_sparse:.3}",
                        s.saving,
                        if dsave.is_nan() {
                            f64::NAN
                        } else {
                            ((dsave - s.saving) / after).max(0.0)
                        },
                        s.gap() / after,
                        s.rounds,
                        s.priced,
                    );
                }
            }
        }
        // the volume model: the sparse path is the exact solver on the volumes
        let _ = LocallyFreeVolume;
    }
}
