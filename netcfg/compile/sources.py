"""Reading config files, and following `source` lines, within bounds
(issue 24, M6/M17).

A config file is a regular file (netcfg/compile/readfile.py): anything else
is refused at the `source` line that named it, as is a file that is not there:
ifupdown2 warns "cannot find source file" and goes on, and netcfg would
then delete what that file declared, so here it is an error. A glob that
matches nothing stays fine (interfaces.d/* on a host with no files in it).

`source` lines can fan out: 43 files that each source the others are read
2^43 times through the chain, which only MAX_SOURCE_DEPTH in the parser
bounded. So one compile reads at most MAX_SOURCED_FILES files through
`source` and MAX_SOURCED_BYTES bytes, and stops at the --render-timeout
deadline, each with an error at the `source` line that went over.
"""

from __future__ import annotations

import glob
import os

from netcfg.compile.readfile import read_config_file
from netcfg.compile.render import RenderedSource, Renderer
from netcfg.model.errors import ConfigInvalid, Diagnostic
from netcfg.model.location import SourceLocation

# Far above the biggest real configs (a few MB in a handful of files), far
# below harm.
MAX_SOURCED_FILES = 10_000
MAX_SOURCED_BYTES = 512 << 20


class SourceLoader:
    """The parser's ``load(pattern, loc)`` for one compile: the files a
    `source` line names, rendered, within the compile's bounds."""

    def __init__(self, renderer: Renderer, max_files: int | None = None,
                 max_bytes: int | None = None):
        self.renderer = renderer
        self.max_files = MAX_SOURCED_FILES if max_files is None else max_files
        self.files_left = self.max_files
        self.bytes_left = MAX_SOURCED_BYTES if max_bytes is None else max_bytes
        # Directories above sourced files found root's and closed to others
        # (trust.py): interfaces.d/'s 2000 files judge /etc once, not 2000 times.
        self.trusted_dirs: set[str] = set()

    def __call__(self, pattern: str, loc: SourceLocation) -> list[RenderedSource]:
        if not glob.has_magic(pattern):
            # A name, not a glob: it must name a file (a dangling link is
            # listed by lexists, and refused by the read).
            paths = [pattern]
        else:
            paths = sorted(glob.glob(pattern))
        found = []
        for path in paths:
            self._within_bounds(path, loc)
            if glob.has_magic(pattern) and os.path.isdir(path):
                continue    # interfaces.d/* may hold a directory: not a file it names
            text = read_config_file(path, loc, self.bytes_left, self.trusted_dirs)
            self.files_left -= 1
            self.bytes_left -= len(text.encode("utf-8"))
            found.append(self.renderer.render_text(path, text))
        return found

    def _within_bounds(self, path: str, loc: SourceLocation) -> None:
        if self.files_left <= 0:
            raise ConfigInvalid([Diagnostic(loc, (
                f"source {path}: more than {self.max_files} files read through 'source' "
                f"lines in one config (files sourced from many places are read once per "
                f"place): is a file sourced by every other?"))])
        if self.renderer.limit.expired():
            raise ConfigInvalid([Diagnostic(loc, (
                f"source {path}: reading the config took longer than "
                f"{self.renderer.limit.seconds:g} s (--render-timeout); too many files "
                f"sourced?"))])
