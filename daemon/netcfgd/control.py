"""netcfgd's control socket: where `netcfg` asks the daemon to apply, check,
show and report (protocol: netcfg/cli/client.py).

A unix stream socket, RUN_DIR/netcfgd.sock, 0600 in a 0700 directory, and
each peer's uid checked with SO_PEERCRED: only root may talk to it. One
request per connection; the daemon answers on the same connection, progress
lines first. Requests are served one at a time by the daemon's loop, so two
clients applying at once are serialized.

Nothing here ever waits for a client. The loop reads a request as its bytes
arrive (non-blocking, a selector over every connection) and serves it once
its line is whole; a client that has not sent a whole request within
``request_deadline`` seconds of connecting (the deadline is for the whole
request, not renewed by each byte) is dropped, and so is one that does not
read its answer within ``answer_deadline``. Those seconds are counted only
while the loop waits, ready to read (``charge``): a client that connected
while the loop applied someone else's config for a minute was not slow. A request is bounded in size
(MAX_REQUEST_BYTES) and nesting (MAX_REQUEST_DEPTH), and its fields are
type-checked here (parse_request), so no request can reach a handler in a
shape that makes it fail with anything but an answer.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import time
from typing import Any

from netcfg.cli.client import MAX_LINE, PROTOCOL_VERSION, presence_name
from netcfg.compile.jsonform import MAX_JSON_DEPTH, json_depth
from netcfg.model.errors import EXIT_USAGE, NetcfgError, quote
from netcfg.model.names import ifname_problem, netns_name_problem

_UCRED = struct.Struct("=iII")   # struct ucred: pid, uid, gid
# A whole request must arrive within this many seconds of the connect: a
# local client writes its one line at once (64 MiB over a unix socket takes
# well under a second); one that dribbles is stuck or hostile.
REQUEST_DEADLINE_S = 5.0
# The answer must be taken within this: a `show` of a big host is tens of MiB.
ANSWER_DEADLINE_S = 30.0
# `netcfg show -o json | netcfg apply -c -` sends a whole host's model as
# stdin_text: as big as the biggest answer.
MAX_REQUEST_BYTES = MAX_LINE
# The request's own wrapping ({"source": {"variables": {...}}}) over a
# template variable nested as deep as a config file may nest.
MAX_REQUEST_DEPTH = MAX_JSON_DEPTH + 8
# Connections being read or answered at once; more are refused.
MAX_CLIENTS = 32
_RECV_CHUNK = 1 << 20

# The fields a request may carry, and their types (None: may be null).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "version": (int,), "command": (str,), "source": (dict,),
    "dry_run": (bool, type(None)), "json": (bool, type(None)),
    "confirm": (int, float, type(None)), "lower": (str, type(None)),
    "interfaces": (list, type(None)), "netns": (list, type(None)),
    "output": (str, type(None)), "number": (int,), "why": (str, type(None)),
    "only_selection": (bool, type(None)),   # apply: refuse rather than enforce more (M5)
}
_SOURCE_TYPES: dict[str, tuple[type, ...]] = {
    "path": (str,), "variables": (dict, type(None)), "stdin_text": (str, type(None)),
    "strict": (bool,),
}


class ProtocolError(Exception):
    """A request the daemon cannot read; the message is sent back as is."""


def parse_request(raw: bytes) -> dict[str, Any]:
    """One request line (with its newline) -> the request, or ProtocolError.
    Pure: the hypothesis fuzzer in tests/unit/test_control_fuzz.py holds it
    to raising nothing else."""
    if len(raw) > MAX_REQUEST_BYTES:
        raise ProtocolError(f"the request is longer than {MAX_REQUEST_BYTES} bytes")
    if not raw.endswith(b"\n"):
        raise ProtocolError("the request must be one JSON object on one line")
    if raw.index(b"\n") != len(raw) - 1:
        raise ProtocolError("one request per connection, on one line")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError(f"the request is not UTF-8 (byte {e.start})") from None
    try:
        request = json.loads(text)
    except RecursionError:
        raise ProtocolError(f"the request is nested deeper than {MAX_REQUEST_DEPTH} "
                            f"levels") from None
    except ValueError as e:   # JSONDecodeError, or an integer past int_max_str_digits
        raise ProtocolError(f"the request is not JSON: {e}") from None
    if not isinstance(request, dict) or not isinstance(request.get("command"), str):
        raise ProtocolError('the request must be an object with a "command"')
    if request.get("version") != PROTOCOL_VERSION or isinstance(request.get("version"), bool):
        raise ProtocolError(f"protocol version {json.dumps(request.get('version'))} is not "
                            f"supported (netcfgd speaks {PROTOCOL_VERSION}): use the "
                            f"netcfg of the same release")
    depth = json_depth(request, MAX_REQUEST_DEPTH)
    if depth > MAX_REQUEST_DEPTH:
        raise ProtocolError(f"the request is nested deeper than {MAX_REQUEST_DEPTH} levels")
    _check_types(request, _FIELD_TYPES, "")
    if "source" in request:
        _check_types(request["source"], _SOURCE_TYPES, "source.")
    for key, problem in (("interfaces", ifname_problem), ("netns", netns_name_problem)):
        for item in request.get(key) or ():
            if not isinstance(item, str):
                raise ProtocolError(f'"{key}" must be a list of names')
            why = problem(item) if item else None   # "": the host's namespace
            if why is not None:
                raise ProtocolError(f'"{key}": {quote(item)} is not a name: {why}')
    return request


def _check_types(obj: dict[str, Any], types: dict[str, tuple[type, ...]], prefix: str) -> None:
    for key, allowed in types.items():
        if key not in obj:
            continue
        value = obj[key]
        # bool is an int to Python, never to the protocol.
        if isinstance(value, bool) and bool not in allowed or not isinstance(value, allowed):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in allowed)
            raise ProtocolError(f'"{prefix}{key}" must be {names}, not '
                                f'{type(value).__name__}')


class ControlServer:
    def __init__(self, path: str):
        directory = os.path.dirname(path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
        if _answers(path):
            raise NetcfgError(f"another netcfgd is running (it answers on {path}); "
                              f"stop it first (systemctl stop netcfgd)")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)      # left by a netcfgd that died
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            # Bind with a umask that leaves no window where others could connect.
            old = os.umask(0o177)
            try:
                sock.bind(path)
            finally:
                os.umask(old)
            os.chmod(path, 0o600)
            sock.listen(64)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.path = path
        # Held while we run: a netcfg whose run dir differs finds it in
        # /proc/net/unix and refuses to go around us (issue 23 L4).
        self.presence = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            self.presence.bind("\0" + presence_name(directory))
        except OSError:
            pass    # taken: the netcfgd that answers there was refused above

    def fileno(self) -> int:
        return self.sock.fileno()

    def accept(self, now: float | None = None,
               request_deadline: float = REQUEST_DEADLINE_S) -> "ControlConnection | None":
        try:
            conn, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:          # ECONNABORTED, EMFILE: this one is lost, not the daemon
            return None
        return ControlConnection(conn, now, request_deadline)

    def close(self) -> None:
        self.sock.close()
        self.presence.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _answers(path: str) -> bool:
    """Whether a live process listens on ``path`` (a dead one's socket refuses)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


class ControlConnection:
    """One client: its request read as it arrives, its answer written as it
    is taken; never a blocking call. ``left`` is how many seconds of the
    loop's waiting it may still take before it is dropped."""

    def __init__(self, sock: socket.socket, now: float | None = None,
                 request_deadline: float = REQUEST_DEADLINE_S):
        self.sock = sock
        sock.setblocking(False)
        self.pid, self.uid, self.gid = _UCRED.unpack(
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
        self.connected_at = time.monotonic() if now is None else now
        self.request_deadline = request_deadline
        self.left = request_deadline
        self._phase_from = self.connected_at
        self._in = bytearray()
        self._out = bytearray()
        self.gone = False
        self.served = False
        self.closed = False
        # The handler answers later (a client's apply whose hooks still run):
        # the loop neither finishes nor times it out meanwhile.
        self.answer_later = False

    def fileno(self) -> int:
        return self.sock.fileno()

    @property
    def received(self) -> int:
        return len(self._in)

    def receive(self) -> dict[str, Any] | None:
        """Read what has arrived: the request once its line is whole, None
        while it is not, ProtocolError when it cannot become one."""
        while True:
            try:
                chunk = self.sock.recv(_RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as e:
                raise ProtocolError(f"no request read: {e.strerror or e}") from None
            if not chunk:
                self.gone = True
                return parse_request(bytes(self._in))   # says what is wrong with it
            self._in += chunk
            if b"\n" in chunk:
                return parse_request(bytes(self._in))
            if len(self._in) > MAX_REQUEST_BYTES:
                raise ProtocolError(f"the request is longer than {MAX_REQUEST_BYTES} bytes")

    def charge(self, waited_from: float, woke: float) -> None:
        """The loop waited from ``waited_from`` to ``woke``, ready to read or
        write this client: that much of its time is used."""
        start = max(waited_from, self._phase_from)
        if woke > start:
            self.left -= woke - start

    def due(self, now: float) -> float:
        """When it is late if the loop waits from ``now`` on."""
        return now + max(self.left, 0.0)

    @property
    def late(self) -> bool:
        return self.left <= 0

    def answering(self, now: float, answer_deadline: float = ANSWER_DEADLINE_S) -> None:
        """The request was served: the answer must be taken within ``answer_deadline``
        (set once: a client taking a byte at a time does not renew it)."""
        if self.served:
            return
        self.served = True
        self.left = answer_deadline
        self._phase_from = now

    def send(self, message: dict[str, Any]) -> None:
        """One line to the client, as much as it takes now; the rest waits
        for flush(). A client that went away is noted, not fatal."""
        if self.gone:
            return
        self._out += json.dumps({"version": PROTOCOL_VERSION, **message},
                                separators=(",", ":")).encode() + b"\n"
        self.flush()

    def flush(self) -> bool:
        """Write what the client takes without waiting; True when all is sent
        (or the client is gone)."""
        while self._out and not self.gone:
            try:
                sent = self.sock.send(self._out, socket.MSG_NOSIGNAL)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                self.gone = True
                break
            del self._out[:sent]
        return True

    def progress(self, **fields: Any) -> None:
        self.send({"type": "progress", **fields})

    def result(self, **fields: Any) -> None:
        self.send({"type": "result", **fields})

    def error(self, message: str, exit_code: int = EXIT_USAGE,
              diagnostics: list[str] | None = None) -> None:
        self.send({"type": "error", "message": message, "exit_code": exit_code,
                   "diagnostics": diagnostics or []})

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.close()
