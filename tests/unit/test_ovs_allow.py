"""`allow-ovs NAME` and no ovs_type on NAME, when a port's ovs_bridge names
it (issue 22, CedrX/network-interfaces-openvswitch): an OVSBridge, with a
warning at the allow-ovs line (netcfg/compile/ovs_allow.py)."""

from __future__ import annotations

import pytest
from builders import compiled

from netcfg.model.errors import ConfigInvalid
from netcfg.plan import make_plan
from netcfg.model.model import Model

BROUT = """\
    auto brout
    allow-ovs brout
    iface brout inet manual
    {brout_extra}
    auto eth1
    allow-brout eth1
    iface eth1 inet manual
        ovs_bridge brout
        ovs_type OVSPort
    """


def text(allow: bool = True, extra: str = "") -> str:
    out = BROUT.format(brout_extra=extra)
    return out if allow else out.replace("    allow-ovs brout\n", "")


def test_a_bridge_a_port_names_and_allow_ovs_lists_is_an_ovs_bridge(tmp_path):
    result = compiled(tmp_path, text())
    brout = result.model.interfaces[("", "brout")]
    assert brout.kind == "ovs" and brout.attrs["ovs-type"] == "OVSBridge"
    (warning,) = [w for w in result.warnings if "Open vSwitch bridge" in w.message]
    assert warning.loc.line == 2 and warning.attribute == "ovs-type"
    assert "eth1's ovs_bridge names it (line 8)" in warning.message
    plan = make_plan(result.model, Model())
    assert ("ovs-add", "brout") in [(op.action, op.name) for op in plan.operations]


def test_ovs_options_alone_do_not_say_the_role_either(tmp_path):
    result = compiled(tmp_path, text(extra="    ovs_options datapath_type=netdev\n"))
    brout = result.model.interfaces[("", "brout")]
    assert brout.attrs["ovs-type"] == "OVSBridge"
    assert brout.attrs["ovs-options"] == "datapath_type=netdev"


def test_without_allow_ovs_the_refusal_stays(tmp_path):
    with pytest.raises(ConfigInvalid) as refused:
        compiled(tmp_path, text(allow=False))
    (error,) = [d for d in refused.value.diagnostics if d.severity == "error"]
    assert error.loc.line == 7
    assert "ovs-bridge brout is a physical, not an OVS bridge" in error.message


def test_allow_ovs_alone_guesses_nothing(tmp_path):
    result = compiled(tmp_path, "allow-ovs br9\niface br9 inet manual\n")
    assert result.model.interfaces[("", "br9")].kind == "physical"
    assert not [w for w in result.warnings if "Open vSwitch" in w.message]


def test_a_written_kind_is_not_overridden(tmp_path):
    with pytest.raises(ConfigInvalid) as refused:
        compiled(tmp_path, text(extra="    bridge-ports none\n"))
    assert any("ovs-bridge brout is a bridge, not an OVS bridge" in d.message
               for d in refused.value.diagnostics)
