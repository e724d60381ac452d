"""The names the kernel and the filesystem take, checked at compile time so
that `check` refuses what `apply` could not make.

An interface name is what the kernel's dev_valid_name() (net/core/dev.c)
accepts: 1 to IFNAMSIZ - 1 bytes, not "." or "..", and none of '/', ':' or a
byte its isspace() counts as white space (\\t \\n \\v \\f \\r, space, and
0xa0, which is a byte of many UTF-8 characters). A NUL cannot be sent at
all: netlink would cut the name there and make another device.

A namespace name becomes the file /run/netns/NAME: the schema's pattern
(letters, digits, '_', '.', '-', at most 64) keeps '/', NUL and white
space out, and "." and ".." are the directory itself and its parent.

What the kernel takes is not all a person can read (issue 24, L5): the
same 'brü' can be written in two Unicode spellings (NFC: one code point
for 'ü'; NFD: 'u' and a combining mark), which are different bytes and so
two devices that look alike; a bidi control (U+202E) turns the rest of a
line around on the screen; an ESC starts a terminal sequence. Such names
are refused with the reason rather than normalised: a normalised name
would not be the bytes the operator wrote, nor the one the kernel has.
"""

from __future__ import annotations

import re
import unicodedata

from netcfg.model.errors import Report, quote
from netcfg.model.model import Model

IFNAMSIZ = 16              # include/uapi/linux/if.h, with its NUL
_KERNEL_SPACE = frozenset(b"\t\n\v\f\r \xa0")
NETNS_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")   # schemas/kinds/common.json's netns pattern
IFNAME_RULES = (f"at most {IFNAMSIZ - 1} bytes; no '/', ':', white space or NUL; "
                f"not '.' or '..'")
# The names almost every config uses, all valid: 1 to 15 printable ASCII
# characters (one byte each) other than '/' and ':', and not "." or "..".
# One C-level match instead of a Python loop over the bytes: a 4094-VLAN
# switch has 200k names. Whatever it does not match goes the long way.
_PLAIN_IFNAME = re.compile(rf"(?!\.\.?\Z)[!-.0-9;-~]{{1,{IFNAMSIZ - 1}}}\Z")


def ifname_problem(name: str) -> str | None:
    """Why the kernel would refuse ``name`` for a device, or None."""
    if _PLAIN_IFNAME.match(name):
        return None
    return _ifname_rules_problem(name)


def _ifname_rules_problem(name: str) -> str | None:
    """dev_valid_name's rules spelt out, byte by byte, with the reason; then
    what would make the name misread (unreadable_problem)."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:   # a lone surrogate, from a JSON "\ud800" escape
        return "it is not valid Unicode text"
    if not raw:
        return "it is empty"
    if len(raw) >= IFNAMSIZ:
        return f"it is {len(raw)} bytes long"
    if name in (".", ".."):
        return f"'{name}' names a directory in /sys/class/net"
    for byte in raw:
        if byte == 0:
            return "it contains a NUL byte"
        if byte in b"/:":
            return f"it contains '{chr(byte)}'"
        if byte == 0xa0:
            return ("its UTF-8 bytes include 0xa0, which the kernel counts as white "
                    "space (a non-ASCII letter such as 'à' has it)")
        if byte in _KERNEL_SPACE:
            return "it contains white space"
    return unreadable_problem(name)


def unreadable_problem(name: str) -> str | None:
    """Why ``name`` would be misread by a person or a terminal, or None:
    a control or format character (ESC, U+202E, a zero-width joiner), or a
    spelling other than NFC, whose look-alike NFC twin is another name."""
    for char in name:
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            kind = "a control" if category == "Cc" else "an invisible formatting"
            if category == "Cf" and unicodedata.bidirectional(char) in _BIDI_CONTROLS:
                kind = "a bidirectional-text control"
            return f"it contains {kind} character (U+{ord(char):04X})"
    if not name.isascii() and not unicodedata.is_normalized("NFC", name):
        nfc = unicodedata.normalize("NFC", name)
        return (f"it is not in Unicode NFC form, so it is a different name from the "
                f"look-alike {nfc!r} (write it as that, in NFC)")
    return None


# unicodedata.bidirectional() of the embedding, override and isolate controls
# (U+202A..U+202E, U+2066..U+2069).
_BIDI_CONTROLS = frozenset(("LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"))


def netns_name_problem(name: str) -> str | None:
    """Why /run/netns/NAME cannot be ``name``'s namespace, or None."""
    if name in (".", ".."):
        return f"/run/netns/{name} is a directory, not a namespace"
    if not NETNS_NAME.fullmatch(name):
        return "a namespace name is 1 to 64 letters, digits, '_', '.' or '-'"
    return None


# A volume's name becomes the file /dev/netcfg/NAME (daemon/netcfgd/ublk.py, with a
# ".netcfg-tmp" sibling while it is replaced): NAME_MAX (255) less that suffix.
VOLUME_NAME_MAX = 255 - len(".netcfg-tmp")


def volume_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a volume, or None. A volume name is a name,
    not a path (issue 24, M8): `volume ../../run/x` with `ublk yes` made
    /dev/netcfg/../../run/x a link to the device, replacing that file."""
    if name in (".", ".."):
        return f"'{name}' is a directory in /dev/netcfg, not a name"
    if "/" in name:
        return "it contains '/': a volume name is a name, not a path"
    if "\0" in name:
        return "it contains a NUL"
    problem = unreadable_problem(name)
    if problem:
        return problem
    size = len(name.encode("utf-8", "surrogateescape"))
    if size > VOLUME_NAME_MAX:
        return f"it is {size} bytes long, more than {VOLUME_NAME_MAX}"
    return None


def check_interface_names(model: Model, report: Report) -> None:
    """Every interface the config declares or implies (an `auto` line, a
    bridge port, a veth's peer), each name once, where it was written."""
    plain = _PLAIN_IFNAME.match
    # Only names the fast match does not vouch for need the full rules and
    # the walk in file order; every object of such a name is among them, so
    # the first by location is the same as in a walk of all of them.
    suspect = [obj for obj in model.interfaces.values() if not plain(obj.name)]
    seen: set[str] = set()
    for obj in sorted(suspect, key=lambda o: (o.loc.file, o.loc.line)):
        if obj.name in seen:
            continue
        seen.add(obj.name)
        why = ifname_problem(obj.name)
        if why is not None:
            report.error(obj.loc, f"{quote(obj.name)}: not a valid interface name: {why} "
                         f"({IFNAME_RULES})")
