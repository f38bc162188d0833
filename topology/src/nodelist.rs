//! Slurm-style node lists (`nid[00012-00019,00033],login1`) and task counts per node
//! (`SLURM_TASKS_PER_NODE`: `16(x24),8(x16)`), with typed errors.

/// Node lists are expanded to at most this many names (and task-count lists to at most
/// this many nodes).
pub const MAX_NODELIST: usize = 1 << 22;

/// Why a node list or a task-count list was rejected; every variant quotes the
/// offending text.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NodeListError {
    /// `[` inside a bracket group.
    #[error("`{list}`: nested `[` at byte {at}")]
    Nested {
        /// The whole list.
        list: String,
        /// Byte offset of the second `[`.
        at: usize,
    },
    /// `]` without a `[` before it.
    #[error("`{list}`: `]` without `[` at byte {at}")]
    Unopened {
        /// The whole list.
        list: String,
        /// Byte offset of the `]`.
        at: usize,
    },
    /// A `[` never closed.
    #[error("`{list}`: unclosed `[`")]
    Unclosed {
        /// The whole list.
        list: String,
    },
    /// An empty item (`a,,b`).
    #[error("`{list}`: empty name")]
    Empty {
        /// The whole list.
        list: String,
    },
    /// A part of a bracket group (or a count) that is not a number or a range.
    #[error("`{item}`: `{part}` is not a number or range")]
    NotNumber {
        /// The name or count item.
        item: String,
        /// The part.
        part: String,
    },
    /// A range whose end is before its start.
    #[error("`{item}`: range `{part}` runs backwards")]
    Backwards {
        /// The name.
        item: String,
        /// The range.
        part: String,
    },
    /// More than [`MAX_NODELIST`] names or nodes.
    #[error("`{list}`: more than {MAX_NODELIST} nodes")]
    TooMany {
        /// The whole list.
        list: String,
    },
}

/// Expands a Slurm-style compressed node list: `nid[00012-00019,00033],login1` →
/// `nid00012 … nid00019 nid00033 login1`. Leading zeros of a range's start set the
/// width. A name with several groups takes every combination, the first group varying
/// slowest (`r[1-2]n[1-2]`: `r1n1 r1n2 r2n1 r2n2`).
///
/// ```
/// use copr_topology::{expand_nodelist, NodeListError};
/// assert_eq!(expand_nodelist("n[1-3,7],x").unwrap(), ["n1", "n2", "n3", "n7", "x"]);
/// assert_eq!(expand_nodelist("nid[0008-0010]").unwrap(), ["nid0008", "nid0009", "nid0010"]);
/// assert!(matches!(expand_nodelist("n[3-1]"), Err(NodeListError::Backwards { .. })));
/// ```
///
/// # Errors
/// [`NodeListError`] naming the offending part for unbalanced brackets, bad or
/// reversed ranges, or more than [`MAX_NODELIST`] names.
pub fn expand_nodelist(s: &str) -> Result<Vec<String>, NodeListError> {
    let list = || s.to_string();
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' if depth == 1 => {
                return Err(NodeListError::Nested {
                    list: list(),
                    at: i,
                })
            }
            '[' => depth = 1,
            ']' if depth == 0 => {
                return Err(NodeListError::Unopened {
                    list: list(),
                    at: i,
                })
            }
            ']' => depth = 0,
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(NodeListError::Unclosed { list: list() });
    }
    items.push(&s[start..]);
    let mut out = Vec::new();
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            return Err(NodeListError::Empty { list: list() });
        }
        // literal text and bracket groups in turn, the first group varying slowest:
        // `a[1-2]b[3-4]` is a1b3 a1b4 a2b3 a2b4
        let mut parts: Vec<Vec<String>> = Vec::new();
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let Some(len) = rest[open..].find(']') else {
                return Err(NodeListError::Unclosed { list: list() });
            };
            let close = open + len;
            parts.push(vec![rest[..open].to_string()]);
            parts.push(expand_group(
                item,
                &rest[open + 1..close],
                MAX_NODELIST - out.len(),
            )?);
            rest = &rest[close + 1..];
        }
        parts.push(vec![rest.to_string()]);
        let room = MAX_NODELIST - out.len();
        let total = parts
            .iter()
            .try_fold(1usize, |n, p| n.checked_mul(p.len()).filter(|&n| n <= room))
            .ok_or_else(|| NodeListError::TooMany { list: list() })?;
        let mut at = vec![0usize; parts.len()];
        for _ in 0..total {
            out.push(parts.iter().zip(&at).map(|(p, &k)| p[k].as_str()).collect());
            for k in (0..parts.len()).rev() {
                at[k] += 1;
                if at[k] < parts[k].len() {
                    break;
                }
                at[k] = 0;
            }
        }
    }
    Ok(out)
}

/// The numbers of one bracket group (`1-3,7` of `n[1-3,7]`), each as wide as the
/// digits of its range's start; at most `room` of them.
fn expand_group(item: &str, inner: &str, room: usize) -> Result<Vec<String>, NodeListError> {
    let mut out = Vec::new();
    for part in inner.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part.trim(), part.trim()),
        };
        let bad = || NodeListError::NotNumber {
            item: item.into(),
            part: part.into(),
        };
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        if !digits(a) || !digits(b) {
            return Err(bad());
        }
        let lo: u64 = a.parse().map_err(|_| bad())?;
        let hi: u64 = b.parse().map_err(|_| bad())?;
        if hi < lo {
            return Err(NodeListError::Backwards {
                item: item.into(),
                part: part.into(),
            });
        }
        if hi - lo >= (room - out.len().min(room)) as u64 {
            return Err(NodeListError::TooMany { list: item.into() });
        }
        let width = a.len();
        out.extend((lo..=hi).map(|v| format!("{v:0width$}")));
    }
    Ok(out)
}

/// Expands a task count per node in `SLURM_TASKS_PER_NODE` syntax: comma-separated
/// counts, each optionally repeated with `(xN)`: `16(x24),8(x16)` is 24 nodes of 16
/// then 16 nodes of 8.
///
/// ```
/// use copr_topology::expand_tasks_per_node;
/// assert_eq!(expand_tasks_per_node("2(x2),1").unwrap(), [2, 2, 1]);
/// assert_eq!(expand_tasks_per_node("16(x24),8(x16)").unwrap().len(), 40);
/// assert!(expand_tasks_per_node("4(x)").is_err());
/// ```
///
/// # Errors
/// [`NodeListError::NotNumber`] for an item that is not `N` or `N(xM)`,
/// [`NodeListError::Empty`] for an empty item, [`NodeListError::TooMany`] beyond
/// [`MAX_NODELIST`] nodes.
pub fn expand_tasks_per_node(s: &str) -> Result<Vec<usize>, NodeListError> {
    let mut out = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(NodeListError::Empty { list: s.into() });
        }
        let bad = |part: &str| NodeListError::NotNumber {
            item: item.into(),
            part: part.into(),
        };
        let number = |x: &str| -> Result<usize, NodeListError> {
            let x = x.trim();
            if x.is_empty() || !x.bytes().all(|c| c.is_ascii_digit()) {
                return Err(bad(x));
            }
            x.parse().map_err(|_| bad(x))
        };
        let (count, times) = match item.split_once('(') {
            None => (number(item)?, 1),
            Some((c, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .and_then(|r| r.trim().strip_prefix('x'))
                    .ok_or_else(|| bad(rest))?;
                (number(c)?, number(inner)?)
            }
        };
        if times > MAX_NODELIST - out.len() {
            return Err(NodeListError::TooMany { list: s.into() });
        }
        out.extend(std::iter::repeat_n(count, times));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodelist_errors_are_typed() {
        assert!(matches!(
            expand_nodelist("a[1-2"),
            Err(NodeListError::Unclosed { .. })
        ));
        assert!(matches!(
            expand_nodelist("a[x]"),
            Err(NodeListError::NotNumber { .. })
        ));
        assert!(matches!(
            expand_nodelist("a[0-99999999999]"),
            Err(NodeListError::TooMany { .. })
        ));
        assert!(matches!(
            expand_nodelist("a,,b"),
            Err(NodeListError::Empty { .. })
        ));
        assert!(matches!(
            expand_nodelist("a]"),
            Err(NodeListError::Unopened { at: 1, .. })
        ));
        assert!(matches!(
            expand_nodelist("a[[1]]"),
            Err(NodeListError::Nested { at: 2, .. })
        ));
        assert_eq!(expand_nodelist("a[1-2]-ib").unwrap(), ["a1-ib", "a2-ib"]);
        // several groups in one name, the first varying slowest, as Slurm expands them
        assert_eq!(
            expand_nodelist("r[1-2]n[08-9],x").unwrap(),
            ["r1n08", "r1n09", "r2n08", "r2n09", "x"]
        );
        assert!(matches!(
            expand_nodelist("a[0-4095]b[0-4095]"),
            Err(NodeListError::TooMany { .. })
        ));
        assert_eq!(
            expand_nodelist("a[0-2047]b[0-2047]").unwrap().len(),
            1 << 22
        );
        let e = expand_nodelist("n[3-1]").unwrap_err().to_string();
        assert_eq!(e, "`n[3-1]`: range `3-1` runs backwards");
    }

    #[test]
    fn tasks_per_node_by_hand() {
        assert_eq!(expand_tasks_per_node("3").unwrap(), [3]);
        assert_eq!(
            expand_tasks_per_node("4(x2), 2 ,1(x1)").unwrap(),
            [4, 4, 2, 1]
        );
        let v = expand_tasks_per_node("16(x24),8(x16)").unwrap();
        assert_eq!((v.len(), v.iter().sum::<usize>()), (40, 16 * 24 + 8 * 16));
        assert_eq!(v[23], 16);
        assert_eq!(v[24], 8);
        for bad in ["", "a", "4(2)", "4(x2", "4(xa)", "-1", "4,,2"] {
            assert!(expand_tasks_per_node(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            expand_tasks_per_node("1(x99999999)"),
            Err(NodeListError::TooMany { .. })
        ));
        // slot counts have no names: the message counts nodes
        let e = expand_tasks_per_node("16(x2),8(x100000000000)")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "`16(x2),8(x100000000000)`: more than 4194304 nodes");
    }
}
