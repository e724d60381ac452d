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

from netcfg.kinds.base import LOWER, Kind, Reference
from netcfg.kinds.tunnel import (ANY, ANY_REMOTE_KIND, DEV, ENCAPLIMIT, ENDPOINT, IGNORE_DF,
                                  LOCAL, LOCAL_DEV, MODE, PMTUDISC, SETTINGS, TOS, TTL)
from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.spec import group_attributes

# The table's words (the schema's param) and the tunnel-* attribute of each.
# "link" (IFLA_*_LINK, tunnel-dev) is sent by the diff as the lower device
# (params "link", as the vxlan's vxlan-physdev: netlink/encode.py) and read back as an ifindex,
# which kernel/read.py names.
LINK = "link"
WORDS = {"local": LOCAL, "remote": ENDPOINT, "ttl": TTL, "tos": TOS, LINK: DEV,
         "pmtudisc": PMTUDISC, "ignore_df": IGNORE_DF}
# The kernel's values of the DF settings when none is sent (kinds/tunnel.py
# leaves them out of the model): read back, they are left out too.
DF_DEFAULTS = {"pmtudisc": 1, "ignore_df": 0}
# ip6tnl's IFLA_IPTUN_PROTO carries the mode (IPPROTO_IPV6, IPPROTO_IPIP, 0).
PROTO = "proto"
# `ip -6 tunnel add` gives IPv6 tunnels a hop limit of 64 (iproute2's
# DEFAULT_TNL_HOP_LIMIT); the kernel alone would leave 0 (inherit).
IPV6_HOP_LIMIT = 64
# IPv6 tunnels' encapsulation limit (IFLA_*_ENCAP_LIMIT and the
# IP6_TNL_F_IGN_ENCAP_LIMIT bit of IFLA_*_FLAGS, include/uapi/linux/ip6_tunnel.h):
# iproute2 gives a new tunnel 4 (IPV6_DEFAULT_TNL_ENCAP_LIMIT), and
# `encaplimit none` sets the flag (no option in the packets); the kernel
# alone would leave 0.
ENCAP_LIMIT, FLAGS = "encaplimit", "flags"
IPV6_DEFAULT_TNL_ENCAP_LIMIT = 4
IP6_TNL_F_IGN_ENCAP_LIMIT = 0x1
NO_ENCAP_LIMIT = "none"
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
            and attrs.get(ENDPOINT) in (None, ANY) and LOCAL not in attrs)


def _local_text(obj: ConfigObject) -> str:
    if LOCAL_DEV in obj.attrs and LOCAL not in obj.attrs:
        return f"{LOCAL_DEV} {obj.attrs[LOCAL_DEV]}"
    return obj.attrs.get(LOCAL, ANY)


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

    def check_model(self, model: Model, report) -> None:
        """Two tunnels of this kind with the same local and remote addresses
        in one namespace: the kernel keeps one (ip_tunnel_find,
        ip6_tnl_locate, ip6gre_tunnel_find match on them, whatever the
        mode: an ip6ip6 and an ipip6 collide) and refuses the second with
        EEXIST. The underlay device (tunnel-dev) is part of the match too;
        netcfg sends no key, the other part."""
        seen: dict[tuple, ConfigObject] = {}
        for obj in model.interfaces.values():
            if obj.kind != self.name or obj.implicit:
                continue
            # tunnel-local-dev: the same device gives the same address.
            ends = (obj.netns, _local_text(obj), obj.attrs.get(ENDPOINT, ANY),
                    obj.attrs.get(DEV))
            first = seen.setdefault(ends, obj)
            if first is not obj:
                report.error(obj.where(ENDPOINT),
                             f"{obj.label()}: {first.name} ({first.where(ENDPOINT)}) is "
                             f"{'an' if self.name[0] in 'aeiou' else 'a'} {self.name} tunnel "
                             f"with the same local ({ends[1]}) and remote "
                             f"({ends[2]}) addresses; the kernel keeps one tunnel of a kind "
                             f"per pair and refuses the second (File exists). Give one "
                             f"another tunnel-local or tunnel-endpoint, or remove one",
                             ENDPOINT)

    def attribute_groups(self) -> tuple[str, ...]:
        return (self.name, "tunnel", *self.traits)

    def references(self, obj: ConfigObject):
        dev = obj.attrs.get(DEV)
        if dev is not None:
            # IFLA_*_LINK is an ifindex of the tunnel's own namespace.
            yield Reference(DEV, LOWER, IFACE, obj.netns, dev, obj.where(DEV))

    def _table(self) -> dict[str, str]:
        """param -> this kind's internal attribute, from its schema."""
        return {spec.kernel.param: name for name, spec in group_attributes(self.name).items()}

    def create_params(self, obj: ConfigObject) -> dict[str, Any]:
        """Equivalent to `ip [-6] tunnel add NAME mode MODE remote R local L ttl T tos S
        [encaplimit N|none]`."""
        params: dict[str, Any] = {}
        limit = obj.attrs.get(ENCAPLIMIT, IPV6_DEFAULT_TNL_ENCAP_LIMIT)
        for param in self._table():
            attribute = WORDS.get(param)
            if param == ENCAP_LIMIT:
                params[param] = (IPV6_DEFAULT_TNL_ENCAP_LIMIT if limit == NO_ENCAP_LIMIT
                                 else int(limit))
            elif param == FLAGS:
                params[param] = IP6_TNL_F_IGN_ENCAP_LIMIT if limit == NO_ENCAP_LIMIT else 0
            elif attribute in obj.attrs:
                if param in DF_DEFAULTS:
                    params[param] = int(obj.attrs[attribute])
                elif obj.attrs[attribute] != ANY:   # remote any: the kernel's when not sent
                    params[param] = obj.attrs[attribute]
            elif param == "ttl" and self.ipv6:
                params[param] = IPV6_HOP_LIMIT
            elif param == PROTO:
                params[param] = obj.attrs.get(MODE, self.mode)
        return params

    def read_back(self, attrs: dict, notes: list[str], name: str) -> None:
        table = self._table()
        if FLAGS in table:
            flags = attrs.pop(table[FLAGS], None) or 0
            limit = attrs.pop(table[ENCAP_LIMIT], None)
            if flags & IP6_TNL_F_IGN_ENCAP_LIMIT:
                attrs[ENCAPLIMIT] = NO_ENCAP_LIMIT
            elif limit is not None:
                attrs[ENCAPLIMIT] = limit
        for param, internal in table.items():
            if param in (FLAGS, ENCAP_LIMIT):
                continue
            value = attrs.pop(internal, None)
            if param == PROTO:
                attrs[MODE] = value or "any"
            elif param in DF_DEFAULTS:
                if value is not None and value != DF_DEFAULTS[param]:
                    attrs[WORDS[param]] = bool(value)
            elif param == LINK:
                if value:   # 0: no underlay device
                    attrs[DEV] = value   # an ifindex until kernel/read.py names it
            elif value is not None and value not in UNSPECIFIED:
                attrs[WORDS[param]] = value
        attrs.setdefault(MODE, self.mode)
        if self.name == ANY_REMOTE_KIND:
            attrs.setdefault(ENDPOINT, ANY)   # a 6to4 tunnel (tunnel.py)
