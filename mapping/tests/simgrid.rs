//! SimGrid SMPI checks of the platforms `copr_mapping::simgrid` writes: ping-pong
//! latencies and bandwidths against copr's hop counts, routes and link parameters,
//! the torus routing difference on ties, a Cannon run, and the fat trees' ECMP
//! platforms (their routes load links as ECMP does; simulated times match the model),
//! and the staged model of the grid algorithms against their simulated runs.
//!
//! Builds `benches/simgrid/*.c` with `smpicc`; skipped (with a notice) when `smpicc`
//! is not installed. `scripts/simgrid-check.sh` runs these tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use copr_mapping::simgrid::{
    hostfile, platform_xml, platform_xml_with, smpi_host_names, GraphForm, SimgridOptions,
    TorusForm, SMPIRUN_FLAGS,
};
use copr_mapping::{
    ecmp_link_loads, ecmp_max_link_time, program_time, Algorithm, AlgorithmSpec, Collective, Edge,
    MapMachine, Pattern, Perm, Program, RoundModel, SplitMix,
};
use copr_topology::{BandwidthModel, FatTreeSpec, LinkSpec, Network, Torus, TorusParams};

/// Built benchmark programs (`None`: SimGrid is not installed).
fn programs() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        if Command::new("smpicc").arg("--version").output().is_err() {
            return None;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("simgrid");
        std::fs::create_dir_all(&dir).unwrap();
        let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("benches/simgrid");
        for p in ["pingpong", "cannon", "replay", "gridalg"] {
            let out = Command::new("smpicc")
                .args(["-O2", "-Wall"])
                .arg(src.join(format!("{p}.c")))
                .arg("-o")
                .arg(dir.join(p))
                .output()
                .expect("smpicc runs");
            assert!(
                out.status.success(),
                "smpicc {p}.c: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Some(dir)
    })
    .as_ref()
}

macro_rules! need_simgrid {
    () => {
        match programs() {
            Some(d) => d,
            None => {
                eprintln!("smpicc not found: SimGrid check skipped (install libsimgrid-dev)");
                return;
            }
        }
    };
}

/// Runs `prog args` under smpirun on `m` with rank `i` on node `node_of_rank[i]`;
/// returns stdout.
fn smpirun(
    dir: &Path,
    tag: &str,
    xml: &str,
    m: &MapMachine,
    node_of_rank: &[usize],
    prog: &str,
    args: &[&str],
) -> String {
    let work = dir.join(format!("run-{tag}"));
    std::fs::create_dir_all(&work).unwrap();
    let plat = work.join("platform.xml");
    std::fs::write(&plat, xml).unwrap();
    let slots: Vec<usize> = node_of_rank
        .iter()
        .map(|&k| k * m.ranks_per_node())
        .collect();
    let hosts = work.join("hosts");
    std::fs::write(&hosts, hostfile(m, &slots).unwrap()).unwrap();
    let out = Command::new("smpirun")
        .arg("-np")
        .arg(node_of_rank.len().to_string())
        .arg("-platform")
        .arg(&plat)
        .arg("-hostfile")
        .arg(&hosts)
        .args(SMPIRUN_FLAGS)
        .arg(dir.join(prog))
        .args(args)
        .current_dir(&work)
        .output()
        .expect("smpirun runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "smpirun {prog} {args:?} ({tag}) failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `(partner, 1-byte half round trip, large half round trip)` of pingpong output.
fn pingpongs(out: &str) -> Vec<(usize, f64, Option<f64>)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("pingpong "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f.get(3).map(|s| s.parse().unwrap()),
            )
        })
        .collect()
}

fn value(out: &str, key: &str) -> f64 {
    out.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no `{key}` in output:\n{out}"))
        .trim()
        .parse()
        .unwrap()
}

fn torus_machine(dims: Vec<u32>, bw: Vec<f64>, hop_latency: f64, rpn: usize) -> MapMachine {
    let mut p = TorusParams::new(dims);
    p.link_bandwidth = bw;
    p.hop_latency = hop_latency;
    MapMachine::torus(Torus::full(p).unwrap(), rpn).unwrap()
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs() + 2e-8
}

#[test]
fn torus_pingpong_latencies_match_copr_hops() {
    let dir = need_simgrid!();
    let lat = 1e-6;
    let m = torus_machine(vec![4, 4, 4], vec![5e9; 3], lat, 1);
    let all: Vec<usize> = (0..64).collect();
    for form in [TorusForm::Cluster, TorusForm::Explicit] {
        let o = SimgridOptions {
            torus_form: form,
            ..Default::default()
        };
        let xml = platform_xml_with(&m, &o).unwrap();
        let out = smpirun(
            dir,
            &format!("torus-{form:?}"),
            &xml,
            &m,
            &all,
            "pingpong",
            &["-n", "3"],
        );
        let pp = pingpongs(&out);
        assert_eq!(pp.len(), 63, "{out}");
        for (p, t, _) in pp {
            let h = m.hops(0, p);
            assert!(
                close(t, f64::from(h) * lat, 0.01),
                "{form:?}: rank 0 -> {p}: {t:e} s, copr says {h} hops of {lat:e} s"
            );
        }
    }
}

#[test]
fn torus_direction_bandwidths_are_simulated() {
    let dir = need_simgrid!();
    // X and Z 30 % faster than Y.
    let m = torus_machine(vec![4, 4, 4], vec![6.5e9, 5e9, 6.5e9], 1e-7, 1);
    let xml = platform_xml(&m).unwrap();
    assert!(
        !xml.contains("<cluster"),
        "unequal bandwidths need the explicit form"
    );
    let all: Vec<usize> = (0..64).collect();
    let bytes = 1_000_000;
    let out = smpirun(
        dir,
        "torus-bw",
        &xml,
        &m,
        &all,
        "pingpong",
        &["-n", "2", "-b", "1000000", "1", "4", "16", "5", "21"],
    );
    for (p, t1, big) in pingpongs(&out) {
        let h = m.hops(0, p);
        assert!(close(t1, f64::from(h) * 1e-7, 0.05), "0 -> {p}: {t1:e}");
        // Bottleneck: the slowest dimension on the route.
        let mut slowest: f64 = 0.0;
        m.for_route(0, p, |l| {
            slowest = slowest.max(m.link_info(l).inv_bandwidth)
        });
        let want = f64::from(h) * 1e-7 + bytes as f64 * slowest;
        let big = big.unwrap();
        assert!(
            close(big, want, 0.01),
            "0 -> {p}: {big:e} s for {bytes} B, want {want:e}"
        );
    }
}

/// One round of the edge list `edges` (`SRC DST BYTES` lines) in `replay.c`, one rank
/// per slot, rank `i` on node `i / ranks_per_node`: the simulated time, seconds.
fn replay_time(dir: &Path, tag: &str, xml: &str, m: &MapMachine, edges: &str) -> f64 {
    let g = dir.join(format!("graph-{tag}.txt"));
    std::fs::write(&g, edges).unwrap();
    let rpn = m.ranks_per_node();
    let all: Vec<usize> = (0..m.nodes() * rpn).map(|i| i / rpn).collect();
    let out = smpirun(
        dir,
        tag,
        xml,
        m,
        &all,
        "replay",
        &[g.to_str().unwrap(), "1"],
    );
    value(&out, "replay_time_s")
}

/// Two 1 MB flows into rank 0; returns the replay time.
fn two_flows(dir: &Path, tag: &str, xml: &str, m: &MapMachine, a: usize, b: usize) -> f64 {
    let edges = format!("# two flows\n{a} 0 1000000\n{b} 0 1000000\n");
    replay_time(dir, tag, xml, m, &edges)
}

/// The replay times its rounds from one instant for every rank, and reduces the times
/// only after every round has ended: a lone message takes its route's latency plus
/// bytes over bandwidth. On 64 ranks, two 8-byte messages across the torus' diameter,
/// however far apart the ranks left the barrier before (up to about 0.6 µs, more than
/// the 0.3 µs the check allows); on 1024 ranks (16 per node) a 512-byte message, which
/// the ranks that send nothing would otherwise slow down by 0.08–0.15 µs with the
/// reduction of their times.
#[test]
fn replay_starts_every_rank_at_once() {
    let dir = need_simgrid!();
    // (ranks per node, edges, the slowest message's nodes, its bytes)
    let cases = [
        (1, "0 42 8\n42 0 8\n", (0, 42), 8.0),
        (1, "0 63 8\n", (0, 63), 8.0),
        (1, "21 0 8\n", (21, 0), 8.0),
        (16, "20 4 512\n", (1, 0), 512.0),
        (16, "33 1 512\n", (2, 0), 512.0),
    ];
    for (k, (rpn, edges, (a, b), bytes)) in cases.into_iter().enumerate() {
        let m = torus_machine(vec![4, 4, 4], vec![5e9; 3], 1e-7, rpn);
        let xml = platform_xml(&m).unwrap();
        let t = replay_time(dir, &format!("start-{k}"), &xml, &m, edges);
        let want = f64::from(m.hops(a, b)) * 1e-7 + bytes / 5e9;
        assert!(
            (t - want).abs() < 2e-8,
            "{edges:?}: simulated {t:e} s, route {want:e} s"
        );
    }
}

#[test]
fn torus_tie_routing_cluster_vs_copr() {
    let dir = need_simgrid!();
    let m = torus_machine(vec![4, 4, 4], vec![5e9; 3], 1e-7, 1);
    let alone = 1e6 / 5e9;
    let shared = |t: f64| t > 1.8 * alone;
    // From x = 2 to x = 0 (distance 2 both ways): copr goes 2 -> 3 -> 0 and so
    // shares link 3 -> 0 with a flow from 3; SimGrid's TORUS goes 2 -> 1 -> 0.
    let cluster = platform_xml_with(
        &m,
        &SimgridOptions {
            torus_form: TorusForm::Cluster,
            ..Default::default()
        },
    )
    .unwrap();
    let explicit = platform_xml_with(
        &m,
        &SimgridOptions {
            torus_form: TorusForm::Explicit,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(shared(two_flows(dir, "tie-c1", &cluster, &m, 2, 1)));
    assert!(!shared(two_flows(dir, "tie-c3", &cluster, &m, 2, 3)));
    assert!(shared(two_flows(dir, "tie-e3", &explicit, &m, 2, 3)));
    assert!(!shared(two_flows(dir, "tie-e1", &explicit, &m, 2, 1)));
    // Dimension order x then y: 5 = (1,1,0) -> 0 goes x first (5 -> 4 -> 0), so it
    // shares link 4 -> 0 with a flow from 4, in both forms.
    for (tag, xml) in [("do-c", &cluster), ("do-e", &explicit)] {
        assert!(shared(two_flows(dir, tag, xml, &m, 5, 4)), "{tag}");
    }
}

/// A torus dimension of extent 2: copr sends both ways between its two coordinates on
/// the + links (0 -> 1 on node 0's, 1 -> 0 on node 1's, wrapping round); SimGrid's
/// `TORUS` cluster sends 1 -> 0 the negative way, over the down channel of node 0's
/// link. Each direction has a channel of its own in both, and the same messages share
/// one, so the simulated time of every case is copr's busiest link plus the longest
/// route's latency, in both platform forms.
#[test]
fn torus_extent_two_loads_agree_with_simgrid() {
    let dir = need_simgrid!();
    let m = torus_machine(vec![2, 2, 2], vec![5e9; 3], 1e-7, 1);
    let cases = [
        // both ways between x = 0 and x = 1: one channel each, not shared
        "0 1 1000000\n1 0 1000000\n",
        // every node to its x, y and z partner at once: one message per channel
        "0 1 1000000\n1 0 1000000\n2 3 1000000\n3 2 1000000\n0 2 1000000\n2 0 1000000\n\
         1 3 1000000\n3 1 1000000\n0 4 1000000\n4 0 1000000\n",
        // 3 = (1,1,0) -> 0 goes x first (3 -> 2), then shares 2 -> 0 with a flow from 2
        "3 0 1000000\n2 0 1000000\n",
        // 3 -> 0 and 1 -> 2 cross without sharing; 7 -> 0 (7 -> 6 -> 4 -> 0) shares
        // 6 -> 4 with a flow from 6
        "3 0 1000000\n1 2 1000000\n7 0 1000000\n6 4 1000000\n",
    ];
    for form in [TorusForm::Cluster, TorusForm::Explicit] {
        let xml = platform_xml_with(
            &m,
            &SimgridOptions {
                torus_form: form,
                ..Default::default()
            },
        )
        .unwrap();
        for (k, edges) in cases.iter().enumerate() {
            let list: Vec<Edge> = edges
                .lines()
                .map(|l| {
                    let f: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
                    Edge {
                        src: f[0] as u32,
                        dst: f[1] as u32,
                        bytes: f[2],
                    }
                })
                .collect();
            let hops = list
                .iter()
                .map(|e| m.hops(e.src as usize, e.dst as usize))
                .max()
                .unwrap();
            let p = Pattern::from_edges(8, list, "extent 2".into()).unwrap();
            let busiest = copr_mapping::evaluate(&p, &m, &Perm::identity(8)).max_link_time;
            let want = busiest + f64::from(hops) * 1e-7;
            let got = replay_time(dir, &format!("two-{form:?}-{k}"), &xml, &m, edges);
            assert!(
                close(got, want, 0.02),
                "{form:?} case {k}: simulated {got:e} s, copr's busiest link and latency {want:e} s"
            );
        }
    }
}

fn network_machine(file: &str) -> (MapMachine, Network) {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("data/topology")
        .join(file);
    let net = Network::from_file(&path).unwrap();
    (
        MapMachine::network(net.clone(), None, BandwidthModel::Bottleneck, 2).unwrap(),
        net,
    )
}

#[test]
fn network_pingpong_latencies_match_copr_paths() {
    let dir = need_simgrid!();
    for file in ["fat-tree-k4.net.toml", "dragonfly-g5a4p2.net.toml"] {
        let (m, net) = network_machine(file);
        let costs = net.costs(BandwidthModel::Bottleneck).unwrap();
        let xml = platform_xml(&m).unwrap();
        let names = smpi_host_names(&m);
        assert_eq!(names[0], net.host_name(0));
        let all: Vec<usize> = (0..m.nodes()).collect();
        let out = smpirun(dir, file, &xml, &m, &all, "pingpong", &["-n", "3"]);
        let pp = pingpongs(&out);
        assert_eq!(pp.len(), m.nodes() - 1, "{out}");
        let mut seen_hops = std::collections::BTreeSet::new();
        for (p, t, _) in pp {
            let c = costs.link_cost(0, p);
            let want = c.latency + c.inv_bandwidth; // 1 byte
            assert!(
                close(t, want, 0.02),
                "{file}: 0 -> {p}: {t:e} s, copr: {want:e} s ({} hops)",
                m.hops(0, p)
            );
            seen_hops.insert(m.hops(0, p));
        }
        assert!(seen_hops.len() >= 2, "{file}: hop counts {seen_hops:?}");
    }
}

#[test]
fn cannon_64_on_torus_completes() {
    let dir = need_simgrid!();
    let m = torus_machine(vec![4, 4, 4], vec![5e9; 3], 1e-7, 1);
    let xml = platform_xml(&m).unwrap();
    let all: Vec<usize> = (0..64).collect();
    let out = smpirun(
        dir,
        "cannon",
        &xml,
        &m,
        &all,
        "cannon",
        &["8", "8", "1048576", "1048576", "3"],
    );
    let t = value(&out, "cannon_time_s");
    // At least 3 rounds of a 1 MiB message over 5 GB/s links.
    assert!((3.0 * 1048576.0 / 5e9..1.0).contains(&t), "cannon time {t}");
    let out4 = smpirun(
        dir,
        "cannon4",
        &xml,
        &m,
        &all,
        "cannon",
        &["8", "8", "1048576", "1048576", "3", "four"],
    );
    assert!(value(&out4, "cannon_time_s") >= t);
    // Bad arguments fail.
    let st = Command::new("smpirun")
        .args(["-np", "64", "-platform"])
        .arg(dir.join("run-cannon/platform.xml"))
        .arg("-hostfile")
        .arg(dir.join("run-cannon/hosts"))
        .args(SMPIRUN_FLAGS)
        .arg(dir.join("cannon"))
        .args(["8", "7", "1", "1", "1"])
        .output()
        .unwrap();
    assert!(!st.status.success());
    assert!(String::from_utf8_lossy(&st.stderr).contains("grid size"));
}

/// Timings for the record (`cargo test --release --test simgrid -- --ignored --nocapture`):
/// the p = 1024 Cannon run (4-neighbour, 1 MiB, 3 iterations) on a 4x4x4 torus x 16
/// cores, packed and round-robin, and the explicit platform of an 8x8x8 torus with
/// X/Z 30 % faster than Y (size, and a 512-rank ping-pong's wall time).
#[test]
#[ignore]
fn timings() {
    let dir = need_simgrid!();
    let m = torus_machine(vec![4, 4, 4], vec![5e9; 3], 1e-7, 16);
    let cluster = platform_xml(&m).unwrap();
    let explicit = platform_xml_with(
        &m,
        &SimgridOptions {
            torus_form: TorusForm::Explicit,
            ..Default::default()
        },
    )
    .unwrap();
    let packed: Vec<usize> = (0..1024).map(|r| r / 16).collect();
    let robin: Vec<usize> = (0..1024).map(|r| r % 64).collect();
    for (tag, nodes, xml) in [
        ("packed", &packed, &cluster),
        ("round-robin", &robin, &cluster),
        ("packed, explicit routes", &packed, &explicit),
        ("round-robin, explicit routes", &robin, &explicit),
    ] {
        let t0 = std::time::Instant::now();
        let out = smpirun(
            dir,
            &format!("c1024-{}", tag.replace([' ', ','], "")),
            xml,
            &m,
            nodes,
            "cannon",
            &["32", "32", "1048576", "1048576", "3", "four"],
        );
        println!(
            "cannon p=1024 4x4x4x16 {tag}: simulated {:.4e} s, wall {:.2} s",
            value(&out, "cannon_time_s"),
            t0.elapsed().as_secs_f64()
        );
    }
    let big = torus_machine(vec![8, 8, 8], vec![6.5e9, 5e9, 6.5e9], 1e-7, 1);
    let t0 = std::time::Instant::now();
    let xml = platform_xml(&big).unwrap();
    println!(
        "8x8x8 explicit platform: {} MB, written in {:.2} s",
        xml.len() / 1_000_000,
        t0.elapsed().as_secs_f64()
    );
    let all: Vec<usize> = (0..512).collect();
    let t0 = std::time::Instant::now();
    let out = smpirun(
        dir,
        "big",
        &xml,
        &big,
        &all,
        "pingpong",
        &["-n", "5", "1", "8", "64", "73", "292"],
    );
    println!(
        "8x8x8 pingpong (512 ranks): wall {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    for (p, t, _) in pingpongs(&out) {
        assert!(
            close(t, f64::from(big.hops(0, p)) * 1e-7, 0.05),
            "0 -> {p}: {t:e}"
        );
    }
}

/// A SimGrid platform as written: each link's copr links (`l<e>`: `e`; a bundle: its
/// `copr_links` property) and bandwidth, and each route's links.
struct Parsed {
    links: std::collections::HashMap<String, (Vec<usize>, f64)>,
    routes: std::collections::HashMap<(String, String), Vec<String>>,
}

fn attr<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let at = line.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&line[at..at + line[at..].find('"')?])
}

fn parse_platform(xml: &str) -> Parsed {
    let mut links = std::collections::HashMap::new();
    let mut routes = std::collections::HashMap::new();
    for line in xml.lines().map(str::trim) {
        if line.starts_with("<link id=") {
            let id = attr(line, "id").unwrap().to_string();
            let bw: f64 = attr(line, "bandwidth")
                .unwrap()
                .trim_end_matches("Bps")
                .parse()
                .unwrap();
            let members = if let Some(at) = line.find("<prop id=\"copr_links\"") {
                attr(&line[at..], "value")
                    .unwrap()
                    .split(' ')
                    .map(|x| x.parse().unwrap())
                    .collect()
            } else if let Some(e) = id.strip_prefix('l').and_then(|x| x.parse().ok()) {
                vec![e]
            } else {
                Vec::new() // loopback
            };
            links.insert(id, (members, bw));
        } else if line.starts_with("<route ") {
            let key = (
                attr(line, "src").unwrap().to_string(),
                attr(line, "dst").unwrap().to_string(),
            );
            let hops = line
                .split("<link_ctn id=\"")
                .skip(1)
                .map(|x| x[..x.find('"').unwrap()].to_string())
                .collect();
            routes.insert(key, hops);
        }
    }
    Parsed { links, routes }
}

/// Per copr link, the bytes the platform's routes put on it: each message's bytes on
/// every SimGrid link of its route, a bundle's bytes shared evenly by its links.
fn platform_loads(xml: &str, p: &Pattern, m: &MapMachine, map: &Perm) -> Vec<f64> {
    let pl = parse_platform(xml);
    let names = smpi_host_names(m);
    let mut on: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    for e in p.edges() {
        let a = m.node_of_slot(map.apply(e.src as usize));
        let b = m.node_of_slot(map.apply(e.dst as usize));
        if a == b {
            continue;
        }
        for l in &pl.routes[&(names[a].clone(), names[b].clone())] {
            *on.entry(l.as_str()).or_default() += e.bytes as f64;
        }
    }
    let mut load = vec![0.0; m.num_links()];
    for (id, bytes) in on {
        let (members, _) = &pl.links[id];
        for &e in members {
            load[e] += bytes / members.len() as f64;
        }
    }
    load
}

fn fat_tree_machine(k: usize, rpn: usize) -> MapMachine {
    let l = |latency| LinkSpec {
        latency,
        bandwidth: 1.25e10,
    };
    let net = Network::fat_tree(&FatTreeSpec {
        k,
        host_link: l(1e-7),
        edge_link: l(1.5e-7),
        core_link: l(2e-7),
    })
    .unwrap();
    MapMachine::network(net, None, BandwidthModel::Bottleneck, rpn).unwrap()
}

fn assert_loads_equal(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len());
    for (l, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-9 * w.abs().max(1.0),
            "{what}: link {l}: platform {g}, ECMP {w}"
        );
    }
}

/// Traffic patterns on `tasks` tasks: seeded random pairs, all to task 0, a random
/// permutation, and every task to the task half the machine away.
fn traffic(tasks: usize, seed: u64) -> Vec<(String, Pattern)> {
    let mut rng = SplitMix(seed);
    let pat = |what: &str, e: Vec<(usize, usize, u64)>| {
        let edges = e
            .into_iter()
            .map(|(src, dst, bytes)| Edge {
                src: src as u32,
                dst: dst as u32,
                bytes,
            })
            .collect();
        (
            what.to_string(),
            Pattern::from_edges(tasks, edges, what.into()).unwrap(),
        )
    };
    let random = (0..4 * tasks)
        .map(|_| {
            (
                rng.below(tasks),
                rng.below(tasks),
                1 + rng.below(1 << 20) as u64,
            )
        })
        .collect();
    let mut perm: Vec<usize> = (0..tasks).collect();
    rng.shuffle(&mut perm);
    vec![
        pat("random", random),
        pat("all to one", (1..tasks).map(|s| (s, 0, 1 << 20)).collect()),
        pat(
            "permutation",
            (0..tasks).map(|s| (s, perm[s], 1000 + s as u64)).collect(),
        ),
        pat(
            "shift",
            (0..tasks)
                .map(|s| (s, (s + tasks / 2) % tasks, 1 << 16))
                .collect(),
        ),
    ]
}

/// The fat trees' ECMP platform loads every link exactly as `ecmp_link_loads` does
/// (k = 4 and 8, packed and scrambled mappings, four traffic patterns), the links of a
/// bundle carry equal ECMP loads, and the single-path platform loads copr's
/// single-path links instead. No simulator needed.
#[test]
fn ecmp_platform_routes_give_ecmp_link_loads() {
    for (k, rpn, seed) in [(4, 2, 1), (8, 1, 2)] {
        let m = fat_tree_machine(k, rpn);
        let xml = platform_xml(&m).unwrap();
        assert!(xml.contains("(ECMP bundles)"));
        let pl = parse_platform(&xml);
        let single = platform_xml_with(
            &m,
            &SimgridOptions {
                graph_form: GraphForm::SinglePath,
                ..Default::default()
            },
        )
        .unwrap();
        let n = m.slots();
        let mut scrambled: Vec<usize> = (0..n).collect();
        SplitMix(seed + 10).shuffle(&mut scrambled);
        for map in [
            Perm::from_forward((0..n).collect()).unwrap(),
            Perm::from_forward(scrambled).unwrap(),
        ] {
            for (what, p) in traffic(n, seed) {
                let ecmp = ecmp_link_loads(&p, &m, &map).unwrap();
                let got = platform_loads(&xml, &p, &m, &map);
                assert_loads_equal(&got, &ecmp, &format!("k = {k}, {what}"));
                // every bundle's links carry the same ECMP load
                for (id, (members, _)) in &pl.links {
                    for &e in members {
                        assert!(
                            (ecmp[e] - ecmp[members[0]]).abs() <= 1e-9 * ecmp[e].max(1.0),
                            "k = {k}, {what}: bundle {id}: link {e} {} against {}",
                            ecmp[e],
                            ecmp[members[0]]
                        );
                    }
                }
                let node: Vec<u32> = (0..n)
                    .map(|t| m.node_of_slot(map.apply(t)) as u32)
                    .collect();
                let one: Vec<f64> = copr_mapping::link_loads(&p, &m, &node)
                    .iter()
                    .map(|&x| x as f64)
                    .collect();
                let got = platform_loads(&single, &p, &m, &map);
                assert_loads_equal(&got, &one, &format!("k = {k}, {what}, single path"));
            }
        }
    }
}

/// A k = 4 fat tree by hand: h0 -> h4 (1 MiB), h1 -> h8 (1 MiB), h2 -> h5 (2 MiB).
/// Pod 0 sends 4 MiB up over its 4 aggregation-core links (1 MiB each); pod 1
/// receives 3 MiB over its 4 (0.75 each), pod 2 1 MiB (0.25 each); edge switch e1.0
/// receives 3 MiB over its 2 links from aggregation (1.5 each). The route h0 -> h4
/// has six links: host, edge up (2 links), pod up (4), pod down (4), edge down (2),
/// host.
#[test]
fn ecmp_platform_of_a_k4_fat_tree_by_hand() {
    let (m, _) = network_machine("fat-tree-k4.net.toml");
    let m = m.with_ranks_per_node(1).unwrap();
    let xml = platform_xml(&m).unwrap();
    let pl = parse_platform(&xml);
    let mib = 1u64 << 20;
    let p = Pattern::from_edges(
        16,
        [(0, 4, mib), (1, 8, mib), (2, 5, 2 * mib)]
            .into_iter()
            .map(|(src, dst, bytes)| Edge { src, dst, bytes })
            .collect(),
        "by hand".into(),
    )
    .unwrap();
    let id = Perm::from_forward((0..16).collect()).unwrap();
    let name = |l: usize| m.link_info(l).name;
    let want = |l: usize| -> f64 {
        let s = name(l);
        let (a, b) = s.split_once("->").unwrap();
        let x = match (a, b) {
            ("h0", "e0.0") | ("h1", "e0.0") | ("e1.0", "h4") | ("e2.0", "h8") => 1.0,
            ("h2", "e0.1") | ("e1.0", "h5") => 2.0,
            ("e0.0", _) | ("e0.1", _) if b.starts_with("a0.") => 1.0,
            (_, _) if a.starts_with("a0.") && b.starts_with('c') => 1.0,
            (_, _) if a.starts_with('c') && b.starts_with("a1.") => 0.75,
            (_, _) if a.starts_with('c') && b.starts_with("a2.") => 0.25,
            (_, "e1.0") if a.starts_with("a1.") => 1.5,
            (_, "e2.0") if a.starts_with("a2.") => 0.5,
            _ => 0.0,
        };
        x * mib as f64
    };
    let hand: Vec<f64> = (0..m.num_links()).map(want).collect();
    assert_eq!(
        hand.iter().filter(|&&x| x > 0.0).count(),
        6 + 4 + 4 + 4 + 4 + 2 + 2,
        "links with traffic"
    );
    assert_loads_equal(&ecmp_link_loads(&p, &m, &id).unwrap(), &hand, "ECMP");
    assert_loads_equal(&platform_loads(&xml, &p, &m, &id), &hand, "platform");
    // the route h0 -> h4 and its bandwidths
    let r = &pl.routes[&("h0".to_string(), "h4".to_string())];
    let bws: Vec<f64> = r.iter().map(|l| pl.links[l].1).collect();
    assert_eq!(bws, [12.5e9, 25e9, 50e9, 50e9, 25e9, 12.5e9]);
    let sizes: Vec<usize> = r.iter().map(|l| pl.links[l].0.len()).collect();
    assert_eq!(sizes, [1, 2, 4, 4, 2, 1]);
    assert_eq!(name(pl.links[&r[0]].0[0]), "h0->e0.0");
    // and h0 -> h2 (same pod, other edge switch): host, edge up, edge down, host
    let r = &pl.routes[&("h0".to_string(), "h2".to_string())];
    let sizes: Vec<usize> = r.iter().map(|l| pl.links[l].0.len()).collect();
    assert_eq!(sizes, [1, 2, 2, 1]);
}

/// SimGrid on the k = 4 fat tree's two platforms: the four hosts of pod 0 each send
/// 1 MB to a host of pod 1 (a permutation). Every simulated time is the busiest link's
/// time under the platform's model plus the route's latency (six hops, 0.9 µs), within
/// 3 %: ECMP's (each link 1 MB at 12.5 GB/s) on the ECMP platform, copr's single path
/// (where two flows share a link) on the single-path one.
#[test]
fn fat_tree_platforms_simulate_their_models_times() {
    let dir = need_simgrid!();
    let (m, _) = network_machine("fat-tree-k4.net.toml");
    let m = m.with_ranks_per_node(1).unwrap();
    let flows = [(0, 4), (1, 5), (2, 6), (3, 7)];
    let p = Pattern::from_edges(
        16,
        flows
            .iter()
            .map(|&(src, dst)| Edge {
                src,
                dst,
                bytes: 1_000_000,
            })
            .collect(),
        "pod to pod".into(),
    )
    .unwrap();
    let id = Perm::from_forward((0..16).collect()).unwrap();
    let text: String = flows
        .iter()
        .map(|(a, b)| format!("{a} {b} 1000000\n"))
        .collect();
    let latency = 2.0 * (1e-7 + 1.5e-7 + 2e-7);
    let ecmp = ecmp_max_link_time(&p, &m, &id).unwrap() + latency;
    // the machine measures ECMP itself (a fat tree); the single path on request
    let own = copr_mapping::evaluate(&p, &m, &id).max_link_time + latency;
    assert!((own - ecmp).abs() < 1e-15, "{own} against {ecmp}");
    let one_path = m.clone().with_single_path_loads();
    let single = copr_mapping::evaluate(&p, &one_path, &id).max_link_time + latency;
    assert!((ecmp - (1e6 / 12.5e9 + latency)).abs() < 1e-12, "{ecmp}");
    assert!(
        single > 1.5 * ecmp,
        "copr's single paths share a link: {single}"
    );
    for (form, want) in [(GraphForm::Ecmp, ecmp), (GraphForm::SinglePath, single)] {
        let xml = platform_xml_with(
            &m,
            &SimgridOptions {
                graph_form: form,
                ..Default::default()
            },
        )
        .unwrap();
        let t = replay_time(dir, &format!("fat-tree-{form:?}"), &xml, &m, &text);
        assert!(
            close(t, want, 0.03),
            "{form:?}: simulated {t:e} s, model {want:e} s"
        );
    }
}

/// copr's dragonfly: the equal-cost paths are unique, so the default platform is the
/// ECMP form with one link per bundle, and its routes are copr's single paths.
#[test]
fn dragonfly_ecmp_platform_is_the_single_path_platform() {
    let (m, _) = network_machine("dragonfly-g5a4p2.net.toml");
    let auto = platform_xml(&m).unwrap();
    assert!(auto.contains("(ECMP bundles)"));
    assert!(!auto.contains("copr_links"), "a bundle of several links");
    let single = platform_xml_with(
        &m,
        &SimgridOptions {
            graph_form: GraphForm::SinglePath,
            ..Default::default()
        },
    )
    .unwrap();
    let (a, s) = (parse_platform(&auto), parse_platform(&single));
    assert_eq!(a.routes.len(), 40 * 40);
    assert_eq!(a.routes, s.routes);
    // and the ECMP loads of random traffic are the single-path loads
    let n = m.slots();
    let mut scrambled: Vec<usize> = (0..n).collect();
    SplitMix(5).shuffle(&mut scrambled);
    let map = Perm::from_forward(scrambled).unwrap();
    let node: Vec<u32> = (0..n)
        .map(|t| m.node_of_slot(map.apply(t)) as u32)
        .collect();
    for (what, p) in traffic(n, 3) {
        let one: Vec<f64> = copr_mapping::link_loads(&p, &m, &node)
            .iter()
            .map(|&x| x as f64)
            .collect();
        assert_loads_equal(&ecmp_link_loads(&p, &m, &map).unwrap(), &one, &what);
    }
}

/// The staged model ([`program_time`]) of the grid algorithms' programs against
/// `gridalg.c` simulated on the ECMP platform of a k = 4 fat tree × 4 (8 × 8 grids):
/// within 3 % for packed and two scrambled mappings, and the same order where
/// SimGrid's times differ by more than 3 %.
#[test]
fn staged_model_follows_simulated_grid_algorithms() {
    let dir = need_simgrid!();
    let m = fat_tree_machine(4, 4);
    let xml = platform_xml(&m).unwrap();
    for a in Algorithm::ALL {
        let s = AlgorithmSpec {
            algorithm: a,
            rows: 8,
            cols: 8,
            block_bytes: 1 << 18,
            collective: Collective::Binomial,
        };
        let prog = Program::algorithm(&s).unwrap();
        let mut maps = vec![(0..64).collect::<Vec<usize>>()];
        for seed in [3, 4] {
            let mut v: Vec<usize> = (0..64).collect();
            SplitMix(seed).shuffle(&mut v);
            maps.push(v);
        }
        let mut got = Vec::new();
        for (k, fwd) in maps.iter().enumerate() {
            let map = Perm::from_forward(fwd.clone()).unwrap();
            let nodes: Vec<usize> = fwd.iter().map(|&x| m.node_of_slot(x)).collect();
            let args = ["8", "8", "262144", "binomial"];
            let mut all = vec![a.name()];
            all.extend(args);
            let out = smpirun(
                dir,
                &format!("staged-{}-{k}", a.name()),
                &xml,
                &m,
                &nodes,
                "gridalg",
                &all,
            );
            let sim = value(&out, "gridalg_time_s");
            let model = program_time(&prog, &m, &map, &RoundModel::simgrid_like());
            eprintln!(
                "{} mapping {k}: simulated {sim:e} s, model {model:e} s",
                a.name()
            );
            assert!(
                close(model, sim, 0.03),
                "{} mapping {k}: model {model:e} s, simulated {sim:e} s",
                a.name()
            );
            got.push((sim, model));
        }
        for x in &got {
            for y in &got {
                if x.0 > 1.03 * y.0 {
                    assert!(x.1 > y.1, "{}: {got:?}", a.name());
                }
            }
        }
    }
}
