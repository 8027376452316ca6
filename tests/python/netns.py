"""Nodes on separate "hosts" on one machine (issue 14): one Linux network namespace per node.

`Network` makes a bridge in the root namespace (`mosbr<pid>`, 10.X.Y.1/24 on a subnet derived
from the test process's pid and used by nothing else here) and, per host, a namespace
`mosaic-<pid>-<n>` joined to the bridge by a veth pair: the namespace's end is its `eth0`
with 10.X.Y.(10+n)/24, `lo` up and a default route via the bridge. `NetnsCluster` runs one
`mosaic server` per namespace (`ip netns exec NS mosaic server --config FILE`), each binding
its namespace's address for internode, CQL and the admin port, on the default ports (each
host has its own ports, as separate machines do). The driver and the `mosaic` CLI run in the
root namespace and reach the nodes across the bridge.

Faults stay inside the namespaces: a partition is firewall rules in each node's own
namespace (iptables, else nft) dropping its packets from and to the other side — not in the
root namespace, whose FORWARD chain also sees bridged frames when
net.bridge.bridge-nf-call-iptables is 1 — and latency and loss are `tc netem` on the two
ends of one node's veth pair. `close` stops every server started by pid and deletes the
namespaces (with their rules and qdiscs), the veths and the bridge, even after a failure.
"""
import contextlib
import errno
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from cassandra.cluster import Cluster
from cassandra.policies import (ConstantReconnectionPolicy, HostDistance, RoundRobinPolicy, TokenAwarePolicy,
                                WhiteListRoundRobinPolicy)

from conftest import MOSAIC_BIN, MosaicCluster, wait_until

NATIVE_PORT, STORAGE_PORT, ADMIN_PORT = 9042, 7000, 7199
START_TIMEOUT_S = 90
NUM_TOKENS = 16


def run(args, check=True, timeout=30):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def unavailable_reason():
    """Why this machine cannot run the namespace tests, or None when it can."""
    if sys.platform != "linux":
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "needs root to create network namespaces, veth pairs and a bridge"
    if shutil.which("ip") is None:
        return "needs the `ip` command (Debian package iproute2)"
    try:
        with _probe_namespace() as probe:
            for what, args in (("a bridge", ["link", "add", "probe0", "type", "bridge"]),
                               ("a veth pair", ["link", "add", "probe1", "type", "veth", "peer", "name", "probe2"])):
                p = run(["ip", "-n", probe, *args], check=False)
                if p.returncode != 0:
                    return f"cannot create {what}: {p.stderr.strip()}"
    except RuntimeError as e:
        return f"`ip netns add` is not allowed here: {e}"
    return None


def netem_unavailable():
    """Why `tc qdisc … netem` does not work here (e.g. a kernel without sch_netem), or None."""
    if shutil.which("tc") is None:
        return "needs the `tc` command (Debian package iproute2)"
    with _probe_namespace() as probe:
        p = run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
                check=False)
        return None if p.returncode == 0 else (p.stderr.strip() or f"tc exited {p.returncode}")


@contextlib.contextmanager
def _probe_namespace():
    name = f"mosaic-{os.getpid()}-probe"
    run(["ip", "netns", "add", name])
    try:
        yield name
    finally:
        run(["ip", "netns", "del", name], check=False)


def firewall():
    """The firewall command partitions use: "iptables", else "nft", else None."""
    for tool in ("iptables", "nft"):
        if shutil.which(tool):
            return tool
    return None


def _subnets_in_use():
    nets = []
    for args in (["ip", "-j", "-4", "route", "show", "table", "all"], ["ip", "-j", "-4", "addr"]):
        out = run(args, check=False).stdout or "[]"
        for entry in json.loads(out):
            if "addr_info" in entry:
                nets += [ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False) for a in entry["addr_info"]]
            elif entry.get("dst") not in (None, "default"):
                with contextlib.suppress(ValueError):
                    nets.append(ipaddress.ip_network(entry["dst"], strict=False))
    return nets


def free_subnet(seed):
    """A 10.X.Y.0/24 (X in 128..255) that no route or address of the root namespace overlaps,
    the first one tried derived from `seed`."""
    used = _subnets_in_use()
    for attempt in range(512):
        n = (seed * 7919 + attempt * 104729) % (128 * 256)
        net = ipaddress.ip_network(f"10.{128 + n // 256}.{n % 256}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free 10.x.y.0/24 subnet for the test bridge")


class Host:
    """One network namespace on the bridge: `name`, `address`, the root end of its veth."""

    def __init__(self, name, address, veth):
        self.name, self.address, self.veth = name, address, veth

    def cmd(self, *args):
        return ["ip", "netns", "exec", self.name, *args]

    def run(self, *args, check=True):
        return run(self.cmd(*args), check=check)


class Network:
    """The bridge and the hosts (namespaces) of one test process; see the module doc."""

    def __init__(self):
        self.pid = os.getpid()
        self.bridge = f"mosbr{self.pid}"
        self.net = None
        self.hosts = []
        self.made = 0  # hosts made so far: names and addresses are never reused
        self.rules = []  # argv that delete a partition or loss rule
        self.qdiscs = []  # argv that delete a netem qdisc

    @property
    def gateway(self):
        return str(self.net.network_address + 1)

    def setup(self):
        self.net = free_subnet(self.pid)
        run(["ip", "link", "add", self.bridge, "type", "bridge"])
        run(["ip", "addr", "add", f"{self.gateway}/{self.net.prefixlen}", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])
        return self

    def add_host(self):
        self.made += 1
        n = self.made
        if n > 200:
            raise RuntimeError("too many hosts on one test network")
        host = Host(f"mosaic-{self.pid}-{n}", str(self.net.network_address + 10 + n), f"mosv{self.pid}-{n}")
        self.hosts.append(host)
        run(["ip", "netns", "add", host.name])
        run(["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.name])
        run(["ip", "link", "set", host.veth, "master", self.bridge])
        run(["ip", "link", "set", host.veth, "up"])
        run(["ip", "-n", host.name, "link", "set", "lo", "up"])
        run(["ip", "-n", host.name, "addr", "add", f"{host.address}/{self.net.prefixlen}", "dev", "eth0"])
        run(["ip", "-n", host.name, "link", "set", "eth0", "up"])
        run(["ip", "-n", host.name, "route", "add", "default", "via", self.gateway])
        return host

    def remove_host(self, host):
        self.hosts.remove(host)
        run(["ip", "netns", "del", host.name], check=False)
        # Deleting the namespace deletes its end of the pair, and so the pair; to be sure:
        if os.path.exists(f"/sys/class/net/{host.veth}"):
            run(["ip", "link", "del", host.veth], check=False)

    def close(self):
        self.heal()
        self.clear_netem()
        for host in list(self.hosts):
            self.remove_host(host)
        if os.path.exists(f"/sys/class/net/{self.bridge}"):
            run(["ip", "link", "del", self.bridge], check=False)

    # -- faults ----------------------------------------------------------------------------
    def partition(self, side_a, side_b):
        """Drops every packet between the hosts of `side_a` and those of `side_b`, by rules in
        each host's own namespace (input from and output to each host of the other side)."""
        tool = firewall()
        for ours, theirs in ((side_a, side_b), (side_b, side_a)):
            for host in ours:
                if tool == "iptables":
                    for peer in theirs:
                        for chain, flag in (("INPUT", "-s"), ("OUTPUT", "-d")):
                            rule = [chain, flag, peer.address, "-j", "DROP"]
                            host.run("iptables", "-w", "-A", *rule)
                            self.rules.append(host.cmd("iptables", "-w", "-D", *rule))
                elif tool == "nft":
                    peers = ", ".join(p.address for p in theirs)
                    nft_script(host, "table inet mosaic_partition {\n"
                                     f" chain input {{ type filter hook input priority 0; ip saddr {{ {peers} }} drop; }}\n"
                                     f" chain output {{ type filter hook output priority 0; ip daddr {{ {peers} }} drop; }}\n"
                                     "}\n")
                    self.rules.append(host.cmd("nft", "delete", "table", "inet", "mosaic_partition"))
                else:
                    raise RuntimeError("neither iptables nor nft is installed")

    def heal(self):
        """Deletes every partition and loss rule."""
        while self.rules:
            run(self.rules.pop(), check=False)

    def lose(self, host, percent):
        """Drops `percent`% of the packets `host` sends and of those it receives, at random,
        by rules in its namespace: packet loss where the kernel has no netem."""
        tool = firewall()
        if tool == "iptables":
            for chain in ("INPUT", "OUTPUT"):
                rule = [chain, "-m", "statistic", "--mode", "random", "--probability", str(percent / 100), "-j", "DROP"]
                host.run("iptables", "-w", "-A", *rule)
                self.rules.append(host.cmd("iptables", "-w", "-D", *rule))
        elif tool == "nft":
            chains = "".join(f" chain {hook} {{ type filter hook {hook} priority 0; numgen random mod 100 < {percent} "
                             "counter drop; }\n" for hook in ("input", "output"))
            nft_script(host, "table inet mosaic_loss {\n" + chains + "}\n")
            self.rules.append(host.cmd("nft", "delete", "table", "inet", "mosaic_loss"))
        else:
            raise RuntimeError("neither iptables nor nft is installed")

    def lost(self, host):
        """Packets the loss rules of `host` dropped so far."""
        if firewall() == "iptables":
            out = host.run("iptables", "-w", "-L", "-v", "-x", "-n").stdout
            return sum(int(line.split()[0]) for line in out.splitlines() if "statistic mode random" in line)
        out = host.run("nft", "list", "table", "inet", "mosaic_loss").stdout
        return sum(int(n) for n in re.findall(r"counter packets (\d+)", out))

    def netem_dropped(self, host):
        """Packets the netem qdiscs on `host`'s veth pair dropped so far."""
        out = host.run("tc", "-s", "qdisc", "show", "dev", "eth0").stdout
        out += run(["tc", "-s", "qdisc", "show", "dev", host.veth]).stdout
        return sum(int(n) for n in re.findall(r"dropped (\d+)", out))

    def netem(self, host, spec):
        """`tc qdisc … netem SPEC` on both ends of `host`'s veth pair: what it sends and what
        it receives (driver traffic included)."""
        for tc, dev in ((host.cmd("tc"), "eth0"), (["tc"], host.veth)):
            run([*tc, "qdisc", "add", "dev", dev, "root", "netem", *spec])
            self.qdiscs.append([*tc, "qdisc", "del", "dev", dev, "root"])

    def clear_netem(self):
        while self.qdiscs:
            run(self.qdiscs.pop(), check=False)


def nft_script(host, script):
    p = subprocess.run(host.cmd("nft", "-f", "-"), input=script, capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise RuntimeError(f"nft in {host.name}: {p.stderr.strip()}")


def even_tokens(nodes, per_node=NUM_TOKENS):
    """`mosaic_cluster::tokens::even`: node i's evenly interleaved tokens (what `mosaic cluster
    up` gives a new cluster's nodes)."""
    step = (1 << 64) // (nodes * per_node)
    return [[-(1 << 63) + step // 2 + (j * nodes + i) * step for j in range(per_node)] for i in range(nodes)]


class NetnsCluster:
    """`nodes` `mosaic server` processes, node i (from 1) alone on its own host of `network`;
    node 1 is the seed. `settings`: (dotted key, TOML value) pairs for every node's config. The
    servers' pids are kept, and `close` stops them."""

    def __init__(self, network, nodes, settings=(), wildcard=()):
        self.network = network
        self.nodes = nodes
        self.wildcard = set(wildcard)  # nodes listening on 0.0.0.0 with a broadcast_address
        self.tmp = tempfile.TemporaryDirectory(prefix="mosaic-netns-")
        self.hosts = {}
        self.procs = {}
        self.logs_open = {}
        self.drivers = []
        self.settings = settings
        secret = os.path.join(self.tmp.name, "cluster.secret")
        with open(secret, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(secret, 0o600)
        self.secret = secret

    def ip(self, i):
        return self.hosts[i].address

    def admin(self, i):
        return f"{self.ip(i)}:{ADMIN_PORT}"

    def endpoint(self, i):
        return f"{self.ip(i)}:{STORAGE_PORT}"

    def node_dir(self, i):
        return os.path.join(self.tmp.name, f"node{i}")

    def config(self, i):
        return os.path.join(self.node_dir(i), "mosaic.toml")

    def _write_config(self, i, tokens):
        os.makedirs(self.node_dir(i), exist_ok=True)
        ip = self.ip(i)
        top = {"cluster_name": f'"netns-{self.network.pid}"', "listen_address": f'"{ip}"',
               "admin_listen_address": f'"{ip}"', "native_port": NATIVE_PORT, "storage_port": STORAGE_PORT,
               "admin_port": ADMIN_PORT, "data_dir": f'"{os.path.join(self.node_dir(i), "data")}"',
               "seeds": f'["{self.endpoint(1)}"]', "num_tokens": NUM_TOKENS,
               "initial_token": f"[{', '.join(map(str, tokens))}]"}
        if i in self.wildcard:
            # As in a container: every address bound, the node's own one advertised.
            top.update(listen_address='"0.0.0.0"', broadcast_address=f'"{ip}"', admin_listen_address='"0.0.0.0"')
        # Gossip fast enough that a node cut off is seen DOWN in about two seconds.
        sections = {"": top,
                    "cluster": {"gossip_interval_ms": 200, "phi_convict_threshold": 5},
                    "storage": {"memtable_size_bytes": 4194304, "block_cache_size_bytes": 4194304},
                    "internode_auth": {"secret_file": f'"{self.secret}"'}}
        for key, value in self.settings:
            section, _, name = key.rpartition(".")
            sections.setdefault(section, {})[name] = value
        text = "".join(f"{name} = {value}\n" for name, value in sections.pop("").items())
        for section, keys in sections.items():
            text += f"[{section}]\n" + "".join(f"{name} = {value}\n" for name, value in keys.items())
        with open(self.config(i), "w") as f:
            f.write(text)

    # -- processes ---------------------------------------------------------------------------
    def up(self):
        """Makes a host per node, starts every node, and returns once each answers CQL and
        sees every node UP."""
        for i, tokens in enumerate(even_tokens(self.nodes), start=1):
            self.hosts[i] = self.network.add_host()
            self._write_config(i, tokens)
        self.check_links()
        for i in range(1, self.nodes + 1):
            self.start(i)
        for i in range(1, self.nodes + 1):
            self.wait_listening(i)
        self.wait_seen(range(1, self.nodes + 1), range(1, self.nodes + 1), up=True, timeout=START_TIMEOUT_S)
        return self

    def check_links(self):
        """Node 1's host reaches every other host across the bridge (TCP), and the root
        namespace reaches each; a clear error otherwise (e.g. a root FORWARD chain dropping
        bridged frames while net.bridge.bridge-nf-call-iptables is 1)."""
        first = self.hosts[1]
        for i, host in self.hosts.items():
            with socket.socket() as s:  # the root namespace's view: a closed port answers RST
                s.settimeout(3)
                err = s.connect_ex((host.address, 9))
            if err != errno.ECONNREFUSED:  # the host answered
                raise RuntimeError(f"the root namespace cannot reach {host.address} ({os.strerror(err)})")
            if i == 1:
                continue
            probe = ("import socket,sys\ns=socket.socket();s.settimeout(3)\n"
                     f"sys.exit(0 if s.connect_ex(('{host.address}', 9)) == {errno.ECONNREFUSED} else 1)")
            if first.run(sys.executable, "-c", probe, check=False).returncode != 0:
                raise RuntimeError(
                    f"{first.address} cannot reach {host.address} across bridge {self.network.bridge}: does the "
                    "root namespace's FORWARD chain drop bridged frames (net.bridge.bridge-nf-call-iptables)?")

    def start(self, i):
        log = open(os.path.join(self.node_dir(i), "log"), "ab")
        self.logs_open[i] = log
        self.procs[i] = subprocess.Popen(self.hosts[i].cmd(MOSAIC_BIN, "server", "--config", self.config(i)),
                                         stdout=log, stderr=log)

    def wait_listening(self, i):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.procs[i].poll() is not None:
                raise RuntimeError(f"node{i} exited with {self.procs[i].returncode}: {self.log_tail(i)}")
            try:
                with socket.create_connection((self.ip(i), NATIVE_PORT), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"node{i} did not listen on {self.ip(i)}:{NATIVE_PORT} within {START_TIMEOUT_S}s: "
                           f"{self.log_tail(i)}")

    def stop(self, i):
        """SIGTERM to node i's server (its pid: `ip netns exec` runs it in its own process),
        SIGKILL if it has not exited within 30 s."""
        proc = self.procs[i]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        del self.procs[i]

    def close(self):
        for d in self.drivers:
            with contextlib.suppress(Exception):
                d.shutdown()
        try:
            for i in list(self.procs):
                self.stop(i)
        finally:
            for proc in self.procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            for log in self.logs_open.values():
                log.close()
            self.network.heal()
            self.network.clear_netem()
            for host in self.hosts.values():
                self.network.remove_host(host)
            self.tmp.cleanup()

    log_tail = MosaicCluster.log_tail  # node_dir(i)/log, as there

    def logs(self):
        return "\n".join(f"--- node{i} ({self.ip(i)}) log:\n{self.log_tail(i, 2500)}" for i in self.hosts)

    # -- admin endpoint and CLI --------------------------------------------------------------
    def status(self, i, timeout=5):
        with urllib.request.urlopen(f"http://{self.admin(i)}/status", timeout=timeout) as r:
            return {n["endpoint"]: n for n in json.loads(r.read().decode())["nodes"]}

    def sees(self, observer, nodes, up):
        """Whether node `observer` answers /status with each of `nodes` UP (or DOWN)."""
        try:
            st = self.status(observer)
        except OSError:
            return False
        return all(st.get(self.endpoint(n), {}).get("up") is up for n in nodes)

    def wait_seen(self, observers, nodes, up, timeout=60):
        observers, nodes = list(observers), list(nodes)

        def seen():
            return all(self.sees(o, nodes, up) for o in observers)

        try:
            wait_until(f"nodes {nodes} {'UP' if up else 'DOWN'} as seen by {observers}", seen, timeout=timeout,
                       interval=0.2)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.logs()}") from None

    def mosaic(self, *args, timeout=120):
        p = subprocess.run([MOSAIC_BIN, *args], capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise AssertionError(f"mosaic {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}\n{self.logs()}")
        return p.stdout

    # -- drivers -----------------------------------------------------------------------------
    def driver(self, only=None, **kwargs):
        """A driver in the root namespace: token-aware over every node, or only node `only`."""
        kwargs.setdefault("protocol_version", 4)
        kwargs.setdefault("reconnection_policy", ConstantReconnectionPolicy(0.5, max_attempts=None))
        contact = only or 1
        if only is not None:
            kwargs.setdefault("load_balancing_policy", WhiteListRoundRobinPolicy([self.ip(only)]))
        else:
            kwargs.setdefault("load_balancing_policy", TokenAwarePolicy(RoundRobinPolicy()))
        c = Cluster([self.ip(contact)], port=NATIVE_PORT, **kwargs)
        self.drivers.append(c)
        return c

    def session(self, keyspace=None, only=None, **kwargs):
        """A session of a new `driver`, once it has a connection to each node it uses (the
        driver may return from connect while a pool is still being opened)."""
        d = self.driver(only=only, **kwargs)
        s = d.connect(keyspace)
        for host in d.metadata.all_hosts():
            if d.profile_manager.distance(host) == HostDistance.IGNORED:
                continue

            def answers(host=host):
                try:
                    s.execute("SELECT release_version FROM system.local", host=host, timeout=5)
                    return True
                except Exception:  # noqa: BLE001 -- not connected yet
                    return False

            wait_until(f"the driver to reach {host}", answers, timeout=30, interval=0.1)
        return s
