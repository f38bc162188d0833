//! Machines at scale: what building a [`Machine`] and its summary (`copr topo`) cost
//! at 10⁴ and 10⁵ ranks on a 3-D torus, a k = 32 fat tree and a dragonfly.
//!
//! `cargo bench --bench machines` writes the configurations it times to
//! `target/bench-machines/` (so that `copr topo FILE --ranks N` can be timed as a
//! whole process too) and prints, per machine and rank count, the median of a few
//! runs of building the machine and of its summary. `-- --quick` runs once each.

use std::path::{Path, PathBuf};
use std::time::Instant;

use copr_topology::files::Format;
use copr_topology::{DragonflySpec, FatTreeSpec, LinkSpec, Machine, Network, TopologyConfig};

/// 16 PUs per node: 2 packages × 2 NUMA domains × 4 cores.
const INTRA: &str = r#"
[intra]
kind = "tree"
shape = "pack:2 numa:2 core:4"
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writable bench directory");
    path
}

fn network_config(dir: &Path, name: &str, net: &Network, model: &str) -> PathBuf {
    let desc = toml::to_string(&net.to_description()).expect("networks serialise");
    write(dir, &format!("{name}.net.toml"), &desc);
    write(
        dir,
        &format!("{name}.toml"),
        &format!(
            "{INTRA}\n[inter]\nkind = \"network\"\nfile = \"{name}.net.toml\"\nbandwidth_model = \"{model}\"\n\n[placement]\nrule = \"packed\"\nranks_per_node = 16\n"
        ),
    )
}

fn torus_config(dir: &Path, name: &str, dims: [u32; 3]) -> PathBuf {
    write(
        dir,
        &format!("{name}.toml"),
        &format!(
            "{INTRA}\n[inter]\nkind = \"torus\"\ndims = {dims:?}\nlink_bandwidth = [6.5e9, 5.0e9, 6.5e9]\n\n[placement]\nrule = \"packed\"\nranks_per_node = 16\n"
        ),
    )
}

fn link(latency: f64, bandwidth: f64) -> LinkSpec {
    LinkSpec { latency, bandwidth }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = if quick { 1 } else { 5 };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-machines");
    std::fs::create_dir_all(&dir).expect("bench directory");
    let fat = Network::fat_tree(&FatTreeSpec {
        k: 32,
        host_link: link(1e-7, 1.25e10),
        edge_link: link(2e-7, 1.25e10),
        core_link: link(3e-7, 1.25e10),
    })
    .expect("valid fat tree");
    let fly = Network::dragonfly(&DragonflySpec {
        groups: 50,
        routers: 16,
        hosts_per_router: 8,
        host_link: link(1e-7, 1.25e10),
        local_link: link(2e-7, 1.25e10),
        global_link: link(6e-7, 1.0e10),
    })
    .expect("valid dragonfly");
    let machines = [
        // 6 400 nodes: 102 400 ranks at 16 per node
        (
            "torus 16x20x20",
            torus_config(&dir, "torus-16x20x20", [16, 20, 20]),
        ),
        // 1 024 nodes: 16 384 ranks (the torus of the cost-model planning benchmark)
        (
            "torus 8x8x16",
            torus_config(&dir, "torus-8x8x16", [8, 8, 16]),
        ),
        (
            "fat tree k=32",
            network_config(&dir, "fat-tree-k32", &fat, "bottleneck"),
        ),
        (
            "dragonfly g=50 a=16 p=8",
            network_config(&dir, "dragonfly-g50a16p8", &fly, "sum"),
        ),
    ];
    println!(
        "{:<26} {:>8} {:>12} {:>12}",
        "machine", "ranks", "build [s]", "summary [s]"
    );
    for (name, path) in &machines {
        let text = std::fs::read_to_string(path).expect("config written above");
        let cfg = TopologyConfig::from_str(&text, Format::Toml).expect("valid config");
        let sizes: &[usize] = if name.contains("8x8x16") {
            &[16_384]
        } else {
            &[10_240, 102_400]
        };
        for &ranks in sizes {
            let mut build = Vec::new();
            let mut summary = Vec::new();
            for _ in 0..reps {
                let t = Instant::now();
                let m: Machine = cfg.build(&dir, Some(ranks)).expect("machine builds");
                build.push(t.elapsed().as_secs_f64());
                let t = Instant::now();
                let s = m.summary();
                summary.push(t.elapsed().as_secs_f64());
                assert_eq!(s.ranks, ranks);
            }
            println!(
                "{name:<26} {ranks:>8} {:>12.4} {:>12.4}",
                median(build),
                median(summary)
            );
        }
    }
    println!("configurations in {}", dir.display());
}
