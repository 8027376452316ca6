//! `/metrics`: the Prometheus recorder and the series mirrored from counters kept
//! elsewhere (engines, hints, repair, membership) at each scrape.
//!
//! Conventions (Prometheus's): monotonic totals are counters named `*_total`; levels
//! (pending hints, memtable bytes, nodes UP) and ratios are gauges; latencies are
//! histograms in seconds (`*_seconds`, the buckets below), never summaries, so they can
//! be aggregated over nodes. Request counts and latencies are recorded where requests
//! run (`crate::cluster`).

use std::collections::BTreeMap;

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};
use mosaic_lsm::CounterSnapshot;
use mosaic_replica::{Structure, StructureStats};

use super::Admin;

/// Bucket bounds of every `*_seconds` histogram: 100 µs to 10 s, about three per decade.
const LATENCY_BUCKETS_SECONDS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Installs the process's metrics recorder: histograms for `*_seconds` with real buckets.
pub fn install_recorder() -> Result<PrometheusHandle, BuildError> {
    PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Suffix("_seconds".to_owned()),
            &LATENCY_BUCKETS_SECONDS,
        )?
        .install_recorder()
}

/// Sets the series that mirror counters kept elsewhere (storage, hints, membership).
pub async fn record(admin: &Admin) {
    let node = admin.cluster.node();
    let c = node.counters();
    metrics::counter!("mosaic_hints_stored_total").absolute(c.hints_stored);
    metrics::counter!("mosaic_hints_replayed_total").absolute(c.hints_replayed);
    metrics::counter!("mosaic_hints_failed_total").absolute(c.hints_failed);
    metrics::gauge!("mosaic_hints_pending").set(admin.hints.count() as f64);
    metrics::gauge!("mosaic_hints_bytes").set(admin.hints.bytes() as f64);
    metrics::counter!("mosaic_hints_dropped_total").absolute(admin.hints.dropped());
    metrics::counter!("mosaic_repair_ranges_total").absolute(c.repair_ranges);
    metrics::counter!("mosaic_repair_entries_streamed_total").absolute(c.repair_entries);
    metrics::counter!("mosaic_speculative_reads_total", "cause" => "slow")
        .absolute(c.speculative_reads);
    metrics::counter!("mosaic_speculative_reads_total", "cause" => "failed")
        .absolute(c.speculative_failovers);
    metrics::counter!("mosaic_ec_rounds_total").absolute(c.ec_rounds);
    metrics::counter!("mosaic_ec_lists_restored_total").absolute(c.ec_lists_restored);
    metrics::gauge!("mosaic_ec_lists_dissolved").set(c.ec_lists_dissolved as f64);
    metrics::counter!("mosaic_ec_groups_released_total").absolute(c.ec_groups_released);
    metrics::gauge!("mosaic_ec_groups_dissolved").set(c.ec_groups_dissolved as f64);
    let selector = node.replica_selector();
    for (decision, n) in selector.decisions() {
        metrics::counter!(
            "mosaic_replica_selection_decisions_total",
            "policy" => selector.name(),
            "decision" => decision
        )
        .absolute(n);
    }
    if let Some(stage) = admin.local.read_stage() {
        let s = stage.snapshot();
        let policy = s.policy.clone();
        metrics::gauge!("mosaic_read_stage_running", "queue" => policy.clone())
            .set(s.running as f64);
        metrics::gauge!("mosaic_read_stage_waiting", "queue" => policy.clone())
            .set(s.waiting as f64);
        metrics::counter!("mosaic_read_stage_reads_total", "queue" => policy.clone(), "path" => "inline")
            .absolute(s.inline_total);
        metrics::counter!("mosaic_read_stage_reads_total", "queue" => policy.clone(), "path" => "queued")
            .absolute(s.queued_total);
        metrics::counter!("mosaic_read_stage_sized_total", "queue" => policy.clone())
            .absolute(s.sized_total);
        metrics::counter!("mosaic_read_stage_skipped_total", "queue" => policy.clone())
            .absolute(s.skipped_total);
        metrics::counter!("mosaic_read_stage_dropped_total", "queue" => policy.clone())
            .absolute(s.dropped_total);
        metrics::counter!("mosaic_read_stage_wait_micros_total", "queue" => policy)
            .absolute(s.wait_micros_total);
    }
    let states = node.states();
    let up = states.iter().filter(|(_, up)| *up).count();
    metrics::gauge!("mosaic_nodes", "state" => "up").set(up as f64);
    metrics::gauge!("mosaic_nodes", "state" => "down").set((states.len() - up) as f64);
    let tables = admin
        .local
        .each_table(|store| {
            Ok((
                store.layout().name(),
                store.structures(),
                store.heterogeneous_stats(),
            ))
        })
        .await;
    let tables: Vec<_> = tables
        .iter()
        .filter_map(|(n, r)| r.as_ref().ok().map(|(l, s, h)| (n, (l, s, h))))
        .collect();
    for (table, (_, _, trees)) in &tables {
        for t in trees.iter() {
            let labels = [
                ("table", table.to_string()),
                ("replica", t.index.to_string()),
            ];
            metrics::counter!("mosaic_hr_reads_total", &labels).absolute(t.reads);
            metrics::counter!("mosaic_hr_rows_scanned_total", &labels).absolute(t.rows_scanned);
        }
    }
    let mut sum = CounterSnapshot::default();
    let mut per_layout: BTreeMap<(&str, String), (CounterSnapshot, u64)> = BTreeMap::new();
    for (table, (layout, structures, _)) in &tables {
        for st in structures.iter() {
            record_structure(table, layout, st);
            sum = sum.plus(&st.counters);
            // Per layout and structure kind (source trees together): the totals the
            // layouts are compared by.
            let kind = match st.structure {
                Structure::Source(_) => "source".to_owned(),
                other => other.name(),
            };
            let (c, mem) = per_layout.entry((layout, kind)).or_default();
            *c = c.plus(&st.counters);
            *mem += st.memtable_bytes as u64;
        }
    }
    for ((layout, kind), (c, mem)) in &per_layout {
        let labels = [("layout", layout.to_string()), ("structure", kind.clone())];
        for (what, v) in counter_fields(c) {
            metrics::counter!(format!("mosaic_layout_{what}"), &labels).absolute(v);
        }
        metrics::gauge!("mosaic_layout_memtable_bytes", &labels).set(*mem as f64);
    }
    record_storage_sum(&sum);
    record_engine(&super::engine_stats(&admin.local));
    for (index, c) in admin.local.index_counters() {
        let labels = [("index", index)];
        metrics::counter!("mosaic_index_reads_total", &labels).absolute(c.reads);
        metrics::counter!("mosaic_index_stale_entries_dropped_total", &labels).absolute(c.swept);
        metrics::gauge!("mosaic_index_mean_rows_per_value", &labels)
            .set(c.mean_rows.unwrap_or(0.0));
    }
}

/// The prepared-statement cache's use and evictions (`[limits]
/// prepared_statements_cache_size_bytes`); recorded at each PREPARE, the only request
/// that changes them.
pub(crate) fn record_prepared_cache(s: mosaic_cql::processor::PreparedCacheStats) {
    for (what, v) in [
        ("bytes", s.bytes),
        ("capacity_bytes", s.capacity_bytes),
        ("entries", s.entries),
    ] {
        metrics::gauge!(format!("mosaic_prepared_statements_cache_{what}")).set(v as f64);
    }
    metrics::counter!("mosaic_prepared_statements_cache_evictions_total").absolute(s.evictions);
}

/// The node engine's budgets and use (gauges).
fn record_engine(e: &super::api::EngineStats) {
    for (what, v) in [
        ("memtable_bytes", e.memtable_bytes as f64),
        ("memtable_space_bytes", e.memtable_space_bytes as f64),
        ("block_cache_bytes", e.block_cache_bytes as f64),
        (
            "block_cache_capacity_bytes",
            e.block_cache_capacity_bytes as f64,
        ),
        ("wal_bytes", e.wal_bytes as f64),
        ("partitions", e.partitions as f64),
    ] {
        metrics::gauge!(format!("mosaic_engine_{what}")).set(v);
    }
    for (what, v) in [
        ("bytes", e.counter_cache_bytes as f64),
        ("capacity_bytes", e.counter_cache_capacity_bytes as f64),
        ("entries", e.counter_cache_entries as f64),
    ] {
        metrics::gauge!(format!("mosaic_counter_cache_{what}")).set(v);
    }
    metrics::counter!("mosaic_counter_cache_requests_total", "result" => "hit")
        .absolute(e.counter_cache_hits);
    metrics::counter!("mosaic_counter_cache_requests_total", "result" => "miss")
        .absolute(e.counter_cache_misses);
}

/// The node's storage counters summed over every table.
fn record_storage_sum(sum: &CounterSnapshot) {
    for (what, v) in [
        ("user_written", sum.user_bytes_written),
        ("wal_written", sum.wal_bytes_written),
        ("flush_written", sum.flush_bytes_written),
        ("ingest_written", sum.ingest_bytes_written),
        ("compaction_written", sum.compaction_bytes_written),
        ("compaction_read", sum.compaction_bytes_read),
        ("split_written", sum.split_bytes_written),
        ("merge_sort_written", sum.merge_sort_bytes_written),
        ("get_read", sum.get_bytes_read),
        ("scan_read", sum.scan_bytes_read),
    ] {
        metrics::counter!("mosaic_storage_bytes_total", "kind" => what).absolute(v);
    }
    metrics::counter!("mosaic_storage_gets_total").absolute(sum.gets);
    for (result, n) in [
        ("hit", sum.block_cache_hits),
        ("miss", sum.block_cache_misses),
    ] {
        metrics::counter!("mosaic_block_cache_requests_total", "result" => result).absolute(n);
    }
    // Read amplification (DEPART's Fig. 11): the blocks gets read from disk, by kind.
    for (block, reads) in [
        ("data", sum.get_data_block_reads),
        ("index", sum.get_index_block_reads),
        ("filter", sum.get_filter_block_reads),
    ] {
        metrics::counter!("mosaic_storage_get_block_reads_total", "block" => block).absolute(reads);
    }
    // The recorder's counters are integers: stall time in microseconds, not seconds.
    for (what, v) in [
        ("write_stalls_total", sum.write_stalls),
        ("write_stall_microseconds_total", sum.write_stall_micros),
        ("write_stall_timeouts_total", sum.write_stall_timeouts),
        ("write_slowdowns_total", sum.write_slowdowns),
        (
            "write_slowdown_microseconds_total",
            sum.write_slowdown_micros,
        ),
    ] {
        metrics::counter!(format!("mosaic_storage_{what}")).absolute(v);
    }
    metrics::gauge!("mosaic_storage_write_amplification").set(sum.write_amplification());
}

/// The counters a structure reports, by metric name (totals since the node started).
fn counter_fields(c: &CounterSnapshot) -> [(&'static str, u64); 18] {
    [
        ("user_bytes_written_total", c.user_bytes_written),
        ("flush_bytes_written_total", c.flush_bytes_written),
        ("compaction_bytes_written_total", c.compaction_bytes_written),
        ("compaction_bytes_read_total", c.compaction_bytes_read),
        ("get_bytes_read_total", c.get_bytes_read),
        ("gets_total", c.gets),
        ("get_tables_probed_total", c.get_tables_probed),
        ("get_data_block_reads_total", c.get_data_block_reads),
        ("get_index_block_reads_total", c.get_index_block_reads),
        ("get_filter_block_reads_total", c.get_filter_block_reads),
        ("get_index_bytes_read_total", c.get_index_bytes_read),
        ("get_filter_bytes_read_total", c.get_filter_bytes_read),
        ("flushes_total", c.flushes),
        ("compactions_total", c.compactions),
        ("split_bytes_written_total", c.split_bytes_written),
        ("merge_sort_bytes_written_total", c.merge_sort_bytes_written),
        ("splits_total", c.splits),
        ("merge_sorts_total", c.merge_sorts),
    ]
}

/// Sets one table structure's series.
fn record_structure(table: &str, layout: &str, st: &StructureStats) {
    let labels = [
        ("table", table.to_owned()),
        ("layout", layout.to_owned()),
        ("structure", st.structure.name()),
    ];
    for (what, v) in counter_fields(&st.counters) {
        metrics::counter!(format!("mosaic_table_{what}"), &labels).absolute(v);
    }
    metrics::gauge!("mosaic_table_memtable_bytes", &labels).set(st.memtable_bytes as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_counters_and_latencies_are_histograms() {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Suffix("_seconds".to_owned()),
                &LATENCY_BUCKETS_SECONDS,
            )
            .unwrap()
            .build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metrics::counter!("mosaic_requests_total", "op" => "read").increment(2);
            metrics::histogram!("mosaic_request_seconds", "op" => "read").record(0.003);
            record_storage_sum(&CounterSnapshot::default());
            record_engine(&crate::admin::api::EngineStats {
                memtable_space_bytes: 1 << 20,
                ..Default::default()
            });
        });
        let text = handle.render();
        assert!(
            text.contains("# TYPE mosaic_requests_total counter"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE mosaic_request_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains("mosaic_request_seconds_bucket{op=\"read\",le=\"0.005\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE mosaic_storage_bytes_total counter"),
            "{text}"
        );
        assert!(
            text.contains("mosaic_block_cache_requests_total{result=\"miss\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE mosaic_storage_write_amplification gauge"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE mosaic_engine_memtable_space_bytes gauge")
                && text.contains("mosaic_engine_memtable_space_bytes 1048576"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE mosaic_storage_write_stall_timeouts_total counter"),
            "{text}"
        );
        // Every counter's name ends in `_total`.
        for line in text.lines().filter(|l| l.ends_with(" counter")) {
            assert!(
                line.trim_end_matches(" counter").ends_with("_total"),
                "{line}"
            );
        }
    }
}
