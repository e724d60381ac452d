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

ifupdown2 takes mode, local, endpoint, ttl and tos as aliases of its
tunnel-* attributes (addons/tunnel.py), and tunnel-physdev of tunnel-dev;
ifupdown-ng writes tunnel-remote for the endpoint.
The short words are renamed only in a stanza that is a tunnel (its method
is tunnel or v4tunnel, or it writes tunnel-mode): elsewhere `local` or
`mode` stay unknown attributes, with their "did you mean".
"""

from __future__ import annotations

from netcfg.compile.syntax import RawAttribute, Stanza

TUNNEL_METHODS = ("tunnel", "v4tunnel")
SHORT_NAMES = {"mode": "tunnel-mode", "endpoint": "tunnel-endpoint", "local": "tunnel-local",
               "ttl": "tunnel-ttl", "tos": "tunnel-tos", "tunnel-physdev": "tunnel-dev",
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
    return Stanza(stanza.keyword, stanza.name, stanza.loc, stanza.family, stanza.method,
                  attributes)
