"""A B.A.T.M.A.N. advanced mesh interface (batman-adv), in ifupdown2's spelling.

    auto bat0
    iface bat0
        batman-ifaces tap0 tap1
        batman-ifaces-ignore-regex .*_nodes
        batman-hop-penalty 23
        address 192.0.2.42/24

ifupdown2's batman_adv addon runs `batctl -m bat0 if add tap0` per hard
interface and writes batman-hop-penalty to /sys/class/net/bat0/mesh/, which
Linux no longer has (Debian's 6.12 kernel: no mesh/ directory), so its ifup
fails on that line there. netcfg makes the mesh as batctl does underneath:
rtnetlink (`ip link add bat0 type batadv`, each hard interface enslaved with
IFLA_MASTER), and sets the hop penalty over the "batadv" generic netlink
family (BATADV_CMD_SET_MESH, kernel/batadv.py), read back by GET_MESH.

``batman-ifaces-ignore-regex``: ifupdown2 leaves members that match it on
the mesh though the file does not list them. netcfg never releases a member
the config does not name (a device nobody declared is not touched), so the
line is accepted and changes nothing more. A hard interface's own hop
penalty (ifupdown-ng's `batman-hop-penalty` on a member) is the
batadv-hardif trait's (kinds/batadv_hardif.py).
"""

from __future__ import annotations

import re

from netcfg.kinds.base import SLAVE, Kind, Reference, iter_names
from netcfg.kinds.genl import GenlState
from netcfg.model.model import IFACE, ConfigObject

KIND_NAME = "batadv"
IFACES = "batman-ifaces"
IGNORE_REGEX = "batman-ifaces-ignore-regex"
HOP_PENALTY = "batman-hop-penalty"


class Batadv(GenlState, Kind):
    name = KIND_NAME
    link_type = "batadv"
    info_kind = "batadv"
    defining_attributes = (IFACES,)
    genl_attributes = (HOP_PENALTY,)
    # Not batadv-hardif: a mesh's batman-hop-penalty is its own (batadv.json),
    # a member's is the trait's; a mesh is never a hard interface of another.
    traits = ("common", "bridge-port")
    default_mtu = 1500   # batadv_interface_setup (ether_setup); it follows the hard interfaces'

    def complete(self, obj: ConfigObject, report) -> None:
        if obj.attrs.get(IFACES) == ["none"]:
            obj.attrs[IFACES] = []
        regex = obj.attrs.get(IGNORE_REGEX)
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as error:
                report.error(obj.where(IGNORE_REGEX), f"{obj.label()}: {IGNORE_REGEX} "
                                                      f"{regex!r} is not a regular expression: "
                                                      f"{error}", IGNORE_REGEX)
                del obj.attrs[IGNORE_REGEX]

    def create_params(self, obj: ConfigObject) -> dict:
        # Sent over generic netlink once the device exists (apply/batadv.py).
        return {HOP_PENALTY: obj.attrs[HOP_PENALTY]} if HOP_PENALTY in obj.attrs else {}

    def references(self, obj: ConfigObject):
        loc = obj.where(IFACES)
        for port in iter_names(obj.attrs.get(IFACES)):
            yield Reference(IFACES, SLAVE, IFACE, obj.netns, port, loc)


KIND = Batadv()
