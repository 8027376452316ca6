//! Arbitrary bytes as a bound value of a collection, tuple, user-defined or other
//! non-trivial type (the first byte picks the type, the rest is the value's native-protocol
//! serialization): [`DataType::decode`] validates what a client binds, so it must never
//! panic, and a value it accepts must serialize back to bytes that decode to the same
//! value.

use mosaic_types::{DataType, UserType};

/// The type names picked by the first byte; `None` entries are the user-defined types of
/// [`user_type`].
pub const TYPES: [Option<&str>; 14] = [
    Some("list<int>"),
    Some("set<text>"),
    Some("map<int, text>"),
    Some("map<frozen<list<blob>>, boolean>"),
    Some("frozen<set<frozen<map<inet, time>>>>"),
    Some("tuple<int, text, frozen<set<bigint>>>"),
    Some("tuple<duration, tuple<date, timeuuid>>"),
    Some("list<frozen<tuple<inet, varint, decimal>>>"),
    Some("inet"),
    Some("time"),
    Some("duration"),
    Some("set<timestamp>"),
    None,
    None,
];

/// A user-defined type with a nested one, as `CREATE TYPE` would define them.
pub fn user_type(nested: bool) -> DataType {
    let address = DataType::Udt(Box::new(UserType {
        keyspace: "ks".into(),
        name: "address".into(),
        fields: vec![
            ("street".into(), "text".parse().unwrap()),
            ("zip".into(), "int".parse().unwrap()),
            ("tags".into(), "frozen<set<text>>".parse().unwrap()),
        ],
    }));
    if !nested {
        return address;
    }
    DataType::Udt(Box::new(UserType {
        keyspace: "ks".into(),
        name: "person".into(),
        fields: vec![
            ("name".into(), "text".parse().unwrap()),
            ("addr".into(), DataType::Frozen(Box::new(address))),
            ("seen".into(), "frozen<list<duration>>".parse().unwrap()),
        ],
    }))
}

/// The type a selector byte picks.
pub fn type_at(selector: u8) -> DataType {
    let index = usize::from(selector) % TYPES.len();
    match TYPES[index] {
        Some(name) => name.parse::<DataType>().unwrap(),
        None => user_type(index % 2 == 1),
    }
}

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let ty = type_at(selector);
    let Ok(value) = ty.decode(rest) else {
        return;
    };
    let bytes = value.to_cql_bytes();
    assert_eq!(ty.decode(&bytes), Ok(value), "{ty} from {rest:?}");
}
