#!/usr/bin/env python3
"""Decodes Mosaic's golden responses (mosaic_responses/*.bin) with the DataStax Python
driver 3.30's own frame and message decoders and checks what the driver sees.

Dev tool, not run by CI (the Rust test `frame_python_driver_golden` pins the bytes). Run

    /tmp/cqlvenv/bin/python crates/cql/tests/data/check_responses_with_python_driver.py

after regenerating the files (see that test's doc). Exits non-zero on any mismatch.
"""
import io
import os
import struct
import sys
import uuid

import cassandra
from cassandra import ConsistencyLevel, WriteType
from cassandra.connection import locally_supported_compressions, segment_codec_lz4
from cassandra.cqltypes import DurationType
from cassandra.segment import SegmentCodec
from cassandra.util import Duration
from cassandra.protocol import (
    AlreadyExistsException, AuthenticateMessage, AuthSuccessMessage, EventMessage,
    FunctionFailureMessage, InvalidRequestException, OverloadedErrorMessage, PreparedQueryNotFound,
    ProtocolException, ReadFailureMessage, ReadTimeoutErrorMessage, ReadyMessage, ResultMessage,
    SupportedMessage, SyntaxException, UnavailableErrorMessage, WriteFailureMessage,
    WriteTimeoutErrorMessage, ProtocolHandler, _ProtocolHandler, RESULT_KIND_VOID, RESULT_KIND_ROWS,
    RESULT_KIND_SET_KEYSPACE, RESULT_KIND_PREPARED, RESULT_KIND_SCHEMA_CHANGE,
)

assert cassandra.__version__ == "3.30.0", cassandra.__version__
DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mosaic_responses")
lz4_decompress = locally_supported_compressions["lz4"][1]
failures = []


def decode(name, handler, data=None):
    if data is None:
        with open(os.path.join(DIR, name + ".bin"), "rb") as f:
            data = f.read()
    version = data[0] & 0x7F
    assert data[0] & 0x80, "response direction bit"
    if version >= 3:
        flags, stream, opcode, length = struct.unpack(">BhBi", data[1:9])
        body = data[9:]
    else:
        flags, stream, opcode, length = struct.unpack(">BbBi", data[1:8])
        body = data[8:]
    assert length == len(body), (name, length, len(body))
    # v5 bodies are never compressed (segments are): the driver gets no decompressor then.
    decompressor = lz4_decompress if version < 5 else None
    return handler.decode_message(version, {}, stream, flags, opcode, body, decompressor, None), stream


def frames_in_segments(name, codec):
    """The frames inside a file of v5 segments, as the driver's connection reassembles them."""
    with open(os.path.join(DIR, name + ".bin"), "rb") as f:
        buf = io.BytesIO(f.read())
    payload = b""
    while buf.tell() < len(buf.getvalue()):
        header = codec.decode_header(buf)
        payload += codec.decode(buf, header).payload
    frames = []
    while payload:
        length = struct.unpack(">i", payload[5:9])[0]
        frames.append(payload[:9 + length])
        payload = payload[9 + length:]
    return frames


def check_segments(name, codec, predicates):
    for handler in (_ProtocolHandler, ProtocolHandler):
        try:
            frames = frames_in_segments(name, codec)
            ok = len(frames) == len(predicates) and all(
                p(*decode(name, handler, frame)) for p, frame in zip(predicates, frames))
            msg = frames
        except Exception as e:  # noqa: BLE001 - report every failure
            ok, msg = False, repr(e)
        if not ok:
            failures.append((name, handler.__name__, msg))


def check(name, predicate):
    for handler in (_ProtocolHandler, ProtocolHandler):  # pure Python and Cython if built
        try:
            msg, stream = decode(name, handler)
            ok = predicate(msg, stream)
        except Exception as e:  # noqa: BLE001 - report every failure
            ok, msg = False, repr(e)
        if not ok:
            failures.append((name, handler.__name__, msg if isinstance(msg, str) else vars(msg)))


def rows_ok(m, s):
    if not (isinstance(m, ResultMessage) and m.kind == RESULT_KIND_ROWS and s == 1):
        return False
    assert m.column_names == ["k", "i", "big", "flag", "d", "blob", "id", "ints", "m", "missing"], m.column_names
    assert m.paging_state == b"\x00\x01next"
    assert list(m.parsed_rows[2]) == ["key2", 1, 2 << 40, True, 2.5, b"\x02\x02\x02",
                                      uuid.UUID(bytes=bytes([2] * 16)), [2, 3], {"a": 2}, None], m.parsed_rows[2]
    return len(m.parsed_rows) == 3


check("ready", lambda m, s: isinstance(m, ReadyMessage) and s == 1)
check("supported", lambda m, s: isinstance(m, SupportedMessage) and m.cql_versions == ["3.4.5"]
      and m.options == {"COMPRESSION": ["lz4"], "PROTOCOL_VERSIONS": ["3/v3", "4/v4", "5/v5"]})
check("authenticate", lambda m, s: isinstance(m, AuthenticateMessage)
      and m.authenticator == "org.apache.cassandra.auth.PasswordAuthenticator")
# A null token: the driver reads [bytes] as a long string and gets "" (it ignores the token).
check("auth_success", lambda m, s: isinstance(m, AuthSuccessMessage) and not m.token)
check("error_unavailable", lambda m, s: isinstance(m, UnavailableErrorMessage) and m.info == {
    "consistency": ConsistencyLevel.QUORUM, "required_replicas": 2, "alive_replicas": 1})
check("error_write_timeout", lambda m, s: isinstance(m, WriteTimeoutErrorMessage) and m.info == {
    "consistency": ConsistencyLevel.LOCAL_QUORUM, "received_responses": 1, "required_responses": 2,
    "write_type": WriteType.SIMPLE})
check("error_read_timeout", lambda m, s: isinstance(m, ReadTimeoutErrorMessage) and m.info == {
    "consistency": ConsistencyLevel.ONE, "received_responses": 0, "required_responses": 1,
    "data_retrieved": False})
check("error_read_failure", lambda m, s: isinstance(m, ReadFailureMessage) and m.info == {
    "consistency": ConsistencyLevel.ALL, "received_responses": 1, "required_responses": 3,
    "failures": 2, "error_code_map": None, "data_retrieved": True})
check("error_function_failure", lambda m, s: isinstance(m, FunctionFailureMessage)
      and m.info == {"keyspace": "ks", "function": "f", "arg_types": ["int", "text"]})
check("error_write_failure", lambda m, s: isinstance(m, WriteFailureMessage) and m.info == {
    "consistency": ConsistencyLevel.TWO, "received_responses": 1, "required_responses": 2,
    "failures": 1, "error_code_map": None, "write_type": WriteType.BATCH})
check("error_invalid", lambda m, s: isinstance(m, InvalidRequestException) and m.message == "unconfigured table nope")
check("error_syntax", lambda m, s: isinstance(m, SyntaxException))
check("error_overloaded", lambda m, s: isinstance(m, OverloadedErrorMessage))
check("error_already_exists", lambda m, s: isinstance(m, AlreadyExistsException) and m.info == {"keyspace": "ks", "table": "t"})
check("error_unprepared", lambda m, s: isinstance(m, PreparedQueryNotFound) and m.info == b"\xab" * 16)
check("error_unsupported_version", lambda m, s: isinstance(m, ProtocolException) and s == 0
      and "unsupported protocol version" in m.message)
check("result_void", lambda m, s: isinstance(m, ResultMessage) and m.kind == RESULT_KIND_VOID)
check("result_set_keyspace", lambda m, s: m.kind == RESULT_KIND_SET_KEYSPACE and m.new_keyspace == "ks")
check("result_schema_change_table", lambda m, s: m.kind == RESULT_KIND_SCHEMA_CHANGE and m.schema_change_event == {
    "change_type": "CREATED", "target_type": "TABLE", "keyspace": "ks", "table": "t"})
check("result_schema_change_function", lambda m, s: m.kind == RESULT_KIND_SCHEMA_CHANGE
      and m.schema_change_event["target_type"] == "FUNCTION" and m.schema_change_event["keyspace"] == "ks"
      and m.schema_change_event["function"].name == "f"
      and m.schema_change_event["function"].argument_types == ["int"])
check("result_prepared", lambda m, s: m.kind == RESULT_KIND_PREPARED and m.query_id == b"\x33" * 16
      and m.bind_metadata[0][:3] == ("ks", "t", "k") and m.pk_indexes == [0]
      and not m.column_metadata)
check("result_rows", rows_ok)
check("result_rows_lz4", rows_ok)
check("result_void_traced_warned", lambda m, s: m.kind == RESULT_KIND_VOID
      and m.trace_id == uuid.UUID(bytes=b"\x44" * 16)
      and m.warnings == ["Aggregation query used without partition key"])
check("event_status_up", lambda m, s: isinstance(m, EventMessage) and s == -1 and m.event_type == "STATUS_CHANGE"
      and m.event_args == {"change_type": "UP", "address": ("127.0.0.2", 9042)})
check("event_topology_new_node_v6", lambda m, s: s == -1 and m.event_type == "TOPOLOGY_CHANGE"
      and m.event_args == {"change_type": "NEW_NODE", "address": ("2001:db8::1", 9042)})
check("event_schema_table", lambda m, s: s == -1 and m.event_type == "SCHEMA_CHANGE" and m.event_args == {
    "change_type": "UPDATED", "target_type": "TABLE", "keyspace": "ks", "table": "t"})

# v5: the result metadata id, Metadata_changed, duration's own id, reason maps.
check("v5_result_prepared", lambda m, s: m.kind == RESULT_KIND_PREPARED and m.query_id == b"\x33" * 16
      and len(m.result_metadata_id) == 16 and m.bind_metadata[0][:3] == ("ks", "t", "k")
      and [c[2] for c in m.column_metadata] == ["k", "d"])
check("v5_result_rows_metadata_changed", lambda m, s: m.kind == RESULT_KIND_ROWS
      and len(m.result_metadata_id) == 16 and m.column_names == ["k", "d"]
      and m.column_types[1] is DurationType
      and list(m.parsed_rows[0]) == ["key", Duration(1, 2, 3)])
check("v5_error_read_failure", lambda m, s: isinstance(m, ReadFailureMessage) and m.info == {
    "consistency": ConsistencyLevel.ALL, "received_responses": 1, "required_responses": 3,
    "failures": 2, "error_code_map": {"127.0.0.2": 0, "::1": 1}, "data_retrieved": True})
check("v5_error_write_failure", lambda m, s: isinstance(m, WriteFailureMessage) and m.info == {
    "consistency": ConsistencyLevel.TWO, "received_responses": 1, "required_responses": 2,
    "failures": 1, "error_code_map": {"0.0.0.0": 0}, "write_type": WriteType.BATCH})
check("v5_error_write_timeout_cas", lambda m, s: isinstance(m, WriteTimeoutErrorMessage)
      and m.info["write_type"] == WriteType.CAS)
void_then_event = [
    lambda m, s: isinstance(m, ResultMessage) and m.kind == RESULT_KIND_VOID and s == 7,
    lambda m, s: isinstance(m, EventMessage) and s == -1 and m.event_args["table"] == "t",
    lambda m, s: m.kind == RESULT_KIND_ROWS and s == 8
    and m.parsed_rows == [("a value that repeats itself",)] * 20,
]
check_segments("v5_segments", SegmentCodec(), void_then_event)
check_segments("v5_segments_lz4", segment_codec_lz4, void_then_event)
with open(os.path.join(DIR, "v5_segments_lz4.bin"), "rb") as f:
    if segment_codec_lz4.decode_header(io.BytesIO(f.read())).uncompressed_payload_length == 0:
        failures.append(("v5_segments_lz4", "header", "the payload went uncompressed"))

checked = {f[:-4] for f in os.listdir(DIR)}
if failures:
    for f in failures:
        print("FAIL", *f)
    sys.exit(1)
print(f"ok: {len(checked)} responses decoded by cassandra-driver {cassandra.__version__}")
