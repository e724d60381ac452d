"""Operations to netlink requests: the planner's words in the kernel's.

``encode(op, ctx)`` turns one Operation (netcfg/plan/ops.py) into the
requests that carry it out, to be sent with ``RtnlSocket.transact`` on a
socket opened inside ``op.netns`` (the applier opens it there with
``NetnsSwitcher.socket_in``), so every device is created straight in its
namespace. What this module knows about the other side of the edge it was
taught by the kernel (tests/kernel/test_encode.py), not by the headers alone:

- IFLA_IFALIAS and IFLA_AF_SPEC are not honoured by a create request (the
  alias is silently dropped, IFLA_AF_SPEC/AF_INET6 is refused with
  EAFNOSUPPORT, even from `ip link add ... addrgenmode none`). link-add sends
  them in a second RTM_NEWLINK that names the new device by IFLA_IFNAME; the
  kernel handles a batch's requests in order, so it lands before any link-up.
- A kernel built without CONFIG_BRIDGE_VLAN_FILTERING answers EOPNOTSUPP to
  any IFLA_BR_VLAN_FILTERING, even 0; vlan_filtering off is the default, so
  it is sent only when on.
- IFLA_BR_AGEING_TIME is in centiseconds (clock_t, USER_HZ 100); the
  config's bridge-ageing is seconds.
- IFLA_PROTINFO (bridge port options) and VXLAN_VNIFILTER_ENTRY must carry
  NLA_F_NESTED: without it br_setlink reads IFLA_PROTINFO as a bare STP port
  state, and vxlan's vnifilter parser refuses the entry.
- Byte orders: IFLA_VXLAN_PORT and IFLA_VLAN_PROTOCOL are big-endian
  (__be16), addresses are network order, every other integer host order.
- Bridge port options and port VLANs go as AF_BRIDGE RTM_SETLINK/RTM_DELLINK
  (rtnl_bridge_setlink); an AF_BRIDGE RTM_NEWLINK is an ordinary link request
  that ignores IFLA_PROTINFO.
- VLAN-to-VNI mappings (IFLA_BRIDGE_VLAN_TUNNEL_INFO, same messages) need
  the port's vlan_tunnel flag and the VLAN on the port, else EINVAL; their
  nests go without NLA_F_NESTED, as iproute2 sends them (the kernel parses
  them leniently). Checked in the VM tier (tests/vm/test_vm_vni.py).

Not netlink, so not encoded (empty list): netns-add / netns-del (the applier
does them with ns.py), and ``disable-ipv6`` in link-add / link-set params,
a sysctl (net.ipv6.conf.IF.disable_ipv6) the applier writes itself.

Devices are named by ifindex from ``ctx.ifindex``. Requests on the device
itself (link-set, master-*, link-up/down, link-del) fall back to its name
(IFLA_IFNAME, looked up by the kernel in the socket's namespace) when the
context does not know it yet, e.g. a device created earlier in the same
batch; addresses, routes, port VLANs and VNIs need the ifindex, and the
context's UnknownDevice then reaches the caller (read back, then encode again).

A param that cannot be expressed raises EncodeError: nothing is dropped.
The attribute tables (value encoders, enum names, IFLA_INFO_DATA per kind,
SETTINGS) are in netcfg/netlink/attrs.py.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from netcfg.model.errors import EXIT_INVALID_CONFIG, NetcfgError, UnknownDevice, quote
from netcfg.kinds.genl import created_without_info_data, genl_attributes
from netcfg.kinds.common import IPV6_SETTINGS
from netcfg.model.tags import NETCFG_GROUP, RTPROT_NETCFG
from netcfg.netlink.attrs import INFO_DATA, LINK, NO_RESET, PORT, SETTINGS, SYSCTL, Encoder
from netcfg.netlink.fdb import APPEND, RTM_DELNEIGH, RTM_NEWNEIGH, remote_entry
from netcfg.netlink.nlmsg import (RTMSG, RTA_MULTIPATH, RTA_PREFSRC, RTA_SRC, RTNH_F_ONLINK,
                                  parse_attrs,
                                  AF_BRIDGE, AF_INET, AF_INET6, BRIDGE_FLAGS_SELF, BRIDGE_VLAN_INFO,
                                  BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_RANGE_BEGIN,
                                  BRIDGE_VLAN_INFO_RANGE_END, BRIDGE_VLAN_INFO_UNTAGGED,
                                  IFA_ADDRESS, IFA_BROADCAST, IFA_LABEL, IFA_LOCAL,
                                  IFA_RT_PRIORITY, IFF_UP,
                                  IFLA_AF_SPEC, IFLA_BRIDGE_FLAGS, IFLA_BRIDGE_VLAN_INFO,
                                  IFLA_BRIDGE_VLAN_TUNNEL_FLAGS,
                                  IFLA_BRIDGE_VLAN_TUNNEL_ID, IFLA_BRIDGE_VLAN_TUNNEL_INFO,
                                  IFLA_BRIDGE_VLAN_TUNNEL_VID, IFLA_GROUP, IFLA_IFNAME, IFLA_LINK,
                                  IFLA_LINK_NETNSID, IFLA_MASTER, IFLA_NET_NS_FD, IFLA_PROTINFO,
                                  NLA_F_NESTED, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE,
                                  RT_SCOPE_HOST, RT_SCOPE_LINK, RT_SCOPE_NOWHERE, RT_SCOPE_UNIVERSE,
                                  RT_TABLE_MAIN,
                                  RTA_DST, RTA_GATEWAY, RTA_OIF, RTA_PRIORITY, RTA_TABLE, Request,
                                  RTM_DELADDR, RTM_DELLINK, RTM_DELROUTE, RTM_DELTUNNEL,
                                  RTM_NEWADDR, RTM_NEWLINK, RTM_NEWROUTE, RTM_NEWTUNNEL,
                                  RTM_SETLINK, RTN_UNICAST, RTN_UNSPEC, TUNNEL_MSG, VETH_INFO_PEER,
                                  VXLAN_VNIFILTER_ENTRY, VXLAN_VNIFILTER_ENTRY_END,
                                  VXLAN_VNIFILTER_ENTRY_START, dellink_group, ifaddrmsg, ifinfomsg,
                                  linkinfo, nested, rtattr, rtattr_str, rtattr_u32, rtmsg)
from netcfg.plan.ops import FDB_ADD, FDB_DEL
from netcfg.plan.ops import (ADDR_ADD, ADDR_DEL, LINK_ADD, LINK_DEL, LINK_DOWN, LINK_SET, LINK_UP,
                             MASTER_SET, MASTER_UNSET, NETNS_ADD, NETNS_DEL, ROUTE_ADD, ROUTE_DEL,
                             VLAN_ADD, VLAN_DEL, VLAN_TUNNEL_ADD, VLAN_TUNNEL_DEL, VNI_ADD, VNI_DEL,
                             Operation)

CREATE = NLM_F_CREATE | NLM_F_EXCL

# link-add params naming other devices (diff.LOWER_PARAM, diff.PEER_PARAM, ...).
LOWER, LOWER_NETNS, PEER, PEER_NETNS = "link", "link_netns", "peer", "peer_netns"


class EncodeContext(Protocol):
    """What encoding needs to know about the kernel, kept by the applier from read-back."""

    def ifindex(self, netns: str, name: str) -> int:
        """The device's ifindex in ``netns``; UnknownDevice when unknown."""

    def netns_fd(self, netns: str) -> int:
        """An open fd of ``netns`` (IFLA_NET_NS_FD of a veth peer made there)."""

    def nsid(self, netns: str, other: str) -> int | None:
        """The id ``other`` has as seen from ``netns`` (IFLA_LINK_NETNSID); None if none."""

    def vrf_table(self, netns: str, name: str) -> int:
        """The routing table of VRF device ``name`` (routes written with ``vrf NAME``)."""

    def new_ifindex(self, netns: str, name: str) -> int:
        """The ifindex to create device ``name`` with in ``netns``, or 0 to
        let the kernel choose. Chosen by the applier so it knows the new
        device's index without reading it back (see _link_add)."""

    def ifindex_taken(self, netns: str, index: int) -> bool:
        """Whether ``index`` may be in use in ``netns`` (True when unknown)."""


@dataclass
class StaticContext:
    """An EncodeContext over plain dicts (tests, dry runs, an applier's table)."""

    ifindexes: dict[tuple[str, str], int] = field(default_factory=dict)
    netns_fds: dict[str, int] = field(default_factory=dict)
    nsids: dict[tuple[str, str], int] = field(default_factory=dict)
    vrf_tables: dict[tuple[str, str], int] = field(default_factory=dict)
    new_ifindexes: dict[tuple[str, str], int] = field(default_factory=dict)

    def ifindex(self, netns: str, name: str) -> int:
        index = self.ifindexes.get((netns, name))
        if index is None:
            raise UnknownDevice(netns, name)
        return index

    def netns_fd(self, netns: str) -> int:
        return self.netns_fds[netns]

    def nsid(self, netns: str, other: str) -> int | None:
        return self.nsids.get((netns, other))

    def vrf_table(self, netns: str, name: str) -> int:
        return self.vrf_tables[(netns, name)]

    def new_ifindex(self, netns: str, name: str) -> int:
        return self.new_ifindexes.get((netns, name), 0)

    def ifindex_taken(self, netns: str, index: int) -> bool:
        return index in {i for (ns, _), i in self.ifindexes.items() if ns == netns}


class EncodeError(NetcfgError):
    """An operation netcfg cannot express as netlink; nothing was sent."""

    exit_code = EXIT_INVALID_CONFIG
    retryable = False

    def __init__(self, op: Operation, param: str | None, message: str):
        self.op = op
        self.param = param
        where = f" (netns {op.netns})" if op.netns else ""
        what = f" {param}" if param else ""
        super().__init__(f"{op.action} {op.name}{where}{what}: {message}")


def encode(op: Operation, ctx: EncodeContext) -> list[Request]:
    """The requests carrying out ``op``, each tagged with it; [] when it is not netlink."""
    return ENCODERS[op.action](op, ctx)


def delete_group(netns: str) -> Request:
    """Every device netcfg made in ``netns``, in one request (the socket's namespace).

    Equivalent to: `ip -n NETNS link delete group 28259`. ENODEV when there is none.
    """
    return Request(RTM_DELLINK, 0, dellink_group(NETCFG_GROUP),
                   tag=Operation(LINK_DEL, netns, "", f"group {NETCFG_GROUP}"))


# ---------------------------------------------------------------- helpers
def _value(op: Operation, param: str, encoder: Encoder, value: Any) -> bytes:
    if value is None:
        raise EncodeError(op, param, "has no value; the config must give one")
    try:
        return encoder(value)
    except (ValueError, TypeError, struct.error) as e:
        raise EncodeError(op, param, f"cannot encode {quote(value)}: {e}") from None


def _only(op: Operation, allowed: Iterable[str]) -> None:
    extra = sorted(set(op.params) - set(allowed))
    if extra:
        raise EncodeError(op, extra[0], f"is not a param of {op.action} (expected "
                                        f"{', '.join(sorted(allowed)) or 'none'})")


def _device(op: Operation, ctx: EncodeContext, family: int = 0, flags: int = 0,
            change: int = 0) -> bytes:
    """ifinfomsg naming op's device: by ifindex, else by name (the kernel looks it up)."""
    try:
        return ifinfomsg(ctx.ifindex(op.netns, op.name), flags, change, family)
    except UnknownDevice:
        return ifinfomsg(0, flags, change, family) + rtattr_str(IFLA_IFNAME, op.name)


def _index(op: Operation, ctx: EncodeContext, name: str | None = None) -> int:
    return ctx.ifindex(op.netns, op.name if name is None else name)


def _ranges(op: Operation, param: str) -> list[tuple[int, int]]:
    """``["100", "200-210"]`` as [(100, 100), (200, 210)]."""
    out = []
    for text in op.params.get(param) or ():
        first, _, last = str(text).partition("-")
        try:
            span = (int(first), int(last or first))
        except ValueError:
            raise EncodeError(op, param,
                              f"{quote(text)} is not an id or a range FIRST-LAST") from None
        if span[0] > span[1]:
            raise EncodeError(op, param, f"range {quote(text)} ends before it starts")
        out.append(span)
    return out


# ---------------------------------------------------------------- link-add
def _link_add(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip link add NAME [index N] group 28259 [mtu M] [address MAC] type
    KIND ...`, then `ip link set NAME alias TEXT addrgenmode MODE` when those are given.

    The ifindex (and a veth peer's) is the context's choice when it makes
    one: the applier then needs no read between creating a device and
    addressing it. NLM_F_EXCL makes an index already taken an error
    (EEXIST) rather than a change to the device that has it."""
    params = op.params
    kind = params.get("kind")
    # Params a kind's generic netlink family sets are not rtnetlink's: the
    # applier sends them once the batch made the device (kinds/genl.py).
    genl = genl_attributes()
    table = INFO_DATA.get(kind, {} if kind in created_without_info_data() else None)
    if table is None:
        raise EncodeError(op, "kind", f"netcfg cannot create a {quote(kind)} device (it creates "
                                      f"{', '.join(sorted(INFO_DATA))})")
    attrs = [rtattr_str(IFLA_IFNAME, op.name), rtattr_u32(IFLA_GROUP, NETCFG_GROUP)]
    index = ctx.new_ifindex(op.netns, op.name)
    lower_netns = params.get(LOWER_NETNS, op.netns) if LOWER in params else op.netns
    if index and lower_netns != op.netns:
        # The kernel makes the device in its lower's namespace and then moves
        # it (rtnl_newlink_create): an index taken there is EBUSY. The next
        # free one here that is not in use there (bounded: an unread
        # namespace counts every index as taken; EBUSY then reverts).
        for _ in range(64):
            if not ctx.ifindex_taken(lower_netns, index):
                break
            index = ctx.new_ifindex(op.netns, op.name)
    later: list[bytes] = []
    data: list[bytes] = []
    # Read together with the param they qualify.
    consumed = {"kind", *((LOWER_NETNS,) if LOWER in params else ()),
                *((PEER_NETNS,) if kind == "veth" else ())}
    for param, value in params.items():
        if param in consumed or param in genl:
            continue
        if param == LOWER:
            if LOWER in table:   # IFLA_VXLAN_LINK, IFLA_GRE_LINK...: in the kind's own data
                data.append(_value(op, param, table[LOWER], ctx.ifindex(op.netns, value)))
            else:
                attrs += _lower(op, ctx)
        elif param == PEER and kind == "veth":
            data.append(_veth_peer(op, ctx, chosen=bool(index)))
        elif param in table:
            data.append(_value(op, param, table[param], value))
        elif param in SETTINGS and SETTINGS[param].place in (LINK, SYSCTL):
            setting = SETTINGS[param]
            if setting.place == SYSCTL:
                continue   # disable-ipv6: the applier writes the sysctl
            encoded = _value(op, param, setting.encode, value)
            (attrs if setting.at_create else later).append(encoded)
        else:
            raise EncodeError(op, param, f"is not a param netcfg can send when creating a "
                                         f"{kind} (known: {', '.join(sorted(table)) or 'none'}, "
                                         f"and the common mtu, hwaddress, alias, addr-gen-mode)")
    if kind == "veth" and PEER not in params:
        raise EncodeError(op, PEER, "a veth is created with its peer; the op names none")
    attrs.append(linkinfo(kind, [d for d in data if d]))
    requests = [Request(RTM_NEWLINK, CREATE, ifinfomsg(index) + b"".join(attrs), tag=op)]
    if later:
        # Not honoured at creation (module docstring): set on the new device by name.
        requests.append(Request(RTM_NEWLINK, 0, ifinfomsg() + rtattr_str(IFLA_IFNAME, op.name)
                                + b"".join(later), tag=op))
    return requests


def _lower(op: Operation, ctx: EncodeContext) -> list[bytes]:
    """IFLA_LINK of a vlan / macvlan, and the lower's namespace when it is elsewhere."""
    name = op.params[LOWER]
    if not name:
        raise EncodeError(op, LOWER, "names no lower device")
    netns = op.params.get(LOWER_NETNS, op.netns)
    attrs = [rtattr_u32(IFLA_LINK, ctx.ifindex(netns, name))]
    if netns != op.netns:
        nsid = ctx.nsid(op.netns, netns)
        if nsid is None:
            lower, own = (f"namespace {quote(n)}" if n else "the host namespace"
                          for n in (netns, op.netns))
            raise EncodeError(op, LOWER_NETNS, f"{lower} has no id in {own}; assign one first "
                                               f"(ip -n {op.netns or '.'} netns set NAME ID)")
        attrs.append(rtattr(IFLA_LINK_NETNSID, struct.pack("=i", nsid)))
    return attrs


def _veth_peer(op: Operation, ctx: EncodeContext, chosen: bool) -> bytes:
    """VETH_INFO_PEER: an ifinfomsg and the peer's own IFLA_* (made in its namespace)."""
    name = op.params[PEER]
    if not name:
        raise EncodeError(op, PEER, "names no peer device")
    netns = op.params.get(PEER_NETNS, op.netns)
    # The kernel honours the peer's ifindex only when the device's own is
    # given too (veth_newlink); the applier chooses both or neither.
    index = ctx.new_ifindex(netns, name) if chosen else 0
    peer = [ifinfomsg(index), rtattr_str(IFLA_IFNAME, name), rtattr_u32(IFLA_GROUP, NETCFG_GROUP)]
    if netns != op.netns:
        peer.append(rtattr_u32(IFLA_NET_NS_FD, ctx.netns_fd(netns)))
    return rtattr(VETH_INFO_PEER, b"".join(peer))


# ---------------------------------------------------------------- link-set
def _link_set(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip link set NAME mtu M alias TEXT type bridge stp_state 1 ...`
    and, for bridge port options, `bridge link set dev NAME learning on`."""
    link: list[bytes] = []
    data: list[bytes] = []
    port: list[bytes] = []
    # A device below 1280 has no IPv6 state (addrconf_ifdown), and the
    # kernel checks IFLA_AF_SPEC before it sets the MTU of the same request
    # (EAFNOSUPPORT): IPv6 settings go in a request after the MTU's.
    after_mtu: list[bytes] = []
    kinds: set[str] = set()
    genl = genl_attributes()
    for param, value in op.params.items():
        if param in genl:
            continue   # the applier's, over generic netlink
        setting = SETTINGS.get(param)
        if setting is None:
            raise EncodeError(op, param, "netcfg cannot change this attribute on an existing "
                                         "device; it is set when the device is created (or not "
                                         "at all): re-create the device to change it")
        if setting.place == SYSCTL:
            continue   # disable-ipv6: the applier writes the sysctl
        if value is None:
            if setting.reset is NO_RESET:
                raise EncodeError(op, param, "cannot be reset to a kernel default (there is "
                                             "none to go back to); write the value wanted")
            value = setting.reset
        encoder = setting.encode or INFO_DATA[setting.kind][setting.key]
        encoded = _value(op, param, encoder, value)
        if setting.place == LINK and param in IPV6_SETTINGS and "mtu" in op.params:
            after_mtu.append(encoded)
        elif setting.place == LINK:
            link.append(encoded)
        elif setting.place == PORT:
            port.append(encoded)
        else:
            kinds.add(setting.kind)
            data.append(encoded)
    if len(kinds) > 1:
        raise EncodeError(op, None, f"mixes attributes of kinds {', '.join(sorted(kinds))}; "
                                    f"a device has one kind")
    requests = []
    if link or data:
        if data:
            link.append(linkinfo(kinds.pop(), [d for d in data if d]))
        requests.append(Request(RTM_NEWLINK, 0, _device(op, ctx) + b"".join(link), tag=op))
    if after_mtu:
        requests.append(Request(RTM_NEWLINK, 0, _device(op, ctx) + b"".join(after_mtu), tag=op))
    if port:
        protinfo = rtattr(IFLA_PROTINFO | NLA_F_NESTED, b"".join(port))
        requests.append(Request(RTM_SETLINK, 0, ifinfomsg(_index(op, ctx), family=AF_BRIDGE)
                                + protinfo, tag=op))
    return requests


# ---------------------------------------------------------------- link-del, master, up/down
def _link_del(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip link delete NAME` (a veth's peer goes with it)."""
    # The params name the peer / lower for the planner's ordering only.
    _only(op, (PEER, PEER_NETNS, LOWER, LOWER_NETNS))
    return [Request(RTM_DELLINK, 0, _device(op, ctx), tag=op)]


def _master_set(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip link set NAME master MASTER`."""
    _only(op, ("master",))
    master = _index(op, ctx, op.params.get("master") or "")
    return [Request(RTM_NEWLINK, 0, _device(op, ctx) + rtattr_u32(IFLA_MASTER, master), tag=op)]


def _master_unset(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip link set NAME nomaster`."""
    _only(op, ("master",))
    return [Request(RTM_NEWLINK, 0, _device(op, ctx) + rtattr_u32(IFLA_MASTER, 0), tag=op)]


def _link_up(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip link set NAME up`."""
    _only(op, ())
    return [Request(RTM_NEWLINK, 0, _device(op, ctx, flags=IFF_UP, change=IFF_UP), tag=op)]


def _link_down(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip link set NAME down`."""
    _only(op, ())
    return [Request(RTM_NEWLINK, 0, _device(op, ctx, flags=0, change=IFF_UP), tag=op)]


# ---------------------------------------------------------------- addresses
def _address(op: Operation, ctx: EncodeContext) -> bytes:
    family, packed, prefixlen = _parse_address(op)
    _only(op, ADDRESS_PARAMS)
    # As iproute2: 127.0.0.0/8 is host-scoped.
    scope = RT_SCOPE_HOST if family == AF_INET and packed[0] == 127 else RT_SCOPE_UNIVERSE
    if op.params.get("scope") is not None:
        # ifupdown's `scope` line, as `ip addr add A scope S` (rtnetlink's numbers).
        scope = ADDRESS_SCOPES[op.params["scope"]]
    # `pointopoint PEER` (ifupdown2's): IFA_ADDRESS is the peer, as `ip addr
    # add A peer P`; `broadcast B`: IFA_BROADCAST, as `ip addr add A brd B`;
    # `metric M`: IFA_RT_PRIORITY, the metric of the address's prefix route.
    peer = op.params.get("peer")
    out = (ifaddrmsg(family, prefixlen, _index(op, ctx), scope=scope)
           + rtattr(IFA_LOCAL, packed)
           + rtattr(IFA_ADDRESS, ipaddress.ip_address(peer).packed if peer else packed))
    broadcast = _broadcast(op.params.get("broadcast"), family, packed, prefixlen)
    if broadcast:
        out += rtattr(IFA_BROADCAST, broadcast)
    if op.params.get("metric") is not None:
        out += rtattr_u32(IFA_RT_PRIORITY, op.params["metric"])
    if op.params.get("label"):
        # `ip addr add A dev IF label IF:1` (an ifupdown alias stanza's).
        out += rtattr(IFA_LABEL, op.params["label"].encode() + b"\0")
    return out


def _broadcast(value: str | None, family: int, packed: bytes, prefixlen: int) -> bytes | None:
    """IFA_BROADCAST of an address-add: a written address, or iproute2's `brd +`
    (the address's host bits set) and `brd -` (reset), computed per address as
    `ip addr add` does (ipaddress.c), which sends none for a /31 or /32."""
    if not value:
        return None
    if value not in ("+", "-"):
        return ipaddress.ip_address(value).packed
    if family != AF_INET or prefixlen > 30:
        return None
    host = (1 << (32 - prefixlen)) - 1
    number = int.from_bytes(packed, "big")
    return ((number | host) if value == "+" else (number & ~host)).to_bytes(4, "big")


# "replace": the address is there already, with another metric
# (plan/addresses.py _metric_changes): NLM_F_REPLACE changes it in place.
ADDRESS_PARAMS = ("peer", "broadcast", "metric", "replace", "scope", "label")
# rt_scope_t (linux/rtnetlink.h), by the names ip-address(8) takes.
ADDRESS_SCOPES = {"global": 0, "site": 200, "link": 253, "host": 254}


_MAX_PREFIX = {AF_INET: 32, AF_INET6: 128}


def _parse_address(op: Operation) -> tuple[int, bytes, int]:
    """(family, address bytes, prefix length) of an address op's subject.

    inet_pton, not ipaddress.ip_interface: a build encodes thousands and
    ipaddress was a third of encoding's time. Anything but the plain form
    (ADDR/LEN) goes through ipaddress, which gives the same result or the error."""
    text = op.subject
    addr, _, length = text.partition("/")
    family = AF_INET6 if ":" in addr else AF_INET
    if length.isdigit() and int(length) <= _MAX_PREFIX[family]:
        try:
            return family, socket.inet_pton(family, addr), int(length)
        except OSError:
            pass
    try:
        interface = ipaddress.ip_interface(text)
    except ValueError:
        raise EncodeError(op, None, f"{quote(text)} is not an address with a prefix "
                                    f"length (10.0.0.1/24)") from None
    family = AF_INET if interface.ip.version == 4 else AF_INET6
    return family, interface.ip.packed, interface.network.prefixlen


def _addr_add(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip address add ADDR/LEN dev NAME [metric M]`, or with
    "replace", `ip address replace ADDR/LEN dev NAME metric M`."""
    flags = REPLACE if op.params.get("replace") else CREATE
    return [Request(RTM_NEWADDR, flags, _address(op, ctx), tag=op)]


def _addr_del(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip address del ADDR/LEN dev NAME`."""
    return [Request(RTM_DELADDR, 0, _address(op, ctx), tag=op)]


# ---------------------------------------------------------------- routes
ROUTE_PARAMS = ("to", "via", "dev", "table", "vrf", "metric", "replace", "onlink")
# A route-add with "replace" takes over another program's route of the same
# prefix, table and metric in one step (apply/takeover.py): NLM_F_REPLACE,
# as `ip route replace`, where NLM_F_EXCL would answer EEXIST.
REPLACE = NLM_F_CREATE | NLM_F_REPLACE


def _route(op: Operation, ctx: EncodeContext, adding: bool) -> bytes:
    _only(op, ROUTE_PARAMS)
    params = op.params
    try:
        dst = ipaddress.ip_network(params.get("to") or op.subject.split(" ", 1)[0])
        via = ipaddress.ip_address(params["via"]) if params.get("via") else None
    except ValueError as e:
        raise EncodeError(op, "to", f"not a route prefix and gateway: {e}") from None
    if via is not None and via.version != dst.version:
        raise EncodeError(op, "via", f"gateway {via} is not of {dst}'s address family")
    if "table" in params:
        table = params["table"]
    elif params.get("vrf"):
        table = ctx.vrf_table(op.netns, params["vrf"])
    else:
        table = RT_TABLE_MAIN
    family = AF_INET if dst.version == 4 else AF_INET6
    if adding:
        scope = RT_SCOPE_UNIVERSE if via is not None else RT_SCOPE_LINK
        header = rtmsg(family, dst.prefixlen, table, RTPROT_NETCFG, scope, RTN_UNICAST,
                       flags=RTNH_F_ONLINK if params.get("onlink") else 0)
    else:
        # Scope NOWHERE and type UNSPEC match any (as `ip route del`); the
        # protocol must match: netcfg deletes only routes it added.
        header = rtmsg(family, dst.prefixlen, table, RTPROT_NETCFG, RT_SCOPE_NOWHERE, RTN_UNSPEC)
    attrs = [header, rtattr_u32(RTA_TABLE, table)]
    if dst.prefixlen:
        attrs.append(rtattr(RTA_DST, dst.network_address.packed))
    if via is not None:
        attrs.append(rtattr(RTA_GATEWAY, via.packed))
    attrs.append(rtattr_u32(RTA_OIF, _index(op, ctx, params.get("dev") or op.name)))
    if params.get("metric") is not None:
        attrs.append(rtattr_u32(RTA_PRIORITY, params["metric"]))
    return b"".join(attrs)


def _route_add(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip route add PREFIX [via GW] dev DEV [table T] [metric M] proto 110`."""
    flags = REPLACE if op.params.get("replace") else CREATE
    return [Request(RTM_NEWROUTE, flags, _route(op, ctx, adding=True), tag=op)]


def _route_del(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `ip route del PREFIX [via GW] dev DEV [table T] [metric M] proto 110`."""
    if PROTOCOL in op.params:
        return [_foreign_route_del(op, ctx)]
    return [Request(RTM_DELROUTE, 0, _route(op, ctx, adding=False), tag=op)]


# ---------------------------------------------------------------- other programs' routes
# A route of another program (a purge namespace's) carries its protocol in the
# operation: deleted with that protocol, where netcfg's own are deleted as
# proto 110 only; put back by a revert exactly as it was dumped.
PROTOCOL = "protocol"


def _foreign_route_del(op: Operation, ctx: EncodeContext) -> Request:
    """Equivalent to: `ip route del PREFIX [via GW] [dev DEV] table T metric M proto P`.

    Scope NOWHERE and type UNSPEC match any; the protocol must match."""
    params = op.params
    dst = ipaddress.ip_network(params["to"])
    table = params["table"]
    attrs = [rtmsg(AF_INET if dst.version == 4 else AF_INET6, dst.prefixlen, table,
                   params[PROTOCOL], RT_SCOPE_NOWHERE, RTN_UNSPEC), rtattr_u32(RTA_TABLE, table)]
    if dst.prefixlen:
        attrs.append(rtattr(RTA_DST, dst.network_address.packed))
    if params.get("via"):
        attrs.append(rtattr(RTA_GATEWAY, ipaddress.ip_address(params["via"]).packed))
    if params.get("dev"):
        attrs.append(rtattr_u32(RTA_OIF, ctx.ifindex(op.netns, params["dev"])))
    if params["metric"]:
        attrs.append(rtattr_u32(RTA_PRIORITY, params["metric"]))
    return Request(RTM_DELROUTE, 0, b"".join(attrs), tag=op)


def route_readd(op: Operation, payload: bytes, table: int, ifindex: int | None) -> Request:
    """Equivalent to: `ip route add` of a route as it was dumped (``payload``,
    its RTM_NEWROUTE), through its device's ifindex now; ``op`` is its tag."""
    family, dst_len, src_len, tos, _t, protocol, scope, rtm_type, _f = RTMSG.unpack_from(payload)
    kept = parse_attrs(payload, RTMSG.size,
                       {RTA_DST, RTA_SRC, RTA_GATEWAY, RTA_PREFSRC, RTA_PRIORITY, RTA_MULTIPATH})
    attrs = [rtmsg(family, dst_len, table, protocol, scope, rtm_type, src_len, tos),
             rtattr_u32(RTA_TABLE, table)]
    attrs += [rtattr(attr, bytes(value)) for attr, value in sorted(kept.items())]
    if ifindex is not None:
        attrs.append(rtattr_u32(RTA_OIF, ifindex))
    return Request(RTM_NEWROUTE, CREATE, b"".join(attrs), tag=op)


# ---------------------------------------------------------------- bridge port VLANs
def _vlan_info(op: Operation, adding: bool) -> bytes:
    """IFLA_AF_SPEC of IFLA_BRIDGE_VLAN_INFO entries, ranges as BEGIN/END pairs.

    A range carries one set of flags and the kernel refuses a PVID range, so
    ranges are cut where the untagged set or the pvid starts or stops.
    """
    _only(op, ("vids", "pvid", "untagged", "self") if adding else ("vids", "self"))
    vids = _ranges(op, "vids")
    if not vids:
        raise EncodeError(op, "vids", "lists no VLAN")
    for first, last in vids:
        if not 1 <= first <= last <= 4094:
            raise EncodeError(op, "vids", f"VLAN ids are 1-4094, got {first}-{last}")
    untagged = _ranges(op, "untagged")
    pvid = op.params.get("pvid")
    inside = lambda vid: any(f <= vid <= l for f, l in vids)   # noqa: E731
    if pvid is not None and not inside(pvid):
        raise EncodeError(op, "pvid", f"{pvid} is not among the VLANs added ({op.params['vids']})")
    if any(not (inside(f) and inside(l)) for f, l in untagged):
        raise EncodeError(op, "untagged", "names VLANs that are not among those added")
    cuts = {c for f, l in untagged for c in (f, l + 1)}
    if pvid is not None:
        cuts |= {pvid, pvid + 1}
    # The bridge device's own VLANs (`bridge vlan add ... self`): without the
    # flag the request goes to the device's master, which a bridge has none of.
    entries = [rtattr(IFLA_BRIDGE_FLAGS, struct.pack("=H", BRIDGE_FLAGS_SELF))] \
        if op.params.get("self") else []
    for first, last in vids:
        starts = [first, *sorted(c for c in cuts if first < c <= last)]
        for start, end in zip(starts, [*starts[1:], last + 1]):
            flags = 0
            if any(f <= start <= l for f, l in untagged):
                flags |= BRIDGE_VLAN_INFO_UNTAGGED
            if start == pvid:
                flags |= BRIDGE_VLAN_INFO_PVID
            if start == end - 1:
                entries.append(rtattr(IFLA_BRIDGE_VLAN_INFO, BRIDGE_VLAN_INFO.pack(flags, start)))
            else:
                entries.append(rtattr(IFLA_BRIDGE_VLAN_INFO, BRIDGE_VLAN_INFO.pack(
                    flags | BRIDGE_VLAN_INFO_RANGE_BEGIN, start)))
                entries.append(rtattr(IFLA_BRIDGE_VLAN_INFO, BRIDGE_VLAN_INFO.pack(
                    flags | BRIDGE_VLAN_INFO_RANGE_END, end - 1)))
    return nested(IFLA_AF_SPEC, entries)


def _vlan_add(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge vlan add dev PORT vid 100-200 [pvid] [untagged] [self]`."""
    payload = ifinfomsg(_index(op, ctx), family=AF_BRIDGE) + _vlan_info(op, adding=True)
    return [Request(RTM_SETLINK, 0, payload, tag=op)]


def _vlan_del(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge vlan del dev PORT vid 100-200 [self]`."""
    payload = ifinfomsg(_index(op, ctx), family=AF_BRIDGE) + _vlan_info(op, adding=False)
    return [Request(RTM_DELLINK, 0, payload, tag=op)]


# ---------------------------------------------------------------- vnifilter VNIs
def _vni_entries(op: Operation, ctx: EncodeContext) -> bytes:
    _only(op, ("vnis",))
    spans = _ranges(op, "vnis")
    if not spans:
        raise EncodeError(op, "vnis", "lists no VNI")
    entries = []
    for first, last in spans:
        if not 1 <= first <= last <= 0xFFFFFF:
            raise EncodeError(op, "vnis", f"VNIs are 1-16777215, got {first}-{last}")
        attrs = rtattr_u32(VXLAN_VNIFILTER_ENTRY_START, first)
        if last != first:
            attrs += rtattr_u32(VXLAN_VNIFILTER_ENTRY_END, last)
        entries.append(rtattr(VXLAN_VNIFILTER_ENTRY | NLA_F_NESTED, attrs))
    return TUNNEL_MSG.pack(AF_BRIDGE, 0, 0, _index(op, ctx)) + b"".join(entries)


def _vni_add(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge vni add dev VXLAN vni 10100-10199`."""
    return [Request(RTM_NEWTUNNEL, CREATE, _vni_entries(op, ctx), tag=op)]


def _vni_del(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge vni del dev VXLAN vni 10100-10199`."""
    return [Request(RTM_DELTUNNEL, 0, _vni_entries(op, ctx), tag=op)]


# ---------------------------------------------------------------- VLAN-to-VNI mappings
VLAN_IDS, VNI_IDS = (1, 4094), (1, 0xFFFFFF)


def _tunnel_spans(op: Operation) -> list[tuple[int, int, int]]:
    """``map`` items (``10-41=10010-10041``, ``50=20050``) as (vid, last vid, vni)."""
    spans = []
    for item in op.params.get("map") or ():
        vlans, sep, vnis = str(item).partition("=")
        try:
            if not sep:
                raise ValueError(item)
            (vid, vid_end), (vni, vni_end) = _span(vlans), _span(vnis)
        except ValueError:
            raise EncodeError(op, "map", f"{quote(item)} is not VLANS=VNIS (10-41=10010-10041)") \
                from None
        if vid_end - vid != vni_end - vni:
            raise EncodeError(op, "map", f"{quote(item)} maps {vid_end - vid + 1} VLANs to "
                                         f"{vni_end - vni + 1} VNIs; a range maps one to one")
        for (first, last), (low, high), what in (((vid, vid_end), VLAN_IDS, "VLAN ids"),
                                                ((vni, vni_end), VNI_IDS, "VNIs")):
            if not low <= first <= last <= high:
                raise EncodeError(op, "map", f"{what} are {low}-{high}, got {first}-{last}")
        spans.append((vid, vid_end, vni))
    if not spans:
        raise EncodeError(op, "map", "lists no VLAN-to-VNI mapping")
    return spans


def _span(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    return int(first), int(last or first)


def _tunnel_info(vid: int, vni: int, flags: int) -> bytes:
    """One IFLA_BRIDGE_VLAN_TUNNEL_INFO. The flags attribute goes even when 0,
    as iproute2 sends it; the kernel reads the nest without NLA_F_NESTED."""
    return nested(IFLA_BRIDGE_VLAN_TUNNEL_INFO, [
        rtattr_u32(IFLA_BRIDGE_VLAN_TUNNEL_ID, vni),
        rtattr(IFLA_BRIDGE_VLAN_TUNNEL_VID, struct.pack("=H", vid)),
        rtattr(IFLA_BRIDGE_VLAN_TUNNEL_FLAGS, struct.pack("=H", flags))])


def _vlan_tunnel_info(op: Operation, ctx: EncodeContext) -> bytes:
    """AF_BRIDGE ifinfomsg + IFLA_AF_SPEC of tunnel infos, a range as a
    RANGE_BEGIN entry and a RANGE_END entry: the kernel walks both sides of a
    range together (br_process_vlan_tunnel_info) and refuses a VLAN range
    and a VNI range of different lengths (EINVAL)."""
    _only(op, ("map",))
    entries = []
    for vid, vid_end, vni in _tunnel_spans(op):
        if vid == vid_end:
            entries.append(_tunnel_info(vid, vni, 0))
        else:
            entries.append(_tunnel_info(vid, vni, BRIDGE_VLAN_INFO_RANGE_BEGIN))
            entries.append(_tunnel_info(vid_end, vni + vid_end - vid, BRIDGE_VLAN_INFO_RANGE_END))
    return ifinfomsg(_index(op, ctx), family=AF_BRIDGE) + nested(IFLA_AF_SPEC, entries)


def _vlan_tunnel_add(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge vlan add dev VXLAN vid 10-41 tunnel_info id 10010-10041`.

    The port needs vlan_tunnel on and the VLANs (EINVAL otherwise); a VLAN
    already mapped answers EEXIST, even to the same VNI.
    """
    return [Request(RTM_SETLINK, 0, _vlan_tunnel_info(op, ctx), tag=op)]


def _vlan_tunnel_del(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge vlan del dev VXLAN vid 10-41 tunnel_info id 10010-10041`.

    The kernel wants the VNIs too (the attribute is mandatory and a range's
    lengths are checked), though it removes a VLAN's mapping whatever it is.
    """
    return [Request(RTM_DELLINK, 0, _vlan_tunnel_info(op, ctx), tag=op)]


# ---------------------------------------------------------------- a vxlan's remotes
def _fdb(op: Operation, ctx: EncodeContext, adding: bool) -> list[Request]:
    _only(op, ())
    try:
        payload = remote_entry(_index(op, ctx), op.subject)
    except ValueError:
        raise EncodeError(op, None, f"{quote(op.subject)} is not an IP address") from None
    return [Request(RTM_NEWNEIGH if adding else RTM_DELNEIGH, APPEND if adding else 0, payload,
                    tag=op)]


def _fdb_add(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge fdb append 00:00:00:00:00:00 dev VXLAN self dst REMOTE`."""
    return _fdb(op, ctx, adding=True)


def _fdb_del(op: Operation, ctx: EncodeContext) -> list[Request]:
    """Equivalent to: `bridge fdb del 00:00:00:00:00:00 dev VXLAN self dst REMOTE`."""
    return _fdb(op, ctx, adding=False)


def _not_netlink(op: Operation, ctx: EncodeContext) -> list[Request]:
    return []


ENCODERS: dict[str, Callable[[Operation, EncodeContext], list[Request]]] = {
    NETNS_ADD: _not_netlink, NETNS_DEL: _not_netlink,
    LINK_ADD: _link_add, LINK_SET: _link_set, LINK_DEL: _link_del,
    MASTER_SET: _master_set, MASTER_UNSET: _master_unset,
    LINK_UP: _link_up, LINK_DOWN: _link_down,
    ADDR_ADD: _addr_add, ADDR_DEL: _addr_del,
    ROUTE_ADD: _route_add, ROUTE_DEL: _route_del,
    VLAN_ADD: _vlan_add, VLAN_DEL: _vlan_del,
    VNI_ADD: _vni_add, VNI_DEL: _vni_del,
    VLAN_TUNNEL_ADD: _vlan_tunnel_add, VLAN_TUNNEL_DEL: _vlan_tunnel_del,
    FDB_ADD: _fdb_add, FDB_DEL: _fdb_del,
}
