"""ethtool link modes: the codec against the real kernel's bytes, and the
pure pipeline (check, diff, encode) for link-speed / link-duplex / link-autoneg.

REPLY is a LINKMODES_GET reply captured from Linux 6.18 (this host) for a
veth in a private namespace (netcfg/netlink/ethtool.py's linkmodes_get; the
kernel tier reads one again: tests/kernel/test_ethtool.py)."""

from __future__ import annotations

import struct

from builders import compiled

from netcfg.netlink import ethtool as E
from netcfg.netlink.encode import GENL_PARAMS
from netcfg.netlink.genl import GENLMSGHDR
from netcfg.netlink.nlmsg import NLA_F_NESTED, RTATTR, parse_attrs
from netcfg.plan.diff import diff
from netcfg.model.model import Model

REPLY = bytes.fromhex(
    "0401000014000180080001000300000007000200763000000500020000000000340003800800020079000000"
    "140004000000000000000000000000000000000014000500000000000000000000000000000000000800050010"
    "270000050006000100000005000a0000000000")


def test_the_kernels_reply_decodes():
    assert E.parse_linkmodes(REPLY) == E.LinkModes(autoneg=False, speed=10000, duplex="full")


def test_unknown_speed_and_duplex_read_as_absent():
    unknown = bytearray(REPLY)
    attrs = parse_attrs(REPLY, GENLMSGHDR.size)
    speed = bytes(attrs[E.ETHTOOL_A_LINKMODES_SPEED])
    at = REPLY.index(struct.pack("=HH", 8, E.ETHTOOL_A_LINKMODES_SPEED) + speed)
    unknown[at + 4:at + 8] = struct.pack("=I", E.SPEED_UNKNOWN)
    at = REPLY.index(struct.pack("=HH", 5, E.ETHTOOL_A_LINKMODES_DUPLEX))
    unknown[at + 4] = E.DUPLEX_UNKNOWN
    assert E.parse_linkmodes(bytes(unknown)) == E.LinkModes(False, None, None)


def _attrs(payload: bytes) -> dict[int, bytes]:
    return {k: bytes(v) for k, v in parse_attrs(payload, GENLMSGHDR.size).items()}


def test_get_and_set_requests():
    get = E.linkmodes_get(7)
    assert GENLMSGHDR.unpack_from(get) == (E.ETHTOOL_MSG_LINKMODES_GET, 1, 0)
    # The header is nested with NLA_F_NESTED (ethtool's policies are strict).
    _len, raw_type = RTATTR.unpack_from(get, GENLMSGHDR.size)
    assert raw_type == E.ETHTOOL_A_LINKMODES_HEADER | NLA_F_NESTED
    header = parse_attrs(_attrs(get)[E.ETHTOOL_A_LINKMODES_HEADER])
    assert struct.unpack("=I", header[E.ETHTOOL_A_HEADER_DEV_INDEX])[0] == 7
    assert struct.unpack("=I", header[E.ETHTOOL_A_HEADER_FLAGS])[0] == \
        E.ETHTOOL_FLAG_COMPACT_BITSETS

    put = E.linkmodes_set("swp30", autoneg=False, speed=1000, duplex="half")
    assert GENLMSGHDR.unpack_from(put)[0] == E.ETHTOOL_MSG_LINKMODES_SET
    attrs = _attrs(put)
    header = parse_attrs(attrs[E.ETHTOOL_A_LINKMODES_HEADER])
    assert bytes(header[E.ETHTOOL_A_HEADER_DEV_NAME]) == b"swp30\0"
    assert attrs[E.ETHTOOL_A_LINKMODES_AUTONEG] == b"\0"
    assert struct.unpack("=I", attrs[E.ETHTOOL_A_LINKMODES_SPEED])[0] == 1000
    assert attrs[E.ETHTOOL_A_LINKMODES_DUPLEX] == bytes([E.DUPLEX_HALF])
    # What is not given is left as it is: not sent.
    only = _attrs(E.linkmodes_set(3, autoneg=True))
    assert set(only) == {E.ETHTOOL_A_LINKMODES_HEADER, E.ETHTOOL_A_LINKMODES_AUTONEG}


def test_a_speed_turns_autonegotiation_off_as_ifupdown2_does(tmp_path):
    result = compiled(tmp_path, """\
        auto swp30
        iface swp30
            link-duplex full
            link-speed 1000
        """)
    port = result.model.interfaces[("", "swp30")]
    assert port.attrs["link-autoneg"] is False
    ops = diff(result.model, Model())
    sets = [op for op in ops if op.name == "swp30" and op.action == "link-set"]
    assert sets and sets[0].params == {"link-duplex": "full", "link-speed": 1000,
                                       "link-autoneg": False}
    # Sent by apply/ethtool.py over generic netlink, never as rtnetlink.
    assert {"link-speed", "link-duplex", "link-autoneg"} <= GENL_PARAMS


def test_speed_with_autonegotiation_on_warns(tmp_path):
    result = compiled(tmp_path, """\
        auto swp1
        iface swp1
            link-autoneg yes
            link-speed 10000
        """)
    warnings = [d.message for d in result.warnings]
    assert any("link-speed with link-autoneg yes" in w for w in warnings), warnings

