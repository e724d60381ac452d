"""Source locations: where in the operator's files a thing was written.

Every object and attribute of the model carries one, mapped back through the
Mako template to ``template-file:line``, so that errors point at what the
operator wrote rather than at rendered text they never saw.
"""

from __future__ import annotations

from typing import NamedTuple


class SourceLocation(NamedTuple):
    """A file and a 1-based line number. Sorts by file, then line."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# For objects that no file declared: implied ports, veth peers, defaults.
NOWHERE = SourceLocation("<implied>", 0)
