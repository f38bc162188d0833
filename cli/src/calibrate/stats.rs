//! Small statistics for `copr calibrate`: medians and quantiles, the latency +
//! bandwidth fit, Spearman's rank correlation and a seeded sampler.

use serde::Serialize;

/// The `q`-quantile (0 ≤ q ≤ 1) of `xs` by linear interpolation between order
/// statistics; `NaN` for an empty list.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// The median of `xs` (the mean of the middle two for an even count).
pub fn median(xs: &[f64]) -> f64 {
    quantile(xs, 0.5)
}

/// A repeated measurement: its median and spread.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    /// Median.
    pub median: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Number of values.
    pub n: usize,
}

impl Summary {
    /// The summary of `xs`.
    pub fn of(xs: &[f64]) -> Self {
        Self {
            median: median(xs),
            p10: quantile(xs, 0.1),
            p90: quantile(xs, 0.9),
            n: xs.len(),
        }
    }
}

/// The fit `t(s) = latency + s / bandwidth` of a message-size ladder.
#[derive(Debug, Clone, Serialize)]
pub struct LinearFit {
    /// Seconds (the intercept, clamped at 0).
    pub latency: f64,
    /// Bytes per second (the inverse slope).
    pub bandwidth: f64,
    /// Per point: (fitted − measured) / measured.
    pub residuals: Vec<f64>,
}

/// Weighted least squares of `t = a + g·s` over the points `(s, t)`, each weighted
/// by `1/t²` so that the fit minimises relative errors (small messages count as
/// much as large ones). Returns `None` with fewer than two distinct sizes or a
/// slope ≤ 0.
pub fn fit_latency_bandwidth(points: &[(f64, f64)]) -> Option<LinearFit> {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(s, t) in points {
        if !(t > 0.0 && t.is_finite()) {
            return None;
        }
        let w = 1.0 / (t * t);
        sw += w;
        sx += w * s;
        sy += w * t;
        sxx += w * s * s;
        sxy += w * s * t;
    }
    let det = sw * sxx - sx * sx;
    if points.len() < 2 || det.abs() <= f64::EPSILON * sw * sxx {
        return None;
    }
    let g = (sw * sxy - sx * sy) / det;
    let a = (sy - g * sx) / sw;
    if g.is_nan() || g <= 0.0 {
        return None;
    }
    let latency = a.max(0.0);
    let residuals = points
        .iter()
        .map(|&(s, t)| (latency + g * s - t) / t)
        .collect();
    Some(LinearFit {
        latency,
        bandwidth: 1.0 / g,
        residuals,
    })
}

/// Ranks of `xs` from 1, ties getting the mean of their ranks.
fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut r = vec![0.0; xs.len()];
    let mut k = 0;
    while k < idx.len() {
        let mut e = k;
        while e + 1 < idx.len() && xs[idx[e + 1]] == xs[idx[k]] {
            e += 1;
        }
        let mean = (k + e) as f64 / 2.0 + 1.0;
        for &i in &idx[k..=e] {
            r[i] = mean;
        }
        k = e + 1;
    }
    r
}

/// Spearman's rank correlation: Pearson's correlation of the ranks (ties averaged).
/// `None` with fewer than two points or when either list is constant.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

pub use copr::rng::SplitMix;

/// One measured class of rank pairs, as [`implausible`] judges it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassCheck<'a> {
    /// The class's name (`other-node` is the one between nodes).
    pub name: &'a str,
    /// Median 8-byte half round trip, seconds.
    pub latency: f64,
    /// Largest relative residual of the bandwidth fit, if fitted.
    pub max_residual: Option<f64>,
}

/// Largest fit residual accepted without a warning (a fraction).
pub const MAX_PLAUSIBLE_RESIDUAL: f64 = 0.5;

/// How many times the other-node latency a class inside a node may take before it is
/// called implausible (equal paths, as with emulated nodes, differ by noise only).
pub const MAX_PLAUSIBLE_LATENCY_RATIO: f64 = 2.0;

/// Warnings, one line each, about measurements that cannot describe the machine: a
/// class inside a node more than [`MAX_PLAUSIBLE_LATENCY_RATIO`] times slower than the
/// class between nodes (the ranks were probably descheduled: oversubscribed cores, a
/// busy machine), or a bandwidth fit whose residual exceeds
/// [`MAX_PLAUSIBLE_RESIDUAL`]. Each says what to try.
pub fn implausible(classes: &[ClassCheck<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    let inter = classes.iter().find(|c| c.name == "other-node");
    if let Some(o) = inter {
        for c in classes.iter().filter(|c| c.name != "other-node") {
            if c.latency > MAX_PLAUSIBLE_LATENCY_RATIO * o.latency {
                out.push(format!(
                    "{} latency {:.3} us is above other-node {:.3} us: ranks were probably descheduled (oversubscribed or busy cores); rerun with one rank per core on an idle allocation",
                    c.name,
                    c.latency * 1e6,
                    o.latency * 1e6
                ));
            }
        }
    }
    for c in classes {
        if let Some(r) = c.max_residual.filter(|r| *r > MAX_PLAUSIBLE_RESIDUAL) {
            out.push(format!(
                "{}: the bandwidth fit misses a measurement by {:.0} %: the ladder's times are noise; rerun with a larger --budget on an idle allocation",
                c.name,
                100.0 * r
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_hand() {
        let xs = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(median(&xs), 2.5);
        assert_eq!(quantile(&xs, 0.0), 1.0);
        assert_eq!(quantile(&xs, 1.0), 4.0);
        // position 0.1·3 = 0.3 between 1 and 2
        assert!((quantile(&xs, 0.1) - 1.3).abs() < 1e-12);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[7.0, 1.0, 5.0]), 5.0);
        // 11 values 0..=10: p10 = 1, median = 5, p90 = 9
        let s = Summary::of(&(0..=10).rev().map(f64::from).collect::<Vec<_>>());
        assert_eq!((s.p10, s.median, s.p90, s.n), (1.0, 5.0, 9.0, 11));
    }

    #[test]
    fn exact_line_is_recovered() {
        // t = 2 µs + s / 5 GB/s
        let pts: Vec<(f64, f64)> = [64.0, 1024.0, 65536.0, 4e6]
            .iter()
            .map(|&s| (s, 2e-6 + s / 5e9))
            .collect();
        let f = fit_latency_bandwidth(&pts).unwrap();
        assert!((f.latency - 2e-6).abs() < 1e-15, "{}", f.latency);
        assert!((f.bandwidth - 5e9).abs() / 5e9 < 1e-9, "{}", f.bandwidth);
        assert!(f.residuals.iter().all(|r| r.abs() < 1e-9));
    }

    #[test]
    fn fit_by_hand_with_noise() {
        // Two points fix the line: (0, 1) and (10, 3) -> a = 1, g = 0.2, whatever the
        // weights; a third point off the line shows up in the residuals.
        let f = fit_latency_bandwidth(&[(0.0, 1.0), (10.0, 3.0)]).unwrap();
        assert!((f.latency - 1.0).abs() < 1e-12);
        assert!((f.bandwidth - 5.0).abs() < 1e-12);
        let g = fit_latency_bandwidth(&[(0.0, 1.0), (10.0, 3.0), (20.0, 6.0)]).unwrap();
        assert!(g.residuals.iter().any(|r| r.abs() > 0.01));
        assert!(fit_latency_bandwidth(&[(5.0, 1.0)]).is_none());
        assert!(fit_latency_bandwidth(&[(5.0, 1.0), (5.0, 2.0)]).is_none());
        // decreasing times: no positive bandwidth
        assert!(fit_latency_bandwidth(&[(0.0, 2.0), (10.0, 1.0)]).is_none());
    }

    #[test]
    fn spearman_by_hand() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        // ranks x = 1 2 3 4, y = 2 1 4 3: d² = 1+1+1+1 = 4, 1 - 6·4/(4·15) = 0.6
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[2.0, 1.0, 4.0, 3.0]).unwrap();
        assert!((r - 0.6).abs() < 1e-12, "{r}");
        // ties: x ranks 1.5 1.5 3, y ranks 1 2 3: Pearson of ranks = sqrt(3)/2
        let t = spearman(&[1.0, 1.0, 2.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((t - 3f64.sqrt() / 2.0).abs() < 1e-12, "{t}");
        assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), None);
        assert_eq!(spearman(&[1.0], &[1.0]), None);
    }

    #[test]
    fn sampler_is_seeded() {
        let mut a = SplitMix(7);
        let mut b = SplitMix(7);
        let mut v: Vec<usize> = (0..20).collect();
        let mut w = v.clone();
        a.shuffle(&mut v);
        b.shuffle(&mut w);
        assert_eq!(v, w);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(s, (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn implausible_measurements_are_named() {
        let c = |name, latency, max_residual| ClassCheck {
            name,
            latency,
            max_residual,
        };
        // the case: same node 651 us against other node 2.7 us, residual 99 %
        let bad = [
            c("same-node", 651e-6, Some(0.99)),
            c("other-node", 2.7e-6, Some(0.05)),
        ];
        let w = implausible(&bad);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("same-node latency 651.000 us is above other-node 2.700 us"));
        assert!(w[1].starts_with("same-node: the bandwidth fit misses") && w[1].contains("99 %"));
        let good = [
            c("same-node", 0.4e-6, Some(0.1)),
            c("other-node", 2.7e-6, None),
        ];
        assert!(implausible(&good).is_empty());
        // one path measured twice (emulated nodes): noise is no warning, a factor is
        let noise = [
            c("same-node", 3.56e-6, Some(0.4)),
            c("other-node", 3.43e-6, Some(0.4)),
        ];
        assert!(implausible(&noise).is_empty());
        let far = [
            c("same-node", 7.0e-6, None),
            c("other-node", 3.43e-6, Some(0.5)),
        ];
        assert_eq!(implausible(&far).len(), 1);
    }
}
