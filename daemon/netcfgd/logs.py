"""Where netcfgd's log goes: the journal with structured fields under systemd,
stderr otherwise.

Fields ride on ``extra`` with journal-style names (``NETCFG_NETNS``,
``NETCFG_PASS``, ``NETCFG_REQUESTS``): the journal keeps them as fields
(`journalctl -u netcfgd NETCFG_NETNS=t1`), stderr shows them after the text.
"""

from __future__ import annotations

import logging
import os
import sys

LOGGER = "netcfgd"


class _FieldsFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = {k: v for k, v in record.__dict__.items() if k.startswith("NETCFG_")}
        if fields:
            text += " [" + " ".join(f"{k[7:].lower()}={v}" for k, v in fields.items()) + "]"
        return text


def under_systemd(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("JOURNAL_STREAM") or env.get("INVOCATION_ID"))


def setup(level: int = logging.INFO, journal: bool | None = None) -> logging.Logger:
    """The daemon's logger, sent to the journal or to stderr."""
    logger = logging.getLogger(LOGGER)
    logger.setLevel(level)
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler: logging.Handler | None = None
    if journal if journal is not None else under_systemd():
        try:
            from systemd.journal import JournalHandler
            handler = JournalHandler(SYSLOG_IDENTIFIER="netcfgd")
        except ImportError:
            handler = None   # stderr, which journald collects anyway
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_FieldsFormatter("netcfgd: %(levelname)s: %(message)s"))
    logger.addHandler(handler)
    return logger
