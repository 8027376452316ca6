//! Recent read latencies per table at this coordinator: what a percentile
//! `speculative_retry` (`99p`) waits for before asking one more replica.
//!
//! Each table keeps an HDR histogram of the latencies of its reads (the time until a
//! consistency level's worth of replicas answered) for the current minute, and the last
//! minute's; a quantile is read from the current one once it holds enough reads, else from
//! the last, and is recomputed at most once a second (Cassandra recomputes its thresholds
//! periodically too), so a read pays for a lock and a lookup.

use std::collections::HashMap;

use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::message::TableKey;

/// How long a histogram collects before it becomes the previous one.
const WINDOW_MICROS: u64 = 60_000_000;
/// Reads a histogram needs before its quantiles are used.
const SAMPLES_MIN: u64 = 20;
/// How long a computed quantile is reused.
const CACHE_MICROS: u64 = 1_000_000;
/// The largest latency recorded (longer ones count as this): a minute, in microseconds.
const LATENCY_MAX_MICROS: u64 = 60_000_000;

/// See the module doc.
#[derive(Default)]
pub struct ReadLatencies {
    tables: Mutex<HashMap<TableKey, Window>>,
}

struct Window {
    current: Histogram<u64>,
    previous: Option<Histogram<u64>>,
    started: u64,
    /// `(computed at, quantile, milliseconds)`.
    cached: Option<(u64, f64, Option<f64>)>,
}

impl Window {
    fn new(now: u64) -> Option<Window> {
        Some(Window {
            current: Histogram::new_with_max(LATENCY_MAX_MICROS, 2).ok()?,
            previous: None,
            started: now,
            cached: None,
        })
    }

    fn rotate(&mut self, now: u64) {
        if now.saturating_sub(self.started) < WINDOW_MICROS {
            return;
        }
        let fresh = match Histogram::new_from(&self.current) {
            h if now.saturating_sub(self.started) < 2 * WINDOW_MICROS => {
                Some(std::mem::replace(&mut self.current, h))
            }
            // Nothing was read for a whole window: the old one says nothing of now.
            h => {
                self.current = h;
                None
            }
        };
        self.previous = fresh;
        self.started = now;
    }
}

impl ReadLatencies {
    /// Records a read of `table` that took `micros`.
    pub fn record(&self, table: TableKey, micros: u64, now: u64) {
        let mut tables = self.tables.lock();
        let window = match tables.get_mut(&table) {
            Some(w) => w,
            None => match Window::new(now) {
                Some(w) => tables.entry(table).or_insert(w),
                None => return,
            },
        };
        window.rotate(now);
        window
            .current
            .saturating_record(micros.clamp(1, LATENCY_MAX_MICROS));
    }

    /// The read latency of `table` at quantile `q` (0–1), in milliseconds; `None` until
    /// enough reads were measured.
    pub fn quantile_ms(&self, table: TableKey, q: f64, now: u64) -> Option<f64> {
        let mut tables = self.tables.lock();
        let window = tables.get_mut(&table)?;
        window.rotate(now);
        if let Some((at, cached_q, ms)) = window.cached {
            if cached_q == q && now.saturating_sub(at) < CACHE_MICROS {
                return ms;
            }
        }
        let source = if window.current.len() >= SAMPLES_MIN {
            Some(&window.current)
        } else {
            window.previous.as_ref().filter(|h| h.len() >= SAMPLES_MIN)
        };
        let ms = source.map(|h| h.value_at_quantile(q.clamp(0.0, 1.0)) as f64 / 1000.0);
        window.cached = Some((now, q, ms));
        ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_recent_reads_once_there_are_enough() {
        let l = ReadLatencies::default();
        let t = mosaic_types::TableId([7; 16]);
        for i in 0..10 {
            l.record(t, 1000 + i, 0);
        }
        assert_eq!(l.quantile_ms(t, 0.99, 0), None, "too few reads");
        for i in 0..100u64 {
            l.record(t, 1000 * (i + 1), 10);
        }
        // Cached for a second, then recomputed from the 110 reads.
        assert_eq!(l.quantile_ms(t, 0.99, 10), l.quantile_ms(t, 0.99, 20));
        let p99 = l.quantile_ms(t, 0.99, 2_000_000).unwrap();
        assert!((95.0..=101.0).contains(&p99), "{p99}");
        let p50 = l.quantile_ms(t, 0.5, 2_000_000).unwrap();
        assert!((40.0..=52.0).contains(&p50), "{p50}");
        // A minute later the last minute's reads still answer; two idle minutes later
        // nothing does.
        assert!(l.quantile_ms(t, 0.5, WINDOW_MICROS + 3_000_000).is_some());
        assert_eq!(l.quantile_ms(t, 0.5, 4 * WINDOW_MICROS), None);
        assert_eq!(l.quantile_ms(mosaic_types::TableId([8; 16]), 0.5, 0), None);
    }
}
