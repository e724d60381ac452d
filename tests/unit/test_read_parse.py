"""Decoding read-back messages (netcfg/netlink/read_parse.py) on bytes built here.

No root, no kernel: each message is built with nlmsg's helpers the way the
kernel lays it out, which also covers what the host kernel cannot show
(VLAN-aware bridges, bonds, VLANs, VRFs: the vm tier runs them for real).
The cross-namespace resolution of read.py is pure too and is tested here.
"""

from __future__ import annotations

import ipaddress
import struct

import pytest

from netcfg.kernel.read import NamespaceState, build_interfaces, resolve_cross_namespace
from netcfg.netlink.nlmsg import (AF_BRIDGE, AF_INET, AF_INET6, BR_BOOLOPT_MULTI, BRIDGE_VLAN_INFO,
                                  BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_RANGE_BEGIN,
                                  BRIDGE_VLAN_INFO_RANGE_END, BRIDGE_VLAN_INFO_UNTAGGED,
                                  DEVCONF_DISABLE_IPV6, IFA_ADDRESS, IFA_LABEL, IFA_LOCAL, IFA_PROTO,
                                  IFA_RT_PRIORITY, IFAPROT_KERNEL_LL, IFAPROT_KERNEL_RA, IFF_UP,
                                  IFINFOMSG,
                                  IFLA_ADDRESS, IFLA_AF_SPEC, IFLA_BOND_AD_LACP_RATE,
                                  IFLA_BOND_MIIMON, IFLA_BOND_MIN_LINKS, IFLA_BOND_MODE,
                                  IFLA_BOND_XMIT_HASH_POLICY, IFLA_BR_AGEING_TIME,
                                  IFLA_BR_MCAST_SNOOPING, IFLA_BR_MULTI_BOOLOPT, IFLA_BR_STP_STATE,
                                  IFLA_BR_VLAN_FILTERING, IFLA_BRIDGE_VLAN_INFO,
                                  IFLA_BRIDGE_VLAN_TUNNEL_FLAGS, IFLA_BRIDGE_VLAN_TUNNEL_ID,
                                  IFLA_BRIDGE_VLAN_TUNNEL_INFO, IFLA_BRIDGE_VLAN_TUNNEL_VID,
                                  IFLA_BRPORT_LEARNING, IFLA_EXT_MASK, IFLA_GROUP, IFLA_IFALIAS,
                                  IFLA_IFNAME, IFLA_INET6_ADDR_GEN_MODE, IFLA_INET6_CONF,
                                  IFLA_INFO_KIND, IFLA_INFO_SLAVE_DATA, IFLA_INFO_SLAVE_KIND,
                                  IFLA_LINK, IFLA_LINK_NETNSID, IFLA_LINKINFO, IFLA_MACVLAN_MODE,
                                  IFLA_MASTER, IFLA_MTU, IFLA_VLAN_ID, IFLA_VLAN_PROTOCOL,
                                  IFLA_VRF_TABLE, IFLA_VXLAN_GROUP, IFLA_VXLAN_GROUP6,
                                  IFLA_VXLAN_ID, IFLA_VXLAN_LEARNING, IFLA_VXLAN_LOCAL6,
                                  IFLA_VXLAN_PORT, IFLA_VXLAN_VNIFILTER, RTA_DST, RTA_GATEWAY,
                                  RTA_MULTIPATH, RTA_OIF, RTA_PRIORITY, RTA_TABLE,
                                  RTEXT_FILTER_BRVLAN_COMPRESSED, RTN_UNICAST, RT_SCOPE_UNIVERSE,
                                  RT_TABLE_MAIN, U32, ifaddrmsg, ifinfomsg, linkinfo, nested,
                                  parse_attrs, rtattr, rtattr_str, rtattr_u32, rtmsg)
from netcfg.netlink.read_parse import (PortVlanInfo, getlink_bridge_dump, iter_attrs, parse_address,
                                       parse_bridge_vlans, parse_link, parse_route,
                                       port_vlan_attributes, route_attribute)
from netcfg.model.tags import NETCFG_GROUP, RTPROT_NETCFG


def u8(attr_type: int, value: int) -> bytes:
    return rtattr(attr_type, bytes([value]))


def u16(attr_type: int, value: int) -> bytes:
    return rtattr(attr_type, struct.pack("=H", value))


def be16(attr_type: int, value: int) -> bytes:
    return rtattr(attr_type, struct.pack("!H", value))


def inet6_spec(addr_gen_mode: int = 0, disable_ipv6: int = 0, conf_len: int = 60) -> bytes:
    """IFLA_AF_SPEC as the kernel sends it: AF_INET's devconf, then AF_INET6's."""
    conf = [0] * conf_len
    conf[DEVCONF_DISABLE_IPV6] = disable_ipv6
    inet = nested(AF_INET, [rtattr(1, bytes(4 * 33))])
    inet6 = nested(AF_INET6, [rtattr_u32(1, 0x80000000),
                              rtattr(IFLA_INET6_CONF, struct.pack(f"={conf_len}i", *conf)),
                              u8(IFLA_INET6_ADDR_GEN_MODE, addr_gen_mode)])
    return nested(IFLA_AF_SPEC, [inet, inet6])


# The declared per-device sysctls, read from the devconf arrays (all 0 in inet6_spec).
SYSCTLS_OFF = {"ip-forward": False, "ip6-forward": False, "arp-accept": False,
               "accept-dad": 0, "dad-transmits": 0, "privext": 0, "accept-ra": 0,
               "autoconf": False}


def test_declared_sysctls_read_from_the_devconf_arrays():
    v4 = [0] * 33
    v4[0] = 1    # IPV4_DEVCONF_FORWARDING (1) is the array's first
    v4[20] = 1   # IPV4_DEVCONF_ARP_ACCEPT (21)
    v6 = [0] * 60
    v6[0] = 1    # DEVCONF_FORWARDING (0)
    v6[6] = 3    # DEVCONF_DAD_TRANSMITS: an integer, read as one
    v6[27] = 2   # DEVCONF_ACCEPT_DAD: 0, 1 or 2
    v6[10] = 2   # DEVCONF_USE_TEMPADDR: ifupdown's privext
    v6[3] = 1    # DEVCONF_ACCEPT_RA
    v6[5] = 1    # DEVCONF_AUTOCONF
    spec = nested(IFLA_AF_SPEC, [
        nested(AF_INET, [rtattr(1, struct.pack("=33I", *v4))]),
        nested(AF_INET6, [rtattr(IFLA_INET6_CONF, struct.pack("=60i", *v6))])])
    got = parse_link(link("swp1", spec=spec))
    assert {k: got.attrs[k] for k in SYSCTLS_OFF} == \
        {"ip-forward": True, "ip6-forward": True, "arp-accept": True,
         "accept-dad": 2, "dad-transmits": 3, "privext": 2, "accept-ra": 1, "autoconf": True}


def link(name: str, index: int = 5, flags: int = 0, mtu: int = 1500,
         mac: bytes = b"\x02\x00\x00\x00\x00\x05", extra: tuple[bytes, ...] = (),
         spec: bytes | None = None) -> bytes:
    """An RTM_NEWLINK payload (ifinfomsg + attributes), in the kernel's order."""
    attrs = [rtattr_str(IFLA_IFNAME, name), rtattr_u32(IFLA_MTU, mtu),
             rtattr_u32(IFLA_GROUP, 0), rtattr(IFLA_ADDRESS, mac),
             rtattr(23, bytes(200)),     # IFLA_STATS64: skipped over
             *extra, spec if spec is not None else inet6_spec()]
    return ifinfomsg(index=index, flags=flags) + b"".join(attrs)


# --- links -----------------------------------------------------------------------
def test_vlan_aware_bridge_attributes_in_schema_spelling():
    data = [u8(IFLA_BR_VLAN_FILTERING, 1), rtattr_u32(IFLA_BR_STP_STATE, 0),
            u8(IFLA_BR_MCAST_SNOOPING, 1), rtattr_u32(IFLA_BR_AGEING_TIME, 30000),
            rtattr(IFLA_BR_MULTI_BOOLOPT, BR_BOOLOPT_MULTI.pack(0b10, 0b11))]
    got = parse_link(link("br0", flags=IFF_UP, mtu=9000, mac=bytes.fromhex("02AB00000001"),
                          extra=(linkinfo("bridge", data),), spec=inet6_spec(1, 1)))
    assert (got.index, got.name, got.info_kind, got.flags & IFF_UP) == (5, "br0", "bridge", IFF_UP)
    assert got.attrs == {
        "bridge-vlan-aware": True, "bridge-stp": False, "bridge-mcsnoop": True,
        "bridge-ageing": 300, "bridge-mcast-vlan-snooping": True,
        "mtu": 9000, "hwaddress": "02:ab:00:00:00:01",
        "addr-gen-mode": "none", "disable-ipv6": True, **SYSCTLS_OFF,
    }
    # The kind's own attributes first, as `show` prints them.
    assert list(got.attrs)[0] == "bridge-vlan-aware"


def test_bridge_on_a_kernel_without_vlan_filtering():
    # No IFLA_BR_VLAN_FILTERING: never VLAN-aware; mcast_vlan_snooping is then
    # not valid in a config, so not reported even though the bool option is there.
    data = [rtattr_u32(IFLA_BR_STP_STATE, 1), rtattr_u32(IFLA_BR_AGEING_TIME, 12344),
            rtattr(IFLA_BR_MULTI_BOOLOPT, BR_BOOLOPT_MULTI.pack(0, 3))]
    got = parse_link(link("br1", extra=(linkinfo("bridge", data),)))
    assert got.attrs["bridge-vlan-aware"] is False
    assert got.attrs["bridge-stp"] is True
    assert got.attrs["bridge-ageing"] == 123    # `ageing_time 12345` reads back as 12344
    assert "bridge-mcast-vlan-snooping" not in got.attrs and "bridge-mcsnoop" not in got.attrs


def test_meaningless_values_are_left_out_and_numbers_kept():
    got = parse_link(link("lo", index=1, mtu=65536, mac=bytes(6),
                          extra=(rtattr_str(IFLA_IFALIAS, ""), rtattr_u32(IFLA_MASTER, 9),
                                 rtattr_u32(IFLA_LINK, 7),
                                 rtattr(IFLA_LINK_NETNSID, struct.pack("=i", 3)))))
    assert got.attrs == {"mtu": 65536, "addr-gen-mode": "eui64", "disable-ipv6": False,
                         **SYSCTLS_OFF}
    assert (got.info_kind, got.master, got.link, got.link_netnsid) == (None, 9, 7, 3)
    aliased = parse_link(link("eth0", mac=b"\x01\x02\x03\x04",   # not Ethernet: no hwaddress
                              extra=(rtattr_str(IFLA_IFALIAS, "uplink to core"),)))
    assert aliased.attrs["alias"] == "uplink to core" and "hwaddress" not in aliased.attrs


def test_no_ipv6_no_inet6_attributes():
    got = parse_link(link("eth0", spec=nested(IFLA_AF_SPEC, [nested(AF_INET, [])])))
    assert "addr-gen-mode" not in got.attrs and "disable-ipv6" not in got.attrs


@pytest.mark.parametrize("kind, data, expected", [
    ("vlan", [u16(IFLA_VLAN_ID, 100), be16(IFLA_VLAN_PROTOCOL, 0x88A8)],
     {"vlan-id": 100, "vlan-protocol": "802.1ad"}),
    ("vlan", [u16(IFLA_VLAN_ID, 7), be16(IFLA_VLAN_PROTOCOL, 0x8100)],
     {"vlan-id": 7, "vlan-protocol": "802.1q"}),
    ("macvlan", [rtattr_u32(IFLA_MACVLAN_MODE, 4)], {"macvlan-mode": "bridge"}),
    ("macvlan", [rtattr_u32(IFLA_MACVLAN_MODE, 16)], {"macvlan-mode": "source"}),
    ("vrf", [rtattr_u32(IFLA_VRF_TABLE, 1001)], {"vrf-table": 1001}),
    ("bond", [u8(IFLA_BOND_MODE, 4), rtattr_u32(IFLA_BOND_MIIMON, 100),
              u8(IFLA_BOND_AD_LACP_RATE, 1), rtattr_u32(IFLA_BOND_MIN_LINKS, 1),
              u8(IFLA_BOND_XMIT_HASH_POLICY, 1)],
     {"bond-mode": "802.3ad", "bond-miimon": 100, "bond-lacp-rate": "fast",
      "bond-min-links": 1, "bond-xmit-hash-policy": "layer3+4"}),
    # lacp rate is only valid with 802.3ad (kinds/bond.py), so not reported otherwise.
    ("bond", [u8(IFLA_BOND_MODE, 1), u8(IFLA_BOND_AD_LACP_RATE, 0)],
     {"bond-mode": "active-backup"}),
    ("veth", [], {}),
    ("dummy", [], {}),
], ids=["vlan-qinq", "vlan", "macvlan", "macvlan-source", "vrf", "bond-lacp", "bond-ab",
        "veth", "dummy"])
def test_kind_data(kind, data, expected):
    got = parse_link(link("dev0", extra=(linkinfo(kind, data),)))
    assert got.info_kind == kind
    assert {k: v for k, v in got.attrs.items()
            if k not in ("mtu", "hwaddress", "addr-gen-mode", "disable-ipv6", *SYSCTLS_OFF)} \
        == expected


def test_vxlan_single_vni_ipv6_unicast_remote():
    data = [rtattr_u32(IFLA_VXLAN_ID, 1000),
            rtattr(IFLA_VXLAN_GROUP6, ipaddress.IPv6Address("2001:db8::2").packed),
            rtattr(IFLA_VXLAN_LOCAL6, ipaddress.IPv6Address("2001:DB8::1").packed),
            be16(IFLA_VXLAN_PORT, 4789), u8(IFLA_VXLAN_LEARNING, 1)]
    notes: list[str] = []
    got = parse_link(link("vni1000", extra=(linkinfo("vxlan", data),)), notes)
    assert list(got.attrs.items())[:5] == [
        ("vxlan-id", 1000), ("vxlan-local-tunnelip", "2001:db8::1"),
        ("vxlan-svcnodeip", "2001:db8::2"), ("vxlan-port", 4789), ("vxlan-learning", True)]
    assert notes == []


def test_vxlan_vnifilter_and_what_has_no_spelling():
    notes: list[str] = []
    vnifilter = parse_link(link("vx0", extra=(linkinfo("vxlan", [
        rtattr_u32(IFLA_VXLAN_ID, 0), u8(IFLA_VXLAN_VNIFILTER, 1),
        be16(IFLA_VXLAN_PORT, 4789)]),)), notes)
    assert vnifilter.attrs["vxlan-vnifilter"] is True and "vxlan-id" not in vnifilter.attrs
    multicast = parse_link(link("vx1", extra=(linkinfo("vxlan", [
        rtattr_u32(IFLA_VXLAN_ID, 5),
        rtattr(IFLA_VXLAN_GROUP, ipaddress.IPv4Address("239.1.1.1").packed)]),)), notes)
    assert multicast.attrs["vxlan-svcnodeip"] == "239.1.1.1"   # a group: ifupdown2's too
    external = parse_link(link("vx2", extra=(linkinfo("vxlan", [
        rtattr_u32(IFLA_VXLAN_ID, 0)]),)), notes)
    assert "vxlan-id" not in external.attrs and "vxlan-vnifilter" not in external.attrs
    assert notes == ["vx2: an external vxlan without vnifilter has no netcfg spelling"]


def test_bridge_port_settings_from_slave_data():
    info = nested(IFLA_LINKINFO, [rtattr_str(IFLA_INFO_KIND, "veth"),
                                  rtattr_str(IFLA_INFO_SLAVE_KIND, "bridge"),
                                  nested(IFLA_INFO_SLAVE_DATA, [u8(IFLA_BRPORT_LEARNING, 0)])])
    got = parse_link(link("swp1", extra=(info,)))
    assert got.info_kind == "veth" and got.attrs["bridge-learning"] is False


def test_unknown_kind_keeps_its_kernel_name_and_common_attributes():
    got = parse_link(link("wg0", extra=(linkinfo("wireguard"),)))
    assert got.info_kind == "wireguard"
    assert set(got.attrs) == {"mtu", "hwaddress", "addr-gen-mode", "disable-ipv6", *SYSCTLS_OFF}


# --- addresses -----------------------------------------------------------------------
def address(family: int, prefixlen: int, index: int, *attrs: bytes) -> bytes:
    return ifaddrmsg(family, prefixlen, index, flags=0x80) + b"".join(attrs)


def test_addresses_and_the_kernels_own():
    v4 = ipaddress.IPv4Address("10.0.0.1").packed
    peer = ipaddress.IPv4Address("10.0.0.2").packed
    v6 = ipaddress.IPv6Address("2001:db8::1").packed
    ll = ipaddress.IPv6Address("fe80::1").packed
    assert parse_address(address(AF_INET, 24, 3, rtattr(IFA_ADDRESS, v4),
                                 rtattr(IFA_LOCAL, v4))) == (3, "10.0.0.1/24", AF_INET, 0, None)
    # Its label (an ifupdown alias stanza's: `ip addr add ... label eth0:1`).
    assert parse_address(address(AF_INET, 24, 3, rtattr(IFA_ADDRESS, v4), rtattr(IFA_LOCAL, v4),
                                 rtattr(IFA_LABEL, b"eth0:1\0")))[4] == "eth0:1"
    # Point-to-point: IFA_LOCAL is ours, IFA_ADDRESS the peer's.
    assert parse_address(address(AF_INET, 32, 3, rtattr(IFA_ADDRESS, peer),
                                 rtattr(IFA_LOCAL, v4)))[1] == "10.0.0.1/32"
    assert parse_address(address(AF_INET6, 64, 4, rtattr(IFA_ADDRESS, v6))) == (
        4, "2001:db8::1/64", AF_INET6, 0, None)
    # The metric of its prefix route (`ip addr add ... metric 1024`: a VRR macvlan's).
    assert parse_address(address(AF_INET6, 64, 4, rtattr(IFA_ADDRESS, v6),
                                 rtattr_u32(IFA_RT_PRIORITY, 1024)))[3] == 1024
    assert parse_address(address(AF_INET6, 64, 4, rtattr(IFA_ADDRESS, ll),
                                 u8(IFA_PROTO, IFAPROT_KERNEL_LL))) is None
    assert parse_address(address(AF_INET6, 64, 4, rtattr(IFA_ADDRESS, v6),
                                 u8(IFA_PROTO, IFAPROT_KERNEL_RA))) is None
    # An operator's link-local address (no IFA_PROTO) is kept.
    assert parse_address(address(AF_INET6, 64, 4, rtattr(IFA_ADDRESS, ll)))[1] == "fe80::1/64"


# --- routes --------------------------------------------------------------------------
def route(family: int, dst: str | None, dst_len: int, table: int = RT_TABLE_MAIN,
          *attrs: bytes) -> bytes:
    head = rtmsg(family, dst_len, table, RTPROT_NETCFG, RT_SCOPE_UNIVERSE, RTN_UNICAST)
    body = [rtattr_u32(RTA_TABLE, table)]
    if dst is not None:
        body.append(rtattr(RTA_DST, ipaddress.ip_address(dst).packed))
    return head + b"".join([*body, *attrs])


def test_routes_in_the_route_attributes_form():
    gw = rtattr(RTA_GATEWAY, ipaddress.IPv4Address("10.0.0.2").packed)
    default = parse_route(route(AF_INET, None, 0, RT_TABLE_MAIN, gw, rtattr_u32(RTA_OIF, 3)))
    assert route_attribute(default, "eth0", {}) == {"to": "0.0.0.0/0", "via": "10.0.0.2",
                                                    "dev": "eth0"}
    big_table = parse_route(route(AF_INET, "10.8.0.0", 16, 1000, gw, rtattr_u32(RTA_OIF, 3),
                                  rtattr_u32(RTA_PRIORITY, 5)))
    assert big_table.table == 1000
    assert route_attribute(big_table, "eth0", {}) == {
        "to": "10.8.0.0/16", "via": "10.0.0.2", "dev": "eth0", "table": 1000, "metric": 5}
    assert route_attribute(big_table, "eth0", {1000: "red"}) == {
        "to": "10.8.0.0/16", "via": "10.0.0.2", "dev": "eth0", "vrf": "red", "metric": 5}
    # IPv6 routes get metric 1024 when none is asked for: that is no metric.
    v6 = parse_route(route(AF_INET6, "2001:db8:9::", 48, RT_TABLE_MAIN,
                           rtattr(RTA_GATEWAY, ipaddress.IPv6Address("2001:db8::2").packed),
                           rtattr_u32(RTA_OIF, 3), rtattr_u32(RTA_PRIORITY, 1024)))
    assert route_attribute(v6, "eth0", {}) == {"to": "2001:db8:9::/48", "via": "2001:db8::2",
                                               "dev": "eth0"}
    device_route = parse_route(route(AF_INET, "10.5.0.0", 16, RT_TABLE_MAIN,
                                     rtattr_u32(RTA_OIF, 3)))
    assert route_attribute(device_route, "eth0", {}) == {"to": "10.5.0.0/16", "dev": "eth0"}
    multipath = parse_route(route(AF_INET, "10.4.0.0", 16, RT_TABLE_MAIN,
                                  rtattr(RTA_MULTIPATH, bytes(16))))
    assert multipath.multipath and multipath.oif is None


# --- bridge port VLANs (VM tier on the host kernel here) -------------------------
def vlan_info(flags: int, vid: int) -> bytes:
    return rtattr(IFLA_BRIDGE_VLAN_INFO, BRIDGE_VLAN_INFO.pack(flags, vid))


def tunnel(vid: int, vni: int, flags: int = 0) -> bytes:
    return nested(IFLA_BRIDGE_VLAN_TUNNEL_INFO, [
        rtattr_u32(IFLA_BRIDGE_VLAN_TUNNEL_ID, vni), u16(IFLA_BRIDGE_VLAN_TUNNEL_VID, vid),
        u16(IFLA_BRIDGE_VLAN_TUNNEL_FLAGS, flags)])


def bridge_port(index: int, master: int, *spec: bytes) -> bytes:
    return (ifinfomsg(index=index, family=AF_BRIDGE) + rtattr_str(IFLA_IFNAME, "vx0")
            + rtattr_u32(IFLA_MASTER, master) + nested(IFLA_AF_SPEC, list(spec)))


def test_port_vlans_compressed_ranges_pvid_and_tunnels():
    payload = bridge_port(
        7, 3,
        vlan_info(BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED, 1),
        vlan_info(BRIDGE_VLAN_INFO_RANGE_BEGIN, 100), vlan_info(BRIDGE_VLAN_INFO_RANGE_END, 199),
        vlan_info(0, 300),
        tunnel(100, 10100, BRIDGE_VLAN_INFO_RANGE_BEGIN),
        tunnel(199, 10199, BRIDGE_VLAN_INFO_RANGE_END),
        tunnel(300, 20300))
    info = parse_bridge_vlans(payload)
    assert info == PortVlanInfo(index=7, master=3, vids=[(1, 1), (100, 199), (300, 300)],
                                pvid=1, untagged=[(1, 1)],
                                tunnels=[(100, 199, 10100), (300, 300, 20300)])
    notes: list[str] = []
    assert port_vlan_attributes(info, "vx0", notes) == {
        "bridge-pvid": 1, "bridge-vids": ["100-199", "300"],
        "bridge-vlan-vni-map": ["100-199=10100-10199", "300=20300"]}
    assert notes == []


def test_port_vlans_untagged_other_than_pvid_are_noted():
    payload = bridge_port(8, 3, vlan_info(BRIDGE_VLAN_INFO_RANGE_BEGIN | BRIDGE_VLAN_INFO_UNTAGGED,
                                          10),
                          vlan_info(BRIDGE_VLAN_INFO_RANGE_END | BRIDGE_VLAN_INFO_UNTAGGED, 12),
                          vlan_info(BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED, 11))
    info = parse_bridge_vlans(payload)
    assert info.vids == [(10, 12), (11, 11)] and info.pvid == 11
    notes: list[str] = []
    assert port_vlan_attributes(info, "swp1", notes) == {"bridge-pvid": 11,
                                                         "bridge-vids": ["10", "12"]}
    assert notes == ["swp1: VLANs 10 12 are sent untagged but are not the pvid; netcfg has no "
                     "spelling for that"]


def test_bridge_vlan_dump_request():
    payload = getlink_bridge_dump()
    assert IFINFOMSG.unpack_from(payload)[0] == AF_BRIDGE
    ext = parse_attrs(payload, IFINFOMSG.size)[IFLA_EXT_MASK]
    assert U32.unpack_from(ext)[0] == RTEXT_FILTER_BRVLAN_COMPRESSED


def test_iter_attrs_keeps_repeats():
    spec = vlan_info(0, 1) + vlan_info(0, 2) + vlan_info(0, 3)
    assert [BRIDGE_VLAN_INFO.unpack_from(v)[1] for _t, v in iter_attrs(spec)] == [1, 2, 3]


# --- building objects and resolving references across namespaces -------------
def veth(name: str, index: int, peer_index: int, nsid: int | None = None, group: int = 0,
         master: int | None = None) -> bytes:
    extra = [rtattr_u32(IFLA_LINK, peer_index), linkinfo("veth")]
    if nsid is not None:
        extra.append(rtattr(IFLA_LINK_NETNSID, struct.pack("=i", nsid)))
    if master is not None:
        extra.append(rtattr_u32(IFLA_MASTER, master))
    payload = link(name, index=index, flags=IFF_UP, extra=tuple(extra))
    if group:
        payload = payload.replace(rtattr_u32(IFLA_GROUP, 0), rtattr_u32(IFLA_GROUP, group))
    return payload


def state_of(netns: str, *payloads: bytes) -> NamespaceState:
    state = NamespaceState(netns)
    build_interfaces(state, [parse_link(p) for p in payloads], {})
    return state


def test_build_interfaces_members_masters_and_kinds():
    state = state_of(
        "", link("lo", index=1, mac=bytes(6)),
        link("br0", index=2, extra=(linkinfo("bridge", [u8(IFLA_BR_VLAN_FILTERING, 0)]),)),
        veth("p1", 4, 5, master=2, group=NETCFG_GROUP), veth("q1", 5, 4),
        veth("p0", 3, 6, master=2), veth("q0", 6, 3),
        link("gnv0", index=7, extra=(linkinfo("geneve"),)))
    objs = state.interfaces
    assert [(n, o.kind) for n, o in objs.items()] == [
        ("lo", "loopback"), ("br0", "bridge"), ("p0", "veth"), ("p1", "veth"), ("q1", "veth"),
        ("q0", "veth"), ("gnv0", "physical")]
    assert objs["br0"].attrs["bridge-ports"] == ["p0", "p1"]   # ifindex order, not dump order
    assert objs["p0"].attrs["veth-peer-name"] == "q0" and objs["q1"].attrs["veth-peer-name"] == "p1"
    assert state.masters == {"p0": "br0", "p1": "br0"}
    assert state.managed == {"p1"} and state.kernel_kinds == {"gnv0": "geneve"}
    assert objs["p1"].auto and objs["p1"].loc.line == 4


def test_veth_peers_across_namespaces_without_nsids():
    host = state_of("", veth("v1", 3, 2, nsid=0), veth("v2", 4, 2, nsid=1))
    t1 = state_of("t1", veth("eth0", 2, 3, nsid=0))
    t2 = state_of("t2", veth("eth0", 2, 4, nsid=0))
    states = {"": host, "t1": t1, "t2": t2}
    resolve_cross_namespace(states, {})
    assert host.interfaces["v1"].attrs["veth-peer-name"] == "eth0"
    assert host.interfaces["v1"].attrs["veth-peer-netns"] == "t1"
    assert host.interfaces["v2"].attrs["veth-peer-netns"] == "t2"
    assert t2.interfaces["eth0"].attrs["veth-peer-name"] == "v2"
    assert t2.interfaces["eth0"].attrs["veth-peer-netns"] == ""
    assert all(s.pending == [] for s in states.values())


def test_an_ambiguous_peer_is_not_guessed_but_nsids_settle_it():
    def scene():
        # t1's and t2's eth0 both point at ifindex 3 and are ifindex 2: only one
        # of them is the host's v1 (the other's peer is in a namespace not read).
        return {"": state_of("", veth("v1", 3, 2, nsid=0)),
                "t1": state_of("t1", veth("eth0", 2, 3, nsid=0)),
                "t2": state_of("t2", veth("eth0", 2, 3, nsid=5))}
    states = scene()
    resolve_cross_namespace(states, {})
    for netns, state in states.items():
        name = "v1" if netns == "" else "eth0"
        assert "veth-peer-name" not in state.interfaces[name].attrs
        assert len(state.pending) == 1 and "left out" in state.notes[0]

    states = scene()
    resolve_cross_namespace(states, {"": {0: "t2"}, "t2": {5: ""}})
    assert states[""].interfaces["v1"].attrs["veth-peer-netns"] == "t2"
    assert states["t2"].interfaces["eth0"].attrs["veth-peer-name"] == "v1"
    assert "veth-peer-name" not in states["t1"].interfaces["eth0"].attrs

    # Asking the kernel (here: a table) about the candidates is as good.
    states = scene()
    kernel_nsids = {("", "t1"): 7, ("", "t2"): 0, ("t1", ""): 9, ("t2", ""): 5}
    resolve_cross_namespace(states, {}, lambda view, target: kernel_nsids.get((view, target)))
    assert states[""].interfaces["v1"].attrs["veth-peer-netns"] == "t2"
    assert states["t1"].pending and not states["t2"].pending
