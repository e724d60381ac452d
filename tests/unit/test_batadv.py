"""The batadv kind (kinds/batadv.py) without a kernel: what the corpus's
batman files compile to, the plan, and the generic netlink message
(kernel/batadv.py) as linux/batman_adv.h numbers it."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import compiled

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.batadv import (BATADV_ATTR_HOP_PENALTY, BATADV_ATTR_MESH_IFINDEX,
                                  BATADV_CMD_SET_MESH, _message, batadv_msg)
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


def test_a_hard_interfaces_own_hop_penalty_stays_refused():
    # ifupdown-ng's doc example: on a device without batman-ifaces (ifupdown2 ignores it).
    path = CORPUS / "ifupdown-ng" / "ifupdown-ng-doc-interfaces-batman-L75.interfaces"
    with pytest.raises(ConfigInvalid) as refused:
        compile_config(ConfigSource(path=str(path)))
    (error,) = [d for d in refused.value.diagnostics if d.severity == "error"]
    assert error.loc.line == 5 and "batman-hop-penalty applies to batadv interfaces" in error.message
    assert "ifupdown2 ignores the line there" in error.message


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
