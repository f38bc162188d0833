//! Nodes with different slot counts, by hand: which slots a job's tasks may take,
//! where a task on a missing slot goes, and the machine read from a file.

use copr_mapping::{
    evaluate, fit_to_slots, machine_from_recording, recorded_hosts, Edge, MapMachine, Pattern, Perm,
};
use copr_topology::{Torus, TorusParams};

fn edge(src: u32, dst: u32, bytes: u64) -> Edge {
    Edge { src, dst, bytes }
}

#[test]
fn a_task_on_a_missing_slot_trades_with_an_empty_task_of_its_node() {
    // nodes of 2 and 1 slots: slot 3 (core 1 of node 1) does not exist
    let m = MapMachine::flat(2, 2)
        .unwrap()
        .with_slot_counts(vec![2, 1])
        .unwrap();
    assert_eq!((m.slots(), m.used_slots()), (4, 3));
    assert_eq!(
        (0..4).map(|s| m.has_slot(s)).collect::<Vec<_>>(),
        [true, true, true, false]
    );
    let p = Pattern::from_edges(4, vec![edge(0, 1, 100), edge(1, 2, 1)], String::new()).unwrap();
    // task 1 on slot 3, the empty task 3 on slot 2: they trade
    let map = Perm::from_forward(vec![0, 3, 1, 2]).unwrap();
    let fixed = fit_to_slots(&p, &m, &map, 3).unwrap();
    assert_eq!(fixed.forward(), [0, 2, 1, 3]);
    // a mapping that already fits is kept
    let ok = Perm::from_forward(vec![1, 0, 2, 3]).unwrap();
    assert_eq!(fit_to_slots(&p, &m, &ok, 3).unwrap(), ok);
    // more tasks than slots
    assert!(fit_to_slots(&p, &m, &ok, 4).is_err());
}

#[test]
fn a_task_of_an_overfull_node_goes_where_it_adds_the_least_hop_bytes() {
    // a ring of 4 nodes, 2 slots each but node 0 has 1: slot 1 is missing
    let t = Torus::full(TorusParams::new(vec![4])).unwrap();
    let m = MapMachine::torus(t, 2)
        .unwrap()
        .with_slot_counts(vec![1, 2, 2, 2])
        .unwrap();
    // job of 5 tasks (5, 6, 7 empty); task 1 talks to task 4 on node 2
    let p = Pattern::from_edges(8, vec![edge(1, 4, 100), edge(0, 2, 1)], String::new()).unwrap();
    let map = Perm::identity(8);
    let fixed = fit_to_slots(&p, &m, &map, 5).unwrap();
    // node 0 has no empty present slot; nodes 2 (slot 5) and 3 (slots 6, 7) do, and
    // node 2 is 0 hops from task 4: task 1 takes slot 5, empty task 5 slot 1
    assert_eq!(fixed.forward(), [0, 5, 2, 3, 4, 1, 6, 7]);
    assert_eq!(evaluate(&p, &m, &fixed).hop_bytes, 1); // only 0 -> 2, one hop
}

#[test]
fn slots_of_a_job_on_nodes_of_different_sizes() {
    let mut m = MapMachine::flat(2, 2)
        .unwrap()
        .with_slot_counts(vec![1, 2])
        .unwrap();
    m.set_node_names(vec!["a".into(), "b".into()]).unwrap();
    // slots: a0, (a1 missing), b0, b1
    let s = m.slots_of(&["b", "a", "b"]).unwrap();
    assert_eq!(s.forward(), [2, 0, 3, 1]);
    assert!(m.slots_of(&["a", "a", "b"]).is_err()); // a has one slot
    assert!(m.slots_of(&["a", "b"]).is_err()); // b runs 1 of its 2
}

#[test]
fn recorded_hosts_make_the_machine() {
    let text = "# copr traffic recording\n0 1 1000 # 1\n2 3 10 # 1\n# host 0 a\n# host 1 b\n# host 2 a\n# host 3 a\n";
    let hosts = recorded_hosts(text).unwrap().unwrap();
    let (m, ran) = machine_from_recording(&hosts).unwrap();
    assert_eq!((m.nodes(), m.slot_count(0), m.slot_count(1)), (2, 3, 1));
    assert_eq!((m.slots(), m.used_slots()), (6, 4));
    // a: ranks 0, 2, 3 on slots 0, 1, 2; b: rank 1 on slot 3; missing b1, b2 follow
    assert_eq!(ran.forward(), [0, 3, 1, 2, 4, 5]);
    let p = Pattern::from_edges(6, vec![edge(0, 1, 1000), edge(2, 3, 10)], String::new()).unwrap();
    assert_eq!(evaluate(&p, &m, &ran).hop_bytes, 1000);
    for bad in [
        "# host x a\n",
        "# host 0\n",
        "# host 0 a\n# host 0 b\n",
        "# host 1 a\n",
    ] {
        assert!(recorded_hosts(bad).is_err(), "{bad}");
    }
}

#[test]
fn slot_counts_from_a_machine_file() {
    let dir = std::env::temp_dir().join(format!("copr-slots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("m.toml");
    std::fs::write(
        &f,
        "nodes = \"nid[0001-0040]\"\nranks_per_node = \"16(x24),8(x16)\"\n[flat]\nnodes = 40\n",
    )
    .unwrap();
    let m = MapMachine::from_file(&f).unwrap();
    assert_eq!((m.nodes(), m.ranks_per_node()), (40, 16));
    assert_eq!(m.used_slots(), 24 * 16 + 16 * 8);
    assert_eq!((m.slot_count(23), m.slot_count(24)), (16, 8));
    assert_eq!(m.node_name(24), "nid0025");
    // one count per node, and a list of the wrong length
    std::fs::write(&f, "ranks_per_node = [2, 1, 3]\n[flat]\nnodes = 3\n").unwrap();
    let m = MapMachine::from_file(&f).unwrap();
    assert_eq!((m.slots(), m.used_slots()), (9, 6));
    std::fs::write(&f, "ranks_per_node = [2, 1]\n[flat]\nnodes = 3\n").unwrap();
    let e = MapMachine::from_file(&f).unwrap_err().to_string();
    assert!(e.contains("m.toml") && e.contains("ranks_per_node"), "{e}");
}

#[test]
fn the_view_of_a_topology_machine_routes_as_the_mapper_does() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    // the k = 4 fat tree, 4 ranks on each of its 16 hosts
    let topo = copr_topology::MachineFile::read(&data.join("cost/fat-tree.toml"))
        .unwrap()
        .build(Some(64))
        .unwrap();
    let view = MapMachine::from_machine(&topo).unwrap();
    let net =
        copr_topology::Network::from_file(&data.join("topology/fat-tree-k4.net.toml")).unwrap();
    let direct =
        MapMachine::network(net, None, copr_topology::BandwidthModel::Bottleneck, 4).unwrap();
    assert_eq!((view.nodes(), view.slots()), (16, 64));
    for a in 0..16 {
        for b in 0..16 {
            assert_eq!(view.node_name(a), direct.node_name(a));
            let (mut x, mut y) = (Vec::new(), Vec::new());
            view.for_route(a, b, |l| x.push(l));
            direct.for_route(a, b, |l| y.push(l));
            assert_eq!(x, y, "{a} -> {b}");
        }
    }
    // a torus machine: the placement's nodes at their coordinates
    let topo = copr_topology::MachineFile::read(&data.join("topology/torus-xe6.toml"))
        .unwrap()
        .build(Some(128))
        .unwrap();
    let view = MapMachine::from_machine(&topo).unwrap();
    assert_eq!((view.nodes(), view.ranks_per_node()), (4, 32));
    // nid00000 and nid00001 share a router, nid00002 is one Z hop away
    assert_eq!((view.hops(0, 1), view.hops(0, 2)), (0, 1));
}

/// Every export of a job on nodes of different slot counts, read back with its parser:
/// exactly the job's ranks, each once, on the slots (or nodes) the mapping chose, none
/// on a slot its node lacks, no node given more ranks than it has slots.
#[test]
fn every_export_of_a_partly_filled_mapping_launches_exactly_the_jobs_ranks() {
    use copr_mapping::{compare, export, fit_comparison, simgrid, Options, Strategy};
    let torus = MapMachine::torus(Torus::full(TorusParams::new(vec![2, 2])).unwrap(), 4)
        .unwrap()
        .with_slot_counts(vec![4, 2, 3, 1])
        .unwrap();
    let mut flat = MapMachine::flat(3, 3)
        .unwrap()
        .with_slot_counts(vec![3, 1, 2])
        .unwrap();
    flat.set_node_names(vec!["nid01".into(), "nid02".into(), "nid03".into()])
        .unwrap();
    // (machine, job sizes: fewer than its slots, and exactly its slots)
    for (m, jobs) in [(torus, [7usize, 10]), (flat, [4, 6])] {
        for ranks in jobs {
            // a ring with a heavy chord, ranks 0..ranks; padded to the machine's slots
            let mut edges: Vec<Edge> = (0..ranks as u32)
                .map(|t| edge(t, (t + 1) % ranks as u32, 100 + u64::from(t)))
                .collect();
            edges.push(edge(0, ranks as u32 / 2, 5000));
            let p = Pattern::from_edges(ranks, edges, String::new())
                .unwrap()
                .padded(m.slots())
                .unwrap();
            let opts = Options {
                seed: 3,
                budget: std::time::Duration::from_millis(200),
            };
            let mut c = compare(&p, &m, &Strategy::ALL, &opts, |_| {}).unwrap();
            fit_comparison(&mut c, &p, &m, ranks).unwrap();
            let what = format!("{} with {ranks} ranks", m.description());
            for row in &c.rows {
                let map = &row.map;
                let want: Vec<usize> = map.forward()[..ranks].to_vec();
                let label = format!("{what}, {}", row.strategy);
                assert!(want.iter().all(|&s| m.has_slot(s)), "{label}: {want:?}");
                // the rankfile: slots, each rank once
                let text = export::rankfile_ranks(&m, map, ranks);
                assert_eq!(text.lines().count(), ranks, "{label}");
                assert_eq!(
                    export::parse_rankfile_ranks(&text, &m).unwrap(),
                    want,
                    "{label}"
                );
                // the JSON, through its text
                let j = export::to_json_ranks(&row.strategy, &m, map, ranks);
                let back: export::MappingJson =
                    serde_json::from_str(&serde_json::to_string(&j).unwrap()).unwrap();
                assert_eq!(export::from_json_ranks(&back).unwrap(), want, "{label}");
                // the SLURM and SMPI hostfiles: nodes, none over its slot count
                for names in [export::node_names(&m), simgrid::smpi_host_names(&m)] {
                    let text = export::hostfile_ranks(&names, &m, map, ranks);
                    let nodes = export::parse_hostfile(&text, &names).unwrap();
                    let want_nodes: Vec<usize> = want.iter().map(|&s| m.node_of_slot(s)).collect();
                    assert_eq!(nodes, want_nodes, "{label}");
                    for k in 0..m.nodes() {
                        let on = nodes.iter().filter(|&&n| n == k).count();
                        assert!(on <= m.slot_count(k), "{label}: node {k} runs {on}");
                    }
                }
                // MPICH_RANK_ORDER: the rank on every slot the nodes have, only when
                // the job fills them
                let order = export::mpich_rank_order_ranks(&m, map, ranks);
                if ranks == m.used_slots() {
                    let present: Vec<usize> = (0..m.slots()).filter(|&s| m.has_slot(s)).collect();
                    let by_slot = export::parse_mpich_rank_order(&order.unwrap(), ranks).unwrap();
                    for (i, &s) in present.iter().enumerate() {
                        // slot position i holds rank by_slot.inverse()[i]
                        assert_eq!(want[by_slot.inverse()[i]], s, "{label}: slot {s}");
                    }
                } else {
                    assert!(order.is_err(), "{label}");
                }
            }
        }
    }
}

#[test]
fn partly_filled_exports_that_do_not_launch_the_job_are_refused() {
    use copr_mapping::export;
    let mut m = MapMachine::flat(2, 2)
        .unwrap()
        .with_slot_counts(vec![2, 1])
        .unwrap();
    m.set_node_names(vec!["a".into(), "b".into()]).unwrap();
    for (text, needle) in [
        ("rank 0=a slot=0\nrank 2=b slot=0\n", "rank 1 is missing"),
        (
            "rank 0=a slot=0\nrank 1=a slot=0\n",
            "ranks 0 and 1 are both on slot 0",
        ),
        ("rank 0=b slot=1\n", "slot beyond the node"),
        ("rank 0=c slot=0\n", "unknown host"),
        ("rank 9=a slot=0\n", "rank out of range"),
    ] {
        let e = export::parse_rankfile_ranks(text, &m)
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{text:?}: {e}");
    }
    let good = export::to_json_ranks("x", &m, &Perm::from_forward(vec![2, 0, 1, 3]).unwrap(), 2);
    assert_eq!(export::from_json_ranks(&good).unwrap(), [2, 0]);
    let mut shared = good.clone();
    shared.slot_of_rank[1] = 2;
    shared.node_of_rank[1] = "b".into();
    let e = export::from_json_ranks(&shared).unwrap_err().to_string();
    assert!(e.contains("ranks 0 and 1 are both on slot 2"), "{e}");
    let mut beyond = good.clone();
    beyond.slot_of_rank[0] = 4;
    let e = export::from_json_ranks(&beyond).unwrap_err().to_string();
    assert!(e.contains("slot 4, the machine has 4 slots"), "{e}");
    let mut wrong = good;
    wrong.node_of_rank[0] = "a".into();
    let e = export::from_json_ranks(&wrong).unwrap_err().to_string();
    assert!(e.contains("rank 0 has slot 2 but node `a`"), "{e}");
}

/// `copr map`'s way with a job on nodes of different slot counts: the pattern padded to
/// the machine's slot positions, every strategy compared, then fitted to the slots.
fn optimised_on(p: &Pattern, ranks: usize, m: &MapMachine) -> copr_mapping::Row {
    let padded = Pattern::from_edges(m.slots(), p.edges().to_vec(), String::new()).unwrap();
    let opts = copr_mapping::Options {
        seed: 1,
        budget: std::time::Duration::from_secs(5),
    };
    let all = [
        copr_mapping::Strategy::Packed,
        copr_mapping::Strategy::Optimised,
    ];
    let mut cmp = copr_mapping::compare(&padded, m, &all, &opts, |_| {}).unwrap();
    copr_mapping::fit_comparison(&mut cmp, &padded, m, ranks).unwrap();
    let row = cmp.row("optimised").unwrap().clone();
    assert!((0..ranks).all(|t| m.has_slot(row.map.apply(t))));
    row
}

#[test]
fn a_ring_fills_nodes_of_different_sizes_in_arcs() {
    // a ring of 4 nodes with 4, 2, 4 and 2 slots; a ring of 12 tasks, 1 MiB each way:
    // every slot is used, so the tasks lie on all 4 nodes, at least 4 edges of the ring
    // join two nodes, each one hop at least and two messages: at least 8 MiB of
    // hop-bytes, and arcs of 4, 2, 4, 2 tasks in the nodes' order reach it
    let t = Torus::full(TorusParams::new(vec![4])).unwrap();
    let m = MapMachine::torus(t, 4)
        .unwrap()
        .with_slot_counts(vec![4, 2, 4, 2])
        .unwrap();
    let mib = 1u64 << 20;
    let edges = (0..12u32)
        .flat_map(|i| [edge(i, (i + 1) % 12, mib), edge((i + 1) % 12, i, mib)])
        .collect();
    let p = Pattern::from_edges(12, edges, String::new()).unwrap();
    let row = optimised_on(&p, 12, &m);
    assert_eq!(row.metrics.hop_bytes, 8 * u128::from(mib));
}

#[test]
fn a_long_ring_fills_nodes_of_different_sizes_in_arcs() {
    // a ring of 8 nodes of 16 and 8 slots in turn (96 slots); rings of 96 and of 90
    // tasks, 1 MiB each way. 7 nodes hold at most 4·16 + 3·8 = 88 tasks, so the tasks
    // lie on all 8 nodes and at least 8 edges of the ring join two nodes, each one hop
    // at least and two messages: at least 16 MiB of hop-bytes, which arcs in the
    // nodes' order reach
    let t = Torus::full(TorusParams::new(vec![8])).unwrap();
    let counts: Vec<usize> = (0..8).map(|k| if k % 2 == 0 { 16 } else { 8 }).collect();
    let m = MapMachine::torus(t, 16)
        .unwrap()
        .with_slot_counts(counts)
        .unwrap();
    let mib = 1u64 << 20;
    for n in [96u32, 90] {
        let mut ids: Vec<u32> = (0..n).collect();
        copr_mapping::SplitMix(7).shuffle(&mut ids);
        let edges = (0..n as usize)
            .flat_map(|i| {
                let (a, b) = (ids[i], ids[(i + 1) % n as usize]);
                [edge(a, b, mib), edge(b, a, mib)]
            })
            .collect();
        let p = Pattern::from_edges(n as usize, edges, String::new()).unwrap();
        let row = optimised_on(&p, n as usize, &m);
        assert_eq!(row.metrics.hop_bytes, 16 * u128::from(mib), "{n} tasks");
    }
}
