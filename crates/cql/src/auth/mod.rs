//! Roles and permissions: who a connection is, what it may do, and the statements that
//! change it (Cassandra's `CassandraRoleManager` and `CassandraAuthorizer`).
//!
//! Owns the resources and permissions model ([`Resource`]), the role store over the stored
//! `system_auth` tables (`store`: every read and write is an internal CQL statement run
//! through the node's own [`Processor`](crate::processor::Processor), so roles are
//! replicated like any table; reads at ONE as Cassandra's LOCAL_ONE, the default superuser
//! at QUORUM when enough nodes are up), the role and permission statements
//! (`statements`), and the check of every statement against the connection's role
//! (`check`), with a cache of each role's
//! resolved permissions valid for `permissions_validity_ms` (Cassandra's
//! `permissions_validity`): a REVOKE takes effect on other connections within it, and at
//! once on the node that ran it (its cache is cleared).
//!
//! It does not verify passwords or hash them: the server does (bcrypt, off its network
//! threads) through [`PasswordHasher`]; this crate has no threads and no crypto.
//!
//! With authentication off (`enabled == false`, Cassandra's `AllowAllAuthenticator` and
//! `AllowAllAuthorizer`), every statement is allowed and the role statements answer what
//! Cassandra answers an anonymous user: Unauthorized, "You have to be logged in and not
//! anonymous to perform this request".

mod check;
pub mod sasl;
mod statements;
mod store;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use parking_lot::Mutex;

pub use crate::ast::Permission;
use crate::frame::{ErrorKind, ErrorResponse};
pub(crate) use statements::execute;
pub use store::RoleRecord;

/// What hashing a password returns: a bcrypt hash (`$2a$…`) or the error to answer.
pub type HashFuture = Pin<Box<dyn Future<Output = Result<String, ErrorResponse>> + Send>>;

/// Turns passwords into the `salted_hash` stored for them.
pub trait PasswordHasher: Send + Sync + 'static {
    /// The hash of `password`, with a fresh salt.
    fn hash(&self, password: String) -> HashFuture;
}

/// How the node authenticates and authorizes.
#[derive(Clone)]
pub struct AuthSettings {
    /// Whether logins and permissions are checked (password authentication).
    pub enabled: bool,
    /// The superuser role created at start (`cassandra`).
    pub superuser: String,
    /// How long a role's resolved permissions are used before they are read again.
    pub permissions_validity_ms: u64,
    /// Hashes passwords of CREATE/ALTER ROLE.
    pub hasher: Arc<dyn PasswordHasher>,
}

impl fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthSettings")
            .field("enabled", &self.enabled)
            .field("superuser", &self.superuser)
            .field("permissions_validity_ms", &self.permissions_validity_ms)
            .finish()
    }
}

/// A hasher for when authentication is off: role statements are refused before a
/// password is hashed, so it is never called.
struct NoHasher;

impl PasswordHasher for NoHasher {
    fn hash(&self, _password: String) -> HashFuture {
        Box::pin(async { Err(unauthorized(ANONYMOUS)) })
    }
}

impl Default for AuthSettings {
    fn default() -> AuthSettings {
        AuthSettings {
            enabled: false,
            superuser: "cassandra".to_owned(),
            permissions_validity_ms: 2000,
            hasher: Arc::new(NoHasher),
        }
    }
}

/// Cassandra's answer to an anonymous user's role statement.
pub(crate) const ANONYMOUS: &str =
    "You have to be logged in and not anonymous to perform this request";

/// An Unauthorized error.
pub(crate) fn unauthorized(message: impl Into<String>) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Unauthorized, message)
}

/// A resource permissions are granted on (Cassandra's `DataResource` and `RoleResource`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// `ALL KEYSPACES` (`data`).
    AllKeyspaces,
    /// A keyspace (`data/ks`).
    Keyspace(String),
    /// A table (`data/ks/t`).
    Table(String, String),
    /// `ALL ROLES` (`roles`).
    AllRoles,
    /// A role (`roles/r`).
    Role(String),
}

impl Resource {
    /// The name stored in `role_permissions.resource`.
    pub fn name(&self) -> String {
        match self {
            Resource::AllKeyspaces => "data".to_owned(),
            Resource::Keyspace(k) => format!("data/{k}"),
            Resource::Table(k, t) => format!("data/{k}/{t}"),
            Resource::AllRoles => "roles".to_owned(),
            Resource::Role(r) => format!("roles/{r}"),
        }
    }

    /// The resource a stored name names.
    pub fn from_name(name: &str) -> Option<Resource> {
        let mut parts = name.splitn(3, '/');
        match (parts.next()?, parts.next(), parts.next()) {
            ("data", None, None) => Some(Resource::AllKeyspaces),
            ("data", Some(k), None) => Some(Resource::Keyspace(k.to_owned())),
            ("data", Some(k), Some(t)) => Some(Resource::Table(k.to_owned(), t.to_owned())),
            ("roles", None, None) => Some(Resource::AllRoles),
            ("roles", Some(r), None) => Some(Resource::Role(r.to_owned())),
            _ => None,
        }
    }

    /// The resource and its parents, nearest first (Cassandra's `Resources.chain`).
    pub fn chain(&self) -> Vec<Resource> {
        match self {
            Resource::AllKeyspaces => vec![Resource::AllKeyspaces],
            Resource::Keyspace(k) => vec![Resource::Keyspace(k.clone()), Resource::AllKeyspaces],
            Resource::Table(k, t) => vec![
                Resource::Table(k.clone(), t.clone()),
                Resource::Keyspace(k.clone()),
                Resource::AllKeyspaces,
            ],
            Resource::AllRoles => vec![Resource::AllRoles],
            Resource::Role(r) => vec![Resource::Role(r.clone()), Resource::AllRoles],
        }
    }

    /// The permissions that mean something on it (`ALL` grants these).
    pub fn applicable(&self) -> &'static [Permission] {
        use Permission::*;
        match self {
            Resource::AllKeyspaces | Resource::Keyspace(_) => {
                &[Create, Alter, Drop, Select, Modify, Authorize]
            }
            Resource::Table(..) => &[Alter, Drop, Select, Modify, Authorize],
            Resource::AllRoles => &[Create, Alter, Drop, Authorize, Describe],
            Resource::Role(_) => &[Alter, Drop, Authorize],
        }
    }

    /// Cassandra's name for its type, in errors.
    fn type_name(&self) -> &'static str {
        match self {
            Resource::AllKeyspaces | Resource::Keyspace(_) | Resource::Table(..) => "DataResource",
            Resource::AllRoles | Resource::Role(_) => "RoleResource",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::AllKeyspaces => f.write_str("<all keyspaces>"),
            Resource::Keyspace(k) => write!(f, "<keyspace {k}>"),
            Resource::Table(k, t) => write!(f, "<table {k}.{t}>"),
            Resource::AllRoles => f.write_str("<all roles>"),
            Resource::Role(r) => write!(f, "<role {r}>"),
        }
    }
}

/// What a role may do, resolved: its roles (itself and every role granted to it,
/// transitively), whether any is a superuser, and the permissions granted to any of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Authorization {
    /// The role and the roles it inherits.
    pub roles: BTreeSet<String>,
    /// Whether one of them is a superuser.
    pub superuser: bool,
    /// Permissions by resource.
    pub permissions: HashMap<Resource, BTreeSet<Permission>>,
}

impl Authorization {
    /// Whether `permission` is held on `resource` or one of its parents.
    pub fn allows(&self, permission: Permission, resource: &Resource) -> bool {
        self.superuser
            || resource.chain().iter().any(|r| {
                self.permissions
                    .get(r)
                    .is_some_and(|set| set.contains(&permission))
            })
    }
}

/// The node's authentication state: settings and the permissions cache.
pub struct Auth {
    settings: AuthSettings,
    /// Resolved authorizations by role, with when each was read (monotonic micros).
    cache: Mutex<HashMap<String, (u64, Arc<Authorization>)>>,
}

/// Roles whose authorization the cache holds at most (it is cleared past that).
const CACHE_ROLES_MAX: usize = 10_000;

impl Auth {
    /// The state for `settings`.
    pub fn new(settings: AuthSettings) -> Auth {
        Auth {
            settings,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Whether logins and permissions are checked.
    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    fn cached(&self, role: &str) -> Option<Arc<Authorization>> {
        let validity = self.settings.permissions_validity_ms.saturating_mul(1000);
        let now = mosaic_env::monotonic_micros();
        let cache = self.cache.lock();
        let (at, authz) = cache.get(role)?;
        (now.saturating_sub(*at) < validity).then(|| authz.clone())
    }

    fn remember(&self, role: &str, authz: Arc<Authorization>) {
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_ROLES_MAX {
            cache.clear();
        }
        cache.insert(role.to_owned(), (mosaic_env::monotonic_micros(), authz));
    }

    /// Forgets every cached authorization (after this node changed roles or grants).
    pub fn invalidate(&self) {
        self.cache.lock().clear();
    }
}

impl Default for Auth {
    fn default() -> Auth {
        Auth::new(AuthSettings::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_round_trip_their_names_and_chain_to_the_root() {
        for r in [
            Resource::AllKeyspaces,
            Resource::Keyspace("ks".into()),
            Resource::Table("ks".into(), "t".into()),
            Resource::AllRoles,
            Resource::Role("bob".into()),
        ] {
            assert_eq!(Resource::from_name(&r.name()), Some(r.clone()));
            assert!(r.chain().len() <= 3);
        }
        assert_eq!(Resource::from_name("functions/x"), None);
        assert_eq!(
            Resource::Table("ks".into(), "t".into()).to_string(),
            "<table ks.t>"
        );
    }

    #[test]
    fn a_grant_on_a_parent_allows_its_children() {
        let mut a = Authorization::default();
        a.permissions.insert(
            Resource::Keyspace("ks".into()),
            BTreeSet::from([Permission::Select]),
        );
        assert!(a.allows(
            Permission::Select,
            &Resource::Table("ks".into(), "t".into())
        ));
        assert!(!a.allows(
            Permission::Modify,
            &Resource::Table("ks".into(), "t".into())
        ));
        assert!(!a.allows(
            Permission::Select,
            &Resource::Table("other".into(), "t".into())
        ));
        a.superuser = true;
        assert!(a.allows(Permission::Drop, &Resource::AllKeyspaces));
    }
}
