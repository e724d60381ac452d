"""Apply a desired model to the kernel: plan, write in batches, verify, revert.

    current = read back (what netcfg compares, a _Scope) <- the revert target
    plan    = order(diff(lowered desired, current))
    for each batch: netns changes, then one netlink transact per namespace
    verify  = read back again; diff(desired, now) must be empty
    on any failure: diff(revert target, now) is applied, and we say what
    failed (exit 3), or what is left if the revert failed too (exit 4)

The revert target is captured before anything is written; the revert's
operations are computed against what the kernel really has at the time of
the failure, so a batch that failed halfway is undone exactly. ``revert()``
is public: ``apply --confirm`` reverts a verified apply nobody confirmed.

What a run compares: the namespaces the config uses, the objects it names
and the devices netcfg made (its group); in a namespace with ``purge yes``,
everything else there too, and other programs' routes (read only there).
A ``Selection`` cuts both sides down to some interfaces or namespaces.
``down()`` is the same machinery aimed at a model without netcfg's devices.

Deletions go in bulk at execution, not in the pure planner: when every
device netcfg made in a namespace is being deleted, their link-dels are sent
as one RTM_DELLINK by group (``group_deletes``; DESIGN.md: 2000 devices in
~0.6 s instead of 35-41 s one by one).
"""

from __future__ import annotations

import dataclasses
import errno
import ipaddress
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, Sequence

from netcfg.apply import dhcp
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.read import ForeignRoute
from netcfg.kernel.session import KernelSession
from netcfg.kinds import registry
from netcfg.kinds.base import LOWER, PEER
from netcfg.model.errors import (EXIT_APPLY_FAILED_REVERTED, EXIT_REVERT_FAILED, NetcfgError,
                                 UsageError, did_you_mean)
from netcfg.model.gcpause import gc_paused
from netcfg.model.model import IFACE, ROOT_NETNS, ConfigObject, Model
from netcfg.netlink.encode import delete_group, encode
from netcfg.netlink.nlmsg import (AF_INET, AF_INET6, NLM_F_CREATE, NLM_F_EXCL, RT_SCOPE_NOWHERE,
                                  RTA_DST, RTA_GATEWAY, RTA_MULTIPATH, RTA_OIF, RTA_PREFSRC,
                                  RTA_PRIORITY, RTA_SRC, RTA_TABLE, RTM_DELROUTE, RTM_NEWROUTE,
                                  RTMSG, RTN_UNSPEC, Request, parse_attrs, rtattr, rtattr_u32,
                                  rtmsg)
from netcfg.netlink.read_parse import DEFAULT_METRIC
from netcfg.netlink.tags import NETCFG_GROUP
from netcfg.plan.diff import PEER_NETNS_PARAM, PEER_PARAM, dhcp_owned, diff
from netcfg.plan.lower.lowering import lower
from netcfg.plan.ops import (LINK_ADD, LINK_DEL, LINK_SET, NETNS_ADD, NETNS_DEL, REMOVALS,
                             ROUTE_ADD, ROUTE_DEL, Operation)
from netcfg.plan.planner import Plan, build_plan

Key = tuple[str, str]
RT_TABLE_MAIN = 254
# A route-del of another program's route carries its protocol: sent as is
# (encode.py deletes only proto 110), and shown in the plan.
PROTOCOL = "protocol"
PROTOCOL_NAMES = {3: "boot", 4: "static", 16: "dhcp", 186: "bgp", 188: "ospf"}
# What a device the config does not declare loses in a purge namespace, when
# netcfg cannot delete it (physical, lo, a kind it does not know).
PURGED_ATTRIBUTES = ("address", "route", "vrf")


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
    dhcp: list[str] = field(default_factory=list)  # DHCP clients started or stopped
    # What revert() needs: the state before, how it was read, and the routes
    # of other programs a purge removes (not in the model), as they were.
    before: Model | None = field(default=None, repr=False)
    scope: "_Scope | None" = field(default=None, repr=False)
    purged_routes: dict[str, list[tuple[ForeignRoute, str]]] = field(
        default_factory=dict, repr=False)

    def summary(self) -> dict[str, Any]:
        return {"operations": len(self.plan), "batches": len(self.plan.batches),
                "requests": self.requests, "verified": self.verified, "dry_run": self.dry_run,
                "dhcp": self.dhcp}


# ---------------------------------------------------------------- what is compared

def managed_view(desired: Model, current: Model, session: KernelSession,
                 namespaces: list[str], purge: Collection[str] = ()) -> Model:
    """The part of current state netcfg compares against: the namespaces this
    config uses, what the config names, and devices netcfg created (tagged
    with its group); in ``purge`` namespaces, every device. Devices and
    namespaces nobody configured are left alone elsewhere."""
    wanted = set(namespaces)
    view = Model(namespaces={n: o for n, o in current.namespaces.items() if n in wanted})
    for key, obj in current.interfaces.items():
        netns, name = key
        state = session.states.get(netns)
        if key in desired.interfaces or netns in purge or (
                state is not None and name in state.managed):
            view.interfaces[key] = obj
    view.masters = {k: m for k, m in current.masters.items() if k in view.interfaces}
    return view


@dataclass(frozen=True)
class Selection:
    """Part of a config to apply: interfaces by name (in every namespace, or
    only in ``namespaces``), or whole namespaces. Each interface brings what
    it is connected to, transitively: its veth peer, lower device, master,
    ports, and the devices its routes name."""

    interfaces: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    # Namespaces whose objects this run must not change though the selection
    # reaches them (netcfgd: those with `policy report`).
    frozen: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.interfaces or self.namespaces)

    def keys(self, target: Model, current: Model) -> set[Key]:
        known = target.interfaces.keys() | current.interfaces.keys()
        namespaces = set(target.netns_names()) | set(current.namespaces)
        for netns in self.namespaces:
            if netns not in namespaces:
                raise UsageError(f"--netns {netns}: the config uses no such namespace"
                                 + did_you_mean(netns, namespaces - {ROOT_NETNS}))
        picked = {k for k in known if (k[1] in self.interfaces if self.interfaces else True)
                  and (k[0] in self.namespaces if self.namespaces else True)}
        for name in self.interfaces:
            if not any(k[1] == name for k in picked):
                where = f" in netns {', '.join(self.namespaces)}" if self.namespaces else ""
                raise UsageError(f"no interface {name!r}{where} in the config or made by netcfg"
                                 + did_you_mean(name, {k[1] for k in known}))
        reached = _connected(picked, (target, current))
        return {k for k in reached if k[0] not in self.frozen} if self.frozen else reached

    def cut(self, model: Model, keys: set[Key]) -> Model:
        namespaces = {k[0] for k in keys} | set(self.namespaces)
        return dataclasses.replace(
            model, interfaces={k: o for k, o in model.interfaces.items() if k in keys},
            namespaces={n: o for n, o in model.namespaces.items() if n in namespaces},
            masters={k: m for k, m in model.masters.items() if k in keys and m in keys})


def _references(obj: ConfigObject, roles: Collection[str] | None = None) -> list[Key]:
    """Interfaces ``obj`` names (through its kind's and traits' hooks), in
    any role or in ``roles``."""
    try:
        hooks = registry.hooks_for(obj.kind)
    except KeyError:
        return []
    return [(r.netns, r.name) for hook in hooks for r in hook.references(obj)
            if r.section == IFACE and (roles is None or r.role in roles)]


def _connected(keys: set[Key], models: Iterable[Model]) -> set[Key]:
    models = list(models)
    out, todo = set(keys), list(keys)
    while todo:
        key = todo.pop()
        for model in models:
            obj = model.interfaces.get(key)
            near = _references(obj) if obj is not None else []
            if key in model.masters:
                near.append(model.masters[key])
            for other in near:
                if other not in out:
                    out.add(other)
                    todo.append(other)
    return out


@dataclass
class _Scope:
    """How one run reads the kernel: these namespaces, the managed view of
    them (everything in ``purge`` namespaces), cut to a selection's keys."""

    session: KernelSession
    desired: Model
    namespaces: list[str]
    purge: frozenset[str] = frozenset()
    selection: Selection | None = None
    keys: set[Key] | None = None

    def current(self) -> Model:
        if self.purge:
            model = self.session.read(self.namespaces, foreign_routes=self.purge)
        else:   # a KernelSession subclass may take names only (bench/apply)
            model = self.session.read(self.namespaces)
        view = managed_view(self.desired, model, self.session, self.namespaces, self.purge)
        if self.selection is not None and self.keys is not None:
            view = self.selection.cut(view, self.keys)
        return view

    def operations(self, wanted: Model, current: Model) -> list[Operation]:
        return diff(wanted, current) + foreign_route_removals(
            self.session.states, self.purge, dhcp_devices(wanted))

    def foreign_routes(self) -> dict[str, list[tuple[ForeignRoute, str]]]:
        """Other programs' routes in purge namespaces, with their device names."""
        out = {}
        for netns in self.purge:
            state = self.session.states.get(netns)
            if state is not None and state.foreign_routes:
                out[netns] = [(r, state.names.get(r.route.oif, "")) for r in state.foreign_routes]
        return out


# ---------------------------------------------------------------- purge

def purge_target(target: Model, current: Model, purge: Collection[str],
                 kernel_kinds: Mapping[Key, str]) -> tuple[Model, list[str]]:
    """What purge namespaces should hold: what the config declares, plus the
    devices netcfg never deletes (physical ones, ``lo``, kinds it does not
    know) as they are, without addresses, routes or a master the config does
    not give them. Undeclared devices of kinds netcfg creates are absent, so
    the diff deletes them. Notes say what was left and why."""
    kept: dict[Key, ConfigObject] = {}
    notes = []
    for key, cur in current.interfaces.items():
        if key[0] not in purge or key in target.interfaces or _creatable(cur.kind):
            continue
        attrs = {a: v for a, v in cur.attrs.items() if a not in PURGED_ATTRIBUTES}
        kept[key] = ConfigObject(section=cur.section, name=cur.name, kind=cur.kind,
                                 netns=cur.netns, attrs=attrs, loc=cur.loc, auto=cur.auto)
        if key in kernel_kinds:
            notes.append(f"purge: {cur.label()} is a {kernel_kinds[key]} device, a kind netcfg "
                         f"does not delete; left in place, without its addresses and routes")
    if not kept:
        return target, notes
    return dataclasses.replace(target, interfaces={**target.interfaces, **kept}), notes


def _creatable(kind: str) -> bool:
    try:
        return registry.kind(kind).creatable
    except KeyError:
        return False


def dhcp_devices(model: Model) -> set[Key]:
    """Interfaces a DHCP client configures: their routes are the client's."""
    return {key for key, obj in model.interfaces.items() if dhcp_owned(obj)}


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


# ---------------------------------------------------------------- apply, down, revert

def apply(desired: Model, session: KernelSession, *, lower_enabled: bool = True,
          dry_run: bool = False, selection: Selection | None = None,
          lowered: tuple[Model, Any] | None = None, narrow: bool = False) -> ApplyResult:
    """``lowered``: lower(desired) done once by the caller (netcfgd keeps it
    between passes). ``narrow``: with a selection, read only the namespaces
    the selection reaches in the desired model (netcfgd's passes, whose cost
    must not grow with the namespaces it did not touch); the CLI reads all."""
    with gc_paused():
        target, lowering = lowered if lowered is not None else lower(desired,
                                                                     enabled=lower_enabled)
        purge = {n for n, o in target.namespaces.items() if o.attrs.get("purge")}
        if selection:
            # Purge is a namespace's: only when whole namespaces are applied.
            purge &= set() if selection.interfaces else set(selection.namespaces)
        namespaces = target.netns_names()
        if not selection:
            # Namespaces netcfg made that the config no longer names: read
            # them too, so the diff removes them (and what leads into them).
            namespaces += sorted(session.marked_namespaces(besides=namespaces))
        if selection and narrow:
            unfrozen = dataclasses.replace(selection, frozen=())
            reached = {k[0] for k in unfrozen.keys(target, Model())}
            namespaces = [n for n in namespaces
                          if n in reached or n in selection.namespaces]
        scope = _Scope(session, target, namespaces, frozenset(purge))
        # A DHCP client whose interface is no longer dhcp deconfigures it when
        # stopped (dhclient-script flushes its addresses): stop it before the
        # state is read and written, start new ones once verified.
        stopped = [] if dry_run else dhcp.stop_unwanted(target, namespaces, selection)
        before = scope.current()
        if selection:
            scope.selection, scope.keys = selection, selection.keys(target, before)
            target, before = selection.cut(target, scope.keys), selection.cut(before, scope.keys)
        kinds = {(n, name): kind for n in purge if n in session.states
                 for name, kind in session.states[n].kernel_kinds.items()}
        wanted, notes = purge_target(target, before, purge, kinds)
    try:
        result = _converge(wanted, before, scope, dry_run=dry_run, lowering=lowering,
                           notes=notes)
    except ApplyFailed:
        dhcp.restart(stopped)   # the revert restored their interfaces
        raise
    if not dry_run:
        # Interfaces with `inet dhcp` are up and verified: the DHCP client
        # takes them from here (netcfg/apply/dhcp.py).
        result.dhcp = [f"stopped {lease.describe()}" for lease in stopped]
        result.dhcp += dhcp.start_wanted(target)
    return result


def down(config: Model, session: KernelSession, *, namespaces: Sequence[str] = (),
         everything: bool = False, dry_run: bool = False) -> ApplyResult:
    """Take down what netcfg made: its devices in ``namespaces`` (by group),
    and each of those namespaces itself when the config uses it (netcfg made
    it); with ``everything``, every namespace the config uses and netcfg's
    devices in the host's. A veth's other end goes with it, wherever it is.
    Devices netcfg did not make are never deleted; in a namespace deleted
    here, physical ones go back to the host's namespace (the kernel does
    that) and other programs' virtual ones go with it."""
    declared = set(config.netns_names()) - {ROOT_NETNS}
    if everything:
        targets = [ROOT_NETNS, *sorted(declared)]
    else:
        existing = session.existing_namespaces()
        for name in namespaces:
            if name not in declared and name not in existing:
                raise UsageError(f"--netns {name}: no such namespace, and the config uses none "
                                 f"by that name" + did_you_mean(name, declared | existing))
        targets = list(dict.fromkeys(namespaces))
    scope = _Scope(session, Model(), list(dict.fromkeys([ROOT_NETNS, *targets])))
    with gc_paused():
        before = scope.current()
        after = _without(before, set(targets), {n for n in targets if n in declared})
    result = _converge(after, before, scope, dry_run=dry_run)
    if not dry_run:
        result.dhcp = dhcp.release(targets)
    return result


def _without(model: Model, namespaces: set[str], dead: set[str]) -> Model:
    """``model`` less its devices in ``namespaces`` (and what sits on them or
    pairs with them, anywhere), less the ``dead`` namespaces."""
    gone = {k for k in model.interfaces if k[0] in namespaces}
    grew = True
    while grew:
        grew = False
        for key, obj in model.interfaces.items():
            # Devices it cannot outlive: its veth peer, its lower device.
            if key not in gone and any(ref in gone for ref in _references(obj, (PEER, LOWER))):
                gone.add(key)
                grew = True
    kept = {}
    for key, obj in model.interfaces.items():
        if key in gone:
            continue
        if (key[0], obj.attrs.get("vrf")) in gone:   # its VRF goes: the kernel releases it
            obj = dataclasses.replace(obj, attrs={a: v for a, v in obj.attrs.items()
                                                  if a != "vrf"})
        kept[key] = obj
    return dataclasses.replace(
        model, interfaces=kept,
        namespaces={n: o for n, o in model.namespaces.items() if n not in dead},
        masters={k: m for k, m in model.masters.items() if k in kept and m in kept})


def _converge(wanted: Model, before: Model, scope: _Scope, *, dry_run: bool,
              lowering: Any = None, notes: Sequence[str] = ()) -> ApplyResult:
    """Plan from ``before`` to ``wanted``, execute, verify; revert on failure."""
    with gc_paused():
        plan = build_plan(scope.operations(wanted, before))
    plan.lowering = lowering
    plan.notes.extend(notes)
    bulk = group_deletes(plan, scope.session.managed())
    plan.notes.extend(bulk.notes)
    result = ApplyResult(plan, dry_run=dry_run, before=before, scope=scope,
                         purged_routes=scope.foreign_routes())
    if dry_run or not plan.batches:
        result.verified = not plan.batches
        return result
    try:
        result.requests = _execute(plan, scope.session, bulk)
        drift = scope.operations(wanted, scope.current())
        if drift:
            raise ApplyFailed("verification failed: the kernel does not have "
                              + "; ".join(op.describe() for op in drift[:5]))
        result.verified = True
    except _WRITE_FAILURES as failure:
        revert(result, _reason(failure))
    return result


# Once writing has started, any of these must end in a revert, never escape
# as an internal error with the kernel half-configured: a device whose
# ifindex is unknown (KeyError from the encode context), a socket or sysctl
# error (OSError), as well as netcfg's own errors.
_WRITE_FAILURES = (NetcfgError, KeyError, OSError)


def _reason(failure: BaseException) -> str:
    if isinstance(failure, KeyError):
        return f"no such device in the kernel: {failure.args[0] if failure.args else failure}"
    return str(failure)


def revert(result: ApplyResult, why: str) -> None:
    """Put back the state from before ``result``'s apply (verified, or failed
    halfway); raises ApplyFailed saying ``why`` (exit 3), or RevertFailed
    (exit 4). Other programs' routes a purge removed are put back too."""
    scope, before = result.scope, result.before
    if scope is None or before is None:
        raise ValueError("only an ApplyResult of apply() or down() can be reverted")
    try:
        now = scope.current()
        back = build_plan(diff(before, now))
        _execute(back, scope.session)
        _restore_routes(result.purged_routes, scope.session)
    except _WRITE_FAILURES as second:
        raise RevertFailed(f"{why}; the revert failed too: {_reason(second)}") from None
    raise ApplyFailed(f"{why}; the previous state was restored") from None


# ---------------------------------------------------------------- bulk deletion

@dataclass
class GroupDeletes:
    """Link-dels sent as one delete by group: at which batch (index) each
    namespace's goes, and the keys of the link-dels it stands for."""

    at: dict[int, list[str]] = field(default_factory=dict)
    replaced: set[tuple[str, str, str, str]] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)


def group_deletes(plan: Plan, managed: Mapping[str, Collection[str]]) -> GroupDeletes:
    """Namespaces where the plan deletes every device netcfg made there (by a
    link-del of its own, or of its veth peer elsewhere): their own link-dels
    become one RTM_DELLINK by group, sent in the batch of the last of them,
    so whatever had to come before each one still does."""
    covered: dict[str, set[str]] = {}
    own: dict[str, list[tuple[int, Operation]]] = {}
    for number, batch in enumerate(plan.batches):
        for op in batch:
            if op.action != LINK_DEL:
                continue
            covered.setdefault(op.netns, set()).add(op.name)
            if op.params.get(PEER_PARAM):
                covered.setdefault(op.params.get(PEER_NETNS_PARAM, op.netns), set()).add(
                    op.params[PEER_PARAM])
            if op.name in managed.get(op.netns, ()):
                own.setdefault(op.netns, []).append((number, op))
    out = GroupDeletes()
    for netns, ops in own.items():
        if not set(managed[netns]) <= covered[netns]:
            continue
        out.at.setdefault(max(number for number, _ in ops), []).append(netns)
        out.replaced.update(op.key for _, op in ops)
        out.notes.append(f"{len(ops)} link-del{'s' if len(ops) > 1 else ''} in "
                         f"{'netns ' + netns if netns else 'the host namespace'} sent as one "
                         f"delete by group {NETCFG_GROUP}: every device netcfg made there goes")
    return out


# ---------------------------------------------------------------- execution

def _execute(plan: Plan, session: KernelSession, bulk: GroupDeletes | None = None) -> int:
    """Run the batches in order; returns the netlink write requests sent."""
    if bulk is None:
        bulk = group_deletes(plan, session.managed())
    sent = 0
    # Tables of the vrfs this plan creates, for routes into them in later batches.
    vrf_tables = {(op.netns, op.name): op.params["table"] for batch in plan.batches
                  for op in batch if op.action == LINK_ADD and op.params.get("kind") == "vrf"}
    total, done = len(plan), 0
    for number, batch in enumerate(plan.batches):
        _namespace_ops(batch, session)
        by_netns: dict[str, list[Operation]] = {}
        for op in batch:
            if op.action not in (NETNS_ADD, NETNS_DEL) and op.key not in bulk.replaced:
                by_netns.setdefault(op.netns, []).append(op)
        grouped = bulk.at.get(number, [])
        for netns in grouped:
            by_netns.setdefault(netns, [])
        # Devices created here have the ifindexes new_ifindex() chose; where
        # devices went (a deleted device can take others with it: a vlan on
        # its lower) or the kernel chose, the next batches need them read.
        touched: set[str] = set(grouped)
        for netns, ops in by_netns.items():
            sent += _transact(netns, ops, session, vrf_tables,
                              [delete_group(netns)] if netns in grouped else [])
            for op in ops:
                if op.action == LINK_DEL:
                    touched.add(netns)
                    touched.add(op.params.get(PEER_NETNS_PARAM, netns))
        touched |= session.unknown_ifindexes
        if touched:
            # Names and ifindexes only, not a full read.
            session.refresh_ifindexes(touched)
        done += len(batch)
        if session.on_batch is not None:
            session.on_batch(number + 1, len(plan.batches), done, total)
    return sent


def _namespace_ops(batch: list[Operation], session: KernelSession) -> None:
    added = [op.name for op in batch if op.action == NETNS_ADD]
    deleted = [op.name for op in batch if op.action == NETNS_DEL]
    if added:
        for handle in session.nsdir.create_many(added):
            session.handles[handle.name] = handle
        session.open_sockets([ROOT_NETNS, *added])
        # Every managed namespace gets an nsid in the host's view (`nsid N` in
        # its netns stanza, else the kernel's pick): cross-namespace devices
        # and netcfgd's one event socket name namespaces by it.
        for op in batch:
            if op.action == NETNS_ADD:
                session.nsid(ROOT_NETNS, op.name, op.params.get("nsid"))
                session.mark_netns(op.name)
        # A new namespace comes with lo (and, with their modules loaded, the
        # fallback tunnel devices): their ifindexes, before devices are made there.
        session.refresh_ifindexes(added)
    if deleted:
        for name in deleted:
            session.forget(name)
        session.nsdir.delete_many(deleted)


class _Context:
    """What encode() needs to know about the kernel, answered from read-back."""

    def __init__(self, netns: str, session: KernelSession,
                 vrf_tables: dict[tuple[str, str], int]):
        self.netns = netns
        self.session = session
        self.vrf_tables = vrf_tables

    def ifindex(self, netns: str, name: str) -> int:
        return self.session.ifindex(netns, name)

    def netns_fd(self, netns: str) -> int:
        return self.session.netns(netns).fd

    def nsid(self, netns_of_socket: str, other: str) -> int | None:
        return self.session.nsid(netns_of_socket, other)

    def new_ifindex(self, netns: str, name: str) -> int:
        return self.session.new_ifindex(netns, name)

    def vrf_table(self, netns: str, name: str) -> int:
        # A vrf created by this plan is not in the read-back state yet.
        created = self.vrf_tables.get((netns, name))
        if created is not None:
            return created
        return self.session.states[netns].interfaces[name].attrs["vrf-table"]


def _encode(op: Operation, ctx: _Context) -> list[Request]:
    if op.action == ROUTE_DEL and PROTOCOL in op.params:
        return [_foreign_route_del(op, ctx)]
    return encode(op, ctx)


def _transact(netns: str, ops: list[Operation], session: KernelSession,
              vrf_tables: dict[tuple[str, str], int], extra: Sequence[Request] = ()) -> int:
    ctx = _Context(netns, session, vrf_tables)
    requests: list[Request] = []
    for op in ops:
        requests.extend(_encode(op, ctx))
    requests.extend(extra)
    if requests:
        _send(netns, requests, session)
    for op in ops:   # after: a device made by this batch has its sysctls only now
        _sysctls(op, session)
    return len(requests)


def _send(netns: str, requests: list[Request], session: KernelSession) -> None:
    """One transact; raises ApplyFailed naming the first request refused."""
    result = session.socket(netns).transact(requests)
    failures = [(requests[i].tag, error) for i, error in enumerate(result.errors)
                if error is not None and not _already_done(requests[i].tag, error)]
    if failures:
        op, error = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise ApplyFailed(f"{op.describe()}: {error}{_taken_hint(op, error)}{more}")


def _taken_hint(op: Operation, error: NetlinkError) -> str:
    """A link-add refused with EEXIST/EBUSY: the name, or the ifindex netcfg
    chose for it (KernelSession.new_ifindex), was taken by someone else."""
    if op.action != LINK_ADD or error.errno not in (errno.EEXIST, errno.EBUSY):
        return ""
    return (" (a device of that name, or with the ifindex netcfg chose for it or its peer, "
            "appeared since the state was read: apply again)")


# A removal whose object is already gone reached the wanted state: a device
# of a namespace being destroyed vanishes on its own, a moment later; an
# empty group answers ENODEV. An addition already there (a route put back).
_GONE = {errno.ENODEV, errno.ESRCH, errno.EADDRNOTAVAIL, errno.ENOENT}


def _already_done(op: Operation, error: NetlinkError) -> bool:
    if op.action in REMOVALS:
        return error.errno in _GONE
    return op.action == ROUTE_ADD and PROTOCOL in op.params and error.errno == errno.EEXIST


def _sysctls(op: Operation, session: KernelSession) -> None:
    """disable-ipv6 is a per-device sysctl, not a netlink attribute: written
    from the helper thread inside the device's namespace (/proc/sys/net is
    the namespace of whoever opens it), once the batch made the device; the
    planner brings a device up in a later batch than it creates or sets it."""
    if op.action not in (LINK_ADD, LINK_SET) or "disable-ipv6" not in op.params:
        return
    value = "1" if op.params["disable-ipv6"] else "0"
    path = f"/proc/sys/net/ipv6/conf/{op.name}/disable_ipv6"

    def write() -> None:
        with open(path, "w") as f:
            f.write(value)

    try:
        session.switcher.call(session.netns(op.netns), write)
    except OSError as e:
        raise ApplyFailed(f"{op.describe()}: cannot write {path}: {e.strerror}") from None


# ---------------------------------------------------------------- other programs' routes

def _foreign_route_del(op: Operation, ctx: _Context) -> Request:
    """Equivalent to: `ip route del PREFIX [via GW] [dev DEV] table T metric M proto P`.

    Scope NOWHERE and type UNSPEC match any; the protocol must match."""
    params = op.params
    dst = ipaddress.ip_network(params["to"])
    table = params["table"]
    attrs = [rtmsg(AF_INET if dst.version == 4 else AF_INET6, dst.prefixlen, table,
                   params[PROTOCOL], RT_SCOPE_NOWHERE, RTN_UNSPEC), rtattr_u32(RTA_TABLE, table)]
    if dst.prefixlen:
        attrs.append(rtattr(RTA_DST, dst.network_address.packed))
    if params.get("via"):
        attrs.append(rtattr(RTA_GATEWAY, ipaddress.ip_address(params["via"]).packed))
    if params.get("dev"):
        attrs.append(rtattr_u32(RTA_OIF, ctx.ifindex(op.netns, params["dev"])))
    if params["metric"]:
        attrs.append(rtattr_u32(RTA_PRIORITY, params["metric"]))
    return Request(RTM_DELROUTE, 0, b"".join(attrs), tag=op)


def _route_identity(route, dev: str) -> tuple:
    return (route.family, route.to, route.via, dev, route.table, route.metric, route.protocol)


def _restore_routes(purged: dict[str, list[tuple[ForeignRoute, str]]],
                    session: KernelSession) -> None:
    """Add back what a purge removed of other programs' routes (a revert):
    each as it was dumped, through its device's ifindex now (a device
    re-created by the revert has a new one)."""
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
                raise ApplyFailed(f"route {foreign.route.to} (netns {netns}) cannot be put "
                                  f"back: its device {dev} is gone")
            requests.append(_route_add(netns, foreign, dev, state.ifindex.get(dev)))
        if requests:
            _send(netns, requests, session)


def _route_add(netns: str, foreign: ForeignRoute, dev: str, ifindex: int | None) -> Request:
    """Equivalent to: `ip route add` of the route as it was dumped."""
    family, dst_len, src_len, tos, _t, protocol, scope, rtm_type, _f = \
        RTMSG.unpack_from(foreign.payload)
    table = foreign.route.table
    kept = parse_attrs(foreign.payload, RTMSG.size,
                       {RTA_DST, RTA_SRC, RTA_GATEWAY, RTA_PREFSRC, RTA_PRIORITY, RTA_MULTIPATH})
    attrs = [rtmsg(family, dst_len, table, protocol, scope, rtm_type, src_len, tos),
             rtattr_u32(RTA_TABLE, table)]
    attrs += [rtattr(attr, bytes(value)) for attr, value in sorted(kept.items())]
    if ifindex is not None:
        attrs.append(rtattr_u32(RTA_OIF, ifindex))
    op = Operation(ROUTE_ADD, netns, dev, _foreign_subject(foreign.route),
                   params={PROTOCOL: protocol})
    return Request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, b"".join(attrs), tag=op)
