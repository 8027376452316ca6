//! The `mosaic` binary, the only composition root of the workspace.
//!
//! Its role: the one place where concrete parts are wired together and where the outside
//! world is reached. Tokio (runtime, TCP, signals), the config file, the log subscriber,
//! the metrics recorder and the admin HTTP endpoint live here and nowhere else; the
//! library crates below stay free of them (`mosaic-cluster` sees storage only through its
//! `Store` trait and time and I/O only through its runtime and transport seams). Plain
//! `std::time::Instant` and tokio time are fine here for the same reason.
//!
//! Subcommands:
//! - `mosaic server --config FILE`: one cluster node in the foreground, serving CQL
//!   (native protocol v3/v4) and joining its seeds ([`server`]);
//! - `mosaic status|flush|compact|stats|repair`: operator commands over a node's admin
//!   endpoint ([`tools`], [`admin`]);
//! - `mosaic hr optimize`: heterogeneous replicas' orders for a workload ([`hr`]);
//! - `mosaic cluster up|down --dir DIR`: a local cluster of detached `mosaic server`
//!   processes ([`launcher`]);
//! - `mosaic shell`: a single-node storage-engine shell over a data directory
//!   (put/get/delete/scan/flush/compact/stats/levels), reading commands from stdin.
//!
//! The YCSB load generator is not here: it is the `mosaic-bench` binary (`crates/bench`),
//! a CQL client like any other.
//!
//! Module map: [`config`] (the TOML file), [`logging`] (the log subscriber, the slow-query
//! log), [`durable`] (atomic files, node identity), [`location`] (the datacenter and rack
//! a node last ran in), [`local`] (the node's storage: the
//! catalog and one engine per table), [`cluster`] (the CQL coordinator over
//! `mosaic-cluster`'s node, and the node's store), [`internode`] (tokio and TCP for the
//! cluster), [`hints`] (durable hints), [`admin`] (the admin HTTP endpoint, its JSON,
//! `/metrics` and the CLI's client), [`auth`] (the authenticator seam), [`net`] (CQL
//! connections and frames), [`server`] (lifecycle), [`launcher`] (local clusters),
//! [`tools`], [`shell`].
#![allow(clippy::disallowed_methods)] // The composition root: it runs the real clock, threads and tokio for the core crates.

mod admin;
mod auth;
mod cluster;
mod cold;
mod config;
#[cfg(test)]
mod crash_images;
mod deploy;
mod durable;
mod hints;
mod hr;
mod internode;
mod internode_auth;
mod internode_tls;
mod launcher;
mod local;
mod location;
mod logging;
mod moves;
mod net;
mod read_stage;
mod server;
mod shell;
mod tls;
mod tools;

/// mimalloc instead of glibc's malloc: allocation was about a sixth of the node's CPU on
/// prepared INSERT/SELECT with glibc (`perf`), much of it in `malloc_consolidate`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "mosaic",
    version,
    about = "Mosaic: a wide-column store that speaks CQL"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a node in the foreground, serving CQL.
    Server(ServerArgs),
    /// Start or stop a local cluster of nodes.
    #[command(subcommand)]
    Cluster(launcher::ClusterCommand),
    /// Open a storage engine on a data directory and run commands from stdin.
    Shell(shell::ShellArgs),
    /// Show the cluster's nodes: UP/DOWN, load, tokens, ownership (like `nodetool status`).
    Status(tools::HostArgs),
    /// Flush every table's memtable to disk on each live node.
    Flush(tools::HostArgs),
    /// Compact every table fully on each live node.
    Compact(tools::HostArgs),
    /// Per node and table: bytes written, write/read amplification, files per level.
    Stats(StatsArgs),
    /// Per node: flushes and compactions running or due (like `nodetool
    /// compactionstats`); with --wait, returns once every node is idle.
    #[command(name = "compactionstats")]
    CompactionStats(tools::CompactionStatsArgs),
    /// Heterogeneous replicas: choose a table's replica orders for a workload.
    #[command(subcommand)]
    Hr(hr::HrCommand),
    /// Anti-entropy repair of the ranges a node replicates (Merkle trees of logical rows;
    /// only differing ranges are streamed). Exits non-zero if it could not complete.
    Repair(tools::ScopeArgs),
    /// Stream a node's ranges to the nodes that will own them, take it out of the ring
    /// and stop it (like `nodetool decommission`).
    Decommission(tools::NodeArgs),
    /// The streams of a node's join or leave (like `nodetool netstats`).
    Netstats(tools::NodeArgs),
    /// Take a dead node out of the ring by its host id (`mosaic status` shows it); the
    /// survivors re-replicate its ranges (like `nodetool removenode`).
    Removenode(RemovenodeArgs),
    /// Drop from a node the data it no longer owns after a topology change: ranges other
    /// nodes took over, and copies in the structures of a role it no longer has (like
    /// `nodetool cleanup`). Refused while any node joins, leaves or is being removed.
    Cleanup(tools::ScopeArgs),
}

/// Options of `mosaic removenode`.
#[derive(Args, Debug)]
struct RemovenodeArgs {
    /// The dead node's host id.
    host_id: String,
    #[command(flatten)]
    node: tools::NodeArgs,
}

/// Options of `mosaic stats`.
#[derive(Args, Debug)]
struct StatsArgs {
    #[command(flatten)]
    host: tools::HostArgs,
    /// Print the raw JSON of every node.
    #[arg(long)]
    json: bool,
}

/// Options of `mosaic server`.
#[derive(Args, Debug)]
struct ServerArgs {
    /// The node's configuration file (keys: docs/mosaic.example.toml).
    #[arg(long)]
    config: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Server(args) => server::run(&args.config),
        Command::Cluster(command) => launcher::run(command),
        Command::Shell(args) => shell::run(args),
        Command::Status(args) => tools::status(&args),
        Command::Flush(args) => tools::table_op(&args, "flush"),
        Command::Compact(args) => tools::table_op(&args, "compact"),
        Command::Stats(args) => tools::stats(&args.host, args.json),
        Command::CompactionStats(args) => tools::compactionstats(&args),
        Command::Hr(command) => hr::run(command),
        Command::Decommission(args) => tools::decommission(&args.host_args()),
        Command::Netstats(args) => tools::netstats(&args.host_args()),
        Command::Removenode(args) => tools::removenode(&args.node.host_args(), &args.host_id),
        Command::Repair(args) => tools::repair(
            &args.host_args(),
            args.keyspace.as_deref(),
            args.table.as_deref(),
        ),
        Command::Cleanup(args) => tools::cleanup(
            &args.host_args(),
            args.keyspace.as_deref(),
            args.table.as_deref(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The cause chain on one line; a backtrace would only bury it.
            eprintln!("mosaic: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
