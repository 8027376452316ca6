"""Pytest fixtures that run a real `mosaic server` process and connect real drivers to it.

The binary comes from $MOSAIC_BIN (scripts/test builds it); each server gets a temporary data
directory and a free port on 127.0.0.1, and is stopped by PID at teardown, even on failure.
`make_cluster` starts multi-node clusters with `mosaic cluster up` (see `MosaicCluster`).

MOSAIC_TEST_AGAINST=host:port (opt-in, e.g. an Apache Cassandra 4.1 node) makes the single-node
fixtures (`node`, `fresh_node`, and `cluster`, `session`, `ks` built on them) connect to that
running server instead of starting `mosaic server`: run the single-node driver tests against
Apache Cassandra to check their expectations. Tests that need a Mosaic process (restarts, logs,
the admin endpoint, `make_cluster`) are not meant to be run that way.
"""
import contextlib
import itertools
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest
from cassandra.cluster import Cluster
from cassandra.policies import (ConstantReconnectionPolicy, HostDistance, RoundRobinPolicy, TokenAwarePolicy,
                                WhiteListRoundRobinPolicy)

MOSAIC_BIN = os.environ.get("MOSAIC_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "target", "debug", "mosaic"))
START_TIMEOUT_S = 60
TEST_AGAINST = os.environ.get("MOSAIC_TEST_AGAINST")


# Listening ports come from below the kernel's ephemeral range (32768-60999 here), so an
# outgoing connection (a driver's reconnection attempt, a node dialling a peer) can never hold
# the port a stopped node must bind again when it restarts; a port is taken only if every
# loopback address a cluster may bind (127.0.0.1-8) has it free.
_PORTS = random.Random(os.getpid())
PORT_RANGE = (20000, 32000)
LOOPBACK_ADDRESSES = [f"127.0.0.{i}" for i in range(1, 9)]


def _port_free(port):
    for address in LOOPBACK_ADDRESSES:
        with socket.socket() as s:
            try:
                s.bind((address, port))
            except OSError:
                return False
    return True


def free_port():
    for _ in range(1000):
        port = _PORTS.randrange(*PORT_RANGE)
        if _port_free(port):
            return port
    raise RuntimeError(f"no free port in {PORT_RANGE} on {LOOPBACK_ADDRESSES}")


class Node:
    """One `mosaic server` process on 127.0.0.1:port with its own data directory."""

    def __init__(self, data_dir=None):
        self.tmp = tempfile.TemporaryDirectory(prefix="mosaic-pytest-")
        self.dir = data_dir or self.tmp.name
        self.port = free_port()
        self.config = os.path.join(self.dir, "mosaic.toml")
        with open(self.config, "w") as f:
            f.write(
                'listen_address = "127.0.0.1"\n'
                f"native_port = {self.port}\n"
                f'data_dir = "{os.path.join(self.dir, "data")}"\n'
                "[storage]\nmemtable_size_bytes = 4194304\nblock_cache_size_bytes = 4194304\n"
            )
        self.proc = None
        self.log = None

    def start(self):
        self.log = open(os.path.join(self.dir, "log"), "ab")
        self.proc = subprocess.Popen([MOSAIC_BIN, "server", "--config", self.config], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mosaic exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"mosaic did not listen within {START_TIMEOUT_S}s: {self.log_tail()}")

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                code = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
            self.proc = None
            return code
        self.proc = None
        return None

    def restart(self):
        code = self.stop()
        assert code == 0, f"clean shutdown expected, got {code}: {self.log_tail()}"
        return self.start()

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "log"), "rb") as f:
                return f.read()[-4000:].decode(errors="replace")
        except OSError:
            return ""

    def cluster(self, **kwargs):
        kwargs.setdefault("protocol_version", 4)
        kwargs.setdefault("load_balancing_policy", RoundRobinPolicy())
        return Cluster(["127.0.0.1"], port=self.port, **kwargs)

    def close(self):
        try:
            self.stop()
        finally:
            if self.log:
                self.log.close()
            self.tmp.cleanup()


class ExternalNode:
    """A server already running at MOSAIC_TEST_AGAINST (host:port): connected to, never started
    or stopped (no process, no log, no restart)."""

    def __init__(self, address):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"MOSAIC_TEST_AGAINST must be host:port, got {address!r}")
        self.host = host
        self.port = int(port)
        self.proc = None

    def start(self):
        return self

    def stop(self, sig=signal.SIGTERM):
        raise RuntimeError("MOSAIC_TEST_AGAINST: an external server is not stopped by the tests")

    def restart(self):
        raise RuntimeError("MOSAIC_TEST_AGAINST: an external server is not restarted by the tests")

    def log_tail(self):
        return ""

    def cluster(self, **kwargs):
        kwargs.setdefault("protocol_version", 4)
        kwargs.setdefault("load_balancing_policy", RoundRobinPolicy())
        return Cluster([self.host], port=self.port, **kwargs)

    def close(self):
        pass


def _single_node():
    return ExternalNode(TEST_AGAINST) if TEST_AGAINST else Node()


@pytest.fixture(scope="session")
def node():
    n = _single_node().start()
    try:
        yield n
    finally:
        n.close()


@pytest.fixture()
def fresh_node():
    n = _single_node().start()
    try:
        yield n
    finally:
        n.close()


@pytest.fixture(scope="session")
def cluster(node):
    c = node.cluster()
    yield c
    c.shutdown()


@pytest.fixture(scope="session")
def session(cluster):
    return cluster.connect()


_names = itertools.count()


@pytest.fixture()
def ks(session):
    """A fresh keyspace, in use by `session` for the test."""
    name = f"ks{os.getpid()}_{next(_names)}"
    session.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    session.set_keyspace(name)
    yield name
    session.execute(f"DROP KEYSPACE {name}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the log tails of the servers it used, so a failure seen
    only in CI can be read from CI's output."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for name, value in getattr(item, "funcargs", {}).items():
        if isinstance(value, MosaicCluster):
            report.sections.append((f"mosaic logs of cluster {name!r}", value.logs()))
        elif isinstance(value, Node):
            report.sections.append((f"mosaic log of node {name!r}", value.log_tail()))


class WarningCatcher(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture()
def driver_warnings():
    """Records what the `cassandra` logger says at WARNING and above."""
    catcher = WarningCatcher()
    logger = logging.getLogger("cassandra")
    logger.addHandler(catcher)
    try:
        yield catcher.records
    finally:
        logger.removeHandler(catcher)


# Gossip fast enough that a dead node is noticed in about two seconds.
FAST_CLUSTER_SETTINGS = (
    "cluster.gossip_interval_ms=200",
    "cluster.phi_convict_threshold=5",
    "storage.memtable_size_bytes=4194304",
    "storage.block_cache_size_bytes=4194304",
)
CLUSTER_WAIT_S = 60


def process_alive(pid):
    """Whether `pid` runs and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def process_runs_config(pid, config):
    """Whether `pid` is a `mosaic server` running `config` (never signal anything else)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return False
    return b"server" in args and config.encode() in args


REPO = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.fixture(scope="session")
def driver_probes():
    """The Go and Node.js driver probes of tests/drivers, built once by scripts/driver-probes:
    name → the command that runs it."""
    out = os.environ.get("MOSAIC_PROBES_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "mosaic-probes"))
    subprocess.run([os.path.join(REPO, "scripts", "driver-probes"), out], check=True, timeout=900)
    return {
        "go": [os.path.join(out, "go-schema-probe")],
        "go-auth": [os.path.join(out, "go-auth-probe")],
        "node": ["node", os.path.join(REPO, "tests", "drivers", "node", "schema_probe.js")],
    }


def wait_until(what, predicate, timeout=CLUSTER_WAIT_S, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class MosaicCluster:
    """A local cluster of `nodes` `mosaic server` processes started by `mosaic cluster up` in
    a temporary directory: node i on 127.0.0.i with free CQL, internode and admin ports (the
    same on every node). Every pid it ever started is remembered, and `close` stops them all:
    `mosaic cluster down`, then SIGKILL to any still running."""

    def __init__(self, nodes, settings=(), up_args=()):
        self.tmp = tempfile.TemporaryDirectory(prefix="mosaic-cluster-")
        self.up_args = list(up_args)  # more `cluster up` flags, e.g. ("--datacenters", "2")
        self.dir = os.path.join(self.tmp.name, "c")
        self.nodes = nodes
        ports = set()
        while len(ports) < 3:
            ports.add(free_port())
        self.port, self.storage_port, self.admin_port = sorted(ports)
        self.settings = list(FAST_CLUSTER_SETTINGS) + list(settings)
        self.started = set()  # (node, pid) of every process started
        self.drivers = []

    # -- files and addresses -------------------------------------------------------------
    def ip(self, i):
        return f"127.0.0.{i}"

    def node_dir(self, i):
        return os.path.join(self.dir, f"node{i}")

    def config(self, i):
        return os.path.join(self.node_dir(i), "mosaic.toml")

    def endpoint(self, i):
        """The node's internode endpoint, as /status names it."""
        return f"{self.ip(i)}:{self.storage_port}"

    def pid(self, i):
        with open(os.path.join(self.node_dir(i), "pid")) as f:
            return int(f.read().strip())

    def log_tail(self, i, n=4000):
        try:
            with open(os.path.join(self.node_dir(i), "log"), "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def logs(self):
        return "\n".join(f"--- node{i} log:\n{self.log_tail(i, 2500)}" for i in range(1, self.nodes + 1))

    # -- the mosaic command -----------------------------------------------------------------
    def mosaic(self, *args, check=True, timeout=120):
        try:
            p = subprocess.run([MOSAIC_BIN, *args], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"mosaic {' '.join(args)} did not finish within {timeout}s:\n{self.logs()}") from e
        if check and p.returncode != 0:
            raise AssertionError(f"mosaic {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}\n{self.logs()}")
        return p

    def up(self):
        """`mosaic cluster up`: starts every node not running; returns once all see all UP."""
        args = ["cluster", "up", "--nodes", str(self.nodes), "--dir", self.dir, "--port", str(self.port),
                "--storage-port", str(self.storage_port), "--admin-port", str(self.admin_port)]
        for setting in self.settings:
            args += ["--set", setting]
        args += self.up_args
        try:
            return self.mosaic(*args, timeout=180)
        finally:
            self._remember_pids()

    def add_node(self, replace=None, live=None, settings=()):
        """`mosaic cluster add-node`: bootstraps the next node; returns once every node sees
        it Normal. With `replace` (a dead node's number), `--replace`: the new node takes
        that node's place, and the wait is until it and the nodes of `live` (every other
        node by default) see it Normal and the dead node Left. `settings`: config keys of
        the new node (`--set`)."""
        args = ["--replace", self.endpoint(replace)] if replace is not None else []
        sets = [a for setting in settings for a in ("--set", setting)]
        p = self.mosaic("cluster", "add-node", "--dir", self.dir, *args, *sets, timeout=240 if args else 180)
        self.nodes += 1
        self._remember_pids()
        n = self.nodes
        assert f"node{n}: joined the cluster" in p.stdout, p.stdout + p.stderr
        observers = [*(live if live is not None else range(1, n)), n]

        def seen(i):
            st = self.status(i)
            return (st.get(self.endpoint(n), {}).get("state") == "Normal"
                    and (replace is None or st[self.endpoint(replace)]["state"] == "Left"))

        wait_until(f"every node to see node {n} normal" + (f" and node {replace} left" if args else ""),
                   lambda: all(seen(i) for i in observers))
        return p

    def restart(self):
        """`up`: starts the nodes not running and waits until every node sees every other
        UP. Nothing more: requests sent right after a restart must work (a node drops its
        connection to a peer's previous process as soon as that process dies), and the
        drivers this cluster handed out must have their connections back, as an application
        waits for its driver to see the hosts UP before it counts on them."""
        self.up()
        self.wait_drivers_up()

    def wait_drivers_up(self):
        """Waits until every open driver sees every host it would send requests to UP."""

        def all_up():
            for d in self.drivers:
                if d.is_shutdown:
                    continue
                for host in d.metadata.all_hosts():
                    if d.profile_manager.distance(host) != HostDistance.IGNORED and not host.is_up:
                        return False
            return True

        wait_until("the drivers to see every host UP again", all_up, timeout=30, interval=0.05)
        # A host the driver sees UP may still sit behind a pool whose connections its previous
        # process closed (the driver then fails a request with ConnectionShutdown on every
        # host at once, seen in CI after a node was wiped and the others restarted): a query
        # to each host through each session makes the driver find out and reconnect first.
        for d in self.drivers:
            if d.is_shutdown:
                continue
            for session in list(d.sessions):
                for host in d.metadata.all_hosts():
                    if d.profile_manager.distance(host) == HostDistance.IGNORED:
                        continue

                    def answers(session=session, host=host):
                        try:
                            session.execute("SELECT release_version FROM system.local", host=host, timeout=5)
                            return True
                        except Exception:
                            return False

                    wait_until(f"{host} to answer through every session", answers, timeout=30, interval=0.1)

    def _remember_pids(self):
        for i in range(1, self.nodes + 1):
            with contextlib.suppress(OSError, ValueError):
                self.started.add((i, self.pid(i)))

    # -- processes ---------------------------------------------------------------------------
    def kill(self, i, sig=signal.SIGKILL):
        """Sends `sig` to node i (SIGKILL: waits until it is gone)."""
        pid = self.pid(i)
        assert process_runs_config(pid, self.config(i)), f"node{i} (pid {pid}) is not running"
        os.kill(pid, sig)
        if sig == signal.SIGKILL:
            wait_until(f"node{i} to die", lambda: not process_alive(pid), timeout=10, interval=0.02)

    def stop(self, *nodes):
        """Stops nodes cleanly (SIGTERM: a node announces its shutdown, so the others see it
        DOWN at once) and waits until they have exited."""
        pids = {i: self.pid(i) for i in nodes}
        for i in nodes:
            self.kill(i, signal.SIGTERM)
        for i, pid in pids.items():
            wait_until(f"node{i} to exit", lambda: not process_alive(pid), timeout=60, interval=0.02)

    def wipe(self, i):
        """kill -9 node i and delete its data directory. The node cannot simply be started
        again (the cluster knows its address: it is refused, as Cassandra refuses it); it
        comes back by `replace_in_place`."""
        self.kill(i)
        shutil.rmtree(os.path.join(self.node_dir(i), "data"))

    def replace_in_place(self, i):
        """`mosaic cluster add-node --replace` with the address of node i, whose process is
        dead and whose data directory was wiped: it takes the dead node's identity, streams
        every range it replicates, then serves. Returns once every node sees it UP and
        Normal and the drivers see every host UP."""
        p = self.mosaic("cluster", "add-node", "--dir", self.dir, "--replace", self.endpoint(i), timeout=240)
        self._remember_pids()
        assert f"node{i}: replaced the dead node at its address" in p.stdout, p.stdout + p.stderr

        def normal_everywhere():
            seen = [self.status(j)[self.endpoint(i)] for j in range(1, self.nodes + 1)]
            return all(node["state"] == "Normal" and node["up"] for node in seen)

        wait_until(f"every node to see node {i} up and normal", normal_everywhere)
        self.wait_drivers_up()
        return p

    def start_refused(self, i):
        """Starts node i in the foreground; it must exit non-zero at once: its stderr. Right
        after a kill -9 the node's internode port may still be held for a moment (seen here
        2 runs in 6): that refusal is not the one looked for, so the start is tried again."""
        deadline = time.monotonic() + 20
        while True:
            p = subprocess.run([MOSAIC_BIN, "server", "--config", self.config(i)], capture_output=True, text=True,
                               timeout=60)
            assert p.returncode != 0, p.stdout + p.stderr
            if "Address already in use" not in p.stderr or time.monotonic() > deadline:
                return p.stderr
            time.sleep(0.5)

    # -- admin endpoint ----------------------------------------------------------------------
    def admin(self, i):
        return f"{self.ip(i)}:{self.admin_port}"

    def http(self, i, path):
        with urllib.request.urlopen(f"http://{self.admin(i)}{path}", timeout=10) as r:
            return r.read().decode()

    def status(self, i):
        """`GET /status` of node i: {endpoint: node} with up, load_bytes, schema_version, …"""
        return {n["endpoint"]: n for n in json.loads(self.http(i, "/status"))["nodes"]}

    def metric(self, i, name):
        """The sum of every sample of Prometheus metric `name` on node i (0 if absent)."""
        total = 0.0
        for line in self.http(i, "/metrics").splitlines():
            if line.startswith(name) and line[len(name):len(name) + 1] in (" ", "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def wait_seen(self, observers, nodes, up):
        """Waits until every observer node reports each of `nodes` UP (or DOWN)."""

        def seen():
            for o in observers:
                try:
                    st = self.status(o)
                except OSError:
                    return False
                if any(st.get(self.endpoint(n), {}).get("up") is not up for n in nodes):
                    return False
            return True

        wait_until(f"nodes {list(nodes)} {'UP' if up else 'DOWN'} as seen by {list(observers)}", seen)

    def wait_schema_agreement(self):
        def agreed():
            try:
                versions = {n["schema_version"] for i in range(1, self.nodes + 1) for n in self.status(i).values()}
            except OSError:
                return False
            return len(versions) == 1

        wait_until("schema agreement", agreed)

    def others(self, *nodes):
        return [i for i in range(1, self.nodes + 1) if i not in nodes]

    @contextlib.contextmanager
    def alone(self, i):
        """Node i with every other node stopped and seen DOWN by node i, so that a read at ONE
        coordinated by node i can only be served by node i's own data; then all restarted."""
        others = self.others(i)
        self.stop(*others)
        self.wait_seen([i], others, up=False)
        yield
        self.restart()

    # -- drivers -----------------------------------------------------------------------------
    def driver(self, contact=1, only=None, **kwargs):
        """A cassandra-driver Cluster: token-aware round robin over all nodes, or only node
        `only` (a white list) so that node coordinates every request."""
        kwargs.setdefault("protocol_version", 4)
        # Tests restart nodes often: a driver retries every 0.2 s rather than backing off to
        # minutes, so a node that is back is used again at once.
        kwargs.setdefault("reconnection_policy", ConstantReconnectionPolicy(0.2, max_attempts=None))
        if only is not None:
            contact = only
            kwargs.setdefault("load_balancing_policy", WhiteListRoundRobinPolicy([self.ip(only)]))
        else:
            kwargs.setdefault("load_balancing_policy", TokenAwarePolicy(RoundRobinPolicy()))
        c = Cluster([self.ip(contact)], port=self.port, **kwargs)
        self.drivers.append(c)
        return c

    def session(self, keyspace=None, **kwargs):
        return self.driver(**kwargs).connect(keyspace)

    def close(self):
        for c in self.drivers:
            with contextlib.suppress(Exception):
                c.shutdown()
        self._remember_pids()
        try:
            if os.path.isdir(self.dir):
                self.mosaic("cluster", "down", "--dir", self.dir, check=False, timeout=120)
        except subprocess.TimeoutExpired:
            pass
        finally:
            for i, pid in self.started:
                if process_alive(pid) and process_runs_config(pid, self.config(i)):
                    os.kill(pid, signal.SIGKILL)
            self.tmp.cleanup()


# Every cluster test runs under each replica layout (issue 6). Under multi-lsm and decoupled
# the memtables are tiny and the log's bounds small, so flushes, compactions, splits and
# merge-sorts run while the tests write, read, kill and repair.
LAYOUT_SETTINGS = {
    "uniform": ("storage.layout=uniform",),
    "multi-lsm": ("storage.layout=multi-lsm", "storage.memtable_size_bytes=65536"),
    "decoupled": ("storage.layout=decoupled", "storage.memtable_size_bytes=65536",
                  "storage.split_segments=2", "storage.sorted_runs_max=3"),
}


@pytest.fixture(params=list(LAYOUT_SETTINGS))
def layout(request):
    """The replica layout the test's clusters store tables in (their configured default)."""
    return request.param


@pytest.fixture()
def make_cluster(layout):
    """make_cluster(nodes, settings=()) starts a MosaicCluster whose tables default to the
    `layout` fixture's layout; all are stopped at teardown."""
    made = []

    def make(nodes, settings=()):
        c = MosaicCluster(nodes, LAYOUT_SETTINGS[layout] + tuple(settings))
        made.append(c)
        c.up()
        return c

    try:
        yield make
    finally:
        for c in made:
            c.close()
