//! `mosaic server`: one node in the foreground, from start to a clean exit.
//!
//! Owns the node's lifecycle and wiring (the composition root proper): read the config,
//! build the tokio runtime, bind the internode port, recover the node's identity from the
//! seeds if it has none, open local storage ([`LocalCoordinator`]) and the hint store,
//! start the cluster node (gossip) from the peers it knew, bind the CQL and admin ports,
//! serve ([`crate::net`]) until SIGTERM or SIGINT, then announce the shutdown to the peers,
//! stop accepting, let in-flight requests finish (bounded by `shutdown_timeout_ms`), close
//! every table and exit 0. A second signal during shutdown exits at once (status 130).
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

use mosaic_cluster::gossip::Change;
use mosaic_cluster::message::{AppState, RingStatus};
use mosaic_cluster::{Node, NodeConfig};
use mosaic_cql::frame::{Event, StatusChangeType, TopologyChangeType};

use crate::admin::login::AdminLogin;
use crate::admin::{self, Admin};
use crate::auth::{
    auth_settings, ensure_superuser, role_lookup, superuser_check, AllowAll, Authenticator,
    PasswordAuthenticator, SUPERUSER_PASSWORD_ENV,
};
use crate::cluster::{ClusterCoordinator, LocalStore};
use crate::config::Config;
use crate::durable::NodeIdentity;
use crate::hints::HintStore;
use crate::internode::Links;
use crate::internode::{self, TcpTransport, TokioRuntime};
use crate::internode_auth::{Handshake, CLUSTER_SECRET_ENV};
use crate::internode_tls::InternodeTls;
use crate::local::LocalCoordinator;
use crate::net::{self, Shared};
use crate::tls::ClientTls;
use mosaic_cql::auth::Auth;

/// Runs the node configured in `config_path` until it is told to stop.
pub fn run(config_path: &Path) -> Result<()> {
    let mut config = Config::load_with_env(config_path, |var| std::env::var(var).ok())?;
    crate::logging::init(&config.log)?;
    for warning in config.deprecations() {
        tracing::warn!(target: "mosaic", "{warning}");
    }
    if !config.transparent_huge_pages {
        disable_transparent_huge_pages();
    }
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if config.worker_threads > 0 {
        runtime.worker_threads(config.worker_threads);
    }
    let runtime = runtime
        .enable_all()
        .thread_name("mosaic-worker")
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(async {
        crate::deploy::resolve_seeds(&mut config).await?;
        serve(config).await
    });
    // Tasks still holding resources (connections past the drain timeout) are dropped here.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Keeps this process's memory off transparent huge pages from now on (see
/// `Config::transparent_huge_pages`); a kernel without the setting changes nothing.
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_THP_DISABLE takes plain integer arguments and touches no memory.
        let done = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        if done != 0 {
            tracing::debug!(
                target: "mosaic",
                error = %std::io::Error::last_os_error(),
                "transparent huge pages stay as the system sets them"
            );
        }
    }
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

/// The node from start to clean exit: storage, cluster, CQL and admin ports, then the
/// shutdown sequence at the first signal.
async fn serve(config: Config) -> Result<()> {
    // Before anything slow, so a signal during startup still shuts down cleanly.
    let mut signals = Signals::install()?;
    crate::moves::refuse_decommissioned(&config.data_dir)?;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    // Password authentication without the superuser's password refuses to start, and says
    // why, before anything is opened.
    let superuser_password = if config.auth.enabled() {
        Some(
            config
                .auth
                .superuser_password(std::env::var(SUPERUSER_PASSWORD_ENV).ok())?,
        )
    } else {
        None
    };
    // So does TLS whose certificate or key cannot be read or do not match.
    let client_tls = ClientTls::from_config(&config.client_encryption)?;
    let internode_tls = InternodeTls::from_config(&config.internode_encryption)?;
    if let Some(tls) = internode_tls.clone() {
        tokio::spawn(tls.watch_files(shutdown_rx.clone()));
    }

    // The cluster node: internode port first, so peers can answer as soon as we gossip.
    let cluster_secret = config
        .internode_auth
        .secret(std::env::var(CLUSTER_SECRET_ENV).ok())?;
    let mut config = config;
    let internode_listener = bind_internode(&mut config).await?;
    let links = internode_links(&config, internode_tls, cluster_secret.as_deref());
    plan_first_start(&config, &internode_listener, links.clone()).await?;
    let local = open_storage(&config, &mut signals).await?;
    let hints = Arc::new(HintStore::open(
        local.data_dir(),
        local.engine_options(),
        config.cluster.max_hints_size_per_host_bytes,
    )?);
    let node = start_node(&config, local.clone(), hints.clone(), links.clone())?;
    tokio::spawn(internode::serve(
        internode_listener,
        node.clone(),
        links,
        shutdown_rx.clone(),
    ));
    if config.data_dir.join(CODED_RECOVERY_FILE).exists() {
        tokio::spawn(recover_coded_shards(
            node.downgrade(),
            config.data_dir.clone(),
        ));
    }
    let coordinator = Arc::new(ClusterCoordinator::new(local.clone(), node.clone()));
    tokio::spawn(drive_relayouts(Arc::downgrade(&local), shutdown_rx.clone()));
    if config.cluster.hr_auto_interval_ms > 0 {
        tokio::spawn(drive_hr_auto(
            Arc::downgrade(&coordinator),
            local.clone(),
            Duration::from_millis(config.cluster.hr_auto_interval_ms),
            shutdown_rx.clone(),
        ));
    }

    let addr = config.native_socket_addr();
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the CQL port {addr}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    let auth = Arc::new(Auth::new(auth_settings(&config.auth)));
    let (authenticator, admin_login): (Arc<dyn Authenticator>, _) = match superuser_password {
        Some(password) => {
            // Role lookups and the superuser's creation run on a processor of their own
            // (sharing the permission cache).
            let internal = Arc::new(Processor::with_auth(coordinator.clone(), auth.clone()));
            ensure_superuser(internal.clone(), &config.auth, password).await?;
            let passwords = PasswordAuthenticator::new(&config.auth, role_lookup(internal.clone()));
            // The admin endpoint checks its credentials with the same authenticator (one
            // failed-login limit per address for both ports).
            let login = AdminLogin::new(passwords.clone(), superuser_check(internal));
            (passwords as Arc<dyn Authenticator>, Some(Arc::new(login)))
        }
        None => (Arc::new(AllowAll) as Arc<dyn Authenticator>, None),
    };
    let shared = Arc::new(
        Shared::new(
            Processor::with_auth(coordinator.clone(), auth)
                .with_limits(config.limits.statement_limits()),
            authenticator,
            config.limits.clone(),
        )
        .with_slow_query(config.log.slow_query())
        .with_tls(client_tls.clone()),
    );
    if let Some(tls) = client_tls {
        tokio::spawn(tls.watch_files(shutdown_rx.clone()));
    }
    publish_membership_events(&node, &shared);
    // A decommissioned node stops as at a signal.
    let stop = Arc::new(tokio::sync::Notify::new());
    publish_peer_schema_events(&local, &shared);
    let admin = Admin {
        local: local.clone(),
        cluster: coordinator.clone(),
        hints: hints.clone(),
        metrics: None,
        requests_max: config.limits.admin_requests_max,
        login: admin_login,
        stop: stop.clone(),
    };
    start_admin(&config, admin, shutdown_rx.clone()).await;
    let timeout = Duration::from_millis(config.shutdown_timeout_ms);
    // A joining node streams the ranges it will own before it serves CQL (as Cassandra
    // does); a signal meanwhile stops it, and its next start resumes the join.
    if crate::moves::joining(&config.data_dir) {
        tokio::select! {
            joined = crate::moves::run(&node, &local, config.data_dir.clone()) => {
                if let Err(e) = joined {
                    node.shutdown();
                    let _ = shutdown_tx.send(true);
                    let failures = local.close(timeout).await;
                    if !failures.is_empty() {
                        tracing::warn!(target: "mosaic", "could not close cleanly: {}", failures.join(", "));
                    }
                    return Err(e.context("joining the ring"));
                }
            }
            name = signals.recv() => {
                tracing::info!(target: "mosaic", "{name} received while joining; stopping (the join resumes at the next start)");
                node.shutdown();
                let _ = shutdown_tx.send(true);
                let failures = local.close(timeout).await;
                if !failures.is_empty() {
                    bail!("could not close cleanly: {}", failures.join(", "));
                }
                return Ok(());
            }
        }
    }
    let mut serving = tokio::spawn(net::serve(listener, shared, shutdown_rx, timeout));
    tracing::info!(
        target: "mosaic",
        cql = %bound,
        internode = %config.storage_endpoint(),
        rpc_address = %config.rpc_address(),
        cluster_name = %config.cluster_name,
        "serving"
    );
    println!("mosaic: serving CQL on {bound}");
    // Launchers read this line from a file or pipe: make sure it is not stuck in a buffer.
    let _ = std::io::stdout().flush();

    let name = tokio::select! {
        name = signals.recv() => name,
        () = stop.notified() => "decommission",
        ended = &mut serving => bail!("the CQL listener stopped unexpectedly: {ended:?}"),
    };
    tracing::info!(target: "mosaic", "{name} received; shutting down after in-flight requests");
    // Peers stop choosing this node at once rather than after the failure detector.
    node.shutdown();
    tokio::spawn(async move {
        let name = signals.recv().await;
        tracing::warn!(target: "mosaic", "second {name}; exiting without a clean shutdown");
        std::process::exit(130);
    });
    let _ = shutdown_tx.send(true);
    drain_and_close(serving, &local, timeout).await
}

/// Runs heterogeneous tables' re-layouts (after `ALTER TABLE … WITH layout`) in the
/// background: steps back to back while there is work, a look every second otherwise,
/// until shutdown.
async fn drive_relayouts(
    local: std::sync::Weak<LocalCoordinator>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let busy = match local.upgrade() {
            Some(local) => local.relayout_pass().await,
            None => return,
        };
        let pause = if busy {
            Duration::from_millis(1)
        } else {
            Duration::from_secs(1)
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
    }
}

/// Re-chooses `auto` heterogeneous tables' orders every `interval` (`crate::hr`).
async fn drive_hr_auto(
    cluster: std::sync::Weak<ClusterCoordinator>,
    local: Arc<LocalCoordinator>,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        let Some(cluster) = cluster.upgrade() else {
            return;
        };
        crate::hr::auto_pass(&cluster, &local).await;
    }
}

/// Opens local storage on a blocking thread; a signal meanwhile abandons the start.
async fn open_storage(config: &Config, signals: &mut Signals) -> Result<Arc<LocalCoordinator>> {
    let opening = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || LocalCoordinator::open(&config))
    };
    let local = tokio::select! {
        opened = opening => Arc::new(opened.context("opening storage")??),
        name = signals.recv() => bail!("{name} received while opening storage"),
    };
    tracing::info!(
        target: "mosaic",
        data_dir = %local.data_dir().display(),
        tables = local.table_count(),
        default_layout = %config.storage.layout,
        replica_selection = %config.selection().replica_selection,
        "storage open"
    );
    Ok(local)
}

/// The end of a clean shutdown: lets in-flight requests finish (for at most `timeout`),
/// then closes every table.
async fn drain_and_close(
    mut serving: tokio::task::JoinHandle<()>,
    local: &LocalCoordinator,
    timeout: Duration,
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + timeout;
    if tokio::time::timeout_at(deadline, &mut serving)
        .await
        .is_err()
    {
        serving.abort();
    }
    // Storage gets its own bound: in-flight work that outlived the drain still gets the
    // chance to finish before its table is closed.
    let failures = local.close(timeout).await;
    if !failures.is_empty() {
        for failure in &failures {
            tracing::error!(target: "mosaic::storage", %failure, "closing storage failed");
        }
        bail!("could not close cleanly: {}", failures.join(", "));
    }
    tracing::info!(target: "mosaic", "stopped");
    Ok(())
}

/// Builds this node's cluster member and starts gossiping.
fn start_node(
    config: &Config,
    local: Arc<LocalCoordinator>,
    hints: Arc<HintStore>,
    links: Arc<Links>,
) -> Result<Node> {
    let me = local.local_node();
    let mut node_config = NodeConfig::new(config.storage_endpoint());
    node_config.seeds = config.seed_endpoints()?;
    node_config.gossip_interval_ms = config.cluster.gossip_interval_ms;
    node_config.repair_timeout_ms = config.cluster.repair_timeout_ms;
    node_config.degraded_read_ahead_tables = config.cluster.degraded_read_ahead_tables;
    node_config.phi_convict_threshold = config.cluster.phi_convict_threshold;
    node_config.write_timeout_ms = config.cluster.write_request_timeout_ms;
    node_config.cas_contention_timeout_ms = config.cluster.cas_contention_timeout_ms;
    node_config.cluster_name = config.cluster_name.clone();
    node_config.read_timeout_ms = config.cluster.read_request_timeout_ms;
    node_config.schema_timeout_ms = config.cluster.schema_timeout_ms;
    node_config.replica_requests_max = config.cluster.replica_requests_max;
    node_config.hint_window_ms = config.cluster.hint_window_ms();
    node_config.hinted_handoff_disabled_datacenters =
        config.cluster.hinted_handoff_disabled_datacenters.clone();
    node_config.mutation_size_bytes_max = config.limits.mutation_size_bytes_max;
    node_config.read_answer_rows_max = config.cluster.read_answer_rows_max;
    node_config.skip_paxos_repair_on_topology_change =
        config.cluster.skip_paxos_repair_on_topology_change;
    node_config.stream_throughput_bytes_per_sec = config
        .cluster
        .stream_throughput_mib_per_sec
        .saturating_mul(1 << 20);
    let (ring_status, tokens, status) = crate::moves::start_state(
        &config.data_dir,
        config.storage_endpoint(),
        me.tokens.iter().map(|t| t.0).collect(),
    );
    let app = AppState {
        host_id: me.host_id,
        tokens,
        rpc_address: me.rpc_address,
        native_port: me.native_port,
        admin_port: config.admin_port,
        data_center: me.data_center,
        rack: me.rack,
        release_version: me.release_version,
        schema_version: me.schema_version.0,
        status,
        ring_status,
        replacing: None,
        load_bytes: local.load_bytes(),
    };
    // A restart must gossip a larger generation than any before it: wall-clock micros.
    let generation = u64::try_from(crate::local::now_micros()).unwrap_or(1);
    let store = Arc::new(LocalStore::new(local, hints));
    let node = Node::new(
        node_config,
        app,
        generation,
        Arc::new(TokioRuntime::new()),
        Arc::new(TcpTransport::new(
            config.cluster.peer_queue_max,
            config.cluster.peer_queue_bytes_max,
            links,
        )),
        store.clone(),
        mosaic_cluster::selection::selector(&config.selection()),
    );
    if let Some(tagger) = tagger(&config.scheduling)? {
        let _ = node.set_tagger(tagger);
    }
    restore_peers(&node, &config.data_dir);
    // After the restored peers: the store's first ring is then the whole ring.
    store.set_node(node.downgrade());
    // Index builds read each table's tokens under the roles the ring gives them.
    let weak = Arc::downgrade(&store);
    store
        .local()
        .set_roles_source(Arc::new(move |table| match weak.upgrade() {
            Some(store) => store.roles(table),
            None => Box::new(crate::local::AllPrimary),
        }));
    persist_peers_on_join(&node, config.data_dir.clone());
    node.start();
    node.start_erasure_coding(config.cluster.erasure_coding_interval_ms);
    Ok(node)
}

/// The tagger `[scheduling] size_oracle` chooses (a static oracle's file is read here: a
/// missing or malformed file stops the node with the line at fault).
fn tagger(
    s: &mosaic_cluster::selection::SchedulingConfig,
) -> Result<Option<mosaic_cluster::selection::Tagger>> {
    use mosaic_cluster::selection::oracle::{LearnedSizes, SizeOracle, StaticSizes};
    use mosaic_cluster::selection::SizeOracleId;
    if s.queue_without_tags() {
        tracing::warn!(
            local_queue = %s.local_queue,
            "[scheduling] local_queue orders reads by their tags, but size_oracle is \"none\": \
             every read looks alike to it"
        );
    }
    let oracle: Box<dyn SizeOracle> = match s.size_oracle {
        SizeOracleId::None => return Ok(None),
        SizeOracleId::ItemSize => Box::new(LearnedSizes::new(&s.item_size)),
        SizeOracleId::Static => {
            let path = &s.static_sizes.file;
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading [scheduling.static] file {path}"))?;
            let sizes = StaticSizes::parse(&text)
                .map_err(|e| anyhow::anyhow!("[scheduling.static] file {path}: {e}"))?;
            tracing::info!(file = %path, tokens = sizes.len(), "static item-size oracle loaded");
            Box::new(sizes)
        }
    };
    Ok(Some(mosaic_cluster::selection::Tagger::new(
        oracle,
        s.priority_thresholds.clone(),
    )))
}

/// The file where a node keeps the peers it knows (as Cassandra's `system.peers`).
const PEERS_FILE: &str = "peers.json";

/// Gives the node the peers a previous run knew, so its ring is whole from the start
/// (they stay DOWN until heard from). A damaged file only costs that head start.
fn restore_peers(node: &Node, data_dir: &std::path::Path) {
    let path = data_dir.join(PEERS_FILE);
    let Ok(bytes) = std::fs::read(&path) else {
        return;
    };
    match serde_json::from_slice::<Vec<mosaic_cluster::message::EndpointState>>(&bytes) {
        Ok(states) => node.restore_peers(states),
        Err(e) => tracing::warn!(
            target: "mosaic::membership",
            path = %path.display(),
            error = %e,
            "ignoring the saved peers"
        ),
    }
}

/// Persists the known peers whenever a node joins the view.
fn persist_peers_on_join(node: &Node, data_dir: std::path::PathBuf) {
    let weak = node.downgrade();
    // One save at a time: they share the temporary file.
    let saving = Arc::new(parking_lot::Mutex::new(()));
    node.on_change(Arc::new(move |change, _| {
        if !matches!(change, Change::Joined(_) | Change::Moved(_)) {
            return;
        }
        let Some(node) = weak.upgrade() else {
            return;
        };
        let me = node.endpoint();
        let states: Vec<_> = node
            .states()
            .into_iter()
            .map(|(s, _)| s)
            .filter(|s| s.endpoint != me)
            .collect();
        let path = data_dir.join(PEERS_FILE);
        let saving = saving.clone();
        tokio::task::spawn_blocking(move || {
            let _one = saving.lock();
            let bytes = serde_json::to_vec(&states).unwrap_or_default();
            if let Err(e) = crate::durable::write_atomic(&path, &bytes) {
                tracing::warn!(
                    target: "mosaic::membership",
                    path = %path.display(),
                    error = %e,
                    "could not save the peers"
                );
            }
        });
    }));
}

/// Pushes the schema changes this node learns from peers to clients that registered for
/// them (the node that ran the DDL pushes its own with the statement's result).
fn publish_peer_schema_events(local: &LocalCoordinator, shared: &Arc<Shared<ClusterCoordinator>>) {
    let shared = Arc::downgrade(shared);
    local.on_peer_schema_change(Arc::new(move |changes| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        for change in changes {
            shared.publish(Event::SchemaChange(change));
        }
    }));
}

/// Pushes status and topology changes to clients that registered for them.
fn publish_membership_events(node: &Node, shared: &Arc<Shared<ClusterCoordinator>>) {
    let shared = Arc::downgrade(shared);
    node.on_change(Arc::new(move |change, state| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let addr = std::net::SocketAddr::new(state.app.rpc_address, state.app.native_port);
        // Drivers hear of a node once it owns its tokens (a joining node is announced
        // when it finishes joining) and of its removal once it left.
        let event = match (change, state.app.ring_status) {
            (Change::Joined(_) | Change::Moved(_), RingStatus::Normal) => Event::TopologyChange {
                change: TopologyChangeType::NewNode,
                node: addr,
            },
            (Change::Moved(_), RingStatus::Left) => Event::TopologyChange {
                change: TopologyChangeType::RemovedNode,
                node: addr,
            },
            (Change::Joined(_) | Change::Moved(_), _) => return,
            (Change::Up(_), _) => Event::StatusChange {
                change: StatusChangeType::Up,
                node: addr,
            },
            (Change::Down(_), _) => Event::StatusChange {
                change: StatusChangeType::Down,
                node: addr,
            },
        };
        tracing::info!(
            target: "mosaic::membership",
            peer = %state.endpoint,
            change = ?change,
            "node state changed"
        );
        shared.publish(event);
    }));
}

/// Binds the internode port. A node with no seeds configured is a cluster of its own, which
/// no peer can know the address of: if its port is taken (several standalone nodes on one
/// host), it takes a free one instead of failing. A node with seeds must get its port.
async fn bind_internode(config: &mut Config) -> Result<TcpListener> {
    let addr = std::net::SocketAddr::new(config.listen_address, config.storage_port);
    match TcpListener::bind(addr).await {
        Ok(l) => Ok(l),
        Err(e) if config.seeds.is_empty() && e.kind() == std::io::ErrorKind::AddrInUse => {
            let l = TcpListener::bind(std::net::SocketAddr::new(config.listen_address, 0))
                .await
                .with_context(|| {
                    format!("binding an internode port on {}", config.listen_address)
                })?;
            let port = l.local_addr().context("reading the internode port")?.port();
            tracing::warn!(
                target: "mosaic",
                configured = config.storage_port,
                port,
                "internode port taken; this seedless node uses another"
            );
            config.storage_port = port;
            Ok(l)
        }
        Err(e) => Err(e).with_context(|| format!("binding the internode port {addr}")),
    }
}

/// Starts the admin HTTP endpoint and the metrics recorder (unless `admin_port` is 0). A
/// taken admin port is reported and the node serves without it: it is an operator
/// convenience, not part of serving data.
async fn start_admin(config: &Config, mut admin: Admin, shutdown: watch::Receiver<bool>) {
    let Some(addr) = config.admin_address() else {
        return;
    };
    let listener = match TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(target: "mosaic::admin", %addr, error = %e, "admin endpoint disabled: cannot bind");
            return;
        }
    };
    admin.metrics = admin::prometheus::install_recorder()
        .map_err(|e| tracing::warn!(target: "mosaic::admin", error = %e, "metrics disabled"))
        .ok();
    tracing::info!(target: "mosaic::admin", "admin endpoint on http://{addr}");
    tokio::spawn(admin::serve(listener, Arc::new(admin), shutdown));
}

/// Marks a data directory that was wiped while the node was a cluster member: until its
/// erasure-tiered tables' lost coding shards are rebuilt, rows only they held are missing.
const CODED_RECOVERY_FILE: &str = "RECOVER_CODED";

/// A node that resumed its identity after losing its data rebuilds, as soon as it knows
/// the schema, the coding shards of erasure-tiered tables its groups name (their rows
/// exist nowhere else in full), retrying every 10 s until all are back; `mosaic repair`
/// does the same and then refills the rest.
async fn recover_coded_shards(node: mosaic_cluster::node::WeakNode, data_dir: std::path::PathBuf) {
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let Some(node) = node.upgrade() else {
            return;
        };
        if !node.await_schema_agreement(30_000).await {
            continue;
        }
        let report = node.ec_recover_all().await;
        if report.shards_failed == 0 {
            tracing::info!(target: "mosaic", shards_rebuilt = report.shards_rebuilt, "coding shards lost with the data directory are rebuilt");
            if let Err(e) = std::fs::remove_file(data_dir.join(CODED_RECOVERY_FILE)) {
                tracing::warn!(target: "mosaic", error = %e, "removing the coded-recovery marker failed");
            }
            return;
        }
        tracing::warn!(target: "mosaic", shards_rebuilt = report.shards_rebuilt, shards_failed = report.shards_failed, errors = ?report.errors, "rebuilding lost coding shards is incomplete; retrying in 10 s");
        drop(node);
        tokio::time::sleep(std::time::Duration::from_secs(8)).await;
    }
}

/// How internode connections are opened and admitted: TLS when configured, and the
/// membership handshake with the cluster secret when there is one. A node with neither
/// says so: any process that reaches its internode port could then join the cluster.
fn internode_links(
    config: &Config,
    tls: Option<Arc<InternodeTls>>,
    secret: Option<&[u8]>,
) -> Arc<Links> {
    if secret.is_none() && tls.is_none() {
        tracing::warn!(
            target: "mosaic::internode",
            "internode connections are not authenticated: any process that reaches the \
             internode port can join the cluster; set [internode_auth] secret_file (or \
             {CLUSTER_SECRET_ENV}) or [internode_encryption]"
        );
    }
    Arc::new(Links {
        tls,
        handshake: Arc::new(Handshake::new(
            secret,
            config.storage_endpoint(),
            &config.cluster_name,
            config.internode_auth.check_source_address,
            config.listen_address,
        )),
    })
}

/// A node starting without an identity (a new node, or one whose data directory was
/// wiped) asks the seeds whether the cluster knows a node at its address. If so it is
/// refused unless `replace_address` names that address: then it takes that node's host id
/// and tokens and streams its ranges before serving (`crate::moves::plan_replace_own`).
async fn plan_first_start(
    config: &Config,
    listener: &TcpListener,
    links: Arc<Links>,
) -> Result<()> {
    if NodeIdentity::exists(&config.data_dir) {
        return Ok(());
    }
    let me = config.storage_endpoint();
    let seeds = config.seed_endpoints()?;
    if seeds.iter().all(|s| *s == me) {
        return Ok(());
    }
    let Some(states) =
        internode::shadow_round(listener, me, &seeds, &config.cluster_name, links.clone()).await
    else {
        if let Some(dead) = config.replace_endpoint()? {
            bail!(
                "replace_address {dead}: no seed answered, so the dead node's tokens are unknown"
            );
        }
        return Ok(());
    };
    let (mine, peers): (Vec<_>, Vec<_>) = states.into_iter().partition(|s| s.endpoint == me);
    let replacing_self = config.replace_endpoint()? == Some(me);
    // A node removed from the ring (or decommissioned) whose address comes back empty is a
    // new node: it joins afresh.
    let known = mine
        .iter()
        .find(|s| s.app.ring_status != mosaic_cluster::message::RingStatus::Left);
    if let (Some(state), false) = (known, replacing_self) {
        // The cluster knows a node at this address, and this one lost its data: starting as
        // that node would serve its ranges empty (reads at ONE answered with nothing),
        // starting as a new one would collide with it. Refused, as Cassandra refuses it.
        bail!(
            "A node with address {me} already exists (host id {}, {:?} in the ring), \
             cancelling join. Use replace_address if you want to replace this node: set \
             `replace_address = \"{me}\"` in its config (in a local cluster: `mosaic cluster \
             add-node --dir DIR --replace {me}`); it then streams every range it replicates \
             before it serves",
            state.app.host_id,
            state.app.ring_status,
        );
    }
    // The peers, so the ring is whole from the start (see `restore_peers`).
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating {}", config.data_dir.display()))?;
    crate::durable::write_atomic(
        &config.data_dir.join(PEERS_FILE),
        &serde_json::to_vec(&peers).unwrap_or_default(),
    )
    .context("saving the peers learnt from the seeds")?;
    if !replacing_self {
        // A new node: it joins the ring by bootstrapping when the cluster owns it already.
        crate::moves::plan(config, &peers)?;
        return Ok(());
    }
    // Replacing the dead node at this address: its heartbeat, as the seeds know it, sampled
    // twice more a few gossip intervals apart, must not move.
    let mut samples = vec![mine.into_iter().next()];
    let pause = Duration::from_millis(config.cluster.gossip_interval_ms.saturating_mul(2));
    for _ in 0..2 {
        tokio::time::sleep(pause).await;
        let states =
            internode::shadow_round(listener, me, &seeds, &config.cluster_name, links.clone())
                .await
                .unwrap_or_default();
        samples.push(states.into_iter().find(|s| s.endpoint == me));
    }
    crate::moves::plan_replace_own(config, &samples)?;
    crate::durable::write_atomic(&config.data_dir.join(CODED_RECOVERY_FILE), b"")
        .context("marking the data directory for coded-shard recovery")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_cluster::selection::{SchedulingConfig, SizeOracleId};

    #[test]
    fn the_size_oracle_named_in_the_config_tags_reads() {
        let none = SchedulingConfig::default();
        assert!(tagger(&none).unwrap().is_none());
        let learned = SchedulingConfig {
            size_oracle: SizeOracleId::ItemSize,
            ..SchedulingConfig::default()
        };
        assert_eq!(tagger(&learned).unwrap().unwrap().oracle_id(), "item-size");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sizes.txt");
        let mut fixed = SchedulingConfig {
            size_oracle: SizeOracleId::Static,
            ..SchedulingConfig::default()
        };
        fixed.static_sizes.file = file.to_string_lossy().into_owned();
        // A missing file stops the node, naming it.
        let err = format!("{:#}", tagger(&fixed).err().unwrap());
        assert!(err.contains("sizes.txt"), "{err}");
        std::fs::write(&file, "7 100\n8 2000000\n").unwrap();
        let t = tagger(&fixed).unwrap().unwrap();
        assert_eq!(t.oracle_id(), "static");
        let table = mosaic_types::TableId([1; 16]);
        assert_eq!(t.class(table, 8).priority, 1);
        assert_eq!(t.class(table, 7).size, Some(100));
        // So does a malformed line, naming it.
        std::fs::write(&file, "7 100\nseven 100\n").unwrap();
        let err = format!("{:#}", tagger(&fixed).err().unwrap());
        assert!(err.contains("line 2"), "{err}");
    }
}
