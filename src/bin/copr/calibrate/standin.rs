//! A stand-in for one rank of a large communicator, to plan as that rank would
//! without launching the others (the calibration's planning tests and
//! `benches/calibrate_plan.rs`, the engine's `benches/plan.rs`).

use copr::transport::{Round, RoundHandler, Transport};

/// One rank of `size` whose peers all agree: a collective gather returns this
/// rank's words from everyone. It plans as that rank would and cannot execute.
pub(crate) struct StandIn {
    pub(crate) rank: usize,
    pub(crate) size: usize,
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
    fn all_gather(&mut self, mine: &[u64], all: &mut [u64]) -> copr::Result<()> {
        for part in all.chunks_exact_mut(mine.len().max(1)) {
            part.copy_from_slice(mine);
        }
        Ok(())
    }
    fn exchange(&mut self, _: Round<'_>, _: &mut dyn RoundHandler) -> copr::Result<()> {
        Err(copr::Error::Transport(
            "a stand-in rank moves no data".into(),
        ))
    }
}
