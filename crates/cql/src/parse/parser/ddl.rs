//! Schema statements (CREATE, ALTER, DROP of keyspaces and tables, properties) and
//! DESCRIBE.

use super::*;

impl Parser<'_> {
    /// Whether the current token is the describe keyword `kw`: a bare word not followed by
    /// `.` (`DESCRIBE type.t` names a table `t` in a keyspace `type`).
    pub(super) fn is_describe_kw(&self, kw: &str) -> bool {
        self.is_kw(kw) && !self.is_at(1, Kind::Dot)
    }

    /// `DESCRIBE | DESC` then a target (Cassandra 4.0's grammar), then `[WITH INTERNALS]`.
    pub(super) fn parse_describe(&mut self) -> PResult<DescribeStatement> {
        self.bump();
        let target = self.parse_describe_target()?;
        let internals = self.accept_kw("WITH");
        if internals {
            self.expect_kw("INTERNALS")?;
        }
        Ok(DescribeStatement { target, internals })
    }

    pub(super) fn parse_describe_target(&mut self) -> PResult<DescribeTarget> {
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

    /// Refuses the schema objects Mosaic has no use for (`INDEX`, `TYPE`, …) after
    /// `CREATE`/`ALTER`/`DROP`.
    pub(super) fn refuse_unsupported_object(&self, verb: &str) -> PResult<()> {
        let t = self.peek();
        let mut n = 0;
        if verb == "CREATE" && self.is_kw("OR") && self.is_kw_at(1, "REPLACE") {
            n = 2;
        }
        let word = self.slice(self.peek_at(n)).to_ascii_uppercase();
        let (feature, what) = match word.as_str() {
            "MATERIALIZED" => (Feature::MaterializedView, "MATERIALIZED VIEW"),
            "FUNCTION" => (Feature::UserDefinedFunction, "FUNCTION"),
            "AGGREGATE" => (Feature::UserDefinedAggregate, "AGGREGATE"),
            "TRIGGER" => (Feature::Trigger, "TRIGGER"),
            _ => return Ok(()),
        };
        Err(self.unsupported(t, feature, &format!("{verb} {what}")))
    }

    pub(super) fn parse_create(&mut self) -> PResult<Statement> {
        self.expect_kw("CREATE")?;
        self.refuse_unsupported_object("CREATE")?;
        if let Some(statement) = self.parse_create_role()? {
            return Ok(statement);
        }
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
        if self.is_kw("INDEX") || (self.is_kw("CUSTOM") && self.is_kw_at(1, "INDEX")) {
            return self.parse_create_index().map(Statement::CreateIndex);
        }
        if self.accept_kw("TYPE") {
            let if_not_exists = self.parse_if_not_exists()?;
            let name = self.parse_qualified_name()?;
            self.expect(Kind::LParen)?;
            let mut fields = Vec::new();
            loop {
                let field = self.parse_ident()?;
                fields.push((field, self.parse_field_type()?));
                if !self.accept(Kind::Comma) {
                    break;
                }
            }
            self.expect(Kind::RParen)?;
            return Ok(Statement::CreateType(CreateTypeStatement {
                name,
                if_not_exists,
                fields,
            }));
        }
        Err(self.no_viable())
    }

    pub(super) fn parse_alter(&mut self) -> PResult<Statement> {
        self.expect_kw("ALTER")?;
        self.refuse_unsupported_object("ALTER")?;
        if let Some(statement) = self.parse_alter_role()? {
            return Ok(statement);
        }
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
        if self.accept_kw("TYPE") {
            let name = self.parse_qualified_name()?;
            let operation = if self.accept_kw("ADD") {
                let field = self.parse_ident()?;
                AlterTypeOperation::Add(field, self.parse_field_type()?)
            } else if self.accept_kw("RENAME") {
                let mut pairs = Vec::new();
                loop {
                    let from = self.parse_ident()?;
                    self.expect_kw("TO")?;
                    pairs.push((from, self.parse_ident()?));
                    if !self.accept_kw("AND") {
                        break;
                    }
                }
                AlterTypeOperation::Rename(pairs)
            } else {
                return Err(self.mismatch("K_ADD or K_RENAME"));
            };
            return Ok(Statement::AlterType(AlterTypeStatement { name, operation }));
        }
        Err(self.no_viable())
    }

    pub(super) fn parse_alter_table_operation(&mut self) -> PResult<AlterTableOperation> {
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

    pub(super) fn parse_drop(&mut self) -> PResult<Statement> {
        self.expect_kw("DROP")?;
        self.refuse_unsupported_object("DROP")?;
        if let Some(statement) = self.parse_drop_role()? {
            return Ok(statement);
        }
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
        if self.accept_kw("TYPE") {
            let if_exists = self.parse_if_exists()?;
            let name = self.parse_qualified_name()?;
            return Ok(Statement::DropType(DropTypeStatement { name, if_exists }));
        }
        if self.accept_kw("INDEX") {
            let if_exists = self.parse_if_exists()?;
            let name = self.parse_qualified_name()?;
            return Ok(Statement::DropIndex(DropIndexStatement { name, if_exists }));
        }
        Err(self.no_viable())
    }

    /// `[CUSTOM] INDEX [IF NOT EXISTS] [name] ON [ks.]t (target) [USING 'class' [WITH
    /// OPTIONS = {…}]]` after `CREATE`.
    fn parse_create_index(&mut self) -> PResult<CreateIndexStatement> {
        let custom = self.accept_kw("CUSTOM");
        self.expect_kw("INDEX")?;
        let if_not_exists = self.parse_if_not_exists()?;
        let name = if self.is_kw("ON") {
            None
        } else {
            Some(self.parse_ident()?)
        };
        self.expect_kw("ON")?;
        let table = self.parse_qualified_name()?;
        self.expect(Kind::LParen)?;
        let function = [
            ("KEYS", TargetKind::Keys),
            ("VALUES", TargetKind::Values),
            ("ENTRIES", TargetKind::Entries),
            ("FULL", TargetKind::Full),
        ]
        .into_iter()
        .find(|(word, _)| self.is_kw(word) && self.is_at(1, Kind::LParen));
        let (column, kind) = match function {
            Some((_, kind)) => {
                self.bump();
                self.expect(Kind::LParen)?;
                let column = self.parse_ident()?;
                self.expect(Kind::RParen)?;
                (column, Some(kind))
            }
            None => (self.parse_ident()?, None),
        };
        self.expect(Kind::RParen)?;
        let mut class = None;
        let mut options = Vec::new();
        if custom {
            self.expect_kw("USING")?;
            let t = self.expect(Kind::String)?;
            class = Some(unquote(self.slice(t), '\''));
            if self.accept_kw("WITH") {
                let at = self.peek();
                let property = self.parse_property()?;
                match property.value {
                    PropertyValue::Map(entries) if property.name == "options" => {
                        options = entries;
                    }
                    _ => {
                        return Err(self.invalid(
                            at,
                            "Only the OPTIONS property is allowed on an index".to_owned(),
                        ))
                    }
                }
            }
        }
        Ok(CreateIndexStatement {
            name,
            table,
            if_not_exists,
            column,
            kind,
            class,
            options,
        })
    }

    pub(super) fn parse_column_definition(&mut self) -> PResult<ColumnDefinition> {
        let name = self.parse_ident()?;
        let counter = self.accept_counter();
        let ty = if counter {
            DataType::Native(mosaic_types::CqlType::BigInt)
        } else {
            self.parse_type()?
        };
        let is_static = self.accept_kw("STATIC");
        Ok(ColumnDefinition {
            name,
            ty,
            is_static,
            counter,
        })
    }

    /// `(definitions) [WITH options]` after `CREATE TABLE`.
    pub(super) fn parse_create_table(&mut self) -> PResult<CreateTableStatement> {
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
        let (clustering_order, properties) = if self.accept_kw("WITH") {
            self.parse_create_table_options()?
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(CreateTableStatement {
            name,
            if_not_exists,
            columns,
            primary_key,
            clustering_order,
            properties,
        })
    }

    /// `CLUSTERING ORDER BY (…) AND name = value AND …` after `WITH` in a CREATE TABLE.
    #[allow(clippy::type_complexity)] // The two lists CreateTableStatement keeps.
    fn parse_create_table_options(&mut self) -> PResult<(Vec<(Ident, Order)>, Vec<Property>)> {
        let mut clustering_order = Vec::new();
        let mut properties = Vec::new();
        loop {
            let t = self.peek();
            if self.is_kw("CLUSTERING") && self.is_kw_at(1, "ORDER") {
                self.bump();
                self.bump();
                self.expect_kw("BY")?;
                if !clustering_order.is_empty() {
                    return Err(self.invalid(t, "Multiple CLUSTERING ORDER BY clauses".to_owned()));
                }
                self.expect(Kind::LParen)?;
                clustering_order = self.parse_orderings(true)?;
                self.expect(Kind::RParen)?;
            } else if self.is_kw("COMPACT") && self.is_kw_at(1, "STORAGE") {
                return Err(self.unsupported(t, Feature::CompactStorage, "WITH COMPACT STORAGE"));
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
        Ok((clustering_order, properties))
    }

    pub(super) fn multiple_primary_keys(&self, t: Token) -> ParseError {
        self.invalid(
            t,
            "Multiple PRIMARY KEYs specifed (exactly one required)".to_owned(),
        )
    }

    pub(super) fn duplicate_property(&self, t: Token, name: &Ident) -> ParseError {
        self.invalid(
            t,
            format!("Multiple definition for property {}", clip(name.as_str())),
        )
    }

    /// `( pk | (pk1, pk2, …) [, ck …] )` after `PRIMARY KEY`.
    pub(super) fn parse_primary_key_clause(&mut self) -> PResult<PrimaryKey> {
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
    pub(super) fn parse_properties(&mut self) -> PResult<Vec<Property>> {
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

    pub(super) fn parse_property(&mut self) -> PResult<Property> {
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
    pub(super) fn parse_property_constant(&mut self) -> PResult<Literal> {
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
}

/// A map-literal key or value as the string Cassandra keeps for it.
pub(super) fn property_string(literal: Literal) -> String {
    match literal {
        Literal::String(s) => s,
        other => other.to_string(),
    }
}
