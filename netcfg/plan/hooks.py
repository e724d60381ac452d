"""Which imperative lines (pre-up, up, post-up, pre-down, down, post-down) a
plan runs, and when: the pure half of ifupdown2's usercmds (the running is
netcfg/apply/hooks.py's).

ifupdown2 runs an interface's lines when it brings that interface up or down
(`ifup`, `ifdown`, `ifreload`), each interface's phases together, interfaces
in dependency order. netcfg runs them when a plan creates or brings up an
interface (pre-up, up, post-up: after the kernel writes are verified, so the
device and everything it needs exist) or brings one down that the config
still names (pre-down, down: before the writes, while it is up; post-down:
after). A device the config no longer names has no lines left to run.
Interfaces come in the plan's order, which is dependency order.
"""

from __future__ import annotations

from dataclasses import dataclass

from netcfg.model.model import Model

UP_PHASES = ("pre-up", "up", "post-up")
DOWN_PHASES = ("pre-down", "down", "post-down")
PHASES = frozenset(UP_PHASES + DOWN_PHASES)
# The plan actions after which an interface has come up, or gone down.
_CAME_UP = ("link-add", "link-up")
_WENT_DOWN = ("link-down",)


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


def hook_runs(desired: Model, operations) -> list[HookRun]:
    """The lines ``operations`` (a plan's, in order) make run: ups and downs,
    each interface once, in the order of its first operation."""
    runs: dict[tuple[str, str, str], HookRun] = {}
    for op in operations:
        if op.action in _CAME_UP:
            direction, phases = "up", UP_PHASES
        elif op.action in _WENT_DOWN:
            direction, phases = "down", DOWN_PHASES
        else:
            continue
        key = (op.netns, op.name, direction)
        if key in runs:
            continue
        obj = desired.interfaces.get((op.netns, op.name))
        if obj is None or (direction == "up" and not (obj.auto and not obj.attrs.get("link-down"))):
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
