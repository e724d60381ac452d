"""Diff: the operations that turn the current model into the desired one.

A pure function of two models (desired from the compiler, current read back
from the kernel), both of the same types. It says *what* changes; the planner
(plan/planner.py) says in which order. ``diff(m, m) == []`` for any model m.

What a device "is" (created by whom, on top of what, enslaved to what) comes
from the kinds' hooks through the registry, never from tests on kind names.
The few attributes whose meaning the diff itself needs (addresses, routes,
port VLANs, VNIs) are named in tables at the top of this module.

Linear in the size of both models: every lookup is a dict, VLAN and VNI sets
are compared as ranges (a port carrying 1-4094 costs one interval, not 4094
ids).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from netcfg.kinds import registry, veth
from netcfg.kinds.common import ADDRESS_METRIC, gateway_onlink
from netcfg.kinds.base import ENSLAVING_ROLES, LOWER, PEER, Kind, Reference, Trait
from netcfg.model.model import ROOT_NETNS, ConfigObject, Model
from netcfg.plan.addresses import address_operations
from netcfg.plan.fdb import remote_operations
from netcfg.plan.ops import (ADDR_DEL, JOINING, LINK_ADD, LINK_DEL, LINK_DOWN, LINK_SET, LINK_UP,
                             MASTER_SET,
                             MASTER_UNSET, NETNS_ADD, NETNS_DEL, ROUTE_ADD, ROUTE_DEL, VLAN_ADD,
                             VLAN_DEL, VLAN_TUNNEL_ADD, VLAN_TUNNEL_DEL, VNI_ADD, VNI_DEL,
                             Operation)
from netcfg.plan.ovs import ovs_operations
from netcfg.plan.vlans import (NO_VLANS, VLAN_AWARE, PortVlans, TunnelMap, intersect,
                               merge, one, subtract, texts, tunnel_subtract, bridge_own_vlans,
                               held_vlans, joined_vlans, own_vlans_read, port_tunnels,
                               tunnel_texts, vnis, wanted_vlans)
from netcfg.spec import group_attributes

Key = tuple[str, str]

# Common attributes a create request carries (so the device never exists
# with the wrong MTU or with IPv6 autoconf running, and its sysctls are in
# place before its addresses), by their attribute names.
CREATE_TIME_ATTRIBUTES = ("mtu", "hwaddress", "alias", "addr-gen-mode", "disable-ipv6",
                          "accept-dad", "dad-transmits", "macvlan-protodown")
# Attributes some other operation than link-set takes care of.
HANDLED_ELSEWHERE = frozenset({
    "address", "gateway", "route",                 # addr-*, route-*
    "vrf",                                         # master-*
    "netns", "link-type",                          # identity and kind
    "link-down",                                   # link-up/link-down
    "bridge-vids", "bridge-pvid", "bridge-access",  # vlan-*
    "bridge-allow-untagged",                       # vlan-*
    "bridge-vlan-vni-map",                         # vlan-*, vni-*, vlan-tunnel-*
    "vxlan-remoteip", "vxlan-purge-remotes",       # fdb-* (plan/fdb.py)
    # The ifupdown method is not kernel state: static/manual/loopback change
    # nothing, dhcp hands the interface to the DHCP client (netcfg apply).
    "inet", "inet6",
    "pointopoint", "broadcast", ADDRESS_METRIC,    # addr-add's params (plan/addresses.py)
    "address-label",                               # addr-add's params (plan/addresses.py)
    "hook-added",                                  # addresses up lines added (plan/addresses.py)
    "macvlan-protodown",                           # link-add's only: a VRRP daemon owns it
    # The DHCP client's options and its routes' metric (apply/dhcp.py ClientOptions).
    "hostname", "client", "leasehours", "leasetime", "vendor", "metric",
    # Imperative lines are run, not kernel state (plan/hooks.py, apply/hooks.py).
    "pre-up", "up", "post-up", "pre-down", "down", "post-down",
    # The resolver's, told after each apply (apply/resolver.py).
    "dns-nameservers", "dns-search", "dns-domain",
    # Which ports of a bridge are not netcfg's to remove (plan/scope.py).
    "bridge-ports-condone-regex",
    "batman-ifaces-ignore-regex",                  # likewise, a mesh's (kinds/batadv.py)
    # A device's address, read when netcfg applies: tunnel-local by then
    # (apply/tunnel_local.py); an offline plan has no kernel to read it from.
    "tunnel-local-dev",
})
# link-set params that only mean something on an enslaved port: a link-set
# carrying them has this subject and comes after master-set.
PORT_SUBJECT = "port"

# Keys of a link-add's (and link-del's) params that name other devices; the
# planner orders by them. vlan and macvlan name their lower device "link" /
# "link_netns" (IFLA_LINK, IFLA_LINK_NETNSID), veth its peer "peer" / "peer_netns".
LOWER_PARAM, LOWER_NETNS_PARAM = "link", "link_netns"
PEER_PARAM, PEER_NETNS_PARAM = "peer", "peer_netns"
# vlan-add/vlan-del of a bridge's own VLANs (iproute2's `self`).
OWN_PARAM = "self"

# Attribute names with a meaning the diff needs (a small table, not kind tests).
# The bridge port flag a VLAN-to-VNI mapping needs (IFLA_BRPORT_VLAN_TUNNEL).
# Implied by bridge-vlan-vni-map, as ifupdown2 does: it has no attribute for
# it, so neither has netcfg; a port link-set carries it under iproute2's name.
VLAN_TUNNEL = "vlan_tunnel"
VRF, VRF_TABLE = "vrf", "vrf-table"
VLAN_ID = "vlan-id"
DEFAULT_ROUTE = {4: "0.0.0.0/0", 6: "::/0"}
LOOPBACK = "lo"  # every namespace has one from the start


def diff(desired: Model, current: Model) -> list[Operation]:
    """Operations that make ``current`` into ``desired``, unordered."""
    return _Diff(desired, current).run() + ovs_operations(desired, current)


def is_up(obj: ConfigObject) -> bool:
    """Wanted administratively up: on an auto line (or a kind up without one, the
    loopback) and not link-down."""
    return (obj.auto or registry.kind(obj.kind).up_without_auto) and \
        not obj.attrs.get("link-down")


def is_up_now(cur: ConfigObject) -> bool:
    """Up in the kernel: read back, auto is IFF_UP and link-down is absent."""
    return cur.auto and not cur.attrs.get("link-down")


def cycles_members(master: ConfigObject | None) -> bool:
    """Enslaving to (or releasing from) an L3 master (a VRF) takes an up
    device down and up again: the kernel drops its routes and its IPv6
    addresses (net.ipv6.conf.*.keep_addr_on_down is 0 by default)."""
    return master is not None and VRF_TABLE in master.attrs


def downs_members(master: ConfigObject | None) -> bool:
    """A bond takes only a device that is down: the kernel refuses to enslave an up
    one (bond_enslave: EPERM, "Device can not be enslaved while up"), as on a host
    where the NIC was up before netcfg (or ifupdown2, ignoring `bond-master`) put it
    in its bond. Down drops its routes and IPv6 addresses, as a VRF's cycle does."""
    return master is not None and master.kind == "bond"


def routes_of(obj: ConfigObject) -> Iterable[dict[str, Any]]:
    """``route`` attributes plus ``gateway`` as default routes, each with dev."""
    for route in obj.attrs.get("route", ()):
        if "dev" not in route:
            route = {**route, "dev": obj.name}
        yield route
    for gateway in obj.attrs.get("gateway", ()):
        route = {"to": DEFAULT_ROUTE[6 if ":" in gateway else 4], "via": gateway, "dev": obj.name}
        if VRF in obj.attrs:
            route[VRF] = obj.attrs[VRF]
        if gateway_onlink(obj, gateway):
            route["onlink"] = True
        yield route


def _family(prefix: str) -> int:
    return 6 if ":" in prefix else 4


def _sans_onlink(route: dict[str, Any]) -> dict[str, Any]:
    """A route as compared: onlink is how the kernel was asked to take the
    gateway (derived for a gateway outside the device's prefixes, or written),
    not a property a config may leave out and still match."""
    return {k: v for k, v in route.items() if k != "onlink"} if "onlink" in route else route


def route_subject(route: dict[str, Any]) -> str:
    """``10.0.0.0/8``, ``0.0.0.0/0 vrf red``, ``10.0.0.0/8 table 10 metric 5``."""
    subject = route["to"]
    if "table" in route:
        subject += f" table {route['table']}"
    elif VRF in route:
        subject += f" vrf {route[VRF]}"
    if "metric" in route:
        subject += f" metric {route['metric']}"
    return subject


def _pair_owner(obj: ConfigObject, model: Model) -> bool:
    # Both ends of a veth are made by one request; the veth module decides
    # which side sends it.
    decide = getattr(veth, "creates_pair", None)
    return decide(obj) if decide is not None else veth.owner(obj, model)


# Role of a reference -> whether this object's own link-add creates it, for
# objects created together with another one.
CREATES_ITSELF = {PEER: _pair_owner}


# ---------------------------------------------------------------- the two sides

@dataclass(slots=True)
class _KindInfo:
    kind: Kind | None
    hooks: list[Trait]
    own: frozenset[str]        # attributes of the kind's own schema file
    creatable: bool
    immutable: frozenset[str]

    # Attributes a link-set leaves alone: on an existing device (keep), on a
    # device made by its own link-add (created) or by its pair's (paired).
    keep: frozenset[str] = frozenset()
    paired: frozenset[str] = frozenset()
    created: frozenset[str] = frozenset()
    # Schema defaults of the kind's attributes: what a config that leaves one
    # out asks for, when comparing immutable attributes.
    defaults: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.keep = HANDLED_ELSEWHERE | self.immutable
        self.paired = self.keep | self.own
        self.created = self.paired | frozenset(self.create_time)

    @property
    def create_time(self) -> tuple[str, ...]:
        """CREATE_TIME_ATTRIBUTES less the mtu of a kind whose MTU follows its
        ports: the kernel (br_mtu_auto_adjust) replaces a bridge's MTU given
        at creation with its smallest port's whenever a port joins, and keeps
        one set by a later change; so that mtu is a link-set after the ports
        are enslaved (planner.ADDITION_RULES)."""
        if self.kind is not None and getattr(self.kind, "mtu_follows_ports", False):
            return tuple(a for a in CREATE_TIME_ATTRIBUTES if a != "mtu")
        return CREATE_TIME_ATTRIBUTES


class _Side:
    """One model with what the diff derives from it, computed once."""

    def __init__(self, model: Model, kinds: dict[str, _KindInfo]):
        self.model = model
        self.ifaces = model.interfaces
        self._kinds = kinds
        self.refs: dict[Key, list[Reference]] = {}
        self.masters: dict[Key, Key] = {}
        # VLAN ids of the VLAN devices on each device (a bridge's own VLANs).
        self.vlan_uppers: dict[Key, list[int]] = {}
        for key, obj in self.ifaces.items():
            refs = [r for hook in self.info(obj.kind).hooks for r in hook.references(obj)]
            self.refs[key] = refs
            for ref in refs:
                if ref.role in ENSLAVING_ROLES:
                    self.masters[(ref.netns, ref.name)] = key
                elif ref.role == LOWER and VLAN_ID in obj.attrs:
                    self.vlan_uppers.setdefault((ref.netns, ref.name), []).append(
                        obj.attrs[VLAN_ID])
            if obj.attrs.get(VRF):
                self.masters[key] = (obj.netns, obj.attrs[VRF])
        self.masters.update(model.masters)

    def info(self, kind_name: str) -> _KindInfo:
        info = self._kinds.get(kind_name)
        if info is None:
            info = self._kinds[kind_name] = _load_kind(kind_name)
        return info


def _load_kind(name: str) -> _KindInfo:
    try:
        kind = registry.kind(name)
    except KeyError:
        # A device of a kind netcfg does not know (read from the kernel):
        # configure it if asked to, never create or delete it.
        return _KindInfo(None, [], frozenset(), False, frozenset())
    try:
        specs = group_attributes(kind.name)
    except FileNotFoundError:
        specs = {}
    defaults = {a: spec.schema["default"] for a, spec in specs.items() if "default" in spec.schema}
    # An attribute a create request does not carry (at_create false) is a
    # link-set right after it, located at its own line if the kernel refuses it.
    own = frozenset(a for a, spec in specs.items()
                    if spec.kernel is None or spec.kernel.at_create)
    return _KindInfo(kind, registry.hooks_for(name), own, kind.creatable,
                     kind.immutable_attributes, defaults=defaults)


def _port_attributes() -> frozenset[str]:
    # A bridge port's options, and a batman-adv hard interface's own hop penalty
    # (BATADV_CMD_SET_HARDIF needs the interface on its mesh: kinds/batadv_hardif.py).
    return frozenset(group_attributes("bridge-port")) | frozenset(group_attributes("batadv-hardif"))


# ---------------------------------------------------------------- the diff

class _Diff:
    def __init__(self, desired: Model, current: Model):
        kinds: dict[str, _KindInfo] = {}
        self.d = _Side(desired, kinds)
        self.c = _Side(current, kinds)
        self.ops: list[Operation] = []
        self.port_attributes = _port_attributes()
        # Each device's link-set of port attributes, to add implied ones to.
        self.port_sets: dict[Key, Operation] = {}

    def run(self) -> list[Operation]:
        self.namespaces()
        self.fresh = self.find_fresh()
        self.deleted = self.find_deleted()
        self.cycled: set[Key] = set()
        self.link_deletes()
        for key, obj in self.d.ifaces.items():
            self.interface(key, obj)
        self.bridge_mtus_after_joins()
        self.routes()
        self.ops += remote_operations(self.d.model, self.c.model, self.fresh | self.deleted)
        return self.ops

    # -- namespaces

    def namespaces(self) -> None:
        desired = set(self.d.model.netns_names())
        desired.discard(ROOT_NETNS)
        current = set(self.c.model.namespaces)
        current.update(ns for ns, _ in self.c.ifaces)
        current.discard(ROOT_NETNS)
        for name in sorted(desired - current):
            declared = self.d.model.namespaces.get(name)
            params = self.d.info(declared.kind).kind.create_params(declared) if (
                declared is not None and self.d.info(declared.kind).kind) else {}
            self.ops.append(Operation(NETNS_ADD, ROOT_NETNS, name, params=params))
            if (name, LOOPBACK) not in self.d.ifaces:
                # A new namespace's lo is down, and with it every address of
                # the namespace as seen from inside it (a portal, a service
                # bound there): up, as ip netns users and container runtimes
                # do. An `iface lo` in the namespace decides instead (it is
                # diffed like any interface: down unless auto).
                self.ops.append(Operation(LINK_UP, name, LOOPBACK))
        self.dead_netns = current - desired
        for name in sorted(self.dead_netns):
            self.ops.append(Operation(NETNS_DEL, ROOT_NETNS, name))

    # -- which devices are (re)created, which deleted

    def find_fresh(self) -> set[Key]:
        """Desired devices that will be made anew: missing, or of another kind,
        or with a changed immutable attribute; then whatever goes with them
        (devices on a re-created lower device, the other end of a veth)."""
        d, c = self.d, self.c
        fresh: set[Key] = set()
        followers: dict[Key, list[Key]] = {}
        for key, obj in d.ifaces.items():
            info = d.info(obj.kind)
            if not info.creatable:
                continue
            for ref in d.refs[key]:
                if ref.role == LOWER:
                    followers.setdefault((ref.netns, ref.name), []).append(key)
                elif ref.role == PEER:
                    followers.setdefault((ref.netns, ref.name), []).append(key)
                    followers.setdefault(key, []).append((ref.netns, ref.name))
            cur = c.ifaces.get(key)
            if cur is None:
                fresh.add(key)
            elif cur.kind != obj.kind:
                if c.info(cur.kind).creatable:
                    fresh.add(key)
            elif _immutable_changes(obj, cur, info):
                fresh.add(key)
        todo = list(fresh)
        while todo:
            for key in followers.get(todo.pop(), ()):
                if key not in fresh and key in d.ifaces and d.info(d.ifaces[key].kind).creatable:
                    fresh.add(key)
                    todo.append(key)
        return fresh

    def find_deleted(self) -> set[Key]:
        """Current devices that get a link-del (outside namespaces being deleted)."""
        deleted = set()
        for key, cur in self.c.ifaces.items():
            if key[0] in self.dead_netns or not self.c.info(cur.kind).creatable:
                continue
            if key not in self.d.ifaces or key in self.fresh:
                deleted.add(key)
        return deleted

    def link_deletes(self) -> None:
        for key, cur in self.c.ifaces.items():
            if key not in self.deleted:
                continue
            params: dict[str, Any] = {}
            skip = False
            for ref in self.c.refs[key]:
                other = (ref.netns, ref.name)
                if ref.role == PEER:
                    # Deleting one end deletes the pair: one request for both.
                    skip = skip or (other in self.deleted and other < key)
                    params[PEER_PARAM] = ref.name
                    params[PEER_NETNS_PARAM] = ref.netns
                elif ref.role == LOWER:
                    params[LOWER_PARAM] = ref.name
                    if ref.netns != key[0]:
                        params[LOWER_NETNS_PARAM] = ref.netns
            if not skip:
                self.ops.append(Operation(LINK_DEL, key[0], key[1], params=params))

    # -- one desired interface

    def interface(self, key: Key, obj: ConfigObject) -> None:
        d, c, ops = self.d, self.c, self.ops
        netns, name = key
        info = d.info(obj.kind)
        fresh = key in self.fresh
        cur = None if fresh else c.ifaces.get(key)
        creates = fresh and self.creates_itself(key, obj)
        if creates:
            ops.append(self.link_add(key, obj, info))

        # Attributes changed on the link.
        if cur is None or obj.attrs != cur.attrs:
            self.link_set(key, obj, info, cur, fresh, creates)

        # Master.
        want_master = d.masters.get(key)
        had_master = c.masters.get(key) if cur is not None else None
        current_up = cur is not None and is_up_now(cur)
        if had_master is not None and (had_master != want_master or had_master in self.fresh
                                       or had_master in self.deleted):
            # Leaving its master (released, moved, or the master deleted):
            # a bond closes the device it releases (__bond_release_one:
            # dev_close), a VRF cycles it (do_vrf_del_slave: cycle_netdev).
            left = c.ifaces.get(had_master)
            if current_up and downs_members(left):
                current_up = False
                self.cycled.add(key)
            elif current_up and cycles_members(left):
                self.cycled.add(key)
        if had_master is not None and (had_master in self.fresh or had_master in self.deleted):
            had_master = None  # the kernel released it with the old master
        if want_master != had_master:
            if want_master is not None:
                if current_up and downs_members(d.ifaces.get(want_master)):
                    # Down first, up after (below), as ifupdown2's bond addon does.
                    ops.append(Operation(LINK_DOWN, netns, name))
                    current_up = False
                    self.cycled.add(key)
                ops.append(Operation(MASTER_SET, netns, name,
                                     params={"master": want_master[1]}))
            else:
                ops.append(Operation(MASTER_UNSET, netns, name,
                                     params={"master": had_master[1]}))
            if current_up and cycles_members(d.ifaces.get(want_master)):
                self.cycled.add(key)

        # Port VLANs and VNIs.
        joining = want_master is not None and not (want_master == had_master and cur is not None)
        want_vlans = wanted_vlans(obj, d.ifaces.get(want_master),
                                  None if want_master is None else self.made_or_kept(want_master))
        if joining:
            had_vlans = joined_vlans(self.made_or_kept(want_master))
        elif cur is not None:
            had_vlans = held_vlans(cur, c.ifaces.get(had_master), d.ifaces.get(want_master))
        else:
            had_vlans = NO_VLANS
        if want_vlans != had_vlans:
            self.vlans(key, want_vlans, had_vlans, joining=joining)
        if obj.attrs.get(VLAN_AWARE):
            self.own_vlans(key, obj, cur)
        want_tunnels = port_tunnels(obj, d.ifaces.get(want_master))
        had_tunnels: TunnelMap = {}
        if want_master == had_master and cur is not None:
            had_tunnels = port_tunnels(cur, c.ifaces.get(had_master))
        if want_tunnels != had_tunnels:
            self.tunnels(key, want_tunnels, had_tunnels)
        want_vnis = vnis(obj)
        had_vnis = vnis(cur) if cur is not None else []
        if want_vnis != had_vnis:
            added, removed = subtract(want_vnis, had_vnis), subtract(had_vnis, want_vnis)
            if removed:
                ops.append(Operation(VNI_DEL, netns, name, params={"vnis": texts(removed)}))
            if added:
                ops.append(Operation(VNI_ADD, netns, name, params={"vnis": texts(added)}))

        # Administrative state. Going down takes the device's IPv6 addresses
        # (addrconf_ifdown) as a cycle does, and the config may still want
        # them (a stanza without `auto` keeps its addresses, down): they are
        # added again after the down (additions follow removals).
        want_up = is_up(obj)
        goes_down = current_up and not want_up

        # Addresses.
        ops.extend(address_operations(obj, cur, cycled=key in self.cycled or goes_down))

        if want_up and not current_up:
            ops.append(Operation(LINK_UP, netns, name))
        elif goes_down:
            ops.append(Operation(LINK_DOWN, netns, name))

    def link_set(self, key: Key, obj: ConfigObject, info: _KindInfo,
                 cur: ConfigObject | None, fresh: bool, creates: bool) -> None:
        if cur is not None:
            excluded = info.keep | self.c.info(cur.kind).immutable
            refs = [*self.d.refs[key], *self.c.refs[key]]
            old = cur.attrs
        else:
            # A fresh device's create request (its own or its pair's) sets
            # the kind's own attributes and, when its own, the create-time ones.
            excluded = info.created if creates else info.paired if fresh else info.keep
            refs = self.d.refs[key]
            old = {}
        if refs:
            excluded = excluded | {r.attribute for r in refs}
        # Only what the config writes is managed: an attribute it leaves out
        # keeps whatever the kernel has (read-back state reports every
        # attribute, defaults included), as with ifupdown2.
        changed: dict[str, Any] = {}
        for attribute, value in obj.attrs.items():
            if attribute not in excluded and old.get(attribute) != value:
                changed[attribute] = value
        if cur is not None and info.kind is not None:
            # The few a kind says mean their default when left out (a
            # bridge's VLAN filtering: a file without the line asks for off).
            for attribute, want in getattr(info.kind, "default_when_absent", {}).items():
                if attribute not in obj.attrs and old.get(attribute, want) != want:
                    changed[attribute] = want
        if changed:
            port = {a: v for a, v in changed.items() if a in self.port_attributes}
            link = {a: v for a, v in changed.items() if a not in self.port_attributes}
            if link:
                self.ops.append(Operation(LINK_SET, key[0], key[1], params=link))
            if port:
                self.port_set(key, port)

    def bridge_mtus_after_joins(self) -> None:
        """An existing bridge whose written mtu reads as written, that a port
        joins in this plan: the kernel (br_mtu_auto_adjust) gives it its
        smallest port's MTU as the port joins, unless a change set it
        (BROPT_MTU_SET_BY_USER, which netlink does not report; a set to the
        value a device has is no change). So its mtu is set again, in a
        link-set the planner puts after the ports' master-set
        (planner.ADDITION_RULES). (A port already in the bridge whose MTU
        drops takes the bridge down too; that case is open: its link-set is
        not ordered before the bridge's, docs/soundness.md.)"""
        joined = {(op.netns, op.params.get("master")) for op in self.ops
                  if op.action == MASTER_SET}
        for key in joined:
            obj, cur = self.d.ifaces.get(key), self.c.ifaces.get(key)
            if (obj is None or cur is None or key in self.fresh or "mtu" not in obj.attrs
                    or cur.attrs.get("mtu") != obj.attrs["mtu"]
                    or not getattr(self.d.info(obj.kind).kind, "mtu_follows_ports", False)):
                continue
            for op in self.ops:
                if op.action == LINK_SET and (op.netns, op.name) == key and not op.subject:
                    op.params["mtu"] = obj.attrs["mtu"]
                    break
            else:
                self.ops.append(Operation(LINK_SET, key[0], key[1],
                                          params={"mtu": obj.attrs["mtu"]}))

    def port_set(self, key: Key, params: dict[str, Any]) -> None:
        """Port attributes in the device's one port link-set (the planner
        keeps one operation per action, device and subject)."""
        op = self.port_sets.get(key)
        if op is None:
            op = self.port_sets[key] = Operation(LINK_SET, key[0], key[1], PORT_SUBJECT)
            self.ops.append(op)
        op.params.update(params)

    def creates_itself(self, key: Key, obj: ConfigObject) -> bool:
        for ref in self.d.refs[key]:
            decide = CREATES_ITSELF.get(ref.role)
            if decide is not None:
                return decide(obj, self.d.model)
        return True

    def link_add(self, key: Key, obj: ConfigObject, info: _KindInfo) -> Operation:
        params: dict[str, Any] = {"kind": obj.kind, **info.kind.create_params(obj)}
        for ref in self.d.refs[key]:
            if ref.role == LOWER:
                params.setdefault(LOWER_PARAM, ref.name)
                if ref.netns != key[0]:
                    params.setdefault(LOWER_NETNS_PARAM, ref.netns)
            elif ref.role == PEER:
                params.setdefault(PEER_PARAM, ref.name)
                params.setdefault(PEER_NETNS_PARAM, ref.netns)
        for attribute in info.create_time:
            if attribute in obj.attrs:
                params[attribute] = obj.attrs[attribute]
        return Operation(LINK_ADD, key[0], key[1], params=params)

    def made_or_kept(self, key: Key) -> ConfigObject | None:
        """A device as it will be when this plan runs: the desired one when
        it is made anew, else the kernel's (its immutable attributes, such
        as a bridge's default PVID, stay as they are)."""
        if key in self.fresh or key not in self.c.ifaces:
            return self.d.ifaces.get(key)
        return self.c.ifaces[key]

    def own_vlans(self, key: Key, bridge: ConfigObject, cur: ConfigObject | None) -> None:
        """A VLAN-aware bridge's own VLANs: read back from the kernel where
        they were (kernel/read.py), else as the kernel gives a new bridge or
        as the current model implies them."""
        want = bridge_own_vlans(bridge, self.d.vlan_uppers.get(key, ()))
        if cur is None:
            had = bridge_own_vlans(bridge, ())   # what the create gives it
        elif key in self.c.model.bridge_vlans:
            had = own_vlans_read(self.c.model.bridge_vlans[key])
        else:
            had = bridge_own_vlans(cur, self.c.vlan_uppers.get(key, ()))
        if want != had:
            self.vlans(key, want, had, own=True)

    def vlans(self, key: Key, want: PortVlans, had: PortVlans, own: bool = False,
              joining: bool = False) -> None:
        """VLAN-add/del making a port's VLANs (a bridge's own: ``own``) ``want``;
        ``joining``: ``had`` is what the port gets as it joins in this plan."""
        want_vids, had_vids = list(want.vids), list(had.vids)
        removed = subtract(had_vids, want_vids)
        added = subtract(want_vids, had_vids)
        # Ids kept whose flags change are added again with the new flags
        # (the kernel replaces a port VLAN's pvid/untagged flags on add).
        kept = intersect(want_vids, had_vids)
        flagged = [*subtract(list(want.untagged), list(had.untagged)),
                   *subtract(list(had.untagged), list(want.untagged))]
        if want.pvid != had.pvid:
            flagged += [*one(want.pvid), *one(had.pvid)]
        if flagged:
            added = merge([*added, *intersect(kept, merge(flagged))])
        netns, name = key
        self_flag = {OWN_PARAM: True} if own else {}
        if removed:
            self.ops.append(Operation(VLAN_DEL, netns, name, JOINING if joining else "",
                                      params={"vids": texts(removed), **self_flag}))
        if added:
            params: dict[str, Any] = {"vids": texts(added), **self_flag}
            if want.pvid is not None and intersect(added, one(want.pvid)):
                params["pvid"] = want.pvid
            untagged = texts(intersect(added, list(want.untagged)))
            if untagged:
                params["untagged"] = untagged
            self.ops.append(Operation(VLAN_ADD, netns, name, params=params))

    def tunnels(self, key: Key, want: TunnelMap, had: TunnelMap) -> None:
        """VLAN-to-VNI mappings: removed and added as ranges. A VLAN mapped to
        another VNI is removed first (the kernel answers EEXIST to a second
        mapping of a VLAN)."""
        netns, name = key
        removed, added = tunnel_subtract(had, want), tunnel_subtract(want, had)
        if removed:
            self.ops.append(Operation(VLAN_TUNNEL_DEL, netns, name,
                                      params={"map": tunnel_texts(removed)}))
        if added:
            if not had:
                # The kernel refuses mappings on a port without the flag and
                # drops them all when it goes off, so a port with none may
                # have it off. Once on it stays on, as with ifupdown2: without
                # mappings it changes nothing.
                self.port_set(key, {VLAN_TUNNEL: True})
            self.ops.append(Operation(VLAN_TUNNEL_ADD, netns, name,
                                      params={"map": tunnel_texts(added)}))

    # -- routes

    def routes(self) -> None:
        want = self.route_table(self.d, set(), is_up)
        gone = self.fresh | self.deleted | self.cycled
        had = self.route_table(self.c, self.dead_netns, is_up_now)
        unaddressed = self._losing_addresses()
        for identity, route in want.items():
            netns = identity[0]
            old = had.pop(identity, None)
            if old is not None and (self._route_gone(netns, old, gone)):
                old = None
            if old is not None and _sans_onlink(old) == _sans_onlink(route):
                if (netns, old["dev"], _family(old["to"])) in unaddressed:
                    # Put back in one step whether the kernel dropped it or not.
                    self.ops.append(Operation(ROUTE_ADD, netns, route["dev"],
                                              route_subject(route),
                                              params={**route, "replace": True}))
                continue   # onlink is read back (a revert needs it) but not compared
            if old is not None:
                self.ops.append(Operation(ROUTE_DEL, netns, old["dev"], route_subject(old),
                                          params=old))
            self.ops.append(Operation(ROUTE_ADD, netns, route["dev"], route_subject(route),
                                      params=route))
        for identity, old in had.items():
            if not self._route_gone(identity[0], old, gone):
                self.ops.append(Operation(ROUTE_DEL, identity[0], old["dev"],
                                          route_subject(old), params=old))

    def _losing_addresses(self) -> set[tuple[str, str, int]]:
        """(netns, device, 4) of the devices this plan's addr-dels leave, for a
        moment, with no IPv4 address: the kernel then drops every route
        through the device, and says nothing (fib_inetaddr_event ->
        fib_disable_ip; a changed address on vmbr0 took its default route:
        the reload differential's address-change). Their routes are added
        again after the address change with NLM_F_REPLACE (`ip route
        replace`), which puts back a route the kernel dropped and leaves in
        place one it kept. IPv6 routes outlive their device's addresses."""
        deleted: dict[Key, set[str]] = {}
        for op in self.ops:
            if op.action == ADDR_DEL and op.subject and _family(op.subject) == 4:
                deleted.setdefault((op.netns, op.name), set()).add(op.subject)
        out = set()
        for key, gone in deleted.items():
            cur = self.c.ifaces.get(key)
            had = {a for a in (cur.attrs.get("address", ()) if cur else ()) if ":" not in a}
            if had <= gone:
                out.add((*key, 4))
        return out

    @staticmethod
    def _route_gone(netns: str, route: dict[str, Any], gone: set[Key]) -> bool:
        """The kernel already dropped it with its device or its VRF."""
        return ((netns, route["dev"]) in gone
                or (VRF in route and (netns, route[VRF]) in gone))

    @staticmethod
    def route_table(side: _Side, skip_netns: set[str],
                    up: Callable[[ConfigObject], bool]) -> dict[tuple, dict[str, Any]]:
        """The routes of one side by identity; ``up``: whether a device of that
        side is up (is_up wanted, is_up_now read back)."""
        table: dict[tuple, dict[str, Any]] = {}
        for (netns, _), obj in side.ifaces.items():
            if netns in skip_netns:
                continue
            for route in routes_of(obj):
                dev = side.ifaces.get((netns, route["dev"]))
                if dev is not None and not up(dev):
                    # Not installed while its device is down (the kernel
                    # refuses it): a stanza without auto, whose `ifup NAME`
                    # brings it up with it (kinds/common._check_routes).
                    continue
                where = (("table", route["table"]) if "table" in route
                         else (VRF, route[VRF]) if VRF in route else None)
                table[(netns, route["to"], where, route.get("metric"))] = route
        return table


def immutable_changes(want: ConfigObject, have: ConfigObject) -> list[str]:
    """Attributes whose change makes the diff re-create ``have`` as ``want``
    (the kernel cannot change them on a live device); [] for another kind,
    whose re-creation the caller sees from the kinds."""
    if want.kind != have.kind:
        return []
    return _immutable_changes(want, have, _load_kind(want.kind))


def _immutable_changes(want: ConfigObject, have: ConfigObject, info: _KindInfo) -> list[str]:
    return [a for a in sorted(info.immutable) if _differs(want, have, a, info.defaults)]


def _differs(want: ConfigObject, have: ConfigObject, attribute: str,
             defaults: dict[str, Any]) -> bool:
    """Whether the config asks for another value than the device has. An
    attribute the config leaves out means its schema default, if it has one
    (a vlan's protocol), else whatever the device has."""
    if attribute in want.attrs:
        wanted = want.attrs[attribute]
    elif attribute in defaults:
        wanted = defaults[attribute]
    else:
        return False
    return have.attrs.get(attribute, defaults.get(attribute)) != wanted
