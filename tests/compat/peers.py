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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import differential  # noqa: E402  (the sandbox's setup and ifupdown2's configuration)
import readwith  # noqa: E402

RESULTS = HERE / "peer_results.json"
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
    if not record["for_ifupdown"]:
        return two
    one = "ifupdown yes" if record["ifupdown"]["accepts"] else "ifupdown **no**"
    return f"{two}, {one}"


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
    ap.add_argument("files", nargs="*", type=Path)
    a = ap.parse_args(argv)
    if a.inner:
        return inner(a.inner)
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


if __name__ == "__main__":
    raise SystemExit(main())
