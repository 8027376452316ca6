//! The operations a case runs (statements on a row, flushes, compactions, restarts,
//! clock steps), their CQL, and their generators.

use proptest::prelude::*;

use super::model::Udt;
use super::{NODES, ROWS};

/// A multi-cell column of the table: a collection, or `u`, a non-frozen user-defined type
/// `pt (a int, b int)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Col {
    S,
    L,
    M,
    U,
}

impl Col {
    pub(super) fn name(self) -> &'static str {
        match self {
            Col::S => "s",
            Col::L => "l",
            Col::M => "m",
            Col::U => "u",
        }
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// A whole-collection value in a statement: `None` is `null`.
pub(super) type Whole<T> = Option<Vec<T>>;

/// One statement on one row (`UPDATE … SET` or `DELETE … FROM` unless said otherwise).
#[derive(Clone, Debug)]
pub(super) enum Stmt {
    /// `INSERT` with the columns given (`None`: not named).
    Insert {
        s: Option<Whole<i32>>,
        l: Option<Whole<i32>>,
        m: Option<Whole<(i32, i32)>>,
        u: Option<Option<Udt>>,
    },
    /// `u = {a: …, b: …}` (a null field left out of the literal), or `u = null`.
    UdtAssign(Option<Udt>),
    /// `u.a = v` (field 0) or `u.b = v` (field 1); `None`: `= null`.
    UdtSetField(usize, Option<i32>),
    /// `DELETE u.a` or `DELETE u.b`.
    DeleteUdtField(usize),
    SetAssign(Whole<i32>),
    SetAdd(Vec<i32>),
    SetRemove(Vec<i32>),
    ListAssign(Whole<i32>),
    ListAppend(Vec<i32>),
    ListPrepend(Vec<i32>),
    /// `l[i] = v`.
    ListSetIndex(i32, i32),
    ListRemove(Vec<i32>),
    MapAssign(Whole<(i32, i32)>),
    /// `m[k] = v`.
    MapPut(i32, i32),
    MapAdd(Vec<(i32, i32)>),
    MapRemove(Vec<i32>),
    /// `DELETE c`.
    DeleteColumn(Col),
    /// `DELETE s[v]`.
    DeleteSetElement(i32),
    /// `DELETE m[k]`.
    DeleteMapKey(i32),
    /// `DELETE l[i]`.
    DeleteListIndex(i32),
    /// `DELETE FROM … WHERE k = ? AND c = ?`.
    DeleteRow,
    /// `DELETE FROM … WHERE k = ?`: both rows.
    DeletePartition,
    /// `DELETE FROM … WHERE k = ? AND c >= 1`: row 1.
    DeleteRange,
}

#[derive(Clone, Debug)]
pub(super) enum Op {
    /// `stmt` on row `row` at timestamp `base + ts`, its mutations stored by the nodes in
    /// `nodes` (a bit mask, never 0).
    Run {
        row: usize,
        ts: i64,
        ttl: Option<u32>,
        nodes: u8,
        stmt: Stmt,
    },
    /// Flushes every memtable.
    Flush,
    /// Compacts every table fully.
    Compact,
    /// Closes node `i` and opens it again.
    Reopen(usize),
    /// Moves the clock on by this many seconds.
    Advance(i64),
}

pub(super) fn set_lit(v: &[i32]) -> String {
    let items: Vec<String> = v.iter().map(i32::to_string).collect();
    format!("{{{}}}", items.join(", "))
}

pub(super) fn list_lit(v: &[i32]) -> String {
    let items: Vec<String> = v.iter().map(i32::to_string).collect();
    format!("[{}]", items.join(", "))
}

pub(super) fn map_lit(v: &[(i32, i32)]) -> String {
    let items: Vec<String> = v.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", items.join(", "))
}

/// The names of `pt`'s fields.
pub(super) const FIELDS: [&str; 2] = ["a", "b"];

/// A `pt` literal: a null field is left out, unless both are (`{a: null, b: null}`).
pub(super) fn udt_lit(u: &Option<Udt>) -> String {
    let Some(u) = u else {
        return "null".to_owned();
    };
    let fields: Vec<String> = FIELDS
        .iter()
        .zip(u)
        .filter_map(|(name, f)| Some(format!("{name}: {}", (*f)?)))
        .collect();
    if fields.is_empty() {
        return "{a: null, b: null}".to_owned();
    }
    format!("{{{}}}", fields.join(", "))
}

fn int_or_null(v: Option<i32>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

pub(super) fn whole<T>(v: &Whole<T>, lit: impl Fn(&[T]) -> String) -> String {
    v.as_ref().map_or_else(|| "null".to_owned(), |v| lit(v))
}

impl Stmt {
    pub(super) fn is_delete(&self) -> bool {
        matches!(
            self,
            Stmt::DeleteColumn(_)
                | Stmt::DeleteSetElement(_)
                | Stmt::DeleteMapKey(_)
                | Stmt::DeleteListIndex(_)
                | Stmt::DeleteUdtField(_)
                | Stmt::DeleteRow
                | Stmt::DeletePartition
                | Stmt::DeleteRange
        )
    }

    /// The statement's CQL against `ks.{table}`, row `(k, c)`.
    pub(super) fn cql(&self, table: &str, k: i32, c: usize, ts: i64, ttl: Option<u32>) -> String {
        let using = match ttl {
            Some(ttl) => format!("USING TIMESTAMP {ts} AND TTL {ttl}"),
            None => format!("USING TIMESTAMP {ts}"),
        };
        let update =
            |set: String| format!("UPDATE ks.{table} {using} SET {set} WHERE k = {k} AND c = {c}");
        let delete = |what: &str, restriction: String| {
            format!("DELETE {what}FROM ks.{table} USING TIMESTAMP {ts} WHERE {restriction}")
        };
        let row = format!("k = {k} AND c = {c}");
        match self {
            Stmt::Insert { s, l, m, u } => {
                let mut names = vec!["k".to_owned(), "c".to_owned()];
                let mut values = vec![k.to_string(), c.to_string()];
                if let Some(s) = s {
                    names.push("s".into());
                    values.push(whole(s, set_lit));
                }
                if let Some(l) = l {
                    names.push("l".into());
                    values.push(whole(l, list_lit));
                }
                if let Some(m) = m {
                    names.push("m".into());
                    values.push(whole(m, map_lit));
                }
                if let Some(u) = u {
                    names.push("u".into());
                    values.push(udt_lit(u));
                }
                format!(
                    "INSERT INTO ks.{table} ({}) VALUES ({}) {using}",
                    names.join(", "),
                    values.join(", ")
                )
            }
            Stmt::SetAssign(v) => update(format!("s = {}", whole(v, set_lit))),
            Stmt::SetAdd(v) => update(format!("s = s + {}", set_lit(v))),
            Stmt::SetRemove(v) => update(format!("s = s - {}", set_lit(v))),
            Stmt::ListAssign(v) => update(format!("l = {}", whole(v, list_lit))),
            Stmt::ListAppend(v) => update(format!("l = l + {}", list_lit(v))),
            Stmt::ListPrepend(v) => update(format!("l = {} + l", list_lit(v))),
            Stmt::ListSetIndex(i, v) => update(format!("l[{i}] = {v}")),
            Stmt::ListRemove(v) => update(format!("l = l - {}", list_lit(v))),
            Stmt::MapAssign(v) => update(format!("m = {}", whole(v, map_lit))),
            Stmt::MapPut(key, v) => update(format!("m[{key}] = {v}")),
            Stmt::MapAdd(v) => update(format!("m = m + {}", map_lit(v))),
            Stmt::MapRemove(v) => update(format!("m = m - {}", set_lit(v))),
            Stmt::UdtAssign(u) => update(format!("u = {}", udt_lit(u))),
            Stmt::UdtSetField(i, v) => update(format!("u.{} = {}", FIELDS[*i], int_or_null(*v))),
            Stmt::DeleteUdtField(i) => delete(&format!("u.{} ", FIELDS[*i]), row),
            Stmt::DeleteColumn(col) => delete(&format!("{} ", col.name()), row),
            Stmt::DeleteSetElement(v) => delete(&format!("s[{v}] "), row),
            Stmt::DeleteMapKey(key) => delete(&format!("m[{key}] "), row),
            Stmt::DeleteListIndex(i) => delete(&format!("l[{i}] "), row),
            Stmt::DeleteRow => delete("", row),
            Stmt::DeletePartition => delete("", format!("k = {k}")),
            Stmt::DeleteRange => delete("", format!("k = {k} AND c >= 1")),
        }
    }

    /// The list elements the statement adds, and whether it prepends them.
    pub(super) fn new_list_elements(&self) -> Option<(&[i32], bool)> {
        let (values, prepend) = match self {
            Stmt::Insert {
                l: Some(Some(v)), ..
            }
            | Stmt::ListAssign(Some(v)) => (v, false),
            Stmt::ListAppend(v) => (v, false),
            Stmt::ListPrepend(v) => (v, true),
            _ => return None,
        };
        (!values.is_empty()).then_some((values.as_slice(), prepend))
    }
}

pub(super) fn elements(max: usize) -> impl Strategy<Value = Vec<i32>> {
    proptest::collection::vec(-2i32..6, 0..=max)
}

pub(super) fn entries() -> impl Strategy<Value = Vec<(i32, i32)>> {
    proptest::collection::btree_map(-2i32..6, -2i32..6, 0..=3).prop_map(|m| m.into_iter().collect())
}

/// A whole value: mostly a literal (possibly empty), sometimes null.
pub(super) fn whole_value<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = Vec<T>>,
) -> impl Strategy<Value = Whole<T>> {
    prop_oneof![1 => Just(None), 5 => s.prop_map(Some)]
}

/// An INSERT's column: not named, null, or a literal.
pub(super) fn inserted<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = Vec<T>>,
) -> impl Strategy<Value = Option<Whole<T>>> {
    prop_oneof![1 => Just(None), 3 => whole_value(s).prop_map(Some)]
}

/// A `pt` value: each field mostly set.
pub(super) fn udt() -> impl Strategy<Value = Udt> {
    let field = proptest::option::weighted(0.75, -2i32..6);
    (field.clone(), field).prop_map(|(a, b)| [a, b])
}

pub(super) fn index() -> impl Strategy<Value = i32> {
    prop_oneof![6 => 0i32..2, 3 => 2i32..5, 1 => Just(-1)]
}

pub(super) fn stmt() -> impl Strategy<Value = Stmt> {
    prop_oneof![
        3 => (
            inserted(elements(3)),
            inserted(elements(3)),
            inserted(entries()),
            prop_oneof![1 => Just(None), 1 => Just(Some(None)), 3 => udt().prop_map(|u| Some(Some(u)))],
        )
            .prop_map(|(s, l, m, u)| Stmt::Insert { s, l, m, u }),
        2 => prop_oneof![1 => Just(None), 5 => udt().prop_map(Some)].prop_map(Stmt::UdtAssign),
        4 => (0..2usize, proptest::option::weighted(0.85, -2i32..6))
            .prop_map(|(i, v)| Stmt::UdtSetField(i, v)),
        2 => (0..2usize).prop_map(Stmt::DeleteUdtField),
        1 => whole_value(elements(3)).prop_map(Stmt::SetAssign),
        2 => elements(3).prop_map(Stmt::SetAdd),
        1 => elements(2).prop_map(Stmt::SetRemove),
        1 => whole_value(elements(3)).prop_map(Stmt::ListAssign),
        4 => elements(3).prop_map(Stmt::ListAppend),
        4 => elements(3).prop_map(Stmt::ListPrepend),
        3 => (index(), -2i32..6).prop_map(|(i, v)| Stmt::ListSetIndex(i, v)),
        1 => elements(2).prop_map(Stmt::ListRemove),
        1 => whole_value(entries()).prop_map(Stmt::MapAssign),
        2 => (-2i32..6, -2i32..6).prop_map(|(k, v)| Stmt::MapPut(k, v)),
        1 => entries().prop_map(Stmt::MapAdd),
        1 => elements(2).prop_map(Stmt::MapRemove),
        1 => prop_oneof![Just(Col::S), Just(Col::L), Just(Col::M), Just(Col::U)]
            .prop_map(Stmt::DeleteColumn),
        1 => (-2i32..6).prop_map(Stmt::DeleteSetElement),
        1 => (-2i32..6).prop_map(Stmt::DeleteMapKey),
        2 => index().prop_map(Stmt::DeleteListIndex),
        1 => Just(Stmt::DeleteRow),
        1 => Just(Stmt::DeletePartition),
        1 => Just(Stmt::DeleteRange),
    ]
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    let run = (
        0..ROWS,
        0i64..12,
        prop_oneof![3 => Just(None), 1 => (1u32..30).prop_map(Some)],
        prop_oneof![4 => Just(0b11u8), 1 => Just(0b01), 1 => Just(0b10)],
        stmt(),
    )
        .prop_map(|(row, ts, ttl, nodes, stmt)| Op::Run {
            row,
            ts,
            ttl: if stmt.is_delete() { None } else { ttl },
            nodes,
            stmt,
        });
    prop_oneof![
        40 => run,
        2 => Just(Op::Flush),
        2 => Just(Op::Compact),
        1 => (0..NODES).prop_map(Op::Reopen),
        4 => (1i64..20).prop_map(Op::Advance),
    ]
}

/// Write timestamps: before 2010 (as tests and tools often use), or about now.
pub(super) fn timestamp_base() -> impl Strategy<Value = i64> {
    prop_oneof![Just(1_000i64), Just(1_700_000_000_000_000i64)]
}
