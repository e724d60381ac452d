"""The time limit on rendering templates, and the interrupts a template cannot swallow.

A template is code, and code can loop for ever or try to end the process:
rendering runs under a time limit (RenderLimit, SIGALRM), and whatever a
template raises, BaseExceptions included (SystemExit, GeneratorExit, its own
KeyboardInterrupt), becomes an error located at the template's line. A real
Ctrl-C still interrupts. Why a signal and not a child process: docs/security.md.

This module does not import Mako: commands that only read plain interfaces(5)
files (ifquery, every 10 s on Proxmox) import it and not the template engine.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import FrameType

# Seconds a whole config may take to render (--render-timeout,
# $NETCFG_RENDER_TIMEOUT). The biggest benchmark renders in ~40 ms; netcfgd
# reloads in its loop, and systemd's watchdog (WatchdogSec=30s) must never
# be what stops an endless template.
DEFAULT_RENDER_TIMEOUT_S = 10.0
RENDER_TIMEOUT_ENV = "NETCFG_RENDER_TIMEOUT"
# After the limit, the signal comes again this often: a template that
# catches the first one (`except BaseException`) gets the next.
_REARM_S = 0.05


def render_timeout_from_env(default: float = DEFAULT_RENDER_TIMEOUT_S) -> float:
    """$NETCFG_RENDER_TIMEOUT when it is a positive number of seconds, else ``default``."""
    try:
        value = float(os.environ.get(RENDER_TIMEOUT_ENV, ""))
    except ValueError:
        return default
    return value if value > 0 else default


class RenderTimeout(BaseException):
    """Raised into a template that ran past the limit. A BaseException, so a
    template's `except Exception` cannot swallow it."""


class RealInterrupt(BaseException):
    """Ctrl-C (SIGINT) arrived while a template ran: not the template's doing."""


class RenderLimit:
    """A deadline for rendering, enforced with SIGALRM while a template runs.

    Signals reach only the main thread, which is where the CLI and netcfgd
    compile; elsewhere the limit is not enforced (nothing else can stop a
    Python thread). While armed, a SIGINT that would raise KeyboardInterrupt
    is told apart from a template raising one itself.

    Past the deadline the signal comes every 50 ms, and each time it also
    traces the template's frames (``in_template``) so that the next line a
    template runs raises again: a template that catches the first stop inside
    its loop (`except BaseException: pass`) is stopped on that `pass`.
    """

    def __init__(self, seconds: float | None, in_template=lambda frame: False):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds if seconds else None
        self.in_template = in_template
        self.active = False
        self.interrupted = False

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def __enter__(self) -> "RenderLimit":
        self._saved = None
        if threading.current_thread() is not threading.main_thread():
            return self
        old_int = signal.getsignal(signal.SIGINT)
        self._saved = (signal.getsignal(signal.SIGALRM), old_int, sys.gettrace())
        self.active = True
        if self.deadline is not None:
            signal.signal(signal.SIGALRM, self._on_alarm)
            left = max(self.deadline - time.monotonic(), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, _REARM_S)
        if old_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._on_interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        self.active = False   # first: a signal from here on raises nothing
        if self._saved is None:
            return
        if self.deadline is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        alarm, interrupt, trace = self._saved
        signal.signal(signal.SIGALRM, alarm)
        signal.signal(signal.SIGINT, interrupt)
        if sys.gettrace() is not trace:
            sys.settrace(trace)

    def _on_alarm(self, _signum: int, frame: FrameType | None) -> None:
        if not (self.active and self.expired()):
            return
        # A trace function that raises is unset by Python: set again each time.
        sys.settrace(self._trace_call)
        while frame is not None:
            if self.in_template(frame):
                frame.f_trace = self._trace_line
            frame = frame.f_back
        raise RenderTimeout()

    def _trace_call(self, frame: FrameType, _event: str, _arg: object):
        return self._trace_line if self.in_template(frame) else None

    def _trace_line(self, _frame: FrameType, event: str, _arg: object):
        if self.active and event == "line":
            raise RenderTimeout()
        return self._trace_line

    def _on_interrupt(self, _signum: int, _frame: object) -> None:
        self.interrupted = True
        if self.active:
            raise RealInterrupt()
