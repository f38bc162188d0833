//! Multi-rank check of the distributed relabeling gain (run under mpirun, e.g.
//! `mpirun -n 4 target/release/examples/gain_mpi`): for several layout pairs and cost
//! models, every rank's row of δ (computed from its own incoming packages) must equal the
//! serial table's row, and every rank must hold the same σ, equal to the serial solve.
//! Exits non-zero on any mismatch.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::lap::dense_max;
use copr::layout::Op;
use copr_cost_models::{
    CostModel, LatencyBandwidth, LocallyFreeVolume, Scaled, Sum, TransformCost,
};
use copr_topology::{InterNode, IntraNode, LinkCost, Machine, PlacementRule};
use mpi::traits::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn models(p: usize) -> Vec<(&'static str, Box<dyn CostModel>)> {
    // two ranks per node: cheap inside a node, dearer between nodes
    let machine = Arc::new(
        Machine::builder()
            .intra(IntraNode::Uniform(LinkCost::new(3e-7, 1e-10).unwrap()))
            .inter(InterNode::Uniform(LinkCost::new(2e-6, 1e-9).unwrap()))
            .rule(PlacementRule::packed(p, Some(2)))
            .build()
            .unwrap(),
    );
    vec![
        ("volume", Box::new(LocallyFreeVolume)),
        (
            "latency-bandwidth",
            Box::new(LatencyBandwidth::new(machine.clone())),
        ),
        (
            "sum",
            Box::new(Sum::<Box<dyn CostModel>>::new(vec![
                Box::new(LatencyBandwidth::new(machine)),
                Box::new(TransformCost {
                    scale: 0.0,
                    transpose: 2e-10,
                    conjugate: 0.0,
                    remote_only: false,
                }),
                Box::new(Scaled::new(1e-11, LocallyFreeVolume).unwrap()),
            ])),
        ),
    ]
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises");
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let mut rng = ChaCha8Rng::seed_from_u64(p as u64);
    let mut checked = 0;
    for case in 0..12 {
        let (m, n) = (rng.random_range(1..60), rng.random_range(1..60));
        let op = [Op::Identity, Op::Transpose][case % 2];
        let (sm, sn) = if op.transposes() { (n, m) } else { (m, n) };
        // both layouts live on exactly the communicator's ranks
        let src = common::random_layout(&mut rng, sm, sn, p)
            .with_ranks(p)
            .unwrap();
        let dst = common::random_layout(&mut rng, m, n, p)
            .with_ranks(p)
            .unwrap();
        let input = PackageInput {
            source: &src,
            target: &dst,
            transform: TransformKind { op, scale: false },
            element_size: 8,
        };
        let pk = Packages::compute(&input).unwrap();
        for (name, model) in models(p) {
            let got = gain::mpi::relabel(&world, model.as_ref(), &input).unwrap();
            let serial = gain::gain_matrix(model.as_ref(), &pk);
            assert_eq!(
                got.row,
                serial[me * p..(me + 1) * p],
                "case {case} {name}: row {me}"
            );
            // the exact σ, or the identity when it saves nothing (as the serial relabel)
            let expect = gain::keep_if_gain(
                p,
                &serial,
                dense_max(p, &serial).unwrap(),
                pk.total_cost(model.as_ref(), None),
            );
            assert_eq!(got.sigma, expect, "case {case} {name}: σ on rank {me}");
            // every rank holds the same σ
            let mine: Vec<u64> = got.sigma.forward().iter().map(|&s| s as u64).collect();
            let mut all = vec![0u64; p * p];
            world.all_gather_into(&mine[..], &mut all[..]);
            assert!(
                all.chunks(p).all(|c| c == &mine[..]),
                "σ differs between ranks"
            );
            checked += 1;
        }
    }
    // a communicator that does not match the layouts is refused on every rank
    let src = common::random_layout(&mut rng, 5, 5, p + 1)
        .with_ranks(p + 1)
        .unwrap();
    let input = PackageInput {
        source: &src,
        target: &src,
        transform: TransformKind::default(),
        element_size: 8,
    };
    assert!(gain::mpi::relabel(&world, &LocallyFreeVolume, &input).is_err());
    // run-time placement: every rank sees the same placement, and itself on its own host
    let placement = gain::mpi::discover_placement(&world).unwrap();
    let host = mpi::environment::processor_name().unwrap();
    assert_eq!(placement.node_name(placement.node_of(me)), host);
    let text = placement.to_text();
    let mut lens = vec![0u64; p];
    world.all_gather_into(&(text.len() as u64), &mut lens[..]);
    assert!(
        lens.iter().all(|&l| l == text.len() as u64),
        "placements differ between ranks"
    );
    if me == 0 {
        println!(
            "gain_mpi: placement discovered at run time:\n{}",
            text.trim_end()
        );
        println!("gain_mpi: {p} ranks, {checked} distributed relabelings match the serial ones");
    }
}
