"""ifupdown2's port options written on the bridge (`bridge-pathcosts v0=40`,
`bridge-learning off` for every port) against the real kernel: each port
gets the value, as its own line would give it, read back by iproute2; the
bridge itself gets none; a second apply sends nothing; moving a value from
the bridge's line to the port's own sends nothing either (one model).
bridge-l2protocol-tunnel's upstream part (stp, lacp, lldp) rides along."""

from __future__ import annotations

import textwrap

from builders import compiled
from kernel_env import link_details

from netcfg.apply.execute import apply

ON_BRIDGE = textwrap.dedent("""\
    auto v0
    iface v0
        link-type veth
        veth-peer-name v0p

    auto v1
    iface v1
        link-type veth
        veth-peer-name v1p
        bridge-learning on

    auto br1
    iface br1
        bridge-ports v0 v1
        bridge-learning off
        bridge-pathcosts v0=40 v1=50
        bridge-portprios v1=12
        bridge-portmcrouter v0=enabled
        bridge-portmcfl v0=yes
        bridge-unicast-flood v1=off
        bridge-multicast-flood v1=off
        bridge-arp-nd-suppress v0=on
        bridge-l2protocol-tunnel v0=stp,lacp v1=lldp
    """)

ON_PORTS = textwrap.dedent("""\
    auto v0
    iface v0
        link-type veth
        veth-peer-name v0p
        bridge-learning off
        bridge-pathcosts 40
        bridge-portmcrouter 2
        bridge-portmcfl yes
        bridge-arp-nd-suppress on
        bridge-l2protocol-tunnel stp lacp

    auto v1
    iface v1
        link-type veth
        veth-peer-name v1p
        bridge-learning on
        bridge-pathcosts 50
        bridge-portprios 12
        bridge-unicast-flood off
        bridge-multicast-flood off
        bridge-l2protocol-tunnel lldp

    auto br1
    iface br1
        bridge-ports v0 v1
    """)


def port_data(dev: str) -> dict:
    return link_details(dev)["linkinfo"]["info_slave_data"]


def test_port_options_on_the_bridge_reach_each_port(session, tmp_path):
    first = apply(compiled(tmp_path, ON_BRIDGE).model, session)
    assert first.verified and first.requests > 0
    v0, v1 = port_data("v0"), port_data("v1")
    assert (v0["learning"], v0["cost"], v0["priority"]) == (False, 40, 32)
    assert v0["multicast_router"] == 2 and v0["fastleave"] is True
    assert v0["neigh_suppress"] is True and v0["flood"] is True
    # v1's own line wins over the bridge's plain value (ifupdown2's rule)
    assert (v1["learning"], v1["cost"], v1["priority"]) == (True, 50, 12)
    assert v1["flood"] is False and v1["mcast_flood"] is False
    assert v1["multicast_router"] == 1 and v1["neigh_suppress"] is False
    # bridge-l2protocol-tunnel: IFLA_BRPORT_GROUP_FWD_MASK, ifupdown2's bits
    assert (v0["group_fwd_mask"], v1["group_fwd_mask"]) == ("0x5", "0x4000")

    assert apply(compiled(tmp_path, ON_BRIDGE).model, session).requests == 0
    # The same settings written in the ports' stanzas are the same state.
    assert apply(compiled(tmp_path, ON_PORTS).model, session).requests == 0

    changed = apply(compiled(tmp_path, ON_BRIDGE.replace("v0=40", "v0=45")).model, session)
    assert changed.verified and changed.requests > 0
    assert port_data("v0")["cost"] == 45


VXLAN_PORT = textwrap.dedent("""\
    auto vx10
    iface vx10
        vxlan-id 10
        vxlan-local-tunnelip 192.0.2.10

    auto vx20
    iface vx20
        vxlan-id 20
        vxlan-local-tunnelip 192.0.2.10
        vxlan-learning yes

    auto br2
    iface br2
        bridge-ports vx10 vx20
        bridge-learning vx10=off vx20=off
    """)


def test_a_vxlan_ports_learning_follows_its_bridge_learning(session, tmp_path):
    """ifupdown2's sync_bridge_learning_to_vxlan_brport: vx10's vxlan
    learning goes off with its port learning; vx20 writes its own."""
    result = apply(compiled(tmp_path, VXLAN_PORT).model, session)
    assert result.verified

    vx10, vx20 = (link_details(dev)["linkinfo"] for dev in ("vx10", "vx20"))
    assert vx10["info_slave_data"]["learning"] is False
    assert vx10["info_data"]["learning"] is False
    assert vx20["info_slave_data"]["learning"] is False
    assert vx20["info_data"]["learning"] is True
    assert apply(compiled(tmp_path, VXLAN_PORT).model, session).requests == 0
