"""Running the imperative lines (pre-up, up, post-up, pre-down, down,
post-down) and the /etc/network/if-*.d scripts of the interfaces an apply
brings up or down (which: netcfg/plan/hooks.py; what ran before:
netcfg/apply/hookrecord.py; the decisions: docs/compat.md).

The API callers use::

    apply(model, session, hooks=HookSettings(scripts_dir="/etc/network"))
    down(model, session, hooks=HookSettings())

``HookSettings()`` (what apply() and down() use when given none): the lines
run, the record is kept in netcfg's run dir ($NETCFG_RUN_DIR/hooks.json, by
default /run/netcfg/hooks.json, shared by `netcfg apply`, netcfgd and the
ifupdown commands, under the apply lock they all take), no if-*.d scripts.
``scripts_dir``: the directory holding if-pre-up.d ... if-post-down.d (the
ifupdown commands pass $NETCFG_NETWORK_DIR or /etc/network; netcfgd its
--network-dir). ``record=None``: nothing remembered, the lines run only as
the plan brings interfaces up or down (benchmarks, tests of one plan).
``ifdown IFACE`` needs nothing more: the model it applies no longer wants
IFACE up, so IFACE's recorded down lines run.

Each line is `/bin/sh -c LINE`, as ifupdown2's usercmds runs it, and each
script is executed, in the interface's network namespace, with a time limit,
never waiting for children they leave running (hookproc.py). The environment
is ifupdown2's: the caller's, plus IFACE, LOGICAL, ADDRFAM, METHOD, MODE and
PHASE, VERBOSITY, and IF_<ATTRIBUTE> with the first value of each attribute
the stanza writes. Lines see ADDRFAM as ifupdown2 gives it (the families
joined by ","); scripts run once per family with one family each (ifupdown2
#288: the joined form breaks resolvconf's `case $ADDRFAM in inet|inet6`).
Output (stdout and stderr together) is logged and returned line by line.

When: in each phase, the stanza's lines, then the phase's scripts (ifupdown2
runs its addon modules, then scripts). pre-up before the batch that brings
the interface up, or, for a device the plan does not create, before the
first batch that touches it (a line may make it: `pre-up brctl addbr
$IFACE`; its ifindex is read again) (failing: the apply is reverted; netcfg is transactional,
ifupdown2 3.0 only logs a warning), up and post-up once the apply is
verified. Recorded down lines of removed interfaces: pre-down and down
before the first batch, post-down after the apply. A failing up, post-up,
down or post-down line is reported and the rest go on, as ifupdown2 does.

What the up and post-up lines add to the interface's addresses: ifupdown2
runs those lines again on every `ifreload`; netcfg runs them once
(plan/hooks.py), so a later apply must not remove what they added. Those
are the addresses that appeared on the interface while they ran (read
before and after; recorded with it, not under netcfgd's worker, which runs
them after the pass), and those they name in the plain form `ip address add
ADDRESS dev $IFACE` (all that is known of them when netcfg adopts an
interface ifupdown2 brought up). While the interface stays up and its
fingerprint holds, ``hook_added`` marks them on the desired model, and the
diff neither removes them nor calls them drift (plan/addresses.py). Lines
changed, or the interface brought up again: the addresses go as any
unlisted one does, and the lines, run again, add theirs.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
import shlex
import socket
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from netcfg.apply import hookrecord, scripts
from netcfg.apply.hookproc import run_hook, status_text
from netcfg.apply.hookworker import Job
from netcfg.apply.hookrecord import Entry, Record, RecordError
from netcfg.compile.values import format_route
from netcfg.kernel.nl import NetlinkError
from netcfg.model.errors import NetcfgError, UnknownDevice
from netcfg.model.model import ConfigObject, Model
from netcfg.netlink.read_parse import parse_address
from netcfg.plan import hooks as decide
from netcfg.plan.addresses import HOOK_ADDED
from netcfg.plan.hooks import DOWN_PHASES, UP_PHASES, Lifecycle

LOG = logging.getLogger("netcfg.hooks")
Key = tuple[str, str]
# A hook that hangs must not hold the apply lock (and netcfgd) for ever.
TIMEOUT_S = 120
# Attributes that are not the stanza's settings: the method lines.
_NOT_SETTINGS = frozenset({"inet", "inet6"})
_MODE = {"up": "start", "down": "stop"}


class HookFailed(NetcfgError):
    """A pre-up line or script failed: the interface must not come up."""


class PreUpDue(Exception):
    """netcfgd's pass (``HookSettings.deferred``) would bring up interfaces
    whose pre-up has not run: their pre-up (after the recorded down lines of
    the ones that cycle) is handed to the worker, and the pass is to be
    planned again with them held down (``keys``). Raised before any write."""

    def __init__(self, fingerprints: dict[Key, str]):
        super().__init__(", ".join(_name(k) for k in fingerprints))
        self.fingerprints = fingerprints     # what each pre-up ran for
        self.keys = list(fingerprints)


class Deferred(Protocol):
    """Where netcfgd sends hook commands instead of running them (on
    netcfg/apply/hookworker.py's worker beside its loop).

    ``gates`` true (a pass: netcfgd/hooks.py InterfaceHooks): an interface
    whose pre-up has not run is not brought up in this pass (PreUpDue), a
    later pass brings it up. ``gates`` false (a client's apply through
    netcfgd: ClientHooks): what runs before the writes is waited for as the
    CLI does (pre-up with ``run``, failing the apply; pre-down, down and the
    recorded down lines of what comes up again with ``wait``), bounded and
    with WATCHDOG=1 meanwhile; what runs after (up, post-up, post-down) is
    only submitted."""

    gates: bool

    def submit(self, jobs: list[Job]) -> None: ...

    def wait(self, keys: list[Key]) -> list[str]: ...

    def run(self, job: Job) -> tuple[int, str]: ...

    def pre_up_ran(self, key: Key, fingerprint: str) -> bool: ...


def _default_record() -> str:
    from netcfg.apply.confirm import run_dir

    return hookrecord.default_path(run_dir())


@dataclass(frozen=True)
class HookSettings:
    """How an apply runs hooks (module doc)."""

    scripts_dir: str | None = None          # holds if-*.d; None: no scripts
    record: str | None = field(default_factory=_default_record)   # None: none kept
    timeout_s: float = TIMEOUT_S            # per line, per script
    verbosity: int = 0                      # $VERBOSITY
    # Lines for other packages' hooks (wpa-*, hostapd, dns-* ...), which the
    # model never holds: {(netns, name): {attribute: first value}}, from
    # netcfg.compile.unsupported.hook_lines(compiled.parsed); see with_config.
    hook_lines: Mapping[Key, Mapping[str, str]] = field(default_factory=dict)
    # Debian ifupdown's `no-scripts NAME`: interfaces whose if-*.d scripts do
    # not run (their own lines do), in every namespace; see with_config.
    no_scripts: frozenset = frozenset()
    # netcfgd's passes: commands go to a worker, never run here (issue 23 H5).
    deferred: Deferred | None = None
    # Interfaces a pass leaves alone: held down for their pre-up, or for a
    # repair loop (netcfgd/hooks.py). Their hooks are not looked at.
    held: frozenset = frozenset()

    def with_config(self, compiled: Any) -> "HookSettings":
        """These settings with the hook-only lines of ``compiled`` (a
        netcfg.compile.pipeline.Compiled), exported to hooks as IF_<KEY>."""
        from netcfg.compile.unsupported import hook_lines

        parsed = getattr(compiled, "parsed", None)
        return dataclasses.replace(self, hook_lines=hook_lines(parsed) if parsed else {},
                                   no_scripts=frozenset(parsed.no_scripts) if parsed else
                                   frozenset())

    def scripts_for(self, stanza: "Stanza") -> bool:
        """Whether ``stanza``'s interface gets the if-*.d scripts."""
        return self.scripts_dir is not None and stanza.name not in self.no_scripts


# ---------------------------------------------------------------- stanzas

@dataclass(frozen=True)
class Stanza:
    """What hooks see of one interface: its lines, families and settings,
    from the config (``of``) or from the record (``recorded``: down lines only)."""

    netns: str
    name: str
    label: str
    lines: tuple[tuple[str, str], ...]
    families: tuple[tuple[str, str], ...]
    settings: dict[str, str]
    locs: dict[str, str]

    @classmethod
    def of(cls, obj: ConfigObject, hook_lines: Mapping[str, str] | None = None) -> "Stanza":
        """``hook_lines``: the stanza's lines for other packages' hooks."""
        families = tuple((f, str(obj.attrs.get(f) or "")) for f in ("inet", "inet6")
                         if f in obj.attrs)
        lines = tuple((phase, command) for phase in UP_PHASES + DOWN_PHASES
                      for command in obj.attrs.get(phase, ()))
        locs = {phase: str(obj.locs[phase]) for phase in UP_PHASES + DOWN_PHASES
                if phase in obj.locs}
        settings = {"IF_" + a.upper().replace("-", "_"): str(v)
                    for a, v in (hook_lines or {}).items()}
        settings.update(_settings(obj))
        return cls(obj.netns, obj.name, obj.label(), lines, families, settings, locs)

    @classmethod
    def recorded(cls, entry: Entry) -> "Stanza":
        return cls(entry.netns, entry.name, entry.label, entry.down, entry.families,
                   entry.settings, entry.locs)

    def phase_lines(self, phases: tuple[str, ...]) -> list[tuple[str, str]]:
        return [(p, c) for p, c in self.lines if p in phases]

    def fingerprint(self) -> str:
        if "_fingerprint" not in self.__dict__:   # once: decided on, then recorded
            object.__setattr__(self, "_fingerprint", hookrecord.fingerprint(
                self.phase_lines(UP_PHASES), self.families, self.settings))
        return self.__dict__["_fingerprint"]

    def entry(self, added: tuple[str, ...] = ()) -> Entry:
        return Entry(self.netns, self.name, self.label, self.fingerprint(),
                     tuple(self.phase_lines(DOWN_PHASES)), self.families, self.settings,
                     {p: loc for p, loc in self.locs.items() if p in DOWN_PHASES}, added)


def _settings(obj: ConfigObject) -> dict[str, str]:
    """IF_<ATTRIBUTE> for what the stanza writes (it has a line for it), not
    what netcfg derived; the first value, as ifupdown2 (iface.generate_env)."""
    out = {}
    for attribute in obj.locs:
        if attribute in _NOT_SETTINGS:
            continue
        value = obj.attrs.get(attribute, obj.netns if attribute == "netns" else None)
        if value is not None:
            out["IF_" + attribute.upper().replace("-", "_")] = _first_text(value)
    return out


def _first_text(value: Any) -> str:
    """The first value as a stanza writes it (ifupdown2: attr_value[0])."""
    if isinstance(value, list):
        # An empty list is how the model holds `bridge-ports none`,
        # `bond-slaves none`: the stanza wrote "none".
        value = value[0] if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return format_route(value)  # routes are the only dict values
    return str(value)


def stanza_environment(stanza: Stanza, direction: str, phase: str, verbosity: int = 0,
                       family: tuple[str, str] | None = None) -> dict[str, str]:
    """ifupdown2's environment for one hook of ``stanza``: ``family`` given
    (a script's call), ADDRFAM and METHOD are that family's; else (a line)
    ADDRFAM joins the stanza's families and METHOD is the first one's."""
    env = dict(os.environ)
    if family is not None:
        addrfam, method = family
    else:
        addrfam = ",".join(f for f, _ in stanza.families)
        method = stanza.families[0][1] if stanza.families else ""
    env.update({"IFACE": stanza.name, "LOGICAL": stanza.name, "ADDRFAM": addrfam,
                "METHOD": method, "MODE": _MODE[direction], "PHASE": phase,
                "VERBOSITY": str(verbosity)})
    env.update(stanza.settings)
    return env


def environment(obj: ConfigObject, direction: str, phase: str, verbosity: int = 0) -> dict:
    """ifupdown2's environment for one line of ``obj``'s stanza."""
    return stanza_environment(Stanza.of(obj), direction, phase, verbosity)


# ---------------------------------------------------------------- one apply's hooks

@dataclass
class Hooks:
    """One apply's hooks: built from the plan and the record (``for_plan``),
    then driven by the executor: ``start()`` before the first batch,
    ``before_batch()`` before each, ``after_verify()`` once verified,
    ``save()`` at the end whatever happened; ``undo()`` for a revert of a
    verified apply. ``log``: what ran and what it said."""

    settings: HookSettings
    netns_dir: str
    stanzas: dict[Key, Stanza]                 # the config's, of the interfaces it wants up
    plan: Lifecycle
    record: Record | None
    pre_up_at: dict[Key, int] = field(default_factory=dict)   # batch number of each pre-up
    log: list[str] = field(default_factory=list)
    ran_up: list[Key] = field(default_factory=list)
    _script_dir: scripts.ScriptDirectory | None = None
    _gone: dict[Key, Stanza | None] = field(default_factory=dict)   # start()'s, for post-down
    _pre_up_ran: set[Key] = field(default_factory=set)   # deferred: by the worker, before
    _pre_up_netns: set[str] = field(default_factory=set)   # where pre-up lines ran, unread
    # An interface's addresses now (interface_addresses), read around its up
    # lines; None: not read, nothing recorded as theirs.
    addresses: Callable[[Key], frozenset[str]] | None = None

    @classmethod
    def for_plan(cls, desired: Model, plan, netns_dir: str, settings: HookSettings | None,
                 in_reach: Callable[[Key], bool] = lambda key: True,
                 stopping: bool = False, session: Any = None) -> "Hooks":
        """``in_reach``: whether a key is part of this apply (a selection's);
        ``stopping``: `netcfg down`: nothing comes up, recorded interfaces the
        plan takes down or away run their down lines; ``session``: the
        KernelSession the up lines' addresses are read through (None: not read)."""
        settings = settings or HookSettings()
        log: list[str] = []
        record = None
        if settings.record is not None:
            try:
                record = hookrecord.load(settings.record)
            except RecordError as error:
                log.append(f"warning: {error}; starting a new one")
                LOG.warning("%s", error)
                record = Record()
        ops = plan.operations
        gone = decide.namespaces_deleted(ops)
        taken_down = set(decide.went_down(ops))
        held = settings.held
        recorded = {k: e.fingerprint for k, e in (record.entries if record else {}).items()
                    if in_reach(k) and k not in held}
        if stopping:
            wanted = {k: fp for k, fp in recorded.items()
                      if k not in taken_down and k[0] not in gone}
            stanzas: dict[Key, Stanza] = {}
            lifecycle = decide.lifecycle(wanted, recorded, ())
        else:
            extra = settings.hook_lines
            came = decide.requires_first([k for k in decide.came_up(ops) if k not in held],
                                         desired)
            # Without a record only what the plan brings up can run anything:
            # a no-op dry run (`ifquery -c` on 4094 VLANs) looks at nothing.
            candidates = desired.interfaces if record is not None else {
                k: desired.interfaces[k] for k in came if k in desired.interfaces}
            stanzas = {k: Stanza.of(o, extra.get(k)) for k, o in candidates.items()
                       if decide.wants_up(o) and in_reach(k) and k not in held}
            wanted = {k: s.fingerprint() for k, s in stanzas.items()}
            down_lines = {k: Stanza.of(desired.interfaces[k], extra.get(k))
                          for k in decide.went_down(ops)
                          if k in desired.interfaces and k not in held}
            stanzas.update({k: s for k, s in down_lines.items() if k not in stanzas})
            lifecycle = decide.lifecycle(wanted, recorded, came,
                                         [k for k in down_lines if k not in wanted])
        script_dir = scripts.ScriptDirectory(settings.scripts_dir) if settings.scripts_dir \
            else None
        hooks = cls(settings, netns_dir, stanzas, lifecycle, record, log=log,
                    _script_dir=script_dir)
        if session is not None and record is not None and settings.deferred is None:
            hooks.addresses = lambda key: interface_addresses(session, key)
        hooks.pre_up_at = _pre_up_batches(plan, lifecycle)
        if settings.deferred is not None and settings.deferred.gates and not stopping:
            hooks._gate(set(came))
        return hooks

    def _gate(self, came: set[Key]) -> None:
        """netcfgd: an interface the plan brings up whose pre-up has not run
        is not brought up in this pass (PreUpDue); its pre-up runs in the
        worker, and a later pass brings it up (issue 23 H5, M2)."""
        deferred = self.settings.deferred
        assert deferred is not None
        due = []
        for key in self.plan.cycles + self.plan.ups:
            stanza = self.stanzas[key]
            if key not in came or not self._commands(stanza, ("pre-up",)):
                continue
            if deferred.pre_up_ran(key, stanza.fingerprint()):
                self._pre_up_ran.add(key)     # ran: not again
                continue
            due.append(key)
        if not due:
            return
        for key in due:
            if key in self.plan.cycles:
                self._phases(self._old(key), "down", DOWN_PHASES, stop_on_failure=False)
            self._mark_pending(key)
            self._phases(self.stanzas[key], "up", ("pre-up",), stop_on_failure=True)
        self.save()
        raise PreUpDue({k: self.stanzas[k].fingerprint() for k in due})

    # -- what the plan says

    def notes(self) -> list[str]:
        """One line per command that runs (`netcfg plan`, `ifup -n`), as
        plan_notes() says them, recorded down lines marked."""
        out: list[str] = []

        def say(key: Key, stanza: Stanza | None, phases: tuple[str, ...], why: str = "") -> None:
            lines = stanza.phase_lines(phases) if stanza is not None else []
            out.extend(f"{_name(key)}: {phase} runs: {command}{why}" for phase, command in lines)
            if self._script_dir is not None and stanza is not None and \
                    self.settings.scripts_for(stanza):
                out.append(f"{_name(key)}: if-{{{','.join(phases)}}}.d scripts run{why}")

        for key in self.plan.downs:
            say(key, self._old(key), DOWN_PHASES, " (recorded; no longer wanted up)")
        for key in self.plan.plan_downs:
            say(key, self._old(key), DOWN_PHASES)
        for key in self.plan.cycles:
            say(key, self._old(key), DOWN_PHASES, " (recorded; changed or brought up again)")
            say(key, self.stanzas[key], UP_PHASES)
        for key in self.plan.ups:
            say(key, self.stanzas[key], UP_PHASES)
        return out

    def due(self) -> bool:
        """Whether anything runs or is recorded, even with no kernel write."""
        return bool(self.plan)

    # -- driven by the executor

    def start(self) -> None:
        """Before the first batch: the down lines of what goes (pre-down and
        down now, post-down after the apply), the recorded down lines of what
        comes up again, and pre-up of what comes up with no batch of its own."""
        self._gone = {}
        for key in self.plan.downs + self.plan.plan_downs:
            self._gone[key] = self._old(key)
            self._phases(self._gone[key], "down", ("pre-down", "down"), stop_on_failure=False)
            self._mark_pending(key)   # a failed apply does not run them twice
        deferred = self.settings.deferred
        if deferred is not None and (self.plan.downs or self.plan.plan_downs):
            # ifupdown2 runs them while the interface is still there: the
            # one wait of a pass, bounded by the worker's time limit.
            self.log += deferred.wait(list(self.plan.downs + self.plan.plan_downs))
        for key in self.plan.cycles:
            self._phases(self._old(key), "down", DOWN_PHASES, stop_on_failure=False)
            self._mark_pending(key)
        if deferred is not None and not deferred.gates and self.plan.cycles:
            # A client's apply: the old down lines end before the writes, as
            # under the CLI (a pass's run beside it, its pre-up queued after).
            self.log += deferred.wait(list(self.plan.cycles))
        for key in self.plan.cycles + self.plan.ups:
            if self.pre_up_at.get(key) is None:
                self._pre_up(key)

    def before_batch(self, number: int, batch: Any = None) -> set[str]:
        """pre-up of what batch ``number`` brings up (failing: HookFailed).
        Returns the namespaces where pre-up lines ran since the last call
        (start()'s too): a line may have made a device (`pre-up brctl addbr
        $IFACE`, `pre-up ip link add vxlan0 ...`) that the batch configures,
        so the executor reads their ifindexes again."""
        for key in self.plan.cycles + self.plan.ups:
            if self.pre_up_at.get(key) == number:
                self._pre_up(key)
        ran, self._pre_up_netns = self._pre_up_netns, set()
        return ran

    def after_verify(self) -> None:
        for key in self.plan.downs + self.plan.plan_downs:
            self._phases(self._gone.get(key), "down", ("post-down",), stop_on_failure=False)
            if self.record is not None:
                self.record.drop(key)
        for key in self.plan.cycles + self.plan.ups:
            stanza = self.stanzas[key]
            reading = self.addresses is not None and self._commands(stanza, ("up", "post-up"))
            before = self.addresses(key) if reading else frozenset()
            self._phases(stanza, "up", ("up", "post-up"), stop_on_failure=False)
            self.ran_up.append(key)
            added = tuple(sorted(self.addresses(key) - before)) if reading else ()
            if self.record is not None:
                self.record.put(stanza.entry(added))
        if self.record is not None:
            for key in self.plan.adopted:
                self.record.put(self.stanzas[key].entry())

    def undo(self) -> None:
        """A verified apply is being reverted: what it brought up runs its
        down lines (pre-down, down, post-down) now, and is due to run its up
        lines again when a later apply wants it up."""
        for key in reversed(self.ran_up):
            self._phases(self.stanzas[key], "down", DOWN_PHASES, stop_on_failure=False)
            self._mark_pending(key)
        if self.settings.deferred is not None and self.ran_up:
            # netcfgd's trial revert: they end before the revert's writes.
            self.log += self.settings.deferred.wait(list(self.ran_up))
        self.ran_up.clear()

    def save(self) -> None:
        """Write the record if this apply changed it; a failure is a warning."""
        if self.record is None or self.settings.record is None or not self.record.changed:
            return
        try:
            hookrecord.save(self.settings.record, self.record)
            self.record.changed = False
        except RecordError as error:
            self.log.append(f"warning: {error}")
            LOG.warning("%s", error)

    # -- running

    def _old(self, key: Key) -> Stanza | None:
        """The down lines to run for ``key``: the record's, else the config's."""
        entry = self.record.entries.get(key) if self.record is not None else None
        if entry is not None:
            # Pending: its up lines did not run, so neither do its down lines.
            return Stanza.recorded(entry) if entry.fingerprint != hookrecord.PENDING else None
        return self.stanzas.get(key)

    def _mark_pending(self, key: Key) -> None:
        if self.record is not None and key in self.record.entries:
            self.record.put(self.record.entries[key].pending())
        elif self.record is not None and key in self.stanzas:
            self.record.put(self.stanzas[key].entry().pending())

    def _pre_up(self, key: Key) -> None:
        self._mark_pending(key)
        if self.settings.deferred is not None and key in self._pre_up_ran:
            return      # the worker ran it before this pass (_gate)
        if self._commands(self.stanzas[key], ("pre-up",)):
            self._pre_up_netns.add(key[0])
        self._phases(self.stanzas[key], "up", ("pre-up",), stop_on_failure=True)

    def _commands(self, stanza: Stanza | None, phases: tuple[str, ...]) -> bool:
        """Whether ``stanza`` has anything to run in ``phases``."""
        if stanza is None:
            return False
        if stanza.phase_lines(phases):
            return True
        return self._script_dir is not None and self.settings.scripts_for(stanza) and \
            any(self._script_dir.scripts(p) for p in phases)

    def _phases(self, stanza: Stanza | None, direction: str, phases: tuple[str, ...], *,
                stop_on_failure: bool) -> None:
        if stanza is None:
            return
        if stanza.netns and not os.path.exists(os.path.join(self.netns_dir, stanza.netns)):
            # The namespace is gone, and with it what the lines did there.
            self.log.append(f"{stanza.label}: netns {stanza.netns} is gone: "
                            f"{', '.join(phases)} not run")
            return
        for phase in phases:
            for _, command in stanza.phase_lines((phase,)):
                self._one(stanza, direction, phase, ["/bin/sh", "-c", command],
                          f"{stanza.label}: {phase} '{command}'", stanza.locs.get(phase),
                          None, stop_on_failure)
            if self._script_dir is None or not self.settings.scripts_for(stanza):
                continue   # none, or `no-scripts NAME`
            for path in self._script_dir.scripts(phase):
                # One call per family, each with its own ADDRFAM and METHOD.
                for family in stanza.families or (("", ""),):
                    said = f"{stanza.label}: {phase} script {path}" + (
                        f" ({family[0]})" if family[0] else "")
                    self._one(stanza, direction, phase, [path], said, None, family,
                              stop_on_failure)

    def _one(self, stanza: Stanza, direction: str, phase: str, argv: list[str], said: str,
             where: str | None, family: tuple[str, str] | None, stop_on_failure: bool) -> None:
        env = stanza_environment(stanza, direction, phase, self.settings.verbosity, family)
        deferred = self.settings.deferred
        if deferred is not None:
            # netcfgd: the worker runs it; its output and failure reach the
            # log, `netcfg status` and a client's answer from there
            # (netcfgd/hooks.py). A client's pre-up is waited for.
            job = Job((stanza.netns, stanza.name), phase, argv, env, said, where)
            if not (stop_on_failure and not deferred.gates):
                deferred.submit([job])
                return
            code, output = deferred.run(job)
            if code == 0:
                return
            text = f"{where + ': ' if where else ''}{said} failed ({status_text(code)})"
        else:
            code, output = run_hook(argv, env, netns=stanza.netns, netns_dir=self.netns_dir,
                                    timeout_s=self.settings.timeout_s)
            for line in output.splitlines():
                self.log.append(f"{said}: {line}")
                LOG.info("%s: %s", said, line)
            if code == 0:
                self.log.append(f"{said}: ok")
                return
            text = f"{where + ': ' if where else ''}{said} failed ({status_text(code)})"
            self.log.append(text)
            LOG.warning("%s", text)
        if stop_on_failure:
            last = output.strip().splitlines()[-1:] or [""]
            raise HookFailed(f"{text}{': ' + last[0] if last[0] else ''}; "
                             f"{stanza.name} was not brought up")


# ---------------------------------------------------------------- what the up lines added

def hook_added(model: Model, settings: HookSettings | None) -> Model:
    """``model`` with, on each interface whose up and post-up lines will not
    run again (the record has its fingerprint, or none: an interface up is
    then adopted, its lines having run before netcfg, under ifupdown2), the
    addresses those lines added, as HOOK_ADDED: the diff keeps them while the
    interface is up (plan/addresses.py). What they added is what appeared
    while they ran (the record's ``added``) and what they name in the plain
    form `ip address add ADDRESS dev $IFACE` (the only thing known of them on
    adoption). The caller's model is not changed (netcfgd keeps it between
    passes). Read from the record whatever the settings (a dry run, `query
    --check`, too); with ``record=None`` nothing is kept."""
    settings = settings or HookSettings()
    lined = {k: o for k, o in model.interfaces.items()
             if ("up" in o.attrs or "post-up" in o.attrs) and decide.wants_up(o)}
    if settings.record is None or not lined:
        return model        # the record unread: 17 ms at 4094 entries, each poll
    try:
        record = hookrecord.load(settings.record)
    except RecordError:
        return model        # Hooks.for_plan says so, and starts a new one
    interfaces = None
    for key, obj in lined.items():
        named = named_addresses([c for p in ("up", "post-up") for c in obj.attrs.get(p, ())],
                                obj.name)
        entry = record.entries.get(key)
        if entry is not None and not (entry.added or named):
            continue
        if entry is not None and \
                Stanza.of(obj, settings.hook_lines.get(key)).fingerprint() != entry.fingerprint:
            continue        # changed (or due): its down lines, then its up lines run
        kept = tuple(dict.fromkeys([*(entry.added if entry is not None else ()), *named]))
        if not kept:
            continue
        if interfaces is None:
            interfaces = dict(model.interfaces)
        interfaces[key] = dataclasses.replace(obj, attrs={**obj.attrs, HOOK_ADDED: kept})
    return model if interfaces is None else dataclasses.replace(model, interfaces=interfaces)


# iproute2 takes any prefix of a word (`ip a a`, `ip addr add`).
_ADDRESS_OBJECT = "address"
_ADDING = ("add", "replace")
_SHELL_SEPARATORS = {";", "&&", "||", "|", "&"}


def named_addresses(commands: list[str], name: str) -> list[str]:
    """The addresses ``commands`` add to interface ``name`` in the plain
    form `[/sbin/]ip [-4|-6|-f FAMILY] address add|replace ADDRESS[/LEN] dev
    $IFACE|NAME ...`, spelled as the read side spells them; anything else
    (scripts, variables, other devices) names none."""
    found = []
    for command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        for cut, word in enumerate(words):
            if word in _SHELL_SEPARATORS:
                words = words[:cut]
                break
        address = _ip_address_add(words, name)
        if address is not None:
            found.append(address)
    return found


def _ip_address_add(words: list[str], name: str) -> str | None:
    if len(words) < 5 or os.path.basename(words[0]) != "ip":
        return None
    rest = words[1:]
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-f", "-family") and rest:
            rest.pop(0)
    if len(rest) < 4 or not _ADDRESS_OBJECT.startswith(rest[0]) or \
            not any(verb.startswith(rest[1]) for verb in _ADDING):
        return None
    args = rest[2:]
    if args and args[0] == "local":
        args = args[1:]
    dev = [args[i + 1] for i in range(len(args) - 1) if args[i] == "dev"]
    if not args or dev not in (["$IFACE"], ["${IFACE}"], [name]):
        return None
    try:
        interface = ipaddress.ip_interface(args[0])
    except ValueError:
        return None
    return f"{interface.ip}/{interface.network.prefixlen}"


def interface_addresses(session: Any, key: Key) -> frozenset[str]:
    """The addresses of ``key`` now, as the read side spells them, less the
    kernel's own (link-local, SLAAC). Equivalent to: `ip address show dev
    NAME` (in its namespace). Empty when the device is gone."""
    netns, name = key
    found = set()
    try:
        index = session.ifindex(netns, name)
        for family in (socket.AF_INET, socket.AF_INET6):
            for payload in session.addresses_now(netns, index, family):
                parsed = parse_address(payload)
                if parsed is not None:
                    found.add(parsed[1])
    except (UnknownDevice, NetlinkError, OSError):
        return frozenset()     # gone (its namespace too): nothing of its is kept
    return frozenset(found)


def _pre_up_batches(plan, lifecycle: Lifecycle) -> dict[Key, int]:
    """The batch before which each interface's pre-up runs. One the plan
    creates: the batch that sets it up (it exists by then, down), else the one
    that creates it. One it does not create (a NIC, or a device the pre-up
    line itself makes: `pre-up brctl addbr $IFACE`): the first batch that
    touches it, as ifupdown2 runs usercmds' pre-up before its address addon
    sets the MTU, MAC and addresses. None (start()) when the plan does not
    bring it up."""
    wanted = set(lifecycle.cycles + lifecycle.ups)
    set_up: dict[Key, int] = {}
    created: dict[Key, int] = {}
    touched: dict[Key, int] = {}
    for number, batch in enumerate(plan.batches):
        for op in batch:
            key = (op.netns, op.name)
            if key not in wanted:
                continue
            touched.setdefault(key, number)
            if op.action == "link-up":
                set_up.setdefault(key, number)
            elif op.action == "link-add":
                created.setdefault(key, number)

    def before(key: Key) -> int:
        if key in created:   # made by the plan: once set up, else once made
            return set_up.get(key, created[key])
        return touched[key]   # already there, or made by its own pre-up line

    # Only interfaces the plan brings up or makes; the others start().
    return {key: before(key) for key in touched if key in set_up or key in created}


def _name(key: Key) -> str:
    return f"{key[1]} (netns {key[0]})" if key[0] else key[1]
