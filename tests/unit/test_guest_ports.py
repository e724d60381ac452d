"""Guests are never disturbed, in the pure planner: a hypervisor's run-time
devices (Proxmox's taps, veths, firewall plumbing, vmbrXvY and PORT.TAG) and
every port netcfg does not manage keep their bridge through a removed or
changed bridge stanza, a purge namespace, and a VLAN-aware toggle; netcfg's
own ports are still released. plan/scope.py, plan/diff.py, plan/vlans.py."""

from __future__ import annotations

from builders import iface, model

from netcfg.model.model import Model
from netcfg.plan.diff import diff
from netcfg.plan.ops import (ADDR_DEL, LINK_DEL, LINK_SET, MASTER_SET, MASTER_UNSET, VLAN_ADD,
                             VLAN_DEL)
from netcfg.plan.scope import GUEST_NAMES, guest_devices, managed_view, purge_target


def read(*objects, masters=None) -> Model:
    """A model as kernel/read.py gives it: each bridge lists its ports."""
    m = model(*objects)
    for key, obj in m.interfaces.items():
        for port in obj.attrs.get("bridge-ports", ()):
            m.masters[(key[0], port)] = key
    m.masters.update(masters or {})
    return m


def bridge(name, ports, **attrs):
    return iface(name, "bridge", auto=True, bridge_ports=list(ports), **attrs)


def kernel():
    """vmbr0 (the file's) with eno1 and a VM's tap; vmbr1 (netcfg made it,
    since dropped from the file) with eno2 (netcfg's) and a container's veth."""
    return read(bridge("vmbr0", ["eno1", "tap100i0"], address=["192.0.2.10/24"]),
                bridge("vmbr1", ["eno2", "veth101i0"], address=["198.51.100.1/24"]),
                iface("eno1", "physical", auto=True), iface("eno2", "physical", auto=True),
                iface("tap100i0", "physical", auto=True), iface("veth101i0", "veth", auto=True))


def plan_of(desired: Model, current: Model, managed, purge=()):
    """What execute.apply compares and asks, without a kernel: the managed
    view, the purge/guard target, the diff."""
    view = managed_view(desired, current, managed, [""], purge)
    target, notes = purge_target(desired, view, purge, {})
    return diff(target, view), notes


def keys(ops):
    return {(op.action, op.name) for op in ops}


def test_guest_names_are_proxmox_run_time_devices():
    for name in ("tap100i0", "veth101i3", "fwbr100i0", "fwln100i0", "fwpr100p0", "fwln100o0",
                 "vmbr0v5", "vmbr12v4094"):
        assert GUEST_NAMES.fullmatch(name), name
    for name in ("tap0", "veth0", "vmbr0", "eno1", "eno1.5", "fwbr", "bond0"):
        assert not GUEST_NAMES.fullmatch(name), name


def test_a_dropped_bridge_with_a_guest_is_kept_and_said():
    desired = model(iface("eno2", "physical", auto=True),
                    bridge("vmbr0", ["eno1"], address=["192.0.2.10/24"]),
                    iface("eno1", "physical", auto=True))
    ops, notes = plan_of(desired, kernel(), {"": {"vmbr0", "vmbr1"}})
    # vmbr1 is not deleted; netcfg's own port is released, its address goes.
    assert (LINK_DEL, "vmbr1") not in keys(ops)
    assert (MASTER_UNSET, "eno2") in keys(ops)
    assert (ADDR_DEL, "vmbr1") in keys(ops)
    # Nothing is done to a guest.
    assert not [op for op in ops if op.name in ("tap100i0", "veth101i0")]
    assert any(n.startswith("warning: vmbr1: ") and "veth101i0" in n for n in notes), notes


def test_a_dropped_bridge_without_foreign_ports_still_goes():
    current = read(bridge("vmbr1", ["eno2"]), iface("eno2", "physical", auto=True))
    desired = model(iface("eno2", "physical", auto=True))
    ops, notes = plan_of(desired, current, {"": {"vmbr1"}})
    assert (LINK_DEL, "vmbr1") in keys(ops) and not notes


def test_guests_in_a_purge_namespace_are_not_purged_nor_released():
    """H4: a tap in a purge namespace was released from its bridge (and a veth
    deleted); verification then failed on every apply."""
    ns = "t"
    current = read(
        iface("br0", "bridge", ns, auto=True, bridge_ports=["p1", "tap100i0", "veth101i0", "stray"]),
        iface("p1", "physical", ns, auto=True), iface("tap100i0", "physical", ns, auto=True),
        iface("veth101i0", "veth", ns, auto=True),
        # Its other end is in the purge namespace too (issue 24: a veth whose
        # other end is outside a purge, or unknown, is not deleted).
        iface("stray", "veth", ns, auto=True, veth_peer_name="stray-b"),
        iface("stray-b", "veth", ns, auto=True, veth_peer_name="stray"))
    desired = model(iface("br0", "bridge", ns, auto=True, bridge_ports=["p1"]),
                    iface("p1", "physical", ns, auto=True))
    view = managed_view(desired, current, {}, ["", ns], {ns})
    assert (ns, "tap100i0") not in view.interfaces and (ns, "veth101i0") not in view.interfaces
    target, _ = purge_target(desired, view, {ns}, {})
    ops = diff(target, view)
    assert not [op for op in ops if op.name in ("tap100i0", "veth101i0")], ops
    # Purge still removes what is neither declared nor a guest.
    assert (LINK_DEL, "stray") in keys(ops)


def test_what_sits_on_a_guest_bridge_and_condoned_ports_are_guests():
    ns = "t"
    current = read(iface("vmbr1v5", "bridge", ns, auto=True, bridge_ports=["eth1.5"]),
                   iface("eth1.5", "vlan", ns, auto=True),
                   iface("br0", "bridge", ns, auto=True, bridge_ports=["vm-a", "other"]),
                   iface("vm-a", "veth", ns, auto=True), iface("other", "veth", ns, auto=True))
    desired = model(iface("br0", "bridge", ns, bridge_ports=[],
                          bridge_ports_condone_regex="^vm-"))
    assert guest_devices(desired, current, {}, {ns}) == {
        (ns, "vmbr1v5"), (ns, "eth1.5"), (ns, "vm-a")}
    # A device the file declares or netcfg made is never a guest.
    assert (ns, "vm-a") not in guest_devices(desired, current, {ns: {"vm-a"}}, {ns})


def test_a_change_that_needs_a_re_create_is_not_made_under_guests():
    current = kernel()
    desired = model(bridge("vmbr0", ["eno1"], address=["192.0.2.10/24"],
                           bridge_vlan_aware=True, bridge_vlan_default_pvid=7),
                    iface("eno1", "physical", auto=True))
    current.interfaces[("", "vmbr0")].attrs.update({"bridge-vlan-aware": True,
                                                    "bridge-vlan-default-pvid": 1})
    ops, notes = plan_of(desired, current, {"": {"vmbr0"}})
    assert (LINK_DEL, "vmbr0") not in keys(ops)
    assert any("bridge-vlan-default-pvid" in n and "tap100i0" in n for n in notes), notes


def test_vlan_aware_toggle_is_a_link_set_not_a_re_create():
    """H3: bridge-vlan-aware yes on a live bridge re-created it and dropped
    every guest; the kernel switches IFLA_BR_VLAN_FILTERING in place."""
    current = read(bridge("vmbr0", ["eno1", "tap100i0"], bridge_vlan_aware=False),
                   iface("eno1", "physical", auto=True))
    desired = model(bridge("vmbr0", ["eno1"], bridge_vlan_aware=True, bridge_vids=["2-4094"]),
                    iface("eno1", "physical", auto=True))
    ops = diff(desired, current)
    assert (LINK_DEL, "vmbr0") not in keys(ops)
    assert [op.params for op in ops if op.action == LINK_SET and op.name == "vmbr0"] == [
        {"bridge-vlan-aware": True}]
    # eno1 holds the PVID 1 it got when it joined; it gets 2-4094 on top.
    assert [op.params for op in ops if op.name == "eno1"] == [{"vids": ["2-4094"]}]
    # And back: filtering off, live; eno1 goes back to the PVID 1 it joined with.
    current = read(bridge("vmbr0", ["eno1"], bridge_vlan_aware=True),
                   iface("eno1", "physical", auto=True, bridge_vids=["2-4094"], bridge_pvid=1))
    desired = model(bridge("vmbr0", ["eno1"]), iface("eno1", "physical", auto=True))
    ops = diff(desired, current)
    assert [(op.action, op.name, op.params) for op in ops] == [
        (LINK_SET, "vmbr0", {"bridge-vlan-aware": False}), (VLAN_DEL, "eno1", {"vids": ["2-4094"]})]
    assert not [op for op in ops if op.action in (VLAN_ADD, MASTER_SET, LINK_DEL)]
