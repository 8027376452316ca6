//! Scenario: the bytewise order of encoded keys is Cassandra's logical order, for every
//! type and direction, for compound clustering keys and for bounds, and every encoding
//! decodes back to its value.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::cmp::Ordering;

use mosaic_rows::{
    decode_component, encode_component, BoundSide, ClusteringBound, KeyEntry, KeySchema, Order,
};
use std::net::IpAddr;

use mosaic_types::{CqlDuration, CqlType, CqlValue, Decimal, Token, Varint, NANOS_PER_DAY};
use proptest::prelude::*;

fn byte_biased() -> impl Strategy<Value = u8> {
    prop_oneof![
        Just(0x00u8),
        Just(0xffu8),
        Just(0x01u8),
        Just(0xfeu8),
        any::<u8>()
    ]
}

fn float32() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(f32::MIN_POSITIVE),
        Just(-f32::MIN_POSITIVE),
        Just(f32::MAX),
        Just(f32::MIN),
        any::<f32>().prop_filter("no NaN", |f| !f.is_nan()),
        any::<u32>()
            .prop_map(f32::from_bits)
            .prop_filter("no NaN", |f| !f.is_nan()),
    ]
}

fn float64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0f64),
        Just(-0.0f64),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MIN_POSITIVE),
        Just(-f64::MIN_POSITIVE),
        any::<f64>().prop_filter("no NaN", |f| !f.is_nan()),
        any::<u64>()
            .prop_map(f64::from_bits)
            .prop_filter("no NaN", |f| !f.is_nan()),
    ]
}

fn varint() -> impl Strategy<Value = Varint> {
    prop_oneof![
        (-300i64..300).prop_map(Varint::from),
        any::<i64>().prop_map(Varint::from),
        any::<i128>().prop_map(Varint::from),
        proptest::collection::vec(byte_biased(), 1..200)
            .prop_map(|b| Varint::from_be_bytes(&b).expect("non-empty")),
    ]
}

fn decimal() -> impl Strategy<Value = Decimal> {
    prop_oneof![
        (varint(), -40i32..40).prop_map(|(u, s)| Decimal::new(u, s)),
        ((-1000i64..1000).prop_map(Varint::from), -5i32..5).prop_map(|(u, s)| Decimal::new(u, s)),
        (varint(), any::<i32>()).prop_map(|(u, s)| Decimal::new(u, s)),
    ]
}

fn uuid_bytes() -> impl Strategy<Value = [u8; 16]> {
    (
        any::<[u8; 16]>(),
        prop_oneof![Just(1u8), Just(4u8), 0u8..16],
    )
        .prop_map(|(mut b, v)| {
            b[6] = (b[6] & 0x0f) | (v << 4);
            b
        })
}

/// IPv4 and IPv6 addresses, often sharing leading bytes (so 4-byte addresses meet the
/// 16-byte ones they are a prefix of).
fn inet() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(IpAddr::from),
        any::<[u8; 16]>().prop_map(IpAddr::from),
        (
            prop_oneof![Just(0u8), Just(10u8), Just(0xffu8)],
            any::<[u8; 16]>()
        )
            .prop_map(|(x, mut b)| {
                b[0] = x;
                IpAddr::from(b)
            }),
        prop_oneof![Just(0u8), Just(10u8), Just(0xffu8)].prop_map(|x| IpAddr::from([x, 0, 0, 1])),
    ]
}

fn time_nanos() -> impl Strategy<Value = i64> {
    prop_oneof![Just(0i64), Just(NANOS_PER_DAY - 1), 0..NANOS_PER_DAY]
}

fn duration() -> impl Strategy<Value = CqlDuration> {
    (
        0..=i32::MAX,
        0..=i32::MAX,
        0..=i64::MAX,
        any::<bool>(),
        0u8..8,
    )
        .prop_map(|(m, d, n, neg, zeros)| {
            // Zero some fields often: small values and shared prefixes.
            let m = if zeros & 1 != 0 { 0 } else { m };
            let d = if zeros & 2 != 0 { 0 } else { d };
            let n = if zeros & 4 != 0 { 0 } else { n };
            if neg {
                CqlDuration::new(-m, -d, -n).unwrap()
            } else {
                CqlDuration::new(m, d, n).unwrap()
            }
        })
}

fn timeuuid_bytes() -> impl Strategy<Value = [u8; 16]> {
    any::<[u8; 16]>().prop_map(|mut b| {
        b[6] = (b[6] & 0x0f) | 0x10;
        b
    })
}

/// Values of `ty`, from the whole domain (edge cases included).
fn value_of(ty: CqlType) -> BoxedStrategy<CqlValue> {
    match ty {
        CqlType::Ascii => "[\\x00-\\x7f]{0,12}".prop_map(CqlValue::Ascii).boxed(),
        CqlType::Text => prop_oneof![
            "\\PC{0,10}",
            "[a\\x00\u{ff}\u{10000}é]{0,8}",
            Just(String::new())
        ]
        .prop_map(CqlValue::Text)
        .boxed(),
        CqlType::Blob => proptest::collection::vec(byte_biased(), 0..12)
            .prop_map(CqlValue::Blob)
            .boxed(),
        CqlType::Boolean => any::<bool>().prop_map(CqlValue::Boolean).boxed(),
        CqlType::Int => any::<i32>().prop_map(CqlValue::Int).boxed(),
        CqlType::BigInt => any::<i64>().prop_map(CqlValue::BigInt).boxed(),
        CqlType::SmallInt => any::<i16>().prop_map(CqlValue::SmallInt).boxed(),
        CqlType::TinyInt => any::<i8>().prop_map(CqlValue::TinyInt).boxed(),
        CqlType::Float => float32().prop_map(CqlValue::Float).boxed(),
        CqlType::Double => float64().prop_map(CqlValue::Double).boxed(),
        CqlType::Timestamp => any::<i64>().prop_map(CqlValue::Timestamp).boxed(),
        CqlType::Date => any::<u32>().prop_map(CqlValue::Date).boxed(),
        CqlType::Uuid => uuid_bytes().prop_map(CqlValue::Uuid).boxed(),
        CqlType::TimeUuid => timeuuid_bytes().prop_map(CqlValue::TimeUuid).boxed(),
        CqlType::Varint => varint().prop_map(CqlValue::Varint).boxed(),
        CqlType::Decimal => decimal().prop_map(CqlValue::Decimal).boxed(),
        CqlType::Inet => inet().prop_map(CqlValue::Inet).boxed(),
        CqlType::Time => time_nanos().prop_map(CqlValue::Time).boxed(),
        CqlType::Duration => duration().prop_map(CqlValue::Duration).boxed(),
        other => panic!("no strategy for {other}"),
    }
}

/// Values of `ty` from a tiny domain, so that equal values (shared prefixes) are common.
fn small_value_of(ty: CqlType) -> BoxedStrategy<CqlValue> {
    match ty {
        CqlType::Int => (-2i32..3).prop_map(CqlValue::Int).boxed(),
        CqlType::Text => prop_oneof![Just(""), Just("a"), Just("a\0"), Just("ab"), Just("b")]
            .prop_map(|s| CqlValue::Text(s.to_owned()))
            .boxed(),
        CqlType::Blob => proptest::collection::vec(prop_oneof![Just(0u8), Just(0xffu8)], 0..3)
            .prop_map(CqlValue::Blob)
            .boxed(),
        CqlType::Double => prop_oneof![Just(-0.0), Just(0.0), Just(-1.5), Just(f64::INFINITY)]
            .prop_map(CqlValue::Double)
            .boxed(),
        CqlType::Varint => (-300i64..300)
            .prop_map(|v| CqlValue::Varint(Varint::from(v)))
            .boxed(),
        CqlType::Decimal => ((-20i64..20), (-1i32..2))
            .prop_map(|(u, s)| CqlValue::Decimal(Decimal::new(Varint::from(u), s)))
            .boxed(),
        CqlType::Inet => prop_oneof![
            Just("10.0.0.1"),
            Just("::1"),
            Just("a00:1::"),
            Just("0.0.0.0"),
            Just("255.255.255.255")
        ]
        .prop_map(|s| CqlValue::Inet(s.parse().unwrap()))
        .boxed(),
        CqlType::Time => prop_oneof![Just(0i64), Just(1), Just(NANOS_PER_DAY - 1)]
            .prop_map(CqlValue::Time)
            .boxed(),
        other => value_of(other),
    }
}

fn any_type() -> impl Strategy<Value = CqlType> {
    proptest::sample::select(CqlType::ALL.to_vec())
}

fn any_order() -> impl Strategy<Value = Order> {
    prop_oneof![Just(Order::Asc), Just(Order::Desc)]
}

fn enc(v: &CqlValue, order: Order) -> Vec<u8> {
    let mut out = Vec::new();
    encode_component(&mut out, v, order);
    out
}

fn logical(a: &CqlValue, b: &CqlValue, order: Order) -> Ordering {
    let o = a.cql_cmp(b).expect("same type");
    match order {
        Order::Asc => o,
        Order::Desc => o.reverse(),
    }
}

/// Exact decimal order without the library's normalization: compare digit strings padded
/// to a common scale.
fn decimal_oracle(a: &Decimal, b: &Decimal) -> Ordering {
    let sign = |d: &Decimal| {
        if d.unscaled.is_zero() {
            0
        } else if d.unscaled.is_negative() {
            -1
        } else {
            1
        }
    };
    let (sa, sb) = (sign(a), sign(b));
    if sa != sb || sa == 0 {
        return sa.cmp(&sb);
    }
    let scale = a.scale.max(b.scale);
    let padded = |d: &Decimal| {
        let digits = d.unscaled.to_string().trim_start_matches('-').to_owned();
        digits + &"0".repeat((scale - d.scale) as usize)
    };
    let (pa, pb) = (padded(a), padded(b));
    let magnitude = pa.len().cmp(&pb.len()).then(pa.cmp(&pb));
    if sa < 0 {
        magnitude.reverse()
    } else {
        magnitude
    }
}

fn assert_round_trip(v: &CqlValue, order: Order) -> Result<(), TestCaseError> {
    let bytes = enc(v, order);
    let mut pos = 0;
    let back = decode_component(&bytes, &mut pos, v.native_type().expect("native"), order)
        .expect("decodes");
    prop_assert_eq!(pos, bytes.len());
    match v {
        CqlValue::Decimal(d) => {
            prop_assert_eq!(back, CqlValue::Decimal(d.normalized().expect("in range")))
        }
        // Compare serializations: -0.0 == 0.0 as floats, but not as values here.
        _ => prop_assert_eq!(back.to_cql_bytes(), v.to_cql_bytes()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn every_type_sorts_in_cassandra_order_both_ways(
        (a, b, order) in any_type().prop_flat_map(|ty| (value_of(ty), value_of(ty), any_order()))
    ) {
        prop_assert_eq!(enc(&a, order).cmp(&enc(&b, order)), logical(&a, &b, order), "{:?} vs {:?}", a, b);
        assert_round_trip(&a, order)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn decimals_sort_by_exact_value(
        a in decimal(), b in varint(), delta in -150i32..150, order in any_order()
    ) {
        // The oracle pads to a common scale: keep the scales close.
        let b = Decimal::new(b, a.scale.saturating_add(delta));
        let expected = decimal_oracle(&a, &b);
        let expected = if order == Order::Desc { expected.reverse() } else { expected };
        let (va, vb) = (CqlValue::Decimal(a), CqlValue::Decimal(b));
        prop_assert_eq!(enc(&va, order).cmp(&enc(&vb, order)), expected);
    }

    #[test]
    fn varints_sort_by_value_across_magnitudes(a: i128, b: i128, shift in 0u32..100) {
        // Multiply both by 2^shift via their bytes, which keeps the order.
        let widen = |v: i128| {
            let mut bytes = v.to_be_bytes().to_vec();
            bytes.extend(std::iter::repeat_n(0u8, (shift / 8) as usize));
            CqlValue::Varint(Varint::from_be_bytes(&bytes).expect("non-empty"))
        };
        prop_assert_eq!(enc(&widen(a), Order::Asc).cmp(&enc(&widen(b), Order::Asc)), a.cmp(&b));
    }

    #[test]
    fn compound_clustering_sorts_column_by_column(
        (columns, rows) in proptest::collection::vec((any_type(), any_order()), 1..4)
            .prop_flat_map(|columns| {
                let row = columns.iter().map(|(t, _)| small_value_of(*t)).collect::<Vec<_>>();
                (Just(columns), proptest::collection::vec(row, 2..6))
            })
    ) {
        let schema = KeySchema::new(vec![CqlType::Int], columns.clone()).unwrap();
        let p = schema.partition_prefix(&[CqlValue::Int(1)]).unwrap();
        for a in &rows {
            for b in &rows {
                let expected = a.iter().zip(b).zip(&columns)
                    .map(|((x, y), (_, order))| logical(x, y, *order))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal);
                let (ka, kb) = (schema.row_key(&p, a).unwrap(), schema.row_key(&p, b).unwrap());
                prop_assert_eq!(ka.cmp(&kb), expected);
            }
            let key = schema.row_key(&p, a).unwrap();
            let decoded = schema.decode_key(&key).unwrap();
            prop_assert_eq!(decoded.partition_key, vec![CqlValue::Int(1)]);
            match decoded.entry {
                KeyEntry::Row(values) => {
                    let again = schema.row_key(&p, &values).unwrap();
                    prop_assert_eq!(again, key);
                }
                other => prop_assert!(false, "decoded {:?}", other),
            }
        }
    }

    #[test]
    fn bounds_sort_before_or_after_the_rows_sharing_their_prefix(
        (columns, rows, bound) in proptest::collection::vec((any_type(), any_order()), 1..4)
            .prop_flat_map(|columns| {
                let row = columns.iter().map(|(t, _)| small_value_of(*t)).collect::<Vec<_>>();
                let n = columns.len();
                let bound = (
                    0..=n,
                    row.clone(),
                    prop_oneof![Just(BoundSide::Before), Just(BoundSide::After)],
                );
                (Just(columns), proptest::collection::vec(row, 1..6), bound)
            })
    ) {
        let (len, values, side) = bound;
        let bound = ClusteringBound { prefix: values[..len].to_vec(), side };
        let schema = KeySchema::new(vec![CqlType::Int], columns.clone()).unwrap();
        let p = schema.partition_prefix(&[CqlValue::Int(1)]).unwrap();
        let bound_key = schema.bound_key(&p, &bound).unwrap();
        for row in &rows {
            let on_prefix = row.iter().zip(&bound.prefix).zip(&columns)
                .map(|((x, y), (_, order))| logical(x, y, *order))
                .find(|o| o.is_ne());
            let expected = match (on_prefix, side) {
                (Some(o), _) => o,
                (None, BoundSide::Before) => Ordering::Greater,
                (None, BoundSide::After) => Ordering::Less,
            };
            prop_assert_eq!(schema.row_key(&p, row).unwrap().cmp(&bound_key), expected);
        }
        // Decoding normalizes decimals, so compare the keys rebuilt from what was decoded.
        match schema.decode_key(&bound_key).unwrap().entry {
            KeyEntry::Bound(decoded) => {
                prop_assert_eq!(decoded.side, bound.side);
                prop_assert_eq!(schema.bound_key(&p, &decoded).unwrap(), bound_key);
            }
            other => prop_assert!(false, "decoded {:?}", other),
        }
    }

    #[test]
    fn partitions_sort_by_token_then_key(
        (ty, a, b) in any_type().prop_flat_map(|ty| (Just(ty), small_value_of(ty), small_value_of(ty))),
        ta in -3i64..3, tb in -3i64..3,
    ) {
        let schema = KeySchema::new(vec![ty, CqlType::Int], vec![]).unwrap();
        let pa = schema.partition_prefix_with_token(Token(ta), &[a.clone(), CqlValue::Int(0)]).unwrap();
        let pb = schema.partition_prefix_with_token(Token(tb), &[b.clone(), CqlValue::Int(0)]).unwrap();
        let expected = ta.cmp(&tb).then(a.cql_cmp(&b).unwrap());
        let (ka, kb) = (schema.row_key(&pa, &[]).unwrap(), schema.row_key(&pb, &[]).unwrap());
        prop_assert_eq!(ka.cmp(&kb), expected);
        // Every key of a sorts before every key of b when a's prefix sorts first.
        if expected.is_lt() {
            let ra = schema.partition_range(&pa);
            prop_assert!(ra.end.as_deref().is_some_and(|end| end <= schema.partition_header_key(&pb).as_slice()));
        }
    }
}

#[test]
fn descending_strings_keep_prefixes_after_extensions() {
    let d = |s: &str| enc(&CqlValue::Text(s.to_owned()), Order::Desc);
    // Logically "ab" > "a\0" > "a" > "" (a prefix sorts first); descending reverses that.
    assert!(d("ab") < d("a\0"));
    assert!(d("a\0") < d("a"));
    assert!(d("a") < d(""));
}

#[test]
fn signed_zero_and_infinities_sort_as_java() {
    let f = |v: f64| enc(&CqlValue::Double(v), Order::Asc);
    assert!(f(f64::NEG_INFINITY) < f(-1.0));
    assert!(f(-f64::MIN_POSITIVE) < f(-0.0));
    assert!(f(-0.0) < f(0.0));
    assert!(f(0.0) < f(f64::MIN_POSITIVE));
    assert!(f(f64::MAX) < f(f64::INFINITY));
    // NaN sorts last, and every NaN is the same key.
    assert!(f(f64::INFINITY) < f(f64::NAN));
    assert_eq!(f(f64::NAN), f(-f64::NAN));
}

#[test]
fn inets_sort_as_cassandras_unsigned_bytes() {
    let ip = |s: &str| enc(&CqlValue::Inet(s.parse().unwrap()), Order::Asc);
    // ::1 (00…01) < 10.0.0.1 (0A000001) < a00:1:: (0A000001…, longer) < 192.168.0.1.
    assert!(ip("::1") < ip("10.0.0.1"));
    assert!(ip("10.0.0.1") < ip("a00:1::"));
    assert!(ip("a00:1::") < ip("192.168.0.1"));
    let desc = |s: &str| enc(&CqlValue::Inet(s.parse().unwrap()), Order::Desc);
    assert!(desc("a00:1::") < desc("10.0.0.1"));
}
