//! What the entry points keep between calls: for every process group they ran on, a
//! duplicate of its communicator with copr's MPI transport and plan cache; and their
//! release when MPI finalizes.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard, Once};

use copr::engine::PlanCache;
use copr::transport::{MpiTransport, SharedBuffer};

use crate::presence::{self, Presence, Verdict};
use mpi::ffi::{self, MPI_Comm};
use mpi::topology::{Communicator, CommunicatorRelation, Group, SimpleCommunicator};

/// Plans kept per communicator (and their memory): enough for the handful of layouts
/// an application redistributes again and again.
const MAX_PLANS: usize = 32;
const MAX_PLAN_BYTES: usize = 256 << 20;

/// copr's side of one communicator: messages travel on a duplicate, apart from the
/// application's and BLACS's own.
pub(crate) struct Comm {
    /// The node-shared buffers `copr_alloc_shared` made on this group and that are not
    /// freed yet, in the order of their allocation (the same on every member), each with
    /// its number in that order. First, so that they are freed before the transport.
    pub(crate) shared: Vec<(u64, SharedBuffer<u8>)>,
    /// Node-shared buffers made on this group so far.
    pub(crate) shared_made: u64,
    /// Packages this process read straight from their senders' node-shared sources.
    pub(crate) shared_reads: u64,
    pub(crate) transport: MpiTransport,
    pub(crate) cache: PlanCache,
    /// `MPI_COMM_WORLD` rank of each rank of the communicator (-1: not in the world):
    /// the same on every member, and different for any two groups copr keeps, so it
    /// orders the release at `MPI_Finalize` the same way on every process.
    world_ranks: Vec<i32>,
    /// The group's key in the meetings before each call ([`crate::presence`]).
    key: u64,
}

/// Everything kept, behind one lock.
pub(crate) struct State {
    comms: Vec<Comm>,
    /// Calls on this process that returned with an error.
    pub(crate) errors: u64,
    /// The meetings before each call ([`crate::presence`]).
    pub(crate) presence: Presence,
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
    presence: Presence::new(),
});

/// The state, also after a panic was caught while it was held (a kept plan is only
/// ever replaced whole, so what a panic leaves behind is still consistent).
pub(crate) fn lock() -> MutexGuard<'static, State> {
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    /// The kept communicators (for counters summed over them).
    pub(crate) fn comms(&self) -> &[Comm] {
        &self.comms
    }

    /// Which kept communicator serves the group of `raw`, if any (a local operation).
    ///
    /// # Safety
    /// `raw` is a valid intra-communicator.
    pub(crate) unsafe fn find(&self, raw: MPI_Comm) -> Option<usize> {
        // SAFETY: the caller's guarantee; ManuallyDrop, as the handle is not ours to free.
        let theirs = unsafe { copr::transport::borrowed::borrow(raw) };
        self.comms.iter().position(|c| {
            matches!(
                c.transport.communicator().compare(&*theirs),
                CommunicatorRelation::Identical | CommunicatorRelation::Congruent
            )
        })
    }

    /// The meeting before a call on the group of `raw` ([`crate::presence`]), and the
    /// kept communicator of that group if there is one: a group seen before meets with
    /// the world ranks and key kept with its communicator, so a call computes them
    /// only the first time.
    ///
    /// # Safety
    /// `raw` is a valid intra-communicator of which this process is a member.
    pub(crate) unsafe fn meet(&mut self, raw: MPI_Comm) -> (Verdict, Option<usize>) {
        // SAFETY: the caller's guarantee.
        let found = unsafe { self.find(raw) };
        let me = presence::world_rank();
        let verdict = match found {
            Some(k) => {
                let c = &self.comms[k];
                self.presence.meet(&c.world_ranks, c.key, me)
            }
            None => {
                // SAFETY: the caller's guarantee.
                let members = unsafe { presence::world_ranks(raw) };
                let key = presence::key_of(&members);
                self.presence.meet(&members, key, me)
            }
        };
        (verdict, found)
    }

    /// copr's transport and plans for the group of `raw`, kept at `found` if copr has
    /// it (collective over `raw` the first time a group is seen: it is duplicated).
    ///
    /// Groups are matched by `MPI_Comm_compare` (same processes in the same order),
    /// so a grid made again after `Cblacs_gridexit` reuses the first duplicate made for
    /// its group; every member made the same duplicates in the same order, so they all
    /// pick the same one. Nothing is freed before `MPI_Finalize` (freeing is
    /// collective, and the members of one group do not meet other groups' calls at the
    /// same points); `MPI_Finalize` frees everything first ([`release_all`]).
    ///
    /// Every collective copr makes on a group (this duplicate, the transport's node
    /// split, its shared window's growth, the rounds) happens inside a call that every
    /// process of that group makes, so the collectives of overlapping groups follow
    /// the order of the application's calls, as ScaLAPACK's own do.
    ///
    /// # Safety
    /// `raw` is a valid intra-communicator of which this process is a member; `found`
    /// is what [`State::find`] (or [`State::meet`]) returned for it, with no
    /// communicator kept since.
    pub(crate) unsafe fn comm(&mut self, found: Option<usize>, raw: MPI_Comm) -> &mut Comm {
        // SAFETY: the caller's guarantee; ManuallyDrop, as the handle is not ours to free.
        let theirs = unsafe { copr::transport::borrowed::borrow(raw) };
        let k = match found {
            Some(k) => k,
            None => {
                release_at_finalize();
                // a group that is the whole world in its rank order is served by a
                // duplicate of MPI_COMM_WORLD, which a process that cannot read its
                // context can make too (see redist's joined_comm)
                let world = SimpleCommunicator::world();
                let ours = match theirs.compare(&world) {
                    CommunicatorRelation::Identical | CommunicatorRelation::Congruent => {
                        world.duplicate()
                    }
                    _ => theirs.duplicate(),
                };
                let world = world.group();
                let group = ours.group();
                let ranks: Vec<i32> = (0..ours.size()).collect();
                let world_ranks: Vec<i32> = group
                    .translate_ranks(&ranks, &world)
                    .into_iter()
                    .map(|r| r.unwrap_or(-1))
                    .collect();
                let key = presence::key_of(&world_ranks);
                self.comms.push(Comm {
                    shared: Vec::new(),
                    shared_made: 0,
                    shared_reads: 0,
                    transport: MpiTransport::new(ours),
                    cache: PlanCache::new(MAX_PLANS, MAX_PLAN_BYTES),
                    world_ranks,
                    key,
                });
                self.comms.len() - 1
            }
        };
        &mut self.comms[k]
    }
}

/// Registers, once per process, [`release_all`] as the delete callback of an attribute
/// on `MPI_COMM_SELF`: MPI runs it first thing in `MPI_Finalize`, with MPI still fully
/// usable (MPI-3.1, section 8.7.1).
fn release_at_finalize() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        let mut keyval: c_int = 0;
        // SAFETY: MPI is initialised (a caller of copr holds a live BLACS context);
        // the callbacks have MPI's signatures and never unwind; the attribute's value
        // is never read.
        unsafe {
            if ffi::MPI_Comm_create_keyval(
                Some(no_copy),
                Some(release_all),
                &mut keyval,
                std::ptr::null_mut(),
            ) == 0
            {
                ffi::MPI_Comm_set_attr(ffi::RSMPI_COMM_SELF, keyval, std::ptr::null_mut());
            }
        }
    });
}

/// The attribute is not copied to duplicates of `MPI_COMM_SELF`.
unsafe extern "C" fn no_copy(
    _comm: MPI_Comm,
    _keyval: c_int,
    _extra: *mut c_void,
    _value_in: *mut c_void,
    _value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    if !flag.is_null() {
        // SAFETY: MPI passes a valid flag.
        unsafe { flag.write(0) };
    }
    0
}

/// Frees every window and communicator copr made (each transport: its shared window,
/// collective over the node's ranks of the group, then its communicators), group by
/// group in the order of their `MPI_COMM_WORLD` ranks: every process frees the groups
/// it belongs to in one global order, so no two processes wait for each other in
/// different groups (left to `MPI_Finalize`, the windows were freed in each process's
/// order of creation, which overlapping groups do not share, and it hung).
unsafe extern "C" fn release_all(
    _comm: MPI_Comm,
    _keyval: c_int,
    _value: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    let released = catch_unwind(AssertUnwindSafe(|| {
        let mut comms = std::mem::take(&mut lock().comms);
        comms.sort_by(|a, b| a.world_ranks.cmp(&b.world_ranks));
        for comm in comms {
            drop(comm);
        }
    }));
    if released.is_err() {
        eprintln!(
            "copr: internal error (a bug in copr) while freeing its communicators at MPI_Finalize"
        );
    }
    0
}
