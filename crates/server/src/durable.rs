//! Small durable files of the data directory: atomic replacement and the node's identity.
//!
//! Owns the two files a node keeps beside its tables, `schema.json` (written by the local
//! coordinator through [`write_atomic`]) and `node.toml` ([`NodeIdentity`]: host id and
//! tokens, chosen once and reused on every restart, because drivers and peers key their
//! view of the ring on them; and the datacenter and rack the node last ran in). Both are
//! replaced whole, never edited in place: write a temporary file, fsync it, rename it over
//! the old one, fsync the directory, so a crash leaves either the old or the new content.

use std::fs::File;
use std::io;
use std::path::Path;

use anyhow::{bail, Context, Result};
use mosaic_cql::schema::Uuid;
use mosaic_env::{Fs, RealFs};
use mosaic_types::Token;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Name of the identity file in the data directory.
pub const NODE_FILE: &str = "node.toml";

/// Replaces `path` with `bytes` atomically and durably (see the module doc).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    mosaic_env::write_atomically(&RealFs, path, bytes)
}

/// fsyncs a directory, making renames and removals in it durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Who this node is: chosen at first start, persisted, reused on restart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeIdentity {
    /// The host id (`host_id` in `system.local`).
    pub host_id: mosaic_types::HostId,
    /// The tokens this node owns, ascending and distinct.
    pub tokens: Vec<i64>,
    /// The datacenter this node last ran in, checked at start (`crate::location`); absent
    /// from identities written before it was remembered, and until the node first opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center: Option<String>,
    /// The rack this node last ran in, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
}

impl NodeIdentity {
    /// A fresh identity with `tokens` (sorted here).
    pub fn with_tokens(mut tokens: Vec<i64>) -> NodeIdentity {
        tokens.sort_unstable();
        tokens.dedup();
        NodeIdentity {
            host_id: mosaic_types::HostId(Uuid::random().0),
            tokens,
            data_center: None,
            rack: None,
        }
    }

    /// A fresh identity with `num_tokens` random tokens.
    pub fn generate(num_tokens: u32) -> NodeIdentity {
        let mut rng = rand::thread_rng();
        let mut tokens = Vec::with_capacity(num_tokens as usize);
        // Bounded: 64-bit collisions are vanishingly rare, so this loop ends after
        // num_tokens iterations in practice; the bound guards against a broken RNG.
        for _ in 0..num_tokens.saturating_mul(64) {
            if tokens.len() == num_tokens as usize {
                break;
            }
            // i64::MIN is the ring's minimum token, which no key hashes to.
            let t: i64 = rng.gen_range(i64::MIN + 1..=i64::MAX);
            if !tokens.contains(&t) {
                tokens.push(t);
            }
        }
        tokens.sort_unstable();
        NodeIdentity {
            host_id: mosaic_types::HostId(Uuid::random().0),
            tokens,
            data_center: None,
            rack: None,
        }
    }

    /// The node's identity in `data_dir`, creating and persisting one if there is none.
    pub fn load_or_create(data_dir: &Path, num_tokens: u32) -> Result<NodeIdentity> {
        NodeIdentity::load_or_create_on(&RealFs, data_dir, num_tokens)
    }

    /// [`Self::load_or_create`] on file system `fs`.
    pub fn load_or_create_on(
        fs: &dyn Fs,
        data_dir: &Path,
        num_tokens: u32,
    ) -> Result<NodeIdentity> {
        let path = data_dir.join(NODE_FILE);
        match fs.read_all(&path) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes)
                    .with_context(|| format!("reading {}: not UTF-8", path.display()))?;
                let id: NodeIdentity =
                    toml::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
                id.validate()
                    .with_context(|| format!("in {}", path.display()))?;
                Ok(id)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let id = NodeIdentity::generate(num_tokens);
                id.save_on(fs, data_dir)?;
                Ok(id)
            }
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Whether `data_dir` holds an identity.
    pub fn exists(data_dir: &Path) -> bool {
        data_dir.join(NODE_FILE).exists()
    }

    /// Persists this identity in `data_dir` (creating the directory).
    pub fn save(&self, data_dir: &Path) -> Result<()> {
        self.save_on(&RealFs, data_dir)
    }

    /// [`Self::save`] on file system `fs`.
    pub fn save_on(&self, fs: &dyn Fs, data_dir: &Path) -> Result<()> {
        self.validate()?;
        fs.create_dir_all(data_dir)
            .with_context(|| format!("creating data directory {}", data_dir.display()))?;
        let path = data_dir.join(NODE_FILE);
        let text = toml::to_string(self).context("serializing the node identity")?;
        let text = format!(
            "# This node's identity, chosen at its first start. Do not edit or copy it.\n{text}"
        );
        mosaic_env::write_atomically(fs, &path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }

    fn validate(&self) -> Result<()> {
        if self.tokens.is_empty() {
            bail!("no tokens");
        }
        if self.tokens.windows(2).any(|w| w.first() >= w.get(1)) {
            bail!("tokens must be ascending and distinct");
        }
        if self.tokens.contains(&i64::MIN) {
            bail!(
                "token {} is the ring's minimum, which no node owns",
                i64::MIN
            );
        }
        Ok(())
    }

    /// The tokens as ring tokens.
    pub fn ring_tokens(&self) -> Vec<Token> {
        self.tokens.iter().map(|&t| Token(t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn an_identity_is_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = NodeIdentity::load_or_create(dir.path(), 16).unwrap();
        assert_eq!(a.tokens.len(), 16);
        let b = NodeIdentity::load_or_create(dir.path(), 4).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn a_damaged_identity_is_an_error_not_a_new_identity() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(NODE_FILE), "host_id = 3\n").unwrap();
        assert!(NodeIdentity::load_or_create(dir.path(), 16).is_err());
        fs::write(
            dir.path().join(NODE_FILE),
            "host_id = \"00000000-0000-4000-8000-000000000000\"\ntokens = [5, 1]\n",
        )
        .unwrap();
        assert!(NodeIdentity::load_or_create(dir.path(), 16).is_err());
    }

    #[test]
    fn atomic_writes_replace_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.json");
        write_atomic(&p, b"first, longer").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"second");
        assert!(!dir.path().join("f.json.tmp").exists());
    }
}
