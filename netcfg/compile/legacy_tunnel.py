"""ifupdown's tunnel methods and ifupdown2's tunnel aliases, said in
netcfg's tunnel-* lines (netcfg/kinds/tunnel.py).

    iface gre1 inet tunnel             # Debian ifupdown: ip tunnel add gre1
        mode gre                       #   mode gre remote 198.51.100.2
        endpoint 198.51.100.2          #   local 192.0.2.1 ttl 64
        local 192.0.2.1
        ttl 64
        address 10.9.0.1
        netmask 255.255.255.252
        dstaddr 10.9.0.2               # ip addr add ... peer 10.9.0.2

    iface he-ipv6 inet6 v4tunnel       # ifupdown: ip tunnel add he-ipv6 mode sit ...

    iface tun6to4 inet6 6to4           # ifupdown: ip tunnel add tun6to4 mode sit
        local 192.0.2.1                #   remote any local 192.0.2.1 [ttl T]
                                       # ip addr add 2002:c000:0201::1/16 dev tun6to4
                                       # ip route add 2000::/3 via ::192.88.99.1 dev tun6to4

ifupdown2 takes mode, local, endpoint, ttl and tos as aliases of its
tunnel-* attributes (addons/tunnel.py), and tunnel-physdev of tunnel-dev;
ifupdown-ng writes tunnel-remote for the endpoint.
The short words are renamed only in a stanza that is a tunnel (its method
is tunnel or v4tunnel, it writes tunnel-mode, or `mode` names a tunnel
mode, as ifupdown-ng reads `mode gre` in any stanza): elsewhere `local` or
`mode` stay unknown attributes, with their "did you mean".

ifupdown-ng's executors, said in netcfg's lines (its keys, as its
executors/linux/gre, tunnel and vxlan read them):

    iface tun0                         # ifupdown-ng's gre executor:
        gre-local 203.0.113.2          #   ip link add tun0 type gre local L
        gre-remote 203.0.113.1         #   remote R ttl T nopmtudisc ignore-df
        gre-ttl 255
        gre-flags nopmtudisc ignore-df # tunnel-pmtudisc no, tunnel-ignore-df yes
        gre-dev eth0                   # tunnel-dev eth0 (netcfg binds; ng orders)

    iface vx_ptp1                      # its vxlan executor:
        vxlan-id 2342
        vxlan-local-ip 192.0.2.42      # vxlan-local-tunnelip
        vxlan-peer-ips 198.51.100.23   # one: the device's remote (vxlan-svcnodeip);
                                       # several: head-end replication (vxlan-remoteip)
        vxlan-peer-group ff42:1400::1  # vxlan-svcnodeip (alias vxlan-remote-group)
"""

from __future__ import annotations

import ipaddress

from netcfg.compile.syntax import RawAttribute, Stanza
from netcfg.kinds.tunnel import LOCAL_DEV
from netcfg.model.errors import Report

TUNNEL_METHODS = ("tunnel", "v4tunnel", "6to4")
SIXTOFOUR = "6to4"
# ifupdown's inet6.defn, method 6to4: the sit tunnel's route to the IPv6
# Internet (2000::/3) through RFC 3068's anycast relay, 192.88.99.1, said as
# an IPv4-compatible IPv6 gateway (the sit device sends to the IPv4 in it).
SIXTOFOUR_ROUTE = "2000::/3 via ::192.88.99.1"
SHORT_NAMES = {"mode": "tunnel-mode", "endpoint": "tunnel-endpoint", "local": "tunnel-local",
               "ttl": "tunnel-ttl", "tos": "tunnel-tos", "tunnel-physdev": "tunnel-dev",
               "encaplimit": "tunnel-encaplimit",   # ifupdown's inet6 tunnel
               "tunnel-remote": "tunnel-endpoint",   # ifupdown-ng's spelling
               "tunnel-hoplimit": "tunnel-ttl",      # ifupdown-ng's, for ip6gre
               # ifupdown's peer of the tunnel's point-to-point address
               "dstaddr": "pointopoint"}


# tunnel-mode's words (kinds/tunnel.py MODES and the schema's alias): a
# stanza whose `mode` is one of them is a tunnel, whatever its method.
TUNNEL_MODES = frozenset({"gre", "gretap", "ipip", "sit", "vti", "ip6gre", "ip6gretap",
                          "ip6ip6", "ipip6", "any", "vti6", "ip6tnl"})

# ifupdown-ng's gre executor (executors/linux/gre): `ip link add IF type
# GRE-MODE local L [remote R] [ttl T] [key K] [FLAGS]`; it exits 1 without
# gre-local. gre-dev is its dependency (brought up first): netcfg binds the
# tunnel to it as tunnel-dev, the underlay device (docs/compat.md).
GRE_NAMES = {"gre-local": "tunnel-local", "gre-remote": "tunnel-endpoint",
             "gre-ttl": "tunnel-ttl", "gre-mode": "tunnel-mode", "gre-dev": "tunnel-dev"}
GRE_FLAGS = "gre-flags"
# gre-flags words netcfg applies: ip-link's, as tunnel-pmtudisc / tunnel-ignore-df.
FLAG_WORDS = {"pmtudisc": ("tunnel-pmtudisc", "yes"), "nopmtudisc": ("tunnel-pmtudisc", "no"),
              "ignore-df": ("tunnel-ignore-df", "yes"),
              "noignore-df": ("tunnel-ignore-df", "no")}
GRE_KEYS = frozenset({*GRE_NAMES, GRE_FLAGS, "gre-key", "gre-endpoint"})
# ifupdown-ng's tunnel keys netcfg does not apply yet, refused at their line
# with why (rather than as unknown attributes): GRE keys and FOU/GUE.
_KEYS = "netcfg sends no GRE key yet (IFLA_GRE_IKEY/OKEY)"
NOT_YET = {"tunnel-key": _KEYS, "tunnel-ikey": _KEYS, "tunnel-okey": _KEYS, "key": _KEYS,
           "tunnel-encap": "netcfg sends no UDP encapsulation yet (IFLA_*_ENCAP_TYPE: fou, "
                           "gue)"}

# ifupdown-ng's vxlan executor's keys and its aliases of them
# (libifupdown/interface-file.c), in netcfg's spelling; vxlan-peer-ips is
# read by _vxlan_lines() below. ifupdown2's own names (vxlan-remoteip,
# vxlan-svcnodeip, vxlan-local-tunnelip) keep ifupdown2's meaning.
VXLAN_NAMES = {"vxlan-local-ip": "vxlan-local-tunnelip", "vxlan-peer-group": "vxlan-svcnodeip",
               "vxlan-remote-group": "vxlan-svcnodeip", "vxlan-dstport": "vxlan-port"}
PEER_IPS = ("vxlan-peer-ips", "vxlan-remote-ip")


def tunnel_lines(stanza: Stanza, report: Report | None = None) -> Stanza:
    """The stanza with its tunnel lines in netcfg's spelling; others unchanged.
    ``report`` gets the errors of lines that cannot be said (a gre-flags
    word netcfg does not apply); without one they are left as written."""
    names = {a.name for a in stanza.attributes}
    if names & VXLAN_NAMES.keys() or names.intersection(PEER_IPS):
        stanza = _vxlan_lines(stanza, report)
    if "use" in names:
        stanza = _wireguard_default(stanza, names)
    gre = bool(names & GRE_KEYS)
    if stanza.method not in TUNNEL_METHODS and "tunnel-mode" not in names and not gre \
            and not any(a.name == "mode" and a.value.strip() in TUNNEL_MODES
                        for a in stanza.attributes):
        return stanza
    attributes = [RawAttribute(SHORT_NAMES[a.name], a.value, a.loc) if a.name in SHORT_NAMES
                  else a for a in stanza.attributes]
    if gre:
        attributes = _gre_lines(stanza, attributes, report)
    if report is not None and names & NOT_YET.keys():
        attributes = _not_yet(stanza.name, attributes, report)
    if stanza.method == "v4tunnel" and "mode" not in names and "tunnel-mode" not in names:
        # ifupdown's inet6 v4tunnel: `ip tunnel add IF mode sit`, IPv6 over IPv4.
        attributes.insert(0, RawAttribute("tunnel-mode", "sit", stanza.loc))
    if stanza.method == SIXTOFOUR:
        attributes = _six_to_four(attributes, stanza)
    return Stanza(stanza.keyword, stanza.name, stanza.loc, stanza.family, stanza.method,
                  attributes)


def _six_to_four(attributes: list[RawAttribute], stanza: Stanza) -> list[RawAttribute]:
    """ifupdown's `inet6 6to4` (RFC 3056), as its inet6.defn does it: a sit
    tunnel to any remote from `local` (IPv4), the address
    2002:LOCAL-IN-HEX::1/16, and a route to 2000::/3 via ::192.88.99.1 (with
    `metric`). Its ttl and mtu are the tunnel's. A local that is no IPv4
    address gets no derived lines: tunnel.py refuses it at its line."""
    out = [RawAttribute("tunnel-mode", "sit", stanza.loc),
           RawAttribute("tunnel-endpoint", "any", stanza.loc)]
    if not any(a.name == "tunnel-ttl" for a in attributes):
        # ifupdown runs `ip tunnel add IF mode sit remote any local L [ttl T]`: made
        # through the ioctl without a ttl, the tunnel inherits the inner packet's (0);
        # made over netlink without IFLA_IPTUN_TTL it would get 64 (testcase.7, .9).
        out.append(RawAttribute("tunnel-ttl", "0", stanza.loc))
    local = next((a for a in attributes if a.name == "tunnel-local"), None)
    metric = next((a for a in attributes if a.name == "metric"), None)
    for raw in attributes:
        if raw is metric:
            continue   # the route's, below (ifupdown's `[[metric %metric%]]`)
        out.append(raw)
        if raw is not local:
            continue
        try:
            packed = ipaddress.IPv4Address(raw.value.strip()).packed
        except ValueError:
            continue
        hexaddress = "{:02x}{:02x}:{:02x}{:02x}".format(*packed)
        out.append(RawAttribute("address", f"2002:{hexaddress}::1/16", raw.loc))
        route = SIXTOFOUR_ROUTE + (f" metric {metric.value.strip()}" if metric else "")
        out.append(RawAttribute("route", route, metric.loc if metric else raw.loc))
    return out


def _gre_lines(stanza: Stanza, attributes: list[RawAttribute],
               report: Report | None) -> list[RawAttribute]:
    """ifupdown-ng's gre-* keys as tunnel-* lines (GRE_NAMES, FLAG_WORDS)."""
    out: list[RawAttribute] = []
    for raw in attributes:
        if raw.name in GRE_NAMES:
            out.append(RawAttribute(GRE_NAMES[raw.name], raw.value, raw.loc))
        elif raw.name == GRE_FLAGS:
            out.extend(_gre_flags(stanza.name, raw, report))
        elif raw.name == "gre-endpoint" and report is not None:
            report.error(raw.loc, f"{stanza.name}: gre-endpoint is not a key of ifupdown-ng's "
                         f"gre executor, which reads the remote end from gre-remote (and "
                         f"ignores this line); write 'gre-remote ADDRESS'", raw.name)
            # Refused already: kept as the endpoint so that no second error
            # says the tunnel has none.
            out.append(RawAttribute("tunnel-endpoint", raw.value, raw.loc))
        elif raw.name == "gre-key" and report is not None:
            report.error(raw.loc, f"{stanza.name}: gre-key is not applied yet: {_KEYS}; "
                         f"remove it, or configure both ends without it", raw.name)
        else:
            out.append(raw)
    names = {a.name for a in attributes}
    if "tunnel-mode" not in names and "gre-mode" not in names:
        # The executor's default, `ip link add IF type gre`.
        out.insert(0, RawAttribute("tunnel-mode", "gre", stanza.loc))
    if "gre-local" not in names and report is not None:
        first = next(a for a in attributes if a.name in GRE_KEYS)
        report.error(first.loc, f"{stanza.name}: ifupdown-ng's gre executor needs gre-local, "
                     f"this host's address, and makes no tunnel without it (it exits 1); "
                     f"write 'gre-local ADDRESS'", "gre-local")
    return out


def _not_yet(name: str, attributes: list[RawAttribute], report: Report) -> list[RawAttribute]:
    kept = []
    for raw in attributes:
        if raw.name in NOT_YET:
            report.error(raw.loc, f"{name}: {raw.name} is not applied yet: {NOT_YET[raw.name]}; "
                         f"remove it, or configure both ends without it", raw.name)
        else:
            kept.append(raw)
    return kept


def _gre_flags(name: str, raw: RawAttribute, report: Report | None) -> list[RawAttribute]:
    """`gre-flags nopmtudisc ignore-df`: ifupdown-ng pastes the words into its
    `ip link add`; netcfg applies the path MTU discovery and ignore-DF ones."""
    out = []
    for word in raw.value.split():
        if word in FLAG_WORDS:
            attribute, value = FLAG_WORDS[word]
            out.append(RawAttribute(attribute, value, raw.loc))
        elif report is not None:
            report.error(raw.loc, f"{name}: gre-flags: '{word}' is not a flag netcfg applies "
                         f"(it takes {', '.join(FLAG_WORDS)}, ip link's words for "
                         f"tunnel-pmtudisc and tunnel-ignore-df); remove it", GRE_FLAGS)
    return out


def _vxlan_lines(stanza: Stanza, report: Report | None) -> Stanza:
    """ifupdown-ng's vxlan keys in netcfg's spelling. vxlan-peer-ips, as its
    executor reads it: one address is the device's remote (`ip link add ...
    remote IP`, IFLA_VXLAN_GROUP: vxlan-svcnodeip); several are head-end
    replication, one all-zeros forwarding entry each (`bridge fdb append
    00:00:00:00:00:00 dev IF dst IP self permanent`: vxlan-remoteip). With
    vxlan-peer-group too, the executor refuses the device."""
    attributes = []
    for raw in stanza.attributes:
        if raw.name in VXLAN_NAMES:
            raw = RawAttribute(VXLAN_NAMES[raw.name], raw.value, raw.loc)
        elif raw.name in PEER_IPS:
            many = len(raw.value.split()) > 1
            raw = RawAttribute("vxlan-remoteip" if many else "vxlan-svcnodeip", raw.value,
                               raw.loc)
            group = next((a for a in stanza.attributes
                          if a.name in ("vxlan-peer-group", "vxlan-remote-group")), None)
            if group is not None and report is not None:
                report.error(raw.loc, f"{stanza.name}: {group.name} ({group.loc}) and the "
                             f"peers of this line exclude each other: the multicast group or "
                             f"the peers carry the broadcast traffic (ifupdown-ng refuses "
                             f"both too); remove one", "vxlan-peer-ips")
                continue
        attributes.append(raw)
    return Stanza(stanza.keyword, stanza.name, stanza.loc, stanza.family, stanza.method,
                  attributes)


# tunnel-mode -> the outer packets' IP version (kinds/tunnel.py MODES; a pure
# table here, as the compiler reads it before kinds are known).
IPV6_MODES = frozenset({"ip6gre", "ip6gretap", "ip6ip6", "ipip6", "any", "vti6", "ip6tnl"})


def local_from_device(pending: dict, report: Report) -> None:
    """ifupdown-ng's `tunnel-local-dev DEV`: the tunnel's local address is
    DEV's, which its tunnel executor reads from the kernel at ifup (the
    first IPv4 address `ip -4 addr show dev DEV` lists; for the IPv6 modes
    the first that is not temporary). When this config gives DEV a static
    address of the tunnel's family, that is the one (the first written:
    netcfg adds it first), and the line becomes a tunnel-local line. When
    it does not (DHCP, another program, a device the config does not name),
    the line stays: apply reads DEV's address from the kernel before it
    plans (apply/tunnel_local.py), and `check` says so at the line, since
    what the tunnel gets then depends on the host. ``pending``: build.py's
    merged stanzas, by key."""
    by_name = {(p.netns, p.name): p for p in pending.values() if p.section == "iface"}
    for p in by_name.values():
        line = next((r for r in p.raws if r.name == LOCAL_DEV), None)
        if line is None:
            continue
        if any(r.name == "tunnel-local" for r in p.raws):
            p.raws = [r for r in p.raws if r.name != LOCAL_DEV]
            report.error(line.loc, f"{p.name}: {LOCAL_DEV} and tunnel-local both give the "
                         f"tunnel's local address; remove one", LOCAL_DEV)
            continue
        mode = next((r.value.strip() for r in p.raws if r.name == "tunnel-mode"), "")
        version = 6 if mode in IPV6_MODES else 4
        device = line.value.strip()
        address = _first_address(by_name.get((p.netns, device)), version)
        if address is None:
            report.warning(line.loc, f"{p.name}: {LOCAL_DEV} {device}: this config gives "
                           f"{device} no static IPv{version} address, so the tunnel's local "
                           f"address is the one {device} has when netcfg applies (read from "
                           f"the kernel then, as ifupdown-ng reads it at ifup); apply refuses "
                           f"at this line if {device} has none. Write 'tunnel-local ADDRESS' "
                           f"to fix it", LOCAL_DEV)
            continue
        p.raws = [r if r is not line else RawAttribute("tunnel-local", address, line.loc)
                  for r in p.raws]


def _first_address(device, version: int) -> str | None:
    if device is None:
        return None
    for raw in device.raws:
        if raw.name != "address":
            continue
        for word in raw.value.split():
            try:
                interface = ipaddress.ip_interface(word)
            except ValueError:
                continue
            if interface.version == version:
                return str(interface.ip)
    return None


def _wireguard_default(stanza: Stanza, names: set[str]) -> Stanza:
    """`use wireguard` alone: ifupdown-ng's wireguard executor makes the
    device and runs `wg setconf IF /etc/wireguard/IF.conf`, its default
    wireguard-config-path (kinds/wireguard_conf.py)."""
    uses = next((a for a in stanza.attributes
                 if a.name == "use" and "wireguard" in a.value.split()), None)
    if uses is None or any(n.startswith("wireguard-") for n in names):
        return stanza
    default = RawAttribute("wireguard-config-path", f"/etc/wireguard/{stanza.name}.conf",
                           uses.loc)
    return Stanza(stanza.keyword, stanza.name, stanza.loc, stanza.family, stanza.method,
                  [*stanza.attributes, default])
