"""netcfg.plan.scope: what one run compares and changes, from values alone."""

from __future__ import annotations

from netcfg.plan.ops import LINK_DEL, Operation
from netcfg.plan.planner import build_plan
from netcfg.plan.scope import group_deletes


def pair_del(netns: str, name: str, peer: str, peer_netns: str | None = None) -> Operation:
    return Operation(LINK_DEL, netns, name, params={"peer": peer,
                                                    "peer_netns": peer_netns or netns})


def test_group_deletes_is_data():
    """Which link-dels become a group delete, and in which batch (pure)."""
    ops = [pair_del("t", f"v{i}", f"w{i}") for i in range(3)]
    managed = {"t": {"v0", "v1", "v2", "w0", "w1", "w2"}}
    bulk = group_deletes(build_plan(ops), managed)
    assert bulk.at == {0: ["t"]} and bulk.replaced == {op.key for op in ops}

    # One device of ours stays: each goes on its own.
    assert group_deletes(build_plan(ops), {"t": managed["t"] | {"keep"}}).at == {}
    # Another program's device (purge) is not in the group: still its own link-del.
    foreign = Operation(LINK_DEL, "t", "f0")
    bulk = group_deletes(build_plan([*ops, foreign]), managed)
    assert foreign.key not in bulk.replaced and len(bulk.replaced) == 3
    # Peers elsewhere count: the host's ends of veths into t are covered by t's
    # link-dels, so the host deletes by group too.
    crossing = [pair_del("", f"x{i}", f"y{i}", "t") for i in range(2)]
    bulk = group_deletes(build_plan(crossing), {"": {"x0", "x1"}, "t": {"y0", "y1"}})
    assert bulk.at == {0: [""]}   # t's devices all go as peers: nothing to send there
    # The group delete goes in the batch of the last link-del it replaces, so
    # what had to come first (a macvlan before its lower device) still does.
    upper = Operation(LINK_DEL, "t", "m0", params={"link": "v0"})
    plan = build_plan([*ops, upper])
    assert len(plan.batches) == 2
    assert group_deletes(plan, {"t": managed["t"] | {"m0"}}).at == {1: ["t"]}
