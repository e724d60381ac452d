"""netcfgd waiting for a CLI `apply --confirm` before READY=1 keeps systemd's
start timeout ahead of the wait (EXTEND_TIMEOUT_USEC=) beside its WATCHDOG=1
pings (issue 23): the datagrams read from a real AF_UNIX socket, the apply
lock a real flock held by another open file."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from netcfg.apply.lock import apply_lock
from netcfg.apply.trial_record import CliTrial
from netcfgd.notify import Notifier
from netcfgd.trial import wait_for_cli_trial


def _drain(sock: socket.socket, until: threading.Event | None = None) -> list[tuple[float, bytes]]:
    """Datagrams and when they arrived, until none came for 50 ms (after
    ``until`` is set)."""
    sock.settimeout(0.05)
    got = []
    while True:
        try:
            got.append((time.monotonic(), sock.recv(4096)))
        except TimeoutError:
            if until is None or until.is_set():
                return got


def test_extend_timeout_is_one_datagram_in_microseconds(notify_socket):
    path, sock = notify_socket
    notifier = Notifier({"NOTIFY_SOCKET": path}, use_library=False)
    notifier.extend_timeout(90)
    assert sock.recv(4096) == b"EXTEND_TIMEOUT_USEC=90000000"
    notifier.extend_timeout(0.25)
    assert sock.recv(4096) == b"EXTEND_TIMEOUT_USEC=250000"
    # Not run by systemd: nothing to send, nothing raised.
    Notifier({}, use_library=False).extend_timeout(30)


def test_waiting_for_a_cli_trial_extends_the_start_timeout_until_it_ends(tmp_path, notify_socket):
    path, sock = notify_socket
    run_dir = str(tmp_path / "run")
    # A trial of this (live) process, the apply lock held by another open file,
    # as the CLI holds it for the trial's length.
    held = apply_lock(run_dir)
    held.__enter__()
    CliTrial(run_dir).begin(seconds=5, requests=1, config="/etc/netcfg", digest="x")
    released = threading.Event()

    def end_trial():
        held.__exit__(None, None, None)
        released.set()

    timer = threading.Timer(1.0, end_trial)
    # Read as they come, so the times are when they were sent.
    got: list[tuple[float, bytes]] = []
    reader = threading.Thread(target=lambda: got.extend(_drain(sock, until=released)))
    reader.start()
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"}, use_library=False)
    started = time.monotonic()
    timer.start()
    try:
        wait_for_cli_trial(run_dir, logging.getLogger("test"), notifier.ping, notifier.status,
                           poll_s=0.02, extend=notifier.extend_timeout, extension_s=0.3)
    finally:
        timer.cancel()
    waited = time.monotonic() - started
    assert released.is_set() and waited >= 0.9
    reader.join()
    messages = [m for _, m in got]
    extends = [t for t, m in got if m.startswith(b"EXTEND_TIMEOUT_USEC=")]
    assert all(m == b"EXTEND_TIMEOUT_USEC=300000" for m in messages
               if m.startswith(b"EXTEND_TIMEOUT_USEC="))
    assert b"WATCHDOG=1" in messages
    assert any(m.startswith(b"STATUS=waiting for the apply --confirm") for m in messages)
    # Re-sent well before each 0.3 s grant ran out, all through the 1 s wait:
    # the first at once, none more than a grant apart.
    assert len(extends) >= 3
    assert extends[0] - started < 0.3
    assert max(b - a for a, b in zip(extends, extends[1:])) < 0.3


def test_no_trial_no_wait_no_extension(tmp_path, notify_socket):
    path, sock = notify_socket
    notifier = Notifier({"NOTIFY_SOCKET": path}, use_library=False)
    wait_for_cli_trial(str(tmp_path / "run"), logging.getLogger("test"), notifier.ping,
                       notifier.status, extend=notifier.extend_timeout)
    assert _drain(sock) == []
