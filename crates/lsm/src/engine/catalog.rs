//! The node engine's catalog of partitions: which partition id lives in which directory,
//! and which directories are being dropped.
//!
//! The shared WAL tags each write with its partition's id; recovery replays a record only
//! for a partition the catalog lists, so a dropped (or truncated, i.e. dropped and
//! re-created under a new id) partition's writes are never resurrected. Ids are never
//! reused. The catalog is one small text file, `PARTITIONS`, rewritten whole (temporary
//! file, sync, rename, directory sync) on every change — partitions come and go with DDL,
//! not with writes — and ends with a crc32c of everything above it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_env::Fs;

use crate::error::{Error, Result};

/// The catalog's file name, in the engine's root directory.
pub(crate) const CATALOG_FILE: &str = "PARTITIONS";
const HEADER: &str = "mosaic-partitions 1";

/// The partitions of a node engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Catalog {
    /// The next unused partition id.
    pub next_id: u32,
    /// Live partitions: id → directory, relative to the engine's root.
    pub live: BTreeMap<u32, String>,
    /// Directories of dropped partitions whose files may not all be deleted yet.
    pub dropping: Vec<String>,
}

impl Catalog {
    /// The id of the partition in `name`, if the catalog lists one.
    pub fn id_of(&self, name: &str) -> Option<u32> {
        self.live
            .iter()
            .find_map(|(id, n)| (n == name).then_some(*id))
    }

    /// Reads the catalog in `root` (empty if there is none yet).
    pub fn read(fs: &Arc<dyn Fs>, root: &Path) -> Result<Catalog> {
        let path = root.join(CATALOG_FILE);
        if !fs.exists(&path) {
            return Ok(Catalog {
                next_id: 1,
                ..Catalog::default()
            });
        }
        let data = fs
            .read_all(&path)
            .map_err(|e| Error::io("reading", &path, e))?;
        let bad = |why: &str| Error::corruption(&path, 0, format!("partition catalog: {why}"));
        let text = std::str::from_utf8(&data).map_err(|_| bad("not UTF-8"))?;
        let (body, crc_line) = text
            .trim_end_matches('\n')
            .rsplit_once('\n')
            .ok_or_else(|| bad("truncated"))?;
        let crc = crc_line
            .strip_prefix("crc ")
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("no checksum line"))?;
        if crc32c::crc32c(body.as_bytes()) != crc {
            return Err(bad("checksum mismatch"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(HEADER) {
            return Err(bad("unknown header"));
        }
        let mut c = Catalog::default();
        for line in lines {
            if let Some(n) = line.strip_prefix("next ") {
                c.next_id = n.parse().map_err(|_| bad("bad next id"))?;
            } else if let Some(rest) = line.strip_prefix("p ") {
                let (id, name) = rest.split_once(' ').ok_or_else(|| bad("bad partition"))?;
                let id = id.parse().map_err(|_| bad("bad partition id"))?;
                c.live.insert(id, name.to_owned());
            } else if let Some(name) = line.strip_prefix("d ") {
                c.dropping.push(name.to_owned());
            } else {
                return Err(bad("unknown line"));
            }
        }
        if c.live.keys().any(|id| *id >= c.next_id) {
            return Err(bad("a partition id at or beyond the next id"));
        }
        Ok(c)
    }

    /// Writes the catalog to `root` atomically and durably.
    pub fn write(&self, fs: &Arc<dyn Fs>, root: &Path) -> Result<()> {
        let mut body = format!("{HEADER}\nnext {}", self.next_id);
        for (id, name) in &self.live {
            body.push_str(&format!("\np {id} {name}"));
        }
        for name in &self.dropping {
            body.push_str(&format!("\nd {name}"));
        }
        let crc = crc32c::crc32c(body.as_bytes());
        let text = format!("{body}\ncrc {crc:08x}\n");
        let tmp = root.join(format!("{CATALOG_FILE}.tmp"));
        let path = root.join(CATALOG_FILE);
        let mut f = fs
            .create(&tmp)
            .map_err(|e| Error::io("creating", &tmp, e))?;
        f.append(text.as_bytes())
            .map_err(|e| Error::io("writing", &tmp, e))?;
        f.sync_data().map_err(|e| Error::io("syncing", &tmp, e))?;
        drop(f);
        fs.rename(&tmp, &path)
            .map_err(|e| Error::io("renaming", &tmp, e))?;
        fs.sync_dir(root)
            .map_err(|e| Error::io("syncing directory", root, e))
    }
}

/// The catalog name of partition directory `dir` under `root`: its path relative to the
/// root, `.` for the root itself. Refused when `dir` is outside the root or its name
/// cannot be written on one line.
pub(crate) fn partition_name(root: &Path, dir: &Path) -> Result<String> {
    let rel = dir.strip_prefix(root).map_err(|_| {
        Error::InvalidArgument(format!(
            "{} is not inside the engine's directory {}",
            dir.display(),
            root.display()
        ))
    })?;
    let name = if rel.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        rel.to_str()
            .ok_or_else(|| {
                Error::InvalidArgument(format!("{} is not a UTF-8 path", dir.display()))
            })?
            .to_owned()
    };
    if name.contains('\n') || name.contains("..") {
        return Err(Error::InvalidArgument(format!(
            "partition directory {name:?} must not contain a newline or '..'"
        )));
    }
    Ok(name)
}

/// The directory of partition `name` under `root`.
pub(crate) fn partition_dir(root: &Path, name: &str) -> PathBuf {
    if name == "." {
        root.to_path_buf()
    } else {
        root.join(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_env::RealFs;

    #[test]
    fn a_catalog_round_trips_and_detects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn Fs> = Arc::new(RealFs);
        assert_eq!(Catalog::read(&fs, dir.path()).unwrap().next_id, 1);
        let mut c = Catalog {
            next_id: 9,
            ..Catalog::default()
        };
        c.live.insert(3, "ks/t-1 with space/primary".into());
        c.live.insert(8, ".".into());
        c.dropping.push("ks/old".into());
        c.write(&fs, dir.path()).unwrap();
        assert_eq!(Catalog::read(&fs, dir.path()).unwrap(), c);
        assert_eq!(c.id_of("ks/t-1 with space/primary"), Some(3));
        let path = dir.path().join(CATALOG_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("p 3", "p 4")).unwrap();
        assert!(matches!(
            Catalog::read(&fs, dir.path()),
            Err(Error::Corruption { .. })
        ));
    }

    #[test]
    fn names_are_relative_to_the_root() {
        let root = Path::new("/data");
        assert_eq!(partition_name(root, Path::new("/data")).unwrap(), ".");
        assert_eq!(
            partition_name(root, Path::new("/data/ks/t")).unwrap(),
            "ks/t"
        );
        assert!(partition_name(root, Path::new("/elsewhere")).is_err());
        assert_eq!(partition_dir(root, "."), root);
        assert_eq!(partition_dir(root, "ks/t"), Path::new("/data/ks/t"));
    }
}
