"""systemd's notification protocol (sd_notify): READY=1, STATUS=, RELOADING=1,
STOPPING=1, WATCHDOG=1, EXTEND_TIMEOUT_USEC=.

systemd-python's ``systemd.daemon.notify`` when it is installed; otherwise
the datagram is written here, which is all sd_notify does: one AF_UNIX
datagram of ``KEY=VALUE`` lines to $NOTIFY_SOCKET (a leading '@' names an
abstract socket). Without $NOTIFY_SOCKET (not run by systemd) nothing is sent.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Callable

MONOTONIC_USEC = 1_000_000


def _systemd_notify() -> Callable[[str], bool] | None:
    try:
        from systemd import daemon   # systemd-python
    except ImportError:
        return None
    return daemon.notify


def send_datagram(address: str, message: str) -> bool:
    """One sd_notify datagram to ``address`` ('@name': abstract); False if it failed."""
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            # Never wait: a reader that fell behind must not stall the loop.
            sock.sendto(message.encode(), socket.MSG_DONTWAIT, address)
        except OSError:
            return False
    return True


class Notifier:
    """What netcfgd tells systemd, and when the watchdog wants a ping."""

    def __init__(self, environ: dict[str, str] | None = None, use_library: bool = True):
        env = os.environ if environ is None else environ
        self.address = env.get("NOTIFY_SOCKET") or None
        library = _systemd_notify() if use_library else None
        # The library reads $NOTIFY_SOCKET itself: use it only when that is
        # the address we were given.
        self._library = library if env is os.environ else None
        usec = env.get("WATCHDOG_USEC")
        pid = env.get("WATCHDOG_PID")
        wanted = usec and usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid()))
        # Ping at half the interval, as sd_watchdog_enabled(3) advises.
        self.watchdog_interval = int(usec) / MONOTONIC_USEC / 2 if wanted else None
        self._last_ping = 0.0
        self._last_status: str | None = None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def notify(self, *fields: str, frequent: bool = False) -> None:
        """Send ``fields``. ``frequent`` ones (STATUS=, WATCHDOG=1) go as our
        own non-blocking datagram: the library's sendmsg blocks when the
        reader's queue is full (net.unix.max_dgram_qlen, 10 here), and a
        stalled reader must never stall the loop; a status it misses is
        replaced by the next one."""
        if not self.enabled:
            return
        message = "\n".join(fields)
        for _attempt in range(3):
            try:
                if self._library is not None and not frequent:
                    self._library(message)
                else:
                    send_datagram(self.address, message)
                break
            except InterruptedError:   # a signal landed in sendmsg (C code: no retry)
                continue
            except OSError:
                return                 # systemd went away: nothing to tell
        for field_ in fields:
            if field_.startswith("STATUS="):
                self._last_status = field_[len("STATUS="):]

    def ready(self, status: str) -> None:
        self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        """STATUS=, only when it changed (it is sent after every pass)."""
        if status != self._last_status:
            self.notify(f"STATUS={status}", frequent=True)

    def reloading(self) -> None:
        # MONOTONIC_USEC: systemd 253+ wants it with RELOADING=1 (Type=notify-reload).
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.notify("RELOADING=1", f"MONOTONIC_USEC={usec}")

    def stopping(self) -> None:
        self.notify("STOPPING=1")

    def extend_timeout(self, seconds: float) -> None:
        """EXTEND_TIMEOUT_USEC=: systemd allows the start (or stop) ``seconds``
        more from when it reads this, whatever TimeoutStartSec says; the
        caller sends it again before that runs out (sd_notify(3)). For a
        wait whose length is someone else's (a CLI trial's deadline)."""
        usec = max(1, int(seconds * MONOTONIC_USEC))
        self.notify(f"EXTEND_TIMEOUT_USEC={usec}", frequent=True)

    def watchdog_due(self, now: float) -> float | None:
        """Seconds until the next ping is due (None: no watchdog)."""
        if self.watchdog_interval is None:
            return None
        return max(0.0, self._last_ping + self.watchdog_interval - now)

    def ping(self, now: float | None = None) -> None:
        """WATCHDOG=1, at most once per half interval."""
        if self.watchdog_interval is None:
            return
        now = time.monotonic() if now is None else now
        if now - self._last_ping >= self.watchdog_interval:
            self._last_ping = now
            self.notify("WATCHDOG=1", frequent=True)
