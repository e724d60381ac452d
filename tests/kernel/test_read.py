"""Reading current state from the kernel into the model (netcfg/kernel/read.py).

State is built with iproute2 (`ip -n NS ...`) in namespaces of the sandbox
(conftest.py), read back with read_model(), and compared with the exact
ConfigObjects a config would give; then `show | apply -c -` is checked: the
JSON and stanza forms of what was read compile back to the same model.
Run with -s for the cost of a read against iproute2's.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time

import pytest

from netcfg.compile.emit import emit_model
from netcfg.compile.jsonform import model_from_json, model_to_json
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.compile.validate import finish_model
from netcfg.kernel import read as read_module
from netcfg.kernel.nl import RtnlSocket
from netcfg.kernel.read import netns_ids, read_model, read_namespace
from netcfg.model.errors import Report
from netcfg.netlink.nlmsg import NETLINK_ROUTE
from netcfg.model.tags import NETCFG_GROUP

# The sandbox guard (root, never the host's namespaces) is tests/kernel_env.py.

HOST, TENANT = "rhost", "rt1"   # the "host" is a namespace too: nothing outlives a test


def ip(netns: str, script: str) -> None:
    """Run each line of ``script`` as `ip -n NETNS LINE` in one `ip -batch`."""
    lines = "\n".join(ln.strip() for ln in script.strip().splitlines() if ln.strip())
    subprocess.run(["ip", "-n", netns, "-batch", "-"], input=lines, text=True, check=True)


def rtnl_in(switcher, netns) -> RtnlSocket:
    return RtnlSocket(switcher.socket_in(netns, socket.AF_NETLINK, socket.SOCK_RAW,
                                         NETLINK_ROUTE))


@pytest.fixture
def scene(netns_dir, switcher):
    """A host namespace with a bridge, veths, a macvlan and two vxlans, a
    tenant namespace on a veth, addresses and routes (ours and not ours)."""
    host, tenant = netns_dir.create(HOST), netns_dir.create(TENANT)
    ip(HOST, f"""
        link set lo up
        link add br0 address 02:00:00:00:00:01 mtu 1400 group {NETCFG_GROUP} type bridge
        link set br0 type bridge stp_state 1 ageing_time 20000 mcast_snooping 0
        link set br0 alias "tenant bridge"
        link add p0 address 02:00:00:00:00:10 mtu 1400 type veth peer name q0 address 02:00:00:00:00:20
        link add p1 address 02:00:00:00:00:11 mtu 1400 type veth peer name q1 address 02:00:00:00:00:21
        link set p0 master br0
        link set p1 master br0
        link add mv0 link q0 address 02:00:00:00:00:30 type macvlan mode private
        link add vx0 address 02:00:00:00:00:40 type vxlan id 42 local 192.0.2.1 dstport 4790 nolearning
        link add vx1 address 02:00:00:00:00:41 type vxlan external vnifilter local 192.0.2.1 dstport 4789
        link add x0 address 02:00:00:00:00:50 group {NETCFG_GROUP} type veth \\
            peer name x1 address 02:00:00:00:00:51 netns {TENANT}
        link set p0 up
        link set p1 up
        link set br0 up
        link set x0 up
        address add 10.0.0.1/24 dev br0
        address add 2001:db8::1/64 dev br0 nodad
        address add 10.1.0.1/30 dev x0
        route add 10.9.0.0/16 via 10.0.0.2 proto 110
        route add 10.8.0.0/16 via 10.0.0.2 proto 110 table 100 metric 5
        route add 10.7.0.0/16 via 10.0.0.2
        route add 10.6.0.0/16 via 10.0.0.2 proto static table 100
        route add 2001:db8:9::/48 via 2001:db8::2 proto 110
        route add 2001:db8:8::/48 via 2001:db8::2 proto 110 metric 7
    """)
    ip(TENANT, """
        link set lo up
        link set x1 up
        address add 10.1.0.2/30 dev x1 metric 1024
        address add 2001:db8:1::2/64 dev x1 nodad metric 2048
        route add default via 10.1.0.1 proto 110
    """)
    sockets = {"": rtnl_in(switcher, host), TENANT: rtnl_in(switcher, tenant)}
    yield sockets, {"": host, TENANT: tenant}
    for sock in sockets.values():
        sock.close()
    host.close()
    tenant.close()


def iface(name, kind, netns="", auto=False, **attrs):
    return (netns, name, kind, auto, {k.replace("_", "-"): v for k, v in attrs.items()})


COMMON = {"addr-gen-mode": "eui64", "disable-ipv6": False, "ip-forward": False,
          "ip6-forward": False, "arp-accept": False, "accept-dad": 1, "dad-transmits": 1,
          "accept-ra": 1, "privext": 0, "autoconf": True}
# lo's accept_dad and use_tempaddr are -1: neither DAD nor temporary addresses
# apply to it, no setting to report.
LO_COMMON = {k: v for k, v in COMMON.items() if k not in ("accept-dad", "privext")}
# A new bridge's, port's and vxlan's knobs as the kernel reports them (the
# schemas' declared attributes; bridge-vlan-protocol and -vlan-stats only
# where the kernel has CONFIG_BRIDGE_VLAN_FILTERING, which this one lacks).
BRIDGE_KNOBS = {"bridge-fd": 15, "bridge-hello": 2, "bridge-maxage": 20,
                "bridge-bridgeprio": 32768, "bridge-hashel": 16, "bridge-hashmax": 4096,
                "bridge-mcrouter": 1, "bridge-mcqifaddr": False, "bridge-mcquerier": False,
                "bridge-mclmc": 2, "bridge-mcsqc": 2, "bridge-mclmi": 1, "bridge-mcmi": 260,
                "bridge-mcqpi": 255, "bridge-mcqi": 125, "bridge-mcqri": 10, "bridge-mcsqi": 31,
                "bridge-igmp-version": 2, "bridge-mld-version": 1, "bridge-mcstats": False}
# A veth's path cost is 2: the kernel's for 10 Gb/s, the speed a veth reports.
PORT_KNOBS = {"bridge-arp-nd-suppress": False, "bridge-unicast-flood": True,
              "bridge-multicast-flood": True, "bridge-broadcast-flood": True,
              "bridge-portmcrouter": 1, "bridge-portmcfl": False, "bridge-portprios": 32,
              "bridge-pathcosts": 2, "bridge-l2protocol-tunnel": 0}
VXLAN_KNOBS = {"vxlan-ageing": 300, "vxlan-ttl": 0}

EXPECTED = [
    iface("br0", "bridge", auto=True, bridge_ports=["p0", "p1"], bridge_vlan_aware=False,
          bridge_stp=True, bridge_mcsnoop=False, bridge_ageing=200, **BRIDGE_KNOBS, mtu=1400,
          hwaddress="02:00:00:00:00:01", alias="tenant bridge", **COMMON,
          address=["10.0.0.1/24", "2001:db8::1/64"],
          route=[{"to": "10.8.0.0/16", "via": "10.0.0.2", "dev": "br0", "table": 100, "metric": 5},
                 {"to": "10.9.0.0/16", "via": "10.0.0.2", "dev": "br0"},
                 {"to": "2001:db8:8::/48", "via": "2001:db8::2", "dev": "br0", "metric": 7},
                 {"to": "2001:db8:9::/48", "via": "2001:db8::2", "dev": "br0"}]),
    iface("lo", "loopback", auto=True, mtu=65536, **LO_COMMON),
    iface("mv0", "macvlan", macvlan_mode="private", mtu=1500, hwaddress="02:00:00:00:00:30",
          **COMMON, macvlan_raw_device="q0"),
    iface("p0", "veth", auto=True, bridge_learning=True, **PORT_KNOBS, mtu=1400,
          hwaddress="02:00:00:00:00:10", **COMMON, veth_peer_name="q0"),
    iface("p1", "veth", auto=True, bridge_learning=True, **PORT_KNOBS, mtu=1400,
          hwaddress="02:00:00:00:00:11", **COMMON, veth_peer_name="q1"),
    # Options written before `type veth` are this end's only: the peer keeps 1500.
    iface("q0", "veth", mtu=1500, hwaddress="02:00:00:00:00:20", **COMMON, veth_peer_name="p0"),
    iface("q1", "veth", mtu=1500, hwaddress="02:00:00:00:00:21", **COMMON, veth_peer_name="p1"),
    iface("vx0", "vxlan", vxlan_id=42, vxlan_local_tunnelip="192.0.2.1", vxlan_port=4790,
          vxlan_learning=False, **VXLAN_KNOBS, mtu=1500, hwaddress="02:00:00:00:00:40",
          **COMMON),
    # `external` turns learning off (iproute2 sends IFLA_VXLAN_LEARNING 0 with it).
    iface("vx1", "vxlan", vxlan_vnifilter=True, vxlan_local_tunnelip="192.0.2.1",
          vxlan_port=4789, vxlan_learning=False, **VXLAN_KNOBS, mtu=1500,
          hwaddress="02:00:00:00:00:41",
          **COMMON),
    iface("x0", "veth", auto=True, mtu=1500, hwaddress="02:00:00:00:00:50", **COMMON,
          address=["10.1.0.1/30"], veth_peer_name="x1", veth_peer_netns=TENANT),
    iface("lo", "loopback", netns=TENANT, auto=True, mtu=65536, **LO_COMMON),
    iface("x1", "veth", netns=TENANT, auto=True, mtu=1500, hwaddress="02:00:00:00:00:51",
          **COMMON, address=["10.1.0.2/30", "2001:db8:1::2/64"],
          address_metric=1024,   # its addresses' metrics differ: the lowest
          route=[{"to": "0.0.0.0/0", "via": "10.1.0.1", "dev": "x1"}],
          veth_peer_name="x0", veth_peer_netns=""),
]


def as_tuples(model):
    out = []
    for (netns, name), obj in sorted(model.interfaces.items()):
        route = sorted(obj.attrs.get("route", []), key=lambda r: r["to"])
        attrs = {**obj.attrs, "route": route} if route else dict(obj.attrs)
        out.append((netns, name, obj.kind, obj.auto, attrs))
    return out


def test_read_model_gives_the_exact_objects(scene):
    sockets, _handles = scene
    model, states = read_model(sockets)

    assert as_tuples(model) == sorted(EXPECTED, key=lambda t: (t[0], t[1]))
    # Attribute order follows the dump: the kind's own first, like `show` prints.
    assert list(model.interfaces[("", "vx0")].attrs)[:2] == ["vxlan-id", "vxlan-local-tunnelip"]
    assert set(model.namespaces) == {TENANT}
    assert model.masters == {("", "p0"): ("", "br0"), ("", "p1"): ("", "br0")}
    host = states[""]
    assert host.managed == {"br0", "x0"}
    assert host.foreign == set(host.interfaces) - {"br0", "x0"}
    assert host.ifindex["br0"] == host.interfaces["br0"].loc.line
    assert {host.names[i]: i for i in host.names} == host.ifindex
    assert states[TENANT].managed == set()   # the far end of a veth keeps group 0
    assert host.pending == [] and host.notes == [] and host.kernel_kinds == {}
    assert all(s.routes_filtered_by_kernel for s in states.values())


def test_routes_of_other_protocols_are_not_read(scene):
    sockets, _handles = scene
    state = read_namespace(sockets[""], "")
    tos = {r["to"] for o in state.interfaces.values() for r in o.attrs.get("route", ())}
    assert "10.7.0.0/16" not in tos and "10.6.0.0/16" not in tos
    assert state.counts.routes == 4
    # Neither kernel-made address (fe80::, 127.0.0.1, ::1) is state to configure.
    addresses = [a for o in state.interfaces.values() for a in o.attrs.get("address", ())]
    assert sorted(addresses) == ["10.0.0.1/24", "10.1.0.1/30", "2001:db8::1/64"]
    # Links, IPv4 and IPv6 addresses (apart: see _read_addresses), routes, and
    # vx0's forwarding entries (its remotes: one dump for the one vxlan-id device).
    assert state.counts.dumps - state.counts.retries == 5


def test_veth_peers_resolve_through_nsids_too(scene):
    sockets, handles = scene
    nsids = {view: netns_ids(sock, {n: h.fd for n, h in handles.items() if n != view})
             for view, sock in sockets.items()}
    assert set(nsids[""].values()) == {TENANT} and set(nsids[TENANT].values()) == {""}
    model, states = read_model(sockets, nsids)
    assert as_tuples(model) == sorted(EXPECTED, key=lambda t: (t[0], t[1]))
    assert model.namespaces[TENANT].attrs == {"nsid": next(iter(nsids[""]))}

    # Asking the kernel about candidates instead of passing the map: the same.
    fds = {n: h.fd for n, h in handles.items()}
    by_fds, _states = read_model(sockets, netns_fd=fds.get)
    assert model_to_json(by_fds) == model_to_json(model)

    # One namespace alone: the peer's namespace is known, its name is not.
    alone = read_namespace(sockets[""], "", nsids[""])
    x0 = alone.interfaces["x0"].attrs
    assert x0["veth-peer-netns"] == TENANT and "veth-peer-name" not in x0
    assert [(r.name, r.attribute) for r in alone.pending] == [("x0", "veth-peer-name")]


def test_a_peer_in_a_namespace_not_read_is_left_out_with_a_note(scene):
    sockets, _handles = scene
    model, states = read_model({"": sockets[""]})
    x0 = model.interfaces[("", "x0")].attrs
    assert "veth-peer-name" not in x0 and "veth-peer-netns" not in x0
    assert len(states[""].pending) == 1 and "x0: veth-peer-name" in states[""].notes[0]


def test_show_output_compiles_back_to_the_same_model(scene):
    """The `netcfg show | netcfg apply -c -` promise, in both forms."""
    sockets, _handles = scene
    model, _states = read_model(sockets)
    shown = model_to_json(model)

    report = Report()
    again = model_from_json(json.dumps(shown, indent=2), "<show>", report)
    finish_model(again, report)
    assert [d.format() for d in report.diagnostics] == []
    assert model_to_json(again) == shown

    text = emit_model(model)
    compiled = compile_config(ConfigSource(path="-", stdin_text=text)).model
    assert model_to_json(compiled) == shown, text


# --- the numbers (printed with -s) --------------------------------------------------
VETHS = 200


def test_ipv6_addresses_are_read_device_by_device_while_the_namespace_churns(
        netns_dir, switcher, tmp_path, monkeypatch):
    """IPv6 DAD on thousands of links just brought up interrupts a namespace's
    IPv6 address dump for seconds (NLM_F_DUMP_INTR on every try: 9 retries
    and 2.6 s of backoff for 4000 links). One device's addresses fit one
    datagram, built in one step, which the kernel does not flag: after two
    tries the read goes device by device. The churn here is another program
    adding and removing an address of its own as fast as it can, while the
    600 addresses read span several datagrams."""
    pairs = 300
    ns = netns_dir.create("churn")
    ip("churn", "\n".join(["link set lo up", "link add busy type veth peer name busy2"]
                          + [f"link add v{i} type veth peer name w{i}" for i in range(pairs)]
                          + [f"addr add 2001:db8:{i + 1}::1/64 dev v{i} nodad"
                             for i in range(pairs)]
                          + [f"addr add 2001:db8:{i + 1}::2/64 dev w{i} nodad"
                             for i in range(pairs)]))
    script = tmp_path / "churn.batch"
    script.write_text("\n".join(f"addr {op} 2001:db8:ffff::1/64 dev busy nodad"
                                for _ in range(200000) for op in ("add", "del")))
    # One interrupted try is enough to go device by device here, so a churn
    # that hits the dump once (it hits every try in practice) decides.
    monkeypatch.setattr(read_module, "IPV6_DUMP_ATTEMPTS", 1)
    churner = subprocess.Popen(["ip", "-n", "churn", "-force", "-batch", str(script)],
                               stderr=subprocess.DEVNULL)
    # On a busy 2-CPU machine the churn is not always scheduled while a dump
    # is built, so a read may see no interruption at all; every read must be
    # complete, and (within 30) one must be interrupted and go device by device
    # (5 were not enough once, with eight test runs beside it).
    reads = []
    try:
        time.sleep(0.3)   # under way
        with rtnl_in(switcher, ns) as sock:
            for _ in range(30):
                reads.append(read_namespace(sock, "churn"))
                if reads[-1].counts.dumps >= 2 * pairs:
                    break
        still_running = churner.poll() is None
    finally:
        churner.kill()
        churner.wait()
    assert still_running, "the churn ended before the reads: it tested nothing"
    for state in reads:
        for i in range(pairs):
            assert f"2001:db8:{i + 1}::1/64" in state.interfaces[f"v{i}"].attrs["address"]
            assert f"2001:db8:{i + 1}::2/64" in state.interfaces[f"w{i}"].attrs["address"]
    # Device by device (a dump each), not the whole dump retried with backoff.
    state = reads[-1]
    assert state.counts.dumps >= 2 * pairs and state.counts.retries <= 4, \
        [r.counts for r in reads]


def _strace_received(argv: list[str]) -> tuple[int, int] | None:
    """(bytes, recv calls) iproute2 itself took from netlink, or None without strace.

    iproute2 peeks at each datagram first (MSG_PEEK|MSG_TRUNC, to size its
    buffer), then reads it: only the reads count.
    """
    if shutil.which("strace") is None:
        return None
    run = subprocess.run(["strace", "-e", "trace=recvmsg", "-e", "signal=none", "-o",
                          "/dev/stderr", *argv], capture_output=True, text=True, check=True)
    reads = [int(m.group(1)) for line in run.stderr.splitlines()
             if "MSG_PEEK" not in line and (m := re.search(r"^recvmsg\(.*\) = (\d+)$", line))]
    return sum(reads), len(reads)


def test_read_cost_against_iproute2(netns_dir, switcher):
    bench = netns_dir.create("rbench")
    pairs = VETHS // 2
    lines = ["link set lo up"]
    for i in range(pairs):
        lines.append(f"link add va{i:03d} group {NETCFG_GROUP} type veth "
                     f"peer name vb{i:03d} group {NETCFG_GROUP}")
        lines.append(f"address add 10.{i // 250}.{i % 250}.1/24 dev va{i:03d}")
        lines.append(f"link set va{i:03d} up")
        lines.append(f"link set vb{i:03d} up")
    ip(bench.name, "\n".join(lines))

    with rtnl_in(switcher, bench) as sock:
        read_namespace(sock, bench.name)    # warm: imports, the kind registry
        t = time.perf_counter()
        state = read_namespace(sock, bench.name)
        elapsed = time.perf_counter() - t
    assert state.counts.links == VETHS + 1 and state.counts.addresses == pairs
    assert len(state.managed) == VETHS

    link_cmd = ["ip", "-n", bench.name, "-d", "link", "show"]
    addr_cmd = ["ip", "-n", bench.name, "address", "show"]
    t = time.perf_counter()
    text = sum(len(subprocess.run(c, capture_output=True, check=True).stdout)
               for c in (link_cmd, addr_cmd))
    ip_elapsed = time.perf_counter() - t
    traced = [_strace_received(c) for c in (link_cmd, addr_cmd)]
    ip_bytes = ip_recvs = None
    if None not in traced:
        ip_bytes, ip_recvs = (sum(t[i] for t in traced) for i in (0, 1))
    print(f"\nread_namespace, {VETHS} veths + {pairs} addresses: {state.counts.dumps} dumps, "
          f"{state.counts.recv_calls} recv calls, {state.counts.bytes} bytes, "
          f"{elapsed * 1e3:.1f} ms")
    print(f"iproute2 `ip -d link show` + `ip address show`: {text} bytes of text; over "
          f"netlink {ip_bytes} bytes in {ip_recvs} recv calls; {ip_elapsed * 1e3:.1f} ms "
          f"(two processes)")
    print(f"ours / iproute2: {state.counts.bytes / text:.2f} of its text"
          + (f", {state.counts.bytes / ip_bytes:.2f} of its netlink bytes" if ip_bytes else ""))
    # One dump each for links, addresses and routes; each datagram is up to 32 KiB.
    assert state.counts.dumps - state.counts.retries == 4   # links, IPv4 and IPv6 addresses, routes
    assert state.counts.recv_calls <= state.counts.bytes // 16_000 + 3
    if ip_bytes:
        # The brief's goal was a fifth of iproute2's bytes; measured here it is
        # ~0.4, and the floor is the kernel's: of a veth's 1124-byte
        # RTM_NEWLINK, IFLA_STATS64 + IFLA_STATS (304 B) come whatever the ext
        # mask says (SKIP_STATS drops only the per-family stats) and
        # IFLA_AF_SPEC (448 B: inet and inet6 devconf) has no filter at all.
        # iproute2 pays the link dump twice (`ip address show` dumps links too).
        assert state.counts.bytes <= ip_bytes / 2


# --- VM tier: kinds and options the host kernel here lacks -----------------------
def _try(netns: str, *commands: str) -> str | None:
    """Run commands (`ip -n`, or `bridge -n` when they start with 'bridge ');
    the first error's text, or None."""
    for command in commands:
        tool, rest = ("bridge", command[7:]) if command.startswith("bridge ") else ("ip", command)
        run = subprocess.run([tool, "-n", netns, *rest.split()], capture_output=True, text=True)
        if run.returncode:
            return f"`{tool} {rest}`: {run.stderr.strip()}"
    return None


def _read_what_ip_made(netns_dir, switcher, name: str, needs: str, *commands: str):
    """Run ``commands`` (as _try) in a new namespace ``name`` and read it back:
    (model, its state). Skips to the VM tier when the kernel lacks ``needs``."""
    ns = netns_dir.create(name)
    error = _try(ns.name, *commands)
    if error:
        pytest.skip(f"VM tier (needs {needs}): {error}")
    with rtnl_in(switcher, ns) as sock:
        model, states = read_model({"": sock})
    return model, states[""]


def _round_trips(model) -> None:
    shown = model_to_json(model)
    report = Report()
    again = model_from_json(json.dumps(shown), "<show>", report)
    finish_model(again, report)
    assert [d.format() for d in report.diagnostics] == []
    compiled = compile_config(ConfigSource(path="-", stdin_text=emit_model(model))).model
    assert model_to_json(compiled) == shown


def test_vlan_aware_bridge_port_vlans_and_vni_map(netns_dir, switcher):
    model, state = _read_what_ip_made(
        netns_dir, switcher, "rvlan", "CONFIG_BRIDGE_VLAN_FILTERING",
        "link add br0 type bridge vlan_filtering 1 vlan_default_pvid 0",
        "link add p0 type veth peer name q0",
        "link set p0 master br0",
        "link add vx0 type vxlan external vnifilter local 192.0.2.1 dstport 4789",
        "link set vx0 master br0",
        "link set vx0 type bridge_slave vlan_tunnel on",
        "bridge vlan add dev p0 vid 100-110",
        "bridge vlan add dev p0 vid 5 pvid untagged",
        "bridge vni add dev vx0 vni 10200-10201",
        "bridge vlan add dev vx0 vid 200-201",
        "bridge vlan add dev vx0 vid 200-201 tunnel_info id 10200-10201",
        "bridge vlan add dev br0 vid 7 self")
    assert state.counts.dumps - state.counts.retries == 5   # the AF_BRIDGE dump joins in
    br0, p0, vx0 = (state.interfaces[n].attrs for n in ("br0", "p0", "vx0"))
    assert br0["bridge-vlan-aware"] is True and br0["bridge-ports"] == ["p0", "vx0"]
    assert "bridge-mcast-vlan-snooping" in br0 and "bridge-vids" not in br0
    assert br0["bridge-vlan-default-pvid"] == 0
    # The bridge's own VLANs, apart from the port defaults its attributes are.
    assert state.bridge_vlans == {"br0": {"bridge-vids": ["7"]}}
    assert model.bridge_vlans == {("", "br0"): {"bridge-vids": ["7"]}}
    assert (p0["bridge-pvid"], p0["bridge-vids"]) == (5, ["100-110"])
    assert vx0["bridge-vids"] == ["200-201"] and vx0["bridge-allow-untagged"] is False
    assert vx0["bridge-vlan-vni-map"] == ["200-201=10200-10201"]
    assert state.notes == []
    _round_trips(model)


def test_vlan_vrf_bond_and_dummy(netns_dir, switcher):
    model, state = _read_what_ip_made(
        netns_dir, switcher, "rkinds", "8021q, vrf, dummy, bonding",
        "link add e0 type veth peer name e1",
        "link add e0.100 link e0 type vlan id 100",
        "link add qinq link e1 type vlan id 200 protocol 802.1ad",
        "link add red type vrf table 1001",
        "link add dum0 type dummy",
        "link set dum0 master red",
        "link add bond0 type bond mode 802.3ad miimon 100 lacp_rate fast",
        "link add s0 type veth peer name s1",
        "link set s0 master bond0",
        "link set dum0 up",
        "link set red up",
        "address add 10.5.0.1/24 dev dum0",
        "route add 10.6.0.0/16 via 10.5.0.2 dev dum0 table 1001 proto 110")
    objs = state.interfaces
    assert {n: objs[n].kind for n in ("e0.100", "qinq", "red", "dum0", "bond0")} == {
        "e0.100": "vlan", "qinq": "vlan", "red": "vrf", "dum0": "dummy", "bond0": "bond"}
    vlan, qinq, bond = objs["e0.100"].attrs, objs["qinq"].attrs, objs["bond0"].attrs
    assert [(v["vlan-raw-device"], v["vlan-id"], v["vlan-protocol"]) for v in (vlan, qinq)] == [
        ("e0", 100, "802.1q"), ("e1", 200, "802.1ad")]
    assert objs["red"].attrs["vrf-table"] == 1001 and objs["dum0"].attrs["vrf"] == "red"
    assert objs["dum0"].attrs["route"] == [
        {"to": "10.6.0.0/16", "via": "10.5.0.2", "dev": "dum0", "vrf": "red"}]
    assert (bond["bond-slaves"], bond["bond-mode"], bond["bond-miimon"], bond["bond-lacp-rate"]) \
        == (["s0"], "802.3ad", 100, "fast")
    assert model.masters[("", "dum0")] == ("", "red")
    _round_trips(model)
