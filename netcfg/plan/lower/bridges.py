"""Rewrite 1: per-VLAN bridges (brV over P.V) become one VLAN-aware bridge
over the lower devices P, each with bridge-vids (see netcfg.plan.lower)."""

from __future__ import annotations

from typing import Any, Iterable

from netcfg.kinds.bridge import MAX_PORTS
from netcfg.model.model import IFACE, ConfigObject
from netcfg.plan.lower.common import (BRIDGE_KEEPS, BRIDGE_PORT_BYTES, BRIDGE_VLAN_BYTES, Candidate,
                                      DEFAULT_AGEING, DEFAULT_VLAN_PROTOCOL, Key, L3, LOWER_OFF,
                                      NOT_PORTS, PORT_ATTRS, VLAN_KEEPS, VLAN_PLAIN, at, kind_bytes,
                                      named_by, ranges, snoops, with_attrs)
from netcfg.plan.lower.report import Lowered


class BridgeRewrite:
    """Methods of the lowering run (lowering._Lowering) for this rewrite."""

    # ------------------------------------------------------------ bridges

    def _lower_bridges(self) -> None:
        candidates: dict[Key, Candidate] = {}
        for obj in self.bridges:
            if obj.attrs.get("bridge-vlan-aware"):
                continue
            result = self._check_bridge(obj)
            if isinstance(result, str):
                self._refuse(obj, result)
            elif result is not None:
                candidates[obj.key] = result
        if not candidates:
            return
        alive = self._fixpoint(candidates)
        for group in self._groups(candidates, alive):
            self._lower_group(group)

    def _check_bridge(self, bridge: ConfigObject) -> Candidate | str | None:
        """A candidate, why not, or None when it is no per-VLAN bridge at all."""
        netns = bridge.netns
        names = bridge.attrs.get("bridge-ports") or ()
        why = self._bridge_problem(bridge)
        if why is not None:
            return why if self._first_vlan(bridge) is not None else None
        subs: list[ConfigObject] = []
        sub_keys: list[Key] = []
        lowers: list[Key] = []
        vxlan: ConfigObject | None = None
        vid: int | None = None
        # The checks of _port_problem and _sub_problem, inlined for the plain
        # subinterface that ~all of 200k are; anything else takes the slow path.
        # (listed_by need not be checked here: a second lister is in named.)
        keys = self.port_keys.get(bridge.key) or [(netns, name) for name in names]
        off = self.off
        unnamed = self.named.keys().isdisjoint(keys) and self.vlans_on.keys().isdisjoint(keys)
        down = not bridge.auto
        for key, port in zip(keys, map(self.ifaces.get, keys)):
            name = key[1]
            if port is None:
                why = f"its port {name} is not declared"
                break
            kind = port.kind
            if kind == "vlan":
                attrs = port.attrs
                if (not unnamed or attrs.keys() != VLAN_PLAIN
                        or (down and port.auto) or (off and port.loc.file in off)):
                    why = self._port_problem(bridge, port) or self._sub_problem(bridge, port)
                    if why:
                        break
                if vid is None:
                    vid = attrs["vlan-id"]
                elif attrs["vlan-id"] != vid:
                    why = (f"its ports are different VLANs: {subs[0].name} is VLAN {vid}, "
                           f"{name} is VLAN {attrs['vlan-id']}")
                    break
                subs.append(port)
                sub_keys.append(key)
                lowers.append((netns, attrs["vlan-raw-device"]))
            elif kind == "vxlan":
                why = self._port_problem(bridge, port)
                if why:
                    break
                if "vxlan-id" not in port.attrs:
                    why = f"its port {name} is a vxlan without vxlan-id ({port.loc})"
                    break
                if vxlan is not None:
                    why = (f"it has two vxlan ports, {vxlan.name} and {name}; lowering maps "
                           f"a VLAN to one VNI")
                    break
                vxlan = port
            else:
                why = f"its port {name} is a {kind}, not a VLAN subinterface or a vxlan"
                break
        if why is not None:
            return why if vid is not None or self._first_vlan(bridge) is not None else None
        if vid is None:
            return None  # only vxlans: no VLAN to give them
        return Candidate(bridge, vid, subs, sub_keys, lowers, vxlan)

    def _first_vlan(self, bridge: ConfigObject) -> ConfigObject | None:
        for name in bridge.attrs.get("bridge-ports") or ():
            port = self.ifaces.get((bridge.netns, name))
            if port is not None and port.kind == "vlan":
                return port
        return None

    def _bridge_problem(self, bridge: ConfigObject) -> str | None:
        if self._off(bridge):
            return f"it is declared in {bridge.loc.file}, which says {LOWER_OFF}"
        why = self._bridge_attribute_problem(bridge)
        if why:
            return why
        other = self._others(bridge, None)
        if other:
            return named_by(*other, "it")
        return None

    def _bridge_attribute_problem(self, bridge: ConfigObject) -> str | None:
        for attribute, value in bridge.attrs.items():
            if attribute in BRIDGE_KEEPS:
                refusing = BRIDGE_KEEPS[attribute]
                if refusing is None or bool(value) != refusing:
                    continue
            loc = bridge.where(attribute)
            first = self._first_vlan(bridge)
            vid = first.attrs.get("vlan-id") if first is not None else None
            vlan = f"VLAN {vid}" if vid is not None else "its VLAN"
            if attribute in L3:
                return (f"it has {L3[attribute]} ({loc}); on a VLAN-aware bridge that would "
                        f"need a VLAN interface for {vlan}, which lowering does not create")
            if attribute == "vrf":
                return (f"it is in vrf {value} ({loc}); on a VLAN-aware bridge that would need "
                        f"a VLAN interface for {vlan}, which lowering does not create")
            if attribute == "bridge-stp":
                return (f"it runs STP (bridge-stp yes, {loc}); a VLAN-aware bridge runs one "
                        f"spanning tree for all its VLANs, not one per VLAN")
            if attribute == "link-down":
                return (f"it is kept down (link-down yes, {loc}); a VLAN-aware bridge cannot "
                        f"keep one VLAN down")
            return (f"it sets {attribute} ({loc}), which a VLAN-aware bridge could not keep "
                    f"for {vlan} alone")
        return None

    def _port_problem(self, bridge: ConfigObject, port: ConfigObject) -> str | None:
        """Checks a subinterface and a vxlan port share: file, users, admin state."""
        if self._off(port):
            return f"its port {port.name} is declared in {port.loc.file}, which says {LOWER_OFF}"
        other = self._others(port, bridge)
        if other:
            return named_by(*other, f"its port {port.name}")
        if port.auto and not bridge.auto:
            return (f"it is not auto, but its port {port.name} ({port.loc}) is; a VLAN-aware "
                    f"bridge cannot leave one VLAN down")
        return None

    def _sub_problem(self, bridge: ConfigObject, sub: ConfigObject) -> str | None:
        for attribute, value in sub.attrs.items():
            if attribute in VLAN_KEEPS:
                if attribute == "vlan-protocol" and str(value).lower() != DEFAULT_VLAN_PROTOCOL:
                    return (f"its port {sub.name} is an {value} VLAN ({sub.where(attribute)}); "
                            f"lowering makes 802.1Q VLANs")
                if attribute == "vlan-raw-netns" and value != sub.netns:
                    return (f"its port {sub.name} is a VLAN of a device in another namespace "
                            f"({sub.where(attribute)}), which cannot be a port of {bridge.name}")
                continue
            return (f"its port {sub.name} sets {attribute} ({sub.where(attribute)}), which a "
                    f"port of a VLAN-aware bridge could not keep for one VLAN")
        if "vlan-raw-device" not in sub.attrs or "vlan-id" not in sub.attrs:
            return f"its port {sub.name} has no vlan-raw-device or vlan-id ({sub.loc})"
        return None

    def _fixpoint(self, candidates: dict[Key, Candidate]) -> set[Key]:
        """Candidates left once every lower port whose VLANs are not all lowered
        has taken down every candidate on it (and so on, transitively)."""
        users: dict[Key, list[Key]] = {}
        for key, cand in candidates.items():
            for p in cand.lowers:
                group = users.get(p)
                if group is None:
                    users[p] = [key]
                elif group[-1] is not key:
                    group.append(key)
        self.users = users
        tainted: dict[Key, str] = {}
        for p, keys in users.items():
            why = self._lower_port_problem(p, keys, candidates)
            if why:
                tainted[p] = why
        alive = set(candidates)
        queue = list(tainted)
        while queue:
            p = queue.pop()
            for key in users[p]:
                if key not in alive:
                    continue
                alive.discard(key)
                self._refuse(candidates[key].bridge, f"{p[1]} {tainted[p]}")
                # Its subinterfaces stay on the other lower ports, which may still
                # be lowered: see point 2 of the module docstring.
        return alive

    def _lower_port_problem(self, p: Key, users: list[Key],
                            candidates: dict[Key, Candidate]) -> str | None:
        """Why lower device P cannot become a port of a VLAN-aware bridge."""
        obj = self.ifaces.get(p)
        if obj is None:
            return "is not declared"
        if self._off(obj):
            return f"is declared in {obj.loc.file}, which says {LOWER_OFF}"
        if obj.kind in NOT_PORTS:
            return f"is a {obj.kind}, which cannot be a bridge port"
        for attribute, value in obj.attrs.items():
            if attribute in L3 or attribute == "vrf":
                what = L3.get(attribute) or f"vrf {value}"
                return (f"has {what} ({obj.where(attribute)}), which would stop working once "
                        f"it is a port of a VLAN-aware bridge")
            if attribute in PORT_ATTRS:
                return (f"sets {attribute} ({obj.where(attribute)}); lowering would give it "
                        f"bridge-vids of its own")
        for referrer, attribute in self.named.get(p, ()):
            if referrer.kind == "vlan" and attribute == "vlan-raw-device":
                continue  # a VLAN of P that stays: it keeps its frames (docstring, 2)
            return named_by(referrer, attribute, "").lstrip()
        lister = self.listed_by.get(p)
        if lister is not None:
            return named_by(lister, "bridge-ports", "").lstrip()
        master = self.model.masters.get(p)
        if master is not None:
            return f"is already enslaved to {master[1]}"
        return None

    def _groups(self, candidates: dict[Key, Candidate],
                alive: set[Key]) -> Iterable[list[Candidate]]:
        """Candidates sharing lower ports, transitively; in name order."""
        order = sorted((candidates[k] for k in alive), key=lambda c: c.order)
        seen: set[Key] = set()
        expanded: set[Key] = set()
        for start in order:
            if start.bridge.key in seen:
                continue
            seen.add(start.bridge.key)
            group, stack = [], [start]
            while stack:
                cand = stack.pop()
                group.append(cand)
                for p in cand.lowers:
                    if p in expanded:
                        continue
                    expanded.add(p)
                    for key in self.users[p]:
                        if key in alive and key not in seen:
                            seen.add(key)
                            stack.append(candidates[key])
            group.sort(key=lambda c: c.order)
            yield group

    def _group_problem(self, group: list[Candidate]) -> str | None:
        first = group[0].bridge
        by_vid: dict[int, ConfigObject] = {}
        for cand in group:
            bridge = cand.bridge
            if bridge.auto != first.auto:
                auto, other = (first, bridge) if first.auto else (bridge, first)
                return (f"{at(auto)} is auto and {at(other)} is not; they share lower ports, "
                        f"so they would become one VLAN-aware bridge")
            ageing = bridge.attrs.get("bridge-ageing", DEFAULT_AGEING)
            if ageing != first.attrs.get("bridge-ageing", DEFAULT_AGEING):
                return (f"{at(first)} and {at(bridge)} have different bridge-ageing; they "
                        f"share lower ports, so they would become one VLAN-aware bridge")
            if snoops(bridge) != snoops(first):
                return (f"{at(first)} and {at(bridge)} differ in bridge-mcsnoop; they "
                        f"share lower ports, so they would become one VLAN-aware bridge")
            clash = by_vid.setdefault(cand.vid, bridge)
            if clash is not bridge:
                return (f"VLAN {cand.vid} is bridged by both {at(clash)} and {at(bridge)}; one "
                        f"VLAN-aware bridge would join the two")
        return None

    def _lower_group(self, group: list[Candidate]) -> None:
        first = group[0].bridge
        netns = first.netns
        why = self._group_problem(group)
        vids: dict[Key, list[int]] = {}
        vxlans: list[tuple[ConfigObject, int, ConfigObject]] = []
        subs = 0
        for cand in group:
            vid = cand.vid
            for p in cand.lowers:
                held = vids.get(p)
                if held is None:
                    vids[p] = [vid]
                else:
                    held.append(vid)
            subs += len(cand.subs)
            if cand.vxlan is not None:
                vxlans.append((cand.vxlan, cand.vid, cand.bridge))
        name = self._name(netns, "vbr", take=False)
        merges, kept, merge_refusals = self._plan_merges(vxlans, name)
        nports = len(vids) + len(kept) + len(merges)
        if why is None and nports > MAX_PORTS:
            why = (f"the VLAN-aware bridge would have {nports} ports; a Linux bridge holds at "
                   f"most {MAX_PORTS}")
        if why is not None:
            for cand in group:
                self._refuse(cand.bridge, why)
            return
        self.refusals.extend(merge_refusals)
        self._name(netns, "vbr")
        bridge_key = (netns, name)
        # Ports: lower devices in the order the bridges list them, then vxlans.
        port_names = [p[1] for p in vids]
        for p, vlist in vids.items():
            obj = self.ifaces[p]
            self.replaced[p] = with_attrs(obj, {"bridge-vids": ranges(vlist)},
                                          first.where("bridge-ports"))
            self.new_masters[p] = bridge_key
        merged_at = {m.members[0][0].key: m for m in merges}
        merged = {x.key for m in merges for x, _ in m.members}
        for vxlan, vid, _ in vxlans:
            if vxlan.key in merged_at:
                merge = merged_at[vxlan.key]
                merge.name = self._name(netns, "vxlan")
                port_names.append(merge.name)
            elif vxlan.key not in merged:
                port_names.append(vxlan.name)
                self.replaced[vxlan.key] = with_attrs(vxlan, {"bridge-access": vid},
                                                      first.where("bridge-ports"))
                self.new_masters[vxlan.key] = bridge_key
        snooping = snoops(first)
        # No default PVID: untagged frames on a lower port were not bridged
        # before and must not be now (point 2 of the module docstring).
        attrs: dict[str, Any] = {"bridge-vlan-aware": True, "bridge-ports": port_names,
                                 "bridge-vlan-default-pvid": 0,
                                 "bridge-stp": False, "bridge-mcsnoop": snooping}
        if snooping:
            attrs["bridge-mcast-vlan-snooping"] = True  # per-VLAN state, as before
        ageing = next((c.bridge.attrs["bridge-ageing"] for c in group
                       if "bridge-ageing" in c.bridge.attrs), None)
        if ageing is not None:
            attrs["bridge-ageing"] = ageing
        vbr = ConfigObject(IFACE, name, "bridge", netns=netns, attrs=attrs,
                           locs={a: first.where(a) for a in attrs}, loc=first.loc,
                           auto=first.auto)
        for cand in group:
            self.removed.add(cand.bridge.key)
            self.removed.update(cand.sub_keys)
        self.added.append(vbr)
        all_vids = sorted({c.vid for c in group})
        port_vlans = sum(len(v) for v in vids.values())
        before = (len(group) * kind_bytes("bridge")
                  + subs * (kind_bytes("vlan") + BRIDGE_PORT_BYTES))
        after = (kind_bytes("bridge") + len(vids) * BRIDGE_PORT_BYTES
                 + (port_vlans + len(all_vids) + len(kept)) * BRIDGE_VLAN_BYTES)
        self.lowered.append(Lowered(
            first.loc, netns, name, "bridge", tuple(c.bridge.name for c in group), subs,
            tuple(port_names), tuple(ranges(all_vids)),
            netdevs_removed=len(group) + subs, netdevs_added=1, bytes_saved=before - after))
        for merge in merges:
            self._apply_merge(merge, vbr, lowered_bridge=True)
