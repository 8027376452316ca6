//! Running the role and permission statements, with Cassandra's checks and texts
//! (`CreateRoleStatement`, `AlterRoleStatement`, `DropRoleStatement`, the permission and
//! role grants, `ListRolesStatement`, `ListUsersStatement`, `ListPermissionsStatement`).

use std::collections::BTreeSet;

use bytes::Bytes;
use mosaic_types::CqlType;

use super::store::RoleRecord;
use super::{unauthorized, Authorization, Permission, Resource, ANONYMOUS};
use crate::ast::{AuthStatement, Permissions, ResourceName, RoleOptions};
use crate::coordinator::Coordinator;
use crate::frame::{ColumnSpec, ColumnType, ErrorResponse, ResultBody, Rows, RowsMetadata};
use crate::processor::{invalid, Processor, Session};

/// The logged-in role's name and what it may do.
struct Caller {
    name: String,
    authz: std::sync::Arc<Authorization>,
}

impl Caller {
    fn check(&self, permission: Permission, resource: &Resource) -> Result<(), ErrorResponse> {
        if self.authz.allows(permission, resource) {
            return Ok(());
        }
        Err(unauthorized(format!(
            "User {} has no {permission} permission on {resource} or any of its parents",
            self.name
        )))
    }
}

/// Runs a role or permission statement for `session` (`keyspace`: the one unqualified
/// tables are in).
pub(crate) async fn execute<C: Coordinator>(
    p: &Processor<C>,
    session: &Session,
    keyspace: Option<&str>,
    statement: &AuthStatement,
) -> Result<ResultBody, ErrorResponse> {
    // Authentication off: every caller is anonymous (Cassandra's AllowAllAuthenticator).
    let Some(name) = session.user.clone().filter(|_| p.auth().enabled()) else {
        return Err(unauthorized(ANONYMOUS));
    };
    let caller = Caller {
        authz: p.authorization(&name).await?,
        name,
    };
    match statement {
        AuthStatement::CreateRole {
            name,
            if_not_exists,
            options,
            ..
        } => create_role(p, &caller, name, *if_not_exists, options).await,
        AuthStatement::AlterRole { name, options, .. } => {
            alter_role(p, &caller, name, options).await
        }
        AuthStatement::DropRole {
            name, if_exists, ..
        } => drop_role(p, &caller, name, *if_exists).await,
        AuthStatement::Grant {
            permissions,
            resource,
            role,
        } => change_permissions(p, &caller, keyspace, permissions, resource, role, true).await,
        AuthStatement::Revoke {
            permissions,
            resource,
            role,
        } => change_permissions(p, &caller, keyspace, permissions, resource, role, false).await,
        AuthStatement::GrantRole { role, grantee } => {
            change_membership(p, &caller, role, grantee, true).await
        }
        AuthStatement::RevokeRole { role, grantee } => {
            change_membership(p, &caller, role, grantee, false).await
        }
        AuthStatement::ListRoles { of, recursive } => {
            let roles = listed_roles(p, &caller, of.as_deref(), *recursive).await?;
            Ok(list_roles_result(&roles))
        }
        AuthStatement::ListUsers => {
            let roles = listed_roles(p, &caller, None, true).await?;
            list_users_result(p, &roles).await
        }
        AuthStatement::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        } => {
            list_permissions(
                p,
                &caller,
                keyspace,
                permissions,
                resource.as_ref(),
                of.as_deref(),
                *recursive,
            )
            .await
        }
    }
}

async fn existing<C: Coordinator>(
    p: &Processor<C>,
    name: &str,
) -> Result<RoleRecord, ErrorResponse> {
    found(p, name, name).await
}

/// The role `name`, or Invalid "`shown` doesn't exist".
async fn found<C: Coordinator>(
    p: &Processor<C>,
    name: &str,
    shown: impl std::fmt::Display,
) -> Result<RoleRecord, ErrorResponse> {
    p.role(name)
        .await?
        .ok_or_else(|| invalid(format!("{shown} doesn't exist")))
}

async fn hash<C: Coordinator>(
    p: &Processor<C>,
    password: Option<&String>,
) -> Result<Option<String>, ErrorResponse> {
    match password {
        Some(pw) if pw.is_empty() => Err(invalid("Password must not be empty")),
        Some(pw) => Ok(Some(p.auth().settings().hasher.hash(pw.clone()).await?)),
        None => Ok(None),
    }
}

async fn create_role<C: Coordinator>(
    p: &Processor<C>,
    caller: &Caller,
    name: &str,
    if_not_exists: bool,
    options: &RoleOptions,
) -> Result<ResultBody, ErrorResponse> {
    caller.check(Permission::Create, &Resource::AllRoles)?;
    if options.superuser == Some(true) && !caller.authz.superuser {
        return Err(unauthorized(
            "Only superusers can create a role with superuser status",
        ));
    }
    if name.is_empty() {
        return Err(invalid("Role name can't be an empty string"));
    }
    if p.role(name).await?.is_some() {
        if if_not_exists {
            return Ok(ResultBody::Void);
        }
        return Err(invalid(format!("{name} already exists")));
    }
    let record = RoleRecord {
        name: name.to_owned(),
        can_login: options.login.unwrap_or(false),
        is_superuser: options.superuser.unwrap_or(false),
        member_of: BTreeSet::new(),
        salted_hash: hash(p, options.password.as_ref()).await?,
    };
    p.put_role(&record).await?;
    let role = Resource::Role(name.to_owned());
    p.change_permissions(&caller.name, &role, role.applicable(), true)
        .await?;
    Ok(ResultBody::Void)
}

async fn alter_role<C: Coordinator>(
    p: &Processor<C>,
    caller: &Caller,
    name: &str,
    options: &RoleOptions,
) -> Result<ResultBody, ErrorResponse> {
    if options.superuser.is_some() {
        if caller.authz.roles.contains(name) {
            return Err(unauthorized("You aren't allowed to alter your own superuser status or that of a role granted to you"));
        }
        if !caller.authz.superuser {
            return Err(unauthorized(
                "Only superusers are allowed to alter superuser status",
            ));
        }
    }
    if !caller.authz.superuser {
        if caller.name == name {
            if options.login.is_some() {
                return Err(unauthorized("You aren't allowed to alter LOGIN"));
            }
        } else {
            caller.check(Permission::Alter, &Resource::Role(name.to_owned()))?;
        }
    }
    let mut record = existing(p, name).await?;
    if let Some(login) = options.login {
        record.can_login = login;
    }
    if let Some(superuser) = options.superuser {
        record.is_superuser = superuser;
    }
    if let Some(h) = hash(p, options.password.as_ref()).await? {
        record.salted_hash = Some(h);
    }
    p.put_role(&record).await?;
    p.auth().invalidate();
    Ok(ResultBody::Void)
}

async fn drop_role<C: Coordinator>(
    p: &Processor<C>,
    caller: &Caller,
    name: &str,
    if_exists: bool,
) -> Result<ResultBody, ErrorResponse> {
    caller.check(Permission::Drop, &Resource::Role(name.to_owned()))?;
    let record = p.role(name).await?;
    if record.as_ref().is_some_and(|r| r.is_superuser) && !caller.authz.superuser {
        return Err(unauthorized(
            "Only superusers can drop a role with superuser status",
        ));
    }
    if caller.name == name {
        return Err(invalid("Cannot DROP primary role for current login"));
    }
    let Some(record) = record else {
        if if_exists {
            return Ok(ResultBody::Void);
        }
        return Err(invalid(format!("{name} doesn't exist")));
    };
    p.delete_role(&record).await?;
    Ok(ResultBody::Void)
}

/// The resource a statement names, its table's keyspace resolved.
fn resolve(resource: &ResourceName, keyspace: Option<&str>) -> Result<Resource, ErrorResponse> {
    Ok(match resource {
        ResourceName::AllKeyspaces => Resource::AllKeyspaces,
        ResourceName::Keyspace(k) => Resource::Keyspace(k.clone()),
        ResourceName::Table(Some(k), t) => Resource::Table(k.clone(), t.clone()),
        ResourceName::Table(None, t) => {
            let k = keyspace.ok_or_else(|| {
                invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
            })?;
            Resource::Table(k.to_owned(), t.clone())
        }
        ResourceName::AllRoles => Resource::AllRoles,
        ResourceName::Role(r) => Resource::Role(r.clone()),
    })
}

/// Whether `resource` exists now.
async fn exists<C: Coordinator>(
    p: &Processor<C>,
    resource: &Resource,
) -> Result<bool, ErrorResponse> {
    let catalog = p.coordinator().catalog();
    Ok(match resource {
        Resource::AllKeyspaces | Resource::AllRoles => true,
        Resource::Keyspace(k) => {
            catalog.keyspace(k).is_some() || crate::schema::is_system_keyspace(k)
        }
        Resource::Table(k, t) => catalog.table(k, t).is_some(),
        Resource::Role(r) => p.role(r).await?.is_some(),
    })
}

/// The permissions a statement names on `resource`, checked against what it supports.
fn named_permissions(
    permissions: &Permissions,
    resource: &Resource,
) -> Result<Vec<Permission>, ErrorResponse> {
    match permissions {
        Permissions::All => Ok(resource.applicable().to_vec()),
        Permissions::Some(list) => {
            let unsupported: Vec<&str> = list
                .iter()
                .filter(|p| !resource.applicable().contains(p))
                .map(|p| p.name())
                .collect();
            if unsupported.is_empty() {
                Ok(list.clone())
            } else {
                Err(invalid(format!(
                    "Resource type {} does not support any of the requested permissions ({})",
                    resource.type_name(),
                    unsupported.join(", ")
                )))
            }
        }
    }
}

async fn change_permissions<C: Coordinator>(
    p: &Processor<C>,
    caller: &Caller,
    keyspace: Option<&str>,
    permissions: &Permissions,
    resource: &ResourceName,
    role: &str,
    grant: bool,
) -> Result<ResultBody, ErrorResponse> {
    let resource = resolve(resource, keyspace)?;
    let named = named_permissions(permissions, &resource)?;
    caller.check(Permission::Authorize, &resource)?;
    // CASSANDRA-4874: only what the caller holds can be granted or revoked.
    for permission in &named {
        caller.check(*permission, &resource)?;
    }
    if p.role(role).await?.is_none() {
        return Err(invalid(format!("Role {role} doesn't exist")));
    }
    if !exists(p, &resource).await? {
        return Err(invalid(format!("Resource {resource} doesn't exist")));
    }
    p.change_permissions(role, &resource, &named, grant).await?;
    Ok(ResultBody::Void)
}

async fn change_membership<C: Coordinator>(
    p: &Processor<C>,
    caller: &Caller,
    role: &str,
    grantee: &str,
    grant: bool,
) -> Result<ResultBody, ErrorResponse> {
    caller.check(Permission::Authorize, &Resource::Role(role.to_owned()))?;
    let granted = existing(p, role).await?;
    let member = existing(p, grantee).await?;
    if grant {
        let member_roles = p.roles_of(&member, true).await?;
        if member_roles.iter().any(|r| r.name == role) {
            return Err(invalid(format!("{grantee} is a member of {role}")));
        }
        let granted_roles = p.roles_of(&granted, true).await?;
        if granted_roles.iter().any(|r| r.name == grantee) {
            return Err(invalid(format!("{role} is a member of {grantee}")));
        }
    } else if !member.member_of.contains(role) {
        return Err(invalid(format!("{grantee} is not a member of {role}")));
    }
    p.change_membership(role, grantee, grant).await?;
    Ok(ResultBody::Void)
}

/// The role a LIST statement names (`OF r`).
async fn named_role<C: Coordinator>(
    p: &Processor<C>,
    name: &str,
) -> Result<RoleRecord, ErrorResponse> {
    found(p, name, Resource::Role(name.to_owned())).await
}

/// The roles `LIST ROLES [OF r]` shows the caller.
async fn listed_roles<C: Coordinator>(
    p: &Processor<C>,
    caller: &Caller,
    of: Option<&str>,
    recursive: bool,
) -> Result<Vec<RoleRecord>, ErrorResponse> {
    let grantee = match of {
        Some(g) => Some(named_role(p, g).await?),
        None => None,
    };
    if caller
        .authz
        .allows(Permission::Describe, &Resource::AllRoles)
    {
        return match grantee {
            None => p.all_roles().await,
            Some(g) => p.roles_of(&g, recursive).await,
        };
    }
    match grantee {
        None => {
            let me = existing(p, &caller.name).await?;
            p.roles_of(&me, recursive).await
        }
        Some(g) if caller.authz.roles.contains(&g.name) => p.roles_of(&g, recursive).await,
        Some(g) => Err(unauthorized(format!(
            "You are not authorized to view roles granted to {} ",
            g.name
        ))),
    }
}

fn spec(table: &str, name: &str, ty: ColumnType) -> ColumnSpec {
    ColumnSpec::new(crate::schema::AUTH_KEYSPACE, table, name, ty)
}

fn text_cell(s: &str) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(s.as_bytes()))
}

fn bool_cell(b: bool) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(&[u8::from(b)]))
}

fn rows_result(columns: Vec<ColumnSpec>, rows: Vec<Vec<Option<Bytes>>>) -> ResultBody {
    if rows.is_empty() {
        return ResultBody::Void;
    }
    ResultBody::Rows(Rows {
        metadata: RowsMetadata::new(columns),
        rows,
    })
}

fn list_roles_result(roles: &[RoleRecord]) -> ResultBody {
    let text = || ColumnType::Native(CqlType::Text);
    let columns = vec![
        spec("roles", "role", text()),
        spec("roles", "super", ColumnType::Native(CqlType::Boolean)),
        spec("roles", "login", ColumnType::Native(CqlType::Boolean)),
        spec(
            "roles",
            "options",
            ColumnType::Map(Box::new(text()), Box::new(text())),
        ),
        spec("roles", "datacenters", text()),
    ];
    let rows = roles
        .iter()
        .map(|r| {
            vec![
                text_cell(&r.name),
                bool_cell(r.is_superuser),
                bool_cell(r.can_login),
                Some(Bytes::from_static(&[0, 0, 0, 0])),
                text_cell("ALL"),
            ]
        })
        .collect();
    rows_result(columns, rows)
}

async fn list_users_result<C: Coordinator>(
    p: &Processor<C>,
    roles: &[RoleRecord],
) -> Result<ResultBody, ErrorResponse> {
    let columns = vec![
        spec("users", "name", ColumnType::Native(CqlType::Text)),
        spec("users", "super", ColumnType::Native(CqlType::Boolean)),
        spec("users", "datacenters", ColumnType::Native(CqlType::Text)),
    ];
    let mut rows = Vec::new();
    for r in roles.iter().filter(|r| r.can_login) {
        // A user is a superuser through any role granted to it.
        let superuser = p.authorization(&r.name).await?.superuser;
        rows.push(vec![
            text_cell(&r.name),
            bool_cell(superuser),
            text_cell("ALL"),
        ]);
    }
    Ok(rows_result(columns, rows))
}

#[allow(clippy::too_many_arguments)]
async fn list_permissions<C: Coordinator>(
    p: &Processor<C>,
    caller: &Caller,
    keyspace: Option<&str>,
    permissions: &Permissions,
    resource: Option<&ResourceName>,
    of: Option<&str>,
    recursive: bool,
) -> Result<ResultBody, ErrorResponse> {
    let resource = resource.map(|r| resolve(r, keyspace)).transpose()?;
    if let Some(r) = &resource {
        if !exists(p, r).await? {
            return Err(invalid(format!("{r} doesn't exist")));
        }
    }
    let grantee = match of {
        Some(g) => Some(named_role(p, g).await?),
        None => None,
    };
    let allowed = caller.authz.superuser
        || grantee
            .as_ref()
            .is_some_and(|g| caller.authz.roles.contains(&g.name));
    if !allowed {
        let whose = grantee
            .as_ref()
            .map_or("everyone".to_owned(), |g| g.name.clone());
        return Err(unauthorized(format!(
            "You are not authorized to view {whose}'s permissions"
        )));
    }
    let roles = match &grantee {
        Some(g) => p.roles_of(g, true).await?,
        None => p.all_roles().await?,
    };
    let resources: Option<Vec<Resource>> =
        resource.map(|r| if recursive { r.chain() } else { vec![r] });
    let mut details: Vec<(String, String, Resource, Permission)> = Vec::new();
    for role in roles {
        for (res, perms) in p.permissions_of(&role.name).await? {
            if resources.as_ref().is_some_and(|rs| !rs.contains(&res)) {
                continue;
            }
            for perm in perms {
                if let Permissions::Some(wanted) = permissions {
                    if !wanted.contains(&perm) {
                        continue;
                    }
                }
                details.push((role.name.clone(), res.name(), res.clone(), perm));
            }
        }
    }
    details.sort();
    let text = || ColumnType::Native(CqlType::Text);
    let columns = vec![
        spec("permissions", "role", text()),
        spec("permissions", "username", text()),
        spec("permissions", "resource", text()),
        spec("permissions", "permission", text()),
    ];
    let rows = details
        .iter()
        .map(|(role, _, res, perm)| {
            vec![
                text_cell(role),
                text_cell(role),
                text_cell(&res.to_string()),
                text_cell(perm.name()),
            ]
        })
        .collect();
    Ok(rows_result(columns, rows))
}
