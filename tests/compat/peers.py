#!/usr/bin/env python3
"""The peers' verdict on every corpus file: what Debian's ifupdown2 and ifupdown say.

    sudo tests/compat/peers.py                 every corpus file -> peer_results.json
    sudo tests/compat/peers.py FILE...         those files, printed (nothing written)
    sudo tests/compat/peers.py --update FILE... those files, merged into peer_results.json

For each file, in a sandbox of its own (`unshare --net --mount --propagation
private`, this script's --inner half, the same sandbox as differential.py's: it
refuses to go on unless its network and mount namespaces are not PID 1's nor its
caller's, remounts /sys, puts tmpfs over /run and /var/tmp):

* Debian's ifupdown2 3.0.0 (unpacked under .cache/ifupdown2, `make compat-deps`),
  configured as differential.py configures it (its ifupdown2.conf names the file
  and the corpus's template_lookuppath): `ifup -a -s -i FILE`, its syntax check.
  It accepts when it logs no `error:` line and either exits 0 or logs warnings
  only (`status` says which: its syntax check fails on any warning).
* Debian's ifupdown 0.8 (`apt-get download ifupdown`, unpacked under
  .cache/ifupdown, never installed): `ifup -a -n -i FILE`, then `ifup -n -i FILE
  NAME...` with every stanza's name (allow-hotplug ones too), both --no-act:
  ifupdown parses the file and every stanza's method and prints the commands it
  would run. It accepts when both exit 0.

Each file is read as its host reads it (tests/compat/readwith.py): a Proxmox SDN
file through a top file that sources its host's file. The results go to
tests/compat/peer_results.json with each file's text digest, so `make test` reads
the verdicts instead of running the peers; tests/compat/test_peers.py fails when a
corpus file has no verdict for its current text.

--apply (the peers' apply verdict, issue 22's denominator):

    sudo tests/compat/peers.py --apply [FILE...]   every peer-accepted file (or those)

Each peer-accepted file is applied by the peer(s) that accept it, in
differential.py's sandbox (its inner half: private net + mount namespaces, /sys
remounted, /run, /var/tmp tmpfs, /etc an overlay, the file's physical ports made as
veth pairs with fixed MACs, dnsmasq answering `inet dhcp`): Debian's ifupdown2
`ifup -a` as its networking.service runs it (then the allow-hotplug stanzas), and
for a file written for ifupdown, Debian's ifupdown 0.8 `ifup -a` (then `ifup
--allow=hotplug` of the allow-hotplug stanzas), with the hooks of bridge-utils, vlan
and ifenslave as a Debian host that uses their lines has them (unpacked, never
installed: `cd .cache/deb/ifupdown-hooks && apt-get download bridge-utils vlan
ifenslave && for d in *.deb; do dpkg-deb -x $d ../../ifupdown-hooks; done`; their
/lib and /sbin files reach the sandbox through overlays of /usr/lib and /usr/sbin). A file
without `auto` is brought up by its stanzas' names. The physical ports are the ones
netcfg's plan names where netcfg accepts the file, else the ones the text names
(`ports_from_text`). A file that needs a kind the host kernel lacks (vlan, bond, vrf,
dummy, VLAN filtering, tunnels) is recorded `needs-vm`; tests/compat/vm_differential.py
FILE@peer-apply=... runs it in the VM tier (`--apply --vm`).
The verdict (exit code, first error line, seconds) goes into the file's record under
"apply", kept while its text is unchanged.

ifupdown's verdict counts for a file only when the file is written for ifupdown
(`for_ifupdown`): no attribute from IFUPDOWN2_ONLY in it. ifupdown hands every
option it does not know to the hook scripts as an environment variable, so on an
ifupdown2 file its --no-act run says nothing about whether the file works.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import differential  # noqa: E402  (the sandbox's setup and ifupdown2's configuration)
import readwith  # noqa: E402

RESULTS = HERE / "peer_results.json"
OLD_SOURCES = ("cumulus-demos", "ifupdown2", "pve-docs", "pve-network")   # issue 12's corpus
CORPUS = HERE / "corpus"
IFUPDOWN_ROOT = Path(os.environ.get("IFUPDOWN_ROOT", REPO / ".cache" / "ifupdown"))
TIMEOUT_S = 90
VERSIONS = {"ifupdown2": "3.0.0-1.1 (Debian, unpacked)", "ifupdown": "0.8.41 (Debian, unpacked)"}
# Attributes (or their prefixes) that only ifupdown2 (and Cumulus's tools around it)
# acts on: neither ifupdown 0.8 nor the Debian packages that hook it (bridge-utils,
# ifenslave, vlan, resolvconf, wpasupplicant, ethtool, openvswitch) read them. A file
# with one of them is written for ifupdown2; ifupdown's verdict is not counted for it.
IFUPDOWN2_ONLY = (
    "vxlan-", "bridge-vlan-aware", "bridge-vids", "bridge-pvid", "bridge-access",
    "bridge-allow-untagged", "bridge-learning", "bridge-arp-nd-suppress",
    "bridge-unicast-flood", "bridge-multicast-flood", "bridge-vlan-protocol",
    "bridge-l2protocol-tunnel", "bridge-ports-condone-regex", "bridge-mcsnoop",
    "bridge-mcqv4src", "vrf", "vrf-table", "clag", "clagd-", "mstpctl-", "address-purge",
    "link-type", "link-down", "link-speed", "link-duplex", "link-autoneg", "alias",
    "vlan-id", "vlan-protocol", "ip-forward", "ip6-forward", "mpls-enable",
    "arp-accept", "tunnel-", "xfrm-", "bond-lacp-bypass-allow", "es-sys-mac",
    "dhcp6-", "ipv6-addrgen", "vlan", "post-up-ifupdown2",
)
_STANZA_WORDS = ("iface", "auto", "mapping", "source", "source-directory", "template",
                 "vlan", "no-auto-down", "no-scripts", "rename")
# Options that a Debian package's /etc/network/if-*.d hook reads (resolvconf, wpasupplicant,
# ethtool, ifmetric, hostapd, ppp's pon/poff): ifupdown2 runs those hooks as ifupdown does.
# ifenslave's hook reads bond-master on a slave (ifupdown2 runs if-*.d scripts:
# addon_scripts_support=1 in Debian's ifupdown2.conf).
HOOKED = ("dns-", "wpa-", "ethernet-", "offload-", "hardware-", "link-", "metric", "hostapd",
          "provider", "wireless-", "bond-master")


def digest(path: Path) -> str:
    """What the peers read for PATH (its host file's text too): a verdict is for this."""
    return hashlib.sha256(readwith.text_of(path).encode()).hexdigest()[:16]


def attributes_of(text: str) -> list[str]:
    """The option names of TEXT's stanzas (dashes for underscores, as ifupdown2 reads
    them), each once, in file order; stanza keywords and comments left out."""
    words = (ln.split()[0] for ln in text.splitlines() if ln.split())
    return list(dict.fromkeys(
        w.lower().replace("_", "-") for w in words
        if not w.startswith(("#", "%", "<", "$")) and w not in _STANZA_WORDS
        and not w.startswith("allow-") and re.match(r"^[A-Za-z][\w-]*$", w)))


def ifupdown2_attributes() -> set[str]:
    """Every attribute Debian's ifupdown2 declares (its addons' _modinfo), read from the
    unpacked package: what it acts on. It passes any other line to the if-*.d hooks
    as IF_* variables and reports nothing (its syntax check too)."""
    names: set[str] = set()
    share = differential.IFUPDOWN2_ROOT / "usr" / "share" / "ifupdown2"
    for module in [*share.glob("addons/*.py"), *share.glob("ifupdownaddons/*.py")]:
        names |= set(re.findall(r"['\"]([a-z][a-z0-9_-]+)['\"]\s*:\s*\{\s*['\"]"
                                r"(?:help|deprecated|new-attribute)['\"]", module.read_text()))
    return names


def ignored_by_ifupdown2(text: str, known: set[str]) -> list[str]:
    """TEXT's attributes that ifupdown2 neither declares nor leaves to a Debian package's
    hook (HOOKED): lines that do nothing under ifupdown2 and that it does not report."""
    return [a for a in attributes_of(text)
            if a not in known and not a.startswith(HOOKED) and a not in _STANZA_WORDS]


def for_ifupdown(path: Path) -> bool:
    """Whether PATH is written for ifupdown: no ifupdown2-only attribute, no template."""
    text = readwith.text_of(path)
    if "<%" in text or re.search(r"^\s*%", text, re.M):
        return False        # a Mako template: ifupdown2's
    if re.search(r"^\s*iface\s+\S+\s*(#.*)?$", text, re.M):
        return False        # `iface NAME` without family and method: ifupdown2's or -ng's
    for name in attributes_of(text):
        if any(name == a or (a.endswith("-") and name.startswith(a)) for a in IFUPDOWN2_ONLY):
            return False
    return not re.search(r"^\s*vlan\s+\S+", text, re.M)     # Cumulus's `vlan` stanzas


def _first_error(log: str) -> str:
    """The line that says why: a located one (FILE:LINE:) first, then an error, a warning."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for test in (lambda ln: re.search(r"\S+:\d+:", ln) and "run-parts" not in ln,
                 lambda ln: re.match(r"^(\S+: )?error\b", ln, re.I),
                 lambda ln: re.match(r"^warning\b", ln, re.I)):
        found = next((ln for ln in lines if test(ln)), None)
        if found:
            return found[:240]
    return lines[-1][:240] if lines else ""


def verdict(rc: int, log: str, *, warnings_only_pass: bool) -> dict:
    """yes: exit 0. warnings: ifupdown2's syntax check failed on warnings alone (it fails
    on any warning: an attribute it does not know, an MTU on a bridge), which its
    `ifup -a` goes on after; it counts as accepted. no: anything else."""
    errors = [ln for ln in log.splitlines() if re.match(r"^\s*(\S+: )?error\b", ln, re.I)]
    warnings = [ln for ln in log.splitlines() if re.match(r"^\s*warning\b", ln, re.I)]
    if rc == 0 and not errors:
        status = "yes"
    elif warnings_only_pass and warnings and not errors:
        status = "warnings"
    else:
        status = "no"
    return {"accepts": status != "no", "status": status, "rc": rc,
            "first_error": "" if status == "yes" else _first_error(log)}


# --- the sandbox's half ------------------------------------------------------------------

def _run(argv: list[str], env: dict) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 124, f"error: timed out after {TIMEOUT_S} s"
    return proc.returncode, proc.stdout + proc.stderr


def inner(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    differential._refuse_unless_private(spec)
    sh = differential._sh
    sh("mount", "--make-rprivate", "/")
    sh("mount", "-t", "sysfs", "none", "/sys")
    for d in ("/run", "/var/tmp"):
        sh("mount", "-t", "tmpfs", "-o", "mode=0755", "compat", d)
    for d in ("/run/network", "/var/tmp/network"):
        os.makedirs(d)
    if os.path.isdir(differential.VRF_MAP_DIR):
        sh("mount", "-t", "tmpfs", "-o", "mode=0755", "compat", differential.VRF_MAP_DIR)
    sh("ip", "link", "set", "lo", "up")
    env = {"PATH": differential.SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": "/root"}
    out: dict = {}
    ifup2 = differential._prepare_ifupdown2(spec)
    env2 = {**env, "PYTHONPATH": str(differential.MAKO_PATH)}
    rc, log = _run([*ifup2, "-a", "-s", "-i", spec["file"]], env2)
    if "no ifaces found matching given allow lists" in log and spec["names"]:
        # No `auto` stanza (a fragment, an allow-hotplug host): -a checks nothing, so
        # every stanza is checked by name, as `ifup NAME` would be.
        rc, log = _run([*ifup2, "-s", "-i", spec["file"], *spec["names"]], env2)
        log = "(no auto stanza: checked by name)\n" + log
    out["ifupdown2"] = {**verdict(rc, log, warnings_only_pass=True), "log": log[-2000:]}
    ifup = str(IFUPDOWN_ROOT / "sbin" / "ifup")
    rc1, log1 = _run([ifup, "-a", "-n", "-i", spec["file"]], env)
    # Every stanza by name too (allow-hotplug ones, those a script or a person brings
    # up): -a alone reads the whole file but checks the methods of `auto` ones only.
    rc2, log2 = _run([ifup, "-n", "-i", spec["file"], *spec["names"]], env) \
        if spec["names"] else (0, "")
    rc = rc1 or rc2
    log = log1 + ("--- by name\n" + log2 if rc2 else "")
    out["ifupdown"] = {**verdict(rc, log, warnings_only_pass=False), "log": log[-2000:]}
    Path(spec["out"]).write_text(json.dumps(out))
    return 0


# --- the caller's half -------------------------------------------------------------------

def judge(path: Path, known: set[str], keep_log: bool = False) -> dict:
    """Both peers on PATH, each in the same fresh sandbox; the record for peer_results."""
    with tempfile.TemporaryDirectory(prefix="netcfg-peers-") as work:
        os.chmod(work, 0o755)
        top = readwith.top_file(path, work)
        names = list(dict.fromkeys(re.findall(r"^\s*iface\s+(\S+)", readwith.text_of(path),
                                              re.M)))
        spec = {"file": str(top), "work": work, "out": f"{work}/out.json", "names": names,
                "outer_net": os.stat("/proc/self/ns/net").st_ino,
                "outer_mnt": os.stat("/proc/self/ns/mnt").st_ino}
        Path(f"{work}/spec.json").write_text(json.dumps(spec))
        proc = subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "--",
                               sys.executable, __file__, "--inner", f"{work}/spec.json"],
                              capture_output=True, text=True, timeout=4 * TIMEOUT_S)
        if proc.returncode != 0 or not Path(spec["out"]).exists():
            raise RuntimeError(f"{path}: the sandbox failed: {proc.stderr.strip()[-400:]}")
        out = json.loads(Path(spec["out"]).read_text())
    for peer in out.values():
        # Where the sandbox's temporary top file was, say the corpus file.
        for key in ("first_error", "log"):
            peer[key] = peer[key].replace(str(top), str(path.relative_to(REPO))).replace(
                f"{REPO}/", "")     # the host file a Proxmox SDN file is read with
    return {"digest": digest(path), "for_ifupdown": for_ifupdown(path),
            "ifupdown2_ignores": ignored_by_ifupdown2(readwith.text_of(path), known),
            "ifupdown2": {k: v for k, v in out["ifupdown2"].items() if keep_log or k != "log"},
            "ifupdown": {k: v for k, v in out["ifupdown"].items() if keep_log or k != "log"}}


def accepted_by_peer(record: dict) -> bool:
    """A peer accepts the file: ifupdown2's syntax check passes and ifupdown2 acts on every
    line (it ignores none: a file of ifupdown-ng's `use dhcp` passes its syntax check and
    does nothing), or, for a file written for ifupdown, ifupdown's --no-act run passes."""
    return (record["ifupdown2"]["accepts"] and not record["ifupdown2_ignores"]) or (
        record["for_ifupdown"] and record["ifupdown"]["accepts"])


def peer_cell(record: dict | None) -> str:
    """The peers' column of the acceptance table."""
    if record is None:
        return "not run"
    two = {"yes": "ifupdown2 yes", "warnings": "ifupdown2 yes (warnings)",
           "no": "ifupdown2 **no**"}[record["ifupdown2"]["status"]]
    if record["ifupdown2_ignores"]:
        two += " but ignores " + ", ".join(f"`{a}`" for a in record["ifupdown2_ignores"][:4]) \
            + (" ..." if len(record["ifupdown2_ignores"]) > 4 else "")
    if record["for_ifupdown"]:
        two += ", " + ("ifupdown yes" if record["ifupdown"]["accepts"] else "ifupdown **no**")
    applies = record.get("apply") or {}
    if applies:
        two += "; apply: " + ", ".join(
            f"{p} " + ("ok" if v["status"] == "applied" else "not run (another peer applies "
                       "it)" if v["status"] == "skipped" else
                       "not judged (" + v.get("first_error", "") + ")"
                       if v["status"] == "not-judged" else
                       f"ok but for its own hook commands (exit {v.get('rc')})"
                       if v["status"] == "applied-but-hooks" else
                       f"not judged (killed at the VM tier's limit, {v.get('seconds')} s)"
                       if v["status"] == "timeout" else "not judged (needs the VM tier)"
                       if v["status"] == "needs-vm" else f"**exit {v.get('rc')}**")
            for p, v in applies.items())
    return two


# --- the apply verdict ----------------------------------------------------------------------

# Kinds a file's text asks for (beside what netcfg's plan says, for the files netcfg
# refuses): the peer would make them, and the host kernel may not have them.
_TEXT_KINDS = (
    (re.compile(r"^\s*(bond[-_](slaves|mode|master|members|miimon)|slaves)\s", re.M), "bond"),
    (re.compile(r"^\s*(vlan[-_]raw[-_]device|vlan-id)\s|^\s*iface\s+[^\s:]+\.\d+\s",
                re.M), "vlan"),
    (re.compile(r"^\s*vrf(-table)?\s", re.M), "vrf"),
    (re.compile(r"^\s*link-type\s+dummy|type\s+dummy\b", re.M), "dummy"),
    (re.compile(r"^\s*bridge[-_]vlan[-_]aware\s+(yes|on|1)\b", re.M), "vlan-filtering"),
    (re.compile(r"^\s*(tunnel-mode|gre-\S+)\s|^\s*iface\s+\S+\s+inet6?\s+(tunnel|6to4)\b|"
                r"\btunnel add\b|\blink add\b.*\btype\s+(gre|gretap|ipip|sit|vti|ip6tnl|ip6gre)\b",
                re.M), "tunnel"),
    (re.compile(r"^\s*batman[-_]|\bbatctl\b|\bbatman-adv\b|\bbatadv\b", re.M), "batman-adv"),
    (re.compile(r"^\s*mpls-enable\s|\bnet\.mpls\.", re.M), "mpls"),
    (re.compile(r"^\s*iface\s+\S+\s+inet6\s+dhcp\b", re.M), "dhcpv6"),
    (re.compile(r"^\s*link-(speed|duplex|autoneg)\s", re.M), "link-modes"),
)
# What no tier of the harness can judge: its DHCP peer (dnsmasq, tests/compat/dhcp_peer.py)
# answers DHCPv4 only.
NOT_JUDGED = {"dhcpv6": "inet6 dhcp: the harness's DHCP peer answers DHCPv4 only",
              "openvswitch": "Open vSwitch: neither tier runs ovs-vswitchd (tests/kernel/"
                             "test_ovs.py covers netcfg's side)",
              "link-modes": "link-speed/-duplex/-autoneg: the sandbox's stand-in ports are "
                            "veths, which have no link modes (netcfg refuses them there, "
                            "ifupdown2 skips them without a word); tests/kernel/"
                            "test_ethtool.py covers netcfg's side"}
_MAKES = re.compile(r"^(bridge[-_]ports|bond[-_]slaves|bond[-_]mode|slaves|vxlan-id|vrf-table|"
                    r"link-type|tunnel-mode|mode|vlan[-_]raw[-_]device|vlan-id|endpoint|"
                    r"wireguard\S*|batman\S*|ovs_type|ovs-type|pre-up|up|pointopoint)$")
_LISTS = re.compile(r"^(bridge[-_]ports|bond[-_]slaves|slaves|vlan[-_]raw[-_]device|"
                    r"bond-members|tunnel-dev|vxlan-physdev|bridge-ports|ovs_ports)$")


_MAKE_CMD = re.compile(r"\baddbr\b|\blink add\b|\btuntap add\b|\btunctl\b|\badd-br\b|"
                       r"\btunnel add\b")


def made_by_hooks(text: str) -> set[str]:
    """Stanzas whose own pre-up or up lines make their device (`brctl addbr $IFACE`,
    `ip link add ...`): no stand-in NIC for them, the peer's line makes it."""
    made, current = set(), None
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["iface"] and len(words) > 1:
            current = words[1]
        elif current and words[:1] in (["pre-up"], ["up"]) and _MAKE_CMD.search(line):
            made.add(current)
    return made


def kinds_from_text(text: str) -> set[str]:
    kinds = {kind for pattern, kind in _TEXT_KINDS if pattern.search(text)}
    if re.search(r"^\s*(bridge[-_]ports|bond[-_]slaves)\s.*\S\.\d", text, re.M):
        kinds.add("vlan")       # a VLAN named in a port list: bridge-utils' hook makes it
    return kinds


def ports_from_text(text: str) -> list[str]:
    """The devices a file uses and makes nowhere (the host's NICs), for a file netcfg
    refuses (otherwise its plan names them): stanza names and the members of port
    lists, without the stanzas that make a device (a bridge, a bond, a VLAN, ...),
    an alias's or a VLAN's base device counted as a port."""
    made, used, current = set(), [], None
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "iface" and len(words) > 1:
            current = words[1]
            used.append(current.split(":")[0])
            if "." in current.split(":")[0]:
                made.add(current.split(":")[0])
                used.append(current.split(".")[0])
            if words[2:4] and words[3:4] and words[3] in ("tunnel", "6to4", "ppp", "wvdial"):
                made.add(current)
        elif words[0] in ("auto", "mapping") or words[0].startswith("allow-"):
            current = None
        elif current and _MAKES.match(words[0]):
            if words[0] not in ("pre-up", "up") or " add " in line:
                made.add(current)
        if current and _LISTS.match(words[0]):
            for w in words[1:]:
                if w in ("none", "all", "regex", "glob"):
                    continue
                if "." in w:        # eth0.10 in a port list: a VLAN the peer makes
                    made.add(w)
                    used.append(w.split(".")[0])
                used.append(w)
    return [n for n in dict.fromkeys(used) if n not in made and n != "lo" and len(n) <= 15
            and not set(n) & set("/*?[]$%{}<>\\") and "=" not in n]


def apply_peers(record: dict) -> list[str]:
    """The peers whose apply is the file's verdict: ifupdown2 when its check passes and
    it acts on every line, ifupdown when the file is written for it and its check passes."""
    out = []
    if record["ifupdown2"]["accepts"] and not record["ifupdown2_ignores"]:
        out.append("ifupdown2")
    if record["for_ifupdown"] and record["ifupdown"]["accepts"]:
        out.append("ifupdown")
    return out


def _apply_first_error(peer: str, log: str) -> str:
    """The line of a failed apply that says why."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    if peer == "ifupdown":
        # ifupdown prints the failed command's own message, then "ifup: failed to bring
        # up X": the line before that says why (an earlier one may be noise it goes on
        # after, such as "RTNETLINK answers: Operation not supported").
        at = next((i for i, ln in enumerate(lines) if ln.startswith("ifup: failed")), None)
        before = [ln for ln in lines[:at] if not ln.startswith(("run-parts", "ifup:"))] \
            if at is not None else []
        if before:
            return before[-1][:240]
    tests = [lambda ln: ln in _ifupdown2_errors(ln)] if peer == "ifupdown2" else [
        lambda ln: re.search(r"RTNETLINK|Error:|Cannot find|[Ff]ailed|not found|No such|"
                             r"[Ii]nvalid|can't|cannot|[Uu]nknown", ln)
        and not ln.startswith(("run-parts", "ifup: failed to bring up"))]
    tests.append(lambda ln: ln.startswith("ifup: failed to bring up"))
    for test in tests:
        found = next((ln for ln in lines if test(ln)), None)
        if found:
            return found[:240]
    return lines[-1][:240] if lines else ""


def _ifupdown2_errors(log: str) -> list[str]:
    """ifupdown2's logged errors, and its warnings that a command it ran failed (it logs
    `warning: IFACE: cmd '...' failed` and goes on, exit 0, without what the line asked)."""
    return [ln for ln in log.splitlines() if re.match(r"^\s*(\S+: )?error\b", ln, re.I)
            or re.match(r"^\s*warning: .*\bfailed\b", ln)]


def apply_status(peer: str, rc: int, log: str) -> dict:
    """applied: exit 0 and (ifupdown2) no logged error nor failed command; error: anything
    else."""
    errors = _ifupdown2_errors(log)
    ok = rc == 0 and not (peer == "ifupdown2" and errors)
    return {"status": "applied" if ok else "error", "rc": rc,
            "first_error": "" if ok else _apply_first_error(peer, log)}


def apply_setup(path: Path, top: Path, plan_of=None) -> tuple[list[str], set[str], list[str]]:
    """(ports, kinds needed, stanza names when the file has no `auto`) for TOP (PATH as
    its host reads it)."""
    text = differential._text_with_sources(top)
    plan = (plan_of or differential.netcfg_plan)(top)
    ports = differential.physical_ports(plan) if plan else ports_from_text(text)
    ports = [n for n in ports if n not in made_by_hooks(text)]
    kinds = (differential.needed_kinds(plan) if plan else set()) | kinds_from_text(text)
    auto = re.search(r"^\s*(auto|allow-auto)\s", text, re.M)
    names = [] if auto else list(dict.fromkeys(
        re.findall(r"^\s*iface\s+(\S+)", text, re.M)))
    return ports, kinds, names


# A failed command that needed a file or tool of its host (an iptables rules file, a
# script), not a line of the file the peer could not do.
_HOST_FILE = re.compile(r"cannot open|can't open|No such file or directory|: not found|"
                        r"command not found|returned 127")
_HOOK = re.compile(r"^\s*(pre-up|up|post-up|down|pre-down|post-down)\s", re.M)


def without_hooks(top: Path, work: str) -> Path | None:
    """TOP (and the files it sources by absolute path) without its hook lines (pre-up,
    up, post-up, down, pre-down, post-down, and their continuations); None when it has
    none."""
    texts = {top: top.read_text()}
    for w in (ln.split() for ln in texts[top].splitlines()):
        if len(w) == 2 and w[0] == "source" and w[1].startswith("/") and Path(w[1]).is_file():
            texts[Path(w[1])] = Path(w[1]).read_text()
    if not any(_HOOK.search(t) for t in texts.values()):
        return None
    out_dir = Path(work, "without-hooks")
    out_dir.mkdir(exist_ok=True)
    renamed = {p: out_dir / f"{i}-{p.name}" for i, p in enumerate(texts)}
    for path, text in texts.items():
        kept, skipping = [], False
        for line in text.splitlines():
            if skipping or _HOOK.match(line):
                skipping = line.rstrip().endswith("\\")
                kept.append("")         # line numbers stay
                continue
            for old, new in renamed.items():
                line = line.replace(f"source {old}", f"source {new}")
            kept.append(line)
        renamed[path].write_text("\n".join(kept) + "\n")
    return renamed[top]


def judge_apply(path: Path, record: dict, kinds_here: set[str], start=None,
                plan_of=None, enough: bool = False) -> dict:
    """Each of RECORD's apply peers on PATH, in differential.py's sandbox; {peer: verdict}.
    START and PLAN_OF: how a sandbox is run and netcfg's plan had (the VM tier's warm
    forks, tests/compat/vm_differential.py). ENOUGH (the VM tier, where each apply
    costs a minute): once one peer applies the file, the next is not run."""
    start = start or differential.sandbox
    out = {}
    with tempfile.TemporaryDirectory(prefix="netcfg-peers-top-") as top_dir:
        os.chmod(top_dir, 0o755)
        top = readwith.top_file(path, top_dir)
        ports, kinds, names = apply_setup(path, top, plan_of)
        missing = sorted(kinds - kinds_here)
        for peer in apply_peers(record):
            if set(missing) & set(NOT_JUDGED):
                out[peer] = {"status": "not-judged", "needs": missing, "ports": ports,
                             "first_error": "; ".join(NOT_JUDGED[k] for k in missing
                                                      if k in NOT_JUDGED)}
                continue
            if missing:
                out[peer] = {"status": "needs-vm", "needs": missing, "ports": ports}
                continue
            if enough and any(v["status"] in ("applied", "applied-but-hooks")
                              for v in out.values()):
                out[peer] = {"status": "skipped", "ports": ports,
                             "first_error": "not run in the VM tier: another peer applies it"}
                continue
            t0 = time.monotonic()
            try:
                result = start(peer, top, ports, takeover=False, by_name=names,
                               peer_tools=True)
                verdict_ = apply_status(peer, result["rc"], result["log"])
                bare = without_hooks(top, top_dir)
                if verdict_["status"] == "error" and bare and _HOST_FILE.search(
                        verdict_["first_error"]):
                    # The file's own commands (pre-up, up, ...) may need the host's files
                    # or tools (an iptables rules file, a script): once more without them.
                    again = start(peer, bare, ports, takeover=False, by_name=names,
                                  peer_tools=True)
                    if apply_status(peer, again["rc"], again["log"])["status"] == "applied":
                        verdict_["status"] = "applied-but-hooks"
            except (RuntimeError, subprocess.SubprocessError) as e:
                verdict_ = {"status": "harness-error", "rc": None, "first_error": str(e)[-300:]}
            if verdict_.get("rc") == -9:
                verdict_["status"] = "timeout"    # killed at the sandbox's limit: no verdict
            if verdict_["status"] == "error" and re.search(r"\bpon: not found",
                                                           verdict_["first_error"]):
                verdict_["status"] = "not-judged"     # ifupdown's `inet ppp` runs pon
                verdict_["first_error"] = ("inet ppp: the ppp package (pon) is not in the "
                                           "sandbox; " + verdict_["first_error"])
            verdict_["seconds"] = round(time.monotonic() - t0, 1)
            verdict_["first_error"] = verdict_["first_error"].replace(str(top), str(
                path.relative_to(REPO))).replace(f"{REPO}/", "")
            out[peer] = {**verdict_, "ports": ports}
    return out


def applied_by_peer(record: dict) -> bool | None:
    """A peer applies the file without an error: True; every apply peer failed: False;
    not judged here (needs the VM tier, or no apply recorded): None."""
    verdicts = (record.get("apply") or {}).values()
    if not verdicts:
        return None
    if any(v["status"] in ("applied", "applied-but-hooks") for v in verdicts):
        return True
    if any(v["status"] in ("needs-vm", "harness-error", "not-judged", "timeout")
           for v in verdicts):
        return None
    return False


def load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {"files": {}}


def _host_netns() -> set[str]:
    return set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inner", metavar="SPEC", help=argparse.SUPPRESS)
    ap.add_argument("--update", action="store_true",
                    help="merge the named files' verdicts into peer_results.json")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--log", action="store_true", help="print the peers' output too")
    ap.add_argument("--reclassify", action="store_true",
                    help="recompute for_ifupdown and ifupdown2_ignores of the recorded "
                         "verdicts (after a change to those rules), running no peer")
    ap.add_argument("--apply", action="store_true",
                    help="the apply verdict of the peer-accepted files (or FILEs), merged "
                         "into peer_results.json")
    ap.add_argument("--vm", action="store_true",
                    help="with --apply: the files recorded needs-vm (or FILEs), in one boot "
                         "of the VM tier")
    ap.add_argument("--vm-jobs", type=int, default=2, help="files at a time in the guest")
    ap.add_argument("--vm-outcomes", type=Path, nargs="+", metavar="JSONL",
                    help="with --apply --vm: boot nothing, merge the verdicts a boot wrote "
                         "(.cache/compat-vm/outcomes*.jsonl)")
    ap.add_argument("--timeout", type=int, help="each sandbox's limit in the guest")
    ap.add_argument("files", nargs="*", type=Path)
    a = ap.parse_args(argv)
    if a.inner:
        return inner(a.inner)
    if a.apply:
        return main_apply(a)
    if a.reclassify:
        results, known = load(), ifupdown2_attributes()
        for name, record in results["files"].items():
            path = CORPUS / name
            record["for_ifupdown"] = for_ifupdown(path)
            record["ifupdown2_ignores"] = ignored_by_ifupdown2(readwith.text_of(path), known)
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        return 0
    if os.geteuid() != 0:
        raise SystemExit("peers.py needs root (namespaces); run it with sudo")
    if not (IFUPDOWN_ROOT / "sbin" / "ifup").exists():
        raise SystemExit(f"{IFUPDOWN_ROOT}: unpack Debian's ifupdown there "
                         "(apt-get download ifupdown; dpkg-deb -x ifupdown_*.deb DIR)")
    differential.prepare_outside()
    paths = [p.resolve() for p in a.files] or sorted(CORPUS.glob("*/*.interfaces"))
    before = _host_netns()
    known = ifupdown2_attributes()
    with ThreadPoolExecutor(a.jobs) as pool:
        records = dict(zip((str(p.relative_to(CORPUS)) for p in paths), pool.map(
            lambda p: judge(p, known, a.log and not a.update), paths)))
    if _host_netns() != before:
        raise SystemExit("the host's /run/netns changed during the run")
    if a.files and not a.update:
        print(json.dumps(records, indent=1))
        return 0
    old = load()["files"]
    for name, record in records.items():
        if name in old and old[name]["digest"] == record["digest"] and "apply" in old[name]:
            record["apply"] = old[name]["apply"]     # the apply verdict is for this text
    results = load() if a.files else {"files": {}}
    results["versions"] = VERSIONS
    results["files"].update(records)
    results["files"] = dict(sorted(results["files"].items()))
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    files = results["files"].values()
    print(f"{RESULTS.relative_to(REPO)}: {len(results['files'])} files; ifupdown2 accepts "
          f"{sum(r['ifupdown2']['accepts'] for r in files)}, written for ifupdown "
          f"{sum(r['for_ifupdown'] for r in files)} (ifupdown accepts "
          f"{sum(r['for_ifupdown'] and r['ifupdown']['accepts'] for r in files)}), a peer "
          f"accepts {sum(accepted_by_peer(r) for r in files)}", file=sys.stderr)
    return 0


def main_apply(a: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        raise SystemExit("peers.py needs root (namespaces); run it with sudo")
    differential.prepare_outside()
    results = load()
    if a.vm:
        return main_apply_vm(a, results)
    names = [str(p.resolve().relative_to(CORPUS)) for p in a.files] or [
        n for n, r in results["files"].items() if accepted_by_peer(r)]
    stale = [n for n in names if results["files"].get(n, {}).get("digest") != digest(CORPUS / n)]
    if stale:
        raise SystemExit(f"no current check verdict for {stale}: run peers.py --update first")
    kinds_here = differential.host_kinds()
    before = _host_netns()
    t0 = time.monotonic()

    def one(name: str) -> tuple[str, dict]:
        verdicts = judge_apply(CORPUS / name, results["files"][name], kinds_here)
        print(f"{name}: " + ", ".join(f"{p} {v['status']} {v.get('first_error', '')[:100]}"
                                      for p, v in verdicts.items()), file=sys.stderr, flush=True)
        return name, verdicts
    with ThreadPoolExecutor(a.jobs) as pool:
        done = dict(pool.map(one, names))
    if _host_netns() != before:
        raise SystemExit("the host's /run/netns changed during the run")
    results = load()        # a check run meanwhile: merge into what is there now
    for name, verdicts in done.items():
        results["files"][name]["apply"] = verdicts
    results["versions"] = {**VERSIONS, **results.get("versions", {})}
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    states = [v["status"] for r in done.values() for v in r.values()]
    print(f"{len(done)} files in {time.monotonic() - t0:.0f} s; "
          + ", ".join(f"{s} {states.count(s)}" for s in sorted(set(states))), file=sys.stderr)
    return 0


def main_apply_vm(a: argparse.Namespace, results: dict) -> int:
    """The files recorded `needs-vm` (or FILEs), applied by their peers in one boot of
    the VM tier's kernel (tests/compat/vm_differential.py's guest, warm forks)."""
    import vm_differential
    names = [str(p.resolve().relative_to(CORPUS)) for p in a.files] or [
        n for n, r in results["files"].items()
        if any(v["status"] == "needs-vm" for v in (r.get("apply") or {}).values())]
    # The sources issue 22 added first: a run cut short has judged those.
    names.sort(key=lambda n: (n.split("/")[0] in OLD_SOURCES, n))
    t0 = time.monotonic()
    if a.vm_outcomes:       # boot nothing: merge what earlier boots wrote
        head = {"peer_apply": [json.loads(ln)["peer_apply"] for path in a.vm_outcomes
                               for ln in path.read_text().splitlines()
                               if ln.strip() and "peer_apply" in json.loads(ln)]}
        names = [row["file"] for row in head["peer_apply"]]
    else:
        _, head = vm_differential.boot([n + vm_differential.PEER_APPLY for n in names],
                                       a.timeout, a.vm_jobs)
    results = load()
    for row in head["peer_apply"]:
        if "verdicts" in row and results["files"][row["file"]]["digest"] == row["digest"]:
            results["files"][row["file"]]["apply"] = row["verdicts"]
        print(f"{row['file']}: {row.get('verdicts') or row.get('error')}", file=sys.stderr)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"vm: {len(head['peer_apply'])} of {len(names)} files in "
          f"{time.monotonic() - t0:.0f} s (warm-up {head.get('warm_s')} s)", file=sys.stderr)
    return 0 if len(head["peer_apply"]) == len(names) else 1


if __name__ == "__main__":
    raise SystemExit(main())
