"""What the pure commands (netcfg.cli.main) and the kernel ones
(netcfg.cli.kernel_commands) share: reading the config options, printing JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from netcfg.compile.pipeline import (IFUPDOWN2_TEMPLATES, STDIN, TEMPLATE_PATH_ENV,
                                     ConfigSource, parse_template_path, read_stdin,
                                     template_path_from_env)
from netcfg.model.errors import UsageError


def print_json(value: Any) -> None:
    """Indented for a person at a terminal; compact for programs, where
    json's C encoder is several times faster on big plans."""
    if sys.stdout.isatty():
        print(json.dumps(value, indent=2))
    else:
        print(json.dumps(value, separators=(",", ":")))


def add_template_path_option(parser: argparse.ArgumentParser) -> None:
    """--template-path, the same for netcfg and netcfgd (both compile templates)."""
    parser.add_argument("--template-path", metavar="DIR[:DIR...]", type=parse_template_path,
                        default=template_path_from_env(),
                        help="where <%%namespace file=...> finds templates after the config "
                             "directory's lib/, as ifupdown2's template_lookuppath (default: "
                             f"${TEMPLATE_PATH_ENV} or {IFUPDOWN2_TEMPLATES})")


def config_source(args: argparse.Namespace) -> ConfigSource:
    variables: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--set expects KEY=VALUE with KEY a Python identifier, got '{item}'")
        try:
            variables[key] = json.loads(value)
        except json.JSONDecodeError:
            variables[key] = value
    stdin_text = read_stdin() if args.config == STDIN else None
    return ConfigSource(path=args.config, variables=variables, stdin_text=stdin_text,
                        render_timeout=args.render_timeout,
                        template_path=tuple(args.template_path),
                        strict=getattr(args, "strict", False))
