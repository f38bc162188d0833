//! The links of the route between every two nodes of a small torus, listed once.
//!
//! Link loads are kept up to date by routing messages again and again (balancing
//! swaps re-route the messages of the tasks they move). On a torus each route is
//! computed from coordinates, a few modular steps per hop; on a torus of up to
//! [`ROUTE_TABLE_NODES`] nodes the routes of all pairs fit in a few MB and are read
//! from [`RouteTable`] instead. The table lists exactly the links, in the same order,
//! as `Torus::for_each_route_link`.

use copr_topology::Torus;

/// Tori of at most this many nodes get a [`RouteTable`].
pub(crate) const ROUTE_TABLE_NODES: usize = 512;

/// At most this many links are listed over all pairs (2 bytes each: 4 MiB).
const ROUTE_TABLE_ENTRIES: usize = 1 << 21;

/// The route between nodes `a` and `b` of a torus is
/// `links[start[a·n + b] .. start[a·n + b + 1]]`.
#[derive(Debug)]
pub(crate) struct RouteTable {
    nodes: usize,
    start: Vec<u32>,
    links: Vec<u16>,
}

impl RouteTable {
    /// The table of `t`'s routes (link ids `TorusLink::id`), or `None` when `t` has
    /// more than [`ROUTE_TABLE_NODES`] nodes, a link id does not fit in 16 bits, or
    /// the routes hold more than [`ROUTE_TABLE_ENTRIES`] links.
    ///
    /// # Complexity
    /// `O(nodes²·(dims + hops))` time, `O(nodes² + Σ hops)` memory.
    pub(crate) fn build(t: &Torus) -> Option<Self> {
        let n = t.num_nodes();
        if n > ROUTE_TABLE_NODES || t.num_links() > usize::from(u16::MAX) + 1 {
            return None;
        }
        let total: usize = (0..n * n).map(|k| t.hops(k / n, k % n) as usize).sum();
        if total > ROUTE_TABLE_ENTRIES {
            return None;
        }
        let dims = t.ndims();
        let mut start = Vec::with_capacity(n * n + 1);
        let mut links = Vec::with_capacity(total);
        start.push(0u32);
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    // ids are below num_links ≤ 2^16 and total ≤ 2^21, checked above
                    t.for_each_route_link(a, b, |l| links.push(l.id(dims) as u16));
                }
                start.push(links.len() as u32);
            }
        }
        Some(Self {
            nodes: n,
            start,
            links,
        })
    }

    /// The links of the route from node `a` to node `b`, in route order.
    #[inline]
    pub(crate) fn route(&self, a: usize, b: usize) -> &[u16] {
        let k = a * self.nodes + b;
        &self.links[self.start[k] as usize..self.start[k + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::TorusParams;

    #[test]
    fn table_lists_each_route_in_order() {
        for dims in [vec![4, 3, 5], vec![8, 8, 4], vec![2, 7], vec![6]] {
            let t = Torus::full(TorusParams::new(dims.clone())).unwrap();
            let table = RouteTable::build(&t).expect("small torus");
            let n = t.ndims();
            for a in 0..t.num_nodes() {
                for b in 0..t.num_nodes() {
                    let want: Vec<usize> = t.route(a, b).iter().map(|l| l.id(n)).collect();
                    let got: Vec<usize> = table.route(a, b).iter().map(|&l| l as usize).collect();
                    assert_eq!(got, want, "{dims:?}: {a} -> {b}");
                }
            }
        }
    }

    #[test]
    fn no_table_for_large_tori() {
        let t = Torus::full(TorusParams::new(vec![16, 8, 8])).unwrap();
        assert!(RouteTable::build(&t).is_none());
        let t = Torus::full(TorusParams::new(vec![8, 8, 8])).unwrap();
        assert!(RouteTable::build(&t).is_some());
    }
}
