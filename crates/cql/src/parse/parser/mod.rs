//! Recursive descent over the tokens, one method per grammar rule.
//!
//! The rules follow Cassandra's grammar (`Parser.g`) for the statements Mosaic runs, and
//! stop at the first token of a feature it does not (returning
//! [`ParseError::Unsupported`]). Recursion (nested terms, tuples, selectors) is bounded by
//! [`DEPTH_MAX`] so hostile input cannot overflow the stack; every loop consumes a token per
//! iteration, so parsing is linear in the number of tokens.
#![deny(clippy::indexing_slicing)]

use mosaic_types::{CqlType, DataType};

use super::error::{position, Feature, ParseError};
use super::keywords::is_reserved;
use super::lexer::{clip, tokenize, unquote, Kind, Token};
use crate::ast::*;
use crate::schema::TargetKind;

mod auth;
mod conditions;
mod ddl;
mod dml;
mod select;
mod terms;

/// How deeply terms, tuples and selectors may nest.
pub const DEPTH_MAX: usize = 64;
/// How many bind markers one statement may have: the protocol counts them in a u16.
pub const BIND_MARKERS_MAX: usize = u16::MAX as usize;

type PResult<T> = Result<T, ParseError>;

pub(crate) struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    /// Bind markers of the statement being parsed, in order.
    binds: Vec<BindMarker>,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(text: &'a str) -> PResult<Self> {
        Ok(Parser {
            text,
            tokens: tokenize(text)?,
            pos: 0,
            depth: 0,
            binds: Vec::new(),
        })
    }

    // ----- token access -----

    fn eof_token(&self) -> Token {
        Token {
            kind: Kind::Eof,
            start: self.text.len(),
            end: self.text.len(),
        }
    }

    fn peek_at(&self, n: usize) -> Token {
        self.tokens
            .get(self.pos.saturating_add(n))
            .or(self.tokens.last())
            .copied()
            .unwrap_or_else(|| self.eof_token())
    }

    fn peek(&self) -> Token {
        self.peek_at(0)
    }

    fn bump(&mut self) -> Token {
        let t = self.peek();
        if t.kind != Kind::Eof {
            self.pos += 1;
        }
        t
    }

    fn slice(&self, t: Token) -> &'a str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    fn is(&self, kind: Kind) -> bool {
        self.peek().kind == kind
    }

    fn is_at(&self, n: usize, kind: Kind) -> bool {
        self.peek_at(n).kind == kind
    }

    fn accept(&mut self, kind: Kind) -> bool {
        if self.is(kind) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, kind: Kind) -> PResult<Token> {
        if self.is(kind) {
            Ok(self.bump())
        } else {
            Err(self.mismatch(kind.describe()))
        }
    }

    fn is_kw_at(&self, n: usize, kw: &str) -> bool {
        let t = self.peek_at(n);
        t.kind == Kind::Word && self.slice(t).eq_ignore_ascii_case(kw)
    }

    fn is_kw(&self, kw: &str) -> bool {
        self.is_kw_at(0, kw)
    }

    fn accept_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, kw: &str) -> PResult<Token> {
        if self.is_kw(kw) {
            Ok(self.bump())
        } else {
            Err(self.mismatch(&format!("K_{kw}")))
        }
    }

    pub(crate) fn at_eof(&self) -> bool {
        self.is(Kind::Eof)
    }

    pub(crate) fn accept_semicolon(&mut self) -> bool {
        self.accept(Kind::Semicolon)
    }

    pub(crate) fn expect_eof(&mut self) -> PResult<()> {
        self.expect(Kind::Eof).map(|_| ())
    }

    fn enter(&mut self) -> PResult<()> {
        if self.depth >= DEPTH_MAX {
            let t = self.peek();
            let (line, column) = position(self.text, t.start);
            return Err(ParseError::Syntax {
                line,
                column,
                message: format!("input nested more than {DEPTH_MAX} levels deep"),
            });
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ----- errors -----

    fn token_text(&self, t: Token) -> String {
        if t.kind == Kind::Eof {
            "<EOF>".to_owned()
        } else {
            clip(self.slice(t))
        }
    }

    /// `(a b [offending]...)`: up to two tokens of context before the current one.
    fn snippet(&self) -> String {
        let t = self.peek();
        let from = self
            .tokens
            .get(self.pos.saturating_sub(2))
            .map_or(t.start, |p| p.start);
        let before = clip(self.text.get(from..t.start).unwrap_or(""));
        let more = if t.kind != Kind::Eof && !self.is_at(1, Kind::Eof) {
            "..."
        } else {
            ""
        };
        let current = if t.kind == Kind::Eof {
            String::new()
        } else {
            self.token_text(t)
        };
        format!("({before}[{current}]{more})")
    }

    fn syntax_error(&self, message: String) -> ParseError {
        let t = self.peek();
        let (line, column) = position(self.text, t.start);
        ParseError::Syntax {
            line,
            column,
            message: format!("{message} {}", self.snippet()),
        }
    }

    fn mismatch(&self, expected: &str) -> ParseError {
        let t = self.peek();
        self.syntax_error(format!(
            "mismatched input '{}' expecting {expected}",
            self.token_text(t)
        ))
    }

    fn no_viable(&self) -> ParseError {
        let t = self.peek();
        self.syntax_error(format!(
            "no viable alternative at input '{}'",
            self.token_text(t)
        ))
    }

    fn unsupported(&self, t: Token, feature: Feature, what: &str) -> ParseError {
        let (line, column) = position(self.text, t.start);
        ParseError::Unsupported {
            feature,
            line,
            column,
            message: match feature {
                // Cassandra 4 marks them experimental and disables them by default
                // (`materialized_views_enabled: false`).
                Feature::MaterializedView => format!(
                    "Mosaic does not support materialized views, which Cassandra itself marks experimental and disables by default; keep a second table written alongside instead: {what}"
                ),
                _ => format!("Mosaic does not support {}: {what}", feature.name()),
            },
        }
    }

    fn invalid(&self, t: Token, message: String) -> ParseError {
        let (line, column) = position(self.text, t.start);
        ParseError::Invalid {
            line,
            column,
            message,
        }
    }

    // ----- statements -----

    /// One statement, starting a fresh bind-marker count.
    pub(crate) fn parse_statement(&mut self) -> PResult<Statement> {
        self.binds.clear();
        self.depth = 0;
        let t = self.peek();
        if t.kind != Kind::Word {
            return Err(self.no_viable());
        }
        let word = self.slice(t).to_ascii_uppercase();
        match word.as_str() {
            "SELECT" => self.parse_select().map(Statement::Select),
            "INSERT" => self.parse_insert().map(Statement::Insert),
            "UPDATE" => self.parse_update().map(Statement::Update),
            "DELETE" => self.parse_delete().map(Statement::Delete),
            "BEGIN" => self.parse_batch().map(Statement::Batch),
            "USE" => {
                self.bump();
                let keyspace = self.parse_ident()?;
                Ok(Statement::Use(UseStatement { keyspace }))
            }
            "CREATE" => self.parse_create(),
            "ALTER" => self.parse_alter(),
            "DROP" => self.parse_drop(),
            "TRUNCATE" => {
                self.bump();
                let _ = self.accept_kw("TABLE") || self.accept_kw("COLUMNFAMILY");
                let name = self.parse_qualified_name()?;
                Ok(Statement::Truncate(TruncateStatement { name }))
            }
            "GRANT" => self.parse_grant_or_revoke(true),
            "REVOKE" => self.parse_grant_or_revoke(false),
            "LIST" => self.parse_list(),
            "DESCRIBE" | "DESC" => self.parse_describe().map(Statement::Describe),
            _ => Err(self.no_viable()),
        }
    }

    fn unexpected_at(&self, t: Token) -> ParseError {
        let (line, column) = position(self.text, t.start);
        ParseError::Syntax {
            line,
            column,
            message: format!("no viable alternative at input '{}'", self.token_text(t)),
        }
    }
}
