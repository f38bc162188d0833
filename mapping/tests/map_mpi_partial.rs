//! A reordered communicator on nodes that run different numbers of ranks (feature
//! `mpi`), driven by `scripts/mpi-tests.sh`:
//!
//! ```text
//! mpirun -n P [-x COPR_EMULATE_NODE_SIZE=3,2,1 | -x COPR_PLACEMENT=F | -x COPR_MACHINE=F] \
//!     map_mpi_partial PATTERN OUT
//! ```
//!
//! Every rank reads the pattern (a graph file of P tasks), builds copr's mapping of it
//! for the machine the environment names (`plan_mapping`, as the interposer does) and
//! the reordered communicator (`reorder`), and checks:
//! - the new communicator holds exactly the job's P ranks, each once, in the order the
//!   mapping says (the world ranks gathered in new-rank order);
//! - every rank runs on the node the mapping put its task on: for a placement file,
//!   the node the file names; for emulated node sizes, the node the sizes give;
//! - every task exchanges with its pattern neighbours through the new communicator
//!   (one message per ordered pair, `bytes / 8` words, at most 16 384), each message
//!   carrying the sender's world rank and values derived from (sender task, receiver
//!   task, index), checked element by element on receipt.
//!
//! Rank 0 writes `OUT`: `TASK NODE` per task (the node of the rank that runs it), for
//! the script to compare with `copr map`'s rankfile of the same pattern and machine,
//! and a `# reordered yes|no` line. Exit status 0 when every check holds, 1 when one
//! fails (the failures on standard error), 2 for a bad input (one line on standard
//! error from rank 0, the same verdict on every rank).

use std::collections::BTreeMap;
use std::time::Duration;

use copr_mapping::mpi::{machine_of, plan_mapping, reorder, MachineSource};
use copr_mapping::{Options, Pattern};
use copr_topology::Placement;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

/// Longest message, in 8-byte words.
const MAX_WORDS: u64 = 1 << 14;

/// The value word `i` of the message from task `src` to task `dst` carries.
fn value(src: usize, dst: usize, i: usize) -> u64 {
    let x = (src as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((dst as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
        .wrapping_add(i as u64);
    x ^ (x >> 29)
}

/// The same verdict on every rank: the error of the lowest rank that failed, printed
/// once by rank 0 as one line, then exit 2 everywhere; the value otherwise.
fn or_exit<T>(world: &SimpleCommunicator, r: copr::Result<T>) -> T {
    let p = world.size() as usize;
    let mut failed = vec![0u8; p];
    world.all_gather_into(&u8::from(r.is_err()), &mut failed[..]);
    if failed.iter().all(|&f| f == 0) {
        return r.unwrap_or_else(|_| unreachable!("every rank succeeded"));
    }
    let lowest = failed.iter().position(|&f| f != 0).unwrap_or(0) as i32;
    // the lowest failing rank's message reaches rank 0
    let mut len = 0u64;
    let mut text = Vec::new();
    if let Err(e) = &r {
        text = e.to_string().replace('\n', " ").into_bytes();
        len = text.len() as u64;
    }
    world.process_at_rank(lowest).broadcast_into(&mut len);
    text.resize(len as usize, b' ');
    world.process_at_rank(lowest).broadcast_into(&mut text[..]);
    if world.rank() == 0 {
        eprintln!("map_mpi_partial: {}", String::from_utf8_lossy(&text));
    }
    world.barrier();
    std::process::exit(2);
}

/// The node (index) of every world rank under `COPR_EMULATE_NODE_SIZE`'s counts,
/// computed here independently of the library: node `k` holds the next `counts[k]`.
fn emulated_nodes(counts: &[usize], p: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(p);
    for (k, &c) in counts.iter().enumerate() {
        out.extend(std::iter::repeat_n(k, c));
    }
    out.truncate(p);
    out
}

/// Without arguments: a ring of `p` tasks (1 KiB each way) written to a file of this
/// process's own, and where the placement goes.
fn ring_files(p: usize) -> copr::Result<(String, String)> {
    let dir = std::env::temp_dir().join(format!("map_mpi_partial-{}", std::process::id()));
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| copr::Error::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let mut text = format!("tasks {p}\n");
    for t in 0..p {
        let u = (t + 1) % p;
        if u != t {
            text += &format!("{t} {u} 1024\n{u} {t} 1024\n");
        }
    }
    let pattern = dir.join("ring.txt");
    std::fs::write(&pattern, text).map_err(io(&pattern))?;
    let out = dir.join("placement.out");
    Ok((pattern.display().to_string(), out.display().to_string()))
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let args: Vec<String> = std::env::args().collect();
    let usage = copr::Error::Argument("usage: map_mpi_partial [PATTERN OUT]".into());
    let (pattern_file, out_file) = or_exit(
        &world,
        match args.as_slice() {
            [_, a, b] => Ok((a.clone(), b.clone())),
            // `cargo test` runs it without arguments: a ring of the job's ranks
            [_] => ring_files(p),
            _ => Err(usage),
        },
    );
    let source = or_exit(&world, MachineSource::from_env());
    let pattern = or_exit(
        &world,
        Pattern::from_file(std::path::Path::new(&pattern_file)),
    );
    // `copr map`'s defaults: seed 1, 10 s (a pattern this small ends much sooner)
    let opts = Options {
        seed: 1,
        budget: Duration::from_secs(10),
    };
    let planned = or_exit(&world, plan_mapping(&world, &pattern, &source, &opts));
    let (machine, slot) = or_exit(&world, machine_of(&world, &source));
    let ranks = planned.ranks.clone();
    let comm = or_exit(&world, reorder(&world, &ranks));
    let mut errs: Vec<String> = Vec::new();

    // exactly the job's ranks, each once, in the mapping's order
    let task = comm.rank() as usize;
    if comm.size() as usize != p || ranks.len() != p || ranks.apply(task) != me {
        errs.push(format!(
            "rank {me}: new rank {task} of {}, the mapping gives task {task} to rank {}",
            comm.size(),
            ranks.apply(task.min(p - 1))
        ));
    }
    let mut order = vec![0u64; p];
    comm.all_gather_into(&(me as u64), &mut order[..]);
    let want: Vec<u64> = ranks.forward().iter().map(|&r| r as u64).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if order != want || sorted != (0..p as u64).collect::<Vec<_>>() {
        errs.push(format!(
            "world ranks in new-rank order {order:?}, expected {want:?}"
        ));
    }

    // the node this rank runs on, as the launch (emulated or placed) says
    let my_node = machine.node_name(machine.node_of_slot(slot.apply(me)));
    if !machine.has_slot(slot.apply(me)) {
        errs.push(format!(
            "rank {me} sits on slot {} that its node does not have",
            slot.apply(me)
        ));
    }
    match &source {
        MachineSource::Placement(f) => match Placement::from_file(f) {
            Ok(pl) if pl.node_name(pl.node_of(me)) == my_node => {}
            Ok(pl) => errs.push(format!(
                "rank {me}: the placement file says node `{}`, the machine `{my_node}`",
                pl.node_name(pl.node_of(me))
            )),
            Err(e) => errs.push(format!("rank {me}: {e}")),
        },
        MachineSource::EmulatedCounts(counts) => {
            let want = format!("node{}", emulated_nodes(counts, p)[me]);
            if my_node != want {
                errs.push(format!("rank {me}: on `{my_node}`, emulated on `{want}`"));
            }
        }
        _ => {}
    }

    // one message per ordered pair of neighbours, checked word by word
    let mut out: BTreeMap<usize, u64> = BTreeMap::new();
    let mut inn: BTreeMap<usize, u64> = BTreeMap::new();
    for e in pattern.edges() {
        let (s, d) = (e.src as usize, e.dst as usize);
        if s == d {
            continue;
        }
        if s == task {
            *out.entry(d).or_default() += e.bytes;
        }
        if d == task {
            *inn.entry(s).or_default() += e.bytes;
        }
    }
    let words = |bytes: u64| (bytes / 8).clamp(1, MAX_WORDS) as usize;
    let sends: Vec<(usize, Vec<u64>)> = out
        .iter()
        .map(|(&d, &b)| {
            let mut m = vec![me as u64];
            m.extend((0..words(b)).map(|i| value(task, d, i)));
            (d, m)
        })
        .collect();
    let mut recvs: Vec<(usize, Vec<u64>)> = inn
        .iter()
        .map(|(&s, &b)| (s, vec![u64::MAX; words(b) + 1]))
        .collect();
    mpi::request::scope(|sc| {
        let mut reqs = Vec::new();
        for (s, buf) in recvs.iter_mut() {
            reqs.push(
                comm.process_at_rank(*s as i32)
                    .immediate_receive_into_with_tag(sc, &mut buf[..], 7),
            );
        }
        let mut sreqs = Vec::new();
        for (d, m) in &sends {
            sreqs.push(
                comm.process_at_rank(*d as i32)
                    .immediate_send_with_tag(sc, &m[..], 7),
            );
        }
        for r in reqs {
            r.wait();
        }
        for r in sreqs {
            r.wait();
        }
    });
    let mut words_checked = 0u64;
    for (s, buf) in &recvs {
        if buf[0] != ranks.apply(*s) as u64 {
            errs.push(format!(
                "task {task}: the message of task {s} came from world rank {}, expected {}",
                buf[0],
                ranks.apply(*s)
            ));
        }
        let bad: Vec<usize> = (1..buf.len())
            .filter(|&i| buf[i] != value(*s, task, i - 1))
            .collect();
        words_checked += buf.len() as u64 - 1;
        if let Some(&i) = bad.first() {
            errs.push(format!(
                "task {task}: {} of {} words from task {s} differ, the first at {}: {} != {}",
                bad.len(),
                buf.len() - 1,
                i - 1,
                buf[i],
                value(*s, task, i - 1)
            ));
        }
    }
    let mut total_words = 0u64;
    world.all_reduce_into(
        &words_checked,
        &mut total_words,
        mpi::collective::SystemOperation::sum(),
    );
    let expected_words: u64 = {
        let mut pairs: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for e in pattern.edges().iter().filter(|e| e.src != e.dst) {
            *pairs.entry((e.src, e.dst)).or_default() += e.bytes;
        }
        pairs.values().map(|&b| words(b) as u64).sum()
    };
    if total_words != expected_words {
        errs.push(format!(
            "{total_words} words checked in all, the pattern sends {expected_words}"
        ));
    }

    // the node of every task, for the comparison with `copr map`
    let mut nodes_len = vec![0u64; p];
    let mine = my_node.as_bytes();
    world.all_gather_into(&(mine.len() as u64), &mut nodes_len[..]);
    let longest = nodes_len.iter().copied().max().unwrap_or(0) as usize;
    let mut padded = mine.to_vec();
    padded.resize(longest, 0);
    let mut all = vec![0u8; longest * p];
    world.all_gather_into(&padded[..], &mut all[..]);
    if me == 0 {
        let name = |r: usize| {
            let c = &all[r * longest..(r + 1) * longest];
            String::from_utf8_lossy(&c[..nodes_len[r] as usize]).into_owned()
        };
        let mut text = format!(
            "# reordered {}\n",
            if planned.reordered { "yes" } else { "no" }
        );
        for t in 0..p {
            text += &format!("{t} {}\n", name(ranks.apply(t)));
        }
        if let Err(e) = std::fs::write(&out_file, text) {
            errs.push(format!("writing {out_file}: {e}"));
        }
    }

    let mut counts = vec![0u64; p];
    world.all_gather_into(&(errs.len() as u64), &mut counts[..]);
    for e in errs.iter().take(8) {
        eprintln!("map_mpi_partial rank {me}/{p}: FAILED {e}");
    }
    let failures: u64 = counts.iter().sum();
    if me == 0 {
        println!(
            "map_mpi_partial: {p} ranks on {} ({} nodes, slots per node {}), reordered {}, {total_words} words checked, {failures} failures",
            source.describe(),
            machine.nodes(),
            (0..machine.nodes())
                .map(|k| machine.slot_count(k).to_string())
                .collect::<Vec<_>>()
                .join(","),
            planned.reordered
        );
    }
    drop(comm);
    drop(universe);
    if failures > 0 {
        std::process::exit(1);
    }
}
