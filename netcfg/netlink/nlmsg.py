"""rtnetlink wire format: constants, request encoding and reply decoding.

Pure functions over bytes; nothing here opens a socket (that is nl.py).
Requests are built by hand with precompiled ``struct``s and replies are
parsed lazily, only for the attributes a caller asks for: pyroute2's message
classes cost ~0.8 ms per request and ~1 ms per link parsed (DESIGN.md,
"Kernel edge"), which is the whole budget of a kernel operation.

Constants keep the kernel's spellings (linux/netlink.h, linux/rtnetlink.h,
linux/if_link.h, linux/if_addr.h, linux/veth.h) so they can be grepped
against the headers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

# --- linux/netlink.h ------------------------------------------------------
NETLINK_ROUTE = 0
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
NETLINK_LISTEN_ALL_NSID = 8
NETLINK_CAP_ACK = 10          # errors echo only the request's header, not its payload
NETLINK_EXT_ACK = 11          # errors carry NLMSGERR_ATTR_* (the kernel's message)
NETLINK_GET_STRICT_CHK = 12   # dump requests are validated, so filters in them apply

NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE, NLMSG_OVERRUN = 1, 2, 3, 4
NLMSG_MIN_TYPE = 0x10

NLM_F_REQUEST = 0x01
NLM_F_MULTI = 0x02
NLM_F_ACK = 0x04
NLM_F_ECHO = 0x08
NLM_F_DUMP_INTR = 0x10        # the dump saw the table change under it: retry
NLM_F_DUMP_FILTERED = 0x20    # the kernel applied the dump request's filter
# GET requests
NLM_F_ROOT, NLM_F_MATCH, NLM_F_ATOMIC = 0x100, 0x200, 0x400
NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH
# NEW requests
NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE, NLM_F_APPEND = 0x100, 0x200, 0x400, 0x800
# flags on NLMSG_ERROR
NLM_F_CAPPED = 0x100          # the echoed request was cut to its header
NLM_F_ACK_TLVS = 0x200        # NLMSGERR_ATTR_* follow the echoed request

NLMSGERR_ATTR_MSG = 1
NLMSGERR_ATTR_OFFS = 2
NLMSGERR_ATTR_COOKIE = 3
NLMSGERR_ATTR_POLICY = 4
NLMSGERR_ATTR_MISS_TYPE = 5
NLMSGERR_ATTR_MISS_NEST = 6

NLA_F_NESTED = 0x8000
NLA_F_NET_BYTEORDER = 0x4000
NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xFFFF

# --- linux/rtnetlink.h ----------------------------------------------------
RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK, RTM_SETLINK = 16, 17, 18, 19
RTM_NEWADDR, RTM_DELADDR, RTM_GETADDR = 20, 21, 22
RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26

RTEXT_FILTER_VF = 1 << 0
RTEXT_FILTER_BRVLAN = 1 << 1
RTEXT_FILTER_BRVLAN_COMPRESSED = 1 << 2
RTEXT_FILTER_SKIP_STATS = 1 << 3

RTA_UNSPEC, RTA_DST, RTA_SRC, RTA_IIF, RTA_OIF, RTA_GATEWAY = 0, 1, 2, 3, 4, 5
RTA_PRIORITY, RTA_PREFSRC, RTA_METRICS, RTA_MULTIPATH = 6, 7, 8, 9
RTA_TABLE = 15

RT_TABLE_UNSPEC, RT_TABLE_MAIN, RT_TABLE_LOCAL = 0, 254, 255
RTPROT_UNSPEC, RTPROT_KERNEL, RTPROT_BOOT, RTPROT_STATIC = 0, 2, 3, 4
RT_SCOPE_UNIVERSE, RT_SCOPE_LINK, RT_SCOPE_HOST, RT_SCOPE_NOWHERE = 0, 253, 254, 255
RTN_UNSPEC, RTN_UNICAST, RTN_LOCAL, RTN_BLACKHOLE = 0, 1, 2, 6
RTNH_F_ONLINK = 4   # rtm_flags: the gateway is on the link, whatever the prefixes say

# --- linux/if_link.h ------------------------------------------------------
IFLA_ADDRESS, IFLA_BROADCAST, IFLA_IFNAME, IFLA_MTU, IFLA_LINK = 1, 2, 3, 4, 5
IFLA_MASTER = 10
IFLA_OPERSTATE = 16
IFLA_LINKINFO = 18
IFLA_NET_NS_PID = 19
IFLA_STATS64 = 23
IFLA_AF_SPEC = 26
IFLA_GROUP = 27
IFLA_NET_NS_FD = 28
IFLA_EXT_MASK = 29
IFLA_LINK_NETNSID = 37
IFLA_TARGET_NETNSID = 46
IFLA_STATS = 7

IFLA_INFO_KIND, IFLA_INFO_DATA = 1, 2
IFLA_INFO_SLAVE_KIND, IFLA_INFO_SLAVE_DATA = 4, 5

VETH_INFO_PEER = 1            # linux/veth.h: an ifinfomsg followed by IFLA_*

# --- linux/if.h, linux/if_addr.h ------------------------------------------
IFF_UP = 0x1
IFA_ADDRESS, IFA_LOCAL, IFA_LABEL, IFA_BROADCAST = 1, 2, 3, 4
IFA_FLAGS = 8
IFA_RT_PRIORITY = 9           # u32: metric of the address's prefix route (4.18+)

AF_UNSPEC, AF_INET, AF_INET6 = 0, 2, 10

# --- structs --------------------------------------------------------------
NLMSGHDR = struct.Struct("=IHHII")      # len, type, flags, seq, pid
RTATTR = struct.Struct("=HH")           # len, type
IFINFOMSG = struct.Struct("=BxHiII")    # family, type, index, flags, change
IFADDRMSG = struct.Struct("=BBBBI")     # family, prefixlen, flags, scope, index
RTMSG = struct.Struct("=BBBBBBBBI")     # family, dst_len, src_len, tos, table,
                                        # protocol, scope, type, flags
NLMSGERR = struct.Struct("=i")          # error (negative errno), then the request's header
U32 = struct.Struct("=I")
S32 = struct.Struct("=i")    # NETNSA_NSID, IFLA_LINK_NETNSID: -1 means none

NLMSG_HDRLEN = NLMSGHDR.size


def _align(n: int) -> int:
    return (n + 3) & ~3


_PAD = (b"", b"\0\0\0", b"\0\0", b"\0")


# --- encoding -------------------------------------------------------------
def nlmsg(msg_type: int, flags: int, seq: int, payload: bytes, pid: int = 0) -> bytes:
    """One netlink message: nlmsghdr + payload, padded to 4 bytes."""
    n = NLMSG_HDRLEN + len(payload)
    return NLMSGHDR.pack(n, msg_type, flags, seq, pid) + payload + _PAD[n & 3]


def rtattr(attr_type: int, data: bytes) -> bytes:
    """One attribute (struct rtattr / nlattr), padded to 4 bytes."""
    n = 4 + len(data)
    return RTATTR.pack(n, attr_type) + data + _PAD[n & 3]


def rtattr_u32(attr_type: int, value: int) -> bytes:
    return RTATTR.pack(8, attr_type) + U32.pack(value)


def rtattr_str(attr_type: int, value: str) -> bytes:
    """A NUL-terminated string attribute, as iproute2 sends IFLA_IFNAME."""
    return rtattr(attr_type, value.encode() + b"\0")


def nested(attr_type: int, attrs: Iterable[bytes]) -> bytes:
    """An attribute holding attributes (IFLA_LINKINFO, IFLA_INFO_DATA).

    No NLA_F_NESTED bit: iproute2 sends none for rtnetlink and the kernel's
    link parsers do not ask for it.
    """
    return rtattr(attr_type, b"".join(attrs))


def ifinfomsg(index: int = 0, flags: int = 0, change: int = 0, family: int = AF_UNSPEC,
              dev_type: int = 0) -> bytes:
    return IFINFOMSG.pack(family, dev_type, index, flags, change)


def ifaddrmsg(family: int, prefixlen: int = 0, index: int = 0, flags: int = 0,
              scope: int = 0) -> bytes:
    return IFADDRMSG.pack(family, prefixlen, flags, scope, index)


def rtmsg(family: int, dst_len: int = 0, table: int = RT_TABLE_UNSPEC,
          protocol: int = RTPROT_UNSPEC, scope: int = RT_SCOPE_UNIVERSE,
          rtm_type: int = RTN_UNSPEC, src_len: int = 0, tos: int = 0, flags: int = 0) -> bytes:
    # rtm_table is a u8: tables above 255 go in RTA_TABLE (the kernel reads both).
    return RTMSG.pack(family, dst_len, src_len, tos, table if table < 256 else RT_TABLE_UNSPEC,
                      protocol, scope, rtm_type, flags)


def linkinfo(kind: str, data: Iterable[bytes] = ()) -> bytes:
    """IFLA_LINKINFO { IFLA_INFO_KIND kind, IFLA_INFO_DATA {data} }."""
    attrs = [rtattr_str(IFLA_INFO_KIND, kind)]
    data = list(data)
    if data:
        attrs.append(nested(IFLA_INFO_DATA, data))
    return nested(IFLA_LINKINFO, attrs)


# --- dump filters: payloads the kernel filters on (NETLINK_GET_STRICT_CHK) --
def getlink_dump(master: int | None = None, kind: str | None = None,
                 ext_mask: int = RTEXT_FILTER_SKIP_STATS) -> bytes:
    """RTM_GETLINK dump payload filtered in the kernel by master and/or kind.

    Equivalent to: `ip link show master br0`, `ip link show type veth`.
    The kernel ignores a kind whose module is not loaded (it dumps every
    link then); the reply flags say whether it filtered.
    """
    attrs = [ifinfomsg()]
    if ext_mask:
        attrs.append(rtattr_u32(IFLA_EXT_MASK, ext_mask))
    if master is not None:
        attrs.append(rtattr_u32(IFLA_MASTER, master))
    if kind is not None:
        attrs.append(nested(IFLA_LINKINFO, [rtattr_str(IFLA_INFO_KIND, kind)]))
    return b"".join(attrs)


def getaddr_dump(family: int = AF_UNSPEC, index: int = 0) -> bytes:
    """RTM_GETADDR dump payload, filtered by interface index when given.

    Equivalent to: `ip address show dev eth0`.
    """
    return ifaddrmsg(family, index=index)


def getroute_dump(family: int = AF_INET, table: int = RT_TABLE_UNSPEC, oif: int = 0,
                  protocol: int = RTPROT_UNSPEC) -> bytes:
    """RTM_GETROUTE dump payload filtered by table, output device and protocol.

    Equivalent to: `ip route show table 100 dev eth0 proto static`.
    """
    attrs = [rtmsg(family, table=table, protocol=protocol)]
    if table:
        attrs.append(rtattr_u32(RTA_TABLE, table))
    if oif:
        attrs.append(rtattr_u32(RTA_OIF, oif))
    return b"".join(attrs)


def dellink_group(group: int) -> bytes:
    """RTM_DELLINK payload deleting every device of a group in one request.

    Equivalent to: `ip link delete group 7`. ~0.6 s for 2000 devices where
    deleting them one by one takes 35-41 s (DESIGN.md).
    """
    return ifinfomsg() + rtattr_u32(IFLA_GROUP, group)


# --- decoding -------------------------------------------------------------
def iter_messages(buffer: bytes | memoryview) -> Iterator[tuple[int, int, int, memoryview]]:
    """(type, flags, seq, payload) for each message in one datagram.

    The payloads are views into ``buffer`` (no copies).
    """
    view = memoryview(buffer)
    end = len(view)
    offset = 0
    unpack = NLMSGHDR.unpack_from
    while offset + NLMSG_HDRLEN <= end:
        length, msg_type, flags, seq, _pid = unpack(view, offset)
        if length < NLMSG_HDRLEN or offset + length > end:
            raise ValueError(f"truncated netlink message at offset {offset}")
        yield msg_type, flags, seq, view[offset + NLMSG_HDRLEN:offset + length]
        offset += (length + 3) & ~3


def parse_attrs(payload: bytes | memoryview, offset: int = 0,
                wanted: set[int] | frozenset[int] | None = None) -> dict[int, memoryview]:
    """The attributes of ``payload`` after ``offset`` (the fixed header), as views.

    Only types in ``wanted`` are kept (all when None); the NLA_F_* bits are
    masked off the type. A nested attribute is parsed on demand by calling
    this again on its value with offset 0.
    """
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    end = len(view)
    unpack = RTATTR.unpack_from
    out: dict[int, memoryview] = {}
    while offset + 4 <= end:
        length, attr_type = unpack(view, offset)
        if length < 4:
            break
        attr_type &= NLA_TYPE_MASK
        if wanted is None or attr_type in wanted:
            out[attr_type] = view[offset + 4:offset + length]
        offset += (length + 3) & ~3
    return out


def attr_u32(value: memoryview | bytes) -> int:
    return U32.unpack_from(value)[0]


def attr_str(value: memoryview | bytes) -> str:
    """A NUL-terminated string attribute (IFLA_IFNAME, IFLA_INFO_KIND)."""
    raw = bytes(value)
    nul = raw.find(b"\0")
    return (raw if nul < 0 else raw[:nul]).decode(errors="replace")


def link_kind(payload: memoryview | bytes) -> str | None:
    """IFLA_LINKINFO / IFLA_INFO_KIND of an RTM_NEWLINK payload, if any."""
    info = parse_attrs(payload, IFINFOMSG.size, {IFLA_LINKINFO}).get(IFLA_LINKINFO)
    if info is None:
        return None
    kind = parse_attrs(info, 0, {IFLA_INFO_KIND}).get(IFLA_INFO_KIND)
    return None if kind is None else attr_str(kind)


def parse_error(payload: memoryview | bytes, flags: int) -> tuple[int, int, str | None, int | None]:
    """(errno, failed request's type, kernel message, bad attribute offset) of NLMSG_ERROR.

    ``errno`` is 0 for an ACK. The echoed request is its header only when
    NETLINK_CAP_ACK is on (NLM_F_CAPPED); the extended-ack attributes follow
    it when NLM_F_ACK_TLVS is set.
    """
    (error,) = NLMSGERR.unpack_from(payload)
    orig_len, orig_type = NLMSGHDR.unpack_from(payload, 4)[:2]
    if not flags & NLM_F_ACK_TLVS:
        return -error, orig_type, None, None
    tlv_offset = 4 + (NLMSG_HDRLEN if flags & NLM_F_CAPPED else _align(orig_len))
    tlvs = parse_attrs(payload, tlv_offset, {NLMSGERR_ATTR_MSG, NLMSGERR_ATTR_OFFS})
    msg = attr_str(tlvs[NLMSGERR_ATTR_MSG]) if NLMSGERR_ATTR_MSG in tlvs else None
    offs = attr_u32(tlvs[NLMSGERR_ATTR_OFFS]) if NLMSGERR_ATTR_OFFS in tlvs else None
    return -error, orig_type, msg, offs


def done_error(payload: memoryview | bytes) -> int:
    """The errno an NLMSG_DONE carries (0 when the dump ended well)."""
    return -NLMSGERR.unpack_from(payload)[0] if len(payload) >= 4 else 0


MESSAGE_NAMES = {
    RTM_NEWLINK: "RTM_NEWLINK", RTM_DELLINK: "RTM_DELLINK", RTM_GETLINK: "RTM_GETLINK",
    RTM_SETLINK: "RTM_SETLINK", RTM_NEWADDR: "RTM_NEWADDR", RTM_DELADDR: "RTM_DELADDR",
    RTM_GETADDR: "RTM_GETADDR", RTM_NEWROUTE: "RTM_NEWROUTE", RTM_DELROUTE: "RTM_DELROUTE",
    RTM_GETROUTE: "RTM_GETROUTE", NLMSG_NOOP: "NLMSG_NOOP",
}


# --- appended for netcfg/netlink/encode.py (kernel spellings) -----------------
# linux/socket.h
AF_BRIDGE = 7
# linux/rtnetlink.h: VNI filtering of `external vnifilter` vxlan devices
RTM_NEWTUNNEL, RTM_DELTUNNEL, RTM_GETTUNNEL = 120, 121, 122
# linux/if_link.h
IFLA_PROTINFO = 12            # AF_BRIDGE: bridge port options; must carry NLA_F_NESTED
IFLA_IFALIAS = 20
IFLA_INET6_ADDR_GEN_MODE = 8  # inside IFLA_AF_SPEC / AF_INET6
IN6_ADDR_GEN_MODE_EUI64, IN6_ADDR_GEN_MODE_NONE = 0, 1
IN6_ADDR_GEN_MODE_STABLE_PRIVACY, IN6_ADDR_GEN_MODE_RANDOM = 2, 3
IFLA_BR_AGEING_TIME, IFLA_BR_STP_STATE, IFLA_BR_VLAN_FILTERING = 4, 5, 7
IFLA_BR_MCAST_SNOOPING = 23
IFLA_BR_VLAN_DEFAULT_PVID = 39
IFLA_BR_MULTI_BOOLOPT = 46
IFLA_BRPORT_LEARNING = 8
IFLA_BRPORT_VLAN_TUNNEL = 29  # u8: the port maps VLANs to tunnel ids (VNIs)
IFLA_VLAN_ID, IFLA_VLAN_PROTOCOL = 1, 5
IFLA_MACVLAN_MODE = 1
MACVLAN_MODE_PRIVATE, MACVLAN_MODE_VEPA, MACVLAN_MODE_BRIDGE = 1, 2, 4
MACVLAN_MODE_PASSTHRU, MACVLAN_MODE_SOURCE = 8, 16
IFLA_VRF_TABLE = 1
IFLA_VXLAN_ID, IFLA_VXLAN_GROUP, IFLA_VXLAN_LOCAL, IFLA_VXLAN_LEARNING = 1, 2, 4, 7
IFLA_VXLAN_PORT, IFLA_VXLAN_GROUP6, IFLA_VXLAN_LOCAL6 = 15, 16, 17
IFLA_VXLAN_COLLECT_METADATA = 25
IFLA_VXLAN_VNIFILTER = 30
VXLAN_VNIFILTER_ENTRY = 1     # nested (NLA_F_NESTED required) in RTM_*TUNNEL
VXLAN_VNIFILTER_ENTRY_START, VXLAN_VNIFILTER_ENTRY_END = 1, 2
IFLA_BOND_MODE, IFLA_BOND_MIIMON, IFLA_BOND_XMIT_HASH_POLICY = 1, 3, 14
IFLA_BOND_MIN_LINKS, IFLA_BOND_AD_LACP_RATE = 18, 21
# linux/if_bonding.h, bond_3ad.h
BOND_MODE_ROUNDROBIN, BOND_MODE_ACTIVEBACKUP, BOND_MODE_XOR, BOND_MODE_BROADCAST = 0, 1, 2, 3
BOND_MODE_8023AD, BOND_MODE_TLB, BOND_MODE_ALB = 4, 5, 6
BOND_XMIT_POLICY_LAYER2, BOND_XMIT_POLICY_LAYER34, BOND_XMIT_POLICY_LAYER23 = 0, 1, 2
BOND_XMIT_POLICY_ENCAP23, BOND_XMIT_POLICY_ENCAP34, BOND_XMIT_POLICY_VLAN_SRCMAC = 3, 4, 5
AD_LACP_SLOW, AD_LACP_FAST = 0, 1
# linux/if_bridge.h
IFLA_BRIDGE_FLAGS, IFLA_BRIDGE_VLAN_INFO = 0, 2
BRIDGE_FLAGS_SELF = 0x2
BRIDGE_VLAN_INFO_MASTER, BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_UNTAGGED = 0x1, 0x2, 0x4
BRIDGE_VLAN_INFO_RANGE_BEGIN, BRIDGE_VLAN_INFO_RANGE_END = 0x8, 0x10
BR_BOOLOPT_NO_LL_LEARN, BR_BOOLOPT_MCAST_VLAN_SNOOPING = 0, 1
# linux/if_ether.h
ETH_P_8021Q, ETH_P_8021AD = 0x8100, 0x88A8

BRIDGE_VLAN_INFO = struct.Struct("=HH")       # struct bridge_vlan_info: flags, vid
BR_BOOLOPT_MULTI = struct.Struct("=II")       # struct br_boolopt_multi: optval, optmask
TUNNEL_MSG = struct.Struct("=BBHI")           # struct tunnel_msg: family, flags, reserved, ifindex

MESSAGE_NAMES.update({RTM_NEWTUNNEL: "RTM_NEWTUNNEL", RTM_DELTUNNEL: "RTM_DELTUNNEL",
                      RTM_GETTUNNEL: "RTM_GETTUNNEL"})

# --- appended for netcfg/kernel/read.py (kernel spellings) --------------------
# linux/if.h
IFF_LOOPBACK = 0x8
# linux/if_addr.h
IFA_PROTO = 11                # u8: who made the address (6.1+)
IFAPROT_UNSPEC, IFAPROT_KERNEL_LO, IFAPROT_KERNEL_RA, IFAPROT_KERNEL_LL = 0, 1, 2, 3
# linux/if_link.h (inside IFLA_AF_SPEC / AF_INET6), linux/ipv6.h
IFLA_INET6_CONF = 2           # s32 per DEVCONF_*
DEVCONF_DISABLE_IPV6 = 26
# linux/if_bridge.h
IFLA_BRIDGE_VLAN_TUNNEL_INFO = 3
IFLA_BRIDGE_VLAN_TUNNEL_ID, IFLA_BRIDGE_VLAN_TUNNEL_VID, IFLA_BRIDGE_VLAN_TUNNEL_FLAGS = 1, 2, 3
# linux/rtnetlink.h, linux/net_namespace.h
RTM_NEWNSID, RTM_DELNSID, RTM_GETNSID = 88, 89, 90
RTM_NEWVLAN, RTM_DELVLAN = 112, 113    # bridge VLAN notifications (RTNLGRP_BRVLAN)
NETNSA_NSID, NETNSA_FD = 1, 3


# A request of a batch is a value the pure encoder makes and netcfg.kernel.nl sends.
@dataclass(frozen=True, slots=True)
class Request:
    """One request of a batch. ``flags`` leave out NLM_F_REQUEST/NLM_F_ACK (the socket adds them)."""

    type: int
    flags: int
    payload: bytes
    tag: Any = None
