"""A macvlan: a device with its own MAC address on top of another device.

    iface mv-t1
        netns t1
        macvlan-raw-device eth0
        macvlan-raw-netns ""    # extension: eth0 is in the host's namespace
        macvlan-mode bridge
        address 192.0.2.20/24

Much lighter than a veth plus a bridge port for giving a namespace its own
address on a physical segment (~40 kB of kernel memory, DESIGN.md). The
lower device, its lookup and checks are a stacked device's (stacked.py).
"""

from __future__ import annotations

from netcfg.kinds.stacked import Stacked


class Macvlan(Stacked):
    name = "macvlan"
    raw, raw_netns = "macvlan-raw-device", "macvlan-raw-netns"
    settings = (("mode", "macvlan-mode", "bridge"),)


KIND = Macvlan()
