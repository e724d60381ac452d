"""A device netcfg configures but does not create: a NIC port.

    iface swp1
        mtu 9000

    iface br0
        bridge-ports swp1 swp2    # swp2 is not declared: implied physical

This is the fallback kind of a declared iface with no kind-defining
attribute, and of an undeclared port named in the root namespace. Its
attributes are the common and bridge-port ones; it has none of its own.
"""

from __future__ import annotations

from netcfg.kinds.base import Kind


class Physical(Kind):
    name = "physical"
    # Hardware comes and goes with the machine, not with the config.
    creatable = False
    # Real NICs have no IFLA_INFO_KIND (or a driver-specific one).
    info_kind = None
    kernel_bytes = 0  # exists anyway; lowering cannot save it


KIND = Physical()
