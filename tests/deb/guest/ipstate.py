#!/usr/bin/python3
"""Kernel state and command output, read for the booted ifupdown checks
(tests/deb/guest/ifupdown.sh): iproute2's JSON (`ip -j`), parsed here rather
than matched with regexes over `ip`'s text.

  ipstate.py link DEV            "kind=K master=M up=yes|no ifindex=N", or "absent"
  ipstate.py addrs DEV           the device's IPv4/global IPv6 addresses (CIDR), sorted
  ipstate.py ifquery-check FILE  ifquery -c -o json's output: exit 0 when it is one JSON
                                 array, not empty, and every status is "pass"
  ipstate.py pve-version LINE    exit 0 when the line passes pve-manager's check of
                                 `ifreload -V` (PVE/API2/Network.pm, ifupdown2_version
                                 and assert_ifupdown2_installed)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys


def ip_json(*args: str) -> list:
    out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True)
    if out.returncode != 0:
        return []
    return json.loads(out.stdout or "[]")


def link(dev: str) -> str:
    links = ip_json("-d", "link", "show", "dev", dev)
    if not links:
        return "absent"
    one = links[0]
    kind = one.get("linkinfo", {}).get("info_kind", "-")
    up = "yes" if "UP" in one.get("flags", []) else "no"
    return f"kind={kind} master={one.get('master', '-')} up={up} ifindex={one['ifindex']}"


def addrs(dev: str) -> str:
    found = []
    for one in ip_json("addr", "show", "dev", dev):
        for a in one.get("addr_info", []):
            if a.get("family") == "inet" or a.get("scope") == "global":
                found.append(f"{a['local']}/{a['prefixlen']}")
    return " ".join(sorted(found))


def ifquery_check(path: str) -> int:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"not JSON: {e}")
        return 1
    if not isinstance(data, list) or not data:
        print(f"not a non-empty array: {str(data)[:200]}")
        return 1
    failed = [o.get("name", "?") for o in data if o.get("status") != "pass"]
    names = " ".join(o.get("name", "?") for o in data)
    if failed:
        print(f"status not pass: {' '.join(failed)} (of {names})")
        return 1
    print(f"{len(data)} interfaces, all pass: {names}")
    return 0


def pve_version(line: str) -> int:
    # pve-manager: first stdout line must be /^\s*ifupdown2:(\S+)\s*$/; the
    # version split at '-' and '.', its 4th field must match
    # /(pve|pmx|proxmox)/, and the version must be at least 1.2.8.
    m = re.match(r"^\s*ifupdown2:(\S+)\s*$", line)
    if not m:
        print(f"not 'ifupdown2:VERSION': {line!r}")
        return 1
    version = m.group(1)
    fields = re.split(r"[-.]", version)
    is_pve = len(fields) > 3 and re.search(r"(pve|pmx|proxmox)", fields[3]) is not None
    new_enough = subprocess.run(["dpkg", "--compare-versions", version, "ge", "1.2.8"]).returncode == 0
    if not (is_pve and new_enough):
        print(f"refused: {version} (4th field {fields[3] if len(fields) > 3 else None!r}, "
              f">= 1.2.8: {new_enough})")
        return 1
    print(f"accepted: {version}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    what, arg = argv
    if what == "link":
        print(link(arg))
        return 0
    if what == "addrs":
        print(addrs(arg))
        return 0
    if what == "ifquery-check":
        return ifquery_check(arg)
    if what == "pve-version":
        return pve_version(arg)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
