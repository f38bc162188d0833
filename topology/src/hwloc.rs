//! hwloc sources for [`NodeTree`]: the running machine, synthetic
//! descriptions and XML files. Without the `hwloc` feature every constructor
//! returns [`TopologyError::HwlocDisabled`].

use std::path::Path;

use crate::error::{Origin, Result, TopologyError};
use crate::tree::{LevelCosts, NodeTree};

impl NodeTree {
    /// The node tree of the machine this process runs on (hwloc discovery).
    ///
    /// # Errors
    /// [`TopologyError::HwlocDisabled`] without the `hwloc` feature;
    /// [`TopologyError::Hwloc`] if discovery fails; cost errors as in
    /// [`NodeTree::from_ancestry`].
    pub fn from_this_machine(costs: &LevelCosts) -> Result<Self> {
        imp::this_machine(costs)
    }

    /// The node tree of an hwloc synthetic description, e.g.
    /// `"pack:2 numa:2 l3:1 core:8 pu:1"` (full hwloc syntax, attributes
    /// included).
    ///
    /// # Errors
    /// [`TopologyError::HwlocDisabled`] without the `hwloc` feature;
    /// [`TopologyError::Hwloc`] naming the description if hwloc rejects it.
    pub fn from_hwloc_synthetic(description: &str, costs: &LevelCosts) -> Result<Self> {
        // refuse oversized nodes before hwloc builds them (when the description
        // is in the simple `type:count` form)
        if let Ok(levels) = crate::tree::parse_levels(description) {
            crate::tree::check_shape_pus("description", description, &levels)?;
        }
        imp::synthetic(description, costs)
    }

    /// The node tree of an hwloc XML file (as written by `lstopo file.xml`).
    ///
    /// # Errors
    /// [`TopologyError::Io`] if the file cannot be read;
    /// [`TopologyError::HwlocDisabled`] without the `hwloc` feature;
    /// [`TopologyError::Hwloc`] naming the file if hwloc rejects it.
    pub fn from_hwloc_xml(path: &Path, costs: &LevelCosts) -> Result<Self> {
        imp::xml(path, costs)
    }
}

/// The PU this process is bound to: the logical index (as used by [`NodeTree`]) of
/// the first PU of the process's CPU binding, or `None` when the process may run on
/// every PU of the machine (not bound). What run-time placement discovery reports.
///
/// # Errors
/// [`TopologyError::HwlocDisabled`] without the `hwloc` feature;
/// [`TopologyError::Hwloc`] if hwloc cannot read the binding.
pub fn current_binding_pu() -> Result<Option<usize>> {
    imp::binding_pu()
}

#[cfg(not(feature = "hwloc"))]
mod imp {
    use super::*;

    pub(super) fn binding_pu() -> Result<Option<usize>> {
        Err(disabled(Origin::none(), "reading the CPU binding"))
    }

    fn disabled(origin: Origin, what: &str) -> TopologyError {
        TopologyError::HwlocDisabled {
            origin,
            what: what.to_string(),
        }
    }

    pub(super) fn this_machine(_: &LevelCosts) -> Result<NodeTree> {
        Err(disabled(Origin::none(), "hwloc discovery of this machine"))
    }

    pub(super) fn synthetic(d: &str, _: &LevelCosts) -> Result<NodeTree> {
        Err(disabled(
            Origin::none(),
            &format!("the hwloc synthetic description `{d}`"),
        ))
    }

    pub(super) fn xml(path: &Path, _: &LevelCosts) -> Result<NodeTree> {
        // Report a missing file first: that is the more useful message.
        crate::files::read_text(path)?;
        Err(disabled(Origin::file(path), "the hwloc XML file"))
    }
}

#[cfg(feature = "hwloc")]
mod imp {
    use super::*;
    use crate::tree::{Level, PuAncestry};
    use hwlocality::object::types::ObjectType;
    use hwlocality::object::TopologyObject;
    use hwlocality::Topology;

    fn hwloc_err(origin: Origin, message: impl Into<String>) -> TopologyError {
        TopologyError::Hwloc {
            origin,
            message: message.into(),
        }
    }

    pub(super) fn binding_pu() -> Result<Option<usize>> {
        use hwlocality::cpu::binding::CpuBindingFlags;
        let topo = Topology::new().map_err(|e| hwloc_err(Origin::none(), e.to_string()))?;
        let set = topo
            .cpu_binding(CpuBindingFlags::PROCESS)
            .map_err(|e| hwloc_err(Origin::none(), format!("reading the CPU binding: {e}")))?;
        let all = topo.objects_with_type(ObjectType::PU).count();
        let mut bound = topo
            .objects_with_type(ObjectType::PU)
            .filter(|pu| pu.cpuset().is_some_and(|c| c.intersects(&set)))
            .map(|pu| pu.logical_index())
            .collect::<Vec<_>>();
        bound.sort_unstable();
        Ok(if bound.len() == all {
            None
        } else {
            bound.first().copied()
        })
    }

    fn level_of(ty: ObjectType) -> Option<Level> {
        Some(match ty {
            ObjectType::PU => Level::Pu,
            ObjectType::Core => Level::Core,
            ObjectType::L1Cache | ObjectType::L1ICache => Level::L1,
            ObjectType::L2Cache | ObjectType::L2ICache => Level::L2,
            ObjectType::L3Cache | ObjectType::L3ICache => Level::L3,
            ObjectType::L4Cache => Level::L4,
            ObjectType::L5Cache => Level::L5,
            ObjectType::Die => Level::Die,
            ObjectType::Package => Level::Package,
            ObjectType::Group => Level::Group,
            ObjectType::Machine => Level::Machine,
            _ => return None,
        })
    }

    /// The level of `obj`; a Group holding a NUMA node stands for that NUMA
    /// node (that is how hwloc represents a NUMA level without other object).
    fn level_of_object(obj: &TopologyObject) -> Option<Level> {
        let level = level_of(obj.object_type())?;
        if level == Level::Group
            && obj
                .memory_children()
                .any(|m| m.object_type() == ObjectType::NUMANode)
        {
            return Some(Level::Numa);
        }
        Some(level)
    }

    fn tree_of(topo: &Topology, costs: &LevelCosts, description: String) -> Result<NodeTree> {
        let mut pus: Vec<&TopologyObject> = topo.objects_with_type(ObjectType::PU).collect();
        pus.sort_by_key(|p| p.logical_index());
        let ancestry: Vec<PuAncestry> = pus
            .iter()
            .map(|pu| {
                let mut chain: Vec<(u64, Level)> = std::iter::once(*pu)
                    .chain(pu.ancestors())
                    .filter_map(|o| level_of_object(o).map(|l| (o.global_persistent_index(), l)))
                    .collect();
                chain.reverse();
                PuAncestry { chain }
            })
            .collect();
        NodeTree::from_ancestry(&ancestry, costs, description)
    }

    pub(super) fn this_machine(costs: &LevelCosts) -> Result<NodeTree> {
        let topo = Topology::new()
            .map_err(|e| hwloc_err(Origin::none(), format!("discovery failed: {e}")))?;
        tree_of(&topo, costs, "hwloc: this machine".into())
    }

    pub(super) fn synthetic(d: &str, costs: &LevelCosts) -> Result<NodeTree> {
        let origin = Origin::none();
        let hint = if d.contains("pu:") {
            ""
        } else {
            " (hwloc synthetic descriptions end with a `pu:N` level)"
        };
        let bad = |e: &dyn std::fmt::Display| {
            hwloc_err(
                origin.clone(),
                format!("invalid synthetic description `{d}`: {e}{hint}"),
            )
        };
        let topo = Topology::builder()
            .from_synthetic(d)
            .map_err(|e| bad(&e))?
            .build()
            .map_err(|e| bad(&e))?;
        tree_of(&topo, costs, format!("hwloc synthetic `{d}`"))
    }

    pub(super) fn xml(path: &Path, costs: &LevelCosts) -> Result<NodeTree> {
        // Read it ourselves first for a clear I/O error; hwloc then parses it.
        let text = crate::files::read_text(path)?;
        let origin = Origin::file(path);
        let bad = |e: &dyn std::fmt::Display| {
            hwloc_err(
                origin.clone(),
                format!("not a valid hwloc XML topology: {e}"),
            )
        };
        let topo = Topology::builder()
            .from_xml(&text)
            .map_err(|e| bad(&e))?
            .build()
            .map_err(|e| bad(&e))?;
        tree_of(&topo, costs, format!("hwloc XML {}", path.display())).map_err(|e| e.in_file(path))
    }
}
