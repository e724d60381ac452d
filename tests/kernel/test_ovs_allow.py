"""`allow-ovs brout` and no ovs_type on brout, whose port eth1 names it in
ovs_bridge (issue 22, CedrX/network-interfaces-openvswitch): netcfg makes it
an OVS bridge with eth1 on it, read back with ovs-vsctl; a second apply
sends nothing. The userspace datapath (the host has no openvswitch module),
so brout's stanza carries ovs_options datapath_type=netdev, which says no
role: it is still inferred (tests/vm/test_vm_ovs.py has the kernel one)."""

from __future__ import annotations

import json
import subprocess

import pytest
from builders import compiled
from ovs_env import needs_ovs, run_openvswitch

from netcfg.apply.execute import apply

pytestmark = needs_ovs
DEVICES = ("eth1", "eth1p", "brout", "ovs-netdev")
FILE = """\
    auto brout
    allow-ovs brout
    iface brout inet manual
        ovs_options datapath_type=netdev
        address 192.168.2.1/24

    auto eth1
    allow-brout eth1
    iface eth1 inet manual
        ovs_bridge brout
        ovs_type OVSPort
    """


@pytest.fixture
def openvswitch(tmp_path, monkeypatch):
    with run_openvswitch(tmp_path / "ovs", monkeypatch, DEVICES) as vsctl:
        yield vsctl


def test_allow_ovs_bridge_without_ovs_type_is_made_and_read_back(openvswitch, session,
                                                                  tmp_path):
    vsctl = openvswitch
    subprocess.run(["ip", "link", "add", "eth1", "type", "veth", "peer", "name", "eth1p"],
                   check=True)
    result = compiled(tmp_path, FILE)
    assert any("taken as an Open vSwitch bridge" in w.message for w in result.warnings)
    first = apply(result.model, session)
    assert first.verified
    assert vsctl("br-exists", "brout") == ""
    assert vsctl("list-ports", "brout").split() == ["eth1"]
    brout = json.loads(subprocess.run(["ip", "-j", "addr", "show", "dev", "brout"], check=True,
                                      capture_output=True, text=True).stdout)[0]
    assert "192.168.2.1" in [a["local"] for a in brout["addr_info"]]
    second = apply(compiled(tmp_path, FILE).model, session)
    assert second.verified and second.requests == 0 and len(second.plan) == 0
