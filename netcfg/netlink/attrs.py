"""The attribute tables of link requests, by config name: how each value is
encoded (value encoders), the enum names the kernel knows by number, each
kind's IFLA_INFO_DATA and the settings every kind shares (SETTINGS).

netcfg.netlink.encode builds requests from these; netcfg.netlink.read_parse
reads the same attributes back. A table-only attribute is a line here.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import Any, Callable

from netcfg.netlink.nlmsg import (AD_LACP_FAST, AD_LACP_SLOW, AF_INET6, BOND_MODE_8023AD,
                                  BOND_MODE_ACTIVEBACKUP, BOND_MODE_ALB, BOND_MODE_BROADCAST,
                                  BOND_MODE_ROUNDROBIN, BOND_MODE_TLB, BOND_MODE_XOR,
                                  BOND_XMIT_POLICY_ENCAP23, BOND_XMIT_POLICY_ENCAP34,
                                  BOND_XMIT_POLICY_LAYER2, BOND_XMIT_POLICY_LAYER23,
                                  BOND_XMIT_POLICY_LAYER34, BOND_XMIT_POLICY_VLAN_SRCMAC,
                                  BR_BOOLOPT_MCAST_VLAN_SNOOPING, BR_BOOLOPT_MULTI, ETH_P_8021AD,
                                  ETH_P_8021Q, IFLA_ADDRESS, IFLA_AF_SPEC, IFLA_BOND_AD_LACP_RATE,
                                  IFLA_BOND_MIIMON, IFLA_BOND_MIN_LINKS, IFLA_BOND_MODE,
                                  IFLA_BOND_XMIT_HASH_POLICY, IFLA_BR_AGEING_TIME,
                                  IFLA_BR_MCAST_SNOOPING, IFLA_BR_MULTI_BOOLOPT, IFLA_BR_STP_STATE,
                                  IFLA_BR_VLAN_DEFAULT_PVID, IFLA_BR_VLAN_FILTERING,
                                  IFLA_BRPORT_LEARNING, IFLA_BRPORT_VLAN_TUNNEL, IFLA_IFALIAS,
                                  IFLA_INET6_ADDR_GEN_MODE, IFLA_MACVLAN_MODE, IFLA_MTU,
                                  IFLA_VLAN_ID, IFLA_VLAN_PROTOCOL, IFLA_VRF_TABLE,
                                  IFLA_VXLAN_COLLECT_METADATA, IFLA_VXLAN_GROUP, IFLA_VXLAN_GROUP6,
                                  IFLA_VXLAN_ID, IFLA_VXLAN_LEARNING, IFLA_VXLAN_LOCAL,
                                  IFLA_VXLAN_LOCAL6, IFLA_VXLAN_PORT, IFLA_VXLAN_VNIFILTER,
                                  IN6_ADDR_GEN_MODE_EUI64, IN6_ADDR_GEN_MODE_NONE,
                                  IN6_ADDR_GEN_MODE_RANDOM, IN6_ADDR_GEN_MODE_STABLE_PRIVACY,
                                  MACVLAN_MODE_BRIDGE, MACVLAN_MODE_PASSTHRU, MACVLAN_MODE_PRIVATE,
                                  MACVLAN_MODE_SOURCE, MACVLAN_MODE_VEPA, nested, rtattr,
                                  rtattr_str, rtattr_u32)


# ---------------------------------------------------------------- value encoders
# Each turns a param's value into one attribute (b"" for nothing to send).

Encoder = Callable[[Any], bytes]


def _u8(attr: int) -> Encoder:
    return lambda v: rtattr(attr, struct.pack("=B", int(v)))


def _u16(attr: int) -> Encoder:
    return lambda v: rtattr(attr, struct.pack("=H", int(v)))


def _be16(attr: int) -> Encoder:
    return lambda v: rtattr(attr, struct.pack("!H", int(v)))


def _u32(attr: int) -> Encoder:
    return lambda v: rtattr_u32(attr, int(v))


def _choice(names: dict[str, int], then: Callable[[int], Encoder], attr: int) -> Encoder:
    """A word of the config (``802.3ad``) as the kernel's number."""
    encode_number = then(attr)

    def encode_word(v: Any) -> bytes:
        if v not in names:
            raise ValueError(f"expected one of {', '.join(names)}, got {v!r}")
        return encode_number(names[v])
    return encode_word


def _ip(attr4: int, attr6: int) -> Encoder:
    """An address as IPv4 or IPv6 attribute by its family (vxlan local, remote)."""
    def encode_ip(v: Any) -> bytes:
        ip = ipaddress.ip_address(v)
        return rtattr(attr4 if ip.version == 4 else attr6, ip.packed)
    return encode_ip


def _first_ip(attr4: int, attr6: int) -> Encoder:
    """vxlan-remoteip is a list; netcfg supports one remote (kinds/vxlan.py)."""
    one = _ip(attr4, attr6)

    def encode_first(v: Any) -> bytes:
        if not v or len(v) != 1:
            raise ValueError(f"expected exactly one remote address, got {v!r}")
        return one(v[0])
    return encode_first


def _seconds_as_centiseconds(attr: int) -> Encoder:
    return lambda v: rtattr_u32(attr, int(v) * 100)


def _boolopt(option: int) -> Encoder:
    """IFLA_BR_MULTI_BOOLOPT sets only the options its mask names."""
    bit = 1 << option
    return lambda v: rtattr(IFLA_BR_MULTI_BOOLOPT, BR_BOOLOPT_MULTI.pack(bit if v else 0, bit))


def _only_when_on(attr: int) -> Encoder:
    # The default (off) is not sent: kernels without CONFIG_BRIDGE_VLAN_FILTERING
    # refuse the attribute whatever its value (EOPNOTSUPP).
    encode_u8 = _u8(attr)
    return lambda v: encode_u8(1) if v else b""


def _mac(v: Any) -> bytes:
    mac = bytes.fromhex(str(v).replace(":", ""))
    if len(mac) != 6:
        raise ValueError("expected a MAC address like 02:00:00:00:00:01")
    return rtattr(IFLA_ADDRESS, mac)


def _addr_gen_mode(v: Any) -> bytes:
    if v not in ADDR_GEN_MODES:
        raise ValueError(f"expected one of {', '.join(ADDR_GEN_MODES)}, got {v!r}")
    mode = rtattr(IFLA_INET6_ADDR_GEN_MODE, struct.pack("=B", ADDR_GEN_MODES[v]))
    return nested(IFLA_AF_SPEC, [nested(AF_INET6, [mode])])


ADDR_GEN_MODES = {"eui64": IN6_ADDR_GEN_MODE_EUI64, "none": IN6_ADDR_GEN_MODE_NONE,
                  "stable_secret": IN6_ADDR_GEN_MODE_STABLE_PRIVACY,
                  "random": IN6_ADDR_GEN_MODE_RANDOM}
VLAN_PROTOCOLS = {"802.1q": ETH_P_8021Q, "802.1ad": ETH_P_8021AD}
MACVLAN_MODES = {"private": MACVLAN_MODE_PRIVATE, "vepa": MACVLAN_MODE_VEPA,
                 "bridge": MACVLAN_MODE_BRIDGE, "passthru": MACVLAN_MODE_PASSTHRU,
                 "source": MACVLAN_MODE_SOURCE}
BOND_MODES = {"balance-rr": BOND_MODE_ROUNDROBIN, "active-backup": BOND_MODE_ACTIVEBACKUP,
              "balance-xor": BOND_MODE_XOR, "broadcast": BOND_MODE_BROADCAST,
              "802.3ad": BOND_MODE_8023AD, "balance-tlb": BOND_MODE_TLB,
              "balance-alb": BOND_MODE_ALB}
BOND_LACP_RATES = {"slow": AD_LACP_SLOW, "fast": AD_LACP_FAST}
BOND_XMIT_HASH_POLICIES = {
    "layer2": BOND_XMIT_POLICY_LAYER2, "layer3+4": BOND_XMIT_POLICY_LAYER34,
    "layer2+3": BOND_XMIT_POLICY_LAYER23, "encap2+3": BOND_XMIT_POLICY_ENCAP23,
    "encap3+4": BOND_XMIT_POLICY_ENCAP34, "vlan+srcmac": BOND_XMIT_POLICY_VLAN_SRCMAC,
}

# ---------------------------------------------------------------- per-kind IFLA_INFO_DATA
# Kind -> create_params key -> encoder. Every key a kind's create_params can
# emit is here; a key missing from its kind's table is an EncodeError.
INFO_DATA: dict[str, dict[str, Encoder]] = {
    "bridge": {
        "vlan_filtering": _only_when_on(IFLA_BR_VLAN_FILTERING),
        "stp": _u32(IFLA_BR_STP_STATE),
        "mcast_snooping": _u8(IFLA_BR_MCAST_SNOOPING),
        "mcast_vlan_snooping": _boolopt(BR_BOOLOPT_MCAST_VLAN_SNOOPING),
        "ageing_time": _seconds_as_centiseconds(IFLA_BR_AGEING_TIME),
        "default_pvid": _u16(IFLA_BR_VLAN_DEFAULT_PVID),
    },
    "vlan": {
        "id": _u16(IFLA_VLAN_ID),
        "protocol": _choice(VLAN_PROTOCOLS, _be16, IFLA_VLAN_PROTOCOL),
    },
    "vxlan": {
        "id": _u32(IFLA_VXLAN_ID),
        "local": _ip(IFLA_VXLAN_LOCAL, IFLA_VXLAN_LOCAL6),
        "remote": _ip(IFLA_VXLAN_GROUP, IFLA_VXLAN_GROUP6),
        "port": _be16(IFLA_VXLAN_PORT),
        "learning": _u8(IFLA_VXLAN_LEARNING),
        "external": _u8(IFLA_VXLAN_COLLECT_METADATA),
        "vnifilter": _u8(IFLA_VXLAN_VNIFILTER),
    },
    "macvlan": {"mode": _choice(MACVLAN_MODES, _u32, IFLA_MACVLAN_MODE)},
    "bond": {
        "mode": _choice(BOND_MODES, _u8, IFLA_BOND_MODE),
        "miimon": _u32(IFLA_BOND_MIIMON),
        "lacp_rate": _choice(BOND_LACP_RATES, _u8, IFLA_BOND_AD_LACP_RATE),
        "min_links": _u32(IFLA_BOND_MIN_LINKS),
        "xmit_hash_policy": _choice(BOND_XMIT_HASH_POLICIES, _u8, IFLA_BOND_XMIT_HASH_POLICY),
    },
    "vrf": {"table": _u32(IFLA_VRF_TABLE)},
    "dummy": {},
    "veth": {},   # the peer (peer, peer_netns) is built by _veth_peer
}


# ---------------------------------------------------------------- attributes by config name
@dataclass(frozen=True, slots=True)
class Setting:
    """How one config attribute reaches the kernel on an existing device.

    ``place``: LINK (an IFLA_* of RTM_NEWLINK), INFO (IFLA_INFO_DATA of
    ``kind``, through INFO_DATA[kind][key]), PORT (IFLA_PROTINFO of an
    AF_BRIDGE RTM_SETLINK) or SYSCTL (not netlink: the applier's).
    ``reset`` is what a null value sends (the kernel's default); NO_RESET
    when there is no default to go back to.
    """

    place: str
    encode: Encoder | None = None
    kind: str = ""
    key: str = ""
    reset: Any = None
    at_create: bool = True     # honoured by a create request (else: sent right after it)


LINK, INFO, PORT, SYSCTL = "link", "info", "port", "sysctl"
NO_RESET = object()

SETTINGS: dict[str, Setting] = {
    "mtu": Setting(LINK, _u32(IFLA_MTU), reset=NO_RESET),
    "hwaddress": Setting(LINK, _mac, reset=NO_RESET),
    "alias": Setting(LINK, lambda v: rtattr_str(IFLA_IFALIAS, v), reset="", at_create=False),
    "addr-gen-mode": Setting(LINK, _addr_gen_mode, reset="eui64", at_create=False),
    "disable-ipv6": Setting(SYSCTL),
    "bridge-stp": Setting(INFO, kind="bridge", key="stp", reset=False),
    "bridge-mcsnoop": Setting(INFO, kind="bridge", key="mcast_snooping", reset=True),
    "bridge-mcast-vlan-snooping": Setting(INFO, kind="bridge", key="mcast_vlan_snooping",
                                          reset=False),
    "bridge-ageing": Setting(INFO, kind="bridge", key="ageing_time", reset=300),
    "bond-miimon": Setting(INFO, kind="bond", key="miimon", reset=0),
    "bond-lacp-rate": Setting(INFO, kind="bond", key="lacp_rate", reset="slow"),
    "bond-min-links": Setting(INFO, kind="bond", key="min_links", reset=0),
    "bond-xmit-hash-policy": Setting(INFO, kind="bond", key="xmit_hash_policy", reset="layer2"),
    "vxlan-learning": Setting(INFO, kind="vxlan", key="learning", reset=True),
    "vxlan-remoteip": Setting(INFO, _first_ip(IFLA_VXLAN_GROUP, IFLA_VXLAN_GROUP6),
                              kind="vxlan", reset=NO_RESET),
    "bridge-learning": Setting(PORT, _u8(IFLA_BRPORT_LEARNING), reset=True),
    # Not a config attribute: the diff implies it on a port with a VLAN-to-VNI
    # map (diff.VLAN_TUNNEL), as ifupdown2 does.
    "vlan_tunnel": Setting(PORT, _u8(IFLA_BRPORT_VLAN_TUNNEL), reset=False),
}
