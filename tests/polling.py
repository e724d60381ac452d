"""Waiting for a condition, shared by the kernel, fleet and VM tiers (tests/conftest.py
puts this directory on the import path)."""

from __future__ import annotations

import time
from typing import Any, Callable


def poll(predicate: Callable[[], Any], timeout: float, what: str, step: float,
         fail: Callable[[str], Any] = TimeoutError) -> Any:
    """predicate()'s first truthy value, asked every ``step`` s; after ``timeout`` s,
    raises ``fail`` (an exception class, or pytest.fail) saying ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)
