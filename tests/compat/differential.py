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
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import dhcp_peer  # noqa: E402  (tests/compat/dhcp_peer.py: a DHCP server for `inet dhcp`)
import readwith  # noqa: E402  (tests/compat/readwith.py: each file as its host reads it)
from explain import explain, ifupdown2_raced  # noqa: E402  (tests/compat/explain.py: why a difference is there)
import state as kstate  # noqa: E402  (tests/compat/state.py: read back and normalize)

# A command line: NETCFG="env PYTHONPATH=SNAPSHOT:SNAPSHOT/daemon .venv/bin/python -m netcfg" runs a
# committed snapshot while others edit the tree.
NETCFG = shlex.split(os.environ.get("NETCFG", str(REPO / ".venv" / "bin" / "netcfg")))
IFUPDOWN2_ROOT = Path(os.environ.get("IFUPDOWN2_ROOT", REPO / ".cache" / "ifupdown2"))
# Debian's ifupdown 0.8 (`apt-get download ifupdown`, unpacked) and the packages whose
# /etc/network/if-*.d hooks make what ifupdown itself does not: bridge-utils (bridge_ports),
# vlan (eth0.10, vlan-raw-device) and ifenslave (bond-*), unpacked into one directory
# (tests/compat/peers.py's docstring says how). Never installed.
IFUPDOWN_ROOT = Path(os.environ.get("IFUPDOWN_ROOT", REPO / ".cache" / "ifupdown"))
IFUPDOWN_HOOKS_ROOT = Path(os.environ.get("IFUPDOWN_HOOKS_ROOT",
                                          REPO / ".cache" / "ifupdown-hooks"))
MAKO_PATH = REPO / ".cache" / "compat-python" / "usr" / "lib" / "python3" / "dist-packages"
INSTALLED_CONF = Path("/etc/network/ifupdown2/ifupdown2.conf")
SYSTEM_PYTHON = "/usr/bin/python3"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_NETNS_DIR = "/run/netns"
VRF_MAP_DIR = "/etc/iproute2/rt_tables.d"     # ifupdown2_vrf_map.conf
# Seconds for one sandbox (ifup -a gets 30 less); TCG on a loaded host needs more.
TIMEOUT = int(os.environ.get("NETCFG_COMPAT_TIMEOUT_S", "180"))
# ifupdown2 runs again when it raced its netlink cache (explain.IFUPDOWN2_CACHE_RACE).
RACE_RUNS = 4
# Kinds the plan may ask for, and the `ip link add` that proves the kernel has them.
KIND_PROBES = {
    "bridge": ["type", "bridge"], "vxlan": ["type", "vxlan", "id", "5", "dstport", "4789"],
    "macvlan": None, "veth": ["type", "veth"], "dummy": ["type", "dummy"],
    "vlan": None, "bond": ["type", "bond"], "vrf": ["type", "vrf", "table", "10"],
    "vlan-filtering": ["type", "bridge", "vlan_filtering", "1"],
    # Kinds a file's hook lines or tunnels ask for (peers.kinds_from_text, netcfg's plan).
    # Not gre's ends below: the kernel keeps one gre per (local, remote) (EEXIST).
    "tunnel": ["type", "gre", "remote", "192.0.2.3", "local", "192.0.2.4"],
    **{k: ["type", k, "remote", "192.0.2.1", "local", "192.0.2.2"]
       for k in ("gre", "gretap", "ipip", "sit", "vti")},
    **{k: ["type", k, "remote", "2001:db8::1", "local", "2001:db8::2"]
       for k in ("ip6gre", "ip6gretap", "ip6tnl", "vti6")},
    "wireguard": ["type", "wireguard"],
    "batman-adv": ["type", "batadv"], "batadv": ["type", "batadv"],
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


def write_spec(work: str, tool: str, path: Path, ports: list[str], takeover: bool,
               by_name: list[str] | None = None, peer_tools: bool = False) -> str:
    """What the inner half runs, written into WORK; the caller's namespaces go with it, so
    the inner half can refuse to run unless its own differ. BY_NAME: the stanzas a peer
    brings up by name instead of `ifup -a` (a file without `auto`). PEER_TOOLS: the
    tools a host with bridge-utils and vlan has (/sbin/brctl, /sbin/vconfig), for the
    peers' apply verdict (files that call them in their pre-up lines)."""
    spec = {"tool": tool, "file": str(path.resolve()), "ports": ports, "work": work,
            "by_name": by_name or [], "peer_tools": peer_tools,
            "takeover": takeover, "outer_net": os.stat("/proc/self/ns/net").st_ino,
            "outer_mnt": os.stat("/proc/self/ns/mnt").st_ino}
    spec_path = os.path.join(work, "spec.json")
    Path(spec_path).write_text(json.dumps(spec))
    return spec_path


def sandbox(tool: str, path: Path, ports: list[str], takeover: bool,
            by_name: list[str] | None = None, peer_tools: bool = False) -> dict:
    """Run the inner half in fresh namespaces; return what it wrote."""
    with tempfile.TemporaryDirectory(prefix="netcfg-compat-") as work:
        os.chmod(work, 0o755)
        spec_path = write_spec(work, tool, path, ports, takeover, by_name, peer_tools)
        proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "--",
                               sys.executable, __file__, "--inner", spec_path],
                              capture_output=True, text=True, timeout=TIMEOUT)
        result_path = os.path.join(work, "result.json")
        if not os.path.exists(result_path):
            raise RuntimeError(f"{tool} sandbox failed (exit {proc.returncode}): "
                               f"{(proc.stdout + proc.stderr).strip()[-1500:]}")
        return json.loads(Path(result_path).read_text())


def _name_of(path: Path) -> str:
    """PATH as the expectation names it: corpus-relative, cases/..., or as given."""
    path = path.resolve()
    return str(path.relative_to(HERE / "corpus")) if HERE / "corpus" in path.parents \
        else str(path.relative_to(HERE)) if HERE in path.parents else str(path)


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
    import peers
    # What the file's own hook lines need (batman-adv's module, mpls, a tunnel made by
    # `ip tunnel add`): netcfg's plan does not see them.
    extra = peers.kinds_from_text(text) & {"batman-adv", "mpls", "tunnel", "dummy"}
    missing = (needed_kinds(plan) | extra) - (kinds if kinds is not None else host_kinds())
    if missing:
        return Outcome(name, "vm-tier", "host kernel lacks " + ", ".join(sorted(missing)))
    # A device the file's own pre-up line makes (`brctl addbr $IFACE`) is no NIC of the
    # host: no stand-in for it (netcfg's plan cannot tell it from one).
    ports = [n for n in physical_ports(plan) if n not in peers.made_by_hooks(text)]
    before = set(os.listdir(HOST_NETNS_DIR)) if os.path.isdir(HOST_NETNS_DIR) else set()
    # Both sandboxes have brctl and vconfig where the file calls them (a host with
    # bridge-utils and vlan, as such a file's author had).
    tools = bool(re.search(r"\b(brctl|vconfig)\b", text))
    peer = reference_peer(name)
    # A fragment (no `auto`) is brought up by its stanzas' names, by the peer as by
    # peers.py's apply verdict, and by netcfg's own ifup.
    by_name = fragment_names(path)
    ifu = start(peer, path, ports, takeover=True, by_name=by_name, peer_tools=tools)
    ncf = start("netcfg", path, ports, takeover=False, by_name=by_name, peer_tools=tools)
    differences = kstate.diff(ifu["state"], ncf["state"], text)
    # ifupdown2's address addon races its own netlink cache on a device a pre-up line
    # made (explain.IFUPDOWN2_CACHE_RACE): seen on 2 runs in 5 of a Freifunk gateway's
    # `pre-up brctl addbr $IFACE`. What it means to do is the run that did not race.
    races = 0
    while races < RACE_RUNS and ifupdown2_raced(differences, text):
        races += 1
        ifu = start(peer, path, ports, takeover=True, by_name=by_name, peer_tools=tools)
        differences = kstate.diff(ifu["state"], ncf["state"], text)
    after = set(os.listdir(HOST_NETNS_DIR)) if os.path.isdir(HOST_NETNS_DIR) else set()
    if after - before:
        raise RuntimeError(f"the host's {HOST_NETNS_DIR} gained {sorted(after - before)}")
    out = Outcome(name, "differs" if differences else "same", differences=differences,
                  ifupdown2_rc=ifu["rc"], netcfg_rc=ncf["rc"], netcfg_query_rc=ncf.get("query_rc"),
                  seconds={"ifupdown2": ifu["seconds"], "netcfg": ncf["seconds"]},
                  ifupdown2_log=ifu["log"][-3000:], netcfg_log=ncf["log"][-3000:])
    if peer != "ifupdown2":
        out.detail = f"against {peer} 0.8: ifupdown2's own apply fails on this file"
    if ifu["rc"] != 0:
        out.detail = (out.detail + "; " if out.detail else "") + f"{peer} exit {ifu['rc']}"
    if races:
        out.detail = (out.detail + "; " if out.detail else "") + (
            f"ifupdown2 raced its netlink cache on {races} run(s) before this one")
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


def reference_peer(name: str) -> str:
    """Whose kernel state netcfg's is compared with: Debian's ifupdown2, or, for a file
    written for ifupdown that ifupdown 0.8 applies and ifupdown2's own apply does not
    (tests/compat/peer_results.json: an error, or killed at the limit), ifupdown 0.8,
    the peer that host ran: issue 22 counts a file either peer applies."""
    import peers
    record = peers.load()["files"].get(name)
    if not record or not record.get("for_ifupdown"):
        return "ifupdown2"
    applies = record.get("apply") or {}
    ok = ("applied", "applied-but-hooks")
    if applies.get("ifupdown", {}).get("status") in ok and \
            applies.get("ifupdown2", {}).get("status") not in ok:
        return "ifupdown"
    return "ifupdown2"


def fragment_names(path: Path) -> list[str] | None:
    """A file without `auto` (a fragment) is brought up by its stanzas' names, as
    peers.py's apply verdict does (peers.apply_setup)."""
    text = _text_with_sources(path)
    if re.search(r"^\s*(auto|allow-auto)\s", text, re.M):
        return None
    return list(dict.fromkeys(re.findall(r"^\s*iface\s+(\S+)", text, re.M))) or None


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


def _op_of_line(m: re.Match) -> dict:
    """An operation of `ifup -n`'s printed plan ("  + route-add eth0 ..."), as
    classify_takeover reads the JSON plan's."""
    return {"action": m.group(1), "name": m.group(2), "params": {}}


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


def _overlay(lower: str, adds: list[Path]) -> None:
    """ADDS (files, directories) seen in LOWER through an overlay whose upper layer is
    this sandbox's tmpfs (/run/compat): the host's LOWER is not written."""
    upper = Path("/run/compat", "overlay" + lower.replace("/", "-"))
    (upper / "up").mkdir(parents=True)
    (upper / "work").mkdir()
    for src in adds:
        if src.is_dir():
            shutil.copytree(src, upper / "up" / src.name, symlinks=True)
        elif src.exists():
            shutil.copy2(src, upper / "up" / src.name)
    _sh("mount", "-t", "overlay", "overlay", "-o",
        f"lowerdir={lower},upperdir={upper / 'up'},workdir={upper / 'work'}", lower)


PEER_SBIN = ("brctl", "vconfig")


def _prepare_ifupdown(spec_file: str) -> list[str]:
    """Make this sandbox look like a Debian host with ifupdown, bridge-utils, vlan and
    ifenslave installed: their /etc/network/if-*.d hooks in /etc (the sandbox's
    overlay), /lib/ifupdown and /lib/bridge-utils, /sbin/brctl through overlays of
    /usr/lib and /usr/sbin whose upper layers are this sandbox's tmpfs. Returns ifup."""
    ifup = IFUPDOWN_ROOT / "sbin" / "ifup"
    hooks = IFUPDOWN_HOOKS_ROOT
    if not ifup.exists() or not (hooks / "sbin" / "brctl").exists():
        raise RuntimeError(f"{ifup} or {hooks}/sbin/brctl missing: see tests/compat/peers.py")
    _overlay("/usr/lib", [IFUPDOWN_ROOT / "lib" / "ifupdown", hooks / "lib" / "bridge-utils"])
    # ifenslave's hook asks `ifquery` and `ifup` (from PATH, reading
    # /etc/network/interfaces) about the bond's master: ifupdown's, and the file.
    _overlay("/usr/sbin", [*(hooks / "sbin" / t for t in PEER_SBIN),
                           *(IFUPDOWN_ROOT / "sbin" / t for t in ("ifup", "ifquery", "ifdown"))])
    interfaces = Path("/etc/network/interfaces")
    if interfaces.exists() or interfaces.is_symlink():
        interfaces.unlink()
    interfaces.symlink_to(spec_file)
    for phase in ("pre-up", "up", "down", "post-down"):
        target = Path(f"/etc/network/if-{phase}.d")
        if target.exists():     # the host's own hooks are not the peer's
            shutil.rmtree(target)
        target.mkdir(parents=True)
        src = hooks / "etc" / "network" / f"if-{phase}.d"
        for hook in (sorted(src.iterdir()) if src.is_dir() else []):
            (target / hook.name).symlink_to(os.readlink(hook)) if hook.is_symlink() \
                else shutil.copy2(hook, target / hook.name)
    return [str(ifup)]


def _run_ifupdown(ifup: list[str], spec: dict, env: dict,
                  run) -> subprocess.CompletedProcess:
    """Debian's networking.service with ifupdown: `ifup -a`, then udev's `ifup
    --allow=hotplug IFACE` of each allow-hotplug stanza whose device exists; a file
    without `auto` (a fragment) by its stanzas' names."""
    names = spec.get("by_name") or []
    first = run([*ifup, "-i", spec["file"], *(names or ["-a"])], env, TIMEOUT - 30)
    log = first.stdout + first.stderr
    listed = run([str(Path(ifup[0]).with_name("ifquery")), "-i", spec["file"], "--list",
                  "--allow=hotplug"], env, 60) if not names else None
    hotplug = [n for n in (listed.stdout.split() if listed and listed.returncode == 0 else [])
               if os.path.exists(f"/sys/class/net/{n.split(':')[0]}")]
    rc = first.returncode
    if hotplug:
        second = run([*ifup, "-i", spec["file"], "--allow=hotplug", *hotplug], env, TIMEOUT - 30)
        log += f"--- ifup --allow=hotplug {' '.join(hotplug)}\n" + second.stdout + second.stderr
        rc = rc or second.returncode
    return subprocess.CompletedProcess(first.args, rc, log, "")


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


def _settle_protodown() -> None:
    """A carrier change reaches operstate and the routes' `linkdown` flag through the
    kernel's linkwatch, up to a second later (linkwatch_schedule_work): netcfg sets a
    VRRP macvlan's protodown (carrier off) at the end of its apply, and a state read at
    once saw its routes without `linkdown` on some runs. Where a device has protodown
    on, the state is read after that second."""
    links = subprocess.run(["ip", "-d", "-j", "link", "show"], capture_output=True, text=True)
    try:
        down = any(link.get("proto_down") for link in json.loads(links.stdout or "[]"))
    except ValueError:
        down = False
    if down:
        time.sleep(1.2)


def _inner_run(spec: dict, run, leasing: list[str]) -> int:
    env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": "/root"}
    if spec["tool"] == "ifupdown2":
        argv = _prepare_ifupdown2(spec)
        env["PYTHONPATH"] = str(MAKO_PATH)
    elif spec["tool"] == "netcfg" and spec.get("by_name"):
        # netcfg's ifup (the drop-in, netcfg/ifupdown/), as a fragment's peer is run.
        argv = [sys.executable, "-m", "netcfg.ifupdown", "ifup", "-i", spec["file"],
                *spec["by_name"]]
    elif spec["tool"] == "netcfg":
        argv = netcfg_argv("apply", "-c", spec["file"])
    elif spec["tool"] == "ifupdown":
        argv = _prepare_ifupdown(spec["file"])
    else:
        argv = ["true"]     # "none": the sandbox alone, for the harness's own test
    if spec.get("peer_tools") and spec["tool"] != "ifupdown":   # ifupdown's has them
        _overlay("/usr/sbin", [IFUPDOWN_HOOKS_ROOT / "sbin" / t for t in PEER_SBIN])
    start = time.monotonic()
    if spec["tool"] == "ifupdown2" and spec.get("by_name"):
        # A fragment (no `auto`): ifup of its stanzas by name, as peers.py checks it.
        proc = run([*argv, *spec["by_name"]], env, TIMEOUT - 30)
    elif spec["tool"] == "ifupdown2":
        proc = _run_ifupdown2(argv, env, run, Path(spec["file"]).read_text())
    elif spec["tool"] == "ifupdown":
        proc = _run_ifupdown(argv, spec, env, run)
    else:
        proc = run(argv, env, TIMEOUT - 30)
    unleased = dhcp_peer.wait_for_leases(leasing)
    _settle_protodown()
    result = {"rc": proc.returncode, "log": proc.stdout + proc.stderr
              + (f"\n(harness: no lease on {', '.join(unleased)} after "
                 f"{dhcp_peer.LEASE_WAIT_S} s)" if unleased else ""),
              "seconds": round(time.monotonic() - start, 2),
              "state": kstate.read(exclude=[f"cmp{i}" for i in range(1, len(spec["ports"]) + 1)]),
              # What /sys shows here: the sandbox's devices, if the remount worked.
              "sys_class_net": sorted(os.listdir("/sys/class/net")),
              "netns": os.stat("/proc/self/ns/net").st_ino}
    if spec["tool"] == "netcfg" and spec.get("by_name"):
        query = run([sys.executable, "-m", "netcfg.ifupdown", "ifquery", "-c", "-i",
                     spec["file"], *spec["by_name"]], env, 120)
        result["query_rc"] = query.returncode
    elif spec["tool"] == "netcfg":
        # The silent-outage check: does netcfg itself say the kernel matches?
        query = run(netcfg_argv("query", "--check", "-c", spec["file"]), None, 120)
        result["query_rc"] = query.returncode
    if spec["takeover"] and spec.get("by_name"):
        # A fragment is taken over as it is brought up: netcfg's ifup of its names.
        ifup = [sys.executable, "-m", "netcfg.ifupdown", "ifup", "-i", spec["file"]]
        dry = run([*ifup, "-n", *spec["by_name"]], env, 120)
        result["takeover_plan"] = {"batches": [[_op_of_line(m) for m in re.finditer(
            r"(?m)^\s+[-+~]\s+(\S+)\s+(\S+)", dry.stdout)]]}
        real = run([*ifup, *spec["by_name"]], env, 300)
    elif spec["takeover"]:
        dry = run(netcfg_argv("apply", "--dry-run", "--json", "-c", spec["file"]), None, 120)
        try:
            result["takeover_plan"] = json.loads(dry.stdout)["plan"]
        except ValueError:
            result["takeover_error"] = dry.stdout + dry.stderr
        # Then the takeover itself: a plan can look additive and still be
        # refused (a route-add answered EEXIST by ifupdown2's own route).
        real = run(netcfg_argv("apply", "-c", spec["file"]), None, 300)
    if spec["takeover"]:
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
                            "unexplained": unexplained(o),
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


def unexplained(o: Outcome) -> list[str]:
    """O's differences that are not listed as deliberate (nor ifupdown2's own refusal or
    bug, nor no setting): the ones issue 22's "same state" does not allow; a difference
    explain names as a netcfg bug is one of them."""
    if not o.differences:
        return []
    why = explained(o)
    return [d for d in o.differences if d not in why or why[d].startswith("netcfg bug")]


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
             "`explain.explain` names each difference that is a deliberate one "
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


def write_doc_rows(outcomes: list[Outcome]) -> None:
    import vm_differential      # its row merge, with this table's markers
    vm_differential.write_doc_rows(outcomes, DOC_BEGIN, DOC_END)


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
    ap.add_argument("--doc-rows", action="store_true",
                    help="put these files' rows in place of theirs in docs/compat.md's table "
                         "(a new file gets a row), and recount")
    ap.add_argument("--unrecorded", action="store_true",
                    help="the accepted corpus files expectation.json has no differential "
                         "record of (newly accepted, new sources)")
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
        if args.doc_rows:
            write_doc_rows(outcomes)
        return 0
    if args.unrecorded:
        recorded = json.loads(EXPECTATION.read_text()).get("differential", {})
        args.files += [p for p in accepted_files()
                       if str(p.relative_to(HERE / "corpus") if HERE / "corpus" in p.parents
                              else p.relative_to(HERE)) not in recorded]
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
            out, failed = Outcome(_name_of(path), "error", str(e)), True
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
    if args.doc_rows:
        write_doc_rows(outcomes)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
