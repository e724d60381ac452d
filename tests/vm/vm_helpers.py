"""What the VM tests share: netcfgd's standalone target forked into a child
process (a fresh interpreter takes a minute to start under TCG; a fork starts
warm), its SIGTERM stop, and polling with the VM tier's patience."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from polling import poll

SETTLE_S = 120   # qemu TCG on a loaded machine: generous, but bounded


def wait_for(what: str, probe, timeout: float = SETTLE_S, step: float = 0.5):
    """probe()'s first truthy value; AssertionError after ``timeout`` s."""
    return poll(probe, timeout, what, step, AssertionError)


def fork_target(argv: list[str], out: Path, err: Path, log_info: bool = False) -> int:
    """`netcfgd.target main(argv)` in a forked child writing to ``out`` and
    ``err`` (``log_info``: its INFO log lines too); the child's pid."""
    # Imported here, before the fork, so the child starts warm.
    from netcfgd.target import main
    pid = os.fork()
    if pid:
        return pid
    code = 70                                           # the child: never returns
    try:
        for fd, path in ((1, out), (2, err)):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        # pytest's capture replaced sys.stdout/stderr: write to the fds.
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        if log_info:
            logging.basicConfig(level=logging.INFO, stream=sys.stderr)
        code = main(argv)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def terminate(pid: int, who: str, grace_s: float = 60) -> int:
    """SIGTERM ``pid`` and reap it; its wait status. A child still running
    after ``grace_s`` is killed and the test fails."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while True:
        reaped, status = os.waitpid(pid, os.WNOHANG)
        if reaped:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"{who} ignored SIGTERM for {grace_s:g} s")
        time.sleep(0.2)
