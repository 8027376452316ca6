#!/usr/bin/env python3
"""Writes request frames exactly as the DataStax Python driver 3.30 encodes them.

Dev tool, not run by CI: the Rust test `frame_python_driver_golden` decodes the checked-in
output. Regenerate with

    python3 -m venv /tmp/cqlvenv && /tmp/cqlvenv/bin/pip install cassandra-driver==3.30.0 lz4
    /tmp/cqlvenv/bin/python crates/cql/tests/data/gen_python_driver_requests.py

Each file is one whole frame (header + body), named for what it holds; `segments_*` files
are v5 segments as the driver sends them after the handshake.
"""
import io
import os
import sys

import cassandra
from cassandra import ConsistencyLevel, ProtocolVersion
from cassandra.connection import locally_supported_compressions, segment_codec_lz4
from cassandra.protocol import (
    AuthResponseMessage, BatchMessage, ExecuteMessage, OptionsMessage, PrepareMessage,
    QueryMessage, RegisterMessage, StartupMessage, _ProtocolHandler, _UNSET_VALUE,
)
from cassandra.query import BatchType
from cassandra.segment import SegmentCodec

assert cassandra.__version__ == "3.30.0", cassandra.__version__
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_driver")
lz4_compress = locally_supported_compressions["lz4"][0]


def write(name, msg, stream=0, version=4, compressor=None, beta=False):
    data = _ProtocolHandler.encode_message(msg, stream, version, compressor, beta)
    with open(os.path.join(OUT, name + ".bin"), "wb") as f:
        f.write(data)
    return data


def write_segments(name, frames, codec):
    """The frames as the driver sends them after a v5 handshake: each in its own segment(s)."""
    buf = io.BytesIO()
    for frame in frames:
        codec.encode(buf, frame)
    with open(os.path.join(OUT, name + ".bin"), "wb") as f:
        f.write(buf.getvalue())


def main():
    os.makedirs(OUT, exist_ok=True)
    # The connect sequence: OPTIONS, then STARTUP with the driver's options.
    write("options_v4", OptionsMessage())
    write("startup_v4_lz4", StartupMessage(cqlversion="3.4.5", options={
        "DRIVER_NAME": "DataStax Python Driver", "DRIVER_VERSION": "3.30.0", "COMPRESSION": "lz4"}), stream=1)
    # What negotiation sends first: DSE_V2 (0x42), then v5 (and a v5 with the beta flag).
    write("options_dse_v2", OptionsMessage(), version=ProtocolVersion.DSE_V2)
    write("startup_v5", StartupMessage(cqlversion="3.4.5", options={}), stream=0, version=5)
    write("startup_v5_beta", StartupMessage(cqlversion="3.4.5", options={}), stream=0, version=5, beta=True)
    write("register_v4", RegisterMessage(["TOPOLOGY_CHANGE", "STATUS_CHANGE", "SCHEMA_CHANGE"]), stream=2)
    write("auth_response_v4", AuthResponseMessage(b"\x00cassandra\x00cassandra"), stream=3)

    q = QueryMessage("SELECT * FROM system.local WHERE key='local'", ConsistencyLevel.ONE)
    write("query_v4_plain", q, stream=4)
    q = QueryMessage("SELECT v FROM ks.t", ConsistencyLevel.LOCAL_QUORUM,
                     serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL, fetch_size=5000,
                     paging_state=b"\x00\x04page", timestamp=1700000000000001)
    q.tracing = True
    write("query_v4_paged_traced", q, stream=5)
    write("query_v3_paged", q, stream=5, version=3)
    q = QueryMessage("SELECT v FROM ks.t WHERE k = 'x'", ConsistencyLevel.QUORUM, fetch_size=100)
    q.custom_payload = {"tenant": b"blue"}
    write("query_v4_custom_payload", q, stream=6)
    q = QueryMessage("SELECT v FROM ks.t WHERE k = 'a long enough key to compress, a long enough key'",
                     ConsistencyLevel.ONE)
    write("query_v4_lz4", q, stream=7, compressor=lz4_compress)

    write("prepare_v4", PrepareMessage("INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)"), stream=8)
    e = ExecuteMessage(b"\x11" * 16, [b"key", None, _UNSET_VALUE], ConsistencyLevel.TWO,
                       fetch_size=10, skip_meta=True, timestamp=42)
    write("execute_v4", e, stream=9)
    b = BatchMessage(BatchType.UNLOGGED, [
        (False, "INSERT INTO ks.t (k, v) VALUES ('a', 1)", []),
        (True, b"\x22" * 16, [b"b", b"\x00\x00\x00\x02"]),
        (False, "UPDATE ks.t SET v = ? WHERE k = ?", [None, b"c"]),
    ], ConsistencyLevel.LOCAL_ONE, serial_consistency_level=ConsistencyLevel.SERIAL, timestamp=7)
    write("batch_v4", b, stream=10)

    # v5: per-query keyspaces, PREPARE flags, the result metadata id, [int] flags.
    q5 = write("query_v5_keyspace", QueryMessage("SELECT v FROM t", ConsistencyLevel.ONE, fetch_size=50,
                                                 keyspace="ks"), stream=11, version=5)
    p5 = write("prepare_v5_keyspace", PrepareMessage("SELECT v FROM t WHERE k = ?", keyspace="ks"),
               stream=12, version=5)
    e5 = write("execute_v5", ExecuteMessage(b"\x11" * 16, [b"key"], ConsistencyLevel.ONE, skip_meta=True,
                                           result_metadata_id=b"\x55" * 16), stream=13, version=5)
    write("batch_v5_keyspace", BatchMessage(BatchType.LOGGED, [(False, "INSERT INTO t (k) VALUES ('a')", [])],
                                            ConsistencyLevel.ONE, keyspace="ks"), stream=14, version=5)
    # The same frames in segments, plain and LZ4 (the LZ4 codec compresses a payload only when
    # that makes it smaller), and a frame too large for one segment.
    write_segments("segments_v5", [q5, p5, e5], SegmentCodec())
    write_segments("segments_v5_lz4", [q5, p5, e5], segment_codec_lz4)
    big = write("query_v5_large", QueryMessage("SELECT v FROM t WHERE k = '" + "x" * 135000 + "'",
                                               ConsistencyLevel.ONE), stream=15, version=5)
    write_segments("segments_v5_large", [big], SegmentCodec())
    write_segments("segments_v5_large_lz4", [big], segment_codec_lz4)
    os.remove(os.path.join(OUT, "query_v5_large.bin"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
