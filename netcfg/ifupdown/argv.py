"""The four commands' command lines, as ifupdown2 3.x spells them
(ifupdown2/ifupdown/argv.py), with its exit code 90 for a usage error.

ifupdown2's short flags mean different things per command (`-s` is syntax
check on ifup/ifreload, syntax help on ifquery; `-l` syslog on ifup/ifdown,
list on ifquery; `-c` check on ifquery, currently-up on ifreload): each
command gets its own parser. netcfg adds `-i` to ifreload (ifupdown2 has none
there) so a reload can be tried on another file.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Sequence

COMMANDS = ("ifup", "ifdown", "ifreload", "ifquery")
EXIT_USAGE = 90       # ifupdown2's ArgvParseError
DEFAULT_INTERFACES = "/etc/network/interfaces"
INTERFACES_ENV = "NETCFG_INTERFACES"


class UsageError(Exception):
    """A bad command line: ifupdown2 exits 90."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # argparse would exit 2
        raise UsageError(f"{self.prog}: {message}")


def interfaces_file() -> str:
    return os.environ.get(INTERFACES_ENV) or DEFAULT_INTERFACES


def _common(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("iflist", nargs="*", metavar="IFACE", help="interfaces to act on")
    p.add_argument("-a", "--all", action="store_true",
                   help="every interface marked auto" if command != "ifreload"
                   else "reload every auto interface (and remove what the file dropped)")
    p.add_argument("-v", "--verbose", action="store_true", help="say what is done")
    p.add_argument("-d", "--debug", action="store_true", help="say more, with tracebacks")
    p.add_argument("-q", "--quiet", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--allow", dest="classes", action="append", default=[], metavar="CLASS",
                   help="only interfaces of allow-CLASS lines (auto: `auto` lines)")
    p.add_argument("-w", "--with-depends", action="store_true",
                   help="also the interfaces the given ones depend on (netcfg always does)")
    p.add_argument("-X", "--exclude", dest="excludes", action="append", default=[],
                   metavar="PATTERN",
                   help="leave interfaces matching PATTERN (a regex) as they are")
    p.add_argument("-i", "--interfaces", default=interfaces_file(), metavar="FILE",
                   help=f"the interfaces file (default ${INTERFACES_ENV} or "
                        f"{DEFAULT_INTERFACES}; - for stdin)")
    p.add_argument("-t", "--interfaces-format", choices=("native", "json"), default="native",
                   help="the interfaces file's format")
    p.add_argument("-T", "--type", choices=("iface", "vlan"), help=argparse.SUPPRESS)
    p.add_argument("-V", "--version", action="store_true", help="print the version")
    p.add_argument("-L", "--lock", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--nldebug", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--perfmode", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--nocache", action="store_true", help=argparse.SUPPRESS)


def _changes(p: argparse.ArgumentParser) -> None:
    p.add_argument("-f", "--force", action="store_true", help="go on past errors")
    p.add_argument("-l", "--syslog", action="store_true", help="log to syslog too")
    p.add_argument("--systemd", action="store_true", help="log for systemd's journal")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("-n", "--no-act", action="store_true", help="print the plan, change nothing")
    mode.add_argument("-p", "--print-dependency", choices=("list", "dot"),
                      help="print the dependency order")
    mode.add_argument("--no-scripts", "--admin-state", dest="no_scripts", action="store_true",
                      help="do not run pre-up/up/... lines nor /etc/network/if-*.d scripts")


def build_parser(command: str) -> argparse.ArgumentParser:
    p = _Parser(prog=command, add_help=True)
    if command == "ifreload":
        p.add_argument("-a", "--all", action="store_true",
                       help="reload every interface the file declares")
        p.add_argument("-c", "--currently-up", action="store_true",
                       help="reload only the interfaces that are up now")
        p.add_argument("--allow", dest="classes", action="append", default=[],
                       metavar="CLASS", help="only interfaces of allow-CLASS lines")
        p.add_argument("-i", "--interfaces", default=interfaces_file(), metavar="FILE",
                       help=f"the interfaces file (netcfg's; default ${INTERFACES_ENV} or "
                            f"{DEFAULT_INTERFACES})")
        p.add_argument("-n", "--no-act", action="store_true", help="print the plan, change nothing")
        p.add_argument("-v", "--verbose", action="store_true", help="say what is done")
        p.add_argument("-d", "--debug", action="store_true", help="say more, with tracebacks")
        p.add_argument("-q", "--quiet", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("-f", "--force", action="store_true", help="go on past errors")
        p.add_argument("-l", "--syslog", action="store_true", help="log to syslog too")
        p.add_argument("--systemd", action="store_true", help="log for systemd's journal")
        p.add_argument("-s", "--syntax-check", action="store_true",
                       help="check the file's syntax only")
        p.add_argument("-u", "--use-current-config", action="store_true",
                       help=argparse.SUPPRESS)
        p.add_argument("--diff", action="store_true",
                       help="only what changed (netcfg always does)")
        p.add_argument("-w", "--with-depends", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("-X", "--exclude", dest="excludes", action="append", default=[],
                       metavar="PATTERN",
                       help="leave interfaces matching PATTERN (a regex) as they are")
        p.add_argument("-V", "--version", action="store_true", help="print the version")
        p.add_argument("-L", "--lock", metavar="FILE", help=argparse.SUPPRESS)
        p.add_argument("--nldebug", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--perfmode", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("--nocache", action="store_true", help=argparse.SUPPRESS)
        p.set_defaults(iflist=[], no_scripts=False, print_dependency=None,
                       interfaces_format="native")
        return p
    _common(p, command)
    if command in ("ifup", "ifdown"):
        _changes(p)
    if command == "ifup":
        p.add_argument("-s", "--syntax-check", action="store_true",
                       help="check the file's syntax only")
        p.add_argument("-k", "--skip-upperifaces", action="store_true", help=argparse.SUPPRESS)
    if command == "ifdown":
        p.add_argument("-u", "--use-current-config", action="store_true",
                       help=argparse.SUPPRESS)
    if command == "ifquery":
        p.add_argument("-l", "--list", action="store_true",
                       help="list the interface names (implies -a)")
        what = p.add_mutually_exclusive_group()
        what.add_argument("-r", "--running", action="store_true",
                          help="the running config, read from the kernel")
        what.add_argument("-c", "--check", action="store_true",
                          help="compare the file with the kernel: [pass]/[fail] per line")
        what.add_argument("-x", "--raw", action="store_true", help="the stanzas as written")
        what.add_argument("--print-savedstate", action="store_true", help=argparse.SUPPRESS)
        p.add_argument("-o", "--format", choices=("native", "json"), default="native",
                       help="output format")
        p.add_argument("-p", "--print-dependency", choices=("list", "dot"),
                       help="print the dependency order")
        p.add_argument("-s", "--syntax-help", action="store_true",
                       help="describe every attribute")
        p.add_argument("--with-defaults", action="store_true", help=argparse.SUPPRESS)
    return p


def parse_args(command: str, argv: Sequence[str]) -> argparse.Namespace:
    """The parsed command line, checked as ifupdown2 checks it."""
    args = build_parser(command).parse_args(list(argv))
    args.command = command
    if args.version:
        return args
    for pattern in args.excludes:
        try:
            re.compile(pattern)
        except re.error as e:
            raise UsageError(f"{command}: -X {pattern}: not a regular expression: {e}") from None
    if command == "ifreload":
        if not (args.all or args.currently_up or args.classes or args.syntax_check):
            raise UsageError("ifreload: '-a', '-c' or '--allow' is required")
        return args
    if command == "ifquery" and (args.list or args.syntax_help):
        args.all = args.all or args.list
        return args
    if args.all and args.iflist:
        raise UsageError(f"{command}: '-a' and an interface list are mutually exclusive")
    if args.classes and args.all:
        raise UsageError(f"{command}: '--allow' and '-a' are mutually exclusive")
    if not (args.all or args.iflist or args.classes or getattr(args, "syntax_check", False)):
        raise UsageError(f"{command}: '-a' option or interface list are required")
    return args
