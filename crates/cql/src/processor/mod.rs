//! The statement layer: QUERY, PREPARE, EXECUTE and BATCH requests in, responses out.
//!
//! Owns a connection-independent [`Processor`] (the prepared-statement cache and the
//! coordinator) and per-connection [`Session`] state (the current keyspace, the protocol
//! version). Statements become row-layer operations handed to a
//! [`crate::coordinator::Coordinator`]; SELECTs on system tables are answered by
//! [`crate::system`] from the catalog and the coordinator's view of the nodes.
//!
//! # Layout
//! - this module: dispatch, the prepared-statement cache, table resolution, errors;
//! - `values`: terms (literals, bind markers, `now()`…) to typed values;
//! - `json`: `SELECT JSON`, `INSERT … JSON`, `toJson()` and `fromJson()`;
//! - `markers`: the type of every bind marker (PREPARE metadata) and `pk_indexes`;
//! - `ddl`: keyspaces and tables;
//! - `describe`: `DESCRIBE` (Cassandra 4.0's server-side schema description);
//! - `write`: INSERT, UPDATE, DELETE and BATCH to mutations;
//! - `select`: restrictions, reads, paging, filtering, ordering, aggregates.
//!
//! Statements are analysed against the catalog at each execution (not only at PREPARE),
//! so a prepared statement sees ALTERs made since, as in Cassandra.

mod collections;
mod ddl;
mod describe;
mod json;
mod limits;
mod markers;
mod prepared;
mod restrict;
mod select;
mod values;
mod write;

pub use json::{decode_json_text, render_json};
pub use limits::StatementLimits;
pub use prepared::PreparedCacheStats;

use prepared::PreparedCache;
pub(crate) use select::OutColumn;

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::ast::{QualifiedName, Statement};
use crate::coordinator::Coordinator;
use crate::frame::{
    Batch, ErrorKind, ErrorResponse, Execute, Prepare, Prepared, PreparedMetadata, ProtocolVersion,
    Query, QueryParameters, Request, Response, ResultBody, RowsMetadata,
};
use crate::parse::{parse_statement, ParseError};
use crate::schema::{Catalog, TableMeta};

/// Per-connection state.
#[derive(Clone, Debug)]
pub struct Session {
    /// The keyspace `USE` selected.
    pub keyspace: Option<String>,
    /// The connection's protocol version.
    pub version: ProtocolVersion,
    /// The role the connection logged in as (`None`: anonymous, as every connection is
    /// when authentication is off).
    pub user: Option<String>,
    /// The warnings for the client of the last request processed (a batch past
    /// `batch_size_warn_threshold_bytes`); v4+ responses carry them.
    pub warnings: Vec<String>,
}

impl Session {
    /// A session of a connection speaking `version`, with no keyspace.
    pub fn new(version: ProtocolVersion) -> Session {
        Session {
            keyspace: None,
            version,
            user: None,
            warnings: Vec::new(),
        }
    }
}

/// Executes requests against a coordinator; shared by every connection of a node.
pub struct Processor<C> {
    coordinator: Arc<C>,
    prepared: PreparedCache,
    auth: Arc<crate::auth::Auth>,
    limits: StatementLimits,
}

/// An error response of kind Invalid.
pub(crate) fn invalid(message: impl Into<String>) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Invalid, message)
}

/// The error for a paging state this node did not make (or that was damaged).
pub(crate) fn bad_paging_state() -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Protocol, "Invalid value for the paging state")
}

/// A paging state from its `body`: the body then its checksum, so that states not made
/// here are refused rather than misread.
pub(crate) fn seal_paging_state(mut body: BytesMut) -> Bytes {
    let sum = xxhash_rust::xxh3::xxh3_64(&body);
    body.put_u64(sum);
    body.freeze()
}

/// The body of a paging state made by [`seal_paging_state`]; a Protocol error if the
/// checksum does not match.
pub(crate) fn unseal_paging_state(bytes: &[u8]) -> Result<&[u8], ErrorResponse> {
    let (body, sum) = bytes
        .split_at_checked(bytes.len().checked_sub(8).ok_or_else(bad_paging_state)?)
        .ok_or_else(bad_paging_state)?;
    let sum = u64::from_be_bytes(sum.try_into().map_err(|_| bad_paging_state())?);
    if xxhash_rust::xxh3::xxh3_64(body) != sum {
        return Err(bad_paging_state());
    }
    Ok(body)
}

pub(crate) fn parse_error(e: ParseError) -> ErrorResponse {
    let kind = if e.error_code() == crate::parse::SYNTAX_ERROR_CODE {
        ErrorKind::Syntax
    } else {
        ErrorKind::Invalid
    };
    ErrorResponse::new(kind, e.to_string())
}

/// Where one execution's statement runs: its keyspace and parameters.
pub(crate) struct Exec<'a> {
    /// The keyspace for unqualified names.
    pub keyspace: Option<&'a str>,
    /// The request's parameters.
    pub params: &'a QueryParameters,
    /// What the statement may cost.
    pub limits: StatementLimits,
}

impl Exec<'_> {
    /// "Now" in seconds for TTLs and deletion times: the request's v5 `now_in_seconds`
    /// when it sets one (as Cassandra honours it), else the coordinator's clock.
    pub(crate) fn now_secs(&self, clock: i64) -> i64 {
        self.params.now_in_seconds.map_or(clock, i64::from)
    }

    /// The keyspace of `name`, or the session's.
    pub(crate) fn keyspace_of<'n>(
        &'n self,
        name: &'n QualifiedName,
    ) -> Result<&'n str, ErrorResponse> {
        match &name.keyspace {
            Some(ks) => Ok(ks.as_str()),
            None => self.keyspace.ok_or_else(|| {
                invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
            }),
        }
    }

    /// The table `name` refers to.
    pub(crate) fn table(
        &self,
        catalog: &Catalog,
        name: &QualifiedName,
    ) -> Result<Arc<TableMeta>, ErrorResponse> {
        let keyspace = self.keyspace_of(name)?;
        if catalog.keyspace(keyspace).is_none() && !crate::system::is_system_keyspace(keyspace) {
            return Err(invalid(format!("Keyspace {keyspace} does not exist")));
        }
        catalog
            .table(keyspace, name.name.as_str())
            .cloned()
            .ok_or_else(|| invalid(format!("unconfigured table {}", name.name.as_str())))
    }
}

/// What a SELECT of a workload file asks of its table, checked as executing it would
/// check it (so a workload holds only queries a client could run): the table, the filter
/// of its single-column clustering restrictions as a read of it builds them, and its
/// LIMIT. Values must be literals (the statement has no bind markers); time functions such
/// as `now()` are evaluated at `now_micros`.
pub(crate) fn analyse_workload_select(
    catalog: &Catalog,
    default_keyspace: Option<&str>,
    s: &crate::ast::SelectStatement,
    now_micros: i64,
) -> Result<(Arc<TableMeta>, mosaic_rows::ClusteringFilter, Option<u64>), ErrorResponse> {
    let params = QueryParameters::new(crate::frame::Consistency::One);
    let exec = Exec {
        keyspace: default_keyspace,
        params: &params,
        limits: StatementLimits::DEFAULT,
    };
    let keyspace = exec.keyspace_of(&s.table)?;
    if crate::system::is_system_keyspace(keyspace) {
        return Err(invalid(format!(
            "{keyspace}.{} is a system table: a workload describes a user table",
            s.table.name.as_str()
        )));
    }
    let table = exec.table(catalog, &s.table)?;
    let bindings = values::Bindings::new(&params.values, &s.bind_markers)?;
    let ctx = values::EvalContext {
        bindings: &bindings,
        now_micros,
    };
    let (filter, limit) = select::workload_query(table.clone(), s, &ctx)?;
    Ok((table, filter, limit))
}

/// The statement id of `query` prepared in `keyspace` (stable across restarts and nodes,
/// like Cassandra's MD5-based ids).
fn statement_id(keyspace: Option<&str>, query: &str) -> [u8; 16] {
    let mut bytes = Vec::with_capacity(query.len() + 64);
    bytes.extend_from_slice(keyspace.unwrap_or("").as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(query.as_bytes());
    xxhash_rust::xxh3::xxh3_128(&bytes).to_be_bytes()
}

impl<C: Coordinator> Processor<C> {
    /// A processor over `coordinator`.
    pub fn new(coordinator: Arc<C>) -> Processor<C> {
        Processor::with_auth(coordinator, Arc::default())
    }

    /// A processor over `coordinator` checking logins and permissions as `auth` says
    /// (its caches may be shared with other processors of the node).
    pub fn with_auth(coordinator: Arc<C>, auth: Arc<crate::auth::Auth>) -> Processor<C> {
        Processor {
            coordinator,
            prepared: PreparedCache::new(
                StatementLimits::DEFAULT.prepared_statements_cache_size_bytes,
            ),
            auth,
            limits: StatementLimits::DEFAULT,
        }
    }

    /// Bounds what statements may cost as `limits` says.
    pub fn with_limits(mut self, limits: StatementLimits) -> Processor<C> {
        self.prepared = PreparedCache::new(limits.prepared_statements_cache_size_bytes);
        self.limits = limits;
        self
    }

    /// What statements may cost.
    pub fn limits(&self) -> &StatementLimits {
        &self.limits
    }

    /// What the prepared-statement cache holds and has evicted.
    pub fn prepared_cache_stats(&self) -> PreparedCacheStats {
        self.prepared.stats()
    }

    /// The node's authentication state.
    pub fn auth(&self) -> &Arc<crate::auth::Auth> {
        &self.auth
    }

    /// The coordinator.
    pub fn coordinator(&self) -> &Arc<C> {
        &self.coordinator
    }

    /// Handles a QUERY, PREPARE, EXECUTE or BATCH request. Connection-level requests
    /// (STARTUP, OPTIONS, REGISTER, AUTH_RESPONSE) are the server's and get a protocol error
    /// here. A DDL statement answers with a SchemaChange result, which the server also
    /// pushes as an event to connections registered for schema changes.
    pub async fn process(&self, session: &mut Session, request: Request) -> Response {
        session.warnings.clear();
        let result = match request {
            Request::Query(q) => self.query(session, q).await,
            Request::Prepare(p) => self.prepare(session, p),
            Request::Execute(e) => self.execute(session, e).await,
            Request::Batch(b) => self.batch(session, b).await,
            other => Err(ErrorResponse::new(
                ErrorKind::Protocol,
                format!("Unexpected message {other:?} for the statement processor"),
            )),
        };
        match result {
            Ok(body) => Response::Result(body),
            Err(e) => Response::Error(e),
        }
    }

    async fn query(&self, session: &mut Session, q: Query) -> Result<ResultBody, ErrorResponse> {
        let statement = parse_statement(&q.query).map_err(parse_error)?;
        // v5's per-query keyspace supersedes the connection's (WITH_KEYSPACE).
        let keyspace = q
            .params
            .keyspace
            .clone()
            .or_else(|| session.keyspace.clone());
        self.run(session, &statement, keyspace.as_deref(), &q.params)
            .await
    }

    fn prepare(&self, session: &Session, p: Prepare) -> Result<ResultBody, ErrorResponse> {
        let statement = parse_statement(&p.query).map_err(parse_error)?;
        let keyspace = p.keyspace.as_deref().or(session.keyspace.as_deref());
        let catalog = self.coordinator.catalog();
        let exec_params = QueryParameters::new(crate::frame::Consistency::One);
        let exec = Exec {
            keyspace,
            params: &exec_params,
            limits: self.limits,
        };
        let (columns, pk_indexes, result) =
            markers::prepared_metadata(&catalog, &exec, &statement)?;
        if !self.prepared.fits(&p.query) {
            return Err(invalid(format!(
                "The statement is too large to prepare: about {} bytes, more than [limits] \
                 prepared_statements_cache_size_bytes ({})",
                PreparedCache::weight_of(&p.query),
                self.limits.prepared_statements_cache_size_bytes
            )));
        }
        let id = statement_id(keyspace, &p.query);
        self.prepared.insert(
            id,
            &p.query,
            Arc::new(statement),
            keyspace.map(str::to_owned),
        );
        let result_metadata = result.unwrap_or_else(RowsMetadata::empty);
        Ok(ResultBody::Prepared(Prepared {
            id: Bytes::copy_from_slice(&id),
            result_metadata_id: RowsMetadata::metadata_id(&result_metadata.columns),
            metadata: PreparedMetadata {
                pk_indexes,
                columns,
            },
            result_metadata,
        }))
    }

    async fn execute(
        &self,
        session: &mut Session,
        mut e: Execute,
    ) -> Result<ResultBody, ErrorResponse> {
        let found = self.prepared.get(&e.id);
        let Some((statement, keyspace)) = found else {
            return Err(unprepared(&e.id));
        };
        let keyspace = keyspace.or_else(|| session.keyspace.clone());
        // A lightweight transaction's columns depend on whether it applied: Cassandra
        // always sends them and never flags them changed (CASSANDRA-13992).
        let client_id = e.result_metadata_id.take();
        let Some(client_id) = client_id.filter(|_| !statement.has_conditions()) else {
            return self
                .run(session, &statement, keyspace.as_deref(), &e.params)
                .await;
        };
        // v5: run with full metadata, then compare the columns' id with the client's, as
        // Cassandra's ExecuteMessage does: a match honours Skip_metadata, a mismatch sends
        // the metadata with Metadata_changed and the new id.
        let skip_metadata = std::mem::replace(&mut e.params.skip_metadata, false);
        let mut result = self
            .run(session, &statement, keyspace.as_deref(), &e.params)
            .await;
        if let Ok(ResultBody::Rows(rows)) = &mut result {
            let id = RowsMetadata::metadata_id(&rows.metadata.columns);
            if id == client_id {
                rows.metadata.no_metadata = skip_metadata;
            } else {
                rows.metadata.new_metadata_id = Some(id);
            }
        }
        result
    }

    async fn batch(&self, session: &mut Session, b: Batch) -> Result<ResultBody, ErrorResponse> {
        let mut statements = Vec::with_capacity(b.statements.len());
        for s in &b.statements {
            // v5's per-batch keyspace supersedes the connection's (WITH_KEYSPACE).
            let default_keyspace = || b.keyspace.clone().or_else(|| session.keyspace.clone());
            let (statement, keyspace) = match &s.query {
                crate::frame::BatchQuery::Query(text) => (
                    Arc::new(parse_statement(text).map_err(parse_error)?),
                    default_keyspace(),
                ),
                crate::frame::BatchQuery::Prepared(id) => {
                    let found = self.prepared.get(id);
                    let Some((statement, keyspace)) = found else {
                        return Err(unprepared(id));
                    };
                    (statement, keyspace.or_else(default_keyspace))
                }
            };
            self.authorize(session, &statement, keyspace.as_deref())
                .await?;
            statements.push((statement, keyspace, s.values.clone()));
        }
        write::execute_batch(self, &b, statements, &mut session.warnings).await
    }

    /// Executes one statement once the session's role is allowed to.
    async fn run(
        &self,
        session: &mut Session,
        statement: &Statement,
        keyspace: Option<&str>,
        params: &QueryParameters,
    ) -> Result<ResultBody, ErrorResponse> {
        self.authorize(session, statement, keyspace).await?;
        let result = self
            .run_unchecked(session, statement, keyspace, params)
            .await?;
        // The creator of a keyspace or table gets every permission on it, and dropping it
        // revokes every grant on it (Cassandra).
        if let ResultBody::SchemaChange(_) = &result {
            if let Some(created) = auth_created(statement, keyspace) {
                self.grant_to_creator(session, created).await?;
            }
            if let (true, Some(dropped)) =
                (self.auth().enabled(), auth_dropped(statement, keyspace))
            {
                self.revoke_all_on(&dropped).await?;
            }
        }
        Ok(result)
    }

    /// Executes one statement without checking permissions.
    pub(crate) async fn run_unchecked(
        &self,
        session: &mut Session,
        statement: &Statement,
        keyspace: Option<&str>,
        params: &QueryParameters,
    ) -> Result<ResultBody, ErrorResponse> {
        let exec = Exec {
            keyspace,
            params,
            limits: self.limits,
        };
        match statement {
            Statement::Auth(s) => crate::auth::execute(self, session, keyspace, s).await,
            Statement::Use(u) => {
                let name = u.keyspace.as_str().to_owned();
                let catalog = self.coordinator.catalog();
                if catalog.keyspace(&name).is_none() && !crate::system::is_system_keyspace(&name) {
                    return Err(invalid(format!("Keyspace '{name}' does not exist")));
                }
                session.keyspace = Some(name.clone());
                Ok(ResultBody::SetKeyspace(name))
            }
            Statement::Select(s) => select::execute(self, &exec, s, &mut session.warnings).await,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                write::execute_single(self, &exec, statement).await
            }
            Statement::Batch(b) => {
                write::execute_batch_statement(self, &exec, b, &mut session.warnings).await
            }
            Statement::Describe(d) => describe::execute(self, &exec, d),
            other => ddl::execute(self, &exec, other.clone()).await,
        }
    }
}

/// The resource a CREATE KEYSPACE or CREATE TABLE makes.
fn auth_created(statement: &Statement, keyspace: Option<&str>) -> Option<crate::auth::Resource> {
    use crate::auth::Resource;
    match statement {
        Statement::CreateKeyspace(s) => Some(Resource::Keyspace(s.name.as_str().to_owned())),
        Statement::CreateTable(s) => {
            let ks = s.name.keyspace.as_ref().map(|k| k.as_str()).or(keyspace)?;
            Some(Resource::Table(
                ks.to_owned(),
                s.name.name.as_str().to_owned(),
            ))
        }
        _ => None,
    }
}

/// The resource a DROP KEYSPACE or DROP TABLE removed, whose grants go with it.
fn auth_dropped(statement: &Statement, keyspace: Option<&str>) -> Option<crate::auth::Resource> {
    use crate::auth::Resource;
    match statement {
        Statement::DropKeyspace(s) => Some(Resource::Keyspace(s.name.as_str().to_owned())),
        Statement::DropTable(s) => {
            let ks = s.name.keyspace.as_ref().map(|k| k.as_str()).or(keyspace)?;
            Some(Resource::Table(
                ks.to_owned(),
                s.name.name.as_str().to_owned(),
            ))
        }
        _ => None,
    }
}

fn unprepared(id: &Bytes) -> ErrorResponse {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    ErrorResponse::new(
        ErrorKind::Unprepared { id: id.clone() },
        format!("Prepared query with ID {hex} not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)"),
    )
}
