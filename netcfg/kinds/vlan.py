"""An 802.1Q (or 802.1ad) VLAN subinterface.

    iface swp1.100              # raw device and id from the name
        address 10.1.0.1/24

    iface vlan200               # id from a vlanNNN name, as ifupdown2 does
        vlan-raw-device bond0
        vlan-protocol 802.1ad

    iface storage
        vlan-raw-device bond0
        vlan-id 300

    iface swp2.300              # a tenant's VLAN, inside its namespace
        netns t1
        vlan-raw-netns ""       # extension: swp2 is in the host's namespace

A dotted name ``DEV.N`` (N 1..4094) is a VLAN of DEV without further ado,
as in ifupdown2; complete() writes the derived attributes into the model so
that everything after it reads only attributes.
"""

from __future__ import annotations

import re

from netcfg.kinds.base import LOWER, Kind, Reference, drop_own_netns
from netcfg.kinds.veth import check_netns_attribute
from netcfg.model.model import IFACE, ConfigObject, Model

RAW, VID, PROTOCOL = "vlan-raw-device", "vlan-id", "vlan-protocol"
RAW_NETNS = "vlan-raw-netns"
DEFAULT_PROTOCOL = "802.1q"
# Dotted names take no leading zero (see split_name): swp1.0100 is not how
# anyone writes VLAN 100, and a name should map to one VLAN only.
_VLAN_WORD = re.compile(r"^vlan0*([1-9][0-9]{0,3})$")


def split_name(name: str) -> tuple[str, int] | None:
    """``swp1.100`` -> ("swp1", 100); None when the name is not DEV.VID.

    Called for every port name of every bridge (200k in a big switch
    config), so it uses str methods rather than a regex.
    """
    raw, dot, vid = name.rpartition(".")
    if not dot or not raw or not vid.isdigit() or vid[0] == "0" or len(vid) > 4:
        return None
    number = int(vid)
    return (raw, number) if number <= 4094 else None


def raw_netns(obj: ConfigObject) -> str:
    """Namespace of the raw device: the vlan's own unless vlan-raw-netns says."""
    return obj.attrs.get(RAW_NETNS, obj.netns)


class Vlan(Kind):
    name = "vlan"
    defining_attributes = (RAW, VID)
    info_kind = "vlan"
    # The kernel cannot change a VLAN device's id, lower or protocol.
    # The id / mode and protocol are declared immutable in the schema.
    immutable_attributes = frozenset({RAW, RAW_NETNS})
    link_attributes = (RAW, RAW_NETNS)
    kernel_bytes = 40_000
    # Created with its lower device's MTU and never bigger (vlan_newlink,
    # vlan_dev_change_mtu): see common.effective_mtu.
    mtu_from_lower = True

    def claims_name(self, name: str) -> bool:
        return split_name(name) is not None

    def implied_by_name(self, name, netns, loc, auto) -> ConfigObject | None:
        parts = split_name(name)
        if parts is None:
            return None
        obj = self.make_implied(name, netns, loc, auto)
        obj.attrs[RAW], obj.attrs[VID] = parts
        return obj

    def complete(self, obj: ConfigObject, report) -> None:
        if obj.implicit:
            return  # implied_by_name() derived everything from the name
        drop_own_netns(obj, RAW_NETNS)
        parts = split_name(obj.name)
        if parts is None:
            # ifupdown2 also reads the id from a `vlanNNN` name (vlan-raw-device
            # must then be written); an explicit vlan-id wins, as there.
            m = _VLAN_WORD.match(obj.name)
            if m and VID not in obj.attrs and int(m.group(1)) <= 4094:
                obj.attrs[VID] = int(m.group(1))
            return
        for attribute, derived in zip((RAW, VID), parts):
            written = obj.attrs.get(attribute)
            if written is None:
                obj.attrs[attribute] = derived
            elif written != derived:
                report.error(obj.where(attribute),
                             f"{obj.label()}: {attribute} {written} contradicts the name, "
                             f"which says VLAN {parts[1]} on {parts[0]}; remove {attribute} "
                             f"or rename the interface", attribute)

    def references(self, obj: ConfigObject):
        # A tuple, not a generator, and raw_netns() and where() inline:
        # called for every VLAN (200k in big configs).
        attrs = obj.attrs
        raw = attrs.get(RAW)
        if raw is None:
            return ()
        return (Reference(RAW, LOWER, IFACE, attrs.get(RAW_NETNS, obj.netns), raw,
                          obj.locs.get(RAW, obj.loc)),)

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        for attribute, what in ((RAW, "the device it is a VLAN of"), (VID, "its VLAN id (1-4094)")):
            if attribute not in obj.attrs and attribute not in obj.locs:
                report.error(obj.loc,
                             f"{obj.label()}: a vlan needs {what}; add '{attribute} ...' or "
                             f"name the interface DEVICE.VLANID (swp1.100)", attribute)
        self._check_raw_device(obj, model, report)
        check_netns_attribute(obj, RAW_NETNS, report)

    def _check_raw_device(self, obj: ConfigObject, model: Model, report) -> None:
        raw = model.iface(raw_netns(obj), obj.attrs.get(RAW, ""))
        if raw is not None and raw.kind == "loopback":
            report.error(obj.where(RAW),
                         f"{obj.label()}: {RAW} {raw.name} is the loopback device, which cannot "
                         f"carry VLANs; name an Ethernet-like device", RAW)

    def check_model(self, model: Model, report) -> None:
        declared: list[ConfigObject] = []
        on_loopback: list[ConfigObject] = []
        for obj in model.interfaces.values():   # once: 200k VLANs in a big switch
            if obj.kind != self.name:
                continue
            if not obj.implicit:
                declared.append(obj)
            elif obj.attrs.get(RAW) == "lo":
                on_loopback.append(obj)
        # The kernel refuses a second VLAN with the same id and protocol on one
        # device (EEXIST); say so at compile time, on the later declaration.
        _check_duplicates(self.name, declared, model, report)
        # Implied VLANs (swp1.100 in bridge-ports) are not passed to check();
        # all came from well-formed DEV.VID names, so only a VLAN of the
        # loopback device (lo.5) is left to catch.
        for obj in on_loopback:
            self._check_raw_device(obj, model, report)

    def create_params(self, obj: ConfigObject) -> dict:
        params = {"link": obj.attrs.get(RAW),
                  "id": obj.attrs.get(VID), "protocol": obj.attrs.get(PROTOCOL, DEFAULT_PROTOCOL)}
        if raw_netns(obj) != obj.netns:  # the lower device lives elsewhere
            params["link_netns"] = raw_netns(obj)
        return params


def _check_duplicates(kind: str, declared: list[ConfigObject], model: Model, report) -> None:
    """Two VLANs with one (device, id, protocol).

    A VLAN named DEV.VID (implied ones always are), on DEV in its own
    namespace, is unique by its name: interfaces are keyed by name. So only
    the others (`vlan100` with vlan-id, or a raw device in another namespace)
    can collide, with each other or with the DEV.VID of the same VLAN. That
    keeps this to the few declared VLANs (``declared``, in the model's order)
    in a 200k-VLAN config.
    """
    groups: dict[tuple, list[ConfigObject]] = {}
    for vlan in declared:
        attrs = vlan.attrs
        if VID not in attrs or RAW not in attrs:
            continue
        raw_ns = attrs.get(RAW_NETNS, vlan.netns)
        canonical = f"{attrs[RAW]}.{attrs[VID]}"
        if vlan.name == canonical and raw_ns == vlan.netns:
            continue
        protocol = attrs.get(PROTOCOL, DEFAULT_PROTOCOL)
        key = (raw_ns, attrs[RAW], attrs[VID], protocol)
        group = groups.setdefault(key, [])
        if not group:
            # The DEV.VID VLAN of this device, declared or implied, if any.
            twin = model.interfaces.get((vlan.netns, canonical))
            if twin is not None and twin.kind == kind and twin is not vlan and \
                    twin.attrs.get(RAW_NETNS, twin.netns) == raw_ns and \
                    twin.attrs.get(PROTOCOL, DEFAULT_PROTOCOL) == protocol:
                group.append(twin)
        group.append(vlan)
    for key, group in groups.items():
        if len(group) < 2:
            continue
        first, *later = sorted(group, key=lambda o: o.loc)
        for vlan in later:
            report.error(vlan.where(VID),
                         f"{vlan.label()}: VLAN {key[2]} on {key[1]} is already {first.name} "
                         f"(at {first.loc}); a device carries each VLAN id once, so remove one "
                         f"of them", VID)


KIND = Vlan()
