//! Two datacenters of three nodes each (`mosaic cluster up --datacenters 2`) and a
//! `NetworkTopologyStrategy {'dc1': 2, 'dc2': 2}` keyspace, through the Rust `scylla`
//! driver: `system.peers` shows each node's datacenter; every key has two replicas in each
//! datacenter, the ones the driver's own NetworkTopologyStrategy computes (Cassandra's
//! placement); with dc2 stopped, LOCAL_QUORUM and LOCAL_ONE through a dc1 coordinator
//! succeed while QUORUM and EACH_QUORUM answer Unavailable; with one dc1 node stopped too,
//! LOCAL_QUORUM fails exactly for the keys that node replicates. `mosaic status` lists
//! the nodes by datacenter, as `nodetool status` does.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
#![allow(clippy::disallowed_methods)] // Real processes, real time.

mod common;

use std::collections::BTreeMap;

use common::cluster::Cluster;
use common::{output_text, run_mosaic, wait_for};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::host_filter::AllowListHostFilter;
use scylla::statement::Consistency;

const NODES: u32 = 6;
const KEYS: i32 = 60;

/// A session whose every connection is to `ip`: its requests are coordinated there.
async fn pinned_session(cluster: &Cluster, ip: &str) -> Session {
    let addr = format!("{ip}:{}", cluster.port);
    SessionBuilder::new()
        .known_node(&addr)
        .host_filter(std::sync::Arc::new(
            AllowListHostFilter::new([addr.as_str()]).unwrap(),
        ))
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to {ip}: {e}\n{}", cluster.logs()))
}

/// Runs `cql` with `values` at `cl`; the error's text on failure.
async fn run(
    session: &Session,
    cql: &str,
    values: (i32, String),
    cl: Consistency,
) -> Result<(), String> {
    let mut statement = scylla::statement::unprepared::Statement::new(cql);
    statement.set_consistency(cl);
    session
        .query_unpaged(statement, values)
        .await
        .map(|_| ())
        .map_err(|e| format!("{e:?}"))
}

async fn write(session: &Session, k: i32, v: &str, cl: Consistency) -> Result<(), String> {
    run(
        session,
        "INSERT INTO nts.kv (k, v) VALUES (?, ?)",
        (k, v.to_owned()),
        cl,
    )
    .await
}

async fn read(session: &Session, k: i32, cl: Consistency) -> Result<Option<String>, String> {
    let mut statement =
        scylla::statement::unprepared::Statement::new("SELECT v FROM nts.kv WHERE k = ?");
    statement.set_consistency(cl);
    let result = session
        .query_unpaged(statement, (k,))
        .await
        .map_err(|e| format!("{e:?}"))?;
    let rows = result.into_rows_result().map_err(|e| e.to_string())?;
    Ok(rows
        .maybe_first_row::<(String,)>()
        .map_err(|e| e.to_string())?
        .map(|(v,)| v))
}

fn unavailable(answer: &Result<impl std::fmt::Debug, String>) -> bool {
    matches!(answer, Err(e) if e.contains("Unavailable"))
}

/// Waits until node 1 reports exactly `down` nodes DOWN (`mosaic status`).
fn until_down(cluster: &Cluster, down: usize) {
    let host = format!("127.0.0.1:{}", cluster.admin);
    wait_for(&format!("node 1 to see {down} nodes down"), || {
        let out = run_mosaic(&["status", "--host", &host]);
        let text = output_text(&out);
        let n = text.lines().filter(|l| l.starts_with("DN ")).count();
        (out.status.success() && n == down).then_some(())
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_quorum_is_served_by_one_datacenter_and_placement_matches_the_driver() {
    let cluster = tokio::task::spawn_blocking(|| Cluster::up(NODES, "--datacenters 2"))
        .await
        .unwrap();
    let all = SessionBuilder::new()
        .known_node(format!("127.0.0.1:{}", cluster.port))
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting: {e}\n{}", cluster.logs()));
    let dcs: BTreeMap<String, String> = wait_for("the session to see six nodes", || {
        let state = all.get_cluster_state();
        let dcs: BTreeMap<String, String> = state
            .get_nodes_info()
            .iter()
            .map(|n| {
                (
                    n.address.ip().to_string(),
                    n.datacenter.clone().unwrap_or_default(),
                )
            })
            .collect();
        (dcs.len() == NODES as usize).then_some(dcs)
    });
    let expected_dc = |ip: &str| {
        if ip.as_bytes()[ip.len() - 1] <= b'3' {
            "dc1"
        } else {
            "dc2"
        }
    };
    for (ip, dc) in &dcs {
        assert_eq!(dc, expected_dc(ip), "{ip}");
    }
    // system.peers and system.local as node 1 answers them.
    let node1 = pinned_session(&cluster, "127.0.0.1").await;
    let peers = node1
        .query_unpaged("SELECT peer, data_center, rack FROM system.peers", &[])
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    let mut seen: Vec<(String, String, String)> = peers
        .rows::<(std::net::IpAddr, String, String)>()
        .unwrap()
        .map(|r| r.unwrap())
        .map(|(ip, dc, rack)| (ip.to_string(), dc, rack))
        .collect();
    seen.sort();
    let want: Vec<(String, String, String)> = (2..=NODES)
        .map(|i| {
            let ip = format!("127.0.0.{i}");
            let dc = expected_dc(&ip).to_owned();
            (ip, dc, "rack1".to_owned())
        })
        .collect();
    assert_eq!(seen, want);
    let local = node1
        .query_unpaged(
            "SELECT data_center FROM system.local WHERE key = 'local'",
            &[],
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    assert_eq!(local.single_row::<(String,)>().unwrap().0, "dc1");
    // `mosaic status`: one section per datacenter, each listing its own nodes.
    let out = run_mosaic(&["status", "--host", &format!("127.0.0.1:{}", cluster.admin)]);
    let text = output_text(&out);
    assert!(out.status.success(), "{text}");
    let sections: Vec<&str> = text.split("Datacenter: ").skip(1).collect();
    assert_eq!(sections.len(), 2, "{text}");
    for (section, dc) in sections.iter().zip(["dc1", "dc2"]) {
        assert!(section.starts_with(dc), "{text}");
        let ips: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with("UN "))
            .filter_map(|l| l.split_whitespace().nth(1)?.split(':').next())
            .collect();
        assert_eq!(ips.len(), 3, "{dc}: {text}");
        assert!(ips.iter().all(|ip| expected_dc(ip) == dc), "{text}");
    }

    all.query_unpaged(
        "CREATE KEYSPACE nts WITH replication = \
         {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}",
        &[],
    )
    .await
    .unwrap();
    all.query_unpaged("CREATE TABLE nts.kv (k int PRIMARY KEY, v text)", &[])
        .await
        .unwrap();
    all.await_schema_agreement().await.unwrap();
    all.refresh_metadata().await.unwrap();

    // The driver's placement (Cassandra's NetworkTopologyStrategy): two per datacenter.
    let state = all.get_cluster_state();
    let mut dc1_replicas: Vec<Vec<String>> = Vec::new();
    for k in 0..KEYS {
        let replicas = state.get_endpoints("nts", "kv", &(k,)).unwrap();
        let ips: Vec<String> = replicas
            .iter()
            .map(|(n, _)| n.address.ip().to_string())
            .collect();
        assert_eq!(ips.len(), 4, "key {k}: {ips:?}");
        let in_dc1: Vec<String> = ips
            .iter()
            .filter(|ip| expected_dc(ip) == "dc1")
            .cloned()
            .collect();
        assert_eq!(in_dc1.len(), 2, "key {k}: {ips:?}");
        dc1_replicas.push(in_dc1);
        write(&node1, k, &format!("v{k}"), Consistency::All)
            .await
            .unwrap_or_else(|e| panic!("key {k} at ALL: {e}"));
    }
    drop(all);

    // dc2 stops: a dc1 coordinator serves the LOCAL levels alone.
    for i in 4..=NODES {
        cluster.stop(i);
    }
    until_down(&cluster, 3);
    for k in 0..KEYS {
        let v = format!("w{k}");
        write(&node1, k, &v, Consistency::LocalQuorum)
            .await
            .unwrap_or_else(|e| panic!("key {k} at LOCAL_QUORUM: {e}"));
        assert_eq!(
            read(&node1, k, Consistency::LocalQuorum).await,
            Ok(Some(v.clone())),
            "key {k}"
        );
        assert_eq!(
            read(&node1, k, Consistency::LocalOne).await,
            Ok(Some(v)),
            "key {k}"
        );
        for cl in [Consistency::Quorum, Consistency::EachQuorum] {
            let w = write(&node1, k, "refused", cl).await;
            assert!(unavailable(&w), "key {k} write at {cl:?}: {w:?}");
            let r = read(&node1, k, cl).await;
            assert!(unavailable(&r), "key {k} read at {cl:?}: {r:?}");
        }
    }

    // Node 3 (dc1) stops too: LOCAL_QUORUM now fails exactly for the keys it replicates,
    // as the driver placed them.
    cluster.stop(3);
    until_down(&cluster, 4);
    let mut outcomes = [0usize; 2];
    for k in 0..KEYS {
        let on_node_3 = dc1_replicas[k as usize].iter().any(|ip| ip == "127.0.0.3");
        let w = write(&node1, k, &format!("x{k}"), Consistency::LocalQuorum).await;
        if on_node_3 {
            assert!(
                unavailable(&w),
                "key {k} (replicas {:?}): {w:?}",
                dc1_replicas[k as usize]
            );
        } else {
            assert_eq!(
                w,
                Ok(()),
                "key {k} (replicas {:?})",
                dc1_replicas[k as usize]
            );
            assert_eq!(
                read(&node1, k, Consistency::LocalQuorum).await,
                Ok(Some(format!("x{k}")))
            );
        }
        outcomes[usize::from(on_node_3)] += 1;
    }
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
    drop(node1);
    drop(cluster);
}
