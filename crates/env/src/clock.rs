//! Time as the core crates see it: wall-clock time (tombstone garbage collection, file
//! creation times, write timestamps) and a monotonic clock (durations, deadlines, stalls).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A source of time.
pub trait Clock: Send + Sync + 'static {
    /// Wall-clock microseconds since the Unix epoch (may jump when the clock is set).
    fn now_micros(&self) -> u64;
    /// Microseconds on a monotonic clock with an arbitrary origin: never goes back, for
    /// measuring durations and deadlines.
    fn monotonic_micros(&self) -> u64;
}

/// Microseconds since the first call in this process, on the operating system's monotonic
/// clock.
pub fn monotonic_micros() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    #[allow(clippy::disallowed_methods)] // The sanctioned reading of the monotonic clock.
    let now = Instant::now();
    now.saturating_duration_since(*ORIGIN.get_or_init(|| now))
        .as_micros() as u64
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> u64 {
        // A clock before 1970 is a misconfigured machine; report the epoch rather than panic.
        #[allow(clippy::disallowed_methods)] // The sanctioned reading of the wall clock.
        let now = SystemTime::now();
        now.duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
    }

    fn monotonic_micros(&self) -> u64 {
        monotonic_micros()
    }
}

/// A clock that moves only when told to, for tests of time-dependent behaviour.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_micros: AtomicU64,
}

impl ManualClock {
    /// A clock reading `now_micros`.
    pub fn new(now_micros: u64) -> Self {
        Self {
            now_micros: AtomicU64::new(now_micros),
        }
    }

    /// Sets the time.
    pub fn set_micros(&self, now_micros: u64) {
        self.now_micros.store(now_micros, Ordering::SeqCst);
    }

    /// Moves the time forward.
    pub fn advance_micros(&self, delta: u64) {
        self.now_micros.fetch_add(delta, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> u64 {
        self.now_micros.load(Ordering::SeqCst)
    }

    /// The same reading as [`Clock::now_micros`]: a manual clock only moves forward unless
    /// a test sets it back on purpose.
    fn monotonic_micros(&self) -> u64 {
        self.now_micros.load(Ordering::SeqCst)
    }
}
