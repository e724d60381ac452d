"""The kernel's sit kind (tunnel_kinds.py; a config writes tunnel-mode sit)."""

from netcfg.kinds.tunnel_kinds import TunnelDevice

KIND = TunnelDevice("sit", "sit", ipv6=False, ethernet=False,
                     module="sit")
