//! The hosts of a traffic recording (`COPR_RECORD`, written by `libcopr_interpose`):
//! its `# host R NAME` lines say where each rank ran, so the recording's hosts can
//! serve as the machine's nodes and the run's own placement can be priced.

use std::path::Path;

use super::machine::MapMachine;
use crate::errors::{ExportError, Format};
use copr::error::{Error, Result};
use copr::lap::Perm;

/// The host of every rank from the `# host R NAME` lines of a recording (`None` if it
/// has none).
///
/// ```
/// use copr_mapping::recorded_hosts;
/// let text = "# host 0 a\n# host 2 b\n# host 1 a\n0 1 8 # 1\n";
/// assert_eq!(recorded_hosts(text).unwrap().unwrap(), ["a", "a", "b"]);
/// assert!(recorded_hosts("0 1 8\n").unwrap().is_none());
/// assert!(recorded_hosts("# host 0 a\n# host 2 b\n").is_err()); // rank 1 missing
/// // a host for rank 2 of a recording of 2 ranks
/// assert!(recorded_hosts("tasks 2\n# host 0 a\n# host 1 a\n# host 2 b\n").is_err());
/// ```
///
/// # Errors
/// [`ExportError`] naming the line for a malformed or repeated rank, a rank not below
/// the file's `tasks N` (when it has one), or a rank missing from `0..ranks`.
pub fn recorded_hosts(text: &str) -> Result<Option<Vec<String>>> {
    let declared = declared_tasks(text);
    // by rank, so that memory follows the lines, not the largest rank named
    let mut hosts: std::collections::BTreeMap<usize, String> = Default::default();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = host_line(line) else {
            continue;
        };
        let bad = |what: &str| ExportError::Line {
            format: Format::Recording,
            line: i + 1,
            what: format!("{what} (expected `# host RANK NAME`)"),
            text: line.trim().to_string(),
        };
        let mut parts = rest.split_whitespace();
        let r: usize = parts
            .next()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| bad("the rank is not a number"))?;
        let name = parts.next().ok_or_else(|| bad("no host name"))?;
        if parts.next().is_some() {
            return Err(bad("a host name with a space").into());
        }
        if r >= super::MAX_TASKS {
            return Err(bad("rank beyond the largest pattern").into());
        }
        if let Some((t, at)) = declared.filter(|&(t, _)| r as u64 >= t) {
            let what = format!("rank {r} is not below the file's `tasks {t}` (line {at})");
            return Err(bad(&what).into());
        }
        if hosts.insert(r, name.to_string()).is_some() {
            return Err(bad("the rank's host is given twice").into());
        }
    }
    if hosts.is_empty() {
        return Ok(None);
    }
    // ranks 0..n each once: the first rank whose key is not its position is missing
    if let Some(r) = hosts
        .keys()
        .enumerate()
        .find_map(|(k, &r)| (k != r).then_some(k))
    {
        return Err(ExportError::NoHostLine { rank: r }.into());
    }
    Ok(Some(hosts.into_values().collect()))
}

/// The `N` of a file's `tasks N` line (its first line with data, as the graph reader
/// takes it) and that line's number, else `None`.
fn declared_tasks(text: &str) -> Option<(u64, usize)> {
    let text = copr_topology::files::skip_bom(text);
    let (i, body) = text.lines().enumerate().find_map(|(i, l)| {
        let body = l.split('#').next().unwrap_or("").trim();
        (!body.is_empty()).then_some((i, body))
    })?;
    let mut fields = body.split(|c: char| c.is_whitespace() || c == ',');
    (fields.next() == Some("tasks"))
        .then(|| fields.find(|f| !f.is_empty()))
        .flatten()
        .and_then(|t| t.parse().ok())
        .map(|t| (t, i + 1))
}

/// The rest of a `# host RANK NAME` line after `host` (`#host` and tabs too), else
/// `None`.
fn host_line(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("host")?;
    rest.starts_with(char::is_whitespace).then_some(rest)
}

/// The machine of a recorded run: its hosts (in order of first appearance) as the
/// nodes, each with as many slots as ranks ran on it, no network model (every node
/// pair one hop); and the run's own placement as a mapping onto it (rank `r` on the
/// `i`-th slot of its host when it is the host's `i`-th rank).
///
/// ```
/// use copr_mapping::machine_from_recording;
/// let (m, ran) = machine_from_recording(&["a", "b", "a"].map(String::from)).unwrap();
/// assert_eq!((m.nodes(), m.slot_count(0), m.slot_count(1)), (2, 2, 1));
/// // slots a0 a1 b0, and b1 which host b does not have (an empty task's)
/// assert_eq!(ran.forward(), [0, 2, 1, 3]);
/// ```
///
/// # Errors
/// [`ExportError`] for an empty host list.
pub fn machine_from_recording(hosts: &[String]) -> Result<(MapMachine, Perm)> {
    let mut names: Vec<&str> = Vec::new();
    let mut index = std::collections::HashMap::new();
    let mut counts: Vec<usize> = Vec::new();
    for h in hosts {
        let k = *index.entry(h.as_str()).or_insert_with(|| {
            names.push(h);
            counts.push(0);
            names.len() - 1
        });
        counts[k] += 1;
    }
    let most = counts
        .iter()
        .copied()
        .max()
        .ok_or_else(|| Error::from(ExportError::NoHosts))?;
    let mut m = MapMachine::flat(names.len(), most)?;
    m.set_node_names(names.iter().map(|n| n.to_string()).collect())?;
    let m = m.with_slot_counts(counts)?;
    let ran = m.slots_of(hosts)?;
    Ok((m, ran))
}

/// [`recorded_hosts`] of a file.
///
/// # Errors
/// [`Error::Io`] naming the file, and those of [`recorded_hosts`] (in the file).
pub fn recorded_hosts_file(path: &Path) -> Result<Option<Vec<String>>> {
    let text = copr::files::read_file(path)?;
    recorded_hosts(&text).map_err(|e| e.in_file(path))
}
