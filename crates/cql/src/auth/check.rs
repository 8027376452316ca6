//! The check of each statement against the connection's role (Cassandra's
//! `CQLStatement.authorize` and `ClientState.ensurePermission`): which permission on which
//! resource a statement needs, and the Unauthorized error when it is missing.

use super::{unauthorized, Permission, Resource};
use crate::ast::{ModificationStatement, QualifiedName, Statement};
use crate::coordinator::Coordinator;
use crate::frame::ErrorResponse;
use crate::processor::{Processor, Session};

/// Keyspaces any logged-in role reads without a grant: what drivers and cqlsh read at
/// connect (Cassandra's `READABLE_SYSTEM_RESOURCES` and the schema tables).
const READABLE_KEYSPACES: [&str; 3] = ["system", "system_schema", "system_virtual_schema"];

/// The permission a statement needs and on what; `None`: nothing to check here (role
/// statements check their own, USE and DESCRIBE need none).
fn requirement(
    statement: &Statement,
    keyspace: Option<&str>,
    catalog: &crate::schema::Catalog,
) -> Result<Vec<(Permission, Resource)>, ErrorResponse> {
    let table = |name: &QualifiedName| -> Result<Resource, ErrorResponse> {
        let ks = name
            .keyspace
            .as_ref()
            .map(|k| k.as_str().to_owned())
            .or_else(|| keyspace.map(str::to_owned))
            .ok_or_else(|| {
                crate::processor::invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
            })?;
        Ok(Resource::Table(ks, name.name.as_str().to_owned()))
    };
    let keyspace_of = |name: &QualifiedName| -> Result<Resource, ErrorResponse> {
        match table(name)? {
            Resource::Table(k, _) => Ok(Resource::Keyspace(k)),
            other => Ok(other),
        }
    };
    let modification =
        |m: &ModificationStatement| -> Result<Vec<(Permission, Resource)>, ErrorResponse> {
            let r = table(m.table())?;
            let mut out = vec![(Permission::Modify, r.clone())];
            if m.conditions().is_some() {
                out.push((Permission::Select, r));
            }
            Ok(out)
        };
    Ok(match statement {
        Statement::Select(s) => {
            let r = table(&s.table)?;
            match &r {
                Resource::Table(k, _) if READABLE_KEYSPACES.contains(&k.as_str()) => Vec::new(),
                _ => vec![(Permission::Select, r)],
            }
        }
        Statement::Insert(s) => modification(&ModificationStatement::Insert(s.clone()))?,
        Statement::Update(s) => modification(&ModificationStatement::Update(s.clone()))?,
        Statement::Delete(s) => modification(&ModificationStatement::Delete(s.clone()))?,
        Statement::Batch(b) => {
            let mut out = Vec::new();
            for m in &b.statements {
                out.extend(modification(m)?);
            }
            out
        }
        Statement::Truncate(s) => vec![(Permission::Modify, table(&s.name)?)],
        Statement::CreateKeyspace(_) => vec![(Permission::Create, Resource::AllKeyspaces)],
        Statement::AlterKeyspace(s) => vec![(
            Permission::Alter,
            Resource::Keyspace(s.name.as_str().to_owned()),
        )],
        Statement::DropKeyspace(s) => vec![(
            Permission::Drop,
            Resource::Keyspace(s.name.as_str().to_owned()),
        )],
        Statement::CreateTable(s) => vec![(Permission::Create, keyspace_of(&s.name)?)],
        Statement::AlterTable(s) => vec![(Permission::Alter, table(&s.name)?)],
        Statement::DropTable(s) => vec![(Permission::Drop, table(&s.name)?)],
        Statement::CreateType(s) => vec![(Permission::Create, keyspace_of(&s.name)?)],
        Statement::AlterType(s) => vec![(Permission::Alter, keyspace_of(&s.name)?)],
        Statement::DropType(s) => vec![(Permission::Drop, keyspace_of(&s.name)?)],
        Statement::CreateIndex(s) => vec![(Permission::Alter, table(&s.table)?)],
        Statement::DropIndex(s) => {
            // The index's table, when it exists (a missing index is the DDL's error).
            let ks = match keyspace_of(&s.name)? {
                Resource::Keyspace(k) => k,
                _ => return Ok(Vec::new()),
            };
            match catalog.index(&ks, s.name.name.as_str()) {
                Some((t, _)) => vec![(Permission::Alter, Resource::Table(ks, t.name.clone()))],
                None => Vec::new(),
            }
        }
        Statement::Use(_) | Statement::Describe(_) | Statement::Auth(_) => Vec::new(),
    })
}

impl<C: Coordinator> Processor<C> {
    /// Checks that the session's role may run `statement` (nothing to check when
    /// authentication is off). Role statements are checked as they run.
    pub(crate) async fn authorize(
        &self,
        session: &Session,
        statement: &Statement,
        keyspace: Option<&str>,
    ) -> Result<(), ErrorResponse> {
        if !self.auth().enabled() {
            return Ok(());
        }
        let catalog = self.coordinator().catalog();
        let needed = requirement(statement, keyspace, &catalog)?;
        if needed.is_empty() {
            return Ok(());
        }
        let Some(user) = session.user.as_deref() else {
            return Err(unauthorized("You have not logged in"));
        };
        let authz = self.authorization(user).await?;
        for (permission, resource) in needed {
            if let Resource::Table(k, _) | Resource::Keyspace(k) = &resource {
                let ddl = matches!(
                    permission,
                    Permission::Create | Permission::Alter | Permission::Drop
                );
                if ddl && crate::schema::is_system_keyspace(k) {
                    // The DDL itself answers (system keyspaces are not user-modifiable).
                    continue;
                }
            }
            if !authz.allows(permission, &resource) {
                return Err(unauthorized(format!(
                    "User {user} has no {permission} permission on {resource} or any of its parents"
                )));
            }
        }
        Ok(())
    }

    /// Gives the creator of `resource` every permission on it, as Cassandra does after
    /// CREATE KEYSPACE and CREATE TABLE (superusers included; nothing when
    /// authentication is off).
    pub(crate) async fn grant_to_creator(
        &self,
        session: &Session,
        resource: Resource,
    ) -> Result<(), ErrorResponse> {
        let (true, Some(user)) = (self.auth().enabled(), session.user.as_deref()) else {
            return Ok(());
        };
        self.change_permissions(user, &resource, resource.applicable(), true)
            .await
    }
}
