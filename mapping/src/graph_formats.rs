//! The graph files of Scotch and METIS read as communication patterns
//! ([`crate::Pattern::from_file`] chooses by the file's extension).
//!
//! Both formats describe an undirected graph by adjacency lists: every edge appears
//! twice, once on each end's line, with the same weight. Each listing becomes one
//! directed message, so an edge of weight `w` between `a` and `b` is a message of `w`
//! bytes `a → b` and one of `w` bytes `b → a`; without edge weights `w` is 1. Scotch's
//! communication cost of a mapping (Σ over edges of weight × distance, each edge once)
//! is therefore half of copr's hop-bytes of the same mapping. Vertex weights (loads,
//! sizes) are checked for form and ignored: copr places one task per slot.
//!
//! * **Scotch source graph** (`.grf`, `.src`): line 1 the version `0`; line 2 the
//!   number of vertices and of arcs (twice the edges); line 3 the base (0 or 1) and a
//!   three-digit flag (hundreds: vertex labels, tens: edge weights, units: vertex
//!   loads); then one line per vertex, `[label] [load] degree` and `degree` times
//!   `[weight] neighbour`. Neighbours are numbered from the base, or, with labels, named
//!   by their labels; the tasks are then the vertices in increasing label order (labels
//!   `0..n` make task = label), else in line order. Blank lines are skipped.
//! * **METIS graph** (`.graph`, `.metis`): lines beginning with `%` are comments; the
//!   first other line is `n m [fmt [ncon]]` (`m` edges, each counted once; `fmt` up to
//!   three digits: hundreds vertex sizes, tens vertex weights, units edge weights;
//!   `ncon` weights per vertex, 1 by default); then one line per vertex in task order
//!   (an empty line is a vertex without neighbours): `[size] [weight × ncon]` and
//!   pairs `neighbour [weight]`, neighbours numbered from 1, edge weights at least 1.
//!
//! Every departure (counts that disagree with the lines, an edge listed from one end
//! only or with two weights, a neighbour out of range or listed twice, a self-loop, a
//! field that is not a non-negative integer) is refused with its line number. Counts
//! are checked against the file's lines and bytes before anything is allocated for
//! them.

/// One directed message as read: (sender, receiver, bytes).
pub(crate) type Message = (u32, u32, u64);

/// Which of the two formats a file is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GraphFormat {
    /// Scotch's source graph (`.grf`, `.src`).
    Scotch,
    /// METIS's graph file (`.graph`, `.metis`).
    Metis,
}

impl GraphFormat {
    /// The format a lower-case file extension names, if any.
    pub(crate) fn of_extension(ext: &str) -> Option<Self> {
        match ext {
            "grf" | "src" => Some(Self::Scotch),
            "graph" | "metis" => Some(Self::Metis),
            _ => None,
        }
    }

    /// Reads `text` in this format: the number of tasks and the directed messages
    /// (module docs); more than `max_tasks` vertices are refused before anything is
    /// allocated for them, `why` saying why.
    ///
    /// # Errors
    /// One line naming the line of the file and what is wrong there.
    pub(crate) fn read(
        self,
        text: &str,
        max_tasks: usize,
        why: &str,
    ) -> Result<(usize, Vec<Message>), String> {
        let limit = Limit { max_tasks, why };
        match self {
            Self::Scotch => read_scotch(text, limit),
            Self::Metis => read_metis(text, limit),
        }
    }
}

/// For an edge list that could not be read: the reason, and a hint when the text is
/// plainly a Scotch or METIS graph under another name.
pub(crate) fn hint_for_edge_list(text: &str, detail: String) -> String {
    match sniff(text) {
        Some(GraphFormat::Scotch) => {
            format!("{detail} (this is a Scotch source graph: name it .grf to read it as one)")
        }
        Some(GraphFormat::Metis) => format!(
            "{detail} (this looks like a METIS graph file: name it .graph to read it as one)"
        ),
        None => detail,
    }
}

/// Which format the text plainly is: a Scotch header (`0`, two counts, base and
/// flag on three lines) or a METIS file beginning with a `%` comment.
fn sniff(text: &str) -> Option<GraphFormat> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next()?;
    if first.starts_with('%') {
        return Some(GraphFormat::Metis);
    }
    let two = lines.next().map(|l| l.split_whitespace().count());
    let three: Option<Vec<&str>> = lines.next().map(|l| l.split_whitespace().collect());
    match (first, two, three.as_deref()) {
        ("0", Some(2), Some([base, flag]))
            if matches!(*base, "0" | "1") && flag.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(GraphFormat::Scotch)
        }
        _ => None,
    }
}

/// The most tasks a pattern may have, and why.
#[derive(Clone, Copy)]
struct Limit<'a> {
    max_tasks: usize,
    why: &'a str,
}

/// One listing of a neighbour: (task, neighbour task, weight, line).
type Arc = (u32, u32, u64, usize);

/// Parses a non-negative integer field.
fn num(tok: &str, ln: usize, what: &str) -> Result<u64, String> {
    tok.parse::<u64>()
        .map_err(|_| format!("line {ln}: {what} `{tok}` is not a non-negative integer"))
}

/// Checks a vertex count and an arc count against the file before they size anything:
/// `lines` vertex lines at most follow the header, and every arc takes at least two
/// bytes of the file.
fn check_counts(
    limit: Limit<'_>,
    n: u64,
    arcs: u128,
    lines: usize,
    bytes: usize,
    ln: usize,
) -> Result<usize, String> {
    if n == 0 {
        return Err(format!(
            "line {ln}: the header declares 0 vertices: nothing to map"
        ));
    }
    if n > limit.max_tasks as u64 {
        return Err(format!(
            "line {ln}: {n} vertices: at most {} tasks are supported ({})",
            limit.max_tasks, limit.why
        ));
    }
    if n > lines as u64 {
        return Err(format!(
            "line {ln}: the header declares {n} vertices but only {lines} vertex lines \
             follow: the file is truncated or the count is wrong"
        ));
    }
    if arcs > (bytes / 2) as u128 {
        return Err(format!(
            "line {ln}: the header declares {arcs} neighbour listings, more than a file \
             of {bytes} bytes can hold"
        ));
    }
    Ok(n as usize)
}

/// Reads a Scotch source graph (module docs).
fn read_scotch(text: &str, limit: Limit<'_>) -> Result<(usize, Vec<Message>), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    let not_scotch = "not a Scotch source graph (a METIS graph file is read under the \
                      name .graph or .metis, an edge list under any other name)";
    let Some((ln, first)) = lines.next() else {
        return Err("the file is empty: nothing to map".into());
    };
    let first = first.trim();
    if first.starts_with('%') {
        return Err(format!(
            "line {ln}: a `%` comment: this is a METIS graph file, not a Scotch source \
             graph; name it .graph or .metis"
        ));
    }
    if first != "0" {
        return Err(format!(
            "line {ln}: expected Scotch's version line `0`, found `{first}`: {not_scotch}"
        ));
    }
    let mut header = |what: &str| -> Result<(usize, u64, u64), String> {
        let Some((ln, l)) = lines.next() else {
            return Err(format!("the file ends before the header's {what}"));
        };
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 2 {
            return Err(format!(
                "line {ln}: expected {what}, found `{}`: {not_scotch}",
                l.trim()
            ));
        }
        Ok((ln, num(f[0], ln, what)?, num(f[1], ln, what)?))
    };
    let (ln2, n, arcs) = header("the vertex and arc counts `n arcs`")?;
    let (ln3, base, flag) = header("the base and the flag `base flag`")?;
    if base > 1 {
        return Err(format!("line {ln3}: base {base}: Scotch's base is 0 or 1"));
    }
    if flag > 111 || flag % 10 > 1 || (flag / 10) % 10 > 1 {
        return Err(format!(
            "line {ln3}: flag `{flag}`: expected three digits 0 or 1 (labels, edge \
             weights, vertex loads)"
        ));
    }
    let (labels, weights, loads) = (flag >= 100, (flag / 10) % 10 == 1, flag % 10 == 1);
    if arcs % 2 == 1 {
        return Err(format!(
            "line {ln2}: {arcs} arcs: every edge is listed from both ends, so the arc \
             count is even"
        ));
    }
    let rest = text
        .lines()
        .skip(ln3)
        .filter(|l| !l.trim().is_empty())
        .count();
    let n = check_counts(limit, n, u128::from(arcs), rest, text.len(), ln2)?;
    let mut line_of = Vec::with_capacity(n);
    let mut label_of: Vec<u64> = Vec::with_capacity(if labels { n } else { 0 });
    // grown as listings are read, never sized by the header's count
    let mut raw: Vec<(u32, u64, u64, usize)> = Vec::new();
    for v in 0..n {
        let Some((ln, l)) = lines.next() else {
            return Err("the file ends before its last vertex line".into());
        };
        let f: Vec<&str> = l.split_whitespace().collect();
        let mut it = f.iter();
        let ends = |what: &str| {
            format!(
                "line {ln}: vertex {}: the line ends before its {what}",
                v + 1
            )
        };
        if labels {
            let t = it.next().ok_or_else(|| ends("label"))?;
            label_of.push(num(t, ln, "label")?);
        }
        if loads {
            let t = it.next().ok_or_else(|| ends("vertex load"))?;
            num(t, ln, "vertex load")?;
        }
        let degree = num(it.next().ok_or_else(|| ends("degree"))?, ln, "degree")?;
        let per = if weights { 2 } else { 1 };
        let left = it.len() as u64;
        if degree.checked_mul(per) != Some(left) {
            return Err(format!(
                "line {ln}: degree {degree} needs {} more fields, found {left}",
                u128::from(degree) * u128::from(per)
            ));
        }
        if raw.len() as u64 + degree > arcs {
            return Err(format!(
                "line {ln}: more neighbour listings than the {arcs} arcs line {ln2} declares"
            ));
        }
        for pair in it.as_slice().chunks(per as usize) {
            let w = if weights {
                num(pair[0], ln, "edge weight")?
            } else {
                1
            };
            let nb = num(pair[per as usize - 1], ln, "neighbour")?;
            raw.push((v as u32, nb, w, ln));
        }
        line_of.push(ln);
    }
    if let Some((ln, l)) = lines.next() {
        return Err(format!(
            "line {ln}: `{}` after the {n} vertex lines line {ln2} declares",
            l.trim()
        ));
    }
    if raw.len() as u64 != arcs {
        return Err(format!(
            "line {ln2}: declares {arcs} arcs but the vertex lines list {}",
            raw.len()
        ));
    }
    // the task of each vertex (line order, or increasing label order) and the number
    // the file gives it
    let (task_of_line, name): (Vec<u32>, Vec<u64>) = if labels {
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by_key(|&v| label_of[v as usize]);
        if let Some(w) = order
            .windows(2)
            .find(|w| label_of[w[0] as usize] == label_of[w[1] as usize])
        {
            let (a, b) = (w[0] as usize, w[1] as usize);
            let (first, second) = (line_of[a].min(line_of[b]), line_of[a].max(line_of[b]));
            return Err(format!(
                "line {second}: label {} is also the label on line {first}: labels name one \
                 vertex each",
                label_of[a]
            ));
        }
        let mut task = vec![0u32; n];
        for (t, &v) in order.iter().enumerate() {
            task[v as usize] = t as u32;
        }
        let names = order.iter().map(|&v| label_of[v as usize]).collect();
        (task, names)
    } else {
        (
            (0..n as u32).collect(),
            (0..n as u64).map(|v| v + base).collect(),
        )
    };
    let mut arcs_out: Vec<Arc> = Vec::with_capacity(raw.len());
    for &(v, nb, w, ln) in &raw {
        let to = if labels {
            name.binary_search(&nb)
                .map_err(|_| format!("line {ln}: neighbour {nb} is no vertex's label"))?
                as u32
        } else {
            match nb.checked_sub(base) {
                Some(t) if t < n as u64 => t as u32,
                _ => {
                    return Err(format!(
                        "line {ln}: neighbour {nb} is outside the vertices {base}..={}",
                        n as u64 - 1 + base
                    ))
                }
            }
        };
        arcs_out.push((task_of_line[v as usize], to, w, ln));
    }
    let mut line_of_task = vec![0; n];
    for (v, &t) in task_of_line.iter().enumerate() {
        line_of_task[t as usize] = line_of[v];
    }
    symmetric(n, arcs_out, &line_of_task, &name)
}

/// Reads a METIS graph file (module docs).
fn read_metis(text: &str, limit: Limit<'_>) -> Result<(usize, Vec<Message>), String> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.starts_with('%'));
    let Some((ln, head)) = lines.by_ref().find(|(_, l)| !l.trim().is_empty()) else {
        return Err("the file holds no header `n m [fmt [ncon]]`: nothing to map".into());
    };
    let f: Vec<&str> = head.split_whitespace().collect();
    if f == ["0"] {
        return Err(format!(
            "line {ln}: `0` alone: this looks like a Scotch source graph (version line `0`), \
             not a METIS graph file; name it .grf"
        ));
    }
    if !(2..=4).contains(&f.len()) {
        return Err(format!(
            "line {ln}: expected METIS's header `n m [fmt [ncon]]`, found `{}`",
            head.trim()
        ));
    }
    let n = num(f[0], ln, "vertex count")?;
    let m = num(f[1], ln, "edge count")?;
    let fmt = match f.get(2) {
        Some(t) if t.len() <= 3 && t.bytes().all(|b| b == b'0' || b == b'1') => num(t, ln, "fmt")?,
        Some(t) => {
            return Err(format!(
                "line {ln}: fmt `{t}`: expected up to three digits 0 or 1 (vertex sizes, \
                 vertex weights, edge weights)"
            ))
        }
        None => 0,
    };
    let (sizes, vweights, eweights) = (fmt >= 100, (fmt / 10) % 10 == 1, fmt % 10 == 1);
    let ncon = match f.get(3) {
        Some(t) if !vweights => {
            return Err(format!(
                "line {ln}: ncon `{t}` given but fmt {fmt:03} has no vertex weights"
            ))
        }
        Some(t) => num(t, ln, "ncon")?,
        None => u64::from(vweights),
    };
    let rest = text
        .lines()
        .skip(ln)
        .filter(|l| !l.starts_with('%'))
        .count();
    let n = check_counts(limit, n, 2 * u128::from(m), rest, text.len(), ln)?;
    let prefix = u64::from(sizes) + ncon;
    let per = if eweights { 2 } else { 1 };
    // grown as listings are read, never sized by the header's count
    let mut arcs: Vec<Arc> = Vec::new();
    let mut line_of = Vec::with_capacity(n);
    for v in 0..n {
        let Some((lv, l)) = lines.next() else {
            return Err("the file ends before its last vertex line".into());
        };
        let f: Vec<&str> = l.split_whitespace().collect();
        if (f.len() as u64) < prefix || (f.len() as u64 - prefix) % per != 0 {
            return Err(format!(
                "line {lv}: vertex {}: expected {prefix} vertex size and weight fields, \
                 then {} per neighbour; found {} fields",
                v + 1,
                if eweights {
                    "`neighbour weight`"
                } else {
                    "one"
                },
                f.len()
            ));
        }
        for (k, t) in f[..prefix as usize].iter().enumerate() {
            let what = if sizes && k == 0 {
                "vertex size"
            } else {
                "vertex weight"
            };
            num(t, lv, what)?;
        }
        if arcs.len() as u128 + ((f.len() as u64 - prefix) / per) as u128 > 2 * u128::from(m) {
            return Err(format!(
                "line {lv}: more neighbour listings than the {m} edges of line {ln} \
                 (each listed from both ends) allow"
            ));
        }
        for pair in f[prefix as usize..].chunks(per as usize) {
            let nb = num(pair[0], lv, "neighbour")?;
            if nb == 0 || nb > n as u64 {
                return Err(format!(
                    "line {lv}: neighbour {nb} is outside the vertices 1..={n}"
                ));
            }
            let w = if eweights {
                let w = num(pair[1], lv, "edge weight")?;
                if w == 0 {
                    return Err(format!(
                        "line {lv}: edge weight 0: METIS's edge weights are at least 1"
                    ));
                }
                w
            } else {
                1
            };
            arcs.push((v as u32, (nb - 1) as u32, w, lv));
        }
        line_of.push(lv);
    }
    if let Some((lx, l)) = lines.find(|(_, l)| !l.trim().is_empty()) {
        return Err(format!(
            "line {lx}: `{}` after the {n} vertex lines line {ln} declares",
            l.trim()
        ));
    }
    if arcs.len() as u128 != 2 * u128::from(m) {
        return Err(format!(
            "line {ln}: declares {m} edges but the vertex lines list {} neighbours \
             (every edge twice: {} expected)",
            arcs.len(),
            2 * u128::from(m)
        ));
    }
    let name: Vec<u64> = (1..=n as u64).collect();
    symmetric(n, arcs, &line_of, &name)
}

/// Checks that every listing `a → b` of weight `w` has its reverse `b → a` of weight
/// `w`, once, and no vertex lists itself; returns the messages, one per listing.
/// `line_of[t]` is task `t`'s line and `name[t]` its number in the file.
fn symmetric(
    n: usize,
    mut arcs: Vec<Arc>,
    line_of: &[usize],
    name: &[u64],
) -> Result<(usize, Vec<Message>), String> {
    if let Some(&(a, _, _, ln)) = arcs.iter().find(|&&(a, b, _, _)| a == b) {
        return Err(format!(
            "line {ln}: vertex {} lists itself: self-loops are refused",
            name[a as usize]
        ));
    }
    arcs.sort_unstable_by_key(|&(a, b, _, _)| (a, b));
    if let Some(w) = arcs
        .windows(2)
        .find(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1))
    {
        return Err(format!(
            "line {}: vertex {} lists neighbour {} twice",
            w[1].3, name[w[1].0 as usize], name[w[1].1 as usize]
        ));
    }
    for &(a, b, w, ln) in &arcs {
        match arcs.binary_search_by_key(&(b, a), |&(x, y, _, _)| (x, y)) {
            Err(_) => {
                return Err(format!(
                    "line {ln}: vertex {} lists {} but vertex {}'s line {} does not list {}: \
                     every edge is listed from both ends",
                    name[a as usize],
                    name[b as usize],
                    name[b as usize],
                    line_of[b as usize],
                    name[a as usize]
                ))
            }
            Ok(k) if arcs[k].2 != w => {
                return Err(format!(
                    "line {ln}: the edge {}-{} weighs {w} here but {} on line {}: both ends \
                     must give one weight",
                    name[a as usize], name[b as usize], arcs[k].2, arcs[k].3
                ))
            }
            Ok(_) => {}
        }
    }
    Ok((n, arcs.into_iter().map(|(a, b, w, _)| (a, b, w)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scotch(text: &str) -> Result<(usize, Vec<Message>), String> {
        GraphFormat::Scotch.read(text, 1 << 22, "the limit")
    }

    fn metis(text: &str) -> Result<(usize, Vec<Message>), String> {
        GraphFormat::Metis.read(text, 1 << 22, "the limit")
    }

    /// The messages sorted, for comparison with a list written by hand.
    fn sorted(r: Result<(usize, Vec<Message>), String>) -> (usize, Vec<Message>) {
        let (n, mut m) = r.unwrap();
        m.sort_unstable();
        (n, m)
    }

    /// The error, which must begin with `start` and hold `part`, on one line.
    fn refused(r: Result<(usize, Vec<Message>), String>, start: &str, part: &str) {
        let e = r.expect_err(start);
        assert!(e.starts_with(start), "`{e}` should begin with `{start}`");
        assert!(e.contains(part), "`{e}` should contain `{part}`");
        assert!(!e.contains('\n'), "`{e}` is one line");
    }

    /// Tasks 0-1 5 bytes, 0-2 1, 1-2 2, 2-3 7, each way; task 4 isolated.
    fn hand() -> (usize, Vec<Message>) {
        let mut m = Vec::new();
        for (a, b, w) in [(0, 1, 5), (0, 2, 1), (1, 2, 2), (2, 3, 7)] {
            m.push((a, b, w));
            m.push((b, a, w));
        }
        m.sort_unstable();
        (5, m)
    }

    #[test]
    fn scotch_by_lines_and_by_labels() {
        let plain = "0\n5 8\n0 010\n2 5 1 1 2\n2 5 0 2 2\n3 1 0 2 1 7 3\n1 7 2\n0\n";
        assert_eq!(sorted(scotch(plain)), hand());
        // base 1, CRLF, blank lines skipped
        let based =
            "0\r\n5 8\r\n1 010\r\n\r\n2 5 2 1 3\r\n2 5 1 2 3\r\n3 1 1 2 2 7 4\r\n1 7 3\r\n0\r\n";
        assert_eq!(sorted(scotch(based)), hand());
        // labels (task t has label 10(t+1)), loads, lines out of order: the tasks are
        // the labels' order, not the lines'
        let labelled = "0\n5 8\n1 111\n40 1 1 7 30\n10 9 2 5 20 1 30\n50 1 0\n\
                        30 1 3 1 10 2 20 7 40\n20 1 2 5 10 2 30\n";
        assert_eq!(sorted(scotch(labelled)), hand());
        // labels 0..n scrambled: task = label
        let relabelled = "0\n3 4\n0 100\n2 1 1\n0 1 1\n1 2 0 2\n";
        assert_eq!(
            sorted(scotch(relabelled)),
            (3, vec![(0, 1, 1), (1, 0, 1), (1, 2, 1), (2, 1, 1)])
        );
        // without weights, 1 byte each way
        assert_eq!(
            sorted(scotch("0\n2 2\n0 000\n1 1\n1 0\n")),
            (2, vec![(0, 1, 1), (1, 0, 1)])
        );
    }

    #[test]
    fn metis_with_and_without_weights() {
        let weighted =
            "% a comment\n5 4 11\n% another\n1 2 5 3 1\n1 1 5 3 2\n1 1 1 2 2 4 7\n1 3 7\n1\n";
        assert_eq!(sorted(metis(weighted)), hand());
        let sized = "5 4 111 2\r\n1 1 1 2 5 3 1\r\n1 1 1 1 5 3 2\r\n1 1 1 1 1 2 2 4 7\r\n1 1 1 3 7\r\n1 1 1\r\n";
        assert_eq!(sorted(metis(sized)), hand());
        // an empty line is a vertex without neighbours; the last one too
        let plain = "4 2\n2 3\n1\n1\n\n";
        assert_eq!(
            sorted(metis(plain)),
            (4, vec![(0, 1, 1), (0, 2, 1), (1, 0, 1), (2, 0, 1)])
        );
    }

    #[test]
    fn scotch_errors_name_the_line() {
        let cases = [
            (
                "0\n5 8\n0 000\n1 1\n1 0\n0\n0\n",
                "line 2: the header declares 5",
                "only 4 vertex lines",
            ),
            (
                "0\n3 6\n0 000\n1 1\n1 0\n0\n",
                "line 2: declares 6 arcs",
                "list 2",
            ),
            ("0\n3 3\n0 000\n1 1\n1 0\n0\n", "line 2: 3 arcs", "even"),
            (
                "0\n3 2\n0 000\n1 1\n1 2\n0\n",
                "line 4: vertex 0 lists 1",
                "line 5 does not list 0",
            ),
            ("0\n2 2\n0 000\n1 5\n1 0\n", "line 4: neighbour 5", "0..=1"),
            ("0\n2 2\n1 000\n1 0\n1 1\n", "line 4: neighbour 0", "1..=2"),
            (
                "0\n2 2\n0 000\n1 0\n1 0\n",
                "line 4: vertex 0 lists itself",
                "self-loop",
            ),
            (
                "0\n2 4\n0 000\n2 1 1\n2 0 0\n",
                "line 4: vertex 0 lists neighbour 1 twice",
                "",
            ),
            (
                "0\n2 2\n0 010\n1 3 1\n1 4 0\n",
                "line 4: the edge 0-1 weighs 3",
                "4 on line 5",
            ),
            (
                "0\n2 2\n0 010\n1 -3 1\n1 3 0\n",
                "line 4: edge weight `-3`",
                "non-negative integer",
            ),
            (
                "0\n2 2\n0 010\n1 2.5 1\n1 2.5 0\n",
                "line 4: edge weight `2.5`",
                "integer",
            ),
            (
                "0\n2 2\n0 001\n-1 1 1\n1 1 0\n",
                "line 4: vertex load `-1`",
                "integer",
            ),
            (
                "0\n1000000000000 2\n0 000\n1 1\n1 0\n",
                "line 2: 1000000000000 vertices",
                "4194304",
            ),
            (
                "0\n4000000 2\n0 000\n1 1\n1 0\n",
                "line 2: the header declares 4000000",
                "only 2",
            ),
            (
                "0\n2 100000000000\n0 000\n1 1\n1 0\n",
                "line 2: the header declares 100000000000",
                "bytes",
            ),
            (
                "0\n3 4\n0 000\n1 1\n2 0 2\n1",
                "line 6: degree 1 needs 1 more fields",
                "found 0",
            ),
            (
                "0\n3 4\n0 000\n1 1\n2 0 2\n1 1 7\n",
                "line 6: degree 1 needs 1",
                "found 2",
            ),
            (
                "0\n2 2\n0 000\n1 1\n1 0\n1 0\n",
                "line 6: `1 0` after the 2 vertex lines",
                "",
            ),
            ("0\n2 2\n2 000\n1 1\n1 0\n", "line 3: base 2", "0 or 1"),
            ("0\n2 2\n0 020\n1 1\n1 0\n", "line 3: flag `20`", "0 or 1"),
            (
                "0\n2 2\n0 100\n7 1 7\n7 1 7\n",
                "line 5: label 7 is also the label on line 4",
                "",
            ),
            (
                "0\n2 2\n0 100\n7 1 8\n8 1 9\n",
                "line 5: neighbour 9 is no vertex's label",
                "",
            ),
            (
                "1\n2 2\n0 000\n1 1\n1 0\n",
                "line 1: expected Scotch's version line `0`",
                ".graph",
            ),
            (
                "5 4 11\n2 5 3 1\n",
                "line 1: expected Scotch's version line `0`",
                "METIS",
            ),
            ("% metis\n2 1\n2\n1\n", "line 1: a `%` comment", ".graph"),
            ("0\n2\n", "line 2: expected the vertex and arc counts", ""),
            ("0\n", "the file ends before the header", ""),
            ("", "the file is empty", ""),
            (
                "0\n0 0\n0 000\n",
                "line 2: the header declares 0 vertices",
                "",
            ),
        ];
        for (text, start, part) in cases {
            refused(scotch(text), start, part);
        }
    }

    #[test]
    fn metis_errors_name_the_line() {
        let cases = [
            (
                "3 1\n2\n1\n",
                "line 1: the header declares 3 vertices",
                "only 2 vertex lines",
            ),
            ("3 2\n2\n1\n\n", "line 1: declares 2 edges", "4 expected"),
            (
                "3 1\n2\n3\n\n",
                "line 2: vertex 1 lists 2",
                "line 3 does not list 1",
            ),
            ("2 1\n3\n1\n", "line 2: neighbour 3", "1..=2"),
            ("2 1\n0\n1\n", "line 2: neighbour 0", "1..=2"),
            ("2 1\n1\n2\n", "line 2: vertex 1 lists itself", "self-loop"),
            (
                "2 2\n2 2\n1 1\n",
                "line 2: vertex 1 lists neighbour 2 twice",
                "",
            ),
            (
                "2 1 1\n2 3\n1 4\n",
                "line 2: the edge 1-2 weighs 3",
                "4 on line 3",
            ),
            ("2 1 1\n2 -3\n1 -3\n", "line 2: edge weight `-3`", "integer"),
            (
                "2 1 1\n2 1.5\n1 1.5\n",
                "line 2: edge weight `1.5`",
                "integer",
            ),
            ("2 1 1\n2 0\n1 0\n", "line 2: edge weight 0", "at least 1"),
            (
                "2 1 10\n-1 2\n1 1\n",
                "line 2: vertex weight `-1`",
                "integer",
            ),
            (
                "2 1 1\n2\n1 1\n",
                "line 2: vertex 1: expected 0 vertex size",
                "found 1 fields",
            ),
            (
                "1000000000000 1\n",
                "line 1: 1000000000000 vertices",
                "4194304",
            ),
            (
                "% c\n4000000 1\n2\n1\n",
                "line 2: the header declares 4000000",
                "only 2",
            ),
            (
                "2 100000000000\n2\n1\n",
                "line 1: the header declares 200000000000",
                "bytes",
            ),
            (
                "3 2 1\n2 4 3 5\n1 4\n1",
                "line 4: vertex 3: expected 0",
                "found 1 fields",
            ),
            ("2 1\n2\n1\n1\n", "line 4: `1` after the 2 vertex lines", ""),
            ("2 1 2\n2\n1\n", "line 1: fmt `2`", "0 or 1"),
            ("2 1 1 2\n2 1\n1 1\n", "line 1: ncon `2` given", "001"),
            ("0\n2 2\n0 000\n1 1\n1 0\n", "line 1: `0` alone", ".grf"),
            ("0 1 100\n", "line 1: the header declares 0 vertices", ""),
            ("1 2 3 4 5\n", "line 1: expected METIS's header", ""),
            ("% only a comment\n", "the file holds no header", ""),
        ];
        for (text, start, part) in cases {
            refused(metis(text), start, part);
        }
    }

    #[test]
    fn an_edge_list_holding_a_scotch_or_metis_graph_is_named() {
        let s = hint_for_edge_list("0\n2 2\n0 000\n1 1\n1 0\n", "line 1: x".into());
        assert!(
            s.starts_with("line 1: x") && s.contains("name it .grf"),
            "{s}"
        );
        let m = hint_for_edge_list("% c\n2 1\n2\n1\n", "line 2: x".into());
        assert!(m.contains("name it .graph"), "{m}");
        assert_eq!(
            hint_for_edge_list("0 1 5\n", "line 1: x".into()),
            "line 1: x"
        );
    }
}
