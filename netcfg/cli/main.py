"""The `netcfg` command line.

Every failure the operator can cause ends in a message and a documented exit
code, never a traceback (``--debug`` shows one for internal errors).
"""

from __future__ import annotations

import os
import signal


def _interrupted_while_starting(_signum: int, _frame: object) -> None:
    os.write(2, b"netcfg: interrupted\n")
    os._exit(130)


# Ctrl-C in the first ~150 ms lands in the imports below, where no handler of
# main() can catch it: one line and exit 130 instead of a traceback. main()
# puts Python's own handler back before any work starts.
if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import argparse  # noqa: E402 - after the handler above, on purpose
import json
import re
import sys
import traceback
from typing import Sequence

from netcfg import __version__
from netcfg.cli.common import add_template_path_option, config_source, print_json
from netcfg.cli.kernel_commands import add_commands
from netcfg.compile.pipeline import DEFAULT_CONFIG, ConfigSource, compile_config, render_config
from netcfg.compile.unsupported import inert_count, inert_summary, strict_errors
from netcfg.compile.renderlimit import (DEFAULT_RENDER_TIMEOUT_S, RENDER_TIMEOUT_ENV,
                                        render_timeout_from_env)
from netcfg.model.errors import (EXIT_INVALID_CONFIG, EXIT_OK, EXIT_USAGE, ConfigInvalid,
                                 NetcfgError, quote)
from netcfg.model.model import Model

_LOCATED = re.compile(r"\S+:\d+: error: ")

EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in netcfg, not in the config

EPILOG = """\
examples:
  netcfg check                          validate /etc/netcfg/*.tmpl
  netcfg check --strict -c /etc/network/interfaces
                                        refuse lines that do nothing on this host
  netcfg apply --dry-run                what apply would change on this host
  netcfg apply --confirm 60             revert unless `netcfg confirm` comes within 60 s
  netcfg apply --netns t1               only namespace t1 (and what it is connected to)
  netcfg apply br0                      only br0, its ports and what they sit on
  netcfg down --netns t1                delete netcfg's devices in t1, and t1 if netcfg made it
  netcfg show -o json                   running state, in the JSON model form
  netcfg render -c templates/examples  print the rendered stanzas
  netcfg plan -c site/ --set vlans=100  what apply would do, batch by batch
  netcfg plan --json | jq .lowering     what lightweight lowering saved
  netcfg syntax-help bridge-vids        one attribute, from the schema

exit codes:
  0  success
  1  the config is invalid (every error is listed as FILE:LINE: error: MESSAGE);
     query --check: the kernel differs; confirm: no apply is waiting for it
  2  usage error (bad command line; a kernel command run without root)
  3  apply or down failed and was reverted; apply --confirm got no confirmation
     in time (or was interrupted) and reverted
  4  apply or down failed and the revert failed too
  70 internal error (a bug: please report it with --debug output)
"""


def _config_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-c", "--config", metavar="PATH",
                        default=os.environ.get("NETCFG_CONFIG", DEFAULT_CONFIG),
                        help="config directory (its *.tmpl), a single file, a .json model, or - "
                             "for stdin (default: $NETCFG_CONFIG or /etc/netcfg)")
    common.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                        help="template variable (VALUE is parsed as JSON when it can be); "
                             "overrides vars.json; repeatable")
    common.add_argument("--render-timeout", metavar="SECONDS", type=_positive_seconds,
                        default=render_timeout_from_env(),
                        help="stop templates that render for longer (default: "
                             f"${RENDER_TIMEOUT_ENV} or {DEFAULT_RENDER_TIMEOUT_S:g})")
    add_template_path_option(common)
    return common


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, "
                                         f"got {quote(text)}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="netcfg", description="Declarative network configuration for multi-tenant hosts.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"netcfg {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    config = _config_options()

    p = sub.add_parser("render", parents=[config], help="print the rendered stanzas")
    p.set_defaults(run=cmd_render)

    p = sub.add_parser("check", parents=[config], help="validate the config")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _add_strict_option(p)
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("plan", parents=[config],
                       help="show the operations apply would run, in batches")
    p.add_argument("--lower", choices=("auto", "off"), default="auto",
                   help="lightweight lowering (default auto; files can say "
                        "'# netcfg: lower=off')")
    p.add_argument("--current", metavar="FILE",
                   help="current state as a JSON model (default: empty)")
    _add_strict_option(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the plan as JSON")
    out.add_argument("--dot", action="store_true", help="print the dependency graph for graphviz")
    p.set_defaults(run=cmd_plan)

    add_commands(sub, config)

    p = sub.add_parser("syntax-help", help="describe attributes (from the schemas)")
    p.add_argument("attribute", nargs="?", help="one attribute; default: all, by kind")
    p.set_defaults(run=cmd_syntax_help)

    p = sub.add_parser("schema", help="print the JSON Schema of the JSON model form")
    p.set_defaults(run=cmd_schema)
    return parser


def _add_strict_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true",
                        help="refuse lines that do nothing on this host (another program's "
                             "settings, accepted with a warning otherwise: docs/compat.md)")


def _compile_request(args: argparse.Namespace):
    """The config compiled; with --strict, its inert-line warnings are errors."""
    strict = getattr(args, "strict", False)
    try:
        compiled = compile_config(config_source(args))
    except ConfigInvalid as e:
        raise ConfigInvalid(strict_errors(e.diagnostics) if strict else e.diagnostics) from None
    if strict:
        diagnostics = strict_errors(compiled.warnings)
        if any(d.severity == "error" for d in diagnostics):
            raise ConfigInvalid(diagnostics)
    return compiled


def cmd_render(args: argparse.Namespace) -> int:
    for source in render_config(config_source(args)):
        sys.stdout.write(source.text if source.text.endswith("\n") or not source.text
                         else source.text + "\n")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    compiled = _compile_request(args)
    model = compiled.model
    summary = {
        "ok": True,
        "interfaces": len(model.interfaces),
        "namespaces": len(model.netns_names()) - 1,
        "volumes": len(model.volumes),
        "targets": len(model.targets),
    }
    for warning in compiled.warnings:
        print(warning.format(), file=sys.stderr)
    summary_line = inert_summary(compiled.warnings)
    if summary_line:
        print(summary_line, file=sys.stderr)
    if args.json:
        summary["warnings"] = [w.to_json() for w in compiled.warnings]
        summary["lines_doing_nothing_here"] = inert_count(compiled.warnings)
        print_json(summary)
    else:
        print(f"ok: {summary['interfaces']} interfaces in {summary['namespaces'] + 1} namespaces, "
              f"{summary['volumes']} volumes, {summary['targets']} targets")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from netcfg.plan import make_plan

    compiled = _compile_request(args)
    current = Model()
    if args.current:
        current = compile_config(ConfigSource(path=args.current), state=True).model
    plan = make_plan(compiled.model, current, lower_enabled=args.lower == "auto")
    if args.json:
        print_json(plan.to_json())
    elif args.dot:
        print(plan.to_dot())
    else:
        print(plan.to_text(), end="")
    return EXIT_OK


def cmd_syntax_help(args: argparse.Namespace) -> int:
    from netcfg.cli.syntax_help import describe_all, describe_attribute

    if args.attribute:
        print(describe_attribute(args.attribute))
    else:
        print(describe_all())
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from netcfg.compile.jsonform import document_schema

    print(json.dumps(document_schema(), indent=2))  # a document people read
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse has printed its message
        return EXIT_USAGE if e.code not in (0, None) else EXIT_OK
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(args)
    except ConfigInvalid as e:
        for diagnostic in e.diagnostics:
            print(diagnostic.format(), file=sys.stderr)
        summary_line = inert_summary(e.diagnostics)
        if summary_line:
            print(summary_line, file=sys.stderr)
        errors = sum(1 for d in e.diagnostics if d.severity == "error")
        print(f"netcfg: {errors} error{'s' if errors != 1 else ''}; nothing was changed",
              file=sys.stderr)
        return EXIT_INVALID_CONFIG
    except NetcfgError as e:
        # A kernel refusal located at its config line reads like a check error.
        text = str(e)
        print(text if _LOCATED.match(text) else f"netcfg: {text}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:
        return EXIT_OK  # `netcfg plan | head` is fine
    except KeyboardInterrupt:
        print("netcfg: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the last line of defence for the operator
        if args.debug:
            traceback.print_exc()
        print(f"netcfg: internal error: {type(e).__name__}: {e} (run with --debug for a "
              f"traceback, and please report it)", file=sys.stderr)
        for note in getattr(e, "__notes__", ()):   # e.g. apply: the previous state was restored
            print(f"netcfg: {note}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
