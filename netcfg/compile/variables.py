"""Template variables are data, never config lines (issue 24, M11).

A variable's value is pasted into the rendered text as it is. A newline in
one (from vars.json, `--set` or the Ansible module's `vars`) would start a
new line of the config, and `post-up ...` on it runs as root: whoever can
set a variable could then run commands, which is more than the operator
gave them. So a string anywhere in a variable's value (nested in lists and
objects too) with a character that can end or rewrite a line (a control
character, a Unicode line or paragraph separator) is refused, naming the
variable. Refusing is simpler than escaping, and no address, name or
number needs such a character.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from netcfg.model.errors import Diagnostic
from netcfg.model.location import SourceLocation

# Cc: C0/C1 controls (NUL, TAB, LF, CR, ESC, DEL, U+0085); Zl/Zp: U+2028/U+2029.
_LINE_BREAKING = frozenset(("Cc", "Zl", "Zp"))


def control_character(text: str) -> str | None:
    """The first character of ``text`` that must not be pasted into a
    config line, as 'U+XXXX', or None."""
    if text.isprintable():   # fast path: no Cc, Zl or Zp in it
        return None
    for char in text:
        if unicodedata.category(char) in _LINE_BREAKING:
            return f"U+{ord(char):04X}"
    return None


def variable_problems(variables: dict[str, Any], where: SourceLocation | None,
                      text: str = "") -> list[Diagnostic]:
    """One error per variable whose value holds a line-breaking character.

    ``where`` is the vars.json file (the error goes to the line where the
    variable's name is, found in ``text``), or None for `--set`.
    """
    found = []
    for name, value in variables.items():
        bad = _first_bad(value, name)
        if bad is None:
            continue
        path, char = bad
        if where is None:
            loc = SourceLocation(f"--set {name}", 0)
        else:
            loc = SourceLocation(where.file, _line_of_key(text, name))
        found.append(Diagnostic(loc, (
            f"template variable {path}: its value contains the control character {char}; "
            f"a variable is pasted into config lines as it is, so a newline in it would add "
            f"lines (a post-up run as root): variables must not contain control characters")))
    return found


def _first_bad(value: Any, path: str) -> tuple[str, str] | None:
    """(where in the value, which character) of the first string with a
    line-breaking character, keys of objects included."""
    stack = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            char = control_character(item)
            if char is not None:
                return at, char
        elif isinstance(item, dict):
            for key, sub in item.items():
                key_text = str(key)
                char = control_character(key_text)
                if char is not None:
                    return f"{at} (a key)", char
                stack.append((sub, f"{at}[{json.dumps(key_text)}]"))
        elif isinstance(item, (list, tuple)):
            stack.extend((sub, f"{at}[{i}]") for i, sub in reversed(list(enumerate(item))))
    return None


def _line_of_key(text: str, name: str) -> int:
    """The line of the first `"NAME"` in vars.json's text (1 when not found)."""
    needle = json.dumps(name)
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else 1
