//! Tori: hop distances against brute-force BFS, dimension-order routes, and
//! coordinates-file errors.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use copr_topology::{TopologyError, Torus, TorusParams};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/topology")
        .join(name)
}

/// BFS over the torus grid graph (neighbours ±1 with wraparound in each
/// dimension), from coordinate index `src`.
fn bfs(dims: &[u32], src: usize) -> Vec<u32> {
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let to_coords = |mut k: usize| -> Vec<u32> {
        dims.iter()
            .map(|&d| {
                let c = (k % d as usize) as u32;
                k /= d as usize;
                c
            })
            .collect()
    };
    let to_index = |c: &[u32]| -> usize {
        c.iter()
            .zip(dims)
            .rev()
            .fold(0, |acc, (&c, &d)| acc * d as usize + c as usize)
    };
    let mut dist = vec![u32::MAX; n];
    dist[src] = 0;
    let mut q = VecDeque::from([src]);
    while let Some(v) = q.pop_front() {
        let c = to_coords(v);
        for d in 0..dims.len() {
            for step in [1, dims[d] - 1] {
                let mut nc = c.clone();
                nc[d] = (c[d] + step) % dims[d];
                let w = to_index(&nc);
                if dist[w] == u32::MAX {
                    dist[w] = dist[v] + 1;
                    q.push_back(w);
                }
            }
        }
    }
    dist
}

#[test]
fn hops_match_bfs_on_small_tori() {
    for dims in [
        vec![1],
        vec![2],
        vec![7],
        vec![4, 4],
        vec![3, 5],
        vec![2, 3, 4],
        vec![4, 4, 4],
        vec![5, 1, 3],
        vec![2, 2, 3, 3],
    ] {
        let t = Torus::full(TorusParams::new(dims.clone())).unwrap();
        for a in 0..t.num_nodes() {
            let ref_dist = bfs(&dims, a);
            for (b, &d) in ref_dist.iter().enumerate() {
                assert_eq!(t.hops(a, b), d, "dims {dims:?}, {a} -> {b}");
            }
        }
    }
}

#[test]
fn dimension_order_routes_are_shortest_and_valid() {
    for dims in [
        vec![5],
        vec![4, 4],
        vec![3, 4, 5],
        vec![4, 4, 4],
        vec![2, 3, 2, 3],
    ] {
        let t = Torus::full(TorusParams::new(dims.clone())).unwrap();
        let n = t.ndims();
        let mut seen_ids = std::collections::HashSet::new();
        for a in 0..t.num_nodes() {
            for b in 0..t.num_nodes() {
                let route = t.route(a, b);
                assert_eq!(
                    route.len() as u32,
                    t.hops(a, b),
                    "dims {dims:?}, {a} -> {b}"
                );
                // Walk the route: each link starts where the previous ended,
                // dimensions never decrease, and it ends at b.
                let mut cur = t.coords(a).to_vec();
                let mut last_dim = 0;
                for l in &route {
                    assert_eq!(l.from, t.coord_index(&cur));
                    assert!(l.dim >= last_dim);
                    last_dim = l.dim;
                    let e = dims[l.dim];
                    cur[l.dim] = if l.positive {
                        (cur[l.dim] + 1) % e
                    } else {
                        (cur[l.dim] + e - 1) % e
                    };
                    let id = l.id(n);
                    assert!(id < t.num_links());
                    seen_ids.insert((id, *l));
                }
                assert_eq!(cur, t.coords(b));
            }
        }
        // ids are unique per link
        let mut by_id = std::collections::HashMap::new();
        for (id, l) in seen_ids {
            assert_eq!(*by_id.entry(id).or_insert(l), l);
        }
    }
}

#[test]
fn ties_go_positive() {
    let t = Torus::full(TorusParams::new(vec![4])).unwrap();
    let r = t.route(0, 2);
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|l| l.positive));
    let r = t.route(0, 3);
    assert_eq!(r.len(), 1);
    assert!(!r[0].positive);
}

#[test]
fn sample_coordinates_file() {
    let mut p = TorusParams::new(vec![4, 4, 4]);
    p.link_bandwidth = vec![6.5e9, 5.0e9, 6.5e9];
    let t = Torus::from_coords_file(p, &data("torus-4x4x4.coords")).unwrap();
    assert_eq!(t.num_nodes(), 128);
    let a = t.node_index("nid00000").unwrap();
    let b = t.node_index("nid00001").unwrap();
    assert_eq!(t.hops(a, b), 0); // same Gemini router
    let z = t.node_index("nid00002").unwrap(); // z + 1
    let y = t.node_index("nid00008").unwrap(); // y + 1
    let x = t.node_index("nid00032").unwrap(); // x + 1
    assert_eq!(t.coords(x), [1, 0, 0]);
    assert_eq!(t.coords(y), [0, 1, 0]);
    for n in [x, y, z] {
        assert_eq!(t.hops(a, n), 1);
    }
    // X and Z faster than Y
    assert!(t.link_cost(a, x).inv_bandwidth < t.link_cost(a, y).inv_bandwidth);
    assert!(t.link_cost(a, z).inv_bandwidth < t.link_cost(a, y).inv_bandwidth);
    assert_eq!(t.link_cost(a, x).latency, t.link_cost(a, y).latency);
}

fn parse(text: &str) -> Result<Torus, TopologyError> {
    Torus::parse_coords(
        TorusParams::new(vec![4, 4, 8]),
        text,
        Some(Path::new("t.coords")),
    )
}

#[test]
fn coordinates_file_errors() {
    let cases: &[(&str, &[&str])] = &[
        (
            "n0 0 0 0\nn1 0 0 8\n",
            &[
                "t.coords:2",
                "field `z`",
                "coordinate 8",
                "`n1`",
                "extent 8",
            ],
        ),
        (
            "n0 0 0 0\n# c\nn1 -1 0 0\n",
            &["t.coords:3", "field `x`", "coordinate -1"],
        ),
        (
            "n0 0 0 0\nn1 0 4 0\n",
            &["t.coords:2", "field `y`", "coordinate 4"],
        ),
        (
            "n0 0 0 0\nn0 1 0 0\n",
            &["t.coords:2", "field `node`: duplicate `n0`", "at line 1"],
        ),
        (
            "n0 0 0\n",
            &[
                "t.coords:1",
                "expected a node id and 3 coordinates (x y z), found 3 fields",
            ],
        ),
        ("n0 0 a 0\n", &["t.coords:1", "field `y`", "`a`"]),
        ("n0 0 1.5 0\n", &["t.coords:1", "field `y`", "`1.5`"]),
        ("# nothing\n\n", &["t.coords", "no nodes"]),
    ];
    for (text, needles) in cases {
        let e = parse(text).unwrap_err().to_string();
        for n in *needles {
            assert!(e.contains(n), "{text:?}: `{n}` not in: {e}");
        }
    }
    let e = Torus::from_coords_file(TorusParams::new(vec![2]), &data("missing.coords"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.coords"), "{e}");
}

#[test]
fn in_memory_nodes_are_checked_too() {
    use copr_topology::TorusNode;
    let node = |n: &str, c: Vec<u32>| TorusNode {
        name: n.into(),
        coords: c,
    };
    let e = Torus::new(TorusParams::new(vec![2, 2]), vec![node("a", vec![0, 2])]).unwrap_err();
    assert!(
        matches!(
            e,
            TopologyError::OutOfTorus {
                dim: 1,
                extent: 2,
                ..
            }
        ),
        "{e:?}"
    );
    let e = Torus::new(
        TorusParams::new(vec![2, 2]),
        vec![node("a", vec![0, 1]), node("a", vec![1, 1])],
    )
    .unwrap_err();
    assert!(matches!(e, TopologyError::Duplicate { .. }), "{e:?}");
    let e = Torus::new(TorusParams::new(vec![2, 2]), vec![node("a", vec![0])]).unwrap_err();
    assert!(e.to_string().contains("1 coordinates"), "{e}");
}
