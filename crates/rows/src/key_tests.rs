//! Unit tests of `key.rs`: entry order, decoding, bounds and ring ranges.

use super::*;

fn schema() -> KeySchema {
    KeySchema::new(
        vec![CqlType::Text],
        vec![(CqlType::Int, Order::Asc), (CqlType::Text, Order::Desc)],
    )
    .unwrap()
}

fn int(v: i32) -> CqlValue {
    CqlValue::Int(v)
}

fn text(s: &str) -> CqlValue {
    CqlValue::Text(s.to_owned())
}

#[test]
fn tokens_sort_as_signed_integers() {
    assert!(encode_token(Token(-1)) < encode_token(Token(0)));
    assert!(encode_token(Token::MIN) < encode_token(Token(-1)));
    assert_eq!(decode_token(&encode_token(Token(-42))).unwrap(), Token(-42));
}

#[test]
fn partition_entries_sort_header_tombstones_static_rows() {
    let s = schema();
    let p = s.partition_prefix(&[text("k")]).unwrap();
    let header = s.partition_header_key(&p);
    let rt = s
        .range_tombstone_key(
            &p,
            &ClusteringBound::inclusive_start(vec![int(i32::MIN)]),
            &ClusteringBound::top(),
        )
        .unwrap();
    let stat = s.static_key(&p);
    let row = s.row_key(&p, &[int(i32::MIN), text("")]).unwrap();
    let range = s.partition_range(&p);
    assert!(header < rt && rt < stat && stat < row);
    for k in [&header, &rt, &stat, &row] {
        assert!(range.contains(k));
    }
    assert!(s.partition_head_range(&p).contains(&stat));
    assert!(!s.partition_head_range(&p).contains(&row));
    assert!(s.rows_range(&p).contains(&row));
}

#[test]
fn keys_decode_back_to_what_built_them() {
    let s = schema();
    let p = s.partition_prefix(&[text("k")]).unwrap();
    let row = s.row_key(&p, &[int(7), text("x")]).unwrap();
    let decoded = s.decode_key(&row).unwrap();
    assert_eq!(decoded.token, p.token());
    assert_eq!(decoded.partition_key, vec![text("k")]);
    assert_eq!(decoded.entry, KeyEntry::Row(vec![int(7), text("x")]));
    let start = ClusteringBound::exclusive_start(vec![int(1)]);
    let end = ClusteringBound::exclusive_end(vec![int(9), text("z")]);
    let rt = s.range_tombstone_key(&p, &start, &end).unwrap();
    assert_eq!(
        s.decode_key(&rt).unwrap().entry,
        KeyEntry::RangeTombstone { start, end }
    );
    assert_eq!(s.partition_prefix_len(&row).unwrap(), p.as_bytes().len());
    let mut trailing = row.clone();
    trailing.push(0);
    assert!(s.decode_key(&trailing).is_err());
}

#[test]
fn inverted_tombstone_bounds_are_refused() {
    let s = schema();
    let p = s.partition_prefix(&[text("k")]).unwrap();
    let a = ClusteringBound::inclusive_start(vec![int(5)]);
    let b = ClusteringBound::exclusive_end(vec![int(5)]);
    assert_eq!(
        s.range_tombstone_key(&p, &a, &b),
        Err(KeyError::InvertedBounds)
    );
}

#[test]
fn wrong_types_and_arity_are_refused() {
    let s = schema();
    assert!(s.partition_prefix(&[int(1)]).is_err());
    assert!(s.partition_prefix(&[]).is_err());
    let p = s.partition_prefix(&[text("k")]).unwrap();
    assert!(s.row_key(&p, &[int(1)]).is_err());
    assert!(s.row_key(&p, &[text("a"), int(1)]).is_err());
    assert!(s.clustering_slice(&p, &[], SliceOp::Gt).is_err());
}

#[test]
fn slices_select_the_right_rows_on_descending_columns() {
    let s = schema();
    let p = s.partition_prefix(&[text("k")]).unwrap();
    let rows: Vec<(String, Vec<u8>)> = ["a", "b", "c"]
        .iter()
        .map(|v| (v.to_string(), s.row_key(&p, &[int(1), text(v)]).unwrap()))
        .collect();
    let select = |op| {
        let r = s.clustering_slice(&p, &[int(1), text("b")], op).unwrap();
        rows.iter()
            .filter(|(_, k)| r.contains(k))
            .map(|(v, _)| v.as_str())
            .collect::<Vec<_>>()
    };
    // Key order of a descending column is c, b, a; the operators stay logical.
    assert!(rows[2].1 < rows[1].1 && rows[1].1 < rows[0].1);
    assert_eq!(select(SliceOp::Gt), ["c"]);
    assert_eq!(select(SliceOp::Ge), ["b", "c"]);
    assert_eq!(select(SliceOp::Lt), ["a"]);
    assert_eq!(select(SliceOp::Le), ["a", "b"]);
    assert_eq!(select(SliceOp::Eq), ["b"]);
}

#[test]
fn ring_ranges_wrap_around() {
    let r = ring_range(Token(10), Token(-10));
    assert_eq!(r.len(), 2);
    let key = |t: i64| encode_token(Token(t)).to_vec();
    let inside = |t: i64| r.iter().any(|range| range.contains(&key(t)));
    assert!(inside(11) && inside(i64::MAX) && inside(i64::MIN) && inside(-10));
    assert!(!inside(10) && !inside(0) && !inside(-9));
    let all = ring_range(Token(3), Token(3));
    assert!(all.len() == 1 && all[0].contains(&key(i64::MIN)));
    let tail = ring_range(Token(3), Token::MIN);
    assert!(tail[0].contains(&key(i64::MAX)) && !tail[0].contains(&key(3)));
    assert!(token_range(Bound::Excluded(Token::MAX), Bound::Unbounded).is_empty());
    let last = token_range(Bound::Included(Token::MAX), Bound::Included(Token::MAX));
    assert!(last.contains(&key(i64::MAX)) && last.end.is_none());
}
