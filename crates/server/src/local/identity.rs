//! This node as the system tables and write timestamps see it: host id, tokens,
//! addresses, release, and its strictly increasing write clock.

use super::*;

/// Microseconds since the Unix epoch by the wall clock.
pub(crate) fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

impl LocalCoordinator {
    /// A write timestamp: microseconds since the epoch, strictly increasing here.
    pub fn new_timestamp(&self) -> i64 {
        let now = now_micros();
        let next = |last: i64| now.max(last.saturating_add(1));
        match self
            .clock
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| Some(next(last)))
        {
            Ok(prev) | Err(prev) => next(prev),
        }
    }

    /// Local time in seconds.
    pub fn now_secs(&self) -> i64 {
        now_micros() / 1_000_000
    }

    /// This node as `system.local` describes it.
    pub fn local_node(&self) -> NodeInfo {
        NodeInfo {
            host_id: self.identity.host_id,
            rpc_address: self.rpc_address,
            native_port: self.native_port,
            broadcast_address: self.rpc_address,
            data_center: self.data_center.clone(),
            rack: self.rack.clone(),
            tokens: self.tokens.clone(),
            schema_version: self.catalog().version,
            release_version: RELEASE_VERSION.to_owned(),
            up: true,
        }
    }

    /// Cluster-wide facts.
    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            cluster_name: self.cluster_name.clone(),
            partitioner: PARTITIONER.to_owned(),
        }
    }
}
