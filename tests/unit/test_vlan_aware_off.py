"""A bridge that stops filtering VLANs (`bridge-vlan-aware` dropped from the
file) keeps the live bridge and puts the ports the file declares back to the
VLAN the kernel gives a joining port (the bridge's default PVID,
untagged), as ifupdown2's reload leaves them (issue 21, the reload pair
vlan-aware-off); guests keep what their hypervisor set. plan/vlans.py
wanted_vlans. The VM tier applies it to a real VLAN-aware bridge
(tests/vm/test_vm_vlan_aware_off.py)."""

from __future__ import annotations

from builders import iface, model
from test_guest_ports import bridge, keys, plan_of, read

from netcfg.plan.diff import diff
from netcfg.plan.ops import LINK_DEL, LINK_SET, MASTER_SET, MASTER_UNSET, VLAN_ADD, VLAN_DEL


def vlan_ops(ops):
    return sorted((op.action, op.name, op.params) for op in ops
                  if op.action in (VLAN_ADD, VLAN_DEL))


def aware_kernel(*port_vlans):
    """vmbr0 filtering, with the file's eno1 (its VLANs as read back:
    ``port_vlans``) and a VM's tap on VLAN 20, as qemu-server tags it."""
    eno1 = dict(port_vlans) if port_vlans else {"bridge_vids": ["2-4094"], "bridge_pvid": 1}
    return read(bridge("vmbr0", ["eno1", "tap100i0"], bridge_vlan_aware=True,
                       bridge_vlan_default_pvid=1, address=["192.0.2.10/24"]),
                iface("eno1", "physical", auto=True, **eno1),
                iface("tap100i0", "physical", auto=True, bridge_vids=["20"], bridge_pvid=20))


def not_aware_file():
    return model(bridge("vmbr0", ["eno1"], address=["192.0.2.10/24"]),
                 iface("eno1", "physical", auto=True))


def test_turned_off_the_file_s_port_goes_back_to_the_default_pvid():
    ops, _ = plan_of(not_aware_file(), aware_kernel(), {"": {"vmbr0", "eno1"}})
    assert [(op.action, op.name, op.params) for op in ops if op.action == LINK_SET] == [
        (LINK_SET, "vmbr0", {"bridge-vlan-aware": False})]
    # VLAN 1 (PVID, untagged) is what it joined with: it stays; 2-4094 go.
    assert vlan_ops(ops) == [(VLAN_DEL, "eno1", {"vids": ["2-4094"]})]
    # Live: no re-create, no port released or re-mastered, nothing on the guest.
    assert not keys(ops) & {(LINK_DEL, "vmbr0"), (MASTER_UNSET, "eno1"), (MASTER_SET, "eno1")}
    assert not [op for op in ops if op.name == "tap100i0"], ops


def test_a_port_on_another_pvid_gets_the_bridge_s_default_pvid_back():
    current = aware_kernel(("bridge_vids", ["10-20"]), ("bridge_pvid", 5))
    ops, _ = plan_of(not_aware_file(), current, {"": {"vmbr0", "eno1"}})
    assert vlan_ops(ops) == [
        (VLAN_ADD, "eno1", {"vids": ["1"], "pvid": 1, "untagged": ["1"]}),
        (VLAN_DEL, "eno1", {"vids": ["5", "10-20"]}),
    ]


def test_the_bridge_s_own_default_pvid_is_the_one_put_back():
    current = aware_kernel()
    current.iface("", "vmbr0").attrs["bridge-vlan-default-pvid"] = 7
    current.iface("", "eno1").attrs["bridge-pvid"] = 7
    ops = diff(not_aware_file(), current)
    assert vlan_ops(ops) == [(VLAN_DEL, "eno1", {"vids": ["2-6", "8-4094"]})]


def test_a_guest_in_a_purge_namespace_keeps_its_vlans():
    ops, _ = plan_of(not_aware_file(), aware_kernel(), {"": {"vmbr0", "eno1"}}, purge={""})
    assert not [op for op in ops if op.name == "tap100i0"], ops
    assert vlan_ops(ops) == [(VLAN_DEL, "eno1", {"vids": ["2-4094"]})]


def test_once_off_nothing_more_and_back_on_adds_the_file_s_vids():
    # Read back after the apply: a bridge that does not filter has no port
    # VLANs in the model (kernel/read.py reads them only under a filtering one).
    after = read(bridge("vmbr0", ["eno1"], address=["192.0.2.10/24"]),
                 iface("eno1", "physical", auto=True))
    assert diff(not_aware_file(), after) == []
    on = model(bridge("vmbr0", ["eno1"], address=["192.0.2.10/24"], bridge_vlan_aware=True,
                      bridge_vids=["2-4094"]), iface("eno1", "physical", auto=True))
    # eno1 was put back to PVID 1, so 2-4094 is all that is missing.
    assert vlan_ops(diff(on, after)) == [(VLAN_ADD, "eno1", {"vids": ["2-4094"]})]


def test_a_port_joining_the_bridge_as_it_turns_off_keeps_what_it_joined_with():
    """The kernel gives it the default PVID as it joins the (still kept)
    bridge: already the table a port of a bridge turned off goes back to."""
    current = aware_kernel()
    current.interfaces[("", "eno2")] = iface("eno2", "physical", auto=True)
    desired = model(bridge("vmbr0", ["eno1", "eno2"], address=["192.0.2.10/24"]),
                    iface("eno1", "physical", auto=True), iface("eno2", "physical", auto=True))
    ops = diff(desired, current)
    assert (MASTER_SET, "eno2") in keys(ops)
    assert vlan_ops(ops) == [(VLAN_DEL, "eno1", {"vids": ["2-4094"]})]
