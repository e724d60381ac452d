"""ifupdown2's implicit behaviour at compile time (issue 12, docs/compat.md):
what an up device needs comes up with it, transitively, and what stays down
is said."""

from __future__ import annotations

import copy
import textwrap

import pytest
from builders import brought_up, compiled

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid


@pytest.mark.parametrize("text, up", [
    pytest.param("""\
        iface eno1 inet manual
        iface eno2 inet manual
        iface eno3 inet manual
        auto vmbr0
        iface vmbr0
            bridge-ports eno1 eno2.20
        auto eno3.30
        iface eno3.30
        """, {"vmbr0", "eno1", "eno2", "eno2.20", "eno3", "eno3.30"},
        id="ports-and-lower-devices"),
    # Validate records what each object needs while resolving references
    # once; the bring-up walks those records transitively (vmbr1 is not auto).
    pytest.param("""\
        iface eno1 inet manual
        iface eno2 inet manual
        iface bond0
            bond-slaves eno1 eno2
        iface bond0.10
        auto vmbr0
        iface vmbr0
            bridge-ports bond0.10
        iface eno3 inet manual
        iface vmbr1
            bridge-ports eno3
        """, {"vmbr0", "bond0.10", "bond0", "eno1", "eno2"},
        id="dependencies-of-dependencies"),
])
def test_what_an_up_device_needs_comes_up(tmp_path, text, up):
    result = compiled(tmp_path, text)
    assert brought_up(result) == up
    assert result.warnings == []


def test_an_auto_line_without_a_stanza_brings_nothing_up_and_says_so(tmp_path):
    """`auto eth0` alone (Debian's reference file, issue 22): ifupdown2's `ifup -a` brings
    up only stanzas an auto line names, ifupdown says "Ignoring unknown interface"; a
    bare name that is a bridge's port still comes up with its bridge."""
    result = compiled(tmp_path, """\
        auto eth0
        auto eno1
        auto vmbr0
        iface vmbr0
            bridge-ports eno1
        """)
    assert brought_up(result) == {"vmbr0", "eno1"}
    assert not any(obj.name == "eth0" for obj in result.model.interfaces.values())
    assert [w for w in result.warnings if "auto eth0: no stanza declares eth0" in w.message]
    assert not [w for w in result.warnings if "eno1" in w.message]


def test_a_ports_own_address_and_dhcp_are_ignored_with_a_warning(tmp_path):
    """ifupdown2 ignores an address or DHCP on a bridge port or bond slave ('Assigning an
    IP address is not allowed on enslaved interfaces'); a VRF's slave keeps its address.
    netcfg ran a DHCP client on Proxmox's `iface eno1 inet dhcp` under vmbr0 (issue 22)."""
    result = compiled(tmp_path, """\
        allow-hotplug eno1
        iface eno1 inet dhcp
        auto eno2
        iface eno2 inet static
            address 10.0.0.1/24
            gateway 10.0.0.254
        auto vmbr0
        iface vmbr0 inet dhcp
            bridge-ports eno1 eno2
        auto red
        iface red
            vrf-table 1001
        auto eno3
        iface eno3 inet static
            address 10.0.3.1/24
            vrf red
        """)
    objs = {obj.name: obj for obj in result.model.interfaces.values()}
    assert objs["eno1"].attrs.get("inet") == "manual"
    assert "address" not in objs["eno2"].attrs and "gateway" not in objs["eno2"].attrs
    assert objs["vmbr0"].attrs.get("inet") == "dhcp"
    assert objs["eno3"].attrs["address"] == ["10.0.3.1/24"]
    said = [(w.loc.line, w.message.split(":")[0]) for w in result.warnings
            if "not allowed on enslaved interfaces" in w.message]
    assert said == [(2, "inet dhcp ignored (no DHCP client runs on it)"),
                    (5, "address 10.0.0.1/24 ignored"), (6, "gateway 10.0.0.254 ignored")]


def test_a_port_of_a_bridge_that_stays_down_stays_down(tmp_path):
    result = compiled(tmp_path, """\
        iface eno1 inet manual
        iface vmbr0
            bridge-ports eno1
        """)
    assert not any(obj.auto for obj in result.model.interfaces.values())


def test_a_needed_device_with_link_down_is_a_warning(tmp_path):
    # A warning for each device that needs it, on its line (a VLAN on it is
    # an error: test_an_up_vlan_on_a_link_down_device_is_an_error).
    result = compiled(tmp_path, """\
        iface eno1 inet manual
            link-down yes
        auto vmbr0
        iface vmbr0
            bridge-ports eno1
        """)
    assert not result.model.iface("", "eno1").auto
    assert [w.format() for w in result.warnings] == [
        f"{tmp_path}/interfaces:2: warning: eno1: 'link-down yes' keeps it down, and {name} "
        f"({attribute}, {tmp_path}/interfaces:{line}) needs it up: {name} will carry no "
        f"traffic through it"
        for name, attribute, line in (("vmbr0", "bridge-ports", 5),)]


@pytest.mark.parametrize("auto", ["", "auto eno1\n"])
def test_an_up_vlan_on_a_link_down_device_is_an_error(tmp_path, auto):
    """vlan_dev_open: the kernel answers ENETDOWN to bringing a VLAN up while
    its real device is down (no loose binding), so `check` must not say ok;
    whether or not the lower device is on an auto line."""
    path = tmp_path / "interfaces"
    path.write_text(auto + "iface eno1 inet manual\n    link-down yes\n"
                    "auto eno1.10\niface eno1.10\n")
    with pytest.raises(ConfigInvalid) as refused:
        compile_config(ConfigSource(path=str(path)))
    line = 3 if auto else 2
    assert [d.format() for d in refused.value.diagnostics if d.severity == "error"] == [
        f"{path}:{line}: error: eno1: 'link-down yes' keeps it down, and the kernel refuses "
        f"to bring up a VLAN on a down device (Network is down): eno1.10 (vlan-raw-device, "
        f"{path}:{line + 2}) is up. Remove 'link-down yes', or give eno1.10 'link-down yes' "
        f"too"]
    # Down with it: nothing to refuse.
    path.write_text(auto + "iface eno1 inet manual\n    link-down yes\n"
                    "auto eno1.10\niface eno1.10\n    link-down yes\n")
    compile_config(ConfigSource(path=str(path)))


def test_link_down_stops_the_chain_with_one_warning(tmp_path):
    result = compiled(tmp_path, """\
        iface eno1 inet manual
        iface bond0
            bond-slaves eno1
            link-down yes
        iface mv0
            link-type macvlan
            macvlan-raw-device bond0
        auto vmbr0
        iface vmbr0
            bridge-ports mv0
        """)
    up = brought_up(result)
    # A macvlan comes up on a down lower device (LOWERLAYERDOWN), a VLAN
    # would not (test_an_up_vlan_on_a_link_down_device_is_an_error).
    assert up == {"vmbr0", "mv0"}
    assert [w.format().split(": warning: ")[1] for w in result.warnings] == [
        f"bond0: 'link-down yes' keeps it down, and mv0 (macvlan-raw-device, "
        f"{result.model.iface('', 'mv0').where('macvlan-raw-device')}) needs it up: "
        f"mv0 will carry no traffic through it"]


def test_an_address_on_a_device_left_down_is_a_warning(tmp_path):
    result = compiled(tmp_path, """\
        iface eth1 inet static
            address 192.0.2.1/24
        """)
    assert len(result.warnings) == 1
    assert "eth1: its addresses are set but it stays down" in result.warnings[0].format()


def test_templates_are_looked_up_in_ifupdown2s_template_path(tmp_path, monkeypatch):
    from netcfg.compile import pipeline

    lookup = tmp_path / "ifupdown2-templates"
    lookup.mkdir()
    (lookup / "bridges.tmpl").write_text(textwrap.dedent("""\
        <%def name="vmbr(n)">
        auto vmbr${n}
        iface vmbr${n}
            bridge-ports none
        </%def>
        """))
    monkeypatch.setattr(pipeline, "IFUPDOWN2_TEMPLATES", str(lookup))   # the default path
    result = compiled(tmp_path, """\
        <%namespace name="b" file="bridges.tmpl"/>
        % for n in range(2):
        ${b.vmbr(n)}
        % endfor
        """)
    assert sorted(name for _, name in result.model.interfaces) == ["vmbr0", "vmbr1"]


def test_daemon_only_attributes_are_refused_naming_the_daemon(tmp_path):
    """Those ifupdown2 applies and netcfg does not; mstpctl-* and clagd-*, which
    do nothing on a Debian host, are warnings (tests/unit/test_unsupported_inert.py)."""
    from netcfg.model.errors import ConfigInvalid

    for attribute, daemon in (("batman-gw-mode client", "batctl"),
                              # OVS is configured (docs/ovs.md); its ovs-vsctl lines are not.
                              ("ovs-extra set bridge br0 stp_enable=true", "ovs-vsctl")):
        try:
            compiled(tmp_path, f"""\
                auto br0
                iface br0
                    bridge-ports none
                    {attribute}
                """)
        except ConfigInvalid as invalid:
            text = "\n".join(d.format() for d in invalid.diagnostics)
        else:
            raise AssertionError(f"{attribute} accepted")
        assert f"{tmp_path}/interfaces:4: error: br0: {attribute.split()[0]} is not supported" in text
        assert daemon in text


def test_inet6_auto_leaves_the_slaac_addresses_to_the_kernel(tmp_path):
    """`inet6 auto` is SLAAC, the kernel's defaults (accept_ra 1, autoconf 1):
    what it configures is not netcfg's to remove; no DHCP client for it."""
    from netcfg.apply.dhcp import wanted_leases
    from netcfg.plan.diff import diff

    result = compiled(tmp_path, """\
        auto eth0
        iface eth0 inet dhcp
        iface eth0 inet6 auto
        """)
    model = result.model
    current = copy.deepcopy(model)
    current.iface("", "eth0").attrs["address"] = ["2001:db8::5054:ff:fe12:3456/64"]
    assert [op.action for op in diff(model, current)] == []
    assert {lease.family for lease in wanted_leases(model)} == {"4"}


def test_imperative_lines_run_when_the_plan_brings_their_interface_up_or_down(tmp_path):
    from netcfg.plan import make_plan
    from netcfg.plan.hooks import hook_runs

    text = """\
        auto eth0
        iface eth0
            link-down {down}
            pre-up echo a
            post-up echo b
            pre-down echo c
            post-down echo d
        """
    up = compiled(tmp_path, text.format(down="no")).model
    down = compiled(tmp_path, text.format(down="yes")).model
    state_up = copy.deepcopy(up)
    # Brought up: the up phases; brought down: the down phases; neither: none.
    runs = hook_runs(up, make_plan(up, copy.deepcopy(down)).operations)
    assert [(r.direction, r.lines) for r in runs] == [
        ("up", (("pre-up", "echo a"), ("post-up", "echo b")))]
    runs = hook_runs(down, make_plan(down, state_up).operations)
    assert [(r.direction, r.lines) for r in runs] == [
        ("down", (("pre-down", "echo c"), ("post-down", "echo d")))]
    assert hook_runs(up, make_plan(up, state_up).operations) == []
    assert make_plan(up, copy.deepcopy(down)).notes[-2:] == [
        "eth0: pre-up runs: echo a", "eth0: post-up runs: echo b"]



def test_imperative_lines_are_said_once_for_the_whole_config(tmp_path):
    """One warning, at the first such line in the file, counting the
    interfaces; the implied ones (ports, subinterfaces, veth peers) hold
    none, so only the stanzas are looked at."""
    result = compiled(tmp_path, """\
        auto br0
        iface br0
            bridge-ports eno1.10 eno2
            post-down echo b
        auto v0
        iface v0
            link-type veth
            veth-peer-name v1
            up echo a
            pre-up echo c
        """)
    assert [w.format() for w in result.warnings] == [
        f"{tmp_path}/interfaces:4: warning: the config has imperative lines (pre-up, up, "
        f"post-up, pre-down, down, post-down) on 2 interface(s), first br0's post-down: apply "
        f"runs them as ifupdown2 does, but check cannot know what they do and a revert "
        f"cannot undo it"]

def test_address_virtual_names_and_one_digit_octets(tmp_path):
    model = compiled(tmp_path, """\
        auto bridge.1
        iface bridge.1
            address-virtual 42:38:39:FF:00:1 10.7.192.1/24
        auto bridge
        iface bridge
            bridge-ports none
            bridge-vlan-aware yes
            bridge-vids 1
        """).model
    macvlan = model.iface("", "bridge-1-v0")
    assert macvlan.kind == "macvlan" and macvlan.auto
    assert macvlan.attrs["hwaddress"] == "42:38:39:ff:00:01"
    assert macvlan.attrs["macvlan-raw-device"] == "bridge.1"
    assert macvlan.attrs["address"] == ["10.7.192.1/24"]
    # ifupdown2's address metric (addressvirtual_with_route_metric) and no DAD.
    assert (macvlan.attrs["address-metric"], macvlan.attrs["accept-dad"],
            macvlan.attrs["dad-transmits"]) == (1024, 0, 0)


def test_address_virtual_below_ipv6s_mtu_has_no_dad_settings(tmp_path):
    """Below an MTU of 1280 the kernel has no IPv6 on the macvlan, and no DAD
    sysctls to write: the macvlan gets only the metric."""
    model = compiled(tmp_path, """\
        auto eth0
        iface eth0
            mtu 1200
            address-virtual none 10.7.192.1/24
        """).model
    macvlan = model.iface("", "eth0-v0")
    assert macvlan.attrs["address-metric"] == 1024 and macvlan.attrs["mtu"] == 1200
    assert "accept-dad" not in macvlan.attrs and "dad-transmits" not in macvlan.attrs
