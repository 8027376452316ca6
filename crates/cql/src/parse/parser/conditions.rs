//! The `IF …` of lightweight transactions, as Cassandra's grammar (`Parser.g`) has it:
//! `INSERT … [IF NOT EXISTS] [USING …]`, and `UPDATE`/`DELETE … WHERE … [IF EXISTS | IF
//! cond AND …]` where a condition is `c op t`, `c IN (…)`/`c IN ?`, `c[t] op t`, `c[t] IN
//! …`, `c.f op t`, `c.f IN …`, `c CONTAINS t` or `c CONTAINS KEY t`.

use super::*;

impl Parser<'_> {
    /// `IF NOT EXISTS` of an INSERT, if there.
    pub(super) fn parse_if_not_exists_condition(&mut self) -> PResult<Option<Conditions>> {
        if !self.accept_kw("IF") {
            return Ok(None);
        }
        self.expect_kw("NOT")?;
        self.expect_kw("EXISTS")?;
        Ok(Some(Conditions::NotExists))
    }

    /// `IF EXISTS` or `IF cond AND …` of an UPDATE or DELETE, if there.
    pub(super) fn parse_conditions(&mut self) -> PResult<Option<Conditions>> {
        if !self.accept_kw("IF") {
            return Ok(None);
        }
        // `IF EXISTS` unless `exists` is a column compared (`IF exists = 1`).
        let column_named_exists = matches!(
            self.peek_at(1).kind,
            Kind::Eq
                | Kind::Ne
                | Kind::Lt
                | Kind::Le
                | Kind::Gt
                | Kind::Ge
                | Kind::LBracket
                | Kind::Dot
        );
        if self.is_kw("EXISTS") && !column_named_exists {
            self.bump();
            if self.is_kw("AND") {
                return Err(self.no_viable());
            }
            return Ok(Some(Conditions::Exists));
        }
        if self.is_kw("NOT") {
            return Err(self.no_viable());
        }
        let mut conditions = vec![self.parse_condition()?];
        while self.accept_kw("AND") {
            conditions.push(self.parse_condition()?);
        }
        Ok(Some(Conditions::Columns(conditions)))
    }

    fn parse_condition(&mut self) -> PResult<Condition> {
        let column = self.parse_ident()?;
        let target = if self.accept(Kind::LBracket) {
            let element = self.parse_term()?;
            self.expect(Kind::RBracket)?;
            ConditionTarget::Element(element)
        } else if self.accept(Kind::Dot) {
            ConditionTarget::Field(self.parse_ident()?)
        } else {
            ConditionTarget::Column
        };
        let op = if self.accept_kw("IN") {
            ConditionOp::In(self.parse_in_values(false)?)
        } else if target == ConditionTarget::Column && self.accept_kw("CONTAINS") {
            let key = self.accept_kw("KEY");
            ConditionOp::Contains {
                key,
                value: self.parse_term()?,
            }
        } else {
            let op = self.parse_operator()?;
            ConditionOp::Compare(op, self.parse_term()?)
        };
        Ok(Condition { column, target, op })
    }
}
