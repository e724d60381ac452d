"""Stanzas -> model objects: merge, infer kinds, type and check attribute values.

ifupdown2 merges every stanza that names the same interface (``iface br0 inet
static`` plus ``iface br0 inet6 static``); we do the same, keyed by namespace
and name. Then each interface's kind is inferred from what was written
(``link-type``, a defining attribute such as ``bridge-ports``, or the name
itself: ``lo``, ``swp1.100``), and every attribute is checked against the
schemas of that kind and its traits. Errors are collected, not raised, so one
run reports them all.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from netcfg.compile.inherits import resolve_inherits
from netcfg.compile.legacy_tunnel import local_from_device, tunnel_lines
from netcfg.compile.ng_dialect import left_to_executors, ng_lines
from netcfg.compile.ovs_allow import allow_ovs_bridges
from netcfg.compile.syntax import ParsedConfig, RawAttribute, Stanza
from netcfg.compile.unsupported import INERT_NOTE_SYNTAXES, explain, inert_warning
from netcfg.compile.values import parse_value, value_notes
from netcfg.compile.vrrp import VRRP, vrrp_macvlans
from netcfg.kinds import registry
from netcfg.kinds.common import IPV6_MIN_MTU
from netcfg.model.errors import Report, did_you_mean, quote
from netcfg.model.location import SourceLocation
from netcfg.model.names import IFNAME_RULES, ifname_problem
from netcfg.model.model import IFACE, ROOT_NETNS, TARGET, ConfigObject, Model
from netcfg.plan.hooks import PHASES as COMMAND_ATTRIBUTES
from netcfg.spec import PORT, AttributeSpec, group_attributes, value_checker

# Consumed by the builder itself rather than stored as attributes.
PLACEMENT_ATTRIBUTE = "netns"
KIND_ATTRIBUTE = "link-type"
BOND_MASTER = "bond-master"   # the slave's side of bond-slaves (compile/build.py)
ADDRESS_VIRTUAL = "address-virtual"   # VRR: macvlans (_address_virtual_to_macvlans)
PPP_METHOD = "ppp"   # ifupdown's `inet ppp`, left to pon/poff (_left_to_pppd)
# ifupdown's legacy names of attributes netcfg spells as ifupdown2 does:
# Debian ifenslave's `slaves` (still in its README) is bond-slaves; ifupdown
# 0.8's and ifupdown-ng's `description TEXT` runs `ip link set IF alias "TEXT"`:
# netcfg's alias (IFLA_IFALIAS), printed back as alias. ifupdown-ng's forward
# executor writes forward-ipv4/-ipv6 (yes|no) to the forwarding sysctls.
LEGACY_NAMES = {"slaves": "bond-slaves", "description": "alias",
                "forward-ipv4": "ip-forward", "forward-ipv6": "ip6-forward",
                # ifupdown-ng's names (its interface-file.c remaps ifupdown's and
                # ifupdown2's to these) of lines netcfg has: its bond executor's
                # members, its vrf executor's, its ipv6 executor's sysctls, and
                # its dhcp executor's options (dhcpcd -h/-I/-i/-l, udhcpc -x).
                "bond-members": "bond-slaves", "vrf-member": "vrf",
                "ipv6-accept-ra": "accept-ra", "ipv6-autoconf": "autoconf",
                "ipv6-dad-transmits": "dad-transmits",
                "dhcp-hostname": "hostname", "dhcp-client-id": "client",
                "dhcp-vendor": "vendor", "dhcp-leasetime": "leasetime"}


@dataclass(slots=True)
class _Pending:
    """All stanzas written for one object, before typing."""

    section: str
    name: str
    netns: str
    loc: SourceLocation
    raws: list[RawAttribute] = field(default_factory=list)
    methods: dict[str, tuple[str, SourceLocation]] = field(default_factory=dict)
    netns_loc: SourceLocation | None = None   # where `netns NAME` placed it


def build_objects(parsed: ParsedConfig, report: Report) -> Model:
    """Typed objects from parsed stanzas; cross-object checks come later
    (netcfg.compile.validate.finish_model)."""
    model = Model(lower_off_files=set(parsed.lower_off_files))
    pending: dict[tuple[str, str, str], _Pending] = {}
    aliases: dict[str, str] = {}
    for stanza in resolve_inherits(parsed, report):
        written = stanza.name
        stanza = tunnel_lines(_alias_on_base(stanza, aliases, report), report)
        stanza = ng_lines(stanza, report)   # ifupdown-ng's use/requires (ng_dialect.py)
        if stanza.keyword == IFACE and any(a.name == "netmask" for a in stanza.attributes):
            _fold_netmask(stanza, report)
        if written != stanza.name:
            _label_alias_addresses(stanza, written)
        _merge(stanza, pending, report)
    to_pppd = left_to_executors(pending, report, _left_to_pppd(pending, report))
    _default_tunnel_source(pending)
    local_from_device(pending, report)
    _bond_master_to_slaves(pending, report)
    allow_ovs_bridges(parsed, pending, report)
    virtual = _address_virtual_to_macvlans(pending, report)
    virtual.update(_vrrp_to_macvlans(pending, report))
    builder = _ObjectBuilder(report)
    for p in pending.values():
        obj = builder.build(p)
        if obj is not None:
            model.section(obj.section)[obj.key if obj.section == IFACE else obj.name] = obj
    _mark_auto(parsed, model, report, to_pppd, aliases)
    for key, parent in virtual.items():
        obj, lower = model.interfaces.get(key), model.interfaces.get(parent)
        if obj is not None and lower is not None:
            obj.auto = lower.auto   # up with the interface that wrote it
    return model


# What ifupdown2's addressvirtual addon gives each macvlan besides its
# addresses: their prefix routes' metric 1024 (its policy
# addressvirtual_with_route_metric, on by default), so that X's own prefix
# route wins over the macvlan's, and no IPv6 duplicate address detection
# (accept_dad and dad_transmits 0): the peer router has the same addresses.
VRR_SETTINGS = (("address-metric", "1024"), ("accept-dad", "0"), ("dad-transmits", "0"))
VRR_DAD_SETTINGS = ("accept-dad", "dad-transmits")


def _address_virtual_to_macvlans(pending: dict, report: Report) -> dict:
    """`address-virtual MAC IP...` (VRR) on X: the macvlan devices
    ifupdown2's addressvirtual addon makes, with its names (X's first 13
    characters, dots as dashes, then -v and the line's index: vlan13-v0),
    mode private, the MAC (unless 'none'), the addresses, X's vrf and mtu,
    and its settings (VRR_SETTINGS). Returns {macvlan key: X's key}, so each
    comes up with X."""
    made: dict[tuple[str, str], tuple[str, str]] = {}
    for p in list(pending.values()):
        if p.section != IFACE or not any(r.name == ADDRESS_VIRTUAL for r in p.raws):
            continue
        prefix = p.name[:13].replace(".", "-") + "-v"
        inherited = [r for r in p.raws if r.name in ("vrf", "mtu")]
        # Below an MTU of 1280 the kernel has no IPv6 on the device, and no
        # DAD sysctls to write.
        settings = [(a, v) for a, v in VRR_SETTINGS
                    if a not in VRR_DAD_SETTINGS or not _below_ipv6_mtu(inherited)]
        kept, index = [], 0
        for raw in p.raws:
            if raw.name != ADDRESS_VIRTUAL:
                kept.append(raw)
                continue
            words = raw.value.split()
            if not words:
                report.error(raw.loc, f"{p.name}: address-virtual needs a MAC address (or "
                             f"'none') and addresses", ADDRESS_VIRTUAL)
                continue
            name = f"{prefix}{index}"
            index += 1
            if (IFACE, p.netns, name) in pending:
                report.error(raw.loc, f"{p.name}: address-virtual makes {name}, which is "
                             f"declared too; rename that interface", ADDRESS_VIRTUAL)
                continue
            macvlan = _Pending(IFACE, name, p.netns, raw.loc, netns_loc=p.netns_loc)
            macvlan.raws = [RawAttribute("macvlan-raw-device", p.name, raw.loc),
                            RawAttribute("macvlan-mode", "private", raw.loc)]
            if words[0].lower() != "none":
                macvlan.raws.append(RawAttribute("hwaddress", _mac_octets(words[0]), raw.loc))
            macvlan.raws += [RawAttribute("address", " ".join(words[1:]), raw.loc)] \
                if words[1:] else []
            macvlan.raws += [RawAttribute(r.name, r.value, raw.loc) for r in inherited]
            macvlan.raws += [RawAttribute(a, value, raw.loc) for a, value in settings]
            pending[(IFACE, p.netns, name)] = macvlan
            made[(p.netns, name)] = (p.netns, p.name)
        p.raws = kept
    return made


def _vrrp_to_macvlans(pending: dict, report: Report) -> dict:
    """`vrrp ID ADDRESS...` on X: ifupdown2's VRRP macvlans (compile/vrrp.py).
    Returns {macvlan key: X's key}, so each comes up with X."""
    made: dict[tuple[str, str], tuple[str, str]] = {}
    for p in list(pending.values()):
        if p.section != IFACE or not any(r.name == VRRP for r in p.raws):
            continue
        p.raws, macvlans = vrrp_macvlans(p.name, p.raws, report)
        for name, raws in macvlans.items():
            if (IFACE, p.netns, name) in pending:
                report.error(raws[0].loc, f"{p.name}: vrrp makes {name}, which is declared "
                             f"too; rename that interface", VRRP)
                continue
            macvlan = _Pending(IFACE, name, p.netns, raws[0].loc, netns_loc=p.netns_loc)
            macvlan.raws = raws
            pending[(IFACE, p.netns, name)] = macvlan
            made[(p.netns, name)] = (p.netns, p.name)
    return made


def _left_to_pppd(pending: dict, report: Report) -> set[str]:
    """`iface NAME inet ppp` with `provider P`: ifupdown's ppp method runs
    `pon P` and `poff P` (Debian's ppp package), and pppd makes NAME when the
    link comes up. netcfg runs neither: the stanza is accepted with a warning
    (--strict refuses it) and NAME left out of the model, so netcfg never
    takes pppd's device for a missing port. Returns the names left out."""
    names = set()
    for key, p in list(pending.items()):
        method = p.methods.get("inet")
        if p.section != IFACE or method is None or method[0] != PPP_METHOD:
            continue
        del pending[key]
        names.add(p.name)
        provider = next((r.value for r in p.raws if r.name == "provider"), "provider")
        message = (f"{p.name}: inet ppp is left to the ppp package: ifupdown's ppp method "
                   f"runs 'pon {provider}' and 'poff {provider}', and pppd makes {p.name}; "
                   f"netcfg runs neither and leaves {p.name} alone")
        report.diagnostics.append(inert_warning(method[1], message, "inet"))
    return names


TUNNEL_SOURCE = "vxlan-local-tunnelip"
VXLAN_DEFINING = ("vxlan-id", "vxlan-vnifilter")


def _default_tunnel_source(pending: dict) -> None:
    """`vxlan-local-tunnelip` on lo: ifupdown2's vxlan addon takes it as the
    tunnel source of every vxlan that writes none (Cumulus's EVPN files put
    it there once). Each vxlan of lo's namespace without one gets lo's line;
    lo keeps nothing (it has no such kernel state)."""
    for lo in list(pending.values()):
        if lo.section != IFACE or lo.name != "lo" or \
                not any(r.name == TUNNEL_SOURCE for r in lo.raws):
            continue
        line = next(r for r in lo.raws if r.name == TUNNEL_SOURCE)
        lo.raws = [r for r in lo.raws if r.name != TUNNEL_SOURCE]
        for p in pending.values():
            if p.section == IFACE and p.netns == lo.netns and p is not lo and \
                    any(r.name in VXLAN_DEFINING for r in p.raws) and \
                    not any(r.name == TUNNEL_SOURCE for r in p.raws):
                p.raws.append(line)


def _below_ipv6_mtu(raws: list[RawAttribute]) -> bool:
    mtus = [r.value for r in raws if r.name == "mtu"]
    return bool(mtus) and mtus[-1].isdigit() and int(mtus[-1]) < IPV6_MIN_MTU


def _bond_master_to_slaves(pending: dict, report: Report) -> None:
    """`bond-master BOND` on a slave (Debian ifenslave's form) is the slave's
    name on BOND's bond-slaves line. ifupdown2 has no such attribute (it
    leaves the bond without that slave); netcfg does what the file says, as
    ifupdown with ifenslave does (docs/compat.md)."""
    for p in list(pending.values()):
        if p.section != IFACE or not any(r.name == BOND_MASTER for r in p.raws):
            continue
        kept = []
        for raw in p.raws:
            if raw.name != BOND_MASTER:
                kept.append(raw)
                continue
            bond = pending.get((IFACE, p.netns, raw.value))
            if bond is None or not any(r.name == "bond-slaves" or
                                       (r.name.startswith("bond-") and r.name != BOND_MASTER)
                                       for r in bond.raws):
                where = f"namespace {p.netns}" if p.netns else "the host namespace"
                report.error(raw.loc, f"{p.name}: bond-master names {raw.value}, which is not "
                             f"a bond declared in {where}; declare 'iface {raw.value}' with "
                             f"bond-slaves (or bond-mode)", BOND_MASTER)
                continue
            bond.raws.append(RawAttribute("bond-slaves", p.name, raw.loc))
        p.raws = kept


def _why_not_a_bridge(obj: ConfigObject, owner: str) -> str:
    """A bridge attribute on a stanza that is no bridge: what makes one. As in
    ifupdown2 (addons/bridge.py _is_bridge), bridge-ports or bridge-vlan-aware
    does; its other attributes only configure a bridge made so. Proxmox's SDN
    file adds `iface vmbr0` lines to the host's vmbr0 and is read with it
    (`source` from /etc/network/interfaces), never alone."""
    if owner != "bridge" or obj.kind == "bridge":
        return ""
    return (f": an interface is a bridge when its stanzas write bridge-ports (or "
            f"bridge-vlan-aware), as in ifupdown2, and no stanza of {obj.name} does. If a "
            f"file that declares it is read with this one (Proxmox's SDN file adds to the "
            f"host's vmbr0), check them together: netcfg check -c /etc/network/interfaces")


def _why_not_a_mesh(obj: ConfigObject, owner: str) -> str:
    """batman-hop-penalty on a hard interface (ifupdown-ng's batman
    executor: batctl hardif IF hop_penalty N); ifupdown2 ignores it there."""
    if owner != "batadv" or obj.kind == "batadv":
        return ""
    return (f": a mesh interface is one whose stanza writes batman-ifaces, and a "
            f"{obj.kind} cannot be one of its hard interfaces (batman-adv needs an "
            f"Ethernet-like device), whose own hop penalty this line would be")


def _mac_octets(mac: str) -> str:
    """ifupdown2 hands the MAC to `ip link add`, whose parser takes one hex
    digit for an octet (42:38:39:ff:00:1, as its own examples write it)."""
    octets = mac.lower().split(":")
    if all(1 <= len(o) <= 2 and all(c in "0123456789abcdef" for c in o) for o in octets):
        return ":".join(o.rjust(2, "0") for o in octets)
    return mac.lower()   # not a MAC: the hwaddress check says so, at the line


# What an ifupdown alias stanza (`iface eth0:0 inet static`) may write: its
# address and what ifupdown adds with it. Anything else (a link-type, an mtu)
# makes it no alias, and its name is refused as a device name.
ALIAS_ATTRIBUTES = frozenset({"address", "netmask", "broadcast", "network", "scope",
                              "pointopoint", "gateway", "metric",
                              # its lines run with the base's (docs/compat.md)
                              "pre-up", "up", "post-up", "pre-down", "down", "post-down"})


def _alias_on_base(stanza: Stanza, aliases: dict[str, str], report: Report) -> Stanza:
    """`iface eth0:0 inet static` (ifupdown's alias): ifupdown runs `ip addr
    add ADDRESS dev eth0:0 label eth0:0`, and the kernel takes eth0:0 as
    eth0 (dev_ioctl cuts the name at ':'): a secondary address on eth0. So
    the stanza's lines go to eth0's stanza, its netmask folded into its own
    addresses first (eth0's netmask may differ). ``aliases``: alias -> base,
    for `auto eth0:0`."""
    base, colon, label = stanza.name.partition(":")
    if (stanza.keyword != IFACE or not colon or not base or not label
            or stanza.method not in (None, "static")
            or any(a.name not in ALIAS_ATTRIBUTES for a in stanza.attributes)):
        return stanza
    aliases[stanza.name] = base
    return Stanza(stanza.keyword, base, stanza.loc, stanza.family, stanza.method,
                  list(stanza.attributes))


def _label_alias_addresses(stanza: Stanza, alias: str) -> None:
    """An alias stanza's IPv4 addresses carry its name as their label
    (`ip addr add A dev eth0:0 label eth0:0`; kinds/address_label.py);
    IPv6 addresses have none."""
    if stanza.family not in (None, "inet"):
        return
    labelled = [RawAttribute("address-label", f"{alias} {word}", raw.loc)
                for raw in stanza.attributes if raw.name == "address"
                for word in raw.value.split() if ":" not in word]
    stanza.attributes.extend(labelled)


def _fold_netmask(stanza: Stanza, report: Report) -> None:
    """ifupdown's `netmask` is its own stanza's: given to the stanza's
    addresses written without a prefix (an inet6 stanza's is a length), so
    an alias stanza's or an inet6 stanza's netmask never meets another
    stanza's. An address with a prefix keeps it, as in ifupdown2 (Debian's
    ifupdown 0.8 takes the netmask): a warning when the two differ."""
    masks = [a for a in stanza.attributes if a.name == "netmask"]
    addresses = [a for a in stanza.attributes if a.name == "address"]
    if len(masks) != 1 or not addresses:
        return   # none; twice or alone: the builder's errors say so
    netmask = masks[0]
    kept = []
    for raw in stanza.attributes:
        if raw.name == "address":
            raw = RawAttribute(raw.name, " ".join(_with_netmask(stanza.name, w, netmask, report)
                                                  for w in raw.value.split()), raw.loc)
        if raw is not netmask:
            kept.append(raw)
    stanza.attributes = kept


def _with_netmask(name: str, word: str, netmask: RawAttribute, report: Report) -> str:
    address, slash, length = word.partition("/")
    try:
        masked = ipaddress.ip_interface(f"{address}/{netmask.value}")
    except ValueError:
        return word   # not an address or no netmask: the value checks say so, at the line
    if not slash:
        return str(masked)
    if length != str(masked.network.prefixlen):
        report.warning(netmask.loc, f"{name}: netmask {netmask.value} "
                       f"(/{masked.network.prefixlen}) differs from the prefix of address "
                       f"{word}: netcfg keeps /{length}, as ifupdown2; Debian's ifupdown 0.8 "
                       f"would take the netmask. Remove one", "netmask")
    return word


def _merge(stanza: Stanza, pending: dict, report: Report) -> None:
    netns = ROOT_NETNS
    attributes = stanza.attributes
    if any(a.name in LEGACY_NAMES for a in attributes):
        attributes = [RawAttribute(LEGACY_NAMES[a.name], a.value, a.loc)
                      if a.name in LEGACY_NAMES else a for a in attributes]
    if stanza.keyword == IFACE:
        # The namespace is part of the interface's identity, so it is taken out
        # before merging: `iface eth0` in two namespaces are two interfaces.
        placements = [a for a in attributes if a.name == PLACEMENT_ATTRIBUTE]
        if placements:
            netns = placements[-1].value
            if len({a.value for a in placements}) > 1:
                report.error(placements[-1].loc, f"{stanza.name}: netns is given twice with "
                             f"different values ({placements[0].value}, {netns})", "netns")
            attributes = [a for a in attributes if a.name != PLACEMENT_ATTRIBUTE]
            for message in value_checker("common", "netns")(netns):
                report.error(placements[-1].loc, f"{stanza.name}: netns: {message}", "netns")
    key = (stanza.keyword, netns, stanza.name)
    p = pending.get(key)
    if p is None:
        p = pending[key] = _Pending(stanza.keyword, stanza.name, netns, stanza.loc)
    elif p.raws:
        if stanza.family and stanza.family in p.methods:
            _address_again(stanza, attributes, p.raws, report)
        attributes = _not_repeated(attributes, p.raws)
    if netns != ROOT_NETNS and p.netns_loc is None:
        p.netns_loc = placements[-1].loc
    p.raws.extend(attributes)
    if stanza.family:
        earlier = p.methods.get(stanza.family)
        if earlier and stanza.method and earlier[0] and earlier[0] != stanza.method:
            report.error(stanza.loc, f"{stanza.name}: {stanza.family} method {stanza.method} "
                         f"contradicts {earlier[0]} at {earlier[1]}", stanza.family)
        if stanza.method or not earlier:
            p.methods[stanza.family] = (stanza.method or "", stanza.loc)


def _address_again(stanza: Stanza, attributes: list[RawAttribute],
                   earlier: list[RawAttribute], report: Report) -> None:
    """An address a later `iface NAME FAMILY METHOD` stanza writes again: Debian's
    ifupdown 0.8 configures each stanza of an interface in turn, and the kernel
    refuses the second add of an address it holds with the same prefix (EEXIST,
    "ipv4: Address already assigned"), so its `ifup` fails there (Debian
    ifupdown's testcase.1: eth3's 1.2.3.4/31 in two stanzas). The defect is
    refused at the second line, as that peer fails on it, when both stanzas are
    in one file; a stanza another file adds (interfaces.d, Proxmox's SDN file)
    repeats the host's lines by design and is merged, as ifupdown2 merges it."""
    first = {word: r.loc for r in earlier if r.name == "address" and r.loc.file == stanza.loc.file
             for word in r.value.split()}
    for a in attributes:
        if a.name != "address":
            continue
        for word in a.value.split():
            if word in first and "/" in word:
                report.error(a.loc, f"{stanza.name}: address {word} is written again in "
                             f"another 'iface {stanza.name} {stanza.family}' stanza (first at "
                             f"line {first[word].line}); a device holds it once, and Debian's "
                             f"ifupdown 0.8, which configures each stanza in turn, fails here "
                             f"(the kernel: Address already assigned). Remove one", "address")


def _not_repeated(attributes: list[RawAttribute], earlier: list[RawAttribute]) -> list[RawAttribute]:
    """A later stanza's lines, without those an earlier stanza of the same
    interface already wrote with the same value (`mtu 9000` in both its inet
    and inet6 stanzas): ifupdown2 applies each stanza in turn, so such a line
    is the same setting twice. Imperative lines are kept: ifupdown2 runs
    every stanza's. A different value stays an error (the builder's "given
    twice"): which one ifupdown2 leaves depends on its order of work."""
    written = {(r.name, r.value) for r in earlier}
    return [a for a in attributes
            if a.name in COMMAND_ATTRIBUTES or (a.name, a.value) not in written]


class _ObjectBuilder:
    """Turns one _Pending into a ConfigObject. Holds per-run caches only."""

    def __init__(self, report: Report):
        self.report = report
        self.by_link_type = registry.kinds_by_link_type()
        self.by_attribute = registry.kinds_by_defining_attribute()
        self.owner = registry.attribute_owner()
        # Attribute specs allowed for each kind: {kind: {attr: spec}}.
        self.allowed: dict[str, dict[str, AttributeSpec]] = {}
        for kind in registry.kinds():
            specs: dict[str, AttributeSpec] = {}
            for group in kind.attribute_groups():
                specs.update(group_attributes(group))
            self.allowed[kind.name] = specs
        # Generated configs repeat values (`mtu 9000`, `bridge-stp no`) thousands
        # of times; each distinct (attribute, text) is parsed and checked once.
        self.scalar_cache: dict[tuple[str, str, str], object] = {}

    def build(self, p: _Pending) -> ConfigObject | None:
        kind_name = self._infer_kind(p) if p.section == IFACE else p.section
        if kind_name is None:
            return None
        obj = ConfigObject(section=p.section, name=p.name, kind=kind_name, netns=p.netns, loc=p.loc)
        if p.netns_loc is not None:
            obj.locs[PLACEMENT_ATTRIBUTE] = p.netns_loc
        for family, (method, loc) in p.methods.items():
            obj.attrs[family] = method or "manual"
            obj.locs[family] = loc
        specs = self.allowed[kind_name]
        for raw in p.raws:
            if raw.name == KIND_ATTRIBUTE and p.section == IFACE:
                continue  # consumed by kind inference
            if p.section == TARGET and raw.name == PLACEMENT_ATTRIBUTE:
                obj.netns = raw.value
                obj.locs[raw.name] = raw.loc
                continue
            spec = specs.get(raw.name)
            if spec is None:
                self._unknown_attribute(obj, raw, specs)
                continue
            self._add_value(obj, spec, raw)
        return obj

    def _infer_kind(self, p: _Pending) -> str | None:
        # kind -> (what selected it, where), in the order written
        found: dict[str, tuple[str, SourceLocation]] = {}
        for raw in p.raws:
            if raw.name == KIND_ATTRIBUTE:
                kind = self.by_link_type.get(raw.value)
                if kind is None:
                    self.report.error(raw.loc, f"{p.name}: link-type {raw.value} is not one of "
                                      f"{', '.join(sorted(self.by_link_type))}", KIND_ATTRIBUTE)
                    return None
                found.setdefault(kind.name, (f"link-type {raw.value}", raw.loc))
            else:
                kind = self.by_attribute.get(raw.name)
                if kind is not None:
                    found.setdefault(kind.name, (raw.name, raw.loc))
        for method, loc in p.methods.values():
            if method == "loopback":
                found.setdefault("loopback", ("method loopback", loc))
        if len(found) > 1:
            # Reported where the second kind was written: that is what contradicts.
            (k1, (a1, _)), (k2, (a2, loc)) = list(found.items())[:2]
            self.report.error(loc, f"{p.name}: {a2} makes it a {k2}, but {a1} already made it "
                              f"a {k1}; an interface has one kind", a2.split()[0])
            return None
        if found:
            return next(iter(found))
        claimed = registry.kind_claiming_name(p.name)
        return claimed.name if claimed else "physical"

    def _unknown_attribute(self, obj: ConfigObject, raw: RawAttribute,
                           specs: dict[str, AttributeSpec]) -> None:
        owner = self.owner.get(raw.name)
        if owner is not None and (raw.name != PLACEMENT_ATTRIBUTE):
            self.report.error(raw.loc, f"{obj.label()}: {raw.name} applies to {owner} "
                              f"{'interfaces' if obj.section == IFACE else 'stanzas'}, and "
                              f"{obj.name} is a {obj.kind}{_why_not_a_bridge(obj, owner)}"
                              f"{_why_not_a_mesh(obj, owner)}",
                              raw.name)
            return
        found = explain(raw.name, raw.value)
        if found and found.accepted:
            # Not in the model (never the kernel's): the if-*.d hooks read it
            # from the parsed stanzas (unsupported.hook_lines).
            self.report.diagnostics.append(
                inert_warning(raw.loc, f"{obj.label()}: {raw.name} {found.reason}", raw.name))
            return
        if found:
            self.report.error(raw.loc, f"{obj.label()}: {raw.name} is not supported: "
                              f"{found.reason}", raw.name)
            return
        # Suggest from every attribute: a misspelt defining attribute
        # (bridge-prots) leaves the kind undecided, so the kind's own list
        # would not contain the word meant.
        self.report.error(raw.loc, f"{obj.label()}: unknown attribute '{raw.name}'"
                          f"{did_you_mean(raw.name, self.owner)}", raw.name)

    def _add_value(self, obj: ConfigObject, spec: AttributeSpec, raw: RawAttribute) -> None:
        name = spec.name
        if spec.group == "bridge-port" and obj.kind == "bridge" and "=" in raw.value:
            self._add_per_port(obj, spec, raw)
            return
        cache_key = (spec.group, name, raw.value)
        value = self.scalar_cache.get(cache_key) if spec.type != "array" else None
        if value is None:
            try:
                value = parse_value(spec, raw.value)
                messages = value_checker(spec.group, name)(value)
            except ValueError as e:
                messages = [str(e)]
            if messages:
                self.report.error(raw.loc, f"{obj.label()}: {name}: {messages[0]}", name)
                # Remember it was written, so kinds do not also say it is missing.
                obj.locs.setdefault(name, raw.loc)
                return
            if spec.type != "array":
                self.scalar_cache[cache_key] = value
        if spec.syntax:
            for note in value_notes(spec, raw.value):
                self._note(spec, raw.loc, f"{obj.label()}: {name}: {note}")
        if name in obj.attrs:
            if spec.repeatable:
                obj.attrs[name] = obj.attrs[name] + value
                return
            if name in MERGED_LINES:
                # ifupdown2 joins every line's ports (lib/addon.py
                # _get_ifaceobj_bridge_ports), skipping 'none'; a port
                # written twice is one port.
                have = [v for v in obj.attrs[name] if v != "none"]
                obj.attrs[name] = have + [v for v in value if v not in have and v != "none"]
                return
            self.report.error(raw.loc, f"{obj.label()}: {name} is given twice (first at "
                              f"{obj.locs[name]}); write it once" +
                              (", listing all values on one line" if spec.type == "array" else ""),
                              name)
            return
        obj.attrs[name] = value
        obj.locs[name] = raw.loc


    def _note(self, spec: AttributeSpec, loc: SourceLocation, message: str) -> None:
        """A value's note: a warning; one about a part that does nothing on
        this host (unsupported.INERT_NOTE_SYNTAXES) is one --strict refuses."""
        if spec.syntax in INERT_NOTE_SYNTAXES:
            self.report.diagnostics.append(inert_warning(loc, message, spec.name))
        else:
            self.report.warning(loc, message, spec.name)

    def _add_per_port(self, obj: ConfigObject, spec: AttributeSpec, raw: RawAttribute) -> None:
        """ifupdown2's per-port form on the bridge (`bridge-pathcosts swp1=4
        swp2=4`, addons/bridge.py parse_interface_list_value): each value is
        typed and checked as the port's own line would be, and kept as
        {port: value} until compile/validate.py hands each port its value
        (bridge_port_forms), once the ports are known."""
        name = spec.name
        obj.locs.setdefault(name, raw.loc)
        if spec.kernel is None or spec.kernel.place != PORT:
            self.report.error(raw.loc, f"{obj.label()}: {name} PORT=VALUE is a per-port "
                              f"form only for the port options; write '{name} VALUE'", name)
            return
        if name in obj.attrs:
            # ifupdown2 reads only the first line of these (get_attr_value_first):
            # a second line would be ignored there, so it is refused here.
            self.report.error(raw.loc, f"{obj.label()}: {name} is given twice (first at "
                              f"{obj.locs[name]}); ifupdown2 reads only the first line: "
                              f"write every PORT=VALUE on one line", name)
            return
        per_port: dict[str, object] = {}
        for entry in raw.value.split():
            port, sep, text = entry.partition("=")
            if not sep or not port or not text:
                self.report.error(raw.loc, f"{obj.label()}: {name}: '{entry}' is not PORT=VALUE; "
                                  f"write '{name} PORT=VALUE ...' or '{name} VALUE' for "
                                  f"every port", name)
                return
            try:
                value = parse_value(spec, text)
                messages = value_checker(spec.group, name)(value)
            except ValueError as e:
                messages = [str(e)]
            if messages:
                self.report.error(raw.loc, f"{obj.label()}: {name} {entry}: {messages[0]}", name)
                return
            for note in value_notes(spec, text):
                self._note(spec, raw.loc, f"{obj.label()}: {name} {entry}: {note}")
            if port in per_port and per_port[port] != value:
                self.report.error(raw.loc, f"{obj.label()}: {name} gives {port} two values "
                                  f"({per_port[port]!r}, {value!r})", name)
                return
            per_port[port] = value
        obj.attrs[name] = PerPort(per_port)
        obj.locs[name] = raw.loc


class PerPort(dict):
    """{port name: value} of a per-port form on a bridge, from the builder to
    validate.bridge_port_forms, which moves each value onto its port; never
    left in a finished model."""


# Attributes whose several lines ifupdown2 merges into one list.
# bond-slaves: one line per `bond-master` slave (_bond_master_to_slaves).
MERGED_LINES = frozenset({"bridge-ports", "bond-slaves"})


def _mark_auto(parsed: ParsedConfig, model: Model, report: Report,
               not_ours: set[str] = frozenset(), aliases: dict[str, str] | None = None) -> None:
    """`auto NAME` brings up every interface called NAME, in any namespace.

    A name on an auto line that no stanza declares and nothing else names
    (`auto eth0` alone) is not brought up: ifupdown2's `ifup -a` brings up
    the stanzas an auto line names and no other (networkinterfaces.py sets
    `auto` on a stanza's object; a bare name makes none), and ifupdown 0.8
    says "Ignoring unknown interface eth0=eth0". A warning at the line says
    so. A bare name that another stanza's line names (a bridge's port) comes
    up with what names it, or not, as in ifupdown2.
    """
    by_name: dict[str, list[ConfigObject]] = {}
    for obj in model.interfaces.values():
        by_name.setdefault(obj.name, []).append(obj)
    for name, loc in parsed.auto.items():
        if name in not_ours:
            continue
        if aliases and name in aliases:
            name = aliases[name]   # `ip link set eth0:0 up` brings eth0 up
        objs = by_name.get(name)
        if objs:
            for obj in objs:
                obj.auto = True
            continue
        if report.errors or any(st.name == name for st in parsed.stanzas):
            continue    # its stanza was refused (a bad family or method): the error says so
        if any(name in attr.value.split() for st in parsed.stanzas for attr in st.attributes):
            continue    # a port, a lower device: it comes up with what names it
        why = ifname_problem(name)
        if why is not None:     # as names.check_interface_names says it of a declared one
            report.error(loc, f"{quote(name)}: not a valid interface name: {why} "
                         f"({IFNAME_RULES})")
            continue
        report.warning(loc, f"auto {name}: no stanza declares {name}, so it is not brought "
                       f"up (ifupdown2 and ifupdown configure only declared interfaces); "
                       f"`iface {name} inet manual` brings it up")

