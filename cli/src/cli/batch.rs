//! `copr plan` for a batch file (`[[transform]]` entries): remote volume per matrix and
//! in total without relabeling, with independent σ's and with the joint σ; the same for
//! a cost model with `--cost`.

use serde_json::{json, Value};

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::lap::Perm;
use copr::plan::{BatchPlan, BatchReport, BatchSpec, ConfigFormat};
use copr::Result;

use super::{sigma_text, word, Input, PlanArgs};

/// Whether the input is a batch: a top-level `transform` key. An input that does not
/// parse is a batch if a line opens a `[[transform]]` table (TOML) or it has a
/// `"transform"` key (JSON), so that the batch parser names what is wrong (an integer
/// out of range, say) rather than the single-plan parser calling `transform` unknown.
pub(super) fn is_batch(input: &Input) -> bool {
    let text = copr_topology::files::skip_bom(&input.text);
    match input.format {
        ConfigFormat::Toml => match toml::from_str::<toml::Table>(text) {
            Ok(t) => t.contains_key("transform"),
            Err(_) => text.lines().any(|l| {
                let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                l.starts_with("[[transform]]") || l.starts_with("transform=")
            }),
        },
        ConfigFormat::Json => match serde_json::from_str::<Value>(text) {
            Ok(v) => v.get("transform").is_some(),
            Err(_) => text.contains("\"transform\""),
        },
    }
}

/// The cost of every transform under a model: none, each transform's own cost-optimal
/// σ, the joint cost-optimal σ, and the joint volume-optimal σ.
struct BatchCost {
    model: String,
    /// `[none, independent, joint, volume joint]` per transform.
    rows: Vec<[f64; 4]>,
    joint_sigma: Perm,
    seconds: f64,
}

impl BatchCost {
    fn total(&self, column: usize) -> f64 {
        self.rows.iter().map(|r| r[column]).sum()
    }
}

fn batch_cost(
    a: &PlanArgs,
    spec: &BatchSpec,
    plan: &BatchPlan,
    report: &BatchReport,
) -> Result<Option<BatchCost>> {
    let Some(path) = &a.cost else {
        return Ok(None);
    };
    let setup = copr_cost_models::load_setup(path, Some(plan.ranks()))?;
    let model = setup.model.as_ref();
    let in_cost = |e: copr::Error| e.in_file(path);
    // copies of one transform share their packages (memory follows the distinct
    // transforms): `which[k]` is transform k's entry in `packages`
    let mut packages: Vec<Packages> = Vec::new();
    let mut firsts: Vec<usize> = Vec::new();
    let mut which = Vec::with_capacity(spec.transform.len());
    for (k, t) in spec.transform.iter().enumerate() {
        let same = |&f: &usize| {
            let u = &spec.transform[f];
            (&u.source, &u.target, u.op, u.alpha != 1.0, u.element_size)
                == (&t.source, &t.target, t.op, t.alpha != 1.0, t.element_size)
        };
        if let Some(d) = firsts.iter().position(same) {
            which.push(d);
            continue;
        }
        packages.push(Packages::compute(&PackageInput {
            source: &t.source,
            target: &t.target,
            transform: TransformKind {
                op: t.op,
                scale: t.alpha != 1.0,
            },
            element_size: t.element_size,
        })?);
        firsts.push(k);
        which.push(packages.len() - 1);
    }
    let t0 = std::time::Instant::now();
    let refs: Vec<&Packages> = which.iter().map(|&d| &packages[d]).collect();
    let joint = gain::joint_relabel(model, &refs, plan.ranks(), &[]).map_err(in_cost)?;
    let seconds = t0.elapsed().as_secs_f64();
    let volume_joint = Perm::from_forward(report.joint_sigma.clone())?;
    let distinct_rows = packages
        .iter()
        .map(|pk| {
            let own = gain::relabel(model, pk).map_err(in_cost)?;
            Ok([
                pk.total_cost(model, None),
                pk.total_cost(model, Some(&own)),
                pk.total_cost(model, Some(&joint)),
                pk.total_cost(model, Some(&volume_joint)),
            ])
        })
        .collect::<Result<Vec<[f64; 4]>>>()?;
    let rows = which.iter().map(|&d| distinct_rows[d]).collect();
    Ok(Some(BatchCost {
        model: model.describe(),
        rows,
        joint_sigma: joint,
        seconds,
    }))
}

/// `copr plan` on a batch file.
pub(super) fn run(a: &PlanArgs, input: &Input) -> Result<()> {
    if a.svg.is_some() {
        return Err(copr::Error::Argument(format!(
            "--svg draws the volumes of one transform, and {} is a batch of transforms",
            input.name.display()
        )));
    }
    let replaced = [
        ("--source", a.source.is_some()),
        ("--target", a.target.is_some()),
        ("--op", a.op.is_some()),
        ("--element-size", a.element_size.is_some()),
    ];
    if let Some((flag, _)) = replaced.iter().find(|f| f.1) {
        return Err(copr::Error::Argument(format!(
            "{flag} sets a single plan's field, and {} is a batch of [[transform]] entries: write it in each entry",
            input.name.display()
        )));
    }
    let mut spec: BatchSpec = input.parse()?;
    if let Some(s) = a.solver {
        spec.solver = s.into();
    }
    let plan = BatchPlan::from_spec(&spec).map_err(|e| e.in_file(&input.name))?;
    let report = plan.report(spec.solver);
    let cost = batch_cost(a, &spec, &plan, &report)?;
    if a.json {
        // written straight to the output, not through serde_json::Value (a number
        // there takes tens of bytes, and a batch on 2^24 ranks prints a σ of 2^24
        // entries per transform)
        #[derive(serde::Serialize)]
        struct BatchJson<'a> {
            #[serde(flatten)]
            report: &'a BatchReport,
            #[serde(skip_serializing_if = "Option::is_none")]
            cost: Option<Value>,
        }
        let j = BatchJson {
            report: &report,
            cost: cost.as_ref().map(|c| cost_json(&report, c)),
        };
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let written = serde_json::to_writer(&mut out, &j)
            .map_err(std::io::Error::from)
            .and_then(|()| std::io::Write::write_all(&mut out, b"\n"))
            .and_then(|()| std::io::Write::flush(&mut out));
        return match written {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
            Err(source) => Err(copr::Error::Io {
                path: "standard output".into(),
                source,
            }),
            Ok(()) => Ok(()),
        };
    }
    print_volumes(&report);
    if let Some(c) = &cost {
        let unit = a.cost.as_deref().map_or("", super::units::cost_unit);
        print_cost(&report, c, unit);
    }
    Ok(())
}

fn cost_json(report: &BatchReport, c: &BatchCost) -> Value {
    let (independent, joint) = (c.total(1), c.total(2));
    json!({
        "model": c.model,
        "none": c.total(0),
        "independent": independent,
        "joint": joint,
        "joint_with_volume_sigma": c.total(3),
        "price_of_consistency": joint - independent,
        "joint_sigma": c.joint_sigma.forward(),
        "solver_seconds": c.seconds,
        "transforms": report.transforms.iter().zip(&c.rows).map(|(t, r)| json!({
            "name": t.name,
            "none": r[0],
            "independent": r[1],
            "joint": r[2],
            "joint_with_volume_sigma": r[3],
        })).collect::<Vec<_>>(),
    })
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

fn print_volumes(r: &BatchReport) {
    println!("ranks            {}", r.ranks);
    println!(
        "remote elements  {:>16} {:>16} {:>16} {:>16}",
        "total", "none", "independent", "joint"
    );
    for t in &r.transforms {
        println!(
            "  {:<14} {:>16} {:>16} {:>16} {:>16}",
            format!("{} ({})", t.name, word(&t.op)),
            t.total_elements,
            t.remote_none,
            t.remote_independent,
            t.remote_joint
        );
    }
    println!(
        "  {:<14} {:>16} {:>16} {:>16} {:>16}",
        "all", r.total_elements, r.remote_none, r.remote_independent, r.remote_joint
    );
    println!(
        "reduction        independent {:.2} %, joint {:.2} % (of the remote volume without relabeling)",
        percent(r.remote_none.saturating_sub(r.remote_independent) as f64, r.remote_none as f64),
        percent(r.remote_none.saturating_sub(r.remote_joint) as f64, r.remote_none as f64),
    );
    println!(
        "price of consistency  {} elements: the joint sigma moves {}",
        r.price_of_consistency,
        if r.remote_independent > 0 {
            format!(
                "{:.2} % more than independent sigmas",
                percent(r.price_of_consistency as f64, r.remote_independent as f64)
            )
        } else {
            "them; independent sigmas move nothing".to_string()
        }
    );
    for t in &r.transforms {
        println!("sigma {:<10} {}", t.name, sigma_text(&t.sigma_independent));
    }
    println!("joint sigma      {}", sigma_text(&r.joint_sigma));
    println!(
        "solver           {} (independent), exact sparse (joint, {:.6} s)",
        word(&r.solver),
        r.joint_seconds
    );
}

fn print_cost(r: &BatchReport, c: &BatchCost, unit: &str) {
    println!("{}", super::wrapped("cost model       ", &c.model));
    println!("cost unit        {unit}");
    println!(
        "modelled cost    {:>16} {:>16} {:>16} {:>16}",
        "none", "independent", "joint", "volume joint"
    );
    for (t, row) in r.transforms.iter().zip(&c.rows) {
        println!(
            "  {:<14} {:>16.6e} {:>16.6e} {:>16.6e} {:>16.6e}",
            t.name, row[0], row[1], row[2], row[3]
        );
    }
    println!(
        "  {:<14} {:>16.6e} {:>16.6e} {:>16.6e} {:>16.6e}",
        "all",
        c.total(0),
        c.total(1),
        c.total(2),
        c.total(3)
    );
    let price = c.total(2) - c.total(1);
    println!(
        "price of consistency  {:.6e} {unit} ({:.2} % over independent sigmas)",
        price,
        percent(price, c.total(1))
    );
    println!("cost joint sigma {}", sigma_text(c.joint_sigma.forward()));
    println!("cost solver      {:.6} s", c.seconds);
}
