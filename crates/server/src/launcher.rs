//! `mosaic cluster up|down`: a local cluster of `mosaic server` processes in one directory.
//!
//! Owns the layout of a local cluster directory and the processes in it:
//!
//! ```text
//! DIR/node1/mosaic.toml   the node's config (written once, reused on every `up`)
//! DIR/node1/data/         its data directory
//! DIR/node1/log           its stdout and stderr (appended)
//! DIR/node1/pid           its process id while it runs
//! DIR/cluster.secret      the cluster secret every node's `[internode_auth]` names
//! ```
//!
//! Node *i* listens on 127.0.0.*i* (CQL on `--port`, internode on `--storage-port`, admin
//! on `--admin-port`: the same ports on every node, as on separate hosts), and names
//! node 1 as its seed. `up` starts each node detached (its own session, so it outlives
//! the launcher and a terminal's hangup), waits until each answers an OPTIONS request on
//! its CQL port, then until every node sees every other node UP through gossip, and
//! prints the addresses. `down` sends SIGTERM to each and waits for it to exit. The first
//! `up` makes a random cluster secret (readable by its owner only), so a process that is
//! not one of the cluster's nodes cannot join it, even on this host.
//!
//! A pid file is trusted only if that process's command line still names this node's
//! config, so a stale file whose pid was reused by an unrelated process is never signalled.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::BytesMut;
use clap::{Args, Subcommand};
use mosaic_cql::frame::{encode_request_frame, FrameFlags, Opcode, ProtocolVersion, HEADER_LEN};

use crate::admin::api::Status;
use crate::config::Config;
use crate::durable::write_atomic;

mod add_node;
use add_node::add_node;

/// How long `up` waits for a node to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `down` waits for a node to exit (longer than its own shutdown bound).
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause between two checks of a starting or stopping node.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Lines of the log shown when a node fails to start.
const LOG_TAIL_LINES: usize = 40;
/// Nodes `up` can place on loopback addresses 127.0.0.1..=N.
const NODES_MAX: u32 = 254;

/// `mosaic cluster …`.
#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Start the nodes of a local cluster (reusing their config and data if present).
    Up(UpArgs),
    /// Stop the nodes of a local cluster.
    Down(DownArgs),
    /// Add a node to a running local cluster: it takes balanced tokens, streams the
    /// ranges it will own from their current replicas (progress shown) and serves CQL once
    /// it joined.
    AddNode(AddNodeArgs),
}

/// Options of `mosaic cluster add-node`.
#[derive(Args, Debug)]
pub struct AddNodeArgs {
    /// The cluster directory of a cluster started with `mosaic cluster up`.
    #[arg(long)]
    pub dir: PathBuf,
    /// The new node's datacenter (default: the first node's).
    #[arg(long)]
    pub datacenter: Option<String>,
    /// The new node's rack (default: the first node's).
    #[arg(long)]
    pub rack: Option<String>,
    /// A config key for the new node, as `mosaic cluster up --set`; repeatable (the
    /// first node's config is the starting point).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
    /// The internode address (`IP` or `IP:PORT`) of a dead node this one replaces: the new
    /// node takes its tokens and streams its ranges (`replace_address`). When it is the
    /// address of a node of the directory whose data directory was emptied (the node
    /// dead), that node's slot restarts as its own replacement.
    #[arg(long, value_name = "ADDRESS")]
    pub replace: Option<String>,
    /// A cgroup directory the node joins before it starts, as `mosaic cluster up
    /// --cgroup` (`{node}` stands for the node's number); repeatable.
    #[arg(long = "cgroup", value_name = "DIR")]
    pub cgroups: Vec<String>,
}

/// Options of `mosaic cluster up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// Number of nodes, on 127.0.0.1, 127.0.0.2, …
    #[arg(long, default_value_t = 1)]
    pub nodes: u32,
    /// The cluster directory (created if absent).
    #[arg(long)]
    pub dir: PathBuf,
    /// CQL port of every node, for a new cluster.
    #[arg(long, default_value_t = 9042)]
    pub port: u16,
    /// Internode port of every node, for a new cluster.
    #[arg(long, default_value_t = 7000)]
    pub storage_port: u16,
    /// Admin HTTP port of every node, for a new cluster.
    #[arg(long, default_value_t = 7199)]
    pub admin_port: u16,
    /// Tokens per node, for a new cluster.
    #[arg(long, default_value_t = 16)]
    pub num_tokens: u32,
    /// Datacenters of a new cluster: the nodes split in that many runs of consecutive
    /// nodes, named `dc1`, `dc2`, … (one: every node in `datacenter1`).
    #[arg(long, default_value_t = 1)]
    pub datacenters: u32,
    /// Racks per datacenter of a new cluster: a datacenter's nodes take `rack1`, `rack2`,
    /// … in turn.
    #[arg(long, default_value_t = 1)]
    pub racks: u32,
    /// A config key for every node of a new cluster, as `key=value` in TOML (dotted keys
    /// for sections: `--set cluster.gossip_interval_ms=200`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
    /// A cgroup (v1 or v2) directory each node joins before it starts, so all it allocates
    /// and caches is charged there (`{node}` stands for the node's number, e.g.
    /// `/sys/fs/cgroup/memory/bench-node{node}`; the group must exist); repeatable, one
    /// per hierarchy. What `bench/lib.sh`'s emulated disk-bound regime bounds a node's
    /// memory with.
    #[arg(long = "cgroup", value_name = "DIR")]
    pub cgroups: Vec<String>,
}

/// Applies `key=value` settings (TOML values; bare words are strings) to `config`.
fn apply_settings(config: Config, settings: &[String]) -> Result<Config> {
    if settings.is_empty() {
        return Ok(config);
    }
    let mut table: toml::Table = toml::from_str(&config.to_toml()?)?;
    for setting in settings {
        let (key, value) = setting
            .split_once('=')
            .with_context(|| format!("--set {setting:?}: expected KEY=VALUE"))?;
        let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_owned()));
        let mut parts: Vec<&str> = key.trim().split('.').collect();
        let last = parts
            .pop()
            .filter(|l| !l.is_empty())
            .with_context(|| format!("--set {setting:?}: empty key"))?;
        let mut at = &mut table;
        for part in parts {
            at = at
                .entry(part.to_owned())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                .as_table_mut()
                .with_context(|| format!("--set {setting:?}: {part} is not a section"))?;
        }
        at.insert(last.to_owned(), value);
    }
    Config::parse(&toml::to_string(&table)?).context("applying --set")
}

/// Options of `mosaic cluster down`.
#[derive(Args, Debug)]
pub struct DownArgs {
    /// The cluster directory.
    #[arg(long)]
    pub dir: PathBuf,
}

/// Runs a `cluster` subcommand.
pub fn run(command: ClusterCommand) -> Result<()> {
    match command {
        ClusterCommand::Up(args) => up(&args),
        ClusterCommand::Down(args) => down(&args),
        ClusterCommand::AddNode(args) => add_node(&args),
    }
}

/// One node's files.
struct NodeFiles {
    name: String,
    dir: PathBuf,
}

impl NodeFiles {
    fn new(cluster_dir: &Path, index: u32) -> NodeFiles {
        let name = format!("node{index}");
        NodeFiles {
            dir: cluster_dir.join(&name),
            name,
        }
    }
    fn config(&self) -> PathBuf {
        self.dir.join("mosaic.toml")
    }
    fn pid(&self) -> PathBuf {
        self.dir.join("pid")
    }
    fn log(&self) -> PathBuf {
        self.dir.join("log")
    }
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))
}

fn up(args: &UpArgs) -> Result<()> {
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    if args.nodes > NODES_MAX {
        bail!("--nodes {}: at most {NODES_MAX} local nodes", args.nodes);
    }
    let cluster_dir = absolute(&args.dir)?;
    let mut admins = Vec::new();
    for index in 1..=args.nodes {
        let node = NodeFiles::new(&cluster_dir, index);
        let config = start_node(&node, args, index)?;
        admins.push((node.name.clone(), config));
    }
    if admins.len() > 1 {
        wait_until_all_up(&cluster_dir, &admins)?;
    }
    let addrs: Vec<String> = admins
        .iter()
        .map(|(_, c)| SocketAddr::new(c.rpc_address(), c.native_port).to_string())
        .collect();
    println!(
        "cluster of {} node{} up; CQL on {}",
        admins.len(),
        if admins.len() == 1 { "" } else { "s" },
        addrs.join(", ")
    );
    Ok(())
}

/// Waits until every node reports every node of `nodes` UP through its admin endpoint.
fn wait_until_all_up(cluster_dir: &Path, nodes: &[(String, Config)]) -> Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    let want: Vec<String> = nodes
        .iter()
        .map(|(_, c)| c.storage_endpoint().to_string())
        .collect();
    loop {
        let mut lagging = Vec::new();
        for (name, config) in nodes {
            let Some(admin) = config.admin_address() else {
                continue;
            };
            let status = crate::admin::client::get_as::<Status>(admin, "/status");
            let sees_all = status.is_ok_and(|status| {
                let up: Vec<&str> = status
                    .nodes
                    .iter()
                    .filter(|n| n.up)
                    .map(|n| n.endpoint.as_str())
                    .collect();
                want.iter().all(|w| up.contains(&w.as_str()))
            });
            if !sees_all {
                lagging.push(name.clone());
            }
        }
        if lagging.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "{} did not see every node UP within {} s (the nodes keep running; stop them \
                 with `mosaic cluster down --dir {}`)",
                lagging.join(", "),
                START_TIMEOUT.as_secs(),
                cluster_dir.display()
            );
        }
        std::thread::sleep(POLL_INTERVAL * 4);
    }
}

/// The node's config, written on first use.
fn node_config(node: &NodeFiles, args: &UpArgs, index: u32) -> Result<Config> {
    let path = node.config();
    let port = args.port;
    if path.exists() {
        let config = Config::load(&path)?;
        if config.native_port != port {
            eprintln!(
                "{}: reusing {} (CQL port {}; --port {port} applies to new clusters only)",
                node.name,
                path.display(),
                config.native_port
            );
        }
        return Ok(config);
    }
    fs::create_dir_all(&node.dir).with_context(|| format!("creating {}", node.dir.display()))?;
    let octet = u8::try_from(index).context("node index out of range")?;
    let listen = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, octet));
    let seeds = if args.nodes > 1 {
        vec![format!("127.0.0.1:{}", args.storage_port)]
    } else {
        Vec::new()
    };
    let cluster_dir = node.dir.parent().unwrap_or(&node.dir);
    let (data_center, rack) = location(index, args.nodes, args.datacenters, args.racks);
    // A new cluster's nodes take evenly interleaved tokens: every node owns the same share.
    let initial_token = mosaic_cluster::tokens::even(args.nodes as usize, args.num_tokens as usize)
        .into_iter()
        .nth(index as usize - 1)
        .unwrap_or_default();
    let mut config = Config {
        data_center,
        rack,
        listen_address: listen,
        native_port: port,
        storage_port: args.storage_port,
        admin_port: args.admin_port,
        num_tokens: args.num_tokens,
        initial_token,
        seeds,
        data_dir: node.dir.join("data"),
        worker_threads: worker_threads_each(args.nodes),
        ..Config::default()
    };
    config.internode_auth.secret_file = cluster_secret(cluster_dir)?.to_string_lossy().into_owned();
    let config = apply_settings(config, &args.settings)?;
    let text = format!(
        "# {} of a local cluster, written by `mosaic cluster up`. Keys: docs/mosaic.example.toml\n{}",
        node.name,
        config.to_toml()?
    );
    write_atomic(&path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(config)
}

/// The runtime threads of each of `nodes` local nodes: the cores available to this
/// process shared among them, at least one each (a thread more than its share costs a node
/// cross-thread wake-ups on every request without giving it more CPU).
fn worker_threads_each(nodes: u32) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / nodes.max(1) as usize).max(1)
}

/// The datacenter and rack of node `index` (from 1) of `nodes` spread over `datacenters`
/// of `racks` each (see [`UpArgs::datacenters`]).
fn location(index: u32, nodes: u32, datacenters: u32, racks: u32) -> (String, String) {
    let defaults = Config::default();
    let (nodes, datacenters) = (nodes.max(1), datacenters.clamp(1, nodes.max(1)));
    let at = index.saturating_sub(1);
    // Node `at` of `nodes` in run `dc` of `datacenters` equal runs (earlier runs longer).
    let dc = at * datacenters / nodes;
    let first_of_dc = (dc * nodes).div_ceil(datacenters);
    let data_center = if datacenters == 1 {
        defaults.data_center
    } else {
        format!("dc{}", dc + 1)
    };
    let rack = if racks <= 1 {
        defaults.rack
    } else {
        format!("rack{}", (at - first_of_dc) % racks + 1)
    };
    (data_center, rack)
}

/// The cluster's secret file, made (random, owner-only) if it does not exist yet.
fn cluster_secret(cluster_dir: &Path) -> Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = cluster_dir.join("cluster.secret");
    if path.exists() {
        return Ok(path);
    }
    let secret: [u8; 32] = rand::random();
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(format!("{hex}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

fn start_node(node: &NodeFiles, args: &UpArgs, index: u32) -> Result<Config> {
    let config = node_config(node, args, index)?;
    let config_path = node.config();
    let addr = SocketAddr::new(config.rpc_address(), config.native_port);
    if let Some(pid) = running_pid(node)? {
        println!("{}: already running (pid {pid}) on {addr}", node.name);
        wait_until_serving(node, &config, pid, None)?;
        return Ok(config);
    }
    // Another process answering on the node's address would pass the readiness check
    // while the node itself fails to bind: refuse up front.
    if serving(&config, addr) {
        bail!(
            "{}: another process already serves CQL on {addr}; stop it or choose another --port",
            node.name
        );
    }
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(node.log())
        .with_context(|| format!("opening {}", node.log().display()))?;
    let log_err = log
        .try_clone()
        .with_context(|| format!("opening {}", node.log().display()))?;
    let exe = std::env::current_exe().context("finding the mosaic executable")?;
    let cgroups = cgroup_procs_files(&args.cgroups, index)?;
    let mut command = Command::new(exe);
    command
        .arg("server")
        .arg("--config")
        .arg(&config_path)
        .current_dir(&node.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    // SAFETY: setsid, open, write and close are async-signal-safe and touch no memory of
    // the parent (the paths were built before the fork); setsid detaches the node from the
    // launcher's session and controlling terminal, and writing "0" to a group's
    // `cgroup.procs` moves the writer — the node-to-be — into it.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            for procs in &cgroups {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                let written = libc::write(fd, b"0".as_ptr().cast(), 1);
                let error = io::Error::last_os_error();
                libc::close(fd);
                if written != 1 {
                    return Err(error);
                }
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", node.name))?;
    let pid = child.id();
    write_atomic(&node.pid(), format!("{pid}\n").as_bytes())
        .with_context(|| format!("writing {}", node.pid().display()))?;
    wait_until_serving(node, &config, pid, Some(&mut child))?;
    println!(
        "{}: pid {pid}, CQL on {addr}, data {}, log {}",
        node.name,
        config.data_dir.display(),
        node.log().display()
    );
    Ok(config)
}

/// The `cgroup.procs` files of the groups node `index` joins (`{node}` in each of `groups`
/// replaced by its number); refuses a group that does not exist.
fn cgroup_procs_files(groups: &[String], index: u32) -> Result<Vec<std::ffi::CString>> {
    groups
        .iter()
        .map(|g| {
            let procs = PathBuf::from(g.replace("{node}", &index.to_string())).join("cgroup.procs");
            if !procs.exists() {
                bail!(
                    "--cgroup {g}: no {} (make the group first)",
                    procs.display()
                );
            }
            std::ffi::CString::new(procs.into_os_string().into_encoded_bytes())
                .with_context(|| format!("--cgroup {g}: a NUL byte in the path"))
        })
        .collect()
}

/// Polls until the node serves CQL ([`serving`]), it exits, or the start timeout passes.
fn wait_until_serving(
    node: &NodeFiles,
    config: &Config,
    pid: u32,
    mut child: Option<&mut std::process::Child>,
) -> Result<()> {
    let addr = SocketAddr::new(config.rpc_address(), config.native_port);
    let mut deadline = Instant::now() + START_TIMEOUT;
    let mut last_progress = Instant::now();
    loop {
        let exited = match child.as_deref_mut() {
            Some(c) => c
                .try_wait()
                .with_context(|| format!("checking {}", node.name))?
                .map(|s| s.to_string()),
            None => (!process_alive(pid)).then(|| "exited".to_owned()),
        };
        if let Some(status) = exited {
            let _ = fs::remove_file(node.pid());
            bail!(
                "{} exited during startup ({status}); end of {}:\n{}",
                node.name,
                node.log().display(),
                log_tail(&node.log())
            );
        }
        if serving(config, addr) {
            return Ok(());
        }
        if let Some(progress) = joining_progress(config) {
            // Streaming before it serves: progress, not a hang.
            deadline = Instant::now() + START_TIMEOUT;
            if last_progress.elapsed() >= Duration::from_secs(2) {
                eprintln!("{}: joining — {progress}", node.name);
                last_progress = Instant::now();
            }
        }
        if Instant::now() >= deadline {
            bail!(
                "{} (pid {pid}) did not answer on {addr} within {} s; it is still running \
                 (stop it with `mosaic cluster down`); end of {}:\n{}",
                node.name,
                START_TIMEOUT.as_secs(),
                node.log().display(),
                log_tail(&node.log())
            );
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// While the node configured by `config` joins its cluster: its streaming progress, from
/// its admin endpoint.
fn joining_progress(config: &Config) -> Option<String> {
    let addr = config.admin_address()?;
    let n: crate::admin::api::Netstats = crate::admin::client::get_as(addr, "/netstats").ok()?;
    if n.mode != "Joining" {
        return None;
    }
    let (done, all) = n
        .sessions
        .iter()
        .fold((0, 0), |(d, a), s| (d + s.ranges_done, a + s.ranges_total));
    let bytes: u64 = n.sessions.iter().map(|s| s.bytes).sum();
    Some(format!(
        "{done}/{all} ranges streamed, {:.1} MiB, {:.0} s",
        bytes as f64 / (1 << 20) as f64,
        n.elapsed_ms as f64 / 1000.0
    ))
}

/// Whether the node configured by `config` serves CQL on `addr`: it answers OPTIONS, or,
/// when its CQL port takes TLS clients only (the launcher speaks no TLS), it accepts
/// connections (the CQL port is bound last, once the node is ready).
fn serving(config: &Config, addr: SocketAddr) -> bool {
    let tls = &config.client_encryption;
    if tls.enabled && !tls.optional {
        return TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok();
    }
    answers_options(addr)
}

/// Whether a CQL node on `addr` answers OPTIONS with SUPPORTED.
pub fn answers_options(addr: SocketAddr) -> bool {
    probe_options(addr).unwrap_or(false)
}

fn probe_options(addr: SocketAddr) -> io::Result<bool> {
    let timeout = Duration::from_secs(2);
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let mut frame = BytesMut::new();
    encode_request_frame(
        &mut frame,
        ProtocolVersion::V4,
        FrameFlags::default(),
        0,
        Opcode::Options,
        &[],
    )
    .map_err(io::Error::other)?;
    s.write_all(&frame)?;
    let mut header = [0u8; HEADER_LEN];
    s.read_exact(&mut header)?;
    Ok(header.first() == Some(&0x84) && header.get(4) == Some(&Opcode::Supported.byte()))
}

fn log_tail(path: &Path) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(LOG_TAIL_LINES);
            lines.get(start..).unwrap_or_default().join("\n")
        }
        Err(e) => format!("(cannot read the log: {e})"),
    }
}

use mosaic_env::proc::process_alive;

/// Whether `pid` runs `mosaic server` with `config` (see the module doc).
fn runs_config(pid: u32, config: &Path) -> bool {
    let Some(args) = mosaic_env::proc::cmdline(pid) else {
        return false;
    };
    let config = config.as_os_str().as_encoded_bytes();
    args.iter().any(|a| a == b"server") && args.iter().any(|a| a == config)
}

/// The pid of this node's running server, if its pid file names one; a stale pid file
/// is removed.
fn running_pid(node: &NodeFiles) -> Result<Option<u32>> {
    let path = node.pid();
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let pid = text.trim().parse::<u32>().ok();
    match pid {
        Some(pid) if process_alive(pid) && runs_config(pid, &node.config()) => Ok(Some(pid)),
        _ => {
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            Ok(None)
        }
    }
}

fn down(args: &DownArgs) -> Result<()> {
    let cluster_dir = absolute(&args.dir)?;
    let mut nodes = Vec::new();
    let entries = fs::read_dir(&cluster_dir)
        .with_context(|| format!("listing cluster directory {}", cluster_dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", cluster_dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(index) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u32>().ok())
        {
            if entry.path().join("mosaic.toml").exists() {
                nodes.push(index);
            }
        }
    }
    nodes.sort_unstable();
    if nodes.is_empty() {
        bail!("no nodes in {}", cluster_dir.display());
    }
    let mut failed = Vec::new();
    for index in nodes {
        let node = NodeFiles::new(&cluster_dir, index);
        match stop_node(&node) {
            Ok(()) => {}
            Err(e) => {
                eprintln!("{}: {e:#}", node.name);
                failed.push(node.name);
            }
        }
    }
    if !failed.is_empty() {
        bail!("could not stop {}", failed.join(", "));
    }
    Ok(())
}

fn stop_node(node: &NodeFiles) -> Result<()> {
    let Some(pid) = running_pid(node)? else {
        println!("{}: already stopped", node.name);
        return Ok(());
    };
    let raw = libc::pid_t::try_from(pid).context("pid out of range")?;
    // SAFETY: kill has no memory-safety requirements; the pid was checked to be our node.
    if unsafe { libc::kill(raw, libc::SIGTERM) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(e).context(format!("signalling pid {pid}"));
        }
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    while process_alive(pid) {
        if Instant::now() >= deadline {
            bail!(
                "pid {pid} did not exit within {} s of SIGTERM; end of {}:\n{}",
                STOP_TIMEOUT.as_secs(),
                node.log().display(),
                log_tail(&node.log())
            );
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    fs::remove_file(node.pid()).with_context(|| format!("removing {}", node.pid().display()))?;
    println!("{}: stopped (pid {pid})", node.name);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{cgroup_procs_files, location, worker_threads_each};

    #[test]
    fn local_nodes_share_the_cores_with_at_least_one_thread_each() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(worker_threads_each(1), cores);
        assert_eq!(worker_threads_each(cores as u32), 1);
        assert_eq!(worker_threads_each(cores as u32 * 3 + 1), 1);
        assert_eq!(worker_threads_each(0), cores);
    }

    #[test]
    fn a_node_joins_the_cgroups_named_for_its_number_which_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let group = dir.path().join("bench-node3");
        std::fs::create_dir(&group).unwrap();
        std::fs::write(group.join("cgroup.procs"), "").unwrap();
        let template = format!("{}/bench-node{{node}}", dir.path().display());
        let files = cgroup_procs_files(std::slice::from_ref(&template), 3).unwrap();
        let want = group.join("cgroup.procs");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].to_bytes(), want.as_os_str().as_encoded_bytes());
        let missing = cgroup_procs_files(&[template], 2).unwrap_err().to_string();
        assert!(missing.contains("bench-node2/cgroup.procs"), "{missing}");
        assert!(cgroup_procs_files(&[], 1).unwrap().is_empty());
    }

    #[test]
    fn nodes_spread_over_datacenters_in_runs_and_over_racks_in_turn() {
        let at = |i, n, d, r| location(i, n, d, r);
        let six: Vec<(String, String)> = (1..=6).map(|i| at(i, 6, 2, 2)).collect();
        let names: Vec<(&str, &str)> = six.iter().map(|(d, r)| (d.as_str(), r.as_str())).collect();
        assert_eq!(
            names,
            [
                ("dc1", "rack1"),
                ("dc1", "rack2"),
                ("dc1", "rack1"),
                ("dc2", "rack1"),
                ("dc2", "rack2"),
                ("dc2", "rack1"),
            ]
        );
        // Uneven: the earlier datacenters get the extra nodes.
        let five: Vec<String> = (1..=5).map(|i| at(i, 5, 2, 1).0).collect();
        assert_eq!(five, ["dc1", "dc1", "dc1", "dc2", "dc2"]);
        // One datacenter and one rack: the defaults every node has without flags.
        assert_eq!(
            at(3, 3, 1, 1),
            ("datacenter1".to_owned(), "rack1".to_owned())
        );
        // More datacenters than nodes: one node each.
        let two: Vec<String> = (1..=2).map(|i| at(i, 2, 5, 1).0).collect();
        assert_eq!(two, ["dc1", "dc2"]);
    }
}
