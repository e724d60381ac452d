"""Proxmox VE's guests are never disturbed (issue 21), on the host kernel's
plain bridges: an installer's /etc/network/interfaces applied, guests
plugged as pve-common plugs them (tests/proxmox.py: VM taps, a firewalled
VM's fwbr/fwln/fwpr, a container's veth), then pve-manager's Apply
Configuration replayed (the ifupdown2 check, `ifreload -V`'s rule, the .new
rename, `ifreload -a`, the task log's stderr filter) and pve-network's SDN
status poll; a bridge dropped from the file while a tap is on it; and
netcfgd's repairs. Every guest's existence, master, up state and ifindex is
read back with `ip -j` before and after. VLAN-aware bridges and PORT.TAG:
tests/vm/test_vm_proxmox.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import proxmox
import pytest
from kernel_env import remove_what_netcfg_made
from test_netcfgd import REPAIR_BOUND_S, Netcfgd, addresses, ip, link, wait_for

REPO = Path(__file__).resolve().parents[2]
COMMANDS = Path(sys.executable).parent     # the venv's ifup, ifdown, ifreload, ifquery

# pve-installer's Proxmox/Install.pm layout, its NIC a veth stand-in; vmbr1
# and vmbr2 are bridges an edit adds or drops.
INSTALLER = textwrap.dedent("""\
    auto lo
    iface lo inet loopback

    iface eno1 inet manual

    auto vmbr0
    iface vmbr0 inet static
        address 192.0.2.10/24{more}
        gateway 192.0.2.1
        bridge-ports eno1
        bridge-stp off
        bridge-fd 0
    {bridges}
    source {interfaces_d}/*
    """)
BRIDGE = textwrap.dedent("""\

    auto {name}
    iface {name} inet static
        address {address}
        bridge-ports none
        bridge-stp off
        bridge-fd 0
    """)
VMBR1 = BRIDGE.format(name="vmbr1", address="198.51.100.1/24")
VMBR2 = BRIDGE.format(name="vmbr2", address="203.0.113.1/24")


def layout(tmp_path: Path, more: str = "", bridges: str = "") -> str:
    return INSTALLER.format(more="".join(f"\n    address {a}" for a in more.split()),
                            bridges=bridges,
                            interfaces_d=tmp_path / "interfaces.d")


CONTAINER = "ct102"


@pytest.fixture
def pve(tmp_path, netns_dir):
    """The host: eno1 (a veth stand-in), the interfaces file and
    interfaces.d, the commands' dirs in tmp_path; guests and what netcfg
    made removed after."""
    ip("link", "add", "eno1", "type", "veth", "peer", "name", "eno1-peer")
    ip("link", "set", "eno1-peer", "up")
    (tmp_path / "interfaces.d").mkdir()
    for sub in ("state", "network", "run"):
        (tmp_path / sub).mkdir()
    path = tmp_path / "interfaces"
    path.write_text(layout(tmp_path, bridges=VMBR2))
    env = {**os.environ, "NETCFG_INTERFACES": str(path),
           "NETCFG_IFUPDOWN_STATE_DIR": str(tmp_path / "state"),
           "NETCFG_NETWORK_DIR": str(tmp_path / "network"),
           "NETCFG_RUN_DIR": str(tmp_path / "run")}
    guests: list[str] = []
    daemons: list[Netcfgd] = []
    yield path, env, guests, daemons
    for daemon in daemons:
        daemon.close()
    for name in [*guests, "eno1"]:
        subprocess.run(["ip", "link", "del", name], capture_output=True)
    remove_what_netcfg_made(netns_dir)


def plug_guests(guests: list[str], bridge: str = "vmbr0") -> None:
    """A VM, a VM behind Proxmox's firewall, a container: as qemu-server and
    pve-container plug them."""
    guests += proxmox.plug_vm(100, 0, bridge)
    guests += proxmox.plug_vm(101, 0, bridge, firewall=True)
    ip("netns", "add", CONTAINER)
    guests += proxmox.plug_ct(102, 0, bridge, CONTAINER)


def new_file(path: Path, text: str) -> None:
    """pve-common's INotify writes the staged file, interfaces.new."""
    path.with_name("interfaces.new").write_text(text)


def errors_of(task: proxmox.Task) -> list[str]:
    return [line for _, line in task.log if "error:" in line]


def test_the_package_puts_the_script_where_proxmox_looks():
    """pve-manager refuses Apply Configuration without /usr/share/ifupdown2,
    and pve-common writes ifupdown1's dialect without
    /usr/share/ifupdown2/ifupdown2: the package installs that path."""
    rules = (REPO / "debian" / "rules").read_text()
    assert f"$(IFU){proxmox.IFUPDOWN2_SCRIPT}" in rules
    links = (REPO / "debian" / "netcfg-ifupdown.links").read_text().split()
    assert links.count(proxmox.IFUPDOWN2_SCRIPT.lstrip("/")) == 4
    assert "netcfg.ifupdown.main" in (REPO / "debian" / "netcfg-ifupdown.ifupdown2").read_text()


def test_apply_configuration_and_sdn_poll_leave_guests_alone(pve, tmp_path):
    path, env, guests, _ = pve
    boot = proxmox.apply_configuration(COMMANDS, path, env)
    assert boot.exit == 0, boot.stderr
    assert link("", "eno1")["master"] == "vmbr0"
    plug_guests(guests)
    before = proxmox.guest_state(guests)
    assert all(before.values()), before
    assert {before[g]["master"] for g in ("tap100i0", "fwpr101p0", "veth102i0")} == {"vmbr0"}

    # The edit: an address added, a new bridge, a stanza removed.
    assert link("", "vmbr2") is not None
    new_file(path, layout(tmp_path, "192.0.2.20/24", VMBR1))
    task = proxmox.apply_configuration(COMMANDS, path, env)
    assert task.exit == 0 and not errors_of(task), task.stderr
    assert not path.with_name("interfaces.new").exists()
    assert proxmox.version_ok(task.version)
    status = proxmox.sdn_status(COMMANDS, env)
    assert status and {o["status"] for o in status} == {"pass"}, status
    assert {o["name"] for o in status} >= {"vmbr0", "vmbr1"}
    assert addresses("", "vmbr0") == {"192.0.2.10/24", "192.0.2.20/24"}
    assert addresses("", "vmbr1") == {"198.51.100.1/24"}
    assert link("", "vmbr2") is None
    assert proxmox.guest_state(guests) == before

    # A guest on vmbr1, then vmbr1's stanza removed: the bridge stays, with
    # its guest, and the task log says why (Proxmox's ifupdown2 keeps it too).
    guests += proxmox.plug_vm(104, 0, "vmbr1")
    before = proxmox.guest_state(guests)
    new_file(path, layout(tmp_path, "192.0.2.20/24"))
    dry = subprocess.run([str(COMMANDS / "ifreload"), "-a", "-n", "-i",
                          str(path.with_name("interfaces.new"))],
                         capture_output=True, text=True, env=env)
    assert dry.returncode == 0, dry.stderr
    assert "warning: vmbr1: " in dry.stdout and "tap104i0" in dry.stdout, dry.stdout
    assert "link-del vmbr1" not in dry.stdout
    task = proxmox.apply_configuration(COMMANDS, path, env)
    assert task.exit == 0 and not errors_of(task), task.stderr
    assert proxmox.guest_state(guests) == before
    assert link("", "vmbr1") is not None and addresses("", "vmbr1") == set()
    assert [iface for iface, _ in task.log] == ["vmbr1"], (
        "Proxmox's task log should name the kept bridge: " + task.stderr)
    status = proxmox.sdn_status(COMMANDS, env)
    assert {o["status"] for o in status} == {"pass"}, status

    # Once the guest is gone, the next reload removes the bridge netcfg made.
    ip("link", "del", "tap104i0")
    guests.remove("tap104i0")
    task = proxmox.apply_configuration(COMMANDS, path, env)
    assert task.exit == 0, task.stderr
    assert link("", "vmbr1") is None
    assert proxmox.guest_state(guests) == {g: before[g] for g in guests}


def test_netcfgd_repairs_leave_guests_alone(pve, tmp_path):
    path, env, guests, daemons = pve
    boot = proxmox.apply_configuration(COMMANDS, path, env)
    assert boot.exit == 0, boot.stderr
    plug_guests(guests)
    before = proxmox.guest_state(guests)
    daemon = Netcfgd(tmp_path, path, run_dir=tmp_path / "run").start()
    daemons.append(daemon)
    repairs = daemon.counters().get("repairs", 0)

    # Break what netcfg owns: vmbr0's address and its port.
    ip("addr", "del", "192.0.2.10/24", "dev", "vmbr0")
    ip("link", "set", "eno1", "nomaster")
    wait_for(lambda: addresses("", "vmbr0") == {"192.0.2.10/24"}
             and (link("", "eno1") or {}).get("master") == "vmbr0",
             REPAIR_BOUND_S * 5, "netcfgd repairing vmbr0 and its port")
    assert proxmox.guest_state(guests) == before
    # A reload through the daemon (Apply Configuration while netcfgd runs).
    new_file(path, layout(tmp_path, "192.0.2.30/24", VMBR2))
    task = proxmox.apply_configuration(COMMANDS, path, env)
    assert task.exit == 0 and not errors_of(task), task.stderr
    assert addresses("", "vmbr0") == {"192.0.2.10/24", "192.0.2.30/24"}
    assert proxmox.guest_state(guests) == before
    assert daemon.counters().get("repairs", 0) >= repairs
