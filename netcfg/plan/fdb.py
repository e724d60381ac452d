"""A vxlan's remotes: the fdb-add / fdb-del operations that make the
device's all-zeros forwarding entries (head-end replication) what the
config writes. Pure; called by plan/diff.py.

What ifupdown2 does (addons/vxlan.py, `_up`), and so netcfg:

- ``vxlan-remoteip`` lines are the device's whole set of remotes: each
  missing one is appended (`bridge fdb append 00:00:00:00:00:00 dev VX dst
  IP`), each other one removed, whatever ``vxlan-purge-remotes`` says.
- Without ``vxlan-remoteip``, ``vxlan-purge-remotes yes`` removes every
  remote; ``no`` (ifupdown2's default, with no policy file) leaves them to
  whoever made them (an EVPN daemon): netcfg does not manage them then.
- The device's own default destination (``vxlan-svcnodeip``,
  IFLA_VXLAN_GROUP) has an all-zeros entry the kernel makes and removes
  with it: it is never a remote (ifupdown2's get_vxlan_peers leaves it
  out), and a remote written with the same address is already there.
- A remote equal to ``vxlan-local-tunnelip`` is skipped (check warns).

Read-back state (kernel/read.py) lists a vxlan's remotes under
``vxlan-remoteip``, the group's entry left out; so a model read from the
kernel, used as the desired side (a revert), puts back exactly the remotes
it had.
"""

from __future__ import annotations

from collections.abc import Collection

from netcfg.model.model import ConfigObject, Model
from netcfg.plan.ops import FDB_ADD, FDB_DEL, Operation

KIND = "vxlan"
REMOTE, PURGE, SVCNODE = "vxlan-remoteip", "vxlan-purge-remotes", "vxlan-svcnodeip"
LOCAL, VNIFILTER = "vxlan-local-tunnelip", "vxlan-vnifilter"


def manages_remotes(obj: ConfigObject) -> bool:
    """Whether netcfg owns this vxlan's remote entries."""
    return (obj.kind == KIND and not obj.attrs.get(VNIFILTER)
            and (REMOTE in obj.attrs or bool(obj.attrs.get(PURGE))))


def wanted_remotes(obj: ConfigObject) -> list[str]:
    """The remotes written, in order, once each, this host's own address left out."""
    local = obj.attrs.get(LOCAL)
    return [r for r in dict.fromkeys(obj.attrs.get(REMOTE, ())) if r != local]


def remote_operations(desired: Model, current: Model,
                      remade: Collection[tuple[str, str]] = ()) -> list[Operation]:
    """fdb-add / fdb-del operations for every vxlan of ``desired`` whose
    remotes netcfg manages. ``remade``: devices created (again) by this plan,
    which start with no remote."""
    ops: list[Operation] = []
    for key, obj in desired.interfaces.items():
        if not manages_remotes(obj):
            continue
        cur = None if key in remade else current.interfaces.get(key)
        if cur is not None and cur.kind != KIND:
            cur = None
        group_now = cur.attrs.get(SVCNODE) if cur is not None else None
        # The group after this plan's link-set (or link-add) of svcnodeip.
        group = obj.attrs.get(SVCNODE, group_now)
        want = [r for r in wanted_remotes(obj) if r != group]
        had = [r for r in (cur.attrs.get(REMOTE, ()) if cur is not None else ()) if r != group]
        netns, name = key
        want_set, had_set = set(want), set(had)
        ops.extend(Operation(FDB_DEL, netns, name, r) for r in had if r not in want_set)
        ops.extend(Operation(FDB_ADD, netns, name, r) for r in want if r not in had_set)
    return ops
