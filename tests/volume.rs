//! Volumes against a per-element serial reference.

use copr_testkit::layouts as common;

use copr::layout::{BlockCyclic, BlockCyclicSpec, Grid, GridSpec, Layout, Op, Order};
use copr::volume::Volumes;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn reference(src: &Layout, dst: &Layout, op: Op) -> Vec<u64> {
    let p = src.ranks().max(dst.ranks());
    let mut v = vec![0u64; p * p];
    for i in 0..dst.rows() {
        for j in 0..dst.cols() {
            let s = if op.transposes() {
                src.owner_of(j, i)
            } else {
                src.owner_of(i, j)
            };
            v[s * p + dst.owner_of(i, j)] += 1;
        }
    }
    v
}

#[test]
fn random_layout_pairs_match_the_element_loop() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for case in 0..400 {
        let (m, n) = (rng.random_range(1..40), rng.random_range(1..40));
        let op = [Op::Identity, Op::Transpose, Op::ConjTranspose][case % 3];
        let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
        let src = common::random_layout(&mut rng, sm, sn, 8);
        let dst = common::random_layout(&mut rng, m, n, 8);
        let v = Volumes::compute(&src, &dst, op).unwrap();
        assert_eq!(
            v.matrix().to_dense(),
            reference(&src, &dst, op),
            "case {case}: {src:?} -> {dst:?}"
        );
        assert_eq!(v.total(), (m * n) as u64);
    }
}

#[test]
fn local_blocks_tile_each_layout_exactly_once() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for _ in 0..200 {
        let (m, n) = (rng.random_range(1..30), rng.random_range(1..30));
        let l = common::random_layout(&mut rng, m, n, 6);
        let mut seen = vec![0u32; m * n];
        for r in 0..l.ranks() {
            let mut used = vec![false; l.local_len(r)];
            for b in l.local_blocks(r) {
                for i in b.rows.clone() {
                    for j in b.cols.clone() {
                        assert_eq!(l.owner_of(i, j), r);
                        seen[i * n + j] += 1;
                        let k = b.index(i - b.rows.start, j - b.cols.start);
                        assert!(!used[k], "local index {k} used twice on rank {r}");
                        used[k] = true;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{l:?}");
    }
}

#[test]
fn shape_mismatch_is_an_error_naming_both_shapes() {
    let a: Layout = BlockCyclic::new(BlockCyclicSpec::new(10, 20, 2, 2, 1, 1))
        .unwrap()
        .into();
    let b: Layout = BlockCyclic::new(BlockCyclicSpec::new(10, 20, 2, 2, 1, 1))
        .unwrap()
        .into();
    let e = Volumes::compute(&a, &b, Op::Transpose)
        .unwrap_err()
        .to_string();
    assert!(e.contains("20x10") && e.contains("10x20"), "{e}");
    assert!(Volumes::compute(&a, &b, Op::Identity).is_ok());
}

#[test]
fn paper_sweep_at_block_1_is_fast_enough_to_not_loop_over_blocks() {
    // 10^10 blocks at block size 1: the axis-based computation must not touch them.
    let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(100_000, 100_000, 1, 1, 10, 10))
        .unwrap()
        .into();
    let mut t = BlockCyclicSpec::new(100_000, 100_000, 10_000, 10_000, 10, 10);
    t.grid_order = Order::ColMajor;
    let dst: Layout = BlockCyclic::new(t).unwrap().into();
    let v = Volumes::compute(&src, &dst, Op::Identity).unwrap();
    assert_eq!(v.total(), 10_000_000_000);
    // every source rank holds 1/100 of every target block: uniform all-to-all
    assert_eq!(v.matrix().nnz(), 100 * 100);
    assert!(v.matrix().values().iter().all(|&x| x == 1_000_000));
}

#[test]
fn grid_errors_name_field_and_values() {
    let spec = |rows: Vec<usize>, owners: Vec<Vec<usize>>, ranks| GridSpec {
        row_splits: rows,
        col_splits: vec![0, 4],
        owners,
        ranks,
        storage: vec![],
    };
    let e = Grid::new(spec(vec![0, 80, 70, 100], vec![vec![0]; 3], None)).unwrap_err();
    assert!(
        e.to_string().contains("row_splits") && e.to_string().contains("70"),
        "{e}"
    );
    let e = Grid::new(spec(vec![0, 5], vec![vec![3]], Some(2))).unwrap_err();
    assert!(
        e.to_string().contains("owner 3") && e.to_string().contains("0..2"),
        "{e}"
    );
    let e = Grid::new(spec(vec![0, 5], vec![vec![0, 1]], None)).unwrap_err();
    assert!(e.to_string().contains("owners"), "{e}");
    let mut bc = BlockCyclicSpec::new(10, 10, 2, 2, 3, 3);
    bc.ranks = Some(4);
    let e = BlockCyclic::new(bc).unwrap_err();
    assert!(e.to_string().contains("ranks = 4"), "{e}");
}

#[test]
fn with_ranks_keeps_per_rank_storage() {
    let g = Grid::from_parts(
        vec![0, 2, 4],
        vec![0, 3],
        vec![0, 1],
        None,
        vec![
            copr::layout::RankStorage {
                order: Order::RowMajor,
                ld: Some(5),
            },
            copr::layout::RankStorage::default(),
        ],
    )
    .unwrap();
    let l: Layout = g.into();
    let wide = l.with_ranks(5).unwrap();
    assert_eq!(wide.ranks(), 5);
    assert_eq!(wide.local_blocks(0), l.local_blocks(0));
    assert!(l.with_ranks(1).is_err());
}

#[test]
fn ranks_outside_a_grid_hold_nothing() {
    let g = Grid::from_parts(
        vec![0, 2],
        vec![0, 3],
        vec![1],
        None,
        vec![
            copr::layout::RankStorage::default(),
            copr::layout::RankStorage {
                order: Order::RowMajor,
                ld: None,
            },
        ],
    )
    .unwrap();
    let l: Layout = g.into();
    assert_eq!(l.ranks(), 2);
    assert!(l.local_blocks(5).is_empty());
    assert_eq!(l.local_len(5), 0);
    assert_eq!(l.storage_order(5), Order::ColMajor);
}
