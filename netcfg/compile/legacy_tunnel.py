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
is tunnel or v4tunnel, or it writes tunnel-mode): elsewhere `local` or
`mode` stay unknown attributes, with their "did you mean".
"""

from __future__ import annotations

from netcfg.compile.syntax import RawAttribute, Stanza

import ipaddress

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
               # ifupdown's peer of the tunnel's point-to-point address
               "dstaddr": "pointopoint"}


def tunnel_lines(stanza: Stanza) -> Stanza:
    """The stanza with its tunnel lines in netcfg's spelling; others unchanged."""
    names = {a.name for a in stanza.attributes}
    if stanza.method not in TUNNEL_METHODS and "tunnel-mode" not in names:
        return stanza
    attributes = [RawAttribute(SHORT_NAMES[a.name], a.value, a.loc) if a.name in SHORT_NAMES
                  else a for a in stanza.attributes]
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
