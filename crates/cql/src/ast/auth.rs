//! Role and permission statements (Cassandra's `CREATE/ALTER/DROP ROLE`, the legacy
//! `USER` forms, `GRANT`, `REVOKE`, `LIST ROLES/USERS/PERMISSIONS`).

use std::fmt;

/// A permission (Cassandra's `Permission`, in its declaration order, which is the order
/// `LIST PERMISSIONS` sorts by).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    /// `CREATE`.
    Create,
    /// `ALTER`.
    Alter,
    /// `DROP`.
    Drop,
    /// `SELECT`.
    Select,
    /// `MODIFY`.
    Modify,
    /// `AUTHORIZE`.
    Authorize,
    /// `DESCRIBE` (roles only).
    Describe,
}

impl Permission {
    /// Every permission, in order.
    pub const ALL: [Permission; 7] = [
        Permission::Create,
        Permission::Alter,
        Permission::Drop,
        Permission::Select,
        Permission::Modify,
        Permission::Authorize,
        Permission::Describe,
    ];

    /// Its name (as stored in `role_permissions.permissions` and shown).
    pub fn name(self) -> &'static str {
        match self {
            Permission::Create => "CREATE",
            Permission::Alter => "ALTER",
            Permission::Drop => "DROP",
            Permission::Select => "SELECT",
            Permission::Modify => "MODIFY",
            Permission::Authorize => "AUTHORIZE",
            Permission::Describe => "DESCRIBE",
        }
    }

    /// The permission named `name` (any case).
    pub fn from_name(name: &str) -> Option<Permission> {
        Permission::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The permissions a statement names: some, or `ALL [PERMISSIONS]` (every one the
/// resource supports).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Permissions {
    /// `ALL [PERMISSIONS]`.
    All,
    /// The ones named.
    Some(Vec<Permission>),
}

/// A resource as written (`ALL KEYSPACES`, `KEYSPACE k`, `[TABLE] [k.]t`, `ALL ROLES`,
/// `ROLE r`). A table without keyspace takes the session's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResourceName {
    /// `ALL KEYSPACES`.
    AllKeyspaces,
    /// `KEYSPACE k`.
    Keyspace(String),
    /// `[TABLE] [k.]t`.
    Table(Option<String>, String),
    /// `ALL ROLES`.
    AllRoles,
    /// `ROLE r`.
    Role(String),
}

/// `WITH PASSWORD = '…' AND LOGIN = … AND SUPERUSER = …` (or the `USER` forms' `WITH
/// PASSWORD '…'` and `SUPERUSER`/`NOSUPERUSER`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RoleOptions {
    /// `PASSWORD`.
    pub password: Option<String>,
    /// `LOGIN`.
    pub login: Option<bool>,
    /// `SUPERUSER`.
    pub superuser: Option<bool>,
}

/// One role or permission statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AuthStatement {
    /// `CREATE ROLE [IF NOT EXISTS] r [WITH …]`, or `CREATE USER` (`user`: LOGIN is true).
    CreateRole {
        /// The role.
        name: String,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
        /// Its options.
        options: RoleOptions,
        /// Written as `CREATE USER`.
        user: bool,
    },
    /// `ALTER ROLE r WITH …` or `ALTER USER`.
    AlterRole {
        /// The role.
        name: String,
        /// What changes.
        options: RoleOptions,
        /// Written as `ALTER USER`.
        user: bool,
    },
    /// `DROP ROLE [IF EXISTS] r` or `DROP USER`.
    DropRole {
        /// The role.
        name: String,
        /// `IF EXISTS`.
        if_exists: bool,
        /// Written as `DROP USER`.
        user: bool,
    },
    /// `GRANT perms ON resource TO role`.
    Grant {
        /// The permissions.
        permissions: Permissions,
        /// On what.
        resource: ResourceName,
        /// To whom.
        role: String,
    },
    /// `REVOKE perms ON resource FROM role`.
    Revoke {
        /// The permissions.
        permissions: Permissions,
        /// On what.
        resource: ResourceName,
        /// From whom.
        role: String,
    },
    /// `GRANT role TO grantee`.
    GrantRole {
        /// The role granted.
        role: String,
        /// Who gets it.
        grantee: String,
    },
    /// `REVOKE role FROM grantee`.
    RevokeRole {
        /// The role revoked.
        role: String,
        /// Who loses it.
        grantee: String,
    },
    /// `LIST ROLES [OF r] [NORECURSIVE]`.
    ListRoles {
        /// `OF r`.
        of: Option<String>,
        /// Without `NORECURSIVE`.
        recursive: bool,
    },
    /// `LIST USERS`.
    ListUsers,
    /// `LIST perms [ON resource] [OF role] [NORECURSIVE]`.
    ListPermissions {
        /// The permissions listed.
        permissions: Permissions,
        /// `ON resource`.
        resource: Option<ResourceName>,
        /// `OF role`.
        of: Option<String>,
        /// Without `NORECURSIVE`.
        recursive: bool,
    },
}

/// A name as a CQL string literal (role names and passwords print this way: it keeps
/// their case and any character).
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}'", self.0.replace('\'', "''"))
    }
}

/// An identifier, quoted (keeps its case).
struct Name<'a>(&'a str);

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0.replace('"', "\"\""))
    }
}

impl fmt::Display for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Permissions::All => f.write_str("ALL PERMISSIONS"),
            Permissions::Some(list) => {
                for (i, p) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceName::AllKeyspaces => f.write_str("ALL KEYSPACES"),
            ResourceName::Keyspace(k) => write!(f, "KEYSPACE {}", Name(k)),
            ResourceName::Table(Some(k), t) => write!(f, "TABLE {}.{}", Name(k), Name(t)),
            ResourceName::Table(None, t) => write!(f, "TABLE {}", Name(t)),
            ResourceName::AllRoles => f.write_str("ALL ROLES"),
            ResourceName::Role(r) => write!(f, "ROLE {}", Quoted(r)),
        }
    }
}

impl RoleOptions {
    fn fmt_role(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(p) = &self.password {
            parts.push(format!("PASSWORD = {}", Quoted(p)));
        }
        if let Some(b) = self.login {
            parts.push(format!("LOGIN = {b}"));
        }
        if let Some(b) = self.superuser {
            parts.push(format!("SUPERUSER = {b}"));
        }
        if !parts.is_empty() {
            write!(f, " WITH {}", parts.join(" AND "))?;
        }
        Ok(())
    }

    fn fmt_user(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.password {
            write!(f, " WITH PASSWORD {}", Quoted(p))?;
        }
        match self.superuser {
            Some(true) => f.write_str(" SUPERUSER"),
            Some(false) => f.write_str(" NOSUPERUSER"),
            None => Ok(()),
        }
    }
}

fn fmt_list_tail(f: &mut fmt::Formatter<'_>, of: Option<&String>, recursive: bool) -> fmt::Result {
    if let Some(r) = of {
        write!(f, " OF {}", Quoted(r))?;
    }
    if !recursive {
        f.write_str(" NORECURSIVE")?;
    }
    Ok(())
}

impl fmt::Display for AuthStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = |user: bool| if user { "USER" } else { "ROLE" };
        match self {
            AuthStatement::CreateRole {
                name,
                if_not_exists,
                options,
                user,
            } => {
                write!(f, "CREATE {} ", noun(*user))?;
                if *if_not_exists {
                    f.write_str("IF NOT EXISTS ")?;
                }
                write!(f, "{}", Quoted(name))?;
                if *user {
                    options.fmt_user(f)
                } else {
                    options.fmt_role(f)
                }
            }
            AuthStatement::AlterRole {
                name,
                options,
                user,
            } => {
                write!(f, "ALTER {} {}", noun(*user), Quoted(name))?;
                if *user {
                    options.fmt_user(f)
                } else {
                    options.fmt_role(f)
                }
            }
            AuthStatement::DropRole {
                name,
                if_exists,
                user,
            } => {
                write!(f, "DROP {} ", noun(*user))?;
                if *if_exists {
                    f.write_str("IF EXISTS ")?;
                }
                write!(f, "{}", Quoted(name))
            }
            AuthStatement::Grant {
                permissions,
                resource,
                role,
            } => write!(f, "GRANT {permissions} ON {resource} TO {}", Quoted(role)),
            AuthStatement::Revoke {
                permissions,
                resource,
                role,
            } => write!(
                f,
                "REVOKE {permissions} ON {resource} FROM {}",
                Quoted(role)
            ),
            AuthStatement::GrantRole { role, grantee } => {
                write!(f, "GRANT {} TO {}", Quoted(role), Quoted(grantee))
            }
            AuthStatement::RevokeRole { role, grantee } => {
                write!(f, "REVOKE {} FROM {}", Quoted(role), Quoted(grantee))
            }
            AuthStatement::ListRoles { of, recursive } => {
                f.write_str("LIST ROLES")?;
                fmt_list_tail(f, of.as_ref(), *recursive)
            }
            AuthStatement::ListUsers => f.write_str("LIST USERS"),
            AuthStatement::ListPermissions {
                permissions,
                resource,
                of,
                recursive,
            } => {
                write!(f, "LIST {permissions}")?;
                if let Some(r) = resource {
                    write!(f, " ON {r}")?;
                }
                fmt_list_tail(f, of.as_ref(), *recursive)
            }
        }
    }
}
