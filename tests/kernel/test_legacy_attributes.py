"""Debian ifupdown's legacy forms (issue 22) against the real kernel: a
stanza's netmask and network, an alias stanza (eth0:0), `metric` on the
gateway's default route, `dad-attempts 0`, and lo's vxlan-local-tunnelip
as the vxlans' default tunnel source. Each is applied in the sandbox and
read back with iproute2; a second apply sends nothing; `query --check`
sees a hand-made drift at the line that asks for the state.

The host kernel has veth and vxlan; bonds (`slaves`, `bond-master`) are the
VM tier's, and their compile is a golden case (ok-ifupdown-legacy-keys).
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
import textwrap
import time

import pytest

from builders import compiled
from kernel_env import link_details

from netcfg.apply.execute import apply

from test_dhcp import private_etc, server_side, start_dnsmasq  # noqa: F401 (a fixture)

LEGACY = textwrap.dedent("""\
    auto lo
    iface lo inet loopback
        vxlan-local-tunnelip 10.0.0.11

    auto v0
    iface v0 inet static
        link-type veth
        veth-peer-name v0p
        address 192.0.2.10
        netmask 255.255.255.0
        network 192.0.2.0
        gateway 192.0.2.1
        metric 100
    iface v0 inet6 static
        address 2001:db8::10
        netmask 64
        dad-attempts 0

    auto v0:0
    iface v0:0 inet static
        address 198.51.100.5
        netmask 255.255.255.248

    auto v0p
    iface v0p

    auto vni10
    iface vni10
        vxlan-id 10
    """)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _addresses(ip_json, dev: str) -> list[str]:
    return sorted(f"{a['local']}/{a['prefixlen']}" for a in ip_json("addr", "show", "dev", dev)[0]
                  ["addr_info"] if a.get("scope") != "link")


def test_ifupdown_legacy_forms_reach_the_kernel(session, tmp_path, ip_json, capsys):
    from netcfg.cli.main import main

    result = apply(compiled(tmp_path, LEGACY).model, session)
    assert result.verified and result.requests > 0
    # netmask folded into each stanza's own addresses; the alias's on v0.
    assert _addresses(ip_json, "v0") == ["192.0.2.10/24", "198.51.100.5/29", "2001:db8::10/64"]
    routes = ip_json("route", "show", "default", "dev", "v0")
    assert [(r["gateway"], r.get("metric")) for r in routes] == [("192.0.2.1", 100)]
    with open("/proc/sys/net/ipv6/conf/v0/accept_dad") as f:
        assert f.read().strip() == "0"
    assert link_details("vni10")["linkinfo"]["info_data"]["local"] == "10.0.0.11"

    # show | apply: the same state asks for nothing.
    assert apply(compiled(tmp_path, LEGACY).model, session).requests == 0

    # A drift made by hand is seen, at the line that asks for it.
    path = tmp_path / "interfaces"
    path.write_text(LEGACY)
    assert main(["query", "--check", "-c", str(path)]) == 0
    _ip("route", "del", "default", "via", "192.0.2.1", "dev", "v0", "metric", "100")
    _ip("addr", "del", "198.51.100.5/29", "dev", "v0")
    capsys.readouterr()
    assert main(["query", "--check", "-c", str(path)]) == 1
    out = capsys.readouterr().out
    assert "198.51.100.5/29" in out and "0.0.0.0/0" in out, out

    # The repair puts both back, the route at its metric.
    assert apply(compiled(tmp_path, LEGACY).model, session).verified
    assert "198.51.100.5/29" in _addresses(ip_json, "v0")
    assert [r.get("metric") for r in ip_json("route", "show", "default", "dev", "v0")] == [100]


def test_a_changed_metric_moves_the_default_route(session, tmp_path, ip_json):
    apply(compiled(tmp_path, LEGACY).model, session)
    changed = LEGACY.replace("metric 100\n", "metric 50\n")
    assert apply(compiled(tmp_path, changed).model, session).verified
    routes = ip_json("route", "show", "default", "dev", "v0")
    assert [(r["gateway"], r.get("metric")) for r in routes] == [("192.0.2.1", 50)]
    assert apply(compiled(tmp_path, changed).model, session).requests == 0


DHCP_SERVER_AND_CLIENT = server_side(ipaddress.ip_network("10.78.0.0/24")) + textwrap.dedent("""\
    auto c0
    iface c0 inet manual
        netns cli
    """)


@pytest.mark.skipif(not (shutil.which("dhclient") and shutil.which("dnsmasq")),
                    reason="needs isc-dhcp-client and dnsmasq-base (make kernel-deps)")
def test_inet_dhcp_options_reach_the_server(session, tmp_path, monkeypatch, private_etc):
    """ifupdown's hostname and client options, as dhclient sends them,
    read back from the server's lease file (dnsmasq records both). What the
    client writes under /etc lands in test_dhcp's overlay (private_etc)."""
    from netcfg.apply import dhcp

    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "run"))
    assert apply(compiled(tmp_path, DHCP_SERVER_AND_CLIENT).model, session).verified
    leases = tmp_path / "dnsmasq.leases"
    server = start_dnsmasq(tmp_path, ipaddress.ip_network("10.78.0.0/24"), subprocess.DEVNULL)
    lease = dhcp.Lease("cli", "c0", "4")
    clients = dhcp.clients()
    try:
        # The options written in the stanza reach the client through apply.
        with_options = DHCP_SERVER_AND_CLIENT.replace(
            "iface c0 inet manual\n", "iface c0 inet dhcp\n    hostname legacyhost\n"
            "    client cid42\n    leasehours 2\n    metric 300\n")
        result = apply(compiled(tmp_path, with_options).model, session)
        assert "started dhcp client for c0 in netns cli" in result.dhcp
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (leases.exists() and leases.read_text()):
            time.sleep(0.2)
        fields = leases.read_text().split()
        # expiry, MAC, address, the host name sent, the client id sent (hex).
        assert fields[3] == "legacyhost", fields
        assert fields[4] == ":".join(f"{b:02x}" for b in b"cid42"), fields
    finally:
        clients.stop(lease)
        server.terminate()
        server.wait(timeout=10)
