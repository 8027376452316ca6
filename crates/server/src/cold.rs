//! The cold tier (ELECT §4.2): an object store that the `erasure-tiered` layout offloads
//! the data blocks of cold tables to, through the `object_store` crate — a local directory
//! by default, S3-compatible with the `s3` feature.
//!
//! The engine reads through [`ColdTier`] as a [`TableStore`]: a table's metadata stays in a
//! local sidecar, and each data-block read is one ranged GET (behind the block cache), so a
//! read or compaction fetches only what it touches. Every request first waits
//! `request_latency_ms`, emulating an edge-to-cloud link.
//!
//! `object_store` is async; the engine's reads are not. Requests therefore run on the cold
//! tier's own small tokio runtime, and a caller waits on a channel for the answer — never
//! `block_on` inside the node's runtime, which tokio forbids.

use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use futures::TryStreamExt;
use mosaic_env::RandomAccessFile;
use mosaic_lsm::TableStore;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::config::ColdTierConfig;

/// Where the cold tier lives, parsed from `[cold_tier] url`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColdTierUrl {
    /// A local directory.
    Dir(PathBuf),
    /// An S3 bucket and key prefix.
    S3 {
        /// The bucket.
        bucket: String,
        /// Key prefix inside it (may be empty).
        prefix: String,
    },
}

impl ColdTierUrl {
    /// Parses `url`; empty means a `cold/` directory beside `data_dir`.
    pub fn parse(url: &str, data_dir: &Path) -> Result<ColdTierUrl> {
        if url.is_empty() {
            let absolute = std::path::absolute(data_dir)
                .with_context(|| format!("resolving {}", data_dir.display()))?;
            let parent = absolute.parent().unwrap_or(Path::new("/"));
            return Ok(ColdTierUrl::Dir(parent.join("cold")));
        }
        let parsed = url::Url::parse(url).with_context(|| format!("[cold_tier] url {url:?}"))?;
        match parsed.scheme() {
            "file" => {
                let path = parsed.to_file_path().map_err(|()| {
                    anyhow::anyhow!("[cold_tier] url {url:?}: expected file:///absolute/path")
                })?;
                Ok(ColdTierUrl::Dir(path))
            }
            "s3" => {
                let bucket = parsed.host_str().unwrap_or_default().to_owned();
                if bucket.is_empty() {
                    bail!("[cold_tier] url {url:?}: expected s3://bucket/prefix");
                }
                Ok(ColdTierUrl::S3 {
                    bucket,
                    prefix: parsed.path().trim_matches('/').to_owned(),
                })
            }
            other => {
                bail!("[cold_tier] url {url:?}: unknown scheme {other:?}; use file:// or s3://")
            }
        }
    }
}

/// What requests need: the store, the node's key prefix, the latency and the runtime.
struct Inner {
    store: Arc<dyn ObjectStore>,
    /// Key prefix of every object (the S3 prefix, then the node's host id).
    root: String,
    latency: Duration,
    handle: tokio::runtime::Handle,
}

/// The node's handle on the cold tier.
pub struct ColdTier {
    inner: Arc<Inner>,
    /// Shut down in the background on drop (dropping a runtime may happen inside the
    /// node's own runtime, where a blocking shutdown is forbidden).
    runtime: Option<tokio::runtime::Runtime>,
    /// Printed in logs and `mosaic stats`.
    description: String,
}

impl Drop for ColdTier {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl std::fmt::Debug for ColdTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColdTier")
            .field("at", &self.description)
            .field("root", &self.inner.root)
            .finish_non_exhaustive()
    }
}

impl ColdTier {
    /// Opens the cold tier `config` names for the node `node` (its host id, naming its
    /// objects) whose data lives in `data_dir`. Nothing is created until an object is
    /// stored.
    pub fn open(config: &ColdTierConfig, data_dir: &Path, node: &str) -> Result<ColdTier> {
        let url = ColdTierUrl::parse(&config.url, data_dir)?;
        let (store, prefix, description): (Arc<dyn ObjectStore>, String, String) = match &url {
            // Paths from the file system's root, so the directory is created by the first
            // object stored, not by a node that never offloads.
            ColdTierUrl::Dir(dir) => (
                Arc::new(object_store::local::LocalFileSystem::new()),
                dir.to_string_lossy().trim_matches('/').to_owned(),
                dir.display().to_string(),
            ),
            ColdTierUrl::S3 { bucket, prefix } => (
                s3_store(bucket)?,
                prefix.clone(),
                format!("s3://{bucket}/{prefix}"),
            ),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("cold-tier")
            .enable_all()
            .build()
            .context("starting the cold tier's runtime")?;
        let root = if prefix.is_empty() {
            node.to_owned()
        } else {
            format!("{prefix}/{node}")
        };
        Ok(ColdTier {
            inner: Arc::new(Inner {
                store,
                root,
                latency: Duration::from_millis(config.request_latency_ms),
                handle: runtime.handle().clone(),
            }),
            runtime: Some(runtime),
            description,
        })
    }

    /// Where the cold tier is (a directory or an `s3://` URL).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Stores `bytes` as `location` (one PUT; the store makes it visible atomically).
    pub fn put(&self, location: &str, bytes: Vec<u8>) -> io::Result<()> {
        let store = self.inner.store.clone();
        let path = self.inner.path(location);
        self.inner.call(async move {
            store
                .put(&path, object_store::PutPayload::from(bytes))
                .await
                .map(|_| ())
        })
    }

    /// Every object of this node under `prefix` (a location prefix, `""` for all), as
    /// locations with their sizes.
    pub fn list(&self, prefix: &str) -> io::Result<Vec<(String, u64)>> {
        let store = self.inner.store.clone();
        let root = format!("{}/", self.inner.root);
        let path = self.inner.path(prefix.trim_end_matches('/'));
        let objects: Vec<(String, u64)> = self.inner.call(async move {
            let metas: Vec<_> = store.list(Some(&path)).try_collect().await?;
            Ok(metas
                .into_iter()
                .map(|m| (m.location.to_string(), m.size))
                .collect())
        })?;
        Ok(objects
            .into_iter()
            .filter_map(|(p, size)| Some((p.strip_prefix(&root)?.to_owned(), size)))
            .collect())
    }
}

impl Inner {
    /// The object path of `location` (a name relative to this node's objects).
    fn path(&self, location: &str) -> ObjectPath {
        ObjectPath::from(format!("{}/{location}", self.root))
    }

    /// Runs `request` on the cold tier's runtime after the configured latency and waits
    /// for its answer (from any thread, inside a tokio runtime or not).
    fn call<T, F>(&self, request: F) -> io::Result<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = object_store::Result<T>> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let latency = self.latency;
        self.handle.spawn(async move {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            let _ = tx.send(request.await);
        });
        match rx.recv() {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(object_store::Error::NotFound { path, .. })) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("cold-tier object {path} not found"),
            )),
            Ok(Err(e)) => Err(io::Error::other(format!("cold tier: {e}"))),
            Err(_) => Err(io::Error::other("the cold tier is shut down")),
        }
    }

    fn get_range(&self, location: &str, range: Range<u64>) -> io::Result<Vec<u8>> {
        let store = self.store.clone();
        let path = self.path(location);
        self.call(async move { store.get_range(&path, range).await.map(|b| b.to_vec()) })
    }
}

/// One cold object opened for ranged reads.
struct ColdObject {
    inner: Arc<Inner>,
    location: String,
    len: u64,
}

impl RandomAccessFile for ColdObject {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|end| *end <= self.len)
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        if buf.is_empty() {
            // Object stores refuse an empty range; there is nothing to fetch.
            return Ok(());
        }
        let bytes = self.inner.get_range(&self.location, offset..end)?;
        if bytes.len() != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "cold-tier object {} answered {} bytes for a read of {}",
                    self.location,
                    bytes.len(),
                    buf.len()
                ),
            ));
        }
        buf.copy_from_slice(&bytes);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl TableStore for ColdTier {
    fn open(&self, location: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        let store = self.inner.store.clone();
        let path = self.inner.path(location);
        let len = self
            .inner
            .call(async move { store.head(&path).await.map(|m| m.size) })?;
        Ok(Arc::new(ColdObject {
            inner: self.inner.clone(),
            location: location.to_owned(),
            len,
        }))
    }

    fn put(&self, location: &str, bytes: &[u8]) -> io::Result<()> {
        ColdTier::put(self, location, bytes.to_vec())
    }

    fn remove(&self, location: &str) -> io::Result<()> {
        let store = self.inner.store.clone();
        let path = self.inner.path(location);
        match self.inner.call(async move { store.delete(&path).await }) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

#[cfg(feature = "s3")]
fn s3_store(bucket: &str) -> Result<Arc<dyn ObjectStore>> {
    let store = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .build()
        .with_context(|| format!("opening the S3 cold tier s3://{bucket}"))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "s3"))]
fn s3_store(bucket: &str) -> Result<Arc<dyn ObjectStore>> {
    bail!(
        "[cold_tier] url s3://{bucket}/…: this build has no S3 support; build with \
         `cargo build --release -p mosaic-server --features s3`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_bad_ones_are_refused() {
        let data = Path::new("/srv/node1/data");
        assert_eq!(
            ColdTierUrl::parse("", data).unwrap(),
            ColdTierUrl::Dir(PathBuf::from("/srv/node1/cold"))
        );
        assert_eq!(
            ColdTierUrl::parse("file:///mnt/cold", data).unwrap(),
            ColdTierUrl::Dir(PathBuf::from("/mnt/cold"))
        );
        assert_eq!(
            ColdTierUrl::parse("s3://bucket/a/b/", data).unwrap(),
            ColdTierUrl::S3 {
                bucket: "bucket".into(),
                prefix: "a/b".into()
            }
        );
        for bad in ["http://x/y", "s3:///nobucket", "not a url", "file://host/x"] {
            assert!(ColdTierUrl::parse(bad, data).is_err(), "{bad}");
        }
    }

    #[test]
    fn objects_round_trip_with_ranged_reads_and_are_listed_under_the_node() {
        let dir = tempfile::tempdir().unwrap();
        let config = ColdTierConfig {
            url: format!("file://{}", dir.path().display()),
            request_latency_ms: 0,
        };
        let tier = ColdTier::open(&config, Path::new("/unused"), "node-a").unwrap();
        let other = ColdTier::open(&config, Path::new("/unused"), "node-b").unwrap();
        let bytes: Vec<u8> = (0..=255).cycle().take(10_000).collect();
        tier.put("ks/t/primary/000007.sst", bytes.clone()).unwrap();
        other.put("ks/t/primary/000001.sst", vec![1]).unwrap();
        assert_eq!(
            tier.inner
                .get_range("ks/t/primary/000007.sst", 100..110)
                .unwrap(),
            bytes[100..110]
        );
        let f = TableStore::open(&tier, "ks/t/primary/000007.sst").unwrap();
        assert_eq!(f.len(), 10_000);
        let mut buf = [0u8; 16];
        f.read_exact_at(&mut buf, 9_984).unwrap();
        assert_eq!(buf, bytes[9_984..]);
        assert!(f.read_exact_at(&mut buf, 9_990).is_err());
        // An empty read (a degraded read's span past a shorter shard's end) is no request.
        f.read_exact_at(&mut [], 10_000).unwrap();
        assert!(f.read_exact_at(&mut [], 10_001).is_err());
        assert_eq!(
            tier.list("").unwrap(),
            vec![("ks/t/primary/000007.sst".to_owned(), 10_000)]
        );
        assert_eq!(tier.list("ks/t").unwrap().len(), 1);
        assert!(tier.list("ks/u").unwrap().is_empty());
        tier.remove("ks/t/primary/000007.sst").unwrap();
        tier.remove("ks/t/primary/000007.sst").unwrap();
        assert!(tier.list("").unwrap().is_empty());
        let e = TableStore::open(&tier, "ks/t/primary/000007.sst").err();
        assert_eq!(e.map(|e| e.kind()), Some(io::ErrorKind::NotFound));
        assert_eq!(other.list("").unwrap().len(), 1);
    }

    #[test]
    fn every_request_waits_the_configured_latency() {
        let dir = tempfile::tempdir().unwrap();
        let config = ColdTierConfig {
            url: format!("file://{}", dir.path().display()),
            request_latency_ms: 30,
        };
        let tier = ColdTier::open(&config, Path::new("/unused"), "n").unwrap();
        tier.put("x", vec![1, 2, 3]).unwrap();
        let clock = std::time::Instant::now();
        for _ in 0..3 {
            tier.inner.get_range("x", 0..2).unwrap();
        }
        assert!(
            clock.elapsed() >= Duration::from_millis(90),
            "{:?}",
            clock.elapsed()
        );
    }
}
