//! Secondary indexes on real node storage (issue 15, "How it is checked"): random
//! sequences of writes — inserts, updates, set additions and removals, row, range and
//! partition deletions, writes with old timestamps that lose to newer ones — interleaved
//! with flushes, compactions and restarts, after which every query through an index must
//! return exactly what the same query returns by filtering a twin table without an index
//! that took the same writes, in every layout. A read through the index must also read
//! less than the whole table (it is used, not bypassed).
//!
//! Indexed queries are also read in small pages, which end inside partitions: an index on a
//! static column or a partition key component returns whole partitions, and a page must
//! resume in the middle of one.
//!
//! `PROPTEST_CASES` sets the number of cases (default 24).

use std::cell::RefCell;

use mosaic_cql::frame::{ProtocolVersion, Query, QueryParameters, Request, Response, ResultBody};
use mosaic_cql::index::IndexQuery;
use mosaic_cql::processor::{Processor, Session};
use mosaic_types::CqlValue;
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};

use super::indexes::IndexCounters;
use super::*;

/// The layouts every statement runs against: an indexed and a plain table each.
const LAYOUTS: [&str; 5] = [
    "uniform",
    "multi-lsm",
    "decoupled",
    "heterogeneous",
    "erasure-tiered",
];
/// A table's primary key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `PRIMARY KEY (k, c)`, with a static column `st`.
    Clustered,
    /// `PRIMARY KEY ((k, c))`.
    Unclustered,
    /// `PRIMARY KEY ((k, p), c)` with `p = k % 2`, with a static column `st`.
    Composite,
}

impl Shape {
    /// The relations naming the partition of `k`.
    fn partition(self, k: i32) -> String {
        match self {
            Shape::Composite => format!("k = {k} AND p = {}", k % 2),
            _ => format!("k = {k}"),
        }
    }
}

/// The tables of each layout: an indexed one and a plain twin of each shape.
const TWINS: [(&str, Shape); 6] = [
    ("idx", Shape::Clustered),
    ("plain", Shape::Clustered),
    ("uidx", Shape::Unclustered),
    ("uplain", Shape::Unclustered),
    ("pidx", Shape::Composite),
    ("pplain", Shape::Composite),
];
/// Values of `v` and elements of `s`: few, so queries match several rows.
const VALUES: i32 = 4;

#[derive(Clone, Debug)]
enum Op {
    Insert {
        k: i32,
        c: i32,
        v: Option<i32>,
        s: Vec<i32>,
        ts: Option<i64>,
    },
    SetV {
        k: i32,
        c: i32,
        v: Option<i32>,
        ts: Option<i64>,
    },
    AddS {
        k: i32,
        c: i32,
        x: i32,
    },
    RemoveS {
        k: i32,
        c: i32,
        x: i32,
    },
    DeleteRow {
        k: i32,
        c: i32,
    },
    DeleteFrom {
        k: i32,
        c: i32,
    },
    DeletePartition {
        k: i32,
    },
    SetStatic {
        k: i32,
        st: Option<i32>,
        ts: Option<i64>,
    },
    PutM {
        k: i32,
        c: i32,
        x: i32,
        y: i32,
    },
    DeleteM {
        k: i32,
        c: i32,
        x: i32,
    },
    Flush,
    Compact,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..6i32;
    let c = 0..3i32;
    let v = proptest::option::weighted(0.85, 0..VALUES);
    // Old timestamps lose to every write without one (statement time).
    let ts = proptest::option::weighted(0.2, 1..1_000i64);
    prop_oneof![
        6 => (k.clone(), c.clone(), v.clone(), proptest::collection::vec(0..VALUES, 0..3), ts.clone())
            .prop_map(|(k, c, v, s, ts)| Op::Insert { k, c, v, s, ts }),
        4 => (k.clone(), c.clone(), v, ts.clone()).prop_map(|(k, c, v, ts)| Op::SetV { k, c, v, ts }),
        2 => (k.clone(), c.clone(), 0..VALUES).prop_map(|(k, c, x)| Op::AddS { k, c, x }),
        2 => (k.clone(), c.clone(), 0..VALUES).prop_map(|(k, c, x)| Op::RemoveS { k, c, x }),
        2 => (k.clone(), c.clone()).prop_map(|(k, c)| Op::DeleteRow { k, c }),
        1 => (k.clone(), c.clone()).prop_map(|(k, c)| Op::DeleteFrom { k, c }),
        1 => k.clone().prop_map(|k| Op::DeletePartition { k }),
        2 => (k.clone(), proptest::option::weighted(0.85, 0..VALUES), ts.clone())
            .prop_map(|(k, st, ts)| Op::SetStatic { k, st, ts }),
        2 => (k.clone(), c.clone(), 0..VALUES, 0..VALUES).prop_map(|(k, c, x, y)| Op::PutM { k, c, x, y }),
        1 => (k.clone(), c.clone(), 0..VALUES).prop_map(|(k, c, x)| Op::DeleteM { k, c, x }),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Restart),
    ]
}

impl Op {
    /// The statement on `table` of `shape`, if the op is one.
    fn cql(&self, table: &str, shape: Shape) -> Option<String> {
        let using =
            |ts: &Option<i64>| ts.map_or(String::new(), |t| format!(" USING TIMESTAMP {t}"));
        let value = |v: &Option<i32>| v.map_or("null".to_owned(), |v| v.to_string());
        let row = |k: &i32, c: &i32| format!("{} AND c = {c}", shape.partition(*k));
        let unclustered = shape == Shape::Unclustered;
        Some(match self {
            Op::Insert { k, c, v, s, ts } => {
                let set: Vec<String> = s.iter().map(i32::to_string).collect();
                let (p_column, p_value) = match shape {
                    Shape::Composite => (", p", format!(", {}", k % 2)),
                    _ => ("", String::new()),
                };
                format!(
                    "INSERT INTO ks.{table} (k, c, v, s{p_column}) VALUES ({k}, {c}, {}, {{{}}}{p_value}){}",
                    value(v),
                    set.join(", "),
                    using(ts)
                )
            }
            Op::SetV { k, c, v, ts } => format!(
                "UPDATE ks.{table}{} SET v = {} WHERE {}",
                using(ts),
                value(v),
                row(k, c)
            ),
            Op::AddS { k, c, x } => {
                format!("UPDATE ks.{table} SET s = s + {{{x}}} WHERE {}", row(k, c))
            }
            Op::RemoveS { k, c, x } => {
                format!("UPDATE ks.{table} SET s = s - {{{x}}} WHERE {}", row(k, c))
            }
            Op::PutM { k, c, x, y } => {
                format!("UPDATE ks.{table} SET m[{x}] = {y} WHERE {}", row(k, c))
            }
            Op::DeleteM { k, c, x } => format!("DELETE m[{x}] FROM ks.{table} WHERE {}", row(k, c)),
            Op::DeleteRow { k, c } => format!("DELETE FROM ks.{table} WHERE {}", row(k, c)),
            Op::DeleteFrom { .. } if unclustered => return None,
            Op::DeleteFrom { k, c } => {
                format!(
                    "DELETE FROM ks.{table} WHERE {} AND c >= {c}",
                    shape.partition(*k)
                )
            }
            Op::DeletePartition { k } if unclustered => {
                format!("DELETE FROM ks.{table} WHERE k = {k} AND c IN (0, 1, 2)")
            }
            Op::DeletePartition { k } => {
                format!("DELETE FROM ks.{table} WHERE {}", shape.partition(*k))
            }
            Op::SetStatic { .. } if unclustered => return None,
            Op::SetStatic { k, st, ts } => format!(
                "UPDATE ks.{table}{} SET st = {} WHERE {}",
                using(ts),
                value(st),
                shape.partition(*k)
            ),
            Op::Flush | Op::Compact | Op::Restart => return None,
        })
    }
}

fn config(dir: &Path) -> Config {
    let mut c = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    c.storage.memtable_size_bytes = 1 << 16;
    c.storage.block_cache_size_bytes = 1 << 20;
    c
}

struct Harness {
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    config: Config,
    node: Option<Arc<LocalCoordinator>>,
    session: Session,
}

async fn run(
    p: &Processor<LocalCoordinator>,
    s: &mut Session,
    cql: &str,
    consistency: Consistency,
) -> Response {
    p.process(
        s,
        Request::Query(Query {
            query: cql.to_owned(),
            params: QueryParameters::new(consistency),
        }),
    )
    .await
}

/// The rows of a SELECT, sorted.
fn sorted_rows(cql: &str, response: Response) -> Result<Vec<Vec<Option<Vec<u8>>>>, TestCaseError> {
    let Response::Result(ResultBody::Rows(rows)) = response else {
        return Err(TestCaseError::fail(format!("{cql}: {response:?}")));
    };
    let mut out: Vec<Vec<Option<Vec<u8>>>> = rows
        .rows
        .iter()
        .map(|r| r.iter().map(|c| c.as_ref().map(|b| b.to_vec())).collect())
        .collect();
    out.sort();
    Ok(out)
}

impl Harness {
    fn new() -> Harness {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let dir = tempfile::tempdir().expect("temp dir");
        let config = config(dir.path());
        let node = Arc::new(LocalCoordinator::open(&config).expect("open node"));
        let mut h = Harness {
            rt,
            _dir: dir,
            config,
            node: Some(node),
            session: Session::new(ProtocolVersion::V4),
        };
        let mut ddl = vec!["CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}".to_owned()];
        for layout in LAYOUTS {
            let t = layout.replace('-', "_");
            for (twin, shape) in TWINS {
                // A heterogeneous table needs clustering columns: its unclustered twins
                // are uniform.
                let layout = if shape == Shape::Unclustered && layout == "heterogeneous" {
                    "uniform"
                } else {
                    layout
                };
                let (more, key) = match shape {
                    Shape::Clustered => ("st int static, ", "(k, c)"),
                    Shape::Unclustered => ("", "((k, c))"),
                    Shape::Composite => ("p int, st int static, ", "((k, p), c)"),
                };
                ddl.push(format!(
                    "CREATE TABLE ks.{t}_{twin} (k int, c int, v int, s set<int>, m map<int, int>, {more}PRIMARY KEY {key}) WITH layout = '{layout}'"
                ));
            }
            for (twin, targets) in [
                (
                    "idx",
                    &["v", "s", "c", "st", "keys(m)", "entries(m)", "m"][..],
                ),
                ("uidx", &["v", "s", "c", "m"][..]),
                ("pidx", &["v", "k", "st", "entries(m)"][..]),
            ] {
                for target in targets {
                    ddl.push(format!("CREATE INDEX ON ks.{t}_{twin} ({target})"));
                }
            }
        }
        for cql in ddl {
            let r = h.exec(&cql);
            assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
        }
        h
    }

    fn node(&self) -> Arc<LocalCoordinator> {
        self.node.clone().expect("node is open")
    }

    fn exec(&mut self, cql: &str) -> Response {
        self.exec_at(cql, Consistency::One)
    }

    fn exec_at(&mut self, cql: &str, consistency: Consistency) -> Response {
        let p = Processor::new(self.node());
        self.rt
            .block_on(run(&p, &mut self.session, cql, consistency))
    }

    fn restart(&mut self) {
        let node = self.node.take().expect("node is open");
        let config = self.config.clone();
        self.rt.block_on(async {
            let failures = node.close(Duration::from_secs(10)).await;
            assert!(failures.is_empty(), "closing: {failures:?}");
        });
        drop(Arc::into_inner(node).expect("no one else holds the node"));
        let node = Arc::new(LocalCoordinator::open(&config).expect("reopening"));
        let _guard = self.rt.enter();
        node.start_index_builds();
        self.node = Some(node);
    }

    /// Flushes or compacts every table and every index (whose compactions drop the
    /// entries their rows prove stale).
    fn each_store(&mut self, compact: bool) {
        let node = self.node();
        let mut results = self.rt.block_on(node.each_table(move |store| {
            if compact {
                store.compact()
            } else {
                store.flush()
            }
        }));
        results.extend(self.rt.block_on(node.each_index(move |db| {
            if compact {
                db.compact()
            } else {
                db.flush()
            }
        })));
        for (table, result) in results {
            assert!(result.is_ok(), "{table}: {result:?}");
        }
    }

    /// The entries stored in each index, by `keyspace.table.index`.
    fn index_entries(&mut self) -> BTreeMap<String, usize> {
        let node = self.node();
        self.rt
            .block_on(node.each_index(|db| {
                let mut n = 0;
                for item in db.scan(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)? {
                    item?;
                    n += 1;
                }
                Ok(n)
            }))
            .into_iter()
            .map(|(name, n)| (name, n.expect("scanning an index")))
            .collect()
    }

    fn run_case(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for op in ops {
            match op {
                Op::Flush => self.each_store(false),
                Op::Compact => self.each_store(true),
                Op::Restart => self.restart(),
                _ => {
                    for layout in LAYOUTS {
                        let t = layout.replace('-', "_");
                        for (twin, shape) in TWINS {
                            let Some(cql) = op.cql(&format!("{t}_{twin}"), shape) else {
                                continue;
                            };
                            let r = self.exec(&cql);
                            prop_assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
                        }
                    }
                }
            }
        }
        self.check()
    }

    /// The rows of a SELECT read in pages of `page_size` (`None`: one answer), sorted.
    fn select(
        &mut self,
        cql: &str,
        consistency: Consistency,
        page_size: Option<i32>,
    ) -> Result<Vec<Vec<Option<Vec<u8>>>>, TestCaseError> {
        let p = Processor::new(self.node());
        let mut out = Vec::new();
        let mut paging_state = None;
        // A bound on the pages: every query here returns fewer rows.
        for _ in 0..1000 {
            let mut params = QueryParameters::new(consistency);
            params.page_size = page_size;
            params.paging_state = paging_state.take();
            let request = Request::Query(Query {
                query: cql.to_owned(),
                params,
            });
            let response = self.rt.block_on(p.process(&mut self.session, request));
            let Response::Result(ResultBody::Rows(rows)) = response else {
                return Err(TestCaseError::fail(format!("{cql}: {response:?}")));
            };
            out.extend(
                rows.rows
                    .iter()
                    .map(|r| r.iter().map(|c| c.as_ref().map(|b| b.to_vec())).collect()),
            );
            match rows.metadata.paging_state {
                Some(state) => paging_state = Some(state),
                None => {
                    out.sort();
                    return Ok(out);
                }
            }
        }
        Err(TestCaseError::fail(format!("{cql}: more than 1000 pages")))
    }

    /// Every indexed query equals the filtered twin's answer, whole and in small pages.
    fn check(&mut self) -> Result<(), TestCaseError> {
        for layout in LAYOUTS {
            let t = layout.replace('-', "_");
            for x in 0..VALUES {
                for (relation, filtering, u) in [
                    (format!("v = {x}"), "", ""),
                    (format!("s CONTAINS {x}"), "", ""),
                    (format!("c = {x}"), "", ""),
                    (format!("k = 1 AND v = {x}"), "", ""),
                    (format!("v = {x} AND c = 1"), " ALLOW FILTERING", ""),
                    // A static column's index returns whole partitions.
                    (format!("st = {x}"), "", ""),
                    (format!("k = 1 AND st = {x}"), "", ""),
                    (format!("m CONTAINS KEY {x}"), "", ""),
                    (format!("m CONTAINS {x}"), "", ""),
                    (format!("m[1] = {x}"), "", ""),
                    // A partition key of two columns, no clustering column: a partial key
                    // needs ALLOW FILTERING (and still reads through the index).
                    (format!("v = {x}"), "", "u"),
                    (format!("s CONTAINS {x}"), "", "u"),
                    (format!("c = {x}"), "", "u"),
                    (format!("k = 1 AND v = {x}"), " ALLOW FILTERING", "u"),
                    (format!("m CONTAINS {x}"), "", "u"),
                    // A partition key of two columns and a clustering column: an index on
                    // one key column returns whole partitions.
                    (format!("k = {x}"), "", "p"),
                    (format!("st = {x}"), "", "p"),
                    (format!("k = 1 AND p = 1 AND st = {x}"), "", "p"),
                    (format!("v = {x}"), "", "p"),
                    (format!("m[1] = {x}"), "", "p"),
                ] {
                    let columns = if u == "u" {
                        "k, c, v, s, m"
                    } else {
                        "k, c, v, s, m, st"
                    };
                    let indexed =
                        format!("SELECT {columns} FROM ks.{t}_{u}idx WHERE {relation}{filtering}");
                    let plain = format!(
                        "SELECT {columns} FROM ks.{t}_{u}plain WHERE {relation} ALLOW FILTERING"
                    );
                    let want = sorted_rows(&plain, self.exec(&plain))?;
                    // QUORUM re-reads what the index returned (replica filtering
                    // protection); ONE does not. Pages of 1 to 4 rows end inside
                    // partitions.
                    let page = 1 + x;
                    for (cl, page_size) in [
                        (Consistency::One, None),
                        (Consistency::One, Some(page)),
                        (Consistency::Quorum, Some(5 - page)),
                    ] {
                        let got = self.select(&indexed, cl, page_size)?;
                        prop_assert_eq!(
                            &got,
                            &want,
                            "{} at {:?}, pages of {:?}",
                            indexed,
                            cl,
                            page_size
                        );
                    }
                }
            }
        }
        Ok(())
    }
}

#[test]
fn index_queries_equal_filtering_across_layouts_flushes_compactions_and_restarts() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let harness = RefCell::new(Harness::new());
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&proptest::collection::vec(op(), 1..40), |ops| {
        harness.borrow_mut().run_case(&ops)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A read through an index reads the rows it points at (and their partitions' heads), not
/// the table; an index created over existing data is built, and a restart keeps it built.
#[test]
fn reads_go_through_a_built_index() {
    let mut h = Harness::new();
    for k in 0..50 {
        let cql = format!(
            "INSERT INTO ks.uniform_plain (k, c, v) VALUES ({k}, 0, {})",
            k % 10
        );
        h.exec(&cql);
    }
    h.exec("CREATE INDEX late ON ks.uniform_plain (v)");
    let node = h.node();
    let table = node
        .current_catalog()
        .table("ks", "uniform_plain")
        .expect("table")
        .id;
    let built = |node: &LocalCoordinator| {
        node.built_index_names()
            .contains(&("ks".to_owned(), "late".to_owned()))
    };
    for _ in 0..200 {
        if built(&node) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(built(&node), "the index was built");
    let read =
        |rt: &tokio::runtime::Runtime, node: &LocalCoordinator, index: Option<IndexQuery>| {
            rt.block_on(node.read_local(
                ReadCommand {
                    table,
                    range: KeyRange {
                        start: Vec::new(),
                        end: None,
                    },
                    limit: usize::MAX,
                    filter: None,
                    index,
                },
                &AllPrimary,
                ReadClass::default(),
            ))
            .expect("read")
        };
    let query = IndexQuery {
        index: "late".to_owned(),
        term: CqlValue::Int(3).to_cql_bytes(),
    };
    let all = read(&h.rt, &node, None);
    let through = read(&h.rt, &node, Some(query.clone()));
    assert_eq!(all.entries.len(), 50);
    assert_eq!(through.entries.len(), 5, "{:?}", through.entries);
    assert!(through.exhausted);
    drop(node);
    h.restart();
    let node = h.node();
    assert!(built(&node), "still built after a restart");
    assert_eq!(read(&h.rt, &node, Some(query)).entries.len(), 5);
}

/// Stale entries do not accumulate (issue 15: "index maintenance survives compaction …
/// without stale entries"): rows whose indexed regular, static and set columns are
/// overwritten round after round, never read through the index, leave each index with one
/// entry per live value once it compacts, in every layout — not one per write.
#[test]
fn index_entries_stay_bounded_under_updates_of_indexed_columns() {
    let mut h = Harness::new();
    let (partitions, rows, rounds) = (4, 5, 24);
    for round in 0..rounds {
        for layout in LAYOUTS {
            let t = layout.replace('-', "_");
            for k in 0..partitions {
                h.exec(&format!("UPDATE ks.{t}_idx SET st = {round} WHERE k = {k}"));
                for c in 0..rows {
                    let cql = format!(
                        "UPDATE ks.{t}_idx SET v = {round}, s = {{{round}}} WHERE k = {k} AND c = {c}"
                    );
                    let r = h.exec(&cql);
                    assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
                }
            }
        }
        if round % 8 == 7 {
            h.each_store(false);
            // Level 0 piles up between rounds; compactions run as they would.
            h.each_store(true);
        }
    }
    h.each_store(true);
    let entries = h.index_entries();
    for layout in LAYOUTS {
        let t = layout.replace('-', "_");
        for (column, live) in [
            ("v", partitions * rows),
            ("s", partitions * rows),
            ("st", partitions),
        ] {
            let name = format!("ks.{t}_idx.{t}_idx_{column}_idx");
            let n = entries.get(&name).copied();
            assert_eq!(
                n,
                Some(live),
                "{name}: {n:?} entries after {rounds} rounds of updates of {live} values"
            );
        }
    }
    // And the index still answers as filtering does.
    for layout in LAYOUTS {
        let t = layout.replace('-', "_");
        let last = rounds - 1;
        for cql in [
            format!("SELECT k, c FROM ks.{t}_idx WHERE v = {last}"),
            format!("SELECT k, c FROM ks.{t}_idx WHERE s CONTAINS {last}"),
            format!("SELECT k, c FROM ks.{t}_idx WHERE st = {last}"),
        ] {
            let Response::Result(ResultBody::Rows(got)) = h.exec(&cql) else {
                panic!("{cql}");
            };
            assert_eq!(got.rows.len(), partitions * rows, "{cql}");
        }
        let cql = format!("SELECT k, c FROM ks.{t}_idx WHERE v = 0");
        let Response::Result(ResultBody::Rows(got)) = h.exec(&cql) else {
            panic!("{cql}");
        };
        assert!(got.rows.is_empty(), "{cql}");
    }
}

/// Of two indexed relations, the read goes through the more selective index, as Cassandra
/// chooses (the lowest mean rows per indexed value, from the node's index statistics),
/// whichever the WHERE clause names first; the answer is the same either way.
#[test]
fn a_query_with_two_indexed_relations_reads_through_the_more_selective_index() {
    let mut h = Harness::new();
    for cql in [
        "CREATE TABLE ks.sel (k int, c int, lo int, hi int, PRIMARY KEY (k, c))",
        "CREATE INDEX sel_lo ON ks.sel (lo)",
        "CREATE INDEX sel_hi ON ks.sel (hi)",
    ] {
        let r = h.exec(cql);
        assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
    }
    let node = h.node();
    let built = |node: &LocalCoordinator| {
        let names = node.built_index_names();
        ["sel_lo", "sel_hi"]
            .iter()
            .all(|i| names.contains(&("ks".to_owned(), (*i).to_owned())))
    };
    for _ in 0..200 {
        if built(&node) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(built(&node), "both indexes built");
    // lo: 2 values of 200 rows each; hi: a value per row.
    for i in 0..400 {
        let cql = format!(
            "INSERT INTO ks.sel (k, c, lo, hi) VALUES ({}, {}, {}, {i})",
            i % 20,
            i / 20,
            i % 2
        );
        h.exec(&cql);
    }
    let counters = |node: &LocalCoordinator| -> BTreeMap<String, IndexCounters> {
        node.index_counters()
            .into_iter()
            .filter(|(name, _)| name.starts_with("ks.sel."))
            .collect()
    };
    let before = counters(&node);
    let mean = |name: &str| before[name].mean_rows.expect("statistics");
    assert!(
        mean("ks.sel.sel_lo") > 50.0 * mean("ks.sel.sel_hi"),
        "statistics: {before:?}"
    );
    for (cql, rows) in [
        (
            "SELECT k, c FROM ks.sel WHERE lo = 1 AND hi = 7 ALLOW FILTERING",
            1,
        ),
        (
            "SELECT k, c FROM ks.sel WHERE hi = 8 AND lo = 1 ALLOW FILTERING",
            0,
        ),
    ] {
        let before = counters(&node);
        let Response::Result(ResultBody::Rows(got)) = h.exec(cql) else {
            panic!("{cql}");
        };
        assert_eq!(got.rows.len(), rows, "{cql}");
        let after = counters(&node);
        let reads = |c: &BTreeMap<String, IndexCounters>, i: &str| c[i].reads;
        assert_eq!(
            reads(&after, "ks.sel.sel_lo"),
            reads(&before, "ks.sel.sel_lo"),
            "{cql}: the low-cardinality index is not read"
        );
        assert!(
            reads(&after, "ks.sel.sel_hi") > reads(&before, "ks.sel.sel_hi"),
            "{cql}: read through the high-cardinality index"
        );
    }
}
