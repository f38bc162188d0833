//! hwloc sources: run for real with `--features hwloc`; without the feature,
//! check that every hwloc source fails with a clear message.

use std::path::{Path, PathBuf};

use copr_topology::{LevelCosts, NodeTree, TopologyError};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/topology")
        .join(name)
}

#[cfg(feature = "hwloc")]
mod with_hwloc {
    use super::*;
    use copr_topology::Level;

    /// hwloc and the pure-Rust shape parser must classify every PU pair alike.
    fn same_levels(a: &NodeTree, b: &NodeTree) {
        assert_eq!(a.num_pus(), b.num_pus());
        for i in 0..a.num_pus() {
            for j in 0..a.num_pus() {
                assert_eq!(a.level(i, j), b.level(i, j), "PUs {i}, {j}");
                assert_eq!(a.link(i, j), b.link(i, j));
            }
        }
    }

    #[test]
    fn synthetic_matches_pure_rust_shape() {
        let costs = LevelCosts::default();
        for shape in [
            "pack:2 numa:2 l3:1 core:8 pu:1",
            "pack:2 l3:2 core:4 pu:2",
            "pack:2 numa:2 core:2 pu:2",
            "pack:2 l3:1 l2:4 core:1 pu:2",
            "pack:4 core:2 pu:1",
        ] {
            let h = NodeTree::from_hwloc_synthetic(shape, &costs).unwrap();
            let r = NodeTree::from_shape(shape, &costs).unwrap();
            same_levels(&h, &r);
        }
    }

    #[test]
    fn synthetic_levels_by_hand() {
        let t = NodeTree::from_hwloc_synthetic(
            "pack:2 numa:2 l3:1 core:8 pu:1",
            &LevelCosts::default(),
        )
        .unwrap();
        assert_eq!(t.num_pus(), 32);
        assert_eq!(t.level(0, 0), Level::Pu);
        assert_eq!(t.level(0, 7), Level::L3);
        assert_eq!(t.level(0, 8), Level::Package);
        assert_eq!(t.level(0, 31), Level::Machine);
        // numa without its own cache: pairs in one NUMA node share `numa`
        let t = NodeTree::from_hwloc_synthetic("pack:2 numa:2 core:2 pu:2", &LevelCosts::default())
            .unwrap();
        assert_eq!(t.level(0, 1), Level::Core);
        assert_eq!(t.level(0, 2), Level::Numa);
        assert_eq!(t.level(0, 4), Level::Package);
        assert_eq!(t.level(0, 8), Level::Machine);
        assert!(t.link(0, 1).latency <= t.link(0, 2).latency);
        assert!(t.link(0, 2).latency <= t.link(0, 4).latency);
        assert!(t.link(0, 4).latency <= t.link(0, 8).latency);
    }

    #[test]
    fn xml_file_matches_its_synthetic_description() {
        let costs = LevelCosts::default();
        let x = NodeTree::from_hwloc_xml(&data("interlagos-like.xml"), &costs).unwrap();
        let s = NodeTree::from_hwloc_synthetic("pack:2 numa:2 l3:1 core:4 pu:2", &costs).unwrap();
        same_levels(&x, &s);
    }

    #[test]
    fn this_machine_has_pus() {
        let t = NodeTree::from_this_machine(&LevelCosts::default()).unwrap();
        assert!(t.num_pus() >= 1);
        assert_eq!(t.level(0, 0), Level::Pu);
        assert!(t.description().contains("this machine"));
    }

    #[test]
    fn bad_inputs() {
        let e =
            NodeTree::from_hwloc_synthetic("pack:2 bogus:3", &LevelCosts::default()).unwrap_err();
        assert!(matches!(e, TopologyError::Hwloc { .. }), "{e:?}");
        assert!(e.to_string().contains("pack:2 bogus:3"), "{e}");

        let e = NodeTree::from_hwloc_xml(&data("no-such.xml"), &LevelCosts::default()).unwrap_err();
        assert!(matches!(e, TopologyError::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("no-such.xml"), "{e}");

        let dir = std::env::temp_dir().join(format!("copr-topo-hwloc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.xml");
        std::fs::write(&bad, "<topology><nonsense/>").unwrap();
        let e = NodeTree::from_hwloc_xml(&bad, &LevelCosts::default()).unwrap_err();
        assert!(matches!(e, TopologyError::Hwloc { .. }), "{e:?}");
        assert!(e.to_string().contains("bad.xml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(not(feature = "hwloc"))]
#[test]
fn without_feature_hwloc_sources_say_so() {
    let c = LevelCosts::default();
    for e in [
        NodeTree::from_this_machine(&c).unwrap_err(),
        NodeTree::from_hwloc_synthetic("pack:2 core:2", &c).unwrap_err(),
        NodeTree::from_hwloc_xml(&data("interlagos-like.xml"), &c).unwrap_err(),
    ] {
        assert!(matches!(e, TopologyError::HwlocDisabled { .. }), "{e:?}");
        assert!(e.to_string().contains("--features hwloc"), "{e}");
    }
}
