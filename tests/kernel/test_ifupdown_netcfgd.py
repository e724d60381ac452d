"""The four commands beside a running netcfgd (docs/ifupdown.md "The config,
the lock and netcfgd"): one writer, one config. ifreload goes through the
daemon, which then enforces the file; what ifdown took down stays down
through the daemon's repairs until ifup brings it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from kernel_env import remove_what_netcfg_made
from test_ifupdown import PROXMOX, VMBR1
from test_netcfgd import REPAIR_BOUND_S, Netcfgd, addresses, ip, link, wait_for

# The installer's layout (test_ifupdown.py) and a second bridge of netcfg's.
LAYOUT = PROXMOX + VMBR1


@pytest.fixture
def host(tmp_path, netns_dir):
    ip("link", "add", "eno1", "type", "veth", "peer", "name", "eno1-peer")
    ip("link", "set", "eno1-peer", "up")
    path = tmp_path / "interfaces"
    path.write_text(LAYOUT)
    daemons: list[Netcfgd] = []
    yield path, daemons
    for daemon in daemons:
        daemon.close()
    remove_what_netcfg_made(netns_dir)
    subprocess.run(["ip", "link", "del", "eno1"], capture_output=True)


def command(run_dir, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netcfg.ifupdown", *argv], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "NETCFG_RUN_DIR": str(run_dir)})


def test_ifreload_and_ifdown_through_netcfgd(host, tmp_path):
    path, daemons = host
    run = tmp_path / "run"
    boot = command(run, "ifup", "-a", "-i", str(path))        # networking.service at boot
    assert boot.returncode == 0, boot.stderr
    daemon = Netcfgd(tmp_path, path, run_dir=run).start()
    daemons.append(daemon)

    checked = command(run, "ifquery", "-a", "-c", "-o", "json", "-i", str(path))
    assert checked.returncode == 0, checked.stderr
    assert {o["name"]: o["status"] for o in json.loads(checked.stdout)} == \
        {"lo": "pass", "vmbr0": "pass", "vmbr1": "pass"}

    path.write_text(LAYOUT.replace("    gateway", "    address 192.0.2.20/24\n    gateway"))
    reload = command(run, "ifreload", "-a", "-v", "-i", str(path))
    assert reload.returncode == 0, reload.stderr
    assert "netcfgd applied" in reload.stderr
    assert addresses("", "vmbr0") == {"192.0.2.10/24", "192.0.2.20/24"}

    down = command(run, "ifdown", "vmbr1", "-i", str(path))
    assert down.returncode == 0, down.stderr
    assert link("", "vmbr1") is None
    # The daemon goes on repairing the rest, and leaves vmbr1 down.
    ip("addr", "del", "192.0.2.20/24", "dev", "vmbr0")
    wait_for(lambda: addresses("", "vmbr0") == {"192.0.2.10/24", "192.0.2.20/24"},
             REPAIR_BOUND_S, "netcfgd repairing vmbr0 after the ifdown")
    time.sleep(0.5)
    assert link("", "vmbr1") is None

    up = command(run, "ifup", "vmbr1", "-i", str(path))
    assert up.returncode == 0, up.stderr
    assert addresses("", "vmbr1") == {"198.51.100.1/24"}
    ip("addr", "del", "198.51.100.1/24", "dev", "vmbr1")
    wait_for(lambda: addresses("", "vmbr1") == {"198.51.100.1/24"}, REPAIR_BOUND_S,
             "netcfgd enforcing the file again after ifup")
