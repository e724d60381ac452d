"""`ifreload -a` leaves up a stanza without `auto` that `ifup NAME` brought
up, as Debian's ifupdown2 does (its `_reload_default` skips stanzas without
`auto` both when taking changed ones down and when bringing them up;
tests/kernel/test_ipv6_after_down.py runs it): Proxmox's "Apply
Configuration" and `systemctl reload networking` run `ifreload -a`, and must
not cut an interface the admin brought up by hand. netcfg's reload applies
the stanza's config to it, as `ifup NAME` would (docs/ifupdown.md); one that
is down stays down, and what the file dropped is still removed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_env import (add_nic_standins, global_addresses as addresses, IFUPDOWN2_SANDBOX,
                       ifupdown_dirs, link_of as link)
from test_netcfgd import ip_json

from netcfg.cli.main import main as netcfg
from netcfg.ifupdown.main import main

V4, V6, GW4, GW6 = "198.51.100.10/24", "2001:db8:5::10/64", "198.51.100.1", "2001:db8:5::1"
BASE = f"""\
auto lo
iface lo inet loopback

auto eth0
iface eth0 inet static
    address 192.0.2.10/24

iface eth1 inet static
    address {V4}
    gateway {GW4}

iface eth1 inet6 static
    address {V6}
    gateway {GW6}
"""
DROPPED = "\nauto vmbr9\niface vmbr9 inet static\n    address 203.0.113.1/24\n" \
          "    bridge-ports none\n"


def up(name: str) -> bool:
    return "UP" in link(name)["flags"]


def gateways(name: str) -> list[str]:
    return sorted(r["gateway"] for family in ("-4", "-6")
                  for r in ip_json(family, "route", "show", "default", "dev", name)
                  if "gateway" in r)


@pytest.fixture
def host(session, tmp_path, monkeypatch):
    """eth0 and eth1 veth stand-ins for NICs (down, as nobody configured
    them); the commands' state dir and an empty network dir in tmp_path.
    Yields the interfaces file, with a bridge (vmbr9) the reloads below drop."""
    ifupdown_dirs(tmp_path, monkeypatch)
    add_nic_standins(("eth0", "eth1"))
    path = tmp_path / "interfaces"
    path.write_text(BASE + DROPPED)
    monkeypatch.setenv("NETCFG_INTERFACES", str(path))
    yield path
    for name in ("eth0", "eth1", "vmbr9"):
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def check_json(capsys, *argv: str) -> tuple[int, list[dict]]:
    capsys.readouterr()
    code = main(["ifquery", *argv, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


RELOADS = [["-a"], ["-a", "-X", "nomatch"], ["-c"]]


@pytest.mark.parametrize("reload", RELOADS, ids=" ".join)
def test_reload_keeps_what_ifup_name_brought_up(host, capsys, reload):
    assert main(["ifup", "-a"]) == 0
    assert up("eth0") and up("vmbr9") and not up("eth1")
    assert main(["ifup", "eth1"]) == 0
    assert up("eth1") and addresses("eth1") == sorted([V4, V6])
    assert gateways("eth1") == sorted([GW4, GW6])

    host.write_text(BASE)                  # vmbr9 dropped from the file
    capsys.readouterr()
    assert main(["ifreload", *reload]) == 0
    err = capsys.readouterr().err
    assert up("eth1"), f"ifreload took down the interface `ifup eth1` brought up: {err}"
    # Nor does it say, in Proxmox's task log, that eth1 stays down.
    assert "eth1" not in err, err
    assert addresses("eth1") == sorted([V4, V6])
    assert gateways("eth1") == sorted([GW4, GW6])
    assert up("eth0") and addresses("eth0") == ["192.0.2.10/24"]
    if reload[0] == "-a":
        assert link("vmbr9") is None       # what the file dropped is still removed

    # Proxmox's poller, both spellings: no drift after the reload.
    for argv in (["-a", "-c"], ["-c", "-a"]):
        code, checked = check_json(capsys, *argv)
        assert code == 0, checked
        assert {o["name"] for o in checked} == {"lo", "eth0"}
        assert all(o["status"] == "pass" for o in checked)
    assert main(["ifquery", "-c", "eth1"]) == 0

    # A second reload has nothing to do (the dry run's plan is empty).
    capsys.readouterr()
    assert main(["ifreload", *reload, "-n"]) == 0
    plan = capsys.readouterr().out
    assert "eth1" not in plan, plan

    # ifdown, then a reload: down stays down.
    assert main(["ifdown", "eth1"]) == 0
    assert not up("eth1") and gateways("eth1") == []
    capsys.readouterr()
    assert main(["ifreload", *reload]) == 0
    assert not up("eth1") and gateways("eth1") == []
    assert "stays down" in capsys.readouterr().err    # netcfg's warning, where it holds


@pytest.mark.parametrize("reload", RELOADS, ids=" ".join)
def test_reload_leaves_a_down_stanza_without_auto_down(host, reload):
    assert main(["ifup", "-a"]) == 0
    assert main(["ifreload", *reload]) == 0
    assert not up("eth1") and gateways("eth1") == []
    assert up("eth0") and up("vmbr9")


def test_reload_applies_the_edited_stanza_of_an_interface_brought_up(host):
    """The choice documented in docs/ifupdown.md: the stanza's edit is applied
    (ifupdown2 would leave the interface as it is until `ifup eth1`)."""
    assert main(["ifup", "eth1"]) == 0
    host.write_text(BASE.replace(V4, "198.51.100.11/24"))
    assert main(["ifreload", "-a"]) == 0
    assert up("eth1") and addresses("eth1") == sorted(["198.51.100.11/24", V6])
    assert gateways("eth1") == sorted([GW4, GW6])
    assert main(["ifquery", "-c", "eth1"]) == 0


def test_netcfg_apply_keeps_its_rule(host):
    """`netcfg apply` of the same file: no auto line, so eth1 is kept down
    (docs/compat.md "A stanza without `auto`"), unchanged by the above."""
    assert main(["ifup", "eth1"]) == 0
    assert netcfg(["apply", "-c", str(host)]) == 0
    assert not up("eth1") and gateways("eth1") == []


def test_reload_allow_class_brings_its_interfaces_up_as_ifup_allow(host):
    """`ifreload --allow=CLASS` brings the class's interfaces up, auto or not,
    as `ifup --allow=CLASS` does (ifupdown2's _iface_whitelisted takes the
    class, not `auto`, then)."""
    host.write_text(BASE + "\nallow-manual eth1\n")
    assert main(["ifreload", "--allow=manual"]) == 0
    assert up("eth1") and addresses("eth1") == sorted([V4, V6])
    assert gateways("eth1") == sorted([GW4, GW6])
    assert not up("eth0")                  # not of the class: untouched
    assert main(["ifreload", "-a"]) == 0   # and then kept up
    assert up("eth1") and up("eth0")


def test_through_netcfgd_the_reload_keeps_it_up_and_the_daemon_too(host, tmp_path, netns_dir):
    """With netcfgd running, ifreload sends the file with eth1 up (as `ifup
    eth1` does): the daemon, which enforces what it was sent, repairs eth1
    and never takes it down."""
    import os
    import sys
    import time

    from kernel_env import remove_what_netcfg_made
    from test_netcfgd import REPAIR_BOUND_S, Netcfgd, wait_for

    run = tmp_path / "run"

    def command(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "netcfg.ifupdown", *argv, "-i", str(host)],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "NETCFG_RUN_DIR": str(run)})

    assert command("ifup", "-a").returncode == 0
    daemon = Netcfgd(tmp_path, host, run_dir=run).start()
    try:
        done = command("ifup", "eth1")
        assert done.returncode == 0, done.stderr
        host.write_text(BASE)
        done = command("ifreload", "-a", "-v")
        assert done.returncode == 0 and "netcfgd applied" in done.stderr, done.stderr
        assert up("eth1") and addresses("eth1") == sorted([V4, V6])
        assert link("vmbr9") is None
        subprocess.run(["ip", "addr", "del", V4, "dev", "eth1"], check=True)
        wait_for(lambda: addresses("eth1") == sorted([V4, V6]), REPAIR_BOUND_S,
                 "netcfgd repairing eth1 after the reload")
        time.sleep(0.5)
        assert up("eth1") and gateways("eth1") == sorted([GW4, GW6])
        checked = command("ifquery", "-a", "-c", "-o", "json")
        assert checked.returncode == 0, checked.stdout + checked.stderr
    finally:
        daemon.close()
        remove_what_netcfg_made(netns_dir)


IFUPDOWN2_RUN = IFUPDOWN2_SANDBOX + """\
cp "$1" "$3"
mount --bind "$3" /etc/network/interfaces
ip link set lo up
for n in eth0 eth1; do ip link add $n type veth peer name $n-peer; ip link set $n-peer up; done
show() { ip -j link show dev eth1; ip -j addr show dev eth1 scope global
         ip -j -4 route show default; ip -j -6 route show default; }
ifup -a >/dev/null 2>&1; echo "rc $?"
ifup eth1 >/dev/null 2>&1; echo "rc $?"
ifreload -a >/dev/null 2>&1; echo "rc $?"
show
cat "$2" > "$3"
ifreload -a >/dev/null 2>&1; echo "rc $?"
show
"""


@pytest.mark.skipif(shutil.which("ifreload") is None or not Path("/usr/share/ifupdown2").is_dir(),
                    reason="Debian's ifupdown2 is not installed")
def test_ifupdown2_itself(tmp_path):
    """The peer on the same file (own network and mount namespaces): `ifup
    eth1`, `ifreload -a` leaves eth1 up with both addresses and both default
    routes, as netcfg now does. Then eth1's address edited and `ifreload -a`
    again: ifupdown2 leaves eth1 as it was (the old address), where netcfg
    applies the edit (the difference docs/ifupdown.md states)."""
    base, edited = tmp_path / "base", tmp_path / "edited"
    base.write_text(BASE)
    edited.write_text(BASE.replace(V4, "198.51.100.11/24"))
    script = tmp_path / "run.sh"
    script.write_text(IFUPDOWN2_RUN)
    out = [line for line in subprocess.run(
        ["unshare", "--net", "--mount", "--propagation", "private", "bash", str(script),
         str(base), str(edited), str(tmp_path / "interfaces")],
        capture_output=True, text=True, timeout=300).stdout.splitlines() if line.strip()]
    assert out[:3] == ["rc 0", "rc 0", "rc 0"], out
    assert out[7] == "rc 0", out

    def state(lines: list[str]) -> tuple[bool, list[str], list[str]]:
        links, addrs, v4, v6 = (json.loads(line) for line in lines)
        return ("UP" in links[0]["flags"],
                sorted(f"{a['local']}/{a['prefixlen']}" for a in addrs[0]["addr_info"]
                       if "local" in a),
                sorted(r["gateway"] for r in v4 + v6))

    assert state(out[3:7]) == (True, sorted([V4, V6]), sorted([GW4, GW6]))
    assert state(out[8:12]) == (True, sorted([V4, V6]), sorted([GW4, GW6]))


RED = """\
netns red

auto veth-red
iface veth-red
    link-type veth
    veth-peer-name eth1
    veth-peer-netns red
    address 10.0.1.1/30

iface eth1
    netns red
    address 10.0.1.2/30
"""


def test_up_is_read_in_the_stanzas_namespace(host, netns_dir):
    """eth1 of namespace red (no auto) is judged by red's eth1, not by the
    host's eth1 of the same name: the host's up leaves red's down; red's
    brought up by `ifup eth1` stays up."""
    from kernel_env import remove_what_netcfg_made

    def red_eth1() -> dict:
        return json.loads(subprocess.run(["ip", "-n", "red", "-j", "addr", "show", "dev", "eth1"],
                                         capture_output=True, text=True, check=True).stdout)[0]

    host.write_text(RED)
    try:
        assert main(["ifup", "-a"]) == 0
        subprocess.run(["ip", "link", "set", "eth1", "up"], check=True)   # the host's own
        assert main(["ifreload", "-a"]) == 0
        assert "UP" not in red_eth1()["flags"]
        assert main(["ifup", "eth1"]) == 0
        assert "UP" in red_eth1()["flags"]
        assert main(["ifreload", "-a"]) == 0
        assert "UP" in red_eth1()["flags"]
        assert "10.0.1.2" in [a.get("local") for a in red_eth1()["addr_info"]]
        assert main(["ifquery", "-a", "-c"]) == 0
    finally:
        remove_what_netcfg_made(netns_dir)


def test_hooks_run_as_ifup_name_ran_them_and_not_again(host, tmp_path):
    """`ifup eth1` runs eth1's up lines once; the reloads that keep it up run
    neither its down lines nor its up lines again; `ifdown eth1` its down
    lines."""
    log = tmp_path / "hooks.log"
    host.write_text(BASE.replace(f"    gateway {GW4}\n", f"    gateway {GW4}\n"
                                 f"    post-up echo up $IFACE >> {log}\n"
                                 f"    pre-down echo down $IFACE >> {log}\n"))
    assert main(["ifup", "-a"]) == 0
    assert not log.exists()
    assert main(["ifup", "eth1"]) == 0
    assert log.read_text() == "up eth1\n"
    assert main(["ifreload", "-a"]) == 0
    assert main(["ifreload", "-a"]) == 0
    assert up("eth1") and log.read_text() == "up eth1\n"
    assert main(["ifdown", "eth1"]) == 0
    assert log.read_text() == "up eth1\ndown eth1\n"
