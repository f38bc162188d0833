//! SimGrid SMPI checks of the platforms `copr_mapping::simgrid` writes: ping-pong
//! latencies and bandwidths against copr's hop counts, routes and link parameters,
//! the torus routing difference on ties, and a Cannon run.
//!
//! Builds `benches/simgrid/*.c` with `smpicc`; skipped (with a notice) when `smpicc`
//! is not installed. `scripts/simgrid-check.sh` runs these tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use copr_mapping::simgrid::{
    hostfile, platform_xml, platform_xml_with, smpi_host_names, SimgridOptions, TorusForm,
    SMPIRUN_FLAGS,
};
use copr_mapping::MapMachine;
use copr_topology::{BandwidthModel, Network, Torus, TorusParams};

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
        for p in ["pingpong", "cannon", "replay"] {
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

/// Two 1 MB flows into rank 0; returns the replay time.
fn two_flows(dir: &Path, tag: &str, xml: &str, m: &MapMachine, a: usize, b: usize) -> f64 {
    let g = dir.join(format!("flows-{tag}.txt"));
    std::fs::write(&g, format!("# two flows\n{a} 0 1000000\n{b} 0 1000000\n")).unwrap();
    let all: Vec<usize> = (0..m.nodes()).collect();
    value(
        &smpirun(
            dir,
            tag,
            xml,
            m,
            &all,
            "replay",
            &[g.to_str().unwrap(), "1"],
        ),
        "replay_time_s",
    )
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
