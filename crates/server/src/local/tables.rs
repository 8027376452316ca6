//! Table storage: where each table's engine lives on disk, opening and deleting it, and
//! the hot path of replica writes and reads into it (see the parent module's doc for the
//! directory layout, crash safety and where engine calls run).

use super::answer;
use super::*;

/// A directory-name component for a keyspace or table name: the name itself when it is
/// plain (as CQL's DDL enforces), otherwise an injective `%XX` escape, so no catalog entry
/// can name a path outside its directory.
pub(super) fn path_component(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('%');
    }
    out
}

pub(super) fn id_hex(id: TableId) -> String {
    id.0.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn parse_id_hex(s: &str) -> Option<TableId> {
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(TableId(bytes))
}

/// The directory of `table` under `data_dir`.
pub(super) fn table_dir(data_dir: &Path, table: &TableMeta) -> PathBuf {
    data_dir.join(path_component(&table.keyspace)).join(format!(
        "{}-{}",
        path_component(&table.name),
        id_hex(table.id)
    ))
}

pub(super) fn server_error(message: impl Into<String>) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Server, message)
}

/// The client-facing error for an engine failure on `table`.
pub(crate) fn engine_error(table: &str, e: mosaic_lsm::Error) -> ErrorResponse {
    use mosaic_lsm::Error as E;
    // The engine's own failures (flush, compaction, fsync, corruption) reach the node
    // here, as the error of the next operation that meets them.
    if !matches!(
        e,
        E::InvalidArgument(_) | E::Closed | E::WriteStalled { .. }
    ) {
        tracing::error!(target: "mosaic::storage", table, error = %e, "storage engine error");
    }
    match &e {
        E::NoSpace { .. } => server_error(format!(
            "Disk full on this node: table {table} refuses writes until space is freed ({e})"
        )),
        E::Poisoned { .. } => server_error(format!(
            "Table {table} refuses writes after a storage failure; restart the node to recover \
             ({e})"
        )),
        E::InvalidArgument(m) => ErrorResponse::new(ErrorKind::Invalid, m.clone()),
        E::Closed => server_error("The node is shutting down"),
        // Nothing was written; to the coordinator this replica timed out (see
        // `crate::cluster`), as Cassandra's replicas drop mutations they cannot apply
        // in time.
        E::WriteStalled { .. } => ErrorResponse::new(
            ErrorKind::WriteTimeout {
                consistency: mosaic_cql::frame::Consistency::One,
                received: 0,
                block_for: 1,
                write_type: mosaic_cql::frame::WriteType::Simple,
            },
            format!("Table {table} did not apply the write in time: {e}"),
        ),
        _ if e.is_corruption() => server_error(format!("Corrupt data in table {table}: {e}")),
        _ => server_error(format!("Storage error in table {table}: {e}")),
    }
}

pub(super) fn join_error(e: tokio::task::JoinError) -> ErrorResponse {
    server_error(format!("internal error: a storage task failed: {e}"))
}

/// The replica role of each key a write or read touches (see the module doc).
/// A key range as the storage's scan bounds: `[start, end)`, unbounded without an end.
pub fn scan_bounds(range: &KeyRange) -> (Bound<&[u8]>, Bound<&[u8]>) {
    let end = match &range.end {
        Some(e) => Bound::Excluded(e.as_slice()),
        None => Bound::Unbounded,
    };
    (Bound::Included(range.start.as_slice()), end)
}

pub trait Roles: Send + Sync {
    /// This node's role for `token`.
    fn role(&self, token: Token) -> Role;
    /// `range` split where this node's role changes, in key order, each piece with its
    /// role.
    fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)>;
    /// The one role of every key of `range` when the implementation can tell it without
    /// splitting the range (a partition read: one token), as [`Roles::pieces`] would give
    /// it; `None` means "ask `pieces`". The default: `None`.
    fn partition_role(&self, _range: &KeyRange) -> Option<Role> {
        None
    }
    /// While a node joins or leaves: this node's role for `token` once the move
    /// completes, when it differs from [`Roles::role`] (a write is stored under both, so
    /// the range is whole in its new role's structures when the rings switch).
    fn future_role(&self, _token: Token) -> Option<Role> {
        None
    }
}

/// Primary for every token: a node that is its whole cluster (or that does not know the
/// ring yet).
pub struct AllPrimary;

impl Roles for AllPrimary {
    fn role(&self, _token: Token) -> Role {
        Role::Primary
    }

    fn pieces(&self, range: KeyRange) -> Vec<(KeyRange, Role)> {
        vec![(range, Role::Primary)]
    }

    fn partition_role(&self, _range: &KeyRange) -> Option<Role> {
        Some(Role::Primary)
    }
}

/// The batch of `role` among a table's batches (a new one when it has none yet).
fn batch_of(batches: &mut Vec<(Role, WriteBatch)>, role: Role) -> Option<&mut WriteBatch> {
    if !batches.iter().any(|(r, _)| *r == role) {
        batches.push((role, WriteBatch::new()));
    }
    batches
        .iter_mut()
        .find(|(r, _)| *r == role)
        .map(|(_, batch)| batch)
}

/// Runs an engine call on this thread, or in `block_in_place` (see the module doc).
pub(super) fn run_engine_call<T>(inline: bool, call: impl FnOnce() -> T) -> T {
    if inline {
        call()
    } else {
        tokio::task::block_in_place(call)
    }
}

/// Closes a table's store (if open) whose directory is about to be deleted (`why`: a
/// truncate or a drop). The data is going away, so a failed final sync changes nothing:
/// it is only logged.
pub(super) fn close_before_delete(store: &mut Option<ReplicaStore>, table: &str, why: &str) {
    if let Some(db) = store.take() {
        if let Err(e) = db.close() {
            tracing::warn!(target: "mosaic::storage", table, why, error = %e, "closing the table failed");
        }
    }
}

/// Drops the node engine's partitions in `dir` (so none of their logged writes is ever
/// replayed), then moves `dir` aside and deletes it (see the module doc). A missing `dir`
/// is fine.
pub(super) fn delete_dir(engine: &Engine, dir: &Path) -> io::Result<()> {
    engine
        .drop_partitions_under(dir)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let mut aside = dir.as_os_str().to_os_string();
    aside.push(DELETING_SUFFIX);
    let aside = PathBuf::from(aside);
    match fs::rename(dir, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    fs::remove_dir_all(&aside)
}

/// The layout of `table` (a schema naming a layout this build does not know is refused
/// when it is read, so every table here has one it stores).
pub(super) fn table_layout(table: &TableMeta) -> mosaic_lsm::Result<Layout> {
    Ok(table.params.layout)
}

/// The node's log settings with `table`'s layout options (`sorted_runs_max`,
/// `split_segments`) applied; `CREATE TABLE` checked them.
pub(super) fn table_log(log: &LogSettings, table: &TableMeta) -> LogSettings {
    let option = |name: &str, min: usize, default: usize| {
        table
            .params
            .layout_options
            .get(name)
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| *n >= min)
            .unwrap_or(default)
    };
    LogSettings {
        runs_max: option("sorted_runs_max", 1, log.runs_max),
        split_segments: option("split_segments", 0, log.split_segments),
        ring: log.ring.clone(),
    }
}

/// Deletes this node's cold-tier objects that no table references (relocated tables and
/// offloaded parity shards): left by a crash between an upload and the manifest edit (or
/// stub) adopting it, or by tables dropped since (their files go with their directory;
/// their cold objects are found here). Runs at open, before anything offloads, so no
/// upload is in flight. A cold tier that cannot be listed, or a table whose references
/// cannot be read, is logged and nothing is deleted.
pub(super) fn sweep_cold_tier(cold: &ColdTier, tables: &HashMap<TableId, Arc<TableSlot>>) {
    let mut live = HashSet::new();
    for slot in tables.values() {
        let Ok(guard) = slot.db.try_read() else {
            tracing::warn!(target: "mosaic::storage", table = slot.name, "cold-tier sweep skipped: table busy");
            return;
        };
        for store in guard.iter() {
            match store.cold_references() {
                Ok(locations) => live.extend(locations),
                Err(e) => {
                    tracing::warn!(target: "mosaic::storage", table = slot.name, error = %e, "cold-tier sweep skipped: the table's cold references are unreadable");
                    return;
                }
            }
        }
    }
    let objects = match cold.list("") {
        Ok(objects) => objects,
        Err(e) => {
            tracing::warn!(target: "mosaic::storage", cold_tier = cold.description(), error = %e, "listing the cold tier failed; its unreferenced objects stay");
            return;
        }
    };
    for (location, size) in objects {
        if live.contains(&location) {
            continue;
        }
        match mosaic_lsm::TableStore::remove(cold, &location) {
            Ok(()) => {
                tracing::info!(target: "mosaic::storage", location, size, "deleted an unreferenced cold-tier object")
            }
            Err(e) => {
                tracing::warn!(target: "mosaic::storage", location, error = %e, "deleting an unreferenced cold-tier object failed")
            }
        }
    }
}

/// What `table`'s store needs of its keys: the key columns (reads filter rows by them) and
/// the heterogeneous layout's replica orders.
pub(super) fn table_keys(table: &TableMeta) -> KeyOrders {
    KeyOrders {
        schema: table.key_schema(),
        orders: table
            .replica_orders()
            .into_iter()
            .filter_map(Permutation::new)
            .collect(),
    }
}

/// Opens (creating) the store of `table`, in its layout.
pub(super) fn open_slot(
    data_dir: &Path,
    engine: &Options,
    log: &LogSettings,
    table: &TableMeta,
    roles: &super::indexes::SharedRoles,
) -> mosaic_lsm::Result<TableSlot> {
    let dir = table_dir(data_dir, table);
    let layout = table_layout(table)?;
    let log = table_log(log, table);
    let keys = table_keys(table);
    let db = ReplicaStore::open_with_keys(
        &dir,
        layout,
        engine.clone(),
        log.clone(),
        Some(keys.clone()),
    )?;
    let hetero = (layout == Layout::Heterogeneous).then(|| {
        let state = super::hetero::HeteroState::new(table);
        state.seed(&keys.schema, &db);
        state
    });
    let db = Arc::new(AsyncRwLock::new(Some(db)));
    let source = super::indexes::SweepSource {
        store: db.clone(),
        roles: roles.clone(),
    };
    let indexes = super::indexes::open_indexes(engine, &dir, table, &source)?;
    Ok(TableSlot {
        name: format!("{}.{}", table.keyspace, table.name),
        table: table.name.clone(),
        dir,
        layout,
        log,
        keys: RwLock::new(keys),
        hetero,
        db,
        dropped: AtomicBool::new(false),
        node_engine: engine
            .engine
            .clone()
            .ok_or_else(|| mosaic_lsm::Error::InvalidArgument("no node engine".into()))?,
        indexes: RwLock::new(Arc::new(indexes)),
        paxos: Default::default(),
        counter_epochs: table.counter.then(super::counters::CounterEpochs::new),
    })
}

/// Removes table directories that the catalog does not list (and `*.deleting` leftovers),
/// then keyspace directories left empty that the catalog does not list. Only names this
/// module creates are touched.
pub(super) fn remove_orphans(data_dir: &Path, catalog: &Catalog, engine: &Engine) -> Result<()> {
    // system_auth's tables are in every catalog (mosaic_cql::schema::auth_keyspace).
    let live: std::collections::HashSet<PathBuf> = catalog
        .stored_tables()
        .map(|t| table_dir(data_dir, t))
        .collect();
    let keyspaces: std::collections::HashSet<String> =
        catalog.stored_keyspaces().map(path_component).collect();
    // Partitions of the engine whose table is gone (a drop interrupted by a crash).
    for dir in engine.partitions() {
        let in_use = live.iter().any(|t| dir.starts_with(t))
            || dir.starts_with(data_dir.join(crate::hints::HINTS_DIR));
        if !in_use {
            engine
                .drop_partitions_under(&dir)
                .with_context(|| format!("dropping the storage of {}", dir.display()))?;
        }
    }
    let entries =
        fs::read_dir(data_dir).with_context(|| format!("listing {}", data_dir.display()))?;
    for ks in entries {
        let ks = ks.with_context(|| format!("listing {}", data_dir.display()))?;
        if !ks.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let ks_dir = ks.path();
        let mut removed_any = false;
        let tables =
            fs::read_dir(&ks_dir).with_context(|| format!("listing {}", ks_dir.display()))?;
        for t in tables {
            let t = t.with_context(|| format!("listing {}", ks_dir.display()))?;
            let name = t.file_name().to_string_lossy().into_owned();
            let path = t.path();
            let ours = name.ends_with(DELETING_SUFFIX)
                || name
                    .rsplit_once('-')
                    .is_some_and(|(_, id)| parse_id_hex(id).is_some());
            if ours && !live.contains(&path) {
                tracing::warn!(
                    target: "mosaic::storage",
                    path = %path.display(),
                    "removing a table directory not in the schema"
                );
                engine
                    .drop_partitions_under(&path)
                    .with_context(|| format!("dropping the storage of {}", path.display()))?;
                fs::remove_dir_all(&path)
                    .with_context(|| format!("removing {}", path.display()))?;
                removed_any = true;
            }
        }
        let name = ks.file_name().to_string_lossy().into_owned();
        if removed_any && !keyspaces.contains(&name) {
            // Only succeeds when empty, which is what we want.
            let _ = fs::remove_dir(&ks_dir);
        }
        if removed_any {
            sync_dir(&ks_dir)
                .or_else(|e| {
                    if e.kind() == io::ErrorKind::NotFound {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .with_context(|| format!("syncing {}", ks_dir.display()))?;
        }
    }
    sync_dir(data_dir).with_context(|| format!("syncing {}", data_dir.display()))?;
    Ok(())
}

impl LocalCoordinator {
    /// Applies writes to local storage, per table, each under the role `roles` gives its
    /// token (one batch per table and role).
    pub async fn apply(
        &self,
        mutations: BTreeMap<TableId, Vec<WireMutation>>,
        roles: &dyn Roles,
    ) -> Result<(), ErrorResponse> {
        self.store(mutations, roles, false).await
    }

    /// Writes `mutations` as [`LocalCoordinator::apply`] does — or, with `ingest`, for
    /// entries streamed in key order (a range this node pulls as it joins), ingests each
    /// role's batch as tables where its structure can take them
    /// ([`mosaic_replica::ReplicaStore::ingest`], which writes what its layout cannot
    /// ingest); a table with secondary indexes (whose entries are built from the writes)
    /// or a counter table is written as usual.
    pub async fn store(
        &self,
        mutations: BTreeMap<TableId, Vec<WireMutation>>,
        roles: &dyn Roles,
        ingest: bool,
    ) -> Result<(), ErrorResponse> {
        let mut batches: BTreeMap<TableId, Vec<(Role, WriteBatch)>> = BTreeMap::new();
        for (table, ms) in mutations {
            // A layout that stores every role alike needs no second copy during a move.
            let by_role = self.stores_roles_apart(table);
            let batches = batches.entry(table).or_default();
            // Rows of one partition arrive together: one ring lookup per token.
            let mut last: Option<(Token, Role, Option<Role>)> = None;
            for m in ms {
                // A key too short to hold a token has no place on the ring; it is stored
                // (and read, see read_local's callers) as a primary copy.
                let (role, also) = match mosaic_rows::decode_token(&m.key) {
                    Ok(token) => match last {
                        Some((t, role, also)) if t == token => (role, also),
                        _ => {
                            let role = roles.role(token);
                            let also = roles.future_role(token).filter(|_| by_role);
                            last = Some((token, role, also));
                            (role, also)
                        }
                    },
                    Err(_) => (Role::Primary, None),
                };
                if let Some(batch) = also.and_then(|also| batch_of(batches, also)) {
                    batch.merge_owned(m.key.clone(), m.ts, m.fragment.clone());
                }
                if let Some(batch) = batch_of(batches, role) {
                    batch.merge_owned(m.key, m.ts, m.fragment);
                }
            }
        }
        // Locks in table-id order (the BTreeMap's), so concurrent writers never wait on
        // each other in a cycle.
        let mut work = Vec::with_capacity(batches.len());
        // Deletions in counter tables: their partitions' cached shards are invalidated
        // once the writes are applied (or failed: some may be).
        let mut deletions = Vec::new();
        for (id, batch) in batches {
            let slot = self.slot(id)?;
            if let Some(state) = &slot.hetero {
                let keys = batch
                    .iter()
                    .flat_map(|(_, b)| b.ops().iter().map(|op| op.key.as_slice()));
                state.observe(&slot.keys.read().schema, keys);
            }
            let guard = slot.db.clone().read_owned().await;
            if guard.is_none() {
                return Err(self.closed_error(&slot));
            }
            let list = slot.indexes.read().clone();
            let indexed = (!list.is_empty()).then(|| (list, slot.keys.read().schema.clone()));
            if slot.counter_epochs.is_some() {
                let shadowing = batch
                    .iter()
                    .flat_map(|(_, b)| b.ops())
                    .filter(|op| super::counters::may_shadow_shards(op))
                    .filter_map(|op| mosaic_rows::decode_token(&op.key).ok())
                    .collect::<Vec<_>>();
                if !shadowing.is_empty() {
                    deletions.push((slot.clone(), shadowing));
                }
            }
            // The layout decides which structures take tables (a heterogeneous table's
            // do not); index entries and counter shards are built from writes.
            let ingest = ingest && indexed.is_none() && slot.counter_epochs.is_none();
            work.push((slot.name.clone(), guard, batch, indexed, ingest));
        }
        // A write that may stall (the engine stalled a write within the last second)
        // leaves the network thread, so the stall holds up no other connection; so does
        // an ingest, which writes whole tables.
        let inline = self.inline_writes && !ingest && !self.node_engine.is_stalling();
        let applied = run_engine_call(inline, move || {
            for (name, guard, batches, indexed, ingest) in work {
                if let Some(store) = guard.as_ref() {
                    if let Some((list, schema)) = &indexed {
                        super::indexes::index_writes(list, schema, &batches)
                            .map_err(|e| engine_error(&name, e))?;
                    }
                    for (role, batch) in batches {
                        let stored = if ingest {
                            store.ingest(role, batch).map(drop)
                        } else {
                            store.write(role, batch)
                        };
                        stored.map_err(|e| engine_error(&name, e))?;
                    }
                }
            }
            Ok(())
        });
        for (slot, tokens) in deletions {
            if let Some(epochs) = &slot.counter_epochs {
                tokens.into_iter().for_each(|t| epochs.bump(t));
            }
        }
        applied
    }

    /// Reads up to `limit` entries of `range` of a table from local storage: the range
    /// split where this node's role changes (`roles`), each piece read under its role, in
    /// key order.
    pub async fn read_local(
        &self,
        command: ReadCommand,
        roles: &dyn Roles,
        class: ReadClass,
    ) -> Result<ReadResult, ErrorResponse> {
        let ReadCommand {
            table,
            range,
            limit,
            filter,
            index,
        } = command;
        let limit = self.answer.rows(limit);
        let mut budget = self.answer.start();
        if let Some(query) = index {
            let slot = self.slot(table)?;
            // Not built here (yet): the whole range, which holds every row the index would
            // point at.
            if let Some(index) = super::indexes::built_index(&slot.indexes, &query.index) {
                let schema = slot.keys.read().schema.clone();
                let now = self.now_secs();
                return self
                    .read_pieces(table, range, roles, class, move |store, pieces, name| {
                        super::index_read::read_through(
                            store,
                            &index,
                            &schema,
                            &query.term,
                            pieces,
                            limit,
                            now,
                            &mut budget,
                            name,
                        )
                    })
                    .await;
            }
        }
        self.read_pieces(table, range, roles, class, move |store, pieces, name| {
            // Sized for the answer up front: growing it shows up as page zeroing in scans.
            let mut entries = Vec::with_capacity(limit.min(1024));
            let mut full = false;
            for (range, role) in pieces {
                let scan = store
                    .scan_filtered(*role, range, filter.as_ref())
                    .map_err(|e| engine_error(name, e))?;
                for item in scan {
                    budget.tick()?;
                    let (key, entry) = item.map_err(|e| engine_error(name, e))?;
                    if full || entries.len() >= limit {
                        // One entry past the limit (or the bytes): not exhausted.
                        return Ok(ReadResult::one_copy(entries, false));
                    }
                    full = budget.add(&key, &entry.value);
                    entries.push((key, entry.value));
                }
            }
            Ok(ReadResult::one_copy(entries, true))
        })
        .await
    }

    /// Reads up to `limit` entries of `range` in the order this node stores them, keys
    /// canonical, after the stored key `after`; with the stored key to resume after
    /// (`None`: done). See `mosaic_replica::stored`: what repair hashes and streams.
    pub async fn read_stored(
        &self,
        table: TableId,
        range: KeyRange,
        after: Option<Vec<u8>>,
        limit: usize,
        roles: &dyn Roles,
    ) -> Result<(Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<u8>>), ErrorResponse> {
        let class = ReadClass::default();
        // Repair waits for its pages longer than a read: only the answer's size bounds it.
        let limit = self.answer.rows(limit);
        let mut budget = answer::AnswerBounds {
            timeout: None,
            ..self.answer
        }
        .start();
        self.read_pieces(table, range, roles, class, move |store, pieces, name| {
            let mut entries = Vec::with_capacity(limit.min(1024));
            let mut last_stored = None;
            let mut full = false;
            // Pieces are disjoint token ranges in ascending order, and stored keys keep
            // their partition's prefix: a stored key past one piece is before the next.
            for (range, role) in pieces {
                let scan = store
                    .scan_stored(*role, range, after.as_deref())
                    .map_err(|e| engine_error(name, e))?;
                for item in scan {
                    let item = item.map_err(|e| engine_error(name, e))?;
                    if full || entries.len() >= limit {
                        // One entry past the limit (or the bytes): the range is not done.
                        return Ok((entries, last_stored));
                    }
                    full = budget.add(&item.key, &item.entry.value);
                    entries.push((item.key, item.entry.value));
                    last_stored = Some(item.stored);
                }
            }
            Ok((entries, None))
        })
        .await
    }

    /// Runs `read` on the read stage (or inline, without one) with the table's store,
    /// `range` split where this node's role changes (`roles`, each piece with its role, in
    /// key order) and the table's name (for errors).
    async fn read_pieces<T: Send + 'static>(
        &self,
        table: TableId,
        range: KeyRange,
        roles: &dyn Roles,
        class: ReadClass,
        read: impl FnOnce(&ReplicaStore, &[(KeyRange, Role)], &str) -> Result<T, ErrorResponse>
            + Send
            + 'static,
    ) -> Result<T, ErrorResponse> {
        let pieces = roles.pieces(range);
        self.on_store(table, class, move |store, name| read(store, &pieces, name))
            .await
    }

    /// Runs `read` with `table`'s store on the read stage (or inline, without one): for
    /// ELECT's reads of what the store holds in memory (key lists, decoded stripes of lost
    /// tables), which a blocking thread would only add two thread switches to.
    pub async fn read_store<T: Send + 'static>(
        &self,
        table: TableId,
        read: impl FnOnce(&ReplicaStore) -> mosaic_lsm::Result<T> + Send + 'static,
    ) -> Result<T, ErrorResponse> {
        self.on_store(table, ReadClass::default(), move |store, name| {
            read(store).map_err(|e| engine_error(name, e))
        })
        .await
    }

    /// Runs `read` on the read stage (or inline, without one) with the table's store and
    /// name (for errors).
    async fn on_store<T: Send + 'static>(
        &self,
        table: TableId,
        class: ReadClass,
        read: impl FnOnce(&ReplicaStore, &str) -> Result<T, ErrorResponse> + Send + 'static,
    ) -> Result<T, ErrorResponse> {
        let slot = self.slot(table)?;
        let guard = slot.db.clone().read_owned().await;
        if guard.is_none() {
            return Err(self.closed_error(&slot));
        }
        let name = slot.name.clone();
        self.run_read(class, move || match guard.as_ref() {
            Some(store) => read(store, &name),
            None => Err(server_error("The node is shutting down")),
        })
        .await
    }

    /// Runs `read` on the read stage (or inline, without one).
    async fn run_read<T: Send + 'static>(
        &self,
        class: ReadClass,
        read: impl FnOnce() -> Result<T, ErrorResponse> + Send + 'static,
    ) -> Result<T, ErrorResponse> {
        match &self.read_stage {
            Some(stage) => match stage.run(class, read).await {
                Ok(out) => out,
                Err(crate::read_stage::StageError::Failed) => {
                    Err(server_error("The read failed in the read stage"))
                }
                Err(crate::read_stage::StageError::Expired) => Err(server_error(
                    "The read waited in the read stage longer than read_request_timeout_ms \
                     and was dropped (the node is overloaded)",
                )),
            },
            None => run_engine_call(self.inline_reads, read),
        }
    }

    /// Removes every row of a table from local storage.
    pub async fn truncate_local(&self, table: TableId) -> Result<(), ErrorResponse> {
        let slot = self.slot(table)?;
        let mut guard = slot.db.clone().write_owned().await;
        if guard.is_none() {
            return Err(self.closed_error(&slot));
        }
        let dir = slot.dir.clone();
        let name = slot.name.clone();
        let layout = slot.layout;
        let engine = self.engine.clone();
        let node_engine = self.node_engine.clone();
        let log = slot.log.clone();
        let keys = slot.keys.read().clone();
        let catalog = self.current_catalog();
        let slot2 = slot.clone();
        let source = super::indexes::SweepSource {
            store: slot.db.clone(),
            roles: self.roles_source.clone(),
        };
        tokio::task::spawn_blocking(move || {
            super::indexes::close_indexes(&slot2.indexes);
            slot2.paxos.close(&name);
            close_before_delete(&mut guard, &name, "truncate");
            delete_dir(&node_engine, &dir).map_err(|e| {
                server_error(format!(
                    "Could not truncate {name}: deleting {}: {e}",
                    dir.display()
                ))
            })?;
            let db = ReplicaStore::open_with_keys(&dir, layout, engine.clone(), log, Some(keys))
                .map_err(|e| engine_error(&name, e))?;
            *guard = Some(db);
            if let Some(meta) = catalog.table_by_id(table) {
                super::indexes::reopen_after_truncate(&engine, &dir, meta, &slot2.indexes, &source)
                    .map_err(|e| engine_error(&name, e))?;
            }
            if let Some(epochs) = &slot2.counter_epochs {
                epochs.bump_all();
            }
            Ok(())
        })
        .await
        .map_err(join_error)?
    }
}
