"""Every netlink attribute name and number netcfg uses, checked against
pyroute2's nla_map tables: a second source besides linux/if_link.h (which
netcfg/netlink/nla.py was written from), and pyroute2's payload types
against the declared codecs' widths.

pyroute2 is a test dependency only (setup.cfg's test extras): importing it
costs more than netcfg's whole check of a small config, and its full parse
of a link ~1 ms (docs/architecture.md, "pyroute2"), so the runtime keeps its
own codecs.
"""

from __future__ import annotations

import pytest

from netcfg.netlink import nla, nlmsg
from netcfg.spec import all_groups, kernel_mappings

pyroute2 = pytest.importorskip("pyroute2")
from pyroute2.netlink.rtnl.ifinfmsg import ifinfmsg  # noqa: E402
from pyroute2.netlink.rtnl.ifinfmsg.plugins import bond, ipvlan, vlan, vrf, vti, vxlan  # noqa: E402

# Names pyroute2 (0.9) does not have yet; each checked against if_link.h only.
NOT_IN_PYROUTE2 = {"IFLA_IPVLAN_FLAGS", "IFLA_BR_MULTI_BOOLOPT", "IFLA_VXLAN_VNIFILTER"}

# Payload types of pyroute2 that say a width, and the codecs of that width.
_WIDTHS = {"uint8": {"u8", "bool"}, "uint16": {"u16"}, "uint32": {"u32", "bool32"},
           "be16": {"be16"}, "uint64": {"u64"}}


def _table(nla_class) -> dict[str, tuple[int, str]]:
    """name -> (number, pyroute2 type) of an nla_map (positional or numbered)."""
    out = {}
    for number, entry in enumerate(nla_class.nla_map):
        if isinstance(entry[0], int):
            number, name, kind = entry[0], entry[1], entry[2]
        else:
            name, kind = entry[0], entry[1]
        out[name] = (number, kind if isinstance(kind, str) else "")
    return out


def pyroute2_tables() -> dict[str, dict[str, tuple[int, str]]]:
    info = ifinfmsg.ifinfo
    return {"IFLA_": _table(ifinfmsg), "IFLA_BR_": _table(info.bridge_data),
            "IFLA_BRPORT_": _table(info.bridge_slave_data), "IFLA_BOND_": _table(bond.bond),
            "IFLA_VXLAN_": _table(vxlan.vxlan), "IFLA_VLAN_": _table(vlan.vlan),
            "IFLA_MACVLAN_": _table(info.macvlan_data), "IFLA_IPVLAN_": _table(ipvlan.ipvlan),
            "IFLA_VRF_": _table(vrf.vrf), "IFLA_GRE_": _table(info.gre_data),
            # pyroute2 spells linux/if_tunnel.h's IFLA_IPTUN_* as IFLA_IPIP_*.
            "IFLA_IPTUN_": {name.replace("IFLA_IPIP_", "IFLA_IPTUN_"): entry
                            for name, entry in _table(info.ipip_data).items()},
            "IFLA_VTI_": _table(vti.vti),
            "IFLA_INET6_": _table(ifinfmsg.af_spec_inet.inet6)}


def _lookup(tables, name: str) -> tuple[int, str] | None:
    for prefix in sorted(tables, key=len, reverse=True):
        if name.startswith(prefix):
            return tables[prefix].get(name)
    raise AssertionError(f"{name}: no pyroute2 table for its prefix")


def declared_names() -> list[tuple[str, str, str, str]]:
    """(group, attribute, nla name, codec width) of every schema declaration."""
    out = []
    for group in all_groups():
        for m in kernel_mappings(group):
            width = m.width if m.codec in ("choice", "centiseconds") else m.codec
            for name in (m.nla, m.nla6):
                if name:
                    out.append((group, m.attribute, name, width))
    return out


def test_every_declared_attribute_number_agrees_with_pyroute2():
    tables = pyroute2_tables()
    checked = 0
    for group, attribute, name, width in declared_names():
        ours = nla.number(name)
        theirs = _lookup(tables, name)
        if theirs is None:
            assert name in NOT_IN_PYROUTE2, f"{group}.json {attribute}: {name} unknown to pyroute2"
            continue
        assert ours == theirs[0], f"{group}.json {attribute}: {name} is {ours}, pyroute2 {theirs}"
        if theirs[1] in _WIDTHS and width in {w for ws in _WIDTHS.values() for w in ws}:
            assert width in _WIDTHS[theirs[1]], \
                f"{group}.json {attribute}: codec {width}, pyroute2 says {theirs[1]}"
        checked += 1
    assert checked > 60


def test_every_enum_name_pyroute2_knows_has_its_number():
    """nla.py's enums (the kernel's, in order) against pyroute2's, name by name."""
    tables = pyroute2_tables()
    for prefix, enum in nla.ENUMS.items():
        if prefix not in tables:
            continue
        for name, number in enum.items():
            theirs = tables[prefix].get(name)
            if theirs is not None:
                assert theirs[0] == number, f"{name}: ours {number}, pyroute2 {theirs[0]}"


def test_nlmsg_constants_agree_with_pyroute2():
    tables = pyroute2_tables()
    checked = 0
    for name in dir(nlmsg):
        if not name.startswith("IFLA_") or not isinstance(getattr(nlmsg, name), int):
            continue
        try:
            theirs = _lookup(tables, name)
        except AssertionError:
            continue   # nests pyroute2 keeps elsewhere (IFLA_INFO_*, IFLA_BRIDGE_*)
        if theirs is not None:
            assert getattr(nlmsg, name) == theirs[0], f"nlmsg.{name}"
            checked += 1
    assert checked > 20
