//! The validation set of `copr calibrate --validate`, planned on one rank without
//! MPI: the layouts of every case, its packages, the σs (none, volume-optimal,
//! cost-optimal), the engine's plans and the model's predictions, under a deadline.
//!
//! Planning a case costs time that grows with the number of ranks p (the layouts,
//! the packages, the cost-optimal σ and the predictions cover every rank), so it is
//! cut by the deadline like any measurement: a case starts only if the time it is
//! estimated to take — the planning time of the cases already planned, scaled by the
//! size ratio ([`estimate`]) — fits before the deadline, and what does not fit is
//! skipped and reported. The only case started without an estimate is the first one
//! (the smallest size's first layout pair), and only before the deadline; so planning
//! ends by the deadline plus the time of one case of the smallest size (measured at
//! p = 1024 and 4096 by `benches/calibrate_plan.rs`), as long as the estimates hold.
//!
//! Without MPI (the unit tests, the bench driver) a stand-in rank plans what one rank
//! of a large machine would ([`offline`]).

use copr::engine::{Relabeling, ReshufflePlan, Transform};
use copr::gain::{PackageInput, Packages, TransformKind};
use copr::lap::Perm;
use copr::layout::{BlockCyclic, BlockCyclicSpec, Grid, Layout, Op, Order};
use copr::transport::Transport;
use copr::Result;
use copr_cost_models::CostModel;
use serde::Serialize;

/// Elements per rank of the three sizes: 256 KiB, 1 MiB and 4 MiB of f64.
pub const SIZES: [usize; 3] = [1 << 15, 1 << 17, 1 << 19];
/// Bytes of an element (f64).
pub const ELEM: usize = std::mem::size_of::<f64>();

/// The layout pairs of the set, each built at every size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Row slabs, each to the next rank of its node.
    SwapInside,
    /// Row slabs, each to the same-position rank of the next node.
    SwapAcross,
    /// Block-cyclic 32×32 row-major grid → 128×128 column-major grid.
    BlockCyclic,
    /// Block-cyclic 64×64 → the grid shifted by one process, transposed.
    ShiftedTransposed,
    /// Row slabs split 40 / 30 / 30 %: 40 % stays, 30 % goes to the next node's rank
    /// and 30 % to that rank's node neighbour. The volume-optimal σ keeps the 40 %
    /// (and sends 60 % across nodes); the σ that moves each target to the next node
    /// keeps 30 % and sends 40 % across nodes.
    Split,
}

impl Shape {
    /// Every layout pair, in report order.
    pub const ALL: [Shape; 5] = [
        Shape::SwapInside,
        Shape::SwapAcross,
        Shape::BlockCyclic,
        Shape::ShiftedTransposed,
        Shape::Split,
    ];

    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Shape::SwapInside => "slabs, swap inside nodes",
            Shape::SwapAcross => "slabs, swap across nodes",
            Shape::BlockCyclic => "bc32 row -> bc128 col",
            Shape::ShiftedTransposed => "bc64 -> shifted, transposed",
            Shape::Split => "slabs split 40/30/30",
        }
    }

    /// The operation the case applies.
    pub fn op(self) -> Op {
        match self {
            Shape::ShiftedTransposed => Op::Transpose,
            _ => Op::Identity,
        }
    }
}

/// Which σ a run used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sigma {
    /// No relabeling.
    None,
    /// The engine's volume-optimal σ.
    Volume,
    /// The σ minimising the calibrated model.
    Cost,
}

impl Sigma {
    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Sigma::None => "none",
            Sigma::Volume => "volume",
            Sigma::Cost => "cost",
        }
    }
}

/// Where ranks are: the node of every rank.
struct Nodes<'a>(&'a [usize]);

impl Nodes<'_> {
    fn members(&self) -> Vec<Vec<usize>> {
        let k = self.0.iter().max().map_or(0, |m| m + 1);
        let mut out = vec![Vec::new(); k];
        for (r, &n) in self.0.iter().enumerate() {
            out[n].push(r);
        }
        out
    }

    /// Each rank → the next rank of its node (`None` if every node has one rank).
    fn inside(&self) -> Option<Perm> {
        let mut fwd: Vec<usize> = (0..self.0.len()).collect();
        for m in self.members() {
            for (i, &r) in m.iter().enumerate() {
                fwd[r] = m[(i + 1) % m.len()];
            }
        }
        let moved = fwd.iter().enumerate().any(|(r, &s)| r != s);
        moved.then(|| Perm::from_forward(fwd).ok()).flatten()
    }

    /// The i-th rank of node x → the i-th rank of node x + 1 (`None` with one node or
    /// nodes of different sizes).
    fn across(&self) -> Option<Perm> {
        let m = self.members();
        if m.len() < 2 || m.iter().any(|v| v.len() != m[0].len()) {
            return None;
        }
        let mut fwd = vec![0; self.0.len()];
        for (x, v) in m.iter().enumerate() {
            for (i, &r) in v.iter().enumerate() {
                fwd[r] = m[(x + 1) % m.len()][i];
            }
        }
        Perm::from_forward(fwd).ok()
    }
}

fn bc(n: usize, b: usize, pr: usize, pc: usize, order: Order, shift: usize) -> Result<Layout> {
    let mut s = BlockCyclicSpec::new(n, n, b, b, pr, pc);
    s.grid_order = order;
    s.rsrc = shift % pr;
    s.csrc = shift % pc;
    Ok(BlockCyclic::new(s)?.into())
}

/// Row slabs of `m / p` rows of an m × n matrix cut into pieces at `cuts`
/// (fractions of a slab), piece `k` of slab `s` owned by `owner(k, s)`.
fn pieces(
    (m, n): (usize, usize),
    p: usize,
    cuts: &[f64],
    owner: impl Fn(usize, usize) -> usize,
) -> Result<Layout> {
    let h = m / p;
    let mut splits = vec![0];
    let mut owners = Vec::new();
    for s in 0..p {
        for (k, &c) in cuts.iter().enumerate() {
            splits.push(s * h + (c * h as f64).round() as usize);
            owners.push(owner(k, s));
        }
    }
    Ok(Grid::from_parts(splits, vec![0, n], owners, Some(p), Vec::new())?.into())
}

/// The matrix of `shape`'s cases of about `size` elements per rank on `p` ranks,
/// rows × columns, so that a rank holds about `size` elements whatever p is:
/// * the block-cyclic pairs: square, n = ⌊√(size · p)⌋;
/// * the row slabs: h · p rows of ⌊size / h⌋ columns, h (rows per slab) a multiple
///   of 10 (the 40/30/30 cuts fall on rows) near √(size / p), at least 10.
pub fn matrix_shape(shape: Shape, size: usize, p: usize) -> (usize, usize) {
    match shape {
        Shape::BlockCyclic | Shape::ShiftedTransposed => {
            let n = ((size * p) as f64).sqrt() as usize;
            (n, n)
        }
        Shape::SwapInside | Shape::SwapAcross | Shape::Split => {
            let h = (((size as f64 / p as f64).sqrt() as usize) / 10).max(1) * 10;
            (h * p, (size / h).max(1))
        }
    }
}

/// The layouts of `shape` for an m × n matrix ([`matrix_shape`]), or `None` if the
/// machine has no such case (one node, nodes of one rank, unequal nodes).
fn layouts(
    shape: Shape,
    (m, n): (usize, usize),
    nodes: &Nodes<'_>,
) -> Result<Option<(Layout, Layout)>> {
    let p = nodes.0.len();
    let pr = (1..=p)
        .rev()
        .find(|d| p % d == 0 && d * d <= p)
        .unwrap_or(1);
    let pc = p / pr;
    let slabs = || pieces((m, n), p, &[1.0], |_, s| s);
    Ok(match shape {
        Shape::SwapInside => match nodes.inside() {
            Some(x) => Some((slabs()?, slabs()?.relabeled(&x)?)),
            None => None,
        },
        Shape::SwapAcross => match nodes.across() {
            Some(x) => Some((slabs()?, slabs()?.relabeled(&x)?)),
            None => None,
        },
        Shape::BlockCyclic => Some((
            bc(n, 32, pr, pc, Order::RowMajor, 0)?,
            bc(n, 128, pr, pc, Order::ColMajor, 0)?,
        )),
        Shape::ShiftedTransposed => Some((
            bc(n, 64, pr, pc, Order::RowMajor, 0)?,
            bc(n, 64, pr, pc, Order::RowMajor, 1)?,
        )),
        Shape::Split => match (nodes.across(), nodes.inside()) {
            (Some(x), Some(i)) => {
                let cuts = [0.4, 0.7, 1.0];
                let source = pieces((m, n), p, &cuts, |_, s| s)?;
                // piece 0 stays; piece 1 to the slot whose next-node rank is s;
                // piece 2 to the slot whose next-node rank's neighbour is s
                let target = pieces((m, n), p, &cuts, |k, s| match k {
                    0 => s,
                    1 => x.apply_inv(s),
                    _ => x.apply_inv(i.apply_inv(s)),
                })?;
                Some((source, target))
            }
            _ => None,
        },
    })
}

/// The busiest rank's cost: max over ranks of the larger of the summed costs of the
/// packages it sends and of those it receives (σ applied to the targets).
fn bottleneck(model: &dyn CostModel, packages: &Packages, sigma: &Perm) -> f64 {
    let p = packages.ranks();
    let (mut out, mut inc) = (vec![0.0; p], vec![0.0; p]);
    for (s, t, pkg) in packages.iter() {
        let to = sigma.apply(t);
        let c = model.cost(s, to, pkg);
        out[s] += c;
        inc[to] += c;
    }
    out.iter()
        .zip(&inc)
        .map(|(a, b)| a.max(*b))
        .fold(0.0, f64::max)
}

/// Fractions of all elements that stay on their rank and that cross nodes under σ.
fn fractions(packages: &Packages, sigma: &Perm, node: &[usize], total: f64) -> (f64, f64) {
    let (mut local, mut cross) = (0u64, 0u64);
    for (s, t, _) in packages.iter() {
        let v = packages.volumes().get(s, t);
        let to = sigma.apply(t);
        if to == s {
            local += v;
        } else if node[to] != node[s] {
            cross += v;
        }
    }
    (local as f64 / total, cross as f64 / total)
}

/// A run planned: its engine plan, σ and what the model predicts for it, everything
/// the timing and the report need (the packages themselves are not kept).
pub struct Planned {
    /// The case's name in the report.
    pub case: &'static str,
    /// `None` for the engine-round case (a tiny matrix).
    pub shape: Option<Shape>,
    /// Elements per rank (n² / p).
    pub elements_per_rank: usize,
    /// Index of its size in [`SIZES`] (0 for the engine-round case).
    pub size: usize,
    /// The matrix side n (the matrix is n × n, or as its shape says).
    pub matrix: usize,
    /// The relabeling the engine plan applies.
    pub sigma: Perm,
    /// Which relabelings were timed for this case.
    pub labels: Vec<Sigma>,
    /// The engine plan of this rank.
    pub plan: ReshufflePlan,
    /// The busiest rank's packages under the model, seconds.
    pub packages_seconds: f64,
    /// The largest target share of any rank, elements.
    pub largest_target: usize,
    /// Elements that stay on their rank, as a fraction of all.
    pub local_fraction: f64,
    /// Elements crossing nodes, as a fraction of all.
    pub cross_node_fraction: f64,
}

/// Seconds since the start of the run, as the planner reads them.
pub trait Clock {
    /// Seconds since the start.
    fn now(&mut self) -> f64;
}

/// The wall clock from `start`.
pub struct Wall(pub std::time::Instant);

impl Clock for Wall {
    fn now(&mut self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// One case's (or run's) time, for the estimates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    /// Its layout pair (`None`: the engine-round case).
    pub shape: Option<Shape>,
    /// Index into [`SIZES`].
    pub size: usize,
    /// Seconds it took.
    pub seconds: f64,
}

/// The time expected of a case of layout pair `shape` and size `SIZES[size]` after
/// the cases `done`: the largest time of the same layout pair at this size or a
/// smaller one if there is one, else the largest of all; each scaled by the ratio of
/// elements per rank when the new case is larger (its work grows at most in
/// proportion to the elements, its p-dependent part not at all). 0 before any case
/// (the first case is started on the deadline alone).
pub fn estimate(done: &[Spent], shape: Option<Shape>, size: usize) -> f64 {
    let scaled = |d: &Spent| {
        let ratio = SIZES[size] as f64 / SIZES[d.size] as f64;
        d.seconds * ratio.max(1.0)
    };
    let same = done
        .iter()
        .filter(|d| d.shape == shape && d.size <= size)
        .map(scaled)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    same.unwrap_or_else(|| done.iter().map(scaled).fold(0.0, f64::max))
}

/// What [`plan_cases`] built and left out.
pub struct Plans {
    /// The engine-round case first, then the runs of every case planned.
    pub runs: Vec<Planned>,
    /// Cases skipped for the deadline.
    pub skipped: Vec<String>,
    /// Planning time of every case planned (seconds by the clock), in order, with its
    /// name and elements per rank.
    pub spent: Vec<(&'static str, usize, f64)>,
}

/// Plans the validation set on this rank of `t` (collective through `t`: every rank
/// calls it alike) before `until` seconds on `clock`.
///
/// The engine-round case (a tiny matrix) is always planned; then, in order of size,
/// each layout pair if `agree(start)` says so, where `start` is this rank's verdict
/// that the clock is before `until` and the case's [`estimate`] fits before it (under
/// MPI `agree` passes rank 0's verdict to every rank, so all plan the same cases).
/// A case planned is planned whole (its runs with every σ); a case skipped is named
/// in [`Plans::skipped`].
pub fn plan_cases(
    t: &mut dyn Transport,
    model: &dyn CostModel,
    node: &[usize],
    clock: &mut dyn Clock,
    until: f64,
    agree: &mut dyn FnMut(bool) -> bool,
) -> Result<Plans> {
    let p = t.size();
    let nodes = Nodes(node);
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    let mut spent = Vec::new();
    let mut done: Vec<Spent> = Vec::new();
    // the engine's cost per call: a tiny matrix, one element to the next rank
    let tiny = bc(2 * p, 1, p, 1, Order::RowMajor, 0)?;
    let tiny_t = bc(2 * p, 1, p, 1, Order::RowMajor, 1)?;
    let tr = Transform::new(tiny, tiny_t.clone(), Op::Identity).with_relabeling(Relabeling::Off);
    let plan = ReshufflePlan::new(t, vec![tr])?;
    runs.push(Planned {
        case: "engine round (tiny matrix)",
        shape: None,
        elements_per_rank: 4 * p,
        size: 0,
        matrix: 2 * p,
        sigma: plan.sigma(0).clone(),
        labels: vec![Sigma::None],
        largest_target: largest_target(&plan, &tiny_t),
        plan,
        packages_seconds: 0.0,
        local_fraction: 0.0,
        cross_node_fraction: 0.0,
    });
    for (k, &size) in SIZES.iter().enumerate() {
        for shape in Shape::ALL {
            let (m, n) = matrix_shape(shape, size, p);
            let t0 = clock.now();
            let fits = t0 < until && t0 + estimate(&done, Some(shape), k) <= until;
            if !agree(fits) {
                skipped.push(format!(
                    "{} at {} elements per rank: out of the validation's planning time",
                    shape.name(),
                    m * n / p
                ));
                continue;
            }
            let Some((source, target)) = layouts(shape, (m, n), &nodes)? else {
                continue;
            };
            runs.extend(plan_case(t, model, node, shape, k, source, target)?);
            let seconds = clock.now() - t0;
            done.push(Spent {
                shape: Some(shape),
                size: k,
                seconds,
            });
            spent.push((shape.name(), m * n / p, seconds));
        }
    }
    Ok(Plans {
        runs,
        skipped,
        spent,
    })
}

fn largest_target(plan: &ReshufflePlan, target: &Layout) -> usize {
    let sigma = plan.sigma(0);
    (0..sigma.len())
        .map(|r| target.local_len(sigma.apply_inv(r)))
        .max()
        .unwrap_or(0)
}

/// The runs of one case: without relabeling, with the volume σ and with the cost σ,
/// one run for σs that agree.
fn plan_case(
    t: &mut dyn Transport,
    model: &dyn CostModel,
    node: &[usize],
    shape: Shape,
    size: usize,
    source: Layout,
    target: Layout,
) -> Result<Vec<Planned>> {
    let p = t.size();
    let input = PackageInput {
        source: &source,
        target: &target,
        transform: TransformKind {
            op: shape.op(),
            scale: false,
        },
        element_size: ELEM,
    };
    let packages = Packages::compute(&input)?;
    let cost_sigma = copr::relabel::Relabel::cost(model, &packages)
        .solve()?
        .sigma;
    let total = (target.rows() * target.cols()) as f64;
    let mut mine: Vec<Planned> = Vec::new();
    for which in [Sigma::None, Sigma::Volume, Sigma::Cost] {
        let relabeling = match which {
            Sigma::None => Relabeling::Off,
            Sigma::Volume => Relabeling::Optimal,
            Sigma::Cost => Relabeling::Given(cost_sigma.clone()),
        };
        if which == Sigma::Cost {
            if let Some(r) = mine.iter_mut().find(|r| r.sigma == cost_sigma) {
                r.labels.push(which);
                continue;
            }
        }
        let tr =
            Transform::new(source.clone(), target.clone(), shape.op()).with_relabeling(relabeling);
        let plan = ReshufflePlan::new(t, vec![tr])?;
        let sigma = plan.sigma(0).clone();
        if let Some(r) = mine.iter_mut().find(|r| r.sigma == sigma) {
            r.labels.push(which);
            continue;
        }
        let (local_fraction, cross_node_fraction) = fractions(&packages, &sigma, node, total);
        mine.push(Planned {
            case: shape.name(),
            shape: Some(shape),
            elements_per_rank: target.rows() * target.cols() / p,
            size,
            matrix: target.rows(),
            packages_seconds: bottleneck(model, &packages, &sigma),
            largest_target: largest_target(&plan, &target),
            sigma,
            labels: vec![which],
            plan,
            local_fraction,
            cross_node_fraction,
        });
    }
    Ok(mine)
}

/// Planning without MPI: a stand-in for one rank of a large machine, and the cost
/// model `copr calibrate` would write for a machine of emulated nodes. Used by the
/// unit tests and by `benches/calibrate_plan.rs`, which times the planning at
/// p = 1024 and 4096.
#[cfg_attr(not(test), allow(dead_code))]
pub mod offline {
    use std::path::Path;

    use copr_cost_models::CostSetup;

    #[cfg_attr(not(test), allow(unused_imports))]
    pub use copr::transport::StandIn;

    /// The node of every rank: `nodes` groups of consecutive ranks, as
    /// `--emulate-nodes` makes them.
    pub fn emulated_nodes(ranks: usize, nodes: usize) -> Vec<usize> {
        (0..ranks).map(|r| r * nodes / ranks).collect()
    }

    /// Writes into `dir` the files `copr calibrate` writes for `ranks` ranks on
    /// `nodes` emulated nodes (a machine file: a uniform node inside, a node × node
    /// matrix between nodes up to 64 nodes, else one inter-node link, and transform
    /// costs; the placement file), with
    /// links of 1 µs and 8 GB/s inside a node and 2 µs and 1–2 GB/s between nodes,
    /// and loads them as `copr plan --cost` would.
    ///
    /// # Errors
    /// A file that cannot be written, and the loader's errors.
    pub fn emulated_model(
        dir: &Path,
        ranks: usize,
        nodes: usize,
    ) -> Result<CostSetup, crate::calibrate::CalibrateError> {
        let node = emulated_nodes(ranks, nodes);
        let names: Vec<String> = (0..nodes).map(|x| format!("emulated-{x}")).collect();
        let mut placement = String::from("# rank node [pu]\n");
        for (r, &x) in node.iter().enumerate() {
            placement.push_str(&format!("{r} {}\n", names[x]));
        }
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text)
                .map_err(|source| crate::calibrate::CalibrateError::Write { path, source })
        };
        write("machine.placement", &placement)?;
        let inter = if nodes <= 64 {
            // node pairs a different bandwidth each, as measured pairs would have
            let bw = |x: usize, y: usize| 1e9 * (1.0 + ((x * 7 + y * 3) % 5) as f64 / 4.0);
            let m = copr_topology::MatrixFile {
                names,
                latency: (0..nodes)
                    .map(|x| {
                        (0..nodes)
                            .map(|y| if x == y { 0.0 } else { 2e-6 })
                            .collect()
                    })
                    .collect(),
                inv_bandwidth: (0..nodes)
                    .map(|x| {
                        (0..nodes)
                            .map(|y| {
                                if x == y {
                                    0.0
                                } else {
                                    1.0 / bw(x.min(y), x.max(y))
                                }
                            })
                            .collect()
                    })
                    .collect(),
            };
            let text = copr_topology::files::to_string(&m, copr_topology::files::Format::Toml)?;
            write("machine.nodes.toml", &text)?;
            "kind = \"matrix\"\nfile = \"machine.nodes.toml\"\n".to_string()
        } else {
            "kind = \"uniform\"\nlatency = 2e-6\nbandwidth = 1e9\n".to_string()
        };
        let config = format!(
            "# emulated machine for the planning tests\n\n\
             [intra]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = 8e9\n\n\
             [inter]\n{inter}\n\
             [placement]\nrule = \"file\"\nfile = \"machine.placement\"\n\n\
             [transform]\nscale = 1e-11\ntranspose = 1e-10\nconjugate = 0.0\n"
        );
        write("machine.toml", &config)?;
        Ok(copr_cost_models::load_setup(
            &dir.join("machine.toml"),
            Some(ranks),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::offline::{emulated_model, emulated_nodes, StandIn};
    use super::*;

    /// A clock that moves `tick` seconds every time it is read: planning a case
    /// "takes" exactly one tick, whatever the machine.
    struct Ticking {
        now: f64,
        tick: f64,
    }

    impl Clock for Ticking {
        fn now(&mut self) -> f64 {
            let t = self.now;
            self.now += self.tick;
            t
        }
    }

    fn temp(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("copr-cases-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temporary directory");
        d
    }

    fn plan(p: usize, nodes: usize, until: f64, tick: f64, tag: &str) -> Plans {
        let dir = temp(tag);
        let setup = emulated_model(&dir, p, nodes).expect("model");
        let node = emulated_nodes(p, nodes);
        let mut t = StandIn { rank: 1, size: p };
        let mut clock = Ticking { now: 0.0, tick };
        let plans = plan_cases(
            &mut t,
            setup.model.as_ref(),
            &node,
            &mut clock,
            until,
            &mut |go| go,
        )
        .expect("plans");
        let _ = std::fs::remove_dir_all(&dir);
        plans
    }

    /// The estimate by hand: the same layout pair's time if known, else the largest
    /// earlier time, scaled up by 4 per size step and never down.
    #[test]
    fn estimates_scale_with_the_size() {
        let (a, b) = (Some(Shape::SwapInside), Some(Shape::BlockCyclic));
        assert_eq!(estimate(&[], a, 2), 0.0);
        let spent = |shape, size, seconds| Spent {
            shape,
            size,
            seconds,
        };
        let done = [spent(a, 0, 0.5), spent(b, 0, 3.0), spent(a, 1, 1.5)];
        // the same pair: a at size 0 (0.5, ×4 at size 1) and at size 1 (1.5)
        assert_eq!(estimate(&done, a, 1), 2.0);
        assert_eq!(estimate(&done, a, 2), 8.0);
        assert_eq!(estimate(&done, b, 1), 12.0);
        // a size below every time of its own pair: the others, never scaled down
        assert_eq!(estimate(&done[1..], a, 0), 3.0);
        // an unknown pair: the largest of all, scaled
        assert_eq!(estimate(&done, Some(Shape::Split), 0), 3.0);
        assert_eq!(estimate(&done, Some(Shape::Split), 2), 48.0);
    }

    /// With time for everything every case of the machine is planned: 5 layout pairs
    /// × 3 sizes on 4 nodes of 2 ranks, nothing skipped.
    #[test]
    fn a_generous_deadline_plans_every_case() {
        let plans = plan(8, 4, 1e9, 1.0, "all");
        assert!(plans.skipped.is_empty(), "{:?}", plans.skipped);
        assert_eq!(plans.spent.len(), 15);
        let cases: std::collections::BTreeSet<(&str, usize)> = plans
            .runs
            .iter()
            .skip(1)
            .map(|r| (r.case, r.elements_per_rank))
            .collect();
        assert_eq!(cases.len(), 15);
        // the swap inside nodes: all remote without σ, all local with the volume σ
        let (m, n) = matrix_shape(Shape::SwapInside, SIZES[0], 8);
        let smallest = m * n / 8;
        let swap: Vec<&Planned> = plans
            .runs
            .iter()
            .filter(|r| r.shape == Some(Shape::SwapInside) && r.elements_per_rank == smallest)
            .collect();
        assert_eq!(swap.len(), 2);
        assert_eq!(swap[0].labels, vec![Sigma::None]);
        assert_eq!(
            (swap[0].local_fraction, swap[0].cross_node_fraction),
            (0.0, 0.0)
        );
        assert!(swap[1].labels.contains(&Sigma::Volume));
        assert_eq!(swap[1].local_fraction, 1.0);
        assert!(swap[1].packages_seconds < swap[0].packages_seconds);
    }

    /// Under a deadline the planner skips rather than overruns: with every case
    /// taking one tick (the clock is read twice per case), a deadline of `d` ticks
    /// lets it start only cases whose estimate fits, names every other one, and the
    /// clock never passes the deadline by more than the first case.
    #[test]
    fn a_tight_deadline_skips_cases_instead_of_overrunning() {
        for until in [0.0, 0.5, 1.0, 3.0, 6.0, 20.0] {
            let plans = plan(8, 4, until, 1.0, &format!("tight{until}"));
            let planned = plans.spent.len();
            assert_eq!(planned + plans.skipped.len(), 15, "until {until}");
            // every case planned but the first had its estimate fit before the
            // deadline; each takes one tick, so the last ends by the deadline
            let end = 2.0 * planned as f64 - 1.0;
            if planned > 1 {
                assert!(end <= until, "until {until}: {planned} cases end at {end}");
            }
            if until == 0.0 {
                assert_eq!(planned, 0, "nothing starts after the deadline");
                assert_eq!(plans.runs.len(), 1, "the engine-round case only");
            } else {
                assert!(planned >= 1, "until {until}: the first case starts");
            }
            for s in &plans.skipped {
                assert!(s.contains("out of the validation's planning time"), "{s}");
            }
        }
        // a deadline of 20 ticks: the 5 smallest cases (t = 0..9), then the estimate
        // of a 1 MiB case is 4 ticks, so those at t = 10, 12, 14, 16 (ending by 20)
        let plans = plan(8, 4, 20.0, 1.0, "count");
        assert_eq!(plans.spent.len(), 5 + 4);
    }
}
