//! The mapper's typed errors: for an input that produces it, each error enum is
//! recovered from `copr::Error::Extension` and matched on its variant and values (not
//! on its message).

use copr_mapping::{
    check_sizes, export, simgrid, CartGrid, ExportError, Format, MachineError, MapError,
    MapMachine, Pattern,
};

/// The mapper's error inside a `copr::Error`, if it is one of type `E`.
fn typed<E: std::error::Error + Clone + 'static>(e: &copr::Error) -> Option<E> {
    match e {
        copr::Error::Extension(b) => b.downcast_ref::<E>().cloned(),
        _ => None,
    }
}

#[test]
fn machine_errors_name_the_field_and_both_values() {
    let mut m = MapMachine::flat(3, 2).unwrap();
    let e = m.set_node_names(vec!["a".into(), "b".into()]).unwrap_err();
    assert_eq!(
        typed::<MachineError>(&e),
        Some(MachineError::NodeNames { names: 2, nodes: 3 })
    );
    let e = m
        .set_node_names(vec!["a".into(), "b c".into(), "d".into()])
        .unwrap_err();
    assert!(matches!(
        typed::<MachineError>(&e),
        Some(MachineError::NodeName { name }) if name == "b c"
    ));
    let e = MapMachine::flat(2, 0).unwrap_err();
    assert_eq!(
        typed::<MachineError>(&e),
        Some(MachineError::ZeroRanksPerNode)
    );
    // a rank on a node the machine does not have
    let e = MapMachine::flat(2, 1)
        .unwrap()
        .slots_of(&["node0", "node7"])
        .unwrap_err();
    assert!(matches!(
        typed::<MachineError>(&e),
        Some(MachineError::UnknownNode { rank: 1, node }) if node == "node7"
    ));
}

#[test]
fn task_and_slot_counts_are_a_map_error_with_both_numbers() {
    let p = Pattern::grid(&CartGrid::new(vec![3, 3], vec![false; 2], vec![1; 2]).unwrap()).unwrap();
    let m = MapMachine::flat(4, 2).unwrap();
    let e = check_sizes(&p, &m).unwrap_err();
    assert_eq!(
        typed::<MapError>(&e),
        Some(MapError::TasksSlots {
            tasks: 9,
            slots: 8,
            nodes: 4,
            ranks_per_node: 2
        })
    );
    // not a machine error
    assert_eq!(typed::<MachineError>(&e), None);
}

#[test]
fn files_read_back_say_format_line_and_text() {
    let m = MapMachine::flat(2, 2).unwrap();
    let e = export::parse_rankfile("rank 0=node0 slot=0\nrank 1=nodeX slot=1\n", &m).unwrap_err();
    assert_eq!(
        typed::<ExportError>(&e),
        Some(ExportError::Line {
            format: Format::Rankfile,
            line: 2,
            what: "unknown host".into(),
            text: "rank 1=nodeX slot=1".into(),
        })
    );
    let e = export::parse_mpich_rank_order("0-2", 4).unwrap_err();
    assert_eq!(
        typed::<ExportError>(&e),
        Some(ExportError::Entries {
            format: Format::MpichRankOrder,
            entries: 3,
            ranks: 4
        })
    );
    // a flat machine has no network for SimGrid
    let e = simgrid::platform_xml(&m).unwrap_err();
    assert_eq!(typed::<ExportError>(&e), Some(ExportError::FlatPlatform));
}
