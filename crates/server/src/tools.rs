//! Operator commands over the admin endpoint: `mosaic status`, `flush`, `compact`, `stats`.
//!
//! Owns how the cluster is shown to an operator (in the spirit of `nodetool`). Each
//! command asks one node (`--host`, default 127.0.0.1:7199) for the cluster as it sees it,
//! then, for `flush`, `compact` and `stats`, talks to every node it reports UP (or only
//! to that node with `--only`). Exits non-zero when a node could not do what was asked.

use std::net::{IpAddr, SocketAddr};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;

use crate::admin;

/// Where to find a node's admin endpoint.
#[derive(Args, Debug, Clone)]
pub struct HostArgs {
    /// A node's admin address: IP (port 7199) or IP:port.
    #[arg(long, default_value = "127.0.0.1:7199")]
    pub host: String,
    /// Act on that node only, not on every live node of its cluster.
    #[arg(long)]
    pub only: bool,
}

/// Options of `mosaic repair`.
#[derive(Args, Debug, Clone)]
pub struct RepairArgs {
    /// The node whose ranges to repair: its admin address, IP (port 7199) or IP:port.
    #[arg(long, default_value = "127.0.0.1:7199")]
    pub host: String,
    /// Only this keyspace.
    pub keyspace: Option<String>,
    /// Only this table of the keyspace.
    pub table: Option<String>,
}

impl HostArgs {
    fn addr(&self) -> Result<SocketAddr> {
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
    let status = admin::get(addr, "/status")?;
    let mut out = Vec::new();
    for n in status["nodes"].as_array().into_iter().flatten() {
        let endpoint = n["endpoint"].as_str().unwrap_or("?").to_owned();
        let ip: Option<IpAddr> = n["rpc_address"].as_str().and_then(|s| s.parse().ok());
        let port = n["admin_port"].as_u64().and_then(|p| u16::try_from(p).ok());
        match (n["up"].as_bool(), ip, port) {
            (Some(true), Some(ip), Some(port)) if port != 0 => {
                out.push((endpoint, SocketAddr::new(ip, port)))
            }
            (Some(true), _, _) => eprintln!("{endpoint}: no admin endpoint; skipped"),
            _ => eprintln!("{endpoint}: DOWN; skipped"),
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

/// `mosaic status`: every node, UP/DOWN, load, tokens, ownership.
pub fn status(args: &HostArgs) -> Result<()> {
    let status = admin::get(args.addr()?, "/status")?;
    let nodes = status["nodes"].as_array().cloned().unwrap_or_default();
    println!(
        "Datacenter: {}",
        nodes
            .first()
            .and_then(|n| n["data_center"].as_str())
            .unwrap_or("datacenter1")
    );
    println!(
        "Status=Up/Down  (as seen by {})",
        status["endpoint"].as_str().unwrap_or("?")
    );
    println!(
        "--  {:<22} {:<11} {:>6} {:>7}  {:<36} Rack",
        "Address", "Load", "Tokens", "Owns", "Host ID"
    );
    for n in &nodes {
        println!(
            "{:<3} {:<22} {:<11} {:>6} {:>6.1}%  {:<36} {}",
            if n["up"].as_bool() == Some(true) {
                "UN"
            } else {
                "DN"
            },
            n["endpoint"].as_str().unwrap_or("?"),
            bytes(n["load_bytes"].as_u64().unwrap_or(0)),
            n["tokens"].as_u64().unwrap_or(0),
            n["owns"].as_f64().unwrap_or(0.0) * 100.0,
            n["host_id"].as_str().unwrap_or("?"),
            n["rack"].as_str().unwrap_or("?"),
        );
    }
    Ok(())
}

/// `mosaic flush` / `mosaic compact`: the operation on every table of each target node.
pub fn table_op(args: &HostArgs, op: &str) -> Result<()> {
    let mut failed = Vec::new();
    for (name, addr) in targets(args)? {
        match admin::post(addr, &format!("/{op}")) {
            Ok(v) => println!("{name}: {op} done on {} tables", v["tables"]),
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
        let v = admin::get(addr, "/stats").with_context(|| format!("asking {name}"))?;
        if json {
            all.insert(name, v);
            continue;
        }
        println!("{name}");
        for t in v["tables"].as_array().into_iter().flatten() {
            let table = t["table"].as_str().unwrap_or("?");
            let s = &t["stats"];
            if s.is_null() {
                println!("  {table}: {}", t["error"]);
                continue;
            }
            let levels: Vec<String> = s["levels"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| format!("L{}:{}", l["level"], l["files"]))
                .collect();
            println!(
                "  {table} ({}): user {} written, WA {:.2}, {:.2} tables probed/get, {:.0} B read/get, memtables {}, files {}",
                s["layout"].as_str().unwrap_or("?"),
                bytes(s["user_bytes_written"].as_u64().unwrap_or(0)),
                s["write_amplification"].as_f64().unwrap_or(0.0),
                s["tables_probed_per_get"].as_f64().unwrap_or(0.0),
                s["bytes_read_per_get"].as_f64().unwrap_or(0.0),
                bytes(s["memtable_bytes"].as_u64().unwrap_or(0)),
                levels.join(" "),
            );
            let structures = s["structures"].as_array().cloned().unwrap_or_default();
            // A uniform table is one structure, already shown in full above.
            if structures.len() < 2 {
                continue;
            }
            for st in &structures {
                println!(
                    "    {:<38} flush {}, compaction {} written, {:.2} tables probed/get, {:.0} B read/get, memtables {}",
                    st["structure"].as_str().unwrap_or("?"),
                    bytes(st["flush_bytes_written"].as_u64().unwrap_or(0)),
                    bytes(st["compaction_bytes_written"].as_u64().unwrap_or(0)),
                    st["tables_probed_per_get"].as_f64().unwrap_or(0.0),
                    st["bytes_read_per_get"].as_f64().unwrap_or(0.0),
                    bytes(st["memtable_bytes"].as_u64().unwrap_or(0)),
                );
            }
        }
    }
    if json {
        println!("{}", Value::Object(all));
    }
    Ok(())
}

/// `mosaic repair`: repairs the ranges one node replicates; fails if any could not be.
pub fn repair(host: &HostArgs, keyspace: Option<&str>, table: Option<&str>) -> Result<()> {
    let addr = host.addr()?;
    let mut path = "/repair".to_owned();
    if let Some(ks) = keyspace {
        path.push_str(&format!("?keyspace={ks}"));
        if let Some(t) = table {
            path.push_str(&format!("&table={t}"));
        }
    }
    let v = match admin::post(addr, &path) {
        Ok(v) => v,
        Err(e) => bail!("repair on {addr} did not complete: {e:#}"),
    };
    println!(
        "repair on {addr}: {} tables, {} ranges, {} of {} leaves differed, {} entries ({}) streamed",
        v["tables"],
        v["ranges"],
        v["leaves_mismatched"],
        v["leaves"],
        v["entries_streamed"],
        bytes(v["bytes_streamed"].as_u64().unwrap_or(0)),
    );
    Ok(())
}
