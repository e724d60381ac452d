"""Lightweight lowering: the same forwarding with far fewer kernel devices.

Two rewrites of the desired model, before it is diffed against the kernel:

* Per-VLAN bridges (``brV`` with ports ``swp1.V swp2.V ...`` and no L3 of
  their own) become one VLAN-aware bridge ``vbrN`` whose ports are the lower
  devices ``swp1 swp2 ...``, each with ``bridge-vids`` = the VLANs it carried.
  A per-VNI vxlan in such a bridge becomes an access port (``bridge-access V``)
  of ``vbrN``.
* Per-VNI vxlans that are access ports of one VLAN-aware bridge and share
  their tunnel settings become one ``vxlan-vnifilter`` device ``vxlanN`` with
  ``bridge-vlan-vni-map V=N`` (kernel ``external vnifilter`` + vlan_tunnel).

For 4094 VLANs on 48 ports that is one bridge instead of 4094 bridges and
196,512 VLAN devices: ~200k fewer netdevs and some 27 GB of kernel memory
(figures from DESIGN.md, "Kernel edge").

Why it is exact (what a frame sees is the same before and after):

1. Per-VLAN, a frame tagged V on P reaches P.V (the vlan device takes it
   before anything else), then bridge brV, whose ports are exactly the P.V.
   VLAN-aware, it reaches vbr with ingress filtering on: allowed iff V is in
   P's bridge-vids, i.e. iff P.V existed. Forwarding, flooding and learning
   are per (MAC, VLAN) in vbr and per bridge before: the same domains, since
   each VLAN is bridged by one bridge of a group (checked). Egress re-tags
   with V exactly as P.V did; the vids are tagged, never untagged.
2. Untagged frames on P and tagged frames of VLANs nobody took were not
   bridged before (P has no address, master or other user, all checked)
   and are dropped by vbr's filter after: the bridge kind creates it with
   default_pvid 0, and no pvid is written. A VLAN subinterface of P that is
   not lowered (its bridge was refused, or it is routed) keeps its frames:
   the kernel hands a tagged frame to the VLAN device of its VID
   (vlan_do_receive) before the bridge's rx_handler sees it, and sending
   through it does not involve the bridge; and its VID is not among vbr's
   VLANs on P, since a device has one subinterface per VID.
3. Bridge-wide behaviour that a per-VLAN bridge had per VLAN is refused, not
   approximated: STP (one tree for all VLANs), L3 config (it would need a
   VLAN interface), admin state, MTU, MAC and any other per-bridge
   attribute. IGMP/MLD snooping is kept per VLAN: a snooping group becomes a
   bridge with mcast_vlan_snooping, which gives each VLAN its own querier and
   router-port state, as each per-VLAN bridge had. Ageing and snooping are
   bridge-wide settings, so a group must agree on them.
4. A per-VNI vxlan carried untagged frames of the bridge's one VLAN V: as an
   access port of V, or as VNI N in a vnifilter device whose tunnel map says
   V=N, it carries the same frames with the same VNI. Merged vxlans must
   agree on every device attribute (local address, port, learning, MTU) and
   have no remote: per-VNI head-end replication would need per-VNI FDB
   entries, which lowering does not write.
5. Lowering removes only what nothing else names: an object named by
   anything that stays (a route's dev, a macvlan, a bond, another bridge),
   or declared in a file marked ``# netcfg: lower=off``, stops it, and the
   plan says so (a Refusal with file:line).

Not covered, on purpose: what the kernel itself sends from and answers on
the per-VLAN bridges' and the lower ports' IPv6 link-local addresses (DAD,
router solicitations, MLD reports). netcfg configured none of it, and a
bridge or lower port with any address is refused.

References are found through each kind's ``references`` hook (registry),
except for the plain bridges and VLANs indexed directly (see _index);
device sizes are the kinds' kernel_bytes.
"""

from __future__ import annotations

import re
from itertools import chain, repeat
from typing import Any, Iterable

from netcfg.kinds import registry
from netcfg.kinds.base import PEER
from netcfg.kinds.bridge import MAX_PORTS
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.plan.lower_report import Lowered, LoweringReport, Refusal

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
_BRIDGE_KEEPS = {"bridge-ports": None, "bridge-vlan-aware": True, "bridge-stp": True,
                 "bridge-mcsnoop": None, "bridge-ageing": None, "link-down": True}
_L3 = {"address": "an address", "gateway": "a gateway", "route": "a route"}
_VLAN_KEEPS = frozenset({"vlan-raw-device", "vlan-id", "vlan-protocol", "vlan-raw-netns"})
_VLAN_PLAIN = frozenset({"vlan-raw-device", "vlan-id"})
# Device attributes merged vxlans must share; everything else refuses.
_VXLAN_SHARED = ("vxlan-local-tunnelip", "vxlan-port", "vxlan-learning", "mtu",
                 "bridge-learning")
_VXLAN_PER_VNI = frozenset({"vxlan-id", "bridge-access"})
_PORT_ATTRS = ("bridge-vids", "bridge-pvid", "bridge-access", "bridge-learning")
# Kinds the kernel will not enslave to a bridge.
_NOT_PORTS = frozenset({"bridge", "loopback", "vrf"})

Key = tuple[str, str]


# ---------------------------------------------------------------- entry point

def lower(model: Model, enabled: bool = True) -> tuple[Model, LoweringReport]:
    """The model with per-VLAN bridges and per-VNI vxlans lowered, and a report.

    Pure: ``model`` is not changed. The result shares every object lowering
    did not touch; it is ``model`` itself when nothing was lowered.
    """
    count = len(model.interfaces)
    if not enabled:
        return model, LoweringReport(netdevs_before=count, netdevs_after=count)
    return _Lowering(model).run()


class _Candidate:
    """A per-VLAN bridge that passed its own checks.

    ``subs``, ``sub_keys`` and ``lowers`` are parallel: subinterface P.V, its
    key, and the key of P.
    """

    __slots__ = ("bridge", "vid", "subs", "sub_keys", "lowers", "vxlan", "order")

    def __init__(self, bridge: ConfigObject, vid: int, subs: list[ConfigObject],
                 sub_keys: list[Key], lowers: list[Key], vxlan: ConfigObject | None):
        self.bridge = bridge
        self.vid = vid
        self.subs = subs
        self.sub_keys = sub_keys
        self.lowers = lowers
        self.vxlan = vxlan
        self.order = (bridge.netns != "", bridge.netns, _natural(bridge.name))


class _Merge:
    """Per-VNI vxlans of one bridge that become one vnifilter vxlan."""

    __slots__ = ("members", "name")

    def __init__(self, members: list[tuple[ConfigObject, int]]):
        self.members = members                 # (vxlan, VLAN), in port order
        self.name = ""


class _Lowering:
    """One run of lower(): indexes, then decisions, then the new model."""

    def __init__(self, model: Model):
        self.model = model
        self.ifaces = model.interfaces
        self.off = model.lower_off_files
        self.refusals: list[Refusal] = []
        self.lowered: list[Lowered] = []
        self.removed: set[Key] = set()
        self.replaced: dict[Key, ConfigObject] = {}
        self.added: list[ConfigObject] = []
        self.new_masters: dict[Key, Key] = {}
        self.taken: set[Key] = set()
        self.users: dict[Key, list[Key]] = {}       # lower port -> candidates on it
        # Who names whom (see _index).
        self.named: dict[Key, list[tuple[ConfigObject, str]]] = {}  # (referrer, attribute)
        self.listed_by: dict[Key, ConfigObject] = {}    # port -> plain bridge listing it
        self.vlans_on: dict[Key, list[ConfigObject]] = {}   # device -> its plain VLANs
        self.port_keys: dict[Key, list[Key]] = {}       # plain bridge -> its ports' keys
        self.bridges: list[ConfigObject] = []
        self._index()

    def run(self) -> tuple[Model, LoweringReport]:
        self._lower_bridges()
        self._merge_existing_vxlans()
        before = len(self.ifaces)
        self.refusals.sort(key=lambda r: (r.loc.file, r.loc.line))
        if not self.lowered:
            return self.model, LoweringReport([], self.refusals, before, before, 0)
        new = self._assemble()
        report = LoweringReport(self.lowered, self.refusals, before, len(new.interfaces),
                                sum(item.bytes_saved for item in self.lowered))
        return new, report

    # ------------------------------------------------------------ helpers

    def _refuse(self, obj: ConfigObject, why: str, what: str = "") -> None:
        self.refusals.append(Refusal(obj.loc, f"{what or _at(obj)} not lowered: {why}"))

    def _off(self, obj: ConfigObject) -> bool:
        return obj.loc.file in self.off

    def _index(self) -> None:
        """One pass over the model: what names each interface.

        Plain per-VLAN bridges and plain VLAN subinterfaces, those with only
        attributes lowering reads itself, are indexed directly: such a bridge
        names its bridge-ports (listed_by), such a VLAN its vlan-raw-device
        (vlans_on); their kinds' hooks could say no more. Skipping the hooks
        for the ~200k of them is what keeps lowering fast. Everything else goes
        through its kind's and traits' references hooks (named).
        """
        named, listed_by, vlans_on = self.named, self.listed_by, self.vlans_on
        port_keys, bridges = self.port_keys, self.bridges
        hooked: list[ConfigObject] = []
        for obj in self.ifaces.values():
            kind = obj.kind
            if kind == "vlan":
                attrs = obj.attrs
                if attrs.keys() <= _VLAN_KEEPS and "vlan-raw-device" in attrs:
                    raw = (attrs.get("vlan-raw-netns", obj.netns), attrs["vlan-raw-device"])
                    vlans = vlans_on.get(raw)
                    if vlans is None:
                        vlans_on[raw] = [obj]
                    else:
                        vlans.append(obj)
                    continue
            elif kind == "bridge":
                bridges.append(obj)
                attrs = obj.attrs
                if attrs.keys() <= _BRIDGE_KEEPS.keys() and not attrs.get("bridge-vlan-aware"):
                    netns = obj.netns
                    keys = [(netns, name) for name in attrs.get("bridge-ports") or ()]
                    port_keys[obj.key] = keys
                    if listed_by.keys().isdisjoint(keys):
                        listed_by.update(zip(keys, repeat(obj)))
                        continue
                    for key in keys:
                        if key in listed_by:
                            named.setdefault(key, []).append((obj, "bridge-ports"))
                        else:
                            listed_by[key] = obj
                    continue
            hooked.append(obj)
        model = self.model
        hooked.extend(chain(model.namespaces.values(), model.volumes.values(),
                            model.targets.values()))
        hooks: dict[str, list] = {}
        interfaces = self.ifaces
        for obj in hooked:
            kind_hooks = hooks.get(obj.kind)
            if kind_hooks is None:
                try:
                    kind_hooks = [h.references for h in registry.hooks_for(obj.kind)]
                except KeyError:
                    kind_hooks = []
                hooks[obj.kind] = kind_hooks
            for references in kind_hooks:
                for ref in references(obj):
                    if ref.section != IFACE or ref.role == PEER:
                        continue  # a veth peer does not stop its other end being a port
                    key = (ref.netns, ref.name)
                    if key in interfaces and (obj.section != IFACE or key != obj.key):
                        named.setdefault(key, []).append((obj, ref.attribute))

    def _others(self, obj: ConfigObject, allowed: ConfigObject | None) -> tuple | None:
        """The first (referrer, attribute) naming obj, other than ``allowed``."""
        key = obj.key
        for referrer, attribute in self.named.get(key, ()):
            if referrer is not allowed:
                return referrer, attribute
        lister = self.listed_by.get(key)
        if lister is not None and lister is not allowed:
            return lister, "bridge-ports"
        vlans = self.vlans_on.get(key)
        if vlans:
            return vlans[0], "vlan-raw-device"
        master = self.model.masters.get(key)
        if master is not None and (allowed is None or master != allowed.key):
            if master in self.ifaces:
                return self.ifaces[master], "master"
        return None

    def _name(self, netns: str, stem: str, take: bool = True) -> str:
        """First ``stemN`` no interface of the namespace uses (nor one made here)."""
        n = 0
        while (netns, f"{stem}{n}") in self.ifaces or (netns, f"{stem}{n}") in self.taken:
            n += 1
        if take:
            self.taken.add((netns, f"{stem}{n}"))
        return f"{stem}{n}"

    # ------------------------------------------------------------ bridges

    def _lower_bridges(self) -> None:
        candidates: dict[Key, _Candidate] = {}
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

    def _check_bridge(self, bridge: ConfigObject) -> _Candidate | str | None:
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
                if (not unnamed or attrs.keys() != _VLAN_PLAIN
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
        return _Candidate(bridge, vid, subs, sub_keys, lowers, vxlan)

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
            return _named_by(*other, "it")
        return None

    def _bridge_attribute_problem(self, bridge: ConfigObject) -> str | None:
        for attribute, value in bridge.attrs.items():
            if attribute in _BRIDGE_KEEPS:
                refusing = _BRIDGE_KEEPS[attribute]
                if refusing is None or bool(value) != refusing:
                    continue
            loc = bridge.where(attribute)
            first = self._first_vlan(bridge)
            vid = first.attrs.get("vlan-id") if first is not None else None
            vlan = f"VLAN {vid}" if vid is not None else "its VLAN"
            if attribute in _L3:
                return (f"it has {_L3[attribute]} ({loc}); on a VLAN-aware bridge that would "
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
            return _named_by(*other, f"its port {port.name}")
        if port.auto and not bridge.auto:
            return (f"it is not auto, but its port {port.name} ({port.loc}) is; a VLAN-aware "
                    f"bridge cannot leave one VLAN down")
        return None

    def _sub_problem(self, bridge: ConfigObject, sub: ConfigObject) -> str | None:
        for attribute, value in sub.attrs.items():
            if attribute in _VLAN_KEEPS:
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

    def _fixpoint(self, candidates: dict[Key, _Candidate]) -> set[Key]:
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
                            candidates: dict[Key, _Candidate]) -> str | None:
        """Why lower device P cannot become a port of a VLAN-aware bridge."""
        obj = self.ifaces.get(p)
        if obj is None:
            return "is not declared"
        if self._off(obj):
            return f"is declared in {obj.loc.file}, which says {LOWER_OFF}"
        if obj.kind in _NOT_PORTS:
            return f"is a {obj.kind}, which cannot be a bridge port"
        for attribute, value in obj.attrs.items():
            if attribute in _L3 or attribute == "vrf":
                what = _L3.get(attribute) or f"vrf {value}"
                return (f"has {what} ({obj.where(attribute)}), which would stop working once "
                        f"it is a port of a VLAN-aware bridge")
            if attribute in _PORT_ATTRS:
                return (f"sets {attribute} ({obj.where(attribute)}); lowering would give it "
                        f"bridge-vids of its own")
        for referrer, attribute in self.named.get(p, ()):
            if referrer.kind == "vlan" and attribute == "vlan-raw-device":
                continue  # a VLAN of P that stays: it keeps its frames (docstring, 2)
            return _named_by(referrer, attribute, "").lstrip()
        lister = self.listed_by.get(p)
        if lister is not None:
            return _named_by(lister, "bridge-ports", "").lstrip()
        master = self.model.masters.get(p)
        if master is not None:
            return f"is already enslaved to {master[1]}"
        return None

    def _groups(self, candidates: dict[Key, _Candidate],
                alive: set[Key]) -> Iterable[list[_Candidate]]:
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

    def _group_problem(self, group: list[_Candidate]) -> str | None:
        first = group[0].bridge
        by_vid: dict[int, ConfigObject] = {}
        for cand in group:
            bridge = cand.bridge
            if bridge.auto != first.auto:
                auto, other = (first, bridge) if first.auto else (bridge, first)
                return (f"{_at(auto)} is auto and {_at(other)} is not; they share lower ports, "
                        f"so they would become one VLAN-aware bridge")
            ageing = bridge.attrs.get("bridge-ageing", DEFAULT_AGEING)
            if ageing != first.attrs.get("bridge-ageing", DEFAULT_AGEING):
                return (f"{_at(first)} and {_at(bridge)} have different bridge-ageing; they "
                        f"share lower ports, so they would become one VLAN-aware bridge")
            if _snoops(bridge) != _snoops(first):
                return (f"{_at(first)} and {_at(bridge)} differ in bridge-mcsnoop; they "
                        f"share lower ports, so they would become one VLAN-aware bridge")
            clash = by_vid.setdefault(cand.vid, bridge)
            if clash is not bridge:
                return (f"VLAN {cand.vid} is bridged by both {_at(clash)} and {_at(bridge)}; one "
                        f"VLAN-aware bridge would join the two")
        return None

    def _lower_group(self, group: list[_Candidate]) -> None:
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
            self.replaced[p] = _with(obj, {"bridge-vids": _ranges(vlist)},
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
                self.replaced[vxlan.key] = _with(vxlan, {"bridge-access": vid},
                                                 first.where("bridge-ports"))
                self.new_masters[vxlan.key] = bridge_key
        snooping = _snoops(first)
        attrs: dict[str, Any] = {"bridge-vlan-aware": True, "bridge-ports": port_names,
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
        before = (len(group) * _kind_bytes("bridge")
                  + subs * (_kind_bytes("vlan") + BRIDGE_PORT_BYTES))
        after = (_kind_bytes("bridge") + len(vids) * BRIDGE_PORT_BYTES
                 + (port_vlans + len(all_vids) + len(kept)) * BRIDGE_VLAN_BYTES)
        self.lowered.append(Lowered(
            first.loc, netns, name, "bridge", tuple(c.bridge.name for c in group), subs,
            tuple(port_names), tuple(_ranges(all_vids)),
            netdevs_removed=len(group) + subs, netdevs_added=1, bytes_saved=before - after))
        for merge in merges:
            self._apply_merge(merge, vbr, lowered_bridge=True)

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
            what = f"vxlan ports of {_at(bridge)}"
            if self._off(bridge):
                self._refuse(bridge, f"{bridge.name} is declared in {bridge.loc.file}, which "
                                     f"says {LOWER_OFF}", what)
                continue
            if bridge.attrs.get("bridge-stp"):
                self._refuse(bridge, f"{bridge.name} runs STP (bridge-stp yes, "
                                     f"{bridge.where('bridge-stp')}), which treats each of them "
                                     f"as a port of its own", what)
                continue
            if _snoops(bridge) and not bridge.attrs.get("bridge-mcast-vlan-snooping"):
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
            self.replaced[bridge.key] = _with(bridge, {"bridge-ports": new_ports})
            for merge in merges:
                self._apply_merge(merge, bridge, lowered_bridge=False)

    def _plan_merges(self, items: list[tuple[ConfigObject, int, ConfigObject]],
                     into: str) -> tuple[list[_Merge], list[ConfigObject], list[Refusal]]:
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
            refusals.append(Refusal(vxlan.loc, f"{_at(vxlan)} not lowered: {why}; it stays "
                                               f"an access port of {into}"))

        for vxlan, vid, bridge in items:
            why = self._vxlan_problem(vxlan, bridge)
            if why:
                keep(vxlan, why)
                continue
            shared = tuple((a, repr(vxlan.attrs.get(a))) for a in _VXLAN_SHARED)
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
                merges.append(_Merge(unique))
            elif unique and len(groups) > 1:
                keep(unique[0][0], "no other vxlan port has the same "
                                   + ", ".join(_VXLAN_SHARED) + " and auto")
            else:
                kept.extend(x for x, _ in unique)
        return merges, kept, refusals

    def _vxlan_problem(self, vxlan: ConfigObject, bridge: ConfigObject) -> str | None:
        if self._off(vxlan):
            return f"it is declared in {vxlan.loc.file}, which says {LOWER_OFF}"
        for attribute in vxlan.attrs:
            if attribute in _VXLAN_PER_VNI or attribute in _VXLAN_SHARED:
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
            return _named_by(*other, "it")
        return None

    def _apply_merge(self, merge: _Merge, bridge: ConfigObject, lowered_bridge: bool) -> None:
        """Record the vnifilter vxlan that replaces the merge in ``bridge``."""
        first = merge.members[0][0]
        netns = first.netns
        pairs = sorted((vid, x.attrs["vxlan-id"]) for x, vid in merge.members)
        attrs: dict[str, Any] = {a: first.attrs[a] for a in _VXLAN_SHARED if a in first.attrs}
        attrs["vxlan-vnifilter"] = True
        attrs["bridge-vids"] = _ranges(v for v, _ in pairs)
        attrs["bridge-vlan-vni-map"] = _map_ranges(pairs)
        locs = {a: first.where(a) for a in attrs}
        vxlan = ConfigObject(IFACE, merge.name, "vxlan", netns=netns, attrs=attrs, locs=locs,
                             loc=first.loc, auto=first.auto)
        for x, _ in merge.members:
            self.removed.add(x.key)
            self.replaced.pop(x.key, None)
        self.added.append(vxlan)
        self.new_masters[(netns, merge.name)] = bridge.key
        k = len(merge.members)
        port = _kind_bytes("vxlan") + BRIDGE_PORT_BYTES
        # Access ports of a per-VLAN bridge had no VLAN entries; of a
        # VLAN-aware one, one each, as the vnifilter port has per VNI.
        before = k * port + (0 if lowered_bridge else k * BRIDGE_VLAN_BYTES)
        after = port + k * (VNI_BYTES + BRIDGE_VLAN_BYTES)
        self.lowered.append(Lowered(
            first.loc, netns, merge.name, "vxlan", tuple(x.name for x, _ in merge.members),
            vni_map=tuple(attrs["bridge-vlan-vni-map"]), bridge=bridge.name,
            netdevs_removed=k, netdevs_added=1, bytes_saved=before - after))

    # ------------------------------------------------------------ result

    def _assemble(self) -> Model:
        """The new model: replacements in place, new objects at the end."""
        model, removed = self.model, self.removed
        interfaces = _without(model.interfaces, removed)
        interfaces.update(self.replaced)
        for obj in self.added:
            interfaces[obj.key] = obj
        # An index, not a listing: its order does not matter, so the set
        # difference can run in C.
        masters = model.masters
        masters = {key: masters[key] for key in masters.keys() - removed}
        masters.update(self.new_masters)
        return Model(interfaces=interfaces, namespaces=dict(model.namespaces),
                     volumes=dict(model.volumes), targets=dict(model.targets),
                     lower_off_files=set(model.lower_off_files), masters=masters)


def _without(d: dict, removed: set) -> dict:
    """A copy of d without the keys in removed, in d's order; whichever way
    loops in Python over fewer keys (4094x48 removes ~all of them)."""
    if len(removed) * 4 < len(d):
        out = dict(d)
        for key in removed:
            out.pop(key, None)
        return out
    return {k: v for k, v in d.items() if k not in removed}


# ---------------------------------------------------------------- small helpers

def _at(obj: ConfigObject) -> str:
    """``br7 (f:3)``, ``br7 (netns t1, f:3)``."""
    netns = f"netns {obj.netns}, " if obj.netns else ""
    return f"{obj.name} ({netns}{obj.loc})"


def _named_by(referrer: ConfigObject, attribute: str, subject: str) -> str:
    if attribute == "master":
        return f"{subject} is enslaved to {referrer.name} ({referrer.loc})"
    return f"{subject} is named by {referrer.name} in {attribute} ({referrer.where(attribute)})"


def _snoops(bridge: ConfigObject) -> bool:
    """IGMP/MLD snooping is on unless written off (the kernel's default)."""
    return bool(bridge.attrs.get("bridge-mcsnoop", True))


def _with(obj: ConfigObject, attrs: dict[str, Any],
          loc: SourceLocation | None = None) -> ConfigObject:
    """A copy of obj with some attributes set; obj itself is not changed."""
    locs = dict(obj.locs)
    for attribute in attrs:
        locs[attribute] = loc or obj.where(attribute)
    return ConfigObject(obj.section, obj.name, obj.kind, obj.netns, {**obj.attrs, **attrs},
                        locs, obj.loc, obj.auto, obj.implicit)


def _kind_bytes(kind: str) -> int:
    return registry.kind(kind).kernel_bytes


def _ranges(ids: Iterable[int]) -> list[str]:
    """``[7, 1, 2, 3]`` -> ``["1-3", "7"]``."""
    runs: list[list[int]] = []
    for i in sorted(set(ids)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [f"{a}-{b}" if a != b else str(a) for a, b in runs]


def _map_ranges(pairs: list[tuple[int, int]]) -> list[str]:
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


def _natural(name: str) -> tuple:
    """Sort key: br2 before br10."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(name))
