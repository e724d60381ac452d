"""An IP tunnel: GRE, IP-in-IP, SIT, VTI and their IPv6 forms.

    auto gre1                          # ifupdown2's tunnel addon
    iface gre1
        tunnel-mode gre
        tunnel-endpoint 198.51.100.2
        tunnel-local 192.0.2.1
        tunnel-ttl 64
        address 10.9.0.1/30

    auto he-ipv6                       # ifupdown's method: mode, endpoint,
    iface he-ipv6 inet6 v4tunnel       # local, ttl are the tunnel-* lines
        endpoint 216.66.80.30          # (compile/legacy_tunnel.py)
        local 192.0.2.1
        address 2001:db8:1f0a::2/64

The stanza's kind is ``tunnel`` while it is compiled; its tunnel-mode
then names the kernel's kind (IFLA_INFO_KIND gre, ipip, ip6tnl...), one
module each (tunnel_kinds.py), which is what is created, read back and
compared: the kernel keeps the mode in the kind, and the netlink
attributes of each family (IFLA_GRE_*, IFLA_IPTUN_*, IFLA_VTI_*) differ.
Every setting is fixed at creation, as `ip tunnel change` cannot change a
mode; a change re-creates the device (ifupdown2 re-creates it on a mode
change and runs `ip tunnel change` otherwise).
"""

from __future__ import annotations

import ipaddress

from netcfg.kinds.base import Kind
from netcfg.model.model import ConfigObject

MODE, ENDPOINT, LOCAL, TTL, TOS, DEV = ("tunnel-mode", "tunnel-endpoint", "tunnel-local",
                                       "tunnel-ttl", "tunnel-tos", "tunnel-dev")
ENCAPLIMIT = "tunnel-encaplimit"
# ifupdown-ng's: the local address is a device's, read when netcfg applies
# (apply/tunnel_local.py turns it into tunnel-local before the diff).
LOCAL_DEV = "tunnel-local-dev"
PMTUDISC, IGNORE_DF = "tunnel-pmtudisc", "tunnel-ignore-df"
# tunnel-endpoint any: a sit tunnel to every IPv4 host (remote any, the
# kernel's 0.0.0.0): ifupdown's inet6 6to4 method, RFC 3056's relay-less
# tunnel, whose IPv6 packets name their IPv4 destination. Only sit: the
# other kinds would only receive.
ANY, ANY_REMOTE_KIND = "any", "sit"
SETTINGS = (MODE, ENDPOINT, LOCAL, TTL, TOS, ENCAPLIMIT, DEV, PMTUDISC, IGNORE_DF)
# tunnel-mode -> (the kernel's kind, the outer packets' IP version).
MODES = {"gre": ("gre", 4), "gretap": ("gretap", 4), "ipip": ("ipip", 4), "sit": ("sit", 4),
         "vti": ("vti", 4), "ip6gre": ("ip6gre", 6), "ip6gretap": ("ip6gretap", 6),
         "ip6ip6": ("ip6tnl", 6), "ipip6": ("ip6tnl", 6), "any": ("ip6tnl", 6),
         "vti6": ("vti6", 6)}
# Kinds whose packets carry no TTL/TOS of their own (XFRM sets them), and
# the IPv6 kinds, whose hop limit is tunnel-ttl and which have no TOS.
NO_TTL = frozenset({"vti", "vti6"})
NO_TOS = frozenset({"vti", "vti6", "ip6gre", "ip6gretap", "ip6tnl"})
# The kinds whose packets carry RFC 2473's encapsulation limit option.
ENCAP_LIMIT_KINDS = frozenset({"ip6gre", "ip6gretap", "ip6tnl"})
# The IPv4 kinds with path MTU discovery (the DF bit: IFLA_GRE_PMTUDISC,
# IFLA_IPTUN_PMTUDISC) and those with ignore-df (IFLA_GRE_IGNORE_DF).
PMTUDISC_KINDS = frozenset({"gre", "gretap", "ipip", "sit"})
IGNORE_DF_KINDS = frozenset({"gre", "gretap"})
ALL_KINDS = frozenset(k for k, _ in MODES.values())


class Tunnel(Kind):
    """The stanza's kind until complete() knows its kernel kind."""

    name = "tunnel"
    defining_attributes = (MODE,)
    creatable = False   # never reaches the plan: complete() gives the kernel's kind

    def complete(self, obj: ConfigObject, report) -> None:
        mode = obj.attrs.get(MODE)
        if mode is None:
            return   # a typo'd mode: the value check said so at its line
        kind, version = MODES[mode]
        for attribute, what in ((ENDPOINT, "the remote end's address"),
                                (LOCAL, "this host's address")):
            text = obj.attrs.get(attribute)
            if text is None or (attribute, text, kind) == (ENDPOINT, ANY, ANY_REMOTE_KIND):
                continue
            try:
                address = ipaddress.ip_address(text)
            except ValueError:
                report.error(obj.where(attribute),
                             f"{obj.label()}: {attribute} {text!r} is not an IP address; "
                             f"write {what}", attribute)
                del obj.attrs[attribute]
                continue
            if address.version != version:
                report.error(obj.where(attribute),
                             f"{obj.label()}: {attribute} {text} is IPv{address.version}, and "
                             f"tunnel-mode {mode} carries its packets over IPv{version}; "
                             f"write an IPv{version} address or another mode", attribute)
                del obj.attrs[attribute]
                continue
            obj.attrs[attribute] = str(address)
        if (obj.attrs.get(ENDPOINT) == ANY and LOCAL not in obj.attrs and LOCAL not in obj.locs
                and LOCAL_DEV not in obj.attrs):
            report.error(obj.where(ENDPOINT), f"{obj.label()}: a sit tunnel to any remote "
                         f"(6to4) needs 'tunnel-local ADDRESS' (ifupdown's local), the IPv4 "
                         f"address its packets leave from", LOCAL)
        if ENDPOINT not in obj.attrs and ENDPOINT not in obj.locs:
            # ifupdown2 and ifupdown require it: a tunnel to anywhere
            # (remote any) is a receive-only device, not what these files mean.
            report.error(obj.where(MODE), f"{obj.label()}: a tunnel needs 'tunnel-endpoint "
                         f"ADDRESS' (ifupdown's endpoint), the remote end", ENDPOINT)
        for attribute, kinds, why in (
                (TTL, NO_TTL, "an IPsec tunnel's packets get XFRM's"),
                (TOS, NO_TOS, "only IPv4 tunnels have a TOS"),
                (ENCAPLIMIT, ALL_KINDS - ENCAP_LIMIT_KINDS,
                 "only ip6gre, ip6gretap and ip6tnl (ip6ip6, ipip6, any) tunnels carry an "
                 "encapsulation limit"),
                (PMTUDISC, ALL_KINDS - PMTUDISC_KINDS,
                 "only gre, gretap, ipip and sit tunnels have path MTU discovery settings"),
                (IGNORE_DF, ALL_KINDS - IGNORE_DF_KINDS,
                 "only gre and gretap tunnels have ignore-df")):
            if attribute in obj.attrs and kind in kinds:
                report.error(obj.where(attribute), f"{obj.label()}: {attribute} does nothing "
                             f"on tunnel-mode {mode}: {why}; remove it", attribute)
                del obj.attrs[attribute]
        self._complete_df(obj, report)
        obj.kind = kind

    def _complete_df(self, obj: ConfigObject, report) -> None:
        """The DF settings in the kernel's terms: their defaults (pmtudisc on,
        ignore-df off) are left out, as read-back leaves them; the pair the
        kernel refuses is refused here. (iproute2 refuses nopmtudisc with a
        fixed ttl on `ip tunnel add` and `ip link add type ipip|sit`; the
        kernel takes it, and a sit tunnel made without a ttl reads back 64.)"""
        if obj.attrs.get(IGNORE_DF) and obj.attrs.get(PMTUDISC, True):
            # ipgre_netlink_parms: EINVAL for ignore_df while frag_off has IP_DF.
            report.error(obj.where(IGNORE_DF), f"{obj.label()}: {IGNORE_DF} needs path MTU "
                         f"discovery off: the kernel refuses ignore-df on a tunnel that sets "
                         f"DF (Invalid argument); add 'tunnel-pmtudisc no' (gre-flags "
                         f"nopmtudisc)", IGNORE_DF)
            del obj.attrs[IGNORE_DF]
        if obj.attrs.get(PMTUDISC) is True:
            del obj.attrs[PMTUDISC]
        if obj.attrs.get(IGNORE_DF) is False:
            del obj.attrs[IGNORE_DF]


KIND = Tunnel()
