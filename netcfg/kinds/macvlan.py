"""A macvlan: a device with its own MAC address on top of another device.

    iface mv-t1
        netns t1
        macvlan-raw-device eth0
        macvlan-raw-netns ""    # extension: eth0 is in the host's namespace
        macvlan-mode bridge
        address 192.0.2.20/24

Much lighter than a veth plus a bridge port for giving a namespace its own
address on a physical segment (~40 kB of kernel memory, DESIGN.md). The
lower device is looked up in the macvlan's own namespace unless
macvlan-raw-netns says otherwise ("" is the host's namespace, as in
veth-peer-netns).
"""

from __future__ import annotations

from netcfg.kinds import registry
from netcfg.kinds.base import LOWER, Kind, Reference, drop_own_netns
from netcfg.kinds.veth import check_netns_attribute
from netcfg.model.model import IFACE, ConfigObject, Model

RAW, RAW_NETNS, MODE = "macvlan-raw-device", "macvlan-raw-netns", "macvlan-mode"
DEFAULT_MODE = "bridge"


def raw_netns(obj: ConfigObject) -> str:
    return obj.attrs.get(RAW_NETNS, obj.netns)


class Macvlan(Kind):
    name = "macvlan"
    link_type = "macvlan"
    defining_attributes = (RAW,)
    info_kind = "macvlan"
    # Neither can be changed on a live macvlan.
    # The id / mode and protocol are declared immutable in the schema.
    immutable_attributes = frozenset({RAW, RAW_NETNS})
    link_attributes = (RAW, RAW_NETNS)
    kernel_bytes = 40_000
    # As a vlan: the lower device's MTU at creation, never bigger (EINVAL).
    mtu_from_lower = True

    def complete(self, obj: ConfigObject, report) -> None:
        drop_own_netns(obj, RAW_NETNS)

    def references(self, obj: ConfigObject):
        raw = obj.attrs.get(RAW)
        if raw is not None:
            yield Reference(RAW, LOWER, IFACE, raw_netns(obj), raw, obj.where(RAW))

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        check_netns_attribute(obj, RAW_NETNS, report)
        if RAW not in obj.attrs and RAW not in obj.locs:
            report.error(obj.loc,
                         f"{obj.label()}: a macvlan needs the device it sits on; add "
                         f"'{RAW} DEVICE'", RAW)

    def check_model(self, model: Model, report) -> None:
        """Lower devices the kernel refuses: lo (not Ethernet, EINVAL), and a
        bridge port or bond slave, whose one rx_handler the master holds
        (netdev_rx_handler_register: EBUSY, either way round)."""
        for obj in model.interfaces.values():
            if obj.kind != self.name or RAW not in obj.attrs:
                continue
            lower = model.iface(raw_netns(obj), obj.attrs[RAW])
            if lower is None:
                continue
            if lower.kind == "loopback":
                report.error(obj.where(RAW),
                             f"{obj.label()}: {RAW} {lower.name} is the loopback device; a "
                             f"macvlan sits on an Ethernet device", RAW)
                continue
            master = model.master_of(lower)
            if master is not None and getattr(registry.kind(master.kind),
                                              "takes_rx_handler", False):
                report.error(obj.where(RAW),
                             f"{obj.label()}: {RAW} {lower.name} is a port of {master.kind} "
                             f"{master.name}, which takes all its frames; the kernel refuses a "
                             f"macvlan there (EBUSY). Put the macvlan on {master.name} "
                             f"instead", RAW)

    def create_params(self, obj: ConfigObject) -> dict:
        # The kernel finds the lower device in the namespace of the socket the
        # request is sent on, then creates the macvlan in its own namespace.
        params = {"link": obj.attrs.get(RAW),
                  "mode": obj.attrs.get(MODE, DEFAULT_MODE)}
        if raw_netns(obj) != obj.netns:  # the lower device lives elsewhere
            params["link_netns"] = raw_netns(obj)
        return params


KIND = Macvlan()
