"""ifupdown2's ethtool link modes at the edge: a link-set of a physical
port's link-speed / link-duplex / link-autoneg becomes one
ETHTOOL_MSG_LINKMODES_SET in the port's namespace, after the batch's
rtnetlink requests (kernel/ethtool.py, through pyroute2; never `ethtool -s`).

A refusal (a driver without link settings answers EOPNOTSUPP, a speed it
cannot do EINVAL) is a refusal of the operation, so the apply is reverted
and the message names the attribute's line (apply/refusal.py).
"""

from __future__ import annotations

import dataclasses
import errno

from netcfg.apply.refusal import Refused
from netcfg.kernel.ethtool import LinkModes, set_link_modes
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.session import KernelSession
from netcfg.kinds.physical import AUTONEG, DUPLEX, ETHTOOL_ATTRIBUTES, SPEED
from netcfg.plan.ops import LINK_SET, Operation


def refusal(op: Operation, session: KernelSession) -> Refused | None:
    """The refusal of ``op``'s link modes that the read already tells: the
    device is no NIC (a tun, any kind the kernel names). apply/genl.py asks
    it of the whole plan before anything is written (issue 24, L2)."""
    if op.action != LINK_SET or not any(a in op.params for a in ETHTOOL_ATTRIBUTES):
        return None
    state = session.states.get(op.netns)
    kind = state.kernel_kinds.get(op.name) if state is not None else None
    if kind is None:
        return None
    # Not a NIC: a tun accepts the SET and keeps it, but reading every
    # tap's modes back would cost each read a request per tap (a host of
    # VMs has hundreds), so the modes are refused, never sent: before,
    # verification failed on every apply while the SET stayed.
    # Said of the link-mode attributes alone, so at the first one's line.
    asked = dataclasses.replace(op, params={a: v for a, v in op.params.items()
                                            if a in ETHTOOL_ATTRIBUTES})
    return Refused(asked, NetlinkError(errno.EOPNOTSUPP, 0, tag=asked),
                   f" ({op.name} is a {kind} device, not a NIC: it has no link speed, "
                   f"duplex or autonegotiation to set; remove the line)")


def configure(op: Operation, session: KernelSession) -> int:
    """Send the ethtool part of a link-set (apply/genl.py calls it when the
    op has some); returns the requests sent."""
    if op.action != LINK_SET:
        return 0
    refused = refusal(op, session)   # checked before the apply wrote anything; kept as a guard
    if refused is not None:
        raise refused
    params = op.params
    modes = LinkModes(params.get(AUTONEG), params.get(SPEED), params.get(DUPLEX))
    try:
        return set_link_modes(session.genl, op.netns, op.name, modes, tag=op)
    except NetlinkError as e:
        raise Refused(op, e) from None
