"""ifupdown-ng's dialect (issue 22, compile/ng_dialect.py): `use` lines netcfg
carries out become its own lines, `requires` is an ordering dependency the
plan and the hooks keep, a loop is an error at its line, and executors
netcfg does not run are warnings (--strict: errors). The kernel tier's
tests/kernel/test_ng_dialect.py applies them."""

from __future__ import annotations

import pytest

from builders import brought_up, compiled

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.compile.unsupported import InertLine, strict_errors
from netcfg.ifupdown.actions import brought_up as ifup_brought_up
from netcfg.model.errors import ConfigInvalid
from netcfg.model.model import Model
from netcfg.plan import make_plan
from netcfg.plan.hooks import requires_first


def _errors(tmp_path, text: str) -> str:
    with pytest.raises(ConfigInvalid) as caught:
        compiled(tmp_path, text)
    return str(caught.value)


def _iface(result, name: str):
    return result.model.interfaces[("", name)]


def test_use_dhcp_is_inet_dhcp_with_the_dhcp_executors_options(tmp_path):
    result = compiled(tmp_path, """\
        auto eth0
        iface eth0
            use dhcp
            dhcp-hostname web1
            dhcp-client_id 0100BEEF
            dhcp-vendor Acme
            dhcp-leasetime 86400
            dhcp-program dhcpcd
        """)
    attrs = _iface(result, "eth0").attrs
    assert attrs["inet"] == "dhcp"
    assert (attrs["hostname"], attrs["client"], attrs["vendor"], attrs["leasetime"]) == \
        ("web1", "0100BEEF", "Acme", 86400)
    inert = [d for d in result.warnings if isinstance(d, InertLine)]
    assert [(d.loc.line, d.attribute) for d in inert] == [(8, "dhcp-program")]
    assert "netcfg runs dhclient" in inert[0].message


def test_use_dhcp_on_a_static_stanza_is_an_error_at_the_line(tmp_path):
    text = "auto eth0\niface eth0 inet static\n    address 192.0.2.1/24\n    use dhcp\n"
    assert ":4: error: eth0: use dhcp contradicts inet static" in _errors(tmp_path, text)


def test_ipv6_executors_are_accept_ra_and_privext(tmp_path):
    result = compiled(tmp_path, """\
        auto a
        iface a
            use ipv6-ra
            use ipv6-tempaddr
        auto b
        iface b
            use ipv6-ra
            forward-ipv6 yes
            ipv6-autoconf 0
        auto c
        iface c
            use ipv6-ra
            accept-ra 0
        """)
    a, b, c = (_iface(result, n).attrs for n in "abc")
    assert (a["accept-ra"], a["privext"]) == (1, 2)
    assert (b["accept-ra"], b["ip6-forward"], b["autoconf"]) == (2, True, False)
    assert c["accept-ra"] == 0   # the stanza's own line wins
    assert not [d for d in result.warnings if isinstance(d, InertLine)]


def test_ng_names_of_netcfg_lines(tmp_path):
    result = compiled(tmp_path, """\
        auto bond0
        iface bond0
            bond-members eth0 eth1
            bond-mode 802.3ad
        auto red
        iface red
            vrf-table 10
        auto eth2
        iface eth2
            vrf-member red
        """)
    assert _iface(result, "bond0").kind == "bond"
    assert _iface(result, "bond0").attrs["bond-slaves"] == ["eth0", "eth1"]
    assert _iface(result, "eth2").attrs["vrf"] == "red"


def test_use_bridge_takes_requires_as_ports_and_use_bond_makes_the_bond(tmp_path):
    # ifupdown-ng's own example (doc/interfaces.scd, EXAMPLES).
    result = compiled(tmp_path, """\
        auto br0
        iface br0
            use bridge
            requires bond0
            address 203.0.113.2/24

        iface bond0
            use bond
            requires eth0 eth1
            bond-mode 802.3ad
        """)
    br0, bond0 = _iface(result, "br0"), _iface(result, "bond0")
    assert br0.kind == "bridge" and br0.attrs["bridge-ports"] == ["bond0"]
    assert bond0.kind == "bond" and not bond0.attrs.get("bond-slaves")
    assert bond0.attrs["requires"] == ["eth0", "eth1"]
    # Required names with no stanza are the host's devices, brought up.
    assert {"br0", "bond0", "eth0", "eth1"} <= brought_up(result)
    assert _iface(result, "eth0").kind == "physical"
    members = [d for d in result.warnings if d.attribute == "requires"]
    assert len(members) == 1 and "write 'bond-members eth0 eth1'" in members[0].message
    # Both use lines were carried out: no warning says they do nothing.
    assert not [d for d in result.warnings if isinstance(d, InertLine)]


def test_requires_loop_is_an_error_at_the_line(tmp_path):
    text = "auto a\niface a\n    use link\n    requires b\nauto b\niface b\n    requires a\n"
    err = _errors(tmp_path, text)
    assert ":4: error: a: requires loop a -> b -> a" in err
    assert "ifupdown-ng breaks such a loop" in err


def test_requires_loop_through_a_lower_device(tmp_path):
    text = ("auto br0\niface br0\n    bridge-ports none\n    requires br0.5\n"
            "auto br0.5\niface br0.5\n    vlan-raw-device br0\n    vlan-id 5\n")
    assert ":4: error: br0: requires loop br0 -> br0.5 -> br0" in _errors(tmp_path, text)


CHAIN = """\
    auto ng-a
    iface ng-a
        bridge-ports none
        requires ng-b
        post-up true
    iface ng-b
        bridge-ports none
        requires ng-c
        post-up true
    iface ng-c
        bridge-ports none
        post-up true
    """


def _batch_of(plan, action: str) -> dict[str, int]:
    return {op.name: n for n, batch in enumerate(plan.batches) for op in batch
            if op.action == action}


def test_plan_creates_and_sets_up_required_devices_first(tmp_path):
    desired = compiled(tmp_path, CHAIN).model
    plan = make_plan(desired, Model())
    added, up = _batch_of(plan, "link-add"), _batch_of(plan, "link-up")
    assert added["ng-c"] < added["ng-b"] < added["ng-a"]
    assert up["ng-c"] < up["ng-b"] < up["ng-a"]
    # The hooks' order: the required interface's up lines first.
    keys = [("", "ng-a"), ("", "ng-b"), ("", "ng-c")]
    assert requires_first(keys, desired) == [("", "ng-c"), ("", "ng-b"), ("", "ng-a")]
    # Without requires the three come up together.
    plain = make_plan(compiled(tmp_path, CHAIN.replace("        requires ng-b\n", "")
                               .replace("        requires ng-c\n", "")).model, Model())
    assert len(set(_batch_of(plain, "link-up").values())) == 1


def test_a_bridge_that_requires_its_port_has_no_cycle(tmp_path):
    # The port joins the bridge before it is set up: "created after" only.
    desired = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports vp0
            requires vp0
        auto vp0
        iface vp0
            link-type veth
            veth-peer-name vp1
        """).model
    plan = make_plan(desired, Model())
    assert _batch_of(plan, "link-up")["vp0"] < _batch_of(plan, "link-up")["br0"]


def test_ifup_name_brings_what_it_requires(tmp_path):
    model = compiled(tmp_path, CHAIN.replace("    auto ng-a\n", "")).model
    up = ifup_brought_up(model, ["ng-a"])
    assert {name for (_, name), obj in up.interfaces.items() if obj.auto} == \
        {"ng-a", "ng-b", "ng-c"}


def test_devices_only_an_executor_makes_are_left_alone(tmp_path):
    path = tmp_path / "interfaces"
    path.write_text("auto foo foo-ifb wg-foo\niface foo\n    use cake\n"
                    "iface foo-ifb\n    use cake\n    cake-ingress true\n    use cake-ingress\n"
                    "    cake-ingress-dev foo\niface wg-foo\n    use wireguard-quick\n")
    result = compile_config(ConfigSource(path=str(path)))
    assert set(result.model.interfaces) == {("", "foo")}
    inert = {(d.loc.line, d.attribute): d.message for d in result.warnings
             if isinstance(d, InertLine)}
    assert "foo-ifb: use cake-ingress does nothing here" in inert[(7, "use")]
    assert "wg-foo: use wireguard-quick does nothing here" in inert[(10, "use")]
    assert (3, "use") in inert
    assert all(d.severity == "error" for d in strict_errors(
        [d for d in result.warnings if isinstance(d, InertLine)]))


def test_ppp_provider_is_inet_ppp_and_vxrd_is_inert(tmp_path):
    result = compiled(tmp_path, """\
        auto ppp0
        iface ppp0
            requires eth0
            ppp-provider isp
        auto lo
        iface lo inet loopback
            vxrd-src-ip 10.0.0.11
        """)
    inert = {(d.loc.line, d.attribute): d.message for d in result.warnings
             if isinstance(d, InertLine)}
    assert "pon isp" in inert[(2, "inet")]
    assert "Cumulus Linux's vxrd" in inert[(7, "vxrd-src-ip")]
    assert ("", "ppp0") not in result.model.interfaces


def test_requires_of_a_device_another_program_makes_is_taken_out(tmp_path):
    # pppd makes ppp0: netcfg cannot wait for it, nor take it for a NIC.
    result = compiled(tmp_path, """\
        auto ppp0 tun0
        iface ppp0 inet ppp
            provider isp
        iface tun0
            requires ppp0
        """)
    assert set(result.model.interfaces) == {("", "tun0")}
    assert not _iface(result, "tun0").attrs.get("requires")
    inert = {(d.loc.line, d.attribute): d.message for d in result.warnings
             if isinstance(d, InertLine)}
    assert "tun0: requires ppp0 does nothing here" in inert[(5, "requires")]
