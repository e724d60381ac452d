"""Round trip: model -> stanzas -> model gives the same model (hypothesis).

Models are generated from the schemas themselves, so a new attribute is
covered without touching this test: each attribute's strategy follows its
type, enum, range and x-netcfg-syntax.
"""

from __future__ import annotations

import ipaddress

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netcfg.compile.build import build_objects
from netcfg.compile.emit import emit_model
from netcfg.compile.parser import parse
from netcfg.compile.render import RenderedSource
from netcfg.kinds import registry
from netcfg.model.errors import Report
from netcfg.model.model import TARGET, ConfigObject, Model
from netcfg.spec import AttributeSpec, group_attributes

ifname = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True).filter(lambda n: n != "lo")
nsname = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)
ipv4 = st.integers(1, 2**32 - 2).map(lambda n: str(ipaddress.IPv4Address(n)))
ipv6 = st.integers(1, 2**128 - 2).map(lambda n: str(ipaddress.IPv6Address(n)))
ip = ipv4 | ipv6
DOTTED_QUAD = "^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$"
BROADCAST = "^([0-9]+[.][0-9]+[.][0-9]+[.][0-9]+|[-+])$"


def _iface_address():
    v4 = st.tuples(ipv4, st.integers(0, 32)).map(lambda t: str(ipaddress.ip_interface(f"{t[0]}/{t[1]}")))
    v6 = st.tuples(ipv6, st.integers(0, 128)).map(lambda t: str(ipaddress.ip_interface(f"{t[0]}/{t[1]}")))
    return v4 | v6


def _vlan_range(high):
    return st.tuples(st.integers(1, high), st.integers(0, 5)).map(
        lambda t: str(t[0]) if t[1] == 0 or t[0] + t[1] > high else f"{t[0]}-{t[0] + t[1]}")


def _route():
    def make(t):
        net, via, dev, table, metric = t
        route = {"to": str(ipaddress.ip_network(net, strict=False))}
        version = ipaddress.ip_network(route["to"]).version
        if via and ipaddress.ip_address(via).version == version:
            route["via"] = via
        if dev or "via" not in route:
            route["dev"] = dev or "eth0"
        if table:
            route["table"] = table
        if metric is not None:
            route["metric"] = metric
        return route
    return st.tuples(_iface_address(), st.none() | ip, st.none() | ifname,
                     st.none() | st.integers(1, 5000), st.none() | st.integers(0, 100)).map(make)


SYNTAX = {
    "names": st.lists(ifname, min_size=1, max_size=4, unique=True),
    "words": st.lists(st.from_regex(r"iqn\.2024-01\.com\.example:[a-z]{1,5}", fullmatch=True),
                      min_size=1, max_size=2),
    "address": st.lists(_iface_address(), min_size=1, max_size=3),
    "ip": st.lists(ip, min_size=1, max_size=2),
    "nameservers": st.lists(ip, min_size=1, max_size=2),
    "vlan-list": st.lists(_vlan_range(4094), min_size=1, max_size=3),
    "vni-map": st.lists(st.integers(1, 4000).map(lambda v: f"{v}={v + 10000}"), min_size=1,
                        max_size=3),
    "mac": st.binary(min_size=6, max_size=6).map(lambda b: ":".join(f"{x:02x}" for x in b)),
    "route": st.lists(_route(), min_size=1, max_size=2),
    "portal": st.lists(ipv4.map(lambda a: f"{a}:3260"), min_size=1, max_size=2),
    "lun": st.lists(st.tuples(st.integers(0, 255), ifname).map(
        lambda t: {"lun": t[0], "volume": t[1]}), min_size=1, max_size=2),
    "size": st.integers(1, 2**20).map(lambda n: n * 512),
    "address-label": st.lists(st.tuples(ifname, ipv4).map(lambda t: f"{t[0]}:1 {t[1]}/24"),
                              min_size=1, max_size=2),
    "string": st.from_regex(r"[A-Za-z0-9._-]{1,8}( [A-Za-z0-9._-]{1,8}){0,3}", fullmatch=True),
}


def value_strategy(spec: AttributeSpec):
    schema = spec.schema
    if spec.syntax == "string" and spec.type == "array":   # a line per item (wireguard-peer)
        return st.lists(SYNTAX["string"], min_size=1, max_size=3)
    if spec.syntax in SYNTAX:
        return SYNTAX[spec.syntax]
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "oneOf" in schema or "anyOf" in schema or isinstance(schema.get("type"), list):
        return st.integers(1, 200)
    if spec.type == "boolean":
        return st.booleans()
    if spec.type == "integer":
        return st.integers(schema.get("minimum", 0), min(schema.get("maximum", 2**31), 2**31))
    if spec.type == "array":
        return st.lists(ifname, min_size=1, max_size=3)
    if schema.get("pattern") == DOTTED_QUAD:   # pointopoint
        return ipv4
    if schema.get("pattern") == BROADCAST:     # an address, or iproute2's + and -
        return st.one_of(ipv4, st.sampled_from(["+", "-"]))
    if "pattern" in schema:
        return st.from_regex(r"/[a-z]{1,8}(/[a-z0-9.]{1,8}){0,2}", fullmatch=True) \
            if schema["pattern"].startswith("^/") else nsname
    return st.from_regex(r"/[a-z]{1,8}(/[a-z0-9.]{1,8}){0,2}", fullmatch=True)


# Attributes the builder consumes rather than stores, or that are folded away
# (tunnel-local-dev becomes tunnel-local where the config gives the device an
# address, and is a warning where it does not: tests/unit/test_ng_tunnel_keys.py).
NOT_STORED = {"netns", "link-type", "netmask", "tunnel-local-dev"}


@st.composite
def interface(draw, kind_name: str):
    kind = registry.kind(kind_name)
    obj = ConfigObject(section=kind.section, name=draw(ifname), kind=kind_name,
                       netns=draw(st.sampled_from(["", "t1"])), auto=draw(st.booleans()))
    for group in kind.attribute_groups():
        for name, spec in group_attributes(group).items():
            if name not in NOT_STORED and draw(st.integers(0, 3)) == 0:
                obj.attrs[name] = draw(value_strategy(spec))
    for name in kind.defining_attributes[:1]:
        if not any(a in obj.attrs for a in kind.defining_attributes) and not kind.link_type:
            obj.attrs[name] = draw(value_strategy(group_attributes(kind.name)[name]))
    return obj


def _comparable(model: Model):
    def one(o: ConfigObject):
        return (o.section, o.kind, o.netns, o.name, o.auto, o.attrs)
    return sorted((one(o) for o in model.objects()), key=repr)


# The kernel's tunnel kinds (gre, sit, ...) hold their settings under internal
# names that only read-back writes (a config writes tunnel-* lines, which the
# compiler turns into one of them), so drawing those names at random makes
# stanzas no config or `show` writes. Their round trip is the golden case
# ok-ifupdown-tunnels and tests/vm/test_vm_tunnels.py (show | apply sends 0).
# Known gap: a generator that draws tunnel-* lines for them.
TUNNEL_KERNEL_KINDS = {"gre", "gretap", "ipip", "sit", "vti", "ip6gre", "ip6gretap", "ip6tnl",
                       "vti6"}
KINDS = [k.name for k in registry.interface_kinds()
         if k.name not in ("loopback",) and k.name not in TUNNEL_KERNEL_KINDS]


def _assert_emit_parse_round_trips(model: Model) -> None:
    """emit_model's text parses and builds back into the same objects, with no diagnostics."""
    text = emit_model(model)
    report = Report()
    parsed = parse([RenderedSource("gen.tmpl", text, None)], lambda p, l: [], report)
    again = build_objects(parsed, report)
    assert not report.diagnostics, (text, report.sorted())
    assert _comparable(again) == _comparable(model), text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=st.lists(st.sampled_from(KINDS).flatmap(interface), max_size=5))
def test_stanzas_round_trip(objs):
    model = Model()
    names = set()
    for obj in objs:
        if obj.name in names:
            continue  # `auto NAME` applies to a name in every namespace
        names.add(obj.name)
        model.interfaces[obj.key] = obj
    _assert_emit_parse_round_trips(model)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_volume_and_target_round_trip(data):
    model = Model()
    for section in ("volume", "target"):
        kind = registry.kind(section)
        name = "iqn.2024-01.com.example:t1" if section == TARGET else "vol0"
        obj = ConfigObject(section=section, name=name, kind=section,
                           netns="t1" if section == TARGET else "")
        for attr, spec in group_attributes(kind.name).items():
            if attr not in NOT_STORED and data.draw(st.booleans()):
                obj.attrs[attr] = data.draw(value_strategy(spec))
        model.section(section)[name] = obj
    _assert_emit_parse_round_trips(model)
