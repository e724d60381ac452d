"""The compile pipeline: a config directory (or file, or stdin) to a validated model.

    render (Mako) -> parse (stanzas) -> build (typed objects) -> validate

Pure apart from reading the config files: never imports pyroute2 (a unit test
enforces it). ``compile_config`` raises ConfigInvalid with every error found.
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from netcfg.compile.build import build_objects
from netcfg.compile.jsonform import load_json, model_from_json
from netcfg.compile.parser import parse
from netcfg.compile.readfile import read_config_file
from netcfg.compile.render import DEFAULT_RENDER_TIMEOUT_S, RenderedSource, Renderer
from netcfg.compile.runtime_choice import choose_at_compile
from netcfg.compile.sources import SourceLoader
from netcfg.compile.syntax import ParsedConfig
from netcfg.compile.unsupported import strict_errors
from netcfg.compile.trust import untrusted_directory
from netcfg.compile.variables import variable_problems
from netcfg.compile.validate import finish_model
from netcfg.data import templates_dir
from netcfg.model.errors import ConfigInvalid, Diagnostic, Report
from netcfg.model.gcpause import gc_paused
from netcfg.model.location import SourceLocation
from netcfg.model.model import Model
from netcfg.model.names import check_interface_names

DEFAULT_CONFIG = "/etc/netcfg"
TEMPLATE_GLOB = "*.tmpl"
VARS_FILE = "vars.json"
STDIN = "-"
# ifupdown2's template_lookuppath (ifupdown2.conf): files written for it
# include templates from there (docs/compat.md). The default of --template-path.
IFUPDOWN2_TEMPLATES = "/etc/network/ifupdown2/templates"
TEMPLATE_PATH_ENV = "NETCFG_TEMPLATE_PATH"


@dataclass
class ConfigSource:
    """Where the config comes from and what the templates are given."""

    path: str = DEFAULT_CONFIG
    variables: dict[str, Any] = field(default_factory=dict)  # --set, over vars.json
    stdin_text: str | None = None  # the text when path is "-"
    render_timeout: float | None = DEFAULT_RENDER_TIMEOUT_S  # seconds for all templates
    # ifupdown2's template_lookuppath: where `<%namespace file="/NAME"/>` of a file
    # written for ifupdown2 finds NAME (--template-path, $NETCFG_TEMPLATE_PATH).
    template_path: tuple[str, ...] = field(default_factory=lambda: (IFUPDOWN2_TEMPLATES,))
    # --strict: a line that does nothing on this host (another program's
    # setting, compile/unsupported.py) is an error instead of a warning.
    strict: bool = False
    # `ifup NAME...` (netcfg/ifupdown/): names brought up besides the auto and
    # allow-CLASS ones, whose ifupdown mappings run (compile/runtime_choice.py).
    brought_up: tuple[str, ...] = ()

    @property
    def directory(self) -> str:
        if self.path == STDIN:
            return os.getcwd()
        return self.path if os.path.isdir(self.path) else os.path.dirname(self.path) or "."


@dataclass
class Compiled:
    sources: list[RenderedSource]
    model: Model
    warnings: list[Diagnostic]
    # The stanzas as written (None for a JSON model): what ifquery prints and
    # which `allow-CLASS` lines name an interface (netcfg/ifupdown/).
    parsed: ParsedConfig | None = None


def shipped_lib_dir() -> str:
    return str(templates_dir() / "lib")


def load_variables(source: ConfigSource) -> dict[str, Any]:
    """vars.json in the config directory, overridden by --set; a value with
    a control character in it is refused (netcfg/compile/variables.py)."""
    variables: dict[str, Any] = {}
    problems: list[Diagnostic] = []
    path = os.path.join(source.directory, VARS_FILE)
    if os.path.isdir(source.path) and os.path.exists(path):
        report = Report()
        text = _read(path)
        loaded = load_json(text, path, report)
        report.raise_if_errors()
        if not isinstance(loaded, dict):
            raise ConfigInvalid([Diagnostic(SourceLocation(path, 1),
                                            "expected a JSON object of template variables")])
        problems += variable_problems(
            {k: v for k, v in loaded.items() if k not in source.variables},
            SourceLocation(path, 1), text)
        variables.update(loaded)
    problems += variable_problems(source.variables, None)
    if problems:
        raise ConfigInvalid(problems)
    variables.update(source.variables)
    return variables


def template_path_from_env(default: tuple[str, ...] = (IFUPDOWN2_TEMPLATES,)) -> tuple[str, ...]:
    """$NETCFG_TEMPLATE_PATH split at ':' (as ifupdown2 splits template_lookuppath),
    else ``default``."""
    return parse_template_path(os.environ.get(TEMPLATE_PATH_ENV, "")) or default


def parse_template_path(text: str) -> tuple[str, ...]:
    """'DIR:DIR...' to its directories, empty parts left out."""
    return tuple(part for part in text.split(":") if part)


def make_renderer(source: ConfigSource) -> Renderer:
    lib_dirs = [shipped_lib_dir()]
    # The template path's directories in their order, those that exist, as
    # ifupdown2's TemplateLookup searches them; after the config's lib/.
    lib_dirs[0:0] = [d for d in dict.fromkeys(source.template_path) if os.path.isdir(d)]
    local_lib = os.path.join(source.directory, "lib")
    if os.path.isdir(local_lib):
        lib_dirs.insert(0, local_lib)  # the operator's defs win over shipped ones
    # Templates there run as root as much as the config does (trust.py); the
    # shipped library is the package's own.
    refused = [Diagnostic(SourceLocation(d, 0), f"template directory {d} is refused: {why}")
               for d in lib_dirs[:-1] for why in [untrusted_directory(d)] if why]
    if refused:
        raise ConfigInvalid(refused)
    return Renderer(lib_dirs, load_variables(source), source.render_timeout)


def render_config(source: ConfigSource, renderer: Renderer | None = None) -> list[RenderedSource]:
    """Render every template of the config, sorted by file name."""
    renderer = renderer or make_renderer(source)
    if source.path == STDIN:
        return [renderer.render_text("<stdin>", source.stdin_text or "")]
    if os.path.isdir(source.path):
        files = sorted(glob.glob(os.path.join(source.path, TEMPLATE_GLOB)))
        if not files:
            raise ConfigInvalid([Diagnostic(SourceLocation(source.path, 0),
                                            f"no {TEMPLATE_GLOB} files in {source.path}")])
        return [renderer.render_file(f) for f in files]
    if not os.path.exists(source.path):
        raise ConfigInvalid([Diagnostic(SourceLocation(source.path, 0),
                                        "no such file or directory")])
    return [renderer.render_file(source.path)]


def is_json(source: ConfigSource) -> bool:
    if source.path == STDIN:
        return (source.stdin_text or "").lstrip().startswith("{")
    return source.path.endswith(".json") and os.path.isfile(source.path)


def compile_config(source: ConfigSource, *, state: bool = False) -> Compiled:
    """The validated model of a config, or ConfigInvalid listing every error.
    ``state``: the source describes what a kernel has (`plan --current`), not a
    request, so what `check` refuses of a request is not checked."""
    with gc_paused():
        return _compile(source, state)


def _compile(source: ConfigSource, state: bool = False) -> Compiled:
    report = Report()
    if is_json(source):
        sources: list[RenderedSource] = []
        parsed = None
        text = source.stdin_text if source.path == STDIN else _read(source.path)
        model = model_from_json(text or "", "<stdin>" if source.path == STDIN else source.path,
                                report)
    else:
        renderer = make_renderer(source)
        sources = render_config(source, renderer)

        # `source` lines: what they name must be there, regular files, and
        # all of them within the compile's bounds (netcfg/compile/sources.py).
        parsed = parse(sources, SourceLoader(renderer), report)
        # ifupdown's mappings and patterns, chosen on this host now, as `ifup -n`.
        choose_at_compile(parsed, report, brought_up=source.brought_up)
        model = build_objects(parsed, report)
    finish_model(model, report, requests=not state)
    check_interface_names(model, report)   # the implied ones too: all are known now
    if source.strict:
        report.diagnostics = strict_errors(report.diagnostics)
    report.raise_if_errors()
    return Compiled(sources, model, [d for d in report.sorted() if d.severity == "warning"],
                    parsed)


def _read(path: str) -> str:
    return read_config_file(path)


def read_stdin() -> str:
    return sys.stdin.read()
