"""The kernel's ip6gretap kind (tunnel_kinds.py; a config writes tunnel-mode ip6gretap)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("ip6gretap", "ip6gretap", ipv6=True, ethernet=True,
                     module="ip6_gre")
