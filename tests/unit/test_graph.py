"""netcfg.plan.graph: layered topological order and cycle finding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netcfg.plan.graph import CycleError, find_cycle, format_cycle, layered_order


def test_layers_follow_dependencies():
    deps = {"c": ["a", "b"], "b": ["a"], "d": ["a"]}
    assert layered_order(["d", "c", "b", "a"], deps) == [["a"], ["b", "d"], ["c"]]


def test_each_layer_is_sorted_by_key():
    nodes = ["b1", "a2", "c0"]
    assert layered_order(nodes, {}, key=lambda n: n[1]) == [["c0", "b1", "a2"]]
    assert layered_order(nodes, {}) == [["a2", "b1", "c0"]]


def test_dependency_outside_nodes_counts_as_satisfied():
    assert layered_order(["x"], {"x": ["not-planned"]}) == [["x"]]


def test_duplicate_nodes_and_edges_count_once():
    assert layered_order(["a", "b", "a"], {"b": ["a", "a"]}) == [["a"], ["b"]]


def test_empty():
    assert layered_order([], {}) == []
    assert find_cycle({}) is None


def test_cycle_error_gives_one_concrete_path():
    deps = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    with pytest.raises(CycleError) as info:
        layered_order(["a", "b", "c", "d"], deps)
    cycle = info.value.cycle
    assert cycle[0] == cycle[-1]
    assert sorted(cycle[:-1]) == ["a", "b", "c"]
    for node, nxt in zip(cycle, cycle[1:]):
        assert nxt in deps[node]
    assert "dependency cycle: " in str(info.value)


def test_self_dependency_is_a_cycle():
    with pytest.raises(CycleError) as info:
        layered_order(["a", "b"], {"a": ["a"]})
    assert info.value.cycle == ["a", "a"]


def test_find_cycle_follows_edges():
    # br0 has br1 as a port, br1 has br0: the config error validation prints.
    assert find_cycle({"br0": ["br1", "swp1"], "br1": ["br0"]}) == ["br0", "br1", "br0"]
    assert format_cycle(["br0", "br1", "br0"]) == "br0 -> br1 -> br0"


def test_find_cycle_accepts_pairs_and_skips_the_way_in():
    cycle = find_cycle([("x", "a"), ("a", "b"), ("b", "a")])
    assert cycle == ["a", "b", "a"]


def test_find_cycle_none_for_a_dag():
    assert find_cycle({"a": ["b"], "b": ["c"], "d": ["c"]}) is None


def test_format_cycle_with_names():
    assert format_cycle([("t1", "br0"), ("t1", "br0")], name=lambda k: k[1]) == "br0 -> br0"


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=120))))
def test_random_graphs_order_or_report_a_real_cycle(case):
    n, pairs = case
    deps: dict[int, list[int]] = {}
    for a, b in pairs:
        deps.setdefault(a, []).append(b)
    try:
        layers = layered_order(range(n), deps)
    except CycleError as error:
        cycle = error.cycle
        assert cycle[0] == cycle[-1] and len(cycle) >= 2
        for node, nxt in zip(cycle, cycle[1:]):
            assert nxt in deps[node]
        assert find_cycle(deps) is not None
        return
    assert find_cycle(deps) is None
    where = {node: i for i, layer in enumerate(layers) for node in layer}
    assert sorted(where) == list(range(n))
    for node, needs in deps.items():
        for need in needs:
            assert where[need] < where[node]
    for node, i in where.items():
        # Layered, not just topological: each node sits right after its
        # latest dependency.
        assert i == max((where[d] + 1 for d in deps.get(node, ())), default=0)
    assert all(layer == sorted(layer) for layer in layers)


def test_long_chains_need_no_recursion():
    n = 200_000
    chain = {i: [i - 1] for i in range(1, n)}
    layers = layered_order(range(n), chain)
    assert len(layers) == n
    chain[0] = [n - 1]
    cycle = find_cycle(chain)
    assert len(cycle) == n + 1 and cycle[0] == cycle[-1]
