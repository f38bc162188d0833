//! n-dimensional tori (3-D by default): node coordinates, hop distances with
//! wraparound, dimension-order routes and per-direction link bandwidths.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Origin, Result, TopologyError};
use crate::files::{self, check_bandwidth, check_nonneg, FieldPath, Invalid};
use crate::link::{invalid, BandwidthModel, LinkCost};

/// Default base (software + injection) latency of a torus message, seconds.
pub const DEFAULT_BASE_LATENCY: f64 = 1.5e-6;
/// Default per-hop (router) latency, seconds.
pub const DEFAULT_HOP_LATENCY: f64 = 1.0e-7;
/// Default link bandwidth per direction, bytes per second.
pub const DEFAULT_LINK_BANDWIDTH: f64 = 5.0e9;

/// The physical parameters of a torus.
///
/// Latency between two nodes `h` hops apart: `L = base_latency + h·hop_latency`.
/// Inverse bandwidth, with `B_d = 1/link_bandwidth[d]` and
/// `B_inj = 1/injection_bandwidth`:
/// * [`BandwidthModel::Bottleneck`]: `B = max(B_inj, max_{d: h_d > 0} B_d)`;
/// * [`BandwidthModel::Sum`]: `B = B_inj + Σ_d h_d·B_d`.
///
/// On a Cray XE6 (Gemini) the X and Z links are about 30% faster than Y, e.g.
/// `link_bandwidth = [6.5e9, 5.0e9, 6.5e9]`.
///
/// ```
/// use copr_topology::TorusParams;
/// let p = TorusParams::new(vec![4, 4, 4]);
/// assert_eq!(p.link_bandwidth.len(), 3);
/// assert!(p.validate(&Default::default()).is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TorusParams {
    /// Extent of each dimension (`>= 1`).
    pub dims: Vec<u32>,
    /// Latency paid by every inter-node message, seconds.
    #[serde(default = "default_base_latency")]
    pub base_latency: f64,
    /// Latency per hop, seconds.
    #[serde(default = "default_hop_latency")]
    pub hop_latency: f64,
    /// Link bandwidth per dimension (bytes/s), one entry per dimension.
    pub link_bandwidth: Vec<f64>,
    /// Network injection bandwidth of a node (bytes/s); `None`: the largest
    /// link bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection_bandwidth: Option<f64>,
    /// How link bandwidths combine along a route.
    #[serde(default)]
    pub bandwidth_model: BandwidthModel,
}

fn default_base_latency() -> f64 {
    DEFAULT_BASE_LATENCY
}
fn default_hop_latency() -> f64 {
    DEFAULT_HOP_LATENCY
}

/// Largest torus, in coordinates (routers): 2^18 = 262 144, more than any torus
/// machine built so far (Fugaku's Tofu-D has 158 976 nodes). A torus is built with
/// every coordinate (names, coordinates, links), so its size is checked before
/// anything is allocated.
pub const MAX_TORUS_COORDS: u64 = 1 << 18;

impl TorusParams {
    /// Parameters with the default latencies and [`DEFAULT_LINK_BANDWIDTH`]
    /// in every dimension.
    pub fn new(dims: Vec<u32>) -> Self {
        let n = dims.len();
        Self {
            dims,
            base_latency: DEFAULT_BASE_LATENCY,
            hop_latency: DEFAULT_HOP_LATENCY,
            link_bandwidth: vec![DEFAULT_LINK_BANDWIDTH; n],
            injection_bandwidth: None,
            bandwidth_model: BandwidthModel::Bottleneck,
        }
    }

    /// Checks the parameters; `at` is their place in a document.
    ///
    /// # Errors
    /// [`Invalid`] for empty or zero dimensions, a torus of more than
    /// [`MAX_TORUS_COORDS`] coordinates, a `link_bandwidth` of the wrong length, negative or
    /// non-finite latencies and non-positive bandwidths.
    pub fn validate(&self, at: &FieldPath) -> Result<(), Invalid> {
        if self.dims.is_empty() {
            return Err(Invalid::new(
                at.key("dims"),
                "[]",
                "a torus needs at least one dimension",
            ));
        }
        let mut total: u64 = 1;
        for (d, &e) in self.dims.iter().enumerate() {
            if e == 0 {
                return Err(Invalid::new(
                    at.key("dims").index(d),
                    e,
                    "extents must be >= 1",
                ));
            }
            total = total.saturating_mul(u64::from(e));
        }
        if total > MAX_TORUS_COORDS {
            return Err(Invalid::new(
                at.key("dims"),
                format!("{:?}", self.dims),
                format!(
                    "{total} coordinates; at most 2^18 = {MAX_TORUS_COORDS} are supported (copr_topology::MAX_TORUS_COORDS)"
                ),
            ));
        }
        check_nonneg(self.base_latency, &at.key("base_latency"))?;
        check_nonneg(self.hop_latency, &at.key("hop_latency"))?;
        if self.link_bandwidth.len() != self.dims.len() {
            return Err(Invalid::new(
                at.key("link_bandwidth"),
                format!("{:?}", self.link_bandwidth),
                format!(
                    "needs one bandwidth per dimension ({} dimensions), found {}",
                    self.dims.len(),
                    self.link_bandwidth.len()
                ),
            ));
        }
        for (d, &b) in self.link_bandwidth.iter().enumerate() {
            check_bandwidth(b, &at.key("link_bandwidth").index(d))?;
        }
        if let Some(b) = self.injection_bandwidth {
            check_bandwidth(b, &at.key("injection_bandwidth"))?;
        }
        Ok(())
    }
}

/// A node of a torus: its name and coordinates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TorusNode {
    /// Node identifier, e.g. `nid00012` (matched exactly against placements).
    pub name: String,
    /// One coordinate per dimension.
    pub coords: Vec<u32>,
}

/// One directed link of a torus: from the router at linear coordinate index
/// `from`, along dimension `dim`, in the positive or negative direction.
///
/// Link ids ([`TorusLink::id`]) are dense in `0..Torus::num_links()`, for
/// per-link load arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TorusLink {
    /// Linear coordinate index of the link's source router.
    pub from: usize,
    /// Dimension of the link.
    pub dim: usize,
    /// `true` for the `+1` direction (with wraparound).
    pub positive: bool,
}

impl TorusLink {
    /// Dense id: `from·2n + 2·dim + (positive ? 0 : 1)` for an n-D torus.
    #[inline]
    pub fn id(&self, ndims: usize) -> usize {
        self.from * 2 * ndims + 2 * self.dim + usize::from(!self.positive)
    }
}

/// An n-dimensional torus with named nodes at coordinates; several nodes may
/// share coordinates (e.g. the two nodes of a Cray Gemini router, 0 hops).
///
/// # Complexity
/// [`Torus::hops`] and [`Torus::link_cost`] are `O(n)` for `n` dimensions,
/// without tables; memory `O(N·n)` for `N` nodes.
///
/// ```
/// use copr_topology::{Torus, TorusParams};
/// let t = Torus::full(TorusParams::new(vec![4, 4, 4])).unwrap();
/// assert_eq!(t.num_nodes(), 64);
/// let a = t.node_at(&[0, 0, 0]).unwrap();
/// let b = t.node_at(&[3, 2, 0]).unwrap();
/// assert_eq!(t.hops(a, b), 1 + 2); // x wraps around
/// assert_eq!(t.route(a, b).len(), 3);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Torus {
    params: TorusParams,
    link_inv_bw: Vec<f64>,
    inj_inv_bw: f64,
    names: Vec<String>,
    coords: Vec<u32>,
    index: HashMap<String, usize>,
    description: String,
}

fn coord_name(d: usize) -> String {
    match d {
        0 => "x".into(),
        1 => "y".into(),
        2 => "z".into(),
        _ => format!("c{d}"),
    }
}

impl Torus {
    /// A torus with the given nodes.
    ///
    /// # Errors
    /// Invalid parameters ([`TorusParams::validate`]), no nodes, a node with
    /// the wrong number of coordinates, coordinates outside the torus
    /// ([`TopologyError::OutOfTorus`]) and duplicate names
    /// ([`TopologyError::Duplicate`]).
    pub fn new(params: TorusParams, nodes: Vec<TorusNode>) -> Result<Self> {
        params.validate(&FieldPath::root()).map_err(invalid)?;
        let mut t = Self::empty(params, "torus".into());
        for (k, node) in nodes.into_iter().enumerate() {
            let origin = Origin::none();
            if node.coords.len() != t.ndims() {
                return Err(TopologyError::Inconsistent {
                    origin,
                    field: format!("nodes[{k}].coords"),
                    message: format!(
                        "node `{}` has {} coordinates, the torus has {} dimensions",
                        node.name,
                        node.coords.len(),
                        t.ndims()
                    ),
                });
            }
            let coords: Vec<i64> = node.coords.iter().map(|&c| i64::from(c)).collect();
            let first = format!(
                "as nodes[{}]",
                t.index.get(&node.name).copied().unwrap_or(0)
            );
            t.push(node.name, &coords, &origin, first, &|d| coord_name(d))?;
        }
        t.finish()
    }

    /// A torus with one node at every coordinate, named by its linear
    /// coordinate index (`"0"`, `"1"`, …; `x` varies fastest).
    ///
    /// # Errors
    /// Invalid parameters ([`TorusParams::validate`]).
    pub fn full(params: TorusParams) -> Result<Self> {
        params.validate(&FieldPath::root()).map_err(invalid)?;
        let mut t = Self::empty(params, String::new());
        let n: usize = t.num_coords();
        for k in 0..n {
            let c = t.coords_of_index(k);
            t.names.push(k.to_string());
            t.coords.extend_from_slice(&c);
            t.index.insert(k.to_string(), k);
        }
        t.description = format!("full {} torus", t.dims_string());
        t.finish()
    }

    /// Reads a coordinates file: one line per node, the node id then one
    /// integer coordinate per dimension (`nid00012 3 0 7`); fields separated
    /// by whitespace or commas; `#` starts a comment. This is the layout of
    /// Cray `xtdb2proc` exports reduced to id and x y z.
    ///
    /// # Errors
    /// [`TopologyError::Io`] if unreadable, and the errors of
    /// [`Torus::parse_coords`] with the file name.
    pub fn from_coords_file(params: TorusParams, path: &Path) -> Result<Self> {
        let text = files::read_text(path)?;
        Self::parse_coords(params, &text, Some(path))
    }

    /// Parses the text of a coordinates file (see [`Torus::from_coords_file`]);
    /// `file` names it in errors.
    ///
    /// # Errors
    /// With file and line: [`TopologyError::Parse`] for a wrong number of
    /// fields or a non-integer coordinate (field `x`, `y`, `z`, `c3`, …),
    /// [`TopologyError::OutOfTorus`], [`TopologyError::Duplicate`] (field
    /// `node`); [`TopologyError::Inconsistent`] for a file without nodes;
    /// invalid parameters.
    pub fn parse_coords(params: TorusParams, text: &str, file: Option<&Path>) -> Result<Self> {
        params.validate(&FieldPath::root()).map_err(invalid)?;
        let desc = match file {
            Some(p) => format!("coordinates {}", p.display()),
            None => "coordinates".into(),
        };
        let mut t = Self::empty(params, desc);
        let mut first_line: HashMap<String, usize> = HashMap::new();
        for dl in files::data_lines(text) {
            let origin = Origin::maybe_file(file).at_line(dl.line);
            let n = t.ndims();
            if dl.fields.len() != n + 1 {
                let names: Vec<String> = (0..n).map(coord_name).collect();
                return Err(TopologyError::Parse {
                    origin,
                    field: "line".into(),
                    message: format!(
                        "expected a node id and {n} coordinates ({}), found {} fields: `{}`",
                        names.join(" "),
                        dl.fields.len(),
                        dl.fields.join(" ")
                    ),
                });
            }
            let mut coords = Vec::with_capacity(n);
            for d in 0..n {
                let v: i64 = files::parse_field(
                    dl.fields[d + 1],
                    &coord_name(d),
                    "an integer coordinate",
                    &origin,
                )?;
                coords.push(v);
            }
            let name = dl.fields[0].to_string();
            let first = format!("at line {}", first_line.get(&name).copied().unwrap_or(0));
            t.push(name.clone(), &coords, &origin, first, &|d| coord_name(d))?;
            first_line.insert(name, dl.line);
        }
        if t.names.is_empty() {
            return Err(TopologyError::Inconsistent {
                origin: Origin::maybe_file(file),
                field: "nodes".into(),
                message: "the coordinates file lists no nodes".into(),
            });
        }
        t.finish()
    }

    fn empty(params: TorusParams, description: String) -> Self {
        let link_inv_bw = params.link_bandwidth.iter().map(|b| 1.0 / b).collect();
        let inj = params
            .injection_bandwidth
            .unwrap_or_else(|| params.link_bandwidth.iter().copied().fold(0.0, f64::max));
        Self {
            params,
            link_inv_bw,
            inj_inv_bw: 1.0 / inj,
            names: Vec::new(),
            coords: Vec::new(),
            index: HashMap::new(),
            description,
        }
    }

    fn push(
        &mut self,
        name: String,
        coords: &[i64],
        origin: &Origin,
        first: String,
        colname: &dyn Fn(usize) -> String,
    ) -> Result<()> {
        for (d, (&c, &e)) in coords.iter().zip(&self.params.dims).enumerate() {
            if c < 0 || c >= i64::from(e) {
                return Err(TopologyError::OutOfTorus {
                    origin: origin.clone(),
                    field: colname(d),
                    node: name,
                    dim: d,
                    coord: c,
                    extent: e,
                });
            }
        }
        if self.index.contains_key(&name) {
            return Err(TopologyError::Duplicate {
                origin: origin.clone(),
                field: "node".into(),
                id: name,
                first,
            });
        }
        self.index.insert(name.clone(), self.names.len());
        self.names.push(name);
        self.coords.extend(coords.iter().map(|&c| c as u32));
        Ok(())
    }

    fn finish(mut self) -> Result<Self> {
        if self.names.is_empty() {
            return Err(crate::link::inconsistent(
                "nodes",
                "a torus needs at least one node",
            ));
        }
        let bandwidths: Vec<String> = self
            .params
            .link_bandwidth
            .iter()
            .map(|&b| crate::link::gb_per_s(b))
            .collect();
        self.description = format!(
            "{} torus, {} ({}), link bandwidth {} GB/s, {} bandwidth model",
            self.dims_string(),
            crate::placement::count(self.names.len(), "node"),
            self.description,
            bandwidths.join("/"),
            self.params.bandwidth_model
        );
        Ok(self)
    }

    fn dims_string(&self) -> String {
        self.params
            .dims
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("x")
    }

    /// The parameters.
    pub fn params(&self) -> &TorusParams {
        &self.params
    }

    /// The number of dimensions `n`.
    pub fn ndims(&self) -> usize {
        self.params.dims.len()
    }

    /// The extent of each dimension.
    pub fn dims(&self) -> &[u32] {
        &self.params.dims
    }

    /// The number of coordinates (routers): `Π_d dims[d]`.
    pub fn num_coords(&self) -> usize {
        self.params.dims.iter().map(|&e| e as usize).product()
    }

    /// The number of directed links: `2·n·num_coords()`.
    pub fn num_links(&self) -> usize {
        2 * self.ndims() * self.num_coords()
    }

    /// The number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.names.len()
    }

    /// The name of node `k`.
    ///
    /// # Panics
    /// If `k >= num_nodes()`.
    pub fn node_name(&self, k: usize) -> &str {
        &self.names[k]
    }

    /// The index of the node called `name`.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The first node at coordinates `c`, if any.
    pub fn node_at(&self, c: &[u32]) -> Option<usize> {
        (0..self.num_nodes()).find(|&k| self.coords(k) == c)
    }

    /// The coordinates of node `k`.
    ///
    /// # Panics
    /// If `k >= num_nodes()`.
    #[inline]
    pub fn coords(&self, k: usize) -> &[u32] {
        let n = self.ndims();
        &self.coords[k * n..(k + 1) * n]
    }

    /// Linear index of coordinates `c` (`x` fastest):
    /// `c_0 + d_0·(c_1 + d_1·(c_2 + …))`.
    pub fn coord_index(&self, c: &[u32]) -> usize {
        c.iter()
            .zip(&self.params.dims)
            .rev()
            .fold(0usize, |acc, (&c, &d)| acc * d as usize + c as usize)
    }

    /// Coordinates of linear index `k` (inverse of [`Torus::coord_index`]).
    pub fn coords_of_index(&self, mut k: usize) -> Vec<u32> {
        self.params
            .dims
            .iter()
            .map(|&d| {
                let c = (k % d as usize) as u32;
                k /= d as usize;
                c
            })
            .collect()
    }

    /// Hops between coordinates `a` and `b` in each dimension:
    /// `min(|a_d − b_d|, dims_d − |a_d − b_d|)`.
    pub fn hops_per_dim(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        a.iter()
            .zip(b)
            .zip(&self.params.dims)
            .map(|((&x, &y), &e)| {
                let d = x.abs_diff(y);
                d.min(e - d)
            })
            .collect()
    }

    /// Hop distance between coordinates: `Σ_d min(|a_d − b_d|, dims_d − |a_d − b_d|)`.
    #[inline]
    pub fn hops_between(&self, a: &[u32], b: &[u32]) -> u32 {
        let mut h = 0;
        for ((&x, &y), &e) in a.iter().zip(b).zip(&self.params.dims) {
            let d = x.abs_diff(y);
            h += d.min(e - d);
        }
        h
    }

    /// Hop distance between nodes `i` and `j`.
    #[inline]
    pub fn hops(&self, i: usize, j: usize) -> u32 {
        self.hops_between(self.coords(i), self.coords(j))
    }

    /// The cost between nodes `i` and `j` (formula in [`TorusParams`]).
    ///
    /// # Complexity
    /// `O(n)`, no allocation.
    #[inline]
    pub fn link_cost(&self, i: usize, j: usize) -> LinkCost {
        self.link_and_hops(i, j).0
    }

    /// [`Torus::link_cost`] and [`Torus::hops`] of `(i, j)` in one pass.
    #[inline]
    pub(crate) fn link_and_hops(&self, i: usize, j: usize) -> (LinkCost, u32) {
        let (a, b) = (self.coords(i), self.coords(j));
        self.cost_of_hops(|d| {
            let e = self.params.dims[d];
            let dd = a[d].abs_diff(b[d]);
            dd.min(e - dd)
        })
    }

    /// The cost and total hops of a route with `hop(d)` hops in dimension `d`.
    #[inline]
    pub(crate) fn cost_of_hops(&self, hop: impl Fn(usize) -> u32) -> (LinkCost, u32) {
        let mut hops = 0u32;
        let mut inv = self.inj_inv_bw;
        for d in 0..self.ndims() {
            let h = hop(d);
            if h > 0 {
                hops += h;
                inv = match self.params.bandwidth_model {
                    BandwidthModel::Bottleneck => inv.max(self.link_inv_bw[d]),
                    BandwidthModel::Sum => inv + f64::from(h) * self.link_inv_bw[d],
                };
            }
        }
        (
            LinkCost {
                latency: self.params.base_latency + f64::from(hops) * self.params.hop_latency,
                inv_bandwidth: inv,
            },
            hops,
        )
    }

    /// The dimension-order route from node `i` to node `j`: first all hops
    /// in dimension 0, then 1, …; in each dimension the shorter way round
    /// (the positive direction on a tie). Its length equals
    /// [`Torus::hops`]`(i, j)`.
    ///
    /// # Complexity
    /// `O(n + hops)`.
    pub fn route(&self, i: usize, j: usize) -> Vec<TorusLink> {
        let mut out = Vec::new();
        self.for_each_route_link(i, j, |l| out.push(l));
        out
    }

    /// Calls `f` for each link of [`Torus::route`]`(i, j)`, in order, without
    /// allocating (for per-link load loops).
    ///
    /// # Complexity
    /// `O(n + hops)`.
    pub fn for_each_route_link(&self, i: usize, j: usize, mut f: impl FnMut(TorusLink)) {
        let (a, b) = (self.coords(i), self.coords(j));
        let mut from = self.coord_index(a);
        let mut stride = 1usize;
        for (d, &e) in self.params.dims.iter().enumerate() {
            let fwd = (b[d] + e - a[d]) % e;
            if fwd != 0 {
                let positive = 2 * fwd <= e;
                let steps = if positive { fwd } else { e - fwd };
                // (the next coordinate and index by a step and a wrap, no division)
                let mut c = a[d];
                for _ in 0..steps {
                    f(TorusLink {
                        from,
                        dim: d,
                        positive,
                    });
                    if positive && c + 1 == e {
                        from -= c as usize * stride;
                        c = 0;
                    } else if positive {
                        from += stride;
                        c += 1;
                    } else if c == 0 {
                        c = e - 1;
                        from += c as usize * stride;
                    } else {
                        from -= stride;
                        c -= 1;
                    }
                }
            }
            stride *= e as usize;
        }
    }

    /// A one-line description (dimensions, nodes, source, bandwidths).
    pub fn description(&self) -> &str {
        &self.description
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_step_in_dimension_order_the_shorter_way_round() {
        // every pair of nodes of tori with extents 1, 2, odd and even: each link of the
        // route starts where the last one led, in dimension order, the shorter way
        // round (positive on a tie), and the route ends at the destination
        for dims in [vec![3, 4, 5], vec![2, 1, 6], vec![7]] {
            let t = Torus::full(TorusParams::new(dims.clone())).unwrap();
            for i in 0..t.num_nodes() {
                for j in 0..t.num_nodes() {
                    let mut at = t.coords(i).to_vec();
                    let mut want = Vec::new();
                    for (d, &e) in dims.iter().enumerate() {
                        let fwd = (t.coords(j)[d] + e - at[d]) % e;
                        let positive = 2 * fwd <= e;
                        let steps = if positive { fwd } else { e - fwd };
                        for _ in 0..steps {
                            want.push((t.coord_index(&at), d, positive));
                            at[d] = if positive {
                                (at[d] + 1) % e
                            } else {
                                (at[d] + e - 1) % e
                            };
                        }
                    }
                    assert_eq!(at, t.coords(j));
                    let got: Vec<(usize, usize, bool)> = t
                        .route(i, j)
                        .iter()
                        .map(|l| (l.from, l.dim, l.positive))
                        .collect();
                    assert_eq!(got, want, "{dims:?}: {i} -> {j}");
                    assert_eq!(got.len() as u32, t.hops(i, j));
                }
            }
        }
    }

    #[test]
    fn coords_roundtrip() {
        let t = Torus::full(TorusParams::new(vec![3, 4, 5])).unwrap();
        for k in 0..t.num_coords() {
            assert_eq!(t.coord_index(&t.coords_of_index(k)), k);
            assert_eq!(t.coords(k), t.coords_of_index(k).as_slice());
        }
    }

    #[test]
    fn bottleneck_and_sum() {
        let mut p = TorusParams::new(vec![8, 8, 8]);
        p.link_bandwidth = vec![4.0, 2.0, 4.0];
        p.injection_bandwidth = Some(8.0);
        p.base_latency = 1.0;
        p.hop_latency = 0.5;
        let t = Torus::full(p.clone()).unwrap();
        let a = t.node_at(&[0, 0, 0]).unwrap();
        let b = t.node_at(&[2, 0, 7]).unwrap();
        let c = t.link_cost(a, b);
        assert_eq!(c.latency, 1.0 + 3.0 * 0.5);
        assert_eq!(c.inv_bandwidth, 0.25);
        let y = t.node_at(&[0, 1, 0]).unwrap();
        assert_eq!(t.link_cost(a, y).inv_bandwidth, 0.5);
        p.bandwidth_model = BandwidthModel::Sum;
        let t = Torus::full(p).unwrap();
        assert_eq!(t.link_cost(a, b).inv_bandwidth, 0.125 + 2.0 * 0.25 + 0.25);
        assert_eq!(t.link_cost(a, a).inv_bandwidth, 0.125);
    }

    #[test]
    fn params_errors() {
        let mut p = TorusParams::new(vec![4, 0, 4]);
        let e = Torus::full(p.clone()).unwrap_err().to_string();
        assert!(e.contains("dims[1]"), "{e}");
        p.dims = vec![4, 4, 4];
        p.link_bandwidth = vec![1.0, f64::NAN, 1.0];
        let e = Torus::full(p.clone()).unwrap_err().to_string();
        assert!(e.contains("link_bandwidth[1]") && e.contains("NaN"), "{e}");
        p.link_bandwidth = vec![1.0, 1.0];
        let e = Torus::full(p.clone()).unwrap_err().to_string();
        assert!(
            e.contains("link_bandwidth") && e.contains("one bandwidth per dimension"),
            "{e}"
        );
        p.link_bandwidth = vec![1.0; 3];
        p.hop_latency = -1.0;
        let e = Torus::full(p).unwrap_err().to_string();
        assert!(e.contains("hop_latency") && e.contains("-1"), "{e}");
    }
}
