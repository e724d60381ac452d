"""Open vSwitch's daemons for the kernel and VM tiers' OVS tests.

Debian's ovsdb-server and ovs-vswitchd, unpacked into .cache/openvswitch by
`make ovs-deps` and never installed, run inside the test's sandbox with their
database, sockets, pid files and logs in a temporary directory (OVS_RUNDIR,
OVS_DBDIR...: nothing under the host's /run/openvswitch or /etc/openvswitch).
``run_openvswitch`` yields ``vsctl(*args)``, ovs-vsctl on those daemons (a peer
that shares no code with netcfg), and stops both daemons by their pid files.
``proxmox_layout`` is the config the unit, kernel and VM tiers' OVS tests share.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
OVS = ROOT / ".cache" / "openvswitch"
LIBS = OVS / "usr" / "lib" / "x86_64-linux-gnu"

needs_ovs = pytest.mark.skipif(not (OVS / "usr" / "sbin" / "ovsdb-server").exists(),
                               reason="Open vSwitch is not unpacked: make ovs-deps")


# Proxmox VE's OVS layout (pve-network's qinq/ovs test): the host's file, eth0
# standing for its NIC, then the SDN file it sources; see proxmox_layout.
PROXMOX_LAYOUT = """\
auto eth0
iface eth0 inet manual
    ovs_type OVSPort
    ovs_bridge vmbr0

auto vmbr0
iface vmbr0 inet static
    address 192.0.2.10/24
    ovs_type OVSBridge
    ovs_ports {host_ports}
{bridge_options}{sdn_ports}
auto sv_myzone
iface sv_myzone
    ovs_type OVSIntPort
    ovs_bridge vmbr0
    ovs_options {port_options}

auto z_myzone
iface z_myzone
    bridge-stp off
    bridge-ports sv_myzone
"""
SDN_PORTS = """
auto vmbr0
iface vmbr0
    ovs_ports sv_myzone
"""


def proxmox_layout(tag: int = 10, qinq: str | None = "802.1q", *, bridge_options: str = "",
                   sdn_stanza: bool = False) -> str:
    """PROXMOX_LAYOUT. The SDN zone's port sv_myzone is an OVS internal port
    tagged ``tag``, a QinQ tunnel port whose outer ethertype is ``qinq`` (None:
    a plain access port), and a port of the Linux bridge z_myzone.
    ``bridge_options``: vmbr0's ovs_options. ``sdn_stanza``: the SDN file adds
    sv_myzone to vmbr0 in a stanza of its own, as pve-network writes it;
    otherwise the host's vmbr0 stanza lists it (the two files merged)."""
    port_options = (f"vlan_mode=dot1q-tunnel tag={tag} other_config:qinq-ethtype={qinq}"
                    if qinq else f"tag={tag}")
    return PROXMOX_LAYOUT.format(
        host_ports="eth0" if sdn_stanza else "eth0 sv_myzone",
        bridge_options=f"    ovs_options {bridge_options}\n" if bridge_options else "",
        sdn_ports=SDN_PORTS if sdn_stanza else "", port_options=port_options)


def _env(rundir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OVS_RUNDIR=str(rundir), OVS_DBDIR=str(rundir), OVS_LOGDIR=str(rundir),
               OVS_SYSCONFDIR=str(rundir), OVS_PKGDATADIR=str(OVS / "usr/share/openvswitch"),
               LD_LIBRARY_PATH=str(LIBS))
    return env


@contextlib.contextmanager
def run_openvswitch(rundir: Path, monkeypatch, devices: tuple[str, ...] = ()
                    ) -> Iterator[Callable[..., str]]:
    """ovsdb-server and ovs-vswitchd on a database in ``rundir``; OVS_RUNDIR
    points netcfg at them. ``devices``: deleted afterwards (ovs-vswitchd
    leaves the userspace datapath's tap devices behind when stopped)."""
    rundir.mkdir(parents=True, exist_ok=True)
    env = _env(rundir)
    db = rundir / "conf.db"

    def run(*cmd: str) -> str:
        return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True,
                              timeout=60).stdout

    run(str(OVS / "usr/bin/ovsdb-tool"), "create", str(db),
        str(OVS / "usr/share/openvswitch/vswitch.ovsschema"))
    run(str(OVS / "usr/sbin/ovsdb-server"), str(db), f"--remote=punix:{rundir}/db.sock",
        f"--pidfile={rundir}/ovsdb-server.pid", "--detach", f"--log-file={rundir}/db.log")
    pids = [rundir / "ovsdb-server.pid"]
    try:
        run(str(OVS / "usr/bin/ovs-vsctl"), "--no-wait", "init")
        run(str(OVS / "usr/lib/openvswitch-switch/ovs-vswitchd"), f"unix:{rundir}/db.sock",
            f"--pidfile={rundir}/ovs-vswitchd.pid", "--detach",
            f"--log-file={rundir}/vswitchd.log")
        pids.append(rundir / "ovs-vswitchd.pid")
        monkeypatch.setenv("OVS_RUNDIR", str(rundir))

        def vsctl(*args: str) -> str:
            return run(str(OVS / "usr/bin/ovs-vsctl"), "--timeout=30", *args).strip()

        yield vsctl
    finally:
        for pidfile in reversed(pids):
            _stop(pidfile)
        # The kernel datapath outlives ovs-vswitchd with its internal ports
        # (vmbr0 ...), which `ip link del` cannot remove (EOPNOTSUPP): a later
        # test making a Linux bridge of that name found an OVS port there.
        dpctl = str(OVS / "usr/bin/ovs-dpctl")
        listed = subprocess.run([dpctl, "dump-dps"], env=env, capture_output=True, text=True,
                                timeout=60)
        for datapath in listed.stdout.split():
            subprocess.run([dpctl, "del-dp", datapath], env=env, capture_output=True, timeout=60)
        for dev in devices:
            subprocess.run(["ip", "link", "del", dev], capture_output=True)


def _stop(pidfile: Path) -> None:
    """Stop a daemon the test started, by the pid it wrote."""
    try:
        pid = int(pidfile.read_text())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
