"""Proxmox VE's guests keep their bridge and exactly their VLANs (issue 21),
on the layouts the host kernel cannot make: a VLAN-aware vmbr0 (`bridge-vids
2-4094`) whose guests get `bridge vlan del vid 1-4094` then their tag as PVID
untagged, and a vmbr1 that does not filter, where a tagged guest goes on
vmbr1v5 over eno2.5 (pve-common's activate_bridge_vlan). Through Apply
Configuration (bridge-vids changed, an address added), vmbr1 made VLAN-aware
(issue 24 H3: netcfg re-created the bridge and every guest lost its master),
and netcfgd's repair. Read back with `ip -j` and `bridge -j vlan show`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import proxmox
import pytest
from test_vm_kinds import VM_TIER
from vm_helpers import netcfgd

from kernel_env import remove_what_netcfg_made

pytestmark = VM_TIER
COMMANDS = Path(sys.executable).parent

LAYOUT = textwrap.dedent("""\
    auto lo
    iface lo inet loopback

    iface eno1 inet manual
    iface eno2 inet manual

    auto vmbr0
    iface vmbr0 inet static
        address 192.0.2.10/24{more}
        bridge-ports eno1
        bridge-stp off
        bridge-fd 0
        bridge-vlan-aware yes
        bridge-vids {vids}

    auto vmbr1
    iface vmbr1 inet manual
        bridge-ports eno2
        bridge-stp off
        bridge-fd 0{vmbr1}
    """)


def layout(vids: str = "2-4094", more: str = "", vmbr1: str = "") -> str:
    return LAYOUT.format(vids=vids, more=more and f"\n    address {more}",
                         vmbr1=vmbr1 and f"\n    {vmbr1}")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def pve(tmp_path, netns_dir):
    for nic in ("eno1", "eno2"):
        ip("link", "add", nic, "type", "veth", "peer", "name", f"{nic}-peer")
        ip("link", "set", f"{nic}-peer", "up")
    for sub in ("state", "network", "run"):
        (tmp_path / sub).mkdir()
    path = tmp_path / "interfaces"
    path.write_text(layout())
    env = {**os.environ, "NETCFG_INTERFACES": str(path),
           "NETCFG_IFUPDOWN_STATE_DIR": str(tmp_path / "state"),
           "NETCFG_NETWORK_DIR": str(tmp_path / "network"),
           "NETCFG_RUN_DIR": str(tmp_path / "run")}
    guests: list[str] = []
    yield path, env, guests
    for name in [*guests, "eno1", "eno2"]:
        subprocess.run(["ip", "link", "del", name], capture_output=True)
    remove_what_netcfg_made(netns_dir)


def reload(path: Path, env: dict, text: str) -> None:
    path.with_name("interfaces.new").write_text(text)
    task = proxmox.apply_configuration(COMMANDS, path, env)
    assert task.exit == 0 and not [ln for _, ln in task.log if "error:" in ln], task.stderr
    status = proxmox.sdn_status(COMMANDS, env)
    assert status and {o["status"] for o in status} == {"pass"}, status


def test_guests_keep_master_and_vlans_on_both_layouts(pve, tmp_path):
    path, env, guests = pve
    reload(path, env, layout())
    guests += proxmox.plug_vm(100, 0, "vmbr0", tag=10)
    guests += proxmox.plug_vm(101, 0, "vmbr0", tag=20, firewall=True, trunks=())
    guests += proxmox.plug_vm(102, 0, "vmbr1", tag=5)        # vmbr1v5 over eno2.5
    guests += proxmox.plug_vm(103, 0, "vmbr1")               # untagged, straight on vmbr1
    guests.append("eno2.5")
    before = proxmox.guest_state(guests)
    assert before["tap100i0"]["vlans"] == {10: ["Egress Untagged", "PVID"]}, before
    assert before["fwpr101p0"]["vlans"] == {20: ["Egress Untagged", "PVID"]}, before
    assert before["tap102i0"]["master"] == "vmbr1v5" and before["eno2.5"]["master"] == "vmbr1v5"

    # Apply Configuration: bridge-vids changed, an address added.
    reload(path, env, layout("2-100", "192.0.2.20/24"))
    assert proxmox.guest_state(guests) == before

    # vmbr1 made VLAN-aware (Proxmox's checkbox): switched live, not re-created.
    vmbr1 = proxmox.guest_state(["vmbr1"])["vmbr1"]
    reload(path, env, layout("2-100", "192.0.2.20/24", "bridge-vlan-aware yes"))
    assert proxmox.guest_state(["vmbr1"])["vmbr1"]["ifindex"] == vmbr1["ifindex"]
    assert proxmox.vlan_aware("vmbr1")
    after = proxmox.guest_state(guests)
    assert {g: (s["ifindex"], s["master"], s["up"]) for g, s in after.items()} == \
        {g: (s["ifindex"], s["master"], s["up"]) for g, s in before.items()}
    assert {g: after[g]["vlans"] for g in guests if g != "tap103i0"} == \
        {g: before[g]["vlans"] for g in guests if g != "tap103i0"}
    assert after["tap103i0"]["vlans"] == {1: ["Egress Untagged", "PVID"]}   # as it joined
    before = after

    # netcfgd repairs what netcfg owns, nothing else.
    with netcfgd(tmp_path, path) as daemon:
        eno1 = proxmox.guest_state(["eno1"])["eno1"]
        ip("addr", "del", "192.0.2.20/24", "dev", "vmbr0")
        ip("link", "set", "eno1", "nomaster")
        daemon.repairs("vmbr0's address and its port eno1", lambda: (
            "192.0.2.20/24" in subprocess.run(["ip", "-br", "addr", "show", "vmbr0"],
                                              capture_output=True, text=True).stdout
            and proxmox.guest_state(["eno1"])["eno1"] == eno1))
        assert proxmox.guest_state(guests) == before
