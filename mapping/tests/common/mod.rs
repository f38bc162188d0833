//! Helpers shared by the mapper's tests: machines, every baseline's start, and the
//! enumeration of all permutations (the brute-force oracle).

#![allow(dead_code)]

use copr_mapping::{baseline, evaluate, MapMachine, Pattern, Scored, Strategy};
use copr_topology::{Torus, TorusParams};

/// A whole torus of `dims` with `rpn` ranks per node.
pub(crate) fn torus(dims: Vec<u32>, rpn: usize) -> MapMachine {
    MapMachine::torus(Torus::full(TorusParams::new(dims)).unwrap(), rpn).unwrap()
}

/// Every baseline's mapping, scored: the optimiser's starts.
pub(crate) fn starts(p: &Pattern, m: &MapMachine) -> Vec<Scored> {
    Strategy::BASELINES
        .iter()
        .filter_map(|&s| {
            baseline(s, p, m).unwrap().map(|map| Scored {
                origin: s.name().into(),
                metrics: evaluate(p, m, &map),
                map,
            })
        })
        .collect()
}

/// Calls `f` on every permutation of `0..n` (swaps, depth first).
pub(crate) fn all_perms(n: usize, f: &mut impl FnMut(&[usize])) {
    fn rec(v: &mut Vec<usize>, k: usize, f: &mut impl FnMut(&[usize])) {
        if k == v.len() {
            f(v);
            return;
        }
        for i in k..v.len() {
            v.swap(k, i);
            rec(v, k + 1, f);
            v.swap(k, i);
        }
    }
    rec(&mut (0..n).collect(), 0, f);
}
