"""The resolver files netcfg writes for tenant namespaces are readable by the
namespace's every user, whatever umask netcfg runs under (netcfgd's unit has
UMask=077: issue 23 M4), and go where NETCFG_ETC_NETNS says, DHCP's too (L8)."""

from __future__ import annotations

import os
import stat
import textwrap

from netcfg.apply.dhcp import DhcpClients
from netcfg.apply.resolver import Resolver
from netcfg.compile.pipeline import ConfigSource, compile_config


def _model(tmp_path):
    config = tmp_path / "site.tmpl"
    config.write_text(textwrap.dedent("""\
        auto eth0
        iface eth0
            netns tenant
            link-type dummy
            address 10.0.0.2/24
            dns-nameservers 10.0.0.1
    """))
    return compile_config(ConfigSource(str(config))).model


def test_a_tenant_resolv_conf_is_world_readable_under_umask_077(tmp_path):
    model = _model(tmp_path)
    old = os.umask(0o077)
    try:
        done = Resolver(str(tmp_path / "netns"), "none").update(model)
    finally:
        os.umask(old)
    path = tmp_path / "netns" / "tenant" / "resolv.conf"
    assert done == [f"wrote {path} (eth0)"]
    assert "nameserver 10.0.0.1" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o755


def test_dhcp_clients_take_netcfg_etc_netns(tmp_path, monkeypatch):
    monkeypatch.setenv("NETCFG_ETC_NETNS", str(tmp_path / "etc-netns"))
    assert DhcpClients(str(tmp_path / "run")).netns_etc == str(tmp_path / "etc-netns")
    monkeypatch.delenv("NETCFG_ETC_NETNS")
    assert DhcpClients(str(tmp_path / "run")).netns_etc == "/etc/netns"


def test_comma_separated_nameservers_are_two_servers_with_a_warning(tmp_path):
    """OpenStack's kolla files write `dns-nameservers A,B`: both peers pass
    the text to resolvconf's hook as it is; netcfg takes two servers and
    says so at the line."""
    config = tmp_path / "site.tmpl"
    config.write_text("auto eth0\niface eth0\n    netns tenant\n    link-type dummy\n"
                      "    dns-nameservers 10.0.0.1,10.0.0.2\n")
    compiled = compile_config(ConfigSource(str(config)))
    warnings = [w.format() for w in compiled.warnings]
    said = ":5: warning: eth0 (netns tenant): dns-nameservers: '10.0.0.1,10.0.0.2': netcfg takes"
    assert any(said in w for w in warnings), warnings
    Resolver(str(tmp_path / "netns"), "none").update(compiled.model)
    text = (tmp_path / "netns" / "tenant" / "resolv.conf").read_text()
    assert "nameserver 10.0.0.1\n" in text and "nameserver 10.0.0.2\n" in text
