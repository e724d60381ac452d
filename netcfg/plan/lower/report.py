"""What lowering did and did not do, for the plan's text and JSON.

Kept apart from the lowering pass itself (netcfg/plan/lower/): this is the
part operators read, that one is the part that has to be exactly right.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netcfg.model.location import SourceLocation


@dataclass(frozen=True, slots=True)
class Lowered:
    """One group of devices replaced by one: what became what."""

    loc: SourceLocation           # the first stanza of what was replaced
    netns: str
    into: str                     # the device that replaces them
    kind: str                     # "bridge" (VLAN-aware) or "vxlan" (vnifilter)
    replaced: tuple[str, ...]     # the per-VLAN bridges, or the per-VNI vxlans
    subinterfaces: int = 0        # VLAN subinterfaces removed with the bridges
    ports: tuple[str, ...] = ()   # ports of the VLAN-aware bridge
    vlans: tuple[str, ...] = ()   # VLAN ranges it carries
    vni_map: tuple[str, ...] = () # VLAN=VNI ranges (vxlan)
    bridge: str = ""              # the bridge a vnifilter vxlan is a port of
    netdevs_removed: int = 0
    netdevs_added: int = 0
    bytes_saved: int = 0

    def text(self) -> str:
        where = f" (netns {self.netns})" if self.netns else ""
        if self.kind == "bridge":
            what = _count(len(self.replaced), "bridge") + " " + _names(self.replaced)
            if self.subinterfaces:
                what += " and " + _count(self.subinterfaces, "VLAN subinterface")
            return (f"{what} ({self.loc}) -> 1 VLAN-aware bridge {self.into}{where} with ports "
                    f"{_names(self.ports)}, VLANs {_ranges_text(self.vlans)}")
        return (f"{_count(len(self.replaced), 'vxlan')} {_names(self.replaced)} ({self.loc}) "
                f"-> 1 vnifilter vxlan {self.into}{where} in {self.bridge}, VLAN=VNI "
                f"{_ranges_text(self.vni_map)}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "into": self.into,
                               "file": self.loc.file, "line": self.loc.line,
                               "replaced": list(self.replaced),
                               "netdevs_removed": self.netdevs_removed,
                               "netdevs_added": self.netdevs_added,
                               "bytes_saved": self.bytes_saved}
        if self.netns:
            out["netns"] = self.netns
        if self.kind == "bridge":
            out.update(subinterfaces=self.subinterfaces, ports=list(self.ports),
                       vlans=list(self.vlans))
        else:
            out.update(bridge=self.bridge, vni_map=list(self.vni_map))
        return out


@dataclass(frozen=True, slots=True)
class Refusal:
    """Something lowering left alone, and why: ``br7 (f:3) not lowered: ...``."""

    loc: SourceLocation
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.loc.file, "line": self.loc.line, "reason": self.reason}


@dataclass
class LoweringReport:
    """What the plan says about lowering."""

    lowered: list[Lowered] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    netdevs_before: int = 0
    netdevs_after: int = 0
    estimated_bytes_saved: int = 0

    def to_text(self) -> list[str]:
        if self.lowered:
            lines = [f"lowering: {self.netdevs_before} netdevs -> {self.netdevs_after}, "
                     f"about {_bytes_text(self.estimated_bytes_saved)} of kernel memory saved"]
        else:
            lines = [f"lowering: nothing lowered ({self.netdevs_before} netdevs)"]
        lines += [f"  lowered: {item.text()}" for item in self.lowered]
        lines += [f"  {refusal.reason}" for refusal in self.refusals]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"netdevs_before": self.netdevs_before, "netdevs_after": self.netdevs_after,
                "estimated_bytes_saved": self.estimated_bytes_saved,
                "lowered": [item.to_json() for item in self.lowered],
                "refusals": [refusal.to_json() for refusal in self.refusals]}


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _names(names: tuple[str, ...] | list[str]) -> str:
    if len(names) <= 3:
        return ", ".join(names)
    return f"{names[0]}..{names[-1]}"


def _ranges_text(ranges: tuple[str, ...], limit: int = 8) -> str:
    if len(ranges) <= limit:
        return " ".join(ranges)
    return " ".join(ranges[:limit]) + f" ... ({len(ranges)} ranges)"


def _bytes_text(n: int) -> str:
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"
