//! Each model's formula on hand-computed cases, the empty package, trait
//! objects, and composition laws (property tests).

use std::sync::Arc;

use copr_cost_models::{
    BlockFacts, CostModel, FnModel, LatencyBandwidth, LocalityPenalty, LocallyFreeVolume, Package,
    Scaled, Sum, TransformCost,
};
use copr_topology::{InterNode, IntraNode, LinkCost, Machine, PlacementRule};
use proptest::prelude::*;

fn machine() -> Arc<Machine> {
    // 4 ranks, 2 per node: intra L = 1, B = 0.5; inter L = 10, B = 2.
    Arc::new(
        Machine::builder()
            .intra(IntraNode::Uniform(LinkCost::new(1.0, 0.5).unwrap()))
            .inter(InterNode::Uniform(LinkCost::new(10.0, 2.0).unwrap()))
            .rule(PlacementRule::packed(4, Some(2)))
            .build()
            .unwrap(),
    )
}

fn all_models() -> Vec<Box<dyn CostModel>> {
    vec![
        Box::new(LocallyFreeVolume),
        Box::new(LatencyBandwidth::new(machine())),
        Box::new(TransformCost::default()),
        Box::new(LocalityPenalty::default()),
        Box::new(Sum::new(vec![
            Box::new(LocallyFreeVolume) as Box<dyn CostModel>,
            Box::new(LatencyBandwidth::new(machine())),
        ])),
        Box::new(Scaled::new(3.0, LocallyFreeVolume).unwrap()),
        Box::new(FnModel::new(
            "constant 7",
            |_: usize, _: usize, _: &Package| 7.0,
        )),
    ]
}

#[test]
fn volume_formula() {
    let p = Package::plain(1234);
    assert_eq!(LocallyFreeVolume.cost(0, 1, &p), 1234.0);
    assert_eq!(LocallyFreeVolume.cost(2, 2, &p), 0.0);
}

#[test]
fn latency_bandwidth_formula() {
    let w = LatencyBandwidth::new(machine());
    let p = Package::plain(100);
    assert_eq!(w.cost(0, 1, &p), 1.0 + 0.5 * 100.0); // same node
    assert_eq!(w.cost(1, 2, &p), 10.0 + 2.0 * 100.0); // other node
    assert_eq!(w.cost(3, 3, &p), 0.0);
    assert_eq!(w.ranks(), Some(4));
}

#[test]
fn transform_formula() {
    let w = TransformCost {
        scale: 2.0,
        transpose: 3.0,
        conjugate: 5.0,
        remote_only: false,
    };
    let p = Package::from_blocks(&[
        BlockFacts::contiguous(10).scaled(),
        BlockFacts::strided(4, 5).transposed().conjugated(),
        BlockFacts::contiguous(7),
    ]);
    assert_eq!(p.bytes, 37);
    assert_eq!(w.cost(0, 1, &p), 2.0 * 10.0 + 3.0 * 20.0 + 5.0 * 20.0);
    assert_eq!(w.cost(1, 1, &p), 180.0); // transform happens on local copies too
    let remote = TransformCost {
        remote_only: true,
        ..w
    };
    assert_eq!(remote.cost(1, 1, &p), 0.0);
    assert_eq!(w.cost(0, 1, &Package::plain(100)), 0.0); // nothing to transform
}

#[test]
fn locality_formula_and_small_blocks_cost_more() {
    let w = LocalityPenalty {
        per_block: 100.0,
        per_segment: 10.0,
        per_strided_byte: 1.0,
        per_padding_byte: 0.5,
        per_misaligned_block: 1000.0,
        remote_only: false,
    };
    let p = Package::from_blocks(&[
        BlockFacts::contiguous(64),
        BlockFacts::strided(8, 16).padded(6).misaligned(),
    ]);
    assert_eq!(
        w.cost(0, 1, &p),
        2.0 * 100.0 + 8.0 * 10.0 + 128.0 + 3.0 + 1000.0
    );
    // Same bytes, shorter rows: more expensive.
    let long = Package::from_blocks(&[BlockFacts::strided(4, 256)]);
    let short = Package::from_blocks(&[BlockFacts::strided(64, 16)]);
    assert_eq!(long.bytes, short.bytes);
    assert!(w.cost(0, 1, &short) > w.cost(0, 1, &long));
    // Contiguous is cheapest.
    assert!(w.cost(0, 1, &Package::plain(1024)) < w.cost(0, 1, &long));
    // Many small blocks cost more than one large one.
    let many = Package::from_blocks(&[BlockFacts::contiguous(128); 8]);
    assert!(w.cost(0, 1, &many) > w.cost(0, 1, &Package::plain(1024)));
}

#[test]
fn sum_scaled_fn() {
    let p = Package::plain(10);
    let w = Sum::new(vec![
        Box::new(Scaled::new(2.0, LocallyFreeVolume).unwrap()) as Box<dyn CostModel>,
        Box::new(FnModel::new("i+j", |i: usize, j: usize, _: &Package| {
            (i + j) as f64
        })),
    ]);
    assert_eq!(w.cost(1, 2, &p), 2.0 * 10.0 + 3.0);
    assert_eq!(w.cost(2, 2, &p), 4.0);
    assert!(w.describe().contains("i+j"));
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let e = Scaled::new(bad, LocallyFreeVolume).unwrap_err().to_string();
        assert!(e.contains("weight"), "{e}");
    }
    assert_eq!(Sum::<LocallyFreeVolume>::new(vec![]).cost(0, 1, &p), 0.0);
}

#[test]
fn empty_package_costs_nothing_in_every_model() {
    let mut weird = Package::EMPTY;
    weird.blocks = 3; // empty blocks: still no bytes
    weird.locality.segments = 5;
    weird.locality.misaligned_blocks = 3;
    for w in all_models() {
        for (i, j) in [(0, 1), (1, 0), (2, 2), (0, 3)] {
            assert_eq!(w.cost(i, j, &Package::EMPTY), 0.0, "{}", w.describe());
            assert_eq!(w.cost(i, j, &weird), 0.0, "{}", w.describe());
        }
    }
}

#[test]
fn trait_objects_work() {
    let models = all_models();
    let arc: Arc<dyn CostModel> = Arc::new(LocallyFreeVolume);
    let by_ref: &dyn CostModel = &LocallyFreeVolume;
    let p = Package::plain(5);
    assert_eq!(arc.cost(0, 1, &p), 5.0);
    assert_eq!(by_ref.cost(0, 1, &p), 5.0);
    // Box<dyn CostModel> is itself a CostModel and composes.
    let nested: Box<dyn CostModel> = Box::new(Sum::new(models));
    assert!(nested.cost(0, 1, &p) > 0.0);
    // Send + Sync: usable from threads.
    let shared = Arc::new(nested);
    let handles: Vec<_> = (0..2)
        .map(|t| {
            let s = Arc::clone(&shared);
            std::thread::spawn(move || s.cost(t, 3, &Package::plain(1)))
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap() > 0.0);
    }
}

fn arb_block() -> impl Strategy<Value = BlockFacts> {
    (
        1u64..20,
        1u64..500,
        any::<bool>(),
        0u64..64,
        any::<[bool; 4]>(),
    )
        .prop_map(|(rows, rb, contig, pad, f)| {
            let mut b = if contig {
                BlockFacts::contiguous(rows * rb)
            } else {
                BlockFacts::strided(rows, rb)
            };
            b.padding_bytes = pad;
            b.aligned = f[0];
            b.scale = f[1];
            b.transpose = f[2];
            b.conjugate = f[3];
            b
        })
}

proptest! {
    #[test]
    fn composition_laws(blocks in proptest::collection::vec(arb_block(), 0..8), i in 0usize..4, j in 0usize..4, a in 0.0f64..10.0) {
        let p = Package::from_blocks(&blocks);
        // merge == aggregate of all blocks
        let (l, r) = blocks.split_at(blocks.len() / 2);
        let mut m = Package::from_blocks(l);
        m.merge(&Package::from_blocks(r));
        prop_assert_eq!(m, p);
        prop_assert_eq!(p.locality.contiguous_bytes + p.locality.strided_bytes, p.bytes);
        let models = all_models();
        let total: f64 = models.iter().map(|w| w.cost(i, j, &p)).sum();
        let sum = Sum::new(all_models());
        prop_assert!((sum.cost(i, j, &p) - total).abs() <= 1e-9 * total.abs().max(1.0));
        for w in &models {
            let c = w.cost(i, j, &p);
            prop_assert!(c >= 0.0 && c.is_finite());
            let s = Scaled::new(a, w).unwrap();
            prop_assert!((s.cost(i, j, &p) - a * c).abs() <= 1e-12 * (a * c).abs().max(1.0));
        }
    }
}

#[test]
fn volume_scale_marks_exactly_the_volume_models() {
    use copr_cost_models::{CostModel, LocallyFreeVolume, Scaled, Sum, TransformCost};
    assert_eq!(LocallyFreeVolume.volume_scale(), Some(1.0));
    let s = Scaled::new(2.5, LocallyFreeVolume).unwrap();
    assert_eq!(s.volume_scale(), Some(2.5));
    let both: Sum<Box<dyn CostModel>> = Sum::new(vec![Box::new(LocallyFreeVolume), Box::new(s)]);
    assert_eq!(both.volume_scale(), Some(3.5));
    let mixed: Sum<Box<dyn CostModel>> = Sum::new(vec![
        Box::new(LocallyFreeVolume),
        Box::new(TransformCost::default()),
    ]);
    assert_eq!(mixed.volume_scale(), None);
}
