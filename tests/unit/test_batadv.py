"""The batadv kind (kinds/batadv.py) without a kernel: what the corpus's
batman files compile to, the plan, and the generic netlink message
(kernel/batadv.py) as linux/batman_adv.h numbers it."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import compiled

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.batadv import (BATADV_ATTR_HOP_PENALTY, BATADV_ATTR_MESH_IFINDEX,
                                  BATADV_CMD_GET_HARDIF, BATADV_CMD_SET_HARDIF,
                                  BATADV_CMD_SET_MESH, _message,
                                  batadv_msg)
from netcfg.model.errors import ConfigInvalid
from netcfg.model.model import Model
from netcfg.plan import make_plan

CORPUS = Path(__file__).parents[1] / "compat" / "corpus"


def test_ifupdown2_example_compiles_to_a_mesh_with_its_hard_interfaces():
    path = CORPUS / "ifupdown2" / "examples-batman_adv-interfaces_batman.interfaces"
    model = compile_config(ConfigSource(path=str(path))).model
    bat0 = model.interfaces[("", "bat0")]
    assert bat0.kind == "batadv" and bat0.attrs["batman-ifaces"] == ["tap0", "tap1"]
    assert model.masters[("", "tap0")] == ("", "bat0")
    ops = [op.describe() for op in make_plan(model, Model()).operations]
    assert "+ link-add bat0 kind=batadv batman-hop-penalty=23" in ops
    assert "+ master-set tap1 master=bat0" in ops
    # The ignore regex is no kernel state: nothing is sent for it.
    assert not [o for o in ops if "ignore-regex" in o]


def test_values_are_checked_at_their_line(tmp_path):
    with pytest.raises(ConfigInvalid) as refused:
        compiled(tmp_path, "auto bat0\niface bat0\n    batman-ifaces eth0\n"
                           "    batman-hop-penalty 256\n    batman-ifaces-ignore-regex (\n")
    errors = {d.loc.line: d.message for d in refused.value.diagnostics if d.severity == "error"}
    assert "batman-hop-penalty" in errors[4] and "is not a regular expression" in errors[5]


def test_a_hard_interfaces_own_hop_penalty_alone_does_nothing_with_a_warning():
    # ifupdown-ng's doc example alone: vlan1234 is on no mesh, and ifupdown-ng's batman
    # executor sets a hardif's penalty only for the members a mesh lists.
    path = CORPUS / "ifupdown-ng" / "ifupdown-ng-doc-interfaces-batman-L75.interfaces"
    compiled_ = compile_config(ConfigSource(path=str(path)))
    (warning,) = [d for d in compiled_.warnings if d.attribute == "batman-hop-penalty"]
    assert warning.loc.line == 5 and "no mesh lists in batman-ifaces" in warning.message
    assert "batman-hop-penalty" not in compiled_.model.interfaces[("", "vlan1234")].attrs


def test_a_hard_interfaces_own_hop_penalty_is_set_after_it_joins_its_mesh(tmp_path):
    # The two doc examples together (L63's mesh lists vlan1234, L75 its penalty).
    model = compiled(tmp_path, "auto bat0\niface bat0\n    batman-ifaces tap0 vlan1234\n"
                               "    batman-hop-penalty 5\nauto vlan1234\niface vlan1234\n"
                               "    mtu 1560\n    batman-hop-penalty 10\n").model
    assert model.interfaces[("", "vlan1234")].attrs["batman-hop-penalty"] == 10
    ops = [op.describe() for op in make_plan(model, Model()).operations]
    joined = ops.index("+ master-set vlan1234 master=bat0")
    assert ops.index("~ link-set vlan1234 port batman-hop-penalty=10") > joined
    assert "+ link-add bat0 kind=batadv batman-hop-penalty=5" in ops


def test_set_hardif_message_numbers():
    msg = _message(BATADV_CMD_SET_HARDIF, 7, 10, hard_ifindex=9)
    msg.encode()
    decoded = batadv_msg()(msg.data)
    decoded.decode()
    assert decoded["cmd"] == 16 == BATADV_CMD_SET_HARDIF
    assert BATADV_CMD_GET_HARDIF == 5    # linux/batman_adv.h: after GET_ROUTING_ALGOS
    assert decoded.get_attr("BATADV_ATTR_MESH_IFINDEX") == 7
    assert decoded.get_attr("BATADV_ATTR_HARD_IFINDEX") == 9
    assert decoded.get_attr("BATADV_ATTR_HOP_PENALTY") == 10


def test_set_mesh_message_numbers():
    msg = _message(BATADV_CMD_SET_MESH, 7, 23)
    msg.encode()
    decoded = batadv_msg()(msg.data)
    decoded.decode()
    assert decoded["cmd"] == 15 == BATADV_CMD_SET_MESH
    assert decoded.get_attr("BATADV_ATTR_MESH_IFINDEX") == 7
    assert decoded.get_attr("BATADV_ATTR_HOP_PENALTY") == 23
    # Type-length-value: u32 ifindex (attribute 3), u8 hop penalty (attribute 53).
    body = bytes(msg.data[20:])
    assert body[:8] == bytes([8, 0, BATADV_ATTR_MESH_IFINDEX, 0, 7, 0, 0, 0])
    assert body[8:13] == bytes([5, 0, BATADV_ATTR_HOP_PENALTY, 0, 23])
