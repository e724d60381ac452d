"""The kernel's vti kind (tunnel_kinds.py; a config writes tunnel-mode vti)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("vti", "vti", ipv6=False, ethernet=False,
                     module="ip_vti")
