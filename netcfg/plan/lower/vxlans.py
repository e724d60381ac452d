"""Rewrite 2: per-VNI vxlans that are access ports of one VLAN-aware bridge
become one vnifilter vxlan with a VLAN-to-VNI map (see netcfg.plan.lower)."""

from __future__ import annotations

from typing import Any

from netcfg.model.model import IFACE, ConfigObject
from netcfg.plan.lower.common import (BRIDGE_PORT_BYTES, BRIDGE_VLAN_BYTES, LOWER_OFF, Merge,
                                      VNI_BYTES, VXLAN_PER_VNI, VXLAN_SHARED, at, kind_bytes,
                                      map_ranges, named_by, ranges, snoops, with_attrs)
from netcfg.plan.lower.report import Lowered, Refusal


class VxlanRewrite:
    """Methods of the lowering run (lowering._Lowering) for this rewrite."""

    # ------------------------------------------------------------ vxlans

    def _merge_existing_vxlans(self) -> None:
        """Per-VNI access vxlans of bridges that were VLAN-aware already."""
        for bridge in self.bridges:
            if not bridge.attrs.get("bridge-vlan-aware"):
                continue
            items = []
            for name in bridge.attrs.get("bridge-ports") or ():
                port = self.ifaces.get((bridge.netns, name))
                if (port is not None and port.kind == "vxlan" and "vxlan-id" in port.attrs
                        and "bridge-access" in port.attrs):
                    items.append((port, port.attrs["bridge-access"], bridge))
            if len(items) < 2:
                continue
            what = f"vxlan ports of {at(bridge)}"
            if self._off(bridge):
                self._refuse(bridge, f"{bridge.name} is declared in {bridge.loc.file}, which "
                                     f"says {LOWER_OFF}", what)
                continue
            if bridge.attrs.get("bridge-stp"):
                self._refuse(bridge, f"{bridge.name} runs STP (bridge-stp yes, "
                                     f"{bridge.where('bridge-stp')}), which treats each of them "
                                     f"as a port of its own", what)
                continue
            if snoops(bridge) and not bridge.attrs.get("bridge-mcast-vlan-snooping"):
                where = (f"bridge-mcsnoop yes, {bridge.where('bridge-mcsnoop')}"
                         if "bridge-mcsnoop" in bridge.attrs else "the kernel default")
                self._refuse(bridge, f"{bridge.name} does IGMP/MLD snooping per bridge ({where}); "
                                     f"one vxlan port would become a multicast router port for "
                                     f"all its VLANs at once. Write bridge-mcast-vlan-snooping "
                                     f"yes (per-VLAN state) or bridge-mcsnoop no to lower them",
                             what)
                continue
            merges, _, refusals = self._plan_merges(items, bridge.name)
            self.refusals.extend(refusals)
            if not merges:
                continue
            ports = list(bridge.attrs["bridge-ports"])
            merged = {}
            for merge in merges:
                merge.name = self._name(bridge.netns, "vxlan")
                for x, _ in merge.members:
                    merged[x.name] = merge.name
            new_ports, placed = [], set()
            for name in ports:
                target = merged.get(name, name)
                if target in placed:
                    continue
                placed.add(target)
                new_ports.append(target)
            self.replaced[bridge.key] = with_attrs(bridge, {"bridge-ports": new_ports})
            for merge in merges:
                self._apply_merge(merge, bridge, lowered_bridge=False)

    def _plan_merges(self, items: list[tuple[ConfigObject, int, ConfigObject]],
                     into: str) -> tuple[list[Merge], list[ConfigObject], list[Refusal]]:
        """Split the per-VNI vxlans of one VLAN-aware bridge, ``into``, into
        merges and the ones kept as access ports; the refusals say why a vxlan
        is kept. Items: (vxlan, its VLAN, the bridge that lists it now)."""
        refusals: list[Refusal] = []
        if len(items) < 2:
            return [], [x for x, _, _ in items], refusals
        groups: dict[tuple, list[tuple[ConfigObject, int]]] = {}
        kept: list[ConfigObject] = []

        def keep(vxlan: ConfigObject, why: str) -> None:
            kept.append(vxlan)
            refusals.append(Refusal(vxlan.loc, f"{at(vxlan)} not lowered: {why}; it stays "
                                               f"an access port of {into}"))

        for vxlan, vid, bridge in items:
            why = self._vxlan_problem(vxlan, bridge)
            if why:
                keep(vxlan, why)
                continue
            shared = tuple((a, repr(vxlan.attrs.get(a))) for a in VXLAN_SHARED)
            groups.setdefault((shared, vxlan.auto), []).append((vxlan, vid))
        merges = []
        for members in groups.values():
            vids: dict[int, ConfigObject] = {}
            unique = []
            for vxlan, vid in members:
                clash = vids.setdefault(vid, vxlan)
                if clash is not vxlan:
                    keep(vxlan, f"VLAN {vid} also maps to {clash.name}; a vnifilter vxlan maps "
                                f"a VLAN to one VNI")
                else:
                    unique.append((vxlan, vid))
            if len(unique) >= 2:
                merges.append(Merge(unique))
            elif unique and len(groups) > 1:
                keep(unique[0][0], "no other vxlan port has the same "
                                   + ", ".join(VXLAN_SHARED) + " and auto")
            else:
                kept.extend(x for x, _ in unique)
        return merges, kept, refusals

    def _vxlan_problem(self, vxlan: ConfigObject, bridge: ConfigObject) -> str | None:
        if self._off(vxlan):
            return f"it is declared in {vxlan.loc.file}, which says {LOWER_OFF}"
        for attribute in vxlan.attrs:
            if attribute in VXLAN_PER_VNI or attribute in VXLAN_SHARED:
                continue
            loc = vxlan.where(attribute)
            if attribute == "vxlan-remoteip":
                return (f"it has vxlan-remoteip ({loc}); per-VNI head-end replication would "
                        f"need per-VNI FDB entries on a vnifilter vxlan, which lowering does "
                        f"not write")
            return (f"it sets {attribute} ({loc}), which a vnifilter vxlan could not keep for "
                    f"one VNI")
        other = self._others(vxlan, bridge)
        if other:
            return named_by(*other, "it")
        return None

    def _apply_merge(self, merge: Merge, bridge: ConfigObject, lowered_bridge: bool) -> None:
        """Record the vnifilter vxlan that replaces the merge in ``bridge``."""
        first = merge.members[0][0]
        netns = first.netns
        pairs = sorted((vid, x.attrs["vxlan-id"]) for x, vid in merge.members)
        attrs: dict[str, Any] = {a: first.attrs[a] for a in VXLAN_SHARED if a in first.attrs}
        attrs["vxlan-vnifilter"] = True
        attrs["bridge-vids"] = ranges(v for v, _ in pairs)
        attrs["bridge-vlan-vni-map"] = map_ranges(pairs)
        locs = {a: first.where(a) for a in attrs}
        vxlan = ConfigObject(IFACE, merge.name, "vxlan", netns=netns, attrs=attrs, locs=locs,
                             loc=first.loc, auto=first.auto)
        for x, _ in merge.members:
            self.removed.add(x.key)
            self.replaced.pop(x.key, None)
        self.added.append(vxlan)
        self.new_masters[(netns, merge.name)] = bridge.key
        k = len(merge.members)
        port = kind_bytes("vxlan") + BRIDGE_PORT_BYTES
        # Access ports of a per-VLAN bridge had no VLAN entries; of a
        # VLAN-aware one, one each, as the vnifilter port has per VNI.
        before = k * port + (0 if lowered_bridge else k * BRIDGE_VLAN_BYTES)
        after = port + k * (VNI_BYTES + BRIDGE_VLAN_BYTES)
        self.lowered.append(Lowered(
            first.loc, netns, merge.name, "vxlan", tuple(x.name for x, _ in merge.members),
            vni_map=tuple(attrs["bridge-vlan-vni-map"]), bridge=bridge.name,
            netdevs_removed=k, netdevs_added=1, bytes_saved=before - after))
