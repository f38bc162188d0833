//! Scotch's static mapping through libscotch (feature `scotch`, Debian
//! `libscotch-dev`): the configurations that are Scotch's best on the mapping
//! benchmark, computed in-process, as candidates of copr's optimiser.
//!
//! * **Direct** ([`ScotchStrategy::Direct`], `scotch_gmap -Cd`): the pattern's graph
//!   mapped onto the machine's nodes with libscotch's default strategy in a
//!   deterministic context with a fixed seed.
//! * **Two-stage** ([`ScotchStrategy::TwoStage`]): the graph is cut into node-sized
//!   parts on a one-level tree (`tleaf 1 K 1`: a complete graph of the `K` nodes),
//!   then the quotient graph (bytes between parts) is mapped onto the machine's nodes,
//!   one part per node.
//!
//! What libscotch is given:
//! * **the graph**: Scotch wants it symmetric, so the messages `a → b` and `b → a`
//!   become one undirected edge weighted by their summed bytes; with that weighting
//!   Scotch's objective, Σ over undirected edges of weight × target distance, is the
//!   directed hop-bytes. Its integers are 32-bit (`SCOTCH_Num` is `int` in the
//!   installed header, checked at run time with `SCOTCH_numSizeof()`), so the weights
//!   are divided by their gcd `g` times `⌈(W/g)·D / 2³⁰⌉` (`W` = Σ of the arc weights,
//!   `D` = the target's diameter), rounded to nearest and at least 1, which keeps
//!   Scotch's sums below 2³¹;
//! * **the target**: the machine's *nodes* (the cores of a node are not separate
//!   target vertices; mapping `n` tasks onto `K` equal nodes makes Scotch balance
//!   `n / K` tasks per node with intra-node traffic free, the hop-bytes model):
//!   a whole torus is `SCOTCH_archTorusX` (Scotch numbers the vertices `x` fastest, as
//!   [`copr_topology::Torus::coord_index`] does; at most 5 dimensions, size-1
//!   dimensions left out); the allocated nodes of a torus are a sub-architecture
//!   (`SCOTCH_archSub`) of it, node `k` being the `k`-th listed vertex; a network
//!   graph is the decomposition-defined architecture of its hosts
//!   (`SCOTCH_archBuild0` on the hosts and switches, one unit per link); a flat
//!   machine is a complete graph.
//!
//! What comes back: the node of each task. Scotch's balance tolerance can leave a node
//! with more tasks than cores; such nodes give up the tasks with the least traffic to
//! their node-mates, each to the nearest node with a free core (ties: the most traffic
//! to the tasks already there, then the lower node), and [`ScotchMapping::moved`]
//! counts them. The cores of a node are handed out in task order.
//!
//! Not supported (an [`ScotchError::Unsupported`]): nodes with different slot counts,
//! tori of more than 5 dimensions of extent above 1, two nodes at one torus router.

mod ffi;

use std::time::Instant;

use copr::lap::Perm;
use copr::rng::SplitMix;

use crate::candidates::{Options, Scored};
use crate::machine::{MapMachine, NetKind};
use crate::metrics::evaluate;
use crate::pattern::Pattern;
use crate::swaps::refine;

use ffi::{Arch, Graph, Num};

/// What went wrong in a mapping by libscotch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScotchError {
    /// The linked library is not the one the declarations were written for.
    #[error("libscotch: {what} is {found}, expected {want}")]
    Library {
        /// The property (`SCOTCH_numSizeof()`, a structure size, the version).
        what: &'static str,
        /// What the library reports.
        found: i64,
        /// What copr was built for.
        want: i64,
    },
    /// A libscotch call returned an error (libscotch printed its message on stderr).
    #[error("libscotch: {function} failed (return code {code})")]
    Call {
        /// The function.
        function: &'static str,
        /// Its return code.
        code: i32,
    },
    /// A count beyond libscotch's 32-bit integers.
    #[error("libscotch: {value} {what} exceed its 32-bit integers")]
    TooLarge {
        /// What is counted.
        what: &'static str,
        /// How many.
        value: u128,
    },
    /// The pattern does not fill the machine.
    #[error("the pattern has {tasks} tasks but the machine has {slots} slots")]
    Sizes {
        /// Tasks of the pattern.
        tasks: usize,
        /// Slots of the machine.
        slots: usize,
    },
    /// A machine or input the libscotch mapping does not handle.
    #[error("libscotch mapping: {reason}")]
    Unsupported {
        /// Why.
        reason: String,
    },
}

impl From<ScotchError> for copr::error::Error {
    fn from(e: ScotchError) -> Self {
        copr::error::Error::Extension(Box::new(e))
    }
}

/// One of Scotch's configurations (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScotchStrategy {
    /// The graph onto the machine's nodes (`scotch_gmap -Cd`).
    Direct,
    /// Node-sized parts on a one-level tree, then the quotient graph onto the nodes.
    TwoStage,
}

impl ScotchStrategy {
    /// Both, in the order the optimiser tries them.
    pub const ALL: [ScotchStrategy; 2] = [ScotchStrategy::Direct, ScotchStrategy::TwoStage];

    /// Name in reports: `scotch -Cd`, `scotch two-stage`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Direct => "scotch -Cd",
            Self::TwoStage => "scotch two-stage",
        }
    }
}

/// A mapping computed by libscotch.
#[derive(Debug, Clone)]
pub struct ScotchMapping {
    /// Scotch's answer: the node of each task before over-full nodes are repaired (for
    /// the two-stage mapping: the node the second stage gives each repaired part).
    pub scotch_node: Vec<usize>,
    /// Task → slot (`node · ranks_per_node + core`).
    pub map: Perm,
    /// Tasks moved off over-full nodes.
    pub moved: usize,
    /// The divisor applied to the bytes of the (first) graph handed to libscotch.
    pub weight_divisor: u64,
}

/// Maps `p` onto `m` with libscotch's configuration `s` (module docs).
///
/// # Complexity
/// libscotch's multilevel mapping, about `O((n + e)·log K)` for `n` tasks, `e`
/// communicating pairs and `K` nodes, plus `O(n + e)` here.
///
/// # Errors
/// [`ScotchError::Sizes`] when the pattern does not fill the machine,
/// [`ScotchError::Unsupported`] for the machines of the module docs,
/// [`ScotchError::Library`] / [`ScotchError::Call`] / [`ScotchError::TooLarge`] from
/// libscotch.
///
/// ```
/// use copr_mapping::{scotch::{map_with_scotch, ScotchStrategy}, CartGrid, Pattern};
/// let p = Pattern::grid(&CartGrid::new(vec![8, 8], vec![true; 2], vec![1; 2]).unwrap()).unwrap();
/// let m = copr_mapping::torus_machine(vec![4, 4], None, None, 4).unwrap();
/// let r = map_with_scotch(&p, &m, ScotchStrategy::Direct).unwrap();
/// assert_eq!(r.map.len(), 64);
/// assert_eq!(r.moved, 0); // 4 tasks on each of the 16 nodes
/// ```
pub fn map_with_scotch(
    p: &Pattern,
    m: &MapMachine,
    s: ScotchStrategy,
) -> Result<ScotchMapping, ScotchError> {
    if p.tasks() != m.slots() {
        return Err(ScotchError::Sizes {
            tasks: p.tasks(),
            slots: m.slots(),
        });
    }
    if m.used_slots() != m.slots() {
        return Err(ScotchError::Unsupported {
            reason: "nodes with different slot counts".into(),
        });
    }
    ffi::check_library()?;
    let (off, adj) = p.undirected();
    let k = m.nodes();
    let rpn = m.ranks_per_node();
    let hops = |a: usize, b: usize| u64::from(m.hops(a, b));
    if k == 1 {
        let node = vec![0; p.tasks()];
        return finish(node.clone(), node, 0, (k, rpn), 1);
    }
    let target = Target::of(m)?;
    match s {
        ScotchStrategy::Direct => {
            let (g, divisor) = graph(&off, &adj, target.diameter)?;
            let node = g.map(&target.arch)?;
            let (fixed, moved) = repair(&node, &off, &adj, k, rpn, hops);
            finish(node, fixed, moved, (k, rpn), divisor)
        }
        ScotchStrategy::TwoStage => {
            // node-sized parts: a complete graph of K vertices as a one-level tree,
            // whose diameter (leaf, switch, leaf) is 2 as the bench's target says
            let kk = Num::try_from(k).map_err(|_| ScotchError::TooLarge {
                what: "nodes",
                value: k as u128,
            })?;
            let tree = Arch::tleaf(&[kk], &[1])?;
            let (g, divisor) = graph(&off, &adj, 2)?;
            let part = g.map(&tree)?;
            let (part, moved) = repair(&part, &off, &adj, k, rpn, |a, b| u64::from(a != b));
            // the quotient graph: bytes between parts
            let mut q: Vec<Vec<(u32, u64)>> = vec![Vec::new(); k];
            for (t, &a) in part.iter().enumerate() {
                for &(u, w) in &adj[off[t]..off[t + 1]] {
                    let b = part[u as usize];
                    if a != b {
                        q[a].push((b as u32, w));
                    }
                }
            }
            let mut qoff = vec![0usize; k + 1];
            let mut qadj: Vec<(u32, u64)> = Vec::new();
            for (a, list) in q.iter_mut().enumerate() {
                list.sort_unstable_by_key(|e| e.0);
                for &(b, w) in list.iter() {
                    let fresh = qadj.len() == qoff[a];
                    match qadj.last_mut() {
                        Some(l) if !fresh && l.0 == b => l.1 = l.1.saturating_add(w),
                        _ => qadj.push((b, w)),
                    }
                }
                qoff[a + 1] = qadj.len();
            }
            let (qg, _) = graph(&qoff, &qadj, target.diameter)?;
            let place = qg.map(&target.arch)?;
            let (place, _) = repair(&place, &qoff, &qadj, k, 1, hops);
            let node: Vec<usize> = part.iter().map(|&g| place[g]).collect();
            finish(node.clone(), node, moved, (k, rpn), divisor)
        }
    }
}

/// The mapping of a node assignment: cores in task order.
fn finish(
    scotch_node: Vec<usize>,
    node: Vec<usize>,
    moved: usize,
    (k, rpn): (usize, usize),
    weight_divisor: u64,
) -> Result<ScotchMapping, ScotchError> {
    let mut next = vec![0usize; k];
    let mut fwd = Vec::with_capacity(node.len());
    for (t, &v) in node.iter().enumerate() {
        // the repair leaves at most `rpn` tasks on every node when the tasks fill the
        // machine (checked by the caller)
        if v >= k || next[v] >= rpn {
            return Err(ScotchError::Unsupported {
                reason: format!("task {t} left without a core (node {v})"),
            });
        }
        fwd.push(v * rpn + next[v]);
        next[v] += 1;
    }
    let map = Perm::from_forward(fwd).map_err(|e| ScotchError::Unsupported {
        reason: e.to_string(),
    })?;
    Ok(ScotchMapping {
        scotch_node,
        map,
        moved,
        weight_divisor,
    })
}

/// The machine as a libscotch architecture, with the diameter used to scale weights.
struct Target {
    arch: Arch,
    diameter: u64,
}

impl Target {
    fn of(m: &MapMachine) -> Result<Self, ScotchError> {
        let k = m.nodes();
        let num = |v: usize, what| {
            Num::try_from(v).map_err(|_| ScotchError::TooLarge {
                what,
                value: v as u128,
            })
        };
        match m.kind() {
            NetKind::Torus(t) => {
                let linear: Vec<usize> = (0..k).map(|i| t.coord_index(t.coords(i))).collect();
                let mut seen = vec![false; t.num_coords()];
                for &v in &linear {
                    if std::mem::replace(&mut seen[v], true) {
                        return Err(ScotchError::Unsupported {
                            reason: "two nodes at one torus router".into(),
                        });
                    }
                }
                let mut dims: Vec<usize> = t.dims().iter().map(|&d| d as usize).collect();
                if dims.len() > 5 {
                    // a dimension of extent 1 adds nothing to the linear index
                    dims.retain(|&d| d != 1);
                }
                if dims.len() > 5 {
                    return Err(ScotchError::Unsupported {
                        reason: format!("a torus of {} dimensions (Scotch: 5)", dims.len()),
                    });
                }
                let diameter = dims.iter().map(|&d| (d / 2) as u64).sum();
                let sdims = dims
                    .iter()
                    .map(|&d| num(d, "torus extent"))
                    .collect::<Result<Vec<_>, _>>()?;
                let torus = Arch::torus(&sdims)?;
                let whole = linear.len() == t.num_coords()
                    && linear.iter().enumerate().all(|(i, &v)| i == v);
                let arch = if whole {
                    torus
                } else {
                    let list = linear
                        .iter()
                        .map(|&v| num(v, "torus vertex"))
                        .collect::<Result<Vec<_>, _>>()?;
                    Arch::sub(torus, &list)?
                };
                Ok(Self { arch, diameter })
            }
            NetKind::Graph(net, hosts) => {
                // the hosts and switches, one unit per link (both directions merged)
                let g = net.graph();
                let n = g.node_count();
                let mut nb: Vec<Vec<Num>> = vec![Vec::new(); n];
                for e in g.edge_indices() {
                    if let Some((a, b)) = g.edge_endpoints(e) {
                        let (a, b) = (a.index(), b.index());
                        if a != b {
                            nb[a].push(num(b, "network vertex")?);
                            nb[b].push(num(a, "network vertex")?);
                        }
                    }
                }
                let mut verttab = vec![0 as Num];
                let mut edgetab = Vec::new();
                for list in &mut nb {
                    list.sort_unstable();
                    list.dedup();
                    edgetab.extend_from_slice(list);
                    verttab.push(num(edgetab.len(), "network links")?);
                }
                let edlotab = vec![1; edgetab.len()];
                let graph = Graph::new(verttab, edgetab, edlotab)?;
                let list = hosts
                    .iter()
                    .map(|&h| num(net.host_vertex(h).index(), "network vertex"))
                    .collect::<Result<Vec<_>, _>>()?;
                let arch = Arch::from_graph(&graph, &list)?;
                let diameter = (0..k)
                    .flat_map(|a| (0..k).map(move |b| (a, b)))
                    .map(|(a, b)| u64::from(m.hops(a, b)))
                    .max()
                    .unwrap_or(1);
                Ok(Self { arch, diameter })
            }
            NetKind::Flat => Ok(Self {
                arch: Arch::complete(num(k, "nodes")?)?,
                diameter: 1,
            }),
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// libscotch's graph of the CSR adjacency `(off, adj)`, weights scaled (module docs);
/// returns the divisor too.
fn graph(off: &[usize], adj: &[(u32, u64)], diameter: u64) -> Result<(Graph, u64), ScotchError> {
    let g = adj.iter().fold(0, |g, e| gcd(g, e.1)).max(1);
    let total: u128 = adj.iter().map(|e| u128::from(e.1 / g)).sum();
    let s = (total * u128::from(diameter.max(1)))
        .div_ceil(1 << 30)
        .max(1);
    let divisor = g.saturating_mul(u64::try_from(s).unwrap_or(u64::MAX));
    let too_large = |what, v: usize| ScotchError::TooLarge {
        what,
        value: v as u128,
    };
    let verttab = off
        .iter()
        .map(|&o| Num::try_from(o).map_err(|_| too_large("arcs", o)))
        .collect::<Result<Vec<_>, _>>()?;
    let edgetab = adj
        .iter()
        .map(|&(v, _)| Num::try_from(v).map_err(|_| too_large("tasks", v as usize)))
        .collect::<Result<Vec<_>, _>>()?;
    let edlotab = adj
        .iter()
        .map(|&(_, w)| {
            let w = if divisor <= 1 {
                w
            } else {
                (w / divisor + u64::from(w % divisor >= divisor - divisor / 2)).max(1)
            };
            // below 2³⁰ by the choice of the divisor
            Num::try_from(w).unwrap_or(Num::MAX)
        })
        .collect();
    Ok((Graph::new(verttab, edgetab, edlotab)?, divisor))
}

/// At most `cap` tasks per node (module docs): the node of each task and the number
/// of tasks moved. `dist` is the distance between nodes.
fn repair(
    node: &[usize],
    off: &[usize],
    adj: &[(u32, u64)],
    nodes: usize,
    cap: usize,
    dist: impl Fn(usize, usize) -> u64,
) -> (Vec<usize>, usize) {
    let mut node = node.to_vec();
    let mut count = vec![0usize; nodes];
    for &v in &node {
        count[v] += 1;
    }
    if count.iter().all(|&c| c <= cap) {
        return (node, 0);
    }
    // traffic of task t to the tasks on node v
    let to_node = |node: &[usize], t: usize, v: usize| -> u64 {
        adj[off[t]..off[t + 1]]
            .iter()
            .filter(|e| node[e.0 as usize] == v)
            .map(|e| e.1)
            .sum()
    };
    let mut leaving: Vec<(usize, usize)> = Vec::new(); // (task, its node)
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for (t, &v) in node.iter().enumerate() {
        members[v].push(t);
    }
    for (v, list) in members.iter().enumerate() {
        if list.len() > cap {
            let mut keyed: Vec<(u64, std::cmp::Reverse<usize>)> = list
                .iter()
                .map(|&t| (to_node(&node, t, v), std::cmp::Reverse(t)))
                .collect();
            keyed.sort_unstable();
            leaving.extend(keyed[..list.len() - cap].iter().map(|k| (k.1 .0, v)));
        }
    }
    for &(t, v) in &leaving {
        count[v] -= 1;
        node[t] = usize::MAX;
    }
    for &(t, from) in &leaving {
        let mut best: Option<(u64, std::cmp::Reverse<u64>, usize)> = None;
        for (c, &n) in count.iter().enumerate() {
            if n >= cap {
                continue;
            }
            let key = (dist(from, c), std::cmp::Reverse(to_node(&node, t, c)), c);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        if let Some((_, _, c)) = best {
            node[t] = c;
            count[c] += 1;
        }
    }
    (node, leaving.len())
}

/// Tasks per second of the optimiser's budget up to which libscotch is asked (its
/// mappings take about 5 s of this machine for 16 384 tasks, longer than the budget
/// for 10⁵ tasks; it cannot be stopped at a deadline).
pub const TASKS_PER_BUDGET_SECOND: usize = 4096;

/// `starts` and, for a general graph (no grid, not recognised as one) of more tasks
/// than the optimiser enumerates exhaustively (8) and at most
/// [`TASKS_PER_BUDGET_SECOND`] per second of the budget, on more than one node,
/// libscotch's mappings (both configurations at once, one thread each), scored: the
/// optimiser's hook (feature `scotch`). Each is also refined by swaps (at most 20
/// passes, cut at `deadline`) and pushed to `cands` when that changed it.
pub(crate) fn with_starts(
    p: &Pattern,
    m: &MapMachine,
    starts: &[Scored],
    opts: &Options,
    deadline: Instant,
    cands: &mut Vec<Scored>,
) -> Vec<Scored> {
    let budget = opts.budget;
    let mut out = starts.to_vec();
    let most = (budget.as_secs_f64() * TASKS_PER_BUDGET_SECOND as f64) as usize;
    if p.shape().is_some()
        || m.nodes() < 2
        || p.tasks() <= crate::multilevel::EXHAUSTIVE_TASKS
        || p.tasks() > most
        || crate::recognise::recognise_grid(p).is_some()
    {
        return out;
    }
    let runs: Vec<Option<ScotchMapping>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ScotchStrategy::ALL
            .iter()
            .map(|&s| scope.spawn(move || map_with_scotch(p, m, s).ok()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let mut rng = SplitMix(opts.seed);
    let runs: Vec<(ScotchStrategy, ScotchMapping)> = ScotchStrategy::ALL
        .into_iter()
        .zip(runs)
        .filter_map(|(s, r)| r.map(|r| (s, r)))
        .collect();
    for (s, r) in runs {
        let origin = format!("libscotch, {}", s.name());
        let mut map = r.map.clone();
        // its passes are counted; the deadline only cuts them
        if refine(p, m, &mut map, &mut rng, deadline, 20) {
            cands.push(Scored {
                metrics: evaluate(p, m, &map),
                origin: format!("{origin} + swaps"),
                map,
            });
        }
        out.push(Scored {
            metrics: evaluate(p, m, &r.map),
            origin,
            map: r.map,
        });
    }
    out
}
