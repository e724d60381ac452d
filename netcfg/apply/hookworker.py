"""Hook commands run beside a loop that must not wait for them (netcfgd's):
each command is a child process started here and looked at later, never
waited for (issue 23 H5).

Commands of one interface run one after another, in the order they were
given (its down lines before its pre-up, its pre-up before its up lines);
commands of different interfaces run side by side, at most ``parallel`` at
once. ``poll()`` starts what may start, reaps what ended, kills what ran
past ``timeout_s`` (with its process group), and returns the commands that
ended. ``next_check()`` says when the loop should call it again.

``wait(keys, ...)`` is the one blocking call: a pass that is about to delete
an interface waits for its pre-down and down lines (ifupdown2 runs them
while the interface is still there), bounded by ``timeout_s``, calling
``keepalive`` (WATCHDOG=1) meanwhile.

Output goes to an anonymous file, never a pipe, so a child a hook leaves
running (`post-up daemon &`) holds nothing we read (hookproc.py says why).
Each command gets SIGKILL when the process that started it dies
(`setpriv --pdeathsig KILL`): a `netcfg apply` killed in a pre-up leaves no
orphan pre-up running beside the next one (issue 23 L1). Children a hook
puts in the background do not inherit that, and live on.
"""

from __future__ import annotations

import collections
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterable

from netcfg.apply.hookproc import (NOT_STARTED, TIMED_OUT, cannot_start, kill_group, start_hook,
                                   with_timeout_note)

Key = tuple[str, str]
POLL_S = 0.05          # how often a loop looks at running hooks


@dataclass
class Job:
    """One command of one interface's hooks."""

    key: Key
    phase: str
    argv: list[str]
    env: dict[str, str]
    said: str                       # how messages name it: "br0: post-up 'cmd'"
    where: str | None = None        # FILE:LINE of the line, when it is one
    # Whose command it is: None for a pass's; a client's apply through
    # netcfgd (netcfgd/hooks.py ClientHooks) is told when it ends.
    owner: Any = field(default=None, compare=False, repr=False)


@dataclass
class Finished:
    job: Job
    code: int
    output: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.code == 0


@dataclass
class _Running:
    job: Job
    child: subprocess.Popen
    output: IO[bytes]
    started: float


@dataclass
class HookWorker:
    netns_dir: str
    timeout_s: float
    parallel: int = 8
    clock: Callable[[], float] = time.monotonic
    _queues: dict[Key, collections.deque] = field(default_factory=dict)
    _running: dict[Key, _Running] = field(default_factory=dict)
    _polled: float = float("-inf")

    def submit(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            self._queues.setdefault(job.key, collections.deque()).append(job)

    def drop(self, key: Key) -> list[Job]:
        """Forget what waits for ``key`` (a failed pre-up's later lines); the
        jobs forgotten."""
        return list(self._queues.pop(key, ()))

    def busy(self, key: Key | None = None) -> bool:
        if key is None:
            return bool(self._running or self._queues)
        return key in self._running or key in self._queues

    def next_check(self) -> float | None:
        """When poll() is due (a fixed time: a loop that asks again must not
        see it move away)."""
        return self._polled + POLL_S if self.busy() else None

    def poll(self) -> list[Finished]:
        ended = []
        now = self._polled = self.clock()
        for key, running in list(self._running.items()):
            code = running.child.poll()
            if code is None and now - running.started >= self.timeout_s:
                kill_group(running.child)
                code = TIMED_OUT
            if code is not None:
                del self._running[key]
                ended.append(self._finish(running, code, now))
        for key in list(self._queues):
            if len(self._running) >= self.parallel:
                break
            if key in self._running:
                continue
            queue = self._queues[key]
            job = queue.popleft()
            if not queue:
                del self._queues[key]
            started = self._start(job, now)
            if isinstance(started, Finished):
                ended.append(started)
        return ended

    def wait(self, keys: Iterable[Key], keepalive: Callable[[], None] | None = None
             ) -> list[Finished]:
        """Run until nothing of ``keys`` is queued or running (each command
        still bounded by timeout_s); returns everything that ended meanwhile."""
        keys = set(keys)
        ended: list[Finished] = []
        while True:
            ended += self.poll()
            if not any(self.busy(k) for k in keys):
                return ended
            if keepalive is not None:
                keepalive()
            time.sleep(POLL_S)

    def close(self) -> None:
        """The daemon stops: hooks still running are killed (their time is
        bounded anyway); what they put in the background lives on."""
        for running in self._running.values():
            kill_group(running.child)
            running.child.wait()   # reaped: no zombie while the daemon stops
            running.output.close()
        self._running.clear()
        self._queues.clear()

    # -- one child

    def _start(self, job: Job, now: float) -> "_Running | Finished":
        output = tempfile.TemporaryFile()
        try:
            child = start_hook(job.argv, job.env, output, netns=job.key[0],
                               netns_dir=self.netns_dir)
        except OSError as error:
            output.close()
            return Finished(job, NOT_STARTED, cannot_start(job.argv, error), 0.0)
        self._running[job.key] = _Running(job, child, output, now)
        return self._running[job.key]

    def _finish(self, running: _Running, code: int, now: float) -> Finished:
        running.child.wait()
        with running.output as output:
            output.seek(0)
            text = output.read().decode(errors="replace")
        return Finished(running.job, code, with_timeout_note(text, code, self.timeout_s),
                        now - running.started)
