"""Kernel state as the differential tier compares it: read back, normalized, diffed.

`read()` runs in a sandbox after ifupdown2 or netcfg applied a file; it reads
iproute2's JSON (the peer-neutral reader: neither tool's own view) and
/proc/sys; for each vxlan, its all-zeros forwarding entries (`bridge -j fdb
show dev VX`: the remotes of head-end replication and its group's entry),
not learnt or per-port MAC entries. What is left out is what differs between two correct runs:
counters, timers, ifindexes, the kernel's own IPv6 link-local addresses and
their routes, and netcfg's device group (it tags what it makes, by design).
`diff()` returns one readable line per difference.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import time
from pathlib import Path

# Per-link keys that are identity, kernel bookkeeping or counters, not configuration.
LINK_DROP = {"ifindex", "link_index", "stats64", "stats", "qdisc", "txqlen", "num_tx_queues",
             "num_rx_queues", "gso_max_size", "gso_max_segs", "gro_max_size", "tso_max_size",
             "tso_max_segs", "gso_ipv4_max_size", "gro_ipv4_max_size", "min_mtu", "max_mtu",
             "promiscuity", "allmulti", "linkmode", "inet6_addr_gen_mode", "group", "link_netnsid",
             "parentbus", "parentdev", "altnames", "broadcast", "operstate", "link_type",
             "xdp", "vfinfo_list", "proto_down", "ifalias", "event"}
# Bridge and port data that the kernel keeps moving (timers), or derives from a MAC.
INFO_DROP = {"hello_timer", "tcn_timer", "topology_change_timer", "gc_timer", "root_id",
             "bridge_id", "designated_root", "designated_bridge", "designated_port",
             "designated_cost", "message_age_timer", "forward_delay_timer", "hold_timer",
             "topology_change", "topology_change_detected", "topology_change_ack", "config_pending",
             "root_port", "root_path_cost", "id", "no", "port_id", "port_no", "mcast_router_timer",
             "fdb_n_learned", "fdb_max_learned",
             # A bond port's LACP state machine: where it stands when read (no partner here).
             "ad_actor_oper_port_state", "ad_actor_oper_port_state_str",
             "ad_partner_oper_port_state", "ad_partner_oper_port_state_str"}
SYSCTLS = {"ipv4": ("forwarding", "arp_accept", "arp_ignore", "arp_announce", "proxy_arp",
                    "rp_filter", "accept_redirects", "send_redirects"),
           "ipv6": ("forwarding", "disable_ipv6", "accept_ra", "autoconf", "accept_dad")}


def _json(*argv: str) -> list:
    proc = subprocess.run(argv, capture_output=True, text=True)
    text = proc.stdout.strip()
    return json.loads(text) if proc.returncode == 0 and text else []


# INFO_DROP's `id` is a bridge port's STP port id; a vlan's or a vxlan's is
# its configuration (the VLAN id, the VNI): compared.
INFO_KEEP = {"vlan": {"id"}, "vxlan": {"id"}}


def _clean(data: dict, kind: str | None = None) -> dict:
    keep = INFO_KEEP.get(kind or "", set())
    return {k: v for k, v in sorted(data.items()) if k not in INFO_DROP or k in keep}


def _table_ids() -> dict[str, str]:
    """Route table names this sandbox's iproute2 prints -> their numbers, except main,
    local and default: ifupdown2 names a VRF's table in its own map
    (/etc/iproute2/rt_tables.d/ifupdown2_vrf_map.conf), netcfg leaves it a number."""
    names: dict[str, str] = {}
    paths = ["/etc/iproute2/rt_tables", *sorted(glob.glob("/etc/iproute2/rt_tables.d/*.conf"))]
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for line in text.splitlines():
            words = line.split("#", 1)[0].split()
            if len(words) == 2 and words[0].isdigit() and \
                    words[1] not in ("main", "local", "default", "unspec"):
                names[words[1]] = words[0]
    return names


# IPv6 DAD: an address stays tentative for a second or more after it is added
# (longer under TCG), and its local and anycast routes appear only once DAD ends.
# Each tool's state is read when its apply ends, so without this wait the tool
# that ends sooner (netcfg, seconds) lacks routes the slower one (ifupdown2,
# minutes) has. Only addresses that can finish DAD are waited for: on a link
# with carrier, not already failed.
DAD_SETTLE_S = 10.0


def settle_dad(timeout: float = DAD_SETTLE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = [a for link in _json("ip", "-6", "-j", "addr", "show", "tentative")
                   if "LOWER_UP" in link.get("flags", []) and
                   "NO-CARRIER" not in link.get("flags", [])
                   for a in link.get("addr_info", []) if not a.get("dadfailed")]
        if not pending:
            return
        time.sleep(0.2)


FALLBACK_TUNNELS = {"ip6tnl0", "ip6gre0", "ip6_vti0", "sit0", "tunl0", "gre0", "gretap0",
                    "erspan0", "ip_vti0"}


def read(exclude: list[str] = ()) -> dict:
    """The state of this network namespace, normalized (names, not indexes),
    once IPv6 DAD has settled (settle_dad)."""
    settle_dad()
    skip = set(exclude)
    links = {}
    for link in _json("ip", "-d", "-j", "link", "show"):
        name = link["ifname"]
        if name in skip:
            continue
        row = {k: v for k, v in sorted(link.items()) if k not in LINK_DROP}
        if name in FALLBACK_TUNNELS:
            # The kernel's own device of each namespace once ip6_tunnel, ip6_gre, ip6_vti,
            # sit or ip_gre is loaded (by any file, or a kind probe): its permaddr is
            # drawn at random per namespace, no setting of either tool.
            row.pop("permaddr", None)
        row["up"] = "UP" in link.get("flags", [])
        row["flags"] = sorted(f for f in link.get("flags", [])
                              if f not in ("LOWER_UP", "NO-CARRIER"))
        if name.startswith("cmp") is False and (link.get("link") or "").startswith("cmp"):
            row["link"] = "veth peer"     # the stand-in NIC's peer: same in both sandboxes
        info = row.pop("linkinfo", None)
        if info:
            row["kind"] = info.get("info_kind")
            row["slave_kind"] = info.get("info_slave_kind")
            if "info_data" in info:
                row["info_data"] = _clean(info["info_data"], row["kind"])
            if "info_slave_data" in info:
                row["info_slave_data"] = _clean(info["info_slave_data"])
        links[name] = row
    addresses = {}
    for link in _json("ip", "-j", "addr", "show"):
        if link["ifname"] in skip:
            continue
        rows = []
        for a in link.get("addr_info", []):
            if a.get("family") == "inet6" and a.get("scope") == "link" and \
                    a.get("local", "").startswith("fe80:"):
                continue          # the kernel's own, from the MAC
            rows.append({k: a[k] for k in ("family", "local", "prefixlen", "scope", "address",
                                           "broadcast", "label", "noprefixroute") if k in a})
        if rows:
            addresses[link["ifname"]] = sorted(rows, key=lambda r: (r["family"], r["local"]))
    routes = []
    tables = _table_ids()
    for family in ("-4", "-6"):
        for r in _json("ip", family, "-j", "route", "show", "table", "all"):
            dst = r.get("dst", "")
            if dst.startswith(("fe80:", "ff00:")) or r.get("dev") in skip:
                continue
            if r.get("table") == "local" and dst.startswith("fe80:"):
                continue
            row = {k: r[k] for k in ("dst", "gateway", "dev", "table", "protocol",
                                     "scope", "type", "metric", "prefsrc", "flags",
                                     "nexthops") if k in r}
            if row.get("table") in tables:
                row["table"] = tables[row["table"]]   # a VRF's table by number
            routes.append(row)
    vlans = {v["ifname"]: v.get("vlans", []) for v in _json("bridge", "-j", "vlan", "show")
             if v.get("ifname") not in skip}
    remotes = {}
    for name, link in links.items():
        if link.get("kind") == "vxlan":
            entries = [{k: e[k] for k in ("dst", "flags", "state", "vni", "port", "src_vni", "via")
                        if k in e}
                       for e in _json("bridge", "-j", "fdb", "show", "dev", name)
                       if e.get("mac") == "00:00:00:00:00:00"]
            remotes[name] = sorted(entries, key=lambda r: json.dumps(r, sort_keys=True))
    sysctls = {}
    for family, keys in SYSCTLS.items():
        base = f"/proc/sys/net/{family}/conf"
        for dev in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            if dev in skip or dev == "default":
                continue
            for key in keys:
                try:
                    with open(f"{base}/{dev}/{key}") as f:
                        sysctls[f"{family}/{dev}/{key}"] = f.read().strip()
                except OSError:
                    pass
    return {"links": links, "addresses": addresses,
            "routes": sorted(routes, key=lambda r: json.dumps(r, sort_keys=True)),
            "vlans": vlans, "sysctls": sysctls, "remotes": remotes}


def _flat(value, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def _random_macs(a, b, file_text: str) -> bool:
    """Two MACs the kernel drew at random (a bridge without ports, a vxlan): neither is
    written in the file nor one of the stand-in ports' fixed 02:cc:... addresses."""
    text = file_text.lower()
    return all(isinstance(m, str) and m.lower() not in text and not m.startswith("02:cc:")
               for m in (a, b))


def diff(ifupdown2: dict, netcfg: dict, file_text: str = "") -> list[str]:
    """One line per difference, 'what: ifupdown2 X, netcfg Y'."""
    lines = []
    a_links, b_links = ifupdown2["links"], netcfg["links"]
    for name in sorted(set(a_links) | set(b_links)):
        if name not in b_links:
            lines.append(f"link {name}: made by ifupdown2 only ({a_links[name].get('kind')})")
        elif name not in a_links:
            lines.append(f"link {name}: made by netcfg only ({b_links[name].get('kind')})")
        else:
            fa, fb = _flat(a_links[name]), _flat(b_links[name])
            for key in sorted(set(fa) | set(fb)):
                if key == "address" and _random_macs(fa.get(key), fb.get(key), file_text):
                    continue
                if fa.get(key) != fb.get(key):
                    lines.append(f"link {name} {key}: ifupdown2 {fa.get(key)!r}, "
                                 f"netcfg {fb.get(key)!r}")
    for name in sorted(set(ifupdown2["addresses"]) | set(netcfg["addresses"])):
        a = {(r["local"], r["prefixlen"]): r for r in ifupdown2["addresses"].get(name, [])}
        b = {(r["local"], r["prefixlen"]): r for r in netcfg["addresses"].get(name, [])}
        for key in sorted(set(a) | set(b)):
            if key not in b:
                lines.append(f"address {name} {key[0]}/{key[1]}: ifupdown2 only")
            elif key not in a:
                lines.append(f"address {name} {key[0]}/{key[1]}: netcfg only")
            elif a[key] != b[key]:
                lines.append(f"address {name} {key[0]}/{key[1]}: ifupdown2 {a[key]}, "
                             f"netcfg {b[key]}")
    ra = {json.dumps(r, sort_keys=True) for r in ifupdown2["routes"]}
    rb = {json.dumps(r, sort_keys=True) for r in netcfg["routes"]}
    lines += [f"route ifupdown2 only: {r}" for r in sorted(ra - rb)]
    lines += [f"route netcfg only: {r}" for r in sorted(rb - ra)]
    for name in sorted(set(ifupdown2["vlans"]) | set(netcfg["vlans"])):
        if ifupdown2["vlans"].get(name) != netcfg["vlans"].get(name):
            lines.append(f"bridge vlans {name}: ifupdown2 {ifupdown2['vlans'].get(name)}, "
                         f"netcfg {netcfg['vlans'].get(name)}")
    # Files recorded before remotes were compared have none: nothing to say.
    ma, mb = ifupdown2.get("remotes", {}), netcfg.get("remotes", {})
    for name in sorted(set(ma) & set(mb)):
        a = {json.dumps(r, sort_keys=True) for r in ma[name]}
        b = {json.dumps(r, sort_keys=True) for r in mb[name]}
        lines += [f"vxlan {name} remote ifupdown2 only: {r}" for r in sorted(a - b)]
        lines += [f"vxlan {name} remote netcfg only: {r}" for r in sorted(b - a)]
    sa, sb = ifupdown2["sysctls"], netcfg["sysctls"]
    both = set(a_links) & set(b_links) | {"all"}
    for key in sorted(set(sa) | set(sb)):
        if key.split("/")[1] not in both:
            continue        # a device one tool made and the other did not: reported above
        if sa.get(key) != sb.get(key):
            lines.append(f"sysctl {key}: ifupdown2 {sa.get(key)}, netcfg {sb.get(key)}")
    return lines
