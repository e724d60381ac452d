"""Render templates through Mako, remembering where each output line came from.

Operators write templates, but the parser only ever sees rendered text. For an
error to point at what the operator wrote, every rendered line has to be mapped
back to a template file and line, including lines produced inside a ``<%def>``
of a library template. Mako's generated Python keeps a map from Python lines
to template lines; we render into a buffer that looks at the Python frame of
each ``write`` and so attributes every chunk of output to the template line
that produced it.

render.py imports this module only for a file that has Mako syntax in it.
"""

from __future__ import annotations

import re
from sys import _getframe
from types import FrameType

from mako import exceptions as mako_exceptions
from mako.lookup import TemplateLookup
from mako.runtime import Context
from mako.template import ModuleInfo, Template

from netcfg.compile.renderlimit import RENDER_TIMEOUT_ENV, RealInterrupt, RenderLimit, RenderTimeout
from netcfg.model.errors import ConfigInvalid, Diagnostic, quote
from netcfg.model.location import SourceLocation

# Main (non-library) templates get URIs in their own scheme, so that the lookup
# can tell them from library templates when resolving a relative
# `<%namespace file="x.tmpl"/>`, and so that their Mako module ids (derived from
# the URI) never collide with a library template's.
_MAIN_URI_PREFIX = "netcfg-main:"

_MAKO_FILEPOS = re.compile(r" (?:in file '.*' )?at line: \d+ char: \d+$", re.DOTALL)
_MAKO_NAME_ERROR = re.compile(r"^'(\w+)' is not defined$")
_EXPRESSION = re.compile(r"\$\{.*?\}|<%.*?%?>")


class _ModuleLines:
    """Python line -> template location for one compiled Mako module.

    Built once per module from the line map Mako embeds in the generated code
    (``full_line_map``); library modules are kept for the MakoRenderer's lifetime.
    """

    __slots__ = (
        "module_dict", "filename", "locs", "literal", "effects", "code_ids", "_source", "_template",
    )

    def __init__(self, template: Template):
        info = _module_info(template)
        code = info.code if info is not None else template.code
        self._template = template
        self.module_dict = template.module.__dict__
        self.filename = template.filename or template.uri
        full = ModuleInfo.get_module_source_metadata(code, full_line_map=True)["full_line_map"]
        code_lines = code.split("\n")
        by_line: dict[int, SourceLocation] = {}
        first = SourceLocation(self.filename, 1)
        # Index 0 is unused (Python lines are 1-based); lines past the map
        # (Mako's trailing metadata) reuse its last entry.
        locs = [first]
        for tline in full:
            tline = tline if tline > 0 else 1
            loc = by_line.get(tline)
            if loc is None:
                loc = by_line[tline] = SourceLocation(self.filename, tline)
            locs.append(loc)
        last = locs[-1]
        locs.extend([last] * (len(code_lines) + 1 - len(locs)))
        self.locs = locs
        # Literal text is written verbatim, so its k-th line is the k-th line
        # after the one the write started on; expression output is not.
        self.literal = frozenset(
            i + 1
            for i, line in enumerate(code_lines)
            if line.lstrip().startswith(("__M_writer('", '__M_writer("'))
        )
        # Python line of a literal write -> its effect on line attribution.
        self.effects: dict[int, tuple] = {}
        # Functions of this module seen writing, so they can be forgotten with it.
        self.code_ids: list[int] = []
        self._source: list[str] | None = None

    def source_lines(self) -> list[str]:
        if self._source is None:
            info = _module_info(self._template)
            try:
                text = info.source if info is not None else self._template.source
            except Exception:  # the file vanished since it was compiled
                text = ""
            self._source = text.split("\n")
        return self._source

    def line_text(self, line: int) -> str:
        lines = self.source_lines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


class _CodeLines:
    """Bytecode offset -> template location for one function of a Mako module.

    ``frame.f_lineno`` has to decode the line table on every access, which would
    cost more than all the rest of a write; ``frame.f_lasti`` is a plain offset,
    so we decode each function's table once, up front.
    """

    __slots__ = ("code", "module", "locs", "pylines")

    def __init__(self, code, module: _ModuleLines):
        self.code = code  # keeps id(code), our key, from being reused
        self.module = module
        size = len(code.co_code) + 2
        pylines = [code.co_firstlineno] * size
        for start, end, line in code.co_lines():
            if line is not None:
                pylines[start:end] = [line] * (end - start)
        top = len(module.locs) - 1
        self.pylines = pylines
        self.locs = [module.locs[min(line, top)] for line in pylines]


def _module_info(template: Template) -> ModuleInfo | None:
    """The ModuleInfo of exactly this template.

    Mako's public ``Template.code`` goes through a process-wide registry keyed by
    module name, which two lookups holding a same-named library template would
    share; ``_mmarker`` is the template's own.
    """
    info = getattr(template, "_mmarker", None)
    if isinstance(info, ModuleInfo) and info.module is template.module:
        return info
    return None


class _Lookup(TemplateLookup):
    """A TemplateLookup over the library dirs that tells the Renderer what it loads.

    A relative ``file=`` in a config file means a library template; a relative
    one inside a library template is relative to that template (Mako's rule).
    """

    def __init__(self, on_load, **kwargs):
        super().__init__(**kwargs)
        self._on_load = on_load

    def adjust_uri(self, uri, relativeto):
        if uri[:1] != "/" and relativeto and relativeto.startswith(_MAIN_URI_PREFIX):
            return "/" + uri
        return super().adjust_uri(uri, relativeto)

    def get_template(self, uri):
        template = super().get_template(uri)
        self._on_load(template)
        return template


class _LineBuffer:
    """Mako output buffer that records the template location of each output line.

    A line is attributed to the first chunk on it that is not only whitespace
    (so the indentation of a stanza body, written by the enclosing template,
    does not win over the def that wrote the attribute), else to its first chunk.
    This is the hot path of rendering: one call per chunk of output.
    """

    __slots__ = (
        "_parts", "origins", "_renderer", "_codes", "_fallback", "_line_loc", "_line_first",
    )

    def __init__(self, renderer: MakoRenderer, fallback: SourceLocation):
        self._parts: list[str] = []
        self.origins: list[SourceLocation] = []
        self._renderer = renderer
        self._codes = renderer._codes
        self._fallback = fallback
        self._line_loc: SourceLocation | None = None
        self._line_first: SourceLocation | None = None

    def write(self, text: str) -> None:
        if not text:
            return
        frame = _getframe(1)
        code = self._codes.get(id(frame.f_code))
        if code is None:
            frame, code = self._renderer._code_lines(frame)
            if code is None:
                self._write_other(text, self._fallback)
                return
        lasti = frame.f_lasti
        loc = code.locs[lasti]
        if "\n" not in text:
            self._parts.append(text)
            if self._line_loc is None:
                if self._line_first is None:
                    self._line_first = loc
                if not text.isspace():
                    self._line_loc = loc
            return
        module = code.module
        pyline = code.pylines[lasti]
        effect = module.effects.get(pyline)
        if effect is None:
            if pyline not in module.literal:
                self._write_other(text, loc)
                return
            effect = module.effects[pyline] = _literal_effect(text, loc)
        self._parts.append(text)
        head_blank, middle, tail_first, tail_loc = effect
        line_loc = self._line_loc
        if line_loc is None:
            line_loc = (self._line_first or loc) if head_blank else loc
        self.origins.append(line_loc)
        if middle:
            self.origins.extend(middle)
        self._line_first = tail_first
        self._line_loc = tail_loc

    def _write_other(self, text: str, loc: SourceLocation) -> None:
        """Output that is not literal template text: all of its lines come from ``loc``."""
        self._parts.append(text)
        segments = text.split("\n")
        if len(segments) == 1:
            if self._line_first is None:
                self._line_first = loc
            if self._line_loc is None and not text.isspace():
                self._line_loc = loc
            return
        head = segments[0]
        line_loc = self._line_loc
        if line_loc is None:
            line_loc = loc if head and not head.isspace() else (self._line_first or loc)
        self.origins.append(line_loc)
        self.origins.extend([loc] * (len(segments) - 2))
        tail = segments[-1]
        self._line_first = loc if tail else None
        self._line_loc = loc if tail and not tail.isspace() else None

    def result(self) -> tuple[str, list[SourceLocation]]:
        text = "".join(self._parts)
        origins = self.origins
        if self._line_first is not None:  # a last line without a newline
            origins.append(self._line_loc or self._line_first)
        return text, origins


def _literal_effect(text: str, loc: SourceLocation):
    """What writing literal ``text`` (which starts on template line ``loc``) does to
    the line attribution, computed once per write site: a literal's k-th line is
    the k-th template line after its first.

    Returns (first segment is blank, locations of the lines it completes after
    the current one, location of the line it leaves open, the same if that
    open part is not blank).
    """
    segments = text.split("\n")
    file, line = loc
    count = len(segments)
    middle = tuple(SourceLocation(file, line + k) for k in range(1, count - 1))
    head, tail = segments[0], segments[-1]
    tail_loc = SourceLocation(file, line + count - 1)
    return (
        not head or head.isspace(),
        middle,
        tail_loc if tail else None,
        tail_loc if tail and not tail.isspace() else None,
    )


class MakoRenderer:
    """The Mako half of a Renderer (render.py): templates rendered with the
    library and the operator's variables, each output line mapped back.

    One is meant to serve a whole compile: library templates are compiled once
    and their line maps kept for every file that uses them.
    """

    def __init__(self, lib_dirs: list[str], variables: dict, limit: RenderLimit):
        self.lib_dirs = list(lib_dirs)
        self.variables = dict(variables)
        self.limit = limit   # the compile's one budget, shared with its other files
        # id(module globals) -> line map. Each entry holds that dict, so an id
        # cannot be reused while its entry exists.
        self._modules: dict[int, _ModuleLines] = {}
        # id(function code) -> offsets map, for the functions seen writing.
        self._codes: dict[int, _CodeLines] = {}
        self._lookup = _Lookup(
            self._register,
            directories=self.lib_dirs,
            strict_undefined=True,
        )

    def render(self, name: str, text: str) -> tuple[str, list[SourceLocation]]:
        """Render the template ``text`` read from the file ``name``: the output and,
        for each of its lines, the template location that wrote it."""
        fallback = SourceLocation(name, 1)
        template = None
        limit = self.limit
        try:
            if limit.expired():
                raise RenderTimeout()
            with limit:
                template = Template(
                    text=text,
                    filename=name,
                    uri=_MAIN_URI_PREFIX + name,
                    lookup=self._lookup,
                    strict_undefined=True,
                )
                self._register(template)
                buffer = _LineBuffer(self, fallback)
                # Variables go in twice: into the Context (plain ${name} lookups) and
                # as keyword arguments, which is how `<%page args="vlans=4094"/>`
                # receives them; without the latter, page args keep their defaults.
                template.render_context(Context(buffer, **self.variables), **self.variables)
            if limit.interrupted:
                raise RealInterrupt()   # a template swallowed the operator's Ctrl-C
        except (mako_exceptions.SyntaxException, mako_exceptions.CompileException) as e:
            raise ConfigInvalid([self._compile_error(e, name)]) from None
        except RealInterrupt:
            raise KeyboardInterrupt from None
        except BaseException as e:   # noqa: BLE001 - whatever a template raises is its error
            if limit.interrupted:
                raise KeyboardInterrupt from None   # Ctrl-C, even if a template caught it
            raise ConfigInvalid([self._runtime_error(e, fallback)]) from None
        finally:
            if template is not None:
                # Main templates are per call; only library ones are reused.
                self._forget(template)
        return buffer.result()

    def is_template_frame(self, frame: FrameType) -> bool:
        return id(frame.f_globals) in self._modules

    def _register(self, template: Template) -> None:
        key = id(template.module.__dict__)
        if key not in self._modules:
            self._modules[key] = _ModuleLines(template)

    def _forget(self, template: Template) -> None:
        module = self._modules.pop(id(template.module.__dict__), None)
        if module is not None:
            for code_id in module.code_ids:
                self._codes.pop(code_id, None)

    def _code_lines(self, frame):
        """The nearest frame (this one or a caller) running a known template's code.

        A write from a template function seen for the first time, or from a
        helper that a template called, lands here; the first kind is cached.
        """
        while frame is not None:
            code = self._codes.get(id(frame.f_code))
            if code is not None:
                return frame, code
            module = self._modules.get(id(frame.f_globals))
            if module is not None:
                code = self._codes[id(frame.f_code)] = _CodeLines(frame.f_code, module)
                module.code_ids.append(id(frame.f_code))
                return frame, code
            frame = frame.f_back
        return None, None

    def _compile_error(self, e: Exception, name: str) -> Diagnostic:
        file = e.filename or name
        lines = (e.source or "").split("\n") if isinstance(e.source, str) else []
        text = lines[e.lineno - 1].strip() if 0 < e.lineno <= len(lines) else ""
        message = _MAKO_FILEPOS.sub("", str(e))
        return _diagnostic(SourceLocation(file, max(e.lineno, 1)), type(e).__name__, message, text)

    def _runtime_error(self, e: BaseException, fallback: SourceLocation) -> Diagnostic:
        """Locate an exception raised while rendering at the innermost template line."""
        where = None
        tb = e.__traceback__
        while tb is not None:
            module = self._modules.get(id(tb.tb_frame.f_globals))
            if module is not None:
                where = (module, module.locs[min(tb.tb_lineno, len(module.locs) - 1)].line)
            tb = tb.tb_next
        kind = type(e).__name__
        message = str(e)
        if isinstance(e, RenderTimeout):
            kind = "timeout"
            message = (f"rendering took longer than {self.limit.seconds:g} s (--render-timeout, "
                       f"${RENDER_TIMEOUT_ENV}): an endless loop? it was here")
        elif isinstance(e, SystemExit):
            code = "" if e.code is None else quote(e.code)
            message = (f"the template called sys.exit({code}); a template can only write "
                       f"text or raise an error")
        elif not isinstance(e, Exception):
            message = (f"{message + '; ' if message else ''}a template must not raise a "
                       f"BaseException other than an error")
        undefined = _MAKO_NAME_ERROR.match(message) if isinstance(e, NameError) else None
        if undefined:
            message = f"name {message}"  # Python's own wording
        if isinstance(e, mako_exceptions.TemplateLookupException):
            message += f" (searched: {', '.join(self.lib_dirs) or 'no template library'})"
        if where is None:
            return _diagnostic(fallback, kind, message, "")
        module, line = where
        if undefined:
            # strict_undefined raises where Mako fetches names, at the top of
            # the body or def, not where the name is used: find the use.
            line = _first_use(module.source_lines(), undefined.group(1), line)
        loc = SourceLocation(module.filename, line)
        line_text = module.line_text(line)
        if line_text.lstrip().startswith("#") and not line_text.lstrip().startswith("##"):
            # ifupdown2's docs/examples keep usage notes in such lines; its
            # own renderer fails on them the same way.
            message += ("; this line is a comment to interfaces(5) but not to Mako, which "
                        "runs the tags and ${...} in it: a Mako comment starts with '##'")
        return _diagnostic(loc, kind, message, line_text)


def _diagnostic(loc: SourceLocation, kind: str, message: str, line_text: str) -> Diagnostic:
    text = f"template error: {kind}: {message}"
    if line_text:
        text += f"\n    {line_text}"
    return Diagnostic(loc, text)


def _first_use(lines: list[str], name: str, start: int) -> int:
    """The first line at or after ``start`` whose Mako code mentions ``name``.

    Prefers code (``${...}``, ``<% %>``, ``%`` lines) over literal text, which
    may contain the same word; falls back to ``start``.
    """
    word = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?!\w)")
    start = max(start, 1)
    literal_hit = None
    for lineno in range(start, len(lines) + 1):
        line = lines[lineno - 1]
        stripped = line.lstrip()
        if stripped.startswith("##") or not word.search(line):
            continue
        if stripped.startswith("%") and not stripped.startswith("%%"):
            return lineno
        if any(word.search(code) for code in _EXPRESSION.findall(line)):
            return lineno
        if literal_hit is None:
            literal_hit = lineno
    return literal_hit if literal_hit is not None else start
