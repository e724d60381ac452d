"""The kernel's gre kind (tunnel_kinds.py; a config writes tunnel-mode gre)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("gre", "gre", ipv6=False, ethernet=False,
                     module="ip_gre")
