"""The kernel's gretap kind (tunnel_kinds.py; a config writes tunnel-mode gretap)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("gretap", "gretap", ipv6=False, ethernet=True,
                     module="ip_gre")
