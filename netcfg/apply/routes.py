"""Other programs' routes in purge namespaces: the route-dels a purge adds
to the plan, and putting them back as they were dumped when the apply is
reverted. The messages themselves are netcfg.netlink.encode's.
"""

from __future__ import annotations

from typing import Any, Collection, Iterator, Mapping

from netcfg.kernel.read import ForeignRoute
from netcfg.kernel.session import KernelSession
from netcfg.model.errors import NetcfgError
from netcfg.netlink.encode import PROTOCOL, route_readd
from netcfg.netlink.nlmsg import RT_TABLE_MAIN, Request
from netcfg.netlink.read_parse import DEFAULT_METRIC
from netcfg.plan.ops import ROUTE_ADD, ROUTE_DEL, Operation

Key = tuple[str, str]
PROTOCOL_NAMES = {3: "boot", 4: "static", 16: "dhcp", 186: "bgp", 188: "ospf"}


def foreign_route_removals(states: Mapping[str, Any], purge: Collection[str],
                           spared: Collection[Key] = ()) -> list[Operation]:
    """A route-del for each route of another program in the purge namespaces,
    but those through the ``spared`` devices (the DHCP client's)."""
    ops = []
    for netns in sorted(purge):
        state = states.get(netns)
        for foreign in state.foreign_routes if state is not None else ():
            route = foreign.route
            dev = state.names.get(route.oif, "") if route.oif is not None else ""
            if (netns, dev) in spared:
                continue
            params: dict[str, Any] = {"to": route.to}
            if route.via:
                params["via"] = route.via
            if dev:
                params["dev"] = dev
            params.update(table=route.table, metric=route.metric, protocol=route.protocol)
            ops.append(Operation(ROUTE_DEL, netns, dev, _foreign_subject(route), params=params))
    return ops


def _foreign_subject(route) -> str:
    subject = route.to + (f" via {route.via}" if route.via else "")
    if route.table != RT_TABLE_MAIN:
        subject += f" table {route.table}"
    if route.metric != DEFAULT_METRIC.get(route.family, 0):
        subject += f" metric {route.metric}"
    return subject + f" proto {PROTOCOL_NAMES.get(route.protocol, route.protocol)}"


def _route_identity(route, dev: str) -> tuple:
    return (route.family, route.to, route.via, dev, route.table, route.metric, route.protocol)


def restore_requests(purged: dict[str, list[tuple[ForeignRoute, str]]],
                     session: KernelSession) -> Iterator[tuple[str, list[Request]]]:
    """Add back what a purge removed of other programs' routes (a revert):
    each as it was dumped, through its device's ifindex now (a device
    re-created by the revert has a new one). Yields each namespace's
    requests for the caller to send before the next is looked at."""
    if not purged:
        return
    session.read(list(purged), foreign_routes=list(purged))
    for netns, routes in purged.items():
        state = session.states.get(netns)
        if state is None:
            continue
        have = {_route_identity(r.route, state.names.get(r.route.oif, ""))
                for r in state.foreign_routes}
        requests = []
        for foreign, dev in routes:
            if _route_identity(foreign.route, dev) in have:
                continue
            if dev and dev not in state.ifindex:
                raise NetcfgError(f"route {foreign.route.to} (netns {netns}) cannot be put "
                                  f"back: its device {dev} is gone")
            op = Operation(ROUTE_ADD, netns, dev, _foreign_subject(foreign.route),
                           params={PROTOCOL: foreign.route.protocol})
            requests.append(route_readd(op, foreign.payload, foreign.route.table,
                                        state.ifindex.get(dev)))
        if requests:
            yield netns, requests
