"""The batadv kind's generic netlink writes (apply/genl.py calls
``configure``): a mesh's hop penalty, after the batch that made or changed
the device (kernel/batadv.py)."""

from __future__ import annotations

from netcfg.kernel.batadv import set_hop_penalty
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.session import KernelSession
from netcfg.kinds.batadv import HOP_PENALTY
from netcfg.model.errors import NetcfgError, UnknownDevice
from netcfg.plan.ops import LINK_ADD, LINK_SET, Operation

DEFAULT_HOP_PENALTY = 30   # batadv_mesh_init (the kernel's; a line removed goes back to it)


class BatadvError(NetcfgError):
    """BATADV_CMD_SET_MESH was refused."""


def configure(op: Operation, session: KernelSession) -> int:
    if op.action not in (LINK_ADD, LINK_SET) or HOP_PENALTY not in op.params:
        return 0
    value = op.params[HOP_PENALTY]
    try:
        ifindex = session.ifindex(op.netns, op.name)
    except UnknownDevice:   # made with an ifindex the kernel chose
        session.refresh_ifindexes([op.netns])
        ifindex = session.ifindex(op.netns, op.name)
    try:
        return set_hop_penalty(session.genl, op.netns, ifindex,
                               DEFAULT_HOP_PENALTY if value is None else value, tag=op)
    except NetlinkError as e:
        raise BatadvError(f"{op.describe()}: BATADV_CMD_SET_MESH: {e}") from None
