"""The apply progress display: bar on a terminal, lines in logs, quiet when small."""

import io

from netcfg.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    progress = Progress(out)
    progress(1, 2, 150, 300)
    progress(2, 2, 300, 300)
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "netcfg: batch 1/2 done: 150/300 operations", "netcfg: batch 2/2 done: 300/300 operations"]


def test_a_bar_on_a_terminal_that_ends_its_line():
    out = Terminal()
    progress = Progress(out)
    progress(1, 4, 50, 200)
    progress(4, 4, 200, 200)
    text = out.getvalue()
    assert text.startswith("\rapplying [#######" + "." * 23 + "] 50/200 operations, batch 1/4")
    assert "[" + "#" * 30 + "] 200/200" in text and text.endswith("\n")


def test_small_applies_print_nothing():
    out = Terminal()
    progress = Progress(out)
    progress(1, 1, 10, 10)
    progress.finish()
    assert out.getvalue() == ""
