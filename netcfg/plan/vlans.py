"""Bridge VLANs as the diff compares them: a port's VLANs, a VLAN-aware
bridge's own, and VLAN-to-VNI maps, as sets of id ranges.

What ifupdown2 sets (addons/bridge.py, addons/vlan.py) is the meaning of
each attribute here; plan/diff.py turns two of these values (desired, as
the kernel has it) into vlan-add/vlan-del operations. Sets are compared as
canonical intervals: a port carrying 1-4094 costs one interval, not 4094 ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from netcfg.model.model import ConfigObject

Interval = tuple[int, int]

# Attribute names with a meaning here (a small table, not kind tests).
VLAN_AWARE = "bridge-vlan-aware"
PORT_VIDS, PORT_PVID, PORT_ACCESS = "bridge-vids", "bridge-pvid", "bridge-access"
ALLOW_UNTAGGED, DEFAULT_PVID = "bridge-allow-untagged", "bridge-vlan-default-pvid"
# The kernel's vlan_default_pvid when a bridge is made without one, as
# ifupdown2 makes every bridge.
KERNEL_DEFAULT_PVID = 1
VNI_MAP, VNIFILTER = "bridge-vlan-vni-map", "vxlan-vnifilter"


# ---------------------------------------------------------------- ranges

def expand_ranges(ranges: Iterable[str]) -> set[int]:
    """``["100", "200-202"]`` -> ``{100, 200, 201, 202}``."""
    ids: set[int] = set()
    for first, last in intervals(ranges):
        ids.update(range(first, last + 1))
    return ids


def compress_ranges(ids: Iterable[int]) -> list[str]:
    """``{100, 200, 201, 202}`` -> ``["100", "200-202"]``."""
    return texts(merge((i, i) for i in ids))


def intervals(ranges: Iterable[str] | None) -> list[Interval]:
    """Canonical intervals (sorted, disjoint, non-adjacent) of range texts."""
    spans = []
    for text in ranges or ():
        first, _, last = str(text).partition("-")
        spans.append((int(first), int(last or first)))
    return merge(spans)


def merge(spans: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1] + 1:
            if last > out[-1][1]:
                out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def subtract(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Ids in a and not in b; both canonical, linear merge."""
    out: list[Interval] = []
    j = 0
    for first, last in a:
        while j < len(b) and b[j][1] < first:
            j += 1
        k = j
        while k < len(b) and b[k][0] <= last:
            if b[k][0] > first:
                out.append((first, b[k][0] - 1))
            first = max(first, b[k][1] + 1)
            if first > last:
                break
            k += 1
        if first <= last:
            out.append((first, last))
    return out


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    return subtract(a, subtract(a, b))


def texts(spans: list[Interval]) -> list[str]:
    return [str(f) if f == l else f"{f}-{l}" for f, l in spans]


def one(vid: int | None) -> list[Interval]:
    return [] if vid is None else [(vid, vid)]


def _map_side(obj: ConfigObject, side: int) -> list[Interval]:
    """VLAN (side 0) or VNI (side 1) ranges of ``bridge-vlan-vni-map``."""
    return intervals(item.split("=")[side] for item in obj.attrs.get(VNI_MAP, ()))


# A VLAN-to-VNI map as {offset: VLAN intervals}: VLAN v maps to VNI v + offset.
# Ranges whose VLANs and VNIs both run on share an offset, so set operations
# on maps are the interval ones, per offset (``10-41=10010-10041`` is one
# interval, not 32 pairs).
TunnelMap = dict[int, list[Interval]]


def tunnel_map(items: Iterable[str] | None) -> TunnelMap:
    """``["10-41=10010-10041", "50=20050"]`` -> ``{10000: [(10, 41)], 20000: [(50, 50)]}``."""
    spans: dict[int, list[Interval]] = {}
    for item in items or ():
        vlans, _, vnis = str(item).partition("=")
        (first, last), = intervals([vlans])
        vni = int(vnis.partition("-")[0])
        spans.setdefault(vni - first, []).append((first, last))
    return {offset: merge(vlans) for offset, vlans in spans.items()}


def tunnel_texts(mapping: TunnelMap) -> list[str]:
    """A map as bridge-vlan-vni-map items, by VLAN: ``["10-41=10010-10041"]``."""
    spans = sorted((f, l, offset) for offset, vlans in mapping.items() for f, l in vlans)
    return [f"{f}={f + d}" if f == l else f"{f}-{l}={f + d}-{l + d}" for f, l, d in spans]


def tunnel_subtract(a: TunnelMap, b: TunnelMap) -> TunnelMap:
    """Mappings of a that b does not have (the same VLAN to the same VNI)."""
    out = {offset: subtract(vlans, b.get(offset, [])) for offset, vlans in a.items()}
    return {offset: vlans for offset, vlans in out.items() if vlans}


# ---------------------------------------------------------------- per-attribute meanings

@dataclass(frozen=True, slots=True)
class PortVlans:
    """VLANs of one bridge port: ids, the pvid, the ids sent untagged."""

    vids: tuple[Interval, ...] = ()
    pvid: int | None = None
    untagged: tuple[Interval, ...] = ()


NO_VLANS = PortVlans()


def port_vlans(port: ConfigObject, bridge: ConfigObject | None) -> PortVlans:
    """What a port of ``bridge`` carries, as ifupdown2 sets it (addons/bridge.py
    ``_apply_bridge_vlan_aware_port_settings_all``): the bridge's bridge-vids
    and bridge-pvid are the defaults of ports that say nothing, and a port
    with neither pvid has PVID 1 (here: the bridge's default PVID), untagged,
    unless it says ``bridge-allow-untagged no``."""
    if bridge is None or not bridge.attrs.get(VLAN_AWARE):
        return NO_VLANS
    attrs = port.attrs
    access = attrs.get(PORT_ACCESS)
    if access is not None:
        return _carrying((), access)
    vids = intervals(attrs.get(PORT_VIDS, bridge.attrs.get(PORT_VIDS)))
    pvid = None
    if attrs.get(ALLOW_UNTAGGED, True):
        pvid = attrs.get(PORT_PVID, bridge.attrs.get(PORT_PVID)) or default_pvid(bridge)
    return _carrying([*vids, *_map_side(port, 0)], pvid)


def _carrying(tagged: Iterable[Interval], pvid: int | None) -> PortVlans:
    """VLANs ``tagged`` and, if any, ``pvid`` as the PVID, sent untagged."""
    return PortVlans(tuple(merge([*tagged, *one(pvid)])), pvid, tuple(one(pvid)))


def default_pvid(bridge: ConfigObject) -> int | None:
    """The VLAN the kernel gives ``bridge`` itself at creation and each port
    as it joins, PVID and untagged; None for none (default_pvid 0)."""
    return bridge.attrs.get(DEFAULT_PVID, KERNEL_DEFAULT_PVID) or None


def bridge_own_vlans(bridge: ConfigObject, uppers: Iterable[int]) -> PortVlans:
    """The VLANs a VLAN-aware bridge itself carries (`bridge vlan ... self`),
    as ifupdown2 leaves them: the default PVID the kernel gave it, and the VID
    of each VLAN device on it (addons/vlan.py ``_bridge_vid_add_del``: `bridge
    vlan add vid V dev BR self`, tagged; on the default PVID that takes its
    PVID and untagged flags away, as the kernel replaces flags on add)."""
    pvid = default_pvid(bridge)
    tagged = set(uppers)
    return _carrying(((v, v) for v in tagged), None if pvid in tagged else pvid)


def own_vlans_read(attrs: dict[str, Any]) -> PortVlans:
    """A bridge's own VLANs as read back (kernel/read.py, spelled as a port's)."""
    return _carrying(intervals(attrs.get(PORT_VIDS)), attrs.get(PORT_PVID))


def joined_vlans(bridge: ConfigObject | None) -> PortVlans:
    """What a port has just after it joins ``bridge`` (nbp_vlan_init: the
    bridge's default PVID, untagged), before netcfg sets its VLANs."""
    if bridge is None or not bridge.attrs.get(VLAN_AWARE):
        return NO_VLANS
    return _carrying((), default_pvid(bridge))


def held_vlans(port: ConfigObject, bridge: ConfigObject | None,
               becoming: ConfigObject | None) -> PortVlans:
    """What a port of ``bridge`` (as read) carries that counts, when the same
    bridge will be ``becoming`` (as desired). The kernel keeps every port's
    VLAN table whether the bridge filters or not (nbp_vlan_init gives a
    joining port the default PVID either way), and VLAN filtering is switched
    on a live bridge (IFLA_BR_VLAN_FILTERING), so: turned on, a port holds
    what it got when it joined, or what it was put back to when filtering
    went off (``wanted_vlans``); turned off, what it carries as read while
    the bridge still filters, which ``wanted_vlans`` takes back."""
    aware = bridge is not None and bridge.attrs.get(VLAN_AWARE)
    will_be = becoming is not None and becoming.attrs.get(VLAN_AWARE)
    if will_be and not aware:
        return _carrying((), default_pvid(bridge)) if bridge is not None else NO_VLANS
    return port_vlans(port, bridge)


def wanted_vlans(port: ConfigObject, bridge: ConfigObject | None,
                 was: ConfigObject | None) -> PortVlans:
    """What a port of ``bridge`` (as desired) should carry, when the same
    bridge is ``was`` as the plan finds it (read back if it is kept, else
    the desired one made anew).

    Filtering turned off on the live bridge: the port goes back to what the
    kernel gives a joining port, the bridge's default PVID untagged. The
    kernel ignores the table while filtering is off, but keeps it: left as
    it was (2-4094 on a Proxmox uplink), it is not what `ifup -a` of the
    new file makes, and turning filtering back on would carry the old
    VLANs again where the plan expects the joined ones (``held_vlans``).
    ifupdown2's reload ends the same way (its port handler still sees a
    filtering bridge and applies the new file's empty bridge-vids with PVID
    1). Only ports in the config come here: guests plugged at run time are
    outside the view (plan/scope.py) and keep what their hypervisor set."""
    if (was is not None and was.attrs.get(VLAN_AWARE)
            and bridge is not None and not bridge.attrs.get(VLAN_AWARE)):
        return _carrying((), default_pvid(was))
    return port_vlans(port, bridge)


def vnis(obj: ConfigObject) -> list[Interval]:
    """VNIs of a vnifilter vxlan; [] for every other device."""
    return _map_side(obj, 1) if obj.attrs.get(VNIFILTER) else []


def port_tunnels(port: ConfigObject, bridge: ConfigObject | None) -> TunnelMap:
    """VLAN-to-VNI mappings of a vnifilter vxlan on a VLAN-aware bridge; {}
    for every other port (the kernel keeps them per bridge port)."""
    if bridge is None or not bridge.attrs.get(VLAN_AWARE) or not port.attrs.get(VNIFILTER):
        return {}
    return tunnel_map(port.attrs.get(VNI_MAP))
