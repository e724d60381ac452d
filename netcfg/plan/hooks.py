"""Which imperative lines (pre-up, up, post-up, pre-down, down, post-down) an
apply runs, and when: the pure half of ifupdown2's usercmds and of its
if-*.d scripts (the running is netcfg/apply/hooks.py's; what was run before
is netcfg/apply/hookrecord.py's record).

ifupdown2 runs an interface's lines when it brings that interface up or down
(`ifup`, `ifdown`, `ifreload`), each interface's phases together, interfaces
in dependency order. netcfg runs them as ``lifecycle()`` decides, from what
the plan does and from the record of what earlier applies brought up:

- an interface the config wants up that the plan brings up (creates, or sets
  up) runs its up lines; if the record says its up lines ran before (it went
  down or away outside netcfg), its recorded down lines run first, so
  `post-up iptables -A` / `post-down iptables -D` stay paired;
- one whose up lines or exported settings changed since they ran (its
  fingerprint) runs its recorded down lines, then its new up lines, even
  when the plan does nothing to it (an edited post-up line changes nothing
  in the kernel);
- one unchanged runs nothing (ifupdown2 #192: up lines re-run on every ifup
  duplicate `ip rule`s);
- one recorded that the config no longer wants up (stanza removed, `ifdown`,
  `netcfg down`) runs its recorded down lines (ifupdown2 #248);
- one already up that the record does not know (the first apply after
  ifupdown2 brought the host up) is adopted: recorded, nothing run, so a
  switch from ifupdown2 does not run every post-up a second time.

``hook_runs()`` is the record-less view of one plan: what `netcfg plan`
lists, and what runs when no record is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from netcfg.model.model import ConfigObject, Model

UP_PHASES = ("pre-up", "up", "post-up")
DOWN_PHASES = ("pre-down", "down", "post-down")
PHASES = frozenset(UP_PHASES + DOWN_PHASES)
# The plan actions after which an interface has come up, or gone down.
_CAME_UP = ("link-add", "link-up")
_WENT_DOWN = ("link-down", "link-del")
Key = tuple[str, str]


@dataclass(frozen=True)
class HookRun:
    """One interface's lines of one direction: run phase by phase, in order."""

    netns: str
    name: str
    direction: str                      # "up" or "down"
    lines: tuple[tuple[str, str], ...]  # (phase, command)

    def describe(self) -> list[str]:
        where = f" (netns {self.netns})" if self.netns else ""
        return [f"{self.name}{where}: {phase} runs: {command}" for phase, command in self.lines]


def wants_up(obj: ConfigObject) -> bool:
    """Whether the config brings ``obj`` up (its up lines belong to it):
    a stanza of its own, auto, not `link-down yes`."""
    return obj.auto and not obj.implicit and not obj.attrs.get("link-down")


def came_up(operations) -> list[Key]:
    """Interfaces the plan creates or sets up, in the order of their first operation."""
    return list(dict.fromkeys((op.netns, op.name) for op in operations if op.action in _CAME_UP))


def requires_first(keys: Iterable[Key], desired: Model) -> list[Key]:
    """``keys`` with each interface after those of them it requires
    (ifupdown-ng's `requires`), otherwise in the order given: their up and
    post-up lines run in that order, as ifupdown-ng runs a required
    interface's phases first. Compile refuses a loop; one here is cut."""
    keys = list(keys)
    if not any(desired.interfaces.get(k) is not None
               and desired.interfaces[k].attrs.get("requires") for k in keys):
        return keys
    present, out, placed = set(keys), [], set()

    def place(key: Key, visiting: set[Key]) -> None:
        if key in placed or key in visiting:
            return
        visiting.add(key)
        obj = desired.interfaces.get(key)
        for name in (obj.attrs.get("requires") or ()) if obj is not None else ():
            if (key[0], name) in present:
                place((key[0], name), visiting)
        placed.add(key)
        out.append(key)

    for key in keys:
        place(key, set())
    return out


def went_down(operations) -> list[Key]:
    """Interfaces the plan sets down or deletes, in plan order."""
    return list(dict.fromkeys((op.netns, op.name) for op in operations
                              if op.action in _WENT_DOWN))


def namespaces_deleted(operations) -> set[str]:
    """Namespaces the plan deletes (their devices go with them)."""
    return {op.name for op in operations if op.action == "netns-del"}


@dataclass(frozen=True)
class Lifecycle:
    """What one apply runs, as interface keys (module doc)."""

    downs: tuple[Key, ...] = ()        # recorded, not wanted up: recorded down lines
    cycles: tuple[Key, ...] = ()       # recorded, wanted up: recorded down lines, then up lines
    ups: tuple[Key, ...] = ()          # not recorded, brought up: up lines
    adopted: tuple[Key, ...] = ()      # not recorded, already up: recorded, nothing run
    plan_downs: tuple[Key, ...] = ()   # not recorded, brought down by the plan: the config's

    def __bool__(self) -> bool:
        return bool(self.downs or self.cycles or self.ups or self.adopted or self.plan_downs)


def lifecycle(wanted: Mapping[Key, str], recorded: Mapping[Key, str], up: Iterable[Key],
              down: Iterable[Key] = ()) -> Lifecycle:
    """``wanted``: the interfaces the config wants up (in this apply's reach),
    with their fingerprints, in config order; ``recorded``: the record's, in
    the order they came up (fingerprint "" when their up lines are due);
    ``up`` / ``down``: what the plan brings up / down, in plan order."""
    up = list(up)
    brought_up = set(up)
    order = list(dict.fromkeys([*(k for k in up if k in wanted), *wanted]))
    cycles, ups, adopted = [], [], []
    for key in order:
        if key in recorded:
            if recorded[key] != wanted[key] or key in brought_up:
                cycles.append(key)
        elif key in brought_up:
            ups.append(key)
        else:
            adopted.append(key)
    downs = [k for k in reversed(list(recorded)) if k not in wanted]
    plan_downs = [k for k in down if k not in wanted and k not in recorded]
    return Lifecycle(tuple(downs), tuple(cycles), tuple(ups), tuple(adopted), tuple(plan_downs))


def hook_runs(desired: Model, operations) -> list[HookRun]:
    """The lines ``operations`` (a plan's, in order) make run when no record
    is kept: ups and downs, each interface once, in the order of its first
    operation. Downs: interfaces the config still names, set down."""
    runs: dict[tuple[str, str, str], HookRun] = {}
    for op in operations:
        if op.action in _CAME_UP:
            direction, phases = "up", UP_PHASES
        elif op.action == "link-down":
            direction, phases = "down", DOWN_PHASES
        else:
            continue
        key = (op.netns, op.name, direction)
        if key in runs:
            continue
        obj = desired.interfaces.get((op.netns, op.name))
        if obj is None or (direction == "up" and not wants_up(obj)):
            continue  # made but left down: nothing came up
        lines = tuple((phase, command) for phase in phases for command in obj.attrs.get(phase, ()))
        if lines:
            runs[key] = HookRun(op.netns, op.name, direction, lines)
    return list(runs.values())


def has_hooks(model: Model) -> bool:
    return any(not PHASES.isdisjoint(obj.attrs) for obj in model.interfaces.values())


def plan_notes(desired: Model, operations) -> list[str]:
    """What `netcfg plan` says it will run, one line per command."""
    return [line for run in hook_runs(desired, operations) for line in run.describe()]
