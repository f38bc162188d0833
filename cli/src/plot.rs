//! SVG charts: the sweep's reduction curve and volume-matrix heatmaps.

use std::path::Path;

use plotters::drawing::DrawingAreaErrorKind;
use plotters::prelude::*;
use plotters_backend::DrawingErrorKind;

use copr::sweep::SweepRow;
use copr::volume::Volumes;
use copr::{Error, Result};

mod mapping;
pub(crate) use mapping::mapping_svg;

/// What went wrong in plotters' words, without its wrapping ("backend error: Drawing
/// backend error: …"): the I/O error itself when there is one.
fn detail<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    match e {
        DrawingAreaErrorKind::BackendError(DrawingErrorKind::DrawingError(inner)) => {
            inner.to_string()
        }
        DrawingAreaErrorKind::BackendError(DrawingErrorKind::FontError(inner)) => {
            format!("font: {inner}")
        }
        other => other.to_string(),
    }
}

fn plot_err(path: &Path) -> impl Fn(String) -> Error + '_ {
    move |detail| Error::Io {
        path: path.to_owned(),
        source: std::io::Error::other(format!("cannot draw: {detail}")),
    }
}

/// Draws reduction % against block size (log axis): the exact optimum and the greedy.
///
/// # Errors
/// [`Error::Io`] naming the file if it cannot be drawn or written.
pub(crate) fn sweep_chart(rows: &[SweepRow], path: &Path) -> Result<()> {
    let err = plot_err(path);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(detail(e)))?;
    let bmax = rows.iter().map(|r| r.block).max().unwrap_or(1).max(2) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Remote-volume reduction by process relabeling",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((1f64..bmax * 1.2).log_scale(), 0f64..105f64)
        .map_err(|e| err(detail(e)))?;
    chart
        .configure_mesh()
        .x_desc("source block size b")
        .y_desc("reduction of remote volume (%)")
        .draw()
        .map_err(|e| err(detail(e)))?;
    let exact: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.block as f64, r.reduction_percent))
        .collect();
    let greedy: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.block as f64, r.greedy_reduction_percent))
        .collect();
    chart
        .draw_series(LineSeries::new(exact.clone(), BLUE.stroke_width(2)))
        .map_err(|e| err(detail(e)))?
        .label("exact (copr)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .draw_series(exact.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))
        .map_err(|e| err(detail(e)))?;
    chart
        .draw_series(LineSeries::new(greedy.clone(), RED.stroke_width(2)))
        .map_err(|e| err(detail(e)))?
        .label("greedy swaps (COSTA)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(
            greedy
                .iter()
                .map(|&p| TriangleMarker::new(p, 4, RED.filled())),
        )
        .map_err(|e| err(detail(e)))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| err(detail(e)))?;
    root.present().map_err(|e| err(detail(e)))
}

/// Largest heatmap side in cells; larger matrices are binned: cell `k` holds the ranks
/// `r` with `r·cells / p = k` (rounded down).
const MAX_CELLS: usize = 128;

/// Cells per side for `p` ranks.
fn cells_for(p: usize) -> usize {
    p.clamp(1, MAX_CELLS)
}

/// First rank of bin `k` of `cells` bins over `p` ranks (`k = cells` gives `p`).
fn bin_start(k: usize, cells: usize, p: usize) -> usize {
    (k * p).div_ceil(cells)
}

/// Where a heatmap's `cells × cells` bins come from: one rank per cell, or how many
/// ranks each cell gathers (`"binned: 128 × 128 cells of 800 ranks each"`).
fn binning_note(p: usize, cells: usize, how: &str) -> Option<String> {
    (cells < p).then(|| {
        let (lo, hi) = (p / cells, p.div_ceil(cells));
        let each = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}–{hi}")
        };
        format!(
            "binned: {cells} × {cells} cells of {each} ranks each, {how} over the ranks of a cell"
        )
    })
}

fn tiles(v: &Volumes) -> (usize, Vec<f64>) {
    let p = v.ranks().max(1);
    let cells = cells_for(p);
    let mut t = vec![0.0; cells * cells];
    for (s, d, x) in v.matrix().iter() {
        t[(s * cells / p) * cells + d * cells / p] += x as f64;
    }
    (cells, t)
}

/// Axis titles, caption, colours and colour scale of one heatmap panel.
struct Panel<'a> {
    caption: String,
    x_desc: &'a str,
    y_desc: &'a str,
    /// Colour of a shade `0 ..= 1`.
    color: fn(f64) -> RGBColor,
    /// Shade of a value relative to the colour scale's maximum, and back.
    shade: fn(f64) -> f64,
    value: fn(f64) -> f64,
    /// Unit of the cell values, for the colour scale.
    unit: &'a str,
}

/// Draws `cells × cells` bin values over `p` ranks (row-major; row = y) into `area`
/// with a colour scale from 0 to `vmax` below it; zero cells are left blank. The axes
/// count ranks, so a bin of several ranks spans its rank range.
#[allow(clippy::too_many_arguments)]
fn heat_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: usize,
    cells: usize,
    tiles: &[f64],
    vmax: f64,
    panel: &Panel<'_>,
    err: &dyn Fn(String) -> Error,
) -> Result<()> {
    let (map_area, scale_area) = area.split_vertically(area.dim_in_pixel().1 as i32 - 60);
    let mut chart = ChartBuilder::on(&map_area)
        .caption(&panel.caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55)
        // rank k's cell spans [k - 0.5, k + 0.5], so that a tick sits on its centre
        .build_cartesian_2d(-0.5f64..p as f64 - 0.5, -0.5f64..p as f64 - 0.5)
        .map_err(|e| err(detail(e)))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(panel.x_desc)
        .y_desc(panel.y_desc)
        .x_label_formatter(&|x| format!("{}", x.round() as u64))
        .y_label_formatter(&|y| format!("{}", y.round() as u64))
        .draw()
        .map_err(|e| err(detail(e)))?;
    let edge = |k: usize| bin_start(k, cells, p) as f64 - 0.5;
    chart
        .draw_series(
            tiles
                .iter()
                .enumerate()
                .filter(|(_, &x)| x > 0.0)
                .map(|(k, &x)| {
                    let (y, x0) = (k / cells, k % cells);
                    Rectangle::new(
                        [(edge(x0), edge(y)), (edge(x0 + 1), edge(y + 1))],
                        (panel.color)((panel.shade)(x / vmax)).filled(),
                    )
                }),
        )
        .map_err(|e| err(detail(e)))?;
    colour_scale(&scale_area, vmax, panel, err)
}

/// A horizontal colour bar from 0 to `vmax` with values at its ends and middle, and
/// the unit.
fn colour_scale<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    vmax: f64,
    panel: &Panel<'_>,
    err: &dyn Fn(String) -> Error,
) -> Result<()> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| err(detail(x));
    let (x0, y0, steps) = (65i32, 8i32, 200i32);
    for i in 0..steps {
        let shade = f64::from(i) / f64::from(steps - 1);
        area.draw(&Rectangle::new(
            [(x0 + 2 * i, y0), (x0 + 2 * i + 2, y0 + 12)],
            (panel.color)(shade).filled(),
        ))
        .map_err(e)?;
    }
    area.draw(&Rectangle::new(
        [(x0, y0), (x0 + 2 * steps, y0 + 12)],
        BLACK.stroke_width(1),
    ))
    .map_err(e)?;
    let label = |shade: f64| {
        let v = vmax * (panel.value)(shade);
        if v.fract() == 0.0 && v < 1e9 {
            format!("{v}")
        } else if (1e-2..1e5).contains(&v) {
            format!("{v:.3}")
        } else {
            format!("{v:.3e}")
        }
    };
    for (shade, x) in [(0.0, x0), (0.5, x0 + steps), (1.0, x0 + 2 * steps)] {
        area.draw(&Text::new(
            if shade == 0.0 {
                "0".to_string()
            } else {
                label(shade)
            },
            (x - 10, y0 + 16),
            ("sans-serif", 12),
        ))
        .map_err(e)?;
    }
    area.draw(&Text::new(
        format!("colour scale: {}", panel.unit),
        (x0, y0 + 32),
        ("sans-serif", 13),
    ))
    .map_err(e)?;
    Ok(())
}

/// White to blue, on a square-root scale so that small volumes stay visible.
fn volume_color(shade: f64) -> RGBColor {
    RGBColor(
        (255.0 * (1.0 - shade)) as u8,
        (255.0 * (1.0 - 0.8 * shade)) as u8,
        255,
    )
}

/// Draws two heatmaps side by side: the volume matrix before and after relabeling
/// (rows = source rank, columns = target rank; darker = more elements; the diagonal is
/// local traffic), each captioned with its share of remote elements. Above 128 ranks
/// the cells are bins of several ranks, summed, and the picture says so.
///
/// # Errors
/// [`Error::Io`] naming the file if it cannot be drawn or written.
pub(crate) fn volume_heatmaps(before: &Volumes, after: &Volumes, path: &Path) -> Result<()> {
    let err = plot_err(path);
    let root = SVGBackend::new(path, (1100, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(detail(e)))?;
    let p = before.ranks().max(1);
    let (cells, tb) = tiles(before);
    let (_, ta) = tiles(after);
    let vmax = tb.iter().chain(&ta).copied().fold(0.0, f64::max).max(1.0);
    let (top, body) = root.split_vertically(26);
    if let Some(note) = binning_note(p, cells, "summed") {
        top.draw(&Text::new(note, (10, 6), ("sans-serif", 15)))
            .map_err(|e| err(detail(e)))?;
    }
    let (left, right) = body.split_horizontally(550);
    for (area, t, v, title, x_desc) in [
        (
            left,
            tb,
            before,
            "before relabeling",
            "target rank (process that receives, no relabeling)",
        ),
        (
            right,
            ta,
            after,
            "after relabeling",
            "process that receives (target label t runs on process sigma(t))",
        ),
    ] {
        let remote = if v.total() > 0 {
            100.0 * v.remote() as f64 / v.total() as f64
        } else {
            0.0
        };
        let panel = Panel {
            caption: format!("V[source][target] {title}: {remote:.2} % remote"),
            x_desc,
            y_desc: "source rank (process that sends)",
            color: volume_color,
            shade: f64::sqrt,
            value: |s| s * s,
            unit: if cells < p {
                "elements per cell"
            } else {
                "elements"
            },
        };
        heat_panel(&area, p, cells, &t, vmax, &panel, &err)?;
    }
    root.present().map_err(|e| err(detail(e)))
}

/// Draws the rank × rank cost `L(i, j) + B(i, j)·bytes` of a machine as a heatmap
/// (above 128 ranks averaged into 128 × 128 bins of ranks, as the picture says).
///
/// # Errors
/// [`Error::Io`] naming the file if it cannot be drawn or written.
pub(crate) fn cost_heatmap(
    machine: &copr_topology::Machine,
    bytes: u64,
    path: &Path,
) -> Result<()> {
    let err = plot_err(path);
    let p = machine.ranks().max(1);
    let (cells, t, sampled) = cost_tiles(machine, bytes);
    let vmax = t.iter().copied().fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let root = SVGBackend::new(path, (640, 680)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(detail(e)))?;
    let (top, body) = root.split_vertically(26);
    let how = if sampled {
        format!("the mean of {SAMPLES_PER_CELL} rank pairs sampled")
    } else {
        "averaged".to_string()
    };
    if let Some(note) = binning_note(p, cells, &how) {
        top.draw(&Text::new(note, (10, 6), ("sans-serif", 13)))
            .map_err(|e| err(detail(e)))?;
    }
    let panel = Panel {
        caption: format!("time of one {bytes} B message: L(i, j) + B(i, j)·bytes"),
        x_desc: "to rank",
        y_desc: "from rank",
        color: |v| RGBColor(255, (255.0 * (1.0 - v)) as u8, (255.0 * (1.0 - v)) as u8),
        shade: |v| v,
        value: |s| s,
        unit: "seconds",
    };
    heat_panel(&body, p, cells, &t, vmax, &panel, &err)?;
    root.present().map_err(|e| err(detail(e)))
}

/// Node pairs [`cost_tiles`] visits at most; beyond, each cell is a sample.
const MAX_NODE_PAIRS: usize = 1 << 26;
/// Rank pairs per cell in a sampled heatmap.
const SAMPLES_PER_CELL: usize = 256;

/// The mean cost `L(i, j) + B(i, j)·bytes` (0 for `i = j`) over the rank pairs of each
/// of the `cells × cells` bins, row-major, and whether the means are over samples.
///
/// # Complexity
/// `O(Σ_node r_node² + nodes² · bins per node²)` link lookups: between two nodes every
/// rank pair costs the same, so node pairs are visited, not rank pairs (`O(p²)` for an
/// explicit rank × rank matrix). Above [`MAX_NODE_PAIRS`] node pairs (10⁵ nodes of one
/// rank: 10¹⁰), each cell is the mean of [`SAMPLES_PER_CELL`] rank pairs spread evenly
/// over it instead (`O(cells² · samples)`), and the chart says so.
fn cost_tiles(machine: &copr_topology::Machine, bytes: u64) -> (usize, Vec<f64>, bool) {
    let p = machine.ranks().max(1);
    let cells = cells_for(p);
    let nodes = machine.placement().num_nodes();
    if machine.rank_matrix().is_none() && nodes.saturating_mul(nodes) > MAX_NODE_PAIRS {
        return (cells, sampled_cost_tiles(machine, bytes, cells), true);
    }
    let bin = |r: usize| r * cells / p;
    let mut t = vec![0.0; cells * cells];
    let mut n = vec![0u64; cells * cells];
    let cost = |i: usize, j: usize| {
        if i == j {
            0.0
        } else {
            machine.link(i, j).cost(bytes)
        }
    };
    if machine.rank_matrix().is_some() {
        for i in 0..machine.ranks() {
            for j in 0..machine.ranks() {
                let k = bin(i) * cells + bin(j);
                t[k] += cost(i, j);
                n[k] += 1;
            }
        }
    } else {
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); machine.placement().num_nodes()];
        for i in 0..machine.ranks() {
            members[machine.node_of(i)].push(i);
        }
        members.retain(|m| !m.is_empty());
        // each node's ranks as (bin, how many)
        let bins: Vec<Vec<(usize, u64)>> = members
            .iter()
            .map(|m| {
                let mut v: Vec<(usize, u64)> = Vec::new();
                for &i in m {
                    match v.iter_mut().find(|e| e.0 == bin(i)) {
                        Some(e) => e.1 += 1,
                        None => v.push((bin(i), 1)),
                    }
                }
                v
            })
            .collect();
        for m in &members {
            for &i in m {
                for &j in m {
                    let k = bin(i) * cells + bin(j);
                    t[k] += cost(i, j);
                    n[k] += 1;
                }
            }
        }
        for (a, ma) in members.iter().enumerate() {
            for (b, mb) in members.iter().enumerate() {
                if a == b {
                    continue;
                }
                let c = cost(ma[0], mb[0]);
                for &(ba, ca) in &bins[a] {
                    for &(bb, cb) in &bins[b] {
                        let k = ba * cells + bb;
                        t[k] += c * (ca * cb) as f64;
                        n[k] += ca * cb;
                    }
                }
            }
        }
    }
    for (x, c) in t.iter_mut().zip(&n) {
        *x /= (*c).max(1) as f64;
    }
    (cells, t, false)
}

/// [`cost_tiles`] from samples: in each cell, the rank pairs of a `√s × √s` grid spread
/// evenly over its rows and columns (`s` = [`SAMPLES_PER_CELL`], fewer when the cell has
/// fewer pairs).
fn sampled_cost_tiles(machine: &copr_topology::Machine, bytes: u64, cells: usize) -> Vec<f64> {
    let p = machine.ranks();
    let side = SAMPLES_PER_CELL.isqrt();
    // up to `side` ranks spread evenly over bin k
    let picks = |k: usize| -> Vec<usize> {
        let (lo, hi) = (bin_start(k, cells, p), bin_start(k + 1, cells, p));
        let m = (hi - lo).min(side);
        (0..m)
            .map(|s| lo + (2 * s + 1) * (hi - lo) / (2 * m))
            .collect()
    };
    let ranks: Vec<Vec<usize>> = (0..cells).map(picks).collect();
    let mut t = vec![0.0; cells * cells];
    for (a, ra) in ranks.iter().enumerate() {
        for (b, rb) in ranks.iter().enumerate() {
            let mut sum = 0.0;
            for &i in ra {
                for &j in rb {
                    if i != j {
                        sum += machine.link(i, j).cost(bytes);
                    }
                }
            }
            t[a * cells + b] = sum / (ra.len() * rb.len()).max(1) as f64;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank pair, one at a time.
    fn pairwise(machine: &copr_topology::Machine, bytes: u64) -> Vec<f64> {
        let p = machine.ranks();
        let cells = cells_for(p);
        let (mut t, mut n) = (vec![0.0; cells * cells], vec![0.0; cells * cells]);
        for i in 0..p {
            for j in 0..p {
                let k = (i * cells / p) * cells + j * cells / p;
                t[k] += if i == j {
                    0.0
                } else {
                    machine.cost(i, j, bytes)
                };
                n[k] += 1.0;
            }
        }
        t.iter().zip(&n).map(|(x, c)| x / c).collect()
    }

    #[test]
    fn cost_tiles_over_node_pairs_equal_the_pairwise_means() {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../data"));
        for (file, ranks) in [
            ("topology/torus-xe6.toml", 200),  // bins of 1 rank, a partial node
            ("topology/torus-xe6.toml", 1000), // 1000 ranks in 128 bins: bins straddle nodes
            ("cost/dragonfly.toml", 40),
            ("cost/calibrated.json", 4), // an explicit rank matrix
        ] {
            let path = dir.join(file);
            let m = if file.starts_with("cost") {
                copr_cost_models::load_setup(&path, Some(ranks))
                    .unwrap()
                    .machine
                    .unwrap()
            } else {
                std::sync::Arc::new(copr_topology::load_machine(&path, Some(ranks)).unwrap())
            };
            let (cells, got, sampled) = cost_tiles(&m, 1 << 20);
            assert!(!sampled);
            let want = pairwise(&m, 1 << 20);
            assert_eq!(cells * cells, want.len());
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-12 * w.abs(),
                    "{file} bin {k}: {g} vs {w}"
                );
            }
        }
    }

    /// A torus of one rank per node (`nodes` ranks, 1 hop = 1 µs more latency).
    fn torus_of(nodes: usize) -> copr_topology::Machine {
        let dir = std::env::temp_dir().join(format!("copr-plot-{}-{nodes}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("torus.toml");
        std::fs::write(
            &path,
            "[intra]\nkind = \"uniform\"\nlatency = 1e-7\nbandwidth = 1e10\n\
             [inter]\nkind = \"torus\"\ndims = [20, 25, 20]\nbase_latency = 1e-6\n\
             hop_latency = 1e-6\nlink_bandwidth = [5e9, 6e9, 7e9]\ninjection_bandwidth = 8e9\n\
             [placement]\nrule = \"packed\"\nranks_per_node = 1\n",
        )
        .unwrap();
        let m = copr_topology::load_machine(&path, Some(nodes)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        m
    }

    #[test]
    fn sampled_tiles_with_every_pair_sampled_equal_the_pairwise_means() {
        // 1 500 ranks in 128 bins of at most 12 ranks: a 16 × 16 sample takes them all
        let m = torus_of(1500);
        let want = pairwise(&m, 4096);
        let got = sampled_cost_tiles(&m, 4096, cells_for(1500));
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-12 * w.abs(), "bin {k}: {g} vs {w}");
        }
    }

    #[test]
    fn many_nodes_are_sampled_and_said_so() {
        // 9 000 nodes: 8.1·10⁷ node pairs, above the limit
        let m = torus_of(9000);
        let (cells, t, sampled) = cost_tiles(&m, 4096);
        assert!(sampled);
        assert_eq!(t.len(), cells * cells);
        // off the diagonal every sampled pair is between nodes: at least one hop
        // (2 µs) and the bandwidth term, at most the torus's diameter
        let lo = 2e-6 + 4096.0 / 8e9;
        let hi = 1e-6 + 1e-6 * (10 + 12 + 10) as f64 + 4096.0 / 5e9;
        for a in 0..cells {
            for b in (0..cells).filter(|&b| b != a) {
                let v = t[a * cells + b];
                assert!(
                    v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12),
                    "{a},{b}: {v}"
                );
            }
        }
    }
}
