"""Compile a config directory (or file, or stdin) into a validated model.

    render (Mako) -> parse (stanzas) -> build (typed objects) -> validate

The pipeline and its entry points (``compile_config``, ``ConfigSource``) are in
netcfg.compile.pipeline; this package re-exports nothing, so importing a small
module of it (``emit``, ``jsonform``) does not load Mako.
"""
