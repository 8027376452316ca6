//! Which words CQL reserves.
//!
//! Reserved keywords cannot be unquoted identifiers; every other keyword (`key`, `value`,
//! `ttl`, `timestamp`, `type`, `values`, `count`, `distinct`, …) is a keyword only where the
//! grammar expects it and an identifier elsewhere, as in Cassandra. The list is Cassandra's
//! reserved-keyword list (3.11/4.x), plus `true` and `false`, which Cassandra's lexer turns
//! into boolean literals so they can never be unquoted identifiers either.

const RESERVED: [&str; 59] = [
    "ADD",
    "ALLOW",
    "ALTER",
    "AND",
    "APPLY",
    "ASC",
    "AUTHORIZE",
    "BATCH",
    "BEGIN",
    "BY",
    "COLUMNFAMILY",
    "CREATE",
    "DELETE",
    "DESC",
    "DESCRIBE",
    "DROP",
    "ENTRIES",
    "EXECUTE",
    "FALSE",
    "FROM",
    "FULL",
    "GRANT",
    "IF",
    "IN",
    "INDEX",
    "INFINITY",
    "INSERT",
    "INTO",
    "IS",
    "KEYSPACE",
    "LIMIT",
    "MATERIALIZED",
    "MODIFY",
    "NAN",
    "NORECURSIVE",
    "NOT",
    "NULL",
    "OF",
    "ON",
    "OR",
    "ORDER",
    "PRIMARY",
    "RENAME",
    "REVOKE",
    "SCHEMA",
    "SELECT",
    "SET",
    "TABLE",
    "TO",
    "TOKEN",
    "TRUE",
    "TRUNCATE",
    "UNLOGGED",
    "UPDATE",
    "USE",
    "USING",
    "VIEW",
    "WHERE",
    "WITH",
];

/// Whether `word` (any case) is reserved.
pub(crate) fn is_reserved(word: &str) -> bool {
    // Every reserved word is 2..=12 ASCII letters: most identifiers are rejected by the
    // length check before any comparison.
    (2..=12).contains(&word.len()) && RESERVED.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// The words that start a `DESCRIBE` target (`DESCRIBE CLUSTER`, `DESCRIBE TABLES`, …).
/// Most are unreserved, so a keyspace or table may bear one of these names; `DESCRIBE`
/// reads such a bare word as the keyword, and a name must then be quoted.
pub(crate) const DESCRIBE_WORDS: [&str; 18] = [
    "AGGREGATE",
    "AGGREGATES",
    "CLUSTER",
    "COLUMNFAMILIES",
    "COLUMNFAMILY",
    "FULL",
    "FUNCTION",
    "FUNCTIONS",
    "INDEX",
    "KEYSPACE",
    "KEYSPACES",
    "MATERIALIZED",
    "ONLY",
    "SCHEMA",
    "TABLE",
    "TABLES",
    "TYPE",
    "TYPES",
];

/// Whether `word` (any case) starts a `DESCRIBE` target.
pub(crate) fn is_describe_word(word: &str) -> bool {
    DESCRIBE_WORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_words_are_reserved_in_any_case() {
        assert!(is_reserved("select"));
        assert!(is_reserved("SeLeCt"));
        assert!(is_reserved("token"));
        assert!(is_reserved("columnfamily"));
        assert!(is_reserved("true"));
    }

    #[test]
    fn unreserved_keywords_stay_identifiers() {
        for w in [
            "key",
            "value",
            "ttl",
            "timestamp",
            "type",
            "values",
            "count",
            "distinct",
        ] {
            assert!(!is_reserved(w), "{w}");
        }
    }

    #[test]
    fn list_is_sorted_and_within_length_bounds() {
        assert!(RESERVED.windows(2).all(|w| matches!(w, [a, b] if a < b)));
        assert!(RESERVED.iter().all(|k| (2..=12).contains(&k.len())));
    }
}
