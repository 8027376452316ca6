//! The Rust `scylla` driver against a real `mosaic server`: connect (its topology and
//! schema queries on system tables), DDL with schema agreement, prepared INSERT and
//! SELECT by key with LZ4 compression — what the benchmark and users do.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::Node;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::Compression;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scylla_driver_connects_writes_and_reads() {
    let node = tokio::task::spawn_blocking(|| Node::start(""))
        .await
        .unwrap();
    let session = SessionBuilder::new()
        .known_node(node.addr.to_string())
        .compression(Some(Compression::Lz4))
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting: {e}\nlog:\n{}", node.log()));
    session
        .query_unpaged(
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            &[],
        )
        .await
        .unwrap();
    session
        .query_unpaged("CREATE TABLE ks.kv (k text PRIMARY KEY, v blob)", &[])
        .await
        .unwrap();
    session.await_schema_agreement().await.unwrap();
    let insert = session
        .prepare("INSERT INTO ks.kv (k, v) VALUES (?, ?)")
        .await
        .unwrap();
    let select = session
        .prepare("SELECT v FROM ks.kv WHERE k = ?")
        .await
        .unwrap();
    for i in 0..100u32 {
        session
            .execute_unpaged(&insert, (format!("key{i}"), i.to_be_bytes().to_vec()))
            .await
            .unwrap();
    }
    for i in 0..100u32 {
        let rows = session
            .execute_unpaged(&select, (format!("key{i}"),))
            .await
            .unwrap()
            .into_rows_result()
            .unwrap();
        let (v,): (Vec<u8>,) = rows.single_row().unwrap();
        assert_eq!(v, i.to_be_bytes().to_vec());
    }
}

/// Every type through prepared statements, paging over 3,000 rows, and a batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scylla_driver_round_trips_types_pages_and_batches() {
    use scylla::response::PagingState;
    use scylla::statement::batch::Batch;
    use scylla::value::{CqlDate, CqlDecimal, CqlTimestamp, CqlVarint};

    let (_node, session) = session_after(&[
        "CREATE TABLE ks.types (k int PRIMARY KEY, ti tinyint, si smallint, bi bigint, f float, \
         d double, b boolean, t text, bl blob, ts timestamp, dt date, vi varint, de decimal)",
    ])
    .await;
    let insert = session
        .prepare(
            "INSERT INTO ks.types (k, ti, si, bi, f, d, b, t, bl, ts, dt, vi, de) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .await
        .unwrap();
    let varint = CqlVarint::from_signed_bytes_be(vec![0x80, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let decimal = CqlDecimal::from_signed_be_bytes_and_exponent(vec![0x85], 3);
    let row = (
        1i32,
        i8::MIN,
        i16::MAX,
        i64::MIN,
        f32::INFINITY,
        -0.5f64,
        true,
        "ünïcødé".to_owned(),
        vec![0u8, 255],
        CqlTimestamp(-1),
        CqlDate(0),
        varint.clone(),
        decimal.clone(),
    );
    session.execute_unpaged(&insert, row.clone()).await.unwrap();
    let got = session
        .query_unpaged(
            "SELECT k, ti, si, bi, f, d, b, t, bl, ts, dt, vi, de FROM ks.types WHERE k = 1",
            &[],
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    type Row = (
        i32,
        i8,
        i16,
        i64,
        f32,
        f64,
        bool,
        String,
        Vec<u8>,
        CqlTimestamp,
        CqlDate,
        CqlVarint,
        CqlDecimal,
    );
    let b: Row = got.single_row().unwrap();
    assert_eq!(
        (b.0, b.1, b.2, b.3, b.4, b.5),
        (row.0, row.1, row.2, row.3, row.4, row.5)
    );
    assert_eq!(
        (&b.6, &b.7, &b.8, b.9, b.10),
        (&row.6, &row.7, &row.8, row.9, row.10)
    );
    assert_eq!((&b.11, &b.12), (&row.11, &row.12));

    session
        .query_unpaged(
            "CREATE TABLE ks.wide (k int, c int, v text, PRIMARY KEY (k, c))",
            &[],
        )
        .await
        .unwrap();
    session.await_schema_agreement().await.unwrap();
    let wide = session
        .prepare("INSERT INTO ks.wide (k, c, v) VALUES (?, ?, ?)")
        .await
        .unwrap();
    let mut batch = Batch::default();
    let mut values = Vec::new();
    for c in 0..100 {
        batch.append_statement(wide.clone());
        values.push((7i32, c, "b".to_owned()));
    }
    session.batch(&batch, values).await.unwrap();
    for c in 0..3000 {
        session
            .execute_unpaged(&wide, (1i32, c, format!("v{c}")))
            .await
            .unwrap();
    }
    let mut select = session
        .prepare("SELECT c FROM ks.wide WHERE k = ?")
        .await
        .unwrap();
    select.set_page_size(250);
    let mut state = PagingState::start();
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let (result, next) = session
            .execute_single_page(&select, (1i32,), state)
            .await
            .unwrap();
        pages += 1;
        for r in result.into_rows_result().unwrap().rows::<(i32,)>().unwrap() {
            seen.push(r.unwrap().0);
        }
        match next.into_paging_control_flow() {
            std::ops::ControlFlow::Continue(s) => state = s,
            std::ops::ControlFlow::Break(()) => break,
        }
        assert!(pages < 1000);
    }
    assert_eq!(seen, (0..3000).collect::<Vec<_>>());
    assert!(pages >= 12);
    let count = session
        .query_unpaged("SELECT count(*) FROM ks.wide WHERE k = 7", &[])
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    let (n,): (i64,) = count.single_row().unwrap();
    assert_eq!(n, 100);
}

/// A node, and a driver session on it that created keyspace `ks` (RF 1), ran `ddl` and
/// awaited schema agreement.
async fn session_after(ddl: &[&str]) -> (Node, Session) {
    let node = tokio::task::spawn_blocking(|| Node::start(""))
        .await
        .unwrap();
    let session = SessionBuilder::new()
        .known_node(node.addr.to_string())
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting: {e}\nlog:\n{}", node.log()));
    let keyspace =
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}";
    for statement in std::iter::once(&keyspace).chain(ddl) {
        session.query_unpaged(*statement, &[]).await.unwrap();
    }
    session.await_schema_agreement().await.unwrap();
    (node, session)
}

/// A user-defined type as an application maps it with the driver's derive macros.
#[derive(Debug, Clone, PartialEq, scylla::SerializeValue, scylla::DeserializeValue)]
struct Address {
    street: String,
    city: String,
    zip: Option<i32>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scylla_driver_maps_collections_and_user_types() {
    let (_node, session) = session_after(&[
        "CREATE TYPE ks.address (street text, city text, zip int)",
        "CREATE TABLE ks.people (k int PRIMARY KEY, home frozen<address>, work address, \
         tags set<text>, scores map<text, int>, visits list<frozen<address>>)",
    ])
    .await;
    let home = Address {
        street: "1 Main".into(),
        city: "Springfield".into(),
        zip: Some(12345),
    };
    let work = Address {
        street: "2 Side".into(),
        city: "Shelbyville".into(),
        zip: None,
    };
    let insert = session
        .prepare(
            "INSERT INTO ks.people (k, home, work, tags, scores, visits) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .await
        .unwrap();
    let tags: std::collections::BTreeSet<String> = ["b".to_string(), "a".to_string()].into();
    let scores: std::collections::BTreeMap<String, i32> = [("x".to_string(), 1)].into();
    session
        .execute_unpaged(
            &insert,
            (
                1i32,
                &home,
                &work,
                &tags,
                &scores,
                vec![home.clone(), work.clone()],
            ),
        )
        .await
        .unwrap();
    let append = session
        .prepare("UPDATE ks.people SET tags = tags + ?, scores[?] = ?, work.zip = ? WHERE k = ?")
        .await
        .unwrap();
    let more: std::collections::BTreeSet<String> = ["c".to_string()].into();
    session
        .execute_unpaged(&append, (&more, "y", 2i32, 999i32, 1i32))
        .await
        .unwrap();
    let rows = session
        .query_unpaged(
            "SELECT home, work, tags, scores, visits, home.city FROM ks.people WHERE k = 1",
            &[],
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    type Row = (
        Address,
        Address,
        std::collections::BTreeSet<String>,
        std::collections::BTreeMap<String, i32>,
        Vec<Address>,
        String,
    );
    let (got_home, got_work, got_tags, got_scores, got_visits, city): Row =
        rows.single_row().unwrap();
    assert_eq!(got_home, home);
    assert_eq!(
        got_work,
        Address {
            zip: Some(999),
            ..work.clone()
        }
    );
    assert_eq!(
        got_tags,
        ["a", "b", "c"].iter().map(|s| s.to_string()).collect()
    );
    assert_eq!(
        got_scores,
        [("x".to_string(), 1), ("y".to_string(), 2)].into()
    );
    assert_eq!(got_visits, vec![home.clone(), work]);
    assert_eq!(city, "Springfield");
    // The driver's schema metadata knows the type.
    session.refresh_metadata().await.unwrap();
    let state = session.get_cluster_state();
    let keyspace = state.get_keyspace("ks").unwrap();
    assert!(keyspace.user_defined_types.contains_key("address"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scylla_driver_round_trips_inet_time_duration_and_tuples() {
    use scylla::value::{CqlDuration, CqlTime};
    use std::net::IpAddr;

    let (_node, session) = session_after(&[
        "CREATE TABLE ks.misc (k int PRIMARY KEY, ip inet, ip6 inet, t time, d duration, \
         tup tuple<int, text, inet>, nested tuple<int, tuple<text, time>>)",
    ])
    .await;
    type Row = (
        IpAddr,
        IpAddr,
        CqlTime,
        CqlDuration,
        (i32, String, Option<IpAddr>),
        (i32, (String, CqlTime)),
    );
    let read = session
        .prepare("SELECT ip, ip6, t, d, tup, nested FROM ks.misc WHERE k = ?")
        .await
        .unwrap();
    let read_row = |k: i32| {
        let (session, read) = (&session, &read);
        async move {
            session
                .execute_unpaged(read, (k,))
                .await
                .unwrap()
                .into_rows_result()
                .unwrap()
                .single_row::<Row>()
                .unwrap()
        }
    };

    // Bound values come back as they were sent.
    let bound: Row = (
        "192.168.10.20".parse().unwrap(),
        "2001:db8::ff00:42:8329".parse().unwrap(),
        CqlTime(((23 * 60 + 59) * 60 + 59) * 1_000_000_000 + 999_999_999),
        CqlDuration {
            months: -14,
            days: -3,
            nanoseconds: -5_000_000_007,
        },
        (7, "seven".into(), Some("10.0.0.7".parse().unwrap())),
        (-1, ("inner".into(), CqlTime(0))),
    );
    let insert = session
        .prepare("INSERT INTO ks.misc (k, ip, ip6, t, d, tup, nested) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .await
        .unwrap();
    session
        .execute_unpaged(
            &insert,
            (
                1i32,
                bound.0,
                bound.1,
                bound.2,
                bound.3,
                bound.4.clone(),
                bound.5.clone(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(read_row(1).await, bound);

    // Literals in Cassandra's syntax read back as the driver's values.
    session
        .query_unpaged(
            "INSERT INTO ks.misc (k, ip, ip6, t, d, tup, nested) VALUES (2, '10.1.2.3', '::1', \
             '13:30:54.234', 1y2mo3w4d5h6m7s8ms9us10ns, (3, 'x', null), (4, ('y', '00:00:01')))",
            &[],
        )
        .await
        .unwrap();
    let nanos = |h: i64, m: i64, s: i64| ((h * 60 + m) * 60 + s) * 1_000_000_000;
    let literal: Row = (
        "10.1.2.3".parse().unwrap(),
        "::1".parse().unwrap(),
        CqlTime(nanos(13, 30, 54) + 234_000_000),
        CqlDuration {
            months: 14,
            days: 25,
            nanoseconds: nanos(5, 6, 7) + 8_000_000 + 9_000 + 10,
        },
        (3, "x".into(), None),
        (4, ("y".into(), CqlTime(nanos(0, 0, 1)))),
    );
    assert_eq!(read_row(2).await, literal);

    // A bound tuple and inet as WHERE values select by them (ALLOW FILTERING).
    let by_values = session
        .prepare("SELECT k FROM ks.misc WHERE tup = ? AND ip = ? ALLOW FILTERING")
        .await
        .unwrap();
    let (k,): (i32,) = session
        .execute_unpaged(&by_values, (bound.4.clone(), bound.0))
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .single_row()
        .unwrap();
    assert_eq!(k, 1);
}
