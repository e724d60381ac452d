"""Level-triggered reconcile: make dirty namespaces equal to the config again.

A pass takes a set of dirty namespaces (or all of them: a full pass), reads
their real state and runs the CLI's own planner and applier
(``netcfg.apply.execute.apply``) on them, narrowed to what they reach, with the
config lowered once per load. Nothing here looks at what an event said: the
kernel is read again (STYLE.md 6). Our own writes come back as events too;
the pass they trigger finds nothing to do and sends nothing (counted as a
quiet pass).

Policy per namespace: ``enforce`` (default) repairs, ``report`` runs the
same pass as a dry run and records the drift. A failing namespace is
retried with exponential backoff and shown in ``netcfg status``; it is
applied alone when a pass over several fails, so it never holds back the
others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from netcfg.apply.execute import ApplyResult, apply
from netcfg.apply.hooks import HookSettings, PreUpDue
from netcfg.apply.tunnel_local import LocalDeviceUnresolved
from netcfg.apply.wireguard import KeyFileError
from netcfg.kernel.ns import NetnsError
from netcfg.kernel.read import KERNEL_ROUTE_PROTOCOLS
from netcfg.kernel.session import KernelSession
from netcfg.kinds.base import LOWER
from netcfg.kinds.wireguard import PRIVATE_KEY_FILE, PUBLIC_KEY
from netcfg.model.errors import NetcfgError
from netcfg.model.model import ROOT_NETNS, Model
from netcfg.model.tags import RTPROT_NETCFG
from netcfg.plan import hooks as hook_plan
from netcfg.plan.lower.lowering import lower
from netcfg.plan.ops import LINK_SET, NETNS_ADD, NETNS_DEL
from netcfg.plan.scope import Selection, references

from netcfgd.hooks import InterfaceHooks, NamespaceHooks
from netcfgd.watch import NsidMap

ENFORCE, REPORT = "enforce", "report"
# IFA_PROTO of addresses the kernel makes (linux/if_addr.h IFAPROT_KERNEL_LO,
# _RA, _LL): the read ignores them too.
KERNEL_ADDRESS_ORIGINS = frozenset({1, 2, 3})
# What a held wireguard device's config loses: its keys stay as the kernel has them.
WIREGUARD_KEYS = frozenset({PRIVATE_KEY_FILE, PUBLIC_KEY})
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 60.0
# A namespace deleted from outside is re-created once the kernel has freed
# the old one (RTM_DELNSID), or after this long at the latest.
GONE_WAIT_S = 2.0
DRIFT_KEPT = 50   # drift lines kept per namespace for status


@dataclass
class NamespaceStatus:
    """What status says about one managed namespace ("" is the host's)."""

    name: str
    policy: str = ENFORCE
    objects: int = 0
    drift: list[str] = field(default_factory=list)        # report: what differs now
    last_repair: list[str] = field(default_factory=list)  # enforce: what the last repair did
    repairs: int = 0                  # operations applied to repair drift, in all
    error: str | None = None
    failures: int = 0                 # in a row
    retry_at: float | None = None     # monotonic
    last_reconcile: float | None = None   # wall clock
    gone_nsid: int | None = None      # deleted from outside: waiting for the kernel to free it
    gone_until: float | None = None
    hooks: list[str] = field(default_factory=list)   # held interfaces, failed lines

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "name": self.name, "policy": self.policy, "objects": self.objects,
            "drift": self.drift, "last_repair": self.last_repair, "repairs": self.repairs,
            "error": self.error, "failures": self.failures,
            "retry_in_s": None if self.retry_at is None else round(max(0.0, self.retry_at - now), 3),
            "last_reconcile": self.last_reconcile,
            "hooks": self.hooks,
        }


@dataclass
class Counters:
    events: int = 0            # kernel notifications received
    events_ignored: int = 0    # about namespaces or devices that are not netcfg's
    event_losses: int = 0      # ENOBUFS: notifications dropped by the kernel, then resynced
    passes: int = 0            # reconcile passes
    passes_quiet: int = 0      # passes that found nothing to do (our own writes come back)
    passes_writing: int = 0
    passes_failed: int = 0     # passes where a namespace failed (not "nothing to do": L9)
    full_passes: int = 0
    requests: int = 0          # netlink write requests sent by passes
    repairs: int = 0           # operations applied by passes
    failures: int = 0          # namespace passes that failed
    deferred: int = 0          # dirty windows whose namespaces all waited out a backoff
    dhcp_clients_died: int = 0  # DHCP clients seen exiting (dhcpwatch.py); a pass restarts them


@dataclass
class PassResult:
    namespaces: list[str]
    requests: int = 0
    operations: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    full: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"namespaces": len(self.namespaces), "requests": self.requests,
                "operations": self.operations, "failed": self.failed,
                "duration_ms": round(self.seconds * 1000, 2), "full": self.full}


class Reconciler:
    """Desired state (the config, lowered once) and the passes that enforce it."""

    def __init__(self, session: KernelSession, log: logging.Logger,
                 hooks: NamespaceHooks | None = None,
                 before_write: Callable[[], Any] | None = None,
                 hook_settings: HookSettings | None = None):
        self.session = session
        self.hook_settings = hook_settings     # imperative lines, if-*.d scripts, their record
        # ... which passes run beside the loop, never in it (netcfgd/hooks.py).
        self.interface_hooks = InterfaceHooks(session.nsdir.path, log)
        self.log = log
        self.hooks = hooks or NamespaceHooks(log)
        self.desired: Model | None = None
        self.lowered: tuple[Model, Any] | None = None
        self.lower_enabled = True              # the lowering the config was applied with
        self.status: dict[str, NamespaceStatus] = {}
        self.counters = Counters()
        self.nsids = NsidMap()
        self.configured: set[str] = set()      # namespaces the hooks were told about
        self.created_by_us: set[str] = set()   # inotify will report these: not drift
        self.last_pass: PassResult | None = None
        self.last_pass_at: float | None = None
        self.lock = before_write               # context manager factory (the apply lock)
        self.desired_names: dict[str, set[str]] = {}
        self.purging: set[str] = set()

    # ---------------------------------------------------------------- config

    def load(self, desired: Model, lower_enabled: bool = True,
             lowered: tuple[Model, Any] | None = None) -> list[str]:
        """Adopt a config: lower it once (``lowered``: done already, with
        ``lower_enabled``), set up a status per namespace. Passes enforce it
        in the form it was applied in (`netcfg apply --lower off` stays off).
        Returns the namespaces the old config had and this one drops."""
        target, report = lowered if lowered is not None else lower(desired,
                                                                   enabled=lower_enabled)
        old = set(self.status)
        self.desired, self.lowered = desired, (target, report)
        self.lower_enabled = lower_enabled
        status = {}
        for name in target.netns_names():
            obj = target.namespaces.get(name)
            policy = (obj.attrs.get("policy") if obj is not None else None) or ENFORCE
            st = self.status.get(name) or NamespaceStatus(name)
            st.policy = policy if name != ROOT_NETNS else ENFORCE
            st.objects = 0
            if policy == ENFORCE:
                st.drift = []
            status[name] = st
        names: dict[str, set[str]] = {n: set() for n in status}
        for (netns, name), obj in target.interfaces.items():
            # An object is what one operation makes: a device, an address, a route.
            status[netns].objects += (1 + len(obj.attrs.get("address") or ())
                                      + len(obj.attrs.get("route") or ()))
            names[netns].add(name)
        self.status = status
        self.desired_names = names
        self.purging = {n for n, o in target.namespaces.items() if o.attrs.get("purge")}
        dropped = sorted(old - set(status))
        for name in dropped:
            if name in self.configured:
                self.hooks.removing(name)
                self.configured.discard(name)
            self.nsids.drop(name)
        self.hooks.load(desired)
        self.interface_hooks.load()
        return dropped

    def concerns(self, netns: str, kind: str, ifindex: int, name: str, origin: int = 0,
                 replace: bool = False) -> bool:
        """Whether a notification about device ``name``/``ifindex`` in a
        managed namespace can matter: a device the config names or netcfg
        made, one we know nothing of yet by name, anything in a purge
        namespace. Another program's device (or its addresses and routes,
        known by its ifindex as last read) cannot, nor the kernel's own
        addresses and routes (IPv6 DAD on 500 ports that come up is a flood
        of those): a storm of them costs no pass. A device renamed to a
        managed name announces the new name. A route that replaced another
        (``replace``) counts whoever sent it: the one it replaced may have
        been netcfg's (issue 24, M14: a foreign `ip route replace` of
        netcfg's default route went unseen until the resync)."""
        if kind == "address" and origin in KERNEL_ADDRESS_ORIGINS:
            return False   # link-local, loopback, autoconf: never config, never drift
        if kind == "route" and (origin in KERNEL_ROUTE_PROTOCOLS or
                                (origin != RTPROT_NETCFG and netns not in self.purging
                                 and not replace)):
            return False   # the kernel's own, or another program's where purge is off
        if netns in self.purging or kind not in ("link", "address", "route") or not ifindex:
            return True
        state = self.session.states.get(netns)
        if not name:
            if state is None:
                return True
            name = state.names.get(ifindex, "")
            if not name:
                return kind == "link"   # an address of a device we never saw: its link says
        if name in self.desired_names.get(netns, ()):
            return True
        return state is None or name in state.managed
    def objects(self) -> int:
        return sum(st.objects for st in self.status.values())

    # ---------------------------------------------------------------- namespaces

    def map_nsids(self) -> None:
        """Give every managed namespace that exists an nsid in the host's view
        (the event socket hears only those) and learn it."""
        existing = self.session.existing_namespaces()
        for name in self.status:
            if name == ROOT_NETNS or name in self.nsids.by_name or name not in existing:
                continue
            obj = self.lowered[0].namespaces.get(name) if self.lowered else None
            wanted = obj.attrs.get("nsid") if obj is not None else None
            try:
                self.nsids.set(name, self.session.nsid(ROOT_NETNS, name, wanted))
            except NetcfgError as e:
                self.log.warning(f"netns {name}: cannot assign an nsid ({e}); its changes "
                                 f"are seen only by the periodic resync",
                                 extra={"NETCFG_NETNS": name})

    def remove_half_made(self) -> list[str]:
        """Files in the namespace directory, under managed names, with no
        namespace mounted on them: left by a netcfgd killed between creating
        the file and bind-mounting the namespace on it (kill -9 mid-apply).
        `ip netns add` would refuse the name (EEXIST) for ever; removing the
        empty file lets the next pass make the namespace."""
        removed = []
        nsdir = self.session.nsdir
        for name in sorted(set(self.status) & self.session.existing_namespaces()):
            path = os.path.join(nsdir.path, name)
            try:
                nsdir.open(name).close()
                continue                  # a namespace is mounted there
            except NetnsError:
                pass
            if os.path.isfile(path) and os.path.getsize(path) == 0:
                with contextlib.suppress(NetnsError):
                    nsdir.delete(name)
                    removed.append(name)
                    self.log.warning(f"netns {name}: removed {path}, an empty file left by an "
                                     f"interrupted create; the namespace is made again",
                                     extra={"NETCFG_NETNS": name})
        return removed

    def namespace_deleted(self, name: str, now: float) -> bool:
        """A managed namespace's file went away and we did not remove it: let
        go of it so the kernel can free it, and wait for that before making
        it again. True when it is one of ours."""
        st = self.status.get(name)
        if st is None or name == ROOT_NETNS:
            return False
        self.session.forget(name)
        # The switcher thread may still be inside it (and so keep it alive).
        self.session.switcher.call(self.session.netns(ROOT_NETNS), lambda: None)
        st.gone_nsid = self.nsids.drop(name)
        st.gone_until = now + GONE_WAIT_S
        if name in self.configured:
            self.hooks.removing(name)
            self.configured.discard(name)
        self.log.warning(f"netns {name} was deleted from outside; "
                         + ("re-creating it" if st.policy == ENFORCE else "reporting it"),
                         extra={"NETCFG_NETNS": name})
        return True

    def nsid_released(self, nsid: int) -> str | None:
        """RTM_DELNSID: the namespace that waited for it may be made again."""
        for st in self.status.values():
            if st.gone_nsid == nsid:
                st.gone_nsid = st.gone_until = None
                return st.name
        return None

    def next_wakeup(self) -> tuple[float | None, list[str]]:
        """The earliest retry or end of a wait, and the namespaces due then."""
        times: dict[str, float] = {}
        for st in self.status.values():
            for t in (st.retry_at, st.gone_until):
                if t is not None:
                    times[st.name] = min(times.get(st.name, t), t)
        # Hooks running, or a hold to let go of: a look (poll) then, which
        # passes over the namespaces it makes due.
        check = self.interface_hooks.next_check()
        if check is None and self.interface_hooks.due:
            check = 0.0     # due now (a fixed past time: see next_check)
        if not times:
            return check, sorted(self.interface_hooks.due)
        first = min(times.values())
        names = [n for n, t in times.items() if t <= first + 0.01]
        if check is not None and check < first:
            return check, sorted(self.interface_hooks.due)
        return first, names

    # ---------------------------------------------------------------- passes

    def reconcile(self, dirty: Iterable[str] | None, on_write: Callable | None = None,
                  now: float | None = None) -> PassResult:
        """One pass over ``dirty`` namespaces (None: every one, a full pass)."""
        started = time.monotonic()
        now = started if now is None else now
        full = dirty is None
        # What the hooks did meanwhile: a pre-up ended (its interface can come
        # up now), a hold's retry came.
        self.interface_hooks.keepalive = on_write
        self.interface_hooks.poll()
        due, self.interface_hooks.due = self.interface_hooks.due, set()
        if not full and not dirty and not due:
            return PassResult([])     # only a look at the hooks: not a pass
        wanted = set(self.status) if full else (set(dirty) | due) & set(self.status)
        result = PassResult(sorted(wanted), full=full)
        ready = []
        for name in sorted(wanted):
            st = self.status[name]
            if st.gone_until is not None and now < st.gone_until:
                continue
            st.gone_nsid = st.gone_until = None
            if st.retry_at is not None and now < st.retry_at and not full:
                continue
            handle = self.session.handles.get(name)
            if handle is not None and name != ROOT_NETNS and handle.is_stale():
                self.session.forget(name)
            ready.append(name)
        if not ready:
            # Every namespace waits (a backoff, a deleted namespace's nsid):
            # their retry is a pass of its own; this one did nothing.
            self.counters.deferred += 1
            result.seconds = time.monotonic() - started
            return result
        enforce = [n for n in ready if self.status[n].policy == ENFORCE]
        report = [n for n in ready if self.status[n].policy == REPORT]
        self.session.on_batch = on_write
        try:
            if enforce:
                # A full pass with nothing to hold back runs without a
                # selection: it also removes namespaces netcfg made that the
                # config no longer names.
                everything = full and not report and len(enforce) == len(self.status)
                self._enforce(enforce, everything, result)
            if report:
                self._report(report, result)
        finally:
            self.session.on_batch = None
        self.map_nsids()
        result.seconds = time.monotonic() - started
        self._count(result)
        return result

    def _apply(self, namespaces: list[str] | None, dry_run: bool = False) -> ApplyResult:
        # An enforcing pass reaches into a `policy report` namespace through a
        # veth's peer: it must leave what is there alone (frozen).
        frozen = () if dry_run else tuple(sorted(n for n, st in self.status.items()
                                                 if st.policy == REPORT))
        selection = (Selection(namespaces=tuple(namespaces), frozen=frozen)
                     if namespaces is not None else None)
        assert self.desired is not None and self.lowered is not None
        writing = self.lock is not None and not dry_run
        if dry_run:
            while True:
                # What is left as it is (unresolved) is not drift: its hold says why.
                held = frozenset(k for k, h in self.interface_hooks.held.items() if h.as_is)
                try:
                    outcome = apply(self.desired, self.session, selection=selection,
                                    lowered=self._held_down(held), narrow=True, dry_run=True,
                                    hooks=self.hook_settings)
                except LocalDeviceUnresolved as e:
                    self._unresolved(e, held)
                    continue
                self.interface_hooks.resolved(held)
                return outcome
        attempts = 0
        while attempts < 3:     # a key file held is no attempt: each holds one more device
            settings = dataclasses.replace(self.hook_settings or HookSettings(),
                                           deferred=self.interface_hooks,
                                           held=self.interface_hooks.held_keys())
            try:
                with self.lock() if writing else contextlib.nullcontext():
                    outcome = apply(self.desired, self.session, selection=selection,
                                    lowered=self._held_down(settings.held), narrow=True,
                                    hooks=settings)
                self.interface_hooks.resolved(settings.held)
                return outcome
            except LocalDeviceUnresolved as e:
                # Nothing written: those tunnels are left as they are, the rest repaired.
                self._unresolved(e, settings.held)
            except PreUpDue as due:
                # Nothing written: plan again with them held down; the
                # worker runs their pre-up, a later pass brings them up.
                self.interface_hooks.pre_up_started(due.fingerprints)
                attempts += 1
            except KeyFileError as e:
                if e.device is None or e.device in settings.held:
                    raise
                # Nothing written: that device is held, the others repaired.
                self.interface_hooks.key_file_failed(e.device, str(e))
        raise NetcfgError("the interfaces' pre-up lines or key files kept changing under "
                          "the pass")

    def _unresolved(self, error: LocalDeviceUnresolved, held: frozenset) -> None:
        """Hold the tunnels ``error`` names as they are (InterfaceHooks.unresolved)."""
        holds = self.interface_hooks.held
        new = {k: why for k, why in error.tunnels.items()
               if k not in held or not (k in holds and holds[k].as_is)}
        if not new:
            raise error     # held as it is, and unresolved all the same: not ours to loop on
        for key, why in new.items():
            self.interface_hooks.unresolved(key, why)

    def _held_down(self, held: frozenset) -> tuple[Model, Any]:
        """The lowered config with ``held`` interfaces `link-down yes`: a pass
        leaves them down (their pre-up runs, failed, or they loop: M1, M2);
        a wireguard device held for its key file keeps its keys and stays up;
        one held as it is (a tunnel whose tunnel-local-dev has no address)
        is what the kernel has: its object as read now (the diff finds nothing
        to do on it), or absent when the kernel has none (nothing to delete,
        and not made). As read, rather than the config's without its local
        address: any attribute that differs could re-create or down it. (A
        Selection's frozen set is whole namespaces: the rest would not be
        repaired either.)"""
        assert self.lowered is not None
        target, report = self.lowered
        held = [k for k in held if k in target.interfaces]
        if not held:
            return self.lowered
        interfaces = dict(target.interfaces)
        masters = dict(target.masters)
        holds = self.interface_hooks.held
        as_is = [k for k in held if k in holds and holds[k].as_is]
        # Read only while something is held as it is: its namespaces, once per pass.
        current = (self.session.read(sorted({k[0] for k in as_is}), desired=target)
                   if as_is else Model())
        gone = set()
        for key in as_is:
            if key in current.interfaces:
                interfaces[key] = current.interfaces[key]
            else:
                gone.add(key)
        # What stands on a device that is not there is not made either (a
        # VLAN on the tunnel: the kernel took it away with its lower device).
        uppers = gone
        while uppers:
            uppers = {k for k, o in interfaces.items() if k not in gone
                      and any(r in gone for r in references(o, (LOWER,)))}
            gone |= uppers
        for key in gone:
            del interfaces[key]
            masters.pop(key, None)
        for key in held:
            if key in as_is or key in gone:
                continue
            obj = interfaces[key]
            # A wireguard device's keys left as the kernel has them (its key
            # file may be what it is held for); down unless only that.
            attrs = {a: v for a, v in obj.attrs.items() if a not in WIREGUARD_KEYS}
            if not (key in holds and holds[key].keys_only):
                attrs["link-down"] = True
            interfaces[key] = dataclasses.replace(obj, attrs=attrs)
        return dataclasses.replace(target, interfaces=interfaces, masters=masters), report

    def _enforce(self, names: list[str], everything: bool, result: PassResult) -> None:
        try:
            outcome = self._apply(None if everything else names)
        except (NetcfgError, OSError, KeyError) as e:
            if len(names) == 1:
                self._failed(names[0], e, result)
                return
            self.log.warning(f"a pass over {len(names)} namespaces failed ({e}); "
                             f"applying each alone")
            for name in names:
                self._enforce([name], False, result)
            return
        self._succeeded(names, outcome, result)

    def _succeeded(self, names: list[str], outcome: ApplyResult, result: PassResult) -> None:
        wall = time.time()
        operations = outcome.plan.operations
        if outcome.hook_runner is not None:
            # Brought up again with its hooks: a repair, maybe of a loop (M1).
            came = set(hook_plan.came_up(operations))
            for key in outcome.hook_runner.plan.cycles:
                if key in came:
                    self.interface_hooks.repaired(key)
            # Set back just after its hooks ran, and not brought up by this
            # pass (whose own up lines follow its writes): a hook's change.
            for op in operations:
                key = (op.netns, op.name)
                if op.action == LINK_SET and op.params and key not in came:
                    self.interface_hooks.set_back(
                        key, " ".join(f"{k}={v}" for k, v in op.params.items()))
        result.requests += outcome.requests
        result.operations += len(operations)
        by_netns: dict[str, list[str]] = {}
        for op in operations:
            by_netns.setdefault(op.netns if op.action not in (NETNS_ADD, NETNS_DEL)
                                else op.name, []).append(op.describe())
            if op.action == NETNS_ADD:
                self.created_by_us.add(op.name)
        existing = self.session.existing_namespaces() | {ROOT_NETNS}
        for name in names:
            st = self.status[name]
            if st.failures:
                self.log.info(f"netns {name or 'host'}: reconciled again after "
                              f"{st.failures} failures", extra={"NETCFG_NETNS": name})
            st.error, st.failures, st.retry_at = None, 0, None
            st.last_reconcile = wall
            done = by_netns.get(name, [])
            if done:
                st.last_repair = done[:DRIFT_KEPT]
                st.repairs += len(done)
                self.log.info(f"{'netns ' + name if name else 'host'}: applied "
                              f"{len(done)} operations: " + "; ".join(done[:5])
                              + (" ..." if len(done) > 5 else ""),
                              extra={"NETCFG_NETNS": name, "NETCFG_OPERATIONS": len(done)})
            if name not in self.configured and name in existing:
                self.configured.add(name)
                self.hooks.configured(name)

    def _failed(self, name: str, error: BaseException, result: PassResult) -> None:
        st = self.status[name]
        st.failures += 1
        delay = min(BACKOFF_FIRST_S * 2 ** (st.failures - 1), BACKOFF_MAX_S)
        st.retry_at = time.monotonic() + delay
        st.error = str(error)
        result.failed[name] = st.error
        self.counters.failures += 1
        self.log.error(f"{'netns ' + name if name else 'host'}: reconcile failed: {error}; "
                       f"retrying in {delay:g} s",
                       extra={"NETCFG_NETNS": name, "NETCFG_FAILURES": st.failures})

    def _report(self, names: list[str], result: PassResult) -> None:
        for name in names:
            st = self.status[name]
            try:
                outcome = self._apply([name], dry_run=True)
            except (NetcfgError, OSError, KeyError) as e:
                self._failed(name, e, result)
                continue
            drift = [op.describe() for op in outcome.plan.operations]
            if drift and drift != st.drift:
                self.log.warning(f"netns {name} (policy report) drifted: {len(drift)} "
                                 f"differences: " + "; ".join(drift[:5]),
                                 extra={"NETCFG_NETNS": name, "NETCFG_DRIFT": len(drift)})
            st.drift = drift[:DRIFT_KEPT]
            st.error, st.failures, st.retry_at = None, 0, None
            st.last_reconcile = time.time()

    def _count(self, result: PassResult) -> None:
        c = self.counters
        c.passes += 1
        c.full_passes += result.full
        c.requests += result.requests
        c.repairs += result.operations
        # Each pass in one of three (issue 23 L9: failed passes were counted
        # as having found nothing to do).
        if result.failed:
            c.passes_failed += 1
        elif result.requests:
            c.passes_writing += 1
        else:
            c.passes_quiet += 1
        self.last_pass, self.last_pass_at = result, time.time()

    def summary(self) -> str:
        """One line for STATUS= and the log."""
        failing = sum(1 for st in self.status.values() if st.error)
        drifted = sum(1 for st in self.status.values() if st.drift)
        as_is = sum(1 for h in self.interface_hooks.held.values() if h.as_is)
        held = len(self.interface_hooks.held) - as_is
        line = f"{len(self.status) - 1} namespaces, {self.objects()} objects"
        if failing:
            line += f"; {failing} failing"
        if held:
            line += f"; {held} interfaces held down by their hooks (netcfg status)"
        if as_is:
            line += f"; {as_is} interfaces left as they are (netcfg status)"
        if drifted:
            line += f"; {drifted} drifted (report)"
        # Stable between passes: STATUS= is sent only when this changes.
        return line + ("" if failing or drifted or held or as_is else "; in sync")

    def status_json(self) -> dict[str, Any]:
        now = time.monotonic()
        self.interface_hooks.poll()
        for st in self.status.values():
            st.hooks = self.interface_hooks.status_lines(st.name)
        return {
            "namespaces": [st.to_json(now) for _, st in sorted(self.status.items())],
            "objects": self.objects(),
            "counters": vars(self.counters).copy(),
            "last_reconcile": None if self.last_pass is None else {
                "at": self.last_pass_at, **self.last_pass.to_json()},
        }
