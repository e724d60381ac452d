"""ifupdown2's bridge-family forms (issue 12, docs/compat.md): port options
written on the bridge (per port or for every port), VLAN lines under a bridge
that is not VLAN-aware, Proxmox's bridge-disable-mac-learning."""

from __future__ import annotations

import json

import pytest
from builders import compiled

from netcfg.compile.jsonform import model_to_json
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid


def errors(tmp_path, text: str) -> list[str]:
    with pytest.raises(ConfigInvalid) as e:
        compiled(tmp_path, text)
    return [d.format() for d in e.value.diagnostics if d.severity == "error"]


def the_error(tmp_path, text: str) -> str:
    """The one error compiling ``text`` reports."""
    found = errors(tmp_path, text)
    assert len(found) == 1, found
    return found[0]


def as_json(model) -> str:
    return json.dumps(model_to_json(model), sort_keys=True)


def test_the_bridge_forms_make_the_model_the_port_stanzas_make(tmp_path):
    on_bridge = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports swp1 swp2
            bridge-learning off
            bridge-pathcosts swp1=4 swp2=8
            bridge-portmcrouter swp2=enabled
            bridge-unicast-flood swp1=off
        auto swp2
        iface swp2
            bridge-learning on
        """, "a")
    on_ports = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports swp1 swp2
        auto swp1
        iface swp1
            bridge-learning off
            bridge-pathcosts 4
            bridge-unicast-flood off
        auto swp2
        iface swp2
            bridge-learning on
            bridge-pathcosts 8
            bridge-portmcrouter 2
        """, "b")
    assert as_json(on_bridge.model) == as_json(on_ports.model)
    bridge = on_bridge.model.interfaces[("", "br0")]
    assert not {"bridge-learning", "bridge-pathcosts"} & set(bridge.attrs)
    # each port's value is located at the bridge's line that gave it
    swp1 = on_bridge.model.interfaces[("", "swp1")]
    assert swp1.locs["bridge-pathcosts"].line == 5


def test_the_same_value_both_ways_is_one_value(tmp_path):
    result = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports swp1
            bridge-portprios swp1=10
        auto swp1
        iface swp1
            bridge-portprios 10
        """)
    assert result.model.interfaces[("", "swp1")].attrs["bridge-portprios"] == 10


def test_a_port_that_is_not_the_bridges_and_two_values_are_errors_at_their_lines(tmp_path):
    found = errors(tmp_path, """\
        auto br0
        iface br0
            bridge-ports swp1 swp2
            bridge-pathcosts swp3=4
            bridge-learning swp2=off
        auto swp2
        iface swp2
            bridge-learning on
        auto swp3
        iface swp3
        """)
    path = tmp_path / "interfaces"
    assert found == [
        f"{path}:4: error: br0: bridge-pathcosts names swp3, which is not a port of br0 "
        f"(bridge-ports: swp1 swp2)",
        f"{path}:5: error: br0: bridge-learning swp2=off contradicts swp2's own "
        f"bridge-learning on at {path}:8; give it once",
    ]


def test_a_non_port_option_has_no_per_port_form(tmp_path):
    error = the_error(tmp_path, """\
        auto br0
        iface br0
            bridge-ports swp1
            bridge-vlan-aware yes
            bridge-pvid swp1=10
        """)
    assert "bridge-pvid PORT=VALUE is a per-port form only" in error


def test_a_plain_value_in_the_json_form_is_every_ports_too(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps({"version": 1, "interfaces": [
        {"name": "br0", "kind": "bridge", "auto": True, "bridge-ports": ["swp1"],
         "bridge-learning": False}]}))
    model = compile_config(ConfigSource(path=str(path))).model
    assert model.interfaces[("", "swp1")].attrs["bridge-learning"] is False
    assert "bridge-learning" not in model.interfaces[("", "br0")].attrs


def test_vlan_lines_under_a_bridge_that_is_not_vlan_aware_are_warnings(tmp_path):
    result = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports swp1 vx42
            bridge-vids 100
        auto swp1
        iface swp1
            bridge-access 20
        auto vx42
        iface vx42
            vxlan-id 42
            bridge-vids 10 11
            bridge-pvid 10
        """)
    said = sorted((w.loc.line, w.attribute) for w in result.warnings)
    assert said == [(4, "bridge-vids"), (7, "bridge-access"), (11, "bridge-vids"),
                    (12, "bridge-pvid")]
    assert all("is not VLAN-aware" in w.message for w in result.warnings)


@pytest.mark.parametrize("line, said", [
    # Unlike the VLAN lines above, still an error on a bridge that is not VLAN-aware.
    ("bridge-mcast-vlan-snooping yes", "needs 'bridge-vlan-aware yes'"),
    # Proxmox's flag is a boolean.
    ("bridge-disable-mac-learning maybe", "bridge-disable-mac-learning"),
])
def test_a_bridge_line_that_is_refused(tmp_path, line, said):
    assert said in the_error(tmp_path, f"""\
        auto br0
        iface br0
            bridge-ports swp1
            {line}
        """)


def test_proxmox_disable_mac_learning_is_accepted_and_sets_nothing(tmp_path):
    result = compiled(tmp_path, """\
        iface ens18 inet manual
        auto vmbr0
        iface vmbr0 inet manual
            bridge-ports ens18
            bridge-disable-mac-learning 1
        """)
    assert result.warnings == []
    for obj in result.model.interfaces.values():
        assert "bridge-disable-mac-learning" not in obj.attrs
        assert "bridge-learning" not in obj.attrs


def test_l2protocol_tunnel_is_the_ports_group_forwarding_mask(tmp_path):
    from netcfg.compile.values import format_l2protocols, parse_l2protocols

    assert parse_l2protocols("stp lacp,lldp") == 0x4005 == parse_l2protocols("0x4005")
    assert format_l2protocols(0x4005) == "stp lacp lldp"
    assert format_l2protocols(0x4008) == "lldp 0x0008"
    assert parse_l2protocols(format_l2protocols(0x4008)) == 0x4008
    result = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports swp1 swp2
            bridge-l2protocol-tunnel swp1=lacp,stp swp2=lldp
        """)
    ports = result.model.interfaces
    assert ports[("", "swp1")].attrs["bridge-l2protocol-tunnel"] == 0x5
    assert ports[("", "swp2")].attrs["bridge-l2protocol-tunnel"] == 0x4000


@pytest.mark.parametrize("value, mask, said", [
    ("pvst", 0, "'pvst' does nothing here: it needs Cumulus Linux's kernel"),
    ("stp cdp", 0x1, "'cdp' does nothing here: it needs Cumulus Linux's kernel"),
    ("all", 0x4005, "'all' is stp, lacp and lldp here; its pvst and cdp do nothing: they need "
                    "Cumulus Linux's kernel"),
])
def test_l2protocols_of_cumulus_kernels_do_nothing_here_with_a_warning(tmp_path, value, mask,
                                                                      said):
    """Issue 22: a line (or part of one) that does nothing here is a warning
    at its line, which --strict refuses (tests/unit/test_unsupported_inert.py)."""
    from netcfg.compile.unsupported import inert_count

    result = compiled(tmp_path, f"""\
        auto br0
        iface br0
            bridge-ports swp1
        auto swp1
        iface swp1
            bridge-l2protocol-tunnel {value}
        """)
    assert result.model.interfaces[("", "swp1")].attrs["bridge-l2protocol-tunnel"] == mask
    [warning] = result.warnings
    assert warning.format().endswith(f":6: warning: swp1: bridge-l2protocol-tunnel: {said} "
                                     f"(ifupdown2 sets them in IFLA_BRPORT_GROUP_FWD_MASKHI, "
                                     f"which upstream Linux does not have and ignores; this "
                                     f"kernel forwards only the 01:80:C2:00:00:0X groups)")
    assert inert_count(result.warnings) == 1


@pytest.mark.parametrize("value, said", [
    ("0x2", "MAC pause"),  # a check of the port, not of the value
    ("bpdu", "expected stp, lacp, lldp"),
])
def test_l2protocols_this_kernel_cannot_forward_are_refused_at_the_line(tmp_path, value, said):
    error = the_error(tmp_path, f"""\
        auto br0
        iface br0
            bridge-ports swp1
        auto swp1
        iface swp1
            bridge-l2protocol-tunnel {value}
        """)
    assert ":6: error: swp1: bridge-l2protocol-tunnel" in error
    assert said in error


def test_a_vxlan_ports_learning_follows_its_bridge_learning_unless_written(tmp_path):
    result = compiled(tmp_path, """\
        auto vx10
        iface vx10
            vxlan-id 10
            bridge-learning off
        auto vx20
        iface vx20
            vxlan-id 20
            vxlan-learning yes
        auto vx30
        iface vx30
            vxlan-id 30
        auto br0
        iface br0
            bridge-ports vx10 vx20 vx30
            bridge-learning vx20=off
        """)
    attrs = {name: obj.attrs for (_, name), obj in result.model.interfaces.items()}
    assert attrs["vx10"]["vxlan-learning"] is False
    assert attrs["vx20"]["vxlan-learning"] is True and attrs["vx20"]["bridge-learning"] is False
    assert "vxlan-learning" not in attrs["vx30"]


def test_a_port_that_does_not_resolve_is_said_once(tmp_path):
    error = the_error(tmp_path, """\
        netns t1
        auto br0
        iface br0
            netns t1
            bridge-ports swp1
            bridge-pathcosts swp1=4
        """)
    assert "bridge-ports names swp1, which is not declared" in error
