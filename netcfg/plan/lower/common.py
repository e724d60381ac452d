"""What the lowering rewrites share: the attributes each may keep, kernel
memory per object, the candidates, and small helpers on objects and ranges."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from netcfg.kinds import registry
from netcfg.model.location import SourceLocation
from netcfg.model.model import ConfigObject


# Per-object kernel memory that is not a whole device (DESIGN.md "Kernel edge",
# slab measurements on kernel 6.18). Devices use their kind's kernel_bytes.
BRIDGE_PORT_BYTES = 100_000   # measured: one bridge port
VNI_BYTES = 100               # measured: one VNI in a vnifilter vxlan
# Not measured: one struct net_bridge_vlan (a kmalloc-256 object) with its hash
# entry, per VLAN per port and once per VLAN on the bridge. Counted so that
# what lowering adds is not left out of what it saves.
BRIDGE_VLAN_BYTES = 256

DEFAULT_AGEING = 300          # seconds; the kernel's default ageing_time
DEFAULT_VLAN_PROTOCOL = "802.1q"
LOWER_OFF = "`# netcfg: lower=off`"

# What a per-VLAN bridge may say and still be lowered; values that refuse.
BRIDGE_KEEPS = {"bridge-ports": None, "bridge-vlan-aware": True, "bridge-stp": True,
                "bridge-mcsnoop": None, "bridge-ageing": None, "link-down": True}
L3 = {"address": "an address", "gateway": "a gateway", "route": "a route"}
VLAN_KEEPS = frozenset({"vlan-raw-device", "vlan-id", "vlan-protocol", "vlan-raw-netns"})
VLAN_PLAIN = frozenset({"vlan-raw-device", "vlan-id"})
# Device attributes merged vxlans must share; everything else refuses.
VXLAN_SHARED = ("vxlan-local-tunnelip", "vxlan-port", "vxlan-learning", "mtu",
                "bridge-learning", "bridge-portmcrouter")
VXLAN_PER_VNI = frozenset({"vxlan-id", "bridge-access"})
PORT_ATTRS = ("bridge-vids", "bridge-pvid", "bridge-access", "bridge-allow-untagged",
              "bridge-learning")
# Kinds the kernel will not enslave to a bridge.
NOT_PORTS = frozenset({"bridge", "loopback", "vrf"})

Key = tuple[str, str]


@dataclass(slots=True, eq=False)
class Candidate:
    """A per-VLAN bridge that passed its own checks.

    ``subs``, ``sub_keys`` and ``lowers`` are parallel: subinterface P.V, its
    key, and the key of P.
    """

    bridge: ConfigObject
    vid: int
    subs: list[ConfigObject]
    sub_keys: list[Key]
    lowers: list[Key]
    vxlan: ConfigObject | None
    order: tuple = field(init=False)

    def __post_init__(self) -> None:
        self.order = (self.bridge.netns != "", self.bridge.netns, natural(self.bridge.name))


@dataclass(slots=True, eq=False)
class Merge:
    """Per-VNI vxlans of one bridge that become one vnifilter vxlan."""

    members: list[tuple[ConfigObject, int]]   # (vxlan, VLAN), in port order
    name: str = ""


def without(d: dict, removed: set) -> dict:
    """A copy of d without the keys in removed, in d's order; whichever way
    loops in Python over fewer keys (4094x48 removes ~all of them)."""
    if len(removed) * 4 < len(d):
        out = dict(d)
        for key in removed:
            out.pop(key, None)
        return out
    return {k: v for k, v in d.items() if k not in removed}


# ---------------------------------------------------------------- small helpers

def at(obj: ConfigObject) -> str:
    """``br7 (f:3)``, ``br7 (netns t1, f:3)``."""
    netns = f"netns {obj.netns}, " if obj.netns else ""
    return f"{obj.name} ({netns}{obj.loc})"


def named_by(referrer: ConfigObject, attribute: str, subject: str) -> str:
    if attribute == "master":
        return f"{subject} is enslaved to {referrer.name} ({referrer.loc})"
    return f"{subject} is named by {referrer.name} in {attribute} ({referrer.where(attribute)})"


def snoops(bridge: ConfigObject) -> bool:
    """IGMP/MLD snooping is on unless written off (the kernel's default)."""
    return bool(bridge.attrs.get("bridge-mcsnoop", True))


def with_attrs(obj: ConfigObject, attrs: dict[str, Any],
               loc: SourceLocation | None = None) -> ConfigObject:
    """A copy of obj with some attributes set; obj itself is not changed."""
    locs = dict(obj.locs)
    for attribute in attrs:
        locs[attribute] = loc or obj.where(attribute)
    return ConfigObject(obj.section, obj.name, obj.kind, obj.netns, {**obj.attrs, **attrs},
                        locs, obj.loc, obj.auto, obj.implicit)


def kind_bytes(kind: str) -> int:
    return registry.kind(kind).kernel_bytes


def ranges(ids: Iterable[int]) -> list[str]:
    """``[7, 1, 2, 3]`` -> ``["1-3", "7"]``."""
    runs: list[list[int]] = []
    for i in sorted(set(ids)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [f"{a}-{b}" if a != b else str(a) for a, b in runs]


def map_ranges(pairs: list[tuple[int, int]]) -> list[str]:
    """Sorted (VLAN, VNI) pairs -> ``["100-101=1000-1001", "200=5000"]``:
    a range only where both sides are consecutive."""
    runs: list[list[int]] = []
    for vid, vni in pairs:
        if runs and runs[-1][1] == vid - 1 and runs[-1][3] == vni - 1:
            runs[-1][1], runs[-1][3] = vid, vni
        else:
            runs.append([vid, vid, vni, vni])
    return [f"{v0}={n0}" if v0 == v1 else f"{v0}-{v1}={n0}-{n1}" for v0, v1, n0, n1 in runs]


_DIGITS = re.compile(r"(\d+)")


def natural(name: str) -> tuple:
    """Sort key: br2 before br10."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(name))
