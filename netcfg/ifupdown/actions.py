"""What ifup, ifdown, ifreload and `ifquery -c`/`-r` do to (or read from) the
kernel: netcfg's apply, narrowed as ifupdown2 narrows, and its drift.

- `ifup -a`, `ifreload -a`: the whole file applied. netcfg diffs against the
  kernel, so a reload touches only what the edit changed and removes what the
  file dropped (what netcfg made); devices nobody declared (guests' taps and
  veths) are never touched. A stanza without `auto` whose device is up now
  (`ifup NAME` brought it up) is reloaded as up, as ifupdown2's reload
  leaves it (kept_up).
- `ifup IFACE`: IFACE and what it needs (its ports, lower devices, master, what
  ifupdown-ng's `requires` names), brought up first.
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
import os
import sys
from typing import Any, Sequence

from netcfg.ifupdown.config import InterfacesFile
from netcfg.ifupdown.query import Verdicts
from netcfg.model.model import ConfigObject, Model
from netcfg.plan.scope import (NEEDS, PURGED_ATTRIBUTES, Selection, connected, creatable,
                               needed_excluded, references)

Key = tuple[str, str]
# No lightweight lowering: ifupdown2 makes the devices the file names, and
# Proxmox plugs guests into its bridges by name (a per-VLAN bridge merged into
# one VLAN-aware bridge would leave `qm start` nothing to plug into).
LOWER = False


def keys_named(model: Model, names: list[str]) -> set[Key]:
    wanted = set(names)
    return {k for k in model.interfaces if k[1] in wanted}


# Attributes that name an interface as a port or slave: a port left out of the
# model is left out of these lists too (ifupdown2 makes the bridge without it).
_MEMBER_LISTS = ("bridge-ports", "bond-slaves")


def _without(model: Model, removed: set[Key], stopped: set[Key] = frozenset()) -> Model:
    """``model`` less ``removed`` and what sits on them (VLANs on a removed
    device, a veth's peer: the kernel deletes those with it), out of the
    member lists and VRFs that name them; ``stopped`` ones kept, down,
    without addresses, routes and gateway."""
    removed = set(removed)
    changed = True
    while changed:
        changed = False
        for key, obj in model.interfaces.items():
            if key not in removed and any(r in removed for r in references(obj, ("lower", "peer"))):
                removed.add(key)
                changed = True
    gone = {name for _, name in removed}
    interfaces: dict[Key, ConfigObject] = {}
    for key, obj in model.interfaces.items():
        if key in removed:
            continue
        attrs = obj.attrs
        if key in stopped:
            attrs = {a: v for a, v in attrs.items() if a not in PURGED_ATTRIBUTES and a != "gateway"}
            obj = dataclasses.replace(obj, attrs=attrs, auto=False)
        elif attrs.get("vrf") and (key[0], attrs["vrf"]) in removed:
            obj = dataclasses.replace(obj, attrs={a: v for a, v in attrs.items() if a != "vrf"})
        elif any(gone.intersection(attrs.get(a) or ()) for a in _MEMBER_LISTS):
            obj = dataclasses.replace(obj, attrs={
                a: ([m for m in v if (key[0], m) not in removed] if a in _MEMBER_LISTS else v)
                for a, v in attrs.items()})
        interfaces[key] = obj
    masters = {k: m for k, m in model.masters.items() if k in interfaces and m in interfaces}
    return dataclasses.replace(model, interfaces=interfaces, masters=masters)


def downed(model: Model, names: list[str]) -> Model:
    """``model`` with ``names`` taken down as ifdown takes them (module doc)."""
    named = keys_named(model, names)
    removed = {k for k in named if creatable(model.interfaces[k].kind)}
    return _without(model, removed, named - removed)


@dataclasses.dataclass
class Absent:
    """Physical ports the file names that this host does not have."""

    hotplug: list[ConfigObject]     # allow-hotplug only: networking.service skips them
    ports: list[ConfigObject]       # no stanza, only named as a port: a warning (as ifupdown2)
    missing: list[ConfigObject]     # a stanza of its own: an error each, the rest applied


def without_absent_ports(model: Model, hotplug_only: set[str],
                         exists=lambda name: os.path.exists(f"/sys/class/net/{name}")
                         ) -> tuple[Model, Absent]:
    """What networking.service and ifupdown2 do with a port that is not there
    (a USB NIC unplugged, a name udev changed): the rest of the file comes up.
    An allow-hotplug port is skipped (ifup@.service brings it up when it
    appears); any other is left out with the devices that sit on it, and the
    command reports it and exits 1 (ifupdown2's per-interface error), instead
    of netcfg's apply refusing the whole file and leaving the host with no
    network at boot. Only the host's namespace: a port in another one moved
    there by netcfg is not in /sys/class/net here."""
    absent = [obj for key, obj in model.interfaces.items()
              if obj.kind == "physical" and not key[0] and not exists(obj.name)]
    if not absent:
        return model, Absent([], [], [])
    out = _without(model, {o.key for o in absent})
    hotplug = [o for o in absent if o.name in hotplug_only]
    return out, Absent(hotplug, [o for o in absent if o.implicit],
                       [o for o in absent if not o.implicit and o not in hotplug])


def brought_up(model: Model, names: list[str]) -> Model:
    """``model`` with the named interfaces up, and what they need up (lower
    devices, ports, slaves, what ifupdown-ng's `requires` names), as `ifup
    NAME` brings up a stanza that has no
    `auto` line: with its addresses and routes (ifupdown2 picks by `auto`
    only under -a). A device with `link-down yes` stays down."""
    return brought_up_keys(model, keys_named(model, names))


def brought_up_keys(model: Model, keys: set[Key]) -> Model:
    """brought_up() of these interfaces (netns, name)."""
    work = list(keys)
    up: set[Key] = set()
    while work:
        key = work.pop()
        obj = model.interfaces.get(key)
        if key in up or obj is None or obj.auto or obj.attrs.get("link-down"):
            continue
        up.add(key)
        work.extend(references(obj, ("lower", "port", "slave", "requires")))
    if not up:
        return model
    interfaces = {k: (dataclasses.replace(o, auto=True) if k in up else o)
                  for k, o in model.interfaces.items()}
    return dataclasses.replace(model, interfaces=interfaces)


def without_auto(model: Model) -> set[Key]:
    """The declared interfaces no `auto` line (nor allow-hotplug, nor an up
    device that needs them) brings up."""
    return {k for k, o in model.interfaces.items() if not o.auto and not o.implicit}


def up_now(keys: set[Key]) -> set[Key]:
    """Those of ``keys`` whose device is administratively up (IFF_UP) now,
    each read in its own namespace (one that does not exist has none).

    Equivalent to: `ip -n NETNS link show dev NAME` per key, its UP flag.
    """
    from netcfg.kernel.session import KernelSession
    from netcfg.model.model import ROOT_NETNS
    from netcfg.netlink.nlmsg import IFF_UP

    if not keys:
        return set()
    found: set[Key] = set()
    with KernelSession() as session:
        existing = session.existing_namespaces() | {ROOT_NETNS}
        for key in sorted(keys):
            netns, name = key
            link = session.link_now(netns, name) if netns in existing else None
            if link is not None and link[1] & IFF_UP:
                found.add(key)
    return found


def kept_up(model: Model) -> tuple[Model, list[str]]:
    """``model`` with each declared stanza without `auto` whose device is up
    now taken as up, as `ifup NAME` left it (brought_up: its addresses,
    routes and hooks, and what it needs); and their names. ifupdown2's
    `ifreload` leaves such a stanza alone (`_reload_default` skips
    interfaces without `auto` both when downing changed ones and when
    bringing them up): Proxmox's Apply Configuration must not cut an
    interface the admin brought up by name. One that is down stays down.
    netcfg applies the stanza's current config to it (docs/ifupdown.md)."""
    keys = up_now(without_auto(model))
    if not keys:
        return model, []
    names = list(dict.fromkeys(o.name for k, o in model.interfaces.items() if k in keys))
    return brought_up_keys(model, keys), names


def left_alone(model: Model, auto_names: list[str]) -> list[str]:
    """Declared stanzas that `ifup -a` does not touch, as ifupdown2's: no
    `auto` line, and nothing the auto ones reach (a port, a lower device)."""
    reached = connected(keys_named(model, auto_names), [model]) if auto_names else set()
    return list(dict.fromkeys(o.name for k, o in model.interfaces.items()
                              if not o.implicit and not o.auto and k not in reached
                              and o.section == "iface"))


def reach(model: Model, names: list[str]) -> set[Key]:
    """The named interfaces and what they are connected to (what `ifup NAME` applies)."""
    return connected(keys_named(model, names), [model])


def selection_of(names: list[str] | None, excluded: Sequence[str] = ()) -> Selection | None:
    """The named interfaces (all, when None) less those ``excluded``'s
    patterns match (`-X`: Selection.left_alone)."""
    if not names and not excluded:
        return None
    return Selection(tuple(names or ()), excluded=tuple(excluded))


def excluded_declared(model: Model, excluded: Sequence[str]) -> list[str]:
    """Interfaces of ``model`` whose name an `-X` pattern matches."""
    keys = Selection(excluded=tuple(excluded)).matches(model, Model())
    return list(dict.fromkeys(o.name for k, o in model.interfaces.items() if k in keys))


def excluded_but_needed(model: Model, names: list[str] | None,
                        excluded: Sequence[str]) -> dict[str, list[str]]:
    """Interfaces `-X` names that an interface applied (of ``names``; all
    when None) needs, each with the names of those that need it (it is a
    port of their bridge, a slave of their bond, their lower device):
    configured with them all the same, as ifupdown2 does
    (populate_dependency_info drops an excluded interface only when no
    upper interface picked it up)."""
    if not excluded:
        return {}
    out = Selection(excluded=tuple(excluded)).matches(model, Model())
    picked = model.interfaces.keys() if names is None else keys_named(model, names)
    return {key[1]: list(dict.fromkeys(o.name for k, o in model.interfaces.items()
                                       if k not in out and key in references(o, NEEDS)))
            for key in sorted(needed_excluded(model, out, picked))}


def excluded_changes(model: Model, names: list[str] | None,
                     excluded: Sequence[str]) -> list[tuple[str, str]]:
    """What applying ``model`` whole, as netcfgd does once it has it, would
    change on the interfaces `-X` leaves alone (those no interface of
    ``names`` needs): the dry run's operations on them, (interface, line)
    each; none when netcfgd's apply leaves them as they are now."""
    from netcfg.apply.execute import apply
    from netcfg.kernel.session import KernelSession

    alone = set(excluded_declared(model, excluded)) - set(
        excluded_but_needed(model, names, excluded))
    if not alone:
        return []
    with KernelSession() as session:   # whole: netcfgd goes on enforcing all of it
        result = apply(model, session, dry_run=True, lower_enabled=LOWER)
    return [(op.name, op.describe()) for op in result.plan.operations if op.name in alone]


def apply_here(model: Model, names: list[str] | None, *, dry_run: bool,
               run_dir: str, hooks: Any, excluded: Sequence[str] = ()) -> Any:
    """Apply ``model`` (only ``names`` and what they need, when given; never
    what ``excluded``'s patterns match, unless needed) under the apply lock,
    without waiting for it; revert on failure (apply() does). ``hooks``:
    netcfg.apply.hooks.HookSettings (the if-*.d scripts, the record of what
    was brought up, shared with `netcfg apply` and netcfgd)."""
    from netcfg.apply.execute import apply
    from netcfg.apply.lock import apply_lock
    from netcfg.kernel.session import KernelSession

    with KernelSession() as session, apply_lock(run_dir, wait=False):
        return apply(model, session, dry_run=dry_run, selection=selection_of(names, excluded),
                     hooks=hooks, lower_enabled=LOWER)


def apply_through_daemon(daemon: Any, path: str, names: list[str] | None, *,
                         dry_run: bool) -> dict[str, Any]:
    """The same through netcfgd, which from then on enforces ``path``."""
    from netcfg.cli.kernel_commands import ask_daemon

    source = {"path": os.path.abspath(path), "variables": {}, "stdin_text": None}
    return ask_daemon(daemon, "apply", None, source=source, dry_run=dry_run, json=True,
                      lower="auto" if LOWER else "off", interfaces=names or [], netns=[],
                      confirm=None)


def apply_model_through_daemon(daemon: Any, model: Model, names: list[str] | None, *,
                               dry_run: bool) -> dict[str, Any]:
    """``model`` (the file with interfaces taken down) through netcfgd, in its
    JSON form: netcfgd enforces it, so what ifdown took down stays down, until
    an ifup or ifreload sends the file again."""
    import json

    from netcfg.cli.kernel_commands import ask_daemon
    from netcfg.compile.jsonform import model_to_json

    source = {"path": "-", "variables": {}, "stdin_text": json.dumps(model_to_json(model))}
    return ask_daemon(daemon, "apply", None, source=source, dry_run=dry_run, json=True,
                      lower="auto" if LOWER else "off", interfaces=names or [], netns=[],
                      confirm=None)


def verdicts(ifile: InterfacesFile, names: list[str],
             excluded: Sequence[str] = ()) -> tuple[Verdicts, list[str]]:
    """What differs between the file (``names`` and what they need, less
    what `-X` ``excluded`` leaves alone) and the kernel, as verdicts per
    interface and line, and `netcfg query --check`'s lines for the same
    drift (for the stderr of `ifquery -c`)."""
    from netcfg.apply.execute import apply
    from netcfg.kernel.session import KernelSession
    from netcfg.plan.drift import explain

    model = brought_up(ifile.model, names)   # named: checked as `ifup NAME` leaves them
    with KernelSession() as session:
        result = apply(model, session, dry_run=True, selection=selection_of(names, excluded),
                       lower_enabled=LOWER)
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
