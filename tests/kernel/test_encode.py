"""Encoded operations on the real kernel: what netcfg/netlink/encode.py sends,
read back with iproute2 (`ip -j`, `bridge -j`) as a peer.

Runs as root inside the sandbox (conftest.py: a private network and mount
namespace). Operations are built as the planner builds them (the kinds'
create_params, diff's param names); each is encoded and sent on a socket
opened inside its namespace, as the applier will.

The host kernel has bridge (without VLAN filtering), veth, macvlan and vxlan;
vlan, bond, vrf, dummy and VLAN-aware bridges are encoded in
tests/unit/test_encode.py and proven in the VM tier.
"""

from __future__ import annotations

import errno
import json
import shutil
import socket
import struct
import subprocess

import pytest
from builders import iface, link_add, op

from netcfg.kernel.nl import NetlinkError, RtnlSocket
from netcfg.model.errors import UnknownDevice
from netcfg.model.tags import NETCFG_GROUP
from netcfg.netlink.encode import EncodeError, StaticContext, delete_group, encode
from netcfg.netlink.nlmsg import (AF_BRIDGE, AF_INET6, AF_UNSPEC, IFINFOMSG, IFLA_AF_SPEC,
                                  IFLA_BRPORT_LEARNING, IFLA_BR_VLAN_FILTERING, IFLA_GROUP,
                                  IFLA_IFALIAS, IFLA_IFNAME, IFLA_INET6_ADDR_GEN_MODE,
                                  IFLA_PROTINFO, NETLINK_ROUTE, NETNSA_FD, NETNSA_NSID,
                                  NLA_F_NESTED, NLM_F_CREATE, NLM_F_EXCL, RTM_GETLINK, RTM_NEWLINK,
                                  RTM_NEWNSID, RTM_NEWTUNNEL, RTM_SETLINK, TUNNEL_MSG,
                                  VXLAN_VNIFILTER_ENTRY, VXLAN_VNIFILTER_ENTRY_START, Request,
                                  ifinfomsg, linkinfo, nested, rtattr, rtattr_str, rtattr_u32)
from netcfg.plan.ops import FDB_ADD, FDB_DEL
from netcfg.plan.ops import (ADDR_ADD, ADDR_DEL, LINK_DEL, LINK_DOWN, LINK_SET, LINK_UP, MASTER_SET,
                             MASTER_UNSET, ROUTE_ADD, ROUTE_DEL, VNI_ADD, VNI_DEL, Operation)

# The sandbox guard (root, never the host's namespaces) is tests/kernel_env.py.

GROUP = str(NETCFG_GROUP)            # as `ip -j` prints a group without a name


class Kernel:
    """Namespaces, a socket in each, and an EncodeContext read live from the kernel
    (what the applier keeps from read-back)."""

    def __init__(self, netns_dir, switcher):
        self.dir = netns_dir
        self.switcher = switcher
        self.netns = {"": netns_dir.open("")}
        self.sockets: dict[str, RtnlSocket] = {}
        self.nsids: dict[tuple[str, str], int] = {}
        # ifindexes a test chooses for devices it creates (the applier's
        # KernelSession.new_ifindex); unlisted: the kernel chooses.
        self.chosen: dict[tuple[str, str], int] = {}

    def add_netns(self, *names: str) -> None:
        for name in names:
            self.netns[name] = self.dir.create(name)

    def sock(self, netns: str) -> RtnlSocket:
        if netns not in self.sockets:
            raw = self.switcher.socket_in(self.netns[netns], socket.AF_NETLINK,
                                          socket.SOCK_RAW, NETLINK_ROUTE)
            self.sockets[netns] = RtnlSocket(raw)
        return self.sockets[netns]

    def assign_nsid(self, netns: str, other: str, nsid: int) -> None:
        """Equivalent to: `ip -n NETNS netns set OTHER NSID` (the applier's job)."""
        payload = (struct.pack("=Bxxx", AF_UNSPEC) + rtattr(NETNSA_NSID, struct.pack("=i", nsid))
                   + rtattr_u32(NETNSA_FD, self.netns[other].fd))
        self.sock(netns).request(RTM_NEWNSID, 0, payload)
        self.nsids[(netns, other)] = nsid

    # -- EncodeContext
    def ifindex(self, netns: str, name: str) -> int:
        try:
            _t, _f, payload = self.sock(netns).get(RTM_GETLINK,
                                                   ifinfomsg() + rtattr_str(IFLA_IFNAME, name))
        except NetlinkError as e:
            if e.errno == errno.ENODEV:
                raise UnknownDevice(netns, name) from None
            raise
        return IFINFOMSG.unpack_from(payload)[2]

    def netns_fd(self, netns: str) -> int:
        return self.netns[netns].fd

    def nsid(self, netns: str, other: str) -> int | None:
        return self.nsids.get((netns, other))

    def vrf_table(self, netns: str, name: str) -> int:
        raise UnknownDevice(netns, name)   # no vrf in the host kernel

    def new_ifindex(self, netns: str, name: str) -> int:
        return self.chosen.get((netns, name), 0)

    # -- applying
    def apply(self, *ops: Operation) -> None:
        """Each operation encoded and sent in its namespace, in order."""
        for operation in ops:
            self.sock(operation.netns).transact(encode(operation, self)).raise_first()

    def close(self) -> None:
        for sock in self.sockets.values():
            sock.close()
        with RtnlSocket.open() as rtnl:   # the namespaces' devices go with them
            result = rtnl.transact([delete_group("")])
        assert result.ok or result.errors[0].errno == errno.ENODEV
        for netns in self.netns.values():
            netns.close()


@pytest.fixture
def kernel(netns_dir, switcher):
    k = Kernel(netns_dir, switcher)
    yield k
    k.close()


def ip(netns: str, *args: str) -> list[dict]:
    """`ip -j [-n NETNS] ARGS`, parsed."""
    out = subprocess.run(["ip", "-j", *(["-n", netns] if netns else []), *args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def link(netns: str, name: str) -> dict:
    return ip(netns, "-d", "link", "show", "dev", name)[0]


# ------------------------------------------------------------------ veth
def test_veth_pair_with_its_peer_in_another_namespace(kernel):
    kernel.add_netns("t1")
    veth = iface("veth-t1", "veth", veth_peer_name="eth0", veth_peer_netns="t1")
    kernel.apply(link_add(veth, **{"mtu": 9000, "hwaddress": "02:00:00:00:00:01",
                                   "alias": "tenant t1 uplink", "addr-gen-mode": "none",
                                   "disable-ipv6": True}))

    host = link("", "veth-t1")
    assert host["linkinfo"]["info_kind"] == "veth"
    assert (host["group"], host["mtu"], host["address"]) == (GROUP, 9000, "02:00:00:00:00:01")
    assert host["ifalias"] == "tenant t1 uplink"
    assert host["inet6_addr_gen_mode"] == "none"
    assert "link_netnsid" in host            # the peer is elsewhere
    peer = link("t1", "eth0")
    assert (peer["linkinfo"]["info_kind"], peer["group"]) == ("veth", GROUP)
    assert peer["link_index"] == host["ifindex"]
    assert not any(x["ifname"] == "eth0" for x in ip("", "link", "show"))
    # disable-ipv6 is the applier's sysctl, not netlink: untouched here.
    with open("/proc/sys/net/ipv6/conf/veth-t1/disable_ipv6") as f:
        assert f.read().strip() == "0"


def test_veth_pair_created_with_the_ifindexes_the_applier_chose(kernel):
    """Both ends get the chosen ifindex, each in its own namespace's index
    space, so the applier addresses them without reading them back; an index
    already taken is refused (NLM_F_EXCL), never a change to its device."""
    kernel.add_netns("t1")
    kernel.chosen.update({("", "veth-t1"): 700, ("t1", "eth0"): 9})
    kernel.apply(link_add(iface("veth-t1", "veth", veth_peer_name="eth0",
                                veth_peer_netns="t1")))
    host, peer = link("", "veth-t1"), link("t1", "eth0")
    assert (host["ifindex"], peer["ifindex"]) == (700, 9)
    assert peer["link_index"] == 700 and host["link_index"] == 9

    kernel.chosen[("", "other")] = 700
    with pytest.raises(NetlinkError) as refused:
        kernel.apply(link_add(iface("other", "veth", veth_peer_name="other-peer")))
    assert refused.value.errno == errno.EEXIST
    assert link("", "veth-t1")["ifindex"] == 700
    assert not any(x["ifname"] == "other" for x in ip("", "link", "show"))


def test_veth_pair_in_one_namespace_up_down_and_deleted_by_one_end(kernel):
    kernel.add_netns("t1")
    kernel.apply(link_add(iface("a0", "veth", "t1", veth_peer_name="b0")))
    assert link("t1", "b0")["group"] == GROUP
    kernel.apply(op(LINK_UP, "a0", netns="t1"), op(LINK_UP, "b0", netns="t1"))
    assert "UP" in link("t1", "a0")["flags"]
    assert link("t1", "a0")["operstate"] == "UP"
    kernel.apply(op(LINK_DOWN, "a0", netns="t1"))
    assert "UP" not in link("t1", "a0")["flags"]

    kernel.apply(op(LINK_DEL, "a0", netns="t1", peer="b0", peer_netns="t1"))
    assert [x["ifname"] for x in ip("t1", "link", "show")] == ["lo"]


# ------------------------------------------------------------------ bridge
def test_bridge_options_ports_and_port_learning(kernel):
    br = iface("br0", "bridge", bridge_ports=["p0"], bridge_stp=True, bridge_ageing=120,
               bridge_mcsnoop=False)
    kernel.apply(link_add(br), link_add(iface("p0", "veth", veth_peer_name="p0peer")))

    info = link("", "br0")["linkinfo"]
    assert info["info_kind"] == "bridge"
    data = info["info_data"]
    assert (data["stp_state"], data["ageing_time"], data["mcast_snooping"]) == (1, 12000, 0)
    assert data["vlan_filtering"] == 0 and data["mcast_vlan_snooping"] == 0

    kernel.apply(op(MASTER_SET, "p0", master="br0"), op(LINK_UP, "br0"), op(LINK_UP, "p0"))
    port = link("", "p0")
    assert port["master"] == "br0" and "UP" in port["flags"]
    assert port["linkinfo"]["info_slave_data"]["learning"] is True

    kernel.apply(op(LINK_SET, "p0", "port", **{"bridge-learning": False}))
    assert link("", "p0")["linkinfo"]["info_slave_data"]["learning"] is False
    kernel.apply(op(LINK_SET, "p0", "port", **{"bridge-learning": None}))   # the default
    assert link("", "p0")["linkinfo"]["info_slave_data"]["learning"] is True

    # Options of a live bridge; null goes back to the kernel's default.
    kernel.apply(op(LINK_SET, "br0", **{"bridge-stp": False, "bridge-ageing": None,
                                        "bridge-mcsnoop": True, "mtu": 1400,
                                        "alias": "core"}))
    br0 = link("", "br0")
    data = br0["linkinfo"]["info_data"]
    assert (data["stp_state"], data["ageing_time"], data["mcast_snooping"]) == (0, 30000, 1)
    assert (br0["mtu"], br0["ifalias"]) == (1400, "core")
    kernel.apply(op(LINK_SET, "br0", alias=None))
    assert "ifalias" not in link("", "br0")

    kernel.apply(op(MASTER_UNSET, "p0", master="br0"))
    assert "master" not in link("", "p0")


def test_vlan_aware_bridge_is_refused_by_this_kernel_and_vlan_unaware_is_not(kernel):
    """Why vlan_filtering off is never sent: a kernel without
    CONFIG_BRIDGE_VLAN_FILTERING refuses the attribute whatever its value."""
    kernel.apply(link_add(iface("br0", "bridge", bridge_vlan_aware=False)))
    assert link("", "br0")["linkinfo"]["info_data"]["vlan_filtering"] == 0
    aware = link_add(iface("br1", "bridge", bridge_vlan_aware=True))
    result = kernel.sock("").transact(encode(aware, kernel))
    if result.ok:
        pytest.skip("this kernel has bridge VLAN filtering")
    assert result.errors[0].errno == errno.EOPNOTSUPP
    off = Request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                  ifinfomsg() + rtattr_str(IFLA_IFNAME, "br2")
                  + linkinfo("bridge", [rtattr(IFLA_BR_VLAN_FILTERING, b"\0")]))
    assert kernel.sock("").transact([off]).errors[0].errno == errno.EOPNOTSUPP


def test_alias_and_addr_gen_mode_are_not_honoured_at_create():
    """Why link-add sends them in a second request: the kernel drops the alias of a
    create request and refuses IFLA_AF_SPEC in it."""
    with RtnlSocket.open() as rtnl:
        create = ifinfomsg() + rtattr_str(IFLA_IFNAME, "al0") + rtattr_u32(IFLA_GROUP, NETCFG_GROUP)
        af_spec = nested(IFLA_AF_SPEC, [nested(AF_INET6, [rtattr(IFLA_INET6_ADDR_GEN_MODE,
                                                                 b"\1")])])
        result = rtnl.transact([
            Request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                    create + rtattr_str(IFLA_IFALIAS, "dropped") + linkinfo("bridge")),
            Request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL,
                    ifinfomsg() + rtattr_str(IFLA_IFNAME, "al1") + af_spec + linkinfo("bridge")),
        ])
        assert result.errors[0] is None and result.errors[1].errno == errno.EAFNOSUPPORT
        assert "ifalias" not in link("", "al0")


# ------------------------------------------------------------------ macvlan
def test_macvlan_in_a_tenant_namespace_on_a_host_device(kernel):
    kernel.add_netns("t1")
    kernel.apply(link_add(iface("hostport", "veth", veth_peer_name="hostpeer")))
    kernel.assign_nsid("t1", "", 7)
    mv = iface("mv-t1", "macvlan", "t1", macvlan_raw_device="hostport", macvlan_raw_netns="",
               macvlan_mode="private")
    kernel.apply(link_add(mv, mtu=1400), op(ADDR_ADD, "mv-t1", "192.0.2.20/24", netns="t1"),
                 op(LINK_UP, "mv-t1", netns="t1"))

    got = link("t1", "mv-t1")
    assert got["linkinfo"]["info_kind"] == "macvlan"
    assert got["linkinfo"]["info_data"]["mode"] == "private"
    assert (got["group"], got["mtu"], got["link_netnsid"]) == (GROUP, 1400, 7)
    assert got["link_index"] == link("", "hostport")["ifindex"]
    assert not any(x["ifname"] == "mv-t1" for x in ip("", "link", "show"))
    addrs = ip("t1", "-4", "addr", "show", "dev", "mv-t1")[0]["addr_info"]
    assert [(a["local"], a["prefixlen"]) for a in addrs] == [("192.0.2.20", 24)]


def test_macvlan_without_an_nsid_for_its_lower_namespace_is_refused_before_sending(kernel):
    kernel.add_netns("t1")
    kernel.apply(link_add(iface("hostport", "veth", veth_peer_name="hostpeer")))
    mv = iface("mv-t1", "macvlan", "t1", macvlan_raw_device="hostport", macvlan_raw_netns="")
    with pytest.raises(EncodeError,
                       match="link_netns: the host namespace has no id in namespace 't1'"):
        encode(link_add(mv), kernel)


def test_macvlan_in_its_lowers_namespace(kernel):
    kernel.apply(link_add(iface("port0", "veth", veth_peer_name="port0p")),
                 link_add(iface("mv0", "macvlan", macvlan_raw_device="port0")))
    got = link("", "mv0")
    assert got["linkinfo"]["info_data"]["mode"] == "bridge"
    assert got["link"] == "port0" and "link_netnsid" not in got


# ------------------------------------------------------------------ vxlan
def test_vxlan_with_one_vni(kernel):
    kernel.add_netns("t1")
    vx = iface("vni1000", "vxlan", "t1", vxlan_id=1000, vxlan_local_tunnelip="192.0.2.1",
               vxlan_svcnodeip="192.0.2.2", vxlan_learning=False)
    kernel.apply(link_add(vx))

    got = link("t1", "vni1000")
    data = got["linkinfo"]["info_data"]
    assert (got["linkinfo"]["info_kind"], got["group"]) == ("vxlan", GROUP)
    assert (data["id"], data["port"], data["local"], data["remote"]) == (
        1000, 4789, "192.0.2.1", "192.0.2.2")
    assert data["learning"] is False and not data.get("external")

    # The group (vxlan-svcnodeip) changes on a live device; the kernel moves its entry.
    kernel.apply(op(LINK_SET, "vni1000", netns="t1", **{"vxlan-learning": True,
                                                        "vxlan-svcnodeip": "192.0.2.3"}))
    data = link("t1", "vni1000")["linkinfo"]["info_data"]
    assert data["learning"] is True and data["remote"] == "192.0.2.3"

    # Remotes (vxlan-remoteip): all-zeros entries appended and deleted one by one.
    def remotes():
        out = subprocess.run(["bridge", "-n", "t1", "-j", "fdb", "show", "dev", "vni1000"],
                             check=True, capture_output=True, text=True).stdout
        return sorted(e["dst"] for e in json.loads(out or "[]")
                      if e["mac"] == "00:00:00:00:00:00")
    kernel.apply(op(FDB_ADD, "vni1000", "192.0.2.4", netns="t1"))
    kernel.apply(op(FDB_ADD, "vni1000", "192.0.2.5", netns="t1"))
    assert remotes() == ["192.0.2.3", "192.0.2.4", "192.0.2.5"]
    kernel.apply(op(FDB_DEL, "vni1000", "192.0.2.4", netns="t1"))
    assert remotes() == ["192.0.2.3", "192.0.2.5"]


def test_vxlan_ipv6_tunnel(kernel):
    vx = iface("vx6", "vxlan", vxlan_id=42, vxlan_local_tunnelip="2001:db8::1", vxlan_port=8472)
    kernel.apply(link_add(vx))
    data = link("", "vx6")["linkinfo"]["info_data"]
    assert (data["id"], data["port"], data["local6"]) == (42, 8472, "2001:db8::1")


@pytest.mark.skipif(shutil.which("bridge") is None, reason="needs iproute2's bridge")
def test_external_vnifilter_vxlan_and_vni_ranges(kernel):
    vx = iface("vxlan0", "vxlan", vxlan_vnifilter=True, vxlan_local_tunnelip="192.0.2.1",
               bridge_vlan_vni_map=["100-199=10100-10199", "300=10300"])
    kernel.apply(link_add(vx))
    data = link("", "vxlan0")["linkinfo"]["info_data"]
    assert data["external"] is True and data["vnifilter"] is True
    assert data["port"] == 4789 and data["local"] == "192.0.2.1"

    def vnis():
        out = subprocess.run(["bridge", "-j", "vni", "show", "dev", "vxlan0"], check=True,
                             capture_output=True, text=True).stdout
        shown = json.loads(out) if out.strip() else []
        return [(v["vni"], v.get("vniEnd", v["vni"])) for d in shown for v in d["vnis"]]

    assert vnis() == []   # link-add leaves the VNIs to vni-add (the diff emits them)
    kernel.apply(op(VNI_ADD, "vxlan0", vnis=["10100-10199", "10300"]))
    assert vnis() == [(10100, 10199), (10300, 10300)]
    kernel.apply(op(VNI_DEL, "vxlan0", vnis=["10150-10199"]))
    assert vnis() == [(10100, 10149), (10300, 10300)]
    # Adding a VNI that is there already is not an error.
    kernel.apply(op(VNI_ADD, "vxlan0", vnis=["10300"]))
    assert vnis() == [(10100, 10149), (10300, 10300)]


# ------------------------------------------------------------------ addresses, routes
def test_addresses_and_routes_with_netcfg_protocol(kernel):
    kernel.add_netns("t1")
    kernel.apply(link_add(iface("a0", "veth", "t1", veth_peer_name="b0")),
                 op(LINK_UP, "a0", netns="t1"), op(LINK_UP, "b0", netns="t1"),
                 op(ADDR_ADD, "a0", "10.0.0.1/24", netns="t1"),
                 op(ADDR_ADD, "a0", "2001:db8::1/64", netns="t1"))
    routes = [
        op(ROUTE_ADD, "a0", "10.9.0.0/16", netns="t1", to="10.9.0.0/16", via="10.0.0.9",
           dev="a0"),
        op(ROUTE_ADD, "a0", "0.0.0.0/0 metric 50", netns="t1", to="0.0.0.0/0", via="10.0.0.254",
           dev="a0", metric=50),
        op(ROUTE_ADD, "a0", "198.51.100.0/24 table 1000", netns="t1", to="198.51.100.0/24",
           dev="a0", table=1000),
        op(ROUTE_ADD, "a0", "2001:db8:9::/48", netns="t1", to="2001:db8:9::/48",
           via="2001:db8::9", dev="a0"),
    ]
    kernel.apply(*routes)

    addrs = ip("t1", "addr", "show", "dev", "a0")[0]["addr_info"]
    assert {(a["local"], a["prefixlen"]) for a in addrs if a["scope"] == "global"} == {
        ("10.0.0.1", 24), ("2001:db8::1", 64)}
    # One dump of both families; ip leaves out scope global.
    ours = {(r["dst"], r.get("gateway"), r.get("table", "main"), r.get("metric"),
             r.get("scope", "global"))
            for r in ip("t1", "route", "show", "table", "all", "proto", "110")}
    assert ours == {
        ("10.9.0.0/16", "10.0.0.9", "main", None, "global"),
        ("default", "10.0.0.254", "main", 50, "global"),
        ("198.51.100.0/24", None, "1000", None, "link"),
        ("2001:db8:9::/48", "2001:db8::9", "main", 1024, "global"),
    }

    kernel.apply(*(Operation(ROUTE_DEL, r.netns, r.name, r.subject, r.params) for r in routes),
                 op(ADDR_DEL, "a0", "10.0.0.1/24", netns="t1"),
                 op(ADDR_DEL, "a0", "2001:db8::1/64", netns="t1"))
    assert ip("t1", "route", "show", "table", "all", "proto", "110") == []
    assert not [a for a in ip("t1", "addr", "show", "dev", "a0")[0]["addr_info"]
                if a["scope"] == "global"]


def test_route_del_leaves_a_route_netcfg_did_not_add(kernel):
    kernel.apply(link_add(iface("a0", "veth", veth_peer_name="b0")), op(LINK_UP, "a0"),
                 op(LINK_UP, "b0"))
    subprocess.run(["ip", "route", "add", "10.7.0.0/16", "dev", "a0", "proto", "static"],
                   check=True)
    delete = op(ROUTE_DEL, "a0", "10.7.0.0/16", to="10.7.0.0/16", dev="a0")
    result = kernel.sock("").transact(encode(delete, kernel))
    assert result.errors[0].errno == errno.ESRCH
    assert [r["dst"] for r in ip("", "route", "show", "proto", "static")] == ["10.7.0.0/16"]


# ------------------------------------------------------------------ a plan in one batch
def test_devices_made_in_a_batch_are_configured_by_name_before_any_read_back():
    """Before any read-back the context knows no ifindex of a new device: link
    requests name it, so creating and configuring fit one batch; only
    master-set needs the master's ifindex, read back once."""
    ctx = StaticContext()
    ops = [link_add(iface("brx", "bridge")),
           link_add(iface("vx0", "veth", veth_peer_name="vx1"), mtu=1300),
           op(LINK_SET, "vx1", mtu=1300),
           op(MASTER_SET, "vx0", master="brx"),
           op(LINK_UP, "brx"), op(LINK_UP, "vx0"), op(LINK_UP, "vx1")]
    # master-set needs the master's ifindex: the one thing read back first.
    requests = [r for o in ops[:3] for r in encode(o, ctx)]
    with RtnlSocket.open() as rtnl:
        rtnl.transact(requests).raise_first()
        ctx.ifindexes[("", "brx")] = link("", "brx")["ifindex"]
        rtnl.transact([r for o in ops[3:] for r in encode(o, ctx)]).raise_first()
        assert link("", "vx0")["master"] == "brx"
        assert {link("", n)["mtu"] for n in ("vx0", "vx1")} == {1300}
        assert all("UP" in link("", n)["flags"] for n in ("brx", "vx0", "vx1"))
        rtnl.transact([delete_group("")]).raise_first()
    assert not [x for x in ip("", "link", "show") if x.get("group") == GROUP]


def test_delete_group_removes_every_netcfg_device_of_a_namespace(kernel):
    kernel.add_netns("t1")
    kernel.apply(*(link_add(iface(f"a{i}", "veth", "t1", veth_peer_name=f"b{i}"))
                   for i in range(5)),
                 link_add(iface("br0", "bridge", "t1")))
    subprocess.run(["ip", "-n", "t1", "link", "add", "other", "type", "bridge"], check=True)
    kernel.sock("t1").transact([delete_group("t1")]).raise_first()
    assert sorted(x["ifname"] for x in ip("t1", "link", "show")) == ["lo", "other"]
    result = kernel.sock("t1").transact([delete_group("t1")])
    assert result.errors[0].errno == errno.ENODEV   # none left



def test_port_options_need_af_bridge_setlink_and_nla_f_nested(kernel):
    """Why bridge-learning goes as it does: an AF_BRIDGE RTM_NEWLINK accepts
    IFLA_PROTINFO and ignores it; RTM_SETLINK reads one without NLA_F_NESTED
    as a bare STP port state (here the nested header's first byte, 5: EINVAL)."""
    kernel.apply(link_add(iface("br0", "bridge")),
                 link_add(iface("p0", "veth", veth_peer_name="p0peer")),
                 op(MASTER_SET, "p0", master="br0"))
    port = ifinfomsg(kernel.ifindex("", "p0"), family=AF_BRIDGE)
    learning_off = rtattr(IFLA_BRPORT_LEARNING, b"\0")
    ignored = Request(RTM_NEWLINK, 0, port + rtattr(IFLA_PROTINFO | NLA_F_NESTED, learning_off))
    as_state = Request(RTM_SETLINK, 0, port + rtattr(IFLA_PROTINFO, learning_off))
    result = kernel.sock("").transact([ignored, as_state])
    assert result.errors[0] is None and result.errors[1].errno == errno.EINVAL
    assert link("", "p0")["linkinfo"]["info_slave_data"]["learning"] is True


def test_vni_entries_need_nla_f_nested(kernel):
    kernel.apply(link_add(iface("vxlan0", "vxlan", vxlan_vnifilter=True)))
    entry = rtattr(VXLAN_VNIFILTER_ENTRY, rtattr_u32(VXLAN_VNIFILTER_ENTRY_START, 5))
    bare = Request(RTM_NEWTUNNEL, 0,
                   TUNNEL_MSG.pack(AF_BRIDGE, 0, 0, kernel.ifindex("", "vxlan0")) + entry)
    error = kernel.sock("").transact([bare]).errors[0]
    assert (error.errno, error.kernel_message) == (errno.EINVAL, "NLA_F_NESTED is missing")


def test_link_settings_of_a_live_device(kernel):
    kernel.apply(link_add(iface("a0", "veth", veth_peer_name="b0")))
    kernel.apply(op(LINK_SET, "a0", **{"addr-gen-mode": "random", "hwaddress": "02:00:00:00:00:aa",
                                       "mtu": 2000}))
    got = link("", "a0")
    assert (got["inet6_addr_gen_mode"], got["address"], got["mtu"]) == (
        "random", "02:00:00:00:00:aa", 2000)
    kernel.apply(op(LINK_SET, "a0", **{"addr-gen-mode": None}))
    assert link("", "a0")["inet6_addr_gen_mode"] == "eui64"
    assert encode(op(LINK_SET, "a0", **{"disable-ipv6": True}), kernel) == []
    with pytest.raises(EncodeError, match="mtu: cannot be reset"):
        encode(op(LINK_SET, "a0", mtu=None), kernel)



def test_stable_secret_addr_gen_mode_needs_the_secret_first(kernel):
    """The kernel refuses stable_secret (EINVAL, no message) until
    net.ipv6.conf.{IF,default}.stable_secret is written. A link-add then
    fails in its second request with the device already made: the applier
    must treat the operation as failed and delete the device."""
    add = link_add(iface("br9", "bridge"), **{"addr-gen-mode": "stable_secret"})
    result = kernel.sock("").transact(encode(add, kernel))
    assert result.errors[0] is None and result.errors[1].errno == errno.EINVAL
    assert result.errors[1].tag is add
    assert link("", "br9")["inet6_addr_gen_mode"] == "eui64"
    with open("/proc/sys/net/ipv6/conf/br9/stable_secret", "w") as f:
        f.write("2001:db8::1234")
    kernel.apply(op(LINK_SET, "br9", **{"addr-gen-mode": "stable_secret"}))
    assert link("", "br9")["inet6_addr_gen_mode"] == "stable_secret"
