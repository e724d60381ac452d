"""The apply lock: one writer of the kernel's network state at a time.

`netcfg apply`/`down` hold it while they write, and so does netcfgd during
each reconcile pass, so a CLI that does not go through the daemon waits for
it (and the other way round). It is a flock on <run dir>/apply.lock, which
holds the pid of the holder, so whoever waits can say for whom.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from typing import Callable, Iterator

LOCK_FILE = "apply.lock"


class LockHeld(Exception):
    """Another process holds the lock and the caller would not wait."""

    def __init__(self, holder: str):
        super().__init__(holder)
        self.holder = holder


@contextlib.contextmanager
def apply_lock(directory: str, on_wait: Callable[[str], None] | None = None, *,
               wait: bool = True) -> Iterator[None]:
    """Hold the lock in ``directory``; when another process holds it, call
    ``on_wait(its pid)`` once and wait, or with ``wait`` false raise LockHeld
    (ifupdown2's commands fail at once, exit 89)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            if not wait:
                raise LockHeld(holder) from None
            if on_wait is not None:
                on_wait(holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
