"""B.A.T.M.A.N. advanced mesh settings over the "batadv" generic netlink
family (linux/batman_adv.h): the hop penalty, read by BATADV_CMD_GET_MESH
and set by BATADV_CMD_SET_MESH, what `batctl -m bat0 hop_penalty N` sends
(batman-adv's sysfs files, which ifupdown2 writes, are gone from Linux).
pyroute2 has no class for this family: ``batadv_msg`` is built on its
``genlmsg`` with the attributes used here, by their numbers in the header.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from netcfg.kernel.genl import GenlSockets, each_device
from netcfg.kernel.read import NamespaceState
from netcfg.kinds.batadv import HOP_PENALTY, KIND_NAME

BATADV = "batadv"            # the generic netlink family (BATADV_NL_NAME)
BATADV_GENL_VERSION = 1
BATADV_CMD_GET_MESH, BATADV_CMD_SET_MESH = 1, 15
BATADV_ATTR_MESH_IFINDEX, BATADV_ATTR_HOP_PENALTY = 3, 53


@cache
def batadv_msg() -> type:
    from pyroute2.netlink import genlmsg

    class batadv_msg(genlmsg):  # noqa: N801 (pyroute2's naming of message classes)
        nla_map = ((0, "BATADV_ATTR_UNSPEC", "none"),
                   (BATADV_ATTR_MESH_IFINDEX, "BATADV_ATTR_MESH_IFINDEX", "uint32"),
                   (BATADV_ATTR_HOP_PENALTY, "BATADV_ATTR_HOP_PENALTY", "uint8"))

    return batadv_msg


def _message(cmd: int, ifindex: int, hop_penalty: int | None = None) -> Any:
    msg = batadv_msg()()
    msg["cmd"], msg["version"] = cmd, BATADV_GENL_VERSION
    msg["attrs"].append(["BATADV_ATTR_MESH_IFINDEX", ifindex])
    if hop_penalty is not None:
        msg["attrs"].append(["BATADV_ATTR_HOP_PENALTY", hop_penalty])
    return msg


def get_hop_penalty(genl: GenlSockets, netns: str, ifindex: int) -> int | None:
    """The mesh's hop penalty. Equivalent to: `batctl meshif IF hop_penalty`."""
    answers = genl.request(netns, BATADV, batadv_msg(),
                           _message(BATADV_CMD_GET_MESH, ifindex))
    for answer in answers:
        value = answer.get_attr("BATADV_ATTR_HOP_PENALTY")
        if value is not None:
            return value
    return None


def set_hop_penalty(genl: GenlSockets, netns: str, ifindex: int, value: int,
                    tag: Any = None) -> int:
    """Equivalent to: `batctl meshif IF hop_penalty VALUE`; the requests sent."""
    return genl.send_all(netns, BATADV, batadv_msg(),
                         [_message(BATADV_CMD_SET_MESH, ifindex, value)], tag=tag)


class BatadvReader:
    """The batadv kind's read-back (kernel/genl_families.py lists it)."""

    kind = KIND_NAME
    only_where_written = False    # a namespace without a mesh costs nothing

    def read(self, genl: GenlSockets, state: NamespaceState) -> int:
        asked = 0
        for obj, value in each_device(
                state, KIND_NAME, lambda index: get_hop_penalty(genl, state.netns, index)):
            asked += 1
            if value is not None:
                obj.attrs[HOP_PENALTY] = value
        return asked
