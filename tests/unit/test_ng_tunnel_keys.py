"""ifupdown-ng's tunnel, gre, vxlan and wireguard keys at compile time
(compile/legacy_tunnel.py, kinds/tunnel.py, kinds/wireguard_conf.py); the
kernel's side is tests/vm/test_vm_ng_tunnels.py, test_vm_wireguard.py and
tests/kernel/test_vxlan_remotes.py."""

from __future__ import annotations

import pytest

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.compile.values import parse_address
from netcfg.kinds.wireguard import key_text
from netcfg.kinds.wireguard_conf import ConfError, parse_conf
from netcfg.model.errors import ConfigInvalid

KEY_A = key_text(bytes(range(32)))
KEY_B = key_text(bytes(range(1, 33)))


def model(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return compile_config(ConfigSource(path=str(path))).model


def errors(tmp_path, text: str) -> list[str]:
    with pytest.raises(ConfigInvalid) as failed:
        model(tmp_path, text)
    return [f"{d.loc.line}: {d.message}" for d in failed.value.diagnostics
            if d.severity == "error"]


def test_a_tab_separated_last_word_keeps_no_trailing_blank(tmp_path):
    # `vxlan-local-ip<TAB>2001:db8:1::1`: the value was '2001:db8:1::1 '.
    got = model(tmp_path, "auto vx\niface vx\n\tvxlan-id\t7\n\tvxlan-local-tunnelip\t2001:db8::1\n")
    assert got.interfaces[("", "vx")].attrs["vxlan-local-tunnelip"] == "2001:db8::1"


def test_legacy_words_make_a_tunnel_only_with_a_tunnel_mode(tmp_path):
    got = model(tmp_path, "auto t\niface t\n\tlocal 192.0.2.1\n\tendpoint 192.0.2.2\n"
                          "\tmode ipip\n\tttl 9\n")
    attrs = got.interfaces[("", "t")].attrs
    assert (got.interfaces[("", "t")].kind, attrs["tunnel-endpoint"], attrs["tunnel-ttl"]) == \
        ("ipip", "192.0.2.2", 9)
    assert errors(tmp_path, "iface e\n\tlocal 192.0.2.1\n\tmode 802.3ad\n") == [
        "2: e: unknown attribute 'local'", "3: e: unknown attribute 'mode'"]


def test_gre_executor_keys_and_flags(tmp_path):
    got = model(tmp_path, "auto eth0\niface eth0\n\taddress 192.0.2.1/24\n"
                          "auto t\niface t\n\tgre-local 192.0.2.1\n\tgre-remote 192.0.2.2\n"
                          "\tgre-dev eth0\n\tgre-flags nopmtudisc ignore-df\n")
    obj = got.interfaces[("", "t")]
    assert obj.kind == "gre"
    assert {k: obj.attrs[k] for k in ("tunnel-local", "tunnel-dev", "tunnel-pmtudisc",
                                      "tunnel-ignore-df")} == \
        {"tunnel-local": "192.0.2.1", "tunnel-dev": "eth0", "tunnel-pmtudisc": False,
         "tunnel-ignore-df": True}
    # The kernel's defaults are left out, as read-back leaves them.
    plain = model(tmp_path, "auto t\niface t\n\tgre-local 192.0.2.1\n\tgre-remote 192.0.2.2\n"
                            "\tgre-flags pmtudisc noignore-df\n").interfaces[("", "t")]
    assert "tunnel-pmtudisc" not in plain.attrs and "tunnel-ignore-df" not in plain.attrs


def test_tunnel_local_dev_takes_the_devices_first_address_of_the_family(tmp_path):
    text = ("auto eth0\niface eth0\n\taddress 2001:db8::5/64\n\taddress 192.0.2.5/24\n"
            "auto g4\niface g4\n\ttunnel-mode gre\n\ttunnel-remote 192.0.2.9\n"
            "\ttunnel-local-dev eth0\n"
            "auto g6\niface g6\n\ttunnel-mode ip6gre\n\ttunnel-remote 2001:db8::9\n"
            "\ttunnel-local-dev eth0\n")
    got = model(tmp_path, text)
    assert got.interfaces[("", "g4")].attrs["tunnel-local"] == "192.0.2.5"
    assert got.interfaces[("", "g6")].attrs["tunnel-local"] == "2001:db8::5"


def test_tunnel_local_dev_without_a_static_address_is_read_when_netcfg_applies(tmp_path):
    """eth0 by DHCP (or not in the file): the line stays for apply to resolve
    (apply/tunnel_local.py), with a warning at it; --strict does not refuse
    it (the line does something); a plan from files says what it will read."""
    from netcfg.plan import make_plan
    from netcfg.model.model import Model

    text = ("auto eth0\niface eth0 inet dhcp\n"
            "auto g4\niface g4\n\ttunnel-mode gre\n\ttunnel-remote 192.0.2.9\n"
            "\ttunnel-local-dev eth0\n")
    path = tmp_path / "interfaces"
    path.write_text(text)
    compiled = compile_config(ConfigSource(path=str(path), strict=True))
    g4 = compiled.model.interfaces[("", "g4")]
    assert g4.attrs["tunnel-local-dev"] == "eth0" and "tunnel-local" not in g4.attrs
    assert [(w.loc.line, w.attribute) for w in compiled.warnings] == [(7, "tunnel-local-dev")]
    assert "when netcfg applies" in compiled.warnings[0].message
    plan = make_plan(compiled.model, Model())
    add = next(op for op in plan.operations if op.name == "g4" and op.action == "link-add")
    assert "local" not in add.params and "tunnel-local-dev" not in add.params
    assert any("g4: its local address is eth0's" in note for note in plan.notes)


def test_tunnel_local_dev_with_tunnel_local_is_an_error(tmp_path):
    assert errors(tmp_path, "auto g\niface g\n\ttunnel-mode gre\n\ttunnel-remote 192.0.2.9\n"
                            "\ttunnel-local 192.0.2.1\n\ttunnel-local-dev eth0\n") == [
        "6: g: tunnel-local-dev and tunnel-local both give the tunnel's local address; "
        "remove one"]


def test_vxlan_peer_ips_one_is_the_remote_several_are_replication(tmp_path):
    got = model(tmp_path, "auto a b\niface a\n\tvxlan-id 1\n\tvxlan-peer-ips 192.0.2.1\n"
                          "iface b\n\tvxlan-id 2\n\tvxlan-remote-ip 192.0.2.1 192.0.2.2\n")
    assert got.interfaces[("", "a")].attrs["vxlan-svcnodeip"] == "192.0.2.1"
    assert "vxlan-remoteip" not in got.interfaces[("", "a")].attrs
    assert got.interfaces[("", "b")].attrs["vxlan-remoteip"] == ["192.0.2.1", "192.0.2.2"]


def test_a_prefix_too_long_is_said_as_such():
    with pytest.raises(ValueError, match=r"prefix length /42 is longer than an IPv4 address "
                                         r"\(/32 at most\)"):
        parse_address("192.0.2.23/42")
    with pytest.raises(ValueError, match="is not an IPv4 or IPv6 address"):
        parse_address("192.0.2.300/24")


CONF = f"""\
[Interface]
PrivateKey = {KEY_A}
ListenPort = 51820   # a comment
FwMark = 0x10

[Peer]
PublicKey = {KEY_B}
AllowedIPs = 10.0.0.0/24, fd00::/64
Endpoint = [2001:db8::1]:51820
PersistentKeepalive = off
"""


def test_setconf_file_is_the_devices_settings():
    conf = parse_conf(CONF, "/etc/wireguard/foo.conf")
    assert conf.private_key == bytes(range(32))
    assert (conf.listen_port, conf.fwmark) == (51820, 16)
    assert [p.text() for p in conf.peers] == [
        f"{KEY_B} allowed-ips 10.0.0.0/24,fd00::/64 endpoint [2001:db8::1]:51820"]
    assert parse_conf("[Interface]\n", "x").listen_port is None


@pytest.mark.parametrize("line, message", [
    ("Address = 10.0.0.1/24", "f.conf:3: Address is wg-quick's, not `wg setconf`'s"),
    (f"PresharedKey = {KEY_A}", "f.conf:3: PresharedKey: preshared keys are not supported"),
    ("Endpoint = vpn.example.com:51820", "f.conf:3: Endpoint: endpoint 'vpn.example.com:51820'"),
    ("Bogus = 1", "f.conf:3: Bogus: not a [Peer] key"),
    ("AllowedIPs = 10.0.0.1/24", "f.conf:3: AllowedIPs: 10.0.0.1/24 has host bits set"),
])
def test_setconf_lines_netcfg_cannot_take_name_the_files_line(line, message):
    with pytest.raises(ConfError) as failed:
        parse_conf(f"[Peer]\nPublicKey = {KEY_B}\n{line}\n", "f.conf")
    assert str(failed.value).startswith(message), failed.value


def test_config_path_stands_alone(tmp_path):
    assert errors(tmp_path, "auto wg0\niface wg0\n\twireguard-config-path etc/wg0.conf\n"
                            "\twireguard-listen-port 5\n") == [
        "3: wg0: wireguard-config-path 'etc/wg0.conf' is not an absolute path; write the "
        "config file's full path (/etc/wireguard/wg0.conf)"]
    got = errors(tmp_path, "auto wg0\niface wg0\n\twireguard-config-path /etc/wg0.conf\n"
                           "\twireguard-listen-port 5\n")
    assert got == [f"4: wg0: wireguard-listen-port and wireguard-config-path "
                   f"({tmp_path}/interfaces:3) both configure the device; the file replaces all of it, as `wg setconf` does. "
                   f"Write it in the file or remove wireguard-config-path"], got


def test_use_wireguard_alone_is_its_executors_default_config_path(tmp_path):
    got = model(tmp_path, "auto wg-bar\niface wg-bar\n\tuse wireguard\n")
    obj = got.interfaces[("", "wg-bar")]
    assert (obj.kind, obj.attrs["wireguard-config-path"]) == \
        ("wireguard", "/etc/wireguard/wg-bar.conf")


def test_a_vxlan_mtu_past_its_underlays_is_a_warning_when_the_underlay_is_the_hosts(tmp_path):
    # ifupdown-ng's doc/interfaces-vxlan.scd line 88: vlan1001 is not in the file.
    path = tmp_path / "interfaces"
    path.write_text("auto vx\niface vx\n\tvxlan-id 655617\n\tvxlan-physdev vlan1001\n"
                    "\tvxlan-remote-group 225.10.1.1\n\tmtu 1560\n")
    compiled = compile_config(ConfigSource(path=str(path)))
    warnings = [f"{d.loc.line}: {d.message}" for d in compiled.warnings]
    assert compiled.model.interfaces[("", "vx")].attrs["mtu"] == 1560
    assert "6: vx: mtu 1560 needs vlan1001's mtu to be at least 1610 (50 bytes of VXLAN " \
        "encapsulation); this config does not set it, so the host's vlan1001 must have it, " \
        "or the kernel refuses this mtu and the apply fails" in warnings, warnings
