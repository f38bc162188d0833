//! A mapping in the forms launchers and tools read, and the parsers that read them
//! back (used by the tests: every export parsed back gives the mapping).
//!
//! | form | line / entry | what it says |
//! |---|---|---|
//! | Open MPI rankfile | `rank R=HOST slot=C` | rank `R` runs on node `HOST`, core `C` |
//! | `MPICH_RANK_ORDER` (Cray `MPICH_RANK_REORDER_METHOD=3`) | `R,R,…` (ranges `a-b`) | the ranks in slot order |
//! | `SLURM_HOSTFILE` (`srun --distribution=arbitrary`) | line `R`: `HOST` | node of rank `R` |
//! | SMPI hostfile (`smpirun -hostfile`) | line `R`: SimGrid host | node of rank `R` |
//! | JSON | object | slot and node of every rank, node names |

use serde::{Deserialize, Serialize};

use super::machine::MapMachine;
use crate::errors::{ExportError, Format};
use copr::error::{Error, Result};
use copr::lap::Perm;

/// Open MPI rankfile: `rank R=HOST slot=C` for every rank.
pub fn rankfile(m: &MapMachine, map: &Perm) -> String {
    rankfile_ranks(m, map, map.len())
}

/// [`rankfile`] of the first `ranks` ranks only: a job of `ranks` ranks mapped as a
/// pattern padded with empty tasks ([`crate::Pattern::padded`]); the slots of the other tasks stay
/// empty and are not named.
///
/// # Panics
/// If `ranks > map.len()`.
pub fn rankfile_ranks(m: &MapMachine, map: &Perm, ranks: usize) -> String {
    let rpn = m.ranks_per_node();
    let mut s = String::with_capacity(ranks * 24);
    for r in 0..ranks {
        let slot = map.apply(r);
        s.push_str(&format!(
            "rank {r}={} slot={}\n",
            m.node_name(slot / rpn),
            slot % rpn
        ));
    }
    s
}

/// Reads an Open MPI rankfile back into a mapping onto `m`.
///
/// # Errors
/// [`ExportError`] with the line for malformed lines, unknown hosts, cores beyond
/// the node's slots, repeated or missing ranks (every slot of `m` must hold a rank;
/// [`parse_rankfile_ranks`] reads a job that leaves slots empty).
pub fn parse_rankfile(text: &str, m: &MapMachine) -> Result<Perm> {
    let slots = parse_rankfile_ranks(text, m)?;
    if slots.len() < m.slots() {
        return Err(ExportError::MissingRank {
            format: Format::Rankfile,
            rank: slots.len(),
        }
        .into());
    }
    Perm::from_forward(slots)
}

/// Reads an Open MPI rankfile of a job of any size back: the slot of every rank
/// (`node·ranks_per_node + core`), for ranks `0..n`, `n` the number of lines; as
/// [`rankfile_ranks`] writes it for a job that leaves slots empty.
///
/// ```
/// use copr_mapping::{export, MapMachine, Perm};
/// let mut m = MapMachine::flat(2, 2).unwrap().with_slot_counts(vec![2, 1]).unwrap();
/// m.set_node_names(vec!["a".into(), "b".into()]).unwrap();
/// // 2 ranks on a machine of 3 slots: slot 1 stays empty
/// let text = export::rankfile_ranks(&m, &Perm::from_forward(vec![2, 0, 1, 3]).unwrap(), 2);
/// assert_eq!(text, "rank 0=b slot=0\nrank 1=a slot=0\n");
/// assert_eq!(export::parse_rankfile_ranks(&text, &m).unwrap(), [2, 0]);
/// // core 1 of node b does not exist
/// assert!(export::parse_rankfile_ranks("rank 0=b slot=1\n", &m).is_err());
/// ```
///
/// # Errors
/// [`ExportError`] with the line for malformed lines, unknown hosts, cores beyond
/// the node's slots, ranks beyond the machine's slots or repeated; for a rank below
/// the highest that is missing, and for two ranks on one slot.
pub fn parse_rankfile_ranks(text: &str, m: &MapMachine) -> Result<Vec<usize>> {
    let rpn = m.ranks_per_node();
    let names = name_index(m);
    let mut fwd = vec![usize::MAX; m.slots()];
    let mut holder = vec![usize::MAX; m.slots()];
    let mut ranks = 0;
    for (i, line) in text.lines().enumerate() {
        let l = line.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        let bad = |what: &str| ExportError::Line {
            format: Format::Rankfile,
            line: i + 1,
            what: what.to_string(),
            text: l.to_string(),
        };
        let rest = l
            .strip_prefix("rank ")
            .ok_or_else(|| bad("expected `rank R=HOST slot=C`"))?;
        let (r, rest) = rest.split_once('=').ok_or_else(|| bad("missing `=`"))?;
        let (host, slot) = rest
            .split_once(" slot=")
            .ok_or_else(|| bad("missing ` slot=`"))?;
        let r: usize = r.trim().parse().map_err(|_| bad("rank is not a number"))?;
        let core: usize = slot
            .trim()
            .parse()
            .map_err(|_| bad("slot is not a number"))?;
        let node = *names.get(host.trim()).ok_or_else(|| bad("unknown host"))?;
        if r >= fwd.len() || core >= m.slot_count(node) || fwd[r] != usize::MAX {
            return Err(bad("rank out of range or repeated, or slot beyond the node").into());
        }
        let s = node * rpn + core;
        if holder[s] != usize::MAX {
            return Err(ExportError::SharedSlot {
                format: Format::Rankfile,
                first: holder[s].min(r),
                second: holder[s].max(r),
                slot: s,
            }
            .into());
        }
        holder[s] = r;
        fwd[r] = s;
        ranks = ranks.max(r + 1);
    }
    fwd.truncate(ranks);
    if let Some(r) = fwd.iter().position(|&s| s == usize::MAX) {
        return Err(ExportError::MissingRank {
            format: Format::Rankfile,
            rank: r,
        }
        .into());
    }
    Ok(fwd)
}

/// `MPICH_RANK_ORDER`: the rank on each slot, in slot order, comma-separated with runs
/// of consecutive ranks written `a-b`; lines of at most about 72 characters.
pub fn mpich_rank_order(map: &Perm) -> String {
    rank_ranges(map.inverse())
}

/// [`mpich_rank_order`] on a machine whose nodes have different slot counts
/// ([`MapMachine::with_slot_counts`]): the rank on each slot the nodes have, in slot
/// order (the launcher starts `slot_count(k)` processes on node `k`, as
/// `SLURM_TASKS_PER_NODE` says).
///
/// # Errors
/// [`ExportError`] unless the first `ranks` tasks of `map` fill exactly the slots
/// the nodes have (a job that leaves slots empty cannot be said in this form).
pub fn mpich_rank_order_ranks(m: &MapMachine, map: &Perm, ranks: usize) -> Result<String> {
    let used = m.used_slots();
    if ranks != used || (0..ranks).any(|r| !m.has_slot(map.apply(r))) {
        return Err(ExportError::EmptySlots { ranks, slots: used }.into());
    }
    let inv = map.inverse();
    let order: Vec<usize> = (0..m.slots())
        .filter(|&s| m.has_slot(s))
        .map(|s| inv[s])
        .collect();
    Ok(rank_ranges(&order))
}

/// `inv` comma-separated with runs of consecutive values written `a-b`, in lines of
/// at most about 72 characters.
fn rank_ranges(inv: &[usize]) -> String {
    let mut items = Vec::new();
    let mut i = 0;
    while i < inv.len() {
        let mut j = i;
        while j + 1 < inv.len() && inv[j + 1] == inv[j] + 1 {
            j += 1;
        }
        items.push(if j > i {
            format!("{}-{}", inv[i], inv[j])
        } else {
            inv[i].to_string()
        });
        i = j + 1;
    }
    let mut out = String::new();
    let mut line = String::new();
    for (k, it) in items.iter().enumerate() {
        line.push_str(it);
        if k + 1 < items.len() {
            line.push(',');
        }
        if line.len() > 72 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Reads an `MPICH_RANK_ORDER` list back: rank of every slot → a mapping.
///
/// # Errors
/// [`ExportError`] for malformed items, repeated or missing ranks.
pub fn parse_mpich_rank_order(text: &str, ranks: usize) -> Result<Perm> {
    let mut inv = Vec::with_capacity(ranks);
    for item in text
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let bad = || ExportError::Item {
            format: Format::MpichRankOrder,
            item: item.to_string(),
        };
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (a, b),
            None => (item, item),
        };
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b.trim().parse().map_err(|_| bad())?;
        if b < a || b >= ranks || inv.len() + (b - a) > ranks {
            return Err(bad().into());
        }
        inv.extend(a..=b);
    }
    if inv.len() != ranks {
        return Err(ExportError::Entries {
            format: Format::MpichRankOrder,
            entries: inv.len(),
            ranks,
        }
        .into());
    }
    Ok(Perm::from_forward(inv)?.inverted())
}

/// A hostfile: line `r` names the node of rank `r` (Slurm's `SLURM_HOSTFILE` with the
/// machine's node names, SMPI's with SimGrid host names).
pub fn hostfile(names: &[String], m: &MapMachine, map: &Perm) -> String {
    hostfile_ranks(names, m, map, map.len())
}

/// [`hostfile`] of the first `ranks` ranks only (see [`rankfile_ranks`]).
///
/// # Panics
/// If `ranks > map.len()`.
pub fn hostfile_ranks(names: &[String], m: &MapMachine, map: &Perm, ranks: usize) -> String {
    let rpn = m.ranks_per_node();
    let mut s = String::new();
    for r in 0..ranks {
        s.push_str(&names[map.apply(r) / rpn]);
        s.push('\n');
    }
    s
}

/// The machine's node names, in order.
pub fn node_names(m: &MapMachine) -> Vec<String> {
    (0..m.nodes()).map(|k| m.node_name(k).to_string()).collect()
}

/// Reads a hostfile back: the node (index into `names`) of every rank.
///
/// # Errors
/// [`ExportError`] with the line for an unknown host.
pub fn parse_hostfile(text: &str, names: &[String]) -> Result<Vec<usize>> {
    let idx: std::collections::HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(k, n)| (n.as_str(), k))
        .collect();
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            idx.get(l.trim()).copied().ok_or_else(|| {
                Error::from(ExportError::Line {
                    format: Format::Hostfile,
                    line: i + 1,
                    what: "unknown host".into(),
                    text: l.trim().to_string(),
                })
            })
        })
        .collect()
}

/// The JSON form of a mapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingJson {
    /// Strategy that produced it.
    pub strategy: String,
    /// Ranks per node.
    pub ranks_per_node: usize,
    /// Node names in machine order.
    pub nodes: Vec<String>,
    /// Slot of every rank (`node·ranks_per_node + core`).
    pub slot_of_rank: Vec<usize>,
    /// Node name of every rank.
    pub node_of_rank: Vec<String>,
}

/// The JSON form of `map`.
pub fn to_json(strategy: &str, m: &MapMachine, map: &Perm) -> MappingJson {
    let rpn = m.ranks_per_node();
    MappingJson {
        strategy: strategy.to_string(),
        ranks_per_node: rpn,
        nodes: node_names(m),
        slot_of_rank: map.forward().to_vec(),
        node_of_rank: map
            .forward()
            .iter()
            .map(|&s| m.node_name(s / rpn).to_string())
            .collect(),
    }
}

/// [`to_json`] of the first `ranks` ranks only (see [`rankfile_ranks`]); such a
/// mapping names fewer slots than the machine has: [`from_json`] refuses it,
/// [`from_json_ranks`] reads it.
///
/// # Panics
/// If `ranks > map.len()`.
pub fn to_json_ranks(strategy: &str, m: &MapMachine, map: &Perm, ranks: usize) -> MappingJson {
    let mut j = to_json(strategy, m, map);
    j.slot_of_rank.truncate(ranks);
    j.node_of_rank.truncate(ranks);
    j
}

/// Reads the JSON form back.
///
/// # Errors
/// [`ExportError`] if the slots are not a permutation or disagree with the node
/// names ([`from_json_ranks`] reads a job that leaves slots empty).
pub fn from_json(j: &MappingJson) -> Result<Perm> {
    Perm::from_forward(from_json_ranks(j)?)
}

/// Reads the JSON form of a job of any size back ([`to_json_ranks`]): the slot of
/// every rank.
///
/// # Errors
/// [`ExportError`] if the lists differ in length, a slot is beyond the nodes', two
/// ranks share a slot, or a slot's node disagrees with the rank's node name.
pub fn from_json_ranks(j: &MappingJson) -> Result<Vec<usize>> {
    let rpn = j.ranks_per_node.max(1);
    let slots = j.nodes.len().saturating_mul(rpn);
    if j.node_of_rank.len() != j.slot_of_rank.len() {
        return Err(ExportError::Entries {
            format: Format::MappingJson,
            entries: j.node_of_rank.len(),
            ranks: j.slot_of_rank.len(),
        }
        .into());
    }
    let mut holder = std::collections::HashMap::with_capacity(j.slot_of_rank.len());
    for (r, &s) in j.slot_of_rank.iter().enumerate() {
        if s >= slots {
            return Err(ExportError::SlotOutOfRange {
                format: Format::MappingJson,
                rank: r,
                slot: s,
                slots,
            }
            .into());
        }
        if let Some(&q) = holder.get(&s) {
            return Err(ExportError::SharedSlot {
                format: Format::MappingJson,
                first: q,
                second: r,
                slot: s,
            }
            .into());
        }
        holder.insert(s, r);
        if j.nodes.get(s / rpn) != j.node_of_rank.get(r) {
            return Err(ExportError::SlotNode {
                format: Format::MappingJson,
                rank: r,
                slot: s,
                node: j.node_of_rank[r].clone(),
            }
            .into());
        }
    }
    Ok(j.slot_of_rank.clone())
}

fn name_index(m: &MapMachine) -> std::collections::HashMap<String, usize> {
    (0..m.nodes())
        .map(|k| (m.node_name(k).to_string(), k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_ranges_by_hand() {
        // ranks 0..4 on slots [2, 3, 0, 1]: slot 0 holds rank 2, slot 1 rank 3 …
        let p = Perm::from_forward(vec![2, 3, 0, 1]).unwrap();
        assert_eq!(mpich_rank_order(&p), "2-3,0-1\n");
        assert_eq!(parse_mpich_rank_order("2-3,0-1\n", 4).unwrap(), p);
        assert!(parse_mpich_rank_order("0-3,1", 4).is_err());
        assert!(parse_mpich_rank_order("0-2", 4).is_err());
    }

    #[test]
    fn rankfile_by_hand() {
        let mut m = MapMachine::flat(2, 2).unwrap();
        m.set_node_names(vec!["a".into(), "b".into()]).unwrap();
        let p = Perm::from_forward(vec![3, 0, 2, 1]).unwrap();
        let text = rankfile(&m, &p);
        assert_eq!(
            text,
            "rank 0=b slot=1\nrank 1=a slot=0\nrank 2=b slot=0\nrank 3=a slot=1\n"
        );
        assert_eq!(parse_rankfile(&text, &m).unwrap(), p);
        let e = parse_rankfile("rank 0=c slot=0\n", &m)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("unknown host"), "{e}");
    }
}
