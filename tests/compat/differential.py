#!/usr/bin/env python3
"""Apply one interfaces file with Debian's ifupdown2 and with netcfg; compare the kernels.

    tests/compat/differential.py FILE [FILE...] [--json]
    tests/compat/differential.py --accepted [--update-expectation] [--doc]

--accepted runs every corpus file that expectation.json lists as accepted, and
tests/compat/cases/ (files derived from the corpus, each saying how);
--update-expectation records the outcomes in expectation.json; --doc writes
the differential table into docs/compat.md.

For each file, two sandboxes (fresh private network + mount namespaces, made
by `unshare --net --mount --propagation private`). In each, the physical ports
the file names are created first as veth pairs with fixed MAC addresses (the
peer, `cmpN`, stays up so the port has carrier); then one tool applies the
file, and the state is read back:

* links with details (`ip -d -j link show`: kind, bridge and port knobs,
  master, MTU, MAC, up or down), addresses (`ip -j addr show`), routes of all
  tables (`ip -j route show table all`, both families), bridge VLANs
  (`bridge -j vlan show`), per-device sysctls (/proc/sys/net/ipv{4,6}/conf);
* normalized: counters, timers, indexes and the kernel's own link-local
  addresses dropped; netcfg's device group (it tags what it makes) ignored.

The ifupdown2 sandbox also measures the takeover: after `ifup -a`, netcfg's
`apply --dry-run --json` of the same file over what ifupdown2 configured, then
the apply itself (a failure counts as disruptive);
each request that would disturb a working device (a removal, a link down, a
device recreated or moved to another master) is counted.

ifupdown2 runs from Debian's package unpacked into .cache/ifupdown2 (`make
ifupdown2-examples`; mako from `make compat-deps`), never installed: inside the
sandbox a tmpfs over its configuration directory holds an ifupdown2.conf whose
default_interfaces_configfile names FILE. Where ifupdown2 is installed
(/etc/network/ifupdown2/ifupdown2.conf exists) that file is covered by a bind
mount of the copy instead. /sys is remounted in the sandbox so ifupdown2's
sysfs writes reach the sandbox's devices, not the host's; /run and /var/tmp
get a tmpfs each (its lock and state). The host kernel lacks some kinds (on
these machines: dummy, 8021q, bond, vrf, bridge VLAN filtering): a file that
needs one is reported as `vm-tier` and not run.

Needs root. Exit status: 0 when every file ran (same or different), 1 when
one could not be run.
"""

from __future__ import annotations

import argparse
import ast
import ipaddress
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import dhcp_peer  # noqa: E402  (tests/compat/dhcp_peer.py: a DHCP server for `inet dhcp`)
import readwith  # noqa: E402  (tests/compat/readwith.py: each file as its host reads it)
import state as kstate  # noqa: E402  (tests/compat/state.py: read back and normalize)

# A command line: NETCFG="env PYTHONPATH=SNAPSHOT .venv/bin/python -m netcfg" runs a
# committed snapshot while others edit the tree.
NETCFG = shlex.split(os.environ.get("NETCFG", str(REPO / ".venv" / "bin" / "netcfg")))
IFUPDOWN2_ROOT = Path(os.environ.get("IFUPDOWN2_ROOT", REPO / ".cache" / "ifupdown2"))
MAKO_PATH = REPO / ".cache" / "compat-python" / "usr" / "lib" / "python3" / "dist-packages"
INSTALLED_CONF = Path("/etc/network/ifupdown2/ifupdown2.conf")
SYSTEM_PYTHON = "/usr/bin/python3"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_NETNS_DIR = "/run/netns"
VRF_MAP_DIR = "/etc/iproute2/rt_tables.d"     # ifupdown2_vrf_map.conf
# Seconds for one sandbox (ifup -a gets 30 less); TCG on a loaded host needs more.
TIMEOUT = int(os.environ.get("NETCFG_COMPAT_TIMEOUT_S", "180"))
# Kinds the plan may ask for, and the `ip link add` that proves the kernel has them.
KIND_PROBES = {
    "bridge": ["type", "bridge"], "vxlan": ["type", "vxlan", "id", "5", "dstport", "4789"],
    "macvlan": None, "veth": ["type", "veth"], "dummy": ["type", "dummy"],
    "vlan": None, "bond": ["type", "bond"], "vrf": ["type", "vrf", "table", "10"],
    "vlan-filtering": ["type", "bridge", "vlan_filtering", "1"],
}
# Plan actions that disturb a working device when the device already exists.
DISRUPTIVE = {"netns-del", "route-del", "addr-del", "vlan-tunnel-del", "vni-del", "vlan-del",
              "master-unset", "link-down", "link-del", "fdb-del"}


@dataclass
class Outcome:
    file: str
    status: str                 # same | differs | vm-tier | refused | error
    detail: str = ""
    differences: list[str] = field(default_factory=list)
    takeover_disruptive: list[str] = field(default_factory=list)
    takeover_additions: list[str] = field(default_factory=list)
    ifupdown2_rc: int | None = None
    netcfg_rc: int | None = None
    netcfg_query_rc: int | None = None      # `netcfg query --check` after its apply
    seconds: dict[str, float] = field(default_factory=dict)
    ifupdown2_log: str = ""
    netcfg_log: str = ""


def netcfg_argv(*args: str) -> list[str]:
    """A netcfg command line, its templates found where the corpus's hosts keep them
    (ifupdown2's sandbox is given the same template_lookuppath)."""
    return [*NETCFG, *args, "--template-path", str(readwith.TEMPLATES)]


# ---- outer half: decides what to run, starts the sandboxes, compares ----------------------

def netcfg_plan(path: Path) -> dict | None:
    """netcfg's plan from nothing; None when check refuses the file."""
    proc = subprocess.run(netcfg_argv("plan", "--json", "-c", str(path)), capture_output=True,
                          text=True, timeout=120)
    if "Traceback" in proc.stderr:
        raise RuntimeError("netcfg plan crashed: " + proc.stderr.strip()[-600:])
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def plan_ops(plan: dict) -> list[dict]:
    return [op for batch in plan["batches"] for op in batch]


def physical_ports(plan: dict) -> list[str]:
    """Devices the file uses but creates nowhere: the host's NICs, made here as veths."""
    made, used = set(), []
    for op in plan_ops(plan):
        if op["action"] == "link-add":
            made.add(op["name"])
            if op.get("params", {}).get("kind") == "veth":
                made.add(op["params"].get("peer"))   # one request makes both ends
        for name in (op["name"], op.get("params", {}).get("master"),
                     op.get("params", {}).get("link"), op.get("params", {}).get("dev")):
            if isinstance(name, str) and name and name not in used:
                used.append(name)
    # ifupdown's mapping patterns (`/eth*`) name no device.
    return [n for n in used if n not in made and n != "lo" and len(n) <= 15
            and not set(n) & set("/*? \t")]


def needed_kinds(plan: dict) -> set[str]:
    kinds = set()
    for op in plan_ops(plan):
        params = op.get("params", {})
        if op["action"] == "link-add":
            kinds.add(params.get("kind", ""))
            if params.get("vlan_filtering"):
                kinds.add("vlan-filtering")
        if op["action"] in ("vlan-add", "vni-add", "vlan-tunnel-add"):
            kinds.add("vlan-filtering")
        if op["action"].startswith("ovs-"):
            # Neither sandbox runs ovs-vswitchd: tests/kernel/test_ovs.py covers OVS files.
            kinds.add("openvswitch")
    return kinds - {""}


def host_kinds() -> set[str]:
    """What the host kernel can make, probed once in a throwaway namespace."""
    script = ["set +e", "ip link add cmpbase type veth peer name cmppeer"]
    for kind, args in KIND_PROBES.items():
        if args is None:
            args = (["link", "cmpbase", "type", "macvlan"] if kind == "macvlan"
                    else ["link", "cmpbase", "type", "vlan", "id", "5"])
        script.append(f"ip link add cmp-{kind[:10]} {' '.join(args)} 2>/dev/null "
                      f"&& echo {kind}")
    proc = subprocess.run(["unshare", "--net", "--", "sh", "-c", "\n".join(script)],
                          capture_output=True, text=True, timeout=60)
    return set(proc.stdout.split())


def write_spec(work: str, tool: str, path: Path, ports: list[str], takeover: bool) -> str:
    """What the inner half runs, written into WORK; the caller's namespaces go with it, so
    the inner half can refuse to run unless its own differ."""
    spec = {"tool": tool, "file": str(path.resolve()), "ports": ports, "work": work,
            "takeover": takeover, "outer_net": os.stat("/proc/self/ns/net").st_ino,
            "outer_mnt": os.stat("/proc/self/ns/mnt").st_ino}
    spec_path = os.path.join(work, "spec.json")
    Path(spec_path).write_text(json.dumps(spec))
    return spec_path


def sandbox(tool: str, path: Path, ports: list[str], takeover: bool) -> dict:
    """Run the inner half in fresh namespaces; return what it wrote."""
    with tempfile.TemporaryDirectory(prefix="netcfg-compat-") as work:
        spec_path = write_spec(work, tool, path, ports, takeover)
        proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "--",
                               sys.executable, __file__, "--inner", spec_path],
                              capture_output=True, text=True, timeout=TIMEOUT)
        result_path = os.path.join(work, "result.json")
        if not os.path.exists(result_path):
            raise RuntimeError(f"{tool} sandbox failed (exit {proc.returncode}): "
                               f"{(proc.stdout + proc.stderr).strip()[-1500:]}")
        return json.loads(Path(result_path).read_text())


def run_file(path: Path, kinds: set[str] | None = None, *, plan_of=netcfg_plan,
             start=sandbox) -> Outcome:
    """One file through both sandboxes. ``plan_of`` and ``start`` are how netcfg's plan
    is had and a sandbox run (tests/compat/vm_differential.py passes warm forks)."""
    path = path.resolve()
    name = str(path.relative_to(HERE / "corpus")) if HERE / "corpus" in path.parents \
        else str(path.relative_to(HERE)) if HERE in path.parents else str(path)
    with tempfile.TemporaryDirectory(prefix="netcfg-compat-top-") as top_dir:
        # A Proxmox SDN file is applied together with its host's file, as Proxmox does.
        return _run_top(name, readwith.top_file(path, top_dir), readwith.text_of(path),
                        kinds, plan_of, start)


def _run_top(name: str, path: Path, text: str, kinds: set[str] | None, plan_of,
             start) -> Outcome:
    plan = plan_of(path)
    if plan is None:
        return Outcome(name, "refused", "netcfg check refuses it")
    missing = needed_kinds(plan) - (kinds if kinds is not None else host_kinds())
    if missing:
        return Outcome(name, "vm-tier", "host kernel lacks " + ", ".join(sorted(missing)))
    ports = physical_ports(plan)
    before = set(os.listdir(HOST_NETNS_DIR)) if os.path.isdir(HOST_NETNS_DIR) else set()
    ifu = start("ifupdown2", path, ports, takeover=True)
    ncf = start("netcfg", path, ports, takeover=False)
    after = set(os.listdir(HOST_NETNS_DIR)) if os.path.isdir(HOST_NETNS_DIR) else set()
    if after - before:
        raise RuntimeError(f"the host's {HOST_NETNS_DIR} gained {sorted(after - before)}")
    differences = kstate.diff(ifu["state"], ncf["state"], text)
    out = Outcome(name, "differs" if differences else "same", differences=differences,
                  ifupdown2_rc=ifu["rc"], netcfg_rc=ncf["rc"], netcfg_query_rc=ncf.get("query_rc"),
                  seconds={"ifupdown2": ifu["seconds"], "netcfg": ncf["seconds"]},
                  ifupdown2_log=ifu["log"][-3000:], netcfg_log=ncf["log"][-3000:])
    if ifu["rc"] != 0:
        out.detail = f"ifupdown2 exit {ifu['rc']}"
    if ncf["rc"] != 0:
        out.detail = (out.detail + "; " if out.detail else "") + f"netcfg apply exit {ncf['rc']}"
    disruptive, additions = classify_takeover(ifu.get("takeover_plan"), ifu["state"])
    out.takeover_disruptive, out.takeover_additions = disruptive, additions
    if ifu.get("takeover_error"):
        out.takeover_disruptive.append("netcfg apply (takeover) failed: "
                                       + ifu["takeover_error"][-300:])
    out.takeover_disruptive += [f"{line} beside ifupdown2's"
                                for line in ifu.get("takeover_dhcp_started", [])]
    return out


def ifupdown2_alone(path: Path, ports: list[str], start=sandbox) -> dict:
    """ifupdown2 alone on a file netcfg refuses (so no plan names its ports: PORTS are
    the physical ports to make): its exit, its messages and the state it leaves, to say
    whether a refusal refuses what ifupdown2 applies."""
    with tempfile.TemporaryDirectory(prefix="netcfg-compat-top-") as top_dir:
        result = start("ifupdown2", readwith.top_file(path.resolve(), top_dir), ports,
                       takeover=False)
    st = result["state"]
    return {"file": str(path), "rc": result["rc"], "log": result["log"],
            "links": {n: {"kind": link.get("kind"), "up": link.get("up"),
                          "master": link.get("master")} for n, link in st["links"].items()},
            "addresses": st["addresses"], "routes": st["routes"]}


# ---- why a difference is there: docs/compat.md "Where netcfg differs" -------------------

def _stanzas(text: str) -> dict[str, dict[str, list[str]]]:
    """iface NAME -> attribute -> values, over every stanza of NAME (as ifupdown2 merges
    them); `_` in attribute names read as `-`. Enough to explain differences, no more."""
    stanzas: dict[str, dict[str, list[str]]] = {}
    current = None
    for raw in text.replace("\\\n", " ").splitlines():
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "iface" and len(words) > 1:
            current = stanzas.setdefault(words[1], {})
        elif words[0] in ("auto", "allow-hotplug", "source", "source-directory", "mapping") \
                or words[0].startswith("allow-"):
            current = None
        elif current is not None:
            current.setdefault(words[0].replace("_", "-"), []).extend(words[1:])
    return stanzas


def _expand(words: list[str]) -> list[str]:
    """bridge-ports words to names: `glob swp1-52` and `swp[1-4]` ranges expanded (regex
    ports are left out)."""
    out, skip = [], False
    for word in words:
        if word in ("glob", "regex"):
            skip = word == "regex"
            continue
        m = re.fullmatch(r"(.*?)\[?(\d+)-(\d+)\]?(.*)", word)
        if m and not skip:
            out += [f"{m.group(1)}{i}{m.group(4)}" for i in range(int(m.group(2)),
                                                             int(m.group(3)) + 1)]
        elif not skip:
            out.append(word)
        skip = False
    return out


def _json_after(line: str, marker: str) -> dict:
    return json.loads(line.split(marker, 1)[1])


# Differences that are netcfg's bugs, found by the VM tier and recorded in docs/compat.md
# "Left to do" (each fix is in a file other engineers are changing).
PVID_BUG = ("netcfg bug: no VLAN 1 PVID untagged on a VLAN-aware bridge's ports and on the "
            "bridge (untagged frames dropped)")
SELF_VLAN_BUG = ("netcfg bug: no VLAN of a VLAN device on a VLAN-aware bridge on the bridge "
                 "itself (its frames dropped)")
VRR_METRIC_BUG = ("netcfg bug: VRR (address-virtual) macvlans without ifupdown2's address "
                  "metric 1024 and accept_dad 0")


# A per-device sysctl difference explained by what the device is alone: (the
# difference's pattern, the device's role in the file or None for any, the reason).
FORWARDING_ON_BRIDGE = "deliberate: forwarding on a bridge with an address"
DEVICE_SYSCTL_RULES = (
    (re.compile(r"sysctl ipv[46]/(\S+)/forwarding: ifupdown2 1, netcfg 0$"), "bridge",
     FORWARDING_ON_BRIDGE),
    (re.compile(r"sysctl ipv6/(\S+-v\d+)/accept_dad: ifupdown2 0, netcfg 1$"), None,
     VRR_METRIC_BUG),
    (re.compile(r"sysctl ipv6/(\S+)/disable_ipv6: ifupdown2 1, netcfg 0$"), "port",
     "deliberate: disable_ipv6 on bridge ports"),
)


def _device_sysctl_reason(line: str, roles: dict[str, set[str]]) -> str | None:
    for pattern, role, reason in DEVICE_SYSCTL_RULES:
        m = pattern.match(line)
        if m and (role is None or m.group(1) in roles[role]):
            return reason
    return None


STP_PORT_STATES = frozenset({"disabled", "listening", "learning", "forwarding", "blocking"})
STP_TIMING = "not a setting: STP still converging when read (ifupdown2 read minutes later)"
# A port's path cost nobody wrote is the kernel's, from the port's speed when its
# carrier last changed (br_port_carrier_check); a VLAN of a bridge takes the bridge's
# speed, none (cost 100) while that bridge has no carrier yet. Caught with `ip
# monitor` in the VM (qinq-bridge_notagvnet-sdn, netcfg, 1 run in 9): z_myzone.100
# came up while z_myzone was still NO-CARRIER, and its carrier never changed again.
AUTO_COST_TIMING = ("not a setting: the kernel's automatic path cost, from the port's "
                    "speed when its carrier came up: a VLAN of a bridge that had no "
                    "carrier yet has none (cost 100)")


def _vlan_lower(name: str, stanzas: dict[str, dict[str, list[str]]]) -> str | None:
    """The device NAME is a VLAN of (`vlan-raw-device`, or the dotted name's stem)."""
    raw = stanzas.get(name, {}).get("vlan-raw-device")
    if raw:
        return raw[0]
    stem, dot, vid = name.rpartition(".")
    return stem if dot and vid.isdigit() else None


def _line_device(line: str) -> str | None:
    """The device a difference line is about (``link X ...``, ``bridge vlans X:``,
    ``address X ...``, ``sysctl ipv4/X/...``, a route's dev)."""
    m = re.match(r"(?:link|address|bridge vlans) ([^\s:]+)", line) or \
        re.match(r"sysctl ipv[46]/([^/]+)/", line)
    if m:
        return m.group(1)
    if re.match(r"route (ifupdown2|netcfg) only: ", line):
        return _json_after(line, " only: ").get("dev")
    return None


def _refused_by_ifupdown2(log: str, stanzas: dict[str, dict[str, list[str]]]
                          ) -> tuple[dict[str, str], dict[str, str]]:
    """What ifupdown2 said it would not do, from its own errors: (device -> why,
    for every difference about the device; port -> why, for its VLANs only)."""
    devices: dict[str, str] = {}
    for bridge in re.findall(r"ignoring interface (\S+)\. Only one object with attribute "
                             r"'bridge-vlan-aware yes' allowed", log):
        why = (f"ifupdown2 refused: a second VLAN-aware bridge ({bridge}; its log: 'Only one "
               f"object with attribute bridge-vlan-aware yes allowed'), so neither it nor "
               f"what sits on it was made")
        hanging = {bridge, *_expand(stanzas.get(bridge, {}).get("bridge-ports", []))}
        hanging |= {n for n, a in stanzas.items() if n.startswith(bridge + ".")
                    or a.get("vlan-raw-device", [""])[0] == bridge}
        devices.update({name: why for name in hanging})
    for vxlan in re.findall(r"error: (\S+): invalid vxlan-local-tunnelip", log):
        devices[vxlan] = ("ifupdown2 refused: an IPv6 vxlan-local-tunnelip (its log: "
                          "'Expected 4 octets'), so the vxlan was not made")
    ports: dict[str, str] = {}
    for bridge, port in re.findall(r"error: (\S+): (\S+): vlan sub-interface is not supported "
                                   r"in a vlan-aware bridge", log):
        why = (f"ifupdown2 refused: a VLAN device ({port}) as a port of VLAN-aware {bridge} (its "
               f"log: 'vlan sub-interface is not supported in a vlan-aware bridge'), and set "
               f"none of {bridge}'s port VLANs")
        ports.update({p: why for p in _expand(stanzas.get(bridge, {}).get("bridge-ports", []))})
        ports[port] = why
    # A VLAN device ifupdown2 did not make or finish (D.N) added no VID N to D itself.
    for name, why in [*devices.items(), *ports.items()]:
        raw, _, vid = name.rpartition(".")
        if raw and vid.isdigit():
            ports.setdefault(raw, why + f" (nor VLAN {vid} on {raw} itself)")
    return devices, ports


def _refused(device: str | None, refused: dict[str, str]) -> str | None:
    """Why ifupdown2 did not make ``device``: it, or the device it is a VLAN of (D.N)."""
    if device is None:
        return None
    raw, _, vid = device.rpartition(".")
    return refused.get(device) or (refused.get(raw) if raw and vid.isdigit() else None)


HWADDRESS_DOWN_BUG = ("ifupdown2 bug: it adds the addresses, then takes the device down to "
                      "set its hwaddress, and the kernel deletes IPv6 addresses on down (its "
                      "debug log: 'ip addr add ...', 'ip link set dev X down', 'ip link set dev "
                      "X address ...')")


SHARED_BROADCAST = ("not a setting: the kernel's order: the route's source address is also "
                    "another subnet's broadcast address, and the kernel makes a prefix route "
                    "only while its source is the first such entry of the local table "
                    "('Invalid prefsrc address' otherwise): which tool adds which first "
                    "decides it, and the file writes the clash")


def _broadcasts(stanzas: dict[str, dict[str, list[str]]]) -> set[str]:
    """The broadcast addresses of the IPv4 subnets the file writes (address and
    address-virtual), for SHARED_BROADCAST."""
    out = set()
    for attrs in stanzas.values():
        for word in attrs.get("address", []) + attrs.get("address-virtual", []):
            try:
                net = ipaddress.ip_interface(word).network
            except ValueError:
                continue        # a MAC, or a bare address without a prefix
            if net.version == 4 and net.prefixlen < 31:
                out.add(str(net.broadcast_address))
    return out


def _shared_broadcast(line: str, broadcasts: set[str]) -> bool:
    """A prefix route that one state lacks because its source address is also a
    broadcast address (eni-bridge7_macvlans: 10.7.192.31/31 beside
    10.7.192.30/30, whose broadcast is .31; seen by hand with two veths: the
    /31 gets its prefix route only when added first)."""
    m = re.match(r"route (ifupdown2|netcfg) only: ", line)
    if not m:
        return False
    route = _json_after(line, " only: ")
    return "type" not in route and route.get("scope") == "link" and \
        route.get("protocol") == "kernel" and route.get("prefsrc") in broadcasts


VIDS_PAST_4094 = ("deliberate: `bridge-vids` ending at 4095 or 4096 is taken as ending at "
                  "4094 (ifupdown2's `bridge vlan add` fails on it, 'Invalid VLAN range', "
                  "and sets none of the range)")


def _vids_past_4094(line: str, ifupdown2_log: str) -> bool:
    """A port's VLANs that netcfg has and ifupdown2 does not, all inside a range
    whose `bridge vlan add` ifupdown2 logged as failed for running past 4094."""
    m = re.match(r"bridge vlans (\S+): ifupdown2 (\[.*\]|None), netcfg (\[.*\]|None)$", line)
    if not m:
        return False
    failed = [(int(a), int(b)) for a, b, dev in re.findall(
        r"vlan add vid (\d+)-(\d+) dev (\S+) \]' failed: returned \d+ \(Invalid VLAN range",
        ifupdown2_log) if dev == m.group(1) and int(b) in (4095, 4096)]
    theirs = {v["vlan"] for v in ast.literal_eval(m.group(2)) or []}
    ours = {v["vlan"] for v in ast.literal_eval(m.group(3)) or []}
    return bool(failed) and theirs <= ours and \
        all(any(a <= vid <= 4094 for a, _ in failed) for vid in ours - theirs)


def _lost_ipv6(line: str, stanzas: dict[str, dict[str, list[str]]]) -> bool:
    """Whether ``line`` is an IPv6 address (or one of its routes) that netcfg has
    and ifupdown2 lost to its hwaddress down: a device with a `hwaddress` that is
    up before its addresses go on (a VRF's slave: enslaving brings it up)."""
    device = _line_device(line)
    stanza = stanzas.get(device or "", {})
    if not (stanza.get("hwaddress") and stanza.get("vrf")) or "netcfg only" not in line:
        return False
    networks = [ipaddress.ip_interface(a).network for a in stanza.get("address", []) if ":" in a]
    if line.startswith("address "):
        target = line.split()[2].rstrip(":")
    elif line.startswith("route "):
        target = _json_after(line, " only: ").get("dst", "")
    else:
        return False
    try:
        address = ipaddress.ip_interface(target)
    except ValueError:
        return False
    return any(address.ip in net for net in networks)


def explain(differences: list[str], file_text: str, ifupdown2_log: str = "") -> dict[str, str]:
    """Each difference that is one of the deliberate ones (docs/compat.md "Where netcfg
    differs") -> 'deliberate: ' and its name there; one that is no setting of either
    tool (a random draw) -> 'not a setting: ' and why. What is not here is unexplained:
    a netcfg bug until shown otherwise."""
    stanzas = _stanzas(file_text)
    bridges = {n for n, a in stanzas.items() if "bridge-ports" in a or "bridge-vlan-aware" in a}
    ports = {p for n in bridges for p in _expand(stanzas[n].get("bridge-ports", []))}
    vlan_aware = {n for n in bridges
                  if stanzas[n].get("bridge-vlan-aware", ["no"])[0] in ("yes", "on", "1")}
    # `bond-master B` on a slave that B's bond-slaves does not name: ifupdown2 3.0 leaves
    # it out of the bond (its bond addon reads bond-slaves only), netcfg puts it in.
    ignored = {n: a["bond-master"][0] for n, a in stanzas.items() if a.get("bond-master")
               and n not in stanzas.get(a["bond-master"][0], {}).get("bond-slaves", [])}
    bonds = set(ignored.values())
    why: dict[str, str] = {}
    refused, refused_ports = _refused_by_ifupdown2(ifupdown2_log, stanzas)
    broadcasts = _broadcasts(stanzas)
    for line in differences:
        device = _line_device(line)
        if _refused(device, refused):
            why[line] = _refused(device, refused)
        elif device in refused_ports and line.startswith("bridge vlans "):
            why[line] = refused_ports[device]
        if line not in why and _lost_ipv6(line, stanzas):
            why[line] = HWADDRESS_DOWN_BUG
        if line not in why and _shared_broadcast(line, broadcasts):
            why[line] = SHARED_BROADCAST
        if line not in why and _vids_past_4094(line, ifupdown2_log):
            why[line] = VIDS_PAST_4094
    differences = [line for line in differences if line not in why]
    gateways: dict[tuple, list[str]] = {}
    bond_routes: dict[str, list[str]] = {}
    vrr_routes: dict[str, list[tuple[str, Any]]] = {}
    named_tables: dict[str, list[str]] = {}
    carrier_routes: dict[str, list[str]] = {}
    for line in differences:
        m = re.match(r"link (\S+) ", line)
        if m and (m.group(1) in ignored or m.group(1) in bonds):
            why[line] = "deliberate: `bond-master` on a slave (ifupdown2 3.0 ignores it)"
            continue
        # STP runs on: each tool's state is read when its apply ends (ifupdown2's
        # minutes later than netcfg's), so ports may still be listening.
        m = re.match(r"link (\S+) info_slave_data.state: ifupdown2 '(\w+)', netcfg '(\w+)'$", line)
        if m and {m.group(2), m.group(3)} <= STP_PORT_STATES:
            why[line] = STP_TIMING
            continue
        m = re.match(r"link (\S+) info_slave_data.cost: ifupdown2 (\d+), netcfg (\d+)$", line)
        if m and "100" in m.groups()[1:] and m.group(2) != m.group(3) and \
                _vlan_lower(m.group(1), stanzas) in bridges and \
                not any(m.group(1) in " ".join(a.get("bridge-pathcosts", []))
                        for a in stanzas.values()) and \
                "bridge-pathcosts" not in stanzas.get(m.group(1), {}):
            why[line] = AUTO_COST_TIMING
            continue
        m = re.match(r"link (\S+) info_data.ageing_time: ifupdown2 (\d+), netcfg (\d+)$", line)
        if m and m.group(1) in bridges:
            # During a topology change the kernel ages at twice the forward delay
            # (br_stp.c __br_set_topology_change), then goes back to the bridge's
            # own (written, else 300 s); in centiseconds here.
            stanza = stanzas[m.group(1)]
            fd = int(stanza.get("bridge-fd", ["15"])[0])
            own = int(stanza.get("bridge-ageing", ["300"])[0])
            if sorted(m.groups()[1:], key=int) == sorted([str(2 * fd * 100), str(own * 100)],
                                                         key=int):
                why[line] = STP_TIMING + " (a topology change: ageing at twice the forward delay)"
                continue
        m = re.match(r"route (ifupdown2|netcfg) only: ", line)
        if m and _json_after(line, " only: ").get("dev") in bonds:
            route = _json_after(line, " only: ")
            key = json.dumps({k: v for k, v in route.items() if k != "flags"}, sort_keys=True)
            bond_routes.setdefault(key, []).append(line)
            continue
        m = re.match(r"link (\S+) address: ifupdown2 '([0-9a-f:]+)', netcfg '([0-9a-f:]+)'$", line)
        if m and m.group(1) in bridges and any(x.startswith("02:cc:") for x in m.groups()[1:]) \
                and not any(x in file_text.lower() for x in m.groups()[1:]):
            why[line] = ("not a setting: a bridge's MAC is its lowest port's, and its vxlans' "
                         "are drawn at random")
            continue
        m = re.match(r"sysctl ipv([46])/(\S+)/forwarding: ifupdown2 (\d), netcfg (\d)$", line)
        written = m and stanzas.get(m.group(2), {}).get(
            "ip-forward" if m.group(1) == "4" else "ip6-forward")
        if m and m.group(2) in bridges and written and \
                (written[0] in ("on", "yes", "1")) == (m.group(4) == "1"):
            why[line] = ("deliberate: ip-forward/ip6-forward on a bridge (ifupdown2 3.0 "
                         "ignores it)")
            continue
        m = re.match(r"sysctl ipv4/(\S+)/arp_accept: ifupdown2 0, netcfg 1$", line)
        if m and m.group(1) in bridges and \
                stanzas[m.group(1)].get("arp-accept", ["off"])[0] in ("on", "yes", "1") and \
                "address" not in stanzas[m.group(1)]:
            why[line] = ("deliberate: arp-accept on a bridge without an address (ifupdown2 "
                         "applies it only with one)")
            continue
        reason = _device_sysctl_reason(line, {"bridge": bridges, "port": ports})
        if reason:
            why[line] = reason
            continue
        m = re.match(r"route (ifupdown2|netcfg) only: ", line)
        if m:
            route = _json_after(line, " only: ")
            if route.get("dst") == "default" and route.get("gateway") and \
                    route.get("protocol") == ("kernel" if m.group(1) == "ifupdown2" else "110"):
                key = tuple(route.get(k) for k in ("dst", "gateway", "dev", "table", "metric"))
                gateways.setdefault(key, []).append(line)
                continue
        m = re.match(r"address (\S+) (127\.\S+): ifupdown2 .*'scope': 'global'.*, "
                     r"netcfg .*'scope': 'host'", line)
        if m and m.group(1) != "lo":
            why[line] = "deliberate: 127.0.0.0/8 on a device other than lo: scope host"
            continue
        m = re.match(r"link (\S+) info_data.vlan_default_pvid: ifupdown2 1, netcfg 0$", line)
        if m and m.group(1) in bridges:
            why[line] = PVID_BUG
            continue
        m = re.match(r"bridge vlans (\S+): ifupdown2 (\[.*\]), netcfg (\[.*\]|None)$", line)
        if m and (m.group(1) in bridges or m.group(1) in ports):
            theirs = ast.literal_eval(m.group(2))
            ours = ast.literal_eval(m.group(3)) or []
            default = {"vlan": 1, "flags": ["PVID", "Egress Untagged"]}
            # ifupdown2 gives each port VLAN 1 as PVID untagged unless the file says
            # otherwise (addons/bridge.py: pvid_final '1'), and the bridge itself the
            # kernel's default (vlan_default_pvid 1); netcfg no PVID, or VLAN 1 tagged
            # where the file's VLANs include it (bridge-vids 1-20).
            rest = [v for v in theirs if v["vlan"] != 1]
            port = stanzas.get(m.group(1), {})
            if "vxlan-id" in port and "bridge-access" not in port and theirs == [default] \
                    and ours:
                why[line] = ("deliberate: the bridge's VLANs on a vxlan port without "
                             "bridge-access (ifupdown2 3.0 warns that bridge-access is "
                             "mandatory and sets none)")
                continue
            if default in theirs and rest == [v for v in ours if v != {"vlan": 1}]:
                why[line] = PVID_BUG
                continue
            # On the bridge itself, ifupdown2 adds the VID of each VLAN device on it
            # (addons/vlan.py _bridge_vid_add_del); netcfg has no self VLANs.
            uppers = {int(n.rsplit(".", 1)[1]) for n in [*stanzas, *ports]
                      if n.startswith(m.group(1) + ".") and n.rsplit(".", 1)[1].isdigit()}
            if m.group(1) in vlan_aware and not ours and \
                    {v["vlan"] for v in rest} <= uppers and all("flags" not in v for v in rest):
                why[line] = SELF_VLAN_BUG + (f"; and {PVID_BUG[len('netcfg bug: '):]}"
                                             if default in theirs else "")
                continue
        m = re.match(r"route (ifupdown2|netcfg) only: ", line)
        if m and not str(_json_after(line, " only: ").get("table", "main")).isdigit() and \
                _json_after(line, " only: ").get("table") not in ("main", "local", "default") \
                and not re.fullmatch(r".+-v\d+", _json_after(line, " only: ").get("dev", "")):
            # Recorded before 885b15c: both sandboxes printed a VRF's table through one
            # shared name map (ifupdown2's, in /etc), so one table id got two names.
            route = _json_after(line, " only: ")
            key = json.dumps({k: v for k, v in route.items() if k != "table"}, sort_keys=True)
            named_tables.setdefault(key, []).append(line)
            continue
        if m:   # the same route, `linkdown` in one: carrier when read (STP listening)
            route = _json_after(line, " only: ")
            key = json.dumps({k: v for k, v in route.items() if k != "flags"}, sort_keys=True)
            carrier_routes.setdefault(key, []).append(line)
        if m:   # VRR's macvlan: the same route, ifupdown2's with metric 1024
            route = _json_after(line, " only: ")
            if re.fullmatch(r".+-v\d+", route.get("dev", "")):
                key = json.dumps({k: v for k, v in route.items() if k != "metric"},
                                 sort_keys=True)
                vrr_routes.setdefault(key, []).append((line, route.get("metric")))
    for pair in named_tables.values():
        if len(pair) == 2 and {ln.split(" only: ")[0] for ln in pair} == \
                {"route ifupdown2", "route netcfg"}:
            for line in pair:
                why[line] = ("not a setting: a VRF table's name from a map both sandboxes "
                             "shared (harness, fixed at 885b15c)")
    for pair in carrier_routes.values():
        flags = [set(_json_after(ln, " only: ").get("flags", [])) for ln in pair]
        if len(pair) == 2 and {ln.split(" only: ")[0] for ln in pair} == \
                {"route ifupdown2", "route netcfg"} and flags[0] ^ flags[1] == {"linkdown"}:
            for line in pair:
                why.setdefault(line, STP_TIMING + " (no carrier yet: linkdown)")
    for pair in vrr_routes.values():
        if sorted(str(metric) for _, metric in pair) == ["1024", "None"]:
            for line, _ in pair:
                why[line] = VRR_METRIC_BUG
    for pair in bond_routes.values():
        if len(pair) == 2:      # the same route, linkdown on the bond ifupdown2 left empty
            for line in pair:
                why[line] = "deliberate: `bond-master` on a slave (ifupdown2 3.0 ignores it)"
    for pair in gateways.values():
        # The same gateway route from both: ifupdown2's proto kernel (and onlink), netcfg's
        # proto 110. A `linkdown` flag is carrier at the moment of reading, not a setting.
        if len(pair) == 2:
            for line in pair:
                why[line] = "deliberate: default route of `gateway`: protocol"
    # IPv6 forwarding on gives a device the subnet-router anycast address of each
    # of its prefixes (addrconf_join_anycast): a consequence of the deliberate one.
    forwarding = {m.group(1) for line, reason in why.items()
                  if reason == FORWARDING_ON_BRIDGE
                  and (m := re.match(r"sysctl ipv6/(\S+)/forwarding", line))}
    for line in differences:
        if line.startswith("route ifupdown2 only: ") and line not in why:
            route = _json_after(line, " only: ")
            if route.get("type") == "anycast" and route.get("dev") in forwarding:
                why[line] = FORWARDING_ON_BRIDGE
    return why


def classify_takeover(plan: dict | None, state: dict) -> tuple[list[str], list[str]]:
    """Split netcfg's plan over ifupdown2's result into disturbing and additive requests."""
    if not plan:
        return [], []
    links = state.get("links", {})
    disruptive, additions = [], []
    for op in plan_ops(plan):
        text = " ".join(str(x) for x in (op["action"], op["name"], op.get("subject", "")) if x)
        params = op.get("params", {})
        if op["action"] in DISRUPTIVE:
            disruptive.append(text)
        elif op["action"] == "link-add" and op["name"] in links:
            disruptive.append(text + " (recreates an existing device)")
        elif (op["action"] == "master-set" and op["name"] in links
              and links[op["name"]].get("master") not in (None, params.get("master"))):
            disruptive.append(text + " (moves a port to another master)")
        else:
            additions.append(text)
    return disruptive, additions


# ---- inner half: root, inside the new namespaces ------------------------------------------

def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {proc.stderr.strip()}")
    return proc


def _refuse_unless_private(spec: dict) -> None:
    """ifupdown2 writes to whatever /sys and netlink it sees: prove they are ours."""
    for kind in ("net", "mnt"):
        mine = os.stat(f"/proc/self/ns/{kind}").st_ino
        others = {spec[f"outer_{kind}"]}
        try:
            others.add(os.stat(f"/proc/1/ns/{kind}").st_ino)
        except OSError:
            pass
        if mine in others:
            raise RuntimeError(f"not in a private {kind} namespace; refusing to run")


def _ifupdown2_conf(path: str) -> str:
    template = IFUPDOWN2_ROOT / "etc" / "network" / "ifupdown2" / "ifupdown2.conf"
    lines = [ln for ln in template.read_text().splitlines()
             if ln.split("=", 1)[0].strip() != "default_interfaces_configfile"]
    lines = [ln for ln in lines if ln.split("=", 1)[0].strip() != "template_lookuppath"]
    return "\n".join(lines + [f"default_interfaces_configfile={path}",
                              f"template_lookuppath={readwith.TEMPLATES}", ""])


def _prepare_ifupdown2(spec: dict) -> list[str]:
    """Configure ifupdown2 for this sandbox only; return the ifup command line."""
    share = IFUPDOWN2_ROOT / "usr" / "share" / "ifupdown2"
    if not (share / "__main__.py").exists():
        raise RuntimeError(f"{share} missing: make ifupdown2-examples")
    conf_text = _ifupdown2_conf(spec["file"])
    if INSTALLED_CONF.exists():
        copy = Path(spec["work"]) / "ifupdown2.conf"
        copy.write_text(conf_text)
        _sh("mount", "--bind", str(copy), str(INSTALLED_CONF))
    else:
        # ifupdown2 looks for its configuration beside its package when
        # /etc/network/ifupdown2 is absent (ifupdown/config.py).
        conf_dir = share / "etc" / "network" / "ifupdown2"
        if not conf_dir.is_dir():
            raise RuntimeError(f"{conf_dir} missing (the outer half makes it)")
        _sh("mount", "-t", "tmpfs", "compat", str(conf_dir))
        (conf_dir / "ifupdown2.conf").write_text(conf_text)
        shutil.copy(IFUPDOWN2_ROOT / "etc" / "network" / "ifupdown2" / "addons.conf",
                    conf_dir / "addons.conf")
    bindir = Path("/run/compat-bin")
    bindir.mkdir()
    for tool in ("ifup", "ifquery"):
        (bindir / tool).symlink_to(share / "__main__.py")   # ifupdown2 acts by argv[0]
    return [SYSTEM_PYTHON, str(bindir / "ifup")]


def run_command(argv: list[str], env: dict | None = None,
                timeout: float | None = None) -> subprocess.CompletedProcess:
    """How the inner half runs ifupdown2 and netcfg: a new process each."""
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)


def _run_ifupdown2(ifup: list[str], env: dict, run=run_command,
                   file_text: str | None = None) -> subprocess.CompletedProcess:
    """What Debian's networking.service does at boot (ifupdown2's start-networking):
    `ifup -a`, then `ifup` of the allow-hotplug interfaces whose device exists.
    The ifquery is skipped for a file with no allow-hotplug and no source line (under
    TCG it costs ~40 s to list nothing)."""
    first = run([*ifup, "-a"], env, TIMEOUT - 30)
    hotplug = []
    if file_text is None or "allow-hotplug" in file_text or \
            any(ln.split()[:1] in (["source"], ["source-directory"])
                for ln in file_text.splitlines()):
        query = [ifup[0], str(Path(ifup[1]).with_name("ifquery")), "--list", "--allow=hotplug"]
        listed = run(query, env, 60)
        hotplug = [n for n in listed.stdout.split()
                   if os.path.exists(f"/sys/class/net/{n.split(':')[0].split('.')[0]}")]
    log = first.stdout + first.stderr
    if hotplug:
        second = run([*ifup, *hotplug], env, TIMEOUT - 30)
        log += f"--- ifup {' '.join(hotplug)} (allow-hotplug)\n" + second.stdout + second.stderr
        if "no ifaces found matching given allow lists" in first.stderr:
            first = second      # a file with only allow-hotplug stanzas
    return subprocess.CompletedProcess(first.args, first.returncode, log, "")


def _make_ports(ports: list[str]) -> None:
    for i, port in enumerate(ports, 1):
        _sh("ip", "link", "add", port, "address", f"02:cc:00:00:{i // 256:02x}:{i % 256:02x}",
            "type", "veth", "peer", "name", f"cmp{i}",
            "address", f"02:cc:01:00:{i // 256:02x}:{i % 256:02x}")
        _sh("ip", "link", "set", f"cmp{i}", "up")


def inner(spec_path: str, run=run_command) -> int:
    """The sandbox's half; ``run`` starts ifupdown2 and netcfg (run_command's signature)."""
    spec = json.loads(Path(spec_path).read_text())
    _refuse_unless_private(spec)
    _sh("mount", "--make-rprivate", "/")
    _sh("mount", "-t", "sysfs", "none", "/sys")
    for d in ("/run", "/var/tmp"):
        _sh("mount", "-t", "tmpfs", "-o", "mode=0755", "compat", d)
    scratch = "/run/compat"
    os.makedirs(scratch)
    dhcp_peer.private_client_files(scratch)     # before any other mount under /etc
    if os.path.isdir(VRF_MAP_DIR):
        # ifupdown2's vrf addon (re)writes its table map there on every run: it
        # stays in the sandbox, not in the host's /etc.
        _sh("mount", "-t", "tmpfs", "-o", "mode=0755", "compat", VRF_MAP_DIR)
    for d in ("/run/network", "/var/tmp/network", HOST_NETNS_DIR):
        os.makedirs(d)
    _sh("ip", "link", "set", "lo", "up")
    _make_ports(spec["ports"])
    leasing = dhcp_peer.dhcp_interfaces(_text_with_sources(Path(spec["file"])))
    server = dhcp_peer.Server(spec["ports"], scratch) if leasing and spec["ports"] else None
    try:
        return _inner_run(spec, run, leasing)
    finally:
        dhcp_peer.stop_clients()
        if server is not None:
            server.stop()


def _text_with_sources(path: Path) -> str:
    """The file's text and that of the files it sources by absolute path (readwith's
    top file for a Proxmox SDN file), enough to find its `inet dhcp` stanzas."""
    text = path.read_text()
    sourced = [Path(w[1]) for w in (ln.split() for ln in text.splitlines())
               if len(w) == 2 and w[0] == "source" and w[1].startswith("/")]
    return text + "".join(p.read_text() for p in sourced if p.is_file())


def _inner_run(spec: dict, run, leasing: list[str]) -> int:
    env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": "/root"}
    if spec["tool"] == "ifupdown2":
        argv = _prepare_ifupdown2(spec)
        env["PYTHONPATH"] = str(MAKO_PATH)
    elif spec["tool"] == "netcfg":
        argv = netcfg_argv("apply", "-c", spec["file"])
    else:
        argv = ["true"]     # "none": the sandbox alone, for the harness's own test
    start = time.monotonic()
    if spec["tool"] == "ifupdown2":
        proc = _run_ifupdown2(argv, env, run, Path(spec["file"]).read_text())
    else:
        proc = run(argv, env, TIMEOUT - 30)
    unleased = dhcp_peer.wait_for_leases(leasing)
    result = {"rc": proc.returncode, "log": proc.stdout + proc.stderr
              + (f"\n(harness: no lease on {', '.join(unleased)} after "
                 f"{dhcp_peer.LEASE_WAIT_S} s)" if unleased else ""),
              "seconds": round(time.monotonic() - start, 2),
              "state": kstate.read(exclude=[f"cmp{i}" for i in range(1, len(spec["ports"]) + 1)]),
              # What /sys shows here: the sandbox's devices, if the remount worked.
              "sys_class_net": sorted(os.listdir("/sys/class/net")),
              "netns": os.stat("/proc/self/ns/net").st_ino}
    if spec["tool"] == "netcfg":
        # The silent-outage check: does netcfg itself say the kernel matches?
        query = run(netcfg_argv("query", "--check", "-c", spec["file"]), None, 120)
        result["query_rc"] = query.returncode
    if spec["takeover"]:
        dry = run(netcfg_argv("apply", "--dry-run", "--json", "-c", spec["file"]), None, 120)
        try:
            result["takeover_plan"] = json.loads(dry.stdout)["plan"]
        except ValueError:
            result["takeover_error"] = dry.stdout + dry.stderr
        # Then the takeover itself: a plan can look additive and still be
        # refused (a route-add answered EEXIST by ifupdown2's own route).
        real = run(netcfg_argv("apply", "-c", spec["file"]), None, 300)
        if real.returncode != 0:
            result["takeover_error"] = (f"exit {real.returncode}: "
                                        + (real.stdout + real.stderr)[-300:])
        # A DHCP client started beside the one ifupdown2 left on the interface
        # (netcfg adopts that one): two clients renewing one lease.
        result["takeover_dhcp_started"] = re.findall(r"started dhcp6? client for \S+",
                                                     real.stdout)
    Path(spec["work"], "result.json").write_text(json.dumps(result))
    return 0


# ---- command line -------------------------------------------------------------------------

def report(out: Outcome) -> str:
    lines = [f"{out.file}: {out.status}" + (f" ({out.detail})" if out.detail else "")]
    lines += [f"  differs: {d}" for d in out.differences]
    if out.status in ("same", "differs"):
        lines.append(f"  exits: ifupdown2 {out.ifupdown2_rc}, netcfg apply {out.netcfg_rc}, "
                     f"netcfg query --check {out.netcfg_query_rc}; seconds {out.seconds}")
        lines.append(f"  takeover: {len(out.takeover_disruptive)} disruptive, "
                     f"{len(out.takeover_additions)} additive requests")
        lines += [f"    disruptive: {d}" for d in out.takeover_disruptive]
    return "\n".join(lines)


def prepare_outside() -> None:
    """The mount point the inner half needs where ifupdown2 runs unpacked (empty, in .cache)."""
    if not INSTALLED_CONF.exists():
        (IFUPDOWN2_ROOT / "usr" / "share" / "ifupdown2" / "etc" / "network" /
         "ifupdown2").mkdir(parents=True, exist_ok=True)


DOC = REPO / "docs" / "compat.md"
EXPECTATION = HERE / "expectation.json"
DOC_BEGIN = "<!-- BEGIN differential table: generated by tests/compat/differential.py --doc -->"
DOC_END = "<!-- END differential table -->"
SLOW_S = 20.0
OUTCOMES = REPO / ".cache" / "compat-host" / "outcomes.jsonl"   # the last run's, as it goes


def accepted_files() -> list[Path]:
    accepted = json.loads(EXPECTATION.read_text())["accepted"]
    return [HERE / "corpus" / n for n in accepted] + sorted((HERE / "cases").glob("*.interfaces"))


def update_expectation(outcomes: list[Outcome]) -> None:
    expectation = json.loads(EXPECTATION.read_text())
    recorded = expectation.setdefault("differential", {})
    for o in outcomes:
        recorded[o.file] = {"status": o.status, "detail": o.detail,
                            "differences": o.differences,
                            "takeover_disruptive": len(o.takeover_disruptive),
                            "slow": max(o.seconds.values(), default=0) > SLOW_S}
    EXPECTATION.write_text(json.dumps(expectation, indent=1, sort_keys=True) + "\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def path_of(name: str) -> Path:
    """A file of the tier by its recorded name (corpus-relative, or cases/...)."""
    return HERE / name if (HERE / name).exists() else HERE / "corpus" / name


def explained(o: Outcome) -> dict[str, str]:
    try:
        text = readwith.text_of(path_of(o.file))
    except OSError:
        text = ""
    if "<%" in text or "${" in text:     # a Mako template: its stanzas are its rendering
        with tempfile.TemporaryDirectory(prefix="netcfg-compat-top-") as top_dir:
            top = readwith.top_file(path_of(o.file), top_dir)
            proc = subprocess.run(netcfg_argv("render", "-c", str(top)), capture_output=True,
                                  text=True, timeout=120)
            text = proc.stdout if proc.returncode == 0 else text
    return explain(o.differences, text, o.ifupdown2_log or "")


def render(outcomes: list[Outcome]) -> str:
    counts: dict[str, int] = {}
    for o in outcomes:
        status = o.status
        if status == "differs":
            why = explained(o)
            status += (" (unexplained)" if len(why) < len(o.differences)
                       else " (a netcfg bug)" if any(w.startswith("netcfg bug")
                                                     for w in why.values())
                       else " (deliberate only)")
        counts[status] = counts.get(status, 0) + 1
    disruptive = sum(1 for o in outcomes if o.takeover_disruptive)
    lines = [DOC_BEGIN, "", "Outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
             + f"; takeover disruptive on {disruptive} file(s).", "",
             "`differential.explain` names each difference that is a deliberate one "
             "(\"Where netcfg differs\"), one ifupdown2 itself refused (its logged error), "
             "or no setting at all; the rest are listed as measured.", "",
             "| file | outcome | exits (ifupdown2 / netcfg apply / query --check) | "
             "takeover: disruptive / additive | differences |", "|---|---|---|---|---|"]
    for o in outcomes:
        if o.status in ("same", "differs"):
            exits = f"{o.ifupdown2_rc} / {o.netcfg_rc} / {o.netcfg_query_rc}"
            take = (f"{len(o.takeover_disruptive)} / {len(o.takeover_additions)}"
                    + (": " + ", ".join(o.takeover_disruptive) if o.takeover_disruptive else ""))
            why = explained(o)
            reasons: dict[str, int] = {}
            for d in o.differences:
                if d in why:
                    reasons[why[d]] = reasons.get(why[d], 0) + 1
            cells = [f"{r} ({n})" for r, n in reasons.items()]
            rest = [d for d in o.differences if d not in why]
            # A VLAN list can be thousands of entries: the doc keeps a readable head
            # of each (the expectation keeps them whole).
            cells += [d if len(d) <= 240 else d[:240] + " ..." for d in rest[:8]]
            if len(rest) > 8:
                cells.append(f"(and {len(rest) - 8} more)")
            diffs = "<br>".join(_cell(c) for c in cells) or "none"
        else:
            exits, take, diffs = "", "", _cell(o.detail)
        lines.append(f"| {o.file} | {o.status} | {exits} | {_cell(take)} | {diffs} |")
    lines += ["", DOC_END]
    return "\n".join(lines)


def read_outcomes(paths: list[Path]) -> list[Outcome]:
    """Outcomes saved one JSON line each (OUTCOMES, or the VM tier's outcomes.jsonl); a
    file's last line wins."""
    names = {f.name for f in fields(Outcome)}
    found: dict[str, Outcome] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if "file" in row and "status" in row:
                found[row["file"]] = Outcome(**{k: v for k, v in row.items() if k in names})
    return list(found.values())


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    if DOC_BEGIN not in doc or DOC_END not in doc:
        doc = doc.rstrip("\n") + f"\n\n{DOC_BEGIN}\n{DOC_END}\n"
    head, rest = doc.split(DOC_BEGIN, 1)
    DOC.write_text(head + text + rest.split(DOC_END, 1)[1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--inner"]:
        try:
            return inner(argv[1])
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"differential: {e}", file=sys.stderr)
            return 125
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    ap.add_argument("--accepted", action="store_true",
                    help="every file expectation.json lists as accepted, and cases/")
    ap.add_argument("--update-expectation", action="store_true")
    ap.add_argument("--doc", action="store_true", help="write the table into docs/compat.md")
    ap.add_argument("--from-outcomes", metavar="JSONL", type=Path, nargs="+",
                    help="run nothing: take the outcomes saved by earlier runs "
                         f"({OUTCOMES.relative_to(REPO)}) for --doc and --update-expectation")
    ap.add_argument("--ifupdown2-only", metavar="PORT,...", type=lambda t: t.split(","),
                    help="run ifupdown2 alone on the FILEs (netcfg refuses them), with these "
                         "physical ports; print its exit, messages and resulting state")
    args = ap.parse_args(argv)
    if args.from_outcomes:
        outcomes = read_outcomes(args.from_outcomes)
        if args.update_expectation:
            update_expectation(outcomes)
        if args.doc:
            write_doc(render(outcomes))
        return 0
    if args.accepted:
        args.files += accepted_files()
    if not args.files:
        ap.error("no files (give FILEs or --accepted)")
    if os.geteuid() != 0:
        print("differential: needs root (namespaces)", file=sys.stderr)
        return 1
    prepare_outside()
    if args.ifupdown2_only:
        print(json.dumps([ifupdown2_alone(p, args.ifupdown2_only) for p in args.files],
                         indent=1))
        return 0
    kinds = host_kinds()
    outcomes, failed = [], False
    OUTCOMES.parent.mkdir(parents=True, exist_ok=True)
    OUTCOMES.write_text("")
    for path in args.files:
        try:
            out = run_file(path, kinds)
        except (RuntimeError, subprocess.SubprocessError) as e:
            out, failed = Outcome(str(path), "error", str(e)), True
        outcomes.append(out)
        with OUTCOMES.open("a") as f:
            f.write(json.dumps(asdict(out)) + "\n")
        if not args.json:
            print(report(out), flush=True)
    if args.json:
        print(json.dumps([asdict(o) for o in outcomes], indent=1))
    if args.update_expectation:
        update_expectation(outcomes)
    if args.doc:
        write_doc(render(outcomes))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
