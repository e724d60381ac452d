"""Value codecs: one attribute's value to its payload bytes and back.

Each codec is built from an attribute's declaration (``x-netcfg-kernel``
in its schema, netcfg.spec.KernelMapping) and both encodes and
decodes, so the request netcfg sends and the state it reads back cannot
disagree about units, widths or names. Pure: bytes in, values out.

A decoder returns None for a value netcfg has no spelling for (an enum
number the schema does not list); the attribute is then left out.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import Any, Callable

from netcfg.model.errors import quote
from netcfg.netlink.nlmsg import (AF_INET6, BR_BOOLOPT_MULTI, IFLA_INET6_ADDR_GEN_MODE,
                                  IN6_ADDR_GEN_MODE_EUI64, IN6_ADDR_GEN_MODE_NONE,
                                  IN6_ADDR_GEN_MODE_RANDOM, IN6_ADDR_GEN_MODE_STABLE_PRIVACY,
                                  nested, parse_attrs, rtattr)
from netcfg.spec import KernelMapping

USER_HZ = 100   # clock_t: the bridge's timers and ageing are in centiseconds

_INTS = {"u8": struct.Struct("=B"), "u16": struct.Struct("=H"), "u32": struct.Struct("=I"),
         "be16": struct.Struct("!H")}


@dataclass(frozen=True, slots=True)
class Codec:
    encode: Callable[[Any], bytes]
    decode: Callable[[memoryview], Any]


def _int(width: str) -> Codec:
    fmt = _INTS[width]
    return Codec(lambda v: fmt.pack(int(v)), lambda b: fmt.unpack_from(b)[0])


def _bool(width: str) -> Codec:
    fmt = _INTS[width]
    return Codec(lambda v: fmt.pack(1 if v else 0), lambda b: fmt.unpack_from(b)[0] != 0)


def _centiseconds(m: KernelMapping) -> Codec:
    # clock_t -> jiffies -> clock_t rounds (300 s reads back as 30000, but
    # 12345 centiseconds as 12344): whole seconds are what the schemas have.
    fmt = _INTS["u32"] if m.width == "u32" else struct.Struct("=Q")
    return Codec(lambda v: fmt.pack(int(v) * USER_HZ),
                 lambda b: round(fmt.unpack_from(b)[0] / USER_HZ))


def _choice(m: KernelMapping) -> Codec:
    """A word of the config (``802.3ad``) as the kernel's number."""
    fmt, names = _INTS[m.width], dict(m.choices)
    words = {number: word for word, number in m.choices}

    def encode(v: Any) -> bytes:
        if v not in names:
            raise ValueError(f"expected one of {', '.join(names)}, got {quote(v)}")
        return fmt.pack(names[v])
    return Codec(encode, lambda b: words.get(fmt.unpack_from(b)[0]))


def _ip(m: KernelMapping) -> Codec:
    """IPv4 or IPv6 by the value's family; the declaration's nla6 names the
    attribute of an IPv6 value (attrs.Declared picks it by length)."""
    return Codec(lambda v: ipaddress.ip_address(v).packed,
                 lambda b: str(ipaddress.ip_address(bytes(b))))


def _mac(m: KernelMapping) -> Codec:
    def encode(v: Any) -> bytes:
        mac = bytes.fromhex(str(v).replace(":", ""))
        if len(mac) != 6:
            raise ValueError("expected a MAC address like 02:00:00:00:00:01")
        return mac

    def decode(b: memoryview) -> str | None:
        raw = bytes(b)
        # not Ethernet (ipip: 4 bytes), or lo's all-zero address
        return raw.hex(":") if len(raw) == 6 and any(raw) else None
    return Codec(encode, decode)


def _string(m: KernelMapping) -> Codec:
    return Codec(lambda v: str(v).encode() + b"\0",
                 lambda b: bytes(b).split(b"\0", 1)[0].decode(errors="replace") or None)


def _boolopt(m: KernelMapping) -> Codec:
    """IFLA_BR_MULTI_BOOLOPT: sets only the options its mask names."""
    bit = 1 << m.bit
    return Codec(lambda v: BR_BOOLOPT_MULTI.pack(bit if v else 0, bit),
                 lambda b: bool(BR_BOOLOPT_MULTI.unpack_from(b)[0] & bit))


ADDR_GEN_MODES = {"eui64": IN6_ADDR_GEN_MODE_EUI64, "none": IN6_ADDR_GEN_MODE_NONE,
                  "stable_secret": IN6_ADDR_GEN_MODE_STABLE_PRIVACY,
                  "random": IN6_ADDR_GEN_MODE_RANDOM}


def _addr_gen_mode(m: KernelMapping) -> Codec:
    """IFLA_AF_SPEC's payload: AF_INET6 { IFLA_INET6_ADDR_GEN_MODE u8 } (a nest
    no flat table says; the dump path reads it with disable-ipv6 in
    read_parse._inet6)."""
    words = {n: w for w, n in ADDR_GEN_MODES.items()}

    def encode(v: Any) -> bytes:
        if v not in ADDR_GEN_MODES:
            raise ValueError(f"expected one of {', '.join(ADDR_GEN_MODES)}, got {quote(v)}")
        return nested(AF_INET6, [rtattr(IFLA_INET6_ADDR_GEN_MODE,
                                        struct.pack("=B", ADDR_GEN_MODES[v]))])

    def decode(b: memoryview) -> str | None:
        inet6 = parse_attrs(b, 0, {AF_INET6}).get(AF_INET6)
        mode = parse_attrs(inet6, 0, {IFLA_INET6_ADDR_GEN_MODE}).get(
            IFLA_INET6_ADDR_GEN_MODE) if inet6 is not None else None
        return words.get(mode[0]) if mode is not None and len(mode) else None
    return Codec(encode, decode)


CODECS: dict[str, Callable[[KernelMapping], Codec]] = {
    "u8": lambda m: _int("u8"), "u16": lambda m: _int("u16"), "u32": lambda m: _int("u32"),
    "be16": lambda m: _int("be16"),
    "bool": lambda m: _bool("u8"), "bool32": lambda m: _bool("u32"),
    "centiseconds": _centiseconds, "choice": _choice, "ip": _ip, "mac": _mac,
    "string": _string, "boolopt": _boolopt, "addr-gen-mode": _addr_gen_mode,
}


def codec(m: KernelMapping) -> Codec:
    try:
        return CODECS[m.codec](m)
    except KeyError:
        raise ValueError(f"{m.group}.json {m.attribute}: unknown codec {quote(m.codec)} "
                         f"(known: {', '.join(CODECS)})") from None
