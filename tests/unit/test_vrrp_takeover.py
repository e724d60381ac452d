"""plan/vrrp.py: which kernel devices are ifupdown2's macvlans of this
config's `vrrp` lines (all conditions at once), and that the managed view
takes in those and nothing else. The kernel tier
(tests/kernel/test_vrrp_takeover.py) applies it."""

from __future__ import annotations

import pytest

from builders import compiled

from netcfg.model.model import IFACE, ConfigObject, Model
from netcfg.plan.scope import managed_view
from netcfg.plan.vrrp import ifupdown2_name, ifupdown2_vrrp, vrrp_macvlan, vrrp_name

CONFIG = """\
    auto eth0
    iface eth0
        vrrp 10 192.0.2.1 2001:db8::1
    auto bridge0.1000
    iface bridge0.1000
        vrrp 255 198.51.100.1
    """
IFINDEX = {"": {"eth0": 3, "eth1": 4, "bridge0.1000": 7}}


def macvlan(name: str, lower: str = "eth0", mac: str = "00:00:5e:00:01:0a", **attrs):
    return ConfigObject(section=IFACE, name=name, kind="macvlan",
                        attrs={"macvlan-raw-device": lower, "hwaddress": mac, **attrs})


def kernel(*objs: ConfigObject) -> Model:
    base = [ConfigObject(section=IFACE, name=n, kind="veth") for n in IFINDEX[""]]
    return Model(interfaces={o.key: o for o in [*base, *objs]})


@pytest.fixture
def desired(tmp_path) -> Model:
    return compiled(tmp_path, CONFIG).model


def test_netcfgs_own_vrrp_macvlans_are_recognised(desired):
    assert vrrp_macvlan(desired.iface("", "vrrp4-eth0-10")) == ("eth0", 4, 10)
    assert vrrp_macvlan(desired.iface("", "vrrp6-eth0-10")) == ("eth0", 6, 10)
    hashed = vrrp_name("bridge0.1000", 4, 255)
    assert len(hashed) == 15 and vrrp_macvlan(desired.iface("", hashed)) == (
        "bridge0.1000", 4, 255)
    assert vrrp_macvlan(macvlan("mv0")) is None   # VRRP MAC, but not netcfg's vrrp name


def test_ifupdown2s_devices_match_on_every_condition(desired):
    theirs = [macvlan("vrrp4-3-10"), macvlan("vrrp6-3-10", mac="00:00:5E:00:02:0A"),
              macvlan("vrrp4-7-255", "bridge0.1000", "00:00:5e:00:01:ff")]
    assert ifupdown2_vrrp(desired, kernel(*theirs), IFINDEX, {}) == {
        ("", "vrrp4-3-10"): ("", "vrrp4-eth0-10"), ("", "vrrp6-3-10"): ("", "vrrp6-eth0-10"),
        ("", "vrrp4-7-255"): ("", vrrp_name("bridge0.1000", 4, 255))}
    assert ifupdown2_name(3, 6, 10) == "vrrp6-3-10"


@pytest.mark.parametrize("near_miss", [
    macvlan("vrrp4-3-10", mac="00:00:5e:00:01:0b"),          # another id's MAC
    macvlan("vrrp4-3-10", mac="00:00:5e:00:02:0a"),          # the other family's MAC
    macvlan("vrrp4-4-10"),                                   # another ifindex in the name
    macvlan("vrrp4-3-11", mac="00:00:5e:00:01:0b"),          # an id the config has not
    macvlan("vrrp4-3-10", "eth1"),                           # another lower device
    macvlan("vrrp4-3-10", **{"macvlan-raw-netns": "t1"}),    # a lower device elsewhere
    ConfigObject(section=IFACE, name="vrrp4-3-10", kind="macvtap",   # another kind
                 attrs={"macvlan-raw-device": "eth0", "hwaddress": "00:00:5e:00:01:0a"}),
], ids=["mac", "family", "ifindex", "id", "lower", "lower-netns", "kind"])
def test_a_near_miss_is_left_alone(desired, near_miss):
    current = kernel(near_miss)
    assert ifupdown2_vrrp(desired, current, IFINDEX, {}) == {}
    view = managed_view(desired, current, {}, [""], ifindex=IFINDEX)
    assert near_miss.key not in view.interfaces


def test_the_view_takes_in_ifupdown2s_and_not_what_the_config_declares(desired, tmp_path):
    current = kernel(macvlan("vrrp4-3-10"))
    assert ("", "vrrp4-3-10") in managed_view(desired, current, {}, [""],
                                              ifindex=IFINDEX).interfaces
    assert ("", "vrrp4-3-10") not in managed_view(desired, current, {}, [""]).interfaces
    # netcfg made it (its group) or the config declares it: not ifupdown2's to replace.
    assert ifupdown2_vrrp(desired, current, IFINDEX, {"": {"vrrp4-3-10"}}) == {}
    declared = compiled(tmp_path, CONFIG + """\
    iface vrrp4-3-10
        macvlan-raw-device eth1
    """).model
    assert ifupdown2_vrrp(declared, current, IFINDEX, {}) == {}
    # Without the vrrp line, a macvlan with that name and MAC is not ifupdown2's for it.
    assert ifupdown2_vrrp(compiled(tmp_path, "auto eth0\niface eth0\n").model, current,
                          IFINDEX, {}) == {}
