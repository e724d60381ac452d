"""The sandbox guard and fixtures of the tiers that touch the kernel
(tests/kernel, and tests/vm inside the VM): root, and never the host's network.

These tests create namespaces, devices and mounts. They run as root inside a
private network and mount namespace (`make test-kernel`:
``unshare --net --mount --propagation private PY -m pytest tests/kernel``).
The checks below run at import, before anything is touched: not root skips
the tier; root in the host's network or mount namespace stops the whole run.
Each tier's conftest imports this module (its fixtures by name), so the
checks run once however many tiers a run collects.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from sandbox import NETNS_RUN_DIR, enter_or_refuse

from netcfg.kernel.ns import Netns, NetnsDir, NetnsSwitcher
from netcfg.kernel.session import KernelSession
from netcfg.model.tags import NETCFG_GROUP

RUN_DIR = NETNS_RUN_DIR


SKIP_REASON = None
if os.geteuid() != 0:
    SKIP_REASON = "kernel tests need root, inside a private network namespace: make test-kernel"
elif shutil.which("ip") is None:
    SKIP_REASON = "kernel tests read state back with iproute2: install iproute2"
else:
    enter_or_refuse("test-kernel")


def veth_tenants(tenants: list[str], net: str = "10.0.${n}", prefix: int = 30,
                 route: str = "default", *, host: str = "veth-${tenant}", head: str = "",
                 host_extra: str = "", eth0_extra: str = "", tail: str = "") -> str:
    """Config text (a Mako loop) giving each of ``tenants`` (``${tenant}``,
    numbered ``${n}`` from 1) a veth ``host`` whose peer is eth0 in the netns
    ``${tenant}``: ``{net}.1/{prefix}`` on the host side, ``{net}.2/{prefix}``
    on eth0 and a route ``{route} via {net}.1`` there. ``head`` and ``tail``
    are stanzas in the loop around the pair; ``*_extra``, attribute lines."""
    return (f"% for n, tenant in enumerate({json.dumps(tenants)}, start=1):\n{head}"
            f"auto {host}\niface {host}\n    link-type veth\n    veth-peer-name eth0\n"
            f"    veth-peer-netns ${{tenant}}\n    address {net}.1/{prefix}\n{host_extra}\n"
            f"auto eth0\niface eth0\n    netns ${{tenant}}\n    address {net}.2/{prefix}\n"
            f"{eth0_extra}    route {route} via {net}.1\n{tail}% endfor\n")


def kernel_makes(kind: str, *args: str) -> bool:
    """Whether the running kernel makes a ``kind`` device (tests that need a
    refusal no config check can foresee use a kind the host kernel lacks)."""
    made = subprocess.run(["ip", "link", "add", "kindprobe0", "type", kind, *args],
                          capture_output=True).returncode == 0
    if made:
        subprocess.run(["ip", "link", "del", "kindprobe0"], capture_output=True)
    return made


def skip_tier(items, tier: Path) -> None:
    """A conftest's pytest_collection_modifyitems: without root (or ip), the
    tests under ``tier`` skip, saying why."""
    if SKIP_REASON:
        skip = pytest.mark.skip(reason=SKIP_REASON)
        for item in items:
            if tier in Path(item.fspath).parents:
                item.add_marker(skip)


@pytest.fixture
def netns_dir():
    """/run/netns (a private tmpfs), emptied again after each test."""
    nsdir = NetnsDir(RUN_DIR)
    assert nsdir.list_names() == [], "a previous test left namespaces behind"
    yield nsdir
    nsdir.delete_many(nsdir.list_names())


def remove_what_netcfg_made(netns_dir: NetnsDir) -> None:
    """Leave the sandbox as the test found it: namespaces, then netcfg's
    devices in the host side, then wait for the kernel's asynchronous
    namespace cleanup to take the veths whose other end was inside."""
    netns_dir.delete_many(netns_dir.list_names())
    subprocess.run(["ip", "link", "delete", "group", str(NETCFG_GROUP)], capture_output=True)
    deadline = time.monotonic() + 5
    # `ip -j link show group N` prints {} for each device outside the group.
    while any(_ip_json("link", "show", "group", str(NETCFG_GROUP))) \
            and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def session(netns_dir):
    """A KernelSession on the sandbox's /run/netns; what it made is removed after."""
    with KernelSession(netns_dir.path) as kernel:
        yield kernel
    remove_what_netcfg_made(netns_dir)


@pytest.fixture
def switcher():
    with NetnsSwitcher() as sw:
        yield sw


def _ip_json(*args: str):
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def link_of(name: str) -> dict | None:
    """`ip -j link show dev NAME` parsed; None when there is no such device."""
    found = subprocess.run(["ip", "-j", "link", "show", "dev", name], capture_output=True,
                           text=True)
    return json.loads(found.stdout)[0] if found.returncode == 0 else None


def global_addresses(name: str) -> list[str]:
    """NAME's global-scope addresses as ADDRESS/PREFIX, sorted (the kernel's
    link-local ones left out)."""
    return sorted(f"{a['local']}/{a['prefixlen']}" for li in _ip_json("addr", "show", "dev", name)
                  for a in li.get("addr_info", ()) if a.get("scope") == "global")


def add_nic_standins(names) -> None:
    """A veth pair for each name standing in for a NIC: NAME down and
    unconfigured, as nobody configured it; its peer NAME-peer up, so NAME
    has carrier once it comes up."""
    for name in names:
        subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name",
                        f"{name}-peer"], check=True)
        subprocess.run(["ip", "link", "set", f"{name}-peer", "up"], check=True)


def ifupdown_dirs(tmp_path: Path, monkeypatch) -> None:
    """The ifupdown commands' state dir and an empty network dir (no if-*.d
    scripts) in tmp_path, not the host's."""
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETCFG_NETWORK_DIR", str(tmp_path / "network"))


# The first lines of a script that runs Debian's ifupdown2 as a peer, in the
# network and mount namespaces `unshare --net --mount --propagation private`
# gave it: /sys of its own namespace's devices (else ifupdown2's sysfs writes
# reach the host's devices of the same name), its state dirs on tmpfs.
IFUPDOWN2_SANDBOX = """\
set -u
mount --make-rprivate /
mount -t sysfs none /sys
for d in /run /var/tmp; do mount -t tmpfs -o mode=0755 peer $d; done
mkdir -p /run/network /var/tmp/network
"""


def link_details(dev: str) -> dict:
    """`ip -d -j link show dev DEV` parsed: the device, with its linkinfo
    (info_data, and info_slave_data for a port)."""
    return _ip_json("-d", "link", "show", "dev", dev)[0]


@pytest.fixture
def ip_json():
    """ip_json(*ARGS) -> `ip -j ARGS` parsed: iproute2 reads our state back."""
    return _ip_json


@pytest.fixture
def read_links():
    """read_links(netns or name) -> `ip -j -n NAME link show` (root: no -n)."""
    def read(netns: Netns | str) -> list[dict]:
        name = netns.name if isinstance(netns, Netns) else netns
        return _ip_json(*(["-n", name] if name else []), "link", "show")
    return read
