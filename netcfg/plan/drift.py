"""What `netcfg query --check` says about each difference: where the config
asks for it (file:line of the attribute) and what the kernel has instead.

Pure: an Operation that would repair the drift, and the compiled model.
"""

from __future__ import annotations

from netcfg.model.location import NOWHERE, SourceLocation
from netcfg.model.model import ConfigObject, Model
from netcfg.plan.diff import LOWER_PARAM
from netcfg.plan.ops import FDB_ADD, FDB_DEL, OVS_ADD, OVS_DEL, OVS_SET
from netcfg.plan.ops import (ADDR_ADD, ADDR_DEL, LINK_ADD, LINK_DEL, LINK_DOWN, LINK_SET, LINK_UP,
                             MASTER_SET, MASTER_UNSET, NETNS_ADD, NETNS_DEL, ROUTE_ADD, ROUTE_DEL,
                             VLAN_ADD, VLAN_DEL, VLAN_TUNNEL_ADD, VLAN_TUNNEL_DEL, VNI_ADD, VNI_DEL,
                             Operation)
from netcfg.plan.vrrp import HWADDRESS, RAW_DEVICE, replaced_by

# The attribute that asked for what an operation repairs, and the sentence
# saying what differs ({label}, {subject} and {params} filled in).
_EXPLAIN: dict[str, tuple[str | None, str]] = {
    NETNS_ADD: (None, "namespace {name} is configured but does not exist"),
    NETNS_DEL: (None, "namespace {name} was made by netcfg but is no longer configured"),
    LINK_ADD: (None, "{label} is configured but does not exist"),
    LINK_DEL: (None, "{label} was made by netcfg but is not configured (or must be re-created)"),
    LINK_SET: ("*", "{label}: configured {params}, the kernel has other values"),
    LINK_UP: (None, "{label} is down; the config brings it up (auto)"),
    LINK_DOWN: ("link-down", "{label} is up; the config keeps it down"),
    MASTER_SET: ("vrf", "{label} is not enslaved to {master}, as configured"),
    MASTER_UNSET: (None, "{label} is enslaved but the config gives it no master"),
    ADDR_ADD: ("address", "{label}: address {subject} is configured but not on the device"),
    ADDR_DEL: ("address", "{label}: address {subject} is on the device but not configured"),
    ROUTE_ADD: ("route", "{label}: route {subject} is configured but not in the kernel"),
    ROUTE_DEL: ("route", "{label}: route {subject} is in the kernel but not configured"),
    VLAN_ADD: ("bridge-vids", "{label}: bridge VLANs {params} are configured but not set"),
    VLAN_DEL: ("bridge-vids", "{label}: bridge VLANs {params} are set but not configured"),
    VNI_ADD: ("bridge-vlan-vni-map", "{label}: VNIs {params} are configured but not set"),
    VNI_DEL: ("bridge-vlan-vni-map", "{label}: VNIs {params} are set but not configured"),
    VLAN_TUNNEL_ADD: ("bridge-vlan-vni-map",
                      "{label}: VLAN-to-VNI mappings {params} are configured but not set"),
    VLAN_TUNNEL_DEL: ("bridge-vlan-vni-map",
                      "{label}: VLAN-to-VNI mappings {params} are set but not configured"),
    FDB_ADD: ("vxlan-remoteip",
              "{label}: remote {subject} is configured but has no forwarding entry"),
    FDB_DEL: ("vxlan-remoteip",
              "{label}: remote {subject} has a forwarding entry but is not configured"),
    OVS_ADD: ("ovs-type", "{label}: Open vSwitch has no such bridge or port, as configured"),
    OVS_SET: ("*", "{label}: configured {params} in Open vSwitch, which has other values"),
    OVS_DEL: (None, "{label}: Open vSwitch has it as netcfg made it, but it is no longer "
                    "configured"),
}


# A bridge's own VLANs (vlan-add/vlan-del with ``self``): no attribute asks
# for them; they follow from the VLAN devices on the bridge (plan/vlans.py).
_OWN_VLANS = {
    VLAN_ADD: (None, "{label}: the bridge itself lacks VLANs {vids} (its default PVID and the "
                     "VLAN devices on it)"),
    VLAN_DEL: (None, "{label}: the bridge itself has VLANs {vids} that no VLAN device on it uses"),
}
# An addr-add that replaces an address the device has (plan/addresses.py
# _metric_changes). The read side has one metric per device, the lowest of its
# addresses', so it cannot say which of them differ.
_METRIC_EXPLAIN = ("address-metric", "{label}: not every address has the configured metric "
                                     "{metric}; {subject} is given it again")


def explain(op: Operation, model: Model) -> tuple[SourceLocation, str]:
    """(where the config asks for it, what differs) for one repairing operation."""
    if op.action == LINK_DEL and model.iface(op.netns, op.name) is None:
        ours = replaced_by(op.name, op.params.get(LOWER_PARAM), model, op.netns)
        if ours is not None:   # plan/vrrp.py: ifupdown2's, for this vrrp line
            return ours.where(HWADDRESS), (
                f"{op.name} is ifupdown2's macvlan for this vrrp line (on "
                f"{ours.attrs[RAW_DEVICE]}, same VRRP MAC); netcfg replaces it with {ours.name}")
    if op.action == ADDR_ADD and op.params.get("replace"):
        attribute, sentence = _METRIC_EXPLAIN
    else:
        attribute, sentence = (_OWN_VLANS if op.params.get("self") else _EXPLAIN)[op.action]
    obj = model.namespaces.get(op.name) if op.action in (NETNS_ADD, NETNS_DEL) \
        else model.iface(op.netns, op.name)
    label = obj.label() if obj is not None else (
        f"{op.name} (netns {op.netns})" if op.netns else op.name)
    if attribute == "*":
        attribute = next(iter(op.params), None)
    message = sentence.format(
        name=op.name, label=label, subject=op.subject, master=op.params.get("master", "?"),
        vids=" ".join(op.params.get("vids", ())),
        metric=op.params.get("metric"),
        params=" ".join(f"{k} {_value(v)}" for k, v in op.params.items()))
    return _where(obj, attribute, op, model), message


def _where(obj: ConfigObject | None, attribute: str | None, op: Operation,
           model: Model) -> SourceLocation:
    if obj is None:
        return NOWHERE   # something netcfg made that the config no longer has
    if op.action == MASTER_SET and "vrf" not in obj.attrs:
        master = model.iface(op.netns, op.params.get("master", ""))
        if master is not None:   # bridge-ports / bond-slaves on the master
            for attr in ("bridge-ports", "bond-slaves"):
                if attr in master.attrs:
                    return master.where(attr)
    if op.action in (ROUTE_ADD, ROUTE_DEL) and "route" not in obj.attrs:
        attribute = "gateway"
    return obj.where(attribute)


def _value(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
