"""Dirty keys and the debounce that turns an event storm into few passes.

An event only marks its key dirty (STYLE.md 6). The pass starts once the
stream has been quiet for ``debounce`` seconds, or ``cap`` seconds after the
first key of the batch was marked, whichever is first: a lone change is
repaired after ``debounce``, a storm is taken in slices. While a storm goes
on (a pass started by the cap, not by quiet) the cap doubles, up to
``cap_max``, so a storm of any length costs a few passes, not one per
``cap``; the first quiet resets it. A storm also pauses: a script slowed
by a busy machine goes quiet for tens of milliseconds between bursts, and
each pause would end a window. So a window that ended in a storm, or held
``storm_marks`` marks or more, doubles the quiet time too (up to
``quiet_max``); a window of a few marks ended by quiet resets both. Pure:
the caller passes the clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DirtySet:
    debounce: float = 0.03
    cap: float = 1.0
    cap_max: float = 8.0
    storm_cap: float | None = None   # the cap in effect while a storm goes on
    quiet_max: float = 0.25
    storm_quiet: float | None = None  # the quiet time in effect while a storm goes on
    storm_marks: int = 200
    namespaces: set[str] = field(default_factory=set)
    # Names of the objects seen per namespace (for the log; bounded).
    objects: dict[str, set[str]] = field(default_factory=dict)
    first_at: float | None = None
    last_at: float | None = None
    marks: int = 0
    window_marks: int = 0
    OBJECTS_KEPT = 16

    def mark(self, netns: str, now: float, obj: str = "") -> None:
        if self.first_at is None:
            self.first_at = now
        self.last_at = now
        self.namespaces.add(netns)
        self.marks += 1
        self.window_marks += 1
        if obj:
            kept = self.objects.setdefault(netns, set())
            if len(kept) < self.OBJECTS_KEPT:
                kept.add(obj)

    def deadline(self) -> float | None:
        """When the pending keys are due (None: nothing pending)."""
        if self.first_at is None or self.last_at is None:
            return None
        return min(self.last_at + self.quiet(), self.first_at + (self.storm_cap or self.cap))

    def quiet(self) -> float:
        """How long the stream must be quiet to end the window now."""
        return self.storm_quiet or self.debounce

    def due(self, now: float) -> bool:
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def take(self, now: float | None = None) -> tuple[set[str], dict[str, set[str]]]:
        """The dirty namespaces (and sample objects), leaving the set empty.
        With ``now``, whether the stream was still going on (the cap, not
        quiet, ended the window) sets the next window's cap."""
        if now is not None and self.last_at is not None:
            storming = now < self.last_at + self.quiet()
            if storming:
                self.storm_cap = min((self.storm_cap or self.cap) * 2, self.cap_max)
            if storming or self.window_marks >= self.storm_marks:
                self.storm_quiet = min(self.quiet() * 2, self.quiet_max)
            else:
                self.storm_cap = self.storm_quiet = None
        namespaces, objects = self.namespaces, self.objects
        self.namespaces, self.objects = set(), {}
        self.first_at = self.last_at = None
        self.window_marks = 0
        return namespaces, objects

    def __bool__(self) -> bool:
        return bool(self.namespaces)
