//! SVG charts: the sweep's reduction curve and volume-matrix heatmaps.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::sweep::SweepRow;
use crate::volume::Volumes;

fn plot_err(path: &Path) -> impl Fn(String) -> Error + '_ {
    move |detail| Error::Plot {
        path: path.to_owned(),
        detail,
    }
}

/// Draws reduction % against block size (log axis): the exact optimum and the greedy.
///
/// # Errors
/// [`Error::Plot`] if the file cannot be written.
pub fn sweep_chart(rows: &[SweepRow], path: &Path) -> Result<()> {
    let err = plot_err(path);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
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
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("source block size b")
        .y_desc("reduction of remote volume (%)")
        .draw()
        .map_err(|e| err(e.to_string()))?;
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
        .map_err(|e| err(e.to_string()))?
        .label("exact (copr)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .draw_series(exact.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(LineSeries::new(greedy.clone(), RED.stroke_width(2)))
        .map_err(|e| err(e.to_string()))?
        .label("greedy swaps (COSTA)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(
            greedy
                .iter()
                .map(|&p| TriangleMarker::new(p, 4, RED.filled())),
        )
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

/// Largest heatmap side in cells; larger matrices are summed into tiles.
const MAX_CELLS: usize = 128;

fn tiles(v: &Volumes) -> (usize, Vec<f64>) {
    let p = v.ranks().max(1);
    let cells = p.min(MAX_CELLS);
    let mut t = vec![0.0; cells * cells];
    for (s, d, x) in v.matrix().iter() {
        t[(s * cells / p) * cells + d * cells / p] += x as f64;
    }
    (cells, t)
}

/// Axis titles, caption and colour of one heatmap panel.
struct Panel<'a> {
    caption: String,
    x_desc: &'a str,
    y_desc: &'a str,
    /// Colour of a cell from its value relative to the panel's maximum (0 ..= 1).
    color: fn(f64) -> RGBColor,
}

/// Draws `cells × cells` tile values (row-major; row = y) into `area`, scaled by `vmax`;
/// zero tiles are left blank.
fn heat_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    cells: usize,
    tiles: &[f64],
    vmax: f64,
    panel: &Panel<'_>,
    err: &dyn Fn(String) -> Error,
) -> Result<()> {
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.caption, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d(0..cells, 0..cells)
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(panel.x_desc)
        .y_desc(panel.y_desc)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(
            tiles
                .iter()
                .enumerate()
                .filter(|(_, &x)| x > 0.0)
                .map(|(k, &x)| {
                    let (y, x0) = (k / cells, k % cells);
                    Rectangle::new([(x0, y), (x0 + 1, y + 1)], (panel.color)(x / vmax).filled())
                }),
        )
        .map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// Draws two heatmaps side by side: the volume matrix before and after relabeling
/// (rows = source rank, columns = target rank; darker = more elements; the diagonal is
/// local traffic).
///
/// # Errors
/// [`Error::Plot`] if the file cannot be written.
pub fn volume_heatmaps(before: &Volumes, after: &Volumes, path: &Path) -> Result<()> {
    let err = plot_err(path);
    let root = SVGBackend::new(path, (1100, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let (left, right) = root.split_horizontally(550);
    let (cells, tb) = tiles(before);
    let (_, ta) = tiles(after);
    let vmax = tb.iter().chain(&ta).copied().fold(0.0, f64::max).max(1.0);
    for (area, t, title) in [
        (left, tb, "before relabeling"),
        (right, ta, "after relabeling"),
    ] {
        let panel = Panel {
            caption: format!("V[source][target], {title}"),
            x_desc: "target rank",
            y_desc: "source rank",
            color: |v| {
                let shade = v.sqrt();
                RGBColor(
                    (255.0 * (1.0 - shade)) as u8,
                    (255.0 * (1.0 - 0.8 * shade)) as u8,
                    255,
                )
            },
        };
        heat_panel(&area, cells, &t, vmax, &panel, &err)?;
    }
    root.present().map_err(|e| err(e.to_string()))
}

/// Draws the rank × rank cost `L(i, j) + B(i, j)·bytes` of a machine as a heatmap
/// (averaged into at most 128 × 128 tiles).
///
/// # Errors
/// [`Error::Plot`] if the file cannot be written.
pub fn cost_heatmap(machine: &copr_topology::Machine, bytes: u64, path: &Path) -> Result<()> {
    let err = plot_err(path);
    let p = machine.ranks().max(1);
    let cells = p.min(MAX_CELLS);
    let mut t = vec![0.0; cells * cells];
    let mut n = vec![0u32; cells * cells];
    let mut row = vec![copr_topology::LinkCost::ZERO; machine.ranks()];
    for i in 0..machine.ranks() {
        machine.links_from(i, &mut row);
        for (j, l) in row.iter().enumerate() {
            let k = (i * cells / p) * cells + j * cells / p;
            t[k] += if i == j { 0.0 } else { l.cost(bytes) };
            n[k] += 1;
        }
    }
    for (x, c) in t.iter_mut().zip(&n) {
        *x /= f64::from((*c).max(1));
    }
    let vmax = t.iter().copied().fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let root = SVGBackend::new(path, (640, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let panel = Panel {
        caption: format!("cost of a {bytes} B message (max {vmax:.3e} s)"),
        x_desc: "to rank",
        y_desc: "from rank",
        color: |v| RGBColor(255, (255.0 * (1.0 - v)) as u8, (255.0 * (1.0 - v)) as u8),
    };
    heat_panel(&root, cells, &t, vmax, &panel, &err)?;
    root.present().map_err(|e| err(e.to_string()))
}
