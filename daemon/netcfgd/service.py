"""What netcfgd answers on its control socket: status, apply, query, show,
reload, and for `apply --confirm` (trial.py) confirm, trial, trial-abort.
Each handler gets the request and the connection, and the daemon (the
single writer) it speaks for."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from netcfg.apply.confirm import MAX_CONFIRM_S
from netcfg.apply.execute import apply
from netcfg.compile.emit import emit_model
from netcfg.compile.jsonform import model_to_json
from netcfg.compile.pipeline import ConfigSource, compile_config
from netcfg.model.errors import (EXIT_INVALID_CONFIG, EXIT_USAGE, ConfigInvalid, NetcfgError,
                                 UsageError, quote)
from netcfg.model.model import ROOT_NETNS
from netcfg.model.tags import NETNS_MARK
from netcfg.plan.drift import explain
from netcfg.plan.scope import Selection

from netcfgd.control import ControlConnection

if TYPE_CHECKING:
    from netcfgd.main import Daemon


def source_from_request(daemon: "Daemon", request: dict[str, Any]) -> ConfigSource:
    """The client's config (its field types were checked by control.parse_request),
    rendered under the daemon's own time limit (the loop is the daemon's) and with its
    template path (the templates are the daemon's host's)."""
    raw = request.get("source") or {}
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        raise NetcfgError('the request has no "source" with a "path"')
    variables = raw.get("variables") or {}
    if not isinstance(variables, dict):
        raise NetcfgError('"source.variables" must be an object')
    stdin_text = raw.get("stdin_text")
    return ConfigSource(path=raw["path"], variables=dict(variables),
                        stdin_text=stdin_text if isinstance(stdin_text, str) else None,
                        render_timeout=daemon.options.render_timeout,
                        template_path=daemon.options.template_path,
                        strict=raw.get("strict") is True)


def diagnostics(error: ConfigInvalid) -> list[str]:
    return [d.format() for d in error.diagnostics]


def handle(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    command = request["command"]
    handler = HANDLERS.get(command)
    if handler is None:
        conn.error(f"unknown command {quote(command)} "
                   f"(netcfgd knows {', '.join(sorted(HANDLERS))})")
        return
    try:
        handler(daemon, conn, request)
    except ConfigInvalid as e:
        errors = sum(1 for d in e.diagnostics if d.severity == "error")
        conn.error(f"{errors} error{'s' if errors != 1 else ''}; nothing was changed",
                   EXIT_INVALID_CONFIG, diagnostics(e))
    except NetcfgError as e:
        conn.error(str(e), e.exit_code)


def status(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    conn.result(status=daemon.status_json())


def reload(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    ok = daemon.reload()
    if not ok:
        conn.error("the config is invalid; netcfgd keeps running the last good one",
                   EXIT_INVALID_CONFIG, daemon.config_errors)
        return
    conn.result(status=daemon.status_json())


def apply_request(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    """`netcfg apply` through the daemon: compile the client's config here,
    apply it (progress streams back), and keep it as the config to enforce."""
    source = source_from_request(daemon, request)
    compiled = compile_config(source)
    dry_run = bool(request.get("dry_run"))
    confirm = request.get("confirm")
    if confirm is not None and (isinstance(confirm, bool) or not isinstance(confirm, (int, float))
                                or not 0 < confirm <= MAX_CONFIRM_S):
        raise NetcfgError(f'"confirm" must be a number of seconds, 0 < S <= {MAX_CONFIRM_S}')
    lower_enabled = request.get("lower", "auto") == "auto"
    interfaces = tuple(dict.fromkeys(request.get("interfaces") or ()))
    namespaces = tuple(dict.fromkeys(request.get("netns") or ()))
    selection = Selection(interfaces, namespaces) if interfaces or namespaces else None
    if selection is not None and not dry_run and request.get("only_selection") is True:
        _refuse_selection_of_another_config(daemon, source, compiled.model)
    started = time.monotonic()

    def progress(batch: int, batches: int, done: int, total: int) -> None:
        daemon.notifier.ping()
        conn.progress(batch=batch, batches=batches, done=done, total=total,
                      seconds=round(time.monotonic() - started, 3))

    client = daemon.client_hooks()
    result, trial = daemon.apply_config(compiled.model, source, selection=selection,
                                        dry_run=dry_run, lower_enabled=lower_enabled,
                                        on_write=progress, confirm=confirm,
                                        client_pid=conn.pid or 0, compiled=compiled,
                                        client_hooks=client)
    client.trial = trial

    def answer(stopping: bool = False) -> None:
        summary = result.summary()
        summary["hooks"] = [*summary.get("hooks", ()), *client.lines]
        if stopping and not client.done:
            summary["hooks"].append(f"netcfgd stopped before {client.outstanding} hook "
                                    f"commands ended: they were killed or not run")
        if trial is not None and daemon.trials.current is trial:
            # Its time counts from this answer, as when the hooks ran before it.
            trial.deadline = time.monotonic() + trial.seconds
        conn.result(summary=summary, plan=result.plan.to_json() if request.get("json")
                    else None, plan_text=result.plan.to_text() if dry_run else None,
                    warnings=[w.format() for w in compiled.warnings],
                    trial=trial.to_json() if trial is not None else None,
                    storage=None if dry_run else _storage_outcome(daemon))

    if client.done:
        answer()
    else:
        # Its up, post-up and post-down lines run in the worker: the loop goes
        # on (status, repairs, WATCHDOG=1), and the answer waits for them (M15).
        daemon.answer_later(conn, client, answer)


def _refuse_selection_of_another_config(daemon: "Daemon", source: ConfigSource,
                                        model: Any) -> None:
    """`netcfg apply -c NEW IFACE` asks for IFACE only; but once applied, the
    daemon enforces the config it was sent, whole (M5: all of NEW within
    milliseconds). So a selection is served only of the config the daemon
    enforces already, where the rest is in force anyway; of another one it is
    refused before anything is written. (The ifupdown commands do not send
    ``only_selection``: for them the file is the config, as ifreload's.)"""
    assert daemon.reconciler is not None
    enforced = daemon.trials.digest(daemon.reconciler.desired)
    if daemon.trials.digest(model) == enforced:
        return
    current = daemon.enforced_from or daemon.source.path
    raise UsageError(
        f"netcfgd enforces one config, whole ({current}, sha256 {enforced[:12]}); "
        f"{source.path} differs from it, and an apply of part of it would have netcfgd "
        f"enforce all of it right after: nothing was changed. Apply {source.path} whole "
        f"(without IFACE or --netns), or put the change into {current} and apply that "
        f"(IFACE and --netns are fine then), or stop netcfgd (systemctl stop netcfgd) to "
        f"apply part of another config")


def _storage_outcome(daemon: "Daemon") -> dict[str, Any]:
    """What serving the applied volumes and targets did (daemon/netcfgd/storage.py)."""
    hooks = daemon.reconciler.hooks if daemon.reconciler is not None else None
    return {"changes": list(getattr(hooks, "changes", ())),
            "errors": list(getattr(hooks, "errors", ()))}


def confirm(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    """`netcfg confirm`: keep the change on trial."""
    trial = daemon.confirm_trial()
    conn.result(trial=trial.to_json() if trial is not None else None)


def trial_state(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    """Where trial NUMBER stands: waiting (seconds left), confirmed, reverted."""
    trial = daemon.trials.find(_number(request))
    if trial is None:
        conn.error(f"netcfgd knows no trial {quote(request.get('number'))} (a restart forgets "
                   f"them; it reverted any that was waiting)", EXIT_USAGE)
        return
    conn.result(trial=trial.to_json())


def trial_abort(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    """The waiting client gave up (Ctrl-C, SIGTERM): revert now."""
    number = _number(request)
    current = daemon.trials.current
    if current is not None and current.number == number:
        daemon.end_trial(str(request.get("why") or "interrupted while waiting for "
                                                   "confirmation"))
    trial_state(daemon, conn, request)


def _number(request: dict[str, Any]) -> int:
    number = request.get("number")
    if isinstance(number, bool) or not isinstance(number, int):
        raise NetcfgError('the request needs the trial\'s "number"')
    return number


def query(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    """`netcfg query --check` through the daemon: a dry run of the client's config."""
    compiled = compile_config(source_from_request(daemon, request))
    result = apply(compiled.model, daemon.session, dry_run=True,
                   lower_enabled=request.get("lower", "auto") == "auto")
    lines = []
    for loc, message in sorted((explain(op, compiled.model) for op in result.plan.operations),
                               key=lambda item: (item[0].file, item[0].line)):
        lines.append(f"{loc}: drift: {message}" if loc.line else f"drift: {message}")
    conn.result(drift=lines, differences=len(result.plan.operations))


def show(daemon: "Daemon", conn: ControlConnection, request: dict[str, Any]) -> None:
    session = daemon.session
    names = request.get("netns") or [ROOT_NETNS, *sorted(session.existing_namespaces())]
    model = session.read(names)
    if request.get("output") == "json":
        conn.result(model=model_to_json(model))
    else:
        conn.result(text=emit_model(model, running=True, netns_mark=NETNS_MARK))


HANDLERS = {"status": status, "reload": reload, "apply": apply_request, "query": query,
            "show": show, "confirm": confirm, "trial": trial_state, "trial-abort": trial_abort}
