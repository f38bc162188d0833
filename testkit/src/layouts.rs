//! Random layouts and small machines for tests (seeded).

use copr::layout::{BlockCyclic, BlockCyclicSpec, Grid, Layout, Order, RankStorage, Submatrix};
use rand::{Rng, RngExt};
use std::sync::Arc;

use copr_topology::{Machine, PairTable, Torus, TorusNode, TorusParams};

/// Random increasing splits of `0..len` into at most `max_parts` parts.
pub fn random_splits(rng: &mut impl Rng, len: usize, max_parts: usize) -> Vec<usize> {
    let parts = rng.random_range(1..=max_parts.min(len));
    let mut cuts: Vec<usize> = (0..parts - 1).map(|_| rng.random_range(1..len)).collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// A random layout of an `m × n` matrix on at most `max_ranks` ranks.
pub fn random_layout(rng: &mut impl Rng, m: usize, n: usize, max_ranks: usize) -> Layout {
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

/// p ranks in two islands (ranks < p/2 and the rest): cheap links inside, a slow link
/// between.
pub fn two_islands(p: usize) -> Arc<Machine> {
    let island = |r: usize| usize::from(r >= p.div_ceil(2));
    let mut lat = vec![0.0; p * p];
    let mut inv = vec![0.0; p * p];
    for i in 0..p {
        for j in 0..p {
            if i != j {
                let far = island(i) != island(j);
                lat[i * p + j] = if far { 5e-6 } else { 1e-6 };
                inv[i * p + j] = if far { 1e-7 } else { 1e-9 };
            }
        }
    }
    let names = (0..p).map(|r| format!("r{r}")).collect();
    Arc::new(Machine::from_rank_matrix(PairTable::new(names, lat, inv).unwrap(), None).unwrap())
}

/// The nodes `idx` (linear indices, `x` fastest) of a `dims` torus, named `nid00000`
/// after their index: a job's scattered allocation.
pub fn torus_nodes(dims: &[u32], idx: &[usize]) -> Torus {
    let params = TorusParams::new(dims.to_vec());
    let full = Torus::full(params.clone()).unwrap();
    let nodes = idx
        .iter()
        .map(|&k| TorusNode {
            name: format!("nid{k:05}"),
            coords: full.coords(k).to_vec(),
        })
        .collect();
    Torus::new(params, nodes).unwrap()
}

/// Every permutation of `0..p`, as forward tables.
pub fn permutations(p: usize) -> Vec<Vec<usize>> {
    if p == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for rest in permutations(p - 1) {
        for k in 0..=rest.len() {
            let mut v = rest.clone();
            v.insert(k, p - 1);
            out.push(v);
        }
    }
    out
}
