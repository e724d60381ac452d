"""ethtool link modes: kernel/ethtool.py's messages through pyroute2's
``ethtool_linkmode_msg`` against the real kernel's bytes, and the pure
pipeline (check, diff, encode) for link-speed / link-duplex / link-autoneg.

REPLY is a LINKMODES_GET reply captured from Linux 6.18 (this host) for a
veth in a private namespace (the kernel tier reads one again:
tests/kernel/test_ethtool.py)."""

from __future__ import annotations

import struct

from builders import compiled
from pyroute2.netlink.generic.ethtool import ethtool_linkmode_msg

from netcfg.kernel import ethtool as E
from netcfg.kinds.genl import genl_attributes
from netcfg.plan.diff import diff
from netcfg.model.model import Model

REPLY = bytes.fromhex(
    "0401000014000180080001000300000007000200763000000500020000000000340003800800020079000000"
    "140004000000000000000000000000000000000014000500000000000000000000000000000000000800050010"
    "270000050006000100000005000a0000000000")
FAMILY_ID = 21   # any: the family's id is the kernel's choice


def _decoded(payload: bytes):
    msg = ethtool_linkmode_msg(struct.pack("=IHHII", 16 + len(payload), FAMILY_ID, 0, 1, 0)
                               + payload)
    msg.decode()
    return msg


def _round_trip(msg):
    """pyroute2's encoding of ``msg``, decoded again (what the kernel gets)."""
    msg["header"]["type"] = FAMILY_ID
    msg.encode()
    return _decoded(bytes(msg.data)[16:])


def test_the_kernels_reply_decodes():
    assert E.parse_linkmodes(_decoded(REPLY)) == E.LinkModes(autoneg=False, speed=10000,
                                                              duplex="full")


def test_unknown_speed_and_duplex_read_as_absent():
    unknown = bytearray(REPLY)
    at = REPLY.index(struct.pack("=HHI", 8, 5, 10000))          # ETHTOOL_A_LINKMODES_SPEED
    unknown[at + 4:at + 8] = struct.pack("=I", E.SPEED_UNKNOWN)
    at = REPLY.index(struct.pack("=HH", 5, 6))                  # ETHTOOL_A_LINKMODES_DUPLEX
    unknown[at + 4] = 0xFF                                      # DUPLEX_UNKNOWN
    assert E.parse_linkmodes(_decoded(bytes(unknown))) == E.LinkModes(False, None, None)


def test_get_and_set_requests():
    get = _round_trip(E._message(E.ETHTOOL_MSG_LINKMODES_GET,
                                 [["ETHTOOL_A_HEADER_DEV_INDEX", 7],
                                  ["ETHTOOL_A_HEADER_FLAGS", E.ETHTOOL_FLAG_COMPACT_BITSETS]]))
    assert (get["cmd"], get["version"]) == (E.ETHTOOL_MSG_LINKMODES_GET, 1)
    header = get.get_attr("ETHTOOL_A_LINKMODES_HEADER")
    assert header.get_attr("ETHTOOL_A_HEADER_DEV_INDEX") == 7
    # The header goes nested with NLA_F_NESTED (ethtool's policies are strict).
    assert struct.unpack_from("=H", get.data, 16 + 4 + 2)[0] & 0x8000

    put = _round_trip(E.linkmodes_set("swp30", E.LinkModes(False, 1000, "half")))
    assert put["cmd"] == E.ETHTOOL_MSG_LINKMODES_SET
    header = put.get_attr("ETHTOOL_A_LINKMODES_HEADER")
    assert header.get_attr("ETHTOOL_A_HEADER_DEV_NAME") == "swp30"
    assert put.get_attr("ETHTOOL_A_LINKMODES_AUTONEG") == E.AUTONEG_DISABLE
    assert put.get_attr("ETHTOOL_A_LINKMODES_SPEED") == 1000
    assert put.get_attr("ETHTOOL_A_LINKMODES_DUPLEX") == 0                 # DUPLEX_HALF
    # What is not given is left as it is: not sent.
    only = _round_trip(E.linkmodes_set("swp30", E.LinkModes(autoneg=True)))
    assert [name for name, _value in only["attrs"]] == ["ETHTOOL_A_LINKMODES_HEADER",
                                                         "ETHTOOL_A_LINKMODES_AUTONEG"]


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
    assert {"link-speed", "link-duplex", "link-autoneg"} <= genl_attributes()


def test_speed_with_autonegotiation_on_warns(tmp_path):
    result = compiled(tmp_path, """\
        auto swp1
        iface swp1
            link-autoneg yes
            link-speed 10000
        """)
    warnings = [d.message for d in result.warnings]
    assert any("link-speed with link-autoneg yes" in w for w in warnings), warnings

