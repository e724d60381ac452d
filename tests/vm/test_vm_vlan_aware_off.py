"""A VLAN-aware bridge turned not VLAN-aware, live (issue 21, the reload pair
vlan-aware-off): the file's port goes back to the kernel's default VLAN
table (PVID 1, untagged), as ifupdown2's reload leaves it, without the
bridge made again, the port released, or the guest's VLANs touched; and
turned back on, the port carries the file's VLANs again. Read back from the
kernel (`bridge -j vlan show`, `ip -j -d link`) and proved by traffic.
The host kernel has no VLAN filtering, so this is the VM tier's.

Before the fix (plan/vlans.py wanted_vlans) eno1 kept 2-4094 after the
bridge stopped filtering, and the first assertion on its table failed.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

from test_vm_kinds import VM_TIER, reachable
from test_vm_vlan_aware_bridge import vlan_table

from netcfg.apply.execute import apply
from netcfg.compile.pipeline import ConfigSource, compile_config

# Proxmox's layout: vmbr0 on eno1 (a veth whose other end is a neighbour's
# eth0), VLAN-aware with 2-4094 when AWARE is on.
HOST = textwrap.dedent("""\
    auto eno1
    iface eno1 inet manual
        link-type veth
        veth-peer-name eth0
        veth-peer-netns nb

    auto vmbr0
    iface vmbr0 inet static
        address 10.10.1.2/24
        bridge-ports eno1
        bridge-stp off
        bridge-fd 0
    % if AWARE:
        bridge-vlan-aware yes
        bridge-vids 2-4094
    % endif

    auto eth0
    iface eth0
        netns nb
        address 10.10.1.1/24
    """)
UNTAGGED = "PVID Egress Untagged"
# A container's NIC as pve-container plugs it on a VLAN-aware vmbr0 with tag 20
# (the VM has no tun, so a veth stands for qemu-server's tap too).
GUEST = "veth101i0"
PLUG = [["ip", "link", "add", GUEST, "type", "veth", "peer", "name", GUEST + "p"],
        ["ip", "link", "set", GUEST, "master", "vmbr0", "up"],
        ["ip", "link", "set", GUEST + "p", "up"],
        ["bridge", "vlan", "del", "dev", GUEST, "vid", "1-4094"],
        ["bridge", "vlan", "add", "dev", GUEST, "vid", "20", "pvid", "untagged"]]


def compiled(tmp_path, aware: bool):
    path = tmp_path / "host.tmpl"
    path.write_text(HOST.replace("% if AWARE:", f"% if {aware}:"))
    return compile_config(ConfigSource(path=str(path))).model


def link(name: str) -> dict:
    out = subprocess.run(["ip", "-d", "-j", "link", "show", "dev", name],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]


def filtering(bridge: str) -> int:
    return link(bridge)["linkinfo"]["info_data"]["vlan_filtering"]


@VM_TIER
def test_vlan_filtering_off_puts_the_files_ports_back_and_leaves_guests(session, tmp_path):
    try:
        toggled_with_a_guest(session, tmp_path)
    finally:   # the guest is the test's, not netcfg's: nothing else removes it
        subprocess.run(["ip", "link", "del", GUEST], capture_output=True)


def toggled_with_a_guest(session, tmp_path):
    assert apply(compiled(tmp_path, aware=True), session).verified
    assert vlan_table("eno1") == {1: UNTAGGED, **{vid: "" for vid in range(2, 4095)}}
    for argv in PLUG:
        subprocess.run(argv, check=True)
    assert vlan_table(GUEST) == {20: UNTAGGED}
    before = {name: link(name)["ifindex"] for name in ("vmbr0", "eno1", GUEST)}

    off = compiled(tmp_path, aware=False)
    result = apply(off, session)
    assert result.verified
    assert filtering("vmbr0") == 0
    # The fix: VLAN 1 as the kernel gives a joining port, 2-4094 gone.
    assert vlan_table("eno1") == {1: UNTAGGED}
    # Live: the same devices, eno1 and the guest still on vmbr0 and up.
    assert {name: link(name)["ifindex"] for name in before} == before
    for name in ("eno1", GUEST):
        assert link(name).get("master") == "vmbr0", name
        assert "UP" in link(name)["flags"], name
    assert vlan_table(GUEST) == {20: UNTAGGED}, "the guest keeps what Proxmox gave it"
    assert reachable("nb", "10.10.1.2"), "untagged to the bridge's own address"
    assert apply(off, session).requests == 0   # nothing left to do once off

    # And on again: the file's VLANs are back on eno1, the guest as it was.
    assert apply(compiled(tmp_path, aware=True), session).verified
    assert filtering("vmbr0") == 1
    assert vlan_table("eno1") == {1: UNTAGGED, **{vid: "" for vid in range(2, 4095)}}
    assert vlan_table(GUEST) == {20: UNTAGGED}
    assert link("vmbr0")["ifindex"] == before["vmbr0"]
    assert reachable("nb", "10.10.1.2")
