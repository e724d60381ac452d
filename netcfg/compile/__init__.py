"""Compile a config directory (or file, or stdin) into a validated model.

    render (Mako) -> parse (stanzas) -> build (typed objects) -> validate

The pipeline itself is in netcfg.compile.pipeline; its public names are
re-exported here lazily, so that importing a small module of this package
(``netcfg.compile.location``, which netcfg.errors needs) does not load Mako
and the whole compiler, and cannot make an import cycle.
"""

from __future__ import annotations

_PUBLIC = ("ConfigSource", "Compiled", "compile_config", "render_config", "make_renderer",
           "load_variables", "shipped_lib_dir", "read_stdin", "is_json",
           "DEFAULT_CONFIG", "STDIN", "TEMPLATE_GLOB", "VARS_FILE")

__all__ = list(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        from netcfg.compile import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'netcfg.compile' has no attribute {name!r}")
