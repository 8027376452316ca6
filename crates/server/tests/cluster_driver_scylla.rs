//! The Rust `scylla` driver against a three-node cluster started by `mosaic cluster up`:
//! the session sees the three nodes, prepared writes at QUORUM are read back at QUORUM, and
//! its token-aware routing sends each request to a replica of its key (checked on an RF=1
//! keyspace, where exactly one node is a replica); and a session pinned to one node keeps its
//! schema metadata fresh, without reconnecting or refreshing by hand, while another session
//! changes the schema through another node (the observer's node pushes SCHEMA_CHANGE events
//! for schemas it learns from peers).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use common::cluster::Cluster;
use common::wait_for;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::host_filter::AllowListHostFilter;
use scylla::statement::Consistency;

const NODES: u32 = 3;

async fn create(session: &Session, ks: &str, rf: u32) {
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE {ks} WITH replication = \
                 {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
            ),
            &[],
        )
        .await
        .unwrap();
    session
        .query_unpaged(
            format!("CREATE TABLE {ks}.kv (k int PRIMARY KEY, v text)"),
            &[],
        )
        .await
        .unwrap();
    session.await_schema_agreement().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scylla_driver_writes_at_quorum_and_routes_to_replicas_on_three_nodes() {
    let cluster = tokio::task::spawn_blocking(|| Cluster::up(NODES, ""))
        .await
        .unwrap();
    let session = SessionBuilder::new()
        .known_node(format!("127.0.0.1:{}", cluster.port))
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting: {e}\n{}", cluster.logs()));
    let ips: Vec<String> = wait_for("the session to see three nodes", || {
        let state = session.get_cluster_state();
        let mut ips: Vec<String> = state
            .get_nodes_info()
            .iter()
            .map(|n| n.address.ip().to_string())
            .collect();
        ips.sort();
        (ips.len() == 3).then_some(ips)
    });
    assert_eq!(ips, ["127.0.0.1", "127.0.0.2", "127.0.0.3"]);

    create(&session, "q", 3).await;
    create(&session, "r1", 1).await;
    session.refresh_metadata().await.unwrap();

    // RF=3: prepared writes at QUORUM, read back at QUORUM.
    let mut insert = session
        .prepare("INSERT INTO q.kv (k, v) VALUES (?, ?)")
        .await
        .unwrap();
    insert.set_consistency(Consistency::Quorum);
    let mut select = session
        .prepare("SELECT v FROM q.kv WHERE k = ?")
        .await
        .unwrap();
    select.set_consistency(Consistency::Quorum);
    for k in 0..300i32 {
        session
            .execute_unpaged(&insert, (k, format!("v{k}")))
            .await
            .unwrap();
    }
    for k in 0..300i32 {
        let rows = session
            .execute_unpaged(&select, (k,))
            .await
            .unwrap()
            .into_rows_result()
            .unwrap();
        let (v,): (String,) = rows.single_row().unwrap();
        assert_eq!(v, format!("v{k}"));
    }

    // RF=1: each request's coordinator is the key's one replica.
    let insert = session
        .prepare("INSERT INTO r1.kv (k, v) VALUES (?, ?)")
        .await
        .unwrap();
    let select = session
        .prepare("SELECT v FROM r1.kv WHERE k = ?")
        .await
        .unwrap();
    let state = session.get_cluster_state();
    let mut coordinators = std::collections::BTreeSet::new();
    for k in 0..200i32 {
        let replicas = state.get_endpoints("r1", "kv", &(k,)).unwrap();
        assert_eq!(replicas.len(), 1, "key {k}");
        let replica = replicas[0].0.host_id;
        let written = session
            .execute_unpaged(&insert, (k, format!("r{k}")))
            .await
            .unwrap();
        let read = session.execute_unpaged(&select, (k,)).await.unwrap();
        for result in [&written, &read] {
            let node = result.request_coordinator().node();
            assert_eq!(
                node.host_id, replica,
                "key {k} coordinated by {}",
                node.address
            );
            coordinators.insert(node.address.ip().to_string());
        }
        let (v,): (String,) = read.into_rows_result().unwrap().single_row().unwrap();
        assert_eq!(v, format!("r{k}"));
    }
    assert_eq!(coordinators.len(), 3, "{coordinators:?}");
    drop(session);
    drop(cluster);
}

/// A session whose every connection, the control connection included, is to `ip`. Its
/// metadata tick is 1 s instead of 60 s: the driver re-reads on each tick only the keyspaces
/// that SCHEMA_CHANGE events named since the last one, so what it learns it learns from
/// events.
async fn pinned_session(cluster: &Cluster, ip: &str) -> Session {
    let addr = format!("{ip}:{}", cluster.port);
    SessionBuilder::new()
        .known_node(&addr)
        .cluster_metadata_refresh_interval(std::time::Duration::from_secs(1))
        .host_filter(std::sync::Arc::new(
            AllowListHostFilter::new([addr.as_str()]).unwrap(),
        ))
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to {ip}: {e}\n{}", cluster.logs()))
}

type SchemaView = Option<Vec<(String, Vec<String>)>>;

/// The observer's view of keyspace `ks`: `None` when it does not know the keyspace, else
/// each table with its sorted column names.
fn schema_view(session: &Session, ks: &str) -> SchemaView {
    let state = session.get_cluster_state();
    let keyspace = state.get_keyspace(ks)?;
    let mut tables: Vec<(String, Vec<String>)> = keyspace
        .tables
        .iter()
        .map(|(name, t)| {
            let mut columns: Vec<String> = t.columns.keys().cloned().collect();
            columns.sort();
            (name.clone(), columns)
        })
        .collect();
    tables.sort();
    Some(tables)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_on_one_node_sees_schema_changes_made_through_another() {
    let cluster = tokio::task::spawn_blocking(|| Cluster::up(NODES, ""))
        .await
        .unwrap();
    let observer = pinned_session(&cluster, "127.0.0.3").await;
    let writer = pinned_session(&cluster, "127.0.0.1").await;
    let cols = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let steps: Vec<(&Session, &str, SchemaView)> = vec![
        (
            &writer,
            "CREATE KEYSPACE watched WITH replication = \
             {'class': 'SimpleStrategy', 'replication_factor': 3}",
            Some(vec![]),
        ),
        (
            &writer,
            "CREATE TABLE watched.t (k int PRIMARY KEY, v text)",
            Some(vec![("t".into(), cols(&["k", "v"]))]),
        ),
        (
            &writer,
            "ALTER TABLE watched.t ADD w int",
            Some(vec![("t".into(), cols(&["k", "v", "w"]))]),
        ),
        (
            &observer,
            "CREATE TABLE watched.mine (k int PRIMARY KEY, x blob)",
            Some(vec![
                ("mine".into(), cols(&["k", "x"])),
                ("t".into(), cols(&["k", "v", "w"])),
            ]),
        ),
        (
            &writer,
            "DROP TABLE watched.t",
            Some(vec![("mine".into(), cols(&["k", "x"]))]),
        ),
        (&writer, "DROP KEYSPACE watched", None),
    ];
    for (session, statement, want) in steps {
        session
            .query_unpaged(statement, &[])
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
        let what = format!("the observer on 127.0.0.3 to see {want:?} after {statement}");
        tokio::task::block_in_place(|| {
            wait_for(&what, || {
                (schema_view(&observer, "watched") == want).then_some(())
            })
        });
    }
    drop((observer, writer));
    drop(cluster);
}
