"""Link modes (speed, duplex, autonegotiation) of physical ports, read and
set over pyroute2's "ethtool" generic netlink family (Linux 5.6+,
linux/ethtool_netlink.h): ETHTOOL_MSG_LINKMODES_GET and _SET with pyroute2's
``ethtool_linkmode_msg``. ifupdown2's ethtool addon runs `ethtool -s DEV
speed S duplex D autoneg A`; netcfg sends the same request, never executing
ethtool. With autonegotiation on and a speed or duplex given, the kernel
itself narrows the advertised modes to those that match
(ethnl_auto_linkmodes), which is what `ethtool -s ... autoneg on` asks for.

Only physical ports (no link kind) are asked, one LINKMODES_GET each: the devices
netcfg makes (veth, bridge, bond...) have no link modes worth managing, and
a host has few NICs. A read compared with a config asks only the ports that
config writes a link-* attribute on (``only_where_written``,
kernel/genl_families.py): Proxmox's 10 s poll of a file without any then
never loads pyroute2; `show` asks them all.

A driver without link settings (EOPNOTSUPP), a device
gone since the link dump (ENODEV) and a kernel without the family (before
Linux 5.6, or built without CONFIG_ETHTOOL_NETLINK) leave the port without
these attributes; a config that writes them then fails at apply, located.

Drivers report no speed or duplex while a port has no carrier. What this
session set is remembered (``LinkModesSent``) and stands in for such an
unknown read, so an apply to a port without a cable verifies; a later run
sends the same request again, which changes nothing.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import Any

from netcfg.kernel.genl import FamilyMissing, GenlSockets
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.read import NamespaceState
from netcfg.kinds.physical import AUTONEG, DUPLEX, SPEED

PHYSICAL = "physical"
ETHTOOL = "ethtool"
ETHTOOL_GENL_VERSION = 1
ETHTOOL_MSG_LINKMODES_GET, ETHTOOL_MSG_LINKMODES_SET = 4, 5
ETHTOOL_FLAG_COMPACT_BITSETS = 1 << 0
# linux/ethtool.h
AUTONEG_DISABLE, AUTONEG_ENABLE = 0, 1
DUPLEX_NAMES = {0: "half", 1: "full"}            # DUPLEX_UNKNOWN (0xff): not known
DUPLEX_NUMBERS = {name: number for number, name in DUPLEX_NAMES.items()}
SPEED_UNKNOWN = 0xFFFFFFFF           # (u32)-1: no link, or the driver cannot tell
# Answers that mean "this device has no link modes to read", not a failure.
_NO_LINK_MODES = frozenset({errno.EOPNOTSUPP, errno.ENODEV, errno.ENOENT})


@dataclass(frozen=True, slots=True)
class LinkModes:
    """What LINKMODES_GET tells, as netcfg's attributes have it: None where
    the kernel does not know (a port without carrier has no speed)."""

    autoneg: bool | None = None
    speed: int | None = None
    duplex: str | None = None


@dataclass
class LinkModesSent:
    """Per (netns, device), the speed and duplex this session set."""

    sent: dict[tuple[str, str], LinkModes] = field(default_factory=dict)


def sent_memo(genl: GenlSockets) -> LinkModesSent:
    return genl.memo(ETHTOOL, LinkModesSent)


def _linkmode_msg() -> type:
    from pyroute2.netlink.generic.ethtool import ethtool_linkmode_msg
    return ethtool_linkmode_msg


def _message(cmd: int, header: list, attrs: list = ()) -> Any:
    msg = _linkmode_msg()()
    msg["cmd"], msg["version"] = cmd, ETHTOOL_GENL_VERSION
    msg["attrs"] = [["ETHTOOL_A_LINKMODES_HEADER", {"attrs": header}], *attrs]
    return msg


def parse_linkmodes(msg: Any) -> LinkModes:
    """A LINKMODES_GET answer (pyroute2's decoded message) as LinkModes."""
    autoneg = msg.get_attr("ETHTOOL_A_LINKMODES_AUTONEG")
    speed = msg.get_attr("ETHTOOL_A_LINKMODES_SPEED")
    duplex = msg.get_attr("ETHTOOL_A_LINKMODES_DUPLEX")
    return LinkModes(None if autoneg is None else autoneg == AUTONEG_ENABLE,
                     None if speed in (None, 0, SPEED_UNKNOWN) else speed,
                     DUPLEX_NAMES.get(duplex))


def get_link_modes(genl: GenlSockets, netns: str, ifindex: int) -> LinkModes:
    """One port's modes (compact bitsets: the mode masks are not parsed,
    only made smaller).

    Equivalent to: `ethtool DEV` (its speed, duplex and auto-negotiation lines)."""
    msg = _message(ETHTOOL_MSG_LINKMODES_GET,
                   [["ETHTOOL_A_HEADER_DEV_INDEX", ifindex],
                    ["ETHTOOL_A_HEADER_FLAGS", ETHTOOL_FLAG_COMPACT_BITSETS]])
    answer, = genl.request(netns, ETHTOOL, _linkmode_msg(), msg)
    return parse_linkmodes(answer)


def _ports(state: NamespaceState) -> list:
    # A device with a link kind netcfg does not know (sit0, tun...) reads as
    # physical too; only those without one are NICs.
    return [(name, obj) for name, obj in state.interfaces.items()
            if obj.kind == PHYSICAL and name not in state.kernel_kinds]


class LinkModesReader:
    """The physical kind's read-back (kernel/genl_families.py lists it)."""

    kind = PHYSICAL
    # Hardware settings: nothing to diff or revert where a config writes none.
    only_where_written = True

    def read(self, genl: GenlSockets, state: NamespaceState) -> int:
        """Add link-speed, link-duplex and link-autoneg to the physical
        ports of one namespace's read; returns the LINKMODES_GET requests made.

        Equivalent to: `ethtool DEV` for each physical port."""
        ports = _ports(state)
        if not ports:
            return 0
        sent = sent_memo(genl)
        asked = 0
        for name, obj in ports:
            try:
                modes = get_link_modes(genl, state.netns, state.ifindex[name])
            except FamilyMissing:
                return asked
            except NetlinkError as e:
                if e.errno in _NO_LINK_MODES:
                    continue
                raise
            asked += 1
            before = sent.sent.get((state.netns, name))
            if modes.autoneg is not None:
                obj.attrs[AUTONEG] = modes.autoneg
            speed = modes.speed if modes.speed is not None else before and before.speed
            duplex = modes.duplex if modes.duplex is not None else before and before.duplex
            if speed is not None:
                obj.attrs[SPEED] = speed
            if duplex is not None:
                obj.attrs[DUPLEX] = duplex
        return asked


def set_link_modes(genl: GenlSockets, netns: str, name: str, modes: LinkModes,
                   tag: Any = None) -> int:
    """One LINKMODES_SET; raises the kernel's refusal (NetlinkError naming ``tag``)."""
    genl.send_all(netns, ETHTOOL, _linkmode_msg(), [linkmodes_set(name, modes)], tag=tag)
    sent = sent_memo(genl)
    before = sent.sent.get((netns, name), LinkModes())
    sent.sent[(netns, name)] = LinkModes(
        None, modes.speed if modes.speed is not None else before.speed,
        modes.duplex if modes.duplex is not None else before.duplex)
    return 1


def linkmodes_set(name: str, modes: LinkModes) -> Any:
    """The LINKMODES_SET message with what ``modes`` gives; the rest is left as it is.

    Equivalent to: `ethtool -s DEV [speed S] [duplex D] [autoneg on|off]`."""
    attrs = []
    if modes.autoneg is not None:
        attrs.append(["ETHTOOL_A_LINKMODES_AUTONEG",
                      AUTONEG_ENABLE if modes.autoneg else AUTONEG_DISABLE])
    if modes.speed is not None:
        attrs.append(["ETHTOOL_A_LINKMODES_SPEED", modes.speed])
    if modes.duplex is not None:
        attrs.append(["ETHTOOL_A_LINKMODES_DUPLEX", DUPLEX_NUMBERS[modes.duplex]])
    return _message(ETHTOOL_MSG_LINKMODES_SET, [["ETHTOOL_A_HEADER_DEV_NAME", name]], attrs)
