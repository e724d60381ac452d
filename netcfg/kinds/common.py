"""Attributes every interface accepts: addresses, gateway, mtu, MAC, routes,
VRF membership, namespace.

    iface eth1
        address 192.0.2.10/24
        address 2001:db8::10/64
        gateway 192.0.2.1
        mtu 9000
        route 198.51.100.0/24 via 192.0.2.254 metric 10
        vrf red
"""

from __future__ import annotations

import ipaddress

from netcfg.compile.model import IFACE, ConfigObject, Model
from netcfg.kinds.base import MASTER, ROUTE_DEV, Reference, Trait


class Common(Trait):
    name = "common"

    def complete(self, obj: ConfigObject, report) -> None:
        if obj.implicit:
            return  # implied objects carry no written attributes
        addresses = obj.attrs.get("address")
        netmask = obj.attrs.pop("netmask", None)
        netmask_loc = obj.locs.pop("netmask", None)
        if addresses:
            obj.attrs["address"] = [_with_prefix(a, netmask) for a in addresses]
        elif netmask is not None:
            report.error(netmask_loc, f"{obj.label()}: netmask without an address", "netmask")
        for route in obj.attrs.get("route", ()):
            route.setdefault("dev", obj.name)

    def references(self, obj: ConfigObject):
        attrs = obj.attrs
        if "vrf" not in attrs and "route" not in attrs:
            return ()  # most interfaces: no generator to build and run
        return self._references(obj)

    def _references(self, obj: ConfigObject):
        if "vrf" in obj.attrs:
            yield Reference("vrf", MASTER, IFACE, obj.netns, obj.attrs["vrf"], obj.where("vrf"))
        for route in obj.attrs.get("route", ()):
            if route["dev"] != obj.name:
                yield Reference("route", ROUTE_DEV, IFACE, obj.netns, route["dev"], obj.where("route"))
            if "vrf" in route:
                yield Reference("route", ROUTE_DEV, IFACE, obj.netns, route["vrf"], obj.where("route"))

    def check_model(self, model: Model, report) -> None:
        _check_address_conflicts(model, report)

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        families = [ipaddress.ip_address(g).version for g in obj.attrs.get("gateway", ())]
        for version in set(families):
            if families.count(version) > 1:
                report.error(obj.where("gateway"),
                             f"{obj.label()}: more than one IPv{version} gateway", "gateway")
        for route in obj.attrs.get("route", ()):
            vrf = route.get("vrf")
            if vrf is not None:
                target = model.iface(obj.netns, vrf)
                if target is not None and target.kind != "vrf":
                    report.error(obj.where("route"),
                                 f"{obj.label()}: route to {route['to']} names vrf {vrf}, "
                                 f"which is a {target.kind}, not a vrf", "route")
        if "vrf" in obj.attrs:
            target = model.iface(obj.netns, obj.attrs["vrf"])
            if target is not None and target.kind != "vrf":
                report.error(obj.where("vrf"),
                             f"{obj.label()}: vrf {target.name} is a {target.kind}, not a vrf "
                             f"(a vrf has vrf-table)", "vrf")


def _with_prefix(address: str, netmask: str | None) -> str:
    if "/" in address:
        return address
    ip = ipaddress.ip_address(address)
    if netmask is not None and ip.version == 4:
        return str(ipaddress.ip_interface(f"{address}/{netmask}"))
    return f"{address}/{ip.max_prefixlen}"


def _check_address_conflicts(model: Model, report) -> None:
    """The same IP on two interfaces of one namespace and VRF is an error;
    tenants in different namespaces may overlap freely."""
    owners: dict[tuple[str, str, str], ConfigObject] = {}
    for obj in model.interfaces.values():
        vrf = obj.attrs.get("vrf", "")
        for address in obj.attrs.get("address", ()):
            ip = address.split("/")[0]
            first = owners.setdefault((obj.netns, vrf, ip), obj)
            if first is not obj:
                report.error(obj.where("address"),
                             f"{obj.label()}: address {ip} is also on {first.name} "
                             f"({first.where('address')}); an address belongs to one interface "
                             f"per namespace and VRF", "address")


TRAIT = Common()
