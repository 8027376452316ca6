"""Pytest fixtures that run a real `mosaic server` process and connect real drivers to it.

The binary comes from $MOSAIC_BIN (scripts/test builds it); each server gets a temporary data
directory and a free port on 127.0.0.1, and is stopped by PID at teardown, even on failure.
"""
import itertools
import logging
import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest
from cassandra.cluster import Cluster
from cassandra.policies import RoundRobinPolicy

MOSAIC_BIN = os.environ.get("MOSAIC_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "target", "debug", "mosaic"))
START_TIMEOUT_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@pytest.fixture(scope="session")
def node():
    n = Node().start()
    try:
        yield n
    finally:
        n.close()


@pytest.fixture()
def fresh_node():
    n = Node().start()
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
