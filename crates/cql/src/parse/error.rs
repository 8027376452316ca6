//! Why CQL text was refused, and which Cassandra error the client gets for it.

use std::fmt;

/// The Cassandra error code for a syntax error (`SyntaxException`).
pub const SYNTAX_ERROR_CODE: i32 = 0x2000;
/// The Cassandra error code for a well-formed but invalid request (`InvalidRequest`).
pub const INVALID_ERROR_CODE: i32 = 0x2200;

/// A CQL feature Mosaic understands well enough to name but does not implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// `IF NOT EXISTS` / `IF EXISTS` / `IF cond` on `INSERT`, `UPDATE`, `DELETE` (no longer
    /// refused: the parser accepts them and the statement layer runs them).
    LightweightTransaction,
    /// `CREATE INDEX`, `DROP INDEX`, `CONTAINS`/`LIKE` relations.
    SecondaryIndex,
    /// `CREATE/ALTER/DROP MATERIALIZED VIEW`, `IS NOT NULL`.
    MaterializedView,
    /// `CREATE/DROP FUNCTION`.
    UserDefinedFunction,
    /// `CREATE/DROP AGGREGATE`.
    UserDefinedAggregate,
    /// `CREATE/ALTER/DROP TYPE`, user-defined type names, field access `c.field`.
    UserDefinedType,
    /// `CREATE/DROP TRIGGER`.
    Trigger,
    /// `list<…>`, `set<…>`, `map<…>`, `frozen<…>`, collection literals and element access.
    Collection,
    /// `tuple<…>`.
    Tuple,
    /// The `counter` type where no counter can stand (`CAST(… AS counter)`).
    Counter,
    /// `INSERT … JSON`, `SELECT JSON`.
    Json,
    /// `WITH COMPACT STORAGE`.
    CompactStorage,
    /// Users, roles and permissions: `CREATE USER/ROLE`, `GRANT`, `REVOKE`, `LIST`.
    Authorization,
    /// A type Mosaic does not store: custom (Java class) types.
    DataType,
}

impl Feature {
    /// A short human name, used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Feature::LightweightTransaction => "lightweight transactions (IF conditions)",
            Feature::SecondaryIndex => "secondary indexes",
            Feature::MaterializedView => "materialized views",
            Feature::UserDefinedFunction => "user-defined functions",
            Feature::UserDefinedAggregate => "user-defined aggregates",
            Feature::UserDefinedType => "user-defined types",
            Feature::Trigger => "triggers",
            Feature::Collection => "collections",
            Feature::Tuple => "tuples",
            Feature::Counter => "counters",
            Feature::Json => "JSON statements",
            Feature::CompactStorage => "COMPACT STORAGE",
            Feature::Authorization => "users, roles and permissions",
            Feature::DataType => "this data type",
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why CQL text did not become a [`crate::ast::Statement`].
///
/// Positions are Cassandra's (ANTLR's): `line` counts from 1, `column` is the 0-based
/// character offset within the line, so messages read like Cassandra's own
/// (`line 1:9 mismatched input 'FRM' expecting K_FROM (SELECT * [FRM]...)`).
///
/// The design choice: unsupported features are *errors*, not a `Statement` variant. An
/// executor then never has to remember to refuse a half-understood statement, PREPARE of
/// an unsupported statement fails exactly like its execution would, and every refusal
/// carries the Cassandra error code the client must receive ([`ParseError::error_code`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The text is not CQL (Cassandra's `SyntaxException`, code 0x2000).
    #[error("line {line}:{column} {message}")]
    Syntax {
        /// 1-based line of the offending input.
        line: u32,
        /// 0-based character column of the offending input.
        column: u32,
        /// What was wrong, with a snippet of the surrounding input.
        message: String,
    },
    /// Well-formed CQL using a feature Mosaic does not implement (`InvalidRequest`,
    /// code 0x2200; retrying cannot help).
    #[error("{message}")]
    Unsupported {
        /// The feature.
        feature: Feature,
        /// 1-based line where the feature starts.
        line: u32,
        /// 0-based character column where the feature starts.
        column: u32,
        /// A message naming the feature and the offending construct.
        message: String,
    },
    /// Well-formed CQL that Cassandra also refuses before looking at any schema: no or
    /// several `PRIMARY KEY` clauses, unmatched `INSERT` columns and values, a duplicate
    /// property, too many bind markers (`InvalidRequest`, code 0x2200).
    #[error("{message}")]
    Invalid {
        /// 1-based line of the offending construct.
        line: u32,
        /// 0-based character column of the offending construct.
        column: u32,
        /// What was wrong.
        message: String,
    },
}

impl ParseError {
    /// The native-protocol error code the client receives: [`SYNTAX_ERROR_CODE`] or
    /// [`INVALID_ERROR_CODE`].
    pub fn error_code(&self) -> i32 {
        match self {
            ParseError::Syntax { .. } => SYNTAX_ERROR_CODE,
            ParseError::Unsupported { .. } | ParseError::Invalid { .. } => INVALID_ERROR_CODE,
        }
    }

    /// 1-based line of the error.
    pub fn line(&self) -> u32 {
        match self {
            ParseError::Syntax { line, .. }
            | ParseError::Unsupported { line, .. }
            | ParseError::Invalid { line, .. } => *line,
        }
    }

    /// 0-based character column of the error.
    pub fn column(&self) -> u32 {
        match self {
            ParseError::Syntax { column, .. }
            | ParseError::Unsupported { column, .. }
            | ParseError::Invalid { column, .. } => *column,
        }
    }

    /// The message without the position prefix.
    pub fn message(&self) -> &str {
        match self {
            ParseError::Syntax { message, .. }
            | ParseError::Unsupported { message, .. }
            | ParseError::Invalid { message, .. } => message,
        }
    }

    /// The unsupported feature, if that is why the text was refused.
    pub fn feature(&self) -> Option<Feature> {
        match self {
            ParseError::Unsupported { feature, .. } => Some(*feature),
            _ => None,
        }
    }
}

/// `(line, column)` of byte `offset` in `text`: 1-based line, 0-based column in characters.
pub(crate) fn position(text: &str, offset: usize) -> (u32, u32) {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let column = before.get(line_start..).unwrap_or("").chars().count();
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_from_one_and_columns_from_zero() {
        assert_eq!(position("SELECT", 0), (1, 0));
        assert_eq!(position("SELECT * FRM", 9), (1, 9));
        assert_eq!(position("a\nbc", 3), (2, 1));
        assert_eq!(
            position("é x", 3),
            (1, 2),
            "columns count characters, not bytes"
        );
        assert_eq!(position("ab", 99), (1, 2), "an offset past the end clamps");
    }

    #[test]
    fn codes_follow_cassandra() {
        let syntax = ParseError::Syntax {
            line: 1,
            column: 0,
            message: String::new(),
        };
        assert_eq!(syntax.error_code(), 0x2000);
        let unsupported = ParseError::Unsupported {
            feature: Feature::Counter,
            line: 1,
            column: 0,
            message: String::new(),
        };
        assert_eq!(unsupported.error_code(), 0x2200);
        assert_eq!(unsupported.feature(), Some(Feature::Counter));
    }
}
