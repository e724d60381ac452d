"""ethtool link modes against the real kernel (sandboxed), as far as a
sandbox can go: neither this host's kernel nor Debian's 6.12 has netdevsim,
and a veth has link settings to read but none to change.

Proved here: LINKMODES_GET through the "ethtool" generic netlink family
(pyroute2, on a socket made inside the session's namespace) reads a veth's
modes as `ethtool` prints them (10000 Mb/s, full, autoneg off), in the root
namespace and in a named one, and a LINKMODES_SET the driver refuses fails
the apply at the attribute's line.
Not proved (no device that takes a change): that a SET is read back changed.

Link modes are asked only where needed (issue 21/25 follow-up): through
nic_standin.py, veths read as NICs (no link kind) and the real CLI runs in a
child process, so whether pyroute2 was imported is its own. Proxmox's poll
`ifquery -a -c -o json`, `netcfg query --check` and `netcfg apply` of a file
with ports and no link-* line never load pyroute2 nor send LINKMODES_GET;
`netcfg show` still reads and prints the modes; a file that writes them has
them read, compared (drift at the line) and verified.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from netcfg.apply import ethtool as apply_ethtool
from netcfg.apply.execute import ApplyFailed, apply
from netcfg.apply.refusal import Refused, explain
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kernel.ethtool import LinkModesReader
from netcfg.kernel.read import NamespaceState
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, ConfigObject
from netcfg.plan.ops import LINK_SET, Operation


@pytest.fixture
def veth():
    subprocess.run(["ip", "link", "add", "eth30", "type", "veth", "peer", "name", "eth30p"],
                   check=True)
    subprocess.run(["ip", "link", "set", "eth30", "up"], check=True)
    yield "eth30"
    subprocess.run(["ip", "link", "del", "eth30"], capture_output=True)


def _as_physical(session, name: str) -> NamespaceState:
    """The namespace read with the veth standing in for a NIC (a veth reads
    as kind veth, whose link modes netcfg does not ask)."""
    session.read([""])
    state = session.states[""]
    ifindex = state.ifindex[name]
    state.interfaces[name] = ConfigObject(section=IFACE, name=name, kind="physical", netns="",
                                          attrs={}, loc=SourceLocation("<kernel>", ifindex))
    return state


def test_linkmodes_get_reads_what_ethtool_prints(session, veth):
    state = _as_physical(session, veth)
    assert LinkModesReader().read(session.genl, state) == 1
    attrs = state.interfaces[veth].attrs
    assert attrs == {"link-speed": 10000, "link-duplex": "full", "link-autoneg": False}


def test_a_port_in_a_namespace_is_asked_there(session, netns_dir):
    """The socket is opened inside the port's namespace: eth31 exists only
    there, so a socket anywhere else could not read it (ENODEV) or set it."""
    netns_dir.create("ethns").close()
    try:
        subprocess.run(["nsenter", f"--net={netns_dir.path}/ethns", "ip", "link", "add",
                        "eth31", "type", "veth", "peer", "name", "eth31p"], check=True)
        session.read(["ethns"])
        state = session.states["ethns"]
        ifindex = state.ifindex["eth31"]
        state.interfaces["eth31"] = ConfigObject(section=IFACE, name="eth31", kind="physical",
                                                 netns="ethns", attrs={},
                                                 loc=SourceLocation("<kernel>", ifindex))
        assert LinkModesReader().read(session.genl, state) == 1
        assert state.interfaces["eth31"].attrs["link-speed"] == 10000
        op = Operation(LINK_SET, "ethns", "eth31", params={"link-speed": 1000})
        with pytest.raises(Refused, match="EOPNOTSUPP|not supported"):
            apply_ethtool.configure(op, session)
    finally:
        session.forget("ethns")


def test_a_refused_set_fails_at_the_attributes_line(session, veth, tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(textwrap.dedent("""\
        auto eth30
        iface eth30
            link-speed 1000
        """))
    wanted = compile_config(ConfigSource(path=str(path))).model
    op = Operation(LINK_SET, "", veth, params={"link-speed": 1000, "link-autoneg": False})
    with pytest.raises(Refused) as refused:
        apply_ethtool.configure(op, session)
    message = explain(refused.value, wanted)
    assert message.startswith(f"{path}:3: error: eth30: "), message
    assert "EOPNOTSUPP" in message or "not supported" in message, message


def _fence(monitor: subprocess.Popen, name: str) -> str:
    """What ``monitor`` printed before it saw tap ``name`` change (made,
    then its mtu nudged until seen: a monitor just started may not listen yet)."""
    subprocess.run(["ip", "tuntap", "add", name, "mode", "tap"], check=True)
    lines, deadline, mtu = [], time.monotonic() + 10, 1400
    while time.monotonic() < deadline:
        if not select.select([monitor.stdout], [], [], 0.2)[0]:
            mtu += 1
            subprocess.run(["ip", "link", "set", name, "mtu", str(mtu)], check=True)
            continue
        line = monitor.stdout.readline()
        if name in line:
            return "".join(lines)
        lines.append(line)
    raise AssertionError(f"ip monitor never showed {name}")


def test_link_modes_on_a_tap_are_refused_before_anything_is_written(session, tmp_path):
    """A tun is no NIC (issue 24, L2), and the read says so: the apply is
    refused before its first write, not written and reverted, so the tap's
    mtu is never set (and set back): the kernel sends no event about it.
    A dry run shows the refusal at the line."""
    path = tmp_path / "interfaces"
    path.write_text("auto tap7\niface tap7\n    mtu 1400\n    link-speed 1000\n")
    wanted = compile_config(ConfigSource(path=str(path))).model
    subprocess.run(["ip", "tuntap", "add", "tap7", "mode", "tap"], check=True)
    monitor = subprocess.Popen(["ip", "-o", "monitor", "link"], stdout=subprocess.PIPE,
                               text=True)
    try:
        _fence(monitor, "fence0")
        planned = apply(wanted, session, dry_run=True)
        with pytest.raises(ApplyFailed) as failed:
            apply(wanted, session)
        events = _fence(monitor, "fence1")
    finally:
        monitor.terminate()
        monitor.wait()
        for name in ("tap7", "fence0", "fence1"):
            subprocess.run(["ip", "link", "delete", name], capture_output=True)
    assert "tap7" not in events, events
    assert f"{path}:4: error: tap7" in str(failed.value), failed.value
    assert "tun device, not a NIC" in str(failed.value), failed.value
    assert "nothing was changed" in str(failed.value), failed.value
    assert [n for n in planned.plan.notes
            if n.startswith(f"apply refuses this: {path}:4: error: tap7")], planned.plan.notes


# ---------------------------------------------------------------- asked only where needed

STANDIN = Path(__file__).parent / "nic_standin.py"
NICS = ("eno1", "eno2")
# A Proxmox VE node as its installer writes it, with a second, unused port.
PROXMOX_NODE = """\
auto lo
iface lo inet loopback

iface eno1 inet manual
{eno1_extra}
iface eno2 inet manual

auto vmbr0
iface vmbr0 inet static
\taddress 192.0.2.10/24
\tbridge-ports eno1
\tbridge-stp off
\tbridge-fd 0
"""


@pytest.fixture
def nics(session):
    """eno1 and eno2: veths whose peers are up, read as NICs by nic_standin.py."""
    for name in NICS:
        subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name",
                        f"{name}-p"], check=True)
        subprocess.run(["ip", "link", "set", f"{name}-p", "up"], check=True)
    yield NICS
    for name in NICS:
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def _node(tmp_path, eno1_extra: str = "") -> Path:
    path = tmp_path / "interfaces"
    path.write_text(PROXMOX_NODE.format(eno1_extra=eno1_extra))
    return path


def standin(tmp_path, *command: str) -> tuple[subprocess.CompletedProcess, dict]:
    """``command`` (netcfg ... or ifquery ...) in a child process with eno1
    and eno2 read as NICs; its output, and its report (exit, pyroute2, gets)."""
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, str(STANDIN), "--nics", ",".join(NICS),
                           "--report", str(report), "--", *command],
                          capture_output=True, text=True, timeout=120)
    return done, json.loads(report.read_text())


def _ports_of(bridge: str) -> set[str]:
    out = subprocess.run(["ip", "-j", "link", "show", "master", bridge], check=True,
                         capture_output=True, text=True).stdout
    return {link["ifname"] for link in json.loads(out or "[]")}


def test_the_poll_of_a_node_without_link_modes_never_loads_pyroute2(session, nics, tmp_path):
    path = _node(tmp_path)
    done, report = standin(tmp_path, "netcfg", "apply", "-c", str(path))
    assert done.returncode == 0, done.stderr
    assert _ports_of("vmbr0") == {"eno1"}          # the apply did apply
    assert (report["pyroute2"], report["linkmodes_gets"]) == (False, 0), report

    done, report = standin(tmp_path, "ifquery", "-a", "-c", "-o", "json", "-i", str(path))
    assert done.returncode == 0, done.stderr
    statuses = {entry["name"]: entry["status"] for entry in json.loads(done.stdout)}
    assert statuses and set(statuses.values()) == {"pass"}, statuses
    assert (report["pyroute2"], report["linkmodes_gets"]) == (False, 0), report

    done, report = standin(tmp_path, "netcfg", "query", "--check", "-c", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (report["pyroute2"], report["linkmodes_gets"]) == (False, 0), report

    # The stand-ins are NICs to the read: show asks both and prints their modes.
    done, report = standin(tmp_path, "netcfg", "show", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert report["pyroute2"] and report["linkmodes_gets"] == 2, report
    shown = {o["name"]: o for o in json.loads(done.stdout)["interfaces"]}
    assert shown["eno2"]["link-speed"] == 10000, shown["eno2"]


def test_a_node_that_writes_link_modes_has_them_read_and_verified(session, nics, tmp_path):
    # What a veth reports: 10000 Mb/s full duplex, autonegotiation off.
    path = _node(tmp_path, "\tlink-speed 10000\n\tlink-duplex full\n")
    done, report = standin(tmp_path, "netcfg", "apply", "-c", str(path))
    assert done.returncode == 0, done.stderr
    # eno1 only (eno2 writes none), before the diff and again to verify.
    assert report["pyroute2"] and report["linkmodes_gets"] == 2, report

    done, report = standin(tmp_path, "ifquery", "-a", "-c", "-o", "json", "-i", str(path))
    assert done.returncode == 0, done.stderr
    assert {e["status"] for e in json.loads(done.stdout)} == {"pass"}
    assert report["linkmodes_gets"] == 1, report

    # A speed the port does not have: drift at its line, read from the kernel.
    path = _node(tmp_path, "\tlink-speed 1000\n\tlink-duplex full\n")
    done, report = standin(tmp_path, "netcfg", "query", "--check", "-c", str(path))
    assert done.returncode != 0
    assert f"{path}:5: drift:" in done.stdout and "link-speed" in done.stdout, done.stdout
    done, report = standin(tmp_path, "ifquery", "-c", "-o", "json", "-i", str(path), "eno1")
    assert done.returncode == 1 and report["linkmodes_gets"] == 1, (done, report)
    eno1, = json.loads(done.stdout)
    assert eno1["status"] == "fail" and eno1["config_status"]["link-speed"] == "fail", eno1
    assert eno1["config_status"]["link-duplex"] == "pass", eno1

    # Applying it: the veth refuses the SET, located, and nothing stays changed.
    done, report = standin(tmp_path, "netcfg", "apply", "-c", str(path))
    assert done.returncode != 0
    assert f"{path}:5" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert _ports_of("vmbr0") == {"eno1"}
