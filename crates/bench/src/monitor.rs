//! What a phase shows while it runs and records over time: the progress display (an
//! `indicatif` bar on a terminal, a plain line every 10 s otherwise, so logs stay short) and
//! the timeline — one point per second with the operations finished and their latency
//! percentiles — that the JSON report carries for latency-over-time plots.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::Serialize;

/// Largest latency a timeline window records (a minute); longer ones saturate.
const WINDOW_US_MAX: u64 = 60_000_000;
/// Time between timeline points.
const SAMPLE_PERIOD: Duration = Duration::from_secs(1);
/// Samples between two progress lines when stderr is not a terminal.
const LINE_EVERY_SAMPLES: u64 = 10;

/// One second of a phase.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelinePoint {
    /// Seconds since the phase started, at the end of this window.
    pub t_s: f64,
    /// Operations that finished in the window (successes and failures).
    pub ops: u64,
    /// `ops` over the window's length.
    pub ops_per_s: f64,
    /// Failures in the window.
    pub errors: u64,
    /// Median latency of the window's successes (0 when there were none).
    pub p50_us: u64,
    /// 99th percentile latency of the window's successes.
    pub p99_us: u64,
}

/// The counters workers update and the sampler reads.
pub struct Monitor {
    /// Operations finished (success or failure).
    pub done: AtomicU64,
    /// Failures so far.
    pub failed: AtomicU64,
    /// Latencies of successes since the last sample.
    window: Mutex<Histogram<u64>>,
    points: Mutex<Vec<TimelinePoint>>,
    /// When the current window opened, and `done` and `failed` then.
    cursor: Mutex<(Instant, u64, u64)>,
    total: u64,
    start: Instant,
}

impl Monitor {
    /// A monitor for a phase of `total` operations starting at `start` (0: a phase that
    /// runs for a time rather than a number of operations).
    pub fn new(total: u64, start: Instant) -> anyhow::Result<Monitor> {
        Ok(Monitor {
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            window: Mutex::new(Histogram::new_with_bounds(1, WINDOW_US_MAX, 2)?),
            points: Mutex::new(Vec::new()),
            cursor: Mutex::new((start, 0, 0)),
            total,
            start,
        })
    }

    /// Counts a finished operation; `latency_us` of a success, `None` for a failure.
    pub fn finished(&self, latency_us: Option<u64>) {
        self.done.fetch_add(1, Ordering::Relaxed);
        match latency_us {
            Some(us) => self.window.lock().saturating_record(us.max(1)),
            None => {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Closes the current window as a timeline point and returns it.
    fn sample(&self) -> TimelinePoint {
        let mut last = self.cursor.lock();
        let now = Instant::now();
        let done = self.done.load(Ordering::Relaxed);
        let failed = self.failed.load(Ordering::Relaxed);
        let secs = now.duration_since(last.0).as_secs_f64().max(1e-9);
        let (p50_us, p99_us) = {
            let mut w = self.window.lock();
            let q = (w.value_at_quantile(0.5), w.value_at_quantile(0.99));
            w.reset();
            q
        };
        let ops = done.saturating_sub(last.1);
        let point = TimelinePoint {
            t_s: now.duration_since(self.start).as_secs_f64(),
            ops,
            ops_per_s: ops as f64 / secs,
            errors: failed.saturating_sub(last.2),
            p50_us,
            p99_us,
        };
        self.points.lock().push(point.clone());
        *last = (now, done, failed);
        point
    }

    /// Samples once a second until aborted, showing progress on stderr when `progress`.
    pub async fn run(self: Arc<Self>, phase: &'static str, progress: bool) {
        let bar = (progress && std::io::stderr().is_terminal()).then(|| self.bar(phase));
        let mut samples = 0u64;
        loop {
            tokio::time::sleep(SAMPLE_PERIOD).await;
            let point = self.sample();
            samples += 1;
            let done = self.done.load(Ordering::Relaxed);
            let failed = self.failed.load(Ordering::Relaxed);
            match &bar {
                Some(bar) => {
                    bar.set_position(done);
                    bar.set_message(format!(
                        "{:.0} ops/s, p99 {} µs, {failed} errors",
                        point.ops_per_s, point.p99_us
                    ));
                }
                None if progress && samples.is_multiple_of(LINE_EVERY_SAMPLES) => {
                    // A phase that runs for a time has no total (0).
                    let of = if self.total == 0 {
                        String::new()
                    } else {
                        format!(
                            "/{} ({:.0}%)",
                            self.total,
                            100.0 * done as f64 / self.total as f64
                        )
                    };
                    eprintln!(
                        "{phase}: {done}{of} ops, {:.0} ops/s, p99 {} µs, {failed} errors, {:.0} s",
                        point.ops_per_s, point.p99_us, point.t_s
                    )
                }
                None => {}
            }
        }
    }

    fn bar(&self, phase: &'static str) -> indicatif::ProgressBar {
        // A phase that runs for a time has no total (0): a spinner with the count.
        let (bar, template) = if self.total == 0 {
            (
                indicatif::ProgressBar::new_spinner(),
                "{prefix}: [{elapsed_precise}] {spinner} {pos} ops {msg}",
            )
        } else {
            (
                indicatif::ProgressBar::new(self.total),
                "{prefix}: [{elapsed_precise}] {wide_bar} {pos}/{len} ({percent}%) {msg}",
            )
        };
        let style = indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(phase);
        bar
    }

    /// The timeline, with the last (partial) window closed.
    pub fn finish(&self) -> Vec<TimelinePoint> {
        let counted = self.cursor.lock().1;
        if self.done.load(Ordering::Relaxed) > counted {
            self.sample();
        }
        std::mem::take(&mut *self.points.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_counts_every_operation_once() {
        let m = Monitor::new(10, Instant::now()).unwrap();
        for us in [100, 200, 300] {
            m.finished(Some(us));
        }
        m.finished(None);
        m.sample();
        m.finished(Some(5_000));
        let points = m.finish();
        assert_eq!(points.len(), 2);
        assert_eq!((points[0].ops, points[0].errors), (4, 1));
        assert_eq!(points[0].p50_us, 200);
        assert_eq!((points[1].ops, points[1].errors), (1, 0));
        assert!(points[1].p99_us >= 4_900, "{:?}", points[1]);
        assert_eq!(points.iter().map(|p| p.ops).sum::<u64>(), 5);
    }
}
