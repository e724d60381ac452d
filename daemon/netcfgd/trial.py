"""`netcfg apply --confirm SECONDS` while netcfgd runs: the change on trial.

The daemon applies the new config and enforces it, but remembers the one
before. `netcfg confirm` keeps the change; the deadline passing, or the
waiting client giving up (Ctrl-C), reverts it: the state from before the
apply is put back (``netcfg.apply.execute.revert``) and the previous config is
enforced again. The deadline is the daemon's, not the client's: a client
killed, or cut off by the very change it made, does not stop the revert.

The previous config is also written to RUN_DIR/trial.json, so a daemon
restarted during the wait (the watchdog, a crash) reverts at start instead
of keeping a change nobody confirmed. A daemon stopped during the wait
(SIGTERM) reverts before it exits; each ended trial's outcome is written to
RUN_DIR/trial-ended.json for a client whose daemon went away.

One owner at a time (``wait_for_cli_trial``): a daemon that starts while
`netcfg apply --confirm` works alone waits for that trial's end before it
serves a request or writes, so `netcfg confirm` reaches the CLI; it then
refuses to enforce a config that trial reverted (netcfg/apply/trial_record.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from netcfg.apply.execute import ApplyResult
from netcfg.apply.lock import LockHeld, apply_lock
from netcfg.apply.trial_record import CliTrial, config_digest, read_ended, write_ended
from netcfg.compile.jsonform import model_to_json
from netcfg.compile.pipeline import ConfigSource
from netcfg.model.model import Model

TRIAL_FILE = "trial.json"
WAITING, CONFIRMED, REVERTED, REVERT_FAILED = "waiting", "confirmed", "reverted", "revert-failed"
OUTCOMES_KEPT = 8    # ended trials a client may still ask about
# While netcfgd waits for a CLI trial before READY=1, each EXTEND_TIMEOUT_USEC
# grants this long and is re-sent at a third of it: a trial longer than
# TimeoutStartSec does not get the waiting daemon killed, and a daemon stuck
# in the wait is still killed within this long.
START_EXTENSION_S = 30.0


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
    id: str = ""                 # unique across restarts (a client matches outcomes by it)
    config_sha256: str = ""      # the config on trial (trial_record.config_digest)

    def left(self, now: float | None = None) -> float:
        return max(0.0, self.deadline - (time.monotonic() if now is None else now))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number, "id": self.id, "state": self.state,
                               "client_pid": self.client_pid, "seconds": self.seconds,
                               "requests": self.result.requests,
                               "config_sha256": self.config_sha256}
        if self.state == WAITING:
            left = self.left()
            out["left"] = round(left, 3)
            out["deadline"] = round(time.time() + left, 3)   # wall clock, for other hosts' eyes
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
    # The last digest computed, by model identity: status asks for it often.
    _digest: tuple[Any, str] | None = None

    @property
    def path(self) -> str:
        return os.path.join(self.run_dir, TRIAL_FILE)

    def prepare(self, previous: Model, previous_source: ConfigSource, previous_lower: bool,
                client_pid: int) -> None:
        """Before the apply writes anything: the config to go back to, on disk,
        so a daemon killed in the middle of the apply reverts it at start."""
        self._save(previous, previous_source, previous_lower, client_pid)

    def _id(self, number: int) -> str:
        return f"netcfgd-{os.getpid()}-{number}"

    def begin(self, result: ApplyResult, previous: Model, previous_source: ConfigSource,
              previous_lower: bool, seconds: float, client_pid: int,
              config_sha256: str = "") -> Trial:
        """The apply verified: its change is on trial from now on."""
        self.counter += 1
        trial = Trial(self.counter, result, previous, previous_source, previous_lower, seconds,
                      time.monotonic() + seconds, client_pid, id=self._id(self.counter),
                      config_sha256=config_sha256)
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
        with contextlib.suppress(OSError):   # a client whose daemon went away reads it
            write_ended(self.run_dir, trial.to_json())
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        return trial

    def digest(self, model: Model) -> str:
        """config_digest(model), computed once per model (status asks often)."""
        if self._digest is None or self._digest[0] is not model:
            self._digest = (model, config_digest(model))
        return self._digest[1]

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
                "lower": lower_enabled, "client_pid": client_pid,
                "id": self._id(self.counter + 1)}   # begin() gives it this number
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

    def reverted_at_start(self) -> None:
        """The first pass enforced the config from before a trial the last
        daemon left waiting: say so to its client (by the trial's id), then
        forget it."""
        left = self.left_over()
        if left and left.get("id"):
            with contextlib.suppress(OSError):
                write_ended(self.run_dir, {
                    "id": left["id"], "state": REVERTED, "client_pid": left.get("client_pid"),
                    "why": "netcfgd stopped during the trial; it enforced the config from "
                           "before it again when it started (the previous state was restored)"})
        self.forget_left_over()


def wait_for_cli_trial(run_dir: str, log: Any, ping: Callable[[], None],
                       status: Callable[[str], None], poll_s: float = 0.2,
                       extend: Callable[[float], None] | None = None,
                       extension_s: float = START_EXTENSION_S) -> None:
    """Before the daemon serves or writes anything: while `netcfg apply
    --confirm` working alone holds a trial (and the apply lock), wait for its
    end, so `netcfg confirm` reaches it and nothing is enforced over it.
    ``extend(seconds)`` (Notifier.extend_timeout) keeps systemd's start
    timeout ahead of the wait: the trial's length is the operator's choice
    (up to MAX_CONFIRM_S), not the unit's TimeoutStartSec."""
    record = CliTrial(run_dir).read()
    if record is None or record.get("state") != WAITING:
        return
    left = max(0.0, float(record.get("deadline") or 0) - time.time())
    log.warning(f"an apply --confirm (pid {record.get('pid')}) waits for `netcfg confirm` "
                f"({left:.0f} s left): netcfgd waits for its end before it serves or "
                f"enforces anything")
    status(f"waiting for the apply --confirm of pid {record.get('pid')} to end")
    extend_next = 0.0
    while True:
        try:
            with apply_lock(run_dir, wait=False):
                return
        except LockHeld:
            ping()
            now = time.monotonic()
            if extend is not None and now >= extend_next:
                extend(extension_s)
                extend_next = now + extension_s / 3
            time.sleep(poll_s)


def refused_by_a_cli_trial(run_dir: str, model: Model) -> str | None:
    """Why the daemon must not enforce ``model`` (None: it may): a trial of
    `netcfg apply --confirm` of this very config reverted it, or died
    before anyone confirmed it."""
    record = CliTrial(run_dir).refuses(config_digest(model))
    if record is None:
        return None
    if record["state"] == "died":
        what = f"{record['why']}: its change is in the kernel, unconfirmed"
    else:
        what = (f"an apply --confirm of it (pid {record.get('pid')}) was {record['state']}: "
                f"{record.get('why') or 'no reason given'}")
    return (f"not enforcing this config: {what}. Apply it on purpose (netcfg apply, without "
            f"--confirm) or fix it, then start netcfgd again "
            f"({os.path.join(run_dir, 'cli-trial.json')} holds the trial's record)")


def forget_cli_trial(run_dir: str) -> None:
    """The daemon enforces its config now: an older CLI trial's record says
    nothing about it any more."""
    CliTrial(run_dir).kept()


def outcome_of(run_dir: str, trial_id: str) -> dict[str, Any] | None:
    ended = read_ended(run_dir)
    return ended if ended is not None and ended.get("id") == trial_id else None
