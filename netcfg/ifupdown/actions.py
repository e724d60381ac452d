"""What ifup, ifdown, ifreload and `ifquery -c`/`-r` do to (or read from) the
kernel: netcfg's apply, narrowed as ifupdown2 narrows, and its drift.

- `ifup -a`, `ifreload -a`: the whole file applied. netcfg diffs against the
  kernel, so a reload touches only what the edit changed and removes what the
  file dropped (what netcfg made); devices nobody declared (guests' taps and
  veths) are never touched.
- `ifup IFACE`: IFACE and what it needs (its ports, lower devices, master).
- `ifdown IFACE`: the file as if IFACE were taken down: a device netcfg
  creates (bridge, bond, VLAN, ...) is deleted with the devices that sit on it;
  a physical port or `lo` stays, down, without the addresses and routes the
  file gives it.
- `ifquery -c`: the dry run's repairing operations as verdicts.

With netcfgd running, the changes go through it (it is the single writer, and
then enforces the file); without, they are applied here under netcfg's apply
lock, which ifupdown2's commands do not wait for (exit 89).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from netcfg.ifupdown.config import InterfacesFile
from netcfg.ifupdown.query import Verdicts
from netcfg.model.model import ConfigObject, Model
from netcfg.plan.scope import PURGED_ATTRIBUTES, Selection, creatable, references

Key = tuple[str, str]


def keys_named(model: Model, names: list[str]) -> set[Key]:
    wanted = set(names)
    return {k for k in model.interfaces if k[1] in wanted}


def downed(model: Model, names: list[str]) -> Model:
    """``model`` with ``names`` taken down as ifdown takes them (module doc)."""
    removed = {k for k in keys_named(model, names) if creatable(model.interfaces[k].kind)}
    changed = True
    while changed:   # what sits on a removed device goes with it (the kernel does that)
        changed = False
        for key, obj in model.interfaces.items():
            if key not in removed and any(r in removed for r in references(obj, ("lower", "peer"))):
                removed.add(key)
                changed = True
    interfaces: dict[Key, ConfigObject] = {}
    stopped = keys_named(model, names) - removed
    for key, obj in model.interfaces.items():
        if key in removed:
            continue
        if key in stopped:
            attrs = {a: v for a, v in obj.attrs.items() if a not in PURGED_ATTRIBUTES
                     and a != "gateway"}
            obj = dataclasses.replace(obj, attrs=attrs, auto=False)
        elif obj.attrs.get("vrf") and (key[0], obj.attrs["vrf"]) in removed:
            obj = dataclasses.replace(obj, attrs={a: v for a, v in obj.attrs.items()
                                                  if a != "vrf"})
        interfaces[key] = obj
    masters = {k: m for k, m in model.masters.items() if k in interfaces and m in interfaces}
    return dataclasses.replace(model, interfaces=interfaces, masters=masters)


def selection_of(names: list[str] | None) -> Selection | None:
    return Selection(tuple(names)) if names else None


def apply_here(model: Model, names: list[str] | None, *, dry_run: bool,
               run_dir: str) -> Any:
    """Apply ``model`` (only ``names`` and what they need, when given) under the
    apply lock, without waiting for it; revert on failure (apply() does)."""
    from netcfg.apply.execute import apply
    from netcfg.apply.lock import apply_lock
    from netcfg.kernel.session import KernelSession

    with KernelSession() as session, apply_lock(run_dir, wait=False):
        return apply(model, session, dry_run=dry_run, selection=selection_of(names))


def apply_through_daemon(daemon: Any, path: str, names: list[str] | None, *,
                         dry_run: bool) -> dict[str, Any]:
    """The same through netcfgd, which from then on enforces ``path``."""
    import os

    from netcfg.cli.kernel_commands import ask_daemon

    source = {"path": os.path.abspath(path), "variables": {}, "stdin_text": None}
    return ask_daemon(daemon, "apply", None, source=source, dry_run=dry_run, json=False,
                      lower="auto", interfaces=names or [], netns=[], confirm=None)


def apply_model_through_daemon(daemon: Any, model: Model, names: list[str] | None, *,
                               dry_run: bool) -> dict[str, Any]:
    """``model`` (the file with interfaces taken down) through netcfgd, in its
    JSON form: netcfgd enforces it, so what ifdown took down stays down, until
    an ifup or ifreload sends the file again."""
    import json

    from netcfg.cli.kernel_commands import ask_daemon
    from netcfg.compile.jsonform import model_to_json

    source = {"path": "-", "variables": {}, "stdin_text": json.dumps(model_to_json(model))}
    return ask_daemon(daemon, "apply", None, source=source, dry_run=dry_run, json=False,
                      lower="auto", interfaces=names or [], netns=[], confirm=None)


def verdicts(ifile: InterfacesFile, names: list[str]) -> tuple[Verdicts, list[str]]:
    """What differs between the file (``names`` and what they need) and the
    kernel, as verdicts per interface and line, and `netcfg query --check`'s
    lines for the same drift (for the stderr of `ifquery -c`)."""
    from netcfg.apply.execute import apply
    from netcfg.kernel.session import KernelSession
    from netcfg.plan.drift import explain

    model = ifile.model
    with KernelSession() as session:
        result = apply(model, session, dry_run=True, selection=selection_of(names))
    out = Verdicts()
    lines = []
    shown = set(names)
    for op in result.plan.operations:
        loc, message = explain(op, model)
        lines.append(f"{loc}: drift: {message}" if loc.line else f"drift: {message}")
        name = op.name if op.name in shown else ifile.stanza_of(loc)
        if name is not None:
            out.fail(name, loc, message)
    return out, lines


def running(names: list[str]) -> str:
    """`ifquery -r`: the named interfaces as the kernel has them, in netcfg's
    stanza form (what `netcfg show` prints)."""
    from netcfg.compile.emit import emit_interface, without_kernel_defaults
    from netcfg.kernel.session import KernelSession

    with KernelSession() as session:
        model = session.read(["", *sorted(session.existing_namespaces())])
    wanted = set(names)
    objs = [o for o in model.interfaces.values() if not wanted or o.name in wanted]
    return "\n".join(emit_interface(without_kernel_defaults(o)) for o in objs)


def say(args: argparse.Namespace, text: str) -> None:
    if args.verbose or args.debug:
        print(text, file=sys.stderr)
