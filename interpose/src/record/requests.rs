//! Persistent send requests (`MPI_*send_init`): their destination and bytes, counted
//! each time the request is started.
//!
//! A global map (under a lock) holds every persistent send request; each thread keeps a
//! front cache of the requests it started, negative entries included (a persistent
//! receive started in a loop costs no lock either). Creating or freeing a persistent
//! send request advances an epoch that empties every thread's cache before its next
//! look-up, so a reused handle is never taken for another request.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use mpi::ffi::MPI_Request;

/// A started send: destination world rank and bytes.
pub(crate) type Send = (u32, u64);

static EPOCH: AtomicU64 = AtomicU64::new(0);
static ALL: Mutex<Option<HashMap<usize, Send>>> = Mutex::new(None);

struct Front {
    epoch: u64,
    known: HashMap<usize, Option<Send>>,
}

thread_local! {
    static FRONT: RefCell<Option<Front>> = const { RefCell::new(None) };
}

fn all<R>(f: impl FnOnce(&mut HashMap<usize, Send>) -> R) -> R {
    let mut g = match ALL.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    f(g.get_or_insert_with(HashMap::new))
}

/// Registers a persistent send request (`None`: to `MPI_PROC_NULL`, nothing to count).
pub(crate) fn register(request: MPI_Request, send: Option<Send>) {
    all(|m| match send {
        Some(s) => {
            m.insert(request.0 as usize, s);
        }
        None => {
            m.remove(&(request.0 as usize));
        }
    });
    EPOCH.fetch_add(1, Relaxed);
}

/// Forgets `request` (about to be freed), if it is a persistent send.
pub(crate) fn forget(request: MPI_Request) {
    if all(|m| m.remove(&(request.0 as usize)).is_some()) {
        EPOCH.fetch_add(1, Relaxed);
    }
}

/// What starting `request` sends, if it is a persistent send request.
#[inline]
pub(crate) fn started(request: MPI_Request) -> Option<Send> {
    let key = request.0 as usize;
    FRONT
        .try_with(|f| {
            let mut f = f.try_borrow_mut().ok()?;
            let epoch = EPOCH.load(Relaxed);
            let front = f.get_or_insert_with(|| Front {
                epoch,
                known: HashMap::new(),
            });
            if front.epoch != epoch {
                front.known.clear();
                front.epoch = epoch;
            }
            if let Some(&s) = front.known.get(&key) {
                return s;
            }
            let s = all(|m| m.get(&key).copied());
            front.known.insert(key, s);
            s
        })
        .ok()
        .flatten()
}
