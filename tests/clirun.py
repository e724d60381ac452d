"""`netcfg` run in the test's own process: its exit code, stdout and stderr.

In-process, so a test sees the command exactly as the CLI runs it (argument
parsing, exit codes, messages) without a subprocess's start-up per call.
"""

from __future__ import annotations

import contextlib
import io

from netcfg.cli.main import main


def netcfg_in_process(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()
