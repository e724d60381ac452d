"""The agent's only way to change the node: the `netcfg` command. A trial is
`netcfg apply --confirm --json-events` started in its own session, so it
outlives the agent: netcfgd holds the deadline and reverts unless `netcfg
confirm` comes, whatever becomes of the agent (docs/daemon.md). Its JSON
lines say when the trial begins (with the request count) and how it ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

APPLY_WAIT_S = 300
# How long the client takes to end once the trial is confirmed or reverted.
END_WAIT_S = 60


class NetcfgFailed(Exception):
    """netcfg refused or failed; the message is netcfg's (FILE:LINE: ...)."""


@dataclass
class Trial:
    pid: int
    config_hash: str
    record: Path

    @property
    def out(self) -> Path:
        return self.record.with_name("trial.out")

    @property
    def err(self) -> Path:
        return self.record.with_name("trial.err")

    def alive(self) -> bool:
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def said(self) -> str:
        try:
            return self.err.read_text().strip()
        except OSError:
            return ""

    def wait_exit(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def events(self) -> list[dict]:
        """The client's --json-events lines so far (trial-begin, trial-end,
        or applied when there was nothing to put on trial)."""
        try:
            lines = self.out.read_text().splitlines()
        except OSError:
            return []
        events = []
        for line in lines:
            try:
                events.append(json.loads(line))
            except ValueError:
                pass        # a line still being written
        return events

    def event(self, name: str) -> dict | None:
        return next((e for e in self.events() if e.get("event") == name), None)

    def forget(self) -> None:
        self.record.unlink(missing_ok=True)


class Netcfg:
    def __init__(self, executable: str, state_dir: Path):
        self.executable = executable
        self.state_dir = state_dir
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.executable, *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)

    def plan(self, config: Path) -> dict:
        """`netcfg apply --dry-run --json`: {"plan", "summary"} against the
        running kernel state."""
        done = self.run("apply", "-c", str(config), "--dry-run", "--json")
        if done.returncode != 0:
            raise NetcfgFailed(done.stderr.strip() or f"netcfg apply --dry-run: exit "
                                                      f"{done.returncode}")
        return json.loads(done.stdout)

    def apply(self, config: Path) -> None:
        done = self.run("apply", "-c", str(config))
        if done.returncode != 0:
            raise NetcfgFailed(done.stderr.strip())

    def status(self) -> dict:
        done = self.run("status", "--json")
        if done.returncode != 0:
            raise NetcfgFailed(done.stderr.strip() or "netcfgd is not running")
        return json.loads(done.stdout)

    def pending_trial(self) -> Trial | None:
        """The trial a previous run of the agent started (its record), if any."""
        record = self.state_dir / "trial.json"
        try:
            data = json.loads(record.read_text())
        except (OSError, ValueError):
            return None
        return Trial(data["pid"], data["config_hash"], record)

    def start_trial(self, config: Path, seconds: int, config_hash: str) -> Trial:
        """Start the trial and return once the change is applied, verified
        and on trial (its trial-begin line). Raises NetcfgFailed when the
        apply failed (netcfg reverted it)."""
        record = self.state_dir / "trial.json"
        trial = Trial(0, config_hash, record)
        with open(trial.out, "w") as out, open(trial.err, "w") as err:
            client = subprocess.Popen(
                [self.executable, "apply", "-c", str(config), "--confirm", str(seconds),
                 "--json-events"], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                start_new_session=True, cwd="/")
        trial.pid = client.pid
        record.write_text(json.dumps({"pid": client.pid, "config_hash": config_hash}))
        deadline = time.monotonic() + APPLY_WAIT_S
        while True:
            code = client.poll()
            if trial.event("trial-begin") is not None:
                return trial
            if code is not None:
                trial.forget()
                if code == 0 and trial.event("applied") is not None:
                    return trial         # the node had it already: nothing on trial
                raise NetcfgFailed(trial.said() or f"netcfg apply --confirm: exit {code}")
            if time.monotonic() > deadline:
                raise NetcfgFailed(f"netcfg apply --confirm did not finish within "
                                   f"{APPLY_WAIT_S} s; netcfgd reverts it unconfirmed")
            time.sleep(0.05)

    def confirm(self, trial: Trial) -> int:
        """Keep the change; the apply's request count. Raises NetcfgFailed
        when the trial ended otherwise (the deadline came first: netcfgd
        reverted)."""
        begun = trial.event("trial-begin")
        if begun is None:                # nothing was put on trial
            return 0
        done = self.run("confirm")
        trial.wait_exit(END_WAIT_S)
        trial.forget()
        ended = trial.event("trial-end") or {}
        if ended.get("state") != "confirmed":
            raise NetcfgFailed(f"netcfg confirm: exit {done.returncode}: "
                               f"{done.stderr.strip()}; the trial ended "
                               f"{ended.get('state', 'without a word')}: "
                               f"{ended.get('why') or trial.said()}")
        return int(begun.get("requests") or 0)

    def revert(self, trial: Trial) -> str:
        """Revert now (`netcfg confirm --revert`); what the trial's end said."""
        if trial.alive():
            done = self.run("confirm", "--revert")
            if done.returncode != 0 and trial.alive():
                # No trial to revert by request (it is not on trial yet):
                # the waiting client reverts on SIGTERM.
                os.kill(trial.pid, signal.SIGTERM)
        trial.wait_exit(END_WAIT_S)
        trial.forget()
        ended = trial.event("trial-end") or {}
        return ended.get("why") or trial.said()
