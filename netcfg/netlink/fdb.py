"""A vxlan's remote endpoints: the all-zeros forwarding entries of head-end
replication, as rtnetlink neighbour messages (AF_BRIDGE, NTF_SELF).

    iface vxlan_myvnet
        vxlan-id 100
        vxlan-remoteip 192.168.0.2     # one entry each: BUM traffic goes to
        vxlan-remoteip 192.168.0.3     # every remote (head-end replication)

ifupdown2 (addons/vxlan.py) writes each remote as `bridge fdb append
00:00:00:00:00:00 dev VX self dst IP` and reads them back with `bridge fdb
show brport VX`; this module is the same, over netlink: RTM_NEWNEIGH with
NLM_F_CREATE|NLM_F_APPEND (a second remote is one more destination of the
one all-zeros entry), RTM_DELNEIGH naming the destination (only that one
goes), and a dump filtered by the kernel to one device.

Pure: bytes in, values out. Constants keep the kernel's spellings
(linux/neighbour.h, linux/rtnetlink.h).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from typing import NamedTuple

from netcfg.netlink.nlmsg import AF_BRIDGE, NLM_F_APPEND, NLM_F_CREATE, parse_attrs, rtattr

# linux/rtnetlink.h
RTM_NEWNEIGH, RTM_DELNEIGH, RTM_GETNEIGH = 28, 29, 30
RTNLGRP_NEIGH = 3
# linux/neighbour.h
NDA_DST, NDA_LLADDR, NDA_PORT, NDA_VNI, NDA_IFINDEX, NDA_SRC_VNI = 1, 2, 6, 7, 8, 11
NTF_SELF, NTF_MASTER = 0x02, 0x04
NUD_NOARP, NUD_PERMANENT = 0x40, 0x80
# struct ndmsg: family, pad, pad, ifindex, state, flags, type
NDMSG = struct.Struct("=BxxxiHBB")   # 12 bytes

ALL_ZEROS = b"\0" * 6
# As `bridge fdb append` sends it (iproute2 bridge/fdb.c: NOARP, then
# "assume permanent"), so an entry reads back the same whoever made it.
REMOTE_STATE = NUD_NOARP | NUD_PERMANENT
APPEND = NLM_F_CREATE | NLM_F_APPEND
# What a dump answer must carry to be a plain remote: anything more (another
# UDP port, VNI or underlay device, a per-VNI entry of a metadata device) is
# a finer entry netcfg has no spelling for.
_WANTED = frozenset({NDA_DST, NDA_LLADDR, NDA_PORT, NDA_VNI, NDA_IFINDEX, NDA_SRC_VNI})
_FINER = frozenset({NDA_PORT, NDA_VNI, NDA_IFINDEX, NDA_SRC_VNI})
_FAMILY = {4: socket.AF_INET, 16: socket.AF_INET6}


def ndmsg(ifindex: int, state: int = 0, flags: int = 0, family: int = AF_BRIDGE) -> bytes:
    return NDMSG.pack(family, ifindex, state, flags, 0)


def remote_entry(ifindex: int, remote: str) -> bytes:
    """The payload naming one remote of a vxlan device: RTM_NEWNEIGH's (with
    APPEND flags) and RTM_DELNEIGH's.

    Equivalent to: `bridge fdb append|del 00:00:00:00:00:00 dev VX self dst REMOTE`.
    """
    return (ndmsg(ifindex, REMOTE_STATE, NTF_SELF) + rtattr(NDA_LLADDR, ALL_ZEROS)
            + rtattr(NDA_DST, ipaddress.ip_address(remote).packed))


def fdb_dump(ifindex: int) -> bytes:
    """RTM_GETNEIGH dump payload: the forwarding entries of one device (its
    own, and its bridge's for it when it is a port), filtered by the kernel
    (NETLINK_GET_STRICT_CHK: ndm_ifindex is the port filter).

    Equivalent to: `bridge fdb show brport VX`.
    """
    return ndmsg(ifindex)


class Remote(NamedTuple):
    """One all-zeros NTF_SELF entry of a dump: the device and the destination;
    ``finer`` when it carries a port, VNI or device of its own."""

    ifindex: int
    dst: str
    finer: bool = False


def parse_remote(payload: memoryview | bytes) -> Remote | None:
    """A vxlan's remote from one RTM_NEWNEIGH, or None for any other entry
    (a learnt or static MAC, the bridge's entries, ARP and ND neighbours)."""
    family, ifindex, _state, flags, _type = NDMSG.unpack_from(payload)
    if family != AF_BRIDGE or not flags & NTF_SELF:
        return None
    a = parse_attrs(payload, NDMSG.size, _WANTED)
    mac, dst = a.get(NDA_LLADDR), a.get(NDA_DST)
    if mac is None or bytes(mac) != ALL_ZEROS or dst is None or len(dst) not in (4, 16):
        return None
    # inet_ntop, not ipaddress: a third of the parse (2.9 of 9.6 us an entry).
    return Remote(ifindex, socket.inet_ntop(_FAMILY[len(dst)], bytes(dst)),
                  not _FINER.isdisjoint(a))


def is_remote_event(payload: memoryview | bytes) -> bool:
    """Whether a neighbour notification is about a vxlan remote (what the
    daemon listens for; every ARP, ND and learnt-MAC change is not)."""
    if len(payload) < NDMSG.size or payload[0] != AF_BRIDGE:
        return False
    return parse_remote(payload) is not None
