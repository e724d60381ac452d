"""Keep a change only if someone says so in time: `netcfg apply --confirm
SECONDS` waits here, `netcfg confirm` answers (as `netplan try`).

The waiting apply listens on a unix socket, RUN_DIR/confirm-PID (RUN_DIR:
$NETCFG_RUN_DIR, default /run/netcfg; the directory 0700 and the socket
0600, so root only). `netcfg confirm` connects, sends ``confirm`` and reads
``ok``: only then is the change kept, so a confirmation is either taken or
refused, never lost. `netcfg confirm --revert` sends ``revert`` the same way:
the apply reverts now, as at its deadline. An apply whose time ran out has closed its socket and
is reverting; a socket left by an apply that died refuses connections and
is removed.

While waiting, SIGINT (Ctrl-C) and SIGTERM end the wait: the caller
reverts. SIGHUP does not, during the wait or during the apply before it
(``hangup_detaches``): it is what a dropped ssh session sends, and the
session may have dropped because of the change. The apply goes on with its
output sent to /dev/null, so `netcfg confirm` from a new session can still
keep the change, and the deadline still reverts it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from typing import Iterator

from netcfg.model.errors import (EXIT_APPLY_FAILED_REVERTED, EXIT_INVALID_CONFIG, NetcfgError,
                                 UsageError)

DEFAULT_RUN_DIR = "/run/netcfg"
MAX_CONFIRM_S = 86400      # the longest `apply --confirm` may wait: a day
PREFIX = "confirm-"
REQUEST, REVERT_REQUEST, REPLY = b"confirm\n", b"revert\n", b"ok\n"


def run_dir() -> str:
    """Where netcfg keeps its runtime files (the apply lock, confirm sockets)."""
    return os.environ.get("NETCFG_RUN_DIR") or DEFAULT_RUN_DIR


class NotWaiting(NetcfgError):
    """`netcfg confirm` found no apply waiting for it (exit 1)."""

    exit_code = EXIT_INVALID_CONFIG


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while an apply waited for confirmation."""


class RevertRequested(Exception):
    """`netcfg confirm --revert` asked the waiting apply to revert now."""


class ConfirmWaiter:
    """The applying side: ``with ConfirmWaiter() as w: confirmed = w.wait(30)``."""

    def __init__(self, directory: str | None = None):
        self.directory = directory or run_dir()
        self.path = os.path.join(self.directory, f"{PREFIX}{os.getpid()}")
        self.sock: socket.socket | None = None

    def __enter__(self) -> "ConfirmWaiter":
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)   # left by a process that had our pid
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.bind(self.path)
            os.chmod(self.path, 0o600)
            sock.listen(8)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def wait(self, seconds: float) -> bool:
        """True once `netcfg confirm` was answered ``ok``; False when the time
        ran out. Raises Interrupted on SIGINT/SIGTERM, RevertRequested when
        `netcfg confirm --revert` asked (it was answered ``ok``)."""
        assert self.sock is not None, "use ConfirmWaiter as a context manager"
        deadline = time.monotonic() + seconds
        with wait_signals():
            while (remaining := deadline - time.monotonic()) > 0:
                self.sock.settimeout(remaining)
                try:
                    conn, _ = self.sock.accept()
                except TimeoutError:
                    return False
                with conn:
                    conn.settimeout(min(1.0, remaining))
                    try:
                        request = conn.recv(len(REQUEST))
                        if request in (REQUEST, REVERT_REQUEST):
                            conn.sendall(REPLY)
                            if request == REVERT_REQUEST:
                                raise RevertRequested()
                            return True
                    except OSError:
                        pass   # a client that went away, or said nothing in time
        return False


def confirm(directory: str | None = None, timeout: float = 5.0,
            request: bytes = REQUEST) -> int:
    """Confirm the apply that is waiting (or with REVERT_REQUEST, have it
    revert now); its pid. NotWaiting when none is."""
    directory = directory or run_dir()
    try:
        names = sorted(n for n in os.listdir(directory) if n.startswith(PREFIX))
    except FileNotFoundError:
        names = []
    except PermissionError:
        raise UsageError(f"cannot read {directory}: netcfg confirm needs root") from None
    late = None
    for name in names:
        path = os.path.join(directory, name)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as sock:
            sock.settimeout(timeout)
            try:
                sock.connect(path)
            except ConnectionRefusedError:   # its apply died without cleaning up
                with contextlib.suppress(OSError):
                    os.unlink(path)
                continue
            except FileNotFoundError:        # its apply just finished
                continue
            except PermissionError:
                raise UsageError(f"cannot connect to {path}: netcfg confirm needs root") from None
            try:
                sock.sendall(request)
                reply = sock.recv(len(REPLY))
            except OSError:
                reply = b""
        if reply == REPLY:
            return int(name[len(PREFIX):])
        late = name[len(PREFIX):]
    if late is not None:
        raise NotWaiting(f"the apply (pid {late}) ran out of time before it took the "
                         f"confirmation: it is reverting")
    raise NotWaiting("no apply is waiting for confirmation")


class ApplyInterrupted(NetcfgError):
    """SIGINT or SIGTERM came while an apply wrote: what it wrote is reverted (exit 3)."""

    exit_code = EXIT_APPLY_FAILED_REVERTED


class InterruptGuard:
    """SIGINT and SIGTERM while an apply writes are noted, never raised in the
    middle of a batch (that would leave a half-applied config): ``check()``,
    called between batches, raises ApplyInterrupted, which apply() answers by
    reverting what it wrote. ``signal_name`` says whether one came at all."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._raised = False
        self._context: contextlib.AbstractContextManager | None = None

    def __enter__(self) -> "InterruptGuard":
        def note(signum: int, _frame: object) -> None:
            if self.signal_name is None:
                print("netcfg: interrupted: what this apply wrote is reverted after the "
                      "batch under way", file=sys.stderr, flush=True)
            self.signal_name = signal.Signals(signum).name

        self._context = _handlers({signal.SIGINT: note, signal.SIGTERM: note})
        self._context.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._context is not None
        self._context.__exit__(*exc)

    def check(self) -> None:
        """Raise once: the revert that answers it runs batches too, and must
        not be interrupted in turn (more signals are noted and ignored)."""
        if self.signal_name is not None and not self._raised:
            self._raised = True
            raise ApplyInterrupted(f"interrupted ({self.signal_name})")


@contextlib.contextmanager
def wait_signals() -> Iterator[None]:
    """While waiting for a confirmation: SIGINT and SIGTERM raise Interrupted,
    SIGHUP detaches the output (the terminal may be gone with the change)."""
    def stop(signum: int, _frame: object) -> None:
        raise Interrupted(signal.Signals(signum).name)

    def hung_up(_signum: int, _frame: object) -> None:
        detach_output()

    with _handlers({signal.SIGINT: stop, signal.SIGTERM: stop, signal.SIGHUP: hung_up}):
        yield


@contextlib.contextmanager
def hangup_detaches() -> Iterator[None]:
    """SIGHUP sends output to /dev/null instead of ending the process (for a
    whole `apply --confirm`: its own change may be what hung up the terminal)."""
    with _handlers({signal.SIGHUP: lambda _signum, _frame: detach_output()}):
        yield


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP ignored (a revert must not stop halfway)."""
    with _handlers({s: signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}):
        yield


@contextlib.contextmanager
def _handlers(handlers: dict) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield   # only the main thread may set handlers (tests call from threads)
        return
    old = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def detach_output() -> None:
    """stdin, stdout and stderr to /dev/null: the terminal is gone, and writing
    to it would fail (EIO) after the work is done."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
