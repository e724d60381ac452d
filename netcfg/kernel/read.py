"""Current state, read from the kernel into the model's own types.

`netcfg show` prints what `netcfg apply` accepts (STYLE.md 8) because both
sides are the same ``ConfigObject``s: a device read here has the kind the
registry gives its IFLA_INFO_KIND, and attributes spelt and typed as in
schemas/kinds/*.json (decoding: read_parse.py). Nothing is read from a
saved file.

One namespace costs one link dump, one address dump and one route dump (both
families at once, filtered by the kernel to ``proto 110``, RTPROT_NETCFG),
plus an AF_BRIDGE link dump when a bridge filters VLANs. Routes of others
are read only when asked (``foreign_routes``: a namespace with `purge yes`),
in the same one dump, unfiltered, into ``NamespaceState.foreign_routes``.

Attributes report what the kernel has, defaults included (the diff compares
only what a config writes), except where a value is no state at all: an
empty alias, lo's all-zero MAC, kernel-made addresses (link-local, loopback,
router-advertised: IFA_PROTO), a route's default metric and main table; and
the kernel's own fallback tunnel devices (gre0, sit0, tunl0...: in
``NamespaceState.kernel_devices``, never in the model, so never shown,
compared or purged). What
the model cannot express is left out and said in ``NamespaceState.notes``.
A device of a kind netcfg does not know is read as ``physical`` (configured,
never created or deleted), with its real kind in ``kernel_kinds``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import socket
import time
from typing import Any, Callable, Collection, Mapping, NamedTuple, TypeVar

from netcfg.kernel.nl import DumpInterrupted, RtnlSocket
from netcfg.kinds import registry
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, NETNS, ROOT_NETNS, ConfigObject, Model
from netcfg.netlink.nlmsg import (AF_UNSPEC, IFF_LOOPBACK, IFF_UP, IFINFOMSG, IFLA_IFNAME,
                                  NETNSA_FD, NETNSA_NSID, RTM_GETADDR, RTM_GETLINK, RTM_GETNSID,
                                  RTM_GETROUTE, RTMSG, RTN_UNICAST, RTPROT_KERNEL, RTPROT_UNSPEC,
                                  attr_str, getaddr_dump, getlink_dump, getroute_dump, parse_attrs,
                                  rtattr_u32)
from netcfg.netlink.read_parse import (DEFAULT_METRIC, S32, Link, RawRoute, getlink_bridge_dump,
                                       parse_address, parse_bridge_vlans, parse_link, parse_route,
                                       port_vlan_attributes, route_attribute)
from netcfg.model.tags import NETCFG_GROUP, RTPROT_NETCFG
from netcfg.kinds.address_label import ADDRESS_LABEL
from netcfg.kinds.common import ADDRESS_METRIC
from netcfg.kinds.tunnel import DEV as TUNNEL_DEV
from netcfg.kinds.tunnel import MODES as TUNNEL_MODES
from netcfg.kinds.tunnel_kinds import is_fallback_device
from netcfg.kinds.vxlan import PHYSDEV, REMOTE, SVCNODE, VNI, VNIFILTER
from netcfg.netlink.fdb import RTM_GETNEIGH, fdb_dump, parse_remote

PHYSICAL, LOOPBACK, LOOPBACK_NAME = "physical", "loopback", "lo"
TUNNEL_KINDS = frozenset(kind for kind, _ in TUNNEL_MODES.values())
# 127.0.0.1/8 on lo carries no IFA_PROTO, even on 6.18 (inetdev_event sets none).
IPV4_LOOPBACK = "127.0.0.1/8"

# Kinds whose IFLA_LINK is a device the model names: the attribute naming it
# and the one naming its namespace when that is another (each kind's
# link_attributes).
LINK_ATTRIBUTES = {k.name: k.link_attributes for k in registry.interface_kinds()
                   if k.link_attributes}
# A dump the kernel flags NLM_F_DUMP_INTR is read again, this many times at
# most: IPv6 DAD finishing on freshly upped links interrupts address dumps
# (seen here with 2000 veths read right after `ip link set up`).
DUMP_ATTEMPTS = 16
DUMP_BACKOFF_S = 0.01       # 10 ms, doubling,
DUMP_BACKOFF_MAX_S = 0.5    # up to half a second: ~6 s in all before giving up
# A namespace's IPv6 address dump is tried this often before it is read one
# device at a time (_read_addresses).
IPV6_DUMP_ATTEMPTS = 2
_T = TypeVar("_T")
# Master kind -> the master's attribute listing its members (in ifindex
# order), or the member's attribute naming its master.
MEMBER_LISTS = {"bridge": "bridge-ports", "bond": "bond-slaves", "batadv": "batman-ifaces"}
MEMBER_OF = {"vrf": "vrf"}
# Routes the kernel makes itself (connected and local routes of addresses,
# IPv6 router advertisements; linux/rtnetlink.h): no one's to purge.
RTPROT_RA = 9
KERNEL_ROUTE_PROTOCOLS = frozenset({RTPROT_KERNEL, RTPROT_RA})


# ---------------------------------------------------------------- results

@dataclass(slots=True)
class ReadCounts:
    """What reading one namespace cost, for benchmarks (`-s` prints them)."""

    links: int = 0
    addresses: int = 0
    routes: int = 0
    dumps: int = 0
    retries: int = 0      # dumps read again after NLM_F_DUMP_INTR
    recv_calls: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class CrossRef:
    """An attribute naming a device in another namespace (a veth's peer, a
    macvlan's lower device), known so far by the kernel's numbers: the nsid
    of that namespace in this one's view, and the device's ifindex there."""

    name: str           # the device that refers
    ifindex: int        # its own ifindex (a veth peer's IFLA_LINK points back at it)
    attribute: str      # veth-peer-name, vlan-raw-device, macvlan-raw-device
    netns_attribute: str
    nsid: int
    link: int
    kind: str


class ForeignRoute(NamedTuple):
    """A route neither netcfg's nor the kernel's, as parsed, and its RTM_NEWROUTE
    payload as dumped (what it takes to put it back exactly)."""

    route: RawRoute
    payload: bytes


@dataclass
class NamespaceState:
    """One namespace as read: its interfaces as model objects, and indexes.

    ``managed`` are the devices netcfg created (IFLA_GROUP == NETCFG_GROUP),
    ``foreign`` all others. ``pending`` are references into other namespaces
    not resolved (yet: read_model() resolves what it can); ``notes`` say
    what the model could not express. ``foreign_routes`` are filled only when
    read_namespace() is asked for them.
    """

    netns: str
    interfaces: dict[str, ConfigObject] = field(default_factory=dict)
    ifindex: dict[str, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    masters: dict[str, str] = field(default_factory=dict)
    # A VLAN-aware bridge's own VLANs, by its name (Model.bridge_vlans).
    bridge_vlans: dict[str, dict[str, Any]] = field(default_factory=dict)
    managed: set[str] = field(default_factory=set)
    foreign: set[str] = field(default_factory=set)
    # The kernel's fallback tunnel devices: in ifindex/names (they hold their
    # ifindexes), not in interfaces (tunnel_kinds.FALLBACK_DEVICES).
    kernel_devices: set[str] = field(default_factory=set)
    kernel_kinds: dict[str, str] = field(default_factory=dict)
    pending: list[CrossRef] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: ReadCounts = field(default_factory=ReadCounts)
    # Whether the kernel applied the route dump's protocol filter
    # (NLM_F_DUMP_FILTERED); routes are checked here either way.
    routes_filtered_by_kernel: bool = False
    foreign_routes: list[ForeignRoute] = field(default_factory=list)


# ---------------------------------------------------------------- one namespace

def read_namespace(sock: RtnlSocket, netns: str,
                   nsid_names: Mapping[int, str] | None = None, *,
                   foreign_routes: bool = False) -> NamespaceState:
    """Links, addresses and netcfg's routes of the namespace ``sock`` is in
    (with ``foreign_routes``, every other route too, but the kernel's own:
    `ip route show table all` less `proto kernel` and `proto ra`).

    Equivalent to: `ip -d link show; ip address show; ip route show table all
    proto 110` (and `bridge -c vlan show` when a bridge filters VLANs).
    ``nsid_names`` (nsid -> namespace name, in this namespace's view; see
    netns_ids()) names the namespace of a veth peer or lower device living
    elsewhere; the device's own name there is filled in by read_model().
    """
    state = NamespaceState(netns)
    before = sock.counters.copy()
    links = _read_links(sock, state)
    build_interfaces(state, links, nsid_names or {})
    if any(o.attrs.get("bridge-vlan-aware") for o in state.interfaces.values()):
        _read_port_vlans(sock, state)
    if any(o.kind == "vxlan" for o in state.interfaces.values()):
        _read_vxlans(sock, state)
    _name_tunnel_devs(state)
    _read_addresses(sock, state, {link.index for link in links if link.flags & IFF_LOOPBACK})
    _read_routes(sock, state, foreign_routes)
    spent = sock.counters.since(before)
    state.counts.recv_calls = spent.recv_calls
    state.counts.bytes = spent.bytes_received
    return state


def read_ifindexes(sock: RtnlSocket, state: NamespaceState) -> None:
    """Refresh only ``state.ifindex``/``state.names``: one link dump parsing
    IFLA_IFNAME alone. What apply needs after creating devices (their
    ifindexes, for addresses and routes), at a fraction of a full read.

    Equivalent to: `ip -o link show | cut -d: -f1,2`.
    """
    def name_and_index(payload: memoryview) -> tuple[str, int]:
        index = IFINFOMSG.unpack_from(payload)[2]
        return attr_str(parse_attrs(payload, IFINFOMSG.size, {IFLA_IFNAME})[IFLA_IFNAME]), index

    pairs, _ = _dump(sock, state, RTM_GETLINK, getlink_dump(), name_and_index)
    state.ifindex = dict(pairs)
    state.names = {index: name for name, index in pairs}


def _dump(sock: RtnlSocket, state: NamespaceState, msg_type: int, payload: bytes,
          parse: Callable[[memoryview], _T], attempts: int = DUMP_ATTEMPTS
          ) -> tuple[list[_T], bool]:
    """parse() of every message of a dump, read again while the kernel says it
    was interrupted (DumpInterrupted after ``attempts``); and whether the
    kernel filtered it."""
    for attempt in range(attempts):
        state.counts.dumps += 1
        dump = sock.dump(msg_type, payload)
        try:
            return [parse(p) for _t, _f, p in dump], dump.filtered
        except DumpInterrupted:
            if attempt == attempts - 1:
                raise
            state.counts.retries += 1
            # Back off: the change that interrupted us is often a burst (IPv6
            # DAD finishing on thousands of fresh links), and immediate retries
            # all landed inside it and made a verify, then its revert, fail.
            time.sleep(min(DUMP_BACKOFF_S * 2 ** attempt, DUMP_BACKOFF_MAX_S))
    raise AssertionError("unreachable")


def _read_links(sock: RtnlSocket, state: NamespaceState) -> list[Link]:
    notes: list[str] = []
    links, _ = _dump(sock, state, RTM_GETLINK, getlink_dump(), lambda p: parse_link(p, notes))
    state.notes.extend(dict.fromkeys(notes))   # once each, though a retry parses twice
    state.counts.links = len(links)
    return links


def build_interfaces(state: NamespaceState, links: list[Link],
                     nsid_names: Mapping[int, str]) -> None:
    """Model objects of one namespace's ``links`` into ``state``, in ifindex
    order: kinds, members and masters, references within the namespace;
    references into others go to ``state.pending``."""
    # Newer kernels dump in ifindex order, older ones by hash bucket.
    links = sorted(links, key=lambda link: link.index)
    kinds = {k.info_kind: k.name for k in registry.interface_kinds() if k.info_kind}
    netns = state.netns
    source = f"<kernel{':' + netns if netns else ''}>"
    for link in links:
        state.ifindex[link.name] = link.index
        state.names[link.index] = link.name
    kind_of: dict[int, str] = {}
    kernel_made = [link for link in links if link.group != NETCFG_GROUP
                   and is_fallback_device(link.name, link.info_kind, link.attrs)]
    state.kernel_devices.update(link.name for link in kernel_made)
    links = [link for link in links if link.name not in state.kernel_devices]
    for link in links:
        kind = kinds.get(link.info_kind or "")
        if kind is None:
            if link.info_kind is not None:
                state.kernel_kinds[link.name] = link.info_kind
            kind = LOOPBACK if link.name == LOOPBACK_NAME else PHYSICAL
        kind_of[link.index] = kind
        (state.managed if link.group == NETCFG_GROUP else state.foreign).add(link.name)
        attrs = {MEMBER_LISTS[kind]: []} if kind in MEMBER_LISTS else {}
        attrs.update(link.attrs)
        state.interfaces[link.name] = ConfigObject(
            section=IFACE, name=link.name, kind=kind, netns=netns, attrs=attrs,
            # An object's "line" in the kernel is its ifindex: a stable order,
            # and messages that say which device.
            loc=SourceLocation(source, link.index), auto=bool(link.flags & IFF_UP))
    for link in links:
        obj = state.interfaces[link.name]
        names = LINK_ATTRIBUTES.get(obj.kind)
        if names is not None and link.link is not None:
            if link.link_netnsid is None:
                if link.link in state.names:
                    obj.attrs[names[0]] = state.names[link.link]
            else:
                if link.link_netnsid in nsid_names:
                    obj.attrs[names[1]] = nsid_names[link.link_netnsid]
                state.pending.append(CrossRef(link.name, link.index, names[0], names[1],
                                              link.link_netnsid, link.link, obj.kind))
        if link.master is not None and link.master in state.names:
            master = state.names[link.master]
            state.masters[link.name] = master
            master_kind = kind_of[link.master]
            if master_kind in MEMBER_LISTS:
                state.interfaces[master].attrs[MEMBER_LISTS[master_kind]].append(link.name)
            elif master_kind in MEMBER_OF:
                obj.attrs[MEMBER_OF[master_kind]] = master


def _read_port_vlans(sock: RtnlSocket, state: NamespaceState) -> None:
    # VM tier: the host kernel here has no CONFIG_BRIDGE_VLAN_FILTERING.
    bridges = {state.ifindex[n] for n, o in state.interfaces.items()
               if o.attrs.get("bridge-vlan-aware")}
    ports, _ = _dump(sock, state, RTM_GETLINK, getlink_bridge_dump(), parse_bridge_vlans)
    for info in ports:
        name = state.names.get(info.index)
        if name is None:
            continue
        if info.index in bridges:
            # The bridge's own VLANs (`bridge vlan show dev BR` self entries).
            state.bridge_vlans[name] = port_vlan_attributes(info, name, state.notes)
            continue
        if info.master not in bridges:
            continue   # a port of a bridge not VLAN-aware
        obj = state.interfaces[name]
        port = port_vlan_attributes(info, name, state.notes)
        if "bridge-pvid" not in port:
            # Without it a port takes its bridge's default PVID (plan/diff.py).
            port["bridge-allow-untagged"] = False
        if obj.kind != "vxlan" or not obj.attrs.get("vxlan-vnifilter"):
            port.pop("bridge-vlan-vni-map", None)   # valid only there (kinds/vxlan.py)
        obj.attrs.update(port)


def _name_tunnel_devs(state: NamespaceState) -> None:
    """A tunnel's underlay device by name (IFLA_GRE_LINK, IFLA_IPTUN_LINK,
    IFLA_VTI_LINK are ifindexes of its namespace; kinds/tunnel_kinds.py)."""
    for name, obj in state.interfaces.items():
        if obj.kind in TUNNEL_KINDS:
            _name_underlay(state, name, obj, TUNNEL_DEV)


def _name_underlay(state: NamespaceState, name: str, obj, attribute: str) -> None:
    """``attribute`` (an underlay's ifindex, as the kernel reports it) by the
    device's name; left out, with a note, when that device is in another
    namespace."""
    index = obj.attrs.get(attribute)
    if not isinstance(index, int):
        return
    if index in state.names:
        obj.attrs[attribute] = state.names[index]
    else:
        del obj.attrs[attribute]
        state.notes.append(f"{name}: its underlay device (ifindex {index}) is not in its "
                           f"namespace; netcfg has no spelling for that")


# A namespace whose devices are at least a quarter vxlans is read in one
# forwarding dump (_read_vxlans).
FDB_ONE_DUMP_SHARE = 4


def _read_vxlans(sock: RtnlSocket, state: NamespaceState) -> None:
    """A vxlan's underlay device by name (IFLA_VXLAN_LINK is an ifindex), and
    the remotes of each vxlan-id device from its forwarding entries. The
    all-zeros entry of the device's own group (vxlan-svcnodeip) is the
    kernel's, not a remote (plan/fdb.py). A namespace without a vxlan pays
    nothing; one whose devices are mostly vxlans is read in one dump, others
    one dump per vxlan, filtered by the kernel (a bridge's learnt MACs and
    every device's multicast addresses stay out): 200 vxlans, 2 remotes
    each, cost 4 ms in 200 dumps, 1.4 ms in one; 1000, 70 ms against 12 ms.

    Equivalent to: `bridge fdb show [brport VX] | grep 00:00:00:00:00:00`.
    """
    classic = {}
    for name, obj in state.interfaces.items():
        if obj.kind != "vxlan":
            continue
        _name_underlay(state, name, obj, PHYSDEV)
        # A metadata device's remotes are per VNI: not netcfg's (yet).
        if not obj.attrs.get(VNIFILTER) and VNI in obj.attrs:
            classic[state.ifindex[name]] = obj
    if not classic:
        return
    if len(classic) * FDB_ONE_DUMP_SHARE >= len(state.interfaces):
        entries, _ = _dump(sock, state, RTM_GETNEIGH, fdb_dump(0), parse_remote)
    else:
        entries = []
        for index in classic:
            found, _ = _dump(sock, state, RTM_GETNEIGH, fdb_dump(index), parse_remote)
            entries += found
    remotes: dict[int, list[str]] = {index: [] for index in classic}
    for entry in entries:
        if entry is None or entry.ifindex not in classic:
            continue
        obj = classic[entry.ifindex]
        if entry.dst == obj.attrs.get(SVCNODE):
            continue
        if entry.finer:
            state.notes.append(f"{obj.name}: remote {entry.dst} with its own port, VNI or "
                               f"device has no netcfg spelling")
            continue
        remotes[entry.ifindex].append(entry.dst)
    # None is no attribute, as `show` prints it: a revert (this state as the
    # desired one) then leaves remotes added to a device that had none.
    for index, obj in classic.items():
        if remotes[index]:
            obj.attrs[REMOTE] = remotes[index]


def _made_by_sit(address: str) -> bool:
    """An address the kernel gives a sit tunnel itself: fe80::A.B.C.D/64 from its
    IPv4 local address, ::A.B.C.D/96 from the namespace's IPv4 addresses. Unlike
    other link-locals, Linux (6.12) does not mark them IFAPROT_KERNEL_LL."""
    ip, _, prefix = address.partition("/")
    if ":" not in ip:
        return False
    packed = socket.inet_pton(socket.AF_INET6, ip)
    if prefix == "64":
        # interface id 0:0:A.B.C.D, or ISATAP's 0:5efe:A.B.C.D (RFC 5214)
        return packed[:8] == b"\xfe\x80" + bytes(6) and packed[8:12] in (bytes(4),
                                                                       b"\x00\x00\x5e\xfe")
    return prefix == "96" and packed[:12] == bytes(12)


def _read_addresses(sock: RtnlSocket, state: NamespaceState, loopbacks: set[int]) -> None:
    # One dump per family, not one AF_UNSPEC dump: the kernel flags a dump
    # interrupted when its family's address generation changes, and after
    # thousands of links come up, IPv6 duplicate address detection changes
    # IPv6 addresses for seconds. A joint dump was interrupted on every try
    # and failed the verify; the IPv4 half is immune to that churn this way.
    addresses, _ = _dump(sock, state, RTM_GETADDR, getaddr_dump(socket.AF_INET), parse_address)
    try:
        found, _ = _dump(sock, state, RTM_GETADDR, getaddr_dump(socket.AF_INET6),
                         parse_address, attempts=IPV6_DUMP_ATTEMPTS)
    except DumpInterrupted:
        # DAD of the link-local addresses of thousands of links just brought
        # up interrupts every dump spanning more than one datagram for
        # seconds (4000 in one namespace: 9 retries, 2.6 s of backoff). One
        # device's addresses fit one datagram, which the kernel never flags.
        state.counts.retries += 1
        found = []
        for index in sorted(state.names):
            more, _ = _dump(sock, state, RTM_GETADDR, getaddr_dump(socket.AF_INET6, index),
                            parse_address)
            # A kernel that ignored the filter answered with every device's.
            found += [p for p in more if p is None or p[0] == index]
    addresses += found
    metrics: dict[str, int] = {}
    for parsed in addresses:
        if parsed is None:
            continue
        index, address, _family, metric, label = parsed
        if index in loopbacks and address == IPV4_LOOPBACK:
            continue   # made by the kernel when lo comes up
        name = state.names.get(index)
        if name is None or name in state.kernel_devices:
            continue   # a device that appeared after the link dump, or the kernel's
        if state.interfaces[name].kind == "sit" and _made_by_sit(address):
            continue
        state.interfaces[name].attrs.setdefault("address", []).append(address)
        if label is not None and label != name:
            state.interfaces[name].attrs.setdefault(ADDRESS_LABEL, []).append(
                f"{label} {address}")
        state.counts.addresses += 1
        metrics[name] = min(metric, metrics.get(name, metric))
    for name, metric in metrics.items():
        # One metric for all of a device's addresses, as a config writes it;
        # where they differ, the lowest: the prefix route that competes most
        # (the diff then sets the configured one on every address again).
        if metric:
            state.interfaces[name].attrs[ADDRESS_METRIC] = metric


def _ours(payload: memoryview) -> tuple[RawRoute, int] | None:
    """A route of ours, parsed, with its type; None for any other. The header
    decides before any attribute is parsed: the kernel's filter may not have
    applied (an old kernel, no strict checking)."""
    family, _d, _s, _tos, _table, protocol, _scope, rtm_type, _fl = RTMSG.unpack_from(payload)
    if protocol != RTPROT_NETCFG or family not in DEFAULT_METRIC:
        return None   # or another family's (multicast routing answers AF_UNSPEC too)
    return parse_route(payload), rtm_type


def _ours_and_foreign(payload: memoryview) -> tuple[RawRoute, int] | ForeignRoute | None:
    """As _ours, and a ForeignRoute for a route of anyone but us and the kernel."""
    family, _d, _s, _tos, _table, protocol, _scope, _type, _fl = RTMSG.unpack_from(payload)
    if family not in DEFAULT_METRIC or protocol in KERNEL_ROUTE_PROTOCOLS:
        return None
    if protocol == RTPROT_NETCFG:
        return _ours(payload)
    return ForeignRoute(parse_route(payload), bytes(payload))


def _read_routes(sock: RtnlSocket, state: NamespaceState, foreign: bool = False) -> None:
    # One dump for both families: AF_UNSPEC runs every family's dump, each
    # applying the protocol filter (NETLINK_GET_STRICT_CHK; checked on 6.18).
    vrf_tables = {o.attrs["vrf-table"]: n for n, o in state.interfaces.items()
                  if o.kind == "vrf" and isinstance(o.attrs.get("vrf-table"), int)}
    routes, state.routes_filtered_by_kernel = _dump(
        sock, state, RTM_GETROUTE,
        getroute_dump(AF_UNSPEC, protocol=RTPROT_UNSPEC if foreign else RTPROT_NETCFG),
        _ours_and_foreign if foreign else _ours)
    for parsed in routes:
        if parsed is None:
            continue
        if isinstance(parsed, ForeignRoute):
            state.foreign_routes.append(parsed)
            continue
        route, rtm_type = parsed
        dev = state.names.get(route.oif) if route.oif is not None else None
        if dev in state.kernel_devices:
            dev = None   # a route of ours through the kernel's fallback device
        why = ("a multipath route" if route.multipath else
               "a source-specific route" if route.source else
               "not a unicast route" if rtm_type != RTN_UNICAST else
               "through no device read" if dev is None else None)
        if why is not None or dev is None:
            state.notes.append(f"route {route.to} table {route.table}: {why}; netcfg has no "
                               f"spelling for it")
            continue
        state.interfaces[dev].attrs.setdefault("route", []).append(
            route_attribute(route, dev, vrf_tables))
        state.counts.routes += 1


# ---------------------------------------------------------------- namespace ids

def netns_id(sock: RtnlSocket, fd: int) -> int | None:
    """The nsid the namespace of ``fd`` has in ``sock``'s namespace, if any.

    Equivalent to: `ip netns list-id` for one namespace (RTM_GETNSID, NETNSA_FD).
    """
    # struct rtgenmsg (AF_UNSPEC), padded to 4, then the attribute.
    _t, _f, payload = sock.get(RTM_GETNSID, b"\0\0\0\0" + rtattr_u32(NETNSA_FD, fd))
    value = parse_attrs(payload, 4, {NETNSA_NSID}).get(NETNSA_NSID)
    nsid = S32.unpack_from(value)[0] if value is not None else -1
    return nsid if nsid >= 0 else None   # NETNSA_NSID_NOT_ASSIGNED is -1


def netns_ids(sock: RtnlSocket, namespaces: Mapping[str, int]) -> dict[int, str]:
    """nsid -> name, for each namespace (name -> open fd) with an nsid in the
    view of ``sock``'s namespace. One request per namespace."""
    out = {}
    for name, fd in namespaces.items():
        nsid = netns_id(sock, fd)
        if nsid is not None:
            out[nsid] = name
    return out


# ---------------------------------------------------------------- the whole model

def read_model(sockets: Mapping[str, RtnlSocket],
               nsids: Mapping[str, Mapping[int, str]] | None = None,
               netns_fd: Callable[[str], int | None] | None = None,
               foreign_routes: Collection[str] = (),
               ) -> tuple[Model, dict[str, NamespaceState]]:
    """The current state of every namespace in ``sockets`` (name -> socket in
    it; "" is the host's) as one Model, and the per-namespace states.

    A reference into another namespace (a veth's peer, a macvlan's lower
    device) is named through ``nsids`` (namespace -> nsid -> namespace name,
    as netns_ids() gives) where it covers it; else, with ``netns_fd`` (name
    -> an fd of it, open until the next call), by asking the kernel the nsid of each candidate namespace
    (RTM_GETNSID, one per pair, cached): exact either way. With neither, a
    veth's peer is the veth elsewhere whose ifindex is its IFLA_LINK and
    whose IFLA_LINK is its ifindex, taken only when each is the other's one
    candidate (a guess that an unread namespace can fool). An unresolved
    reference is left out, with a note, and stays in ``pending``. Routes of
    others are read in the namespaces named in ``foreign_routes``.
    """
    nsids = nsids or {}
    states = {netns: read_namespace(sock, netns, nsids.get(netns),
                                    foreign_routes=netns in foreign_routes)
              for netns, sock in sockets.items()}
    nsid_of = _nsid_lookup(sockets, netns_fd) if netns_fd is not None else None
    # The host's nsids of the namespaces its veths reach, learnt while
    # resolving them: asking the host for each would walk its whole nsid
    # table per namespace (N^2 steps at 10,000 namespaces).
    host_view: dict[str, int] = {}
    resolve_cross_namespace(states, nsids, nsid_of, host_view)

    model = Model()
    root_view = {name: nsid for nsid, name in nsids.get(ROOT_NETNS, {}).items()}
    for netns, state in states.items():
        for name, obj in state.interfaces.items():
            model.interfaces[(netns, name)] = obj
        for name, master in state.masters.items():
            model.masters[(netns, name)] = (netns, master)
        for name, vlans in state.bridge_vlans.items():
            model.bridge_vlans[(netns, name)] = vlans
        if netns != ROOT_NETNS:
            obj = ConfigObject(section=NETNS, name=netns, kind=NETNS,
                               loc=SourceLocation("<kernel>", 0))
            nsid = root_view.get(netns, host_view.get(netns))
            if nsid is None and nsid_of is not None and ROOT_NETNS in sockets:
                nsid = nsid_of(ROOT_NETNS, netns)
            if nsid is not None:
                obj.attrs["nsid"] = nsid
            model.namespaces[netns] = obj
    return model, states


def _nsid_lookup(sockets: Mapping[str, RtnlSocket],
                 netns_fd: Callable[[str], int | None]) -> Callable[[str, str], int | None]:
    """nsid_of(view, target): target's nsid in view's namespace, asked once
    (of the namespaces read)."""
    cache: dict[tuple[str, str], int | None] = {}

    def nsid_of(view: str, target: str) -> int | None:
        if (view, target) not in cache:
            fd = netns_fd(target) if target in sockets else None
            cache[(view, target)] = None if fd is None else netns_id(sockets[view], fd)
        return cache[(view, target)]
    return nsid_of


def resolve_cross_namespace(states: dict[str, NamespaceState],
                            nsids: Mapping[str, Mapping[int, str]],
                            nsid_of: Callable[[str, str], int | None] | None = None,
                            host_view: dict[str, int] | None = None) -> None:
    """Name the devices ``pending`` references point at (see read_model).
    ``host_view`` gets the host's nsid of each namespace a host veth was
    resolved into (that veth's IFLA_LINK_NETNSID)."""
    # Veths pointing out of their namespace, by (own ifindex, IFLA_LINK).
    crossing: dict[tuple[int, int], list[str]] = {}
    veth_refs: dict[tuple[str, int], CrossRef] = {}   # (netns, ifindex) -> its pending ref
    for netns, state in states.items():
        for ref in state.pending:
            if ref.kind == "veth":
                crossing.setdefault((ref.ifindex, ref.link), []).append(netns)
                veth_refs[(netns, ref.ifindex)] = ref

    def peer_points_back(netns: str, ref: CrossRef, candidate: str) -> bool:
        """Exactly whether ``ref`` (a veth in ``netns``) is the peer of the veth
        at its IFLA_LINK in ``candidate``, asked in the candidate's view: that
        veth's IFLA_LINK is ref's ifindex, and its IFLA_LINK_NETNSID is
        ``netns``'s nsid there; veth peering is one-to-one, so then ref's peer
        is that veth. The host's view holds an nsid for every namespace, and
        the kernel walks all of them per question (__peernet2id); a tenant's
        holds a few."""
        assert nsid_of is not None
        back = veth_refs.get((candidate, ref.link))
        if back is None or back.link != ref.ifindex:
            return False
        return nsid_of(candidate, netns) == back.nsid

    def pointing_back(netns: str, ifindex: int, link: int) -> list[str]:
        """Namespaces (but netns) with a veth at ifindex ``link`` whose IFLA_LINK is ``ifindex``."""
        return [c for c in crossing.get((link, ifindex), ()) if c != netns]

    for netns, state in states.items():
        unresolved = []
        for ref in state.pending:
            target_ns = nsids.get(netns, {}).get(ref.nsid)
            if target_ns is None:
                if ref.kind == "veth":
                    candidates = pointing_back(netns, ref.ifindex, ref.link)
                else:
                    candidates = [c for c, other in states.items()
                                  if c != netns and ref.link in other.names]
                if nsid_of is not None and ref.kind == "veth" and netns == ROOT_NETNS:
                    candidates = [c for c in candidates if peer_points_back(netns, ref, c)]
                elif nsid_of is not None:
                    candidates = [c for c in candidates if nsid_of(netns, c) == ref.nsid]
                elif ref.kind != "veth" or len(candidates) != 1 or \
                        len(pointing_back(candidates[0], ref.link, ref.ifindex)) != 1:
                    candidates = []   # no guessing beyond a one-to-one veth match
                target_ns = candidates[0] if len(candidates) == 1 else None
            target = states[target_ns].names.get(ref.link) if target_ns in states else None
            obj = state.interfaces[ref.name]
            if target is None:
                obj.attrs.pop(ref.netns_attribute, None)
                state.notes.append(f"{ref.name}: {ref.attribute} left out: it is ifindex "
                                   f"{ref.link} in the namespace with nsid {ref.nsid} here, "
                                   f"and no namespace read is that one for sure")
                unresolved.append(ref)
                continue
            obj.attrs[ref.attribute] = target
            obj.attrs[ref.netns_attribute] = target_ns
            if host_view is not None and nsid_of is not None and netns == ROOT_NETNS \
                    and ref.kind == "veth":
                host_view.setdefault(target_ns, ref.nsid)
        state.pending = unresolved
