//! Schema persistence: the catalog file and its epoch, and installing a new catalog
//! (local DDL or a peer's newer schema) with its storage created and deleted in a
//! crash-safe order.

use super::tables::{close_before_delete, delete_dir, engine_error, join_error, server_error};
use super::*;

impl LocalCoordinator {
    /// The schema as the cluster moves it.
    pub fn schema_snapshot(&self) -> SchemaSnapshot {
        let catalog = self.catalog.read().clone();
        SchemaSnapshot {
            epoch: self.epoch.load(Ordering::SeqCst),
            version: catalog.version.0,
            bytes: catalog.to_bytes(),
        }
    }

    /// The current catalog.
    pub fn current_catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    /// The schema's version.
    pub fn schema_version(&self) -> Uuid {
        self.catalog.read().version
    }

    /// Adopts a peer's schema if it supersedes ours: the same storage steps as a local
    /// change. Returns whether it did.
    pub async fn adopt_schema(&self, snapshot: SchemaSnapshot) -> Result<bool, String> {
        let _ddl = self.ddl.lock().await;
        if self.closing.load(Ordering::SeqCst) {
            return Err("the node is shutting down".into());
        }
        let current = self.catalog();
        let mine = SchemaSnapshot {
            epoch: self.epoch.load(Ordering::SeqCst),
            version: current.version.0,
            bytes: Vec::new(),
        };
        if !snapshot.supersedes(&mine) {
            return Ok(false);
        }
        let next = Catalog::from_bytes(&snapshot.bytes)
            .map_err(|e| format!("undecodable schema from a peer: {e}"))?;
        if next == *current {
            self.persist_epoch(&current, snapshot.epoch).await?;
            return Ok(true);
        }
        let changes = current.changes_to(&next);
        self.install(&current, next, snapshot.epoch, "peer")
            .await
            .map_err(|e| e.message)?;
        if let Some(listener) = self.peer_schema_listener.get() {
            listener(changes);
        }
        Ok(true)
    }

    /// Sets what hears of the changes a peer's schema brought, once this node has
    /// installed it (its `system_schema` shows them): the server pushes them as
    /// SCHEMA_CHANGE events to its clients (see `mosaic_cql::schema::Catalog::changes_to`).
    /// Only the first listener set is kept.
    pub fn on_peer_schema_change(&self, listener: PeerSchemaListener) {
        let _ = self.peer_schema_listener.set(listener);
    }

    /// Records a new epoch for an unchanged catalog.
    async fn persist_epoch(&self, catalog: &Catalog, epoch: u64) -> Result<(), String> {
        let path = self.data_dir.join(SCHEMA_FILE);
        let bytes = schema_file_bytes(catalog, epoch);
        tokio::task::spawn_blocking(move || write_atomic(&path, &bytes))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("Could not persist the schema: {e}"))?;
        self.epoch.store(epoch, Ordering::SeqCst);
        Ok(())
    }

    /// Installs `next` (replacing `current`) at `epoch`: storage for new tables, the
    /// catalog made durable, then dropped tables' storage deleted. Called under `ddl`;
    /// `origin` says whose change it is (`local` DDL or a `peer`'s schema), for the log.
    pub(super) async fn install(
        &self,
        current: &Catalog,
        next: Catalog,
        epoch: u64,
        origin: &'static str,
    ) -> Result<(), ErrorResponse> {
        let created: Vec<Arc<TableMeta>> = next
            .tables()
            .filter(|t| current.table_by_id(t.id).is_none())
            .cloned()
            .collect();
        let dropped: Vec<Arc<TableMeta>> = current
            .tables()
            .filter(|t| next.table_by_id(t.id).is_none())
            .cloned()
            .collect();
        let names = |tables: &[Arc<TableMeta>]| {
            let names: Vec<String> = tables
                .iter()
                .map(|t| format!("{}.{}", t.keyspace, t.name))
                .collect();
            names.join(",")
        };
        if origin == "peer" && !dropped.is_empty() {
            // Whose schema it is: the `schema_push` span around this names the peer, whose
            // connection passed the membership handshake.
            tracing::warn!(
                target: "mosaic::schema",
                epoch,
                version = %next.version,
                dropped = %names(&dropped),
                "a peer's schema drops tables; their storage is deleted"
            );
        }
        tracing::info!(
            target: "mosaic::schema",
            origin,
            epoch,
            version = %next.version,
            keyspaces = next.keyspaces.len(),
            created = %names(&created),
            dropped = %names(&dropped),
            "schema changed"
        );
        let bytes = schema_file_bytes(&next, epoch);
        let created_ids: Vec<TableId> = created.iter().map(|t| t.id).collect();
        let opened = self.create_and_persist(created, bytes).await?;
        let installed = next.clone();
        let gone = self.swap_in(opened, next, epoch, &dropped);
        for slot in gone {
            delete_dropped(slot).await;
        }
        self.sync_indexes(&installed, &created_ids).await;
        self.apply_order_changes(current, &installed).await;
        Ok(())
    }

    /// Steps 1 and 2 of a schema change: storage for the `created` tables, then the
    /// schema file (`bytes`) made durable; the new storage is removed again if either
    /// fails.
    async fn create_and_persist(
        &self,
        created: Vec<Arc<TableMeta>>,
        bytes: Vec<u8>,
    ) -> Result<Vec<(TableId, TableSlot)>, ErrorResponse> {
        let data_dir = self.data_dir.clone();
        let engine = self.engine.clone();
        let log = self.log.clone();
        let roles = self.roles_source.clone();
        tokio::task::spawn_blocking(
            move || -> Result<Vec<(TableId, TableSlot)>, ErrorResponse> {
                let mut slots = Vec::with_capacity(created.len());
                let mut result = Ok(());
                for t in &created {
                    match open_slot(&data_dir, &engine, &log, t, &roles) {
                        Ok(slot) => slots.push((t.id, slot)),
                        Err(e) => {
                            result = Err(engine_error(&format!("{}.{}", t.keyspace, t.name), e));
                            break;
                        }
                    }
                }
                if result.is_ok() {
                    result = write_atomic(&data_dir.join(SCHEMA_FILE), &bytes).map_err(|e| {
                        server_error(format!("Could not persist the schema change: {e}"))
                    });
                }
                match result {
                    Ok(()) => Ok(slots),
                    Err(e) => {
                        for (_, slot) in slots {
                            if let Some(db) = slot.db.try_write().ok().and_then(|mut g| g.take()) {
                                let _ = db.close();
                            }
                            let _ = delete_dir(&slot.node_engine, &slot.dir);
                        }
                        Err(e)
                    }
                }
            },
        )
        .await
        .map_err(join_error)?
    }

    /// Step 3: new tables become reachable before the catalog names them; dropped ones
    /// disappear from the catalog before their storage. Returns the dropped tables' slots.
    fn swap_in(
        &self,
        opened: Vec<(TableId, TableSlot)>,
        next: Catalog,
        epoch: u64,
        dropped: &[Arc<TableMeta>],
    ) -> Vec<Arc<TableSlot>> {
        {
            let mut tables = self.tables.write();
            for (id, slot) in opened {
                tables.insert(id, Arc::new(slot));
            }
        }
        *self.catalog.write() = Arc::new(next);
        self.epoch.store(epoch, Ordering::SeqCst);
        let mut gone = Vec::with_capacity(dropped.len());
        let mut tables = self.tables.write();
        for t in dropped {
            if let Some(slot) = tables.remove(&t.id) {
                slot.dropped.store(true, Ordering::SeqCst);
                gone.push(slot);
            }
            self.remember_dropped(t.id, t.name.clone());
        }
        gone
    }
}

/// Step 4: deletes a dropped table's storage once running operations on it are done. A
/// failure leaves an orphan directory that the next start removes.
async fn delete_dropped(slot: Arc<TableSlot>) {
    let guard = slot.db.clone().write_owned().await;
    let dir = slot.dir.clone();
    let engine = slot.node_engine.clone();
    let name = slot.name.clone();
    let closing = slot.clone();
    let deleted = tokio::task::spawn_blocking(move || -> io::Result<()> {
        let mut guard = guard;
        closing.paxos.close(&name);
        close_before_delete(&mut guard, &name, "drop");
        delete_dir(&engine, &dir)?;
        if let Some(ks_dir) = dir.parent() {
            // Remove the keyspace directory if this was its last table.
            if fs::remove_dir(ks_dir).is_ok() {
                if let Some(parent) = ks_dir.parent() {
                    sync_dir(parent)?;
                }
            }
        }
        Ok(())
    })
    .await;
    match deleted {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(
            target: "mosaic::storage",
            path = %slot.dir.display(),
            error = %e,
            "could not delete a dropped table (removed at next start)"
        ),
        Err(e) => tracing::warn!(
            target: "mosaic::storage",
            path = %slot.dir.display(),
            error = %e,
            "deleting a dropped table failed"
        ),
    }
}

/// The schema file as written: the catalog and its epoch.
#[derive(serde::Serialize)]
struct SchemaFileOut<'a> {
    epoch: u64,
    catalog: &'a Catalog,
}

/// The schema file as read: the catalog stays JSON until [`Catalog::from_bytes`] checks
/// its format and recomputes its version.
#[derive(serde::Deserialize)]
struct SchemaFileIn {
    epoch: u64,
    catalog: serde_json::Value,
}

/// The schema file's content: the catalog and its epoch.
pub(crate) fn schema_file_bytes(catalog: &Catalog, epoch: u64) -> Vec<u8> {
    serde_json::to_vec_pretty(&SchemaFileOut { epoch, catalog }).unwrap_or_default()
}

/// The schema `data_dir` holds on `fs`: its epoch and catalog, or epoch 0 and an empty
/// catalog when there is no schema file yet. A leftover `schema.json.tmp` (a crash in the
/// middle of a replacement) is not read: the rename is what makes a new schema current.
pub(crate) fn load_schema_on(fs: &dyn mosaic_env::Fs, data_dir: &Path) -> Result<(u64, Catalog)> {
    let path = data_dir.join(SCHEMA_FILE);
    match fs.read_all(&path) {
        Ok(bytes) => {
            read_schema_file(&bytes).with_context(|| format!("reading {}", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((0, Catalog::default())),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Reads the schema file: `{epoch, catalog}`, or a bare catalog (epoch 0) as written
/// before the cluster existed.
pub(super) fn read_schema_file(bytes: &[u8]) -> Result<(u64, Catalog)> {
    match serde_json::from_slice::<SchemaFileIn>(bytes) {
        Ok(file) => {
            let catalog = Catalog::from_bytes(&serde_json::to_vec(&file.catalog)?)?;
            Ok((file.epoch, catalog))
        }
        Err(_) => Ok((0, Catalog::from_bytes(bytes)?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_file_round_trips_and_a_bare_catalog_reads_as_epoch_0() {
        let catalog = Catalog::default();
        let (epoch, read) = read_schema_file(&schema_file_bytes(&catalog, 7)).unwrap();
        assert_eq!((epoch, read), (7, catalog.clone()));
        let (epoch, read) = read_schema_file(&catalog.to_bytes()).unwrap();
        assert_eq!((epoch, read), (0, catalog));
        assert!(read_schema_file(b"{\"epoch\": 1}").is_err());
    }
}
