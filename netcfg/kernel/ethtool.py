"""Link modes (speed, duplex, autonegotiation) of physical ports, read and
set over the "ethtool" generic netlink family (netcfg/netlink/ethtool.py).

Only physical ports (no link kind) are asked, one LINKMODES_GET each: the devices
netcfg makes (veth, bridge, bond...) have no link modes worth managing, and
a host has few NICs. A driver without link settings (EOPNOTSUPP), a device
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

from netcfg.kernel.genl import FamilyMissing, GenlSocket
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.read import NamespaceState
from netcfg.kinds.physical import AUTONEG, DUPLEX, SPEED
from netcfg.netlink.ethtool import (ETHTOOL_GENL_NAME, LinkModes, linkmodes_get, linkmodes_set,
                                   parse_linkmodes)

PHYSICAL = "physical"
# Answers that mean "this device has no link modes to read", not a failure.
_NO_LINK_MODES = frozenset({errno.EOPNOTSUPP, errno.ENODEV, errno.ENOENT})


@dataclass
class LinkModesSent:
    """Per (netns, device), the speed and duplex this session set."""

    sent: dict[tuple[str, str], LinkModes] = field(default_factory=dict)


def _ports(state: NamespaceState) -> list:
    # A device with a link kind netcfg does not know (sit0, tun...) reads as
    # physical too; only those without one are NICs.
    return [(name, obj) for name, obj in state.interfaces.items()
            if obj.kind == PHYSICAL and name not in state.kernel_kinds]


def has_physical(state: NamespaceState) -> bool:
    return bool(_ports(state))


def read_link_modes(sock: GenlSocket, state: NamespaceState, sent: LinkModesSent) -> int:
    """Add link-speed, link-duplex and link-autoneg to the physical ports of
    one namespace's read; returns the LINKMODES_GET requests made.

    Equivalent to: `ethtool DEV` for each physical port."""
    ports = _ports(state)
    if not ports:
        return 0
    try:
        family = sock.family(ETHTOOL_GENL_NAME)
    except FamilyMissing:
        return 0
    asked = 0
    for name, obj in ports:
        try:
            _type, _flags, payload = sock.nl.get(family, linkmodes_get(state.ifindex[name]))
        except NetlinkError as e:
            if e.errno in _NO_LINK_MODES:
                continue
            raise
        asked += 1
        modes = parse_linkmodes(bytes(payload))
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


def set_link_modes(sock: GenlSocket, netns: str, name: str, modes: LinkModes,
                   sent: LinkModesSent, tag=None) -> int:
    """One LINKMODES_SET; raises the kernel's refusal (NetlinkError).

    Equivalent to: `ethtool -s DEV speed S duplex D autoneg on|off`."""
    sock.transact(ETHTOOL_GENL_NAME, [linkmodes_set(name, modes.autoneg, modes.speed,
                                                    modes.duplex)], tag=tag)
    before = sent.sent.get((netns, name), LinkModes())
    sent.sent[(netns, name)] = LinkModes(
        None, modes.speed if modes.speed is not None else before.speed,
        modes.duplex if modes.duplex is not None else before.duplex)
    return 1
