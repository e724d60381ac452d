"""Decoding the rtnetlink replies read.py dumps: bytes to schema-spelt attributes.

Pure functions over bytes (unit-tested on messages built with nlmsg's
helpers, tests/unit/test_read_parse.py). Only the attributes the model
needs are parsed (``parse_attrs(wanted=...)``); the rest of each message is
skipped over (DESIGN.md "Kernel edge": pyroute2's full parse costs ~1 ms a
link).

Per-kind decoding is data derived from the schemas' declarations
(``x-netcfg-kernel``, netlink/attrs.py): ``KIND_DATA`` maps an
IFLA_INFO_KIND to the IFLA_INFO_DATA attributes to parse and a decoder
giving that kind's schema attributes, each by its declared codec, then the
kind's ``read_back`` hook; ``SLAVE_DATA`` does the same for port settings.
What a value cannot say in the schema's terms is noted, not guessed.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from netcfg.kinds import registry
from netcfg.kinds.base import Kind
from netcfg.netlink.attrs import READ_DEVCONF, READ_INFO, READ_PORT
from netcfg.netlink.nlmsg import (AF_BRIDGE, AF_INET, AF_INET6, BRIDGE_VLAN_INFO, RTNH_F_ONLINK,
                                  BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_RANGE_BEGIN,
                                  BRIDGE_VLAN_INFO_RANGE_END, BRIDGE_VLAN_INFO_UNTAGGED,
                                  DEVCONF_DISABLE_IPV6, IFADDRMSG, IFAPROT_KERNEL_LL,
                                  IFAPROT_KERNEL_LO, IFAPROT_KERNEL_RA, IFA_ADDRESS, IFA_LABEL,
                                  IFA_LOCAL, IFA_PROTO, IFA_RT_PRIORITY, IFINFOMSG, IFLA_ADDRESS,
                                  IFLA_AF_SPEC,
                                  IFLA_BRIDGE_VLAN_INFO, IFLA_BRIDGE_VLAN_TUNNEL_FLAGS,
                                  IFLA_BRIDGE_VLAN_TUNNEL_ID, IFLA_BRIDGE_VLAN_TUNNEL_INFO,
                                  IFLA_BRIDGE_VLAN_TUNNEL_VID, IFLA_EXT_MASK, IFLA_GROUP,
                                  IFLA_IFALIAS, IFLA_IFNAME, IFLA_INET6_ADDR_GEN_MODE,
                                  IFLA_INET6_CONF, IFLA_INFO_DATA, IFLA_INFO_KIND,
                                  IFLA_INFO_SLAVE_DATA, IFLA_INFO_SLAVE_KIND, IFLA_LINK,
                                  IFLA_LINKINFO, IFLA_LINK_NETNSID, IFLA_MASTER, IFLA_MTU,
                                  IN6_ADDR_GEN_MODE_EUI64, IN6_ADDR_GEN_MODE_NONE,
                                  IN6_ADDR_GEN_MODE_RANDOM, IN6_ADDR_GEN_MODE_STABLE_PRIVACY,
                                  NLA_TYPE_MASK, RTATTR, RTA_DST, RTA_GATEWAY, RTA_MULTIPATH,
                                  RTA_OIF, RTA_PRIORITY, RTA_SRC, RTA_TABLE,
                                  RTEXT_FILTER_BRVLAN_COMPRESSED, RTMSG, RT_TABLE_MAIN, S32,
                                  attr_str, attr_u32, ifinfomsg, parse_attrs, rtattr_u32)

# Link attributes the model needs; the rest of each RTM_NEWLINK is skipped.
LINK_WANTED = frozenset({IFLA_IFNAME, IFLA_MTU, IFLA_ADDRESS, IFLA_IFALIAS, IFLA_MASTER,
                         IFLA_GROUP, IFLA_LINK, IFLA_LINK_NETNSID, IFLA_LINKINFO, IFLA_AF_SPEC})
_INFO_WANTED = frozenset({IFLA_INFO_KIND, IFLA_INFO_DATA, IFLA_INFO_SLAVE_KIND,
                          IFLA_INFO_SLAVE_DATA})
_AF_INET6_WANTED = frozenset({IFLA_INET6_CONF, IFLA_INET6_ADDR_GEN_MODE})
_ADDR_WANTED = frozenset({IFA_ADDRESS, IFA_LOCAL, IFA_PROTO, IFA_RT_PRIORITY, IFA_LABEL})
_ROUTE_WANTED = frozenset({RTA_DST, RTA_SRC, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_TABLE,
                           RTA_MULTIPATH})
# Addresses the kernel made itself (linux/if_addr.h IFAPROT_KERNEL_*).
_KERNEL_MADE = frozenset({IFAPROT_KERNEL_LO, IFAPROT_KERNEL_RA, IFAPROT_KERNEL_LL})
# Route metric the kernel gives a route added without one: a config that
# writes no metric gets it, so it is not printed back (the diff keys routes
# by metric).
DEFAULT_METRIC = {AF_INET: 0, AF_INET6: 1024}
_DEFAULT_ROUTE = {AF_INET: "0.0.0.0/0", AF_INET6: "::/0"}
_ADDR_LEN = {AF_INET: 4, AF_INET6: 16}

_U8 = struct.Struct("=B")
_U16 = struct.Struct("=H")


# ---------------------------------------------------------------- wire helpers

def iter_attrs(payload: bytes | memoryview, offset: int = 0) -> Iterator[tuple[int, memoryview]]:
    """(type, value) of every attribute, repeats included (parse_attrs keeps the
    last of a type; IFLA_AF_SPEC of AF_BRIDGE repeats IFLA_BRIDGE_VLAN_INFO)."""
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    end = len(view)
    unpack = RTATTR.unpack_from
    while offset + 4 <= end:
        length, attr_type = unpack(view, offset)
        if length < 4:
            return
        yield attr_type & NLA_TYPE_MASK, view[offset + 4:offset + length]
        offset += (length + 3) & ~3


def _u8(value: memoryview) -> int:
    return _U8.unpack_from(value)[0]


def _u16(value: memoryview) -> int:
    return _U16.unpack_from(value)[0]


def _mac(value: memoryview) -> str | None:
    raw = bytes(value)
    if len(raw) != 6 or not any(raw):
        return None   # not Ethernet (ipip: 4 bytes), or lo's all-zero address
    return raw.hex(":")


def _ip(value: memoryview | bytes) -> str:
    raw = bytes(value)
    if len(raw) == 16 and not any(raw[:10]):
        # inet_ntop writes ::A.B.C.D and ::ffff:A.B.C.D in dotted form, where
        # the config's side (ipaddress) writes hex: ::192.88.99.1, the 6to4
        # relay gateway (compile/legacy_tunnel.py), is ::c058:6301 on both.
        return str(ipaddress.IPv6Address(raw))
    return socket.inet_ntop(AF_INET if len(raw) == 4 else AF_INET6, raw)


# ---------------------------------------------------------------- per-kind INFO_DATA
# Decoding is derived from the schemas' declarations (netlink/attrs.py
# READ_INFO, READ_PORT): each IFLA_INFO_DATA attribute parsed is one schema
# attribute, by its codec; then the kind's read_back hook says what no table
# can (a vxlan's VNI in metadata mode, a bond's LACP rate outside 802.3ad).

def _table_decoder(table: dict[int, tuple[str, Callable[[memoryview], Any]]]):
    def decode(data: dict[int, memoryview], notes: list[str], name: str) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        for number, (attribute, decode_value) in table.items():   # schema order
            value = data.get(number)
            if value is not None:
                decoded = decode_value(value)
                if decoded is not None:
                    attrs[attribute] = decoded
        return attrs
    return decode


# IFLA_INFO_KIND -> (IFLA_INFO_DATA attributes to parse, decoder). A kind
# missing here has no attributes of its own to read (veth, dummy).
KIND_DATA = {info_kind: (frozenset(table), _table_decoder(table))
             for info_kind, table in READ_INFO.items()}
# IFLA_INFO_KIND -> the kind's read_back hook, run on the link's attributes
# once all are read (only kinds that override it).
READ_BACK = {k.info_kind: k.read_back for k in registry.interface_kinds()
             if k.info_kind and type(k).read_back is not Kind.read_back}

# IFLA_INFO_SLAVE_KIND -> (IFLA_INFO_SLAVE_DATA attributes, decoder): port settings.
_port = _table_decoder(READ_PORT)
SLAVE_DATA: dict[str, tuple[frozenset[int], Callable[[dict[int, memoryview]], dict[str, Any]]]] = {
    "bridge": (frozenset(READ_PORT), lambda d: _port(d, [], "")),
}

_ADDR_GEN_MODES = {IN6_ADDR_GEN_MODE_EUI64: "eui64", IN6_ADDR_GEN_MODE_NONE: "none",
                   IN6_ADDR_GEN_MODE_STABLE_PRIVACY: "stable_secret",
                   IN6_ADDR_GEN_MODE_RANDOM: "random"}



# ---------------------------------------------------------------- one link

@dataclass(slots=True)
class Link:
    """The parts of one RTM_NEWLINK the model needs."""

    index: int
    name: str
    flags: int
    group: int
    info_kind: str | None
    attrs: dict[str, Any]
    master: int | None = None
    link: int | None = None
    link_netnsid: int | None = None


def parse_link(payload: bytes | memoryview, notes: list[str] | None = None) -> Link:
    """One RTM_NEWLINK (AF_UNSPEC) -> Link, with attributes in schema spelling
    (kind-specific ones first, then the common ones)."""
    _family, _type, index, flags, _change = IFINFOMSG.unpack_from(payload)
    a = parse_attrs(payload, IFINFOMSG.size, LINK_WANTED)
    name = attr_str(a[IFLA_IFNAME])
    attrs: dict[str, Any] = {}
    info_kind = None
    info = a.get(IFLA_LINKINFO)
    if info is not None:
        li = parse_attrs(info, 0, _INFO_WANTED)
        if IFLA_INFO_KIND in li:
            info_kind = attr_str(li[IFLA_INFO_KIND])
            decoder = KIND_DATA.get(info_kind)
            if decoder is not None:
                raw = li.get(IFLA_INFO_DATA)
                data = parse_attrs(raw, 0, decoder[0]) if raw is not None else {}
                attrs.update(decoder[1](data, notes if notes is not None else [], name))
        if IFLA_INFO_SLAVE_KIND in li:
            slave = SLAVE_DATA.get(attr_str(li[IFLA_INFO_SLAVE_KIND]))
            if slave is not None and IFLA_INFO_SLAVE_DATA in li:
                attrs.update(slave[1](parse_attrs(li[IFLA_INFO_SLAVE_DATA], 0, slave[0])))
    if IFLA_MTU in a:
        attrs["mtu"] = attr_u32(a[IFLA_MTU])
    mac = _mac(a[IFLA_ADDRESS]) if IFLA_ADDRESS in a else None
    if mac is not None:
        attrs["hwaddress"] = mac
    if IFLA_IFALIAS in a:
        alias = attr_str(a[IFLA_IFALIAS])
        if alias:
            attrs["alias"] = alias
    if IFLA_AF_SPEC in a:
        attrs.update(_inet6(a[IFLA_AF_SPEC]))
    read_back = READ_BACK.get(info_kind) if info_kind is not None else None
    if read_back is not None:
        read_back(attrs, notes if notes is not None else [], name)
    return Link(
        index=index, name=name, flags=flags, info_kind=info_kind, attrs=attrs,
        group=attr_u32(a[IFLA_GROUP]) if IFLA_GROUP in a else 0,
        master=attr_u32(a[IFLA_MASTER]) if IFLA_MASTER in a else None,
        link=attr_u32(a[IFLA_LINK]) if IFLA_LINK in a else None,
        link_netnsid=S32.unpack_from(a[IFLA_LINK_NETNSID])[0] if IFLA_LINK_NETNSID in a else None,
    )


def _inet6(af_spec: memoryview) -> dict[str, Any]:
    """addr-gen-mode and disable-ipv6 from IFLA_AF_SPEC / AF_INET6 (absent when
    the kernel runs without IPv6), and the declared per-device sysctls
    (``devconf``) from the AF_INET and AF_INET6 devconf arrays."""
    families = parse_attrs(af_spec, 0, _FAMILIES)
    attrs: dict[str, Any] = {}
    inet = families.get(AF_INET)
    if inet is not None and _DEVCONF4:
        conf4 = parse_attrs(inet, 0, _INET_CONF_WANTED).get(_IFLA_INET_CONF)
        if conf4 is not None:
            _devconf(conf4, _DEVCONF4, attrs)
    inet6 = families.get(AF_INET6)
    if inet6 is None:
        return attrs
    v6 = parse_attrs(inet6, 0, _AF_INET6_WANTED)
    mode = v6.get(IFLA_INET6_ADDR_GEN_MODE)
    if mode is not None and _u8(mode) in _ADDR_GEN_MODES:
        attrs["addr-gen-mode"] = _ADDR_GEN_MODES[_u8(mode)]
    conf = v6.get(IFLA_INET6_CONF)
    if conf is not None and len(conf) >= 4 * (DEVCONF_DISABLE_IPV6 + 1):
        attrs["disable-ipv6"] = S32.unpack_from(conf, 4 * DEVCONF_DISABLE_IPV6)[0] != 0
    if conf is not None and _DEVCONF6:
        _devconf(conf, _DEVCONF6, attrs)
    return attrs


_FAMILIES = frozenset({AF_INET, AF_INET6})
_IFLA_INET_CONF = 1   # the one attribute of AF_INET's nest
_INET_CONF_WANTED = frozenset({_IFLA_INET_CONF})
# (byte offset, attribute, is a boolean) of the declared sysctls in each devconf
# array: IPv4's starts at IPV4_DEVCONF_FORWARDING (1), IPv6's at DEVCONF_FORWARDING (0).
_DEVCONF4 = tuple((4 * (i - 1), a, b) for family, i, a, b in READ_DEVCONF if family == "inet")
_DEVCONF6 = tuple((4 * i, a, b) for family, i, a, b in READ_DEVCONF if family == "inet6")


def _devconf(conf: memoryview, wanted: tuple[tuple[int, str, bool], ...],
             attrs: dict[str, Any]) -> None:
    size = len(conf)
    for offset, attribute, boolean in wanted:
        if size >= offset + 4:
            value = S32.unpack_from(conf, offset)[0]
            if boolean:
                attrs[attribute] = value != 0
            elif value >= 0:   # -1: does not apply (accept_dad on lo and NOARP devices)
                attrs[attribute] = value


# ---------------------------------------------------------------- addresses, routes

def parse_address(payload: bytes | memoryview) -> tuple[int, str, int, int, str | None] | None:
    """One RTM_NEWADDR -> (ifindex, "10.0.0.1/24", family, metric of its
    prefix route: IFA_RT_PRIORITY, which the kernel sends only when not 0,
    IFA_LABEL or None),
    or None for an address the kernel made itself (IFA_PROTO kernel_lo/ra/ll)."""
    family, prefixlen, _flags, _scope, index = IFADDRMSG.unpack_from(payload)
    a = parse_attrs(payload, IFADDRMSG.size, _ADDR_WANTED)
    if IFA_PROTO in a and _u8(a[IFA_PROTO]) in _KERNEL_MADE:
        return None
    # IFA_LOCAL is the interface's own address; IFA_ADDRESS the peer's on a
    # point-to-point link (and the only one IPv6 sends otherwise).
    raw = a.get(IFA_LOCAL, a.get(IFA_ADDRESS))
    if raw is None or len(raw) != _ADDR_LEN.get(family):
        return None
    metric = attr_u32(a[IFA_RT_PRIORITY]) if IFA_RT_PRIORITY in a else 0
    # IPv4's label (`ip addr add ... label eth0:1`; the device's name unless
    # given): kinds/address_label.py. The reader drops the device's own name.
    label = attr_str(a[IFA_LABEL]) if IFA_LABEL in a else None
    return index, f"{_ip(raw)}/{prefixlen}", family, metric, label


@dataclass(frozen=True, slots=True)
class RawRoute:
    family: int
    to: str
    via: str | None
    oif: int | None
    table: int
    metric: int
    protocol: int
    rtm_type: int
    multipath: bool
    source: bool
    onlink: bool = False      # RTNH_F_ONLINK: a revert must add it back with the flag


def parse_route(payload: bytes | memoryview) -> RawRoute:
    family, dst_len, src_len, _tos, table, protocol, _scope, rtm_type, flags = \
        RTMSG.unpack_from(payload)
    a = parse_attrs(payload, RTMSG.size, _ROUTE_WANTED)
    to = f"{_ip(a[RTA_DST])}/{dst_len}" if RTA_DST in a else _DEFAULT_ROUTE.get(family, "")
    return RawRoute(
        family=family, to=to,
        via=_ip(a[RTA_GATEWAY]) if RTA_GATEWAY in a else None,
        oif=attr_u32(a[RTA_OIF]) if RTA_OIF in a else None,
        table=attr_u32(a[RTA_TABLE]) if RTA_TABLE in a else table,
        metric=attr_u32(a[RTA_PRIORITY]) if RTA_PRIORITY in a else 0,
        protocol=protocol, rtm_type=rtm_type,
        multipath=RTA_MULTIPATH in a, source=src_len > 0 or RTA_SRC in a,
        onlink=bool(flags & RTNH_F_ONLINK),
    )


def route_attribute(route: RawRoute, dev: str, vrf_tables: Mapping[int, str]) -> dict[str, Any]:
    """A RawRoute in the `route` attribute's form ({"to", "via", "dev", ...}).

    The main table and the family's default metric are left out, as a config
    that writes neither gets them; a VRF's table is written `vrf NAME`, as
    `gateway` on a VRF member and `route ... vrf NAME` ask for it.
    """
    out: dict[str, Any] = {"to": route.to}
    if route.via is not None:
        out["via"] = route.via
    out["dev"] = dev
    if route.table in vrf_tables:
        out["vrf"] = vrf_tables[route.table]
    elif route.table != RT_TABLE_MAIN:
        out["table"] = route.table
    if route.metric != DEFAULT_METRIC.get(route.family, 0):
        out["metric"] = route.metric
    if route.onlink:
        out["onlink"] = True
    return out


# ---------------------------------------------------------------- bridge port VLANs

@dataclass(slots=True)
class PortVlanInfo:
    """The VLANs of one bridge port (AF_BRIDGE RTM_NEWLINK), as ranges."""

    index: int
    master: int | None
    vids: list[tuple[int, int]] = field(default_factory=list)
    pvid: int | None = None
    untagged: list[tuple[int, int]] = field(default_factory=list)
    # (first vid, last vid, first vni): VLAN-to-VNI ranges (vlan_tunnel ports).
    tunnels: list[tuple[int, int, int]] = field(default_factory=list)


def parse_bridge_vlans(payload: bytes | memoryview) -> PortVlanInfo:
    """One AF_BRIDGE RTM_NEWLINK dumped with RTEXT_FILTER_BRVLAN_COMPRESSED.

    Equivalent to one device of: `bridge -c vlan show` (and `bridge vlan
    tunnelshow`). Ranges come as a RANGE_BEGIN entry and a RANGE_END entry;
    tunnel ranges likewise, by IFLA_BRIDGE_VLAN_TUNNEL_FLAGS.
    """
    _family, _type, index, _flags, _change = IFINFOMSG.unpack_from(payload)
    a = parse_attrs(payload, IFINFOMSG.size, {IFLA_MASTER, IFLA_AF_SPEC})
    info = PortVlanInfo(index, attr_u32(a[IFLA_MASTER]) if IFLA_MASTER in a else None)
    spec = a.get(IFLA_AF_SPEC)
    if spec is None:
        return info
    begin: int | None = None
    tunnel_begin: tuple[int, int] | None = None
    for attr_type, value in iter_attrs(spec):
        if attr_type == IFLA_BRIDGE_VLAN_INFO:
            flags, vid = BRIDGE_VLAN_INFO.unpack_from(value)
            if flags & BRIDGE_VLAN_INFO_RANGE_BEGIN:
                begin = vid
                continue
            first = begin if (flags & BRIDGE_VLAN_INFO_RANGE_END and begin is not None) else vid
            begin = None
            info.vids.append((first, vid))
            if flags & BRIDGE_VLAN_INFO_PVID:
                info.pvid = vid
            if flags & BRIDGE_VLAN_INFO_UNTAGGED:
                info.untagged.append((first, vid))
        elif attr_type == IFLA_BRIDGE_VLAN_TUNNEL_INFO:
            t = parse_attrs(value, 0, {IFLA_BRIDGE_VLAN_TUNNEL_ID, IFLA_BRIDGE_VLAN_TUNNEL_VID,
                                       IFLA_BRIDGE_VLAN_TUNNEL_FLAGS})
            vid, vni = _u16(t[IFLA_BRIDGE_VLAN_TUNNEL_VID]), attr_u32(t[IFLA_BRIDGE_VLAN_TUNNEL_ID])
            raw = t.get(IFLA_BRIDGE_VLAN_TUNNEL_FLAGS)
            flags = _u16(raw) if raw is not None else 0
            if flags & BRIDGE_VLAN_INFO_RANGE_BEGIN:
                tunnel_begin = (vid, vni)
                continue
            if flags & BRIDGE_VLAN_INFO_RANGE_END and tunnel_begin is not None:
                info.tunnels.append((tunnel_begin[0], vid, tunnel_begin[1]))
            else:
                info.tunnels.append((vid, vid, vni))
            tunnel_begin = None
    return info


def getlink_bridge_dump() -> bytes:
    """RTM_GETLINK AF_BRIDGE dump payload asking for port VLANs as ranges.

    Equivalent to: `bridge -c vlan show`. The kernel accepts no other filter
    in it (valid_bridge_getlink_req takes IFLA_EXT_MASK only).
    """
    return ifinfomsg(family=AF_BRIDGE) + rtattr_u32(IFLA_EXT_MASK, RTEXT_FILTER_BRVLAN_COMPRESSED)


def port_vlan_attributes(info: PortVlanInfo, name: str, notes: list[str]) -> dict[str, Any]:
    """bridge-vids / bridge-pvid / bridge-vlan-vni-map of one port, as a config
    writes them (the pvid is the untagged VLAN; kinds/bridge_port.py)."""
    attrs: dict[str, Any] = {}
    vids = _merge([r for r in info.vids if info.pvid is None or not r[0] == r[1] == info.pvid])
    if info.pvid is not None:
        vids = _subtract_one(vids, info.pvid)
        attrs["bridge-pvid"] = info.pvid
    if vids:
        attrs["bridge-vids"] = [str(f) if f == l else f"{f}-{l}" for f, l in vids]
    odd = _subtract_one(_merge(info.untagged), info.pvid) if info.pvid else _merge(info.untagged)
    if odd:
        notes.append(f"{name}: VLANs {_texts(odd)} are sent untagged but are not the pvid; "
                     f"netcfg has no spelling for that")
    if info.tunnels:
        attrs["bridge-vlan-vni-map"] = [
            (f"{v1}={n}" if v1 == v2 else f"{v1}-{v2}={n}-{n + v2 - v1}")
            for v1, v2, n in sorted(info.tunnels)]
    return attrs


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(last, out[-1][1]))
        else:
            out.append((first, last))
    return out


def _subtract_one(spans: list[tuple[int, int]], vid: int | None) -> list[tuple[int, int]]:
    out = []
    for first, last in spans:
        if vid is None or not first <= vid <= last:
            out.append((first, last))
            continue
        if first < vid:
            out.append((first, vid - 1))
        if vid < last:
            out.append((vid + 1, last))
    return out


def _texts(spans: list[tuple[int, int]]) -> str:
    return " ".join(str(f) if f == l else f"{f}-{l}" for f, l in spans)
