"""The `netcfg` commands that talk to the kernel: apply, down, confirm, show, query.

They need root (the CLI says so, exit 2, before touching anything); the
ones that write take the apply lock (RUN_DIR/apply.lock, RUN_DIR from
netcfg.confirm.run_dir) and hold it while an apply waits for `netcfg
confirm`, so no other apply can slip in between a change and its revert.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Iterator

from netcfg.errors import EXIT_INVALID_CONFIG, EXIT_OK, UsageError

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
    p.set_defaults(run=cmd_confirm)

    p = sub.add_parser("show", help="print running state in the input language")
    p.add_argument("-o", "--output", choices=("native", "json"), default="native")
    p.add_argument("--netns", action="append", metavar="NS",
                   help="only these namespaces (repeatable; default: the host's and all named)")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("query", parents=[config], help="compare the config with running state")
    p.add_argument("--check", action="store_true", required=True,
                   help="print what differs; exit 1 on drift (like ifquery -c)")
    p.add_argument("--lower", choices=("auto", "off"), default="auto")
    p.set_defaults(run=cmd_query)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"expected seconds between 0 and 86400, got {text!r}")
    return value


def _session():
    from netcfg.kernel.session import KernelSession

    if os.geteuid() != 0:
        raise UsageError("this command talks to the kernel's network configuration and "
                         "needs root")
    return KernelSession()


def _report(args: argparse.Namespace, result: Any, verb: str, extra: str = "") -> None:
    from netcfg.cli import print_json

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


def cmd_apply(args: argparse.Namespace) -> int:
    from netcfg.apply import Selection, apply
    from netcfg.cli import config_source
    from netcfg.progress import Progress
    from netcfg.compile import compile_config

    if args.confirm is not None and args.dry_run:
        raise UsageError("--confirm and --dry-run: a dry run changes nothing to confirm")
    selection = Selection(tuple(dict.fromkeys(args.interfaces)), tuple(dict.fromkeys(args.netns)))
    compiled = compile_config(config_source(args))
    confirming = args.confirm is not None
    progress = Progress()
    with _session() as session, _apply_lock(), _hangup_detaches(confirming):
        session.on_batch = progress
        try:
            result = apply(compiled.model, session, lower_enabled=args.lower == "auto",
                           dry_run=args.dry_run, selection=selection or None)
        finally:
            progress.finish()
        if confirming and result.plan.batches:
            _await_confirmation(result, args.confirm)
    _report(args, result, "applied", ", confirmed" if confirming and result.plan.batches
            else "")
    return EXIT_OK


def _hangup_detaches(confirming: bool) -> contextlib.AbstractContextManager:
    from netcfg.confirm import hangup_detaches

    return hangup_detaches() if confirming else contextlib.nullcontext()


def _await_confirmation(result: Any, seconds: float) -> None:
    """Keep ``result``'s changes if `netcfg confirm` comes in time, else revert
    (ApplyFailed, exit 3)."""
    from netcfg.apply import revert
    from netcfg.confirm import ConfirmWaiter, Interrupted, shielded

    try:
        with ConfirmWaiter() as waiter:
            print(f"netcfg: applied and verified; run 'netcfg confirm' within {seconds:g} s "
                  f"to keep it, or it is reverted", file=sys.stderr, flush=True)
            if waiter.wait(seconds):
                return
            why = f"no confirmation within {seconds:g} s"
    except (Interrupted, KeyboardInterrupt) as signal_name:
        why = f"interrupted ({signal_name or 'SIGINT'}) while waiting for confirmation"
    with shielded():
        revert(result, why)


def cmd_down(args: argparse.Namespace) -> int:
    from netcfg.apply import down
    from netcfg.cli import config_source
    from netcfg.compile import compile_config

    compiled = compile_config(config_source(args))
    with _session() as session, _apply_lock():
        result = down(compiled.model, session, namespaces=args.netns or (),
                      everything=args.all, dry_run=args.dry_run)
    _report(args, result, "down")
    return EXIT_OK


def cmd_confirm(args: argparse.Namespace) -> int:
    from netcfg.confirm import confirm

    pid = confirm()
    print(f"confirmed: the apply of pid {pid} keeps its changes")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from netcfg.cli import print_json
    from netcfg.compile.emit import emit_model
    from netcfg.compile.jsonform import model_to_json

    with _session() as session:
        names = args.netns if args.netns else ["", *sorted(session.existing_namespaces())]
        model = session.read(names)
    if args.output == "json":
        print_json(model_to_json(model))
    else:
        print(emit_model(model), end="")
    return EXIT_OK


def cmd_query(args: argparse.Namespace) -> int:
    from netcfg.apply import apply
    from netcfg.drift import explain
    from netcfg.cli import config_source
    from netcfg.compile import compile_config

    compiled = compile_config(config_source(args))
    with _session() as session:
        result = apply(compiled.model, session, lower_enabled=args.lower == "auto",
                       dry_run=True)
    drift = result.plan.operations
    explained = sorted((explain(op, compiled.model) for op in drift),
                       key=lambda item: (item[0].file, item[0].line))
    for loc, message in explained:
        print(f"{loc}: drift: {message}" if loc.line else f"drift: {message}")
    if drift:
        print(f"netcfg: {len(drift)} differences between the config and the kernel",
              file=sys.stderr)
        return EXIT_INVALID_CONFIG
    print("ok: the kernel matches the config")
    return EXIT_OK


@contextlib.contextmanager
def _apply_lock() -> Iterator[None]:
    """Serialise applies: a second one waits and says for whom."""
    import fcntl

    from netcfg.confirm import run_dir

    directory = run_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(directory, "apply.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            print(f"netcfg: waiting for another apply (pid {holder}) to finish",
                  file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
