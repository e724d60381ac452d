"""A dummy device: a link that is always up, to hold addresses.

    auto dum0
    iface dum0
        link-type dummy
        address 192.0.2.1/32

Selected only by ``link-type dummy`` (ifupdown2 spelling); it has no
attributes of its own.
"""

from __future__ import annotations

from netcfg.kinds.base import Kind


class Dummy(Kind):
    name = "dummy"
    link_type = "dummy"
    info_kind = "dummy"
    module_with_devices = "dummy"   # dummy0 in the host's namespace (numdummies=1)
    default_mtu = 1500  # ether_setup


KIND = Dummy()
