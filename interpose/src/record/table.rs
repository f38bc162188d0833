//! Per-thread counters: messages and bytes per destination (a rank of
//! `MPI_COMM_WORLD`), in an open-addressing table that only its own thread writes.
//!
//! The hot path is a thread-local read, a probe and two plain stores: no lock, no
//! read-modify-write atomic, no allocation (a table grows, by doubling, only when a new
//! destination fills it past one half). Every thread's table is registered once, under
//! a lock, in a global list that `MPI_Finalize` reads (MPI requires the other threads
//! to have finished their communication by then). Tables replaced by a larger one are
//! kept until the process exits, so a reader never sees freed memory; they add at most
//! the size of the last table.
//!
//! # Complexity
//! Memory O(distinct destinations) per thread; a send O(1) expected.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// A free slot's key.
const EMPTY: u32 = u32::MAX;

/// Slots of a thread's first table.
const FIRST_CAPACITY: usize = 16;

/// One destination's counters.
struct Slot {
    key: AtomicU32,
    messages: AtomicU64,
    bytes: AtomicU64,
}

/// A table of `2^k` slots, at most half of them used.
struct Table {
    slots: Box<[Slot]>,
    used: AtomicUsize,
}

impl Table {
    fn with_capacity(capacity: usize) -> Self {
        let slots = (0..capacity)
            .map(|_| Slot {
                key: AtomicU32::new(EMPTY),
                messages: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
            })
            .collect();
        Table {
            slots,
            used: AtomicUsize::new(0),
        }
    }

    /// The slot of `key`, or the free slot where it belongs.
    #[inline]
    fn probe(&self, key: u32) -> &Slot {
        let mask = self.slots.len() - 1;
        // Fibonacci hashing spreads consecutive ranks over the table
        let mut i = (u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
        loop {
            let s = &self.slots[i];
            let k = s.key.load(Relaxed);
            if k == key || k == EMPTY {
                return s;
            }
            i = (i + 1) & mask;
        }
    }
}

/// A thread's table, registered in [`SHELVES`].
struct Shelf {
    table: AtomicPtr<Table>,
}

/// Every thread's shelf, in the order of their first send.
static SHELVES: Mutex<Vec<&'static Shelf>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread's shelf, once it has sent something.
    static MINE: Cell<Option<&'static Shelf>> = const { Cell::new(None) };
}

fn register() -> &'static Shelf {
    let table = Box::into_raw(Box::new(Table::with_capacity(FIRST_CAPACITY)));
    let shelf: &'static Shelf = Box::leak(Box::new(Shelf {
        table: AtomicPtr::new(table),
    }));
    match SHELVES.lock() {
        Ok(mut v) => v.push(shelf),
        Err(poisoned) => poisoned.into_inner().push(shelf),
    }
    MINE.with(|m| m.set(Some(shelf)));
    shelf
}

/// Counts `messages` messages of `bytes` bytes in all to `dest` (a rank of
/// `MPI_COMM_WORLD`, below `u32::MAX`).
#[inline]
pub(crate) fn add(dest: u32, messages: u64, bytes: u64) {
    let shelf = MINE.with(Cell::get).unwrap_or_else(register);
    // SAFETY: tables are never freed (see the module documentation); only this
    // thread replaces its shelf's table.
    let table = unsafe { &*shelf.table.load(Relaxed) };
    let slot = table.probe(dest);
    if slot.key.load(Relaxed) == dest {
        // this thread is the only writer: plain loads and stores
        slot.messages
            .store(slot.messages.load(Relaxed) + messages, Relaxed);
        slot.bytes.store(slot.bytes.load(Relaxed) + bytes, Relaxed);
        return;
    }
    insert(shelf, table, dest, messages, bytes);
}

/// The cold path of [`add`]: a new destination, growing the table first if it would
/// be more than half full.
#[cold]
fn insert(shelf: &Shelf, table: &Table, dest: u32, messages: u64, bytes: u64) {
    let mut table = table;
    if 2 * (table.used.load(Relaxed) + 1) > table.slots.len() {
        let bigger = Table::with_capacity(2 * table.slots.len());
        for s in table.slots.iter() {
            let k = s.key.load(Relaxed);
            if k != EMPTY {
                let t = bigger.probe(k);
                t.key.store(k, Relaxed);
                t.messages.store(s.messages.load(Relaxed), Relaxed);
                t.bytes.store(s.bytes.load(Relaxed), Relaxed);
            }
        }
        bigger.used.store(table.used.load(Relaxed), Relaxed);
        let bigger = Box::into_raw(Box::new(bigger));
        shelf.table.store(bigger, Relaxed);
        // SAFETY: just allocated and never freed.
        table = unsafe { &*bigger };
    }
    let slot = table.probe(dest);
    slot.key.store(dest, Relaxed);
    slot.messages.store(messages, Relaxed);
    slot.bytes.store(bytes, Relaxed);
    table.used.store(table.used.load(Relaxed) + 1, Relaxed);
}

/// Every thread's counters summed: destination → (messages, bytes).
pub(crate) fn totals() -> BTreeMap<u32, (u64, u64)> {
    let shelves: Vec<&'static Shelf> = match SHELVES.lock() {
        Ok(v) => v.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    let mut out = BTreeMap::new();
    for shelf in shelves {
        // SAFETY: as in `add`; the owners have finished sending (MPI_Finalize).
        let table = unsafe { &*shelf.table.load(Relaxed) };
        for s in table.slots.iter() {
            let k = s.key.load(Relaxed);
            if k != EMPTY {
                let e = out.entry(k).or_insert((0u64, 0u64));
                e.0 += s.messages.load(Relaxed);
                e.1 += s.bytes.load(Relaxed);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_many_destinations_across_growth_and_threads() {
        // a plain map as the reference; 3 threads, 1000 destinations each, growing
        // the tables several times
        let mut expected: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for t in 0..3u32 {
            for i in 0..5000u32 {
                let d = (i * 7919 + t * 13) % 1000 + 1000 * t;
                let e = expected.entry(d).or_insert((0, 0));
                e.0 += 1;
                e.1 += u64::from(i % 97);
            }
        }
        let handles: Vec<_> = (0..3u32)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..5000u32 {
                        let d = (i * 7919 + t * 13) % 1000 + 1000 * t;
                        add(d, 1, u64::from(i % 97));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("a counting thread panicked");
        }
        assert_eq!(totals(), expected);
    }
}
