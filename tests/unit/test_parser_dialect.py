"""The dialect of real files beyond the corpus (issue 22): inline comments,
as hosting providers' Proxmox guides write them, and several stanzas for one
interface, merged as ifupdown2 merges them."""

from __future__ import annotations

import textwrap

import pytest

from netcfg.compile.parser import parse, strip_inline_comment
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.compile.render import RenderedSource
from netcfg.model.errors import ConfigInvalid, Report


def _parse(text: str):
    report = Report()
    config = parse([RenderedSource("interfaces", textwrap.dedent(text), None)],
                   lambda pattern, loc: [], report)
    return config, [d.format() for d in report.diagnostics]


@pytest.mark.parametrize("text, value", [
    ("198.51.100.10/32   # Main IP", "198.51.100.10/32"),
    ("198.51.100.1\t# GW", "198.51.100.1"),
    ("# all of it", ""),
    ("abc#1", "abc#1"),            # inside a word: kept (a passphrase)
    ("a b#c # d", "a b#c"),
    ("no comment", "no comment"),
])
def test_strip_inline_comment(text, value):
    assert strip_inline_comment(text) == value


# Hetzner's routed Proxmox layout, comments as its guide writes them.
HETZNER = """\
    auto lo
    iface lo inet loopback

    auto enp0s31f6  # the uplink
    iface enp0s31f6 inet static   # main
        address 198.51.100.10/32   # Main IP
        gateway 198.51.100.1  # GW
        pointopoint 198.51.100.1 #peer
        post-up echo 1 > /proc/sys/net/ipv4/ip_forward # the shell's comment
        up   echo "a  #b"

    auto vmbr0
    iface vmbr0 inet static
        address 203.0.113.1/29 # Subnet
        bridge_ports none      # no NIC
        bridge_stp off
        bridge_fd 0
"""


def test_inline_comments_are_cut_from_values_and_keyword_lines_but_not_hook_lines():
    config, errors = _parse(HETZNER)
    assert errors == []
    assert list(config.auto) == ["lo", "enp0s31f6", "vmbr0"]
    uplink = next(s for s in config.stanzas if s.name == "enp0s31f6")
    assert (uplink.family, uplink.method) == ("inet", "static")
    assert [(a.name, a.value) for a in uplink.attributes] == [
        ("address", "198.51.100.10/32"), ("gateway", "198.51.100.1"),
        ("pointopoint", "198.51.100.1"),
        # The shell decides on hook lines: kept as written.
        ("post-up", "echo 1 > /proc/sys/net/ipv4/ip_forward # the shell's comment"),
        ("up", 'echo "a  #b"'),
    ]
    bridge = next(s for s in config.stanzas if s.name == "vmbr0")
    assert [(a.name, a.value) for a in bridge.attributes][:2] == [
        ("address", "203.0.113.1/29"), ("bridge-ports", "none")]


def test_the_hetzner_file_compiles_with_its_comments(tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent(HETZNER))
    model = compile_config(ConfigSource(path=str(path))).model
    assert model.interfaces[("", "enp0s31f6")].attrs["address"] == ["198.51.100.10/32"]
    assert model.interfaces[("", "vmbr0")].attrs["bridge-ports"] == []


def _compile(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return compile_config(ConfigSource(path=str(tmp_path / "interfaces"))).model


def test_two_lo_stanzas_an_inet6_stanza_and_one_repeated_in_interfaces_d_are_merged(tmp_path):
    model = _compile(tmp_path, {
        "interfaces": """\
            auto lo
            iface lo inet loopback

            # a second lo stanza, as an SDN or FRR guide adds it
            iface lo inet loopback
                address 10.10.10.1/32

            auto eno1
            iface eno1 inet static
                address 198.51.100.10/24
                gateway 198.51.100.1
                mtu 9000

            iface eno1 inet6 static
                address 2001:db8::2/64
                gateway 2001:db8::1
                mtu 9000

            source-directory interfaces.d
            """,
        "interfaces.d/eno1": """\
            iface eno1 inet static
                address 198.51.100.10/24
                address 198.51.100.11/24
                post-up echo one
            """,
    })
    lo = model.interfaces[("", "lo")]
    assert (lo.kind, lo.auto, lo.attrs["address"]) == ("loopback", True, ["10.10.10.1/32"])
    eno1 = model.interfaces[("", "eno1")]
    assert (eno1.attrs["inet"], eno1.attrs["inet6"]) == ("static", "static")
    assert eno1.attrs["address"] == ["198.51.100.10/24", "2001:db8::2/64", "198.51.100.11/24"]
    assert eno1.attrs["gateway"] == ["198.51.100.1", "2001:db8::1"]
    assert eno1.attrs["mtu"] == 9000
    assert eno1.attrs["post-up"] == ["echo one"]


def test_a_setting_two_stanzas_give_different_values_is_refused_at_the_second(tmp_path):
    with pytest.raises(ConfigInvalid) as refused:
        _compile(tmp_path, {"interfaces": """\
            iface eno1 inet static
                address 198.51.100.10/24
                mtu 9000
            iface eno1 inet6 static
                address 2001:db8::2/64
                mtu 1500
            """})
    assert [d.format() for d in refused.value.diagnostics if d.severity == "error"] == [
        f"{tmp_path}/interfaces:6: error: eno1: mtu is given twice (first at "
        f"{tmp_path}/interfaces:3); write it once"]


def test_methods_that_contradict_across_stanzas_are_refused(tmp_path):
    with pytest.raises(ConfigInvalid) as refused:
        _compile(tmp_path, {"interfaces": """\
            iface eno1 inet static
                address 198.51.100.10/24
            iface eno1 inet dhcp
            """})
    assert "eno1: inet method dhcp contradicts static" in str(refused.value)
