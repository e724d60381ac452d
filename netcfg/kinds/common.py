"""Attributes every interface accepts: addresses, gateway, mtu, MAC, routes,
VRF membership, namespace.

    iface eth1
        address 192.0.2.10/24
        address 2001:db8::10/64
        gateway 192.0.2.1
        mtu 9000
        route 198.51.100.0/24 via 192.0.2.254 metric 10
        vrf red
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from netcfg.kinds import registry
from netcfg.kinds.address_label import complete_labels
from netcfg.kinds.base import LOWER, MASTER, PORT, REQUIRES, ROUTE_DEV, Reference, Trait
from netcfg.model.model import IFACE, ROOT_NETNS, ConfigObject, Model

ETH_MAX_MTU = 65535    # most devices' max_mtu; lo and vrf say otherwise (kind.max_mtu)
ETH_DATA_LEN = 1500    # what ether_setup gives a new device, a portless bridge included
IPV6_MIN_MTU = 1280    # below it the kernel turns IPv6 off on the device
# Per-device IPv6 state.
IPV6_SETTINGS = ("disable-ipv6", "addr-gen-mode", "accept-dad", "dad-transmits", "privext",
                 "accept-ra")
# The metric of the prefix routes of all the interface's addresses (IFA_RT_PRIORITY).
ADDRESS_METRIC = "address-metric"
LOOPBACK = "lo"
DEFAULT_ROUTE = {4: "0.0.0.0/0", 6: "::/0"}


class Common(Trait):
    name = "common"

    def complete(self, obj: ConfigObject, report) -> None:
        if obj.implicit:
            return  # implied objects carry no written attributes
        addresses = obj.attrs.get("address")
        netmask = obj.attrs.pop("netmask", None)
        netmask_loc = obj.locs.pop("netmask", None)
        if addresses:
            obj.attrs["address"] = [_with_prefix(obj, a, netmask, netmask_loc, report)
                                    for a in addresses]
        elif netmask is not None:
            report.error(netmask_loc, f"{obj.label()}: netmask without an address", "netmask")
        complete_labels(obj, report)
        _complete_legacy(obj, report)
        for route in obj.attrs.get("route", ()):
            route.setdefault("dev", obj.name)

    def references(self, obj: ConfigObject):
        attrs = obj.attrs
        if "vrf" not in attrs and "route" not in attrs and "requires" not in attrs:
            return ()  # most interfaces: no generator to build and run
        return self._references(obj)

    def _references(self, obj: ConfigObject):
        for name in obj.attrs.get("requires", ()):
            yield Reference("requires", REQUIRES, IFACE, obj.netns, name, obj.where("requires"))
        if "vrf" in obj.attrs:
            yield Reference("vrf", MASTER, IFACE, obj.netns, obj.attrs["vrf"], obj.where("vrf"))
        for route in obj.attrs.get("route", ()):
            if route["dev"] != obj.name:
                yield Reference("route", ROUTE_DEV, IFACE, obj.netns, route["dev"], obj.where("route"))
            if "vrf" in route:
                yield Reference("route", ROUTE_DEV, IFACE, obj.netns, route["vrf"], obj.where("route"))

    def check_model(self, model: Model, report) -> None:
        addressed: list[ConfigObject] = []   # more than one address
        with_routes: list[ConfigObject] = []
        for obj in model.interfaces.values():   # once: 200k in a big switch
            attrs = obj.attrs
            if len(attrs.get("address") or ()) > 1:
                addressed.append(obj)
            if "route" in attrs or "gateway" in attrs:
                with_routes.append(obj)
        _check_address_conflicts(addressed, report)
        _check_loopback_names(model, report)
        _check_routes(model, with_routes, report)

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        _check_mtu(obj, model, report)
        mac = obj.attrs.get("hwaddress")
        if mac is not None and (int(mac[:2], 16) & 1 or mac == "00:00:00:00:00:00"):
            # is_valid_ether_addr: EADDRNOTAVAIL for either.
            report.error(obj.where("hwaddress"),
                         f"{obj.label()}: hwaddress {mac} is a "
                         f"{'multicast' if int(mac[:2], 16) & 1 else 'zero'} address; a device "
                         f"needs a unicast one (first byte even, e.g. 02:...)", "hwaddress")
        families = [ipaddress.ip_address(g).version for g in obj.attrs.get("gateway", ())]
        for version in set(families):
            if families.count(version) > 1:
                report.error(obj.where("gateway"),
                             f"{obj.label()}: more than one IPv{version} gateway", "gateway")
        for route in obj.attrs.get("route", ()):
            vrf = route.get("vrf")
            if vrf is not None:
                target = model.iface(obj.netns, vrf)
                if target is not None and target.kind != "vrf":
                    report.error(obj.where("route"),
                                 f"{obj.label()}: route to {route['to']} names vrf {vrf}, "
                                 f"which is a {target.kind}, not a vrf", "route")
        if "vrf" in obj.attrs:
            target = model.iface(obj.netns, obj.attrs["vrf"])
            if target is not None and target.kind != "vrf":
                report.error(obj.where("vrf"),
                             f"{obj.label()}: vrf {target.name} is a {target.kind}, not a vrf "
                             f"(a vrf has vrf-table)", "vrf")


def _with_prefix(obj: ConfigObject, address: str, netmask: str | None,
                 netmask_loc, report) -> str:
    """``address`` with its prefix: written, else the netmask line's (IPv4),
    else a host address, as ifupdown2 (Debian's ifupdown 0.8 would give a
    bare IPv4 address its classful mask: a warning says so). A prefix and a
    netmask that differ: the prefix, as ifupdown2 (ifupdown 0.8 takes the
    netmask), with a warning."""
    ip_text, slash, length = address.partition("/")
    ip = ipaddress.ip_address(ip_text)
    if ip.version == 6:
        # A bare IPv6 address is a host address, as `ip addr add` makes it (ifupdown-ng's
        # without-netmask fixture): /128, so that what is read back compares equal.
        return address if slash else f"{address}/128"
    if netmask is None and slash:
        return address
    if netmask is None:
        classful = _CLASSFUL.get(ip.packed[0] >> 5, 32)
        if classful != 32 and obj.attrs.get("inet") == "static":
            report.warning(obj.where("address"),
                           f"{obj.label()}: address {address} has no prefix and no netmask "
                           f"line: netcfg makes it {address}/32, as ifupdown2; Debian's "
                           f"ifupdown 0.8 gives it its class's /{classful}. Write the prefix",
                           "address")
        return f"{address}/32"
    masked = ipaddress.ip_interface(f"{ip_text}/{netmask}")
    if not slash:
        return str(masked)
    if int(length) != masked.network.prefixlen:
        report.warning(netmask_loc,
                       f"{obj.label()}: netmask {netmask} (/{masked.network.prefixlen}) "
                       f"differs from the prefix of address {address}: netcfg keeps "
                       f"/{length}, as ifupdown2; Debian's ifupdown 0.8 would take the netmask. "
                       f"Remove one", "netmask")
    return address


# ifupdown 0.8's mask for an IPv4 address without one, by its first three
# bits: class A (0xx) /8, B (10x) /16, C (110) /24; D and E none.
_CLASSFUL = {0: 8, 1: 8, 2: 8, 3: 8, 4: 16, 5: 16, 6: 24}


def _check_address_conflicts(addressed: list[ConfigObject], report) -> None:
    """An address written twice on one interface is an error (the kernel
    answers EEXIST to the second). The same address on two interfaces is
    not: the kernel allows it, and real hosts rely on it (an unnumbered
    loopback /32 repeated on uplinks, hosting providers' layouts); ifupdown2
    applies it too (docs/compat.md). ``addressed``: the interfaces with more
    than one address, in the model's order."""
    for obj in addressed:
        addresses = obj.attrs["address"]
        seen: dict[str, str] = {}
        for address in addresses:
            ip = address.split("/")[0]
            first = seen.setdefault(ip, address)
            if first is address:
                continue
            if ":" in ip and first != address:
                # IPv4 keeps one address per (address, prefix); IPv6 one per
                # address (EEXIST "address already assigned").
                report.error(obj.where("address"),
                             f"{obj.label()}: IPv6 address {ip} is written with two prefixes, "
                             f"{first} and {address}; a device holds an IPv6 address "
                             f"once. Keep one", "address")
            elif first == address:
                report.error(obj.where("address"),
                             f"{obj.label()}: address {address} is written twice; the kernel "
                             f"holds it once. Remove one", "address")


def is_up(obj: ConfigObject) -> bool:
    """Up once applied: on an auto line (or a loopback) and not link-down
    (plan/diff.is_up)."""
    return (obj.auto or registry.kind(obj.kind).up_without_auto) and \
        not obj.attrs.get("link-down")


def _related(obj: ConfigObject, model: Model, role: str) -> list[ConfigObject]:
    """The objects ``obj`` names in ``role`` (its lower device, its ports)."""
    found = []
    for hook in registry.hooks_overriding(obj.kind, "references"):
        for ref in hook.references(obj):
            if ref.role == role:
                target = model.iface(ref.netns, ref.name)
                if target is not None:
                    found.append(target)
    return found


def effective_mtu(obj: ConfigObject, model: Model, depth: int = 0) -> int | None:
    """The MTU the device has once applied, or None where the config does not
    decide it: written, else the kernel's for the kind (a vlan or macvlan
    takes its lower device's at creation; a bridge with ports ends with its
    smallest port's). A physical port's is the hardware's: None."""
    mtu = obj.attrs.get("mtu")
    if mtu is not None or depth > 8:  # deeper is a cycle, reported elsewhere
        return mtu
    try:
        kind = registry.kind(obj.kind)
    except KeyError:
        return None
    if getattr(kind, "mtu_from_lower", False):
        lower = _related(obj, model, LOWER)
        return effective_mtu(lower[0], model, depth + 1) if lower else None
    if getattr(kind, "mtu_follows_ports", False):
        ports = _related(obj, model, PORT)
        if not ports:
            return ETH_DATA_LEN
        mtus = [effective_mtu(port, model, depth + 1) for port in ports]
        return None if None in mtus else min(mtus)
    return getattr(kind, "default_mtu", None)


def _check_mtu(obj: ConfigObject, model: Model, report) -> None:
    """The MTU relations the kernel enforces: a device's own maximum, a vlan or
    macvlan no bigger than its lower device, and IPv6 needs 1280."""
    attrs = obj.attrs
    mtu = attrs.get("mtu")
    kind = registry.kind(obj.kind)
    if mtu is not None:
        limit = getattr(kind, "max_mtu", ETH_MAX_MTU)
        if mtu > limit:
            report.error(obj.where("mtu"),
                         f"{obj.label()}: mtu {mtu} is above a {obj.kind}'s maximum, {limit}",
                         "mtu")
        if getattr(kind, "mtu_from_lower", False):
            _check_lower_mtu(obj, mtu, model, report)
    six = [a for a in attrs.get("address", ()) if ":" in a]
    written = [s for s in IPV6_SETTINGS if s in attrs]
    if not six and not written:
        return
    below = _ipv6_mtu_gap(obj, model)
    if below is not None and below.port is not None:
        # Ends at 1280 or more, but not on the way: see _ipv6_mtu_gap.
        port = below.port.name
        for setting in (*written, *(["address"] if six else [])):
            what = f"IPv6 address {six[0]}" if setting == "address" else setting
            report.error(obj.where(setting),
                         f"{obj.label()}: {what} on a bridge whose MTU drops to {below.mtu} "
                         f"when port {port} joins, before its mtu {mtu} is set (the kernel "
                         f"gives a bridge its smallest port's MTU as ports join); below "
                         f"{IPV6_MIN_MTU} the kernel drops the bridge's IPv6 state (its "
                         f"addresses and settings) and makes it anew with the defaults when "
                         f"the MTU rises. Give {port} 'mtu {IPV6_MIN_MTU}' or more, or remove "
                         f"{'the address' if setting == 'address' else setting}", setting)
        return
    for setting in written:
        if below is not None:
            # No IPv6 state at all below 1280 (see _ipv6_mtu_gap): no
            # net.ipv6.conf.IF to write (ENOENT), no IFLA_INET6_ADDR_GEN_MODE
            # to set (EAFNOSUPPORT), nothing to read back.
            report.error(obj.where(setting),
                         f"{obj.label()}: {setting} on an interface whose MTU is {below.mtu}; "
                         f"below {IPV6_MIN_MTU} the kernel has no IPv6 on it at all, and no "
                         f"{setting} setting to write. Remove {setting}, or raise the mtu",
                         setting)
    if not six:
        return
    if attrs.get("disable-ipv6"):
        report.error(obj.where("address"),
                     f"{obj.label()}: IPv6 address {six[0]} on an interface with "
                     f"'disable-ipv6 yes'; the kernel refuses it. Remove one of them",
                     "address")
        return
    if below is not None:
        report.error(obj.where("address"),
                     f"{obj.label()}: IPv6 address {six[0]} on an interface whose MTU is "
                     f"{below.mtu}; "
                     f"the kernel turns IPv6 off below {IPV6_MIN_MTU} and refuses the address. "
                     f"Raise the mtu to {IPV6_MIN_MTU} or more", "address")


@dataclass(frozen=True, slots=True)
class _MtuGap:
    mtu: int                          # the lowest MTU the device has
    port: ConfigObject | None = None  # the bridge port that lowers it on the way, if it ends higher


def _ipv6_mtu_gap(obj: ConfigObject, model: Model) -> _MtuGap | None:
    """Whether the device's MTU is below IPV6_MIN_MTU once applied, or on the
    way there; None when neither (or the config does not say: a physical
    port's MTU is the hardware's).

    The kernel's rule (net/ipv6/addrconf.c, addrconf_notify): on
    NETDEV_CHANGEMTU to below IPV6_MIN_MTU it calls addrconf_ifdown(dev,
    true), which unhooks and frees the device's inet6_dev: its addresses,
    its net.ipv6.conf.IF sysctls (disable_ipv6, accept_ra, accept_dad,
    dad_transmits, use_tempaddr) and its addr_gen_mode all go. When the MTU
    rises to 1280 or more, the same notifier makes a new one (ipv6_add_dev),
    which copies net.ipv6.conf.default: what was written is not restored.

    On the way: a bridge's MTU is its smallest port's each time one joins
    (br_mtu_auto_adjust), until an MTU is set after creation, so a written
    bridge mtu is a link-set after its ports join (plan/diff.py). A port
    below 1280 takes the bridge below it in between, and every IPv6 setting
    the link-add or an address carried is gone (the foreign-device
    property's 2,000-case run: br0 lost `addr-gen-mode none`). Only IPv6
    settings and addresses are hit: routes come after the link-set (the
    device is up by then)."""
    mtu = obj.attrs.get("mtu")
    final = mtu if mtu is not None else effective_mtu(obj, model)
    if final is not None and final < IPV6_MIN_MTU:
        return _MtuGap(final)
    if mtu is None or not getattr(registry.kind(obj.kind), "mtu_follows_ports", False):
        return None
    lowest = None
    for port in _related(obj, model, PORT):
        port_mtu = effective_mtu(port, model)
        if port_mtu is not None and port_mtu < IPV6_MIN_MTU and (
                lowest is None or port_mtu < lowest.mtu):
            lowest = _MtuGap(port_mtu, port)
    return lowest


def _check_lower_mtu(obj: ConfigObject, mtu: int, model: Model, report) -> None:
    lowers = _related(obj, model, LOWER)
    if not lowers:
        return
    lower = lowers[0]
    lower_mtu = effective_mtu(lower, model)
    follows = getattr(registry.kind(lower.kind), "mtu_follows_ports", False)
    if follows and "mtu" not in lower.attrs and _related(lower, model, PORT):
        # Its MTU is 1500 when made and follows its ports as they join,
        # maybe after this device is made; the kernel lowers an upper device
        # with it (NETDEV_CHANGEMTU), never raises it.
        limit = ETH_DATA_LEN if lower_mtu is None else min(ETH_DATA_LEN, lower_mtu)
        if mtu > limit:
            report.error(obj.where("mtu"),
                         f"{obj.label()}: mtu {mtu} on {lower.name}, a bridge whose mtu is not "
                         f"written: its MTU follows its ports as they join, and may be {limit} "
                         f"when or after {obj.name} is made. Write 'mtu {mtu}' (or more) "
                         f"on {lower.name}", "mtu")
        return
    if lower_mtu is None:
        return  # a physical port's: the hardware's
    if mtu > lower_mtu:
        said = (f"mtu {lower_mtu} at {lower.where('mtu')}" if "mtu" in lower.attrs
                else f"the kernel's {lower_mtu} for a new {lower.kind}")
        report.error(obj.where("mtu"),
                     f"{obj.label()}: mtu {mtu} is bigger than its lower device {lower.name}'s "
                     f"({said}); the kernel refuses a {obj.kind} bigger than the device it "
                     f"sits on. Lower this mtu or raise {lower.name}'s", "mtu")


def _check_loopback_names(model: Model, report) -> None:
    """Every namespace has its lo: a device netcfg would create by that name
    (a veth's peer, a bridge) already exists there (EEXIST)."""
    # model.namespaces holds every namespace in use by now (validate implies
    # the undeclared ones); netns_names() would walk every interface.
    for netns in (ROOT_NETNS, *model.namespaces):
        obj = model.iface(netns, LOOPBACK)
        if obj is None or obj.kind == "loopback":
            continue
        try:
            creatable = registry.kind(obj.kind).creatable
        except KeyError:
            continue
        if creatable:
            report.error(obj.loc,
                         f"{obj.label()}: {LOOPBACK} is the namespace's loopback device, which "
                         f"every namespace has; a {obj.kind} cannot have that name. Rename it",
                         "veth-peer-name" if obj.implicit else None)


def _routes(obj: ConfigObject):
    """(attribute, route) of ``route`` and ``gateway`` (a default route)."""
    for route in obj.attrs.get("route", ()):
        yield "route", route
    for gateway in obj.attrs.get("gateway", ()):
        route = {"to": DEFAULT_ROUTE[ipaddress.ip_address(gateway).version], "via": gateway,
                 "dev": obj.name}
        if "vrf" in obj.attrs:
            route["vrf"] = obj.attrs["vrf"]
        if gateway_onlink(obj, gateway):
            route["onlink"] = True
        yield "gateway", route


def gateway_onlink(obj: ConfigObject, gateway: str) -> bool:
    """A `gateway` outside every prefix of its interface is reached on the
    link (onlink), as ifupdown2 adds every gateway route (its policy
    l3_intf_default_gateway_set_onlink); inside one, onlink changes nothing
    and is left out, so the route reads back as written."""
    ip = ipaddress.ip_address(gateway)
    if ip.version == 6 and ip.is_link_local:
        return False
    return not any(ip in ipaddress.ip_interface(a).network for a in obj.attrs.get("address", ())
                   if (":" in a) == (ip.version == 6))



def _check_routes(model: Model, with_routes: list[ConfigObject], report) -> None:
    """What the kernel checks when a route is added: one route per prefix,
    table and metric; an outgoing device that is up (ENETDOWN); a gateway on
    a prefix of that device (fib_check_nh: "Nexthop has invalid gateway") or
    link-local (IPv6), and never one of the namespace's own IPv6 addresses.
    ``with_routes``: the interfaces with route or gateway lines."""
    if not with_routes:
        return
    seen: dict[tuple, tuple[ConfigObject, str, dict]] = {}
    local6: dict[str, set] = {}
    connected = _connected_routes(model)
    for obj in sorted(with_routes, key=lambda o: o.loc):
        for attribute, route in _routes(obj):
            where = obj.where(attribute)
            dev = model.iface(obj.netns, route.get("dev", obj.name))
            table = (("table", route["table"]) if "table" in route
                     else ("vrf", route["vrf"]) if "vrf" in route else None)
            identity = (obj.netns, route["to"], table, route.get("metric"))
            first = seen.setdefault(identity, (obj, attribute, route))
            if first[2] is not route:
                report.error(where,
                             f"{obj.label()}: a route to {route['to']} is already written at "
                             f"{first[0].where(first[1])}; the kernel keeps one route per "
                             f"prefix, table and metric. Remove one, or give one a metric",
                             attribute)
                continue
            if dev is None:
                continue  # a dangling dev, reported with the references
            family = 6 if ":" in route["to"] else 4
            if route.get("metric", USER_METRIC[family]) == KERNEL_METRIC[family]:
                owner = connected.get((obj.netns, table, route["to"]))
                if owner is not None:
                    report.error(where,
                                 f"{obj.label()}: the route to {route['to']} is the one the "
                                 f"kernel makes for {owner.name}'s address on that prefix "
                                 f"(same table and metric); it refuses a second. Leave the "
                                 f"route out, or give it a metric", attribute)
                    continue
            if not is_up(dev):
                if dev is obj and not dev.attrs.get("link-down"):
                    # ifupdown2: the route is part of the stanza's up state;
                    # `ifup -a` leaves a stanza without auto alone and `ifup
                    # NAME` brings it up with its routes (plan/diff.routes).
                    report.warning(where,
                                   f"{obj.label()}: the route to {route['to']} is not installed "
                                   f"now: no 'auto {obj.name}' line brings {obj.name} up, and "
                                   f"no up device needs it; `ifup {obj.name}` brings it up "
                                   f"with this route", attribute)
                    continue
                why = ("it has 'link-down yes'" if dev.attrs.get("link-down")
                       else f"no 'auto {dev.name}' line brings it up, and no up device needs it")
                report.error(where,
                             f"{obj.label()}: the route to {route['to']} goes out {dev.name}, "
                             f"which stays down ({why}); the kernel refuses a route through a "
                             f"device that is not up", attribute)
                continue
            if ":" in route["to"] and not _ipv6_on(dev, model):
                report.error(where,
                             f"{obj.label()}: the IPv6 route to {route['to']} goes out "
                             f"{dev.name}, which has IPv6 off (disable-ipv6, or an MTU below "
                             f"{IPV6_MIN_MTU}); the kernel refuses it", attribute)
                continue
            via = route.get("via")
            if via is not None:
                _check_gateway(obj, attribute, route, dev, model, local6, report)


# The metric of the route the kernel adds for an address's prefix, and the
# one a route written without a metric gets (IPv4: 0 for both; IPv6:
# IP6_RT_PRIO_ADDRCONF and IP6_RT_PRIO_USER).
KERNEL_METRIC = {4: 0, 6: 256}
USER_METRIC = {4: 0, 6: 1024}


def _connected_routes(model: Model) -> dict[tuple, ConfigObject]:
    """(netns, table, prefix) -> the device whose address makes the kernel add
    that prefix route: up devices only (the route exists while up), not
    host prefixes (/32, /128: no prefix route); in the device's VRF table."""
    routes: dict[tuple, ConfigObject] = {}
    for obj in model.interfaces.values():
        addresses = obj.attrs.get("address")
        if not addresses or not is_up(obj):
            continue
        table = ("vrf", obj.attrs["vrf"]) if "vrf" in obj.attrs else None
        for address in addresses:
            interface = ipaddress.ip_interface(address)
            if interface.network.prefixlen < interface.max_prefixlen:
                routes.setdefault((obj.netns, table, str(interface.network)), obj)
    return routes


def _ipv6_on(dev: ConfigObject, model: Model) -> bool:
    if dev.attrs.get("disable-ipv6"):
        return False
    below = _ipv6_mtu_gap(dev, model)
    return below is None or below.port is not None   # back to 1280 before any route is added


def _check_gateway(obj: ConfigObject, attribute: str, route: dict, dev: ConfigObject,
                   model: Model, local6: dict[str, set], report) -> None:
    gateway = ipaddress.ip_address(route["via"])
    where = obj.where(attribute)
    if dev.attrs.get("pointopoint") == str(gateway):
        return   # the kernel routes the peer through the device
    if (gateway.version == 6 and int(gateway) >> 32 == 0 and dev.kind == "sit"
            and dev.attrs.get("tunnel-endpoint") == "any"):
        # An IPv4-compatible gateway (::192.88.99.1, ifupdown's 6to4) on a
        # sit to any remote: the kernel gives the device ::LOCAL/96 and its
        # prefix route (net/ipv6/addrconf.c, sit_add_v4_addrs).
        return
    if route.get("onlink"):
        if attribute == "gateway":
            # Implied, as ifupdown2 adds every gateway onlink: a typo in the
            # gateway would otherwise pass unnoticed.
            report.warning(where, f"{obj.label()}: gateway {gateway} is on no prefix of "
                           f"{dev.name}: it is reached on the link (onlink), as ifupdown2 "
                           f"does", attribute)
        return
    if gateway.version == 6:
        if gateway.is_link_local:
            return  # on the link by definition
        if obj.netns not in local6:
            local6[obj.netns] = {ipaddress.ip_interface(a).ip
                                 for (netns, _), o in model.interfaces.items()
                                 if netns == obj.netns
                                 for a in o.attrs.get("address", ()) if ":" in a}
        if gateway in local6[obj.netns]:
            report.error(where,
                         f"{obj.label()}: gateway {gateway} of the route to {route['to']} is "
                         f"an address of this namespace; the kernel refuses a local IPv6 "
                         f"address as a gateway. Name the neighbour's address", attribute)
            return
    for address in dev.attrs.get("address", ()):
        network = ipaddress.ip_interface(address).network
        if network.version == gateway.version and gateway in network:
            return
    for other in _device_routes(dev, route, model):
        if gateway in ipaddress.ip_network(other["to"]):
            return
    prefixes = [a for a in dev.attrs.get("address", ())
                if ipaddress.ip_interface(a).version == gateway.version]
    has = (f"whose {'IPv4' if gateway.version == 4 else 'IPv6'} prefixes are "
           f"{', '.join(prefixes)}" if prefixes
           else f"which has no IPv{gateway.version} address")
    report.error(where,
                 f"{obj.label()}: gateway {gateway} of the route to {route['to']} is on no "
                 f"prefix of {dev.name}, {has}; the kernel refuses a gateway it cannot reach "
                 f"directly. Give {dev.name} an address on the gateway's network, or a route "
                 f"to it without 'via'", attribute)


def _device_routes(dev: ConfigObject, route: dict, model: Model):
    """Routes without a gateway through ``dev`` that the kernel looks in for
    ``route``'s gateway: its own table's, then the main table's."""
    table = route.get("table"), route.get("vrf")
    for obj in model.interfaces.values():
        if obj.netns != dev.netns or "route" not in obj.attrs:
            continue
        for other in obj.attrs["route"]:
            if "via" in other or other.get("dev", obj.name) != dev.name:
                continue
            other_table = other.get("table"), other.get("vrf")
            if other_table == (None, None) or other_table == table:
                yield other


TRAIT = Common()


# ifupdown's `inet dhcp` options, handed to the DHCP client (apply/dhcp.py).
DHCP_OPTIONS = ("hostname", "client", "leasehours", "leasetime", "vendor")


NOT_YET_APPLIED = {
    "scope": "the addresses get the kernel's scope (global; host for 127.0.0.0/8)",
}


def _complete_legacy(obj: ConfigObject, report) -> None:
    """ifupdown's keys, said in netcfg's terms: `network` checked and
    dropped; `metric` on the default routes `gateway` makes (as ifupdown's
    `ip route add default via GW metric M dev IF onlink`); `dad-attempts 0`
    is accept-dad 0; the DAD wait is not netcfg's."""
    attrs = obj.attrs
    if "network" in attrs:
        _check_network(obj, attrs.pop("network"), obj.locs.pop("network", obj.loc), report)
    dhcp = attrs.get("inet") == "dhcp" or attrs.get("inet6") == "dhcp"
    if "metric" in attrs:
        metric = attrs["metric"]
        gateways = attrs.pop("gateway", ())
        loc = obj.locs.pop("gateway", obj.where("metric"))
        for gateway in gateways:
            route = {"to": DEFAULT_ROUTE[ipaddress.ip_address(gateway).version],
                     "via": gateway, "dev": obj.name, "metric": metric}
            if "vrf" in attrs:
                route["vrf"] = attrs["vrf"]
            if gateway_onlink(obj, gateway):
                route["onlink"] = True   # as ifupdown adds it
            attrs.setdefault("route", []).append(route)
            obj.locs.setdefault("route", loc)
        if not dhcp:
            del attrs["metric"]
            if not gateways:
                report.warning(obj.where("metric"),
                               f"{obj.label()}: metric does nothing without a gateway or "
                               f"inet dhcp (ifupdown's meaning); remove it", "metric")
            obj.locs.pop("metric", None)
    for option in DHCP_OPTIONS:
        if option in attrs and not dhcp:
            report.warning(obj.where(option),
                           f"{obj.label()}: {option} is an option of inet dhcp, and "
                           f"{obj.name} has no dhcp method: it does nothing", option)
            del attrs[option]
    # Not applied yet: the diff (plan/diff.py HANDLED_ELSEWHERE), the address
    # operations (plan/addresses.py) and the DHCP client (apply/dhcp.py) do not
    # carry them; said at the line rather than sent as a link setting.
    for option in NOT_YET_APPLIED:
        if option == "scope" and attrs.get("scope") == "global":
            attrs.pop("scope")   # the kernel's own
            obj.locs.pop("scope", None)
        elif option in attrs and (option != "metric" or dhcp):
            del attrs[option]
            report.warning(obj.where(option),
                           f"{obj.label()}: {option} is accepted but not applied yet: "
                           f"{NOT_YET_APPLIED[option]}", option)
            obj.locs.pop(option, None)
    attempts = attrs.pop("dad-attempts", None)
    where = obj.locs.pop("dad-attempts", None)
    if attempts == 0:
        if attrs.setdefault("accept-dad", 0) != 0:
            report.error(where, f"{obj.label()}: dad-attempts 0 turns DAD off, and accept-dad "
                         f"{attrs['accept-dad']} at {obj.where('accept-dad')} turns it on; "
                         f"write one", "dad-attempts")
        obj.locs.setdefault("accept-dad", where)
    elif attempts is not None or "dad-interval" in attrs:
        attribute = "dad-interval" if attempts is None else "dad-attempts"
        report.warning(where or obj.where("dad-interval"),
                       f"{obj.label()}: {attribute}: ifup waits for the addresses' duplicate "
                       f"address detection to end; netcfg does not wait (the kernel's DAD "
                       f"runs as usual, with dad-transmits probes)", attribute)
    if attrs.pop("dad-interval", None) is not None:
        obj.locs.pop("dad-interval", None)


def _check_network(obj: ConfigObject, network: str, loc, report) -> None:
    """ifupdown ignores `network`; a value that is not the addresses'
    network is most likely a mistake in the address or its netmask."""
    ipv4 = [a for a in obj.attrs.get("address", ()) if ":" not in a]
    if not ipv4:
        report.warning(loc, f"{obj.label()}: network {network} without an IPv4 address does "
                       f"nothing", "network")
        return
    networks = {str(ipaddress.ip_interface(a).network.network_address) for a in ipv4}
    if network not in networks:
        report.warning(loc, f"{obj.label()}: network {network} is not the network of "
                       f"{', '.join(ipv4)} ({', '.join(sorted(networks))}); netcfg, as "
                       f"ifupdown, uses the address and its prefix. Check both", "network")
