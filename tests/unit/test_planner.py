"""netcfg.plan.planner: dependencies between operations and their batches."""

from __future__ import annotations

import json

import pytest
from builders import op

from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.plan.diff import diff
from netcfg.plan.graph import CycleError
from netcfg.plan.ops import (ACTIONS, ADDR_ADD, ADDR_DEL, LINK_ADD, LINK_DEL, LINK_DOWN, LINK_SET,
                             LINK_UP, MASTER_SET, MASTER_UNSET, NETNS_ADD, NETNS_DEL, REMOVALS,
                             ROUTE_ADD, ROUTE_DEL, VLAN_ADD, VLAN_DEL, VNI_ADD)
from netcfg.plan.planner import ADDITION_RULES, REMOVAL_RULES, Plan, build_plan, dependencies


def layout(plan):
    """Batches as lists of 'action name[@netns][ subject]' strings."""
    return [[f"{o.action} {o.name}" + (f"@{o.netns}" if o.netns else "")
             + (f" {o.subject}" if o.subject else "") for o in batch]
            for batch in plan.batches]


def test_rules_are_data_over_known_actions():
    for rule in ADDITION_RULES:
        # The one removal planned with the additions: a vlan-del of what a
        # port got by joining (ops.JOINING), after the master-set.
        assert rule.dependent in ACTIONS and (rule.dependent not in REMOVALS
                                              or rule.dependent == VLAN_DEL)
        assert rule.prerequisite in ACTIONS and (rule.prerequisite not in REMOVALS
                                                 or rule.prerequisite == VLAN_DEL)
    for rule in REMOVAL_RULES:
        assert rule.dependent in REMOVALS and rule.prerequisite in REMOVALS


def test_bridge_port_vlan_address_route():
    ops = [
        op(ROUTE_ADD, "br0", "10.9.0.0/16", to="10.9.0.0/16", via="10.0.0.9", dev="br0"),
        op(LINK_UP, "swp1"), op(LINK_UP, "br0"),
        op(ADDR_ADD, "br0", "10.0.0.1/24"),
        op(VLAN_ADD, "swp1", vids=["100"], pvid=None, untagged=[]),
        op(MASTER_SET, "swp1", master="br0"),
        op(LINK_SET, "swp1", **{"addr-gen-mode": "none"}),
        op(LINK_ADD, "br0", kind="bridge"),
    ]
    plan = build_plan(ops)
    assert layout(plan) == [
        ["link-add br0", "link-set swp1"],
        ["master-set swp1", "addr-add br0 10.0.0.1/24", "link-up br0"],
        ["vlan-add swp1", "route-add br0 10.9.0.0/16"],
        ["link-up swp1"],
    ]


def test_port_settings_wait_for_the_master_link_settings_do_not():
    ops = [op(LINK_SET, "swp1", mtu=9000), op(LINK_SET, "swp1", "port", **{"bridge-learning": False}),
           op(MASTER_SET, "swp1", master="br0"), op(LINK_UP, "swp1")]
    assert layout(build_plan(ops)) == [["link-set swp1"], ["master-set swp1"],
                                       ["link-set swp1 port"], ["link-up swp1"]]


def test_everything_in_a_namespace_waits_for_it_and_veth_for_the_peer_namespace():
    ops = [
        op(NETNS_ADD, "t1"),
        op(LINK_ADD, "veth-t1", kind="veth", peer="eth0", peer_netns="t1"),
        op(ADDR_ADD, "eth0", "10.1.0.2/30", netns="t1"),
        op(LINK_UP, "eth0", netns="t1"),
        op(LINK_UP, "lo", netns="t1"),
        op(ROUTE_ADD, "eth0", "0.0.0.0/0", netns="t1", to="0.0.0.0/0", via="10.1.0.1", dev="eth0"),
        op(LINK_UP, "veth-t1"),
    ]
    assert layout(build_plan(ops)) == [
        ["netns-add t1"],
        # lo needs only its namespace; eth0 is made by veth-t1's request.
        ["link-add veth-t1", "link-up lo@t1"],
        ["addr-add eth0@t1 10.1.0.2/30", "link-up veth-t1", "link-up eth0@t1"],
        ["route-add eth0@t1 0.0.0.0/0"],
    ]


def test_lower_device_first_including_across_namespaces():
    ops = [op(LINK_ADD, "bond0.5", netns="t1", kind="vlan", link="bond0", link_netns=""),
           op(LINK_ADD, "bond0", kind="bond"), op(NETNS_ADD, "t1"),
           op(LINK_ADD, "mv0", kind="macvlan", link="bond0.5", link_netns="t1")]
    assert layout(build_plan(ops)) == [["netns-add t1", "link-add bond0"],
                                       ["link-add bond0.5@t1"], ["link-add mv0"]]


def test_vrf_order():
    ops = [op(ROUTE_ADD, "d", "0.0.0.0/0 vrf red", to="0.0.0.0/0", via="10.0.0.1", dev="d",
              vrf="red"),
           op(LINK_UP, "red"), op(LINK_ADD, "red", kind="vrf", table=10),
           op(MASTER_SET, "d", master="red"), op(ADDR_ADD, "d", "10.0.0.2/24"),
           op(VNI_ADD, "vx0", vnis=["1000"]), op(LINK_ADD, "vx0", kind="vxlan")]
    assert layout(build_plan(ops)) == [
        ["link-add red", "link-add vx0"],
        ["master-set d", "vni-add vx0", "link-up red"],
        ["addr-add d 10.0.0.2/24"],
        ["route-add d 0.0.0.0/0 vrf red"],
    ]


def test_missing_dependency_counts_as_done():
    # swp1 exists and is already a port of br0: only the VLAN changes.
    plan = build_plan([op(VLAN_ADD, "swp1", vids=["7"], pvid=None, untagged=[])])
    assert layout(plan) == [["vlan-add swp1"]]


def test_removals_in_reverse_dependency_order_before_additions():
    ops = [
        op(LINK_DOWN, "swp1"), op(MASTER_UNSET, "swp1", master="br0"),
        op(VLAN_DEL, "swp1", vids=["5"]), op(ADDR_DEL, "swp1", "10.0.0.1/24"),
        op(ROUTE_DEL, "swp1", "10.9.0.0/16", to="10.9.0.0/16", via="10.0.0.9", dev="swp1"),
        op(ADDR_ADD, "swp1", "10.0.0.2/24"),
        op(LINK_DEL, "br0"), op(LINK_DEL, "bond0"), op(LINK_DEL, "bond0.5", link="bond0"),
        op(NETNS_DEL, "t1"), op(LINK_DEL, "veth1", peer="eth0", peer_netns="t1"),
    ]
    plan = build_plan(ops)
    assert layout(plan) == [
        ["route-del swp1 10.9.0.0/16", "vlan-del swp1", "link-del bond0.5", "link-del veth1"],
        ["netns-del t1", "addr-del swp1 10.0.0.1/24", "link-del bond0"],
        ["master-unset swp1"],
        ["link-down swp1", "link-del br0"],
        ["addr-add swp1 10.0.0.2/24"],
    ]


def test_deletions_take_what_they_hold_with_them():
    ops = [
        op(LINK_DEL, "d"), op(ADDR_DEL, "d", "10.0.0.1/24"), op(LINK_DOWN, "d"),
        op(ROUTE_DEL, "d", "10.9.0.0/16", to="10.9.0.0/16", dev="d"),
        op(MASTER_UNSET, "d", master="red"), op(VLAN_DEL, "d", vids=["1"]),
        op(NETNS_DEL, "t1"), op(LINK_DEL, "x", netns="t1"), op(ADDR_DEL, "y", "1.2.3.4/32",
                                                               netns="t1"),
        # A veth's far end goes with it.
        op(LINK_DEL, "v", peer="e", peer_netns="t2"), op(ADDR_DEL, "e", "10.2.0.1/30", netns="t2"),
        op(ADDR_DEL, "keep", "10.3.0.1/24"),
    ]
    plan = build_plan(ops)
    assert layout(plan) == [["netns-del t1", "addr-del keep 10.3.0.1/24", "link-del d",
                             "link-del v"]]
    assert plan.notes == ["8 removals left to the kernel: it does them when it deletes the "
                          "device or namespace"]


def test_recreate_is_delete_then_add():
    ops = [op(LINK_ADD, "v", kind="vlan", link="swp1"), op(LINK_DEL, "v", link="swp1"),
           op(ADDR_ADD, "v", "10.0.0.1/24")]
    assert layout(build_plan(ops)) == [["link-del v"], ["link-add v"], ["addr-add v 10.0.0.1/24"]]


def test_duplicates_are_planned_once():
    plan = build_plan([op(LINK_UP, "a"), op(LINK_UP, "a")])
    assert layout(plan) == [["link-up a"]]


def test_batch_is_sorted_by_action_then_object():
    ops = [op(LINK_UP, "a"), op(ADDR_ADD, "b", "10.0.0.2/32"), op(ADDR_ADD, "a", "10.0.0.1/32"),
           op(LINK_UP, "b", netns="n"), op(NETNS_DEL, "zz")]
    assert layout(build_plan(ops)) == [["netns-del zz"],
                                       ["addr-add a 10.0.0.1/32", "addr-add b 10.0.0.2/32",
                                        "link-up a", "link-up b@n"]]


def test_a_dependency_cycle_is_reported():
    # Not producible by a valid model; the planner must still not loop.
    ops = [op(LINK_ADD, "a", link="b"), op(LINK_ADD, "b", link="a")]
    with pytest.raises(CycleError) as info:
        build_plan(ops)
    assert [o.name for o in info.value.cycle] in (["a", "b", "a"], ["b", "a", "b"])


def test_dependencies_index_pairs():
    ops = [op(LINK_UP, "a"), op(LINK_ADD, "a")]
    from netcfg.plan.planner import ADDITION_RULES as rules
    assert dependencies(ops, rules) == [(1, 0)]


# ---------------------------------------------------------------- output forms

def test_to_text_json_dot():
    plan = build_plan([op(LINK_ADD, "br0", kind="bridge"), op(LINK_UP, "br0"),
                       op(ADDR_DEL, "x", "10.0.0.1/24", netns="t1")])
    assert plan.to_text() == (
        "plan: 3 operations in 3 batches\n"
        "batch 1 (1 ops):\n"
        "  - addr-del x (netns t1) 10.0.0.1/24\n"
        "batch 2 (1 ops):\n"
        "  + link-add br0 kind=bridge\n"
        "batch 3 (1 ops):\n"
        "  + link-up br0\n")
    assert plan.to_json() == {
        "batches": [[{"action": "addr-del", "name": "x", "netns": "t1",
                      "subject": "10.0.0.1/24"}],
                    [{"action": "link-add", "name": "br0", "params": {"kind": "bridge"}}],
                    [{"action": "link-up", "name": "br0"}]],
        "operations": 3, "notes": []}
    json.dumps(plan.to_json())
    dot = plan.to_dot()
    assert dot.startswith("digraph plan {\n")
    assert '"link-add /br0" -> "link-up /br0";' in dot
    assert dot.count("rank=same;") == 3
    assert '"addr-del t1/x 10.0.0.1/24" [label="- addr-del x (netns t1) 10.0.0.1/24"];' in dot
    assert plan.dependencies() == [(plan.batches[1][0], plan.batches[2][0])]


def test_empty_plan():
    plan = build_plan([])
    assert plan.to_text() == "plan: 0 operations in 0 batches\nnothing to do\n"
    assert plan.to_json() == {"batches": [], "operations": 0, "notes": []}
    assert len(plan) == 0 and isinstance(plan, Plan) and plan.lowering is None


# ---------------------------------------------------------------- with diff

def _iface(name, kind, netns="", **attrs):
    return ConfigObject(IFACE, name, kind, netns=netns, auto=True,
                        attrs={k.replace("_", "-"): v for k, v in attrs.items()})


def _model(*objects):
    return Model(interfaces={o.key: o for o in objects})


def test_plan_of_a_diff_and_of_its_reverse():
    desired = _model(
        _iface("br0", "bridge", bridge_ports=["swp1"], bridge_vlan_aware=True,
               bridge_vids=["10-20"]),
        _iface("swp1", "physical", addr_gen_mode="none"),
        _iface("veth-t1", "veth", veth_peer_name="eth0", veth_peer_netns="t1"),
        _iface("eth0", "veth", netns="t1", veth_peer_name="veth-t1", veth_peer_netns="",
               address=["10.1.0.2/30"], gateway=["10.1.0.1"]),
    )
    current = _model(_iface("swp1", "physical"))
    assert layout(build_plan(diff(desired, current))) == [
        ["netns-add t1", "link-add br0", "link-set swp1"],
        ["link-add veth-t1", "master-set swp1", "link-up br0", "link-up lo@t1"],
        ["vlan-add swp1", "addr-add eth0@t1 10.1.0.2/30", "link-up veth-t1", "link-up eth0@t1"],
        ["route-add eth0@t1 0.0.0.0/0"],   # swp1 is up already
    ]
    # The kernel releases swp1 when br0 goes: no master-unset. swp1's
    # addr-gen-mode is not in that config, so it is left as it is.
    assert layout(build_plan(diff(current, desired))) == [
        ["link-del br0", "link-del veth-t1"],
        ["netns-del t1"],
    ]
    assert build_plan(diff(desired, desired)).to_text() == "plan: 0 operations in 0 batches\nnothing to do\n"


