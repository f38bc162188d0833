//! Moves a block-cyclic matrix into another block-cyclic layout with a transpose,
//! without and with the communication-optimal relabeling, and prints the remote volume
//! and the time of both.
//!
//! With MPI (one process per rank):
//! ```text
//! cargo build --release --features mpi --example reshuffle
//! mpirun -n 4 target/release/examples/reshuffle [N]
//! ```
//! Without MPI the same code runs on 4 in-process ranks (threads):
//! `cargo run --release --example reshuffle [N]`.

use std::time::Instant;

use copr::engine::{Job, Relabeling, ReshufflePlan, Transform};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order};
use copr::transport::Transport;

/// B(i, j), a value every rank can compute.
fn b_value(i: usize, j: usize) -> f64 {
    (i * 10_007 + j) as f64
}

/// Best-of-3 time of `plan` on the slowest rank, and the number of wrong elements of
/// A = Bᵀ over all ranks.
fn time_and_check(
    t: &mut dyn Transport,
    plan: &mut ReshufflePlan,
    b: &[f64],
) -> Result<(f64, u64), Box<dyn std::error::Error + Send + Sync>> {
    let (me, p) = (t.rank(), t.size());
    // A as the *relabeled* target layout says.
    let target = plan.target(0).clone();
    let mut a = vec![0.0f64; target.local_len(me)];
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let mut sync = vec![0u64; p];
        t.all_gather(&[0], &mut sync)?; // a barrier
        let t1 = Instant::now();
        plan.execute(t, &mut [Job::copy(b, &mut a)])?;
        best = best.min(t1.elapsed().as_secs_f64());
    }
    let mut wrong = 0u64;
    for blk in target.local_blocks(me) {
        for i in blk.rows.clone() {
            for j in blk.cols.clone() {
                let x = a[blk.index(i - blk.rows.start, j - blk.cols.start)];
                wrong += u64::from(x != b_value(j, i));
            }
        }
    }
    let mut all = vec![0u64; 2 * p];
    t.all_gather(&[best.to_bits(), wrong], &mut all)?;
    let slowest = all
        .chunks(2)
        .map(|x| f64::from_bits(x[0]))
        .fold(0.0, f64::max);
    Ok((slowest, all.chunks(2).map(|x| x[1]).sum()))
}

fn run(t: &mut dyn Transport, n: usize) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (me, p) = (t.rank(), t.size());
    let pr = (1..=p)
        .rev()
        .find(|d| p % d == 0 && d * d <= p)
        .unwrap_or(1);
    let pc = p / pr;
    // B: n × n in 64 × 64 blocks on a row-major pr × pc grid (ScaLAPACK's default).
    let source: Layout = BlockCyclic::new(BlockCyclicSpec::new(n, n, 64, 64, pr, pc))?.into();
    // A = Bᵀ: 64 × 64 blocks on a column-major pc × pr grid whose first block row sits
    // on process row 1. Without relabeling most of Bᵀ crosses ranks; with it, none.
    let mut spec = BlockCyclicSpec::new(n, n, 64, 64, pc, pr);
    spec.grid_order = Order::ColMajor;
    spec.rsrc = 1 % pc;
    let target: Layout = BlockCyclic::new(spec)?.into();

    let mut b = vec![0.0f64; source.local_len(me)];
    for blk in source.local_blocks(me) {
        for i in blk.rows.clone() {
            for j in blk.cols.clone() {
                b[blk.index(i - blk.rows.start, j - blk.cols.start)] = b_value(i, j);
            }
        }
    }
    let transform = Transform::new(source, target, Op::Transpose);
    let t0 = Instant::now();
    let mut off = ReshufflePlan::new(t, vec![transform.clone().with_relabeling(Relabeling::Off)])?;
    let mut on = ReshufflePlan::new(t, vec![transform])?;
    let plan_time = t0.elapsed().as_secs_f64() / 2.0;
    let (time_off, wrong_off) = time_and_check(t, &mut off, &b)?;
    let (time_on, wrong_on) = time_and_check(t, &mut on, &b)?;

    if me == 0 {
        let mb = |e: u64| e as f64 * 8.0 / 1e6;
        let off_remote = off.remote_after(0).expect("remote volume");
        let on_remote = on.remote_after(0).expect("remote volume");
        println!("A <- B^T: {n} x {n} doubles on {p} ranks");
        println!("  B: 64 x 64 blocks on a row-major {pr} x {pc} grid");
        println!(
            "  A: 64 x 64 blocks on a column-major {pc} x {pr} grid, rsrc = {}",
            1 % pc
        );
        println!(
            "  without relabeling: remote volume {:>10} elements ({:7.1} MB), {:8.3} ms",
            off_remote,
            mb(off_remote),
            time_off * 1e3
        );
        println!(
            "  with relabeling:    remote volume {:>10} elements ({:7.1} MB), {:8.3} ms",
            on_remote,
            mb(on_remote),
            time_on * 1e3
        );
        println!(
            "  sigma (target label -> process): {:?}",
            on.sigma(0).forward()
        );
        println!("  planning: {:.3} ms per plan on rank 0", plan_time * 1e3);
        println!("  wrong elements: {}", wrong_off + wrong_on);
    }
    if wrong_off + wrong_on > 0 {
        return Err("A is not Bᵀ".into());
    }
    Ok(())
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    #[cfg(feature = "mpi")]
    {
        let (universe, _) =
            mpi::initialize_with_threading(mpi::Threading::Funneled).expect("MPI initialises once");
        let mut t = copr::transport::MpiTransport::new(universe.world());
        if let Err(e) = run(&mut t, n) {
            eprintln!("rank {}: {e}", t.rank());
            std::process::exit(1);
        }
    }
    #[cfg(not(feature = "mpi"))]
    {
        let results = copr::transport::run_in_process(4, |t| run(t, n)).expect("4 ranks");
        if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
