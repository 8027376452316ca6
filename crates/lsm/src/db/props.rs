//! The table properties block the engine writes into every table it creates, and the
//! questions the read path asks of it.
//!
//! The format is tiny — `[version, flags]`, plus the filter's prefix length when the Bloom
//! filter covers key prefixes — and is read back from tables written long ago, so its
//! writer and its readers live side by side here. Tables without a recognised block are
//! read the conservative way: several versions per key, whole-key filters.

use crate::error::Result;
use crate::stats::ReadPurpose;
use crate::version::TableHandle;

/// Version of the engine's table properties block: `[1, flags]`.
const TABLE_PROPS_V1: u8 = 1;
/// Property flag: every user key has exactly one version in the table, so a point lookup
/// can stop at the first match instead of reading on (perhaps into the next block).
const TABLE_FLAG_UNIQUE_KEYS: u8 = 1;

/// Property flag: the Bloom filter covers only a prefix of each key, whose length is the
/// next property byte.
const TABLE_FLAG_PREFIX_FILTER: u8 = 2;

/// The properties block of a table whose keys have one version each unless
/// `multi_version`, with a filter over prefixes of `filter_prefix_bytes` (0: whole keys;
/// [`crate::Options::validate`] keeps it within a byte).
pub(super) fn encode(multi_version: bool, filter_prefix_bytes: usize) -> Vec<u8> {
    let mut flags = if multi_version {
        0
    } else {
        TABLE_FLAG_UNIQUE_KEYS
    };
    match u8::try_from(filter_prefix_bytes) {
        Ok(n) if n > 0 => {
            flags |= TABLE_FLAG_PREFIX_FILTER;
            vec![TABLE_PROPS_V1, flags, n]
        }
        _ => vec![TABLE_PROPS_V1, flags],
    }
}

/// The length of the key prefix `t`'s filter covers, if it is a prefix filter.
fn filter_prefix_of(t: &TableHandle) -> Option<usize> {
    match t.reader().properties() {
        [TABLE_PROPS_V1, flags, n, ..] if flags & TABLE_FLAG_PREFIX_FILTER != 0 => {
            Some(usize::from(*n))
        }
        _ => None,
    }
}

/// What to probe `t`'s filter with for a lookup of `key`.
pub(super) fn filter_probe<'k>(t: &TableHandle, key: &'k [u8]) -> &'k [u8] {
    match filter_prefix_of(t) {
        Some(n) => crate::table::filter_prefix(key, n),
        None => key,
    }
}

/// Whether `t` may hold a key starting with `prefix` (a table whose filter is not over
/// prefixes of that length may), reading its filter for `purpose` if it is not in memory.
pub(super) fn table_may_hold_prefix(
    t: &TableHandle,
    prefix: &[u8],
    purpose: ReadPurpose,
) -> Result<bool> {
    if filter_prefix_of(t) != Some(prefix.len()) {
        return Ok(true);
    }
    t.reader().may_contain(prefix, purpose)
}

/// Whether every user key in `t` has exactly one version.
pub(super) fn table_has_unique_keys(t: &TableHandle) -> bool {
    matches!(t.reader().properties(), [TABLE_PROPS_V1, flags, ..] if flags & TABLE_FLAG_UNIQUE_KEYS != 0)
}
