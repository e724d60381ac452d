"""ifupdown2 attributes netcfg knows of but does not support, and why.

An unsupported attribute is always an error (never silently ignored); for
these the error also says what to do instead.
"""

from __future__ import annotations

EXPLANATIONS = {
    "vrf-default-route": "netcfg installs no implicit routes in VRF tables; write them "
                         "with 'route ... vrf NAME'",
    "bond-use-carrier": "the kernel removed use_carrier semantics; bond-miimon is enough",
    "link-speed": "link speed, duplex and autonegotiation are ethtool settings netcfg "
                  "does not manage",
    "link-duplex": "link speed, duplex and autonegotiation are ethtool settings netcfg "
                   "does not manage",
    "link-autoneg": "link speed, duplex and autonegotiation are ethtool settings netcfg "
                    "does not manage",
    "bridge-fd": "STP timers are not supported; netcfg runs the kernel STP with its defaults",
    "bridge-maxage": "STP timers are not supported; netcfg runs the kernel STP with its defaults",
    "bridge-hello": "STP timers are not supported; netcfg runs the kernel STP with its defaults",
}


# Families of ifupdown2 attributes, by prefix. Valid netcfg attributes with the
# same prefix (bridge-mcsnoop) never get here: only unknown names are explained.
PREFIXES = (
    ("mstpctl-", "MSTP settings are mstpd's (the MSTP daemon), which netcfg does not run; "
                 "bridge-stp yes runs the kernel's STP"),
    ("bridge-mc", "IGMP/MLD snooping tunables are not supported; bridge-mcsnoop turns "
                  "snooping on or off and bridge-mcast-vlan-snooping keeps it per VLAN"),
    ("bridge-portmc", "per-port multicast settings are not supported"),
    ("bridge-hash", "the bridge's multicast database size is not configurable in netcfg"),
    ("batman-", "B.A.T.M.A.N. mesh devices are not supported"),
    ("clag", "CLAG/MLAG settings are clagd's (Cumulus's MLAG daemon), which netcfg does "
             "not run"),
    ("ovs-", "Open vSwitch bridges and ports are ovs-vswitchd's (set through ovs-vsctl by "
             "ifupdown2's openvswitch addon), which netcfg does not run; use a Linux bridge "
             "(bridge-ports)"),
)


def explain(attribute: str) -> str | None:
    for prefix, reason in PREFIXES:
        if attribute.startswith(prefix):
            return reason
    return EXPLANATIONS.get(attribute)
