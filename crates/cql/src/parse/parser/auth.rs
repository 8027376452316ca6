//! Role and permission statements, after Cassandra's grammar (`Parser.g`):
//! `CREATE/ALTER/DROP ROLE`, the legacy `CREATE/ALTER/DROP USER`, `GRANT`, `REVOKE`,
//! `LIST ROLES`, `LIST USERS` and `LIST PERMISSIONS`.

use super::*;

/// Permission keywords that may follow GRANT, REVOKE and LIST.
const PERMISSION_WORDS: [&str; 8] = [
    "CREATE",
    "ALTER",
    "DROP",
    "SELECT",
    "MODIFY",
    "AUTHORIZE",
    "DESCRIBE",
    "EXECUTE",
];

impl Parser<'_> {
    /// `userOrRoleName`: an identifier (lowercased unless quoted) or a string literal
    /// (kept as written).
    fn parse_role_name(&mut self) -> PResult<String> {
        let t = self.peek();
        match t.kind {
            Kind::String => {
                self.bump();
                Ok(unquote(self.slice(t), '\''))
            }
            Kind::QMark => {
                Err(self.invalid(t, "Bind variables cannot be used for role names".to_owned()))
            }
            _ => Ok(self.parse_ident()?.as_str().to_owned()),
        }
    }

    fn parse_bool_option(&mut self) -> PResult<bool> {
        self.expect(Kind::Eq)?;
        if self.accept_kw("TRUE") {
            Ok(true)
        } else if self.accept_kw("FALSE") {
            Ok(false)
        } else {
            Err(self.mismatch("BOOLEAN"))
        }
    }

    fn parse_string_literal(&mut self) -> PResult<String> {
        let t = self.expect(Kind::String)?;
        Ok(unquote(self.slice(t), '\''))
    }

    /// `roleOptions`: `PASSWORD = '…' | LOGIN = b | SUPERUSER = b`, joined by AND.
    fn parse_role_options(&mut self) -> PResult<RoleOptions> {
        let mut options = RoleOptions::default();
        loop {
            let t = self.peek();
            let duplicate = self.invalid(
                t,
                format!(
                    "Multiple definition for property {}",
                    self.slice(t).to_ascii_lowercase()
                ),
            );
            if self.accept_kw("PASSWORD") {
                self.expect(Kind::Eq)?;
                let password = self.parse_string_literal()?;
                if options.password.replace(password).is_some() {
                    return Err(duplicate);
                }
            } else if self.accept_kw("LOGIN") {
                let v = self.parse_bool_option()?;
                if options.login.replace(v).is_some() {
                    return Err(duplicate);
                }
            } else if self.accept_kw("SUPERUSER") {
                let v = self.parse_bool_option()?;
                if options.superuser.replace(v).is_some() {
                    return Err(duplicate);
                }
            } else if self.is_kw("OPTIONS") || self.is_kw("HASHED") || self.is_kw("ACCESS") {
                return Err(self.unsupported(
                    t,
                    Feature::Authorization,
                    &format!("the role option {}", self.slice(t).to_ascii_uppercase()),
                ));
            } else {
                return Err(self.no_viable());
            }
            if !self.accept_kw("AND") {
                return Ok(options);
            }
        }
    }

    /// The legacy user options: `[WITH PASSWORD '…'] [SUPERUSER | NOSUPERUSER]`.
    fn parse_user_options(&mut self) -> PResult<RoleOptions> {
        let mut options = RoleOptions::default();
        if self.accept_kw("WITH") {
            let t = self.peek();
            if self.is_kw("HASHED") {
                return Err(self.unsupported(t, Feature::Authorization, "HASHED PASSWORD"));
            }
            self.expect_kw("PASSWORD")?;
            options.password = Some(self.parse_string_literal()?);
        }
        if self.accept_kw("SUPERUSER") {
            options.superuser = Some(true);
        } else if self.accept_kw("NOSUPERUSER") {
            options.superuser = Some(false);
        }
        Ok(options)
    }

    /// `ROLE` (false) or `USER` (true), consumed; `None` when neither is next.
    fn accept_role_or_user(&mut self) -> Option<bool> {
        if self.accept_kw("ROLE") {
            Some(false)
        } else if self.accept_kw("USER") {
            Some(true)
        } else {
            None
        }
    }

    /// After `CREATE`: `ROLE …` or `USER …`; `None` when neither follows.
    pub(super) fn parse_create_role(&mut self) -> PResult<Option<Statement>> {
        let Some(user) = self.accept_role_or_user() else {
            return Ok(None);
        };
        let if_not_exists = self.parse_if_not_exists()?;
        let name = self.parse_role_name()?;
        let options = if user {
            let mut o = self.parse_user_options()?;
            o.login = Some(true);
            o
        } else if self.accept_kw("WITH") {
            self.parse_role_options()?
        } else {
            RoleOptions::default()
        };
        Ok(Some(Statement::Auth(AuthStatement::CreateRole {
            name,
            if_not_exists,
            options,
            user,
        })))
    }

    /// After `ALTER`: `ROLE …` or `USER …`; `None` when neither follows.
    pub(super) fn parse_alter_role(&mut self) -> PResult<Option<Statement>> {
        let Some(user) = self.accept_role_or_user() else {
            return Ok(None);
        };
        let name = self.parse_role_name()?;
        let options = if user {
            self.parse_user_options()?
        } else if self.accept_kw("WITH") {
            self.parse_role_options()?
        } else {
            RoleOptions::default()
        };
        Ok(Some(Statement::Auth(AuthStatement::AlterRole {
            name,
            options,
            user,
        })))
    }

    /// After `DROP`: `ROLE …` or `USER …`; `None` when neither follows.
    pub(super) fn parse_drop_role(&mut self) -> PResult<Option<Statement>> {
        let Some(user) = self.accept_role_or_user() else {
            return Ok(None);
        };
        let if_exists = self.parse_if_exists()?;
        let name = self.parse_role_name()?;
        Ok(Some(Statement::Auth(AuthStatement::DropRole {
            name,
            if_exists,
            user,
        })))
    }

    /// Whether a permission list starts here (`ALL [PERMISSIONS]` or a permission word,
    /// then `ON`, `OF`, `PERMISSION(S)`, `NORECURSIVE` or the end for LIST).
    fn at_permissions(&self) -> bool {
        let word_is_permission =
            PERMISSION_WORDS.iter().any(|w| self.is_kw(w)) || self.is_kw("ALL");
        let next_fits = ["ON", "PERMISSION", "PERMISSIONS", "OF", "NORECURSIVE"]
            .iter()
            .any(|w| self.is_kw_at(1, w))
            || self.is_at(1, Kind::Eof)
            || self.is_at(1, Kind::Semicolon);
        word_is_permission && next_fits
    }

    /// `permissionOrAll`: `ALL [PERMISSIONS]` or one permission `[PERMISSION]`.
    fn parse_permissions(&mut self) -> PResult<Permissions> {
        if self.accept_kw("ALL") {
            self.accept_kw("PERMISSIONS");
            return Ok(Permissions::All);
        }
        let t = self.peek();
        if self.is_kw("EXECUTE") {
            return Err(self.unsupported(t, Feature::Authorization, "EXECUTE (functions)"));
        }
        let word = self.slice(t);
        let Some(p) = Permission::from_name(word) else {
            return Err(self.no_viable());
        };
        self.bump();
        self.accept_kw("PERMISSION");
        Ok(Permissions::Some(vec![p]))
    }

    /// `resource`: `ALL KEYSPACES`, `KEYSPACE k`, `[TABLE | COLUMNFAMILY] [k.]t`,
    /// `ALL ROLES`, `ROLE r`.
    fn parse_resource(&mut self) -> PResult<ResourceName> {
        let t = self.peek();
        if self.is_kw("ALL") {
            if self.is_kw_at(1, "KEYSPACES") {
                self.bump();
                self.bump();
                return Ok(ResourceName::AllKeyspaces);
            }
            if self.is_kw_at(1, "ROLES") {
                self.bump();
                self.bump();
                return Ok(ResourceName::AllRoles);
            }
            if self.is_kw_at(1, "FUNCTIONS") || self.is_kw_at(1, "MBEANS") {
                return Err(self.unsupported(
                    t,
                    Feature::Authorization,
                    "function and MBean resources",
                ));
            }
            return Err(self.no_viable());
        }
        if self.accept_kw("KEYSPACE") {
            return Ok(ResourceName::Keyspace(
                self.parse_ident()?.as_str().to_owned(),
            ));
        }
        if self.is_kw("ROLE") && !self.is_at(1, Kind::Dot) {
            self.bump();
            return Ok(ResourceName::Role(self.parse_role_name()?));
        }
        if (self.is_kw("FUNCTION") || self.is_kw("MBEAN") || self.is_kw("MBEANS"))
            && !self.is_at(1, Kind::Dot)
        {
            return Err(self.unsupported(
                t,
                Feature::Authorization,
                "function and MBean resources",
            ));
        }
        let _ = self.accept_kw("TABLE") || self.accept_kw("COLUMNFAMILY");
        let name = self.parse_qualified_name()?;
        Ok(ResourceName::Table(
            name.keyspace.map(|k| k.as_str().to_owned()),
            name.name.as_str().to_owned(),
        ))
    }

    /// `GRANT …` or `REVOKE …` (`grant`: which).
    pub(super) fn parse_grant_or_revoke(&mut self, grant: bool) -> PResult<Statement> {
        self.bump();
        let preposition = if grant { "TO" } else { "FROM" };
        if self.at_permissions() {
            let permissions = self.parse_permissions()?;
            self.expect_kw("ON")?;
            let resource = self.parse_resource()?;
            self.expect_kw(preposition)?;
            let role = self.parse_role_name()?;
            return Ok(Statement::Auth(if grant {
                AuthStatement::Grant {
                    permissions,
                    resource,
                    role,
                }
            } else {
                AuthStatement::Revoke {
                    permissions,
                    resource,
                    role,
                }
            }));
        }
        let role = self.parse_role_name()?;
        self.expect_kw(preposition)?;
        let grantee = self.parse_role_name()?;
        Ok(Statement::Auth(if grant {
            AuthStatement::GrantRole { role, grantee }
        } else {
            AuthStatement::RevokeRole { role, grantee }
        }))
    }

    /// `LIST ROLES …`, `LIST USERS` or `LIST perms …`.
    pub(super) fn parse_list(&mut self) -> PResult<Statement> {
        self.bump();
        if self.accept_kw("USERS") {
            return Ok(Statement::Auth(AuthStatement::ListUsers));
        }
        if self.accept_kw("ROLES") {
            let of = if self.accept_kw("OF") {
                Some(self.parse_role_name()?)
            } else {
                None
            };
            let recursive = !self.accept_kw("NORECURSIVE");
            return Ok(Statement::Auth(AuthStatement::ListRoles { of, recursive }));
        }
        let permissions = self.parse_permissions()?;
        let resource = if self.accept_kw("ON") {
            Some(self.parse_resource()?)
        } else {
            None
        };
        let of = if self.accept_kw("OF") {
            Some(self.parse_role_name()?)
        } else {
            None
        };
        let recursive = !self.accept_kw("NORECURSIVE");
        Ok(Statement::Auth(AuthStatement::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        }))
    }
}
