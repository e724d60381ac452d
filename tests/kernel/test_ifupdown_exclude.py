"""`-X PATTERN` (networking.service's EXCLUDE_INTERFACES, which
start-networking passes to `ifup -a`, `ifdown -a` and `ifreload -a`) leaves
the interfaces it matches as they are in the kernel: not created, changed,
brought up or down, nor removed, their hook lines not run; `ifquery -a -c`
does not report them. As ifupdown2 (ifupdownmain.py `_iface_whitelisted`,
`populate_dependency_info`), an excluded interface that one brought up needs
(a port of its bridge) is configured with it, with a warning."""

from __future__ import annotations

import subprocess

import pytest
from kernel_env import add_nic_standins, ifupdown_dirs
from kernel_env import global_addresses as addresses
from kernel_env import link_of as link

from netcfg.ifupdown.main import main

OLD, NEW = "192.0.2.11/24", "192.0.2.12/24"


def config(eth1: str = OLD, eth0: str = "192.0.2.10/24", extra: str = "") -> str:
    return f"""\
auto lo
iface lo inet loopback

auto eth0 eth1
iface eth0 inet static
    address {eth0}

iface eth1 inet static
    address {eth1}
    up touch {{marker}}
{extra}"""


def up(name: str) -> bool:
    return "UP" in link(name)["flags"]


@pytest.fixture
def host(session, tmp_path, monkeypatch):
    """eth0 and eth1 veth stand-ins for NICs (down, unconfigured); a writer
    of the interfaces file whose eth1 `up` line touches a marker file."""
    ifupdown_dirs(tmp_path, monkeypatch)
    add_nic_standins(("eth0", "eth1"))
    path, marker = tmp_path / "interfaces", tmp_path / "eth1-up-ran"
    monkeypatch.setenv("NETCFG_INTERFACES", str(path))

    def write(text: str):
        path.write_text(text.replace("{marker}", str(marker)))
        return marker

    yield write
    for name in ("eth0", "eth1", "vmbr0", "vmbr9"):
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def test_ifup_a_x_leaves_eth1_unconfigured_and_down(host):
    marker = host(config())
    assert main(["ifup", "-a", "-X", "eth1"]) == 0
    assert up("eth0") and addresses("eth0") == ["192.0.2.10/24"]
    assert not up("eth1") and addresses("eth1") == []
    assert not marker.exists()        # its up line did not run


def test_ifreload_a_x_leaves_eth1_as_it_was(host, capsys):
    marker = host(config())
    assert main(["ifup", "-a"]) == 0
    assert addresses("eth1") == [OLD] and marker.exists()
    marker.unlink()
    host(config(eth1=NEW, eth0="192.0.2.20/24"))
    assert main(["ifreload", "-a", "-X", "eth1"]) == 0
    assert addresses("eth1") == [OLD] and up("eth1")       # not changed
    assert addresses("eth0") == ["192.0.2.20/24"]           # the rest reloaded
    assert not marker.exists()
    # ifquery -a -c -X eth1 neither prints eth1 nor fails on its drift.
    capsys.readouterr()
    assert main(["ifquery", "-a", "-c", "-X", "eth1"]) == 0
    out = capsys.readouterr().out
    assert "eth0" in out and "eth1" not in out
    assert main(["ifquery", "-a", "-c"]) == 1               # the drift is there
    assert main(["ifreload", "-a"]) == 0
    assert addresses("eth1") == [NEW]


def test_ifdown_a_x_leaves_eth1_up(host):
    host(config())
    assert main(["ifup", "-a"]) == 0
    assert main(["ifdown", "-a", "-X", "eth1"]) == 0
    assert not up("eth0") and addresses("eth0") == []
    assert up("eth1") and addresses("eth1") == [OLD]


def test_ifreload_a_x_keeps_a_dropped_bridge(host):
    """A bridge netcfg made that the file no longer has is not removed when
    excluded (ifupdown2's reload downs only the old interfaces -X did not
    match)."""
    bridge = "\nauto vmbr9\niface vmbr9 inet static\n    address 203.0.113.1/24\n" \
             "    bridge-ports none\n"
    host(config(extra=bridge))
    assert main(["ifup", "-a"]) == 0
    assert link("vmbr9") is not None
    host(config())
    assert main(["ifreload", "-a", "-X", "vmbr"]) == 0
    assert link("vmbr9") is not None and addresses("vmbr9") == ["203.0.113.1/24"]
    assert main(["ifreload", "-a"]) == 0
    assert link("vmbr9") is None


def test_excluded_bridge_is_not_made_its_port_is_configured(host):
    """ifupdown2 drops an excluded interface nothing brought up needs: the
    bridge is not made, its port (auto, not excluded) comes up alone."""
    bridge = "\nauto vmbr0\niface vmbr0 inet static\n    address 203.0.113.1/24\n" \
             "    bridge-ports eth1\n"
    host(config(extra=bridge))
    assert main(["ifup", "-a", "-X", "vmbr0"]) == 0
    assert link("vmbr0") is None
    assert up("eth1") and "master" not in link("eth1")


def test_excluded_port_of_a_bridge_brought_up_is_configured_with_a_warning(host, capsys):
    """ifupdown2 brings up an excluded interface that one it brings up needs."""
    bridge = "\nauto vmbr0\niface vmbr0 inet static\n    address 203.0.113.1/24\n" \
             "    bridge-ports eth1\n"
    host(config(extra=bridge))
    assert main(["ifup", "-a", "-X", "eth1"]) == 0
    assert link("eth1")["master"] == "vmbr0" and up("eth1")
    err = capsys.readouterr().err
    assert "warning: eth1: excluded (-X) but needed by vmbr0" in err
    assert "Traceback" not in err


def test_ifdown_a_x_takes_down_an_excluded_port_of_a_bridge_it_deletes(host, capsys):
    """As ifupdown2 takes down a dependency of what it takes down: vmbr0
    deleted, its excluded port eth1 taken down with it (said); eth0 too."""
    bridge = "\nauto vmbr0\niface vmbr0 inet static\n    address 203.0.113.1/24\n" \
             "    bridge-ports eth1\n"
    host(config(extra=bridge))
    assert main(["ifup", "-a"]) == 0
    assert link("eth1")["master"] == "vmbr0"
    capsys.readouterr()
    assert main(["ifdown", "-a", "-X", "eth1"]) == 0
    assert "warning: eth1: excluded (-X) but needed by vmbr0, which is not excluded: taken " \
           "down with it" in capsys.readouterr().err
    assert link("vmbr0") is None and not up("eth0")
    assert not up("eth1") and addresses("eth1") == []


def test_bad_pattern_is_a_usage_error(host, capsys):
    host(config())
    assert main(["ifreload", "-a", "-X", "eth[1"]) == 90
    assert "-X eth[1: not a regular expression" in capsys.readouterr().err


def test_with_netcfgd_a_change_to_an_excluded_stanza_is_refused(host, tmp_path, capsys):
    """netcfgd applies and enforces the whole file it is sent: it cannot
    leave eth1 alone, so a reload whose apply would change eth1 is refused
    (exit 1, nothing changed) rather than -X ignored; one that would not
    (ifdown -a -X eth1 with eth1 as the file has it: networking.service's
    stop passes -X '^lo$') goes through the daemon."""
    from test_netcfgd import Netcfgd

    host(config())
    assert main(["ifup", "-a"]) == 0
    path = tmp_path / "interfaces"
    daemon = Netcfgd(tmp_path, path, run_dir=tmp_path / "netcfg-run").start()
    try:
        host(config(eth1=NEW, eth0="192.0.2.20/24"))
        capsys.readouterr()
        assert main(["ifreload", "-a", "-X", "eth1"]) == 1
        err = capsys.readouterr().err
        assert "netcfgd runs and applies the whole file, so it cannot leave" in err
        assert f"it would do: - addr-del eth1 {OLD}; + addr-add eth1 {NEW}." in err
        assert err.startswith("error: eth1: -X eth1: ")     # as Proxmox's task log keeps it
        assert "Traceback" not in err
        assert addresses("eth1") == [OLD] and addresses("eth0") == ["192.0.2.10/24"]
        host(config())
        assert main(["ifdown", "-a", "-v", "-X", "eth1"]) == 0
        assert "netcfgd applied" in capsys.readouterr().err
        assert up("eth1") and addresses("eth1") == [OLD]
        assert not up("eth0")
    finally:
        daemon.close()
