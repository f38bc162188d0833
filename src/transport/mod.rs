//! Transports: moving byte packages between ranks.
//!
//! A [`Transport`] is a communicator of `size()` ranks that can do two collective
//! things: gather a few `u64` words from every rank ([`Transport::all_gather`]) and run
//! one communication *round* ([`Transport::exchange`]): every rank sends at most one
//! package to each peer and receives at most one package from each peer, with
//! non-blocking sends and receives.
//!
//! A round carries its own safety check: every rank contributes a few words, and no
//! package leaves any rank before all ranks' words are in and the handler has judged
//! them ([`RoundHandler::verdict`]); a rejection ends the round on every rank with the
//! same error, nothing sent or unpacked. The transport calls back into the
//! [`RoundHandler`] to fill each outgoing package (possibly while the words are still
//! travelling), to do local work while packages travel, and to consume each incoming
//! package in *arrival order* (wait-any), so unpacking overlaps communication.
//!
//! Two implementations share the trait and therefore all engine code:
//! * [`InProcess`]: threads as ranks ([`run_in_process`]), the embedded default for
//!   tests and for users without MPI;
//! * `MpiTransport` (feature `mpi`): rsmpi non-blocking point-to-point calls and
//!   wait-any completion (`MPI_Testany`), packages between ranks of one node read in
//!   place from a shared-memory window, run under `mpirun`.
//!
//! # Example
//! ```
//! use copr::transport::{run_in_process, Package, Round, RoundHandler, Transport};
//!
//! // Every rank sends its rank number (one byte) to the next rank.
//! struct Ring {
//!     me: u8,
//!     got: Option<u8>,
//! }
//! impl RoundHandler for Ring {
//!     fn pack(&mut self, _k: usize, out: &mut [u8]) {
//!         out[0] = self.me;
//!     }
//!     fn verdict(&mut self, all: &[u64]) -> copr::Result<()> {
//!         // Every rank passed the same word.
//!         assert!(all.iter().all(|&w| w == 7));
//!         Ok(())
//!     }
//!     fn overlap(&mut self) {}
//!     fn unpack(&mut self, _k: usize, data: &[u8]) {
//!         self.got = Some(data[0]);
//!     }
//! }
//! let got = run_in_process(3, |t| {
//!     let (me, p) = (t.rank(), t.size());
//!     let sends = [Package { peer: (me + 1) % p, range: 0..1 }];
//!     let recvs = [Package { peer: (me + p - 1) % p, range: 0..1 }];
//!     let (mut sbuf, mut rbuf, mut all) = ([0u8; 1], [0u8; 1], vec![0u64; p]);
//!     let mut h = Ring { me: me as u8, got: None };
//!     let round = Round {
//!         send_buf: &mut sbuf,
//!         sends: &sends,
//!         recv_buf: &mut rbuf,
//!         recvs: &recvs,
//!         check: &[7],
//!         checked: &mut all,
//!     };
//!     t.exchange(round, &mut h).unwrap();
//!     h.got.unwrap()
//! })
//! .unwrap();
//! assert_eq!(got, vec![2, 0, 1]);
//! ```

#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub mod borrowed;
#[cfg(feature = "mpi")]
mod cma;
mod in_process;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
mod shared;
mod standin;

use std::ops::Range;

pub use in_process::{run_in_process, InProcess};
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub use mpi::{MpiTransport, SingleCopy, SINGLE_COPY_MIN_BLOCK};
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub use shared::SharedBuffer;
pub use standin::StandIn;

use crate::error::Result;

/// One package of a round: the peer it goes to (or comes from) and its byte range in
/// the round's send (or receive) buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// The other rank.
    pub peer: usize,
    /// Bytes of the package in the send or receive buffer.
    pub range: Range<usize>,
}

/// One communication round as seen by one rank.
///
/// Packages are listed in increasing, non-overlapping buffer ranges; each peer appears
/// at most once in `sends` and at most once in `recvs`, never the rank itself. Both
/// sides of a package agree on its length.
#[derive(Debug)]
pub struct Round<'a> {
    /// Storage for outgoing packages (a transport may ignore it and use its own).
    pub send_buf: &'a mut [u8],
    /// Outgoing packages.
    pub sends: &'a [Package],
    /// Storage for incoming packages (a transport may ignore it and use its own).
    pub recv_buf: &'a mut [u8],
    /// Incoming packages.
    pub recvs: &'a [Package],
    /// This rank's words for the round's check (the same number on every rank).
    pub check: &'a [u64],
    /// Receives every rank's check words, rank `r`'s at `checked[r·check.len() ..]`
    /// (`size()·check.len()` words).
    pub checked: &'a mut [u64],
}

/// One part of a package where it lies in this rank's memory: `count` blocks of
/// `len` bytes, block `i` starting at address `addr + i·stride`.
///
/// A handler names a package's spans ([`RoundHandler::send_spans`],
/// [`RoundHandler::recv_spans`]) so that a transport can send it straight from the
/// handler's data, or receive it straight into it, instead of copying it through the
/// round's buffers. Only [`Span::new`], whose caller vouches for the memory, makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    addr: usize,
    len: usize,
    count: usize,
    stride: usize,
}

impl Span {
    /// `count` blocks of `len` bytes, block `i` at `addr + i·stride`.
    ///
    /// # Safety
    /// Every block lies inside one live allocation that stays valid until the round
    /// that is given the span returns. For a receive, the blocks are writable, do not
    /// overlap each other or another span of the round, and nothing else reads or
    /// writes them during the round; for a send, nothing writes them during the round.
    pub unsafe fn new(addr: *const u8, len: usize, count: usize, stride: usize) -> Self {
        Self {
            addr: addr as usize,
            len,
            count,
            stride,
        }
    }

    /// Address of the first block.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// Bytes of one block.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the span holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0 || self.count == 0
    }

    /// Number of blocks.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes from the start of one block to the start of the next.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Bytes of the span (`len · count`).
    pub fn bytes(&self) -> usize {
        self.len * self.count
    }
}

/// Bytes of a package given as spans (`None` if the sum overflows).
#[cfg(feature = "mpi")]
pub(crate) fn span_bytes(spans: &[Span]) -> Option<usize> {
    spans.iter().try_fold(0usize, |acc, s| {
        acc.checked_add(s.len.checked_mul(s.count)?)
    })
}

/// What a rank does with the packages of a round.
pub trait RoundHandler {
    /// Fills outgoing package `k` (`out.len()` is its length); called once per package,
    /// before the package is sent — possibly before the verdict, so it must
    /// only read what this rank has checked locally (if it has found a problem, it may
    /// leave `out` as it is: the verdict will stop the round).
    fn pack(&mut self, k: usize, out: &mut [u8]);
    /// Judges every rank's check words (`all`, as in [`Round::checked`]); called once,
    /// before any package is sent, [`RoundHandler::overlap`] or
    /// [`RoundHandler::unpack`]. An error ends the round on this rank with that error;
    /// since all ranks judge the same words, they all return the same one.
    fn verdict(&mut self, all: &[u64]) -> Result<()>;
    /// Work that needs no message, run once after a positive verdict, while packages
    /// travel.
    fn overlap(&mut self);
    /// Consumes incoming package `k`; called once per package, in arrival order, after
    /// a positive verdict — except for a package received into its spans
    /// ([`RoundHandler::recv_spans`]).
    fn unpack(&mut self, k: usize, data: &[u8]);
    /// Where outgoing package `k`'s bytes already lie, in package order, if a
    /// transport may send them from there instead of asking [`RoundHandler::pack`]
    /// (which it then does not call for `k`). Called at most once per package, while
    /// packing (before the verdict: as for `pack`, `None` if this rank has found a
    /// problem). The default, `None`, always packs.
    fn send_spans(&mut self, _k: usize) -> Option<Vec<Span>> {
        None
    }
    /// Where incoming package `k`'s bytes go, in package order, if a transport may
    /// receive them there directly; it then calls [`RoundHandler::received`] instead
    /// of [`RoundHandler::unpack`] once they are in. Called at most once per package,
    /// after a positive verdict. The default, `None`, always unpacks.
    fn recv_spans(&mut self, _k: usize) -> Option<Vec<Span>> {
        None
    }
    /// Incoming package `k` has been received into its spans.
    fn received(&mut self, _k: usize) {}
    /// The buffers outgoing package `k` is made from, one entry per buffer the
    /// handler numbers (for the engine: B of every transform of the batch; `None` for
    /// those the package takes nothing from), if a receiver on the same node may read
    /// the package from them itself ([`RoundHandler::read_sources`]) when they lie in
    /// node-shared memory. Nothing writes them until the round returns. Called at most
    /// once per package, while packing (as for `pack`, `None` if this rank has found
    /// a problem). The default, `None`, never lets a receiver read the sources.
    fn send_sources(&mut self, _k: usize) -> Option<Vec<Option<Span>>> {
        None
    }
    /// Whether this handler can take incoming packages as their sender's source
    /// buffers ([`RoundHandler::read_sources`]). The default is `false`.
    fn reads_sources(&self) -> bool {
        false
    }
    /// How this rank reads a sender's source buffers, as a key: a receiver reads them
    /// as its own description of them says (for the engine: the layouts of B, whose
    /// leading dimension each rank gives for its own storage), so a sender lets it
    /// read them only when their keys are equal, and otherwise sends the package the
    /// usual way. The default, 0, is the same on every rank.
    fn source_storage(&self) -> u64 {
        0
    }
    /// Consumes incoming package `k` by reading it from its sender's source buffers,
    /// mapped into this process (`sources`: the sender's
    /// [`RoundHandler::send_sources`] entries, in the same numbering), instead of
    /// [`RoundHandler::unpack`]; called only if [`RoundHandler::reads_sources`], once
    /// per such package, after a positive verdict. Returns `false` if it could not
    /// (a buffer missing or too short): the round then fails.
    fn read_sources(&mut self, _k: usize, _sources: &[Option<Span>]) -> bool {
        false
    }
}

/// Moves byte packages between the ranks of a communicator.
///
/// All methods except [`Transport::rank`], [`Transport::size`] and
/// [`Transport::max_message_bytes`] are collective: every rank calls them in the same
/// order.
pub trait Transport {
    /// This rank, in `0..size()`.
    fn rank(&self) -> usize;

    /// Number of ranks.
    fn size(&self) -> usize;

    /// Largest package, in bytes, one message can carry.
    fn max_message_bytes(&self) -> usize;

    /// How many threads this rank should use for its share of a round's work (packing,
    /// local copies, unpacking): the cores it may use divided among the ranks that
    /// share them, at least 1. With 1 the engine runs serially instead of splitting
    /// work between rayon tasks, which only oversubscribes a node whose cores are all
    /// taken by ranks.
    ///
    /// The default is [`std::thread::available_parallelism`] (the rank is alone).
    fn threads(&self) -> usize {
        cores()
    }

    /// Gathers `mine` (the same length on every rank) from all ranks into `all`, rank
    /// `r`'s words at `all[r·mine.len() ..][.. mine.len()]`.
    ///
    /// # Errors
    /// [`crate::Error::Transport`] if `all.len() != size()·mine.len()` or a peer
    /// failed.
    fn all_gather(&mut self, mine: &[u64], all: &mut [u64]) -> Result<()>;

    /// Runs one round: gathers the check words of all ranks while filling the outgoing
    /// packages (`handler.pack`), asks `handler.verdict`, and only then sends the
    /// packages, calls `handler.overlap()`, hands every incoming package to
    /// `handler.unpack` as it arrives, and returns when all sends and receives are done.
    ///
    /// # Errors
    /// The verdict's error; [`crate::Error::Transport`] if `checked` has the wrong
    /// length, a message has the wrong size, a package is larger than
    /// [`Transport::max_message_bytes`], or a peer failed.
    fn exchange(&mut self, round: Round<'_>, handler: &mut dyn RoundHandler) -> Result<()>;
}

/// Cores this process may run on (1 if unknown).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Checks the shape of a round (ranges ordered, inside the buffers, peers valid and
/// distinct, no self-messages).
pub(crate) fn check_round(round: &Round<'_>, rank: usize, size: usize) -> Result<()> {
    use crate::error::Error;
    if round.checked.len() != size * round.check.len() {
        return Err(Error::Transport(format!(
            "a round with {} check words per rank on {size} ranks needs {} gathered words, not {}",
            round.check.len(),
            size * round.check.len(),
            round.checked.len()
        )));
    }
    for (what, pkgs, len) in [
        ("send", round.sends, round.send_buf.len()),
        ("receive", round.recvs, round.recv_buf.len()),
    ] {
        let mut end = 0;
        let mut seen = vec![false; size];
        for p in pkgs {
            if p.peer >= size || p.peer == rank || seen[p.peer] {
                return Err(Error::Transport(format!(
                    "{what} package for peer {} on rank {rank} of {size}: peers must be distinct other ranks",
                    p.peer
                )));
            }
            seen[p.peer] = true;
            if p.range.start < end || p.range.end < p.range.start || p.range.end > len {
                return Err(Error::Transport(format!(
                    "{what} package range {:?} on rank {rank} overlaps its predecessor or leaves the {len}-byte buffer",
                    p.range
                )));
            }
            end = p.range.end;
        }
    }
    Ok(())
}
