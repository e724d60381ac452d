"""ifupdown2's implicit behaviour, applied by netcfg against the real kernel
(issue 12; docs/compat.md). Inside the sandbox (conftest.py); physical ports
are veth pairs made before the apply, as tests/compat/differential.py makes
them, and state is read back with iproute2.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

from netcfg.apply.execute import apply
from netcfg.cli.main import main
from netcfg.compile.pipeline import ConfigSource, compile_config

# Proxmox VE's installer writes the port without an auto line.
PROXMOX = textwrap.dedent("""\
    auto lo
    iface lo inet loopback

    iface eno1 inet manual

    auto vmbr0
    iface vmbr0 inet static
        address 192.168.10.2/24
        gateway 192.168.10.1
        bridge-ports eno1
        bridge-stp off
    """)


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


def link(name: str) -> dict:
    return json.loads(ip("-d", "-j", "link", "show", "dev", name))[0]


def stand_in_port(name: str) -> None:
    """A physical port: one end of a veth pair whose peer is up (carrier)."""
    ip("link", "add", name, "type", "veth", "peer", "name", f"{name}-peer")
    ip("link", "set", f"{name}-peer", "up")


def test_a_bridge_port_without_an_auto_line_comes_up_with_its_bridge(session, tmp_path):
    """The silent outage of issue 12: eno1 was enslaved and left down while
    apply and query --check both said ok."""
    stand_in_port("eno1")
    path = tmp_path / "interfaces"
    path.write_text(PROXMOX)
    result = apply(compile_config(ConfigSource(path=str(path))).model, session)
    assert result.verified
    eno1 = link("eno1")
    assert "UP" in eno1["flags"]
    assert eno1["master"] == "vmbr0"
    assert eno1["linkinfo"]["info_slave_data"]["state"] == "forwarding"
    routes = json.loads(ip("-j", "route", "show", "default"))
    assert [r["gateway"] for r in routes] == ["192.168.10.1"]
    assert "linkdown" not in routes[0].get("flags", [])
    assert main(["query", "--check", "-c", str(path)]) == 0
    # A port taken down by hand is drift that query --check reports.
    ip("link", "set", "eno1", "down")
    assert main(["query", "--check", "-c", str(path)]) == 1
