"""An ipvlan: devices on top of another one that share its MAC address.

    iface ipv-t1
        netns t1
        ipvlan-raw-device eth0
        ipvlan-raw-netns ""    # extension: eth0 is in the host's namespace
        ipvlan-mode l3
        ipvlan-flags bridge
        address 192.0.2.21/24

Where macvlans would need a MAC address each (a switch port allowing one,
a cloud NIC filtering by MAC), ipvlans tell their traffic apart by IP
address. ifupdown2 has no ipvlan; the spelling follows its macvlan's, and
``link-type ipvlan`` names the kind as ``link-type macvlan`` does.

Mode and flags belong to the lower device (the kernel keeps one ipvlan
port per device, and a new ipvlan's mode becomes every sibling's): siblings
that disagree are refused at check, as they would not read back as written.
"""

from __future__ import annotations

from netcfg.kinds import registry
from netcfg.kinds.base import LOWER, Kind, Reference, drop_own_netns
from netcfg.kinds.veth import check_netns_attribute
from netcfg.model.model import IFACE, ConfigObject, Model

RAW, RAW_NETNS = "ipvlan-raw-device", "ipvlan-raw-netns"
MODE, FLAGS = "ipvlan-mode", "ipvlan-flags"
DEFAULTS = {MODE: "l2", FLAGS: "bridge"}   # the kernel's (IPVLAN_MODE_L2, no flags)


def raw_netns(obj: ConfigObject) -> str:
    return obj.attrs.get(RAW_NETNS, obj.netns)


class Ipvlan(Kind):
    name = "ipvlan"
    link_type = "ipvlan"
    defining_attributes = (RAW,)
    info_kind = "ipvlan"
    # Mode and flags are declared immutable in the schema; the lower device
    # cannot change on a live ipvlan either.
    immutable_attributes = frozenset({RAW, RAW_NETNS})
    link_attributes = (RAW, RAW_NETNS)
    kernel_bytes = 40_000
    # The lower device's MTU at creation, never bigger (ipvlan_change_mtu).
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
            report.error(obj.loc, f"{obj.label()}: an ipvlan needs the device it sits on; "
                                  f"add '{RAW} DEVICE'", RAW)
        if "hwaddress" in obj.attrs:
            report.error(obj.where("hwaddress"),
                         f"{obj.label()}: an ipvlan has its lower device's MAC address; "
                         f"remove hwaddress (a macvlan has one of its own)", "hwaddress")

    def check_model(self, model: Model, report) -> None:
        """Lower devices the kernel refuses (lo: EINVAL; a bridge port or bond
        slave, whose rx_handler the master holds: EBUSY), and siblings on one
        lower device that disagree on its mode or flags."""
        first: dict[tuple[str, str], ConfigObject] = {}
        for obj in model.interfaces.values():
            if obj.kind != self.name or RAW not in obj.attrs:
                continue
            key = (raw_netns(obj), obj.attrs[RAW])
            lower = model.iface(*key)
            if lower is not None and lower.kind == "loopback":
                report.error(obj.where(RAW), f"{obj.label()}: {RAW} {lower.name} is the "
                                             f"loopback device; an ipvlan sits on an Ethernet "
                                             f"device", RAW)
                continue
            master = model.master_of(lower) if lower is not None else None
            if master is not None and getattr(registry.kind(master.kind), "takes_rx_handler",
                                              False):
                report.error(obj.where(RAW),
                             f"{obj.label()}: {RAW} {lower.name} is a port of {master.kind} "
                             f"{master.name}, which takes all its frames; the kernel refuses an "
                             f"ipvlan there (EBUSY). Put the ipvlan on {master.name} instead",
                             RAW)
                continue
            sibling = first.setdefault(key, obj)
            for attribute in (MODE, FLAGS):
                mine = obj.attrs.get(attribute, DEFAULTS[attribute])
                theirs = sibling.attrs.get(attribute, DEFAULTS[attribute])
                if mine != theirs:
                    report.error(obj.where(attribute),
                                 f"{obj.label()}: {attribute} {mine}, but {sibling.name} on "
                                 f"the same device {key[1]} has {theirs}; the kernel keeps one "
                                 f"per device", attribute)

    def create_params(self, obj: ConfigObject) -> dict:
        # As a macvlan's: the lower device is looked up in the namespace of
        # the socket the request goes on, the ipvlan made in its own.
        params = {"link": obj.attrs.get(RAW), "mode": obj.attrs.get(MODE, DEFAULTS[MODE]),
                  "flags": obj.attrs.get(FLAGS, DEFAULTS[FLAGS])}
        if raw_netns(obj) != obj.netns:
            params["link_netns"] = raw_netns(obj)
        return params

    def read_back(self, attrs: dict, notes: list[str], name: str) -> None:
        attrs.pop("hwaddress", None)   # the lower device's, not a setting of the ipvlan


KIND = Ipvlan()
