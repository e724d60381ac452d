"""The kernel's ip6tnl kind (tunnel_kinds.py; a config writes tunnel-mode ip6ip6)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("ip6tnl", "ip6ip6", ipv6=True, ethernet=False,
                     module="ip6_tunnel")
