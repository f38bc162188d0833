//! Node groups the two-stage way: the tasks are first split into groups of exactly a
//! node's slot count keeping as many bytes as possible inside the groups (the machine
//! ignored), then the quotient graph (bytes between groups) is placed on the nodes.
//!
//! The grouping starts from the nodes of the optimiser's starts and of the multilevel
//! candidates, and from the greedy grown groups; each start is refined by **pairwise
//! swaps** between groups (so every group keeps its size exactly): a task takes the
//! swap with the largest positive gain in bytes kept inside groups among the members
//! of the groups it talks to, and the tasks around every swap are looked at again
//! until no swap gains. The groupings are ranked by the bytes they keep inside.
//!
//! The optimiser places the best grouping's quotient graph with its own machinery (a
//! pattern of one task per group on the machine with one slot per node) and from where
//! the start put the groups; [`place`] searches each placement further on hop-bytes
//! (swaps of two groups, then annealing: [`Anneal::SHORT`], and [`Anneal::LONG`] with
//! moves next to a partner's node, which places the groups of a graph such as SpMV's
//! with a few per cent fewer hop-bytes), and the expanded mappings join the optimiser's
//! candidates, refined and chosen like the others. `links` places groups on the link
//! loads instead: swaps of two groups that lower the busiest link without raising the
//! hop-bytes beyond a given slack (the two-stage way for large graphs, and the
//! optimiser's chosen mapping, its nodes as groups).

use std::collections::VecDeque;
use std::ops::{Add, Mul, Sub};
use std::time::Instant;

use super::machine::MapMachine;
use super::pattern::Pattern;
use super::strategy;
use copr::lap::Perm;
use copr::rng::SplitMix;

pub(crate) mod large;
pub(crate) mod links;

/// Above this many tasks the two-stage candidate is not built (its placement search
/// is timed at 1024 tasks only; the multilevel mapper's external gains serve larger
/// graphs).
pub(crate) const MAX_TASKS: usize = 2048;

/// A split of the tasks into groups of fixed sizes, with each task's bytes (both ways)
/// to the other members of its group.
#[derive(Debug, Clone)]
pub(crate) struct Groups<'a> {
    off: &'a [usize],
    adj: &'a [(u32, u64)],
    /// Task → group.
    of: Vec<u32>,
    /// Group → its tasks.
    members: Vec<Vec<u32>>,
    /// Task → its index in its group's members.
    at: Vec<u32>,
    /// Task → bytes to the other members of its group.
    inside: Vec<i128>,
    /// Scratch: bytes of one task to each group (and which groups it touched).
    to_group: Vec<i128>,
    touched_groups: Vec<u32>,
    /// Scratch: bytes of tasks to one group, and to one task.
    to_a: Vec<i128>,
    to_u: Vec<i128>,
    touched_tasks: Vec<u32>,
}

impl<'a> Groups<'a> {
    /// The groups `of` (task → group, `groups` groups) of the undirected graph
    /// `(off, adj)`.
    ///
    /// # Panics
    /// If a group number is not below `groups` (a broken caller contract).
    pub(crate) fn new(
        (off, adj): (&'a [usize], &'a [(u32, u64)]),
        of: Vec<u32>,
        groups: usize,
    ) -> Self {
        let n = of.len();
        let mut members = vec![Vec::new(); groups];
        let mut at = vec![0u32; n];
        for (t, &g) in of.iter().enumerate() {
            at[t] = members[g as usize].len() as u32;
            members[g as usize].push(t as u32);
        }
        let mut s = Self {
            off,
            adj,
            of,
            members,
            at,
            inside: vec![0; n],
            to_group: vec![0; groups],
            touched_groups: Vec::new(),
            to_a: vec![0; n],
            to_u: vec![0; n],
            touched_tasks: Vec::new(),
        };
        for t in 0..n {
            s.inside[t] = s.bytes_to_own(t);
        }
        s
    }

    fn nbrs(&self, u: usize) -> &'a [(u32, u64)] {
        &self.adj[self.off[u]..self.off[u + 1]]
    }

    fn bytes_to_own(&self, u: usize) -> i128 {
        let g = self.of[u];
        self.nbrs(u)
            .iter()
            .filter(|&&(v, _)| self.of[v as usize] == g && v as usize != u)
            .map(|&(_, w)| i128::from(w))
            .sum()
    }

    /// Bytes (both ways) between tasks of the same group.
    pub(crate) fn kept(&self) -> i128 {
        self.inside.iter().sum::<i128>() / 2
    }

    /// The best swap of `u` with a member of a group it talks to: the partner and the
    /// gain in bytes kept, when positive.
    fn best_swap(&mut self, u: usize) -> Option<(usize, i128)> {
        let a = self.of[u];
        for &(v, w) in self.nbrs(u) {
            let g = self.of[v as usize];
            if g != a && self.to_group[g as usize] == 0 {
                self.touched_groups.push(g);
            }
            self.to_group[g as usize] += i128::from(w);
            self.to_u[v as usize] += i128::from(w);
        }
        // bytes of every task to the members of `a` other than `u`
        for &x in &self.members[a as usize] {
            if x as usize == u {
                continue;
            }
            for &(v, w) in self.nbrs(x as usize) {
                if self.to_a[v as usize] == 0 {
                    self.touched_tasks.push(v);
                }
                self.to_a[v as usize] += i128::from(w);
            }
        }
        let in_a = self.inside[u];
        let mut best: Option<(usize, i128)> = None;
        for &b in &self.touched_groups {
            if self.to_group[b as usize] == 0 {
                continue;
            }
            for &v in &self.members[b as usize] {
                let v = v as usize;
                let gain =
                    self.to_group[b as usize] - self.to_u[v] - in_a + self.to_a[v] - self.inside[v];
                if gain > best.map_or(0, |x| x.1) {
                    best = Some((v, gain));
                }
            }
        }
        for &(v, _) in self.nbrs(u) {
            self.to_group[self.of[v as usize] as usize] = 0;
            self.to_u[v as usize] = 0;
        }
        self.touched_groups.clear();
        for &v in &self.touched_tasks {
            self.to_a[v as usize] = 0;
        }
        self.touched_tasks.clear();
        best
    }

    /// Swaps the groups of `u` and `v`, keeping `inside` exact.
    fn swap(&mut self, u: usize, v: usize) {
        let (a, b) = (self.of[u], self.of[v]);
        let (iu, iv) = (self.at[u], self.at[v]);
        self.members[a as usize][iu as usize] = v as u32;
        self.members[b as usize][iv as usize] = u as u32;
        self.of[u] = b;
        self.of[v] = a;
        self.at[u] = iv;
        self.at[v] = iu;
        // the neighbours' bytes to their own group change by the moved tasks' edges
        for (t, from, to) in [(u, a, b), (v, b, a)] {
            for &(x, w) in self.nbrs(t) {
                let x = x as usize;
                if x == u || x == v {
                    continue;
                }
                let g = self.of[x];
                if g == from {
                    self.inside[x] -= i128::from(w);
                } else if g == to {
                    self.inside[x] += i128::from(w);
                }
            }
        }
        self.inside[u] = self.bytes_to_own(u);
        self.inside[v] = self.bytes_to_own(v);
    }

    /// Swaps with positive gains from the tasks of `queue` and around every swap, until
    /// none is left or `limit` tasks were looked at; the swaps made, in order.
    fn settle(
        &mut self,
        queue: &mut VecDeque<usize>,
        queued: &mut [bool],
        limit: usize,
    ) -> Vec<(usize, usize)> {
        let mut done = Vec::new();
        let mut seen = 0;
        while let Some(u) = queue.pop_front() {
            queued[u] = false;
            seen += 1;
            if seen > limit {
                break;
            }
            if let Some((v, _)) = self.best_swap(u) {
                self.swap(u, v);
                done.push((u, v));
                for t in [u, v] {
                    for x in std::iter::once(t).chain(self.nbrs(t).iter().map(|e| e.0 as usize)) {
                        if !std::mem::replace(&mut queued[x], true) {
                            queue.push_back(x);
                        }
                    }
                }
            }
        }
        for u in queue.drain(..) {
            queued[u] = false;
        }
        done
    }

    /// Swap refinement from every task, in a seeded order (see [`Groups::settle`]).
    ///
    /// # Complexity
    /// `O(k·d + g·k)` per task looked at, for groups of `k` tasks of degree `d` touching
    /// `g` groups.
    pub(crate) fn refine(&mut self, rng: &mut SplitMix) {
        let n = self.of.len();
        if n < 2 || self.members.len() < 2 {
            return;
        }
        let mut order: Vec<usize> = (0..n).collect();
        rng.shuffle(&mut order);
        let mut queued = vec![true; n];
        let mut queue: VecDeque<usize> = order.into();
        self.settle(&mut queue, &mut queued, 64 * n);
    }
}

/// The node groups of the two-stage way (module docs) for `p` on `m`: groupings
/// (task → group, `m.nodes()` groups of `m.ranks_per_node()` tasks) refined from the
/// nodes of each mapping of `from` and from `grown_groups` (each group's tasks, when
/// given), the most bytes kept inside first (one of each count), each with whether it
/// came from `from` (then its groups are numbered by node, and the identity is that
/// mapping's placement of them). Empty when the pattern does not fill the machine or
/// is larger than [`MAX_TASKS`]; the starts not refined by `deadline` are left out.
pub(crate) fn node_groups(
    p: &Pattern,
    m: &MapMachine,
    from: &[&Perm],
    grown_groups: &[Vec<usize>],
    seed: u64,
    deadline: Instant,
) -> Vec<(Vec<u32>, bool)> {
    let (k, nodes) = (m.ranks_per_node(), m.nodes());
    if p.tasks() != m.slots()
        || m.used_slots() != m.slots()
        || p.tasks() > MAX_TASKS
        || nodes < 2
        || k < 2
    {
        return Vec::new();
    }
    // a stream of its own, so that the optimiser's other steps see the same numbers
    let mut rng = SplitMix(seed ^ 0x6772_6f75_7073);
    let graph = p.undirected_ref();
    let mut starts: Vec<(Vec<u32>, bool)> = from
        .iter()
        .map(|map| {
            (
                (0..p.tasks()).map(|t| (map.apply(t) / k) as u32).collect(),
                true,
            )
        })
        .collect();
    if grown_groups.len() == nodes {
        let mut grown = vec![0u32; p.tasks()];
        for (g, members) in grown_groups.iter().enumerate() {
            for &t in members {
                grown[t] = g as u32;
            }
        }
        starts.push((grown, false));
    }
    let mut out: Vec<(i128, Vec<u32>, bool)> = Vec::new();
    for (of, placed) in starts {
        if crate::clock::now() >= deadline {
            break;
        }
        let mut g = Groups::new(graph, of, nodes);
        g.refine(&mut rng);
        let kept = g.kept();
        out.push((kept, g.of, placed));
    }
    out.sort_by_key(|x| std::cmp::Reverse(x.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out.into_iter()
        .map(|(_, of, placed)| (of, placed))
        .collect()
}

/// How [`place`] anneals: moves per group, and whether half of the moves put a group
/// next to the node of one of its partners (the others swap two random groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anneal {
    /// Moves per group.
    pub(crate) moves_per_group: usize,
    /// Half of the moves next to a partner's node.
    pub(crate) near_partners: bool,
    /// Swaps of two groups while one lowers the hop-bytes, each group trying every
    /// other, before and after the annealing (`O(G²)` tries a pass on `G` groups: for
    /// the few groups of up to 2048 tasks).
    pub(crate) descend: bool,
    /// Partners looked at over all moves, at most: a move looks at the partners of the
    /// two groups it swaps, so the moves are capped at this over the mean number of
    /// partners of a group ([`Anneal::moves`]).
    pub(crate) max_work: usize,
}

impl Anneal {
    /// Random swaps only, 4000 per group: a few milliseconds on 64 groups.
    pub(crate) const SHORT: Self = Self {
        moves_per_group: 4000,
        near_partners: false,
        descend: true,
        max_work: usize::MAX,
    };
    /// 60 000 moves per group, half of them next to a partner's node: about 0.2 s on
    /// 64 groups, and on the SpMV graph's groups (1024 tasks on 4×4×4 × 16) 3–5 % fewer
    /// hop-bytes than [`Anneal::SHORT`]; at most [`LONG_WORK`] partners looked at.
    pub(crate) const LONG: Self = Self {
        moves_per_group: 60_000,
        near_partners: true,
        descend: true,
        max_work: LONG_WORK,
    };

    /// The annealing's moves on `groups` groups of `partners` partners each on
    /// average: [`Anneal::moves_per_group`] a group, at most
    /// [`Anneal::max_work`]` / partners`.
    pub(crate) fn moves(&self, groups: usize, partners: usize) -> usize {
        (self.moves_per_group * groups).min(self.max_work / partners.max(1))
    }
}

/// The work [`Anneal::LONG`] may do, in partners looked at: its 60 000 moves a group
/// on 64 groups of 40 partners each (153.6 M). The quotients it was tuned on (1024
/// tasks on 64 nodes, cases h of `benches/RESULTS.md`: at seeds 1 and 2 at most 39
/// partners a group, the power-law graph's) and the sparse quotients of 128 groups (5
/// partners) are under the cap and anneal as before; the power-law graph's 128 groups
/// on the k = 8 fat tree (49 partners, 2048 tasks) get 3.1 M moves instead of 7.7 M,
/// which took about 2.4 s of CPU for its two long annealings (8.7 s in all at the
/// default budget on a quiet machine).
const LONG_WORK: usize = 64 * 60_000 * 40;

/// Placements are searched on at most this many nodes (a table of hops between every
/// two nodes).
const PLACE_MAX_NODES: usize = 1024;

/// The hop-bytes of placing the groups of `q` (one task per group) at `pos` (group →
/// node), with `d` the hops between every two of the `nodes` nodes.
fn place_cost<D: Copy + Into<u32>>(
    (off, adj): (&[usize], &[(u32, u64)]),
    d: &[D],
    nodes: usize,
    pos: &[usize],
) -> i128 {
    let mut c = 0i128;
    for g in 0..pos.len() {
        for &(x, w) in &adj[off[g]..off[g + 1]] {
            c += i128::from(w) * i128::from(d[pos[g] * nodes + pos[x as usize]].into());
        }
    }
    c / 2
}

/// The change in hop-bytes when groups `g` and `h` swap their nodes (`pos`: group →
/// node; `d`: hops between every two of the `nodes` nodes), in `T`, to which `bytes`
/// and `hops` convert.
fn swap_delta<T, D: Copy + Into<u32>>(
    (off, adj): (&[usize], &[(u32, u64)]),
    d: &[D],
    nodes: usize,
    pos: &[usize],
    (g, h): (usize, usize),
    bytes: impl Fn(u64) -> T,
    hops: impl Fn(u32) -> T,
) -> T
where
    T: Copy + Default + Add<Output = T> + Sub<Output = T> + Mul<Output = T>,
{
    let mut s = T::default();
    // g moves from its node to h's, h the other way
    for (me, other, from, to) in [(g, h, pos[g], pos[h]), (h, g, pos[h], pos[g])] {
        for &(x, w) in &adj[off[me]..off[me + 1]] {
            let x = x as usize;
            if x != other {
                let px = pos[x];
                s = s + bytes(w)
                    * (hops(d[to * nodes + px].into()) - hops(d[from * nodes + px].into()));
            }
        }
    }
    s
}

/// The placement of the groups of `q` (one task per group, as many as `m`'s nodes) on
/// `m`'s nodes with the least hop-bytes found from `start` (group → node): swaps of
/// two groups while one lowers the hop-bytes (each group trying every other), then
/// annealing by swaps of two groups as `anneal` says (seeded; a group is swapped
/// either with a random group or, with [`Anneal::near_partners`] half of the time,
/// with the group on a node next to one of its partners' nodes), then swaps again from the best placement the annealing saw; stops at
/// `deadline`. `start` itself on more than [`PLACE_MAX_NODES`] nodes.
///
/// # Complexity
/// `O(G·(d_g + d_h))` per group looked at by the swaps and `O(d_g + d_h)` per move of
/// the annealing, for `G` groups of degrees `d`.
pub(crate) fn place(
    q: &Pattern,
    m: &MapMachine,
    start: &Perm,
    anneal: Anneal,
    seed: u64,
    deadline: Instant,
) -> Perm {
    let nodes = m.nodes();
    let groups = q.tasks();
    if nodes > PLACE_MAX_NODES || groups != nodes || groups < 3 {
        return start.clone();
    }
    let mut d = vec![0u32; nodes * nodes];
    for a in 0..nodes {
        for b in 0..nodes {
            d[a * nodes + b] = m.hops(a, b);
        }
    }
    // the table of hops in the narrowest integers that hold them (1 MB rather than 4
    // on 1024 nodes: the annealing reads it at random, and its cache misses were
    // about 40 % of its time on 1024 nodes); the same numbers
    let diameter = d.iter().copied().max().unwrap_or(0);
    if diameter <= u32::from(u8::MAX) {
        let d: Vec<u8> = d.iter().map(|&h| h as u8).collect();
        place_with(q, start, anneal, seed, deadline, (nodes, &d))
    } else if diameter <= u32::from(u16::MAX) {
        let d: Vec<u16> = d.iter().map(|&h| h as u16).collect();
        place_with(q, start, anneal, seed, deadline, (nodes, &d))
    } else {
        place_with(q, start, anneal, seed, deadline, (nodes, &d))
    }
}

/// [`place`] with `d` the hops between every two of the `nodes` nodes.
fn place_with<D: Copy + Into<u32>>(
    q: &Pattern,
    start: &Perm,
    anneal: Anneal,
    seed: u64,
    deadline: Instant,
    (nodes, d): (usize, &[D]),
) -> Perm {
    let groups = q.tasks();
    let mut rng = SplitMix(seed ^ 0x0070_6c61_6365);
    let (off, adj) = q.undirected_ref();
    let mut pos: Vec<usize> = (0..groups).map(|g| start.apply(g)).collect();
    let delta = |pos: &[usize], g: usize, h: usize| -> i128 {
        swap_delta((off, adj), d, nodes, pos, (g, h), i128::from, i128::from)
    };
    // the same in 64 bits, exact when every group's bytes times the largest hops fit
    // (the annealing's many moves, about a fifth faster)
    let diameter = i128::from(d.iter().map(|&h| h.into()).max().unwrap_or(0));
    let narrow = (0..groups).all(|g| {
        let sent: i128 = adj[off[g]..off[g + 1]]
            .iter()
            .map(|&(_, w)| i128::from(w))
            .sum();
        2 * sent * diameter < i128::from(i64::MAX)
    });
    let delta64 = |pos: &[usize], g: usize, h: usize| -> i64 {
        swap_delta((off, adj), d, nodes, pos, (g, h), |w| w as i64, i64::from)
    };
    // swaps from the groups of `queue` (and from both groups of every swap made)
    let descend =
        |pos: &mut Vec<usize>, queue: &mut VecDeque<usize>, log: &mut Vec<(usize, usize)>| {
            let mut seen = 0;
            while let Some(g) = queue.pop_front() {
                seen += 1;
                if seen > 16 * groups {
                    break;
                }
                let best = (0..groups)
                    .filter(|&h| h != g)
                    .map(|h| (delta(pos, g, h), h))
                    .min();
                if let Some((_, h)) = best.filter(|x| x.0 < 0) {
                    pos.swap(g, h);
                    log.push((g, h));
                    queue.push_back(g);
                    queue.push_back(h);
                }
            }
            queue.clear();
        };
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut log = Vec::new();
    if anneal.descend {
        queue.extend(0..groups);
        descend(&mut pos, &mut queue, &mut log);
    }
    let c0 = place_cost((off, adj), d, nodes, &pos);
    // annealing: random swaps of two groups, a rise of `x` taken with probability
    // e^(−x/T), T falling geometrically from the mean rise of random swaps to a
    // thousandth of it; the best placement seen is kept
    let moves = anneal.moves(groups, adj.len() / groups);
    // node → the nodes one hop away, and node → its group
    let near: Vec<Vec<u32>> = (0..nodes)
        .map(|a| {
            (0..nodes)
                .filter(|&b| d[a * nodes + b].into() == 1)
                .map(|b| b as u32)
                .collect()
        })
        .collect();
    let mut at = vec![0usize; nodes];
    for (g, &a) in pos.iter().enumerate() {
        at[a] = g;
    }
    let sample: Vec<i128> = (0..256)
        .map(|_| delta(&pos, rng.below(groups), rng.below(groups)).abs())
        .collect();
    let t0 = (sample.iter().sum::<i128>() as f64 / sample.len() as f64).max(1.0);
    let cool = (1e-3f64).powf(1.0 / moves.max(1) as f64);
    let (mut t, mut cost) = (t0, c0);
    let (mut best, mut best_cost) = (pos.clone(), c0);
    for i in 0..moves {
        if i % 4096 == 0 && crate::clock::now() >= deadline {
            break;
        }
        t *= cool;
        let g = rng.below(groups);
        let side = if anneal.near_partners {
            rng.below(2)
        } else {
            0
        };
        let h = match (side, &adj[off[g]..off[g + 1]]) {
            (1, partners) if !partners.is_empty() => {
                // next to the node of one of g's partners
                let x = partners[rng.below(partners.len())].0 as usize;
                let around = &near[pos[x]];
                if around.is_empty() {
                    rng.below(groups)
                } else {
                    at[around[rng.below(around.len())] as usize]
                }
            }
            _ => rng.below(groups),
        };
        if g == h {
            continue;
        }
        let x = if narrow {
            i128::from(delta64(&pos, g, h))
        } else {
            delta(&pos, g, h)
        };
        let take = x <= 0 || {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            taken(u, -(x as f64) / t)
        };
        if take {
            pos.swap(g, h);
            at[pos[g]] = g;
            at[pos[h]] = h;
            cost += x;
            if cost < best_cost {
                best_cost = cost;
                best.clone_from(&pos);
            }
        }
    }
    let mut pos = best;
    if anneal.descend {
        queue.extend(0..groups);
        descend(&mut pos, &mut queue, &mut log);
    }
    strategy::perm(pos)
}

/// Whether the annealing takes a rise with the uniform draw `u` (a multiple of 2⁻⁵³ in
/// `[0, 1)`) at the exponent `r` (minus the rise over the temperature): `u < eʳ`.
/// Below `r = −STEEP`, `eʳ < 2⁻⁵⁷` is under every draw but 0, so the exponential is
/// computed only for a draw of 0: the same answers, without the exponentials of the
/// cold end of the annealing, where almost every rise looked at is that steep.
fn taken(u: f64, r: f64) -> bool {
    if r < -STEEP && u > 0.0 {
        return false;
    }
    u < r.exp()
}

/// See [`taken`]: e^(−40) ≈ 4.2·10⁻¹⁸ < 2⁻⁵³, the least draw above 0.
const STEEP: f64 = 40.0;

/// The tasks' mapping from their groups' placement (`place`: group → node), each
/// group's tasks on its node's slots in task order.
pub(crate) fn expand(of: &[u32], place: &Perm, k: usize) -> Perm {
    let mut next = vec![0usize; place.len()];
    let fwd = of
        .iter()
        .map(|&g| {
            let node = place.apply(g as usize);
            let c = next[node];
            next[node] += 1;
            node * k + c
        })
        .collect();
    strategy::perm(fwd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Edge;

    #[test]
    fn a_steep_rise_is_refused_as_the_exponential_refuses_it() {
        // every draw the annealing makes is a multiple of 2⁻⁵³: the least ones, some
        // in the middle and the largest, against exponents on both sides of −STEEP
        let ulp = 1.0 / (1u64 << 53) as f64;
        let mut draws = vec![0.0, ulp, 2.0 * ulp, 1e6 * ulp, 0.25, 0.5, 1.0 - ulp];
        draws.extend((1..64).map(|k| (k as f64 / 64.0) * 1e-15));
        let mut exps: Vec<f64> = (0..=2000).map(|i| -(i as f64) * 0.5).collect();
        exps.extend([-STEEP, -STEEP - 1e-9, -STEEP + 1e-9, -36.7, -745.2, -746.0]);
        exps.extend([f64::NEG_INFINITY, 0.0]);
        for &u in &draws {
            let u = (u / ulp).floor() * ulp;
            for &r in &exps {
                assert_eq!(taken(u, r), u < r.exp(), "u = {u:e}, r = {r}");
            }
        }
        // a draw of 0 takes any rise whose exponential is not 0
        assert!(taken(0.0, -700.0));
        assert!(!taken(0.0, f64::NEG_INFINITY));
        assert!(!taken(ulp, -STEEP - 1.0));
    }

    /// Four cliques of four tasks (1000 bytes each way inside), each task also sending
    /// 10 bytes to one task of every other clique; task `t` is numbered so that the
    /// cliques are interleaved (clique `t % 4`).
    fn cliques() -> Pattern {
        let mut edges = Vec::new();
        for t in 0..16u32 {
            for s in 0..16u32 {
                if s == t {
                    continue;
                }
                let bytes = if s % 4 == t % 4 {
                    1000
                } else if s / 4 == t / 4 {
                    10
                } else {
                    0
                };
                if bytes > 0 {
                    edges.push(Edge {
                        src: t,
                        dst: s,
                        bytes,
                    });
                }
            }
        }
        Pattern::from_edges(16, edges, "cliques".into()).expect("valid")
    }

    #[test]
    fn swaps_find_the_cliques_with_exact_sizes() {
        let p = cliques();
        // the worst start: every group holds one task of each clique
        let of: Vec<u32> = (0..16).map(|t| t / 4).collect();
        let mut g = Groups::new(p.undirected_ref(), of, 4);
        assert_eq!(g.kept(), 4 * 6 * 2 * 10);
        g.refine(&mut SplitMix(7));
        let of = &g.of;
        for (t, &g) in of.iter().enumerate() {
            assert_eq!(g, of[t % 4], "task {t} is not with its clique");
        }
        for grp in 0..4 {
            assert_eq!(of.iter().filter(|&&x| x == grp).count(), 4, "group {grp}");
        }
        assert_eq!(g.kept(), 4 * 6 * 2 * 1000);
        // `inside` stayed exact through the swaps
        let fresh = Groups::new(p.undirected_ref(), of.to_vec(), 4);
        assert_eq!(fresh.inside, g.inside);
    }

    #[test]
    fn node_groups_are_the_cliques_on_four_nodes() {
        let p = cliques();
        let m = MapMachine::flat(4, 4).expect("valid");
        // the worst start: every group holds one task of each clique
        let worst: Vec<Vec<usize>> = (0..4).map(|g| (4 * g..4 * g + 4).collect()).collect();
        let (of, _) = node_groups(
            &p,
            &m,
            &[],
            &worst,
            1,
            crate::clock::now() + std::time::Duration::from_secs(5),
        )
        .swap_remove(0);
        for (t, &g) in of.iter().enumerate() {
            assert_eq!(g, of[t % 4], "task {t} is not with its clique");
        }
        let (q, _) = p.quotient(&of, 4, String::new()).expect("valid");
        let place = Perm::identity(4);
        let map = expand(&of, &place, 4);
        for (t, &g) in of.iter().enumerate() {
            assert_eq!(map.apply(t) / 4, g as usize);
        }
        // every group sends 10 bytes per pair of cliques and task: 4·3·10 per group
        let sent: u64 = q.edges().iter().map(|e| e.bytes).sum();
        assert_eq!(sent, 16 * 3 * 10);
    }

    #[test]
    fn placement_swaps_find_the_ring() {
        // a ring of 12 groups, numbered in a scrambled order, on a ring of 12 nodes;
        // 100 bytes a message, and 2^60 (the annealing's sums in 128 bits)
        let order = [5usize, 0, 9, 3, 11, 7, 1, 10, 4, 8, 2, 6];
        for (bytes, anneal) in [
            (100u64, Anneal::SHORT),
            (100, Anneal::LONG),
            (1 << 60, Anneal::SHORT),
            (1 << 60, Anneal::LONG),
        ] {
            let edges = (0..12)
                .map(|i| Edge {
                    src: order[i] as u32,
                    dst: order[(i + 1) % 12] as u32,
                    bytes,
                })
                .collect();
            let q = Pattern::from_edges(12, edges, "ring".into()).expect("valid");
            let m = crate::torus_machine(vec![12], None, None, 1).expect("valid");
            let start = Perm::identity(12);
            let before = crate::evaluate(&q, &m, &start).hop_bytes;
            let place = place(
                &q,
                &m,
                &start,
                anneal,
                3,
                crate::clock::now() + std::time::Duration::from_secs(5),
            );
            let after = crate::evaluate(&q, &m, &place).hop_bytes;
            let one_hop = 12 * u128::from(bytes);
            assert!(before > one_hop, "{before}");
            assert_eq!(
                after, one_hop,
                "every message one hop ({bytes} bytes, {anneal:?})"
            );
        }
    }

    #[test]
    fn the_long_annealing_is_capped_by_its_work_on_dense_quotients() {
        // 64 groups of up to 40 partners: 60 000 moves a group, as before the cap
        assert_eq!(Anneal::LONG.moves(64, 4), 3_840_000);
        assert_eq!(Anneal::LONG.moves(64, 40), 3_840_000);
        // 128 sparse groups (5 partners): 60 000 a group
        assert_eq!(Anneal::LONG.moves(128, 5), 7_680_000);
        // 128 groups of 49 partners (the power-law graph on the k = 8 fat tree):
        // 153 600 000 / 49 moves
        assert_eq!(Anneal::LONG.moves(128, 49), 3_134_693);
        // a group without partners counts as one; the short annealing has no cap
        assert_eq!(Anneal::LONG.moves(3, 0), 180_000);
        assert_eq!(Anneal::SHORT.moves(128, 49), 512_000);
    }

    /// The 4×4×4 periodic grid (100 bytes to each of the six neighbours) with its
    /// groups numbered in a seeded random order.
    fn scrambled_torus() -> Pattern {
        let mut label: Vec<u32> = (0..64).collect();
        SplitMix(11).shuffle(&mut label);
        let at = |x: usize, y: usize, z: usize| label[x % 4 + 4 * (y % 4) + 16 * (z % 4)];
        let mut edges = Vec::new();
        for z in 0..4 {
            for y in 0..4 {
                for x in 0..4 {
                    for (a, b, c) in [(1, 0, 0), (0, 1, 0), (0, 0, 1)] {
                        let (u, v) = (at(x, y, z), at(x + a, y + b, z + c));
                        for (src, dst) in [(u, v), (v, u)] {
                            edges.push(Edge {
                                src,
                                dst,
                                bytes: 100,
                            });
                        }
                    }
                }
            }
        }
        Pattern::from_edges(64, edges, "scrambled torus".into()).expect("valid")
    }

    #[test]
    fn the_long_annealing_finds_the_scrambled_torus() {
        let q = scrambled_torus();
        let m = crate::torus_machine(vec![4, 4, 4], None, None, 1).expect("valid");
        let far = crate::clock::now() + std::time::Duration::from_secs(60);
        let start = Perm::identity(64);
        let hb = |a: Anneal, seed: u64| {
            crate::evaluate(&q, &m, &place(&q, &m, &start, a, seed, far)).hop_bytes
        };
        // every message one hop: the bytes sent
        let optimum = q.total_bytes();
        // at these seeds the short annealing stops above the optimum (so the case tells
        // the two apart); the long one reaches it
        for seed in [2, 3] {
            assert!(hb(Anneal::SHORT, seed) > optimum, "seed {seed}");
            assert_eq!(hb(Anneal::LONG, seed), optimum, "seed {seed}");
        }
    }

    #[test]
    fn placement_is_the_same_with_hops_in_narrower_integers() {
        // a random quotient of 64 groups on a 4x4x4 torus from a random start: the
        // table of hops in 8, 16 or 32 bits gives the same placement, better than the
        // start
        let m = crate::torus_machine(vec![4, 4, 4], None, None, 1).unwrap();
        let mut rng = SplitMix(8);
        let q = crate::pattern::random_pattern(64, 300, 1000, &mut rng);
        let mut f: Vec<usize> = (0..64).collect();
        rng.shuffle(&mut f);
        let start = Perm::from_forward(f).unwrap();
        let d32: Vec<u32> = (0..64 * 64).map(|k| m.hops(k / 64, k % 64)).collect();
        let d16: Vec<u16> = d32.iter().map(|&h| h as u16).collect();
        let d8: Vec<u8> = d32.iter().map(|&h| h as u8).collect();
        let far = crate::clock::now() + std::time::Duration::from_secs(600);
        for anneal in [Anneal::SHORT, Anneal::LONG] {
            let a = place_with(&q, &start, anneal, 3, far, (64, &d32));
            let b = place_with(&q, &start, anneal, 3, far, (64, &d16));
            let c = place_with(&q, &start, anneal, 3, far, (64, &d8));
            assert_eq!(a.forward(), b.forward());
            assert_eq!(a.forward(), c.forward());
            let (off, adj) = q.undirected_ref();
            let cost = |p: &Perm| place_cost((off, adj), &d32, 64, p.forward());
            assert!(cost(&a) < cost(&start));
        }
    }
}
