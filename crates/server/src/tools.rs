//! Operator commands over the admin endpoint: `mosaic status`, `flush`, `compact`, `stats`,
//! `compactionstats`, `repair`, `decommission`, `removenode`, `cleanup`.
//!
//! Owns how the cluster is shown to an operator (in the spirit of `nodetool`). Each
//! command asks one node (`--host`, default 127.0.0.1:7199) for the cluster as it sees it,
//! then, for `flush`, `compact` and `stats`, talks to every node it reports UP (or only
//! to that node with `--only`). Exits non-zero when a node could not do what was asked.
//!
//! On nodes with password authentication, commands that change state (`flush`, `compact`,
//! `repair`, `hr optimize`) log in as a superuser ([`Credentials`]): `-u/--username` or
//! `MOSAIC_USERNAME`, and the password from `MOSAIC_PASSWORD`, `--password-file` or
//! `-p/--password` (the last is visible in the process list and shell history, as
//! `nodetool -pw` is; nodetool's `-pwf` is `--password-file` here).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;

use crate::admin::api::{
    Compactions, DecommissionReport, Netstats, RepairReport, Stats, Status, TableOpReport,
};
use crate::admin::client::{self, Login};

mod cleanup;
pub use cleanup::cleanup;

/// The environment variable naming the role the CLI logs in as.
pub const USERNAME_ENV: &str = "MOSAIC_USERNAME";
/// The environment variable holding that role's password.
pub const PASSWORD_ENV: &str = "MOSAIC_PASSWORD";

/// A role's credentials for nodes with password authentication.
#[derive(Args, Debug, Clone, Default)]
pub struct Credentials {
    /// Role to log in as on nodes with password authentication (flush, compact, repair,
    /// cleanup and hr optimize need a superuser); default: $MOSAIC_USERNAME.
    #[arg(short = 'u', long)]
    pub username: Option<String>,
    /// Its password; default: $MOSAIC_PASSWORD. Prefer that or --password-file: a password
    /// on the command line shows in the process list and the shell's history.
    #[arg(short = 'p', long)]
    pub password: Option<String>,
    /// A file whose first line is the password (`-`: read it from standard input).
    #[arg(long, conflicts_with = "password")]
    pub password_file: Option<PathBuf>,
}

impl Credentials {
    /// The login these options and the environment give (`None`: no username anywhere).
    pub fn login(&self) -> Result<Option<Login>> {
        let file = match &self.password_file {
            None => None,
            Some(path) if path.as_os_str() == "-" => {
                let mut line = String::new();
                std::io::stdin()
                    .read_line(&mut line)
                    .context("reading the password from standard input")?;
                Some(line)
            }
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .with_context(|| format!("reading --password-file {}", path.display()))?,
            ),
        };
        resolve_login(
            self.username.clone(),
            self.password.clone(),
            file,
            std::env::var(USERNAME_ENV).ok(),
            std::env::var(PASSWORD_ENV).ok(),
        )
    }
}

/// The login from the options (`username`, `password`, a password file's text) and the
/// environment: options win, then the file, then the environment.
fn resolve_login(
    username: Option<String>,
    password: Option<String>,
    password_file: Option<String>,
    env_username: Option<String>,
    env_password: Option<String>,
) -> Result<Option<Login>> {
    let non_empty = |v: Option<String>| v.filter(|v| !v.is_empty());
    let from_file = password_file.map(|text| text.lines().next().unwrap_or("").to_owned());
    let password = non_empty(password)
        .or(non_empty(from_file))
        .or(non_empty(env_password));
    let Some(username) = non_empty(username).or(non_empty(env_username)) else {
        if password.is_some() {
            bail!("a password was given without a role: add -u/--username or {USERNAME_ENV}");
        }
        return Ok(None);
    };
    let Some(password) = password else {
        bail!(
            "no password for {username}: set {PASSWORD_ENV} or use --password-file (or \
             -p/--password)"
        );
    };
    Ok(Some(Login { username, password }))
}

/// Where to find a node's admin endpoint.
#[derive(Args, Debug, Clone)]
pub struct HostArgs {
    /// A node's admin address: IP (port 7199) or IP:port.
    #[arg(long, default_value = "127.0.0.1:7199")]
    pub host: String,
    /// Act on that node only, not on every live node of its cluster.
    #[arg(long)]
    pub only: bool,
    #[command(flatten)]
    pub credentials: Credentials,
}

/// Options of commands on one node's tables, all or a keyspace's or one table's (`mosaic
/// repair`, `mosaic cleanup`).
#[derive(Args, Debug, Clone)]
pub struct ScopeArgs {
    /// The node: its admin address, IP (port 7199) or IP:port.
    #[arg(long, default_value = "127.0.0.1:7199")]
    pub host: String,
    /// Only this keyspace.
    pub keyspace: Option<String>,
    /// Only this table of the keyspace.
    pub table: Option<String>,
    #[command(flatten)]
    pub credentials: Credentials,
}

/// Options of `mosaic compactionstats`.
#[derive(Args, Debug, Clone)]
pub struct CompactionStatsArgs {
    #[command(flatten)]
    pub host: HostArgs,
    /// Wait until no node has a flush or compaction running or due (two looks in a row,
    /// half a second apart, so writes still reaching replicas are waited for too).
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this many seconds, exiting non-zero.
    #[arg(long, default_value_t = 3600)]
    pub timeout_s: u64,
    /// Print JSON: every node's answer, and with --wait the seconds waited.
    #[arg(long)]
    pub json: bool,
}

/// Options of commands acting on one node (`mosaic decommission`, `mosaic netstats`).
#[derive(Args, Debug, Clone)]
pub struct NodeArgs {
    /// The node: its admin address, IP (port 7199) or IP:port.
    #[arg(long, default_value = "127.0.0.1:7199")]
    pub host: String,
    #[command(flatten)]
    pub credentials: Credentials,
}

impl ScopeArgs {
    /// As [`HostArgs`] naming this node only.
    pub fn host_args(&self) -> HostArgs {
        HostArgs {
            host: self.host.clone(),
            only: true,
            credentials: self.credentials.clone(),
        }
    }
}

/// The admin path `/OP[?keyspace=K[&table=T]]`.
pub(crate) fn scope_path(op: &str, keyspace: Option<&str>, table: Option<&str>) -> String {
    let mut path = format!("/{op}");
    if let Some(ks) = keyspace {
        path.push_str(&format!("?keyspace={ks}"));
        if let Some(t) = table {
            path.push_str(&format!("&table={t}"));
        }
    }
    path
}

impl NodeArgs {
    /// As [`HostArgs`] naming this node only.
    pub fn host_args(&self) -> HostArgs {
        HostArgs {
            host: self.host.clone(),
            only: true,
            credentials: self.credentials.clone(),
        }
    }
}

impl HostArgs {
    pub fn addr(&self) -> Result<SocketAddr> {
        admin_addr(&self.host)
    }
}

/// An admin endpoint given as `IP:port` or `IP` (port 7199).
pub fn admin_addr(host: &str) -> Result<SocketAddr> {
    if let Ok(a) = host.parse::<SocketAddr>() {
        return Ok(a);
    }
    let ip: IpAddr = host
        .parse()
        .with_context(|| format!("--host {host:?} is neither IP nor IP:port"))?;
    Ok(SocketAddr::new(ip, 7199))
}

/// The admin addresses of the live nodes `args` designates.
fn targets(args: &HostArgs) -> Result<Vec<(String, SocketAddr)>> {
    let addr = args.addr()?;
    if args.only {
        return Ok(vec![(addr.to_string(), addr)]);
    }
    let status: Status = client::get_as(addr, "/status")?;
    let mut out = Vec::new();
    for n in status.nodes {
        let ip: Option<IpAddr> = n.rpc_address.parse().ok();
        match (n.up, ip, n.admin_port) {
            (true, Some(ip), port) if port != 0 => {
                out.push((n.endpoint, SocketAddr::new(ip, port)))
            }
            (true, _, _) => eprintln!("{}: no admin endpoint; skipped", n.endpoint),
            _ => eprintln!("{}: DOWN; skipped", n.endpoint),
        }
    }
    Ok(out)
}

/// Human bytes.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS.get(unit).unwrap_or(&"B"))
}

/// `num` per `den`, 0 when `den` is.
fn per(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// `mosaic status`: every node, UP/DOWN, load, tokens, ownership, grouped by datacenter
/// as `nodetool status` does.
pub fn status(args: &HostArgs) -> Result<()> {
    let status: Status = client::get_as(args.addr()?, "/status")?;
    let mut dcs: Vec<&str> = status
        .nodes
        .iter()
        .map(|n| n.data_center.as_str())
        .collect();
    dcs.sort_unstable();
    dcs.dedup();
    if dcs.is_empty() {
        dcs.push("datacenter1");
    }
    for (i, dc) in dcs.iter().enumerate() {
        if i > 0 {
            println!();
        }
        let title = format!("Datacenter: {dc}");
        println!("{title}\n{}", "=".repeat(title.len()));
        println!("Status=Up/Down  (as seen by {})", status.endpoint);
        println!("|/ State=Normal/Leaving/Joining/Moving");
        println!(
            "--  {:<22} {:<11} {:>6} {:>7}  {:<36} Rack",
            "Address", "Load", "Tokens", "Owns", "Host ID"
        );
        // A node that left the ring is gossiped for a while but no longer listed.
        for n in status
            .nodes
            .iter()
            .filter(|n| n.data_center == *dc && n.state != "Left")
        {
            println!(
                "{:<3} {:<22} {:<11} {:>6} {:>6.1}%  {:<36} {}",
                state_letters(n.up, &n.state),
                n.endpoint,
                bytes(n.load_bytes),
                n.tokens,
                n.owns * 100.0,
                n.host_id,
                n.rack,
            );
        }
    }
    let s = &status.scheduling;
    if !s.replica_selection.is_empty() {
        let decisions: Vec<String> = s
            .decisions
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "Replica selection: {} ({})",
            s.replica_selection,
            decisions.join(", ")
        );
    }
    if let Some(r) = &s.read_stage {
        let mean_wait = r.wait_micros_total.checked_div(r.queued_total).unwrap_or(0);
        println!(
            "Read stage: {} × {}{} ({} running, {} waiting; {} ran at once, {} queued, mean \
             wait {} µs, {} dropped past the timeout, {} sized){}",
            r.local_queue,
            r.read_concurrency,
            match r.reserved_slots {
                0 => String::new(),
                n => format!(", {n} reserved for first-priority reads"),
            },
            r.running,
            r.waiting,
            r.inline_total,
            r.queued_total,
            mean_wait,
            r.dropped_total,
            r.sized_total,
            if s.size_oracle.is_empty() {
                String::new()
            } else {
                format!("; reads tagged by the {} oracle", s.size_oracle)
            }
        );
    }
    Ok(())
}

/// `nodetool status`'s two letters: U(p) or D(own), then N(ormal), J(oining),
/// L(eaving) — a node that left shows as L too.
fn state_letters(up: bool, state: &str) -> String {
    let s = match state {
        "Joining" => 'J',
        "Leaving" | "Left" => 'L',
        _ => 'N',
    };
    format!("{}{s}", if up { 'U' } else { 'D' })
}

/// `mosaic netstats`: the streams of a node's join or leave, as `nodetool netstats`.
pub fn netstats(args: &HostArgs) -> Result<()> {
    let n: Netstats = client::get_as(args.addr()?, "/netstats")?;
    println!("Mode: {}", n.mode.to_uppercase());
    if n.operation.is_empty() {
        println!("Not sending or receiving any streams.");
        return Ok(());
    }
    let state = match (&n.error, n.finished) {
        (Some(e), _) => format!("failed: {e}"),
        (None, true) => "finished".to_owned(),
        (None, false) => "in progress".to_owned(),
    };
    println!(
        "{} {state} after {:.1} s; {} entries copied to new roles; \
         {} partitions' lightweight transactions repaired",
        n.operation,
        n.elapsed_ms as f64 / 1000.0,
        n.rehomed_entries,
        n.paxos_repaired
    );
    for s in &n.sessions {
        println!(
            "    {} {}: {}/{} ranges, {} entries, {}",
            s.direction,
            s.peer,
            s.ranges_done,
            s.ranges_total,
            s.entries,
            bytes(s.bytes)
        );
    }
    Ok(())
}

/// `mosaic decommission`: the node at `--host` streams its ranges to the nodes that will
/// own them, leaves the ring and stops; progress is printed while it runs.
pub fn decommission(host: &HostArgs) -> Result<()> {
    let addr = host.addr()?;
    let login = host.credentials.login()?;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_secs(2));
                if let Ok(n) = client::get_as::<Netstats>(addr, "/netstats") {
                    let (got, all) = n
                        .sessions
                        .iter()
                        .fold((0, 0), |(g, a), s| (g + s.ranges_done, a + s.ranges_total));
                    let sent: u64 = n.sessions.iter().map(|s| s.bytes).sum();
                    eprint!(
                        "\r{addr}: {} — {got}/{all} ranges streamed, {}   ",
                        n.mode,
                        bytes(sent)
                    );
                }
            }
        })
    };
    let result = client::post_as::<DecommissionReport>(addr, "/decommission", login.as_ref());
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = watcher.join();
    eprintln!();
    let report = match result {
        Ok(r) => r,
        Err(e) => bail!("decommission of {addr} failed: {e:#}"),
    };
    let sent: u64 = report.streams.sessions.iter().map(|s| s.bytes).sum();
    let entries: u64 = report.streams.sessions.iter().map(|s| s.entries).sum();
    println!(
        "{addr}: decommissioned in {:.1} s ({entries} entries, {} streamed); the node left the ring and stops",
        report.streams.elapsed_ms as f64 / 1000.0,
        bytes(sent)
    );
    Ok(())
}

/// `mosaic removenode HOST_ID`: the node at `--host` takes the dead node out of the ring
/// and has the survivors re-replicate its ranges.
pub fn removenode(host: &HostArgs, host_id: &str) -> Result<()> {
    let addr = host.addr()?;
    let login = host.credentials.login()?;
    let path = format!("/removenode?host_id={host_id}");
    let report = match client::post_as::<DecommissionReport>(addr, &path, login.as_ref()) {
        Ok(r) => r,
        Err(e) => bail!("removenode {host_id} through {addr} failed: {e:#}"),
    };
    let moved: u64 = report.streams.sessions.iter().map(|s| s.bytes).sum();
    let entries: u64 = report.streams.sessions.iter().map(|s| s.entries).sum();
    println!(
        "{host_id} removed in {:.1} s: its ranges re-replicated ({entries} entries, {})",
        report.streams.elapsed_ms as f64 / 1000.0,
        bytes(moved)
    );
    Ok(())
}

/// `mosaic flush` / `mosaic compact`: the operation on every table of each target node.
pub fn table_op(args: &HostArgs, op: &str) -> Result<()> {
    let login = args.credentials.login()?;
    let mut failed = Vec::new();
    for (name, addr) in targets(args)? {
        match client::post_as::<TableOpReport>(addr, &format!("/{op}"), login.as_ref()) {
            Ok(report) => println!("{name}: {op} done on {} tables", report.tables),
            Err(e) => {
                eprintln!("{name}: {op} failed: {e:#}");
                failed.push(name);
            }
        }
    }
    if !failed.is_empty() {
        bail!("{op} failed on {}", failed.join(", "));
    }
    Ok(())
}

/// `mosaic stats`: per node and table, its layout, write and read amplification, files per
/// level, and for layouts of several structures (primary tree, source trees, log) the same
/// per structure.
pub fn stats(args: &HostArgs, json: bool) -> Result<()> {
    let mut all = serde_json::Map::new();
    for (name, addr) in targets(args)? {
        let v = client::get(addr, "/stats").with_context(|| format!("asking {name}"))?;
        if json {
            all.insert(name, v);
            continue;
        }
        let stats: Stats = serde_json::from_value(v)
            .with_context(|| format!("{name} answered /stats with an unexpected shape"))?;
        println!("{name}");
        if let Some(e) = &stats.engine {
            print_engine_stats(e);
        }
        if let Some(h) = &stats.hints {
            let cap = match h.bytes_max_per_host {
                0 => "no cap".to_owned(),
                n => format!("{} per host", bytes(n)),
            };
            println!(
                "  hints: {} pending ({}, most for one host {}, {cap}), {} dropped at the cap",
                h.pending,
                bytes(h.bytes),
                bytes(h.bytes_max_held),
                h.dropped
            );
        }
        for t in &stats.tables {
            print_table_stats(t);
        }
    }
    if json {
        println!("{}", Value::Object(all));
    }
    Ok(())
}

/// The node engine's line of `mosaic stats`: budgets in use, the shared log, stalls.
fn print_engine_stats(e: &crate::admin::api::EngineStats) {
    let space = match e.memtable_space_bytes {
        0 => "unlimited".to_owned(),
        n => bytes(n as u64),
    };
    println!(
        "  engine: {} partitions, memtables {} of {space}, block cache {} of {}{}, commit log {}, \
         {} runtime + {} flush + {} compaction threads, stalls {} ({:.1} s, {} timed out), slowdowns {} ({:.1} s), \
         {:.2} disk reads and {:.0} B per get",
        e.partitions,
        bytes(e.memtable_bytes as u64),
        bytes(e.block_cache_bytes),
        bytes(e.block_cache_capacity_bytes),
        match (e.cache_index_and_filter_blocks, e.block_cache_hits + e.block_cache_misses) {
            (true, 0) => " (index and filter blocks in it)".to_owned(),
            (false, 0) => String::new(),
            (metadata, lookups) => format!(
                " ({}{:.1}% hits)",
                if metadata { "index and filter blocks in it, " } else { "" },
                e.block_cache_hits as f64 * 100.0 / lookups as f64
            ),
        },
        bytes(e.wal_bytes),
        e.worker_threads,
        e.flush_threads,
        e.compaction_threads,
        e.write_stalls,
        e.write_stall_micros as f64 / 1e6,
        e.write_stall_timeouts,
        e.write_slowdowns,
        e.write_slowdown_micros as f64 / 1e6,
        per(e.get_block_reads, e.gets),
        per(e.get_bytes_read, e.gets),
    );
    if e.counter_cache_capacity_bytes > 0 {
        println!(
            "  counter cache: {} entries, {} of {}, {} hits, {} misses",
            e.counter_cache_entries,
            bytes(e.counter_cache_bytes),
            bytes(e.counter_cache_capacity_bytes),
            e.counter_cache_hits,
            e.counter_cache_misses,
        );
    }
}

/// One table of `mosaic stats`: a summary line, then one line per structure when the
/// layout has several.
fn print_table_stats(t: &crate::admin::api::TableEntry) {
    let Some(s) = &t.stats else {
        println!("  {}: {}", t.table, t.error.as_deref().unwrap_or("?"));
        return;
    };
    let levels: Vec<String> = s
        .levels
        .iter()
        .map(|l| format!("L{}:{}", l.level, l.files))
        .collect();
    println!(
        "  {} ({}): user {} written, WA {:.2}, {:.2} tables probed/get, {:.2} disk reads/get, {:.0} B read/get, memtables {}, files {}, hot {}, cold {}",
        t.table,
        s.layout,
        bytes(s.counters.user_bytes_written),
        s.counters.write_amplification,
        s.counters.tables_probed_per_get,
        s.counters.block_reads_per_get,
        s.counters.bytes_read_per_get,
        bytes(s.memtable_bytes as u64),
        levels.join(" "),
        bytes(s.hot_bytes),
        bytes(s.cold_bytes),
    );
    if s.counters.ingested_tables > 0 {
        println!(
            "    streamed in as tables: {} in {} tables (no commit log, memtable or compaction)",
            bytes(s.counters.ingest_bytes_written),
            s.counters.ingested_tables,
        );
    }
    if s.layout == "erasure-tiered" {
        println!(
            "    erasure coding: {} of the primary tree coded, parity {} hot + {} cold, {} keys of other nodes' coded tables dropped here",
            bytes(s.coded_bytes),
            bytes(s.parity_bytes),
            bytes(s.cold_parity_bytes),
            s.covered_keys
        );
        if !s.decoded_tables.is_empty() {
            let (size, decoded) = s
                .decoded_tables
                .iter()
                .fold((0, 0), |(a, b), t| (a + t.bytes, b + t.decoded));
            println!(
                "    degraded reads: {} of {} lost tables ({}) decoded here",
                bytes(decoded),
                s.decoded_tables.len(),
                bytes(size),
            );
        }
    }
    // A uniform table is one structure, already shown in full above.
    if s.structures.len() < 2 {
        return;
    }
    for st in &s.structures {
        println!(
            "    {:<38} flush {}, compaction {} written, {:.2} tables probed/get, {:.2} disk reads/get, {:.0} B read/get, memtables {}",
            st.structure,
            bytes(st.counters.flush_bytes_written),
            bytes(st.counters.compaction_bytes_written),
            st.counters.tables_probed_per_get,
            st.counters.block_reads_per_get,
            st.counters.bytes_read_per_get,
            bytes(st.memtable_bytes as u64),
        );
    }
}

/// Pause between two looks of `compactionstats --wait`.
const COMPACTION_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// `mosaic compactionstats`: each node's flushes and compactions running or due; with
/// `--wait`, once every node is idle (two looks in a row), and how long that took.
pub fn compactionstats(args: &CompactionStatsArgs) -> Result<()> {
    let nodes = targets(&args.host)?;
    let start = std::time::Instant::now();
    let deadline = start + std::time::Duration::from_secs(args.timeout_s);
    let mut idle_since: Option<std::time::Duration> = None;
    let mut last_report = start;
    loop {
        let mut answers = Vec::with_capacity(nodes.len());
        for (name, addr) in &nodes {
            let c: Compactions =
                client::get_as(*addr, "/compactions").with_context(|| format!("asking {name}"))?;
            answers.push((name.as_str(), c));
        }
        let all_idle = answers.iter().all(|(_, c)| c.idle);
        let done = match (all_idle, idle_since) {
            (false, _) => {
                idle_since = None;
                false
            }
            (true, Some(_)) => true,
            (true, None) => {
                idle_since = Some(start.elapsed());
                false
            }
        };
        if !args.wait || done {
            let waited_s = idle_since.unwrap_or_default().as_secs_f64();
            print_compactions(&answers, args.json, args.wait.then_some(waited_s))?;
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            print_compactions(&answers, args.json, None)?;
            bail!(
                "the nodes still had background work after {} s",
                args.timeout_s
            );
        }
        if last_report.elapsed() >= std::time::Duration::from_secs(30) {
            let busy: Vec<&str> = answers
                .iter()
                .filter(|(_, c)| !c.idle)
                .map(|(n, _)| *n)
                .collect();
            eprintln!(
                "waiting for compactions: {:.0} s, busy: {}",
                start.elapsed().as_secs_f64(),
                busy.join(", ")
            );
            last_report = std::time::Instant::now();
        }
        std::thread::sleep(COMPACTION_POLL);
    }
}

/// `compactionstats`' output: a line per node (or JSON), and the wait if there was one.
fn print_compactions(
    answers: &[(&str, Compactions)],
    json: bool,
    waited_s: Option<f64>,
) -> Result<()> {
    if json {
        let nodes: serde_json::Map<String, Value> = answers
            .iter()
            .map(|(n, c)| Ok(((*n).to_owned(), serde_json::to_value(c)?)))
            .collect::<Result<_>>()?;
        let mut out = serde_json::Map::new();
        out.insert("nodes".into(), Value::Object(nodes));
        if let Some(s) = waited_s {
            out.insert(
                "waited_s".into(),
                serde_json::json!((s * 1000.0).round() / 1000.0),
            );
        }
        println!("{}", Value::Object(out));
        return Ok(());
    }
    for (name, c) in answers {
        if c.idle {
            println!("{name}: idle ({} level-0 tables)", c.level0_tables);
            continue;
        }
        println!(
            "{name}: flushes {} pending ({} running), compactions {} running and {} due ({} \
             to read), {} level-0 tables",
            c.flushes_pending,
            c.flushes_running,
            c.compactions_running,
            c.compactions_due,
            bytes(c.compaction_due_bytes),
            c.level0_tables
        );
    }
    if let Some(s) = waited_s {
        println!("all {} nodes idle after {s:.1} s", answers.len());
    }
    Ok(())
}

/// `mosaic repair`: repairs the ranges one node replicates; fails if any could not be.
pub fn repair(host: &HostArgs, keyspace: Option<&str>, table: Option<&str>) -> Result<()> {
    let addr = host.addr()?;
    let login = host.credentials.login()?;
    let path = scope_path("repair", keyspace, table);
    let v: RepairReport = match client::post_as(addr, &path, login.as_ref()) {
        Ok(v) => v,
        Err(e) => bail!("repair on {addr} did not complete: {e:#}"),
    };
    println!(
        "repair on {addr}: {} tables, {} ranges, {} of {} leaves differed, {} entries ({}) streamed",
        v.tables,
        v.ranges,
        v.leaves_mismatched,
        v.leaves,
        v.entries_streamed,
        bytes(v.bytes_streamed),
    );
    if v.shards_rebuilt > 0 {
        println!(
            "repair on {addr}: {} lost coding shards rebuilt from their groups",
            v.shards_rebuilt
        );
    }
    if v.paxos_repaired > 0 {
        println!(
            "repair on {addr}: {} partitions' lightweight transactions finished or brought \
             up to date on every replica",
            v.paxos_repaired
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn credentials_come_from_options_then_the_file_then_the_environment() {
        let login = |u, p, f, eu, ep| {
            resolve_login(u, p, f, eu, ep)
                .map(|l| l.map(|l| (l.username, l.password)))
                .map_err(|e| e.to_string())
        };
        assert_eq!(login(None, None, None, None, None), Ok(None));
        let env = login(None, None, None, some("admin"), some("envpw"));
        assert_eq!(env, Ok(Some(("admin".into(), "envpw".into()))));
        let file = login(some("u"), None, some("filepw\nrest\n"), None, some("envpw"));
        assert_eq!(file, Ok(Some(("u".into(), "filepw".into()))));
        let flag = login(
            some("u"),
            some("flagpw"),
            None,
            some("other"),
            some("envpw"),
        );
        assert_eq!(flag, Ok(Some(("u".into(), "flagpw".into()))));
        let missing = login(some("u"), None, None, None, None).unwrap_err();
        assert!(missing.contains(PASSWORD_ENV), "{missing}");
        let orphan = login(None, None, None, None, some("pw")).unwrap_err();
        assert!(orphan.contains("--username"), "{orphan}");
    }
}
