"""Scale with a wall-clock bound: the pure core at 50k-200k objects.

Timing asserts live here, not in the unit tier (a loaded machine must not
fail a unit run); the bounds are loose, 10-50x what the workloads take on a
developer machine, so that only a change of complexity class trips them.
bench/ measures the same paths precisely.
"""

from __future__ import annotations

import functools
import time

import builders
from builders import model, op

from netcfg.model.model import Model
from netcfg.plan.diff import diff
from netcfg.plan.graph import layered_order
from netcfg.plan.ops import ADDR_ADD, LINK_ADD, LINK_UP, NETNS_ADD, ROUTE_ADD
from netcfg.plan.planner import build_plan

iface = functools.partial(builders.iface, auto=True)


def test_50k_interfaces_diff_in_linear_time():
    n = 50_000
    objects = [iface("br0", "bridge", bridge_vlan_aware=True, bridge_vids=["1-4094"],
                     bridge_ports=[f"p{i}" for i in range(1000)])]
    for i in range(n):
        objects.append(iface(f"p{i}", "dummy", address=[f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}/32"],
                             mtu=9000))
    desired = model(*objects)
    started = time.perf_counter()
    ops = diff(desired, Model())
    first = time.perf_counter() - started
    started = time.perf_counter()
    assert diff(desired, desired) == []
    second = time.perf_counter() - started
    assert len(ops) == 2 + 3 * n + 2 * 1000
    assert first < 10 and second < 10, (first, second)


def test_200k_nodes_order_quickly():
    n = 200_000
    # A wide graph: devices, each with a few operations after it.
    deps = {i: [i - i % 4] for i in range(n) if i % 4}
    started = time.perf_counter()
    layers = layered_order(range(n), deps)
    elapsed = time.perf_counter() - started
    assert [len(layer) for layer in layers] == [n // 4, 3 * n // 4]
    assert elapsed < 10, f"{elapsed:.1f} s"


def test_200k_operations_plan_quickly():
    n = 50_000
    ops = []
    for i in range(n):
        name, netns = f"p{i}", f"ns{i % 500}"
        ops += [op(LINK_ADD, name, netns=netns, kind="dummy"),
                op(ADDR_ADD, name, f"10.0.{i >> 8 & 255}.{i & 255}/32", netns=netns),
                op(LINK_UP, name, netns=netns),
                op(ROUTE_ADD, name, "0.0.0.0/0", netns=netns, to="0.0.0.0/0", dev=name)]
    ops += [op(NETNS_ADD, f"ns{i}") for i in range(500)]
    started = time.perf_counter()
    plan = build_plan(ops)
    elapsed = time.perf_counter() - started
    assert [len(b) for b in plan.batches] == [500, n, 2 * n, n]
    assert elapsed < 20, f"{elapsed:.1f} s"
