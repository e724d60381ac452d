"""What the host kernel cannot do, proved where it can: the VM tier.

`make test-vm` boots Debian's 6.12 kernel (virtme-ng, qemu) and runs the
kernel tier inside it; on a host kernel without 8021q, dummy, vrf, bonding or
bridge VLAN filtering these tests skip, saying so.

The lowering test is the one that matters: per-VLAN bridges and the one
VLAN-aware bridge they lower to must carry exactly the same traffic. Hosts
in namespaces on the same VLAN reach each other; hosts on different VLANs do
not, even with addresses in one subnet.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
import time

import pytest
from vm_helpers import kernel_can

from netcfg.apply.execute import apply
from netcfg.compile.pipeline import ConfigSource, compile_config

VM_TIER = pytest.mark.skipif(
    not (kernel_can("vmprobe0", "type", "dummy")
         and kernel_can("vmprobe1", "type", "bridge", "vlan_filtering", "1")),
    reason="VM tier: needs dummy, 8021q, vrf, bonding and bridge VLAN filtering "
           "(make test-vm)")

# Three hosts, each in its namespace, plugged into swp1..3 by veth pairs.
# h1 is on VLANs 10 and 20, h2 on 10 only, h3 on 20 only; h2 and h3 use the
# same subnet on their different VLANs, so only L2 separates them.
SWITCH = textwrap.dedent("""\
    % for n in (1, 2, 3):
    auto swp${n}
    iface swp${n}
        link-type veth
        veth-peer-name eth0
        veth-peer-netns h${n}
        addr-gen-mode none

    auto eth0
    iface eth0
        netns h${n}
    % endfor

    auto eth0.10
    iface eth0.10
        netns h1
        address 10.0.0.1/24
    auto eth0.20
    iface eth0.20
        netns h1
        address 10.0.1.1/24
    auto eth0.10
    iface eth0.10
        netns h2
        address 10.0.0.2/24
    auto eth0.20
    iface eth0.20
        netns h3
        address 10.0.0.3/24
        address 10.0.1.3/24

    auto br10
    iface br10
        bridge-ports swp1.10 swp2.10
        bridge-stp no
    auto br20
    iface br20
        bridge-ports swp1.20 swp3.20
        bridge-stp no
    """)


def ping(netns: str, address: str) -> bool:
    # A missing ping must fail the test, not read as "unreachable".
    assert shutil.which("ping"), "ping is not installed (iputils-ping; make test-vm installs it)"
    return subprocess.run(["ip", "netns", "exec", netns, "ping", "-c", "1", "-W", "1", address],
                          capture_output=True).returncode == 0


def reachable(netns: str, address: str, tries: int = 5) -> bool:
    """Pings while the bridge ports settle (forwarding state), at most ~5 s."""
    for _ in range(tries):
        if ping(netns, address):
            return True
        time.sleep(0.5)
    return False


@VM_TIER
@pytest.mark.parametrize("lower", [False, True], ids=["per-vlan-bridges", "lowered"])
def test_lowering_carries_the_same_traffic(session, tmp_path, lower):
    (tmp_path / "switch.tmpl").write_text(SWITCH)
    model = compile_config(ConfigSource(path=str(tmp_path / "switch.tmpl"))).model
    result = apply(model, session, lower_enabled=lower)
    assert result.verified
    lowered = result.plan.lowering.lowered if result.plan.lowering else []
    assert bool(lowered) == lower
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    if lower:
        assert "vbr0" in links and "br10" not in links and "swp1.10" not in links
    else:
        assert "br10" in links and "swp1.10" in links

    assert reachable("h2", "10.0.0.1"), "same VLAN (10): h2 reaches h1"
    assert reachable("h3", "10.0.1.1"), "same VLAN (20): h3 reaches h1"
    assert not ping("h2", "10.0.0.3"), "VLAN 10 must not reach VLAN 20"
    assert not ping("h3", "10.0.0.2"), "VLAN 20 must not reach VLAN 10"
    assert apply(model, session, lower_enabled=lower).requests == 0


KINDS = textwrap.dedent("""\
    auto d0
    iface d0
        link-type dummy
        mtu 9000
    auto d1
    iface d1
        link-type dummy
    auto d2
    iface d2
        link-type dummy
    auto bond0
    iface bond0
        bond-slaves d1 d2
        bond-mode active-backup
        bond-miimon 100
    auto bond0.100
    iface bond0.100
        address 10.100.0.1/24
    auto red
    iface red
        vrf-table 1001
    auto d0.5
    iface d0.5
        vrf red
        address 172.16.0.1/24
        route 10.0.0.0/8 via 172.16.0.254 vrf red
    auto br0
    iface br0
        bridge-vlan-aware yes
        bridge-ports d3
        bridge-vids 100-110
    auto d3
    iface d3
        link-type dummy
    """)


@VM_TIER
def test_dummy_bond_vlan_vrf_and_vlan_aware_bridge_apply_and_read_back(session, tmp_path):
    (tmp_path / "kinds.tmpl").write_text(KINDS)
    model = compile_config(ConfigSource(path=str(tmp_path / "kinds.tmpl"))).model
    assert apply(model, session).verified
    detail = subprocess.run(["ip", "-d", "link", "show"], capture_output=True, text=True).stdout
    assert "bond mode active-backup" in detail and "miimon 100" in detail
    assert "vrf table 1001" in detail
    assert "vlan protocol 802.1Q id 100" in detail
    vlans = subprocess.run(["bridge", "vlan", "show", "dev", "d3"], capture_output=True,
                           text=True).stdout
    assert "100" in vlans and "110" in vlans
    routes = subprocess.run(["ip", "route", "show", "vrf", "red"], capture_output=True,
                            text=True).stdout
    assert "10.0.0.0/8 via 172.16.0.254 dev d0.5 proto 110" in routes
    assert apply(model, session).requests == 0   # read-back understood every kind
