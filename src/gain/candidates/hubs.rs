//! The restricted problem with one hub per process group: exact on machines whose nodes
//! hold hundreds of ranks.
//!
//! Off its priced pairs `E_x`, a row's cost is bounded per group, `C(x, y) ≥ B_x(g)` for
//! every process `y` of group `g` ([`copr_cost_models::SolverHints::add_group_bounds`]); for the latency +
//! bandwidth model on a node that sends `x` nothing the bound is the cost itself, the
//! same at every rank of the node. Pricing such columns one by one converges slowly when
//! a node holds hundreds of interchangeable ranks. Here each group is a *hub* instead:
//! row `x` may reach hub `g` at cost `B_x(g)` (when every pair of `E_x` in `g` costs no
//! more than `B_x(g)`, so the hub prices no pair of `g` below its cost), and a hub
//! passes its rows on to any of its processes at no cost. The cheapest such flow, where
//! every row sends one unit and every process takes one, is a transportation problem of
//! `Σ |E_x| + rows · groups` arcs rather than `p²` pairs; it prices every pair
//! `(x, y ∉ E_x)` of a hub row at `B_x(g)`, so on such machines it is the dense problem
//! itself.
//!
//! Solved by successive shortest paths (Dijkstra on reduced costs) with potentials
//! `u_x` (rows), `v_y` (processes) and `h_g` (hubs): `u_x + v_y ≤ C(x, y)` on `E`,
//! `u_x + h_g ≤ B_x(g)` on the hub arcs, `v_y ≤ h_g` in each group, with equality on the
//! arcs that carry flow. A hub keeps no pairing: any row it carries can be rerouted, and
//! any process it feeds can be freed, in one step. Rows that receive nothing (`wild`) are
//! left out as in the column generation and take the free processes at the end, which
//! keep `v_y = 0 ≥` every other `v` (the search never finishes a free process and
//! potentials only fall).

use super::colgen::{fill_unmatched, Item, Search};

const NONE: u32 = u32::MAX;
/// Marks a hub in a row's or a process's state (the rest is the hub's index).
const HUB: u32 = 1 << 31;

/// The problem: rows' exact pairs, their hub arcs, and the groups.
pub(super) struct HubProblem<'a> {
    /// `E_x`: `(y, C(x, y))`, each holding a free-standing perfect matching with the
    /// hubs (the diagonal, or the diagonal's hub).
    pub(super) rows: &'a [super::colgen::Row],
    /// `(g, B_x(g))` per row: the hubs row `x` may use.
    pub(super) hubs: &'a [Vec<(u32, f64)>],
    /// Rows that cost 0 everywhere: left out, they take the free processes at the end.
    pub(super) wild: &'a [bool],
    /// The processes of each group.
    pub(super) members: &'a [&'a [u32]],
    /// Node visits of the searches at most, then `None`.
    pub(super) max_work: u64,
}

/// The optimum of a [`HubProblem`].
pub(super) struct HubSolution {
    /// `sigma[x]`: the process of row `x`.
    pub(super) sigma: Vec<usize>,
    /// The potentials at the optimum (rows' `u` are the flow's own).
    pub(super) u: Vec<f64>,
    pub(super) v: Vec<f64>,
    /// Node visits of the searches.
    pub(super) work: u64,
}

/// A set of `u32` with O(1) insert and removal (the position of each member kept).
struct Pool {
    items: Vec<Vec<u32>>,
    pos: Vec<u32>,
}

impl Pool {
    fn new(pools: usize, universe: usize) -> Self {
        Self {
            items: vec![Vec::new(); pools],
            pos: vec![NONE; universe],
        }
    }
    fn insert(&mut self, k: usize, a: u32) {
        self.pos[a as usize] = self.items[k].len() as u32;
        self.items[k].push(a);
    }
    fn remove(&mut self, k: usize, a: u32) {
        let at = self.pos[a as usize] as usize;
        let list = &mut self.items[k];
        debug_assert_eq!(list[at], a);
        list.swap_remove(at);
        if let Some(&moved) = list.get(at) {
            self.pos[moved as usize] = at as u32;
        }
        self.pos[a as usize] = NONE;
    }
}

/// Node ids of the searches: rows `0..p`, processes `p..2p`, hubs `2p..`.
struct Ids {
    p: usize,
}

enum Node {
    Row(usize),
    Col(usize),
    Hub(usize),
}

impl Ids {
    fn row(&self, x: usize) -> u32 {
        x as u32
    }
    fn col(&self, y: usize) -> u32 {
        (self.p + y) as u32
    }
    fn hub(&self, g: usize) -> u32 {
        (2 * self.p + g) as u32
    }
    fn kind(&self, n: u32) -> Node {
        let n = n as usize;
        if n < self.p {
            Node::Row(n)
        } else if n < 2 * self.p {
            Node::Col(n - self.p)
        } else {
            Node::Hub(n - 2 * self.p)
        }
    }
}

struct Solver<'a> {
    pb: &'a HubProblem<'a>,
    ids: Ids,
    u: Vec<f64>,
    v: Vec<f64>,
    h: Vec<f64>,
    /// A row's process, `HUB | g`, or `NONE`.
    out: Vec<u32>,
    /// A process's row, `HUB | g`, or `NONE`.
    inn: Vec<u32>,
    /// Rows each hub carries, and processes each hub feeds.
    carried: Pool,
    fed: Pool,
    /// Search scratch, by node id.
    search: Search,
    /// The distance of the node being finished, and a free process reached at it.
    level: f64,
    sink: u32,
    work: u64,
}

impl<'a> Solver<'a> {
    fn new(pb: &'a HubProblem<'a>) -> Self {
        let p = pb.rows.len();
        let groups = pb.members.len();
        let nodes = 2 * p + groups;
        Self {
            pb,
            ids: Ids { p },
            u: vec![0.0; p],
            v: vec![0.0; p],
            h: vec![0.0; groups],
            out: vec![NONE; p],
            inn: vec![NONE; p],
            carried: Pool::new(groups, p),
            fed: Pool::new(groups, p),
            search: Search::new(nodes),
            level: f64::NEG_INFINITY,
            sink: NONE,
            work: 0,
        }
    }

    /// `u_x` the row's cheapest arc (v = h = 0), and each row that finds its cheapest
    /// arc's process (or a process of its cheapest hub) free takes it; the other rows,
    /// left to the searches.
    fn greedy(&mut self) -> Vec<usize> {
        let p = self.pb.rows.len();
        // the next process of each hub that may be free
        let mut cursor = vec![0usize; self.pb.members.len()];
        let mut left = Vec::new();
        for x in (0..p).filter(|&x| !self.pb.wild[x]) {
            let direct = self.pb.rows[x]
                .iter()
                .map(|e| e.1)
                .fold(f64::INFINITY, f64::min);
            let hub = self.pb.hubs[x]
                .iter()
                .map(|e| e.1)
                .fold(f64::INFINITY, f64::min);
            self.u[x] = direct.min(hub);
            let pick = self.pb.rows[x]
                .iter()
                .find(|&&(y, c)| c <= self.u[x] && self.inn[y as usize] == NONE);
            if let Some(&(y, _)) = pick {
                self.out[x] = y;
                self.inn[y as usize] = x as u32;
                continue;
            }
            let mut taken = false;
            for &(g, b) in &self.pb.hubs[x] {
                if b > self.u[x] {
                    continue;
                }
                let g = g as usize;
                let members = self.pb.members[g];
                while cursor[g] < members.len() && self.inn[members[cursor[g]] as usize] != NONE {
                    cursor[g] += 1;
                }
                if let Some(&y) = members.get(cursor[g]) {
                    self.route(x, g, y as usize);
                    taken = true;
                    break;
                }
            }
            if !taken {
                left.push(x);
            }
        }
        left
    }

    fn route(&mut self, x: usize, g: usize, y: usize) {
        self.out[x] = HUB | g as u32;
        self.carried.insert(g, x as u32);
        self.inn[y] = HUB | g as u32;
        self.fed.insert(g, y as u32);
    }

    fn reach(&mut self, n: u32, d: f64, from: u32) {
        let k = n as usize;
        if self.search.done[k] == self.search.stamp {
            return;
        }
        if self.search.seen[k] != self.search.stamp || d < self.search.dist[k] {
            self.search.seen[k] = self.search.stamp;
            self.search.dist[k] = d;
            self.search.pred[k] = from;
            self.search.heap.push(Item(d, n));
            // a free process at the distance being finished ends the search: nothing
            // left in the heap is nearer
            let free_process =
                k >= self.ids.p && k < 2 * self.ids.p && self.inn[k - self.ids.p] == NONE;
            if d <= self.level && free_process {
                self.sink = n;
            }
        }
    }

    /// One search from free row `src` to the nearest free process, the potentials'
    /// update, and the augmentation along the path.
    fn augment(&mut self, src: usize) {
        self.search.stamp += 1;
        self.search.heap.clear();
        self.search.finished.clear();
        let s = self.ids.row(src);
        self.search.seen[s as usize] = self.search.stamp;
        self.search.dist[s as usize] = 0.0;
        self.search.pred[s as usize] = NONE;
        self.search.heap.push(Item(0.0, s));
        self.sink = NONE;
        self.level = f64::NEG_INFINITY;
        let (sink, total) = loop {
            let Some(Item(d, n)) = self.search.heap.pop() else {
                unreachable!("no augmenting path from row {src}");
            };
            let k = n as usize;
            if self.search.done[k] == self.search.stamp || d > self.search.dist[k] {
                continue;
            }
            self.work += 1;
            self.level = d;
            match self.ids.kind(n) {
                Node::Col(y) if self.inn[y] == NONE => break (n, d),
                Node::Col(y) => {
                    self.search.done[k] = self.search.stamp;
                    self.search.finished.push(n);
                    let owner = self.inn[y];
                    // the reverse arc of the flow into y: tight
                    let back = if owner & HUB != 0 {
                        self.ids.hub((owner & !HUB) as usize)
                    } else {
                        self.ids.row(owner as usize)
                    };
                    self.reach(back, d, n);
                }
                Node::Row(x) => {
                    self.search.done[k] = self.search.stamp;
                    self.search.finished.push(n);
                    let pb = self.pb;
                    self.work += (pb.rows[x].len() + pb.hubs[x].len()) as u64;
                    for &(y, c) in &pb.rows[x] {
                        let r = (c - self.u[x] - self.v[y as usize]).max(0.0);
                        self.reach(self.ids.col(y as usize), d + r, n);
                    }
                    for &(g, b) in &pb.hubs[x] {
                        let r = (b - self.u[x] - self.h[g as usize]).max(0.0);
                        self.reach(self.ids.hub(g as usize), d + r, n);
                    }
                }
                Node::Hub(g) => {
                    self.search.done[k] = self.search.stamp;
                    self.search.finished.push(n);
                    let pb = self.pb;
                    // the rows it carries (tight reverse arcs), and all its processes:
                    // the arcs to them have no capacity limit, so those it feeds are
                    // reached too (tight), which keeps their `v_y = h_g`
                    self.work += (self.carried.items[g].len() + pb.members[g].len()) as u64;
                    for i in 0..self.carried.items[g].len() {
                        let x = self.carried.items[g][i];
                        self.reach(self.ids.row(x as usize), d, n);
                    }
                    for &y in pb.members[g] {
                        let r = (self.h[g] - self.v[y as usize]).max(0.0);
                        self.reach(self.ids.col(y as usize), d + r, n);
                    }
                }
            }
            if self.sink != NONE {
                break (self.sink, d);
            }
        };
        // potentials: every finished node moves by (total − its distance)
        for i in 0..self.search.finished.len() {
            let n = self.search.finished[i];
            let delta = total - self.search.dist[n as usize];
            match self.ids.kind(n) {
                Node::Row(x) => self.u[x] += delta,
                Node::Col(y) => self.v[y] -= delta,
                Node::Hub(g) => self.h[g] -= delta,
            }
        }
        // the flow along the path, from the source on (a row leaves its old hub before
        // it joins its new one)
        let mut path = vec![sink];
        while self.search.pred[*path.last().expect("non-empty") as usize] != NONE {
            path.push(self.search.pred[*path.last().expect("non-empty") as usize]);
        }
        for w in path.windows(2).rev() {
            let (a, b) = (w[1], w[0]);
            match (self.ids.kind(a), self.ids.kind(b)) {
                (Node::Row(x), Node::Col(y)) => {
                    self.out[x] = y as u32;
                    self.inn[y] = x as u32;
                }
                (Node::Row(x), Node::Hub(g)) => {
                    self.out[x] = HUB | g as u32;
                    self.carried.insert(g, x as u32);
                }
                (Node::Hub(g), Node::Col(y)) => {
                    self.inn[y] = HUB | g as u32;
                    self.fed.insert(g, y as u32);
                }
                // reverse arcs: the flow they cancel; the other end's new arc is set
                // by its neighbour on the path
                (Node::Hub(g), Node::Row(x)) => self.carried.remove(g, x as u32),
                (Node::Col(y), Node::Hub(g)) => self.fed.remove(g, y as u32),
                (Node::Col(_), Node::Row(_)) => {}
                _ => unreachable!("no such arc"),
            }
        }
    }

    fn sigma(&self) -> Vec<usize> {
        let p = self.out.len();
        let mut sigma = vec![usize::MAX; p];
        let mut taken = vec![false; p];
        for (s, &o) in sigma.iter_mut().zip(&self.out) {
            if o != NONE && o & HUB == 0 {
                *s = o as usize;
                taken[o as usize] = true;
            }
        }
        for (rows, cols) in self.carried.items.iter().zip(&self.fed.items) {
            for (&x, &y) in rows.iter().zip(cols) {
                sigma[x as usize] = y as usize;
                taken[y as usize] = true;
            }
        }
        let unmatched = (0..p).filter(|&x| self.out[x] == NONE);
        fill_unmatched(&mut sigma, &mut taken, unmatched);
        sigma
    }
}

/// The cheapest flow of `pb` (module docs); `None` once the searches pass
/// `pb.max_work` node visits.
///
/// # Complexity
/// One search per row the greedy start leaves, each O((arcs of the rows it finishes +
/// processes of the hubs it finishes) · log).
pub(super) fn solve(pb: &HubProblem<'_>) -> Option<HubSolution> {
    let mut s = Solver::new(pb);
    for x in s.greedy() {
        if s.work > pb.max_work {
            return None;
        }
        s.augment(x);
    }
    debug_assert!((0..pb.members.len()).all(|g| s.carried.items[g].len() == s.fed.items[g].len()));
    Some(HubSolution {
        sigma: s.sigma(),
        work: s.work,
        u: s.u,
        v: s.v,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn permutations(p: usize) -> Vec<Vec<usize>> {
        if p == 0 {
            return vec![Vec::new()];
        }
        let mut out = Vec::new();
        for f in permutations(p - 1) {
            for at in 0..=f.len() {
                let mut g = f.clone();
                g.insert(at, p - 1);
                out.push(g);
            }
        }
        out
    }

    /// The rows as the column generation keeps them.
    fn rows_of(rows: &[Vec<(u32, f64)>]) -> Vec<super::super::colgen::Row> {
        rows.iter()
            .cloned()
            .map(super::super::colgen::Row::new)
            .collect()
    }

    /// A random problem: `(rows, hub arcs, wild, group of each process, groups)`.
    type Random = (
        Vec<Vec<(u32, f64)>>,
        Vec<Vec<(u32, f64)>>,
        Vec<bool>,
        Vec<u32>,
        usize,
    );

    fn random_problem(rng: &mut Rng, p: usize) -> Random {
        let groups = 1 + rng.below(3) as usize;
        let group_of: Vec<u32> = (0..p).map(|_| rng.below(groups as u64) as u32).collect();
        let wild: Vec<bool> = (0..p).map(|_| rng.below(5) == 0).collect();
        let mut rows = Vec::new();
        let mut hubs = Vec::new();
        for (x, &w) in wild.iter().enumerate() {
            let mut row = Vec::new();
            for y in 0..p as u32 {
                if y as usize == x || rng.below(3) == 0 {
                    // small integers: ties, as in costs of equal nodes
                    row.push((y, rng.below(8) as f64));
                }
            }
            let mut arcs = Vec::new();
            for g in 0..groups as u32 {
                if rng.below(2) == 0 {
                    arcs.push((g, rng.below(8) as f64));
                }
            }
            if w {
                row.clear();
                rows.push(row);
                hubs.push(Vec::new());
            } else {
                rows.push(row);
                hubs.push(arcs);
            }
        }
        (rows, hubs, wild, group_of, groups)
    }

    /// `min(C(x, y) on E, B_x(g(y)) on a hub arc)`; 0 for a wild row; +∞ otherwise.
    fn pair_cost(r: &Random, x: usize, y: usize) -> f64 {
        let (rows, hubs, wild, group_of, _) = r;
        if wild[x] {
            return 0.0;
        }
        let e = rows[x]
            .iter()
            .find(|e| e.0 as usize == y)
            .map_or(f64::INFINITY, |e| e.1);
        let h = hubs[x]
            .iter()
            .find(|a| a.0 == group_of[y])
            .map_or(f64::INFINITY, |a| a.1);
        e.min(h)
    }

    #[test]
    fn hub_flow_matches_the_brute_force_and_its_potentials_prove_it() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut with_hub_pairs = 0;
        for case in 0..600 {
            let p = 2 + case % 6;
            let r = random_problem(&mut rng, p);
            let (rows, hubs, wild, group_of, groups) = &r;
            let members: Vec<Vec<u32>> = (0..*groups as u32)
                .map(|g| {
                    (0..p as u32)
                        .filter(|&y| group_of[y as usize] == g)
                        .collect()
                })
                .collect();
            let members: Vec<&[u32]> = members.iter().map(Vec::as_slice).collect();
            let kept = rows_of(rows);
            let pb = HubProblem {
                rows: &kept,
                hubs,
                wild,
                members: &members,
                max_work: u64::MAX,
            };
            let sol = solve(&pb).expect("no work limit");
            let best = permutations(p)
                .iter()
                .map(|f| (0..p).map(|x| pair_cost(&r, x, f[x])).sum::<f64>())
                .fold(f64::INFINITY, f64::min);
            let mut seen = vec![false; p];
            for &y in &sol.sigma {
                assert!(!seen[y], "case {case}: not a permutation {:?}", sol.sigma);
                seen[y] = true;
            }
            let got: f64 = (0..p).map(|x| pair_cost(&r, x, sol.sigma[x])).sum();
            assert_eq!(got, best, "case {case}: σ {:?}", sol.sigma);
            // dual feasibility on every pair and no duality gap
            let any_wild = wild.iter().any(|&w| w);
            for x in (0..p).filter(|&x| !wild[x]) {
                for y in 0..p {
                    assert!(
                        sol.u[x] + sol.v[y] <= pair_cost(&r, x, y) + 1e-9,
                        "case {case}: u[{x}] + v[{y}] above the cost"
                    );
                }
            }
            if any_wild {
                assert!(sol.v.iter().all(|&v| v <= 1e-9), "case {case}");
            }
            let dual: f64 = (0..p).filter(|&x| !wild[x]).map(|x| sol.u[x]).sum::<f64>()
                + sol.v.iter().sum::<f64>();
            assert!(
                (dual - best).abs() <= 1e-9,
                "case {case}: dual {dual} vs {best}"
            );
            with_hub_pairs += usize::from((0..p).any(|x| {
                !wild[x]
                    && !rows[x].iter().any(|e| {
                        e.0 as usize == sol.sigma[x] && e.1 == pair_cost(&r, x, sol.sigma[x])
                    })
            }));
        }
        assert!(with_hub_pairs > 100, "{with_hub_pairs} optima use a hub");
    }

    #[test]
    fn the_work_limit_stops_the_searches() {
        // rows 1 and 2 want process 0, which row 0 takes first: two searches
        let rows = vec![
            vec![(0, 0.0)],
            vec![(0, 0.0), (1, 5.0)],
            vec![(0, 0.0), (2, 5.0)],
        ];
        let hubs = vec![Vec::new(); 3];
        let wild = vec![false; 3];
        let all = [0u32, 1, 2];
        let members: Vec<&[u32]> = vec![&all];
        let rows = rows_of(&rows);
        let mut pb = HubProblem {
            rows: &rows,
            hubs: &hubs,
            wild: &wild,
            members: &members,
            max_work: u64::MAX,
        };
        let full = solve(&pb).expect("no limit");
        assert_eq!(full.sigma, [0, 1, 2]);
        assert!(full.work > 0);
        pb.max_work = 0;
        assert!(solve(&pb).is_none(), "the second search passes the limit");
    }
}
