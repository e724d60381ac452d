"""The CLI's side of netcfgd's control socket.

When netcfgd runs it is the single writer: `netcfg apply`, `query --check`
and `show` send their request to it and print what it answers; when no
daemon listens, the CLI does the work itself (``connect`` returns None).

Protocol (version 1): one request per connection, one JSON object per line,
each with ``"version": 1``. The client sends ``{"version": 1, "command":
...}``; the daemon answers zero or more ``{"type": "progress", ...}`` lines
and ends with one ``{"type": "result", ...}`` or ``{"type": "error",
"message": ..., "exit_code": N, "diagnostics": [...]}``. Only root may
connect (the socket is 0600 in a 0700 directory, and the daemon checks
SO_PEERCRED).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from typing import Any, Iterator

from netcfg.apply.confirm import run_dir
from netcfg.model.errors import EXIT_USAGE, NetcfgError, UsageError, quote

PROTOCOL_VERSION = 1
SOCKET_NAME = "netcfgd.sock"
MAX_LINE = 64 << 20     # a show of a big host is one line


def socket_path(directory: str | None = None) -> str:
    return os.path.join(directory or run_dir(), SOCKET_NAME)


class DaemonError(NetcfgError):
    """netcfgd refused or failed a request; it says why and with which exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE,
                 diagnostics: list[str] | None = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.diagnostics = diagnostics or []


class DaemonGone(DaemonError):
    """The connection ended before netcfgd answered: it stopped, or was killed."""


def presence_name(directory: str) -> str:
    """The abstract socket name a netcfgd with run dir ``directory`` holds
    in its network namespace ('@' is the NUL of /proc/net/unix)."""
    directory = os.path.realpath(directory)
    name = f"netcfgd:{directory}"
    if len(name.encode()) > 100:     # sun_path holds 107 bytes
        name = f"netcfgd:#{hashlib.sha256(directory.encode()).hexdigest()[:32]}"
    return name


def daemons_elsewhere(directory: str) -> list[str]:
    """The run dirs (or their hashed names) of netcfgd's running in this
    network namespace with another run dir than ``directory`` (issue 23 L4)."""
    mine = presence_name(directory)
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("@netcfgd:") and fields[7][1:] != mine:
            found.append(fields[7][len("@netcfgd:"):])
    return sorted(set(found))


def connect(path: str | None = None, timeout: float | None = None) -> "DaemonConnection | None":
    """A connection to the running netcfgd, or None when none listens. With
    no ``path`` (netcfg's own run dir), a netcfgd that runs with another run
    dir is refused (UsageError): bypassing it, and its apply lock, would
    write what it undoes at once (issue 23 L4)."""
    if path is None:
        path = socket_path()
        connection = connect(path, timeout)
        if connection is None:
            _refuse_a_daemon_elsewhere()
        return connection
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None            # no daemon (or one that died: its socket is left)
    except PermissionError:
        sock.close()
        raise UsageError(f"cannot connect to netcfgd ({path}): this command needs root") \
            from None
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot connect to netcfgd ({path}): {e.strerror}") from None
    return DaemonConnection(sock)


def _refuse_a_daemon_elsewhere() -> None:
    elsewhere = daemons_elsewhere(run_dir())
    if not elsewhere:
        return
    where = ", ".join("a hashed long path" if d.startswith("#") else d for d in elsewhere)
    raise UsageError(
        f"netcfgd runs with another run dir ({where}) than this netcfg's "
        f"({os.path.realpath(run_dir())}, from $NETCFG_RUN_DIR or /run/netcfg): going around "
        f"it and its apply lock, a change would be undone by it at once. Set NETCFG_RUN_DIR "
        f"to netcfgd's run dir (or unset it), or stop netcfgd")


class DaemonConnection:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.file = sock.makefile("rb")

    def request(self, command: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """Send one request; yield the daemon's progress lines. Returns (via
        StopIteration) the result; raises DaemonError on an error answer."""
        line = json.dumps({"version": PROTOCOL_VERSION, "command": command, **fields})
        try:
            self.sock.sendall(line.encode() + b"\n")
        except OSError:
            pass   # it may have refused us before reading: its answer says why
        while True:
            try:
                raw = self.file.readline(MAX_LINE)
            except ConnectionResetError:
                raw = b""
            if not raw:
                raise DaemonGone("netcfgd closed the connection without an answer "
                                 "(see its log: journalctl -u netcfgd)")
            try:
                message = json.loads(raw)
            except json.JSONDecodeError:
                raise DaemonError("netcfgd answered something that is not JSON") from None
            kind = message.get("type")
            if kind == "progress":
                yield message
            elif kind == "result":
                return message
            elif kind == "error":
                raise DaemonError(message.get("message", "netcfgd refused the request"),
                                  int(message.get("exit_code", EXIT_USAGE)),
                                  message.get("diagnostics"))
            else:
                raise DaemonError(f"netcfgd answered an unknown message type {quote(kind)}")

    def call(self, command: str, **fields: Any) -> dict[str, Any]:
        """A request whose progress lines are not wanted: its result."""
        stream = self.request(command, **fields)
        while True:
            try:
                next(stream)
            except StopIteration as done:
                return done.value

    def close(self) -> None:
        self.file.close()
        self.sock.close()

    def __enter__(self) -> "DaemonConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def format_status(status: dict[str, Any]) -> str:
    """`netcfg status` for a person: the daemon, the last pass, the counters,
    then one line per managed namespace (and its drift or error)."""
    import time

    def when(wall: float | None) -> str:
        return time.strftime("%H:%M:%S", time.localtime(wall)) if wall else "never"

    daemon, counters = status["daemon"], status["counters"]
    lines = [f"netcfgd: running (pid {daemon['pid']}), "
             f"{'ready' if daemon['ready'] else 'starting'}"]
    # What is enforced, by where it came from and what it is (its digest):
    # a config applied from stdin is not what a reload would read.
    source = daemon.get("config_from") or daemon["config"]
    digest = daemon.get("config_sha256")
    lines.append(f"enforcing: {source}" + (f" (sha256 {digest[:12]})" if digest else "")
                 + f", loaded {when(daemon['config_loaded_at'])}"
                 + (f"; a reload reads {daemon['config']}" if source != daemon["config"]
                    else ""))
    trial = daemon.get("trial")
    if trial:
        lines.append(f"apply --confirm of pid {trial['client_pid']} on trial: reverted in "
                     f"{trial['left']:.0f} s unless `netcfg confirm` comes (then the config "
                     f"from before it is enforced again)")
    if daemon["config_errors"]:
        lines.append("config reload failed; running the last good config:")
        lines += [f"  {line}" for line in daemon["config_errors"]]
    last = status.get("last_reconcile")
    if last:
        lines.append(f"last reconcile: {when(last['at'])}, {last['namespaces']} namespaces, "
                     f"{last['operations']} operations, {last['requests']} requests, "
                     f"{last['duration_ms']} ms{' (full)' if last['full'] else ''}")
    lines.append(f"events: {counters['events']} received, {counters['events_ignored']} "
                 f"ignored, {counters['event_losses']} losses (resynced)")
    lines.append(f"passes: {counters['passes']} ({counters['passes_writing']} wrote, "
                 f"{counters['passes_quiet']} found nothing to do, "
                 f"{counters.get('passes_failed', 0)} failed, {counters['full_passes']} "
                 f"full, {counters.get('deferred', 0)} deferred by a backoff); "
                 f"{counters['repairs']} operations, {counters['requests']} requests, "
                 f"{counters['failures']} failures")
    lines.append(NAMESPACES.format(*NAMESPACES_HEADER))
    for ns in status["namespaces"]:
        if ns["error"]:
            state = f"failing ({ns['failures']}x, retry in {ns['retry_in_s']} s): {ns['error']}"
        elif ns["drift"]:
            state = f"drift: {len(ns['drift'])} differences (policy report)"
        else:
            state = f"ok, {ns['repairs']} repairs" if ns["repairs"] else "ok"
        lines.append(NAMESPACES.format(ns["name"] or "(host)", ns["policy"], ns["objects"], state))
        lines += [f"    {d}" for d in ns["drift"][:20]]
        lines += [f"    hook: {h}" for h in ns.get("hooks") or ()]
    lines += _storage_lines(status.get("storage") or {})
    return "\n".join(lines) + "\n"


# The status tables: one layout each (str.format), for the header and the rows.
NAMESPACES, NAMESPACES_HEADER = "{:<20} {:<8} {:>7}  {}", ("NAMESPACE", "POLICY", "OBJECTS",
                                                           "STATE")
TARGETS, TARGETS_HEADER = "{:<44} {:<12} {:>8}  {}", ("TARGET", "NAMESPACE", "SESSIONS", "PORTALS")
UBLK, UBLK_HEADER = "{:<20} {:<14} {}", ("VOLUME", "DEVICE", "STATE")


def _table(problem: str | None, layout: str, header: tuple[str, ...],
           rows: list[tuple[Any, ...]]) -> list[str]:
    """A status section: its problem line, then its table when it has rows."""
    lines = [problem] if problem else []
    if rows:
        lines += [layout.format(*header)] + [layout.format(*row) for row in rows]
    return lines


def _storage_lines(storage: dict[str, Any]) -> list[str]:
    """The embedded iSCSI target: sessions per target (daemon/netcfgd/storage.py)."""
    rows = [(t["iqn"], t["netns"] or "(host)", t["sessions"],
             ", ".join(t["portals"]) if t["serving"] else "(waiting for the namespace)")
            for t in storage.get("targets") or ()]
    error = storage.get("error")
    return (_table(error and f"storage: {error}", TARGETS, TARGETS_HEADER, rows)
            + _ublk_lines(storage.get("ublk") or {}))


def _ublk_lines(ublk: dict[str, Any]) -> list[str]:
    """Volumes as local ublk devices (daemon/netcfgd/ublk.py)."""
    rows = []
    for d in ublk.get("devices") or ():
        if d["state"] == "error":
            state = f"not served: {d['error']}"
        elif d["state"] == "kept":
            state = f"kept (dropped from the config, in use: {d['held_by']})"
        else:
            state = f"serving as {d['link']}" + (" (adopted)" if d["adopted"] else "")
        if d.get("warning"):
            state += f"; warning: {d['warning']}"
        rows.append((d["volume"], d.get("device", "-"), state))
    unavailable = ublk.get("unavailable")
    return _table(unavailable and f"ublk: unavailable: {unavailable}; iSCSI is not affected",
                  UBLK, UBLK_HEADER, rows)
