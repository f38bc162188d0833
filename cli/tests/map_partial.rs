//! `copr map` with fewer tasks than slots: the exports name only the job's ranks, each
//! on its own slot, and MPICH_RANK_ORDER (which cannot leave slots empty) is refused.

mod common;

use common::copr;

use std::collections::HashSet;
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    common::tmp("copr-map-partial", name)
}

#[test]
fn a_job_smaller_than_its_allocation_launches_exactly_its_ranks() {
    let (rf, sh, js) = (tmp("rankfile"), tmp("slurm"), tmp("map.json"));
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    // 24 x 40 = 960 tasks on 4x4x4 nodes x 16 = 1024 slots
    let out = copr(&[
        "map",
        "--grid",
        "24x40",
        "--torus",
        "4x4x4",
        "--ranks-per-node",
        "16",
        "--budget",
        "2",
        "--rankfile",
        &s(&rf),
        "--slurm-hostfile",
        &s(&sh),
        "--mapping-json",
        &s(&js),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    // rankfile: ranks 0..960 once each, every (host, slot) at most once, slot < 16
    let mut ranks = HashSet::new();
    let mut slots = HashSet::new();
    let mut per_host: std::collections::HashMap<String, usize> = Default::default();
    for line in read(&rf).lines() {
        let rest = line.strip_prefix("rank ").unwrap();
        let (r, rest) = rest.split_once('=').unwrap();
        let (host, slot) = rest.split_once(" slot=").unwrap();
        let slot: usize = slot.parse().unwrap();
        assert!(slot < 16, "{line}");
        assert!(ranks.insert(r.parse::<usize>().unwrap()), "{line}");
        assert!(slots.insert((host.to_string(), slot)), "{line}");
        *per_host.entry(host.to_string()).or_default() += 1;
    }
    assert_eq!(ranks, (0..960).collect::<HashSet<_>>());
    // the hostfile launches the same ranks on the same hosts
    let hosts: Vec<String> = read(&sh).lines().map(String::from).collect();
    assert_eq!(hosts.len(), 960);
    let mut from_hostfile: std::collections::HashMap<String, usize> = Default::default();
    for h in &hosts {
        *from_hostfile.entry(h.clone()).or_default() += 1;
    }
    assert_eq!(from_hostfile, per_host);
    assert!(per_host.values().all(|&c| c <= 16));
    // the JSON names 960 ranks on distinct slots
    let j: serde_json::Value = serde_json::from_str(&read(&js)).unwrap();
    let slot_of_rank = j["slot_of_rank"].as_array().unwrap();
    assert_eq!(slot_of_rank.len(), 960);
    let distinct: HashSet<u64> = slot_of_rank.iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(distinct.len(), 960);
    assert!(distinct.iter().all(|&s| s < 1024));
}

#[test]
fn mpich_rank_order_with_empty_slots_is_refused_in_one_line() {
    let out = copr(&[
        "map",
        "--grid",
        "24x40",
        "--torus",
        "4x4x4",
        "--ranks-per-node",
        "16",
        "--mpich-rank-order",
        &tmp("order").to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("MPICH_RANK_ORDER"), "{err}");
}

#[test]
fn more_tasks_than_slots_is_refused_in_one_line() {
    let out = copr(&[
        "map",
        "--grid",
        "40x40",
        "--torus",
        "4x4x4",
        "--ranks-per-node",
        "16",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `copr map` on nodes of 4, 4, 2 and 2 slots (a machine file in `SLURM_TASKS_PER_NODE`
/// form): every export, read back with the library's parsers, launches exactly the
/// job's ranks on the same nodes, none on a slot its node lacks; a job that fills the
/// slots also gets an `MPICH_RANK_ORDER` that agrees with its rankfile.
#[test]
fn every_export_on_nodes_of_different_sizes_launches_exactly_the_jobs_ranks() {
    use copr_mapping::{export, MapMachine};
    let machine = tmp("uneven.toml");
    std::fs::write(
        &machine,
        "nodes = \"nid[01-04]\"\nranks_per_node = \"4(x2),2(x2)\"\n[torus]\ndims = [2, 2]\n",
    )
    .unwrap();
    let m = MapMachine::from_file(&machine).unwrap();
    assert_eq!((m.slots(), m.used_slots()), (16, 12));
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    for (grid, ranks) in [("3x3", 9usize), ("3x4", 12)] {
        let (rf, sh, smpi, js, order) = (
            tmp(&format!("u{ranks}.rankfile")),
            tmp(&format!("u{ranks}.slurm")),
            tmp(&format!("u{ranks}.smpi")),
            tmp(&format!("u{ranks}.json")),
            tmp(&format!("u{ranks}.order")),
        );
        let mut args = vec![
            "map".to_string(),
            "--grid".into(),
            grid.into(),
            "--machine".into(),
            s(&machine),
            "--budget".into(),
            "1".into(),
            "--rankfile".into(),
            s(&rf),
            "--slurm-hostfile".into(),
            s(&sh),
            "--smpi-hostfile".into(),
            s(&smpi),
            "--mapping-json".into(),
            s(&js),
        ];
        if ranks == m.used_slots() {
            args.extend(["--mpich-rank-order".into(), s(&order)]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = copr(&args);
        assert!(
            out.status.success(),
            "{grid}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let slots = export::parse_rankfile_ranks(&read(&rf), &m).unwrap();
        assert_eq!(slots.len(), ranks, "{grid}");
        assert!(slots.iter().all(|&x| m.has_slot(x)), "{grid}: {slots:?}");
        let nodes: Vec<usize> = slots.iter().map(|&x| m.node_of_slot(x)).collect();
        let j: export::MappingJson = serde_json::from_str(&read(&js)).unwrap();
        assert_eq!(export::from_json_ranks(&j).unwrap(), slots, "{grid}");
        let names = export::node_names(&m);
        assert_eq!(export::parse_hostfile(&read(&sh), &names).unwrap(), nodes);
        let smpi_names = copr_mapping::simgrid::smpi_host_names(&m);
        assert_eq!(
            export::parse_hostfile(&read(&smpi), &smpi_names).unwrap(),
            nodes
        );
        if ranks == m.used_slots() {
            let by_slot = export::parse_mpich_rank_order(&read(&order), ranks).unwrap();
            let present: Vec<usize> = (0..m.slots()).filter(|&x| m.has_slot(x)).collect();
            for (i, &x) in present.iter().enumerate() {
                assert_eq!(slots[by_slot.inverse()[i]], x, "{grid}: slot {x}");
            }
        }
    }
}
