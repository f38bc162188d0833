//! The mapper's clock: every reading of the time in copr-mapping is [`now`] (and
//! [`since`]), so that a test can run the mapper on a simulated slow machine
//! (`slowed` and `advance`, tests only) and check that the clock only cuts
//! (optimise.rs, "The clock"): a run that reaches no deadline returns the same mapping
//! however long its steps took.

use std::time::{Duration, Instant};

/// The time now ([`Instant::now`]); in this crate's tests, on a thread inside
/// `slowed`, ahead of it by what `slowed` and `advance` added.
#[cfg(not(test))]
#[inline]
pub(crate) fn now() -> Instant {
    Instant::now()
}

/// The time from `t0` to [`now`] (zero if `t0` is later).
#[inline]
pub(crate) fn since(t0: Instant) -> Duration {
    now().saturating_duration_since(t0)
}

#[cfg(test)]
pub(crate) use slow::{advance, now, real_now, slowed};

#[cfg(test)]
mod slow {
    use std::cell::Cell;
    use std::time::{Duration, Instant};

    thread_local! {
        /// Inside [`slowed`]: how far the clock is ahead, how much more each reading
        /// puts it, and the readings made.
        static SLOW: Cell<Option<(Duration, Duration, u64)>> = const { Cell::new(None) };
    }

    /// The real time plus what this thread's clock is ahead inside [`slowed`] (each
    /// reading there puts it `step` further ahead).
    pub(crate) fn now() -> Instant {
        let real = Instant::now();
        SLOW.with(|s| match s.get() {
            None => real,
            Some((ahead, step, n)) => {
                s.set(Some((ahead + step, step, n + 1)));
                real + ahead
            }
        })
    }

    /// The real time, never ahead (for a test's own limits on a slowed run).
    pub(crate) fn real_now() -> Instant {
        Instant::now()
    }

    /// Puts this thread's clock `d` ahead, inside [`slowed`] (as if what runs took
    /// that long); nothing outside.
    pub(crate) fn advance(d: Duration) {
        SLOW.with(|s| {
            if let Some((ahead, step, n)) = s.get() {
                s.set(Some((ahead + d, step, n)));
            }
        });
    }

    /// `f()` on a slow machine: on this thread, each reading of [`now`] is `step`
    /// later than it would be (every step of the mapper takes that much longer), and
    /// [`advance`] moves the clock ahead; `f()` and the readings it made. The real
    /// clock again after `f`, even when it panics.
    pub(crate) fn slowed<R>(step: Duration, f: impl FnOnce() -> R) -> (R, u64) {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                SLOW.with(|s| s.set(None));
            }
        }
        SLOW.with(|s| s.set(Some((Duration::ZERO, step, 0))));
        let _reset = Reset;
        let r = f();
        let n = SLOW.with(|s| s.get().map_or(0, |(_, _, n)| n));
        (r, n)
    }

    #[test]
    fn readings_run_ahead_inside_only() {
        let s = Duration::from_secs(10);
        let ((ab, ac), n) = slowed(s, || {
            let a = now();
            let b = now();
            advance(Duration::from_secs(100));
            let c = now();
            (b - a, c - a)
        });
        assert_eq!(n, 3);
        assert!(ab >= s && ab < s * 11 / 10, "{ab:?}");
        assert!(ac >= s * 12 && ac < s * 13, "{ac:?}");
        advance(s);
        let (a, b) = (now(), now());
        assert!(b - a < Duration::from_secs(1));
    }
}
