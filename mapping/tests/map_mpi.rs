//! Mappings applied to a real MPI job (`copr_mapping::mpi`): nodes emulated with
//! placement files this program writes itself (packed and round-robin, two ranks per
//! node when the rank count is even) and the nodes discovered at run time; periodic,
//! mixed and non-periodic grids; the packed, round-robin, folded, tiles, Hilbert,
//! bisection, optimised and two seeded random mappings. For every case every process
//! checks that `cart_create` gave it the mapped grid position and rank, that
//! `MPI_Cart_shift` names the ranks of its grid neighbours, that it runs on the node
//! the mapping chose, exchanges checksummed messages with its neighbours along every
//! dimension in both directions, and checks that `reorder` renumbers the ranks the same
//! way. A distributed graph's out-edges gathered on rank 0 (`gather_out_edges`) must
//! be the graph every rank builds from the same formula, and `plan_mapping_at_root`
//! must map it. Then the collective error checks: wrong-length, inconsistent and malformed
//! arguments give the same error on every rank, and nothing hangs.
//!
//! A test program without the libtest harness (feature `mpi`): `cargo test --features
//! mpi --test map_mpi` runs it as a single rank; `scripts/mpi-tests.sh` runs the binary
//! under `mpirun -n 1, 3, 4, 8`. Exits non-zero on every rank if any rank found a
//! failure.

use std::path::{Path, PathBuf};
use std::time::Duration;

use copr_mapping::mpi::{
    broadcast_map, cart_create, discover_machine, discover_nodes, gather_out_edges,
    machine_from_placement, map_to_ranks, plan_mapping_at_root, reorder, MachineSource,
};
use copr_mapping::{
    baseline, evaluate, optimise, CartGrid, Edge, MapMachine, MpiError, Options, Pattern, Perm,
    Scored, SplitMix, Strategy,
};
use copr_topology::Placement;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

/// FNV-1a, to compare strings across ranks.
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Whether every rank holds the same string.
fn same_everywhere(world: &SimpleCommunicator, s: &str) -> bool {
    let mut all = vec![0u64; world.size() as usize];
    world.all_gather_into(&hash(s), &mut all[..]);
    all.iter().all(|&h| h == all[0])
}

/// The grid neighbour of `task` at `c_d + step` (wrapping when periodic).
fn neighbour(g: &CartGrid, task: usize, d: usize, step: i64) -> Option<usize> {
    let mut c = g.coords(task);
    let x = c[d] as i64 + step;
    let n = g.dims[d] as i64;
    c[d] = if (0..n).contains(&x) {
        x as usize
    } else if g.periodic[d] {
        x.rem_euclid(n) as usize
    } else {
        return None;
    };
    Some(g.task(&c))
}

/// The value a task sends: derived from its grid coordinates, the round, the dimension
/// and the direction.
fn code(g: &CartGrid, task: usize, round: usize, d: usize, forward: bool) -> u64 {
    let c = g.coords(task);
    let base = c.iter().fold(17u64, |h, &x| h * 1_000_003 + x as u64 + 1);
    base.wrapping_mul(31)
        .wrapping_add((round * 1000 + d * 10 + usize::from(forward)) as u64)
}

/// One mapping of a grid: `cart_create`, the coordinates, the neighbours, the node,
/// shifts with checksums, and `reorder`. Collective; returns this rank's failures.
fn run_case(
    world: &SimpleCommunicator,
    g: &CartGrid,
    machine: &MapMachine,
    placement: &Placement,
    slot_of_rank: &Perm,
    map: &Perm,
    label: &str,
) -> Vec<String> {
    let me = world.rank() as usize;
    let p = world.size() as usize;
    let mut errs = Vec::new();
    let ranks = match map_to_ranks(map, slot_of_rank) {
        Ok(r) => r,
        // deterministic in the arguments, so every rank stops here
        Err(e) => return vec![format!("{label}: map_to_ranks: {e}")],
    };
    let task = ranks.inverse()[me];
    if task != map.inverse()[slot_of_rank.apply(me)] {
        errs.push(format!(
            "{label}: rank {me}: task {task} is not the task of its slot"
        ));
    }
    // the process runs on the node the mapping chose for its task
    if machine.node_of_slot(map.apply(task)) != placement.node_of(me) {
        errs.push(format!(
            "{label}: rank {me} runs task {task} on node `{}` but the mapping puts it on `{}`",
            placement.node_name(placement.node_of(me)),
            machine.node_name(machine.node_of_slot(map.apply(task)))
        ));
    }
    let dims: Vec<i32> = g.dims.iter().map(|&d| d as i32).collect();
    let cart = match cart_create(world, &dims, &g.periodic, &ranks) {
        Ok(c) => c,
        // agreed on by every rank
        Err(e) => return vec![format!("{label}: cart_create: {e}")],
    };
    if cart.rank() as usize != task || cart.size() as usize != p {
        errs.push(format!(
            "{label}: rank {me}: grid rank {} of {}, expected {task} of {p}",
            cart.rank(),
            cart.size()
        ));
    }
    let layout = cart.get_layout();
    let want: Vec<i32> = g.coords(task).iter().map(|&c| c as i32).collect();
    if layout.coords != want || layout.dims != dims || layout.periods != g.periodic {
        errs.push(format!(
            "{label}: rank {me}: coordinates {:?} (dims {:?}, periods {:?}), expected {want:?} of task {task}",
            layout.coords, layout.dims, layout.periods
        ));
    }
    for d in 0..dims.len() {
        let (src, dst) = cart.shift(d as i32, 1);
        let want_src = neighbour(g, task, d, -1).map(|t| t as i32);
        let want_dst = neighbour(g, task, d, 1).map(|t| t as i32);
        if (src, dst) != (want_src, want_dst) {
            errs.push(format!(
                "{label}: rank {me} (task {task}): shift along {d} gives {src:?} -> {dst:?}, expected {want_src:?} -> {want_dst:?}"
            ));
        }
    }
    // shifts with checksums: every process sends [world rank, code of its grid
    // position] to its neighbour along each dimension in each direction and checks what
    // arrives. The peers are the ones MPI_Cart_shift names (always a consistent pairing,
    // so a wrong grid shows up as wrong values, never as a hang).
    let (mut got_sum, mut want_sum) = (0u64, 0u64);
    for round in 0..3 {
        for d in 0..dims.len() {
            let (src, dst) = cart.shift(d as i32, 1);
            for forward in [true, false] {
                let (to, from) = if forward { (dst, src) } else { (src, dst) };
                let expected_from = neighbour(g, task, d, if forward { -1 } else { 1 });
                let msg = [me as u64, code(g, task, round, d, forward)];
                let mut buf = [u64::MAX; 2];
                let tag = (round * 16 + d * 2 + usize::from(forward)) as i32;
                mpi::request::scope(|sc| {
                    let r = from.map(|f| {
                        cart.process_at_rank(f).immediate_receive_into_with_tag(
                            sc,
                            &mut buf[..],
                            tag,
                        )
                    });
                    let s = to.map(|t| {
                        cart.process_at_rank(t)
                            .immediate_send_with_tag(sc, &msg[..], tag)
                    });
                    if let Some(r) = r {
                        r.wait();
                    }
                    if let Some(s) = s {
                        s.wait();
                    }
                });
                let dir = if forward { "+" } else { "-" };
                match expected_from {
                    Some(f) => {
                        let want = [ranks.apply(f) as u64, code(g, f, round, d, forward)];
                        got_sum = got_sum.wrapping_add(buf[1]);
                        want_sum = want_sum.wrapping_add(want[1]);
                        if buf != want {
                            errs.push(format!(
                                "{label}: rank {me} (task {task}) round {round} dim {d} {dir}: received {buf:?} from task {f}, expected {want:?}"
                            ));
                        }
                    }
                    None if from.is_some() => errs.push(format!(
                        "{label}: rank {me} (task {task}) round {round} dim {d} {dir}: received {buf:?} across a non-periodic border"
                    )),
                    None => {}
                }
            }
        }
    }
    let mut sums = [0u64; 2];
    world.all_reduce_into(
        &[got_sum, want_sum][..],
        &mut sums[..],
        mpi::collective::SystemOperation::sum(),
    );
    if sums[0] != sums[1] {
        errs.push(format!(
            "{label}: global checksum {} != {}",
            sums[0], sums[1]
        ));
    }
    drop(cart);
    // reorder alone: rank `ranks.inverse()[me]`, and the world ranks in new-rank order
    // are `ranks.forward()`
    match reorder(world, &ranks) {
        Err(e) => errs.push(format!("{label}: reorder: {e}")),
        Ok(c) => {
            if c.rank() as usize != task {
                errs.push(format!(
                    "{label}: reorder gave rank {me} the rank {}, expected {task}",
                    c.rank()
                ));
            }
            let mut order = vec![0u64; p];
            c.all_gather_into(&(me as u64), &mut order[..]);
            let want: Vec<u64> = ranks.forward().iter().map(|&r| r as u64).collect();
            if order != want {
                errs.push(format!(
                    "{label}: world ranks in reordered order {order:?}, expected {want:?}"
                ));
            }
        }
    }
    errs
}

/// The grids run on `p` ranks: a 2-D grid as square as `p` allows with every
/// combination of periodic and non-periodic dimensions, a ring, and a 2x2x2 grid on 8
/// ranks.
fn grids(p: usize) -> Vec<CartGrid> {
    let a = (1..=p)
        .filter(|a| p % a == 0 && a * a <= p)
        .max()
        .unwrap_or(1);
    let mut out = Vec::new();
    for periodic in [[true, true], [false, true], [true, false], [false, false]] {
        out.push(CartGrid::new(vec![a, p / a], periodic.to_vec(), vec![1 << 20, 2 << 20]).unwrap());
    }
    out.push(CartGrid::new(vec![p], vec![true], vec![1 << 20]).unwrap());
    if p == 8 {
        out.push(
            CartGrid::new(vec![2, 2, 2], vec![true, false, true], vec![100, 200, 300]).unwrap(),
        );
    }
    out
}

/// Every mapping of `g` on `m`: the baselines that apply, the optimised one (computed
/// on rank 0 and broadcast: the optimiser stops on a time budget) and two random ones.
fn mappings(world: &SimpleCommunicator, g: &CartGrid, m: &MapMachine) -> Vec<(String, Perm)> {
    let pat = Pattern::grid(g).unwrap();
    let mut out = Vec::new();
    let mut starts = Vec::new();
    for s in Strategy::BASELINES {
        if let Some(map) = baseline(s, &pat, m).unwrap() {
            starts.push(Scored {
                origin: s.name().into(),
                metrics: evaluate(&pat, m, &map),
                map: map.clone(),
            });
            out.push((s.name().to_string(), map));
        }
    }
    let best = (world.rank() == 0).then(|| {
        let opts = Options {
            seed: 7,
            budget: Duration::from_millis(100),
        };
        optimise(&pat, m, &starts, &opts).unwrap().best.map
    });
    out.push((
        Strategy::Optimised.name().into(),
        broadcast_map(world, 0, best.as_ref()).unwrap(),
    ));
    for seed in [1u64, 2] {
        let mut fwd: Vec<usize> = (0..g.tasks()).collect();
        SplitMix(0x5eed + seed).shuffle(&mut fwd);
        out.push((format!("random {seed}"), Perm::from_forward(fwd).unwrap()));
    }
    out
}

/// Writes a placement file (on rank 0; the others wait).
fn write_placement(world: &SimpleCommunicator, path: &Path, node_of: impl Fn(usize) -> String) {
    if world.rank() == 0 {
        let mut s = String::from("# rank node -- written by tests/map_mpi.rs\n");
        for r in 0..world.size() as usize {
            s += &format!("{r} {}\n", node_of(r));
        }
        std::fs::write(path, s).expect("writing a placement file");
    }
    world.barrier();
}

/// Checks that `f` fails on every rank with the same message containing `want`.
fn expect_err<T>(
    world: &SimpleCommunicator,
    what: &str,
    r: copr::Result<T>,
    want: &str,
) -> Option<String> {
    let msg = match r {
        Ok(_) => {
            return Some(format!(
                "{what}: succeeded, expected an error with `{want}`"
            ))
        }
        Err(e) => e.to_string(),
    };
    if !same_everywhere(world, &msg) {
        return Some(format!(
            "{what}: the ranks got different errors; this one: {msg}"
        ));
    }
    (!msg.contains(want)).then(|| format!("{what}: error `{msg}` does not contain `{want}`"))
}

/// The collective error checks; returns (cases, failures).
fn error_cases(world: &SimpleCommunicator, dir: &Path) -> (usize, Vec<String>) {
    let me = world.rank() as usize;
    let p = world.size() as usize;
    let last = me == p - 1 && p > 1;
    let mut cases = 0;
    let mut errs = Vec::new();
    let mut check = |e: Option<String>| {
        cases += 1;
        errs.extend(e);
    };
    let long = Perm::identity(p + 1);
    let want = format!(
        "rank 0 passed a mapping of {} tasks but the communicator has {p} ranks",
        p + 1
    );
    check(expect_err(
        world,
        "reorder, map too long",
        reorder(world, &long),
        &want,
    ));
    // the same error as a typed value a caller can match
    let typed = match reorder(world, &long) {
        Err(copr::Error::Extension(b)) => match b.downcast_ref::<MpiError>() {
            Some(&MpiError::MappingLength {
                rank: 0,
                tasks,
                ranks,
            }) if tasks == p as u64 + 1 && ranks == p => None,
            other => Some(format!("reorder, map too long: {other:?}")),
        },
        other => Some(format!(
            "reorder, map too long: not an MpiError: {:?}",
            other.err()
        )),
    };
    check(typed);
    let dims = [p as i32 + 1];
    check(expect_err(
        world,
        "cart_create, map too long",
        cart_create(world, &dims, &[true], &long),
        &want,
    ));
    let id = Perm::identity(p);
    check(expect_err(
        world,
        "cart_create, grid too large",
        cart_create(world, &dims, &[true], &id),
        &format!("has {} positions but the communicator has {p} ranks", p + 1),
    ));
    check(expect_err(
        world,
        "cart_create, dims and periods",
        cart_create(world, &[p as i32], &[true, false], &id),
        "1 dims and 2 periods",
    ));
    check(expect_err(
        world,
        "broadcast_map without a mapping",
        broadcast_map(world, 0, None),
        "the root (rank 0) passed no mapping",
    ));
    check(expect_err(
        world,
        "broadcast_map to a missing root",
        broadcast_map(world, p as i32, Some(&id)),
        "is not a rank",
    ));
    let file = dir.join("too-many.txt");
    write_placement(world, &file, |r| format!("n{r}"));
    {
        // one rank more than the communicator
        if me == 0 {
            let mut s = std::fs::read_to_string(&file).unwrap();
            s += &format!("{p} n{p}\n");
            std::fs::write(&file, s).unwrap();
        }
        world.barrier();
    }
    check(expect_err(
        world,
        "placement of too many ranks",
        discover_machine(world, Some(&file)),
        &format!("{} ranks are placed but the communicator has {p}", p + 1),
    ));
    if p > 1 {
        // only the last rank passes a wrong length
        let short = if last {
            Perm::identity(p - 1)
        } else {
            id.clone()
        };
        let want = format!(
            "rank {} passed a mapping of {} tasks but the communicator has {p} ranks",
            p - 1,
            p - 1
        );
        check(expect_err(
            world,
            "reorder, one map too short",
            reorder(world, &short),
            &want,
        ));
        check(expect_err(
            world,
            "cart_create, one map too short",
            cart_create(world, &[p as i32], &[false], &short),
            &want,
        ));
        // the last rank passes another mapping, or another grid
        let rev = Perm::from_forward((0..p).rev().collect()).unwrap();
        let other = if last { &rev } else { &id };
        let want = format!(
            "rank {} passed a different mapping or grid than rank 0",
            p - 1
        );
        check(expect_err(
            world,
            "reorder, different maps",
            reorder(world, other),
            &want,
        ));
        let dims: Vec<i32> = if last {
            vec![1, p as i32]
        } else {
            vec![p as i32, 1]
        };
        check(expect_err(
            world,
            "cart_create, different grids",
            cart_create(world, &dims, &[true, true], &id),
            &want,
        ));
        // the last rank's placement file is missing
        let valid = dir.join("valid.txt");
        write_placement(world, &valid, |r| format!("n{r}"));
        let missing = dir.join("missing.txt");
        let f = if last {
            missing.as_path()
        } else {
            valid.as_path()
        };
        let r = discover_machine(world, Some(f));
        check(match r {
            Ok(_) => Some("a missing placement file on one rank: no error".into()),
            Err(e) => {
                let m = e.to_string();
                let want = format!("rank {} could not build the machine", p - 1);
                (!last && !m.contains(&want)).then(|| {
                    format!("a missing placement file on the last rank: rank {me} got `{m}`")
                })
            }
        });
    }
    if p >= 3 {
        // node `a` runs rank 0, node `b` all others
        let file = dir.join("uneven.txt");
        write_placement(
            world,
            &file,
            |r| if r == 0 { "a".into() } else { "b".into() },
        );
        // nodes of different sizes are a machine whose node `a` misses slots
        check(match discover_machine(world, Some(&file)) {
            Ok((m, slot))
                if m.nodes() == 2
                    && (m.slot_count(0), m.slot_count(1)) == (1, p - 1)
                    && slot.len() == m.slots()
                    && (0..p).all(|r| m.has_slot(slot.apply(r))) =>
            {
                None
            }
            other => Some(format!(
                "uneven placement: {:?}",
                other.map(|(m, s)| (m.description().to_string(), s.forward().to_vec()))
            )),
        });
    }
    // nothing is left pending: a plain collective and a reorder still work
    world.barrier();
    check(match reorder(world, &id) {
        Ok(c) if c.rank() as usize == me => None,
        other => Some(format!(
            "reorder after the error cases: {:?}",
            other.map(|c| c.rank())
        )),
    });
    (cases, errs)
}

/// The out-edges of rank `r` of `p` in the graph cases: `(destination, bytes)`.
fn graph_out_edges(r: usize, p: usize) -> Vec<(usize, u64)> {
    let mut out = vec![((r + 1) % p, 100 + r as u64), ((r * 3 + 2) % p, 7)];
    if r % 2 == 0 {
        out.push(((r + p / 2) % p, 1000));
    }
    out
}

/// `gather_out_edges` and `plan_mapping_at_root` on the graph of [`graph_out_edges`];
/// returns (cases, failures).
fn graph_cases(world: &SimpleCommunicator, placement: &Path) -> (usize, Vec<String>) {
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let mut errs = Vec::new();
    let gathered = gather_out_edges(world, &graph_out_edges(me, p), "graph");
    // every rank builds the whole graph from the formula
    let all: Vec<Edge> = (0..p)
        .flat_map(|r| {
            graph_out_edges(r, p).into_iter().map(move |(d, b)| Edge {
                src: r as u32,
                dst: d as u32,
                bytes: b,
            })
        })
        .collect();
    let want = Pattern::from_edges(p, all, "graph".into()).expect("a valid graph");
    match (&gathered, me) {
        (Ok(Some(g)), 0) if g.edges() == want.edges() && g.tasks() == p => {}
        (Ok(None), r) if r != 0 => {}
        (other, r) => errs.push(format!(
            "gather_out_edges on rank {r}: {:?}",
            other.as_ref().map(|g| g.as_ref().map(|g| g.edges().len()))
        )),
    }
    let source = MachineSource::Placement(placement.to_path_buf());
    let pattern = gathered.ok().flatten();
    match plan_mapping_at_root(world, pattern.as_ref(), &source, &Options::default()) {
        Ok(planned) if planned.ranks.len() == p => {
            if !same_everywhere(world, &format!("{:?}", planned.ranks.forward())) {
                errs.push("plan_mapping_at_root: the ranks got different mappings".into());
            }
        }
        other => errs.push(format!(
            "plan_mapping_at_root: {:?}",
            other.map(|x| x.ranks)
        )),
    }
    // a destination outside the communicator on the last rank: an error everywhere
    let mut bad = graph_out_edges(me, p);
    if me == p - 1 {
        bad.push((p, 1));
    }
    if gather_out_edges(world, &bad, "graph").is_ok() {
        errs.push("gather_out_edges: a destination p gave no error".into());
    }
    // rank 0 without a pattern: an error on every rank, rank 0's own (a typed
    // NoPattern) and on the others rank 0's message, said once
    match plan_mapping_at_root(world, None, &source, &Options::default()) {
        Err(copr::Error::Extension(b)) => match (me, b.downcast_ref::<MpiError>()) {
            (0, Some(MpiError::NoPattern)) => {}
            (_, Some(MpiError::OnRoot { message }))
                if me != 0
                    && message == "rank 0 passed no pattern"
                    && b.to_string() == "rank 0: rank 0 passed no pattern" => {}
            (_, other) => errs.push(format!(
                "plan_mapping_at_root without a pattern: rank {me} got {other:?}"
            )),
        },
        other => errs.push(format!(
            "plan_mapping_at_root without a pattern: {:?}",
            other.map(|x| x.ranks)
        )),
    }
    (4, errs)
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    // a directory of rank 0's process id, the same on every rank
    let mut pid = u64::from(std::process::id());
    world.process_at_rank(0).broadcast_into(&mut pid);
    let dir: PathBuf = std::env::temp_dir().join(format!("copr-map-mpi-{pid}"));
    if me == 0 {
        std::fs::create_dir_all(&dir).expect("creating the temporary directory");
    }
    world.barrier();

    let mut failures: Vec<String> = Vec::new();
    let mut cases = 0usize;
    // emulated nodes of k ranks: packed (rank r on node r / k) and round-robin
    let k = if p % 2 == 0 { 2 } else { 1 };
    let nn = p / k;
    let packed = dir.join("packed.txt");
    write_placement(&world, &packed, |r| format!("emu{}", r / k));
    let rr = dir.join("round-robin.txt");
    write_placement(&world, &rr, |r| format!("emu{}", r % nn));
    let names = discover_nodes(&world).expect("discovering the nodes");
    if names.len() != p || !same_everywhere(&world, &names.join(" ")) {
        failures.push(format!("discover_nodes gave {names:?}"));
    }
    let placements = [
        ("packed file", Some(packed.as_path())),
        ("round-robin file", Some(rr.as_path())),
        ("discovered", None),
    ];
    for (what, file) in placements {
        let pl = match file {
            Some(f) => Placement::from_file(f).expect("reading the placement file"),
            None => Placement::from_pairs(names.iter().map(|n| (n.as_str(), None))),
        };
        let (m, slot) = match discover_machine(&world, file) {
            Ok(ms) => ms,
            Err(e) => {
                failures.push(format!("{what}: discover_machine: {e}"));
                continue;
            }
        };
        // the machine agrees with the placement, and the pure function with the collective
        cases += 1;
        let (m2, slot2) = machine_from_placement(&pl).expect("the same machine");
        if slot != slot2 || m.nodes() != m2.nodes() || m.ranks_per_node() != m2.ranks_per_node() {
            failures.push(format!(
                "{what}: discover_machine and machine_from_placement differ"
            ));
        }
        let want_k = if file.is_some() {
            k
        } else {
            p / pl.num_nodes()
        };
        if m.ranks_per_node() != want_k || m.slots() != p {
            failures.push(format!(
                "{what}: {} nodes of {} ranks, expected {want_k} ranks per node",
                m.nodes(),
                m.ranks_per_node()
            ));
        }
        if file == Some(packed.as_path()) && !slot.is_identity() {
            failures.push(format!(
                "{what}: slots {:?}, expected the identity",
                slot.forward()
            ));
        }
        for r in 0..p {
            let s = slot.apply(r);
            if m.node_name(m.node_of_slot(s)) != pl.node_name(pl.node_of(r)) {
                failures.push(format!("{what}: rank {r} on slot {s} of another node"));
            }
        }
        for g in grids(p) {
            for (name, map) in mappings(&world, &g, &m) {
                let label = format!(
                    "{what}, grid {:?} periodic {:?}, {name}",
                    g.dims, g.periodic
                );
                cases += 1;
                failures.extend(run_case(&world, &g, &m, &pl, &slot, &map, &label));
            }
        }
    }
    let (n_graph, errs) = graph_cases(&world, &rr);
    cases += n_graph;
    failures.extend(errs);
    let (n_err, errs) = error_cases(&world, &dir);
    failures.extend(errs);

    let mut all = vec![0u64; p];
    world.all_gather_into(&(failures.len() as u64), &mut all[..]);
    for f in failures.iter().take(8) {
        eprintln!("map_mpi rank {me}/{p}: FAILED {f}");
    }
    let total: u64 = all.iter().sum();
    if me == 0 {
        let _ = std::fs::remove_dir_all(&dir);
        println!(
            "map_mpi: {p} ranks ({nn} emulated nodes of {k}), {cases} mapping cases and {n_err} error cases per rank, {total} failures"
        );
    }
    drop(universe);
    if total > 0 {
        std::process::exit(1);
    }
}
