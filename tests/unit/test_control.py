"""netcfgd's control-socket request parser (daemon/netcfgd/control.py), by
example and by hypothesis: whatever bytes a root client sends, the parser
returns a request of the documented shape or raises ProtocolError, whose
message goes back to the client. Nothing else may escape it: that was an
"internal error" answer and a traceback in the daemon's log (issue 14).

`make fuzz` runs the hypothesis part long (NETCFG_FUZZ_EXAMPLES); the unit
tier runs a few hundred examples.
"""

from __future__ import annotations

import json
import os
import select
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netcfgd.control import (MAX_REQUEST_BYTES, MAX_REQUEST_DEPTH, ControlConnection,
                             ProtocolError, parse_request)

EXAMPLES = int(os.environ.get("NETCFG_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def line(request: object) -> bytes:
    return json.dumps(request).encode() + b"\n"


def test_a_good_request_is_returned_as_sent():
    request = {"version": 1, "command": "apply", "dry_run": True, "confirm": 30,
               "interfaces": ["br0"], "netns": None,
               "source": {"path": "/etc/netcfg", "variables": {"vlans": [1, 2]},
                          "stdin_text": None}}
    assert parse_request(line(request)) == request


@pytest.mark.parametrize("raw, why", [
    (b"\xff\xfe{}\n", "not UTF-8"),
    (b'{"version": 1, "command": "status", "n": ' + b"9" * 5000 + b"}\n", "not JSON"),
    (b'{"version": 1, "command": "status", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
     "nested deeper"),
    (line({"version": 1, "command": "status", "x": [[[[[[[1]]]]]]]})
     .replace(b"[1]", b"[" * MAX_REQUEST_DEPTH + b"1" + b"]" * MAX_REQUEST_DEPTH), "nested deeper"),
    (line({"version": True, "command": "status"}), "protocol version true"),
    (line({"version": 1, "command": "apply", "dry_run": "yes"}), '"dry_run" must be bool'),
    (line({"version": 1, "command": "apply", "confirm": True}), '"confirm" must be'),
    (line({"version": 1, "command": "apply", "interfaces": "br0"}), '"interfaces" must be'),
    (line({"version": 1, "command": "apply", "interfaces": [["br0"]]}), "a list of names"),
    (line({"version": 1, "command": "show", "netns": [".."]}), "is not a name"),
    (line({"version": 1, "command": "apply", "interfaces": ["a:b"]}), "is not a name"),
    (line({"version": 1, "command": "apply", "source": {"path": 7}}), '"source.path"'),
    (line({"version": 1, "command": "apply", "source": {"path": "/", "variables": []}}),
     '"source.variables"'),
    (line({"version": 1, "command": "trial", "number": 1.5}), '"number" must be int'),
    (b'{"version": 1, "command": "status"}\n{"version": 1, "command": "status"}\n',
     "one request per connection"),
    (b"\n", "not JSON"),
])
def test_bad_requests_get_a_protocol_error(raw, why):
    with pytest.raises(ProtocolError, match=why):
        parse_request(raw)


def test_an_oversized_request_is_refused_before_it_is_whole():
    """The reader stops at MAX_REQUEST_BYTES, newline or not: a client
    cannot make the daemon hold more."""
    server, client = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = ControlConnection(server)
    client.setblocking(False)
    sent = 0
    with pytest.raises(ProtocolError, match="longer than"):
        while sent <= MAX_REQUEST_BYTES + (1 << 20):
            try:
                sent += client.send(b"a" * (1 << 20))
            except BlockingIOError:
                pass
            select.select([conn], [], [], 1)
            assert conn.receive() is None
    assert conn.received <= MAX_REQUEST_BYTES + (1 << 20)
    conn.close()
    client.close()


def test_a_dribbled_request_is_read_without_waiting():
    server, client = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = ControlConnection(server, now=100.0, request_deadline=5)
    assert conn.due(100.0) == 105.0
    raw = line({"version": 1, "command": "status"})
    for byte in raw[:-1]:
        client.send(bytes([byte]))
        select.select([conn], [], [], 1)
        assert conn.receive() is None            # never blocks for the rest
    client.send(b"\n")
    select.select([conn], [], [], 1)
    assert conn.receive() == {"version": 1, "command": "status"}
    conn.close()
    client.close()


def test_a_clients_time_runs_only_while_the_loop_waits():
    """5 s of the loop's waiting, from the connect: time the loop spent
    serving others (between its waits) is not the client's."""
    server, client = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = ControlConnection(server, now=100.0, request_deadline=5)
    conn.charge(98.0, 101.0)        # waited since before it came: 1 s of it
    assert conn.left == 4.0 and not conn.late
    conn.charge(160.0, 163.0)       # 101-160 the loop applied a config: not counted
    assert conn.left == 1.0 and conn.due(163.0) == 164.0
    conn.charge(163.0, 164.0)
    assert conn.late
    conn.answering(170.0, 30)       # a new budget for taking the answer, once
    assert not conn.late and conn.due(170.0) == 200.0
    conn.charge(170.0, 180.0)
    conn.answering(180.0, 30)
    assert conn.left == 20.0
    conn.close()
    client.close()


def test_an_answer_the_client_does_not_read_waits_for_flush():
    server, client = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    conn = ControlConnection(server)
    conn.result(text="x" * (8 << 20))            # more than the socket buffers hold
    assert not conn.flush()                      # returned, did not wait
    answer = b""
    while not answer.endswith(b"\n"):           # the client reads, the loop flushes
        answer += client.recv(1 << 20)
        conn.flush()
    assert json.loads(answer)["text"] == "x" * (8 << 20)
    assert conn.flush()
    conn.close()
    client.close()


# ---------------------------------------------------------------- hypothesis

def _check_contract(raw: bytes) -> None:
    try:
        request = parse_request(raw)
    except ProtocolError as e:
        assert str(e)                             # a reason the client is sent
        return
    assert isinstance(request, dict) and isinstance(request["command"], str)
    assert request["version"] == 1 and request["version"] is not True
    for key in ("interfaces", "netns"):
        assert all(isinstance(item, str) for item in request.get(key) or ())
    source = request.get("source")
    if source is not None:
        assert isinstance(source, dict)
        assert isinstance(source.get("variables") or {}, dict)
    assert isinstance(request.get("dry_run", False), (bool, type(None)))
    json.dumps(request)                           # can be logged and echoed


@FUZZ
@given(st.binary(max_size=512))
def test_fuzz_any_bytes(data):
    _check_contract(data + b"\n")
    _check_contract(data)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=30)
FIELDS = st.sampled_from(["version", "command", "source", "dry_run", "json", "confirm", "lower",
                          "interfaces", "netns", "output", "number", "why", "path",
                          "variables", "stdin_text"])


@FUZZ
@given(st.dictionaries(FIELDS, JSON, max_size=8), st.sampled_from(["status", "apply", "show"]),
       st.booleans())
def test_fuzz_requests_of_the_right_shape_with_any_values(fields, command, nest_source):
    request = {"version": 1, "command": command, **fields}
    if nest_source:
        request["source"] = {k: v for k, v in fields.items()
                             if k in ("path", "variables", "stdin_text")}
    try:
        raw = json.dumps(request).encode() + b"\n"
    except ValueError:
        return
    _check_contract(raw)


@FUZZ
@given(st.integers(min_value=0, max_value=3 * MAX_REQUEST_DEPTH), st.sampled_from("[{"))
def test_fuzz_nesting(depth, opener):
    inner = ("[" * depth + "]" * depth) if opener == "[" else ('{"a":' * depth + "1" + "}" * depth)
    _check_contract(f'{{"version": 1, "command": "status", "x": {inner}}}\n'.encode())
