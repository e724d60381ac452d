"""Open vSwitch's pure parts: ovs-options parsing, the OVS diff, its place in the plan.

The daemons are the kernel and VM tiers' (tests/kernel/test_ovs.py,
tests/vm/test_vm_ovs.py); here, values in and values out.
"""

from __future__ import annotations

import pytest
from builders import compiled
from ovs_env import proxmox_layout

from netcfg.kinds.ovs import OVS_BRIDGE, OVS_INTPORT, format_options, parse_options
from netcfg.model.errors import ConfigInvalid
from netcfg.model.model import ConfigObject, Model
from netcfg.plan import make_plan
from netcfg.plan.ovs import ovs_operations

# The SDN file apart, its QinQ port 802.1ad (the kernel and VM tiers apply it merged).
LAYOUT = proxmox_layout(qinq="802.1ad", sdn_stanza=True)


def ovs(name: str, **attrs) -> ConfigObject:
    return ConfigObject(section="iface", name=name, kind="ovs", netns="",
                        attrs={k.replace("_", "-"): v for k, v in attrs.items()})


def test_options_are_canonical_and_anything_unmapped_is_refused():
    assert format_options(parse_options("vlan_mode=trunk trunks=30,10,20,10 tag=5",
                                        OVS_INTPORT)) == "tag=5 trunks=10,20,30 vlan_mode=trunk"
    assert parse_options("stp_enable=false rstp_enable=true", OVS_BRIDGE) == {
        "rstp_enable": "true"}
    for text, message in (("bond_mode=balance-tcp", "'bond_mode' is not supported"),
                          ("tag=4096", "tag: '4096' is not a VLAN id"),
                          ("tag", "is not COLUMN=VALUE"),
                          ('tag="5"', "without quotes"),
                          ("tag=5 tag=6", "tag is given twice"),
                          ("other_config:qinq-ethtype=0x88a8", "not one of 802.1q, 802.1ad"),
                          ("other_config:foo=1", "'other_config:foo' is not supported")):
        with pytest.raises(ValueError, match=message):
            parse_options(text, OVS_INTPORT)
    with pytest.raises(ValueError, match="Bridge columns"):
        parse_options("tag=5", OVS_BRIDGE)


def test_proxmox_layout_compiles_with_the_sdn_file_joined(tmp_path):
    model = compiled(tmp_path, LAYOUT).model
    vmbr0 = model.interfaces[("", "vmbr0")]
    assert vmbr0.kind == "ovs" and vmbr0.attrs["ovs-ports"] == ["eth0", "sv_myzone"]
    assert model.interfaces[("", "sv_myzone")].attrs["ovs-options"] == (
        "other_config:qinq-ethtype=802.1ad tag=10 vlan_mode=dot1q-tunnel")


def test_refusals_are_located(tmp_path):
    with pytest.raises(ConfigInvalid) as invalid:
        compiled(tmp_path, LAYOUT.replace("ovs_ports sv_myzone", "ovs_ports sv2").replace(
            "tag=10", "lacp=active"))
    text = "\n".join(d.format() for d in invalid.value.diagnostics)
    assert "interfaces:20: error: sv_myzone: ovs-options: 'lacp' is not supported" in text
    # A joined attribute is located at its first line (as bridge-ports).
    assert "interfaces:10: error: vmbr0: ovs-ports names sv2" in text


def test_the_ovs_diff():
    want = Model(interfaces={("", "br"): ovs("br", ovs_type=OVS_BRIDGE),
                             ("", "p"): ovs("p", ovs_type=OVS_INTPORT, ovs_bridge="br",
                                            ovs_options="tag=5")})
    added = ovs_operations(want, Model())
    assert sorted(op.describe() for op in added) == [
        "+ ovs-add br ovs-type=OVSBridge",
        "+ ovs-add p ovs-type=OVSIntPort ovs-bridge=br ovs-options=tag=5"]
    assert ovs_operations(want, want) == []
    cleared = Model(interfaces={**want.interfaces, ("", "p"): ovs("p", ovs_type=OVS_INTPORT,
                                                                  ovs_bridge="br")})
    assert [op.describe() for op in ovs_operations(cleared, want)] == [
        "~ ovs-set p ovs-options= ovs-type=OVSIntPort"]
    retyped = Model(interfaces={**want.interfaces, ("", "p"): ovs("p", ovs_type="OVSPort",
                                                                  ovs_bridge="br")})
    assert [op.action for op in ovs_operations(retyped, want)] == ["ovs-del", "ovs-add"]
    assert [op.describe() for op in ovs_operations(Model(), want)] == [
        "- ovs-del br ovs-type=OVSBridge",
        "- ovs-del p ovs-type=OVSIntPort ovs-bridge=br ovs-options=tag=5"]


def test_netlink_waits_for_the_devices_ovs_makes(tmp_path):
    plan = make_plan(compiled(tmp_path, LAYOUT).model, Model())
    batch = {op.key: number for number, ops in enumerate(plan.batches) for op in ops}
    index = {(op.action, op.name): batch[op.key] for op in plan.operations}
    assert index[("ovs-add", "sv_myzone")] < index[("master-set", "sv_myzone")]
    assert index[("ovs-add", "vmbr0")] < index[("addr-add", "vmbr0")]
    assert index[("ovs-add", "vmbr0")] < index[("link-up", "vmbr0")]
    # The rows of one apply go in one transaction: the same batch.
    assert len({index[(a, n)] for a, n in index if a == "ovs-add"}) == 1


def test_drift_reports_say_what_ovs_lacks_at_the_line(tmp_path):
    """query --check and netcfgd's drift reports explain every operation."""
    from netcfg.plan.drift import explain

    model = compiled(tmp_path, LAYOUT).model
    current = Model(interfaces={("", "sv_myzone"): ovs("sv_myzone", ovs_type=OVS_INTPORT,
                                                       ovs_bridge="vmbr0", ovs_options="tag=10")})
    ops = {op.key: op for op in ovs_operations(model, current)}
    where, message = explain(ops[("ovs-set", "", "sv_myzone", "")], model)
    assert (where.line, message) == (20, "sv_myzone: configured ovs-options "
                                         "other_config:qinq-ethtype=802.1ad tag=10 "
                                         "vlan_mode=dot1q-tunnel ovs-type OVSIntPort in Open "
                                         "vSwitch, which has other values")
    where, message = explain(ops[("ovs-add", "", "vmbr0", "")], model)
    assert where.line == 9 and "Open vSwitch has no such bridge or port" in message
    gone = ovs_operations(Model(), current)
    assert "no longer configured" in explain(gone[0], Model())[1]
