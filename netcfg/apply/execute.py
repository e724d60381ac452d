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
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from netcfg.apply import dhcp, genl, ovs, tunnel_local
from netcfg.apply.hooks import Hooks, HookSettings, hook_added
from netcfg.apply.resolver import Resolver
from netcfg.apply.takeover import routes_to_replace
from netcfg.apply.refusal import Refused, explain
from netcfg.apply.revert import foreign_recreations, not_restored
from netcfg.apply.routes import foreign_route_removals, restore_requests
from netcfg.kernel.modules import load_modules_with_devices
from netcfg.kernel.nl import NetlinkError
from netcfg.kernel.read import ForeignRoute
from netcfg.kernel.session import BORROWED_FDS, KernelSession
from netcfg.kinds import registry
from netcfg.model.errors import (EXIT_APPLY_FAILED_REVERTED, EXIT_REVERT_FAILED, NetcfgError,
                                 UnknownDevice, UsageError, did_you_mean)
from netcfg.model.gcpause import gc_paused
from netcfg.model.model import ROOT_NETNS, Model
from netcfg.model.tags import NETNS_MARK
from netcfg.netlink.attrs import sysctl_writes
from netcfg.netlink.encode import PROTOCOL, delete_group, encode
from netcfg.netlink.nla import LINK
from netcfg.netlink.nlmsg import (IFLA_IFNAME, RTM_NEWLINK, Request, ifinfomsg, rtattr,
                                  rtattr_str)
from netcfg.plan.diff import PEER_NETNS_PARAM, diff
from netcfg.plan.lower.lowering import lower
from netcfg.plan.ops import (LINK_ADD, LINK_DEL, LINK_SET, NETNS_ADD, NETNS_DEL, OVS_ACTIONS,
                             REMOVALS, ROUTE_ADD, Operation)
from netcfg.plan.planner import Plan, build_plan, requires_order
from netcfg.plan.scope import (ForeignPortsRefused, GroupDeletes, Selection, dhcp_devices,
                               foreign_port_drops, group_deletes, keep_guest_bridges,
                               managed_view, purge_target, without_namespaces)

Key = tuple[str, str]


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
    hooks: list[str] = field(default_factory=list)  # imperative lines run, with their output
    # The hooks of this apply: revert() runs the down lines of what it brought up.
    hook_runner: Hooks | None = field(default=None, repr=False)
    # What revert() needs: the state before, how it was read, and the routes
    # of other programs a purge removes (not in the model), as they were.
    before: Model | None = field(default=None, repr=False)
    scope: "_Scope | None" = field(default=None, repr=False)
    purged_routes: dict[str, list[tuple[ForeignRoute, str]]] = field(
        default_factory=dict, repr=False)
    # netcfg's devices (its group) as read before: what a revert may re-create.
    made: dict[str, set[str]] = field(default_factory=dict, repr=False)

    def summary(self) -> dict[str, Any]:
        return {"operations": len(self.plan), "batches": len(self.plan.batches),
                "requests": self.requests, "verified": self.verified, "dry_run": self.dry_run,
                "dhcp": self.dhcp, "hooks": self.hooks}


# ---------------------------------------------------------------- what is compared

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
        # desired: generic netlink state that matters only where a config
        # writes it (NICs' link modes) is asked only there (issue 21/25:
        # Proxmox's 10 s poll loaded pyroute2 for every NIC).
        model = self.session.read(self.namespaces, foreign_routes=self.purge,
                                  desired=self.desired)
        view = managed_view(self.desired, model, self.session.managed(), self.namespaces,
                            self.purge, {n: st.ifindex for n, st in self.session.states.items()})
        # Open vSwitch's bridges and ports, from its database (apply/ovs.py).
        view = ovs.read_into(view, model, self.desired, self.session)
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

# ---------------------------------------------------------------- apply, down, revert

def apply(desired: Model, session: KernelSession, *, lower_enabled: bool = True,
          dry_run: bool = False, selection: Selection | None = None,
          lowered: tuple[Model, Any] | None = None, narrow: bool = False,
          hooks: HookSettings | None = None, force: bool = False) -> ApplyResult:
    """``lowered``: lower(desired) done once by the caller (netcfgd keeps it
    between passes). ``narrow``: with a selection, read only the namespaces
    the selection reaches in the desired model (netcfgd's passes, whose cost
    must not grow with the namespaces it did not touch); the CLI reads all.
    ``hooks``: where if-*.d scripts are and the hook record is
    (netcfg/apply/hooks.py; default HookSettings(): the record in netcfg's
    run dir, no scripts). ``force``: re-create a bridge whose change needs it
    even though ports netcfg does not manage are on it (they are dropped);
    without it such an apply is refused before anything is written."""
    with gc_paused():
        target, lowering = lowered if lowered is not None else lower(desired,
                                                                     enabled=lower_enabled)
        # What only the edge may read (wireguard key files, as the public
        # keys the diff compares): apply/genl.py.
        target = genl.prepare(target, session)
        # tunnel-local-dev: the device's address now, as ifupdown-ng reads it at ifup.
        target = tunnel_local.resolve(target, session)
        target = hook_added(target, hooks)   # what up lines added stays (apply/hooks.py)
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
        # Enough file descriptors for all of them, or nothing is done.
        session.reserve_fds(namespaces)
        scope = _Scope(session, target, namespaces, frozenset(purge))
        # A DHCP client whose interface is no longer dhcp deconfigures it when
        # stopped (dhclient-script flushes its addresses): stop it before the
        # state is read and written, start new ones once verified.
        stopped = [] if dry_run else dhcp.stop_unwanted(target, namespaces, selection)
        if not dry_run:
            # Modules that make devices of their own as they load (tunnels'
            # fallback devices, dummy0): loaded before the read, not by the
            # kernel in the middle of a batch (netcfg/kernel/modules.py).
            load_modules_with_devices(registry.kind(kind).module_with_devices
                                      for kind in {o.kind for o in target.interfaces.values()})
        before = scope.current()
        if selection:
            scope.selection, scope.keys = selection, selection.keys(target, before)
            target, before = selection.cut(target, scope.keys), selection.cut(before, scope.keys)
        kinds = {(n, name): kind for n in purge if n in session.states
                 for name, kind in session.states[n].kernel_kinds.items()}
        # A re-create that would take other programs' ports off a bridge
        # (issue 24): refused unless forced; a dry run says so.
        drops = [] if force else foreign_port_drops(target, before)
        if drops and not dry_run:
            dhcp.restart(stopped)
            raise ForeignPortsRefused(
                "refused, nothing was changed: " + "; ".join(drops) + ". Move those ports "
                "off first, or apply --force to re-create the bridge without them")
        wanted, notes = purge_target(target, before, purge, kinds, force=force)
        notes.extend(f"apply refuses this without --force: {drop}" for drop in drops)
    try:
        result = _converge(wanted, before, scope, dry_run=dry_run, lowering=lowering,
                           notes=notes, hooks=hooks)
    except ApplyFailed:
        dhcp.restart(stopped)   # the revert restored their interfaces
        raise
    if not dry_run:
        # Interfaces with `inet dhcp` are up and verified: the DHCP client
        # takes them from here (netcfg/apply/dhcp.py).
        result.dhcp = [f"stopped {lease.describe()}" for lease in stopped]
        result.dhcp += dhcp.start_wanted(target)
        # dns-* lines: the resolver is told what the up interfaces say.
        result.hooks += Resolver.from_environment().update(target)
    return result


def down(config: Model, session: KernelSession, *, namespaces: Sequence[str] = (),
         everything: bool = False, dry_run: bool = False,
         hooks: HookSettings | None = None) -> ApplyResult:
    """Take down what netcfg made: its devices in ``namespaces`` (by group),
    and each of those namespaces itself when the config uses it (netcfg made
    it); with ``everything``, every namespace the config uses and netcfg's
    devices in the host's. A veth's other end goes with it, wherever it is.
    Devices netcfg did not make are never deleted; in a namespace deleted
    here, physical ones go back to the host's namespace (the kernel does
    that) and other programs' virtual ones go with it. The interfaces the
    hook record has up that go down or away run their down lines."""
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
    # Every existing namespace is asked whether netcfg made it (below).
    session.reserve_fds({ROOT_NETNS, *targets, *session.existing_namespaces()})
    scope = _Scope(session, Model(), list(dict.fromkeys([ROOT_NETNS, *targets])))
    # Only a namespace netcfg made goes (its lo carries tags.NETNS_MARK):
    # one the config uses but another tool made (a container's) stays, and
    # the other tool's devices in it with it (issue 24, M7).
    used = [n for n in targets if n in declared]
    existing_used = set(used) & session.existing_namespaces()
    made = session.marked_namespaces(besides=session.existing_namespaces() - existing_used)
    notes = [f"netns {n} is left in place: its lo carries no '{NETNS_MARK}' mark, so netcfg "
             f"did not make it (only netcfg's devices in it go)"
             for n in sorted(existing_used - made)]
    with gc_paused():
        before = scope.current()
        dead = {n for n in used if n in made}
        after = without_namespaces(before, set(targets), dead)
        # A bridge of netcfg's with a guest's port on it stays (issue 24).
        after, kept = keep_guest_bridges(after, before, besides=dead)
        notes += kept
    result = _converge(after, before, scope, dry_run=dry_run, hooks=hooks,
                       stopping=set(targets), notes=notes)
    if not dry_run:
        result.dhcp = dhcp.release(targets)
    return result


def _converge(wanted: Model, before: Model, scope: _Scope, *, dry_run: bool,
              lowering: Any = None, notes: Sequence[str] = (),
              hooks: HookSettings | None = None,
              stopping: set[str] | None = None) -> ApplyResult:
    """Plan from ``before`` to ``wanted``, execute, verify; revert on failure.
    ``stopping``: down()'s namespaces (its hooks only run down lines)."""
    with gc_paused():
        plan = build_plan(scope.operations(wanted, before), requires_order(wanted))
    plan.lowering = lowering
    plan.notes.extend(notes)
    bulk = group_deletes(plan, scope.session.managed())
    plan.notes.extend(bulk.notes)
    if hooks is None and dry_run:
        # A dry run nobody asked hooks of (`ifquery -c`'s poll, netcfgd's
        # check): the plan's notes, without reading the record.
        hooks = HookSettings(record=None)
    runner = Hooks.for_plan(wanted, plan, scope.session.nsdir.path, hooks,
                            in_reach=_hook_reach(scope, stopping), stopping=stopping is not None,
                            session=scope.session)
    plan.notes.extend(runner.notes())
    # Another program's route in a slot a route-add wants (ifupdown2's
    # gateway): replaced in place, and put back by a revert.
    replaced = routes_to_replace(plan, scope.session)
    result = ApplyResult(plan, dry_run=dry_run, before=before, scope=scope,
                         purged_routes=scope.foreign_routes(),
                         made={n: set(names) for n, names in scope.session.managed().items()})
    for netns, routes in replaced.items():
        result.purged_routes.setdefault(netns, []).extend(routes)
    # What the read already says the kernel cannot take (link modes on a
    # device that is no NIC: apply/genl.py) is refused before any write or
    # hook, not written and reverted; a dry run says so.
    refused = genl.refusal(plan.operations, scope.session)
    if refused is not None:
        if not dry_run:
            raise ApplyFailed(f"{explain(refused, wanted)}; refused, nothing was changed")
        plan.notes.append(f"apply refuses this: {explain(refused, wanted)}")
    if dry_run or not (plan.batches or runner.due()):
        result.verified = not plan.batches
        return result
    result.hook_runner = runner
    try:
        # Down lines of what goes, before anything is written (hooks.py).
        runner.start()
        result.requests = _execute(plan, scope.session, bulk,
                                   before_batch=runner.before_batch)
        drift = scope.operations(wanted, scope.current())
        if drift:
            raise ApplyFailed("verification failed: the kernel does not have "
                              + "; ".join(op.describe() for op in drift[:5]))
        result.verified = True
    except _WRITE_FAILURES as failure:
        revert(result, explain(failure, wanted))
    except Exception as bug:
        # A bug (a KeyError, a TypeError...) is reverted like any failure, then
        # reaches the CLI as the internal error it is (exit 70), not reported
        # as a kernel or config problem; if the revert fails, that matters more.
        try:
            revert(result, f"internal error: {type(bug).__name__}: {bug}")
        except ApplyFailed:
            bug.add_note("the previous state was restored")
            raise bug from None
    finally:
        if not result.verified:
            runner.save()   # what ran before the failure (pre-ups due again)
    runner.after_verify()   # up, post-up, post-down: reported, never reverted
    runner.save()
    result.hooks = runner.log
    return result


def _hook_reach(scope: _Scope, stopping: set[str] | None) -> Callable[[Key], bool]:
    """Which recorded interfaces an apply answers for: those of a selection,
    of down()'s namespaces, or (a whole apply) all."""
    if stopping is not None:
        return lambda key: key[0] in stopping
    if scope.keys is not None:
        keys = scope.keys
        return lambda key: key in keys
    return lambda key: True


# Once writing has started, any of these must end in a revert, never escape
# as an internal error with the kernel half-configured: netcfg's own errors
# (a device whose ifindex is unknown is UnknownDevice, one of them), a socket
# or sysctl error (OSError).
_WRITE_FAILURES = (NetcfgError, OSError)


def revert(result: ApplyResult, why: str) -> None:
    """Put back the state from before ``result``'s apply (verified, or failed
    halfway); raises ApplyFailed saying ``why`` (exit 3), or RevertFailed
    (exit 4). Other programs' routes a purge removed are put back too."""
    scope, before = result.scope, result.before
    if scope is None or before is None:
        raise ValueError("only an ApplyResult of apply() or down() can be reverted")
    if result.verified and result.hook_runner is not None:
        # What this apply brought up runs its down lines (issue 23 M3).
        result.hook_runner.undo()
        result.hook_runner.save()
        result.hooks = result.hook_runner.log
    try:
        now = scope.current()
        # Never re-created: another program's device a purge deleted (revert.py).
        ops, lost = foreign_recreations(diff(before, now), before, scope.desired, result.made)
        _execute(build_plan(ops), scope.session)
        for netns, requests in restore_requests(result.purged_routes, scope.session):
            _send(netns, requests, scope.session)
    except _WRITE_FAILURES as second:
        raise RevertFailed(f"{why}; the revert failed too: {second}") from None
    if lost:
        raise RevertFailed(f"{why}; the rest of the previous state was restored, "
                           f"{not_restored(lost)}") from None
    raise ApplyFailed(f"{why}; the previous state was restored") from None


# ---------------------------------------------------------------- execution

def _execute(plan: Plan, session: KernelSession, bulk: GroupDeletes | None = None,
             before_batch: Callable[[int], set[str]] | None = None) -> int:
    """Run the batches in order; returns the netlink write requests sent.
    ``before_batch(number)``: the hooks that run before a batch (pre-up); it
    returns the namespaces where lines ran, whose ifindexes are read again
    (a line may have made the device the batch configures)."""
    if bulk is None:
        bulk = group_deletes(plan, session.managed())
    sent = 0
    # Tables of the vrfs this plan creates, for routes into them in later batches.
    vrf_tables = {(op.netns, op.name): op.params["table"] for batch in plan.batches
                  for op in batch if op.action == LINK_ADD and op.params.get("kind") == "vrf"}
    total, done = len(plan), 0
    for number, batch in enumerate(plan.batches):
        _namespace_ops(batch, session)
        if before_batch is not None:
            ran = before_batch(number)
            if ran:
                session.refresh_ifindexes(ran)
        by_netns: dict[str, list[Operation]] = {}
        ovs_ops = []
        for op in batch:
            if op.action in OVS_ACTIONS:
                ovs_ops.append(op)
            elif op.action not in (NETNS_ADD, NETNS_DEL) and op.key not in bulk.replaced:
                by_netns.setdefault(op.netns, []).append(op)
        grouped = bulk.at.get(number, [])
        for netns in grouped:
            by_netns.setdefault(netns, [])
        # Devices created here have the ifindexes new_ifindex() chose; where
        # devices went (a deleted device can take others with it: a vlan on
        # its lower) or the kernel chose, the next batches need them read.
        touched: set[str] = set(grouped)
        if ovs_ops:
            # One OVSDB transaction; ovs-vswitchd makes or removes the devices.
            sent += ovs.execute(ovs_ops, session)
            touched.add(ROOT_NETNS)
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
    for netns, requests in _protodown_again(plan).items():
        _send(netns, requests, session)
        sent += len(requests)
    return sent


def _protodown_again(plan: Plan) -> dict[str, list[Request]]:
    """Protodown of each macvlan the plan made with it (the VRRP macvlans of
    `vrrp`), sent again once every batch ran. It went on right after the
    create, but a lower device that comes up later gives the macvlan carrier
    back (the kernel's netif_stacked_transfer_operstate ignores protodown):
    the virtual address would answer on the backup router too. ifupdown2
    brings the lower up before it makes the macvlan, so its macvlan has no
    carrier until vrrpd clears protodown; sending it again does the same
    (dev_change_proto_down turns carrier off each time)."""
    out: dict[str, list[Request]] = {}
    for op in plan.operations:
        if op.action == LINK_ADD and op.params.get("macvlan-protodown") in (True, "yes", "on"):
            out.setdefault(op.netns, []).append(Request(
                RTM_NEWLINK, 0, ifinfomsg() + rtattr_str(IFLA_IFNAME, op.name)
                + rtattr(LINK["IFLA_PROTO_DOWN"], b"\x01"), tag=op))
    return out


def _namespace_ops(batch: list[Operation], session: KernelSession) -> None:
    added = [op.name for op in batch if op.action == NETNS_ADD]
    deleted = [op.name for op in batch if op.action == NETNS_DEL]
    nsids = {op.name: op.params.get("nsid") for op in batch if op.action == NETNS_ADD}
    # In parts: each new namespace's fd is open until its socket is made.
    for start in range(0, len(added), BORROWED_FDS):
        part = added[start:start + BORROWED_FDS]
        for handle in session.nsdir.create_many(part):
            session.handles[handle.name] = handle
        session.open_sockets([ROOT_NETNS, *part])
        # Every managed namespace gets an nsid in the host's view (`nsid N` in
        # its netns stanza, else the kernel's pick): cross-namespace devices
        # and netcfgd's one event socket name namespaces by it.
        for name in part:
            session.nsid(ROOT_NETNS, name, nsids[name])
            session.mark_netns(name)
        # Their handles came open from create_many; the nsids' borrowed
        # fds (NETNSA_FD) are sent: each of them is its socket now.
        session.release_handles(part)
        session.release_fds()
    if added:
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

    def ifindex_taken(self, netns: str, index: int) -> bool:
        state = self.session.states.get(netns)
        return state is None or index in state.names

    def vrf_table(self, netns: str, name: str) -> int:
        # A vrf created by this plan is not in the read-back state yet.
        created = self.vrf_tables.get((netns, name))
        if created is not None:
            return created
        state = self.session.states.get(netns)
        vrf = state.interfaces.get(name) if state is not None else None
        if vrf is None or "vrf-table" not in vrf.attrs:
            raise UnknownDevice(netns, name)
        return vrf.attrs["vrf-table"]


def _transact(netns: str, ops: list[Operation], session: KernelSession,
              vrf_tables: dict[tuple[str, str], int], extra: Sequence[Request] = ()) -> int:
    ctx = _Context(netns, session, vrf_tables)
    requests: list[Request] = []
    sent = 0
    for op in ops:
        requests.extend(encode(op, ctx))
        if session.borrowed_fds() >= BORROWED_FDS:
            # The namespaces these requests name by fd (veth peers' homes):
            # sent now, so their fds can be closed (one fd per namespace).
            _send(netns, requests, session)
            sent += len(requests)
            requests = []
            session.release_fds()
    requests.extend(extra)
    if requests:
        _send(netns, requests, session)
    sent += len(requests)
    for op in ops:   # after: a device made by this batch has its sysctls only now
        _sysctls(op, session)
        # and its generic netlink settings (a wireguard device's keys and
        # peers, a port's link modes: apply/genl.py)
        sent += genl.configure(op, session)
    session.release_fds()
    return sent


def _send(netns: str, requests: list[Request], session: KernelSession) -> None:
    """One transact; raises ApplyFailed naming the first request refused."""
    result = session.socket(netns).transact(requests)
    failures = [(requests[i].tag, error) for i, error in enumerate(result.errors)
                if error is not None and not _already_done(requests[i].tag, error)]
    if failures:
        op, error = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise Refused(op, error, f"{_taken_hint(op, error)}{more}")


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
    if op.action not in (LINK_ADD, LINK_SET):
        return
    # The declared sysctls (schemas' "place": "sysctl": disable-ipv6, ip-forward...).
    for path, value in sysctl_writes(op.name, op.params):
        def write(path: str = path, value: str = value) -> None:
            with open(path, "w") as f:
                f.write(value)

        try:
            session.switcher.call(session.netns(op.netns), write)
        except OSError as e:
            raise ApplyFailed(f"{op.describe()}: cannot write {path}: {e.strerror}") from None


