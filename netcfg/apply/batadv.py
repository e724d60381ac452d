"""The batadv kind's generic netlink writes (apply/genl.py calls
``configure``): a mesh's hop penalty, after the batch that made or changed
the device, and a hard interface's own (kinds/batadv_hardif.py), after the
batch that put it on its mesh (its link-set is a port's, ordered after the
master-set: plan/diff.py) (kernel/batadv.py)."""

from __future__ import annotations

from netcfg.kernel.batadv import master_ifindex, set_hardif_hop_penalty, set_hop_penalty
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.session import KernelSession
from netcfg.kinds.batadv import HOP_PENALTY, KIND_NAME
from netcfg.model.errors import NetcfgError, UnknownDevice
from netcfg.netlink.nlmsg import RTM_GETLINK, ifinfomsg, link_kind
from netcfg.plan.ops import LINK_ADD, LINK_SET, Operation

DEFAULT_HOP_PENALTY = 30   # batadv_mesh_init (the kernel's; a line removed goes back to it)
DEFAULT_HARDIF_HOP_PENALTY = 0   # batadv_hardif_add_interface


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
    if link_kind(session.socket(op.netns).get(RTM_GETLINK, ifinfomsg(ifindex))[2]) != KIND_NAME:
        return _configure_hardif(op, session, ifindex, value)
    try:
        return set_hop_penalty(session.genl, op.netns, ifindex,
                               DEFAULT_HOP_PENALTY if value is None else value, tag=op)
    except NetlinkError as e:
        raise BatadvError(f"{op.describe()}: BATADV_CMD_SET_MESH: {e}") from None


def _configure_hardif(op: Operation, session: KernelSession, ifindex: int,
                      value: int | None) -> int:
    """A hard interface's own hop penalty, on the mesh it is a member of."""
    mesh = master_ifindex(session.socket(op.netns), ifindex)
    if mesh is None:
        raise BatadvError(f"{op.describe()}: {op.name} is on no batman-adv mesh, so it has "
                          f"no hop penalty of its own to set (BATADV_CMD_SET_HARDIF)")
    try:
        return set_hardif_hop_penalty(session.genl, op.netns, mesh, ifindex,
                                      DEFAULT_HARDIF_HOP_PENALTY if value is None else value,
                                      tag=op)
    except NetlinkError as e:
        raise BatadvError(f"{op.describe()}: BATADV_CMD_SET_HARDIF: {e}") from None
