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

import re

from netcfg.kinds.base import PORT, Kind, Reference, declared_params
from netcfg.kinds.bridge_port import warn_not_vlan_aware
from netcfg.kinds.common import effective_mtu
from netcfg.model.model import IFACE, ConfigObject, Model

# A Linux bridge holds at most this many ports (BR_MAX_PORTS - 1).
MAX_PORTS = 1023
FORWARD_DELAY, HASH_ELASTICITY = "bridge-fd", "bridge-hashel"
STP_FORWARD_DELAY = (2, 30)   # BR_MIN_FORWARD_DELAY, BR_MAX_FORWARD_DELAY in seconds
KERNEL_HASH_ELASTICITY = 16   # RHT_ELASTICITY: what the kernel reports whatever is set
PVE_DISABLE_MAC_LEARNING = "bridge-disable-mac-learning"
DEFAULT_PVID = "bridge-vlan-default-pvid"
ALLOW_UNTAGGED = "bridge-allow-untagged"
VLAN_AWARE = "bridge-vlan-aware"
# ifupdown2's: ports matching it are not netcfg's to remove (plan/scope.py).
CONDONE_REGEX = "bridge-ports-condone-regex"


class Bridge(Kind):
    name = "bridge"
    defining_attributes = ("bridge-ports", "bridge-vlan-aware")
    info_kind = "bridge"
    # bridge-vlan-aware is switched on the live bridge (IFLA_BR_VLAN_FILTERING,
    # as ifupdown2 does): re-creating it would drop every port netcfg does not
    # manage (Proxmox's guests). Turned off, the file's ports go back to the
    # default PVID (plan/vlans.py wanted_vlans). A file without the line asks for
    # a bridge that does not filter, as it did when the change re-created it.
    default_when_absent = {VLAN_AWARE: False}
    kernel_bytes = 60_000
    # The kernel sets a bridge's MTU to its smallest port's when a port joins,
    # unless the MTU was set by a change after creation (BROPT_MTU_SET_BY_USER;
    # one given in the create request does not count): the diff sets it once
    # the ports are in (plan/diff.py _KindInfo.create_time).
    mtu_follows_ports = True
    # A port's frames go to the bridge through the device's one rx_handler:
    # a macvlan cannot sit on a port (EBUSY), see kinds/macvlan.py.
    takes_rx_handler = True

    def complete(self, obj: ConfigObject, report) -> None:
        # Proxmox's, read by pve-common when it plugs a guest's port: no
        # kernel state of this file's devices (docs/compat.md), so not kept.
        obj.attrs.pop(PVE_DISABLE_MAC_LEARNING, None)
        if obj.attrs.get("bridge-ports") == ["none"]:
            obj.attrs["bridge-ports"] = []  # ifupdown2: a bridge without ports
        hashel = obj.attrs.get(HASH_ELASTICITY)
        if hashel is not None and hashel != KERNEL_HASH_ELASTICITY:
            # The kernel accepts the attribute and keeps 16 (br_multicast,
            # since Linux 5.0): taken as 16, so that the read-back matches.
            report.warning(obj.where(HASH_ELASTICITY),
                           f"{obj.label()}: {HASH_ELASTICITY} {hashel} has no effect: the "
                           f"kernel's is always {KERNEL_HASH_ELASTICITY}", HASH_ELASTICITY)
            obj.attrs[HASH_ELASTICITY] = KERNEL_HASH_ELASTICITY
        if DEFAULT_PVID in obj.attrs and not obj.attrs.get("bridge-vlan-aware"):
            # Dropped, not sent: a kernel without VLAN filtering ignores it
            # and reads nothing back, which would re-create the bridge on
            # every apply (the attribute is immutable). netcfg's own: no
            # "as ifupdown2 does" to say, unlike the port VLAN lines.
            report.warning(obj.where(DEFAULT_PVID),
                           f"{obj.label()}: {DEFAULT_PVID} does nothing: the bridge is not "
                           f"VLAN-aware (no bridge-vlan-aware yes); remove the line, or make "
                           f"the bridge VLAN-aware", DEFAULT_PVID)
            del obj.attrs[DEFAULT_PVID]

    def references(self, obj: ConfigObject):
        # A list, not a generator: 200k ports in big configs.
        ports = obj.attrs.get("bridge-ports")
        if not ports:
            return ()
        loc, netns = obj.where("bridge-ports"), obj.netns
        return [Reference("bridge-ports", PORT, IFACE, netns, port, loc) for port in ports]

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        ports = obj.attrs.get("bridge-ports", [])
        if len(ports) > MAX_PORTS:
            report.error(obj.where("bridge-ports"),
                         f"{obj.label()}: bridge-ports lists {len(ports)} ports; a Linux bridge "
                         f"holds at most {MAX_PORTS}. Split the ports over several bridges",
                         "bridge-ports")
        # A port listed twice, a loopback or bridge as a port: check_model.
        _warn_mtu_above_ports(obj, model, report)
        if obj.attrs.get("bridge-stp"):
            # With STP on the kernel refuses a forward delay outside 2-30 s
            # (br_set_forward_delay, ERANGE); with it off it keeps any.
            fd = obj.attrs.get(FORWARD_DELAY)
            if fd is not None and not STP_FORWARD_DELAY[0] <= fd <= STP_FORWARD_DELAY[1]:
                report.error(obj.where(FORWARD_DELAY),
                             f"{obj.label()}: {FORWARD_DELAY} {fd} is outside the "
                             f"{STP_FORWARD_DELAY[0]}-{STP_FORWARD_DELAY[1]} seconds the kernel "
                             f"allows with bridge-stp yes", FORWARD_DELAY)
        vlan_aware = obj.attrs.get("bridge-vlan-aware", False)
        condone = obj.attrs.get(CONDONE_REGEX)
        if condone is not None:
            try:
                re.compile(condone)
            except re.error as error:
                report.error(obj.where(CONDONE_REGEX),
                             f"{obj.label()}: {CONDONE_REGEX} {condone!r} is not a regular "
                             f"expression: {error}", CONDONE_REGEX)
        if ALLOW_UNTAGGED in obj.attrs:
            # Unlike bridge-vids/bridge-pvid, not a default for the ports:
            # ifupdown2 reads it on each port only, so on the bridge it does nothing.
            report.warning(obj.where(ALLOW_UNTAGGED),
                           f"{obj.label()}: {ALLOW_UNTAGGED} does nothing on the bridge itself "
                           f"(ifupdown2 reads it on ports only, and so does netcfg): write it "
                           f"under each port that should drop untagged frames", ALLOW_UNTAGGED)
        if not vlan_aware:
            for attribute in _VLAN_AWARE_DEFAULTS:
                if attribute in obj.attrs:
                    warn_not_vlan_aware(obj, attribute, obj.name, report)
            if "bridge-mcast-vlan-snooping" in obj.attrs:
                report.error(obj.where("bridge-mcast-vlan-snooping"),
                             f"{obj.label()}: bridge-mcast-vlan-snooping needs "
                             f"'bridge-vlan-aware yes' on the bridge", "bridge-mcast-vlan-snooping")

    def check_model(self, model: Model, report) -> None:
        """A port listed twice, and ports the kernel never enslaves
        (br_add_if: the loopback device, another bridge), in the order
        bridge-ports lists them. Here rather than in check(): one walk finds
        the few devices of those kinds, and each bridge's ports are matched
        against their names. Looking up every port's device in check() cost
        0.06-0.08 s of a 4094-VLAN switch (200k ports, most lookups a cache miss)."""
        never: dict[str, set[str]] = {}   # namespace -> its loopbacks' and bridges' names
        bridges: list[ConfigObject] = []
        for obj in model.interfaces.values():
            if obj.kind in _NEVER_PORTS:
                never.setdefault(obj.netns, set()).add(obj.name)
                if obj.kind == self.name and not obj.implicit:
                    bridges.append(obj)   # the bridges check() is given
        for bridge in bridges:
            ports = bridge.attrs.get("bridge-ports", [])
            names = never[bridge.netns]   # the bridge's own name among them
            if names.isdisjoint(ports) and len(set(ports)) == len(ports):
                continue   # nothing to say: most bridges
            seen: set[str] = set()
            for port in ports:
                if port in seen:
                    report.error(bridge.where("bridge-ports"),
                                 f"{bridge.label()}: bridge-ports lists {port} twice",
                                 "bridge-ports")
                seen.add(port)
                if port == bridge.name:
                    continue  # reported as a cycle by the dependency check
                if port in names:
                    _report_port(bridge, model.interfaces[(bridge.netns, port)], report)

    def create_params(self, obj: ConfigObject) -> dict:
        # Only when on: a kernel without CONFIG_BRIDGE_VLAN_FILTERING refuses
        # IFLA_BR_VLAN_FILTERING whatever its value (EOPNOTSUPP), and off is
        # the default. A link-set sends off too (turning a live bridge's off).
        filtering = {"vlan_filtering": True} if obj.attrs.get(VLAN_AWARE) else {}
        return {**filtering, **declared_params(obj, self.name, skip=(VLAN_AWARE,))}

    def read_back(self, attrs: dict, notes: list[str], name: str) -> None:
        # No IFLA_BR_VLAN_FILTERING: a kernel without CONFIG_BRIDGE_VLAN_FILTERING,
        # whose bridges are never VLAN-aware.
        if not attrs.setdefault("bridge-vlan-aware", False):
            for attribute in _VLAN_AWARE_ONLY:
                attrs.pop(attribute, None)   # only valid in a config on a VLAN-aware bridge


# Port VLAN defaults, and the VLANs of the bridge itself: VLAN-aware only.
_VLAN_AWARE_DEFAULTS = ("bridge-vids", "bridge-pvid", "bridge-access")

# Read back only from a VLAN-aware bridge: a config may write them only there.
_VLAN_AWARE_ONLY = ("bridge-mcast-vlan-snooping", DEFAULT_PVID)

# Kinds the kernel never enslaves to a bridge (br_add_if).
_NEVER_PORTS = frozenset({"loopback", "bridge"})


def _report_port(bridge: ConfigObject, port: ConfigObject, report) -> None:
    if port.kind == "loopback":
        why = "the loopback device is not an Ethernet port (EINVAL)"
    else:
        why = "a bridge cannot be a port of another bridge (ELOOP); join them with a veth pair"
    report.error(bridge.where("bridge-ports"),
                 f"{bridge.label()}: bridge-ports names {port.name}: {why}", "bridge-ports")


def _warn_mtu_above_ports(bridge: ConfigObject, model: Model, report) -> None:
    """The kernel keeps a bridge MTU set above its ports' (netcfg sets it
    after they join, see mtu_follows_ports); frames that big from the bridge
    itself are then dropped at the port, which is seldom what was meant."""
    mtu = bridge.attrs.get("mtu")
    if mtu is None:
        return
    for name in bridge.attrs.get("bridge-ports", ()):
        port = model.iface(bridge.netns, name)
        port_mtu = effective_mtu(port, model) if port is not None else None
        if port_mtu is not None and port_mtu < mtu:
            report.warning(bridge.where("mtu"),
                           f"{bridge.label()}: mtu {mtu} is above port {name}'s {port_mtu}; "
                           f"the kernel allows it, but frames over {port_mtu} bytes that "
                           f"the bridge sends out {name} are dropped. Give the ports "
                           f"'mtu {mtu}' too", "mtu")
            return


KIND = Bridge()
