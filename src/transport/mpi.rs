//! The MPI transport (rsmpi): non-blocking sends and receives, wait-any, and packages
//! read in place from a node-shared window between ranks of one node.

use mpi::datatype::Equivalence;
use mpi::ffi;
use mpi::point_to_point::{Destination, Source, Status};
use mpi::raw::AsRaw;
use mpi::request::{multiple_scope, LocalScope, Request, RequestCollection, Scope};
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use super::cma;
use super::shared::{self, Registry, SharedBuffer};
use super::{check_round, span_bytes, Package, Round, RoundHandler, Span, Transport};
use crate::error::{Error, Result};

/// Tag of copr's round messages ("co").
const TAG: i32 = 0x636f;
/// Tag of the acknowledgements of packages read from the shared window.
const TAG_ACK: i32 = 0x636f + 1;
/// First word of a shared-window descriptor message.
const MAGIC: u64 = 0x636f_7072_5769_6e64;
/// Bytes of a shared-window descriptor message: [`MAGIC`], offset and length, three
/// `u64`.
const DESCRIPTOR: usize = 24;
/// Packages from this size on go through the shared window (smaller ones are cheaper
/// as one eager message than as descriptor + acknowledgement).
const SHARED_MIN: usize = 16 << 10;
/// First word of a single-copy descriptor message.
const MAGIC_CMA: u64 = 0x636f_7072_436d_6120;
/// Bytes of a single-copy descriptor's header: [`MAGIC_CMA`], the sender's pid, the
/// number of spans and a zero; then four words per span (address, block bytes, blocks,
/// stride).
const CMA_HEADER: usize = 32;
/// Bytes per span in a single-copy descriptor.
const CMA_SPAN: usize = 32;
/// [`SingleCopy::Auto`] sends a package for single-copy reading only when its blocks in
/// the sender's memory average at least this many bytes: the kernel pins the pages of
/// every block it reads (about a microsecond per block here), which costs more than
/// the window's extra pass for short blocks.
pub const SINGLE_COPY_MIN_BLOCK: usize = 64 << 10;
/// First word of a shared-source descriptor message (the receiver reads the package
/// from the sender's node-shared B itself).
const MAGIC_SRC: u64 = 0x636f_7072_5372_6342;
/// Bytes of a shared-source descriptor's header: [`MAGIC_SRC`], the number of entries
/// and two zeros; then three words per entry (allocation id, 0 for none; offset in the
/// sender's part; bytes).
const SRC_HEADER: usize = 32;
/// Bytes per entry of a shared-source descriptor.
const SRC_ENTRY: usize = 24;
/// Alignment of packages in the shared window (a page, so that no two packages share
/// one and every package is aligned for every element type).
const SHARED_ALIGN: usize = 4096;

/// Whether packages between ranks of one node are read by their receiver straight from
/// the sender's memory (Linux cross-memory attach, `process_vm_readv`) instead of
/// going through the node-shared window ([`MpiTransport::with_single_copy`]).
///
/// A package read this way is copied once, from the sender's B into the receiver's A
/// for a plain copy (α = 1, β = 0, no conjugation) whose package lands as whole runs of
/// A, or into the receive buffer, to be transformed from there, otherwise. Only
/// packages the sender can name where they lie in B
/// ([`RoundHandler::send_spans`]: untransposed pieces) qualify; the others go through
/// the window as before. A rank whose reads the kernel refuses (a ptrace restriction,
/// another user's process, no such system call: probed once, when the transport is
/// created) or whose setting is [`SingleCopy::Never`] is sent its packages through the
/// window; every rank tells the others with the round's check words, so the choice is
/// always made by both sides alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SingleCopy {
    /// Read by single copy when the kernel copies fast enough on this machine (a
    /// receiver measures it once per process: one kernel copy of 4 MiB must take at
    /// most 1.5 times a `memcpy`) and the package's blocks in the sender's memory
    /// average at least [`SINGLE_COPY_MIN_BLOCK`] bytes (shorter blocks cost the kernel
    /// more than the window's extra pass).
    #[default]
    Auto,
    /// Never: every node-local package goes through the window (and this rank is
    /// never read from by single copy either, nor reads).
    Never,
    /// Whenever the package qualifies (for tests and measurements).
    Always,
}

/// A [`Transport`] over an MPI communicator.
///
/// Between ranks on **different nodes** every package is one `MPI_Isend`/`MPI_Irecv`
/// pair. Where the handler names a package's place in its data
/// ([`RoundHandler::send_spans`], [`RoundHandler::recv_spans`]), the message is sent
/// straight from there and received straight into place, through an MPI derived
/// datatype (a struct of byte hvectors, built per round): MPI's own copy replaces the
/// packing and unpacking passes, so a remote byte is copied twice instead of three
/// times (pack, MPI, unpack). [`MpiTransport::always_pack`] turns this off. Between ranks on the **same node** (the shared-memory domain of
/// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`), packages of 16 KiB and more are
/// written by the sender straight into a node-shared window
/// (`MPI_Win_allocate_shared`) and the message is a 24-byte descriptor: the receiver
/// hands the bytes to the handler *in place*, from the sender's memory, and then
/// acknowledges them so that the sender may reuse its window. Every remote byte is
/// then written once (packing) and read once (unpacking), instead of being copied a
/// third time by MPI. The window sizes itself: when a rank's node-local packages do
/// not fit in its segment, it says so with the round's check words, and once those
/// are in, the node's ranks grow the window together before that rank packs (all see
/// the same flags, so all agree without an extra collective); a rank that had already
/// packed into its old segment carries the bytes over. So node-local packages never
/// fall back to messages, not even in the first round, and the engine's send and
/// receive buffers are never written for them (zeroed allocations that are never
/// written take no memory).
/// [`MpiTransport::messages_only`] turns the window off. Packages that lie as whole
/// runs in the sender's B can instead be read by their receiver straight from there
/// ([`SingleCopy`], [`MpiTransport::with_single_copy`]); the sender then waits for the
/// receiver's acknowledgement before it returns, so B is not changed while it is read.
///
/// Incoming packages are handed to the handler in completion order (`MPI_Testany`
/// polled with a `sched_yield` between polls, so that with more ranks than cores a
/// waiting rank leaves the core to the peer it waits for). A package larger than one
/// MPI message can carry (`i32::MAX` bytes, MPI's count of `MPI_BYTE`s; see
/// [`MpiTransport::with_message_limit`]) travels as several messages to the same peer,
/// received in order into consecutive parts of its buffer; it is handed to the handler
/// once all parts are in.
///
/// Call it from the thread that initialised MPI (`MPI_THREAD_FUNNELED` suffices: the
/// engine's rayon threads never call MPI). Creating and dropping an `MpiTransport` are
/// collective over its communicator (the node communicator and the window are freed
/// on drop).
pub struct MpiTransport {
    comm: SimpleCommunicator,
    /// The ranks of `comm` that may share a window with this rank (its node, or its
    /// group on the node).
    node: SimpleCommunicator,
    /// Ranks of `comm` on this rank's physical node.
    node_ranks: usize,
    /// Rank in `node` of every rank of `comm` (`None`: on another node).
    node_rank: Vec<Option<i32>>,
    /// Use the shared window for packages between ranks of a node.
    shared: bool,
    /// Let MPI send and receive message packages in place (derived datatypes).
    spans: bool,
    /// Largest MPI message, in bytes; larger packages travel in parts.
    message_limit: usize,
    /// The node-shared window, once reserved.
    window: Option<Window>,
    /// Bytes sent as MPI messages to ranks that share the window group.
    node_message_bytes: u64,
    /// When node-local packages are read by single copy.
    single_copy: SingleCopy,
    /// Whether this rank could read every other rank of its window group by single
    /// copy (probed when the transport was made).
    can_read: bool,
    /// Bytes of the packages peers have read from this rank by single copy.
    single_copy_bytes: u64,
    /// This transport's node-shared buffers ([`MpiTransport::alloc_shared`]).
    registry: Registry,
    /// The largest id of a shared buffer this rank has allocated.
    next_shared_id: u64,
    /// Let receivers read packages from node-shared sources.
    shared_sources: bool,
    /// Bytes of packages peers have read from this rank's node-shared sources.
    shared_source_bytes: u64,
    /// Node-local packages from this size on go through the window.
    window_min: usize,
}

/// A node-shared window: this rank's segment and the addresses of every node rank's.
struct Window {
    win: ffi::MPI_Win,
    /// This rank's segment.
    base: *mut u8,
    cap: usize,
    /// Every node rank's segment (address, bytes).
    segments: Vec<(*const u8, usize)>,
}

impl Window {
    /// Allocates `bytes` for this rank (collective over `node`) and opens a passive
    /// epoch on all segments, so that `MPI_Win_sync` can order the accesses.
    fn allocate(node: &SimpleCommunicator, bytes: usize) -> Result<Self> {
        let (win, base, parts) = shared::allocate_window(node, bytes, 1)?;
        let segments = parts
            .into_iter()
            .map(|(a, n)| (a as *const u8, n))
            .collect();
        Ok(Self {
            win,
            base,
            cap: bytes,
            segments,
        })
    }

    /// Orders this rank's earlier writes before later reads (a memory barrier).
    /// This rank's segment bytes `off .. off + len`, to pack into.
    ///
    /// # Safety
    /// `off + len` must not exceed the segment, and no peer may read that range until
    /// this rank's descriptor for it arrives (nor may this slice outlive the window).
    #[allow(clippy::mut_from_ref)]
    unsafe fn part_mut(&self, off: usize, len: usize) -> &mut [u8] {
        debug_assert!(off + len <= self.cap);
        // SAFETY: inside the segment (the caller's contract), which nothing else
        // accesses meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(off), len) }
    }

    fn sync(&self) {
        // SAFETY: the window is valid and in a passive epoch (lock_all).
        unsafe { ffi::MPI_Win_sync(self.win) };
    }

    /// Closes the epoch and frees the window (collective over the node).
    fn free(mut self) {
        // SAFETY: the window is valid; every rank of the node frees it at the same point.
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
        }
    }
}

/// The packages' parts of a round buffer (ranges ordered and disjoint, as
/// [`check_round`] ensures).
fn package_slices<'b>(buf: &'b mut [u8], pkgs: &[Package]) -> Vec<&'b mut [u8]> {
    let mut out = Vec::with_capacity(pkgs.len());
    let mut rest = buf;
    let mut pos = 0;
    for p in pkgs {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(p.range.start - pos);
        let (part, tail) = tail.split_at_mut(p.range.len());
        rest = tail;
        pos = p.range.end;
        out.push(part);
    }
    out
}

/// A committed MPI datatype that walks `spans` in order, and the address it is
/// relative to (the first span's): `count` hvectors of bytes, each reused for every
/// span of its shape, tied together by one struct type. `None` if a count or length
/// exceeds what MPI's `int` arguments hold (the caller then copies the package
/// through its buffer instead).
fn span_type(spans: &[Span]) -> Option<(usize, ffi::MPI_Datatype)> {
    use std::collections::HashMap;
    let int = |x: usize| i32::try_from(x).ok();
    let base = spans.first()?.addr();
    int(spans.len())?;
    let mut shapes: HashMap<(usize, usize, usize), ffi::MPI_Datatype> = HashMap::new();
    let mut types = Vec::with_capacity(spans.len());
    let mut displs = Vec::with_capacity(spans.len());
    let byte = u8::equivalent_datatype().as_raw();
    let mut ok = true;
    for sp in spans {
        let (Some(count), Some(len), Ok(stride)) = (
            int(sp.count()),
            int(sp.len()),
            ffi::MPI_Aint::try_from(sp.stride()),
        ) else {
            ok = false;
            break;
        };
        let t = *shapes
            .entry((sp.count(), sp.len(), sp.stride()))
            .or_insert_with(|| {
                let mut t: ffi::MPI_Datatype = byte;
                // SAFETY: a plain constructor on valid arguments; `t` receives the type.
                unsafe { ffi::MPI_Type_create_hvector(count, len, stride, byte, &mut t) };
                t
            });
        types.push(t);
        // Two's complement difference: a span may lie below the first one.
        displs.push(sp.addr().wrapping_sub(base) as ffi::MPI_Aint);
    }
    let mut whole: Option<ffi::MPI_Datatype> = None;
    if ok {
        let ones = vec![1i32; types.len()];
        let mut t: ffi::MPI_Datatype = byte;
        // SAFETY: the three arrays hold `types.len()` (< 2^31) entries each.
        unsafe {
            ffi::MPI_Type_create_struct(
                types.len() as i32,
                ones.as_ptr(),
                displs.as_ptr(),
                types.as_ptr(),
                &mut t,
            );
            ffi::MPI_Type_commit(&mut t);
        }
        whole = Some(t);
    }
    for mut t in shapes.into_values() {
        // SAFETY: the struct type keeps what it needs of its parts.
        unsafe { ffi::MPI_Type_free(&mut t) };
    }
    whole.map(|t| (base, t))
}

/// Posts a send (`send`) or a receive of the bytes `spans` cover, to or from `peer`,
/// as one message of a derived datatype ([`span_type`]; `None` if it cannot be built).
///
/// # Safety
/// The spans are valid as [`Span::new`] requires until the request has completed.
unsafe fn post_in_place<'a, S: mpi::request::Scope<'a>>(
    send: bool,
    spans: &[Span],
    peer: usize,
    comm: &SimpleCommunicator,
    scope: S,
) -> Option<mpi::request::Request<'a, [u8], S>> {
    let (base, mut dt) = span_type(spans)?;
    // SAFETY: `dt` covers exactly the spans (the caller's contract keeps them valid);
    // a datatype may be freed once the operation using it is posted.
    unsafe {
        let mut raw: ffi::MPI_Request = ffi::RSMPI_REQUEST_NULL;
        let buf = base as *mut std::ffi::c_void;
        let (rank, comm) = (peer as i32, comm.as_raw());
        if send {
            ffi::MPI_Isend(buf, 1, dt, rank, TAG, comm, &mut raw);
        } else {
            ffi::MPI_Irecv(buf, 1, dt, rank, TAG, comm, &mut raw);
        }
        ffi::MPI_Type_free(&mut dt);
        Some(mpi::request::Request::from_raw(raw, &[][..], scope))
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        if let Some(w) = self.window.take() {
            w.free();
        }
    }
}

impl std::fmt::Debug for MpiTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiTransport")
            .field("rank", &self.comm.rank())
            .field("size", &self.comm.size())
            .field("node_ranks", &self.node_ranks)
            .field("window_group", &self.node.size())
            .field("shared", &self.shared)
            .field("window_bytes", &self.window.as_ref().map_or(0, |w| w.cap))
            .finish()
    }
}

impl MpiTransport {
    /// Wraps a communicator (e.g. `universe.world()`, or a duplicate of it to keep
    /// copr's messages apart from the application's).
    ///
    /// Collective over `comm`: it finds the ranks that share this rank's node
    /// (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`), so that the engine uses only
    /// this rank's share of the node's cores ([`Transport::threads`]) and packages
    /// between them can go through a shared window.
    pub fn new(comm: SimpleCommunicator) -> Self {
        Self::build(comm, None)
    }

    /// Like [`MpiTransport::new`], but ranks count as sharing a node only if they
    /// share the node *and* pass the same `group`: a shared window is only ever set up
    /// within a group, and ranks of different groups exchange messages. Use it to
    /// emulate several nodes on one machine (e.g. `rank / 2` as the group puts every
    /// two ranks on their own "node"), or to keep some ranks' memory out of windows.
    /// [`Transport::threads`] still counts all ranks of the physical node. Collective.
    pub fn with_groups(comm: SimpleCommunicator, group: u32) -> Self {
        Self::build(comm, Some(group))
    }

    fn build(comm: SimpleCommunicator, group: Option<u32>) -> Self {
        let physical = comm.split_shared(comm.rank());
        let node_cores = physical.size() as usize;
        let node = match group {
            None => physical,
            Some(g) => physical
                .split_by_color(Color::with_value(g.min(i32::MAX as u32) as i32))
                .expect("every rank passes a colour"),
        };
        let mut world_of = vec![0i32; node.size() as usize];
        node.all_gather_into(&comm.rank(), &mut world_of[..]);
        let mut node_rank = vec![None; comm.size() as usize];
        for (nr, &w) in world_of.iter().enumerate() {
            node_rank[w as usize] = Some(nr as i32);
        }
        let can_read = probe_single_copy(&node);
        Self {
            comm,
            node,
            node_ranks: node_cores,
            node_rank,
            shared: true,
            spans: true,
            message_limit: i32::MAX as usize,
            window: None,
            node_message_bytes: 0,
            single_copy: SingleCopy::Auto,
            can_read,
            single_copy_bytes: 0,
            registry: Registry::default(),
            next_shared_id: 0,
            shared_sources: true,
            shared_source_bytes: 0,
            window_min: SHARED_MIN,
        }
    }

    /// Allocates `len` zeroed elements of `T` that every rank of this transport's
    /// node (or group) can read ([`SharedBuffer`]); ranks may ask for different
    /// lengths. Put B there and the node's receivers read its packages straight into
    /// their A, without a packing pass (see [`SharedBuffer`]).
    ///
    /// Collective over the ranks of this rank's node (or group, see
    /// [`MpiTransport::with_groups`]); the buffer must be dropped, likewise
    /// collectively, before MPI is finalised.
    ///
    /// # Errors
    /// [`Error::Transport`] if some rank of the node asks for more bytes than MPI can
    /// allocate (on every rank of the node) or MPI fails.
    pub fn alloc_shared<T: bytemuck::Pod>(&mut self, len: usize) -> Result<SharedBuffer<T>> {
        SharedBuffer::allocate(&self.node, &self.registry, &mut self.next_shared_id, len)
    }

    /// Whether receivers on this rank's node read its packages straight from B when B
    /// lies in a [`SharedBuffer`] of this transport (default `true`; with `false`,
    /// such packages go through the shared window like any other). Ranks may differ:
    /// each side decides for its own packages.
    pub fn with_shared_sources(mut self, on: bool) -> Self {
        self.shared_sources = on;
        self
    }

    /// Bytes of this rank's packages that peers of its node (or group) have read
    /// straight from its node-shared B, since the transport was made.
    pub fn shared_source_bytes(&self) -> u64 {
        self.shared_source_bytes
    }

    /// Sets when node-local packages are read by single copy ([`SingleCopy`]; default
    /// [`SingleCopy::Auto`]). Ranks may differ: a sender asks for single copy only as
    /// its own setting allows, and a receiver set to [`SingleCopy::Never`] is always
    /// sent its packages through the window.
    pub fn with_single_copy(mut self, when: SingleCopy) -> Self {
        self.single_copy = when;
        self
    }

    /// Whether the kernel let this rank read every other rank of its node (or group)
    /// when the transport was made (`process_vm_readv` of a probe word); without it,
    /// no package is read by single copy and the window carries them all.
    pub fn single_copy_available(&self) -> bool {
        self.can_read
    }

    /// Bytes of this rank's packages that peers of its node (or group) have read
    /// straight from its memory by single copy, since the transport was made.
    pub fn single_copy_bytes(&self) -> u64 {
        self.single_copy_bytes
    }

    /// Whether peers may send this rank packages to read by single copy: it can
    /// ([`MpiTransport::single_copy_available`]), and its setting wants it
    /// ([`SingleCopy::Auto`]: where the kernel's copy is cheaper than the window's two,
    /// measured once per process).
    pub fn reads_single_copy(&self) -> bool {
        self.shared
            && self.can_read
            && match self.single_copy {
                SingleCopy::Never => false,
                SingleCopy::Always => true,
                SingleCopy::Auto => cma::pays(),
            }
    }

    /// Sets the largest MPI message, in bytes (default and maximum `i32::MAX`; at
    /// least 4096): a package beyond it travels as several messages. Mainly for
    /// testing the split path with small packages. Every rank must set the same limit;
    /// a round checks that they did and fails on every rank otherwise.
    pub fn with_message_limit(mut self, bytes: usize) -> Self {
        self.message_limit = bytes.clamp(4096, i32::MAX as usize);
        self
    }

    /// Sets the size from which node-local packages go through the shared window (or
    /// are read from their sender's node-shared B) instead of as MPI messages
    /// (default 16 KiB: a smaller package is cheaper as one eager message than as a
    /// descriptor and an acknowledgement). Mainly for testing those paths with small
    /// packages; at least 64 bytes (a package must be longer than its descriptor).
    /// Every rank must set the same size; a round checks that they did and fails on
    /// every rank otherwise.
    pub fn with_window_min(mut self, bytes: usize) -> Self {
        self.window_min = bytes.max(64);
        self
    }

    /// Sends every package as an MPI message, also between ranks of one node (no
    /// shared window). Call it on every rank alike, right after [`MpiTransport::new`].
    pub fn messages_only(mut self) -> Self {
        self.shared = false;
        self
    }

    /// Copies every message package through the round's buffers (packed by the
    /// handler, unpacked from the receive buffer) instead of letting MPI send it
    /// straight from the handler's data and receive it straight into it with derived
    /// datatypes ([`RoundHandler::send_spans`]). For an MPI library whose datatype
    /// engine is slow, and to measure what sending in place saves. Call it on every
    /// rank alike (each side decides alone, so mixing is correct, only slower).
    pub fn always_pack(mut self) -> Self {
        self.spans = false;
        self
    }

    /// Ranks of the communicator on this rank's node.
    pub fn node_ranks(&self) -> usize {
        self.node_ranks
    }

    /// Bytes of this rank's segment of the node-shared window (0 until a round needed
    /// one).
    pub fn window_bytes(&self) -> usize {
        self.window.as_ref().map_or(0, |w| w.cap)
    }

    /// Bytes of the packages this rank has sent as MPI messages, not through the
    /// shared window, to ranks of its node (or group), since it was created: those
    /// below 16 KiB, or all of them with [`MpiTransport::messages_only`].
    pub fn node_message_bytes(&self) -> u64 {
        self.node_message_bytes
    }

    /// Frees the shared window (collective: every rank calls it at the same point).
    /// It is set up again, as large as needed, by the next round that wants it: the
    /// window only grows otherwise, to the largest node-local volume of any round.
    pub fn release_window(&mut self) {
        if let Some(w) = self.window.take() {
            w.free();
        }
    }

    /// The wrapped communicator.
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// Whether a package goes through the shared window.
    fn via_window(&self, p: &Package) -> bool {
        self.shared && p.range.len() >= self.window_min && self.node_rank[p.peer].is_some()
    }

    /// Window offsets of the packages that go through it, in `sends` order (`None`:
    /// sent as a message), and the bytes they need.
    fn window_plan(&self, sends: &[Package]) -> (Vec<Option<usize>>, usize) {
        let mut end = 0usize;
        let offsets = sends
            .iter()
            .map(|p| {
                self.via_window(p).then(|| {
                    let start = end.div_ceil(SHARED_ALIGN) * SHARED_ALIGN;
                    end = start + p.range.len();
                    start
                })
            })
            .collect();
        (offsets, end)
    }

    /// Grows this node's window to hold `need` bytes in this rank's segment (its
    /// segment now holds `cap`), collectively over the node's ranks. No peer reads the
    /// old window any more (the last round waited for every acknowledgement); unless
    /// this rank's segment was `short`, it has already packed `need` bytes into it,
    /// which are carried over.
    fn grow_window(&mut self, need: usize, cap: usize, short: bool) -> Result<()> {
        let new = Window::allocate(&self.node, need.max(cap))?;
        if let Some(old) = self.window.take() {
            if !short && need > 0 {
                // SAFETY: both segments are this rank's and hold at least `need`
                // bytes; they are distinct allocations.
                unsafe { std::ptr::copy_nonoverlapping(old.base, new.base, need) };
            }
            old.free();
        }
        self.window = Some(new);
        Ok(())
    }
}

/// Whether this rank can read every other rank of `node` by single copy: every rank
/// publishes its pid and the address of a word holding a value derived from both, and
/// reads every other rank's word. Collective over `node`.
fn probe_single_copy(node: &SimpleCommunicator) -> bool {
    let mut token = Box::new(0u64);
    let pid = cma::pid();
    let addr = &*token as *const u64 as usize;
    let value = |pid: u64, addr: u64| pid.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ addr;
    *token = value(pid as u64, addr as u64);
    let mine = [pid as u64, addr as u64];
    let mut all = vec![0u64; 2 * node.size() as usize];
    node.all_gather_into(&mine[..], &mut all[..]);
    let me = node.rank() as usize;
    let ok = all
        .chunks_exact(2)
        .enumerate()
        .all(|(r, w)| r == me || cma::probe(w[0] as i32, w[1] as usize, value(w[0], w[1])));
    // Nobody frees its word while a peer may still read it.
    node.barrier();
    drop(token);
    ok
}

/// The single-copy descriptor of a package at `spans` in process `pid`, if it fits
/// the rules: shorter than the package (so that the receiver tells it from the package
/// itself) and than one message, and, under [`SingleCopy::Auto`], blocks of at least
/// [`SINGLE_COPY_MIN_BLOCK`] bytes on average.
fn cma_descriptor(
    spans: &[Span],
    len: usize,
    limit: usize,
    when: SingleCopy,
    pid: i32,
) -> Option<Vec<u8>> {
    let bytes = CMA_HEADER + CMA_SPAN * spans.len();
    if bytes >= len || bytes > limit || span_bytes(spans) != Some(len) {
        return None;
    }
    let blocks: usize = cma::merged(spans).iter().map(|s| s.count).sum();
    if when == SingleCopy::Auto && len < SINGLE_COPY_MIN_BLOCK * blocks.max(1) {
        return None;
    }
    let words = [MAGIC_CMA, pid as u64, spans.len() as u64, 0]
        .into_iter()
        .chain(
            spans
                .iter()
                .flat_map(|s| [s.addr, s.len, s.count, s.stride].map(|x| x as u64)),
        );
    Some(words.flat_map(u64::to_le_bytes).collect())
}

/// The sender's pid and spans of a single-copy descriptor (`None` if `data` is not
/// one: wrong magic or length).
fn parse_cma_descriptor(data: &[u8]) -> Option<(i32, Vec<Span>)> {
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            data.get(8 * i..8 * i + 8)?.try_into().ok()?,
        ))
    };
    if word(0)? != MAGIC_CMA {
        return None;
    }
    let n = usize::try_from(word(2)?).ok()?;
    if data.len() != CMA_HEADER.checked_add(CMA_SPAN.checked_mul(n)?)? {
        return None;
    }
    let pid = i32::try_from(word(1)?).ok()?;
    let spans = (0..n)
        .map(|i| {
            let w = |j: usize| word(4 + 4 * i + j).and_then(|x| usize::try_from(x).ok());
            // Addresses in the sender's memory: only the kernel reads there, after its
            // own checks (`cma::read`), so no `Span::new` contract applies.
            Some(Span {
                addr: w(0)?,
                len: w(1)?,
                count: w(2)?,
                stride: w(3)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((pid, spans))
}

/// The settings word of a rank that reads its senders' sources: never 0 (a rank that
/// does not read them sends 0), equal on two ranks when they describe the sources'
/// storage alike ([`RoundHandler::source_storage`]).
fn source_word(handler: &dyn RoundHandler) -> u64 {
    1 + (handler.source_storage() >> 1)
}

/// The shared-source descriptor of a package whose sources are `sources` (one entry
/// per buffer of the handler), if every source lies in one of `reg`'s allocations and
/// the descriptor is shorter than the package (so that the receiver tells it from the
/// package itself) and than one message.
fn src_descriptor(
    reg: &[shared::Segment],
    sources: &[Option<Span>],
    len: usize,
    limit: usize,
) -> Option<Vec<u8>> {
    let bytes = SRC_HEADER + SRC_ENTRY * sources.len();
    if bytes >= len || bytes > limit || sources.iter().all(Option::is_none) {
        return None;
    }
    let mut words = vec![MAGIC_SRC, sources.len() as u64, 0, 0];
    for s in sources {
        let (id, off, n) = match s {
            None => (0, 0, 0),
            Some(sp) => {
                let n = sp.bytes();
                let (id, off) = shared::locate(reg, sp.addr(), n)?;
                (id, off as u64, n as u64)
            }
        };
        words.extend([id, off, n]);
    }
    Some(words.into_iter().flat_map(u64::to_le_bytes).collect())
}

/// The entries of a shared-source descriptor: (allocation id, offset, bytes), id 0 for
/// none (`None` if `data` is not one: wrong magic or length).
fn parse_src_descriptor(data: &[u8]) -> Option<Vec<(u64, usize, usize)>> {
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            data.get(8 * i..8 * i + 8)?.try_into().ok()?,
        ))
    };
    if word(0)? != MAGIC_SRC {
        return None;
    }
    let n = usize::try_from(word(1)?).ok()?;
    if data.len() != SRC_HEADER.checked_add(SRC_ENTRY.checked_mul(n)?)? {
        return None;
    }
    (0..n)
        .map(|i| {
            let w = |j: usize| word(4 + 3 * i + j);
            Some((
                w(0)?,
                usize::try_from(w(1)?).ok()?,
                usize::try_from(w(2)?).ok()?,
            ))
        })
        .collect()
}

/// The sources a shared-source descriptor names, as spans of this process (the
/// sender's parts of the allocations, as mapped here), after ordering this process's
/// view of them; an error if an allocation is unknown or an entry leaves the sender's
/// part.
fn map_sources(
    reg: &[shared::Segment],
    entries: &[(u64, usize, usize)],
    sender: usize,
) -> std::result::Result<Vec<Option<Span>>, String> {
    entries
        .iter()
        .map(|&(id, off, n)| {
            if id == 0 {
                return Ok(None);
            }
            let seg = reg
                .iter()
                .find(|s| s.id == id)
                .ok_or_else(|| format!("it names shared buffer {id}, unknown here"))?;
            let &(base, bytes) = seg
                .parts
                .get(sender)
                .ok_or_else(|| format!("shared buffer {id} has no part of rank {sender}"))?;
            if off.checked_add(n).is_none_or(|e| e > bytes) {
                return Err(format!(
                    "bytes {off}..{} leave its {bytes}-byte part of shared buffer {id}",
                    off.saturating_add(n)
                ));
            }
            seg.sync();
            // SAFETY: inside the sender's part of a live allocation mapped into this
            // process (checked above); the sender keeps it unchanged until our
            // acknowledgement.
            Ok(Some(unsafe {
                Span::new((base + off) as *const u8, n, 1, n)
            }))
        })
        .collect()
}

/// Checks that every rank's gathered words (`words` per rank: `checks` check words,
/// then the short-segment flag, the message limit and the window setting) agree with
/// rank 0's on the message limit and on the use of the shared window: both sides of a
/// package must agree on whether it comes through the window (a receive posted
/// straight into A must not get a window descriptor).
fn agree_on_settings(all: &[u64], words: usize, checks: usize) -> Result<()> {
    let (limit, window) = (checks + 1, checks + 2);
    let rows = || all.chunks_exact(words).enumerate();
    if let Some((r, w)) = rows().find(|(_, w)| w[limit] != all[limit]) {
        return Err(Error::Transport(format!(
            "rank {r} limits MPI messages to {} bytes, rank 0 to {}; every rank must use the same limit (nothing was sent)",
            w[limit], all[limit]
        )));
    }
    if let Some((r, w)) = rows().find(|(_, w)| w[window] != all[window]) {
        if w[window] != 0 && all[window] != 0 {
            return Err(Error::Transport(format!(
                "rank {r} sends node-local packages from {} bytes on through the shared window, rank 0 from {}; every rank must use the same size (nothing was sent)",
                w[window] - 1,
                all[window] - 1
            )));
        }
        let (uses, first) = if all[window] == 0 {
            ("uses", "does not")
        } else {
            ("does not use", "does")
        };
        return Err(Error::Transport(format!(
            "rank {r} {uses} the shared window and rank 0 {first}; call messages_only() on every rank or on none (nothing was sent)"
        )));
    }
    Ok(())
}

/// What a request of a round is.
#[derive(Clone, Copy)]
enum Req {
    /// Receive of incoming package `k` (its first part).
    Recv(usize),
    /// Receive of a later part of incoming package `k`.
    Part(usize),
    /// A send, or the acknowledgement of a package read from a peer's window.
    Send,
    /// The acknowledgement of outgoing package `k`, read from this rank's window.
    Ack,
    /// Receive of incoming package `k` straight into the handler's spans.
    InPlace(usize),
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.comm.rank() as usize
    }

    fn size(&self) -> usize {
        self.comm.size() as usize
    }

    /// Unlimited: packages beyond one MPI message travel in parts.
    fn max_message_bytes(&self) -> usize {
        usize::MAX
    }

    /// The cores this process may use divided among the ranks on its node.
    fn threads(&self) -> usize {
        (super::cores() / self.node_ranks()).max(1)
    }

    fn all_gather(&mut self, mine: &[u64], all: &mut [u64]) -> Result<()> {
        if all.len() != mine.len() * self.size() {
            return Err(Error::Transport(format!(
                "all_gather of {} words on {} ranks into {} words",
                mine.len(),
                self.size(),
                all.len()
            )));
        }
        self.comm.all_gather_into(mine, all);
        Ok(())
    }

    fn exchange(&mut self, round: Round<'_>, handler: &mut dyn RoundHandler) -> Result<()> {
        let (rank, size) = (self.rank(), self.size());
        check_round(&round, rank, size)?;
        // Node-local packages go through the window. If they do not fit in this rank's
        // segment, they are packed only once the node has grown the window (right
        // after the check words are in); otherwise they are packed while the words
        // travel.
        let (offsets, need) = self.window_plan(round.sends);
        let cap = self.window_bytes();
        let short = need > cap;
        let Round {
            send_buf,
            sends,
            recv_buf,
            recvs,
            check,
            checked,
        } = round;

        // 1. Gather the check words (plus this rank's settings) while packing; nothing
        //    leaves before the verdict.
        let mut parts = package_slices(send_buf, sends);
        let mut out = Outgoing {
            offsets,
            direct: vec![None; sends.len()],
            cma_desc: vec![None; sends.len()],
            src_desc: vec![None; sends.len()],
        };
        let all = self.gather_while_packing(check, short, sends, &mut out, &mut parts, handler);
        self.take_verdict(&all, check, checked, handler, (need, cap, short))?;
        self.pack_late(&all, check.len(), sends, &mut out, short, handler);

        // 2. The round proper.
        self.round_proper(sends, parts, recvs, recv_buf, &out, handler)
    }
}

/// Words each rank adds to its check words: its segment is too small, its message
/// limit, whether it uses the shared window (and from which package size), whether it
/// reads by single copy, whether it reads packages from their senders' shared B.
const SETTINGS: usize = 5;

/// How the packages of a round leave this rank (decided while the check words
/// travel, revised once they are in), in `sends` order.
struct Outgoing {
    /// Window offset of a package that goes through the window (`None`: a message).
    offsets: Vec<Option<usize>>,
    /// Spans of a message package the handler lets us send from where it lies.
    direct: Vec<Option<Vec<Span>>>,
    /// Single-copy descriptor of a node-local package its receiver reads from B.
    cma_desc: Vec<Option<Vec<u8>>>,
    /// Shared-source descriptor of a node-local package its receiver reads from this
    /// rank's node-shared B.
    src_desc: Vec<Option<Vec<u8>>>,
}

/// The receive side of a round: where each incoming package's part of the receive
/// buffer starts, the later parts of a large package (posted once its first part has
/// arrived), and how many of them are still out.
struct Incoming<'a> {
    starts: Vec<*const u8>,
    later: Vec<Vec<&'a mut [u8]>>,
    pending: Vec<usize>,
}

/// The requests of a round as they are posted, and what each one is.
struct Posted<'a, 's> {
    comm: &'s SimpleCommunicator,
    scope: &'s LocalScope<'a>,
    coll: &'s mut RequestCollection<'a, [u8]>,
    kinds: Vec<Req>,
}

impl<'a> Posted<'a, '_> {
    fn add<S: Scope<'a>>(&mut self, req: Request<'a, [u8], S>, kind: Req) {
        self.coll.add(req);
        self.kinds.push(kind);
    }

    fn send(&mut self, peer: usize, msg: &'a [u8], tag: i32) {
        let req = self
            .comm
            .process_at_rank(peer as i32)
            .immediate_send_with_tag(self.scope, msg, tag);
        self.add(req, Req::Send);
    }

    fn receive(&mut self, peer: usize, buf: &'a mut [u8], tag: i32, kind: Req) {
        let req = self
            .comm
            .process_at_rank(peer as i32)
            .immediate_receive_into_with_tag(self.scope, buf, tag);
        self.add(req, kind);
    }

    /// The acknowledgement of a package read from `peer`'s memory (its window or its
    /// B): the sender waits for it in any case.
    fn acknowledge(&mut self, peer: usize) {
        self.send(peer, &[][..], TAG_ACK);
    }

    /// The next completed request: its index, status and data. Polls, and gives the
    /// core away between polls: with more ranks than cores, the peer whose package we
    /// wait for may need it.
    fn next_completed(&mut self) -> (usize, Status, &'a [u8]) {
        loop {
            if let Some(done) = self.coll.test_any() {
                break done;
            }
            std::thread::yield_now();
        }
    }
}

/// "rank R expected N bytes from rank P but received G".
fn unexpected_size(rank: usize, expected: usize, peer: usize, got: usize) -> String {
    format!("rank {rank} expected {expected} bytes from rank {peer} but received {got}")
}

impl MpiTransport {
    /// Whether a message package may go from or to where it lies (one MPI message each:
    /// not beyond the message limit).
    fn in_place(&self, p: &Package) -> bool {
        self.spans && !p.range.is_empty() && p.range.len() <= self.message_limit
    }

    /// Gathers every rank's check words and settings ([`SETTINGS`]; `short`: this
    /// rank's segment is too small) while packing: into the window unless `short`,
    /// else into `parts` unless a package leaves from where it lies or its receiver
    /// may read it by single copy. Returns the gathered words.
    fn gather_while_packing(
        &self,
        check: &[u64],
        short: bool,
        sends: &[Package],
        out: &mut Outgoing,
        parts: &mut [&mut [u8]],
        handler: &mut dyn RoundHandler,
    ) -> Vec<u64> {
        let limit = self.message_limit;
        let mine: Vec<u64> = check
            .iter()
            .copied()
            .chain([
                u64::from(short),
                limit as u64,
                if self.shared {
                    1 + self.window_min as u64
                } else {
                    0
                },
                u64::from(self.reads_single_copy()),
                if self.shared && handler.reads_sources() {
                    source_word(handler)
                } else {
                    0
                },
            ])
            .collect();
        let mut all = vec![0u64; (check.len() + SETTINGS) * self.size()];
        // Single-copy descriptors of node-local packages, if the receiver reads them
        // (known once the check words are in; otherwise packed into the window then).
        let single_copy =
            (self.shared && self.single_copy != SingleCopy::Never).then_some(self.single_copy);
        // Shared-source descriptors of node-local packages whose B lies in node-shared
        // memory, if the receiver reads them (likewise known once the words are in).
        let registry = self.registry.borrow();
        let sources_ok = self.shared && self.shared_sources && !registry.is_empty();
        let (comm, window) = (&self.comm, self.window.as_ref());
        let pid = cma::pid();
        mpi::request::scope(|scope| {
            let mut gather = Some(comm.immediate_all_gather_into(scope, &mine[..], &mut all[..]));
            for (k, p) in sends.iter().enumerate() {
                if out.offsets[k].is_some() && sources_ok {
                    out.src_desc[k] = handler
                        .send_sources(k)
                        .and_then(|s| src_descriptor(&registry, &s, p.range.len(), limit));
                }
                if let (Some(_), Some(when), None) = (out.offsets[k], single_copy, &out.src_desc[k])
                {
                    out.cma_desc[k] = handler
                        .send_spans(k)
                        .and_then(|sp| cma_descriptor(&sp, p.range.len(), limit, when, pid));
                }
                match (out.offsets[k], window) {
                    (Some(_), _) if out.cma_desc[k].is_some() || out.src_desc[k].is_some() => {}
                    (Some(off), Some(w)) if !short => {
                        // SAFETY: `off + len <= need <= cap` (window_plan), and no
                        // peer reads it before our descriptor arrives.
                        handler.pack(k, unsafe { w.part_mut(off, p.range.len()) });
                    }
                    (Some(_), _) => {} // packed into the grown window later
                    (None, _) => {
                        out.direct[k] = self
                            .in_place(p)
                            .then(|| handler.send_spans(k))
                            .flatten()
                            .filter(|sp| span_bytes(sp) == Some(p.range.len()));
                        if out.direct[k].is_none() {
                            handler.pack(k, &mut *parts[k]);
                        }
                    }
                }
                // Let the gather progress between packages.
                gather = gather.and_then(|g| g.test().err());
            }
            if let Some(g) = gather {
                g.wait();
            }
        });
        all
    }

    /// Hands every rank's check words to the handler for its verdict, checks that the
    /// ranks agree on their settings, and grows the node's window if a segment of this
    /// node is too small (`need`, `cap`, `short` as [`Self::grow_window`]).
    fn take_verdict(
        &mut self,
        all: &[u64],
        check: &[u64],
        checked: &mut [u64],
        handler: &mut dyn RoundHandler,
        (need, cap, short): (usize, usize, bool),
    ) -> Result<()> {
        let words = check.len() + SETTINGS;
        for (r, words_r) in all.chunks_exact(words).enumerate() {
            checked[r * check.len()..][..check.len()].copy_from_slice(&words_r[..check.len()]);
        }
        handler.verdict(checked)?;
        agree_on_settings(all, words, check.len())?;
        // Every rank saw the same flags: if a segment of this node is too small, the
        // node's ranks grow the window together.
        let grow = all
            .chunks_exact(words)
            .enumerate()
            .any(|(r, w)| self.node_rank[r].is_some() && w[check.len()] != 0);
        if grow {
            self.grow_window(need, cap, short)?;
        }
        Ok(())
    }

    /// After the verdict: a package whose receiver does not read by single copy goes
    /// through the window after all; the packages not yet packed (all of the window's
    /// if this rank's segment was `short`) are packed into the window, and it is
    /// synchronised before any descriptor leaves. Counts the bytes by their way.
    fn pack_late(
        &mut self,
        all: &[u64],
        checks: usize,
        sends: &[Package],
        out: &mut Outgoing,
        short: bool,
        handler: &mut dyn RoundHandler,
    ) {
        let words = checks + SETTINGS;
        let mut fell_back = vec![false; sends.len()];
        // A receiver reads this rank's sources only if it reads sources at all and
        // sees them stored as they are.
        let readable = source_word(handler);
        for (k, p) in sends.iter().enumerate() {
            if out.cma_desc[k].is_some() && all[p.peer * words + checks + 3] == 0 {
                out.cma_desc[k] = None;
                fell_back[k] = true;
            }
            if out.src_desc[k].is_some() && all[p.peer * words + checks + 4] != readable {
                out.src_desc[k] = None;
                fell_back[k] = true;
            }
        }
        if short || fell_back.contains(&true) {
            let w = self
                .window
                .as_ref()
                .expect("a window holds the node's packages");
            for (k, p) in sends.iter().enumerate() {
                if out.cma_desc[k].is_some()
                    || out.src_desc[k].is_some()
                    || !(short || fell_back[k])
                {
                    continue;
                }
                if let Some(off) = out.offsets[k] {
                    // SAFETY: `off + len <= need`, and the grown segment holds `need`
                    // bytes; no peer reads it before our descriptor arrives.
                    handler.pack(k, unsafe { w.part_mut(off, p.range.len()) });
                }
            }
        }
        self.shared_source_bytes += sends
            .iter()
            .zip(&out.src_desc)
            .filter(|(_, d)| d.is_some())
            .map(|(p, _)| p.range.len() as u64)
            .sum::<u64>();
        self.single_copy_bytes += sends
            .iter()
            .zip(&out.cma_desc)
            .filter(|(_, d)| d.is_some())
            .map(|(p, _)| p.range.len() as u64)
            .sum::<u64>();
        self.node_message_bytes += sends
            .iter()
            .zip(&out.offsets)
            .filter(|(p, o)| o.is_none() && self.node_rank[p.peer].is_some())
            .map(|(p, _)| p.range.len() as u64)
            .sum::<u64>();
        if let Some(w) = self.window.as_ref() {
            // Our packages are written before any descriptor leaves.
            w.sync();
        }
    }

    /// The round proper: posts every receive, acknowledgement and send, lets the
    /// handler overlap, and handles the requests as they complete.
    fn round_proper(
        &self,
        sends: &[Package],
        parts: Vec<&mut [u8]>,
        recvs: &[Package],
        recv_buf: &mut [u8],
        out: &Outgoing,
        handler: &mut dyn RoundHandler,
    ) -> Result<()> {
        let descriptors: Vec<u8> = sends
            .iter()
            .zip(&out.offsets)
            .flat_map(|(p, o)| {
                let (off, len) = o.map_or((0, 0), |o| (o as u64, p.range.len() as u64));
                [MAGIC, off, len].into_iter().flat_map(u64::to_le_bytes)
            })
            .collect();
        let mut failure: Option<String> = None;
        let n_reqs: usize = recvs
            .iter()
            .chain(sends)
            .map(|p| self.n_parts(p.range.len()) + 1)
            .sum();
        multiple_scope(n_reqs, |scope, coll| {
            let mut posted = Posted {
                comm: &self.comm,
                scope,
                coll,
                kinds: Vec::with_capacity(2 * (recvs.len() + sends.len())),
            };
            let mut incoming = self.post_receives(&mut posted, recvs, recv_buf, handler);
            // Acknowledgements of the packages peers will read from this rank's window.
            for (p, _) in sends.iter().zip(&out.offsets).filter(|(_, o)| o.is_some()) {
                posted.receive(p.peer, &mut [][..], TAG_ACK, Req::Ack);
            }
            self.post_sends(&mut posted, sends, parts, out, &descriptors, handler);
            handler.overlap();
            while posted.coll.incomplete() > 0 {
                let (i, status, data) = posted.next_completed();
                let got = status.count(u8::equivalent_datatype()) as usize;
                let done =
                    self.completed(&mut posted, &mut incoming, recvs, i, (got, data), handler);
                if let Err(why) = done {
                    failure.get_or_insert(why);
                }
            }
        });
        match failure {
            Some(msg) => Err(Error::Transport(msg)),
            None => Ok(()),
        }
    }

    /// Parts of a message package of `len` bytes (one unless it exceeds the message
    /// limit).
    fn n_parts(&self, len: usize) -> usize {
        len.div_ceil(self.message_limit).max(1)
    }

    /// Posts the first part of every receive, into the start of its part of the
    /// receive buffer (a window package arrives there as a descriptor), or straight
    /// into the handler's spans if it has them for a package that comes as one message
    /// (never a window descriptor); the other parts of a large package are posted once
    /// the first has arrived.
    fn post_receives<'a>(
        &self,
        posted: &mut Posted<'a, '_>,
        recvs: &[Package],
        recv_buf: &'a mut [u8],
        handler: &mut dyn RoundHandler,
    ) -> Incoming<'a> {
        let limit = self.message_limit;
        let mut later: Vec<Vec<&mut [u8]>> = Vec::with_capacity(recvs.len());
        let mut starts: Vec<*const u8> = Vec::with_capacity(recvs.len());
        for ((k, p), mine) in recvs
            .iter()
            .enumerate()
            .zip(package_slices(recv_buf, recvs))
        {
            let (ptr, len) = (mine.as_mut_ptr(), mine.len());
            starts.push(ptr.cast_const());
            let spans = (self.in_place(p) && !self.via_window(p))
                .then(|| handler.recv_spans(k))
                .flatten()
                .filter(|sp| span_bytes(sp) == Some(len));
            // SAFETY: the handler vouched for the spans (`Span::new`) until this
            // round returns, and the round waits for every request.
            if let Some(req) = spans.as_deref().and_then(|sp| unsafe {
                post_in_place(false, sp, p.peer, posted.comm, posted.scope)
            }) {
                posted.add(req, Req::InPlace(k));
                later.push(Vec::new());
                continue;
            }
            let mut parts: Vec<&mut [u8]> = (0..self.n_parts(len))
                .rev()
                .map(|i| {
                    let at = i * limit;
                    // SAFETY: disjoint ranges inside `mine`, all derived from `ptr`.
                    unsafe { std::slice::from_raw_parts_mut(ptr.add(at), limit.min(len - at)) }
                })
                .collect();
            let first = parts.pop().expect("at least one part");
            posted.receive(p.peer, first, TAG, Req::Recv(k));
            parts.reverse();
            later.push(parts);
        }
        Incoming {
            starts,
            later,
            pending: vec![0usize; recvs.len()],
        }
    }

    /// Posts every send: from where the package lies, its single-copy or window
    /// descriptor, or its packed bytes (in parts beyond the message limit).
    fn post_sends<'a>(
        &self,
        posted: &mut Posted<'a, '_>,
        sends: &[Package],
        parts: Vec<&'a mut [u8]>,
        out: &'a Outgoing,
        descriptors: &'a [u8],
        handler: &mut dyn RoundHandler,
    ) {
        for ((k, p), part) in sends.iter().enumerate().zip(parts) {
            // SAFETY: as for the receives; nothing writes B during the round.
            if let Some(req) = out.direct[k].as_deref().and_then(|sp| unsafe {
                post_in_place(true, sp, p.peer, posted.comm, posted.scope)
            }) {
                posted.add(req, Req::Send);
                continue;
            }
            if out.direct[k].is_some() {
                // No datatype for these spans: pack after all.
                handler.pack(k, &mut *part);
            }
            let msg: &[u8] = if let Some(d) = &out.src_desc[k] {
                d
            } else if let Some(d) = &out.cma_desc[k] {
                d
            } else if out.offsets[k].is_some() {
                &descriptors[DESCRIPTOR * k..][..DESCRIPTOR]
            } else {
                part
            };
            let mut chunks = msg.chunks(self.message_limit).peekable();
            if chunks.peek().is_none() {
                posted.send(p.peer, msg, TAG);
            }
            for c in chunks {
                posted.send(p.peer, c, TAG);
            }
        }
    }

    /// Handles request `i`, completed with `got` bytes into `data`: hands a whole
    /// package to the handler, posts the later parts of a large one, or reads a
    /// package from a peer's B (single copy) or window and acknowledges it. An error
    /// says what did not match.
    fn completed<'a>(
        &self,
        posted: &mut Posted<'a, '_>,
        incoming: &mut Incoming<'a>,
        recvs: &[Package],
        i: usize,
        (got, data): (usize, &'a [u8]),
        handler: &mut dyn RoundHandler,
    ) -> std::result::Result<(), String> {
        let k = match posted.kinds[i] {
            Req::Recv(k) => k,
            Req::InPlace(k) => {
                let p = &recvs[k];
                if got != p.range.len() {
                    return Err(unexpected_size(self.rank(), p.range.len(), p.peer, got));
                }
                handler.received(k);
                return Ok(());
            }
            Req::Part(k) => {
                // A later part of a large package.
                let done = if got == data.len() {
                    Ok(())
                } else {
                    Err(format!(
                        "rank {} expected a {}-byte part of a package from rank {} but received {got} bytes",
                        self.rank(),
                        data.len(),
                        recvs[k].peer
                    ))
                };
                incoming.pending[k] -= 1;
                if incoming.pending[k] == 0 {
                    // SAFETY: every part of the package has arrived; together they are
                    // its whole range of the receive buffer, which nothing writes any
                    // more.
                    let whole = unsafe {
                        std::slice::from_raw_parts(incoming.starts[k], recvs[k].range.len())
                    };
                    handler.unpack(k, whole);
                }
                return done;
            }
            Req::Send | Req::Ack => return Ok(()),
        };
        let p = &recvs[k];
        let from_sources = got < data.len()
            && self.shared
            && handler.reads_sources()
            && data.get(..8) == Some(&MAGIC_SRC.to_le_bytes()[..]);
        if from_sources {
            let registry = self.registry.borrow();
            let done = match (self.node_rank[p.peer], parse_src_descriptor(&data[..got])) {
                (Some(nr), Some(entries)) => map_sources(&registry, &entries, nr as usize)
                    .and_then(|sources| {
                        if handler.read_sources(k, &sources) {
                            Ok(())
                        } else {
                            Err("its sources do not hold the package".to_string())
                        }
                    }),
                _ => Err("a malformed shared-source descriptor".to_string()),
            }
            .map_err(|why| {
                format!(
                    "rank {} could not read a package of rank {} from its shared buffers: {why}",
                    self.rank(),
                    p.peer
                )
            });
            posted.acknowledge(p.peer);
            return done;
        }
        if got < data.len() && self.reads_single_copy() {
            if let Some((pid, remote)) = parse_cma_descriptor(&data[..got]) {
                let done = self
                    .read_single_copy(k, p, (pid, &remote), incoming.starts[k], handler)
                    .map_err(|why| {
                        format!(
                            "rank {} could not read a package of rank {} by single copy: {why}",
                            self.rank(),
                            p.peer
                        )
                    });
                posted.acknowledge(p.peer);
                return done;
            }
        }
        if got == data.len() {
            if incoming.later[k].is_empty() {
                handler.unpack(k, data);
            } else {
                // The first part of a large package: post the others.
                for part in std::mem::take(&mut incoming.later[k]) {
                    posted.receive(p.peer, part, TAG, Req::Part(k));
                    incoming.pending[k] += 1;
                }
            }
            return Ok(());
        }
        let word = |i: usize| u64::from_le_bytes(data[8 * i..][..8].try_into().expect("8 bytes"));
        let window = self.node_rank[p.peer].zip(self.window.as_ref());
        let descriptor = got == DESCRIPTOR && data.len() > DESCRIPTOR && word(0) == MAGIC;
        let Some((nr, w)) = window.filter(|_| descriptor) else {
            return Err(unexpected_size(self.rank(), data.len(), p.peer, got));
        };
        let descriptor = (word(1) as usize, word(2) as usize);
        let done = self.read_window(w, nr, descriptor, (k, p), handler);
        posted.acknowledge(p.peer);
        done
    }

    /// Unpacks incoming package `k` (`p`) from the bytes `off .. off + len` of the
    /// segment of node rank `nr` of window `w` (the sender's descriptor `(off, len)`).
    /// An error says that the descriptor does not fit.
    fn read_window(
        &self,
        w: &Window,
        nr: i32,
        (off, len): (usize, usize),
        (k, p): (usize, &Package),
        handler: &mut dyn RoundHandler,
    ) -> std::result::Result<(), String> {
        let (seg, seg_len) = w.segments[nr as usize];
        if len != p.range.len() || off.checked_add(len).is_none_or(|e| e > seg_len) {
            return Err(format!(
                "rank {} got a window descriptor ({off}, {len}) from rank {} that does not fit its {}-byte package or {seg_len}-byte segment",
                self.rank(),
                p.peer,
                p.range.len()
            ));
        }
        w.sync();
        // SAFETY: the range lies inside the peer's segment (checked above); the peer
        // wrote it before sending the descriptor and does not touch it until our
        // acknowledgement.
        let bytes = unsafe { std::slice::from_raw_parts(seg.add(off), len) };
        handler.unpack(k, bytes);
        Ok(())
    }

    /// Reads incoming package `k` (`p`) from its sender's B by single copy (`pid`,
    /// `remote`: the sender's descriptor): straight into A if the handler has spans
    /// for it, else into the package's part of the receive buffer (`start`) and
    /// unpacked from there. An error says why not.
    fn read_single_copy(
        &self,
        k: usize,
        p: &Package,
        (pid, remote): (i32, &[Span]),
        start: *const u8,
        handler: &mut dyn RoundHandler,
    ) -> std::result::Result<(), String> {
        let len = p.range.len();
        let failed = |e: cma::ReadError| format!("process_vm_readv failed (errno {})", e.0);
        if self.node_rank[p.peer].is_none() || span_bytes(remote) != Some(len) {
            Err(format!("its {len}-byte package does not match the spans"))
        } else if let Some(local) = handler
            .recv_spans(k)
            .filter(|sp| span_bytes(sp) == Some(len))
        {
            // Straight into A.
            // SAFETY: the handler vouched for the spans until the round returns; the
            // sender keeps its B unchanged until our acknowledgement.
            unsafe { cma::read(pid, &local, remote, len) }
                .map(|()| handler.received(k))
                .map_err(failed)
        } else {
            // Into the package's part of the receive buffer, which the descriptor no
            // longer needs, and transformed from there.
            // SAFETY: `start` is that part, `len` bytes of the round's receive buffer
            // that nothing else uses.
            let part = unsafe { Span::new(start, len, 1, len) };
            unsafe { cma::read(pid, &[part], remote, len) }
                .map(|()| {
                    // SAFETY: all `len` bytes were just written.
                    let whole = unsafe { std::slice::from_raw_parts(start, len) };
                    handler.unpack(k, whole);
                })
                .map_err(failed)
        }
    }
}
