"""The diff's part for one interface's addresses: which to delete, which to
add, and with what (peer, broadcast, the metric of the prefix route).

Pure, as plan/diff.py, which calls ``address_operations`` for each desired
interface:

    iface vlan13-v0                 # made by `address-virtual` (compile/build.py)
        address 10.1.13.1/24
        address-metric 1024         # + addr-add vlan13-v0 10.1.13.1/24 metric=1024
"""

from __future__ import annotations

from typing import Any

from netcfg.kinds.address_label import labels
from netcfg.kinds.common import ADDRESS_METRIC
from netcfg.model.model import ConfigObject
from netcfg.plan.ops import ADDR_ADD, ADDR_DEL, Operation

# Set by the apply on a desired interface, never written in a config: the
# addresses its own up/post-up lines added when it came up, while those
# lines are unchanged (apply/hooks.py hook_added). Not netcfg's to remove.
HOOK_ADDED = "hook-added"


def dhcp_owned(obj: ConfigObject) -> set[str]:
    """The address families ("4", "6") a DHCP client configures on ``obj``
    (method dhcp), or the kernel's SLAAC (`inet6 auto`); netcfg leaves their
    addresses alone."""
    owned = {family for method, family in (("inet", "4"), ("inet6", "6"))
             if obj.attrs.get(method) == "dhcp"}
    if obj.attrs.get("inet6") == "auto":
        owned.add("6")
    return owned


def address_operations(obj: ConfigObject, cur: ConfigObject | None,
                       cycled: bool) -> list[Operation]:
    """What makes ``cur``'s addresses ``obj``'s (``cur`` None: a device being
    made). ``cycled``: the device goes down on the way (enslaved to or released
    from a VRF or a bond, or kept down), which takes its IPv6 addresses
    (addrconf_ifdown): those still wanted are added again, with replace (`ip
    addr replace`), which also holds where keep_addr_on_down=1 kept them."""
    netns, name = obj.key
    want_addrs = obj.attrs.get("address", ())
    had_addrs = cur.attrs.get("address", ()) if cur is not None else ()
    lost = {a for a in had_addrs if ":" in a} if cycled else set()
    dhcp_families = dhcp_owned(obj)
    if dhcp_families:
        # The DHCP client owns that family's addresses (netcfg/apply/dhcp.py).
        had_addrs = [a for a in had_addrs
                     if a in want_addrs or ("6" if ":" in a else "4") not in dhcp_families]
    hooked = obj.attrs.get(HOOK_ADDED)
    if hooked and cur is not None and cur.auto and not cycled:
        # `up ip address add ... dev $IFACE` added them, and the lines do not
        # run again while they and the interface's up state hold (plan/hooks.py):
        # removed, they would stay away. Down, or cycled, the lines run
        # again as it comes up: removed first, then added by them.
        had_addrs = [a for a in had_addrs if a in want_addrs or a not in hooked]
    ops = []
    want_labels, had_labels = labels(obj), labels(cur) if cur is not None else {}
    if want_labels != had_labels:
        # The kernel cannot relabel an address: one whose label differs is
        # deleted and added again (kinds/address_label.py).
        relabelled = {a for a in want_addrs if a in had_addrs
                      and want_labels.get(a) != had_labels.get(a)}
        had_addrs = [a for a in had_addrs if a not in relabelled]
        ops.extend(Operation(ADDR_DEL, netns, name, a) for a in sorted(relabelled))
    if want_addrs != had_addrs or lost:
        want_set, had_set = set(want_addrs), set(had_addrs)
        ops.extend(Operation(ADDR_DEL, netns, name, a)
                   for a in dict.fromkeys(had_addrs) if a not in want_set)
        ops.extend(Operation(ADDR_ADD, netns, name, a, params=address_params(obj, a))
                   for a in dict.fromkeys(want_addrs) if a not in had_set)
        ops.extend(Operation(ADDR_ADD, netns, name, a,
                             params={**address_params(obj, a), "replace": True})
                   for a in dict.fromkeys(want_addrs) if a in had_set and a in lost)
    # Unwritten, the metric is 0 on the addresses netcfg manages; but where a
    # DHCP client adds some, the read side's one metric may be its addresses'.
    if cur is not None and (ADDRESS_METRIC in obj.attrs
                            or ADDRESS_METRIC in cur.attrs and not dhcp_families):
        had_set = set(had_addrs) - lost
        ops.extend(_metric_changes(obj, cur, [a for a in dict.fromkeys(want_addrs)
                                              if a in had_set]))
    return ops


def address_params(obj: ConfigObject, address: str) -> dict[str, Any]:
    """What an address-add carries besides the address: for IPv4 the peer
    (pointopoint) and the broadcast address, set when added, not compared
    (the read side keeps the address itself, docs/compat.md), and its label
    (address-label), compared (address_operations); the metric of its
    prefix route (address-metric), compared (_metric_changes)."""
    params = {}
    if ":" not in address:
        if "pointopoint" in obj.attrs:
            params["peer"] = obj.attrs["pointopoint"]
        if "broadcast" in obj.attrs:
            params["broadcast"] = obj.attrs["broadcast"]
        label = labels(obj).get(address)
        if label is not None:
            params["label"] = label
    if obj.attrs.get(ADDRESS_METRIC):
        params["metric"] = obj.attrs[ADDRESS_METRIC]
    return params


def _metric_changes(obj: ConfigObject, cur: ConfigObject, kept: list[str]) -> list[Operation]:
    """The addresses both have, when their prefix routes' metric is not the
    configured one (address-metric; absent: 0, the kernel's, for the
    addresses netcfg manages). The read side reports one metric per device,
    the lowest where they differ (kernel/read.py). Replaced in place, as `ip
    addr replace ADDR dev NAME metric N`; replacing an IPv6 address, the
    kernel keeps its metric when the new one is 0 (inet6_addr_modify), so
    such an address is deleted and added."""
    want = obj.attrs.get(ADDRESS_METRIC, 0)
    if not kept or cur.attrs.get(ADDRESS_METRIC, 0) == want:
        return []
    netns, name = obj.key
    ops = []
    for address in kept:
        if want == 0 and ":" in address:
            ops += [Operation(ADDR_DEL, netns, name, address),
                    Operation(ADDR_ADD, netns, name, address, params=address_params(obj, address))]
        else:
            ops.append(Operation(ADDR_ADD, netns, name, address,
                                 params={**address_params(obj, address), "metric": want,
                                         "replace": True}))
    return ops
