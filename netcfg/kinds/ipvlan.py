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

from netcfg.kinds.stacked import Stacked
from netcfg.model.model import ConfigObject, Model

MODE, FLAGS = "ipvlan-mode", "ipvlan-flags"


class Ipvlan(Stacked):
    name = "ipvlan"
    raw, raw_netns = "ipvlan-raw-device", "ipvlan-raw-netns"
    # The kernel's defaults: IPVLAN_MODE_L2, no flags (bridge).
    settings = (("mode", MODE, "l2"), ("flags", FLAGS, "bridge"))

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        super().check(obj, model, report)
        if "hwaddress" in obj.attrs:
            report.error(obj.where("hwaddress"),
                         f"{obj.label()}: an ipvlan has its lower device's MAC address; "
                         f"remove hwaddress (a macvlan has one of its own)", "hwaddress")

    def check_model(self, model: Model, report) -> None:
        """A stacked device's checks of the lower device, and siblings on one
        lower device that disagree on its mode or flags."""
        first: dict[tuple[str, str], ConfigObject] = {}
        for obj in self.stacked_on_usable_lowers(model, report):
            key = (self.lower_netns(obj), obj.attrs[self.raw])
            sibling = first.setdefault(key, obj)
            for attribute in (MODE, FLAGS):
                mine, theirs = self.setting(obj, attribute), self.setting(sibling, attribute)
                if mine != theirs:
                    report.error(obj.where(attribute),
                                 f"{obj.label()}: {attribute} {mine}, but {sibling.name} on "
                                 f"the same device {key[1]} has {theirs}; the kernel keeps one "
                                 f"per device", attribute)

    def read_back(self, attrs: dict, notes: list[str], name: str) -> None:
        attrs.pop("hwaddress", None)   # the lower device's, not a setting of the ipvlan


KIND = Ipvlan()
