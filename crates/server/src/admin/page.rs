//! The status page (`GET /`) and the totals it turns into live rates (`GET /activity`).
//!
//! The page is one self-contained HTML document (`status.html`: inline CSS and script, no
//! external assets), compiled into the binary. In the browser it polls this node's
//! `/activity`, `/status` and `/stats` every 1.5 s, one request at a time, and redraws: the
//! ring by datacenter and rack with each node's state as `nodetool status` shows it, the
//! reads and writes per second this node coordinated with their p50 and p99 over the last
//! interval (from the change of the latency histogram's buckets), repair's streaming and any
//! `streams` `/status` carries, and per table its layout and storage per structure.
//!
//! Its fetches are plain GETs to its own origin, which the [`super::guard`] admits; it has
//! no controls that change state. It is served with a Content-Security-Policy that allows
//! no origin but its own (`connect-src 'self'`) and no framing. Every value it shows is
//! inserted as text, never as markup: keyspace, table, datacenter and rack names are
//! user data.
//!
//! `/activity` reads the request series from the Prometheus recorder's rendering, the one
//! place they are kept (they are recorded where requests run, `crate::cluster`), so the
//! page needs no Prometheus parser of its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::api::{Activity, LatencyBucket, RequestActivity};
use super::Admin;

/// The page, as served.
const STATUS_HTML: &str = include_str!("status.html");

/// What the page may load and who may frame it: only its own origin's JSON, nothing else.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// `GET /`: the status page.
pub async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        STATUS_HTML,
    )
        .into_response()
}

/// `GET /activity`: request totals and latency buckets by operation, and repair's totals.
pub async fn activity(State(admin): State<Arc<Admin>>) -> Json<Activity> {
    let counters = admin.cluster.node().counters();
    Json(Activity {
        requests: admin
            .metrics
            .as_ref()
            .map(|handle| request_activity(&handle.render())),
        repair_ranges_total: counters.repair_ranges,
        repair_entries_streamed_total: counters.repair_entries,
    })
}

/// The operations always listed, requests or not, so the page shows a row for each.
const OPS: [&str; 2] = ["read", "write"];

/// Sums `mosaic_requests_total` and `mosaic_request_seconds` of a Prometheus text rendering
/// over consistency levels (and outcomes), by operation. Lines of other series, and lines
/// that do not parse, are skipped.
pub fn request_activity(text: &str) -> Vec<RequestActivity> {
    let mut ops: BTreeMap<String, RequestActivity> = OPS
        .iter()
        .map(|op| {
            let activity = RequestActivity {
                op: (*op).to_owned(),
                ..RequestActivity::default()
            };
            ((*op).to_owned(), activity)
        })
        .collect();
    // Cumulative counts by operation and bound (its text, as `le` carries it).
    let mut buckets: BTreeMap<(String, String), (f64, u64)> = BTreeMap::new();
    for line in text.lines() {
        let Some(Sample {
            name,
            labels,
            value,
        }) = sample(line)
        else {
            continue;
        };
        let label = |key: &str| labels.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let Some(op) = label("op") else {
            continue;
        };
        let entry = || RequestActivity {
            op: op.to_owned(),
            ..RequestActivity::default()
        };
        match name {
            "mosaic_requests_total" => {
                let a = ops.entry(op.to_owned()).or_insert_with(entry);
                a.total += value;
                if label("outcome").is_some_and(|o| o != "ok") {
                    a.failed_total += value;
                }
            }
            "mosaic_request_seconds_count" => {
                ops.entry(op.to_owned()).or_insert_with(entry).latency_count += value;
            }
            "mosaic_request_seconds_bucket" => {
                let Some(le) = label("le") else { continue };
                // `+Inf` is the count again; only finite bounds are buckets.
                let Some(bound) = le.parse::<f64>().ok().filter(|b| b.is_finite()) else {
                    continue;
                };
                let slot = buckets
                    .entry((op.to_owned(), le.to_owned()))
                    .or_insert((bound, 0));
                slot.1 += value;
            }
            _ => {}
        }
    }
    for ((op, _), (bound, count)) in buckets {
        let a = ops.entry(op.clone()).or_insert_with(|| RequestActivity {
            op,
            ..RequestActivity::default()
        });
        a.latency_buckets.push(LatencyBucket {
            le_seconds: bound,
            count,
        });
    }
    let mut out: Vec<RequestActivity> = ops.into_values().collect();
    for a in &mut out {
        a.latency_buckets
            .sort_by(|x, y| x.le_seconds.total_cmp(&y.le_seconds));
    }
    out
}

/// One sample line of a request series: its name, labels and value. Only the request
/// series are parsed (their label values are fixed words, never user data), so a label
/// value with a comma or quote elsewhere in the rendering cannot confuse this.
fn sample(line: &str) -> Option<Sample<'_>> {
    let (name, rest) = line.split_once('{')?;
    if !matches!(
        name,
        "mosaic_requests_total" | "mosaic_request_seconds_count" | "mosaic_request_seconds_bucket"
    ) {
        return None;
    }
    let (labels, value) = rest.rsplit_once("} ")?;
    let value = value.trim().parse::<f64>().ok()?;
    // Counts are integers; anything else is not a sample of these series.
    if !(value >= 0.0 && value.fract() == 0.0 && value < u64::MAX as f64) {
        return None;
    }
    let labels = labels
        .split(',')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=')?;
            Some((key, value.strip_prefix('"')?.strip_suffix('"')?))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Sample {
        name,
        labels,
        value: value as u64,
    })
}

/// A sample line of a request series.
struct Sample<'a> {
    name: &'a str,
    labels: Vec<(&'a str, &'a str)>,
    value: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_series_are_summed_over_levels_and_outcomes_by_operation() {
        let text = "\
# TYPE mosaic_requests_total counter
mosaic_requests_total{op=\"read\",cl=\"ONE\",outcome=\"ok\"} 7
mosaic_requests_total{op=\"read\",cl=\"QUORUM\",outcome=\"ok\"} 3
mosaic_requests_total{op=\"read\",cl=\"QUORUM\",outcome=\"timeout\"} 2
mosaic_table_gets_total{table=\"ks.a,b\\\"} 9\",layout=\"uniform\"} 5
# TYPE mosaic_request_seconds histogram
mosaic_request_seconds_bucket{op=\"read\",cl=\"ONE\",le=\"0.001\"} 6
mosaic_request_seconds_bucket{op=\"read\",cl=\"ONE\",le=\"0.0001\"} 1
mosaic_request_seconds_bucket{op=\"read\",cl=\"ONE\",le=\"+Inf\"} 7
mosaic_request_seconds_bucket{op=\"read\",cl=\"QUORUM\",le=\"0.001\"} 4
mosaic_request_seconds_bucket{op=\"read\",cl=\"QUORUM\",le=\"0.0001\"} 0
mosaic_request_seconds_sum{op=\"read\",cl=\"ONE\"} 0.004
mosaic_request_seconds_count{op=\"read\",cl=\"ONE\"} 7
mosaic_request_seconds_count{op=\"read\",cl=\"QUORUM\"} 5
mosaic_requests_total{op=\"read\",cl=\"ONE\",outcome=\"ok\"} not-a-number
mosaic_requests_total{op=\"read\" 3
";
        let got = request_activity(text);
        assert_eq!(
            got,
            vec![
                RequestActivity {
                    op: "read".to_owned(),
                    total: 12,
                    failed_total: 2,
                    latency_count: 12,
                    latency_buckets: vec![
                        LatencyBucket {
                            le_seconds: 0.0001,
                            count: 1
                        },
                        LatencyBucket {
                            le_seconds: 0.001,
                            count: 10
                        },
                    ],
                },
                RequestActivity {
                    op: "write".to_owned(),
                    ..RequestActivity::default()
                },
            ]
        );
    }

    #[test]
    fn the_page_is_self_contained_and_inserts_data_only_as_text() {
        let lower = STATUS_HTML.to_ascii_lowercase();
        for external in ["http://", "https://", "//cdn", "@import", "url("] {
            assert!(!lower.contains(external), "the page refers to {external:?}");
        }
        for markup_sink in [
            "innerhtml",
            "outerhtml",
            "insertadjacenthtml",
            "document.write",
        ] {
            assert!(!lower.contains(markup_sink), "the page uses {markup_sink}");
        }
        for endpoint in ["\"/status\"", "\"/stats\"", "\"/activity\""] {
            assert!(STATUS_HTML.contains(endpoint), "the page polls {endpoint}");
        }
    }
}
