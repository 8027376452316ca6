//! Scenario: bytes from disk or peers may be anything. Every decoder of the row layer
//! returns an error instead of panicking, and whatever it accepts is canonical (encoding
//! the decoded value gives back the same bytes).

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use mosaic_lsm::{MergeOperator, PurgeContext, Resolved, ValueKind, Version};
use mosaic_rows::{
    decode_component, encode_component, resolve_partition, Cell, ColumnId, ComplexColumn,
    DecodedKey, DeletionTime, Expiry, Fragment, FragmentKind, KeyEntry, KeySchema, Liveness, Order,
    RowMerge,
};
use mosaic_types::{CqlType, CqlValue, Timestamp, Token};
use proptest::prelude::*;

fn any_type() -> impl Strategy<Value = CqlType> {
    proptest::sample::select(CqlType::ALL.to_vec())
}

fn any_order() -> impl Strategy<Value = Order> {
    prop_oneof![Just(Order::Asc), Just(Order::Desc)]
}

fn schema() -> impl Strategy<Value = KeySchema> {
    (
        proptest::collection::vec(any_type(), 1..3),
        proptest::collection::vec((any_type(), any_order()), 0..3),
    )
        .prop_map(|(p, c)| KeySchema::new(p, c).expect("non-empty partition key"))
}

/// Arbitrary bytes, or bytes that start like a real encoding of `ty` (so decoding gets
/// past the first byte).
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![Just(0u8), Just(0xffu8), Just(0x80u8), 0u8..8, any::<u8>()],
        0..48,
    )
}

/// A mutation of valid bytes: flip, drop, insert or truncate.
#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Remove(usize),
    Insert(usize, u8),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        any::<usize>().prop_map(Mutation::Remove),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let len = bytes.len();
        match *m {
            Mutation::Flip(i, x) if len > 0 => bytes[i % len] ^= x,
            Mutation::Remove(i) if len > 0 => {
                bytes.remove(i % len);
            }
            Mutation::Insert(i, b) => bytes.insert(i % (len + 1), b),
            Mutation::Truncate(i) => bytes.truncate(i % (len + 1)),
            _ => {}
        }
    }
    bytes
}

fn fragment() -> impl Strategy<Value = Fragment> {
    let ts = prop_oneof![any::<i64>(), 0i64..10].prop_map(Timestamp);
    let expiry =
        (1u32..=u32::MAX, any::<i64>()).prop_map(|(ttl_secs, local_expiration_secs)| Expiry {
            ttl_secs,
            local_expiration_secs,
        });
    let cell = prop_oneof![
        (
            ts.clone(),
            proptest::collection::vec(any::<u8>(), 0..6),
            proptest::option::of(expiry.clone())
        )
            .prop_map(|(ts, value, expiry)| Cell::Live { ts, value, expiry }),
        (ts.clone(), any::<i64>()).prop_map(|(ts, l)| Cell::Tombstone {
            ts,
            local_deletion_secs: l
        }),
    ];
    (
        prop_oneof![
            Just(FragmentKind::Row),
            Just(FragmentKind::Static),
            Just(FragmentKind::Partition),
            Just(FragmentKind::RangeTombstone)
        ],
        proptest::option::of((ts.clone(), proptest::option::of(expiry))),
        proptest::option::of((ts.clone(), any::<i64>())),
        proptest::collection::btree_map(
            prop_oneof![0u32..8, any::<u32>()].prop_map(ColumnId),
            cell.clone(),
            0..4,
        ),
        proptest::collection::btree_map(
            prop_oneof![0u32..8, any::<u32>()].prop_map(ColumnId),
            (
                proptest::option::of((ts.clone(), any::<i64>())),
                proptest::collection::btree_map(
                    proptest::collection::vec(any::<u8>(), 0..5),
                    cell,
                    0..3,
                ),
            )
                .prop_map(|(deletion, cells)| ComplexColumn {
                    deletion: deletion.map(|(ts, l)| DeletionTime {
                        marked_for_delete_at: ts,
                        local_deletion_secs: l,
                    }),
                    cells,
                })
                .prop_filter("non-empty", |c| !c.is_empty()),
            0..3,
        ),
    )
        .prop_map(|(kind, liveness, deletion, cells, complex)| Fragment {
            kind,
            liveness: liveness.map(|(ts, expiry)| Liveness { ts, expiry }),
            deletion: deletion.map(|(ts, l)| DeletionTime {
                marked_for_delete_at: ts,
                local_deletion_secs: l,
            }),
            cells,
            complex,
        })
}

fn check_fragment_bytes(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(f) = Fragment::decode(bytes) {
        prop_assert_eq!(f.encode(), bytes);
    }
    Ok(())
}

/// Builds the key a decoded key came from.
fn rebuild(schema: &KeySchema, d: &DecodedKey) -> Vec<u8> {
    let p = schema
        .partition_prefix_with_token(d.token, &d.partition_key)
        .expect("decoded values fit the schema");
    match &d.entry {
        KeyEntry::PartitionHeader => schema.partition_header_key(&p),
        KeyEntry::RangeTombstone { start, end } => {
            schema.range_tombstone_key(&p, start, end).expect("ordered")
        }
        KeyEntry::Static => schema.static_key(&p),
        KeyEntry::Row(values) => schema.row_key(&p, values).expect("fits"),
        KeyEntry::Bound(bound) => schema.bound_key(&p, bound).expect("fits"),
        KeyEntry::PartitionEnd => schema.partition_range(&p).end.expect("bounded"),
    }
}

fn check_key_bytes(schema: &KeySchema, bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(d) = schema.decode_key(bytes) {
        prop_assert_eq!(rebuild(schema, &d), bytes);
    }
    Ok(())
}

/// A valid key of `schema`, from a template of simple values (all types).
fn valid_key(schema: &KeySchema, seed: u64, shape: u8) -> Option<Vec<u8>> {
    let value = |ty: CqlType, i: u64| -> CqlValue {
        let n = (seed.wrapping_mul(i + 7) % 5) as i64 - 2;
        let bytes = match ty {
            CqlType::Ascii | CqlType::Text | CqlType::Blob => vec![b'a'; n.unsigned_abs() as usize],
            CqlType::Boolean => vec![(n > 0) as u8],
            CqlType::Varint => vec![n as u8],
            CqlType::Decimal => vec![0, 0, 0, n as u8, n as u8],
            CqlType::TimeUuid => {
                let mut u = vec![n as u8; 16];
                u[6] = 0x10;
                u
            }
            CqlType::Inet => vec![n as u8; if n > 0 { 16 } else { 4 }],
            CqlType::Time => (n.unsigned_abs() as i64).to_be_bytes().to_vec(),
            // Zig-zag: months n, days 0, nanoseconds n.
            CqlType::Duration => {
                let z = ((n << 1) ^ (n >> 63)) as u8;
                vec![z, 0, z]
            }
            other => vec![n as u8; other.fixed_len().unwrap_or(1)],
        };
        CqlValue::from_cql_bytes(ty, &bytes).expect("valid template")
    };
    let pk: Vec<CqlValue> = schema
        .partition_types()
        .iter()
        .enumerate()
        .map(|(i, t)| value(t.native().expect("native key"), i as u64))
        .collect();
    let p = schema
        .partition_prefix_with_token(Token(seed as i64), &pk)
        .ok()?;
    let clustering: Vec<CqlValue> = schema
        .clustering_columns()
        .iter()
        .enumerate()
        .map(|(i, c)| value(c.ty.native().expect("native key"), i as u64 + 3))
        .collect();
    Some(match shape % 4 {
        0 => schema.row_key(&p, &clustering).ok()?,
        1 => schema.static_key(&p),
        2 => schema.partition_header_key(&p),
        _ => schema
            .range_tombstone_key(
                &p,
                &mosaic_rows::ClusteringBound::bottom(),
                &mosaic_rows::ClusteringBound::inclusive_end(clustering),
            )
            .ok()?,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn fragment_decoder_survives_arbitrary_bytes(bytes in bytes()) {
        check_fragment_bytes(&bytes)?;
    }

    #[test]
    fn fragment_decoder_survives_mutations(
        f in fragment(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let bytes = f.encode();
        prop_assert_eq!(Fragment::decode(&bytes).unwrap(), f);
        check_fragment_bytes(&mutate(bytes, &mutations))?;
    }

    #[test]
    fn component_decoder_survives_arbitrary_bytes(
        ty in any_type(), order in any_order(), bytes in bytes(),
    ) {
        let mut pos = 0;
        if let Ok(v) = decode_component(&bytes, &mut pos, ty, order) {
            let mut again = Vec::new();
            encode_component(&mut again, &v, order);
            prop_assert_eq!(again.as_slice(), &bytes[..pos]);
        }
    }

    #[test]
    fn key_decoder_survives_arbitrary_bytes(schema in schema(), bytes in bytes()) {
        check_key_bytes(&schema, &bytes)?;
    }

    #[test]
    fn key_decoder_survives_mutations(
        schema in schema(),
        seed: u64,
        shape: u8,
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        if let Some(key) = valid_key(&schema, seed, shape) {
            check_key_bytes(&schema, &key)?;
            prop_assert!(schema.decode_key(&key).is_ok());
            check_key_bytes(&schema, &mutate(key, &mutations))?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn merge_purge_and_resolve_survive_garbage(
        schema in schema(),
        values in proptest::collection::vec(bytes(), 1..4),
        keys in proptest::collection::vec(bytes(), 1..4),
        bottommost: bool,
        now in 0u64..1_000_000_000,
    ) {
        let versions: Vec<Version<'_>> = values
            .iter()
            .enumerate()
            .map(|(i, value)| Version {
                ts: (values.len() - i) as u64,
                kind: if i % 2 == 0 { ValueKind::Merge } else { ValueKind::Put },
                value,
            })
            .collect();
        let merged = RowMerge.merge(b"k", &versions);
        let ctx = PurgeContext { bottommost, now_micros: now, gc_grace_micros: 10 };
        let _ = RowMerge.purge(b"k", merged, &ctx);
        let _ = RowMerge.purge(
            b"k",
            Resolved { ts: 1, kind: ValueKind::Merge, value: values[0].clone() },
            &ctx,
        );
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        let entries = sorted.iter().zip(values.iter().cycle());
        let _ = resolve_partition(&schema, entries, 0);
    }
}
