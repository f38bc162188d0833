//! Random layouts for tests (seeded).
#![allow(dead_code)]

use copr::layout::{BlockCyclic, BlockCyclicSpec, Grid, Layout, Order, RankStorage, Submatrix};
use rand::{Rng, RngExt};

/// Random increasing splits of `0..len` into at most `max_parts` parts.
pub(crate) fn random_splits(rng: &mut impl Rng, len: usize, max_parts: usize) -> Vec<usize> {
    let parts = rng.random_range(1..=max_parts.min(len));
    let mut cuts: Vec<usize> = (0..parts - 1).map(|_| rng.random_range(1..len)).collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// A random layout of an `m × n` matrix on at most `max_ranks` ranks.
pub(crate) fn random_layout(rng: &mut impl Rng, m: usize, n: usize, max_ranks: usize) -> Layout {
    if rng.random_bool(0.5) {
        let nprow = rng.random_range(1..=max_ranks);
        let npcol = rng.random_range(1..=(max_ranks / nprow).max(1));
        let (ia, ja) = (rng.random_range(0..4), rng.random_range(0..4));
        let mut spec = BlockCyclicSpec::new(
            m + ia + rng.random_range(0..3),
            n + ja + rng.random_range(0..3),
            rng.random_range(1..=(m / 2).max(1)),
            rng.random_range(1..=(n / 2).max(1)),
            nprow,
            npcol,
        );
        spec.grid_order = if rng.random_bool(0.5) {
            Order::RowMajor
        } else {
            Order::ColMajor
        };
        spec.local_order = if rng.random_bool(0.5) {
            Order::RowMajor
        } else {
            Order::ColMajor
        };
        spec.rsrc = rng.random_range(0..nprow);
        spec.csrc = rng.random_range(0..npcol);
        spec.submatrix = Some(Submatrix { ia, ja, m, n });
        let grid = nprow * npcol;
        if rng.random_bool(0.3) && grid < max_ranks {
            spec.ranks = Some(max_ranks);
        }
        if rng.random_bool(0.3) {
            let ranks = spec.ranks.unwrap_or(grid);
            let mut all: Vec<usize> = (0..ranks).collect();
            for i in (1..all.len()).rev() {
                all.swap(i, rng.random_range(0..=i));
            }
            all.truncate(grid);
            spec.rank_map = Some(all);
            spec.ranks = Some(ranks);
        }
        BlockCyclic::new(spec).unwrap().into()
    } else {
        let rows = random_splits(rng, m, 6);
        let cols = random_splits(rng, n, 6);
        let ranks = rng.random_range(1..=max_ranks);
        let owners = (0..(rows.len() - 1) * (cols.len() - 1))
            .map(|_| rng.random_range(0..ranks))
            .collect();
        let storage = (0..ranks)
            .map(|_| RankStorage {
                order: if rng.random_bool(0.5) {
                    Order::RowMajor
                } else {
                    Order::ColMajor
                },
                ld: None,
            })
            .collect();
        Grid::from_parts(rows, cols, owners, Some(ranks), storage)
            .unwrap()
            .into()
    }
}
