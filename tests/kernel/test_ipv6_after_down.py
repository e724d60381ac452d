"""A plan that takes a device down keeps the IPv6 addresses the config wants
on it. The kernel deletes a device's IPv6 addresses when it goes down
(addrconf_ifdown, unless net.ipv6.conf.IF.keep_addr_on_down is 1); a plan that
read them present before added none back, so verification failed and the
apply was reverted (issue 22's differential: a stanza without `auto`, brought
up by `ifup NAME`, then `netcfg apply` of the file, which keeps such a stanza
down with its addresses: docs/compat.md "A stanza without `auto`").

The re-add is `ip addr replace`, so a host with keep_addr_on_down=1 (the
addresses stay) gets no EEXIST. Debian's ifupdown2, for comparison, leaves the
stanza up on `ifreload -a` (its reload skips stanzas without `auto`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_env import global_addresses as addresses, IFUPDOWN2_SANDBOX
from test_netcfgd import ip_json

from netcfg.apply.execute import apply
from netcfg.cli.main import main as netcfg
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.ifupdown.main import main as ifupdown

V6, V4, GW6 = "2001:db8:1::10/64", "192.0.2.10/24", "2001:db8:1::1"
NOT_AUTO = f"""\
auto lo
iface lo inet loopback

iface eth0 inet6 static
    address {V6}
    gateway {GW6}

iface eth0 inet static
    address {V4}
"""


def flags(name: str) -> list[str]:
    return ip_json("link", "show", "dev", name)[0]["flags"]


def default_routes() -> list[dict]:
    return ip_json("-6", "route", "show", "default")


@pytest.fixture(params=[0, 1], ids=["keep_addr_on_down=0", "keep_addr_on_down=1"])
def eth0(request, session, tmp_path, monkeypatch):
    """eth0 a veth stand-in, down, with the given keep_addr_on_down; the
    ifupdown commands' state dir in tmp_path."""
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    subprocess.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"],
                   check=True)
    subprocess.run(["ip", "link", "set", "eth0-peer", "up"], check=True)
    subprocess.run(["sysctl", "-q", f"net.ipv6.conf.eth0.keep_addr_on_down={request.param}"],
                   check=True)
    yield
    subprocess.run(["ip", "link", "del", "eth0"], capture_output=True)


def test_apply_after_ifup_name_keeps_the_ipv6_address(eth0, session, tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(NOT_AUTO)
    assert ifupdown(["ifup", "-i", str(path), "eth0"]) == 0
    assert "UP" in flags("eth0") and addresses("eth0") == sorted([V4, V6])
    assert [r["gateway"] for r in default_routes()] == [GW6]

    # The whole file: eth0 has no auto line, so it is kept down, addressed.
    assert netcfg(["apply", "-c", str(path)]) == 0
    assert "UP" not in flags("eth0")
    assert addresses("eth0") == sorted([V4, V6])
    assert default_routes() == []
    assert netcfg(["query", "--check", "-c", str(path)]) == 0
    model = compile_config(ConfigSource(path=str(path))).model
    again = apply(model, session)
    assert again.verified and again.requests == 0

    # Brought up by name again: the kept address is there, the route back.
    assert ifupdown(["ifup", "-i", str(path), "eth0"]) == 0
    assert "UP" in flags("eth0") and addresses("eth0") == sorted([V4, V6])
    assert [r["gateway"] for r in default_routes()] == [GW6]


def test_link_down_yes_on_an_up_device_keeps_its_ipv6_address(eth0, session, tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(f"auto eth0\niface eth0 inet6 static\n    address {V6}\n")
    assert netcfg(["apply", "-c", str(path)]) == 0
    assert "UP" in flags("eth0") and addresses("eth0") == [V6]
    path.write_text(path.read_text() + "    link-down yes\n")
    assert netcfg(["apply", "-c", str(path)]) == 0
    assert "UP" not in flags("eth0") and addresses("eth0") == [V6]
    assert netcfg(["query", "--check", "-c", str(path)]) == 0


IFUPDOWN2_RUN = IFUPDOWN2_SANDBOX + """\
mount --bind "$1" /etc/network/interfaces
ip link set lo up
ip link add eth0 type veth peer name eth0-peer; ip link set eth0-peer up
ifup eth0 >/dev/null 2>&1; echo "rc $?"
ifreload -a >/dev/null 2>&1; echo "rc $?"
ip -j link show dev eth0; ip -j addr show dev eth0 scope global
"""


@pytest.mark.skipif(shutil.which("ifreload") is None or not Path("/usr/share/ifupdown2").is_dir(),
                    reason="Debian's ifupdown2 is not installed")
def test_ifupdown2_reload_leaves_it_up(tmp_path):
    """The peer (own network and mount namespaces, the file bind-mounted on
    /etc/network/interfaces): `ifup eth0`, then `ifreload -a` leaves eth0 up
    with its address, where netcfg's whole-file apply keeps it down (above)."""
    import json

    path = tmp_path / "interfaces"
    path.write_text(NOT_AUTO)
    script = tmp_path / "run.sh"
    script.write_text(IFUPDOWN2_RUN)
    out = [line for line in subprocess.run(
        ["unshare", "--net", "--mount", "--propagation", "private", "bash", str(script),
         str(path)], capture_output=True, text=True, timeout=300).stdout.splitlines()
        if line.strip()]
    assert out[:2] == ["rc 0", "rc 0"]
    assert "UP" in json.loads(out[2])[0]["flags"]
    assert V6 in [f"{a['local']}/{a['prefixlen']}" for a in json.loads(out[3])[0]["addr_info"]
                  if "local" in a]
