"""`netcfg apply --confirm SECONDS` while netcfgd runs: the change on trial.

The daemon applies the new config and enforces it, but remembers the one
before. `netcfg confirm` keeps the change; the deadline passing, or the
waiting client giving up (Ctrl-C), reverts it: the state from before the
apply is put back (``netcfg.apply.execute.revert``) and the previous config is
enforced again. The deadline is the daemon's, not the client's: a client
killed, or cut off by the very change it made, does not stop the revert.

The previous config is also written to RUN_DIR/trial.json, so a daemon
restarted during the wait (the watchdog, a crash) reverts at start instead
of keeping a change nobody confirmed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from netcfg.apply.execute import ApplyResult
from netcfg.compile.jsonform import model_to_json
from netcfg.compile.pipeline import ConfigSource
from netcfg.model.model import Model

TRIAL_FILE = "trial.json"
WAITING, CONFIRMED, REVERTED, REVERT_FAILED = "waiting", "confirmed", "reverted", "revert-failed"
OUTCOMES_KEPT = 8    # ended trials a client may still ask about


@dataclass
class Trial:
    """One apply on trial: what to put back, and until when it may stay."""

    number: int
    result: ApplyResult          # what revert() needs: the state from before
    previous: Model              # the config enforced before it
    previous_source: ConfigSource
    previous_lower: bool         # ... and whether it was lowered (--lower)
    seconds: float
    deadline: float              # time.monotonic()
    client_pid: int = 0
    state: str = WAITING
    why: str = ""

    def left(self, now: float | None = None) -> float:
        return max(0.0, self.deadline - (time.monotonic() if now is None else now))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number, "state": self.state,
                               "client_pid": self.client_pid, "seconds": self.seconds}
        if self.state == WAITING:
            out["left"] = round(self.left(), 3)
        else:
            out["why"] = self.why
        return out


@dataclass
class Trials:
    """The trial in progress (at most one: other applies wait for it to end)
    and the outcomes of the last few, by number."""

    run_dir: str
    current: Trial | None = None
    ended: dict[int, Trial] = field(default_factory=dict)
    counter: int = 0

    @property
    def path(self) -> str:
        return os.path.join(self.run_dir, TRIAL_FILE)

    def prepare(self, previous: Model, previous_source: ConfigSource, previous_lower: bool,
                client_pid: int) -> None:
        """Before the apply writes anything: the config to go back to, on disk,
        so a daemon killed in the middle of the apply reverts it at start."""
        self._save(previous, previous_source, previous_lower, client_pid)

    def begin(self, result: ApplyResult, previous: Model, previous_source: ConfigSource,
              previous_lower: bool, seconds: float, client_pid: int) -> Trial:
        """The apply verified: its change is on trial from now on."""
        self.counter += 1
        trial = Trial(self.counter, result, previous, previous_source, previous_lower, seconds,
                      time.monotonic() + seconds, client_pid)
        self.current = trial
        return trial

    def end(self, state: str, why: str = "") -> Trial:
        trial = self.current
        assert trial is not None, "no trial in progress"
        trial.state, trial.why = state, why
        self.current = None
        self.ended[trial.number] = trial
        while len(self.ended) > OUTCOMES_KEPT:
            del self.ended[min(self.ended)]
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        return trial

    def find(self, number: int) -> Trial | None:
        if self.current is not None and self.current.number == number:
            return self.current
        return self.ended.get(number)

    def _save(self, previous: Model, source: ConfigSource, lower_enabled: bool,
              client_pid: int) -> None:
        """The config to go back to, for a daemon restarted before the end."""
        data = {"previous": model_to_json(previous),
                "previous_source": {"path": source.path, "variables": source.variables,
                                    "stdin_text": source.stdin_text},
                "lower": lower_enabled, "client_pid": client_pid}
        os.makedirs(self.run_dir, mode=0o700, exist_ok=True)
        tmp = self.path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.path)

    def left_over(self) -> dict[str, Any] | None:
        """What a daemon that stopped during a trial left (None: nothing)."""
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}     # unreadable: the caller says so and removes it

    def forget_left_over(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
