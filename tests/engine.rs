//! The reshuffle engine on 1–8 in-process ranks against a serial per-element reference.

use copr_testkit::layouts as common;
mod engine_cases;

use copr::engine::{Job, Relabeling, ReshufflePlan, TargetContents, Transform};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Grid, Layout, Op, Order, RankStorage};
use copr::transport::{run_in_process, Transport};
use engine_cases::{
    cache_cases, error_cases, joint_cases, joint_keep_cases, large_case, one_call_error_cases,
    run_batch, run_random, scalapack_cases,
};
use num_complex::Complex64;
use proptest::prelude::*;

fn all_ok(results: Vec<Result<(), String>>) {
    for r in results {
        if let Err(e) = r {
            panic!("{e}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random layouts (block-cyclic and grids, both orders, subsets, submatrices,
    /// different grids), random op, α, β and element type, batches of 1–3, relabeling on
    /// and off, each plan executed twice with new data and scalars.
    #[test]
    fn random_batches_match_the_serial_reference(
        seed in any::<u64>(),
        ranks in 1usize..=8,
        ty in 0usize..6,
        n_pairs in 1usize..=3,
        relabel in any::<bool>(),
    ) {
        let r = run_in_process(ranks, |t| run_random(t, ty, seed, n_pairs, relabel, 2)).unwrap();
        for x in r {
            prop_assert!(x.is_ok(), "{}", x.unwrap_err());
        }
    }
}

#[test]
fn every_element_type_and_op_on_every_rank_count() {
    for ranks in 1..=8 {
        for ty in 0..6 {
            for seed in 0..4u64 {
                let s = seed * 1000 + ranks as u64 * 10 + ty as u64;
                all_ok(
                    run_in_process(ranks, |t| {
                        run_random(t, ty, s, 1 + (seed as usize % 3), seed % 2 == 0, 1)
                    })
                    .unwrap(),
                );
            }
        }
    }
}

#[test]
fn large_block_cyclic_cases_use_the_parallel_paths() {
    for ranks in [1, 2, 3, 4] {
        for (op, relabel) in [
            (Op::Identity, false),
            (Op::Transpose, true),
            (Op::ConjTranspose, false),
        ] {
            let cases = large_case(ranks, 301, 257, op, relabel);
            all_ok(
                run_in_process(ranks, |t| {
                    run_batch::<Complex64>(t, &cases, 2, "large c64")?;
                    run_batch::<f32>(t, &cases, 1, "large f32")
                })
                .unwrap(),
            );
        }
    }
}

#[test]
fn collective_errors_are_the_same_on_every_rank_and_write_nothing() {
    for ranks in 1..=5 {
        all_ok(run_in_process(ranks, |t| error_cases(t)).unwrap());
        all_ok(run_in_process(ranks, |t| one_call_error_cases(t)).unwrap());
    }
}

#[test]
fn scalapack_semantics_per_rank_lld_and_safe_relabeling() {
    for ranks in 1..=5 {
        all_ok(run_in_process(ranks, |t| scalapack_cases(t)).unwrap());
    }
}

#[test]
fn a_joint_relabeling_gives_every_target_the_same_owners() {
    for ranks in 1..=8 {
        all_ok(run_in_process(ranks, |t| joint_cases(t, 24)).unwrap());
        all_ok(run_in_process(ranks, |t| joint_keep_cases(t)).unwrap());
    }
}

#[test]
fn the_plan_cache_reuses_and_invalidates_plans() {
    for ranks in 1..=4 {
        all_ok(run_in_process(ranks, |t| cache_cases(t)).unwrap());
    }
}

#[test]
fn beta_zero_never_reads_a_nan_filled_target() {
    let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(40, 30, 7, 5, 2, 2))
        .unwrap()
        .into();
    let dst: Layout = BlockCyclic::new(BlockCyclicSpec::new(30, 40, 4, 9, 1, 3))
        .unwrap()
        .into();
    let out = run_in_process(4, |t| {
        let me = t.rank();
        let mut plan = ReshufflePlan::new(
            t,
            vec![Transform::new(src.clone(), dst.clone(), Op::Transpose)],
        )
        .unwrap();
        let b = engine_cases::local_source::<f64>(&src, me, 9);
        let target = plan.target(0).clone();
        let mut a = engine_cases::local_target::<f64>(&target, me, 0, true);
        plan.execute(
            t,
            &mut [Job {
                alpha: 3.0,
                beta: 0.0,
                source: &b,
                target: &mut a,
            }],
        )
        .unwrap();
        target.local_blocks(me).iter().all(|blk| {
            blk.rows.clone().all(|i| {
                blk.cols.clone().all(|j| {
                    let x = a[blk.index(i - blk.rows.start, j - blk.cols.start)];
                    x == engine_cases::expected(Op::Transpose, 3.0, 0.0, 9, 0, i, j)
                })
            })
        })
    })
    .unwrap();
    assert!(out.iter().all(|&ok| ok));
}

#[test]
fn remote_volumes_of_a_given_relabeling_are_counted_on_request() {
    // Planning with a given σ needs no volumes: they are counted when asked for, and
    // must match the volume matrix of the layouts (before) and of σ (after).
    let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(30, 20, 3, 4, 2, 2))
        .unwrap()
        .into();
    let dst: Layout = BlockCyclic::new(BlockCyclicSpec::new(20, 30, 5, 2, 2, 2))
        .unwrap()
        .into();
    let v = copr::volume::Volumes::compute(&src, &dst, Op::Transpose).unwrap();
    for sigma in [[1, 0, 3, 2], [0, 1, 2, 3], [3, 2, 0, 1]] {
        let perm = copr::lap::Perm::from_forward(sigma.to_vec()).unwrap();
        let want = (v.remote(), v.remote_after(&perm));
        let got = run_in_process(4, |t| {
            let plan = ReshufflePlan::new(
                t,
                vec![Transform::new(src.clone(), dst.clone(), Op::Transpose)
                    .with_relabeling(Relabeling::Given(perm.clone()))],
            )
            .unwrap();
            (
                plan.remote_before(0).unwrap(),
                plan.remote_after(0).unwrap(),
            )
        })
        .unwrap();
        assert!(
            got.iter().all(|&g| g == want),
            "σ = {sigma:?}: {got:?} != {want:?}"
        );
    }
}

#[test]
fn relabeling_removes_all_traffic_when_only_owners_differ() {
    // Same blocks, row-major grid -> column-major grid: σ makes everything local.
    let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(24, 24, 4, 4, 2, 3))
        .unwrap()
        .into();
    let mut d = BlockCyclicSpec::new(24, 24, 4, 4, 2, 3);
    d.grid_order = Order::ColMajor;
    let dst: Layout = BlockCyclic::new(d).unwrap().into();
    let r = run_in_process(6, |t| {
        let on = ReshufflePlan::new(
            t,
            vec![Transform::new(src.clone(), dst.clone(), Op::Identity)],
        )
        .unwrap();
        let off = ReshufflePlan::new(
            t,
            vec![Transform::new(src.clone(), dst.clone(), Op::Identity)
                .with_relabeling(Relabeling::Off)],
        )
        .unwrap();
        (
            on.remote_before(0).unwrap(),
            on.remote_after(0).unwrap(),
            on.messages_sent(),
            off.remote_after(0).unwrap(),
            off.messages_sent(),
            on.sigma(0).is_identity(),
        )
    })
    .unwrap();
    for &(before, after, msgs, off_after, off_msgs, id) in &r {
        assert!(before > 0);
        assert_eq!(after, 0);
        assert_eq!(msgs, 0);
        assert_eq!(off_after, before);
        assert!(!id);
        let _ = off_msgs;
    }
    assert!(r.iter().any(|x| x.4 > 0));
}

#[test]
fn a_given_sigma_is_applied_and_reported() {
    let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(12, 12, 3, 3, 2, 2))
        .unwrap()
        .into();
    let sigma = copr::lap::Perm::from_forward(vec![3, 2, 1, 0]).unwrap();
    let expect = src.relabeled(&sigma).unwrap();
    let cases = vec![engine_cases::PairCase {
        transform: Transform::new(src.clone(), src.clone(), Op::Identity)
            .with_relabeling(Relabeling::Given(sigma.clone())),
        alpha: 1,
        beta: 0,
    }];
    let r = run_in_process(4, |t| {
        let plan = ReshufflePlan::new(t, vec![cases[0].transform.clone()]).unwrap();
        assert_eq!(plan.target(0), &expect);
        assert_eq!(plan.sigma(0), &sigma);
        run_batch::<i32>(t, &cases, 2, "given σ")
    })
    .unwrap();
    all_ok(r);
}

#[test]
fn the_planners_sigma_is_applied() {
    use copr::plan::{Plan, Solver};
    let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(30, 20, 4, 3, 2, 3))
        .unwrap()
        .into();
    let mut d = BlockCyclicSpec::new(20, 30, 5, 5, 3, 2);
    d.grid_order = Order::ColMajor;
    let dst: Layout = BlockCyclic::new(d).unwrap().into();
    let plan = Plan::new(src, dst, Op::ConjTranspose, Solver::Sparse).unwrap();
    let expect = plan.relabeled_target().unwrap();
    let cases = vec![engine_cases::PairCase {
        // A is filled in the relabeled layout (β ≠ 0 reads it there): declared so.
        transform: Transform::from(&plan).with_contents(TargetContents::Relabeled),
        alpha: 3,
        beta: 2,
    }];
    let r = run_in_process(6, |t| {
        let p = ReshufflePlan::new(t, vec![cases[0].transform.clone()]).unwrap();
        assert_eq!(p.sigma(0), plan.sigma());
        assert_eq!(p.remote_after(0).unwrap(), plan.remote_after());
        for r in 0..6 {
            assert_eq!(p.target(0).local_blocks(r), expect.local_blocks(r));
        }
        run_batch::<Complex64>(t, &cases, 2, "planner σ")
    })
    .unwrap();
    all_ok(r);
}

#[test]
fn batches_send_one_message_per_peer() {
    // Three transforms of different types of layouts, all-to-all traffic.
    let p = 4;
    let a: Layout = BlockCyclic::new(BlockCyclicSpec::new(32, 32, 2, 2, 2, 2))
        .unwrap()
        .into();
    let mut s = BlockCyclicSpec::new(32, 32, 3, 5, 4, 1);
    s.local_order = Order::RowMajor;
    let b: Layout = BlockCyclic::new(s).unwrap().into();
    let g: Layout = Grid::from_parts(
        vec![0, 10, 32],
        vec![0, 7, 20, 32],
        vec![0, 1, 2, 3, 0, 1],
        Some(p),
        vec![RankStorage {
            order: Order::RowMajor,
            ld: Some(40),
        }],
    )
    .unwrap()
    .into();
    let cases: Vec<engine_cases::PairCase> = [
        (a.clone(), b.clone(), Op::Identity),
        (b, g.clone(), Op::Transpose),
        (g, a, Op::ConjTranspose),
    ]
    .into_iter()
    .map(|(x, y, op)| engine_cases::PairCase {
        transform: Transform::new(x, y, op).with_relabeling(Relabeling::Off),
        alpha: 3,
        beta: 4,
    })
    .collect();
    let r = run_in_process(p, |t| {
        let plan =
            ReshufflePlan::new(t, cases.iter().map(|c| c.transform.clone()).collect()).unwrap();
        assert!(plan.messages_sent() < p, "{}", plan.messages_sent());
        let (sent, recv, local) = plan.elements();
        assert!(sent + local > 0 && recv + local > 0);
        run_batch::<Complex64>(t, &cases, 3, "batch")
    })
    .unwrap();
    all_ok(r);
}

#[test]
fn plans_are_reused_without_reallocating() {
    let cases = large_case(3, 120, 90, Op::Transpose, true);
    all_ok(run_in_process(3, |t| run_batch::<f64>(t, &cases, 4, "reuse")).unwrap());
}

#[test]
fn a_panicking_in_process_rank_is_an_error_for_the_caller() {
    let r = run_in_process(3, |t| {
        if t.rank() == 1 {
            panic!("rank {} gives up", t.rank());
        }
        let mut all = vec![0u64; 3];
        // The other ranks' gather fails instead of waiting forever.
        t.all_gather(&[1], &mut all).is_err()
    });
    let e = r.expect_err("a rank panicked").to_string();
    assert!(e.contains("rank 1 panicked"), "{e}");
    assert!(e.contains("rank 1 gives up"), "{e}");
    // A literal panic message reaches the error too.
    let e = run_in_process(2, |t| {
        if t.rank() < 2 {
            panic!("plain words");
        }
        t.rank()
    })
    .expect_err("both ranks panicked")
    .to_string();
    assert!(e.contains("rank 0 panicked: plain words"), "{e}");
}
