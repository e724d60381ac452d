"""Lightweight lowering (netcfg/plan/lower/) on hand-built models.

Every model here is what validation would hand over: objects with their
attributes completed (vlan-raw-device / vlan-id filled in) and the masters
index filled from bridge-ports.
"""

from __future__ import annotations

import copy

import pytest

from netcfg.model.location import SourceLocation
from netcfg.model.model import ConfigObject, Model
from netcfg.plan.lower.common import BRIDGE_PORT_BYTES, BRIDGE_VLAN_BYTES, VNI_BYTES
from netcfg.plan.lower.lowering import lower
from netcfg.plan.lower.report import Lowered, LoweringReport, Refusal

F = "/etc/netcfg/net.tmpl"
BRIDGE, VLAN, VXLAN = 60_000, 40_000, 42_000  # kinds' kernel_bytes


def at(line: int, file: str = F) -> SourceLocation:
    return SourceLocation(file, line)


def iface(name: str, kind: str, line: int, *, netns: str = "", auto: bool = True,
          implicit: bool = False, file: str = F, **attrs) -> ConfigObject:
    """An interface declared at file:line, each attribute on the lines below."""
    attrs = {k.replace("_", "-"): v for k, v in attrs.items()}
    locs = {k: at(line + 1 + i, file) for i, k in enumerate(attrs)}
    return ConfigObject("iface", name, kind, netns=netns, attrs=attrs, locs=locs,
                        loc=at(line, file), auto=auto, implicit=implicit)


def build(*objs: ConfigObject, off: tuple[str, ...] = ()) -> Model:
    model = Model(lower_off_files=set(off))
    for obj in objs:
        model.interfaces[obj.key] = obj
    for obj in objs:
        for port in obj.attrs.get("bridge-ports", ()):
            model.masters[(obj.netns, port)] = obj.key
    return model


def phys(*names: str, netns: str = "", line: int = 1, **attrs) -> list[ConfigObject]:
    return [iface(n, "physical", line + i, netns=netns, **attrs) for i, n in enumerate(names)]


def per_vlan(vid: int, lowers: tuple[str, ...], line: int, *, netns: str = "",
             name: str | None = None, extra_ports: tuple[str, ...] = (), auto: bool = True,
             bridge_attrs: dict | None = None) -> list[ConfigObject]:
    """``brV`` with ports ``P.V`` for each lower P (implied subinterfaces)."""
    subs = [iface(f"{p}.{vid}", "vlan", line, netns=netns, implicit=True, auto=auto,
                  vlan_raw_device=p, vlan_id=vid) for p in lowers]
    attrs = {"bridge-ports": [s.name for s in subs] + list(extra_ports), "bridge-stp": False,
             "bridge-mcsnoop": False, **(bridge_attrs or {})}
    bridge = iface(name or f"br{vid}", "bridge", line, netns=netns, auto=auto, **attrs)
    return [bridge, *subs]


def reasons(report: LoweringReport) -> list[str]:
    return [r.reason for r in report.refusals]


def snapshot(model: Model):
    return [(k, o, o.name, o.kind, o.auto, copy.deepcopy(o.attrs), dict(o.locs))
            for k, o in model.interfaces.items()], dict(model.masters)


# ---------------------------------------------------------------- lowering

def test_per_vlan_bridges_become_one_vlan_aware_bridge():
    model = build(*phys("swp1", "swp2"), *per_vlan(10, ("swp1", "swp2"), 10),
                  *per_vlan(20, ("swp1", "swp2"), 20))
    before = snapshot(model)
    new, report = lower(model)

    assert snapshot(model) == before  # the input is not changed
    assert sorted(name for _, name in new.interfaces) == ["swp1", "swp2", "vbr0"]
    vbr = new.iface("", "vbr0")
    assert vbr.kind == "bridge" and vbr.auto and vbr.loc == at(10)
    # No default PVID: untagged frames stay unbridged (lower/__init__.py, point 2).
    assert vbr.attrs == {"bridge-vlan-aware": True, "bridge-ports": ["swp1", "swp2"],
                         "bridge-vlan-default-pvid": 0, "bridge-stp": False,
                         "bridge-mcsnoop": False}
    for name in ("swp1", "swp2"):
        port = new.iface("", name)
        assert port.attrs == {"bridge-vids": ["10", "20"]}
        assert port is not model.iface("", name) and model.iface("", name).attrs == {}
        assert new.masters[("", name)] == ("", "vbr0")
    assert ("", "swp1.10") not in new.masters and len(new.masters) == 2

    assert report.netdevs_before == 8 and report.netdevs_after == 3
    saved = (2 * BRIDGE + 4 * (VLAN + BRIDGE_PORT_BYTES)
             - (BRIDGE + 2 * BRIDGE_PORT_BYTES + (4 + 2) * BRIDGE_VLAN_BYTES))
    assert report.estimated_bytes_saved == saved
    assert report.lowered == [Lowered(at(10), "", "vbr0", "bridge", ("br10", "br20"), 4,
                                      ("swp1", "swp2"), ("10", "20"), netdevs_removed=6,
                                      netdevs_added=1, bytes_saved=saved)]
    assert report.refusals == []
    assert report.to_text() == [
        f"lowering: 8 netdevs -> 3, about {saved / 1000:.1f} kB of kernel memory saved",
        f"  lowered: 2 bridges br10, br20 and 4 VLAN subinterfaces ({F}:10) -> 1 VLAN-aware "
        f"bridge vbr0 with ports swp1, swp2, VLANs 10 20",
    ]


def test_vids_are_compressed_ranges_per_port_and_ports_keep_listed_order():
    objs = [*phys("swp1", "swp2", "swp3")]
    for vid in (1, 2, 3, 5, 4094):
        objs += per_vlan(vid, ("swp2", "swp1"), 10 * vid)
    objs += per_vlan(7, ("swp2", "swp3"), 70)
    new, report = lower(build(*objs))
    assert new.iface("", "vbr0").attrs["bridge-ports"] == ["swp2", "swp1", "swp3"]
    assert new.iface("", "swp1").attrs["bridge-vids"] == ["1-3", "5", "4094"]
    assert new.iface("", "swp2").attrs["bridge-vids"] == ["1-3", "5", "7", "4094"]
    assert new.iface("", "swp3").attrs["bridge-vids"] == ["7"]
    assert report.lowered[0].vlans == ("1-3", "5", "7", "4094")
    # Bridges in natural name order: br2 before br10; the location is br1's.
    assert report.lowered[0].replaced == ("br1", "br2", "br3", "br5", "br7", "br4094")
    assert report.lowered[0].loc == at(10)


def test_disjoint_groups_get_vbr0_vbr1_and_skip_taken_names():
    objs = [*phys("swp1", "swp2"), iface("vbr0", "dummy", 5, link_type="dummy")]
    objs += per_vlan(10, ("swp1",), 10) + per_vlan(20, ("swp2",), 20, name="a20")
    new, report = lower(build(*objs))
    assert [(x.into, x.replaced) for x in report.lowered] == [("vbr1", ("a20",)),
                                                              ("vbr2", ("br10",))]
    assert new.iface("", "vbr0").kind == "dummy"
    assert new.iface("", "vbr1").attrs["bridge-ports"] == ["swp2"]
    assert new.iface("", "vbr2").attrs["bridge-ports"] == ["swp1"]


def test_lowering_is_per_namespace():
    objs = [*phys("swp1", netns="t1"), *per_vlan(10, ("swp1",), 10, netns="t1"),
            *per_vlan(11, ("swp1",), 20, netns="t1")]
    new, report = lower(build(*objs))
    assert set(new.interfaces) == {("t1", "swp1"), ("t1", "vbr0")}
    assert new.masters[("t1", "swp1")] == ("t1", "vbr0")
    assert report.lowered[0].text().startswith(
        f"2 bridges br10, br11 and 2 VLAN subinterfaces ({F}:10) -> 1 VLAN-aware bridge "
        f"vbr0 (netns t1) with ports swp1")


def test_ageing_and_auto_are_carried_over():
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10, auto=False,
                                     bridge_attrs={"bridge-ageing": 30}),
            *per_vlan(11, ("swp1",), 20, auto=False, bridge_attrs={"bridge-ageing": 30})]
    new, _ = lower(build(*objs))
    vbr = new.iface("", "vbr0")
    assert vbr.attrs["bridge-ageing"] == 30 and vbr.auto is False


def test_a_bridge_not_auto_may_have_ports_that_are_not_auto_either():
    # ifupdown2 brings a bridge's ports up with it: a port that is not auto
    # under an auto bridge is up all the same.
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10)]
    objs[2] = iface("swp1.10", "vlan", 10, auto=False, implicit=True,
                    vlan_raw_device="swp1", vlan_id=10)
    new, report = lower(build(*objs))
    assert report.refusals == [] and ("", "vbr0") in new.interfaces


# ---------------------------------------------------------------- vxlans

def vni(name: str, vni_id: int, line: int, **attrs) -> ConfigObject:
    attrs.setdefault("vxlan_local_tunnelip", "192.0.2.1")
    return iface(name, "vxlan", line, vxlan_id=vni_id, **attrs)


def test_per_vni_vxlans_of_per_vlan_bridges_become_one_vnifilter_vxlan():
    objs = [*phys("swp1")]
    for vid, n in ((100, 1000), (101, 1001), (103, 2000)):
        objs += [vni(f"vni{n}", n, 1000 + vid, vxlan_learning=False)]
        objs += per_vlan(vid, ("swp1",), vid, extra_ports=(f"vni{n}",))
    new, report = lower(build(*objs))
    assert sorted(name for _, name in new.interfaces) == ["swp1", "vbr0", "vxlan0"]
    assert new.iface("", "vbr0").attrs["bridge-ports"] == ["swp1", "vxlan0"]
    vx = new.iface("", "vxlan0")
    assert vx.kind == "vxlan" and vx.loc == at(1100) and vx.auto
    assert vx.attrs == {"vxlan-local-tunnelip": "192.0.2.1", "vxlan-learning": False,
                        "vxlan-vnifilter": True, "bridge-vids": ["100-101", "103"],
                        "bridge-vlan-vni-map": ["100-101=1000-1001", "103=2000"]}
    assert new.masters[("", "vxlan0")] == ("", "vbr0")
    assert [x.kind for x in report.lowered] == ["bridge", "vxlan"]
    merged = report.lowered[1]
    assert merged.text() == (f"3 vxlans vni1000, vni1001, vni2000 ({F}:1100) -> 1 vnifilter "
                             f"vxlan vxlan0 in vbr0, VLAN=VNI 100-101=1000-1001 103=2000")
    port = VXLAN + BRIDGE_PORT_BYTES
    assert merged.bytes_saved == 3 * port - (port + 3 * (VNI_BYTES + BRIDGE_VLAN_BYTES))
    assert report.netdevs_before == 1 + 3 * 3 and report.netdevs_after == 3
    assert report.estimated_bytes_saved == sum(x.bytes_saved for x in report.lowered)


def test_vxlan_with_a_remote_stays_an_access_port():
    objs = [*phys("swp1")]
    objs += [vni("vni1000", 1000, 1100), vni("vni1001", 1001, 1101),
             vni("vni1002", 1002, 1102, vxlan_remoteip=["198.51.100.7"])]
    for vid in (100, 101, 102):
        objs += per_vlan(vid, ("swp1",), vid, extra_ports=(f"vni{vid + 900}",))
    new, report = lower(build(*objs))
    assert reasons(report) == [
        f"vni1002 ({F}:1102) not lowered: it has vxlan-remoteip ({F}:1104); per-VNI "
        f"head-end replication would need per-VNI FDB entries on a vnifilter vxlan, which "
        f"lowering does not write; it stays an access port of vbr0"]
    assert new.iface("", "vbr0").attrs["bridge-ports"] == ["swp1", "vxlan0", "vni1002"]
    kept = new.iface("", "vni1002")
    assert kept.attrs["bridge-access"] == 102 and kept.attrs["vxlan-id"] == 1002
    assert new.masters[("", "vni1002")] == ("", "vbr0")
    assert new.iface("", "vxlan0").attrs["bridge-vlan-vni-map"] == ["100-101=1000-1001"]


def test_a_single_vxlan_stays_an_access_port_without_comment():
    objs = [*phys("swp1"), vni("vni1000", 1000, 1100),
            *per_vlan(100, ("swp1",), 100, extra_ports=("vni1000",))]
    new, report = lower(build(*objs))
    assert report.refusals == []
    assert new.iface("", "vbr0").attrs["bridge-ports"] == ["swp1", "vni1000"]
    assert new.iface("", "vni1000").attrs["bridge-access"] == 100


def test_access_vxlans_of_a_vlan_aware_bridge_are_merged():
    objs = [iface("br0", "bridge", 1, bridge_vlan_aware=True, bridge_mcsnoop=False,
                  bridge_ports=["swp1", "vni10", "vni20", "vni30"]),
            *phys("swp1", line=5, bridge_vids=["10", "20"]),
            vni("vni10", 10, 10, bridge_access=10), vni("vni20", 20, 20, bridge_access=20),
            vni("vni30", 30, 30, bridge_access=31)]
    model = build(*objs)
    new, report = lower(model)
    assert new.iface("", "br0").attrs["bridge-ports"] == ["swp1", "vxlan0"]
    assert model.iface("", "br0").attrs["bridge-ports"] == ["swp1", "vni10", "vni20", "vni30"]
    assert new.iface("", "vxlan0").attrs["bridge-vlan-vni-map"] == ["10=10", "20=20", "31=30"]
    assert new.iface("", "vxlan0").attrs["bridge-vids"] == ["10", "20", "31"]
    assert [x.replaced for x in report.lowered] == [("vni10", "vni20", "vni30")]
    assert report.netdevs_before == 5 and report.netdevs_after == 3


def test_access_vxlans_are_not_merged_under_multicast_snooping():
    objs = [iface("br0", "bridge", 1, bridge_vlan_aware=True, bridge_ports=["vni10", "vni20"]),
            vni("vni10", 10, 10, bridge_access=10), vni("vni20", 20, 20, bridge_access=20)]
    model = build(*objs)
    new, report = lower(model)
    assert new is model
    assert reasons(report) == [
        f"vxlan ports of br0 ({F}:1) not lowered: br0 does IGMP/MLD snooping per bridge (the "
        f"kernel default); one vxlan port would become a multicast router port for all its "
        f"VLANs at once. Write bridge-mcast-vlan-snooping yes (per-VLAN state) or "
        f"bridge-mcsnoop no to lower them"]


def test_access_vxlans_are_merged_under_per_vlan_snooping():
    objs = [iface("br0", "bridge", 1, bridge_vlan_aware=True, bridge_mcast_vlan_snooping=True,
                  bridge_ports=["vni10", "vni20"]),
            vni("vni10", 10, 10, bridge_access=10), vni("vni20", 20, 20, bridge_access=20)]
    new, report = lower(build(*objs))
    assert [(x.into, x.replaced) for x in report.lowered] == [("vxlan0", ("vni10", "vni20"))]


def test_vxlans_with_different_tunnel_settings_are_merged_apart():
    objs = [iface("br0", "bridge", 1, bridge_vlan_aware=True, bridge_mcsnoop=False,
                  bridge_ports=["a", "b", "c"]),
            vni("a", 10, 10, bridge_access=10), vni("b", 20, 20, bridge_access=20),
            vni("c", 30, 30, bridge_access=30, vxlan_local_tunnelip="192.0.2.9")]
    new, report = lower(build(*objs))
    assert [(x.into, x.replaced) for x in report.lowered] == [("vxlan0", ("a", "b"))]
    assert new.iface("", "br0").attrs["bridge-ports"] == ["vxlan0", "c"]
    assert reasons(report) == [
        f"c ({F}:30) not lowered: no other vxlan port has the same vxlan-local-tunnelip, "
        f"vxlan-port, vxlan-learning, mtu, bridge-learning, bridge-portmcrouter and auto; it "
        f"stays an access port of br0"]


# ---------------------------------------------------------------- refusals

def refused(*objs: ConfigObject, off: tuple[str, ...] = ()) -> list[str]:
    model = build(*objs, off=off)
    before = snapshot(model)
    new, report = lower(model)
    assert snapshot(model) == before
    if not report.lowered:
        assert new is model
    return reasons(report)


def test_a_refused_bridge_does_not_stop_others_on_its_ports():
    """br10 keeps swp1.10 (it has an address); br20 still lowers onto swp1,
    because the kernel gives swp1.10 its frames before the bridge sees them."""
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10, bridge_attrs={"address": ["10.0.0.1/24"]}),
            *per_vlan(20, ("swp1",), 20)]
    model = build(*objs)
    new, report = lower(model)
    assert reasons(report) == [
        f"br10 ({F}:10) not lowered: it has an address ({F}:14); on a VLAN-aware bridge that "
        f"would need a VLAN interface for VLAN 10, which lowering does not create"]
    assert [(x.into, x.replaced) for x in report.lowered] == [("vbr0", ("br20",))]
    assert new.iface("", "swp1").attrs["bridge-vids"] == ["20"]
    assert new.iface("", "br10").attrs["bridge-ports"] == ["swp1.10"]
    assert new.iface("", "swp1.10") is model.iface("", "swp1.10")
    assert new.iface("", "swp1.20") is None


@pytest.mark.parametrize("attrs, why", [
    ({"bridge-stp": True}, "it runs STP (bridge-stp yes, {F}:12); a VLAN-aware bridge runs "
                           "one spanning tree for all its VLANs, not one per VLAN"),
    ({"mtu": 9000}, "it sets mtu ({F}:14), which a VLAN-aware bridge could not keep for "
                    "VLAN 10 alone"),
    ({"vrf": "red"}, "it is in vrf red ({F}:14); on a VLAN-aware bridge that would need a "
                     "VLAN interface for VLAN 10, which lowering does not create"),
    ({"link-down": True}, "it is kept down (link-down yes, {F}:14); a VLAN-aware bridge "
                          "cannot keep one VLAN down"),
])
def test_refuses_bridge_attributes(attrs, why):
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10, bridge_attrs=attrs)]
    assert refused(*objs) == [f"br10 ({F}:10) not lowered: " + why.format(F=F)]


def test_snooping_bridges_lower_to_per_vlan_snooping():
    """Each per-VLAN bridge had its own querier and router ports; the lowered
    bridge keeps that per VLAN (mcast_vlan_snooping) instead of refusing."""
    objs = [*phys("swp1", "swp2")]
    for vid in (10, 11):
        bridge, *subs = per_vlan(vid, ("swp1", "swp2"), vid * 10)
        del bridge.attrs["bridge-mcsnoop"]  # the kernel default: snooping on
        objs += [bridge, *subs]
    new, report = lower(build(*objs))
    assert reasons(report) == []
    vbr = new.iface("", "vbr0")
    assert vbr.attrs["bridge-mcsnoop"] is True
    assert vbr.attrs["bridge-mcast-vlan-snooping"] is True


def test_refuses_a_group_that_disagrees_on_snooping():
    objs = [*phys("swp1")]
    snooping, sub10 = per_vlan(10, ("swp1",), 10)
    del snooping.attrs["bridge-mcsnoop"]
    quiet, sub11 = per_vlan(11, ("swp1",), 20)
    assert refused(*objs, snooping, sub10, quiet, sub11) == [
        f"br10 ({F}:10) not lowered: br10 ({F}:10) and br11 ({F}:20) differ in "
        f"bridge-mcsnoop; they share lower ports, so they would become one VLAN-aware bridge",
        f"br11 ({F}:20) not lowered: br10 ({F}:10) and br11 ({F}:20) differ in "
        f"bridge-mcsnoop; they share lower ports, so they would become one VLAN-aware bridge"]


def test_refuses_a_bridge_that_is_named_elsewhere():
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10),
            iface("d0", "dummy", 30, link_type="dummy",
                  route=[{"to": "10.9.0.0/16", "via": "10.0.0.9", "dev": "br10"}])]
    assert refused(*objs) == [
        f"br10 ({F}:10) not lowered: it is named by d0 in route ({F}:32)"]


def test_refuses_a_bridge_that_is_a_port_itself():
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10),
            iface("top", "bridge", 30, bridge_ports=["br10"])]
    assert refused(*objs) == [f"br10 ({F}:10) not lowered: it is named by top in "
                              f"bridge-ports ({F}:31)"]


def test_refuses_subinterface_attributes():
    bridge, sub = per_vlan(10, ("swp1",), 10)
    sub.attrs["mtu"] = 1400
    sub.locs["mtu"] = at(99)
    q_bridge, q_sub = per_vlan(20, ("swp2",), 20)
    q_sub.attrs["vlan-protocol"] = "802.1ad"
    q_sub.locs["vlan-protocol"] = at(98)
    assert refused(*phys("swp1", "swp2"), bridge, sub, q_bridge, q_sub) == [
        f"br10 ({F}:10) not lowered: its port swp1.10 sets mtu ({F}:99), which a port of a "
        f"VLAN-aware bridge could not keep for one VLAN",
        f"br20 ({F}:20) not lowered: its port swp2.20 is an 802.1ad VLAN ({F}:98); lowering "
        f"makes 802.1Q VLANs",
    ]


def test_refuses_a_subinterface_used_by_something_else():
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10),
            iface("mv0", "macvlan", 30, macvlan_raw_device="swp1.10")]
    # Found through the macvlan kind's references hook.
    assert refused(*objs) == [f"br10 ({F}:10) not lowered: its port swp1.10 is named by mv0 "
                              f"in macvlan-raw-device ({F}:31)"]


def test_refuses_a_bridge_down_while_its_ports_are_up():
    bridge, sub = per_vlan(10, ("swp1",), 10)
    bridge.auto = False
    assert refused(*phys("swp1"), bridge, sub) == [
        f"br10 ({F}:10) not lowered: it is not auto, but its port swp1.10 ({F}:10) is; a "
        f"VLAN-aware bridge cannot leave one VLAN down"]


def test_refuses_a_lower_port_with_l3_or_a_master():
    assert refused(*phys("swp1", address=["10.0.0.1/24"]), *per_vlan(10, ("swp1",), 10)) == [
        f"br10 ({F}:10) not lowered: swp1 has an address ({F}:2), which would stop working "
        f"once it is a port of a VLAN-aware bridge"]
    objs = [*phys("swp1"), iface("bond0", "bond", 40, bond_slaves=["swp1"]),
            *per_vlan(10, ("swp1",), 10)]
    assert refused(*objs) == [
        f"br10 ({F}:10) not lowered: swp1 is named by bond0 in bond-slaves ({F}:41)"]


def test_a_routed_vlan_on_a_lower_port_stays_beside_the_lowered_bridge():
    # swp1.99 has an address and is not a bridge port: it stays a VLAN device
    # on swp1 and keeps VLAN 99's frames; br10 and br20 still lower.
    objs = [*phys("swp1", "swp2", "swp3"),
            iface("swp1.99", "vlan", 50, vlan_raw_device="swp1", vlan_id=99,
                  address=["10.0.0.1/24"]),
            *per_vlan(10, ("swp1", "swp2"), 10), *per_vlan(20, ("swp2", "swp3"), 20)]
    new, report = lower(build(*objs))
    assert reasons(report) == []
    assert [(x.into, x.replaced) for x in report.lowered] == [("vbr0", ("br10", "br20"))]
    assert new.iface("", "swp1.99").attrs["address"] == ["10.0.0.1/24"]
    assert new.iface("", "vbr0").attrs["bridge-ports"] == ["swp1", "swp2", "swp3"]


def test_a_lower_port_with_an_address_refuses_only_its_bridges():
    objs = [*phys("swp1", address=["10.0.0.1/24"]), *phys("swp2", "swp3", line=2),
            *per_vlan(10, ("swp1", "swp2"), 10), *per_vlan(20, ("swp2", "swp3"), 20)]
    new, report = lower(build(*objs))
    assert reasons(report) == [
        f"br10 ({F}:10) not lowered: swp1 has an address ({F}:2), which would stop working "
        f"once it is a port of a VLAN-aware bridge"]
    assert [(x.into, x.replaced) for x in report.lowered] == [("vbr0", ("br20",))]
    assert new.iface("", "swp2.10") is not None  # br10's port stays on swp2


def test_refuses_a_vlan_of_a_device_in_another_namespace():
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10, netns="t1")]
    objs[2].attrs["vlan-raw-netns"] = ""
    objs[2].locs["vlan-raw-netns"] = at(97)
    assert refused(*objs) == [
        f"br10 (netns t1, {F}:10) not lowered: its port swp1.10 is a VLAN of a device in "
        f"another namespace ({F}:97), which cannot be a port of br10"]


def test_a_veth_peer_does_not_stop_its_other_end_from_being_a_port():
    objs = [iface("v1", "veth", 1, veth_peer_name="v1p", veth_peer_netns="t1"),
            iface("v1p", "veth", 3, netns="t1", veth_peer_name="v1", veth_peer_netns=""),
            *per_vlan(10, ("v1",), 10), *per_vlan(11, ("v1",), 20)]
    new, report = lower(build(*objs))
    assert report.refusals == []
    assert new.iface("", "vbr0").attrs["bridge-ports"] == ["v1"]
    assert new.iface("", "v1").attrs["bridge-vids"] == ["10-11"]
    assert new.iface("t1", "v1p") is objs[1]


def test_lower_off_files():
    off = "/etc/netcfg/legacy.tmpl"
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10)]
    objs[1] = iface("br10", "bridge", 3, file=off, bridge_ports=["swp1.10"],
                    bridge_stp=False, bridge_mcsnoop=False)
    assert refused(*objs, off=(off,)) == [
        f"br10 ({off}:3) not lowered: it is declared in {off}, which says "
        f"`# netcfg: lower=off`"]
    objs = [iface("swp1", "physical", 1, file=off), *per_vlan(10, ("swp1",), 10)]
    assert refused(*objs, off=(off,)) == [
        f"br10 ({F}:10) not lowered: swp1 is declared in {off}, which says "
        f"`# netcfg: lower=off`"]


def test_refuses_groups_that_disagree():
    # VLAN 10 bridged apart on swp1 and on swp2; br30 on both would join them.
    objs = [*phys("swp1", "swp2"), *per_vlan(10, ("swp1",), 10),
            *per_vlan(10, ("swp2",), 20, name="other10"), *per_vlan(30, ("swp1", "swp2"), 30)]
    why = (f"VLAN 10 is bridged by both br10 ({F}:10) and other10 ({F}:20); one VLAN-aware "
           f"bridge would join the two")
    assert refused(*objs) == [f"br10 ({F}:10) not lowered: {why}",
                              f"other10 ({F}:20) not lowered: {why}",
                              f"br30 ({F}:30) not lowered: {why}"]
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10, bridge_attrs={"bridge-ageing": 30}),
            *per_vlan(20, ("swp1",), 20)]
    why = (f"br10 ({F}:10) and br20 ({F}:20) have different bridge-ageing; they share lower "
           f"ports, so they would become one VLAN-aware bridge")
    assert refused(*objs) == [f"br10 ({F}:10) not lowered: {why}",
                              f"br20 ({F}:20) not lowered: {why}"]


def test_refuses_mixed_ports():
    bridge, sub = per_vlan(10, ("swp1",), 10, extra_ports=("swp2",))
    other, sub20 = per_vlan(20, ("swp3",), 20)
    sub20.attrs["vlan-id"] = 21  # swp3.20 is VLAN 21: allowed, but br20 has two VLANs
    other.attrs["bridge-ports"].append("swp3.10")
    extra = iface("swp3.10", "vlan", 25, vlan_raw_device="swp3", vlan_id=10)
    assert refused(*phys("swp1", "swp2", "swp3"), bridge, sub, other, sub20, extra) == [
        f"br10 ({F}:10) not lowered: its port swp2 is a physical, not a VLAN subinterface or "
        f"a vxlan",
        f"br20 ({F}:20) not lowered: its ports are different VLANs: swp3.20 is VLAN 21, "
        f"swp3.10 is VLAN 10",
    ]


def test_refuses_a_bridge_over_the_port_limit():
    lowers = tuple(f"p{i}" for i in range(1024))
    objs = [*phys(*lowers), *per_vlan(10, lowers[:600], 10000),
            *per_vlan(11, lowers[600:], 20000), *per_vlan(12, ("p0", "p1023"), 30000)]
    why = ("the VLAN-aware bridge would have 1024 ports; a Linux bridge holds at most 1023")
    assert refused(*objs) == [f"br10 ({F}:10000) not lowered: {why}",
                              f"br11 ({F}:20000) not lowered: {why}",
                              f"br12 ({F}:30000) not lowered: {why}"]


def test_bridges_without_vlan_ports_are_not_mentioned():
    objs = [*phys("swp1", "swp2"), iface("br0", "bridge", 10, bridge_ports=["swp1", "swp2"],
                                         address=["10.0.0.1/24"])]
    model = build(*objs)
    new, report = lower(model)
    assert new is model and report.refusals == [] and report.lowered == []
    assert report.to_text() == ["lowering: nothing lowered (3 netdevs)"]


# ---------------------------------------------------------------- report, switch, scale

def test_disabled_returns_the_model_unchanged():
    model = build(*phys("swp1"), *per_vlan(10, ("swp1",), 10))
    new, report = lower(model, enabled=False)
    assert new is model
    assert report == LoweringReport(netdevs_before=3, netdevs_after=3)
    assert report.lowered == [] and report.refusals == [] and report.estimated_bytes_saved == 0


def test_to_json():
    objs = [*phys("swp1"), *per_vlan(10, ("swp1",), 10), *per_vlan(11, ("swp1",), 20),
            *phys("swp9", address=["10.0.0.1/24"], line=90), *per_vlan(12, ("swp9",), 30)]
    _, report = lower(build(*objs))
    out = report.to_json()
    assert out["netdevs_before"] == 8 and out["netdevs_after"] == 5
    assert out["lowered"] == [{
        "kind": "bridge", "into": "vbr0", "file": F, "line": 10, "replaced": ["br10", "br11"],
        "netdevs_removed": 4, "netdevs_added": 1, "bytes_saved": report.lowered[0].bytes_saved,
        "subinterfaces": 2, "ports": ["swp1"], "vlans": ["10-11"]}]
    assert out["refusals"] == [{"file": F, "line": 30, "reason": reasons(report)[0]}]
    assert isinstance(report.refusals[0], Refusal)


def test_4094_vlans_on_48_ports_become_one_bridge():
    lowers = tuple(f"swp{i}" for i in range(1, 49))
    objs = list(phys(*lowers))
    for vid in range(1, 4095):
        objs += per_vlan(vid, lowers, 100 + vid)
    model = build(*objs)
    new, report = lower(model)   # its time: bench/compile
    assert report.netdevs_before == 48 + 4094 * 49 and report.netdevs_after == 49
    (item,) = report.lowered
    assert item.vlans == ("1-4094",) and item.subinterfaces == 4094 * 48
    assert item.text() == (f"4094 bridges br1..br4094 and 196512 VLAN subinterfaces ({F}:101) "
                           f"-> 1 VLAN-aware bridge vbr0 with ports swp1..swp48, VLANs 1-4094")
    assert all(new.iface("", p).attrs["bridge-vids"] == ["1-4094"] for p in lowers)
    # ~27 GB: 4094 bridges and 196512 subinterface ports against 48 ports.
    assert 27e9 < report.estimated_bytes_saved < 28e9
