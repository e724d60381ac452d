"""A B.A.T.M.A.N. advanced hard interface's own settings (ifupdown-ng's spelling).

    auto bat0
    iface bat0
        batman-ifaces dummy0 vlan1234
        batman-hop-penalty 5
    auto vlan1234
    iface vlan1234
        mtu 1560
        batman-hop-penalty 10

`batman-hop-penalty` on an interface that is not a mesh is that hard
interface's own hop penalty: ifupdown-ng's batman executor runs `batctl hardif
vlan1234 hop_penalty 10` for each member the mesh's stanza lists in
batman-ifaces, and for no other interface. netcfg sends what batctl does,
BATADV_CMD_SET_HARDIF (kernel/batadv.py), and reads it back by GET_HARDIF. On
an interface no mesh lists, the line does nothing in ifupdown-ng (nor in
ifupdown2, which reads the batman-* lines of a mesh's stanza only): a warning
at the line, and nothing is planned.
"""

from __future__ import annotations

from netcfg.kinds.base import Trait
from netcfg.model.model import ConfigObject, Model

HOP_PENALTY = "batman-hop-penalty"
MESH_KIND = "batadv"


class BatadvHardif(Trait):
    name = "batadv-hardif"

    def check(self, obj: ConfigObject, model: Model, report) -> None:
        if obj.kind == MESH_KIND or HOP_PENALTY not in obj.attrs:
            return
        master = model.master_of(obj)
        if master is not None and master.kind == MESH_KIND:
            return
        report.warning(
            obj.where(HOP_PENALTY),
            f"{obj.label()}: batman-hop-penalty on an interface no mesh lists in "
            f"batman-ifaces does nothing: ifupdown-ng sets a hard interface's own hop "
            f"penalty (batctl hardif) only for the members a mesh's stanza lists, and "
            f"ifupdown2 reads it on a mesh only. List {obj.name} in a mesh's batman-ifaces, "
            f"or remove the line", HOP_PENALTY)
        del obj.attrs[HOP_PENALTY]


TRAIT = BatadvHardif()
