//! A local cluster started by `mosaic cluster up` in a temporary directory, stopped however
//! the test ends: `cluster down`, then SIGKILL to any node process left (checked to run
//! this cluster's config).

use std::path::PathBuf;

use super::{free_port, output_text as text, run_mosaic as mosaic, signal, wait_for};

/// The cluster and its directory.
pub struct Cluster {
    pub dir: PathBuf,
    /// The CQL port of every node.
    pub port: u16,
    /// The admin port of every node.
    pub admin: u16,
    nodes: u32,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    /// Starts `nodes` nodes (gossip every 200 ms) with `flags` added to `cluster up`'s.
    pub fn up(nodes: u32, flags: &str) -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("c");
        let (port, storage, admin) = (free_port(), free_port(), free_port());
        let cluster = Cluster {
            dir,
            port,
            admin,
            nodes,
            _tmp: tmp,
        };
        let all = format!(
            "--nodes {nodes} --port {port} --storage-port {storage} --admin-port {admin} \
             --set cluster.gossip_interval_ms=200 {flags}"
        );
        let mut args = vec!["cluster", "up", "--dir", cluster.dir.to_str().unwrap()];
        args.extend(all.split_whitespace());
        let out = mosaic(&args);
        assert!(out.status.success(), "{}\n{}", text(&out), cluster.logs());
        cluster
    }

    pub fn node_file(&self, i: u32, name: &str) -> PathBuf {
        self.dir.join(format!("node{i}/{name}"))
    }

    pub fn logs(&self) -> String {
        (1..=self.nodes)
            .map(|i| {
                let log = std::fs::read_to_string(self.node_file(i, "log")).unwrap_or_default();
                format!("--- node{i}:\n{log}")
            })
            .collect()
    }

    /// Node `i`'s process id while its pid file names a process running its config.
    fn running_pid(&self, i: u32) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(self.node_file(i, "pid"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let config = self.node_file(i, "mosaic.toml");
        let runs_ours = std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
            c.split(|&b| b == 0)
                .any(|a| a == config.as_os_str().as_encoded_bytes())
        });
        runs_ours.then_some(pid)
    }

    /// Stops node `i` cleanly (SIGTERM: it announces its shutdown through gossip) and
    /// waits until its process is gone.
    pub fn stop(&self, i: u32) {
        let Some(pid) = self.running_pid(i) else {
            return;
        };
        signal(pid, libc::SIGTERM);
        wait_for(&format!("node{i} to exit"), || {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie its detached parent has not reaped.
            (state.is_empty() || state.contains(") Z ")).then_some(())
        });
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pids: Vec<Option<u32>> = (1..=self.nodes).map(|i| self.running_pid(i)).collect();
        let _ = mosaic(&["cluster", "down", "--dir", self.dir.to_str().unwrap()]);
        for (i, pid) in (1..=self.nodes).zip(pids) {
            if pid.is_some() && self.running_pid(i) == pid {
                if let Some(pid) = pid {
                    signal(pid, libc::SIGKILL);
                }
            }
        }
    }
}
