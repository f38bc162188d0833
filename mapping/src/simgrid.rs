//! SimGrid (SMPI) platform files for a [`MapMachine`], so that mappings can be
//! judged by simulating their communication with link contention.
//!
//! * [`platform_xml`] writes a SimGrid 3.32 platform (`<platform version="4.1">`);
//! * [`smpi_host_names`] names the SimGrid host of each machine node, and
//!   [`hostfile`] writes the SMPI hostfile of a mapping (line `i`: the host of
//!   rank `i`);
//! * [`SMPIRUN_FLAGS`] are the `smpirun` options under which simulated times
//!   follow the platform's latencies and bandwidths exactly.
//!
//! # What the platform models
//!
//! **Torus.** One SimGrid host per torus coordinate, named `n<c>` for the linear
//! coordinate index `c` (`x` fastest, as [`copr_topology::Torus::coord_index`]);
//! machine nodes sharing a coordinate share that host, which gets
//! `ranks_per_node × (most machine nodes at one coordinate)` cores. Every
//! directed torus link has the dimension's bandwidth and `hop_latency`; the
//! torus' `base_latency` is not modelled (a message over `h` hops has latency
//! `h·hop_latency`). Two forms:
//!
//! * [`TorusForm::Cluster`]: SimGrid's own `TORUS` cluster (one XML element).
//!   SimGrid 3.32 numbers its hosts with `x` fastest and routes in dimension
//!   order `x`, `y`, `z`, the shorter way round, like copr — except on a tie in
//!   an even dimension of extent `e`: from coordinate `e/2` to coordinate `0`
//!   SimGrid goes the negative way (`e/2 → e/2−1 → … → 0`) where copr goes the
//!   positive way (`e/2 → … → e−1 → 0`); every other tie goes positive in both.
//!   Its links are split-duplex (one channel per direction). In a dimension of
//!   extent 2 that tie is every message from coordinate 1 to 0: copr counts it on
//!   node 1's `+` link (wrapping round), SimGrid sends it on the down channel of
//!   node 0's link. Each direction between the two coordinates has a channel of its
//!   own in both, carrying the same messages, so the link loads agree there (copr's
//!   `−` links of such a dimension stay empty; checked in SimGrid by
//!   `torus_extent_two_loads_agree_with_simgrid`). A cluster has one
//!   bandwidth for all links, so this form needs equal bandwidths in all
//!   dimensions and no separate injection bandwidth.
//! * [`TorusForm::Explicit`]: a `Full` zone listing every directed link
//!   (`l<id>`, `id` = copr's link id, [`MapMachine::link_info`]) and the route
//!   between every pair of used hosts — copr's own dimension-order routes, so
//!   SimGrid loads exactly the links copr's metrics count. Per-dimension
//!   bandwidths (e.g. X and Z 30 % faster than Y) and an injection bandwidth
//!   (links `inj<c>` / `ej<c>` at the sending and receiving host) are modelled.
//!   Size grows with the square of the used hosts (about 40 MB at 512).
//!
//! [`TorusForm::Auto`] (the default) takes the cluster when it can model the
//! torus, the explicit form otherwise.
//!
//! **Network graph** (fat tree, dragonfly, any copr network file): a `Full` zone
//! with one SimGrid host per machine node (named after the network host when
//! the name is a plain identifier, else `n<k>`) and one route per pair of
//! machine nodes; switches are not netpoints (routes list links only). SimGrid
//! sends each message along one route, so the form decides which of copr's
//! link-load models the simulation agrees with:
//!
//! * [`GraphForm::Ecmp`]: the ECMP model ([`crate::ecmp_link_loads`]). When the
//!   network's even split over its equal-cost paths is *bundle-equivalent* (every
//!   hop of every pair's paths splits the message evenly over a set of links, and
//!   those sets are equal or disjoint: the parallel links of a k-ary fat tree, or
//!   single links where equal-cost paths are unique, as on copr's dragonflies),
//!   each bundle becomes one SimGrid link with the summed bandwidth and the links'
//!   latency, and each pair routes through its bundles. A bundle then carries the
//!   bytes its links carry together under ECMP, so every link's load and time is
//!   exactly ECMP's, for any traffic. A one-link bundle is `l<e>` (`e` = copr's
//!   link id, [`MapMachine::link_info`]); a larger one is `b<i>`, and its property
//!   `copr_links` lists its links' ids. A network that is not bundle-equivalent is
//!   refused in this form.
//! * [`GraphForm::SinglePath`]: the single-path model ([`crate::evaluate`]): one
//!   link `l<e>` per directed network edge (copr's latency and bandwidth) and, per
//!   pair, copr's route (the shortest path [`MapMachine::for_route`] follows).
//!   (SimGrid's own `Floyd`/`Dijkstra` zones count links, not latencies, and break
//!   ties their own way, so their routes can differ from copr's.)
//!
//! [`GraphForm::Auto`] (the default) writes the ECMP form when the network is
//! bundle-equivalent and the single-path form otherwise: fat trees and copr's
//! dragonflies agree with ECMP (on a dragonfly ECMP and the single path are the same
//! routes), any other network graph agrees with the single-path metric unless its
//! equal-cost split happens to be bundle-equivalent.
//!
//! Ranks on one host talk over a per-host `FATPIPE` loopback link
//! ([`SimgridOptions::loopback_bandwidth`]).
//!
//! A flat machine has no network parameters and is refused.

use std::collections::HashMap;
use std::fmt::Write as _;

use copr_topology::{Network, Torus};

use super::bundles::{ecmp_bundles, Bundles};
use super::machine::{MapMachine, NetKind};
use crate::errors::{ExportError, Format};
use copr::error::Result;

/// `smpirun` options for exact platform times: no measured computation, no
/// SMPI latency/bandwidth correction factors, no TCP cross-traffic (acknowledgement
/// load on reverse links), quiet logs.
pub const SMPIRUN_FLAGS: &[&str] = &[
    "--cfg=smpi/host-speed:1Gf",
    "--cfg=smpi/simulate-computation:no",
    "--cfg=smpi/lat-factor:0:1",
    "--cfg=smpi/bw-factor:0:1",
    "--cfg=network/crosstraffic:0",
    "--log=root.thres:warning",
];

/// How a torus becomes a SimGrid platform (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TorusForm {
    /// The cluster when it can model the torus, else explicit.
    #[default]
    Auto,
    /// SimGrid's `TORUS` cluster (SimGrid's routing; equal bandwidths only).
    Cluster,
    /// Explicit links and copr's routes.
    Explicit,
}

/// How a network graph becomes a SimGrid platform (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GraphForm {
    /// The ECMP form when the network is bundle-equivalent, else the single path.
    #[default]
    Auto,
    /// Bundles of equal-cost links: SimGrid's loads are ECMP's.
    Ecmp,
    /// One link per network edge, copr's single shortest path per pair.
    SinglePath,
}

/// Options of [`platform_xml_with`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimgridOptions {
    /// Torus form.
    pub torus_form: TorusForm,
    /// Network-graph form.
    pub graph_form: GraphForm,
    /// Bandwidth between ranks on one host, bytes/s (each message alone).
    pub loopback_bandwidth: f64,
    /// Latency between ranks on one host, seconds.
    pub loopback_latency: f64,
    /// Host speed in flop/s (irrelevant for pure communication benchmarks).
    pub host_speed: f64,
}

impl Default for SimgridOptions {
    fn default() -> Self {
        Self {
            torus_form: TorusForm::Auto,
            graph_form: GraphForm::Auto,
            loopback_bandwidth: 1.0e11,
            loopback_latency: 0.0,
            host_speed: 1.0e9,
        }
    }
}

/// The SimGrid platform of `m` with default options (see the [module docs](self)).
///
/// # Errors
/// As [`platform_xml_with`].
pub fn platform_xml(m: &MapMachine) -> Result<String> {
    platform_xml_with(m, &SimgridOptions::default())
}

/// The SimGrid platform of `m`.
///
/// # Errors
/// [`ExportError`] for a flat machine, [`TorusForm::Cluster`] on a torus the
/// cluster cannot model (unequal bandwidths or an injection bandwidth),
/// [`GraphForm::Ecmp`] on a network that is not bundle-equivalent, or
/// non-positive / non-finite options.
///
/// # Complexity
/// The ECMP test of a network graph of `V` vertices and `E` links:
/// `O(c·(V + E) log V + c²·(V + E))` for `c` distinct path ends (the switches of
/// hosts that hang off one switch, and the other hosts: a k = 16 fat tree's 1024
/// hosts have 128); the output has `n²` routes for `n` machine nodes.
pub fn platform_xml_with(m: &MapMachine, opts: &SimgridOptions) -> Result<String> {
    let ok = |v: f64, zero_ok: bool| v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0));
    if !ok(opts.loopback_bandwidth, false)
        || !ok(opts.loopback_latency, true)
        || !ok(opts.host_speed, false)
    {
        return Err(ExportError::SimgridOptions {
            loopback_bandwidth: opts.loopback_bandwidth,
            host_speed: opts.host_speed,
            loopback_latency: opts.loopback_latency,
        }
        .into());
    }
    match m.kind() {
        NetKind::Torus(t) => {
            let cluster_ok = cluster_can_model(t);
            match opts.torus_form {
                TorusForm::Cluster if !cluster_ok => Err(ExportError::TorusCluster {
                    link_bandwidth: t.params().link_bandwidth.clone(),
                    injection_bandwidth: t.params().injection_bandwidth,
                }
                .into()),
                TorusForm::Cluster => Ok(torus_cluster(m, t, opts)),
                TorusForm::Auto if cluster_ok => Ok(torus_cluster(m, t, opts)),
                _ => Ok(torus_explicit(m, t, opts)),
            }
        }
        NetKind::Graph(net, hosts) => {
            let bundles = match opts.graph_form {
                GraphForm::SinglePath => None,
                _ => ecmp_bundles(net, hosts),
            };
            match (opts.graph_form, bundles) {
                (GraphForm::Ecmp, None) => Err(ExportError::EcmpPlatform {
                    network: net.name().to_string(),
                }
                .into()),
                (_, Some(b)) => Ok(graph_bundled(m, net, hosts, &b, opts)),
                (_, None) => Ok(graph_explicit(m, net, hosts, opts)),
            }
        }
        NetKind::Flat => Err(ExportError::FlatPlatform.into()),
    }
}

/// The SimGrid host name of each machine node, in machine order.
///
/// Torus: `n<c>` for the node's linear coordinate index `c` (nodes sharing a
/// coordinate share a host). Graph: the network host's name when every name is
/// a plain identifier (ASCII letters, digits, `._-`) and unique, else `n<k>`.
/// Flat: `n<k>`.
pub fn smpi_host_names(m: &MapMachine) -> Vec<String> {
    match m.kind() {
        NetKind::Torus(t) => (0..m.nodes())
            .map(|k| format!("n{}", t.coord_index(t.coords(k))))
            .collect(),
        NetKind::Graph(net, hosts) => graph_host_names(net, hosts),
        NetKind::Flat => (0..m.nodes()).map(|k| format!("n{k}")).collect(),
    }
}

/// The SMPI hostfile of a mapping: line `i` names the host of rank `i`, which
/// runs in slot `slot_of_rank[i]` (slot `s` is on node
/// [`MapMachine::node_of_slot`]`(s)`).
///
/// # Errors
/// [`ExportError`] for a slot outside the machine.
pub fn hostfile(m: &MapMachine, slot_of_rank: &[usize]) -> Result<String> {
    let names = smpi_host_names(m);
    let mut out = String::with_capacity(slot_of_rank.len() * 6);
    for (i, &s) in slot_of_rank.iter().enumerate() {
        if s >= m.slots() {
            return Err(ExportError::SlotOutOfRange {
                format: Format::SmpiHostfile,
                rank: i,
                slot: s,
                slots: m.slots(),
            }
            .into());
        }
        out.push_str(&names[m.node_of_slot(s)]);
        out.push('\n');
    }
    Ok(out)
}

fn cluster_can_model(t: &Torus) -> bool {
    let p = t.params();
    p.injection_bandwidth.is_none() && p.link_bandwidth.iter().all(|&b| b == p.link_bandwidth[0])
}

/// A float as SimGrid reads it (Rust's shortest round-trip form).
fn num(v: f64) -> String {
    format!("{v:e}")
}

/// A bandwidth from an inverse bandwidth, rounded to 12 significant digits so
/// that `1/(1/5e8)` prints as `5e8`.
fn bw_of_inv(inv: f64) -> String {
    let v: f64 = format!("{:.11e}", 1.0 / inv).parse().unwrap_or(1.0 / inv);
    num(v)
}

/// `s` as XML 1.0 text or attribute value: markup characters as entities, and the
/// characters XML 1.0 cannot carry at all (control characters, even as references, and
/// U+FFFE, U+FFFF) — tabs and newlines too, which attribute values would lose — as
/// visible Rust-style escapes (`\u{1b}`).
fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => {
                o.extend(c.escape_default())
            }
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            _ => o.push(c),
        }
    }
    o
}

fn header(out: &mut String, what: &str) {
    out.push_str("<?xml version='1.0'?>\n");
    out.push_str("<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
    let mut what = xml_escape(what);
    while what.contains("--") {
        what = what.replace("--", "- -");
    }
    let _ = writeln!(out, "<!-- written by copr: {what} -->");
    out.push_str("<platform version=\"4.1\">\n");
}

/// Used coordinates (sorted) and the most machine nodes at one coordinate.
fn torus_hosts(m: &MapMachine, t: &Torus) -> (Vec<usize>, usize) {
    let mut count: HashMap<usize, usize> = HashMap::new();
    for k in 0..m.nodes() {
        *count.entry(t.coord_index(t.coords(k))).or_default() += 1;
    }
    let most = count.values().copied().max().unwrap_or(1);
    let mut used: Vec<usize> = count.into_keys().collect();
    used.sort_unstable();
    (used, most)
}

fn torus_cluster(m: &MapMachine, t: &Torus, o: &SimgridOptions) -> String {
    let (_, most) = torus_hosts(m, t);
    let p = t.params();
    let dims: Vec<String> = t.dims().iter().map(u32::to_string).collect();
    let mut out = String::new();
    header(&mut out, m.description());
    out.push_str("<zone id=\"world\" routing=\"Full\">\n");
    let _ = writeln!(
        out,
        "  <cluster id=\"torus\" topology=\"TORUS\" topo_parameters=\"{}\" prefix=\"n\" radical=\"0-{}\" suffix=\"\" speed=\"{}f\" core=\"{}\" bw=\"{}Bps\" lat=\"{}s\" sharing_policy=\"SPLITDUPLEX\" loopback_bw=\"{}Bps\" loopback_lat=\"{}s\"/>",
        dims.join(","),
        t.num_coords() - 1,
        num(o.host_speed),
        m.ranks_per_node() * most,
        num(p.link_bandwidth[0]),
        num(p.hop_latency),
        num(o.loopback_bandwidth),
        num(o.loopback_latency),
    );
    out.push_str("</zone>\n</platform>\n");
    out
}

fn torus_explicit(m: &MapMachine, t: &Torus, o: &SimgridOptions) -> String {
    let (used, most) = torus_hosts(m, t);
    let p = t.params();
    let n = t.ndims();
    // A representative machine node per used coordinate (for Torus::route).
    let mut rep: HashMap<usize, usize> = HashMap::new();
    for k in 0..m.nodes() {
        rep.entry(t.coord_index(t.coords(k))).or_insert(k);
    }
    let mut out = String::with_capacity(used.len() * used.len() * 80 + 4096);
    header(&mut out, m.description());
    out.push_str("<zone id=\"world\" routing=\"Full\">\n");
    let cores = m.ranks_per_node() * most;
    for &c in &used {
        let _ = writeln!(
            out,
            "  <host id=\"n{c}\" speed=\"{}f\" core=\"{cores}\"/>",
            num(o.host_speed)
        );
    }
    for l in 0..t.num_links() {
        let d = (l % (2 * n)) / 2;
        let _ = writeln!(
            out,
            "  <link id=\"l{l}\" bandwidth=\"{}Bps\" latency=\"{}s\"/>",
            num(p.link_bandwidth[d]),
            num(p.hop_latency)
        );
    }
    let inj = p.injection_bandwidth;
    for &c in &used {
        let _ = writeln!(
            out,
            "  <link id=\"lo{c}\" bandwidth=\"{}Bps\" latency=\"{}s\" sharing_policy=\"FATPIPE\"/>",
            num(o.loopback_bandwidth),
            num(o.loopback_latency)
        );
        if let Some(b) = inj {
            let _ = writeln!(
                out,
                "  <link id=\"inj{c}\" bandwidth=\"{}Bps\" latency=\"0s\"/>",
                num(b)
            );
            let _ = writeln!(
                out,
                "  <link id=\"ej{c}\" bandwidth=\"{}Bps\" latency=\"0s\"/>",
                num(b)
            );
        }
    }
    for &a in &used {
        for &b in &used {
            let _ = write!(
                out,
                "  <route src=\"n{a}\" dst=\"n{b}\" symmetrical=\"NO\">"
            );
            if a == b {
                let _ = write!(out, "<link_ctn id=\"lo{a}\"/>");
            } else {
                if inj.is_some() {
                    let _ = write!(out, "<link_ctn id=\"inj{a}\"/>");
                }
                for link in t.route(rep[&a], rep[&b]) {
                    let _ = write!(out, "<link_ctn id=\"l{}\"/>", link.id(n));
                }
                if inj.is_some() {
                    let _ = write!(out, "<link_ctn id=\"ej{b}\"/>");
                }
            }
            out.push_str("</route>\n");
        }
    }
    out.push_str("</zone>\n</platform>\n");
    out
}

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
}

fn graph_host_names(net: &Network, hosts: &[usize]) -> Vec<String> {
    let names: Vec<&str> = hosts.iter().map(|&h| net.host_name(h)).collect();
    let mut seen = std::collections::HashSet::new();
    if names.iter().all(|s| plain_name(s) && seen.insert(*s)) {
        names.iter().map(|s| s.to_string()).collect()
    } else {
        (0..hosts.len()).map(|k| format!("n{k}")).collect()
    }
}

fn graph_explicit(m: &MapMachine, net: &Network, hosts: &[usize], o: &SimgridOptions) -> String {
    let names = graph_host_names(net, hosts);
    let g = net.graph();
    let nn = hosts.len();
    let mut out = String::with_capacity(nn * nn * 60 + 4096);
    header(&mut out, m.description());
    out.push_str("<zone id=\"world\" routing=\"Full\">\n");
    for h in &names {
        let _ = writeln!(
            out,
            "  <host id=\"{h}\" speed=\"{}f\" core=\"{}\"/>",
            num(o.host_speed),
            m.ranks_per_node()
        );
    }
    for e in g.edge_indices() {
        let (a, b) = g.edge_endpoints(e).expect("edge of the graph");
        let c = &g[e];
        let _ = writeln!(
            out,
            "  <link id=\"l{}\" bandwidth=\"{}Bps\" latency=\"{}s\"><prop id=\"copr\" value=\"{}-&gt;{}\"/></link>",
            e.index(),
            bw_of_inv(c.inv_bandwidth),
            num(c.latency),
            xml_escape(&g[a].name),
            xml_escape(&g[b].name)
        );
    }
    loopbacks_and_routes(&mut out, &names, o, |a, b, out| {
        m.for_route(a, b, |l| {
            let _ = write!(out, "<link_ctn id=\"l{l}\"/>");
        });
    });
    out
}

/// The edge's endpoints as `tail->head` for a link's `copr` property.
fn edge_label(net: &Network, e: usize) -> String {
    let g = net.graph();
    let x = &g.raw_edges()[e];
    format!(
        "{}->{}",
        g.raw_nodes()[x.source().index()].weight.name,
        g.raw_nodes()[x.target().index()].weight.name
    )
}

fn graph_bundled(
    m: &MapMachine,
    net: &Network,
    hosts: &[usize],
    b: &Bundles,
    o: &SimgridOptions,
) -> String {
    let names = graph_host_names(net, hosts);
    let edges = net.graph().raw_edges();
    let nn = hosts.len();
    let mut out = String::with_capacity(nn * nn * 60 + 4096);
    header(&mut out, &format!("{} (ECMP bundles)", m.description()));
    out.push_str("<zone id=\"world\" routing=\"Full\">\n");
    for h in &names {
        let _ = writeln!(
            out,
            "  <host id=\"{h}\" speed=\"{}f\" core=\"{}\"/>",
            num(o.host_speed),
            m.ranks_per_node()
        );
    }
    let ids: Vec<String> = b
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| match l[..] {
            [e] => format!("l{e}"),
            _ => format!("b{i}"),
        })
        .collect();
    for (l, id) in b.links.iter().zip(&ids) {
        let c = edges[l[0]].weight;
        let labels: Vec<String> = l.iter().map(|&e| edge_label(net, e)).collect();
        let _ = write!(
            out,
            "  <link id=\"{id}\" bandwidth=\"{}Bps\" latency=\"{}s\"><prop id=\"copr\" value=\"{}\"/>",
            bw_of_inv(c.inv_bandwidth / l.len() as f64),
            num(c.latency),
            xml_escape(&labels.join(" "))
        );
        if l.len() > 1 {
            let list: Vec<String> = l.iter().map(usize::to_string).collect();
            let _ = write!(
                out,
                "<prop id=\"copr_links\" value=\"{}\"/>",
                list.join(" ")
            );
        }
        out.push_str("</link>\n");
    }
    loopbacks_and_routes(&mut out, &names, o, |a, c, out| {
        for i in b.route(a, c) {
            let _ = write!(out, "<link_ctn id=\"{}\"/>", ids[i as usize]);
        }
    });
    out
}

/// The rest of a `Full` zone's platform: a `FATPIPE` loopback per host, a route between
/// every two hosts (`links(a, b, out)` writes the links from host `a` to host `b`; a
/// host to itself takes its loopback), and the closing tags.
fn loopbacks_and_routes(
    out: &mut String,
    names: &[String],
    o: &SimgridOptions,
    mut links: impl FnMut(usize, usize, &mut String),
) {
    let nn = names.len();
    for k in 0..nn {
        let _ = writeln!(
            out,
            "  <link id=\"lo{k}\" bandwidth=\"{}Bps\" latency=\"{}s\" sharing_policy=\"FATPIPE\"/>",
            num(o.loopback_bandwidth),
            num(o.loopback_latency)
        );
    }
    for a in 0..nn {
        for c in 0..nn {
            let _ = write!(
                out,
                "  <route src=\"{}\" dst=\"{}\" symmetrical=\"NO\">",
                names[a], names[c]
            );
            if a == c {
                let _ = write!(out, "<link_ctn id=\"lo{a}\"/>");
            } else {
                links(a, c, out);
            }
            out.push_str("</route>\n");
        }
    }
    out.push_str("</zone>\n</platform>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use copr_topology::{BandwidthModel, LinkCost, TorusNode, TorusParams};

    fn torus(dims: Vec<u32>, bw: Vec<f64>) -> Torus {
        let mut p = TorusParams::new(dims);
        p.link_bandwidth = bw;
        Torus::full(p).unwrap()
    }

    fn count(s: &str, pat: &str) -> usize {
        s.matches(pat).count()
    }

    #[test]
    fn equal_bandwidth_torus_is_one_cluster() {
        let m = MapMachine::torus(torus(vec![4, 2], vec![5e9, 5e9]), 3).unwrap();
        let x = platform_xml(&m).unwrap();
        assert!(x.starts_with("<?xml version='1.0'?>\n<!DOCTYPE platform"));
        assert!(x.contains("<platform version=\"4.1\">"));
        assert_eq!(count(&x, "<cluster "), 1);
        assert!(x.contains("topology=\"TORUS\" topo_parameters=\"4,2\""));
        assert!(x.contains("prefix=\"n\" radical=\"0-7\" suffix=\"\""));
        assert!(x.contains("core=\"3\""));
        assert!(x.contains("bw=\"5e9Bps\" lat=\"1e-7s\""));
        assert!(x.contains("sharing_policy=\"SPLITDUPLEX\""));
        assert!(x.trim_end().ends_with("</zone>\n</platform>"));
        assert_eq!(count(&x, "<route"), 0);
        let names = smpi_host_names(&m);
        assert_eq!(names, ["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"]);
    }

    #[test]
    fn shared_coordinates_share_a_host_with_more_cores() {
        let p = TorusParams::new(vec![2, 2]);
        let nodes = vec![
            TorusNode {
                name: "a".into(),
                coords: vec![1, 1],
            },
            TorusNode {
                name: "b".into(),
                coords: vec![0, 0],
            },
            TorusNode {
                name: "c".into(),
                coords: vec![1, 1],
            },
        ];
        let m = MapMachine::torus(Torus::new(p, nodes).unwrap(), 4).unwrap();
        assert_eq!(smpi_host_names(&m), ["n3", "n0", "n3"]);
        let x = platform_xml(&m).unwrap();
        assert!(x.contains("radical=\"0-3\""));
        assert!(x.contains("core=\"8\"")); // 4 ranks per node x 2 nodes at (1,1)
                                           // Slots 0-3 on a, 4-7 on b, 8-11 on c.
        assert_eq!(hostfile(&m, &[8, 0, 4]).unwrap(), "n3\nn3\nn0\n");
        assert!(hostfile(&m, &[12]).is_err());
        // Explicit form: only the used hosts, one route per ordered pair.
        let o = SimgridOptions {
            torus_form: TorusForm::Explicit,
            ..Default::default()
        };
        let x = platform_xml_with(&m, &o).unwrap();
        assert_eq!(count(&x, "<host "), 2);
        assert!(x.contains("<host id=\"n0\" speed=\"1e9f\" core=\"8\"/>"));
        assert_eq!(count(&x, "<route "), 4);
        // (0,0) -> (1,1): x+ from index 0 (link 0·4 + 0), then y+ from index 1 (1·4 + 2).
        assert!(x.contains(
            "<route src=\"n0\" dst=\"n3\" symmetrical=\"NO\"><link_ctn id=\"l0\"/><link_ctn id=\"l6\"/></route>"
        ));
        assert!(x.contains(
            "<route src=\"n3\" dst=\"n3\" symmetrical=\"NO\"><link_ctn id=\"lo3\"/></route>"
        ));
    }

    #[test]
    fn unequal_bandwidths_give_explicit_links_and_copr_routes() {
        // 4 x 1 ring, x links 6.5 GB/s, the y dimension (extent 1) 5 GB/s.
        let m = MapMachine::torus(torus(vec![4, 1], vec![6.5e9, 5e9]), 1).unwrap();
        let x = platform_xml(&m).unwrap();
        assert_eq!(count(&x, "<cluster"), 0);
        assert_eq!(count(&x, "<host "), 4);
        // 2 dims x 2 directions x 4 coordinates = 16 links + 4 loopbacks.
        assert_eq!(count(&x, "<link id=\"l"), 16 + 4);
        assert!(x.contains("<link id=\"l0\" bandwidth=\"6.5e9Bps\" latency=\"1e-7s\"/>"));
        assert!(x.contains("<link id=\"l2\" bandwidth=\"5e9Bps\" latency=\"1e-7s\"/>"));
        assert_eq!(count(&x, "<route "), 16);
        // The tie 2 -> 0 goes positive (copr): x+ from 2 (link 8), x+ from 3 (link 12).
        assert!(x.contains(
            "<route src=\"n2\" dst=\"n0\" symmetrical=\"NO\"><link_ctn id=\"l8\"/><link_ctn id=\"l12\"/></route>"
        ));
        // 1 -> 0 goes negative: x- from 1 (link 4 + 1).
        assert!(x.contains(
            "<route src=\"n1\" dst=\"n0\" symmetrical=\"NO\"><link_ctn id=\"l5\"/></route>"
        ));
        let c = SimgridOptions {
            torus_form: TorusForm::Cluster,
            ..Default::default()
        };
        assert!(platform_xml_with(&m, &c).is_err());
    }

    #[test]
    fn injection_bandwidth_adds_host_links() {
        let mut p = TorusParams::new(vec![2]);
        p.injection_bandwidth = Some(1e9);
        let m = MapMachine::torus(Torus::full(p).unwrap(), 1).unwrap();
        let x = platform_xml(&m).unwrap();
        assert!(x.contains("<link id=\"inj0\" bandwidth=\"1e9Bps\" latency=\"0s\"/>"));
        assert!(x.contains(
            "<route src=\"n1\" dst=\"n0\" symmetrical=\"NO\"><link_ctn id=\"inj1\"/><link_ctn id=\"l2\"/><link_ctn id=\"ej0\"/></route>"
        ));
    }

    #[test]
    fn graph_network_lists_links_and_shortest_routes() {
        // a - s (1us, 1 GB/s) - b (2us, 0.5 GB/s); a third host c behind s.
        let mut net = Network::new("line");
        for h in ["a", "b", "c"] {
            net.add_host(h).unwrap();
        }
        net.add_switch("s").unwrap();
        net.add_link("a", "s", LinkCost::from_bandwidth(1e-6, 1e9).unwrap())
            .unwrap();
        net.add_link("s", "b", LinkCost::from_bandwidth(2e-6, 5e8).unwrap())
            .unwrap();
        net.add_link("s", "c", LinkCost::from_bandwidth(1e-6, 1e9).unwrap())
            .unwrap();
        // Machine: hosts b and a only, in that order.
        let m = MapMachine::network(net, Some(vec![1, 0]), BandwidthModel::Bottleneck, 2).unwrap();
        assert_eq!(smpi_host_names(&m), ["b", "a"]);
        let single = SimgridOptions {
            graph_form: GraphForm::SinglePath,
            ..Default::default()
        };
        let x = platform_xml_with(&m, &single).unwrap();
        assert_eq!(count(&x, "<host "), 2);
        assert!(x.contains("<host id=\"b\" speed=\"1e9f\" core=\"2\"/>"));
        // Edges: 0 a->s, 1 s->a, 2 s->b, 3 b->s, 4 s->c, 5 c->s.
        assert_eq!(count(&x, "<link id=\"l"), 6 + 2);
        assert!(x.contains(
            "<link id=\"l2\" bandwidth=\"5e8Bps\" latency=\"2e-6s\"><prop id=\"copr\" value=\"s-&gt;b\"/></link>"
        ));
        assert!(x.contains(
            "<route src=\"a\" dst=\"b\" symmetrical=\"NO\"><link_ctn id=\"l0\"/><link_ctn id=\"l2\"/></route>"
        ));
        assert!(x.contains(
            "<route src=\"b\" dst=\"a\" symmetrical=\"NO\"><link_ctn id=\"l3\"/><link_ctn id=\"l1\"/></route>"
        ));
        assert_eq!(count(&x, "<route "), 4);
        assert_eq!(hostfile(&m, &[0, 2, 1]).unwrap(), "b\na\nb\n");
        // Unique paths: the ECMP form (the default) has the same routes, and only the
        // links they use.
        let e = platform_xml(&m).unwrap();
        assert_eq!(
            e,
            platform_xml_with(
                &m,
                &SimgridOptions {
                    graph_form: GraphForm::Ecmp,
                    ..Default::default()
                }
            )
            .unwrap()
        );
        assert!(e.contains("(ECMP bundles)"));
        assert_eq!(count(&e, "<link id=\"l"), 4 + 2);
        assert!(!e.contains("s-&gt;c"));
        let routes = |x: &str| {
            x.lines()
                .filter(|l| l.contains("<route "))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(routes(&e), routes(&x));
    }

    #[test]
    fn ecmp_form_is_refused_where_splits_are_not_bundles() {
        // a -> {s1, s2} -> t and b -> s2: the hop out of a is {a>s1, a>s2} towards t
        // but {a>s2} towards b
        let mut net = Network::new("uneven");
        for h in ["a", "b", "t"] {
            net.add_host(h).unwrap();
        }
        net.add_switch("s1").unwrap();
        net.add_switch("s2").unwrap();
        let c = LinkCost::from_bandwidth(1e-6, 1e9).unwrap();
        for (x, y) in [
            ("a", "s1"),
            ("a", "s2"),
            ("s1", "t"),
            ("s2", "t"),
            ("b", "s2"),
        ] {
            net.add_link(x, y, c).unwrap();
        }
        let m = MapMachine::network(net, None, BandwidthModel::Bottleneck, 1).unwrap();
        let o = SimgridOptions {
            graph_form: GraphForm::Ecmp,
            ..Default::default()
        };
        let err = platform_xml_with(&m, &o).unwrap_err().to_string();
        assert!(err.contains("\"uneven\" is not one"), "{err}");
        // the default falls back to the single path
        let x = platform_xml(&m).unwrap();
        assert!(!x.contains("ECMP"));
        assert_eq!(count(&x, "<link id=\"l"), 10 + 3);
    }

    #[test]
    fn odd_host_names_are_replaced() {
        let mut net = Network::new("odd");
        net.add_host("a b").unwrap();
        net.add_host("c").unwrap();
        net.add_link("a b", "c", LinkCost::from_bandwidth(1e-6, 1e9).unwrap())
            .unwrap();
        let m = MapMachine::network(net, None, BandwidthModel::Bottleneck, 1).unwrap();
        assert_eq!(smpi_host_names(&m), ["n0", "n1"]);
        assert!(platform_xml(&m).unwrap().contains("value=\"a b-&gt;c\""));
    }

    #[test]
    fn control_characters_never_reach_the_xml() {
        let mut net = Network::new("odd\u{1}machine \u{1b}[31m\n");
        net.add_host("a\u{1}").unwrap();
        net.add_host("b\u{1b}[31m").unwrap();
        net.add_link(
            "a\u{1}",
            "b\u{1b}[31m",
            LinkCost::from_bandwidth(1e-6, 1e9).unwrap(),
        )
        .unwrap();
        let m = MapMachine::network(net, None, BandwidthModel::Bottleneck, 1).unwrap();
        let xml = platform_xml(&m).unwrap();
        let bad = xml
            .chars()
            .find(|&c| c.is_control() && c != '\n' || c == '\u{fffe}' || c == '\u{ffff}');
        assert_eq!(bad, None, "{xml:?}");
        assert!(xml.contains("a\\u{1}-&gt;b\\u{1b}[31m"), "{xml}");
        // the description stays on the comment's line
        assert!(xml.contains("odd\\u{1}machine \\u{1b}[31m\\n"), "{xml}");
    }

    #[test]
    fn flat_and_bad_options_are_refused() {
        assert!(platform_xml(&MapMachine::flat(4, 2).unwrap()).is_err());
        let m = MapMachine::torus(torus(vec![2], vec![5e9]), 1).unwrap();
        let o = SimgridOptions {
            loopback_bandwidth: 0.0,
            ..Default::default()
        };
        assert!(platform_xml_with(&m, &o).is_err());
    }
}
