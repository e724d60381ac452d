"""VLAN-to-VNI mappings of a vnifilter vxlan's bridge port: diff, order, encoding.

`bridge-vlan-vni-map 10-41=10010-10041` on a vnifilter vxlan of a VLAN-aware
bridge asks for three things in the kernel: the VLANs on the port (vlan-add),
the VNIs in the vnifilter (vni-add) and the mapping between them
(vlan-tunnel-add, on a port with vlan_tunnel on). The VM tier proves them on a
real kernel (tests/vm/test_vm_vni.py); here the exact operations, their
order, and the exact bytes.
"""

from __future__ import annotations

import struct

import pytest
from builders import iface, op
from hypothesis import given
from hypothesis import strategies as st

from netcfg.model.model import Model
from netcfg.netlink.encode import EncodeError, StaticContext, encode
from netcfg.netlink.nlmsg import (AF_BRIDGE, BRIDGE_VLAN_INFO_RANGE_BEGIN,
                                  BRIDGE_VLAN_INFO_RANGE_END, IFINFOMSG, IFLA_AF_SPEC,
                                  IFLA_BRIDGE_VLAN_TUNNEL_FLAGS, IFLA_BRIDGE_VLAN_TUNNEL_ID,
                                  IFLA_BRIDGE_VLAN_TUNNEL_INFO, IFLA_BRIDGE_VLAN_TUNNEL_VID,
                                  IFLA_BRPORT_VLAN_TUNNEL, IFLA_PROTINFO, NLA_F_NESTED, RTM_DELLINK,
                                  RTM_SETLINK, ifinfomsg, parse_attrs)
from netcfg.netlink.read_parse import parse_bridge_vlans, port_vlan_attributes
from netcfg.plan.diff import diff
from netcfg.plan.vlans import tunnel_subtract, tunnel_map, tunnel_texts
from netcfg.plan.ops import (LINK_DEL, LINK_SET, MASTER_SET, VLAN_ADD, VLAN_DEL, VLAN_TUNNEL_ADD,
                             VLAN_TUNNEL_DEL, VNI_ADD, VNI_DEL, Operation)
from netcfg.plan.planner import build_plan


def switch(vni_map=None, bridge="br0", aware=True, vnifilter=True, **port):
    """A VLAN-aware bridge br0 (and br1) with a vnifilter vxlan vx0 in ``bridge``."""
    vx = iface("vx0", "vxlan", vxlan_vnifilter=vnifilter, **port)
    if vni_map is not None:
        vx.attrs["bridge-vlan-vni-map"] = vni_map
    bridges = [iface(name, "bridge", bridge_vlan_aware=aware,
                     bridge_ports=["vx0"] if name == bridge else [])
               for name in ("br0", "br1")]
    return Model(interfaces={o.key: o for o in (vx, *bridges)})


def ops_of(ops, *actions):
    return sorted((o.action, o.subject, o.params) for o in ops if o.action in actions)


TUNNEL_OPS = (VLAN_TUNNEL_ADD, VLAN_TUNNEL_DEL, LINK_SET)


# ---------------------------------------------------------------- the map as intervals

def test_map_texts_round_trip_and_merge_ranges():
    items = ["10-20=10010-10020", "21-41=10021-10041", "50=20050", "5=10005"]
    mapping = tunnel_map(items)
    assert mapping == {10000: [(5, 5), (10, 41)], 20000: [(50, 50)]}
    assert tunnel_texts(mapping) == ["5=10005", "10-41=10010-10041", "50=20050"]
    assert tunnel_map(None) == {} and tunnel_texts({}) == []


pairs = st.dictionaries(st.integers(1, 60), st.integers(1, 8).map(lambda k: 1000 * k),
                        max_size=40).map(lambda d: {vid: vid + base for vid, base in d.items()})


def texts_of(mapping: dict[int, int]) -> list[str]:
    return [f"{vid}={vni}" for vid, vni in mapping.items()]


def expand(items: list[str]) -> set[tuple[int, int]]:
    out = set()
    for item in items:
        vlans, _, vnis = item.partition("=")
        first, _, last = vlans.partition("-")
        vni = int(vnis.partition("-")[0])
        out.update((v, vni + v - int(first)) for v in range(int(first), int(last or first) + 1))
    return out


@given(pairs, pairs)
def test_subtract_is_the_set_of_mappings_the_other_map_lacks(a, b):
    got = expand(tunnel_texts(tunnel_subtract(tunnel_map(texts_of(a)),
                                               tunnel_map(texts_of(b)))))
    assert got == {(v, n) for v, n in a.items() if b.get(v) != n}
    assert expand(tunnel_texts(tunnel_map(texts_of(a)))) == set(a.items())


# ---------------------------------------------------------------- diff

def test_a_new_map_turns_vlan_tunnel_on_and_adds_the_mappings_as_ranges():
    ops = diff(switch(["10-41=10010-10041", "50=20050"]), switch())
    assert ops_of(ops, *TUNNEL_OPS, VLAN_ADD, VNI_ADD) == [
        (LINK_SET, "port", {"vlan_tunnel": True}),
        (VLAN_ADD, "", {"vids": ["10-41", "50"]}),
        (VLAN_TUNNEL_ADD, "", {"map": ["10-41=10010-10041", "50=20050"]}),
        (VNI_ADD, "", {"vnis": ["10010-10041", "20050"]}),
    ]


def test_removing_part_of_a_range_removes_exactly_that_part():
    ops = diff(switch(["10-20=10010-10020", "30-41=10030-10041"]), switch(["10-41=10010-10041"]))
    assert ops_of(ops, *TUNNEL_OPS, VLAN_DEL, VNI_DEL) == [
        (VLAN_DEL, "", {"vids": ["21-29"]}),
        (VLAN_TUNNEL_DEL, "", {"map": ["21-29=10021-10029"]}),
        (VNI_DEL, "", {"vnis": ["10021-10029"]}),
    ]


def test_a_vlan_mapped_to_another_vni_is_removed_then_added_and_keeps_its_vlan():
    ops = diff(switch(["100=2000", "101=1001"]), switch(["100-101=1000-1001"]))
    assert ops_of(ops, *TUNNEL_OPS, VLAN_ADD, VLAN_DEL, VNI_ADD, VNI_DEL) == [
        (VLAN_TUNNEL_ADD, "", {"map": ["100=2000"]}),
        (VLAN_TUNNEL_DEL, "", {"map": ["100=1000"]}),
        (VNI_ADD, "", {"vnis": ["2000"]}),
        (VNI_DEL, "", {"vnis": ["1000"]}),
    ]


def test_a_map_removed_whole_leaves_vlan_tunnel_on():
    # The flag without mappings changes no frame (br_handle_egress_vlan_tunnel
    # acts on mapped VLANs only); ifupdown2 never turns it off either.
    ops = diff(switch([]), switch(["10-11=10010-10011"]))
    assert ops_of(ops, *TUNNEL_OPS) == [(VLAN_TUNNEL_DEL, "", {"map": ["10-11=10010-10011"]})]


def test_same_map_same_nothing():
    assert diff(switch(["10-41=10010-10041"]), switch(["10-41=10010-10041"])) == []


def test_a_port_moved_to_another_bridge_gets_flag_and_mappings_again():
    # Leaving a bridge drops the port's VLANs, mappings and flags with it.
    ops = diff(switch(["10=10010"], bridge="br1"), switch(["10=10010"]))
    assert ops_of(ops, *TUNNEL_OPS, MASTER_SET, VLAN_ADD) == [
        (LINK_SET, "port", {"vlan_tunnel": True}),
        (MASTER_SET, "", {"master": "br1"}),
        (VLAN_ADD, "", {"vids": ["10"]}),
        (VLAN_TUNNEL_ADD, "", {"map": ["10=10010"]}),
    ]


def test_vlan_tunnel_joins_the_port_link_set_of_other_port_attributes():
    ops = diff(switch(["10=10010"], bridge_learning=False), switch(bridge_learning=True))
    assert ops_of(ops, LINK_SET) == [
        (LINK_SET, "port", {"bridge-learning": False, "vlan_tunnel": True})]


def test_no_mappings_without_a_vlan_aware_bridge():
    assert ops_of(diff(switch(["10=10010"], aware=False), switch(aware=False)),
                  *TUNNEL_OPS) == []


# ---------------------------------------------------------------- order

def positions(plan):
    return {(o.action, o.subject): n for n, batch in enumerate(plan.batches) for o in batch}


def test_a_mapping_waits_for_its_vlan_its_vni_and_the_flag():
    where = positions(build_plan(diff(switch(["10-41=10010-10041"]), Model())))
    tunnel = where[(VLAN_TUNNEL_ADD, "")]
    assert tunnel > where[(VLAN_ADD, "")]
    assert tunnel > where[(VNI_ADD, "")]
    assert tunnel > where[(LINK_SET, "port")] > where[(MASTER_SET, "")]


def test_a_mapping_goes_before_its_vlan_and_its_vni():
    where = positions(build_plan(diff(switch([]), switch(["10-41=10010-10041"]))))
    assert where[(VLAN_TUNNEL_DEL, "")] < where[(VLAN_DEL, "")]
    assert where[(VLAN_TUNNEL_DEL, "")] < where[(VNI_DEL, "")]


def test_deleting_the_device_takes_its_mappings():
    plan = build_plan([op(LINK_DEL, "vx0"), op(VLAN_TUNNEL_DEL, "vx0", map=["10=10010"]),
                       op(VNI_DEL, "vx0", vnis=["10010"])])
    assert [o.action for o in plan.operations] == [LINK_DEL]


def test_a_recreated_vxlan_gets_flag_and_mappings_anew():
    # vxlan-local-tunnelip cannot change in place: delete, create, map again.
    ops = diff(switch(["10=10010"], vxlan_local_tunnelip="192.0.2.2"),
               switch(["10=10010"], vxlan_local_tunnelip="192.0.2.1"))
    assert ops_of(ops, *TUNNEL_OPS, LINK_DEL, VNI_ADD) == [
        (LINK_DEL, "", {}),
        (LINK_SET, "port", {"vlan_tunnel": True}),
        (VLAN_TUNNEL_ADD, "", {"map": ["10=10010"]}),
        (VNI_ADD, "", {"vnis": ["10010"]}),
    ]


# ---------------------------------------------------------------- encoding

@pytest.fixture
def ctx() -> StaticContext:
    return StaticContext(ifindexes={("", "vx0"): 22})


def tinfo(vid: int, vni: int, flags: int) -> bytes:
    """One IFLA_BRIDGE_VLAN_TUNNEL_INFO written out by hand from the kernel's
    policy (vlan_tunnel_policy: ID u32, VID u16, FLAGS u16), each attribute
    padded to 4 bytes, as iproute2's add_tunnel_info lays it out."""
    body = (struct.pack("=HHI", 8, IFLA_BRIDGE_VLAN_TUNNEL_ID, vni)
            + struct.pack("=HHH2x", 6, IFLA_BRIDGE_VLAN_TUNNEL_VID, vid)
            + struct.pack("=HHH2x", 6, IFLA_BRIDGE_VLAN_TUNNEL_FLAGS, flags))
    return struct.pack("=HH", 4 + len(body), IFLA_BRIDGE_VLAN_TUNNEL_INFO) + body


def test_add_is_an_af_bridge_setlink_with_ranges_as_begin_end(ctx):
    request, = encode(op(VLAN_TUNNEL_ADD, "vx0", map=["10-41=10010-10041", "50=20050"]), ctx)
    assert (request.type, request.flags) == (RTM_SETLINK, 0)   # as `bridge vlan add`
    entries = (tinfo(10, 10010, BRIDGE_VLAN_INFO_RANGE_BEGIN)
               + tinfo(41, 10041, BRIDGE_VLAN_INFO_RANGE_END) + tinfo(50, 20050, 0))
    assert request.payload == (ifinfomsg(22, family=AF_BRIDGE)
                               + struct.pack("=HH", 4 + len(entries), IFLA_AF_SPEC) + entries)


def test_what_is_sent_reads_back_as_the_same_map(ctx):
    items = ["10-41=10010-10041", "50=20050", "60-61=7-8"]
    request, = encode(op(VLAN_TUNNEL_ADD, "vx0", map=items), ctx)
    info = parse_bridge_vlans(request.payload)   # the dump's parser: same layout
    assert port_vlan_attributes(info, "vx0", [])["bridge-vlan-vni-map"] == items


def test_del_is_a_dellink_of_the_same_entries(ctx):
    items = ["21-29=10021-10029"]
    add, = encode(op(VLAN_TUNNEL_ADD, "vx0", map=items), ctx)
    delete, = encode(op(VLAN_TUNNEL_DEL, "vx0", map=items), ctx)
    assert (delete.type, delete.flags, delete.payload) == (RTM_DELLINK, 0, add.payload)


def test_vlan_tunnel_is_a_bridge_port_flag(ctx):
    request, = encode(op(LINK_SET, "vx0", "port", vlan_tunnel=True), ctx)
    assert (request.type, IFINFOMSG.unpack_from(request.payload)[0]) == (RTM_SETLINK, AF_BRIDGE)
    raw_type = struct.unpack_from("=H", request.payload, IFINFOMSG.size + 2)[0]
    assert raw_type == IFLA_PROTINFO | NLA_F_NESTED
    protinfo = parse_attrs(parse_attrs(request.payload, IFINFOMSG.size)[IFLA_PROTINFO])
    assert bytes(protinfo[IFLA_BRPORT_VLAN_TUNNEL]) == b"\x01"


@pytest.mark.parametrize("items, message", [
    (["10-12=100-101"], r"maps 3 VLANs to 2 VNIs"),
    (["10=x"], r"is not VLANS=VNIS"),
    (["10"], r"is not VLANS=VNIS"),
    (["0=100"], r"VLAN ids are 1-4094, got 0-0"),
    (["4090-4095=100-105"], r"VLAN ids are 1-4094"),
    (["10=16777216"], r"VNIs are 1-16777215"),
    ([], r"lists no VLAN-to-VNI mapping"),
])
def test_inconsistent_maps_are_refused_before_sending(ctx, items, message):
    with pytest.raises(EncodeError, match=message):
        encode(op(VLAN_TUNNEL_ADD, "vx0", map=items), ctx)


def test_only_map_is_a_param(ctx):
    with pytest.raises(EncodeError, match="vids: is not a param of vlan-tunnel-add"):
        encode(Operation(VLAN_TUNNEL_ADD, "", "vx0", params={"map": ["1=1"], "vids": ["1"]}),
               ctx)
