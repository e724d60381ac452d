"""Apply a desired model to the kernel: plan, write in batches, verify, revert.

    current = read back (only what netcfg manages)     <- the revert target
    plan    = order(diff(lowered desired, current))
    for each batch: netns changes, then one netlink transact per namespace
    verify  = read back again; diff(desired, now) must be empty
    on any failure: diff(revert target, now) is applied, and we say what
    failed (exit 3), or what is left if the revert failed too (exit 4)

The revert target is captured before anything is written; the revert's
operations are computed against what the kernel really has at the time of
the failure, so a batch that failed halfway is undone exactly.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import Any

from netcfg.compile.model import Model
from netcfg.errors import EXIT_APPLY_FAILED_REVERTED, EXIT_REVERT_FAILED, NetcfgError
from netcfg.gcpause import gc_paused
from netcfg.kernel.encode import encode
from netcfg.kernel.nl import NetlinkError, Request
from netcfg.kernel.session import KernelSession
from netcfg.plan.diff import diff
from netcfg.plan.lower import lower
from netcfg.plan.ops import (LINK_ADD, LINK_DEL, LINK_SET, NETNS_ADD, NETNS_DEL, REMOVALS,
                             Operation)
from netcfg.plan.planner import Plan, build_plan


class ApplyFailed(NetcfgError):
    """Writing failed and the previous state was restored (exit 3)."""

    exit_code = EXIT_APPLY_FAILED_REVERTED


class RevertFailed(NetcfgError):
    """Writing failed and restoring the previous state failed too (exit 4)."""

    exit_code = EXIT_REVERT_FAILED


@dataclass
class ApplyResult:
    plan: Plan
    requests: int = 0          # netlink write requests sent (barriers not counted)
    verified: bool = False
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"operations": len(self.plan), "batches": len(self.plan.batches),
                "requests": self.requests, "verified": self.verified, "dry_run": self.dry_run}


def managed_view(desired: Model, current: Model, session: KernelSession,
                 namespaces: list[str]) -> Model:
    """The part of current state netcfg compares against: the namespaces this
    config uses, what the config names, and devices netcfg created (tagged
    with its group). Devices and namespaces nobody configured are left alone."""
    wanted = set(namespaces)
    view = Model(namespaces={n: o for n, o in current.namespaces.items() if n in wanted})
    for key, obj in current.interfaces.items():
        netns, name = key
        state = session.states.get(netns)
        if key in desired.interfaces or (state is not None and name in state.managed):
            view.interfaces[key] = obj
    view.masters = {k: m for k, m in current.masters.items() if k in view.interfaces}
    return view


def apply(desired: Model, session: KernelSession, *, lower_enabled: bool = True,
          dry_run: bool = False) -> ApplyResult:
    with gc_paused():
        target, lowering = lower(desired, enabled=lower_enabled)
        namespaces = target.netns_names()
        before = managed_view(target, session.read(namespaces), session, namespaces)
        plan = build_plan(diff(target, before))
        plan.lowering = lowering
    result = ApplyResult(plan, dry_run=dry_run)
    if dry_run or not plan.batches:
        result.verified = not plan.batches
        return result
    try:
        result.requests = _execute(plan, session)
        drift = diff(target, managed_view(target, session.read(namespaces), session, namespaces))
        if drift:
            raise ApplyFailed("verification failed: the kernel does not have "
                              + "; ".join(op.describe() for op in drift[:5]))
        result.verified = True
    except NetcfgError as failure:
        _revert(before, namespaces, session, failure)
    return result


def _execute(plan: Plan, session: KernelSession) -> int:
    """Run the batches in order; returns the netlink write requests sent."""
    sent = 0
    for batch in plan.batches:
        _namespace_ops(batch, session)
        by_netns: dict[str, list[Operation]] = {}
        for op in batch:
            if op.action not in (NETNS_ADD, NETNS_DEL):
                by_netns.setdefault(op.netns, []).append(op)
        touched: set[str] = set()
        for netns, ops in by_netns.items():
            sent += _transact(netns, ops, session)
            for op in ops:
                if op.action in (LINK_ADD, LINK_DEL):
                    touched.add(netns)
                    peer_netns = op.params.get("peer_netns")
                    if peer_netns is not None:
                        touched.add(peer_netns)
        if touched:
            session.read(touched)  # new devices' ifindexes for the next batches
    return sent


def _namespace_ops(batch: list[Operation], session: KernelSession) -> None:
    added = [op.name for op in batch if op.action == NETNS_ADD]
    deleted = [op.name for op in batch if op.action == NETNS_DEL]
    if added:
        for handle in session.nsdir.create_many(added):
            session.handles[handle.name] = handle
    if deleted:
        for name in deleted:
            session.forget(name)
        session.nsdir.delete_many(deleted)


class _Context:
    """What encode() needs to know about the kernel, answered from read-back."""

    def __init__(self, netns: str, session: KernelSession):
        self.netns = netns
        self.session = session

    def ifindex(self, netns: str, name: str) -> int:
        return self.session.ifindex(netns, name)

    def netns_fd(self, netns: str) -> int:
        return self.session.netns(netns).fd

    def nsid(self, netns_of_socket: str, other: str) -> int | None:
        return None  # nsids are assigned by netcfgd (issue 4); same-namespace lowers only

    def vrf_table(self, netns: str, name: str) -> int:
        state = self.session.states[netns]
        return state.interfaces[name].attrs["vrf-table"]


def _transact(netns: str, ops: list[Operation], session: KernelSession) -> int:
    ctx = _Context(netns, session)
    requests: list[Request] = []
    owners: list[Operation] = []
    for op in ops:
        for request in encode(op, ctx):
            requests.append(request)
            owners.append(op)
        _sysctls(op, session)
    if not requests:
        return 0
    result = session.socket(netns).transact(requests)
    failures = [(owners[i], error) for i, error in enumerate(result.errors)
                if error is not None and not _already_done(owners[i], error)]
    if failures:
        op, error = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise ApplyFailed(f"{op.describe()}: {error}{more}")
    return len(requests)


# A removal whose object is already gone reached the wanted state: a device
# of a namespace being destroyed vanishes on its own, a moment later.
_GONE = {errno.ENODEV, errno.ESRCH, errno.EADDRNOTAVAIL, errno.ENOENT}


def _already_done(op: Operation, error: NetlinkError) -> bool:
    return op.action in REMOVALS and error.errno in _GONE


def _sysctls(op: Operation, session: KernelSession) -> None:
    """disable-ipv6 is a per-device sysctl, not a netlink attribute: written
    from the helper thread inside the device's namespace (/proc/sys/net is
    the namespace of whoever opens it)."""
    if op.action not in (LINK_ADD, LINK_SET) or "disable-ipv6" not in op.params:
        return
    value = "1" if op.params["disable-ipv6"] else "0"
    path = f"/proc/sys/net/ipv6/conf/{op.name}/disable_ipv6"

    def write() -> None:
        with open(path, "w") as f:
            f.write(value)

    session.switcher.call(session.netns(op.netns), write)


def _revert(before: Model, namespaces: list[str], session: KernelSession,
            failure: NetcfgError) -> None:
    try:
        now = managed_view(before, session.read(namespaces), session, namespaces)
        back = build_plan(diff(before, now))
        _execute(back, session)
    except NetcfgError as second:
        raise RevertFailed(f"{failure}; the revert failed too: {second}") from None
    raise ApplyFailed(f"{failure}; the previous state was restored") from None
