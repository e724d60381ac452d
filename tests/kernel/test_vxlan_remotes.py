"""A vxlan's remotes (vxlan-remoteip: head-end replication), svcnodeip,
physdev and purge-remotes, against the real kernel (issue 12; docs/compat.md).
Inside the sandbox (conftest.py); state is read back with iproute2's
`bridge -j fdb show` and `ip -d -j link show`, as ifupdown2 reads it.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from test_netcfgd import make_daemon  # noqa: F401 - the fixture, shared

from netcfg.apply.execute import apply
from netcfg.cli.main import main
from netcfg.compile.emit import emit_model
from netcfg.compile.pipeline import ConfigSource, compile_config

# Proxmox SDN's VXLAN zone (pve-network src/test/zones/vxlan/basic).
SDN = textwrap.dedent("""\
    auto myvnet
    iface myvnet
        bridge_ports vxlan_myvnet
        bridge_stp off
        mtu 1450

    auto vxlan_myvnet
    iface vxlan_myvnet
        vxlan-id 100
    {remotes}
        mtu 1450
    """)


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def remotes(dev: str) -> list[str]:
    """The all-zeros entries' destinations, as ifupdown2 reads them
    (`bridge fdb show brport DEV | grep 00:00:00:00:00:00`)."""
    entries = json.loads(run("bridge", "-j", "fdb", "show", "dev", dev) or "[]")
    for e in entries:
        if e["mac"] == "00:00:00:00:00:00":
            assert e["flags"] == ["self"] and e["state"] == "permanent", e
    return sorted(e["dst"] for e in entries if e["mac"] == "00:00:00:00:00:00")


def info_data(dev: str) -> dict:
    return json.loads(run("ip", "-d", "-j", "link", "show", "dev", dev))[0]["linkinfo"]["info_data"]


def compiled(tmp_path, text: str):
    path = tmp_path / "interfaces"
    path.write_text(text)
    return path, compile_config(ConfigSource(path=str(path))).model


def sdn(*addresses: str) -> str:
    return SDN.format(remotes="\n".join(f"    vxlan_remoteip {a}" for a in addresses))


@pytest.fixture
def cleanup():
    yield
    for name in ("vxlan_myvnet", "myvnet", "vx0", "vx1", "under0", "vx_ptp1", "vx_her"):
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def test_several_remotes_are_forwarding_entries_and_converge(session, tmp_path, cleanup):
    path, desired = compiled(tmp_path, sdn("192.168.0.2", "192.168.0.3"))
    result = apply(desired, session)
    assert result.verified
    assert remotes("vxlan_myvnet") == ["192.168.0.2", "192.168.0.3"]
    # As ifupdown2: no IFLA_VXLAN_GROUP, the remotes are entries only.
    assert "remote" not in info_data("vxlan_myvnet") and "group" not in info_data("vxlan_myvnet")
    # A VXLAN port of a snooping bridge is a multicast router port, as ifupdown2 makes it.
    port = json.loads(run("ip", "-d", "-j", "link", "show", "dev", "vxlan_myvnet"))[0]
    assert port["linkinfo"]["info_slave_data"]["multicast_router"] == 2
    again = apply(desired, session)
    assert again.requests == 0 and len(again.plan) == 0
    assert main(["query", "--check", "-c", str(path)]) == 0

    # One dropped from the file goes, one added comes; nothing else is sent.
    path, desired = compiled(tmp_path, sdn("192.168.0.3", "192.168.0.4"))
    changed = apply(desired, session)
    assert sorted(op.describe() for op in changed.plan.operations) == [
        "+ fdb-add vxlan_myvnet 192.168.0.4", "- fdb-del vxlan_myvnet 192.168.0.2"]
    assert changed.requests == 2
    assert remotes("vxlan_myvnet") == ["192.168.0.3", "192.168.0.4"]

    # Drift: an entry deleted by hand, and another program's, are reported
    # and repaired (netcfg owns the remotes of a device that writes them).
    run("bridge", "fdb", "del", "00:00:00:00:00:00", "dev", "vxlan_myvnet", "dst", "192.168.0.3")
    run("bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vxlan_myvnet",
        "dst", "192.168.0.9")
    assert main(["query", "--check", "-c", str(path)]) == 1
    assert apply(desired, session).requests == 2
    assert remotes("vxlan_myvnet") == ["192.168.0.3", "192.168.0.4"]


def test_svcnodeip_is_the_group_and_never_a_remote(session, tmp_path, cleanup):
    text = textwrap.dedent("""\
        auto vx0
        iface vx0
            vxlan-id 42
            vxlan-local-tunnelip 172.16.20.105
            vxlan-svcnodeip 172.16.22.126
            vxlan-remoteip 172.16.22.128
            vxlan-remoteip 172.16.22.126
            vxlan-remoteip 172.16.20.105
            vxlan-ageing 30
            vxlan-learning yes
        """)
    path, desired = compiled(tmp_path, text)
    assert apply(desired, session).verified
    data = info_data("vx0")
    assert data["remote"] == "172.16.22.126" and data["ageing"] == 30 and data["learning"]
    # The group's entry is the kernel's; the local address is skipped (ifupdown2 does both).
    assert remotes("vx0") == ["172.16.22.126", "172.16.22.128"]
    assert apply(desired, session).requests == 0
    # A new service node: the kernel moves its entry, the remotes stay.
    path, desired = compiled(tmp_path, text.replace("svcnodeip 172.16.22.126",
                                                    "svcnodeip 172.16.22.127"))
    assert apply(desired, session).verified
    assert info_data("vx0")["remote"] == "172.16.22.127"
    assert remotes("vx0") == ["172.16.22.126", "172.16.22.127", "172.16.22.128"]
    assert apply(desired, session).requests == 0
    assert main(["query", "--check", "-c", str(path)]) == 0


def test_purge_remotes_decides_for_a_device_without_remoteip(session, tmp_path, cleanup):
    base = "auto vx1\niface vx1\n    vxlan-id 7\n    vxlan-local-tunnelip 10.0.0.1\n"
    _, desired = compiled(tmp_path, base)
    assert apply(desired, session).verified
    # An EVPN daemon's entry: left alone without vxlan-purge-remotes (ifupdown2's default).
    run("bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vx1", "dst", "10.0.0.5")
    assert apply(desired, session).requests == 0
    assert remotes("vx1") == ["10.0.0.5"]
    path, desired = compiled(tmp_path, base + "    vxlan-purge-remotes yes\n")
    assert apply(desired, session).requests == 1
    assert remotes("vx1") == []
    assert main(["query", "--check", "-c", str(path)]) == 0


def test_physdev_is_the_underlay_device(session, tmp_path, cleanup):
    run("ip", "link", "add", "under0", "type", "veth", "peer", "name", "under0-peer")
    text = textwrap.dedent("""\
        auto vx0
        iface vx0
            vxlan-id 42
            vxlan-physdev under0
            vxlan-svcnodeip 239.1.1.1
        """)
    path, desired = compiled(tmp_path, text)
    result = apply(desired, session)
    assert result.verified
    data = info_data("vx0")
    assert data["link"] == "under0" and data["group"] == "239.1.1.1"
    # It comes up first, as ifupdown2 brings a dependency up.
    assert "UP" in json.loads(run("ip", "-j", "link", "show", "dev", "under0"))[0]["flags"]
    assert apply(desired, session).requests == 0
    assert main(["query", "--check", "-c", str(path)]) == 0


def test_netcfgd_puts_back_a_deleted_remote(make_daemon):  # noqa: F811 - the fixture
    """netcfgd hears forwarding-entry changes (RTNLGRP_NEIGH, filtered to a
    vxlan's all-zeros entries) and repairs them like any drift."""
    from test_netcfgd import REPAIR_BOUND_S, cli, wait_for
    daemon = make_daemon(sdn("192.168.0.2", "192.168.0.3"))
    try:
        assert remotes("vxlan_myvnet") == ["192.168.0.2", "192.168.0.3"]
        run("bridge", "fdb", "del", "00:00:00:00:00:00", "dev", "vxlan_myvnet",
            "dst", "192.168.0.3")
        wait_for(lambda: remotes("vxlan_myvnet") == ["192.168.0.2", "192.168.0.3"],
                 REPAIR_BOUND_S, "the deleted remote to come back")
        run("bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vxlan_myvnet",
            "dst", "192.168.0.9")
        wait_for(lambda: remotes("vxlan_myvnet") == ["192.168.0.2", "192.168.0.3"],
                 REPAIR_BOUND_S, "the unconfigured remote to go")
        check = cli(daemon.run_dir, "query", "--check", "-c", str(daemon.config))
        assert check.returncode == 0, check.stdout + check.stderr
    finally:
        for name in ("vxlan_myvnet", "myvnet"):
            subprocess.run(["ip", "link", "del", name], capture_output=True)


# ifupdown-ng's vxlan executor's keys (its doc/interfaces-vxlan.scd, lines
# 118 and 131): vxlan-local-ip, and vxlan-peer-ips with one peer (`ip link
# add ... remote IP`: the device's own destination) or several (one
# `bridge fdb append 00:00:00:00:00:00 ... dst IP self permanent` each);
# dstport 4789 unless vxlan-dstport says otherwise.
NG = textwrap.dedent("""\
    auto vx_ptp1
    iface vx_ptp1
    \tvxlan-id        2342
    \tvxlan-local-ip  192.0.2.42
    \tvxlan-peer-ips  198.51.100.23

    auto vx_her
    iface vx_her
    \tvxlan-id\t1337
    \tvxlan-local-ip\t2001:db8:1::1
    \tvxlan-peer-ips  2001:db8:2::23 2001:db8:3::42 2001:db8:4::84
    \tvxlan-dstport 4790
    """)


def test_ifupdown_ng_vxlan_keys_make_what_its_executor_makes(session, tmp_path, cleanup):
    path, desired = compiled(tmp_path, NG)
    assert apply(desired, session).verified
    ptp = info_data("vx_ptp1")
    assert (ptp["id"], ptp["local"], ptp.get("remote"), ptp["port"]) == \
        (2342, "192.0.2.42", "198.51.100.23", 4789), ptp
    assert remotes("vx_ptp1") == ["198.51.100.23"]   # the kernel's own entry for `remote`
    her = info_data("vx_her")
    assert (her["id"], her.get("local6"), her["port"]) == (1337, "2001:db8:1::1", 4790), her
    assert not {"group", "group6", "remote", "remote6"} & set(her), her
    assert remotes("vx_her") == ["2001:db8:2::23", "2001:db8:3::42", "2001:db8:4::84"]
    text = emit_model(session.read([""]), running=True)
    assert "vxlan-remoteip" in text and "vxlan-svcnodeip 198.51.100.23" in text, text
    again = apply(compile_config(ConfigSource(path="-", stdin_text=text)).model, session)
    assert again.verified and again.requests == 0, [op.describe() for op in again.plan.operations]
    # Drift: a peer's entry deleted by hand comes back.
    run("bridge", "fdb", "del", "00:00:00:00:00:00", "dev", "vx_her", "dst", "2001:db8:3::42",
        "self")
    assert apply(desired, session).verified
    assert remotes("vx_her") == ["2001:db8:2::23", "2001:db8:3::42", "2001:db8:4::84"]
    assert apply(desired, session).requests == 0


def test_a_vxlan_mtu_fits_its_underlay_less_the_encapsulation(session, tmp_path, cleanup):
    # 1560 over an underlay of 1610 is the most the kernel takes (VXLAN_HEADROOM
    # 50); check refuses 1600 (kinds/vxlan.py), which the kernel refuses too.
    text = ("auto under0\niface under0\n    link-type veth\n    veth-peer-name under1\n"
            "    mtu {under}\n\nauto vx0\niface vx0\n    vxlan-id 9\n    vxlan-physdev under0\n"
            "    vxlan-local-ip 192.0.2.1\n    mtu 1560\n")
    path, desired = compiled(tmp_path, text.format(under=1610))
    assert apply(desired, session).verified
    assert json.loads(run("ip", "-j", "link", "show", "dev", "vx0"))[0]["mtu"] == 1560
    assert apply(desired, session).requests == 0
    refused = subprocess.run(["ip", "link", "set", "vx0", "mtu", "1561"], capture_output=True)
    assert refused.returncode != 0   # the kernel's limit, which the check says
    path.write_text(text.format(under=1600))
    assert main(["check", "-c", str(path)]) == 1
