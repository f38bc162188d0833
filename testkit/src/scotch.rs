//! Scotch (`scotch_gmap`, Debian package `scotch` 7.0.x) as the peer mapper of the
//! mapping benchmark and its tests (std only).
//!
//! # What is handed to Scotch
//!
//! * **Graph** (`.grf`, format version 0, base 0, edge weights only, flag `010`): Scotch
//!   wants a symmetric graph, so the directed messages `(src, dst, bytes)` are merged:
//!   every unordered pair `{a, b}` becomes one undirected edge whose weight is the sum of
//!   all bytes sent `a → b` and `b → a` (repeated messages add up). Self-loops and
//!   zero-byte messages are dropped; each adjacency list is sorted by neighbour.
//!   With this weighting Scotch's objective (Σ over undirected edges of weight × target
//!   distance, `gmtst`'s `CommExpan` sum) equals the directed hop-bytes
//!   Σ_messages bytes × hops.
//! * **Target**: Scotch always maps onto the *node* level; the `ranks_per_node` cores of
//!   a node are not separate target vertices. Scotch cannot compose `tleaf` with a torus
//!   (`tleaf` is a pure tree; `torusXD` has unit weight in every dimension, so an extra
//!   core dimension makes two cores of a node up to `rpn/2` "hops" apart — measured on
//!   a 32 × 32 grid onto 4×4×4 nodes × 16 cores it gives 3.3× the node-level hop-bytes
//!   of mapping onto the node torus), and a `deco 0` matrix over all slots is quadratic
//!   (16 384 slots → 134 M entries). Mapping `n` tasks onto `K` equal nodes makes Scotch
//!   balance `n / K` tasks per node, i.e. it partitions into node-sized parts and
//!   places the parts on the network, with intra-node traffic free — the hop-bytes
//!   model. Cores inside a node are then handed out in task order.
//!   - full torus: `torus2D X Y`, `torus3D X Y Z`, or `torusXD d D0 … D(d-1)` (Scotch
//!     accepts at most 5 dimensions; dimensions of size 1 are dropped when there are
//!     more than 5). Scotch numbers torus vertices x fastest: label
//!     `x + X·(y + Y·z)` (documented, and verified with `gmtst` on random mappings).
//!   - torus subset: `sub K n0 … n(K-1)` followed by the torus line; Scotch's output part
//!     `k` is the `k`-th listed node `n_k` (verified with `gmtst`, which scores `sub`
//!     mappings with the parent torus's distances).
//!   - general network: `deco 0` (decomposition-defined architecture): `K` and the
//!     largest terminal number, then one line `label weight terminal` per node (label =
//!     node index `k`, weight = `ranks_per_node`, terminal = number of the node's leaf in
//!     a recursive bipartition tree whose root is 1 and whose domain `i` has children
//!     `2i`, `2i+1`), then the lower triangle of the distance matrix without diagonal, row
//!     `i` listing `d(i, 0) … d(i, i-1)`. Distances between different nodes must be ≥ 1.
//!     The bipartition tree is computed here (see [`deco_terminals`]). `scotch_gmap`
//!     outputs the node label. Caveat: Scotch 7.0.x `gmtst` mis-scores mappings onto
//!     `deco` targets (it looks up the domain one number below each terminal;
//!     reproduced by recomputing its averaged distance tables), so
//!     [`run_gmtst`] refuses those.
//! * **Weights**: the stock `scotch_gmap` uses 32-bit integers and silently wraps
//!   weights ≥ 2³¹. [`run_gmap`] therefore divides every edge weight by their gcd `g`
//!   times `ceil(2·(W/g)·diam / 2³⁰)` (W = total undirected weight, diam = target
//!   diameter), rounding to nearest and keeping at least 1, and reports that divisor.
//!
//! # What comes back
//!
//! `slot_of_task[t] = node · ranks_per_node + core`, where `node` is the index of the
//! node in the target (`k`-th allocated node for a subset, linear coordinate x fastest for
//! a full torus). Scotch's load balance tolerance (default 5 %) can leave nodes with more
//! tasks than cores (128 × 128 grid onto 16×8×8 nodes: 15–17 tasks per node); such
//! mappings are repaired deterministically and the number of moved tasks is reported.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The machine Scotch maps onto. Node indices `k` are `0..node_count()`; slots are
/// `k * ranks_per_node + core`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScotchTarget {
    /// Full torus, dims x fastest (node `k = x + X·(y + Y·z)`), `ranks_per_node` cores on
    /// every node (1 = one task per node).
    Torus {
        /// Extent of each dimension, x first.
        dims: Vec<usize>,
        /// Slots per node.
        ranks_per_node: usize,
    },
    /// The allocated nodes of a job on a torus: node `k` is the torus node with linear
    /// index `nodes[k]` (x fastest).
    TorusSubset {
        /// Extent of each torus dimension, x first.
        dims: Vec<usize>,
        /// Linear torus indices of the allocated nodes, distinct.
        nodes: Vec<usize>,
        /// Slots per node.
        ranks_per_node: usize,
    },
    /// General network (fat tree, dragonfly, …): `hops[a * nodes + b]` is the hop
    /// distance between nodes `a` and `b` (symmetric, 0 on the diagonal, ≥ 1 elsewhere).
    Distance {
        /// Number of nodes.
        nodes: usize,
        /// Row-major `nodes × nodes` hop-distance matrix.
        hops: Vec<u32>,
        /// Slots per node.
        ranks_per_node: usize,
    },
    /// A tree of switches with the nodes as leaves (`tleaf`): `arity[i]` children per
    /// vertex at level `i` (root first); two nodes whose paths part at level `i` are
    /// `2·(levels − i)` hops apart (a fat tree's up-down routes), and the link cost of
    /// level `i` handed to Scotch is `levels − i`.
    Tleaf {
        /// Children per vertex, root level first.
        arity: Vec<usize>,
        /// Slots per node.
        ranks_per_node: usize,
    },
}

impl ScotchTarget {
    /// Full torus with one task per node.
    pub fn torus(dims: &[usize]) -> Self {
        Self::Torus {
            dims: dims.to_vec(),
            ranks_per_node: 1,
        }
    }

    /// Full torus with `ranks_per_node` cores per node.
    pub fn torus_cores(dims: &[usize], ranks_per_node: usize) -> Self {
        Self::Torus {
            dims: dims.to_vec(),
            ranks_per_node,
        }
    }

    /// Number of nodes `K`.
    pub fn node_count(&self) -> usize {
        match self {
            Self::Torus { dims, .. } => dims.iter().product(),
            Self::TorusSubset { nodes, .. } => nodes.len(),
            Self::Distance { nodes, .. } => *nodes,
            Self::Tleaf { arity, .. } => arity.iter().product(),
        }
    }

    /// Slots per node.
    pub fn ranks_per_node(&self) -> usize {
        match self {
            Self::Torus { ranks_per_node, .. }
            | Self::TorusSubset { ranks_per_node, .. }
            | Self::Distance { ranks_per_node, .. }
            | Self::Tleaf { ranks_per_node, .. } => *ranks_per_node,
        }
    }

    /// Total number of slots.
    pub fn slots(&self) -> usize {
        self.node_count() * self.ranks_per_node()
    }

    /// Hop distance between nodes `a` and `b` (node indices `k`).
    pub fn node_hops(&self, a: usize, b: usize) -> u64 {
        match self {
            Self::Torus { dims, .. } => torus_hops(dims, a, b),
            Self::TorusSubset { dims, nodes, .. } => torus_hops(dims, nodes[a], nodes[b]),
            Self::Distance { nodes, hops, .. } => u64::from(hops[a * nodes + b]),
            Self::Tleaf { arity, .. } => tleaf_hops(arity, a, b),
        }
    }

    /// Largest node-to-node distance (an upper bound for subsets).
    pub fn diameter(&self) -> u64 {
        match self {
            Self::Torus { dims, .. } | Self::TorusSubset { dims, .. } => {
                dims.iter().map(|&d| (d / 2) as u64).sum()
            }
            Self::Distance { hops, .. } => hops.iter().copied().max().unwrap_or(0).into(),
            Self::Tleaf { arity, .. } => 2 * arity.len() as u64,
        }
    }

    /// Checks the description (sizes, distinct nodes, a valid distance matrix).
    pub fn validate(&self) -> Result<(), String> {
        if self.ranks_per_node() == 0 {
            return Err("ranks_per_node must be at least 1".into());
        }
        if self.node_count() == 0 {
            return Err("target has no nodes".into());
        }
        match self {
            Self::Torus { dims, .. } => {
                if dims.contains(&0) {
                    return Err("torus dimension of extent 0".into());
                }
            }
            Self::TorusSubset { dims, nodes, .. } => {
                if dims.contains(&0) {
                    return Err("torus dimension of extent 0".into());
                }
                let total: usize = dims.iter().product();
                let mut seen = vec![false; total];
                for &v in nodes {
                    if v >= total {
                        return Err(format!("node {v} outside the {total}-node torus"));
                    }
                    if std::mem::replace(&mut seen[v], true) {
                        return Err(format!("node {v} listed twice"));
                    }
                }
            }
            Self::Distance { nodes, hops, .. } => {
                let k = *nodes;
                if hops.len() != k * k {
                    return Err(format!(
                        "distance matrix has {} entries, want {}",
                        hops.len(),
                        k * k
                    ));
                }
                for a in 0..k {
                    if hops[a * k + a] != 0 {
                        return Err(format!("d({a},{a}) != 0"));
                    }
                    for b in 0..a {
                        if hops[a * k + b] != hops[b * k + a] {
                            return Err(format!("distance matrix not symmetric at ({a},{b})"));
                        }
                        if hops[a * k + b] == 0 {
                            return Err(format!("d({a},{b}) = 0: Scotch needs distances >= 1"));
                        }
                    }
                }
            }
            Self::Tleaf { arity, .. } => {
                if arity.is_empty() || arity.contains(&0) {
                    return Err(format!("tleaf arities {arity:?}: need levels of >= 1"));
                }
            }
        }
        Ok(())
    }
}

/// Torus hop distance between linear indices `a`, `b` (x fastest, wraparound).
fn torus_hops(dims: &[usize], mut a: usize, mut b: usize) -> u64 {
    let mut h = 0;
    for &d in dims {
        let (x, y) = (a % d, b % d);
        let diff = x.abs_diff(y);
        h += diff.min(d - diff) as u64;
        a /= d;
        b /= d;
    }
    h
}

/// Hops between leaves `a`, `b` of a tree with `arity` children per level (root
/// first): `2·(levels − i)` when their paths part at level `i`.
fn tleaf_hops(arity: &[usize], a: usize, b: usize) -> u64 {
    let levels = arity.len();
    let (mut a, mut b) = (a, b);
    let mut part = levels; // no parting: the same leaf
    for (i, &k) in arity.iter().enumerate().rev() {
        if a % k != b % k {
            part = i;
        }
        a /= k;
        b /= k;
    }
    2 * (levels - part) as u64
}

/// Undirected merged adjacency: `adj[v]` = sorted `(neighbour, summed bytes)`, no
/// self-loops, no zero weights.
pub fn merge_edges(n: usize, edges: &[(u32, u32, u64)]) -> Vec<Vec<(u32, u64)>> {
    let mut pairs: Vec<(u32, u32, u64)> = edges
        .iter()
        .filter(|&&(a, b, w)| a != b && w > 0)
        .map(|&(a, b, w)| (a.min(b), a.max(b), w))
        .collect();
    pairs.sort_unstable_by_key(|&(a, b, _)| (a, b));
    let mut adj: Vec<Vec<(u32, u64)>> = vec![Vec::new(); n];
    let mut i = 0;
    while i < pairs.len() {
        let (a, b, mut w) = pairs[i];
        i += 1;
        while i < pairs.len() && pairs[i].0 == a && pairs[i].1 == b {
            w += pairs[i].2;
            i += 1;
        }
        assert!((b as usize) < n, "edge ({a},{b}) names a task >= n = {n}");
        adj[a as usize].push((b, w));
        adj[b as usize].push((a, w));
    }
    for l in &mut adj {
        l.sort_unstable_by_key(|e| e.0);
    }
    adj
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Divisor for the edge weights: their gcd `g` (exact; equal weights become 1, which
/// also keeps Scotch's behaviour identical to unit weights), times
/// `s = ceil(2·W/g·diam / 2³⁰)` when the weights divided by `g` are still too large for
/// Scotch's 32-bit sums (`W` = total undirected weight).
fn weight_divisor(adj: &[Vec<(u32, u64)>], diameter: u64) -> u64 {
    let g = adj.iter().flatten().fold(0, |g, e| gcd(g, e.1)).max(1);
    let arc_weight: u128 = adj.iter().flatten().map(|e| u128::from(e.1 / g)).sum();
    let s = (arc_weight * u128::from(diameter.max(1)))
        .div_ceil(1 << 30)
        .max(1);
    g.saturating_mul(u64::try_from(s).unwrap_or(u64::MAX))
}

fn grf_text(adj: &[Vec<(u32, u64)>], divisor: u64) -> String {
    let arcs: usize = adj.iter().map(Vec::len).sum();
    let mut s = String::with_capacity(16 + arcs * 8);
    let _ = write!(s, "0\n{} {}\n0 010\n", adj.len(), arcs);
    for l in adj {
        let _ = write!(s, "{}", l.len());
        for &(v, w) in l {
            let w = if divisor <= 1 {
                w
            } else {
                ((w + divisor / 2) / divisor).max(1)
            };
            let _ = write!(s, " {w} {v}");
        }
        s.push('\n');
    }
    s
}

/// Scotch graph file (version 0, base 0, edge weights) of the directed messages
/// `(src, dst, bytes)` among `n` tasks: `a → b` and `b → a` merge into one undirected
/// edge weighted by the sum of their bytes; self-loops and zero-byte messages dropped;
/// adjacency sorted. Weights are written unscaled (Scotch wraps them at 2³¹; [`run_gmap`]
/// scales).
pub fn write_grf(n: usize, edges: &[(u32, u32, u64)]) -> String {
    grf_text(&merge_edges(n, edges), 1)
}

fn torus_line(dims: &[usize]) -> String {
    let mut d: Vec<usize> = dims.to_vec();
    if d.len() > 5 {
        d.retain(|&x| x != 1);
    }
    let list = d.iter().map(usize::to_string).collect::<Vec<_>>().join(" ");
    match d.len() {
        2 => format!("torus2D {list}\n"),
        3 => format!("torus3D {list}\n"),
        k => format!("torusXD {k} {list}\n"),
    }
}

/// Terminal numbers of a recursive bipartition of nodes `0..k` under the distance
/// `hops` (row-major `k × k`): root domain 1, children of `i` are `2i` and `2i + 1`.
///
/// Each domain splits into halves of sizes `ceil(m/2)`, `floor(m/2)` (so the largest
/// terminal number stays below `4k`): two far-apart poles `p` (farthest from the first
/// member) and `q` (farthest from `p`) seed the halves by `d(v,p) − d(v,q)`, then up to
/// 16 rounds re-split by `Σd(v, A)/|A| − Σd(v, B)/|B|` until stable. The half holding
/// the lowest node index becomes `2i`; ties go to the lower node index, so the result is
/// deterministic.
pub fn deco_terminals(k: usize, hops: &[u32]) -> Vec<u64> {
    let d = |a: usize, b: usize| i64::from(hops[a * k + b]);
    let mut term = vec![0u64; k];
    let mut stack: Vec<(u64, Vec<usize>)> = vec![(1, (0..k).collect())];
    while let Some((num, set)) = stack.pop() {
        let m = set.len();
        if m == 1 {
            term[set[0]] = num;
            continue;
        }
        if m == 0 {
            continue;
        }
        let far = |from: usize, skip: usize| {
            let mut best = usize::MAX;
            let mut bd = -1;
            for &v in &set {
                if v != skip && d(from, v) > bd {
                    bd = d(from, v);
                    best = v;
                }
            }
            best
        };
        let p = far(set[0], usize::MAX);
        let q = far(p, p);
        let half = m.div_ceil(2);
        let mut keyed: Vec<(i64, usize)> = set.iter().map(|&v| (d(v, p) - d(v, q), v)).collect();
        keyed.sort_unstable();
        let mut order: Vec<usize> = keyed.iter().map(|e| e.1).collect();
        for _ in 0..16 {
            let (a, b) = order.split_at(half);
            // Compare average distances exactly: key = Σd(v,A)·|B| − Σd(v,B)·|A|.
            let (la, lb) = (a.len() as i64, b.len() as i64);
            let mut keyed: Vec<(i64, usize)> = order
                .iter()
                .map(|&v| {
                    let sa: i64 = a.iter().map(|&u| d(v, u)).sum();
                    let sb: i64 = b.iter().map(|&u| d(v, u)).sum();
                    (sa * lb - sb * la, v)
                })
                .collect();
            keyed.sort_unstable();
            let next: Vec<usize> = keyed.iter().map(|e| e.1).collect();
            let mut sa_old: Vec<usize> = order[..half].to_vec();
            let mut sa_new: Vec<usize> = next[..half].to_vec();
            sa_old.sort_unstable();
            sa_new.sort_unstable();
            if sa_old == sa_new {
                break;
            }
            order = next;
        }
        let (a, b) = order.split_at(half);
        let (mut a, mut b) = (a.to_vec(), b.to_vec());
        a.sort_unstable();
        b.sort_unstable();
        if b[0] < a[0] {
            std::mem::swap(&mut a, &mut b); // the half holding the lowest node is `2i`
        }
        stack.push((2 * num + 1, b));
        stack.push((2 * num, a));
    }
    term
}

/// Scotch target architecture text (see the module docs for each variant).
pub fn write_target(t: &ScotchTarget) -> String {
    match t {
        ScotchTarget::Torus { dims, .. } => torus_line(dims),
        ScotchTarget::TorusSubset { dims, nodes, .. } => {
            let list = nodes
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" ");
            format!("sub {} {list}\n{}", nodes.len(), torus_line(dims))
        }
        ScotchTarget::Distance {
            nodes,
            hops,
            ranks_per_node,
        } => {
            let k = *nodes;
            let term = deco_terminals(k, hops);
            let max = term.iter().copied().max().unwrap_or(1);
            let mut s = String::with_capacity(32 + k * 16 + k * k * 2);
            let _ = writeln!(s, "deco 0\n{k} {max}");
            for (v, t) in term.iter().enumerate() {
                let _ = writeln!(s, "{v} {ranks_per_node} {t}");
            }
            for a in 1..k {
                let row = &hops[a * k..a * k + a];
                let line = row.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
                s.push_str(&line);
                s.push('\n');
            }
            s
        }
        ScotchTarget::Tleaf { arity, .. } => {
            let l = arity.len();
            let levels: Vec<String> = arity
                .iter()
                .enumerate()
                .map(|(i, a)| format!("{a} {}", l - i))
                .collect();
            format!("tleaf {l} {}\n", levels.join(" "))
        }
    }
}

/// Result of one Scotch run.
#[derive(Clone, Debug)]
pub struct ScotchResult {
    /// Slot of each task: `node * ranks_per_node + core` (a valid one-task-per-slot
    /// assignment).
    pub slot_of_task: Vec<usize>,
    /// Scotch's own answer: the node index `k` of each task before repair.
    pub scotch_node: Vec<usize>,
    /// Tasks moved off over-full nodes by the repair (0 when Scotch was balanced).
    pub moved: usize,
    /// Wall time of the `scotch_gmap` process (s).
    pub scotch_seconds: f64,
    /// Wall time of the whole call: files, Scotch, parsing, repair (s).
    pub total_seconds: f64,
    /// Divisor applied to the edge weights to stay clear of Scotch's 32-bit integers.
    pub weight_divisor: u64,
}

/// Whether `scotch_gmap` can be started.
pub fn scotch_available() -> bool {
    Command::new("scotch_gmap").arg("-V").output().is_ok()
}

/// Runs `scotch_gmap -Cd` (deterministic) on the messages `edges` of `n` tasks.
pub fn run_gmap(
    n: usize,
    edges: &[(u32, u32, u64)],
    target: &ScotchTarget,
    workdir: &Path,
) -> Result<ScotchResult, String> {
    run_gmap_with(n, edges, target, workdir, &[])
}

/// [`run_gmap`] with extra `scotch_gmap` options (e.g. `["-cb"]` to enforce balance,
/// `["-b0.01"]` for a tighter imbalance tolerance).
pub fn run_gmap_with(
    n: usize,
    edges: &[(u32, u32, u64)],
    target: &ScotchTarget,
    workdir: &Path,
    extra_args: &[&str],
) -> Result<ScotchResult, String> {
    let start = Instant::now();
    target.validate()?;
    let k = target.node_count();
    let rpn = target.ranks_per_node();
    if n > k * rpn {
        return Err(format!("{n} tasks do not fit in {} slots", k * rpn));
    }
    if n == 0 {
        return Ok(ScotchResult {
            slot_of_task: Vec::new(),
            scotch_node: Vec::new(),
            moved: 0,
            scotch_seconds: 0.0,
            total_seconds: start.elapsed().as_secs_f64(),
            weight_divisor: 1,
        });
    }
    let adj = merge_edges(n, edges);
    let divisor = weight_divisor(&adj, target.diameter());

    fs::create_dir_all(workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;
    let grf = workdir.join("scotch.grf");
    let tgt = workdir.join("scotch.tgt");
    let map = workdir.join("scotch.map");
    fs::write(&grf, grf_text(&adj, divisor)).map_err(|e| format!("{}: {e}", grf.display()))?;
    fs::write(&tgt, write_target(target)).map_err(|e| format!("{}: {e}", tgt.display()))?;
    let _ = fs::remove_file(&map);

    let t0 = Instant::now();
    let out = Command::new("scotch_gmap")
        .arg("-Cd")
        .args(extra_args)
        .arg(&grf)
        .arg(&tgt)
        .arg(&map)
        .output()
        .map_err(|e| format!("cannot run scotch_gmap: {e}"))?;
    let scotch_seconds = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "scotch_gmap failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = fs::read_to_string(&map).map_err(|e| format!("{}: {e}", map.display()))?;
    let scotch_node = parse_map(&text, n, k)?;
    let (slot_of_task, moved) = slots_from_nodes(&adj, target, &scotch_node);
    Ok(ScotchResult {
        slot_of_task,
        scotch_node,
        moved,
        scotch_seconds,
        total_seconds: start.elapsed().as_secs_f64(),
        weight_divisor: divisor,
    })
}

/// Scotch's two-stage mapping with `scotch_gmap -Cd`: the tasks are cut into
/// node-sized parts on a one-level tree of the target's nodes (`tleaf 1 K 1`, a
/// complete graph), then the quotient graph (bytes between parts) is mapped onto
/// `target` with one part per node; a task keeps its core of the first stage. Returns
/// the slot of each task and the seconds of the two `scotch_gmap` runs.
pub fn run_two_stage(
    n: usize,
    edges: &[(u32, u32, u64)],
    target: &ScotchTarget,
    workdir: &Path,
) -> Result<(Vec<usize>, f64), String> {
    let k = target.node_count();
    let rpn = target.ranks_per_node();
    let tree = ScotchTarget::Tleaf {
        arity: vec![k],
        ranks_per_node: rpn,
    };
    let g = run_gmap(n, edges, &tree, workdir)?;
    let group: Vec<usize> = g.slot_of_task.iter().map(|s| s / rpn).collect();
    let qe: Vec<(u32, u32, u64)> = edges
        .iter()
        .map(|&(a, b, w)| (group[a as usize] as u32, group[b as usize] as u32, w))
        .filter(|&(a, b, _)| a != b)
        .collect();
    let mut one = target.clone();
    match &mut one {
        ScotchTarget::Torus { ranks_per_node, .. }
        | ScotchTarget::TorusSubset { ranks_per_node, .. }
        | ScotchTarget::Distance { ranks_per_node, .. }
        | ScotchTarget::Tleaf { ranks_per_node, .. } => *ranks_per_node = 1,
    }
    let q = run_gmap(k, &qe, &one, workdir)?;
    let slots = (0..n)
        .map(|t| q.slot_of_task[group[t]] * rpn + g.slot_of_task[t] % rpn)
        .collect();
    Ok((slots, g.scotch_seconds + q.scotch_seconds))
}

/// Parses a Scotch mapping file (count, then `task target` pairs in any order).
pub fn parse_map(text: &str, n: usize, targets: usize) -> Result<Vec<usize>, String> {
    let mut it = text.split_ascii_whitespace().map(|t| t.parse::<usize>());
    let count = it
        .next()
        .ok_or("empty mapping file")?
        .map_err(|e| format!("mapping count: {e}"))?;
    if count != n {
        return Err(format!("mapping has {count} lines, want {n}"));
    }
    let mut part = vec![usize::MAX; n];
    for _ in 0..count {
        let (Some(Ok(v)), Some(Ok(t))) = (it.next(), it.next()) else {
            return Err("truncated or malformed mapping file".into());
        };
        if v >= n || t >= targets {
            return Err(format!("mapping pair ({v}, {t}) out of range"));
        }
        if part[v] != usize::MAX {
            return Err(format!("task {v} mapped twice"));
        }
        part[v] = t;
    }
    Ok(part)
}

/// Slots from a node assignment `part` (node index per task, possibly over-full):
/// `repair`, then cores inside each node in task order. Returns the slots and the
/// number of tasks moved.
pub fn repair_to_slots(
    n: usize,
    edges: &[(u32, u32, u64)],
    target: &ScotchTarget,
    part: &[usize],
) -> (Vec<usize>, usize) {
    slots_from_nodes(&merge_edges(n, edges), target, part)
}

fn slots_from_nodes(
    adj: &[Vec<(u32, u64)>],
    target: &ScotchTarget,
    part: &[usize],
) -> (Vec<usize>, usize) {
    let rpn = target.ranks_per_node();
    let (node, moved) = repair(adj, target, part);
    let mut next_core = vec![0usize; target.node_count()];
    let slots = node
        .iter()
        .map(|&v| {
            let c = next_core[v];
            next_core[v] += 1;
            v * rpn + c
        })
        .collect();
    (slots, moved)
}

/// Makes `part` respect `ranks_per_node` tasks per node. On each over-full node (in
/// node order) the tasks with the least traffic to their node-mates (ties: higher task
/// index) leave; each then goes to the nearest node with a free slot by hop distance,
/// ties broken by most traffic to the tasks already there, then by lower node index.
/// Returns the repaired node of each task and the number of tasks moved.
fn repair(adj: &[Vec<(u32, u64)>], target: &ScotchTarget, part: &[usize]) -> (Vec<usize>, usize) {
    let k = target.node_count();
    let rpn = target.ranks_per_node();
    let mut node = part.to_vec();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (t, &v) in node.iter().enumerate() {
        members[v].push(t);
    }
    let mut evicted: Vec<(usize, usize)> = Vec::new(); // (task, origin node)
    for (v, list) in members.iter().enumerate() {
        if list.len() <= rpn {
            continue;
        }
        let mut keyed: Vec<(u64, std::cmp::Reverse<usize>)> = list
            .iter()
            .map(|&t| {
                let internal: u64 = adj[t]
                    .iter()
                    .filter(|e| node[e.0 as usize] == v)
                    .map(|e| e.1)
                    .sum();
                (internal, std::cmp::Reverse(t))
            })
            .collect();
        keyed.sort_unstable();
        let extra = list.len() - rpn;
        for &(_, std::cmp::Reverse(t)) in &keyed[..extra] {
            evicted.push((t, v));
        }
    }
    let mut count: Vec<usize> = members.iter().map(Vec::len).collect();
    for &(t, v) in &evicted {
        count[v] -= 1;
        node[t] = usize::MAX;
    }
    for &(t, origin) in &evicted {
        let mut best: Option<(u64, std::cmp::Reverse<u64>, usize)> = None;
        for (c, &cnt) in count.iter().enumerate() {
            if cnt >= rpn {
                continue;
            }
            let h = target.node_hops(origin, c);
            if best.is_some_and(|b| h > b.0) {
                continue;
            }
            let aff: u64 = adj[t]
                .iter()
                .filter(|e| node[e.0 as usize] == c)
                .map(|e| e.1)
                .sum();
            let cand = (h, std::cmp::Reverse(aff), c);
            if best.is_none_or(|b| cand < b) {
                best = Some(cand);
            }
        }
        let c = best.expect("slots suffice (checked)").2;
        node[t] = c;
        count[c] += 1;
    }
    (node, evicted.len())
}

/// Directed hop-bytes Σ bytes × hops(node(src), node(dst)) of a slot assignment.
pub fn hop_bytes(edges: &[(u32, u32, u64)], target: &ScotchTarget, slot_of_task: &[usize]) -> u64 {
    let rpn = target.ranks_per_node();
    edges
        .iter()
        .map(|&(a, b, w)| {
            w * target.node_hops(
                slot_of_task[a as usize] / rpn,
                slot_of_task[b as usize] / rpn,
            )
        })
        .sum()
}

/// Scores the node assignment of `slot_of_task` with Scotch's `gmtst` and returns its
/// `CommExpan` sum (= directed hop-bytes, see module docs). Weights are not scaled
/// (errors if one exceeds `i32::MAX`). Refuses `Distance` targets: Scotch 7.0.x `gmtst`
/// mis-scores `deco` architectures.
pub fn run_gmtst(
    n: usize,
    edges: &[(u32, u32, u64)],
    target: &ScotchTarget,
    slot_of_task: &[usize],
    workdir: &Path,
) -> Result<u64, String> {
    if matches!(target, ScotchTarget::Distance { .. }) {
        return Err("gmtst mis-scores deco targets in Scotch 7.0.x".into());
    }
    let adj = merge_edges(n, edges);
    if adj.iter().flatten().any(|e| e.1 > i32::MAX as u64) {
        return Err("edge weight beyond Scotch's 32-bit range".into());
    }
    fs::create_dir_all(workdir).map_err(|e| e.to_string())?;
    let grf = workdir.join("gmtst.grf");
    let tgt = workdir.join("gmtst.tgt");
    let map = workdir.join("gmtst.map");
    fs::write(&grf, grf_text(&adj, 1)).map_err(|e| e.to_string())?;
    fs::write(&tgt, write_target(target)).map_err(|e| e.to_string())?;
    let rpn = target.ranks_per_node();
    let mut m = format!("{n}\n");
    for (t, &s) in slot_of_task.iter().enumerate() {
        let _ = writeln!(m, "{t} {}", s / rpn);
    }
    fs::write(&map, m).map_err(|e| e.to_string())?;
    let out = Command::new("gmtst")
        .arg(&grf)
        .arg(&tgt)
        .arg(&map)
        .output()
        .map_err(|e| format!("cannot run gmtst: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        if let Some(rest) = line.split("CommExpan=").nth(1) {
            let inner = rest
                .split('(')
                .nth(1)
                .and_then(|r| r.split(')').next())
                .ok_or_else(|| format!("cannot parse gmtst line {line:?}"))?;
            return inner.trim().parse().map_err(|e| format!("{line:?}: {e}"));
        }
    }
    Err(format!(
        "no CommExpan in gmtst output: {} {}",
        text,
        String::from_utf8_lossy(&out.stderr)
    ))
}
