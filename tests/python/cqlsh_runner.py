"""Runs the cqlsh installed from PyPI non-interactively against a test node."""
import os
import shutil
import subprocess
import sys

CQLSH = shutil.which("cqlsh") or os.path.join(os.path.dirname(sys.executable), "cqlsh")
INSTALLED = os.path.exists(CQLSH)


def cqlsh(node, cql, keyspace=None, user=None, password=None, extra_args=(), env=None):
    """Runs `cql`; `extra_args` (e.g. `--ssl`) go before it, `env` replaces the environment."""
    args = [CQLSH, "127.0.0.1", str(node.port)]
    if keyspace:
        args += ["-k", keyspace]
    if user is not None:
        args += ["-u", user, "-p", password]
    args += list(extra_args)
    return subprocess.run(args + ["-e", cql], capture_output=True, text=True, timeout=120, env=env)
