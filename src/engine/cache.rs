//! Plans kept for repeated calls: the same layouts, op and element type reuse the plan
//! without the caller keeping it.

use super::element::{Element, ElementKind};
use super::exec::{keep_targets_where_beta_reads_them, Job, ReshufflePlan};
use super::schedule::Transform;
use crate::error::Result;
use crate::transport::Transport;

/// One kept plan: the batch exactly as passed on this rank (local storage included),
/// the element type it ran with, and its size.
#[derive(Debug)]
struct Entry {
    batch: Vec<Transform>,
    kind: ElementKind,
    plan: ReshufflePlan,
    bytes: usize,
}

/// A bounded cache of [`ReshufflePlan`]s for callers that redistribute the same layouts
/// again and again but cannot keep a plan themselves (a ScaLAPACK-style entry point
/// with the signature of `pdgemr2d`).
///
/// [`PlanCache::execute`] looks the batch up by equality of every transform (source and
/// target layouts with their local storage, op, relabeling, target contents) and the
/// element type, on this rank alone: a plan is a function of the batch, the rank and
/// the communicator size, so a rank that kept it and a rank that plans anew (its cache
/// was cleared or evicted differently) hold the same plan, and both take part in the
/// same single collective step, the execution's check, which verifies that all ranks
/// run the same batch before any data moves. A cached call therefore costs what
/// [`ReshufflePlan::execute`] costs plus a lookup. Least recently used plans are
/// dropped beyond `max_plans` or `max_bytes` of plan memory.
///
/// # Example
/// ```
/// use copr::engine::{Job, PlanCache, Relabeling, Transform};
/// use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op};
/// use copr::transport::{run_in_process, Transport};
///
/// let src: Layout = BlockCyclic::new(BlockCyclicSpec::new(8, 8, 2, 2, 2, 1)).unwrap().into();
/// let dst: Layout = BlockCyclic::new(BlockCyclicSpec::new(8, 8, 4, 4, 1, 2)).unwrap().into();
/// let hits = run_in_process(2, |t| {
///     let mut cache = PlanCache::new(4, 1 << 30);
///     let batch = vec![Transform::new(src.clone(), dst.clone(), Op::Identity)
///         .with_relabeling(Relabeling::Off)];
///     let b = vec![1.0f64; src.local_len(t.rank())];
///     let mut a = vec![0.0f64; dst.local_len(t.rank())];
///     for _ in 0..3 {
///         cache.execute(t, &batch, &mut [Job::copy(&b, &mut a)]).unwrap();
///     }
///     (cache.hits(), cache.misses())
/// })
/// .unwrap();
/// assert_eq!(hits, vec![(2, 1), (2, 1)]);
/// ```
#[derive(Debug)]
pub struct PlanCache {
    max_plans: usize,
    max_bytes: usize,
    /// Least recently used first.
    entries: Vec<Entry>,
    hits: u64,
    misses: u64,
}

impl PlanCache {
    /// An empty cache keeping at most `max_plans` plans and `max_bytes` bytes of plan
    /// memory ([`ReshufflePlan::memory_bytes`]; the package storage is shared by all
    /// plans of a thread and not counted, see [`super::release_buffers`]). The plan
    /// being executed is always kept, whatever the limits (`max_plans = 0` acts as 1).
    pub fn new(max_plans: usize, max_bytes: usize) -> Self {
        Self {
            max_plans: max_plans.max(1),
            max_bytes,
            entries: Vec::new(),
            hits: 0,
            misses: 0,
        }
    }

    /// Executes `batch` with `jobs` (collective), planning only when this batch and
    /// element type have no plan yet on some rank.
    ///
    /// As in [`super::reshuffle`], a transform with β ≠ 0,
    /// [`Relabeling::Optimal`](super::Relabeling::Optimal) and A's contents
    /// [`TargetContents::AsGiven`](super::TargetContents::AsGiven) is planned without
    /// relabeling. With relabeling, A's buffers must have the sizes of the relabeled
    /// layouts: ask [`PlanCache::plan`] first.
    ///
    /// # Errors
    /// As [`ReshufflePlan::new`] and [`ReshufflePlan::execute`]; the same error on
    /// every rank.
    pub fn execute<T: Element>(
        &mut self,
        transport: &mut dyn Transport,
        batch: &[Transform],
        jobs: &mut [Job<'_, T>],
    ) -> Result<&ReshufflePlan> {
        let mut batch = batch.to_vec();
        keep_targets_where_beta_reads_them(&mut batch, jobs);
        let found = self
            .entries
            .iter()
            .position(|e| e.kind == T::KIND && e.batch == batch);
        if let Some(k) = found {
            self.hits += 1;
            let e = self.entries.remove(k);
            self.entries.push(e);
            let e = self.entries.last_mut().expect("just pushed");
            e.plan.execute(transport, jobs)?;
            return Ok(&e.plan);
        }
        self.misses += 1;
        let plan = ReshufflePlan::plan_and_execute(transport, batch.clone(), jobs)?;
        self.keep(batch, T::KIND, plan);
        Ok(&self.entries.last().expect("just kept").plan)
    }

    /// The plan for `batch` and element type `kind` (collective: one gather of two
    /// words, so that the ranks agree whether to plan): the kept one if every rank has
    /// it, else a new one (kept).
    ///
    /// # Errors
    /// As [`ReshufflePlan::new`]; the same error on every rank.
    pub fn plan(
        &mut self,
        transport: &mut dyn Transport,
        batch: &[Transform],
        kind: ElementKind,
    ) -> Result<&mut ReshufflePlan> {
        let k = self.lookup(transport, batch.to_vec(), kind)?;
        Ok(&mut self.entries[k].plan)
    }

    /// Index of the plan for `batch` (most recently used: the last entry).
    fn lookup(
        &mut self,
        transport: &mut dyn Transport,
        batch: Vec<Transform>,
        kind: ElementKind,
    ) -> Result<usize> {
        let found = self
            .entries
            .iter()
            .position(|e| e.kind == kind && e.batch == batch);
        let mine = [
            found.map_or(0, |k| self.entries[k].plan.fingerprint()),
            u64::from(found.is_some()),
        ];
        let mut all = vec![0u64; 2 * transport.size()];
        transport.all_gather(&mine, &mut all)?;
        let everywhere = all.chunks_exact(2).all(|w| w[1] == 1 && w[0] == all[0]);
        if let (true, Some(k)) = (everywhere, found) {
            self.hits += 1;
            let e = self.entries.remove(k);
            self.entries.push(e);
            return Ok(self.entries.len() - 1);
        }
        self.misses += 1;
        if let Some(k) = found {
            self.entries.remove(k);
        }
        let plan = ReshufflePlan::new(transport, batch.clone())?;
        self.keep(batch, kind, plan);
        Ok(self.entries.len() - 1)
    }

    /// Keeps a new plan as the most recently used, dropping the least recently used
    /// beyond the limits (never the new plan).
    fn keep(&mut self, batch: Vec<Transform>, kind: ElementKind, plan: ReshufflePlan) {
        let bytes = plan.memory_bytes();
        self.entries.push(Entry {
            batch,
            kind,
            plan,
            bytes,
        });
        while self.entries.len() > 1
            && (self.entries.len() > self.max_plans || self.bytes() > self.max_bytes)
        {
            self.entries.remove(0);
        }
    }

    /// Drops every kept plan (local; no communication).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Number of kept plans.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no plan is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Plan memory kept, in bytes.
    pub fn bytes(&self) -> usize {
        self.entries.iter().map(|e| e.bytes).sum()
    }

    /// Calls served by a kept plan.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Calls that planned.
    pub fn misses(&self) -> u64 {
        self.misses
    }
}
