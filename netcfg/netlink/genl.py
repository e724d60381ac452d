"""Generic netlink, the pure part: the genl header, and resolving a family's id.

A generic netlink family (``wireguard``, ``nl80211``...) has no fixed message
type: the kernel hands each registered family an id, which the controller
family (GENL_ID_CTRL, fixed at 0x10) tells by name. A message is a netlink
header whose type is that id, then ``struct genlmsghdr`` (cmd, version,
reserved), then the family's attributes (linux/genetlink.h).

Bytes in, bytes out; netcfg/kernel/genl.py sends them.
"""

from __future__ import annotations

import struct
from typing import Iterator

from netcfg.netlink.nlmsg import NLA_TYPE_MASK, RTATTR, attr_str, parse_attrs, rtattr_str

GENLMSGHDR = struct.Struct("=BBH")      # cmd, version, reserved
GENL_ID_CTRL = 0x10                     # NLMSG_MIN_TYPE: the controller's own id
CTRL_CMD_NEWFAMILY, CTRL_CMD_GETFAMILY = 1, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 1, 2
CTRL_VERSION = 2


def genlmsg(cmd: int, version: int, attrs: bytes = b"") -> bytes:
    """The payload of a genl message: its header, then the attributes."""
    return GENLMSGHDR.pack(cmd, version, 0) + attrs


def getfamily(name: str) -> bytes:
    """CTRL_CMD_GETFAMILY by name, sent to GENL_ID_CTRL.

    Equivalent to: `genl ctrl get name NAME`."""
    return genlmsg(CTRL_CMD_GETFAMILY, CTRL_VERSION, rtattr_str(CTRL_ATTR_FAMILY_NAME, name))


def family_id(payload: bytes | memoryview) -> tuple[str, int]:
    """(name, id) from the controller's CTRL_CMD_NEWFAMILY answer."""
    attrs = parse_attrs(payload, GENLMSGHDR.size,
                        {CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME})
    if CTRL_ATTR_FAMILY_ID not in attrs:
        raise ValueError("the controller's answer carries no family id")
    name = attr_str(attrs[CTRL_ATTR_FAMILY_NAME]) if CTRL_ATTR_FAMILY_NAME in attrs else ""
    return name, struct.unpack_from("=H", attrs[CTRL_ATTR_FAMILY_ID])[0]


def command(payload: bytes | memoryview) -> int:
    """The genl command of a message's payload."""
    return GENLMSGHDR.unpack_from(payload)[0]


def iter_attrs(payload: bytes | memoryview, offset: int = 0) -> Iterator[tuple[int, memoryview]]:
    """Every attribute in order, repeats kept (parse_attrs keeps the last of a
    type): genl arrays are nests of nests whose types are mere indexes."""
    view = payload if isinstance(payload, memoryview) else memoryview(payload)
    end = len(view)
    while offset + 4 <= end:
        length, attr_type = RTATTR.unpack_from(view, offset)
        if length < 4 or offset + length > end:
            raise ValueError(f"a netlink attribute of length {length} at offset {offset} "
                             f"overruns its {end}-byte container")
        yield attr_type & NLA_TYPE_MASK, view[offset + 4:offset + length]
        offset += (length + 3) & ~3
