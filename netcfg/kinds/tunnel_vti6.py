"""The kernel's vti6 kind (tunnel_kinds.py; a config writes tunnel-mode vti6)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("vti6", "vti6", ipv6=True, ethernet=False,
                     module="ip6_vti")
