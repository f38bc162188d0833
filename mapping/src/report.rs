//! Every strategy side by side: what `copr map` prints.

use std::time::Duration;

use serde::Serialize;

use super::candidates::{Options, Scored};
use super::machine::{LinkLoadModel, MapMachine};
use super::metrics::{evaluate, Metrics};
use super::optimise::optimise_before;
use super::pattern::Pattern;
use super::strategy::{baseline_until, check_sizes, Strategy};
use crate::errors::MapError;
use copr::error::Result;
use copr::lap::Perm;

/// One strategy's result.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Strategy name.
    pub strategy: String,
    /// Its metrics.
    pub metrics: Metrics,
    /// Time to compute the mapping, seconds (metrics excluded; for the optimiser,
    /// its own work after the baselines).
    pub seconds: f64,
    /// For the optimiser: the candidate it kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The mapping (`slot` of every task); not printed.
    #[serde(skip)]
    pub map: Perm,
}

/// The comparison of strategies.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Pattern description.
    pub pattern: String,
    /// Machine description.
    pub machine: String,
    /// Tasks.
    pub tasks: usize,
    /// How every row's busiest link is measured (`single-path` or `ecmp`).
    pub link_model: LinkLoadModel,
    /// One row per strategy that applies, in the order asked.
    pub rows: Vec<Row>,
    /// Strategies that do not apply to this pattern or machine.
    pub skipped: Vec<String>,
    /// Strategies not run because the time budget was spent before their turn.
    pub over_budget: Vec<String>,
    /// Whether the optimiser's mapping is no worse than every baseline on hop-bytes
    /// and on the largest link time (`None` when it did not run).
    pub optimiser_dominates: Option<bool>,
}

impl Comparison {
    /// The row of strategy `name`.
    pub fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.strategy == name)
    }
}

/// Runs `strategies` (the optimiser last, starting from every baseline that applies)
/// and scores each. `progress` is called with each strategy's name before it runs.
///
/// `opts.budget` bounds the whole comparison: every strategy runs until the one
/// deadline `start + budget` (a search — the CP2K heuristic's orders of directions —
/// stops at half of what is left with the best it has found, the optimiser stops at
/// what is left less twice the longest scoring of a baseline, kept for the metrics
/// after it, its work counts following from `opts.budget` itself, so that a run that
/// does not reach the deadline gives the same mapping on a busy machine as on an idle
/// one), and a strategy whose turn comes after the deadline is
/// not run but listed in [`Comparison::over_budget`] — except the first one that
/// applies, so that there is always a mapping. Beyond the deadline, the time is that
/// of one strategy's fixed work and the metrics (O(edges · hops) each).
///
/// # Errors
/// [`MapError`] if the pattern does not fill the machine or no strategy
/// applies.
pub fn compare(
    p: &Pattern,
    m: &MapMachine,
    strategies: &[Strategy],
    opts: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Comparison> {
    check_sizes(p, m)?;
    let want_opt = strategies.contains(&Strategy::Optimised);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    let mut starts = Vec::new();
    let mut over_budget = Vec::new();
    let mut base_time = Duration::ZERO;
    let mut eval_time = Duration::ZERO;
    let deadline = crate::clock::now() + opts.budget;
    let spent = |starts: &[Scored]| !starts.is_empty() && crate::clock::now() >= deadline;
    for &s in Strategy::BASELINES.iter() {
        if !strategies.contains(&s) && !want_opt {
            continue;
        }
        if spent(&starts) {
            if strategies.contains(&s) {
                over_budget.push(s.name().into());
            }
            continue;
        }
        progress(s.name());
        let t0 = crate::clock::now();
        // a search gets half of what is left, so that the strategies after it (the
        // optimiser above all) still have time
        let own = t0 + deadline.saturating_duration_since(t0) / 2;
        let map = baseline_until(s, p, m, Some(own))?;
        let dt = crate::clock::since(t0);
        base_time += dt;
        match map {
            Some(map) => {
                let t1 = crate::clock::now();
                // the hop-bytes bound depends on the pattern and machine only
                let metrics = match starts.first() {
                    Some(s) => {
                        let b = s.metrics.hop_bytes_bound;
                        super::metrics::evaluate_known(p, m, &map, b)
                    }
                    None => evaluate(p, m, &map),
                };
                eval_time = eval_time.max(crate::clock::since(t1));
                if strategies.contains(&s) {
                    rows.push(Row {
                        strategy: s.name().into(),
                        metrics: metrics.clone(),
                        seconds: dt.as_secs_f64(),
                        origin: None,
                        map: map.clone(),
                    });
                }
                starts.push(Scored {
                    origin: s.name().into(),
                    map,
                    metrics,
                });
            }
            None => {
                if strategies.contains(&s) {
                    skipped.push(s.name().into());
                }
            }
        }
    }
    let mut optimiser_dominates = None;
    // past the deadline the optimiser still runs (on no time: it keeps the best start)
    // when it is the only strategy asked for that applies, so that there is a mapping
    if want_opt && spent(&starts) && !rows.is_empty() {
        over_budget.push(Strategy::Optimised.name().into());
    } else if want_opt {
        progress(Strategy::Optimised.name());
        let t0 = crate::clock::now();
        // stopped at what is left, less the time of the metrics after it (about two
        // evaluations); its work counts follow from the whole budget, so that the
        // baselines' time (the machine's load) does not decide what it computes
        let until = deadline.checked_sub(eval_time * 2).unwrap_or(deadline);
        let o = optimise_before(p, m, &starts, opts, until)?;
        optimiser_dominates = Some(o.dominates_starts);
        rows.push(Row {
            strategy: Strategy::Optimised.name().into(),
            metrics: o.best.metrics,
            seconds: crate::clock::since(t0).as_secs_f64(),
            origin: Some(o.best.origin),
            map: o.best.map,
        });
    }
    // keep the order asked for
    rows.sort_by_key(|r| {
        strategies
            .iter()
            .position(|s| s.name() == r.strategy)
            .unwrap_or(usize::MAX)
    });
    if rows.is_empty() {
        return Err(MapError::NoStrategy { skipped }.into());
    }
    if p.grid_spec().is_none() {
        // a grid hidden in a graph has the grid's bound (looked for once, here)
        let hb = super::metrics::hop_bytes_bound(p, m);
        for r in rows.iter_mut().filter(|r| r.metrics.hop_bytes_bound < hb) {
            r.metrics.hop_bytes_bound = hb;
            r.metrics.max_link_bound = hb.div_ceil(m.num_links().max(1) as u128);
        }
    }
    Ok(Comparison {
        pattern: p.description().into(),
        machine: m.description().into(),
        tasks: p.tasks(),
        link_model: m.link_model(),
        rows,
        skipped,
        over_budget,
        optimiser_dominates,
    })
}

/// What the busiest-link columns measure, in words.
fn link_model_text(model: LinkLoadModel) -> &'static str {
    match model {
        LinkLoadModel::SinglePath => "single path (every message on one route)",
        LinkLoadModel::Ecmp => "ECMP (every message split evenly over its equal-cost paths)",
    }
}

/// The unit byte counts up to `max` are printed in: bytes below 1 kB, kB (10³ bytes)
/// below 1 MB, else MB (10⁶ bytes), so that no count above 0 prints as 0.000.
#[derive(Clone, Copy)]
struct ByteUnit {
    name: &'static str,
    /// Bytes per unit.
    per: u128,
    decimals: u32,
}

impl ByteUnit {
    fn for_max(max: u128) -> Self {
        let (name, per, decimals) = match max {
            0..1_000 => ("B", 1, 0),
            1_000..1_000_000 => ("kB", 1_000, 3),
            _ => ("MB", 1_000_000, 3),
        };
        Self {
            name,
            per,
            decimals,
        }
    }

    /// `x` in this unit, `width` wide, without the unit's name: exact decimal digits
    /// (integer arithmetic, the last digit rounded half up), whatever the count's size.
    fn num(self, x: u128, width: usize) -> String {
        let scale = 10u128.pow(self.decimals);
        // bytes per last printed digit (the units are 10³ and 10⁶ bytes, 3 decimals)
        let step = (self.per / scale).max(1);
        let digits = x / step + u128::from(x % step >= step.div_ceil(2) && step > 1);
        let text = if self.decimals == 0 {
            digits.to_string()
        } else {
            format!(
                "{}.{:0d$}",
                digits / scale,
                digits % scale,
                d = self.decimals as usize
            )
        };
        format!("{text:>width$}")
    }

    /// `x` in this unit, with its name.
    fn text(self, x: u128) -> String {
        format!("{} {}", self.num(x, 0), self.name)
    }
}

/// A byte count as `copr map` prints it: bytes below 1 kB, kB (10³ bytes) below 1 MB,
/// else MB (10⁶ bytes).
///
/// ```
/// use copr_mapping::bytes_text;
/// assert_eq!(bytes_text(120), "120 B");
/// assert_eq!(bytes_text(4500), "4.500 kB");
/// assert_eq!(bytes_text(4_194_304), "4.194 MB");
/// // exact near 2⁶⁴ (no rounding through f64)
/// assert_eq!(bytes_text(u64::MAX.into()), "18446744073709.552 MB");
/// assert_eq!(bytes_text(18_446_744_073_709_550_499), "18446744073709.550 MB");
/// ```
pub fn bytes_text(x: u128) -> String {
    ByteUnit::for_max(x).text(x)
}

/// A lower bound with its unit, or "no bound" where none above 0 is known.
fn bound_text(b: u128) -> String {
    if b == 0 {
        "no bound".into()
    } else {
        bytes_text(b)
    }
}

/// The comparison as a text table (bytes in MB = 10⁶ bytes, or kB or bytes where a
/// column's largest count is below 1 MB; times in µs).
pub fn table(c: &Comparison) -> String {
    let mut s = String::new();
    s.push_str(&format!("pattern  {}\nmachine  {}\n", c.pattern, c.machine));
    s.push_str(&format!("maxlink  {}\n", link_model_text(c.link_model)));
    let classes: Vec<String> = c
        .rows
        .first()
        .map(|r| r.metrics.classes.iter().map(|k| k.class.clone()).collect())
        .unwrap_or_default();
    let unit_of = |f: &dyn Fn(&Metrics) -> u128| {
        ByteUnit::for_max(c.rows.iter().map(|r| f(&r.metrics)).max().unwrap_or(0))
    };
    let hb_unit = unit_of(&|m| m.hop_bytes);
    let link_unit = unit_of(&|m| m.max_link_bytes);
    s.push_str(&format!(
        "{:<12} {:>12} {:>9} {:>6} {:>5} {:>10} {:>10} {:>10}",
        "strategy",
        format!("hop-bytes {}", hb_unit.name),
        "intra %",
        "dil",
        "dmax",
        format!("maxlink {}", link_unit.name),
        "maxlink µs",
        "time s"
    ));
    let per_class = classes.len() > 1 && classes.len() <= 8;
    // with a node tree: intra-node bytes between cores that share only the widest level
    let far = c
        .rows
        .first()
        .and_then(|r| r.metrics.intra_levels.last())
        .map(|l| l.level.clone());
    let far_bytes = |m: &Metrics| m.intra_levels.last().map_or(0, |l| l.bytes);
    let far_unit = unit_of(&far_bytes);
    if let Some(l) = &far {
        s.push_str(&format!(
            " {:>12}",
            format!("in-node:{l} {}", far_unit.name)
        ));
    }
    s.push('\n');
    for r in &c.rows {
        let m = &r.metrics;
        let intra = if m.total_bytes == 0 {
            0.0
        } else {
            100.0 * m.intra_node_bytes as f64 / m.total_bytes as f64
        };
        s.push_str(&format!(
            "{:<12} {} {:>9.2} {:>6.3} {:>5} {} {:>10.3} {:>10.4}",
            r.strategy,
            hb_unit.num(m.hop_bytes, 12),
            intra,
            m.dilation_mean,
            m.dilation_max,
            link_unit.num(m.max_link_bytes, 10),
            m.max_link_time * 1e6,
            r.seconds
        ));
        if far.is_some() {
            s.push_str(&format!(" {}", far_unit.num(far_bytes(m), 12)));
        }
        s.push('\n');
    }
    // the busiest link per direction (torus) or class: a table of its own, so that
    // no line is wider than 100 characters
    if per_class {
        let class_unit = unit_of(&|m| m.classes.iter().map(|k| k.max_bytes).max().unwrap_or(0));
        s.push_str(&format!("{:<12}", "busiest link"));
        for k in &classes {
            s.push_str(&format!(" {:>9}", format!("{k} {}", class_unit.name)));
        }
        s.push('\n');
        for r in &c.rows {
            s.push_str(&format!("{:<12}", r.strategy));
            for k in &r.metrics.classes {
                s.push_str(&format!(" {}", class_unit.num(k.max_bytes, 9)));
            }
            s.push('\n');
        }
    }
    if let Some(r) = c.rows.first() {
        s.push_str(&format!(
            "lower bounds: hop-bytes {}, max link {}\n",
            bound_text(r.metrics.hop_bytes_bound),
            bound_text(r.metrics.max_link_bound)
        ));
    }
    if !c.skipped.is_empty() {
        s.push_str(&format!("not applicable here: {}\n", c.skipped.join(", ")));
    }
    if !c.over_budget.is_empty() {
        s.push_str(&format!(
            "not run, the time budget was spent: {}\n",
            c.over_budget.join(", ")
        ));
    }
    if let Some(r) = c.row("optimised") {
        let origin = r.origin.as_deref().unwrap_or("?");
        let staged = origin.ends_with(super::program_choice::CHOSEN_BY_MODEL);
        let untimed = origin.ends_with(super::program_choice::NOT_TIMED);
        s.push_str(&format!(
            "optimised: kept {origin}\n  ({})\n",
            match c.optimiser_dominates {
                _ if staged => "the least time of the algorithm's program in the staged model",
                _ if untimed => "the first mapping the staged model times; none was timed in time",
                Some(true) => "no worse than every baseline on hop-bytes and max link time",
                _ => "no candidate beat every baseline on both measures: best combined score",
            }
        ));
    }
    s
}

/// Three lines comparing `chosen` with the launcher's default order (`packed`): hop-bytes
/// and the busiest link, before → after and the factor; `None` when either row is
/// missing.
pub fn against_default(c: &Comparison, chosen: &str) -> Option<String> {
    let (d, x) = (c.row("packed")?, c.row(chosen)?);
    let both = |a: u128, b: u128| {
        let u = ByteUnit::for_max(a.max(b));
        (u.num(a, 0), u.text(b))
    };
    let factor = |before: u128, after: u128| {
        if after == before {
            "the same".to_string()
        } else if after == 0 {
            "all of it removed".to_string()
        } else {
            let f = before as f64 / after as f64;
            if f >= 1.0 {
                format!("{f:.2}x less")
            } else {
                format!("{:.2}x more", 1.0 / f)
            }
        }
    };
    let (hd, hx) = (d.metrics.hop_bytes, x.metrics.hop_bytes);
    let (ld, lx) = (d.metrics.max_link_bytes, x.metrics.max_link_bytes);
    let ((hd_text, hx_text), (ld_text, lx_text)) = (both(hd, hx), both(ld, lx));
    Some(format!(
        "against the default (packed -> {chosen}):\n  hop-bytes     {hd_text} -> {hx_text} ({})\n  busiest link  {ld_text} -> {lx_text} ({})",
        factor(hd, hx),
        factor(ld, lx)
    ))
}
