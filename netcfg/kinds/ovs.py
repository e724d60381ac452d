"""Open vSwitch bridges and ports, in ifupdown2's (and Proxmox VE's) spelling.

    auto vmbr0
    iface vmbr0 inet static
        address 192.0.2.10/24
        ovs_type OVSBridge
        ovs_ports eno1 vlan50

    auto vlan50
    iface vlan50 inet manual
        ovs_type OVSIntPort
        ovs_bridge vmbr0
        ovs_options tag=50

and eno1's stanza says ``ovs_type OVSPort`` and ``ovs_bridge vmbr0`` (Proxmox's
whole layout, with an SDN zone's QinQ port: tests/ovs_env.py).

One kind, ``ovs``, whose role is ``ovs-type``: OVSBridge (a Bridge row and
its internal port), OVSPort (an existing device added as a port) or
OVSIntPort (an internal port, a device ovs-vswitchd makes). A stanza with
``ovs-ports`` and no ``ovs-type`` is an OVSBridge: Proxmox's SDN files add
ports to a bridge whose ``ovs_type`` is in the host's file.

``ovs-options`` are the ``column=value`` words ifupdown2 hands to
``ovs-vsctl set Port|Bridge NAME``; netcfg maps the columns in PORT_COLUMNS
and BRIDGE_COLUMNS below and refuses any other word at its line. The whole
set is managed, as ifupdown2 manages it (it clears the port's columns before
setting them): a mapped column the line leaves out is cleared.

ovs-vswitchd owns these devices; netcfg writes its database over OVSDB
(RFC 7047; netcfg/kernel/ovsdb.py) and never creates or deletes them over
rtnetlink. What happens to them in the kernel (addresses, up, a Linux
bridge's port) is netcfg's as for any device. See docs/ovs.md.
"""

from __future__ import annotations

from netcfg.kinds.base import Kind, Reference, iter_names
from netcfg.model.model import IFACE, ROOT_NETNS, ConfigObject, Model

KIND_NAME = "ovs"
TYPE, BRIDGE, PORTS, OPTIONS = "ovs-type", "ovs-bridge", "ovs-ports", "ovs-options"
MTU = "ovs-mtu"
OVS_ATTRIBUTES = (TYPE, BRIDGE, PORTS, OPTIONS, MTU)
OVS_BRIDGE, OVS_PORT, OVS_INTPORT = "OVSBridge", "OVSPort", "OVSIntPort"
SUPPORTED_TYPES = (OVS_BRIDGE, OVS_PORT, OVS_INTPORT)
# ifupdown2's other types, refused with what is missing.
UNSUPPORTED_TYPES = {
    "OVSBond": "OVS bonds (ovs-bonds, bond_mode, lacp) are not supported yet; bond the ports "
               "with a Linux bond (bond-slaves, bond-mode 802.3ad) and make that an OVSPort",
    "OVSTunnel": "OVS tunnel ports are not supported yet; use a vxlan device (vxlan-id)",
    "OVSPatchPort": "OVS patch ports are not supported yet; connect the bridges with a veth "
                    "pair (link-type veth) as OVSPorts",
}
# The reference role of ovs-bridge / ovs-ports: not a kernel master (OVS's
# datapath device, ovs-system, is the kernel's master of its ports).
OVS_ROLE = "ovs"

VLAN_MODES = ("access", "native-tagged", "native-untagged", "trunk", "dot1q-tunnel")
BOOLEANS = ("true", "false")


def _vlan(text: str) -> str:
    if not text.isdigit() or not 0 <= int(text) <= 4095:
        raise ValueError(f"'{text}' is not a VLAN id 0-4095")
    return str(int(text))


def _vlan_list(text: str) -> str:
    vids = sorted({int(_vlan(v)) for v in text.split(",") if v})
    if not vids:
        raise ValueError("lists no VLAN")
    return ",".join(str(v) for v in vids)


def _choice(choices: tuple[str, ...]):
    def check(text: str) -> str:
        if text not in choices:
            raise ValueError(f"'{text}' is not one of {', '.join(choices)}")
        return text
    return check


# ovs-options word -> its value check (returning the canonical text). A key
# with ':' is a map column's key (other_config:qinq-ethtype).
PORT_COLUMNS = {
    "tag": _vlan,
    "vlan_mode": _choice(VLAN_MODES),
    "trunks": _vlan_list,
    "other_config:qinq-ethtype": _choice(("802.1q", "802.1ad")),
}
_BOOLEAN = _choice(BOOLEANS)
BRIDGE_COLUMNS = {
    "datapath_type": _choice(("system", "netdev")),
    "fail_mode": _choice(("standalone", "secure")),
    "stp_enable": _BOOLEAN,
    "rstp_enable": _BOOLEAN,
    "mcast_snooping_enable": _BOOLEAN,
}


def columns_for(ovs_type: str) -> dict:
    return BRIDGE_COLUMNS if ovs_type == OVS_BRIDGE else PORT_COLUMNS


def parse_options(text: str, ovs_type: str) -> dict[str, str]:
    """An ``ovs-options`` line to {column: canonical value}; ValueError naming
    the word that is wrong and what is accepted."""
    columns = columns_for(ovs_type)
    table = "Bridge" if ovs_type == OVS_BRIDGE else "Port"
    out: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep or not key or not value or '"' in word or "'" in word:
            raise ValueError(f"'{word}' is not COLUMN=VALUE (write e.g. tag=100, without quotes)")
        check = columns.get(key)
        if check is None:
            raise ValueError(f"'{key}' is not supported on an {ovs_type}: netcfg sets these "
                             f"{table} columns: {', '.join(columns)}")
        if key in out:
            raise ValueError(f"{key} is given twice")
        try:
            out[key] = check(value)
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
    # A boolean column's false is its default, and a cleared column reads
    # back false: both are written as nothing.
    return {k: v for k, v in out.items() if not (check_is_boolean(k, columns) and v == "false")}


def check_is_boolean(key: str, columns: dict) -> bool:
    return columns.get(key) is _BOOLEAN


def format_options(options: dict[str, str]) -> str:
    """The canonical ``ovs-options`` text: columns sorted, one word each."""
    return " ".join(f"{k}={options[k]}" for k in sorted(options))


def role(obj: ConfigObject) -> str:
    return obj.attrs.get(TYPE, OVS_BRIDGE if PORTS in obj.attrs else OVS_PORT)


class Ovs(Kind):
    name = KIND_NAME
    defining_attributes = OVS_ATTRIBUTES
    # ovs-vswitchd makes and removes these devices (an OVSPort's device is
    # someone else's); netcfg changes them through OVSDB (plan/ovs.py).
    creatable = False
    # Not rtnetlink attributes: listed here so that the diff's link-set
    # leaves them alone; plan/ovs.py turns them into ovs-* operations.
    immutable_attributes = frozenset(OVS_ATTRIBUTES)

    def complete(self, obj: ConfigObject, report) -> None:
        ovs_type = obj.attrs.get(TYPE)
        if ovs_type is None:
            if PORTS in obj.attrs:
                obj.attrs[TYPE] = OVS_BRIDGE
            else:
                report.error(obj.where(BRIDGE if BRIDGE in obj.attrs else OPTIONS),
                             f"{obj.label()}: an Open vSwitch port needs its ovs-type: write "
                             f"'ovs-type OVSPort' (a device added to the bridge) or "
                             f"'ovs-type OVSIntPort' (an internal port)", TYPE)
                return
        elif ovs_type in UNSUPPORTED_TYPES:
            report.error(obj.where(TYPE), f"{obj.label()}: ovs-type {ovs_type} is not supported: "
                                          f"{UNSUPPORTED_TYPES[ovs_type]}", TYPE)
            return
        ovs_type = obj.attrs[TYPE]
        if PORTS in obj.attrs:
            # Several lines are joined (ifupdown2's _get_ovs_ports); a port
            # written twice is one port, as in bridge-ports.
            obj.attrs[PORTS] = list(dict.fromkeys(obj.attrs[PORTS]))
        if ovs_type == OVS_BRIDGE and BRIDGE in obj.attrs:
            report.error(obj.where(BRIDGE), f"{obj.label()}: ovs-bridge names the bridge of a "
                                            f"port, and {obj.name} is an OVSBridge; remove it",
                         BRIDGE)
        if ovs_type != OVS_BRIDGE:
            if PORTS in obj.attrs:
                report.error(obj.where(PORTS), f"{obj.label()}: ovs-ports lists a bridge's "
                                               f"ports, and {obj.name} is an {ovs_type}; write "
                                               f"'ovs-type OVSBridge', or remove it", PORTS)
            if BRIDGE not in obj.attrs:
                report.error(obj.where(TYPE), f"{obj.label()}: an {ovs_type} needs "
                                              f"'ovs-bridge BRIDGE', the OVS bridge it is on",
                             BRIDGE)
        if MTU in obj.attrs and "mtu" in obj.attrs:
            report.error(obj.where("mtu"), f"{obj.label()}: mtu and ovs-mtu both set the "
                                           f"device's MTU (ovs-vswitchd would undo mtu); "
                                           f"write one of them", "mtu")
        if obj.netns != ROOT_NETNS:
            report.error(obj.where(TYPE), f"{obj.label()}: Open vSwitch devices are in the "
                                          f"host's namespace (ovs-vswitchd's); move the "
                                          f"stanza out of netns {obj.netns}", TYPE)
        if OPTIONS in obj.attrs:
            try:
                options = parse_options(obj.attrs[OPTIONS], ovs_type)
            except ValueError as e:
                report.error(obj.where(OPTIONS), f"{obj.label()}: ovs-options: {e}", OPTIONS)
                del obj.attrs[OPTIONS]
            else:
                if options:
                    obj.attrs[OPTIONS] = format_options(options)
                else:
                    del obj.attrs[OPTIONS]

    def references(self, obj: ConfigObject):
        if BRIDGE in obj.attrs:
            yield Reference(BRIDGE, OVS_ROLE, IFACE, obj.netns, obj.attrs[BRIDGE],
                            obj.where(BRIDGE))
        loc = obj.where(PORTS)
        for port in iter_names(obj.attrs.get(PORTS)):
            yield Reference(PORTS, OVS_ROLE, IFACE, obj.netns, port, loc)

    def check_model(self, model: Model, report) -> None:
        for obj in model.interfaces.values():
            if obj.kind != KIND_NAME or TYPE not in obj.attrs:
                continue
            if obj.attrs[TYPE] == OVS_BRIDGE:
                self._check_ports(obj, model, report)
                continue
            bridge = model.interfaces.get((obj.netns, obj.attrs.get(BRIDGE, "")))
            if bridge is None:
                continue   # a dangling reference, reported by the compiler
            if bridge.kind != KIND_NAME or role(bridge) != OVS_BRIDGE:
                report.error(obj.where(BRIDGE), f"{obj.label()}: ovs-bridge {bridge.name} is "
                                                f"a {bridge.kind}, not an OVS bridge (ovs-type "
                                                f"OVSBridge)", BRIDGE)
            elif PORTS in bridge.attrs and obj.name not in bridge.attrs[PORTS]:
                report.error(obj.where(BRIDGE), f"{obj.label()}: ovs-bridge {bridge.name}, but "
                                                f"{bridge.name}'s ovs-ports (at "
                                                f"{bridge.where(PORTS)}) does not list "
                                                f"{obj.name}; add it there", BRIDGE)
            if obj.attrs[TYPE] == OVS_PORT and (obj.netns, obj.name) in model.masters:
                master = model.masters[(obj.netns, obj.name)][1]
                report.error(obj.where(TYPE), f"{obj.label()}: an OVSPort is Open vSwitch's, "
                                              f"and {master} makes it its port too; a device "
                                              f"has one master", TYPE)

    def _check_ports(self, bridge: ConfigObject, model: Model, report) -> None:
        for port in bridge.attrs.get(PORTS, ()):
            obj = model.interfaces.get((bridge.netns, port))
            if obj is None:
                continue   # dangling: reported by the compiler
            if obj.kind != KIND_NAME or obj.attrs.get(BRIDGE) != bridge.name:
                report.error(bridge.where(PORTS),
                             f"{bridge.label()}: ovs-ports lists {port}, whose stanza (at "
                             f"{obj.loc}) does not say 'ovs-bridge {bridge.name}'; write "
                             f"'ovs-type OVSPort' (or OVSIntPort) and 'ovs-bridge {bridge.name}' "
                             f"there", PORTS)


KIND = Ovs()
