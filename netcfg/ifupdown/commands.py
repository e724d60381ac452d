"""The four commands, one function each: (parsed arguments, State) -> exit code.

What each does to the kernel is netcfg/ifupdown/actions.py's; what ifquery
prints is query.py's. Output follows ifupdown2: quiet on success (``-v``
says what was done, on stderr), errors and warnings on stderr as
`error: IFACE: ...`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from typing import Callable, Collection

from netcfg.compile.validate import IMPERATIVE_NOTE
from netcfg.ifupdown import actions, query
from netcfg.ifupdown.config import InterfacesFile, diagnostic_line, load, select
from netcfg.model.errors import Diagnostic, NetcfgError

NETWORK_DIR_ENV = "NETCFG_NETWORK_DIR"


@dataclass
class State:
    """What one run has loaded (for messages that name the interface of a line)."""

    ifile: InterfacesFile | None = None

    def load(self, path: str, interfaces_format: str = "native",
             brought_up: tuple[str, ...] = (), *, say_warnings: bool = True) -> InterfacesFile:
        """The file compiled; its warnings on stderr unless ``say_warnings``
        is False (the command says them later: say_warnings())."""
        self.ifile = load(path, interfaces_format, brought_up)
        if say_warnings:
            self.say_warnings(brought_up)
        return self.ifile

    def say_warnings(self, up: Collection[str] = ()) -> None:
        """The compile's warnings on stderr, less those that do not hold for
        this command: the note on imperative lines (ifupdown2's users write
        them to be run: no news to them), and, for ``up`` (stanzas without
        `auto` that this command brings or keeps up), the ones saying that
        without an `auto` line the interface stays down or its route is not
        installed (`netcfg apply`'s rule, not ifup's)."""
        assert self.ifile is not None
        up = set(up)
        for warning in self.ifile.compiled.warnings:
            if warning.message.startswith(IMPERATIVE_NOTE):
                continue
            name = self.ifile.stanza_of(warning.loc) if up else None
            if name in up and f"no 'auto {name}' line" in warning.message:
                continue
            print(diagnostic_line(self.ifile, warning), file=sys.stderr)


def diagnostic_text(state: State, diagnostic: Diagnostic) -> str:
    return diagnostic_line(state.ifile, diagnostic)


def network_dir() -> str:
    """Where /etc/network/if-*.d are (the hook scripts ifupdown2 runs)."""
    return os.environ.get(NETWORK_DIR_ENV) or "/etc/network"


def _need_root() -> None:
    if os.geteuid() != 0:
        raise NetcfgError("must be root to run this command")


def _unknown(ifile: InterfacesFile, names: list[str]) -> None:
    known = set(ifile.names())
    missing = [n for n in names if n not in known]
    if missing:
        raise NetcfgError(f"cannot find interfaces: {' '.join(missing)} (no iface stanza "
                          f"declares them)")


def _picked(args: argparse.Namespace, ifile: InterfacesFile) -> list[str]:
    names = select(ifile, everything=args.all, names=args.iflist, classes=args.classes,
                   excludes=args.excludes)
    if args.iflist and not args.classes:
        _unknown(ifile, names)
    return names


def _daemon():
    from netcfg.cli.client import connect

    return connect()


def _present(args: argparse.Namespace, ifile: InterfacesFile, model,
             names: list[str] | None):
    """``model`` less the physical ports this host lacks (actions.without_absent_ports),
    each said (not those -X leaves alone): (model, names, how many are
    errors, whether any was left out)."""
    whole = model
    model, absent = actions.without_absent_ports(model, ifile.hotplug_only())
    excluded = set(actions.excluded_declared(whole, args.excludes)) - \
        set(actions.excluded_but_needed(whole, names, args.excludes))
    reach = actions.reach(whole, names) if names is not None else None
    # Only what the named interfaces reach is said, and not what -X leaves alone.
    absent = actions.Absent(*([o for o in group if (reach is None or o.key in reach)
                               and o.name not in excluded]
                              for group in (absent.hotplug, absent.ports, absent.missing)))
    for obj in absent.hotplug:
        actions.say(args, f"info: {obj.name}: allow-hotplug and no such device: skipped "
                          f"(ifup@{obj.name}.service brings it up when it appears)")
    for obj in absent.ports:
        print(f"warning: {obj.name}: {obj.loc}: no such device: left out of what names it",
              file=sys.stderr)
    for obj in absent.missing:
        print(f"error: {obj.name}: {obj.loc}: no such device: left out with what sits on it; "
              f"the rest is applied", file=sys.stderr)
    left = {o.name for o in (*absent.hotplug, *absent.ports, *absent.missing)}
    if names is not None:
        names = [n for n in names if n not in left] or None
    return model, names, len(absent.missing), model is not whole


def _change(args: argparse.Namespace, ifile: InterfacesFile, model, names: list[str] | None,
            *, model_is_file: bool = True) -> int:
    """Apply ``model`` (``names`` only, when given), through netcfgd when it
    runs; exit 1 when a port the file declares is not there (the rest applied)."""
    from netcfg.apply.confirm import run_dir

    wanted = names
    model, names, errors, reduced = _present(args, ifile, model, names)
    if wanted and not names:
        return 1 if errors else 0          # all of them absent: nothing to do
    if args.command != "ifdown":
        _say_needed(actions.excluded_but_needed(model, names, args.excludes),
                    "configured with it")
    model_is_file = model_is_file and not reduced
    code = _apply(args, ifile, model, names, model_is_file=model_is_file, run_dir=run_dir())
    return code or (1 if errors else 0)


def _say_needed(needed: dict[str, list[str]], done: str) -> None:
    for name, users in needed.items():
        by = f" by {', '.join(users)}" if users else ""
        print(f"warning: {name}: excluded (-X) but needed{by}, which is not excluded: "
              f"{done}, as ifupdown2 does", file=sys.stderr)


def _hook_settings(args: argparse.Namespace, ifile: InterfacesFile):
    """ifupdown2's hooks: the stanzas' lines, and /etc/network/if-*.d scripts
    unless --no-scripts; the record of what was brought up is netcfg's (the
    one `netcfg apply` and netcfgd keep)."""
    from netcfg.apply.hooks import HookSettings

    scripts = None if getattr(args, "no_scripts", False) else network_dir()
    settings = HookSettings(scripts_dir=scripts, verbosity=1 if args.verbose else 0)
    return settings.with_config(ifile.compiled)


def _say_plan(args: argparse.Namespace, notes, dhcp=(), hooks=()) -> None:
    """The plan's warnings (a bridge kept for a guest's port, ...) on stderr,
    as ifupdown2 logs them: Proxmox's task log keeps `warning: IFACE:` lines."""
    for note in notes:
        if note.startswith(("warning:", "error:")):
            print(note, file=sys.stderr)
        else:
            actions.say(args, f"info: {note}")
    for line in [*dhcp, *hooks]:
        actions.say(args, f"info: {line}")


def _apply(args: argparse.Namespace, ifile: InterfacesFile, model, names: list[str] | None,
           *, model_is_file: bool, run_dir: str) -> int:
    dry_run = bool(getattr(args, "no_act", False))
    daemon = _daemon()
    if daemon is not None and args.excludes:
        _refuse_excluded_with_daemon(args, model, names)
    if daemon is not None:
        if model_is_file:
            answer = actions.apply_through_daemon(daemon, args.interfaces, names,
                                                  dry_run=dry_run)
        else:
            answer = actions.apply_model_through_daemon(daemon, model, names, dry_run=dry_run)
        if dry_run:
            print(answer["plan_text"], end="")
            return 0
        summary = answer["summary"]
        _say_plan(args, (answer.get("plan") or {}).get("notes") or (),
                  summary.get("dhcp") or (), summary.get("hooks") or ())
        actions.say(args, f"info: netcfgd applied {summary['operations']} operations in "
                          f"{summary['batches']} batches")
        return 0
    result = actions.apply_here(model, names, dry_run=dry_run, run_dir=run_dir,
                                hooks=_hook_settings(args, ifile), excluded=args.excludes)
    if dry_run:
        print(result.plan.to_text(), end="")
        return 0
    summary = result.summary()
    _say_plan(args, result.plan.notes, result.dhcp, result.hooks)
    actions.say(args, f"info: applied {summary['operations']} operations in "
                      f"{summary['batches']} batches, {summary['requests']} netlink requests, "
                      f"verified")
    return 0


def _refuse_excluded_with_daemon(args: argparse.Namespace, model,
                                 names: list[str] | None) -> None:
    """netcfgd applies and then enforces the whole file (model) it is sent:
    it cannot leave an interface `-X` excludes alone. When its apply would
    change one (the dry run says what), the command is refused, nothing
    changed, rather than the exclusion ignored; when it would not (`ifdown
    -a -X '^lo$'` at `systemctl stop networking`: lo as the file has it),
    the change goes through the daemon."""
    changes = actions.excluded_changes(model, names, args.excludes)
    if changes:
        done = "; ".join(line for _, line in changes[:5]) + ("; ..." if len(changes) > 5 else "")
        raise NetcfgError(
            f"{changes[0][0]}: -X {' -X '.join(getattr(args, 'patterns', args.excludes))}: "
            f"netcfgd runs and applies the "
            f"whole file, so it cannot leave what -X matches alone; it would do: {done}. "
            f"Nothing was changed: take the stanza out of the file, or stop netcfgd "
            f"(systemctl disable --now netcfgd) for ifupdown2's behaviour")


def _not_excluded(args: argparse.Namespace, names: list[str]) -> list[str]:
    return [n for n in names if not any(re.search(p, n) for p in args.excludes)]


def cmd_ifup(args: argparse.Namespace, state: State) -> int:
    ifile = state.load(args.interfaces, args.interfaces_format, tuple(args.iflist))
    if args.syntax_check:
        return 0
    if args.print_dependency:
        return _print_dependency(args, ifile)
    _need_root()
    names = _picked(args, ifile)
    if not names and not args.all:
        actions.say(args, "info: no interface to bring up")
        return 0
    if args.all:
        # ifupdown2's `ifup -a` configures the auto stanzas only: one without
        # `auto` (nor allow-hotplug) keeps whatever state it has, and `ifup
        # NAME` brings it up. netcfg's compile marks both kinds of line auto.
        # What -X matches is left as it is (Selection.excluded), unless what
        # is brought up needs it.
        up = [o.name for o in ifile.model.interfaces.values() if o.auto and not o.implicit]
        alone = actions.left_alone(ifile.model, up)
        if alone and _not_excluded(args, up):
            actions.say(args, f"info: no auto line: left alone: {', '.join(alone)}")
            return _change(args, ifile, ifile.model,
                           list(dict.fromkeys(_not_excluded(args, up))))
        if alone or (up and not _not_excluded(args, up)):
            actions.say(args, "info: no interface to bring up")
            return 0
        return _change(args, ifile, ifile.model, None)
    model = actions.brought_up(ifile.model, names)
    return _change(args, ifile, model, names, model_is_file=model is ifile.model)


def cmd_ifdown(args: argparse.Namespace, state: State) -> int:
    ifile = state.load(args.interfaces, args.interfaces_format)
    if args.print_dependency:
        return _print_dependency(args, ifile)
    _need_root()
    names = _picked(args, ifile) if not args.all else \
        select(ifile, everything=False, names=ifile.names(), classes=(), excludes=args.excludes)
    if not names:
        return 0
    if args.excludes:
        # As ifupdown2 takes down an excluded interface that one it takes
        # down depends on (a port of its bridge, its VLAN's lower device):
        # with it; the rest that -X matches is left alone, by name (what
        # ifdown reaches is what the file declares).
        needed = actions.excluded_but_needed(ifile.model, names, args.excludes)
        _say_needed(needed, "taken down with it")
        alone = [n for n in actions.excluded_declared(ifile.model, args.excludes)
                 if n not in needed]
        names = [*names, *needed]
        args.patterns, args.excludes = args.excludes, [f"^{re.escape(n)}$" for n in alone]
    model = actions.downed(ifile.model, names)
    return _change(args, ifile, model, names, model_is_file=False)


def cmd_ifreload(args: argparse.Namespace, state: State) -> int:
    ifile = state.load(args.interfaces, args.interfaces_format, say_warnings=False)
    # A stanza without `auto` that is up now (`ifup NAME` brought it up) is
    # reloaded as up, as ifupdown2's reload leaves it up: the rest of the
    # file as before (one that is down stays down).
    model, kept = ifile.model, []
    if not args.syntax_check and os.geteuid() == 0:
        model, kept = actions.kept_up(ifile.model)
    state.say_warnings(kept)
    if args.syntax_check:
        return 0
    _need_root()
    kept = _not_excluded(args, kept)
    if kept:
        actions.say(args, f"info: no auto line, up now: kept up: {', '.join(kept)}")
    if args.all:
        return _change(args, ifile, model, None, model_is_file=model is ifile.model)
    if args.currently_up:
        names = _not_excluded(args, [n for n in ifile.names() if _is_up(n)])
    else:
        # As `ifup --allow=CLASS`: the class's interfaces brought up, auto or not.
        names = select(ifile, everything=False, names=(), classes=args.classes,
                       excludes=args.excludes)
        model = actions.brought_up(model, names)
    if not names:
        return 0
    return _change(args, ifile, model, names, model_is_file=model is ifile.model)


def _is_up(name: str) -> bool:
    """Whether the host's device ``name`` is administratively up (IFF_UP)."""
    try:
        with open(f"/sys/class/net/{name}/flags", encoding="ascii") as f:
            return bool(int(f.read().strip(), 16) & 0x1)
    except (OSError, ValueError):
        return False


def cmd_ifquery(args: argparse.Namespace, state: State) -> int:
    if args.syntax_help:
        from netcfg.cli.syntax_help import describe_all

        print(describe_all())
        return 0
    if args.running and args.iflist and not args.all:
        _need_root()
        print(actions.running(args.iflist), end="")
        return 0
    ifile = state.load(args.interfaces, args.interfaces_format)
    if args.print_dependency:
        return _print_dependency(args, ifile)
    names = _picked(args, ifile)
    if args.list:
        for name in names:
            print(name)
        return 0
    if args.running:
        _need_root()
        print(actions.running(names), end="")
        return 0
    verdicts = None
    drift: list[str] = []
    if args.check:
        _need_root()
        verdicts, drift = actions.verdicts(ifile, names, args.excludes)
    if args.format == "json":
        print(query.as_json(ifile, names, verdicts))
    else:
        print(query.as_native(ifile, names, verdicts), end="")
    if args.check and drift:
        if args.verbose or args.debug:
            for line in drift:
                print(f"info: {line}", file=sys.stderr)
        # As ifupdown2: the code is the printed verdicts' (drift on an
        # interface not shown, a port that is not auto, is in the lines above).
        assert verdicts is not None
        return 1 if any(name in verdicts.interfaces for name in names) else 0
    return 0


def _print_dependency(args: argparse.Namespace, ifile: InterfacesFile) -> int:
    """`-p list|dot`: the order netcfg would bring the interfaces up in (the plan's)."""
    from netcfg.model.model import Model
    from netcfg.plan import make_plan

    plan = make_plan(ifile.model, Model(), lower_enabled=actions.LOWER)
    if args.print_dependency == "dot":
        print(plan.to_dot())
        return 0
    declared = set(ifile.names())
    for name in dict.fromkeys(op.name for op in plan.operations if op.name in declared):
        print(name)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, State], int]] = {
    "ifup": cmd_ifup, "ifdown": cmd_ifdown, "ifreload": cmd_ifreload, "ifquery": cmd_ifquery,
}
