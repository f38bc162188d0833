//! What the entry points keep between calls: for every process group they ran on, a
//! duplicate of its communicator with copr's MPI transport and plan cache.

use std::mem::ManuallyDrop;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};

use copr::engine::PlanCache;
use copr::transport::MpiTransport;
use mpi::ffi::MPI_Comm;
use mpi::raw::FromRaw;
use mpi::topology::{Communicator, CommunicatorRelation, SimpleCommunicator};

/// Plans kept per communicator (and their memory): enough for the handful of layouts
/// an application redistributes again and again.
const MAX_PLANS: usize = 32;
const MAX_PLAN_BYTES: usize = 256 << 20;

/// copr's side of one communicator: messages travel on a duplicate, apart from the
/// application's and BLACS's own.
pub(crate) struct Comm {
    pub(crate) transport: MpiTransport,
    pub(crate) cache: PlanCache,
}

/// Everything kept, behind one lock.
pub(crate) struct State {
    comms: Vec<Comm>,
    /// Calls on this process that returned with an error.
    pub(crate) errors: u64,
}

// SAFETY: the MPI handles inside are process-wide values, not tied to the thread that
// made them; every use goes through the mutex, so one thread at a time makes MPI calls
// with them (as ScaLAPACK itself requires of its callers).
unsafe impl Send for State {}

/// Calls of copr's entry points on this process, whatever their outcome
/// ([`crate::exports::copr_capi_calls`]).
pub(crate) static CALLS: AtomicU64 = AtomicU64::new(0);

static STATE: Mutex<State> = Mutex::new(State {
    comms: Vec::new(),
    errors: 0,
});

/// The state, also after a panic was caught while it was held (a kept plan is only
/// ever replaced whole, so what a panic leaves behind is still consistent).
pub(crate) fn lock() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    /// copr's transport and plans for the group of `raw` (collective over `raw` the
    /// first time a group is seen: it is duplicated).
    ///
    /// Groups are matched by `MPI_Comm_compare` (same processes in the same order),
    /// so a grid made again after `Cblacs_gridexit` reuses the first duplicate made for
    /// its group; every member made the same duplicates in the same order, so they all
    /// pick the same one. Nothing is ever freed: freeing is collective, and the
    /// members of one group do not meet other groups' calls at the same points.
    ///
    /// # Safety
    /// `raw` is a valid intra-communicator of which this process is a member.
    pub(crate) unsafe fn comm(&mut self, raw: MPI_Comm) -> &mut Comm {
        // SAFETY: the caller's guarantee; ManuallyDrop, as the handle is not ours to free.
        let theirs = ManuallyDrop::new(unsafe { SimpleCommunicator::from_raw(raw) });
        let found = self.comms.iter().position(|c| {
            matches!(
                c.transport.communicator().compare(&*theirs),
                CommunicatorRelation::Identical | CommunicatorRelation::Congruent
            )
        });
        let k = match found {
            Some(k) => k,
            None => {
                self.comms.push(Comm {
                    transport: MpiTransport::new(theirs.duplicate()),
                    cache: PlanCache::new(MAX_PLANS, MAX_PLAN_BYTES),
                });
                self.comms.len() - 1
            }
        };
        &mut self.comms[k]
    }
}
