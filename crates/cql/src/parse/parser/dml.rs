//! INSERT, UPDATE, DELETE and BATCH, with their USING clauses.

use super::*;

impl Parser<'_> {
    /// `USING TTL n AND TIMESTAMP n` (either, any order, each at most once).
    pub(super) fn parse_using(&mut self) -> PResult<Using> {
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
    pub(super) fn parse_using_timestamp(&mut self) -> PResult<Option<IntValue>> {
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

    /// `INSERT INTO t (cols) VALUES (terms) [IF NOT EXISTS] [USING …]`.
    pub(super) fn parse_insert(&mut self) -> PResult<InsertStatement> {
        let first_bind = self.binds.len();
        let start = self.expect_kw("INSERT")?;
        self.expect_kw("INTO")?;
        let table = self.parse_qualified_name()?;
        if self.accept_kw("JSON") {
            let t = self.peek();
            let value = match self.parse_term()? {
                v @ (Term::Literal(Literal::String(_)) | Term::Bind(_)) => v,
                _ => return Err(self.unexpected_at(t)),
            };
            let mut default_unset = false;
            if self.accept_kw("DEFAULT") {
                if self.accept_kw("UNSET") {
                    default_unset = true;
                } else if !self.accept_kw("NULL") {
                    return Err(self.mismatch("K_NULL or K_UNSET"));
                }
            }
            let conditions = self.parse_if_not_exists_condition()?;
            let using = self.parse_using()?;
            return Ok(InsertStatement {
                table,
                columns: Vec::new(),
                values: Vec::new(),
                json: Some(InsertJson {
                    value,
                    default_unset,
                }),
                conditions,
                using,
                bind_markers: self.take_binds(first_bind),
            });
        }
        let columns = self.parse_ident_list()?;
        self.expect_kw("VALUES")?;
        self.expect(Kind::LParen)?;
        let values = self.parse_term_list_until_rparen(false)?;
        if columns.len() != values.len() {
            return Err(self.invalid(start, "Unmatched column names/values".to_owned()));
        }
        let conditions = self.parse_if_not_exists_condition()?;
        let using = self.parse_using()?;
        Ok(InsertStatement {
            table,
            columns,
            values,
            json: None,
            conditions,
            using,
            bind_markers: self.take_binds(first_bind),
        })
    }

    /// `UPDATE t [USING …] SET c = term, … WHERE … [IF EXISTS | IF cond AND …]`.
    pub(super) fn parse_update(&mut self) -> PResult<UpdateStatement> {
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
        let conditions = self.parse_conditions()?;
        Ok(UpdateStatement {
            table,
            using,
            assignments,
            where_clause,
            conditions,
            bind_markers: self.take_binds(first_bind),
        })
    }

    /// `c = t`, `c[k] = t`, `c = c + t`, `c = t + c`, `c = c - t`, `c += t`, `c -= t`.
    pub(super) fn parse_assignment(&mut self) -> PResult<Assignment> {
        let column = self.parse_ident()?;
        let element = if self.accept(Kind::LBracket) {
            let key = self.parse_term()?;
            self.expect(Kind::RBracket)?;
            Some(key)
        } else {
            None
        };
        let field = if element.is_none() && self.accept(Kind::Dot) {
            Some(self.parse_ident()?)
        } else {
            None
        };
        let t = self.peek();
        if element.is_none() && field.is_none() && matches!(t.kind, Kind::PlusEq | Kind::MinusEq) {
            // Cassandra 4's `c += t` / `c -= t`: `c = c + t` / `c = c - t`.
            self.bump();
            let op = if t.kind == Kind::PlusEq {
                AssignOp::Add
            } else {
                AssignOp::Remove
            };
            let value = self.parse_term()?;
            return Ok(Assignment {
                column,
                element: None,
                field: None,
                op,
                value,
            });
        }
        self.expect(Kind::Eq)?;
        if element.is_some() || field.is_some() {
            let value = self.parse_term()?;
            return Ok(Assignment {
                column,
                element,
                field,
                op: AssignOp::Set,
                value,
            });
        }
        // `c = c + x` / `c = c - x`: the right-hand side starts with the column itself.
        let rhs = self.peek();
        let names_column = match rhs.kind {
            Kind::Word => {
                !is_reserved(self.slice(rhs))
                    && !self.is_at(1, Kind::LParen)
                    && Ident::new(self.slice(rhs).to_ascii_lowercase()) == column
            }
            Kind::QuotedName => {
                !self.is_at(1, Kind::LParen) && Ident::new(unquote(self.slice(rhs), '"')) == column
            }
            _ => false,
        };
        if names_column {
            self.bump();
            let op = self.peek();
            let op = match op.kind {
                Kind::Plus => AssignOp::Add,
                Kind::Minus => AssignOp::Remove,
                _ => return Err(self.mismatch("'+' or '-'")),
            };
            self.bump();
            let value = self.parse_term()?;
            return Ok(Assignment {
                column,
                element: None,
                field: None,
                op,
                value,
            });
        }
        let value = self.parse_term()?;
        if self.accept(Kind::Plus) {
            // `c = t + c`: a prepend.
            let other = self.parse_ident()?;
            if other != column {
                return Err(self.invalid(
                    rhs,
                    "Only expressions of the form X = <value> + X are supported.".to_owned(),
                ));
            }
            return Ok(Assignment {
                column,
                element: None,
                field: None,
                op: AssignOp::Prepend,
                value,
            });
        }
        Ok(Assignment {
            column,
            element: None,
            field: None,
            op: AssignOp::Set,
            value,
        })
    }

    /// `DELETE [cols] FROM t [USING TIMESTAMP n] WHERE … [IF EXISTS | IF cond AND …]`.
    pub(super) fn parse_delete(&mut self) -> PResult<DeleteStatement> {
        let first_bind = self.binds.len();
        self.expect_kw("DELETE")?;
        let mut columns = Vec::new();
        if !self.is_kw("FROM") {
            loop {
                let column = self.parse_ident()?;
                let element = if self.accept(Kind::LBracket) {
                    let key = self.parse_term()?;
                    self.expect(Kind::RBracket)?;
                    Some(key)
                } else {
                    None
                };
                let field = if element.is_none() && self.accept(Kind::Dot) {
                    Some(self.parse_ident()?)
                } else {
                    None
                };
                columns.push(DeletedColumn {
                    column,
                    element,
                    field,
                });
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
        let conditions = self.parse_conditions()?;
        Ok(DeleteStatement {
            columns,
            table,
            timestamp,
            where_clause,
            conditions,
            bind_markers: self.take_binds(first_bind),
        })
    }

    /// `BEGIN [UNLOGGED | COUNTER] BATCH [USING TIMESTAMP n] (stmt [;])* APPLY BATCH`.
    pub(super) fn parse_batch(&mut self) -> PResult<BatchStatement> {
        let first_bind = self.binds.len();
        self.expect_kw("BEGIN")?;
        let kind = if self.accept_kw("UNLOGGED") {
            BatchKind::Unlogged
        } else if self.accept_kw("COUNTER") {
            BatchKind::Counter
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

    pub(super) fn parse_if_not_exists(&mut self) -> PResult<bool> {
        if self.accept_kw("IF") {
            self.expect_kw("NOT")?;
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub(super) fn parse_if_exists(&mut self) -> PResult<bool> {
        if self.accept_kw("IF") {
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }
}
