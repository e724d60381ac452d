"""VLAN-aware bridges as ifupdown2 leaves them (issue 12, docs/compat.md):
every port has an untagged PVID (its own bridge-pvid, the bridge's, else 1)
unless it says `bridge-allow-untagged no`; the bridge itself keeps the
kernel's VLAN 1 and carries the VID of each VLAN device on it.

The plans here are what the kernel tier cannot show (the host kernel has no
VLAN filtering); the VM tier applies the same layouts and sends traffic
(tests/vm/test_vm_kinds.py)."""

from __future__ import annotations

import copy

import pytest

from builders import compiled

from netcfg.model.errors import ConfigInvalid
from netcfg.model.model import Model
from netcfg.plan.diff import diff
from netcfg.plan.ops import LINK_ADD, VLAN_ADD, VLAN_DEL
from netcfg.plan.vlans import NO_VLANS, PortVlans, joined_vlans, port_vlans

# pve-docs, "VLAN 5 for the management IP with a VLAN-aware bridge".
PROXMOX_VLAN_AWARE = """\
    auto lo
    iface lo inet loopback

    iface eno1 inet manual

    auto vmbr0.5
    iface vmbr0.5 inet static
        address 10.10.10.2/24
        gateway 10.10.10.1

    auto vmbr0
    iface vmbr0 inet static
        address 192.168.1.2/24
        bridge-ports eno1
        bridge-stp off
        bridge-fd 0
        bridge-vlan-aware yes
        bridge-vids 2-4094
    """


def vlan_ops(ops):
    """(action, device, params) of the VLAN operations, sorted."""
    return sorted((op.action, op.name, op.params) for op in ops
                  if op.action in (VLAN_ADD, VLAN_DEL))


def test_a_fresh_proxmox_vlan_aware_bridge_keeps_vlan_1_untagged(tmp_path):
    """The host's own address on vmbr0 and untagged traffic on eno1 stay in
    VLAN 1, as under ifupdown2: the bridge is made with the kernel's
    default PVID (no default_pvid 0), eno1 keeps the VLAN 1 it joins with,
    and VLAN 5 goes on the bridge itself for vmbr0.5."""
    model = compiled(tmp_path, PROXMOX_VLAN_AWARE).model
    ops = diff(model, Model())
    add = next(op for op in ops if op.action == LINK_ADD and op.name == "vmbr0")
    assert "default_pvid" not in add.params
    assert vlan_ops(ops) == [
        (VLAN_ADD, "eno1", {"vids": ["2-4094"]}),
        (VLAN_ADD, "vmbr0", {"vids": ["5"], "self": True}),
    ]


def test_the_bridges_own_vlans_follow_its_vlan_devices(tmp_path):
    model = compiled(tmp_path, PROXMOX_VLAN_AWARE).model
    # As the kernel reads back after the apply: VLAN 1 (PVID, untagged) and 5.
    current = copy.deepcopy(model)
    current.bridge_vlans[("", "vmbr0")] = {"bridge-pvid": 1, "bridge-vids": ["5"]}
    assert vlan_ops(diff(model, current)) == []
    # vmbr0.5 removed from the file: VLAN 5 leaves the bridge too.
    without = copy.deepcopy(model)
    del without.interfaces[("", "vmbr0.5")]
    assert vlan_ops(diff(without, current)) == [(VLAN_DEL, "vmbr0", {"vids": ["5"], "self": True})]
    # Someone removed VLAN 1 from the bridge by hand: put back, PVID untagged.
    current.bridge_vlans[("", "vmbr0")] = {"bridge-vids": ["5"]}
    assert vlan_ops(diff(model, current)) == [
        (VLAN_ADD, "vmbr0", {"vids": ["1"], "pvid": 1, "untagged": ["1"], "self": True})]


def test_pvid_defaults_as_ifupdown2_sets_them(tmp_path):
    model = compiled(tmp_path, """\
        iface swp1
        iface swp2
            bridge-pvid 20
        iface swp3
            bridge-allow-untagged no
        iface swp4
            bridge-access 30
        auto br0
        iface br0
            bridge-ports swp1 swp2 swp3 swp4
            bridge-vlan-aware yes
            bridge-vids 10 20
        auto br1
        iface br1
            bridge-ports swp5
            bridge-vlan-aware yes
            bridge-pvid 7
        """).model
    br0, br1 = model.iface("", "br0"), model.iface("", "br1")
    assert port_vlans(model.iface("", "swp1"), br0) == PortVlans(((1, 1), (10, 10), (20, 20)),
                                                                 1, ((1, 1),))
    assert port_vlans(model.iface("", "swp2"), br0) == PortVlans(((10, 10), (20, 20)), 20,
                                                                 ((20, 20),))
    assert port_vlans(model.iface("", "swp3"), br0) == PortVlans(((10, 10), (20, 20)))
    assert port_vlans(model.iface("", "swp4"), br0) == PortVlans(((30, 30),), 30, ((30, 30),))
    assert port_vlans(model.iface("", "swp5"), br1) == PortVlans(((7, 7),), 7, ((7, 7),))
    ops = vlan_ops(diff(model, Model()))
    assert (VLAN_DEL, "swp3", {"vids": ["1"]}) in ops   # joined with VLAN 1, wants none
    assert (VLAN_DEL, "swp5", {"vids": ["1"]}) in ops


def test_a_lowered_bridge_has_no_default_pvid(tmp_path):
    """Per-VLAN bridges lowered to one VLAN-aware bridge: untagged frames were
    not bridged before and are not after (plan/lower/__init__.py, point 2)."""
    from netcfg.plan.lower.lowering import lower

    result = compiled(tmp_path, """\
        iface swp1
        iface swp2
        auto br10
        iface br10
            bridge-ports swp1.10 swp2.10
        auto br20
        iface br20
            bridge-ports swp1.20 swp2.20
        """)
    lowered, _ = lower(result.model)
    vbr = next(o for o in lowered.interfaces.values() if o.kind == "bridge")
    assert joined_vlans(vbr) == NO_VLANS
    ops = diff(lowered, Model())
    add = next(op for op in ops if op.action == LINK_ADD and op.name == vbr.name)
    assert add.params["default_pvid"] == 0
    assert vlan_ops(ops) == [(VLAN_ADD, "swp1", {"vids": ["10", "20"]}),
                             (VLAN_ADD, "swp2", {"vids": ["10", "20"]})]


def test_takeover_of_a_bridge_ifupdown2_made(tmp_path):
    """Read back from a bridge ifupdown2 set up: every port with PVID 1
    untagged, the bridge with VLAN 1 and its VLAN devices' VIDs. Nothing to
    do; a port whose PVID someone changed by hand goes back to 1."""
    model = compiled(tmp_path, PROXMOX_VLAN_AWARE).model
    current = copy.deepcopy(model)
    current.iface("", "eno1").attrs.update({"bridge-vids": ["2-4094"], "bridge-pvid": 1})
    current.iface("", "vmbr0").attrs["bridge-vlan-default-pvid"] = 1
    current.bridge_vlans[("", "vmbr0")] = {"bridge-pvid": 1, "bridge-vids": ["5"]}
    assert vlan_ops(diff(model, current)) == []
    current.iface("", "eno1").attrs.update({"bridge-vids": ["1-4", "6-4094"], "bridge-pvid": 5})
    assert vlan_ops(diff(model, current)) == [
        (VLAN_ADD, "eno1", {"vids": ["1", "5"], "pvid": 1, "untagged": ["1"]})]


def test_the_same_model_twice_is_no_operation(tmp_path):
    model = compiled(tmp_path, PROXMOX_VLAN_AWARE).model
    assert diff(model, copy.deepcopy(model)) == []


def test_the_vlan_a_port_joined_with_goes_after_it_joined(tmp_path):
    """A new port of a bridge with bridge-pvid 7 loses VLAN 1 once the
    master-set gave it: planned with the additions, not before them (the
    port would not exist yet: 'no such device' on a first apply)."""
    from netcfg.plan.ops import JOINING, MASTER_SET
    from netcfg.plan.planner import build_plan

    model = compiled(tmp_path, """\
        auto swp5
        iface swp5
            link-type dummy
        auto br1
        iface br1
            bridge-ports swp5
            bridge-vlan-aware yes
            bridge-pvid 7
        """).model
    plan = build_plan(diff(model, Model()))
    batch_of = {(op.action, op.name, op.subject): n
                for n, batch in enumerate(plan.batches) for op in batch}
    assert batch_of[(VLAN_DEL, "swp5", JOINING)] > batch_of[(MASTER_SET, "swp5", "")]
    assert "- vlan-del swp5 joining vids=1" in plan.to_text()


def test_allow_untagged_on_the_bridge_itself_is_said_to_do_nothing(tmp_path):
    """ifupdown2 reads bridge-allow-untagged on ports only; on the bridge
    stanza it is no default for them (unlike bridge-vids), so check says so."""
    result = compiled(tmp_path, """\
        iface swp1
        auto br0
        iface br0
            bridge-ports swp1
            bridge-vlan-aware yes
            bridge-allow-untagged no
        """)
    said = [d.format() for d in result.warnings]
    assert any(f"{tmp_path}/interfaces:6: warning: br0: bridge-allow-untagged does nothing on "
               f"the bridge itself" in d for d in said), said
    swp1 = result.model.iface("", "swp1")
    assert port_vlans(swp1, result.model.iface("", "br0")).pvid == 1   # as ifupdown2


def test_a_refused_bridge_vlan_says_what_the_kernel_lacks(tmp_path):
    """vlan-add on a device that is no filtering Linux bridge (a kernel built
    without VLAN filtering, or an Open vSwitch port named vmbr0) answers
    EOPNOTSUPP: the message says which, at the config's line."""
    import errno

    from netcfg.apply.refusal import Refused, explain
    from netcfg.kernel.nl import NetlinkError
    from netcfg.netlink.nlmsg import RTM_SETLINK

    model = compiled(tmp_path, PROXMOX_VLAN_AWARE).model
    own = next(op for op in diff(model, Model()) if op.action == VLAN_ADD and op.name == "vmbr0")
    message = explain(Refused(own, NetlinkError(errno.EOPNOTSUPP, RTM_SETLINK)), model)
    assert message.startswith(f"{tmp_path}/interfaces:")
    assert "vlan-add vids=5 self=yes" in message
    assert "no bridge VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING)" in message


def test_a_default_pvid_on_a_bridge_that_filters_no_vlans_is_dropped_and_said(tmp_path):
    result = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports none
            bridge-vlan-default-pvid 0
        """)
    said = [w.format() for w in result.warnings]
    assert said == [f"{tmp_path}/interfaces:4: warning: br0: bridge-vlan-default-pvid does "
                    f"nothing: the bridge is not VLAN-aware (no bridge-vlan-aware yes); remove "
                    f"the line, or make the bridge VLAN-aware"], said
    assert "bridge-vlan-default-pvid" not in result.model.iface("", "br0").attrs


def test_a_range_ending_at_4096_is_taken_to_4094_and_said_at_its_line(tmp_path):
    """pve-network's tests write `bridge-vids 2-4096` for "every VLAN". The
    ids end at 4094 (4095 is reserved; 4096 is their count), so netcfg sets
    2-4094 and warns at the line (ifupdown2 sets none of that range); on the
    bridge and in the per-port form alike."""
    result = compiled(tmp_path, PROXMOX_VLAN_AWARE.replace(
        "bridge-vids 2-4094", "bridge-vids 2-4096").replace(
        "bridge-ports eno1", "bridge-ports eno1 eno2")
        + "    iface eno2 inet manual\n        bridge-vids 10 20-4095\n")
    said = [(w.loc.line, w.attribute, w.message) for w in result.warnings]
    assert [(line, attribute) for line, attribute, _ in said] == [
        (18, "bridge-vids"), (20, "bridge-vids")]
    assert "'2-4096' runs past 4094" in said[0][2] and "netcfg sets 2-4094" in said[0][2]
    assert "'20-4095' runs past 4094" in said[1][2]
    assert result.model.interfaces[("", "vmbr0")].attrs["bridge-vids"] == ["2-4094"]
    assert result.model.interfaces[("", "eno2")].attrs["bridge-vids"] == ["10", "20-4094"]


@pytest.mark.parametrize("vids", ["4095", "4095-4096", "2-4097", "0-100"])
def test_a_range_that_is_not_a_slip_for_4094_is_refused(tmp_path, vids):
    with pytest.raises(ConfigInvalid) as refused:
        compiled(tmp_path, PROXMOX_VLAN_AWARE.replace("bridge-vids 2-4094",
                                                      f"bridge-vids {vids}"))
    assert f"bridge-vids: VLAN id '{vids}' is out of range 1-4094" in str(refused.value)
