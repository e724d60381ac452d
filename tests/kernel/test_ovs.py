"""Open vSwitch bridges and ports applied through OVSDB, against the real daemons.

Debian's ovsdb-server and ovs-vswitchd run inside the sandbox
(tests/ovs_env.py: unpacked by `make ovs-deps`, never installed, their files
in a temporary directory). The host kernel may lack the
openvswitch module, so the bridges use the userspace datapath
(datapath_type=netdev): ovs-vswitchd makes tap devices for the bridge and
its internal ports. What netcfg wrote is read back with ovs-vsctl, a peer
that shares no code with netcfg, and the devices with iproute2.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
from builders import compiled
from ovs_env import needs_ovs, proxmox_layout, run_openvswitch

from netcfg.apply.execute import ApplyFailed, apply
from netcfg.kernel.ovsdb import OvsdbUnavailable

pytestmark = needs_ovs
DEVICES = ("eth0", "eth0p", "z_myzone", "vmbr0", "sv_myzone", "tap100i0", "ovs-netdev")


@pytest.fixture
def openvswitch(tmp_path, monkeypatch):
    with run_openvswitch(tmp_path / "ovs", monkeypatch, DEVICES) as vsctl:
        yield vsctl


def ip_json(*args: str):
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def proxmox(tag: int = 10, qinq: str | None = "802.1q") -> str:
    """Proxmox's layout on the userspace datapath."""
    return proxmox_layout(tag, qinq, bridge_options="datapath_type=netdev")


def test_proxmox_layout_applied_read_back_changed_and_removed(openvswitch, session, tmp_path):
    vsctl = openvswitch
    subprocess.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"], check=True)
    first = apply(compiled(tmp_path, proxmox()).model, session)
    assert first.verified
    ovs_ops = [op for op in first.plan.operations if op.action.startswith("ovs-")]
    assert sorted((op.action, op.name) for op in ovs_ops) == [
        ("ovs-add", "eth0"), ("ovs-add", "sv_myzone"), ("ovs-add", "vmbr0")]
    # One transaction: the OVS operations share the first batch.
    assert all(op in first.plan.batches[0] for op in ovs_ops)

    assert vsctl("br-exists", "vmbr0") == ""
    assert sorted(vsctl("list-ports", "vmbr0").split()) == ["eth0", "sv_myzone"]
    assert vsctl("get", "Port", "sv_myzone", "tag") == "10"
    assert vsctl("get", "Port", "sv_myzone", "vlan_mode") == "dot1q-tunnel"
    assert vsctl("get", "Port", "sv_myzone", "other_config:qinq-ethtype") == '"802.1q"'
    assert vsctl("get", "Interface", "sv_myzone", "type") == "internal"
    assert vsctl("get", "Bridge", "vmbr0", "datapath_type") == "netdev"
    assert vsctl("get", "Bridge", "vmbr0", "external_ids:netcfg") == '"1"'
    # The Linux side: ovs-vswitchd's devices got the address, the bridge port, up.
    vmbr0 = ip_json("addr", "show", "dev", "vmbr0")[0]
    assert "192.0.2.10" in [a["local"] for a in vmbr0["addr_info"]]
    assert "UP" in vmbr0["flags"]
    assert ip_json("link", "show", "dev", "sv_myzone")[0]["master"] == "z_myzone"

    second = apply(compiled(tmp_path, proxmox()).model, session)
    assert second.verified and second.requests == 0 and len(second.plan) == 0

    # Another program's port (qemu-server's tap of a VM) is left alone.
    vsctl("add-port", "vmbr0", "tap100i0", "--", "set", "Interface", "tap100i0",
          "type=internal")
    changed = apply(compiled(tmp_path, proxmox(20)).model, session)
    assert [op.describe() for op in changed.plan.operations] == [
        "~ ovs-set sv_myzone ovs-options=other_config:qinq-ethtype=802.1q tag=20 "
        "vlan_mode=dot1q-tunnel ovs-type=OVSIntPort"]
    assert vsctl("get", "Port", "sv_myzone", "tag") == "20"
    assert vsctl("get", "Port", "sv_myzone", "vlan_mode") == "dot1q-tunnel"

    # Options left out are cleared (ifupdown2 clears the port's columns too).
    apply(compiled(tmp_path, proxmox(30, qinq=None)).model, session)
    assert vsctl("get", "Port", "sv_myzone", "tag") == "30"
    assert vsctl("get", "Port", "sv_myzone", "vlan_mode") == "[]"
    assert vsctl("get", "Port", "sv_myzone", "other_config") == "{}"

    layout = proxmox()
    removed = (layout[:layout.index("auto sv_myzone")] + layout[layout.index("auto z_myzone"):]
               ).replace("ovs_ports eth0 sv_myzone", "ovs_ports eth0").replace(
                   "bridge-ports sv_myzone", "bridge-ports none")
    gone = apply(compiled(tmp_path, removed).model, session)
    assert gone.verified
    assert [op.name for op in gone.plan.operations if op.action == "ovs-del"] == ["sv_myzone"]
    assert sorted(vsctl("list-ports", "vmbr0").split()) == ["eth0", "tap100i0"]
    assert not ip_json("link", "show") or "sv_myzone" not in [
        link["ifname"] for link in ip_json("link", "show")]
    assert apply(compiled(tmp_path, removed).model, session).requests == 0


def test_takeover_of_a_bridge_ifupdown2_made_sends_nothing(openvswitch, session, tmp_path):
    vsctl = openvswitch
    subprocess.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"], check=True)
    # What ifupdown2's openvswitch addons run for this file, through ovs-vsctl.
    vsctl("--may-exist", "add-br", "vmbr0", "--", "set", "bridge", "vmbr0",
          "datapath_type=netdev")
    vsctl("--may-exist", "add-port", "vmbr0", "eth0")
    vsctl("--may-exist", "add-port", "vmbr0", "sv_myzone", "--", "set", "Port", "sv_myzone",
          "vlan_mode=dot1q-tunnel", "tag=10", "other_config:qinq-ethtype=802.1q", "--",
          "set", "Interface", "sv_myzone", "type=internal")
    subprocess.run(["ip", "link", "add", "z_myzone", "type", "bridge", "stp_state", "0"],
                   check=True)
    subprocess.run(["ip", "link", "set", "sv_myzone", "master", "z_myzone"], check=True)
    for dev in ("eth0", "vmbr0", "sv_myzone", "z_myzone"):
        subprocess.run(["ip", "link", "set", dev, "up"], check=True)
    subprocess.run(["ip", "addr", "add", "192.0.2.10/24", "dev", "vmbr0"], check=True)
    uuid = vsctl("get", "Bridge", "vmbr0", "_uuid")

    result = apply(compiled(tmp_path, proxmox()).model, session)
    # Without a flap: no request at all, OVS's or netlink's.
    assert [op.describe() for op in result.plan.operations] == []
    assert result.verified and result.requests == 0
    assert vsctl("get", "Bridge", "vmbr0", "_uuid") == uuid
    # netcfg did not make it: removing it from the config leaves it to whoever did.
    assert vsctl("get", "Bridge", "vmbr0", "external_ids") == "{}"


def test_without_ovsdb_server_apply_names_the_daemon_and_changes_nothing(session, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("OVS_RUNDIR", str(tmp_path / "no-ovs"))
    before = ip_json("link", "show")
    with pytest.raises(OvsdbUnavailable) as failure:
        apply(compiled(tmp_path, proxmox()).model, session)
    assert "openvswitch-switch" in str(failure.value)
    assert "nothing was changed" in str(failure.value)
    assert ip_json("link", "show") == before


def test_a_port_whose_device_is_missing_fails_at_apply_and_is_reverted(openvswitch, session,
                                                                       tmp_path):
    """check cannot know which NICs a host has: ovs-vswitchd's Interface.error
    fails the apply, and the revert takes the rows back out."""
    vsctl = openvswitch
    subprocess.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"],
                   check=True)
    apply(compiled(tmp_path, proxmox()).model, session)
    missing = proxmox().replace(
        "ovs_ports eth0 sv_myzone", "ovs_ports eth0 sv_myzone eth9") + textwrap.dedent("""
        auto eth9
        iface eth9 inet manual
            ovs_type OVSPort
            ovs_bridge vmbr0
        """)
    with pytest.raises(ApplyFailed) as failure:
        apply(compiled(tmp_path, missing).model, session)
    # Located at the stanza of the port, with ovs-vswitchd's reason.
    assert ("interfaces:25: error: eth9: ovs-add eth9 ovs-type=OVSPort ovs-bridge=vmbr0: "
            "ovs-vswitchd: could not open network device eth9") in str(failure.value)
    assert "previous state was restored" in str(failure.value)
    assert sorted(vsctl("list-ports", "vmbr0").split()) == ["eth0", "sv_myzone"]


def test_ovs_mtu_is_the_interfaces_mtu_request(openvswitch, session, tmp_path):
    vsctl = openvswitch
    subprocess.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"],
                   check=True)
    config = proxmox().replace(
        "ovs_options datapath_type=netdev", "ovs_options datapath_type=netdev\n    ovs_mtu 1600"
    ).replace("ovs_bridge vmbr0\n    ovs_options vlan",
              "ovs_bridge vmbr0\n    ovs_mtu 1400\n    ovs_options vlan")
    assert config.count("ovs_mtu") == 2
    first = apply(compiled(tmp_path, config).model, session)
    assert first.verified
    assert vsctl("get", "Interface", "vmbr0", "mtu_request") == "1600"
    assert vsctl("get", "Interface", "sv_myzone", "mtu_request") == "1400"
    # ovs-vswitchd set the devices' MTU (iproute2 reads it back).
    assert ip_json("link", "show", "dev", "sv_myzone")[0]["mtu"] == 1400
    assert ip_json("link", "show", "dev", "vmbr0")[0]["mtu"] == 1600
    assert apply(compiled(tmp_path, config).model, session).requests == 0
    # Left out: cleared, as ifupdown2 clears mtu_request before setting it.
    cleared = apply(compiled(tmp_path, config.replace("    ovs_mtu 1400\n", "")).model, session)
    assert [op.describe() for op in cleared.plan.operations] == [
        "~ ovs-set sv_myzone ovs-mtu= ovs-type=OVSIntPort"]
    assert vsctl("get", "Interface", "sv_myzone", "mtu_request") == "[]"
