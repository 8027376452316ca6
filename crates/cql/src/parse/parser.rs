//! Recursive descent over the tokens, one method per grammar rule.
//!
//! The rules follow Cassandra's grammar (`Parser.g`) for the statements Mosaic runs, and
//! stop at the first token of a feature it does not (returning
//! [`ParseError::Unsupported`]). Recursion (nested terms, tuples, selectors) is bounded by
//! [`DEPTH_MAX`] so hostile input cannot overflow the stack; every loop consumes a token per
//! iteration, so parsing is linear in the number of tokens.
#![deny(clippy::indexing_slicing)]

use mosaic_types::CqlType;

use super::error::{position, Feature, ParseError};
use super::keywords::is_reserved;
use super::lexer::{clip, tokenize, unquote, Kind, Token};
use crate::ast::*;

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
            message: format!("Mosaic does not support {}: {what}", feature.name()),
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

    // ----- names -----

    fn parse_ident(&mut self) -> PResult<Ident> {
        let t = self.peek();
        match t.kind {
            Kind::Word if !is_reserved(self.slice(t)) => {
                self.bump();
                Ok(Ident::from_unquoted(self.slice(t)))
            }
            Kind::QuotedName => {
                self.bump();
                Ok(Ident::new(unquote(self.slice(t), '"')))
            }
            Kind::Word => Err(self.no_viable()),
            _ => Err(self.mismatch("IDENT")),
        }
    }

    fn parse_qualified_name(&mut self) -> PResult<QualifiedName> {
        let first = self.parse_ident()?;
        if self.accept(Kind::Dot) {
            let name = self.parse_ident()?;
            Ok(QualifiedName {
                keyspace: Some(first),
                name,
            })
        } else {
            Ok(QualifiedName {
                keyspace: None,
                name: first,
            })
        }
    }

    /// `( ident, … )` (at least one).
    fn parse_ident_list(&mut self) -> PResult<Vec<Ident>> {
        self.expect(Kind::LParen)?;
        let mut out = vec![self.parse_ident()?];
        while self.accept(Kind::Comma) {
            out.push(self.parse_ident()?);
        }
        self.expect(Kind::RParen)?;
        Ok(out)
    }

    fn parse_function_name(&mut self) -> PResult<Ident> {
        let t = self.peek();
        match t.kind {
            Kind::Word => {
                self.bump();
                Ok(Ident::from_unquoted(self.slice(t)))
            }
            Kind::QuotedName => {
                self.bump();
                Ok(Ident::new(unquote(self.slice(t), '"')))
            }
            _ => Err(self.mismatch("IDENT")),
        }
    }

    /// Refuses `c[…]` (collection elements) and `c.field` (UDT fields) after a column name.
    fn refuse_element_access(&self) -> PResult<()> {
        let t = self.peek();
        match t.kind {
            Kind::LBracket => {
                Err(self.unsupported(t, Feature::Collection, "collection element access c[…]"))
            }
            Kind::Dot => Err(self.unsupported(t, Feature::UserDefinedType, "field access c.field")),
            _ => Ok(()),
        }
    }

    // ----- terms -----

    fn parse_bind_marker(&mut self) -> PResult<BindMarker> {
        let t = self.bump();
        let name = match t.kind {
            Kind::QMark => None,
            Kind::Colon => Some(self.parse_ident()?),
            _ => return Err(self.mismatch("QMARK")),
        };
        if self.binds.len() >= BIND_MARKERS_MAX {
            return Err(self.invalid(
                t,
                format!(
                    "Too many markers(?). More than {BIND_MARKERS_MAX} markers are not allowed"
                ),
            ));
        }
        let marker = BindMarker {
            index: self.binds.len(),
            name,
        };
        self.binds.push(marker.clone());
        Ok(marker)
    }

    fn is_bind_start(&self) -> bool {
        matches!(self.peek().kind, Kind::QMark | Kind::Colon)
    }

    /// A constant, or `None` if the current token does not start one.
    fn try_parse_literal(&mut self) -> PResult<Option<Literal>> {
        let t = self.peek();
        let text = self.slice(t);
        let literal = match t.kind {
            Kind::String => Literal::String(unquote(text, '\'')),
            Kind::DollarString => Literal::String(
                text.strip_prefix("$$")
                    .and_then(|s| s.strip_suffix("$$"))
                    .unwrap_or("")
                    .to_owned(),
            ),
            Kind::Integer => Literal::Integer(text.to_owned()),
            Kind::Float => Literal::Float(text.to_owned()),
            Kind::Hex => Literal::Blob(decode_hex(text.get(2..).unwrap_or(""))),
            Kind::Uuid => match u128::from_str_radix(&text.replace('-', ""), 16) {
                Ok(u) => Literal::Uuid(u),
                Err(_) => return Err(self.no_viable()),
            },
            Kind::Duration => {
                return Err(self.unsupported(t, Feature::DataType, "duration literals"))
            }
            Kind::Minus => {
                let next = self.peek_at(1);
                let word = self.slice(next);
                if next.kind == Kind::Word && word.eq_ignore_ascii_case("infinity") {
                    self.bump();
                    Literal::NegInfinity
                } else if next.kind == Kind::Word && word.eq_ignore_ascii_case("nan") {
                    self.bump();
                    Literal::NaN
                } else {
                    return Ok(None);
                }
            }
            Kind::Word => match text.to_ascii_lowercase().as_str() {
                "true" => Literal::Boolean(true),
                "false" => Literal::Boolean(false),
                "null" => Literal::Null,
                "nan" => Literal::NaN,
                "infinity" => Literal::Infinity,
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        self.bump();
        Ok(Some(literal))
    }

    /// Whether the current token names a function being called: `name (`, where `name` is
    /// an unreserved word, `token`, or a quoted name.
    fn at_call(&self) -> bool {
        let t = self.peek();
        self.is_at(1, Kind::LParen)
            && match t.kind {
                Kind::Word => {
                    let w = self.slice(t);
                    !is_reserved(w) || w.eq_ignore_ascii_case("token")
                }
                Kind::QuotedName => true,
                _ => false,
            }
    }

    pub(crate) fn parse_term(&mut self) -> PResult<Term> {
        self.enter()?;
        let term = self.parse_term_inner();
        self.leave();
        term
    }

    fn parse_term_inner(&mut self) -> PResult<Term> {
        let t = self.peek();
        match t.kind {
            Kind::QMark | Kind::Colon => return self.parse_bind_marker().map(Term::Bind),
            Kind::LParen => {
                self.bump();
                let items = self.parse_term_list_until_rparen(false)?;
                return Ok(Term::Tuple(items));
            }
            Kind::LBracket | Kind::LBrace => {
                return Err(self.unsupported(t, Feature::Collection, "collection literals"))
            }
            _ => {}
        }
        if self.at_call() {
            let name = self.parse_function_name()?;
            self.expect(Kind::LParen)?;
            let args = self.parse_term_list_until_rparen(true)?;
            return Ok(Term::Call { name, args });
        }
        match self.try_parse_literal()? {
            Some(l) => Ok(Term::Literal(l)),
            None => Err(self.no_viable()),
        }
    }

    /// Terms separated by commas up to and including `)`; `allow_empty` for `f()` and
    /// `IN ()`.
    fn parse_term_list_until_rparen(&mut self, allow_empty: bool) -> PResult<Vec<Term>> {
        let mut out = Vec::new();
        if allow_empty && self.accept(Kind::RParen) {
            return Ok(out);
        }
        loop {
            out.push(self.parse_term()?);
            if !self.accept(Kind::Comma) {
                break;
            }
        }
        self.expect(Kind::RParen)?;
        Ok(out)
    }

    fn parse_int_value(&mut self) -> PResult<IntValue> {
        if self.is_bind_start() {
            return self.parse_bind_marker().map(IntValue::Bind);
        }
        let t = self.peek();
        if t.kind != Kind::Integer {
            return Err(self.mismatch("INTEGER"));
        }
        match self.slice(t).parse::<i64>() {
            Ok(n) => {
                self.bump();
                Ok(IntValue::Literal(n))
            }
            Err(_) => Err(self.invalid(
                t,
                format!(
                    "Invalid integer value {}: out of range",
                    clip(self.slice(t))
                ),
            )),
        }
    }

    // ----- types -----

    fn parse_type(&mut self) -> PResult<CqlType> {
        let t = self.peek();
        match t.kind {
            Kind::Word => {
                let word = self.slice(t);
                if let Ok(ty) = word.parse::<CqlType>() {
                    self.bump();
                    return Ok(ty);
                }
                let lower = word.to_ascii_lowercase();
                let generic = self.is_at(1, Kind::Lt);
                match lower.as_str() {
                    "list" | "set" | "map" | "frozen" if generic => {
                        Err(self.unsupported(t, Feature::Collection, &format!("type {lower}<…>")))
                    }
                    "tuple" if generic => Err(self.unsupported(t, Feature::Tuple, "type tuple<…>")),
                    "counter" => Err(self.unsupported(t, Feature::Counter, "type counter")),
                    "inet" | "time" | "duration" => {
                        Err(self.unsupported(t, Feature::DataType, &format!("type {lower}")))
                    }
                    _ if is_reserved(word) => Err(self.no_viable()),
                    _ => Err(self.unsupported(
                        t,
                        Feature::UserDefinedType,
                        &format!("unknown type {}", clip(&lower)),
                    )),
                }
            }
            Kind::QuotedName => Err(self.unsupported(
                t,
                Feature::UserDefinedType,
                &format!("unknown type {}", self.token_text(t)),
            )),
            Kind::String => Err(self.unsupported(t, Feature::DataType, "custom types")),
            _ => Err(self.mismatch("a type")),
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
            "GRANT" | "REVOKE" | "LIST" => {
                Err(self.unsupported(t, Feature::Authorization, &format!("{word} statements")))
            }
            "DESCRIBE" | "DESC" => self.parse_describe().map(Statement::Describe),
            _ => Err(self.no_viable()),
        }
    }

    /// Whether the current token is the describe keyword `kw`: a bare word not followed by
    /// `.` (`DESCRIBE type.t` names a table `t` in a keyspace `type`).
    fn is_describe_kw(&self, kw: &str) -> bool {
        self.is_kw(kw) && !self.is_at(1, Kind::Dot)
    }

    /// `DESCRIBE | DESC` then a target (Cassandra 4.0's grammar), then `[WITH INTERNALS]`.
    fn parse_describe(&mut self) -> PResult<DescribeStatement> {
        self.bump();
        let target = self.parse_describe_target()?;
        let internals = self.accept_kw("WITH");
        if internals {
            self.expect_kw("INTERNALS")?;
        }
        Ok(DescribeStatement { target, internals })
    }

    fn parse_describe_target(&mut self) -> PResult<DescribeTarget> {
        // Words that stand alone.
        let listings: [(&str, DescribeTarget); 8] = [
            ("CLUSTER", DescribeTarget::Cluster),
            ("SCHEMA", DescribeTarget::Schema { full: false }),
            ("KEYSPACES", DescribeTarget::Keyspaces),
            ("TABLES", DescribeTarget::Tables),
            ("COLUMNFAMILIES", DescribeTarget::Tables),
            ("TYPES", DescribeTarget::Types),
            ("FUNCTIONS", DescribeTarget::Functions),
            ("AGGREGATES", DescribeTarget::Aggregates),
        ];
        for (word, target) in listings {
            if self.is_describe_kw(word) {
                self.bump();
                return Ok(target);
            }
        }
        if self.is_describe_kw("FULL") && self.is_kw_at(1, "SCHEMA") {
            self.bump();
            self.bump();
            return Ok(DescribeTarget::Schema { full: true });
        }
        let only = self.is_describe_kw("ONLY") && self.is_kw_at(1, "KEYSPACE");
        if only {
            self.bump();
        }
        if self.is_describe_kw("KEYSPACE") {
            self.bump();
            let t = self.peek();
            let named = match t.kind {
                Kind::Word => !is_reserved(self.slice(t)),
                Kind::QuotedName => true,
                _ => false,
            };
            let name = if named {
                Some(self.parse_ident()?)
            } else {
                None
            };
            return Ok(DescribeTarget::Keyspace { name, only });
        }
        // Words followed by the name of one element.
        type Element = fn(QualifiedName) -> DescribeTarget;
        let elements: [(&str, Element); 6] = [
            ("TABLE", DescribeTarget::Table),
            ("COLUMNFAMILY", DescribeTarget::Table),
            ("INDEX", DescribeTarget::Index),
            ("TYPE", DescribeTarget::Type),
            ("FUNCTION", DescribeTarget::Function),
            ("AGGREGATE", DescribeTarget::Aggregate),
        ];
        for (word, target) in elements {
            if self.is_describe_kw(word) {
                self.bump();
                return self.parse_qualified_name().map(target);
            }
        }
        if self.is_describe_kw("MATERIALIZED") {
            self.bump();
            self.expect_kw("VIEW")?;
            return self
                .parse_qualified_name()
                .map(DescribeTarget::MaterializedView);
        }
        if self.at_eof() || self.is(Kind::Semicolon) {
            return Err(self.mismatch("a schema element to describe"));
        }
        self.parse_qualified_name().map(DescribeTarget::Generic)
    }

    fn take_binds(&self, from: usize) -> Vec<BindMarker> {
        self.binds
            .get(from..)
            .map(<[BindMarker]>::to_vec)
            .unwrap_or_default()
    }

    /// `SELECT [DISTINCT] selection FROM t [WHERE …] [GROUP BY …] [ORDER BY …]
    /// [PER PARTITION LIMIT n] [LIMIT n] [ALLOW FILTERING]`.
    fn parse_select(&mut self) -> PResult<SelectStatement> {
        let first_bind = self.binds.len();
        self.expect_kw("SELECT")?;
        // `json` and `distinct` are also valid column names: they are keywords only when
        // what follows them is not what follows a column.
        if self.is_kw("JSON") && !self.column_follows(1) {
            return Err(self.unsupported(self.peek(), Feature::Json, "SELECT JSON"));
        }
        let distinct = self.is_kw("DISTINCT") && !self.column_follows(1);
        if distinct {
            self.bump();
        }
        let selection = if self.accept(Kind::Star) {
            Selection::Wildcard
        } else {
            let mut selectors = vec![self.parse_selector()?];
            while self.accept(Kind::Comma) {
                selectors.push(self.parse_selector()?);
            }
            Selection::Selectors(selectors)
        };
        self.expect_kw("FROM")?;
        let table = self.parse_qualified_name()?;
        let where_clause = if self.accept_kw("WHERE") {
            self.parse_relations()?
        } else {
            Vec::new()
        };
        let mut group_by = Vec::new();
        if self.is_kw("GROUP") && self.is_kw_at(1, "BY") {
            self.bump();
            self.bump();
            group_by.push(self.parse_ident()?);
            while self.accept(Kind::Comma) {
                group_by.push(self.parse_ident()?);
            }
        }
        let mut order_by = Vec::new();
        if self.accept_kw("ORDER") {
            self.expect_kw("BY")?;
            order_by = self.parse_orderings(false)?;
        }
        let mut per_partition_limit = None;
        if self.is_kw("PER") && self.is_kw_at(1, "PARTITION") {
            self.bump();
            self.bump();
            self.expect_kw("LIMIT")?;
            per_partition_limit = Some(self.parse_int_value()?);
        }
        let limit = if self.accept_kw("LIMIT") {
            Some(self.parse_int_value()?)
        } else {
            None
        };
        let allow_filtering = self.is_kw("ALLOW");
        if allow_filtering {
            self.bump();
            self.expect_kw("FILTERING")?;
        }
        Ok(SelectStatement {
            distinct,
            selection,
            table,
            where_clause,
            group_by,
            order_by,
            per_partition_limit,
            limit,
            allow_filtering,
            bind_markers: self.take_binds(first_bind),
        })
    }

    /// Whether the token at `n` is what follows a selected column or function name
    /// (`FROM`, `,`, `AS`, `(`), so the word before it is a name, not a keyword.
    fn column_follows(&self, n: usize) -> bool {
        self.is_kw_at(n, "FROM")
            || self.is_at(n, Kind::Comma)
            || self.is_kw_at(n, "AS")
            || self.is_at(n, Kind::LParen)
    }

    /// `column [ASC|DESC], …`; `direction_required` for `CLUSTERING ORDER BY`.
    fn parse_orderings(&mut self, direction_required: bool) -> PResult<Vec<(Ident, Order)>> {
        let mut out = Vec::new();
        loop {
            let column = self.parse_ident()?;
            let order = if self.accept_kw("ASC") {
                Order::Asc
            } else if self.accept_kw("DESC") {
                Order::Desc
            } else if direction_required {
                return Err(self.mismatch("K_ASC or K_DESC"));
            } else {
                Order::Asc
            };
            out.push((column, order));
            if !self.accept(Kind::Comma) {
                return Ok(out);
            }
        }
    }

    fn parse_selector(&mut self) -> PResult<Selector> {
        let expr = self.parse_selector_expr()?;
        let alias = if self.accept_kw("AS") {
            Some(self.parse_ident()?)
        } else {
            None
        };
        Ok(Selector { expr, alias })
    }

    fn parse_selector_expr(&mut self) -> PResult<SelectorExpr> {
        self.enter()?;
        let expr = self.parse_selector_expr_inner();
        self.leave();
        expr
    }

    fn parse_selector_expr_inner(&mut self) -> PResult<SelectorExpr> {
        let t = self.peek();
        if t.kind == Kind::Word && self.is_at(1, Kind::LParen) {
            let word = self.slice(t).to_ascii_lowercase();
            match word.as_str() {
                "count"
                    if self.is_at(2, Kind::Star)
                        || (self.is_at(2, Kind::Integer)
                            && self.slice(self.peek_at(2)) == "1"
                            && self.is_at(3, Kind::RParen)) =>
                {
                    self.bump();
                    self.bump();
                    self.bump();
                    self.expect(Kind::RParen)?;
                    return Ok(SelectorExpr::CountRows);
                }
                "writetime" | "ttl" => {
                    self.bump();
                    self.bump();
                    let column = self.parse_ident()?;
                    self.refuse_element_access()?;
                    self.expect(Kind::RParen)?;
                    return Ok(if word == "ttl" {
                        SelectorExpr::Ttl(column)
                    } else {
                        SelectorExpr::WriteTime(column)
                    });
                }
                "cast" => {
                    self.bump();
                    self.bump();
                    let expr = self.parse_selector_expr()?;
                    self.expect_kw("AS")?;
                    let ty = self.parse_type()?;
                    self.expect(Kind::RParen)?;
                    return Ok(SelectorExpr::Cast {
                        expr: Box::new(expr),
                        ty,
                    });
                }
                _ => {}
            }
        }
        let expr = if self.at_call() {
            let name = self.parse_function_name()?;
            self.expect(Kind::LParen)?;
            let mut args = Vec::new();
            if !self.accept(Kind::RParen) {
                loop {
                    args.push(self.parse_selector_expr()?);
                    if !self.accept(Kind::Comma) {
                        break;
                    }
                }
                self.expect(Kind::RParen)?;
            }
            SelectorExpr::Call { name, args }
        } else if self.is_bind_start() {
            SelectorExpr::Value(Term::Bind(self.parse_bind_marker()?))
        } else if let Some(literal) = self.try_parse_literal()? {
            SelectorExpr::Value(Term::Literal(literal))
        } else if matches!(t.kind, Kind::Word | Kind::QuotedName) {
            SelectorExpr::Column(self.parse_ident()?)
        } else if matches!(t.kind, Kind::LBracket | Kind::LBrace) {
            return Err(self.unsupported(t, Feature::Collection, "collection literals"));
        } else {
            return Err(self.no_viable());
        };
        self.refuse_element_access()?;
        Ok(expr)
    }

    /// `relation AND relation …`.
    fn parse_relations(&mut self) -> PResult<Vec<Relation>> {
        let mut out = vec![self.parse_relation()?];
        while self.accept_kw("AND") {
            out.push(self.parse_relation()?);
        }
        Ok(out)
    }

    fn parse_operator(&mut self) -> PResult<Operator> {
        let op = match self.peek().kind {
            Kind::Eq => Operator::Eq,
            Kind::Ne => Operator::Ne,
            Kind::Lt => Operator::Lt,
            Kind::Le => Operator::Le,
            Kind::Gt => Operator::Gt,
            Kind::Ge => Operator::Ge,
            _ => return Err(self.mismatch("one of '=', '<', '<=', '>', '>=', '!=', K_IN")),
        };
        self.bump();
        Ok(op)
    }

    fn parse_relation(&mut self) -> PResult<Relation> {
        let t = self.peek();
        if t.kind == Kind::LParen {
            let columns = self.parse_ident_list()?;
            if self.accept_kw("IN") {
                let values = self.parse_in_values(true)?;
                return Ok(Relation::MultiColumnIn { columns, values });
            }
            let op = self.parse_operator()?;
            let value = self.parse_tuple_or_bind()?;
            return Ok(Relation::MultiColumn { columns, op, value });
        }
        if self.is_kw("TOKEN") && self.is_at(1, Kind::LParen) {
            self.bump();
            let columns = self.parse_ident_list()?;
            let op = self.parse_operator()?;
            let value = self.parse_term()?;
            return Ok(Relation::Token { columns, op, value });
        }
        let column = self.parse_ident()?;
        self.refuse_element_access()?;
        if self.accept_kw("IN") {
            let values = self.parse_in_values(false)?;
            return Ok(Relation::In { column, values });
        }
        let here = self.peek();
        if self.is_kw("CONTAINS") {
            return Err(self.unsupported(here, Feature::Collection, "CONTAINS relations"));
        }
        if self.is_kw("LIKE") {
            return Err(self.unsupported(here, Feature::SecondaryIndex, "LIKE relations"));
        }
        if self.is_kw("IS") {
            return Err(self.unsupported(here, Feature::MaterializedView, "IS NOT NULL"));
        }
        let op = self.parse_operator()?;
        let value = self.parse_term()?;
        Ok(Relation::Compare { column, op, value })
    }

    /// `(t1, …)` or a bind marker: the right-hand side of a multi-column relation.
    fn parse_tuple_or_bind(&mut self) -> PResult<Term> {
        if self.is_bind_start() {
            return self.parse_bind_marker().map(Term::Bind);
        }
        if !self.is(Kind::LParen) {
            return Err(self.mismatch("'('"));
        }
        self.parse_term()
    }

    /// `IN ?` or `IN (…)`; `tuples` for multi-column `IN`, whose elements are tuples.
    fn parse_in_values(&mut self, tuples: bool) -> PResult<InValues> {
        if self.is_bind_start() {
            return self.parse_bind_marker().map(InValues::Bind);
        }
        self.expect(Kind::LParen)?;
        if !tuples {
            return self.parse_term_list_until_rparen(true).map(InValues::List);
        }
        let mut out = Vec::new();
        if !self.accept(Kind::RParen) {
            loop {
                out.push(self.parse_tuple_or_bind()?);
                if !self.accept(Kind::Comma) {
                    break;
                }
            }
            self.expect(Kind::RParen)?;
        }
        Ok(InValues::List(out))
    }

    /// Refuses an `IF …` condition (lightweight transaction) at the current token.
    fn refuse_conditions(&self) -> PResult<()> {
        let t = self.peek();
        if self.is_kw("IF") {
            let what = if self.is_kw_at(1, "NOT") && self.is_kw_at(2, "EXISTS") {
                "IF NOT EXISTS"
            } else if self.is_kw_at(1, "EXISTS") {
                "IF EXISTS"
            } else {
                "IF conditions"
            };
            return Err(self.unsupported(t, Feature::LightweightTransaction, what));
        }
        Ok(())
    }

    /// `USING TTL n AND TIMESTAMP n` (either, any order, each at most once).
    fn parse_using(&mut self) -> PResult<Using> {
        let mut using = Using::default();
        if !self.accept_kw("USING") {
            return Ok(using);
        }
        loop {
            let t = self.peek();
            let slot = if self.accept_kw("TTL") {
                &mut using.ttl
            } else if self.accept_kw("TIMESTAMP") {
                &mut using.timestamp
            } else {
                return Err(self.mismatch("K_TTL or K_TIMESTAMP"));
            };
            if slot.is_some() {
                return Err(self.invalid(
                    t,
                    format!(
                        "{} is specified more than once",
                        self.slice(t).to_ascii_uppercase()
                    ),
                ));
            }
            *slot = Some(self.parse_int_value()?);
            if !self.accept_kw("AND") {
                return Ok(using);
            }
        }
    }

    /// `USING TIMESTAMP n` (for `DELETE` and `BATCH`).
    fn parse_using_timestamp(&mut self) -> PResult<Option<IntValue>> {
        if !self.accept_kw("USING") {
            return Ok(None);
        }
        if self.is_kw("TTL") {
            let t = self.peek();
            return Err(self.invalid(
                t,
                "TTL is not allowed here: only USING TIMESTAMP".to_owned(),
            ));
        }
        self.expect_kw("TIMESTAMP")?;
        self.parse_int_value().map(Some)
    }

    /// `INSERT INTO t (cols) VALUES (terms) [USING …]`.
    fn parse_insert(&mut self) -> PResult<InsertStatement> {
        let first_bind = self.binds.len();
        let start = self.expect_kw("INSERT")?;
        self.expect_kw("INTO")?;
        let table = self.parse_qualified_name()?;
        if self.is_kw("JSON") {
            return Err(self.unsupported(self.peek(), Feature::Json, "INSERT … JSON"));
        }
        let columns = self.parse_ident_list()?;
        self.expect_kw("VALUES")?;
        self.expect(Kind::LParen)?;
        let values = self.parse_term_list_until_rparen(false)?;
        if columns.len() != values.len() {
            return Err(self.invalid(start, "Unmatched column names/values".to_owned()));
        }
        self.refuse_conditions()?;
        let using = self.parse_using()?;
        self.refuse_conditions()?;
        Ok(InsertStatement {
            table,
            columns,
            values,
            using,
            bind_markers: self.take_binds(first_bind),
        })
    }

    /// `UPDATE t [USING …] SET c = term, … WHERE …`.
    fn parse_update(&mut self) -> PResult<UpdateStatement> {
        let first_bind = self.binds.len();
        self.expect_kw("UPDATE")?;
        let table = self.parse_qualified_name()?;
        let using = self.parse_using()?;
        self.expect_kw("SET")?;
        let mut assignments = vec![self.parse_assignment()?];
        while self.accept(Kind::Comma) {
            assignments.push(self.parse_assignment()?);
        }
        self.expect_kw("WHERE")?;
        let where_clause = self.parse_relations()?;
        self.refuse_conditions()?;
        Ok(UpdateStatement {
            table,
            using,
            assignments,
            where_clause,
            bind_markers: self.take_binds(first_bind),
        })
    }

    fn parse_assignment(&mut self) -> PResult<Assignment> {
        let column = self.parse_ident()?;
        self.refuse_element_access()?;
        let t = self.peek();
        if matches!(t.kind, Kind::PlusEq | Kind::MinusEq) {
            return Err(self.unsupported(
                t,
                Feature::Counter,
                "counter and collection updates c += …",
            ));
        }
        self.expect(Kind::Eq)?;
        // `c = c + x` / `c = x + c`: counter increments or collection appends.
        let rhs = self.peek();
        let is_column = match rhs.kind {
            Kind::Word => !is_reserved(self.slice(rhs)) && !self.is_at(1, Kind::LParen),
            Kind::QuotedName => !self.is_at(1, Kind::LParen),
            _ => false,
        };
        if is_column {
            return Err(self.unsupported(
                rhs,
                Feature::Counter,
                "counter and collection updates c = c + …",
            ));
        }
        let value = self.parse_term()?;
        let after = self.peek();
        if matches!(after.kind, Kind::Plus | Kind::Minus) {
            return Err(self.unsupported(
                after,
                Feature::Counter,
                "counter and collection updates c = … + c",
            ));
        }
        Ok(Assignment { column, value })
    }

    /// `DELETE [cols] FROM t [USING TIMESTAMP n] WHERE …`.
    fn parse_delete(&mut self) -> PResult<DeleteStatement> {
        let first_bind = self.binds.len();
        self.expect_kw("DELETE")?;
        let mut columns = Vec::new();
        if !self.is_kw("FROM") {
            loop {
                columns.push(self.parse_ident()?);
                self.refuse_element_access()?;
                if !self.accept(Kind::Comma) {
                    break;
                }
            }
        }
        self.expect_kw("FROM")?;
        let table = self.parse_qualified_name()?;
        let timestamp = self.parse_using_timestamp()?;
        self.expect_kw("WHERE")?;
        let where_clause = self.parse_relations()?;
        self.refuse_conditions()?;
        Ok(DeleteStatement {
            columns,
            table,
            timestamp,
            where_clause,
            bind_markers: self.take_binds(first_bind),
        })
    }

    /// `BEGIN [UNLOGGED] BATCH [USING TIMESTAMP n] (stmt [;])* APPLY BATCH`.
    fn parse_batch(&mut self) -> PResult<BatchStatement> {
        let first_bind = self.binds.len();
        self.expect_kw("BEGIN")?;
        let kind = if self.accept_kw("UNLOGGED") {
            BatchKind::Unlogged
        } else if self.is_kw("COUNTER") {
            return Err(self.unsupported(self.peek(), Feature::Counter, "BEGIN COUNTER BATCH"));
        } else {
            BatchKind::Logged
        };
        self.expect_kw("BATCH")?;
        let timestamp = self.parse_using_timestamp()?;
        let mut statements = Vec::new();
        loop {
            while self.accept(Kind::Semicolon) {}
            let statement = if self.is_kw("INSERT") {
                ModificationStatement::Insert(self.parse_insert()?)
            } else if self.is_kw("UPDATE") {
                ModificationStatement::Update(self.parse_update()?)
            } else if self.is_kw("DELETE") {
                ModificationStatement::Delete(self.parse_delete()?)
            } else if self.is_kw("APPLY") {
                break;
            } else {
                return Err(self.mismatch("K_INSERT, K_UPDATE, K_DELETE or K_APPLY"));
            };
            statements.push(statement);
        }
        self.expect_kw("APPLY")?;
        self.expect_kw("BATCH")?;
        Ok(BatchStatement {
            kind,
            timestamp,
            statements,
            bind_markers: self.take_binds(first_bind),
        })
    }

    fn parse_if_not_exists(&mut self) -> PResult<bool> {
        if self.accept_kw("IF") {
            self.expect_kw("NOT")?;
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn parse_if_exists(&mut self) -> PResult<bool> {
        if self.accept_kw("IF") {
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Refuses the schema objects Mosaic has no use for (`INDEX`, `TYPE`, …) after
    /// `CREATE`/`ALTER`/`DROP`.
    fn refuse_unsupported_object(&self, verb: &str) -> PResult<()> {
        let t = self.peek();
        let mut n = 0;
        if verb == "CREATE" && self.is_kw("OR") && self.is_kw_at(1, "REPLACE") {
            n = 2;
        }
        let word = self.slice(self.peek_at(n)).to_ascii_uppercase();
        let (feature, what) = match word.as_str() {
            "INDEX" | "CUSTOM" => (Feature::SecondaryIndex, "INDEX"),
            "MATERIALIZED" => (Feature::MaterializedView, "MATERIALIZED VIEW"),
            "FUNCTION" => (Feature::UserDefinedFunction, "FUNCTION"),
            "AGGREGATE" => (Feature::UserDefinedAggregate, "AGGREGATE"),
            "TYPE" => (Feature::UserDefinedType, "TYPE"),
            "TRIGGER" => (Feature::Trigger, "TRIGGER"),
            "USER" | "ROLE" => (
                Feature::Authorization,
                if word == "USER" { "USER" } else { "ROLE" },
            ),
            _ => return Ok(()),
        };
        Err(self.unsupported(t, feature, &format!("{verb} {what}")))
    }

    fn parse_create(&mut self) -> PResult<Statement> {
        self.expect_kw("CREATE")?;
        self.refuse_unsupported_object("CREATE")?;
        if self.accept_kw("KEYSPACE") || self.accept_kw("SCHEMA") {
            let if_not_exists = self.parse_if_not_exists()?;
            let name = self.parse_ident()?;
            self.expect_kw("WITH")?;
            let properties = self.parse_properties()?;
            return Ok(Statement::CreateKeyspace(CreateKeyspaceStatement {
                name,
                if_not_exists,
                properties,
            }));
        }
        if self.accept_kw("TABLE") || self.accept_kw("COLUMNFAMILY") {
            return self.parse_create_table().map(Statement::CreateTable);
        }
        Err(self.no_viable())
    }

    fn parse_alter(&mut self) -> PResult<Statement> {
        self.expect_kw("ALTER")?;
        self.refuse_unsupported_object("ALTER")?;
        if self.accept_kw("KEYSPACE") || self.accept_kw("SCHEMA") {
            let name = self.parse_ident()?;
            self.expect_kw("WITH")?;
            let properties = self.parse_properties()?;
            return Ok(Statement::AlterKeyspace(AlterKeyspaceStatement {
                name,
                properties,
            }));
        }
        if self.accept_kw("TABLE") || self.accept_kw("COLUMNFAMILY") {
            let name = self.parse_qualified_name()?;
            let operation = self.parse_alter_table_operation()?;
            return Ok(Statement::AlterTable(AlterTableStatement {
                name,
                operation,
            }));
        }
        Err(self.no_viable())
    }

    fn parse_alter_table_operation(&mut self) -> PResult<AlterTableOperation> {
        if self.accept_kw("ADD") {
            let parenthesised = self.accept(Kind::LParen);
            let mut columns = vec![self.parse_column_definition()?];
            while self.accept(Kind::Comma) {
                columns.push(self.parse_column_definition()?);
            }
            if parenthesised {
                self.expect(Kind::RParen)?;
            }
            return Ok(AlterTableOperation::Add(columns));
        }
        if self.accept_kw("DROP") {
            let columns = if self.is(Kind::LParen) {
                self.parse_ident_list()?
            } else {
                let mut columns = vec![self.parse_ident()?];
                while self.accept(Kind::Comma) {
                    columns.push(self.parse_ident()?);
                }
                columns
            };
            return Ok(AlterTableOperation::Drop(columns));
        }
        if self.accept_kw("RENAME") {
            let mut pairs = Vec::new();
            loop {
                let from = self.parse_ident()?;
                self.expect_kw("TO")?;
                let to = self.parse_ident()?;
                pairs.push((from, to));
                if !self.accept_kw("AND") {
                    break;
                }
            }
            return Ok(AlterTableOperation::Rename(pairs));
        }
        if self.accept_kw("WITH") {
            return self.parse_properties().map(AlterTableOperation::With);
        }
        if self.is_kw("ALTER") {
            let t = self.peek();
            return Err(self.invalid(t, "Altering column types is no longer supported".to_owned()));
        }
        Err(self.mismatch("K_ADD, K_DROP, K_RENAME or K_WITH"))
    }

    fn parse_drop(&mut self) -> PResult<Statement> {
        self.expect_kw("DROP")?;
        self.refuse_unsupported_object("DROP")?;
        if self.accept_kw("KEYSPACE") || self.accept_kw("SCHEMA") {
            let if_exists = self.parse_if_exists()?;
            let name = self.parse_ident()?;
            return Ok(Statement::DropKeyspace(DropKeyspaceStatement {
                name,
                if_exists,
            }));
        }
        if self.accept_kw("TABLE") || self.accept_kw("COLUMNFAMILY") {
            let if_exists = self.parse_if_exists()?;
            let name = self.parse_qualified_name()?;
            return Ok(Statement::DropTable(DropTableStatement { name, if_exists }));
        }
        Err(self.no_viable())
    }

    fn parse_column_definition(&mut self) -> PResult<ColumnDefinition> {
        let name = self.parse_ident()?;
        let ty = self.parse_type()?;
        let is_static = self.accept_kw("STATIC");
        Ok(ColumnDefinition {
            name,
            ty,
            is_static,
        })
    }

    /// `(definitions) [WITH options]` after `CREATE TABLE`.
    fn parse_create_table(&mut self) -> PResult<CreateTableStatement> {
        let if_not_exists = self.parse_if_not_exists()?;
        let name = self.parse_qualified_name()?;
        let open = self.expect(Kind::LParen)?;
        let mut columns = Vec::new();
        let mut primary_key: Option<PrimaryKey> = None;
        let mut primary_key_count = 0;
        loop {
            if self.is_kw("PRIMARY") {
                let t = self.bump();
                self.expect_kw("KEY")?;
                primary_key_count += 1;
                if primary_key_count > 1 {
                    return Err(self.multiple_primary_keys(t));
                }
                primary_key = Some(self.parse_primary_key_clause()?);
            } else {
                let column = self.parse_column_definition()?;
                if self.is_kw("PRIMARY") {
                    let t = self.bump();
                    self.expect_kw("KEY")?;
                    primary_key_count += 1;
                    if primary_key_count > 1 {
                        return Err(self.multiple_primary_keys(t));
                    }
                    primary_key = Some(PrimaryKey {
                        partition_key: vec![column.name.clone()],
                        clustering_columns: Vec::new(),
                    });
                }
                columns.push(column);
            }
            if !self.accept(Kind::Comma) {
                break;
            }
            // Cassandra accepts a trailing comma before the closing parenthesis.
            if self.is(Kind::RParen) {
                break;
            }
        }
        self.expect(Kind::RParen)?;
        let Some(primary_key) = primary_key else {
            return Err(self.invalid(
                open,
                "No PRIMARY KEY specifed (exactly one required)".to_owned(),
            ));
        };
        let mut clustering_order = Vec::new();
        let mut properties = Vec::new();
        if self.accept_kw("WITH") {
            loop {
                let t = self.peek();
                if self.is_kw("CLUSTERING") && self.is_kw_at(1, "ORDER") {
                    self.bump();
                    self.bump();
                    self.expect_kw("BY")?;
                    if !clustering_order.is_empty() {
                        return Err(
                            self.invalid(t, "Multiple CLUSTERING ORDER BY clauses".to_owned())
                        );
                    }
                    self.expect(Kind::LParen)?;
                    clustering_order = self.parse_orderings(true)?;
                    self.expect(Kind::RParen)?;
                } else if self.is_kw("COMPACT") && self.is_kw_at(1, "STORAGE") {
                    return Err(self.unsupported(
                        t,
                        Feature::CompactStorage,
                        "WITH COMPACT STORAGE",
                    ));
                } else {
                    let property = self.parse_property()?;
                    if properties
                        .iter()
                        .any(|p: &Property| p.name == property.name)
                    {
                        return Err(self.duplicate_property(t, &property.name));
                    }
                    properties.push(property);
                }
                if !self.accept_kw("AND") {
                    break;
                }
            }
        }
        Ok(CreateTableStatement {
            name,
            if_not_exists,
            columns,
            primary_key,
            clustering_order,
            properties,
        })
    }

    fn multiple_primary_keys(&self, t: Token) -> ParseError {
        self.invalid(
            t,
            "Multiple PRIMARY KEYs specifed (exactly one required)".to_owned(),
        )
    }

    fn duplicate_property(&self, t: Token, name: &Ident) -> ParseError {
        self.invalid(
            t,
            format!("Multiple definition for property {}", clip(name.as_str())),
        )
    }

    /// `( pk | (pk1, pk2, …) [, ck …] )` after `PRIMARY KEY`.
    fn parse_primary_key_clause(&mut self) -> PResult<PrimaryKey> {
        self.expect(Kind::LParen)?;
        let partition_key = if self.is(Kind::LParen) {
            self.parse_ident_list()?
        } else {
            vec![self.parse_ident()?]
        };
        let mut clustering_columns = Vec::new();
        while self.accept(Kind::Comma) {
            clustering_columns.push(self.parse_ident()?);
        }
        self.expect(Kind::RParen)?;
        Ok(PrimaryKey {
            partition_key,
            clustering_columns,
        })
    }

    /// `name = value AND …` (at least one).
    fn parse_properties(&mut self) -> PResult<Vec<Property>> {
        let mut out: Vec<Property> = Vec::new();
        loop {
            let t = self.peek();
            let property = self.parse_property()?;
            if out.iter().any(|p| p.name == property.name) {
                return Err(self.duplicate_property(t, &property.name));
            }
            out.push(property);
            if !self.accept_kw("AND") {
                return Ok(out);
            }
        }
    }

    fn parse_property(&mut self) -> PResult<Property> {
        let name = self.parse_ident()?;
        self.expect(Kind::Eq)?;
        let value = if self.accept(Kind::LBrace) {
            let mut entries = Vec::new();
            if !self.accept(Kind::RBrace) {
                loop {
                    let key = self.parse_property_constant()?;
                    self.expect(Kind::Colon)?;
                    let value = self.parse_property_constant()?;
                    entries.push((property_string(key), property_string(value)));
                    if !self.accept(Kind::Comma) {
                        break;
                    }
                }
                self.expect(Kind::RBrace)?;
            }
            PropertyValue::Map(entries)
        } else {
            PropertyValue::Constant(self.parse_property_constant()?)
        };
        Ok(Property { name, value })
    }

    /// A constant, or an unreserved word kept as a string (`caching = ALL`).
    fn parse_property_constant(&mut self) -> PResult<Literal> {
        let t = self.peek();
        match self.try_parse_literal()? {
            Some(Literal::Null) => Err(self.unexpected_at(t)),
            Some(l) => Ok(l),
            None if t.kind == Kind::Word && !is_reserved(self.slice(t)) => {
                self.bump();
                Ok(Literal::String(self.slice(t).to_owned()))
            }
            None => Err(self.mismatch("a constant")),
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

/// A map-literal key or value as the string Cassandra keeps for it.
fn property_string(literal: Literal) -> String {
    match literal {
        Literal::String(s) => s,
        other => other.to_string(),
    }
}

/// Hex digits (already checked by the lexer: even count, all hex) to bytes.
fn decode_hex(digits: &str) -> Vec<u8> {
    digits
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            let nibble = |c: u8| char::from(c).to_digit(16).unwrap_or(0) as u8;
            match pair {
                [hi, lo] => (nibble(*hi) << 4) | nibble(*lo),
                _ => 0,
            }
        })
        .collect()
}
