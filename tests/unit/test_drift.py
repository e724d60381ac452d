"""query --check's explanations: the config line that asks, and what differs."""

from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.plan.drift import explain
from netcfg.plan.ops import ADDR_ADD, LINK_SET, LINK_UP, MASTER_SET, ROUTE_ADD, Operation

CONFIG = """\
auto br0
iface br0
    bridge-ports swp1
auto swp1
iface swp1
    mtu 9000
auto eth0
iface eth0
    netns t1
    link-type veth
    veth-peer-name v1
    veth-peer-netns ""
    address 10.0.0.2/24
    gateway 10.0.0.1
"""


def model(tmp_path):
    (tmp_path / "site.tmpl").write_text(CONFIG)
    return compile_config(ConfigSource(path=str(tmp_path / "site.tmpl"))).model


def test_each_difference_points_at_the_line_that_asks_for_it(tmp_path):
    m = model(tmp_path)
    f = str(tmp_path / "site.tmpl")
    cases = [
        (Operation(ADDR_ADD, "t1", "eth0", "10.0.0.2/24"), 13,
         "eth0 (netns t1): address 10.0.0.2/24 is configured but not on the device"),
        (Operation(ROUTE_ADD, "t1", "eth0", "0.0.0.0/0"), 14,
         "eth0 (netns t1): route 0.0.0.0/0 is configured but not in the kernel"),
        (Operation(LINK_SET, "", "swp1", params={"mtu": 9000}), 6,
         "swp1: configured mtu 9000, the kernel has other values"),
        (Operation(MASTER_SET, "", "swp1", params={"master": "br0"}), 3,
         "swp1 is not enslaved to br0, as configured"),
        (Operation(LINK_UP, "", "br0"), 2, "br0 is down; the config brings it up (auto)"),
    ]
    for op, line, message in cases:
        loc, text = explain(op, m)
        assert (loc.file, loc.line, text) == (f, line, message)


def test_something_no_longer_configured_has_no_line(tmp_path):
    loc, text = explain(Operation("link-del", "", "old0"), model(tmp_path))
    assert loc.line == 0 and text.startswith("old0 was made by netcfg")


def test_a_metric_replacement_points_at_address_virtual(tmp_path):
    (tmp_path / "site.tmpl").write_text("auto br0\niface br0\n    bridge-ports none\n"
                                        "    address-virtual none 10.0.0.1/24\n")
    m = compile_config(ConfigSource(path=str(tmp_path / "site.tmpl"))).model
    loc, text = explain(Operation(ADDR_ADD, "", "br0-v0", "10.0.0.1/24",
                                  params={"metric": 1024, "replace": True}), m)
    assert (loc.line, text) == (
        4, "br0-v0: not every address has the configured metric 1024; 10.0.0.1/24 is given "
           "it again")
