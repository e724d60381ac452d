"""Proxmox VE as it drives a host's network, for the kernel and VM tiers:
guests plugged with plain ip/bridge as pve-common's PVE/Network.pm plugs
them (tap_create, tap_plug, veth_create, the firewall's fwbr/fwln/fwpr,
vmbrXvY with PORT.TAG on a bridge that does not filter VLANs), pve-manager's
"Apply Configuration" (PVE/API2/Network.pm: the ifupdown2 check, `ifreload
-V`'s version rule, the .new rename, `ifreload -a`, the stderr filter), and
the SDN status poll (pve-network Zones.pm: `ifquery -a -c -o json`). What
each step does comes from ../shared/research/ifupdown2-dropin.md (sections
0 and 1), which cites the Perl.

Guests are read back with `ip -j` and `bridge -j` (``guest_state``), so a
test compares what the kernel has before and after netcfg ran.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

# pve-manager PVE/API2/Network.pm ifupdown2_version / assert_ifupdown2_installed.
VERSION_LINE = re.compile(r"^\s*ifupdown2:(\S+)\s*$")
MIN_VERSION = 1 * 100000 + 2 * 1000 + 8 * 10
PVE_FLAVOUR = re.compile(r"(pve|pmx|proxmox)")
# What the Apply Configuration task keeps of ifreload's stderr.
TASK_LOG_LINE = re.compile(r"(warning|error): (\S+):")
IFUPDOWN2_SCRIPT = "/usr/share/ifupdown2/ifupdown2"


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


def ip(*args: str) -> None:
    run("ip", *args)


def _sys(path: str, text: str) -> None:
    Path(path).write_text(text)


def vlan_aware(bridge: str) -> bool:
    """pve-common reads /sys/class/net/BR/bridge/vlan_filtering."""
    try:
        return Path(f"/sys/class/net/{bridge}/bridge/vlan_filtering").read_text().strip() == "1"
    except FileNotFoundError:
        return False


def bridge_mtu(bridge: str) -> str:
    return Path(f"/sys/class/net/{bridge}/mtu").read_text().strip()


def disable_ipv6(iface: str) -> None:
    path = f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6"
    if os.path.exists(path):
        _sys(path, "1")


# ---------------------------------------------------------------- plugging guests

def tap_create(iface: str, bridge: str) -> None:
    """qemu's tap (here `ip tuntap`, as qemu opens /dev/net/tun), then
    pve-common's tap_create: up, promisc, the bridge's MTU, no IPv6."""
    if run("ip", "tuntap", "add", "dev", iface, "mode", "tap", check=False).returncode:
        # The VM's kernel may have tun as a module not loaded yet; without
        # it, a veth is the port the bridge sees all the same.
        run("modprobe", "tun", check=False)
        if run("ip", "tuntap", "add", "dev", iface, "mode", "tap", check=False).returncode:
            ip("link", "add", iface, "type", "veth", "peer", "name", f"q{iface}")
            ip("link", "set", f"q{iface}", "up")
    ip("link", "set", iface, "up", "promisc", "on", "mtu", bridge_mtu(bridge))
    disable_ipv6(iface)


def veth_create(veth: str, peer: str, bridge: str) -> None:
    """pve-common veth_create (the container's pair; lxc makes it the same way)."""
    ip("link", "add", "name", veth, "mtu", bridge_mtu(bridge), "type", "veth", "peer", "name",
       peer, "mtu", bridge_mtu(bridge))
    for dev in (veth, peer):
        disable_ipv6(dev)
        ip("link", "set", dev, "up")


def bridge_add_interface(bridge: str, iface: str, tag: int | None = None,
                         trunks: Sequence[int] = ()) -> None:
    """pve-common bridge_add_interface: enslave; on a VLAN-aware bridge take
    every VLAN away and give the tag as PVID untagged (1 without a tag), then
    the trunks."""
    ip("link", "set", "dev", iface, "master", bridge)
    if vlan_aware(bridge):
        run("bridge", "vlan", "del", "dev", iface, "vid", "1-4094")
        run("bridge", "vlan", "add", "dev", iface, "vid", str(tag or 1), "pvid", "untagged")
        for vid in trunks:
            run("bridge", "vlan", "add", "dev", iface, "vid", str(vid))


def activate_bridge_vlan(bridge: str, tag: int) -> str:
    """pve-common activate_bridge_vlan: on a bridge that does not filter, a
    tagged guest goes on BRvTAG, whose port is PORT.TAG on the bridge's
    physical port (the first that is not a guest's)."""
    vlan_bridge = f"{bridge}v{tag}"
    if Path(f"/sys/class/net/{vlan_bridge}").exists():
        return vlan_bridge
    ports = sorted(os.listdir(f"/sys/class/net/{bridge}/brif"))
    port = next(p for p in ports if not re.match(r"(tap|veth|fwpr)", p))
    sub = f"{port}.{tag}"
    ip("link", "add", "link", port, "name", sub, "type", "vlan", "id", str(tag))
    ip("link", "set", sub, "up")
    ip("link", "add", vlan_bridge, "type", "bridge")
    _sys(f"/sys/class/net/{vlan_bridge}/bridge/forward_delay", "0")
    ip("link", "set", vlan_bridge, "up")
    ip("link", "set", sub, "master", vlan_bridge)
    return vlan_bridge


def create_firewall_bridge(vmid: int, dev: int, bridge: str, iface: str,
                           tag: int | None = None) -> list[str]:
    """pve-common create_firewall_bridge_linux: fwbrNiM with the guest's port
    and fwlnNiM on it; fwprNpM, fwlnNiM's peer, on the real bridge."""
    fwbr, fwpr, fwln = f"fwbr{vmid}i{dev}", f"fwpr{vmid}p{dev}", f"fwln{vmid}i{dev}"
    ip("link", "add", "name", fwbr, "type", "bridge")
    _sys(f"/sys/class/net/{fwbr}/bridge/forward_delay", "0")
    disable_ipv6(fwbr)
    ip("link", "set", fwbr, "up")
    veth_create(fwpr, fwln, bridge)
    bridge_add_interface(bridge, fwpr, tag)
    ip("link", "set", "dev", fwln, "master", fwbr)
    ip("link", "set", "dev", iface, "master", fwbr)
    return [fwbr, fwpr, fwln]


def tap_plug(iface: str, bridge: str, tag: int | None = None, firewall: bool = False,
             trunks: Sequence[int] = (), vmid: int = 0, dev: int = 0) -> list[str]:
    """pve-common tap_plug: the devices it made besides ``iface``."""
    made = []
    if tag and not vlan_aware(bridge):
        bridge = activate_bridge_vlan(bridge, tag)
        made.append(bridge)
        tag = None
    if firewall:
        made += create_firewall_bridge(vmid, dev, bridge, iface, tag)
    else:
        bridge_add_interface(bridge, iface, tag, trunks)
    return made


def plug_vm(vmid: int, dev: int, bridge: str, **kw) -> list[str]:
    """A VM's NIC as qemu-server's pve-bridge script plugs it: tapNiM."""
    tap = f"tap{vmid}i{dev}"
    tap_create(tap, bridge)
    return [tap, *tap_plug(tap, bridge, vmid=vmid, dev=dev, **kw)]


def plug_ct(vmid: int, dev: int, bridge: str, netns: str, **kw) -> list[str]:
    """A container's NIC as lxc and pve-container's lxcnetaddbr plug it:
    vethNiM on the host, its peer inside the container (a namespace)."""
    veth = f"veth{vmid}i{dev}"
    ip("link", "add", "name", veth, "type", "veth", "peer", "name", f"eth{dev}", "netns", netns)
    ip("link", "set", "dev", veth, "up", "mtu", bridge_mtu(bridge))
    return [veth, *tap_plug(veth, bridge, vmid=vmid, dev=dev, **kw)]


# ---------------------------------------------------------------- reading guests back

def guest_state(names: Sequence[str]) -> dict[str, dict]:
    """Each device: exists, its master, up (IFF_UP), ifindex, and its bridge
    VLANs (`bridge -j vlan show`: {vid: flags}), from the kernel."""
    links = {ln["ifname"]: ln for ln in json.loads(run("ip", "-j", "link", "show").stdout)}
    vlans: dict[str, dict[int, list[str]]] = {}
    out = run("bridge", "-j", "vlan", "show", check=False).stdout
    for entry in json.loads(out) if out.strip() else []:
        table = vlans.setdefault(entry["ifname"], {})
        for v in entry["vlans"]:   # a later iproute2 gives ranges (vlan to vlanEnd)
            for vid in range(v["vlan"], v.get("vlanEnd", v["vlan"]) + 1):
                table[vid] = sorted(v.get("flags", []))
    state = {}
    for name in names:
        link = links.get(name)
        state[name] = None if link is None else {
            "ifindex": link["ifindex"], "master": link.get("master"),
            "up": "UP" in link.get("flags", []), "vlans": vlans.get(name, {})}
    return state


# ---------------------------------------------------------------- pve-manager, pve-network

def version_ok(first_line: str) -> bool:
    """pve-manager's rule on `ifreload -V`'s first stdout line."""
    match = VERSION_LINE.match(first_line)
    if match is None:
        return False
    fields = re.split(r"\.|-", match.group(1))
    try:
        major, minor, extra = (int(f) for f in fields[:3])
    except ValueError:
        return False
    flavour = fields[3] if len(fields) > 3 else ""
    return (major * 100000 + minor * 1000 + extra * 10 >= MIN_VERSION
            and PVE_FLAVOUR.search(flavour) is not None)


@dataclass
class Task:
    """What the Apply Configuration task shows: its exit, the stderr lines it
    keeps (``(IFACE, line)``), the version it checked."""

    version: str
    exit: int
    log: list[tuple[str, str]] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""


def apply_configuration(commands: Path, interfaces: Path, env: dict[str, str]) -> Task:
    """pve-manager's reload_network_config: `ifreload -V` checked, the .new
    renamed over the file, `ifreload -a`; only `(warning|error): IFACE:`
    lines of its stderr reach the task log."""
    ifreload = str(commands / "ifreload")
    version = run(ifreload, "-V").stdout.splitlines()[0]
    if not version_ok(version):
        raise AssertionError(f"incompatible 'ifupdown2' package version {version!r}")
    new = interfaces.with_name(interfaces.name + ".new")
    if new.exists():
        new.rename(interfaces)
    done = subprocess.run([ifreload, "-a"], capture_output=True, text=True, env=env)
    log = [(m.group(2), line) for line in done.stderr.splitlines()
           if (m := TASK_LOG_LINE.search(line))]
    return Task(version, done.returncode, log, done.stdout, done.stderr)


def sdn_status(commands: Path, env: dict[str, str]) -> list[dict]:
    """pve-network's status poll: stdout decoded as one JSON array (decode_json
    dies on anything else, empty output included); each object's status."""
    out = subprocess.run([str(commands / "ifquery"), "-a", "-c", "-o", "json"],
                         capture_output=True, text=True, env=env).stdout
    status = json.loads(out)
    if not isinstance(status, list):
        raise AssertionError(f"ifquery -a -c -o json printed {out!r}, not one JSON array")
    return status
