"""The attribute tables of link requests, derived from the schemas.

Every attribute whose schema carries ``x-netcfg-kernel`` (schemas/
kinds/*.json, netcfg.spec.KernelMapping) is one declaration: its
place, netlink attribute, codec, kernel default and mutability. From those
this module builds what encode.py sends and read_parse.py reads:

- ``INFO_DATA``: kind -> link-add param -> encoder (IFLA_INFO_DATA);
- ``SETTINGS``: attribute -> how a link-set sends it and what a removed
  one resets to;
- ``READ_INFO`` / ``READ_PORT``: IFLA_INFO_DATA / IFLA_INFO_SLAVE_DATA
  attributes to parse per kind, each with its decoder;
- ``KERNEL_DEFAULTS``: what every new device has (``show`` leaves it out;
  spec.kernel_defaults, which compile/emit.py reads too).

Hand code stays only for what no declaration can say: a veth's peer, a
addr-gen-mode's nesting, the
disable-ipv6 sysctl. A table-only attribute is a schema edit, nothing here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable

from netcfg.kinds import registry
from netcfg.netlink import nla
from netcfg.netlink.codecs import codec
from netcfg.netlink.nlmsg import (IFLA_BRPORT_VLAN_TUNNEL,
                                  IFLA_VXLAN_COLLECT_METADATA, rtattr)
from netcfg.spec import (INFO, LINK, PORT, SYSCTL, KernelMapping, all_groups,
                         group_attributes, kernel_defaults, kernel_mappings)

# Each turns a param's value into one attribute (b"" for nothing to send).
Encoder = Callable[[Any], bytes]
# A decoder of one attribute's payload; None: no schema spelling for it.
Decoder = Callable[[memoryview], Any]


def declared_encoder(m: KernelMapping) -> Encoder:
    """The whole attribute (header and payload) from a declaration."""
    c = codec(m)
    number = nla.number(m.nla)
    number6 = nla.number(m.nla6) if m.nla6 else None
    encode = c.encode

    def encode_attr(v: Any) -> bytes:
        if m.omit_false and not v:
            # The default (off) is not sent: kernels without the feature
            # (CONFIG_BRIDGE_VLAN_FILTERING) refuse it whatever its value.
            return b""
        payload = encode(v)
        return rtattr(number6 if number6 is not None and len(payload) == 16 else number, payload)
    return encode_attr


# ---------------------------------------------------------------- hand encoders
def _u8(attr: int) -> Encoder:
    return lambda v: rtattr(attr, struct.pack("=B", int(v)))


def sysctl_writes(name: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    """(/proc/sys path, text) of the per-device sysctls among ``params``
    (declared ``"place": "sysctl"``, ``path`` with IF for the device: split
    at its dots before the name goes in, as a name may have dots)."""
    out = []
    for attribute, value in params.items():
        setting = SETTINGS.get(attribute)
        if setting is None or setting.place != SYSCTL or not setting.key:
            continue
        if value is None:
            value = setting.reset
        parts = [name if part == "IF" else part for part in setting.key.split(".")]
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        out.append(("/proc/sys/" + "/".join(parts), text))
    return out


# ---------------------------------------------------------------- attributes by config name
@dataclass(frozen=True, slots=True)
class Setting:
    """How one config attribute reaches the kernel on an existing device.

    ``place``: LINK (an IFLA_* of RTM_NEWLINK), INFO (IFLA_INFO_DATA of
    ``kind``), PORT (IFLA_PROTINFO of an AF_BRIDGE RTM_SETLINK) or SYSCTL
    (not netlink: the applier's). ``reset`` is what a null value sends (the
    kernel's default); NO_RESET when there is no default to go back to.
    """

    place: str
    encode: Encoder | None = None
    kind: str = ""
    key: str = ""
    reset: Any = None
    at_create: bool = True     # honoured by a create request (else: sent right after it)


NO_RESET = object()


def _reset(m: KernelMapping) -> Any:
    return m.reset if m.has_reset else m.default if m.has_default else NO_RESET


def _derive():
    info: dict[str, dict[str, Encoder]] = {}
    settings: dict[str, Setting] = {}
    read_info: dict[str, dict[int, tuple[str, Decoder]]] = {}
    read_port: dict[int, tuple[str, Decoder]] = {}
    read_devconf: list[tuple[str, int, str, bool]] = []
    for group in all_groups():
        for m in kernel_mappings(group):
            if m.place == SYSCTL:
                settings[m.attribute] = Setting(SYSCTL, reset=_reset(m), key=m.path)
                if m.devconf and m.attribute not in _HAND_READ:
                    family, _, index = m.devconf.partition(":")
                    boolean = group_attributes(group)[m.attribute].type == "boolean"
                    read_devconf.append((family, int(index), m.attribute, boolean))
                continue
            encoder = declared_encoder(m)
            decode = codec(m).decode
            if m.place == INFO:
                info.setdefault(group, {})[m.param] = encoder
                table = read_info.setdefault(group, {})
                table[nla.number(m.nla)] = (m.attribute, decode)
                if m.nla6:
                    table[nla.number(m.nla6)] = (m.attribute, decode)
            elif m.place == PORT:
                read_port[nla.number(m.nla)] = (m.attribute, decode)
            if m.mutable:
                settings[m.attribute] = Setting(m.place, encoder, group if m.place == INFO else "",
                                                m.param, _reset(m), m.at_create)
    return info, settings, read_info, read_port, tuple(read_devconf)


# read_parse._inet6 reads disable-ipv6 itself (and addr-gen-mode beside it).
_HAND_READ = frozenset({"disable-ipv6"})
INFO_DATA, SETTINGS, READ_INFO, READ_PORT, READ_DEVCONF = _derive()
KERNEL_DEFAULTS = kernel_defaults()

# What no declaration says.
INFO_DATA["vxlan"]["external"] = _u8(IFLA_VXLAN_COLLECT_METADATA)
# Every kind netcfg creates has a table, empty when it declares nothing
# (dummy; veth, whose peer is encode._veth_peer's).
for _kind in registry.interface_kinds():
    if _kind.creatable:
        INFO_DATA.setdefault(_kind.name, {})
SETTINGS.update({
    # Not a config attribute: the diff implies it on a port with a VLAN-to-VNI
    # map (diff.VLAN_TUNNEL), as ifupdown2 does.
    "vlan_tunnel": Setting(PORT, _u8(IFLA_BRPORT_VLAN_TUNNEL), reset=False),
})
