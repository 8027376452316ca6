//! CQL text to [`Statement`]s: a hand-written lexer and a recursive-descent parser.
//!
//! Owns: the CQL grammar Mosaic accepts, Cassandra-style syntax errors with positions, and
//! the refusal of CQL features Mosaic does not implement. Must not depend on schemas or
//! anything that executes: the same text always parses to the same tree, so the result of
//! parsing can be cached by a PREPARE and the parser can be fuzzed on its own.
//!
//! # What is accepted
//!
//! `USE`; `CREATE/ALTER/DROP KEYSPACE`; `CREATE TABLE` (inline or table-level
//! `PRIMARY KEY`, composite partition keys, `STATIC`, `WITH CLUSTERING ORDER BY` and any
//! `name = constant | {map}` option, so Mosaic's own options such as `layout` parse);
//! `ALTER TABLE … ADD/DROP/RENAME/WITH`; `DROP TABLE`; `TRUNCATE`; `INSERT … VALUES …
//! USING TTL/TIMESTAMP`; `UPDATE … SET c = term`; `DELETE [cols] FROM … USING TIMESTAMP`;
//! `SELECT [DISTINCT]` with columns, `count(*)`, aggregates and other function calls,
//! `writetime`, `ttl`, `CAST`, aliases, single-column, `IN`, multi-column and `token(…)`
//! relations, `GROUP BY`, `ORDER BY`, `PER PARTITION LIMIT`, `LIMIT`, `ALLOW FILTERING`;
//! `BEGIN [UNLOGGED] BATCH … APPLY BATCH`; Cassandra 4.0's `DESCRIBE`/`DESC` (`CLUSTER`,
//! `[FULL] SCHEMA`, `KEYSPACES`, `[ONLY] KEYSPACE [ks]`, `TABLES`, `TABLE t`, `INDEX`,
//! `MATERIALIZED VIEW`, `TYPES`/`TYPE`, `FUNCTIONS`/`FUNCTION`, `AGGREGATES`/`AGGREGATE`,
//! a bare `[ks.]name`, each with `WITH INTERNALS`). Values may be bind markers (`?`, `:name`)
//! wherever Cassandra allows them, including `USING`, `LIMIT` and `IN ?`.
//!
//! # What is refused, and how
//!
//! Text that is not CQL gives [`ParseError::Syntax`] (protocol error 0x2000). CQL that
//! Mosaic does not implement gives [`ParseError::Unsupported`] naming a [`Feature`]
//! (protocol error 0x2200, Invalid): lightweight transactions (`IF …`), secondary indexes
//! and `CONTAINS`/`LIKE`, materialized views, user-defined types, functions, aggregates
//! and triggers, collection and tuple types, literals and element access, `counter` where
//! no counter can stand (`CAST(… AS counter)`), JSON, `COMPACT STORAGE`, roles and
//! permissions, and custom (Java class) types. The parser stops at
//! the first token of such a feature, so the error points at it. Statements Cassandra
//! refuses before looking at a schema (two `PRIMARY KEY`s, unmatched `INSERT` columns and
//! values, duplicate properties, more than 65,535 bind markers) give
//! [`ParseError::Invalid`] (0x2200). See [`ParseError`] for why refusals are errors rather
//! than statements.
//!
//! # Limits
//!
//! Parsing never panics and is linear in the input; nesting (function calls, tuples,
//! selectors) is limited to [`DEPTH_MAX`] levels.

mod error;
pub(crate) mod keywords;
mod lexer;
mod parser;

pub use error::{Feature, ParseError, INVALID_ERROR_CODE, SYNTAX_ERROR_CODE};
pub use parser::{BIND_MARKERS_MAX, DEPTH_MAX};

use crate::ast::Statement;
use parser::Parser;

/// Parses exactly one statement, optionally followed by `;`.
///
/// ```
/// use mosaic_cql::ast::Statement;
/// let s = mosaic_cql::parse::parse_statement("SELECT * FROM system.local WHERE key='local'")
///     .expect("parses");
/// assert!(matches!(s, Statement::Select(_)));
/// ```
pub fn parse_statement(text: &str) -> Result<Statement, ParseError> {
    let mut parser = Parser::new(text)?;
    let statement = parser.parse_statement()?;
    parser.accept_semicolon();
    parser.expect_eof()?;
    Ok(statement)
}

/// Parses `;`-separated statements (a script); empty statements are skipped. Each statement
/// numbers its bind markers from 0.
pub fn parse_statements(text: &str) -> Result<Vec<Statement>, ParseError> {
    let mut parser = Parser::new(text)?;
    let mut out = Vec::new();
    loop {
        while parser.accept_semicolon() {}
        if parser.at_eof() {
            return Ok(out);
        }
        out.push(parser.parse_statement()?);
        if !parser.accept_semicolon() {
            parser.expect_eof()?;
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests;
