//! Before the first collective of a call, the processes of its context meet by
//! point-to-point messages on `MPI_COMM_WORLD`, so that a process whose context is
//! not a live BLACS context (it cannot tell which processes take part) still answers
//! the processes that wait for it, instead of leaving them in a collective forever.
//!
//! The protocol, per call of a group G (its processes, by `MPI_COMM_WORLD` rank in the
//! order of the context's communicator) and the number k of calls G made before:
//! - each process of G but the first sends PRESENT(G, k) to the first, the leader, and
//!   waits for its verdict;
//! - the leader waits for PRESENT (or BAD) from every other process; to those still
//!   missing after [`NUDGE`] it sends WAITING(G, k), once;
//! - a process whose context is bad waits for a WAITING (a group expects it: it
//!   answers BAD and returns its error) or a PRESENT (it leads a group: it answers each
//!   with FAIL), at most [`wait_limit`] (then it returns its error alone);
//! - the leader sends GO, or FAIL when some process answered BAD, to the others.
//!
//! Messages between two processes keep their order (MPI's non-overtaking rule), and
//! every process's calls on G are the same calls in the same order, so each message
//! meets the call it belongs to; one that arrives while its process is in another call
//! (of another group) is kept for that call.
//!
//! The messages use tag [`TAG`] on `MPI_COMM_WORLD` (no communicator can be made
//! here: making one is collective): an application that receives on `MPI_COMM_WORLD`
//! with `MPI_ANY_TAG` while it calls copr from another thread could take one.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use mpi::ffi::MPI_Comm;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, Group, SimpleCommunicator};

/// The tag of copr's messages on `MPI_COMM_WORLD` (within the 32767 every MPI allows).
pub(crate) const TAG: i32 = 32_117;

/// How long the leader waits before it tells missing processes that it waits.
const NUDGE: Duration = Duration::from_millis(20);

/// How long a process with a bad context waits for a group that expects it:
/// `COPR_CONTEXT_WAIT` seconds (default 10).
pub(crate) fn wait_limit() -> Duration {
    std::env::var("COPR_CONTEXT_WAIT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0)
        .map_or(Duration::from_secs(10), Duration::from_secs_f64)
}

const PRESENT: u64 = 1;
const WAITING: u64 = 2;
const GO: u64 = 3;
const FAIL: u64 = 4;
const BAD: u64 = 5;

/// One message: kind, the group's key, the call number k, and the group's size.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Msg {
    kind: u64,
    key: u64,
    k: u64,
    size: u64,
}

impl Msg {
    fn words(self) -> [u64; 4] {
        [self.kind, self.key, self.k, self.size]
    }
}

/// What a process keeps between calls: every group's call count and the messages
/// that arrived for a later call.
pub(crate) struct Presence {
    calls: BTreeMap<u64, u64>,
    kept: Vec<(i32, Msg)>,
}

/// The verdict of a meeting.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Every process of the group is in the call.
    Go,
    /// A process of the group (`MPI_COMM_WORLD` rank) has a bad context.
    Fail(i32),
}

/// The `MPI_COMM_WORLD` rank of each rank of `raw` (a local operation).
///
/// # Safety
/// `raw` is a valid intra-communicator.
pub(crate) unsafe fn world_ranks(raw: MPI_Comm) -> Vec<i32> {
    // SAFETY: the caller's guarantee; ManuallyDrop, as the handle is not ours to free.
    let theirs = unsafe { copr::transport::borrowed::borrow(raw) };
    let world = SimpleCommunicator::world().group();
    let ranks: Vec<i32> = (0..theirs.size()).collect();
    theirs
        .group()
        .translate_ranks(&ranks, &world)
        .into_iter()
        .map(|r| r.unwrap_or(-1))
        .collect()
}

/// This process's `MPI_COMM_WORLD` rank.
pub(crate) fn world_rank() -> i32 {
    SimpleCommunicator::world().rank()
}

/// The key of the group of these `MPI_COMM_WORLD` ranks in the meetings.
pub(crate) fn key_of(members: &[i32]) -> u64 {
    let bytes: Vec<u8> = members.iter().flat_map(|r| r.to_le_bytes()).collect();
    copr::layout::fnv1a(&bytes)
}

fn send(to: i32, m: Msg) {
    let world = SimpleCommunicator::world();
    world.process_at_rank(to).send_with_tag(&m.words()[..], TAG);
}

impl Presence {
    /// Nothing met yet.
    pub(crate) const fn new() -> Self {
        Self {
            calls: BTreeMap::new(),
            kept: Vec::new(),
        }
    }

    /// The next message from `from` (any process when `None`) that `wanted` accepts,
    /// kept ones first; others arriving meanwhile are kept. `None` at `deadline`.
    fn next(
        &mut self,
        from: Option<i32>,
        wanted: impl Fn(&Msg) -> bool,
        deadline: Option<Instant>,
    ) -> Option<(i32, Msg)> {
        let fits = |src: i32, m: &Msg| from.is_none_or(|f| f == src) && wanted(m);
        if let Some(i) = self.kept.iter().position(|(s, m)| fits(*s, m)) {
            return Some(self.kept.remove(i));
        }
        let world = SimpleCommunicator::world();
        loop {
            let status = match from {
                Some(f) => world.process_at_rank(f).immediate_probe_with_tag(TAG),
                None => world.any_process().immediate_probe_with_tag(TAG),
            };
            if let Some(status) = status {
                let src = status.source_rank();
                let mut w = [0u64; 4];
                world
                    .process_at_rank(src)
                    .receive_into_with_tag(&mut w[..], TAG);
                let m = Msg {
                    kind: w[0],
                    key: w[1],
                    k: w[2],
                    size: w[3],
                };
                if fits(src, &m) {
                    return Some((src, m));
                }
                self.kept.push((src, m));
                continue;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return None;
            }
            std::thread::yield_now();
        }
    }

    /// The meeting of a process whose context is live: `members` are the group's
    /// `MPI_COMM_WORLD` ranks in the order of its communicator, `key` their
    /// [`key_of`], `me` this process's `MPI_COMM_WORLD` rank.
    pub(crate) fn meet(&mut self, members: &[i32], key: u64, me: i32) -> Verdict {
        let calls = self.calls.entry(key).or_insert(0);
        let k = *calls;
        *calls += 1;
        let size = members.len() as u64;
        let this = |m: &Msg| m.key == key && m.k == k;
        let leader = members[0];
        if me != leader {
            send(
                leader,
                Msg {
                    kind: PRESENT,
                    key,
                    k,
                    size,
                },
            );
            loop {
                // no deadline: `next` returns only with a message
                let Some((_, m)) = self.next(Some(leader), |m| this(m) && m.kind != PRESENT, None)
                else {
                    continue;
                };
                match m.kind {
                    GO => return Verdict::Go,
                    FAIL => return Verdict::Fail(m.size as i32),
                    _ => {} // WAITING: the leader waited for this process
                }
            }
        }
        let mut answered: HashMap<i32, bool> = HashMap::new(); // rank -> bad
        let others: Vec<i32> = members.iter().copied().filter(|&r| r != me).collect();
        let start = Instant::now();
        let mut nudged = false;
        while answered.len() < others.len() {
            let deadline = (!nudged).then(|| start + NUDGE);
            match self.next(
                None,
                |m| this(m) && (m.kind == PRESENT || m.kind == BAD),
                deadline,
            ) {
                Some((src, m)) => {
                    answered.insert(src, m.kind == BAD);
                }
                None => {
                    for &r in others.iter().filter(|r| !answered.contains_key(r)) {
                        send(
                            r,
                            Msg {
                                kind: WAITING,
                                key,
                                k,
                                size,
                            },
                        );
                    }
                    nudged = true;
                }
            }
        }
        let bad = others.iter().copied().find(|r| answered[r]);
        for &r in others.iter().filter(|r| !answered[r]) {
            let kind = if bad.is_some() { FAIL } else { GO };
            let size = bad.map_or(0, |b| b as u64);
            send(r, Msg { kind, key, k, size });
        }
        bad.map_or(Verdict::Go, Verdict::Fail)
    }

    /// The meeting of a process whose context is bad: it answers the group that
    /// expects it, if one does within [`wait_limit`]. True when a group was answered.
    pub(crate) fn refuse(&mut self) -> bool {
        let deadline = Instant::now() + wait_limit();
        let Some((src, m)) = self.next(
            None,
            |m| m.kind == WAITING || m.kind == PRESENT,
            Some(deadline),
        ) else {
            return false;
        };
        let Msg { key, k, size, .. } = m;
        *self.calls.entry(key).or_insert(0) = k + 1;
        let me = world_rank();
        let this = |m: &Msg| m.key == key && m.k == k && m.kind == PRESENT;
        if m.kind == WAITING {
            send(
                src,
                Msg {
                    kind: BAD,
                    key,
                    k,
                    size,
                },
            );
            return true;
        }
        // this process leads the group: every other process is told, as it arrives
        let fail = Msg {
            kind: FAIL,
            key,
            k,
            size: me as u64,
        };
        send(src, fail);
        for _ in 2..size {
            match self.next(None, this, Some(deadline)) {
                Some((r, _)) => send(r, fail),
                None => break,
            }
        }
        true
    }
}
