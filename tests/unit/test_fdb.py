"""A vxlan's remotes: the forwarding-entry codec (netlink/fdb.py) and the
fdb-add / fdb-del diff (plan/fdb.py). The kernel's side is
tests/kernel/test_vxlan_remotes.py."""

from __future__ import annotations

import socket

from builders import iface, model, op

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.netlink.encode import StaticContext, encode
from netcfg.netlink.fdb import (NDA_DST, NDA_LLADDR, NDA_VNI, NDMSG, NTF_MASTER, NTF_SELF,
                                NUD_NOARP, NUD_PERMANENT, RTM_DELNEIGH, RTM_NEWNEIGH,
                                is_remote_event, ndmsg, parse_remote, remote_entry)
from netcfg.netlink.nlmsg import AF_BRIDGE, NLM_F_APPEND, NLM_F_CREATE, parse_attrs, rtattr
from netcfg.plan.diff import diff
from netcfg.plan.fdb import remote_operations
from netcfg.plan.ops import FDB_ADD, FDB_DEL, LINK_ADD
from netcfg.plan.planner import build_plan

ZERO = b"\0" * 6


def entry(ifindex: int, dst: str, mac: bytes = ZERO, flags: int = NTF_SELF,
          family: int = AF_BRIDGE, *extra: bytes) -> bytes:
    packed = socket.inet_pton(socket.AF_INET6 if ":" in dst else socket.AF_INET, dst)
    return (ndmsg(ifindex, NUD_PERMANENT, flags, family) + rtattr(NDA_LLADDR, mac)
            + rtattr(NDA_DST, packed) + b"".join(extra))


def test_ndmsg_is_the_kernels_12_bytes():
    assert NDMSG.size == 12
    assert NDMSG.unpack_from(ndmsg(7, 0x80, NTF_SELF)) == (AF_BRIDGE, 7, 0x80, NTF_SELF, 0)


def test_remote_entry_is_what_bridge_fdb_append_sends():
    payload = remote_entry(5, "192.0.2.2")
    family, index, state, flags, _ = NDMSG.unpack_from(payload)
    assert (family, index, flags) == (AF_BRIDGE, 5, NTF_SELF)
    assert state == NUD_NOARP | NUD_PERMANENT
    a = parse_attrs(payload, NDMSG.size, {NDA_DST, NDA_LLADDR})
    assert bytes(a[NDA_LLADDR]) == ZERO and bytes(a[NDA_DST]) == bytes([192, 0, 2, 2])
    six = parse_attrs(remote_entry(5, "2001:db8::2"), NDMSG.size, {NDA_DST})
    assert len(six[NDA_DST]) == 16


def test_only_plain_all_zeros_self_entries_are_remotes():
    assert parse_remote(entry(3, "192.0.2.2")) == (3, "192.0.2.2", False)
    assert parse_remote(entry(3, "2001:db8::2")).dst == "2001:db8::2"
    assert parse_remote(entry(3, "192.0.2.2", b"\x02" * 6)) is None       # a MAC's entry
    assert parse_remote(entry(3, "192.0.2.2", flags=NTF_MASTER)) is None  # the bridge's
    assert parse_remote(entry(3, "192.0.2.2", ZERO, NTF_SELF, socket.AF_INET)) is None  # ARP
    finer = entry(3, "192.0.2.2", ZERO, NTF_SELF, AF_BRIDGE, rtattr(NDA_VNI, b"\x05\0\0\0"))
    assert parse_remote(finer).finer
    assert is_remote_event(entry(3, "192.0.2.2"))
    assert not is_remote_event(entry(3, "192.0.2.2", ZERO, NTF_SELF, socket.AF_INET))


def test_fdb_ops_encode_as_append_and_delete():
    ctx = StaticContext(ifindexes={("", "vx0"): 9})
    add, = encode(op(FDB_ADD, "vx0", "192.0.2.2"), ctx)
    assert add.type == RTM_NEWNEIGH and add.flags == NLM_F_CREATE | NLM_F_APPEND
    assert add.payload == remote_entry(9, "192.0.2.2")
    delete, = encode(op(FDB_DEL, "vx0", "192.0.2.2"), ctx)
    assert delete.type == RTM_DELNEIGH and delete.flags == 0


def vx(name="vx0", **attrs):
    return iface(name, "vxlan", auto=True, vxlan_id=100, **attrs)


def ops(desired, current, remade=()):
    return sorted((o.action, o.subject) for o in remote_operations(desired, current, remade))


def test_remotes_are_a_set_the_config_owns():
    want = model(vx(vxlan_remoteip=["192.0.2.3", "192.0.2.4"]))
    had = model(vx(vxlan_remoteip=["192.0.2.2", "192.0.2.3"]))
    assert ops(want, had) == [(FDB_ADD, "192.0.2.4"), (FDB_DEL, "192.0.2.2")]
    assert ops(want, want) == []
    # A device made by this plan starts with none.
    assert ops(want, had, remade={("", "vx0")}) == [(FDB_ADD, "192.0.2.3"),
                                                    (FDB_ADD, "192.0.2.4")]


def test_without_remoteip_only_purge_removes_them():
    had = model(vx(vxlan_remoteip=["192.0.2.2"]))
    assert ops(model(vx()), had) == []
    assert ops(model(vx(vxlan_purge_remotes=False)), had) == []
    assert ops(model(vx(vxlan_purge_remotes=True)), had) == [(FDB_DEL, "192.0.2.2")]


def test_the_group_and_the_local_address_are_no_remotes():
    want = model(vx(vxlan_svcnodeip="192.0.2.9", vxlan_local_tunnelip="192.0.2.1",
                    vxlan_remoteip=["192.0.2.9", "192.0.2.1", "192.0.2.2"]))
    # Read back, the group's entry is left out of the remotes (kernel/read.py).
    had = model(vx(vxlan_svcnodeip="192.0.2.9", vxlan_remoteip=["192.0.2.2"]))
    assert ops(want, had) == []
    # The group moves: the kernel drops the old group's entry, which is written as a remote.
    moved = model(vx(vxlan_svcnodeip="192.0.2.8", vxlan_remoteip=["192.0.2.9", "192.0.2.2"]))
    assert ops(moved, had) == [(FDB_ADD, "192.0.2.9")]
    # A device netcfg made before remotes were entries: its group is the one remote.
    old = model(vx(vxlan_svcnodeip="192.0.2.2", vxlan_remoteip=[]))
    assert ops(model(vx(vxlan_remoteip=["192.0.2.2"])), old) == []


def test_plan_adds_remotes_after_the_device():
    config = compile_config(ConfigSource(path="-", stdin_text=(
        "auto vx0\niface vx0\n    vxlan-id 100\n    vxlan-remoteip 192.0.2.2 192.0.2.3\n"
        "    vxlan-remoteip 192.0.2.4\n"))).model
    plan = build_plan(diff(config, model()))
    where = {(o.action, o.subject): n for n, batch in enumerate(plan.batches) for o in batch}
    assert where[(FDB_ADD, "192.0.2.2")] > where[(LINK_ADD, "")]
    assert sorted(s for a, s in where if a == FDB_ADD) == ["192.0.2.2", "192.0.2.3", "192.0.2.4"]
