//! Cyclic autocorrelation of integer weights on a torus grid, for counting node pairs
//! per displacement without visiting the pairs.
//!
//! For weights `w` on the cells of a grid with wrap-around in every dimension,
//! `C[δ] = Σ_c w[c]·w[c + δ]` (indices modulo the dimensions) is the number of weighted
//! pairs whose second cell lies `δ` from the first. Visiting pairs costs `O(k²)` for `k`
//! occupied cells; here `C` comes from the discrete Fourier transform
//! (`C = IDFT(|DFT(w)|²)`), done one dimension at a time with a direct transform of each
//! line: `O(N · Σ_d D_d)` for `N = Π_d D_d` cells, no FFT library and no size
//! restriction. The result is rounded to integers and checked (every value within 0.25
//! of an integer and non-negative, the total equal to `(Σ w)²`); when rounding error
//! could have changed a count the function says so and the caller counts pairs instead.

/// One complex line transform per line of dimension `d` (length `len`, elements `stride`
/// apart), in place; `sign` −1 forward, +1 inverse (unscaled).
fn transform_dim(re: &mut [f64], im: &mut [f64], len: usize, stride: usize, sign: f64) {
    if len == 1 {
        return;
    }
    // twiddles e^{sign·2πi·m/len}, m = 0..len
    let (cos, sin): (Vec<f64>, Vec<f64>) = (0..len)
        .map(|m| {
            let a = sign * 2.0 * std::f64::consts::PI * m as f64 / len as f64;
            (a.cos(), a.sin())
        })
        .unzip();
    let block = len * stride;
    let (mut xr, mut xi) = (vec![0.0; len], vec![0.0; len]);
    for base in (0..re.len()).step_by(block) {
        for inner in 0..stride {
            let at = |j: usize| base + inner + j * stride;
            for j in 0..len {
                xr[j] = re[at(j)];
                xi[j] = im[at(j)];
            }
            for k in 0..len {
                let (mut sr, mut si) = (0.0, 0.0);
                let mut m = 0;
                for j in 0..len {
                    // x_j · e^{sign·2πi·jk/len}, jk reduced modulo len as we go
                    sr += xr[j] * cos[m] - xi[j] * sin[m];
                    si += xr[j] * sin[m] + xi[j] * cos[m];
                    m += k;
                    if m >= len {
                        m -= len;
                    }
                }
                re[at(k)] = sr;
                im[at(k)] = si;
            }
        }
    }
}

/// `C[δ] = Σ_c w[c]·w[(c + δ) mod dims]` for every displacement `δ`, cells indexed
/// mixed-radix with the first dimension fastest (`w.len() = Π dims`). `None` when the
/// floating-point transform cannot guarantee the exact integers (the caller then counts
/// pairs directly).
pub(crate) fn cyclic_autocorrelation(dims: &[usize], w: &[u64]) -> Option<Vec<u64>> {
    let n: usize = dims.iter().product();
    if n != w.len() || n == 0 {
        return None;
    }
    let total: u64 = w.iter().sum();
    let square = (total as u128) * (total as u128);
    let mut re: Vec<f64> = w.iter().map(|&x| x as f64).collect();
    let mut im = vec![0.0; n];
    let mut stride = 1;
    for &d in dims {
        transform_dim(&mut re, &mut im, d, stride, -1.0);
        stride *= d;
    }
    for (r, i) in re.iter_mut().zip(im.iter_mut()) {
        *r = *r * *r + *i * *i;
        *i = 0.0;
    }
    let mut stride = 1;
    for &d in dims {
        transform_dim(&mut re, &mut im, d, stride, 1.0);
        stride *= d;
    }
    let scale = 1.0 / n as f64;
    let mut out = Vec::with_capacity(n);
    let mut sum: u128 = 0;
    for &r in &re {
        let v = r * scale;
        let k = v.round();
        if !(k >= 0.0 && (v - k).abs() <= 0.25 && k < 1.8e19) {
            return None;
        }
        out.push(k as u64);
        sum += k as u128;
    }
    (sum == square).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair of cells, directly.
    fn direct(dims: &[usize], w: &[u64]) -> Vec<u64> {
        let n = w.len();
        let coords = |mut k: usize| -> Vec<usize> {
            dims.iter()
                .map(|&d| {
                    let c = k % d;
                    k /= d;
                    c
                })
                .collect()
        };
        let index = |c: &[usize]| c.iter().zip(dims).rev().fold(0, |a, (&c, &d)| a * d + c);
        let mut out = vec![0u64; n];
        for a in 0..n {
            for b in 0..n {
                let (ca, cb) = (coords(a), coords(b));
                let delta: Vec<usize> = ca
                    .iter()
                    .zip(&cb)
                    .zip(dims)
                    .map(|((&x, &y), &d)| (y + d - x) % d)
                    .collect();
                out[index(&delta)] += w[a] * w[b];
            }
        }
        out
    }

    #[test]
    fn equals_the_pairwise_count_on_random_grids() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for dims in [
            vec![1],
            vec![2],
            vec![7],
            vec![4, 1],
            vec![3, 5],
            vec![2, 2, 2],
            vec![4, 3, 5],
            vec![6, 1, 4, 3],
            vec![8, 8, 8],
        ] {
            for density in [1u64, 3, 10] {
                let n: usize = dims.iter().product();
                // about one cell in `density` occupied, up to 64 ranks per cell
                let w: Vec<u64> = (0..n)
                    .map(|_| {
                        if next() % density == 0 {
                            next() % 64 + 1
                        } else {
                            0
                        }
                    })
                    .collect();
                assert_eq!(
                    cyclic_autocorrelation(&dims, &w),
                    Some(direct(&dims, &w)),
                    "dims {dims:?}"
                );
            }
        }
    }

    #[test]
    fn large_weights_are_exact_or_refused() {
        // Counts near 2^60 cannot be carried exactly by the f64 transform: the
        // function must then refuse rather than return a wrong count.
        let dims = [5, 3];
        let w: Vec<u64> = (0..15).map(|k| (1u64 << 29) + k * 7919).collect();
        if let Some(c) = cyclic_autocorrelation(&dims, &w) {
            assert_eq!(c, direct(&dims, &w));
        }
        assert_eq!(cyclic_autocorrelation(&[2, 3], &[1; 5]), None);
    }
}
