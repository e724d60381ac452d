"""The kernel's ip6gre kind (tunnel_kinds.py; a config writes tunnel-mode ip6gre)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("ip6gre", "ip6gre", ipv6=True, ethernet=False,
                     module="ip6_gre")
