"""The macvlans of `vrrp ID ADDRESS...` lines, as netcfg and ifupdown2 name
them, and which devices of the kernel are ifupdown2's for this config's
lines, so that switching a host from ifupdown2 replaces them (docs/compat.md,
"vrrp").

netcfg names the macvlan of `vrrp 10 ...` on eth0 vrrp4-eth0-10 (vrrp_name,
at compile time: compile/vrrp.py); ifupdown2's addressvirtual addon names it
vrrp4-IFINDEX-10 after eth0's ifindex (`get_vrrp_prefix`). Both give it
RFC 5798's virtual router MAC on eth0, and the kernel refuses a second up
macvlan with one MAC on one lower device (EADDRINUSE): left in place,
ifupdown2's made the takeover's first apply fail and revert. Such a device
is named by the config (ifupdown2 made it from the same line), so the
managed view takes it in and the diff deletes it before netcfg's is made.
Pure: the kernel's ifindexes come in as a mapping.
"""

from __future__ import annotations

import hashlib
from typing import Collection, Mapping

from netcfg.model.model import ConfigObject, Model

Key = tuple[str, str]

IFNAMSIZ = 16
MACVLAN = "macvlan"
RAW_DEVICE, RAW_NETNS, HWADDRESS = "macvlan-raw-device", "macvlan-raw-netns", "hwaddress"
PROTODOWN = "macvlan-protodown"
# RFC 5798's virtual router MAC: 00:00:5e:00:01:ID (IPv4), 00:00:5e:00:02:ID (IPv6).
MAC_FAMILY = {4: "01", 6: "02"}
_FAMILY_OF_MAC = {v: k for k, v in MAC_FAMILY.items()}
_MAC_PREFIX = "00:00:5e:00:"


def vrrp_name(parent: str, family: int, vrid: int) -> str:
    """netcfg's: vrrpF-PARENT-ID, or with a hash of PARENT where that is too long."""
    name = f"vrrp{family}-{parent}-{vrid}"
    if len(name.encode()) < IFNAMSIZ:
        return name
    room = IFNAMSIZ - 1 - len(f"vrrp{family}--{vrid}")
    return f"vrrp{family}-{hashlib.sha1(parent.encode()).hexdigest()[:room]}-{vrid}"


def vrrp_mac(family: int, vrid: int) -> str:
    return f"{_MAC_PREFIX}{MAC_FAMILY[family]}:{vrid:02x}"


def ifupdown2_name(ifindex: int, family: int, vrid: int) -> str:
    """ifupdown2's (addons/addressvirtual.py): vrrpF-IFINDEX-ID."""
    return f"vrrp{family}-{ifindex}-{vrid}"


def vrrp_macvlan(obj: ConfigObject) -> tuple[str, int, int] | None:
    """(parent, family, id) when ``obj`` is the macvlan of a `vrrp` line as
    compile/vrrp.py makes it: its name is netcfg's for its lower device,
    family and id, and its MAC that id's VRRP MAC. None otherwise."""
    if obj.kind != MACVLAN or RAW_NETNS in obj.attrs:
        return None
    parent, mac = obj.attrs.get(RAW_DEVICE), str(obj.attrs.get(HWADDRESS, "")).lower()
    if not isinstance(parent, str) or not mac.startswith(_MAC_PREFIX):
        return None
    family_hex, _, id_hex = mac[len(_MAC_PREFIX):].partition(":")
    family = _FAMILY_OF_MAC.get(family_hex)
    if family is None or len(id_hex) != 2:
        return None
    try:
        vrid = int(id_hex, 16)
    except ValueError:
        return None
    if not 1 <= vrid <= 255 or obj.name != vrrp_name(parent, family, vrid):
        return None
    return parent, family, vrid


def ifupdown2_vrrp(desired: Model, current: Model, ifindex: Mapping[str, Mapping[str, int]],
                   managed: Mapping[str, Collection[str]]) -> dict[Key, Key]:
    """ifupdown2's macvlans for this config's vrrp lines, each with the key
    of netcfg's macvlan that replaces it: devices netcfg did not make and the
    config does not declare that are a macvlan, named exactly
    vrrpF-<ifindex of X>-ID, whose lower device is X in their own namespace
    and whose MAC is that id's VRRP MAC, where X's stanza has the line
    `vrrp ID` of family F. Anything else is not ifupdown2's to replace."""
    out: dict[Key, Key] = {}
    for key, obj in desired.interfaces.items():
        origin = vrrp_macvlan(obj)
        if origin is None:
            continue
        netns, (parent, family, vrid) = key[0], origin
        index = ifindex.get(netns, {}).get(parent)
        if index is None:
            continue
        theirs = (netns, ifupdown2_name(index, family, vrid))
        cur = current.interfaces.get(theirs)
        if (cur is None or theirs in desired.interfaces or theirs[1] in managed.get(netns, ())
                or cur.kind != MACVLAN or RAW_NETNS in cur.attrs
                or cur.attrs.get(RAW_DEVICE) != parent
                or str(cur.attrs.get(HWADDRESS, "")).lower() != vrrp_mac(family, vrid)):
            continue
        out[theirs] = key
    return out


def replaced_by(name: str, lower: str | None, model: Model, netns: str = ""
                ) -> ConfigObject | None:
    """For `query --check`'s sentence: netcfg's macvlan in ``model`` that
    replaces device ``name`` on ``lower`` when ``name`` has ifupdown2's form
    vrrpF-IFINDEX-ID for it (the plan deletes such a device only when
    ifupdown2_vrrp matched it against the kernel), else None."""
    parts = name.split("-")
    if lower is None or len(parts) != 3 or parts[0] not in ("vrrp4", "vrrp6") \
            or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    family, vrid = int(parts[0][4]), int(parts[2])
    obj = model.iface(netns, vrrp_name(lower, family, vrid))
    return obj if obj is not None and vrrp_macvlan(obj) == (lower, family, vrid) else None
