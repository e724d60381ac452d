"""Open vSwitch's part of the diff: bridges and ports as ovs-* operations.

Pure, like the rest of the diff: two models in, operations out. Both sides
hold objects of kind ``ovs`` (netcfg/kinds/ovs.py); the current side's come
from ovs-vswitchd's database (apply/ovs.py reads the Bridge, Port and
Interface tables into the read-back model), holding only what the config
names or what netcfg made, so a port another program added (a VM's tap
device) is never compared or removed.

    ovs-add NAME ovs-type=OVSIntPort ovs-bridge=vmbr0 ovs-options=tag=10
    ovs-set NAME ovs-options=...     (the whole option set: a left-out column is cleared)
    ovs-set NAME ovs-mtu=9000        (ovs-mtu= clears it)
    ovs-del NAME ovs-type=OVSPort ovs-bridge=vmbr0

A bridge's ovs-ports is not compared: a port joins the bridge its own
``ovs-bridge`` names, and the compiler checks that the two agree.
"""

from __future__ import annotations

from netcfg.kinds.ovs import BRIDGE, KIND_NAME, MTU, OPTIONS, TYPE, role
from netcfg.model.model import ConfigObject, Model
from netcfg.plan.ops import OVS_ADD, OVS_DEL, OVS_SET, Operation


def ovs_objects(model: Model) -> dict[tuple[str, str], ConfigObject]:
    return {key: obj for key, obj in model.interfaces.items() if obj.kind == KIND_NAME}


def _params(obj: ConfigObject) -> dict[str, str | int]:
    params: dict[str, str | int] = {TYPE: role(obj)}
    if BRIDGE in obj.attrs:
        params[BRIDGE] = obj.attrs[BRIDGE]
    if obj.attrs.get(OPTIONS):
        params[OPTIONS] = obj.attrs[OPTIONS]
    if obj.attrs.get(MTU):
        params[MTU] = obj.attrs[MTU]
    return params


def ovs_operations(desired: Model, current: Model) -> list[Operation]:
    """The ovs-* operations that make ``current``'s OVS rows ``desired``'s."""
    want, have = ovs_objects(desired), ovs_objects(current)
    if not want and not have:
        return []
    ops: list[Operation] = []
    for key, obj in want.items():
        cur = have.get(key)
        if cur is not None and role(cur) == role(obj):
            changed: dict[str, str | int] = {}
            if obj.attrs.get(BRIDGE) != cur.attrs.get(BRIDGE):
                changed[BRIDGE] = obj.attrs[BRIDGE]
            if obj.attrs.get(OPTIONS, "") != cur.attrs.get(OPTIONS, ""):
                changed[OPTIONS] = obj.attrs.get(OPTIONS, "")
            if obj.attrs.get(MTU) != cur.attrs.get(MTU):
                changed[MTU] = obj.attrs.get(MTU, "")   # "": cleared, OVS's default
            if changed:
                # What changed first: drift reports locate the first param.
                ops.append(Operation(OVS_SET, key[0], key[1],
                                     params={**changed, TYPE: role(obj)}))
            continue
        if cur is not None:
            # An OVSPort that becomes an OVSIntPort, a port that becomes a
            # bridge: its row goes, a new one comes.
            ops.append(Operation(OVS_DEL, key[0], key[1], params=_params(cur)))
        ops.append(Operation(OVS_ADD, key[0], key[1], params=_params(obj)))
    for key, cur in have.items():
        if key not in want:
            ops.append(Operation(OVS_DEL, key[0], key[1], params=_params(cur)))
    return ops
