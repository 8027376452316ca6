//! Names, bind markers, literals, terms, integer values and types: the pieces every
//! statement is made of.

use super::*;

impl Parser<'_> {
    // ----- names -----

    pub(super) fn parse_ident(&mut self) -> PResult<Ident> {
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

    pub(super) fn parse_qualified_name(&mut self) -> PResult<QualifiedName> {
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
    pub(super) fn parse_ident_list(&mut self) -> PResult<Vec<Ident>> {
        self.expect(Kind::LParen)?;
        let mut out = vec![self.parse_ident()?];
        while self.accept(Kind::Comma) {
            out.push(self.parse_ident()?);
        }
        self.expect(Kind::RParen)?;
        Ok(out)
    }

    pub(super) fn parse_function_name(&mut self) -> PResult<Ident> {
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
    pub(super) fn refuse_element_access(&self) -> PResult<()> {
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

    pub(super) fn parse_bind_marker(&mut self) -> PResult<BindMarker> {
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

    pub(super) fn is_bind_start(&self) -> bool {
        matches!(self.peek().kind, Kind::QMark | Kind::Colon)
    }

    /// A constant, or `None` if the current token does not start one.
    pub(super) fn try_parse_literal(&mut self) -> PResult<Option<Literal>> {
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
            Kind::Duration => Literal::Duration(text.to_owned()),
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
    pub(super) fn at_call(&self) -> bool {
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

    pub(super) fn parse_term_inner(&mut self) -> PResult<Term> {
        let t = self.peek();
        match t.kind {
            Kind::QMark | Kind::Colon => return self.parse_bind_marker().map(Term::Bind),
            Kind::LParen => {
                self.bump();
                let items = self.parse_term_list_until_rparen(false)?;
                return Ok(Term::Tuple(items));
            }
            Kind::LBracket => {
                self.bump();
                let mut items = Vec::new();
                if !self.accept(Kind::RBracket) {
                    loop {
                        items.push(self.parse_term()?);
                        if !self.accept(Kind::Comma) {
                            break;
                        }
                    }
                    self.expect(Kind::RBracket)?;
                }
                return Ok(Term::List(items));
            }
            Kind::LBrace => return self.parse_set_or_map(),
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

    /// `{}`, `{t, …}` or `{k: v, …}` (the opening brace is next).
    fn parse_set_or_map(&mut self) -> PResult<Term> {
        self.expect(Kind::LBrace)?;
        if self.accept(Kind::RBrace) {
            return Ok(Term::Map(Vec::new()));
        }
        // `{field: …}`: a name (not a constant) before the colon is a UDT field.
        let first = self.peek();
        let names_field = match first.kind {
            Kind::Word => {
                let w = self.slice(first).to_ascii_lowercase();
                !is_reserved(&w)
                    && !matches!(w.as_str(), "true" | "false" | "null" | "nan" | "infinity")
                    && !self.is_at(1, Kind::LParen)
            }
            Kind::QuotedName => true,
            _ => false,
        } && self.is_at(1, Kind::Colon);
        if names_field {
            let mut entries = Vec::new();
            loop {
                let field = self.parse_ident()?;
                self.expect(Kind::Colon)?;
                entries.push((field, self.parse_term()?));
                if !self.accept(Kind::Comma) {
                    break;
                }
            }
            self.expect(Kind::RBrace)?;
            return Ok(Term::Udt(entries));
        }
        let first = self.parse_term()?;
        if self.accept(Kind::Colon) {
            let mut entries = vec![(first, self.parse_term()?)];
            while self.accept(Kind::Comma) {
                let k = self.parse_term()?;
                self.expect(Kind::Colon)?;
                entries.push((k, self.parse_term()?));
            }
            self.expect(Kind::RBrace)?;
            return Ok(Term::Map(entries));
        }
        let mut items = vec![first];
        while self.accept(Kind::Comma) {
            items.push(self.parse_term()?);
        }
        self.expect(Kind::RBrace)?;
        Ok(Term::Set(items))
    }

    /// Terms separated by commas up to and including `)`; `allow_empty` for `f()` and
    /// `IN ()`.
    pub(super) fn parse_term_list_until_rparen(&mut self, allow_empty: bool) -> PResult<Vec<Term>> {
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

    pub(super) fn parse_int_value(&mut self) -> PResult<IntValue> {
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

    /// `[ks.]name`: a user-defined type, looked up when the statement runs.
    fn parse_user_type_ref(&mut self) -> PResult<DataType> {
        let first = self.parse_ident()?;
        let (keyspace, name) = if self.accept(Kind::Dot) {
            (
                first.as_str().to_owned(),
                self.parse_ident()?.as_str().to_owned(),
            )
        } else {
            (String::new(), first.as_str().to_owned())
        };
        Ok(DataType::Udt(Box::new(mosaic_types::UserType {
            keyspace,
            name,
            fields: Vec::new(),
        })))
    }

    /// A native type (`CAST(… AS type)`).
    pub(super) fn parse_native_type(&mut self) -> PResult<CqlType> {
        let t = self.peek();
        match self.parse_type()? {
            DataType::Native(ty) => Ok(ty),
            other => Err(self.invalid(t, format!("Cannot cast to {other}"))),
        }
    }

    /// A column type: a native type, `list<T>`, `set<T>`, `map<K, V>`, `tuple<…>` or
    /// `frozen<…>`, checked against Cassandra's nesting rules.
    pub(super) fn parse_type(&mut self) -> PResult<DataType> {
        let t = self.peek();
        let ty = self.parse_type_inner()?.normalized();
        ty.validate().map_err(|e| {
            // Cassandra's grammar refuses frozen<native> itself: a syntax error.
            if e.0.starts_with("frozen<>") {
                let (line, column) = position(self.text, t.start);
                ParseError::Syntax {
                    line,
                    column,
                    message: e.0,
                }
            } else {
                self.invalid(t, e.0)
            }
        })?;
        Ok(ty)
    }

    /// `counter` where a column's type starts (consumed): the one place it may stand.
    pub(super) fn accept_counter(&mut self) -> bool {
        let t = self.peek();
        let is_counter = t.kind == Kind::Word
            && self.slice(t).eq_ignore_ascii_case("counter")
            && !self.is_at(1, Kind::Lt);
        if is_counter {
            self.bump();
        }
        is_counter
    }

    /// A user-defined type's field type: any type but `counter`, refused with Cassandra's
    /// message.
    pub(super) fn parse_field_type(&mut self) -> PResult<DataType> {
        let t = self.peek();
        if self.accept_counter() {
            return Err(self.invalid(t, "A user type cannot contain counters".to_owned()));
        }
        self.parse_type()
    }

    /// The arguments of `tuple<…>` (`count` `None`) or `frozen<…>` (`Some(1)`); `counter`
    /// among them is refused as Cassandra refuses it.
    fn parse_type_args(&mut self, count: Option<usize>) -> PResult<Vec<DataType>> {
        self.expect(Kind::Lt)?;
        let mut args = vec![self.parse_type_arg(count.is_none())?];
        while self.accept(Kind::Comma) {
            args.push(self.parse_type_arg(count.is_none())?);
        }
        if count.is_some_and(|n| args.len() != n) {
            return Err(self.mismatch("'>'"));
        }
        self.expect(Kind::Gt)?;
        Ok(args)
    }

    /// The element types of `kind<…>` (`count` of them), refusing `counter` among them
    /// with Cassandra's message, which prints the collection as written.
    fn parse_collection_args(
        &mut self,
        start: Token,
        kind: &str,
        count: usize,
    ) -> PResult<Vec<DataType>> {
        self.expect(Kind::Lt)?;
        let mut args = vec![self.parse_collection_arg()?];
        while self.accept(Kind::Comma) {
            args.push(self.parse_collection_arg()?);
        }
        if args.len() != count {
            return Err(self.mismatch("'>'"));
        }
        self.expect(Kind::Gt)?;
        if args.iter().any(Option::is_none) {
            let shown: Vec<String> = args
                .iter()
                .map(|a| {
                    a.as_ref()
                        .map_or_else(|| "counter".to_owned(), DataType::to_string)
                })
                .collect();
            return Err(self.invalid(
                start,
                format!(
                    "Counters are not allowed inside collections: {kind}<{}>",
                    shown.join(", ")
                ),
            ));
        }
        Ok(args.into_iter().flatten().collect())
    }

    /// One argument of `tuple<…>` (`in_tuple`) or `frozen<…>`.
    fn parse_type_arg(&mut self, in_tuple: bool) -> PResult<DataType> {
        let t = self.peek();
        if !self.accept_counter() {
            return self.parse_type_inner();
        }
        if in_tuple {
            return Err(self.invalid(t, "Counters are not allowed inside tuples".to_owned()));
        }
        // Cassandra's grammar refuses frozen<native> itself: a syntax error.
        let (line, column) = position(self.text, t.start);
        Err(ParseError::Syntax {
            line,
            column,
            message: "frozen<> is only allowed on collections, tuples, and user-defined types (got counter)".to_owned(),
        })
    }

    /// One collection element type; `None` for `counter`.
    fn parse_collection_arg(&mut self) -> PResult<Option<DataType>> {
        let t = self.peek();
        if t.kind == Kind::Word && self.slice(t).eq_ignore_ascii_case("counter") {
            self.bump();
            return Ok(None);
        }
        self.parse_type_inner().map(Some)
    }

    fn parse_type_inner(&mut self) -> PResult<DataType> {
        self.enter()?;
        let ty = self.parse_type_word();
        self.leave();
        ty
    }

    fn parse_type_word(&mut self) -> PResult<DataType> {
        let t = self.peek();
        match t.kind {
            Kind::Word => {
                let word = self.slice(t);
                if let Ok(ty) = word.parse::<CqlType>() {
                    self.bump();
                    return Ok(DataType::Native(ty));
                }
                let lower = word.to_ascii_lowercase();
                let generic = self.is_at(1, Kind::Lt);
                match lower.as_str() {
                    "list" | "set" | "map" | "frozen" | "tuple" if generic => {
                        self.bump();
                        let one = |mut args: Vec<DataType>| args.pop().map(Box::new);
                        Ok(match lower.as_str() {
                            "list" => DataType::List(
                                one(self.parse_collection_args(t, "list", 1)?)
                                    .ok_or_else(|| self.no_viable())?,
                            ),
                            "set" => DataType::Set(
                                one(self.parse_collection_args(t, "set", 1)?)
                                    .ok_or_else(|| self.no_viable())?,
                            ),
                            "map" => {
                                let mut args = self.parse_collection_args(t, "map", 2)?;
                                let v = args.pop().ok_or_else(|| self.no_viable())?;
                                let k = args.pop().ok_or_else(|| self.no_viable())?;
                                DataType::Map(Box::new(k), Box::new(v))
                            }
                            "tuple" => DataType::Tuple(self.parse_type_args(None)?),
                            _ => match one(self.parse_type_args(Some(1))?)
                                .ok_or_else(|| self.no_viable())?
                            {
                                tuple if matches!(*tuple, DataType::Tuple(_)) => *tuple,
                                inner => DataType::Frozen(inner),
                            },
                        })
                    }
                    "counter" => Err(self.unsupported(t, Feature::Counter, "type counter")),
                    _ if is_reserved(word) => Err(self.no_viable()),
                    _ => self.parse_user_type_ref(),
                }
            }
            Kind::QuotedName => self.parse_user_type_ref(),
            Kind::String => Err(self.unsupported(t, Feature::DataType, "custom types")),
            _ => Err(self.mismatch("a type")),
        }
    }
}

/// Hex digits (already checked by the lexer: even count, all hex) to bytes.
pub(super) fn decode_hex(digits: &str) -> Vec<u8> {
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
