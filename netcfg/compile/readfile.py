"""Reading one config file: a regular file, of a bounded size (issue 24, M17).

A FIFO would hang the read for ever (a FIFO named *.tmpl hung `check`),
/dev/zero would fill memory (exit 70 after 1.9 GB), a directory holds no
stanzas: each is refused with a message at the line that named it. When
netcfg runs as root, so is a file others could write (trust.py).
"""

from __future__ import annotations

import os
import stat

from netcfg.compile.trust import not_trusted
from netcfg.model.errors import ConfigInvalid, Diagnostic
from netcfg.model.location import SourceLocation

# The biggest real configs (a 4094-VLAN switch, 50k bridges) are a few MB:
# far above them, far below harm.
MAX_FILE_BYTES = 256 << 20
_CHUNK = 1 << 20


def read_config_file(path: str, loc: SourceLocation | None = None,
                     limit: int = MAX_FILE_BYTES, trusted_dirs: set[str] | None = None) -> str:
    """The text of the regular file ``path``, at most ``limit`` bytes.
    ConfigInvalid at ``loc`` (else at the file) when it is missing, not a
    regular file, too big, unreadable or not UTF-8, or (as root) when others
    could write it (trust.py; ``trusted_dirs``: its per-compile memo)."""
    where = loc or SourceLocation(path, 0)
    # O_NONBLOCK: opening a FIFO with no writer would wait for one for ever.
    # The type is judged on the open file, so nothing can be swapped in
    # between the check and the read.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ConfigInvalid([Diagnostic(where, _cannot(path, e))]) from None
    try:
        st = os.fstat(fd)
        kind = _file_type(st.st_mode)
        if kind is not None:
            raise ConfigInvalid([Diagnostic(where, (
                f"{path} is {kind}, not a regular file: a config file must be one"))])
        why = not_trusted(path, st, _opened_path, fd, trusted_dirs)
        if why:
            raise ConfigInvalid([Diagnostic(where, f"{path} is refused: {why}")])
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise ConfigInvalid([Diagnostic(where, (
                    f"{path} is more than {limit} bytes, more than a config file may hold "
                    f"(or more than is left of what one compile reads through 'source')"))])
    except OSError as e:
        raise ConfigInvalid([Diagnostic(where, _cannot(path, e))]) from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigInvalid([Diagnostic(where, f"{path}: not UTF-8 text: {e}")]) from None


def _opened_path(fd: int) -> str | None:
    """The real path of the open file (one readlink, where realpath() walks
    every component): the file that is read, whatever its name is now."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None   # no /proc: not_trusted resolves the name


def _file_type(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _cannot(path: str, e: OSError) -> str:
    if isinstance(e, FileNotFoundError) and os.path.islink(path):
        return (f"cannot read {path}: it is a link to {os.readlink(path)!r}, which does "
                f"not exist")
    return f"cannot read {path}: {e.strerror or e}"
