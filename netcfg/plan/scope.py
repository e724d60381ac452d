"""What one run compares and changes, worked out from values alone: the
managed view of current state, a Selection of interfaces or namespaces and
what they reach, what a purge namespace should hold, what `down` leaves, and
which link-dels go as one delete by group. netcfg.apply.execute reads the
kernel and writes the plan; everything here is pure and tested without one.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping

from netcfg.kinds import registry
from netcfg.kinds.base import LOWER, PEER, PORT, REQUIRES, SLAVE
from netcfg.kinds.veth import PEER_NAME, PEER_NETNS
from netcfg.model.errors import (EXIT_INVALID_CONFIG, NetcfgError, UsageError, did_you_mean,
                                 quote)
from netcfg.model.model import IFACE, ROOT_NETNS, ConfigObject, Model
from netcfg.model.tags import NETCFG_GROUP
from netcfg.plan.addresses import dhcp_owned
from netcfg.plan.diff import PEER_NETNS_PARAM, PEER_PARAM, immutable_changes
from netcfg.plan.ops import LINK_DEL, Operation
from netcfg.plan.planner import Plan
from netcfg.plan.vrrp import ifupdown2_vrrp

Key = tuple[str, str]


class ForeignPortsRefused(NetcfgError):
    """apply without --force of a change that re-creates a bridge with ports
    netcfg does not manage on it (issue 24). Nothing was written (exit 1)."""

    exit_code = EXIT_INVALID_CONFIG

# What a device the config does not declare loses in a purge namespace, when
# netcfg cannot delete it (physical, lo, a kind it does not know).
PURGED_ATTRIBUTES = ("address", "route", "vrf")

# Devices a hypervisor plugs at run time with plain ip/bridge, never through
# the file: Proxmox VE's VM taps, container veths, the firewall's bridge and
# veth pair (fwbr/fwln/fwpr; fwlnNoM on OVS), VLAN bridges vmbrXvY (pve-common
# PVE/Network.pm). Not netcfg's to delete, re-master, down or re-tag, even in
# a purge namespace; nor is what sits on them (the PORT.TAG VLAN of vmbrXvY).
GUEST_NAMES = re.compile(r"(tap|veth|fwbr|fwln)\d+i\d+|fwpr\d+p\d+|fwln\d+o\d+|vmbr\d+v\d+")
# A bridge's pattern of ports netcfg must not remove (ifupdown2's attribute;
# Proxmox's default ^(tap|veth|fwpr)), matched from the start of the name.
CONDONE_REGEX = "bridge-ports-condone-regex"
BRIDGE_PORTS = "bridge-ports"


def managed_view(desired: Model, current: Model, managed: Mapping[str, Collection[str]],
                 namespaces: list[str], purge: Collection[str] = (),
                 ifindex: Mapping[str, Mapping[str, int]] | None = None) -> Model:
    """The part of current state netcfg compares against: the namespaces this
    config uses, what the config names, and devices netcfg created (tagged
    with its group); in ``purge`` namespaces, every device. Devices and
    namespaces nobody configured are left alone elsewhere. With ``ifindex``
    (each namespace's names to ifindexes, as read), the config also names
    ifupdown2's macvlans for its `vrrp` lines (plan/vrrp.py): in the view,
    not desired, so the diff deletes them."""
    wanted = set(namespaces)
    view = Model(namespaces={n: o for n, o in current.namespaces.items() if n in wanted})
    guests = guest_devices(desired, current, managed, purge) if purge else set()
    ifupdown2s = ifupdown2_vrrp(desired, current, ifindex, managed) if ifindex else {}
    for key, obj in current.interfaces.items():
        netns, name = key
        if (key in desired.interfaces or name in managed.get(netns, ()) or key in ifupdown2s
                or (netns in purge and key not in guests)):
            view.interfaces[key] = obj
    view.masters = {k: m for k, m in current.masters.items() if k in view.interfaces}
    view.bridge_vlans = {k: v for k, v in current.bridge_vlans.items() if k in view.interfaces}
    return view

@dataclass(frozen=True)
class Selection:
    """Part of a config to apply: interfaces by name (in every namespace, or
    only in ``namespaces``), or whole namespaces. Each interface brings what
    it is connected to, transitively: its veth peer, lower device, master,
    ports, and the devices its routes name."""

    interfaces: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    # Namespaces whose objects this run must not change though the selection
    # reaches them (netcfgd: those with `policy report`).
    frozen: tuple[str, ...] = ()
    # Regular expressions searched in interface names (ifupdown2's `-X`):
    # interfaces that match are neither compared nor changed, in any
    # namespace, unless one that is applied needs them (left_alone()). With
    # no interfaces nor namespaces, the rest of the config is selected.
    excluded: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.interfaces or self.namespaces or self.excluded)

    def keys(self, target: Model, current: Model) -> set[Key]:
        known = target.interfaces.keys() | current.interfaces.keys()
        namespaces = set(target.netns_names()) | set(current.namespaces)
        for netns in self.namespaces:
            if netns not in namespaces:
                raise UsageError(f"--netns {netns}: the config uses no such namespace"
                                 + did_you_mean(netns, namespaces - {ROOT_NETNS}))
        picked = {k for k in known if (k[1] in self.interfaces if self.interfaces else True)
                  and (k[0] in self.namespaces if self.namespaces else True)}
        for name in self.interfaces:
            if not any(k[1] == name for k in picked):
                where = f" in netns {', '.join(self.namespaces)}" if self.namespaces else ""
                raise UsageError(f"no interface {quote(name)}{where} in the config or made by "
                                 f"netcfg" + did_you_mean(name, {k[1] for k in known}))
        alone = self.left_alone(target, current, picked)
        reached = connected(picked - alone, (target, current), avoid=alone)
        return {k for k in reached if k[0] not in self.frozen} if self.frozen else reached

    def matches(self, target: Model, current: Model) -> set[Key]:
        """Keys of ``target`` and ``current`` whose name an ``excluded`` pattern matches."""
        patterns = [re.compile(p) for p in self.excluded]
        return {k for k in target.interfaces.keys() | current.interfaces.keys()
                if any(p.search(k[1]) for p in patterns)}

    def left_alone(self, target: Model, current: Model,
                   picked: Collection[Key] | None = None) -> set[Key]:
        """The excluded keys (matches()) that no applied interface of
        ``picked`` (default: every declared one) needs, through the
        interfaces it needs: as ifupdown2 keeps an excluded interface that
        is a dependency of one it brings up (a port of its bridge, the
        lower device of its VLAN), and drops one only an excluded
        interface needs (needed_excluded() names the kept ones)."""
        if not self.excluded:
            return set()
        out = self.matches(target, current)
        return out - needed_excluded(target, out, target.interfaces.keys()
                                     if picked is None else picked)

    def cut(self, model: Model, keys: set[Key]) -> Model:
        namespaces = {k[0] for k in keys} | set(self.namespaces)
        return dataclasses.replace(
            model, interfaces={k: o for k, o in model.interfaces.items() if k in keys},
            namespaces={n: o for n, o in model.namespaces.items() if n in namespaces},
            masters={k: m for k, m in model.masters.items() if k in keys and m in keys})


def references(obj: ConfigObject, roles: Collection[str] | None = None) -> list[Key]:
    """Interfaces ``obj`` names (through its kind's and traits' hooks), in
    any role or in ``roles``."""
    try:
        hooks = registry.hooks_for(obj.kind)
    except KeyError:
        return []
    return [(r.netns, r.name) for hook in hooks for r in hook.references(obj)
            if r.section == IFACE and (roles is None or r.role in roles)]


# What an interface needs to be up: its lower device, ports, slaves, veth
# peer, what ifupdown-ng's `requires` names.
NEEDS = (LOWER, PEER, PORT, SLAVE, REQUIRES)


def needed_excluded(target: Model, excluded: set[Key], picked: Iterable[Key]) -> set[Key]:
    """Those of ``excluded`` that an interface of ``picked`` not excluded
    needs (NEEDS), directly or through what it needs."""
    todo = [k for k in picked if k not in excluded]
    seen, needed = set(todo), set()
    while todo:
        obj = target.interfaces.get(todo.pop())
        for ref in references(obj, NEEDS) if obj is not None else ():
            if ref in excluded:
                needed.add(ref)
            if ref not in seen:
                seen.add(ref)
                todo.append(ref)
    return needed


def connected(keys: set[Key], models: Iterable[Model], avoid: Collection[Key] = ()) -> set[Key]:
    """``keys`` and what they are connected to, transitively; never into ``avoid``."""
    models = list(models)
    out, todo = set(keys), list(keys)
    while todo:
        key = todo.pop()
        for model in models:
            obj = model.interfaces.get(key)
            near = references(obj) if obj is not None else []
            if key in model.masters:
                near.append(model.masters[key])
            for other in near:
                if other not in out and other not in avoid:
                    out.add(other)
                    todo.append(other)
    return out

def purge_target(target: Model, current: Model, purge: Collection[str],
                 kernel_kinds: Mapping[Key, str], force: bool = False) -> tuple[Model, list[str]]:
    """What purge namespaces should hold: what the config declares, plus the
    devices netcfg never deletes (physical ones, ``lo``, kinds it does not
    know) as they are, without addresses, routes or a master the config does
    not give them. Undeclared devices of kinds netcfg creates are absent, so
    the diff deletes them. Notes say what was left and why. In every
    namespace, a bridge with ports netcfg does not manage is kept
    (keep_guest_bridges; ``force``: apply --force, re-created anyway)."""
    target, notes = keep_guest_bridges(target, current, force=force)
    kept: dict[Key, ConfigObject] = {}
    for key, cur in current.interfaces.items():
        if key[0] not in purge or key in target.interfaces:
            continue
        outside = peer_outside(cur, purge)
        if creatable(cur.kind) and outside is None:
            continue
        attrs = {a: v for a, v in cur.attrs.items() if a not in PURGED_ATTRIBUTES}
        kept[key] = ConfigObject(section=cur.section, name=cur.name, kind=cur.kind,
                                 netns=cur.netns, attrs=attrs, loc=cur.loc, auto=cur.auto)
        if outside is not None:
            notes.append(f"purge: {cur.label()} is a veth whose other end is {outside}, "
                         f"outside the purged namespaces: deleting it would delete that end "
                         f"too; left in place, without its addresses and routes")
        elif key in kernel_kinds:
            notes.append(f"purge: {cur.label()} is a {kernel_kinds[key]} device, a kind netcfg "
                         f"does not delete; left in place, without its addresses and routes")
    if not kept:
        return target, notes
    return dataclasses.replace(target, interfaces={**target.interfaces, **kept}), notes


def peer_outside(obj: ConfigObject, purge: Collection[str]) -> str | None:
    """Where the other end of veth ``obj`` is, said for a note, when that is
    not a purge namespace: deleting one end deletes both, and the far one is
    not the purge's (issue 24, H4: a container's host-side veth on a bridge
    netcfg does not manage went with it, and the revert made a new pair in
    netcfg's group). An end in a namespace nobody read (no veth-peer-name:
    read.py leaves an unresolved peer out) counts as outside. None for other
    kinds, and for an end inside the purge."""
    if obj.kind != "veth":
        return None
    name = obj.attrs.get(PEER_NAME)
    if name is None:
        return "in a namespace netcfg does not read"
    netns = obj.attrs.get(PEER_NETNS, obj.netns)
    if netns in purge:
        return None
    return f"{name} in {'netns ' + netns if netns else 'the host namespace'}"


def guest_devices(desired: Model, current: Model, managed: Mapping[str, Collection[str]],
                  namespaces: Collection[str]) -> set[Key]:
    """Devices of ``namespaces`` that are a hypervisor's run-time plumbing:
    neither declared nor made by netcfg, and named as Proxmox names them
    (GUEST_NAMES), or matching the condone pattern of the bridge they are
    on, or enslaved to such a device."""
    patterns = {key: re.compile(obj.attrs[CONDONE_REGEX])
                for key, obj in desired.interfaces.items() if obj.attrs.get(CONDONE_REGEX)}
    candidates = {key for key in current.interfaces if key[0] in namespaces
                  and key not in desired.interfaces and key[1] not in managed.get(key[0], ())}
    guests = set()
    for key in candidates:
        master = current.masters.get(key)
        pattern = patterns.get(master) if master is not None else None
        if GUEST_NAMES.fullmatch(key[1]) or (pattern is not None and pattern.match(key[1])):
            guests.add(key)
    grew = True
    while grew:   # a vmbrXvY's port (PORT.TAG), then what is on that...
        grew = False
        for key in candidates - guests:
            if current.masters.get(key) in guests:
                guests.add(key)
                grew = True
    return guests


def keep_guest_bridges(target: Model, current: Model, besides: Collection[str] = (),
                       force: bool = False) -> tuple[Model, list[str]]:
    """Bridges of ``current`` (the managed view) that still have ports
    netcfg does not manage (a guest's tap or veth, another program's
    device: outside the view) are never deleted or re-created, which would
    take those ports off them: one the config dropped stays, without its
    addresses and routes, only its foreign ports on it (netcfg's own are
    released), and goes once they have left; one whose change needs a
    re-create keeps those attributes as they are, unless ``force`` (apply
    --force: re-created, the ports dropped; without it apply refuses, see
    foreign_port_drops). Warnings say which. ``besides``: namespaces going
    away whole (down()), where nothing stays. Also down()'s rule: `down
    --all` took netcfg's bridge from under a VM's tap (issue 24)."""
    kept: dict[Key, ConfigObject] = {}
    notes = []
    for key, cur, want, foreign in _bridges_with_foreign_ports(target, current, besides):
        ports = ", ".join(foreign)
        if want is None:
            attrs = {a: v for a, v in cur.attrs.items() if a not in PURGED_ATTRIBUTES}
            attrs[BRIDGE_PORTS] = foreign
            kept[key] = ConfigObject(section=cur.section, name=cur.name, kind=cur.kind,
                                     netns=cur.netns, attrs=attrs, loc=cur.loc, auto=cur.auto)
            notes.append(f"warning: {cur.name}: cannot remove bridge {cur.label()}: port "
                         f"{ports} is present (not in the config, not netcfg's: a guest's or "
                         f"another program's); kept without its addresses and routes, its "
                         f"other ports released; it goes once no such port is left")
            continue
        why = _recreation(want, cur)
        if why is None:
            continue
        if force:
            notes.append(f"warning: {cur.name}: --force: {cur.label()} is re-created ({why}), "
                         f"which drops port {ports} (not netcfg's: a guest's or another "
                         f"program's); plug it back in yourself")
        elif want.kind != cur.kind:
            kept[key] = cur
            notes.append(f"warning: {cur.name}: cannot make {cur.label()} a {want.kind}: bridge "
                         f"port {ports} is present (not netcfg's); the bridge is kept as it is")
        else:
            attrs = dict(want.attrs)
            for attribute in immutable_changes(want, cur):
                if attribute in cur.attrs:
                    attrs[attribute] = cur.attrs[attribute]
                else:
                    attrs.pop(attribute, None)
            kept[key] = dataclasses.replace(want, attrs=attrs)
            notes.append(f"warning: {cur.name}: {why} of {cur.label()} changes only by "
                         f"re-creating the bridge, which would drop port {ports} (not "
                         f"netcfg's: a guest's or another program's); left as it is until no "
                         f"such port is on it")
    if not kept:
        return target, notes
    return dataclasses.replace(target, interfaces={**target.interfaces, **kept}), notes


def foreign_port_drops(target: Model, current: Model) -> list[str]:
    """One line per bridge whose change needs a re-create that would take
    ports netcfg does not manage off it: what apply refuses without --force
    (issue 24). Changes the kernel makes in place (VLAN filtering, and every
    attribute not declared immutable) never get here."""
    out = []
    for _key, cur, want, foreign in _bridges_with_foreign_ports(target, current, ()):
        why = _recreation(want, cur) if want is not None else None
        if why is not None:
            out.append(f"{cur.label()}: {why} needs the bridge re-created, which would drop "
                       f"port {', '.join(foreign)} (not in the config, not netcfg's: a "
                       f"guest's or another program's)")
    return out


def _bridges_with_foreign_ports(target: Model, current: Model, besides: Collection[str]):
    """(key, current bridge, its wanted object or None, its foreign ports)."""
    for key, cur in current.interfaces.items():
        if cur.kind != "bridge" or key[0] in besides:
            continue
        foreign = [p for p in cur.attrs.get(BRIDGE_PORTS, ()) if (key[0], p) not in
                   current.interfaces]
        if foreign:
            yield key, cur, target.interfaces.get(key), foreign


def _recreation(want: ConfigObject, cur: ConfigObject) -> str | None:
    """Why making ``cur`` into ``want`` needs a re-create, or None."""
    if want.kind != cur.kind:
        return f"becoming a {want.kind}"
    changes = immutable_changes(want, cur)
    return ", ".join(changes) if changes else None


def creatable(kind: str) -> bool:
    try:
        return registry.kind(kind).creatable
    except KeyError:
        return False


def dhcp_devices(model: Model) -> set[Key]:
    """Interfaces a DHCP client configures: their routes are the client's."""
    return {key for key, obj in model.interfaces.items() if dhcp_owned(obj)}

def without_namespaces(model: Model, namespaces: set[str], dead: set[str]) -> Model:
    """``model`` less its devices in ``namespaces`` (and what sits on them or
    pairs with them, anywhere), less the ``dead`` namespaces."""
    gone = {k for k in model.interfaces if k[0] in namespaces}
    grew = True
    while grew:
        grew = False
        for key, obj in model.interfaces.items():
            # Devices it cannot outlive: its veth peer, its lower device.
            if key not in gone and any(ref in gone for ref in references(obj, (PEER, LOWER))):
                gone.add(key)
                grew = True
    kept = {}
    for key, obj in model.interfaces.items():
        if key in gone:
            continue
        if (key[0], obj.attrs.get("vrf")) in gone:   # its VRF goes: the kernel releases it
            obj = dataclasses.replace(obj, attrs={a: v for a, v in obj.attrs.items()
                                                  if a != "vrf"})
        kept[key] = obj
    return dataclasses.replace(
        model, interfaces=kept,
        namespaces={n: o for n, o in model.namespaces.items() if n not in dead},
        masters={k: m for k, m in model.masters.items() if k in kept and m in kept})

@dataclass
class GroupDeletes:
    """Link-dels sent as one delete by group: at which batch (index) each
    namespace's goes, and the keys of the link-dels it stands for."""

    at: dict[int, list[str]] = field(default_factory=dict)
    replaced: set[tuple[str, str, str, str]] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)


def group_deletes(plan: Plan, managed: Mapping[str, Collection[str]]) -> GroupDeletes:
    """Namespaces where the plan deletes every device netcfg made there (by a
    link-del of its own, or of its veth peer elsewhere): their own link-dels
    become one RTM_DELLINK by group, sent in the batch of the last of them,
    so whatever had to come before each one still does."""
    covered: dict[str, set[str]] = {}
    own: dict[str, list[tuple[int, Operation]]] = {}
    for number, batch in enumerate(plan.batches):
        for op in batch:
            if op.action != LINK_DEL:
                continue
            covered.setdefault(op.netns, set()).add(op.name)
            if op.params.get(PEER_PARAM):
                covered.setdefault(op.params.get(PEER_NETNS_PARAM, op.netns), set()).add(
                    op.params[PEER_PARAM])
            if op.name in managed.get(op.netns, ()):
                own.setdefault(op.netns, []).append((number, op))
    out = GroupDeletes()
    for netns, ops in own.items():
        if not set(managed[netns]) <= covered[netns]:
            continue
        out.at.setdefault(max(number for number, _ in ops), []).append(netns)
        out.replaced.update(op.key for _, op in ops)
        out.notes.append(f"{len(ops)} link-del{'s' if len(ops) > 1 else ''} in "
                         f"{'netns ' + netns if netns else 'the host namespace'} sent as one "
                         f"delete by group {NETCFG_GROUP}: every device netcfg made there goes")
    return out
