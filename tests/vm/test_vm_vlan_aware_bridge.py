"""A VLAN-aware bridge carries what ifupdown2's carries (issue 12): untagged
frames in VLAN 1 to the bridge's own address and between ports, and a VLAN
device on the bridge (Proxmox's management VLAN, pve-docs "VLAN 5 for the
management IP with a VLAN-aware bridge") reached through the bridge's own
VLAN. Proved by traffic from a neighbour in its own namespace; the host
kernel has no VLAN filtering, so this is the VM tier's.

Before the fix (docs/compat.md) netcfg made the bridge with default_pvid 0
and no self VLANs, and both pings below failed while `query --check` said ok.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

from test_vm_kinds import VM_TIER, reachable

from netcfg.apply.execute import apply
from netcfg.compile.pipeline import ConfigSource, compile_config

# The host: vmbr0 on eno1 (a veth whose other end is the neighbour's eth0),
# as a Proxmox installer writes it, with the management VLAN added, and eno2
# an access port of VLAN 5 (a guest's, untagged).
HOST = textwrap.dedent("""\
    auto eno1
    iface eno1 inet manual
        link-type veth
        veth-peer-name eth0
        veth-peer-netns nb

    auto eno2
    iface eno2 inet manual
        link-type veth
        veth-peer-name eth0
        veth-peer-netns guest
        bridge-access 5

    auto vmbr0
    iface vmbr0 inet static
        address 10.10.1.2/24
        bridge-ports eno1 eno2
        bridge-stp off
        bridge-fd 0
        bridge-vlan-aware yes
        bridge-vids 2-4094
    % if management:

    auto vmbr0.5
    iface vmbr0.5 inet static
        address 10.10.5.2/24
    % endif

    auto eth0
    iface eth0
        netns nb
        address 10.10.1.1/24
    auto eth0.5
    iface eth0.5
        netns nb
        address 10.10.5.1/24

    auto eth0
    iface eth0
        netns guest
        address 10.10.5.3/24
        address 10.10.1.3/24
    """)


def vlan_table(device: str) -> dict[int, str]:
    """`bridge -j vlan show dev DEVICE` as {VLAN: its flags} (iproute2 6.1
    lists each VLAN; a later one may give ranges, vlan to vlanEnd)."""
    out = subprocess.run(["bridge", "-j", "vlan", "show", "dev", device],
                         capture_output=True, text=True, check=True).stdout
    rows = {}
    for entry in json.loads(out) if out.strip() else []:
        for vlan in entry.get("vlans", []):
            for vid in range(vlan["vlan"], vlan.get("vlanEnd", vlan["vlan"]) + 1):
                rows[vid] = " ".join(vlan.get("flags", []))
    return rows


def compiled(tmp_path, management: bool):
    path = tmp_path / "host.tmpl"
    path.write_text(HOST.replace("% if management:", f"% if {management}:"))
    return compile_config(ConfigSource(path=str(path))).model


@VM_TIER
def test_untagged_and_management_vlan_reach_the_host(session, tmp_path):
    model = compiled(tmp_path, management=True)
    assert apply(model, session).verified
    untagged = "PVID Egress Untagged"
    assert vlan_table("vmbr0") == {1: untagged, 5: ""}
    assert vlan_table("eno1") == {1: untagged, **{vid: "" for vid in range(2, 4095)}}
    assert vlan_table("eno2") == {5: untagged}   # VLAN 1 it joined with taken away
    assert reachable("nb", "10.10.1.2"), "untagged (VLAN 1) to the bridge's own address"
    assert reachable("nb", "10.10.5.2"), "VLAN 5 to vmbr0.5, through the bridge itself"
    assert reachable("guest", "10.10.5.2"), "an access port of VLAN 5, untagged, to vmbr0.5"
    assert reachable("guest", "10.10.5.1"), "the access port to the tagged neighbour"
    # The guest has an address in VLAN 1's subnet too: only L2 keeps it out.
    assert not reachable("guest", "10.10.1.2", tries=2), "VLAN 5 must not reach VLAN 1"
    assert apply(model, session).requests == 0   # read back as applied, self VLANs too

    # The management VLAN removed from the file: VLAN 5 leaves the bridge too.
    without = compiled(tmp_path, management=False)
    assert apply(without, session).verified
    assert vlan_table("vmbr0") == {1: "PVID Egress Untagged"}
    assert reachable("nb", "10.10.1.2")
