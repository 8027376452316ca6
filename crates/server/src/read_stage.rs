//! The read stage: a replica's reads run on `read_concurrency` workers, and the reads
//! waiting for one are served in the order of the local queue policy
//! (`mosaic_cluster::local_queue`, `[scheduling] local_queue`).
//!
//! Every engine read takes one of the stage's `read_concurrency` slots. With
//! `[storage] engine_calls = "inline"` (the default) a read that finds a free slot and
//! nobody waiting runs right away on the network thread it arrived on, as it would with
//! no stage: scheduling only matters when reads wait, and a handoff to another thread per
//! read costs a quarter of a node's throughput on 2 cores (BENCHMARKS.md). Otherwise —
//! slots all taken, reads already waiting, or `engine_calls = "offload"` — the read waits
//! in the queue and one of the stage's worker threads runs it when a slot frees, so at
//! most `read_concurrency` engine reads ever run at once (Hector's experiment bounds them
//! to model a device with little parallelism). A read whose requester gave up (a timeout,
//! a dropped connection) is skipped when its turn comes, and so is one that waited longer
//! than the read timeout (`[cluster] read_request_timeout_ms`): its coordinator has
//! answered the client already, so serving it would only take the slot from a read that
//! can still be answered in time — Cassandra drops such a read too (`nodetool tpstats`'
//! dropped `READ` messages). Under overload the stage then serves reads that can still
//! make it instead of a backlog nobody waits for. A read is dropped as well when its wait
//! plus the service time reads of its expected size took lately (a moving average per
//! power-of-two size class, of reads run inline and queued) passes the timeout: it would
//! be answered after its coordinator gave up, and a large read spends seconds of a slow
//! device that way. At most half the timeout is counted for the service, so a read that
//! waited less than half of it always runs (and a class whose average went up keeps
//! being measured).
//!
//! With `[scheduling] reserved_slots = n` (queues that keep priorities apart), reads of a
//! lower priority than the first hold at most `read_concurrency − n` slots at once: a
//! worker whose slot would exceed that share takes only a first-priority read
//! ([`LocalQueue::pop_first_priority`]). Large reads on a slow device then never hold
//! every slot while small ones wait for seconds behind them.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use mosaic_cluster::local_queue::{self, LocalQueue, QueueConfig, QueuePolicy, ReadClass};
use parking_lot::{Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// A waiting read: its work, and whether it is of a lower priority than the first (it
/// may not take a reserved slot).
struct Queued {
    job: Job,
    low: bool,
}

/// The read stage (see the module doc). Dropping it lets its workers finish what waits
/// and exit.
pub struct ReadStage {
    shared: Arc<Shared>,
}

struct Shared {
    policy: QueuePolicy,
    queue: Box<dyn LocalQueue<Queued>>,
    concurrency: usize,
    /// Slots lower-priority reads may hold at once (`usize::MAX`: no slot reserved).
    low_limit: usize,
    /// Slots lower-priority reads hold (counted only when slots are reserved).
    low_running: AtomicUsize,
    /// First-priority reads waiting (counted only when slots are reserved).
    high_waiting: AtomicUsize,
    /// Whether a read finding a free slot and an empty queue runs where it arrived.
    inline: bool,
    /// A queued read that waited longer than this is dropped (microseconds; 0: never).
    expire_micros: u64,
    /// No worker could be started: every read runs where it arrived, unbounded.
    unscheduled: AtomicBool,
    /// Slots taken (reads running, inline or on a worker).
    running: AtomicUsize,
    /// Workers park here; the flag says the stage is stopping.
    stopping: Mutex<bool>,
    wake: Condvar,
    epoch: Instant,
    counters: Counters,
    /// Per size class ([`size_class`]), the moving average of a read's service time
    /// (microseconds; 0: none measured yet).
    service: [AtomicU64; SIZE_CLASSES],
}

/// Size classes: unknown size, then one per power of two.
const SIZE_CLASSES: usize = 66;

/// The size class of `class`: 0 when no oracle expected a size, else one more than the
/// expected size's bit length.
fn size_class(class: &ReadClass) -> usize {
    class
        .size
        .map_or(0, |s| 1 + (64 - s.leading_zeros()) as usize)
}

#[derive(Default)]
struct Counters {
    /// Reads whose tags carried an expected size.
    sized: AtomicU64,
    inline: AtomicU64,
    queued: AtomicU64,
    completed: AtomicU64,
    skipped: AtomicU64,
    dropped: AtomicU64,
    wait_micros: AtomicU64,
}

/// The stage's counters, for `mosaic status` and the metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageSnapshot {
    /// The queue policy.
    pub policy: String,
    /// Slots.
    pub concurrency: usize,
    /// Of those, slots only first-priority reads may take.
    pub reserved_slots: usize,
    /// Reads running now.
    pub running: u64,
    /// Reads waiting now.
    pub waiting: u64,
    /// Reads whose coordinator's oracle expected a size, since start.
    pub sized_total: u64,
    /// Reads run at once where they arrived, since start.
    pub inline_total: u64,
    /// Reads that waited in the queue, since start.
    pub queued_total: u64,
    /// Queued reads run by a worker, since start.
    pub completed_total: u64,
    /// Queued reads skipped because their requester gave up.
    pub skipped_total: u64,
    /// Queued reads dropped because they waited longer than the read timeout.
    pub dropped_total: u64,
    /// Time queued reads waited, in total (microseconds).
    pub wait_micros_total: u64,
}

/// Why the stage did not run a read.
#[derive(Debug, PartialEq, Eq)]
pub enum StageError {
    /// The stage is stopping, or the read failed inside the engine (a panic, logged).
    Failed,
    /// The read waited in the queue longer than the read timeout, and was dropped.
    Expired,
}

impl ReadStage {
    /// A stage of `concurrency` workers (at least one) serving `queue`'s policy; `inline`
    /// lets reads run where they arrive when a slot is free and nobody waits; a queued
    /// read that waited longer than `expire_after` is dropped (`None`: never).
    pub fn new(
        concurrency: usize,
        queue: &QueueConfig,
        inline: bool,
        expire_after: Option<Duration>,
    ) -> ReadStage {
        let concurrency = concurrency.max(1);
        let shared = Arc::new(Shared {
            policy: queue.policy,
            queue: local_queue::queue(queue),
            concurrency,
            low_limit: match queue.reserved_slots {
                0 => usize::MAX,
                n => concurrency.saturating_sub(n).max(1),
            },
            low_running: AtomicUsize::new(0),
            high_waiting: AtomicUsize::new(0),
            inline,
            expire_micros: expire_after.map_or(0, |d| d.as_micros().max(1) as u64),
            unscheduled: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            stopping: Mutex::new(false),
            wake: Condvar::new(),
            epoch: Instant::now(),
            counters: Counters::default(),
            service: std::array::from_fn(|_| AtomicU64::new(0)),
        });
        let mut workers = 0;
        for i in 0..concurrency {
            let s = shared.clone();
            match mosaic_env::thread::spawn_named(format!("mosaic-read-{i}"), move || s.work()) {
                Ok(_) => workers += 1,
                // Fewer workers than slots still serve every read.
                Err(e) => {
                    tracing::warn!(target: "mosaic::storage", error = %e, "read stage worker not started")
                }
            }
        }
        if workers == 0 {
            // Nobody would ever serve the queue: every read runs where it arrives.
            tracing::error!(target: "mosaic::storage", "no read stage worker started: reads run unscheduled");
            shared.unscheduled.store(true, Ordering::Relaxed);
        }
        ReadStage { shared }
    }

    /// Runs `read` in its turn; `class` is what the queue policy orders by.
    pub async fn run<T: Send + 'static>(
        &self,
        class: ReadClass,
        read: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, StageError> {
        let s = &self.shared;
        if class.size.is_some() {
            s.counters.sized.fetch_add(1, Ordering::Relaxed);
        }
        if s.unscheduled.load(Ordering::Relaxed) {
            return std::panic::catch_unwind(AssertUnwindSafe(read))
                .map_err(|_| StageError::Failed);
        }
        let sized = size_class(&class);
        let low = class.priority > 0;
        if s.inline && s.queue.is_empty() && s.try_take_slot() && s.try_take_low(low) {
            s.counters.inline.fetch_add(1, Ordering::Relaxed);
            let started = s.now_micros();
            let out = std::panic::catch_unwind(AssertUnwindSafe(read));
            s.served(sized, started);
            s.release_low(low);
            s.release_slot();
            return out.map_err(|_| {
                tracing::error!(target: "mosaic::storage", "a read panicked in the engine");
                StageError::Failed
            });
        }
        let (tx, rx) = oneshot::channel();
        let arrived = s.now_micros();
        let shared = self.shared.clone();
        let job: Job = Box::new(move || {
            let waited = shared.now_micros().saturating_sub(arrived);
            shared
                .counters
                .wait_micros
                .fetch_add(waited, Ordering::Relaxed);
            if tx.is_canceled() {
                shared.counters.skipped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            if shared.too_late(sized, waited) {
                shared.counters.dropped.fetch_add(1, Ordering::Relaxed);
                let _ = tx.send(Err(StageError::Expired));
                return;
            }
            let started = shared.now_micros();
            let out = read();
            shared.served(sized, started);
            shared.counters.completed.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(Ok(out));
        });
        s.counters.queued.fetch_add(1, Ordering::Relaxed);
        if !low && s.reserves() {
            s.high_waiting.fetch_add(1, Ordering::Relaxed);
        }
        s.queue.push(Queued { job, low }, class, arrived);
        s.notify();
        rx.await.unwrap_or(Err(StageError::Failed))
    }

    /// Reads waiting or running (the `QueueLength` fact).
    pub fn queue_length(&self) -> u64 {
        (self.shared.queue.len() + self.shared.running.load(Ordering::Relaxed)) as u64
    }

    /// The stage's counters.
    pub fn snapshot(&self) -> StageSnapshot {
        let s = &self.shared;
        let c = &s.counters;
        StageSnapshot {
            policy: s.policy.to_string(),
            concurrency: s.concurrency,
            reserved_slots: if s.reserves() {
                s.concurrency - s.low_limit
            } else {
                0
            },
            running: s.running.load(Ordering::Relaxed) as u64,
            waiting: s.queue.len() as u64,
            sized_total: c.sized.load(Ordering::Relaxed),
            inline_total: c.inline.load(Ordering::Relaxed),
            queued_total: c.queued.load(Ordering::Relaxed),
            completed_total: c.completed.load(Ordering::Relaxed),
            skipped_total: c.skipped.load(Ordering::Relaxed),
            dropped_total: c.dropped.load(Ordering::Relaxed),
            wait_micros_total: c.wait_micros.load(Ordering::Relaxed),
        }
    }
}

impl Drop for ReadStage {
    fn drop(&mut self) {
        *self.shared.stopping.lock() = true;
        self.shared.wake.notify_all();
    }
}

impl Shared {
    fn now_micros(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// Whether a read of size class `sized` that waited `waited` would be answered past
    /// the timeout (its class's recent service time, at most half the timeout, added).
    fn too_late(&self, sized: usize, waited: u64) -> bool {
        if self.expire_micros == 0 {
            return false;
        }
        let service = self
            .service
            .get(sized)
            .map_or(0, |a| a.load(Ordering::Relaxed))
            .min(self.expire_micros / 2);
        waited.saturating_add(service) > self.expire_micros
    }

    /// Folds a read of size class `sized` that started at `started` into its class's
    /// moving average (weight 1/8); without a timeout nothing reads the averages.
    fn served(&self, sized: usize, started: u64) {
        if self.expire_micros == 0 {
            return;
        }
        let took = self.now_micros().saturating_sub(started);
        if let Some(avg) = self.service.get(sized) {
            let _ = avg.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == 0 {
                    took.max(1)
                } else {
                    old - old / 8 + took / 8
                })
            });
        }
    }

    /// Whether slots are reserved to first-priority reads.
    fn reserves(&self) -> bool {
        self.low_limit != usize::MAX
    }

    /// Counts a lower-priority read into its share of the slots, if it fits (always true
    /// for a first-priority read, or when no slot is reserved).
    fn try_take_low(&self, low: bool) -> bool {
        if !low || !self.reserves() {
            return true;
        }
        let taken = take_below(&self.low_running, self.low_limit);
        if !taken {
            // The slot taken with it goes back, without a wake-up: the read queues.
            self.running.fetch_sub(1, Ordering::AcqRel);
        }
        taken
    }

    fn release_low(&self, low: bool) {
        if low && self.reserves() {
            self.low_running.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Whether a waiting read could take a free slot now: any, when no slot is reserved;
    /// else a first-priority one, or a lower one while their share is not all taken.
    fn servable(&self) -> bool {
        if !self.reserves() {
            return !self.queue.is_empty();
        }
        self.high_waiting.load(Ordering::Acquire) > 0
            || (!self.queue.is_empty() && self.low_running.load(Ordering::Acquire) < self.low_limit)
    }

    /// The next read for a worker holding a slot: the policy's pick, or only a
    /// first-priority read while lower ones hold their whole share. The returned read is
    /// counted in its share.
    fn next(&self) -> Option<Queued> {
        let now = self.now_micros();
        if !self.reserves() {
            return self.queue.pop(now);
        }
        let low_fits = take_below(&self.low_running, self.low_limit);
        let item = if low_fits {
            self.queue.pop(now)
        } else {
            self.queue.pop_first_priority(now)
        };
        if low_fits && !item.as_ref().is_some_and(|q| q.low) {
            self.low_running.fetch_sub(1, Ordering::AcqRel);
        }
        if item.as_ref().is_some_and(|q| !q.low) {
            self.high_waiting.fetch_sub(1, Ordering::AcqRel);
        }
        item
    }

    fn try_take_slot(&self) -> bool {
        take_below(&self.running, self.concurrency)
    }

    fn release_slot(&self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
        if !self.queue.is_empty() {
            self.notify();
        }
    }

    /// Wakes a worker. Taking the lock orders this after a parking worker's last look at
    /// the queue, so no wake-up is lost.
    fn notify(&self) {
        let _guard = self.stopping.lock();
        self.wake.notify_one();
    }

    /// A worker: waits for a read and a free slot, runs the read the policy picks.
    fn work(&self) {
        loop {
            {
                let mut stopping = self.stopping.lock();
                loop {
                    if self.servable() && self.try_take_slot() {
                        break;
                    }
                    if *stopping && self.queue.is_empty() {
                        return;
                    }
                    self.wake.wait(&mut stopping);
                }
            }
            if let Some(Queued { job, low }) = self.next() {
                if std::panic::catch_unwind(AssertUnwindSafe(job)).is_err() {
                    tracing::error!(target: "mosaic::storage", "a read panicked in the engine");
                }
                self.release_low(low);
            }
            // Wakes a worker for the next waiting read, if any.
            self.release_slot();
        }
    }
}

/// Counts one more in `counter` if it is below `limit`; whether it did.
fn take_below(counter: &AtomicUsize, limit: usize) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
            (r < limit).then_some(r + 1)
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_cluster::local_queue::QueuePolicy;
    use std::sync::mpsc;
    use std::time::Duration;

    fn config(policy: QueuePolicy) -> QueueConfig {
        QueueConfig {
            policy,
            ..QueueConfig::default()
        }
    }

    fn class(priority: u8) -> ReadClass {
        ReadClass {
            priority,
            size: None,
        }
    }

    /// Starts a read that holds the stage's only slot until the sender is used.
    async fn hold_the_slot(
        stage: &Arc<ReadStage>,
    ) -> (
        mpsc::Sender<()>,
        tokio::task::JoinHandle<Result<bool, StageError>>,
    ) {
        let (open, gate) = mpsc::channel::<()>();
        let blocker = {
            let stage = stage.clone();
            tokio::spawn(async move { stage.run(class(0), move || gate.recv().is_ok()).await })
        };
        while stage.snapshot().running == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        (open, blocker)
    }

    /// Queues a read (behind a held slot) that counts its runs in `ran`; returns once it
    /// waits.
    async fn queue_counted_read(
        stage: &Arc<ReadStage>,
        ran: &Arc<AtomicUsize>,
    ) -> tokio::task::JoinHandle<Result<usize, StageError>> {
        let waiting = stage.snapshot().waiting;
        let read = {
            let (stage, ran) = (stage.clone(), ran.clone());
            tokio::spawn(async move {
                stage
                    .run(class(0), move || ran.fetch_add(1, Ordering::SeqCst))
                    .await
            })
        };
        while stage.snapshot().waiting == waiting {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        read
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn never_more_reads_at_once_than_the_concurrency() {
        for inline in [false, true] {
            let stage = Arc::new(ReadStage::new(2, &config(QueuePolicy::Fcfs), inline, None));
            let now = Arc::new(AtomicUsize::new(0));
            let most = Arc::new(AtomicUsize::new(0));
            let reads: Vec<_> = (0..40)
                .map(|i| {
                    let (stage, now, most) = (stage.clone(), now.clone(), most.clone());
                    tokio::spawn(async move {
                        stage
                            .run(class(0), move || {
                                let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                                most.fetch_max(n, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(2));
                                now.fetch_sub(1, Ordering::SeqCst);
                                i
                            })
                            .await
                            .unwrap()
                    })
                })
                .collect();
            let mut got = Vec::new();
            for r in reads {
                got.push(r.await.unwrap());
            }
            assert_eq!(got, (0..40).collect::<Vec<_>>());
            assert!(most.load(Ordering::SeqCst) <= 2, "inline {inline}");
            let snap = stage.snapshot();
            assert_eq!(snap.inline_total + snap.completed_total, 40);
            assert_eq!(snap.waiting, 0);
            // A worker frees its slot just after handing over its answer.
            for _ in 0..1000 {
                if stage.snapshot().running == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            assert_eq!(stage.snapshot().running, 0);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn reserved_slots_stay_free_for_first_priority_reads() {
        for (policy, inline) in [
            (QueuePolicy::RandomMultiLevel, false),
            (QueuePolicy::RandomMultiLevel, true),
            (QueuePolicy::Priority, false),
        ] {
            // Three slots, one reserved: lower-priority reads hold at most two.
            let stage = Arc::new(ReadStage::new(
                3,
                &QueueConfig {
                    policy,
                    reserved_slots: 1,
                    ..QueueConfig::default()
                },
                inline,
                None,
            ));
            let now = Arc::new(AtomicUsize::new(0));
            let most = Arc::new(AtomicUsize::new(0));
            let (open, gate) = mpsc::channel::<()>();
            let gate = Arc::new(Mutex::new(gate));
            // Four large reads blocked on the gate: two run, two wait.
            let large: Vec<_> = (0..4)
                .map(|_| {
                    let (st, now, most, gate) =
                        (stage.clone(), now.clone(), most.clone(), gate.clone());
                    tokio::spawn(async move {
                        st.run(class(1), move || {
                            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(n, Ordering::SeqCst);
                            let _ = gate.lock().recv();
                            now.fetch_sub(1, Ordering::SeqCst);
                        })
                        .await
                    })
                })
                .collect();
            while stage.snapshot().running < 2 || stage.snapshot().waiting < 2 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(stage.snapshot().running, 2, "{policy}, inline {inline}");
            // Small reads still run, one after another, in the reserved slot.
            for i in 0..20 {
                let out =
                    tokio::time::timeout(Duration::from_secs(5), stage.run(class(0), move || i))
                        .await;
                assert_eq!(out, Ok(Ok(i)), "{policy}, inline {inline}");
            }
            assert_eq!(stage.snapshot().waiting, 2);
            for _ in 0..4 {
                open.send(()).unwrap();
            }
            for r in large {
                assert_eq!(r.await.unwrap(), Ok(()));
            }
            assert_eq!(most.load(Ordering::SeqCst), 2, "{policy}, inline {inline}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiting_reads_are_served_in_the_policys_order() {
        // One slot, held by a read blocked on a gate: the reads queued behind it come out
        // in priority order.
        let stage = Arc::new(ReadStage::new(
            1,
            &config(QueuePolicy::Priority),
            false,
            None,
        ));
        let (open, blocker) = hold_the_slot(&stage).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for p in [3u8, 1, 2, 0] {
            let (st, order) = (stage.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                st.run(class(p), move || order.lock().push(p)).await
            }));
            while stage.snapshot().waiting < waiting.len() as u64 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        assert_eq!(stage.queue_length(), 5);
        open.send(()).unwrap();
        assert!(blocker.await.unwrap().unwrap());
        for w in waiting {
            w.await.unwrap().unwrap();
        }
        assert_eq!(*order.lock(), [0, 1, 2, 3]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_read_is_skipped_and_a_panicking_one_is_an_error() {
        let stage = Arc::new(ReadStage::new(1, &config(QueuePolicy::Fcfs), false, None));
        let (open, blocker) = hold_the_slot(&stage).await;
        let ran = Arc::new(AtomicUsize::new(0));
        let abandoned = queue_counted_read(&stage, &ran).await;
        abandoned.abort();
        let _ = abandoned.await;
        open.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        let panicked = stage.run(class(0), || panic!("engine bug")).await;
        assert!(panicked.is_err());
        // The worker survived the panic and serves on.
        assert_eq!(stage.run(class(0), || 7).await.unwrap(), 7);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(stage.snapshot().skipped_total, 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_that_waited_past_the_timeout_is_dropped_and_the_next_served() {
        let stage = Arc::new(ReadStage::new(
            1,
            &config(QueuePolicy::Fcfs),
            false,
            Some(Duration::from_millis(50)),
        ));
        let (open, blocker) = hold_the_slot(&stage).await;
        let ran = Arc::new(AtomicUsize::new(0));
        let late = queue_counted_read(&stage, &ran).await;
        // The slot stays taken past the timeout: the waiting read expires.
        tokio::time::sleep(Duration::from_millis(120)).await;
        open.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        assert_eq!(late.await.unwrap(), Err(StageError::Expired));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        // A read that waits less than the timeout runs.
        assert_eq!(stage.run(class(0), || 7).await, Ok(7));
        let snap = stage.snapshot();
        assert_eq!((snap.dropped_total, snap.skipped_total), (1, 0));
    }

    /// A read is dropped once its wait plus the recent service time of reads of its size
    /// class would pass the timeout, while a read of a class served quickly that waited
    /// as long still runs, and so does a read of the slow class that did not wait.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_that_would_finish_past_the_timeout_is_dropped() {
        let stage = Arc::new(ReadStage::new(
            1,
            &config(QueuePolicy::Fcfs),
            true,
            Some(Duration::from_millis(1000)),
        ));
        let large = ReadClass {
            priority: 0,
            size: Some(1 << 20),
        };
        let small = ReadClass {
            priority: 0,
            size: Some(1 << 10),
        };
        // One large read took 400 ms (inline: the stage was idle).
        let slow = || std::thread::sleep(Duration::from_millis(400));
        stage.run(large, slow).await.unwrap();
        let (open, blocker) = hold_the_slot(&stage).await;
        let queue = |class: ReadClass| {
            let st = stage.clone();
            tokio::spawn(async move { st.run(class, || 1).await })
        };
        let late_large = queue(large);
        let late_small = queue(small);
        while stage.snapshot().waiting < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
        open.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        assert_eq!(late_large.await.unwrap(), Err(StageError::Expired));
        assert_eq!(late_small.await.unwrap(), Ok(1));
        assert_eq!(stage.run(large, || 2).await, Ok(2));
        assert_eq!(stage.snapshot().dropped_total, 1);
    }
}
