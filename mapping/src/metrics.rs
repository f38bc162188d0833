//! How good a mapping is: hop-bytes, dilation, link loads under the machine's routing,
//! bytes kept inside nodes, and lower bounds.

use serde::Serialize;

use super::machine::{LinkLoadModel, MapMachine};
use super::pattern::{CartGrid, Edge, Pattern};
use copr::lap::Perm;

/// Load of one direction class of links (`x+`, `y-`, … on a torus).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassLoad {
    /// Direction class.
    pub class: String,
    /// Largest load on a link of this class, bytes per round.
    pub max_bytes: u128,
    /// Mean load over the links of this class, bytes per round.
    pub mean_bytes: f64,
}

/// Bytes between two cores of one node, by the level of the node tree they share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelBytes {
    /// The shared level (`core`, `l3`, `package`, `machine`, …).
    pub level: String,
    /// Bytes per round.
    pub bytes: u128,
}

/// The metrics of one mapping (all per communication round).
///
/// * hop-bytes `HB = Σ_messages bytes·hops(node(src), node(dst))`;
/// * dilation: hops per message (mean over messages, and maximum);
/// * link load: bytes crossing each directed link under the machine's load model
///   ([`MapMachine::link_model`]: every message on its route, or split evenly over
///   its equal-cost paths on a fat tree); `max_link_time` is
///   `max_l load(l)/bandwidth(l)`;
/// * lower bounds: `HB ≥ hop_bytes_bound` for every mapping onto this machine (every
///   off-node byte crosses at least one link, and no node can keep more than its best
///   possible share of messages inside); `max link load ≥ hop_bytes_bound / links`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Σ bytes over all messages.
    pub total_bytes: u128,
    /// Bytes whose sender and receiver share a node.
    pub intra_node_bytes: u128,
    /// Hop-bytes.
    pub hop_bytes: u128,
    /// Mean hops per message.
    pub dilation_mean: f64,
    /// Largest hops of a message.
    pub dilation_max: u32,
    /// How the link loads below are counted (`max_link_bytes`, `max_link_time`,
    /// `classes`): on one path per message, or split over the equal-cost paths.
    pub link_model: LinkLoadModel,
    /// Largest load of a link, bytes (under ECMP rounded up to a whole byte).
    pub max_link_bytes: u128,
    /// Mean load over all links of the machine, bytes.
    pub mean_link_bytes: f64,
    /// `max_l load(l)·inv_bandwidth(l)`, seconds.
    pub max_link_time: f64,
    /// Per direction class.
    pub classes: Vec<ClassLoad>,
    /// Lower bound on hop-bytes for any mapping.
    pub hop_bytes_bound: u128,
    /// Lower bound on the largest link load for any mapping.
    pub max_link_bound: u128,
    /// With a node tree ([`MapMachine::node_tree`]): the intra-node bytes by the level
    /// the two cores share, nearest first; empty otherwise.
    pub intra_levels: Vec<LevelBytes>,
}

/// Computes every metric of `mapping` (task `t` runs on slot `mapping.apply(t)`).
///
/// # Complexity
/// `O(n + m + N + P·h + L)` for `n` tasks, `m` messages, `N` nodes, `P ≤ m` ordered
/// pairs of nodes that messages join (each routed once, with their bytes summed), of
/// at most `h` hops, on `L` links.
///
/// # Panics
/// If the mapping's length differs from the pattern's task count or a slot is beyond
/// the machine (a broken contract: strategies produce valid mappings).
///
/// ```
/// use copr::lap::Perm;
/// use copr_mapping::{evaluate, CartGrid, MapMachine, Pattern};
/// use copr_topology::{Torus, TorusParams};
/// // a ring of 4 tasks on a ring of 4 nodes, 10 bytes each way
/// let p = Pattern::grid(&CartGrid::new(vec![4], vec![true], vec![10]).unwrap()).unwrap();
/// let m = MapMachine::torus(Torus::full(TorusParams::new(vec![4])).unwrap(), 1).unwrap();
/// let packed = evaluate(&p, &m, &Perm::identity(4));
/// assert_eq!(packed.hop_bytes, 80);
/// assert_eq!(packed.max_link_bytes, 10);
/// // tasks 0..4 on nodes 0, 2, 1, 3: the pairs 0-1 and 2-3 are 2 hops apart, 1-2 and
/// // 3-0 one hop; 10 bytes each way
/// let crossed = evaluate(&p, &m, &Perm::from_forward(vec![0, 2, 1, 3]).unwrap());
/// assert_eq!(crossed.hop_bytes, 2 * 10 * (2 + 1 + 2 + 1));
/// ```
pub fn evaluate(p: &Pattern, m: &MapMachine, mapping: &Perm) -> Metrics {
    evaluate_with(p, m, mapping, None)
}

/// [`evaluate`] with the hop-bytes bound given (it depends on `p` and `m` only, and
/// costs `O(m log m)`): for loops that score many mappings of one pattern.
pub(crate) fn evaluate_known(p: &Pattern, m: &MapMachine, mapping: &Perm, bound: u128) -> Metrics {
    evaluate_with(p, m, mapping, Some(bound))
}

fn evaluate_with(p: &Pattern, m: &MapMachine, mapping: &Perm, bound: Option<u128>) -> Metrics {
    assert_eq!(mapping.len(), p.tasks(), "mapping covers every task");
    let node: Vec<u32> = (0..p.tasks())
        .map(|t| {
            let s = mapping.apply(t);
            assert!(s < m.slots(), "slot {s} beyond the machine");
            m.node_of_slot(s) as u32
        })
        .collect();
    let mut r = evaluate_nodes_with(p, m, &node, bound);
    if let Some(tree) = m.node_tree() {
        let rpn = m.ranks_per_node();
        // two tasks never share a PU: the nearest level two cores can share is above it
        let levels: Vec<copr_topology::Level> = tree
            .levels_present()
            .iter()
            .copied()
            .filter(|&l| l != copr_topology::Level::Pu)
            .collect();
        let mut by = vec![0u128; levels.len()];
        for e in p.edges() {
            let (a, b) = (mapping.apply(e.src as usize), mapping.apply(e.dst as usize));
            if a / rpn == b / rpn {
                let l = tree.level(a % rpn, b % rpn);
                if let Some(i) = levels.iter().position(|&x| x == l) {
                    by[i] += u128::from(e.bytes);
                }
            }
        }
        r.intra_levels = levels
            .iter()
            .zip(by)
            .map(|(l, bytes)| LevelBytes {
                level: l.to_string(),
                bytes,
            })
            .collect();
    }
    r
}

/// [`evaluate`] from the node of each task (no intra-node levels: cores unknown).
pub fn evaluate_nodes(p: &Pattern, m: &MapMachine, node: &[u32]) -> Metrics {
    evaluate_nodes_with(p, m, node, None)
}

fn evaluate_nodes_with(p: &Pattern, m: &MapMachine, node: &[u32], bound: Option<u128>) -> Metrics {
    let mut load = vec![0u128; m.num_links()];
    let Routed {
        hop_bytes: hb,
        intra,
        total,
        hop_sum,
        dmax,
        msgs,
    } = route_all(p, m, node, &mut load);
    let inv = m.link_inv_bandwidths();
    let classes = m.link_classes();
    let mut cmax = vec![0u128; classes.len()];
    let mut csum = vec![0f64; classes.len()];
    let mut ccount = vec![0usize; classes.len()];
    let (mut lmax, mut lsum, mut tmax) = (0u128, 0f64, 0f64);
    for (l, &x) in load.iter().enumerate() {
        let c = m.link_class(l);
        cmax[c] = cmax[c].max(x);
        csum[c] += x as f64;
        ccount[c] += 1;
        lmax = lmax.max(x);
        lsum += x as f64;
        tmax = tmax.max(x as f64 * inv[l]);
    }
    let model = m.link_model();
    if model == LinkLoadModel::Ecmp {
        // the busiest link under ECMP: a bundle's load spread over its links (a
        // network graph: one class; the sum of all loads, hence the mean, is the same)
        let (bmax, btime) = ecmp_maxima(p, m, node);
        (lmax, tmax) = (bmax, btime);
        cmax.iter_mut().for_each(|x| *x = bmax);
    }
    let hb_bound = bound.unwrap_or_else(|| bound_as_given(p, m, p.grid_spec()));
    let links = m.num_links().max(1) as u128;
    Metrics {
        total_bytes: total,
        intra_node_bytes: intra,
        hop_bytes: hb,
        dilation_mean: if msgs == 0 {
            0.0
        } else {
            hop_sum as f64 / msgs as f64
        },
        dilation_max: dmax,
        link_model: model,
        max_link_bytes: lmax,
        mean_link_bytes: lsum / links as f64,
        max_link_time: tmax,
        classes: classes
            .into_iter()
            .enumerate()
            .map(|(c, class)| ClassLoad {
                class,
                max_bytes: cmax[c],
                mean_bytes: if ccount[c] == 0 {
                    0.0
                } else {
                    csum[c] / ccount[c] as f64
                },
            })
            .collect(),
        hop_bytes_bound: hb_bound,
        max_link_bound: hb_bound.div_ceil(links),
        intra_levels: Vec::new(),
    }
}

/// The busiest link under ECMP when task `t` runs on node `node[t]`: its bytes
/// (rounded up) and its time, from the loads of the link groups
/// ([`MapMachine::for_group_route`]; each pair of nodes routed once with its bytes).
fn ecmp_maxima(p: &Pattern, m: &MapMachine, node: &[u32]) -> (u128, f64) {
    let mut load = vec![0u128; m.link_groups()];
    let pairs = NodePairs::new(p, m.nodes(), node);
    pairs.for_each(0..m.nodes(), |a, b, bytes, _| {
        if a != b {
            m.for_group_route(a, b, |g| load[g] += bytes);
        }
    });
    let inv = m.link_group_inv_bandwidths();
    let (mut bytes, mut time) = (0u128, 0f64);
    for (g, &x) in load.iter().enumerate() {
        if x > 0 {
            let size = m.link_group_size(g) as u128;
            bytes = bytes.max(x.div_ceil(size));
            time = time.max(x as f64 * inv[g]);
        }
    }
    (bytes, time)
}

/// The bytes on every link of `m` (index as [`MapMachine::link_info`]) when task `t`
/// of `p` runs on node `node[t]`, each message routed as [`MapMachine::for_route`]
/// (single path: dimension order on a torus, one shortest path on a graph; see
/// [`crate::ecmp_link_loads`] for equal-cost splitting). The one computation of link
/// loads: [`evaluate`] reports their maxima, `copr plan --cost` their sums per torus
/// dimension.
///
/// ```
/// use copr_mapping::{link_loads, MapMachine, Pattern, Edge};
/// use copr_topology::{Torus, TorusParams};
/// // a ring of 4 nodes; task 0 on node 0 sends 10 bytes to task 1 on node 2
/// let m = MapMachine::torus(Torus::full(TorusParams::new(vec![4])).unwrap(), 1).unwrap();
/// let p = Pattern::from_edges(2, vec![Edge { src: 0, dst: 1, bytes: 10 }], "".into()).unwrap();
/// let loads = link_loads(&p, &m, &[0, 2]);
/// assert_eq!(loads.iter().sum::<u128>(), 20); // two links of 10
/// assert_eq!(loads[0], 10); // node 0, x+
/// ```
///
/// # Panics
/// If `node` has fewer entries than `p` has tasks or names a node `m` lacks.
pub fn link_loads(p: &Pattern, m: &MapMachine, node: &[u32]) -> Vec<u128> {
    let mut load = vec![0u128; m.num_links()];
    route_all(p, m, node, &mut load);
    load
}

/// What routing every message of a pattern gives besides the link loads.
#[derive(Default)]
struct Routed {
    hop_bytes: u128,
    intra: u128,
    total: u128,
    hop_sum: u64,
    dmax: u32,
    msgs: u64,
}

/// Messages from which [`route_all`] routes the pairs of nodes on both cores (each
/// part of the sending nodes into its own loads, summed after: whole numbers, so the
/// same sums in any order).
const CONCURRENT_ROUTING_EDGES: usize = 1 << 16;

/// Routes every message of `p` (task `t` on node `node[t]`), adding its bytes to the
/// links it crosses: the messages between the same two nodes are summed first and
/// routed once (the same loads, hop-bytes and dilations as routing each message).
fn route_all(p: &Pattern, m: &MapMachine, node: &[u32], load: &mut [u128]) -> Routed {
    route_all_from(p, m, node, load, CONCURRENT_ROUTING_EDGES)
}

/// [`route_all`], on both cores from `concurrent` messages.
fn route_all_from(
    p: &Pattern,
    m: &MapMachine,
    node: &[u32],
    load: &mut [u128],
    concurrent: usize,
) -> Routed {
    use rayon::prelude::*;
    let pairs = NodePairs::new(p, m.nodes(), node);
    if p.edges().len() < concurrent {
        return pairs.route(0..m.nodes(), m, load);
    }
    let parts: Vec<(Routed, Vec<u128>)> = pairs
        .parts(8)
        .into_par_iter()
        .map(|from| {
            let mut own = vec![0u128; load.len()];
            (pairs.route(from, m, &mut own), own)
        })
        .collect();
    let mut r = Routed::default();
    for (q, own) in parts {
        r.hop_bytes += q.hop_bytes;
        r.intra += q.intra;
        r.total += q.total;
        r.hop_sum += q.hop_sum;
        r.dmax = r.dmax.max(q.dmax);
        r.msgs += q.msgs;
        for (l, x) in load.iter_mut().zip(own) {
            *l += x;
        }
    }
    r
}

/// Calls `f(a, b, bytes, messages)` once for each ordered pair of nodes with
/// messages of `p` from `a` to `b` (task `t` on node `node[t]`; `a = b` for the
/// messages inside a node), with their bytes and number summed.
///
/// # Complexity
/// `O(n + m + N)` for `n` tasks, `m` messages and `N` nodes.
///
/// # Panics
/// If `node` has fewer entries than `p` has tasks or names a node `≥ nodes`.
pub(crate) fn for_each_node_pair(
    p: &Pattern,
    nodes: usize,
    node: &[u32],
    f: impl FnMut(usize, usize, u128, u64),
) {
    NodePairs::new(p, nodes, node).for_each(0..nodes, f);
}

/// A pattern's messages grouped by the nodes of their ends (task `t` on node
/// `node[t]`): the sending nodes' tasks, and each task's messages (the pattern's are
/// sorted by sender).
struct NodePairs<'a> {
    edges: &'a [Edge],
    node: &'a [u32],
    nodes: usize,
    /// Task `t`'s messages are `edges[msg_off[t]..msg_off[t + 1]]`.
    msg_off: Vec<usize>,
    /// The tasks on node `a` are `tasks[task_off[a]..task_off[a + 1]]`.
    task_off: Vec<usize>,
    tasks: Vec<u32>,
}

impl<'a> NodePairs<'a> {
    /// # Complexity
    /// `O(n + m + N)` for `n` tasks, `m` messages and `N` nodes.
    ///
    /// # Panics
    /// If `node` has fewer entries than `p` has tasks or names a node `≥ nodes`.
    fn new(p: &'a Pattern, nodes: usize, node: &'a [u32]) -> Self {
        let n = p.tasks();
        let edges = p.edges();
        let mut msg_off = vec![0usize; n + 1];
        for e in edges {
            msg_off[e.src as usize + 1] += 1;
        }
        let mut task_off = vec![0usize; nodes + 1];
        for &a in &node[..n] {
            task_off[a as usize + 1] += 1;
        }
        for t in 0..n {
            msg_off[t + 1] += msg_off[t];
        }
        for a in 0..nodes {
            task_off[a + 1] += task_off[a];
        }
        let mut fill = task_off.clone();
        let mut tasks = vec![0u32; n];
        for (t, &a) in node[..n].iter().enumerate() {
            tasks[fill[a as usize]] = t as u32;
            fill[a as usize] += 1;
        }
        NodePairs {
            edges,
            node,
            nodes,
            msg_off,
            task_off,
            tasks,
        }
    }

    /// Calls `f(a, b, bytes, messages)` once for each pair of nodes `a ≠ b` with
    /// messages from `a` to `b`, and once with `a = b` for each node `a` in `from`
    /// with messages inside it (their bytes and number), for every sending node `a` in
    /// `from`.
    ///
    /// # Complexity
    /// `O(m' + N)` for the `m'` messages sent from `from`.
    fn for_each(&self, from: std::ops::Range<usize>, mut f: impl FnMut(usize, usize, u128, u64)) {
        let mut acc = vec![(0u128, 0u64); self.nodes];
        let mut touched: Vec<usize> = Vec::new();
        for a in from {
            for &t in &self.tasks[self.task_off[a]..self.task_off[a + 1]] {
                let t = t as usize;
                for e in &self.edges[self.msg_off[t]..self.msg_off[t + 1]] {
                    let b = self.node[e.dst as usize] as usize;
                    let x = &mut acc[b];
                    if x.1 == 0 {
                        touched.push(b);
                    }
                    x.0 += u128::from(e.bytes);
                    x.1 += 1;
                }
            }
            for b in touched.drain(..) {
                let (bytes, msgs) = std::mem::take(&mut acc[b]);
                f(a, b, bytes, msgs);
            }
        }
    }

    /// Routes the messages sent from the nodes in `from` (see [`route_all`]).
    fn route(&self, from: std::ops::Range<usize>, m: &MapMachine, load: &mut [u128]) -> Routed {
        let mut r = Routed::default();
        self.for_each(from, |a, b, bytes, msgs| {
            r.total += bytes;
            r.msgs += msgs;
            if a == b {
                r.intra += bytes;
                return;
            }
            let h = m.hops(a, b);
            r.hop_bytes += bytes * u128::from(h);
            r.hop_sum += msgs * u64::from(h);
            r.dmax = r.dmax.max(h);
            m.for_route(a, b, |l| load[l] += bytes);
        });
        r
    }

    /// The sending nodes cut into at most `k` ranges of about equal messages.
    fn parts(&self, k: usize) -> Vec<std::ops::Range<usize>> {
        let per = self.edges.len().div_ceil(k.max(1)).max(1);
        let mut out = Vec::new();
        let (mut start, mut sum) = (0, 0);
        for a in 0..self.nodes {
            for &t in &self.tasks[self.task_off[a]..self.task_off[a + 1]] {
                sum += self.msg_off[t as usize + 1] - self.msg_off[t as usize];
            }
            if sum >= per {
                out.push(start..a + 1);
                (start, sum) = (a + 1, 0);
            }
        }
        if start < self.nodes {
            out.push(start..self.nodes);
        }
        out
    }
}

/// A lower bound on the hop-bytes of any mapping of `p` onto `m`: the bytes that must
/// leave their node, each crossing at least one link (when the machine has one node,
/// 0). The larger of two bounds:
///
/// * **per task**: with `k` slots per node, a task shares its node with at most
///   `k − 1` others, so at least its out-bytes minus its `k − 1` largest messages
///   leave the node; and, counted by pairs, at most `½·Σ_t S_t` bytes stay inside
///   nodes, `S_t` the bytes (both ways) of task `t`'s `k − 1` heaviest pairs (the
///   pairs sharing a node form a subgraph of degree at most `k − 1`), so at least
///   the total minus that leaves them;
/// * **per node, for grids**: the bytes leaving a node holding `k` cells of a grid are
///   at least `Σ_d c_d·w_d·(A_d − F_d)`, where `A_d` is the number of grid lines along
///   dimension `d` the set meets, `F_d` of them may be full (`F_d·len_d + (A_d − F_d)
///   ≤ k`), `c_d` is 2 for
///   a periodic dimension (a partly filled line is left at both ends) and 1 otherwise,
///   and the `A_d` obey the Loomis–Whitney inequality `Π_d A_d ≥ k^{n−1}` (a set is no
///   larger than the geometric mean of its projections); minimised over all integer
///   `A_d`.
///
/// A graph pattern that is a grid up to relabeling ([`crate::recognise_grid`]) gets the
/// grid's bound, and a grid padded with tasks that send nothing ([`Pattern::padded`])
/// a bound from its cells' shares. ([`evaluate`] fills [`Metrics::hop_bytes_bound`] without looking for
/// a hidden grid, so that scoring a mapping stays `O(m·h + L)`.)
pub fn hop_bytes_bound(p: &Pattern, m: &MapMachine) -> u128 {
    match p.grid_spec() {
        Some(g) => bound_as_given(p, m, Some(g)),
        None => match super::recognise::recognise_grid(p) {
            Some(h) => bound_as_given(p, m, Some(&h.spec)),
            None => bound_as_given(p, m, None).max(active_grid_bound(p, m)),
        },
    }
}

/// For a pattern whose tasks with messages form a grid of `a` cells and whose other
/// tasks send nothing (a job smaller than the machine): nodes hold `c_i ≤ k` cells with
/// `Σ c_i = a`, and a node of `c` cells sends at least `f(c)` bytes out
/// ([`grid_node_bound`]), so `HB ≥ Σ f(c_i) ≥ a · min_{1 ≤ c ≤ k} f(c)/c`. 0 otherwise.
fn active_grid_bound(p: &Pattern, m: &MapMachine) -> u128 {
    let Some((ids, h)) = super::recognise::active_grid(p) else {
        return 0;
    };
    if m.nodes() <= 1 {
        return 0;
    }
    let a = ids.len();
    let g = &h.spec;
    (1..=m.ranks_per_node().min(a))
        .map(|c| grid_node_bound(&g.dims, &g.periodic, &g.bytes, c) * a as u128 / c as u128)
        .min()
        .unwrap_or(0)
}

/// [`hop_bytes_bound`] with the pattern's grid (if any) given.
fn bound_as_given(p: &Pattern, m: &MapMachine, grid: Option<&CartGrid>) -> u128 {
    if m.nodes() <= 1 {
        return 0;
    }
    let k = m.ranks_per_node();
    let per_task = task_bound(p, k).max(pair_bound(p, k));
    let per_grid = grid.map_or(0, |g| {
        let full = p.tasks() / k;
        let rest = p.tasks() % k;
        let b = grid_node_bound(&g.dims, &g.periodic, &g.bytes, k) * full as u128;
        b + if rest > 0 {
            grid_node_bound(&g.dims, &g.periodic, &g.bytes, rest)
        } else {
            0
        }
    });
    per_task.max(per_grid)
}

/// The most node-sized groups can keep inside nodes, relaxed pair by pair: the pairs
/// of tasks that share a node form a subgraph in which every task has at most `k − 1`
/// partners, so the bytes it keeps inside its node are at most `S_t`, the sum of its
/// `k − 1` heaviest pairs (bytes both ways). Every kept pair is counted at both of its
/// tasks, so at most `½·Σ_t S_t` bytes stay inside nodes, and at least
/// `total − ⌊½·Σ_t S_t⌋` cross a link (one hop or more).
///
/// # Complexity
/// `O(m log m)` for `m` messages.
fn pair_bound(p: &Pattern, k: usize) -> u128 {
    let (off, adj) = p.undirected_ref();
    let mut kept2 = 0u128;
    let mut w: Vec<u128> = Vec::new();
    for t in 0..p.tasks() {
        w.clear();
        w.extend(
            adj[off[t]..off[t + 1]]
                .iter()
                .map(|&(u, b)| pair_bytes_exact(p, t as u32, u, b)),
        );
        if w.len() >= k {
            w.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
        }
        kept2 += w.iter().take(k - 1).sum::<u128>();
    }
    p.total_bytes().saturating_sub(kept2 / 2)
}

/// The bytes between tasks `t` and `u` both ways, exactly: `b` from
/// [`Pattern::undirected_ref`], which saturates at `u64::MAX` (then the two messages are
/// looked up and summed in 128 bits).
fn pair_bytes_exact(p: &Pattern, t: u32, u: u32, b: u64) -> u128 {
    if b < u64::MAX {
        return u128::from(b);
    }
    let edges = p.edges();
    let one = |s: u32, d: u32| {
        edges
            .binary_search_by_key(&(s, d), |e| (e.src, e.dst))
            .map_or(0, |i| u128::from(edges[i].bytes))
    };
    one(t, u) + one(u, t)
}

fn task_bound(p: &Pattern, k: usize) -> u128 {
    let mut total = 0u128;
    let edges = p.edges();
    let mut i = 0;
    let mut out: Vec<u64> = Vec::new();
    while i < edges.len() {
        let src = edges[i].src;
        out.clear();
        while i < edges.len() && edges[i].src == src {
            out.push(edges[i].bytes);
            i += 1;
        }
        out.sort_unstable_by(|a, b| b.cmp(a));
        total += out.iter().skip(k - 1).map(|&b| u128::from(b)).sum::<u128>();
    }
    total
}

/// Least bytes leaving a set of `k` cells of the grid (see [`hop_bytes_bound`]).
fn grid_node_bound(dims: &[usize], periodic: &[bool], bytes: &[u64], k: usize) -> u128 {
    let n = dims.len();
    let total: usize = dims.iter().product();
    if k >= total {
        return 0;
    }
    // lines along dimension d: total / dims[d]; a set of k cells meets at most
    // min(k, lines) of them.
    let lines: Vec<usize> = (0..n).map(|d| total / dims[d]).collect();
    let weight = |d: usize, a: usize| -> u128 {
        if dims[d] == 1 {
            return 0;
        }
        // F full lines hold F·len cells, the other A − F at least one each
        let full = ((k - a) / (dims[d] - 1)).min(a);
        let c: u128 = if periodic[d] { 2 } else { 1 };
        c * u128::from(bytes[d]) * (a - full) as u128
    };
    let cap = |d: usize| lines[d].min(k);
    let kk = k as u128;
    let mut best = u128::MAX;
    match n {
        1 => best = weight(0, 1),
        2 => {
            // A_0 = lines along dim 0 met (= distinct values of coordinate 1) etc.;
            // Loomis-Whitney in 2-D: A_0·A_1 >= k.
            for a0 in 1..=cap(0) {
                let need = kk.div_ceil(a0 as u128) as usize;
                if need > cap(1) {
                    continue;
                }
                best = best.min(weight(0, a0) + weight(1, need));
            }
        }
        _ => {
            let k2 = kk * kk;
            let limit = 2048usize;
            for a0 in 1..=cap(0).min(limit) {
                for a1 in 1..=cap(1).min(limit) {
                    let need = k2.div_ceil(a0 as u128 * a1 as u128);
                    if need > cap(2) as u128 {
                        continue;
                    }
                    best = best.min(weight(0, a0) + weight(1, a1) + weight(2, need as usize));
                }
            }
        }
    }
    if best == u128::MAX {
        0
    } else {
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::CartGrid;
    use copr_topology::{Torus, TorusParams};

    fn torus(dims: Vec<u32>, rpn: usize) -> MapMachine {
        MapMachine::torus(Torus::full(TorusParams::new(dims)).unwrap(), rpn).unwrap()
    }

    #[test]
    fn hand_computed_2x2_on_two_nodes() {
        // 2x2 periodic grid, dimension 0 messages 1 byte, dimension 1 messages 100
        // bytes. Extent 2 and periodic: each task sends twice to the same neighbour.
        let g = CartGrid::new(vec![2, 2], vec![true, true], vec![1, 100]).unwrap();
        let p = Pattern::grid(&g).unwrap();
        let m = torus(vec![2], 2);
        // packed: tasks 0,1 (row 0) on node 0, tasks 2,3 on node 1: only the column
        // messages (dimension 0, 2 bytes per pair direction) leave the node.
        let packed = evaluate(&p, &m, &Perm::identity(4));
        assert_eq!(packed.total_bytes, 4 * (2 + 200));
        assert_eq!(packed.intra_node_bytes, 4 * 200);
        assert_eq!(packed.hop_bytes, 4 * 2);
        // torus of extent 2: from 0 to 1 is +x, from 1 to 0 is +x too (tie: positive)
        assert_eq!(packed.max_link_bytes, 4);
        assert_eq!(packed.classes[0].max_bytes, 4);
        assert_eq!(packed.classes[1].max_bytes, 0);
        // column-wise: tasks 0,2 on node 0: the heavy messages leave
        let cols = evaluate(&p, &m, &Perm::from_forward(vec![0, 2, 1, 3]).unwrap());
        assert_eq!(cols.hop_bytes, 4 * 200);
        // the bound: a node holds 2 cells; keeping one row together leaves both its
        // column messages (2 x 1 byte each way per cell pair): 4 per node, 8 in all
        assert_eq!(packed.hop_bytes_bound, 8);
        assert_eq!(packed.dilation_max, 1);
    }

    #[test]
    fn grid_bound_of_tiles() {
        // 4x4 cells per node of a large periodic grid: 16 boundary messages
        assert_eq!(grid_node_bound(&[32, 32], &[true, true], &[1, 1], 16), 16);
        // anisotropic: dimension 1 messages 3x: best 2 rows? A0·A1 >= 16,
        // cost 2·1·A0 + 2·3·A1 minimal at A0 = 8, A1 = 2: 16 + 12 = 28
        assert_eq!(grid_node_bound(&[32, 32], &[true, true], &[1, 3], 16), 28);
        // 3-D: a 2x2x2 cube of a periodic 8^3 grid: 6 faces of 4 = 24
        assert_eq!(grid_node_bound(&[8, 8, 8], &[true; 3], &[1, 1, 1], 8), 24);
        // non-periodic: a corner 2x2 block of a 4x4 mesh has 4 boundary messages
        assert_eq!(grid_node_bound(&[4, 4], &[false, false], &[1, 1], 4), 4);
        // 8 cells of a 4x8 periodic grid: two full columns of 4 leave 2 messages in
        // each of the 4 rows
        assert_eq!(grid_node_bound(&[4, 8], &[true, true], &[1, 1], 8), 8);
    }

    #[test]
    fn bound_never_exceeds_brute_force_optimum() {
        // every mapping of a 2x4 periodic grid onto 4 nodes x 2: HB >= bound, and the
        // bound is reached by some mapping
        let g = CartGrid::new(vec![2, 4], vec![true, true], vec![3, 5]).unwrap();
        let p = Pattern::grid(&g).unwrap();
        let m = torus(vec![4], 2);
        let mut best = u128::MAX;
        for f in crate::strategy::dim_orders(8) {
            let r = evaluate(&p, &m, &Perm::from_forward(f).unwrap());
            assert!(r.hop_bytes >= r.hop_bytes_bound);
            best = best.min(r.hop_bytes);
        }
        let b = hop_bytes_bound(&p, &m);
        assert!(best >= b && b > 0, "{best} {b}");
    }

    #[test]
    fn pair_bound_holds_when_a_pair_sums_past_64_bits() {
        // 0 -> 1 and 1 -> 0 of u64::MAX each: the pair fits one node of 2 slots, so
        // the packed mapping moves nothing and the bound must be 0 (the undirected
        // adjacency saturates the pair at u64::MAX, which once left u64::MAX bytes
        // "outside" every node)
        let e = |src, dst| crate::Edge {
            src,
            dst,
            bytes: u64::MAX,
        };
        let p = Pattern::from_edges(2, vec![e(0, 1), e(1, 0)], String::new()).unwrap();
        let m = MapMachine::flat(4, 2).unwrap();
        assert_eq!(hop_bytes_bound(&p, &m), 0);
        let packed = evaluate(&p, &m, &Perm::identity(2));
        assert_eq!(packed.hop_bytes, 0);
        assert!(packed.hop_bytes_bound <= packed.hop_bytes);
        // one slot per node: both messages cross, 2·(2^64 − 1) bytes
        let one = MapMachine::flat(4, 1).unwrap();
        assert_eq!(hop_bytes_bound(&p, &one), 2 * u128::from(u64::MAX));
    }

    /// Each message routed on its own: the reference [`route_all`] and [`ecmp_maxima`]
    /// must equal (loads on links, loads on link groups, and what routing gives).
    fn routed_per_message(
        p: &Pattern,
        m: &MapMachine,
        node: &[u32],
    ) -> (Vec<u128>, Vec<u128>, [u128; 6]) {
        let mut load = vec![0u128; m.num_links()];
        let mut group = vec![0u128; m.link_groups()];
        let (mut hb, mut intra, mut total, mut hop_sum, mut dmax, mut msgs) = (0, 0, 0, 0, 0, 0);
        for e in p.edges() {
            let (a, b) = (node[e.src as usize] as usize, node[e.dst as usize] as usize);
            let bytes = u128::from(e.bytes);
            total += bytes;
            msgs += 1;
            if a == b {
                intra += bytes;
                continue;
            }
            let h = u128::from(m.hops(a, b));
            hb += bytes * h;
            hop_sum += h;
            dmax = dmax.max(h);
            m.for_route(a, b, |l| load[l] += bytes);
            m.for_group_route(a, b, |g| group[g] += bytes);
        }
        (load, group, [hb, intra, total, hop_sum, dmax, msgs])
    }

    #[test]
    fn node_pairs_route_as_every_message_alone() {
        // random patterns (several messages between the same two nodes, messages
        // inside nodes) on a torus with a route table, one without (600 nodes), and an
        // ECMP fat tree; serial and on both cores
        let machines = [
            torus(vec![4, 3, 2], 4),
            torus(vec![10, 6, 10], 2),
            MapMachine::network(
                crate::bundles::test_fat_tree(4),
                None,
                Default::default(),
                2,
            )
            .unwrap(),
        ];
        let mut rng = crate::SplitMix(11);
        for (i, m) in machines.iter().enumerate() {
            for round in 0..6 {
                let n = m.slots();
                let msgs = [3, n / 2, 4 * n][round % 3];
                let p = crate::pattern::random_pattern(n, msgs, 1000, &mut rng);
                let mut slots: Vec<usize> = (0..n).collect();
                rng.shuffle(&mut slots);
                let node: Vec<u32> = slots.iter().map(|&s| m.node_of_slot(s) as u32).collect();
                let (want, groups, [hb, intra, total, hop_sum, dmax, count]) =
                    routed_per_message(&p, m, &node);
                for concurrent in [usize::MAX, 0] {
                    let mut load = vec![0u128; m.num_links()];
                    let r = route_all_from(&p, m, &node, &mut load, concurrent);
                    let what = format!("machine {i}, round {round}, concurrent {concurrent}");
                    assert_eq!(load, want, "{what}");
                    assert_eq!(
                        [r.hop_bytes, r.intra, r.total, u128::from(r.hop_sum)],
                        [hb, intra, total, hop_sum],
                        "{what}"
                    );
                    assert_eq!(
                        (u128::from(r.dmax), u128::from(r.msgs)),
                        (dmax, count),
                        "{what}"
                    );
                }
                let inv = m.link_group_inv_bandwidths();
                let mut bytes = 0u128;
                let mut time = 0f64;
                for (g, &x) in groups.iter().enumerate().filter(|(_, &x)| x > 0) {
                    bytes = bytes.max(x.div_ceil(m.link_group_size(g) as u128));
                    time = time.max(x as f64 * inv[g]);
                }
                assert_eq!(
                    ecmp_maxima(&p, m, &node),
                    (bytes, time),
                    "machine {i}, round {round}"
                );
            }
        }
    }
}
