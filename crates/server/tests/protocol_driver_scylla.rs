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
