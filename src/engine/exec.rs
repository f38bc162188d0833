//! Executing a schedule: checks, packing, the round, transforming on receipt.

use std::ops::Range;
use std::time::Instant;

use super::element::Element;
use super::kernel::{
    apply, pack, stream_fence, with_combine, Bytes, Combine, Move, PackRun, Slice, Src, Update,
};
use super::schedule::{
    batch_fingerprint, Extent, PeerWork, PlanStats, Relabeling, Schedule, TargetContents,
    Transform, Work,
};
use crate::error::{Error, Mismatched, Result};
use crate::lap::Perm;
use crate::layout::{Layout, Op, Order};
use crate::transport::{Package, Round, RoundHandler, Span, Transport};

/// The buffers and scalars of one transform: `A ← α·op(B) + β·A`, with B's local part
/// in `source` and A's local part in `target` (laid out as the plan's source and
/// relabeled target layouts say).
#[derive(Debug)]
pub struct Job<'a, T> {
    /// α.
    pub alpha: T,
    /// β (β = 0 never reads A, so A may hold anything, NaN included).
    pub beta: T,
    /// This rank's local buffer of B.
    pub source: &'a [T],
    /// This rank's local buffer of A.
    pub target: &'a mut [T],
}

impl<'a, T: Element> Job<'a, T> {
    /// `A ← op(B)` (α = 1, β = 0).
    pub fn copy(source: &'a [T], target: &'a mut [T]) -> Self {
        Self {
            alpha: T::one(),
            beta: T::zero(),
            source,
            target,
        }
    }
}

/// Where the time of the last [`ReshufflePlan::execute`] went on this rank (seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExecStats {
    /// Building and judging the collective argument check (its words travel with the
    /// round, so waiting for them counts as `wait`).
    pub check: f64,
    /// Packing outgoing packages.
    pub pack: f64,
    /// Copying the pieces that stay on this rank.
    pub local: f64,
    /// Transforming received packages into A.
    pub unpack: f64,
    /// The rest of the round: gathering the check words, posting, waiting for and
    /// moving messages.
    pub wait: f64,
    /// The whole call.
    pub total: f64,
    /// Outgoing packages the transport sent straight from B (no packing).
    pub sent_in_place: usize,
    /// Incoming packages the transport received straight into A (no unpacking).
    pub received_in_place: usize,
    /// Incoming packages read straight from the sender's B in node-shared memory
    /// into A (no packing, no window; see `transport::SharedBuffer`, feature `mpi`).
    pub read_from_source: usize,
    /// Incoming packages whose moves this execution mapped onto their sender's B
    /// (found from the receiver's own pieces of the package) before reading them from
    /// there: a plan keeps the mapping, so an execution maps only the senders no
    /// earlier execution of the same plan read from. Its time is part of `unpack`.
    pub sources_mapped: usize,
    /// The time of that mapping (seconds).
    pub source_mapping: f64,
}

/// Words every rank contributes to the check before an execution.
const CHECK_WORDS: usize = 16;

/// How an execution writes packages and A: through the cache, or with non-temporal
/// (streaming) stores that bypass it ([`ReshufflePlan::set_streaming`]).
///
/// A store to a cache line that is not in the cache first reads the line from memory;
/// a streaming store writes the whole line without reading it. When the data a rank
/// moves is far larger than its cache, every line it writes is such a miss, and
/// streaming turns the three bytes of memory traffic per byte copied into two. On data
/// that fits the cache, streaming only pushes out lines the next step would have read
/// from the cache. Only plain copies stream (α = 1, β = 0, no conjugation); the partial
/// lines at the ends of every run take ordinary stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Streaming {
    /// Stream when this rank writes at least [`STREAM_MIN_BYTES`] per execution
    /// (packages, local copies and received packages together).
    #[default]
    Auto,
    /// Never stream.
    Never,
    /// Always stream (for tests and measurements).
    Always,
}

/// Bytes a rank writes per execution from which [`Streaming::Auto`] streams: half the
/// last-level cache of a typical node's share per core is far below it, so what is
/// written would leave the cache before it is read again anyway.
pub const STREAM_MIN_BYTES: usize = 16 << 20;

/// How the kernels of one execution run.
#[derive(Debug, Clone, Copy)]
struct Mode {
    /// Split work between rayon tasks (this rank has more than one core to itself).
    par: bool,
    /// Write with non-temporal stores.
    stream: bool,
}

/// A reusable plan for a batch of transforms `A_k ← α_k·op_k(B_k) + β_k·A_k`.
///
/// Built once (collectively), executed any number of times: the packages, the
/// relabeling σ of every transform and the buffer sizes are computed at construction.
/// Package storage is not owned by a plan: an execution borrows a send and a receive
/// buffer from a pool of its thread and returns them, so repeated executions, and a new
/// plan whose packages fit what earlier plans used, do no planning work and no
/// allocation or first touch of data buffers ([`release_buffers`] frees the pool).
///
/// Every execution moves the whole batch in **one** communication round with exactly
/// one message per peer: the blocks of all transforms that go to the same peer are
/// packed together (transposed pieces already in the receiver's element order, by a
/// cache-blocked transpose kernel), blocks that stay on the rank are copied directly
/// from B to A while the messages travel, and every received package is scaled and
/// conjugated into A as it arrives. A transport that can send a package from where it
/// lies and receive it into place (MPI derived datatypes, see
/// [`RoundHandler::send_spans`](crate::transport::RoundHandler::send_spans)) is told
/// where: packages made of whole runs of B need no packing, and packages of a plain
/// copy (α = 1, β = 0) that land as whole runs of A need no unpacking
/// ([`ExecStats::sent_in_place`], [`ExecStats::received_in_place`]). Packing and
/// unpacking are split between rayon tasks only when the rank has cores to spare
/// ([`Transport::threads`]).
///
/// # Example
/// ```
/// use copr::engine::{Job, ReshufflePlan, Transform};
/// use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op};
/// use copr::transport::{run_in_process, Transport};
///
/// // A 6x4 matrix B in 2x2 blocks on a 2x1 grid; A = Bᵀ (4x6) in 3x3 blocks on 1x2.
/// let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(6, 4, 2, 2, 2, 1)).unwrap().into();
/// let dst: Layout = BlockCyclic::new(BlockCyclicSpec::new(4, 6, 3, 3, 1, 2)).unwrap().into();
/// let ok = run_in_process(2, |t| {
///     let mut plan = ReshufflePlan::new(t, vec![Transform::new(src.clone(), dst.clone(), Op::Transpose)])
///         .unwrap();
///     let me = t.rank();
///     // B(i, j) = 10·i + j in this rank's local storage.
///     let mut b = vec![0.0f64; src.local_len(me)];
///     for blk in src.local_blocks(me) {
///         for i in blk.rows.clone() {
///             for j in blk.cols.clone() {
///                 b[blk.index(i - blk.rows.start, j - blk.cols.start)] = (10 * i + j) as f64;
///             }
///         }
///     }
///     let target = plan.targets()[0].clone(); // relabeled A layout
///     let mut a = vec![f64::NAN; target.local_len(me)];
///     plan.execute(t, &mut [Job::copy(&b, &mut a)]).unwrap();
///     target.local_blocks(me).iter().all(|blk| {
///         blk.rows.clone().all(|i| {
///             blk.cols.clone().all(|j| {
///                 a[blk.index(i - blk.rows.start, j - blk.cols.start)] == (10 * j + i) as f64
///             })
///         })
///     })
/// })
/// .unwrap();
/// assert_eq!(ok, vec![true, true]);
/// ```
#[derive(Debug)]
pub struct ReshufflePlan {
    schedule: Schedule,
    buffers: Buffers,
    stats: ExecStats,
    /// Whether executions write with streaming stores.
    streaming: Streaming,
    /// Checks of a plan made without a collective step, judged with the execution's
    /// check words: this rank's storage words ([`storage_words`]) and 1 if planning
    /// failed here; zeros for a plan made by [`ReshufflePlan::new`].
    unchecked: [u64; 6],
    /// Per incoming package, once a round has read it from its sender's B: the moves
    /// that do so (`None` inside: they could not be made).
    peer_work: Vec<Option<Option<PeerWork>>>,
}

/// Package descriptors and storage for one element size.
#[derive(Debug, Default)]
struct Buffers {
    elem_bytes: usize,
    sends: Vec<Package>,
    recvs: Vec<Package>,
    /// Words of storage the outgoing packages need (8-byte words, so that every
    /// package, starting on a 64-byte boundary, is aligned for every element type);
    /// the storage itself is this thread's [`POOL`].
    send_words: usize,
    /// Words the incoming packages need, likewise.
    recv_words: usize,
    /// The gathered check words of all ranks.
    check: Vec<u64>,
}

thread_local! {
    /// Package storage shared by every plan executed on this thread: an execution
    /// borrows a send and a receive buffer and returns them, so a new plan whose
    /// packages fit what earlier plans used pays no allocation and no page faults.
    /// Holds at most [`POOL_KEEP`] buffers; [`release_buffers`] empties it.
    static POOL: std::cell::RefCell<Vec<Vec<u64>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Buffers the pool keeps (one send and one receive buffer).
const POOL_KEEP: usize = 2;

/// A buffer of at least `words` words from this thread's pool: the smallest that fits,
/// else a new one (replacing the pool's largest, which is too small).
fn take_buffer(words: usize) -> Vec<u64> {
    POOL.with(|p| {
        let mut pool = p.borrow_mut();
        let fits = (0..pool.len())
            .filter(|&i| pool[i].len() >= words)
            .min_by_key(|&i| pool[i].len());
        if let Some(i) = fits {
            return pool.swap_remove(i);
        }
        if let Some(i) = (0..pool.len()).max_by_key(|&i| pool[i].len()) {
            pool.swap_remove(i);
        }
        vec![0; words]
    })
}

/// Returns a buffer to this thread's pool, which keeps the largest [`POOL_KEEP`].
fn give_back(buf: Vec<u64>) {
    if buf.is_empty() {
        return;
    }
    POOL.with(|p| {
        let mut pool = p.borrow_mut();
        pool.push(buf);
        if pool.len() > POOL_KEEP {
            if let Some(i) = (0..pool.len()).min_by_key(|&i| pool[i].len()) {
                pool.swap_remove(i);
            }
        }
    });
}

/// Frees the package storage that executions on this thread keep for the next plan
/// (see [`ReshufflePlan::execute`]) and the temporary storage planning on this thread
/// keeps for the next plan; returns the bytes released.
pub fn release_buffers() -> usize {
    let packages = POOL.with(|p| {
        let freed: usize = p.borrow().iter().map(|b| 8 * b.len()).sum();
        p.borrow_mut().clear();
        freed
    });
    packages + super::schedule::release_scratch()
}

/// Bytes of package storage and planning scratch this thread holds now (what
/// [`release_buffers`] would free).
pub fn pooled_bytes() -> usize {
    POOL.with(|p| p.borrow().iter().map(|b| 8 * b.len()).sum::<usize>())
        + super::schedule::scratch_bytes()
}

/// The bytes of a buffer of words.
fn words_as_bytes(w: &mut [u64]) -> &mut [u8] {
    bytemuck::cast_slice_mut(w)
}

/// Package ranges, each starting on a 64-byte boundary.
fn layout_packages(
    it: impl Iterator<Item = (usize, usize)>,
    elem_bytes: usize,
    out: &mut Vec<Package>,
) -> usize {
    out.clear();
    let mut end = 0usize;
    for (peer, elems) in it {
        let start = end.div_ceil(64) * 64;
        end = start + elems * elem_bytes;
        out.push(Package {
            peer,
            range: start..end,
        });
    }
    end
}

impl Buffers {
    fn prepare(&mut self, s: &Schedule, elem_bytes: usize) {
        if self.elem_bytes != elem_bytes {
            self.elem_bytes = elem_bytes;
            let ns = layout_packages(
                s.sends.iter().map(|p| (p.peer, p.elems)),
                elem_bytes,
                &mut self.sends,
            );
            let nr = layout_packages(
                s.recvs.iter().map(|p| (p.peer, p.elems)),
                elem_bytes,
                &mut self.recvs,
            );
            self.send_words = ns.div_ceil(8);
            self.recv_words = nr.div_ceil(8);
        }
    }
}

impl ReshufflePlan {
    /// Plans a batch of transforms on the ranks of `transport` (collective: every rank
    /// calls it with the same batch).
    ///
    /// Relabeling is decided per transform (see [`super::Relabeling`]); the relabeled
    /// target layouts are [`ReshufflePlan::targets`].
    ///
    /// # Complexity
    /// O(pieces this rank sends, receives or copies · log) plus the volume computation
    /// and the exact assignment for every relabeled transform; one `all_gather` of six
    /// words.
    ///
    /// Ranks may pass block-cyclic layouts that differ only in `lld` (each rank's own
    /// descriptor): the batch is compared without it, and each rank's `lld` is checked
    /// against its own local matrix in the same gather.
    ///
    /// # Errors
    /// The same error on every rank: [`Error::Inconsistent`] if the ranks passed
    /// different batches; [`Error::Layout`] (field `lld`, naming the rank) if a rank's
    /// leading dimension is smaller than its local matrix; [`Error::Mismatched`] if a
    /// layout needs more ranks than the communicator has, op(B) and A differ in shape,
    /// or a given σ has the wrong length; [`Error::Relabeling`] if a given σ ≠ identity
    /// would relabel a target submatrix whose contents are as given (see
    /// [`super::Relabeling`]); [`Error::Transport`] if the transport fails.
    pub fn new(transport: &mut dyn Transport, batch: Vec<Transform>) -> Result<Self> {
        let t0 = Instant::now();
        let (rank, size) = (transport.rank(), transport.size());
        let fp = batch_fingerprint(&batch, size);
        let mine = [&[fp][..], &storage_words(&batch, rank)].concat();
        let mut all = vec![0u64; size * mine.len()];
        transport.all_gather(&mine, &mut all)?;
        let rows: Vec<&[u64]> = all.chunks_exact(mine.len()).collect();
        same_everywhere(
            &rows,
            0,
            "batch of transforms (layouts, operations, relabelings)",
        )?;
        if let Some(r) = rows.iter().position(|x| x[1] != 0) {
            return Err(storage_error(r, &rows[r][1..6]));
        }
        let check = t0.elapsed().as_secs_f64();
        let parallel = transport.threads() > 1;
        let mut schedule = Schedule::build(batch, rank, size, fp, parallel)?;
        schedule.stats.check = check;
        schedule.stats.total = t0.elapsed().as_secs_f64();
        Ok(Self {
            schedule,
            buffers: Buffers::default(),
            stats: ExecStats::default(),
            streaming: Streaming::Auto,
            unchecked: [0; 6],
            peer_work: Vec::new(),
        })
    }

    /// Plans `batch` on this rank alone and executes it (collective) with a single
    /// gather: the one the execution makes anyway. What [`ReshufflePlan::new`] checks
    /// collectively (the same batch everywhere, each rank's storage) travels with the
    /// execution's check words instead, so the same errors reach every rank before any
    /// data moves. For one-call use ([`reshuffle`], [`super::PlanCache`]); the plan
    /// returned can be executed again like any other.
    ///
    /// # Errors
    /// As [`ReshufflePlan::new`] and [`ReshufflePlan::execute`].
    pub fn plan_and_execute<T: Element>(
        transport: &mut dyn Transport,
        batch: Vec<Transform>,
        jobs: &mut [Job<'_, T>],
    ) -> Result<Self> {
        let t0 = Instant::now();
        let (rank, size) = (transport.rank(), transport.size());
        let fp = batch_fingerprint(&batch, size);
        let storage = storage_words(&batch, rank);
        let parallel = transport.threads() > 1;
        let built = (storage[0] == 0).then(|| Schedule::build(batch, rank, size, fp, parallel));
        let (mut schedule, failed) = match built {
            Some(Ok(s)) => (s, None),
            Some(Err(e)) => (Schedule::empty(size, fp), Some(e)),
            None => (Schedule::empty(size, fp), None),
        };
        schedule.stats.total = t0.elapsed().as_secs_f64();
        let mut unchecked = [0u64; 6];
        unchecked[..5].copy_from_slice(&storage);
        unchecked[5] = u64::from(failed.is_some());
        let clean = unchecked == [0; 6];
        let mut plan = Self {
            schedule,
            buffers: Buffers::default(),
            stats: ExecStats::default(),
            streaming: Streaming::Auto,
            unchecked,
            peer_work: Vec::new(),
        };
        let r = if clean {
            plan.execute(transport, jobs)
        } else {
            plan.execute::<T>(transport, &mut [])
        };
        plan.unchecked = [0; 6];
        match (r, failed) {
            (Ok(()), None) => Ok(plan),
            // Every rank with this batch failed alike (planning is a function of the
            // batch the fingerprints agreed on): each reports its own, equal, error.
            (Err(Error::Mismatched(Mismatched::PlanFailedOn { .. })), Some(e)) => Err(e),
            (Err(e), _) | (Ok(()), Some(e)) => Err(e),
        }
    }

    /// Number of transforms in the batch.
    pub fn len(&self) -> usize {
        self.schedule.pairs.len()
    }

    /// True for an empty batch.
    pub fn is_empty(&self) -> bool {
        self.schedule.pairs.is_empty()
    }

    /// The target layouts after relabeling, one per transform: which rank now owns which
    /// block of A, and how large each rank's A buffer must be.
    pub fn targets(&self) -> Vec<Layout> {
        self.schedule
            .pairs
            .iter()
            .map(|p| p.target.clone())
            .collect()
    }

    /// The target layout of transform `k` after relabeling.
    ///
    /// # Panics
    /// If `k >= self.len()`.
    pub fn target(&self, k: usize) -> &Layout {
        &self.schedule.pairs[k].target
    }

    /// The source layout of transform `k`.
    ///
    /// # Panics
    /// If `k >= self.len()`.
    pub fn source(&self, k: usize) -> &Layout {
        &self.schedule.pairs[k].source
    }

    /// The operation of transform `k`.
    ///
    /// # Panics
    /// If `k >= self.len()`.
    pub fn op(&self, k: usize) -> Op {
        self.schedule.pairs[k].op
    }

    /// The relabeling σ of transform `k` (target label `t` is taken by process `σ(t)`;
    /// the identity when relabeling is off or saves nothing).
    ///
    /// # Panics
    /// If `k >= self.len()`.
    pub fn sigma(&self, k: usize) -> &Perm {
        &self.schedule.pairs[k].sigma
    }

    /// The one σ of the batch's [`Relabeling::Joint`](super::Relabeling::Joint)
    /// transforms (target label `t` of each of them is held by process `σ(t)`), on all
    /// ranks of the communicator; `None` if the batch has no such transform.
    pub fn joint_sigma(&self) -> Option<&Perm> {
        self.schedule.joint.as_ref()
    }

    /// Elements of transform `k` that cross ranks without relabeling (all ranks
    /// together).
    ///
    /// Known from planning when choosing σ needed the volumes; otherwise counted on
    /// the first request (from the layouts, on this rank alone), since planning needs
    /// only this rank's own pieces.
    ///
    /// # Errors
    /// [`Error::Limit`] if the layouts cut each other into too many classes to count.
    ///
    /// # Panics
    /// If `k >= self.len()`.
    pub fn remote_before(&self, k: usize) -> Result<u64> {
        self.schedule.pairs[k].remote_volumes().map(|r| r.0)
    }

    /// Elements of transform `k` that cross ranks with the plan's relabeling (as
    /// [`ReshufflePlan::remote_before`]).
    ///
    /// # Errors
    /// As [`ReshufflePlan::remote_before`].
    ///
    /// # Panics
    /// If `k >= self.len()`.
    pub fn remote_after(&self, k: usize) -> Result<u64> {
        self.schedule.pairs[k].remote_volumes().map(|r| r.1)
    }

    /// Elements this rank's B and A buffers of transform `k` must hold at least.
    ///
    /// # Panics
    /// If `k >= self.len()`.
    pub fn local_lens(&self, k: usize) -> (usize, usize) {
        let p = &self.schedule.pairs[k];
        (p.source_len, p.target_len)
    }

    /// Number of messages this rank sends per execution (one per peer it has data
    /// for, across the whole batch).
    pub fn messages_sent(&self) -> usize {
        self.schedule.sends.len()
    }

    /// Number of messages this rank receives per execution (one per peer that has
    /// data for it).
    pub fn messages_received(&self) -> usize {
        self.schedule.recvs.len()
    }

    /// Elements this rank sends, receives and copies locally per execution.
    pub fn elements(&self) -> (usize, usize, usize) {
        (
            self.schedule.sends.iter().map(|s| s.elems).sum(),
            self.schedule.recvs.iter().map(|r| r.elems).sum(),
            self.schedule.local.elems,
        )
    }

    /// The fingerprint of the batch all ranks agreed on when planning.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.schedule.fingerprint
    }

    /// Bytes this plan holds on this rank (its schedule: package descriptors, moves,
    /// layouts; not the package storage, which the thread's pool holds).
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of_val;
        let s = &self.schedule;
        let work = |w: &Work| {
            size_of_val(w.moves.as_slice())
                + size_of_val(w.groups.as_slice())
                + size_of_val(w.pair_groups.as_slice())
        };
        std::mem::size_of::<Self>()
            + s.sends
                .iter()
                .map(|x| size_of_val(x.runs.as_slice()))
                .sum::<usize>()
            + size_of_val(s.sends.as_slice())
            + s.recvs
                .iter()
                .map(|r| work(&r.work) + size_of_val(r.pieces.as_slice()))
                .sum::<usize>()
            + size_of_val(s.recvs.as_slice())
            + work(&s.local)
            + self
                .peer_work
                .iter()
                .flatten()
                .flatten()
                .map(|p| work(&p.work) + size_of_val(p.need.as_slice()))
                .sum::<usize>()
            + s.pairs
                .iter()
                .map(|p| size_of_val(p.regions.as_slice()) + size_of_val(p.sigma.forward()))
                .sum::<usize>()
            + size_of_val(self.buffers.sends.as_slice())
            + size_of_val(self.buffers.recvs.as_slice())
            + size_of_val(self.buffers.check.as_slice())
    }

    /// Chooses how executions of this plan write packages and A (see [`Streaming`];
    /// [`Streaming::Auto`] by default). Each rank decides alone: ranks may differ.
    pub fn set_streaming(&mut self, streaming: Streaming) {
        self.streaming = streaming;
    }

    /// Where the time of building this plan went on this rank.
    pub fn plan_stats(&self) -> PlanStats {
        self.schedule.stats
    }

    /// Where the time of the last execution went on this rank.
    pub fn last_stats(&self) -> ExecStats {
        self.stats
    }

    /// Bytes of send and receive storage an execution of this plan uses (borrowed from
    /// the thread's pool, see [`ReshufflePlan::execute`]).
    pub fn buffer_bytes(&self) -> usize {
        8 * (self.buffers.send_words + self.buffers.recv_words)
    }

    /// Executes the batch: `A_k ← α_k·op_k(B_k) + β_k·A_k` for every job `k`
    /// (collective).
    ///
    /// Before any byte leaves a rank, the ranks gather the plan's fingerprint, the
    /// element type, the scalars and every rank's buffer check (the gather travels with
    /// the round, overlapped with packing into the plan's own buffers); on any mismatch
    /// every rank returns the same error and no user buffer is written.
    ///
    /// # Complexity
    /// One gather of 16 words per rank and one communication round with at most one
    /// message per peer; O(elements moved) work, in parallel.
    ///
    /// # Errors
    /// The same error on every rank: [`Error::Inconsistent`] if ranks run different
    /// plans or pass a different element type or scalars; [`Error::Mismatched`] if the
    /// number of jobs differs from the batch; [`Error::Relabeling`] if β ≠ 0 for a
    /// relabeled target whose contents are [`TargetContents::AsGiven`](super::TargetContents)
    /// (see [`Relabeling`](super::Relabeling)); [`Error::BufferSize`] if a buffer is
    /// shorter than its layout needs on this rank; [`Error::Transport`] if a package
    /// exceeds the transport's message limit or the transport fails.
    pub fn execute<T: Element>(
        &mut self,
        transport: &mut dyn Transport,
        jobs: &mut [Job<'_, T>],
    ) -> Result<()> {
        let t0 = Instant::now();
        let stream = match self.streaming {
            Streaming::Auto => {
                let (sent, received, local) = self.elements();
                (sent + received + local) * T::BYTES >= STREAM_MIN_BYTES
            }
            Streaming::Never => false,
            Streaming::Always => true,
        };
        let s = &self.schedule;
        self.buffers.prepare(s, T::BYTES);
        let mine = self.check_words(jobs);
        self.peer_work.resize(s.recvs.len(), None);
        let b = &mut self.buffers;
        b.check.resize(CHECK_WORDS * s.size, 0);
        let mut send_buf = take_buffer(b.send_words);
        let mut recv_buf = take_buffer(b.recv_words);
        let round = Round {
            send_buf: words_as_bytes(&mut send_buf[..b.send_words]),
            sends: &b.sends,
            recv_buf: words_as_bytes(&mut recv_buf[..b.recv_words]),
            recvs: &b.recvs,
            check: &mine,
            checked: &mut b.check,
        };
        let mut handler = Handler {
            schedule: s,
            jobs,
            mode: Mode {
                par: transport.threads() > 1,
                stream,
            },
            // A short buffer on this rank or a β the plan cannot honour: pack nothing
            // (the verdict stops the round).
            pack: mine[3] == s.pairs.len() as u64 && mine[5] == 0 && mine[9] == 0,
            max_message: transport.max_message_bytes(),
            packed: 0,
            stats: ExecStats::default(),
            rank: transport.rank(),
            peer_work: &mut self.peer_work,
        };
        let before_round = t0.elapsed().as_secs_f64();
        handler.stats.check = before_round;
        let t1 = Instant::now();
        let r = transport.exchange(round, &mut handler);
        give_back(send_buf);
        give_back(recv_buf);
        let mut st = handler.stats;
        if r.is_ok() {
            st.sent_in_place = b.sends.len().saturating_sub(handler.packed);
        }
        let round_time = t1.elapsed().as_secs_f64();
        let judging = st.check - before_round;
        st.wait = (round_time - st.pack - judging - st.local - st.unpack).max(0.0);
        st.total = t0.elapsed().as_secs_f64();
        self.stats = st;
        r
    }

    fn check_words<T: Element>(&self, jobs: &[Job<'_, T>]) -> [u64; CHECK_WORDS] {
        let s = &self.schedule;
        let scalars = jobs
            .iter()
            .flat_map(|j| j.alpha.bits().into_iter().chain(j.beta.bits()))
            .fold(0xcbf2_9ce4_8422_2325u64, |h, w| {
                (h ^ w).wrapping_mul(0x0000_0100_0000_01b3)
            });
        // (index, operand, got, expected) of the first short buffer, operand 0 = none.
        let mut bad = [0u64; 4];
        if jobs.len() == s.pairs.len() {
            for (k, (j, p)) in jobs.iter().zip(&s.pairs).enumerate() {
                if j.source.len() < p.source_len {
                    bad = [k as u64, 1, j.source.len() as u64, p.source_len as u64];
                    break;
                }
                if j.target.len() < p.target_len {
                    bad = [k as u64, 2, j.target.len() as u64, p.target_len as u64];
                    break;
                }
            }
        }
        // 1 + the first transform whose β reads A where a relabeled plan cannot.
        let beta_on_relabeled = jobs
            .iter()
            .zip(&s.pairs)
            .position(|(j, p)| p.needs_zero_beta && j.beta != T::zero())
            .map_or(0, |k| k as u64 + 1);
        let max_package = self
            .buffers
            .sends
            .iter()
            .chain(&self.buffers.recvs)
            .map(|p| p.range.len())
            .max()
            .unwrap_or(0);
        [
            s.fingerprint,
            T::KIND as u64,
            scalars,
            jobs.len() as u64,
            bad[0],
            bad[1],
            bad[2],
            bad[3],
            max_package as u64,
            beta_on_relabeled,
            self.unchecked[0],
            self.unchecked[1],
            self.unchecked[2],
            self.unchecked[3],
            self.unchecked[4],
            self.unchecked[5],
        ]
    }
}

/// This rank's storage check before planning, as words every rank can judge:
/// `[1 + transform, operand (1 = source, 2 = target), lld, local extent, 1 if rows]`
/// of the first layout whose `lld` is too small for this rank, or zeros.
fn storage_words(batch: &[Transform], rank: usize) -> [u64; 5] {
    for (k, t) in batch.iter().enumerate() {
        for (operand, l) in [(1, &t.source), (2, &t.target)] {
            if let (Layout::BlockCyclic(bc), Err(_)) = (l, l.check_storage(rank)) {
                let spec = bc.spec();
                let (prow, pcol) = bc.grid_position(rank).unwrap_or((0, 0));
                let (extent, rows) = match spec.local_order {
                    Order::ColMajor => (bc.local_rows(prow), 1),
                    Order::RowMajor => (bc.local_cols(pcol), 0),
                };
                return [
                    k as u64 + 1,
                    operand,
                    spec.lld.unwrap_or(0) as u64,
                    extent as u64,
                    rows,
                ];
            }
        }
    }
    [0; 5]
}

/// The error for rank `r`'s storage words (see [`storage_words`]).
fn storage_error(r: usize, x: &[u64]) -> Error {
    Error::Layout {
        field: "lld",
        detail: format!(
            "rank {r}, transform {}, {}: leading dimension {} is smaller than that rank's {} \
             local {}; no data was moved",
            x[0] - 1,
            if x[1] == 1 {
                "source (B)"
            } else {
                "target (A)"
            },
            x[2],
            x[3],
            if x[4] == 1 { "rows" } else { "columns" },
        ),
    }
}

/// [`Error::Inconsistent`] naming `what` if some rank's word `w` differs from rank 0's.
fn same_everywhere(rows: &[&[u64]], w: usize, what: &'static str) -> Result<()> {
    match rows.iter().position(|x| x[w] != rows[0][w]) {
        Some(r) => Err(Error::Inconsistent {
            what,
            rank: r,
            found: rows[r][w],
            expected: rows[0][w],
        }),
        None => Ok(()),
    }
}

/// The common verdict of all ranks on the gathered check words.
fn verdict(all: &[u64], n_pairs: usize, max_message: usize) -> Result<()> {
    let rows: Vec<&[u64]> = all.chunks_exact(CHECK_WORDS).collect();
    same_everywhere(&rows, 0, "plan")?;
    // A plan made without a collective step: each rank's storage, then its planning.
    if let Some(r) = rows.iter().position(|x| x[10] != 0) {
        return Err(storage_error(r, &rows[r][10..15]));
    }
    if let Some(r) = rows.iter().position(|x| x[15] != 0) {
        return Err(Mismatched::PlanFailedOn { rank: r }.into());
    }
    same_everywhere(&rows, 1, "element type")?;
    if let Some(r) = rows.iter().position(|x| x[3] != n_pairs as u64) {
        return Err(Mismatched::JobCount {
            rank: r,
            jobs: rows[r][3],
            transforms: n_pairs,
        }
        .into());
    }
    same_everywhere(&rows, 2, "scalars α, β")?;
    // Equal scalars and plans on all ranks: rank 0's word stands for all.
    if rows[0][9] != 0 {
        return Err(Error::Relabeling(format!(
            "transform {}: β ≠ 0 reads A's existing values, which are stored in the target \
             layout as given, but the plan relabeled the target (σ ≠ identity) and would read \
             them from the relabeled layout; plan with Relabeling::Off, or declare \
             TargetContents::Relabeled if A is stored in the relabeled layout; no data was moved",
            rows[0][9] - 1
        )));
    }
    if let Some(r) = rows.iter().position(|x| x[5] != 0) {
        let x = rows[r];
        return Err(Error::BufferSize {
            rank: r,
            index: x[4] as usize,
            operand: if x[5] == 1 {
                "source (B)"
            } else {
                "target (A)"
            },
            got: x[6] as usize,
            expected: x[7] as usize,
        });
    }
    if let Some(r) = rows.iter().position(|x| x[8] > max_message as u64) {
        return Err(Error::Transport(format!(
            "rank {r} has a package of {} bytes, more than the {max_message} bytes one message can carry; no data was moved",
            rows[r][8]
        )));
    }
    Ok(())
}

/// Plans and executes a batch in one call (collective) and returns the relabeled
/// target layouts.
///
/// With relabeling on, the A buffers must already have the sizes of the relabeled
/// layouts; use [`ReshufflePlan`] to learn them first, and to execute repeatedly.
/// A transform with β ≠ 0, [`Relabeling::Optimal`] and A's contents
/// [`TargetContents::AsGiven`] is planned without relabeling: A's existing values are
/// where the given layout says, and only the identity reads them there.
///
/// # Errors
/// As [`ReshufflePlan::new`] and [`ReshufflePlan::execute`].
pub fn reshuffle<T: Element>(
    transport: &mut dyn Transport,
    mut batch: Vec<Transform>,
    jobs: &mut [Job<'_, T>],
) -> Result<Vec<Layout>> {
    keep_targets_where_beta_reads_them(&mut batch, jobs);
    Ok(ReshufflePlan::plan_and_execute(transport, batch, jobs)?.targets())
}

/// For one-call use, where β is known before planning: a transform with β ≠ 0,
/// [`Relabeling::Optimal`] and A's contents [`TargetContents::AsGiven`] is planned
/// without relabeling (only the identity reads A's existing values where they are).
pub(crate) fn keep_targets_where_beta_reads_them<T: Element>(
    batch: &mut [Transform],
    jobs: &[Job<'_, T>],
) {
    for (t, j) in batch.iter_mut().zip(jobs) {
        if t.relabeling == Relabeling::Optimal
            && t.contents == TargetContents::AsGiven
            && j.beta != T::zero()
        {
            t.relabeling = Relabeling::Off;
        }
    }
}

/// The engine's side of a round.
struct Handler<'s, 'j, 'a, T> {
    schedule: &'s Schedule,
    jobs: &'j mut [Job<'a, T>],
    /// How the kernels run.
    mode: Mode,
    /// This rank's buffers are large enough to pack from.
    pack: bool,
    /// The transport's largest message.
    max_message: usize,
    /// Outgoing packages handed to `pack` (the others were sent from where they lie).
    packed: usize,
    stats: ExecStats,
    /// This rank.
    rank: usize,
    /// The plan's moves that read incoming packages from their senders' B.
    peer_work: &'s mut Vec<Option<Option<PeerWork>>>,
}

impl<T: Element> RoundHandler for Handler<'_, '_, '_, T> {
    fn pack(&mut self, k: usize, out: &mut [u8]) {
        self.packed += 1;
        if !self.pack {
            return;
        }
        let t = Instant::now();
        let runs = &self.schedule.sends[k].runs;
        let jobs: &[Job<'_, T>] = self.jobs;
        pack_par(out, runs, jobs, self.mode);
        self.stats.pack += t.elapsed().as_secs_f64();
    }

    fn verdict(&mut self, all: &[u64]) -> Result<()> {
        let t = Instant::now();
        let r = verdict(all, self.schedule.pairs.len(), self.max_message);
        self.stats.check += t.elapsed().as_secs_f64();
        r
    }

    fn overlap(&mut self) {
        let t = Instant::now();
        let s = self.schedule;
        run_work(&s.local, self.jobs, &s.pairs, Origin::B, self.mode);
        self.stats.local += t.elapsed().as_secs_f64();
    }

    fn unpack(&mut self, k: usize, data: &[u8]) {
        let t = Instant::now();
        let s = self.schedule;
        let work = &s.recvs[k].work;
        run_work(work, self.jobs, &s.pairs, Origin::Package(data), self.mode);
        self.stats.unpack += t.elapsed().as_secs_f64();
    }

    fn send_sources(&mut self, k: usize) -> Option<Vec<Option<Span>>> {
        if !self.pack {
            return None;
        }
        let mut sources: Vec<Option<Span>> = vec![None; self.jobs.len()];
        for &(pair, _) in &self.schedule.sends.get(k)?.runs {
            let j = self.jobs.get(pair as usize)?;
            let bytes = std::mem::size_of_val(j.source);
            // SAFETY (of the span, see `Span::new`): the job's whole B, which the
            // caller lends for the whole round and nothing writes meanwhile.
            sources[pair as usize] =
                Some(unsafe { Span::new(j.source.as_ptr().cast::<u8>(), bytes, 1, bytes) });
        }
        Some(sources)
    }

    fn reads_sources(&self) -> bool {
        true
    }

    fn source_storage(&self) -> u64 {
        // Ranks may give block-cyclic layouts that differ only in their leading
        // dimension (each its own): a receiver maps moves onto a sender's B with its
        // own, so it may read the sender's B only where the two agree.
        self.schedule
            .pairs
            .iter()
            .map(|p| match &p.source {
                Layout::BlockCyclic(bc) => bc.spec().lld.map_or(0, |l| l as u64 + 1),
                _ => 0,
            })
            .fold(0xcbf2_9ce4_8422_2325u64, |h, w| {
                (h ^ w).wrapping_mul(0x0000_0100_0000_01b3)
            })
    }

    fn read_sources(&mut self, k: usize, sources: &[Option<Span>]) -> bool {
        let t = Instant::now();
        let s = self.schedule;
        let Some(slot) = self.peer_work.get_mut(k) else {
            return false;
        };
        if slot.is_none() {
            let mapping = Instant::now();
            *slot = Some(s.peer_work(k, self.rank));
            self.stats.sources_mapped += 1;
            self.stats.source_mapping += mapping.elapsed().as_secs_f64();
        }
        let Some(Some(pw)) = slot.as_ref() else {
            return false;
        };
        // Every transform with pieces in the package needs its B, long enough.
        let enough = pw.need.iter().enumerate().all(|(p, &need)| {
            pw.work.pair_groups[p].is_empty()
                || sources
                    .get(p)
                    .copied()
                    .flatten()
                    .is_some_and(|sp| sp.bytes() >= need * T::BYTES)
        });
        if !enough || sources.len() != self.jobs.len() {
            return false;
        }
        run_work(
            &pw.work,
            self.jobs,
            &s.pairs,
            Origin::Peers(sources),
            self.mode,
        );
        self.stats.read_from_source += 1;
        self.stats.unpack += t.elapsed().as_secs_f64();
        true
    }

    fn send_spans(&mut self, k: usize) -> Option<Vec<Span>> {
        if !self.pack {
            return None;
        }
        let extents = self.schedule.sends[k].extents.as_deref()?;
        let bufs: Vec<(*const u8, usize)> = self
            .jobs
            .iter()
            .map(|j| (j.source.as_ptr().cast::<u8>(), j.source.len()))
            .collect();
        // Counted once the round is over: a transport may still pack a package it asked
        // the spans of (`sent_in_place` counts the packages never packed).
        spans_in(extents, &bufs, T::BYTES)
    }

    fn recv_spans(&mut self, k: usize) -> Option<Vec<Span>> {
        let r = &self.schedule.recvs[k];
        let extents = r.extents.as_deref()?;
        // Only a plain copy may land unchanged: α = 1, β = 0, no conjugation, for
        // every transform with pieces in the package.
        let plain = self.jobs.iter().enumerate().all(|(p, j)| {
            let u = Update {
                alpha: j.alpha,
                beta: j.beta,
                conj: self.schedule.pairs[p].op == Op::ConjTranspose,
            };
            r.work.pair_groups[p].is_empty() || (u.beta_is_zero() && u.alpha_is_one() && !u.conj)
        });
        if !plain {
            return None;
        }
        let bufs: Vec<(*const u8, usize)> = self
            .jobs
            .iter_mut()
            .map(|j| {
                (
                    j.target.as_mut_ptr().cast::<u8>().cast_const(),
                    j.target.len(),
                )
            })
            .collect();
        // SAFETY (of the spans, see `Span::new`): the extents are A elements that only
        // this package writes (each element of A is the target of exactly one piece of
        // one transform, and no local move or other package touches it), inside the
        // job's buffer (checked by `spans_in`), which outlives the round.
        spans_in(extents, &bufs, T::BYTES)
    }

    fn received(&mut self, _k: usize) {
        self.stats.received_in_place += 1;
    }
}

/// Byte spans of `extents` in the buffers `bufs` (address and length in elements of
/// `elem` bytes, per transform); `None` if an extent leaves its buffer.
fn spans_in(extents: &[Extent], bufs: &[(*const u8, usize)], elem: usize) -> Option<Vec<Span>> {
    extents
        .iter()
        .map(|e| {
            let &(base, len) = bufs.get(e.pair as usize)?;
            let end = e
                .count
                .checked_sub(1)?
                .checked_mul(e.stride)?
                .checked_add(e.off)?
                .checked_add(e.inner)?;
            if end > len {
                return None;
            }
            // SAFETY: every line lies inside the job's buffer (`end <= len`), which the
            // caller borrows for the whole round; what else the caller promises is
            // stated where it calls this.
            Some(unsafe {
                Span::new(
                    base.add(e.off * elem),
                    e.inner * elem,
                    e.count,
                    e.stride * elem,
                )
            })
        })
        .collect()
}

/// Packs `runs` into `out` (a package), splitting the package between rayon tasks.
fn pack_par<T: Element>(out: &mut [u8], runs: &[(u32, PackRun)], jobs: &[Job<'_, T>], mode: Mode) {
    if !mode.par
        || runs.len() <= 1
        || runs.iter().map(|r| r.1.inner * r.1.outer).sum::<usize>() <= 1 << 15
    {
        let base = runs.first().map_or(0, |r| r.1.dst);
        for (pair, r) in runs {
            let mut rr = *r;
            rr.dst -= base;
            pack(out, &rr, jobs[*pair as usize].source, mode.stream);
        }
        // Streaming stores are fenced by the thread that made them.
        if mode.stream {
            stream_fence();
        }
        return;
    }
    let mid = runs.len() / 2;
    let split = (runs[mid].1.dst - runs[0].1.dst) * T::BYTES;
    let (lo, hi) = out.split_at_mut(split);
    rayon::join(
        || pack_par(lo, &runs[..mid], jobs, mode),
        || pack_par(hi, &runs[mid..], jobs, mode),
    );
}

/// Where the moves of [`run_work`] read.
#[derive(Clone, Copy)]
enum Origin<'d> {
    /// This rank's B (local pieces).
    B,
    /// A received package.
    Package(&'d [u8]),
    /// The sender's B of every transform, mapped into this process (a package read
    /// from node-shared memory).
    Peers(&'d [Option<Span>]),
}

/// Runs a set of moves: for each transform with work, its groups run in parallel on
/// disjoint regions of A, reading from `data`.
fn run_work<T: Element>(
    work: &Work,
    jobs: &mut [Job<'_, T>],
    pairs: &[super::schedule::PairPlan],
    data: Origin<'_>,
    mode: Mode,
) {
    for (k, job) in jobs.iter_mut().enumerate() {
        let gr = work.pair_groups[k].clone();
        if gr.is_empty() {
            continue;
        }
        let groups = &work.groups[gr];
        let update = Update {
            alpha: job.alpha,
            beta: job.beta,
            conj: pairs[k].op == Op::ConjTranspose,
        };
        let regions = &pairs[k].regions;
        let start = regions[groups[0].1 as usize].start;
        let a = &mut job.target[start..];
        let peer: &[u8];
        match data {
            Origin::Package(d) => with_combine!(update, c => {
                run_groups(a, start, groups, regions, &work.moves, &Bytes(d), c, mode)
            }),
            Origin::Peers(sources) => {
                let Some(sp) = sources.get(k).copied().flatten() else {
                    continue;
                };
                // SAFETY: the transport mapped the sender's B here and keeps it
                // unchanged until this round's acknowledgement; the caller checked
                // that every move stays inside it.
                peer = unsafe { std::slice::from_raw_parts(sp.addr() as *const u8, sp.bytes()) };
                with_combine!(update, c => {
                    run_groups(a, start, groups, regions, &work.moves, &Bytes(peer), c, mode)
                })
            }
            Origin::B => {
                let src = Slice(job.source);
                with_combine!(update, c => {
                    run_groups(a, start, groups, regions, &work.moves, &src, c, mode)
                })
            }
        }
    }
}

/// Applies the moves of `groups` to `a` (which starts at element `base` of A),
/// splitting `a` at region boundaries between rayon tasks (when `mode.par`).
#[allow(clippy::too_many_arguments)]
fn run_groups<T: Element, S: Src<T>, C: Combine<T>>(
    a: &mut [T],
    base: usize,
    groups: &[(u32, u32, Range<usize>)],
    regions: &[Range<usize>],
    moves: &[Move],
    src: &S,
    c: C,
    mode: Mode,
) {
    let small = || {
        groups
            .iter()
            .flat_map(|g| &moves[g.2.clone()])
            .map(|m| m.rows * m.cols)
            .sum::<usize>()
            <= 1 << 15
    };
    if !mode.par || groups.len() <= 1 || small() {
        for g in groups {
            let r = &regions[g.1 as usize];
            let region = &mut a[r.start - base..r.end - base];
            for m in &moves[g.2.clone()] {
                apply(region, m, src, c, mode.stream);
            }
        }
        // Streaming stores are fenced by the thread that made them.
        if mode.stream {
            stream_fence();
        }
        return;
    }
    let mid = groups.len() / 2;
    let split = regions[groups[mid].1 as usize].start;
    let (lo, hi) = a.split_at_mut(split - base);
    rayon::join(
        || run_groups(lo, base, &groups[..mid], regions, moves, src, c, mode),
        || run_groups(hi, split, &groups[mid..], regions, moves, src, c, mode),
    );
}
