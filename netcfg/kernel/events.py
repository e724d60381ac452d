"""One event socket that hears every managed namespace (netcfgd's watch).

A raw NETLINK_ROUTE socket subscribed to the groups the model is made of
(links, IPv4/IPv6 addresses and routes, bridge VLANs, tunnel VNIs, nsids;
not neighbours or the FDB, whose floods say nothing about config) with
NETLINK_LISTEN_ALL_NSID on: the kernel then also delivers the notifications
of every namespace that has an nsid in this socket's namespace, each with
that nsid as a control message (SOL_NETLINK / NETLINK_LISTEN_ALL_NSID).
Notifications of the socket's own namespace carry no such message.
pyroute2 drops ancillary data, so this is recvmsg on a plain socket.

Each event is reduced to what marks a key dirty (nsid, object): the reader
never interprets state (STYLE.md 6, level-triggered). Losing events is
possible and is reported, not hidden: ENOBUFS from recvmsg raises
EventsLost, and the caller resyncs. The receive buffer is forced to 128 MiB
(DESIGN.md: one RTM_NEWLINK costs ~2.3 KB; 500 bridge ports coming up emit
~16k messages).
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from typing import Iterator

from netcfg.kernel.nl import SO_RCVBUFFORCE, OwnsSocket, force_buffer
from netcfg.model.errors import NetcfgError
from netcfg.netlink.nlmsg import (IFA_PROTO, IFADDRMSG, IFINFOMSG, IFLA_IFNAME,
                                  NETLINK_ADD_MEMBERSHIP, NETLINK_LISTEN_ALL_NSID, NETLINK_ROUTE,
                                  NETNSA_NSID, NLM_F_REPLACE, NLMSG_DONE, NLMSG_ERROR, NLMSG_NOOP,
                                  NLMSG_OVERRUN,
                                  RTA_OIF, RTM_DELADDR, RTM_DELLINK, RTM_DELNSID, RTM_DELROUTE,
                                  RTM_DELTUNNEL, RTM_DELVLAN, RTM_NEWADDR, RTM_NEWLINK, RTM_NEWNSID,
                                  RTM_NEWROUTE, RTM_NEWTUNNEL, RTM_NEWVLAN, RTMSG, S32, SOL_NETLINK,
                                  TUNNEL_MSG, U32, attr_str, iter_messages, parse_attrs)

from netcfg.netlink.fdb import (NDMSG, RTM_DELNEIGH, RTM_NEWNEIGH, RTNLGRP_NEIGH,
                                is_remote_event)

# linux/rtnetlink.h, enum rtnetlink_groups (kernel spellings)
RTNLGRP_LINK = 1
RTNLGRP_IPV4_IFADDR = 5
RTNLGRP_IPV4_ROUTE = 7
RTNLGRP_IPV6_IFADDR = 9
RTNLGRP_IPV6_ROUTE = 11
RTNLGRP_NSID = 28
RTNLGRP_BRVLAN = 33
RTNLGRP_TUNNEL = 35

# What the model is made of: everything but neighbours, FDB and stats.
MODEL_GROUPS = (RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE,
                RTNLGRP_IPV6_ROUTE, RTNLGRP_NSID, RTNLGRP_BRVLAN, RTNLGRP_TUNNEL,
                # A vxlan's remotes; every ARP, ND and learnt-MAC change comes too and
                # is dropped by _decode at its first byte or its flags.
                RTNLGRP_NEIGH)
EVENT_RCVBUF = 128 << 20       # 128 MiB (the kernel books it doubled)
# The largest notification is one RTM_NEWLINK (a few KiB); one skb each.
RECV_SIZE = 64 * 1024
_CMSG_SPACE = socket.CMSG_SPACE(4)

LINK, ADDRESS, ROUTE, VLAN, TUNNEL, NSID = "link", "address", "route", "vlan", "tunnel", "nsid"
NEIGH = "neigh"   # a vxlan's remote (forwarding entry); no other neighbour
_KIND_OF = {RTM_NEWLINK: LINK, RTM_DELLINK: LINK, RTM_NEWADDR: ADDRESS, RTM_DELADDR: ADDRESS,
            RTM_NEWROUTE: ROUTE, RTM_DELROUTE: ROUTE, RTM_NEWVLAN: VLAN, RTM_DELVLAN: VLAN,
            RTM_NEWTUNNEL: TUNNEL, RTM_DELTUNNEL: TUNNEL,
            RTM_NEWNSID: NSID, RTM_DELNSID: NSID,
            RTM_NEWNEIGH: NEIGH, RTM_DELNEIGH: NEIGH}


class EventsLost(Exception):
    """The kernel dropped notifications (ENOBUFS: the receive buffer was full).

    What changed meanwhile is unknown: re-read everything that is managed.
    """


@dataclass(frozen=True, slots=True)
class Event:
    """One notification, reduced to the key it dirties.

    ``nsid`` is the namespace's id in the socket's namespace (None: the
    socket's own namespace). ``kind`` is LINK, ADDRESS, ROUTE, VLAN, TUNNEL
    or NSID; ``ifindex`` the device it is about (0 when none); ``name`` the
    device's name for links; ``deleted`` for RTM_DEL*. For NSID events,
    ``target_nsid`` is the id that was assigned or released. ``origin`` is
    who made an address (IFA_PROTO: 1-3 the kernel) or a route
    (rtm_protocol: 2 the kernel, 9 router advertisements, 110 netcfg).
    ``replace``: a route that took the place of another (NLM_F_REPLACE), whose
    protocol says nothing of the route it replaced (issue 24, M14).
    """

    nsid: int | None
    kind: str
    msg_type: int
    ifindex: int = 0
    name: str = ""
    deleted: bool = False
    target_nsid: int | None = None
    origin: int = 0
    replace: bool = False


class EventSocket(OwnsSocket):
    """Equivalent to: `ip monitor all-nsid link address route nsid`.

    Subscribe first (the constructor), then list (the caller's first full
    read): a change between the two is heard rather than missed.
    """

    def __init__(self, groups: tuple[int, ...] = MODEL_GROUPS, rcvbuf: int = EVENT_RCVBUF):
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                             NETLINK_ROUTE)
        try:
            sock.bind((0, 0))
            # Without CAP_NET_ADMIN: what rmem_max allows.
            self.rcvbuf = force_buffer(sock, SO_RCVBUFFORCE, socket.SO_RCVBUF, rcvbuf)
            try:
                sock.setsockopt(SOL_NETLINK, NETLINK_LISTEN_ALL_NSID, 1)
            except PermissionError:
                # The kernel checks CAP_NET_BROADCAST here, not CAP_NET_ADMIN.
                raise NetcfgError("cannot hear every namespace on one socket "
                                  "(NETLINK_LISTEN_ALL_NSID): this needs CAP_NET_BROADCAST; "
                                  "add it to the unit's CapabilityBoundingSet=") from None
            for group in groups:
                sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, group)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.received = 0        # notifications read
        self.datagrams = 0
        self.losses = 0          # ENOBUFS seen
        self._buf = bytearray(RECV_SIZE)

    def fileno(self) -> int:
        return self.sock.fileno()

    def read(self, limit: int = 4096) -> list[Event]:
        """The notifications waiting now (at most ``limit`` datagrams), without
        blocking. Raises EventsLost once when the kernel dropped some; the
        socket goes on working after it."""
        out: list[Event] = []
        for _ in range(limit):
            try:
                n, ancdata, _flags, _addr = self.sock.recvmsg_into([self._buf], _CMSG_SPACE)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.ENOBUFS:
                    self.losses += 1
                    raise EventsLost("the kernel dropped netlink notifications "
                                     "(receive buffer full)") from None
                raise
            self.datagrams += 1
            nsid = None
            for level, kind, data in ancdata:
                if level == SOL_NETLINK and kind == NETLINK_LISTEN_ALL_NSID and len(data) >= 4:
                    nsid = S32.unpack_from(data)[0]
            for event in _decode(memoryview(self._buf)[:n], nsid):
                out.append(event)
        self.received += len(out)
        return out


def _decode(data: memoryview, nsid: int | None) -> Iterator[Event]:
    for msg_type, flags, _seq, payload in iter_messages(data):
        if msg_type in (NLMSG_NOOP, NLMSG_DONE, NLMSG_ERROR):
            continue
        if msg_type == NLMSG_OVERRUN:
            raise EventsLost("netlink overrun on the event socket")
        kind = _KIND_OF.get(msg_type)
        if kind is None:
            continue
        deleted = msg_type in (RTM_DELLINK, RTM_DELADDR, RTM_DELROUTE, RTM_DELVLAN,
                               RTM_DELTUNNEL, RTM_DELNSID, RTM_DELNEIGH)
        if kind == LINK:
            index = IFINFOMSG.unpack_from(payload)[2]
            name = parse_attrs(payload, IFINFOMSG.size, {IFLA_IFNAME}).get(IFLA_IFNAME)
            yield Event(nsid, kind, msg_type, index, attr_str(name) if name is not None else "",
                        deleted)
        elif kind == ADDRESS:
            proto = parse_attrs(payload, IFADDRMSG.size, {IFA_PROTO}).get(IFA_PROTO)
            yield Event(nsid, kind, msg_type, IFADDRMSG.unpack_from(payload)[4], "", deleted,
                        origin=proto[0] if proto is not None and len(proto) else 0)
        elif kind == ROUTE:
            oif = parse_attrs(payload, RTMSG.size, {RTA_OIF}).get(RTA_OIF)
            yield Event(nsid, kind, msg_type, U32.unpack_from(oif)[0] if oif is not None else 0,
                        "", deleted, origin=RTMSG.unpack_from(payload)[5],
                        replace=bool(flags & NLM_F_REPLACE))
        elif kind == NEIGH:
            if is_remote_event(payload):
                yield Event(nsid, kind, msg_type, NDMSG.unpack_from(payload)[1], "", deleted)
        elif kind == NSID:
            # struct rtgenmsg padded to 4, then NETNSA_*.
            value = parse_attrs(payload, 4, {NETNSA_NSID}).get(NETNSA_NSID)
            target = S32.unpack_from(value)[0] if value is not None else None
            yield Event(nsid, kind, msg_type, 0, "", deleted, target)
        else:   # VLAN, TUNNEL: struct br_vlan_msg / tunnel_msg: family, pad, ifindex
            # br_vlan_msg and tunnel_msg: family, flags, reserved, ifindex
            index = TUNNEL_MSG.unpack_from(payload)[3] if len(payload) >= TUNNEL_MSG.size else 0
            yield Event(nsid, kind, msg_type, index, "", deleted)
