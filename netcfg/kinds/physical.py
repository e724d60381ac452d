"""A device netcfg configures but does not create: a NIC port.

    iface swp1
        mtu 9000

    iface br0
        bridge-ports swp1 swp2    # swp2 is not declared: implied physical

    iface swp30
        link-speed 1000       # ifupdown2's ethtool addon: autonegotiation off,
        link-duplex full      # 1000 Mb/s full duplex (ethtool netlink, no exec)

This is the fallback kind of a declared iface with no kind-defining
attribute, and of an undeclared port named in the root namespace. Its own
attributes are the ethtool link modes (kernel/ethtool.py reads them,
apply/ethtool.py sets them, both through pyroute2); the common and
bridge-port ones come from its traits.
"""

from __future__ import annotations

from netcfg.kinds.base import Kind
from netcfg.kinds.genl import GenlState
from netcfg.model.model import ConfigObject, Model

SPEED, DUPLEX, AUTONEG = "link-speed", "link-duplex", "link-autoneg"
# Set over the "ethtool" generic netlink family, not rtnetlink.
ETHTOOL_ATTRIBUTES = (SPEED, DUPLEX, AUTONEG)


class Physical(GenlState, Kind):
    name = "physical"
    genl_attributes = ETHTOOL_ATTRIBUTES
    # Hardware comes and goes with the machine, not with the config.
    creatable = False
    # Real NICs have no IFLA_INFO_KIND (or a driver-specific one).
    info_kind = None
    kernel_bytes = 0  # exists anyway; lowering cannot save it

    def complete(self, obj: ConfigObject, report) -> None:
        # ifupdown2 (addons/ethtool.py do_speed_settings): a speed without
        # `link-autoneg yes` turns autonegotiation off and forces the speed.
        if SPEED in obj.attrs and AUTONEG not in obj.attrs:
            obj.attrs[AUTONEG] = False
            obj.locs.setdefault(AUTONEG, obj.where(SPEED))

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        if obj.attrs.get(AUTONEG) and (SPEED in obj.attrs or DUPLEX in obj.attrs):
            written = SPEED if SPEED in obj.attrs else DUPLEX
            report.warning(obj.where(written),
                           f"{obj.label()}: {written} with link-autoneg yes advertises only "
                           f"the modes of that {written[5:]} (ethtool -s ... autoneg on "
                           f"{written[5:]} ...); ifupdown2 ignores it when autonegotiation is "
                           f"on", written)


KIND = Physical()
