//! Launcher host lists as machines: an Open MPI hostfile (`node1 slots=16`, a name
//! alone for one slot, a name listed again for more) or an MPICH machine file
//! (`node1:16`). Such a file names the nodes and their slots and nothing of the
//! network, so it is read as the short form's `[flat]` machine with `nodes` and
//! `ranks_per_node` per node.

use crate::config::{FlatSection, NodeNames, SlotCounts, TopologyConfig};

/// The slots of one line, or why the line cannot be read.
fn line_slots(fields: &[&str]) -> Result<(String, usize), String> {
    // `what` names the field as written: `slots=4`, or `node1:4` for the MPICH form
    let count = |v: &str, what: &str| -> Result<usize, String> {
        match v.parse::<usize>() {
            Ok(0) => Err(format!("{what}: a node with no slots")),
            Ok(n) => Ok(n),
            Err(_) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => Err(format!(
                "{what}: {v} slots are too many (at most {})",
                usize::MAX
            )),
            Err(_) => Err(format!(
                "{what}: the slots must be a whole number, not `{v}`"
            )),
        }
    };
    let (name, mut slots) = match fields[0].split_once(':') {
        Some((name, n)) => (name, Some(count(n, &format!("`{}`", fields[0]))?)),
        None => (fields[0], None),
    };
    for f in &fields[1..] {
        let (k, v) = f
            .split_once('=')
            .ok_or_else(|| format!("`{f}`: expected `slots=N`"))?;
        match k {
            "slots" | "slot" if slots.is_none() => slots = Some(count(v, &format!("`{f}`"))?),
            "slots" | "slot" => return Err(format!("`{f}`: the slots are given twice")),
            // the most ranks a launcher may oversubscribe to: not a slot
            "max_slots" | "max-slots" => {
                count(v, &format!("`{f}`"))?;
            }
            _ => {
                return Err(format!(
                    "`{f}`: unknown key (a hostfile line is `NAME slots=N`)"
                ))
            }
        }
    }
    Ok((name.to_string(), slots.unwrap_or(1)))
}

/// Whether `word` may be a host name (letters, digits, `.`, `-`, `_`; not starting
/// with `-` or `.`).
fn host_like(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// Reads `text` as a host list when it looks like one: every line with data starts
/// with a host name (optionally `:N`) and its other words are `key=value`. `None` when
/// it does not look like one (the caller reports its own parse error).
///
/// ```
/// use copr_topology::hostfile_machine;
/// let cfg = hostfile_machine("# two nodes\nn1 slots=4\nn2 slots=2 max_slots=8\n")
///     .unwrap()
///     .unwrap();
/// let m = cfg.build(".".as_ref(), None).unwrap();
/// assert_eq!((m.ranks(), m.placement().node_name(1)), (6, "n2"));
/// assert!(hostfile_machine("n1 slots=0\n").unwrap().is_err());
/// assert!(hostfile_machine("[flat]\nnodes = 2\n").is_none());
/// ```
///
/// # Errors
/// The inner `Err`: the line number (from 1) and what is wrong (a count of 0 or not a number,
/// an unknown key, slots given twice).
pub fn hostfile_machine(text: &str) -> Option<Result<TopologyConfig, (usize, String)>> {
    let text = crate::files::skip_bom(text);
    // Open MPI's hostfile reader takes `slots = 4` as `slots=4`: white space around
    // `=` joins the key and its value
    let lines: Vec<(usize, String)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let l = l.split('#').next().unwrap_or("");
            let joined: Vec<&str> = l.split('=').map(str::trim).collect();
            (i + 1, joined.join("="))
        })
        .collect();
    let data: Vec<(usize, Vec<&str>)> = lines
        .iter()
        .map(|(n, l)| (*n, l.split_whitespace().collect::<Vec<_>>()))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    let looks = !data.is_empty()
        && data.iter().all(|(_, f)| {
            let name = f[0].split_once(':').map_or(f[0], |(n, _)| n);
            host_like(name) && f[1..].iter().all(|w| w.contains('='))
        });
    if !looks {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    let mut slots: Vec<usize> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for (n, fields) in &data {
        let (name, k) = match line_slots(fields) {
            Ok(v) => v,
            Err(e) => return Some(Err((*n, e))),
        };
        // a host listed again adds its slots, as Open MPI counts them
        let at = *index.entry(name.clone()).or_insert_with(|| {
            names.push(name);
            slots.push(0);
            names.len() - 1
        });
        slots[at] = match slots[at].checked_add(k) {
            Some(s) => s,
            None => return Some(Err((*n, "the node's slots overflow".into()))),
        };
    }
    Some(Ok(TopologyConfig {
        description: Some(format!(
            "hostfile of {}",
            crate::placement::count(names.len(), "node")
        )),
        flat: Some(FlatSection { nodes: names.len() }),
        ranks_per_node: Some(SlotCounts::PerNode(slots)),
        nodes: Some(NodeNames::Array(names)),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(text: &str) -> (Vec<String>, Vec<usize>) {
        let cfg = hostfile_machine(text).expect("a hostfile").expect("valid");
        let Some(NodeNames::Array(n)) = cfg.nodes else {
            panic!("names")
        };
        let Some(SlotCounts::PerNode(s)) = cfg.ranks_per_node else {
            panic!("slots")
        };
        (n, s)
    }

    #[test]
    fn open_mpi_and_mpich_forms() {
        assert_eq!(
            counts("a slots=2\nb\na\nc:3\n"),
            (vec!["a".into(), "b".into(), "c".into()], vec![3, 1, 3])
        );
        assert_eq!(counts("n-1.x max-slots=9 slots=4 # c\n").1, vec![4]);
        // as an editor may save it: a byte-order mark, CR LF
        assert_eq!(counts("\u{feff}a slots=2\r\nb:1\r\n").1, vec![2, 1]);
        // white space around `=`, as Open MPI's own reader allows
        assert_eq!(
            counts("a slots = 2\nb slots =3 max_slots= 4\n").1,
            vec![2, 3]
        );
    }

    #[test]
    fn bad_lines_are_named() {
        let e = |t: &str| hostfile_machine(t).expect("a hostfile").unwrap_err().1;
        assert_eq!(
            hostfile_machine("a slots=2\nb slots=x\n").map(|r| r.unwrap_err()),
            Some((
                2,
                "`slots=x`: the slots must be a whole number, not `x`".to_string()
            ))
        );
        // the MPICH form names the whole field, and a number too large says so
        assert_eq!(
            e("n1:x\n"),
            "`n1:x`: the slots must be a whole number, not `x`"
        );
        assert!(e("n1:99999999999999999999999\n").contains("too many"));
        assert!(e("a cpu=2\n").contains("unknown key"), "{}", e("a cpu=2\n"));
        assert!(e("a slots=1 slots=2\n").contains("twice"));
        assert!(e("a:0\n").contains("no slots"));
        // TOML, JSON and prose are not host lists
        assert!(hostfile_machine("nodes = 4\n").is_none());
        assert!(hostfile_machine("{\"flat\": {}}").is_none());
        assert!(hostfile_machine("two words\n").is_none());
        assert!(hostfile_machine("# only a comment\n").is_none());
    }
}
