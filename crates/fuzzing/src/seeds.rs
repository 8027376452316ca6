//! Valid inputs for each target, built with the crates' own encoders, so mutations start
//! from bytes that pass the outer checks (frame headers, checksums) and reach the inner
//! decoders.

use std::net::SocketAddr;

use mosaic_cluster::message::{encode_frame, Body, Envelope, PROTOCOL_VERSION};
use mosaic_lsm::{Db, Options};

/// The seed inputs of target `name` (empty for an unknown name).
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    match name {
        "cql_frame" => cql_frames(),
        "cql_segments" => cql_segments(),
        "cql_parser" => CQL.iter().map(|s| s.as_bytes().to_vec()).collect(),
        // A type selector (an index into `cql_json::TYPES`), then JSON text.
        "cql_json" => JSON
            .iter()
            .map(|(ty, text)| [&[*ty][..], text.as_bytes()].concat())
            .collect(),
        "cql_statements" => CQL
            .iter()
            .map(|s| [&[3u8, 1, 2, 3][..], s.as_bytes()].concat())
            .collect(),
        "cql_values" => VALUES
            .iter()
            .map(|(selector, json)| {
                let ty = crate::cql_values::type_at(*selector);
                let value = mosaic_cql::processor::decode_json_text(json, &ty)
                    .unwrap()
                    .unwrap();
                [&[*selector][..], &value.to_cql_bytes()].concat()
            })
            .collect(),
        "internode_frame" => internode_frames(),
        "sasl_plain" => [
            &b"\0cassandra\0cassandra"[..],
            b"authz\0bob\0pw",
            b"bob\0pw",
            b"\0\0",
            b"\0u\0p\0",
        ]
        .iter()
        .map(|s| s.to_vec())
        .collect(),
        "row_decoders" => vec![
            vec![0, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7],
            vec![0x81, 1, b'a', 0, 0, 0, 0, 2],
            // After the selector: a clustering filter (any; in {[1], [2, 3]}; (0, ∞)), …
            [&[0u8][..], &clustering_filter()].concat(),
            // … and replica orders.
            [&[0u8][..], b"(b, c, a), (\"Q\", a)"].concat(),
        ],
        // An odd first byte makes the target write a valid table from the rest.
        "table_reader" => vec![
            (0u8..=255).collect(),
            [&[1u8][..], b"keys and values for a small table"].concat(),
            partitioned_table(),
        ],
        "wal_reader" => engine_files(),
        _ => Vec::new(),
    }
}

/// A structured `table_reader` input whose table has a partitioned index and filter: the
/// length's top bit set, 16-byte blocks, sixty entries, so partitions are cut.
fn partitioned_table() -> Vec<u8> {
    let mut out = vec![1u8, 0xff, 0xff];
    for i in 0..60u32 {
        let key = format!("key{i:03}");
        out.push(key.len() as u8);
        out.extend_from_slice(key.as_bytes());
        out.push(2);
        out.extend_from_slice(b"value-of");
    }
    out
}

/// A clustering filter's bytes with one column of each kind.
fn clustering_filter() -> Vec<u8> {
    use mosaic_rows::{ClusteringFilter, ColumnFilter};
    use std::ops::Bound;
    ClusteringFilter {
        columns: vec![
            ColumnFilter::Any,
            ColumnFilter::one_of(vec![vec![2, 3], vec![1]]),
            ColumnFilter::Range {
                lo: Bound::Excluded(vec![0]),
                hi: Bound::Unbounded,
            },
        ],
    }
    .encode()
}

const CQL: [&str; 18] = [
    "SELECT * FROM t WHERE k = 1",
    "INSERT INTO c (k, c1, c2, s, v) VALUES (1, 2, 'x', 3, 0x00) USING TTL 10",
    "UPDATE t SET v = 'b' WHERE k IN (1, 2)",
    "SELECT k, count(*) FROM c WHERE k = 1 AND (c1, c2) > (1, 'a') ORDER BY c1 ASC LIMIT 3",
    "BEGIN BATCH INSERT INTO t (k, v) VALUES (?, ?); DELETE FROM t WHERE k = 2; APPLY BATCH",
    "CREATE TABLE x (a int, b text, PRIMARY KEY (a, b)) WITH CLUSTERING ORDER BY (b DESC)",
    r#"INSERT INTO c JSON '{"k": 1, "c1": "2", "c2": "x", "s": 3, "v": "0x00"}' DEFAULT UNSET USING TTL 5"#,
    r#"SELECT JSON k, toJson(v), writetime(v) FROM t WHERE k IN (fromJson('1'), 2)"#,
    "UPDATE t SET v = ? WHERE k = 1 IF v IN ? AND m['a'] = 1 AND u.f > 2 AND s CONTAINS KEY ?",
    "INSERT INTO t (k, v) VALUES (1, 2) IF NOT EXISTS USING TTL 5",
    "BEGIN BATCH INSERT INTO t (k, c) VALUES (1, 1) IF NOT EXISTS; DELETE FROM t WHERE k = 1 AND c = 2 IF EXISTS; APPLY BATCH",
    "CREATE TABLE pc (k int, ck int, s counter STATIC, c counter, PRIMARY KEY (k, ck))",
    "UPDATE pc SET c = c + 1, s -= ?, c += ? WHERE k IN (1, 2) AND ck = 3",
    "BEGIN COUNTER BATCH UPDATE pc SET c = c - 5 WHERE k = 1 AND ck = 2; DELETE c FROM pc WHERE k = 1 AND ck = 3; APPLY BATCH",
    "CREATE ROLE IF NOT EXISTS 'Bob' WITH PASSWORD = 'p''w' AND LOGIN = true AND SUPERUSER = false",
    "GRANT ALL PERMISSIONS ON KEYSPACE ks TO bob; REVOKE MODIFY ON ks.t FROM \"Bob\"",
    "LIST SELECT ON TABLE t OF bob NORECURSIVE; LIST ROLES OF bob; LIST USERS",
    "CREATE USER u WITH PASSWORD 'x' NOSUPERUSER; ALTER USER u SUPERUSER; DROP USER IF EXISTS u; GRANT a TO b",
];

/// Values for `cql_values` (as JSON, serialized by the seeds), each with the index of its
/// type in `cql_values::TYPES`.
const VALUES: [(u8, &str); 14] = [
    (0, "[1, 2, 3]"),
    (1, r#"["a", "b"]"#),
    (2, r#"{"1": "x", "2": "y"}"#),
    (3, r#"{"[\"0x01\"]": true}"#),
    (4, r#"[{"127.0.0.1": "08:00:00"}]"#),
    (5, r#"[1, "t", [3, 4]]"#),
    (
        6,
        r#"["1h2m", ["2020-01-02", "d2177dd0-eaa2-11de-a572-001b779c76e3"]]"#,
    ),
    (7, r#"[["::1", 12345678901234567890, 1.5]]"#),
    (8, r#""10.0.0.1""#),
    (9, r#""12:34:56.789""#),
    (10, r#""-1y2mo3d4h""#),
    (11, r#"["2020-01-02 03:04:05.000Z"]"#),
    (12, r#"{"street": "main", "zip": 7, "tags": ["x"]}"#),
    (
        13,
        r#"{"name": "n", "addr": {"street": "s", "zip": 1, "tags": []}, "seen": ["1d"]}"#,
    ),
];

/// JSON texts for `cql_json`, each with the index of a type it is a value of.
const JSON: [(u8, &str); 9] = [
    (0, "\"12\""),
    (4, "123456789012345678901234567890"),
    (8, "\"0xcafe\""),
    (13, "[1, \"2\", 3]"),
    (15, "{\"1\": \"a\", \"02\": \"b\"}"),
    (16, "{\"[\\\"0x01\\\"]\": true}"),
    (17, "[1, null, \"[3, 4]\"]"),
    (18, "1.10"),
    (21, "\"2024-01-02 03:04:05.678Z\""),
];

/// A v4 request frame: header (version, flags, stream, opcode, length) and body.
fn request(opcode: u8, body: &[u8]) -> Vec<u8> {
    let mut f = vec![0x04, 0x00, 0x00, 0x01, opcode];
    f.extend_from_slice(&(body.len() as u32).to_be_bytes());
    f.extend_from_slice(body);
    f
}

fn cql_frames() -> Vec<Vec<u8>> {
    let mut startup = vec![0, 1];
    for s in ["CQL_VERSION", "3.0.0"] {
        startup.extend_from_slice(&(s.len() as u16).to_be_bytes());
        startup.extend_from_slice(s.as_bytes());
    }
    let q = CQL[0].as_bytes();
    let mut query = (q.len() as u32).to_be_bytes().to_vec();
    query.extend_from_slice(q);
    query.extend_from_slice(&[0x00, 0x01, 0x00]); // consistency ONE, no flags
    let mut stream = request(0x01, &startup);
    stream.extend(request(0x07, &query));
    stream.extend(request(0x05, &[])); // OPTIONS
                                       // The first byte is the target's selector.
    vec![
        [&[0u8][..], &stream].concat(),
        [&[7u8][..], &stream].concat(),
    ]
}

/// v5 frames in segments: the v4 seed stream's frames as v5, packed by the server's own
/// writer, plain (even selector) and LZ4 (odd), plus a frame large enough to span segments.
fn cql_segments() -> Vec<Vec<u8>> {
    use mosaic_cql::frame::{Compression, SegmentWriter};
    let mut frames = cql_frames().swap_remove(0);
    frames.remove(0); // the selector
                      // Every frame of the v4 stream starts with version 4 at a frame boundary: make it 5.
    let mut at = 0;
    while at + 9 <= frames.len() {
        frames[at] = 0x05;
        let len = u32::from_be_bytes([
            frames[at + 5],
            frames[at + 6],
            frames[at + 7],
            frames[at + 8],
        ]);
        at += 9 + len as usize;
    }
    let large = request(0x05, &vec![b'x'; 140_000]);
    let mut seeds = Vec::new();
    for (selector, compression) in [(0u8, None), (1u8, Some(Compression::Lz4))] {
        for payload in [&frames, &large] {
            let mut writer = SegmentWriter::new(compression);
            let mut wire = bytes::BytesMut::new();
            writer.push_frame(&mut wire, payload);
            writer.seal(&mut wire);
            seeds.push([&[selector][..], &wire].concat());
        }
    }
    seeds
}

fn internode_frames() -> Vec<Vec<u8>> {
    let from: SocketAddr = ([127, 0, 0, 1], 7000).into();
    let bodies = [
        Body::WriteAck,
        Body::ReadData {
            entries: vec![(b"key".to_vec(), b"fragment".to_vec())],
            exhausted: true,
        },
    ];
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            encode_frame(&Envelope {
                version: PROTOCOL_VERSION,
                from,
                id: i as u64,
                body,
            })
        })
        .collect()
}

/// The write-ahead log and manifest of a small database.
fn engine_files() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in 0u32..20 {
        db.put(&i.to_be_bytes(), u64::from(i), b"value").unwrap();
    }
    db.delete(&3u32.to_be_bytes(), 100).unwrap();
    db.close().unwrap();
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_name()?.to_str()?.to_owned();
            (name.ends_with(".log") || name.starts_with("MANIFEST-"))
                .then(|| std::fs::read(&path).ok())
                .flatten()
        })
        .collect();
    files.sort();
    files
}
