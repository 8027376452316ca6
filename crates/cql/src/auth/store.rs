//! The role store: `system_auth.roles`, `role_members` and `role_permissions`, read and
//! written with internal statements through the node's own processor (so through its
//! coordinator, replicated like any table). Names are bound values, never spliced into
//! the text.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use super::{Authorization, Permission, Resource};
use crate::coordinator::Coordinator;
use crate::frame::{Consistency, ErrorResponse, ResultBody, Rows, Value};
use crate::processor::{Processor, Session};

/// One row of `system_auth.roles`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleRecord {
    /// Its name.
    pub name: String,
    /// `can_login`.
    pub can_login: bool,
    /// `is_superuser`.
    pub is_superuser: bool,
    /// `member_of`: the roles granted to it.
    pub member_of: BTreeSet<String>,
    /// `salted_hash`: its password's bcrypt hash, if it has one.
    pub salted_hash: Option<String>,
}

const ROLE_COLUMNS: &str = "role, can_login, is_superuser, member_of, salted_hash";
/// Bound on the roles a membership walk visits (a guard against a damaged graph).
const ROLES_WALK_MAX: usize = 10_000;

/// A text value.
pub(super) fn text(s: &str) -> Value {
    Value::Bytes(Bytes::copy_from_slice(s.as_bytes()))
}

/// A boolean value.
pub(super) fn boolean(b: bool) -> Value {
    Value::Bytes(Bytes::copy_from_slice(&[u8::from(b)]))
}

/// A `set<text>` value.
pub(super) fn text_set<'a>(items: impl IntoIterator<Item = &'a str>) -> Value {
    let items: Vec<&str> = items.into_iter().collect();
    let mut out = BytesMut::new();
    out.put_i32(items.len() as i32);
    for item in items {
        out.put_i32(item.len() as i32);
        out.put_slice(item.as_bytes());
    }
    Value::Bytes(out.freeze())
}

fn cell_text(cell: Option<&Option<Bytes>>) -> Option<String> {
    let bytes = cell?.as_ref()?;
    Some(String::from_utf8_lossy(bytes).into_owned())
}

fn cell_bool(cell: Option<&Option<Bytes>>) -> bool {
    cell.and_then(|c| c.as_ref())
        .and_then(|b| b.first())
        .is_some_and(|b| *b != 0)
}

/// A `set<text>` cell's elements (empty for null or malformed bytes).
fn cell_text_set(cell: Option<&Option<Bytes>>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(Some(bytes)) = cell else {
        return out;
    };
    let mut rest: &[u8] = bytes;
    let take_i32 = |rest: &mut &[u8]| -> Option<usize> {
        let (head, tail) = rest.split_first_chunk::<4>()?;
        *rest = tail;
        usize::try_from(i32::from_be_bytes(*head)).ok()
    };
    let Some(n) = take_i32(&mut rest) else {
        return out;
    };
    for _ in 0..n {
        let Some(len) = take_i32(&mut rest) else {
            break;
        };
        let Some((item, tail)) = rest.split_at_checked(len) else {
            break;
        };
        rest = tail;
        out.insert(String::from_utf8_lossy(item).into_owned());
    }
    out
}

fn rows_of(result: ResultBody) -> Vec<Vec<Option<Bytes>>> {
    match result {
        ResultBody::Rows(Rows { rows, .. }) => rows,
        _ => Vec::new(),
    }
}

fn record_of(row: &[Option<Bytes>]) -> Option<RoleRecord> {
    Some(RoleRecord {
        name: cell_text(row.first())?,
        can_login: cell_bool(row.get(1)),
        is_superuser: cell_bool(row.get(2)),
        member_of: cell_text_set(row.get(3)),
        salted_hash: cell_text(row.get(4)),
    })
}

impl<C: Coordinator> Processor<C> {
    /// Runs an internal statement (no authorization) with `values` at `consistency`.
    /// Boxed: role statements run these, and run through the same dispatch.
    pub(crate) fn internal<'a>(
        &'a self,
        text: &'a str,
        values: Vec<Value>,
        consistency: Consistency,
    ) -> Pin<Box<dyn Future<Output = Result<ResultBody, ErrorResponse>> + Send + 'a>> {
        Box::pin(async move {
            let statement =
                crate::parse::parse_statement(text).map_err(crate::processor::parse_error)?;
            let mut params = crate::frame::QueryParameters::new(consistency);
            params.values = crate::frame::BoundValues::Positional(values);
            let mut session = Session::new(crate::frame::ProtocolVersion::V4);
            self.run_unchecked(&mut session, &statement, None, &params)
                .await
        })
    }

    /// The level roles are read at: QUORUM for the default superuser when a quorum of
    /// the keyspace's replicas can answer (as Cassandra), else ONE.
    fn role_read_level(&self, role: &str) -> Consistency {
        if role == self.auth().settings().superuser && self.quorum_possible() {
            Consistency::Quorum
        } else {
            Consistency::One
        }
    }

    fn quorum_possible(&self) -> bool {
        let nodes = 1 + self.coordinator().peers().iter().filter(|p| p.up).count() as u32;
        let rf = crate::schema::AUTH_REPLICATION_FACTOR;
        nodes > rf / 2
    }

    /// The role named `name`, if it exists.
    pub async fn role(&self, name: &str) -> Result<Option<RoleRecord>, ErrorResponse> {
        let result = self
            .internal(
                &format!("SELECT {ROLE_COLUMNS} FROM system_auth.roles WHERE role = ?"),
                vec![text(name)],
                self.role_read_level(name),
            )
            .await?;
        Ok(rows_of(result).first().and_then(|r| record_of(r)))
    }

    /// Every role, by name.
    pub(crate) async fn all_roles(&self) -> Result<Vec<RoleRecord>, ErrorResponse> {
        let result = self
            .internal(
                &format!("SELECT {ROLE_COLUMNS} FROM system_auth.roles"),
                Vec::new(),
                Consistency::One,
            )
            .await?;
        let mut roles: Vec<RoleRecord> = rows_of(result)
            .iter()
            .filter_map(|r| record_of(r))
            .collect();
        roles.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(roles)
    }

    /// Writes `record` (every column).
    pub(crate) async fn put_role(&self, record: &RoleRecord) -> Result<(), ErrorResponse> {
        let hash = match &record.salted_hash {
            Some(h) => text(h),
            None => Value::Null,
        };
        self.internal(
            "INSERT INTO system_auth.roles (role, can_login, is_superuser, member_of, salted_hash) VALUES (?, ?, ?, ?, ?)",
            vec![
                text(&record.name),
                boolean(record.can_login),
                boolean(record.is_superuser),
                text_set(record.member_of.iter().map(String::as_str)),
                hash,
            ],
            Consistency::One,
        )
        .await
        .map(|_| ())
    }

    /// Creates the default superuser `name` with `salted_hash` (LOGIN, SUPERUSER) at
    /// timestamp 1, so it never overwrites a role of that name written since (a changed
    /// password, a drop): every node may run this at every start, in any order.
    pub async fn insert_default_superuser(
        &self,
        name: &str,
        salted_hash: &str,
    ) -> Result<(), ErrorResponse> {
        self.internal(
            "INSERT INTO system_auth.roles (role, can_login, is_superuser, salted_hash) VALUES (?, true, true, ?) USING TIMESTAMP 1",
            vec![text(name), text(salted_hash)],
            Consistency::One,
        )
        .await?;
        self.auth().invalidate();
        Ok(())
    }

    /// `role` and every role granted to it, transitively (`recursive`), or directly.
    pub(crate) async fn roles_of(
        &self,
        role: &RoleRecord,
        recursive: bool,
    ) -> Result<Vec<RoleRecord>, ErrorResponse> {
        let mut seen: HashMap<String, RoleRecord> = HashMap::new();
        seen.insert(role.name.clone(), role.clone());
        let mut pending: Vec<String> = role.member_of.iter().cloned().collect();
        while let Some(name) = pending.pop() {
            if seen.contains_key(&name) || seen.len() >= ROLES_WALK_MAX {
                continue;
            }
            let Some(r) = self.role(&name).await? else {
                continue;
            };
            if recursive {
                pending.extend(r.member_of.iter().cloned());
            }
            seen.insert(name, r);
        }
        let mut out: Vec<RoleRecord> = seen.into_values().collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The permissions granted directly to `role`, by resource.
    pub(crate) async fn permissions_of(
        &self,
        role: &str,
    ) -> Result<Vec<(Resource, BTreeSet<Permission>)>, ErrorResponse> {
        let result = self
            .internal(
                "SELECT resource, permissions FROM system_auth.role_permissions WHERE role = ?",
                vec![text(role)],
                Consistency::One,
            )
            .await?;
        Ok(rows_of(result)
            .iter()
            .filter_map(|row| {
                let resource = Resource::from_name(&cell_text(row.first())?)?;
                let permissions: BTreeSet<Permission> = cell_text_set(row.get(1))
                    .iter()
                    .filter_map(|p| Permission::from_name(p))
                    .collect();
                (!permissions.is_empty()).then_some((resource, permissions))
            })
            .collect())
    }

    /// Adds (`grant`) or removes `permissions` of `role` on `resource`.
    pub(crate) async fn change_permissions(
        &self,
        role: &str,
        resource: &Resource,
        permissions: &[Permission],
        grant: bool,
    ) -> Result<(), ErrorResponse> {
        let op = if grant { "+" } else { "-" };
        self.internal(
            &format!("UPDATE system_auth.role_permissions SET permissions = permissions {op} ? WHERE role = ? AND resource = ?"),
            vec![
                text_set(permissions.iter().map(|p| p.name())),
                text(role),
                text(&resource.name()),
            ],
            Consistency::One,
        )
        .await?;
        self.auth().invalidate();
        Ok(())
    }

    /// The members of `role` (`role_members`).
    pub(crate) async fn members_of(&self, role: &str) -> Result<Vec<String>, ErrorResponse> {
        let result = self
            .internal(
                "SELECT member FROM system_auth.role_members WHERE role = ?",
                vec![text(role)],
                Consistency::One,
            )
            .await?;
        Ok(rows_of(result)
            .iter()
            .filter_map(|r| cell_text(r.first()))
            .collect())
    }

    /// Records (`add`) or removes `member`'s membership of `role` in both tables.
    pub(crate) async fn change_membership(
        &self,
        role: &str,
        member: &str,
        add: bool,
    ) -> Result<(), ErrorResponse> {
        let op = if add { "+" } else { "-" };
        self.internal(
            &format!("UPDATE system_auth.roles SET member_of = member_of {op} ? WHERE role = ?"),
            vec![text_set([role]), text(member)],
            Consistency::One,
        )
        .await?;
        if add {
            self.internal(
                "INSERT INTO system_auth.role_members (role, member) VALUES (?, ?)",
                vec![text(role), text(member)],
                Consistency::One,
            )
            .await?;
        } else {
            self.internal(
                "DELETE FROM system_auth.role_members WHERE role = ? AND member = ?",
                vec![text(role), text(member)],
                Consistency::One,
            )
            .await?;
        }
        self.auth().invalidate();
        Ok(())
    }

    /// Removes `role`: its memberships both ways, its permissions, its row.
    pub(crate) async fn delete_role(&self, role: &RoleRecord) -> Result<(), ErrorResponse> {
        for member in self.members_of(&role.name).await? {
            self.change_membership(&role.name, &member, false).await?;
        }
        for granted in &role.member_of {
            self.change_membership(granted, &role.name, false).await?;
        }
        for table in ["role_permissions", "role_members", "roles"] {
            self.internal(
                &format!("DELETE FROM system_auth.{table} WHERE role = ?"),
                vec![text(&role.name)],
                Consistency::One,
            )
            .await?;
        }
        self.revoke_all_on(&Resource::Role(role.name.clone())).await
    }

    /// Removes every permission granted on `dropped` and on what it contains (a
    /// keyspace's tables), from every role, as Cassandra does when a keyspace, table or
    /// role is dropped: a later one of the same name starts with no grants.
    pub(crate) async fn revoke_all_on(&self, dropped: &Resource) -> Result<(), ErrorResponse> {
        let result = self
            .internal(
                "SELECT role, resource FROM system_auth.role_permissions",
                Vec::new(),
                Consistency::One,
            )
            .await?;
        let covered = |resource: &Resource| match (dropped, resource) {
            (Resource::Keyspace(k), Resource::Table(tk, _)) => k == tk,
            _ => dropped == resource,
        };
        let mut revoked = false;
        for row in rows_of(result) {
            let (Some(role), Some(name)) = (cell_text(row.first()), cell_text(row.get(1))) else {
                continue;
            };
            if !Resource::from_name(&name).is_some_and(|r| covered(&r)) {
                continue;
            }
            self.internal(
                "DELETE FROM system_auth.role_permissions WHERE role = ? AND resource = ?",
                vec![text(&role), text(&name)],
                Consistency::One,
            )
            .await?;
            revoked = true;
        }
        if revoked {
            self.auth().invalidate();
        }
        Ok(())
    }

    /// What `role` may do, from the cache while it is valid.
    pub async fn authorization(&self, role: &str) -> Result<Arc<Authorization>, ErrorResponse> {
        if let Some(authz) = self.auth().cached(role) {
            return Ok(authz);
        }
        let mut authz = Authorization::default();
        if let Some(record) = self.role(role).await? {
            for r in self.roles_of(&record, true).await? {
                authz.superuser |= r.is_superuser;
                for (resource, permissions) in self.permissions_of(&r.name).await? {
                    authz
                        .permissions
                        .entry(resource)
                        .or_default()
                        .extend(permissions);
                }
                authz.roles.insert(r.name);
            }
        }
        let authz = Arc::new(authz);
        self.auth().remember(role, authz.clone());
        Ok(authz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_sets_round_trip_and_garbage_reads_as_empty() {
        let Value::Bytes(b) = text_set(["a", "bc"]) else {
            panic!()
        };
        let set = cell_text_set(Some(&Some(b.clone())));
        assert_eq!(set, BTreeSet::from(["a".to_owned(), "bc".to_owned()]));
        for cut in 0..b.len() {
            let _ = cell_text_set(Some(&Some(b.slice(..cut))));
        }
        assert!(
            cell_text_set(Some(&Some(Bytes::from_static(&[0xff, 0xff, 0xff, 0xff])))).is_empty()
        );
    }
}
