"""The `netcfg` commands that talk to the kernel: apply, down, confirm, show, query.

When netcfgd runs (its control socket answers), apply, query --check and
show go through it: the daemon is the single writer, compiles the same
config, and streams progress back (netcfg/cli/client.py); `netcfg status`
shows what it does. `apply --confirm` too: the daemon keeps the deadline and
reverts by itself, and `netcfg confirm` asks it to keep the change
(daemon/netcfgd/trial.py). Without a daemon they work alone, as follows.

They need root (the CLI says so, exit 2, before touching anything); the
ones that write take the apply lock (RUN_DIR/apply.lock, RUN_DIR from
netcfg.apply.confirm.run_dir) and hold it while an apply waits for `netcfg
confirm`, so no other apply can slip in between a change and its revert.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import Any

from netcfg.cli.common import config_source, print_json
from netcfg.compile.pipeline import STDIN, compile_config
from netcfg.model.errors import (EXIT_APPLY_FAILED_REVERTED, EXIT_INVALID_CONFIG, EXIT_OK,
                                 EXIT_REVERT_FAILED, NetcfgError, UsageError, quote)

CONFIRM_HELP = ("revert unless `netcfg confirm` comes within SECONDS (exit 3); "
                "Ctrl-C reverts too, a lost terminal does not")


def add_commands(sub: Any, config: argparse.ArgumentParser) -> None:
    p = sub.add_parser("apply", parents=[config],
                       help="make the kernel match the config (root; sandbox it for tests)")
    p.add_argument("interfaces", nargs="*", metavar="IFACE",
                   help="only these interfaces (in every namespace, or in those of --netns), "
                        "with what they are connected to: veth peer, lower device, master, "
                        "ports")
    p.add_argument("--netns", action="append", default=[], metavar="NS",
                   help="only these namespaces (repeatable); with IFACE, IFACE in them only")
    p.add_argument("--lower", choices=("auto", "off"), default="auto")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument("--json", action="store_true",
                   help="print the plan and a summary (with \"requests\") as JSON")
    p.add_argument("--confirm", type=_seconds, metavar="SECONDS", help=CONFIRM_HELP)
    p.add_argument("--json-events", action="store_true",
                   help="stdout is JSON lines: {\"event\": \"trial-begin\", ...} when the "
                        "change goes on trial (owner, pid, id, requests, seconds, deadline), "
                        "\"trial-end\" (state, why) when it ends, \"applied\" when nothing "
                        "was put on trial (docs/daemon.md)")
    p.add_argument("--strict", action="store_true",
                   help="refuse lines that do nothing on this host (another program's "
                        "settings, accepted with a warning otherwise: docs/compat.md)")
    p.add_argument("--force", action="store_true",
                   help="re-create a bridge whose change needs it although ports netcfg "
                        "does not manage (a guest's tap) are on it: they are dropped; "
                        "without it such an apply is refused and changes nothing")
    p.set_defaults(run=cmd_apply)

    p = sub.add_parser("down", parents=[config],
                       help="delete what netcfg made: its devices (by group) in namespaces, "
                            "and the namespaces the config uses")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--netns", action="append", metavar="NS",
                       help="netcfg's devices in NS, and NS itself if the config uses it "
                            "(repeatable)")
    which.add_argument("--all", action="store_true",
                       help="every namespace the config uses, and netcfg's devices in the "
                            "host's")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.add_argument("--json", action="store_true", help="print the plan and a summary as JSON")
    p.set_defaults(run=cmd_down)

    p = sub.add_parser("confirm", help="keep the changes of an `apply --confirm` that waits")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--wait", action="store_true",
                      help="do not confirm: wait for the trial to end; exit 0 confirmed, "
                           "3 reverted, 4 the revert failed")
    what.add_argument("--revert", action="store_true",
                      help="revert the waiting change now, as its deadline would")
    p.set_defaults(run=cmd_confirm)

    p = sub.add_parser("show", help="print running state in the input language")
    p.add_argument("-o", "--output", choices=("native", "json"), default="native")
    p.add_argument("--netns", action="append", metavar="NS",
                   help="only these namespaces (repeatable; default: the host's and all named)")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("status", help="what netcfgd is doing: managed namespaces, drift, "
                                      "failures, counters (exit 1 when it is not running)")
    p.add_argument("--json", action="store_true", help="print netcfgd's status as JSON")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("query", parents=[config], help="compare the config with running state")
    p.add_argument("--check", action="store_true", required=True,
                   help="print what differs; exit 1 on drift (like ifquery -c)")
    p.add_argument("--lower", choices=("auto", "off"), default="auto")
    p.set_defaults(run=cmd_query)


def _seconds(text: str) -> float:
    from netcfg.apply.confirm import MAX_CONFIRM_S

    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_CONFIRM_S:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and {MAX_CONFIRM_S}, "
                                         f"got {quote(text)}")
    return value


def _need_root() -> None:
    if os.geteuid() != 0:
        raise UsageError("this command talks to the kernel's network configuration and "
                         "needs root")


def _session():
    from netcfg.kernel.session import KernelSession

    _need_root()
    return KernelSession()


def _daemon():
    """A connection to netcfgd when it runs (root only), else None."""
    from netcfg.cli.client import connect

    _need_root()
    return connect()


def _daemon_source(args: argparse.Namespace) -> dict[str, Any]:
    """The config as the daemon must compile it: absolute paths (its working
    directory is not ours), stdin's text, the --set variables."""

    source = config_source(args)
    path = source.path if source.path == STDIN else os.path.abspath(source.path)
    return {"path": path, "variables": source.variables, "stdin_text": source.stdin_text,
            "strict": source.strict}


def ask_daemon(daemon: Any, command: str, progress: Any = None, **fields: Any) -> dict[str, Any]:
    """One request to the daemon; progress lines go to ``progress``. A config
    error is printed as the CLI prints its own (FILE:LINE: ...)."""
    from netcfg.cli.client import DaemonError, DaemonGone

    with daemon:
        stream = daemon.request(command, **fields)
        try:
            while True:
                message = next(stream)
                if progress is not None:
                    progress(message["batch"], message["batches"], message["done"],
                             message["total"])
        except StopIteration as done:
            return done.value
        except DaemonGone:
            raise
        except DaemonError as e:
            for line in e.diagnostics:
                print(line, file=sys.stderr)
            error = NetcfgError(f"{e} (netcfgd)" if not e.diagnostics else str(e))
            error.exit_code = e.exit_code
            raise error from None


def _report(args: argparse.Namespace, result: Any, verb: str, extra: str = "") -> None:

    if args.json:
        print_json({"plan": result.plan.to_json(), "summary": result.summary()})
    elif args.dry_run:
        print(result.plan.to_text(), end="")
    else:
        summary = result.summary()
        print(f"{verb}: {summary['operations']} operations in {summary['batches']} batches, "
              f"{summary['requests']} netlink requests, verified{extra}")
        for line in result.dhcp:
            print(f"{verb}: {line}")
        for line in getattr(result, "hooks", ()):
            print(f"{verb}: {line}")   # imperative lines and their output


def cmd_apply(args: argparse.Namespace) -> int:
    from netcfg.apply.execute import apply, revert
    from netcfg.plan.scope import Selection
    from netcfg.apply.confirm import InterruptGuard, shielded
    from netcfg.cli.progress import Progress

    if args.confirm is not None and args.dry_run:
        raise UsageError("--confirm and --dry-run: a dry run changes nothing to confirm")
    if args.json_events and (args.confirm is None or args.json):
        raise UsageError("--json-events goes with --confirm (and not with --json)")
    daemon = _daemon()
    if daemon is not None:
        if args.force:   # not carried by the control protocol (issue 24)
            daemon.close()
            raise UsageError("--force is not passed through netcfgd: stop it, apply --force, "
                             "and start it again")
        return _apply_through(daemon, args)
    selection = Selection(tuple(dict.fromkeys(args.interfaces)), tuple(dict.fromkeys(args.netns)))
    compiled = compile_config(config_source(args))
    confirming = args.confirm is not None
    progress = Progress()
    with _session() as session, _apply_lock(), _hangup_detaches(confirming):
        with InterruptGuard() as interrupt:
            def batch_done(*done: int) -> None:
                progress(*done)
                interrupt.check()     # Ctrl-C: apply() reverts what it wrote

            session.on_batch = batch_done
            try:
                result = apply(compiled.model, session, lower_enabled=args.lower == "auto",
                               dry_run=args.dry_run, selection=selection or None,
                               force=args.force)
            finally:
                progress.finish()
        if interrupt.signal_name is not None:   # came during the verify: undo it all
            if not result.plan.batches or result.dry_run:
                raise KeyboardInterrupt
            with shielded():
                revert(result, f"interrupted ({interrupt.signal_name})")
        if confirming and result.plan.batches:
            _await_confirmation(result, args, compiled.model)
        elif not args.dry_run:
            _cli_trial().kept()     # this config is the operator's choice now
    if args.json_events:
        if not result.plan.batches:
            _event(args, {"event": "applied", "summary": result.summary()})
        return EXIT_OK
    _report(args, result, "applied", ", confirmed" if confirming and result.plan.batches
            else "")
    return EXIT_OK


def _event(args: argparse.Namespace, event: dict[str, Any]) -> None:
    """One JSON line for `--json-events` (a node agent reads them as they come)."""
    if args.json_events:
        import json

        print(json.dumps(event), flush=True)


def _cli_trial() -> Any:
    from netcfg.apply.confirm import run_dir
    from netcfg.apply.trial_record import CliTrial

    return CliTrial(run_dir())


def _apply_through(daemon: Any, args: argparse.Namespace) -> int:
    """`netcfg apply` while netcfgd runs: the daemon applies (and from then on
    enforces) the config; its progress is shown here."""
    from netcfg.cli.client import DaemonGone
    from netcfg.apply.confirm import InterruptGuard
    from netcfg.cli.progress import Progress

    progress = Progress()
    confirming = args.confirm is not None
    # With --confirm, Ctrl-C while the daemon applies asks it to revert once
    # the change is on trial; without, the daemon finishes and keeps it anyway.
    guard = InterruptGuard() if confirming else contextlib.nullcontext()
    with _hangup_detaches(confirming):
        with guard:
            try:
                # only_selection: with IFACE or --netns, change only those, or
                # be refused (netcfgd would enforce all of this config after).
                answer = ask_daemon(daemon, "apply", progress, source=_daemon_source(args),
                                    dry_run=args.dry_run, json=args.json, lower=args.lower,
                                    interfaces=args.interfaces, netns=args.netns,
                                    confirm=args.confirm, only_selection=True)
            except DaemonGone:
                if confirming:   # the config from before is on disk: trial.py
                    raise _daemon_gone() from None
                raise
            finally:
                progress.finish()
        for warning in answer.get("warnings") or ():
            print(warning, file=sys.stderr)
        trial = answer.get("trial")
        if trial is not None:
            _event(args, {"event": "trial-begin", "owner": "netcfgd", **trial,
                          "requests": answer["summary"]["requests"]})
            interrupted = getattr(guard, "signal_name", None)
            if interrupted is not None:
                outcome = _trial_request("trial-abort", trial, number=trial["number"],
                                         why=f"interrupted ({interrupted}) while netcfgd "
                                             f"applied")
            else:
                outcome = _await_trial(trial, args.confirm)
            _event(args, {"event": "trial-end", "owner": "netcfgd", **outcome})
            _trial_outcome(outcome)
    summary = answer["summary"]
    if args.json_events:
        if trial is None:
            _event(args, {"event": "applied", "summary": summary})
        return _storage_report(answer.get("storage") or {})
    if args.json:
        print_json({"plan": answer["plan"], "summary": summary})
    elif args.dry_run:
        print(answer["plan_text"], end="")
    else:
        print(f"applied: {summary['operations']} operations in {summary['batches']} batches, "
              f"{summary['requests']} netlink requests, verified (by netcfgd)"
              + (", confirmed" if trial is not None else ""))
        # What DHCP clients and hooks did there reaches the client too (issue 23 M15).
        for line in [*summary.get("dhcp", ()), *summary.get("hooks", ())]:
            print(f"applied: {line}")
    return _storage_report(answer.get("storage") or {})


def _storage_report(storage: dict[str, Any]) -> int:
    """What netcfgd did to serve the applied volumes and targets; exit 5 when
    it could not serve some (the network is applied all the same)."""
    from netcfg.model.errors import EXIT_STORAGE_FAILED

    for change in storage.get("changes") or ():
        print(f"storage: {change}")
    for error in storage.get("errors") or ():
        print(f"netcfg: storage: {error}", file=sys.stderr)
    return EXIT_STORAGE_FAILED if storage.get("errors") else EXIT_OK


# How often a waiting `apply --confirm` asks netcfgd whether its trial ended.
TRIAL_POLL_S = 0.2


def _await_trial(trial: dict[str, Any], seconds: float | None,
                 interruptible: bool = True) -> dict[str, Any]:
    """Wait for netcfgd's ``trial`` to end (confirmed or reverted: the
    deadline is the daemon's). Ctrl-C or SIGTERM asks it to revert now
    (``interruptible``: the client that made the change; `confirm --wait`
    only stops waiting)."""
    from netcfg.apply.confirm import Interrupted, shielded, wait_signals

    if seconds is not None:
        print(f"netcfg: applied and verified; run 'netcfg confirm' within {seconds:g} s to "
              f"keep it, or netcfgd reverts it", file=sys.stderr, flush=True)
    number = trial["number"]
    signals = wait_signals() if interruptible else contextlib.nullcontext()
    try:
        with signals:
            while True:
                state = _trial_request("trial", trial, number=number)
                if state["state"] != "waiting":
                    return state
                time.sleep(min(TRIAL_POLL_S, max(state["left"], 0.01)))
    except (Interrupted, KeyboardInterrupt) as signal_name:
        if not interruptible:
            raise
        with shielded():
            return _trial_request("trial-abort", trial, number=number,
                                  why=f"interrupted ({str(signal_name) or 'SIGINT'}) while "
                                      f"waiting for confirmation")


def _trial_request(command: str, trial: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``trial`` as netcfgd answers ``command``. A daemon gone cannot say:
    what it wrote when it stopped does (trial_record.read_ended), or nothing
    does and the client says what stays in force (_daemon_gone)."""
    from netcfg.cli.client import connect

    try:
        daemon = connect()
    except (OSError, NetcfgError):
        daemon = None
    if daemon is not None:
        try:
            return ask_daemon(daemon, command, **fields)["trial"]
        except (OSError, NetcfgError):
            pass
    ended = _ended_by_a_stop(trial)
    if ended is None:
        raise _daemon_gone()
    return ended


def _ended_by_a_stop(trial: dict[str, Any]) -> dict[str, Any] | None:
    """How a netcfgd that stopped during ``trial`` ended it, if it did."""
    from netcfg.apply.confirm import run_dir
    from netcfg.apply.trial_record import read_ended

    ended = read_ended(run_dir())
    if ended is None or not trial.get("id") or ended.get("id") != trial["id"]:
        return None
    return ended


def _daemon_gone() -> NetcfgError:
    from netcfg.apply.confirm import run_dir

    error = NetcfgError(f"netcfgd went away (killed, or it crashed) while the change waited for "
                        f"confirmation: the change stays in force, unconfirmed, until netcfgd "
                        f"starts again; it reverts the change when it starts again "
                        f"({os.path.join(run_dir(), 'trial.json')})")
    error.exit_code = EXIT_REVERT_FAILED
    return error


def _trial_outcome(trial: dict[str, Any]) -> None:
    """Return when the change was confirmed; raise (exit 3 or 4) when not."""
    if trial["state"] == "confirmed":
        return
    error = NetcfgError(f"{trial['why']} (by netcfgd)")
    error.exit_code = (EXIT_APPLY_FAILED_REVERTED if trial["state"] == "reverted"
                       else EXIT_REVERT_FAILED)
    raise error


def _hangup_detaches(confirming: bool) -> contextlib.AbstractContextManager:
    from netcfg.apply.confirm import hangup_detaches

    return hangup_detaches() if confirming else contextlib.nullcontext()


def _await_confirmation(result: Any, args: argparse.Namespace, model: Any) -> None:
    """Keep ``result``'s changes if `netcfg confirm` comes in time, else revert
    (ApplyFailed, exit 3). The trial is on record (trial_record.CliTrial)
    from its begin to its outcome, for `confirm --wait` and a netcfgd that
    starts meanwhile."""
    from netcfg.apply.execute import ApplyFailed, RevertFailed, revert
    from netcfg.apply.confirm import ConfirmWaiter, Interrupted, RevertRequested, shielded
    from netcfg.apply.trial_record import (CONFIRMED, REVERT_FAILED, REVERTED,
                                           config_digest)

    seconds = args.confirm
    record = _cli_trial()
    source = config_source(args)
    try:
        with ConfirmWaiter() as waiter:
            begun = record.begin(seconds=seconds, requests=result.requests,
                                 config=source.path if source.path == STDIN
                                 else os.path.abspath(source.path),
                                 digest=config_digest(model))
            _event(args, {"event": "trial-begin", **_without_version(begun)})
            print(f"netcfg: applied and verified; run 'netcfg confirm' within {seconds:g} s "
                  f"to keep it, or it is reverted", file=sys.stderr, flush=True)
            if waiter.wait(seconds):
                _event(args, {"event": "trial-end", **_without_version(
                    record.end(CONFIRMED) or {"state": CONFIRMED})})
                return
            why = f"no confirmation within {seconds:g} s"
    except (Interrupted, KeyboardInterrupt) as signal_name:
        why = f"interrupted ({str(signal_name) or 'SIGINT'}) while waiting for confirmation"
    except RevertRequested:
        why = "reverted on request (netcfg confirm --revert)"
    with shielded():
        try:
            revert(result, why)
        except ApplyFailed as e:        # what revert() raises once it restored
            _event(args, {"event": "trial-end", **_without_version(
                record.end(REVERTED, str(e)) or {"state": REVERTED, "why": str(e)})})
            raise
        except RevertFailed as e:
            _event(args, {"event": "trial-end", **_without_version(
                record.end(REVERT_FAILED, str(e)) or {"state": REVERT_FAILED, "why": str(e)})})
            raise


def _without_version(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "version"}


def cmd_down(args: argparse.Namespace) -> int:
    from netcfg.apply.execute import down

    daemon = _daemon()
    if daemon is not None:
        daemon.close()
        raise UsageError("netcfgd is running and would put back what down removes: stop it "
                         "first (systemctl stop netcfgd)")
    compiled = compile_config(config_source(args))
    with _session() as session, _apply_lock():
        result = down(compiled.model, session, namespaces=args.netns or (),
                      everything=args.all, dry_run=args.dry_run)
    _report(args, result, "down")
    return EXIT_OK


def cmd_confirm(args: argparse.Namespace) -> int:
    """Confirm, revert (--revert) or wait for (--wait) the trial under way,
    whoever holds it: netcfgd when it has one, else an `apply --confirm`
    working alone."""
    from netcfg.apply.confirm import REVERT_REQUEST, confirm

    daemon_trial = _daemon_trial()
    if args.wait:
        return _wait_for_trial(daemon_trial)
    if daemon_trial is not None and args.revert:
        outcome = _trial_request("trial-abort", daemon_trial, number=daemon_trial["number"],
                                 why="reverted on request (netcfg confirm --revert)")
        print(f"reverted: the apply of pid {outcome['client_pid']} (netcfgd): {outcome['why']}")
        return EXIT_OK if outcome["state"] == "reverted" else EXIT_REVERT_FAILED
    if daemon_trial is not None:
        daemon = _daemon()
        trial = ask_daemon(daemon, "confirm")["trial"] if daemon is not None else None
        if trial is not None:
            print(f"confirmed: the apply of pid {trial['client_pid']} keeps its changes "
                  f"(netcfgd)")
            return EXIT_OK
    if args.revert:
        pid = confirm(request=REVERT_REQUEST)
        print(f"revert requested: the apply of pid {pid} reverts its changes now")
        return EXIT_OK
    pid = confirm()
    print(f"confirmed: the apply of pid {pid} keeps its changes")
    return EXIT_OK


def _daemon_trial() -> dict[str, Any] | None:
    """The trial netcfgd holds, when it runs and holds one."""
    daemon = _daemon()
    if daemon is None:
        return None
    return ask_daemon(daemon, "status")["status"]["daemon"].get("trial")


def _wait_for_trial(daemon_trial: dict[str, Any] | None) -> int:
    """`netcfg confirm --wait`: block until the trial under way ends; exit 0
    confirmed, 3 reverted, 4 the revert failed (or the change was left in
    force), saying why."""
    from netcfg.apply.confirm import NotWaiting

    if daemon_trial is not None:
        outcome = _await_trial(daemon_trial, None, interruptible=False)
        owner = f"the apply of pid {outcome.get('client_pid')} (netcfgd)"
    else:
        outcome = _await_cli_trial()
        if outcome is None:
            raise NotWaiting("no apply is waiting for confirmation")
        owner = f"the apply of pid {outcome.get('pid')}"
    if outcome["state"] == "confirmed":
        print(f"confirmed: {owner} kept its changes")
        return EXIT_OK
    print(f"netcfg: {outcome['state']}: {owner}: {outcome.get('why', '')}", file=sys.stderr)
    return EXIT_APPLY_FAILED_REVERTED if outcome["state"] == "reverted" else EXIT_REVERT_FAILED


def _await_cli_trial() -> dict[str, Any] | None:
    """The outcome of the `apply --confirm` working alone that waits now
    (None: none waits), read from its record as it ends."""
    record = _cli_trial()
    current = record.read()
    if current is None or current.get("state") != "waiting":
        return None
    while current is not None and current.get("state") == "waiting":
        time.sleep(TRIAL_POLL_S)
        current = record.read()
    return current or {"state": "died", "why": "its record is gone"}


def cmd_show(args: argparse.Namespace) -> int:
    from netcfg.compile.emit import emit_model
    from netcfg.compile.jsonform import model_to_json
    from netcfg.model.tags import NETNS_MARK

    daemon = _daemon()
    if daemon is not None:
        answer = ask_daemon(daemon, "show", output=args.output, netns=args.netns)
        if args.output == "json":
            print_json(answer["model"])
        else:
            print(answer["text"], end="")
        return EXIT_OK
    with _session() as session:
        names = args.netns if args.netns else ["", *sorted(session.existing_namespaces())]
        model = session.read(names)
    if args.output == "json":
        print_json(model_to_json(model))
    else:
        print(emit_model(model, running=True, netns_mark=NETNS_MARK), end="")
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from netcfg.apply.execute import apply
    from netcfg.plan.drift import explain

    daemon = _daemon()
    if daemon is not None:
        answer = ask_daemon(daemon, "query", source=_daemon_source(args), lower=args.lower)
        return _print_drift(answer["drift"], answer["differences"])
    compiled = compile_config(config_source(args))
    with _session() as session:
        result = apply(compiled.model, session, lower_enabled=args.lower == "auto",
                       dry_run=True)
    drift = result.plan.operations
    explained = sorted((explain(op, compiled.model) for op in drift),
                       key=lambda item: (item[0].file, item[0].line))
    return _print_drift([f"{loc}: drift: {message}" if loc.line else f"drift: {message}"
                         for loc, message in explained], len(drift))


def _print_drift(lines: list[str], differences: int) -> int:
    for line in lines:
        print(line)
    if differences:
        print(f"netcfg: {differences} differences between the config and the kernel",
              file=sys.stderr)
        return EXIT_INVALID_CONFIG
    print("ok: the kernel matches the config")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from netcfg.cli.client import connect, socket_path
    from netcfg.cli.client import format_status

    daemon = connect()
    if daemon is None:
        if args.json:
            print_json({"running": False})
        print(f"netcfgd is not running (no daemon answers on {socket_path()}); "
              f"netcfg commands work without it", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    status = ask_daemon(daemon, "status")["status"]
    if args.json:
        print_json({"running": True, **status})
    else:
        print(format_status(status), end="")
    return EXIT_OK


def _apply_lock() -> contextlib.AbstractContextManager:
    """Serialise applies: a second one waits and says for whom."""
    from netcfg.apply.lock import apply_lock
    from netcfg.apply.confirm import run_dir

    def waiting(holder: str) -> None:
        print(f"netcfg: waiting for another apply (pid {holder}) to finish", file=sys.stderr)

    return apply_lock(run_dir(), waiting)
