//! The Rust `scylla` driver against a real `mosaic server`: connect (its topology and
//! schema queries on system tables), DDL with schema agreement, prepared INSERT and
//! SELECT by key with LZ4 compression — what the benchmark and users do.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::Node;
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

    let node = tokio::task::spawn_blocking(|| Node::start(""))
        .await
        .unwrap();
    let session = SessionBuilder::new()
        .known_node(node.addr.to_string())
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
        .query_unpaged(
            "CREATE TABLE ks.types (k int PRIMARY KEY, ti tinyint, si smallint, bi bigint, f float, \
             d double, b boolean, t text, bl blob, ts timestamp, dt date, vi varint, de decimal)",
            &[],
        )
        .await
        .unwrap();
    session.await_schema_agreement().await.unwrap();
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
