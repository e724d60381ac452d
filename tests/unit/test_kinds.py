"""Unit tests of the kind modules' hooks, on hand-made objects and models.

The builder is not involved: each test builds ConfigObjects the way the
builder would leave them (typed attribute values, locations per attribute)
and calls one hook.
"""

from __future__ import annotations

import ast
import json
from netcfg.data import schemas_dir
from pathlib import Path

import jsonschema
import pytest
from builders import model

from netcfg.kinds import registry
from netcfg.kinds import veth as veth_mod
from netcfg.kinds import volume as volume_mod
from netcfg.kinds import vrf as vrf_mod
from netcfg.kinds.base import LOWER, PEER, SLAVE, VOLUME_REF, Reference
from netcfg.model.errors import Report
from netcfg.model.location import SourceLocation
from netcfg.model.model import IFACE, NETNS, TARGET, VOLUME, ConfigObject, Model

FILE = "interfaces"


def at(line: int) -> SourceLocation:
    return SourceLocation(FILE, line)


def obj(name, kind, attrs=None, *, line=1, netns="", section=IFACE, implicit=False):
    """An object declared at `line`, each attribute on the following lines."""
    attrs = dict(attrs or {})
    locs = {a: at(line + i + 1) for i, a in enumerate(attrs)}
    return ConfigObject(section, name, kind, netns=netns, attrs=attrs, locs=locs,
                        loc=at(line), implicit=implicit)




def run_check(o, m=None) -> list[tuple]:
    """(line, attribute, message) of every diagnostic of o's kind check."""
    report = Report()
    registry.kind(o.kind).check(o, m if m is not None else model(o), report)
    return [(d.loc.line, d.attribute, d.message) for d in report.diagnostics]


def run_check_model(kind: str, m: Model) -> list[tuple]:
    """Diagnostics of a kind's once-per-model check."""
    report = Report()
    registry.kind(kind).check_model(m, report)
    return [(d.loc.line, d.attribute, d.message) for d in report.diagnostics]


def run_complete(o) -> list[tuple]:
    report = Report()
    registry.kind(o.kind).complete(o, report)
    return [(d.loc.line, d.attribute, d.message) for d in report.diagnostics]


def refs(o) -> list[Reference]:
    return list(registry.kind(o.kind).references(o))


# --- schemas ---------------------------------------------------------------

SCHEMA_DIR = schemas_dir() / "kinds"


def schema_files():
    return sorted(p.name for p in SCHEMA_DIR.iterdir() if p.name.endswith(".json"))


def load(name):
    return json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))


def walk_properties(schema, path=""):
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}{name}", sub
        for nested in (sub, sub.get("items", {})):
            yield from walk_properties(nested, f"{path}{name}.")


def syntax_names() -> set[str]:
    # values.py imports the stanza parser, which may not exist yet while the
    # builder is written: read the SYNTAX keys from its source instead.
    import netcfg.compile as compile_pkg

    source = Path(compile_pkg.__file__).with_name("values.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "SYNTAX":
            return {k.value for k in node.value.keys}
    raise AssertionError("SYNTAX not found in values.py")


@pytest.mark.parametrize("filename", schema_files())
def test_schema_is_valid_and_every_property_described(filename):
    schema = load(filename)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == filename[:-5]
    assert schema.get("description")
    for path, sub in walk_properties(schema):
        assert isinstance(sub.get("description"), str) and sub["description"].strip(), \
            f"{filename}: {path} has no description"
        if "x-netcfg-syntax" in sub:
            assert sub["x-netcfg-syntax"] in syntax_names(), f"{filename}: {path}"
        for canonical in sub.get("x-netcfg-aliases", {}).values():
            if sub.get("type") == "integer":
                # A word for a number (bridge-mcrouter yes = 1, vxlan-ttl auto = 0).
                number = int(canonical)
                assert sub.get("minimum", number) <= number <= sub.get("maximum", number) \
                    and number in sub.get("enum", [number]), f"{filename}: {path} -> {canonical}"
            else:
                assert canonical in sub["enum"], f"{filename}: {path} alias -> {canonical}"


@pytest.mark.parametrize("module", registry.KIND_MODULES)
def test_every_kind_module_has_a_schema_file(module):
    kind = registry.kind(__import__(f"netcfg.kinds.{module}", fromlist=["KIND"]).KIND.name)
    assert f"{kind.name}.json" in schema_files()
    for attribute in kind.defining_attributes:
        assert attribute in load(f"{kind.name}.json")["properties"]


def test_attribute_names_are_unique_across_groups():
    owners: dict[str, list[str]] = {}
    for filename in schema_files():
        for name in load(filename).get("properties", {}):
            owners.setdefault(name, []).append(filename[:-5])
    shared = {name: groups for name, groups in owners.items() if len(groups) > 1}
    # `netns` is an iface attribute (common) and a target attribute; the two
    # never meet because targets take no trait groups. `batman-hop-penalty` is a
    # mesh's own (batadv) and a hard interface's (batadv-hardif, ifupdown-ng's
    # same line); the batadv kind does not take that trait.
    assert shared == {"netns": ["common", "target"],
                      "batman-hop-penalty": ["batadv-hardif", "batadv"]}
    assert "batadv-hardif" not in registry.kind("batadv").traits


def test_registry_kind_selection():
    assert set(registry.kinds_by_link_type()) == {"dummy", "veth", "macvlan", "ipvlan", "wireguard",
                                                  "batadv"}
    by_attribute = {a: k.name for a, k in registry.kinds_by_defining_attribute().items()}
    assert by_attribute["veth-peer-name"] == "veth"
    assert by_attribute["vlan-id"] == by_attribute["vlan-raw-device"] == "vlan"
    assert by_attribute["vxlan-vnifilter"] == "vxlan"
    assert by_attribute["vrf-table"] == "vrf"
    assert registry.kind_claiming_name("lo").name == "loopback"
    assert registry.kind_claiming_name("swp1.100").name == "vlan"
    assert registry.kind("netns").section == NETNS
    assert registry.kind("volume").section == VOLUME
    assert registry.kind("target").section == TARGET
    assert not registry.kind("physical").creatable and not registry.kind("loopback").creatable


def test_vrf_table_schema_accepts_number_and_auto():
    validator = jsonschema.Draft202012Validator(load("vrf.json")["properties"]["vrf-table"])
    for good in (1001, "auto"):
        assert validator.is_valid(good)
    for bad in (0, "1001", "red", "", -1, 4294967296):
        assert not validator.is_valid(bad)


# --- loopback, physical ------------------------------------------------------

def test_loopback_claims_only_lo():
    lo = registry.kind("loopback")
    assert lo.claims_name("lo") and not lo.claims_name("lo0") and not lo.claims_name("lo.5")
    assert lo.traits == ("common",) and lo.info_kind is None
    assert run_check(obj("lo", "loopback")) == []


def test_loopback_other_name_is_an_error():
    assert run_check(obj("foo", "loopback")) == [(1, None, (
        "foo: only lo is a loopback device; write 'iface lo inet loopback', or use "
        "'link-type dummy' for another device that holds addresses without a link"))]


# --- veth ------------------------------------------------------------------

def test_veth_references_and_implied_peer_in_other_namespace():
    v = obj("veth-t1", "veth", {"veth-peer-name": "eth0", "veth-peer-netns": "t1"})
    assert refs(v) == [Reference("veth-peer-name", PEER, IFACE, "t1", "eth0", at(2))]
    (peer,) = registry.kind("veth").implied(v, model(v))
    assert (peer.section, peer.netns, peer.name, peer.kind) == (IFACE, "t1", "eth0", "veth")
    assert peer.attrs == {"veth-peer-name": "veth-t1", "veth-peer-netns": ""}
    assert peer.implicit and peer.loc == at(2)
    m = model(v, peer)
    assert veth_mod.owner(v, m) and not veth_mod.owner(peer, m)
    assert registry.kind("veth").create_params(v) == {"peer": "eth0", "peer_netns": "t1"}
    assert registry.kind("veth").create_params(peer) == {"peer": "veth-t1", "peer_netns": ""}
    assert run_check(v, m) == [] and run_check(peer, m) == []


def test_veth_peer_defaults_to_same_namespace_and_not_implied_when_declared():
    a = obj("a", "veth", {"veth-peer-name": "b"}, netns="t1")
    b = obj("b", "veth", {"veth-peer-name": "a"}, netns="t1", line=10)
    m = model(a, b)
    assert refs(a)[0].netns == "t1"
    assert list(registry.kind("veth").implied(a, m)) == []
    # Both declared: exactly one creates the pair, whatever the order.
    assert veth_mod.owner(a, m) and not veth_mod.owner(b, m)
    assert run_check(a, m) == [] and run_check(b, m) == []


def test_veth_needs_a_peer_name():
    assert run_check(obj("v0", "veth")) == [(1, "veth-peer-name", (
        "v0: a veth needs the name of its other end; add 'veth-peer-name NAME' (and "
        "'veth-peer-netns NS' if the other end lives in another namespace)"))]


def test_veth_cannot_be_its_own_peer():
    v = obj("v0", "veth", {"veth-peer-name": "v0"})
    assert run_check(v) == [(2, "veth-peer-name", (
        "v0: veth-peer-name names this device itself; a veth's peer is a second device "
        "with another name"))]


def test_veth_peer_of_another_kind_is_reported_on_both_sides():
    v = obj("v0", "veth", {"veth-peer-name": "eth0", "veth-peer-netns": "t1"})
    eth0 = obj("eth0", "physical", netns="t1", line=10)
    assert run_check(v, model(v, eth0)) == [
        (2, "veth-peer-name",
         "v0: peer eth0 (netns t1) is declared as a physical, not a veth; add "
         "'veth-peer-name v0' to eth0, or name another device in veth-peer-name"),
        (10, "veth-peer-name",
         "eth0 (netns t1): v0 names it as its veth peer, but it is declared as a physical, "
         "not a veth; add 'veth-peer-name v0' to eth0, or name another device in "
         "veth-peer-name"),
    ]


def test_veth_peer_naming_back_in_wrong_namespace():
    v = obj("v0", "veth", {"veth-peer-name": "eth0", "veth-peer-netns": "t1"})
    # eth0 names v0 but, without veth-peer-netns, in its own namespace t1.
    eth0 = obj("eth0", "veth", {"veth-peer-name": "v0"}, netns="t1", line=10)
    text = ("v0 and eth0 (netns t1) disagree about the pair: the first names the second as "
            "its peer, the second names v0 (netns t1); write 'veth-peer-netns \"\"' on eth0")
    assert run_check(v, model(v, eth0)) == [
        (2, "veth-peer-name", f"v0: {text}"),
        (11, "veth-peer-name", f"eth0 (netns t1): {text}"),
    ]


def test_veth_peer_naming_another_device():
    v = obj("v0", "veth", {"veth-peer-name": "v1"})
    v1 = obj("v1", "veth", {"veth-peer-name": "v2"}, line=10)
    errors = run_check(v, model(v, v1))
    assert [e[:2] for e in errors] == [(2, "veth-peer-name"), (11, "veth-peer-name")]
    assert errors[0][2].endswith("the second names v2; write 'veth-peer-name v0' on v1")


# --- vlan ------------------------------------------------------------------

@pytest.mark.parametrize("name, claimed", [
    ("swp1.100", True), ("bond0.2000", True), ("swp1.4094", True), ("br0.1", True),
    ("bond0.2000.100", True), ("vlan100", False), ("swp1.0", False), ("swp1.4095", False),
    ("swp1.0100", False), ("swp1.", False), (".100", False), ("swp1.10a", False),
])
def test_vlan_claims_dotted_names(name, claimed):
    assert registry.kind("vlan").claims_name(name) is claimed


def test_vlan_complete_derives_raw_device_and_id_from_name():
    v = obj("bond0.2000", "vlan")
    assert run_complete(v) == []
    assert v.attrs == {"vlan-raw-device": "bond0", "vlan-id": 2000}
    assert refs(v) == [Reference("vlan-raw-device", LOWER, IFACE, "", "bond0", at(1))]
    qinq = obj("bond0.2000.100", "vlan")
    run_complete(qinq)
    assert qinq.attrs == {"vlan-raw-device": "bond0.2000", "vlan-id": 100}


def test_vlan_complete_keeps_agreeing_values_and_reports_contradictions():
    v = obj("swp1.100", "vlan", {"vlan-raw-device": "swp1", "vlan-id": 200})
    assert run_complete(v) == [(3, "vlan-id", (
        "swp1.100: vlan-id 200 contradicts the name, which says VLAN 100 on swp1; remove "
        "vlan-id or rename the interface"))]
    assert v.attrs["vlan-id"] == 200


def test_vlan_complete_reads_id_from_vlanNNN_name_like_ifupdown2():
    v = obj("vlan0100", "vlan", {"vlan-raw-device": "bond0"})
    run_complete(v)
    assert v.attrs["vlan-id"] == 100
    explicit = obj("vlan100", "vlan", {"vlan-raw-device": "bond0", "vlan-id": 7})
    assert run_complete(explicit) == [] and explicit.attrs["vlan-id"] == 7


def test_vlan_needs_raw_device_and_id():
    v = obj("storage", "vlan", {"vlan-protocol": "802.1ad"})
    assert run_check(v) == [
        (1, "vlan-raw-device", "storage: a vlan needs the device it is a VLAN of; add "
                               "'vlan-raw-device ...' or name the interface DEVICE.VLANID "
                               "(swp1.100)"),
        (1, "vlan-id", "storage: a vlan needs its VLAN id (1-4094); add 'vlan-id ...' or name "
                       "the interface DEVICE.VLANID (swp1.100)"),
    ]


def test_vlan_duplicate_on_same_device_reported_on_second():
    a = obj("swp1.100", "vlan", {"vlan-raw-device": "swp1", "vlan-id": 100})
    b = obj("storage", "vlan", {"vlan-raw-device": "swp1", "vlan-id": 100}, line=10)
    other_protocol = obj("s2", "vlan", {"vlan-raw-device": "swp1", "vlan-id": 100,
                                        "vlan-protocol": "802.1ad"}, line=20)
    in_tenant = obj("swp1.100", "vlan", {"vlan-raw-device": "swp1", "vlan-id": 100,
                                         "vlan-raw-netns": ""}, netns="t1", line=30)
    m = model(a, b, other_protocol, in_tenant)
    message = ("VLAN 100 on swp1 is already swp1.100 (at interfaces:1); a device carries "
               "each VLAN id once, so remove one of them")
    assert run_check_model("vlan", m) == [(12, "vlan-id", f"storage: {message}"),
                                          (32, "vlan-id", f"swp1.100 (netns t1): {message}")]
    assert run_check(a, m) == [] and run_check(b, m) == []


def test_vlan_raw_device_in_other_namespace():
    v = obj("swp2.300", "vlan", {"vlan-raw-netns": ""}, netns="t1")
    run_complete(v)
    assert refs(v)[0].netns == ""
    assert registry.kind("vlan").create_params(v) == {
        "link": "swp2", "link_netns": "", "id": 300, "protocol": "802.1q"}


def test_vlan_on_loopback():
    v = obj("lo.5", "vlan")
    run_complete(v)
    errors = run_check(v, model(v, obj("lo", "loopback", line=9)))
    assert errors == [(1, "vlan-raw-device", (
        "lo.5: vlan-raw-device lo is the loopback device, which cannot carry VLANs; name an "
        "Ethernet-like device"))]


# --- bond ------------------------------------------------------------------

def test_bond_references_slaves_and_none():
    b = obj("bond0", "bond", {"bond-slaves": ["swp1", "swp2"]})
    assert refs(b) == [Reference("bond-slaves", SLAVE, IFACE, "", s, at(2))
                       for s in ("swp1", "swp2")]
    empty = obj("bond1", "bond", {"bond-slaves": ["none"]})
    run_complete(empty)
    assert empty.attrs["bond-slaves"] == [] and refs(empty) == []


def test_bond_lacp_rate_needs_802_3ad():
    b = obj("bond0", "bond", {"bond-slaves": ["swp1"], "bond-lacp-rate": "fast"})
    assert run_check(b) == [(3, "bond-lacp-rate", (
        "bond0: bond-lacp-rate applies to LACP bonds, but bond-mode is balance-rr; write "
        "'bond-mode 802.3ad' or remove bond-lacp-rate"))]
    b.attrs["bond-mode"] = "802.3ad"
    assert run_check(b) == []


def test_bond_slave_listed_twice():
    b = obj("bond0", "bond", {"bond-slaves": ["swp1", "swp2", "swp1"]})
    assert run_check(b) == [(2, "bond-slaves", "bond0: bond-slaves lists swp1 twice; list each "
                                               "slave once")]


def test_bond_aliases_and_create_params():
    props = load("bond.json")["properties"]
    assert props["bond-mode"]["x-netcfg-aliases"]["4"] == "802.3ad"
    assert props["bond-lacp-rate"]["x-netcfg-aliases"]["1"] == "fast"
    b = obj("bond0", "bond", {"bond-slaves": ["swp1"], "bond-mode": "802.3ad",
                              "bond-xmit-hash-policy": "layer3+4"})
    assert registry.kind("bond").create_params(b) == {"mode": "802.3ad",
                                                       "xmit_hash_policy": "layer3+4"}
    assert registry.kind("bond").immutable_attributes == {"bond-mode"}


# --- vxlan -----------------------------------------------------------------

def bridge(name="br0", aware=True, ports=("vx0",)):
    return obj(name, "bridge", {"bridge-ports": list(ports), "bridge-vlan-aware": aware}, line=50)


def test_vxlan_single_vni_is_fine():
    v = obj("vni1000", "vxlan", {"vxlan-id": 1000, "vxlan-local-tunnelip": "192.0.2.1",
                                 "vxlan-remoteip": ["192.0.2.2"]})
    assert run_complete(v) == [] and run_check(v) == []
    # The remote is a forwarding entry (fdb-add), not IFLA_VXLAN_GROUP, as in ifupdown2.
    assert registry.kind("vxlan").create_params(v) == {
        "port": 4789, "id": 1000, "local": "192.0.2.1"}


def test_vxlan_needs_exactly_one_of_id_and_vnifilter():
    assert run_check(obj("vx0", "vxlan", {"vxlan-learning": False})) == [(1, "vxlan-id", (
        "vx0: a vxlan needs 'vxlan-id N' (1-16777215), or 'vxlan-vnifilter yes' with "
        "bridge-vlan-vni-map to carry many VNIs"))]
    both = obj("vx0", "vxlan", {"vxlan-id": 10, "vxlan-vnifilter": True})
    assert run_check(both) == [(2, "vxlan-id", (
        "vx0: vxlan-id and 'vxlan-vnifilter yes' exclude each other; a vnifilter device "
        "carries the VNIs of bridge-vlan-vni-map. Remove one of them"))]


def test_vxlan_local_tunnelip_is_canonicalised_or_reported():
    v = obj("vx0", "vxlan", {"vxlan-id": 1, "vxlan-local-tunnelip": "2001:DB8::1"})
    assert run_complete(v) == [] and v.attrs["vxlan-local-tunnelip"] == "2001:db8::1"
    bad = obj("vx1", "vxlan", {"vxlan-id": 1, "vxlan-local-tunnelip": "host1"})
    assert run_complete(bad) == [(3, "vxlan-local-tunnelip", (
        "vx1: vxlan-local-tunnelip 'host1' is not an IPv4 or IPv6 address; write this host's "
        "tunnel source address"))]
    assert "vxlan-local-tunnelip" not in bad.attrs


def test_vxlan_vni_map_needs_vnifilter():
    v = obj("vx0", "vxlan", {"vxlan-id": 5, "bridge-vlan-vni-map": ["100=1000"]})
    assert run_check(v) == [(3, "bridge-vlan-vni-map", (
        "vx0: bridge-vlan-vni-map needs 'vxlan-vnifilter yes'; with vxlan-id the device "
        "carries a single VNI"))]


def test_vxlan_vnifilter_on_vlan_aware_bridge():
    v = obj("vx0", "vxlan", {"vxlan-vnifilter": True, "vxlan-local-tunnelip": "192.0.2.1",
                             "bridge-vlan-vni-map": ["100-101=1000-1001", "200=2000"]})
    br = bridge()
    assert run_check(v, model(v, br, masters={v.key: br.key})) == []
    params = registry.kind("vxlan").create_params(v)
    assert params == {"port": 4789, "external": True, "vnifilter": True, "local": "192.0.2.1"}
    message = ("vx0: bridge-vlan-vni-map maps bridge VLANs to VNIs, so vx0 must be a port of "
               "a VLAN-aware bridge; list it in bridge-ports of a bridge with "
               "'bridge-vlan-aware yes'")
    assert run_check(v, model(v)) == [(4, "bridge-vlan-vni-map", message)]
    plain = bridge(aware=False)
    assert run_check(v, model(v, plain, masters={v.key: plain.key})) == [
        (4, "bridge-vlan-vni-map", message)]


def test_vxlan_vnifilter_rejects_remoteip_and_repeated_mappings():
    v = obj("vx0", "vxlan", {"vxlan-vnifilter": True, "vxlan-remoteip": ["192.0.2.2"],
                             "bridge-vlan-vni-map": ["100-101=1000-1001", "101=3000", "300=1000"]})
    br = bridge()
    assert run_check(v, model(v, br, masters={v.key: br.key})) == [
        (3, "vxlan-remoteip",
         "vx0: vxlan-remoteip cannot be used with 'vxlan-vnifilter yes': remotes of a "
         "vnifilter device are per VNI (forwarding entries with src_vni), which netcfg does "
         "not manage yet. Use one vxlan-id device per VNI for static remotes"),
        (4, "bridge-vlan-vni-map",
         "vx0: bridge-vlan-vni-map maps VLAN 101 more than once; each VLAN maps to one VNI "
         "and back"),
        (4, "bridge-vlan-vni-map",
         "vx0: bridge-vlan-vni-map maps VNI 1000 more than once; each VLAN maps to one VNI "
         "and back"),
    ]


def test_vxlan_several_remotes_and_mixed_families():
    v = obj("vx0", "vxlan", {"vxlan-id": 1, "vxlan-remoteip": ["192.0.2.2", "2001:db8::2"]})
    assert run_check(v) == [
        (3, "vxlan-remoteip",
         "vx0: vxlan-local-tunnelip, vxlan-svcnodeip and vxlan-remoteip mix IPv4 and IPv6; a "
         "tunnel uses one address family"),
    ]
    several = obj("vx1", "vxlan", {"vxlan-id": 1, "vxlan-remoteip": ["192.0.2.2", "192.0.2.3"]})
    assert run_check(several) == []


def test_vxlan_same_vni_in_one_namespace_reported_on_second():
    a = obj("vniA", "vxlan", {"vxlan-id": 1000, "vxlan-local-tunnelip": "192.0.2.1"})
    b = obj("vniB", "vxlan", {"vxlan-id": 1000, "vxlan-local-tunnelip": "192.0.2.1"}, line=10)
    other_port = obj("vniC", "vxlan", {"vxlan-id": 1000, "vxlan-port": 4790}, line=20)
    other_ns = obj("vniA", "vxlan", {"vxlan-id": 1000}, netns="t1", line=30)
    v6 = obj("vniD", "vxlan", {"vxlan-id": 1000, "vxlan-local-tunnelip": "2001:db8::1"}, line=40)
    m = model(a, b, other_port, other_ns, v6)
    assert run_check_model("vxlan", m) == [(11, "vxlan-id", (
        "vniB: VNI 1000 on UDP port 4789 is already carried by vniA (at interfaces:1); the "
        "kernel allows each VNI once per namespace, port and address family, even with "
        "different vxlan-local-tunnelip. Remove one, or use another vxlan-port"))]
    assert run_check(a, m) == [] and run_check(b, m) == []


def test_vxlan_vni_of_vnifilter_device_clashes_with_single_vni_device():
    vx = obj("vx0", "vxlan", {"vxlan-vnifilter": True, "bridge-vlan-vni-map": ["100=1000"]})
    single = obj("vni1000", "vxlan", {"vxlan-id": 1000}, line=10)
    br = bridge()
    errors = run_check_model("vxlan", model(vx, single, br, masters={vx.key: br.key}))
    assert [e[:2] for e in errors] == [(11, "vxlan-id")]


# --- vrf -------------------------------------------------------------------

def test_vrf_table_text_is_typed_when_parsed():
    from netcfg.compile.values import parse_value
    from netcfg.spec import group_attributes

    spec = group_attributes("vrf")["vrf-table"]
    assert parse_value(spec, "1001") == 1001
    assert parse_value(spec, "auto") == "auto"
    with pytest.raises(ValueError, match="expected a whole number, got 'red'"):
        parse_value(spec, "red")


def test_vrf_allocate_tables_per_namespace_in_name_order_skipping_used():
    red = obj("red", "vrf", {"vrf-table": "auto"})
    blue = obj("blue", "vrf", {"vrf-table": "auto"})
    green = obj("green", "vrf", {"vrf-table": 1001})
    # A route table written explicitly is taken too.
    eth = obj("eth0", "physical", {"route": [{"to": "0.0.0.0/0", "via": "192.0.2.1",
                                              "dev": "eth0", "table": 1002}]})
    t1 = obj("red", "vrf", {"vrf-table": "auto"}, netns="t1")
    m = model(red, blue, green, eth, t1)
    vrf_mod.allocate_tables(m)
    assert (blue.attrs["vrf-table"], red.attrs["vrf-table"]) == (1003, 1004)
    assert green.attrs["vrf-table"] == 1001 and t1.attrs["vrf-table"] == 1001
    for v in (red, blue, green, t1):
        assert run_check(v, m) == []
    # Deterministic: the same model gets the same numbers.
    red.attrs["vrf-table"] = blue.attrs["vrf-table"] = "auto"
    registry.kind("vrf").complete_model(m, Report())  # the hook the validator calls
    assert (blue.attrs["vrf-table"], red.attrs["vrf-table"]) == (1003, 1004)
    assert run_check_model("vrf", m) == []


def test_vrf_same_table_twice_in_one_namespace():
    red = obj("red", "vrf", {"vrf-table": 1001})
    blue = obj("blue", "vrf", {"vrf-table": 1001}, line=10)
    elsewhere = obj("blue", "vrf", {"vrf-table": 1001}, netns="t1", line=20)
    m = model(red, blue, elsewhere)
    assert run_check(red, m) == [] and run_check(blue, m) == []
    assert run_check_model("vrf", m) == [(11, "vrf-table", (
        "blue: vrf-table 1001 is already the table of vrf red (at interfaces:1); give each vrf "
        "its own table, or write 'vrf-table auto'"))]


def test_vrf_reserved_table_and_vrf_in_vrf_and_missing_table():
    main = obj("red", "vrf", {"vrf-table": 254, "vrf": "blue"})
    assert run_check(main) == [
        (2, "vrf-table", "red: vrf-table 254 is the kernel's main table; give the vrf a table "
                         "of its own (e.g. 1001) or write 'vrf-table auto'"),
        (3, "vrf", "red: a vrf cannot be a member of another vrf; remove 'vrf blue' from red"),
    ]
    assert run_check(obj("red", "vrf")) == [(1, "vrf-table", "red: a vrf needs 'vrf-table N' or "
                                                             "'vrf-table auto'")]


# --- macvlan, dummy ----------------------------------------------------------

def test_macvlan_references_lower_and_needs_it():
    mv = obj("mv0", "macvlan", {"macvlan-raw-device": "eth0", "macvlan-raw-netns": ""}, netns="t1")
    assert refs(mv) == [Reference("macvlan-raw-device", LOWER, IFACE, "", "eth0", at(2))]
    assert run_check(mv) == []
    assert registry.kind("macvlan").create_params(mv) == {
        "link": "eth0", "link_netns": "", "mode": "bridge"}
    assert run_check(obj("mv1", "macvlan")) == [(1, "macvlan-raw-device", (
        "mv1: a macvlan needs the device it sits on; add 'macvlan-raw-device DEVICE'"))]


def test_dummy_and_physical_have_no_own_attributes():
    assert load("dummy.json")["properties"] == {}
    # but ifupdown2's ethtool link modes (apply/ethtool.py)
    assert set(load("physical.json")["properties"]) == {"link-speed", "link-duplex",
                                                        "link-autoneg"}
    assert run_check(obj("dum0", "dummy")) == [] and run_check(obj("swp1", "physical")) == []


# --- netns, volume -----------------------------------------------------------

def test_netns_nsid_unique():
    a = obj("t1", "netns", {"nsid": 5}, section=NETNS)
    b = obj("t2", "netns", {"nsid": 5}, section=NETNS, line=10)
    c = obj("t3", "netns", {"nsid": 6}, section=NETNS, line=20)
    m = model(a, b, c)
    assert run_check(a, m) == []
    assert run_check_model("netns", m) == [(11, "nsid", (
        "t2: nsid 5 is already the nsid of namespace t1 (at interfaces:1); give each namespace "
        "its own nsid, or leave nsid out to let the kernel pick one"))]
    assert registry.kind("netns").kernel_bytes == 200_000


def test_volume_checks():
    ok = obj("db1", "volume", {"backing": "/srv/db1.img", "size": 10 << 30}, section=VOLUME)
    assert run_check(ok) == []
    assert run_check(obj("v", "volume", section=VOLUME)) == [(1, "backing", (
        "v: a volume needs 'backing PATH', the file or block device that holds its data"))]
    rel = obj("v", "volume", {"backing": "v.img", "size": 1000}, section=VOLUME)
    assert run_check(rel) == [
        (2, "backing", "v: backing 'v.img' is a relative path; write an absolute one "
                       "(/srv/volumes/v.img): netcfgd does not run in the directory of the config"),
        (3, "size", "v: size 1000 bytes is not a positive multiple of 512-byte sectors; use a "
                    "size like 10G or 512M"),
    ]
    empty = obj("v", "volume", {"backing": "/x", "size": 0}, section=VOLUME)
    assert [e[1] for e in run_check(empty)] == ["size"]


def test_volume_ublk_yes_is_accepted():
    v = obj("db1", "volume", {"backing": "/srv/db1.img", "ublk": True, "ublk-id": 3,
                              "ublk-queues": 2, "ublk-depth": 32, "ublk-owner": "1000:1000"},
            section=VOLUME)
    assert run_check(v) == []


def test_volume_ublk_tuning_needs_ublk_and_a_numeric_owner():
    v = obj("v", "volume", {"backing": "/srv/v.img", "ublk-queues": 2, "ublk-owner": "bob"},
            section=VOLUME)
    assert run_check(v) == [
        (3, "ublk-queues", "v: ublk-queues only applies to a ublk device; add 'ublk yes' to the "
                           "volume or remove ublk-queues"),
        (4, "ublk-owner", "v: ublk-owner only applies to a ublk device; add 'ublk yes' to the "
                          "volume or remove ublk-owner"),
        (4, "ublk-owner", "v: ublk-owner 'bob' is not UID:GID; write two numbers from 0 to "
                          "4294967294 (ublk-owner 1000:1000)"),
    ]
    assert volume_mod.parse_owner("1000:100") == (1000, 100)
    for bad in ("1000", "1000:", ":1", "a:b", "1:2:3", "4294967295:0", "-1:0", "١:٢"):
        assert volume_mod.parse_owner(bad) is None, bad


def test_volume_ublk_ids_are_unique():
    a = obj("a", "volume", {"backing": "/srv/a.img", "ublk": True, "ublk-id": 3}, section=VOLUME)
    b = obj("b", "volume", {"backing": "/srv/b.img", "ublk": True, "ublk-id": 3}, section=VOLUME,
            line=10)
    c = obj("c", "volume", {"backing": "/srv/c.img", "ublk": True, "ublk-id": 4}, section=VOLUME,
            line=20)
    assert run_check_model("volume", model(a, b, c)) == [(13, "ublk-id", (
        "b: ublk-id 3 is already the device number of volume a (at interfaces:1); give each "
        "volume its own, or leave ublk-id out to let the kernel pick"))]


def test_volumes_sharing_a_backing_file():
    a = obj("a", "volume", {"backing": "/srv/x.img"}, section=VOLUME)
    b = obj("b", "volume", {"backing": "/srv/x.img"}, section=VOLUME, line=10)
    assert run_check(a, model(a, b)) == []
    assert run_check_model("volume", model(a, b)) == [(11, "backing", (
        "b: backing /srv/x.img is already the backing of volume a (at interfaces:1); export "
        "one volume from several targets instead of two volumes on one file"))]


# --- target ----------------------------------------------------------------

IQN = "iqn.2024-01.com.example:t1.db"


def target(attrs, name=IQN, netns="t1"):
    return obj(name, "target", attrs, section=TARGET, netns=netns)


def tenant_model(*objects):
    eth = obj("eth0", "veth", {"veth-peer-name": "v", "veth-peer-netns": "",
                               "address": ["10.0.1.2/30", "2001:db8::2/64"]}, netns="t1", line=40)
    return model(eth, *objects)


GOOD = {"portal": ["10.0.1.2:3260"], "lun": [{"lun": 0, "volume": "db1"}]}


def test_target_references_volumes_in_no_namespace():
    t = target({**GOOD, "lun": [{"lun": 0, "volume": "db1"}, {"lun": 1, "volume": "db2"}]})
    assert refs(t) == [Reference("lun", VOLUME_REF, VOLUME, "", v, at(3)) for v in ("db1", "db2")]
    assert run_check(t, tenant_model(t)) == []


@pytest.mark.parametrize("name", [
    IQN, "iqn.2001-04.com.example", "iqn.1992-01.com.example:storage:diskarrays-sn-a8675309",
    "eui.02004567A425678D", "naa.52004567BA64678D", "naa.6001405a1b2c3d4e5f60718293a4b5c6",
])
def test_target_valid_iscsi_names(name):
    t = target(GOOD, name=name)
    assert run_check(t, tenant_model(t)) == []


@pytest.mark.parametrize("name, problem", [
    ("iqn.2024-01.com.Example:db", "must be lowercase (iqn.2024-01.com.example:db)"),
    ("iqn.2024-13.com.example", None), ("iqn.24-01.com.example", None),
    ("iqn.2024-01.com.example:", None), ("iqn.2024-01.-com.example", None),
    ("eui.0200456", None), ("naa.123", None), ("storage1", None),
    ("iqn.2024-01.com.example:" + "a" * 200, "is longer than 223 bytes"),
])
def test_target_invalid_iscsi_names(name, problem):
    t = target(GOOD, name=name)
    expected = problem or ("is not an iSCSI name; expected iqn.YYYY-MM.reversed.domain"
                           "[:identifier] (iqn.2024-01.com.example:storage.db), eui.<16 hex "
                           "digits> or naa.<16 or 32 hex digits>")
    assert run_check(t, tenant_model(t)) == [(1, None, f"{name}: the target's name {expected}")]


def test_target_needs_portal_and_lun_and_unique_luns():
    assert run_check(target({})) == [
        (1, "portal", f"{IQN}: a target needs at least one 'portal ADDR[:PORT]' to listen on"),
        (1, "lun", f"{IQN}: a target needs at least one 'lun N VOLUME' to export"),
    ]
    t = target({"portal": ["0.0.0.0:3260"],
                "lun": [{"lun": 0, "volume": "a"}, {"lun": 0, "volume": "b"}]})
    assert run_check(t) == [(3, "lun", f"{IQN}: LUN 0 is given more than once; each "
                                       f"'lun N VOLUME' needs its own N")]


def test_target_chap_files_and_initiators():
    t = target({**GOOD, "mutual-chap-secret-file": "secrets/m",
                "allow-initiator": ["iqn.2024-01.com.example:h1", "host2"]})
    assert run_check(t, tenant_model(t)) == [
        (5, "allow-initiator", f"{IQN}: allow-initiator host2 is not an iSCSI name; expected "
                               "iqn.YYYY-MM.reversed.domain[:identifier] (iqn.2024-01.com.example"
                               ":storage.db), eui.<16 hex digits> or naa.<16 or 32 hex digits>"),
        (4, "mutual-chap-secret-file", f"{IQN}: mutual-chap-secret-file 'secrets/m' is a "
                                       "relative path; write an absolute one"),
        (4, "mutual-chap-secret-file", f"{IQN}: mutual-chap-secret-file authenticates the "
                                       "target to initiators that have authenticated "
                                       "themselves; add chap-secret-file too"),
    ]


def test_target_portal_must_be_an_address_in_its_namespace():
    t = target({**GOOD, "portal": ["10.0.1.2:3260", "[2001:db8::2]:3260", "0.0.0.0:3260",
                                   "[::]:3260", "127.0.0.1:3260", "10.0.9.9:3260"]})
    assert run_check(t, tenant_model(t)) == [(2, "portal", (
        f"{IQN}: portal 10.0.9.9:3260 is not an address of any interface in namespace t1 "
        "(addresses there: 10.0.1.2, 2001:db8::2); give an interface there that address, "
        "or listen on another"))]
    # The same address in another namespace does not count.
    host = target(GOOD, netns="")
    assert run_check(host, tenant_model(host))[0][2].endswith(
        "in the host's namespace (addresses there: none); give an interface there that "
        "address, or listen on another")


def test_targets_may_share_a_portal():
    a = target(GOOD)
    b = target(GOOD, name="iqn.2024-01.com.example:t1.logs")
    m = tenant_model(a, b)
    assert run_check(a, m) == [] and run_check(b, m) == []


# --- written but invalid: the builder reported it, kinds stay quiet ----------

@pytest.mark.parametrize("kind, attribute, section", [
    ("veth", "veth-peer-name", IFACE), ("vlan", "vlan-id", IFACE),
    ("macvlan", "macvlan-raw-device", IFACE), ("vxlan", "vxlan-id", IFACE),
    ("vrf", "vrf-table", IFACE), ("volume", "backing", VOLUME), ("target", "lun", TARGET),
])
def test_missing_attribute_not_reported_when_written_but_invalid(kind, attribute, section):
    o = obj("x1.5" if kind == "vlan" else "x", kind, section=section)
    if kind == "vlan":
        o.attrs["vlan-raw-device"] = "x1"
    o.locs[attribute] = at(7)  # what the builder leaves for a rejected value
    assert not [e for e in run_check(o) if e[1] == attribute]


@pytest.mark.parametrize("kind, attribute, attrs", [
    ("veth", "veth-peer-netns", {"veth-peer-name": "p"}),
    ("vlan", "vlan-raw-netns", {"vlan-raw-device": "swp1", "vlan-id": 5}),
    ("macvlan", "macvlan-raw-netns", {"macvlan-raw-device": "eth0"}),
])
def test_namespace_attributes_are_namespace_names(kind, attribute, attrs):
    good = obj("x", kind, {**attrs, attribute: "tenant-1.a"})
    assert run_check(good) == []
    host = obj("x", kind, {**attrs, attribute: ""}, netns="t1")
    assert run_check(host) == []
    bad = obj("x", kind, {**attrs, attribute: "two words"})
    assert run_check(bad) == [(1 + len(attrs) + 1, attribute, (
        f"x: {attribute} 'two words' is not a namespace name (letters, digits, '_', '.', '-', "
        f"at most 64); write \"\" for the host's namespace"))]
