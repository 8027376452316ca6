use super::*;
use mosaic_erasure::meta::ShardMeta;
use mosaic_erasure::Codec;
use mosaic_lsm::{Db, Options};
use mosaic_types::HostId;

/// The one table file a flush of `rows` (`(key, ts, Some(value) | None for a delete)`)
/// writes.
fn table_bytes(rows: &[(&str, u64, Option<&str>)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for (k, ts, v) in rows {
        match v {
            Some(v) => db.put(k.as_bytes(), *ts, v.as_bytes()).unwrap(),
            None => db.delete(k.as_bytes(), *ts).unwrap(),
        }
    }
    db.flush().unwrap();
    let id = db.levels()[0].tables[0].id;
    let bytes = std::fs::read(db.table_file_path(id)).unwrap();
    db.close().unwrap();
    bytes
}

fn group(data: &[&[u8]]) -> (EcMeta, Vec<Vec<u8>>) {
    let codec = Codec::with_stripe(2, 3, 4096).unwrap();
    let parity = codec.encode(data).unwrap();
    let coded_len = parity[0].len() as u64;
    let shards = data
        .iter()
        .copied()
        .chain(parity.iter().map(Vec::as_slice))
        .enumerate()
        .map(|(i, content)| ShardMeta {
            hash: EcMeta::content_hash(content),
            size: content.len() as u64,
            node: HostId([i as u8; 16]),
            position: i as u8,
        })
        .collect();
    let meta = EcMeta {
        group: [1; 16],
        epoch: 4,
        k: 2,
        n: 3,
        stripe_bytes: 4096,
        coded_len,
        shards,
    };
    (meta, parity)
}

/// `rows` as `(key, ts, Some(value) | None for a delete)` of keys `key00000…`.
fn sample_rows(count: usize) -> Vec<(String, u64, Option<String>)> {
    (0..count)
        .map(|i| {
            let v = (i % 10 != 3).then(|| format!("value-{i}-{}", "z".repeat(i % 50)));
            (format!("key{i:05}"), 100 + i as u64, v)
        })
        .collect()
}

fn flushed(rows: &[(String, u64, Option<String>)]) -> Vec<u8> {
    let borrowed: Vec<(&str, u64, Option<&str>)> = rows
        .iter()
        .map(|(k, ts, v)| (k.as_str(), *ts, v.as_deref()))
        .collect();
    table_bytes(&borrowed)
}

fn live(rows: &[(String, u64, Option<String>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    rows.iter()
        .filter_map(|(k, _, v)| {
            v.as_ref()
                .map(|v| (k.clone().into_bytes(), v.clone().into_bytes()))
        })
        .collect()
}

/// Span `span` of each shard, as its node answers a ranged read.
fn serve(span: &Range<u64>, shards: &[(u8, &[u8])]) -> Vec<(u8, Vec<u8>)> {
    shards
        .iter()
        .map(|(pos, bytes)| {
            let end = (span.end as usize).min(bytes.len());
            let start = (span.start as usize).min(end);
            (*pos, bytes[start..end].to_vec())
        })
        .collect()
}

/// Reads `bounds` of `lost`, decoding what it asks for from `shards`; the rows and the
/// rounds it took.
fn read_all_the_way(
    meta: &EcMeta,
    lost: &LostTable,
    shards: &[(u8, &[u8])],
    (start, end): (Bound<&[u8]>, Bound<&[u8]>),
    limit: usize,
) -> (Rows, usize) {
    for round in 0..100 {
        match lost.read(None, start, end, limit).unwrap() {
            LostRead::Rows(rows, done) => return ((rows, done), round),
            LostRead::Need(span) => lost
                .add(meta, 0, span.clone(), &serve(&span, shards))
                .unwrap(),
        }
    }
    panic!("the read never completed");
}

#[test]
fn a_lost_table_is_rebuilt_whole_from_the_others_and_read_like_the_engine_reads_it() {
    let rows = sample_rows(2000);
    let lost = flushed(&rows);
    let other = table_bytes(&[("zz", 1, Some("other node's table"))]);
    let (meta, parity) = group(&[&lost, &other]);
    assert!(lost.len() > 4096 * 3, "several stripes");

    let rebuilt = decode(&meta, 0, &[(1, other.clone()), (2, parity[0].clone())]).unwrap();
    assert_eq!(rebuilt, lost);
    // The other data slot from the lost one and parity; an empty slot is no bytes.
    assert_eq!(
        decode(&meta, 1, &[(0, lost.clone()), (2, parity[0].clone())]).unwrap(),
        other
    );
    let (empty_meta, empty_parity) = group(&[&lost, &[]]);
    assert_eq!(
        decode(
            &empty_meta,
            0,
            &[(1, Vec::new()), (2, empty_parity[0].clone())]
        )
        .unwrap(),
        lost
    );
    // A parity shard of another epoch rebuilds other bytes: refused by the hash.
    let mut stale = parity[0].clone();
    stale[10] ^= 1;
    let err = decode(&meta, 0, &[(1, other.clone()), (2, stale)]).unwrap_err();
    assert!(err.to_string().contains("hash"), "{err}");
    assert!(
        decode(&meta, 0, &[(1, other.clone())]).is_err(),
        "too few shards"
    );

    let table = open_whole(rebuilt).unwrap();
    let (all, done) = read_rows(&table, None, Bound::Unbounded, Bound::Unbounded, 10_000).unwrap();
    assert!(done);
    assert_eq!(all, live(&rows));
    let (some, done) = read_rows(
        &table,
        None,
        Bound::Excluded(b"key00010"),
        Bound::Excluded(b"key00020"),
        5,
    )
    .unwrap();
    assert!(!done);
    let keys: Vec<&[u8]> = some.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(
        keys,
        [
            &b"key00011"[..],
            b"key00012",
            b"key00014",
            b"key00015",
            b"key00016"
        ]
    );
    let (rest, done) = read_rows(
        &table,
        None,
        Bound::Included(b"key00017"),
        Bound::Excluded(b"key00020"),
        5,
    )
    .unwrap();
    assert!(done);
    assert_eq!(rest.len(), 3);
}

#[test]
fn a_point_read_decodes_only_the_stripes_it_touches() {
    let rows = sample_rows(30_000);
    let lost = flushed(&rows);
    let other = table_bytes(&[("zz", 1, Some("other node's table"))]);
    let (meta, parity) = group(&[&lost, &other]);
    let stripes = lost.len().div_ceil(4096);
    assert!(stripes > 100, "{stripes} stripes");
    let shards: [(u8, &[u8]); 2] = [(1, &other), (2, &parity[0])];
    let table = LostTable::new(lost.len() as u64, 4096);

    let key = b"key12345".as_slice();
    let ((got, _), rounds) = read_all_the_way(
        &meta,
        &table,
        &shards,
        (Bound::Included(key), Bound::Included(key)),
        10,
    );
    let want = rows[12345].2.clone().unwrap().into_bytes();
    assert_eq!(got, vec![(key.to_vec(), want)]);
    assert!(rounds <= 4, "{rounds} rounds");
    // The table's metadata (filter, index, properties, footer) and the key's block.
    let metadata = lost.len() as u64 - open_whole(lost.clone()).unwrap().data_end();
    let decoded = table.decoded_bytes();
    assert!(
        decoded <= metadata + 3 * 4096 && decoded < lost.len() as u64 / 10,
        "a point read decoded {decoded} of {} bytes ({metadata} of metadata)",
        lost.len()
    );
    // A key read before reads again without decoding anything.
    assert!(matches!(
        table
            .read(None, Bound::Included(key), Bound::Included(key), 10)
            .unwrap(),
        LostRead::Rows(..)
    ));

    // A scan gets everything, decoding each stripe once.
    let ((all, done), _) = read_all_the_way(
        &meta,
        &table,
        &shards,
        (Bound::Unbounded, Bound::Unbounded),
        usize::MAX,
    );
    assert!(done);
    assert_eq!(all, live(&rows));
    assert_eq!(table.decoded_bytes(), lost.len() as u64);
}

#[test]
fn decoding_ahead_walks_the_stripes_no_read_decoded_until_the_table_is_whole() {
    let rows = sample_rows(10_000);
    let lost = flushed(&rows);
    let other = table_bytes(&[("zz", 1, Some("other node's table"))]);
    let (meta, parity) = group(&[&lost, &other]);
    let shards: [(u8, &[u8]); 2] = [(1, &other), (2, &parity[0])];
    let table = LostTable::new(lost.len() as u64, 4096);
    // Nothing decoded: the first span starts at the start, at most `max` bytes of whole
    // stripes (at least one stripe however small `max` is).
    assert_eq!(table.next_missing(0, 3 * 4096), Some(0..3 * 4096));
    assert_eq!(table.next_missing(5000, 1), Some(4096..2 * 4096));
    // A point read decodes a few stripes; the spans ahead skip them.
    let key = b"key05000".as_slice();
    read_all_the_way(
        &meta,
        &table,
        &shards,
        (Bound::Included(key), Bound::Included(key)),
        1,
    );
    let read = table.decoded_bytes();
    let (mut from, mut spans) = (0, 0);
    while let Some(span) = table.next_missing(from, 8 * 4096) {
        assert!(
            span.start >= from && span.end - span.start <= 8 * 4096,
            "{span:?}"
        );
        from = span.end;
        table
            .add(&meta, 0, span.clone(), &serve(&span, &shards))
            .unwrap();
        spans += 1;
    }
    assert_eq!(table.decoded_bytes(), lost.len() as u64);
    assert!(
        spans > 1 && read < lost.len() as u64 / 4,
        "{spans} spans, {read} bytes read"
    );
    assert_eq!(table.next_missing(0, 4096), None);
    // Every row reads without another stripe; bounds holding no key read nothing.
    assert!(matches!(
        table.read(None, Bound::Unbounded, Bound::Unbounded, usize::MAX).unwrap(),
        LostRead::Rows(r, true) if r == live(&rows)
    ));
    let empty = LostTable::new(lost.len() as u64, 4096);
    assert!(matches!(
        empty.read(None, Bound::Included(b"b"), Bound::Excluded(b"a"), 10).unwrap(),
        LostRead::Rows(r, true) if r.is_empty()
    ));
    assert_eq!(empty.decoded_bytes(), 0);
}

#[test]
fn stripes_decoded_from_a_shard_of_another_epoch_are_caught_by_the_block_checksums() {
    let rows = sample_rows(3000);
    let lost = flushed(&rows);
    let other = table_bytes(&[("zz", 1, Some("other node's table"))]);
    let (meta, parity) = group(&[&lost, &other]);
    let mut stale = parity[0].clone();
    stale.iter_mut().for_each(|b| *b ^= 0x5a);
    let shards: [(u8, &[u8]); 2] = [(1, &other), (2, &stale)];
    let table = LostTable::new(lost.len() as u64, 4096);
    let mut failed = None;
    for _ in 0..100 {
        match table.read(None, Bound::Unbounded, Bound::Unbounded, usize::MAX) {
            Ok(LostRead::Need(span)) => table
                .add(&meta, 0, span.clone(), &serve(&span, &shards))
                .unwrap(),
            Ok(LostRead::Rows(..)) => panic!("read rows decoded from a stale shard"),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    assert!(failed.is_some(), "the stale stripes were never refused");
    // Spans that are not whole stripes of the table are refused.
    let fresh = LostTable::new(lost.len() as u64, 4096);
    let good = [(1u8, &other[..]), (2, &parity[0][..])];
    assert!(fresh
        .add(&meta, 0, 100..4096, &serve(&(100..4096), &good))
        .is_err());
    assert!(fresh.add(&meta, 0, 0..0, &[]).is_err());
    let past = fresh.coded_end() + 4096;
    assert!(fresh
        .add(&meta, 0, 0..past, &serve(&(0..past), &good))
        .is_err());
}

#[test]
fn the_cache_keeps_the_most_recently_used_tables_within_its_bytes() {
    let shard = table_bytes(&[("a", 1, Some("x"))]);
    let other = table_bytes(&[("b", 1, Some("y"))]);
    let (meta, parity) = group(&[&shard, &other]);
    let size = shard.len() as u64;
    let shards: [(u8, &[u8]); 2] = [(1, &other), (2, &parity[0])];
    let cache = DecodedTables::new(2 * size);
    let fill = |hash: [u8; 32]| {
        let t = cache.table(&hash, size, 4096);
        read_all_the_way(&meta, &t, &shards, (Bound::Unbounded, Bound::Unbounded), 10);
        cache.trim();
    };
    fill([1; 32]);
    fill([2; 32]);
    cache.table(&[1; 32], size, 4096);
    fill([3; 32]);
    assert!(!cache.holds(&[2; 32]), "least recently used goes first");
    assert!(cache.holds(&[1; 32]) && cache.holds(&[3; 32]));
    assert_eq!(cache.table(&[1; 32], size, 4096).decoded_bytes(), size);
    cache.forget(&[1; 32]);
    assert!(!cache.holds(&[1; 32]));
}
