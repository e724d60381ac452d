"""netcfg.plan.diff: desired vs current -> operations (hand-built models)."""

from __future__ import annotations

import copy
import functools

import builders
from builders import model
from hypothesis import given
from hypothesis import strategies as st

from netcfg.model.model import NETNS, ConfigObject, Model
from netcfg.plan.diff import diff
from netcfg.plan.vlans import compress_ranges, expand_ranges
from netcfg.plan.ops import (ADDR_ADD, ADDR_DEL, LINK_ADD, LINK_DEL, LINK_DOWN, LINK_SET, LINK_UP,
                             MASTER_SET, MASTER_UNSET, NETNS_ADD, NETNS_DEL, ROUTE_ADD, ROUTE_DEL,
                             VLAN_ADD, VLAN_DEL, VLAN_TUNNEL_ADD, VLAN_TUNNEL_DEL, VNI_ADD, VNI_DEL)


# Interfaces here are `auto` unless a test says otherwise.
iface = functools.partial(builders.iface, auto=True)


def ops_of(ops):
    """Comparable form: sorted (action, netns, name, subject, params)."""
    return sorted(((op.action, op.netns, op.name, op.subject, op.params) for op in ops),
                  key=lambda t: (t[0], t[1], t[2], t[3]))


def same(got, *expected):
    assert ops_of(got) == ops_of(
        [_op(*e) for e in expected]), "\n".join(op.describe() for op in got)


def _op(action, name, subject="", params=None, netns=""):
    from netcfg.plan.ops import Operation
    return Operation(action, netns, name, subject, params or {})


def rich_model():
    return model(
        iface("lo", "loopback", address=["10.255.0.1/32"]),
        iface("swp1", "physical", mtu=9000),
        iface("swp2", "physical", bridge_access=300),
        iface("br0", "bridge", bridge_ports=["swp1", "swp2", "vx0"], bridge_vlan_aware=True,
              bridge_vids=["100-200"], bridge_pvid=1),
        iface("vx0", "vxlan", vxlan_vnifilter=True, bridge_vlan_vni_map=["100-101=1000-1001"],
              vxlan_local_tunnelip="192.0.2.1"),
        iface("swp1.10", "vlan", vlan_raw_device="swp1", vlan_id=10, address=["10.0.0.1/24"],
              gateway=["10.0.0.254"]),
        iface("red", "vrf", vrf_table=1001),
        iface("dum0", "dummy", vrf="red", address=["10.5.0.1/32", "2001:db8::1/128"],
              route=[{"to": "10.6.0.0/16", "via": "10.5.0.2", "dev": "dum0", "vrf": "red"}]),
        iface("veth-t1", "veth", veth_peer_name="eth0", veth_peer_netns="t1",
              address=["10.1.0.1/30"]),
        iface("eth0", "veth", netns="t1", veth_peer_name="veth-t1", veth_peer_netns="",
              address=["10.1.0.2/30"], gateway=["10.1.0.1"], mtu=1400),
        iface("down0", "dummy", link_down=True),
        namespaces=[ConfigObject(NETNS, "t1", "netns", attrs={"nsid": 11})],
    )


# ---------------------------------------------------------------- ranges

def test_ranges():
    assert compress_ranges({5, 1, 2, 3, 7, 8}) == ["1-3", "5", "7-8"]
    assert expand_ranges(["1-3", "5", "2"]) == {1, 2, 3, 5}
    assert compress_ranges([]) == []


@given(st.sets(st.integers(1, 4094), max_size=300))
def test_ranges_round_trip(ids):
    assert expand_ranges(compress_ranges(ids)) == ids


# ---------------------------------------------------------------- idempotence

def test_same_model_gives_nothing():
    m = rich_model()
    assert diff(m, m) == []
    assert diff(m, copy.deepcopy(m)) == []
    assert diff(Model(), Model()) == []


# ---------------------------------------------------------------- creating

def test_everything_from_nothing():
    same(diff(rich_model(), Model()),
         (NETNS_ADD, "t1", "", {"nsid": 11}),
         (LINK_UP, "lo", "", None, "t1"),   # a new namespace's lo, up by default
         (LINK_SET, "swp1", "", {"mtu": 9000}),
         (LINK_UP, "lo"), (LINK_UP, "swp1"), (LINK_UP, "swp2"),
         (ADDR_ADD, "lo", "10.255.0.1/32"),
         (LINK_ADD, "br0", "", {"kind": "bridge", "vlan_filtering": True}),
         (LINK_UP, "br0"),
         (MASTER_SET, "swp1", "", {"master": "br0"}),
         (MASTER_SET, "swp2", "", {"master": "br0"}),
         (MASTER_SET, "vx0", "", {"master": "br0"}),
         # Each port joins with the bridge's default PVID 1 (the kernel's,
         # as ifupdown2 leaves it): kept where it is the port's PVID too.
         (VLAN_ADD, "swp1", "", {"vids": ["100-200"]}),
         (VLAN_DEL, "swp2", "joining", {"vids": ["1"]}),
         (VLAN_ADD, "swp2", "", {"vids": ["300"], "pvid": 300, "untagged": ["300"]}),
         (VLAN_ADD, "vx0", "", {"vids": ["100-200"]}),
         (LINK_ADD, "vx0", "", {"kind": "vxlan", "port": 4789, "external": True,
                                "vnifilter": True, "local": "192.0.2.1"}),
         (VNI_ADD, "vx0", "", {"vnis": ["1000-1001"]}),
         (LINK_SET, "vx0", "port", {"vlan_tunnel": True}),
         (VLAN_TUNNEL_ADD, "vx0", "", {"map": ["100-101=1000-1001"]}),
         (LINK_UP, "vx0"),
         (LINK_ADD, "swp1.10", "", {"kind": "vlan", "link": "swp1", "id": 10,
                                    "protocol": "802.1q"}),
         (ADDR_ADD, "swp1.10", "10.0.0.1/24"), (LINK_UP, "swp1.10"),
         (ROUTE_ADD, "swp1.10", "0.0.0.0/0",
          {"to": "0.0.0.0/0", "via": "10.0.0.254", "dev": "swp1.10"}),
         (LINK_ADD, "red", "", {"kind": "vrf", "table": 1001}), (LINK_UP, "red"),
         (LINK_ADD, "dum0", "", {"kind": "dummy"}),
         (MASTER_SET, "dum0", "", {"master": "red"}),
         (ADDR_ADD, "dum0", "10.5.0.1/32"), (ADDR_ADD, "dum0", "2001:db8::1/128"),
         (LINK_UP, "dum0"),
         (ROUTE_ADD, "dum0", "10.6.0.0/16 vrf red",
          {"to": "10.6.0.0/16", "via": "10.5.0.2", "dev": "dum0", "vrf": "red"}),
         # One side of the pair creates it (the smaller (netns, name)); the
         # other gets its create-time attributes set after.
         (LINK_ADD, "veth-t1", "", {"kind": "veth", "peer": "eth0", "peer_netns": "t1"}),
         (LINK_SET, "eth0", "", {"mtu": 1400}, "t1"),
         (ADDR_ADD, "veth-t1", "10.1.0.1/30"), (LINK_UP, "veth-t1"),
         (ADDR_ADD, "eth0", "10.1.0.2/30", None, "t1"), (LINK_UP, "eth0", "", None, "t1"),
         (ROUTE_ADD, "eth0", "0.0.0.0/0", {"to": "0.0.0.0/0", "via": "10.1.0.1", "dev": "eth0"},
          "t1"),
         (LINK_ADD, "down0", "", {"kind": "dummy"}),
         )


def test_veth_other_end_gets_its_create_time_attributes_set():
    desired = model(iface("a", "veth", veth_peer_name="b", mtu=9000),
                    iface("b", "veth", veth_peer_name="a", mtu=1400, auto=False))
    same(diff(desired, Model()),
         (LINK_ADD, "a", "", {"kind": "veth", "peer": "b", "peer_netns": "", "mtu": 9000}),
         (LINK_SET, "b", "", {"mtu": 1400}),
         (LINK_UP, "a"))


def test_implied_veth_peer_never_creates():
    desired = model(iface("z", "veth", veth_peer_name="a"),
                    iface("a", "veth", implicit=True, auto=False, veth_peer_name="z"))
    assert [op.name for op in diff(desired, Model()) if op.action == LINK_ADD] == ["z"]


# ---------------------------------------------------------------- changing

def test_mutable_attributes_become_link_set_with_only_the_changes():
    # The alias is not in the config: not managed, left as the kernel has it.
    current = model(iface("dum0", "dummy", mtu=1500, alias="old"))
    desired = model(iface("dum0", "dummy", mtu=9000, addr_gen_mode="none"))
    same(diff(desired, current),
         (LINK_SET, "dum0", "", {"mtu": 9000, "addr-gen-mode": "none"}))


def test_a_default_left_out_of_the_config_does_not_recreate():
    """Read-back state reports the kernel's defaults (vlan-protocol 802.1q);
    a config that leaves them out asks for the same, so nothing changes."""
    current = model(iface("swp1", "physical"),
                    iface("v", "vlan", vlan_raw_device="swp1", vlan_id=10,
                          vlan_protocol="802.1q"))
    desired = model(iface("swp1", "physical"),
                    iface("v", "vlan", vlan_raw_device="swp1", vlan_id=10))
    assert diff(desired, current) == []
    desired.interfaces[("", "v")].attrs["vlan-protocol"] = "802.1ad"
    assert [op.action for op in diff(desired, current)][:2] == [LINK_DEL, LINK_ADD]


def test_bridge_port_attributes_get_their_own_link_set():
    current = model(iface("br0", "bridge", bridge_ports=["swp1"]), iface("swp1", "physical"))
    desired = model(iface("br0", "bridge", bridge_ports=["swp1"]),
                    iface("swp1", "physical", bridge_learning=False, mtu=9000))
    same(diff(desired, current),
         (LINK_SET, "swp1", "", {"mtu": 9000}),
         (LINK_SET, "swp1", "port", {"bridge-learning": False}))


def test_immutable_change_recreates_and_reconfigures():
    current = model(iface("swp1", "physical"),
                    iface("v", "vlan", vlan_raw_device="swp1", vlan_id=10, address=["10.0.0.1/24"],
                          route=[{"to": "10.9.0.0/16", "via": "10.0.0.9", "dev": "v"}]))
    desired = copy.deepcopy(current)
    desired.interfaces[("", "v")].attrs["vlan-id"] = 20
    same(diff(desired, current),
         (LINK_DEL, "v", "", {"link": "swp1"}),
         (LINK_ADD, "v", "", {"kind": "vlan", "link": "swp1", "id": 20,
                              "protocol": "802.1q"}),
         (ADDR_ADD, "v", "10.0.0.1/24"), (LINK_UP, "v"),
         (ROUTE_ADD, "v", "10.9.0.0/16", {"to": "10.9.0.0/16", "via": "10.0.0.9", "dev": "v"}))


def test_recreated_lower_takes_its_vlans_and_bridge_ports_with_it():
    current = model(
        iface("br0", "bridge", bridge_ports=["bond0.5"]),
        iface("bond0", "bond", bond_slaves=[], bond_mode="balance-rr"),
        iface("bond0.5", "vlan", vlan_raw_device="bond0", vlan_id=5, auto=False))
    desired = copy.deepcopy(current)
    desired.interfaces[("", "bond0")].attrs["bond-mode"] = "802.3ad"
    same(diff(desired, current),
         (LINK_DEL, "bond0"), (LINK_DEL, "bond0.5", "", {"link": "bond0"}),
         (LINK_ADD, "bond0", "", {"kind": "bond", "mode": "802.3ad"}), (LINK_UP, "bond0"),
         (LINK_ADD, "bond0.5", "", {"kind": "vlan", "link": "bond0", "id": 5,
                                    "protocol": "802.1q"}),
         (MASTER_SET, "bond0.5", "", {"master": "br0"}))


def test_kind_change_recreates():
    current = model(iface("x", "dummy", auto=False))
    desired = model(iface("x", "bridge", auto=False))
    same(diff(desired, current), (LINK_DEL, "x"),
         (LINK_ADD, "x", "", {"kind": "bridge"}))


def test_recreated_veth_pair_is_deleted_once():
    current = model(iface("a", "veth", veth_peer_name="b", auto=False),
                    iface("b", "veth", veth_peer_name="a", auto=False))
    desired = model(iface("a", "veth", veth_peer_name="b", veth_peer_netns="t9", auto=False),
                    iface("b", "veth", netns="t9", veth_peer_name="a", veth_peer_netns="",
                          auto=False))
    same(diff(desired, current),
         (NETNS_ADD, "t9"), (LINK_UP, "lo", "", None, "t9"),
         (LINK_DEL, "a", "", {"peer": "b", "peer_netns": ""}),
         (LINK_ADD, "a", "", {"kind": "veth", "peer": "b", "peer_netns": "t9"}))


# ---------------------------------------------------------------- deleting

def test_deleted_devices_go_whole_physical_ones_stay():
    current = model(iface("dum0", "dummy", address=["10.0.0.1/24"], vrf="red"),
                    iface("red", "vrf", vrf_table=10),
                    iface("swp9", "physical", address=["10.9.0.1/24"]))
    same(diff(Model(), current), (LINK_DEL, "dum0"), (LINK_DEL, "red"))


def test_namespaces_come_and_go_whole():
    current = model(iface("eth0", "veth", netns="old", veth_peer_name="v", veth_peer_netns="",
                          address=["10.0.0.2/24"]),
                    iface("v", "veth", veth_peer_name="eth0", veth_peer_netns="old"))
    desired = model(iface("lo", "loopback", netns="new", address=["10.1.1.1/32"]),
                    iface("v", "veth", veth_peer_name="eth0", veth_peer_netns="new",
                          auto=False),
                    iface("eth0", "veth", netns="new", veth_peer_name="v", veth_peer_netns="",
                          implicit=True, auto=False),
                    namespaces=[ConfigObject(NETNS, "new", "netns")])
    same(diff(desired, current),
         (NETNS_ADD, "new"), (NETNS_DEL, "old"),
         (ADDR_ADD, "lo", "10.1.1.1/32", None, "new"), (LINK_UP, "lo", "", None, "new"),
         (LINK_DEL, "v", "", {"peer": "eth0", "peer_netns": "old"}),
         (LINK_ADD, "v", "", {"kind": "veth", "peer": "eth0", "peer_netns": "new"}))


def test_namespace_in_current_namespaces_only_is_deleted():
    current = Model(namespaces={"gone": ConfigObject(NETNS, "gone", "netns")})
    same(diff(Model(), current), (NETNS_DEL, "gone"))


# ---------------------------------------------------------------- masters

def test_vrf_membership_and_release():
    base = [iface("red", "vrf", vrf_table=10, auto=False)]
    current = model(*base, iface("d", "dummy", auto=False))
    desired = model(*copy.deepcopy(base), iface("d", "dummy", vrf="red", auto=False))
    same(diff(desired, current), (MASTER_SET, "d", "", {"master": "red"}))
    same(diff(current, desired), (MASTER_UNSET, "d", "", {"master": "red"}))


def test_masters_index_is_used():
    current = model(iface("bond0", "bond", auto=False), iface("swp1", "physical", auto=False))
    desired = model(iface("bond0", "bond", auto=False), iface("swp1", "physical", auto=False),
                    masters={("", "swp1"): ("", "bond0")})
    same(diff(desired, current), (MASTER_SET, "swp1", "", {"master": "bond0"}))


def test_an_up_device_goes_down_to_join_a_bond_and_comes_back_up():
    """The kernel refuses to enslave an up device to a bond (EPERM): netcfg takes it
    down first, as ifupdown2 does (seen taking over cldemo-l3clos server01, whose
    `bond-master` lines ifupdown2 3.0 ignores, leaving eth1 up and out of the bond)."""
    current = model(iface("uplink", "bond"), iface("eth1", "physical"))
    desired = model(iface("uplink", "bond"), iface("eth1", "physical"),
                    masters={("", "eth1"): ("", "uplink")})
    same(diff(desired, current), (LINK_DOWN, "eth1"),
         (MASTER_SET, "eth1", "", {"master": "uplink"}), (LINK_UP, "eth1"))
    # Down, it joins as it is; a bridge takes an up port.
    current.interfaces[("", "eth1")].auto = False
    desired.interfaces[("", "eth1")].auto = False
    same(diff(desired, current), (MASTER_SET, "eth1", "", {"master": "uplink"}))
    bridge = model(iface("br0", "bridge"), iface("eth1", "physical"),
                   masters={("", "eth1"): ("", "br0")})
    same(diff(bridge, model(iface("br0", "bridge"), iface("eth1", "physical"))),
         (MASTER_SET, "eth1", "", {"master": "br0"}))


def test_no_release_from_a_deleted_master():
    current = model(iface("br0", "bridge", bridge_ports=["swp1"], auto=False),
                    iface("swp1", "physical", auto=False))
    same(diff(model(iface("swp1", "physical", auto=False)), current), (LINK_DEL, "br0"))


def test_moving_an_up_device_into_a_vrf_readds_what_the_kernel_flushed():
    current = model(iface("red", "vrf", vrf_table=10),
                    iface("d", "dummy", address=["10.0.0.1/24", "2001:db8::1/64"],
                          route=[{"to": "10.8.0.0/16", "via": "10.0.0.8", "dev": "d"}]))
    desired = copy.deepcopy(current)
    desired.interfaces[("", "d")].attrs["vrf"] = "red"
    same(diff(desired, current),
         (MASTER_SET, "d", "", {"master": "red"}),
         (ADDR_ADD, "d", "2001:db8::1/64", {"replace": True}),
         (ROUTE_ADD, "d", "10.8.0.0/16", {"to": "10.8.0.0/16", "via": "10.0.0.8", "dev": "d"}))


def test_a_device_going_down_gets_its_wanted_ipv6_addresses_again():
    """Down drops IPv6 addresses (addrconf_ifdown): a stanza without `auto`
    found up (`ifup NAME`) is kept down with its addresses, so the wanted ones
    are added again, with replace (keep_addr_on_down=1 keeps them); an
    unwanted one is deleted as before; IPv4 ones stay. Its routes are not
    wanted while it is down (route_table), and are deleted."""
    gw = {"to": "::/0", "via": "2001:db8::ff", "dev": "eth0"}
    current = model(iface("eth0", "physical", route=[gw],
                          address=["10.0.0.1/24", "2001:db8::1/64", "2001:db8::2/64"]))
    desired = model(builders.iface("eth0", "physical", auto=False, gateway=["2001:db8::ff"],
                                   address=["10.0.0.1/24", "2001:db8::1/64"]))
    same(diff(desired, current), (LINK_DOWN, "eth0"),
         (ADDR_DEL, "eth0", "2001:db8::2/64"),
         (ADDR_ADD, "eth0", "2001:db8::1/64", {"replace": True}),
         (ROUTE_DEL, "eth0", "::/0", gw))
    # link-down yes on an up device: the same.
    same(diff(model(iface("d", "dummy", link_down=True, address=["2001:db8::1/64"])),
              model(iface("d", "dummy", address=["2001:db8::1/64"]))),
         (LINK_DOWN, "d"), (ADDR_ADD, "d", "2001:db8::1/64", {"replace": True}))
    # Already down: nothing.
    assert diff(desired, model(builders.iface("eth0", "physical", auto=False,
                                              address=["10.0.0.1/24", "2001:db8::1/64"]))) == []


def test_a_device_a_bond_releases_comes_back_up():
    """The bond closes a slave it releases (__bond_release_one: dev_close), as
    when the bond itself is deleted: a device wanted up is brought up again,
    its IPv6 addresses and routes put back."""
    route = {"to": "10.8.0.0/16", "via": "10.0.0.8", "dev": "eth1"}
    alone = iface("eth1", "physical", address=["10.0.0.1/24", "2001:db8::1/64"], route=[route])
    current = model(iface("bond0", "bond", bond_slaves=["eth1"]), copy.deepcopy(alone))
    desired = model(iface("bond0", "bond"), copy.deepcopy(alone))
    same(diff(desired, current), (MASTER_UNSET, "eth1", "", {"master": "bond0"}),
         (LINK_UP, "eth1"), (ADDR_ADD, "eth1", "2001:db8::1/64", {"replace": True}),
         (ROUTE_ADD, "eth1", "10.8.0.0/16", route))
    same(diff(model(copy.deepcopy(alone)), current), (LINK_DEL, "bond0"),
         (LINK_UP, "eth1"), (ADDR_ADD, "eth1", "2001:db8::1/64", {"replace": True}),
         (ROUTE_ADD, "eth1", "10.8.0.0/16", route))
    # To a bridge: the kernel releases it from the bond first.
    bridged = model(iface("bond0", "bond"), iface("br0", "bridge", bridge_ports=["eth1"]),
                    iface("eth1", "physical"))
    same(diff(bridged, model(iface("bond0", "bond", bond_slaves=["eth1"]),
                             iface("br0", "bridge"), iface("eth1", "physical"))),
         (MASTER_SET, "eth1", "", {"master": "br0"}), (LINK_UP, "eth1"))
    # Released from a bridge: it stays up.
    same(diff(model(iface("br0", "bridge"), iface("eth1", "physical")),
              model(iface("br0", "bridge", bridge_ports=["eth1"]), iface("eth1", "physical"))),
         (MASTER_UNSET, "eth1", "", {"master": "br0"}))


# ---------------------------------------------------------------- bridge VLANs and VNIs

def _bridge(vids, pvid=None, **port):
    attrs = {"bridge_vids": vids} if vids is not None else {}
    if pvid is not None:
        attrs["bridge_pvid"] = pvid
    return model(iface("br0", "bridge", bridge_ports=["swp1"], bridge_vlan_aware=True,
                       auto=False, **attrs),
                 iface("swp1", "physical", auto=False, **port))


def test_port_vlans_follow_the_bridge_default():
    same(diff(_bridge(["100-200", "300"]), _bridge(["100-150"])),
         (VLAN_ADD, "swp1", "", {"vids": ["151-200", "300"]}))
    same(diff(_bridge(["100-150"]), _bridge(["100-200", "300"])),
         (VLAN_DEL, "swp1", "", {"vids": ["151-200", "300"]}))


def test_port_own_vids_override_the_bridge():
    same(diff(_bridge(["100-200"], bridge_vids=["7"]), _bridge(["100-200"])),
         (VLAN_DEL, "swp1", "", {"vids": ["100-200"]}),
         (VLAN_ADD, "swp1", "", {"vids": ["7"]}))


def test_pvid_change_readds_old_and_new_pvid_with_their_flags():
    same(diff(_bridge(["1-10"], pvid=2), _bridge(["1-10"], pvid=1)),
         (VLAN_ADD, "swp1", "", {"vids": ["1-2"], "pvid": 2, "untagged": ["2"]}))


def test_access_port():
    same(diff(_bridge(["1-10"], bridge_access=5), _bridge(["1-10"])),
         (VLAN_DEL, "swp1", "", {"vids": ["1-4", "6-10"]}),
         (VLAN_ADD, "swp1", "", {"vids": ["5"], "pvid": 5, "untagged": ["5"]}))


def test_no_vlans_on_a_plain_bridge():
    desired = model(iface("br0", "bridge", bridge_ports=["swp1"], auto=False),
                    iface("swp1", "physical", auto=False))
    same(diff(desired, model(iface("swp1", "physical", auto=False))),
         (LINK_ADD, "br0", "", {"kind": "bridge"}),
         (MASTER_SET, "swp1", "", {"master": "br0"}))


def test_vnifilter_vnis_follow_the_map():
    def m(vni_map):
        return model(iface("br0", "bridge", bridge_ports=["vx0"], bridge_vlan_aware=True,
                           auto=False),
                     iface("vx0", "vxlan", vxlan_vnifilter=True, bridge_vlan_vni_map=vni_map,
                           auto=False))
    same(diff(m(["100-102=1000-1002"]), m(["100-101=1000-1001", "105=1005"])),
         (VLAN_DEL, "vx0", "", {"vids": ["105"]}),
         (VLAN_ADD, "vx0", "", {"vids": ["102"]}),
         (VNI_DEL, "vx0", "", {"vnis": ["1005"]}),
         (VNI_ADD, "vx0", "", {"vnis": ["1002"]}),
         (VLAN_TUNNEL_DEL, "vx0", "", {"map": ["105=1005"]}),
         (VLAN_TUNNEL_ADD, "vx0", "", {"map": ["102=1002"]}))


# ---------------------------------------------------------------- addresses and state

def test_addresses_are_a_set_difference():
    current = model(iface("d", "dummy", address=["10.0.0.1/24", "10.0.0.2/24"]))
    desired = model(iface("d", "dummy", address=["10.0.0.3/24", "10.0.0.1/24"]))
    same(diff(desired, current),
         (ADDR_DEL, "d", "10.0.0.2/24"), (ADDR_ADD, "d", "10.0.0.3/24"))


def test_address_metric_is_compared_and_replaced_in_place():
    """address-metric (a VRR macvlan's 1024): new addresses carry it; those
    already there with another metric are replaced (`ip addr replace`); an
    IPv6 one going back to 0 is deleted and added, as the kernel ignores a
    replace to 0 for IPv6. Absent on both sides: nothing (the kernel's 0)."""
    v4, v6 = "10.1.13.1/24", "2001:db8::1/64"
    vrr = iface("m", "dummy", address=[v4, v6, "10.1.14.1/24"], address_metric=1024)
    had = iface("m", "dummy", address=[v4, v6])
    same(diff(model(vrr), model(had)),
         (ADDR_ADD, "m", v4, {"metric": 1024, "replace": True}),
         (ADDR_ADD, "m", v6, {"metric": 1024, "replace": True}),
         (ADDR_ADD, "m", "10.1.14.1/24", {"metric": 1024}))
    assert diff(model(vrr), model(copy.deepcopy(vrr))) == []
    assert diff(model(had), model(copy.deepcopy(had))) == []
    back = diff(model(had), model(iface("m", "dummy", address=[v4, v6], address_metric=1024)))
    same(back, (ADDR_ADD, "m", v4, {"metric": 0, "replace": True}),
         (ADDR_DEL, "m", v6), (ADDR_ADD, "m", v6))
    # A DHCP client's address may carry its own metric, which the read side's
    # one metric may be: unwritten, it is left alone there.
    dhcp = iface("m", "dummy", inet="dhcp", address=[v6])
    assert diff(model(dhcp), model(iface("m", "dummy", address=[v4, v6],
                                         address_metric=100))) == []


def test_admin_state():
    same(diff(model(iface("d", "dummy", link_down=True)), model(iface("d", "dummy"))),
         (LINK_DOWN, "d"))
    same(diff(model(iface("d", "dummy")), model(iface("d", "dummy", auto=False))),
         (LINK_UP, "d"))


# ---------------------------------------------------------------- routes

def test_route_identity_includes_table_and_metric():
    def m(*routes):
        return model(iface("d", "dummy", route=list(routes)))
    r1 = {"to": "10.0.0.0/8", "via": "192.0.2.1", "dev": "d"}
    r2 = {"to": "10.0.0.0/8", "via": "192.0.2.2", "dev": "d", "metric": 5}
    r3 = {"to": "10.0.0.0/8", "via": "192.0.2.3", "dev": "d", "table": 7}
    same(diff(m(r1, r2, r3), m(r1)),
         (ROUTE_ADD, "d", "10.0.0.0/8 metric 5", r2),
         (ROUTE_ADD, "d", "10.0.0.0/8 table 7", r3))
    moved = {**r1, "via": "192.0.2.9"}
    same(diff(m(moved), m(r1, r3)),
         (ROUTE_DEL, "d", "10.0.0.0/8", r1), (ROUTE_ADD, "d", "10.0.0.0/8", moved),
         (ROUTE_DEL, "d", "10.0.0.0/8 table 7", r3))


def test_gateway_in_a_vrf_and_ipv6():
    desired = model(iface("red", "vrf", vrf_table=10),
                    iface("d", "dummy", vrf="red", gateway=["192.0.2.1", "2001:db8::1"]))
    current = model(iface("red", "vrf", vrf_table=10), iface("d", "dummy", vrf="red"))
    # d has no address: its gateways are on no prefix of it, so on the link.
    same(diff(desired, current),
         (ROUTE_ADD, "d", "0.0.0.0/0 vrf red",
          {"to": "0.0.0.0/0", "via": "192.0.2.1", "dev": "d", "vrf": "red", "onlink": True}),
         (ROUTE_ADD, "d", "::/0 vrf red",
          {"to": "::/0", "via": "2001:db8::1", "dev": "d", "vrf": "red", "onlink": True}))


def test_no_route_through_a_device_the_config_keeps_down():
    """Not installed while down (the kernel refuses it): a stanza without auto,
    whose `ifup NAME` brings it up with its routes (issue 22)."""
    r1 = {"to": "10.0.0.0/8", "via": "192.0.2.1", "dev": "d"}
    down = model(iface("d", "dummy", auto=False, route=[r1]))
    assert diff(down, model(iface("d", "dummy", auto=False))) == []
    same(diff(model(iface("d", "dummy", route=[r1])), model(iface("d", "dummy", auto=False))),
         (LINK_UP, "d"), (ROUTE_ADD, "d", "10.0.0.0/8", r1))


def test_gateway_read_back_as_a_default_route_is_the_same_route():
    desired = model(iface("d", "dummy", gateway=["192.0.2.1"]))
    current = model(iface("d", "dummy", route=[{"to": "0.0.0.0/0", "via": "192.0.2.1",
                                                "dev": "d"}]))
    assert diff(desired, current) == []


def test_a_pvid_the_config_does_not_write_is_ifupdown2s_default():
    """Takeover of a switch ifupdown2 configured: its ports have VLAN 1 as
    PVID, untagged (the kernel's vlan_default_pvid, ifupdown2's default); a
    config that writes no bridge-pvid asks for the same (docs/compat.md)."""
    same(diff(_bridge(["100-200"]), _bridge(["1", "100-200"], pvid=1)))
    same(diff(_bridge(["100-201"]), _bridge(["1", "100-200"], pvid=1)),
         (VLAN_ADD, "swp1", "", {"vids": ["201"]}))
    # Written, it is managed: another pvid replaces it.
    same(diff(_bridge(["100-200"], pvid=7), _bridge(["1", "100-200"], pvid=1)),
         (VLAN_DEL, "swp1", "", {"vids": ["1"]}),
         (VLAN_ADD, "swp1", "", {"vids": ["7"], "pvid": 7, "untagged": ["7"]}))
