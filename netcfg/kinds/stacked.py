"""What a macvlan and an ipvlan share: a device made on top of a lower device
(an Ethernet port, a bond, a bridge), possibly in another namespace.

Each kind names its two attributes (``macvlan-raw-device``,
``macvlan-raw-netns``) and its mode settings; the lookup of the lower device,
the checks the kernel makes of it and the create request are written once
here. The lower device is looked up in the device's own namespace unless
the ``*-raw-netns`` attribute says otherwise ("" is the host's namespace, as
in veth-peer-netns).
"""

from __future__ import annotations

from typing import Any

from netcfg.kinds import registry
from netcfg.kinds.base import LOWER, Kind, Reference, drop_own_netns
from netcfg.kinds.veth import check_netns_attribute
from netcfg.model.model import IFACE, ConfigObject, Model


class Stacked(Kind):
    """A kind whose device sits on a lower device it cannot leave."""

    raw: str = ""          # the attribute naming the lower device
    raw_netns: str = ""    # the attribute naming the lower device's namespace
    # (create parameter, attribute, the kernel's default) of the mode settings.
    settings: tuple[tuple[str, str, str], ...] = ()
    kernel_bytes = 40_000  # DESIGN.md
    # As a vlan: the lower device's MTU at creation, never bigger (EINVAL).
    mtu_from_lower = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.link_type = cls.info_kind = cls.name
        cls.defining_attributes = (cls.raw,)
        # Neither can be changed on a live device; the schema declares the
        # immutable settings (the mode).
        cls.immutable_attributes = frozenset({cls.raw, cls.raw_netns})
        cls.link_attributes = (cls.raw, cls.raw_netns)

    def lower_netns(self, obj: ConfigObject) -> str:
        return obj.attrs.get(self.raw_netns, obj.netns)

    def setting(self, obj: ConfigObject, attribute: str) -> str:
        """The setting as written, else the kernel's default."""
        return obj.attrs.get(attribute, next(d for _, a, d in self.settings if a == attribute))

    def complete(self, obj: ConfigObject, report) -> None:
        drop_own_netns(obj, self.raw_netns)

    def references(self, obj: ConfigObject):
        raw = obj.attrs.get(self.raw)
        if raw is not None:
            yield Reference(self.raw, LOWER, IFACE, self.lower_netns(obj), raw, obj.where(self.raw))

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        check_netns_attribute(obj, self.raw_netns, report)
        if self.raw not in obj.attrs and self.raw not in obj.locs:
            report.error(obj.loc, f"{obj.label()}: {self._a()} needs the device it sits on; "
                                  f"add '{self.raw} DEVICE'", self.raw)

    def check_model(self, model: Model, report) -> None:
        for _obj in self.stacked_on_usable_lowers(model, report):
            pass

    def stacked_on_usable_lowers(self, model: Model, report):
        """This kind's devices that name a lower device, less those whose lower
        device the kernel refuses, reported: lo (not Ethernet, EINVAL), and a
        bridge port or bond slave, whose one rx_handler the master holds
        (netdev_rx_handler_register: EBUSY, either way round)."""
        raw = self.raw
        for obj in model.interfaces.values():
            if obj.kind != self.name or raw not in obj.attrs:
                continue
            lower = model.iface(self.lower_netns(obj), obj.attrs[raw])
            if lower is not None and lower.kind == "loopback":
                report.error(obj.where(raw), f"{obj.label()}: {raw} {lower.name} is the "
                                             f"loopback device; {self._a()} sits on an Ethernet "
                                             f"device", raw)
                continue
            master = model.master_of(lower) if lower is not None else None
            if master is not None and getattr(registry.kind(master.kind), "takes_rx_handler",
                                              False):
                report.error(obj.where(raw),
                             f"{obj.label()}: {raw} {lower.name} is a port of {master.kind} "
                             f"{master.name}, which takes all its frames; the kernel refuses "
                             f"{self._a()} there (EBUSY). Put the {self.name} on {master.name} "
                             f"instead", raw)
                continue
            yield obj

    def create_params(self, obj: ConfigObject) -> dict:
        # The kernel finds the lower device in the namespace of the socket the
        # request is sent on, then creates the device in its own namespace.
        params = {"link": obj.attrs.get(self.raw)}
        for param, attribute, _default in self.settings:
            params[param] = self.setting(obj, attribute)
        if self.lower_netns(obj) != obj.netns:  # the lower device lives elsewhere
            params["link_netns"] = self.lower_netns(obj)
        return params

    def _a(self) -> str:
        return f"{'an' if self.name[0] in 'aeiou' else 'a'} {self.name}"
