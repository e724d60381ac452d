"""Entry point of `ifup`, `ifdown`, `ifreload` and `ifquery`: one program,
named by argv[0] (as Debian links /sbin/if* to /usr/share/ifupdown2/ifupdown2),
or by its first argument (`python -m netcfg.ifupdown ifreload -a`).

Exit codes are ifupdown2's (ifupdown2/lib/status.py): 0 success; 1 an error
(a config error, a failed apply, which netcfg reverted, or `ifquery -c`
finding a difference); 89 another instance holds the lock; 90 a bad command
line; 99 a bug. Messages go to stderr as ifupdown2 logs them, `error: IFACE:
...` and `warning: IFACE: ...`: Proxmox's task log keeps only lines that
match /(warning|error): (\\S+):/.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Sequence

from netcfg import __version__
from netcfg.ifupdown.argv import COMMANDS, EXIT_USAGE, UsageError, parse_args

EXIT_OK, EXIT_ERROR, EXIT_LOCKED, EXIT_BUG = 0, 1, 89, 99
# What `-V` prints first. Proxmox's pve-manager (PVE/API2/Network.pm
# ifupdown2_version) reads this line, wants `ifupdown2:VERSION` with VERSION
# >= 1.2.8 and `pve|pmx|proxmox` in its 4th `.`/`-` field: its way of asking
# "does reload keep guest ports on their bridges?", which netcfg does. The
# line claims the Proxmox build it behaves as and then says what it is, as a
# browser's user-agent does (docs/ifupdown.md).
IFUPDOWN2_COMPAT = "3.2.0-1+pmx"


def version_line() -> str:
    return f"ifupdown2:{IFUPDOWN2_COMPAT}-compatible+netcfg-{__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    command = os.path.basename(argv[0]) if argv else ""
    rest = argv[1:]
    if command not in COMMANDS and rest[:1] and rest[0] in COMMANDS:
        command, rest = rest[0], rest[1:]
    if command not in COMMANDS:
        print(f"error: run as one of {', '.join(COMMANDS)} (not {command or '?'})",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        args = parse_args(command, rest)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:          # --help
        return EXIT_OK if e.code in (0, None) else EXIT_USAGE
    if args.version:
        print(version_line())
        print(f"netcfg:{__version__}")
        return EXIT_OK
    return run(args)


def run(args) -> int:
    from netcfg.apply.lock import LockHeld
    from netcfg.ifupdown import commands
    from netcfg.model.errors import ConfigInvalid, NetcfgError

    state = commands.State()
    try:
        return commands.COMMANDS[args.command](args, state)
    except ConfigInvalid as e:
        for diagnostic in e.diagnostics:
            print(commands.diagnostic_text(state, diagnostic), file=sys.stderr)
        return EXIT_ERROR
    except LockHeld as e:
        print(f"error: Another instance of this program is already running (pid {e.holder} "
              f"holds netcfg's apply lock).", file=sys.stderr)
        return EXIT_LOCKED
    except NetcfgError as e:
        text = str(e)
        print(text if "error: " in text else f"error: {text}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 95
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - never a bare traceback for the operator
        if args.debug:
            traceback.print_exc()
        print(f"error: netcfg: internal error: {type(e).__name__}: {e} (run with -d for a "
              f"traceback, and please report it)", file=sys.stderr)
        return EXIT_BUG


def ifup() -> int:
    return main(["ifup", *sys.argv[1:]])


def ifdown() -> int:
    return main(["ifdown", *sys.argv[1:]])


def ifreload() -> int:
    return main(["ifreload", *sys.argv[1:]])


def ifquery() -> int:
    return main(["ifquery", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
