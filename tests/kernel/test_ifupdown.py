"""ifup, ifdown, ifreload and ifquery (netcfg/ifupdown/) against the real
kernel, inside the sandbox (conftest.py): what they change, read back with
iproute2, and that `ifquery -c` says what `netcfg query --check` says."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

import test_netcfgd as netcfgd_tests
from test_netcfgd import ip_json

from netcfg.apply.lock import apply_lock
from netcfg.cli.main import main as netcfg
from netcfg.ifupdown.main import main

PROXMOX = textwrap.dedent("""\
    auto lo
    iface lo inet loopback

    iface eno1 inet manual

    auto vmbr0
    iface vmbr0 inet static
        address 192.0.2.10/24
        gateway 192.0.2.1
        bridge-ports eno1
        bridge-stp off
        bridge-fd 0
    """)
VMBR1 = "\nauto vmbr1\niface vmbr1 inet static\n    address 198.51.100.1/24\n" \
        "    bridge-ports none\n"


def link(name: str) -> dict | None:
    return netcfgd_tests.link("", name)


def addresses(name: str) -> list[str]:
    return sorted(netcfgd_tests.addresses("", name))


@pytest.fixture
def host(session, tmp_path, monkeypatch):
    """A Proxmox installer's layout, its NIC a veth stand-in; the commands'
    run dir and state dir in tmp_path. Yields the interfaces file."""
    monkeypatch.setenv("NETCFG_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("NETCFG_IFUPDOWN_STATE_DIR", str(tmp_path / "state"))
    subprocess.run(["ip", "link", "add", "eno1", "type", "veth", "peer", "name", "eno1-peer"],
                   check=True)
    subprocess.run(["ip", "link", "set", "eno1-peer", "up"], check=True)
    path = tmp_path / "interfaces"
    path.write_text(PROXMOX)
    monkeypatch.setenv("NETCFG_INTERFACES", str(path))
    yield path
    subprocess.run(["ip", "link", "del", "eno1"], capture_output=True)


def check_json(capsys) -> tuple[int, list[dict]]:
    capsys.readouterr()
    code = main(["ifquery", "-a", "-c", "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_ifup_a_then_ifquery_c_passes_and_agrees_with_query_check(host, capsys):
    assert main(["ifup", "-a"]) == 0
    assert link("eno1")["master"] == "vmbr0"
    assert addresses("vmbr0") == ["192.0.2.10/24"]
    code, checked = check_json(capsys)
    assert code == 0 and [o["status"] for o in checked] == ["pass", "pass"]
    assert netcfg(["query", "--check", "-c", str(host)]) == 0

    subprocess.run(["ip", "addr", "del", "192.0.2.10/24", "dev", "vmbr0"], check=True)
    code, checked = check_json(capsys)
    vmbr0 = next(o for o in checked if o["name"] == "vmbr0")
    assert code == 1 and vmbr0["status"] == "fail"
    assert vmbr0["config_status"]["address"] == "fail"
    assert vmbr0["config_status"]["bridge-ports"] == "pass"
    assert netcfg(["query", "--check", "-c", str(host)]) == 1

    assert main(["ifreload", "-a"]) == 0            # the repair
    assert addresses("vmbr0") == ["192.0.2.10/24"]
    assert check_json(capsys)[0] == 0


def test_ifreload_changes_only_what_the_edit_changed(host, capsys):
    assert main(["ifup", "-a"]) == 0
    before = {name: link(name)["ifindex"] for name in ("vmbr0", "eno1")}
    host.write_text(PROXMOX.replace("    gateway", "    address 192.0.2.20/24\n    gateway")
                    + VMBR1)
    capsys.readouterr()
    assert main(["ifreload", "-a", "-n"]) == 0
    plan = capsys.readouterr().out
    removals = [ln for ln in plan.splitlines() if ln.lstrip().startswith("-")]
    assert removals == [], plan                      # nothing taken away or flapped
    assert main(["ifreload", "-a"]) == 0
    assert {name: link(name)["ifindex"] for name in before} == before
    assert addresses("vmbr0") == ["192.0.2.10/24", "192.0.2.20/24"]
    assert addresses("vmbr1") == ["198.51.100.1/24"]
    assert link("eno1")["master"] == "vmbr0"
    # The stanza dropped again: the bridge netcfg made goes, vmbr0 stays as it is.
    host.write_text(PROXMOX)
    assert main(["ifreload", "-a"]) == 0
    assert link("vmbr1") is None
    assert link("vmbr0")["ifindex"] == before["vmbr0"]
    assert addresses("vmbr0") == ["192.0.2.10/24"]


def test_ifdown_and_ifup_one_interface(host, capsys):
    host.write_text(PROXMOX + VMBR1)
    assert main(["ifup", "-a"]) == 0
    assert main(["ifdown", "vmbr1"]) == 0
    assert link("vmbr1") is None
    assert addresses("vmbr0") == ["192.0.2.10/24"]     # the others untouched
    assert main(["ifup", "vmbr1"]) == 0
    assert addresses("vmbr1") == ["198.51.100.1/24"]
    # A port is not deleted: it goes down without the file's addresses.
    assert main(["ifdown", "vmbr0"]) == 0
    assert link("vmbr0") is None
    assert link("eno1") is not None


def test_a_held_lock_is_exit_89_and_changes_nothing(host, tmp_path, capsys):
    with apply_lock(str(tmp_path / "run")):
        assert main(["ifreload", "-a"]) == 89
    assert "already running" in capsys.readouterr().err
    assert link("vmbr0") is None


def test_an_interface_not_in_the_file_is_an_error(host, capsys):
    assert main(["ifup", "vmbr7"]) == 1
    assert "cannot find interfaces: vmbr7" in capsys.readouterr().err
    # ifup@.service for a device of another class does nothing, successfully.
    assert main(["ifup", "--allow=hotplug", "eno1"]) == 0
    assert link("vmbr0") is None


def test_absent_ports_do_not_keep_the_rest_of_the_file_down(host, capsys):
    """networking.service at boot with a NIC missing: ifupdown2 brings the
    rest up; so must the stand-in (netcfg's apply alone refuses the file)."""
    host.write_text(PROXMOX + textwrap.dedent("""\

        allow-hotplug usb0
        iface usb0 inet dhcp

        auto eno9
        iface eno9 inet manual

        auto vmbr2
        iface vmbr2 inet static
            address 203.0.113.1/24
            bridge-ports eno9 eno8
        """))
    assert main(["ifup", "-a"]) == 1
    err = capsys.readouterr().err
    assert "error: eno9: " in err and "no such device" in err
    assert "warning: eno8: " in err
    assert "usb0" not in err                      # skipped quietly, as networking.service does
    assert addresses("vmbr0") == ["192.0.2.10/24"]
    assert addresses("vmbr2") == ["203.0.113.1/24"]     # made without its absent ports
    assert main(["ifup", "--allow=hotplug", "usb0"]) == 0   # ifup@usb0 before it appears


PER_VLAN = "".join(f"auto br{v}\niface br{v}\n    bridge-ports eno1.{v}\n\n" for v in (100, 101))


def test_the_files_bridges_are_made_as_named_never_lowered(host, capsys):
    """Per-VLAN bridges stay per-VLAN bridges: guests are plugged into them
    by name (netcfg apply would merge them into one VLAN-aware bridge), and
    ifquery -c answers about the names the file has."""
    host.write_text(PER_VLAN)
    capsys.readouterr()
    assert main(["ifup", "-a", "-n"]) == 0
    plan = capsys.readouterr().out
    assert "link-add br100" in plan and "link-add br101" in plan, plan
    assert "vbr" not in plan
    assert main(["ifquery", "-a", "-c", "-o", "json"]) == 1     # nothing is up yet
    checked = json.loads(capsys.readouterr().out)
    assert [(o["name"], o["status"]) for o in checked] == [("br100", "fail"), ("br101", "fail")]


def test_changing_the_only_address_keeps_the_default_route(host, capsys):
    """Proxmox's GUI edit of vmbr0's address: the kernel drops the default
    route with the address its gateway was reached by, silently; the reload
    puts it back (it failed verification and reverted, exit 1, before)."""
    assert main(["ifup", "-a"]) == 0
    host.write_text(PROXMOX.replace("192.0.2.10/24", "192.0.2.11/24"))
    assert main(["ifreload", "-a"]) == 0, capsys.readouterr().err
    assert addresses("vmbr0") == ["192.0.2.11/24"]
    assert [r["gateway"] for r in ip_json("route", "show", "default")] == ["192.0.2.1"]
    capsys.readouterr()
    assert main(["ifquery", "-a", "-c"]) == 0


def test_ifquery_c_exit_code_follows_the_interfaces_it_shows(host, capsys):
    """Drift on a port that is not `auto` (eno1, declared `inet manual`)
    is not a verdict `ifquery -a -c` prints: every entry passes, and so does
    the exit code (it was 1 with every entry 'pass', and Proxmox's SDN
    status poller reads the code). `netcfg query --check` still sees it."""
    assert main(["ifup", "-a"]) == 0
    subprocess.run(["ip", "link", "set", "eno1", "mtu", "1400"], check=True)
    host.write_text(PROXMOX.replace("iface eno1 inet manual",
                                    "iface eno1 inet manual\n    mtu 1500"))
    code, checked = check_json(capsys)
    assert [o["status"] for o in checked] == ["pass", "pass"], checked
    assert code == 0
    assert netcfg(["query", "--check", "-c", str(host)]) != 0
