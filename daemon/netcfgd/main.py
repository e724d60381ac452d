"""netcfgd: keep the kernel equal to the config, as a systemd service.

    subscribe (one event socket, every managed namespace) -> load the config ->
    full reconcile -> READY=1 -> loop:
        events and /run/netns changes mark namespaces dirty;
        debounce -> reconcile the dirty ones; retries with backoff;
        control socket requests (status, apply, query, show, reload, confirm);
        an apply --confirm on trial reverts at its deadline (trial.py);
        SIGHUP reloads (RELOADING=1 ... READY=1), SIGTERM stops;
        WATCHDOG=1 when systemd asks for it; a full resync now and then.

The loop is one thread: requests and passes never run at the same time,
which is what makes the daemon the single writer.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import gc
import json
import logging
import os
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from netcfg import __version__
from netcfg.apply import hookrecord
from netcfg.apply.confirm import run_dir
from netcfg.apply.dhcp import Lease, clients as dhcp_clients
from netcfg.apply.hooks import HookSettings
from netcfg.apply.execute import ApplyFailed, ApplyResult, RevertFailed, apply, revert
from netcfg.apply.lock import apply_lock
from netcfg.cli.client import socket_path
from netcfg.cli.common import add_template_path_option
from netcfg.compile.pipeline import (DEFAULT_CONFIG, IFUPDOWN2_TEMPLATES, STDIN, ConfigSource,
                                     compile_config)
from netcfg.compile.renderlimit import DEFAULT_RENDER_TIMEOUT_S, render_timeout_from_env
from netcfg.kernel.events import EVENT_RCVBUF, EventSocket, EventsLost
from netcfg.kernel.ns import DEFAULT_RUN_DIR as NETNS_RUN_DIR
from netcfg.kernel.session import KernelSession
from netcfg.model.errors import EXIT_INVALID_CONFIG, ConfigInvalid, NetcfgError, quote
from netcfg.model.model import Model
from netcfg.plan.lower.lowering import lower
from netcfg.plan.scope import Selection

from netcfgd import logs, service
from netcfgd.control import (ANSWER_DEADLINE_S, MAX_CLIENTS, REQUEST_DEADLINE_S, ControlConnection,
                             ControlServer, ProtocolError)
from netcfgd.dhcpwatch import DhcpWatch
from netcfgd.dirty import DirtySet
from netcfgd.hooks import ClientHooks, NamespaceHooks
from netcfgd.notify import Notifier
from netcfgd.reconcile import Reconciler
from netcfgd.storage import StorageHooks
from netcfgd.trial import (CONFIRMED, REVERT_FAILED, REVERTED, Trial, Trials, forget_cli_trial,
                           refused_by_a_cli_trial, wait_for_cli_trial)
from netcfgd.watch import NetnsDirWatch, classify

EXIT_OK, EXIT_FAILED = 0, 1
EXIT_INTERNAL = 70   # EX_SOFTWARE, as netcfg
ROOT_UID = 0


@dataclass
class Options:
    config: str = DEFAULT_CONFIG
    variables: dict[str, Any] = field(default_factory=dict)
    run_dir: str = ""                 # default: netcfg.apply.confirm.run_dir()
    netns_dir: str = NETNS_RUN_DIR
    debounce: float = 0.03            # quiet time before a pass
    cap: float = 2.0                  # longest a dirty key waits when a storm starts
    resync: float = 600.0             # full pass every this many seconds
    verbose: bool = False
    event_buffer: int = EVENT_RCVBUF  # bytes; tests make it small to force ENOBUFS
    render_timeout: float = DEFAULT_RENDER_TIMEOUT_S   # seconds; under WatchdogSec
    request_deadline: float = REQUEST_DEADLINE_S       # a client's whole request
    template_path: tuple[str, ...] = (IFUPDOWN2_TEMPLATES,)   # ifupdown2's template_lookuppath
    network_dir: str | None = None    # holds if-*.d scripts (--network-dir); None: none run
    # Lightweight lowering of the config it loads itself (--lower); a client's
    # apply says its own. Off for /etc/network/interfaces (netcfg-ifupdown):
    # guests are plugged into the bridges the file names, by name.
    lower_enabled: bool = True


class Daemon:
    def __init__(self, options: Options, log: logging.Logger, notifier: Notifier,
                 hooks: NamespaceHooks | None = None):
        self.options = options
        self.log = log
        self.notifier = notifier
        self.hooks = hooks
        self.source = ConfigSource(path=options.config, variables=options.variables,
                                   render_timeout=options.render_timeout,
                                   template_path=options.template_path)
        self.config_errors: list[str] = []
        self.config_loaded_at: float | None = None
        self.dirty = DirtySet(options.debounce, options.cap)
        self.stop_requested = False
        self.reload_requested = False
        self.resync_pending = False
        self.ready = False
        self.started_at = time.time()
        self.run_dir = options.run_dir or run_dir()
        self.trials = Trials(self.run_dir)
        # Where the enforced config came from when it is not self.source's
        # path (an apply of stdin's text): status names it (trial.py).
        self.enforced_from = ""
        # Hooks (netcfg/apply/hooks.py): the record beside the apply lock, shared
        # with `netcfg apply` and the ifupdown commands; if-*.d scripts when asked.
        self.hook_settings = HookSettings(scripts_dir=options.network_dir,
                                          record=hookrecord.default_path(self.run_dir))
        # Set up in start():
        self.events: EventSocket | None = None
        self.watch: NetnsDirWatch | None = None
        self.session: KernelSession | None = None
        self.reconciler: Reconciler | None = None
        self.control: ControlServer | None = None
        # Control clients whose request is being read or answer written
        # (control.py): the loop waits on them, never for them.
        self.clients: set[ControlConnection] = set()
        self._selector: selectors.BaseSelector | None = None
        self._dhcp_watch: DhcpWatch | None = None
        # Only a pass, an apply or a revert starts or stops DHCP clients: the
        # watch looks at the pid files again after one, not on every wakeup.
        self._dhcp_may_have_changed = True
        self._wakeup: tuple[socket.socket, socket.socket] | None = None
        # Clients whose apply's hooks still run in the worker: answered once they end.
        self.answers_waiting: list[tuple[ControlConnection, ClientHooks, Callable]] = []

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Subscribe, load the config, open the control socket, reconcile
        everything, then say READY=1. Raises ConfigInvalid or NetcfgError."""
        # Subscribe first, then list: what changes meanwhile is heard.
        self.events = EventSocket(rcvbuf=self.options.event_buffer)
        self.watch = NetnsDirWatch(self.options.netns_dir)
        self.session = KernelSession(self.options.netns_dir)
        self.reconciler = Reconciler(self.session, self.log, self.hooks,
                                     before_write=self.apply_lock,
                                     hook_settings=self.hook_settings)
        left = self._left_by_a_trial()
        compiled = left[0] if left else compile_config(self.source)
        self._loaded(compiled, lower_enabled=left[1] if left else self.options.lower_enabled)
        # One owner at a time: a CLI `apply --confirm` under way ends first
        # (the control socket is not open yet, so `netcfg confirm` reaches it),
        # and a config its trial reverted is not enforced (trial.py).
        wait_for_cli_trial(self.run_dir, self.log, self.notifier.ping, self.notifier.status,
                           extend=self.notifier.extend_timeout)
        refused = refused_by_a_cli_trial(self.run_dir, self.reconciler.desired)
        if refused is not None:
            raise NetcfgError(refused)
        self.control = ControlServer(socket_path(self.run_dir))
        self.reconciler.remove_half_made()
        self.reconciler.map_nsids()
        self.notifier.status("first reconcile")
        self.run_pass(None)
        self.trials.reverted_at_start()
        forget_cli_trial(self.run_dir)
        self._freeze_heap()
        self.ready = True
        self.notifier.ready(self.reconciler.summary())
        self.log.info(f"ready: {self.reconciler.summary()}")

    def _left_by_a_trial(self) -> tuple[Any, bool] | None:
        """The config from before an apply --confirm that was still waiting
        when the daemon stopped (trial.py): nobody can confirm it now, so it
        is reverted, by enforcing that config from the first pass on."""
        left = self.trials.left_over()
        if left is None:
            return None
        try:
            source = left["previous_source"]
            compiled = compile_config(ConfigSource(
                path=STDIN, stdin_text=json.dumps(left["previous"])))
            self.source = ConfigSource(path=source["path"],
                                       variables=dict(source.get("variables") or {}),
                                       stdin_text=source.get("stdin_text"),
                                       render_timeout=self.options.render_timeout,
                                       template_path=self.options.template_path)
        except (KeyError, TypeError, ConfigInvalid) as e:
            self.log.error(f"{self.trials.path} is unreadable ({type(e).__name__}: {e}); "
                           f"starting from the config instead")
            self.trials.forget_left_over()
            return None
        self.log.warning(f"netcfgd stopped while an apply --confirm (pid "
                         f"{left.get('client_pid')}) waited for `netcfg confirm`: reverting "
                         f"to the config from before it")
        return compiled, bool(left.get("lower", True))

    @staticmethod
    def _freeze_heap() -> None:
        """The config, its lowered form and the read state are hundreds of
        thousands of long-lived objects: a full collection walking them all
        stalled a repair by most of a second at 10000 objects. Move what is
        alive now out of the collector's sight (gc.freeze); what later passes
        allocate is collected as usual."""
        gc.collect()
        gc.freeze()

    def _loaded(self, compiled: Any, lower_enabled: bool = True) -> None:
        for warning in compiled.warnings:
            self.log.warning(warning.format())
        assert self.reconciler is not None
        self.reconciler.load(compiled.model, lower_enabled)
        # Its lines for other packages' hooks go to the if-*.d scripts (IF_*).
        self.reconciler.hook_settings = self.hook_settings.with_config(compiled)
        self.config_errors = []
        self.config_loaded_at = time.time()
        self.enforced_from = ""

    def close(self) -> None:
        if self._dhcp_watch is not None:
            self._dhcp_watch.close()
        if self.reconciler is not None:
            self.reconciler.hooks.close()
            self.reconciler.interface_hooks.close()   # its worker's children: killed
        self.answer_hooks_ended(stopping=True)
        for conn in self.clients:
            conn.close()
        for thing in (self.control, self.events, self.watch, self.session):
            if thing is not None:
                with contextlib.suppress(OSError):
                    thing.close()
        if self._wakeup is not None:
            signal.set_wakeup_fd(-1)
            for s in self._wakeup:
                s.close()

    def apply_lock(self) -> contextlib.AbstractContextManager:
        """The CLI's apply lock (netcfg/apply/lock.py), held while a pass writes:
        a `netcfg` that does not go through the daemon waits for it."""
        return apply_lock(self.run_dir)

    # ---------------------------------------------------------------- signals

    def install_signals(self) -> None:
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        self._wakeup = (reader, writer)
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)

        def stop(_signum: int, _frame: object) -> None:
            self.stop_requested = True

        def hup(_signum: int, _frame: object) -> None:
            self.reload_requested = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGHUP, hup)

    # ---------------------------------------------------------------- the loop

    def run(self) -> None:
        assert self.events and self.watch and self.control and self._wakeup
        selector = self._selector = selectors.DefaultSelector()
        selector.register(self.events, selectors.EVENT_READ, self._on_events)
        selector.register(self.watch, selectors.EVENT_READ, self._on_netns_dir)
        selector.register(self.control, selectors.EVENT_READ, self._on_control)
        selector.register(self._wakeup[0], selectors.EVENT_READ, self._on_wakeup)
        self._dhcp_watch = DhcpWatch(dhcp_clients(), selector, self._on_dhcp_exit)
        next_resync = time.monotonic() + self.options.resync
        with selector:
            while not self.stop_requested:
                self.answer_hooks_ended()
                if self._dhcp_may_have_changed:
                    self._dhcp_may_have_changed = False
                    self._dhcp_watch.refresh()
                now = time.monotonic()
                deadlines = [next_resync]
                trial = self._trial_running()
                for t in (self.dirty.deadline(), self.reconciler.next_wakeup()[0],
                          trial.deadline if trial is not None else None,
                          min((c.due(now) for c in self.clients), default=None)):
                    if t is not None:
                        deadlines.append(t)
                due = self.notifier.watchdog_due(now)
                if due is not None:
                    deadlines.append(now + due)
                timeout = max(0.0, min(deadlines) - now)
                ready = selector.select(0.0 if self.resync_pending else timeout)
                woke = time.monotonic()
                for conn in self.clients:     # their time runs only while we wait
                    conn.charge(now, woke)
                for key, _mask in ready:
                    key.data()
                if self.stop_requested:
                    break
                if self.reload_requested and self.trials.current is None:
                    # A reload during a trial waits for its end: it would
                    # replace both the config on trial and the one to go back to.
                    self.reload_requested = False
                    self.reload()
                now = time.monotonic()
                self._drop_late_clients(now)
                trial = self._trial_running()
                if trial is not None and now >= trial.deadline:
                    self.end_trial(f"no confirmation within {trial.seconds:g} s")
                self.notifier.ping(now)
                if self.resync_pending or now >= next_resync:
                    self.resync_pending = False
                    self.dirty.take()
                    self.run_pass(None)
                    next_resync = time.monotonic() + self.options.resync
                    continue
                when, names = self.reconciler.next_wakeup()
                if when is not None and now >= when:
                    self.run_pass(names)
                if self.dirty.due(now):
                    namespaces, objects = self.dirty.take(now)
                    self.log.debug("dirty: " + ", ".join(
                        f"{n or 'host'}:{','.join(sorted(o))}" for n, o in objects.items()))
                    self.run_pass(namespaces)
        self.notifier.stopping()
        if self.trials.current is not None:   # nobody can confirm it once we are gone
            self.end_trial("netcfgd was stopped during the trial, before `netcfg confirm`")
        self.log.info("stopping; the network is left as it is")

    def run_pass(self, namespaces: set[str] | list[str] | None) -> None:
        self._dhcp_may_have_changed = True
        assert self.reconciler is not None
        result = self.reconciler.reconcile(namespaces, on_write=self._batch_done)
        self.reconciler.hooks.after_pass()
        if result.requests or result.failed:
            self.log.info(f"pass: {len(result.namespaces)} namespaces, {result.operations} "
                          f"operations, {result.requests} requests, "
                          f"{result.seconds * 1000:.1f} ms",
                          extra={"NETCFG_PASS": self.reconciler.counters.passes,
                                 "NETCFG_REQUESTS": result.requests})
        self.notifier.status(self.reconciler.summary())

    def _batch_done(self, *_progress: int) -> None:
        self.notifier.ping()

    # ---------------------------------------------------------------- inputs

    def _on_events(self) -> None:
        assert self.events and self.reconciler
        try:
            events = self.events.read()
        except EventsLost as e:
            self.reconciler.counters.event_losses += 1
            self.log.warning(f"{e}: resyncing every managed namespace")
            self.resync_pending = True
            return
        counters = self.reconciler.counters
        counters.events += len(events)
        managed = self.reconciler.status
        now = time.monotonic()
        for event in events:
            change = classify(event, self.reconciler.nsids)
            if change.nsid_released is not None:
                name = self.reconciler.nsid_released(change.nsid_released)
                if name is not None:
                    self.dirty.mark(name, now)
            elif change.netns is not None and change.netns in managed and \
                    self.reconciler.concerns(change.netns, event.kind, event.ifindex,
                                             event.name, event.origin, event.replace):
                self.dirty.mark(change.netns, now, change.obj)
            else:
                counters.events_ignored += 1

    def _on_dhcp_exit(self, lease: Lease, pid: int) -> None:
        """A DHCP client netcfg runs exited (dhcpwatch.py): its namespace's
        pass starts it again (apply's start_wanted)."""
        assert self.reconciler
        self.reconciler.counters.dhcp_clients_died += 1
        self.log.warning(f"the {lease.describe()} (pid {pid}) exited; restarting it")
        if lease.netns in self.reconciler.status:
            self.dirty.mark(lease.netns, time.monotonic(), f"dhcp:{lease.iface}")

    def _on_netns_dir(self) -> None:
        assert self.watch and self.reconciler
        now = time.monotonic()
        for name, created in self.watch.read():
            if name not in self.reconciler.status:
                continue
            if created:
                if name in self.reconciler.created_by_us:
                    self.reconciler.created_by_us.discard(name)
                else:
                    self.dirty.mark(name, now)   # made by someone else: configure it
            elif self._really_gone(name) and self.reconciler.namespace_deleted(name, now):
                self.dirty.mark(name, now)

    def _really_gone(self, name: str) -> bool:
        """Not when it is there again and is the one we hold: a revert of ours
        deleted it and made it again before we read the event."""
        assert self.session is not None
        if not os.path.exists(os.path.join(self.options.netns_dir, name)):
            return True
        handle = self.session.handles.get(name)
        return handle is not None and handle.is_stale()

    def _on_wakeup(self) -> None:
        assert self._wakeup
        with contextlib.suppress(BlockingIOError):
            self._wakeup[0].recv(4096)

    def _on_control(self) -> None:
        """New clients: registered, and served once their request is whole
        (_on_client); a client never makes the loop wait."""
        assert self.control and self._selector
        while True:
            conn = self.control.accept(time.monotonic(), self.options.request_deadline)
            if conn is None:
                return
            if conn.uid != ROOT_UID:
                self.log.warning(f"control: refused uid {conn.uid} (pid {conn.pid}): "
                                 f"only root may talk to netcfgd")
                conn.error("netcfgd talks to root only: run netcfg as root")
                self._finish(conn)
            elif len(self.clients) >= MAX_CLIENTS:
                self.log.warning(f"control: refused pid {conn.pid}: {MAX_CLIENTS} clients "
                                 f"are being served already")
                conn.error(f"netcfgd is busy with {MAX_CLIENTS} other clients; try again")
                self._finish(conn)
            else:
                self.clients.add(conn)
                self._selector.register(conn, selectors.EVENT_READ,
                                        lambda conn=conn: self._on_client(conn))

    def _on_client(self, conn: ControlConnection) -> None:
        if conn.closed:
            return           # dropped earlier in this round of the loop
        try:
            request = conn.receive()
        except ProtocolError as e:
            if not (conn.gone and conn.received == 0):   # not a probe that only connected
                self.log.warning(f"control: bad request from pid {conn.pid}: {e}")
            conn.error(str(e))
            self._finish(conn)
            return
        if request is None:
            return           # not whole yet
        assert self._selector is not None
        self._selector.unregister(conn)
        try:
            started = time.monotonic()
            service.handle(self, conn, request)
            self.log.info(f"control: {request['command']} for pid {conn.pid} served in "
                          f"{(time.monotonic() - started) * 1000:.1f} ms",
                          extra={"NETCFG_CLIENT_PID": conn.pid})
        except Exception as e:   # noqa: BLE001 - a request must never stop the daemon
            self.log.exception(f"control: internal error serving a request: {e}")
            conn.error(f"netcfgd internal error: {type(e).__name__}: {e} (see its log)",
                       EXIT_INTERNAL)
        finally:
            if conn.answer_later:
                self.clients.discard(conn)    # no deadline while its hooks run
            else:
                self._finish(conn)

    def _trial_running(self) -> Trial | None:
        """The trial whose deadline runs: not while its client's answer waits
        for the apply's hooks (its time counts from that answer)."""
        trial = self.trials.current
        if trial is None or any(c.trial is trial for _, c, _ in self.answers_waiting):
            return None
        return trial

    def answer_later(self, conn: ControlConnection, client: ClientHooks,
                     answer: Callable[[bool], None]) -> None:
        """Answer ``conn`` with ``answer(stopping)`` once ``client``'s hooks
        ended (answer_hooks_ended, each turn of the loop)."""
        conn.answer_later = True
        self.answers_waiting.append((conn, client, answer))

    def answer_hooks_ended(self, stopping: bool = False) -> None:
        """Answer the clients whose apply's hooks ended (the worker is polled
        by the passes' look at the hooks, reconcile()); all of them when
        netcfgd stops (what still ran was killed: ``answer`` says so)."""
        if not self.answers_waiting:
            return
        waiting, self.answers_waiting = self.answers_waiting, []
        for conn, client, answer in waiting:
            if not (client.done or stopping):
                self.answers_waiting.append((conn, client, answer))
                continue
            try:
                answer(stopping)
            except Exception as e:   # noqa: BLE001 - as _on_client: never stop the daemon
                self.log.exception(f"control: internal error answering pid {conn.pid}: {e}")
                conn.error(f"netcfgd internal error: {type(e).__name__}: {e} (see its log)",
                           EXIT_INTERNAL)
            conn.answer_later = False
            if stopping:
                conn.flush()
                conn.close()
            else:
                self._finish(conn)

    def _finish(self, conn: ControlConnection) -> None:
        """Close ``conn`` once its answer is taken; until then the loop
        writes it as the client reads (EVENT_WRITE), up to a deadline."""
        assert self._selector is not None
        if conn in self.clients:
            with contextlib.suppress(KeyError):
                self._selector.unregister(conn)
        if conn.flush():
            self.clients.discard(conn)
            conn.close()
            return
        conn.answering(time.monotonic())
        self.clients.add(conn)
        self._selector.register(conn, selectors.EVENT_WRITE,
                                lambda conn=conn: self._finish(conn))

    def _drop_late_clients(self, now: float) -> None:
        """Clients past their deadline: a request not whole in time, or an
        answer not taken. Told why when they can take it, and logged."""
        assert self._selector is not None
        for conn in [c for c in self.clients if c.late]:
            self.clients.discard(conn)
            with contextlib.suppress(KeyError):
                self._selector.unregister(conn)
            if conn.served:
                why = f"its answer was not read within {ANSWER_DEADLINE_S:g} seconds"
            else:
                why = (f"no whole request within {conn.request_deadline:g} seconds "
                       f"({conn.received} bytes)")
                conn.error(f"netcfgd dropped this connection: {why}")
            self.log.warning(f"control: dropped pid {conn.pid}: {why}",
                             extra={"NETCFG_CLIENT_PID": conn.pid})
            conn.close()

    # ---------------------------------------------------------------- config

    def reload(self) -> bool:
        """SIGHUP: compile the config again; keep the last good one if it is
        broken (and say so in status and the log)."""
        assert self.reconciler is not None
        self.notifier.reloading()
        self.log.info(f"reloading the config from {self.source.path}")
        try:
            compiled = compile_config(self.source)
        except ConfigInvalid as e:
            self.config_errors = [d.format() for d in e.diagnostics]
            for line in self.config_errors:
                self.log.error(line)
            self.log.error(f"reload failed: {len(self.config_errors)} problems in the config; "
                           f"keeping the last good config")
            self.notifier.ready(f"reload failed, running the last good config; "
                                f"{self.reconciler.summary()}")
            return False
        except NetcfgError as e:
            self.config_errors = [str(e)]
            self.log.error(f"reload failed: {e}; keeping the last good config")
            self.notifier.ready(f"reload failed, running the last good config; "
                                f"{self.reconciler.summary()}")
            return False
        gc.unfreeze()   # the old config may be garbage now
        self._loaded(compiled, self.reconciler.lower_enabled)   # as it was applied
        self.run_pass(None)
        self._freeze_heap()
        self.notifier.ready(self.reconciler.summary())
        return True

    def apply_config(self, desired: Model, source: ConfigSource, *,
                     selection: Selection | None, dry_run: bool, lower_enabled: bool,
                     on_write: Callable[..., None], confirm: float | None = None,
                     client_pid: int = 0, compiled: Any = None,
                     client_hooks: ClientHooks | None = None
                     ) -> tuple[ApplyResult, Trial | None]:
        """`netcfg apply` through the daemon. A dry run changes nothing; an
        apply that verified becomes the config the daemon enforces (and
        reloads, when it came from files). With ``confirm`` (seconds) a change
        is on trial: reverted at the deadline unless `netcfg confirm` comes.
        ``compiled``: what ``desired`` was compiled from, for its lines for
        other packages' hooks (if-*.d scripts see them as IF_*).
        ``client_hooks``: where its hook commands go (the passes' worker,
        netcfgd/hooks.py ClientHooks); the caller answers once they ended."""
        assert self.reconciler is not None and self.session is not None
        self._dhcp_may_have_changed = True
        # A client's apply hands its hooks to the passes' worker, bounded as
        # theirs are, below the unit's WatchdogSec (issue 23 H5): the loop
        # waits only for what must end before the writes (pre-up, down lines).
        settings = dataclasses.replace(self.hook_settings.with_config(compiled),
                                       timeout_s=self.reconciler.interface_hooks.timeout_s)
        if client_hooks is None:
            client_hooks = self.client_hooks()
        hooks = dataclasses.replace(settings, deferred=client_hooks)
        if dry_run:
            return apply(desired, self.session, lower_enabled=lower_enabled, dry_run=True,
                         selection=selection, hooks=hooks), None
        waiting = self.trials.current
        if waiting is not None:
            raise NetcfgError(f"an apply --confirm (pid {waiting.client_pid}) waits for "
                              f"`netcfg confirm` ({waiting.left():.0f} s left): confirm it, "
                              f"or let it revert, first")
        previous, previous_source = self.reconciler.desired, self.source
        previous_lower = self.reconciler.lower_enabled
        if confirm is not None:
            self.trials.prepare(previous, previous_source, previous_lower, client_pid)
        lowered = lower(desired, enabled=lower_enabled)   # once, for the apply and the passes
        self.session.on_batch = on_write
        try:
            with self.apply_lock():
                result = apply(desired, self.session, lowered=lowered, selection=selection,
                               hooks=hooks)
        except BaseException:
            if confirm is not None:   # apply() put the old state back itself
                self.trials.forget_left_over()
            raise
        finally:
            self.session.on_batch = None
        self.reconciler.load(desired, lower_enabled, lowered)
        self.reconciler.hook_settings = settings
        self.config_errors = []
        self.config_loaded_at = time.time()
        if source.stdin_text is None:
            self.source = source
        self.enforced_from = ("" if source.stdin_text is None
                              else f"stdin of the apply of pid {client_pid}")
        self.reconciler.map_nsids()
        if desired.volumes or desired.targets or getattr(self.reconciler.hooks, "service", None):
            # Serve (or stop) the storage it asks for now, so the apply can
            # say what was done and what was refused (storage.py), not only a log.
            self.run_pass(sorted({o.netns for o in desired.targets.values()}))
        self.notifier.status(self.reconciler.summary())
        trial = None
        if confirm is not None and result.plan.batches:
            trial = self.trials.begin(result, previous, previous_source, previous_lower,
                                      confirm, client_pid, self.trials.digest(desired))
            self.log.info(f"apply of pid {client_pid} on trial: reverted in {confirm:g} s "
                          f"unless `netcfg confirm` comes")
        elif confirm is not None:
            self.trials.forget_left_over()   # nothing changed: nothing to confirm
        return result, trial

    def client_hooks(self) -> ClientHooks:
        """Where one client's apply sends its hook commands (apply_config)."""
        assert self.reconciler is not None
        return ClientHooks(self.reconciler.interface_hooks, keepalive=self.notifier.ping)

    def confirm_trial(self) -> Trial | None:
        """`netcfg confirm`: keep the change on trial (None: none waits)."""
        if self.trials.current is None:
            return None
        trial = self.trials.end(CONFIRMED)
        self.log.info(f"apply of pid {trial.client_pid} confirmed: kept")
        return trial

    def end_trial(self, why: str) -> Trial:
        """Revert the change on trial (the deadline passed, or its client gave
        up): the state from before it is put back, and its config enforced."""
        self._dhcp_may_have_changed = True
        trial = self.trials.current
        assert trial is not None and self.reconciler is not None
        try:
            with self.apply_lock():
                revert(trial.result, why)
        except ApplyFailed as e:        # what revert() raises once it restored
            state, message = REVERTED, str(e)
        except RevertFailed as e:
            state, message = REVERT_FAILED, str(e)
        self.reconciler.load(trial.previous, trial.previous_lower)
        self.source = trial.previous_source
        self.enforced_from = ""
        self.reconciler.map_nsids()
        self.trials.end(state, message)
        (self.log.warning if state == REVERTED else self.log.error)(
            f"apply of pid {trial.client_pid}: {message}")
        self.notifier.status(self.reconciler.summary())
        return trial

    # ---------------------------------------------------------------- status

    def status_json(self) -> dict[str, Any]:
        assert self.reconciler is not None
        return {
            "daemon": {"pid": os.getpid(), "version": __version__, "ready": self.ready,
                       "started_at": self.started_at, "config": self.source.path,
                       "config_from": self.enforced_from or self.source.path,
                       "config_sha256": self.trials.digest(self.reconciler.desired),
                       "config_loaded_at": self.config_loaded_at,
                       "config_errors": self.config_errors,
                       "event_buffer_bytes": self.events.rcvbuf if self.events else None,
                       "pending": sorted(self.dirty.namespaces),
                       "trial": (self.trials.current.to_json()
                                 if self.trials.current is not None else None)},
            **self.reconciler.status_json(),
            "storage": self.reconciler.hooks.status_json(),
        }


# -------------------------------------------------------------------- command line

def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        prog="netcfgd", description="Keep the kernel's network configuration equal to the "
                                    "config (the netcfg reconciler daemon).")
    parser.add_argument("--version", action="version", version=f"netcfgd {__version__}")
    parser.add_argument("-c", "--config", default=os.environ.get("NETCFG_CONFIG", DEFAULT_CONFIG),
                        help="config directory or file (default: $NETCFG_CONFIG or /etc/netcfg)")
    parser.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        help="template variable (VALUE parsed as JSON when it can be)")
    parser.add_argument("--run-dir", default="", help="control socket directory "
                        "(default: $NETCFG_RUN_DIR or /run/netcfg)")
    parser.add_argument("--netns-dir", default=NETNS_RUN_DIR, help=argparse.SUPPRESS)
    parser.add_argument("--debounce", type=float, default=0.03, metavar="SECONDS",
                        help="quiet time after an event before a reconcile pass (default 0.03)")
    parser.add_argument("--cap", type=float, default=2.0, metavar="SECONDS",
                        help="longest a change waits when an event storm starts; doubles "
                             "while it lasts, to 8 s (default 2)")
    parser.add_argument("--resync", type=float, default=600.0, metavar="SECONDS",
                        help="full reconcile every SECONDS even without events (default 600)")
    parser.add_argument("--event-buffer", type=int, default=EVENT_RCVBUF,
                        help=argparse.SUPPRESS)
    parser.add_argument("--render-timeout", type=float, default=render_timeout_from_env(),
                        metavar="SECONDS", help="stop a template that renders for longer; keep "
                        "it under the unit's WatchdogSec (default: $NETCFG_RENDER_TIMEOUT or "
                        f"{DEFAULT_RENDER_TIMEOUT_S:g})")
    add_template_path_option(parser)
    parser.add_argument("--network-dir", default=os.environ.get("NETCFG_NETWORK_DIR") or None,
                        metavar="DIR", help="run the if-pre-up.d ... if-post-down.d scripts "
                        "of DIR as ifupdown2 does (netcfg-ifupdown's drop-in: /etc/network; "
                        "default: $NETCFG_NETWORK_DIR, else none)")
    parser.add_argument("--lower", choices=("auto", "off"),
                        default=os.environ.get("NETCFG_LOWER") or "auto",
                        help="lightweight lowering of the config (default: $NETCFG_LOWER or "
                             "auto; netcfg-ifupdown's drop-in: off, as ifup/ifreload apply "
                             "the file)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    args = parser.parse_args(argv)
    if args.lower not in ("auto", "off"):
        parser.error(f"--lower expects auto or off, got {quote(args.lower)}")
    variables: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            parser.error(f"--set expects KEY=VALUE, got {quote(item)}")
        try:
            variables[key] = json.loads(value)
        except json.JSONDecodeError:
            variables[key] = value
    options = Options(config=os.path.abspath(args.config), variables=variables,
                      run_dir=args.run_dir, netns_dir=args.netns_dir, debounce=args.debounce,
                      cap=args.cap, resync=args.resync, verbose=args.verbose,
                      event_buffer=args.event_buffer, template_path=tuple(args.template_path),
                      network_dir=args.network_dir, lower_enabled=args.lower == "auto")
    if not 0 < args.render_timeout < float("inf"):
        parser.error(f"--render-timeout expects a positive number of seconds, "
                     f"got {args.render_timeout}")
    options.render_timeout = args.render_timeout
    return options


def main(argv: Sequence[str] | None = None) -> int:
    try:
        options = parse_args(argv)
    except SystemExit as e:
        return 2 if e.code not in (0, None) else 0
    log = logs.setup(logging.DEBUG if options.verbose else logging.INFO)
    if os.geteuid() != 0:
        log.error("netcfgd manages network namespaces and devices and needs root "
                  "(CAP_NET_ADMIN and CAP_SYS_ADMIN)")
        return 2
    # `kill -USR1 PID` prints every thread's stack to stderr (the journal):
    # what a stuck daemon is doing, without stopping it.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    daemon = Daemon(options, log, Notifier())
    # The embedded iSCSI target follows the namespaces (daemon/netcfgd/storage.py).
    daemon.hooks = StorageHooks(log, lambda name: daemon.session.netns(name))
    try:
        daemon.install_signals()
        daemon.start()
        daemon.run()
    except ConfigInvalid as e:
        for diagnostic in e.diagnostics:
            log.error(diagnostic.format())
        log.error(f"the config in {options.config} is invalid and there is no earlier good "
                  f"one to run: fix it, then start netcfgd again")
        return EXIT_INVALID_CONFIG
    except NetcfgError as e:
        log.error(f"{e}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_OK
    except Exception as e:   # noqa: BLE001 - a bug: say so in the log, exit for a restart
        log.critical(f"internal error: {type(e).__name__}: {e}", exc_info=True)
        return EXIT_INTERNAL
    finally:
        daemon.close()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
