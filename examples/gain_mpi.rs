//! Multi-rank check of the distributed relabeling gain (run under mpirun, e.g.
//! `mpirun -n 4 target/release/examples/gain_mpi`): for several layout pairs and cost
//! models, every rank's row of δ (computed from its own incoming packages) must equal the
//! serial table's row, and every rank must hold the same σ, equal to the serial solve;
//! the sparse candidate path (`Relabel::solve_on` with `Method::Sparse`) must give the serial sparse σ
//! with no rank's buffer longer than its candidates.
//! Exits non-zero on any mismatch.

use copr_testkit::layouts as common;

use std::sync::Arc;

use copr::gain::{self, PackageInput, Packages, TransformKind};
use copr::layout::Op;
use copr::relabel::{Method, Relabel};
use copr_cost_models::{
    CostModel, LatencyBandwidth, LocallyFreeVolume, Scaled, SolverHints, Sum, TransformCost,
};
use copr_topology::{InterNode, IntraNode, LinkCost, Machine, PlacementRule};
use mpi::topology::SimpleCommunicator;
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

/// The volume model, except that it names no candidates for label `.0`.
struct NoCandidatesOn(usize);

impl CostModel for NoCandidatesOn {
    fn cost(&self, from: usize, to: usize, pkg: &copr_cost_models::Package) -> f64 {
        LocallyFreeVolume.cost(from, to, pkg)
    }
    fn describe(&self) -> String {
        "volume without candidates on one label".into()
    }
    fn hints(&self) -> Option<&dyn SolverHints> {
        Some(self)
    }
}

impl SolverHints for NoCandidatesOn {
    fn candidates(
        &self,
        x: usize,
        incoming: &[(usize, copr_cost_models::Package)],
        out: &mut Vec<(usize, f64)>,
    ) -> Option<f64> {
        if x == self.0 {
            None
        } else {
            LocallyFreeVolume.candidates(x, incoming, out)
        }
    }
}

/// A layout redistributed onto itself, 8-byte elements.
fn onto_itself(l: &copr::layout::Layout) -> PackageInput<'_> {
    PackageInput {
        source: l,
        target: l,
        transform: TransformKind::default(),
        element_size: 8,
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises");
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let mut rng = ChaCha8Rng::seed_from_u64(p as u64);
    let mut checked = 0;
    let (mut sparse_rows, mut max_row) = (0usize, 0usize);
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
            let got = Relabel::from_layouts(model.as_ref(), &input)
                .method(Method::Dense)
                .solve_on(&world)
                .unwrap();
            let serial = gain::gain_matrix(model.as_ref(), &pk);
            assert_eq!(
                got.row,
                serial[me * p..(me + 1) * p],
                "case {case} {name}: row {me}"
            );
            // the exact σ, or the identity when it saves nothing (as the serial relabel)
            let expect = Relabel::cost(model.as_ref(), &pk)
                .method(Method::Dense)
                .solve()
                .unwrap()
                .sigma;
            assert_eq!(
                got.relabeled.sigma, expect,
                "case {case} {name}: σ on rank {me}"
            );
            // every rank holds the same σ
            let mine: Vec<u64> = got
                .relabeled
                .sigma
                .forward()
                .iter()
                .map(|&s| s as u64)
                .collect();
            let mut all = vec![0u64; p * p];
            world.all_gather_into(&mine[..], &mut all[..]);
            assert!(
                all.chunks(p).all(|c| c == &mine[..]),
                "σ differs between ranks"
            );
            // the sparse candidate rows: the same σ as the serial sparse solve, and no
            // rank holds more than its candidates (≤ 2 per sender node here, and itself)
            let sp = Relabel::from_layouts(model.as_ref(), &input)
                .method(Method::Sparse)
                .solve_on(&world)
                .unwrap();
            let serial_sp = Relabel::cost(model.as_ref(), &pk)
                .method(Method::Sparse)
                .solve()
                .unwrap();
            assert_eq!(
                sp.relabeled.sigma, serial_sp.sigma,
                "case {case} {name}: sparse σ on rank {me}"
            );
            let received = gain::incoming(&input, me).unwrap().len();
            assert!(sp.row_len <= sp.candidates, "case {case} {name}: {sp:?}");
            assert!(
                sp.candidates <= 2 * received + 1,
                "case {case} {name}: {} candidates for {received} senders",
                sp.candidates
            );
            let expect_gathered = if me == 0 { serial_sp.entries } else { 0 };
            assert_eq!(sp.gathered_len, expect_gathered, "case {case} {name}");
            let tol = 1e-9 * serial_sp.cost_before.abs().max(1e-300);
            assert!((sp.relabeled.saving - serial_sp.saving).abs() <= tol);
            assert!((sp.relabeled.bound - serial_sp.bound).abs() <= tol);
            sparse_rows += sp.row_len;
            max_row = max_row.max(sp.candidates);
            checked += 1;
        }
    }
    edge_cases(&world, &mut rng);
    let text = placement_everywhere(&world);
    if me == 0 {
        println!(
            "gain_mpi: placement discovered at run time:\n{}",
            text.trim_end()
        );
        println!("gain_mpi: {p} ranks, {checked} distributed relabelings (dense and sparse) match the serial ones");
        println!("gain_mpi: rank 0 sent {sparse_rows} sparse entries in all, at most {max_row} candidates per row");
    }
}

/// A layout onto itself (nothing to gain, short rows), a communicator that does not
/// match the layouts, and a model failing on one rank only.
fn edge_cases(world: &SimpleCommunicator, rng: &mut ChaCha8Rng) {
    let (me, p) = (world.rank() as usize, world.size() as usize);
    // a layout onto itself: every label receives from its own process only, so every
    // rank's candidates (its node, 2 ranks) are fewer than p: no p-long row anywhere
    if p >= 3 {
        let l = common::random_layout(rng, 40, 30, p).with_ranks(p).unwrap();
        let input = onto_itself(&l);
        for (name, model) in models(p) {
            let sp = Relabel::from_layouts(model.as_ref(), &input)
                .method(Method::Sparse)
                .solve_on(world)
                .unwrap();
            assert!(sp.candidates <= 2 && sp.candidates < p, "{name}: {sp:?}");
            assert!(sp.row_len < p && sp.gathered_len < p * p, "{name}: {sp:?}");
            assert!(sp.relabeled.sigma.is_identity(), "{name}: nothing to gain");
        }
    }
    // a communicator that does not match the layouts is refused on every rank
    let src = common::random_layout(rng, 5, 5, p + 1)
        .with_ranks(p + 1)
        .unwrap();
    let input = onto_itself(&src);
    assert!(Relabel::from_layouts(&LocallyFreeVolume, &input)
        .method(Method::Dense)
        .solve_on(world)
        .is_err());
    // a model that names no candidates on rank 1 only: rank 1 fails by itself, and every
    // other rank must learn of it and return an error too (without the agreement they
    // would wait in the gather forever)
    if p >= 2 {
        let l = common::random_layout(rng, 20, 20, p).with_ranks(p).unwrap();
        let input = onto_itself(&l);
        let err = Relabel::from_layouts(&NoCandidatesOn(1), &input)
            .method(Method::Sparse)
            .solve_on(world)
            .unwrap_err();
        let msg = err.to_string();
        if me == 1 {
            assert!(msg.contains("candidates"), "rank 1: {msg}");
        } else {
            assert!(msg.contains("another rank failed"), "rank {me}: {msg}");
        }
    }
}

/// The placement discovered at run time, checked to be the same on every rank and to
/// put each rank on its own host; its text.
fn placement_everywhere(world: &SimpleCommunicator) -> String {
    let (me, p) = (world.rank() as usize, world.size() as usize);
    // run-time placement: every rank sees the same placement, and itself on its own host
    let placement = gain::mpi::discover_placement(world).unwrap();
    let host = mpi::environment::processor_name().unwrap();
    assert_eq!(placement.node_name(placement.node_of(me)), host);
    let text = placement.to_text();
    let mut lens = vec![0u64; p];
    world.all_gather_into(&(text.len() as u64), &mut lens[..]);
    assert!(
        lens.iter().all(|&l| l == text.len() as u64),
        "placements differ between ranks"
    );
    text
}
