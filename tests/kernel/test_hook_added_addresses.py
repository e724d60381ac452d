"""What an interface's own `up` lines add (`up ip address add ... dev
$IFACE`, the Hetzner/OVH Proxmox guides' and freifunk's gateway files) is
kept by the next apply and is no drift, as long as the lines and the
interface's up state hold (issue 22: freifunk-gateways ...-L22, whose IPv6
address the second apply removed, and `query --check` then failed). netcfg
runs the lines once (ifupdown2 #192), so removing what they added would leave
it away for good. Changed lines, or the interface brought up again: the old
addresses go and the lines, run again, add theirs. Against the real kernel
inside the sandbox (conftest.py), through the CLI with its own run dir."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from netcfg.apply.hookrecord import load
from netcfg.cli.main import main

NAME = "hka0"


def ip_json(*args: str):
    out = subprocess.run(["ip", "-j", *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def addresses() -> set[str]:
    """NAME's addresses, less the kernel's link-local."""
    found = ip_json("address", "show", "dev", NAME)
    return {f"{a['local']}/{a['prefixlen']}" for a in found[0]["addr_info"]
            if not a["local"].startswith("fe80:")} if found else set()


def routes() -> list[str]:
    return [r["dst"] for r in ip_json("route", "show", "dev", NAME) if r["dst"] != "default"]


def config(tmp_path, host: int) -> str:
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent(f"""\
        auto {NAME}
        iface {NAME} inet static
            bridge-ports none
            address 10.78.0.1/24
            up ip address add fd00:78::{host}/64 dev $IFACE
            up ip address add 10.78.0.{host}/24 dev $IFACE
            post-up ip route add 198.51.100.0/24 dev $IFACE
            down ip route del 198.51.100.0/24 dev $IFACE
        """))
    return str(path)


@pytest.fixture
def cleanup():
    yield
    subprocess.run(["ip", "link", "del", NAME], capture_output=True)


def check(path: str, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["query", "--check", "-c", path])
    return code, capsys.readouterr().out


def test_what_up_lines_added_survives_the_next_apply_and_is_no_drift(tmp_path, capsys,
                                                                     cleanup, monkeypatch):
    path = config(tmp_path, 5)
    assert main(["apply", "-c", path]) == 0
    added = {"fd00:78::5/64", "10.78.0.5/24"}
    assert addresses() == {"10.78.0.1/24", *added}
    record = load(str(tmp_path / "netcfg-run" / "hooks.json"))
    assert set(record.entries[("", NAME)].added) == added

    # Nothing changed: the lines do not run again, and what they added stays.
    assert main(["apply", "-c", path]) == 0
    assert addresses() == {"10.78.0.1/24", *added}
    assert check(path, capsys) == (0, "ok: the kernel matches the config\n")
    # Another program's route on the device was left alone before and is now.
    assert routes() == ["10.78.0.0/24", "198.51.100.0/24"]

    # An address nobody's line added is still netcfg's to remove.
    subprocess.run(["ip", "address", "add", "10.78.0.99/24", "dev", NAME], check=True)
    code, out = check(path, capsys)
    assert code == 1 and "10.78.0.99/24" in out
    assert main(["apply", "-c", path]) == 0
    assert addresses() == {"10.78.0.1/24", *added}

    # Lines changed: the old addresses go, the new lines add theirs.
    path = config(tmp_path, 6)
    capsys.readouterr()
    assert main(["apply", "-c", path]) == 0
    assert "failed" not in capsys.readouterr().out
    added = {"fd00:78::6/64", "10.78.0.6/24"}
    assert addresses() == {"10.78.0.1/24", *added}
    assert check(path, capsys) == (0, "ok: the kernel matches the config\n")
    assert routes() == ["10.78.0.0/24", "198.51.100.0/24"]

    # Down and up again outside netcfg: the lines run again as it comes up,
    # after what they added before was removed (no `File exists`). (The
    # down line fails: the kernel took the route with the link.)
    subprocess.run(["ip", "link", "set", NAME, "down"], check=True)
    capsys.readouterr()
    assert main(["apply", "-c", path]) == 0
    ran = [line for line in capsys.readouterr().out.splitlines() if " up '" in line]
    assert ran == [f"applied: {NAME}: up 'ip address add fd00:78::6/64 dev $IFACE': ok",
                   f"applied: {NAME}: up 'ip address add 10.78.0.6/24 dev $IFACE': ok"]
    assert addresses() == {"10.78.0.1/24", *added}
    assert check(path, capsys) == (0, "ok: the kernel matches the config\n")


def test_a_switch_from_ifupdown2_keeps_what_its_up_lines_added(tmp_path, capsys, cleanup):
    """ifupdown2 brought the interface up and ran its lines; netcfg's first
    apply adopts it (no record: nothing runs) and keeps the addresses the
    lines name (`ip address add ADDRESS dev $IFACE`): the takeover the compat
    differential measures on freifunk-gateways ...-L22 (was: addr-del)."""
    path = config(tmp_path, 7)
    for command in (["link", "add", NAME, "type", "bridge"],
                    ["address", "add", "10.78.0.1/24", "dev", NAME],
                    ["link", "set", NAME, "up"],
                    ["address", "add", "fd00:78::7/64", "dev", NAME],
                    ["address", "add", "10.78.0.7/24", "dev", NAME],
                    ["address", "add", "10.78.0.98/24", "dev", NAME]):   # by hand
        subprocess.run(["ip", *command], check=True)
    capsys.readouterr()
    assert main(["apply", "-c", path]) == 0
    assert " up '" not in capsys.readouterr().out      # adopted: its lines ran before
    kept = {"10.78.0.1/24", "fd00:78::7/64", "10.78.0.7/24"}
    assert addresses() == kept                         # the one added by hand went
    assert main(["apply", "-c", path]) == 0
    assert addresses() == kept
    assert check(path, capsys) == (0, "ok: the kernel matches the config\n")


def test_netcfgd_keeps_what_the_plain_up_lines_added(tmp_path, netns_dir):
    """netcfgd runs up lines in its worker, after the pass: the addresses
    they add come back to it as events, and the next pass must not remove
    them (the plain `ip address add ADDRESS dev $IFACE` form: its lines are
    not watched while they run); its `query --check` answers ok."""
    import time

    from kernel_env import remove_what_netcfg_made
    from test_netcfgd import Netcfgd, cli, wait_for

    path = config(tmp_path, 8)
    daemon = Netcfgd(tmp_path, tmp_path / "interfaces", run_dir=tmp_path / "run").start()
    try:
        added = {"fd00:78::8/64", "10.78.0.8/24"}
        wait_for(lambda: addresses() == {"10.78.0.1/24", *added}, 10,
                 "netcfgd bringing hka0 up with its up lines' addresses (were: removed by "
                 "the next pass)")
        time.sleep(1.5)   # the passes the addresses' events start (were: addr-del)
        assert addresses() == {"10.78.0.1/24", *added}
        check = cli(daemon.run_dir, "query", "--check", "-c", path)
        assert check.returncode == 0, check.stdout + check.stderr
    finally:
        daemon.close()
        remove_what_netcfg_made(netns_dir)
