//! SELECT: selectors, relations (WHERE), orderings, IN values.

use super::*;

impl Parser<'_> {
    pub(super) fn take_binds(&self, from: usize) -> Vec<BindMarker> {
        self.binds
            .get(from..)
            .map(<[BindMarker]>::to_vec)
            .unwrap_or_default()
    }

    /// `SELECT [DISTINCT] selection FROM t [WHERE …] [GROUP BY …] [ORDER BY …]
    /// [PER PARTITION LIMIT n] [LIMIT n] [ALLOW FILTERING]`.
    pub(super) fn parse_select(&mut self) -> PResult<SelectStatement> {
        let first_bind = self.binds.len();
        self.expect_kw("SELECT")?;
        // `json` and `distinct` are also valid column names: they are keywords only when
        // what follows them is not what follows a column.
        let json = self.is_kw("JSON") && !self.column_follows(1);
        if json {
            self.bump();
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
            json,
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
    pub(super) fn column_follows(&self, n: usize) -> bool {
        self.is_kw_at(n, "FROM")
            || self.is_at(n, Kind::Comma)
            || self.is_kw_at(n, "AS")
            || self.is_at(n, Kind::LParen)
    }

    /// `column [ASC|DESC], …`; `direction_required` for `CLUSTERING ORDER BY`.
    pub(super) fn parse_orderings(
        &mut self,
        direction_required: bool,
    ) -> PResult<Vec<(Ident, Order)>> {
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

    pub(super) fn parse_selector(&mut self) -> PResult<Selector> {
        let expr = self.parse_selector_expr()?;
        let alias = if self.accept_kw("AS") {
            Some(self.parse_ident()?)
        } else {
            None
        };
        Ok(Selector { expr, alias })
    }

    pub(super) fn parse_selector_expr(&mut self) -> PResult<SelectorExpr> {
        self.enter()?;
        let expr = self.parse_selector_expr_inner();
        self.leave();
        expr
    }

    pub(super) fn parse_selector_expr_inner(&mut self) -> PResult<SelectorExpr> {
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
                    let ty = self.parse_native_type()?;
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
            let column = self.parse_ident()?;
            if self.accept(Kind::Dot) {
                let mut path = vec![self.parse_ident()?];
                while self.accept(Kind::Dot) {
                    path.push(self.parse_ident()?);
                }
                SelectorExpr::Field(column, path)
            } else if self.accept(Kind::LBracket) {
                let from = if self.is_range() {
                    None
                } else {
                    Some(self.parse_term()?)
                };
                if self.is_range() {
                    self.bump();
                    self.bump();
                    let to = if self.is(Kind::RBracket) {
                        None
                    } else {
                        Some(self.parse_term()?)
                    };
                    self.expect(Kind::RBracket)?;
                    SelectorExpr::Slice(column, from, to)
                } else {
                    self.expect(Kind::RBracket)?;
                    let Some(element) = from else {
                        return Err(self.no_viable());
                    };
                    SelectorExpr::Element(column, element)
                }
            } else {
                SelectorExpr::Column(column)
            }
        } else if matches!(t.kind, Kind::LBracket | Kind::LBrace) {
            return Err(self.unsupported(t, Feature::Collection, "collection literals"));
        } else {
            return Err(self.no_viable());
        };
        self.refuse_element_access()?;
        Ok(expr)
    }

    /// Whether `..` (a slice's range) comes next.
    fn is_range(&self) -> bool {
        self.is(Kind::Dot) && self.is_at(1, Kind::Dot)
    }

    /// `relation AND relation …`.
    pub(super) fn parse_relations(&mut self) -> PResult<Vec<Relation>> {
        let mut out = vec![self.parse_relation()?];
        while self.accept_kw("AND") {
            out.push(self.parse_relation()?);
        }
        Ok(out)
    }

    pub(super) fn parse_operator(&mut self) -> PResult<Operator> {
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

    pub(super) fn parse_relation(&mut self) -> PResult<Relation> {
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
        if self.accept(Kind::LBracket) {
            let key = self.parse_term()?;
            self.expect(Kind::RBracket)?;
            let op = self.parse_operator()?;
            let value = self.parse_term()?;
            return Ok(Relation::Element {
                column,
                key,
                op,
                value,
            });
        }
        self.refuse_element_access()?;
        if self.accept_kw("IN") {
            let values = self.parse_in_values(false)?;
            return Ok(Relation::In { column, values });
        }
        let here = self.peek();
        if self.accept_kw("CONTAINS") {
            let key = self.accept_kw("KEY");
            let value = self.parse_term()?;
            return Ok(Relation::Contains { column, key, value });
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
    pub(super) fn parse_tuple_or_bind(&mut self) -> PResult<Term> {
        if self.is_bind_start() {
            return self.parse_bind_marker().map(Term::Bind);
        }
        if !self.is(Kind::LParen) {
            return Err(self.mismatch("'('"));
        }
        self.parse_term()
    }

    /// `IN ?` or `IN (…)`; `tuples` for multi-column `IN`, whose elements are tuples.
    pub(super) fn parse_in_values(&mut self, tuples: bool) -> PResult<InValues> {
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
}
