//! The two-stage way for graphs of more than [`super::MAX_TASKS`] tasks: node groups
//! from a partition of the graph alone, then their quotient placed on the machine.
//!
//! 1. **Groups.** The graph is cut into `nodes` parts of exactly `k` tasks (a node's
//!    slot count) by the multilevel recursive bisection on a machine whose nodes are
//!    all one hop apart (so the bisection keeps bytes inside parts and nothing else),
//!    and each part's tasks are then swapped between parts ([`Groups::refine`]) while
//!    that keeps more bytes inside.
//! 2. **Placement.** The quotient graph (one vertex per group, the bytes between
//!    groups) is mapped onto the machine with one slot per node by the multilevel
//!    dual bisection, each part on its own ([`classic_for`]) and then annealed by swaps of groups
//!    ([`anneal_for`]), and with external gains measured between the centres of the
//!    machine's parts (`multilevel::QUOTIENT`; its busiest link is often the less
//!    busy), that one then swapped further by groups on the link loads with its
//!    hop-bytes held ([`links::lower_busiest_link`]).
//! 3. **Expansion.** Each group's tasks go onto its node's slots; the optimiser then
//!    refines the tasks like any other candidate.

use std::time::Instant;

use super::{expand, links, place, Anneal, Groups};
use crate::machine::MapMachine;
use crate::multilevel;
use crate::pattern::Pattern;
use copr::error::Result;
use copr::lap::Perm;
use copr::rng::SplitMix;

/// Above this many tasks the multilevel mapper's dual bisection keeps the graphs (a
/// mapping of 10⁵ tasks within seconds).
pub(crate) const MAX_TASKS: usize = 16_384;

/// Whether the two-stage candidates replace the multilevel mapper's for `p` on `m`: a
/// graph (not a grid) of more than [`super::MAX_TASKS`] and at most [`MAX_TASKS`]
/// tasks filling a machine of at least three nodes of several slots. On the
/// benchmark's meshes, SpMV and power-law graphs of 4096 and 16 384 tasks they keep
/// more bytes inside nodes and give fewer hop-bytes (`benches/RESULTS.md`).
pub(crate) fn replaces_multilevel(p: &Pattern, m: &MapMachine) -> bool {
    p.grid_spec().is_none()
        && p.tasks() > super::MAX_TASKS
        && p.tasks() <= MAX_TASKS
        && p.tasks() == m.slots()
        && m.used_slots() == m.slots()
        && m.nodes() >= 3
        && m.ranks_per_node() >= 2
}

/// The annealing of the quotient's placement: [`Anneal::LONG`]'s kind of moves (half
/// of them next to a partner's node), without the `O(G²)` descents, 3000 per group
/// unless that looks at more than [`ANNEAL_WORK`] partners in all (a move costs the
/// partners of the two groups swapped), then fewer, at least 500 a group.
///
/// On the benchmark's 16 384-task graphs (1024 groups; quotients of 13 partners per
/// group for the 3-D mesh, 27 for SpMV, 65 for the power-law graph), 1000 instead of
/// 3000 moves a group left the annealed hop-bytes 11 % higher on the mesh, 1.2 % on
/// SpMV and 1.7 % on the power-law graph, whose 3000 moves a group took 1.5 s at load
/// 5 (0.25 s for the 738 it now gets). A group's moves look at no more than
/// [`GROUP_WORK`] partners either: the 256 groups of 4096 tasks get 3000 on the
/// meshes and SpMV (12–13 partners; 1000 left the 3-D mesh's busiest link 20 % higher
/// at seed 1) and 1500 on the power-law graph (57 partners: at seeds 1–8 its busiest
/// link met Scotch's best at 7 seeds with 1500, at 6 with 3000; 842 had missed it at
/// one seed of four before the later link steps existed).
pub(crate) fn anneal_for(q: &Pattern) -> Anneal {
    let groups = q.tasks().max(1);
    // the mean number of partners of a group
    let partners = q.undirected_ref().1.len() / groups;
    Anneal {
        moves_per_group: moves_per_group(groups, partners),
        near_partners: true,
        descend: false,
        max_work: usize::MAX,
    }
}

/// The effort of the quotient's dual bisection, each part on its own:
/// [`multilevel::CLASSIC`], or on a quotient of more than [`DENSE_PARTNERS`] partners
/// a group on average [`multilevel::CLASSIC_DENSE`] (two tries and eight growths
/// instead of four and 24). On the power-law graphs of cases j (57 partners a group
/// at 4096 tasks, 65 at 16 384) the bisection took 0.08–0.10 s of CPU at 4096 tasks
/// and 0.38 at 16 384, 0.03 and 0.13 with the lighter effort; the chosen mappings
/// stayed within Scotch's best at seeds 1–8 (4096) and 1–2 (16 384), mean hop-bytes
/// 2353.9 → 2356.1 MB and busiest link 967.0 → 930.0 µs at 4096 tasks
/// (`benches/RESULTS.md`, "fifteenth round"). The meshes' and SpMV's quotients (5–27
/// partners) keep [`multilevel::CLASSIC`].
fn classic_for(q: &Pattern) -> multilevel::Effort {
    let partners = q.undirected_ref().1.len() / q.tasks().max(1);
    if partners > DENSE_PARTNERS {
        multilevel::CLASSIC_DENSE
    } else {
        multilevel::CLASSIC
    }
}

/// Partners a group on average above which the quotient's bisection is lighter
/// ([`classic_for`]).
const DENSE_PARTNERS: usize = 32;

/// [`anneal_for`]'s moves a group on `groups` groups of `partners` partners each on
/// average.
fn moves_per_group(groups: usize, partners: usize) -> usize {
    let work = (ANNEAL_WORK / groups.max(1)).min(GROUP_WORK);
    (work / partners.max(1)).clamp(500, 3000)
}

/// The annealing's work, in partners looked at, over all moves (see [`anneal_for`]):
/// 48 000 a group of 1024.
const ANNEAL_WORK: usize = 48_000 * 1024;

/// The annealing's work a group, in partners looked at, at most (see [`anneal_for`]):
/// 1500 moves of 57 partners. Above 1024 groups [`ANNEAL_WORK`] is the smaller.
const GROUP_WORK: usize = 1500 * 57;

/// At most this many tries a group for the busiest link of the placement with
/// external gains ([`links::lower_busiest_link`], hop-bytes held): on SpMV 4096 (256
/// groups) 3.28 → 2.61 µs with 7.87 → 7.56 MB of hop-bytes at 64 tries a group, 0.1 s
/// at load 8; on SpMV 16 384 4.77 → 4.18 µs. 24 rather than 64: the same (case, seed)
/// pairs met on cases j, and less time on the meshes (`benches/RESULTS.md`).
const LINK_TRIES: usize = 24;

/// Task → group: `nodes` groups of exactly `k` tasks keeping as many bytes inside as
/// the multilevel recursive bisection of the graph alone finds (module docs; with the
/// effort the multilevel mapper gives `p`), before the swaps; `None` when `deadline`
/// passes first or the sizes do not match.
///
/// # Complexity
/// That of [`multilevel::dual_bisection`]: `O((n + m) log n)` per level, about
/// `log₂ nodes` levels.
pub(crate) fn partition(
    p: &Pattern,
    nodes: usize,
    k: usize,
    rng: &mut SplitMix,
    deadline: Instant,
) -> Option<Vec<u32>> {
    if nodes.checked_mul(k) != Some(p.tasks()) {
        return None;
    }
    let flat = MapMachine::flat(nodes, k).ok()?;
    let map = multilevel::dual_bisection(p, &flat, rng, deadline, multilevel::effort_for(p))?;
    Some((0..p.tasks()).map(|t| (map.apply(t) / k) as u32).collect())
}

/// A grouping refined by swaps ([`Groups::refine`]), with the bytes it keeps inside.
fn refined(p: &Pattern, of: Vec<u32>, nodes: usize, rng: &mut SplitMix) -> (i128, Vec<u32>) {
    let mut g = Groups::new(p.undirected_ref(), of, nodes);
    g.refine(rng);
    (g.kept(), g.of)
}

/// The two-stage mappings of `p` on `m` (module docs), as `(description, mapping)`:
/// the graph's partition refined by swaps, its quotient placed by the dual bisection,
/// each part on its own and then annealed, and by the dual bisection with external
/// gains, then with its busiest link lowered. Empty when the pattern does not fill the machine, a node holds one
/// slot or there are fewer than three nodes; stops at `deadline` with what is finished.
///
/// # Errors
/// Never in practice: the quotient graph and the one-slot machine are built from
/// valid inputs.
pub(crate) fn candidates(
    p: &Pattern,
    m: &MapMachine,
    seed: u64,
    deadline: Instant,
) -> Result<Vec<(String, Perm)>> {
    let (k, nodes) = (m.ranks_per_node(), m.nodes());
    if p.tasks() != m.slots() || m.used_slots() != m.slots() || nodes < 3 || k < 2 {
        return Ok(Vec::new());
    }
    // streams of their own, so that the optimiser's other steps see the same numbers
    let mut rng = SplitMix(seed ^ 0x6c61_7267_6532);
    let Some(of) = partition(p, nodes, k, &mut rng, deadline) else {
        return Ok(Vec::new());
    };
    let (_, of) = refined(p, of, nodes, &mut rng);
    let (q, _) = p.quotient(&of, nodes, "node groups".into())?;
    let m1 = m.clone().with_ranks_per_node(1)?;
    let mut prng = SplitMix(seed ^ 0x7175_6f74_6965);
    let mut out = Vec::new();
    let what = "two-stage: graph partitioned into node groups";
    // each part placed on its own (then annealed), and with external gains (a less
    // busy link, not annealed: the annealing lowers the hop-bytes, not the loads; its
    // loads spread by swaps of groups instead). The annealing and the second
    // placement run at once: each is a function of its inputs, the seed and the
    // deadline (the second bisection's random numbers follow the first's), so the
    // placements are those of one after the other
    let classic = multilevel::dual_bisection(&q, &m1, &mut prng, deadline, classic_for(&q));
    let (annealed, spread) = rayon::join(
        || {
            classic
                .filter(|_| crate::clock::now() < deadline)
                .map(|start| place(&q, &m1, &start, anneal_for(&q), seed, deadline))
        },
        || {
            multilevel::dual_bisection(&q, &m1, &mut prng, deadline, multilevel::QUOTIENT)
                .map(|pl| links::lower_busiest_link(&q, &m1, &pl, 0.0, LINK_TRIES, seed, deadline))
        },
    );
    if let Some(pl) = annealed {
        out.push((
            format!("{what}, quotient by dual bisection, groups annealed"),
            expand(&of, &pl, k),
        ));
    }
    if let Some(pl) = spread {
        out.push((
            format!("{what}, quotient by dual bisection with external gains, links spread"),
            expand(&of, &pl, k),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Edge;
    use std::time::Duration;

    /// `cliques` cliques of `k` tasks (1000 bytes each way inside), numbered
    /// interleaved (task `t` in clique `t % cliques`), each task also sending 10 bytes
    /// to the next task (a ring through every clique).
    fn planted(cliques: usize, k: usize) -> Pattern {
        let n = cliques * k;
        let mut edges = Vec::new();
        for t in 0..n {
            for s in 0..n {
                if s != t && s % cliques == t % cliques {
                    edges.push(Edge {
                        src: t as u32,
                        dst: s as u32,
                        bytes: 1000,
                    });
                }
            }
            let s = (t + 1) % n;
            if s % cliques != t % cliques {
                edges.push(Edge {
                    src: t as u32,
                    dst: s as u32,
                    bytes: 10,
                });
            }
        }
        Pattern::from_edges(n, edges, "planted cliques".into()).expect("valid")
    }

    fn far() -> Instant {
        crate::clock::now() + Duration::from_secs(60)
    }

    #[test]
    fn the_bisection_of_dense_quotients_is_lighter() {
        // every group a partner of every other: 39 partners on 40 groups, 31 on 32
        let complete = |n: u32| {
            let edges = (0..n)
                .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
                .map(|(src, dst)| Edge {
                    src,
                    dst,
                    bytes: 10,
                })
                .collect();
            Pattern::from_edges(n as usize, edges, "complete".into()).expect("valid")
        };
        assert_eq!(classic_for(&complete(40)), multilevel::CLASSIC_DENSE);
        assert_eq!(classic_for(&complete(33)), multilevel::CLASSIC);
        assert_eq!(classic_for(&complete(32)), multilevel::CLASSIC);
        // the planted cliques' quotient: a ring of groups
        let p = planted(32, 8);
        let of: Vec<u32> = (0..p.tasks()).map(|t| (t % 32) as u32).collect();
        let (q, _) = p.quotient(&of, 32, "q".into()).expect("valid");
        assert_eq!(classic_for(&q), multilevel::CLASSIC);
    }

    #[test]
    fn the_annealing_of_dense_quotients_is_shorter() {
        // 256 groups (4096 tasks): 3000 moves a group on sparse quotients, 1500 on
        // the power-law graph's 57 partners
        assert_eq!(moves_per_group(256, 5), 3000);
        assert_eq!(moves_per_group(256, 13), 3000);
        assert_eq!(moves_per_group(256, 57), 1500);
        // 1024 groups (16 384 tasks): the total work decides, as before
        assert_eq!(moves_per_group(1024, 13), 3000);
        assert_eq!(moves_per_group(1024, 27), 1777);
        assert_eq!(moves_per_group(1024, 65), 738);
        // at least 500, and no partners count as one
        assert_eq!(moves_per_group(256, 1000), 500);
        assert_eq!(moves_per_group(256, 0), 3000);
    }

    #[test]
    fn the_partition_has_exact_sizes_and_finds_planted_cliques() {
        let (cliques, k) = (32, 8);
        let p = planted(cliques, k);
        let of = partition(&p, cliques, k, &mut SplitMix(5), far()).expect("in time");
        let (_, of) = refined(&p, of, cliques, &mut SplitMix(6));
        for g in 0..cliques as u32 {
            assert_eq!(of.iter().filter(|&&x| x == g).count(), k, "group {g}");
        }
        for (t, &g) in of.iter().enumerate() {
            assert_eq!(g, of[t % cliques], "task {t} is not with its clique");
        }
        // sizes that do not fill the nodes: no partition
        assert!(partition(&p, cliques, k + 1, &mut SplitMix(5), far()).is_none());
    }

    #[test]
    fn candidates_are_permutations_with_the_cliques_on_nodes() {
        let (cliques, k) = (32, 8);
        let p = planted(cliques, k);
        let m = crate::torus_machine(vec![4, 4, 2], None, None, k).expect("valid");
        let packed = Perm::identity(p.tasks());
        let found = candidates(&p, &m, 3, far()).expect("valid");
        assert!(!found.is_empty());
        for (name, map) in &found {
            assert!(name.starts_with("two-stage: graph partitioned"), "{name}");
            let mut seen = vec![false; p.tasks()];
            for t in 0..p.tasks() {
                let s = map.apply(t);
                assert!(!std::mem::replace(&mut seen[s], true), "slot {s} twice");
                assert_eq!(s / k, map.apply(t % cliques) / k, "{name}: task {t}");
            }
        }
        // the ring between cliques is laid on neighbouring nodes: no more hop-bytes
        // than packed's scattered cliques
        let packed_hb = crate::evaluate(&p, &m, &packed).hop_bytes;
        let hb = crate::evaluate(&p, &m, &found[0].1).hop_bytes;
        assert!(hb < packed_hb, "{hb} vs packed {packed_hb}");
        // every byte inside a clique stays inside its node, and the ring of cliques
        // (a Hamiltonian cycle of the torus exists: 10 bytes a task, one hop each) is
        // laid within half a hop a message of it
        let ring = 10 * p.tasks() as u128;
        assert!(hb >= ring && 2 * hb <= 3 * ring, "{hb} vs ring {ring}");
    }

    #[test]
    fn candidates_depend_on_the_seed_alone() {
        let p = planted(16, 4);
        let m = crate::torus_machine(vec![4, 4], None, None, 4).expect("valid");
        let a = candidates(&p, &m, 9, far()).expect("valid");
        let b = candidates(&p, &m, 9, far()).expect("valid");
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.0, y.0);
            assert_eq!(x.1, y.1);
        }
    }

    #[test]
    fn nothing_for_one_slot_nodes_or_a_pattern_that_does_not_fill() {
        let p = planted(16, 4);
        let m1 = crate::torus_machine(vec![8, 8], None, None, 1).expect("valid");
        assert!(candidates(&p, &m1, 1, far()).expect("valid").is_empty());
        let m = crate::torus_machine(vec![4, 8], None, None, 4).expect("valid");
        assert!(candidates(&p, &m, 1, far()).expect("valid").is_empty());
    }
}
