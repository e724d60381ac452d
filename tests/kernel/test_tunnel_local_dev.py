"""ifupdown-ng's `tunnel-local-dev DEV` where the config gives DEV no address:
the tunnel's local address is read from the kernel when netcfg applies
(apply/tunnel_local.py), and the apply is refused at the line, with nothing
changed, when DEV or its address is missing. The tunnel itself needs the
tunnel modules this host kernel lacks: tests/vm/test_vm_ng_tunnels.py makes
it; here the reading and the refusals, which come before anything is made.
"""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from netcfg.apply.execute import apply
from netcfg.apply.tunnel_local import resolve
from netcfg.cli.main import main
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import ConfigInvalid

# ifupdown-ng's doc/interfaces-tunnel.scd, line 124 (our corpus file), with an
# IPv6 twin: eth0 is not in the file.
CONFIG = textwrap.dedent("""\
    auto gre1
    iface gre1
    \ttunnel-mode gre
    \ttunnel-remote 198.51.100.1
    \ttunnel-local-dev eth0
    \taddress 192.0.2.42/24

    auto gre6
    iface gre6
    \ttunnel-mode ip6gre
    \ttunnel-remote 2001:db8:9::1
    \ttunnel-local-dev eth0
    """)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def compiled(tmp_path, text: str = CONFIG):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return path, compile_config(ConfigSource(path=str(path))).model


@pytest.fixture
def eth0():
    ip("link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer")
    yield "eth0"
    subprocess.run(["ip", "link", "del", "eth0"], capture_output=True)


def test_the_local_address_is_the_devices_first_of_the_tunnels_family(tmp_path, session, eth0):
    ip("address", "add", "10.1.1.1/24", "dev", eth0)
    ip("address", "add", "10.2.2.2/24", "dev", eth0)
    ip("address", "add", "2001:db8:5::5/64", "dev", eth0, "nodad")
    path, model = compiled(tmp_path)
    got = resolve(model, session)
    gre1, gre6 = got.interfaces[("", "gre1")], got.interfaces[("", "gre6")]
    # `ip -4 -brief addr show dev eth0`'s first, as ifupdown-ng takes it.
    assert gre1.attrs["tunnel-local"] == "10.1.1.1"
    assert gre6.attrs["tunnel-local"] == "2001:db8:5::5"
    assert "tunnel-local-dev" not in gre1.attrs
    # Located at the line it came from, for drift and errors.
    assert (gre1.where("tunnel-local").file, gre1.where("tunnel-local").line) == (str(path), 5)
    # The compiled model is netcfgd's to keep: not changed.
    assert model.interfaces[("", "gre1")].attrs["tunnel-local-dev"] == "eth0"
    # Another address first: the next read follows it (apply re-creates the tunnel).
    ip("address", "flush", "dev", eth0, "scope", "global")
    ip("address", "add", "10.3.3.3/24", "dev", eth0)
    ip("address", "add", "2001:db8:7::7/64", "dev", eth0, "nodad")
    again = resolve(model, session)
    assert again.interfaces[("", "gre1")].attrs["tunnel-local"] == "10.3.3.3"
    assert again.interfaces[("", "gre6")].attrs["tunnel-local"] == "2001:db8:7::7"


def test_a_device_without_an_address_of_the_family_is_refused_at_the_line(tmp_path, session,
                                                                            eth0):
    ip("address", "add", "10.1.1.1/24", "dev", eth0)   # down: no IPv6 address at all
    _path, model = compiled(tmp_path)
    with pytest.raises(ConfigInvalid) as refused:
        resolve(model, session)
    assert [(d.loc.line, d.attribute) for d in refused.value.diagnostics] == [
        (12, "tunnel-local-dev")]
    assert "eth0 has no IPv6 address now that is not temporary" in \
        refused.value.diagnostics[0].message
    ip("address", "flush", "dev", eth0)
    with pytest.raises(ConfigInvalid) as none:
        resolve(model, session)
    assert [(d.loc.line, d.attribute) for d in none.value.diagnostics] == [
        (5, "tunnel-local-dev"), (12, "tunnel-local-dev")]
    assert "eth0 has no IPv4 address now" in none.value.diagnostics[0].message


def test_apply_refuses_without_the_device_and_changes_nothing(tmp_path, session, capsys):
    path, model = compiled(tmp_path)
    with pytest.raises(ConfigInvalid) as refused:
        apply(model, session)
    assert [d.loc.line for d in refused.value.diagnostics] == [5, 12]
    assert "there is no device eth0 in the host namespace" in refused.value.diagnostics[0].message
    # The command: exit 1, the line named, nothing made.
    assert main(["apply", "-c", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:5: error: gre1: tunnel-local-dev eth0: there is no device eth0" in err
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert "gre1" not in links and "gre6" not in links


def test_a_static_address_in_the_config_is_taken_at_compile_time(tmp_path, session):
    """No kernel read at all: eth0's address is the config's (the first written)."""
    _path, model = compiled(tmp_path, CONFIG + "\nauto eth0\niface eth0\n\taddress 192.0.2.7/24"
                                              "\n\taddress 2001:db8::7/64\n")
    assert model.interfaces[("", "gre1")].attrs["tunnel-local"] == "192.0.2.7"
    assert model.interfaces[("", "gre6")].attrs["tunnel-local"] == "2001:db8::7"
    assert resolve(model, session) is model
