"""What a revert may re-create (issue 24, H4).

A revert diffs the state from before an apply against the kernel's now; a
device the apply deleted comes back as a link-add. For netcfg's own devices
that is right. For another program's device (one a `purge yes` namespace
deleted) it is not: the new device would be another one (new ifindex and
MAC, down, its other end or master lost), and link-add puts it in netcfg's
group, so the next apply would delete it as netcfg's. Those link-adds, and
whatever else the revert planned on those devices, are left out, and the
revert says which devices it could not bring back. Except ifupdown2's
macvlans of the config's `vrrp` lines, which an apply replaces with netcfg's
(plan/vrrp.py): the config names them, and without one the VRRP instance
has no macvlan until an apply succeeds. Pure: values in, values out.
"""

from __future__ import annotations

import dataclasses
from typing import Collection, Mapping

from netcfg.model.model import Model
from netcfg.plan.diff import PEER_NETNS_PARAM, PEER_PARAM
from netcfg.plan.ops import LINK_ADD, MASTER_SET, Operation
from netcfg.plan.vrrp import PROTODOWN, RAW_DEVICE, replaced_by

Key = tuple[str, str]


def foreign_recreations(ops: list[Operation], before: Model, desired: Model,
                        made: Mapping[str, Collection[str]]) -> tuple[list[Operation], list[Key]]:
    """``ops`` without the re-creation of devices neither the config names
    (``desired``) nor netcfg made (``made``: netcfg's group per namespace, as
    read before the apply), and the keys of those devices. A device is
    re-created when a link-add makes a device ``before`` had."""
    foreign = {(op.netns, op.name) for op in ops if op.action == LINK_ADD
               and (op.netns, op.name) in before.interfaces
               and (op.netns, op.name) not in desired.interfaces
               and op.name not in made.get(op.netns, ())}
    # ifupdown2's macvlan of a vrrp line, which the apply replaced: it comes
    # back (as ifupdown2 made it, with protodown on: vrrpd clears it on the
    # master router, and an up copy of the backup's would answer for the
    # virtual address).
    vrrp = {key for key in foreign if replaced_by(
        key[1], before.interfaces[key].attrs.get(RAW_DEVICE), desired, key[0]) is not None}
    ops = [dataclasses.replace(op, params={**op.params, PROTODOWN: True})
           if op.action == LINK_ADD and (op.netns, op.name) in vrrp else op for op in ops]
    lost = sorted(foreign - vrrp)
    if not lost:
        return ops, []
    gone = set(lost)
    for op in ops:   # a veth's link-add makes its other end too
        if op.action == LINK_ADD and (op.netns, op.name) in gone and op.params.get(PEER_PARAM):
            gone.add((op.params.get(PEER_NETNS_PARAM, op.netns), op.params[PEER_PARAM]))
    kept = [op for op in ops if (op.netns, op.name) not in gone
            and not (op.action == MASTER_SET and (op.netns, op.params.get("master")) in gone)]
    return kept, lost


def not_restored(lost: list[Key]) -> str:
    """The sentence a revert adds for the devices it did not re-create."""
    names = ", ".join(f"{name} in {'netns ' + netns if netns else 'the host namespace'}"
                      for netns, name in lost)
    return (f"not restored: {names} (not netcfg's: another program's device the purge "
            f"deleted; a re-created one would be a new device, so netcfg does not make it)")
