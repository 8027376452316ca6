//! Replica filtering protection re-reads only what the replicas disagreed on (as
//! Cassandra's `ReplicaFilteringProtection`): two real nodes behind one coordinator, an
//! index read at QUORUM. When both nodes answer alike there is no second read; when one
//! missed an overwrite or a deletion, the rows it still returns for the old value are read
//! again, whole, and the answer is right.

use std::sync::atomic::Ordering;

use mosaic_cql::frame::{Consistency, Response, ResultBody};

use super::collection_model_tests::{run_cql_at, Harness};

/// Runs `cql` at `consistency`: its rows (as `(k, c)`, sorted) and the reads it asked of
/// the coordinator.
fn select(h: &mut Harness, cql: &str, consistency: Consistency) -> (Vec<(i32, i32)>, usize) {
    let before = h.cluster.reads.load(Ordering::SeqCst);
    let Harness {
        rt,
        processor,
        session,
        ..
    } = h;
    let response = rt.block_on(run_cql_at(processor, session, cql, consistency));
    let Response::Result(ResultBody::Rows(rows)) = &response else {
        panic!("{cql}: {response:?}");
    };
    let int = |b: Option<&[u8]>| i32::from_be_bytes(b.expect("a key").try_into().expect("an int"));
    let mut got: Vec<(i32, i32)> = rows
        .rows
        .iter()
        .map(|r| (int(r[0].as_deref()), int(r[1].as_deref())))
        .collect();
    got.sort_unstable();
    (got, h.cluster.reads.load(Ordering::SeqCst) - before)
}

fn exec(h: &mut Harness, cql: &str, nodes: u8) {
    h.cluster.write_mask.store(nodes, Ordering::SeqCst);
    let Harness {
        rt,
        processor,
        session,
        ..
    } = h;
    let response = rt.block_on(run_cql_at(processor, session, cql, Consistency::All));
    assert!(
        !matches!(response, Response::Error(_)),
        "{cql}: {response:?}"
    );
    h.cluster.write_mask.store(0b11, Ordering::SeqCst);
}

#[test]
fn index_reads_at_quorum_re_read_only_the_rows_replicas_disagree_on() {
    let mut h = Harness::new();
    exec(
        &mut h,
        "CREATE TABLE ks.rfp (k int, c int, v int, PRIMARY KEY (k, c))",
        0b11,
    );
    exec(&mut h, "CREATE INDEX rfp_v ON ks.rfp (v)", 0b11);
    // The table was empty: its index is built at once, or within the bound.
    let built = |h: &Harness| {
        h.cluster.all().iter().all(|n| {
            n.built_index_names()
                .iter()
                .any(|(_, name)| name == "rfp_v")
        })
    };
    for _ in 0..200 {
        if built(&h) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(built(&h), "the index is built on both nodes");
    let mut want = Vec::new();
    for k in 0..4 {
        for c in 0..3 {
            let v = (k + c) % 2;
            exec(
                &mut h,
                &format!("INSERT INTO ks.rfp (k, c, v) VALUES ({k}, {c}, {v})"),
                0b11,
            );
            if v == 0 {
                want.push((k, c));
            }
        }
    }
    let query = "SELECT k, c FROM ks.rfp WHERE v = 0";

    // Consistent replicas: QUORUM asks no more reads than ONE (which never protects).
    let (one, one_reads) = select(&mut h, query, Consistency::One);
    let (quorum, quorum_reads) = select(&mut h, query, Consistency::Quorum);
    assert_eq!(one, want);
    assert_eq!(quorum, want);
    assert_eq!(
        quorum_reads, one_reads,
        "no row is read again when every replica answered alike"
    );

    // Node 1 alone takes an overwrite of (0, 0)'s value and a deletion of (1, 1): node 0
    // still returns both for v = 0, node 1 neither.
    exec(
        &mut h,
        "UPDATE ks.rfp SET v = 1 WHERE k = 0 AND c = 0",
        0b10,
    );
    exec(&mut h, "DELETE FROM ks.rfp WHERE k = 1 AND c = 1", 0b10);
    want.retain(|row| *row != (0, 0) && *row != (1, 1));
    let (quorum, disputed_reads) = select(&mut h, query, Consistency::Quorum);
    assert_eq!(
        quorum, want,
        "rows a replica missed the change of are not returned"
    );
    // Each disputed row is read again (with its partition's head), the rest are not.
    assert!(
        disputed_reads > quorum_reads && disputed_reads <= quorum_reads + 2 * 2,
        "{disputed_reads} reads, {quorum_reads} without disputes"
    );
}
