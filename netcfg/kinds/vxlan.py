"""A VXLAN tunnel device: one VNI, or many on one `external vnifilter` device.

    iface vni1000                      # classic: one device per VNI
        vxlan-id 1000
        vxlan-local-tunnelip 192.0.2.1
        vxlan-remoteip 192.0.2.2       # head-end replication: one
        vxlan-remoteip 192.0.2.3       # forwarding entry per remote
        vxlan-physdev eth1             # optional underlay device

    iface vxlan0                       # extension: one device, many VNIs
        vxlan-vnifilter yes
        vxlan-local-tunnelip 192.0.2.1
        bridge-vlan-vni-map 100-199=10100-10199
        bridge-vids 100-199            # vxlan0 is a port of a VLAN-aware bridge

Remotes are forwarding entries, not a link attribute, as ifupdown2 makes
them (netcfg/netlink/fdb.py, plan/fdb.py); ``vxlan-svcnodeip`` is the
device's own default destination (IFLA_VXLAN_GROUP).

A VNI on a vnifilter device costs ~0.1 kB of kernel memory against ~42 kB
for a device per VNI (DESIGN.md), which is why lowering prefers it.
"""

from __future__ import annotations

import ipaddress

from netcfg.kinds.base import LOWER, Kind, Reference, declared_params
from netcfg.kinds.common import effective_mtu
from netcfg.model.model import IFACE, ConfigObject, Model

VNI, LOCAL, REMOTE, PORT = "vxlan-id", "vxlan-local-tunnelip", "vxlan-remoteip", "vxlan-port"
VNIFILTER, VNI_MAP, LEARNING = "vxlan-vnifilter", "bridge-vlan-vni-map", "vxlan-learning"
SVCNODE, PURGE, PHYSDEV = "vxlan-svcnodeip", "vxlan-purge-remotes", "vxlan-physdev"
DEFAULT_PORT = 4789  # IANA; the kernel's own default (8472) predates it
# include/net/vxlan.h: outer IP + UDP + VXLAN + inner Ethernet headers.
VXLAN_HEADROOM, VXLAN6_HEADROOM = 50, 70
ETH_DATA_LEN = 1500


def expand(text: str) -> range:
    """``100-199`` or ``100`` (values.parse_range's canonical form) as a range."""
    first, _, last = text.partition("-")
    return range(int(first), int(last or first) + 1)


def vni_map(obj: ConfigObject) -> list[tuple[int, int]]:
    """(vlan, vni) pairs of bridge-vlan-vni-map, in the order written."""
    pairs = []
    for item in obj.attrs.get(VNI_MAP, ()):
        vlans, _, vnis = item.partition("=")
        pairs.extend(zip(expand(vlans), expand(vnis)))
    return pairs


class Vxlan(Kind):
    name = "vxlan"
    defining_attributes = (VNI, VNIFILTER)
    info_kind = "vxlan"
    # The kernel refuses to change vxlan-id, -local-tunnelip, -port and
    # -vnifilter on an existing device: declared immutable in the schema.
    kernel_bytes = 42_000
    # Without a lower device (netcfg writes none) the kernel leaves 1500 and
    # allows up to 65535: it has no underlay MTU to subtract the overhead from.
    default_mtu = 1500

    def complete(self, obj: ConfigObject, report) -> None:
        # Single addresses with no x-netcfg-syntax of their own: canonicalise here,
        # so that 2001:DB8::1 and 2001:db8::1 compare equal in the diff.
        for attribute, what in ((LOCAL, "this host's tunnel source address"),
                                (SVCNODE, "the service node's address or a multicast group")):
            if attribute in obj.attrs:
                try:
                    obj.attrs[attribute] = str(ipaddress.ip_address(obj.attrs[attribute]))
                except ValueError:
                    report.error(obj.where(attribute),
                                 f"{obj.label()}: {attribute} '{obj.attrs[attribute]}' is not an "
                                 f"IPv4 or IPv6 address; write {what}", attribute)
                    del obj.attrs[attribute]

    def references(self, obj: ConfigObject):
        physdev = obj.attrs.get(PHYSDEV)
        if physdev is not None:
            # IFLA_VXLAN_LINK is an ifindex of the vxlan's own namespace.
            yield Reference(PHYSDEV, LOWER, IFACE, obj.netns, physdev, obj.where(PHYSDEV))

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        vnifilter = obj.attrs.get(VNIFILTER, False)
        if vnifilter and VNI in obj.attrs:
            report.error(obj.where(VNI),
                         f"{obj.label()}: {VNI} and '{VNIFILTER} yes' exclude each other; a "
                         f"vnifilter device carries the VNIs of {VNI_MAP}. Remove one of them",
                         VNI)
        elif not vnifilter and VNI not in obj.attrs and VNI not in obj.locs:
            report.error(obj.loc,
                         f"{obj.label()}: a vxlan needs '{VNI} N' (1-16777215), or "
                         f"'{VNIFILTER} yes' with {VNI_MAP} to carry many VNIs", VNI)
        if VNI_MAP in obj.attrs and not vnifilter:
            report.error(obj.where(VNI_MAP),
                         f"{obj.label()}: {VNI_MAP} needs '{VNIFILTER} yes'; with {VNI} the "
                         f"device carries a single VNI", VNI_MAP)
        if vnifilter:
            self._check_vnifilter(obj, model, report)
        remotes = obj.attrs.get(REMOTE, [])
        local = obj.attrs.get(LOCAL)
        if local is not None and local in remotes:
            # A list shared by every host of a mesh names each host too.
            report.warning(obj.where(REMOTE),
                           f"{obj.label()}: {REMOTE} {local} is this host's {LOCAL}; it is "
                           f"skipped, as ifupdown2 skips it", REMOTE)
        svcnode = obj.attrs.get(SVCNODE)
        if svcnode is not None and ipaddress.ip_address(svcnode).is_multicast \
                and PHYSDEV not in obj.attrs:
            report.error(obj.where(SVCNODE),
                         f"{obj.label()}: {SVCNODE} {svcnode} is a multicast group, which needs "
                         f"the device that joins it; add '{PHYSDEV} DEVICE' (ifupdown2 refuses "
                         f"it too)", SVCNODE)
        if PURGE in obj.attrs and vnifilter:
            report.error(obj.where(PURGE),
                         f"{obj.label()}: {PURGE} acts on the remotes of a vxlan-id device; a "
                         f"vnifilter device's remotes are per VNI, which netcfg does not manage. "
                         f"Remove it", PURGE)
        self._check_underlay_mtu(obj, model, report)
        families = {_family(a) for a in (*remotes, local, svcnode) if a}
        if len(families) > 1:
            attribute = REMOTE if REMOTE in obj.attrs else SVCNODE
            report.error(obj.where(attribute),
                         f"{obj.label()}: {LOCAL}, {SVCNODE} and {REMOTE} mix IPv4 and IPv6; a "
                         f"tunnel uses one address family", attribute)

    def _check_underlay_mtu(self, obj: ConfigObject, model: Model, report) -> None:
        """A vxlan over vxlan-physdev is at most the device's MTU less the
        encapsulation (VXLAN_HEADROOM 50, VXLAN6_HEADROOM 70): the kernel
        refuses more (EINVAL on a change; at creation it keeps its own), as
        ifupdown2's mtu write and ifupdown-ng's `ip link set mtu` fail. A
        device bigger than the underlay is common's check."""
        mtu, physdev = obj.attrs.get("mtu"), obj.attrs.get(PHYSDEV)
        lower = model.iface(obj.netns, physdev) if mtu and physdev else None
        if lower is None:
            return
        headroom = VXLAN6_HEADROOM if _tunnel_family(obj) == 6 else VXLAN_HEADROOM
        lower_mtu = effective_mtu(lower, model)
        if lower_mtu is not None and mtu <= lower_mtu < mtu + headroom:
            report.error(obj.where("mtu"),
                         f"{obj.label()}: mtu {mtu} over {physdev} (mtu {lower_mtu}) leaves no "
                         f"room for the {headroom} bytes of VXLAN encapsulation: the kernel "
                         f"refuses more than {lower_mtu - headroom}. Write 'mtu "
                         f"{mtu + headroom}' (or more) on {physdev}, or lower this one", "mtu")
        elif lower_mtu is None and mtu + headroom > ETH_DATA_LEN:
            report.warning(obj.where("mtu"),
                           f"{obj.label()}: mtu {mtu} needs {physdev}'s mtu to be at least "
                           f"{mtu + headroom} ({headroom} bytes of VXLAN encapsulation); this "
                           f"config does not set it, so the host's {physdev} must have it, or "
                           f"the kernel refuses this mtu and the apply fails", "mtu")

    def _check_vnifilter(self, obj: ConfigObject, model: Model, report) -> None:
        if REMOTE in obj.attrs:
            report.error(obj.where(REMOTE),
                         f"{obj.label()}: {REMOTE} cannot be used with '{VNIFILTER} yes': "
                         f"remotes of a vnifilter device are per VNI (forwarding entries with "
                         f"src_vni), which netcfg does not manage yet. Use one vxlan-id device "
                         f"per VNI for static remotes", REMOTE)
        pairs = vni_map(obj)
        for index, what in ((0, "VLAN"), (1, "VNI")):
            twice = _first_repeat(p[index] for p in pairs)
            if twice is not None:
                report.error(obj.where(VNI_MAP),
                             f"{obj.label()}: {VNI_MAP} maps {what} {twice} more than once; "
                             f"each VLAN maps to one VNI and back", VNI_MAP)
        if pairs:
            master = model.master_of(obj)
            aware = master is not None and master.kind == "bridge" \
                and master.attrs.get("bridge-vlan-aware")
            if not aware:
                report.error(obj.where(VNI_MAP),
                             f"{obj.label()}: {VNI_MAP} maps bridge VLANs to VNIs, so "
                             f"{obj.name} must be a port of a VLAN-aware bridge; list it in "
                             f"bridge-ports of a bridge with 'bridge-vlan-aware yes'", VNI_MAP)

    def check_model(self, model: Model, report) -> None:
        _check_vni_clash(self.name, model, report)

    def create_params(self, obj: ConfigObject) -> dict:
        params = {"port": obj.attrs.get(PORT, DEFAULT_PORT)}
        if obj.attrs.get(VNIFILTER):
            # Metadata mode: the bridge's VLAN-to-tunnel map picks the VNI.
            # The VNIs themselves are not create-time state: vni-add operations
            # carry them (RTM_NEWTUNNEL), on a new device as on an existing one.
            params.update(external=True, vnifilter=True)
        else:
            params["id"] = obj.attrs.get(VNI)
        # vxlan-physdev is the diff's lower device (params "link": encode
        # sends it as IFLA_VXLAN_LINK); the remotes are fdb-add operations.
        declared = declared_params(obj, self.name, skip=(VNI, VNIFILTER, PORT, PHYSDEV))
        if "local" in declared:
            params["local"] = declared.pop("local")
        params.update(declared)
        return params

    def read_back(self, attrs: dict, notes: list[str], name: str) -> None:
        if attrs.get(VNIFILTER):
            attrs.pop(VNI, None)   # metadata mode: the VNIs are vni-add's
        else:
            attrs.pop(VNIFILTER, None)
            if not attrs.get(VNI):
                attrs.pop(VNI, None)
                notes.append(f"{name}: an external vxlan without vnifilter has no netcfg "
                             f"spelling")
        # vxlan-physdev is read as the ifindex; kernel/read.py names it.
        # vxlan-remoteip is read from the forwarding entries (kernel/read.py).


def _family(address: str) -> int:
    return ipaddress.ip_address(address).version


def _tunnel_family(obj: ConfigObject) -> int:
    # The kernel makes the device IPv6 when its local or group address is;
    # remotes are of the same family (check()).
    for address in (obj.attrs.get(LOCAL), obj.attrs.get(SVCNODE), *obj.attrs.get(REMOTE, ())):
        if address:
            return _family(address)
    return 4


def _first_repeat(values) -> int | None:
    seen = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None


def _check_vni_clash(kind: str, model: Model, report) -> None:
    """Two vxlans in one namespace cannot carry the same VNI on the same UDP
    port and address family: the kernel answers EEXIST (vxlan_vni_in_use
    compares VNI, dst port and the IPv6 flag, not the local address)."""
    seen: dict[tuple, ConfigObject] = {}
    vxlans = [o for o in model.interfaces.values() if o.kind == kind]
    for vxlan in sorted(vxlans, key=lambda o: o.loc):
        family = _tunnel_family(vxlan)
        port = vxlan.attrs.get(PORT, DEFAULT_PORT)
        vnis = ([vxlan.attrs[VNI]] if VNI in vxlan.attrs and not vxlan.attrs.get(VNIFILTER)
                else sorted({v for _, v in vni_map(vxlan)}))
        for vni in vnis:
            first = seen.setdefault((vxlan.netns, vni, port, family), vxlan)
            if first is not vxlan:
                attribute = VNI if VNI in vxlan.attrs else VNI_MAP
                report.error(vxlan.where(attribute),
                             f"{vxlan.label()}: VNI {vni} on UDP port {port} is already carried "
                             f"by {first.name} (at {first.loc}); the kernel allows each VNI once "
                             f"per namespace, port and address family, even with different "
                             f"{LOCAL}. Remove one, or use another {PORT}", attribute)
                break  # one message per device is enough to find the clash


KIND = Vxlan()
