"""Switching a host from ifupdown2 with `vrrp` lines (plan/vrrp.py): the
macvlans ifupdown2's addressvirtual addon made (vrrpF-IFINDEX-ID, the VRRP
MAC, on the interface), built here by hand as it makes them, are replaced by
netcfg's (vrrpF-PARENT-ID) in one apply: before, the kernel refused netcfg's
second up macvlan with the same MAC on eth0 (EADDRINUSE) and the takeover
reverted. A macvlan that matches all but one of the conditions (MAC, name,
lower device, kind) is another program's and stays as it is.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from builders import compiled

from netcfg.apply.execute import ApplyFailed, apply
from netcfg.plan.ops import LINK_DEL

CONFIG = textwrap.dedent("""\
    auto eth0
    iface eth0
        address 192.168.10.2/24
        address fc00:192:168:10::2/64
        vrrp 10 192.168.10.1 fc00:192:168:10::1
        vrrp 20 192.168.11.1
    """)


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def links() -> dict[str, dict]:
    return {d["ifname"]: d for d in json.loads(ip("-d", "-j", "link", "show"))}


def addresses(dev: str) -> set[str]:
    info = json.loads(ip("-j", "addr", "show", "dev", dev))[0]["addr_info"]
    return {f"{a['local']}/{a['prefixlen']}" for a in info if a["scope"] == "global"}


def ifindex(name: str) -> int:
    return links()[name]["ifindex"]


def macvlan(name: str, lower: str, mac: str, *addrs: str) -> None:
    """As ifupdown2 makes one (`ip link add ... type macvlan mode bridge`,
    then its MAC, addresses, up)."""
    ip("link", "add", name, "link", lower, "type", "macvlan", "mode", "bridge")
    ip("link", "set", name, "address", mac)
    for addr in addrs:
        ip("addr", "add", addr, "dev", name)
    ip("link", "set", name, "up")


@pytest.fixture
def eth0():
    """Stand-in ports: veth ends whose peers are up."""
    for name in ("eth0", "eth1"):
        ip("link", "add", name, "type", "veth", "peer", "name", f"{name}-peer")
        ip("link", "set", f"{name}-peer", "up")
        ip("link", "set", name, "up")
    yield
    for name in ("eth0", "eth1"):
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def deleted(result) -> set[str]:
    return {op.name for op in result.plan.operations if op.action == LINK_DEL}


def test_ifupdown2s_vrrp_macvlans_are_replaced(session, tmp_path, eth0, capsys):
    from netcfg.cli.main import main

    index = ifindex("eth0")
    theirs4, theirs6 = f"vrrp4-{index}-10", f"vrrp6-{index}-10"
    macvlan(theirs4, "eth0", "00:00:5e:00:01:0a", "192.168.10.1/32")
    macvlan(theirs6, "eth0", "00:00:5e:00:02:0a", "fc00:192:168:10::1/128")
    # All but one condition: another MAC (vrrp 20's name on eth0), another
    # lower device (vrrp 20's name and MAC, on eth1).
    other_mac = f"vrrp4-{index}-20"
    macvlan(other_mac, "eth0", "02:00:00:00:00:14", "192.0.2.20/32")
    other_lower = f"vrrp4-{ifindex('eth1')}-20"
    macvlan(other_lower, "eth1", "00:00:5e:00:01:14")
    path = tmp_path / "interfaces"
    path.write_text(CONFIG)

    # query --check and a dry run say it; nothing is written.
    assert main(["query", "--check", "-c", str(path)]) == 1
    out = capsys.readouterr().out
    assert (f"{path}:5: drift: {theirs4} is ifupdown2's macvlan for this vrrp line (on eth0, "
            f"same VRRP MAC); netcfg replaces it with vrrp4-eth0-10") in out, out
    assert theirs6 in out and other_mac not in out and other_lower not in out, out
    planned = apply(compiled(tmp_path, CONFIG).model, session, dry_run=True)
    assert deleted(planned) == {theirs4, theirs6}
    assert {theirs4, theirs6} <= links().keys()

    result = apply(compiled(tmp_path, CONFIG).model, session)
    assert result.verified and deleted(result) == {theirs4, theirs6}
    now = links()
    assert theirs4 not in now and theirs6 not in now
    assert now["vrrp4-eth0-10"]["address"] == "00:00:5e:00:01:0a"
    assert now["vrrp6-eth0-10"]["address"] == "00:00:5e:00:02:0a"
    assert addresses("vrrp4-eth0-10") == {"192.168.10.1/32"}
    assert addresses("vrrp6-eth0-10") == {"fc00:192:168:10::1/128"}
    # The near misses are as they were.
    assert now[other_mac]["address"] == "02:00:00:00:00:14" and now[other_mac]["link"] == "eth0"
    assert addresses(other_mac) == {"192.0.2.20/32"}
    assert now[other_lower]["address"] == "00:00:5e:00:01:14"
    assert now[other_lower]["link"] == "eth1"
    capsys.readouterr()
    assert main(["query", "--check", "-c", str(path)]) == 0, capsys.readouterr()
    assert apply(compiled(tmp_path, CONFIG).model, session).requests == 0


def test_a_macvlan_named_otherwise_is_left_and_the_apply_still_refused(session, tmp_path,
                                                                          eth0):
    """The VRRP MAC on eth0 under another name (here: vrrp 20's, after
    eth1's ifindex) is not ifupdown2's for this line: netcfg leaves it, and
    the kernel's EADDRINUSE reverts the apply, as before; the revert puts
    back ifupdown2's vrrp 10 macvlan, which the apply had replaced."""
    theirs = f"vrrp4-{ifindex('eth0')}-10"
    macvlan(theirs, "eth0", "00:00:5e:00:01:0a", "192.168.10.1/32")
    stranger = f"vrrp4-{ifindex('eth1')}-20"
    macvlan(stranger, "eth0", "00:00:5e:00:01:14", "192.168.11.1/32")
    model = compiled(tmp_path, CONFIG).model
    assert deleted(apply(model, session, dry_run=True)) == {theirs}
    with pytest.raises(ApplyFailed, match="EADDRINUSE"):
        apply(model, session)
    now = links()
    assert now[stranger]["address"] == "00:00:5e:00:01:14" and now[stranger]["link"] == "eth0"
    assert addresses(stranger) == {"192.168.11.1/32"}
    assert now[theirs]["address"] == "00:00:5e:00:01:0a" and now[theirs]["link"] == "eth0"
    assert addresses(theirs) == {"192.168.10.1/32"} and "UP" in now[theirs]["flags"]
    assert now[theirs].get("proto_down") is True   # as ifupdown2 makes it, until vrrpd
    assert "vrrp4-eth0-10" not in now and "vrrp4-eth0-20" not in now
