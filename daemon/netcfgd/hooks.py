"""Per-namespace lifecycle hooks: where services that live inside a tenant
namespace (the embedded iSCSI target, netcfgd.dataplane) attach.

``configured(name)``: the namespace exists and a pass has made it equal to
the config (first time, or again after it was re-created): start listeners
there. ``removing(name)``: the namespace is about to be removed by netcfgd,
or was deleted from outside: stop what runs in it and close its sockets, so
the kernel can free it. ``load(model)``: a config was loaded;
``after_pass()``: a reconcile pass ended; ``status_json()``: what `netcfg
status` shows of the service; ``close()``: the daemon stops. The default
implementation only logs; netcfgd runs netcfgd.storage.StorageHooks.

``InterfaceHooks``: the interfaces' imperative lines (pre-up ... post-down)
of the reconcile passes, run beside the loop, never in it (issue 23 H5, M1,
M2, M15; docs/daemon.md "Hooks"). ``ClientHooks``: those of one client's
apply through netcfgd (`netcfg apply`, ifup, ifreload), on the same worker.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from netcfg.apply.hookproc import status_text
from netcfg.apply.hookworker import Finished, HookWorker, Job

Key = tuple[str, str]


class NamespaceHooks:
    def __init__(self, log: logging.Logger):
        self.log = log

    def configured(self, name: str) -> None:
        self.log.debug(f"{'netns ' + name if name else 'host'}: configured",
                       extra={"NETCFG_NETNS": name})

    def removing(self, name: str) -> None:
        self.log.debug(f"netns {name}: going away", extra={"NETCFG_NETNS": name})

    def load(self, model: Any) -> None:
        pass

    def after_pass(self) -> None:
        pass

    def status_json(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


# ---------------------------------------------------------------- interfaces' hooks

# The daemon's time limit per hook command: under the unit's WatchdogSec=30
# for the one wait a pass makes (pre-down and down before a removal); the
# others never hold the loop. $NETCFG_HOOK_TIMEOUT overrides it.
HOOK_TIMEOUT_S = 20.0
# A repair loop (issue 23 M1): an interface brought up this many times within
# LOOP_WINDOW_S, each time found down again while its hooks ran or just after.
LOOP_REPAIRS = 5
LOOP_WINDOW_S = 60.0
LOOP_NEAR_S = 2.0        # "just after" its hooks ended
PRE_UP_RETRY_FIRST_S = 1.0
PRE_UP_RETRY_MAX_S = 60.0
PROBLEMS_KEPT = 5        # lines kept per interface for status


def hook_timeout_from_env() -> float:
    try:
        value = float(os.environ.get("NETCFG_HOOK_TIMEOUT") or HOOK_TIMEOUT_S)
    except ValueError:
        return HOOK_TIMEOUT_S
    return value if 0 < value < float("inf") else HOOK_TIMEOUT_S


@dataclass
class Hold:
    """Why a pass leaves an interface down (or part of it, or all of it, as
    the kernel has it) and its hooks alone, and till when."""

    why: str
    until: float | None = None        # monotonic; None: until a reload or an apply
    failures: int = 0
    # A wireguard device held for its key file stays up with the keys it
    # has (the tunnel works on): only its keys are left alone.
    keys_only: bool = False
    # An interface the config makes from kernel state that is missing now
    # (a tunnel whose tunnel-local-dev has no address): left exactly as the
    # kernel has it, or not made when it does not exist (unresolved()).
    as_is: bool = False


@dataclass
class InterfaceHooks:
    """The imperative lines of netcfgd's passes (netcfg.apply.hooks.Deferred):
    run by a HookWorker beside the loop, their ends reaped by ``poll()``;
    interfaces held down while their pre-up runs or after it failed (retried
    with backoff), or after a repair loop; those left as the kernel has them
    (unresolved()); what failed, for status."""

    gates: ClassVar[bool] = True     # netcfg.apply.hooks.Deferred: a pass's pre-up gates

    netns_dir: str
    log: logging.Logger
    timeout_s: float = field(default_factory=hook_timeout_from_env)
    keepalive: Callable[[], None] | None = None
    clock: Callable[[], float] = time.monotonic
    worker: HookWorker = field(init=False)
    held: dict[Key, Hold] = field(default_factory=dict)
    problems: dict[Key, list[str]] = field(default_factory=dict)
    due: set[str] = field(default_factory=set)          # namespaces that need a pass
    _pre_up: dict[Key, str] = field(default_factory=dict)      # running: its fingerprint
    _pre_up_failed: dict[Key, str] = field(default_factory=dict)
    _pre_up_ok: dict[Key, str] = field(default_factory=dict)
    _repairs: dict[Key, list[float]] = field(default_factory=dict)
    _ended_at: dict[Key, float] = field(default_factory=dict)
    # key_file_failed() and unresolved(): failures in a row and the last
    # reason, kept across the holds' ends (poll() drops a hold when its retry
    # time comes): the backoff grows, the same reason is logged once.
    _failures: dict[Key, tuple[int, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.worker = HookWorker(self.netns_dir, self.timeout_s, clock=self.clock)

    # -- netcfg.apply.hooks.Deferred

    def submit(self, jobs: list[Job]) -> None:
        self.worker.submit(jobs)

    def wait(self, keys: list[Key], keepalive: Callable[[], None] | None = None) -> list[str]:
        return self._reaped(self.worker.wait(keys, keepalive or self.keepalive))

    def run(self, job: Job) -> tuple[int, str]:
        raise NotImplementedError("a pass's pre-up gates (PreUpDue); it is never run inline")

    def pre_up_ran(self, key: Key, fingerprint: str) -> bool:
        return self._pre_up_ok.pop(key, None) == fingerprint

    # -- driven by the reconciler

    def pre_up_started(self, fingerprints: dict[Key, str]) -> None:
        """A pass handed these interfaces' pre-up to the worker: held down till it ends."""
        for key, fingerprint in fingerprints.items():
            self._pre_up[key] = fingerprint
            old = self.held.get(key)
            self.held[key] = Hold("waiting for its pre-up", None, old.failures if old else 0)

    def poll(self) -> None:
        """Reap what ended; let go of holds whose retry time came."""
        self._reaped(self.worker.poll())
        now = self.clock()
        for key, hold in list(self.held.items()):
            if hold.until is not None and now >= hold.until:
                del self.held[key]
                self.due.add(key[0])

    def next_check(self) -> float | None:
        times = [h.until for h in self.held.values() if h.until is not None]
        check = self.worker.next_check()
        if check is not None:
            times.append(check)
        return min(times) if times else None

    def repaired(self, key: Key) -> None:
        """A pass brought ``key`` up again. Counted when it went down while its
        hooks ran or just after: LOOP_REPAIRS of those in LOOP_WINDOW_S is a
        loop, held until a reload or an apply (issue 23 M1)."""
        now = self.clock()
        if not self._near_hooks(key, now):
            return
        times = [t for t in self._repairs.get(key, []) if now - t < LOOP_WINDOW_S] + [now]
        self._repairs[key] = times
        if len(times) >= LOOP_REPAIRS:
            why = (f"repair loop: brought up {len(times)} times in {now - times[0]:.0f} s, "
                   f"taken down again each time while or just after its hooks ran; netcfgd "
                   f"leaves it down and stops running its hooks until a reload or an apply")
            self.held[key] = Hold(why)
            self._drop(key)           # this last repair's up lines: not again
            self._problem(key, why)
            self.log.error(f"{_label(key)}: {why}", extra={"NETCFG_NETNS": key[0]})
            del self._repairs[key]

    def set_back(self, key: Key, what: str) -> None:
        """A pass set ``what`` back on ``key`` (a link-set) just after its
        hooks ended: most likely a hook line changed what the config
        declares (`post-up ip link set $IFACE mtu 1400` beside `mtu 1500`).
        netcfgd keeps to the config; status and the journal say so, where the
        change was undone silently before (issue 23 M1)."""
        if not self._near_hooks(key, self.clock()):
            return
        why = (f"a repair set {what} back right after its hooks ran: a hook line changes "
               f"what the config declares, and netcfgd keeps to the config; write the "
               f"value in the config instead")
        self._problem(key, why)
        self.log.warning(f"{_label(key)}: {why}", extra={"NETCFG_NETNS": key[0]})

    def _near_hooks(self, key: Key, now: float) -> bool:
        """Its hooks run, or ended within LOOP_NEAR_S."""
        return self.worker.busy(key) or now - self._ended_at.get(key, -1e9) < LOOP_NEAR_S

    def key_file_failed(self, key: Key, why: str) -> None:
        """A wireguard device's key file cannot be used (missing, not root's,
        not a key): its keys are left as the kernel has them (it stays up, the
        tunnel works on with them), tried again with the pre-up backoff; the
        rest of its namespace is repaired meanwhile (issue 23 M2: one missing
        key file blocked every repair there). Logged once per reason."""
        failures, delay, new = self._failed_again(key, why)
        self.held[key] = Hold(f"its key file cannot be used: {why}", self.clock() + delay,
                              failures, keys_only=True)
        if new:
            self._problem(key, why)
            self.log.error(f"{_label(key)}: keys left as they are: {why}",
                           extra={"NETCFG_NETNS": key[0]})

    def _failed_again(self, key: Key, why: str) -> tuple[int, float, bool]:
        """One more failure of ``key`` in a row: the count, the delay before the
        next try (the pre-up backoff), and whether ``why`` is a new reason."""
        failures, said = self._failures.get(key, (0, ""))
        failures += 1
        self._failures[key] = (failures, why)
        delay = min(PRE_UP_RETRY_FIRST_S * 2 ** (failures - 1), PRE_UP_RETRY_MAX_S)
        return failures, delay, why != said

    def unresolved(self, key: Key, why: str) -> None:
        """What the config makes ``key`` from is missing in the kernel now (a
        tunnel whose tunnel-local-dev device has no address: a lost DHCP
        lease, a link flap). A pass leaves it exactly as the kernel has it: an
        existing one is neither re-created nor downed (it works on with the
        local address it has), a missing one is not made. Tried again with
        the pre-up backoff; the rest of its namespace is repaired meanwhile
        (the CLI refuses the whole apply instead). Logged once per reason."""
        failures, delay, new = self._failed_again(key, why)
        self.held[key] = Hold(why, self.clock() + delay, failures, as_is=True)
        if new:
            self._problem(key, why)
            self.log.error(f"{_label(key)}: left as it is: {why}",
                           extra={"NETCFG_NETNS": key[0]})

    def resolved(self, held: frozenset) -> None:
        """A pass got through with ``held`` held: what key_file_failed() or
        unresolved() held and is not among them any more was read, and applied."""
        # (A dry run holds only what is left as it is: a key file's hold it did
        # not pass in is still in self.held, and not resolved by it.)
        for key in [k for k in self._failures if k not in held and k not in self.held]:
            failures, _why = self._failures.pop(key)
            self.problems.pop(key, None)
            self.log.info(f"{_label(key)}: resolved after {failures} failures, applied",
                          extra={"NETCFG_NETNS": key[0]})

    def load(self) -> None:
        """A new config: holds and loop counts start again (it may fix the hook)."""
        self.held = {k: h for k, h in self.held.items() if k in self._pre_up}
        self._failures.clear()
        self._repairs.clear()
        self._pre_up_failed.clear()
        self.problems.clear()

    def held_keys(self) -> frozenset:
        return frozenset(self.held)

    def status_lines(self, netns: str) -> list[str]:
        now = self.clock()
        out = []
        for key, hold in sorted(self.held.items()):
            if key[0] == netns:
                retry = "" if hold.until is None else f", retry in {max(0, hold.until - now):.1f} s"
                held = ("keys left as they are" if hold.keys_only else
                        "left as it is" if hold.as_is else "held down")
                out.append(f"{key[1]}: {held}: {hold.why}{retry}")
        for key, lines in sorted(self.problems.items()):
            if key[0] == netns:
                out += [f"{key[1]}: {line}" for line in lines]
        return out

    def close(self) -> None:
        self.worker.close()

    # -- what ended

    def _reaped(self, ended: list[Finished]) -> list[str]:
        """Log what ended and note failures for status; the lines of a pass's
        commands are returned, a client's go to it (ClientHooks.ended)."""
        out = []
        now = self.clock()
        for done in ended:
            key, said = done.job.key, done.job.said
            self._ended_at[key] = now
            lines = []
            for line in done.output.splitlines():
                lines.append(f"{said}: {line}")
                self.log.info(f"{said}: {line}", extra={"NETCFG_NETNS": key[0]})
            if done.ok:
                lines.append(f"{said}: ok")
            else:
                where = f"{done.job.where}: " if done.job.where else ""
                last = (done.output.strip().splitlines() or [""])[-1]
                text = f"{where}{said} failed ({status_text(done.code)})" + \
                    (f": {last}" if last else "")
                lines.append(text)
                self.log.warning(text, extra={"NETCFG_NETNS": key[0]})
                self._problem(key, text.removeprefix(f"{_label(key)}: "))
                if done.job.phase == "pre-up" and key in self._pre_up:
                    self._pre_up_failed[key] = text
                    self._drop(key)          # its later pre-up lines: as the CLI, not run
            if done.job.owner is not None:
                done.job.owner.ended(done, lines)
            else:
                out += lines
            if key in self._pre_up and not self.worker.busy(key):
                self._pre_up_ended(key, now)
        return out

    def _drop(self, key: Key) -> None:
        """The worker forgets what waits for ``key``; a client whose command
        that was is told (its answer waits for nothing that will not run)."""
        for job in self.worker.drop(key):
            if job.owner is not None:
                job.owner.ended(Finished(job, NOT_RUN, "", 0.0),
                                [f"{job.said}: not run (netcfgd holds {key[1]} down)"])

    def _pre_up_ended(self, key: Key, now: float) -> None:
        fingerprint = self._pre_up.pop(key)
        failed = self._pre_up_failed.pop(key, None)
        hold = self.held.pop(key, None)
        if failed is None:
            self._pre_up_ok[key] = fingerprint
            self.problems.pop(key, None)
            self.due.add(key[0])
            return
        failures = (hold.failures if hold else 0) + 1
        delay = min(PRE_UP_RETRY_FIRST_S * 2 ** (failures - 1), PRE_UP_RETRY_MAX_S)
        self.held[key] = Hold("its pre-up failed", now + delay, failures)

    def _problem(self, key: Key, text: str) -> None:
        lines = self.problems.setdefault(key, [])
        lines.append(text)
        del lines[:-PROBLEMS_KEPT]


NOT_RUN = -1001      # the status said for a command dropped before it ran


@dataclass(eq=False)
class ClientHooks:
    """The hooks of one client's apply through netcfgd (`netcfg apply`, ifup,
    ifreload; netcfg.apply.hooks.Deferred with ``gates`` false): run by the
    passes' worker, never by the loop itself (issue 23 H5 on the client's
    path). What runs before the writes (pre-down, down, the recorded down
    lines of what comes up again, pre-up) is waited for, bounded by the
    worker's time limit, with WATCHDOG=1 meanwhile, and a failing pre-up
    fails the apply as under the CLI; what runs after (up, post-up,
    post-down) runs while the loop turns, and the client's answer waits for
    it (``done``) and carries its lines (M15)."""

    hooks: InterfaceHooks
    keepalive: Callable[[], None] | None = None
    gates: ClassVar[bool] = False
    lines: list[str] = field(default_factory=list)
    outstanding: int = 0
    trial: Any = None        # the trial its apply began: its deadline waits for the answer
    _awaited: dict[int, Finished | None] = field(default_factory=dict)   # run()'s

    @property
    def done(self) -> bool:
        return self.outstanding == 0

    def submit(self, jobs: list[Job]) -> None:
        for job in jobs:
            job.owner = self
            self.outstanding += 1
        self.hooks.submit(jobs)

    def wait(self, keys: list[Key]) -> list[str]:
        self.hooks.wait(keys, self.keepalive)
        return []           # their lines came to ended()

    def run(self, job: Job) -> tuple[int, str]:
        self._awaited[id(job)] = None
        self.submit([job])
        self.hooks.wait([job.key], self.keepalive)
        done = self._awaited.pop(id(job))
        assert done is not None, "the worker neither ran nor dropped a command waited for"
        return done.code, done.output

    def pre_up_ran(self, key: Key, fingerprint: str) -> bool:
        return False

    def ended(self, done: Finished, lines: list[str]) -> None:
        """InterfaceHooks: one of ours ended (or was dropped)."""
        self.outstanding -= 1
        self.lines += lines
        if id(done.job) in self._awaited:
            self._awaited[id(done.job)] = done


def _label(key: Key) -> str:
    return f"{key[1]} (netns {key[0]})" if key[0] else key[1]
