"""What a revert may re-create (netcfg/apply/revert.py, issue 24 H4): never a
device neither the config names nor netcfg made, nor its veth peer, nor
what the revert planned on them; netcfg's own devices are re-created."""

from __future__ import annotations

from builders import iface, model

from netcfg.apply.revert import foreign_recreations, not_restored
from netcfg.plan.diff import diff


def test_a_foreign_pair_and_what_sits_on_it_are_not_recreated_netcfgs_own_are():
    ns = "p"
    before = model(iface("br0", "bridge", ns, auto=True, bridge_ports=["fv0"]),
                   iface("fv0", "veth", ns, auto=True, veth_peer_name="fv1"),
                   iface("fv1", "veth", ns, auto=True, veth_peer_name="fv0"),
                   iface("old", "bridge", ns, auto=True, bridge_ports=[]))
    now = model(iface("br0", "bridge", ns, auto=True, bridge_ports=[]))
    desired = model(iface("br0", "bridge", ns, auto=True, bridge_ports=[]))
    ops = diff(before, now)
    assert {op.name for op in ops} >= {"fv0", "fv1", "old"}
    kept, lost = foreign_recreations(ops, before, desired, {ns: {"br0", "old"}})
    assert lost == [(ns, "fv0")] or lost == [(ns, "fv1")]
    assert not [op for op in kept if op.name in ("fv0", "fv1")], kept
    assert any(op.name == "old" and op.action == "link-add" for op in kept)
    assert "not netcfg's" in not_restored(lost) and "netns p" in not_restored(lost)


def test_nothing_foreign_leaves_the_plan_as_it_is():
    before = model(iface("old", "bridge", auto=True, bridge_ports=[]))
    ops = diff(before, model())
    assert foreign_recreations(ops, before, model(), {"": {"old"}}) == (ops, [])
