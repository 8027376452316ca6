//! What a container deployment relies on (issue 14, docs/deploy.md), against real `mosaic
//! server` processes: two nodes given the same config file, one of them told its address by
//! `MOSAIC_LISTEN_ADDRESS` and its seed by `MOSAIC_SEEDS` as a DNS name without a port (the
//! way a StatefulSet pod gets its pod IP and `mosaic-0.mosaic-peers`), form one cluster in
//! which each sees the other UP at the address the environment gave.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{free_port, http, options_answered, wait_for};

/// A `mosaic server` process, killed when dropped if still running.
struct Server {
    child: Child,
    log: std::path::PathBuf,
}

impl Server {
    fn start(dir: &Path, config: &Path, env: &[(&str, String)]) -> Server {
        let log = dir.join("log");
        let out = std::fs::File::create(&log).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_mosaic"));
        command
            .args(["server", "--config"])
            .arg(config)
            .env_remove("MOSAIC_LISTEN_ADDRESS")
            .env_remove("MOSAIC_BROADCAST_ADDRESS")
            .env_remove("MOSAIC_SEEDS")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        for (var, value) in env {
            command.env(var, value);
        }
        Server {
            child: command.spawn().unwrap(),
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The endpoints the node at `admin` sees UP.
fn up_endpoints(admin: SocketAddr) -> Vec<String> {
    let (code, body) = http(admin, "GET", "/status", &[("Host", "127.0.0.1")]);
    if code != 200 {
        return Vec::new();
    }
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["up"] == true)
        .map(|n| n["endpoint"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_node_given_its_address_and_a_seed_name_by_the_environment_joins_the_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let (native, storage, admin) = (free_port(), free_port(), free_port());
    // One file for both nodes, as a ConfigMap is: it names no address (the default,
    // 127.0.0.1, is node 1's) and no seeds.
    let config = tmp.path().join("mosaic.toml");
    std::fs::write(
        &config,
        format!(
            "native_port = {native}\nstorage_port = {storage}\nadmin_port = {admin}\n\
             data_dir = \"data\"\nshutdown_timeout_ms = 5000\n"
        ),
    )
    .unwrap();
    let dirs = [tmp.path().join("n1"), tmp.path().join("n2")];
    for dir in &dirs {
        std::fs::create_dir_all(dir).unwrap();
        // data_dir is relative to the file: each node gets its own copy of it.
        std::fs::copy(&config, dir.join("mosaic.toml")).unwrap();
    }
    let first = Server::start(&dirs[0], &dirs[0].join("mosaic.toml"), &[]);
    let first_cql = SocketAddr::from(([127, 0, 0, 1], native));
    wait_for("node 1 to serve CQL", || {
        options_answered(first_cql).then_some(())
    });
    // `localhost` resolves to 127.0.0.1 (node 1) on node 1's storage port.
    let mut second = Server::start(
        &dirs[1],
        &dirs[1].join("mosaic.toml"),
        &[
            ("MOSAIC_LISTEN_ADDRESS", "127.0.0.2".to_owned()),
            ("MOSAIC_SEEDS", "localhost".to_owned()),
        ],
    );
    let second_cql = SocketAddr::from(([127, 0, 0, 2], native));
    wait_for(
        "node 2 to serve CQL on the address the environment gave",
        || {
            if let Some(status) = second.child.try_wait().unwrap() {
                panic!("node 2 exited ({status}):\n{}", second.log());
            }
            options_answered(second_cql).then_some(())
        },
    );
    let endpoints = [
        format!("127.0.0.1:{storage}"),
        format!("127.0.0.2:{storage}"),
    ];
    for admin in [
        SocketAddr::from(([127, 0, 0, 1], admin)),
        SocketAddr::from(([127, 0, 0, 2], admin)),
    ] {
        wait_for(&format!("{admin} to see both nodes UP"), || {
            let up = up_endpoints(admin);
            endpoints.iter().all(|e| up.contains(e)).then_some(())
        });
    }
    assert!(second.log().contains("seed resolved"), "{}", second.log());
    drop(second);
    drop(first);
}
