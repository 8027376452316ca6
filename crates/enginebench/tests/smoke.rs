//! Every phase on a small data set, with memtables and levels small enough that flushes and
//! compactions happen; every read must find exactly what was written.

use mosaic_enginebench::{parse_phases, report, Config, EngineConfig, PhaseKind, DEFAULT_PHASES};

fn small_config(dir: &std::path::Path, engine: &str) -> Config {
    Config {
        engines: vec![engine.to_owned()],
        keys: 2_000,
        reads: 1_000,
        seeks: 100,
        scan_len: 50,
        threads: 2,
        phases: parse_phases(DEFAULT_PHASES).expect("default phases parse"),
        dir: dir.to_owned(),
        progress: false,
        engine: EngineConfig {
            memtable_bytes: 64 << 10,
            cache_bytes: 256 << 10,
            level1_bytes: 256 << 10,
            table_bytes: 64 << 10,
            ..EngineConfig::default()
        },
        ..Config::default()
    }
}

fn check(engine: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = small_config(dir.path(), engine);
    let report = mosaic_enginebench::run(&config).expect("benchmark runs");
    assert!(
        report.verification_errors().is_empty(),
        "{:?}",
        report.verification_errors()
    );
    assert_eq!(report.runs.len(), 1);
    let run = &report.runs[0];
    assert_eq!(run.phases.len(), 6);
    let user_bytes = 2_000 * (24 + 1000);
    for p in &run.phases {
        assert_eq!((p.missing, p.mismatched), (0, 0), "{}", p.label);
        assert!(p.ops > 0 && p.ops_per_sec() > 0.0, "{}", p.label);
        let l = p.latency;
        assert!(
            l.p50 > 0 && l.p50 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max,
            "{l:?}"
        );
        match p.kind {
            PhaseKind::FillRandom | PhaseKind::Overwrite => {
                assert_eq!(p.ops, 2_000);
                assert_eq!(p.user_bytes_written, user_bytes);
                // RocksDB also counts its write-batch framing (~16 bytes per put).
                let engine_user = p.counters.user_bytes_written;
                assert!(
                    engine_user >= user_bytes && engine_user <= user_bytes + 2_000 * 32,
                    "{}: {engine_user}",
                    p.label
                );
                // The WAL holds every write, and the drain flushed the memtable.
                assert!(p.counters.wal_bytes >= user_bytes, "{}", p.label);
                assert!(p.counters.flush_bytes > 0, "{}", p.label);
                assert!(p.engine_write_amp() >= 2.0, "{}", p.label);
            }
            PhaseKind::ReadRandom => {
                assert_eq!(p.entries_read, 1_000, "every lookup found its key");
                assert_eq!(p.user_bytes_read, 1_000 * 1024);
            }
            PhaseKind::ReadSeq => {
                assert_eq!(p.entries_read, 2_000, "the scan saw every key once");
            }
            PhaseKind::SeekRandom => {
                assert_eq!(p.ops, 100);
                assert!(p.entries_read > 100 && p.entries_read <= 100 * 50);
            }
        }
    }
    let text = report::text(&report);
    assert!(
        text.contains("fillrandom") && text.contains("readrandom#2"),
        "{text}"
    );
    let json = report::json(&report);
    assert!(json.starts_with('{') && json.trim_end().ends_with('}'));
    assert!(json.contains(&format!("\"engine\":\"{engine}\"")));
}

#[test]
fn mosaic_runs_every_phase_and_reads_back_what_it_wrote() {
    check("mosaic");
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_runs_every_phase_and_reads_back_what_it_wrote() {
    check("rocksdb");
}

#[test]
fn phases_must_start_with_fillrandom() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = small_config(dir.path(), "mosaic");
    config.phases = parse_phases("readrandom").expect("parses");
    assert!(mosaic_enginebench::run(&config).is_err());
}
