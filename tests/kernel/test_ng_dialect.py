"""ifupdown-ng's dialect against the real kernel (issue 22; docs/compat.md,
"Lines that do nothing here, and the dialect"): `requires` orders bring-up
(apply and ifup), `use dhcp` runs the DHCP client as `inet dhcp` does with
the dhcp executor's options, and `use ipv6-ra`, `use ipv6-tempaddr` and
`ipv6-autoconf` are the sysctls ifupdown-ng's executors write, read back.

The host kernel has bridges and veths; the corpus fixtures' dummies and
bonds are the VM tier's, so the orderings here are made of bridges.
"""

from __future__ import annotations

import ipaddress
import json
import shutil
import subprocess
import textwrap
import time

import pytest

from builders import compiled

from netcfg.apply.execute import apply
from netcfg.ifupdown.main import main as ifupdown_main

from test_dhcp import private_etc, server_side, start_dnsmasq  # noqa: F401 (a fixture)

# Names against the order of the alphabet and of the file: without
# `requires`, netcfg brings all three up in one batch, sorted by name.
REQUIRES = textwrap.dedent("""\
    auto ng-a
    iface ng-a
        bridge-ports none
        requires ng-b
        pre-up ip -j link show dev ng-b > {log}/a-sees-b
        post-up sh -c 'echo $IFACE >> {log}/order'
        pre-down sh -c 'echo $IFACE >> {log}/down'

    iface ng-b
        bridge-ports none
        requires ng-c nic9
        pre-up ip -j link show dev ng-c > {log}/b-sees-c
        post-up sh -c 'echo $IFACE >> {log}/order'
        pre-down sh -c 'echo $IFACE >> {log}/down'

    iface ng-c
        bridge-ports none
        post-up sh -c 'echo $IFACE >> {log}/order'
        pre-down sh -c 'echo $IFACE >> {log}/down'
    """)


def _up(path) -> bool:
    return "UP" in json.loads(path.read_text())[0]["flags"]


def _link(name: str) -> dict:
    out = subprocess.run(["ip", "-j", "link", "show", "dev", name], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)[0]


@pytest.fixture
def nic9():
    """nic9: a device of the host no stanza declares (a veth, down): ifupdown-ng's
    link executor brings a required name without a stanza up."""
    subprocess.run(["ip", "link", "add", "nic9", "type", "veth", "peer", "name", "nic9p"],
                   check=True)
    yield
    subprocess.run(["ip", "link", "del", "nic9"], capture_output=True)


def test_requires_brings_what_it_names_up_first(session, tmp_path, nic9):
    log = tmp_path / "log"
    log.mkdir()
    text = REQUIRES.format(log=log)
    result = apply(compiled(tmp_path, text).model, session)
    assert result.verified
    # pre-up of each ran once what it requires was up (created and set up).
    assert _up(log / "a-sees-b") and _up(log / "b-sees-c")
    # up and post-up lines in the same order: the required one's first.
    assert (log / "order").read_text().split() == ["ng-c", "ng-b", "ng-a"]
    # A required name with no stanza is the host's device, brought up.
    assert "UP" in _link("nic9")["flags"]
    for name in ("ng-a", "ng-b", "ng-c"):
        assert "UP" in _link(name)["flags"]
    # requires is no kernel state: the same file again asks for nothing.
    assert apply(compiled(tmp_path, text).model, session).requests == 0


def test_ifup_brings_required_interfaces_up_first(session, tmp_path, monkeypatch, nic9):
    log = tmp_path / "log"
    log.mkdir()
    path = tmp_path / "interfaces"
    # No auto line: only `ifup ng-a` names it, and it brings what it requires.
    path.write_text(REQUIRES.format(log=log).replace("auto ng-a\n", ""))
    monkeypatch.setenv("NETCFG_INTERFACES", str(path))
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    assert ifupdown_main(["ifup", "ng-a"]) == 0
    assert _up(log / "a-sees-b") and _up(log / "b-sees-c")
    assert (log / "order").read_text().split() == ["ng-c", "ng-b", "ng-a"]
    assert "UP" in _link("nic9")["flags"]


def test_ifdown_takes_dependents_down_first(session, tmp_path, monkeypatch, nic9):
    """ifupdown-ng takes an interface down before what it requires; so do
    `ifdown -a`'s down lines (the record keeps the order they came up in)."""
    log = tmp_path / "log"
    log.mkdir()
    path = tmp_path / "interfaces"
    path.write_text(REQUIRES.format(log=log))
    monkeypatch.setenv("NETCFG_INTERFACES", str(path))
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "run"))
    assert ifupdown_main(["ifup", "-a"]) == 0
    assert ifupdown_main(["ifdown", "-a"]) == 0
    assert (log / "down").read_text().split() == ["ng-a", "ng-b", "ng-c"]


IPV6 = textwrap.dedent("""\
    auto v6a
    iface v6a
        link-type veth
        veth-peer-name v6b
        use ipv6-ra
        use ipv6-tempaddr
        forward-ipv6 yes
        ipv6-autoconf no

    auto v6b
    iface v6b
        use ipv6-ra
    """)


def _sysctl(dev: str, name: str) -> str:
    with open(f"/proc/sys/net/ipv6/conf/{dev}/{name}") as f:
        return f.read().strip()


def test_ipv6_executors_are_the_sysctls_they_write(session, tmp_path):
    result = apply(compiled(tmp_path, IPV6).model, session)
    assert result.verified
    # ipv6-ra: accept_ra 2 on a forwarding interface, 1 elsewhere.
    assert _sysctl("v6a", "forwarding") == "1" and _sysctl("v6a", "accept_ra") == "2"
    assert _sysctl("v6b", "accept_ra") == "1"
    assert _sysctl("v6a", "use_tempaddr") == "2" and _sysctl("v6a", "autoconf") == "0"
    assert _sysctl("v6b", "autoconf") == "1"
    assert apply(compiled(tmp_path, IPV6).model, session).requests == 0
    # A drift by hand is repaired.
    with open("/proc/sys/net/ipv6/conf/v6a/autoconf", "w") as f:
        f.write("1")
    repaired = apply(compiled(tmp_path, IPV6).model, session)
    assert repaired.verified and len(repaired.plan) > 0
    assert _sysctl("v6a", "autoconf") == "0"


USE_DHCP = server_side(ipaddress.ip_network("10.79.0.0/24")) + textwrap.dedent("""\
    auto c0
    iface c0
        netns cli
        use dhcp
        dhcp-hostname nghost
        dhcp-client-id cid7
        dhcp-program dhcpcd
    """)


@pytest.mark.skipif(not (shutil.which("dhclient") and shutil.which("dnsmasq")),
                    reason="needs isc-dhcp-client and dnsmasq-base (make kernel-deps)")
def test_use_dhcp_runs_the_client_as_inet_dhcp(session, tmp_path, monkeypatch, private_etc):
    """`use dhcp` with the dhcp executor's hostname and client id: the client
    netcfg starts for inet dhcp gets a lease and sends both (dnsmasq's lease
    file records them); dhcp-program is a warning, not a second client."""
    from netcfg.apply import dhcp

    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "run"))
    server_side = USE_DHCP.split("    use dhcp\n")[0]   # c0 without a method: manual
    assert apply(compiled(tmp_path, server_side).model, session).verified
    leases = tmp_path / "dnsmasq.leases"
    server = start_dnsmasq(tmp_path, ipaddress.ip_network("10.79.0.0/24"), subprocess.DEVNULL)
    lease = dhcp.Lease("cli", "c0", "4")
    clients = dhcp.clients()
    try:
        built = compiled(tmp_path, USE_DHCP)
        assert any("dhcp-program does nothing here" in d.message
                   for d in built.warnings), built.warnings
        result = apply(built.model, session)
        assert result.verified
        assert result.dhcp == ["started dhcp client for c0 in netns cli"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (leases.exists() and leases.read_text()):
            time.sleep(0.2)
        fields = leases.read_text().split()
        assert fields[2].startswith("10.79.0.") and fields[3] == "nghost", fields
        assert fields[4] == ":".join(f"{b:02x}" for b in b"cid7"), fields
        assert clients.running() == {lease}
    finally:
        clients.stop(lease)
        server.terminate()
        server.wait(timeout=10)
