//! Wall-clock time as the engine sees it (tombstone garbage collection, file creation times).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time in microseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    /// Microseconds since the Unix epoch.
    fn now_micros(&self) -> u64;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> u64 {
        // A clock before 1970 is a misconfigured machine; report the epoch rather than panic.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
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
}
