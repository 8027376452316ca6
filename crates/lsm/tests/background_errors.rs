#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.
//! Scenario: a background flush fails — first because the disk is full, then because an
//! fsync fails. The compaction listener hears of each failure once (not once per retry),
//! with the engine's directory and the job, so an operator's log shows it when it happens
//! rather than at the next write.

mod common;
use common::scratch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use mosaic_lsm::{
    CompactionEvent, CompactionListener, Db, Error, Faults, FaultyFs, Options, RealFs, SyncMode,
};

#[derive(Default)]
struct Heard(Mutex<Vec<(PathBuf, String, bool)>>);

impl CompactionListener for Heard {
    fn on_compaction(&self, _event: &CompactionEvent) {}

    fn on_background_error(&self, dir: &std::path::Path, job: &str, error: &Error) {
        self.0
            .lock()
            .push((dir.to_path_buf(), job.to_owned(), error.is_no_space()));
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_failed_background_flush_is_reported_once_per_failure() {
    let dir = scratch();
    let faults = Arc::new(Faults::default());
    let heard = Arc::new(Heard::default());
    let db = Db::open(
        dir.path(),
        Options {
            fs: Arc::new(FaultyFs::new(Arc::new(RealFs), faults.clone())),
            sync_mode: SyncMode::Batch,
            memtable_size_bytes: 64 << 10,
            compaction_listener: Some(heard.clone() as Arc<dyn CompactionListener>),
            ..Options::default()
        },
    )
    .unwrap();
    for i in 0u32..100 {
        db.put(&i.to_be_bytes(), 1, &[7u8; 100]).unwrap();
    }

    // A full disk: the flush fails and retries until space returns; one report.
    // Room for the new WAL, not for the table the flush writes.
    faults.set_space_bytes(2048);
    let flush = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    wait_for("the no-space report", || !heard.0.lock().is_empty());
    std::thread::sleep(Duration::from_millis(300)); // several retries happen meanwhile
    {
        let heard = heard.0.lock();
        assert_eq!(
            heard.len(),
            1,
            "one report per failure, not per retry: {heard:?}"
        );
        let (reported_dir, job, no_space) = &heard[0];
        assert_eq!(reported_dir, dir.path());
        assert_eq!(job, "flush");
        assert!(*no_space);
    }
    faults.unlimited_space();
    let _ = flush.join().unwrap();

    // A failed fsync poisons the engine: reported once more, as another kind of failure.
    for i in 100u32..200 {
        let _ = db.put(&i.to_be_bytes(), 1, &[7u8; 100]);
    }
    faults.set_fail_sync(true);
    let _ = db.flush();
    wait_for("the poisoning report", || heard.0.lock().len() >= 2);
    let heard = heard.0.lock();
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert!(!heard[1].2, "the second failure is not a full disk");
}
