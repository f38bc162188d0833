//! The independent work of a multilevel bisection on both cores, with the results of
//! the serial order.
//!
//! A bisection try draws all of its random numbers while it coarsens (the matching
//! orders and the growths' seeds, [`coarsen_levels`]); what follows (the growths, their
//! Fiduccia–Mattheyses passes, the uncoarsening, [`refine_levels`]) is a function of
//! those draws alone. So the tries of one bisection can draw from the one generator in
//! turn, as they would one after the other, while each refines as soon as it has drawn:
//! try `k + 1` coarsens while try `k` refines. The choice is the serial loop's (the
//! first least cost), so the bisection, and the generator's state after it, are the
//! same whatever the number of threads.

use super::{coarsen_levels, grow, refine_levels, Effort, Graph};
use copr::rng::SplitMix;

/// The least-cost bisection of `tries` multilevel tries ([`super::bisect`] each, from
/// `rng` in turn), the first one on ties: what the tries give one after the other, with
/// each try's refinement running while the next one coarsens.
pub(super) fn best_try(
    g: &Graph,
    want0: i64,
    rng: &mut SplitMix,
    effort: Effort,
    tries: usize,
) -> Vec<u8> {
    tries_from(g, want0, rng, effort, tries.max(1))
        .into_iter()
        .reduce(|a, b| if b.0 < a.0 { b } else { a })
        .map(|x| x.1)
        .expect("at least one try")
}

/// The `(cost, bisection)` of `k ≥ 1` tries, in the order they draw from `rng`.
fn tries_from(
    g: &Graph,
    want0: i64,
    rng: &mut SplitMix,
    effort: Effort,
    k: usize,
) -> Vec<(i64, Vec<u8>)> {
    let c = coarsen_levels(g, want0, rng, effort);
    let finish = move || {
        let side = refine_levels(g, c, want0, effort);
        (g.cost(&side), side)
    };
    if k <= 1 {
        return vec![finish()];
    }
    let (first, mut rest) = rayon::join(finish, || tries_from(g, want0, rng, effort, k - 1));
    rest.insert(0, first);
    rest
}

/// The best bisection of the coarsest graph `g` among greedy growths from `seeds` (to
/// side-0 weight `want0` within `tol`), each improved by `finish`, which returns its
/// key: the first least key, and a growth equal to an earlier one is not finished again
/// (its key would be the same). `None` without seeds. (One after the other: side by
/// side, on a machine busy with other work, the many short growths cost more in
/// waiting for the other thread than they save.)
pub(super) fn best_growth<F>(
    g: &Graph,
    seeds: &[usize],
    want0: i64,
    tol: i64,
    finish: F,
) -> Option<Vec<u8>>
where
    F: Fn(&mut Vec<u8>) -> (i64, i64),
{
    let grown: Vec<Vec<u8>> = seeds.iter().map(|&s| grow(g, s, want0, tol)).collect();
    let done: Vec<((i64, i64), Vec<u8>)> = grown
        .iter()
        .enumerate()
        .filter(|&(i, side)| !grown[..i].contains(side))
        .map(|(_, side)| {
            let mut side = side.clone();
            (finish(&mut side), side)
        })
        .collect();
    done.into_iter()
        .reduce(|a, b| if b.0 < a.0 { b } else { a })
        .map(|x| x.1)
}

#[cfg(test)]
mod tests {
    use super::super::tests::random_graph;
    use super::super::{bisect, EXTERNAL};
    use super::*;

    #[test]
    fn tries_choose_as_one_after_the_other() {
        // sparse and dense graphs, one to three tries: the bisection and the generator's state after it are the
        // serial loop's, in a pool of two threads
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut differ = 0;
        for (k, &(n, degree)) in [(300, 8), (500, 120), (700, 200)].iter().enumerate() {
            let mut g = random_graph(n, degree, 40 + k as u64);
            g.vw = vec![1; n];
            for tries in 1..=3 {
                let want0 = (n / 2 - k) as i64;
                let mut a = SplitMix(5 + tries as u64);
                let mut b = a.clone();
                let serial = (0..tries)
                    .map(|_| {
                        let side = bisect(&g, want0, &mut a, EXTERNAL);
                        (g.cost(&side), side)
                    })
                    .min_by_key(|x| x.0)
                    .unwrap()
                    .1;
                let both = pool.install(|| best_try(&g, want0, &mut b, EXTERNAL, tries));
                assert_eq!(serial, both, "{n} vertices, degree {degree}, {tries} tries");
                assert_eq!(a.next_u64(), b.next_u64());
                // the tries do differ, so the choice among them is tested
                let mut c = SplitMix(5 + tries as u64);
                let first = bisect(&g, want0, &mut c, EXTERNAL);
                differ += usize::from(first != both);
            }
        }
        assert!(differ > 0, "every try's first bisection was the best");
    }
}
