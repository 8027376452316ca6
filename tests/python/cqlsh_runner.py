"""Runs the cqlsh installed from PyPI non-interactively against a test node."""
import os
import shutil
import subprocess
import sys

CQLSH = shutil.which("cqlsh") or os.path.join(os.path.dirname(sys.executable), "cqlsh")
INSTALLED = os.path.exists(CQLSH)


def cqlsh(node, cql, keyspace=None, user=None, password=None):
    args = [CQLSH, "127.0.0.1", str(node.port)]
    if keyspace:
        args += ["-k", keyspace]
    if user is not None:
        args += ["-u", user, "-p", password]
    return subprocess.run(args + ["-e", cql], capture_output=True, text=True, timeout=120)
