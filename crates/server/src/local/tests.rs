//! Storage tests through the single-node coordinator: tables of every layout, restart,
//! truncate, drop, orphans and the data directory's lock.

use super::tables::{id_hex, parse_id_hex, path_component, table_dir};
use super::*;
use mosaic_cql::frame::ProtocolVersion;
use mosaic_cql::frame::{Query, QueryParameters, Request, Response, ResultBody};
use mosaic_cql::processor::{Processor, Session};

pub(super) fn config(dir: &Path) -> Config {
    let mut c = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    c.storage.memtable_size_bytes = 1 << 20;
    c.storage.block_cache_size_bytes = 1 << 20;
    c
}

pub(super) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn run(p: &Processor<LocalCoordinator>, s: &mut Session, cql: &str) -> Response {
    p.process(
        s,
        Request::Query(Query {
            query: cql.to_owned(),
            params: QueryParameters::new(Consistency::One),
        }),
    )
    .await
}

fn rows(r: &Response) -> usize {
    match r {
        Response::Result(ResultBody::Rows(rows)) => rows.rows.len(),
        other => panic!("expected rows, got {other:?}"),
    }
}

#[test]
fn timestamps_strictly_increase() {
    let dir = tempfile::tempdir().unwrap();
    let c = LocalCoordinator::open(&config(dir.path())).unwrap();
    let mut last = 0;
    for _ in 0..10_000 {
        let t = c.new_timestamp();
        assert!(t > last);
        last = t;
    }
    assert!(last >= now_micros() - 60_000_000);
}

#[test]
fn path_components_are_plain_or_escaped() {
    assert_eq!(path_component("ks_1"), "ks_1");
    assert_eq!(path_component("../x"), "%2E%2E%2Fx");
    assert_eq!(path_component(""), "%");
    let id = TableId(Uuid::random().0);
    assert_eq!(parse_id_hex(&id_hex(id)), Some(id));
}

#[test]
fn offloaded_and_synced_engine_calls_serve_reads_and_writes() {
    for (calls, sync) in [
        (EngineCalls::Offload, WalSync::Periodic),
        (EngineCalls::Inline, WalSync::PerWrite),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.storage.engine_calls = calls;
        cfg.storage.wal_sync = sync;
        rt().block_on(async {
            let c = Arc::new(LocalCoordinator::open(&cfg).unwrap());
            assert!(!c.inline_writes);
            let p = Processor::new(c.clone());
            let mut s = Session::new(ProtocolVersion::V4);
            for cql in [
                "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
                "INSERT INTO ks.t (k, v) VALUES (1, 'a')",
            ] {
                let r = run(&p, &mut s, cql).await;
                assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
            }
            assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }
}

#[test]
fn tables_survive_restart_truncate_and_drop() {
    let dir = tempfile::tempdir().unwrap();
    let rt = rt();
    rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        for cql in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
            "INSERT INTO ks.t (k, v) VALUES (1, 'a')",
            "INSERT INTO ks.t (k, v) VALUES (2, 'b')",
        ] {
            let r = run(&p, &mut s, cql).await;
            assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
        }
        assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 2);
        // ks.t, and the system_auth tables every node has.
        let names: Vec<String> = c.each_table(|_| Ok(())).await.into_iter().map(|(n, _)| n).collect();
        let user: Vec<&String> = names.iter().filter(|n| !n.starts_with("system_auth.")).collect();
        assert_eq!(user, ["ks.t"]);
        assert_eq!(c.table_count(), names.len());
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
    rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 2);
        let r = run(&p, &mut s, "TRUNCATE ks.t").await;
        assert!(!matches!(r, Response::Error(_)), "{r:?}");
        assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 0);
        let r = run(&p, &mut s, "INSERT INTO ks.t (k, v) VALUES (3, 'c')").await;
        assert!(!matches!(r, Response::Error(_)), "{r:?}");
        assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
        let table = c.catalog().table("ks", "t").unwrap().clone();
        let r = run(&p, &mut s, "DROP TABLE ks.t").await;
        assert!(!matches!(r, Response::Error(_)), "{r:?}");
        assert!(!table_dir(dir.path(), &table).exists());
        let e = c
            .read(
                ReadCommand {
                    table: table.id,
                    range: mosaic_rows::KeyRange {
                        start: Vec::new(),
                        end: None,
                    },
                    limit: 10,
                    filter: None,
                    index: None,
                },
                Consistency::One,
            )
            .await
            .unwrap_err();
        assert_eq!(e.message, "unconfigured table t");
        let r = run(&p, &mut s, "DROP KEYSPACE ks").await;
        assert!(!matches!(r, Response::Error(_)), "{r:?}");
        assert!(!dir.path().join("ks").exists());
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
}

/// Runs `statements` in a new session on `c`, each of which must succeed.
pub(super) async fn run_all_ok(c: &Arc<LocalCoordinator>, statements: &[&str]) {
    let p = Processor::new(c.clone());
    let mut s = Session::new(ProtocolVersion::V4);
    for cql in statements {
        run_ok(&p, &mut s, cql).await;
    }
}

pub(super) async fn run_ok(p: &Processor<LocalCoordinator>, s: &mut Session, cql: &str) {
    let r = run(p, s, cql).await;
    assert!(!matches!(r, Response::Error(_)), "{cql}: {r:?}");
}

#[test]
fn tables_of_every_layout_store_read_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rt = rt();
    rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        for layout in ["uniform", "multi-lsm", "decoupled"] {
            let t = layout.replace('-', "_");
            run_ok(&p, &mut s, &format!("CREATE TABLE ks.{t} (k int PRIMARY KEY, v text) WITH layout = '{layout}'")).await;
            for k in 0..50 {
                run_ok(&p, &mut s, &format!("INSERT INTO ks.{t} (k, v) VALUES ({k}, 'v{k}')")).await;
            }
            run_ok(&p, &mut s, &format!("DELETE FROM ks.{t} WHERE k = 0")).await;
            assert_eq!(rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t}")).await), 49);
            let meta = c.catalog().table("ks", &t).unwrap().clone();
            assert_eq!(meta.params.layout, layout);
            let tdir = table_dir(dir.path(), &meta);
            assert_eq!(tdir.join("primary").is_dir(), layout != "uniform", "{layout}");
        }
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
    rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        for t in ["uniform", "multi_lsm", "decoupled"] {
            assert_eq!(
                rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t}")).await),
                49,
                "{t}"
            );
            assert_eq!(
                rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t} WHERE k = 7")).await),
                1,
                "{t}"
            );
            run_ok(&p, &mut s, &format!("TRUNCATE ks.{t}")).await;
            assert_eq!(
                rows(&run(&p, &mut s, &format!("SELECT * FROM ks.{t}")).await),
                0,
                "{t}"
            );
            run_ok(
                &p,
                &mut s,
                &format!("INSERT INTO ks.{t} (k, v) VALUES (1, 'again')"),
            )
            .await;
        }
        // The layout stays the table's, whatever the statement says.
        let r = run(
            &p,
            &mut s,
            "ALTER TABLE ks.decoupled WITH layout = 'uniform'",
        )
        .await;
        assert!(matches!(r, Response::Error(_)), "{r:?}");
        let stats = c
            .each_table(|store| Ok((store.layout(), store.structures().len())))
            .await;
        let stats: Vec<_> = stats
            .into_iter()
            .filter(|(n, _)| !n.starts_with("system_auth."))
            .map(|(n, r)| (n, r.unwrap()))
            .collect();
        assert_eq!(
            stats,
            [
                ("ks.decoupled".to_owned(), (Layout::Decoupled, 2)),
                ("ks.multi_lsm".to_owned(), (Layout::MultiLsm, 1)),
                ("ks.uniform".to_owned(), (Layout::Uniform, 1)),
            ]
        );
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
}

#[test]
fn a_tables_layout_options_shape_its_log_across_restarts_and_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let rt = rt();
    let log_of = |c: &LocalCoordinator, t: &str| {
        let id = c.catalog().table("ks", t).unwrap().id;
        let slot = c.slot(id).unwrap();
        (slot.log.runs_max, slot.log.split_segments)
    };
    let defaults = {
        let s = &config(dir.path()).storage;
        (s.sorted_runs_max, s.split_segments)
    };
    rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        run_ok(&p, &mut s, "CREATE TABLE ks.tuned (k int PRIMARY KEY, v text) WITH layout = {'class': 'decoupled', 'sorted_runs_max': '3', 'split_segments': '2'}").await;
        run_ok(&p, &mut s, "CREATE TABLE ks.plain (k int PRIMARY KEY, v text) WITH layout = 'decoupled'").await;
        assert_eq!(log_of(&c, "tuned"), (3, 2));
        assert_eq!(log_of(&c, "plain"), defaults);
        run_ok(&p, &mut s, "INSERT INTO ks.tuned (k, v) VALUES (1, 'a')").await;
        run_ok(&p, &mut s, "TRUNCATE ks.tuned").await;
        assert_eq!(log_of(&c, "tuned"), (3, 2));
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
    rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
        assert_eq!(log_of(&c, "tuned"), (3, 2));
        assert_eq!(log_of(&c, "plain"), defaults);
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
}

#[test]
fn the_configured_layout_applies_to_tables_created_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.storage.layout = Layout::Decoupled;
    rt().block_on(async {
        let c = Arc::new(LocalCoordinator::open(&cfg).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        run_ok(&p, &mut s, "CREATE TABLE ks.t (k int PRIMARY KEY, v text)").await;
        run_ok(&p, &mut s, "CREATE TABLE ks.u (k int PRIMARY KEY, v text) WITH layout = 'uniform'").await;
        let catalog = c.catalog();
        let t = catalog.table("ks", "t").unwrap();
        assert_eq!(t.params.layout, "decoupled");
        assert_eq!(catalog.table("ks", "u").unwrap().params.layout, "uniform");
        let marker = fs::read_to_string(table_dir(dir.path(), t).join("LAYOUT")).unwrap();
        assert_eq!(marker, "decoupled");
        run_ok(&p, &mut s, "INSERT INTO ks.t (k, v) VALUES (1, 'a')").await;
        assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
}

/// Redundant below token 0 (a copy of source 0xaa…), primary from 0 on.
struct SplitAtZero;

const SOURCE: mosaic_replica::SourceId = mosaic_replica::SourceId([0xaa; 16]);

impl Roles for SplitAtZero {
    fn role(&self, token: Token) -> Role {
        if token.0 < 0 {
            Role::Redundant {
                source: SOURCE,
                index: 1,
            }
        } else {
            Role::Primary
        }
    }

    fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)> {
        let zero = mosaic_rows::encode_token(Token(0)).to_vec();
        let low = KeyRange {
            start: range.start.clone(),
            end: Some(
                range
                    .end
                    .clone()
                    .map_or(zero.clone(), |e| e.min(zero.clone())),
            ),
        };
        let high = KeyRange {
            start: range.start.clone().max(zero),
            end: range.end,
        };
        [(low, self.role(Token(-1))), (high, Role::Primary)]
            .into_iter()
            .filter(|(r, _)| !r.is_empty())
            .collect()
    }
}

#[test]
fn writes_and_reads_go_to_the_structure_of_their_role() {
    for layout in ["uniform", "multi-lsm", "decoupled"] {
        let dir = tempfile::tempdir().unwrap();
        rt().block_on(async {
            let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
            let p = Processor::new(c.clone());
            let mut s = Session::new(ProtocolVersion::V4);
            run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}").await;
            run_ok(&p, &mut s, &format!("CREATE TABLE ks.t (k int PRIMARY KEY) WITH layout = '{layout}'")).await;
            let table = c.catalog().table("ks", "t").unwrap().id;
            let fragment = mosaic_rows::Fragment {
                liveness: Some(mosaic_rows::Liveness {
                    ts: mosaic_types::Timestamp::from_micros(now_micros()),
                    expiry: None,
                }),
                ..mosaic_rows::Fragment::new(mosaic_rows::FragmentKind::Row)
            }
            .encode();
            let tokens = [-300i64, -200, -100, 100, 200, 300];
            let writes: Vec<WireMutation> = tokens
                .iter()
                .map(|t| {
                    let mut key = mosaic_rows::encode_token(Token(*t)).to_vec();
                    key.push(0x05);
                    WireMutation { key, ts: 1, fragment: fragment.clone() }
                })
                .collect();
            c.apply(BTreeMap::from([(table, writes)]), &SplitAtZero).await.unwrap();
            let all = KeyRange { start: Vec::new(), end: None };
            let read = c.read_local(ReadCommand { table, range: all.clone(), limit: 100, filter: None, index: None }, &SplitAtZero, ReadClass::default()).await.unwrap();
            assert_eq!(read.entries.len(), 6, "{layout}");
            assert!(read.exhausted);
            let keys: Vec<Token> = read
                .entries
                .iter()
                .map(|(k, _)| mosaic_rows::decode_token(k).unwrap())
                .collect();
            assert_eq!(keys, tokens.map(Token), "{layout}: in key order across pieces");
            // A limit inside the second piece, and one at the end of the first.
            let read = c.read_local(ReadCommand { table, range: all.clone(), limit: 4, filter: None, index: None }, &SplitAtZero, ReadClass::default()).await.unwrap();
            assert_eq!((read.entries.len(), read.exhausted), (4, false));
            let read = c.read_local(ReadCommand { table, range: all.clone(), limit: 3, filter: None, index: None }, &SplitAtZero, ReadClass::default()).await.unwrap();
            assert_eq!((read.entries.len(), read.exhausted), (3, false));
            // Read as if everything were primary: the redundant copies are elsewhere,
            // except in the uniform layout, which stores every role together.
            let read = c.read_local(ReadCommand { table, range: all, limit: 100, filter: None, index: None }, &AllPrimary, ReadClass::default()).await.unwrap();
            let want = if layout == "uniform" { 6 } else { 3 };
            assert_eq!(read.entries.len(), want, "{layout}");
            let meta = c.catalog().table("ks", "t").unwrap().clone();
            let tdir = table_dir(dir.path(), &meta);
            match layout {
                "multi-lsm" => assert!(tdir.join(format!("src-{SOURCE}")).is_dir()),
                "decoupled" => assert!(tdir.join("log").is_dir()),
                _ => assert!(tdir.join("CURRENT").is_file()),
            }
            assert!(c.close(Duration::from_secs(10)).await.is_empty());
        });
    }
}

#[test]
fn orphan_directories_are_removed_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let orphan = dir
        .path()
        .join("ks")
        .join(format!("t-{}", id_hex(TableId(Uuid::random().0))));
    fs::create_dir_all(&orphan).unwrap();
    let keep = dir.path().join("ks").join("notes");
    fs::create_dir_all(&keep).unwrap();
    let c = LocalCoordinator::open(&config(dir.path())).unwrap();
    assert!(!orphan.exists());
    assert!(keep.exists());
    drop(c);
}

#[test]
fn a_second_process_cannot_open_a_locked_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let _c = LocalCoordinator::open(&config(dir.path())).unwrap();
    assert!(LocalCoordinator::open(&config(dir.path())).is_err());
}

#[test]
fn an_erasure_tiered_table_keeps_per_source_trees_and_unreferenced_cold_objects_are_swept_but_offloaded_parity_stays(
) {
    let dir = tempfile::tempdir().unwrap();
    let cold = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.cold_tier.url = format!("file://{}", cold.path().display());
    let rt = rt();
    let host = rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&cfg).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        run_ok(&p, &mut s, "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH layout = {'class': 'erasure-tiered', 'ec_k': '2', 'ec_n': '3', 'storage_saving_target': '0.5'}").await;
        let t = c.catalog().table("ks", "t").unwrap().clone();
        assert_eq!(t.params.layout, "erasure-tiered");
        let marker = fs::read_to_string(table_dir(dir.path(), &t).join("LAYOUT")).unwrap();
        assert_eq!(marker, "erasure-tiered");
        assert!(table_dir(dir.path(), &t).join("primary").is_dir());
        run_ok(&p, &mut s, "INSERT INTO ks.t (k, v) VALUES (1, 'a')").await;
        assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
        let host = c.identity.host_id.to_string();
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
        host
    });
    // An object no table references (an upload whose adoption a crash cut short).
    let tier = crate::cold::ColdTier::open(&cfg.cold_tier, dir.path(), &host).unwrap();
    tier.put("ks/t/primary/000042.sst", vec![0; 100]).unwrap();
    let other = crate::cold::ColdTier::open(&cfg.cold_tier, dir.path(), "another-node").unwrap();
    other.put("ks/t/primary/000042.sst", vec![0; 100]).unwrap();
    // An offloaded parity shard: its stub in the table's parity directory names it.
    let parity = "ks/t/parity/0101-2-7.par";
    tier.put(parity, vec![1; 64]).unwrap();
    let t_dir = fs::read_dir(dir.path().join("ks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("LAYOUT").exists())
        .unwrap();
    fs::create_dir_all(t_dir.join("parity")).unwrap();
    fs::write(
        t_dir
            .join("parity")
            .join(format!("{}-2.cold", "01".repeat(16))),
        format!("{parity}\n64\n"),
    )
    .unwrap();
    assert_eq!(tier.list("").unwrap().len(), 2);
    rt.block_on(async {
        let c = Arc::new(LocalCoordinator::open(&cfg).unwrap());
        let left: Vec<String> = tier.list("").unwrap().into_iter().map(|(l, _)| l).collect();
        assert_eq!(
            left,
            vec![parity.to_owned()],
            "the unreferenced object is swept, the offloaded parity shard stays"
        );
        assert_eq!(
            other.list("").unwrap().len(),
            1,
            "another node's objects are not touched"
        );
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        assert_eq!(rows(&run(&p, &mut s, "SELECT * FROM ks.t").await), 1);
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
}

#[test]
fn a_peer_schema_at_the_largest_epoch_stops_schema_changes_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    rt().block_on(async {
        let c = Arc::new(LocalCoordinator::open(&config(dir.path())).unwrap());
        let p = Processor::new(c.clone());
        let mut s = Session::new(ProtocolVersion::V4);
        run_ok(&p, &mut s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
        let mut snapshot = c.schema_snapshot();
        snapshot.epoch = u64::MAX;
        assert!(c.adopt_schema(snapshot).await.unwrap());
        let r = run(&p, &mut s, "CREATE TABLE ks.t (k int PRIMARY KEY)").await;
        match r {
            Response::Error(e) => assert!(e.message.contains("epoch is exhausted"), "{e:?}"),
            other => panic!("expected an error, got {other:?}"),
        }
        assert!(c.close(Duration::from_secs(10)).await.is_empty());
    });
}
