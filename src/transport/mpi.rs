//! The MPI transport (rsmpi): non-blocking sends and receives, wait-any.

use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::request::multiple_scope;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use super::{check_round, Round, RoundHandler, Transport};
use crate::error::{Error, Result};

/// Tag of copr's round messages ("co").
const TAG: i32 = 0x636f;

/// A [`Transport`] over an MPI communicator.
///
/// Every package is one `MPI_Isend`/`MPI_Irecv` pair; incoming packages are handed to
/// the handler in completion order (`MPI_Testany` polled with a `sched_yield` between
/// polls, so that with more ranks than cores a waiting rank leaves the core to the
/// peer it waits for). Packages are limited to `i32::MAX` bytes (MPI's count of
/// `MPI_BYTE`s); the engine checks this collectively before anything moves.
///
/// Call it from the thread that initialised MPI (`MPI_THREAD_FUNNELED` suffices: the
/// engine's rayon threads never call MPI).
pub struct MpiTransport {
    comm: SimpleCommunicator,
    /// Ranks of `comm` on this rank's node (shared-memory domain).
    node_ranks: usize,
}

impl std::fmt::Debug for MpiTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiTransport")
            .field("rank", &self.comm.rank())
            .field("size", &self.comm.size())
            .finish()
    }
}

impl MpiTransport {
    /// Wraps a communicator (e.g. `universe.world()`, or a duplicate of it to keep
    /// copr's messages apart from the application's).
    ///
    /// Collective over `comm`: it counts the ranks that share this rank's node
    /// (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`), so that the engine uses only
    /// this rank's share of the node's cores ([`Transport::threads`]).
    pub fn new(comm: SimpleCommunicator) -> Self {
        let node_ranks = comm.split_shared(comm.rank()).size().max(1) as usize;
        Self { comm, node_ranks }
    }

    /// Ranks of the communicator on this rank's node.
    pub fn node_ranks(&self) -> usize {
        self.node_ranks
    }

    /// The wrapped communicator.
    pub fn communicator(&self) -> &SimpleCommunicator {
        &self.comm
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.comm.rank() as usize
    }

    fn size(&self) -> usize {
        self.comm.size() as usize
    }

    fn max_message_bytes(&self) -> usize {
        i32::MAX as usize
    }

    /// The cores this process may use divided among the ranks on its node.
    fn threads(&self) -> usize {
        (super::cores() / self.node_ranks).max(1)
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
        let max = self.max_message_bytes();
        if let Some(p) = round
            .sends
            .iter()
            .chain(round.recvs)
            .find(|p| p.range.len() > max)
        {
            return Err(Error::Transport(format!(
                "a package of {} bytes between ranks {rank} and {} exceeds MPI's limit of {max} bytes per message",
                p.range.len(),
                p.peer
            )));
        }
        let Round {
            send_buf,
            sends,
            recv_buf,
            recvs,
        } = round;
        let comm = &self.comm;
        let n_recv = recvs.len();
        let mut short = None;
        multiple_scope(n_recv + sends.len(), |scope, coll| {
            // Post every receive first, into its own part of the receive buffer.
            let mut rest: &mut [u8] = recv_buf;
            let mut pos = 0;
            for p in recvs {
                let tail = std::mem::take(&mut rest);
                let (_, tail) = tail.split_at_mut(p.range.start - pos);
                let (mine, tail) = tail.split_at_mut(p.range.len());
                rest = tail;
                pos = p.range.end;
                let req = comm
                    .process_at_rank(p.peer as i32)
                    .immediate_receive_into_with_tag(scope, mine, TAG);
                coll.add(req);
            }
            // Fill and send each package as soon as it is packed.
            let mut rest: &mut [u8] = send_buf;
            let mut pos = 0;
            for (k, p) in sends.iter().enumerate() {
                let tail = std::mem::take(&mut rest);
                let (_, tail) = tail.split_at_mut(p.range.start - pos);
                let (mine, tail) = tail.split_at_mut(p.range.len());
                rest = tail;
                pos = p.range.end;
                handler.pack(k, mine);
                let mine: &[u8] = mine;
                let req = comm
                    .process_at_rank(p.peer as i32)
                    .immediate_send_with_tag(scope, mine, TAG);
                coll.add(req);
            }
            handler.overlap();
            while coll.incomplete() > 0 {
                // Poll, and give the core away between polls: with more ranks than
                // cores, the peer whose package we wait for may need it.
                let (i, status, data) = loop {
                    if let Some(done) = coll.test_any() {
                        break done;
                    }
                    std::thread::yield_now();
                };
                if i < n_recv {
                    let got = status.count(u8::equivalent_datatype()) as usize;
                    if got == data.len() {
                        handler.unpack(i, data);
                    } else if short.is_none() {
                        short = Some((recvs[i].peer, got, data.len()));
                    }
                }
            }
        });
        match short {
            Some((peer, got, want)) => Err(Error::Transport(format!(
                "rank {rank} expected {want} bytes from rank {peer} but received {got}"
            ))),
            None => Ok(()),
        }
    }
}
