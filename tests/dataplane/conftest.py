"""The data path tier: the embedded iSCSI target against libiscsi's own
clients and compliance suite. Root only, inside a private network and mount
namespace (`make test-dataplane`: ``unshare --net --mount --propagation
private PY -m pytest tests/dataplane``). The guard runs at import, before
anything is touched: not root or no libiscsi-bin skips the tier; root in the
host's namespaces stops the run.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

RUN_DIR = "/run/netns"
CLIENTS = ("iscsi-ls", "iscsi-inq", "iscsi-readcapacity16", "iscsi-test-cu")
libc = ctypes.CDLL(None, use_errno=True)


def _outermost_ns_inode(kind: str) -> int:
    """The namespace this process tree started in (PID 1's, else the farthest
    readable ancestor's)."""
    found = os.stat(f"/proc/self/ns/{kind}").st_ino
    pid = os.getppid()
    try:
        while pid > 1:
            found = os.stat(f"/proc/{pid}/ns/{kind}").st_ino
            status = Path(f"/proc/{pid}/status").read_text()
            pid = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")))
        found = os.stat("/proc/1/ns/{kind}".format(kind=kind)).st_ino
    except OSError:
        pass
    return found


def _mount_tmpfs(target: str) -> None:
    if libc.mount(b"tmpfs", target.encode(), b"tmpfs", ctypes.c_ulong(0), b"mode=755"):
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {target}: {os.strerror(err)}")


def _enter_sandbox() -> None:
    """Private, empty /run/netns; lo up. Only ever called inside the sandbox."""
    if os.path.isdir(RUN_DIR):
        _mount_tmpfs(RUN_DIR)
    else:
        _mount_tmpfs("/run")
        os.mkdir(RUN_DIR, 0o755)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


SKIP_REASON = None
if os.geteuid() != 0:
    SKIP_REASON = "data path tests need root, inside a private network namespace: make test-dataplane"
elif any(shutil.which(c) is None for c in CLIENTS):
    SKIP_REASON = "data path tests use libiscsi's clients: apt-get install libiscsi-bin"
else:
    if os.stat("/proc/self/ns/net").st_ino == _outermost_ns_inode("net"):
        pytest.exit("data path tests must run inside a private network namespace: "
                    "make test-dataplane", returncode=4)
    if os.stat("/proc/self/ns/mnt").st_ino == _outermost_ns_inode("mnt"):
        pytest.exit("data path tests must run inside a private mount namespace: "
                    "make test-dataplane", returncode=4)
    _enter_sandbox()


def pytest_collection_modifyitems(config, items):
    if SKIP_REASON:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@pytest.fixture
def netns_dir():
    from netcfg.kernel.ns import NetnsDir
    d = NetnsDir(RUN_DIR)
    yield d
    for name in d.list_names():
        d.delete(name)


@pytest.fixture
def dataplane():
    """A Dataplane with the sandbox's own namespace added as ""."""
    from netcfg.kernel.ns import NetnsDir
    from netcfgd._dataplane import Dataplane
    dp = Dataplane(threads=2)
    root = NetnsDir(RUN_DIR).open("")
    dp.add_namespace("", root.fd, root.identity.cookie)
    yield dp
    dp.shutdown()
    root.close()
