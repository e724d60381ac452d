"""What the VM tests share: whether the running kernel can make a kind of
link (the tier's skip guard), netcfgd's standalone target forked into a child
process (a fresh interpreter takes a minute to start under TCG; a fork starts
warm), its SIGTERM stop, polling with the VM tier's patience, and netcfgd
itself run on a config until it has repaired what a test broke."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

from polling import poll

SETTLE_S = 120   # qemu TCG on a loaded machine: generous, but bounded


def kernel_can(*ip_args: str) -> bool:
    """Whether ``ip link add IP_ARGS...`` works here (the module is there); the
    probe device, ``ip_args[0]``, is removed again."""
    made = subprocess.run(["ip", "link", "add", *ip_args], capture_output=True)
    subprocess.run(["ip", "link", "del", ip_args[0]], capture_output=True)
    return made.returncode == 0


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


def ping(netns: str, address: str, tries: int = 10) -> bool:
    """Whether ``address`` answers a ping from the namespace ``netns``."""
    assert shutil.which("ping"), "ping is not installed (iputils-ping; make test-vm installs it)"
    for _ in range(tries):
        if subprocess.run(["ip", "netns", "exec", netns, "ping", "-c", "1", "-W", "1", address],
                          capture_output=True).returncode == 0:
            return True
        time.sleep(0.3)
    return False


class Netcfgd:
    """netcfgd running on a config (``netcfgd()``), and its log."""

    def __init__(self, proc: subprocess.Popen, log: Path):
        self.proc = proc
        self.log = log

    def repairs(self, what: str, repaired, timeout: float = 60) -> float:
        """Seconds until ``repaired()`` is true, netcfgd running all along;
        AssertionError with the end of its log otherwise."""
        start = time.monotonic()

        def probe():
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            return repaired()
        try:
            wait_for(f"netcfgd to repair {what}", probe, timeout, step=0.2)
        except AssertionError as failed:
            raise AssertionError(f"{failed}:\n{self.log.read_text()[-3000:]}") from None
        return time.monotonic() - start


@contextlib.contextmanager
def netcfgd(tmp_path: Path, config: Path, *args: str):
    """`netcfgd -c config -v ARGS` (run dir and log under ``tmp_path``) once
    it has said READY=1 (after its first pass); terminated on the way out."""
    log_path = tmp_path / "netcfgd.log"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    notify.bind(str(tmp_path / "notify.sock"))
    notify.settimeout(180)   # qemu without KVM on a loaded host starts Python slowly
    with notify, open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "netcfgd", "-c", str(config), "-v", *args],
                                stdout=log, stderr=log, cwd="/",
                                env={**os.environ, "NETCFG_RUN_DIR": str(tmp_path / "run"),
                                     "NOTIFY_SOCKET": str(tmp_path / "notify.sock")})
        try:
            try:
                while b"READY=1" not in notify.recv(65536):
                    pass
            except TimeoutError:
                raise AssertionError("netcfgd sent no READY=1:\n" + log_path.read_text()) from None
            yield Netcfgd(proc, log_path)
        finally:
            proc.terminate()
            proc.wait(30)
