"""Why the differential found a difference (docs/compat.md "Where netcfg differs").

`explain` reads a file's differences (tests/compat/differential.py's lines),
the file's text and ifupdown2's log, and names each difference that is a
deliberate one, one ifupdown2 itself refused or got wrong (with the
evidence), or no setting of either tool (STP still converging, the kernel's
timing or order, a random draw). What it leaves is unexplained: a netcfg bug
until shown otherwise. It reads no kernel and runs nothing, so it is
unit-tested directly (tests/compat/test_compat.py).
"""

from __future__ import annotations

import ast
import ipaddress
import json
import re
from typing import Any


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


PORT_COST_RESET = (
    "deliberate: a bridge port's path cost the file does not write is the kernel's (from "
    "the port's speed); ifupdown2's `ifup PORT` alone (networking.service's allow-hotplug "
    "step) resets it to its addon's default 100 (addons/bridge.py "
    "up_apply_brports_attributes: 'no configuration detected, resetting to default')")


INET6_STATIC_AUTOCONF = (
    "deliberate: `inet6 static` without an `autoconf` line leaves the kernel's autoconf, as "
    "ifupdown2 does; ifupdown 0.8 (this file's reference peer) writes its default 0")


PORT_ADDRESS = (
    "deliberate: a bridge port's or bond slave's own address is ignored, as ifupdown2 "
    "ignores it ('Assigning an IP address is not allowed on enslaved interfaces'); the "
    "peer (ifupdown 0.8) set it, where frames for it reach the master, not the port")


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


NOT_AUTO = ("deliberate: a stanza no `auto` line names: `netcfg apply` sets its addresses and "
            "keeps it down, ifupdown2's `ifup -a` leaves it alone")


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
    for dev in re.findall(r"error: netlink: (\S+): cannot add address \S+ dev \S+: 'str' "
                          r"object has no attribute 'packed'", log):
        devices[dev] = ("ifupdown2 bug: its netlink address add crashed on an address written "
                        "with a separate `netmask` (its log: \"'str' object has no attribute "
                        "'packed'\"), so it set no more on the device")
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


IFUPDOWN2_CACHE_RACE = (
    "ifupdown2 race: its address addon skipped a device the stanza's own pre-up line "
    "made, because its netlink cache had not seen the device yet (addons/address.py "
    "_pre_up: `if not self.cache.link_exists(ifaceobj.name): return`; the cache is filled "
    "by a listener thread): no hwaddress, no address, on some runs only")
# A device a stanza's own pre-up or up line makes (tests/compat/peers.py made_by_hooks).
_MAKES_DEVICE = re.compile(r"^\s*(pre-up|up)\s.*(\baddbr\b|\blink add\b|\btuntap add\b|"
                           r"\btunctl\b|\btunnel add\b)", re.M)


def ifupdown2_raced(differences: list[str], file_text: str) -> set[str]:
    """The devices IFUPDOWN2_CACHE_RACE hit: made by their stanza's own pre-up line, and
    ifupdown2 set none of what its address addon sets on them: the stanza's hwaddress is
    netcfg's only, or its first address is. (tests/compat/differential.py runs ifupdown2
    again when it raced.)"""
    made, current = set(), None
    for line in file_text.splitlines():
        words = line.split()
        if words[:1] == ["iface"] and len(words) > 1:
            current = words[1]
        elif current and _MAKES_DEVICE.match(line):
            made.add(current)
    stanzas = _stanzas(file_text)
    raced = set()
    for name in made:
        stanza = stanzas.get(name, {})
        mac = (stanza.get("hwaddress") or [""])[0].lower()
        first = (stanza.get("address") or [""])[0].split("/")[0]
        for line in differences:
            m = re.match(rf"link {re.escape(name)} address: ifupdown2 '(\S+)', netcfg '(\S+)'$",
                         line)
            if (m and mac and m.group(2) == mac != m.group(1)) or (
                    first and re.match(rf"address {re.escape(name)} {re.escape(first)}/\d+: "
                                       rf"netcfg only$", line)):
                raced.add(name)
    return raced


VRRP_NAMES = ("deliberate: VRRP macvlans named after their interface (vrrp4-eth0-10), not "
              "after its ifindex as ifupdown2 names them (vrrp4-3-10)")


def _vrrp_renamed(differences: list[str], stanzas: dict[str, dict[str, list[str]]]) -> set[str]:
    """The VRRP macvlans each tool made for one `vrrp ID` line under its own name:
    ifupdown2's vrrpF-IFINDEX-ID, netcfg's vrrpF-PARENT-ID (compile/vrrp.py; a hash of a
    long parent name), made by one tool only each, for the same family and id."""
    ids = {word for attrs in stanzas.values() for word in attrs.get("vrrp", [])
           if word.isdigit()}      # `vrrp ID ADDRESS...`: the ids (addresses have dots)
    made: dict[str, dict[tuple[str, str], str]] = {"ifupdown2": {}, "netcfg": {}}
    for line in differences:
        m = re.match(r"link (vrrp([46])-(\S+)-(\d+)): made by (ifupdown2|netcfg) only "
                     r"\(macvlan\)$", line)
        if m and m.group(4) in ids and (m.group(5) == "netcfg" or m.group(3).isdigit()):
            made[m.group(5)][(m.group(2), m.group(4))] = m.group(1)
    both = made["ifupdown2"].keys() & made["netcfg"].keys()
    return {made[tool][key] for key in both for tool in made}


UNWRITTEN_BRIDGE_MTU = ("deliberate: a bridge without `mtu` keeps the kernel's MTU (its "
                        "smallest port's); ifupdown2 sets its default 1500 after the ports "
                        "join. Write `mtu 1500` to keep ifupdown2's")


def _only_broadcast(peer: str, netcfg: str) -> bool:
    """Two address records (their repr) that differ only by the peer's broadcast."""
    import ast
    try:
        a, b = ast.literal_eval(peer), ast.literal_eval(netcfg)
    except (ValueError, SyntaxError):
        return False
    return "broadcast" in a and "broadcast" not in b and \
        {k: v for k, v in a.items() if k != "broadcast"} == b


def explain(differences: list[str], file_text: str, ifupdown2_log: str = "") -> dict[str, str]:
    """Each difference that is one of the deliberate ones (docs/compat.md "Where netcfg
    differs") -> 'deliberate: ' and its name there; one that is no setting of either
    tool (a random draw) -> 'not a setting: ' and why. What is not here is unexplained:
    a netcfg bug until shown otherwise."""
    stanzas = _stanzas(file_text)
    raced = ifupdown2_raced(differences, file_text)
    vrrp_renamed = _vrrp_renamed(differences, stanzas)
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
        if device in raced:
            why[line] = IFUPDOWN2_CACHE_RACE
        elif device in vrrp_renamed and re.search(r"(ifupdown2|netcfg) only", line):
            why[line] = VRRP_NAMES
        elif _refused(device, refused):
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
    brought_up = {n for ln in file_text.splitlines()
                  if re.match(r"\s*(auto|allow-\S+)\s", ln) for n in ln.split()[1:]}
    unbrought: dict[str, set[str]] = {}
    inet6_static = set(re.findall(r"^\s*iface\s+(\S+)\s+inet6\s+static\b", file_text, re.M))
    # networking.service's second step runs `ifup NAME` for each allow-hotplug name.
    hotplug = {n for ln in file_text.splitlines() if re.match(r"\s*allow-hotplug\s", ln)
               for n in ln.split("#", 1)[0].split()[1:]}
    for line in differences:
        m = re.match(r"link ([^\s:]+):? ", line)      # "link bond0: made by netcfg only"
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
        if m and m.group(2) == "100" and m.group(1) in ports and m.group(1) in hotplug and \
                not any(m.group(1) in " ".join(a.get("bridge-pathcosts", []))
                        for a in stanzas.values()) and \
                "bridge-pathcosts" not in stanzas.get(m.group(1), {}):
            why[line] = PORT_COST_RESET
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
        # A stanza no auto/allow- line names: `netcfg apply` sets its addresses and keeps
        # it down, `ifup -a` leaves it alone (docs/compat.md "A stanza without `auto`").
        m = re.match(r"address (\S+) (\S+)/\d+: netcfg only$", line)
        if m and m.group(1) in stanzas and m.group(1) not in brought_up:
            why[line] = NOT_AUTO
            unbrought.setdefault(m.group(1), set()).add(m.group(2))
            continue
        # An alias stanza's address (iface eth0:1): ifupdown labels it eth0:1, netcfg too
        # (docs/compat.md "IPv6 tunnels, 6to4, alias labels and VRRP"); ifupdown2 3.0
        # adds it unlabelled.
        m = re.match(r"address (\S+) (\S+): ifupdown2 \{.*'label': '(\S+?)'\}, netcfg "
                     r"\{.*'label': '(\S+?)'\}$", line)
        if m and m.group(3) == m.group(1) and m.group(4).startswith(m.group(1) + ":") and \
                m.group(4) in stanzas:
            why[line] = ("deliberate: an alias stanza's address is labelled with its name, "
                         "as ifupdown labels it")
            continue
        # `dad-attempts 0`: ifupdown 0.8 adds the stanza's addresses with nodad; netcfg
        # turns the interface's DAD off (docs/compat.md, the legacy attributes' table).
        m = re.match(r"sysctl ipv6/(\S+)/accept_dad: ifupdown2 1, netcfg 0$", line)
        if m and stanzas.get(m.group(1), {}).get("dad-attempts", [""])[0] == "0":
            why[line] = ("deliberate: dad-attempts 0 is accept-dad 0 on the interface (ifupdown "
                         "0.8 adds its addresses nodad instead)")
            continue
        # A bridge whose stanza writes no mtu: ifupdown2's address addon sets it to its
        # policy's default (1500) after its ports joined (_process_mtu_config_mtu_none);
        # netcfg leaves the kernel's, the smallest port's (docs/compat.md "Where netcfg
        # differs": unwritten bridge MTU).
        m = re.match(r"link (\S+) mtu: ifupdown2 1500, netcfg (\d+)$", line)
        if m and m.group(1) in bridges and "mtu" not in stanzas.get(m.group(1), {}):
            why[line] = UNWRITTEN_BRIDGE_MTU
            continue
        # A file written for ifupdown, judged against ifupdown 0.8 (differential.py
        # reference_peer): its inet static gives every address a broadcast (brd +), which
        # ifupdown2 does not and netcfg, as ifupdown2, does not unless a line writes it.
        m = re.match(r"address (\S+) (\S+): ifupdown2 (\{.*\}), netcfg (\{.*\})$", line)
        if m and _only_broadcast(m.group(3), m.group(4)) and \
                "broadcast" not in stanzas.get(m.group(1), {}):
            why[line] = ("deliberate: no broadcast where the file writes none, as ifupdown2 "
                         "(ifupdown 0.8 gives each inet static address its brd +)")
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
        m = re.match(r"sysctl ipv6/(\S+)/autoconf: ifupdown2 0, netcfg 1$", line)
        if m and m.group(1) in inet6_static and "autoconf" not in stanzas.get(m.group(1), {}):
            why[line] = INET6_STATIC_AUTOCONF
            continue
        reason = _device_sysctl_reason(line, {"bridge": bridges, "port": ports})
        if reason:
            why[line] = reason
            continue
        m = re.match(r"route (ifupdown2|netcfg) only: ", line)
        if m:
            route = _json_after(line, " only: ")
            # The peer's: ifupdown2's `proto kernel onlink`, or, against ifupdown 0.8
            # (differential.reference_peer), its `ip route add default via G dev D onlink`
            # (proto boot, which `ip -j` leaves out).
            # A written route through a gateway (6to4's 2000::/3): ifupdown 0.8's `ip
            # route add` (proto boot) against netcfg's proto 110.
            peer_proto = route.get("protocol") in ("kernel", None) if route.get("dst") == \
                "default" else route.get("protocol") is None
            if route.get("gateway") and \
                    (peer_proto if m.group(1) == "ifupdown2" else route.get("protocol") == "110"):
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
                why[line] = "deliberate: default route of `gateway`: protocol" \
                    if _json_after(line, " only: ").get("dst") == "default" else \
                    "deliberate: a written route's protocol (netcfg's 110, ifupdown 0.8's boot)"
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
    # The kernel's routes of those addresses (local, broadcast, prefix).
    for line in differences:
        if line.startswith("route netcfg only: ") and line not in why:
            route = _json_after(line, " only: ")
            if route.get("prefsrc") in unbrought.get(route.get("dev"), ()) or \
                    route.get("dst") in unbrought.get(route.get("dev"), ()):
                why[line] = NOT_AUTO
    # A port's own address (a peer that sets it: ifupdown 0.8), and the kernel's routes of it.
    enslaved = ports | {s for a in stanzas.values() for s in a.get("bond-slaves", [])}
    on_port: dict[str, set[str]] = {}
    for line in differences:
        m = re.match(r"address (\S+) (\S+)/(\d+): ifupdown2 only$", line)
        if m and line not in why and m.group(1) in enslaved and \
                f"{m.group(2)}/{m.group(3)}" in stanzas[m.group(1)].get("address", []):
            why[line] = PORT_ADDRESS
            on_port.setdefault(m.group(1), set()).add(m.group(2))
    for line in differences:
        if line.startswith("route ifupdown2 only: ") and line not in why:
            route = _json_after(line, " only: ")
            if route.get("prefsrc") in on_port.get(route.get("dev"), ()) or \
                    route.get("dst") in on_port.get(route.get("dev"), ()):
                why[line] = PORT_ADDRESS
    return why
