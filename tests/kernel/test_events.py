"""What the kernel announces, and what it does not (docs/daemon.md).

netcfgd repairs drift when a notification tells it something changed
(netcfg/kernel/events.py). These tests pin which out-of-band changes to
managed attributes reach it on this kernel and which do not: the silent
ones are repaired only by netcfgd's periodic resync or by `netcfg apply`,
which always reads the kernel. If a kernel starts announcing one, the test
says so and the doc's list shrinks.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from netcfg.kernel.events import EventSocket

# The sandbox guard (root, never the host's namespaces) is tests/kernel_env.py.

SETTLE_S = 0.2


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True)


@pytest.fixture(params=["up", "down"])
def sysfs(tmp_path: Path, request):
    """sysfs of the sandbox's own network namespace (the /sys inherited from
    the host shows the host's devices), mounted aside, not over /sys; and a
    bridge with a veth port, all up or all down."""
    mount = tmp_path / "sys"
    mount.mkdir()
    subprocess.run(["mount", "-t", "sysfs", "none", str(mount)], check=True)
    ip("link", "add", "evbr", "type", "bridge")
    ip("link", "add", "eva", "type", "veth", "peer", "name", "evb")
    ip("link", "set", "eva", "master", "evbr")
    if request.param == "up":
        for name in ("evbr", "eva", "evb"):
            ip("link", "set", name, "up")
    try:
        yield mount, request.param
    finally:
        subprocess.run(["ip", "link", "del", "evbr"], check=False)
        subprocess.run(["ip", "link", "del", "eva"], check=False)
        subprocess.run(["umount", str(mount)], check=False)


def heard(events: EventSocket, change) -> list[str]:
    events.read()           # what came before is not this change's
    change()
    time.sleep(SETTLE_S)
    return [e.kind for e in events.read()]


def write(path: Path, value: str):
    return lambda: path.write_text(value + "\n")


# Silent whatever the device's state: settings the kernel keeps without a
# notifier call (the sysctl), or changes through a sysfs file that sends none.
SILENT_ALWAYS = {"sysctl addr_gen_mode", "sysfs netdev_group"}
# Silent while the device is down: these go through netdev_state_change(),
# which notifies only for a device that is up; disable_ipv6 is heard when up
# because the device's link-local address goes with it.
SILENT_WHEN_DOWN = {"sysctl disable_ipv6", "sysfs ifalias", "sysfs bridge stp_state",
                    "sysfs bridge ageing_time", "sysfs bridge multicast_snooping",
                    "ip link set alias", "ip link set group"}


def test_which_out_of_band_changes_the_kernel_announces(sysfs):
    mount, state = sysfs
    net = mount / "class" / "net"
    conf = Path("/proc/sys/net/ipv6/conf/eva")
    changes = {
        "sysctl disable_ipv6": write(conf / "disable_ipv6", "1"),
        "sysctl addr_gen_mode": write(conf / "addr_gen_mode", "3"),
        "sysfs ifalias": write(net / "eva" / "ifalias", "changed"),
        "sysfs netdev_group": write(net / "eva" / "netdev_group", "7"),
        "sysfs bridge stp_state": write(net / "evbr" / "bridge" / "stp_state", "1"),
        "sysfs bridge ageing_time": write(net / "evbr" / "bridge" / "ageing_time", "3000"),
        "sysfs bridge multicast_snooping":
            write(net / "evbr" / "bridge" / "multicast_snooping", "0"),
        "sysfs mtu": write(net / "eva" / "mtu", "1400"),
        "sysfs brport learning": write(net / "eva" / "brport" / "learning", "0"),
        "ip link set alias": lambda: ip("link", "set", "eva", "alias", "by netlink"),
        "ip link set group": lambda: ip("link", "set", "eva", "group", "8"),
    }
    with EventSocket() as events:
        unheard = {label for label, change in changes.items() if not heard(events, change)}
    # docs/daemon.md lists these; the others prove the listener hears.
    assert unheard == SILENT_ALWAYS | (SILENT_WHEN_DOWN if state == "down" else set())
