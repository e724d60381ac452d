"""Render config files: plain interfaces(5) text as it is, templates through Mako.

Operators write templates, but the parser only ever sees rendered text, with
each line's origin (file, line) so an error points at what the operator wrote
(mako_render.py maps lines written inside library defs back too).

Files with no Mako syntax at all skip Mako: that is faster, the mapping is
exact (the identity) without any bookkeeping, and Mako is not even imported
(a quarter of an `ifquery -a -c` on Proxmox's 10-second poll was that import).
Rendering runs under a time limit; what a template raises becomes an error at
its line (renderlimit.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

from netcfg.compile.readfile import read_config_file
from netcfg.compile.renderlimit import DEFAULT_RENDER_TIMEOUT_S, RenderLimit
from netcfg.model.location import SourceLocation

if TYPE_CHECKING:
    from netcfg.compile.mako_render import MakoRenderer

# Mako control lines (`% for`) and comments (`## ...`) may be indented.
_MAKO_LINE = re.compile(r"^[ \t]*(?:%|##)", re.MULTILINE)


def uses_mako(text: str) -> bool:
    """Whether ``text`` contains any Mako syntax, i.e. must be rendered.

    A plain ifupdown2 file has none: its comments start with a single ``#``,
    and nothing in interfaces(5) starts a line with ``%``.
    """
    if "${" in text or "<%" in text or "</%" in text:
        return True
    if "%" not in text and "##" not in text:
        return False
    return _MAKO_LINE.search(text) is not None


@dataclass(slots=True)
class RenderedSource:
    """The rendered text of one config file and where each of its lines came from.

    ``origins[i]`` is the template location of rendered line ``i + 1``; ``None``
    means the file was not a template and line N is ``name:N``.
    """

    name: str
    text: str
    origins: list[SourceLocation] | None = None

    def location(self, lineno: int) -> SourceLocation:
        """Where the operator wrote rendered line ``lineno`` (1-based)."""
        origins = self.origins
        if origins is None:
            return SourceLocation(self.name, lineno)
        if 0 < lineno <= len(origins):
            return origins[lineno - 1]
        # Past the end (e.g. a line number from an EOF message): the last
        # known origin is the best we have.
        return origins[-1] if origins else SourceLocation(self.name, lineno)


class Renderer:
    """Renders config files with the template library and the operator's variables.

    One Renderer is meant to serve a whole compile (one time budget for every
    file, sourced ones too; library templates compiled once).
    """

    def __init__(self, lib_dirs: list[str], variables: dict,
                 timeout: float | None = DEFAULT_RENDER_TIMEOUT_S):
        self.lib_dirs = list(lib_dirs)
        self.variables = dict(variables)
        self.limit = RenderLimit(timeout, self._is_template_frame)
        self._mako: MakoRenderer | None = None   # made for the first template

    def render_file(self, path: str) -> RenderedSource:
        """Render the regular file ``path`` (a FIFO, a device or a directory is
        refused: readfile.py)."""
        return self.render_text(path, read_config_file(path))

    def render_text(self, name: str, text: str) -> RenderedSource:
        """Render ``text`` as if read from the file ``name`` (e.g. ``<stdin>``)."""
        if not uses_mako(text):
            return RenderedSource(name, text, None)
        if self._mako is None:
            from netcfg.compile.mako_render import MakoRenderer   # start-up: see the docstring
            self._mako = MakoRenderer(self.lib_dirs, self.variables, self.limit)
        out, origins = self._mako.render(name, text)
        return RenderedSource(name, out, origins)

    def _is_template_frame(self, frame: FrameType) -> bool:
        return self._mako is not None and self._mako.is_template_frame(frame)
