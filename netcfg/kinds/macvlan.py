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
from netcfg.model.model import ConfigObject, Model

HWADDRESS = "hwaddress"


class Macvlan(Stacked):
    name = "macvlan"
    raw, raw_netns = "macvlan-raw-device", "macvlan-raw-netns"
    settings = (("mode", "macvlan-mode", "bridge"),)

    def check_model(self, model: Model, report) -> None:
        """A stacked device's checks of the lower device, and a MAC address
        the lower device answers to already: its own, or another macvlan's
        on it. The kernel refuses to bring such a macvlan up (macvlan_open:
        EADDRINUSE), and check had said ok (the foreign-device property's
        2,000-case run applied 5 such configs and was refused each time).
        Only written addresses can be compared; passthru takes the lower
        device's address by design."""
        answered: dict[tuple[str, str], dict[str, ConfigObject]] = {}
        for obj in self.stacked_on_usable_lowers(model, report):
            mac = obj.attrs.get(HWADDRESS)
            if mac is None or self.setting(obj, "macvlan-mode") == "passthru":
                continue
            key = (self.lower_netns(obj), obj.attrs[self.raw])
            if key not in answered:
                lower = model.iface(*key)
                own = lower.attrs.get(HWADDRESS) if lower is not None else None
                answered[key] = {str(own).lower(): lower} if own is not None else {}
            other = answered[key].setdefault(str(mac).lower(), obj)
            if other is not obj:
                whose = (f"the address of {key[1]}, the device it sits on" if other.key == key
                         else f"macvlan {other.label()}'s, on the same device {key[1]}")
                report.error(obj.where(HWADDRESS),
                             f"{obj.label()}: hwaddress {mac} is {whose}; the kernel refuses "
                             f"to bring up a macvlan whose address its lower device already "
                             f"answers to (EADDRINUSE): give it another", HWADDRESS)


KIND = Macvlan()
