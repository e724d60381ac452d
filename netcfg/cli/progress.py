"""Progress of a long apply: a bar with a rate on a terminal, plain lines
otherwise (logs, journald), nothing for small applies.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

# Below this many operations an apply is over before a bar means anything.
QUIET_BELOW = 100
BAR = 30


class Progress:
    """Called after each batch as (batches done, batches, ops done, ops)."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.drawn = False

    def __call__(self, batch: int, batches: int, done: int, total: int) -> None:
        if total < QUIET_BELOW:
            return
        rate = done / max(time.monotonic() - self.started, 1e-6)
        if self.tty:
            filled = BAR * done // total
            self.stream.write(f"\rapplying [{'#' * filled}{'.' * (BAR - filled)}] "
                              f"{done}/{total} operations, batch {batch}/{batches}, "
                              f"{rate:.0f}/s")
            self.drawn = True
            if done == total:
                self.finish()
        else:
            self.stream.write(f"netcfg: batch {batch}/{batches} done: {done}/{total} "
                              f"operations, {rate:.0f}/s\n")
        self.stream.flush()

    def finish(self) -> None:
        """End the bar's line (also when an apply stops halfway)."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
