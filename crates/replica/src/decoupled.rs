//! The decoupled layout (DEPART): primary copies in an LSM-tree, redundant copies in a
//! two-layer log.
//!
//! ```text
//! DIR/LAYOUT    "decoupled" (see crate::store)
//! DIR/primary/  the LSM-tree of the copies this node is primary for
//! DIR/log/      the two-layer log of every source's redundant copies
//! ```
//!
//! The log is a `mosaic_lsm::Db` opened with `Options::log`: flushed memtables become
//! global-log segments, splits move them into range groups (the ring's ranges, see
//! [`crate::ranges`]), and a group's sorted runs are merge-sorted past `runs_max` (S).
//! Redundant copies of every source share the log; the ring's ranges keep each source's
//! keys in their own groups, and the caller reads a role only over the ranges that role
//! holds, so a role's reads see only its own copies.

use std::path::Path;
use std::sync::Arc;

use mosaic_lsm::{Db, LogOptions, Options, Result};

use crate::cleanup::CleanupGate;
use crate::ranges::LogSettings;
use crate::role::Role;
use crate::store::{Structure, PRIMARY_DIR};

/// The log's directory name.
pub const LOG_DIR: &str = "log";

/// The two engines of one table.
pub(crate) struct Decoupled {
    primary: Db,
    log: Db,
}

impl Decoupled {
    /// Opens (creating) the primary tree and the log, their filters asking `gate`.
    pub(crate) fn open(
        dir: &Path,
        engine: Options,
        gate: &Arc<CleanupGate>,
        settings: &LogSettings,
    ) -> Result<Decoupled> {
        let primary = Db::open(
            dir.join(PRIMARY_DIR),
            gate.options(&engine, Structure::Primary),
        )?;
        let log_options = Options {
            log: Some(LogOptions {
                split_segments: settings.split_segments,
                runs_max: settings.runs_max,
                group_of: settings.ring.group_of(),
            }),
            ..engine
        };
        let log = match Db::open(
            dir.join(LOG_DIR),
            gate.options(&log_options, Structure::Log),
        ) {
            Ok(log) => log,
            Err(e) => {
                let _ = primary.close();
                return Err(e);
            }
        };
        Ok(Decoupled { primary, log })
    }

    /// The engine of `role`.
    pub(crate) fn engine(&self, role: Role) -> &Db {
        match role {
            Role::Primary => &self.primary,
            Role::Redundant { .. } => &self.log,
        }
    }

    /// Both engines with their structures.
    pub(crate) fn engines(&self) -> Vec<(Structure, Db)> {
        vec![
            (Structure::Primary, self.primary.clone()),
            (Structure::Log, self.log.clone()),
        ]
    }

    /// Closes both; the first failure is returned after both were tried.
    pub(crate) fn close(self) -> Result<()> {
        let primary = self.primary.close();
        let log = self.log.close();
        primary.and(log)
    }
}
