"""Linux bridge.

    auto br0
    iface br0
        bridge-ports swp1 swp2 bond0
        bridge-vlan-aware yes
        bridge-vids 100-200
        bridge-stp no

Ports are enslaved after both devices exist. On a VLAN-aware bridge,
bridge-vids / bridge-pvid written on the bridge are the defaults for ports
that say nothing themselves (ifupdown2 semantics).
"""

from __future__ import annotations

from netcfg.compile.model import IFACE, ConfigObject, Model
from netcfg.kinds.base import PORT, Kind, Reference, iter_names

# A Linux bridge holds at most this many ports (BR_MAX_PORTS - 1).
MAX_PORTS = 1023


class Bridge(Kind):
    name = "bridge"
    defining_attributes = ("bridge-ports", "bridge-vlan-aware")
    info_kind = "bridge"
    # Changing vlan filtering is possible live, but it rewrites every port's
    # VLAN table; re-creating is clearer and is what ifupdown2 does.
    immutable_attributes = frozenset({"bridge-vlan-aware"})
    kernel_bytes = 60_000

    def complete(self, obj: ConfigObject, report) -> None:
        if obj.attrs.get("bridge-ports") == ["none"]:
            obj.attrs["bridge-ports"] = []  # ifupdown2: a bridge without ports

    def references(self, obj: ConfigObject):
        loc = obj.where("bridge-ports")
        for port in iter_names(obj.attrs.get("bridge-ports")):
            yield Reference("bridge-ports", PORT, IFACE, obj.netns, port, loc)

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        ports = obj.attrs.get("bridge-ports", [])
        if len(ports) > MAX_PORTS:
            report.error(obj.where("bridge-ports"),
                         f"{obj.label()}: bridge-ports lists {len(ports)} ports; a Linux bridge "
                         f"holds at most {MAX_PORTS}. Split the ports over several bridges",
                         "bridge-ports")
        seen: set[str] = set()
        for port in ports:
            if port in seen:
                report.error(obj.where("bridge-ports"),
                             f"{obj.label()}: bridge-ports lists {port} twice", "bridge-ports")
            seen.add(port)
            if port == obj.name:
                continue  # reported as a cycle by the dependency check
        vlan_aware = obj.attrs.get("bridge-vlan-aware", False)
        if not vlan_aware:
            for attribute in ("bridge-vids", "bridge-pvid", "bridge-access",
                              "bridge-mcast-vlan-snooping"):
                if attribute in obj.attrs:
                    report.error(obj.where(attribute),
                                 f"{obj.label()}: {attribute} needs 'bridge-vlan-aware yes' on "
                                 f"the bridge", attribute)

    def create_params(self, obj: ConfigObject) -> dict:
        params = {"vlan_filtering": obj.attrs.get("bridge-vlan-aware", False)}
        for attribute, key in (("bridge-stp", "stp"), ("bridge-mcsnoop", "mcast_snooping"),
                               ("bridge-mcast-vlan-snooping", "mcast_vlan_snooping"),
                               ("bridge-ageing", "ageing_time")):
            if attribute in obj.attrs:
                params[key] = obj.attrs[attribute]
        if params["vlan_filtering"]:
            # Ports get exactly the VLANs the config gives them: no implicit
            # untagged VLAN 1 on every port (kernel default_pvid 1).
            params["default_pvid"] = 0
        return params


KIND = Bridge()
