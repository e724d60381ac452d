"""`vrrp ID ADDRESS...` (ifupdown2's addressvirtual addon; ifupdown-ng's
vrrp executor): the macvlans a VRRP daemon (FRR's vrrpd) sends and answers
from, as ifupdown2 makes them, one per VRRP id and address family:

    auto eth0
    iface eth0
        address 192.168.10.2/24
        vrrp 10 192.168.10.1 fc00:192:168:10::1

is eth0 plus, up with it (as the config says them; `show` prints the same
less macvlan-protodown, which is not read back):

    iface vrrp4-eth0-10                  iface vrrp6-eth0-10
        macvlan-raw-device eth0              macvlan-raw-device eth0
        macvlan-mode bridge                  macvlan-mode bridge
        hwaddress 00:00:5e:00:01:0a          hwaddress 00:00:5e:00:02:0a
        address 192.168.10.1/32              address fc00:192:168:10::1/128
        address-metric 1024                  address-metric 1024
        accept-dad 0                         accept-dad 0
        dad-transmits 0                      dad-transmits 0
        addr-gen-mode none                   addr-gen-mode random
        macvlan-protodown yes                macvlan-protodown yes

RFC 5798's virtual router MACs; an address without a prefix is a host
address (ifupdown2's IPNetwork); IPv4's macvlan needs no link-local
(addrgenmode none), IPv6's sends its hellos from a random one. Several
lines with one id add to its macvlans. eth0's vrf and mtu go to them, as
for address-virtual (compile/build.py VRR_SETTINGS). Each is made with
protodown on, as ifupdown2 makes it: vrrpd clears it on the master router
(macvlan-protodown is set at creation only, never compared afterwards).

Names: ifupdown2 names them vrrp4-IFINDEX-ID after eth0's ifindex, which
the kernel gives eth0 when it is made; netcfg names every device at
compile time, before any kernel is read, and a name that changed with the
parent's ifindex would re-create the macvlans whenever eth0 is re-created.
So netcfg writes the parent's name, vrrp4-eth0-10, and where that passes
the kernel's 15 bytes, the first hex digits of the name's SHA-1 instead
(vrrp4-3f2a9c-10): plan/vrrp.py vrrp_name. FRR's vrrpd finds its macvlan by
lower device and MAC, not by name. On a host ifupdown2 set up, its
vrrp4-IFINDEX-ID for a line of the config is replaced by netcfg's (the
kernel refuses two up macvlans with one MAC on eth0): plan/vrrp.py
ifupdown2_vrrp.
"""

from __future__ import annotations

import ipaddress

from netcfg.compile.syntax import RawAttribute
from netcfg.model.errors import Report
from netcfg.plan.vrrp import vrrp_mac, vrrp_name

VRRP = "vrrp"
# The VRR settings address-virtual gives its macvlans, less the mode.
SETTINGS = (("address-metric", "1024"), ("accept-dad", "0"), ("dad-transmits", "0"))
# addrgenmode: IPv4's macvlan needs no link-local; IPv6's hellos need one.
ADDR_GEN_MODE = {4: "none", 6: "random"}
IPV6_MIN_MTU = 1280


def vrrp_macvlans(name: str, raws: list[RawAttribute], report: Report
                  ) -> tuple[list[RawAttribute], dict[str, list[RawAttribute]]]:
    """(the stanza's lines less its vrrp lines, {macvlan name: its lines})."""
    kept: list[RawAttribute] = []
    made: dict[str, list[RawAttribute]] = {}
    inherited = [r for r in raws if r.name in ("vrf", "mtu")]
    mtus = [r.value for r in inherited if r.name == "mtu"]
    # Below 1280 the kernel has no IPv6 on the device, and no DAD sysctls.
    below_ipv6_mtu = bool(mtus) and mtus[-1].isdigit() and int(mtus[-1]) < IPV6_MIN_MTU
    for raw in raws:
        if raw.name != VRRP:
            kept.append(raw)
            continue
        words = raw.value.split()
        if len(words) < 2 or not words[0].isdigit() or not 1 <= int(words[0]) <= 255:
            report.error(raw.loc, f"{name}: vrrp needs a virtual router id (1-255) and its "
                         f"addresses, as in 'vrrp 10 192.0.2.1 2001:db8::1'; got "
                         f"'{raw.value}'", VRRP)
            continue
        vrid = int(words[0])
        by_family: dict[int, list[str]] = {}
        for word in words[1:]:
            try:
                address = ipaddress.ip_interface(word)
            except ValueError:
                report.error(raw.loc, f"{name}: vrrp {vrid}: '{word}' is not an IPv4 or IPv6 "
                             f"address", VRRP)
                continue
            by_family.setdefault(address.version, []).append(str(address))
        for family, addresses in by_family.items():
            macvlan = vrrp_name(name, family, vrid)
            lines = made.get(macvlan)
            if lines is None:
                lines = made[macvlan] = [
                    RawAttribute("macvlan-raw-device", name, raw.loc),
                    RawAttribute("macvlan-mode", "bridge", raw.loc),
                    RawAttribute("macvlan-protodown", "yes", raw.loc),
                    RawAttribute("hwaddress", vrrp_mac(family, vrid), raw.loc),
                    *(RawAttribute(r.name, r.value, raw.loc) for r in inherited),
                    *(RawAttribute(a, v, raw.loc) for a, v in SETTINGS
                      if a == "address-metric" or not below_ipv6_mtu),
                    RawAttribute("addr-gen-mode", ADDR_GEN_MODE[family], raw.loc)]
            lines.append(RawAttribute("address", " ".join(addresses), raw.loc))
    return kept, made
