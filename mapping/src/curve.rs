//! Hilbert curves in 1 to 3 (or more) dimensions, for any extents.
//!
//! The index of a point is its position along the Hilbert curve of the smallest
//! power-of-two cube that holds the box (Skilling's transposed-axes construction). For
//! extents that are not equal powers of two, cells are visited in that curve's order,
//! so consecutive cells are close but not always adjacent.

/// Position of `coords` along the `bits`-bit Hilbert curve of `coords.len()` dimensions.
///
/// # Panics
/// If `coords.len() · bits > 128` or a coordinate needs more than `bits` bits.
///
/// ```
/// use copr_mapping::hilbert_index;
/// // the 2 x 2 curve visits (0,0), (0,1), (1,1), (1,0)
/// let order: Vec<u128> = [[0, 0], [0, 1], [1, 1], [1, 0]].iter().map(|c| hilbert_index(c, 1)).collect();
/// assert_eq!(order, [0, 1, 2, 3]);
/// ```
pub fn hilbert_index(coords: &[u32], bits: u32) -> u128 {
    let n = coords.len();
    assert!(
        n as u32 * bits <= 128,
        "Hilbert index needs at most 128 bits"
    );
    if n == 0 || bits == 0 {
        return 0;
    }
    assert!(
        coords.iter().all(|&c| bits >= 32 || c >> bits == 0),
        "coordinate beyond {bits} bits"
    );
    let mut x = [0u32; 8];
    let x = if n <= 8 {
        x[..n].copy_from_slice(coords);
        &mut x[..n]
    } else {
        panic!("at most 8 dimensions")
    };
    // undo the rotations from the top bit down
    let mut q: u32 = 1 << (bits - 1);
    while q > 1 {
        let lower = q - 1;
        for i in 0..n {
            if x[i] & q != 0 {
                x[0] ^= lower;
            } else {
                let t = (x[0] ^ x[i]) & lower;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    // Gray-code the transposed index
    for i in 1..n {
        x[i] ^= x[i - 1];
    }
    let mut t = 0;
    let mut q: u32 = 1 << (bits - 1);
    while q > 1 {
        if x[n - 1] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for v in x.iter_mut() {
        *v ^= t;
    }
    // interleave: the top bit of x[0] is the top bit of the index
    let mut h: u128 = 0;
    for b in (0..bits).rev() {
        for v in x.iter() {
            h = (h << 1) | u128::from((v >> b) & 1);
        }
    }
    h
}

/// Bits needed for extents `dims` (the smallest `b` with `2^b ≥ max extent`).
pub fn bits_for(dims: &[usize]) -> u32 {
    let m = dims.iter().copied().max().unwrap_or(1).max(1);
    usize::BITS - (m - 1).leading_zeros()
}

/// The indices `0..points.len()` sorted by Hilbert index of the points (ties by
/// position).
pub fn hilbert_order(points: &[Vec<u32>], dims: &[usize]) -> Vec<usize> {
    let bits = bits_for(dims);
    let mut keyed: Vec<(u128, usize)> = points
        .iter()
        .enumerate()
        .map(|(i, c)| (hilbert_index(c, bits), i))
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_points(dims: &[usize]) -> Vec<Vec<u32>> {
        let total: usize = dims.iter().product();
        (0..total)
            .map(|mut k| {
                dims.iter()
                    .map(|&d| {
                        let c = (k % d) as u32;
                        k /= d;
                        c
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn power_of_two_curves_are_continuous_bijections() {
        for dims in [vec![8usize, 8], vec![4, 4, 4], vec![16], vec![2, 2, 2]] {
            let pts = all_points(&dims);
            let bits = bits_for(&dims);
            let mut idx: Vec<u128> = pts.iter().map(|c| hilbert_index(c, bits)).collect();
            let order = hilbert_order(&pts, &dims);
            for w in order.windows(2) {
                let d: u32 = pts[w[0]]
                    .iter()
                    .zip(&pts[w[1]])
                    .map(|(a, b)| a.abs_diff(*b))
                    .sum();
                assert_eq!(d, 1, "{dims:?}: {:?} -> {:?}", pts[w[0]], pts[w[1]]);
            }
            idx.sort_unstable();
            assert_eq!(idx, (0..pts.len() as u128).collect::<Vec<_>>());
        }
    }

    #[test]
    fn other_extents_give_a_permutation() {
        let dims = [6usize, 5, 3];
        let pts = all_points(&dims);
        let mut o = hilbert_order(&pts, &dims);
        o.sort_unstable();
        assert_eq!(o, (0..90).collect::<Vec<_>>());
    }
}
