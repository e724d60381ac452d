"""Who holds an `apply --confirm` trial, and how the last one ended: the
files in RUN_DIR through which `netcfg confirm --wait`, a client whose
netcfgd went away, and a netcfgd that starts find out (docs/daemon.md,
"Who owns the kernel when").

``cli-trial.json``: written by `netcfg apply --confirm` working alone, while
it holds the apply lock: when the trial begins (state "waiting"), and again
with its outcome before the lock is released. A netcfgd that starts during
the trial waits for the lock, then reads the outcome here: it does not
enforce a config that a trial reverted (or whose apply died unconfirmed).
Removed by an apply that keeps its change (a confirmed trial keeps it as a
record of the confirmation; it refuses nothing).

``trial-ended.json``: netcfgd's last ended trial, so a client whose daemon
stopped during the wait can say what happened to its change.

Both are versioned JSON, 0600 in the 0700 run directory, replaced whole
(rename), never half-written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from typing import Any

from netcfg.compile.jsonform import model_to_json
from netcfg.model.model import Model

CLI_TRIAL_FILE = "cli-trial.json"
ENDED_FILE = "trial-ended.json"
VERSION = 1
WAITING, CONFIRMED, REVERTED, REVERT_FAILED = "waiting", "confirmed", "reverted", "revert-failed"
# Outcomes that say the config on trial was not wanted: netcfgd does not enforce it.
UNWANTED = (REVERTED, REVERT_FAILED)


def config_digest(model: Model) -> str:
    """The identity of a config as compiled (sha256 of its JSON form): the
    same text reached by another path, or rendered from other templates,
    gives the same digest; any change of what it declares gives another."""
    text = json.dumps(model_to_json(model), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _write(path: str, data: dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"version": VERSION, **data}, f)
    os.replace(tmp, path)


def _read(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as f:
            data = json.load(f)
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == VERSION else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CliTrial:
    """The record of `netcfg apply --confirm` working without netcfgd."""

    def __init__(self, run_dir: str):
        self.path = os.path.join(run_dir, CLI_TRIAL_FILE)

    def begin(self, *, seconds: float, requests: int, config: str, digest: str) -> dict[str, Any]:
        """The trial's begin event (also what `--json-events` prints)."""
        now = time.time()
        record = {"owner": "netcfg", "pid": os.getpid(), "id": f"netcfg-{os.getpid()}-{now:.3f}",
                  "seconds": seconds, "deadline": round(now + seconds, 3),
                  "requests": requests, "config": config, "config_sha256": digest,
                  "state": WAITING}
        _write(self.path, record)
        return record

    def end(self, state: str, why: str = "") -> dict[str, Any] | None:
        record = _read(self.path)
        if record is None or record.get("pid") != os.getpid():
            return None
        record.update(state=state, why=why, ended_at=round(time.time(), 3))
        _write(self.path, record)
        return record

    def kept(self) -> None:
        """An apply without --confirm wrote what it was asked: whatever an
        earlier trial refused, the operator has now chosen."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def read(self) -> dict[str, Any] | None:
        """The record, its state "waiting" turned into "died" when its
        process is gone (killed before it could confirm or revert: its
        change stays in the kernel, unconfirmed)."""
        record = _read(self.path)
        if record is not None and record.get("state") == WAITING and \
                not pid_alive(int(record.get("pid") or 0)):
            record = {**record, "state": "died",
                      "why": f"the apply --confirm (pid {record.get('pid')}) died before it "
                             f"was confirmed or reverted"}
        return record

    def refuses(self, digest: str) -> dict[str, Any] | None:
        """The record when it says the config of ``digest`` must not be
        enforced: its trial reverted it, or died unconfirmed."""
        record = self.read()
        if record is None or record.get("config_sha256") != digest:
            return None
        return record if record.get("state") in (*UNWANTED, "died") else None


def write_ended(run_dir: str, trial: dict[str, Any]) -> None:
    """netcfgd: the trial that just ended (id, state, why, client_pid)."""
    _write(os.path.join(run_dir, ENDED_FILE), {**trial, "ended_at": round(time.time(), 3)})


def read_ended(run_dir: str) -> dict[str, Any] | None:
    return _read(os.path.join(run_dir, ENDED_FILE))
