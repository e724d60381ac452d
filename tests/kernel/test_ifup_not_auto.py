"""A stanza with no `auto` line and a `gateway` (issue 22: Debian hosts'
interfaces.d/eth0, ifupdown-ng's alias-home-work fixture), as ifupdown2
treats it: `ifup -a` leaves the interface alone, `ifup NAME` brings it up
with its address and default route. `netcfg check` accepts the file (a
warning at the gateway line), so `netcfg apply` of it must succeed: the
route of a device the file keeps down is not installed, not refused."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_env import IFUPDOWN2_SANDBOX
from test_netcfgd import ip_json

from netcfg.apply.execute import apply
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.ifupdown.main import main

CORPUS = Path(__file__).parents[1] / "compat" / "corpus"
ETH0 = CORPUS / "debian-hosts" / "local_infra-etc-network-interfaces.d-eth0.interfaces"
LO = "auto lo\niface lo inet loopback\n\n"


def link(name: str) -> dict:
    return ip_json("link", "show", "dev", name)[0]


def addresses(name: str) -> list[str]:
    return sorted(f"{a['local']}/{a['prefixlen']}" for li in ip_json("addr", "show", "dev", name)
                  for a in li.get("addr_info", ()) if a.get("family") == "inet")


def default_routes() -> list[dict]:
    return ip_json("route", "show", "default")


@pytest.fixture
def eth0(session, tmp_path, monkeypatch):
    """eth0 a veth stand-in (down, as a NIC nobody configured); the commands'
    run and state dirs in tmp_path."""
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    subprocess.run(["ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer"],
                   check=True)
    subprocess.run(["ip", "link", "set", "eth0-peer", "up"], check=True)
    yield
    subprocess.run(["ip", "link", "del", "eth0"], capture_output=True)


@pytest.mark.parametrize("prefix", ["", LO], ids=["as-published", "with-auto-lo"])
def test_ifup_a_leaves_it_alone_and_ifup_name_brings_address_and_route(
        eth0, tmp_path, monkeypatch, prefix):
    path = tmp_path / "interfaces"
    path.write_text(prefix + ETH0.read_text())
    monkeypatch.setenv("NETCFG_INTERFACES", str(path))
    assert main(["ifup", "-a"]) == 0
    assert "UP" not in link("eth0")["flags"]
    assert addresses("eth0") == [] and default_routes() == []
    assert main(["ifup", "eth0"]) == 0
    assert "UP" in link("eth0")["flags"]
    assert addresses("eth0") == ["192.168.1.20/24"]
    assert [(r["gateway"], r["dev"]) for r in default_routes()] == [("192.168.1.1", "eth0")]
    # ifquery -c of eth0 (named: brought up) finds nothing to repair.
    assert main(["ifquery", "-c", "eth0"]) == 0


def test_netcfg_apply_of_the_file_succeeds_without_the_route(eth0, session):
    """check's ok is a promise: the file applies (eth0 addressed, kept down,
    no route), and what show prints applies again with no request."""
    model = compile_config(ConfigSource(path=str(ETH0))).model
    result = apply(model, session)
    assert result.verified
    assert "UP" not in link("eth0")["flags"]
    assert addresses("eth0") == ["192.168.1.20/24"] and default_routes() == []
    again = apply(model, session)
    assert again.requests == 0 and again.plan.operations == []


def test_show_of_eth0_brought_up_applies_with_no_request(eth0, session, tmp_path, monkeypatch):
    path = tmp_path / "interfaces"
    path.write_text(ETH0.read_text())
    monkeypatch.setenv("NETCFG_INTERFACES", str(path))
    assert main(["ifup", "eth0"]) == 0
    shown = emit_model(session.read([""]), running=True)
    assert "route 0.0.0.0/0 via 192.168.1.1 dev eth0" in shown and "auto eth0" in shown
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session)
    assert again.verified and again.requests == 0


IFUPDOWN2_RUN = IFUPDOWN2_SANDBOX + """\
ip link set lo up
ip link add eth0 type veth peer name eth0-peer; ip link set eth0-peer up
for step in "-a" "eth0"; do
    ifup -i "$1" $step >/dev/null 2>&1; echo "rc $?"
    ip -j addr show dev eth0; ip -j route show default
done
"""


@pytest.mark.skipif(shutil.which("ifup") is None or not Path("/usr/share/ifupdown2").is_dir(),
                    reason="Debian's ifupdown2 is not installed")
@pytest.mark.parametrize("prefix", ["", LO], ids=["as-published", "with-auto-lo"])
def test_ifupdown2_itself_does_the_same(tmp_path, prefix):
    """The peer, in fresh network and mount namespaces of its own: `ifup -a`
    leaves eth0 down without an address, `ifup eth0` brings both."""
    path = tmp_path / "interfaces"
    path.write_text(prefix + ETH0.read_text())
    script = tmp_path / "run.sh"
    script.write_text(IFUPDOWN2_RUN)
    out = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "bash",
                          str(script), str(path)], capture_output=True, text=True,
                         timeout=300).stdout.splitlines()
    out = [line for line in out if line.strip()]
    steps = [out[i:i + 3] for i in range(0, 6, 3)]
    after_all, after_eth0 = ([line[0].split()[1], json.loads(line[1]), json.loads(line[2])]
                             for line in steps)
    assert after_all[1][0]["operstate"] == "DOWN" and after_all[2] == []
    assert not [a for a in after_all[1][0]["addr_info"] if a["family"] == "inet"]
    assert after_eth0[0] == "0"
    assert [f"{a['local']}/{a['prefixlen']}" for a in after_eth0[1][0]["addr_info"]
            if a["family"] == "inet"] == ["192.168.1.20/24"]
    assert [(r["gateway"], r["dev"]) for r in after_eth0[2]] == [("192.168.1.1", "eth0")]


def test_a_loopback_stanza_without_auto_never_takes_lo_down(session, tmp_path):
    """`iface lo inet loopback` with no `auto lo` (ifupdown-ng's vlan-complex
    fixture): ifupdown2 leaves lo up ("cannot bring loopback interface down"),
    and so does netcfg: its address is set, lo stays up, and lo found down is
    brought up, as systemd brings it up at boot."""
    path = tmp_path / "interfaces"
    path.write_text("iface lo inet loopback\n    address 10.9.9.9/32\n")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    model = compile_config(ConfigSource(path=str(path))).model
    assert apply(model, session).verified
    assert "UP" in link("lo")["flags"]
    assert "10.9.9.9/32" in addresses("lo")
    assert apply(model, session).requests == 0
    subprocess.run(["ip", "link", "set", "lo", "down"], check=True)
    assert apply(model, session).verified
    assert "UP" in link("lo")["flags"]
