"""The loopback device ``lo``.

    auto lo
    iface lo inet loopback
        address 10.255.0.1/32

Every namespace has its own ``lo`` from the moment it exists, so netcfg only
configures it (addresses, routes, VRF) and never creates or deletes it.
"""

from __future__ import annotations

from netcfg.kinds.base import Kind
from netcfg.model.model import ConfigObject, Model

NAME = "lo"


class Loopback(Kind):
    name = "loopback"
    # A loopback is never a bridge port, so only the common attributes apply.
    traits = ("common",)
    creatable = False
    # `iface lo inet loopback` without `auto lo` (ifupdown-ng's vlan-complex
    # fixture): ifupdown2 leaves lo up; a stanza without auto must not take it down.
    up_without_auto = True
    # The kernel's lo carries no IFLA_INFO_KIND; read-back recognises it by name.
    info_kind = None
    kernel_bytes = 0  # exists anyway; nothing to save or spend
    default_mtu = 65536
    max_mtu = 65575  # lo has no maximum of its own; the schema's

    def claims_name(self, name: str) -> bool:
        return name == NAME

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        # `iface foo inet loopback` selects this kind too; only lo is a loopback.
        if obj.name != NAME:
            report.error(obj.loc,
                         f"{obj.label()}: only {NAME} is a loopback device; write "
                         f"'iface {NAME} inet loopback', or use 'link-type dummy' for "
                         f"another device that holds addresses without a link")


KIND = Loopback()
