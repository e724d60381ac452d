"""Where netcfg's data lives: the JSON Schemas (``schemas/``) and the shipped
templates (``templates/``).

The project's top level holds both (DESIGN.md "Layout"), outside the Python
package, so one rule finds them however netcfg is installed:

- a checkout, or an editable install of one: the top of the tree, the
  directory that holds the ``netcfg`` package;
- a pip install: ``PREFIX/share/netcfg``, where setup.cfg's data_files put them
  (PREFIX is the venv, the interpreter's prefix, or the user base);
- the Debian package: ``/usr/share/netcfg``, the same rule with PREFIX ``/usr``.

No other module guesses paths: they ask ``schemas_dir()`` or
``templates_dir()``.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from functools import cache
from pathlib import Path

# A file that only a complete data directory has: the document schema.
_MARKER = Path("schemas") / "netcfg.schema.json"


def _candidates() -> list[Path]:
    checkout = Path(__file__).resolve().parent.parent
    prefixes = [sys.prefix, sysconfig.get_path("data"), site.getuserbase()]
    return [checkout] + [Path(p) / "share" / "netcfg" for p in prefixes]


@cache
def data_dir() -> Path:
    """The directory holding ``schemas/`` and ``templates/``."""
    for candidate in _candidates():
        if (candidate / _MARKER).is_file():
            return candidate
    looked = ", ".join(str(c) for c in _candidates())
    raise RuntimeError(f"netcfg's data (schemas/, templates/) is not installed: looked in {looked}")


def schemas_dir() -> Path:
    return data_dir() / "schemas"


def templates_dir() -> Path:
    return data_dir() / "templates"
