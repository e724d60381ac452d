"""`vrrp ID ADDRESS...` against the real kernel (issue 22; ifupdown-ng's
doc/interfaces-vrrp.scd, ifupdown2's addressvirtual addon): a macvlan per
VRRP id and family on the interface, mode bridge, RFC 5798's virtual MAC,
host addresses with metric 1024, no DAD, addrgenmode none (IPv4) or random
(IPv6), made with protodown on (which the VRRP daemon then owns), up with
the interface (compile/vrrp.py). Read back with iproute2;
`show | apply` sends nothing; a macvlan deleted by hand and an address
removed by hand are put back.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from builders import compiled

from netcfg.apply.execute import apply
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config

# ifupdown-ng's doc/interfaces-vrrp.scd, line 59.
CONFIG = textwrap.dedent("""\
    auto eth0
    iface eth0
        address 192.168.10.2/24
        address 192.168.11.2/24
        address fc00:192:168:10::2/64
        address fc00:192:168:11::2/64
        vrrp 10 192.168.10.1 fc00:192:168:10::1
        vrrp 20 192.168.11.1 fc00:192:168:11::1
    """)


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def link(name: str) -> dict:
    return json.loads(ip("-d", "-j", "link", "show", "dev", name))[0]


def addresses(dev: str) -> dict[str, int | None]:
    info = json.loads(ip("-j", "addr", "show", "dev", dev))[0]["addr_info"]
    return {f"{a['local']}/{a['prefixlen']}": a.get("metric") for a in info
            if a["scope"] == "global"}


@pytest.fixture
def eth0():
    """A stand-in physical port: one end of a veth pair whose peer is up."""
    ip("link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer")
    ip("link", "set", "eth0-peer", "up")
    yield
    subprocess.run(["ip", "link", "del", "eth0"], capture_output=True)


def test_vrrp_makes_ifupdown2s_macvlans(session, tmp_path, eth0):
    assert apply(compiled(tmp_path, CONFIG).model, session).verified
    want = {"vrrp4-eth0-10": ("00:00:5e:00:01:0a", {"192.168.10.1/32": 1024}, "none"),
            "vrrp6-eth0-10": ("00:00:5e:00:02:0a", {"fc00:192:168:10::1/128": 1024}, "random"),
            "vrrp4-eth0-20": ("00:00:5e:00:01:14", {"192.168.11.1/32": 1024}, "none"),
            "vrrp6-eth0-20": ("00:00:5e:00:02:14", {"fc00:192:168:11::1/128": 1024}, "random")}
    for name, (mac, addrs, addrgen) in want.items():
        dev = link(name)
        assert dev["linkinfo"]["info_kind"] == "macvlan", dev
        assert dev["linkinfo"]["info_data"]["mode"] == "bridge", dev
        assert dev["link"] == "eth0" and "UP" in dev["flags"], dev
        assert dev["address"] == mac, dev
        assert dev.get("proto_down") is True, dev   # until vrrpd takes it
        # No carrier while protodown, though eth0 came up after the macvlan was made
        # (the kernel hands a lower's carrier to its macvlans; issue 22).
        assert "NO-CARRIER" in dev["flags"] and dev["operstate"] == "DOWN", dev
        assert dev.get("inet6_addr_gen_mode") == addrgen, dev
        assert addresses(name) == addrs
        with open(f"/proc/sys/net/ipv6/conf/{name}/accept_dad") as f:
            assert f.read().strip() == "0"
    # eth0's own prefix routes win over the macvlans' (metric 1024).
    assert json.loads(ip("-4", "-j", "route", "get", "192.168.10.7"))[0]["dev"] == "eth0"

    shown = emit_model(session.read([""]), running=True)
    assert "iface vrrp6-eth0-20" in shown and "hwaddress 00:00:5e:00:02:14" in shown, shown
    again = apply(compile_config(ConfigSource(path="-", stdin_text=shown)).model, session)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]
    assert apply(compiled(tmp_path, CONFIG).model, session).requests == 0

    # vrrpd clears protodown on the master: that is not a drift.
    ip("link", "set", "vrrp4-eth0-20", "protodown", "off")
    assert apply(compiled(tmp_path, CONFIG).model, session).requests == 0
    assert not link("vrrp4-eth0-20").get("proto_down")

    # Drift: a macvlan deleted by hand, an address removed by hand.
    ip("link", "del", "vrrp4-eth0-10")
    ip("addr", "del", "fc00:192:168:11::1/128", "dev", "vrrp6-eth0-20")
    repaired = apply(compiled(tmp_path, CONFIG).model, session)
    assert repaired.verified and repaired.requests > 0
    assert link("vrrp4-eth0-10")["address"] == "00:00:5e:00:01:0a"
    assert addresses("vrrp6-eth0-20") == {"fc00:192:168:11::1/128": 1024}
    assert apply(compiled(tmp_path, CONFIG).model, session).requests == 0
