"""The guard every root test tier passes through (tests/kernel, tests/dataplane).

Those tests create namespaces, devices and mounts, so they run as root inside
a private network and mount namespace (`unshare --net --mount --propagation
private`, which the Makefile targets do). ``enter_or_refuse()`` runs at a
tier's conftest import, before anything is touched: root in the host's
network or mount namespace stops the whole run; inside the sandbox it mounts
a private, empty /run/netns and the sandbox's own /sys, and brings lo up.
"""

from __future__ import annotations

import ctypes
import errno
import os
import subprocess
from pathlib import Path

import pytest

NETNS_RUN_DIR = "/run/netns"     # where iproute2 looks: `ip -n NAME` must see ours
_libc = ctypes.CDLL(None, use_errno=True)


def outermost_ns_inode(kind: str) -> int:
    """The namespace this process tree started in: PID 1's, or, where PID 1
    cannot be read (a container's may deny it even to root), that of the
    farthest ancestor that can. Ours when none can: then we refuse to run."""
    found = os.stat(f"/proc/self/ns/{kind}").st_ino
    pid = os.getppid()
    try:
        while pid > 1:
            found = os.stat(f"/proc/{pid}/ns/{kind}").st_ino
            status = Path(f"/proc/{pid}/status").read_text()
            pid = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")))
        found = os.stat(f"/proc/1/ns/{kind}").st_ino
    except OSError:
        pass
    return found


def mount(source: str, target: str, fstype: str, flags: int = 0, data: str | None = None) -> None:
    if _libc.mount(source.encode(), target.encode(), fstype.encode(), ctypes.c_ulong(flags),
                   data.encode() if data else None):
        err = ctypes.get_errno()
        raise OSError(err, f"mount {fstype} on {target}: {os.strerror(err)}")


def enter_or_refuse(make_target: str) -> None:
    """Stop the run unless this process is in private network and mount
    namespaces; then give it a private /run/netns and lo up."""
    for kind, what in (("net", "network"), ("mnt", "mount")):
        if os.stat(f"/proc/self/ns/{kind}").st_ino == outermost_ns_inode(kind):
            pytest.exit(f"these tests must run inside a private {what} namespace: "
                        f"make {make_target}", returncode=4)
    if os.path.isdir(NETNS_RUN_DIR):
        mount("tmpfs", NETNS_RUN_DIR, "tmpfs", 0, "mode=755")
    else:
        # Creating /run/netns would leave an empty directory on the host's
        # /run; a private tmpfs over /run leaves nothing (tests need no /run).
        mount("tmpfs", "/run", "tmpfs", 0, "mode=755")
        os.mkdir(NETNS_RUN_DIR, 0o755)
    # A sysfs of this network namespace over /sys: the one inherited shows the
    # host's devices, so a sysfs write to a device of the same name (bridge
    # and port knobs, as ifupdown2 writes them) would reach the host's.
    try:
        mount("sysfs", "/sys", "sysfs")
    except OSError as e:
        # EBUSY: this namespace's sysfs is mounted there already (a second
        # tier's conftest in the same run).
        if e.errno != errno.EBUSY:
            raise
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
