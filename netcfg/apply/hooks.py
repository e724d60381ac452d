"""Running the imperative lines (pre-up, up, post-up, pre-down, down,
post-down) of the interfaces a plan brings up or down (which and when:
netcfg/plan/hooks.py; the decisions: docs/compat.md).

Each line is `/bin/sh -c LINE`, as ifupdown2's usercmds runs it, in the
interface's network namespace: a child that nsenter(1) moves into the
namespace's file (`nsenter --net=/run/netns/NS`), so this process never
changes namespace. The environment is ifupdown2's: the caller's, plus IFACE,
LOGICAL, ADDRFAM, METHOD (addons/usercmds.py), MODE and PHASE
(ifupdownmain.generate_running_env), VERBOSITY (ifupdown's), and
IF_<ATTRIBUTE> with the first value of each attribute the stanza writes
(iface.generate_env). Output (stdout and stderr together) is logged and
returned line by line.

When: pre-up and pre-down/down run before the batch that brings the
interface up or down (execute.py's before_batch), so a failing pre-up fails
the apply before the interface comes up, and the apply is reverted as any
failure is (netcfg is transactional; ifupdown2 3.0 only logs a warning and
goes on). up and post-up run once the apply is verified; post-down too. A
failing up, post-up, down or post-down line is reported and the rest go on,
as ifupdown2 does.
"""

from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any

from netcfg.compile.values import format_route
from netcfg.model.errors import NetcfgError
from netcfg.model.model import ConfigObject, Model
from netcfg.plan.hooks import HookRun, hook_runs

LOG = logging.getLogger("netcfg.hooks")
# A hook that hangs must not hold the apply lock (and netcfgd) for ever.
TIMEOUT_S = 120
# Attributes that are not the stanza's settings: the method lines.
_NOT_SETTINGS = frozenset({"inet", "inet6"})
_MODE = {"up": "start", "down": "stop"}


class HookFailed(NetcfgError):
    """A pre-up line failed: the interface must not come up."""


@dataclass
class Hooks:
    """One apply's imperative lines: which run before which batch, which after."""

    desired: Model
    runs: list[HookRun]
    run_dir: str = "/run/netns"
    verbosity: int = 0
    log: list[str] = field(default_factory=list)

    @classmethod
    def for_plan(cls, desired: Model, plan, run_dir: str) -> "Hooks":
        return cls(desired, hook_runs(desired, plan.operations), run_dir)

    def __bool__(self) -> bool:
        return bool(self.runs)

    def before_batch(self, batch) -> None:
        """pre-up of what this batch brings up (failing: HookFailed);
        pre-down and down of what it brings down."""
        for op in batch:
            for run in self.runs:
                if (run.netns, run.name) != (op.netns, op.name):
                    continue
                if run.direction == "up" and op.action == "link-up":
                    self._phases(run, ("pre-up",), stop_on_failure=True)
                elif run.direction == "down" and op.action == "link-down":
                    self._phases(run, ("pre-down", "down"), stop_on_failure=False)

    def after_verify(self) -> None:
        for run in self.runs:
            phases = ("up", "post-up") if run.direction == "up" else ("post-down",)
            self._phases(run, phases, stop_on_failure=False)

    def _phases(self, run: HookRun, phases: tuple[str, ...], *, stop_on_failure: bool) -> None:
        obj = self.desired.interfaces[(run.netns, run.name)]
        for phase, command in run.lines:
            if phase not in phases:
                continue
            code, output = self._run(obj, run, phase, command)
            where = obj.where(phase)
            said = f"{obj.label()}: {phase} '{command}'"
            for line in output.splitlines():
                self.log.append(f"{said}: {line}")
                LOG.info("%s: %s", said, line)
            if code == 0:
                self.log.append(f"{said}: ok")
                continue
            text = f"{where}: {said} failed ({_status(code)})"
            self.log.append(text)
            LOG.warning("%s", text)
            if stop_on_failure:
                last = output.strip().splitlines()[-1:] or [""]
                raise HookFailed(f"{text}{': ' + last[0] if last[0] else ''}; "
                                 f"{obj.name} was not brought up")

    def _run(self, obj: ConfigObject, run: HookRun, phase: str, command: str) -> tuple[int, str]:
        argv = ["/bin/sh", "-c", command]
        if obj.netns:
            argv = ["nsenter", f"--net={os.path.join(self.run_dir, obj.netns)}", "--", *argv]
        try:
            done = subprocess.run(argv, env=environment(obj, run.direction, phase,
                                                        self.verbosity),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as timeout:
            out = timeout.output or b""
            return -1, out.decode(errors="replace") + f"\n(killed after {TIMEOUT_S} s)"
        except OSError as error:
            return 127, str(error)
        return done.returncode, done.stdout.decode(errors="replace")


def _status(code: int) -> str:
    return f"killed by signal {-code}" if code < -1 else (
        "timed out" if code == -1 else f"exit {code}")


def environment(obj: ConfigObject, direction: str, phase: str, verbosity: int = 0) -> dict:
    """ifupdown2's environment for one line of ``obj``'s stanza."""
    env = dict(os.environ)
    families = [f for f in ("inet", "inet6") if f in obj.attrs]
    env.update({
        "IFACE": obj.name, "LOGICAL": obj.name,
        "ADDRFAM": ",".join(families),
        "METHOD": str(obj.attrs.get(families[0], "")) if families else "",
        "MODE": _MODE[direction], "PHASE": phase, "VERBOSITY": str(verbosity),
    })
    # What the stanza writes (it has a line for it), not what netcfg derived.
    for attribute in obj.locs:
        if attribute in _NOT_SETTINGS:
            continue
        value = obj.attrs.get(attribute, obj.netns if attribute == "netns" else None)
        if value is not None:
            env["IF_" + attribute.upper().replace("-", "_")] = _first_text(value)
    return env


def _first_text(value: Any) -> str:
    """The first value as a stanza writes it (ifupdown2: attr_value[0])."""
    if isinstance(value, list):
        value = value[0] if value else ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return format_route(value)  # routes are the only dict values
    return str(value)
