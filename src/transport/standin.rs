//! A stand-in for one rank of a large communicator, to plan as that rank would
//! without launching the others.

use super::{Round, RoundHandler, Transport};

/// One rank of `size` whose peers all agree: a collective gather returns this
/// rank's words from everyone. It plans as that rank would and cannot execute.
pub struct StandIn {
    /// The rank it stands in for.
    pub rank: usize,
    /// The size of the communicator.
    pub size: usize,
}

impl Transport for StandIn {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn max_message_bytes(&self) -> usize {
        usize::MAX
    }
    fn threads(&self) -> usize {
        1
    }
    fn all_gather(&mut self, mine: &[u64], all: &mut [u64]) -> crate::Result<()> {
        for part in all.chunks_exact_mut(mine.len().max(1)) {
            part.copy_from_slice(mine);
        }
        Ok(())
    }
    fn exchange(&mut self, _: Round<'_>, _: &mut dyn RoundHandler) -> crate::Result<()> {
        Err(crate::Error::Transport(
            "a stand-in rank moves no data".into(),
        ))
    }
}
