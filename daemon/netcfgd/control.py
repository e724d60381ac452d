"""netcfgd's control socket: where `netcfg` asks the daemon to apply, check,
show and report (protocol: netcfg/client.py).

A unix stream socket, RUN_DIR/netcfgd.sock, 0600 in a 0700 directory, and
each peer's uid checked with SO_PEERCRED: only root may talk to it. One
request per connection; the daemon answers on the same connection, progress
lines first. Requests are served one at a time by the daemon's loop, so two
clients applying at once are serialized.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
from typing import Any

from netcfg.client import MAX_LINE, PROTOCOL_VERSION
from netcfg.errors import EXIT_USAGE, NetcfgError

_UCRED = struct.Struct("=iII")   # struct ucred: pid, uid, gid
REQUEST_TIMEOUT_S = 10.0


class ProtocolError(Exception):
    """A request the daemon cannot read; the message is sent back as is."""


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

    def fileno(self) -> int:
        return self.sock.fileno()

    def accept(self) -> "ControlConnection | None":
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return None
        return ControlConnection(conn)

    def close(self) -> None:
        self.sock.close()
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
    def __init__(self, sock: socket.socket):
        self.sock = sock
        sock.setblocking(True)
        sock.settimeout(REQUEST_TIMEOUT_S)
        self.pid, self.uid, self.gid = _UCRED.unpack(
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
        self.file = sock.makefile("rb")
        self.gone = False

    def read_request(self) -> dict[str, Any]:
        try:
            raw = self.file.readline(MAX_LINE)
        except (TimeoutError, OSError) as e:
            raise ProtocolError(f"no request read: {e}") from None
        if not raw.endswith(b"\n"):
            raise ProtocolError("the request must be one JSON object on one line")
        try:
            request = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ProtocolError(f"the request is not JSON: {e}") from None
        if not isinstance(request, dict) or not isinstance(request.get("command"), str):
            raise ProtocolError('the request must be an object with a "command"')
        if request.get("version") != PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {request.get('version')!r} is not "
                                f"supported (netcfgd speaks {PROTOCOL_VERSION}): use the "
                                f"netcfg of the same release")
        return request

    def send(self, message: dict[str, Any]) -> None:
        """One line to the client; a client that went away is noted, not fatal."""
        if self.gone:
            return
        data = json.dumps({"version": PROTOCOL_VERSION, **message},
                          separators=(",", ":")).encode() + b"\n"
        try:
            self.sock.settimeout(REQUEST_TIMEOUT_S)
            self.sock.sendall(data)
        except OSError:
            self.gone = True

    def progress(self, **fields: Any) -> None:
        self.send({"type": "progress", **fields})

    def result(self, **fields: Any) -> None:
        self.send({"type": "result", **fields})

    def error(self, message: str, exit_code: int = EXIT_USAGE,
              diagnostics: list[str] | None = None) -> None:
        self.send({"type": "error", "message": message, "exit_code": exit_code,
                   "diagnostics": diagnostics or []})

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
            self.sock.close()
