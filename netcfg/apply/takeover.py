"""Taking over routes another program made (docs/compat.md, "Takeover").

netcfg reads and diffs only its own routes (protocol 110). On a host that
ifupdown2 configured, the default route of a `gateway` line is already
there, as ifupdown2's (`proto kernel onlink`): netcfg's route-add of the same
prefix, table and metric was answered EEXIST and the whole apply reverted,
so `netcfg apply` failed on every such host. Removing the old route first
would leave the host without it for a moment. Instead the route-add replaces
it in one step (NLM_F_REPLACE, `ip route replace`): the plan says so
(`replace=True`), and the route replaced is kept, exactly as dumped, so a
revert puts it back (apply/routes.py restore_requests).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from netcfg.kernel.read import ForeignRoute
from netcfg.kernel.session import KernelSession
from netcfg.model.tags import RTPROT_NETCFG
from netcfg.netlink.nlmsg import (AF_INET, AF_INET6, AF_UNSPEC, RT_TABLE_MAIN, RTM_GETROUTE,
                                  RTM_NEWROUTE, getroute_dump)
from netcfg.netlink.read_parse import DEFAULT_METRIC, parse_route
from netcfg.plan.ops import ROUTE_ADD, Operation
from netcfg.plan.planner import Plan


def routes_to_replace(plan: Plan, session: KernelSession,
                      vrf_tables: dict | None = None) -> dict[str, list[tuple[ForeignRoute, str]]]:
    """Mark the plan's route-adds whose slot (prefix, table, metric) another
    program's route holds as replacements; returns the routes they replace,
    per namespace, with their device names (what a revert puts back)."""
    adds = [op for batch in plan.batches for op in batch if op.action == ROUTE_ADD
            and "protocol" not in op.params]
    if not adds:
        return {}
    wanted: dict[tuple, Operation] = {}
    for op in adds:
        key = _op_identity(op, vrf_tables or {})
        if key is not None:
            wanted[key] = op
    replaced: dict[str, list[tuple[ForeignRoute, str]]] = {}
    marked: dict[Operation, Operation] = {}
    for netns in sorted({key[0] for key in wanted}):
        state = session.states.get(netns)
        if state is None:
            continue   # a namespace this plan creates holds nobody's routes yet
        # Equivalent to: `ip route show table all` (both families).
        for msg_type, _flags, payload in session.socket(netns).dump(
                RTM_GETROUTE, getroute_dump(AF_UNSPEC)):
            if msg_type != RTM_NEWROUTE:
                continue
            route = parse_route(payload)
            if (route.family not in (AF_INET, AF_INET6) or route.protocol == RTPROT_NETCFG
                    or route.multipath or route.source):
                continue
            op = wanted.get((netns, route.family, route.to, route.table, route.metric))
            if op is None or op in marked:
                continue
            marked[op] = dataclasses.replace(op, params={**op.params, "replace": True})
            replaced.setdefault(netns, []).append(
                (ForeignRoute(route, bytes(payload)), state.names.get(route.oif, "")))
    if marked:
        for batch in plan.batches:
            batch[:] = [marked.get(op, op) for op in batch]
        plan.notes.append(f"{len(marked)} route(s) of another program (ifupdown2's gateway, "
                          f"say) replaced in place, not removed first; a revert puts them back")
    return replaced


def _op_identity(op: Operation, vrf_tables: dict) -> tuple | None:
    params: dict[str, Any] = op.params
    to = params.get("to") or op.subject.split(" ", 1)[0]
    family = AF_INET6 if ":" in to else AF_INET
    if "table" in params:
        table = params["table"]
    elif params.get("vrf"):
        table = vrf_tables.get((op.netns, params["vrf"]))
        if table is None:
            return None
    else:
        table = RT_TABLE_MAIN
    metric = params.get("metric", DEFAULT_METRIC[family])
    return op.netns, family, to, table, metric
