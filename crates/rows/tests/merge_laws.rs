//! Scenario: merging fragments gives the same result whatever the order and grouping, as
//! compaction (partial, in any grouping) and reads (the rest) require.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use mosaic_lsm::{MergeOperator, Resolved, ValueKind, Version};
use mosaic_rows::{
    merge_fragments, Cell, ColumnId, ComplexColumn, DeletionTime, Expiry, Fragment, FragmentKind,
    Liveness, RowMerge,
};
use mosaic_types::Timestamp;
use proptest::prelude::*;

/// Small domains so that ties (same timestamp, same column) are frequent.
fn expiry() -> impl Strategy<Value = Expiry> {
    (1u32..3, 0i64..4).prop_map(|(ttl_secs, local_expiration_secs)| Expiry {
        ttl_secs,
        local_expiration_secs,
    })
}

fn cell() -> impl Strategy<Value = Cell> {
    prop_oneof![
        (
            0i64..4,
            prop::sample::select(vec![&b""[..], b"a", b"b"]),
            proptest::option::of(expiry())
        )
            .prop_map(|(ts, value, expiry)| Cell::Live {
                ts: Timestamp(ts),
                value: value.to_vec(),
                expiry,
            }),
        (0i64..4, 0i64..3).prop_map(|(ts, ldt)| Cell::Tombstone {
            ts: Timestamp(ts),
            local_deletion_secs: ldt,
        }),
    ]
}

fn deletion_time() -> impl Strategy<Value = DeletionTime> {
    (0i64..4, 0i64..3).prop_map(|(ts, ldt)| DeletionTime {
        marked_for_delete_at: Timestamp(ts),
        local_deletion_secs: ldt,
    })
}

/// A multi-cell column (never empty): an optional column deletion and elements on a few
/// paths.
fn complex_column() -> impl Strategy<Value = ComplexColumn> {
    (
        proptest::option::of(deletion_time()),
        proptest::collection::btree_map(
            prop::sample::select(vec![&b"p"[..], b"q", b"r"]).prop_map(<[u8]>::to_vec),
            cell(),
            0..3,
        ),
    )
        .prop_map(|(deletion, cells)| ComplexColumn { deletion, cells })
        .prop_filter("non-empty", |c| !c.is_empty())
}

fn fragment() -> impl Strategy<Value = Fragment> {
    (
        proptest::option::of((0i64..4, proptest::option::of(expiry()))),
        proptest::option::of((0i64..4, 0i64..3)),
        proptest::collection::btree_map((0u32..4).prop_map(ColumnId), cell(), 0..4),
        proptest::collection::btree_map((4u32..6).prop_map(ColumnId), complex_column(), 0..2),
    )
        .prop_map(|(liveness, deletion, cells, complex)| Fragment {
            kind: FragmentKind::Row,
            liveness: liveness.map(|(ts, expiry)| Liveness {
                ts: Timestamp(ts),
                expiry,
            }),
            deletion: deletion.map(|(ts, ldt)| DeletionTime {
                marked_for_delete_at: Timestamp(ts),
                local_deletion_secs: ldt,
            }),
            cells,
            complex,
        })
}

fn merge_versions(fragments: &[Vec<u8>]) -> Resolved {
    let versions: Vec<Version<'_>> = fragments
        .iter()
        .map(|value| Version {
            ts: 0,
            kind: ValueKind::Merge,
            value,
        })
        .collect();
    RowMerge.merge(b"key", &versions)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn merge_is_commutative(a in fragment(), b in fragment()) {
        prop_assert_eq!(merge_fragments(&a, &b), merge_fragments(&b, &a));
    }

    #[test]
    fn merge_is_associative(a in fragment(), b in fragment(), c in fragment()) {
        let left = merge_fragments(&merge_fragments(&a, &b), &c);
        let right = merge_fragments(&a, &merge_fragments(&b, &c));
        prop_assert_eq!(left, right);
    }

    #[test]
    fn merging_again_changes_nothing(a in fragment(), b in fragment()) {
        let ab = merge_fragments(&a, &b);
        prop_assert_eq!(merge_fragments(&ab, &b), ab.clone());
        prop_assert_eq!(merge_fragments(&ab, &ab), ab);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Compaction merges arbitrary groups of versions in arbitrary order and the read
    /// merges the results: the bytes must equal merging everything at once.
    #[test]
    fn any_grouping_and_order_gives_the_same_bytes(
        (fragments, order, cuts) in proptest::collection::vec(fragment(), 1..7)
            .prop_flat_map(|fs| {
                let n = fs.len();
                (
                    Just(fs),
                    Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                    proptest::collection::vec(any::<bool>(), n),
                )
            })
    ) {
        let encoded: Vec<Vec<u8>> = fragments.iter().map(Fragment::encode).collect();
        let all_at_once = merge_versions(&encoded);

        let shuffled: Vec<Vec<u8>> = order.iter().map(|&i| encoded[i].clone()).collect();
        let mut groups: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
        for (value, cut) in shuffled.into_iter().zip(cuts) {
            groups.last_mut().expect("non-empty").push(value);
            if cut {
                groups.push(Vec::new());
            }
        }
        let partials: Vec<Vec<u8>> = groups
            .iter()
            .filter(|g| !g.is_empty())
            .map(|g| merge_versions(g).value)
            .collect();
        let regrouped = merge_versions(&partials);
        prop_assert_eq!(regrouped.kind, ValueKind::Merge);
        prop_assert_eq!(regrouped.value, all_at_once.value);
    }

    /// The merged fragment is the canonical encoding of the model merge.
    #[test]
    fn operator_agrees_with_fragment_merge(a in fragment(), b in fragment()) {
        let r = merge_versions(&[a.encode(), b.encode()]);
        prop_assert_eq!(Fragment::decode(&r.value).unwrap(), merge_fragments(&a, &b));
    }
}
