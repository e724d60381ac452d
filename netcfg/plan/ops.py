"""Operations: the unit of a plan.

An operation is plain data: what to do (``action``), to which object
(``netns``, ``name``) and with what (``params``). The planner orders them into
batches; netcfg/kernel turns each into one netlink request. Nothing here
knows about netlink.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Actions, in the order a batch lists them (and the kernel edge sends them).
NETNS_ADD, NETNS_DEL = "netns-add", "netns-del"
LINK_ADD, LINK_DEL, LINK_SET = "link-add", "link-del", "link-set"
MASTER_SET, MASTER_UNSET = "master-set", "master-unset"
VLAN_ADD, VLAN_DEL = "vlan-add", "vlan-del"   # bridge port VLANs (ranges)
VNI_ADD, VNI_DEL = "vni-add", "vni-del"       # vnifilter VNIs (ranges)
# VLAN-to-VNI mappings of a vnifilter vxlan's bridge port (ranges).
VLAN_TUNNEL_ADD, VLAN_TUNNEL_DEL = "vlan-tunnel-add", "vlan-tunnel-del"
# A vxlan's remotes: all-zeros forwarding entries (head-end replication).
FDB_ADD, FDB_DEL = "fdb-add", "fdb-del"
ADDR_ADD, ADDR_DEL = "addr-add", "addr-del"
LINK_UP, LINK_DOWN = "link-up", "link-down"
ROUTE_ADD, ROUTE_DEL = "route-add", "route-del"
# Open vSwitch bridges and ports: rows of ovs-vswitchd's database (plan/ovs.py),
# sent as one OVSDB transaction per batch (apply/ovs.py), not netlink.
OVS_ADD, OVS_SET, OVS_DEL = "ovs-add", "ovs-set", "ovs-del"

ACTIONS = (
    NETNS_DEL, ROUTE_DEL, ADDR_DEL, FDB_DEL,
    VLAN_TUNNEL_DEL, VNI_DEL, VLAN_DEL, MASTER_UNSET, LINK_DOWN,
    LINK_DEL, OVS_DEL, NETNS_ADD, OVS_ADD, OVS_SET, LINK_ADD, LINK_SET, MASTER_SET, VLAN_ADD,
    VNI_ADD, VLAN_TUNNEL_ADD, FDB_ADD, ADDR_ADD, LINK_UP, ROUTE_ADD,
)
REMOVALS = frozenset({NETNS_DEL, ROUTE_DEL, ADDR_DEL, FDB_DEL, VLAN_TUNNEL_DEL, VNI_DEL, VLAN_DEL,
                      MASTER_UNSET, LINK_DOWN, LINK_DEL, OVS_DEL})
OVS_ACTIONS = frozenset({OVS_ADD, OVS_SET, OVS_DEL})
# The subject of a vlan-del of what a port got by joining its bridge (the
# kernel gives it the bridge's default PVID): part of adding the port, so
# planned with the additions, after the master-set that gave it.
JOINING = "joining"


def is_removal(op: "Operation") -> bool:
    """Whether ``op`` is planned with the removals (before every addition)."""
    return op.action in REMOVALS and op.subject != JOINING

# How the text form of a plan marks each action.
SIGILS = {a: ("-" if a in REMOVALS else "+") for a in ACTIONS}
SIGILS[LINK_SET] = "~"
SIGILS[OVS_SET] = "~"


@dataclass(frozen=True, slots=True)
class Operation:
    """One change. ``params`` must hold only JSON-able values.

    ``subject`` distinguishes several operations of one action on one object
    (the address for addr-add, the route prefix for route-add).
    """

    action: str
    netns: str
    name: str
    subject: str = ""
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.action, self.netns, self.name, self.subject)

    def describe(self) -> str:
        """One line: ``+ link-add br0 (netns t1) kind=bridge vlan_filtering=true``."""
        where = f" (netns {self.netns})" if self.netns else ""
        subject = f" {self.subject}" if self.subject else ""
        # A param that repeats the subject (a route's `to`) is not shown twice.
        shown = self.subject.split(" ", 1)[0]
        params = " ".join(f"{k}={_fmt(v)}" for k, v in self.params.items()
                          if not (shown and _fmt(v) == shown))
        return f"{SIGILS[self.action]} {self.action} {self.name}{where}{subject}" + (
            f" {params}" if params else "")

    def __str__(self) -> str:
        # Messages name an operation (a netlink error's tag, netcfgd's log)
        # with str(); the dataclass repr is for developers, never operators.
        return self.describe()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "name": self.name}
        if self.netns:
            out["netns"] = self.netns
        if self.subject:
            out["subject"] = self.subject
        if self.params:
            out["params"] = self.params
        return out


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    return str(value)
