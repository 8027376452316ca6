"""A node whose datacenter or rack changed refuses to start (as Cassandra refuses a node whose
snitch's datacenter or rack differs from the one in its system.local): the node remembers
where it ran in data_dir/node.toml; started with another `data_center` or `rack` it exits
non-zero naming both values and the ways out, unless `ignore_data_center_change` /
`ignore_rack_change` accept the change, which is then remembered and gossiped. A node.toml
written before locations were remembered starts and takes the configured ones; a wiped node
replacing itself (`replace_address` = its own address) takes its gossiped location too."""
import contextlib
import os
import re

from conftest import MosaicCluster, wait_until


@contextlib.contextmanager
def running(nodes, **kwargs):
    """A MosaicCluster of `nodes` (up), stopped whole at the end."""
    c = MosaicCluster(nodes, **kwargs)
    try:
        c.up()
        yield c
    finally:
        c.close()


def set_keys(path, **keys):
    """Sets top-level keys of a node's config file (`cluster up` writes every key out)."""
    with open(path) as f:
        text = f.read()
    for key, value in keys.items():
        line = f"{key} = {value}"
        text, n = re.subn(rf"^{key} = .*$", line, text, count=1, flags=re.M)
        if n == 0:  # a key left out when unset: a top-level key goes before every table
            text = f"{line}\n{text}"
    with open(path, "w") as f:
        f.write(text)


def node_file(c, i):
    with open(os.path.join(c.node_dir(i), "data", "node.toml")) as f:
        return f.read()


def test_a_node_moved_to_another_datacenter_or_rack_is_refused_unless_told_to_accept_it():
    with running(2, up_args=("--datacenters", "2")) as c:
        assert 'data_center = "dc2"' in node_file(c, 2) and 'rack = "rack1"' in node_file(c, 2)
        c.stop(2)
        c.wait_seen([1], [2], up=False)

        # Moved in both: the datacenter is named first, then (that accepted) the rack.
        set_keys(c.config(2), data_center='"dc1"', rack='"rack7"')
        err = c.start_refused(2)
        assert 'data_center "dc1" in the config differs from "dc2"' in err, err
        assert "ignore_data_center_change = true" in err and "decommission" in err, err
        assert os.path.join(c.node_dir(2), "data", "node.toml") in err, err
        set_keys(c.config(2), ignore_data_center_change="true")
        err = c.start_refused(2)
        assert 'rack "rack7" in the config differs from "rack1"' in err, err
        assert "ignore_rack_change = true" in err, err
        # Refused starts remember nothing.
        assert 'data_center = "dc2"' in node_file(c, 2) and 'rack = "rack1"' in node_file(c, 2)

        set_keys(c.config(2), ignore_rack_change="true")
        c.up()
        assert 'data_center = "dc1"' in node_file(c, 2) and 'rack = "rack7"' in node_file(c, 2)
        s2 = c.session(only=2)
        local = s2.execute("SELECT data_center, rack FROM system.local").one()
        assert (local.data_center, local.rack) == ("dc1", "rack7")
        wait_until("node 1 to see node 2 in dc1, rack7",
                   lambda: (c.status(1)[c.endpoint(2)]["data_center"], c.status(1)[c.endpoint(2)]["rack"])
                   == ("dc1", "rack7"))
        status_text = c.mosaic("status", "--host", c.admin(1)).stdout
        line = next(ln for ln in status_text.splitlines() if c.endpoint(2) in ln)
        assert line.split()[-1] == "rack7", status_text
        assert "Datacenter: dc2" not in status_text, status_text

        # Remembered: without the flags the new location starts, the old one is refused.
        c.stop(2)
        set_keys(c.config(2), ignore_data_center_change="false", ignore_rack_change="false")
        c.up()
        c.stop(2)
        set_keys(c.config(2), rack='"rack1"')
        err = c.start_refused(2)
        assert 'rack "rack1" in the config differs from "rack7"' in err, err


def test_a_data_directory_from_before_locations_were_remembered_starts_and_remembers_them():
    with running(1) as c:
        c.stop(1)
        # node.toml as earlier releases wrote it: host id and tokens only.
        path = os.path.join(c.node_dir(1), "data", "node.toml")
        old = "".join(ln for ln in open(path).readlines() if not ln.startswith(("data_center", "rack")))
        assert "host_id" in old and "tokens" in old and "rack" not in old
        with open(path, "w") as f:
            f.write(old)
        c.up()
        text = node_file(c, 1)
        assert 'data_center = "datacenter1"' in text and 'rack = "rack1"' in text, text
        # The same node: host id and tokens as they were.
        for ln in old.splitlines():
            if ln.startswith(("host_id", "tokens")):
                assert ln in text.splitlines(), (ln, text)


def test_a_wiped_node_replacing_itself_is_checked_against_its_gossiped_location():
    with running(2) as c:
        host_id = c.status(1)[c.endpoint(2)]["host_id"]
        c.wipe(2)
        # Started again as it is, the cluster knowing its address: refused, as Cassandra does.
        err = c.start_refused(2)
        assert f"A node with address {c.endpoint(2)} already exists" in err and "replace_address" in err, err
        assert not os.path.exists(os.path.join(c.node_dir(2), "data", "node.toml"))
        # Replacing itself, it takes its host id and tokens from the cluster, and the rack it
        # was gossiped in.
        set_keys(c.config(2), rack='"rack5"', replace_address=f'"{c.endpoint(2)}"', initial_token="[]")
        err = c.start_refused(2)
        assert 'rack "rack5" in the config differs from "rack1"' in err, err
        set_keys(c.config(2), rack='"rack1"')
        c.up()
        assert c.status(1)[c.endpoint(2)]["host_id"] == host_id
        assert f'host_id = "{host_id}"' in node_file(c, 2) and 'rack = "rack1"' in node_file(c, 2)
