"""Lowering's entry point, ``lower()``: one run indexes who names whom, runs
the two rewrites (bridges.py, vxlans.py) and assembles the new model."""

from __future__ import annotations

from itertools import chain, repeat

from netcfg.kinds import registry
from netcfg.kinds.base import PEER
from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.plan.lower.bridges import BridgeRewrite
from netcfg.plan.lower.common import BRIDGE_KEEPS, VLAN_KEEPS, Key, at, without
from netcfg.plan.lower.report import Lowered, LoweringReport, Refusal
from netcfg.plan.lower.vxlans import VxlanRewrite


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


class _Lowering(BridgeRewrite, VxlanRewrite):
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
        self.refusals.append(Refusal(obj.loc, f"{what or at(obj)} not lowered: {why}"))

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
                if attrs.keys() <= VLAN_KEEPS and "vlan-raw-device" in attrs:
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
                if attrs.keys() <= BRIDGE_KEEPS.keys() and not attrs.get("bridge-vlan-aware"):
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

    # ------------------------------------------------------------ result

    def _assemble(self) -> Model:
        """The new model: replacements in place, new objects at the end."""
        model, removed = self.model, self.removed
        interfaces = without(model.interfaces, removed)
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
