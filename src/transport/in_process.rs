//! Threads as ranks: the embedded transport.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use super::{check_round, Round, RoundHandler, Transport};
use crate::error::{Error, Result};

/// One message between two in-process ranks.
struct Msg {
    src: usize,
    /// Number of the collective call the message belongs to.
    seq: u64,
    /// The bytes, shared with the sender, which reuses the buffer in a later round once
    /// the receiver has dropped its handle.
    data: Arc<Vec<u8>>,
}

/// One rank of an in-process communicator (threads as ranks); create them with
/// [`run_in_process`].
///
/// Messages go through channels; a message that belongs to a later collective call
/// than the one a rank is in is kept aside until that call. If any rank panics, the
/// others' pending calls return [`Error::Transport`] instead of waiting forever.
pub struct InProcess {
    rank: usize,
    size: usize,
    peers: Vec<Sender<Msg>>,
    inbox: Receiver<Msg>,
    stash: Vec<Msg>,
    seq: u64,
    shared: Arc<Shared>,
    /// The package buffer last sent to each peer, reused when the peer has let go of it
    /// (no allocation, zeroing or page faults in repeated rounds).
    pool: Vec<Option<Arc<Vec<u8>>>>,
}

/// State all endpoints of one communicator see.
struct Shared {
    /// Some rank panicked.
    abort: AtomicBool,
    /// Rank `r`'s closure has returned (every message it sent is already queued).
    left: Vec<AtomicBool>,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("seq", &self.seq)
            .finish()
    }
}

/// Marks the rank as gone when its closure returns, and sets the abort flag if it
/// unwinds.
struct Departure(Arc<Shared>, usize);

impl Drop for Departure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort.store(true, Ordering::SeqCst);
        }
        self.0.left[self.1].store(true, Ordering::SeqCst);
    }
}

/// Runs `f` on `ranks` threads, each with its own [`InProcess`] endpoint of one
/// communicator, and returns the results in rank order.
///
/// # Errors
/// [`Error::Transport`] if `ranks` is 0, or if a rank's closure panics: after all
/// threads have finished, the error names the lowest rank that panicked and its panic
/// message (the other ranks' pending calls return errors instead of waiting for it).
pub fn run_in_process<R, F>(ranks: usize, f: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(&mut InProcess) -> R + Sync,
{
    if ranks == 0 {
        return Err(Error::Transport(
            "an in-process communicator needs at least one rank".into(),
        ));
    }
    let shared = Arc::new(Shared {
        abort: AtomicBool::new(false),
        left: (0..ranks).map(|_| AtomicBool::new(false)).collect(),
    });
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..ranks).map(|_| channel()).unzip();
    let mut endpoints: Vec<InProcess> = receivers
        .into_iter()
        .enumerate()
        .map(|(rank, inbox)| InProcess {
            rank,
            size: ranks,
            peers: senders.clone(),
            inbox,
            stash: Vec::new(),
            seq: 0,
            shared: Arc::clone(&shared),
            pool: vec![None; ranks],
        })
        .collect();
    drop(senders);
    let f = &f;
    let outcomes: Vec<std::thread::Result<R>> = std::thread::scope(|s| {
        let handles: Vec<_> = endpoints
            .iter_mut()
            .map(|ep| {
                let guard = Departure(Arc::clone(&ep.shared), ep.rank);
                s.spawn(move || {
                    let _guard = guard;
                    f(ep)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut out = Vec::with_capacity(ranks);
    for (rank, o) in outcomes.into_iter().enumerate() {
        match o {
            Ok(r) => out.push(r),
            Err(payload) => {
                return Err(Error::Transport(format!(
                    "in-process rank {rank} panicked: {}",
                    panic_message(payload.as_ref())
                )))
            }
        }
    }
    Ok(out)
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a panic without a message)"
    }
}

impl InProcess {
    fn send(&self, to: usize, data: Arc<Vec<u8>>) -> Result<()> {
        self.peers[to]
            .send(Msg {
                src: self.rank,
                seq: self.seq,
                data,
            })
            .map_err(|_| {
                Error::Transport(format!("rank {to} has left the in-process communicator"))
            })
    }

    /// Next message of the current collective call from one of the ranks `waiting`
    /// marks.
    fn recv(&mut self, waiting: &[bool]) -> Result<Msg> {
        if let Some(k) = self.stash.iter().position(|m| m.seq == self.seq) {
            return Ok(self.stash.swap_remove(k));
        }
        loop {
            match self.inbox.recv_timeout(Duration::from_millis(20)) {
                Ok(m) if m.seq == self.seq => return Ok(m),
                Ok(m) => self.stash.push(m),
                Err(RecvTimeoutError::Timeout) => {
                    if self.shared.abort.load(Ordering::SeqCst) {
                        return Err(Error::Transport(format!(
                            "rank {}: another in-process rank panicked",
                            self.rank
                        )));
                    }
                    let gone = (0..self.size)
                        .find(|&p| waiting[p] && self.shared.left[p].load(Ordering::SeqCst));
                    if let Some(p) = gone {
                        // Everything `p` sent is queued by now: drain once more.
                        while let Ok(m) = self.inbox.try_recv() {
                            if m.seq == self.seq {
                                return Ok(m);
                            }
                            self.stash.push(m);
                        }
                        return Err(Error::Transport(format!(
                            "rank {} waits for rank {p}, which has finished without sending",
                            self.rank
                        )));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(Error::Transport(format!(
                        "rank {}: the in-process communicator was torn down",
                        self.rank
                    )))
                }
            }
        }
    }
}

impl Transport for InProcess {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    /// The process's cores divided among its `size()` thread ranks.
    fn threads(&self) -> usize {
        (super::cores() / self.size).max(1)
    }

    fn max_message_bytes(&self) -> usize {
        usize::MAX
    }

    fn all_gather(&mut self, mine: &[u64], all: &mut [u64]) -> Result<()> {
        let k = mine.len();
        if all.len() != k * self.size {
            return Err(Error::Transport(format!(
                "all_gather of {k} words on {} ranks into {} words",
                self.size,
                all.len()
            )));
        }
        self.seq += 1;
        let bytes: Arc<Vec<u8>> = Arc::new(mine.iter().flat_map(|w| w.to_le_bytes()).collect());
        for peer in (0..self.size).filter(|&p| p != self.rank) {
            self.send(peer, Arc::clone(&bytes))?;
        }
        all[self.rank * k..][..k].copy_from_slice(mine);
        let mut waiting = vec![true; self.size];
        waiting[self.rank] = false;
        for _ in 1..self.size {
            let m = self.recv(&waiting)?;
            waiting[m.src] = false;
            if m.data.len() != 8 * k {
                return Err(Error::Transport(format!(
                    "all_gather: rank {} sent {} bytes, rank {} expected {}",
                    m.src,
                    m.data.len(),
                    self.rank,
                    8 * k
                )));
            }
            for (w, b) in all[m.src * k..][..k].iter_mut().zip(m.data.chunks_exact(8)) {
                *w = u64::from_le_bytes(b.try_into().expect("8-byte chunk"));
            }
        }
        Ok(())
    }

    fn exchange(&mut self, round: Round<'_>, handler: &mut dyn RoundHandler) -> Result<()> {
        check_round(&round, self.rank, self.size)?;
        self.all_gather(round.check, round.checked)?;
        handler.verdict(round.checked)?;
        self.seq += 1;
        for (k, p) in round.sends.iter().enumerate() {
            let len = p.range.len();
            // The buffer sent to this peer last time, if the peer has dropped it.
            let mut data = self.pool[p.peer]
                .take()
                .and_then(|a| Arc::try_unwrap(a).ok())
                .unwrap_or_default();
            data.resize(len, 0);
            handler.pack(k, &mut data);
            let data = Arc::new(data);
            self.pool[p.peer] = Some(Arc::clone(&data));
            self.send(p.peer, data)?;
        }
        handler.overlap();
        let mut slot = vec![usize::MAX; self.size];
        for (k, p) in round.recvs.iter().enumerate() {
            slot[p.peer] = k;
        }
        let mut waiting = vec![false; self.size];
        for p in round.recvs {
            waiting[p.peer] = true;
        }
        for _ in 0..round.recvs.len() {
            let m = self.recv(&waiting)?;
            waiting[m.src] = false;
            let k = slot[m.src];
            if k == usize::MAX {
                return Err(Error::Transport(format!(
                    "rank {} received an unexpected package from rank {}",
                    self.rank, m.src
                )));
            }
            slot[m.src] = usize::MAX;
            let want = round.recvs[k].range.len();
            if m.data.len() != want {
                return Err(Error::Transport(format!(
                    "rank {} expected {want} bytes from rank {} but received {}",
                    self.rank,
                    m.src,
                    m.data.len()
                )));
            }
            handler.unpack(k, &m.data);
        }
        Ok(())
    }
}
