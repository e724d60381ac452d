"""ethtool over generic netlink, the pure part: link modes (speed, duplex,
autonegotiation) asked and set (linux/ethtool_netlink.h, Linux 5.6+).

ifupdown2's ethtool addon runs `ethtool -s DEV speed S duplex D autoneg
A`; netcfg sends the same request as ETHTOOL_MSG_LINKMODES_SET to the
"ethtool" generic netlink family and reads back with LINKMODES_GET, never
executing ethtool. With autonegotiation on and a speed or duplex given, the
kernel itself narrows the advertised modes to those that match
(ethnl_auto_linkmodes), which is what `ethtool -s ... autoneg on` asks for.

Bytes in, bytes out; netcfg/kernel/ethtool.py sends them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from netcfg.netlink.genl import GENLMSGHDR, genlmsg
from netcfg.netlink.nlmsg import NLA_F_NESTED, parse_attrs, rtattr, rtattr_str, rtattr_u32

ETHTOOL_GENL_NAME = "ethtool"
ETHTOOL_GENL_VERSION = 1

# enum ethtool_msg_user_types / ethtool_msg_kernel_types (the reply's number
# is the request's for LINKMODES).
ETHTOOL_MSG_LINKMODES_GET = 4
ETHTOOL_MSG_LINKMODES_SET = 5
ETHTOOL_MSG_LINKMODES_GET_REPLY = 4

# ETHTOOL_A_HEADER_*: every request names its device in a nested header.
ETHTOOL_A_HEADER_DEV_INDEX = 1
ETHTOOL_A_HEADER_DEV_NAME = 2
ETHTOOL_A_HEADER_FLAGS = 3
ETHTOOL_FLAG_COMPACT_BITSETS = 1 << 0

# ETHTOOL_A_LINKMODES_*
ETHTOOL_A_LINKMODES_HEADER = 1
ETHTOOL_A_LINKMODES_AUTONEG = 2      # u8
ETHTOOL_A_LINKMODES_OURS = 3         # bitset (advertised modes): not asked for
ETHTOOL_A_LINKMODES_PEER = 4
ETHTOOL_A_LINKMODES_SPEED = 5        # u32, Mb/s
ETHTOOL_A_LINKMODES_DUPLEX = 6       # u8

# linux/ethtool.h
AUTONEG_DISABLE, AUTONEG_ENABLE = 0, 1
DUPLEX_HALF, DUPLEX_FULL, DUPLEX_UNKNOWN = 0, 1, 0xFF
SPEED_UNKNOWN = 0xFFFFFFFF           # (u32)-1: no link, or the driver cannot tell
DUPLEX_NAMES = {DUPLEX_HALF: "half", DUPLEX_FULL: "full"}
DUPLEX_NUMBERS = {name: number for number, name in DUPLEX_NAMES.items()}


@dataclass(frozen=True, slots=True)
class LinkModes:
    """What LINKMODES_GET tells, as netcfg's attributes have it: None where
    the kernel does not know (a port without carrier has no speed)."""

    autoneg: bool | None = None
    speed: int | None = None
    duplex: str | None = None


def _u8(attr_type: int, value: int) -> bytes:
    return rtattr(attr_type, struct.pack("=B", value))


def _header(device: int | str, flags: int = 0) -> bytes:
    """The request header naming the device by ifindex or by name (in the
    socket's namespace)."""
    inner = (rtattr_str(ETHTOOL_A_HEADER_DEV_NAME, device) if isinstance(device, str)
             else rtattr_u32(ETHTOOL_A_HEADER_DEV_INDEX, device))
    if flags:
        inner += rtattr_u32(ETHTOOL_A_HEADER_FLAGS, flags)
    return rtattr(ETHTOOL_A_LINKMODES_HEADER | NLA_F_NESTED, inner)


def linkmodes_get(device: int | str) -> bytes:
    """ETHTOOL_MSG_LINKMODES_GET of one device (compact bitsets: the mode
    masks are not parsed, only made smaller).

    Equivalent to: `ethtool DEV` (its speed, duplex and auto-negotiation lines)."""
    return genlmsg(ETHTOOL_MSG_LINKMODES_GET, ETHTOOL_GENL_VERSION,
                   _header(device, ETHTOOL_FLAG_COMPACT_BITSETS))


def linkmodes_set(device: int | str, autoneg: bool | None = None, speed: int | None = None,
                  duplex: str | None = None) -> bytes:
    """ETHTOOL_MSG_LINKMODES_SET with what is given; the rest is left as it is.

    Equivalent to: `ethtool -s DEV [speed S] [duplex D] [autoneg on|off]`."""
    attrs = [_header(device)]
    if autoneg is not None:
        attrs.append(_u8(ETHTOOL_A_LINKMODES_AUTONEG,
                         AUTONEG_ENABLE if autoneg else AUTONEG_DISABLE))
    if speed is not None:
        attrs.append(rtattr_u32(ETHTOOL_A_LINKMODES_SPEED, speed))
    if duplex is not None:
        attrs.append(_u8(ETHTOOL_A_LINKMODES_DUPLEX, DUPLEX_NUMBERS[duplex]))
    return genlmsg(ETHTOOL_MSG_LINKMODES_SET, ETHTOOL_GENL_VERSION, b"".join(attrs))


_WANTED = frozenset({ETHTOOL_A_LINKMODES_AUTONEG, ETHTOOL_A_LINKMODES_SPEED,
                     ETHTOOL_A_LINKMODES_DUPLEX})


def parse_linkmodes(payload: bytes | memoryview) -> LinkModes:
    """The LINKMODES_GET reply's autoneg, speed and duplex; unknown ones None."""
    attrs = parse_attrs(payload, GENLMSGHDR.size, _WANTED)
    autoneg = speed = duplex = None
    if ETHTOOL_A_LINKMODES_AUTONEG in attrs:
        autoneg = attrs[ETHTOOL_A_LINKMODES_AUTONEG][0] == AUTONEG_ENABLE
    if ETHTOOL_A_LINKMODES_SPEED in attrs:
        value = struct.unpack_from("=I", attrs[ETHTOOL_A_LINKMODES_SPEED])[0]
        speed = None if value in (SPEED_UNKNOWN, 0) else value
    if ETHTOOL_A_LINKMODES_DUPLEX in attrs:
        duplex = DUPLEX_NAMES.get(attrs[ETHTOOL_A_LINKMODES_DUPLEX][0])
    return LinkModes(autoneg, speed, duplex)
