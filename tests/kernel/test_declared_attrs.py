"""Table-only attributes (a schema declaration each, x-netcfg-kernel) against
the real kernel: applied, read back by iproute2 in the kernel's own units,
then `apply` again sends nothing, and a changed knob is a link-set.

The host kernel has bridge (without VLAN filtering) and vxlan; bonds are the
VM tier's.
"""

from __future__ import annotations

import textwrap

from builders import compiled
from kernel_env import link_details

from netcfg.apply.execute import apply

KNOBS = textwrap.dedent("""\
    auto v0
    iface v0
        link-type veth
        veth-peer-name v0p
        bridge-portprios 10
        bridge-pathcosts 200
        bridge-portmcrouter enabled
        bridge-portmcfl yes
        bridge-learning off
        bridge-unicast-flood off
        bridge-multicast-flood off
        bridge-broadcast-flood off
        bridge-arp-nd-suppress on

    auto br1
    iface br1
        bridge-ports v0
        bridge-stp off
        bridge-fd 0
        bridge-hello 1
        bridge-maxage 10
        bridge-bridgeprio 4096
        bridge-hashmax 8192
        bridge-mcrouter 2
        bridge-mcqifaddr yes
        bridge-mcquerier yes
        bridge-mclmc 3
        bridge-mcsqc 3
        bridge-mclmi 2
        bridge-mcmi 300
        bridge-mcqpi 200
        bridge-mcqi 100
        bridge-mcqri 5
        bridge-mcsqi 20
        bridge-igmp-version 3
        bridge-mld-version 2
        bridge-mcstats on

    auto vx100
    iface vx100
        ip-forward yes
        ip6-forward on
        arp-accept 1
        vxlan-id 100
        vxlan-local-tunnelip 192.0.2.10
        vxlan-ageing 600
        vxlan-ttl 64
    """)


def test_declared_knobs_reach_the_kernel_and_read_back(session, tmp_path):
    first = apply(compiled(tmp_path, KNOBS).model, session)
    assert first.verified and first.requests > 0
    br = link_details("br1")["linkinfo"]["info_data"]
    # iproute2 prints the timers in centiseconds (clock_t), as the kernel keeps them.
    assert (br["forward_delay"], br["hello_time"], br["max_age"]) == (0, 100, 1000)
    assert br["priority"] == 4096 and br["mcast_hash_max"] == 8192
    assert br["mcast_router"] == 2 and br["mcast_query_use_ifaddr"] == 1
    assert br["mcast_querier"] == 1
    assert (br["mcast_last_member_cnt"], br["mcast_startup_query_cnt"]) == (3, 3)
    assert (br["mcast_last_member_intvl"], br["mcast_membership_intvl"],
            br["mcast_querier_intvl"], br["mcast_query_intvl"],
            br["mcast_query_response_intvl"], br["mcast_startup_query_intvl"]) == \
        (200, 30000, 20000, 10000, 500, 2000)
    assert (br["mcast_igmp_version"], br["mcast_mld_version"]) == (3, 2)
    assert br["mcast_stats_enabled"] == 1
    port = link_details("v0")["linkinfo"]["info_slave_data"]
    assert (port["priority"], port["cost"], port["multicast_router"]) == (10, 200, 2)
    assert port["fastleave"] is True and port["learning"] is False
    assert port["flood"] is False and port["mcast_flood"] is False
    assert port["bcast_flood"] is False and port["neigh_suppress"] is True
    vx = link_details("vx100")["linkinfo"]["info_data"]
    assert vx["ageing"] == 600 and vx["ttl"] == 64
    # Per-device sysctls: the kernel's only door, written in the device's namespace.
    for path in ("ipv4/conf/vx100/forwarding", "ipv6/conf/vx100/forwarding",
                 "ipv4/conf/vx100/arp_accept"):
        with open(f"/proc/sys/net/{path}") as f:
            assert f.read().strip() == "1", path
    with open("/proc/sys/net/ipv4/conf/br1/forwarding") as f:
        assert f.read().strip() == "0"

    again = apply(compiled(tmp_path, KNOBS).model, session)
    assert again.requests == 0

    # A changed knob is a link-set on the device as it is (no re-creation).
    index = link_details("br1")["ifindex"]
    changed_text = KNOBS.replace("bridge-hello 1\n", "bridge-hello 3\n") \
        .replace("vxlan-ttl 64\n", "vxlan-ttl 32\n").replace("bridge-portprios 10\n",
                                                             "bridge-portprios 20\n")
    changed = apply(compiled(tmp_path, changed_text).model, session)
    assert changed.verified and changed.requests > 0
    assert link_details("br1")["linkinfo"]["info_data"]["hello_time"] == 300
    assert link_details("br1")["ifindex"] == index
    assert link_details("vx100")["linkinfo"]["info_data"]["ttl"] == 32
    assert link_details("v0")["linkinfo"]["info_slave_data"]["priority"] == 20
    assert apply(compiled(tmp_path, changed_text).model, session).requests == 0
