"""B.A.T.M.A.N. advanced mesh settings over the "batadv" generic netlink
family (linux/batman_adv.h): the hop penalty, read by BATADV_CMD_GET_MESH
and set by BATADV_CMD_SET_MESH, what `batctl -m bat0 hop_penalty N` sends
(batman-adv's sysfs files, which ifupdown2 writes, are gone from Linux); a
hard interface's own, ifupdown-ng's `batman-hop-penalty` on a member (batman-adv
2020.3, Linux 5.8), by BATADV_CMD_GET_HARDIF / SET_HARDIF, what `batctl hardif
IF hop_penalty N` sends.
pyroute2 has no class for this family: ``batadv_msg`` is built on its
``genlmsg`` with the attributes used here, by their numbers in the header.
"""

from __future__ import annotations

import errno
from functools import cache
from typing import Any

from netcfg.kernel.genl import GenlSockets, each_device
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.read import NamespaceState
from netcfg.kinds.batadv import HOP_PENALTY, KIND_NAME
from netcfg.netlink.nlmsg import (IFINFOMSG, IFLA_MASTER, RTM_GETLINK, attr_u32, ifinfomsg,
                                  parse_attrs)

BATADV = "batadv"            # the generic netlink family (BATADV_NL_NAME)
BATADV_GENL_VERSION = 1
BATADV_CMD_GET_MESH, BATADV_CMD_GET_HARDIF, BATADV_CMD_SET_MESH, BATADV_CMD_SET_HARDIF = \
    1, 5, 15, 16
BATADV_ATTR_MESH_IFINDEX, BATADV_ATTR_HARD_IFINDEX, BATADV_ATTR_HOP_PENALTY = 3, 6, 53


@cache
def batadv_msg() -> type:
    from pyroute2.netlink import genlmsg

    class batadv_msg(genlmsg):  # noqa: N801 (pyroute2's naming of message classes)
        nla_map = ((0, "BATADV_ATTR_UNSPEC", "none"),
                   (BATADV_ATTR_MESH_IFINDEX, "BATADV_ATTR_MESH_IFINDEX", "uint32"),
                   (BATADV_ATTR_HARD_IFINDEX, "BATADV_ATTR_HARD_IFINDEX", "uint32"),
                   (BATADV_ATTR_HOP_PENALTY, "BATADV_ATTR_HOP_PENALTY", "uint8"))

    return batadv_msg


def _message(cmd: int, ifindex: int, hop_penalty: int | None = None,
             hard_ifindex: int | None = None) -> Any:
    msg = batadv_msg()()
    msg["cmd"], msg["version"] = cmd, BATADV_GENL_VERSION
    msg["attrs"].append(["BATADV_ATTR_MESH_IFINDEX", ifindex])
    if hard_ifindex is not None:
        msg["attrs"].append(["BATADV_ATTR_HARD_IFINDEX", hard_ifindex])
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


def get_hardif_hop_penalty(genl: GenlSockets, netns: str, mesh: int, hard: int) -> int | None:
    """A hard interface's hop penalty. Equivalent to: `batctl hardif IF hop_penalty`."""
    answers = genl.request(netns, BATADV, batadv_msg(),
                           _message(BATADV_CMD_GET_HARDIF, mesh, hard_ifindex=hard))
    for answer in answers:
        value = answer.get_attr("BATADV_ATTR_HOP_PENALTY")
        if value is not None:
            return value
    return None


def set_hardif_hop_penalty(genl: GenlSockets, netns: str, mesh: int, hard: int, value: int,
                           tag: Any = None) -> int:
    """Equivalent to: `batctl hardif IF hop_penalty VALUE`; the requests sent."""
    return genl.send_all(netns, BATADV, batadv_msg(),
                         [_message(BATADV_CMD_SET_HARDIF, mesh, value, hard)], tag=tag)


def master_ifindex(sock: Any, ifindex: int) -> int | None:
    """The ifindex of the device's master (IFLA_MASTER), None without one.
    Equivalent to: `ip link show dev IF` (its `master`)."""
    _, _, payload = sock.get(RTM_GETLINK, ifinfomsg(ifindex))
    master = parse_attrs(payload, IFINFOMSG.size, {IFLA_MASTER}).get(IFLA_MASTER)
    return attr_u32(master) if master is not None else None


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
        # Each mesh's hard interfaces: their own hop penalty (the kernel's default
        # 0 is read too, so a line removed is put back to it).
        for name, master in state.masters.items():
            mesh = state.interfaces.get(master)
            obj = state.interfaces.get(name)
            if mesh is None or mesh.kind != KIND_NAME or obj is None:
                continue
            try:
                value = get_hardif_hop_penalty(genl, state.netns, state.ifindex[master],
                                               state.ifindex[name])
            except NetlinkError as e:
                if e.errno in (errno.ENODEV, errno.EINVAL, errno.ENOENT):
                    continue    # gone, or left the mesh, since the link dump
                raise
            asked += 1
            if value is not None:
                obj.attrs[HOP_PENALTY] = value
        return asked
