"""The kernel's tunnel kinds, one object each (tunnel.py says how a stanza
becomes one of them).

Each kind's schema (schemas/kinds/<kind>.json) declares its netlink table
under netcfg's internal names (``gre-local`` for IFLA_GRE_LOCAL): the
tunnel-* attributes a config writes are shared by every kind, and an
attribute has one owner, so the tables cannot carry the shared names.
create_params and read_back translate between the two.
"""

from __future__ import annotations

from typing import Any

from netcfg.kinds.base import Kind
from netcfg.kinds.tunnel import ENDPOINT, LOCAL, MODE, SETTINGS, TOS, TTL
from netcfg.model.model import ConfigObject
from netcfg.spec import group_attributes

# The table's words (the schema's param) and the tunnel-* attribute of each.
WORDS = {"local": LOCAL, "remote": ENDPOINT, "ttl": TTL, "tos": TOS}
# ip6tnl's IFLA_IPTUN_PROTO carries the mode (IPPROTO_IPV6, IPPROTO_IPIP, 0).
PROTO = "proto"
# `ip -6 tunnel add` gives IPv6 tunnels a hop limit of 64 (iproute2's
# DEFAULT_TNL_HOP_LIMIT); the kernel alone would leave 0 (inherit).
IPV6_HOP_LIMIT = 64
UNSPECIFIED = frozenset({"0.0.0.0", "::"})
# The devices the kernel makes in every namespace when a tunnel module loads
# (each module's fallback device: it receives packets no other tunnel of its
# kind matches), by name, with their IFLA_INFO_KIND. They are the kernel's,
# as lo is: kernel/read.py leaves them out of what it reads. erspan0 comes
# with ip_gre, a kind netcfg does not make.
FALLBACK_DEVICES = {"gre0": "gre", "gretap0": "gretap", "erspan0": "erspan",
                    "tunl0": "ipip", "sit0": "sit", "ip_vti0": "vti", "ip6gre0": "ip6gre",
                    "ip6tnl0": "ip6tnl", "ip6_vti0": "vti6"}


def is_fallback_device(name: str, info_kind: str | None, attrs: dict) -> bool:
    """Whether a device read is a kernel's fallback tunnel device: its name
    and kind are one of FALLBACK_DEVICES, and it has no endpoint nor local
    address (read_back() dropped the unspecified ones). A tunnel someone
    named gre0 cannot exist next to the kernel's, and one with an endpoint
    is not the fallback device whatever its name."""
    return (info_kind is not None and FALLBACK_DEVICES.get(name) == info_kind
            and ENDPOINT not in attrs and LOCAL not in attrs)


class TunnelDevice(Kind):
    """One kernel tunnel kind: gre, gretap, ipip, sit, vti, ip6gre,
    ip6gretap, ip6tnl or vti6."""

    immutable_attributes = frozenset(SETTINGS)

    def __init__(self, name: str, mode: str, ipv6: bool, ethernet: bool, module: str):
        self.name = self.info_kind = name
        self.module_with_devices = module   # its fallback device, in every namespace
        self.mode = mode          # tunnel-mode of a device read back (ip6tnl: by its proto)
        self.ipv6 = ipv6
        if not ethernet:
            # No Ethernet header: nothing to bridge (gretap and ip6gretap are).
            self.traits = ("common",)

    def attribute_groups(self) -> tuple[str, ...]:
        return (self.name, "tunnel", *self.traits)

    def _table(self) -> dict[str, str]:
        """param -> this kind's internal attribute, from its schema."""
        return {spec.kernel.param: name for name, spec in group_attributes(self.name).items()}

    def create_params(self, obj: ConfigObject) -> dict[str, Any]:
        """Equivalent to `ip [-6] tunnel add NAME mode MODE remote R local L ttl T tos S`."""
        params: dict[str, Any] = {}
        for param in self._table():
            attribute = WORDS.get(param)
            if attribute in obj.attrs:
                params[param] = obj.attrs[attribute]
            elif param == "ttl" and self.ipv6:
                params[param] = IPV6_HOP_LIMIT
            elif param == PROTO:
                params[param] = obj.attrs.get(MODE, self.mode)
        return params

    def read_back(self, attrs: dict, notes: list[str], name: str) -> None:
        for param, internal in self._table().items():
            value = attrs.pop(internal, None)
            if param == PROTO:
                attrs[MODE] = value or "any"
            elif value is not None and value not in UNSPECIFIED:
                attrs[WORDS[param]] = value
        attrs.setdefault(MODE, self.mode)
