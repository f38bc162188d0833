//! The picture of `copr map`, drawn in named steps: the title, one column per mapping
//! (its tasks coloured by node, its link loads), the common colour scale, and every
//! strategy against the bounds.

use std::path::Path;

use plotters::coord::Shift;
use plotters::drawing::DrawingAreaErrorKind;
use plotters::prelude::*;

use copr::Result;
use copr_mapping::{ecmp_link_loads, Comparison, LinkLoadModel, MapMachine, Pattern, Perm, Row};

use super::{detail, plot_err};

/// The drawing area of the picture.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// What a drawing step returns.
type Drawn = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;
/// The task at a cell of the task grid, if any.
type CellFn = Box<dyn Fn(usize, usize) -> Option<usize>>;

/// Width and height of the picture.
const SIZE: (i32, i32) = (1640, 860);
/// Width of one mapping's column.
const COLUMN_WIDTH: i32 = 520;
/// Side of the task grid's square, in pixels.
const TASK_SIDE: f64 = 400.0;
/// Top of the task grid.
const TASK_TOP: i32 = 66;

/// A left-aligned label at `(x, y)` (its top edge), `size` pixels high.
fn label(t: String, x: i32, y: i32, size: i32) -> Text<'static, (i32, i32), String> {
    Text::new(t, (x, y), ("sans-serif", size).into_font())
}

/// A distinct colour for node `k` (golden-angle hues, two lightness levels).
fn node_color(k: usize) -> RGBColor {
    let h = (k as f64 * 137.507_764) % 360.0;
    let l = if k % 2 == 0 { 0.62 } else { 0.45 };
    let c = (1.0 - (2.0 * l - 1.0f64).abs()) * 0.65;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let u = |v: f64| (255.0 * (v + m)).clamp(0.0, 255.0) as u8;
    RGBColor(u(r), u(g), u(b))
}

/// White (no load) to dark red (the largest load).
fn load_color(v: f64) -> RGBColor {
    let v = v.clamp(0.0, 1.0);
    RGBColor(
        (255.0 - 90.0 * v) as u8,
        (255.0 * (1.0 - v)) as u8,
        (255.0 * (1.0 - v)) as u8,
    )
}

/// Bytes on each link of `m` under `map`, counted as the machine's busiest link is
/// ([`MapMachine::link_model`]): split over the equal-cost paths where it routes ECMP
/// (rounded up to whole bytes, as the metric is), on one route per message otherwise.
fn link_loads(p: &Pattern, m: &MapMachine, map: &Perm) -> Vec<u128> {
    if m.link_model() == LinkLoadModel::Ecmp {
        if let Some(loads) = ecmp_link_loads(p, m, map) {
            return loads.iter().map(|&b| b.ceil() as u128).collect();
        }
    }
    let rpn = m.ranks_per_node();
    let mut load = vec![0u128; m.num_links()];
    for edge in p.edges() {
        let a = map.apply(edge.src as usize) / rpn;
        let b = map.apply(edge.dst as usize) / rpn;
        m.for_route(a, b, |l| load[l] += u128::from(edge.bytes));
    }
    load
}

/// The task grid the picture draws: the pattern's first two dimensions, or the tasks
/// in rows of about √n.
struct TaskGrid {
    rows: usize,
    cols: usize,
    task_at: CellFn,
}

impl TaskGrid {
    fn of(p: &Pattern) -> Self {
        match p.grid_spec() {
            Some(g) if g.dims.len() >= 2 => {
                let (rows, cols) = (g.dims[0], g.dims[1]);
                let g = g.clone();
                Self {
                    rows,
                    cols,
                    task_at: Box::new(move |i, j| {
                        let mut c = vec![0; g.dims.len()];
                        c[0] = i;
                        c[1] = j;
                        Some(g.task(&c))
                    }),
                }
            }
            _ => {
                let n = p.tasks();
                let c = (n as f64).sqrt().ceil().max(1.0) as usize;
                Self {
                    rows: n.div_ceil(c),
                    cols: c,
                    task_at: Box::new(move |i, j| Some(i * c + j).filter(|&t| t < n)),
                }
            }
        }
    }
}

/// The picture of `copr map`: the launcher's default order (`packed`) beside the
/// chosen mapping — tasks coloured and labelled by node, the link load of every torus
/// plane (routers at their coordinates; a histogram of link loads on other networks),
/// one colour scale with ticks in MB for both — and every strategy's hop-bytes and
/// busiest link against the lower bounds.
///
/// # Errors
/// [`copr::Error::Io`] naming the file if it cannot be drawn or written.
pub(crate) fn mapping_svg(
    p: &Pattern,
    m: &MapMachine,
    cmp: &Comparison,
    chosen: &Row,
    path: &Path,
) -> Result<()> {
    let err = plot_err(path);
    let root = SVGBackend::new(path, (SIZE.0 as u32, SIZE.1 as u32)).into_drawing_area();
    draw_mapping(&root, p, m, cmp, chosen).map_err(|x| err(detail(x)))
}

/// Every step of [`mapping_svg`] in order.
fn draw_mapping(
    root: &Area<'_>,
    p: &Pattern,
    m: &MapMachine,
    cmp: &Comparison,
    chosen: &Row,
) -> Drawn {
    root.fill(&WHITE)?;
    root.draw(&label(
        format!(
            "{} tasks on {}: the launcher's default (packed) and the chosen mapping ({})",
            p.tasks(),
            m.description(),
            chosen.strategy
        ),
        14,
        10,
        20,
    ))?;
    let mut columns: Vec<&Row> = Vec::new();
    if let Some(d) = cmp.row("packed").filter(|d| d.strategy != chosen.strategy) {
        columns.push(d);
    }
    columns.push(chosen);
    let loads: Vec<Vec<u128>> = columns.iter().map(|r| link_loads(p, m, &r.map)).collect();
    // one scale for both columns, so that equal colours are equal loads
    let lmax = loads.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let grid = TaskGrid::of(p);
    for (k, (row, load)) in columns.iter().zip(&loads).enumerate() {
        let ox = 20 + k as i32 * (COLUMN_WIDTH + 20);
        draw_column_title(root, row, ox)?;
        draw_tasks(root, m, row, &grid, ox)?;
        let ly = TASK_TOP + TASK_SIDE as i32 + 34;
        match m.kind() {
            copr_mapping::NetKind::Torus(t) if t.ndims() <= 3 => {
                draw_torus_planes(root, t, load, lmax, ox, ly)?
            }
            _ => draw_link_histogram(root, load, lmax, ox, ly)?,
        }
    }
    draw_colour_scale(root, lmax)?;
    draw_strategy_bars(root, cmp, chosen)?;
    root.present()
}

/// A column's title: the mapping, its hop-bytes and its busiest link.
fn draw_column_title(root: &Area<'_>, row: &Row, ox: i32) -> Drawn {
    let name = if row.strategy == "packed" {
        "packed (the launcher's default)".to_string()
    } else {
        format!("{} (chosen)", row.strategy)
    };
    root.draw(&label(
        format!(
            "{name}: hop-bytes {:.1} MB, busiest link {:.3} MB ({})",
            row.metrics.hop_bytes as f64 / 1e6,
            row.metrics.max_link_bytes as f64 / 1e6,
            row.metrics.link_model
        ),
        ox,
        42,
        15,
    ))
}

/// The task grid coloured by node, black lines on node borders (when cells are large
/// enough), node names at the centre of each node's tasks (when there is room), and
/// the caption.
fn draw_tasks(root: &Area<'_>, m: &MapMachine, row: &Row, grid: &TaskGrid, ox: i32) -> Drawn {
    let TaskGrid {
        rows,
        cols,
        ref task_at,
    } = *grid;
    let rpn = m.ranks_per_node();
    let node_of = |t: usize| row.map.apply(t) / rpn;
    let cell = (TASK_SIDE / rows.max(cols) as f64).max(0.05);
    let oy = TASK_TOP;
    let px = |v: usize| (v as f64 * cell) as i32;
    let mut centre: std::collections::BTreeMap<usize, (f64, f64, f64)> = Default::default();
    for i in 0..rows {
        // one rectangle per run of cells of the same node along the row
        for (j0, j1, n) in runs(cols, |j| task_at(i, j).map(node_of)) {
            root.draw(&Rectangle::new(
                [(ox + px(j0), oy + px(i)), (ox + px(j1), oy + px(i + 1))],
                node_color(n).filled(),
            ))?;
            for j in j0..j1 {
                let c = centre.entry(n).or_insert((0.0, 0.0, 0.0));
                *c = (c.0 + j as f64 + 0.5, c.1 + i as f64 + 0.5, c.2 + 1.0);
            }
        }
    }
    if cell >= 3.0 {
        let border = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (Some(a), Some(b)) => node_of(a) != node_of(b),
            _ => false,
        };
        let line = |from: (i32, i32), to: (i32, i32)| {
            root.draw(&PathElement::new(vec![from, to], BLACK.stroke_width(1)))
        };
        // borders between rows i and i + 1, one line per run of bordering cells
        for i in 0..rows.saturating_sub(1) {
            let cut = |j| border(task_at(i, j), task_at(i + 1, j)).then_some(0);
            for (j0, j1, _) in runs(cols, cut) {
                line((ox + px(j0), oy + px(i + 1)), (ox + px(j1), oy + px(i + 1)))?;
            }
        }
        // borders between columns j and j + 1
        for j in 0..cols.saturating_sub(1) {
            let cut = |i| border(task_at(i, j), task_at(i, j + 1)).then_some(0);
            for (i0, i1, _) in runs(rows, cut) {
                line((ox + px(j + 1), oy + px(i0)), (ox + px(j + 1), oy + px(i1)))?;
            }
        }
    }
    let room = TASK_SIDE / (centre.len() as f64).sqrt().max(1.0);
    if room >= 26.0 {
        for (n, (x, y, c)) in &centre {
            let name: String = m.node_name(*n).chars().take(8).collect();
            root.draw(&label(
                name,
                ox + (x / c * cell) as i32 - 10,
                oy + (y / c * cell) as i32 - 6,
                11,
            ))?;
        }
    }
    root.draw(&label(
        format!("task grid {rows} x {cols}: colour and label = node (black lines: node borders)"),
        ox,
        oy + TASK_SIDE as i32 + 6,
        12,
    ))
}

/// The maximal runs `[start, end)` of `0..len` over which `key` is the same `Some`
/// value, in order (cells with `None` start no run).
fn runs(len: usize, key: impl Fn(usize) -> Option<usize>) -> Vec<(usize, usize, usize)> {
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for k in 0..len {
        let Some(v) = key(k) else { continue };
        match out.last_mut() {
            Some(last) if last.1 == k && last.2 == v => last.1 = k + 1,
            _ => out.push((k, k + 1, v)),
        }
    }
    out
}

/// One X × Y panel per Z plane of a torus of at most three dimensions; a router's
/// colour is its busiest outgoing link; coordinates along the axes.
fn draw_torus_planes(
    root: &Area<'_>,
    t: &copr_topology::Torus,
    load: &[u128],
    lmax: f64,
    ox: i32,
    ly: i32,
) -> Drawn {
    let dims: Vec<usize> = (0..3)
        .map(|d| t.dims().get(d).map_or(1, |&x| x as usize))
        .collect();
    let (nx, ny, nz) = (dims[0], dims[1], dims[2]);
    let n = t.ndims();
    let per_row = nz.min(4);
    let plane_rows = nz.div_ceil(per_row);
    let pw = (COLUMN_WIDTH - 10) / per_row as i32;
    let c = ((pw - 28) as f64 / nx as f64)
        .min((300.0 / plane_rows as f64 - 40.0) / ny as f64)
        .max(1.0);
    let ph = (c * ny as f64) as i32 + 40;
    let plane_at = |z: usize| {
        (
            ox + 24 + (z % per_row) as i32 * pw,
            ly + 34 + (z / per_row) as i32 * ph,
        )
    };
    root.draw(&label(
        "busiest outgoing link of each router, per Z plane (x across, y down)".to_string(),
        ox,
        ly,
        12,
    ))?;
    for r in 0..t.num_coords() {
        let cc = t.coords_of_index(r);
        let (x, y, z) = (
            cc[0] as usize,
            cc.get(1).map_or(0, |&v| v as usize),
            cc.get(2).map_or(0, |&v| v as usize),
        );
        let busiest = (0..2 * n).map(|d| load[r * 2 * n + d]).max().unwrap_or(0);
        let (gx, gy) = plane_at(z);
        let (a, b) = ((x as f64 * c) as i32, (y as f64 * c) as i32);
        let (a1, b1) = (((x + 1) as f64 * c) as i32, ((y + 1) as f64 * c) as i32);
        root.draw(&Rectangle::new(
            [(gx + a, gy + b), (gx + a1 - 1, gy + b1 - 1)],
            load_color(busiest as f64 / lmax).filled(),
        ))?;
    }
    for z in 0..nz {
        let (gx, gy) = plane_at(z);
        root.draw(&label(format!("z = {z}"), gx, gy - 16, 12))?;
        for x in (0..nx).step_by((nx / 8).max(1)) {
            root.draw(&label(
                x.to_string(),
                gx + ((x as f64 + 0.3) * c) as i32,
                gy + (ny as f64 * c) as i32 + 2,
                10,
            ))?;
        }
        for y in (0..ny).step_by((ny / 8).max(1)) {
            root.draw(&label(
                y.to_string(),
                gx - 14,
                gy + ((y as f64 + 0.3) * c) as i32,
                10,
            ))?;
        }
    }
    Ok(())
}

/// A histogram of the links' loads in ten bins of the common scale, idle links
/// counted apart (networks other than small tori).
fn draw_link_histogram(root: &Area<'_>, load: &[u128], lmax: f64, ox: i32, ly: i32) -> Drawn {
    let bins = 10usize;
    let mut count = vec![0usize; bins];
    for &l in load.iter().filter(|&&l| l > 0) {
        let b = ((l as f64 / lmax) * bins as f64).ceil() as usize;
        count[b.clamp(1, bins) - 1] += 1;
    }
    let idle = load.iter().filter(|&&l| l == 0).count();
    let cmax = count.iter().copied().max().unwrap_or(0).max(1) as f64;
    root.draw(&label(
        format!(
            "links by load ({} links, {idle} idle), MB per round",
            load.len()
        ),
        ox,
        ly,
        12,
    ))?;
    let (bx, by, bw, bh) = (ox + 30, ly + 24, 46i32, 220i32);
    for (b, &n) in count.iter().enumerate() {
        let top = by + bh - (n as f64 / cmax * bh as f64) as i32;
        let x0 = bx + b as i32 * bw;
        root.draw(&Rectangle::new(
            [(x0 + 2, top), (x0 + bw - 2, by + bh)],
            load_color((b as f64 + 0.5) / bins as f64).filled(),
        ))?;
        root.draw(&label(n.to_string(), x0 + 12, top - 14, 11))?;
        root.draw(&label(
            format!("{:.1}", (b + 1) as f64 / bins as f64 * lmax / 1e6),
            x0 + 6,
            by + bh + 4,
            10,
        ))?;
    }
    Ok(())
}

/// The colour scale shared by both columns, with five ticks in MB.
fn draw_colour_scale(root: &Area<'_>, lmax: f64) -> Drawn {
    let (sx, sy, sw) = (20i32, SIZE.1 - 60, 600i32);
    for i in 0..sw / 3 {
        root.draw(&Rectangle::new(
            [(sx + 3 * i, sy), (sx + 3 * i + 3, sy + 14)],
            load_color(f64::from(i) / f64::from(sw / 3 - 1)).filled(),
        ))?;
    }
    for q in 0..=4 {
        let x = sx + sw * q / 4;
        root.draw(&PathElement::new(
            vec![(x, sy + 14), (x, sy + 20)],
            BLACK.stroke_width(1),
        ))?;
        root.draw(&label(
            format!("{:.2}", lmax / 1e6 * f64::from(q) / 4.0),
            x - 12,
            sy + 22,
            11,
        ))?;
    }
    root.draw(&label(
        "link load, MB per round (bytes crossing one directed link; same scale on both sides)"
            .to_string(),
        sx,
        sy - 18,
        12,
    ))
}

/// Two bar charts, hop-bytes and the busiest link of every strategy, each with its
/// lower bound as a line; the chosen mapping in blue, the default in red.
fn draw_strategy_bars(root: &Area<'_>, cmp: &Comparison, chosen: &Row) -> Drawn {
    let bx = 20 + 2 * (COLUMN_WIDTH + 20);
    let first = &cmp.rows[0].metrics;
    type Measure = Box<dyn Fn(&Row) -> f64>;
    let charts: [(&str, f64, Measure); 2] = [
        (
            "hop-bytes, MB",
            first.hop_bytes_bound as f64 / 1e6,
            Box::new(|r| r.metrics.hop_bytes as f64 / 1e6),
        ),
        (
            "busiest link, MB",
            first.max_link_bound as f64 / 1e6,
            Box::new(|r| r.metrics.max_link_bytes as f64 / 1e6),
        ),
    ];
    for (k, (name, bound, value)) in charts.iter().enumerate() {
        let top = 50 + k as i32 * 440;
        let vmax = cmp.rows.iter().map(value).fold(*bound, f64::max).max(1e-12);
        let (lx, bw) = (bx + 90, SIZE.0 - bx - 130);
        root.draw(&label(
            format!("{name} of every strategy (line: lower bound {bound:.3})"),
            bx,
            top,
            14,
        ))?;
        for (i, r) in cmp.rows.iter().enumerate() {
            let y = top + 26 + i as i32 * 34;
            let v = value(r);
            let len = (v / vmax * f64::from(bw)) as i32;
            let colour = if r.strategy == chosen.strategy {
                RGBColor(0x20, 0x60, 0xc0)
            } else if r.strategy == "packed" {
                RGBColor(0xa0, 0x20, 0x20)
            } else {
                RGBColor(0x90, 0x90, 0x90)
            };
            root.draw(&label(r.strategy.clone(), bx, y + 6, 12))?;
            root.draw(&Rectangle::new(
                [(lx, y), (lx + len.max(1), y + 24)],
                colour.filled(),
            ))?;
            root.draw(&label(format!("{v:.1}"), lx + len.max(1) + 4, y + 6, 11))?;
        }
        let bxl = lx + (bound / vmax * f64::from(bw)) as i32;
        let bottom = top + 26 + cmp.rows.len() as i32 * 34;
        root.draw(&PathElement::new(
            vec![(bxl, top + 20), (bxl, bottom)],
            BLACK.stroke_width(2),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_mapping::Edge;
    use copr_topology::{FatTreeSpec, LinkSpec, Network};

    /// By hand, on a k = 4 fat tree: host 0 sends 4 MB to host 4 (another pod). One
    /// path loads its 6 links with 4 MB each; ECMP splits it over the edge switch's
    /// 2 links up (2 MB each), the pod's 4 links to the core (1 MB each) and back
    /// down the same way, 14 links in all, the host links with 4 MB.
    #[test]
    fn runs_cover_each_present_cell_once_and_split_on_a_change() {
        let keys = [Some(1), Some(1), None, Some(1), Some(2), Some(2), Some(1)];
        let got = super::runs(keys.len(), |k| keys[k]);
        assert_eq!(got, vec![(0, 2, 1), (3, 4, 1), (4, 6, 2), (6, 7, 1)]);
        assert!(super::runs(0, |_| Some(0)).is_empty());
        assert!(super::runs(3, |_| None).is_empty());
    }

    #[test]
    fn link_loads_follow_the_machines_link_model() {
        let l = |latency| LinkSpec {
            latency,
            bandwidth: 1.25e10,
        };
        let net = Network::fat_tree(&FatTreeSpec {
            k: 4,
            host_link: l(1e-7),
            edge_link: l(1.5e-7),
            core_link: l(2e-7),
        })
        .unwrap();
        let m = MapMachine::network(net, Some(vec![0, 4]), Default::default(), 1).unwrap();
        let e = vec![Edge {
            src: 0,
            dst: 1,
            bytes: 4_000_000,
        }];
        let p = Pattern::from_edges(2, e, "one message".into()).unwrap();
        let id = Perm::identity(2);
        let sorted = |mut v: Vec<u128>| {
            v.retain(|&b| b > 0);
            v.sort_unstable();
            v
        };
        let mb = 1_000_000u128;
        let mut want = vec![mb; 8];
        want.extend([2 * mb; 4]);
        want.extend([4 * mb; 2]);
        assert_eq!(m.link_model(), LinkLoadModel::Ecmp);
        assert_eq!(sorted(link_loads(&p, &m, &id)), want);
        let single = m.with_single_path_loads();
        assert_eq!(sorted(link_loads(&p, &single, &id)), vec![4 * mb; 6]);
    }
}
