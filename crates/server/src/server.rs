//! `mosaic server`: one node in the foreground, from start to a clean exit.
//!
//! Owns the node's lifecycle and wiring (the composition root proper): read the config,
//! build the tokio runtime, open local storage ([`LocalCoordinator`]), bind the CQL port,
//! serve ([`crate::net`]) until SIGTERM or SIGINT, then stop accepting, let in-flight
//! requests finish (bounded by `shutdown_timeout_ms`), close every table and exit 0. A
//! second signal during shutdown exits at once (status 130).
//!
//! Prints `mosaic: serving CQL on ADDR` on stdout once the port is bound; launchers and
//! tests may wait for that line (or, better, for an answer to OPTIONS).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use mosaic_cql::processor::Processor;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::auth::AllowAll;
use crate::config::Config;
use crate::local::LocalCoordinator;
use crate::net::{self, Shared};

/// Runs the node configured in `config_path` until it is told to stop.
pub fn run(config_path: &Path) -> Result<()> {
    let config = Config::load(config_path)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("mosaic-worker")
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(serve(config));
    // Tasks still holding resources (connections past the drain timeout) are dropped here.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Resolves at the first SIGTERM or SIGINT.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

async fn serve(config: Config) -> Result<()> {
    // Before anything slow, so a signal during startup still shuts down cleanly.
    let mut signals = Signals::install()?;
    let opening = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || LocalCoordinator::open(&config))
    };
    let coordinator = tokio::select! {
        opened = opening => Arc::new(opened.context("opening storage")??),
        name = signals.recv() => bail!("{name} received while opening storage"),
    };
    eprintln!(
        "mosaic: data in {} ({} tables)",
        coordinator.data_dir().display(),
        coordinator.table_count()
    );

    let addr = config.native_socket_addr();
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the CQL port {addr}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    let shared = Arc::new(Shared::new(
        Processor::new(coordinator.clone()),
        Arc::new(AllowAll),
        config.limits.clone(),
    ));
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let timeout = Duration::from_millis(config.shutdown_timeout_ms);
    let mut serving = tokio::spawn(net::serve(listener, shared, shutdown_rx, timeout));
    println!("mosaic: serving CQL on {bound}");
    // Launchers read this line from a file or pipe: make sure it is not stuck in a buffer.
    let _ = std::io::stdout().flush();

    let name = tokio::select! {
        name = signals.recv() => name,
        ended = &mut serving => bail!("the CQL listener stopped unexpectedly: {ended:?}"),
    };
    eprintln!("mosaic: {name} received; finishing in-flight requests");
    tokio::spawn(async move {
        let name = signals.recv().await;
        eprintln!("mosaic: second {name}; exiting without a clean shutdown");
        std::process::exit(130);
    });
    let _ = shutdown_tx.send(true);
    let deadline = tokio::time::Instant::now() + timeout;
    if tokio::time::timeout_at(deadline, &mut serving)
        .await
        .is_err()
    {
        serving.abort();
    }
    // Storage gets its own bound: in-flight work that outlived the drain still gets the
    // chance to finish before its table is closed.
    let failures = coordinator.close(timeout).await;
    if !failures.is_empty() {
        bail!("could not close cleanly: {}", failures.join(", "));
    }
    eprintln!("mosaic: stopped");
    Ok(())
}
