"""The kernel's ipip kind (tunnel_kinds.py; a config writes tunnel-mode ipip)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("ipip", "ipip", ipv6=False, ethernet=False,
                     module="ipip")
