"""netcfg.netlink.encode without a kernel: the exact attributes each operation becomes.

Covers what the host kernel cannot run (vlan, bond, vrf, dummy, VLAN-aware
bridges and their port VLANs; the VM tier proves those for real) and what
needs no kernel to check (errors, the name fallback). Requests are decoded
with nlmsg.parse_attrs, the way replies are.
"""

from __future__ import annotations

import ipaddress
import struct

import pytest
from builders import iface, link_add, op

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.kinds import registry
from netcfg.model.errors import UnknownDevice
from netcfg.model.model import Model
from netcfg.netlink.attrs import INFO_DATA
from netcfg.netlink.encode import (ENCODERS, EncodeError, StaticContext, delete_group, encode,
                                   route_readd)
from netcfg.netlink.nlmsg import (AF_BRIDGE, AF_INET, AF_INET6, BR_BOOLOPT_MULTI, BRIDGE_FLAGS_SELF,
                                  BRIDGE_VLAN_INFO, IFLA_BRIDGE_FLAGS,
                                  BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_RANGE_BEGIN,
                                  BRIDGE_VLAN_INFO_RANGE_END, BRIDGE_VLAN_INFO_UNTAGGED,
                                  IFA_ADDRESS, IFA_LOCAL, IFA_RT_PRIORITY, IFADDRMSG, IFF_UP,
                                  IFINFOMSG,
                                  IFLA_ADDRESS, IFLA_AF_SPEC, IFLA_BOND_AD_LACP_RATE,
                                  IFLA_BOND_MIIMON, IFLA_BOND_MIN_LINKS, IFLA_BOND_MODE,
                                  IFLA_BOND_XMIT_HASH_POLICY, IFLA_BR_AGEING_TIME,
                                  IFLA_BR_MCAST_SNOOPING, IFLA_BR_MULTI_BOOLOPT, IFLA_BR_STP_STATE,
                                  IFLA_BR_VLAN_DEFAULT_PVID, IFLA_BR_VLAN_FILTERING,
                                  IFLA_BRIDGE_VLAN_INFO, IFLA_BRPORT_LEARNING, IFLA_GROUP,
                                  IFLA_IFALIAS, IFLA_IFNAME, IFLA_INET6_ADDR_GEN_MODE,
                                  IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINK, IFLA_LINK_NETNSID,
                                  IFLA_LINKINFO, IFLA_MACVLAN_MODE, IFLA_MASTER, IFLA_MTU,
                                  IFLA_NET_NS_FD, IFLA_PROTINFO, IFLA_VLAN_ID, IFLA_VLAN_PROTOCOL,
                                  IFLA_VRF_TABLE, IFLA_VXLAN_COLLECT_METADATA, IFLA_VXLAN_GROUP,
                                  IFLA_VXLAN_ID, IFLA_VXLAN_LEARNING, IFLA_VXLAN_LOCAL,
                                  IFLA_VXLAN_PORT, IFLA_VXLAN_VNIFILTER, NLA_F_NESTED, NLM_F_CREATE,
                                  NLM_F_EXCL, NLM_F_REPLACE, RT_SCOPE_LINK, RT_SCOPE_NOWHERE,
                                  RT_SCOPE_UNIVERSE,
                                  RTA_DST, RTA_GATEWAY, RTA_OIF, RTA_PRIORITY, RTA_TABLE,
                                  RTM_DELLINK, RTM_DELROUTE, RTM_DELTUNNEL, RTM_NEWADDR,
                                  RTM_NEWLINK, RTM_NEWROUTE, RTM_NEWTUNNEL, RTM_SETLINK, RTMSG,
                                  RTN_UNICAST, RTN_UNSPEC, RTATTR, TUNNEL_MSG, VETH_INFO_PEER,
                                  VXLAN_VNIFILTER_ENTRY, VXLAN_VNIFILTER_ENTRY_END,
                                  VXLAN_VNIFILTER_ENTRY_START, attr_str, attr_u32, dellink_group,
                                  parse_attrs, rtattr, rtattr_u32)
from netcfg.model.tags import NETCFG_GROUP, RTPROT_NETCFG
from netcfg.plan.diff import diff
from netcfg.plan.ops import FDB_ADD
from netcfg.plan.ops import (ACTIONS, ADDR_ADD, LINK_ADD, LINK_DEL, LINK_SET, LINK_UP, MASTER_SET,
                             MASTER_UNSET, NETNS_ADD, NETNS_DEL, ROUTE_ADD, ROUTE_DEL, VLAN_ADD,
                             VLAN_DEL, VLAN_TUNNEL_ADD, VNI_ADD, VNI_DEL)
from netcfg.plan.ops import OVS_ACTIONS

CREATE = NLM_F_CREATE | NLM_F_EXCL


@pytest.fixture
def ctx() -> StaticContext:
    return StaticContext(
        ifindexes={("", "swp1"): 11, ("", "swp2"): 12, ("", "br0"): 20, ("", "bond0"): 21,
                   ("", "vxlan0"): 22, ("", "red"): 23, ("", "swp2.200"): 24,
                   ("t1", "storage"): 31, ("t1", "eth0"): 32},
        netns_fds={"t1": 7}, nsids={("t1", ""): 3}, vrf_tables={("", "red"): 1001})


def one(requests):
    assert len(requests) == 1
    return requests[0]


def link_attrs(payload: bytes) -> dict:
    return parse_attrs(payload, IFINFOMSG.size)


def info(payload: bytes) -> tuple[str, dict]:
    """(IFLA_INFO_KIND, IFLA_INFO_DATA attributes) of an RTM_NEWLINK payload."""
    linkinfo = parse_attrs(link_attrs(payload)[IFLA_LINKINFO])
    data = parse_attrs(linkinfo[IFLA_INFO_DATA]) if IFLA_INFO_DATA in linkinfo else {}
    return attr_str(linkinfo[IFLA_INFO_KIND]), {k: bytes(v) for k, v in data.items()}


def u8(v: int) -> bytes:
    return struct.pack("=B", v)


def u16(v: int) -> bytes:
    return struct.pack("=H", v)


def u32(v: int) -> bytes:
    return struct.pack("=I", v)


def raw_types(payload: bytes, offset: int) -> list[int]:
    """Attribute types with their NLA_F_* bits (parse_attrs masks them off)."""
    types, view = [], memoryview(payload)
    while offset + 4 <= len(view):
        length, attr_type = RTATTR.unpack_from(view, offset)
        types.append(attr_type)
        offset += (length + 3) & ~3
    return types


# ------------------------------------------------------------------ every op of a real plan
ALL_KINDS = """
netns t1

auto swp1
iface swp1
    mtu 9000
    bridge-learning no

auto bond0
iface bond0
    bond-slaves swp3 swp4
    bond-mode 802.3ad
    bond-miimon 100
    bond-lacp-rate fast
    bond-min-links 1
    bond-xmit-hash-policy layer3+4

auto br0
iface br0
    bridge-ports swp1 bond0 vxlan0
    bridge-vlan-aware yes
    bridge-vids 100-199 300
    bridge-pvid 100
    bridge-stp yes
    bridge-mcsnoop yes
    bridge-mcast-vlan-snooping yes
    bridge-ageing 600
    hwaddress 02:00:00:00:00:10
    alias core bridge
    addr-gen-mode none

auto vxlan0
iface vxlan0
    vxlan-vnifilter yes
    vxlan-local-tunnelip 192.0.2.1
    bridge-vlan-vni-map 100-199=10100-10199
    vxlan-learning no

auto vni1000
iface vni1000
    vxlan-id 1000
    vxlan-local-tunnelip 192.0.2.1
    vxlan-remoteip 192.0.2.2
    vxlan-port 8472

auto red
iface red
    vrf-table auto

auto swp2.200
iface swp2.200
    vlan-protocol 802.1ad
    vrf red
    address 10.2.0.1/24
    gateway 10.2.0.254
    disable-ipv6 yes

auto storage
iface storage
    netns t1
    vlan-raw-device swp2
    vlan-raw-netns ""
    vlan-id 300
    address 10.3.0.1/24
    route 10.30.0.0/16 via 10.3.0.254 metric 20 table 1000

auto veth-t1
iface veth-t1
    veth-peer-name eth0
    veth-peer-netns t1
    mtu 9000
    address 2001:db8::1/64

auto mv-t1
iface mv-t1
    netns t1
    macvlan-raw-device swp2
    macvlan-raw-netns ""
    macvlan-mode vepa

auto dum0
iface dum0
    link-type dummy
    address 10.9.9.9/32
"""


def test_every_operation_of_a_plan_over_every_kind_encodes():
    model = compile_config(ConfigSource(path="-", stdin_text=ALL_KINDS)).model
    ops = diff(model, Model())
    ctx = StaticContext(nsids={("t1", ""): 3}, netns_fds={"t1": 7},
                        vrf_tables={("", "red"): 1001})
    for number, (netns, name) in enumerate(sorted(model.interfaces), start=2):
        ctx.ifindexes[(netns, name)] = number
    kinds = {o.params["kind"] for o in ops if o.action == LINK_ADD}
    assert kinds == {"bond", "bridge", "vxlan", "vrf", "vlan", "veth", "macvlan", "dummy"}
    sent = {o.action: encode(o, ctx) for o in ops}
    # vlan-del: a port with its own PVID loses the default VLAN 1 it joined with.
    assert set(sent) == {NETNS_ADD, LINK_ADD, LINK_SET, MASTER_SET, VLAN_ADD, VLAN_DEL, VNI_ADD,
                         VLAN_TUNNEL_ADD, ADDR_ADD, LINK_UP, ROUTE_ADD, FDB_ADD}
    assert sent[NETNS_ADD] == []
    for o in ops:
        for request in encode(o, ctx):
            assert request.tag is o


def test_every_action_has_an_encoder_and_every_creatable_kind_a_table():
    # ovs-* operations are OVSDB's (kernel/ovsdb.py), not netlink's.
    assert set(ENCODERS) == set(ACTIONS) - OVS_ACTIONS
    creatable = {k.name for k in registry.interface_kinds() if k.creatable}
    assert creatable == set(INFO_DATA)
    assert all(registry.kind(name).info_kind in (name, None) for name in creatable)


# ------------------------------------------------------------------ link-add, per kind
def test_vlan_on_a_device_in_another_namespace(ctx):
    storage = iface("storage", "vlan", "t1", vlan_raw_device="swp2", vlan_raw_netns="",
                    vlan_id=300, vlan_protocol="802.1ad")
    request = one(encode(link_add(storage), ctx))
    assert (request.type, request.flags) == (RTM_NEWLINK, CREATE)
    attrs = link_attrs(request.payload)
    assert attr_str(attrs[IFLA_IFNAME]) == "storage"
    assert attr_u32(attrs[IFLA_GROUP]) == NETCFG_GROUP
    assert attr_u32(attrs[IFLA_LINK]) == 12                          # swp2, in the host's
    assert struct.unpack("=i", attrs[IFLA_LINK_NETNSID])[0] == 3     # the host as t1 sees it
    assert info(request.payload) == ("vlan", {IFLA_VLAN_ID: u16(300),
                                              IFLA_VLAN_PROTOCOL: b"\x88\xa8"})   # big-endian


def test_vlan_in_its_lowers_namespace_has_no_netnsid(ctx):
    vlan = iface("swp2.200", "vlan", vlan_raw_device="swp2", vlan_id=200)
    attrs = link_attrs(one(encode(link_add(vlan), ctx)).payload)
    assert attr_u32(attrs[IFLA_LINK]) == 12 and IFLA_LINK_NETNSID not in attrs
    assert info(one(encode(link_add(vlan), ctx)).payload)[1][IFLA_VLAN_PROTOCOL] == b"\x81\x00"


def test_a_lower_namespace_without_an_nsid_is_an_error(ctx):
    vlan = iface("storage", "vlan", "t2", vlan_raw_device="swp2", vlan_raw_netns="", vlan_id=300)
    with pytest.raises(EncodeError, match=r"link-add storage \(netns t2\) link_netns: "
                                          r"the host namespace has no id in namespace 't2'"):
        encode(link_add(vlan), ctx)


def test_bond(ctx):
    bond = iface("bond0", "bond", bond_mode="802.3ad", bond_miimon=100, bond_lacp_rate="fast",
                 bond_min_links=1, bond_xmit_hash_policy="layer3+4")
    assert info(one(encode(link_add(bond), ctx)).payload) == ("bond", {
        IFLA_BOND_MODE: u8(4), IFLA_BOND_MIIMON: u32(100), IFLA_BOND_AD_LACP_RATE: u8(1),
        IFLA_BOND_MIN_LINKS: u32(1), IFLA_BOND_XMIT_HASH_POLICY: u8(1)})
    assert info(one(encode(link_add(iface("bond1", "bond")), ctx)).payload) == (
        "bond", {IFLA_BOND_MODE: u8(0)})   # balance-rr, said explicitly


def test_an_unknown_word_names_the_param_and_the_choices(ctx):
    bad = op(LINK_ADD, "bond0", kind="bond", mode="lacp")
    with pytest.raises(EncodeError, match=r"link-add bond0 mode: cannot encode 'lacp': "
                                          r"expected one of balance-rr, .*802.3ad"):
        encode(bad, ctx)


def test_vrf_and_dummy(ctx):
    assert info(one(encode(link_add(iface("red", "vrf", vrf_table=1001)), ctx)).payload) == (
        "vrf", {IFLA_VRF_TABLE: u32(1001)})
    assert info(one(encode(link_add(iface("dum0", "dummy")), ctx)).payload) == ("dummy", {})
    with pytest.raises(EncodeError, match="link-add red table: has no value"):
        encode(link_add(iface("red", "vrf")), ctx)


def test_vlan_aware_bridge(ctx):
    br = iface("br0", "bridge", bridge_vlan_aware=True, bridge_stp=False, bridge_mcsnoop=True,
               bridge_mcast_vlan_snooping=True, bridge_ageing=600)
    kind, data = info(one(encode(link_add(br), ctx)).payload)
    assert kind == "bridge"
    assert data == {
        IFLA_BR_VLAN_FILTERING: u8(1), IFLA_BR_STP_STATE: u32(0),
        IFLA_BR_MCAST_SNOOPING: u8(1), IFLA_BR_AGEING_TIME: u32(60000),   # centiseconds
        # optval, optmask: bit BR_BOOLOPT_MCAST_VLAN_SNOOPING (1) of both
        IFLA_BR_MULTI_BOOLOPT: BR_BOOLOPT_MULTI.pack(2, 2),
    }   # no IFLA_BR_VLAN_DEFAULT_PVID: the kernel's 1, as ifupdown2 leaves it
    lowered = iface("vbr0", "bridge", bridge_vlan_aware=True, bridge_vlan_default_pvid=0)
    _, data = info(one(encode(link_add(lowered), ctx)).payload)
    assert data[IFLA_BR_VLAN_DEFAULT_PVID] == u16(0)


def test_vlan_unaware_bridge_sends_no_vlan_filtering(ctx):
    # Off is the default, and kernels without bridge VLAN filtering refuse even 0.
    assert info(one(encode(link_add(iface("br0", "bridge")), ctx)).payload) == ("bridge", {})


def test_vxlan(ctx):
    vx = iface("vni1000", "vxlan", vxlan_id=1000, vxlan_local_tunnelip="192.0.2.1",
               vxlan_svcnodeip="192.0.2.2", vxlan_learning=False)
    assert info(one(encode(link_add(vx), ctx)).payload) == ("vxlan", {
        IFLA_VXLAN_PORT: b"\x12\xb5",            # 4789, big-endian
        IFLA_VXLAN_ID: u32(1000), IFLA_VXLAN_LOCAL: bytes([192, 0, 2, 1]),
        IFLA_VXLAN_GROUP: bytes([192, 0, 2, 2]), IFLA_VXLAN_LEARNING: u8(0)})


def test_vnifilter_vxlan_leaves_its_vnis_to_vni_add(ctx):
    vx = iface("vxlan0", "vxlan", vxlan_vnifilter=True, bridge_vlan_vni_map=["100-101=5100-5101"])
    add = link_add(vx)
    assert "vnis" not in add.params   # vni-add carries them
    assert info(one(encode(add, ctx)).payload) == ("vxlan", {
        IFLA_VXLAN_PORT: b"\x12\xb5", IFLA_VXLAN_COLLECT_METADATA: u8(1),
        IFLA_VXLAN_VNIFILTER: u8(1)})


def test_macvlan_mode(ctx):
    mv = iface("mv0", "macvlan", macvlan_raw_device="swp2", macvlan_mode="passthru")
    request = one(encode(link_add(mv), ctx))
    assert info(request.payload) == ("macvlan", {IFLA_MACVLAN_MODE: u32(8)})
    assert attr_u32(link_attrs(request.payload)[IFLA_LINK]) == 12


def test_veth_peer_made_in_its_namespace(ctx):
    veth = iface("veth-t1", "veth", veth_peer_name="eth0", veth_peer_netns="t1")
    payload = one(encode(link_add(veth, mtu=9000), ctx)).payload
    assert attr_u32(link_attrs(payload)[IFLA_MTU]) == 9000
    kind, data = info(payload)
    assert kind == "veth" and list(data) == [VETH_INFO_PEER]
    peer = parse_attrs(data[VETH_INFO_PEER], IFINFOMSG.size)
    assert attr_str(peer[IFLA_IFNAME]) == "eth0"
    assert attr_u32(peer[IFLA_GROUP]) == NETCFG_GROUP
    assert attr_u32(peer[IFLA_NET_NS_FD]) == 7
    same_ns = iface("a0", "veth", veth_peer_name="b0")
    peer = parse_attrs(info(one(encode(link_add(same_ns), ctx)).payload)[1][VETH_INFO_PEER],
                       IFINFOMSG.size)
    assert IFLA_NET_NS_FD not in peer


def test_alias_and_addr_gen_mode_follow_the_create_by_name(ctx):
    add = link_add(iface("br0", "bridge"), **{"hwaddress": "02:00:00:00:00:10", "mtu": 1500,
                                              "alias": "core bridge", "addr-gen-mode": "none",
                                              "disable-ipv6": True})
    create, follow = encode(add, ctx)
    attrs = link_attrs(create.payload)
    assert bytes(attrs[IFLA_ADDRESS]) == bytes.fromhex("020000000010")
    assert IFLA_IFALIAS not in attrs and IFLA_AF_SPEC not in attrs
    assert (follow.type, follow.flags) == (RTM_NEWLINK, 0)
    assert IFINFOMSG.unpack_from(follow.payload)[2] == 0           # by name, not ifindex
    attrs = link_attrs(follow.payload)
    assert attr_str(attrs[IFLA_IFNAME]) == "br0"
    assert attr_str(attrs[IFLA_IFALIAS]) == "core bridge"
    inet6 = parse_attrs(parse_attrs(attrs[IFLA_AF_SPEC])[AF_INET6])
    assert bytes(inet6[IFLA_INET6_ADDR_GEN_MODE]) == u8(1)
    # disable-ipv6 is a sysctl the applier writes: in neither request.
    assert len(attrs) == 3


@pytest.mark.parametrize("params, message", [
    ({"kind": "physical"}, r"kind: netcfg cannot create a 'physical' device"),
    ({"kind": "bridge", "vlan_id": 5}, r"vlan_id: is not a param netcfg can send when creating "
                                       r"a bridge"),
    ({"kind": "dummy", "link_netns": "t1"}, r"link_netns: is not a param"),
    ({"kind": "veth"}, r"peer: a veth is created with its peer"),
    ({"kind": "bridge", "hwaddress": "zz"}, r"hwaddress: cannot encode 'zz'"),
    ({"kind": "bridge", "hwaddress": "02:00"}, r"hwaddress: cannot encode '02:00': expected a "
                                               r"MAC address"),
])
def test_link_add_refuses_what_it_cannot_send(ctx, params, message):
    with pytest.raises(EncodeError, match=message):
        encode(op(LINK_ADD, "x0", **params), ctx)


# ------------------------------------------------------------------ link-set
def test_link_set_kind_options_go_in_linkinfo_and_null_is_the_default(ctx):
    request = one(encode(op(LINK_SET, "bond0", **{"bond-miimon": 200, "bond-lacp-rate": None,
                                                  "mtu": 9000}), ctx))
    assert (request.type, request.flags) == (RTM_NEWLINK, 0)
    assert IFINFOMSG.unpack_from(request.payload)[2] == 21
    assert attr_u32(link_attrs(request.payload)[IFLA_MTU]) == 9000
    assert info(request.payload) == ("bond", {IFLA_BOND_MIIMON: u32(200),
                                              IFLA_BOND_AD_LACP_RATE: u8(0)})


def test_link_set_port_learning_is_an_af_bridge_setlink_with_nested_protinfo(ctx):
    request = one(encode(op(LINK_SET, "swp1", "port", **{"bridge-learning": False}), ctx))
    assert (request.type, request.flags) == (RTM_SETLINK, 0)
    family, _type, index, _flags, _change = IFINFOMSG.unpack_from(request.payload)
    assert (family, index) == (AF_BRIDGE, 11)
    assert raw_types(request.payload, IFINFOMSG.size) == [IFLA_PROTINFO | NLA_F_NESTED]
    protinfo = parse_attrs(link_attrs(request.payload)[IFLA_PROTINFO])
    assert bytes(protinfo[IFLA_BRPORT_LEARNING]) == u8(0)


def test_link_set_of_only_disable_ipv6_sends_nothing(ctx):
    assert encode(op(LINK_SET, "swp1", **{"disable-ipv6": True}), ctx) == []


@pytest.mark.parametrize("params, message", [
    ({"vlan-id": 5}, r"link-set swp1 vlan-id: netcfg cannot change this attribute on an "
                     r"existing device"),
    ({"hwaddress": None}, r"hwaddress: cannot be reset to a kernel default"),
    ({"bridge-stp": True, "bond-miimon": 1}, r"mixes attributes of kinds bond, bridge"),
    ({"vxlan-remoteip": ["192.0.2.1", "192.0.2.2"]}, r"netcfg cannot change this attribute"),
])
def test_link_set_refuses_what_it_cannot_send(ctx, params, message):
    with pytest.raises(EncodeError, match=message):
        encode(op(LINK_SET, "swp1", **params), ctx)


# ------------------------------------------------------------------ devices by ifindex or name
def test_device_requests_name_a_device_the_context_does_not_know(ctx):
    up = one(encode(op(LINK_UP, "new0"), ctx))
    family, _type, index, flags, change = IFINFOMSG.unpack_from(up.payload)
    assert (index, flags, change) == (0, IFF_UP, IFF_UP)
    assert attr_str(link_attrs(up.payload)[IFLA_IFNAME]) == "new0"
    master = one(encode(op(MASTER_SET, "new0", master="br0"), ctx))
    assert attr_u32(link_attrs(master.payload)[IFLA_MASTER]) == 20
    unset = one(encode(op(MASTER_UNSET, "swp1", master="br0"), ctx))
    assert IFINFOMSG.unpack_from(unset.payload)[2] == 11
    assert attr_u32(link_attrs(unset.payload)[IFLA_MASTER]) == 0
    # Addresses (and routes, VLANs, VNIs) need the ifindex: the context's UnknownDevice.
    with pytest.raises(UnknownDevice, match=r"no such device in the kernel: new0 \(the host"):
        encode(op(ADDR_ADD, "new0", "10.0.0.1/24"), ctx)


def test_link_del_and_delete_group(ctx):
    request = one(encode(op(LINK_DEL, "eth0", netns="t1", peer="veth-t1", peer_netns=""), ctx))
    assert request.type == RTM_DELLINK and IFINFOMSG.unpack_from(request.payload)[2] == 32
    group = delete_group("t1")
    assert (group.type, group.payload) == (RTM_DELLINK, dellink_group(NETCFG_GROUP))
    assert group.tag.netns == "t1"


# ------------------------------------------------------------------ addresses and routes
def test_addresses(ctx):
    request = one(encode(op(ADDR_ADD, "swp1", "2001:db8::1/64"), ctx))
    assert (request.type, request.flags) == (RTM_NEWADDR, CREATE)
    family, prefixlen, _flags, scope, index = IFADDRMSG.unpack_from(request.payload)
    assert (family, prefixlen, scope, index) == (AF_INET6, 64, RT_SCOPE_UNIVERSE, 11)
    attrs = parse_attrs(request.payload, IFADDRMSG.size)
    packed = bytes.fromhex("20010db8000000000000000000000001")
    assert bytes(attrs[IFA_LOCAL]) == bytes(attrs[IFA_ADDRESS]) == packed


def test_address_metric_and_its_replacement(ctx):
    """`ip addr add 10.1.13.1/24 dev swp1 metric 1024` (a VRR macvlan's); with
    "replace", `ip addr replace ...`: the metric of an address already there."""
    added = one(encode(op(ADDR_ADD, "swp1", "10.1.13.1/24", metric=1024), ctx))
    assert (added.type, added.flags) == (RTM_NEWADDR, CREATE)
    assert attr_u32(parse_attrs(added.payload, IFADDRMSG.size)[IFA_RT_PRIORITY]) == 1024
    replaced = one(encode(op(ADDR_ADD, "swp1", "2001:db8::1/64", metric=0, replace=True), ctx))
    assert replaced.flags == NLM_F_CREATE | NLM_F_REPLACE
    assert attr_u32(parse_attrs(replaced.payload, IFADDRMSG.size)[IFA_RT_PRIORITY]) == 0
    plain = one(encode(op(ADDR_ADD, "swp1", "10.1.13.2/24"), ctx))
    assert IFA_RT_PRIORITY not in parse_attrs(plain.payload, IFADDRMSG.size)


def test_route_in_a_vrf_takes_the_vrfs_table(ctx):
    route = {"to": "0.0.0.0/0", "via": "10.2.0.254", "dev": "swp2.200", "vrf": "red"}
    request = one(encode(op(ROUTE_ADD, "swp2.200", "0.0.0.0/0 vrf red", **route), ctx))
    assert (request.type, request.flags) == (RTM_NEWROUTE, CREATE)
    (family, dst_len, _src_len, _tos, table, protocol, scope, rtm_type,
     _flags) = RTMSG.unpack_from(request.payload)
    # Table 1001 does not fit rtm_table (a u8): RTA_TABLE says it.
    assert (family, dst_len, table, protocol, scope, rtm_type) == (
        AF_INET, 0, 0, RTPROT_NETCFG, RT_SCOPE_UNIVERSE, RTN_UNICAST)
    attrs = parse_attrs(request.payload, RTMSG.size)
    assert RTA_DST not in attrs
    assert attr_u32(attrs[RTA_TABLE]) == 1001
    assert bytes(attrs[RTA_GATEWAY]) == bytes([10, 2, 0, 254])
    assert attr_u32(attrs[RTA_OIF]) == 24


def test_device_route_with_metric_and_its_delete(ctx):
    route = {"to": "10.30.0.0/16", "dev": "storage", "metric": 20, "table": 100}
    add = one(encode(op(ROUTE_ADD, "storage", "10.30.0.0/16 table 100 metric 20", "t1",
                        **route), ctx))
    header = RTMSG.unpack_from(add.payload)
    assert (header[1], header[4], header[5], header[6]) == (16, 100, RTPROT_NETCFG,
                                                            RT_SCOPE_LINK)
    attrs = parse_attrs(add.payload, RTMSG.size)
    assert bytes(attrs[RTA_DST]) == bytes([10, 30, 0, 0]) and RTA_GATEWAY not in attrs
    assert attr_u32(attrs[RTA_PRIORITY]) == 20 and attr_u32(attrs[RTA_OIF]) == 31
    delete = one(encode(op(ROUTE_DEL, "storage", "10.30.0.0/16", "t1", **route), ctx))
    header = RTMSG.unpack_from(delete.payload)
    assert (delete.type, delete.flags) == (RTM_DELROUTE, 0)
    # Any scope and type, but only a route netcfg added (its protocol).
    assert (header[5], header[6], header[7]) == (RTPROT_NETCFG, RT_SCOPE_NOWHERE, RTN_UNSPEC)



def test_another_programs_route_is_deleted_with_its_protocol_and_put_back_as_dumped(ctx):
    # A purge deletes it (route-del carrying its protocol); a revert re-adds
    # the dumped message, through the device's ifindex now.
    route = {"to": "10.9.0.0/16", "via": "10.2.0.1", "table": 254, "metric": 0, "protocol": 4}
    delete = one(encode(op(ROUTE_DEL, "", "10.9.0.0/16 via 10.2.0.1 proto static", **route), ctx))
    header = RTMSG.unpack_from(delete.payload)
    assert (delete.type, header[1], header[5], header[6], header[7]) == (
        RTM_DELROUTE, 16, 4, RT_SCOPE_NOWHERE, RTN_UNSPEC)
    attrs = parse_attrs(delete.payload, RTMSG.size)
    assert RTA_OIF not in attrs and RTA_PRIORITY not in attrs  # no dev, metric 0: any
    assert bytes(attrs[RTA_GATEWAY]) == bytes([10, 2, 0, 1])
    dumped = (RTMSG.pack(AF_INET, 16, 0, 0, 254, 4, RT_SCOPE_UNIVERSE, RTN_UNICAST, 0)
              + rtattr(RTA_DST, bytes([10, 9, 0, 0])) + rtattr_u32(RTA_OIF, 99))
    tag = op(ROUTE_ADD, "swp1", "10.9.0.0/16 proto static")
    readd = route_readd(tag, dumped, 254, 11)
    assert (readd.type, readd.flags, readd.tag) == (RTM_NEWROUTE, CREATE, tag)
    assert RTMSG.unpack_from(readd.payload)[5] == 4
    attrs = parse_attrs(readd.payload, RTMSG.size)
    assert attr_u32(attrs[RTA_OIF]) == 11 and bytes(attrs[RTA_DST]) == bytes([10, 9, 0, 0])

# ------------------------------------------------------------------ port VLANs
def vlan_entries(payload: bytes) -> list[tuple[int, int]]:
    af_spec = link_attrs(payload)[IFLA_AF_SPEC]
    entries, offset = [], 0
    while offset < len(af_spec):
        length, attr_type = RTATTR.unpack_from(af_spec, offset)
        assert attr_type == IFLA_BRIDGE_VLAN_INFO
        entries.append(BRIDGE_VLAN_INFO.unpack_from(af_spec, offset + 4))
        offset += (length + 3) & ~3
    return entries


BEGIN, END = BRIDGE_VLAN_INFO_RANGE_BEGIN, BRIDGE_VLAN_INFO_RANGE_END
PVID, UNTAGGED = BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_UNTAGGED


def test_vlan_add_ranges_cut_at_the_pvid_and_the_untagged_set(ctx):
    request = one(encode(op(VLAN_ADD, "swp1", vids=["1-10", "20", "30-40"], pvid=5,
                            untagged=["5", "30-40"]), ctx))
    assert (request.type, request.flags) == (RTM_SETLINK, 0)
    family, _type, index, _flags, _change = IFINFOMSG.unpack_from(request.payload)
    assert (family, index) == (AF_BRIDGE, 11)
    assert vlan_entries(request.payload) == [
        (BEGIN, 1), (END, 4),
        (PVID | UNTAGGED, 5),
        (BEGIN, 6), (END, 10),
        (0, 20),
        (UNTAGGED | BEGIN, 30), (UNTAGGED | END, 40),
    ]


def test_vlan_add_as_the_planner_writes_it_for_a_plain_trunk(ctx):
    request = one(encode(op(VLAN_ADD, "swp1", vids=["100-4094"], pvid=None, untagged=[]), ctx))
    assert vlan_entries(request.payload) == [(BEGIN, 100), (END, 4094)]


def test_vlan_del(ctx):
    request = one(encode(op(VLAN_DEL, "swp1", vids=["100-199", "300"]), ctx))
    assert (request.type, IFINFOMSG.unpack_from(request.payload)[0]) == (RTM_DELLINK, AF_BRIDGE)
    assert vlan_entries(request.payload) == [(BEGIN, 100), (END, 199), (0, 300)]


def test_a_bridges_own_vlans_carry_the_self_flag(ctx):
    """`bridge vlan add vid 5 dev BRIDGE self`: IFLA_BRIDGE_FLAGS first, else
    the kernel sends the request to the bridge's master (EOPNOTSUPP)."""
    for action, kind in ((VLAN_ADD, RTM_SETLINK), (VLAN_DEL, RTM_DELLINK)):
        request = one(encode(op(action, "swp1", vids=["5"], self=True), ctx))
        assert request.type == kind
        af_spec = link_attrs(request.payload)[IFLA_AF_SPEC]
        length, attr_type = RTATTR.unpack_from(af_spec, 0)
        assert (attr_type, struct.unpack_from("=H", af_spec, 4)[0]) == (IFLA_BRIDGE_FLAGS,
                                                                        BRIDGE_FLAGS_SELF)
        (flags, vid), = (BRIDGE_VLAN_INFO.unpack_from(af_spec, ((length + 3) & ~3) + 4),)
        assert (flags, vid) == (0, 5)


@pytest.mark.parametrize("params, message", [
    ({"vids": ["10-20"], "pvid": 30}, r"pvid: 30 is not among the VLANs added"),
    ({"vids": ["10-20"], "untagged": ["25"]}, r"untagged: names VLANs that are not among"),
    ({"vids": ["0-5"]}, r"vids: VLAN ids are 1-4094"),
    ({"vids": ["20-10"]}, r"vids: range '20-10' ends before it starts"),
    ({"vids": []}, r"vids: lists no VLAN"),
])
def test_vlan_add_refuses_inconsistent_params(ctx, params, message):
    with pytest.raises(EncodeError, match=message):
        encode(op(VLAN_ADD, "swp1", **params), ctx)


# ------------------------------------------------------------------ VNIs
def test_vni_add_and_del(ctx):
    add = one(encode(op(VNI_ADD, "vxlan0", vnis=["10100-10199", "10300"]), ctx))
    assert (add.type, add.flags) == (RTM_NEWTUNNEL, CREATE)
    assert TUNNEL_MSG.unpack_from(add.payload) == (AF_BRIDGE, 0, 0, 22)
    assert raw_types(add.payload, TUNNEL_MSG.size) == [VXLAN_VNIFILTER_ENTRY | NLA_F_NESTED] * 2
    entries, offset = [], TUNNEL_MSG.size
    while offset < len(add.payload):
        length, _type = RTATTR.unpack_from(add.payload, offset)
        entry = parse_attrs(add.payload[offset + 4:offset + length])
        entries.append({k: attr_u32(v) for k, v in entry.items()})
        offset += (length + 3) & ~3
    assert entries == [{VXLAN_VNIFILTER_ENTRY_START: 10100, VXLAN_VNIFILTER_ENTRY_END: 10199},
                       {VXLAN_VNIFILTER_ENTRY_START: 10300}]
    delete = one(encode(op(VNI_DEL, "vxlan0", vnis=["10300"]), ctx))
    assert delete.type == RTM_DELTUNNEL and delete.payload[TUNNEL_MSG.size:] == \
        add.payload[-len(delete.payload) + TUNNEL_MSG.size:]


def test_not_netlink():
    empty = StaticContext()
    assert encode(op(NETNS_ADD, "t1"), empty) == encode(op(NETNS_DEL, "t1"), empty) == []


@pytest.mark.parametrize("value, address, expected", [
    ("+", "1.2.3.4/24", "1.2.3.255"), ("-", "1.2.3.4/24", "1.2.3.0"),
    ("+", "10.1.2.3/14", "10.3.255.255"), ("-", "1.2.3.4/30", "1.2.3.4"),
    ("+", "1.2.3.4/31", None), ("-", "1.2.3.4/32", None),      # iproute2: none past /30
    ("192.0.2.9", "1.2.3.4/24", "192.0.2.9"), (None, "1.2.3.4/24", None)])
def test_broadcast_plus_and_minus_are_computed_per_address_as_iproute2(value, address,
                                                                       expected):
    """`broadcast +` / `-` (Debian ifupdown's testcase.1): `ip addr add A brd +|-`."""
    from netcfg.netlink.encode import _broadcast
    ip, _, length = address.partition("/")
    got = _broadcast(value, AF_INET, ipaddress.ip_address(ip).packed, int(length))
    assert got == (ipaddress.ip_address(expected).packed if expected else None)
